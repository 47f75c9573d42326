/* lp_common.h: helpers shared by m-SCT and METIS placement (private to src/place).
 *
 * Both check memory with the project's figure (place.h, docs/placement.md) through the one
 * tracker every algorithm uses (pk_mem_track, sched.h), and take upward ranks from
 * pk_upward_rank. */
#ifndef PLACER_PLACE_LP_COMMON_H
#define PLACER_PLACE_LP_COMMON_H

#include "placer/place.h"
#include "sched.h"

/* Writes a warning into err->msg on a successful run (the caller returns 0): how the
 * algorithms say which path they took without a field in a public header. */
void lp_warn(pl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fails naming the first op that no device of the cluster can run (its time is infinite
 * everywhere): no placement exists. */
int lp_check_runnable(const pl_cost *k, const char *algo, pl_err *err);

/* Checks a finished placement against pl_plan_static_memory: the project's own figure is the
 * judge, whatever our incremental estimate said. Names the device and the excess. */
int lp_check_memory(const pl_cost *k, const int *dev, const char *algo, pl_err *err);

#endif
