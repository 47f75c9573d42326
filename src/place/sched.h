/* sched.h: machinery shared by the placement algorithms of place.c, single.c, expert.c,
 * m_topo.c, m_etf.c, heft.c, getf.c and random.c (private to src/place).
 *
 * Three pieces:
 *   - the static memory model (docs/placement.md), kept incrementally so that "does op v still
 *     fit on device d?" costs O(inputs of v);
 *   - a list-scheduling state: when the inputs of an op can be on a device, given where its
 *     predecessors ran, with transfers sent once per (tensor, destination) and, optionally,
 *     the simulator's port or channel contention;
 *   - small tools: a binary heap, upward ranks, a seeded generator, feasibility checks. */
#ifndef PLACER_PLACE_SCHED_H
#define PLACER_PLACE_SCHED_H

#include "placer/place.h"

#include <stdint.h>
#include <stdlib.h>

/* ---- static memory (docs/placement.md) ----
 * The one tracker every algorithm uses: weights reference-counted per device, so that "does op
 * v still fit on d?" costs O(inputs of v) and a repair (metis) can take ops away again. */

typedef struct pk_mem_track {
    const pl_cost *k;
    int nd;
    double *cap;        /* per device; a device without a size is taken as unlimited */
    double *wsum;       /* per device: distinct weights resident */
    double *wsmax;      /* per device: largest working set of its ops (removal keeps it) */
    double *held;       /* per device: graph inputs and outputs held there */
    double *op_ws;      /* per op: its working set (a property of the graph) */
    double *op_held;    /* per op: its graph outputs, held where it runs (no I/O device) */
    double *op_weights; /* per op: its distinct weights (a bound of what it can add) */
    int *wid;           /* tensor → dense weight index, -1 for activations */
    int n_w;            /* weights in the graph */
    int *refs;          /* [wid * nd + d]: touches of the weight by the ops on d */
} pk_mem_track;

void pk_mem_init(pk_mem_track *m, const pl_cost *k);
void pk_mem_free(pk_mem_track *m);
void pk_mem_reset(pk_mem_track *m); /* back to empty devices */
/* Bytes of op's weights not yet on d. */
double pk_mem_new_weights(const pk_mem_track *m, int op, int d);
/* Static memory of d once op is added. */
double pk_mem_need(const pk_mem_track *m, int op, int d);
bool pk_mem_fits(const pk_mem_track *m, int op, int d);
void pk_mem_add(pk_mem_track *m, int op, int d);
/* Takes op (added to d before) off d. d's largest working set is not lowered: call
 * pk_mem_recompute_ws when it matters. */
void pk_mem_remove(pk_mem_track *m, int op, int d);
/* Bytes moving op off d frees for sure: the weights only it touches there, its held outputs. */
double pk_mem_freed(const pk_mem_track *m, int op, int d);
/* Every device's largest working set again, from the placement dev (after removals). */
void pk_mem_recompute_ws(pk_mem_track *m, const int *dev);
static inline double pk_mem_used(const pk_mem_track *m, int d)
{
    return m->wsum[d] + m->held[d] + m->wsmax[d];
}

/* Bytes a transfer or the memory model counts for a tensor (unknown sizes count 0). */
double pk_tensor_bytes(const pl_graph *g, int t);
bool pk_is_weight(const pl_graph *g, int t);
/* Distinct bytes of every weight in the graph. */
double pk_total_weights(const pl_cost *k);

/* ---- checks every algorithm makes first ---- */

/* The model's name for messages: its file name without directory and extension. */
const char *pk_model_name(const pl_cost *k, char *buf, size_t n);

/* Refuses, with a message naming the model, an op that no device can run, an op whose own
 * weights and working set exceed the largest device, and weights exceeding total memory. */
int pk_precheck(const pl_cost *k, pl_err *err);
/* The message for an op that found no device with room, naming the closest device. */
int pk_no_room(const pl_cost *k, const pk_mem_track *m, const char *algo, int op, pl_err *err);
/* The capacity of a device as the memory model takes it. */
double pk_dev_cap(const pl_cost *k, int d);
/* Fills ops in topological order, each on the first device that can run it and has room.
 * The densest packing of a contiguous order: the fallback of the randomised algorithms. */
int pk_first_fit(const pl_cost *k, const char *algo, int *dev, pl_err *err);

/* ---- list-scheduling state ---- */

typedef struct pk_xfer_map pk_xfer_map; /* (tensor, device) → arrival time of the copy */

typedef struct pk_sched {
    const pl_cost *k;
    const pl_graph *g;
    int n, nd;
    pl_contention cont; /* the contention the schedule models */
    int *dev;           /* op → device, -1 while unplaced */
    double *start, *finish;
    double *avail;                 /* per device: end of its last op (append-only schedulers) */
    double *send_free, *recv_free; /* PORTS: when each device's ports are next free */
    double *pair_free;             /* PAIR: [a * nd + b] */
    pk_xfer_map *arrivals;
    pk_mem_track mem;
    int *seq; /* ops in the order they were committed */
    int n_seq;
    long stamp; /* bumped by every commit that changes transfer state */
} pk_sched;

void pk_sched_init(pk_sched *s, const pl_cost *k, pl_contention cont);
void pk_sched_free(pk_sched *s);
/* When every input of op v can be on device d (v's predecessors must all be committed:
 * PL_ASSERT), including the transfers it would need, modelled with the contention in force. */
double pk_sched_ready(const pk_sched *s, int v, int d);
/* Places v (not yet placed, its predecessors committed: PL_ASSERT) on d starting at `start`
 * (>= pk_sched_ready(s, v, d)): records its transfers, memory and times. */
void pk_sched_commit(pk_sched *s, int v, int d, double start);
/* Sets the plan's placement, and its per-device order from the commit sequence, or with
 * by_start from the ops sorted by start time (ties by topological position). */
void pk_sched_to_plan(const pk_sched *s, pl_plan *out, bool by_start);

/* ---- list scheduling (m-ETF, GETF) ---- */

/* At each step, among ready ops and the devices that can run them and have room, commit the
 * pair with the earliest start (LIST_START: ETF) or the earliest finish (LIST_FINISH: GETF);
 * ties go to the larger upward rank. Fills out with the placement and per-device order. */
typedef enum { LIST_START, LIST_FINISH } list_key;
int pk_list(const pl_cost *k, const pl_place_opts *o, list_key key, const char *algo, pl_plan *out,
            pl_err *err);

/* ---- tools ---- */

/* Mean time of `op` over the devices that can run it; INFINITY when none can. */
double pk_op_mean_s(const pl_cost *k, int op);

/* Mean route between distinct devices: latency and 1/bandwidth averaged over ordered pairs,
 * so mean transfer time = lat + bytes * inv_bw. Both 0 with a single device. */
typedef struct pk_route {
    double lat_s, inv_bw_s_per_byte;
} pk_route;
pk_route pk_mean_route(const pl_cluster *c);
/* Mean time to send a tensor between two distinct devices under r; 0 for weights. */
double pk_mean_xfer_s(const pl_cost *k, pk_route r, int tensor);

/* The makespan of p simulated with `so`; INFINITY when the simulation fails, or (with
 * fail_on_oom) when some device runs out of memory. The one way the algorithms that search
 * by simulation (expert, moirai) score a candidate. */
double pk_sim_makespan(const pl_cost *k, const pl_plan *p, const pl_sim_opts *so, bool fail_on_oom);

/* Upward rank (HEFT), the one every list scheduler uses: mean time of the op over devices that
 * can run it, plus the largest over its successors of (mean transfer time of all the tensors it
 * sends that successor + its rank): Topcuoglu's c(i,j) is the data of the edge i→j. */
void pk_upward_rank(const pl_cost *k, double *rank);

#endif
