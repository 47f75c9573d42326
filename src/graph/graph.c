/* graph.c: building a graph, and finalize(): linking tensors to ops, the topological order,
 * edges and adjacency. Everything downstream trusts what finalize() checked here. */
#include "placer/graph.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    double size;
} dtypes[PL_DT_COUNT] = {
    [PL_DT_UNDEFINED] = {"undefined", 0},
    [PL_DT_FLOAT] = {"float32", 4},
    [PL_DT_UINT8] = {"uint8", 1},
    [PL_DT_INT8] = {"int8", 1},
    [PL_DT_UINT16] = {"uint16", 2},
    [PL_DT_INT16] = {"int16", 2},
    [PL_DT_INT32] = {"int32", 4},
    [PL_DT_INT64] = {"int64", 8},
    [PL_DT_STRING] = {"string", 0},
    [PL_DT_BOOL] = {"bool", 1},
    [PL_DT_FLOAT16] = {"float16", 2},
    [PL_DT_DOUBLE] = {"float64", 8},
    [PL_DT_UINT32] = {"uint32", 4},
    [PL_DT_UINT64] = {"uint64", 8},
    [PL_DT_COMPLEX64] = {"complex64", 8},
    [PL_DT_COMPLEX128] = {"complex128", 16},
    [PL_DT_BFLOAT16] = {"bfloat16", 2},
    [PL_DT_FLOAT8E4M3FN] = {"float8e4m3fn", 1},
    [PL_DT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1},
    [PL_DT_FLOAT8E5M2] = {"float8e5m2", 1},
    [PL_DT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1},
    [PL_DT_UINT4] = {"uint4", 0.5},
    [PL_DT_INT4] = {"int4", 0.5},
};

double pl_dtype_size(int dt)
{
    return dt > 0 && dt < PL_DT_COUNT ? dtypes[dt].size : 0;
}

const char *pl_dtype_name(int dt)
{
    return dt >= 0 && dt < PL_DT_COUNT ? dtypes[dt].name : "undefined";
}

const char *pl_op_class_name(pl_op_class c)
{
    static const char *names[PL_CLASS_COUNT] = {"dense",         "elementwise", "reduction",
                                                "data-movement", "control",     "unknown"};
    return c >= 0 && c < PL_CLASS_COUNT ? names[c] : "unknown";
}

/* ---- construction ---- */

pl_graph *pl_graph_new(const char *name)
{
    pl_graph *g = pl_calloc(1, sizeof *g);
    g->name = pl_strdup(name ? name : "");
    pl_strmap_init(&g->tensor_by_name);
    pl_strmap_init(&g->op_by_name);
    pl_strmap_init(&g->coloc_by_name);
    return g;
}

static void free_derived(pl_graph *g)
{
    free(g->topo), free(g->topo_pos), free(g->edges);
    free(g->succ_off), free(g->succ), free(g->pred_off), free(g->pred);
    g->topo = g->topo_pos = g->succ_off = g->succ = g->pred_off = g->pred = NULL;
    g->edges = NULL;
    g->n_edges = 0;
}

static void free_op(pl_op *op)
{
    free(op->name), free(op->type), free(op->domain);
    free(op->inputs), free(op->outputs);
    for (int a = 0; a < op->n_attrs; a++) {
        pl_attr *at = &op->attrs[a];
        free(at->name), free(at->s), free(at->ints), free(at->floats);
    }
    free(op->attrs);
    for (int s = 0; s < op->n_subgraphs; s++) {
        pl_graph_free(op->subgraphs[s]);
        free(op->subgraph_attr[s]);
    }
    free(op->subgraphs), free(op->subgraph_attr);
    for (int k = 0; k < op->n_times; k++)
        free(op->time_device[k]);
    free(op->time_device), free(op->time_s);
}

void pl_graph_free(pl_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_ops; i++)
        free_op(&g->ops[i]);
    for (int i = 0; i < g->n_tensors; i++) {
        pl_tensor *t = &g->tensors[i];
        free(t->name), free(t->dims), free(t->consumers), free(t->ivals);
        free(t->fvals);
    }
    for (int i = 0; i < g->n_warnings_stored; i++)
        free(g->warnings[i]);
    free(g->warnings);
    for (int i = 0; i < g->n_xfer_times; i++)
        free(g->xfer_times[i].from), free(g->xfer_times[i].to);
    free(g->xfer_times);
    for (int i = 0; i < g->n_coloc; i++)
        free(g->coloc_names[i]);
    free(g->coloc_names);
    for (int i = 0; i < g->n_tenants; i++) {
        free(g->tenant_names[i]);
        if (g->tenant_paths) free(g->tenant_paths[i]);
    }
    free(g->tenant_names), free(g->tenant_paths);
    free(g->ops), free(g->tensors), free(g->inputs), free(g->outputs);
    free(g->name), free(g->path);
    pl_strmap_free(&g->tensor_by_name);
    pl_strmap_free(&g->op_by_name);
    pl_strmap_free(&g->coloc_by_name);
    free_derived(g);
    free(g);
}

int pl_graph_find_tensor(const pl_graph *g, const char *name)
{
    return pl_strmap_get(&g->tensor_by_name, name);
}

int pl_graph_find_op(const pl_graph *g, const char *name)
{
    return pl_strmap_get(&g->op_by_name, name);
}

/* The maps hold pointers to names, which live in the op and tensor records themselves and
 * not in the arrays, so growing the arrays does not invalidate them. */
int pl_graph_tensor(pl_graph *g, const char *name)
{
    int t = pl_strmap_get(&g->tensor_by_name, name);
    if (t >= 0) return t;
    pl_grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors, sizeof *g->tensors);
    t = g->n_tensors++;
    pl_tensor *tp = &g->tensors[t];
    memset(tp, 0, sizeof *tp);
    tp->name = pl_strdup(name);
    tp->rank = -1;
    tp->bytes = -1;
    tp->producer = -1;
    pl_strmap_put(&g->tensor_by_name, tp->name, t);
    return t;
}

int pl_graph_add_op(pl_graph *g, const char *name, const char *type, const char *domain)
{
    char buf[512];
    if (!name || !*name) {
        /* Unnamed ops are common in ONNX files; the generated name must still be unique. */
        for (int k = g->n_ops;; k++) {
            snprintf(buf, sizeof buf, "%s_%d", type, k);
            if (pl_strmap_get(&g->op_by_name, buf) < 0) break;
        }
        name = buf;
    } else if (pl_strmap_get(&g->op_by_name, name) >= 0) {
        int k = 2;
        do
            snprintf(buf, sizeof buf, "%.480s#%d", name, k++);
        while (pl_strmap_get(&g->op_by_name, buf) >= 0);
        pl_graph_warn(g, "op name '%s' is used twice; the second is renamed '%s'", name, buf);
        name = buf;
    }
    pl_grow((void **)&g->ops, &g->cap_ops, g->n_ops, sizeof *g->ops);
    int i = g->n_ops++;
    pl_op *op = &g->ops[i];
    memset(op, 0, sizeof *op);
    op->name = pl_strdup(name);
    op->type = pl_strdup(type ? type : "");
    op->domain = pl_strdup(domain ? domain : "");
    op->cls = PL_CLASS_UNKNOWN;
    op->kernel_of = -1;
    pl_strmap_put(&g->op_by_name, op->name, i);
    return i;
}

void pl_op_add_input(pl_graph *g, int op, int tensor)
{
    pl_op *o = &g->ops[op];
    pl_grow((void **)&o->inputs, &o->cap_inputs, o->n_inputs, sizeof *o->inputs);
    o->inputs[o->n_inputs++] = tensor;
}

void pl_op_add_output(pl_graph *g, int op, int tensor)
{
    pl_op *o = &g->ops[op];
    pl_grow((void **)&o->outputs, &o->cap_outputs, o->n_outputs, sizeof *o->outputs);
    o->outputs[o->n_outputs++] = tensor;
}

pl_attr *pl_op_add_attr(pl_graph *g, int op, const char *name, pl_attr_kind kind)
{
    pl_op *o = &g->ops[op];
    pl_grow((void **)&o->attrs, &o->cap_attrs, o->n_attrs, sizeof *o->attrs);
    pl_attr *a = &o->attrs[o->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = pl_strdup(name);
    a->kind = kind;
    a->tensor = -1;
    return a;
}

void pl_op_add_subgraph(pl_graph *g, int op, const char *attr_name, pl_graph *sub)
{
    pl_op *o = &g->ops[op];
    int n = o->n_subgraphs + 1;
    o->subgraphs = pl_realloc(o->subgraphs, n * sizeof *o->subgraphs);
    o->subgraph_attr = pl_realloc(o->subgraph_attr, n * sizeof *o->subgraph_attr);
    o->subgraphs[n - 1] = sub;
    o->subgraph_attr[n - 1] = pl_strdup(attr_name);
    o->n_subgraphs = n;
    sub->parent = g;
}

void pl_op_add_time(pl_graph *g, int op, const char *device_model, double seconds)
{
    pl_op *o = &g->ops[op];
    int n = o->n_times + 1;
    o->time_device = pl_realloc(o->time_device, n * sizeof *o->time_device);
    o->time_s = pl_realloc(o->time_s, n * sizeof *o->time_s);
    o->time_device[n - 1] = pl_strdup(device_model);
    o->time_s[n - 1] = seconds;
    o->n_times = n;
}

void pl_graph_add_xfer_time(pl_graph *g, int tensor, const char *from, const char *to,
                            double seconds)
{
    pl_grow((void **)&g->xfer_times, &g->cap_xfer_times, g->n_xfer_times, sizeof *g->xfer_times);
    g->xfer_times[g->n_xfer_times++] =
        (pl_xfer_time){tensor, pl_strdup(from), pl_strdup(to), seconds};
}

void pl_op_set_coloc(pl_graph *g, int op, const char *name)
{
    int c = pl_strmap_get(&g->coloc_by_name, name);
    if (c < 0) {
        c = g->n_coloc++;
        g->coloc_names = pl_realloc(g->coloc_names, (size_t)g->n_coloc * sizeof *g->coloc_names);
        g->coloc_names[c] = pl_strdup(name);
        pl_strmap_put(&g->coloc_by_name, g->coloc_names[c], c);
    }
    g->ops[op].coloc = c + 1;
}

void pl_graph_add_input(pl_graph *g, int tensor)
{
    pl_grow((void **)&g->inputs, &g->cap_inputs, g->n_inputs, sizeof *g->inputs);
    g->inputs[g->n_inputs++] = tensor;
    g->tensors[tensor].flags |= PL_TENSOR_INPUT;
}

void pl_graph_add_output(pl_graph *g, int tensor)
{
    pl_grow((void **)&g->outputs, &g->cap_outputs, g->n_outputs, sizeof *g->outputs);
    g->outputs[g->n_outputs++] = tensor;
    g->tensors[tensor].flags |= PL_TENSOR_OUTPUT;
}

int64_t pl_tensor_numel(const pl_tensor *t)
{
    if (t->rank < 0) return -1;
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0) return -1;
        if (t->dims[d] && n > INT64_MAX / t->dims[d]) return -1; /* absurd shapes: unknown */
        n *= t->dims[d];
    }
    return n;
}

void pl_tensor_set_shape(pl_tensor *t, int dtype, int rank, const int64_t *dims)
{
    if (dtype != PL_DT_UNDEFINED || t->dtype == PL_DT_UNDEFINED) t->dtype = dtype;
    free(t->dims);
    t->dims = NULL;
    t->rank = rank < 0 ? -1 : rank;
    if (rank > 0) {
        t->dims = pl_malloc(rank * sizeof *t->dims);
        for (int d = 0; d < rank; d++)
            t->dims[d] = dims[d] < 0 ? PL_DIM_UNKNOWN : dims[d];
    }
    int64_t n = pl_tensor_numel(t);
    double sz = pl_dtype_size(t->dtype);
    /* a size past 2^63 bytes is not a real tensor: unknown rather than an overflowing cast */
    double b = (double)n * sz + 0.5;
    t->bytes = (n < 0 || sz == 0 || b >= 9.0e18) ? -1 : (int64_t)b;
    /* 4-bit types round up to whole bytes; numel*0.5 + 0.5 does exactly that. */
}

void pl_tensor_set_ivals(pl_tensor *t, const int64_t *v, int n)
{
    free(t->ivals);
    t->ivals = NULL;
    t->n_ivals = 0;
    if (n < 0 || !v) return;
    t->ivals = pl_malloc((n ? n : 1) * sizeof *t->ivals);
    memcpy(t->ivals, v, n * sizeof *v);
    t->n_ivals = n;
}

void pl_tensor_set_fvals(pl_tensor *t, const double *v, int n)
{
    free(t->fvals);
    t->fvals = NULL;
    t->n_fvals = 0;
    if (n < 0 || !v) return;
    t->fvals = pl_malloc((n ? n : 1) * sizeof *t->fvals);
    memcpy(t->fvals, v, n * sizeof *v);
    t->n_fvals = n;
}

void pl_graph_warn(pl_graph *g, const char *fmt, ...)
{
    while (g->parent)
        g = g->parent;
    g->n_warnings++;
    if (g->n_warnings_stored >= PL_MAX_STORED_WARNINGS) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    g->warnings = pl_realloc(g->warnings, (g->n_warnings_stored + 1) * sizeof *g->warnings);
    g->warnings[g->n_warnings_stored++] = pl_strdup(buf);
}

/* ---- attributes ---- */

const pl_attr *pl_op_attr(const pl_op *op, const char *name)
{
    for (int a = 0; a < op->n_attrs; a++)
        if (strcmp(op->attrs[a].name, name) == 0) return &op->attrs[a];
    return NULL;
}

int64_t pl_op_attr_int(const pl_op *op, const char *name, int64_t dflt)
{
    const pl_attr *a = pl_op_attr(op, name);
    return a && a->kind == PL_ATTR_INT ? a->i : dflt;
}

double pl_op_attr_float(const pl_op *op, const char *name, double dflt)
{
    const pl_attr *a = pl_op_attr(op, name);
    if (!a) return dflt;
    return a->kind == PL_ATTR_FLOAT ? a->f : a->kind == PL_ATTR_INT ? (double)a->i : dflt;
}

const char *pl_op_attr_string(const pl_op *op, const char *name, const char *dflt)
{
    const pl_attr *a = pl_op_attr(op, name);
    return a && a->kind == PL_ATTR_STRING && a->s ? a->s : dflt;
}

int pl_op_attr_ints(const pl_op *op, const char *name, const int64_t **v)
{
    const pl_attr *a = pl_op_attr(op, name);
    if (!a || a->kind != PL_ATTR_INTS) {
        *v = NULL;
        return 0;
    }
    *v = a->ints;
    return a->n;
}

/* ---- input shapes given by the user ---- */

static int parse_dims(const char *text, int64_t *dims, int max, const char *where, pl_err *err)
{
    int rank = 0;
    const char *p = text;
    if (!*p) return 0; /* "NAME=" is a scalar */
    for (;;) {
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || errno || rank == max)
            return pl_err_set(err,
                              "%s: input shape '%s': expected comma-separated sizes such as "
                              "1,3,224,224",
                              where, text);
        dims[rank++] = d;
        if (*end == 0) return rank;
        if (*end != ',')
            return pl_err_set(err, "%s: input shape '%s': unexpected '%c'", where, text, *end);
        p = end + 1;
    }
}

static int set_one_input(pl_graph *g, const char *spec, const char *where, pl_err *err)
{
    const char *eq = strchr(spec, '=');
    if (!eq) return pl_err_set(err, "%s: input shape '%s': expected NAME=SIZES", where, spec);
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
    int t = pl_graph_find_tensor(g, name);
    if (t < 0 || !(g->tensors[t].flags & PL_TENSOR_INPUT)) {
        char list[512] = "";
        for (int k = 0; k < g->n_inputs && strlen(list) < sizeof list - 80; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s'", k ? ", " : "",
                     g->tensors[g->inputs[k]].name);
        return pl_err_set(err, "%s: no graph input named '%s' (inputs: %s)", where, name, list);
    }
    int64_t dims[64];
    int rank = parse_dims(eq + 1, dims, 64, where, err);
    if (rank < 0) return -1;
    pl_tensor *tp = &g->tensors[t];
    if (tp->rank >= 0 && tp->rank != rank)
        return pl_err_set(err, "%s: input '%s' has rank %d in the file; '%s' gives %d dims", where,
                          name, tp->rank, spec, rank);
    for (int d = 0; tp->rank >= 0 && d < rank; d++)
        if (tp->dims[d] >= 0 && tp->dims[d] != dims[d])
            return pl_err_set(err, "%s: input '%s' has dim %d = %lld in the file; '%s' says %lld",
                              where, name, d, (long long)tp->dims[d], spec, (long long)dims[d]);
    pl_tensor_set_shape(tp, tp->dtype, rank, dims);
    return 0;
}

int pl_graph_set_input_shapes(pl_graph *g, const pl_load_opts *opts, const char *where, pl_err *err)
{
    for (int k = 0; opts && k < opts->n_input_shapes; k++)
        if (set_one_input(g, opts->input_shapes[k], where, err) < 0) return -1;
    return 0;
}

const char *pl_graph_sha256(const pl_graph *g, pl_err *err)
{
    if (!g->path || g->sha256[0]) return g->sha256;
    /* the cache is not part of the graph's value: filling it keeps g logically const */
    char *cache = ((pl_graph *)g)->sha256;
    return pl_sha256_file(g->path, cache, err) < 0 ? NULL : cache;
}
