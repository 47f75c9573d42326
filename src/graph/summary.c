/* summary.c: the figures `placer inspect` reports, computed once over the graph and its
 * subgraphs. Tensors flagged OUTER are another graph's tensors seen from a subgraph, so they
 * are never counted twice. */
#include "placer/graph.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    pl_type_count *v;
    int n, cap;
    pl_strmap index;
} hist_t;

/* Counts include subgraph ops; FLOPs come from top-level ops only (a control-flow op carries
 * its body's), so the column sums to the model's total and nothing is counted twice. */
static void hist_add(hist_t *h, const pl_op *op, bool top)
{
    int i = pl_strmap_get(&h->index, op->type);
    if (i < 0) {
        pl_grow((void **)&h->v, &h->cap, h->n, sizeof *h->v);
        i = h->n++;
        h->v[i] = (pl_type_count){op->type, 0, 0, false};
        pl_strmap_put(&h->index, op->type, i);
    }
    h->v[i].count++;
    if (top) h->v[i].flops += op->flops;
    if (op->flags & PL_OP_UNKNOWN_TYPE) h->v[i].unknown = true;
}

static void walk(const pl_graph *g, bool top, pl_graph_summary *s, hist_t *h)
{
    s->n_ops_total += g->n_ops;
    for (int i = 0; i < g->n_ops; i++) {
        const pl_op *op = &g->ops[i];
        hist_add(h, op, top);
        if (op->flags & PL_OP_UNKNOWN_TYPE) s->n_unknown_ops++;
        s->n_subgraphs += op->n_subgraphs;
        for (int k = 0; k < op->n_subgraphs; k++)
            walk(op->subgraphs[k], false, s, h);
    }
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tp = &g->tensors[t];
        if (tp->flags & PL_TENSOR_OUTER) continue;
        s->n_tensors++;
        if (tp->flags & PL_TENSOR_WEIGHT) {
            int64_t n = pl_tensor_numel(tp);
            s->n_weights++;
            if (tp->flags & PL_TENSOR_BYTES_ONLY)
                s->n_weights_bytes_only++;
            else if (n > 0)
                s->n_params += n;
            if (tp->bytes > 0) s->param_bytes += tp->bytes;
        }
        if (tp->bytes < 0 && tp->dtype != PL_DT_STRING) {
            s->n_unknown_shape++;
            if (top && s->n_unknown_shape_listed < 32)
                s->unknown_shape[s->n_unknown_shape_listed++] = t;
        }
    }
}

static int cmp_count(const void *a, const void *b)
{
    const pl_type_count *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->type, y->type);
}

/* Longest path where a path's length is the sum of its ops' FLOPs: the compute that no
 * placement can parallelise away. */
static void longest_path(const pl_graph *g, pl_graph_summary *s)
{
    int n = g->n_ops;
    double *best = pl_malloc((n ? n : 1) * sizeof *best);
    int *from = pl_malloc((n ? n : 1) * sizeof *from);
    int end = -1;
    for (int t = 0; t < n; t++) {
        int v = g->topo[t];
        best[v] = 0;
        from[v] = -1;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (best[g->pred[k]] > best[v] || from[v] < 0) {
                best[v] = best[g->pred[k]];
                from[v] = g->pred[k];
            }
        best[v] += g->ops[v].flops;
        if (end < 0 || best[v] > best[end]) end = v;
    }
    int len = 0;
    for (int v = end; v >= 0; v = from[v])
        len++;
    s->longest_path = pl_malloc((len ? len : 1) * sizeof *s->longest_path);
    s->longest_path_len = len;
    for (int v = end, k = len - 1; v >= 0; v = from[v])
        s->longest_path[k--] = v;
    s->longest_path_flops = end >= 0 ? best[end] : 0;
    free(best);
    free(from);
}

void pl_graph_summarize(const pl_graph *g, pl_graph_summary *s)
{
    memset(s, 0, sizeof *s);
    s->n_ops = g->n_ops;
    s->n_edges = g->n_edges;
    s->n_inputs = g->n_inputs;
    s->n_outputs = g->n_outputs;
    s->unknown_shape = pl_malloc(32 * sizeof *s->unknown_shape);
    hist_t h = {0};
    pl_strmap_init(&h.index);
    walk(g, true, s, &h);
    pl_strmap_free(&h.index);
    pl_sort(h.v, h.n, sizeof *h.v, cmp_count);
    s->hist = h.v;
    s->n_hist = h.n;
    for (int i = 0; i < g->n_ops; i++) {
        s->flops += g->ops[i].flops;
        s->bytes_moved += g->ops[i].bytes_moved;
    }
    longest_path(g, s);
}

void pl_graph_summary_free(pl_graph_summary *s)
{
    free(s->longest_path);
    free(s->unknown_shape);
    free(s->hist);
    memset(s, 0, sizeof *s);
}
