/* taskgraph.c: the placer-taskgraph/1 reader, for graphs that do not come from ONNX (profiled
 * graphs, published benchmark instances). docs/formats.md is the format's reference.
 *
 * Nodes become ops and edges become tensors. An edge is one tensor sent from one node to
 * another; edges that name the same tensor share it, so the simulator sends it once per
 * destination device (design.md §4). An edge without "from" brings a graph input, one without
 * "to" takes a graph output. Tensors are uint8 vectors of their size in bytes: a task graph
 * knows sizes, not shapes. */
#include "placer/graph.h"
#include "placer/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TG_FORMAT "placer-taskgraph/1"
/* Task-graph types are labels, not ONNX ops: a domain of their own keeps ONNX shape rules
 * away from tensors whose "shape" is only a byte count. */
#define TG_DOMAIN "placer.taskgraph"
/* 8 PiB: far above any tensor, and still exact as a double. */
#define TG_MAX_BYTES 9007199254740992.0

typedef enum { TG_PRODUCED, TG_INPUT, TG_WEIGHT } tg_kind;

/* How a tensor was declared, to name both places when a later edge disagrees. */
typedef struct {
    tg_kind kind;
    int producer; /* TG_PRODUCED: op index */
    int64_t bytes;
    int decl; /* the declaring edge index; for TG_WEIGHT, the node index */
    bool output;
    int times_edge; /* 1 + the edge that gave the tensor's transfer times; 0: none yet */
} tg_tensor;

/* One read of a tensor by a node (to = -1: taken as a graph output), to find repeated edges. */
typedef struct {
    int tensor, to, edge;
} tg_read;

typedef struct {
    pl_graph *g;
    tg_tensor *tensors; /* by tensor index */
    int cap_tensors;
    int *weights;      /* by op index: the weight tensor, appended to its inputs last; -1 none */
    bool *moved_given; /* by op index: the file gave moved_bytes */
    tg_read *reads;
    int n_reads, cap_reads;
} tg_loader;

/* One edge as read: from or to is -1 for the outside world. */
typedef struct {
    const pl_json *json;
    int index, from, to;
    int64_t bytes;
    const char *tensor; /* NULL: not named in the file */
} tg_edge;

static const char *const top_fields[] = {"format", "name",  "producer", "description",
                                         "nodes",  "edges", NULL};
static const char *const node_fields[] = {"name",        "type",    "class",        "flops",
                                          "moved_bytes", "times_s", "weight_bytes", "memory_bytes",
                                          "colocation",  NULL};
static const char *const edge_fields[] = {"from", "to", "bytes", "tensor", "times_s", NULL};
static const char *const pair_fields[] = {"from", "to", "time_s", NULL};
static const char *const matrix_fields[] = {"devices", "matrix_s", NULL};

/* ---- tensors ---- */

static const char *origin(const tg_tensor *t, char *buf, size_t n)
{
    if (t->kind == TG_WEIGHT)
        snprintf(buf, n, "$.nodes[%d].weight_bytes", t->decl);
    else
        snprintf(buf, n, "$.edges[%d]", t->decl);
    return buf;
}

/* A byte count from the file as a tensor size: whole bytes, and a magnitude that is a size
 * rather than a unit slip. */
static int to_bytes(const pl_json *at, double v, int64_t *out, pl_err *err)
{
    if (v > TG_MAX_BYTES)
        return pl_json_fail(at, err, "%.4g bytes is more than 8 PiB: check the unit", v);
    *out = (int64_t)llround(v);
    return 0;
}

/* Creates a tensor of `info.bytes` bytes; the caller has checked that the name is new. */
static int new_tensor(tg_loader *L, const char *name, tg_tensor info)
{
    int t = pl_graph_tensor(L->g, name);
    pl_tensor_set_shape(&L->g->tensors[t], PL_DT_UINT8, 1, &info.bytes);
    L->g->tensors[t].flags |= PL_TENSOR_BYTES_ONLY;
    pl_grow((void **)&L->tensors, &L->cap_tensors, t, sizeof *L->tensors);
    L->tensors[t] = info;
    return t;
}

/* ---- nodes ---- */

static int read_class(const pl_json *node, pl_op_class *cls, pl_err *err)
{
    const char *s;
    int rc = pl_json_opt_string(node, "class", &s, err);
    if (rc <= 0) return rc;
    const char *names[PL_CLASS_COUNT];
    for (int c = 0; c < PL_CLASS_COUNT; c++) {
        names[c] = pl_op_class_name((pl_op_class)c);
        if (strcmp(s, names[c]) == 0) return *cls = (pl_op_class)c, 1;
    }
    if (strcmp(s, "data_movement") == 0) return *cls = PL_CLASS_DATA_MOVEMENT, 1;
    pl_json at = pl_json_at(node, "class");
    const char *near = pl_json_closest(s, names, PL_CLASS_COUNT);
    return pl_json_fail(&at, err,
                        "unknown class \"%.60s\"%s%s%s (classes: dense, elementwise, "
                        "reduction, data-movement, control, unknown)",
                        s, near ? "; did you mean \"" : "", near ? near : "", near ? "\"?" : "");
}

/* "times_s": {"V100": 0.0012, "K80": "3.1 ms"}: measured time per device model. */
static int read_times(pl_graph *g, const pl_json *node, int op, pl_err *err)
{
    pl_json times = {0}, e;
    if (pl_json_opt_object(node, "times_s", &times, err) < 0) return -1;
    pl_json_iter it = {0};
    while (pl_json_next(&times, &it, &e)) {
        double s;
        if (!e.key[0]) return pl_json_fail(&e, err, "the device model name is empty");
        if (pl_json_quantity(&e, NULL, PL_UNIT_SECONDS, &s, err) < 0) return -1;
        pl_op_add_time(g, op, e.key, s);
    }
    return 0;
}

/* The cost fields: given any of them, the op's cost comes from the file and infer keeps it. */
static int read_cost(tg_loader *L, const pl_json *node, int op, pl_err *err)
{
    pl_op *o = &L->g->ops[op];
    int given = 0, rc;
    if ((rc = read_class(node, &o->cls, err)) < 0) return -1;
    given |= rc;
    if ((rc = pl_json_opt_quantity(node, "flops", PL_UNIT_FLOPS, &o->flops, err)) < 0) return -1;
    given |= rc;
    if ((rc = pl_json_opt_quantity(node, "moved_bytes", PL_UNIT_BYTES, &o->bytes_moved, err)) < 0)
        return -1;
    given |= rc;
    L->moved_given[op] = rc;
    if (read_times(L->g, node, op, err) < 0) return -1;
    if (given || o->n_times) o->flags |= PL_OP_COST_GIVEN;
    return 0;
}

static int read_name(tg_loader *L, const pl_json *node, const char **name, pl_err *err)
{
    if (pl_json_string(node, "name", name, err) < 0) return -1;
    pl_json at = pl_json_at(node, "name");
    if (!**name) return pl_json_fail(&at, err, "a node name must not be empty");
    int prev = pl_graph_find_op(L->g, *name);
    if (prev >= 0)
        return pl_json_fail(&at, err, "node name \"%.60s\" is already used by $.nodes[%d]", *name,
                            prev);
    return 0;
}

/* "weight_bytes" → a weight tensor "<node>:weights" that only this node reads. Node names are
 * unique and no other tensor exists yet, so the name is free. */
static int read_weights(tg_loader *L, const pl_json *node, int op, pl_err *err)
{
    double v = 0;
    int64_t bytes = 0;
    pl_json at = pl_json_at(node, "weight_bytes");
    if (pl_json_opt_quantity(node, "weight_bytes", PL_UNIT_BYTES, &v, err) < 0 ||
        to_bytes(&at, v, &bytes, err) < 0)
        return -1;
    L->weights[op] = -1;
    if (!bytes) return 0; /* a zero-byte weight is no weight at all */
    const char *name = L->g->ops[op].name;
    size_t n = strlen(name) + sizeof ":weights";
    char *tname = pl_malloc(n);
    snprintf(tname, n, "%s:weights", name);
    int t = new_tensor(L, tname, (tg_tensor){TG_WEIGHT, -1, bytes, op, false, 0});
    free(tname);
    L->g->tensors[t].flags |= PL_TENSOR_WEIGHT;
    L->weights[op] = t;
    return 0;
}

/* "colocation": "name": the node must share a device with every node of that class. */
static int read_coloc(tg_loader *L, const pl_json *node, int op, pl_err *err)
{
    const char *cls;
    int rc = pl_json_opt_string(node, "colocation", &cls, err);
    if (rc <= 0) return rc;
    if (!*cls) {
        pl_json at = pl_json_at(node, "colocation");
        return pl_json_fail(&at, err, "a colocation class name must not be empty");
    }
    pl_op_set_coloc(L->g, op, cls);
    return 0;
}

static int read_node(tg_loader *L, const pl_json *nodes, int i, pl_err *err)
{
    pl_json node = pl_json_index(nodes, (size_t)i);
    const char *name, *type = "Task";
    if (pl_json_check_fields(&node, node_fields, err) < 0 || read_name(L, &node, &name, err) < 0 ||
        pl_json_opt_string(&node, "type", &type, err) < 0)
        return -1;
    if (!*type) {
        pl_json at = pl_json_at(&node, "type");
        return pl_json_fail(&at, err, "the type must not be empty (leave it out for \"Task\")");
    }
    int op = pl_graph_add_op(L->g, name, type, TG_DOMAIN);
    double mem = 0;
    if (pl_json_opt_quantity(&node, "memory_bytes", PL_UNIT_BYTES, &mem, err) < 0) return -1;
    L->g->ops[op].extra_memory_bytes = mem;
    if (read_cost(L, &node, op, err) < 0 || read_coloc(L, &node, op, err) < 0) return -1;
    return read_weights(L, &node, op, err);
}

/* ---- edges ---- */

/* "from" or "to": a node name, or absent (the outside world: -1). */
static int read_end(tg_loader *L, const pl_json *edge, const char *field, int *op, pl_err *err)
{
    const char *name = NULL;
    *op = -1;
    int rc = pl_json_opt_string(edge, field, &name, err);
    if (rc <= 0) return rc;
    if ((*op = pl_graph_find_op(L->g, name)) >= 0) return 0;
    pl_json at = pl_json_at(edge, field);
    const char **names = pl_malloc((size_t)L->g->n_ops * sizeof *names);
    for (int k = 0; k < L->g->n_ops; k++)
        names[k] = L->g->ops[k].name;
    const char *near = pl_json_closest(name, names, (size_t)L->g->n_ops);
    pl_json_fail(&at, err, "unknown node \"%.60s\"%s%.60s%s", name, near ? "; did you mean \"" : "",
                 near ? near : "", near ? "\"?" : "");
    free(names);
    return -1;
}

/* An edge naming a tensor declared before must agree with that declaration. */
static int check_shared(tg_loader *L, const tg_edge *e, int t, pl_err *err)
{
    const tg_tensor *d = &L->tensors[t];
    const char *tname = L->g->tensors[t].name;
    char where[64];
    origin(d, where, sizeof where);
    pl_json at = pl_json_at(e->json, "tensor");
    if (d->kind == TG_WEIGHT)
        return pl_json_fail(&at, err, "tensor \"%.60s\" is the weights declared by %s", tname,
                            where);
    if (d->kind == TG_INPUT && e->from >= 0)
        return pl_json_fail(&at, err,
                            "tensor \"%.60s\" is a graph input (%s has no \"from\"), so no node "
                            "produces it",
                            tname, where);
    const char *producer = d->kind == TG_PRODUCED ? L->g->ops[d->producer].name : "";
    if (d->kind == TG_PRODUCED && e->from < 0)
        return pl_json_fail(&at, err,
                            "tensor \"%.60s\" is produced by \"%.60s\" (%s); an edge without "
                            "\"from\" brings a graph input",
                            tname, producer, where);
    if (d->kind == TG_PRODUCED && d->producer != e->from)
        return pl_json_fail(&at, err,
                            "tensor \"%.60s\" is produced by \"%.60s\" (%s), not by \"%.60s\"",
                            tname, producer, where, L->g->ops[e->from].name);
    if (d->bytes != e->bytes) {
        at = pl_json_at(e->json, "bytes");
        return pl_json_fail(&at, err, "tensor \"%.60s\" has %lld bytes at %s, not %lld", tname,
                            (long long)d->bytes, where, (long long)e->bytes);
    }
    return 0;
}

/* The name of an edge's tensor when the file gives none: "a->b", "a:output" or "b:input". */
static char *default_name(const tg_loader *L, const tg_edge *e)
{
    const char *a = e->from >= 0 ? L->g->ops[e->from].name : "";
    const char *b = e->to >= 0 ? L->g->ops[e->to].name : "";
    size_t n = strlen(a) + strlen(b) + sizeof ":output";
    char *s = pl_malloc(n);
    if (e->from >= 0 && e->to >= 0)
        snprintf(s, n, "%s->%s", a, b);
    else if (e->from >= 0)
        snprintf(s, n, "%s:output", a);
    else
        snprintf(s, n, "%s:input", b);
    return s;
}

/* The tensor an edge carries, found or declared. */
static int edge_tensor(tg_loader *L, const tg_edge *e, pl_err *err)
{
    char *own = e->tensor ? NULL : default_name(L, e);
    const char *name = e->tensor ? e->tensor : own;
    int t = pl_graph_find_tensor(L->g, name), rc = 0;
    if (t >= 0 && own) {
        char where[64];
        rc = pl_json_fail(e->json, err,
                          "the tensor name \"%.60s\" (this edge's default) is already used by %s: "
                          "a repeated edge? Name the tensor (\"tensor\": ...) if not",
                          name, origin(&L->tensors[t], where, sizeof where));
    } else if (t >= 0) {
        rc = check_shared(L, e, t, err);
    } else {
        tg_kind kind = e->from >= 0 ? TG_PRODUCED : TG_INPUT;
        t = new_tensor(L, name, (tg_tensor){kind, e->from, e->bytes, e->index, false, 0});
        if (e->from >= 0)
            pl_op_add_output(L->g, e->from, t);
        else
            pl_graph_add_input(L->g, t);
    }
    free(own);
    return rc < 0 ? -1 : t;
}

static int read_edge_fields(tg_loader *L, const pl_json *edge, tg_edge *e, pl_err *err)
{
    double v;
    pl_json at = pl_json_at(edge, "bytes");
    if (pl_json_check_fields(edge, edge_fields, err) < 0 ||
        read_end(L, edge, "from", &e->from, err) < 0 || read_end(L, edge, "to", &e->to, err) < 0)
        return -1;
    if (e->from < 0 && e->to < 0)
        return pl_json_fail(edge, err,
                            "an edge needs \"from\", \"to\" or both (without \"from\" it brings a "
                            "graph input, without \"to\" it takes a graph output)");
    if (e->from == e->to)
        return pl_json_fail(edge, err, "node \"%.60s\" sends to itself (a self-loop)",
                            L->g->ops[e->from].name);
    if (pl_json_quantity(edge, "bytes", PL_UNIT_BYTES, &v, err) < 0 ||
        to_bytes(&at, v, &e->bytes, err) < 0 ||
        pl_json_opt_string(edge, "tensor", &e->tensor, err) < 0)
        return -1;
    if (e->tensor && !*e->tensor) {
        at = pl_json_at(edge, "tensor");
        return pl_json_fail(&at, err, "a tensor name must not be empty");
    }
    return 0;
}

/* A device name or model in a transfer time: a non-empty string. */
static int read_device_key(const pl_json *obj, const char *field, const char **out, pl_err *err)
{
    if (pl_json_string(obj, field, out, err) < 0) return -1;
    if (**out) return 0;
    pl_json at = pl_json_at(obj, field);
    return pl_json_fail(&at, err, "the device name or model is empty");
}

/* "times_s": [{"from": "V100", "to": "K80", "time_s": "2 ms"}, ...] */
static int read_pair_list(tg_loader *L, const pl_json *list, int t, pl_err *err)
{
    for (size_t i = 0; i < pl_json_len(list); i++) {
        pl_json p = pl_json_index(list, i);
        const char *from, *to;
        double s;
        if (pl_json_check_fields(&p, pair_fields, err) < 0 ||
            read_device_key(&p, "from", &from, err) < 0 ||
            read_device_key(&p, "to", &to, err) < 0 ||
            pl_json_quantity(&p, "time_s", PL_UNIT_SECONDS, &s, err) < 0)
            return -1;
        pl_graph_add_xfer_time(L->g, t, from, to, s);
    }
    return 0;
}

/* "times_s": {"devices": ["d0", "d1"], "matrix_s": [[0, 3], [2, 0]]}: row = sender. */
static int read_pair_matrix(tg_loader *L, const pl_json *obj, int t, pl_err *err)
{
    pl_json devs, rows;
    if (pl_json_check_fields(obj, matrix_fields, err) < 0 ||
        pl_json_array(obj, "devices", &devs, err) < 0 ||
        pl_json_array(obj, "matrix_s", &rows, err) < 0)
        return -1;
    size_t n = pl_json_len(&devs);
    if (!n) return pl_json_fail(&devs, err, "the matrix needs at least one device");
    if (pl_json_len(&rows) != n)
        return pl_json_fail(&rows, err, "%zu rows for %zu devices", pl_json_len(&rows), n);
    for (size_t a = 0; a < n; a++) {
        pl_json row = pl_json_index(&rows, a), from = pl_json_index(&devs, a);
        if (!json_is_string(from.v) || !*json_string_value(from.v))
            return pl_json_fail(&from, err, "a device name or model (a non-empty string)");
        if (!json_is_array(row.v) || pl_json_len(&row) != n)
            return pl_json_fail(&row, err, "a row of %zu times (one per device)", n);
        for (size_t b = 0; b < n; b++) {
            pl_json cell = pl_json_index(&row, b), to = pl_json_index(&devs, b);
            double s;
            if (pl_json_quantity(&cell, NULL, PL_UNIT_SECONDS, &s, err) < 0) return -1;
            pl_graph_add_xfer_time(L->g, t, json_string_value(from.v), json_string_value(to.v), s);
        }
    }
    return 0;
}

/* An edge's "times_s": the transfer times of its tensor per device pair (a list or a matrix),
 * given once per tensor. */
static int read_xfer_times(tg_loader *L, const pl_json *edge, int t, pl_err *err)
{
    if (!pl_json_has(edge, "times_s")) return 0;
    pl_json at = pl_json_at(edge, "times_s");
    if (L->tensors[t].times_edge)
        return pl_json_fail(&at, err,
                            "the transfer times of tensor \"%.60s\" are already given by "
                            "$.edges[%d]: give them once per tensor",
                            L->g->tensors[t].name, L->tensors[t].times_edge - 1);
    L->tensors[t].times_edge = (int)(edge->index + 1);
    if (json_is_array(at.v)) return read_pair_list(L, &at, t, err);
    if (json_is_object(at.v)) return read_pair_matrix(L, &at, t, err);
    return pl_json_fail(&at, err,
                        "transfer times per device pair: a list of {\"from\", \"to\", "
                        "\"time_s\"} or {\"devices\": [...], \"matrix_s\": [[...]]}");
}

static int read_edge(tg_loader *L, const pl_json *edges, int i, pl_err *err)
{
    pl_json edge = pl_json_index(edges, (size_t)i);
    tg_edge e = {.json = &edge, .index = i};
    int t;
    if (read_edge_fields(L, &edge, &e, err) < 0 || (t = edge_tensor(L, &e, err)) < 0) return -1;
    if (e.to >= 0) {
        pl_op_add_input(L->g, e.to, t);
    } else if (!L->tensors[t].output) {
        L->tensors[t].output = true;
        pl_graph_add_output(L->g, t);
    }
    pl_grow((void **)&L->reads, &L->cap_reads, L->n_reads, sizeof *L->reads);
    L->reads[L->n_reads++] = (tg_read){t, e.to, i};
    return read_xfer_times(L, &edge, t, err);
}

static int cmp_read(const void *a, const void *b)
{
    const tg_read *x = a, *y = b;
    if (x->tensor != y->tensor) return x->tensor < y->tensor ? -1 : 1;
    if (x->to != y->to) return x->to < y->to ? -1 : 1;
    return (x->edge > y->edge) - (x->edge < y->edge);
}

/* The same tensor sent to the same node twice is a copy-paste slip, not a second transfer. */
static int check_repeats(tg_loader *L, const pl_json *edges, pl_err *err)
{
    if (L->n_reads) pl_sort(L->reads, (size_t)L->n_reads, sizeof *L->reads, cmp_read);
    for (int k = 1; k < L->n_reads; k++) {
        const tg_read *a = &L->reads[k - 1], *b = &L->reads[k];
        if (a->tensor != b->tensor || a->to != b->to) continue;
        pl_json at = pl_json_index(edges, (size_t)b->edge);
        return pl_json_fail(&at, err, "repeats $.edges[%d]: tensor \"%.60s\" %s%.60s%s", a->edge,
                            L->g->tensors[a->tensor].name,
                            a->to >= 0 ? "to \"" : "as a graph output",
                            a->to >= 0 ? L->g->ops[a->to].name : "", a->to >= 0 ? "\"" : "");
    }
    return 0;
}

/* ---- the whole file ---- */

/* Weights go last among an op's inputs, as in ONNX (data first); and a cost given without
 * moved_bytes counts what the op reads and writes, as infer does for ONNX ops. */
static void finish_ops(tg_loader *L)
{
    pl_graph *g = L->g;
    for (int i = 0; i < g->n_ops; i++) {
        if (L->weights[i] >= 0) pl_op_add_input(g, i, L->weights[i]);
        pl_op *o = &g->ops[i];
        if (!(o->flags & PL_OP_COST_GIVEN) || L->moved_given[i]) continue;
        double sum = 0;
        for (int k = 0; k < o->n_inputs; k++)
            sum += (double)g->tensors[o->inputs[k]].bytes;
        for (int k = 0; k < o->n_outputs; k++)
            sum += (double)g->tensors[o->outputs[k]].bytes;
        o->bytes_moved = sum;
    }
}

static int read_header(const pl_json *root, const char *file, pl_graph **g, pl_err *err)
{
    const char *name = NULL, *producer = "", *description;
    if (pl_json_check_format(root, TG_FORMAT, err) < 0 ||
        pl_json_check_fields(root, top_fields, err) < 0 ||
        pl_json_opt_string(root, "name", &name, err) < 0 ||
        pl_json_opt_string(root, "producer", &producer, err) < 0 ||
        pl_json_opt_string(root, "description", &description, err) < 0)
        return -1;
    if (!name) { /* the file's base name, without its extension */
        const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
        const char *dot = strrchr(base, '.');
        char *own = pl_strndup(base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
        *g = pl_graph_new(own);
        free(own);
    } else {
        *g = pl_graph_new(name);
    }
    snprintf((*g)->info.format, sizeof(*g)->info.format, "json");
    snprintf((*g)->info.producer, sizeof(*g)->info.producer, "%s", producer);
    return 0;
}

static int read_graph(tg_loader *L, const pl_json *root, const char *file, pl_err *err)
{
    pl_json nodes, edges = {0};
    if (read_header(root, file, &L->g, err) < 0 || pl_json_array(root, "nodes", &nodes, err) < 0 ||
        pl_json_opt_array(root, "edges", &edges, err) < 0)
        return -1;
    size_t n = pl_json_len(&nodes), m = pl_json_len(&edges);
    if (!n) return pl_json_fail(&nodes, err, "a task graph needs at least one node");
    if (n > INT32_MAX / 2 || m > INT32_MAX / 2)
        return pl_json_fail(&nodes, err, "too many nodes or edges");
    L->weights = pl_malloc(n * sizeof *L->weights);
    L->moved_given = pl_calloc(n, sizeof *L->moved_given);
    for (size_t i = 0; i < n; i++)
        if (read_node(L, &nodes, (int)i, err) < 0) return -1;
    for (size_t i = 0; i < m; i++)
        if (read_edge(L, &edges, (int)i, err) < 0) return -1;
    if (check_repeats(L, &edges, err) < 0) return -1;
    finish_ops(L);
    /* what finalize can still find is a cycle, and cycles come from the edges */
    char where[PL_ERR_MAX / 2];
    snprintf(where, sizeof where, "%s: $.edges", file);
    return pl_graph_finalize(L->g, where, err);
}

static pl_graph *load_doc(pl_json_doc *doc, const char *file, const char *path,
                          const pl_load_opts *opts, pl_err *err)
{
    if (!doc) return NULL;
    tg_loader L = {0};
    pl_json root = pl_json_root(doc);
    int rc = read_graph(&L, &root, file, err);
    if (rc == 0 && path) L.g->path = pl_strdup(path);
    if (rc == 0 && !(opts && opts->no_infer)) rc = pl_graph_infer(L.g, err);
    free(L.tensors), free(L.weights), free(L.moved_given), free(L.reads);
    pl_json_close(doc);
    if (rc < 0) {
        pl_graph_free(L.g);
        return NULL;
    }
    return L.g;
}

pl_graph *pl_taskgraph_load(const char *path, const pl_load_opts *opts, pl_err *err)
{
    return load_doc(pl_json_open(path, err), path, path, opts, err);
}

pl_graph *pl_taskgraph_load_buffer(const char *buf, size_t len, const char *name,
                                   const pl_load_opts *opts, pl_err *err)
{
    if (!name) name = "<buffer>";
    return load_doc(pl_json_parse(buf, len, name, err), name, NULL, opts, err);
}
