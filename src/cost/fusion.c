/* fusion.c: the table prices what the runtime runs, not the graph as written (docs/cost.md,
 * "Runtime fusion").
 *
 * onnxruntime fuses an op into the kernel of the op before it (ConvActivationFusion,
 * MatMulAddFusion, LayerNormFusion, GeluFusion, ...: the built-in fusion rules, graph.h). The
 * fused kernel reads its inputs once and writes only its last result: the first op of the
 * kernel (the root) keeps its own price, and each later member costs, with no launch,
 *
 *   max(flops / (peak · eff_compute[class]), new_bytes / (bandwidth · eff_memory))
 *
 * where new_bytes are the member's inputs from outside the kernel that no earlier member
 * reads (a residual, a bias, LayerNorm's gamma) plus, for the last member, what its result
 * has beyond the root's (LayerNorm's root writes a mean, its last op the whole tensor). A
 * BatchNormalization right after a Conv costs 0: ConvBNFusion folds it into the Conv's
 * weights when the session is made. Given times (a task graph's, a profile's) are
 * measurements of the op and stay as given. */
#include "cost_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Does any op start a rule? Most task graphs have none, and the match needs reachability. */
static bool any_root(const pl_graph *g, const pl_fusion_rules *r)
{
    for (int op = 0; op < g->n_ops; op++)
        for (int i = 0; i < r->n; i++)
            if (strcmp(g->ops[op].type, r->rules[i].types[0]) == 0) return true;
    return false;
}

/* A fused kernel's members, in topological order: the root, then the ops fused into it. */
typedef struct kernels {
    const int *root_of;
    int *off, *ops; /* CSR by root: ops[off[root] .. off[root + 1]) */
} kernels;

static void kernels_build(kernels *x, const pl_graph *g, const int *root_of)
{
    x->root_of = root_of;
    x->off = pl_calloc((size_t)g->n_ops + 2, sizeof *x->off);
    x->ops = pl_malloc(((size_t)g->n_ops + 1) * sizeof *x->ops);
    for (int op = 0; op < g->n_ops; op++)
        x->off[root_of[op] + 2]++;
    for (int op = 0; op < g->n_ops; op++)
        x->off[op + 2] += x->off[op + 1];
    for (int i = 0; i < g->n_ops; i++) /* topological order within each kernel */
        x->ops[x->off[x->root_of[g->topo[i]] + 1]++] = g->topo[i];
}

static bool in_kernel(const kernels *x, int op, int root)
{
    return op >= 0 && x->root_of[op] == root;
}

/* Does a member of m's kernel before m (topologically) read tensor t? */
static bool read_before(const kernels *x, int m, int t, const pl_graph *g)
{
    int root = x->root_of[m];
    for (int j = x->off[root]; j < x->off[root + 1] && x->ops[j] != m; j++) {
        const pl_op *o = &g->ops[x->ops[j]];
        for (int i = 0; i < o->n_inputs; i++)
            if (o->inputs[i] == t) return true;
    }
    return false;
}

/* Input bytes of member m that the kernel reads for m alone: tensors from outside the kernel
 * that no member before m (in topological order) reads. */
static double new_input_bytes(const kernels *x, const pl_graph *g, int m)
{
    const pl_op *o = &g->ops[m];
    double b = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        int t = o->inputs[i];
        if (t < 0 || in_kernel(x, g->tensors[t].producer, x->root_of[m])) continue;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = o->inputs[j] == t;
        if (!seen && !read_before(x, m, t, g) && g->tensors[t].bytes > 0)
            b += (double)g->tensors[t].bytes;
    }
    return b;
}

/* The kernel's last member (the one whose result leaves it): every member reaches it, so it
 * is last in topological order. */
static bool is_sink(const kernels *x, int m)
{
    int root = x->root_of[m];
    return x->ops[x->off[root + 1] - 1] == m;
}

/* The member's latest producer inside the kernel. */
static int prev_member(const kernels *x, const pl_graph *g, int m)
{
    int root = x->root_of[m], prev = root;
    for (int i = 0; i < g->ops[m].n_inputs; i++) {
        int t = g->ops[m].inputs[i];
        int p = t < 0 ? -1 : g->tensors[t].producer;
        if (in_kernel(x, p, root) && g->topo_pos[p] > g->topo_pos[prev]) prev = p;
    }
    return prev;
}

/* The bytes member m moves in its kernel: its new inputs, and for the last member what its
 * result has beyond the root's. -1: none at all (a BatchNormalization folded into its Conv). */
static double member_bytes(const pl_cost *k, const kernels *x, int m)
{
    const pl_graph *g = k->g;
    if (!strcmp(g->ops[m].type, "BatchNormalization") &&
        !strcmp(g->ops[k->fused_prev[m]].type, "Conv"))
        return -1; /* ConvBNFusion: folded into the Conv's weights */
    double b = new_input_bytes(x, g, m);
    int root = x->root_of[m];
    if (is_sink(x, m) && k->out_bytes[m] > k->out_bytes[root])
        b += k->out_bytes[m] - k->out_bytes[root];
    return b;
}

static double fused_price(const pl_cost *k, int m, double bytes, int dev)
{
    if (bytes < 0) return 0;
    const pl_device *d = &k->c->devs[dev];
    const pl_gpu_params *gp = pl_cost_gpu_params(&k->params, d);
    if (gp && pl_gpu_has_shapes(&k->g->ops[m], k->g))
        return pl_gpu_member_s(&k->g->ops[m], k->g, d, gp, bytes);
    pl_cost_terms t;
    pl_cost_terms_of(&k->g->ops[m], k->g, &k->c->devs[dev], &t);
    t.launch_s = 0;
    t.bytes = bytes; /* its tensors' bytes: a member's re-reads are not counted (member_bytes) */
    t.reread_bytes = 0;
    return pl_cost_terms_s(&t, &k->params);
}

void pl_cost_fuse(pl_cost *k)
{
    const pl_graph *g = k->g;
    if (k->params.runtime_fusion != PL_FUSION_ORT) return;
    pl_fusion_rules *r = pl_fusion_rules_default();
    int *root_of = NULL;
    kernels x = {0};
    if (!any_root(g, r)) goto done;
    root_of = pl_malloc(((size_t)g->n_ops + 1) * sizeof *root_of);
    pl_fusion_match(g, r, NULL, root_of, NULL);
    int n_fused = 0;
    for (int op = 0; op < g->n_ops; op++)
        n_fused += root_of[op] != op;
    if (!n_fused) goto done;
    kernels_build(&x, g, root_of);
    size_t cells = (size_t)k->n_ops * k->n_devs;
    k->fused_root = pl_malloc((size_t)k->n_ops * sizeof *k->fused_root);
    k->fused_prev = pl_malloc((size_t)k->n_ops * sizeof *k->fused_prev);
    k->unfused_s = pl_malloc(cells * sizeof *k->unfused_s);
    memcpy(k->unfused_s, k->op_s, cells * sizeof *k->unfused_s);
    for (int op = 0; op < g->n_ops; op++) {
        bool fused = root_of[op] != op;
        k->fused_root[op] = fused ? root_of[op] : -1;
        k->fused_prev[op] = fused ? prev_member(&x, g, op) : -1;
    }
    for (int op = 0; op < g->n_ops; op++) {
        if (k->fused_root[op] < 0) continue;
        double bytes = member_bytes(k, &x, op);
        for (int dev = 0; dev < k->n_devs; dev++) {
            size_t cell = (size_t)op * k->n_devs + dev;
            /* an op that cannot run there (INFINITY) cannot run fused there either */
            if (!k->given[cell] && isfinite(k->op_s[cell]))
                k->op_s[cell] = fused_price(k, op, bytes, dev);
        }
    }
done:
    free(x.off), free(x.ops);
    free(root_of);
    pl_fusion_rules_free(r);
}
