/* search_internal.h: the state every strategy shares (private to src/search). */
#ifndef PLACER_SEARCH_INTERNAL_H
#define PLACER_SEARCH_INTERNAL_H

#include "placer/search.h"

/* A round of trials (docs/search.md "Rounds and batches"): what a strategy proposes, up to
 * the batch size, each with its acquisition. Rank 0's round is the one every rank runs, so it
 * travels whole (fixed size, no pointers). */
typedef struct search_round {
    int n;
    int k[PL_SEARCH_MAX_BATCH];
    double acq[PL_SEARCH_MAX_BATCH];
    int end; /* 0: run the n trials; 1: the search ends (why: the reason); -1: it failed (why) */
    char why[PL_ERR_MAX];
} search_round;

typedef struct searcher {
    const pl_catalog *cat;
    pl_trial_worker *w;
    const pl_search_opts *o;
    pl_search_result *r;
    pl_search_progress progress;
    void *ctx;
    bool *cand;  /* configuration may be tried (not retired, unless asked) */
    bool *tried; /* never proposed twice */
    int n_cand, n_left, cap;
    double *F;          /* pl_catalog_features, n × PL_N_FEATURES */
    double *capability; /* per configuration, the mean of its row of F (the surrogate's trend) */
    double t0;
    unsigned seed; /* the search's seed: the GP fits' (a fit depends only on its data and it) */
    uint64_t rng;  /* the random draws (pl_rng_*), seeded from it */
    int batch;     /* trials per round */
    search_round *round; /* the round being proposed; its configurations count as tried */
    int shared;          /* the trial whose plan every rank holds (share_plan), or -1 */
} searcher;

/* A strategy's loop: search_round_begin, then (while search_can_go_on) search_propose until
 * search_round_room is 0 or nothing is left to propose, then search_round_run. A proposed
 * configuration counts as tried (and is never proposed again) from then on. */
void search_round_begin(searcher *S);
int search_round_room(const searcher *S); /* how many more this round may take */
void search_propose(searcher *S, int k, double acq);
/* The round failed while being proposed (err's message goes to every rank). */
void search_round_fail(searcher *S, const pl_err *err);
/* Runs rank 0's round: its trials one per rank (pl_dist_map), their records gathered to every
 * rank in the round's order. 0 when the search goes on; 1 when the round was empty or ended
 * (the stop reason set); -1 when it or a trial failed (err set, the same on every rank). */
int search_round_run(searcher *S, pl_err *err);
/* Whether the budget (trials, seconds) allows another trial and a candidate is left; sets the
 * stop reason when not. */
bool search_can_go_on(searcher *S);
/* An untried (and not proposed) candidate drawn uniformly, or -1. */
int search_random_untried(searcher *S);
/* The cost of a request on configuration k at latency t: USD/hour / 3600 × t. */
double search_cost(const searcher *S, int k, double latency_s);

/* The strategies that use the surrogate (bo.c). */
int search_bo(searcher *S, pl_err *err);
int search_ga(searcher *S, pl_err *err);
int search_de(searcher *S, pl_err *err);

#endif
