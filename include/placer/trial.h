/* trial.h: trial workers: what the configuration search calls to learn how fast a model runs
 * on one configuration (AutoDeep's trials, docs/search.md).
 *
 * A worker is started once and then runs many trials: AutoDeep's "probing-informed block
 * multiplexing" keeps one persistent process so that start-up (loading the model, building
 * what does not depend on the configuration) is paid once per search, not once per trial.
 * The simulator worker is in-process: it places the model on the configuration's cluster and
 * simulates the plan (what `placer deploy` uses). The ort worker measures the whole model on
 * this machine's CPU, whatever the configuration (pl_trial_ort_new).
 *
 * Semantics, exactly: a configuration that cannot run the model is a successful trial with
 * runs = false and its reason in `why`; -1 is a failure of the worker itself.
 * Ownership and failure: the constructors return a worker the caller frees with
 * pl_trial_worker_free (which stops it). pl_trial_run sets *out before anything can fail
 * (runs false, latency INFINITY, plan NULL); out->plan is then the caller's to free on every
 * return, success or not. */
#ifndef PLACER_TRIAL_H
#define PLACER_TRIAL_H

#include "placer/place.h"

typedef struct pl_trial_out {
    bool runs;        /* a plan that fits was found */
    double latency_s; /* its predicted (or measured) latency; INFINITY when !runs */
    pl_plan *plan;    /* the plan (caller frees); NULL when !runs */
    char algo[32];    /* the algorithm whose plan won */
    char why[256];    /* when !runs: why (e.g. "needs 97 MiB, the largest device has 6 GiB") */
    /* How far latency_s may be off, relative (cost.h, "how far a prediction may be off"): the
     * plan's band on the configuration's cost table (pl_cost_plan_band) and the basis of its
     * widest op; a measured latency is PL_BAND_PROFILED, "profiled"; a table worker's 0,
     * "given". */
    double band;
    pl_cost_basis basis;
} pl_trial_out;

typedef struct pl_trial_worker pl_trial_worker;
typedef struct pl_trial_worker_ops {
    const char *name; /* "sim" */
    int (*start)(pl_trial_worker *w, pl_err *err);
    /* One trial on `c` (a finalized cluster with its price). -1 only for a worker failure;
     * a configuration that cannot run the model is a successful trial with runs = false. */
    int (*trial)(pl_trial_worker *w, const pl_cluster *c, pl_trial_out *out, pl_err *err);
    void (*stop)(pl_trial_worker *w);
} pl_trial_worker_ops;

struct pl_trial_worker {
    const pl_trial_worker_ops *ops;
    void *state;
    bool started;
    int starts;       /* how many times start-up ran (the tests check it stays 1) */
    long trials;      /* trials run */
    double startup_s; /* time spent in start */
    double trial_s;   /* time spent in trials */
};

/* Starts once (idempotent), runs a trial, timing both. */
int pl_trial_start(pl_trial_worker *w, pl_err *err);
int pl_trial_run(pl_trial_worker *w, const pl_cluster *c, pl_trial_out *out, pl_err *err);
void pl_trial_worker_free(pl_trial_worker *w); /* stops it if started */

/* The in-process simulator worker. Start-up loads the model (ONNX or task graph, `load`
 * options, copied); each trial builds the cost table for the cluster, runs `algos`
 * (comma-separated; NULL: "moirai", which itself runs every heuristic and keeps the best),
 * each with `place_time_s` (moirai's and a learned search's limit; 0: 1 s), simulates every plan
 * under `contention`, memory checked, and keeps the fastest plan that fits. */
typedef struct pl_trial_sim_opts {
    const char *model_path;
    pl_load_opts load;
    const char *algos;
    double place_time_s;
    pl_contention contention;
    unsigned seed;
    const pl_cost_params *params; /* NULL: the defaults (copied) */
    /* A learned algorithm's episode budget per trial (pl_place_opts.iterations; 0: its
     * default). Given without place_time_s, the learned algorithm gets no 1-s limit: the
     * episodes are its budget. */
    int place_episodes;
    /* Passed to every algorithm as pl_place_opts.progress (a learned search's episodes). */
    void (*progress)(const char *algo, int step, int total, double best_s, void *user);
    void *progress_user;
    /* When not NULL, an ort worker (pl_trial_ort_new, on the same model file, loaded without
     * dims or input shapes) that measures each trial's kept plan on this machine
     * (pl_trial_measure_plan): the trial's latency is then the measured one (the plan keeps
     * the predicted makespan, measured_s the measurement). Started with the sim worker; the
     * caller frees it after the sim worker. `placer deploy --measured` (docs/search.md). */
    pl_trial_worker *measure;
} pl_trial_sim_opts;
pl_trial_worker *pl_trial_sim_new(const pl_trial_sim_opts *o);
/* The model the sim worker loaded (after start), for plan identity; NULL before. */
const pl_graph *pl_trial_sim_graph(const pl_trial_worker *w);

/* A worker that looks latencies up by cluster name (tests, and the search benchmark, which
 * computes every configuration once and replays the strategies against the table):
 * latency_s[i] for names[i]; INFINITY (or a name not listed) means the model does not run
 * there. Copies its inputs. */
pl_trial_worker *pl_trial_table_new(const char *const *names, const double *latency_s, int n);

/* The measuring worker (docs/runtime.md): start-up inflates the weightless model into
 * `cache_dir` (NULL: pl_cache_dir's "inflated"), starts the onnxruntime worker process (`ort`;
 * NULL: defaults) and loads the model once; each trial runs it `warmup` (0: 1) times untimed and
 * `repeat` (0: 3) times timed on this machine's CPU and reports the median latency. The
 * cluster is not looked at: the model runs whole, on the local CPU, whatever the
 * configuration (running a plan's stages per device comes with `placer split`). */
typedef struct pl_ort pl_ort;
typedef struct pl_ort_opts pl_ort_opts;
typedef struct pl_trial_ort_opts {
    const char *model_path;
    const char *cache_dir;
    const pl_ort_opts *ort;
    int repeat, warmup;
} pl_trial_ort_opts;
pl_trial_worker *pl_trial_ort_new(const pl_trial_ort_opts *o);
/* The worker's onnxruntime client after start (for its stats), NULL before. */
pl_ort *pl_trial_ort_client(const pl_trial_worker *w);

/* Measures a plan on this machine (docs/learn.md, "Measured episodes"): the worker's model, g
 * (loaded from the same file), cut by the plan into stages (pl_split_runnable, the schedule
 * cut), the stages loaded into the worker's running onnxruntime process, each on its device's
 * thread (replacing the whole model, which the next trial loads again), `warmup` untimed and
 * `repeat` timed requests; *latency_s gets the median. A placement (op -> device, and the
 * per-device order when the plan has one) measured before by this worker is answered from its
 * cache without running anything. The split and its inflated stages live in a temporary
 * folder (pl_make_temp_dir "placer-episode") removed on every path. -1 with err set when w is
 * not the ort worker, the plan does not match g and c, an op is on a device that is not a CPU
 * (only CPU devices run here, one thread each), or the worker fails: one that dies or stalls
 * past its deadline is killed (runtime.h) and the measurement fails, naming it;
 * *latency_s is then INFINITY. Starts the worker if needed. */
int pl_trial_measure_plan(pl_trial_worker *w, const pl_graph *g, const pl_cluster *c,
                          const pl_plan *p, double *latency_s, pl_err *err);
/* 0 when every device of c is a CPU (what pl_trial_measure_plan can run), else -1 with err
 * naming the first that is not. */
int pl_trial_measure_check(const pl_cluster *c, pl_err *err);
/* Placements measured by pl_trial_measure_plan, and those answered from its cache (0 and 0
 * for another worker). */
void pl_trial_measure_stats(const pl_trial_worker *w, long *measured, long *hits);

#endif
