/* lp_common.h: helpers shared by m-SCT and METIS placement (private to src/place).
 *
 * Both algorithms check memory with the project's figure (place.h, docs/placement.md):
 *     static(d) = distinct weights of d's ops + sum of held outputs + largest working set
 *                 (+ the I/O buffers on the I/O device),
 * with ws and held per op from pl_op_memory. We keep it incrementally (weights
 * reference-counted per device) so that a list scheduler can ask "does op i still fit on
 * device d?" in O(inputs of i), and a repair can take ops away again. */
#ifndef PLACER_PLACE_LP_COMMON_H
#define PLACER_PLACE_LP_COMMON_H

#include "placer/place.h"
#include "sched.h"

typedef struct lp_mem {
    const pl_cost *k;
    int n_devs;
    double *ws_bytes, *held_bytes; /* per op, from pl_op_memory */
    double *own_weights_bytes;     /* per op: its distinct weights (an upper bound of new ones) */
    double io_bytes;               /* on the I/O device, whatever runs there */
    double *weights_bytes;         /* per device: distinct weights resident */
    double *held_sum_bytes;        /* per device */
    double *ws_max_bytes;          /* per device: largest working set (not lowered by removal) */
    int *refs;                     /* [tensor * n_devs + dev]: ops on dev touching weight tensor */
} lp_mem;

void lp_mem_init(lp_mem *m, const pl_cost *k);
void lp_mem_free(lp_mem *m);
/* Static memory of `dev` if `op` were added to it. */
double lp_mem_need(const lp_mem *m, int op, int dev);
/* lp_mem_need(m, op, dev) <= cap, in O(1) when even all of op's weights would fit. */
bool lp_mem_fits(const lp_mem *m, int op, int dev, double cap);
/* Bytes moving `op` off `dev` frees for sure: weights only it touches there, and its held
 * outputs. */
double lp_mem_freed(const lp_mem *m, int op, int dev);
void lp_mem_add(lp_mem *m, int op, int dev);
void lp_mem_remove(lp_mem *m, int op, int dev);
/* Recomputes every device's largest working set from a placement (after removals). */
void lp_mem_recompute_ws(lp_mem *m, const int *dev_of_op);
double lp_mem_used(const lp_mem *m, int dev);
/* Upward rank (HEFT's): mean time plus the longest (mean transfer + rank) over successors,
 * the remaining critical path; list schedulers break ties by it. */
void lp_upward_rank(const pl_cost *k, double *rank);

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
