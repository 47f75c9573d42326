/* cuts.h: coarser cuts, the post-pass pl_place runs on every algorithm's plan when the
 * cluster charges for stages (docs/placement.md, "Plans that pay"); private to src/place. */
#ifndef PLACER_PLACE_CUTS_H
#define PLACER_PLACE_CUTS_H

#include "placer/place.h"

/* Simulations the pass may run (its own first one included): every zoo model on
 * local-cpu-percore.json reaches its fixed point within it (nmt_seq2seq last, at 1,705), and at
 * about 0.25 ms a simulation of 1,200 ops the pass stays under half a second. */
#define PK_CUT_EVALS 2000

/* True when some device of k's cluster charges for a stage (stage_overhead_s or
 * stage_copy_Bps > 0): only then can merging stages change a prediction. */
bool pk_cuts_apply(const pl_cost *k);

/* Merges p's stages (pl_plan_schedule_stages) while the simulated makespan under contention c
 * falls: least busy stage first, it tries moving each stage's ops (with every op of their
 * colocation classes) next to a stage it reads from or feeds, on that stage's device, and
 * keeps the best move when it leaves no more stages, is faster (or as fast with fewer
 * stages), fits in memory (the simulator's verdict and the algorithms' static model) and
 * keeps every class together. Stops at a fixed point, after `budget` simulations or, when
 * `deadline` > 0 (pl_now()'s clock), at the first simulation it would start after it, keeping
 * the moves made; the result depends on nothing but its input when the deadline does not
 * stop it. p keeps its algo and figures; p->stages_before, stages_after and cut_simulations
 * are set. When p itself cannot be simulated (or does not fit), p is left as it is. */
void pk_coarsen_cuts(const pl_cost *k, pl_contention c, int budget, double deadline, pl_plan *p);

#endif
