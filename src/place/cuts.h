/* cuts.h: coarser cuts, the post-pass pl_place runs on every algorithm's plan when the
 * cluster charges for stages (docs/placement.md, "Plans that pay"); private to src/place. */
#ifndef PLACER_PLACE_CUTS_H
#define PLACER_PLACE_CUTS_H

#include "placer/place.h"

/* Simulations the pass may run (its own first one included): a few tries of every stage of the
 * finest zoo plan (208 stages on local-cpu.json, about 0.5 ms a simulation at 1,200 ops), so
 * that the pass stays under a second. */
#define PK_CUT_EVALS 1000

/* True when some device of k's cluster charges for a stage (stage_overhead_s or
 * stage_copy_Bps > 0): only then can merging stages change a prediction. */
bool pk_cuts_apply(const pl_cost *k);

/* Merges p's stages (pl_plan_schedule_stages) while the simulated makespan under contention c
 * falls: least busy stage first, it tries moving each stage's ops (with every op of their
 * colocation classes) next to a stage it reads from or feeds, on that stage's device, and
 * keeps the best move when it leaves no more stages, is faster (or as fast with fewer
 * stages), fits in memory (the simulator's verdict and the algorithms' static model) and
 * keeps every class together. Stops at a fixed point or after
 * `budget` simulations; the result depends on nothing but its input. p keeps its algo and
 * figures; p->stages_before, stages_after and cut_simulations are set. When p itself cannot
 * be simulated (or does not fit), p is left as it is. */
void pk_coarsen_cuts(const pl_cost *k, pl_contention c, int budget, pl_plan *p);

#endif
