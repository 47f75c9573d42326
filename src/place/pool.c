/* pool.c: the pool of ranks as a placement search sees it (place.h, docs/dist.md "moirai and
 * drl").
 *
 * Why a layer over dist.h: a pool exchange needs every rank to make the same call at the same
 * point. dist.h already runs a call made inside another map's item here (compare's algorithms),
 * but a caller outside any item may also run on one rank alone (a trial worker's placement,
 * `multi`), so an algorithm uses the pool only when its caller says every rank is calling it
 * together (pl_place_opts.use_pool), and otherwise runs the same code as a pool of one. */
#include "placer/place.h"

#include <string.h>

pl_pool pl_pool_of(const pl_place_opts *o)
{
    bool on = o && o->use_pool && pl_dist_size() > 1;
    return (pl_pool){on, on ? pl_dist_rank() : 0, on ? pl_dist_size() : 1};
}

int pl_pool_map(const pl_pool *pool, int n_items, pl_dist_fn fn, void *out, size_t out_size,
                void *user)
{
    return pl_dist_map_or_here(pool->on, n_items, fn, out, out_size, user);
}

int pl_pool_sumf(const pl_pool *pool, float *v, int n)
{
    return pool->on ? pl_dist_sumf(v, n) : 1;
}

int pl_pool_bcast(const pl_pool *pool, void *buf, size_t bytes, int root)
{
    return pool->on ? pl_dist_bcast(buf, bytes, root) : 0;
}

/* What a plan holds beyond its placement: which parts of a schedule, and the edge count. */
typedef struct shape {
    int order, priority, xfer, n_edges;
} shape;

int pl_pool_share_plan(const pl_pool *pool, pl_plan *p, int root)
{
    if (!pool->on) return 0;
    bool mine = pool->rank == root;
    int n = p->n_ops, D = p->n_devs;
    shape s = {p->order != NULL, p->priority != NULL, p->xfer_priority != NULL, p->n_edges};
    if (pl_dist_bcast(&s, sizeof s, root) < 0) return -1;
    if (!mine) {
        pl_plan_clear_schedule(p);
        /* the arrays rank `root` sends, to be overwritten (+ 1: pl_malloc of 0 bytes) */
        if (s.order) {
            p->order = pl_malloc((size_t)n * sizeof *p->order);
            p->order_off = pl_malloc((size_t)(D + 1) * sizeof *p->order_off);
        }
        if (s.priority) p->priority = pl_malloc((size_t)n * sizeof *p->priority);
        if (s.xfer) {
            p->xfer_priority = pl_malloc((size_t)s.n_edges * sizeof *p->xfer_priority);
            p->n_edges = s.n_edges;
        }
    }
    int rc = pl_dist_bcast(p->dev, (size_t)n * sizeof *p->dev, root);
    if (rc == 0 && s.order) rc = pl_dist_bcast(p->order, (size_t)n * sizeof *p->order, root);
    if (rc == 0 && s.order)
        rc = pl_dist_bcast(p->order_off, (size_t)(D + 1) * sizeof *p->order_off, root);
    if (rc == 0 && s.priority)
        rc = pl_dist_bcast(p->priority, (size_t)n * sizeof *p->priority, root);
    if (rc == 0 && s.xfer)
        rc = pl_dist_bcast(p->xfer_priority, (size_t)s.n_edges * sizeof *p->xfer_priority, root);
    return rc;
}
