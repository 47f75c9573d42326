/* algos.h: the algorithms' entry points, private to src/place (the registry in place.c
 * lists them; callers use pl_algo_find). */
#ifndef PLACER_PLACE_ALGOS_H
#define PLACER_PLACE_ALGOS_H

#include "placer/place.h"

int pl_place_single(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_expert(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_expert_layers(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_m_topo(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_m_etf(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_m_sct(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_heft(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_getf(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_metis(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_moirai(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);
int pl_place_random(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err);

/* pl_place, its coarser cuts (cuts.h) stopped at `deadline` (pl_now()'s clock; 0: none, which
 * is pl_place): for the algorithms a time-limited search runs inside itself (moirai's
 * heuristics and warm starts), whose cut pass would otherwise run its whole budget of
 * simulations whatever the caller's time limit (seconds each on a model of thousands of ops). */
int pk_place_until(const pl_algo *a, const pl_cost *k, const pl_place_opts *o, double deadline,
                   pl_plan *out, pl_err *err);

/* What moirai's heuristics did (moirai_coarse.c): how many ran of those listed (every
 * algorithm but random, moirai and the learned ones), and whether their deadline passed
 * (then a coarser-cuts pass running was stopped, and the rest were skipped once one fit). */
typedef struct pk_heur_stats {
    int run, listed;
    bool late;
} pk_heur_stats;

/* When moirai's heuristics stop, for a search started at t0 with `limit` seconds (docs/moirai.md,
 * "Time budget"): 60 % of the limit, at least a few seconds. */
double pk_moirai_heuristics_end(double t0, double limit);

/* moirai's heuristics on a model until `deadline` (pl_now()'s clock), each judged by the
 * simulator under o->contention, memory checked: the best plan (the caller frees it), NULL
 * when none fits (the first refusal in why). */
pl_plan *pk_moirai_heuristics(const pl_cost *k, const pl_place_opts *o, double deadline,
                              pk_heur_stats *st, pl_err *why);

#endif
