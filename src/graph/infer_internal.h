/* infer_internal.h: what the shape-inference files share (infer.c: the walk over a graph,
 * merging into tensors and cost annotation; infer_util.c: shapes and known values;
 * ops_*.c: one table of rules per op family; infer_ctrl.c: If, Loop and Scan).
 *
 * A rule computes its op's outputs into scratch records (ir_out) from the input tensors;
 * infer.c then merges them into the tensors, so a rule never has to care about shapes the
 * file declared, and a file shape is never overwritten. */
#ifndef PLACER_INFER_INTERNAL_H
#define PLACER_INFER_INTERNAL_H

#include "placer/graph.h"

/* Ranks above this are treated as unknown (the ONNX reader refuses more anyway). */
#define IR_MAXRANK 64
/* Tensors up to this many elements keep their known contents (design: "small"). */
#define IR_MAXVALS 64
/* Ops with more outputs than this keep the outputs the file declares: the scratch records
 * are sized per output, and a corrupt file must not make them huge. */
#define IR_MAX_OUTPUTS 4096

typedef struct ir_shape {
    int rank; /* -1: unknown rank */
    int64_t d[IR_MAXRANK];
} ir_shape;

/* Known contents of a small tensor while inferring. An element may be unknown (sym != 0):
 * a torch export computes Reshape targets as Concat(Gather(Shape(x)), [-1]), and a dynamic
 * batch dimension must not hide the other, known entries. sym > 0 names where the unknown
 * value came from (dimension d of tensor t of the same graph, IR_SYM(t, d)), so that Reshape
 * can tell that an unknown target entry is exactly an unknown input dimension. */
typedef struct ir_vals {
    int n;    /* number of elements; -1: contents not known */
    bool isf; /* floating-point tensor: f holds the values, i their truncation */
    int64_t i[IR_MAXVALS];
    double f[IR_MAXVALS];
    int64_t sym[IR_MAXVALS]; /* 0: known; IR_SYM_ANON or IR_SYM(t, d): unknown */
} ir_vals;

#define IR_SYM_ANON (-1)
#define IR_SYM(t, d) (((int64_t)(t) + 1) * IR_MAXRANK + (d))
#define IR_SYM_TENSOR(s) ((int)((s) / IR_MAXRANK) - 1)
#define IR_SYM_DIM(s) ((int)((s) % IR_MAXRANK))

/* What a rule says about one output. Unset outputs are left as the file gave them. */
typedef struct ir_out {
    bool set;
    int dtype;
    ir_shape s;
    ir_vals v;
} ir_out;

typedef struct ictx ictx;
typedef void (*ir_shape_fn)(ictx *c);
typedef double (*ir_flops_fn)(const ictx *c);
/* Bytes moved, or -1 when a size it needs is unknown (the generic count then applies). */
typedef double (*ir_bytes_fn)(const ictx *c);

/* One row per op type: its class, shape rule, FLOP rule and bytes rule. k is the rule's
 * constant (FLOPs per element for elementwise ops; see docs/shapes.md). */
typedef struct ir_rule {
    const char *type;
    pl_op_class cls;
    ir_shape_fn shape; /* NULL: outputs stay as the file gave them */
    ir_flops_fn flops; /* NULL: 0 FLOPs */
    double k;
    const char *domain; /* NULL: the default ONNX domain */
    ir_bytes_fn bytes;  /* NULL: every distinct input and output once (docs/cost.md) */
} ir_rule;

/* The spec's rules on one op type's attributes and known inputs (ops_check.c): 0, or -1
 * with the root's err naming the node and the rule broken. */
typedef int (*ir_check_fn)(ictx *c);
typedef struct ir_check {
    const char *type; /* of the default ONNX domain */
    ir_check_fn fn;
} ir_check;

/* Per-graph state: known contents of tensors and a stamp to count each tensor once. */
typedef struct ir_graph {
    pl_graph *g;
    struct ir_graph *up; /* the enclosing graph's state, for outer-scope tensors */
    ir_vals **vals;      /* per tensor; NULL until known */
    bool *vals_tried;    /* the tensor's file contents were looked at */
    int *stamp;          /* per tensor: the last op that counted its bytes, plus one */
    ir_out *out;         /* scratch records for the op being inferred (per graph, because
                          * a control-flow rule infers its body while its own are live) */
    int cap_out;
} ir_graph;

/* State shared by a whole inference run (root graph and every subgraph). */
typedef struct ir_root {
    pl_strmap rules_onnx, rules_ms; /* type -> index into rules */
    pl_strmap checks;               /* type -> index into ir_checks */
    const ir_rule **rules;
    int n_rules;
    pl_strmap unknown; /* unknown op type -> index into unknown_count */
    const char **unknown_type;
    int *unknown_count;
    int n_unknown, cap_unknown;
    int64_t opset;
    pl_err *err;
    bool failed;     /* a subgraph could not be inferred: err says why */
    bool invalid_op; /* ... because an op breaks a spec rule (ops_check.c) */
    bool check;      /* apply the spec rules: the graph was read from ONNX (a coarsened
                      * graph's ops keep their types but not their attributes) */
    int depth;
} ir_root;

struct ictx {
    ir_root *R;
    ir_graph *G;
    pl_graph *g;
    pl_op *op;
    int opi;
    const ir_rule *rule;
    ir_out *out; /* op->n_outputs records */
    int n_in;    /* explicit inputs (implicit outer-scope ones excluded) */
    /* Control-flow rules leave their body's cost here for the annotation step. */
    bool has_body;
    bool body_shape_unknown;
    double body_flops, body_bytes;
};

/* ---- rule tables (one per family file) ---- */
extern const ir_rule ir_rules_elem[], ir_rules_nn[], ir_rules_shape[], ir_rules_misc[],
    ir_rules_ctrl[];
extern const int ir_n_rules_elem, ir_n_rules_nn, ir_n_rules_shape, ir_n_rules_misc, ir_n_rules_ctrl;
extern const ir_check ir_checks[];
extern const int ir_n_checks;

/* ---- infer.c ---- */
/* pl_graph_infer for a graph just read from ONNX: also checks every op against the spec's
 * rules (ops_check.c), refusing with the node named. */
int ir_infer_onnx(pl_graph *g, pl_err *err);
/* Infers every op of g (finalized) in topological order. */
int ir_infer_graph(ir_root *R, ir_graph *up, pl_graph *g, pl_err *err);
/* Runs one subgraph of the current op: outer tensors copied in, inferred, annotated. */
int ir_infer_subgraph(ictx *c, pl_graph *sub);
/* ops_ctrl.c: infers every subgraph of an op without a control-flow rule and leaves the sum
 * of their costs in c. */
void ir_infer_bodies(ictx *c);
/* Bytes rules for ops that do not stream all of their inputs (docs/cost.md, "Bytes moved"):
 * a view of the input (Reshape, Identity, ...): 0; reads only the input's dims (Shape,
 * Size): the output; copies rows or a slice (Gather, Slice): twice the output plus the index
 * inputs. */
double ir_bytes_view(const ictx *c);
double ir_bytes_dims(const ictx *c);
double ir_bytes_partial(const ictx *c);

/* ---- known contents (infer_util.c) ---- */
/* The known contents of tensor t of G's graph (from the file's ivals/fvals or inferred). */
const ir_vals *ir_tensor_vals(ir_graph *G, int t);
void ir_store_vals(ir_graph *G, int t, const ir_vals *v);
/* The contents a tensor carries (ivals, fvals) when they fit its size; false otherwise. */
bool ir_vals_of_tensor(const pl_tensor *t, ir_vals *v);

/* ---- inputs ---- */
const pl_tensor *ir_in(const ictx *c, int k);        /* NULL when absent or omitted */
bool ir_in_shape(const ictx *c, int k, ir_shape *s); /* false (rank -1) when unknown */
int ir_in_rank(const ictx *c, int k);
int ir_in_dtype(const ictx *c, int k);
int64_t ir_in_numel(const ictx *c, int k);
/* Known contents (possibly with unknown elements); NULL when none. */
const ir_vals *ir_in_vals(ictx *c, int k);
/* All contents known, as integers (floats only when integral); false otherwise. `out` must
 * hold IR_MAXVALS elements. */
bool ir_in_ints(ictx *c, int k, int64_t *out, int *n);
/* All contents known, as doubles (out holds IR_MAXVALS); false otherwise. */
bool ir_in_floats(ictx *c, int k, double *out, int *n);
/* A one-element input's known integer value. */
bool ir_in_scalar(ictx *c, int k, int64_t *v);
bool ir_in_fscalar(ictx *c, int k, double *v);

/* ---- outputs ---- */
ir_out *ir_o(ictx *c, int k); /* NULL when the op has no such output */
void ir_set(ictx *c, int k, int dtype, const ir_shape *s);
void ir_set_rank(ictx *c, int k, int dtype, int rank); /* rank known, dims unknown */
void ir_set_unknown(ictx *c, int k, int dtype);
void ir_set_like(ictx *c, int k, int from_in, int dtype); /* dtype 0: the input's */

/* ---- attributes ---- */
/* An INTS attribute copied into buf (at most IR_MAXRANK); -1 when absent. */
int ir_attr_ints(const ictx *c, const char *name, int64_t *buf);
/* Integers from input k when present, else from attribute `name`; -1 when neither is
 * known, -2 when the input is present but its contents are not known. */
int ir_ints_from(ictx *c, int k, const char *name, int64_t *buf);

/* ---- shapes ---- */
int ir_axis(int64_t a, int rank);         /* normalised axis, -1 if out of range */
int64_t ir_prod(const int64_t *d, int n); /* -1 if any factor unknown */
int64_t ir_mul(int64_t a, int64_t b);     /* -1 if either unknown or on overflow */
/* a·b + c for dimension arithmetic (operands may be negative, as pads are); -1 when the
 * result overflows or is negative: a corrupt file must not reach undefined behaviour. */
int64_t ir_dim_expr(int64_t a, int64_t b, int64_t c);
/* Truncation of a double to int64; false when it is NaN or out of range. */
bool ir_f2i(double f, int64_t *i);
void ir_broadcast(ir_shape *acc, const ir_shape *b); /* multidirectional, in place */
bool ir_is_float(int dtype);
bool ir_vals_known(const ir_vals *v); /* every element known */
void ir_vals_none(ir_vals *v);
/* The element of `in` that element `lin` of the broadcast shape `out` reads. */
int64_t ir_bcast_index(const ir_shape *out, const ir_shape *in, int64_t lin);
/* Formats "[2,3,?]" (or "?" for an unknown rank) into buf. */
const char *ir_fmt_shape(const int64_t *d, int rank, char *buf, size_t n);

/* ---- FLOP helpers (infer_util.c) ---- */
double ir_numel_out(const ictx *c, int k); /* 0 when unknown */
double ir_numel_in(const ictx *c, int k);
double ir_flops_out_k(const ictx *c);    /* output 0 elements × k */
double ir_flops_in_k(const ictx *c);     /* input 0 elements × k */
double ir_flops_variadic(const ictx *c); /* output × k × (inputs - 1), at least once */

#endif
