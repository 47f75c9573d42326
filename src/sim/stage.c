/* stage.c: what each stage of a plan costs beyond its ops (docs/simulator.md, "Stages").
 *
 * On this machine's CPU a plan runs as the stages `placer split --cut schedule` writes, one
 * onnxruntime session run each: a stage pays its device's stage_overhead_s and moves the
 * tensors it takes in and gives out at stage_copy_Bps. The stages are the plan module's
 * (pl_plan_schedule_stages), the one cut both the split and the simulator use, and the
 * charge goes to the op each stage begins with. */
#include "placer/sim.h"

#include <stdlib.h>

/* Bytes a tensor counts for (unknown sizes count 0, as everywhere in the simulator). */
static double tensor_bytes(const pl_graph *g, int t)
{
    return g->tensors[t].bytes > 0 ? (double)g->tensors[t].bytes : 0;
}

/* Whether t is fed to a stage by the runtime: not a weight, and a graph input or the result of
 * an op that is not a copied Constant (whose value every reading stage holds itself). */
static bool fed(const pl_graph *g, int t)
{
    const pl_tensor *tp = &g->tensors[t];
    if (tp->producer < 0) return !(tp->flags & PL_TENSOR_WEIGHT);
    return !pl_plan_is_const(g, tp->producer);
}

/* Bytes each stage takes in (graph inputs and other stages' results it reads, each once) and
 * gives out (results another stage reads, and graph outputs), as the split's stage files
 * list them. */
static void stage_bytes(const pl_graph *g, const int *stage_of, double *io)
{
    int *mark = pl_malloc((g->n_tensors + 1) * sizeof *mark);
    for (int t = 0; t < g->n_tensors; t++)
        mark[t] = -1;
    for (int op = 0; op < g->n_ops; op++) {
        int s = stage_of[op];
        if (s < 0) continue;
        const pl_op *o = &g->ops[op];
        for (int i = 0; i < o->n_inputs; i++) {
            int t = o->inputs[i], p;
            if (t < 0 || mark[t] == s || !fed(g, t)) continue;
            p = g->tensors[t].producer;
            if (p >= 0 && stage_of[p] == s) continue;
            mark[t] = s, io[s] += tensor_bytes(g, t); /* a stage reads its ops' inputs once */
        }
        for (int i = 0; i < o->n_outputs; i++) {
            int t = o->outputs[i];
            if (t < 0) continue;
            bool out = (g->tensors[t].flags & PL_TENSOR_OUTPUT) != 0;
            for (int c = 0; !out && c < g->tensors[t].n_consumers; c++)
                out = stage_of[g->tensors[t].consumers[c]] != s;
            if (out) io[s] += tensor_bytes(g, t);
        }
    }
    free(mark);
}

bool pl_sim_stage_s(const pl_cost *k, const pl_plan *p, double *extra)
{
    const pl_graph *g = k->g;
    bool any = false;
    for (int op = 0; op < g->n_ops; op++)
        extra[op] = 0;
    for (int d = 0; d < k->n_devs; d++)
        any |= k->c->devs[d].stage_overhead_s > 0 || k->c->devs[d].stage_copy_Bps > 0;
    if (!any) return false;
    size_t n = (size_t)g->n_ops + 1;
    int *stage_of = pl_malloc(n * sizeof *stage_of), *dev = pl_malloc(n * sizeof *dev);
    int *first = pl_malloc(n * sizeof *first);
    int ns = pl_plan_schedule_stages(g, p, stage_of, dev, first);
    double *io = pl_calloc((size_t)ns + 1, sizeof *io);
    stage_bytes(g, stage_of, io);
    for (int s = 0; s < ns; s++) {
        if (dev[s] < 0 || dev[s] >= k->n_devs) continue; /* the simulator refuses such plans */
        const pl_device *dv = &k->c->devs[dev[s]];
        extra[first[s]] = dv->stage_overhead_s;
        if (dv->stage_copy_Bps > 0) extra[first[s]] += io[s] / dv->stage_copy_Bps;
    }
    free(io), free(first), free(dev), free(stage_of);
    return true;
}
