/* moirai_ls.h: the simulator-driven local search that follows MOIRAI's MILP (docs/moirai.md),
 * private to src/place (tests include it to check it on its own). */
#ifndef PLACER_PLACE_MOIRAI_LS_H
#define PLACER_PLACE_MOIRAI_LS_H

#include "placer/place.h"

/* MOIRAI's m_i in (5): the op's own working memory (task graphs) plus the weights it reads
 * (models), summed per device. Shared weights count once per reader: an over-estimate the
 * simulator's memory check then corrects (docs/moirai.md). */
static inline double pl_moirai_op_mem(const pl_cost *k, int op)
{
    return k->g->ops[op].extra_memory_bytes + k->weight_bytes[op];
}
/* (5)'s left-hand side for a placement: used[d] = sum of pl_moirai_op_mem over d's ops
 * (used has n_devs entries). The warm start's check and the local search's running
 * accounting both start from it. */
void pl_moirai_used(const pl_cost *k, const int *dev, double *used);

typedef struct pl_ls_stats {
    int moves;      /* improvements of the best plan (0: the start was kept) */
    long evals;     /* simulations run */
    double best_ms; /* the plan returned, simulated under the judge (memory ignored) */
    double secs;
} pl_ls_stats;

/* Improves plan p (simulated at p_ms under `judge`'s contention and per_edge; NULL: ports,
 * per tensor) by moving ops between devices: relocate one op, swap two ops' devices, move an
 * op with its chain of single-successor successors. Every plan tried keeps MOIRAI's static
 * memory (5): the sum of pl_moirai_op_mem per device within
 * capacity (a start that breaks it only gets moves that do not add to an over-full device).
 * Stops at `deadline` (pl_now() clock), when the best reaches `target` (a lower bound), or
 * after many restarts without progress. p is replaced only by a strictly better plan (its
 * placement, priorities or none; no op or transfer order); returns st->moves. */
int pl_moirai_local_search(const pl_cost *k, pl_plan *p, double p_ms, double deadline,
                           double target, unsigned seed, const pl_sim_opts *judge, pl_ls_stats *st);

/* Independent searches from one start, spread over the pool (docs/dist.md, "moirai and
 * drl"): o->restarts of them (0: one per rank of pl_pool_of(o)), search i by
 * pl_moirai_local_search seeded pl_moirai_restart_seed(seed, i), on rank i % size, all of
 * them before `deadline`; p takes the best (the lowest simulated makespan, ties to the lower
 * i) when it is strictly better than p. st: the best's moves and makespan, the simulations
 * of all the searches, the wall time. Collective when the pool is on. Returns st->moves, or
 * -1 with err set when MPI failed. */
int pl_moirai_restarts(const pl_cost *k, pl_plan *p, double p_ms, double deadline, double target,
                       unsigned seed, const pl_sim_opts *judge, const pl_place_opts *o,
                       pl_ls_stats *st, pl_err *err);

/* Its parts, for tests that play a pool of any size in one process. A job: the start and
 * what every search shares; `count` searches over `size` ranks. */
typedef struct pl_ls_job {
    const pl_cost *k;
    const pl_plan *start;
    double start_ms, deadline, target;
    unsigned seed;
    const pl_sim_opts *judge;
    int count, size;
} pl_ls_job;
/* Search i's seed: `seed` itself for i = 0 (one search is the search as it always was), else
 * a hash of seed and i. */
unsigned pl_moirai_restart_seed(unsigned seed, int i);
/* The bytes of one search's result (a pl_dist_fn slot) for n_ops ops. */
size_t pl_moirai_restart_bytes(int n_ops);
/* Runs search i of job (a pl_ls_job) into slot: a pl_dist_fn. */
void pl_moirai_restart_run(int i, void *slot, void *job);
/* The winner among `count` slots: the lowest makespan, ties to the lower index. */
int pl_moirai_restart_best(const void *slots, int count, int n_ops);
/* p takes the winner's plan when it moved (placement, and priorities or none); st: its moves
 * and makespan, the simulations of all `count` (secs left as it was). Returns its moves. */
int pl_moirai_restart_take(const void *slots, int count, pl_plan *p, pl_ls_stats *st);

/* MOIRAI's pipeline on one cost table, without coarsening: warm start (best of HEFT and GETF
 * meeting (5)), the MILP when it can be solved in time, then the local search, until
 * `deadline` (pl_now() clock). Leaves its note in err->msg. pl_place_moirai wraps it. */
int pl_moirai_solve(const pl_cost *k, const pl_place_opts *o, double deadline, pl_plan *out,
                    pl_err *err);

#endif
