/* stage.c: what each stage of a plan costs beyond its ops (docs/simulator.md, "Stages").
 *
 * On this machine's CPU a plan runs as the stages `placer split --cut schedule` writes, one
 * onnxruntime session run each: a stage pays its device's stage_overhead_s, stage_tensor_s for
 * each tensor it takes in or gives out, and moves their bytes at stage_copy_Bps. The stages are
 * the plan module's (pl_plan_schedule_stages), the one cut both the split and the simulator
 * use, their tensors the plan module's too (pl_plan_stage_io, what the split's stage files
 * list), and the charge goes to the op each stage begins with. */
#include "placer/sim.h"

#include <stdlib.h>

/* Bytes a tensor counts for (unknown sizes count 0, as everywhere in the simulator). */
static double tensor_bytes(const pl_graph *g, int t)
{
    return g->tensors[t].bytes > 0 ? (double)g->tensors[t].bytes : 0;
}

/* Bytes of the tensors in ts[0..n). */
static double sum_bytes(const pl_graph *g, const int *ts, int n)
{
    double b = 0;
    for (int k = 0; k < n; k++)
        b += tensor_bytes(g, ts[k]);
    return b;
}

/* What stage io costs on device dv beyond its ops. */
static double stage_s(const pl_graph *g, const pl_device *dv, const pl_stage_io *io)
{
    double s = dv->stage_overhead_s + dv->stage_tensor_s * (io->n_inputs + io->n_outputs);
    if (dv->stage_copy_Bps > 0)
        s += (sum_bytes(g, io->inputs, io->n_inputs) + sum_bytes(g, io->outputs, io->n_outputs)) /
             dv->stage_copy_Bps;
    return s;
}

bool pl_sim_stage_s(const pl_cost *k, const pl_plan *p, double *extra)
{
    const pl_graph *g = k->g;
    bool any = false;
    for (int op = 0; op < g->n_ops; op++)
        extra[op] = 0;
    for (int d = 0; d < k->n_devs; d++)
        any |= k->c->devs[d].stage_overhead_s > 0 || k->c->devs[d].stage_tensor_s > 0 ||
               k->c->devs[d].stage_copy_Bps > 0;
    if (!any) return false;
    size_t n = (size_t)g->n_ops + 1;
    int *stage_of = pl_malloc(n * sizeof *stage_of), *dev = pl_malloc(n * sizeof *dev);
    int *first = pl_malloc(n * sizeof *first);
    int ns = pl_plan_schedule_stages(g, p, stage_of, dev, first);
    pl_stage_io *io = pl_malloc(((size_t)ns + 1) * sizeof *io);
    pl_plan_stage_io(g, stage_of, ns, io);
    for (int s = 0; s < ns; s++)
        if (dev[s] >= 0 && dev[s] < k->n_devs) /* the simulator refuses other plans */
            extra[first[s]] = stage_s(g, &k->c->devs[dev[s]], &io[s]);
    pl_stage_io_free(io, ns);
    free(io), free(first), free(dev), free(stage_of);
    return true;
}
