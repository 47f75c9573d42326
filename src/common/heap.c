/* heap.c: the binary min-heap of common.h (the simulator's event queue, the schedulers'
 * ready lists). */
#include "placer/common.h"

#include <stdlib.h>

void pl_heap_push(pl_heap *h, pl_heap_item it)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 16;
        h->v = pl_realloc(h->v, (size_t)h->cap * sizeof *h->v);
    }
    int i = h->n++;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (!pl_heap_less(&it, &h->v[up])) break;
        h->v[i] = h->v[up];
        i = up;
    }
    h->v[i] = it;
}

pl_heap_item pl_heap_pop(pl_heap *h)
{
    PL_ASSERT(h->n > 0);
    pl_heap_item top = h->v[0], last = h->v[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && pl_heap_less(&h->v[c + 1], &h->v[c])) c++;
        if (!pl_heap_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n > 0) h->v[i] = last;
    return top;
}

void pl_heap_free(pl_heap *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}
