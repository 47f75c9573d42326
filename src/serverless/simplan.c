/* simplan.c: a serverless plan as a plan of the one simulator (docs/serverless.md, "One
 * simulator"; serverless.h states the semantics).
 *
 * The pricing (mopar.c) adds a plan's times up; here the same plan becomes a graph, a cluster
 * and a placement that pl_simulate runs, so that the plan checker, the simulator's invariants and
 * the trace writer judge it like any other plan. The functions are devices; the store (or shared
 * memory) is a device linked to each of them, and every write and read of a cut tensor is a
 * transfer on those links. Two things the simulator does by itself are not MOPAR's chain, so the
 * graph holds zero-time ops that forbid them: it would overlap a function's compute with its
 * transfers and with other functions' work; MOPAR invokes slice k + 1 only when slice k has
 * ended, and a function reads, computes, then writes. */
#include "placer/serverless.h"
#include "sl_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What building the simulator's plan keeps on the way. */
typedef struct build {
    const pl_sl_graph *sg;
    const pl_platform *pf;
    const pl_sl_opts *o;
    const pl_sl_plan *p;
    const pl_transport *x;
    pl_sl_sim *s;
    int *fn;  /* [layers]: the function holding each layer */
    int *dev; /* [ops]: each op's device */
    int *seq; /* ops in the order they were made: the plan's order on every device */
    int n_ops, cap_dev, cap_seq;
    int n_reads;  /* read ops made: their names' numbers */
    int *data;    /* [tensors]: the layer graph's tensor t on its maker's function */
    int *written; /* [tensors]: t as written to the store, or -1 */
    int *copy;    /* [tensors x functions]: t as read by a function, or -1 */
    int *base;    /* [functions]: the runtime's memory, a weight of each function */
    int *shared;  /* [shared weights] */
    /* CSR over layers: the tensors each layer reads (in_list[in_off[l] .. in_off[l + 1])) and
       makes (out_list), in tensor order, so that building costs the graph's edges, not
       layers x tensors */
    int *in_off, *in_list, *out_off, *out_list;
    int token;     /* the end of the visit before (-1 for the first) */
    bool *invoked; /* [functions]: a visit of it was made (its invocation is paid once) */
} build;

static const char *algo_of(const pl_sl_plan *p)
{
    return pl_sl_algo_name(p->algo);
}

/* ---- the plan as priced, checked before it is built ---- */

static bool same(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Each layer in exactly one function (fn[l]); a contiguous plan's slices one after another. */
static int check_layers(const pl_sl_graph *sg, const pl_sl_plan *p, int *fn, pl_err *err)
{
    for (int l = 0; l < sg->n; l++) {
        fn[l] = -1;
        for (int k = 0; k < p->n; k++) {
            if (!pl_sl_slice_has(p, k, l)) continue;
            if (fn[l] >= 0)
                return pl_err_set(err, "serverless plan (%s): layer %d is in functions %d and %d",
                                  algo_of(p), l, fn[l], k);
            fn[l] = k;
        }
        if (fn[l] < 0)
            return pl_err_set(err, "serverless plan (%s): layer %d is in no function", algo_of(p),
                              l);
    }
    for (int k = 0; k < p->n && !p->fn_of; k++)
        if (p->slices[k].first != (k ? p->slices[k - 1].last + 1 : 0))
            return pl_err_set(err,
                              "serverless plan (%s): slice %d begins at layer %d, not right "
                              "after slice %d",
                              algo_of(p), k, p->slices[k].first, k - 1);
    return 0;
}

/* Each function's memory a size the platform allows, its degree 1 .. its whole vCPUs. */
static int check_functions(const pl_platform *pf, const pl_sl_plan *p, pl_err *err)
{
    for (int k = 0; k < p->n; k++) {
        const pl_sl_slice *s = &p->slices[k];
        if (!(s->mem_mb > 0) || !same(pl_platform_round_mb(pf, s->mem_mb), s->mem_mb))
            return pl_err_set(err,
                              "serverless plan (%s): function %d's memory, %g MB, is not a size "
                              "%s allows (%g to %g MB, in steps of %g)",
                              algo_of(p), k, s->mem_mb, pf->name, pf->mem_min_mb, pf->mem_max_mb,
                              pf->mem_step_mb);
        int most = sl_max_degree(pf, s->mem_mb * PL_PLATFORM_MB_BYTES);
        if (s->eta < 1 || s->eta > most)
            return pl_err_set(err,
                              "serverless plan (%s): function %d's parallel degree is %d, not 1 "
                              "to its %d whole vCPUs",
                              algo_of(p), k, s->eta, most);
    }
    return 0;
}

/* ---- the graph ---- */

static const char *dev_name(const build *b, int d)
{
    return b->s->c->devs[d].name;
}

/* A tensor of `bytes` bytes (rounded down: the simulator's memory never exceeds the pricing's). */
static int tensor(build *b, double bytes, unsigned flags, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int tensor(build *b, double bytes, unsigned flags, const char *fmt, ...)
{
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int t = pl_graph_tensor(b->s->g, name);
    int64_t n = bytes > 0 ? (int64_t)floor(bytes) : 0;
    pl_tensor_set_shape(&b->s->g->tensors[t], PL_DT_UINT8, 1, &n);
    b->s->g->tensors[t].flags |= flags | PL_TENSOR_BYTES_ONLY;
    return t;
}

/* An op of `type` on device d taking `s` seconds there, run in the order made. */
static int op(build *b, const char *type, int d, double s, int index)
{
    char name[64];
    snprintf(name, sizeof name, "%s %d", type, index);
    int k = pl_graph_add_op(b->s->g, name, type, "");
    pl_op_add_time(b->s->g, k, dev_name(b, d), s);
    pl_grow((void **)&b->dev, &b->cap_dev, k, sizeof *b->dev);
    pl_grow((void **)&b->seq, &b->cap_seq, b->n_ops, sizeof *b->seq);
    b->dev[k] = d, b->seq[b->n_ops++] = k;
    return k;
}

/* A zero-byte tensor from op `from` that takes `s` seconds from device a to device b, named by
 * fmt with index i and the name of device `to` (fmt may leave it out). */
static int send(build *b, int from, int a, int to, double s, const char *fmt, int i)
{
    char name[96];
    snprintf(name, sizeof name, fmt, i, dev_name(b, to));
    int t = tensor(b, 0, 0, "%s", name);
    pl_op_add_output(b->s->g, from, t);
    if (a != to) pl_graph_add_xfer_time(b->s->g, t, dev_name(b, a), dev_name(b, to), s);
    return t;
}

/* Whether a function other than f reads tensor t. */
static bool read_elsewhere(const build *b, const pl_sl_tensor *tp, int f)
{
    for (int r = 0; r < tp->n_to; r++)
        if (b->fn[tp->to[r]] != f) return true;
    return false;
}

/* The reads of a visit of f to layers [l0, l1]: each cut tensor it takes in first there, a
 * zero-time op on the store once the visit before has ended, sent to f at its read time. */
static void reads(build *b, int f, int l0, int l1, int *ins, int *n_in)
{
    pl_graph *g = b->s->g;
    int store = b->s->n_fns;
    for (int i = b->in_off[l0]; i < b->in_off[l1 + 1]; i++) {
        int t = b->in_list[i];
        const pl_sl_tensor *tp = &b->sg->tensors[t];
        int *c = &b->copy[(size_t)t * b->s->n_fns + f];
        if (b->fn[tp->from] == f || *c >= 0) continue;
        int r = op(b, "read", store, 0, b->n_reads++);
        pl_op_add_input(g, r, b->written[t]);
        if (b->token >= 0) pl_op_add_input(g, r, b->token);
        *c = send(b, r, store, f, sl_move_s(b->x, b->o, tp->bytes, false), "tensor %d read by %s",
                  t);
        ins[(*n_in)++] = *c;
    }
}

/* Layer l on function f, after the visit's entry e: its part of the slice's compute. */
static void layer(build *b, int l, int f, int e)
{
    pl_graph *g = b->s->g;
    const pl_sl_layer *L = &b->sg->layers[l];
    const pl_sl_slice *s = &b->p->slices[f];
    double mem = s->mem_mb * PL_PLATFORM_MB_BYTES;
    int k = op(b, "layer", f, sl_compute_s(b->pf, L->t1_s, L->par_s, L->out_bytes, mem, s->eta), l);
    b->s->layer_op[l] = k;
    g->ops[k].extra_memory_bytes =
        floor(sl_activation_factor(b->pf) * L->mem_mb * PL_PLATFORM_MB_BYTES);
    pl_op_add_input(g, k, e);
    if (L->weight_mb > 0)
        pl_op_add_input(g, k,
                        tensor(b, sl_weight_factor(b->pf) * L->weight_mb * PL_PLATFORM_MB_BYTES,
                               PL_TENSOR_WEIGHT, "weights of layer %d", l));
    for (int w = 0; w < L->n_wts; w++)
        pl_op_add_input(g, k, b->shared[L->wts[w]]);
    for (int i = b->out_off[l]; i < b->out_off[l + 1]; i++)
        pl_op_add_output(g, k, b->data[b->out_list[i]]);
    for (int i = b->in_off[l]; i < b->in_off[l + 1]; i++) {
        int t = b->in_list[i];
        pl_op_add_input(g, k,
                        b->fn[b->sg->tensors[t].from] == f ? b->data[t]
                                                           : b->copy[(size_t)t * b->s->n_fns + f]);
    }
}

/* The writes of a visit of f to layers [l0, l1]: after its last layer, each cut tensor they
 * make, sent to the store at its write time; the visit ends on the store when all arrived. */
static void writes(build *b, int f, int l0, int l1, int v)
{
    pl_graph *g = b->s->g;
    int store = b->s->n_fns;
    int x = op(b, "exit", f, 0, v);
    int *w = pl_malloc(((size_t)b->sg->n_tensors + 1) * sizeof *w), n = 0;
    for (int i = b->out_off[l0]; i < b->out_off[l1 + 1]; i++) {
        int t = b->out_list[i];
        const pl_sl_tensor *tp = &b->sg->tensors[t];
        if (!read_elsewhere(b, tp, f)) continue;
        pl_op_add_input(g, x, b->data[t]);
        w[n++] = b->written[t] =
            send(b, x, f, store, sl_move_s(b->x, b->o, tp->bytes, true), "tensor %d written", t);
    }
    int left = send(b, x, f, store, 0, "visit %d left", v);
    int d = op(b, "done", store, 0, v);
    for (int k = 0; k < n; k++)
        pl_op_add_input(g, d, w[k]);
    pl_op_add_input(g, d, left);
    free(w);
    b->token = send(b, d, store, store, 0, "visit %d done", v);
    b->s->visit_end[v] = d;
}

/* One visit: reads, an entry holding the runtime, the layers, writes. The first visit's entry
 * takes the function's invocation (its round trip and the request's payload: the plan's
 * invoke_s, docs/serverless.md "The invocation"), once per function, as the pricing counts it. */
static void visit(build *b, int f, int l0, int l1, int v)
{
    pl_graph *g = b->s->g;
    int *ins = pl_malloc(((size_t)b->sg->n_tensors + 1) * sizeof *ins), n = 0;
    reads(b, f, l0, l1, ins, &n);
    int e = op(b, "enter", f, b->invoked[f] ? 0 : b->p->slices[f].invoke_s, v);
    b->invoked[f] = true;
    for (int k = 0; k < n; k++)
        pl_op_add_input(g, e, ins[k]);
    free(ins);
    if (b->token >= 0) {
        pl_op_add_input(g, e, b->token);
        pl_graph_add_xfer_time(g, b->token, dev_name(b, b->s->n_fns), dev_name(b, f), 0);
    }
    pl_op_add_input(g, e, b->base[f]);
    int entered = send(b, e, f, f, 0, "visit %d entered", v);
    for (int l = l0; l <= l1; l++)
        layer(b, l, f, entered);
    writes(b, f, l0, l1, v);
    b->s->visit_fn[v] = f;
}

/* The k-th layer of tensor t in a CSR over layers: its k-th reader, or (readers false) its maker.
 */
static int layer_of(const pl_sl_tensor *tp, bool readers, int k)
{
    return readers ? tp->to[k] : tp->from;
}

/* off[l] .. off[l + 1] of list: the tensors read by layer l (readers) or made by it (!readers),
 * in tensor order: building then costs the graph's edges, not layers x tensors. */
static void index_layers(const pl_sl_graph *sg, bool readers, int **off, int **list)
{
    *off = pl_calloc((size_t)sg->n + 2, sizeof **off);
    int n = 0;
    for (int t = 0; t < sg->n_tensors; t++)
        for (int k = 0; k < (readers ? sg->tensors[t].n_to : 1); k++)
            (*off)[layer_of(&sg->tensors[t], readers, k) + 2]++, n++;
    for (int l = 0; l < sg->n; l++)
        (*off)[l + 2] += (*off)[l + 1];
    *list = pl_malloc(((size_t)n + 1) * sizeof **list);
    for (int t = 0; t < sg->n_tensors; t++)
        for (int k = 0; k < (readers ? sg->tensors[t].n_to : 1); k++)
            (*list)[(*off)[layer_of(&sg->tensors[t], readers, k) + 1]++] = t;
}

static void make_graph(build *b)
{
    const pl_sl_graph *sg = b->sg;
    int F = b->s->n_fns;
    b->data = pl_malloc(((size_t)sg->n_tensors + 1) * sizeof *b->data);
    b->written = pl_malloc(((size_t)sg->n_tensors + 1) * sizeof *b->written);
    b->copy = pl_malloc(((size_t)sg->n_tensors * F + 1) * sizeof *b->copy);
    for (size_t k = 0; k < (size_t)sg->n_tensors * F; k++)
        b->copy[k] = -1;
    for (int t = 0; t < sg->n_tensors; t++)
        b->data[t] = tensor(b, 0, 0, "tensor %d", t), b->written[t] = -1;
    b->base = pl_malloc(((size_t)F + 1) * sizeof *b->base);
    b->invoked = pl_calloc((size_t)F + 1, sizeof *b->invoked);
    for (int f = 0; f < F; f++)
        b->base[f] = tensor(b, b->pf->runtime_base_mb * PL_PLATFORM_MB_BYTES, PL_TENSOR_WEIGHT,
                            "runtime of function %d", f);
    b->shared = pl_malloc(((size_t)sg->n_wts + 1) * sizeof *b->shared);
    for (int w = 0; w < sg->n_wts; w++)
        b->shared[w] = tensor(b, sl_weight_factor(b->pf) * sg->wt_mb[w] * PL_PLATFORM_MB_BYTES,
                              PL_TENSOR_WEIGHT, "shared weight %d", w);
    index_layers(sg, true, &b->in_off, &b->in_list);
    index_layers(sg, false, &b->out_off, &b->out_list);
    b->token = -1;
    for (int l0 = 0, v = 0; l0 < sg->n; v++) {
        int l1 = l0;
        while (l1 + 1 < sg->n && b->fn[l1 + 1] == b->fn[l0])
            l1++;
        visit(b, b->fn[l0], l0, l1, v);
        b->s->n_visits = v + 1, l0 = l1 + 1;
    }
}

/* ---- the cluster and the plan ---- */

static pl_cluster *make_cluster(const build *b, pl_err *err)
{
    pl_cluster *c = pl_cluster_new("serverless functions");
    for (int k = 0; k < b->p->n; k++) { /* its model says what it is (the trace shows it) */
        const pl_sl_slice *s = &b->p->slices[k];
        char name[32], model[96];
        snprintf(name, sizeof name, "fn%d", k);
        snprintf(model, sizeof model, "function of %.0f MB, %.3g vCPU, eta %d", s->mem_mb,
                 pl_platform_vcpus(b->pf, s->mem_mb), s->eta);
        int d = pl_cluster_add_device(c, name, PL_DEV_CPU, model);
        c->devs[d].memory_bytes = s->mem_mb * PL_PLATFORM_MB_BYTES;
    }
    int st = pl_cluster_add_device(c, b->x == &b->pf->shm ? "shm" : "store", PL_DEV_CPU,
                                   "serverless-transport");
    double bw = b->x->bandwidth_Bps > 0 ? b->x->bandwidth_Bps : INFINITY;
    for (int k = 0; k < b->p->n; k++)
        pl_cluster_set_link(c, k, st, bw, b->x->latency_s, true);
    if (pl_cluster_finalize(c, err) == 0) return c;
    pl_cluster_free(c);
    return NULL;
}

void pl_sl_sim_free(pl_sl_sim *s)
{
    pl_plan_free(s->plan);
    pl_cost_free(s->k);
    pl_graph_free(s->g);
    pl_cluster_free(s->c);
    free(s->visit_fn), free(s->visit_end), free(s->layer_op);
    memset(s, 0, sizeof *s);
}

static int finish(build *b, pl_err *err)
{
    pl_sl_sim *s = b->s;
    if (pl_graph_finalize(s->g, "serverless plan", err) < 0) return -1;
    pl_cost_params params;
    pl_cost_params_default(&params);
    params.runtime_fusion = PL_FUSION_NONE; /* the ops are steps of a plan, not kernels */
    if (!(s->k = pl_cost_new(s->g, s->c, &params, NULL, 0, err))) return -1;
    s->plan = pl_plan_new(s->g->n_ops, s->c->n_devs);
    memcpy(s->plan->dev, b->dev, (size_t)s->g->n_ops * sizeof *b->dev);
    pl_plan_set_order(s->plan, b->seq);
    snprintf(s->plan->algo, sizeof s->plan->algo, "serverless:%s", algo_of(b->p));
    s->plan->contention = PL_CONTENTION_PORTS;
    return 0;
}

int pl_sl_sim_build(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                    const pl_sl_plan *p, pl_sl_sim *out, pl_err *err)
{
    memset(out, 0, sizeof *out);
    if (p->n < 1 || sg->n < 1)
        return pl_err_set(err, "serverless plan (%s): no function or no layer", algo_of(p));
    build b = {.sg = sg, .pf = pf, .o = o, .p = p, .x = pl_sl_transport(pf, o), .s = out};
    b.fn = pl_malloc(((size_t)sg->n + 1) * sizeof *b.fn);
    int rc = -1;
    if (check_layers(sg, p, b.fn, err) < 0 || check_functions(pf, p, err) < 0) goto out;
    out->n_fns = p->n;
    if (!(out->c = make_cluster(&b, err))) goto out;
    out->g = pl_graph_new("serverless plan");
    out->layer_op = pl_malloc(((size_t)sg->n + 1) * sizeof *out->layer_op);
    out->visit_fn = pl_malloc(((size_t)sg->n + 1) * sizeof *out->visit_fn);
    out->visit_end = pl_malloc(((size_t)sg->n + 1) * sizeof *out->visit_end);
    make_graph(&b);
    rc = finish(&b, err);
out:
    if (rc < 0) pl_sl_sim_free(out);
    free(b.fn), free(b.dev), free(b.seq), free(b.data), free(b.written), free(b.copy);
    free(b.base), free(b.invoked), free(b.shared), free(b.in_off), free(b.in_list), free(b.out_off),
        free(b.out_list);
    return rc;
}

/* ---- judged ---- */

/* Each function's time, its visits' (from the end of the visit before to the end of its own),
 * and the latency, against the plan's. */
static int check_times(const pl_sl_sim *s, const pl_sl_plan *p, const pl_sim_result *r, pl_err *err)
{
    double *fn_s = pl_calloc((size_t)s->n_fns + 1, sizeof *fn_s), before = 0;
    for (int v = 0; v < s->n_visits; v++) {
        double end = r->op_end_s[s->visit_end[v]];
        fn_s[s->visit_fn[v]] += end - before, before = end;
    }
    int rc = 0;
    for (int k = 0; k < s->n_fns && rc == 0; k++)
        if (!same(fn_s[k], p->slices[k].time_s))
            rc = pl_err_set(err,
                            "serverless plan (%s): function %d: the plan says %.6f ms, the "
                            "simulator %.6f ms",
                            algo_of(p), k, p->slices[k].time_s * 1e3, fn_s[k] * 1e3);
    free(fn_s);
    if (rc == 0 && !same(r->makespan_s, p->latency_s))
        rc =
            pl_err_set(err, "serverless plan (%s): its latency is %.6f ms, the simulator's %.6f ms",
                       algo_of(p), p->latency_s * 1e3, r->makespan_s * 1e3);
    return rc;
}

int pl_sl_sim_check(const pl_sl_sim *s, const pl_sl_plan *p, pl_sim_result *r, pl_err *err)
{
    pl_sim_result res;
    if (r) memset(r, 0, sizeof *r);
    if (p->n != s->n_fns)
        return pl_err_set(err, "serverless plan (%s): %d functions, the simulator's plan %d",
                          algo_of(p), p->n, s->n_fns);
    if (pl_plan_check(s->plan, s->g, s->c, err) < 0) return -1;
    pl_sim_opts so = {.contention = PL_CONTENTION_PORTS, .record = true};
    if (pl_simulate(s->k, s->plan, &so, &res, err) < 0)
        return pl_err_prefix(err, "serverless plan (%s)", algo_of(p));
    char why[512];
    int rc = 0;
    if (res.oom) {
        const pl_device *d = &s->c->devs[res.oom_dev];
        rc = pl_err_set(err,
                        "serverless plan (%s): function %d ('%s') needs %.1f MB at its peak (the "
                        "runtime, its weights, its largest layer's activations), more than its "
                        "%.0f MB",
                        algo_of(p), res.oom_dev, d->name,
                        res.peak_mem_bytes[res.oom_dev] / PL_PLATFORM_MB_BYTES,
                        d->memory_bytes / PL_PLATFORM_MB_BYTES);
    } else if (pl_sim_check(s->k, s->plan, &so, &res, why, sizeof why) < 0) {
        rc = pl_err_set(err, "serverless plan (%s): the simulator's run breaks an invariant: %s",
                        algo_of(p), why);
    } else {
        rc = check_times(s, p, &res, err);
    }
    if (rc < 0 || !r)
        pl_sim_result_free(&res);
    else
        *r = res;
    return rc;
}

int pl_sl_plan_check(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                     const pl_sl_plan *p, const char *trace, pl_err *err)
{
    pl_sl_sim s;
    pl_sim_result r;
    if (pl_sl_sim_build(sg, pf, o, p, &s, err) < 0) return -1;
    int rc = pl_sl_sim_check(&s, p, &r, err);
    if (rc == 0 && trace) rc = pl_sim_trace_write(s.k, s.plan, &r, trace, err);
    pl_sim_result_free(&r);
    pl_sl_sim_free(&s);
    return rc;
}
