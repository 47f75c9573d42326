/* baselines.c: TAG's baselines as strategies on the same compiler and simulator, the
 * placers of one model on the training graph, and the OOM fallback (docs/train.md,
 * "Baselines"). */
#include "placer/train.h"
#include "train_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double fp32_speed(const pl_device *d)
{
    return d->peak_flops_per_s[PL_PREC_FP32] > 0 ? d->peak_flops_per_s[PL_PREC_FP32] : 1;
}

/* order[0..n) sorted by key[order[i]], stably (insertion sort: a few hundred parameters). */
static void sort_by(int *order, int n, const double *key)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && key[order[j]] < key[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1], order[j - 1] = tmp;
        }
}

/* The parameters in the order backpropagation makes their gradients: their forward op's
 * (the model's order) last first, ties in parameter order; a gradient whose producer
 * differentiates no forward op by its producer's topological position, after them. */
static int *grad_order(const pl_train_ctx *x)
{
    const pl_train_graph *t = x->t;
    int n = t->n_params, *order = pl_malloc((size_t)n * sizeof *order + 1);
    double *key = pl_malloc((size_t)n * sizeof *key + 1);
    for (int p = 0; p < n; p++) {
        int u = t->g->tensors[t->grad_tensor[p]].producer;
        int f = u >= 0 ? t->fwd_of[u] : -1;
        order[p] = p;
        key[p] = f >= 0 ? t->n_fwd - 1 - f : t->n_fwd + (u >= 0 ? t->g->topo_pos[u] : t->g->n_ops);
    }
    sort_by(order, n, key);
    free(key);
    return order;
}

static pl_train_strategy *dp_groups(const pl_train_ctx *x, bool proportional, bool overlap)
{
    pl_train_strategy *s = pl_train_strategy_new(x->og.n, x->dg.n);
    memset(s->P, 1, (size_t)x->og.n * x->dg.n);
    for (int i = 0; i < x->og.n; i++)
        s->O[i] = PL_OPT_ALLREDUCE;
    s->overlap = overlap;
    if (proportional) {
        s->n_devs = x->c->n_devs;
        s->batch_share = pl_malloc((size_t)s->n_devs * sizeof *s->batch_share);
        for (int d = 0; d < s->n_devs; d++)
            s->batch_share[d] = fp32_speed(&x->c->devs[d]);
    }
    return s;
}

pl_train_strategy *pl_train_dp(const pl_train_ctx *x, bool proportional, bool overlap)
{
    pl_train_strategy *s = dp_groups(x, proportional, overlap);
    if (overlap) return s;
    /* TensorFlow's in-graph replication: one AllReduce node per gradient, launched on NCCL's
     * one stream in the order the gradients are made */
    int *order = grad_order(x);
    s->n_bucket = x->t->n_params;
    s->bucket = pl_malloc(2 * (size_t)s->n_bucket * sizeof *s->bucket + 1);
    for (int k = 0; k < s->n_bucket; k++)
        s->bucket[order[k]] = s->bucket[s->n_bucket + order[k]] = k;
    free(order);
    return s;
}

pl_train_strategy *pl_train_dp_sync(const pl_train_ctx *x)
{
    return dp_groups(x, false, false);
}

pl_train_strategy *pl_train_horovod(const pl_train_ctx *x, const pl_train_horovod_opts *o,
                                    pl_err *err)
{
    double cap = o && o->fusion_bytes > 0 ? o->fusion_bytes : 64.0 * 1024 * 1024;
    double cycle = o && o->cycle_s > 0 ? o->cycle_s : 5e-3;
    pl_train_strategy *s = pl_train_dp(x, false, false);
    int n = x->t->n_params, *order = grad_order(x);
    double *made = pl_malloc((size_t)n * sizeof *made + 1);
    if (tr_grad_times(x, s, made, err) < 0) {
        free(order), free(made);
        pl_train_strategy_free(s);
        return NULL;
    }
    sort_by(order, n, made); /* the order Horovod's thread sees them in */
    /* a gradient made in [k cycle, (k+1) cycle) is fused at the cycle's end; a full buffer
     * starts the next AllReduce of the same cycle */
    int b = -1, first = 0;
    double fill = 0, at = -1;
    for (int i = 0; i < n; i++) {
        int p = order[i];
        int64_t tb = x->t->g->tensors[x->t->grad_tensor[p]].bytes;
        double bytes = tb > 0 ? (double)tb : 0;
        double k = floor(fmax(made[p], 0) / cycle);
        if (b < 0 || k != at) first = b + 1;
        if (b < 0 || k != at || fill + bytes > cap) b++, fill = 0, at = k;
        s->bucket[p] = b, s->bucket[n + p] = first, fill += bytes;
    }
    free(order), free(made);
    return s;
}

/* The fastest device group: the most fp32 FLOP/s summed over its devices. */
static int fastest_group(const pl_train_ctx *x)
{
    int best = 0;
    double bs = -1;
    for (int j = 0; j < x->dg.n; j++) {
        double sp = 0;
        for (int k = x->dg.off[j]; k < x->dg.off[j + 1]; k++)
            sp += fp32_speed(&x->c->devs[x->dg.dev[k]]);
        if (sp > bs) bs = sp, best = j;
    }
    return best;
}

/* Iteration time of s, INFINITY when it does not fit; -1 on failure. */
static int time_of(const pl_train_ctx *x, const pl_train_strategy *s, double *t, pl_err *err)
{
    pl_train_eval e;
    if (pl_train_evaluate(x, s, &e, err) < 0) return -1;
    *t = e.oom ? INFINITY : e.iteration_s;
    pl_train_eval_free(&e);
    return 0;
}

/* Alternative 0: every device with a PS (the row stays all devices); 1: model parallel on
 * the fastest device group, *one. */
static void heterog_alt(pl_train_strategy *s, int group, int a, const void *one)
{
    unsigned char *row = s->P + (size_t)group * s->n_dgroups;
    if (a == 0)
        memset(row, 1, (size_t)s->n_dgroups), s->O[group] = PL_OPT_PS;
    else
        memset(row, 0, (size_t)s->n_dgroups), row[*(const int *)one] = 1, s->O[group] = PL_OPT_MP;
}

/* One pass of tr_greedy from data parallelism (overlapped) trying heterog_alt, a change kept
 * on any gain (eps 0). With x->dist its simulations are spread over the ranks, with the same
 * answer. */
pl_train_strategy *pl_train_heterog(const pl_train_ctx *x, pl_err *err)
{
    pl_train_strategy *s = pl_train_dp(x, false, true);
    int one = fastest_group(x);
    double cur;
    if (time_of(x, s, &cur, err) < 0 ||
        tr_greedy(x, &s, &cur, 1, 2, heterog_alt, &one, 0, err) < 0) {
        pl_train_strategy_free(s);
        return NULL;
    }
    return s;
}

int pl_train_placer(const pl_train_ctx *x, const char *algo, const pl_place_opts *po,
                    pl_train_eval *e, pl_plan **plan, pl_err *err)
{
    if (plan) *plan = NULL;
    memset(e, 0, sizeof *e);
    e->oom_dev = -1;
    const pl_algo *a = pl_algo_find(algo);
    if (!a) return pl_err_set(err, "train: unknown placer '%s'", algo);
    pl_plan *p = pl_plan_new(x->k->n_ops, x->k->n_devs);
    pl_place_opts o = po ? *po : (pl_place_opts){0};
    o.single_if_faster = false;
    pl_sim_result r;
    int rc = pl_place(a, x->k, &o, p, err);
    if (rc == 0) rc = pl_simulate(x->k, p, &(pl_sim_opts){.contention = o.contention}, &r, err);
    if (rc == 0) {
        e->iteration_s = r.makespan_s, e->oom = r.oom, e->oom_dev = r.oom_dev;
        e->oom_excess_bytes = r.oom_excess_bytes, e->n_devs = r.n_devs;
        e->peak_mem_bytes = r.peak_mem_bytes, r.peak_mem_bytes = NULL;
        e->compiled_ops = x->k->n_ops;
        e->band = pl_cost_plan_band(x->k, p->dev, &e->basis);
        pl_sim_result_free(&r);
    }
    if (rc == 0 && plan)
        *plan = p;
    else
        pl_plan_free(p);
    return rc;
}

/* The next op group to make model-parallel: the most parameter bytes, then time; -1 if none. */
static int next_to_split(const pl_train_ctx *x, const pl_train_strategy *s)
{
    int best = -1;
    for (int i = 0; i < x->og.n; i++) {
        if (s->O[i] == PL_OPT_MP) continue;
        if (best < 0 || x->og.param_bytes[i] > x->og.param_bytes[best] ||
            (x->og.param_bytes[i] == x->og.param_bytes[best] &&
             x->og.time_s[i] > x->og.time_s[best]))
            best = i;
    }
    return best;
}

int pl_train_fit(const pl_train_ctx *x, pl_train_strategy *s, pl_train_eval *e, pl_err *err)
{
    for (;;) {
        if (pl_train_evaluate(x, s, e, err) < 0) return -1;
        if (!e->oom) return 0;
        int i = next_to_split(x, s);
        if (i < 0) {
            char a[32], b[32];
            const pl_device *d = &x->c->devs[e->oom_dev];
            pl_err_set(err,
                       "train: the model does not fit even split over every GPU: device '%s' "
                       "needs %s more than its %s",
                       d->name, pl_fmt_bytes(e->oom_excess_bytes, a, sizeof a),
                       pl_fmt_bytes(d->memory_bytes, b, sizeof b));
            pl_train_eval_free(e);
            return -1;
        }
        memset(s->P + (size_t)i * x->dg.n, 1, x->dg.n);
        s->O[i] = PL_OPT_MP;
        if (s->sfb) memset(s->sfb, 0, (size_t)s->n_sfb); /* duplication costs memory too */
        pl_train_eval_free(e);
    }
}
