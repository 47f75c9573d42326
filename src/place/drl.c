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
    pl_tape **tapes; /* one per episode of a batch that this rank runs */
    int n_tapes;
    uint64_t rng; /* where the episodes' stream starts: episode e draws from x->n * e on */
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
    x->type = pl_malloc((size_t)x->n * sizeof *x->type);
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
}

/* ---- one episode ---- */

static int sample(uint64_t *rng, const float *p, int D)
{
    double u = pl_rng_uniform(rng), at = 0;
    for (int d = 0; d < D; d++)
        if ((at += p[d]) > u) return d;
    return D - 1;
}

/* Records the policy over the groups in topological order on t, sampling a device for each
 * into dev[] (one draw from *rng per group); returns the node of the summed
 * log-probabilities. */
static int rollout(const drl *x, pl_tape *t, uint64_t *rng, int *dev)
{
    const pl_graph *cg = x->cz->coarse;
    int n = x->n, D = x->D;
    int *xs = pl_malloc((size_t)n * sizeof *xs), *hs = pl_malloc((size_t)n * sizeof *hs);
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
    int *lps = pl_malloc((size_t)n * sizeof *lps);
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
        int a = sample(rng, p, D);
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

/* The search's state: the budget, the best placement seen and its score, and REINFORCE's
 * running figures. */
typedef struct run {
    const pl_place_opts *o;
    pl_pool pool;
    double limit_s, start, best_t;
    int max_ep, ep;
    int *best;       /* op -> device of the best placement */
    double t0, base; /* the first makespan that fits (R's unit) and the moving baseline */
} run;

static bool time_left(const run *u)
{
    return pl_now() - u->start < u->limit_s;
}

static void report(const run *u)
{
    if (u->o->progress && u->pool.rank == 0) /* ranks > 0 print nothing */
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

/* ---- a batch of episodes, spread over the pool (docs/dist.md, "moirai and drl") ----
 *
 * Episode e samples from the one stream where e episodes of x->n draws leave it
 * (pl_rng_skip), whichever rank runs it; the ranks gather every episode's score and
 * placement, so each one keeps the same best, first makespan and baseline, in episode order,
 * and scales the gradients of its own episodes by their advantages; the gradients are summed
 * over the ranks (a batch's loss is the sum over its episodes, as in one process) and every
 * rank takes the same Adam step. In one process this is the loop it always was: the same
 * draws, the same baseline, the gradients added in the same order. */

/* One episode's result, as the pool gathers it (no pointers): the placement of all x->n
 * groups follows the struct (coarsening aims at MAX_GROUPS but may stop above it), so a slot
 * is slot_size(x) bytes. */
typedef struct ep_slot {
    double t; /* score(): seconds, INFINITY when it does not fit, -1 when measuring failed */
    int ran;  /* 0: the time limit came first (or an earlier episode here failed) */
    char why[PL_ERR_MAX]; /* measuring's error, when t < 0 */
    int gdev[];
} ep_slot;

static size_t slot_size(const drl *x)
{
    size_t n = sizeof(ep_slot) + (size_t)x->n * sizeof(int);
    return (n + _Alignof(ep_slot) - 1) / _Alignof(ep_slot) * _Alignof(ep_slot);
}

static const ep_slot *slot_at(const drl *x, const void *slots, int i)
{
    return (const ep_slot *)((const char *)slots + (size_t)i * slot_size(x));
}

typedef struct batch {
    drl *x;
    run *u;
    int first;   /* the batch's first episode */
    int *opdev;  /* scratch: op -> device */
    int *lp;     /* per tape: the summed log-probability node of its episode */
    bool failed; /* measuring failed here: this rank's later episodes do not run */
} batch;

/* Episode `first + i` on tape i / size (a rank runs items i, i + size, ...; dist.h). */
static void episode(int i, void *out, void *user)
{
    batch *B = user;
    ep_slot *s = out;
    memset(s, 0, slot_size(B->x));
    if (B->failed || !time_left(B->u)) return;
    int j = i / B->u->pool.size;
    pl_tape *t = B->x->tapes[j];
    uint64_t rng = pl_rng_skip(B->x->rng, (uint64_t)(B->first + i) * (uint64_t)B->x->n);
    pl_tape_reset(t);
    B->lp[j] = rollout(B->x, t, &rng, s->gdev);
    pl_err e = {""};
    s->t = score(B->x, B->u->o, s->gdev, B->opdev, &e);
    s->ran = 1;
    if (s->t < 0) snprintf(s->why, sizeof s->why, "%s", e.msg), B->failed = true;
}

/* REINFORCE on the gathered batch, in episode order: the best, R = -T / T0 (-2 when it does
 * not fit), the advantage against the moving baseline, the backward pass of this rank's own
 * episodes. Returns the episodes that ran, or -1 (err set) at a failure to measure. */
static int learn_batch(batch *B, const ep_slot *slots, int nb, pl_err *err)
{
    run *u = B->u;
    int ran = 0;
    for (int i = 0; i < nb; i++) {
        const ep_slot *s = slot_at(B->x, slots, i);
        if (!s->ran) continue;
        if (s->t < 0) {
            pl_err_set(err, "%s", s->why);
            return pl_err_prefix(err, "drl: episode %d", B->first + i + 1);
        }
        if (s->t < u->best_t)
            u->best_t = s->t, pl_coarsen_expand_placement(B->x->cz, s->gdev, u->best);
        if (u->t0 <= 0 && isfinite(s->t)) u->t0 = s->t;
        double r = isfinite(s->t) ? -s->t / u->t0 : -2;
        if (u->ep == 0) u->base = r;
        if (i % u->pool.size == u->pool.rank) {
            pl_tape *t = B->x->tapes[i / u->pool.size];
            pl_tape_backward(t, pl_t_scale(t, B->lp[i / u->pool.size], -(float)(r - u->base)));
        }
        u->base = 0.9 * u->base + 0.1 * r;
        u->ep++, ran++;
    }
    return ran;
}

/* Every parameter's gradient (grads) or weights, in the set's order, into v; or, back, from
 * v into the gradients. */
static void flat_copy(pl_params *s, float *v, bool grads, bool back)
{
    for (int i = 0; i < s->n; i++) {
        size_t m = (size_t)s->p[i]->rows * (size_t)s->p[i]->cols;
        float *a = grads ? s->p[i]->g : s->p[i]->w;
        if (back)
            memcpy(a, v, m * sizeof *v);
        else
            memcpy(v, a, m * sizeof *v);
        v += m;
    }
}

/* Sums the parameters' gradients over the pool (one vector, one reduction). */
static int sum_grads(drl *x, const pl_pool *pool)
{
    if (!pool->on) return 0;
    long n = pl_params_count(&x->s);
    float *v = pl_malloc((size_t)n * sizeof *v);
    flat_copy(&x->s, v, true, false);
    int rc = pl_pool_sumf(pool, v, (int)n) < 0 ? -1 : 0;
    flat_copy(&x->s, v, true, true);
    free(v);
    return rc;
}

/* Episodes in batches of BATCH (under the pool, the next multiple of its size: every rank
 * runs as many), an Adam step after each (a last, partial batch too, so that an episode
 * budget is met exactly); the time limit ends the batch it falls in. */
static int episodes(drl *x, run *u, int *opdev, pl_err *err)
{
    int size = u->pool.size, per = (BATCH + size - 1) / size, bsize = per * size;
    x->tapes = pl_calloc((size_t)per, sizeof *x->tapes), x->n_tapes = per;
    for (int j = 0; j < per; j++)
        x->tapes[j] = pl_tape_new();
    ep_slot *slots = pl_malloc((size_t)bsize * slot_size(x));
    batch B = {.x = x, .u = u, .opdev = opdev, .lp = pl_calloc((size_t)per, sizeof(int))};
    pl_adam adam = pl_adam_default(0.01f);
    int rc = 0;
    while (rc == 0 && u->ep < u->max_ep) {
        int nb = u->max_ep - u->ep < bsize ? u->max_ep - u->ep : bsize, ran;
        B.first = u->ep;
        pl_params_zero_grad(&x->s);
        if (pl_pool_map(&u->pool, nb, episode, slots, slot_size(x), &B) < 0) {
            rc = pl_err_set(err, "drl: the MPI pool failed gathering episodes %d-%d: %s", u->ep + 1,
                            u->ep + nb, pl_dist_error());
            break;
        }
        if ((ran = learn_batch(&B, slots, nb, err)) <= 0) {
            rc = ran; /* 0: the time was up before the batch */
            break;
        }
        if (sum_grads(x, &u->pool) < 0) {
            rc = pl_err_set(err, "drl: the MPI pool failed summing the gradients: %s",
                            pl_dist_error());
            break;
        }
        pl_params_clip(&x->s, 1.0);
        pl_adam_step(&adam, &x->s);
        report(u);
        if (ran < nb) break; /* the time limit fell in this batch */
    }
    free(slots), free(B.lp);
    return rc;
}

/* Every rank applied the same summed gradients, so every rank must hold rank 0's weights:
 * checked once at the end (a rank that drifted would have sampled other episodes than its
 * share of one search). -1 (err set) when one differs or MPI failed. */
static int same_weights(drl *x, const pl_pool *pool, pl_err *err)
{
    if (!pool->on) return 0;
    long n = pl_params_count(&x->s);
    float *w = pl_malloc((size_t)n * sizeof *w);
    flat_copy(&x->s, w, false, false);
    char mine[65], root[65];
    pl_sha256_buffer(w, (size_t)n * sizeof *w, mine);
    free(w);
    memcpy(root, mine, sizeof root);
    float differ[1] = {0};
    int rc = pl_pool_bcast(pool, root, sizeof root, 0);
    differ[0] = strcmp(mine, root) != 0;
    if (rc == 0) rc = pl_pool_sumf(pool, differ, 1) < 0 ? -1 : 0;
    if (rc < 0)
        return pl_err_set(err, "drl: the MPI pool failed comparing the ranks' weights: %s",
                          pl_dist_error());
    if (differ[0] > 0)
        return pl_err_set(err,
                          "drl: %.0f of %d ranks hold other weights than rank 0 after training "
                          "(the ranks must apply the same gradients: a bug)",
                          differ[0], pool->size);
    return 0;
}

static int train(drl *x, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    int n = x->n, n_ops = x->k->n_ops;
    int *gdev = pl_malloc((size_t)n * sizeof *gdev);
    int *opdev = pl_malloc((size_t)n_ops * sizeof *opdev);
    /* the budget: episodes (o->iterations), time, or both; neither: EPISODES episodes (and
     * DEFAULT_TIME_S at most) */
    /* measured episodes stay in one process: ranks would time each other's runs, or score
     * on different machines, and a failure on one rank would leave the others waiting */
    run u = {
        .o = o, .pool = pl_pool_of(o->measure ? NULL : o), .start = pl_now(), .best_t = INFINITY};
    u.best = pl_malloc((size_t)n_ops * sizeof *u.best);
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
    if (rc == 0) rc = episodes(x, &u, opdev, err);
    if (rc == 0) rc = same_weights(x, &u.pool, err);
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
    for (int j = 0; j < x.n_tapes; j++)
        pl_tape_free(x.tapes[j]);
    free(x.tapes);
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
