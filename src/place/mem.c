/* mem.c: the static memory model the placement algorithms check (docs/placement.md), and
 * the feasibility checks and messages they share. */
#include "sched.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double pk_tensor_bytes(const pl_graph *g, int t)
{
    int64_t b = g->tensors[t].bytes;
    return b > 0 ? (double)b : 0;
}

bool pk_is_weight(const pl_graph *g, int t)
{
    return t >= 0 && (g->tensors[t].flags & PL_TENSOR_WEIGHT);
}

/* The i-th tensor an op touches: inputs, then outputs (a Constant op's value is a weight it
 * writes: it is resident where the op runs). */
static int touched(const pl_op *o, int i)
{
    return i < o->n_inputs ? o->inputs[i] : o->outputs[i - o->n_inputs];
}

static bool touched_before(const pl_op *o, int i)
{
    int t = touched(o, i);
    for (int j = 0; j < i; j++)
        if (touched(o, j) == t) return true;
    return false;
}

double pk_dev_cap(const pl_cost *k, int d)
{
    double b = k->c->devs[d].memory_bytes;
    return b > 0 ? b : INFINITY; /* no size given: unlimited rather than full */
}

/* Working sets: for each op, the activations live at its position in the topological order
 * (each produced at or before it and read at or after it, graph inputs from the start) plus
 * the working memory a task graph declares for it. That is what one device running the graph
 * in that order holds while the op runs; it covers the op's own inputs and outputs and the
 * tensors that skip over it (residuals, encoder outputs), which an op's inputs and outputs
 * alone miss. A sweep over the order: O(tensors + edges). */
static void working_sets(const pl_graph *g, double *ws)
{
    int n = g->n_ops;
    double *diff = pl_calloc(n + 2, sizeof *diff);
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tp = &g->tensors[t];
        if (pk_is_weight(g, t) || tp->bytes <= 0) continue;
        if (tp->producer < 0 && tp->n_consumers == 0) continue; /* an input nobody reads */
        int lo = tp->producer >= 0 ? g->topo_pos[tp->producer] : 0, hi = lo;
        for (int i = 0; i < tp->n_consumers; i++)
            if (g->topo_pos[tp->consumers[i]] > hi) hi = g->topo_pos[tp->consumers[i]];
        diff[lo] += (double)tp->bytes, diff[hi + 1] -= (double)tp->bytes;
    }
    double live = 0;
    for (int i = 0; i < n; i++) {
        int v = g->topo[i];
        double extra = g->ops[v].extra_memory_bytes;
        live += diff[i];
        ws[v] = fmax(live, 0) + (extra > 0 ? extra : 0);
    }
    free(diff);
}

/* Graph outputs stay where they end up until the request ends (design.md §4): on their
 * producer's device when there is no I/O device. */
static void held_outputs(const pl_graph *g, double *op_held)
{
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tp = &g->tensors[t];
        if ((tp->flags & PL_TENSOR_OUTPUT) && tp->producer >= 0 && !pk_is_weight(g, t))
            op_held[tp->producer] += pk_tensor_bytes(g, t);
    }
}

/* The I/O device holds the graph inputs until they are sent and the returned outputs until the
 * end, whatever runs on it. */
static void io_base(pk_mem_track *m)
{
    const pl_graph *g = m->k->g;
    int io = m->k->c->io_device;
    if (io < 0 || io >= m->nd) return;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tp = &g->tensors[t];
        if (!pk_is_weight(g, t) && (tp->flags & (PL_TENSOR_INPUT | PL_TENSOR_OUTPUT)))
            m->held[io] += pk_tensor_bytes(g, t);
    }
}

/* Per op: its distinct weights, an upper bound of what it can add to any device. */
static void own_weights(const pl_graph *g, double *w)
{
    for (int v = 0; v < g->n_ops; v++) {
        const pl_op *o = &g->ops[v];
        for (int i = 0; i < o->n_inputs + o->n_outputs; i++)
            if (pk_is_weight(g, touched(o, i)) && !touched_before(o, i))
                w[v] += pk_tensor_bytes(g, touched(o, i));
    }
}

void pk_mem_init(pk_mem_track *m, const pl_cost *k)
{
    const pl_graph *g = k->g;
    memset(m, 0, sizeof *m);
    m->k = k;
    m->nd = k->n_devs;
    m->cap = pl_malloc((m->nd + 1) * sizeof *m->cap);
    for (int d = 0; d < m->nd; d++)
        m->cap[d] = pk_dev_cap(k, d);
    m->wsum = pl_calloc(m->nd + 1, sizeof *m->wsum);
    m->wsmax = pl_calloc(m->nd + 1, sizeof *m->wsmax);
    m->held = pl_calloc(m->nd + 1, sizeof *m->held);
    m->op_ws = pl_malloc((g->n_ops + 1) * sizeof *m->op_ws);
    working_sets(g, m->op_ws);
    m->op_weights = pl_calloc(g->n_ops + 1, sizeof *m->op_weights);
    own_weights(g, m->op_weights);
    m->wid = pl_malloc((g->n_tensors + 1) * sizeof *m->wid);
    for (int t = 0; t < g->n_tensors; t++)
        m->wid[t] = pk_is_weight(g, t) ? m->n_w++ : -1;
    m->refs = pl_calloc((size_t)m->n_w * m->nd + 1, sizeof *m->refs);
    m->op_held = pl_calloc(g->n_ops + 1, sizeof *m->op_held);
    if (k->c->io_device < 0) held_outputs(g, m->op_held);
    io_base(m);
}

void pk_mem_free(pk_mem_track *m)
{
    free(m->cap), free(m->wsum), free(m->wsmax), free(m->op_ws), free(m->op_weights);
    free(m->wid), free(m->held), free(m->op_held), free(m->refs);
    memset(m, 0, sizeof *m);
}

void pk_mem_reset(pk_mem_track *m)
{
    memset(m->wsum, 0, m->nd * sizeof *m->wsum);
    memset(m->wsmax, 0, m->nd * sizeof *m->wsmax);
    memset(m->held, 0, m->nd * sizeof *m->held);
    io_base(m);
    memset(m->refs, 0, ((size_t)m->n_w * m->nd + 1) * sizeof *m->refs);
}

/* Ops on d touching weight tensor t (each touch counted: Mul(w, w) holds two). */
static int *refs(const pk_mem_track *m, int t, int d)
{
    return &m->refs[(size_t)m->wid[t] * m->nd + d];
}

double pk_mem_new_weights(const pk_mem_track *m, int op, int d)
{
    const pl_graph *g = m->k->g;
    const pl_op *o = &g->ops[op];
    double w = 0;
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (t >= 0 && m->wid[t] >= 0 && *refs(m, t, d) == 0 && !touched_before(o, i))
            w += pk_tensor_bytes(g, t);
    }
    return w;
}

double pk_mem_need(const pk_mem_track *m, int op, int d)
{
    return m->wsum[d] + pk_mem_new_weights(m, op, d) + m->held[d] + m->op_held[op] +
           fmax(m->wsmax[d], m->op_ws[op]);
}

/* O(1) when even all of op's weights would fit, which is the common case. */
bool pk_mem_fits(const pk_mem_track *m, int op, int d)
{
    PL_ASSERT(op >= 0 && op < m->k->n_ops && d >= 0 && d < m->nd);
    double bound = pk_mem_used(m, d) + m->op_weights[op] + m->op_held[op] +
                   fmax(0, m->op_ws[op] - m->wsmax[d]);
    return bound <= m->cap[d] || pk_mem_need(m, op, d) <= m->cap[d];
}

void pk_mem_add(pk_mem_track *m, int op, int d)
{
    const pl_graph *g = m->k->g;
    const pl_op *o = &g->ops[op];
    PL_ASSERT(op >= 0 && op < g->n_ops && d >= 0 && d < m->nd);
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (t < 0 || m->wid[t] < 0) continue;
        if ((*refs(m, t, d))++ == 0) m->wsum[d] += pk_tensor_bytes(g, t);
    }
    m->wsmax[d] = fmax(m->wsmax[d], m->op_ws[op]);
    m->held[d] += m->op_held[op];
}

void pk_mem_remove(pk_mem_track *m, int op, int d)
{
    const pl_graph *g = m->k->g;
    const pl_op *o = &g->ops[op];
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (t < 0 || m->wid[t] < 0) continue;
        PL_ASSERT(*refs(m, t, d) > 0); /* op was added to d */
        if (--(*refs(m, t, d)) == 0) m->wsum[d] -= pk_tensor_bytes(g, t);
    }
    m->held[d] -= m->op_held[op];
}

double pk_mem_freed(const pk_mem_track *m, int op, int d)
{
    const pl_graph *g = m->k->g;
    const pl_op *o = &g->ops[op];
    double w = m->op_held[op];
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (t < 0 || m->wid[t] < 0 || touched_before(o, i)) continue;
        int uses = 0; /* this op's own references to t */
        for (int j = 0; j < o->n_inputs + o->n_outputs; j++)
            uses += touched(o, j) == t;
        if (*refs(m, t, d) == uses) w += pk_tensor_bytes(g, t);
    }
    return w;
}

void pk_mem_recompute_ws(pk_mem_track *m, const int *dev)
{
    memset(m->wsmax, 0, m->nd * sizeof *m->wsmax);
    for (int v = 0; v < m->k->n_ops; v++)
        m->wsmax[dev[v]] = fmax(m->wsmax[dev[v]], m->op_ws[v]);
}

void pl_plan_static_memory(const pl_cost *k, const int *dev, double *out)
{
    pk_mem_track m;
    pk_mem_init(&m, k);
    for (int v = 0; v < k->n_ops; v++)
        pk_mem_add(&m, v, dev[v]);
    for (int d = 0; d < k->n_devs; d++)
        out[d] = pk_mem_used(&m, d);
    pk_mem_free(&m);
}

void pl_op_memory(const pl_cost *k, double *ws, double *held, double *io_bytes)
{
    pk_mem_track m;
    pk_mem_init(&m, k);
    memcpy(ws, m.op_ws, k->n_ops * sizeof *ws);
    memcpy(held, m.op_held, k->n_ops * sizeof *held);
    int io = k->c->io_device;
    *io_bytes = io >= 0 && io < k->n_devs ? m.held[io] : 0;
    pk_mem_free(&m);
}

double pk_total_weights(const pl_cost *k)
{
    double w = 0;
    for (int t = 0; t < k->g->n_tensors; t++)
        if (pk_is_weight(k->g, t)) w += pk_tensor_bytes(k->g, t);
    return w;
}

/* ---- feasibility checks and their messages ---- */

/* The model as a user calls it: its file's name without directory or extension (an ONNX
 * graph's own name is often an exporter's "torch_jit"), else the graph's name. */
const char *pk_model_name(const pl_cost *k, char *buf, size_t n)
{
    const char *p = k->g->path;
    if (k->g->n_tenants > 0) return "the models together"; /* a union (placer multi) */
    if (!p || !*p) return k->g->name && k->g->name[0] ? k->g->name : "model";
    const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p, *dot = strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(buf, n, "%.*s", len, base);
    return buf;
}

#define MODEL_NAME(k) pk_model_name((k), (char[128]){0}, 128)

static int largest_device(const pl_cost *k)
{
    int best = 0;
    for (int d = 1; d < k->n_devs; d++)
        if (pk_dev_cap(k, d) > pk_dev_cap(k, best)) best = d;
    return best;
}

static int check_runnable(const pl_cost *k, pl_err *err)
{
    for (int v = 0; v < k->n_ops; v++) {
        bool any = false;
        for (int d = 0; d < k->n_devs && !any; d++)
            any = isfinite(pl_cost_op_s(k, v, d));
        if (!any)
            return pl_err_set(err, "%s: op '%s' (%s) cannot run on any device of %s", MODEL_NAME(k),
                              k->g->ops[v].name, k->g->ops[v].type,
                              k->c->name ? k->c->name : "the cluster");
    }
    return 0;
}

static int check_total(const pl_cost *k, pl_err *err)
{
    double total = 0, w = pk_total_weights(k);
    for (int d = 0; d < k->n_devs; d++)
        total += pk_dev_cap(k, d);
    if (w <= total) return 0;
    char a[32], b[32];
    return pl_err_set(err, "%s: no placement fits: total weights %s > total memory %s",
                      MODEL_NAME(k), pl_fmt_bytes(w, a, sizeof a),
                      pl_fmt_bytes(total, b, sizeof b));
}

/* An op alone on the largest device: its own weights plus its working set. */
static int check_each_op(const pl_cost *k, pl_err *err)
{
    pk_mem_track m;
    pk_mem_init(&m, k);
    int big = largest_device(k), rc = 0;
    for (int v = 0; v < k->n_ops && rc == 0; v++) {
        double need = pk_mem_need(&m, v, big);
        if (need <= m.cap[big]) continue;
        char a[32], b[32], c[32], e[32];
        rc = pl_err_set(err,
                        "%s: no placement fits: op '%s' alone needs %s (%s of weights + %s "
                        "working set); the largest device, %s, has %s",
                        k->g->n_tenants ? k->g->tenant_names[k->g->ops[v].tenant] : MODEL_NAME(k),
                        k->g->ops[v].name, pl_fmt_bytes(need, a, sizeof a),
                        pl_fmt_bytes(pk_mem_new_weights(&m, v, big), b, sizeof b),
                        pl_fmt_bytes(m.op_ws[v], c, sizeof c), k->c->devs[big].name,
                        pl_fmt_bytes(m.cap[big], e, sizeof e));
    }
    pk_mem_free(&m);
    return rc;
}

int pk_precheck(const pl_cost *k, pl_err *err)
{
    if (k->n_devs < 1) return pl_err_set(err, "%s: the cluster has no devices", MODEL_NAME(k));
    if (check_runnable(k, err) < 0 || check_total(k, err) < 0 || check_each_op(k, err) < 0)
        return -1;
    return 0;
}

int pk_no_room(const pl_cost *k, const pk_mem_track *m, const char *algo, int op, pl_err *err)
{
    int best = -1;
    double best_excess = INFINITY;
    for (int d = 0; d < k->n_devs; d++) {
        double excess = pk_mem_need(m, op, d) - m->cap[d];
        if (isfinite(pl_cost_op_s(k, op, d)) && excess < best_excess)
            best_excess = excess, best = d;
    }
    char a[32], b[32], c[32];
    if (best < 0)
        return pl_err_set(err, "%s: %s: op '%s' can run on no device", MODEL_NAME(k), algo,
                          k->g->ops[op].name);
    return pl_err_set(err,
                      "%s: %s: no room for op '%s' on any device: the closest, %s, would need "
                      "%s of its %s (%s used); the greedy placement ran out of memory",
                      MODEL_NAME(k), algo, k->g->ops[op].name, k->c->devs[best].name,
                      pl_fmt_bytes(pk_mem_need(m, op, best), a, sizeof a),
                      pl_fmt_bytes(m->cap[best], b, sizeof b),
                      pl_fmt_bytes(pk_mem_used(m, best), c, sizeof c));
}

int pk_first_fit(const pl_cost *k, const char *algo, int *dev, pl_err *err)
{
    pk_mem_track m;
    pk_mem_init(&m, k);
    int rc = 0;
    for (int i = 0; i < k->n_ops && rc == 0; i++) {
        int v = k->g->topo[i], d = 0;
        while (d < k->n_devs && !(isfinite(pl_cost_op_s(k, v, d)) && pk_mem_fits(&m, v, d)))
            d++;
        if (d == k->n_devs)
            rc = pk_no_room(k, &m, algo, v, err);
        else
            pk_mem_add(&m, v, dev[v] = d);
    }
    pk_mem_free(&m);
    return rc;
}

/* ---- the public face of the tracker (place.h) ---- */

struct pl_mem_track {
    pk_mem_track m;
};

pl_mem_track *pl_mem_track_new(const pl_cost *k)
{
    pl_mem_track *t = pl_malloc(sizeof *t);
    pk_mem_init(&t->m, k);
    return t;
}

void pl_mem_track_free(pl_mem_track *t)
{
    if (!t) return;
    pk_mem_free(&t->m);
    free(t);
}

bool pl_mem_track_fits(const pl_mem_track *t, int op, int dev)
{
    return pk_mem_fits(&t->m, op, dev);
}

void pl_mem_track_add(pl_mem_track *t, int op, int dev)
{
    pk_mem_add(&t->m, op, dev);
}

void pl_mem_track_remove(pl_mem_track *t, int op, int dev)
{
    pk_mem_remove(&t->m, op, dev);
}

int pl_mem_track_no_room(const pl_mem_track *t, const char *algo, int op, pl_err *err)
{
    return pk_no_room(t->m.k, &t->m, algo, op, err);
}
