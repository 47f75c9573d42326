/* bo.c: the strategies that learn: AutoDeep's Bayesian optimisation, and the paper's GA and
 * DE baselines, whose fitness is the same acquisition (docs/search.md).
 *
 * The surrogate is a GP on the log latency of the trials that ran, over the normalised
 * features. A configuration where the model did not run (memory) is never proposed again but
 * gives the GP no latency to learn from. */
#include "search_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_INIT = 2, POP_CHILDREN = 16 };

/* Until a trial meets the SLO, EI is measured against the ceiling price × SLO of the dearest
 * candidate: every configuration that meets the SLO costs less than that, so the acquisition
 * already prefers cheap configurations likely to meet it. */
static double ceiling(const searcher *S)
{
    double c = 0;
    for (int k = 0; k < S->cat->n; k++)
        if (S->cand[k]) c = fmax(c, search_cost(S, k, S->o->slo_s));
    return c;
}

int surrogate_fit(searcher *S, surrogate *m, pl_err *err)
{
    const pl_search_result *r = S->r;
    memset(m, 0, sizeof *m);
    m->best_cost = r->best >= 0 ? r->trials[r->best].cost_usd : ceiling(S);
    int n = 0;
    double *X = pl_malloc(((size_t)r->n_trials * PL_N_FEATURES + 1) * sizeof *X);
    double *y = pl_malloc((r->n_trials + 1) * sizeof *y);
    for (int i = 0; i < r->n_trials; i++) {
        if (!r->trials[i].runs) continue;
        memcpy(X + (size_t)n * PL_N_FEATURES, S->F + (size_t)r->trials[i].config * PL_N_FEATURES,
               PL_N_FEATURES * sizeof *X);
        y[n++] = log(r->trials[i].latency_s);
    }
    int rc = 0;
    if (n >= 2) {
        rc = pl_gp_fit(&m->gp, X, y, n, PL_N_FEATURES, S->seed, err);
        m->ok = rc == 0;
    }
    free(X), free(y);
    return rc;
}

double surrogate_acq(const searcher *S, const surrogate *m, int k)
{
    double mu, var;
    pl_gp_predict(&m->gp, S->F + (size_t)k * PL_N_FEATURES, &mu, &var);
    /* the predictive spread of a new trial: the latent variance plus the noise the fit found
     * (trials are not exact repeats: placement searches and measurements vary) */
    double sigma = sqrt(fmax(var, 0) + m->gp.h.noise_var);
    double price_per_s = S->cat->configs[k].price_usd_per_hour / 3600;
    return pl_prob_meets(mu, sigma, S->o->slo_s) *
           pl_ei_lognormal(price_per_s, mu, sigma, m->best_cost);
}

void surrogate_free(surrogate *m)
{
    if (m->ok) pl_gp_free(&m->gp);
    m->ok = false;
}

int search_nearest_untried(const searcher *S, const double *x)
{
    int best = -1;
    double bd = INFINITY;
    for (int k = 0; k < S->cat->n; k++) {
        if (!S->cand[k] || S->tried[k]) continue;
        double d = 0;
        for (int f = 0; f < PL_N_FEATURES; f++) {
            double t = S->F[(size_t)k * PL_N_FEATURES + f] - x[f];
            d += t * t;
        }
        if (d < bd) bd = d, best = k;
    }
    return best;
}

/* The random first trials every model-based strategy starts with. */
static int initial(searcher *S, pl_err *err)
{
    int n0 = S->o->init_trials > 0 ? S->o->init_trials : DEFAULT_INIT;
    while (S->r->n_trials < n0 && search_can_go_on(S))
        if (search_trial(S, search_random_untried(S), NAN, err) < 0) return -1;
    return 0;
}

/* A proposer fills `cands` (untried configurations) for the surrogate to score. */
typedef int (*proposer)(searcher *S, int *cands);

/* One model-based step: fit, score what the proposer offers, try the best. Returns 1 when the
 * search should stop (the acquisition says nothing worthwhile is left), -1 on error. */
static int step(searcher *S, proposer propose, bool may_stop, pl_err *err)
{
    surrogate m;
    if (surrogate_fit(S, &m, err) < 0) return -1;
    if (!m.ok) return search_trial(S, search_random_untried(S), NAN, err) < 0 ? -1 : 0;
    int *cands = pl_malloc((S->cat->n + POP_CHILDREN + 1) * sizeof *cands);
    int nc = propose(S, cands), pick = -1;
    double best = -1;
    for (int i = 0; i < nc; i++) {
        double a = surrogate_acq(S, &m, cands[i]);
        if (a > best) best = a, pick = cands[i];
    }
    free(cands);
    surrogate_free(&m);
    double gain = S->o->min_gain > 0 ? S->o->min_gain : 1e-3;
    may_stop &= S->o->min_gain >= 0;
    if (may_stop && S->r->best >= 0 && best < gain * S->r->trials[S->r->best].cost_usd) {
        snprintf(S->r->stop_reason, sizeof S->r->stop_reason,
                 "expected improvement negligible (%.3g%% of the best cost)",
                 100 * best / S->r->trials[S->r->best].cost_usd);
        return 1;
    }
    if (pick < 0) pick = search_random_untried(S);
    return search_trial(S, pick, best, err) < 0 ? -1 : 0;
}

static int run(searcher *S, proposer propose, bool may_stop, pl_err *err)
{
    if (initial(S, err) < 0) return -1;
    while (search_can_go_on(S)) {
        int rc = step(S, propose, may_stop, err);
        if (rc != 0) return rc < 0 ? -1 : 0;
    }
    return 0;
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
    return run(S, every_untried, true, err);
}

/* ---- GA and DE: the population is the trials that ran, children are snapped to the nearest
 * untried configuration, and the fittest child (highest acquisition) is tried. ---- */

static double uniform01(searcher *S)
{
    return rand_r(&S->seed) / (RAND_MAX + 1.0);
}

/* Measured quality of a trial for parent selection: its cost, or worse than any cost when
 * it misses the SLO or does not run. */
static double badness(const pl_trial_record *t)
{
    return t->meets_slo ? t->cost_usd : t->runs ? 1e6 + t->latency_s : 1e12;
}

static int population(const searcher *S, int *pop)
{
    int n = 0;
    for (int i = 0; i < S->r->n_trials; i++)
        pop[n++] = i;
    return n;
}

static const double *feat(const searcher *S, int trial)
{
    return S->F + (size_t)S->r->trials[trial].config * PL_N_FEATURES;
}

static int tournament(searcher *S, const int *pop, int n)
{
    int a = pop[rand_r(&S->seed) % n], b = pop[rand_r(&S->seed) % n];
    return badness(&S->r->trials[a]) <= badness(&S->r->trials[b]) ? a : b;
}

/* Adds the configuration nearest x to cands unless it is already there. */
static void add_snapped(const searcher *S, const double *x, int *cands, int *n)
{
    int k = search_nearest_untried(S, x);
    for (int i = 0; k >= 0 && i < *n; i++)
        if (cands[i] == k) return;
    if (k >= 0) cands[(*n)++] = k;
}

/* GA: tournament parents, uniform crossover, mutation of each gene with probability 1/d to a
 * random value. */
static int ga_children(searcher *S, int *cands)
{
    int *pop = pl_malloc((S->r->n_trials + 1) * sizeof *pop), np = population(S, pop), n = 0;
    for (int c = 0; c < POP_CHILDREN && np > 0; c++) {
        const double *a = feat(S, tournament(S, pop, np)), *b = feat(S, tournament(S, pop, np));
        double x[PL_N_FEATURES];
        for (int f = 0; f < PL_N_FEATURES; f++) {
            x[f] = uniform01(S) < 0.5 ? a[f] : b[f];
            if (uniform01(S) < 1.0 / PL_N_FEATURES) x[f] = uniform01(S);
        }
        add_snapped(S, x, cands, &n);
    }
    free(pop);
    return n;
}

int search_ga(searcher *S, pl_err *err)
{
    return run(S, ga_children, false, err);
}

/* DE/rand/1/bin: mutant a + F (b − c), binomial crossover with a target, F = 0.8, CR = 0.9. */
static int de_children(searcher *S, int *cands)
{
    int *pop = pl_malloc((S->r->n_trials + 1) * sizeof *pop), np = population(S, pop), n = 0;
    for (int c = 0; c < POP_CHILDREN && np >= 3; c++) {
        const double *t = feat(S, pop[c % np]), *a = feat(S, pop[rand_r(&S->seed) % np]),
                     *b = feat(S, pop[rand_r(&S->seed) % np]),
                     *d = feat(S, pop[rand_r(&S->seed) % np]);
        int keep = rand_r(&S->seed) % PL_N_FEATURES;
        double x[PL_N_FEATURES];
        for (int f = 0; f < PL_N_FEATURES; f++)
            x[f] = f == keep || uniform01(S) < 0.9 ? a[f] + 0.8 * (b[f] - d[f]) : t[f];
        add_snapped(S, x, cands, &n);
    }
    free(pop);
    return n;
}

int search_de(searcher *S, pl_err *err)
{
    if (S->o->init_trials <= 0) { /* DE needs three vectors to mutate */
        pl_search_opts o = *S->o;
        o.init_trials = 3;
        const pl_search_opts *saved = S->o;
        S->o = &o;
        int rc = run(S, de_children, false, err);
        S->o = saved;
        return rc;
    }
    return run(S, de_children, false, err);
}
