/* passes.c: the colocation pass, the chain contraction pass and the join pass (Talos's packs)
 * over common.h's union-find. */
#include "coarsen_internal.h"

#include <stdlib.h>
#include <string.h>

/* Feeders are cheap, and their result would otherwise travel to the one op that reads it. */
bool pl_coarsen_is_feeder_type(const char *type)
{
    static const char *const types[] = {"Constant", "Shape", "Size", "ConstantOfShape"};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (!strcmp(type, types[k])) return true;
    return false;
}

/* The only op reading p's outputs, or -1 (none, several, or an output leaves the graph). */
static int sole_reader(const pl_graph *g, int p)
{
    const pl_op *op = &g->ops[p];
    int reader = -1;
    for (int k = 0; k < op->n_outputs; k++) {
        if (op->outputs[k] < 0) continue;
        const pl_tensor *t = &g->tensors[op->outputs[k]];
        if (t->flags & PL_TENSOR_OUTPUT) return -1;
        for (int i = 0; i < t->n_consumers; i++) {
            if (reader >= 0 && reader != t->consumers[i]) return -1;
            reader = t->consumers[i];
        }
    }
    return reader;
}

void cs_colocate(cs_state *s)
{
    const pl_graph *g = s->g;
    for (int i = 0; i < g->n_ops; i++) {
        int p = g->topo[i];
        if (!pl_coarsen_is_feeder_type(g->ops[p].type) || s->uf.size[pl_uf_find(&s->uf, p)] != 1)
            continue;
        int q = sole_reader(g, p);
        if (q < 0 || g->ops[q].cls == PL_CLASS_CONTROL) continue;
        pl_uf_union(&s->uf, p, q);
    }
}

/* ---- chains ---- */

typedef struct quotient {
    int *n_succ, *n_pred; /* distinct successor / predecessor groups, at roots */
    int *succ;            /* the successor group when n_succ == 1 */
    bool *control;        /* the group is a control-flow op: never merged */
    bool *exported;       /* some output of the group is a graph output */
} quotient;

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The graph of current groups: distinct successor and predecessor counts per group. */
static void build_quotient(cs_state *s, quotient *q)
{
    const pl_graph *g = s->g;
    int n = g->n_ops;
    memset(q->n_succ, 0, (size_t)n * sizeof(int));
    memset(q->n_pred, 0, (size_t)n * sizeof(int));
    memset(q->control, 0, (size_t)n * sizeof(bool));
    memset(q->exported, 0, (size_t)n * sizeof(bool));
    int64_t *e = pl_malloc((size_t)(g->n_edges + 1) * sizeof *e);
    int m = 0;
    for (int k = 0; k < g->n_edges; k++) {
        int a = pl_uf_find(&s->uf, g->edges[k].src), b = pl_uf_find(&s->uf, g->edges[k].dst);
        if (a != b) e[m++] = (int64_t)a * n + b;
    }
    pl_sort(e, (size_t)m, sizeof *e, cmp_i64);
    for (int k = 0; k < m; k++) {
        if (k && e[k] == e[k - 1]) continue;
        int a = (int)(e[k] / n), b = (int)(e[k] % n);
        q->n_succ[a]++;
        q->succ[a] = b;
        q->n_pred[b]++;
    }
    free(e);
    for (int i = 0; i < n; i++) {
        int r = pl_uf_find(&s->uf, i);
        if (g->ops[i].cls == PL_CLASS_CONTROL) q->control[r] = true;
        for (int k = 0; k < g->ops[i].n_outputs; k++)
            if (g->ops[i].outputs[k] >= 0 &&
                (g->tensors[g->ops[i].outputs[k]].flags & PL_TENSOR_OUTPUT))
                q->exported[r] = true;
    }
}

/* One round: merges disjoint pairs (group, its only successor), so groups grow evenly instead
 * of one chain swallowing the graph. Strict rounds also want the successor's only
 * predecessor to be the group (a true linear chain). Returns the merges made. */
static int chain_round(cs_state *s, quotient *q, bool strict, int target)
{
    const pl_graph *g = s->g;
    int merges = 0;
    s->tick++;
    for (int i = 0; i < g->n_ops && s->uf.n_sets > target; i++) {
        int a = pl_uf_find(&s->uf, g->topo[i]);
        if (s->stamp[a] == s->tick || q->n_succ[a] != 1 || q->control[a] || q->exported[a])
            continue;
        int b = pl_uf_find(&s->uf, q->succ[a]);
        if (s->stamp[b] == s->tick || q->control[b] || (strict && q->n_pred[b] != 1)) continue;
        s->stamp[a] = s->stamp[b] = s->tick;
        pl_uf_union(&s->uf, a, b);
        s->stamp[pl_uf_find(&s->uf, a)] = s->tick;
        merges++;
    }
    return merges;
}

void cs_chain(cs_state *s, int target)
{
    int n = s->g->n_ops;
    quotient q = {pl_malloc((size_t)n * sizeof(int)), pl_malloc((size_t)n * sizeof(int)),
                  pl_malloc((size_t)n * sizeof(int)), pl_malloc((size_t)n * sizeof(bool)),
                  pl_malloc((size_t)n * sizeof(bool))};
    bool strict = true;
    while (s->uf.n_sets > target) {
        build_quotient(s, &q);
        if (chain_round(s, &q, strict, target)) continue;
        if (!strict) break;
        strict = false; /* no linear chain left: contract ops into their only successor */
    }
    free(q.n_succ);
    free(q.n_pred);
    free(q.succ);
    free(q.control);
    free(q.exported);
}

/* ---- the join pass (Talos's packs) ---- */

/* A feeder that is a source with one successor, whose group it always joins. */
static bool is_source_feeder(const pl_graph *g, int v)
{
    return pl_coarsen_is_feeder_type(g->ops[v].type) && g->pred_off[v + 1] == g->pred_off[v] &&
           g->succ_off[v + 1] - g->succ_off[v] == 1;
}

/* The one predecessor of v that is not a source feeder, or -1 when it has none or several. */
static int data_pred(const pl_graph *g, int v)
{
    int u = -1;
    for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
        if (is_source_feeder(g, g->pred[e])) continue;
        if (u >= 0) return -1;
        u = g->pred[e];
    }
    return u;
}

void pl_coarsen_join(const pl_graph *g, pl_coarsen_join_rule join, void *ctx, pl_uf *groups)
{
    int n = g->n_ops;
    pl_uf_init(groups, n);
    int *first = pl_malloc((size_t)n * sizeof *first); /* root -> its group's first op */
    for (int v = 0; v < n; v++)
        first[v] = v;
    for (int i = 0; i < n; i++) {
        int v = g->topo[i], u = data_pred(g, v);
        if (u < 0 || g->succ_off[u + 1] - g->succ_off[u] != 1) continue;
        int f = first[pl_uf_find(groups, u)];
        if (join(ctx, f, v)) first[pl_uf_union(groups, u, v)] = f;
    }
    for (int v = 0; v < n; v++)
        if (is_source_feeder(g, v)) pl_uf_union(groups, g->succ[g->succ_off[v]], v);
    free(first);
}
