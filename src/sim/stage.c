/* stage.c: what each stage of a plan costs beyond its ops (docs/simulator.md, "Stages").
 *
 * On this machine's CPU a plan runs as the stages `placer split --cut schedule` writes, one
 * onnxruntime session run each: a stage pays its device's stage_overhead_s, stage_tensor_s for
 * each tensor it takes in or gives out, and moves their bytes at stage_copy_Bps. The stages are
 * the plan module's (pl_plan_schedule_stages), the one cut both the split and the simulator
 * use, their tensors the plan module's too (pl_plan_stage_io, what the split's stage files
 * list), and the charge goes to the op each stage begins with.
 *
 * A weight that ops of several stages read is copied into each of their stage files, and each
 * copy is read from memory when its stage runs, where the whole model, having just read its
 * one copy, finds it in the cache. Measured on rnnlm_unrolled (an LSTM step's MatMul, 20 rows
 * against 6.76 MB of weights, compute-bound): 0.63 ms in the whole model, 0.93 ms as a stage
 * of its own, 0.16 ms beyond the stage's other charges; two steps' MatMuls in one stage 1.97
 * ms instead of 1.26, 0.57 ms beyond: the cold read does not overlap the compute. A GEMV
 * (nmt_seq2seq's decoder steps, batch 1) reads its weights from memory in the whole model too,
 * and its split shows nothing beyond the other charges. So an op that reads all of a copied
 * weight (not a Gather or Slice of it), first in its stage and not first in the model, costs
 * what it would cold, the compute and the copy's bytes at the cost model's memory rate
 * (mem_bandwidth_Bps x eff_memory) one after the other, less its price: 0.25 and 0.50 ms
 * above, 0 for a memory-bound op. */
#include "placer/sim.h"

#include <math.h>
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

/* Bytes of the tensors in ts[0..n) that another stage made. A graph input is the caller's
 * array, which the session reads in place: a 44 MB input costs 0.19 ms beyond its kernel here
 * (docs/simulator.md, "Stages"), not the 3.5 ms it would at stage_copy_Bps. */
static double made_bytes(const pl_graph *g, const int *ts, int n)
{
    double b = 0;
    for (int k = 0; k < n; k++)
        if (g->tensors[ts[k]].producer >= 0) b += tensor_bytes(g, ts[k]);
    return b;
}

/* What stage io costs on device dv beyond its ops. */
static double stage_s(const pl_graph *g, const pl_device *dv, const pl_stage_io *io)
{
    double s = dv->stage_overhead_s + dv->stage_tensor_s * (io->n_inputs + io->n_outputs);
    if (dv->stage_copy_Bps > 0)
        s += (made_bytes(g, io->inputs, io->n_inputs) + sum_bytes(g, io->outputs, io->n_outputs)) /
             dv->stage_copy_Bps;
    return s;
}

/* Whether op reads all of its weight inputs (a Gather or Slice reads some rows). */
static bool reads_all(const pl_op *o)
{
    return o->cls != PL_CLASS_DATA_MOVEMENT;
}

/* The initializer op reads as its input i, or -1. */
static int weight_in(const pl_graph *g, const pl_op *o, int i)
{
    int t = o->inputs[i];
    if (t < 0) return -1;
    const pl_tensor *tp = &g->tensors[t];
    return (tp->flags & PL_TENSOR_WEIGHT) && tp->producer < 0 && tp->bytes > 0 ? t : -1;
}

/* What op, on device d, pays for reading `bytes` of weight copies cold (head comment). */
static double cold_s(const pl_cost *k, int op, int d, double bytes)
{
    const pl_device *dv = &k->c->devs[d];
    double bw = pl_cost_mem_rate(dv->mem_bandwidth_Bps, &k->params);
    if (!(bw > 0)) return 0;
    pl_cost_terms t;
    pl_cost_terms_of(&k->g->ops[op], k->g, dv, &t);
    double rate = pl_cost_rate(t.peak, k->params.eff_compute[t.cls], &k->params);
    double tc = t.flops > 0 && rate > 0 ? t.flops / rate : 0;
    return fmax(0, t.launch_s + tc + bytes / bw - pl_cost_op_s(k, op, d));
}

/* Adds to extra[op] what each op pays for reading weight copies cold: ops stage by stage
 * (topological order within), mark[t] == s once stage s read t, first[t] the topological
 * position of t's first reader in the model. */
static void copies_s(const pl_cost *k, const int *stage_of, const int *dev, int ns, double *extra)
{
    const pl_graph *g = k->g;
    int *off = pl_calloc((size_t)ns + 2, sizeof *off),
        *ops = pl_malloc((g->n_ops + 1) * sizeof *ops);
    int *mark = pl_malloc((g->n_tensors + 1) * sizeof *mark);
    int *first = pl_malloc((g->n_tensors + 1) * sizeof *first);
    for (int t = 0; t < g->n_tensors; t++)
        mark[t] = -1, first[t] = g->n_ops;
    for (int k2 = 0; k2 < g->n_ops; k2++) {
        int op = g->topo[k2];
        if (stage_of[op] >= 0) off[stage_of[op] + 2]++;
        for (int i = 0; i < g->ops[op].n_inputs && reads_all(&g->ops[op]); i++) {
            int t = weight_in(g, &g->ops[op], i);
            if (t >= 0 && first[t] > k2) first[t] = k2;
        }
    }
    for (int s = 0; s < ns; s++)
        off[s + 2] += off[s + 1];
    for (int k2 = 0; k2 < g->n_ops; k2++)
        if (stage_of[g->topo[k2]] >= 0) ops[off[stage_of[g->topo[k2]] + 1]++] = g->topo[k2];
    for (int s = 0; s < ns; s++)
        for (int j = off[s]; j < off[s + 1]; j++) {
            int op = ops[j];
            const pl_op *o = &g->ops[op];
            double cold = 0;
            for (int i = 0; i < o->n_inputs && reads_all(o); i++) {
                int t = weight_in(g, o, i);
                if (t < 0 || mark[t] == s) continue;
                mark[t] = s;
                if (g->topo_pos[op] > first[t]) cold += (double)g->tensors[t].bytes;
            }
            if (cold > 0 && dev[s] >= 0 && dev[s] < k->n_devs)
                extra[op] += cold_s(k, op, dev[s], cold);
        }
    free(first), free(mark), free(ops), free(off);
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
    copies_s(k, stage_of, dev, ns, extra);
    pl_stage_io_free(io, ns);
    free(io), free(first), free(dev), free(stage_of);
    return true;
}
