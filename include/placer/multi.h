/* multi.h: several models sharing one host's CPU and GPUs (Talos, issue 15, docs/multi.md).
 *
 * The models are one union graph (pl_graph_union: one tenant per model), priced by the one
 * cost model and judged by the one simulator, which reports each tenant's completion time;
 * their sum is the TOCT (total operation completion time) that Talos minimises, and a
 * device's idle time is the makespan minus the time it runs ops. Talos places the union op
 * by op: ops are packed (adjacent ops of similar speedup and short time become one), models
 * are grouped by affinity (Eq. 2-3), and each group is placed by an incremental min-cost flow
 * over topological steps (GLPK's out-of-kilter solver), with Algorithm 1's completion-time
 * cost. ASWM and TSAM are the paper's baselines; every placement algorithm of place.h runs on
 * the union graph too.
 *
 * Semantics, exactly: tenant t's completion time is the end of its last op in the simulation
 * of the whole union plan (one request, memory reported but not enforced: an over-full device
 * is `oom`, not a failure); TOCT = the sum over tenants; a device's idle time = makespan -
 * the time it runs ops. A tenant alone is the model alone: the union graph of one model is
 * priced and simulated exactly as that model. Packing, affinity and the flow only choose the
 * placement; the simulator alone gives every figure.
 *
 * Ownership and failure: every struct filled here (analysis, eval, run result) is the
 * caller's, zeroed at entry, and freed by its _free, which also zeroes it and accepts a zeroed
 * or failed one; on failure (-1, err set) it holds nothing to free, except where a function
 * says otherwise. Inputs are only read. */
#ifndef PLACER_MULTI_H
#define PLACER_MULTI_H

#include "placer/place.h"

typedef struct pl_multi_opts {
    double sv_lo, sv_hi; /* packing band: an op joins the run when its speedup is within
                            (sv_lo, sv_hi) x the run's first op's speedup; (0.5, 2) */
    double tv_s;         /* ... and its time on the reference device is below tv_s; 10 ms */
    double affinity;     /* models whose pairwise affinity exceeds it are placed together in
                            one flow, the groups one after the other unless all in one flow
                            is faster by Talos's own timeline; 0.4 (-1: all in one flow) */
    int positions;       /* queue positions per device per step in the flow; 8 */
    bool no_pack;        /* place ops as they are (NOD = op count) */
    double refine_s;     /* talos: the local search on TOCT after the flow (pl_place_refine),
                            at most this long; 2 s (0: the paper's Talos alone) */
} pl_multi_opts;
void pl_multi_opts_default(pl_multi_opts *o);

/* ---- analysis: speedups, packing (NOD), affinity ---- */
typedef struct pl_multi_analysis {
    int n_tenants, n_ops;
    int ref_dev;     /* the device speedups are relative to: the first CPU, else device 0 */
    double *speedup; /* per op: time on ref_dev / least time on another device (1 alone) */
    int *pack_of;    /* per op: its packed op, numbered in topological order of first member */
    int n_packs;
    int *nod;         /* per tenant: its packed ops (the paper's NOD) */
    double *affinity; /* [a * n_tenants + b] (Eq. 3; 0 on the diagonal) */
    int *group;       /* per tenant: its co-placement group, groups in order of first tenant */
    int n_groups;
} pl_multi_analysis;
/* o NULL: defaults. -1 with err set, and *a zeroed, on a packing band that is not
 * 0 < sv_lo < sv_hi with tv_s >= 0. */
int pl_multi_analyze(const pl_cost *k, const pl_multi_opts *o, pl_multi_analysis *a, pl_err *err);
void pl_multi_analysis_free(pl_multi_analysis *a);

/* The spread of one tenant's per-op speedups (the paper's Fig. 2): each op's time on the
 * reference device over its least time on another, every op priced as a kernel of its own (as
 * a per-op profile times it: an op the runtime fuses into its producer's kernel is priced
 * unfused here), over the ops that take time on both. Times are k's: a profile's where
 * given, else the cost model's. */
typedef struct pl_multi_spread {
    int n_ops;   /* ops counted: a positive time on the reference device and on another */
    int n_given; /* of those, ops whose both times were given (a profile, a task graph) */
    double min, p10, median, p90, max; /* nearest-rank quantiles */
    double geomean;
    double overall; /* their summed time on the reference device over their summed least
                       time elsewhere: the model's average speedup, as ASWM sees it */
    double below_1; /* share of the ops slower off the reference device (speedup < 1) */
} pl_multi_spread;
/* Fills *s (zeroed when the tenant has no op counted). */
void pl_multi_speedup_spread(const pl_cost *k, int tenant, pl_multi_spread *s);

/* ---- placing: "talos", "aswm", "tsam", or any algorithm of place.h on the union graph ---- */
/* Which part of placer found a plan: for talos, "flow" (Algorithm 1's min-cost flow) or
 * "refinement" (the local search on TOCT after it improved the flow's plan, `refine` then
 * saying by how much); for every other algorithm its own name. */
typedef struct pl_multi_credit {
    char by[32];
    pl_refine_stats refine; /* talos with mo->refine_s > 0; zero otherwise */
} pl_multi_credit;
/* Runs the named algorithm on k (a union graph, or one model), filling `out` (placement and
 * per-device order for talos, aswm and tsam; talos refined: placement and priorities), timed
 * in out->search_s, the refinement included; every plan leaves with a per-device order, the
 * simulator's for an algorithm that gives none, so that the stages a device's run is cut
 * into where it passes from one model to another (pl_plan_schedule_stages) are the same in the
 * prediction and in pl_multi_run. mo may be NULL (defaults); credit may be NULL.
 * -1 with err set on an unknown name or when no feasible placement exists; out is the
 * caller's plan (pl_plan_new of k's ops and devices), its placement then unspecified, and the
 * caller frees it either way. */
int pl_multi_place(const char *algo, const pl_cost *k, const pl_place_opts *po,
                   const pl_multi_opts *mo, pl_plan *out, pl_multi_credit *credit, pl_err *err);
/* True for the names pl_multi_place runs itself (talos, aswm, tsam). */
bool pl_multi_own_algo(const char *algo);

/* ---- judging: the simulator's figures per tenant and per device ---- */
typedef struct pl_multi_eval {
    int n_tenants, n_devs;
    double *completion_s; /* per tenant: the end of its last op */
    double toct_s;        /* their sum */
    double makespan_s;
    double *busy_s, *idle_s; /* per device: time running ops; makespan - busy */
    int *ops_on;             /* [tenant * n_devs + dev]: how many of the tenant's ops run there */
    bool oom;                /* a device's peak memory exceeds its capacity */
    int oom_dev;
    /* The round's period the cold term was priced at (pl_sim_result.cold_period_s), 0 when
     * the cluster gives no cold figures */
    double cold_period_s;
} pl_multi_eval;
/* Simulates p on k (memory not enforced). -1 with err set, and *e zeroed, when the simulator
 * refuses the plan. */
int pl_multi_evaluate(const pl_cost *k, const pl_plan *p, pl_contention contention,
                      pl_multi_eval *e, pl_err *err);
/* The same for a request after the devices idled idle_s seconds (pl_sim_opts.idle_s: where
 * the host gives cold figures, the wait costs; docs/simulator.md, "Cold requests").
 * pl_multi_evaluate is this with idle_s 0. */
int pl_multi_evaluate_after(const pl_cost *k, const pl_plan *p, pl_contention contention,
                            double idle_s, pl_multi_eval *e, pl_err *err);
void pl_multi_eval_free(pl_multi_eval *e);

/* ---- running for real (docs/multi.md, "Running it for real") ---- */
typedef struct pl_multi_run_opts {
    int repeat, warmup;    /* timed and untimed rounds: 10 and 2 when 0 */
    const char *cache_dir; /* NULL: the default inflated-model cache (pl_cache_dir) */
    double deadline_s;     /* onnxruntime worker deadline; 0: the runtime's default */
    unsigned seed;         /* random inputs */
    double gap_s;          /* each timed round after the devices idled this long (pl_ort_run_spaced;
                              --alone: the wait the share has in the round); 0: back to back */
} pl_multi_run_opts;

/* One stage as run, beside the simulator's figures for the same ops (docs/multi.md, "Output":
 * where a model's error comes from). */
typedef struct pl_multi_run_stage {
    int tenant, dev, n_ops; /* n_ops: the ops it owns (Constants copied in are not counted) */
    double pred_start_s;    /* the simulator's start of its first op other than a Constant */
    double pred_end_s;      /* the simulator's end of its last op */
    double start_s, end_s;  /* measured: median over rounds, from the round's start */
} pl_multi_run_stage;

typedef struct pl_multi_run_result {
    int n_tenants, repeat;
    double *completion_s; /* per tenant: median over rounds of its last stage's end, from the
                             round's start */
    double toct_s;        /* sum of those medians */
    double makespan_s;    /* median over rounds of the round's end */
    int n_stages;
    pl_multi_run_stage *stages; /* [n_stages], in the order they were loaded: each device
                                   thread runs its own in this order */
} pl_multi_run_result;

/* Runs every tenant's share of plan p (on u = pl_graph_union of models[0..n), cluster c)
 * concurrently on this machine: each model is split by its part of the plan (the split
 * writer), all stages are loaded into one onnxruntime worker on the cluster's device threads
 * (stages of several tenants on one device in the order the simulator runs them), and one
 * round starts every tenant at once. paths[i] is model i's ONNX file. The stage files live in
 * a temporary folder (pl_make_temp_dir) removed on success and on failure; the worker is
 * stopped and reaped either way. -1 with err set, and *r zeroed (nothing to free), when a
 * split, the worker or a round fails, or the folder cannot be removed. */
int pl_multi_run(pl_graph *const *models, const char *const *paths, int n, const pl_graph *u,
                 const pl_cluster *c, const pl_cost *k, const pl_plan *p,
                 const pl_multi_run_opts *o, pl_multi_run_result *r, pl_err *err);
void pl_multi_run_result_free(pl_multi_run_result *r);

#endif
