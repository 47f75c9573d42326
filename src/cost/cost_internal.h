/* cost_internal.h: what the table builder (cost.c) and the runtime fusion pass share. */
#ifndef PLACER_COST_INTERNAL_H
#define PLACER_COST_INTERNAL_H

#include "placer/cost.h"

/* Prices the ops that k->params.runtime_fusion fuses into an earlier op's kernel, in a table
 * already filled op by op (docs/cost.md, "Runtime fusion"). */
void pl_cost_fuse(pl_cost *k);

/* ---- cores.c ---- */
/* A one-core time of op (a profile's: one intra-op thread) on device d of d->cores cores:
 * scaled by the estimate's gain on d over one of its cores (docs/cost.md, "CPU cores"). */
double pl_cost_on_cores(const pl_op *op, const pl_graph *g, const pl_device *d,
                        const pl_cost_params *p, double one_core_s);

/* ---- gpu.c ---- */
/* The GPU kernel parameters that apply to device d: gpu_model's for a GPU of that model, else
 * gpu's; NULL when d is no GPU or the rules are off (the roofline then). */
const pl_gpu_params *pl_cost_gpu_params(const pl_cost_params *p, const pl_device *d);
/* The op's precision: its first output's dtype; task-graph byte vectors count as fp32. */
pl_precision pl_cost_op_precision(const pl_op *op, const pl_graph *g);
/* A fused member's share of its kernel (no launch): its arithmetic and `bytes` it adds. */
double pl_gpu_member_s(const pl_op *op, const pl_graph *g, const pl_device *d,
                       const pl_gpu_params *gp, double bytes);
#endif
