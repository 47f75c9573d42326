/* lp_common.c: memory bookkeeping, mean times and warnings shared by m-SCT and METIS. */
#include "lp_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* The i-th tensor an op touches (inputs, then outputs); -1 past the end. A Constant's value is
 * a weight it writes: resident where the op runs. */
static int touched(const pl_op *op, int i)
{
    if (i < op->n_inputs) return op->inputs[i];
    return i - op->n_inputs < op->n_outputs ? op->outputs[i - op->n_inputs] : -1;
}

/* An op may list a tensor twice (Mul(x, x)); each weight must count once. */
static bool seen_before(const pl_op *op, int i)
{
    int t = touched(op, i);
    for (int j = 0; j < i; j++)
        if (touched(op, j) == t) return true;
    return false;
}

/* g->edges is sorted by source, so one backward sweep over the topological order visits each
 * op's out-edges as a contiguous block. */
void lp_upward_rank(const pl_cost *k, double *rank)
{
    const pl_graph *g = k->g;
    pk_route r = pk_mean_route(k->c);
    int *first = pl_malloc((g->n_ops + 1) * sizeof *first);
    for (int i = 0; i <= g->n_ops; i++)
        first[i] = g->n_edges;
    for (int e = g->n_edges - 1; e >= 0; e--)
        first[g->edges[e].src] = e;
    for (int t = g->n_ops - 1; t >= 0; t--) {
        int v = g->topo[t];
        double best = 0;
        for (int e = first[v]; e < g->n_edges && g->edges[e].src == v; e++) {
            best = fmax(best, pk_mean_xfer_s(k, r, g->edges[e].tensor) + rank[g->edges[e].dst]);
        }
        rank[v] = pk_op_mean_s(k, v) + best;
    }
    free(first);
}

void lp_mem_init(lp_mem *m, const pl_cost *k)
{
    size_t n = k->n_ops ? k->n_ops : 1, D = k->n_devs;
    m->k = k;
    m->n_devs = k->n_devs;
    m->ws_bytes = pl_malloc(n * sizeof *m->ws_bytes);
    m->held_bytes = pl_malloc(n * sizeof *m->held_bytes);
    pl_op_memory(k, m->ws_bytes, m->held_bytes, &m->io_bytes);
    m->own_weights_bytes = pl_calloc(n, sizeof *m->own_weights_bytes);
    for (int op = 0; op < k->n_ops; op++) {
        const pl_op *o = &k->g->ops[op];
        for (int i = 0; i < o->n_inputs + o->n_outputs; i++)
            if (pk_is_weight(k->g, touched(o, i)) && !seen_before(o, i))
                m->own_weights_bytes[op] += pk_tensor_bytes(k->g, touched(o, i));
    }
    m->weights_bytes = pl_calloc(D, sizeof *m->weights_bytes);
    m->held_sum_bytes = pl_calloc(D, sizeof *m->held_sum_bytes);
    m->ws_max_bytes = pl_calloc(D, sizeof *m->ws_max_bytes);
    m->refs = pl_calloc((size_t)k->g->n_tensors * D, sizeof *m->refs);
}

void lp_mem_free(lp_mem *m)
{
    free(m->ws_bytes), free(m->held_bytes), free(m->weights_bytes), free(m->held_sum_bytes);
    free(m->own_weights_bytes), m->own_weights_bytes = NULL;
    free(m->ws_max_bytes), free(m->refs);
    m->ws_bytes = m->held_bytes = m->weights_bytes = m->held_sum_bytes = m->ws_max_bytes = NULL;
    m->refs = NULL;
}

static int *ref(const lp_mem *m, int t, int dev)
{
    return &m->refs[(size_t)t * m->n_devs + dev];
}

static double io_on(const lp_mem *m, int dev)
{
    return dev == m->k->c->io_device ? m->io_bytes : 0;
}

double lp_mem_used(const lp_mem *m, int dev)
{
    return m->weights_bytes[dev] + m->held_sum_bytes[dev] + m->ws_max_bytes[dev] + io_on(m, dev);
}

double lp_mem_need(const lp_mem *m, int op, int dev)
{
    const pl_op *o = &m->k->g->ops[op];
    double w = m->weights_bytes[dev];
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (pk_is_weight(m->k->g, t) && *ref(m, t, dev) == 0 && !seen_before(o, i))
            w += pk_tensor_bytes(m->k->g, t);
    }
    return w + m->held_sum_bytes[dev] + m->held_bytes[op] +
           fmax(m->ws_max_bytes[dev], m->ws_bytes[op]) + io_on(m, dev);
}

bool lp_mem_fits(const lp_mem *m, int op, int dev, double cap)
{
    double bound = lp_mem_used(m, dev) + m->own_weights_bytes[op] + m->held_bytes[op] +
                   fmax(0, m->ws_bytes[op] - m->ws_max_bytes[dev]);
    return bound <= cap || lp_mem_need(m, op, dev) <= cap;
}

double lp_mem_freed(const lp_mem *m, int op, int dev)
{
    const pl_op *o = &m->k->g->ops[op];
    double w = m->held_bytes[op];
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (!pk_is_weight(m->k->g, t) || seen_before(o, i)) continue;
        int uses = 0; /* this op's own references to t */
        for (int j = 0; j < o->n_inputs + o->n_outputs; j++)
            uses += touched(o, j) == t;
        if (*ref(m, t, dev) == uses) w += pk_tensor_bytes(m->k->g, t);
    }
    return w;
}

void lp_mem_add(lp_mem *m, int op, int dev)
{
    const pl_op *o = &m->k->g->ops[op];
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (!pk_is_weight(m->k->g, t)) continue;
        if ((*ref(m, t, dev))++ == 0) m->weights_bytes[dev] += pk_tensor_bytes(m->k->g, t);
    }
    m->held_sum_bytes[dev] += m->held_bytes[op];
    m->ws_max_bytes[dev] = fmax(m->ws_max_bytes[dev], m->ws_bytes[op]);
}

void lp_mem_remove(lp_mem *m, int op, int dev)
{
    const pl_op *o = &m->k->g->ops[op];
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = touched(o, i);
        if (!pk_is_weight(m->k->g, t)) continue;
        if (--(*ref(m, t, dev)) == 0) m->weights_bytes[dev] -= pk_tensor_bytes(m->k->g, t);
    }
    m->held_sum_bytes[dev] -= m->held_bytes[op];
}

void lp_mem_recompute_ws(lp_mem *m, const int *dev_of_op)
{
    for (int d = 0; d < m->n_devs; d++)
        m->ws_max_bytes[d] = 0;
    for (int i = 0; i < m->k->n_ops; i++) {
        int d = dev_of_op[i];
        m->ws_max_bytes[d] = fmax(m->ws_max_bytes[d], m->ws_bytes[i]);
    }
}

void lp_warn(pl_err *err, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

int lp_check_runnable(const pl_cost *k, const char *algo, pl_err *err)
{
    for (int i = 0; i < k->n_ops; i++)
        if (!isfinite(pk_op_mean_s(k, i)))
            return pl_err_set(err, "%s: op '%s' (%s) can run on no device of cluster '%s'", algo,
                              k->g->ops[i].name, k->g->ops[i].type, k->c->name ? k->c->name : "");
    return 0;
}

int lp_check_memory(const pl_cost *k, const int *dev, const char *algo, pl_err *err)
{
    double *used = pl_calloc(k->n_devs, sizeof *used);
    pl_plan_static_memory(k, dev, used);
    int rc = 0;
    for (int d = 0; d < k->n_devs && rc == 0; d++) {
        double cap = pk_dev_cap(k, d);
        if (used[d] <= cap) continue;
        char a[32], b[32];
        rc = pl_err_set(err, "%s: device '%s' needs %s of static memory but has %s", algo,
                        k->c->devs[d].name, pl_fmt_bytes(used[d], a, sizeof a),
                        pl_fmt_bytes(cap, b, sizeof b));
    }
    free(used);
    return rc;
}
