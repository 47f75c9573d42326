/* expert.c: the hand-made baseline of the placement papers: cut the topological order into k
 * contiguous stages of equal cost and give stage j to the j-th device.
 *
 * Choices where "an expert" is vague: the k devices are the k fastest (by the sum of op times
 * on them), used in cluster order (neighbours in a file usually share the fastest links);
 * a stage's cost is measured on its own device, each stage aiming at the remaining cost
 * over the remaining stages, cut at the op that lands nearest that target; a stage ends
 * early when its device is full. When the last stage then cannot hold the rest (weights
 * usually grow towards the end of a network while compute does not), the split packs each
 * device as full as memory allows instead. As an expert would, it tries every k from 1 to the
 * number of devices, runs each split through the simulator, and keeps the fastest that fits in
 * memory (ties to fewer devices): for one request a contiguous split only pays off through memory
 * or faster devices, and the simulator is the judge of that. */
#include "sched.h"

#include <math.h>
#include <string.h>

typedef struct expert {
    const pl_cost *k;
    pk_mem_track m;
    int *by_speed;  /* devices, fastest first */
    double *suffix; /* [d * (n + 1) + i]: time on d of the ops at topological positions >= i */
} expert;

static const double *speed_ctx;

static int faster(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (speed_ctx[x] != speed_ctx[y]) return speed_ctx[x] < speed_ctx[y] ? -1 : 1;
    return x - y;
}

static void expert_init(expert *X, const pl_cost *k)
{
    int n = k->n_ops, D = k->n_devs;
    X->k = k;
    pk_mem_init(&X->m, k);
    X->suffix = pl_malloc((size_t)D * (n + 1) * sizeof *X->suffix);
    double *total = pl_malloc(D * sizeof *total);
    for (int d = 0; d < D; d++) {
        double *s = &X->suffix[(size_t)d * (n + 1)];
        s[n] = 0;
        for (int i = n - 1; i >= 0; i--)
            s[i] = s[i + 1] + pl_cost_op_s(k, k->g->topo[i], d);
        total[d] = s[0];
    }
    X->by_speed = pl_malloc(D * sizeof *X->by_speed);
    for (int d = 0; d < D; d++)
        X->by_speed[d] = d;
    speed_ctx = total; /* qsort has no context argument in C11 */
    pl_sort(X->by_speed, D, sizeof *X->by_speed, faster);
    free(total);
}

static void expert_free(expert *X)
{
    pk_mem_free(&X->m);
    free(X->by_speed), free(X->suffix);
}

/* Fills one stage on device e from topological position *i; returns -1 when the last stage
 * cannot take the rest. */
static int fill_stage(expert *X, int e, double target, bool last, int *i, int *dev)
{
    const pl_cost *k = X->k;
    double acc = 0;
    for (; *i < k->n_ops; (*i)++) {
        int v = k->g->topo[*i];
        double t = pl_cost_op_s(k, v, e);
        if (!last && acc > 0 && acc + t / 2 > target) return 0;
        if (!isfinite(t) || !pk_mem_fits(&X->m, v, e)) return last ? -1 : 0;
        pk_mem_add(&X->m, v, dev[v] = e);
        acc += t;
    }
    return 0;
}

/* Splits the topological order over devs[0..kk) (in cluster order), in stages of equal cost,
 * or (packed) each device filled as far as memory allows; -1 when it does not fit. */
static int split(expert *X, const int *devs, int kk, bool packed, int *dev)
{
    int n = X->k->n_ops, i = 0;
    pk_mem_reset(&X->m);
    for (int j = 0; j < kk; j++) {
        double remaining = X->suffix[(size_t)devs[j] * (n + 1) + i];
        double target = packed ? INFINITY : remaining / (kk - j);
        if (fill_stage(X, devs[j], target, j == kk - 1, &i, dev) < 0) return -1;
    }
    return i == n ? 0 : -1;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Simulated makespan of a placement, +INFINITY when it cannot run or exceeds memory. */
static double judge(const pl_cost *k, const pl_place_opts *o, const int *dev)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    memcpy(p->dev, dev, k->n_ops * sizeof *dev);
    pl_sim_opts so = {.contention = o->contention};
    double ms = pk_sim_makespan(k, p, &so, true);
    pl_plan_free(p);
    return ms;
}

int pl_place_expert(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    pl_place_opts def = {0};
    if (!o) o = &def;
    if (pk_precheck(k, err) < 0) return -1;
    expert X;
    expert_init(&X, k);
    int D = k->n_devs, *devs = pl_malloc(D * sizeof *devs);
    int *dev = pl_malloc((k->n_ops + 1) * sizeof *dev), found = 0;
    double best = INFINITY;
    for (int kk = 1; kk <= D; kk++) {
        memcpy(devs, X.by_speed, kk * sizeof *devs);
        pl_sort(devs, kk, sizeof *devs, cmp_int);
        if (split(&X, devs, kk, false, dev) < 0 && split(&X, devs, kk, true, dev) < 0) continue;
        double ms = judge(k, o, dev);
        if (!found || ms < best) memcpy(out->dev, dev, k->n_ops * sizeof *dev), best = ms;
        found = 1;
    }
    free(devs), free(dev);
    expert_free(&X);
    if (found) return 0;
    char buf[128];
    const char *name = pk_model_name(k, buf, sizeof buf);
    return pl_err_set(err,
                      "%s: expert: no contiguous split of the topological order over up to "
                      "%d devices fits in memory",
                      name, D);
}
