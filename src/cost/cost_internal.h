/* cost_internal.h: what the table builder (cost.c) and the runtime fusion pass share. */
#ifndef PLACER_COST_INTERNAL_H
#define PLACER_COST_INTERNAL_H

#include "placer/cost.h"

/* Prices the ops that k->params.runtime_fusion fuses into an earlier op's kernel, in a table
 * already filled op by op (docs/cost.md, "Runtime fusion"). */
void pl_cost_fuse(pl_cost *k);

#endif
