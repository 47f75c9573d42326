/* place.h: placement algorithms, one signature for all, and the lower bound.
 *
 * An algorithm reads the cost table (graph, cluster, times) and fills a plan: a device for
 * every op and, when the algorithm schedules, a per-device order or priorities. It respects
 * device memory (weights of its ops plus a working-set estimate, docs/placement.md) and fails
 * with a clear message when no feasible placement exists. It never parses files.
 *
 * Semantics, exactly: pl_place returns 0 only with every op on a device of the cluster that
 * can run it (a finite time there) and every colocation class on one device; it checks that
 * whatever the algorithm did. The answer's quality is the simulator's makespan of the plan
 * (sim.h), never the algorithm's own estimate; pl_lower_bound is never above any plan's
 * makespan under any contention model.
 *
 * Ownership and failure: the plan an algorithm fills is the caller's (pl_plan_new of the cost
 * table's ops and devices), which frees it whatever the outcome. On failure (-1, err set) its
 * algo and search_s are set, its order, priorities and transfer order cleared, and its
 * devices unspecified: use it for nothing but freeing or another pl_place. The cost table is
 * only read. */
#ifndef PLACER_PLACE_H
#define PLACER_PLACE_H

#include "placer/dist.h"
#include "placer/sim.h"

typedef struct pl_place_opts {
    unsigned seed;            /* for randomised algorithms */
    double time_limit_s;      /* for searches and solvers; 0 = the algorithm's default */
    pl_contention contention; /* the simulator model to target */
    double rel_gap;           /* MILPs: stop at this relative gap; 0 = the algorithm's default */
    bool no_coarsen;          /* moirai: solve the model's own graph, not its GCOF coarsening */
    /* Plans that pay (docs/placement.md): after the algorithm, simulate its plan and every
     * single-device plan (the whole model on one device that can run every op, no order, as
     * the `single` algorithm leaves it) that fits in memory, under `contention`; return the fastest
     * single-device plan instead when it is predicted faster, with a note in err. `placer place`
     * sets it for its default algorithm and for moirai. Algorithms that pl_place runs inside
     * another never see it. */
    bool single_if_faster;
    /* With single_if_faster: the algorithm's plan is kept only when predicted at least this
     * fraction faster than the best single-device plan (0: any gain). A smaller predicted gain
     * is within the error of the predictions that would rank them (docs/calibrate.md,
     * "Fidelity"), and a split costs the user a split. `placer place` uses
     * PL_MIN_GAIN_DEFAULT (`--min-gain`). */
    double min_gain;
    /* Coarser cuts (docs/placement.md, "Plans that pay"): when the cluster charges for stages
     * (a device with stage_overhead_s or stage_copy_Bps), pl_place merges the algorithm's
     * stages while the simulated makespan under `contention` falls (before single_if_faster
     * compares), within memory and colocation classes, in at most a few hundred simulations;
     * plan->stages_before and stages_after say what it did. true keeps the algorithm's cuts
     * as they are (`placer place --fine-cuts`). Algorithms that pl_place runs inside another
     * (moirai's heuristics and warm starts) coarsen too, unless told not to, so that moirai,
     * which keeps the best plan it has seen, is never worse than a merged heuristic. */
    bool fine_cuts;
    /* Measured scoring (docs/learn.md, "Measured episodes"): when set, a learned search
     * (pl_algo.learned: drl) scores each placement it tries by calling measure instead of
     * the simulator's makespan. measure returns the placement's latency in seconds (e.g.
     * pl_trial_measure_plan's median of real runs); INFINITY when the placement cannot run
     * (scored as one that does not fit, the search goes on); a negative value, with err set,
     * when measuring failed (a worker that died or stalled): the search stops and fails with
     * that error. Placements that do not fit in memory (simulated) are not measured. The plan
     * returned carries its measured latency (pl_plan.measured_s), and pl_place does not merge
     * its cuts (fine_cuts is implied: the simulator would change the plan that was measured).
     * Where a single-device plan competes (a device with core_devices, single_if_faster), it
     * is measured too and the two measurements decide; the plan returned carries its own.
     * Other algorithms ignore it. */
    double (*measure)(const pl_plan *p, void *user, pl_err *err);
    void *measure_user;
    /* A learned search's episode budget: exactly this many sampled placements (the
     * single-device placements it scores first are not counted), however long they take
     * unless time_limit_s is given too (then whichever ends first); 0: the algorithm's
     * default (drl: time_limit_s when given, else 400 episodes or 30 s, whichever ends
     * first). */
    int iterations;
    /* Called as a learned search goes (drl: after every batch of episodes and at the end):
     * its name, the episodes done, the budget (0 when only time limits it) and the best
     * score so far (seconds; INFINITY before one fits). NULL: silent. */
    void (*progress)(const char *algo, int step, int total, double best_s, void *user);
    void *progress_user;
    /* The pool (dist.h, docs/dist.md "moirai and drl"): when set and placer runs under
     * mpirun, an algorithm that can split its search spreads it over the ranks (moirai: its
     * local searches, `restarts`; drl: each batch's episodes) and every rank returns the same
     * plan. Every rank must then call pl_place at the same point with the same arguments
     * (inside a pl_dist_map item the call runs in this process anyway: dist.h): `placer place`
     * sets it. Unset, without MPI or with one rank, the search runs in this process. */
    bool use_pool;
    /* moirai: independent local searches from the MILP's plan, restart i seeded from seed and
     * i alone, the best kept (ties: the lower i). 0: one per rank when the pool is in use,
     * else 1 (`placer place --restarts N`): a count given gives the same searches whatever
     * the number of ranks. */
    int restarts;
} pl_place_opts;
#define PL_MIN_GAIN_DEFAULT 0.05

/* The pool as a placement search sees it (src/place/pool.c): the MPI ranks when
 * o->use_pool (dist.h), else this process alone, rank 0 of 1, so that an algorithm has one
 * code path for both. The collectives below are dist.h's when `on`, and the one-process
 * answer (every item here, in order; a sum and a broadcast that change nothing) when not. */
typedef struct pl_pool {
    bool on; /* o->use_pool and more than one rank */
    int rank, size;
} pl_pool;
pl_pool pl_pool_of(const pl_place_opts *o);
int pl_pool_map(const pl_pool *pool, int n_items, pl_dist_fn fn, void *out, size_t out_size,
                void *user);
int pl_pool_sumf(const pl_pool *pool, float *v, int n);
int pl_pool_bcast(const pl_pool *pool, void *buf, size_t bytes, int root);
/* Rank `root`'s plan p (placement, op order, priorities, transfer order: the schedule an
 * algorithm hands on) into p on every rank (same n_ops and n_devs everywhere). Collective
 * when pool->on; 0, or -1 when MPI failed. */
int pl_pool_share_plan(const pl_pool *pool, pl_plan *p, int root);

typedef int (*pl_place_fn)(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);

typedef struct pl_algo {
    const char *name; /* "heft" */
    pl_place_fn run;
    const char *summary; /* one line for --help and docs */
    /* A search that learns (a registered one, e.g. a DRL placer): not run as one of the
     * heuristics that warm-start moirai. */
    bool learned;
} pl_algo;
#define PL_MAX_ALGOS 16

const pl_algo *pl_algo_find(const char *name); /* NULL when unknown */
/* Adds an algorithm that is not built in (a learned placer: pl_learn_register), so that
 * every verb finds it by name; the entry is copied. -1 with err set for a name already taken,
 * a missing name or entry point, or a full registry (PL_MAX_ALGOS). Not thread-safe: the
 * command registers at start-up. */
int pl_algo_register(const pl_algo *a, pl_err *err);
const pl_algo *pl_algo_list(int *n);
/* The algorithms of a comma-separated list of names ("heft,metis") into out[0..max): their
 * count, or -1 with err set ("--algos: ...", naming the item) when the list is empty, an item
 * is empty ("heft,,metis", "heft,"), unknown (the message lists the known names) or repeated,
 * or there are more than max. `what` names the list in the message (e.g. "--algos"). */
int pl_algo_parse_list(const char *text, const char *what, const pl_algo **out, int max,
                       pl_err *err);

/* METIS partitioning as the `metis` placer does it (src/place/metis.c), for other modules:
 * the undirected graph of n vertices in METIS's CSR form (xadj[n + 1], adj symmetric, no
 * self-loops; integer vertex weights vw >= 1 and edge weights aw >= 1, sums below 2^31)
 * split into np equal-target parts by recursive bisection, each bisection a METIS call
 * allowed an imbalance of ub (METIS's ubvec: 1.03 in placement), so a part weighs at most
 * ub^ceil(log2 np) times its share. part[v] in [0, np); a part may be left empty. Never
 * prints (metis.c says why METIS's own recursion would). -1 with err set when METIS fails. */
int pl_metis_partition(int n, const int32_t *xadj, const int32_t *adj, const int32_t *vw,
                       const int32_t *aw, int np, double ub, unsigned seed, int32_t *part,
                       pl_err *err);

/* 0, or -1 with err set when no plan at all can be feasible, whatever the algorithm: an op
 * can run on no device, the weights exceed the cluster's total memory, or one op alone
 * exceeds the largest device. The schedulers run the same check first; the command calls it
 * to tell "no feasible answer" (exit status 1) from a failure (2). */
int pl_place_precheck(const pl_cost *k, pl_err *err);

/* Runs an algorithm, coarsens its cuts (unless o->fine_cuts) and times it all (plan->search_s,
 * plan->algo: "single" when o->single_if_faster replaced the algorithm's plan). On success an
 * algorithm may leave a note in err->msg (e.g. which path m-SCT took when its LP was too big):
 * callers clear err before and show a non-empty message after a successful run as a note. */
int pl_place(const pl_algo *a, const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);

/* max(longest path with every op on its fastest device and free communication,
 *     total work / total speed), where a device's speed is measured by the work it can do:
 * sum over ops of min_d t(op, d) divided by... (docs/placement.md gives the exact form).
 * Never above the makespan of any plan under any contention model. */
double pl_lower_bound(const pl_cost *k);

/* Static memory a placement needs per device (weights read by its ops, counted once per
 * device, plus the largest working set), as the algorithms check it; out has n_devs entries. */
void pl_plan_static_memory(const pl_cost *k, const int *dev, double *out);

/* The parts of that figure that are not weights, so that an algorithm can keep it
 * incrementally (docs/placement.md): per op, its working set ws[op] and the graph outputs it
 * leaves on its device held[op]; and *io_bytes, what the I/O device holds whatever runs on it.
 * static(d) = distinct weights read or written by d's ops + sum of held over d's ops
 *             + max of ws over d's ops (+ *io_bytes on the I/O device). */
void pl_op_memory(const pl_cost *k, double *ws, double *held, double *io_bytes);

/* The same static memory model, kept incrementally for a placer outside this module (e.g.
 * multi.h's): an empty placement to which ops are added one at a time. */
typedef struct pl_mem_track pl_mem_track;
pl_mem_track *pl_mem_track_new(const pl_cost *k);
void pl_mem_track_free(pl_mem_track *m);
bool pl_mem_track_fits(const pl_mem_track *m, int op, int dev); /* op added to dev still fits */
void pl_mem_track_add(pl_mem_track *m, int op, int dev);
void pl_mem_track_remove(pl_mem_track *m, int op, int dev); /* an op added to dev before */
/* -1 with err set to the message for an op that found no device with room ("ALGO: op 'x'
 * fits on no device: ..."), naming the closest device. */
int pl_mem_track_no_room(const pl_mem_track *m, const char *algo, int op, pl_err *err);

/* ---- refining a plan (src/place/moirai_ls.c; docs/moirai.md, "Local search") ----
 * MOIRAI's local search from any plan: random moves (one op to another device, two ops'
 * devices swapped, an op with its chain of single-successor successors), each simulated under
 * `contention` (memory reported, not enforced; MOIRAI's static memory (5) kept per device),
 * kept when the goal does not grow, restarts near the best; for `seconds` at most, or until
 * many restarts bring nothing. The goal is the makespan, or the TOCT: the sum of the tenants'
 * ends (pl_sim_result.tenant_end_s; a graph of one model: its makespan). p is replaced only by
 * a strictly better plan: its placement, and the priorities the search ran it with (its
 * start's order kept as priorities, docs/moirai.md); any op or transfer order is dropped.
 * Returns the moves that improved the best (0: p unchanged), or -1 with err set when p itself
 * does not simulate. st: moves, simulations, the goal before and after, the time taken. */
typedef enum { PL_REFINE_MAKESPAN, PL_REFINE_TOCT } pl_refine_goal;
typedef struct pl_refine_stats {
    int moves;
    long evals;
    double before_s, after_s, secs;
} pl_refine_stats;
int pl_place_refine(const pl_cost *k, pl_plan *p, pl_refine_goal goal, pl_contention contention,
                    double seconds, unsigned seed, pl_refine_stats *st, pl_err *err);

/* Reads a MOIRAI benchmark instance (../shared/benchmarks/README.md, docs/moirai.md): devices
 * "d0".."dK-1" with the file's memory as memory_bytes (in the instance's own unit, compared
 * as such), one op "tN" per task with its per-device times (keyed by device name) and its
 * memory as extra_memory_bytes, one zero-byte tensor per transfer and per untimed edge.
 * The transfers' device × device times are the graph's given transfer times
 * (pl_graph_add_xfer_time), which pl_cost_new turns into its per-pair table. */
int pl_moirai_load(const char *path, pl_graph **g, pl_cluster **c, pl_err *err);

/* ---- learned placers (src/place/drl.c) ---- */

/* Registers the learned placement algorithms with the registry above ("drl": AutoDeep's
 * seq2seq policy trained by REINFORCE; "google-rl": Mirhoseini et al.'s, the paper's
 * baseline; docs/learn.md, "The DRL placer"), so that `place`, `compare` and `deploy` find
 * them by name. Idempotent. */
int pl_learn_register(pl_err *err);

/* The policy's input per op (docs/learn.md, "The encoding"; AutoDeep's and Mirhoseini et
 * al.'s "type, output shape, adjacency"), for the ops of g in topological order: type[i] is
 * op topo[i]'s type as an index among g's types in order of first appearance (0, 1, ...; the
 * policy embeds it), and feat[i * PL_DRL_FEAT ...] its output shape (PL_DRL_SHAPE_W entries:
 * the dimensions of its output tensors in order, each as log2(1 + d) / 16, 0 for an unknown
 * one, zero-padded, those past the width dropped) then its adjacency (PL_DRL_ADJ_W entries:
 * entry j is 1 when the op at topological position j is a direct input or output of this
 * one, else 0; positions >= PL_DRL_ADJ_W are not represented). type has g->n_ops entries,
 * feat g->n_ops * PL_DRL_FEAT. Returns the number of distinct types. */
#define PL_DRL_SHAPE_W 8
#define PL_DRL_ADJ_W 64
#define PL_DRL_FEAT (PL_DRL_SHAPE_W + PL_DRL_ADJ_W)
int pl_drl_encode(const pl_graph *g, int *type, float *feat);

/* AutoDeep's random rate (docs/learn.md, "Where they differ"): the probability that "drl"
 * draws a group's device uniformly instead of from its policy at episode e (from 0) of a
 * budget of `budget` episodes (<= 0: a time limit, the budget unknown): 0.2 · 2^(−e / h), the
 * half-life h the longer of 50 episodes and budget / 6. */
double pl_drl_random_rate(int e, int budget);

#endif
