/* search.h: the cloud-configuration search (AutoDeep §IV-A): Gaussian-process regression,
 * the constrained expected-improvement acquisition, and the strategies that use them.
 *
 * The GP models the log of the inference time over the catalogue's normalised features
 * (pl_catalog_features), with a constant mean, a Matérn 5/2 kernel with one length scale per
 * feature, and Gaussian noise; hyper-parameters maximise the log marginal likelihood;
 * factorisations go through LAPACKE (docs/search.md). */
#ifndef PLACER_SEARCH_H
#define PLACER_SEARCH_H

#include "placer/catalog.h"
#include "placer/trial.h"

/* ---- Gaussian process ---- */

typedef struct pl_gp_hyper {
    double length[PL_N_FEATURES]; /* per-feature length scales (only the first d are used) */
    double signal_var;            /* kernel amplitude σf² */
    double noise_var;             /* σn² */
} pl_gp_hyper;

typedef struct pl_gp {
    int n, d;
    double *X;   /* n × d, row-major */
    double mean; /* constant prior mean (the mean of y) */
    pl_gp_hyper h;
    double *L;     /* lower Cholesky factor of K + σn² I, n × n column-major (LAPACK) */
    double *alpha; /* (K + σn² I)^-1 (y - mean) */
} pl_gp;

/* Matérn 5/2: σf² (1 + √5 r + 5r²/3) exp(−√5 r), r² = Σ_i ((a_i − b_i) / l_i)². */
double pl_matern52(const double *a, const double *b, int d, const pl_gp_hyper *h);

/* Conditions on (X, y) with given hyper-parameters; *gp is overwritten (free a previous one
 * first). When the Cholesky factorisation fails (near-duplicate points, little noise) it
 * retries with jitter σf² × 1e-10 … 1e-2 added to σn², and gp->h.noise_var records the noise
 * used. -1 (err set) when even that fails, n < 1, d is not 1..PL_N_FEATURES, an input is not
 * finite or a hyper-parameter is out of range (lengths, σf² > 0, σn² >= 0). */
int pl_gp_condition(pl_gp *gp, const double *X, const double *y, int n, int d, const pl_gp_hyper *h,
                    pl_err *err);
/* Chooses the hyper-parameters by maximising the log marginal likelihood (several starts,
 * bounded, gradient ascent on the logs of the parameters), then conditions. */
int pl_gp_fit(pl_gp *gp, const double *X, const double *y, int n, int d, unsigned seed,
              pl_err *err);
/* The scale the fit's bounds and starts are relative to: the population variance of y,
 * floored at 1e-2 (a 10% spread of the time: a few equal latencies must not make the GP
 * certain), or 1 when n < 2. */
double pl_gp_y_scale(const double *y, int n);
/* Posterior mean and variance of the latent function at x (d entries); var >= 0. */
void pl_gp_predict(const pl_gp *gp, const double *x, double *mean, double *var);
/* log p(y | X, h) with the constant mean of y subtracted; grad (may be NULL) receives its
 * derivatives w.r.t. log l_1..log l_d, log σf², log σn² (d + 2 entries). NAN when K + σn² I
 * is not positive definite. */
double pl_gp_log_marginal(const double *X, const double *y, int n, int d, const pl_gp_hyper *h,
                          double *grad);
void pl_gp_free(pl_gp *gp);

/* ---- acquisition (minimisation) ---- */

/* Expected improvement (Jones et al.) for a cost c = price · exp(Z), Z ~ N(mu, sigma²) (the GP
 * is on log time): E[max(0, best − c)], in closed form (docs/search.md). */
double pl_ei_lognormal(double price, double mu, double sigma, double best);
/* P(exp(Z) <= limit) for Z ~ N(mu, sigma²): the probability of meeting the SLO (eq. 6). */
double pl_prob_meets(double mu, double sigma, double limit);

/* ---- strategies ---- */

typedef enum {
    PL_SEARCH_BO,         /* GP + constrained EI (AutoDeep) */
    PL_SEARCH_LCF,        /* lowest cost (price) first, until the SLO is met */
    PL_SEARCH_UNIFORM,    /* uniformly random order */
    PL_SEARCH_GA,         /* genetic algorithm, fitness = the acquisition (as the paper) */
    PL_SEARCH_DE,         /* differential evolution, fitness = the acquisition */
    PL_SEARCH_EXHAUSTIVE, /* every configuration: the oracle */
    PL_SEARCH_COUNT
} pl_search_strategy;
const char *pl_search_strategy_name(pl_search_strategy s);            /* "bo", "lcf", ... */
int pl_search_strategy_parse(const char *s, pl_search_strategy *out); /* -1 when unknown */

typedef struct pl_search_opts {
    pl_search_strategy strategy;
    double slo_s;      /* the latency SLO, seconds (> 0) */
    int budget_trials; /* 0: no limit on trials (but see budget_s) */
    double budget_s;   /* 0: no limit on search seconds (constraint 2f) */
    unsigned seed;
    double stop_prob;     /* bo stops early once no untried configuration is, with probability
                             stop_prob or more under the surrogate (its spread floored), both
                             within the SLO and cheaper than the best found (docs/search.md;
                             0: the default, 0.01; negative: never, run the budget) */
    int init_trials;      /* bo/ga/de: random trials before the model is used (0: default 2) */
    bool include_retired; /* consider configurations marked retired */
    /* Trials per round (docs/search.md "Rounds and batches"; 0: the pool's size, pl_dist_size,
     * so one process runs one trial per round, the sequential search; at most
     * PL_SEARCH_MAX_BATCH). A round's trials run one per rank under mpirun, one after the other
     * in one process; bo, ga and de propose a round's configurations together (the Kriging
     * believer, bo.c). */
    int batch;
} pl_search_opts;
enum { PL_SEARCH_MAX_BATCH = 1024 };

typedef struct pl_trial_record {
    int config;       /* index in the catalogue */
    bool runs;        /* the model fits and a plan was found */
    double latency_s; /* the best plan's predicted (or measured) latency; INFINITY if !runs */
    double cost_usd;  /* per request: price / 3600 × latency */
    bool meets_slo;
    double work_s;      /* the trial's own time (placement search or measurement) */
    double acquisition; /* the strategy's score when it chose this trial (NAN if none) */
    char algo[32];      /* the placement algorithm whose plan won */
    char why[256];      /* why it does not run, when !runs */
    int round;          /* the round it ran in, from 1 */
    int rank;           /* the rank that ran it (0 in one process), on host `host` */
    char host[64];
    double band;         /* pl_trial_out.band: latency_s may be off by this much, relative */
    pl_cost_basis basis; /* pl_trial_out.basis */
} pl_trial_record;

/* The top of the trial's band: latency_s · (1 + band) (INFINITY when it does not run). */
double pl_trial_latency_high(const pl_trial_record *t);

typedef struct pl_search_result {
    pl_trial_record *trials; /* in the order tried */
    int n_trials;
    int best;           /* index into trials of the cheapest that meets the SLO, or -1 */
    int closest;        /* when best < 0: the trial with the lowest latency that runs, or -1 */
    pl_plan *best_plan; /* the plan of trials[best] (or of closest), owned by the result */
    int n_candidates;   /* configurations the strategy could try (retired left out) */
    int n_rounds;       /* rounds run (each at most `batch` trials) */
    int batch;          /* trials per round in force */
    int ranks;          /* the pool's size (pl_dist_size) */
    double startup_s;   /* the worker's start-up, paid once */
    double total_s;     /* the whole search */
    char stop_reason[96];
} pl_search_result;

/* Runs a strategy over the catalogue, each trial through `w`. `progress`, when not NULL, is
 * called after each trial (for the CLI's stderr line).
 *
 * Under mpirun every rank calls it with the same arguments (w its own worker): the trials of a
 * round run one per rank (pl_dist_map) and their records are gathered to every rank in round
 * order, so every rank holds the same result; rank 0's proposals and its clock (the time
 * budget) are the ones every rank follows. The best plan is sent from the rank that made it
 * to all. For a given seed, rank count and batch the answer is the same run to run (when the
 * trials are: moirai's time limit is not), and the trials are those of one process with the
 * same batch. A worker failure on any rank fails the search on every rank, with its message.
 * *r is the caller's, freed by pl_search_result_free (best and closest -1 at entry); on
 * failure it still holds the trials run before the failure (and their best plan, if any), to
 * be freed the same way. */
typedef void (*pl_search_progress)(void *ctx, const pl_search_result *r, int n_candidates);
int pl_search_run(const pl_catalog *cat, pl_trial_worker *w, const pl_search_opts *o,
                  pl_search_progress progress, void *ctx, pl_search_result *r, pl_err *err);
void pl_search_result_free(pl_search_result *r);
/* The cheapest trial (cost_usd) whose latency meets slo_s even at the top of its band
 * (pl_trial_latency_high <= slo_s), or -1 when none of r's trials does. `deploy` names it when
 * its answer meets the SLO only within its band (docs/cost.md, "Uncertainty"). */
int pl_search_with_margin(const pl_search_result *r, double slo_s);

#endif
