/* uf.c: the union-find (common.h) under every grouping of ops: coarsening's passes and Talos's
 * packs (src/coarsen), Talos's groups of models (src/multi), a split's merged stages
 * (src/split). */
#include "placer/common.h"

#include <stdlib.h>

void pl_uf_init(pl_uf *u, int n)
{
    u->n = u->n_sets = n;
    u->up = pl_malloc((size_t)n * sizeof *u->up);
    u->size = pl_malloc((size_t)n * sizeof *u->size);
    for (int i = 0; i < n; i++)
        u->up[i] = i, u->size[i] = 1;
}

int pl_uf_find(pl_uf *u, int v)
{
    while (u->up[v] != v) /* path halving: every other step points to its grandparent */
        v = u->up[v] = u->up[u->up[v]];
    return v;
}

int pl_uf_join(pl_uf *u, int keep, int other)
{
    int a = pl_uf_find(u, keep), b = pl_uf_find(u, other);
    if (a == b) return a;
    u->up[b] = a;
    u->size[a] += u->size[b];
    u->n_sets--;
    return a;
}

int pl_uf_union(pl_uf *u, int a, int b)
{
    a = pl_uf_find(u, a), b = pl_uf_find(u, b);
    return u->size[a] < u->size[b] ? pl_uf_join(u, b, a) : pl_uf_join(u, a, b);
}

void pl_uf_free(pl_uf *u)
{
    free(u->up), free(u->size);
    u->up = u->size = NULL;
    u->n = u->n_sets = 0;
}
