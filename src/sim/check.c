/* check.c: pl_sim_check, the invariants of a recorded run (sim.h), checked from the recorded
 * times alone. Each check returns the first violation in words. */
#include "check_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int chk_fail(chk *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (c->why && c->why_n) vsnprintf(c->why, c->why_n, fmt, ap);
    va_end(ap);
    return -1;
}

bool chk_le(double a, double b)
{
    return a <= b + 1e-12 + 1e-9 * fmax(fabs(a), fabs(b));
}

static bool chk_eq(double a, double b)
{
    return chk_le(a, b) && chk_le(b, a);
}

int chk_src_dev(const chk *c, int t)
{
    const pl_tensor *tp = &c->g->tensors[t];
    if (tp->flags & PL_TENSOR_WEIGHT) return -1;
    return tp->producer >= 0 ? c->p->dev[tp->producer] : c->io;
}

const char *chk_dev_name(const chk *c, int d)
{
    return c->k->c->devs[d].name;
}

/* Is t sent once per reading op (per_edge, and an op's result) rather than once per device? */
static bool per_edge_tensor(const chk *c, int t)
{
    const pl_tensor *tp = &c->g->tensors[t];
    return c->o->per_edge && tp->producer >= 0 && !(tp->flags & PL_TENSOR_WEIGHT);
}

int chk_reader(const chk *c, int t, int op)
{
    return per_edge_tensor(c, t) ? op : -1;
}
static const char *op_name(const chk *c, int op)
{
    return c->g->ops[op].name;
}

/* ---- transfers, by (request, tensor, to, reader) ---- */

static long long xkey(const chk *c, int r, int t, int to, int reader)
{
    return (((long long)r * c->g->n_tensors + t) * c->D + to) * (c->n + 1) + reader + 1;
}

static int cmp_xref(const void *a, const void *b)
{
    const chk_xref *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static void index_xfers(chk *c)
{
    c->xs = pl_malloc((c->r->n_xfers + 1) * sizeof *c->xs);
    for (int i = 0; i < c->r->n_xfers; i++) {
        const pl_xfer *x = &c->r->xfers[i];
        int rd = x->reader >= -1 && x->reader < c->n ? x->reader : -1; /* checked later */
        c->xs[i] = (chk_xref){xkey(c, x->request, x->tensor, x->to, rd), i};
    }
    pl_sort(c->xs, c->r->n_xfers, sizeof *c->xs, cmp_xref);
}

int chk_xfer(const chk *c, int r, int t, int to, int reader)
{
    long long key = xkey(c, r, t, to, reader);
    int lo = 0, hi = c->r->n_xfers - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c->xs[mid].key == key) return c->xs[mid].idx;
        if (c->xs[mid].key < key)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Does op `op` read tensor t? */
static bool reads(const chk *c, int op, int t)
{
    const pl_op *o = &c->g->ops[op];
    for (int k = 0; k < o->n_inputs; k++)
        if (o->inputs[k] == t) return true;
    return false;
}

/* Under per_edge a transfer of an op's result serves one reader on its destination, or is an
 * output's return; otherwise it names no reader. */
static int check_reader(chk *c, const pl_xfer *x)
{
    const char *tn = c->g->tensors[x->tensor].name;
    bool per_edge = per_edge_tensor(c, x->tensor);
    if (x->reader < 0) {
        if (!per_edge || (c->io == x->to && c->is_out[x->tensor])) return 0;
        return chk_fail(c,
                        "tensor '%s' is sent to '%s' for no reader, but per_edge sends once per "
                        "reading op",
                        tn, chk_dev_name(c, x->to));
    }
    if (!per_edge)
        return chk_fail(c,
                        "tensor '%s' is sent to '%s' for one reader, but transfers are per device",
                        tn, chk_dev_name(c, x->to));
    if (x->reader >= c->n || c->p->dev[x->reader] != x->to || !reads(c, x->reader, x->tensor))
        return chk_fail(c, "tensor '%s' is sent to '%s' for an op that does not read it there", tn,
                        chk_dev_name(c, x->to));
    return 0;
}

/* Each transfer: a real route, from where the tensor is, once per (request, tensor, to) (per
 * reader under per_edge), taking latency + bytes / bandwidth, after its producer ends. */
static int check_xfers(chk *c)
{
    const pl_xfer *xs = c->r->xfers;
    for (int i = 0; i < c->r->n_xfers; i++) {
        const pl_xfer *x = &xs[i];
        if (x->tensor < 0 || x->tensor >= c->g->n_tensors || x->request < 0 || x->request >= c->K ||
            x->from < 0 || x->from >= c->D || x->to < 0 || x->to >= c->D || x->from == x->to)
            return chk_fail(c, "transfer %d is malformed", i);
        const char *tn = c->g->tensors[x->tensor].name;
        if (check_reader(c, x) < 0) return -1;
        if (chk_src_dev(c, x->tensor) != x->from)
            return chk_fail(c, "tensor '%s' is sent from '%s', where it is not", tn,
                            chk_dev_name(c, x->from));
        if (!chk_eq(x->end_s - x->start_s, pl_cost_xfer_s(c->k, x->tensor, x->from, x->to)))
            return chk_fail(c, "the transfer of '%s' to '%s' lasts %.9g s, not %.9g s", tn,
                            chk_dev_name(c, x->to), x->end_s - x->start_s,
                            pl_cost_xfer_s(c->k, x->tensor, x->from, x->to));
        int prod = c->g->tensors[x->tensor].producer;
        double ready = prod >= 0 ? c->r->op_end_s[(size_t)x->request * c->n + prod] : 0;
        if (!chk_le(ready, x->start_s))
            return chk_fail(c, "tensor '%s' is sent to '%s' at %.9g s, before it is made (%.9g s)",
                            tn, chk_dev_name(c, x->to), x->start_s, ready);
        if (i > 0 && c->xs[i].key == c->xs[i - 1].key) {
            const pl_xfer *y = &xs[c->xs[i].idx];
            return chk_fail(c, "tensor '%s' is sent to '%s' twice (request %d)",
                            c->g->tensors[y->tensor].name, chk_dev_name(c, y->to), y->request);
        }
    }
    return 0;
}

/* ---- ops ---- */

static int check_input(chk *c, int r, int op, int t)
{
    size_t inst = (size_t)r * c->n + op;
    int d = c->p->dev[op], src = chk_src_dev(c, t), prod = c->g->tensors[t].producer;
    double at = 0;
    if (src >= 0 && src != d) {
        int x = chk_xfer(c, r, t, d, chk_reader(c, t, op));
        if (x < 0)
            return chk_fail(c, "op '%s' on '%s' reads '%s', which is never sent there (request %d)",
                            op_name(c, op), chk_dev_name(c, d), c->g->tensors[t].name, r);
        at = c->r->xfers[x].end_s;
    } else if (prod >= 0 && src >= 0) {
        at = c->r->op_end_s[(size_t)r * c->n + prod];
    }
    if (!chk_le(at, c->r->op_start_s[inst]))
        return chk_fail(c,
                        "op '%s' starts at %.9g s on '%s', before its input '%s' arrives at "
                        "%.9g s (request %d)",
                        op_name(c, op), c->r->op_start_s[inst], chk_dev_name(c, d),
                        c->g->tensors[t].name, at, r);
    return 0;
}

/* Every op ran, for its time, after all its inputs were on its device. */
static int check_ops(chk *c)
{
    for (int r = 0; r < c->K; r++)
        for (int op = 0; op < c->n; op++) {
            size_t inst = (size_t)r * c->n + op;
            double s = c->r->op_start_s[inst], e = c->r->op_end_s[inst];
            double want = pl_cost_op_placed_s(c->k, op, c->p->dev) + c->stage[op];
            if (!(s >= 0) || !isfinite(e))
                return chk_fail(c, "op '%s' never runs (request %d)", op_name(c, op), r);
            if (c->dom[c->p->dev[op]] < 0 && !chk_eq(e - s, want)) /* else chk_share */
                return chk_fail(c, "op '%s' runs for %.9g s, not %.9g s (request %d)",
                                op_name(c, op), e - s, want, r);
            const pl_op *o = &c->g->ops[op];
            for (int k = 0; k < o->n_inputs; k++)
                if (o->inputs[k] >= 0 && check_input(c, r, op, o->inputs[k]) < 0) return -1;
        }
    return 0;
}

/* ---- exclusive resources: devices, ports, channels ---- */

/* A use of a resource (a device, a port, a channel) over [s, e]. */
typedef struct span {
    int res;
    double s, e;
    int what; /* op instance, or transfer index */
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->res != y->res) return x->res - y->res;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* Sorted by resource then start: the first use that overlaps the one before it on the same
 * resource, as its index, or -1. */
static int first_overlap(span *v, int n)
{
    pl_sort(v, n, sizeof *v, cmp_span);
    for (int i = 1; i < n; i++)
        if (v[i].res == v[i - 1].res && !chk_le(v[i - 1].e, v[i].s)) return i;
    return -1;
}

static int check_devices(chk *c, span *v)
{
    int m = 0;
    for (int r = 0; r < c->K; r++)
        for (int op = 0; op < c->n; op++) {
            size_t inst = (size_t)r * c->n + op;
            v[m++] = (span){c->p->dev[op], c->r->op_start_s[inst], c->r->op_end_s[inst], (int)inst};
        }
    int i = first_overlap(v, m);
    if (i < 0) return 0;
    return chk_fail(c, "ops '%s' and '%s' overlap on device '%s' (%.9g–%.9g s and from %.9g s)",
                    op_name(c, v[i - 1].what % c->n), op_name(c, v[i].what % c->n),
                    chk_dev_name(c, v[i].res), v[i - 1].s, v[i - 1].e, v[i].s);
}

/* kind 0: send ports (resource: the sender); 1: receive ports (the receiver); 2: channels
 * (the ordered pair). */
static int check_resource(chk *c, span *v, int kind)
{
    int m = 0;
    for (int i = 0; i < c->r->n_xfers; i++) {
        const pl_xfer *x = &c->r->xfers[i];
        int res = kind == 0 ? x->from : kind == 1 ? x->to : x->from * c->D + x->to;
        if (pl_cost_xfer_s(c->k, x->tensor, x->from, x->to) > 0) /* zero-time: no port */
            v[m++] = (span){res, x->start_s, x->end_s, i};
    }
    int i = first_overlap(v, m);
    if (i < 0) return 0;
    const pl_xfer *x = &c->r->xfers[v[i - 1].what], *y = &c->r->xfers[v[i].what];
    static const char *const what[] = {"send port of", "receive port of", "channel from"};
    return chk_fail(c, "transfers of '%s' and '%s' overlap on the %s '%s'%s%s (from %.9g s)",
                    c->g->tensors[x->tensor].name, c->g->tensors[y->tensor].name, what[kind],
                    chk_dev_name(c, kind == 1 ? y->to : y->from), kind == 2 ? " to " : "",
                    kind == 2 ? chk_dev_name(c, y->to) : "", v[i].s);
}

static int check_links(chk *c, span *v)
{
    switch (c->o->contention) {
    case PL_CONTENTION_PORTS:
        return check_resource(c, v, 0) < 0 ? -1 : check_resource(c, v, 1);
    case PL_CONTENTION_PAIR:
        return check_resource(c, v, 2);
    default:
        return 0;
    }
}

/* ---- order ---- */

/* Each request keeps the plan's order on each device; op i of request r + 1 starts after op i
 * of request r ends. */
static int check_order(chk *c)
{
    const pl_plan *p = c->p;
    for (int r = 0; r < c->K; r++) {
        for (int d = 0; p->order && d < c->D; d++)
            for (int i = p->order_off[d] + 1; i < p->order_off[d + 1]; i++) {
                size_t a = (size_t)r * c->n + p->order[i - 1], b = (size_t)r * c->n + p->order[i];
                if (!chk_le(c->r->op_end_s[a], c->r->op_start_s[b]))
                    return chk_fail(c,
                                    "device '%s' runs '%s' before '%s', against the plan's order "
                                    "(request %d)",
                                    chk_dev_name(c, d), op_name(c, p->order[i]),
                                    op_name(c, p->order[i - 1]), r);
            }
        for (int op = 0; r > 0 && op < c->n; op++) {
            size_t a = (size_t)(r - 1) * c->n + op, b = (size_t)r * c->n + op;
            if (!chk_le(c->r->op_end_s[a], c->r->op_start_s[b]))
                return chk_fail(c,
                                "op '%s' of request %d starts before the same op of request %d "
                                "ends",
                                op_name(c, op), r, r - 1);
        }
    }
    return 0;
}

/* ---- makespan ---- */

/* With an I/O device, every graph output made elsewhere goes back to it in every request. */
static int check_returns(chk *c)
{
    if (c->io < 0) return 0;
    for (int t = 0; t < c->g->n_tensors; t++) {
        int src = chk_src_dev(c, t);
        if (!c->is_out[t] || src < 0 || src == c->io) continue;
        for (int r = 0; r < c->K; r++)
            if (chk_xfer(c, r, t, c->io, -1) < 0)
                return chk_fail(c,
                                "graph output '%s' is never returned to the I/O device '%s' "
                                "(request %d)",
                                c->g->tensors[t].name, chk_dev_name(c, c->io), r);
    }
    return 0;
}

static int check_makespan(chk *c)
{
    double last = 0;
    for (int r = 0; r < c->K; r++) {
        c->req_end[r] = 0;
        for (int op = 0; op < c->n; op++)
            c->req_end[r] = fmax(c->req_end[r], c->r->op_end_s[(size_t)r * c->n + op]);
    }
    for (int i = 0; i < c->r->n_xfers; i++) {
        const pl_xfer *x = &c->r->xfers[i];
        if (c->io >= 0 && x->to == c->io && c->is_out[x->tensor])
            c->req_end[x->request] = fmax(c->req_end[x->request], x->end_s);
    }
    for (int r = 0; r < c->K; r++)
        last = fmax(last, c->req_end[r]);
    if (!chk_eq(last, c->r->makespan_s))
        return chk_fail(c,
                        "the makespan is %.9g s, but the last op or output return ends at %.9g s",
                        c->r->makespan_s, last);
    return 0;
}

/* pl_sim_check, and with steps set the memory curve of a run that passes it. */
static int check_run(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o,
                     const pl_sim_result *r, char *why, size_t n, pl_mem_step **steps, int *n_steps)
{
    static const pl_sim_opts dflt = {0};
    chk c = {.k = k,
             .p = p,
             .o = o ? o : &dflt,
             .r = r,
             .g = k->g,
             .n = k->n_ops,
             .D = k->n_devs,
             .why = why,
             .why_n = n};
    c.K = c.o->requests > 1 ? c.o->requests : 1;
    c.io = k->c->io_device >= 0 && k->c->io_device < c.D ? k->c->io_device : -1;
    if (!r->op_start_s || !r->op_end_s)
        return chk_fail(&c, "the result has no recorded times (simulate with opts.record)");
    if (p->n_ops != c.n || p->n_devs != c.D)
        return chk_fail(&c, "the plan does not match the model and cluster");
    if (r->requests > 0 && r->requests != c.K)
        return chk_fail(&c, "the result is for %d requests, the options say %d", r->requests, c.K);
    pl_err coloc = {""};
    if (pl_plan_check_coloc(c.g, k->c, p->dev, "plan", &coloc) < 0)
        return chk_fail(&c, "%s", coloc.msg);
    index_xfers(&c);
    c.is_out = pl_calloc(c.g->n_tensors + 1, 1);
    for (int i = 0; i < c.g->n_outputs; i++)
        c.is_out[c.g->outputs[i]] = 1;
    size_t nspan = (size_t)c.n * c.K + r->n_xfers + 1;
    span *v = pl_malloc(nspan * sizeof *v);
    c.req_end = pl_calloc(c.K + 1, sizeof *c.req_end);
    c.stage = pl_malloc((c.n + 1) * sizeof *c.stage);
    pl_sim_stage_s(k, p, c.stage);
    c.dom = pl_malloc((c.D + 1) * sizeof *c.dom);
    c.n_dom = pl_cluster_mem_domains(k->c, c.dom);
    int rc = check_xfers(&c);
    if (rc == 0) rc = check_ops(&c);
    if (rc == 0) rc = check_devices(&c, v);
    if (rc == 0 && c.n_dom) rc = chk_share(&c);
    if (rc == 0) rc = check_links(&c, v);
    if (rc == 0) rc = check_order(&c);
    if (rc == 0) rc = chk_xorder(&c);
    if (rc == 0) rc = check_returns(&c);
    if (rc == 0) rc = check_makespan(&c);
    if (rc == 0) rc = chk_memory(&c);
    if (rc == 0 && why && n) snprintf(why, n, "ok");
    if (rc == 0 && steps) chk_memory_curve(&c, steps, n_steps);
    free(v), free(c.xs), free(c.req_end), free(c.is_out), free(c.stage), free(c.dom);
    return rc;
}

int pl_sim_check(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o, const pl_sim_result *r,
                 char *why, size_t n)
{
    return check_run(k, p, o, r, why, n, NULL, NULL);
}

int pl_sim_memory_curve(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o,
                        const pl_sim_result *r, pl_mem_step **steps, int *n_steps, pl_err *err)
{
    char why[512] = "";
    *steps = NULL, *n_steps = 0;
    if (check_run(k, p, o, r, why, sizeof why, steps, n_steps) < 0)
        return pl_err_set(err, "no memory curve: the run fails its check: %s", why);
    return 0;
}
