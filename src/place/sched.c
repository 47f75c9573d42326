/* sched.c: the list-scheduling state shared by m-ETF, GETF and HEFT: when can an op start on a
 * device, given where its predecessors ran and what their outputs cost to move. Transfers are
 * modelled as the simulator runs them (design.md §4): one per (tensor, destination device),
 * latency + bytes / bandwidth of the route, holding the sender's send port and the receiver's
 * receive port (PORTS) or the pair's channel (PAIR) for their whole duration. */
#include "sched.h"

#include <math.h>
#include <string.h>

/* ---- (tensor, device) → arrival time: open addressing, linear probing ---- */

struct pk_xfer_map {
    int64_t *keys; /* -1 = empty */
    double *vals;
    size_t cap, n;
};

static pk_xfer_map *pk_xmap_new(void)
{
    pk_xfer_map *m = pl_calloc(1, sizeof *m);
    m->cap = 1024;
    m->keys = pl_malloc(m->cap * sizeof *m->keys);
    m->vals = pl_malloc(m->cap * sizeof *m->vals);
    memset(m->keys, 0xff, m->cap * sizeof *m->keys);
    return m;
}

static void pk_xmap_free(pk_xfer_map *m)
{
    if (m) free(m->keys), free(m->vals), free(m);
}

static size_t pk_xmap_slot(const pk_xfer_map *m, int64_t key)
{
    size_t i = (size_t)((uint64_t)key * 0x9e3779b97f4a7c15ull >> 20) & (m->cap - 1);
    while (m->keys[i] != -1 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static bool pk_xmap_get(const pk_xfer_map *m, int64_t key, double *val)
{
    size_t i = pk_xmap_slot(m, key);
    if (m->keys[i] == -1) return false;
    *val = m->vals[i];
    return true;
}

static void pk_xmap_put(pk_xfer_map *m, int64_t key, double val);

static void pk_xmap_grow(pk_xfer_map *m)
{
    pk_xfer_map old = *m;
    m->cap *= 2, m->n = 0;
    m->keys = pl_malloc(m->cap * sizeof *m->keys);
    m->vals = pl_malloc(m->cap * sizeof *m->vals);
    memset(m->keys, 0xff, m->cap * sizeof *m->keys);
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i] != -1) pk_xmap_put(m, old.keys[i], old.vals[i]);
    free(old.keys), free(old.vals);
}

static void pk_xmap_put(pk_xfer_map *m, int64_t key, double val)
{
    if (2 * (m->n + 1) > m->cap) pk_xmap_grow(m);
    size_t i = pk_xmap_slot(m, key);
    if (m->keys[i] == -1) m->keys[i] = key, m->n++;
    m->vals[i] = val;
}

/* ---- state ---- */

void pk_sched_init(pk_sched *s, const pl_cost *k, pl_contention cont)
{
    memset(s, 0, sizeof *s);
    s->k = k, s->g = k->g, s->n = k->n_ops, s->nd = k->n_devs, s->cont = cont;
    size_t n = s->n + 1, nd = s->nd + 1;
    s->dev = pl_malloc(n * sizeof *s->dev);
    for (int v = 0; v < s->n; v++)
        s->dev[v] = -1;
    s->start = pl_calloc(n, sizeof *s->start);
    s->finish = pl_calloc(n, sizeof *s->finish);
    s->avail = pl_calloc(nd, sizeof *s->avail);
    s->send_free = pl_calloc(nd, sizeof *s->send_free);
    s->recv_free = pl_calloc(nd, sizeof *s->recv_free);
    s->pair_free = pl_calloc(nd * nd, sizeof *s->pair_free);
    s->arrivals = pk_xmap_new();
    pk_mem_init(&s->mem, k);
    s->seq = pl_malloc(n * sizeof *s->seq);
}

void pk_sched_free(pk_sched *s)
{
    free(s->dev), free(s->start), free(s->finish), free(s->avail);
    free(s->send_free), free(s->recv_free), free(s->pair_free), free(s->seq);
    pk_xmap_free(s->arrivals);
    pk_mem_free(&s->mem);
    memset(s, 0, sizeof *s);
}

/* A transfer the op needs, and the ports it holds. While planning one op's transfers, the
 * ports they take are kept in an overlay so that its own transfers queue behind each other
 * without touching the shared state (a query must not change anything). */
typedef struct xrec {
    int tensor, from;
    double start, end;
} xrec;

typedef struct overlay {
    int idx[2 * 64];
    double t[2 * 64];
    int n;
} overlay;

static double *port_slot(pk_sched *s, int idx)
{
    int nd = s->nd;
    return idx < nd       ? &s->send_free[idx]
           : idx < 2 * nd ? &s->recv_free[idx - nd]
                          : &s->pair_free[idx - 2 * nd];
}

static double port_get(const pk_sched *s, const overlay *o, int idx)
{
    for (int i = o->n - 1; i >= 0; i--)
        if (o->idx[i] == idx) return o->t[i];
    return *port_slot((pk_sched *)s, idx);
}

static void port_set(overlay *o, int idx, double t)
{
    for (int i = 0; i < o->n; i++)
        if (o->idx[i] == idx) {
            o->t[i] = t;
            return;
        }
    if (o->n < 2 * 64) o->idx[o->n] = idx, o->t[o->n++] = t;
    /* past 128 ports an op's own transfers stop queueing on each other: an estimate only */
}

/* Start of a transfer a → b whose data is ready at `ready`, under the contention in force. */
static double xfer_start(const pk_sched *s, overlay *o, int a, int b, double ready, double dur)
{
    if (s->cont == PL_CONTENTION_NONE) return ready;
    if (s->cont == PL_CONTENTION_PAIR) {
        int p = 2 * s->nd + a * s->nd + b;
        double st = fmax(ready, port_get(s, o, p));
        port_set(o, p, st + dur);
        return st;
    }
    double st = fmax(ready, fmax(port_get(s, o, a), port_get(s, o, s->nd + b)));
    port_set(o, a, st + dur), port_set(o, s->nd + b, st + dur);
    return st;
}

static bool input_seen_before(const pl_op *o, int i)
{
    for (int j = 0; j < i; j++)
        if (o->inputs[j] == o->inputs[i]) return true;
    return false;
}

/* Where and when tensor t (an input of an op) is available before any transfer: *from is -1
 * when it is already present on every device (graph inputs without an I/O device). */
static double source_of(const pk_sched *s, int t, int *from)
{
    int p = s->g->tensors[t].producer;
    if (p >= 0) return *from = s->dev[p], s->finish[p];
    *from = s->k->c->io_device;
    return 0;
}

/* Plans the transfers op v needs on d (appending to recs when not NULL) and returns the time
 * every input is there. Weights are resident, never sent nor waited for (as the simulator has
 * it: a Constant op's value is there from the start). */
static double plan_inputs(const pk_sched *s, int v, int d, xrec *recs, int *n_recs)
{
    const pl_op *o = &s->g->ops[v];
    overlay ov = {.n = 0};
    double ready = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        int t = o->inputs[i], from;
        if (t < 0 || pk_is_weight(s->g, t) || input_seen_before(o, i)) continue;
        double at = source_of(s, t, &from), arr;
        if (from < 0 || from == d) {
            ready = fmax(ready, at);
        } else if (pk_xmap_get(s->arrivals, (int64_t)t * s->nd + d, &arr)) {
            ready = fmax(ready, arr);
        } else {
            double dur = pl_cost_xfer_s(s->k, t, from, d);
            double st = xfer_start(s, &ov, from, d, at, dur);
            ready = fmax(ready, st + dur);
            if (recs) recs[(*n_recs)++] = (xrec){t, from, st, st + dur};
        }
    }
    return ready;
}

#ifdef PL_CHECKS
/* v's predecessors all committed (the contract in sched.h). */
static bool preds_committed(const pk_sched *s, int v)
{
    for (int i = s->g->pred_off[v]; i < s->g->pred_off[v + 1]; i++)
        if (s->dev[s->g->pred[i]] < 0) return false;
    return true;
}
#endif

double pk_sched_ready(const pk_sched *s, int v, int d)
{
    PL_ASSERT(v >= 0 && v < s->n && d >= 0 && d < s->nd && preds_committed(s, v));
    return plan_inputs(s, v, d, NULL, NULL);
}

static void reserve(pk_sched *s, const xrec *r, int d)
{
    pk_xmap_put(s->arrivals, (int64_t)r->tensor * s->nd + d, r->end);
    if (s->cont == PL_CONTENTION_PAIR) {
        double *p = &s->pair_free[r->from * s->nd + d];
        *p = fmax(*p, r->end);
    } else if (s->cont == PL_CONTENTION_PORTS) {
        s->send_free[r->from] = fmax(s->send_free[r->from], r->end);
        s->recv_free[d] = fmax(s->recv_free[d], r->end);
    }
}

void pk_sched_commit(pk_sched *s, int v, int d, double start)
{
    PL_ASSERT(v >= 0 && v < s->n && d >= 0 && d < s->nd && s->dev[v] < 0 && preds_committed(s, v));
    const pl_op *o = &s->g->ops[v];
    xrec stack[32], *recs = o->n_inputs <= 32 ? stack : pl_malloc(o->n_inputs * sizeof *recs);
    int n = 0;
    plan_inputs(s, v, d, recs, &n);
    for (int i = 0; i < n; i++)
        reserve(s, &recs[i], d);
    if (recs != stack) free(recs);
    if (n) s->stamp++;
    s->dev[v] = d;
    s->start[v] = start;
    s->finish[v] = start + pl_cost_op_s(s->k, v, d);
    s->avail[d] = fmax(s->avail[d], s->finish[v]);
    pk_mem_add(&s->mem, v, d);
    s->seq[s->n_seq++] = v;
}

static const pk_sched *sort_ctx;

static int by_start(const void *a, const void *b)
{
    const pk_sched *s = sort_ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (s->start[x] != s->start[y]) return s->start[x] < s->start[y] ? -1 : 1;
    return s->g->topo_pos[x] - s->g->topo_pos[y];
}

void pk_sched_to_plan(const pk_sched *s, pl_plan *out, bool sort)
{
    memcpy(out->dev, s->dev, s->n * sizeof *out->dev);
    int *seq = pl_malloc((s->n + 1) * sizeof *seq);
    memcpy(seq, s->seq, s->n * sizeof *seq);
    if (sort) {
        sort_ctx = s; /* qsort has no context argument in C11 */
        pl_sort(seq, s->n, sizeof *seq, by_start);
    }
    pl_plan_set_order(out, seq);
    free(seq);
}

/* ---- mean times and upward rank ---- */

double pk_op_mean_s(const pl_cost *k, int op)
{
    double sum = 0;
    int n = 0;
    for (int d = 0; d < k->n_devs; d++) {
        double t = pl_cost_op_s(k, op, d);
        if (isfinite(t)) sum += t, n++;
    }
    return n ? sum / n : INFINITY;
}

pk_route pk_mean_route(const pl_cluster *c)
{
    pk_route r = {0, 0};
    int n = c->n_devs, pairs = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b) continue;
            size_t i = (size_t)a * n + b;
            r.lat_s += c->lat_s[i];
            r.inv_bw_s_per_byte += 1 / c->bw_Bps[i];
            pairs++;
        }
    if (pairs) r.lat_s /= pairs, r.inv_bw_s_per_byte /= pairs;
    return r;
}

double pk_mean_xfer_s(const pl_cost *k, pk_route r, int tensor)
{
    if (pk_is_weight(k->g, tensor)) return 0;
    return r.lat_s + pk_tensor_bytes(k->g, tensor) * r.inv_bw_s_per_byte;
}

void pk_upward_rank(const pl_cost *k, double *rank)
{
    const pl_graph *g = k->g;
    pk_route r = pk_mean_route(k->c);
    int *first = pl_malloc((g->n_ops + 1) * sizeof *first); /* edges are sorted by src */
    for (int v = 0, e = 0; v <= g->n_ops; v++) {
        while (e < g->n_edges && g->edges[e].src < v)
            e++;
        first[v] = e;
    }
    for (int i = g->n_ops - 1; i >= 0; i--) {
        int v = g->topo[i];
        double best = 0;
        for (int e = first[v]; e < first[v + 1];) {
            int s = g->edges[e].dst;
            double c = 0; /* every tensor v sends s */
            for (; e < first[v + 1] && g->edges[e].dst == s; e++)
                c += pk_mean_xfer_s(k, r, g->edges[e].tensor);
            best = fmax(best, c + rank[s]);
        }
        double mean = pk_op_mean_s(k, v); /* an op no device runs adds nothing */
        rank[v] = (isfinite(mean) ? mean : 0) + best;
    }
    free(first);
}

/* ---- judging by simulation ---- */

double pk_sim_makespan(const pl_cost *k, const pl_plan *p, const pl_sim_opts *so, bool fail_on_oom)
{
    pl_sim_result r = {0};
    pl_err e = {{0}};
    double ms =
        pl_simulate(k, p, so, &r, &e) == 0 && !(fail_on_oom && r.oom) ? r.makespan_s : INFINITY;
    pl_sim_result_free(&r);
    return ms;
}
