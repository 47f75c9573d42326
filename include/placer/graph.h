/* graph.h: the model as a DAG of ops and tensors, and the readers that build it.
 *
 * Every later module (cost, sim, place, ...) trusts this structure, so it is transparent:
 * read the fields directly, build it only through the functions below, and call
 * pl_graph_finalize() once before using any derived field (topo, edges, succ/pred).
 *
 * Indices, never pointers: ops and tensors live in growable arrays, so an index stays valid
 * while a pointer may not during construction.
 *
 * Units (design.md §3): bytes are bytes, flops is a count of floating-point operations
 * (a multiply-add is 2), times are seconds.
 *
 * Ownership and failure: the readers, pl_graph_new and pl_graph_union return a graph the
 * caller frees with pl_graph_free (NULL on failure, err set); a graph is read, never changed,
 * by every later module. pl_graph_finalize, pl_graph_infer and pl_graph_set_input_shapes
 * change g in place: after -1, g is fit only for pl_graph_free. */
#ifndef PLACER_GRAPH_H
#define PLACER_GRAPH_H

#include "placer/common.h"

/* ---- data types: the ONNX TensorProto.DataType codes, so ONNX needs no mapping ---- */
enum {
    PL_DT_UNDEFINED = 0,
    PL_DT_FLOAT = 1,
    PL_DT_UINT8 = 2,
    PL_DT_INT8 = 3,
    PL_DT_UINT16 = 4,
    PL_DT_INT16 = 5,
    PL_DT_INT32 = 6,
    PL_DT_INT64 = 7,
    PL_DT_STRING = 8,
    PL_DT_BOOL = 9,
    PL_DT_FLOAT16 = 10,
    PL_DT_DOUBLE = 11,
    PL_DT_UINT32 = 12,
    PL_DT_UINT64 = 13,
    PL_DT_COMPLEX64 = 14,
    PL_DT_COMPLEX128 = 15,
    PL_DT_BFLOAT16 = 16,
    PL_DT_FLOAT8E4M3FN = 17,
    PL_DT_FLOAT8E4M3FNUZ = 18,
    PL_DT_FLOAT8E5M2 = 19,
    PL_DT_FLOAT8E5M2FNUZ = 20,
    PL_DT_UINT4 = 21,
    PL_DT_INT4 = 22,
    PL_DT_COUNT
};
/* Bytes per element (4-bit types: 0.5); 0 for UNDEFINED, STRING and unknown codes. */
double pl_dtype_size(int dtype);
/* "float32", "int64", ...; "undefined" for unknown codes. */
const char *pl_dtype_name(int dtype);

/* ---- attributes (only the kinds a cost or shape rule can use; graphs are kept as subgraphs) */
typedef enum {
    PL_ATTR_INT,
    PL_ATTR_FLOAT,
    PL_ATTR_STRING,
    PL_ATTR_INTS,
    PL_ATTR_FLOATS,
    PL_ATTR_TENSOR,
    PL_ATTR_OTHER
} pl_attr_kind;

typedef struct pl_attr {
    char *name;
    pl_attr_kind kind;
    int64_t i;
    double f;
    char *s;        /* STRING */
    int64_t *ints;  /* INTS (n entries) */
    double *floats; /* FLOATS (n entries) */
    int n;
    int tensor; /* TENSOR: index of the tensor holding the value (Constant 'value') */
} pl_attr;

/* ---- tensors ---- */
enum {
    PL_TENSOR_WEIGHT = 1u << 0,     /* initializer or the value of a Constant op */
    PL_TENSOR_INPUT = 1u << 1,      /* graph input (not a weight) */
    PL_TENSOR_OUTPUT = 1u << 2,     /* graph output */
    PL_TENSOR_EXTERNAL = 1u << 3,   /* payload stored in an external file (never read) */
    PL_TENSOR_NO_PAYLOAD = 1u << 4, /* a weight whose payload is absent (weightless model) */
    PL_TENSOR_OUTER = 1u << 5,      /* in a subgraph: read from the enclosing graph's scope */
    PL_TENSOR_BYTES_ONLY = 1u << 6, /* only the size is known (task graphs): shape [bytes] of
                                       uint8, so it has no meaningful element count */
};

#define PL_DIM_UNKNOWN (-1)

typedef struct pl_tensor {
    char *name;
    int dtype;
    int rank;       /* -1 when even the rank is unknown */
    int64_t *dims;  /* rank entries; PL_DIM_UNKNOWN where a dimension is not known */
    int64_t bytes;  /* -1 while any dimension (or the dtype) is unknown */
    int producer;   /* op index; -1 for graph inputs, initializers and outer tensors */
    int *consumers; /* op indices, each op once */
    int n_consumers;
    unsigned flags;
    /* Known integer contents of small tensors (shape constants, Shape op results), used by
     * shape inference for Reshape/Slice/Expand/...; NULL when not known. */
    int64_t *ivals;
    int n_ivals;
    int cap_consumers;
    /* Known contents of small floating-point tensors (Resize/Upsample scales), as ivals for
     * integers; NULL when not known. Readers set them like ivals (at most 64 elements). */
    double *fvals;
    int n_fvals;
} pl_tensor;

/* ---- ops ---- */
typedef enum {
    PL_CLASS_DENSE,         /* Conv, ConvTranspose, MatMul, Gemm, LSTM, GRU, RNN, Attention */
    PL_CLASS_ELEMENTWISE,   /* activations, arithmetic, normalisation */
    PL_CLASS_REDUCTION,     /* Reduce*, pooling, Softmax, ArgMax, TopK */
    PL_CLASS_DATA_MOVEMENT, /* Reshape, Transpose, Concat, Gather, Slice, Pad, Cast, ... */
    PL_CLASS_CONTROL,       /* If, Loop, Scan: cost is their body's */
    PL_CLASS_UNKNOWN,       /* op type with no rule: default cost (see docs/cost.md) */
    PL_CLASS_COUNT
} pl_op_class;

const char *pl_op_class_name(pl_op_class c);

enum {
    PL_OP_UNKNOWN_TYPE = 1u << 0, /* no shape/cost rule for this op type: default cost used */
    PL_OP_SHAPE_UNKNOWN =
        1u << 1,                /* some input or output shape unknown: cost is a lower estimate */
    PL_OP_COST_GIVEN = 1u << 2, /* cls/flops/bytes_moved came from the file: infer keeps them */
};

typedef struct pl_graph pl_graph;

typedef struct pl_op {
    char *name;   /* unique in its graph; "TYPE_k" generated when the file has none */
    char *type;   /* "Conv", ... */
    char *domain; /* "" for the default ONNX domain */
    int *inputs;  /* tensor indices; -1 for an omitted optional input */
    int n_inputs;
    int n_implicit; /* the last n_implicit inputs are outer-scope tensors read by subgraphs */
    int *outputs;
    int n_outputs;
    pl_attr *attrs;
    int n_attrs;
    pl_graph **subgraphs; /* If: then_branch, else_branch; Loop/Scan: body */
    char **subgraph_attr; /* the attribute name each subgraph came from */
    int n_subgraphs;
    pl_op_class cls;
    double flops;       /* including the body of control-flow ops */
    double bytes_moved; /* inputs + outputs + weights read (design.md §5) */
    /* Of bytes_moved, what the op reads again of one tensor it has read already, and that
     * tensor's bytes: an RNN's recurrence weights R at every step after the first (docs/
     * cost.md, "Bytes moved"). A device that gives reread_Bps prices them from its cache
     * (pl_cost_terms_of); 0 for every other op, and for ops whose bytes a file gave. */
    double bytes_reread, reread_tensor_bytes;
    unsigned flags;
    /* Given times per device model (JSON task graphs, profiles): time_s[k] on time_device[k]. */
    char **time_device;
    double *time_s;
    int n_times;
    double extra_memory_bytes; /* working memory declared by a task graph; 0 for ONNX */
    /* Colocation class (task graphs): 0 = none; c > 0: the ops of class c must share a
     * device, and g->coloc_names[c - 1] names the class. */
    int coloc;
    int tenant; /* the model it belongs to in a union of several (pl_graph_union); 0 otherwise */
    /* -1, or the op whose kernels this op's are (of g->kernel_graph, else of this graph): the
     * GPU kernel rules price this op as that op's algorithm at this op's FLOPs. A training
     * graph's backward op names its forward op (cuDNN's backward passes come in the same
     * families); a compiled replica names the training-graph op it replicates. */
    int kernel_of;
    int cap_inputs, cap_outputs, cap_attrs;
} pl_op;

/* One edge per (producer op, consumer op, tensor). */
typedef struct pl_edge {
    int src, dst;
    int tensor;
} pl_edge;

/* A given transfer time (task graphs): `tensor` sent from a device that `from` names to one
 * that `to` names takes `s` seconds. A name is a device model or a device name, matched as
 * for op times (pl_cost_new builds the per-pair table from these). */
typedef struct pl_xfer_time {
    int tensor;
    char *from, *to;
    double s;
} pl_xfer_time;

typedef struct pl_import_info {
    char format[16]; /* "onnx" or "json" */
    int64_t ir_version;
    int64_t opset;     /* default-domain opset version; 0 when not ONNX */
    char producer[64]; /* producer_name + version from the file */
} pl_import_info;

#define PL_MAX_STORED_WARNINGS 64

struct pl_graph {
    char *name;
    char *path;       /* file it was read from, or NULL */
    char sha256[65];  /* cache behind pl_graph_sha256(); "" until first asked */
    pl_graph *parent; /* enclosing graph, for subgraphs */
    pl_op *ops;
    int n_ops;
    pl_tensor *tensors;
    int n_tensors;
    int *inputs; /* graph inputs that are not weights, in file order */
    int n_inputs;
    int *outputs; /* graph outputs, in file order */
    int n_outputs;
    pl_strmap tensor_by_name;
    pl_strmap op_by_name;
    pl_import_info info;
    /* warnings raised while reading (first PL_MAX_STORED_WARNINGS kept, all counted);
     * subgraphs forward theirs to the root graph */
    char **warnings;
    int n_warnings, n_warnings_stored;
    pl_xfer_time *xfer_times; /* given transfer times, in file order */
    int n_xfer_times, cap_xfer_times;
    char **coloc_names; /* colocation classes (pl_op::coloc), in order of first use */
    int n_coloc;
    pl_strmap coloc_by_name; /* name -> class - 1 */
    /* Several models sharing a host (pl_graph_union): their names, pl_op::tenant indexes
     * them. 0 and NULL for one model (pl_graph_tenants says 1). */
    int n_tenants;
    char **tenant_names;
    char **tenant_paths; /* each model's file (NULL for one built in code), whose SHA-256 a
                            profile measured on it names (pl_cost_new reads it then) */
    /* The graph whose ops pl_op.kernel_of indexes; NULL: this one. A compiled training
     * iteration (pl_train_compile) points at its training graph, whose ops have the shapes. */
    const pl_graph *kernel_graph;
    /* ---- derived by pl_graph_finalize() ---- */
    int *topo;      /* op indices in a topological order (stable: file order on ties) */
    int *topo_pos;  /* topo_pos[op] = position of op in topo */
    pl_edge *edges; /* sorted by src, then dst */
    int n_edges;
    int *succ_off,
        *succ; /* CSR over ops, distinct successors: succ[succ_off[i] .. succ_off[i+1]) */
    int *pred_off, *pred; /* CSR over ops, distinct predecessors */
    int cap_ops, cap_tensors, cap_inputs, cap_outputs;
};

/* ---- building (importers, tests, synthetic generators) ---- */
pl_graph *pl_graph_new(const char *name);
void pl_graph_free(pl_graph *g);
/* The tensor named `name`, created (dtype undefined, rank unknown) if absent. */
int pl_graph_tensor(pl_graph *g, const char *name);
int pl_graph_find_tensor(const pl_graph *g, const char *name); /* -1 if absent */
int pl_graph_find_op(const pl_graph *g, const char *name);     /* -1 if absent */
/* Adds an op; a NULL or empty name becomes "TYPE_k"; a duplicate name gets a "#2" suffix
 * and a warning. Returns its index. */
int pl_graph_add_op(pl_graph *g, const char *name, const char *type, const char *domain);
void pl_op_add_input(pl_graph *g, int op, int tensor); /* tensor -1: omitted optional input */
void pl_op_add_output(pl_graph *g, int op, int tensor);
pl_attr *pl_op_add_attr(pl_graph *g, int op, const char *name, pl_attr_kind kind);
void pl_op_add_subgraph(pl_graph *g, int op, const char *attr_name, pl_graph *sub);
void pl_op_add_time(pl_graph *g, int op, const char *device_model, double seconds);
/* Records that `tensor` takes `seconds` from a device named or modelled `from` to one named
 * or modelled `to` (pl_xfer_time). */
void pl_graph_add_xfer_time(pl_graph *g, int tensor, const char *from, const char *to,
                            double seconds);
/* Puts op in the colocation class `name`, created on first use. */
void pl_op_set_coloc(pl_graph *g, int op, const char *name);
void pl_graph_add_input(pl_graph *g, int tensor);
void pl_graph_add_output(pl_graph *g, int tensor);
/* Sets dtype and shape (dims copied; rank -1 = unknown) and recomputes bytes. */
void pl_tensor_set_shape(pl_tensor *t, int dtype, int rank, const int64_t *dims);
void pl_tensor_set_ivals(pl_tensor *t, const int64_t *v, int n);
void pl_tensor_set_fvals(pl_tensor *t, const double *v, int n);
/* Number of elements, or -1 if unknown. */
int64_t pl_tensor_numel(const pl_tensor *t);
/* SHA-256 of the file the graph was read from: plans and profiles name their model by it. It
 * is computed on first use and cached, not at load time, since hashing a 600 MB model costs
 * about a second and only identity checks need it. "" for a graph built in code; NULL (err
 * set) when the file cannot be read. */
const char *pl_graph_sha256(const pl_graph *g, pl_err *err);
/* Records a warning on the root graph (stderr printing is the CLI's job). */
void pl_graph_warn(pl_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Links producers and consumers and derives topo, edges, succ and pred. Fails with a message
 * naming the op and tensor when a tensor is produced twice or read but never produced, and
 * naming the ops on the cycle when there is one. `where` (usually the file path) prefixes
 * messages. Subgraphs must be finalized by the importer before their parent. */
int pl_graph_finalize(pl_graph *g, const char *where, pl_err *err);

/* ---- several models as one graph (docs/multi.md, "The union graph") ---- */
/* The disjoint union of the finalized graphs gs[0..n), tenant i named names[i] (distinct):
 * op and tensor "x" of model i become "names[i]/x", pl_op::tenant = i. Keeps types,
 * attributes, shapes, weights, costs (as given: PL_OP_COST_GIVEN), given times, transfer times
 * and colocation classes; control-flow bodies are left out (their cost is the op's). The
 * ops of tenant i are contiguous, in model i's op order, after those of tenants 0..i-1.
 * Each model's file path is kept (tenant_paths), so that a profile finds its model. Finalized;
 * NULL with err set on failure. */
pl_graph *pl_graph_union(pl_graph *const *gs, const char *const *names, int n, pl_err *err);
/* How many tenants g holds: its n_tenants, or 1 for a graph of one model. */
int pl_graph_tenants(const pl_graph *g);
/* Op o's name in its own model: without the "names[i]/" a union gives it (a profile's and a
 * task graph's names are the model's own). */
const char *pl_op_own_name(const pl_graph *g, const pl_op *o);
/* 0 when g has an op; else -1 with err "PATH: the graph has no operators; nothing to place".
 * Every verb that places or simulates refuses such a graph through this one check
 * (pl_cost_new; pl_graph_union for each model, whose union would otherwise hide it). */
int pl_graph_check_ops(const pl_graph *g, pl_err *err);

/* ---- attributes of an op ---- */
const pl_attr *pl_op_attr(const pl_op *op, const char *name);
int64_t pl_op_attr_int(const pl_op *op, const char *name, int64_t dflt);
double pl_op_attr_float(const pl_op *op, const char *name, double dflt);
const char *pl_op_attr_string(const pl_op *op, const char *name, const char *dflt);
/* Returns the count and sets *v (NULL and 0 when absent). */
int pl_op_attr_ints(const pl_op *op, const char *name, const int64_t **v);

/* ---- shape inference and cost annotation ---- */
/* Fills shapes of tensors that lack them, for the common ops (docs/shapes.md), then sets every
 * op's cls, flops and bytes_moved, recursing into subgraphs (a control-flow op carries its
 * body's cost: If the costlier branch, Loop the body × trip count when known, Scan × the
 * scanned length). Ops with no rule get PL_OP_UNKNOWN_TYPE, the default cost and a warning;
 * tensors whose shape stays unknown keep bytes = -1 and are counted, never dropped.
 * Requires a finalized graph. */
int pl_graph_infer(pl_graph *g, pl_err *err);

/* ---- readers ---- */
/* Options for readers. Symbolic dimensions (ONNX dim_param such as "batch") are unknown
 * unless bound here; `dims` holds "NAME=VALUE" strings. A zeroed struct is the default. */
typedef struct pl_load_opts {
    const char **dims;
    int n_dims;
    bool no_infer; /* skip pl_graph_infer (fuzzing the parser alone, tests) */
    /* Shapes for graph inputs whose dims the file leaves open: "NAME=1,3,224,224". A dim the
     * file fixes must agree. Applied before shape inference. */
    const char **input_shapes;
    int n_input_shapes;
} pl_load_opts;

/* Applies opts->input_shapes to the graph inputs (readers call it before inference). */
int pl_graph_set_input_shapes(pl_graph *g, const pl_load_opts *opts, const char *where,
                              pl_err *err);

/* ONNX ModelProto (protobuf-c). Tolerates external data (dims and dtype only) and weightless
 * initializers. Runs finalize and infer. On failure returns NULL with err set. opts may be
 * NULL. */
pl_graph *pl_onnx_load(const char *path, const pl_load_opts *opts, pl_err *err);
pl_graph *pl_onnx_load_buffer(const void *buf, size_t len, const char *name,
                              const pl_load_opts *opts, pl_err *err);
/* JSON task graph, format placer-taskgraph/1 (docs/formats.md). Runs finalize and infer. */
pl_graph *pl_taskgraph_load(const char *path, const pl_load_opts *opts, pl_err *err);
pl_graph *pl_taskgraph_load_buffer(const char *buf, size_t len, const char *name,
                                   const pl_load_opts *opts, pl_err *err);
/* Chooses the reader by content (JSON object or ONNX protobuf). */
pl_graph *pl_graph_load(const char *path, const pl_load_opts *opts, pl_err *err);

/* ---- reachability (docs/graph.md) ----
 * Exact answers to "is there a path of length >= 1 from i to j?" on any DAG given in CSR form
 * with a topological order. Built by a greedy chain cover of the transitive closure: each node
 * stores, per chain, the last chain position that reaches it, so a query is O(1) (from a
 * source op: O(out-degree)); when the table would exceed the memory cap it falls back to a
 * pruned DFS (still exact, slower). */
typedef struct pl_reach pl_reach;
pl_reach *pl_reach_build(int n, const int *succ_off, const int *succ, const int *topo);
/* The same with an explicit cap on the table's size (0 forces DFS mode). The pl_reach keeps
 * pointers to succ_off/succ (they must outlive it); in DFS mode a query is not thread-safe. */
pl_reach *pl_reach_build_capped(int n, const int *succ_off, const int *succ, const int *topo,
                                size_t max_table_bytes);
pl_reach *pl_graph_reach(const pl_graph *g);
bool pl_reach_query(const pl_reach *r, int from, int to);
int pl_reach_chains(const pl_reach *r); /* number of chains (0 when in DFS mode) */
void pl_reach_free(pl_reach *r);

/* ---- fusion (docs/coarsen.md, "Fusion rules"; docs/cost.md, "Runtime fusion") ----
 * A rule is an ordered list of op types, the order in which a runtime's fused kernel runs
 * them. The coarsening groups the matches (coarsen.h); the cost model prices each match as
 * one kernel (cost.h). Rule files (placer-fusion-rules/1) are read by coarsen.h. */
typedef struct pl_fusion_rule {
    char **types; /* op types, in the order the fused kernel runs them */
    int n;
} pl_fusion_rule;

typedef struct pl_fusion_rules {
    pl_fusion_rule *rules;
    int n;
} pl_fusion_rules;

/* The built-in rules (docs/coarsen.md lists them and the runtime fusion each stands for). */
pl_fusion_rules *pl_fusion_rules_default(void);
/* Appends a rule (types copied). */
void pl_fusion_rules_add(pl_fusion_rules *r, const char *const *types, int n);
void pl_fusion_rules_free(pl_fusion_rules *r);
/* Matches rules r over g, as one fused kernel each (docs/coarsen.md, "Fusion rules"): from
 * each op in topological order the longest valid match wins. root_of[op] (n_ops entries) is
 * the first op of the kernel op belongs to; op itself when it is a kernel's root or unfused.
 * rule_count (may be NULL; r->n entries, zeroed by the caller) counts the matches per rule.
 * reach may be NULL (then g's is built). */
void pl_fusion_match(const pl_graph *g, const pl_fusion_rules *r, const pl_reach *reach,
                     int *root_of, int *rule_count);

/* ---- summary (what `placer inspect` prints) ---- */
typedef struct pl_type_count {
    const char *type; /* points into the graph */
    int count;        /* including subgraphs */
    double flops;     /* top-level ops only: a control-flow op carries its body's */
    bool unknown;     /* no cost rule */
} pl_type_count;

typedef struct pl_graph_summary {
    int n_ops;       /* top level */
    int n_ops_total; /* including subgraph bodies, recursively */
    int n_subgraphs;
    int n_tensors; /* including subgraphs */
    int n_edges;   /* top level */
    int n_inputs, n_outputs;
    int64_t n_params; /* elements of initializers and Constant values, all graphs */
    int64_t param_bytes;
    int n_weights;            /* weight tensors */
    int n_weights_bytes_only; /* of which only the size is known: not in n_params */
    double flops;             /* sum over top-level ops (which carry their bodies) */
    double bytes_moved;
    double longest_path_flops;
    int *longest_path; /* top-level op indices, source to sink */
    int longest_path_len;
    int n_unknown_ops;   /* ops (incl. subgraphs) with no cost rule */
    int n_unknown_shape; /* tensors (incl. subgraphs) whose size is unknown */
    int *unknown_shape;  /* top-level tensor indices with unknown size (first 32) */
    int n_unknown_shape_listed;
    pl_type_count *hist; /* sorted by count, descending, then name */
    int n_hist;
} pl_graph_summary;

void pl_graph_summarize(const pl_graph *g, pl_graph_summary *s);
void pl_graph_summary_free(pl_graph_summary *s);

#endif
