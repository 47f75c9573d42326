/* drl.c: AutoDeep's DRL placer (seeds/000 §IV-C) and Google-RL, its baseline (Mirhoseini et
 * al. 2017); docs/learn.md, "The DRL placer".
 *
 * Both place the model's op groups one after the other with an attentional
 * sequence-to-sequence policy: an LSTM encoder reads the groups in topological order, each as
 * its type (embedded), its padded output shape and its adjacency bits (pl_drl_encode); an
 * LSTM decoder, fed the previous group's device (embedded) and this group's encoder state and
 * attending over all of them, emits a device per group. Episodes sample placements from the
 * policy, the simulator scores them (the makespan of the plan on the model's own graph), and
 * REINFORCE trains the policy with Adam. They differ where the papers do (struct variant):
 * AutoDeep's encoder is bidirectional, its baseline term B starts at the baseline experiments'
 * time (the best of the single-device placements and the expert-layers placement, which it
 * scores first and counts among the placements seen) and then moves with the times sampled
 * (advantage()), its reward is the time itself, and a random rate that decays with the
 * episodes explores; Google-RL's encoder reads one way, its
 * reward is the square root of the time against a moving-average baseline, it does not
 * explore beyond sampling, and it returns the best placement it sampled. Large graphs are
 * coarsened first (fusion, colocation and chain contraction to at most MAX_GROUPS groups,
 * pl_coarsen), Mirhoseini et al.'s grouping of ops.
 *
 * Measured episodes (pl_place_opts.measure, `--measured`; docs/learn.md): a placement that fits
 * in memory (simulated) is scored by the hook instead, as AutoDeep scores by running it; the
 * first failure to measure ends the search with its error, since a search scored partly by
 * the simulator would be neither. The budget: o->iterations episodes exactly, or the time
 * limit, whichever ends first. */
#include "algos.h"
#include "placer/coarsen.h"
#include "placer/learn.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS PL_DRL_ADJ_W /* every group's neighbours fit its adjacency bits */
#define EMBED 8                 /* type embedding */
#define DEV_EMBED 8             /* device embedding, fed to the decoder */
#define HID 32
#define ATT 32
#define BATCH 4
#define EPISODES 400 /* default budget, or time_limit_s */
#define DEFAULT_TIME_S 30
#define OOM_X 10.0    /* a placement that does not fit scores as OOM_X times the unit time */
#define EPS0 0.2      /* AutoDeep's random rate at episode 0 ... */
#define EPS_HALF 50.0 /* ... halved every EPS_HALF episodes at least (pl_drl_random_rate) */

/* What sets AutoDeep's DRL and Google-RL apart (the file's header). */
typedef struct variant {
    const char *name;
    bool bidir;    /* the encoder reads both ways */
    bool paper_b;  /* B from the baseline experiments' time, R = T; else R = sqrt(T), b from R */
    bool explores; /* draws devices at AutoDeep's random rate (pl_drl_random_rate) */
} variant;

static const variant AUTODEEP = {"drl", true, true, true};
static const variant GOOGLE_RL = {"google-rl", false, false, false};

typedef struct drl {
    const pl_cost *k;
    const variant *v;
    pl_coarsening *cz;
    int n, D, n_types;
    int *type;   /* per topological position: its type index */
    float *feat; /* [n * PL_DRL_FEAT], per topological position */
    float *mask; /* [n * D] per group: 0, or -1e9 where a member cannot run */
    pl_params s;
    pl_param *embed, *dev_embed;
    pl_lstm enc, enc_back, dec;
    pl_attn att;
    pl_dense out;
    pl_tape **tapes; /* one per episode of a batch that this rank runs */
    int n_tapes;
    uint64_t rng; /* where the episodes' stream starts: episode e draws from 2 x->n * e on */
} drl;

/* ---- the encoding ---- */

/* The entries of op v's output shape (pl_drl_encode), into f[0..PL_DRL_SHAPE_W). */
static void shape_entries(const pl_graph *g, int v, float *f)
{
    int at = 0;
    const pl_op *op = &g->ops[v];
    for (int o = 0; o < op->n_outputs; o++) {
        if (op->outputs[o] < 0) continue;
        const pl_tensor *t = &g->tensors[op->outputs[o]];
        for (int j = 0; j < t->rank && at < PL_DRL_SHAPE_W; j++, at++)
            f[at] = t->dims[j] >= 0 ? (float)(log2(1.0 + (double)t->dims[j]) / 16) : 0;
    }
}

static void adjacency_bits(const pl_graph *g, int v, float *f)
{
    for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
        if (g->topo_pos[g->pred[e]] < PL_DRL_ADJ_W) f[g->topo_pos[g->pred[e]]] = 1;
    for (int e = g->succ_off[v]; e < g->succ_off[v + 1]; e++)
        if (g->topo_pos[g->succ[e]] < PL_DRL_ADJ_W) f[g->topo_pos[g->succ[e]]] = 1;
}

int pl_drl_encode(const pl_graph *g, int *type, float *feat)
{
    int n_types = 0, n = g->n_ops;
    int *first = pl_malloc((size_t)n * sizeof *first + 1); /* type index -> its first op */
    memset(feat, 0, (size_t)n * PL_DRL_FEAT * sizeof *feat);
    for (int i = 0; i < n; i++) {
        int v = g->topo[i], t = 0;
        while (t < n_types && strcmp(g->ops[first[t]].type, g->ops[v].type) != 0)
            t++;
        if (t == n_types) first[n_types++] = v;
        type[i] = t;
        shape_entries(g, v, &feat[(size_t)i * PL_DRL_FEAT]);
        adjacency_bits(g, v, &feat[(size_t)i * PL_DRL_FEAT + PL_DRL_SHAPE_W]);
    }
    free(first);
    return n_types;
}

/* Group q's devices: those every member runs on. */
static void group_mask(drl *x, int q)
{
    float *m = &x->mask[(size_t)q * x->D];
    for (int j = x->cz->member_off[q]; j < x->cz->member_off[q + 1]; j++)
        for (int d = 0; d < x->D; d++)
            if (!isfinite(pl_cost_op_s(x->k, x->cz->members[j], d))) m[d] = -1e9f;
}

/* The encoding of the coarse graph, and per group the devices it may go to. */
static void features(drl *x)
{
    const pl_graph *cg = x->cz->coarse;
    x->type = pl_malloc((size_t)x->n * sizeof *x->type + 1);
    x->feat = pl_malloc((size_t)x->n * PL_DRL_FEAT * sizeof *x->feat + 1);
    x->n_types = pl_drl_encode(cg, x->type, x->feat);
    x->mask = pl_calloc((size_t)x->n * x->D + 1, sizeof *x->mask);
    for (int q = 0; q < x->n; q++)
        group_mask(x, q);
}

static int enc_width(const drl *x)
{
    return x->v->bidir ? 2 * HID : HID;
}

static void model_init(drl *x, unsigned seed)
{
    x->rng = seed ? seed : 1;
    int in = EMBED + PL_DRL_FEAT, E = enc_width(x);
    pl_params_init(&x->s);
    x->embed = pl_params_add(&x->s, "drl.type_embedding", x->n_types > 0 ? x->n_types : 1, EMBED);
    pl_param_xavier(x->embed, &x->rng);
    x->dev_embed = pl_params_add(&x->s, "drl.device_embedding", x->D + 1, DEV_EMBED);
    pl_param_xavier(x->dev_embed, &x->rng);
    pl_lstm_init(&x->enc, &x->s, "drl.encoder", in, HID, &x->rng);
    if (x->v->bidir) pl_lstm_init(&x->enc_back, &x->s, "drl.encoder_back", in, HID, &x->rng);
    pl_lstm_init(&x->dec, &x->s, "drl.decoder", DEV_EMBED + E, HID, &x->rng);
    pl_attn_init(&x->att, &x->s, "drl.attention", E, HID, ATT, &x->rng);
    pl_dense_init(&x->out, &x->s, "drl.out", HID + E, x->D, &x->rng);
}

/* ---- one episode ---- */

static int sample(double u, const float *p, int D)
{
    double at = 0;
    for (int d = 0; d < D; d++)
        if ((at += p[d]) > u) return d;
    return D - 1;
}

/* With probability eps (the first draw u), a device drawn uniformly (by r) among those the
 * group's members run on; else one drawn by r from the policy's probabilities p. */
static int choose(const drl *x, int q, const float *p, double eps, double u, double r)
{
    if (u >= eps) return sample(r, p, x->D);
    int ok = 0, pick;
    for (int d = 0; d < x->D; d++)
        ok += x->mask[(size_t)q * x->D + d] == 0;
    pick = (int)(r * ok);
    for (int d = 0; d < x->D; d++)
        if (x->mask[(size_t)q * x->D + d] == 0 && pick-- == 0) return d;
    return sample(r, p, x->D); /* no device runs every member: the simulator will say so */
}

/* The encoder's states of the groups in topological order into hs[0..n) (forward, and when
 * the variant says so backward, side by side); *h, *c: the forward pass's last state. */
static void encode(const drl *x, pl_tape *t, int *hs, int *h, int *c)
{
    int n = x->n, E = pl_t_param(t, x->embed);
    int *xs = pl_malloc((size_t)n * sizeof *xs);
    *h = *c = pl_t_input(t, 1, HID, NULL);
    for (int i = 0; i < n; i++) {
        int emb = pl_t_gather(t, E, 1, &x->type[i]);
        int f = pl_t_input(t, 1, PL_DRL_FEAT, &x->feat[(size_t)i * PL_DRL_FEAT]);
        xs[i] = pl_t_concat_cols(t, 2, (int[]){emb, f});
        pl_lstm_step(t, &x->enc, xs[i], *h, *c, h, c);
        hs[i] = *h;
    }
    if (x->v->bidir) {
        int hb = pl_t_input(t, 1, HID, NULL), cb = hb;
        for (int i = n - 1; i >= 0; i--) {
            pl_lstm_step(t, &x->enc_back, xs[i], hb, cb, &hb, &cb);
            hs[i] = pl_t_concat_cols(t, 2, (int[]){hs[i], hb});
        }
    }
    free(xs);
}

/* Records the policy over the groups in topological order on t, choosing a device for each
 * into dev[] (two draws from *rng per group: choose()'s u and r) with the random rate eps;
 * returns the node of the summed log-probabilities of the devices chosen. */
static int rollout(const drl *x, pl_tape *t, uint64_t *rng, double eps, int *dev)
{
    const pl_graph *cg = x->cz->coarse;
    int n = x->n, D = x->D, h, c;
    int *hs = pl_malloc((size_t)n * sizeof *hs), *lps = pl_malloc((size_t)n * sizeof *lps);
    float *p = pl_malloc((size_t)D * sizeof *p);
    encode(x, t, hs, &h, &c);
    int H = pl_t_concat_rows(t, n, hs), keys = pl_attn_keys(t, &x->att, H);
    int DE = pl_t_param(t, x->dev_embed), prev = D; /* row D: the start */
    int s = h, sc = c;
    for (int i = 0; i < n; i++) {
        int q = cg->topo[i];
        int in = pl_t_concat_cols(t, 2, (int[]){pl_t_gather(t, DE, 1, &prev), hs[i]});
        pl_lstm_step(t, &x->dec, in, s, sc, &s, &sc);
        int ctx = pl_attn_apply(t, &x->att, keys, H, s, NULL, NULL);
        int logits = pl_dense_apply(t, &x->out, pl_t_concat_cols(t, 2, (int[]){s, ctx}));
        logits = pl_t_add(t, logits, pl_t_input(t, 1, D, &x->mask[(size_t)q * D]));
        int lsm = pl_t_log_softmax(t, logits);
        const float *l = pl_t_value(t, lsm);
        for (int d = 0; d < D; d++)
            p[d] = expf(l[d]);
        double u = pl_rng_uniform(rng), r = pl_rng_uniform(rng);
        int a = choose(x, q, p, eps, u, r);
        dev[q] = a;
        lps[i] = pl_t_pick(t, lsm, &a);
        prev = a;
    }
    int total = pl_t_sum(t, pl_t_concat_rows(t, n, lps));
    free(hs), free(lps), free(p);
    return total;
}

/* The score of an op placement: its simulated makespan, or, with o->measure, its measured
 * latency; INFINITY when it does not fit (simulated) or cannot run; -1 (err set) when
 * measuring failed. */
static double score_ops(const pl_cost *k, const pl_place_opts *o, const int *opdev, pl_err *err)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    memcpy(p->dev, opdev, (size_t)k->n_ops * sizeof *opdev);
    p->contention = o->contention;
    pl_sim_result r;
    pl_err e = {""};
    double t = INFINITY;
    if (pl_simulate(k, p, &(pl_sim_opts){.contention = o->contention}, &r, &e) == 0) {
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

/* The score of the groups' placement gdev (opdev: scratch, gets the op placement). */
static double score(const drl *x, const pl_place_opts *o, const int *gdev, int *opdev, pl_err *err)
{
    pl_coarsen_expand_placement(x->cz, gdev, opdev);
    return score_ops(x->k, o, opdev, err);
}

/* ---- training ---- */

/* The search's state: the budget, the best placement seen and its score, and REINFORCE's
 * running figures. */
typedef struct run {
    const pl_place_opts *o;
    pl_pool pool;
    double limit_s, start, best_t;
    int max_ep, ep;
    int *best;   /* op -> device of the best placement */
    char by[96]; /* the baseline experiment that placement is, "" when an episode sampled it */
    double unit; /* the time unit: AutoDeep's B; Google-RL's best single device (0: none) */
    double base; /* Google-RL's moving baseline */
} run;

static bool time_left(const run *u)
{
    return pl_now() - u->start < u->limit_s;
}

static void report(const drl *x, const run *u)
{
    if (u->o->progress && u->pool.rank == 0) /* ranks > 0 print nothing */
        u->o->progress(x->v->name, u->ep, u->o->iterations > 0 ? u->max_ep : 0, u->best_t,
                       u->o->progress_user);
}

/* Scores a baseline experiment's op placement: it sets the unit (its best time) and, for
 * AutoDeep, counts among the placements seen. -1 (err set) on a failure to measure it. */
static int try_baseline(const drl *x, run *u, const int *opdev, const char *what, pl_err *err)
{
    double t = score_ops(x->k, u->o, opdev, err);
    if (t < 0) return -1;
    if (isfinite(t) && (u->unit <= 0 || t < u->unit)) u->unit = t;
    if (x->v->paper_b && t < u->best_t) {
        u->best_t = t, memcpy(u->best, opdev, (size_t)x->k->n_ops * sizeof *opdev);
        snprintf(u->by, sizeof u->by, "%s", what);
    }
    return 0;
}

/* The factor that scales an episode's log-probability in the loss (its advantage; the loss
 * is minimised, so a time above the baseline makes its devices less likely), from its time
 * t (INFINITY when it does not fit: OOM_X units). AutoDeep (eq. 11): T - B, B starting at the
 * baseline experiments' time and then the moving average of the times sampled (the paper's
 * B held constant was measured and dropped: docs/learn.md), in units of that first B.
 * Google-RL: R - b, R the square root of the time in units of the best single device, b the
 * moving average of R from the first episode's. */
static double advantage(const drl *x, run *u, double t)
{
    if (u->unit <= 0 && isfinite(t)) u->unit = t; /* no baseline fitted: the first that does */
    double rho = isfinite(t) ? t / u->unit : OOM_X, r = x->v->paper_b ? rho : sqrt(rho);
    if (u->ep == 0) u->base = x->v->paper_b ? 1 : r;
    double a = r - u->base;
    u->base = 0.9 * u->base + 0.1 * r;
    return a;
}

/* The paper says only that the rate falls as the episodes go on; a fixed half-life spent the
 * exploration in the first 350 episodes of any budget, and the policy sampled its favourite
 * for the rest of a long one. */
double pl_drl_random_rate(int e, int budget)
{
    double half = budget / 6.0 > EPS_HALF ? budget / 6.0 : EPS_HALF;
    return EPS0 * exp2(-e / half);
}

/* The variant's random rate at episode e: AutoDeep's, or none. */
static double random_rate(const drl *x, const run *u, int e)
{
    return x->v->explores ? pl_drl_random_rate(e, u->max_ep != INT_MAX ? u->max_ep : 0) : 0;
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
    int ep = B->first + i;
    uint64_t rng = pl_rng_skip(B->x->rng, (uint64_t)ep * 2 * (uint64_t)B->x->n);
    pl_tape_reset(t);
    B->lp[j] = rollout(B->x, t, &rng, random_rate(B->x, B->u, ep), s->gdev);
    pl_err e = {""};
    s->t = score(B->x, B->u->o, s->gdev, B->opdev, &e);
    s->ran = 1;
    if (s->t < 0) snprintf(s->why, sizeof s->why, "%s", e.msg), B->failed = true;
}

/* REINFORCE on the gathered batch, in episode order: the best, the advantage (advantage()),
 * the backward pass of this rank's own episodes. Returns the episodes that ran, or -1 (err
 * set) at a failure to measure. */
static int learn_batch(batch *B, const ep_slot *slots, int nb, pl_err *err)
{
    run *u = B->u;
    int ran = 0;
    for (int i = 0; i < nb; i++) {
        const ep_slot *s = slot_at(B->x, slots, i);
        if (!s->ran) continue;
        if (s->t < 0) {
            pl_err_set(err, "%s", s->why);
            return pl_err_prefix(err, "%s: episode %d", B->x->v->name, B->first + i + 1);
        }
        if (s->t < u->best_t)
            u->best_t = s->t, pl_coarsen_expand_placement(B->x->cz, s->gdev, u->best), u->by[0] = 0;
        double a = advantage(B->x, u, s->t);
        if (i % u->pool.size == u->pool.rank) {
            pl_tape *t = B->x->tapes[i / u->pool.size];
            pl_tape_backward(t, pl_t_scale(t, B->lp[i / u->pool.size], (float)a));
        }
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
            rc = pl_err_set(err, "%s: the MPI pool failed gathering episodes %d-%d: %s", x->v->name,
                            u->ep + 1, u->ep + nb, pl_dist_error());
            break;
        }
        if ((ran = learn_batch(&B, slots, nb, err)) <= 0) {
            rc = ran; /* 0: the time was up before the batch */
            break;
        }
        if (sum_grads(x, &u->pool) < 0) {
            rc = pl_err_set(err, "%s: the MPI pool failed summing the gradients: %s", x->v->name,
                            pl_dist_error());
            break;
        }
        pl_params_clip(&x->s, 1.0);
        pl_adam_step(&adam, &x->s);
        report(x, u);
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
        return pl_err_set(err, "%s: the MPI pool failed comparing the ranks' weights: %s",
                          x->v->name, pl_dist_error());
    if (differ[0] > 0)
        return pl_err_set(err,
                          "%s: %.0f of %d ranks hold other weights than rank 0 after training "
                          "(the ranks must apply the same gradients: a bug)",
                          x->v->name, differ[0], pool->size);
    return 0;
}

/* The baseline experiments, scored before the episodes: every single-device placement and
 * (AutoDeep's B: the paper's baselines are a single GPU and the expert) the expert-layers
 * placement. */
static int baselines(drl *x, run *u, int *opdev, pl_err *err)
{
    const pl_cost *k = x->k;
    for (int d = 0; d < x->D; d++) {
        for (int v = 0; v < k->n_ops; v++)
            opdev[v] = d;
        char what[96];
        snprintf(what, sizeof what, "everything on %s", k->c->devs[d].name);
        if (try_baseline(x, u, opdev, what, err) < 0)
            return pl_err_prefix(err, "%s: everything on %s", x->v->name, k->c->devs[d].name);
    }
    if (!x->v->paper_b) return 0;
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_err e = {""};
    int rc = 0;
    if (pl_place_expert_layers(k, u->o, p, &e) == 0 &&
        (rc = try_baseline(x, u, p->dev, "expert-layers", err)) < 0)
        pl_err_prefix(err, "%s: the expert-layers placement", x->v->name);
    pl_plan_free(p);
    return rc;
}

static int train(drl *x, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    int n_ops = x->k->n_ops;
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
    int rc = baselines(x, &u, opdev, err);
    if (rc == 0) rc = episodes(x, &u, opdev, err);
    if (rc == 0) rc = same_weights(x, &u.pool, err);
    if (rc == 0 && isfinite(u.best_t)) {
        memcpy(out->dev, u.best, (size_t)n_ops * sizeof *u.best);
        if (o->measure) out->measured_s = u.best_t;
        if (u.by[0]) /* credited to what found it: a note on success (place.h) */
            pl_err_set(err,
                       "%s: the answer is a baseline experiment's, %s: none of %d sampled "
                       "placements was faster",
                       x->v->name, u.by, u.ep);
    } else if (rc == 0)
        rc = pl_err_set(err, "%s: no placement sampled in %d episodes fits in memory", x->v->name,
                        u.ep);
    free(opdev), free(u.best);
    return rc;
}

static int place_variant(const variant *v, const pl_cost *k, const pl_place_opts *o, pl_plan *out,
                         pl_err *err)
{
    static const pl_place_opts dflt = {0};
    if (!o) o = &dflt;
    drl x = {.k = k, .v = v, .D = k->n_devs};
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
    free(x.type), free(x.feat), free(x.mask);
    pl_coarsening_free(x.cz);
    return rc;
}

static int place_drl(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    return place_variant(&AUTODEEP, k, o, out, err);
}

static int place_google_rl(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    return place_variant(&GOOGLE_RL, k, o, out, err);
}

int pl_learn_register(pl_err *err)
{
    static const pl_algo a[] = {
        {"drl", place_drl,
         "AutoDeep's DRL placer: seq2seq policy (bidirectional LSTM encoder over type, shape, "
         "adjacency; attention), REINFORCE against the baselines' time, decaying random rate; "
         "400 episodes, or --episodes / --time-limit",
         true},
        {"google-rl", place_google_rl,
         "Google-RL (Mirhoseini et al. 2017), AutoDeep's baseline: seq2seq over op groups, "
         "REINFORCE on sqrt(time) with a moving-average baseline; same budget as drl",
         true}};
    for (size_t i = 0; i < sizeof a / sizeof *a; i++)
        if (!pl_algo_find(a[i].name) && pl_algo_register(&a[i], err) < 0) return -1;
    return 0;
}
