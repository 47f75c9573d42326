/* finalize.c: turns ops-and-tensors into a checked DAG: producers and consumers linked,
 * every read tensor accounted for, edges and adjacency derived, and a topological order
 * computed here rather than trusted from the file (model-zoo files are not always sorted). */
#include "placer/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_consumer(pl_tensor *t, int op)
{
    /* Ops are linked in index order, so a repeat read by the same op is the last entry. */
    if (t->n_consumers && t->consumers[t->n_consumers - 1] == op) return;
    pl_grow((void **)&t->consumers, &t->cap_consumers, t->n_consumers, sizeof *t->consumers);
    t->consumers[t->n_consumers++] = op;
}

static int link_tensors(pl_graph *g, const char *where, pl_err *err)
{
    for (int t = 0; t < g->n_tensors; t++) {
        g->tensors[t].producer = -1;
        g->tensors[t].n_consumers = 0;
    }
    for (int i = 0; i < g->n_ops; i++) {
        const pl_op *op = &g->ops[i];
        for (int k = 0; k < op->n_outputs; k++) {
            if (op->outputs[k] < 0) continue;
            pl_tensor *t = &g->tensors[op->outputs[k]];
            if (t->producer >= 0)
                return pl_err_set(err, "%s: op '%s': tensor '%s' is already produced by op '%s'",
                                  where, op->name, t->name, g->ops[t->producer].name);
            if ((t->flags & PL_TENSOR_WEIGHT) && strcmp(op->type, "Constant") != 0)
                return pl_err_set(err,
                                  "%s: op '%s' (%s) writes tensor '%s', which is an initializer",
                                  where, op->name, op->type, t->name);
            if (t->flags & PL_TENSOR_INPUT)
                return pl_err_set(err,
                                  "%s: op '%s' (%s) writes tensor '%s', which is a graph input",
                                  where, op->name, op->type, t->name);
            t->producer = i;
        }
    }
    for (int i = 0; i < g->n_ops; i++) {
        const pl_op *op = &g->ops[i];
        for (int k = 0; k < op->n_inputs; k++)
            if (op->inputs[k] >= 0) add_consumer(&g->tensors[op->inputs[k]], i);
    }
    const unsigned sourced = PL_TENSOR_WEIGHT | PL_TENSOR_INPUT | PL_TENSOR_OUTER;
    for (int i = 0; i < g->n_ops; i++) {
        const pl_op *op = &g->ops[i];
        for (int k = 0; k < op->n_inputs; k++) {
            if (op->inputs[k] < 0) continue;
            const pl_tensor *t = &g->tensors[op->inputs[k]];
            if (t->producer < 0 && !(t->flags & sourced))
                return pl_err_set(err,
                                  "%s: op '%s' (%s) reads tensor '%s', which no op produces and "
                                  "which is not a graph input or initializer",
                                  where, op->name, op->type, t->name);
        }
    }
    for (int k = 0; k < g->n_outputs; k++) {
        const pl_tensor *t = &g->tensors[g->outputs[k]];
        if (t->producer < 0 && !(t->flags & sourced))
            return pl_err_set(err, "%s: graph output '%s' is not produced by any op", where,
                              t->name);
    }
    return 0;
}

static int cmp_edge(const void *a, const void *b)
{
    const pl_edge *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

static void build_edges(pl_graph *g)
{
    int n = 0, cap = 0;
    pl_edge *e = NULL;
    for (int i = 0; i < g->n_ops; i++) {
        const pl_op *op = &g->ops[i];
        for (int k = 0; k < op->n_outputs; k++) {
            if (op->outputs[k] < 0) continue;
            const pl_tensor *t = &g->tensors[op->outputs[k]];
            for (int c = 0; c < t->n_consumers; c++) {
                pl_grow((void **)&e, &cap, n, sizeof *e);
                e[n++] = (pl_edge){i, t->consumers[c], op->outputs[k]};
            }
        }
    }
    pl_sort(e, n, sizeof *e, cmp_edge);
    g->edges = e;
    g->n_edges = n;
}

/* CSR of distinct neighbours; `fwd` picks successors (by src) or predecessors (by dst). */
static void build_csr(const pl_graph *g, bool fwd, int **off_out, int **adj_out)
{
    int n = g->n_ops;
    int *off = pl_calloc(n + 1, sizeof *off);
    int *adj = pl_malloc((g->n_edges ? g->n_edges : 1) * sizeof *adj);
    /* count distinct pairs; edges are sorted by (src, dst) so duplicates are adjacent */
    for (int k = 0; k < g->n_edges; k++) {
        const pl_edge *e = &g->edges[k];
        if (k && e->src == e[-1].src && e->dst == e[-1].dst) continue;
        off[(fwd ? e->src : e->dst) + 1]++;
    }
    for (int i = 0; i < n; i++)
        off[i + 1] += off[i];
    int *fill = pl_malloc((n ? n : 1) * sizeof *fill);
    memcpy(fill, off, n * sizeof *fill);
    for (int k = 0; k < g->n_edges; k++) {
        const pl_edge *e = &g->edges[k];
        if (k && e->src == e[-1].src && e->dst == e[-1].dst) continue;
        int a = fwd ? e->src : e->dst, b = fwd ? e->dst : e->src;
        adj[fill[a]++] = b;
    }
    free(fill);
    *off_out = off;
    *adj_out = adj;
}

/* ---- topological order: Kahn's algorithm with a min-heap on op index, so ties keep file
 * order ---- */

/* Names the ops of one cycle among the ops Kahn could not order (indeg > 0): walking
 * predecessors that are still unordered must revisit an op, and the loop from there is a
 * cycle. */
static int report_cycle(const pl_graph *g, const int *indeg, const char *where, pl_err *err)
{
    int n = g->n_ops, start = -1;
    for (int i = 0; i < n && start < 0; i++)
        if (indeg[i] > 0) start = i;
    int *seen = pl_malloc(n * sizeof *seen);
    for (int i = 0; i < n; i++)
        seen[i] = -1;
    int *path = pl_malloc(n * sizeof *path), len = 0, v = start;
    while (seen[v] < 0) {
        seen[v] = len;
        path[len++] = v;
        int next = -1;
        for (int k = g->pred_off[v]; k < g->pred_off[v + 1]; k++)
            if (indeg[g->pred[k]] > 0) {
                next = g->pred[k];
                break;
            }
        v = next;
    }
    /* path[seen[v]..len) is the cycle walked backwards: print it forwards, starting from the
     * op that comes first in the file so the message does not depend on where the walk began */
    int cyc = len - seen[v], first = 0;
    int *fwd = pl_malloc(cyc * sizeof *fwd);
    for (int k = 0; k < cyc; k++)
        fwd[k] = path[len - 1 - k];
    for (int k = 1; k < cyc; k++)
        if (fwd[k] < fwd[first]) first = k;
    char msg[PL_ERR_MAX] = "";
    size_t used = 0;
    for (int k = 0; k <= cyc && used < sizeof msg - 64; k++)
        used += snprintf(msg + used, sizeof msg - used, "%s'%s'", k ? " -> " : "",
                         g->ops[fwd[(first + k) % cyc]].name);
    if (used >= sizeof msg - 64) snprintf(msg + sizeof msg - 64, 64, " ...");
    free(fwd);
    free(seen);
    free(path);
    return pl_err_set(err, "%s: the graph has a cycle through %d op%s: %s", where, cyc,
                      cyc == 1 ? "" : "s", msg);
}

static int topo_sort(pl_graph *g, const char *where, pl_err *err)
{
    int n = g->n_ops;
    int *indeg = pl_calloc(n ? n : 1, sizeof *indeg);
    for (int i = 0; i < n; i++)
        indeg[i] = g->pred_off[i + 1] - g->pred_off[i];
    pl_heap heap = {0};
    g->topo = pl_malloc((n ? n : 1) * sizeof *g->topo);
    g->topo_pos = pl_malloc((n ? n : 1) * sizeof *g->topo_pos);
    for (int i = 0; i < n; i++)
        if (!indeg[i]) pl_heap_push(&heap, (pl_heap_item){.c = i, .id = i});
    int done = 0;
    while (heap.n) {
        int v = pl_heap_pop(&heap).id;
        g->topo_pos[v] = done;
        g->topo[done++] = v;
        for (int k = g->succ_off[v]; k < g->succ_off[v + 1]; k++)
            if (--indeg[g->succ[k]] == 0)
                pl_heap_push(&heap, (pl_heap_item){.c = g->succ[k], .id = g->succ[k]});
    }
    pl_heap_free(&heap);
    int rc = done == n ? 0 : report_cycle(g, indeg, where, err);
    free(indeg);
    return rc;
}

int pl_graph_finalize(pl_graph *g, const char *where, pl_err *err)
{
    if (!where) where = g->path ? g->path : g->name;
    /* finalize may run again after an edit (a rewrite pass): drop what it derived before */
    free(g->topo), free(g->topo_pos), free(g->edges);
    free(g->succ_off), free(g->succ), free(g->pred_off), free(g->pred);
    if (link_tensors(g, where, err) < 0) return -1;
    build_edges(g);
    build_csr(g, true, &g->succ_off, &g->succ);
    build_csr(g, false, &g->pred_off, &g->pred);
    return topo_sort(g, where, err);
}
