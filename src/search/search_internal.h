/* search_internal.h: the state every strategy shares (private to src/search). */
#ifndef PLACER_SEARCH_INTERNAL_H
#define PLACER_SEARCH_INTERNAL_H

#include "placer/search.h"

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
} searcher;

/* Runs configuration `k` as the next trial (acquisition `acq`, NAN if none). */
int search_trial(searcher *S, int k, double acq, pl_err *err);
/* Whether the budget (trials, seconds) allows another trial and a candidate is left; sets the
 * stop reason when not. */
bool search_can_go_on(searcher *S);
/* An untried candidate drawn uniformly, or -1. */
int search_random_untried(searcher *S);
/* The cost of a request on configuration k at latency t: USD/hour / 3600 × t. */
double search_cost(const searcher *S, int k, double latency_s);

/* The strategies that use the surrogate (bo.c). */
int search_bo(searcher *S, pl_err *err);
int search_ga(searcher *S, pl_err *err);
int search_de(searcher *S, pl_err *err);

#endif
