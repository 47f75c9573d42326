/* layers.c: a model's layers as MOPAR profiles them (docs/serverless.md, "Layers").
 *
 * A layer is what the runtime runs as one: the coarsening's fusion groups (Conv+BN+Relu,
 * MatMul+Add, a decomposed LayerNorm, ...) with the Constants that feed only them. Its weights
 * stay resident in the function that holds it; its activation memory is Eq. (1)-(3) over its
 * ops, each op holding the activations it reads and writes: ops at the same depth inside the
 * layer (parallel branches) hold theirs together, a chain of depths holds the largest (Eq. 1's
 * max, Eq. 2's sum per position, Eq. 3's max of the two). Its time is its ops' on one vCPU of the
 * platform, from the cost model; onnxruntime runs a function's ops one after the other, so a
 * layer's branches add up (Eq. 2 takes their max, for branches that run at once). Its dominant ops
 * are the fewest that cover 80 % of its memory (§II-B); those of the dense class are what η
 * sub-slices divide. */
#include "placer/coarsen.h"
#include "placer/serverless.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double tensor_bytes(const pl_graph *g, int t)
{
    return t >= 0 && g->tensors[t].bytes > 0 ? (double)g->tensors[t].bytes : 0;
}

static bool is_weight(const pl_graph *g, int t)
{
    return t >= 0 && (g->tensors[t].flags & PL_TENSOR_WEIGHT);
}

/* What op holds while it runs beyond the weights: the activations it reads and writes. */
static double op_bytes(const pl_graph *g, int op)
{
    const pl_op *o = &g->ops[op];
    double b = 0;
    for (int i = 0; i < o->n_inputs; i++)
        if (!is_weight(g, o->inputs[i])) b += tensor_bytes(g, o->inputs[i]);
    for (int i = 0; i < o->n_outputs; i++)
        b += tensor_bytes(g, o->outputs[i]);
    return b;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] < y[0]) - (x[0] > y[0]);
}

/* The dominant ops of a layer (the fewest covering 80 % of its ops' memory, weights and
 * activations): their count, and the time of those of the dense class (the part sub-slices
 * divide). */
static void dominant(const pl_graph *g, const pl_cost *k, const int *ops, int n, pl_sl_layer *L)
{
    double *pairs = pl_malloc(((size_t)n + 1) * 3 * sizeof *pairs), total = 0;
    for (int m = 0; m < n; m++) {
        pairs[3 * m] = op_bytes(g, ops[m]) + k->weight_bytes[ops[m]];
        pairs[3 * m + 1] = pl_cost_op_s(k, ops[m], 0);
        pairs[3 * m + 2] = g->ops[ops[m]].cls == PL_CLASS_DENSE;
        total += pairs[3 * m];
    }
    qsort(pairs, n, 3 * sizeof *pairs, by_bytes_desc);
    double covered = 0;
    for (int m = 0; m < n && (covered < 0.8 * total || m == 0); m++) {
        covered += pairs[3 * m], L->n_dominant++;
        if (pairs[3 * m + 2] > 0) L->par_s += pairs[3 * m + 1];
    }
    free(pairs);
}

/* Eq. (1)-(3): each op's depth in the layer (0 for ops fed from outside it); the layer holds
 * the most that the ops of one depth hold together. layer_of[op] names op's layer. */
static double layer_bytes(const pl_graph *g, const int *ops, int n, const int *layer_of, int *depth)
{
    int deepest = 0;
    for (int m = 0; m < n; m++) { /* ops are in topological order */
        const pl_op *o = &g->ops[ops[m]];
        int d = 0;
        for (int i = 0; i < o->n_inputs; i++) {
            int t = o->inputs[i], p = t >= 0 ? g->tensors[t].producer : -1;
            if (p >= 0 && layer_of[p] == layer_of[ops[m]]) d = d > depth[p] + 1 ? d : depth[p] + 1;
        }
        depth[ops[m]] = d, deepest = d > deepest ? d : deepest;
    }
    double *at = pl_calloc((size_t)deepest + 1, sizeof *at), most = 0;
    for (int m = 0; m < n; m++)
        at[depth[ops[m]]] += op_bytes(g, ops[m]);
    for (int d = 0; d <= deepest; d++)
        most = fmax(most, at[d]);
    free(at);
    return most;
}

static void fill_layer(const pl_graph *g, const pl_cost *k, const pl_coarsening *c, int coarse,
                       const int *layer_of, int *depth, pl_sl_layer *L)
{
    int off = c->member_off[coarse], n = c->member_off[coarse + 1] - off;
    L->ops = pl_malloc(((size_t)n + 1) * sizeof *L->ops), L->n_ops = n;
    memcpy(L->ops, c->members + off, (size_t)n * sizeof *L->ops);
    for (int m = 0; m < n; m++) {
        const pl_op *o = &g->ops[L->ops[m]];
        L->t1_s += pl_cost_op_s(k, L->ops[m], 0);
        for (int i = 0; i < o->n_outputs; i++)
            L->out_bytes += tensor_bytes(g, o->outputs[i]);
    }
    L->mem_mb = layer_bytes(g, L->ops, n, layer_of, depth) / PL_PLATFORM_MB_BYTES;
    dominant(g, k, L->ops, n, L);
}

/* The tensors between layers: made by an op of one layer and read by ops of later ones (graph
 * inputs, weights and Constants' values are not: the request brings the first, every
 * function holds the others). */
static void fill_tensors(const pl_graph *g, const int *layer_of, pl_sl_graph *sg)
{
    int cap = 0;
    sg->n_tensors = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tp = &g->tensors[t];
        if (tp->producer < 0 || is_weight(g, t) || tensor_bytes(g, t) <= 0) continue;
        int from = layer_of[tp->producer], n_to = 0;
        int *to = pl_malloc(((size_t)tp->n_consumers + 1) * sizeof *to);
        for (int c = 0; c < tp->n_consumers; c++) {
            int l = layer_of[tp->consumers[c]];
            bool dup = false;
            for (int m = 0; m < n_to && !dup; m++)
                dup = to[m] == l;
            if (l != from && !dup) to[n_to++] = l;
        }
        if (!n_to) {
            free(to);
            continue;
        }
        pl_grow((void **)&sg->tensors, &cap, sg->n_tensors, sizeof *sg->tensors);
        sg->tensors[sg->n_tensors++] = (pl_sl_tensor){tensor_bytes(g, t), from, to, n_to};
    }
}

/* The weights: each initializer (or Constant's value) counts once, in the one layer that reads
 * it, or, read by several layers (a tied embedding, an unrolled RNN's cells), as a shared weight
 * each of its readers lists, so that a function holding several of them holds it once. */
static void fill_weights(const pl_graph *g, const int *layer_of, pl_sl_graph *sg)
{
    int cap = 0, *seen = pl_malloc(((size_t)sg->n + 1) * sizeof *seen);
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tp = &g->tensors[t];
        if (!is_weight(g, t) || tensor_bytes(g, t) <= 0) continue;
        int n = 0;
        for (int c = 0; c < tp->n_consumers; c++) {
            int l = layer_of[tp->consumers[c]];
            bool dup = false;
            for (int m = 0; m < n && !dup; m++)
                dup = seen[m] == l;
            if (!dup) seen[n++] = l;
        }
        if (n == 1) sg->layers[seen[0]].weight_mb += tensor_bytes(g, t) / PL_PLATFORM_MB_BYTES;
        if (n < 2) continue;
        pl_grow((void **)&sg->wt_mb, &cap, sg->n_wts, sizeof *sg->wt_mb);
        sg->wt_mb[sg->n_wts] = tensor_bytes(g, t) / PL_PLATFORM_MB_BYTES;
        for (int m = 0; m < n; m++) {
            pl_sl_layer *L = &sg->layers[seen[m]];
            L->wts = pl_realloc(L->wts, ((size_t)L->n_wts + 1) * sizeof *L->wts);
            L->wts[L->n_wts++] = sg->n_wts;
        }
        sg->n_wts++;
    }
    free(seen);
}

/* The request's payload: each graph input (not a weight) once in gin_bytes, listed by every
 * layer that reads it, so that a function holding several of them is carried it once (as
 * fill_weights does for shared weights); each graph output's bytes in the layer that makes it. */
static void fill_payload(const pl_graph *g, const int *layer_of, pl_sl_graph *sg)
{
    int cap = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tp = &g->tensors[t];
        if (tensor_bytes(g, t) <= 0 || is_weight(g, t)) continue;
        if ((tp->flags & PL_TENSOR_OUTPUT) && tp->producer >= 0)
            sg->layers[layer_of[tp->producer]].gout_bytes += tensor_bytes(g, t);
        if (!(tp->flags & PL_TENSOR_INPUT) || tp->n_consumers == 0) continue;
        pl_grow((void **)&sg->gin_bytes, &cap, sg->n_gins, sizeof *sg->gin_bytes);
        sg->gin_bytes[sg->n_gins] = tensor_bytes(g, t);
        for (int c = 0; c < tp->n_consumers; c++) {
            pl_sl_layer *L = &sg->layers[layer_of[tp->consumers[c]]];
            if (L->n_gins && L->gins[L->n_gins - 1] == sg->n_gins) continue; /* listed */
            L->gins = pl_realloc(L->gins, ((size_t)L->n_gins + 1) * sizeof *L->gins);
            L->gins[L->n_gins++] = sg->n_gins;
        }
        sg->n_gins++;
    }
}

pl_sl_graph *pl_sl_from_graph(const pl_graph *g, const pl_platform *pf,
                              const pl_cost_params *params, pl_err *err)
{
    pl_coarsen_opts co = {0};
    pl_coarsening *c = NULL;
    if (pl_coarsen(g, &co, &c, err) < 0) return NULL;
    pl_cost *k = pl_cost_new(g, pf->vcpu, params, NULL, 0, err);
    if (!k) return pl_coarsening_free(c), NULL;
    int n = c->coarse->n_ops;
    int *layer_of = pl_malloc(((size_t)g->n_ops + 1) * sizeof *layer_of);
    int *depth = pl_calloc((size_t)g->n_ops + 1, sizeof *depth);
    for (int pos = 0; pos < n; pos++) { /* layers in the coarse graph's topological order */
        int coarse = c->coarse->topo[pos];
        for (int m = c->member_off[coarse]; m < c->member_off[coarse + 1]; m++)
            layer_of[c->members[m]] = pos;
    }
    pl_sl_graph *sg = pl_sl_new(n, 0);
    free(sg->tensors), sg->tensors = NULL;
    for (int pos = 0; pos < n; pos++)
        fill_layer(g, k, c, c->coarse->topo[pos], layer_of, depth, &sg->layers[pos]);
    fill_tensors(g, layer_of, sg);
    fill_weights(g, layer_of, sg);
    fill_payload(g, layer_of, sg);
    free(depth), free(layer_of);
    pl_cost_free(k), pl_coarsening_free(c);
    return sg;
}
