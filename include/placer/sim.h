/* sim.h: the discrete-event simulator: the judge of every plan (design.md §4).
 *
 * Semantics, exactly: a device runs one op at a time without preemption; compute overlaps
 * with transfers; an op is ready when each input tensor is on its device; graph inputs are on
 * every device at time 0 unless the cluster names an I/O device; a tensor made on a and read
 * on b ≠ a is sent once per (tensor, b) (or, with opts.per_edge, once per reading op on b),
 * taking latency + bytes/bandwidth, competing under the contention model: first ready first
 * served, or strictly in the plan's transfer order; a zero-time transfer holds no port and
 * completes when ready; a device's ops run in the plan's order, else by priority, else
 * first-ready-first-served with ties by topological index. Memory: an op's weights are
 * resident on its device for the whole run; an activation lives from its producer's start
 * until its last reader on that device ends and its sends end; a received copy lives from
 * the start of its transfer to the end of its last reader. Makespan = end of the last op
 * (plus returning outputs to the I/O device, if any). Devices of one host that give
 * host_mem_bandwidth_Bps share it: while ops run on several of them at once, each one's memory
 * term stretches by the factor their summed demand exceeds it, re-rated whenever one starts
 * or ends there (docs/simulator.md, "Shared memory"); recorded times are the stretched ones.
 * Where those devices also give the cold figures (host_cold_read_Bps, host_cold_tau_s), one
 * request is one round of a steady state of period P = makespan + opts.idle_s: each op's
 * kept bytes (weights and graph inputs it reads) are read again, in part, as pl_device says,
 * with P the fixed point of the makespan it gives (docs/simulator.md, "Cold requests"); only
 * for several tenants or an idle_s > 0, one request, and r->cold_period_s says the P used.
 *
 * Ownership and failure: pl_simulate zeroes *r first and fills it only on success, so after a
 * failure r holds nothing (pl_sim_result_free on it is harmless); on success the caller frees
 * it with pl_sim_result_free. The cost table and plan are only read. pl_sim_trace_write writes
 * through pl_out: the file is whole or as it was. */
#ifndef PLACER_SIM_H
#define PLACER_SIM_H

#include "placer/cost.h"
#include "placer/plan.h"

typedef struct pl_sim_opts {
    pl_contention contention; /* default PORTS (zero value) */
    int requests;             /* throughput mode: K back-to-back requests; 0 or 1 = one */
    bool record;              /* keep per-op and per-transfer times (traces, checker) */
    bool ignore_memory;       /* report peak memory but do not fail on exceeding it */
    /* One transfer per graph edge: a tensor made on a and read by op j on b != a is sent once
     * for each such j (MOIRAI's flows), each copy living from its transfer's start to j's
     * end. Graph inputs sent from the I/O device and output returns stay per (tensor,
     * device). Default false: once per (tensor, b). */
    bool per_edge;
    /* The wait before each request, after the previous one's end (cold requests): 0, back to
     * back as profiled; at most 1e4 s. */
    double idle_s;
} pl_sim_opts;

typedef struct pl_xfer {
    int tensor, from, to, request;
    double start_s, end_s;
    int reader; /* per_edge: the op the copy is for; -1 otherwise (and for returns, inputs) */
} pl_xfer;

typedef struct pl_sim_result {
    double makespan_s; /* one request; in throughput mode, the end of the last */
    bool oom;          /* some device's peak memory exceeds its capacity */
    int oom_dev;       /* the first such device, or -1 */
    double oom_excess_bytes;
    int n_devs;
    double *busy_s;         /* per device: time spent running ops */
    double *peak_mem_bytes; /* per device */
    double *link_bytes;     /* [from * n_devs + to] */
    double *link_busy_s;    /* [from * n_devs + to] */
    int *critical_path;     /* ops, source to sink, whose chain of waits set the makespan */
    int critical_len;
    /* With opts.record: op times (request-major: [r * n_ops + op]) and every transfer. */
    double *op_start_s, *op_end_s;
    pl_xfer *xfers;
    int n_xfers;
    double period_s;  /* throughput mode: steady-state time between completions */
    double latency_s; /* throughput mode: mean time from a request's start to end */
    long events;      /* events processed (for the benchmark) */
    int requests;     /* requests simulated: 1, or K in throughput mode */
    /* Per tenant of a union graph (pl_graph_union): the end of its last op, over every
     * request; their sum is the TOCT of several models (docs/multi.md). 0 and NULL for a graph
     * of one model, so that the simulations of the searches pay nothing for it. */
    int n_tenants;
    double *tenant_end_s;
    /* The period the cold term was priced at (docs/simulator.md, "Cold requests"); 0 when
     * none was: no cold figures, one tenant back to back, or throughput mode. */
    double cold_period_s;
} pl_sim_result;

/* Simulates plan p on k's graph and cluster. Fails (err set) on a plan that cannot run: an op
 * on a device where its time is INFINITY, an order that deadlocks (an op listed before one
 * it depends on), or a transfer order that deadlocks (a port waits for a transfer that
 * needs one listed after it). Exceeding memory is not a failure: r->oom says which device and by
 * how much, unless opts->ignore_memory. */
int pl_simulate(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o, pl_sim_result *r,
                pl_err *err);
void pl_sim_result_free(pl_sim_result *r);

/* What each stage of plan p costs beyond its ops, per op (n_ops entries): a stage being a run
 * of ops cut as `placer split --cut schedule` cuts it (pl_plan_schedule_stages), the op it
 * begins with gets its device's stage_overhead_s, plus stage_tensor_s per tensor the stage
 * takes in or gives out (pl_plan_stage_io: its stage file's inputs and outputs), plus their
 * bytes over stage_copy_Bps; every other op 0. The simulator adds it to the op's time
 * (docs/simulator.md, "Stages"). Returns false, all zeros, when no device of the cluster gives
 * a stage cost. p must cover k's ops and devices. */
bool pl_sim_stage_s(const pl_cost *k, const pl_plan *p, double *extra);

/* The invariants, checked on a recorded result: precedence (an op starts after its inputs
 * arrive), no overlap on a device, no overlap on a port/channel, a transfer starts after its
 * producer ends, the plan's order and transfer order kept, one transfer per edge under
 * opts.per_edge, memory within capacity (unless ignored), colocation classes kept. Returns 0,
 * or -1 with the first violation described in `why`. */
int pl_sim_check(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o, const pl_sim_result *r,
                 char *why, size_t n);

/* Memory per device over time, as the checker accounts it (the rules above, swept from the
 * recorded times): for each device in order, a step at time 0 holding its resident weights
 * (and what is made at 0), then one step at each instant its total changes, holding the total
 * after every change of that instant; the largest equals r->peak_mem_bytes[d]. Runs the
 * checks of pl_sim_check first: a run that fails them has no curve (-1, err says why). On
 * success *steps (n_steps of them) is the caller's to free. */
typedef struct pl_mem_step {
    int dev;
    double t_s, bytes;
} pl_mem_step;
int pl_sim_memory_curve(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o,
                        const pl_sim_result *r, pl_mem_step **steps, int *n_steps, pl_err *err);
/* Chrome trace JSON (opens in Perfetto): one track per device and per link. Needs a recorded
 * result. */
int pl_sim_trace_write(const pl_cost *k, const pl_plan *p, const pl_sim_result *r, const char *path,
                       pl_err *err);

#endif
