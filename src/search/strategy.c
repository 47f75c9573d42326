/* strategy.c: the search loop every strategy shares, and the strategies that need no model:
 * exhaustive (the oracle), lcf (lowest price first) and uniform (random order). docs/search.md. */
#include "search_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[PL_SEARCH_COUNT] = {"bo", "lcf", "uniform",
                                                   "ga", "de",  "exhaustive"};

const char *pl_search_strategy_name(pl_search_strategy s)
{
    return s >= 0 && s < PL_SEARCH_COUNT ? NAMES[s] : "?";
}

int pl_search_strategy_parse(const char *s, pl_search_strategy *out)
{
    for (int i = 0; s && i < PL_SEARCH_COUNT; i++)
        if (!strcmp(s, NAMES[i])) return *out = (pl_search_strategy)i, 0;
    return -1;
}

double search_cost(const searcher *S, int k, double latency_s)
{
    return S->cat->configs[k].price_usd_per_hour / 3600.0 * latency_s;
}

/* The plan kept is the best's, or while there is none, the closest's. */
static void keep_plan(pl_search_result *r, pl_trial_out *out, bool take)
{
    if (take) {
        pl_plan_free(r->best_plan);
        r->best_plan = out->plan, out->plan = NULL;
    }
    pl_plan_free(out->plan);
}

static void record(searcher *S, int k, double acq, pl_trial_out *out)
{
    pl_search_result *r = S->r;
    pl_grow((void **)&r->trials, &S->cap, r->n_trials, sizeof *r->trials);
    int i = r->n_trials++;
    pl_trial_record *t = &r->trials[i];
    *t = (pl_trial_record){
        .config = k, .runs = out->runs, .latency_s = out->latency_s, .acquisition = acq};
    t->cost_usd = out->runs ? search_cost(S, k, out->latency_s) : INFINITY;
    t->meets_slo = out->runs && out->latency_s <= S->o->slo_s;
    snprintf(t->algo, sizeof t->algo, "%s", out->algo);
    snprintf(t->why, sizeof t->why, "%s", out->why);
    bool take = false;
    if (t->meets_slo && (r->best < 0 || t->cost_usd < r->trials[r->best].cost_usd))
        r->best = i, take = true;
    if (t->runs && (r->closest < 0 || t->latency_s < r->trials[r->closest].latency_s)) {
        r->closest = i;
        take |= r->best < 0;
    }
    keep_plan(r, out, take);
}

int search_trial(searcher *S, int k, double acq, pl_err *err)
{
    pl_trial_out out = {.latency_s = INFINITY}; /* freed below even if the worker fails */
    long before = S->w->trials;
    double t0 = pl_now();
    if (pl_trial_run(S->w, S->cat->configs[k].cluster, &out, err) < 0) {
        pl_plan_free(out.plan);
        return -1;
    }
    S->tried[k] = true, S->n_left--;
    record(S, k, acq, &out);
    S->r->trials[S->r->n_trials - 1].work_s = S->w->trials > before ? pl_now() - t0 : 0;
    if (S->progress) S->progress(S->ctx, S->r, S->n_cand);
    return 0;
}

bool search_can_go_on(searcher *S)
{
    const pl_search_opts *o = S->o;
    const char *why = NULL;
    if (S->n_left == 0)
        why = "every configuration tried";
    else if (o->budget_trials > 0 && S->r->n_trials >= o->budget_trials)
        why = "trial budget spent";
    else if (o->budget_s > 0 && pl_now() - S->t0 >= o->budget_s)
        why = "time budget spent";
    if (why) snprintf(S->r->stop_reason, sizeof S->r->stop_reason, "%s", why);
    return !why;
}

int search_random_untried(searcher *S)
{
    if (S->n_left == 0) return -1;
    int pick = pl_rng_below(&S->rng, S->n_left);
    for (int k = 0; k < S->cat->n; k++)
        if (S->cand[k] && !S->tried[k] && pick-- == 0) return k;
    return -1;
}

static int run_order(searcher *S, const int *order, int n, bool stop_at_first_feasible, pl_err *err)
{
    for (int i = 0; i < n && search_can_go_on(S); i++) {
        if (search_trial(S, order[i], NAN, err) < 0) return -1;
        if (stop_at_first_feasible && S->r->best >= 0) {
            snprintf(S->r->stop_reason, sizeof S->r->stop_reason,
                     "the cheapest-priced configuration meeting the SLO found");
            return 0;
        }
    }
    search_can_go_on(S); /* names why the order ran out */
    return 0;
}

static int by_price(const void *a, const void *b, void *cat)
{
    const pl_vm_config *c = ((const pl_catalog *)cat)->configs;
    double pa = c[*(const int *)a].price_usd_per_hour, pb = c[*(const int *)b].price_usd_per_hour;
    return pa < pb ? -1 : pa > pb ? 1 : *(const int *)a - *(const int *)b;
}

/* exhaustive: catalogue order; lcf: ascending price (the paper's LCF stops at the first
 * configuration meeting the SLO: it cannot know cost without trying); uniform: a seeded
 * random order until the budget ends. */
static int search_simple(searcher *S, pl_err *err)
{
    int *order = pl_malloc((S->cat->n + 1) * sizeof *order), n = 0;
    for (int k = 0; k < S->cat->n; k++)
        if (S->cand[k]) order[n++] = k;
    pl_search_strategy st = S->o->strategy;
    if (st == PL_SEARCH_LCF && n > 0) qsort_r(order, n, sizeof *order, by_price, (void *)S->cat);
    for (int i = n - 1; st == PL_SEARCH_UNIFORM && i > 0; i--) {
        int j = pl_rng_below(&S->rng, i + 1), t = order[i];
        order[i] = order[j], order[j] = t;
    }
    int rc = run_order(S, order, n, st == PL_SEARCH_LCF, err);
    free(order);
    return rc;
}

static void searcher_init(searcher *S, const pl_catalog *cat, const pl_search_opts *o)
{
    S->cand = pl_calloc(cat->n + 1, sizeof *S->cand);
    S->tried = pl_calloc(cat->n + 1, sizeof *S->tried);
    for (int k = 0; k < cat->n; k++)
        S->cand[k] = o->include_retired || !cat->configs[k].retired, S->n_cand += S->cand[k];
    S->n_left = S->n_cand;
    S->F = pl_malloc(((size_t)cat->n * PL_N_FEATURES + 1) * sizeof *S->F);
    pl_catalog_features(cat, S->F);
    /* a configuration's capability: the mean of its normalised log features (bo.c's trend),
     * computed once rather than for every candidate at every step */
    S->capability = pl_calloc(cat->n + 1, sizeof *S->capability);
    for (int k = 0; k < cat->n; k++) {
        for (int f = 0; f < PL_N_FEATURES; f++)
            S->capability[k] += S->F[(size_t)k * PL_N_FEATURES + f];
        S->capability[k] /= PL_N_FEATURES;
    }
    S->seed = o->seed ? o->seed : 1;
    S->rng = S->seed;
    S->t0 = pl_now();
}

int pl_search_run(const pl_catalog *cat, pl_trial_worker *w, const pl_search_opts *o,
                  pl_search_progress progress, void *ctx, pl_search_result *r, pl_err *err)
{
    *r = (pl_search_result){.best = -1, .closest = -1};
    if (!(o->slo_s > 0)) return pl_err_set(err, "search: the SLO must be a positive time");
    searcher S = {.cat = cat, .w = w, .o = o, .r = r, .progress = progress, .ctx = ctx};
    searcher_init(&S, cat, o);
    int rc = 0;
    if (S.n_cand == 0)
        rc = pl_err_set(err, "search: the catalogue has no configuration to try (all retired?)");
    else if (pl_trial_start(w, err) < 0)
        rc = -1;
    else if (o->strategy == PL_SEARCH_BO)
        rc = search_bo(&S, err);
    else if (o->strategy == PL_SEARCH_GA)
        rc = search_ga(&S, err);
    else if (o->strategy == PL_SEARCH_DE)
        rc = search_de(&S, err);
    else
        rc = search_simple(&S, err);
    r->startup_s = w->startup_s;
    r->n_candidates = S.n_cand;
    r->total_s = pl_now() - S.t0;
    free(S.cand), free(S.tried), free(S.F), free(S.capability);
    return rc;
}

void pl_search_result_free(pl_search_result *r)
{
    free(r->trials);
    pl_plan_free(r->best_plan);
    *r = (pl_search_result){.best = -1, .closest = -1};
}
