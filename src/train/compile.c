/* compile.c: a training strategy as one graph with a placement (docs/train.md, "The compiler").
 *
 * TAG's compiler rewrites the single-device training graph into a distributed one; placer's
 * writes it as an ordinary pl_graph and pl_plan, so that the one simulator runs it with its
 * links, contention and memory model. Every training op becomes one op per replica, each on one
 * device with its share of the batch (a replica on share s of the batch costs t * (f * s + 1 -
 * f), f the op's batch fraction). Where a tensor's producer and reader are sharded differently,
 * Split ops on the producers' devices cut the pieces each reader needs and a Concat on the
 * reader's device joins them; partial sums (weight gradients) are added by an AddN where they are
 * read. A parameter's gradient is synchronised once per op group bucket: ring AllReduce as its
 * two phases (each device sends (D-1)/D of the bucket to its ring successor, twice), or a
 * parameter server (push, AddN, the update on the server, pull). Duplicated ops (the Duplicate
 * option, SFB) run on the whole batch on every device of their group, which broadcasts their
 * inputs and leaves their gradients nothing to synchronise. */
#include "placer/train.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { REP_SHARD, REP_WHOLE } rep_mode;

/* Where one training op runs: n replicas, replica r on dev[r] over the batch [lo[r], hi[r]). */
typedef struct reps {
    int n;
    int *dev;
    double *lo, *hi;
    rep_mode mode;
    int *op;   /* compiled op of each replica */
    int **out; /* [r][k]: compiled tensor of its k-th output */
} reps;

typedef struct cc {
    const pl_train_ctx *x;
    const pl_train_graph *t;
    const pl_train_strategy *s;
    const pl_cluster *c;
    pl_graph *g; /* being built */
    reps *rp;    /* per training op */
    int *origin;
    int cap_origin;
    int *wt_on; /* [tensor * D + d]: the compiled copy of a weight or whole input on d, -1 */
    int D;
    int uniq;         /* counter for inserted names */
    int *ps_of_group; /* per op group: its parameter server's device (PS option), -1 */
    int *op_dev;      /* per compiled op: its device */
    int cap_op_dev;
    int *synced;        /* [param * D + d]: its synchronised gradient on d, -1 when not synced */
    int *barrier;       /* per device: "every gradient made here" (no overlap), -1 */
    int *stream;        /* per device: the last collective's result there (s->bucket), -1 */
    int *param_of_grad; /* per training tensor: the parameter whose gradient it is, -1 */
} cc;

/* ---- building blocks ---- */

static void note_op(cc *c, int op, int from, int d)
{
    pl_grow((void **)&c->origin, &c->cap_origin, op + 1, sizeof *c->origin);
    c->origin[op] = from;
    pl_grow((void **)&c->op_dev, &c->cap_op_dev, op + 1, sizeof *c->op_dev);
    c->op_dev[op] = d;
}

static int new_tensor(cc *c, const char *name, double bytes, unsigned flags)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", name);
    if (pl_graph_find_tensor(c->g, buf) >= 0) snprintf(buf, sizeof buf, "%s#%d", name, c->uniq++);
    int t = pl_graph_tensor(c->g, buf);
    int64_t b = bytes > 0 ? (int64_t)llround(bytes) : 0;
    pl_tensor_set_shape(&c->g->tensors[t], PL_DT_UINT8, 1, &b);
    c->g->tensors[t].flags |= PL_TENSOR_BYTES_ONLY | flags;
    return t;
}

/* An inserted op (Split, Concat, AddN, a collective's step) on device d: data movement over
 * `bytes`, `flops` of arithmetic. */
static int new_op(cc *c, const char *name, const char *type, int d, double flops, double bytes,
                  pl_op_class cls)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s@%s", name, c->c->devs[d].name);
    if (pl_graph_find_op(c->g, buf) >= 0)
        snprintf(buf, sizeof buf, "%s@%s#%d", name, c->c->devs[d].name, c->uniq++);
    int op = pl_graph_add_op(c->g, buf, type, "");
    pl_op *o = &c->g->ops[op];
    o->cls = cls, o->flops = flops, o->bytes_moved = bytes, o->flags |= PL_OP_COST_GIVEN;
    note_op(c, op, -1, d);
    return op;
}

static double tbytes(const pl_graph *g, int t)
{
    return g->tensors[t].bytes > 0 ? (double)g->tensors[t].bytes : 0;
}

/* ---- replicas ---- */

/* The devices of op group i's device groups, in device order; their count. */
static int group_devices(const cc *c, int i, int *out)
{
    const pl_dev_groups *dg = &c->x->dg;
    int n = 0;
    for (int j = 0; j < dg->n; j++)
        if (c->s->P[(size_t)i * dg->n + j])
            for (int k = dg->off[j]; k < dg->off[j + 1]; k++)
                out[n++] = dg->dev[k];
    for (int a = 1; a < n; a++) /* device order, so that rings and shards are stable */
        for (int b = a; b > 0 && out[b] < out[b - 1]; b--) {
            int tmp = out[b];
            out[b] = out[b - 1], out[b - 1] = tmp;
        }
    return n;
}

static void set_reps(reps *r, const int *devs, int n, rep_mode mode, const double *weight)
{
    r->n = n, r->mode = mode;
    r->dev = pl_malloc((size_t)n * sizeof *r->dev);
    r->lo = pl_malloc((size_t)n * sizeof *r->lo);
    r->hi = pl_malloc((size_t)n * sizeof *r->hi);
    double sum = 0, at = 0;
    for (int k = 0; k < n; k++)
        sum += weight ? weight[devs[k]] : 1;
    for (int k = 0; k < n; k++) {
        r->dev[k] = devs[k];
        double w = (weight ? weight[devs[k]] : 1) / (sum > 0 ? sum : 1);
        r->lo[k] = mode == REP_WHOLE ? 0 : at;
        r->hi[k] = mode == REP_WHOLE ? 1 : (k == n - 1 ? 1 : at + w);
        at += w;
    }
}

/* An op's weight in model parallelism's cut: its share of the group's time and its share of
 * the group's resident bytes (weights it reads, counted at each reader), averaged, so that a
 * cheap op with large weights (a classifier's Dense layer) does not land with all the others. */
static double mp_weight(const cc *c, int v, int d, double t_total, double w_total)
{
    const pl_cost *k = c->x->k;
    double t = k->op_s[(size_t)v * k->n_devs + d], w = k->weight_bytes[v];
    return (t_total > 0 ? t / t_total : 0) + (w_total > 0 ? w / w_total : 0);
}

/* Model parallelism: the group's ops cut into contiguous runs (topological order) of about
 * equal weight (time and resident bytes), one run per device; the fallback of assign_mp. */
static void assign_runs(cc *c, int i, const int *devs, int n, const double *w, double total)
{
    const pl_op_groups *og = &c->x->og;
    double at = 0;
    for (int q = og->off[i]; q < og->off[i + 1]; q++) {
        int part = total > 0 ? (int)((at + w[q - og->off[i]] / 2) / total * n) : 0;
        if (part >= n) part = n - 1;
        at += w[q - og->off[i]];
        set_reps(&c->rp[og->op[q]], &devs[part], 1, REP_WHOLE, NULL);
    }
}

/* Model parallelism by METIS (TAG's fourth option): the group's ops split over its devices,
 * cutting the fewest tensor bytes, each part about equal in weight (time and resident bytes,
 * mp_weight), as the op groups are cut (balance factor 2 over the recursion). */
static void assign_mp(cc *c, int i, const int *devs, int n)
{
    const pl_op_groups *og = &c->x->og;
    const pl_cost *k = c->x->k;
    const pl_graph *g = c->t->g;
    int m = og->off[i + 1] - og->off[i];
    double tt = 0, wt = 0, total = 0;
    double *w = pl_malloc((size_t)m * sizeof *w);
    for (int q = og->off[i]; q < og->off[i + 1]; q++)
        tt += k->op_s[(size_t)og->op[q] * k->n_devs + devs[0]], wt += k->weight_bytes[og->op[q]];
    for (int q = 0; q < m; q++)
        total += w[q] = mp_weight(c, og->op[og->off[i] + q], devs[0], tt, wt);
    int *local = pl_malloc((size_t)g->n_ops * sizeof *local);
    for (int q = 0; q < m; q++)
        local[og->op[og->off[i] + q]] = q;
    int32_t *xadj = pl_calloc((size_t)m + 1, sizeof *xadj), *adj = NULL, *aw = NULL, *vw = NULL;
    int cap = 0, na = 0;
    for (int q = 0; q < m; q++) { /* neighbours inside the group, both directions */
        int v = og->op[og->off[i] + q];
        for (int dir = 0; dir < 2; dir++) {
            const int *off = dir ? g->succ_off : g->pred_off, *nb = dir ? g->succ : g->pred;
            for (int e = off[v]; e < off[v + 1]; e++) {
                int u = nb[e];
                if (og->group_of[u] != i) continue;
                pl_grow((void **)&adj, &cap, na + 1, sizeof *adj);
                aw = pl_realloc(aw, (size_t)cap * sizeof *aw);
                adj[na] = local[u],
                aw[na++] = 1 + (int32_t)fmin(1e6, k->out_bytes[dir ? v : u] / 1e3);
            }
        }
        xadj[q + 1] = na;
    }
    vw = pl_malloc((size_t)m * sizeof *vw);
    for (int q = 0; q < m; q++)
        vw[q] = 1 + (int32_t)(total > 0 ? w[q] / total * 1e6 : 0);
    int32_t *part = pl_malloc((size_t)m * sizeof *part);
    pl_err err = {""};
    if (n > 1 && m > n && na > 0 &&
        pl_metis_partition(m, xadj, adj, vw, aw, n, 1.122, 0, part, &err) == 0) {
        for (int q = 0; q < m; q++)
            set_reps(&c->rp[og->op[og->off[i] + q]], &devs[part[q]], 1, REP_WHOLE, NULL);
    } else
        assign_runs(c, i, devs, n, w, total);
    free(w), free(local), free(xadj), free(adj), free(aw), free(vw), free(part);
}

/* In model parallelism an op reading a weight is where the weight is: a backward op goes with
 * its forward op, an optimizer op with its gradient's producer, when those are model-parallel
 * too (else a weight would be resident on two devices). */
static void follow_forward(cc *c)
{
    const pl_train_graph *t = c->t;
    const pl_op_groups *og = &c->x->og;
    for (int v = 0; v < t->g->n_ops; v++) {
        int f = t->fwd_of[v];
        if (c->s->O[og->group_of[v]] != PL_OPT_MP || f < 0 || c->s->O[og->group_of[f]] != PL_OPT_MP)
            continue;
        c->rp[v].dev[0] = c->rp[f].dev[0];
    }
    for (int p = 0; p < t->n_params; p++) {
        int a = t->apply_op[p], u = t->g->tensors[t->grad_tensor[p]].producer;
        if (u < 0 || c->s->O[og->group_of[a]] != PL_OPT_MP || c->s->O[og->group_of[u]] != PL_OPT_MP)
            continue;
        c->rp[a].dev[0] = c->rp[u].dev[0];
    }
}

/* Every training op's replicas, from its group's devices and option. */
static int plan_replicas(cc *c, pl_err *err)
{
    const pl_train_graph *t = c->t;
    const pl_op_groups *og = &c->x->og;
    int *devs = pl_malloc((size_t)c->D * sizeof *devs);
    for (int i = 0; i < og->n; i++) {
        int n = group_devices(c, i, devs);
        if (n == 0) {
            free(devs);
            return pl_err_set(err, "train: op group %d is placed on no device group", i);
        }
        pl_train_option opt = c->s->O[i];
        c->ps_of_group[i] = opt == PL_OPT_PS ? devs[i % n] : -1;
        if (opt == PL_OPT_MP) {
            assign_mp(c, i, devs, n);
            continue;
        }
        for (int k = og->off[i]; k < og->off[i + 1]; k++) {
            int v = og->op[k];
            bool whole = opt == PL_OPT_DUPLICATE || (c->s->sfb && c->s->sfb[v]) ||
                         t->split[v] == PL_SPLIT_OTHER;
            if (opt == PL_OPT_PS && t->phase[v] == PL_PHASE_OPT)
                set_reps(&c->rp[v], &c->ps_of_group[i], 1, REP_WHOLE, NULL); /* on the server */
            else
                set_reps(&c->rp[v], devs, n, whole ? REP_WHOLE : REP_SHARD, c->s->batch_share);
        }
    }
    free(devs);
    follow_forward(c);
    return 0;
}

/* ---- reading a tensor where a replica runs ---- */

static int find_rep(const reps *r, int d)
{
    for (int k = 0; k < r->n; k++)
        if (r->dev[k] == d) return k;
    return -1;
}

/* The k-th output index of tensor t among op u's outputs. */
static int out_index(const pl_graph *g, int u, int t)
{
    for (int k = 0; k < g->ops[u].n_outputs; k++)
        if (g->ops[u].outputs[k] == t) return k;
    return -1;
}

/* A weight, or a graph input read whole: its copy on d (weights are resident on every device
 * that runs a reader). A batched graph input is read as the replica's shard. */
static int source_on(cc *c, int t, int d, double lo, double hi)
{
    const pl_tensor *tt = &c->t->g->tensors[t];
    bool batched = c->t->batched[t];
    if (batched && (lo > 0 || hi < 1)) {
        char name[600];
        snprintf(name, sizeof name, "%s@%s[%.3f,%.3f)", tt->name, c->c->devs[d].name, lo, hi);
        int x = new_tensor(c, name, tbytes(c->t->g, t) * (hi - lo), PL_TENSOR_INPUT);
        pl_graph_add_input(c->g, x);
        return x;
    }
    int *slot = &c->wt_on[(size_t)t * c->D + d];
    if (*slot < 0) {
        char name[600];
        snprintf(name, sizeof name, "%s@%s", tt->name, c->c->devs[d].name);
        bool w = tt->flags & PL_TENSOR_WEIGHT;
        *slot = new_tensor(c, name, tbytes(c->t->g, t), w ? PL_TENSOR_WEIGHT : PL_TENSOR_INPUT);
        if (!w) pl_graph_add_input(c->g, *slot);
    }
    return *slot;
}

/* A Split on device d cutting `bytes` of tensor src for one reader elsewhere. */
static int slice_of(cc *c, int src, int d, double bytes, const char *name)
{
    int sp = new_op(c, "Split", "Split", d, 0, bytes, PL_CLASS_DATA_MOVEMENT);
    pl_op_add_input(c->g, sp, src);
    char pn[600];
    snprintf(pn, sizeof pn, "%s:piece", name);
    int out = new_tensor(c, pn, bytes, 0);
    pl_op_add_output(c->g, sp, out);
    return out;
}

/* The pieces of producer u's output (tensor index k) covering [lo, hi), joined on device d:
 * a Split on each producer device that holds part of it (when it holds more than that part),
 * a Concat on d when there is more than one piece. */
static int gather(cc *c, int u, int k, int d, double lo, double hi, const char *name)
{
    const reps *ru = &c->rp[u];
    double full = tbytes(c->t->g, c->t->g->ops[u].outputs[k]);
    int *pieces = pl_malloc((size_t)ru->n * sizeof *pieces), n = 0;
    for (int r = 0; r < ru->n; r++) {
        double a = fmax(lo, ru->lo[r]), b = fmin(hi, ru->hi[r]);
        if (b <= a + 1e-12) continue;
        int src = ru->out[r][k];
        if (a > ru->lo[r] + 1e-12 || b < ru->hi[r] - 1e-12) /* only part of it: cut it */
            src = slice_of(c, src, ru->dev[r], full * (b - a), name);
        pieces[n++] = src;
    }
    if (n == 1) {
        int only = pieces[0];
        free(pieces);
        return only;
    }
    int cat = new_op(c, "Concat", "Concat", d, 0, 2 * full * (hi - lo), PL_CLASS_DATA_MOVEMENT);
    for (int i = 0; i < n; i++)
        pl_op_add_input(c->g, cat, pieces[i]);
    free(pieces);
    char cn[600];
    snprintf(cn, sizeof cn, "%s:joined", name);
    int out = new_tensor(c, cn, full * (hi - lo), 0);
    pl_op_add_output(c->g, cat, out);
    return out;
}

/* Partial sums of producer u (a weight gradient split over the batch) added on device d. */
static int add_partials(cc *c, int u, int k, int d, const char *name)
{
    const reps *ru = &c->rp[u];
    if (ru->n == 1 || ru->mode == REP_WHOLE) {
        int r = find_rep(ru, d);
        return ru->out[r >= 0 ? r : 0][k];
    }
    double bytes = tbytes(c->t->g, c->t->g->ops[u].outputs[k]);
    int add = new_op(c, "AddN", "Sum", d, bytes / 4 * (ru->n - 1), bytes * (ru->n + 1),
                     PL_CLASS_ELEMENTWISE);
    for (int r = 0; r < ru->n; r++)
        pl_op_add_input(c->g, add, ru->out[r][k]);
    char sn[600];
    snprintf(sn, sizeof sn, "%s:sum", name);
    int out = new_tensor(c, sn, bytes, 0);
    pl_op_add_output(c->g, add, out);
    return out;
}

/* Tensor t, as replica r of op v reads it. */
static int read_tensor(cc *c, int v, int r, int t)
{
    const pl_graph *tg = c->t->g;
    const reps *rv = &c->rp[v];
    int d = rv->dev[r], u = tg->tensors[t].producer;
    if (u < 0) return source_on(c, t, d, rv->lo[r], rv->hi[r]);
    int k = out_index(tg, u, t);
    const reps *ru = &c->rp[u];
    if (c->t->split[u] == PL_SPLIT_SUM && ru->mode == REP_SHARD && ru->n > 1)
        return add_partials(c, u, k, d, tg->tensors[t].name);
    if (ru->mode == REP_WHOLE) { /* every copy is whole: the local one, else the first's */
        int q = find_rep(ru, d);
        if (q >= 0) return ru->out[q][k];
        if (!c->t->batched[t] || rv->mode == REP_WHOLE) return ru->out[0][k];
        return slice_of(c, ru->out[0][k], ru->dev[0], tbytes(tg, t) * (rv->hi[r] - rv->lo[r]),
                        tg->tensors[t].name); /* only this replica's shard travels */
    }
    int q = find_rep(ru, d); /* batched: the same shard on this device, else pieces */
    if (q >= 0 && fabs(ru->lo[q] - rv->lo[r]) < 1e-12 && fabs(ru->hi[q] - rv->hi[r]) < 1e-12)
        return ru->out[q][k];
    return gather(c, u, k, d, rv->lo[r], rv->hi[r], tg->tensors[t].name);
}

/* ---- compiling one training op ---- */

static int read_input(cc *c, int v, int r, int t);

static double share_of(const reps *r, int k)
{
    return r->mode == REP_WHOLE ? 1 : r->hi[k] - r->lo[k];
}

static void emit_op(cc *c, int v)
{
    const pl_graph *tg = c->t->g;
    const pl_op *src = &tg->ops[v];
    reps *rv = &c->rp[v];
    rv->op = pl_malloc((size_t)rv->n * sizeof *rv->op);
    rv->out = pl_malloc((size_t)rv->n * sizeof *rv->out);
    double f = c->t->batch_frac[v];
    for (int r = 0; r < rv->n; r++) {
        double s = share_of(rv, r), scale = f * s + 1 - f;
        char name[1024];
        snprintf(name, sizeof name, "%s@%s", src->name, c->c->devs[rv->dev[r]].name);
        int op = pl_graph_add_op(c->g, name, src->type, src->domain);
        note_op(c, op, v, rv->dev[r]);
        for (int i = 0; i < src->n_inputs; i++)
            pl_op_add_input(c->g, op,
                            src->inputs[i] >= 0 ? read_input(c, v, r, src->inputs[i]) : -1);
        rv->out[r] = pl_malloc((size_t)(src->n_outputs + 1) * sizeof **rv->out);
        for (int k = 0; k < src->n_outputs; k++) {
            int t = src->outputs[k];
            if (t < 0) {
                rv->out[r][k] = -1;
                continue;
            }
            const pl_tensor *tt = &tg->tensors[t];
            char tn[1024];
            snprintf(tn, sizeof tn, "%s@%s", tt->name, c->c->devs[rv->dev[r]].name);
            double b = tbytes(tg, t) * (c->t->batched[t] && rv->mode == REP_SHARD ? s : 1);
            rv->out[r][k] = new_tensor(c, tn, b, tt->flags & PL_TENSOR_WEIGHT);
            pl_op_add_output(c->g, op, rv->out[r][k]);
        }
        for (int j = 0; j < src->n_times; j++) /* given times scale as the work does */
            pl_op_add_time(c->g, op, src->time_device[j], src->time_s[j] * scale);
        pl_op *o = &c->g->ops[op];
        o->cls = src->cls, o->flops = src->flops * scale, o->bytes_moved = src->bytes_moved * scale;
        o->extra_memory_bytes = src->extra_memory_bytes * scale;
        o->bytes_reread = src->bytes_reread * scale;
        o->reread_tensor_bytes = src->reread_tensor_bytes;
        o->flags |= PL_OP_COST_GIVEN;
        o->kernel_of = v; /* the GPU kernel rules price it as v's kernel (g->kernel_graph) */
        rv->op[r] = op;
    }
}

/* ---- gradient synchronisation ---- */

/* Tensor t as replica r of v reads it: a synchronised gradient when v applies it. */
static int read_input(cc *c, int v, int r, int t)
{
    int p = c->t->phase[v] == PL_PHASE_OPT ? c->param_of_grad[t] : -1;
    if (p >= 0 && c->synced[(size_t)p * c->D + c->rp[v].dev[r]] >= 0)
        return c->synced[(size_t)p * c->D + c->rp[v].dev[r]];
    return read_tensor(c, v, r, t);
}

/* A bucket: the parameters of one op group whose gradients are made by sharded replicas. */
typedef struct bucket {
    int *param, n;
    double bytes;
    const reps *rp; /* the replicas (one producer's: all share the group's devices) */
} bucket;

static int grad_producer(const cc *c, int p)
{
    return c->t->g->tensors[c->t->grad_tensor[p]].producer;
}

static bool needs_sync(const cc *c, int p, int group)
{
    int u = grad_producer(c, p);
    if (u < 0 || c->x->og.group_of[u] != group) return false;
    const reps *r = &c->rp[u];
    return r->mode == REP_SHARD && r->n > 1 && c->x->og.group_of[c->t->apply_op[p]] == group;
}

/* Without overlap (dp-sync), synchronisation waits for every gradient made on its device. */
static int barrier_on(cc *c, int d)
{
    if (c->s->overlap || c->s->bucket) return -1;
    if (c->barrier[d] >= 0) return c->barrier[d];
    int op = new_op(c, "grads_done", "Barrier", d, 0, 0, PL_CLASS_DATA_MOVEMENT);
    for (int p = 0; p < c->t->n_params; p++) {
        int u = grad_producer(c, p);
        if (u < 0) continue;
        int q = find_rep(&c->rp[u], d);
        if (q >= 0)
            pl_op_add_input(c->g, op, c->rp[u].out[q][out_index(c->t->g, u, c->t->grad_tensor[p])]);
    }
    c->barrier[d] = new_tensor(c, "grads_done", 0, 0);
    pl_op_add_output(c->g, op, c->barrier[d]);
    return c->barrier[d];
}

/* The bytes one transfer a -> b carries so that the link model gives a ring phase's time:
 * half the measured AllReduce of the ring's devices when the cluster gives the curve (its
 * "collectives", docs/clusters.md), else the D - 1 steps of L / D bytes on the link,
 * (D - 1)(latency + L / D / bandwidth), i.e. the phase's bytes plus D - 2 extra latencies'
 * worth. (Given per-tensor times would do it too, but the cost table keeps those per tensor
 * and device pair: gigabytes for a 32-GPU ring.) */
static double ring_phase_bytes(const cc *c, const reps *r, int a, int b, double bytes)
{
    int D = r->n;
    double lat = pl_cluster_xfer_s(c->c, a, b, 0);
    double per_byte = (pl_cluster_xfer_s(c->c, a, b, 1e9) - lat) / 1e9;
    double measured = pl_cluster_collective_on_s(c->c, PL_COLL_ALLREDUCE, r->dev, D, bytes);
    double phase =
        measured >= 0 ? measured / 2 : (D - 1) * pl_cluster_xfer_s(c->c, a, b, bytes / D);
    return per_byte > 0 ? fmax(0, (phase - lat) / per_byte) : bytes * (D - 1) / D;
}

/* With s->bucket, AllReduce b's send on device d also waits for the gradients made there
 * that must be made before it starts (bucket[n_bucket + p] == b): no data, an edge. */
static void wait_launch(cc *c, int op, int d, int b)
{
    const pl_train_strategy *s = c->s;
    for (int p = 0; b >= 0 && p < s->n_bucket; p++) {
        int u = grad_producer(c, p), q = u >= 0 ? find_rep(&c->rp[u], d) : -1;
        if (s->bucket[s->n_bucket + p] == b && s->bucket[p] != b && q >= 0)
            pl_op_add_input(c->g, op, c->rp[u].out[q][out_index(c->t->g, u, c->t->grad_tensor[p])]);
    }
}

/* The ring AllReduce of bk; b: its place in the strategy's stream (s->bucket), -1 without. */
static void ring_allreduce(cc *c, const bucket *bk, int b)
{
    const reps *r = bk->rp;
    int D = r->n;
    double part = bk->bytes * (D - 1) / D;
    int *m = pl_malloc((size_t)D * sizeof *m), *q = pl_malloc((size_t)D * sizeof *q);
    for (int i = 0; i < D; i++) { /* each device's share to send in the reduce-scatter phase */
        int d = r->dev[i], next = r->dev[(i + 1) % D];
        int op = new_op(c, "ring_send", "AllReduceSend", d, 0, part, PL_CLASS_DATA_MOVEMENT);
        for (int k = 0; k < bk->n; k++) {
            int p = bk->param[k], u = grad_producer(c, p);
            pl_op_add_input(
                c->g, op,
                c->rp[u].out[find_rep(&c->rp[u], d)][out_index(c->t->g, u, c->t->grad_tensor[p])]);
        }
        int w = barrier_on(c, d);
        if (w >= 0) pl_op_add_input(c->g, op, w);
        if (c->s->bucket && c->stream[d] >= 0) /* one stream: after the previous collective */
            pl_op_add_input(c->g, op, c->stream[d]);
        wait_launch(c, op, d, b);
        m[i] = new_tensor(c, "ring_rs", ring_phase_bytes(c, r, d, next, bk->bytes), 0);
        pl_op_add_output(c->g, op, m[i]);
    }
    for (int i = 0; i < D; i++) { /* reduce what the predecessor sent */
        int d = r->dev[i], prev = (i + D - 1) % D;
        int op = new_op(c, "ring_reduce", "AllReduceReduce", d, part / 4, 3 * part,
                        PL_CLASS_ELEMENTWISE);
        pl_op_add_input(c->g, op, m[prev]), pl_op_add_input(c->g, op, m[i]);
        q[i] =
            new_tensor(c, "ring_ag", ring_phase_bytes(c, r, d, r->dev[(i + 1) % D], bk->bytes), 0);
        pl_op_add_output(c->g, op, q[i]);
    }
    for (int i = 0; i < D; i++) { /* the all-gather phase: the summed gradient everywhere */
        int d = r->dev[i], prev = (i + D - 1) % D;
        int op =
            new_op(c, "ring_gather", "AllReduceGather", d, 0, bk->bytes, PL_CLASS_DATA_MOVEMENT);
        pl_op_add_input(c->g, op, q[prev]), pl_op_add_input(c->g, op, q[i]);
        int out = new_tensor(c, "allreduced", bk->bytes, 0);
        pl_op_add_output(c->g, op, out);
        for (int k = 0; k < bk->n; k++)
            c->synced[(size_t)bk->param[k] * c->D + d] = out;
        c->stream[d] = out;
    }
    free(m), free(q);
}

/* Push every replica's partial gradients to the server and add them there. */
static void ps_push(cc *c, const bucket *bk, int ps)
{
    const reps *r = bk->rp;
    int op = new_op(c, "ps_aggregate", "Sum", ps, bk->bytes / 4 * (r->n - 1),
                    bk->bytes * (r->n + 1), PL_CLASS_ELEMENTWISE);
    for (int i = 0; i < r->n; i++)
        for (int k = 0; k < bk->n; k++) {
            int p = bk->param[k], u = grad_producer(c, p);
            pl_op_add_input(c->g, op, c->rp[u].out[i][out_index(c->t->g, u, c->t->grad_tensor[p])]);
        }
    int out = new_tensor(c, "ps_summed", bk->bytes, 0);
    pl_op_add_output(c->g, op, out);
    for (int k = 0; k < bk->n; k++)
        c->synced[(size_t)bk->param[k] * c->D + ps] = out;
}

/* Every worker pulls the updated parameters from the server. */
static void ps_pull(cc *c, const bucket *bk, int ps)
{
    const reps *r = bk->rp;
    for (int i = 0; i < r->n; i++) {
        if (r->dev[i] == ps) continue;
        int op = new_op(c, "ps_pull", "Identity", r->dev[i], 0, bk->bytes, PL_CLASS_DATA_MOVEMENT);
        for (int k = 0; k < bk->n; k++) {
            int a = c->t->apply_op[bk->param[k]];
            const reps *ra = &c->rp[a];
            for (int j = 0; j < c->t->g->ops[a].n_outputs; j++)
                if (ra->out[0][j] >= 0) pl_op_add_input(c->g, op, ra->out[0][j]);
        }
        pl_op_add_output(c->g, op, new_tensor(c, "pulled", 0, 0));
    }
}

static void collect_bucket(cc *c, int group, bucket *bk)
{
    bk->param = pl_malloc((size_t)c->t->n_params * sizeof *bk->param);
    bk->n = 0, bk->bytes = 0, bk->rp = NULL;
    for (int p = 0; p < c->t->n_params; p++)
        if (needs_sync(c, p, group)) {
            bk->param[bk->n++] = p;
            bk->bytes += tbytes(c->t->g, c->t->grad_tensor[p]);
            bk->rp = &c->rp[grad_producer(c, p)];
        }
}

static bool same_devices(const reps *a, const reps *b)
{
    return a->n == b->n && !memcmp(a->dev, b->dev, (size_t)a->n * sizeof *a->dev);
}

/* The strategy's AllReduces in stream order (s->bucket): bucket b holds the gradients of the
 * AllReduce option's groups whose entry is b; each one's ring waits for the previous one's on
 * every device (ring_allreduce, c->stream). */
static int emit_buckets(cc *c, pl_err *err)
{
    const pl_train_strategy *s = c->s;
    int nb = 0;
    for (int p = 0; p < s->n_bucket; p++)
        if (s->bucket[p] >= nb) nb = s->bucket[p] + 1;
    bucket bk = {.param = pl_malloc((size_t)c->t->n_params * sizeof *bk.param)};
    int rc = 0;
    for (int b = 0; b < nb && rc == 0; b++) {
        bk.n = 0, bk.bytes = 0, bk.rp = NULL;
        for (int p = 0; p < c->t->n_params; p++) {
            int u = grad_producer(c, p), gi = u >= 0 ? c->x->og.group_of[u] : -1;
            if (s->bucket[p] != b || gi < 0 || s->O[gi] == PL_OPT_PS || !needs_sync(c, p, gi))
                continue;
            if (bk.rp && !same_devices(bk.rp, &c->rp[u])) {
                rc = pl_err_set(err,
                                "train: AllReduce %d fuses gradients made on different devices", b);
                break;
            }
            bk.param[bk.n++] = p, bk.bytes += tbytes(c->t->g, c->t->grad_tensor[p]);
            bk.rp = &c->rp[u];
        }
        if (rc == 0 && bk.n) ring_allreduce(c, &bk, b);
    }
    free(bk.param);
    return rc;
}

/* Every training op but the optimizer's, then each group's synchronisation (or the
 * strategy's AllReduces in stream order), then the optimizer ops (which read the
 * synchronised gradients), then the PS pulls. */
static int emit_all(cc *c, pl_err *err)
{
    const pl_graph *tg = c->t->g;
    if (c->s->bucket && c->s->n_bucket != c->t->n_params)
        return pl_err_set(err, "train: the strategy's AllReduces cover %d parameters, not %d",
                          c->s->n_bucket, c->t->n_params);
    for (int i = 0; i < tg->n_ops; i++)
        if (c->t->phase[tg->topo[i]] != PL_PHASE_OPT) emit_op(c, tg->topo[i]);
    int G = c->x->og.n;
    bucket *bks = pl_calloc((size_t)G + 1, sizeof *bks);
    for (int gi = 0; gi < G; gi++) {
        collect_bucket(c, gi, &bks[gi]);
        if (bks[gi].n == 0) continue;
        if (c->s->O[gi] == PL_OPT_PS)
            ps_push(c, &bks[gi], c->ps_of_group[gi]);
        else if (!c->s->bucket)
            ring_allreduce(c, &bks[gi], -1);
    }
    if (c->s->bucket && emit_buckets(c, err) < 0) {
        for (int gi = 0; gi < G; gi++)
            free(bks[gi].param);
        free(bks);
        return -1;
    }
    for (int i = 0; i < tg->n_ops; i++)
        if (c->t->phase[tg->topo[i]] == PL_PHASE_OPT) emit_op(c, tg->topo[i]);
    for (int gi = 0; gi < G; gi++) {
        if (bks[gi].n && c->s->O[gi] == PL_OPT_PS) ps_pull(c, &bks[gi], c->ps_of_group[gi]);
        free(bks[gi].param);
    }
    free(bks);
    return 0;
}

int pl_train_compile(const pl_train_ctx *x, const pl_train_strategy *s, pl_graph **out_g,
                     pl_plan **out_p, int **origin, pl_err *err)
{
    const pl_train_graph *t = x->t;
    cc c = {.x = x, .t = t, .s = s, .c = x->c, .D = x->c->n_devs};
    c.g = pl_graph_new(t->g->name);
    c.g->kernel_graph = t->g; /* the replicas' kernel_of index it */
    c.rp = pl_calloc((size_t)t->g->n_ops + 1, sizeof *c.rp);
    c.wt_on = pl_malloc((size_t)t->g->n_tensors * c.D * sizeof *c.wt_on);
    for (size_t i = 0; i < (size_t)t->g->n_tensors * c.D; i++)
        c.wt_on[i] = -1;
    c.ps_of_group = pl_malloc((size_t)x->og.n * sizeof *c.ps_of_group);
    c.synced = pl_malloc((size_t)t->n_params * c.D * sizeof *c.synced);
    for (size_t i = 0; i < (size_t)t->n_params * c.D; i++)
        c.synced[i] = -1;
    c.param_of_grad = pl_malloc((size_t)t->g->n_tensors * sizeof *c.param_of_grad);
    for (int i = 0; i < t->g->n_tensors; i++)
        c.param_of_grad[i] = -1;
    for (int p = 0; p < t->n_params; p++)
        c.param_of_grad[t->grad_tensor[p]] = p;
    c.barrier = pl_malloc((size_t)c.D * sizeof *c.barrier);
    c.stream = pl_malloc((size_t)c.D * sizeof *c.stream);
    for (int d = 0; d < c.D; d++)
        c.barrier[d] = c.stream[d] = -1;
    int rc = plan_replicas(&c, err);
    if (rc == 0) rc = emit_all(&c, err);
    if (rc == 0) rc = pl_graph_finalize(c.g, "compiled training graph", err);
    pl_plan *p = NULL;
    if (rc == 0) {
        p = pl_plan_new(c.g->n_ops, c.D);
        for (int op = 0; op < c.g->n_ops; op++)
            p->dev[op] = c.op_dev[op];
        snprintf(p->algo, sizeof p->algo, "train");
    }
    for (int v = 0; v < t->g->n_ops; v++) {
        reps *r = &c.rp[v];
        for (int k = 0; r->out && k < r->n; k++)
            free(r->out[k]);
        free(r->dev), free(r->lo), free(r->hi), free(r->op), free(r->out);
    }
    free(c.rp), free(c.wt_on), free(c.ps_of_group), free(c.op_dev), free(c.synced);
    free(c.barrier), free(c.stream), free(c.param_of_grad);
    if (rc < 0) {
        pl_graph_free(c.g);
        free(c.origin);
        return -1;
    }
    *out_g = c.g, *out_p = p;
    if (origin)
        *origin = c.origin;
    else
        free(c.origin);
    return 0;
}
