/* reach.c: exact reachability queries on a DAG.
 *
 * The MILP needs "is j a successor of i?" for every pair of ops that could share a device, so
 * a query must be O(1) and the structure must fit 50,000 ops. A full bitset closure needs
 * n²/8 bytes (312 MB at 50,000 ops); instead we cover the DAG with chains (paths) and store,
 * for each node v and chain c, the smallest position in c that v reaches. Then
 *     reach(i, j)  <=>  first[i][chain(j)] <= pos(j)
 * because a chain is a path: reaching an earlier node of j's chain means reaching j. DNN
 * graphs are narrow (few ops run side by side), so the chain count k is small and the table
 * is n·k int32. When n·k would exceed MAX_TABLE_BYTES we answer by a DFS pruned with the
 * topological position instead: still exact, slower per query. */
#include "placer/graph.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TABLE_BYTES ((size_t)512 << 20)

struct pl_reach {
    int n, k;
    int *chain, *pos;          /* chain of each node and its position in it */
    int32_t *first;            /* n × k, row-major; INT32_MAX = chain not reached */
    /* DFS mode */
    const int *succ_off, *succ;
    int *topo_pos;
    int *stamp, cur_stamp, *stack;
};

/* Greedy path cover in topological order: start a chain at the first unassigned node and
 * extend it through the unassigned successor that comes earliest in the order. */
static int cover_with_chains(struct pl_reach *r, const int *succ_off, const int *succ,
                             const int *topo, const int *topo_pos)
{
    int k = 0;
    for (int i = 0; i < r->n; i++) r->chain[i] = -1;
    for (int t = 0; t < r->n; t++) {
        int v = topo[t];
        if (r->chain[v] >= 0) continue;
        int p = 0;
        for (;;) {
            r->chain[v] = k;
            r->pos[v] = p++;
            int next = -1;
            for (int e = succ_off[v]; e < succ_off[v + 1]; e++) {
                int s = succ[e];
                if (r->chain[s] < 0 && (next < 0 || topo_pos[s] < topo_pos[next])) next = s;
            }
            if (next < 0) break;
            v = next;
        }
        k++;
    }
    return k;
}

static void fill_table(struct pl_reach *r, const int *succ_off, const int *succ, const int *topo)
{
    size_t k = r->k;
    for (int t = r->n - 1; t >= 0; t--) {
        int v = topo[t];
        int32_t *row = r->first + (size_t)v * k;
        for (size_t c = 0; c < k; c++) row[c] = INT32_MAX;
        for (int e = succ_off[v]; e < succ_off[v + 1]; e++) {
            int s = succ[e];
            const int32_t *srow = r->first + (size_t)s * k;
            for (size_t c = 0; c < k; c++)
                if (srow[c] < row[c]) row[c] = srow[c];
            if (r->pos[s] < row[r->chain[s]]) row[r->chain[s]] = r->pos[s];
        }
    }
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
    r->chain = pl_malloc((n ? n : 1) * sizeof *r->chain);
    r->pos = pl_malloc((n ? n : 1) * sizeof *r->pos);
    r->topo_pos = pl_malloc((n ? n : 1) * sizeof *r->topo_pos);
    for (int t = 0; t < n; t++) r->topo_pos[topo[t]] = t;
    int k = cover_with_chains(r, succ_off, succ, topo, r->topo_pos);
    if (max_table_bytes > 0 && (size_t)n * k * sizeof(int32_t) <= max_table_bytes) {
        r->k = k;
        size_t cells = (size_t)n * k;
        r->first = pl_malloc((cells > 0 ? cells : 1) * sizeof *r->first);
        fill_table(r, succ_off, succ, topo);
    } else {
        r->succ_off = succ_off;
        r->succ = succ;
        r->stamp = pl_calloc(n, sizeof *r->stamp);
        r->stack = pl_malloc(n * sizeof *r->stack);
    }
    return r;
}

pl_reach *pl_graph_reach(const pl_graph *g)
{
    return pl_reach_build(g->n_ops, g->succ_off, g->succ, g->topo);
}

/* DFS mode keeps pointers to the caller's CSR arrays: they must outlive the pl_reach. */
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
    if (r->first) return r->first[(size_t)from * r->k + r->chain[to]] <= r->pos[to];
    return reach_dfs((struct pl_reach *)r, from, to);
}

int pl_reach_chains(const pl_reach *r) { return r->first ? r->k : 0; }

void pl_reach_free(pl_reach *r)
{
    if (!r) return;
    free(r->chain), free(r->pos), free(r->first), free(r->topo_pos);
    free(r->stamp), free(r->stack);
    free(r);
}
