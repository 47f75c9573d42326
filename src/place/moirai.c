/* moirai.c: MOIRAI's MILP (Zhang et al., §III-D), solved by CBC (docs/moirai.md).
 *
 * The augmented DAG has a node per op and per timed edge ("flow"); an edge whose transfer
 * time is 0 for every pair of devices is a plain precedence. Variables: x[i][k] placement,
 * S/C start and end of ops and flows, u[f][a][b] flow f takes channel a -> b, z[f] flow f
 * crosses devices, delta for each pair of ops (and of flows) that reachability leaves
 * unordered, T the makespan. Constraint numbers are the paper's.
 *
 * The MILP charges a flow per edge; the simulator sends once per (tensor, device). They agree
 * when every tensor has one reader, as in MOIRAI's instances (pl_moirai_load). */
#include "placer/dist.h"
#include "algos.h"
#include "moirai_ls.h"
#include "sched.h"

#include <Cbc_C_Interface.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <float.h>
#include <string.h>

#define COIN_DBL_MAX DBL_MAX

typedef struct flow {
    int src, dst, tensor, edge; /* edge: index in g->edges */
} flow;

typedef struct milp {
    const pl_cost *k;
    int n, D, nf;
    flow *f;
    Cbc_Model *m;
    int ncols;
    int x0, s0, c0, fs0, fc0, z0, u0, T; /* first column of each block */
    double M, ub;
    /* No flow is free on some channel: then the simulator (per edge, ports) and the MILP agree
     * on every schedule; a zero-time transfer holds no port in the simulator but would in (8). */
    bool exact;
    /* row builder (merges repeated columns: CBC wants each once) */
    int *rc;
    double *rv;
    int rn;
    int n_bin, n_rows;
    /* The whole matrix, row-major, handed to CBC in one Cbc_loadProblem: adding rows one at
     * a time through the C interface costs time quadratic in the row count. */
    int *r_start, *r_idx, n_nz;
    double *r_val, *r_lb, *r_ub;
    double *c_lb, *c_ub, *c_obj;
    char *c_int;
    /* pl_grow's capacity of each array above: they grow at different indices (r_start has
     * n_rows + 1 entries), and a shared one would let pl_grow skip an array */
    int cap_start, cap_idx, cap_val, cap_lb, cap_ub, cap_clb, cap_cub, cap_obj, cap_int;
} milp;

static int X(const milp *P, int i, int k)
{
    return P->x0 + i * P->D + k;
}
static int U(const milp *P, int f, int a, int b)
{
    return P->u0 + (f * P->D + a) * P->D + b;
}

static void term(milp *P, int col, double v)
{
    for (int i = 0; i < P->rn; i++)
        if (P->rc[i] == col) {
            P->rv[i] += v;
            return;
        }
    P->rc[P->rn] = col, P->rv[P->rn++] = v;
}

static void row(milp *P, char sense, double rhs)
{
    int r = P->n_rows++;
    pl_grow((void **)&P->r_start, &P->cap_start, r + 1, sizeof *P->r_start);
    pl_grow((void **)&P->r_lb, &P->cap_lb, r, sizeof *P->r_lb);
    pl_grow((void **)&P->r_ub, &P->cap_ub, r, sizeof *P->r_ub);
    pl_grow((void **)&P->r_idx, &P->cap_idx, P->n_nz + P->rn, sizeof *P->r_idx);
    pl_grow((void **)&P->r_val, &P->cap_val, P->n_nz + P->rn, sizeof *P->r_val);
    if (r == 0) P->r_start[0] = 0;
    memcpy(P->r_idx + P->n_nz, P->rc, P->rn * sizeof *P->rc);
    memcpy(P->r_val + P->n_nz, P->rv, P->rn * sizeof *P->rv);
    P->n_nz += P->rn, P->r_start[r + 1] = P->n_nz;
    P->r_lb[r] = sense == 'L' ? -COIN_DBL_MAX : rhs;
    P->r_ub[r] = sense == 'G' ? COIN_DBL_MAX : rhs;
    P->rn = 0;
}

static int col(milp *P, double lb, double ub, double obj, bool integer)
{
    int c = P->ncols;
    pl_grow((void **)&P->c_lb, &P->cap_clb, c, sizeof *P->c_lb);
    pl_grow((void **)&P->c_ub, &P->cap_cub, c, sizeof *P->c_ub);
    pl_grow((void **)&P->c_obj, &P->cap_obj, c, sizeof *P->c_obj);
    pl_grow((void **)&P->c_int, &P->cap_int, c, sizeof *P->c_int);
    P->c_lb[c] = lb, P->c_ub[c] = ub, P->c_obj[c] = obj, P->c_int[c] = integer;
    P->n_bin += integer;
    return P->ncols++;
}

/* Row-major to CBC's column-major, one load, then the integer marks. */
static void load(milp *P)
{
    int nc = P->ncols, nz = P->n_nz;
    int *start = pl_calloc(nc + 2, sizeof *start), *idx = pl_malloc((nz + 1) * sizeof *idx);
    double *val = pl_malloc((nz + 1) * sizeof *val);
    for (int e = 0; e < nz; e++)
        start[P->r_idx[e] + 2]++;
    for (int c = 0; c < nc; c++)
        start[c + 2] += start[c + 1];
    for (int r = 0; r < P->n_rows; r++)
        for (int e = P->r_start[r]; e < P->r_start[r + 1]; e++) {
            int at = start[P->r_idx[e] + 1]++;
            idx[at] = r, val[at] = P->r_val[e];
        }
    Cbc_loadProblem(P->m, nc, P->n_rows, start, idx, val, P->c_lb, P->c_ub, P->c_obj, P->r_lb,
                    P->r_ub);
    for (int c = 0; c < nc; c++)
        if (P->c_int[c]) Cbc_setInteger(P->m, c);
    free(start), free(idx), free(val);
}

static void milp_free(milp *P)
{
    free(P->f), free(P->rc), free(P->rv), free(P->r_start), free(P->r_idx), free(P->r_val);
    free(P->r_lb), free(P->r_ub), free(P->c_lb), free(P->c_ub), free(P->c_obj), free(P->c_int);
}

static double pair_s(const milp *P, int f, int a, int b)
{
    return pl_cost_xfer_s(P->k, P->f[f].tensor, a, b);
}

/* Timed edges become flows; an edge that costs nothing on every channel is a precedence. */
static void find_flows(milp *P)
{
    const pl_graph *g = P->k->g;
    P->f = pl_malloc((g->n_edges + 1) * sizeof *P->f);
    for (int e = 0; e < g->n_edges; e++) {
        flow fl = {g->edges[e].src, g->edges[e].dst, g->edges[e].tensor, e};
        bool timed = false;
        for (int a = 0; a < P->D; a++)
            for (int b = 0; b < P->D; b++)
                timed |= pl_cost_xfer_s(P->k, fl.tensor, a, b) > 0;
        if (timed) P->f[P->nf++] = fl;
    }
}

/* Always a valid horizon: run everything one after the other, each op on its slowest
 * feasible device and each flow on its slowest channel. */
static double serial_bound(const milp *P, double *max_xfer)
{
    double h = 0;
    *max_xfer = 0;
    for (int i = 0; i < P->n; i++) {
        double w = 0;
        for (int k = 0; k < P->D; k++)
            if (isfinite(pl_cost_op_s(P->k, i, k))) w = fmax(w, pl_cost_op_s(P->k, i, k));
        h += w;
    }
    for (int f = 0; f < P->nf; f++) {
        double w = 0;
        for (int a = 0; a < P->D; a++)
            for (int b = 0; b < P->D; b++)
                w = fmax(w, pair_s(P, f, a, b));
        h += w, *max_xfer = fmax(*max_xfer, w);
    }
    return h;
}

/* ---- columns ---- */

/* `count` columns in [0, ub] (integer or not, objective 0); the first one's index. */
static int cols(milp *P, int count, double ub, bool integer)
{
    int first = P->ncols;
    for (int c = 0; c < count; c++)
        col(P, 0, ub, 0, integer);
    return first;
}

static void add_cols(milp *P)
{
    int n = P->n, D = P->D, nf = P->nf;
    P->x0 = P->ncols;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < D; k++)
            col(P, 0, isfinite(pl_cost_op_s(P->k, i, k)) ? 1 : 0, 0, true);
    P->s0 = cols(P, n, P->ub, false);
    P->c0 = cols(P, n, P->ub, false);
    P->fs0 = cols(P, nf, P->ub, false);
    P->fc0 = cols(P, nf, P->ub, false);
    P->z0 = cols(P, nf, 1, true);
    P->u0 = P->ncols;
    for (int f = 0; f < nf; f++)
        for (int a = 0; a < D; a++)
            for (int b = 0; b < D; b++)
                col(P, 0, a == b ? 0 : 1, 0, true); /* diagonal: unused, fixed at 0 */
    /* T <= ub: only plans at least as good as the heuristic's matter (see big_m). */
    P->T = col(P, 0, P->ub, 1, false);
}

/* ---- (4), (4a)-(4c), (5), (7) ---- */

static void add_ops(milp *P)
{
    for (int i = 0; i < P->n; i++) {
        for (int k = 0; k < P->D; k++)
            term(P, X(P, i, k), 1);
        row(P, 'E', 1); /* (4c) */
        term(P, P->c0 + i, 1), term(P, P->s0 + i, -1);
        for (int k = 0; k < P->D; k++) {
            double p = pl_cost_op_s(P->k, i, k);
            if (isfinite(p)) term(P, X(P, i, k), -p);
        }
        row(P, 'E', 0); /* (4b) */
        term(P, P->T, 1), term(P, P->c0 + i, -1);
        row(P, 'G', 0); /* (4): T = max C_i */
    }
}

/* (4a) on the augmented DAG's direct edges: the paper lists every successor, but the direct
 * ones imply the rest by transitivity. */
static void add_precedence(milp *P)
{
    const pl_graph *g = P->k->g;
    for (int e = 0, f = 0; e < g->n_edges; e++) {
        const pl_edge *ed = &g->edges[e];
        if (f < P->nf && P->f[f].tensor == ed->tensor && P->f[f].dst == ed->dst) {
            term(P, P->c0 + ed->src, 1), term(P, P->fs0 + f, -1), row(P, 'L', 0);
            term(P, P->fc0 + f, 1), term(P, P->s0 + ed->dst, -1), row(P, 'L', 0);
            f++;
        } else {
            term(P, P->c0 + ed->src, 1), term(P, P->s0 + ed->dst, -1), row(P, 'L', 0);
        }
    }
}

/* (5): static sum per device; a device that holds every op needs no row. */
static void add_memory(milp *P)
{
    double all = 0;
    for (int i = 0; i < P->n; i++)
        all += pl_moirai_op_mem(P->k, i);
    for (int k = 0; k < P->D; k++) {
        if (all <= pk_dev_cap(P->k, k)) continue;
        for (int i = 0; i < P->n; i++)
            if (pl_moirai_op_mem(P->k, i) > 0) term(P, X(P, i, k), pl_moirai_op_mem(P->k, i));
        row(P, 'L', P->k->c->devs[k].memory_bytes);
    }
}

/* (7): u[f][a][b] = x[src][a] * x[dst][b] exactly (three rows), z = sum of u over a != b, and
 * the flow lasts the chosen channel's time. The paper's rows on z alone follow from these. */
static void add_comm(milp *P)
{
    int D = P->D;
    for (int f = 0; f < P->nf; f++) {
        int i = P->f[f].src, j = P->f[f].dst;
        for (int a = 0; a < D; a++)
            for (int b = 0; b < D; b++) {
                if (a == b) continue;
                int u = U(P, f, a, b);
                term(P, u, 1), term(P, X(P, i, a), -1), term(P, X(P, j, b), -1), row(P, 'G', -1);
                term(P, u, 1), term(P, X(P, i, a), -1), row(P, 'L', 0);
                term(P, u, 1), term(P, X(P, j, b), -1), row(P, 'L', 0);
            }
        term(P, P->z0 + f, 1);
        for (int a = 0; a < D; a++)
            for (int b = 0; b < D; b++)
                if (a != b) term(P, U(P, f, a, b), -1);
        row(P, 'E', 0);
        term(P, P->fc0 + f, 1), term(P, P->fs0 + f, -1);
        for (int a = 0; a < D; a++)
            for (int b = 0; b < D; b++)
                if (a != b && pair_s(P, f, a, b) > 0) term(P, U(P, f, a, b), -pair_s(P, f, a, b));
        row(P, 'E', 0);
    }
}

/* ---- (6) and (8): disjunctions, only for pairs reachability leaves unordered ---- */

typedef struct pairs {
    int *a, *b, n, cap_a, cap_b;
} pairs;

static void pairs_add(pairs *p, int a, int b)
{
    pl_grow((void **)&p->a, &p->cap_a, p->n, sizeof *p->a);
    pl_grow((void **)&p->b, &p->cap_b, p->n, sizeof *p->b);
    p->a[p->n] = a, p->b[p->n++] = b;
}

static bool before(const pl_reach *r, int i, int j)
{
    return i == j || pl_reach_query(r, i, j);
}

static void op_pairs(const milp *P, const pl_reach *r, pairs *out)
{
    for (int i = 0; i < P->n; i++)
        for (int j = i + 1; j < P->n; j++)
            if (!pl_reach_query(r, i, j) && !pl_reach_query(r, j, i)) pairs_add(out, i, j);
}

/* Flow q = (a -> b) precedes flow r = (c -> d) in the augmented DAG iff b reaches c (or is c). */
static void flow_pairs(const milp *P, const pl_reach *r, pairs *out)
{
    for (int q = 0; q < P->nf; q++)
        for (int s = q + 1; s < P->nf; s++)
            if (!before(r, P->f[q].dst, P->f[s].src) && !before(r, P->f[s].dst, P->f[q].src))
                pairs_add(out, q, s);
}

/* (6): S_i >= C_j - M delta - M (2 - x_ik - x_jk), S_j >= C_i - M (1 - delta) - M (2 - ...):
 * delta = 1 runs i first. */
static void add_nonoverlap(milp *P, const pairs *pp, int d0)
{
    double M = P->M;
    for (int p = 0; p < pp->n; p++) {
        int i = pp->a[p], j = pp->b[p], dl = d0 + p;
        for (int k = 0; k < P->D; k++) {
            term(P, P->s0 + i, 1), term(P, P->c0 + j, -1), term(P, dl, M);
            term(P, X(P, i, k), -M), term(P, X(P, j, k), -M);
            row(P, 'G', -2 * M);
            term(P, P->s0 + j, 1), term(P, P->c0 + i, -1), term(P, dl, -M);
            term(P, X(P, i, k), -M), term(P, X(P, j, k), -M);
            row(P, 'G', -3 * M);
        }
    }
}

/* One side of (8) for device k: `sgn` +1 when both flows leave k (x_ak + x_ck - x_bk - x_dk
 * - 2 = 0 exactly then), -1 when both enter it. delta = 1 sends q first. */
static void congestion_rows(milp *P, int q, int r, int dl, int k, int sgn)
{
    double M = P->M;
    const flow *fq = &P->f[q], *fr = &P->f[r];
    for (int first = 0; first < 2; first++) {
        int later = first ? r : q, earlier = first ? q : r; /* row says S_later >= C_earlier */
        term(P, P->fs0 + later, 1), term(P, P->fc0 + earlier, -1);
        term(P, dl, first ? -M : M);
        term(P, P->z0 + q, -M), term(P, P->z0 + r, -M);
        term(P, X(P, fq->src, k), -sgn * M), term(P, X(P, fr->src, k), -sgn * M);
        term(P, X(P, fq->dst, k), sgn * M), term(P, X(P, fr->dst, k), sgn * M);
        row(P, 'G', first ? -5 * M : -4 * M);
    }
}

static void add_congestion(milp *P, const pairs *fp, int d0)
{
    for (int p = 0; p < fp->n; p++)
        for (int k = 0; k < P->D; k++) {
            congestion_rows(P, fp->a[p], fp->b[p], d0 + p, k, +1);
            congestion_rows(P, fp->a[p], fp->b[p], d0 + p, k, -1);
        }
}

/* ---- the warm start: the best heuristic plan, simulated ---- */

typedef struct start {
    const char *name; /* the heuristic that made it */
    pl_plan *plan;
    pl_sim_result res;
    double makespan;
} start;

static bool memory_ok(const pl_cost *k, const int *dev)
{
    double *used = pl_malloc((k->n_devs + 1) * sizeof *used);
    pl_moirai_used(k, dev, used);
    bool ok = true;
    for (int d = 0; d < k->n_devs && ok; d++)
        ok = used[d] <= pk_dev_cap(k, d);
    free(used);
    return ok;
}

/* The MILP's world: ports contention, one transfer per edge (flows), memory as (5) alone. */
static const pl_sim_opts MILP_SIM = {
    .contention = PL_CONTENTION_PORTS, .per_edge = true, .ignore_memory = true};

/* HEFT and GETF under PORTS; the best simulated plan that also meets (5). Their coarser cuts
 * stop at the deadline: the warm start is for a search that must end there. */
static void best_heuristic(const pl_cost *k, double deadline, start *w)
{
    const char *names[] = {"heft", "getf"};
    pl_place_opts o = {.contention = PL_CONTENTION_PORTS};
    pl_sim_opts so = MILP_SIM;
    so.record = true;
    w->plan = NULL, w->name = NULL, w->makespan = INFINITY;
    for (int a = 0; a < 2; a++) {
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_sim_result r = {0};
        pl_err e = {{0}};
        if (pk_place_until(pl_algo_find(names[a]), k, &o, deadline, p, &e) == 0 &&
            pl_simulate(k, p, &so, &r, &e) == 0 && memory_ok(k, p->dev) &&
            r.makespan_s < w->makespan) {
            if (w->plan) pl_plan_free(w->plan), pl_sim_result_free(&w->res);
            w->plan = p, w->res = r, w->makespan = r.makespan_s, w->name = names[a];
            continue;
        }
        pl_plan_free(p), pl_sim_result_free(&r);
    }
}

/* The recorded transfer of `tensor` to `reader` on device `to`, or -1. */
static int find_xfer(const pl_sim_result *r, int tensor, int to, int reader)
{
    for (int x = 0; x < r->n_xfers; x++)
        if (r->xfers[x].tensor == tensor && r->xfers[x].to == to &&
            (r->xfers[x].reader < 0 || r->xfers[x].reader == reader))
            return x;
    return -1;
}

/* The flows' columns in the warm start: times of the recorded transfers, channel, z. */
static void start_flows(const milp *P, const start *w, double *v)
{
    const int *dev = w->plan->dev;
    for (int f = 0; f < P->nf; f++) {
        int a = dev[P->f[f].src], b = dev[P->f[f].dst],
            x = a == b ? -1 : find_xfer(&w->res, P->f[f].tensor, b, P->f[f].dst);
        double s = w->res.op_end_s[P->f[f].src], e = s;
        if (x >= 0) s = w->res.xfers[x].start_s, e = w->res.xfers[x].end_s;
        v[P->fs0 + f] = s, v[P->fc0 + f] = e;
        v[P->z0 + f] = a != b;
        if (a != b) v[U(P, f, a, b)] = 1;
    }
}

static void set_start(milp *P, const start *w, const pairs *op, const pairs *fp, int dop, int dfl)
{
    double *v = pl_calloc(P->ncols + 1, sizeof *v);
    int *idx = pl_malloc((P->ncols + 1) * sizeof *idx);
    for (int i = 0; i < P->n; i++) {
        v[X(P, i, w->plan->dev[i])] = 1;
        v[P->s0 + i] = w->res.op_start_s[i], v[P->c0 + i] = w->res.op_end_s[i];
    }
    start_flows(P, w, v);
    /* delta = 1 when the first of the pair ends before the second starts: true for the pairs
     * that share a device or port (the simulator never overlaps them), harmless for others. */
    for (int p = 0; p < op->n; p++)
        v[dop + p] = v[P->c0 + op->a[p]] <= v[P->s0 + op->b[p]];
    for (int p = 0; p < fp->n; p++)
        v[dfl + p] = v[P->fc0 + fp->a[p]] <= v[P->fs0 + fp->b[p]];
    v[P->T] = w->makespan;
    for (int c = 0; c < P->ncols; c++)
        idx[c] = c;
    Cbc_setMIPStartI(P->m, P->ncols, idx, v);
    free(v), free(idx);
}

/* ---- solving and reading the answer ---- */

typedef struct order_key {
    double s, c;
    int pos, op;
} order_key;

static int cmp_key(const void *x, const void *y)
{
    const order_key *a = x, *b = y;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->c != b->c) return a->c < b->c ? -1 : 1;
    return a->pos - b->pos;
}

/* The ports' order: flows by MILP start (then end, then edge), so that the simulator sends
 * them in the MILP's order (sim.h, transfer order). Edges that are not flows cost nothing and
 * hold no port: their priority does not matter. */
static void read_xfer_order(const milp *P, const double *sol, pl_plan *out)
{
    int ne = P->k->g->n_edges;
    order_key *key = pl_malloc((P->nf + 1) * sizeof *key);
    double *prio = pl_malloc((ne + 1) * sizeof *prio), grid = P->M * 1e-9;
    for (int e = 0; e < ne; e++)
        prio[e] = INFINITY;
    for (int f = 0; f < P->nf; f++)
        key[f] = (order_key){round(sol[P->fs0 + f] / grid), round(sol[P->fc0 + f] / grid),
                             P->f[f].edge, f};
    pl_sort(key, P->nf, sizeof *key, cmp_key);
    for (int r = 0; r < P->nf; r++)
        prio[P->f[key[r].op].edge] = r;
    pl_plan_set_xfer_priority(out, ne, prio);
    free(key), free(prio);
}

/* Placement by the largest x, per-device order by start time (then end, then topological
 * position, so a zero-time op ties correctly with its neighbours). Times are snapped to a
 * grid far below any duration so solver round-off does not swap equal starts. */
static void read_plan(const milp *P, const double *sol, pl_plan *out)
{
    order_key *key = pl_malloc((P->n + 1) * sizeof *key);
    int *seq = pl_malloc((P->n + 1) * sizeof *seq);
    double grid = P->M * 1e-9;
    for (int i = 0; i < P->n; i++) {
        int best = 0;
        for (int k = 1; k < P->D; k++)
            if (sol[X(P, i, k)] > sol[X(P, i, best)]) best = k;
        out->dev[i] = best;
        key[i] = (order_key){round(sol[P->s0 + i] / grid), round(sol[P->c0 + i] / grid),
                             P->k->g->topo_pos[i], i};
    }
    pl_sort(key, P->n, sizeof *key, cmp_key);
    for (int i = 0; i < P->n; i++)
        seq[i] = key[i].op;
    pl_plan_set_order(out, seq);
    free(key), free(seq);
    read_xfer_order(P, sol, out);
}

static void find_pairs(const milp *P, pairs *op, pairs *fp)
{
    pl_reach *r = pl_graph_reach(P->k->g);
    op_pairs(P, r, op), flow_pairs(P, r, fp);
    pl_reach_free(r);
}

/* Rows the model will have. Building is linear (one Cbc_loadProblem: 150k rows in under 0.05 s),
 * but CBC's root LP is not interruptible by its time limit and grows with the rows: InceptionV4's
 * 150k rows overran a 20 s limit by 16 s. A model whose root alone would eat more than a third
 * of the limit is not built; the local search gets the time. */
static bool too_big(const milp *P, const pairs *op, const pairs *fp, double limit, double *rows)
{
    int D = P->D;
    *rows = 3.0 * P->n + 2.0 * P->k->g->n_edges + D + P->nf * (3.0 * D * (D - 1) + 2) +
            2.0 * D * op->n + 4.0 * D * fp->n;
    double root_s = 2e-4 * *rows; /* one point: InceptionV4, 150k rows, ~30 s over its limit */
    return root_s > limit / 3;
}

static void build(milp *P, const start *w, pairs *op, pairs *fp)
{
    add_cols(P);
    int dop = cols(P, op->n, 1, true), dfl = cols(P, fp->n, 1, true);
    P->rc = pl_malloc((P->ncols + 1) * sizeof *P->rc);
    P->rv = pl_malloc((P->ncols + 1) * sizeof *P->rv);
    add_ops(P), add_precedence(P), add_memory(P), add_comm(P);
    add_nonoverlap(P, op, dop), add_congestion(P, fp, dfl);
    load(P);
    if (w->plan) set_start(P, w, op, fp, dop, dfl);
}

/* Big-M (docs/moirai.md): T <= ub keeps every start and end in [0, ub], since each flow ends
 * before its reader starts and T bounds every op's end. A relaxed disjunction then needs M >=
 * C_j - S_i, at most ub; the largest transfer time on top is slack against round-off in the
 * bound, not needed in exact arithmetic. ub is the warm start's makespan when it meets (5)
 * (an optimum is no worse), else the serial bound (any placement meeting (5) run one step at
 * a time fits). The heuristic's schedule, simulated per edge under ports, is a feasible MILP
 * point unless some flow is free on some channel (P->exact). */
static void big_m(milp *P, const start *w)
{
    double max_xfer, serial = serial_bound(P, &max_xfer);
    P->exact = true;
    for (int f = 0; f < P->nf; f++)
        for (int a = 0; a < P->D; a++)
            for (int b = 0; b < P->D; b++)
                P->exact &= a == b || pair_s(P, f, a, b) > 0;
    P->ub = w->plan && P->exact ? fmin(w->makespan, serial) : serial;
    P->M = P->ub + max_xfer;
    if (!(P->M > 0)) P->M = 1;
}

/* What the MILP phase ended with, for the local search and the note. */
typedef struct outcome {
    const char *status;
    double obj, bound, sim, cbc_s, build_s;
    char source[64]; /* which part found the plan now in `out` */
    char status_buf[96];
    char warning[400]; /* the solver failed (common.h, "Isolated solves"): said first in the note */
    pl_ls_stats ls;
} outcome;

/* The solver failed (crash, stall, garbage: `why`): no MILP answer, the warm start stays. */
static int solver_failed(const pl_cost *k, const start *w, const char *why, pl_plan *out,
                         pl_err *err, outcome *r)
{
    if (!w->plan)
        return pl_err_set(err,
                          "moirai: the MILP solver %s and no heuristic plan meets memory (5): "
                          "no plan",
                          why);
    snprintf(r->warning, sizeof r->warning,
             "warning: the MILP solver %s; using the best plan found so far (heuristic %s)", why,
             w->name);
    pl_plan_assign(out, w->plan);
    r->status = "no MILP answer (solver failed)";
    r->obj = INFINITY, r->bound = pl_lower_bound(k), r->sim = w->makespan;
    snprintf(r->source, sizeof r->source, "warm start %s", w->name);
    return 0;
}

/* Uses the MILP's plan unless its simulation is worse than the warm start's. */
static int finish(milp *P, const start *w, const pl_solve_answer *a, pl_plan *out, pl_err *err,
                  outcome *r)
{
    bool opt = a->status == PL_SOLVE_OPTIMAL, has = opt || a->status == PL_SOLVE_FEASIBLE;
    r->obj = has ? a->obj : INFINITY, r->bound = a->bound;
    r->status = opt ? "optimal" : has ? "feasible" : "no solution";
    if (a->status == PL_SOLVE_INFEASIBLE && !w->plan)
        return pl_err_set(err, "moirai: infeasible: no placement meets device memory (5)");
    r->sim = INFINITY;
    snprintf(r->source, sizeof r->source, "milp");
    if (has) {
        read_plan(P, a->x, out);
        r->sim = pk_sim_makespan(P->k, out, &MILP_SIM, false);
    }
    if (!(r->sim <= w->makespan)) {
        if (!w->plan) return pl_err_set(err, "moirai: CBC found no plan in %.1f s", r->cbc_s);
        pl_plan_assign(out, w->plan);
        r->status = opt   ? "optimal (its plan simulates worse: warm start kept)"
                    : has ? "feasible (its plan simulates worse: warm start kept)"
                          : "no solution (warm start kept)";
        r->sim = w->makespan;
        snprintf(r->source, sizeof r->source, "warm start %s", w->name);
    }
    return 0;
}

/* A floor for the local search: nothing simulates below pl_lower_bound, nor below CBC's
 * bound when the MILP counts communication as the simulator does (big_m) and it is about the
 * same plans, those meeting (5), which the search keeps. */
static double search_floor(const milp *P, const outcome *r)
{
    double lb = pl_lower_bound(P->k);
    if (P->exact && isfinite(r->bound)) lb = fmax(lb, r->bound);
    return lb;
}

/* The improvement phase: local search from the plan in `out` until the deadline, its
 * independent searches spread over the pool (pl_moirai_restarts). -1 when MPI failed. */
static int improve(const milp *P, const pl_place_opts *o, double deadline, pl_plan *out, outcome *r,
                   pl_err *err)
{
    pl_ls_stats st = {0};
    unsigned seed = o && o->seed ? o->seed : 1;
    int moves = pl_moirai_restarts(P->k, out, r->sim, deadline, search_floor(P, r), seed, &MILP_SIM,
                                   o, &st, err);
    if (moves > 0) {
        r->sim = pk_sim_makespan(P->k, out, &MILP_SIM,
                                 false); /* the simulator's figure, not the search's memory */
        snprintf(r->source, sizeof r->source, "local search (+%d moves)", st.moves);
    }
    r->ls = st;
    return moves < 0 ? -1 : 0;
}

static void note(pl_err *err, const milp *P, const outcome *r, double warm)
{
    double ref = isfinite(r->obj) ? r->obj : r->sim; /* no MILP point: the plan's gap */
    double gap = ref > 0 ? (ref - r->bound) / ref : 0;
    char obj[48] = "none"; /* the MILP skipped or without a point: not "inf" */
    if (isfinite(r->obj)) snprintf(obj, sizeof obj, "%.6g", r->obj);
    pl_err_set(
        err,
        "moirai: %s%s%s, MILP objective %s, bound %.6g, gap %.4g, simulated %.6g "
        "(warm start %.6g), %d binaries, %d rows, build %.2f s, CBC %.2f s, local search %ld "
        "simulations %.2f s; final plan: %s",
        r->warning, r->warning[0] ? "; " : "", r->status, obj, r->bound, gap, r->sim, warm,
        P->n_bin, P->n_rows, r->build_s, r->cbc_s, r->ls.evals, r->ls.secs, r->source);
}
/* No MILP (too big to solve in time): the warm start, for the local search to improve. */
static int skip_milp(const pl_cost *k, const start *w, double rows, pl_plan *out, pl_err *err,
                     outcome *r)
{
    if (!w->plan)
        return pl_err_set(err,
                          "moirai: no heuristic plan meets memory (5) and the MILP (%.0f "
                          "rows) is too big to solve in the time limit",
                          rows);
    pl_plan_assign(out, w->plan);
    snprintf(r->status_buf, sizeof r->status_buf,
             "MILP skipped (%.0f rows: too big to solve in the time limit)", rows);
    r->status = r->status_buf;
    r->obj = INFINITY, r->bound = pl_lower_bound(k), r->sim = w->makespan;
    snprintf(r->source, sizeof r->source, "warm start %s", w->name);
    return 0;
}

/* One CBC solve in a child process (common.h, "Isolated solves"), its limit a third of what is left
 * before `end`. CBC overruns its limit (preprocessing and the root LP do not look at the clock):
 * its answer is awaited until `end`, or a grace past its limit when that is later. */
static bool cbc_solve(milp *P, double end, pl_solve_answer *a, char *why, size_t cap)
{
    pl_cbc_job job = {P->m, fmax(1, (end - pl_now()) / 3)};
    return pl_solve_isolated(pl_solve_cbc, &job, job.limit_s, end - pl_now(), a, why, cap) == 0;
}

/* Builds and solves the MILP, then picks its plan or the warm start (finish). CBC 2.10 can
 * crash when its clock runs out in the root LP of the preprocessed model (docs/moirai.md):
 * a failed solve is tried once more without preprocessing when the time left allows, and a
 * second failure keeps the warm start (solver_failed). */
static int solve_milp(milp *P, const start *w, pairs *op, pairs *fp, const pl_place_opts *o,
                      double left, pl_plan *out, pl_err *err, outcome *r)
{
    P->m = Cbc_newModel();
    Cbc_setLogLevel(P->m, 0);
    double t0 = pl_now(), end = t0 + left;
    build(P, w, op, fp);
    r->build_s = pl_now() - t0;
    Cbc_setAllowableFractionGap(P->m, o && o->rel_gap > 0 ? o->rel_gap : 1e-6);
    double t1 = pl_now();
    char why[320], again[160];
    pl_solve_answer a = {.n = P->ncols, .x = pl_malloc((P->ncols + 1) * sizeof *a.x)};
    bool ok = cbc_solve(P, end, &a, why, sizeof why);
    /* a retry only when the shortest limit, 1 s, and the wait the parent allows past it fit */
    if (!ok && end - pl_now() >= 1 + pl_solve_grace_s(1)) {
        Cbc_setParameter(P->m, "preprocess", "off");
        size_t n = strlen(why);
        if (cbc_solve(P, end, &a, again, sizeof again))
            ok = true, snprintf(r->warning, sizeof r->warning,
                                "warning: the MILP solver %s; solved again without CBC's "
                                "preprocessing",
                                why);
        else
            snprintf(why + n, sizeof why - n, ", and again without preprocessing (%s)", again);
    }
    r->cbc_s = pl_now() - t1;
    int rc = ok ? finish(P, w, &a, out, err, r) : solver_failed(P->k, w, why, out, err, r);
    free(a.x);
    return rc;
}

/* Under the pool the MILP is one solve, rank 0's (docs/dist.md, "moirai and drl"): its
 * outcome (status, or error, and plan) goes to every rank, which then all search from the
 * same plan. A time-limited CBC need not answer the same twice, so every rank solving it
 * could start the searches from different plans. -1 (err set) when MPI failed. */
static int share_milp(const pl_pool *pool, int *rc, outcome *r, pl_plan *out, pl_err *err)
{
    if (pool->rank == 0 && r->status && r->status != r->status_buf)
        snprintf(r->status_buf, sizeof r->status_buf, "%s", r->status);
    if (pl_pool_bcast(pool, rc, sizeof *rc, 0) < 0 ||
        (*rc < 0 && pl_pool_bcast(pool, err->msg, sizeof err->msg, 0) < 0) ||
        (*rc == 0 &&
         (pl_pool_bcast(pool, r, sizeof *r, 0) < 0 || pl_pool_share_plan(pool, out, 0) < 0)))
        return *rc = pl_err_set(err, "moirai: the MPI pool failed sharing rank 0's MILP plan: %s",
                                pl_dist_error());
    r->status = r->status_buf; /* a pointer into rank 0's memory otherwise */
    return 0;
}

/* The MILP gets a third of what is left after building it (on small instances it proves its
 * optimum well within that; on GoogLeNet it finds nothing of its own but a bound), the local
 * search the rest, or all of it when the MILP is too big to solve. */
int pl_moirai_solve(const pl_cost *k, const pl_place_opts *o, double deadline, pl_plan *out,
                    pl_err *err)
{
    double t0 = pl_now(), rows;
    milp P = {.k = k, .n = k->n_ops, .D = k->n_devs};
    start w;
    pairs op = {0}, fp = {0};
    outcome r = {0};
    find_flows(&P);
    best_heuristic(k, deadline, &w);
    big_m(&P, &w);
    find_pairs(&P, &op, &fp);
    double limit = deadline - t0;
    pl_pool pool = pl_pool_of(o);
    int rc = 0;
    if (pool.rank == 0)
        rc = too_big(&P, &op, &fp, limit, &rows)
                 ? skip_milp(k, &w, rows, out, err, &r)
                 : solve_milp(&P, &w, &op, &fp, o, deadline - pl_now(), out, err, &r);
    if (pool.on) share_milp(&pool, &rc, &r, out, err);
    if (rc == 0 && (rc = improve(&P, o, deadline, out, &r, err)) == 0)
        note(err, &P, &r, w.makespan);
    if (P.m) Cbc_deleteModel(P.m);
    milp_free(&P), free(op.a), free(op.b), free(fp.a), free(fp.b);
    if (w.plan) pl_plan_free(w.plan), pl_sim_result_free(&w.res);
    return rc;
}
