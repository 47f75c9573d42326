/* bo.c: the strategies that learn: AutoDeep's Bayesian optimisation, and the paper's GA and
 * DE baselines, whose fitness is the same acquisition (docs/search.md).
 *
 * The surrogate is a trend in the configurations' capability plus a GP on what the trend leaves,
 * on the log latency of the trials that ran, over the log-scaled features. A configuration
 * where the model did not run (memory) is never proposed again but gives the GP no latency to
 * learn from. */
#include "search_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_INIT = 2, POP_CHILDREN = 16, FIT_FROM = 8 };

/* The surrogate: a GP on the log latency of the trials that ran, and the constrained EI. */
typedef struct surrogate {
    pl_gp gp;
    bool ok;          /* a GP was fitted (at least two trials ran) */
    int n;            /* the trials that ran when it was fitted; -1 before the first fit, or
                         after a believer (believe) changed it */
    double a, b;      /* the trend: ln latency ≈ a + b · capability (docs/search.md) */
    double best_cost; /* the cheapest trial meeting the SLO (or believed to); INFINITY before */
    double *X, *y;    /* the GP's data: features and ln latency less the trend, n_data rows */
    int n_data;
} surrogate;

static const double *feat_of(const searcher *S, int k)
{
    return S->F + (size_t)k * PL_N_FEATURES;
}

static double dist2(const double *a, const double *b)
{
    double d = 0;
    for (int f = 0; f < PL_N_FEATURES; f++)
        d += (a[f] - b[f]) * (a[f] - b[f]);
    return d;
}

/* Least squares y ≈ a + b s, b kept <= 0 (more hardware is never slower in expectation); the
 * GP then models what the trend leaves. A constant-mean GP reverts to the mean away from the
 * trials, so with a few cheap trials it cannot see that the largest machine is the fastest. */
static void fit_trend(surrogate *m, const double *s, double *y, int n)
{
    double ms = 0, my = 0, sxy = 0, sxx = 0;
    for (int i = 0; i < n; i++)
        ms += s[i] / n, my += y[i] / n;
    for (int i = 0; i < n; i++)
        sxy += (s[i] - ms) * (y[i] - my), sxx += (s[i] - ms) * (s[i] - ms);
    m->b = sxx > 1e-12 ? fmin(0, sxy / sxx) : 0;
    m->a = my - m->b * ms;
    for (int i = 0; i < n; i++)
        y[i] -= m->a + m->b * s[i];
}

/* With few points the marginal likelihood says little about six length scales (its optimum
 * then chases the noise): below FIT_FROM trials, every length scale is 1, the catalogue's span
 * in each scaled feature (a smooth surface), and the amplitude the residuals' spread. Measured
 * on the benchmark: docs/search.md. */
static int fixed_fit(surrogate *m, const double *X, const double *y, int n, pl_err *err)
{
    pl_gp_hyper h = {.signal_var = pl_gp_y_scale(y, n)};
    for (int f = 0; f < PL_N_FEATURES; f++)
        h.length[f] = 1.0;
    h.noise_var = 1e-4 * h.signal_var;
    return pl_gp_condition(&m->gp, X, y, n, PL_N_FEATURES, &h, err);
}

static void surrogate_free(surrogate *m)
{
    if (m->ok) pl_gp_free(&m->gp);
    m->ok = false;
    free(m->X), free(m->y);
    m->X = m->y = NULL;
}

/* Fits the surrogate to the trials that ran, unless it already is: a trial where the model did
 * not run adds no data, and the same data with the search's seed gives the same fit. */
static int surrogate_update(searcher *S, surrogate *m, pl_err *err)
{
    const pl_search_result *r = S->r;
    m->best_cost = r->best >= 0 ? r->trials[r->best].cost_usd : INFINITY;
    int runs = 0;
    for (int i = 0; i < r->n_trials; i++)
        runs += r->trials[i].runs;
    if (runs == m->n) return 0;
    surrogate_free(m);
    m->n = runs, m->a = m->b = 0;
    int n = 0, rows = r->n_trials + S->batch + 1; /* room for a round's believed trials */
    double *X = m->X = pl_malloc((size_t)rows * PL_N_FEATURES * sizeof *X);
    double *y = m->y = pl_malloc(rows * sizeof *y);
    double *cap = pl_malloc((r->n_trials + 1) * sizeof *cap);
    for (int i = 0; i < r->n_trials; i++) {
        if (!r->trials[i].runs) continue;
        memcpy(X + (size_t)n * PL_N_FEATURES, feat_of(S, r->trials[i].config),
               PL_N_FEATURES * sizeof *X);
        cap[n] = S->capability[r->trials[i].config];
        y[n++] = log(r->trials[i].latency_s);
    }
    int rc = 0;
    if (n >= 2) {
        fit_trend(m, cap, y, n);
        rc = n < FIT_FROM ? fixed_fit(m, X, y, n, err)
                          : pl_gp_fit(&m->gp, X, y, n, PL_N_FEATURES, S->seed, err);
        m->ok = rc == 0;
        if (rc < 0) m->n = -1; /* not fitted: try again next time */
    }
    m->n_data = n;
    free(cap);
    return rc;
}

/* Before any trial meets the SLO there is no cost to improve on: feasibility first (Gardner et
 * al., constrained BO), the probability of meeting the SLO, ties to the cheaper price. */
static double feasibility_acq(const searcher *S, int k, double mu, double sigma)
{
    double p = pl_prob_meets(mu, sigma, S->o->slo_s);
    return p - 1e-9 * S->cat->configs[k].price_usd_per_hour;
}

/* The surrogate's prediction of ln latency on configuration k: the trend plus the GP's mean,
 * and the predictive spread of a new trial: the latent variance plus the noise the fit found
 * (trials are not exact repeats: placement searches and measurements vary). */
static void surrogate_predict(const searcher *S, const surrogate *m, int k, double *mu,
                              double *sigma)
{
    double var;
    pl_gp_predict(&m->gp, feat_of(S, k), mu, &var);
    *mu += m->a + m->b * S->capability[k];
    *sigma = sqrt(fmax(var, 0) + m->gp.h.noise_var);
}

/* Constrained EI of candidate k: P(latency <= SLO) × EI on its cost (eq. 7). */
static double surrogate_acq(const searcher *S, const surrogate *m, int k)
{
    double mu, sigma;
    surrogate_predict(S, m, k, &mu, &sigma);
    if (!isfinite(m->best_cost)) return feasibility_acq(S, k, mu, sigma);
    double price_per_s = S->cat->configs[k].price_usd_per_hour / 3600;
    return pl_prob_meets(mu, sigma, S->o->slo_s) *
           pl_ei_lognormal(price_per_s, mu, sigma, m->best_cost);
}

/* The untried candidate whose features are nearest x (Euclidean), or -1. */
static int nearest_untried(const searcher *S, const double *x)
{
    int best = -1;
    double bd = INFINITY;
    for (int k = 0; k < S->cat->n; k++) {
        if (!S->cand[k] || S->tried[k]) continue;
        double d = dist2(feat_of(S, k), x);
        if (d < bd) bd = d, best = k;
    }
    return best;
}

/* The untried candidate farthest from every trial so far and every one proposed in this
 * round (maximin), or -1. */
static int farthest_untried(const searcher *S)
{
    int best = -1;
    double bd = -1;
    for (int k = 0; k < S->cat->n; k++) {
        if (!S->cand[k] || S->tried[k]) continue;
        double dmin = INFINITY;
        for (int i = 0; i < S->r->n_trials; i++)
            dmin = fmin(dmin, dist2(feat_of(S, k), feat_of(S, S->r->trials[i].config)));
        for (int i = 0; i < S->round->n; i++)
            dmin = fmin(dmin, dist2(feat_of(S, k), feat_of(S, S->round->k[i])));
        if (dmin > bd) bd = dmin, best = k;
    }
    return best;
}

/* The first trials every model-based strategy starts with (init_trials, else n_default): one
 * at random, the others each as far as possible from those before (a space-filling start, so
 * the GP sees both ends); a round at a time. 1 when the search ended, -1 on failure. */
static int initial(searcher *S, int n_default, pl_err *err)
{
    int n0 = S->o->init_trials > 0 ? S->o->init_trials : n_default;
    while (S->r->n_trials < n0) {
        search_round_begin(S);
        if (search_can_go_on(S))
            while (search_round_room(S) > 0 && S->r->n_trials + S->round->n < n0)
                search_propose(S,
                               S->r->n_trials + S->round->n ? farthest_untried(S)
                                                            : search_random_untried(S),
                               NAN);
        int rc = search_round_run(S, err);
        if (rc) return rc;
    }
    return 0;
}

/* A proposer fills `cands` (untried configurations) for the surrogate to score. */
typedef int (*proposer)(searcher *S, int *cands);

/* ---- When BO stops early (docs/search.md "When BO stops") ----
 *
 * A configuration's cost is its price (known) × its latency (not), so "within the SLO and
 * cheaper than the best found" is one event on the latency alone: latency < limit(k) =
 * min(SLO, best cost / price per second). BO may stop only when, for every untried
 * configuration, the surrogate gives that event a probability under stop_prob (1 %). Before
 * anything meets the SLO it does not stop early: answering "nothing meets the SLO" while an
 * untried configuration does is the worst answer there is.
 *
 * The surrogate is sure of what it saw, not of what it assumed (a trend, fixed length scales,
 * an amplitude from a handful of points): away from its trials it can predict a spread of a
 * few per cent and be 1.5x off. So the spread is floored at STOP_SIGMA in ln latency (one
 * standard deviation is a factor 1.22; a 1 % tail, 2.33 of them, a factor 1.6), less near a
 * trial, and no stop comes before STOP_MIN_RUNS trials have run. All measured on bench_search
 * (the doc). */
enum { STOP_MIN_RUNS = 3 };
static const double STOP_SIGMA = 0.2, STOP_PROB = 0.01;
/* The floor shrinks near a trial that ran, to STOP_NEAR_MIN of itself at distance 0 (in the
 * scaled features), and is whole from STOP_NEAR_DIST on: what a model misses grows with the
 * distance from its data, and a near twin of a trial (the same GPUs from another cloud) is
 * predicted from that trial. */
static const double STOP_NEAR_DIST = 0.5, STOP_NEAR_MIN = 0.25;

static double stop_floor(const searcher *S, int k)
{
    double d2 = INFINITY;
    for (int i = 0; i < S->r->n_trials; i++)
        if (S->r->trials[i].runs)
            d2 = fmin(d2, dist2(feat_of(S, k), feat_of(S, S->r->trials[i].config)));
    return STOP_SIGMA * fmin(1, fmax(STOP_NEAR_MIN, sqrt(d2) / STOP_NEAR_DIST));
}

/* P(latency(k) < limit(k)) under the surrogate, its spread floored (stop_floor). */
static double prob_better(const searcher *S, const surrogate *m, int k)
{
    double mu, sigma;
    surrogate_predict(S, m, k, &mu, &sigma);
    double limit = S->o->slo_s, price_per_s = S->cat->configs[k].price_usd_per_hour / 3600;
    if (isfinite(m->best_cost) && price_per_s > 0) limit = fmin(limit, m->best_cost / price_per_s);
    return pl_prob_meets(mu, fmax(sigma, stop_floor(S, k)), limit);
}

/* Whether BO may stop now; if so, the reason is written. */
static bool should_stop(searcher *S, const surrogate *m)
{
    double eps = S->o->stop_prob > 0 ? S->o->stop_prob : STOP_PROB;
    if (S->o->stop_prob < 0 || m->n < STOP_MIN_RUNS || S->r->best < 0) return false;
    double pmax = 0;
    for (int k = 0; k < S->cat->n && pmax < eps; k++)
        if (S->cand[k] && !S->tried[k]) pmax = fmax(pmax, prob_better(S, m, k));
    if (pmax >= eps) return false;
    snprintf(S->r->stop_reason, sizeof S->r->stop_reason,
             "no untried configuration is likely within the SLO and cheaper (at most %.2g%%)",
             100 * pmax);
    return true;
}

/* ---- Batches: the Kriging believer (docs/search.md "Rounds and batches") ----
 *
 * A round of q trials is proposed before any of them runs. After each proposal the surrogate
 * believes its own prediction: k's trial is taken to give the surrogate's mean latency at k
 * (Ginsbourger, Le Riche and Carraro, "Kriging is well-suited to parallelize optimization",
 * 2010, §3: the Kriging believer), the GP is conditioned on it with the same hyper-parameters,
 * so the spread near k collapses and the next proposal goes where the acquisition is still
 * high; and when that latency meets the SLO its cost counts as the best to improve on. The
 * constant liar (the same section) lies with one value for every proposal; here the objective
 * is price × latency under a constraint on the latency, and no one latency is a fitting lie for
 * configurations whose prices differ by 50x, while the believer's lie is each configuration's
 * own prediction. The real trials replace the beliefs at the next round (a refit). */
static void believe(searcher *S, surrogate *m, int k)
{
    double mu, var, *x = m->X + (size_t)m->n_data * PL_N_FEATURES;
    pl_gp_predict(&m->gp, feat_of(S, k), &mu, &var);
    memcpy(x, feat_of(S, k), PL_N_FEATURES * sizeof *x);
    m->y[m->n_data++] = mu;
    pl_gp_hyper h = m->gp.h;
    pl_gp_free(&m->gp);
    pl_err err = {""};
    m->ok = pl_gp_condition(&m->gp, m->X, m->y, m->n_data, PL_N_FEATURES, &h, &err) == 0;
    m->n = -1; /* the trials' own fit again next round */
    double lat = exp(mu + m->a + m->b * S->capability[k]);
    if (lat <= S->o->slo_s) m->best_cost = fmin(m->best_cost, search_cost(S, k, lat));
}

/* The configuration of highest acquisition among what the proposer offers (a random untried
 * one when it offers none); *acq its score (-1 for the random one). */
static int pick_one(searcher *S, const surrogate *m, proposer propose, double *acq)
{
    int *cands = pl_malloc((S->cat->n + POP_CHILDREN + 1) * sizeof *cands);
    int nc = propose(S, cands), pick = -1;
    double best = -1;
    for (int i = 0; i < nc; i++) {
        double a = surrogate_acq(S, m, cands[i]);
        if (a > best) best = a, pick = cands[i];
    }
    free(cands);
    *acq = best;
    return pick >= 0 ? pick : search_random_untried(S);
}

/* One model-based round: fit (when the data changed), then up to the batch size of proposals,
 * each the best the proposer offers under the surrogate, believing the ones before (above).
 * Proposes nothing when BO's rule says stop (may_stop, above); -1 on error. Before the GP can
 * be fitted (fewer than two trials ran) the round is drawn at random. */
static int propose_round(searcher *S, surrogate *m, proposer propose, bool may_stop, pl_err *err)
{
    if (surrogate_update(S, m, err) < 0) return -1;
    if (m->ok && may_stop && should_stop(S, m)) return 0;
    while (search_round_room(S) > 0) {
        int n = S->round->n;
        if (n > 0 && m->ok) believe(S, m, S->round->k[n - 1]);
        double acq = NAN;
        int k = m->ok ? pick_one(S, m, propose, &acq) : search_random_untried(S);
        search_propose(S, k, acq);
    }
    return 0;
}

static int run(searcher *S, proposer propose, bool may_stop, int n_init, pl_err *err)
{
    int rc = initial(S, n_init, err);
    surrogate m = {.n = -1};
    while (rc == 0) {
        search_round_begin(S);
        if (search_can_go_on(S) && propose_round(S, &m, propose, may_stop, err) < 0)
            search_round_fail(S, err);
        rc = search_round_run(S, err);
    }
    surrogate_free(&m);
    return rc < 0 ? -1 : 0;
}

/* BO: the acquisition over every untried candidate (the catalogue is small and discrete, so
 * it is maximised exactly). */
static int every_untried(searcher *S, int *cands)
{
    int n = 0;
    for (int k = 0; k < S->cat->n; k++)
        if (S->cand[k] && !S->tried[k]) cands[n++] = k;
    return n;
}

int search_bo(searcher *S, pl_err *err)
{
    return run(S, every_untried, true, DEFAULT_INIT, err);
}

/* ---- GA and DE: the population is every trial so far, children are snapped to the nearest
 * untried configuration, and the fittest child (highest acquisition) is tried. ---- */

static double uniform01(searcher *S)
{
    return pl_rng_uniform(&S->rng);
}

/* Measured quality of a trial for parent selection: its cost, or worse than any cost when
 * it misses the SLO or does not run. */
static double badness(const pl_trial_record *t)
{
    return t->meets_slo ? t->cost_usd : t->runs ? 1e6 + t->latency_s : 1e12;
}

static int tournament(searcher *S, int n)
{
    int a = pl_rng_below(&S->rng, n), b = pl_rng_below(&S->rng, n);
    return badness(&S->r->trials[a]) <= badness(&S->r->trials[b]) ? a : b;
}

/* Adds the configuration nearest x to cands unless it is already there. */
static void add_snapped(const searcher *S, const double *x, int *cands, int *n)
{
    int k = nearest_untried(S, x);
    for (int i = 0; k >= 0 && i < *n; i++)
        if (cands[i] == k) return;
    if (k >= 0) cands[(*n)++] = k;
}

/* GA: tournament parents, uniform crossover, mutation of each gene with probability 1/d to a
 * random value. */
static int ga_children(searcher *S, int *cands)
{
    int np = S->r->n_trials, n = 0;
    for (int c = 0; c < POP_CHILDREN && np > 0; c++) {
        const double *a = feat_of(S, S->r->trials[tournament(S, np)].config),
                     *b = feat_of(S, S->r->trials[tournament(S, np)].config);
        double x[PL_N_FEATURES];
        for (int f = 0; f < PL_N_FEATURES; f++) {
            x[f] = uniform01(S) < 0.5 ? a[f] : b[f];
            if (uniform01(S) < 1.0 / PL_N_FEATURES) x[f] = uniform01(S);
        }
        add_snapped(S, x, cands, &n);
    }
    return n;
}

int search_ga(searcher *S, pl_err *err)
{
    return run(S, ga_children, false, DEFAULT_INIT, err);
}

/* DE/rand/1/bin: mutant a + F (b − c), binomial crossover with a target, F = 0.8, CR = 0.9. */
static int de_children(searcher *S, int *cands)
{
    int np = S->r->n_trials, n = 0;
    for (int c = 0; c < POP_CHILDREN && np >= 3; c++) {
        const pl_trial_record *tr = S->r->trials;
        const double *t = feat_of(S, tr[c % np].config),
                     *a = feat_of(S, tr[pl_rng_below(&S->rng, np)].config),
                     *b = feat_of(S, tr[pl_rng_below(&S->rng, np)].config),
                     *d = feat_of(S, tr[pl_rng_below(&S->rng, np)].config);
        int keep = pl_rng_below(&S->rng, PL_N_FEATURES);
        double x[PL_N_FEATURES];
        for (int f = 0; f < PL_N_FEATURES; f++)
            x[f] = f == keep || uniform01(S) < 0.9 ? a[f] + 0.8 * (b[f] - d[f]) : t[f];
        add_snapped(S, x, cands, &n);
    }
    return n;
}

int search_de(searcher *S, pl_err *err)
{
    return run(S, de_children, false, 3, err); /* DE needs three vectors to mutate */
}
