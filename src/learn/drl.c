/* drl.c: AutoDeep's DRL placer (seeds/000 §IV-C; docs/learn.md, "The DRL placer").
 *
 * An attentional sequence-to-sequence policy places the model's op groups one after the
 * other: an LSTM encoder reads the groups in topological order (each one's type, embedded, and
 * its cost, size and position in the graph); an LSTM decoder, attending over the encoder's
 * states, emits a device per group. Episodes sample placements from the policy, the simulator
 * scores them (the makespan of the plan on the model's own graph), and REINFORCE with a moving
 * average baseline trains the policy with Adam: loss = -(R - b) sum log pi(a_k), R = -T / T0
 * (T0 the first episode's makespan), -2 for a placement that does not fit in memory. The best
 * placement seen is returned, the single-device placements counted among those seen (the
 * paper starts from a single GPU; a policy still learning should not return worse). Large graphs
 * are coarsened first (fusion, colocation and chain contraction to at most MAX_GROUPS groups,
 * pl_coarsen), which is how the paper's sequences stay a few hundred long.
 *
 * Measured episodes (pl_place_opts.measure, `--measured`; docs/learn.md): a placement that fits
 * in memory (simulated) is scored by the hook instead, as AutoDeep scores by running it; the
 * first failure to measure ends the search with its error, since a search scored partly by
 * the simulator would be neither. The budget: o->iterations episodes exactly, or the time
 * limit, whichever ends first. */
#include "placer/coarsen.h"
#include "placer/learn.h"
#include "placer/place.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 64
#define TYPE_BUCKETS 64
#define EMBED 8
#define NUMERIC 6
#define HID 32
#define ATT 32
#define BATCH 4
#define EPISODES 400 /* default budget, or time_limit_s */
#define DEFAULT_TIME_S 30

typedef struct drl {
    const pl_cost *k;
    pl_coarsening *cz;
    int n, D;
    int *type;      /* per group: its type bucket */
    float *numeric; /* [n * NUMERIC] */
    float *mask;    /* [n * D]: 0, or -1e9 where a member cannot run */
    pl_params s;
    pl_param *embed;
    pl_lstm enc, dec;
    pl_attn att;
    pl_dense out;
    pl_tape *t;
    uint64_t rng;
} drl;

/* ---- features ---- */

static unsigned bucket(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (unsigned)(h % TYPE_BUCKETS);
}

/* Per group: the log of its FLOPs, of its output bytes and of its mean time, its position in
 * topological order, and its in- and out-degree (AutoDeep's type, output shape, adjacency). */
static void features(drl *x)
{
    const pl_graph *cg = x->cz->coarse;
    const pl_cost *k = x->k;
    x->type = pl_malloc((size_t)x->n * sizeof *x->type + 1);
    x->numeric = pl_calloc((size_t)x->n * NUMERIC + 1, sizeof *x->numeric);
    x->mask = pl_calloc((size_t)x->n * x->D + 1, sizeof *x->mask);
    for (int q = 0; q < x->n; q++) {
        double flops = 0, out = 0, time = 0;
        for (int j = x->cz->member_off[q]; j < x->cz->member_off[q + 1]; j++) {
            int v = x->cz->members[j];
            flops += k->g->ops[v].flops, out += k->out_bytes[v];
            for (int d = 0; d < x->D; d++) {
                double tv = pl_cost_op_s(k, v, d);
                if (!isfinite(tv))
                    x->mask[(size_t)q * x->D + d] = -1e9f;
                else
                    time += tv / x->D;
            }
        }
        x->type[q] = (int)bucket(cg->ops[q].type);
        float *f = &x->numeric[(size_t)q * NUMERIC];
        f[0] = (float)log1p(flops / 1e6), f[1] = (float)log1p(out / 1e3);
        f[2] = (float)log1p(time * 1e6), f[3] = (float)cg->topo_pos[q] / (float)x->n;
        f[4] = (float)(cg->pred_off[q + 1] - cg->pred_off[q]) / 4;
        f[5] = (float)(cg->succ_off[q + 1] - cg->succ_off[q]) / 4;
    }
}

static void model_init(drl *x, unsigned seed)
{
    x->rng = seed ? seed : 1;
    pl_params_init(&x->s);
    x->embed = pl_params_add(&x->s, "drl.type_embedding", TYPE_BUCKETS, EMBED);
    pl_param_xavier(x->embed, &x->rng);
    pl_lstm_init(&x->enc, &x->s, "drl.encoder", EMBED + NUMERIC, HID, &x->rng);
    pl_lstm_init(&x->dec, &x->s, "drl.decoder", x->D + EMBED + NUMERIC, HID, &x->rng);
    pl_attn_init(&x->att, &x->s, "drl.attention", HID, HID, ATT, &x->rng);
    pl_dense_init(&x->out, &x->s, "drl.out", 2 * HID, x->D, &x->rng);
    x->t = pl_tape_new();
}

/* ---- one episode ---- */

static int sample(drl *x, const float *p, int D)
{
    double u = pl_rng_uniform(&x->rng), at = 0;
    for (int d = 0; d < D; d++)
        if ((at += p[d]) > u) return d;
    return D - 1;
}

/* Records the policy over the groups in topological order, sampling a device for each into
 * dev[]; returns the node of the summed log-probabilities. */
static int rollout(drl *x, int *dev)
{
    pl_tape *t = x->t;
    const pl_graph *cg = x->cz->coarse;
    int n = x->n, D = x->D;
    int *xs = pl_malloc((size_t)n * sizeof *xs + 1), *hs = pl_malloc((size_t)n * sizeof *hs + 1);
    int h = pl_t_input(t, 1, HID, NULL), c = h, E = pl_t_param(t, x->embed);
    for (int i = 0; i < n; i++) {
        int q = cg->topo[i];
        int emb = pl_t_gather(t, E, 1, &x->type[q]);
        int num = pl_t_input(t, 1, NUMERIC, &x->numeric[(size_t)q * NUMERIC]);
        xs[i] = pl_t_concat_cols(t, 2, (int[]){emb, num});
        pl_lstm_step(t, &x->enc, xs[i], h, c, &h, &c);
        hs[i] = h;
    }
    int H = pl_t_concat_rows(t, n, hs), keys = pl_attn_keys(t, &x->att, H);
    int *lps = pl_malloc((size_t)n * sizeof *lps + 1);
    float *prev = pl_calloc((size_t)D + 1, sizeof *prev);
    int s = h, sc = c;
    for (int i = 0; i < n; i++) {
        int q = cg->topo[i];
        int in = pl_t_concat_cols(t, 2, (int[]){pl_t_input(t, 1, D, prev), xs[i]});
        pl_lstm_step(t, &x->dec, in, s, sc, &s, &sc);
        int ctx = pl_attn_apply(t, &x->att, keys, H, s, NULL, NULL);
        int logits = pl_dense_apply(t, &x->out, pl_t_concat_cols(t, 2, (int[]){s, ctx}));
        logits = pl_t_add(t, logits, pl_t_input(t, 1, D, &x->mask[(size_t)q * D]));
        int lsm = pl_t_log_softmax(t, logits);
        float *p = pl_malloc((size_t)D * sizeof *p);
        const float *l = pl_t_value(t, lsm);
        for (int d = 0; d < D; d++)
            p[d] = expf(l[d]);
        int a = sample(x, p, D);
        free(p);
        dev[q] = a;
        lps[i] = pl_t_pick(t, lsm, &a);
        memset(prev, 0, (size_t)D * sizeof *prev), prev[a] = 1;
    }
    int total = pl_t_sum(t, pl_t_concat_rows(t, n, lps));
    free(xs), free(hs), free(lps), free(prev);
    return total;
}

/* The score of the groups' placement: its simulated makespan, or, with o->measure, its
 * measured latency; INFINITY when it does not fit (simulated) or cannot run; -1 (err set)
 * when measuring failed. */
static double score(const drl *x, const pl_place_opts *o, const int *gdev, int *opdev, pl_err *err)
{
    pl_coarsen_expand_placement(x->cz, gdev, opdev);
    pl_plan *p = pl_plan_new(x->k->n_ops, x->k->n_devs);
    memcpy(p->dev, opdev, (size_t)x->k->n_ops * sizeof *opdev);
    p->contention = o->contention;
    pl_sim_result r;
    pl_err e = {""};
    double t = INFINITY;
    if (pl_simulate(x->k, p, &(pl_sim_opts){.contention = o->contention}, &r, &e) == 0) {
        if (!r.oom) t = r.makespan_s;
        pl_sim_result_free(&r);
    }
    if (isfinite(t) && o->measure) {
        t = o->measure(p, o->measure_user, err);
        if (!(t >= 0)) t = -1; /* NaN too: a failure */
    }
    pl_plan_free(p);
    return t;
}

/* ---- training ---- */

/* The search's state: the budget, the best placement seen and its score. */
typedef struct run {
    const pl_place_opts *o;
    double limit_s, start, best_t;
    int max_ep, ep;
    int *best; /* op -> device of the best placement */
} run;

static bool budget_left(const run *u)
{
    return u->ep < u->max_ep && pl_now() - u->start < u->limit_s;
}

static void report(const run *u)
{
    if (u->o->progress)
        u->o->progress("drl", u->ep, u->o->iterations > 0 ? u->max_ep : 0, u->best_t,
                       u->o->progress_user);
}

/* Scores a placement and keeps it when it is the best so far; -1 (err set) on a failure to
 * measure it. */
static int try_placement(const drl *x, run *u, const int *gdev, int *opdev, double *t, pl_err *err)
{
    *t = score(x, u->o, gdev, opdev, err);
    if (*t < 0) return -1;
    if (*t < u->best_t) u->best_t = *t, memcpy(u->best, opdev, (size_t)x->k->n_ops * sizeof *opdev);
    return 0;
}

/* Episodes in batches of BATCH, an Adam step after each (a last, partial batch too, so that
 * an episode budget is met exactly). */
static int episodes(drl *x, run *u, int *gdev, int *opdev, pl_err *err)
{
    double t0 = 0, baseline = 0;
    pl_adam adam = pl_adam_default(0.01f);
    while (budget_left(u)) {
        pl_params_zero_grad(&x->s);
        for (int b = 0; b < BATCH && budget_left(u); b++, u->ep++) {
            pl_tape_reset(x->t);
            int lp = rollout(x, gdev);
            double t;
            if (try_placement(x, u, gdev, opdev, &t, err) < 0)
                return pl_err_prefix(err, "drl: episode %d", u->ep + 1);
            if (t0 <= 0 && isfinite(t)) t0 = t;
            double r = isfinite(t) ? -t / t0 : -2;
            if (u->ep == 0) baseline = r;
            int loss = pl_t_scale(x->t, lp, -(float)(r - baseline));
            pl_tape_backward(x->t, loss);
            baseline = 0.9 * baseline + 0.1 * r;
        }
        pl_params_clip(&x->s, 1.0);
        pl_adam_step(&adam, &x->s);
        report(u);
    }
    return 0;
}

static int train(drl *x, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    int n = x->n, n_ops = x->k->n_ops;
    int *gdev = pl_malloc((size_t)n * sizeof *gdev + 1);
    int *opdev = pl_malloc((size_t)n_ops * sizeof *opdev + 1);
    /* the budget: episodes (o->iterations), time, or both; neither: EPISODES episodes (and
     * DEFAULT_TIME_S at most) */
    run u = {.o = o, .start = pl_now(), .best_t = INFINITY};
    u.best = pl_malloc((size_t)n_ops * sizeof *u.best + 1);
    u.limit_s = o->time_limit_s > 0 ? o->time_limit_s
                : o->iterations > 0 ? INFINITY
                                    : DEFAULT_TIME_S;
    u.max_ep = o->iterations > 0 ? o->iterations : o->time_limit_s > 0 ? INT_MAX : EPISODES;
    int rc = 0;
    double t;
    for (int d = 0; d < x->D && rc == 0; d++) { /* every single-device placement is a candidate */
        for (int q = 0; q < n; q++)
            gdev[q] = d;
        if ((rc = try_placement(x, &u, gdev, opdev, &t, err)) < 0)
            pl_err_prefix(err, "drl: everything on %s", x->k->c->devs[d].name);
    }
    if (rc == 0) rc = episodes(x, &u, gdev, opdev, err);
    if (rc == 0 && isfinite(u.best_t)) {
        memcpy(out->dev, u.best, (size_t)n_ops * sizeof *u.best);
        if (o->measure) out->measured_s = u.best_t;
    } else if (rc == 0)
        rc = pl_err_set(err, "drl: no placement sampled in %d episodes fits in memory", u.ep);
    free(gdev), free(opdev), free(u.best);
    return rc;
}

static int place_drl(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    static const pl_place_opts dflt = {0};
    if (!o) o = &dflt;
    drl x = {.k = k, .D = k->n_devs};
    pl_coarsen_opts co = {.chain = true, .target_ops = MAX_GROUPS};
    if (pl_coarsen(k->g, &co, &x.cz, err) < 0) return -1;
    x.n = x.cz->coarse->n_ops;
    features(&x);
    model_init(&x, o->seed);
    int rc = train(&x, o, out, err);
    pl_tape_free(x.t);
    pl_params_free(&x.s);
    free(x.type), free(x.numeric), free(x.mask);
    pl_coarsening_free(x.cz);
    return rc;
}

int pl_learn_register(pl_err *err)
{
    static const pl_algo a = {
        "drl", place_drl,
        "AutoDeep's DRL placer: a seq2seq policy (LSTM encoder, attention) "
        "trained by REINFORCE on simulated (or, --measured, measured) latencies; "
        "400 episodes, or --episodes / --time-limit",
        true};
    return pl_algo_find("drl") ? 0 : pl_algo_register(&a, err);
}
