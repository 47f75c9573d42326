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

/* MOIRAI's pipeline on one cost table, without coarsening: warm start (best of HEFT and GETF
 * meeting (5)), the MILP when it can be solved in time, then the local search, until
 * `deadline` (pl_now() clock). Leaves its note in err->msg. pl_place_moirai wraps it. */
int pl_moirai_solve(const pl_cost *k, const pl_place_opts *o, double deadline, pl_plan *out,
                    pl_err *err);

#endif
