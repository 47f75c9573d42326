/* check_mem.c: the checker's own account of memory, from the recorded times: each copy of a
 * tensor on a device becomes an interval [alloc, free), the intervals are swept per device,
 * and the peak must equal the one reported and fit the device (sim.h's rules, restated in
 * docs/simulator.md). It shares no code with the run's online account on purpose. */
#include "check_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mem_ev {
    int dev;
    double t, delta;
} mem_ev;

typedef struct mem_ctx {
    chk *c;
    double *s, *e; /* [t * D + d]: lifetime of the copy of t on d; s NAN when none */
    size_t *touched;
    size_t n_touched;
    mem_ev *ev;
    size_t n_ev, cap_ev;
} mem_ctx;

static void add_ev(mem_ctx *m, int dev, double t, double delta)
{
    if (m->n_ev == m->cap_ev) {
        m->cap_ev = m->cap_ev ? 2 * m->cap_ev : 1024;
        m->ev = pl_realloc(m->ev, m->cap_ev * sizeof *m->ev);
    }
    m->ev[m->n_ev++] = (mem_ev){dev, t, delta};
}

/* The copy of t on d lives at least over [s, e]. */
static void touch(mem_ctx *m, int t, int d, double s, double e)
{
    size_t key = (size_t)t * m->c->D + d;
    if (isnan(m->s[key])) {
        m->s[key] = s, m->e[key] = e;
        m->touched[m->n_touched++] = key;
        return;
    }
    m->s[key] = fmin(m->s[key], s), m->e[key] = fmax(m->e[key], e);
}

static double made_at(const chk *c, int r, int t)
{
    int prod = c->g->tensors[t].producer;
    return prod >= 0 ? c->r->op_start_s[(size_t)r * c->n + prod] : 0;
}

static bool weight(const chk *c, int t)
{
    return c->g->tensors[t].flags & PL_TENSOR_WEIGHT;
}

/* An input the op lists again (counted once). */
static bool listed_before(const pl_op *o, int k)
{
    for (int j = 0; j < k; j++)
        if (o->inputs[j] == o->inputs[k]) return true;
    return false;
}

/* Outputs live from their producer's start; inputs until their readers end. */
static void op_copies(mem_ctx *m, int r, int op)
{
    const chk *c = m->c;
    const pl_op *o = &c->g->ops[op];
    int d = c->p->dev[op];
    size_t inst = (size_t)r * c->n + op;
    double s = c->r->op_start_s[inst], e = c->r->op_end_s[inst];
    if (o->extra_memory_bytes > 0 && e > s)
        add_ev(m, d, s, o->extra_memory_bytes), add_ev(m, d, e, -o->extra_memory_bytes);
    for (int k = 0; k < o->n_outputs; k++)
        if (o->outputs[k] >= 0 && !weight(c, o->outputs[k])) touch(m, o->outputs[k], d, s, e);
    for (int k = 0; k < o->n_inputs; k++) {
        int t = o->inputs[k], src;
        if (t < 0 || weight(c, t) || listed_before(o, k)) continue;
        if ((src = chk_src_dev(c, t)) < 0)
            touch(m, t, d, 0, e);
        else if (src == d)
            touch(m, t, d, made_at(c, r, t), e);
        else if (chk_reader(c, t, op) >= 0) {
            /* per_edge: the reader's own copy, from its transfer's start to the reader's end */
            double xs = c->r->xfers[chk_xfer(c, r, t, d, op)].start_s;
            double b = c->g->tensors[t].bytes > 0 ? (double)c->g->tensors[t].bytes : 0;
            if (b > 0 && e > xs) add_ev(m, d, xs, b), add_ev(m, d, e, -b);
        } else {
            int x = chk_xfer(c, r, t, d, -1); /* check_ops made sure it exists */
            touch(m, t, d, c->r->xfers[x].start_s, e);
        }
    }
}

/* A sent tensor lives on its source until the send ends, and on the destination from the
 * send's start. Request r's transfers are contiguous in c->xs (sorted by request first). */
static void xfer_copies(mem_ctx *m, int r, size_t *at)
{
    const chk *c = m->c;
    for (; *at < (size_t)c->r->n_xfers; ++*at) {
        const pl_xfer *x = &c->r->xfers[c->xs[*at].idx];
        if (x->request != r) break;
        touch(m, x->tensor, x->from, made_at(c, r, x->tensor), x->end_s);
        if (x->reader < 0) touch(m, x->tensor, x->to, x->start_s, x->start_s);
    }
}

/* Graph outputs stay where they end up (the I/O device, else their source) until the
 * request ends. Inputs that are on every device hold nothing. */
static void held_outputs(mem_ctx *m, int r)
{
    const chk *c = m->c;
    for (int t = 0; t < c->g->n_tensors; t++) {
        int src;
        if (!c->is_out[t] || weight(c, t) || (src = chk_src_dev(c, t)) < 0) continue;
        if (c->io < 0 || src == c->io) {
            touch(m, t, src, made_at(c, r, t), c->req_end[r]);
            continue;
        }
        int x = chk_xfer(c, r, t, c->io, -1);
        if (x >= 0) touch(m, t, c->io, c->r->xfers[x].start_s, c->req_end[r]);
    }
}

static void flush_copies(mem_ctx *m)
{
    int D = m->c->D;
    for (size_t i = 0; i < m->n_touched; i++) {
        size_t key = m->touched[i];
        int t = (int)(key / D), d = (int)(key % D);
        double b = m->c->g->tensors[t].bytes > 0 ? (double)m->c->g->tensors[t].bytes : 0;
        if (b > 0 && m->e[key] > m->s[key]) add_ev(m, d, m->s[key], b), add_ev(m, d, m->e[key], -b);
        m->s[key] = NAN;
    }
    m->n_touched = 0;
}

/* Per device, by time; at one instant frees first, so [a, b) and [b, c) never overlap. */
static int cmp_ev(const void *a, const void *b)
{
    const mem_ev *x = a, *y = b;
    if (x->dev != y->dev) return x->dev - y->dev;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->delta > y->delta) - (x->delta < y->delta);
}

static void weights(const chk *c, double *out)
{
    int *stamp = pl_calloc(c->D + 1, sizeof *stamp);
    for (int t = 0; t < c->g->n_tensors; t++) {
        const pl_tensor *tp = &c->g->tensors[t];
        if (!weight(c, t) || tp->bytes <= 0) continue;
        for (int i = 0; i < tp->n_consumers; i++) {
            int d = c->p->dev[tp->consumers[i]];
            if (stamp[d] != t + 1) stamp[d] = t + 1, out[d] += (double)tp->bytes;
        }
    }
    free(stamp);
}

/* Peak per device: the largest total after all the changes of one instant. */
static void sweep(const mem_ctx *m, double *peak)
{
    double cur = 0;
    for (size_t i = 0; i < m->n_ev; i++) {
        const mem_ev *v = &m->ev[i];
        if (i == 0 || v->dev != m->ev[i - 1].dev) cur = peak[v->dev];
        cur += v->delta;
        bool last = i + 1 == m->n_ev || m->ev[i + 1].dev != v->dev || m->ev[i + 1].t != v->t;
        if (last && cur > peak[v->dev]) peak[v->dev] = cur;
    }
}

static int verdict(chk *c, const double *peak)
{
    for (int d = 0; d < c->D; d++) {
        const pl_device *dv = &c->k->c->devs[d];
        if (fabs(peak[d] - c->r->peak_mem_bytes[d]) > 1e-9 * fmax(1, peak[d]))
            return chk_fail(c, "device '%s' holds at most %.0f bytes, not the %.0f reported",
                            dv->name, peak[d], c->r->peak_mem_bytes[d]);
        if (!c->o->ignore_memory && dv->memory_bytes > 0 && peak[d] > dv->memory_bytes)
            return chk_fail(c, "device '%s' needs %.0f bytes at its peak: %.0f over its capacity",
                            dv->name, peak[d], peak[d] - dv->memory_bytes);
    }
    return 0;
}

/* Every request's copies as events, sorted per device by time (m->ev), and the resident
 * weights per device into base (zeroed by the caller); m's buffers are the caller's to free
 * (mem_free). */
static void mem_events(chk *c, mem_ctx *m, double *base)
{
    size_t cells = (size_t)c->g->n_tensors * c->D + 1;
    *m = (mem_ctx){c,
                   pl_malloc(cells * sizeof(double)),
                   pl_malloc(cells * sizeof(double)),
                   pl_malloc(cells * sizeof(size_t)),
                   0,
                   NULL,
                   0,
                   0};
    for (size_t i = 0; i < cells; i++)
        m->s[i] = NAN;
    size_t at = 0;
    for (int r = 0; r < c->K; r++) {
        for (int op = 0; op < c->n; op++)
            op_copies(m, r, op);
        xfer_copies(m, r, &at);
        held_outputs(m, r);
        flush_copies(m);
    }
    pl_sort(m->ev, m->n_ev, sizeof *m->ev, cmp_ev);
    weights(c, base);
}

static void mem_free(mem_ctx *m)
{
    free(m->s), free(m->e), free(m->touched), free(m->ev);
}

int chk_memory(chk *c)
{
    mem_ctx m;
    /* peak[] starts at the resident weights: sweep adds the changes on top. */
    double *peak = pl_calloc(c->D + 1, sizeof *peak);
    mem_events(c, &m, peak);
    sweep(&m, peak);
    int rc = verdict(c, peak);
    free(peak);
    mem_free(&m);
    return rc;
}

void chk_memory_curve(chk *c, pl_mem_step **steps, int *n_steps)
{
    mem_ctx m;
    double *base = pl_calloc(c->D + 1, sizeof *base);
    mem_events(c, &m, base);
    pl_mem_step *out = pl_malloc((m.n_ev + c->D + 1) * sizeof *out);
    int n = 0;
    size_t i = 0;
    for (int d = 0; d < c->D; d++) {
        double cur = base[d];
        out[n++] = (pl_mem_step){d, 0, cur};
        for (; i < m.n_ev && m.ev[i].dev == d; i++) {
            cur += m.ev[i].delta;
            bool last = i + 1 == m.n_ev || m.ev[i + 1].dev != d || m.ev[i + 1].t != m.ev[i].t;
            if (!last) continue;
            if (out[n - 1].dev == d && out[n - 1].t_s == m.ev[i].t)
                out[n - 1].bytes = cur; /* a change at 0 replaces the start */
            else
                out[n++] = (pl_mem_step){d, m.ev[i].t, cur};
        }
    }
    free(base);
    mem_free(&m);
    *steps = out, *n_steps = n;
}
