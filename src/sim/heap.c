/* heap.c: the binary min-heap behind the event queue, the ready lists and the transfer queues.
 * Keys are lexicographic (a, b, c, id), so every tie has a documented winner and runs are
 * deterministic. */
#include "sim_internal.h"

#include <stdlib.h>

void sim_heap_push(sim_heap *h, sim_item it)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        h->v = pl_realloc(h->v, (size_t)h->cap * sizeof *h->v);
    }
    int i = h->n++;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!sim_item_less(&it, &h->v[up])) break;
        h->v[i] = h->v[up];
        i = up;
    }
    h->v[i] = it;
}

sim_item sim_heap_pop(sim_heap *h)
{
    sim_item top = h->v[0], last = h->v[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && sim_item_less(&h->v[c + 1], &h->v[c])) c++;
        if (!sim_item_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0) h->v[i] = last;
    return top;
}

void sim_heap_free(sim_heap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
