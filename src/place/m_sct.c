/* m_sct.c: m-SCT, memory-constrained Small Communication Time placement (Baechi, Jeon et al.,
 * SoCC 2020, after Hanen & Munier's SCT).
 *
 * Two steps. (1) lp_sct.c solves the SCT linear relaxation and rounds it into "favourite
 * children": for each op at most one child that should run right after it on the same device.
 * (2) A list scheduler in the ETF style places and orders ops, modelling what the simulator
 * will do: one op at a time per device, a tensor sent once per (tensor, destination) and
 * transfers competing for ports under the plan's contention model. On top of ETF, a device
 * whose last op's favourite child is ready, and for which this device is (one of) the
 * earliest places to start it, waits for that child and runs meanwhile only "urgent" ops,
 * ones whose inputs have reached every device (Baechi's SCTDevice AWAKE state). Memory is
 * checked as place.h describes it; an op goes only where it fits.
 *
 * The plan gets the schedule as its per-device order. docs/placement-lp.md gives the choices
 * made where Baechi's paper and code are silent or disagree. */
#include "algos.h"
#include "lp_common.h"
#include "lp_sct.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stale urgency keys refreshed per search for an urgent op (see top_urgent). */
#define URGENT_REFRESH 32

typedef struct undo {
    double *at, old;
} undo;

typedef struct sct {
    const pl_cost *k;
    const pl_graph *g;
    int n, D;
    pl_contention cont;
    const int *fav;
    double *rank; /* upward rank: breaks ties between equal start times */
    int *dev, *last, *left, *seq, n_seq;
    double *end_s, *avail_s;
    double *send_free, *recv_free, *chan_free; /* PORTS: per device; PAIR: [a * D + b] */
    double *arr;                               /* [tensor * D + dev]: arrival, < 0: absent */
    int *cand, n_cand, *cand_pos;
    /* Lazy heaps (entries are re-checked when they reach the top; placed ops are dropped
     * there): per device, candidates whose inputs are not there before the device is free,
     * by data-ready time, and those that could start as soon as it is free, by rank; and one
     * heap of all candidates by a lower bound of their urgency. */
    pl_heap *pend, *free_h, urg;
    pl_heap_item *aside;
    int cap_aside;
    double *ready_s; /* [op * D + dev]: cached data-ready time */
    int *ready_ep;   /* epoch of the cached value; -1: none */
    int *col_ep;     /* per device: bumped when transfers change what ops there can see */
    int *fit_ver;    /* [op * D + dev]: mem_ver + 1 when known to fit; -1 never fits */
    int *mem_ver;
    pk_mem_track mem;
    undo *log;
    int n_log;
    int *rem_t, *rem_src; /* scratch: remote inputs of one op */
    double *rem_at;
} sct;

/* ---- transfers ---- */

static void set(sct *S, double *at, double v)
{
    S->log[S->n_log++] = (undo){at, *at};
    *at = v;
}

/* When a transfer src → d that may leave at `t` starts, under the contention model. */
static double xfer_start(const sct *S, int src, int d, double t)
{
    if (S->cont == PL_CONTENTION_PORTS) return fmax(t, fmax(S->send_free[src], S->recv_free[d]));
    if (S->cont == PL_CONTENTION_PAIR) return fmax(t, S->chan_free[(size_t)src * S->D + d]);
    return t;
}

static void xfer_hold(sct *S, int src, int d, double until)
{
    if (S->cont == PL_CONTENTION_PORTS) {
        set(S, &S->send_free[src], until);
        set(S, &S->recv_free[d], until);
    } else if (S->cont == PL_CONTENTION_PAIR) {
        set(S, &S->chan_free[(size_t)src * S->D + d], until);
    }
}

/* Where and when an input tensor is: device and time, or -1 when it is everywhere at 0
 * (weights, and graph inputs unless the cluster names an I/O device). */
static int tensor_source(const sct *S, int t, double *at)
{
    const pl_tensor *x = &S->g->tensors[t];
    *at = 0;
    if (x->flags & PL_TENSOR_WEIGHT) return -1; /* a Constant's value too: never sent */
    if (x->producer >= 0) {
        *at = S->end_s[x->producer];
        return S->dev[x->producer];
    }
    if ((x->flags & PL_TENSOR_INPUT) && S->k->c->io_device >= 0) return S->k->c->io_device;
    return -1;
}

static bool listed_before(const pl_op *o, int i)
{
    for (int j = 0; j < i; j++)
        if (o->inputs[j] == o->inputs[i]) return true;
    return false;
}

/* Collects inputs that must travel to d, sorted by when they can leave (ports serve them
 * first come, first served); returns the time the local ones are there. */
static double gather_inputs(sct *S, int op, int d, int *n_rem)
{
    const pl_op *o = &S->g->ops[op];
    double t = 0;
    int n = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        int x = o->inputs[i];
        double at;
        if (x < 0 || listed_before(o, i)) continue;
        int src = tensor_source(S, x, &at);
        double have = S->arr[(size_t)x * S->D + d];
        if (src < 0 || src == d) {
            t = fmax(t, at);
        } else if (have >= 0) {
            t = fmax(t, have);
        } else {
            int j = n++;
            for (; j > 0 && S->rem_at[j - 1] > at; j--)
                S->rem_t[j] = S->rem_t[j - 1], S->rem_src[j] = S->rem_src[j - 1],
                S->rem_at[j] = S->rem_at[j - 1];
            S->rem_t[j] = x, S->rem_src[j] = src, S->rem_at[j] = at;
        }
    }
    *n_rem = n;
    return t;
}

/* Time op's inputs are all on d, scheduling the missing transfers. With commit false the
 * state is restored, so this is the dry run the scheduler compares devices with. */
static double data_ready(sct *S, int op, int d, bool commit, int *n_xfers)
{
    int n;
    double t = gather_inputs(S, op, d, &n);
    S->n_log = 0;
    for (int r = 0; r < n; r++) {
        int src = S->rem_src[r], x = S->rem_t[r];
        double start = xfer_start(S, src, d, S->rem_at[r]);
        double fin = start + pl_cost_xfer_s(S->k, x, src, d);
        xfer_hold(S, src, d, fin);
        set(S, &S->arr[(size_t)x * S->D + d], fin);
        t = fmax(t, fin);
    }
    if (!commit)
        while (S->n_log > 0)
            S->n_log--, *S->log[S->n_log].at = S->log[S->n_log].old;
    if (n_xfers) *n_xfers = n;
    return t;
}

/* ---- candidates and their cached figures ---- */

static double ready_on(sct *S, int op, int d)
{
    size_t i = (size_t)op * S->D + d;
    if (S->ready_ep[i] != S->col_ep[d]) {
        S->ready_s[i] = data_ready(S, op, d, false, NULL);
        S->ready_ep[i] = S->col_ep[d];
    }
    return S->ready_s[i];
}

static bool fits(sct *S, int op, int d)
{
    size_t i = (size_t)op * S->D + d;
    if (S->fit_ver[i] < 0) return false;
    if (S->fit_ver[i] == S->mem_ver[d] + 1) return true;
    bool ok = isfinite(pl_cost_op_s(S->k, op, d)) && pk_mem_fits(&S->mem, op, d);
    S->fit_ver[i] = ok ? S->mem_ver[d] + 1 : -1; /* memory only grows: "no" is final */
    return ok;
}

static double start_on(sct *S, int op, int d)
{
    return fmax(ready_on(S, op, d), S->avail_s[d]);
}

/* Hanen & Munier's urgency: the time the op's inputs have reached every device it fits. */
static double urgent_at(sct *S, int op)
{
    double u = -INFINITY;
    for (int d = 0; d < S->D; d++)
        if (fits(S, op, d)) u = fmax(u, ready_on(S, op, d));
    return u;
}

static pl_heap_item entry(const sct *S, double key, int op)
{
    return (pl_heap_item){key, -S->rank[op], S->g->topo_pos[op], op};
}

static void add_cand(sct *S, int op)
{
    S->cand_pos[op] = S->n_cand;
    S->cand[S->n_cand++] = op;
    for (int d = 0; d < S->D; d++)
        S->ready_ep[(size_t)op * S->D + d] = -1;
    for (int d = 0; d < S->D; d++)
        if (fits(S, op, d)) pl_heap_push(&S->pend[d], entry(S, ready_on(S, op, d), op));
    pl_heap_push(&S->urg, entry(S, urgent_at(S, op), op));
}

static void drop_cand(sct *S, int op)
{
    int p = S->cand_pos[op], last = S->cand[--S->n_cand];
    S->cand[p] = last, S->cand_pos[last] = p, S->cand_pos[op] = -1;
}

/* The pending op of d with the earliest data-ready time, after moving to d's free heap those
 * whose inputs are there by the time d is free; -1 if none. A key is re-checked at the top:
 * data-ready times only grow as transfers take the ports, so a key still right there is the
 * minimum. */
static int top_pending(sct *S, int d)
{
    const pl_heap_item *e;
    while ((e = pl_heap_top(&S->pend[d]))) {
        int c = e->id;
        if (S->cand_pos[c] < 0 || !fits(S, c, d)) {
            pl_heap_pop(&S->pend[d]);
            continue;
        }
        double r = ready_on(S, c, d);
        if (r <= S->avail_s[d]) { /* starts when d is free: ranked by rank alone */
            pl_heap_pop(&S->pend[d]);
            pl_heap_push(&S->free_h[d], entry(S, 0, c));
            continue;
        }
        if (r != e->a) {
            pl_heap_pop(&S->pend[d]);
            pl_heap_push(&S->pend[d], entry(S, r, c));
            continue;
        }
        return c;
    }
    return -1;
}

/* The op of largest rank that can start on d as soon as it is free; -1 if none. */
static int top_free(sct *S, int d)
{
    const pl_heap_item *e;
    while ((e = pl_heap_top(&S->free_h[d]))) {
        int c = e->id;
        if (S->cand_pos[c] < 0 || !fits(S, c, d)) {
            pl_heap_pop(&S->free_h[d]);
            continue;
        }
        double r = ready_on(S, c, d);
        if (r > S->avail_s[d]) { /* a transfer it needs was pushed back */
            pl_heap_pop(&S->free_h[d]);
            pl_heap_push(&S->pend[d], entry(S, r, c));
            continue;
        }
        return c;
    }
    return -1;
}

/* Whether op's inputs reach every device it fits on by `limit`; *at gets the latest of the
 * times looked at, which is op's urgency when true and a lower bound of it when false (the
 * check stops at the first device too late). */
static bool urgent_by(sct *S, int op, double limit, double *at)
{
    *at = -INFINITY;
    for (int d = 0; d < S->D; d++) {
        if (!fits(S, op, d)) continue;
        *at = fmax(*at, ready_on(S, op, d));
        if (*at > limit) return false;
    }
    return true;
}

/* A candidate other than `skip` that fits on d and is urgent by `limit`, the earliest by the
 * heap's keys (lower bounds of urgency, refreshed when they reach the top); -1 if none.
 * Urgency grows for most candidates whenever transfers take the ports, so at most
 * URGENT_REFRESH keys are refreshed per call: refreshing them all at every step made the
 * scheduler quadratic on wide graphs (3 million refreshes for 15,000 ops). Entries that do
 * not qualify for d are set aside and put back. */
static int top_urgent(sct *S, int skip, int d, double limit)
{
    const pl_heap_item *e;
    int n_aside = 0, found = -1, refreshed = 0;
    while ((e = pl_heap_top(&S->urg)) && e->a <= limit) {
        pl_heap_item x = *e;
        int c = x.id;
        pl_heap_pop(&S->urg);
        if (S->cand_pos[c] < 0) continue;
        bool ok = c != skip && fits(S, c, d);
        if (ok) {
            ok = urgent_by(S, c, limit, &x.a);
            if (!ok) {
                pl_heap_push(&S->urg, x);
                if (++refreshed == URGENT_REFRESH) break;
                continue;
            }
        }
        pl_grow((void **)&S->aside, &S->cap_aside, n_aside, sizeof *S->aside);
        S->aside[n_aside++] = x;
        if (ok) {
            found = c;
            break;
        }
    }
    while (n_aside > 0)
        pl_heap_push(&S->urg, S->aside[--n_aside]);
    return found;
}

/* ---- choosing ---- */

typedef struct pick {
    int op, dev;
    double start;
} pick;

/* Earlier start wins; ties go to the larger upward rank, as in this project's m-etf (Baechi's
 * code uses the topological index), then to the earlier op in topological order; the same op
 * on two devices goes where it finishes first (all devices are free at t = 0: the fastest must
 * win, not the first listed). */
static bool better(const sct *S, pick a, pick b)
{
    if (b.op < 0) return a.op >= 0;
    if (a.op < 0) return false;
    if (a.start != b.start) return a.start < b.start;
    if (S->rank[a.op] != S->rank[b.op]) return S->rank[a.op] > S->rank[b.op];
    if (a.op != b.op) return S->g->topo_pos[a.op] < S->g->topo_pos[b.op];
    return a.start + pl_cost_op_s(S->k, a.op, a.dev) < b.start + pl_cost_op_s(S->k, b.op, b.dev);
}

/* The favourite child this device waits for, or -1: the child of its last op, ready, fitting
 * here and starting here no later than anywhere else. */
static int awaited_child(sct *S, int d)
{
    int i = S->last[d], j = i >= 0 ? S->fav[i] : -1;
    if (j < 0 || S->cand_pos[j] < 0 || !fits(S, j, d)) return -1;
    double here = start_on(S, j, d);
    for (int e = 0; e < S->D; e++)
        if (e != d && fits(S, j, e) && start_on(S, j, e) < here) return -1;
    return j;
}

/* ETF on one device: the op that can start earliest there, ties to the larger rank. */
static pick propose_etf(sct *S, int d)
{
    pick none = {-1, d, INFINITY};
    for (;;) {
        top_pending(S, d);
        int f = top_free(S, d);
        if (f >= 0) return (pick){f, d, S->avail_s[d]};
        int p = top_pending(S, d);
        if (p < 0) return none;
        if (S->free_h[d].n == 0) return (pick){p, d, ready_on(S, p, d)};
    }
}

/* A waiting device runs an urgent op if one can start before the favourite child. */
static pick propose_awake(sct *S, int d, int j)
{
    pick fc = {j, d, start_on(S, j, d)};
    int u = top_urgent(S, j, d, fc.start);
    if (u < 0) return fc;
    return (pick){u, d, fmax(urgent_at(S, u), S->avail_s[d])};
}

static pick choose(sct *S)
{
    pick best = {-1, -1, INFINITY};
    for (int d = 0; d < S->D; d++) {
        int j = awaited_child(S, d);
        pick p = j >= 0 ? propose_awake(S, d, j) : propose_etf(S, d);
        if (better(S, p, best)) best = p;
    }
    return best;
}

static void commit(sct *S, pick p)
{
    int c = p.op, d = p.dev, n_x = 0;
    double start = fmax(data_ready(S, c, d, true, &n_x), S->avail_s[d]);
    S->dev[c] = d;
    S->end_s[c] = S->avail_s[d] = start + pl_cost_op_s(S->k, c, d);
    S->last[d] = c;
    S->seq[S->n_seq++] = c;
    pk_mem_add(&S->mem, c, d);
    S->mem_ver[d]++;
    if (n_x > 0) { /* ports: a send port is shared by every destination */
        for (int e = 0; e < S->D; e++)
            if (S->cont == PL_CONTENTION_PORTS || e == d) S->col_ep[e]++;
    }
    drop_cand(S, c);
    for (int q = S->g->succ_off[c]; q < S->g->succ_off[c + 1]; q++) {
        int v = S->g->succ[q];
        if (--S->left[v] == 0) add_cand(S, v);
    }
}

/* ---- set-up ---- */

static void sct_init(sct *S, const pl_cost *k, pl_contention cont, const int *fav)
{
    memset(S, 0, sizeof *S);
    S->k = k, S->g = k->g, S->n = k->n_ops, S->D = k->n_devs, S->cont = cont, S->fav = fav;
    size_t n = S->n ? S->n : 1, D = S->D, nd = n * D;
    int max_in = 1;
    for (int i = 0; i < S->n; i++)
        if (S->g->ops[i].n_inputs > max_in) max_in = S->g->ops[i].n_inputs;
    S->dev = pl_malloc(n * sizeof *S->dev), S->last = pl_malloc(D * sizeof *S->last);
    S->left = pl_malloc(n * sizeof *S->left), S->seq = pl_malloc(n * sizeof *S->seq);
    S->end_s = pl_calloc(n, sizeof *S->end_s), S->avail_s = pl_calloc(D, sizeof *S->avail_s);
    S->send_free = pl_calloc(D, sizeof(double)), S->recv_free = pl_calloc(D, sizeof(double));
    S->chan_free = pl_calloc(D * D, sizeof(double));
    size_t na = (size_t)(S->g->n_tensors ? S->g->n_tensors : 1) * D;
    S->arr = pl_malloc(na * sizeof *S->arr);
    for (size_t i = 0; i < na; i++)
        S->arr[i] = -1;
    S->cand = pl_malloc(n * sizeof *S->cand), S->cand_pos = pl_malloc(n * sizeof(int));
    S->ready_s = pl_malloc(nd * sizeof(double)), S->ready_ep = pl_malloc(nd * sizeof(int));
    S->col_ep = pl_calloc(D, sizeof(int)), S->fit_ver = pl_calloc(nd, sizeof(int));
    S->mem_ver = pl_calloc(D, sizeof(int));
    S->log = pl_malloc((3 * (size_t)max_in + 1) * sizeof *S->log);
    S->rem_t = pl_malloc(max_in * sizeof(int)), S->rem_src = pl_malloc(max_in * sizeof(int));
    S->rem_at = pl_malloc(max_in * sizeof(double));
    pk_mem_init(&S->mem, k);
    S->pend = pl_calloc(D, sizeof *S->pend), S->free_h = pl_calloc(D, sizeof *S->free_h);
    S->rank = pl_malloc(n * sizeof *S->rank);
    pk_upward_rank(k, S->rank);
    for (size_t d = 0; d < D; d++)
        S->last[d] = -1;
    for (int i = 0; i < S->n; i++) {
        S->dev[i] = -1, S->cand_pos[i] = -1;
        S->left[i] = S->g->pred_off[i + 1] - S->g->pred_off[i];
    }
    for (int t = 0; t < S->n; t++)
        if (S->left[S->g->topo[t]] == 0) add_cand(S, S->g->topo[t]);
}

static void sct_free(sct *S)
{
    free(S->dev), free(S->last), free(S->left), free(S->seq), free(S->end_s), free(S->avail_s);
    free(S->send_free), free(S->recv_free), free(S->chan_free), free(S->arr);
    free(S->cand), free(S->cand_pos), free(S->ready_s), free(S->ready_ep), free(S->col_ep);
    free(S->fit_ver), free(S->mem_ver), free(S->log), free(S->rem_t), free(S->rem_src);
    free(S->rem_at), free(S->rank), free(S->aside);
    for (int d = 0; d < S->D; d++)
        pl_heap_free(&S->pend[d]), pl_heap_free(&S->free_h[d]);
    free(S->pend), free(S->free_h), pl_heap_free(&S->urg);
    pk_mem_free(&S->mem);
}

static int schedule(sct *S, pl_err *err)
{
    while (S->n_seq < S->n) {
        pick p = choose(S);
        if (p.op < 0) /* no candidate fits anywhere: name the first one */
            return pk_no_room(S->k, &S->mem, "m-sct", S->cand[0], err);
        commit(S, p);
    }
    return 0;
}

/* Says on success which path the favourites came from when it was not the LP. */
static void report_path(const lp_sct_info *info, double limit_s, pl_err *err)
{
    if (info->status == LP_SCT_TOO_BIG)
        lp_warn(err,
                "m-sct: warning: LP skipped (%d chains of ops > %d): favourite children by "
                "greedy heaviest-communication matching",
                info->n_chains, LP_SCT_MAX_NODES);
    else if (info->status == LP_SCT_TIME_LIMIT)
        lp_warn(err,
                "m-sct: warning: LP not solved within %g s (%d chains, %d edges): favourite "
                "children by greedy heaviest-communication matching",
                limit_s, info->n_chains, info->n_lp_edges);
    else if (info->status == LP_SCT_CRASHED)
        lp_warn(err,
                "m-sct: warning: the LP solver %s: favourite children by greedy "
                "heaviest-communication matching",
                info->why);
    else if (info->status == LP_SCT_FAILED)
        lp_warn(err, "m-sct: warning: the LP solver gave up: favourite children by greedy "
                     "heaviest-communication matching");
}

int pl_place_m_sct(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    double limit = o && o->time_limit_s > 0 ? o->time_limit_s : LP_SCT_DEFAULT_TIME_S;
    pl_contention cont = o ? o->contention : PL_CONTENTION_PORTS;
    int *fav = pl_malloc((k->n_ops ? k->n_ops : 1) * sizeof *fav);
    lp_sct_info info;
    if (lp_sct_favorites(k, limit, 0, fav, &info, err) < 0) {
        free(fav);
        return -1;
    }
    sct S;
    sct_init(&S, k, cont, fav);
    int rc = schedule(&S, err);
    if (rc == 0) {
        memcpy(out->dev, S.dev, k->n_ops * sizeof *out->dev);
        pl_plan_set_order(out, S.seq);
        out->contention = cont;
        snprintf(out->algo, sizeof out->algo, "m-sct");
        rc = lp_check_memory(k, out->dev, "m-sct", err);
    }
    if (rc == 0) report_path(&info, limit, err);
    sct_free(&S), free(fav);
    return rc;
}
