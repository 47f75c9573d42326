/* random.c: each op, in topological order, on a device drawn uniformly among those that can
 * run it and still have room; seeded by opts->seed, so a seed names a placement. When a draw
 * leaves some op with no room anywhere, the placement falls back to first fit (the densest
 * packing of the topological order) rather than failing: random is a baseline, and a
 * baseline that refuses what others place is no baseline. */
#include "sched.h"

#include <math.h>

static int draw(const pl_cost *k, pk_mem_track *m, uint64_t *rng, int *dev)
{
    int *ok = pl_malloc((k->n_devs + 1) * sizeof *ok), rc = 0;
    for (int i = 0; i < k->n_ops && rc == 0; i++) {
        int v = k->g->topo[i], n = 0;
        for (int d = 0; d < k->n_devs; d++)
            if (isfinite(pl_cost_op_s(k, v, d)) && pk_mem_fits(m, v, d)) ok[n++] = d;
        if (!n)
            rc = -1;
        else
            pk_mem_add(m, v, dev[v] = ok[pl_rng_next(rng) % (uint64_t)n]);
    }
    free(ok);
    return rc;
}

int pl_place_random(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    if (pk_precheck(k, err) < 0) return -1;
    uint64_t rng = o ? o->seed : 0;
    pk_mem_track m;
    pk_mem_init(&m, k);
    int rc = draw(k, &m, &rng, out->dev);
    pk_mem_free(&m);
    return rc == 0 ? 0 : pk_first_fit(k, "random", out->dev, err);
}
