/* plan.h: a deployment plan: which device runs each op, and optionally in what order.
 *
 * A plan is the artefact every algorithm produces and the simulator judges. On disk it is
 * placer-plan/1 JSON (docs/plans.md): the model and cluster it was made for (path and
 * SHA-256, so a plan for another model or cluster is refused), the algorithm, op → device by
 * name, per-device order, the contention model and the predicted figures. A hand-written plan
 * may leave out identity and order, and may give a default device.
 *
 * Ownership and failure: pl_plan_new, _copy, _unpack and _load return a plan the caller frees
 * with pl_plan_free (NULL on failure, err set where the function takes one); the functions
 * taking a plan only read it unless their name says they set or clear part of it.
 * pl_plan_save writes through pl_out (a temporary renamed into place): on failure the file at
 * `path` is what it was before. */
#ifndef PLACER_PLAN_H
#define PLACER_PLAN_H

#include "placer/cluster.h"
#include "placer/graph.h"

/* How transfers compete (design.md §4). PORTS: each device has one send and one receive
 * port, a transfer a → b holds a's send and b's receive port (MOIRAI's congestion
 * constraint); PAIR: one channel per ordered pair; NONE: unlimited (HEFT-like). */
typedef enum { PL_CONTENTION_PORTS, PL_CONTENTION_PAIR, PL_CONTENTION_NONE } pl_contention;
const char *pl_contention_name(pl_contention c);            /* "ports", "pair", "none" */
int pl_contention_parse(const char *s, pl_contention *out); /* -1 when unknown */

typedef struct pl_plan {
    int n_ops, n_devs;
    int *dev; /* op → device */
    /* Per-device order, CSR over devices: order[order_off[d] .. order_off[d+1]) are the ops of
     * device d in the order they run. NULL when the plan gives none. */
    int *order, *order_off;
    /* Per op, NULL when none: a stage starts at this op (pl_plan_schedule_stages), beside the
     * schedule's own cuts. Set where, on the op's device, another model's op runs just before
     * it (placer multi's runs, docs/multi.md "Running it for real"). It goes with the order:
     * pl_plan_clear_order drops it. Not saved, and not packed. */
    unsigned char *cut_before;
    /* Priority: among ready ops on a device, smaller runs first. NULL when none. Used when
     * there is no order; with neither, first-ready-first-served, ties by topological index. */
    double *priority;
    /* Transfer order: one priority per graph edge (indexed like g->edges; n_edges entries),
     * NULL when none. Under `ports` or `pair` contention each port (or channel) serves its
     * transfers strictly in this order, smallest first, waiting for the next one even when a
     * later one is ready (docs/simulator.md); a transfer serving several edges takes their
     * minimum; NaN counts as +inf. Ignored under `none`. */
    double *xfer_priority;
    int n_edges;
    char algo[32];
    pl_contention contention;    /* the model the plan was made and predicted under */
    double search_s;             /* how long the algorithm took */
    double predicted_makespan_s; /* filled by whoever simulated it; 0 when unknown */
    /* The latency of this placement as measured by pl_place_opts.measure (a learned search's
     * measured episodes: the median of real runs on this machine); 0 when not measured. Not
     * saved. */
    double measured_s;
    /* Coarser cuts (pl_place, docs/placement.md "Plans that pay"): the stages
     * (pl_plan_schedule_stages) of the algorithm's plan and of the plan the pass left, the
     * simulations it ran and how long it took; all 0 when it did not run. Not saved. */
    int stages_before, stages_after, cut_simulations;
    double cut_s;
} pl_plan;

pl_plan *pl_plan_new(int n_ops, int n_devs); /* every op on device 0, no order, no priority */
pl_plan *pl_plan_copy(const pl_plan *p);
/* A plan as bytes with no pointers in them, for moving it between the ranks of a search under
 * mpirun (dist.h moves bytes): pl_plan_pack returns a malloc'd buffer (caller frees) of *len
 * bytes; pl_plan_unpack rebuilds the plan from it (caller frees), or returns NULL when the
 * bytes are not what pl_plan_pack made. Everything in pl_plan travels. Not a file format: the
 * same build on both sides. */
void *pl_plan_pack(const pl_plan *p, size_t *len);
pl_plan *pl_plan_unpack(const void *buf, size_t len);
/* dst (same n_ops and n_devs) takes src's placement and schedule (order, priority, transfer
 * order, or their absence); dst keeps its own algo, contention and figures. */
void pl_plan_assign(pl_plan *dst, const pl_plan *src);
void pl_plan_free(pl_plan *p);
/* Sets order from a global sequence of ops (e.g. a list schedule): each device runs its ops
 * in the sequence's order. `seq` holds every op once. */
void pl_plan_set_order(pl_plan *p, const int *seq);
void pl_plan_clear_order(pl_plan *p);
/* Drops everything but the placement: op order, priority and transfer order. What an
 * algorithm starts from, so that no part of an earlier schedule outlives it. */
void pl_plan_clear_schedule(pl_plan *p);
/* Sets the transfer order (a copy of `prio`, n_edges entries, one per g->edges[e]); NULL
 * clears it. */
void pl_plan_set_xfer_priority(pl_plan *p, int n_edges, const double *prio);
/* The index in g->edges (and so in xfer_priority) of the edge (src, dst, tensor), or -1
 * (also when src < 0). A binary search: g->edges is sorted by src, dst, tensor. */
int pl_plan_edge(const pl_graph *g, int src, int dst, int tensor);

/* The plan checker every reader of a plan runs (pl_plan_load runs it, so no verb can skip
 * it; the simulator runs it on a plan built in code that deadlocks): -1 when the plan splits a
 * colocation class (pl_plan_check_coloc); 0 when the per-device order can run, or when there
 * is none; -1 when it deadlocks, naming the device, the op that
 * waits forever, the tensor and the op it waits for ("the plan's order deadlocks: on device
 * 'gpu0', op 'b' waits forever for tensor 'x' from op 'a' on 'gpu0', which never runs (it is
 * listed after the op that needs it)"). A deadlock of the transfer order is the simulator's
 * to find (pl_simulate): nothing else follows that order. */
int pl_plan_check(const pl_plan *p, const pl_graph *g, const pl_cluster *c, pl_err *err);
/* Colocation (pl_op::coloc): 0 when every class of g is on one device; else -1 with err set
 * to "WHO: colocation class 'C' is split: op 'a' is on 'd0', op 'b' on 'd1'", naming the first
 * split class in op order. The simulator and pl_place refuse such plans with it. */
/* Cores (docs/clusters.md, "Cores"): 0 when no two devices that dev uses are the same
 * silicon (pl_cluster_same_silicon: a device and one of its core_devices); else -1 with err
 * set to "WHO: devices 'cpu' and 'cpu0' are the same cores ...", naming an op on each.
 * pl_plan_check runs it. */
int pl_plan_check_silicon(const pl_graph *g, const pl_cluster *c, const int *dev, const char *who,
                          pl_err *err);
int pl_plan_check_coloc(const pl_graph *g, const pl_cluster *c, const int *dev, const char *who,
                        pl_err *err);

/* ---- stages by the schedule (docs/split.md, `--cut schedule`) ----
 * The one definition of where a device's run of ops is cut into onnxruntime sessions, shared
 * by `placer split --cut schedule` and the simulator's per-stage overhead. */

/* True when op is a Constant node (default domain, no inputs). */
bool pl_plan_is_const(const pl_graph *g, int op);
/* True for a Constant that something reads: its value is copied into every reading stage,
 * never sent, so it belongs to no stage and neither sends nor receives. */
bool pl_plan_copied_const(const pl_graph *g, int op);
/* Cuts each device's run (the plan's per-device order, else topological order) before every
 * op that receives a tensor from an op on another device, after every op that sends one to
 * another device (copied Constants do neither), before an op of another model (pl_op::tenant)
 * than the op before it in the run (an onnxruntime session runs one model), and before every
 * op p->cut_before marks. Returns the number of stages; stage_of[op] is
 * op's stage (-1 for copied Constants); stages are numbered device by device, each device's in
 * the order they run. When given (room for g->n_ops), dev_of[s] is stage s's device and
 * first[s] the op it begins with. */
int pl_plan_schedule_stages(const pl_graph *g, const pl_plan *p, int *stage_of, int *dev_of,
                            int *first);

/* What a stage takes in and gives out: exactly the inputs and outputs of its stage file
 * (docs/split.md), so what `placer split` writes and what the simulator prices per stage
 * (docs/simulator.md, "Stages") are the same tensors. */
typedef struct pl_stage_io {
    int *inputs; /* tensors it is fed: graph inputs and other stages' results its ops read that
                    are neither weights nor Constant values; each once, in the order its ops
                    (topological order) first read them */
    int n_inputs;
    int *outputs; /* results of its ops that another stage reads, and graph outputs; in
                     topological order of the ops making them */
    int n_outputs;
    /* Bytes of the initializers its ops read (its stage file holds a copy of each), and of
     * those that a lower-numbered stage holds too: a weight read by several stages is copied
     * into each (the manifest reports both; what the simulator charges for reading a copy
     * cold is its own rule, docs/simulator.md "Stages"). */
    double weight_bytes, copied_weight_bytes;
} pl_stage_io;

/* The inputs and outputs of each of the n stages of a cut (any cut: the schedule's or the
 * split's merged one). stage_of[op] is op's stage in [0, n); a copied Constant
 * (pl_plan_copied_const) may be -1, and is then set to the stage of its first reader in
 * topological order, which holds it (and gives out its value only when it is a graph output);
 * other ops at -1 are in no stage (a plan naming no valid device for them). Fills io[0..n)
 * (malloc'd arrays, NULL when empty): the caller frees each array, or hands them on
 * (pl_stage_io_free frees them all). */
void pl_plan_stage_io(const pl_graph *g, int *stage_of, int n, pl_stage_io *io);
void pl_stage_io_free(pl_stage_io *io, int n);

/* Writes placer-plan/1. `g`, `c` give names and identity; `g->path`/`c->path` are hashed. */
int pl_plan_save(const pl_plan *p, const pl_graph *g, const pl_cluster *c, const char *path,
                 pl_err *err);
/* Reads a plan for (g, c): refuses one whose SHA-256s name another model or cluster, an
 * unknown op or device, an op placed twice or not at all (unless a default device is given),
 * an order that leaves out or repeats an op, or lists it on another device, an order that
 * deadlocks (pl_plan_check), and a "transfer_order" that names an unknown tensor or op, a
 * pair that is not a graph edge, or an edge twice. */
pl_plan *pl_plan_load(const char *path, const pl_graph *g, const pl_cluster *c, pl_err *err);

#endif
