/* strategy.c: the search loop every strategy shares, the strategies that need no model:
 * exhaustive (the oracle), lcf (lowest price first) and uniform (random order), and the
 * answer's margin against the trials' bands. docs/search.md. */
#include "search_internal.h"

#include "placer/dist.h"

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
    *t = (pl_trial_record){.config = k,
                           .runs = out->runs,
                           .latency_s = out->latency_s,
                           .acquisition = acq,
                           .band = out->band,
                           .basis = out->basis};
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

/* ---- rounds (docs/search.md "Rounds and batches") ---- */

/* What a trial sends back to every rank: fixed size, no pointers (its plan stays on the rank
 * that made it; share_plan sends the answer's at the end of the round that found it). */
typedef struct trial_summary {
    int config, runs, failed, rank;
    double latency_s, work_s, band;
    int basis;
    char algo[32];
    char why[PL_ERR_MAX]; /* why it does not run, or the worker's error when failed */
} trial_summary;

typedef struct round_job {
    searcher *S;
    pl_plan **plans; /* the plans of the round's trials this rank ran, by item */
} round_job;

void search_round_begin(searcher *S)
{
    S->round->n = S->round->end = 0;
    S->round->why[0] = 0;
}

int search_round_room(const searcher *S)
{
    int room = S->batch - S->round->n;
    if (S->n_left < room) room = S->n_left; /* n_left already counts the proposed ones */
    int budget = S->o->budget_trials;
    if (budget > 0 && budget - S->r->n_trials - S->round->n < room)
        room = budget - S->r->n_trials - S->round->n;
    return room > 0 ? room : 0;
}

void search_propose(searcher *S, int k, double acq)
{
    search_round *R = S->round;
    PL_ASSERT(k >= 0 && k < S->cat->n && !S->tried[k] && R->n < S->batch);
    R->k[R->n] = k, R->acq[R->n++] = acq;
    S->tried[k] = true, S->n_left--;
}

void search_round_fail(searcher *S, const pl_err *err)
{
    S->round->end = -1;
    snprintf(S->round->why, sizeof S->round->why, "%s", err->msg);
}

static void mark_round(searcher *S, bool tried)
{
    for (int i = 0; i < S->round->n; i++)
        S->tried[S->round->k[i]] = tried, S->n_left += tried ? -1 : 1;
}

/* Every rank takes rank 0's round (its proposals, its clock's verdict on the time budget):
 * proposals depend on floating point, which need not agree to the last bit across machines. */
static int agree_on_round(searcher *S, pl_err *err)
{
    search_round *R = S->round;
    if (R->n == 0 && R->end == 0)
        R->end = 1, snprintf(R->why, sizeof R->why, "%s", S->r->stop_reason);
    if (pl_dist_size() > 1) {
        mark_round(S, false);
        if (pl_dist_bcast(R, sizeof *R, 0) < 0)
            return pl_err_set(err, "search: the ranks could not agree on a round (MPI: %s)",
                              pl_dist_error());
        mark_round(S, true);
    }
    if (R->end > 0)
        snprintf(S->r->stop_reason, sizeof S->r->stop_reason, "%.*s",
                 (int)sizeof S->r->stop_reason - 1, R->why);
    if (R->end < 0) return pl_err_set(err, "%s", R->why);
    return R->end;
}

static void run_item(int i, void *out, void *user)
{
    round_job *j = user;
    searcher *S = j->S;
    trial_summary *t = out;
    memset(t, 0, sizeof *t);
    t->config = S->round->k[i];
    t->rank = pl_dist_rank();
    pl_trial_out o = {.latency_s = INFINITY}; /* freed below even if the worker fails */
    pl_err err = {""};
    long before = S->w->trials;
    double t0 = pl_now();
    if (pl_trial_run(S->w, S->cat->configs[t->config].cluster, &o, &err) < 0) {
        pl_plan_free(o.plan);
        t->failed = 1;
        snprintf(t->why, sizeof t->why, "%s", err.msg);
        return;
    }
    t->work_s = S->w->trials > before ? pl_now() - t0 : 0;
    t->runs = o.runs, t->latency_s = o.latency_s;
    t->band = o.band, t->basis = (int)o.basis;
    snprintf(t->algo, sizeof t->algo, "%s", o.algo);
    snprintf(t->why, sizeof t->why, "%s", o.why);
    j->plans[i] = o.plan;
}

/* Records trial i of the round (its plan, when this rank made it, in plan). */
static void record_item(searcher *S, int i, const trial_summary *t, pl_plan *plan)
{
    pl_trial_out out = {.runs = t->runs,
                        .latency_s = t->latency_s,
                        .plan = plan,
                        .band = t->band,
                        .basis = (pl_cost_basis)t->basis};
    snprintf(out.algo, sizeof out.algo, "%s", t->algo);
    snprintf(out.why, sizeof out.why, "%.*s", (int)sizeof out.why - 1, t->why);
    record(S, t->config, S->round->acq[i], &out);
    pl_trial_record *x = &S->r->trials[S->r->n_trials - 1];
    x->work_s = t->work_s, x->round = S->r->n_rounds, x->rank = t->rank;
    snprintf(x->host, sizeof x->host, "%s", pl_dist_host(t->rank));
    if (S->progress) S->progress(S->ctx, S->r, S->n_cand);
}

/* Under mpirun, the plan of the answer so far (the best trial's, else the closest's) is on the
 * rank that ran it: sent from there to every rank, once per answer. It is sent at the end of
 * the round that found it, not at the end of the search: the rank that holds it may die
 * later (mpirun --enable-recovery), and its plan with it. */
static int share_plan(searcher *S, pl_err *err)
{
    pl_search_result *r = S->r;
    int idx = r->best >= 0 ? r->best : r->closest;
    if (pl_dist_size() == 1 || idx < 0 || idx == S->shared || !r->trials[idx].runs) return 0;
    int owner = r->trials[idx].rank;
    void *buf = NULL;
    uint64_t len = 0;
    if (pl_dist_rank() == owner) {
        size_t n = 0;
        buf = r->best_plan ? pl_plan_pack(r->best_plan, &n) : NULL;
        len = n;
    }
    int rc = pl_dist_bcast(&len, sizeof len, owner);
    if (rc == 0 && pl_dist_rank() != owner) buf = pl_malloc(len ? len : 1);
    if (rc == 0 && len) rc = pl_dist_bcast(buf, len, owner);
    if (rc == 0 && pl_dist_rank() != owner) {
        pl_plan_free(r->best_plan);
        r->best_plan = len ? pl_plan_unpack(buf, len) : NULL;
    }
    free(buf);
    if (rc < 0)
        return pl_err_set(err, "search: the chosen plan could not be sent (MPI: %s)",
                          pl_dist_error());
    if (!r->best_plan) return pl_err_set(err, "search: rank %d sent no plan", owner);
    S->shared = idx;
    return 0;
}

int search_round_run(searcher *S, pl_err *err)
{
    int rc = agree_on_round(S, err);
    if (rc) return rc;
    int n = S->round->n;
    trial_summary *sum = pl_calloc(n, sizeof *sum);
    round_job job = {S, pl_calloc(n, sizeof *job.plans)};
    if (pl_dist_map(n, run_item, sum, sizeof *sum, &job) < 0)
        rc = pl_err_set(err, "search: a round's results could not be gathered (MPI: %s)",
                        pl_dist_error());
    S->r->n_rounds += rc == 0;
    for (int i = 0; i < n; i++) {
        if (rc == 0 && sum[i].failed) {
            rc = pl_dist_size() > 1 ? pl_err_set(err, "rank %d (%s): %s", sum[i].rank,
                                                 pl_dist_host(sum[i].rank), sum[i].why)
                                    : pl_err_set(err, "%s", sum[i].why);
        }
        if (rc == 0)
            record_item(S, i, &sum[i], job.plans[i]);
        else
            pl_plan_free(job.plans[i]);
    }
    free(sum), free(job.plans);
    if (rc == 0) rc = share_plan(S, err);
    return rc;
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

/* The order's untried configurations, a round at a time (a configuration another rank's
 * round already took is skipped: rank 0's rounds are the ones run). */
static int run_order(searcher *S, const int *order, int n, bool stop_at_first_feasible, pl_err *err)
{
    for (int i = 0;;) {
        search_round_begin(S);
        if (search_can_go_on(S)) /* names why the order ran out when it did */
            for (; i < n && search_round_room(S) > 0; i++)
                if (!S->tried[order[i]]) search_propose(S, order[i], NAN);
        int rc = search_round_run(S, err);
        if (rc) return rc < 0 ? -1 : 0;
        if (stop_at_first_feasible && S->r->best >= 0) {
            snprintf(S->r->stop_reason, sizeof S->r->stop_reason,
                     "the cheapest-priced configuration meeting the SLO found");
            return 0;
        }
    }
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
    S->batch = o->batch > 0 ? o->batch : pl_dist_size();
    if (S->batch > PL_SEARCH_MAX_BATCH) S->batch = PL_SEARCH_MAX_BATCH;
    S->round = pl_calloc(1, sizeof *S->round);
}

/* Starts the worker on every rank; when one fails, every rank fails with its message. */
typedef struct start_status {
    pl_err err;
} start_status;

static void start_item(int i, void *out, void *user)
{
    (void)i; /* item i runs on rank i: it starts this rank's worker */
    start_status *st = out;
    memset(st, 0, sizeof *st);
    if (pl_trial_start(user, &st->err) < 0 && !st->err.msg[0])
        snprintf(st->err.msg, sizeof st->err.msg, "the trial worker failed to start");
}

static int start_everywhere(pl_trial_worker *w, pl_err *err)
{
    int n = pl_dist_size(); /* item i runs on rank i */
    start_status *got = pl_calloc(n, sizeof *got);
    int rc = pl_dist_map(n, start_item, got, sizeof *got, w);
    if (rc < 0)
        pl_err_set(err, "search: the workers' start could not be gathered (MPI: %s)",
                   pl_dist_error());
    for (int i = 0; rc == 0 && i < n; i++)
        if (got[i].err.msg[0])
            rc = n > 1 ? pl_err_set(err, "rank %d (%s): %s", i, pl_dist_host(i), got[i].err.msg)
                       : pl_err_set(err, "%s", got[i].err.msg);
    free(got);
    return rc;
}

int pl_search_run(const pl_catalog *cat, pl_trial_worker *w, const pl_search_opts *o,
                  pl_search_progress progress, void *ctx, pl_search_result *r, pl_err *err)
{
    *r = (pl_search_result){.best = -1, .closest = -1};
    if (!(o->slo_s > 0)) return pl_err_set(err, "search: the SLO must be a positive time");
    searcher S = {
        .cat = cat, .w = w, .o = o, .r = r, .progress = progress, .ctx = ctx, .shared = -1};
    searcher_init(&S, cat, o);
    int rc = 0;
    if (S.n_cand == 0)
        rc = pl_err_set(err, "search: the catalogue has no configuration to try (all retired?)");
    else if (start_everywhere(w, err) < 0)
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
    r->batch = S.batch, r->ranks = pl_dist_size();
    r->total_s = pl_now() - S.t0;
    free(S.cand), free(S.tried), free(S.F), free(S.capability), free(S.round);
    return rc;
}

void pl_search_result_free(pl_search_result *r)
{
    free(r->trials);
    pl_plan_free(r->best_plan);
    *r = (pl_search_result){.best = -1, .closest = -1};
}

/* ---- the answer's margin (docs/cost.md, "Uncertainty") ---- */

double pl_trial_latency_high(const pl_trial_record *t)
{
    return t->runs ? t->latency_s * (1 + t->band) : INFINITY;
}

int pl_search_with_margin(const pl_search_result *r, double slo_s)
{
    int best = -1;
    for (int i = 0; i < r->n_trials; i++) {
        const pl_trial_record *t = &r->trials[i];
        if (!(pl_trial_latency_high(t) <= slo_s)) continue;
        if (best < 0 || t->cost_usd < r->trials[best].cost_usd) best = i;
    }
    return best;
}
