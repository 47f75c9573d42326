/* single.c: the whole model on one device: the fastest one (by the sum of its op times: on
 * one device nothing overlaps and nothing is sent) among those that can run every op and
 * hold every weight plus the largest working set. */
#include "sched.h"

#include <math.h>

static double total_time(const pl_cost *k, int d)
{
    double s = 0;
    for (int v = 0; v < k->n_ops; v++)
        s += pl_cost_op_s(k, v, d);
    return s; /* INFINITY when some op cannot run on d */
}

static int refuse(const pl_cost *k, const pk_mem_track *m, pl_err *err)
{
    char buf[128];
    const char *name = pk_model_name(k, buf, sizeof buf);
    int big = 0, runnable = 0;
    for (int d = 0; d < k->n_devs; d++) {
        runnable += isfinite(total_time(k, d));
        if (m->cap[d] > m->cap[big]) big = d;
    }
    if (!runnable) return pl_err_set(err, "%s: no single device can run every op", name);
    double w = m->wsum[big], ws = m->held[big] + m->wsmax[big];
    char a[32], b[32], c[32];
    return pl_err_set(err,
                      "%s: needs %s of weights (+ %s of activations) on one device; the largest "
                      "has %s: no single device fits",
                      name, pl_fmt_bytes(w, a, sizeof a), pl_fmt_bytes(ws, b, sizeof b),
                      pl_fmt_bytes(m->cap[big], c, sizeof c));
}

int pl_place_single(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    (void)o;
    if (k->n_devs < 1) return pl_err_set(err, "single: the cluster has no devices");
    pk_mem_track m;
    pk_mem_init(&m, k);
    for (int d = 0; d < k->n_devs; d++)
        for (int v = 0; v < k->n_ops; v++)
            pk_mem_add(&m, v, d);
    int best = -1;
    for (int d = 0; d < k->n_devs; d++) {
        double t = total_time(k, d);
        if (!isfinite(t) || pk_mem_used(&m, d) > m.cap[d]) continue;
        if (best < 0 || t < total_time(k, best)) best = d;
    }
    int rc = best < 0 ? refuse(k, &m, err) : 0;
    for (int v = 0; v < k->n_ops && best >= 0; v++)
        out->dev[v] = best;
    pk_mem_free(&m);
    return rc;
}
