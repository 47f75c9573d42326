/* reach.c: exact reachability queries on a DAG.
 *
 * The MILP needs "is j a successor of i?" for every pair of ops that could share a device, so
 * a query must be O(1) and the structure must fit 50,000 ops. A full bitset closure needs
 * n²/8 bytes (312 MB at 50,000 ops); instead we cover the DAG with chains (sequences of
 * nodes, each reaching the next) and store for each node v and chain c the last position in c
 * that reaches v. Then
 *     reach(i, j)  <=>  last[j][chain(i)] >= pos(i)
 * because within a chain everything before a node reaches it.
 *
 * Chains are built greedily in topological order: v joins a chain whose tail already reaches
 * v (the labels computed from v's predecessors tell us that), so a chain may skip over other
 * nodes. Chains of the closure, unlike paths, continue past joins, so the chain count follows
 * the graph's width (ops that can run side by side), which is small for DNNs, not its depth.
 * A chain created after v holds only nodes after v in the order, so v's row stops at the
 * chains that existed when v was placed: rows are jagged and the table is at most n·k.
 * Sources (ops with no predecessor: Constants, mostly) would each need a chain of their own,
 * since no tail can reach them; they get none, and a query from a source asks its successors.
 * If the table would pass MAX_TABLE_BYTES (a very wide graph) we answer by a DFS pruned with
 * the topological position instead: still exact, slower per query. */
#include "placer/graph.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLE_BYTES ((size_t)512 << 20)

struct pl_reach {
    int n, k;
    int *chain, *pos; /* chain of each node and its position in it */
    size_t *row;      /* row[v] .. row[v] + rowlen[v]: last[v][c] for c < rowlen[v] */
    int *rowlen;
    int32_t *last; /* -1: no node of chain c reaches v */
    int *topo_pos;
    /* DFS mode */
    const int *succ_off, *succ;
    int *stamp, cur_stamp, *stack;
};

/* Predecessor lists from the successor CSR: the labels flow from predecessors. */
static void transpose(int n, const int *succ_off, const int *succ, int **poff, int **pred)
{
    int m = succ_off[n];
    int *off = pl_calloc(n + 1, sizeof *off), *adj = pl_malloc((m ? m : 1) * sizeof *adj);
    for (int e = 0; e < m; e++)
        off[succ[e] + 1]++;
    for (int v = 0; v < n; v++)
        off[v + 1] += off[v];
    int *fill = pl_malloc((n ? n : 1) * sizeof *fill);
    memcpy(fill, off, n * sizeof *fill);
    for (int v = 0; v < n; v++)
        for (int e = succ_off[v]; e < succ_off[v + 1]; e++)
            adj[fill[succ[e]]++] = v;
    free(fill);
    *poff = off;
    *pred = adj;
}

typedef struct {
    int32_t *buf;
    size_t len, cap, max;
    int *tail_pos; /* per chain: position of its last node */
    int cap_chains;
} builder_t;

/* Computes v's row from its predecessors' rows and places v on a chain. Returns false when
 * the table would exceed its cap. */
static bool label_node(struct pl_reach *r, builder_t *b, int v, const int *poff, const int *pred)
{
    if (poff[v] == poff[v + 1]) { /* a source: no chain, no row */
        r->chain[v] = -1;
        r->rowlen[v] = 0;
        r->row[v] = 0;
        return true;
    }
    int k = r->k;
    if (b->len + k > b->max) return false;
    if (b->len + k > b->cap) {
        while (b->len + k > b->cap)
            b->cap = b->cap ? b->cap * 2 : 1024;
        if (b->cap > b->max) b->cap = b->max;
        b->buf = pl_realloc(b->buf, b->cap * sizeof *b->buf);
    }
    int32_t *row = b->buf + b->len;
    for (int c = 0; c < k; c++)
        row[c] = -1;
    for (int e = poff[v]; e < poff[v + 1]; e++) {
        int p = pred[e];
        if (r->chain[p] < 0) continue; /* sources reach v but no query is made from them */
        const int32_t *prow = b->buf + r->row[p];
        for (int c = 0; c < r->rowlen[p]; c++)
            if (prow[c] > row[c]) row[c] = prow[c];
        if (r->pos[p] > row[r->chain[p]]) row[r->chain[p]] = r->pos[p];
    }
    /* join a chain whose tail reaches v; prefer a predecessor's chain (locality) */
    int join = -1;
    for (int e = poff[v]; e < poff[v + 1] && join < 0; e++) {
        int c = r->chain[pred[e]];
        if (c >= 0 && row[c] == b->tail_pos[c]) join = c;
    }
    for (int c = 0; c < k && join < 0; c++)
        if (row[c] >= 0 && row[c] == b->tail_pos[c]) join = c;
    if (join < 0) {
        pl_grow((void **)&b->tail_pos, &b->cap_chains, r->k, sizeof *b->tail_pos);
        join = r->k++;
        b->tail_pos[join] = -1;
    }
    r->chain[v] = join;
    r->pos[v] = ++b->tail_pos[join];
    r->row[v] = b->len;
    r->rowlen[v] = k;
    b->len += k;
    return true;
}

static bool build_table(struct pl_reach *r, const int *succ_off, const int *succ, const int *topo,
                        size_t max_bytes)
{
    int *poff, *pred;
    transpose(r->n, succ_off, succ, &poff, &pred);
    builder_t b = {0};
    b.max = max_bytes / sizeof(int32_t);
    bool ok = true;
    for (int t = 0; t < r->n && ok; t++)
        ok = label_node(r, &b, topo[t], poff, pred);
    free(poff);
    free(pred);
    free(b.tail_pos);
    if (!ok) {
        free(b.buf);
        r->k = 0;
        return false;
    }
    r->last = b.len ? pl_realloc(b.buf, b.len * sizeof *b.buf) : b.buf;
    if (!r->last) r->last = pl_malloc(sizeof *r->last);
    return true;
}

pl_reach *pl_reach_build(int n, const int *succ_off, const int *succ, const int *topo)
{
    return pl_reach_build_capped(n, succ_off, succ, topo, MAX_TABLE_BYTES);
}

pl_reach *pl_reach_build_capped(int n, const int *succ_off, const int *succ, const int *topo,
                                size_t max_table_bytes)
{
    struct pl_reach *r = pl_calloc(1, sizeof *r);
    r->n = n;
    size_t sz = n ? n : 1;
    r->chain = pl_malloc(sz * sizeof *r->chain);
    r->pos = pl_malloc(sz * sizeof *r->pos);
    r->row = pl_malloc(sz * sizeof *r->row);
    r->rowlen = pl_malloc(sz * sizeof *r->rowlen);
    r->topo_pos = pl_malloc(sz * sizeof *r->topo_pos);
    for (int t = 0; t < n; t++)
        r->topo_pos[topo[t]] = t;
    r->succ_off = succ_off;
    r->succ = succ;
    if (max_table_bytes > 0 && build_table(r, succ_off, succ, topo, max_table_bytes)) return r;
    r->stamp = pl_calloc(sz, sizeof *r->stamp);
    r->stack = pl_malloc(sz * sizeof *r->stack);
    return r;
}

pl_reach *pl_graph_reach(const pl_graph *g)
{
    return pl_reach_build(g->n_ops, g->succ_off, g->succ, g->topo);
}

/* The index keeps pointers to the caller's CSR arrays: they must outlive the pl_reach. */
static bool reach_dfs(struct pl_reach *r, int from, int to)
{
    int limit = r->topo_pos[to], sp = 0;
    if (++r->cur_stamp == INT_MAX) {
        memset(r->stamp, 0, r->n * sizeof *r->stamp);
        r->cur_stamp = 1;
    }
    r->stack[sp++] = from;
    while (sp) {
        int v = r->stack[--sp];
        for (int e = r->succ_off[v]; e < r->succ_off[v + 1]; e++) {
            int s = r->succ[e];
            if (s == to) return true;
            if (r->topo_pos[s] < limit && r->stamp[s] != r->cur_stamp) {
                r->stamp[s] = r->cur_stamp;
                r->stack[sp++] = s;
            }
        }
    }
    return false;
}

bool pl_reach_query(const pl_reach *r, int from, int to)
{
    if (r->topo_pos[from] >= r->topo_pos[to]) return false;
    if (r->last) {
        int c = r->chain[from];
        if (c < 0) { /* a source: through its successors */
            for (int e = r->succ_off[from]; e < r->succ_off[from + 1]; e++)
                if (r->succ[e] == to || pl_reach_query(r, r->succ[e], to)) return true;
            return false;
        }
        return c < r->rowlen[to] && r->last[r->row[to] + c] >= r->pos[from];
    }
    return reach_dfs((struct pl_reach *)r, from, to);
}

int pl_reach_chains(const pl_reach *r)
{
    return r->last ? r->k : 0;
}

void pl_reach_free(pl_reach *r)
{
    if (!r) return;
    free(r->chain), free(r->pos), free(r->row), free(r->rowlen), free(r->last);
    free(r->topo_pos), free(r->stamp), free(r->stack);
    free(r);
}
