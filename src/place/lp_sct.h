/* lp_sct.h: favourite children for m-SCT, from the LP relaxation of Hanen & Munier's SCT
 * scheduling problem, solved with Clp, CBC's LP engine (private to src/place; tests include it
 * directly).
 *
 * The exact formulation, the chain contraction that shrinks it without changing its
 * optimum, the rounding and the fall-back are in docs/placement-lp.md. */
#ifndef PLACER_PLACE_LP_SCT_H
#define PLACER_PLACE_LP_SCT_H

#include "placer/place.h"

/* Above this many LP nodes (chains of ops, after contraction) the LP is not built: Clp
 * would need tens of seconds there (docs/placement-lp.md has the measurements). */
#define LP_SCT_MAX_NODES 30000
#define LP_SCT_DEFAULT_TIME_S 30.0

typedef enum {
    LP_SCT_OPTIMAL,    /* LP solved to optimality; favourites from its rounding */
    LP_SCT_TRIVIAL,    /* one device, or no edge between chains: no LP needed */
    LP_SCT_TOO_BIG,    /* over max_nodes: greedy favourites */
    LP_SCT_TIME_LIMIT, /* the solver hit the time limit: greedy favourites */
    LP_SCT_FAILED,     /* the solver gave up (numerical trouble): greedy favourites */
    LP_SCT_CRASHED     /* the solver crashed, stalled or sent garbage (common.h, "Isolated solves"):
                          greedy */
} lp_sct_status;

const char *lp_sct_status_name(lp_sct_status s);

typedef struct lp_sct_info {
    lp_sct_status status;
    int n_ops;
    int n_edges;    /* distinct (producer, consumer) pairs */
    int n_chains;   /* LP nodes after chain contraction */
    int n_lp_edges; /* x columns: pairs between chains */
    int n_cols, n_rows, n_nz;
    int n_favorites;         /* ops with a favourite child */
    double lp_makespan_s;    /* LP optimum, seconds (SCT model: not a bound on a plan) */
    double build_s, solve_s; /* wall time to build the LP and to solve it */
    char why[160];           /* LP_SCT_CRASHED: what went wrong, and when */
} lp_sct_info;

/* Fills fav_child[op] (-1: none) so that each op has at most one favourite child and is the
 * favourite of at most one parent. max_nodes <= 0 means LP_SCT_MAX_NODES; time_limit_s <= 0
 * means LP_SCT_DEFAULT_TIME_S. Falls back to a greedy heaviest-communication matching when
 * the LP is too big, times out or fails (info->status says which). Fails only when an op can
 * run on no device. */
int lp_sct_favorites(const pl_cost *k, double time_limit_s, int max_nodes, int *fav_child,
                     lp_sct_info *info, pl_err *err);

#endif
