/* talos.c: Talos's incremental minimum-cost flow (docs/multi.md, "Talos").
 *
 * The packed ops of a group of models are placed step by step. A step's flow network has one
 * node per ready pack (all its predecessors placed), one node per (device, queue position),
 * a source and a sink: source -> pack (capacity 1), pack -> (device d, position k) with the
 * cost of Eq. 4 from Algorithm 1 plus the delay the pack imposes on the k-1 packs queued
 * behind it on d in this step, (device, position) -> sink (capacity 1), and pack -> sink at a
 * prohibitive cost for a pack that waits for a later step. With unit capacities the flow is
 * integral, so every pack is placed whole or not at all (the digest's ambiguity 2), and with
 * positions the flow is Horn's exact formulation of least total completion time on unrelated
 * devices, which is what several ready packs sharing a device in one step need. GLPK's
 * out-of-kilter solver (glp_mincost_okalg) solves it; costs are scaled to integers. */
#include "multi_internal.h"

#include <glpk.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDIDATES 32 /* ready packs one step places at most: the most critical first */
/* Integer costs for GLPK: a placement costs at most COST_LEVELS x TIE_BITS (2^20), waiting
 * more than any augmenting path of placements can save (MAX_CANDIDATES + 1 of them), and a
 * whole step's cost stays below INT_MAX. */
#define COST_LEVELS (1 << 14)
#define TIE_BITS 64
#define DEFER_COST (40.0 * (1 << 20))

typedef struct tl_busy {
    double from, to;
} tl_busy;

typedef struct tl_state {
    const pl_cost *k;
    const mt_packs *p;
    int D, n, positions;
    int *dev;            /* per pack; -1 while unplaced */
    double *start, *fin; /* per pack */
    tl_busy **busy;      /* per device: the packs placed there, [start, end), by start */
    int *n_busy, *cap_busy;
    double *bl;         /* per pack: longest path to an exit on best devices, itself included */
    int *left;          /* per pack: predecessors not yet placed */
    unsigned char *ban; /* [pack * D + d]: no room there */
    int *frontier, n_front;
    int *active, n_active; /* placed packs that may still run when a ready pack becomes ready */
    pl_mem_track *mem;
} tl_state;

typedef struct tl_cand {
    int q;
    double curr; /* when its predecessors have all ended */
    double hide; /* maxPt: the longest op that can run alongside it in its model */
} tl_cand;

/* ---- device time ---- */

/* The earliest time from `ready` at which d is idle for `len`: the packs placed there before
 * (in earlier steps, or by an earlier group) hold it only while they run, so a pack may take
 * an idle stretch between them. */
static double first_fit(const tl_state *s, int d, double ready, double len)
{
    double t = ready;
    for (int i = 0; i < s->n_busy[d]; i++) {
        const tl_busy *b = &s->busy[d][i];
        if (b->to <= t) continue;
        if (t + len <= b->from) break;
        t = b->to;
    }
    return t;
}

static void hold(tl_state *s, int d, double from, double to)
{
    pl_grow((void **)&s->busy[d], &s->cap_busy[d], s->n_busy[d] + 1, sizeof **s->busy);
    int i = s->n_busy[d]++;
    for (; i > 0 && s->busy[d][i - 1].from > from; i--)
        s->busy[d][i] = s->busy[d][i - 1];
    s->busy[d][i] = (tl_busy){from, to};
}

/* ---- Algorithm 1's terms ---- */

/* Pack q's time on d: its members' times, except that a member fused into a kernel whose
 * first op or whose input member is in a pack on another device runs as a kernel of its own
 * (pl_cost_op_placed_s: the runtime fuses only what one device holds). */
static double pack_time(const tl_state *s, int q, int d)
{
    const pl_cost *k = s->k;
    double t = s->p->t[(size_t)q * s->D + d];
    if (!k->fused_root || !isfinite(t)) return t;
    for (int j = s->p->moff[q]; j < s->p->moff[q + 1]; j++) {
        int v = s->p->mem[j];
        if (k->fused_root[v] < 0) continue;
        int r = s->p->of[k->fused_root[v]], u = s->p->of[k->fused_prev[v]];
        if ((r != q && s->dev[r] != d) || (u != q && s->dev[u] != d))
            t += k->unfused_s[(size_t)v * s->D + d] - pl_cost_op_s(k, v, d);
    }
    return t;
}

/* When pack q's inputs are all on device d (the graph's inputs from the I/O device): its
 * predecessors' ends plus the transfers (Algorithm 1's ct, the largest of them, is inside). */
static double ready_on(const tl_state *s, int q, int d)
{
    const pl_graph *g = s->k->g;
    int io = s->k->c->io_device;
    double r = 0;
    for (int j = s->p->moff[q]; j < s->p->moff[q + 1]; j++) {
        const pl_op *o = &g->ops[s->p->mem[j]];
        for (int i = 0; i < o->n_inputs; i++) {
            int t = o->inputs[i];
            if (t < 0) continue;
            int u = g->tensors[t].producer, from = u >= 0 ? s->dev[s->p->of[u]] : io;
            if (u >= 0 && s->p->of[u] == q) continue;
            if (u < 0 && !(g->tensors[t].flags & PL_TENSOR_INPUT)) continue;
            double at = u >= 0 ? s->fin[s->p->of[u]] : 0, x = 0;
            if (from >= 0 && from != d) x = pl_cost_xfer_s(s->k, t, from, d);
            r = fmax(r, at + x);
        }
    }
    return r;
}

static double curr_time(const tl_state *s, int q)
{
    double c = 0;
    for (int e = s->p->poff[q]; e < s->p->poff[q + 1]; e++)
        c = fmax(c, s->fin[s->p->pred[e]]);
    return c;
}

/* maxPt: ready packs of the same model run alongside q (none is an ancestor or descendant of
 * another), for their best time; placed ones still running when q is ready, for what is left. */
static double hidden_by(const tl_state *s, const tl_cand *c, int n, int i)
{
    int q = c[i].q, m = s->p->tenant[q];
    double h = 0;
    for (int j = 0; j < n; j++)
        if (j != i && s->p->tenant[c[j].q] == m) h = fmax(h, mt_best(s->p, c[j].q));
    for (int j = 0; j < s->n_active; j++) {
        int r = s->active[j];
        if (s->p->tenant[r] == m && s->fin[r] > c[i].curr) h = fmax(h, s->fin[r] - c[i].curr);
    }
    return h;
}

/* The device of q's predecessor on its model's longest path (the longest remaining path on
 * best devices; of equals, the one that ended last), where its successors most likely run;
 * -1 for none. Not simply the last to end: a side branch sent to a slower device because
 * the main one hid it can end last. */
static int home_of(const tl_state *s, int q)
{
    int h = -1;
    double crit = -1, last = -1;
    for (int e = s->p->poff[q]; e < s->p->poff[q + 1]; e++) {
        int r = s->p->pred[e];
        if (s->bl[r] > crit || (s->bl[r] == crit && s->fin[r] > last))
            crit = s->bl[r], last = s->fin[r], h = s->dev[r];
    }
    return h;
}

/* Sending q's results from d back to `home`: the largest of its outputs read outside it. */
static double send_back(const tl_state *s, int q, int d, int home)
{
    if (home < 0 || home == d) return 0;
    const pl_graph *g = s->k->g;
    double x = 0;
    for (int j = s->p->moff[q]; j < s->p->moff[q + 1]; j++) {
        const pl_op *o = &g->ops[s->p->mem[j]];
        for (int i = 0; i < o->n_outputs; i++) {
            int t = o->outputs[i];
            if (t < 0) continue;
            bool leaves = false;
            for (int c = 0; c < g->tensors[t].n_consumers && !leaves; c++)
                leaves = s->p->of[g->tensors[t].consumers[c]] != q;
            if (leaves) x = fmax(x, pl_cost_xfer_s(s->k, t, d, home));
        }
    }
    return x;
}

/* Eq. 4 at queue position k from the end of d's queue in this step: (wt + ct + et + back -
 * maxPt)+, plus, for each of the k - 1 packs it delays, the time it holds d (et, and the wait
 * for its inputs when they arrive after d is free). wt + ct + et is the pack's end less the
 * time its predecessors ended; `back` (placer's addition to Algorithm 1, docs/multi.md) the
 * transfer of its results back to where its model's longest path runs, which a branch sent to
 * another device pays at its join. */
static double step_cost(const tl_state *s, const tl_cand *c, int d, int k)
{
    int q = c->q;
    double et = pack_time(s, q, d);
    double end = first_fit(s, d, ready_on(s, q, d), et) + et;
    double back = send_back(s, q, d, home_of(s, q));
    return fmax(0, end + back - c->curr - c->hide) + (k - 1) * (end - first_fit(s, d, c->curr, 0));
}

/* ---- one step's flow ---- */

typedef struct arc_data {
    double low, cap, cost, x;
} arc_data;

static bool usable(const tl_state *s, int q, int d)
{
    return isfinite(s->p->t[(size_t)q * s->D + d]) && !s->ban[(size_t)q * s->D + d];
}

/* Ties between equal costs go to the more critical pack at the front of a queue. */
static int tie(const tl_state *s, int q, int k, double blmax)
{
    if (k <= 1 || blmax <= 0) return 0;
    int t = (k - 1) * (int)lround(7 * (blmax - s->bl[q]) / blmax);
    return t < TIE_BITS - 1 ? t : TIE_BITS - 1;
}

static arc_data *add_arc(glp_graph *G, int from, int to, double cap, double cost)
{
    glp_arc *a = glp_add_arc(G, from, to);
    arc_data *ad = a->data;
    ad->low = 0, ad->cap = cap, ad->cost = cost, ad->x = 0;
    return ad;
}

int mt_assign(int n, int n_slots, const double *cost, const int *tie, int *slot, pl_err *err)
{
    int S = 1, T = 2, op0 = 3, sl0 = 3 + n;
    double cmax = 0;
    for (size_t j = 0; j < (size_t)n * n_slots; j++)
        if (isfinite(cost[j])) cmax = fmax(cmax, cost[j]);
    double unit = cmax > 0 ? cmax / COST_LEVELS : 1;
    glp_graph *G = glp_create_graph(sizeof(double), sizeof(arc_data));
    glp_add_vertices(G, 2 + n + n_slots);
    *(double *)G->v[S]->data = n, *(double *)G->v[T]->data = -n;
    arc_data **pick = pl_malloc((size_t)n * n_slots * sizeof *pick);
    for (int i = 0; i < n; i++) {
        add_arc(G, S, op0 + i, 1, 0);
        add_arc(G, op0 + i, T, 1, DEFER_COST);
        for (int j = 0; j < n_slots; j++) {
            size_t ij = (size_t)i * n_slots + j;
            double x = cost[ij];
            pick[ij] = isfinite(x) ? add_arc(G, op0 + i, sl0 + j, 1,
                                             floor(x / unit + 0.5) * TIE_BITS + (tie ? tie[ij] : 0))
                                   : NULL;
        }
    }
    for (int j = 0; j < n_slots; j++)
        add_arc(G, sl0 + j, T, 1, 0);
    double total;
    int rc = glp_mincost_okalg(G, 0, offsetof(arc_data, low), offsetof(arc_data, cap),
                               offsetof(arc_data, cost), &total, offsetof(arc_data, x), -1);
    for (int i = 0; i < n && rc == 0; i++) {
        slot[i] = -1;
        for (int j = 0; j < n_slots; j++)
            if (pick[(size_t)i * n_slots + j] && pick[(size_t)i * n_slots + j]->x > 0.5)
                slot[i] = j;
    }
    glp_delete_graph(G);
    free(pick);
    if (rc != 0)
        return pl_err_set(err, "talos: GLPK's min-cost flow failed (glp_mincost_okalg %d)", rc);
    return 0;
}

/* Solves the step for candidates c[0..n): slot[i] = d * positions + (k - 1), or -1 (waits). */
static int solve_step(const tl_state *s, const tl_cand *c, int n, int *slot, pl_err *err)
{
    int D = s->D, P = s->positions;
    size_t cells = (size_t)n * D * P;
    double *cost = pl_malloc(cells * sizeof *cost), blmax = 0;
    int *ties = pl_malloc(cells * sizeof *ties);
    for (int i = 0; i < n; i++)
        blmax = fmax(blmax, s->bl[c[i].q]);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < D; d++)
            for (int k = 1; k <= P; k++) {
                size_t ij = ((size_t)i * D + d) * P + k - 1;
                cost[ij] = usable(s, c[i].q, d) ? step_cost(s, &c[i], d, k) : INFINITY;
                ties[ij] = tie(s, c[i].q, k, blmax);
            }
    int rc = mt_assign(n, D * P, cost, ties, slot, err);
    free(cost), free(ties);
    return rc;
}

/* ---- committing a step ---- */

/* Adds pack q's ops to d's memory; false (nothing added) when one does not fit. */
static bool take_memory(tl_state *s, int q, int d)
{
    for (int j = s->p->moff[q]; j < s->p->moff[q + 1]; j++) {
        if (pl_mem_track_fits(s->mem, s->p->mem[j], d)) {
            pl_mem_track_add(s->mem, s->p->mem[j], d);
            continue;
        }
        while (--j >= s->p->moff[q])
            pl_mem_track_remove(s->mem, s->p->mem[j], d);
        return false;
    }
    return true;
}

static void place_pack(tl_state *s, int q, int d)
{
    double et = pack_time(s, q, d);
    s->dev[q] = d;
    s->start[q] = first_fit(s, d, ready_on(s, q, d), et);
    s->fin[q] = s->start[q] + et;
    hold(s, d, s->start[q], s->fin[q]);
    s->active[s->n_active++] = q;
    for (int e = s->p->soff[q]; e < s->p->soff[q + 1]; e++)
        s->left[s->p->succ[e]]--;
}

typedef struct queued {
    int i, k;
} queued;

static int by_position(const void *a, const void *b) /* front of the queue (largest k) first */
{
    const queued *x = a, *y = b;
    return y->k - x->k;
}

/* Places the step's packs, each device's in queue order; a pack with no room where the flow
 * sent it is banned there and waits. */
static void commit(tl_state *s, const tl_cand *c, int n, const int *slot)
{
    int P = s->positions;
    queued *qs = pl_malloc((size_t)n * sizeof *qs);
    for (int d = 0; d < s->D; d++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (slot[i] >= 0 && slot[i] / P == d) qs[m++] = (queued){i, slot[i] % P + 1};
        pl_sort(qs, m, sizeof *qs, by_position);
        for (int j = 0; j < m; j++) {
            int q = c[qs[j].i].q;
            if (!take_memory(s, q, d)) {
                s->ban[(size_t)q * s->D + d] = 1;
                continue;
            }
            place_pack(s, q, d);
        }
    }
    free(qs);
}

/* ---- the steps ---- */

static int by_criticality(const void *a, const void *b, void *ctx)
{
    const double *bl = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (bl[x] != bl[y]) return bl[x] > bl[y] ? -1 : 1;
    return x - y;
}

static void refresh_frontier(tl_state *s, const bool *in_group)
{
    int m = 0;
    for (int i = 0; i < s->n_front; i++)
        if (s->dev[s->frontier[i]] < 0) s->frontier[m++] = s->frontier[i];
    s->n_front = m;
    for (int q = 0; q < s->n; q++) /* packs that became ready: pred counts just hit 0 */
        if (s->dev[q] < 0 && s->left[q] == 0 && in_group[s->p->tenant[q]]) {
            bool there = false;
            for (int i = 0; i < m && !there; i++)
                there = s->frontier[i] == q;
            if (!there) s->frontier[s->n_front++] = q;
        }
    qsort_r(s->frontier, s->n_front, sizeof *s->frontier, by_criticality, s->bl);
}

/* Drops placed packs that end before every ready pack becomes ready: none can hide one. */
static void prune_active(tl_state *s, const tl_cand *c, int n)
{
    double lo = INFINITY;
    for (int i = 0; i < n; i++)
        lo = fmin(lo, c[i].curr);
    int m = 0;
    for (int j = 0; j < s->n_active; j++)
        if (s->fin[s->active[j]] > lo) s->active[m++] = s->active[j];
    s->n_active = m;
}

static int no_room(const tl_state *s, int q, pl_err *err)
{
    return pl_mem_track_no_room(s->mem, "talos", s->p->mem[s->p->moff[q]], err);
}

static int place_group(tl_state *s, const bool *in_group, pl_err *err)
{
    tl_cand c[MAX_CANDIDATES];
    int slot[MAX_CANDIDATES];
    for (;;) {
        refresh_frontier(s, in_group);
        if (s->n_front == 0) return 0;
        int n = s->n_front < MAX_CANDIDATES ? s->n_front : MAX_CANDIDATES;
        for (int i = 0; i < n; i++)
            c[i] = (tl_cand){s->frontier[i], curr_time(s, s->frontier[i]), 0};
        prune_active(s, c, n);
        for (int i = 0; i < n; i++) {
            c[i].hide = hidden_by(s, c, n, i);
            bool any = false;
            for (int d = 0; d < s->D; d++)
                any |= usable(s, c[i].q, d);
            if (!any) return no_room(s, c[i].q, err);
        }
        if (solve_step(s, c, n, slot, err) < 0) return -1;
        commit(s, c, n, slot); /* a pack without room where the flow sent it is banned there,
                                  so a step that places none still makes progress */
    }
}

/* ---- the whole ---- */

static void bottom_levels(tl_state *s)
{
    for (int q = s->n - 1; q >= 0; q--) {
        double b = 0;
        for (int e = s->p->soff[q]; e < s->p->soff[q + 1]; e++)
            b = fmax(b, s->bl[s->p->succ[e]]);
        double best = mt_best(s->p, q);
        s->bl[q] = (isfinite(best) ? best : 0) + b;
    }
}

static void state_init(tl_state *s, const pl_cost *k, const mt_packs *p, int positions)
{
    memset(s, 0, sizeof *s);
    s->k = k, s->p = p, s->D = p->D, s->n = p->n, s->positions = positions;
    int n = p->n;
    s->dev = pl_malloc((size_t)n * sizeof *s->dev);
    s->start = pl_calloc((size_t)n + 1, sizeof *s->start);
    s->fin = pl_calloc((size_t)n + 1, sizeof *s->fin);
    s->busy = pl_calloc((size_t)s->D, sizeof *s->busy);
    s->n_busy = pl_calloc((size_t)s->D, sizeof *s->n_busy);
    s->cap_busy = pl_calloc((size_t)s->D, sizeof *s->cap_busy);
    s->bl = pl_calloc((size_t)n + 1, sizeof *s->bl);
    s->left = pl_malloc((size_t)n * sizeof *s->left);
    s->ban = pl_calloc((size_t)n * s->D + 1, 1);
    s->frontier = pl_malloc((size_t)n * sizeof *s->frontier);
    s->active = pl_malloc((size_t)n * sizeof *s->active);
    for (int q = 0; q < n; q++)
        s->dev[q] = -1, s->left[q] = p->poff[q + 1] - p->poff[q];
    s->mem = pl_mem_track_new(k);
    bottom_levels(s);
}

static void state_free(tl_state *s)
{
    for (int d = 0; d < s->D; d++)
        free(s->busy[d]);
    free(s->busy), free(s->n_busy), free(s->cap_busy);
    free(s->dev), free(s->start), free(s->fin), free(s->bl), free(s->left);
    free(s->ban), free(s->frontier), free(s->active);
    pl_mem_track_free(s->mem);
}

/* Groups in order of their total work on best devices, least first: a shorter model finishing
 * first adds less to the sum of completion times (shortest processing time first). */
static int *group_order(const mt_packs *p, const pl_multi_analysis *a)
{
    double *work = pl_calloc((size_t)a->n_groups + 1, sizeof *work);
    for (int q = 0; q < p->n; q++)
        work[a->group[p->tenant[q]]] += mt_best(p, q);
    int *order = pl_malloc((size_t)a->n_groups * sizeof *order);
    for (int i = 0; i < a->n_groups; i++)
        order[i] = i;
    for (int i = 1; i < a->n_groups; i++) /* insertion sort: a handful of groups */
        for (int j = i; j > 0 && work[order[j]] < work[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    free(work);
    return order;
}

typedef struct op_key {
    double start;
    int pack, pos;
} op_key;

static int by_start(const void *a, const void *b)
{
    const op_key *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->pack != y->pack) return x->pack - y->pack;
    return x->pos - y->pos;
}

/* Op -> device from the packs, and each device's order by start time (a pack's members in
 * topological order). */
static void write_plan(const tl_state *s, pl_plan *out)
{
    const mt_packs *p = s->p;
    int n_ops = s->k->g->n_ops;
    op_key *key = pl_malloc((size_t)n_ops * sizeof *key);
    int *seq = pl_malloc((size_t)n_ops * sizeof *seq);
    for (int q = 0; q < p->n; q++)
        for (int j = p->moff[q]; j < p->moff[q + 1]; j++) {
            out->dev[p->mem[j]] = s->dev[q];
            key[j] = (op_key){s->start[q], q, j};
        }
    pl_sort(key, n_ops, sizeof *key, by_start);
    for (int i = 0; i < n_ops; i++)
        seq[i] = p->mem[key[i].pos];
    pl_plan_set_order(out, seq);
    free(seq), free(key);
}

/* Places the groups one after the other, in `order` (a group -1: every model in one flow). */
static int place_groups(tl_state *s, const pl_multi_analysis *a, const int *order, int n,
                        pl_err *err)
{
    bool *in_group = pl_calloc((size_t)a->n_tenants + 1, sizeof *in_group);
    int rc = 0;
    for (int gi = 0; gi < n && rc == 0; gi++) {
        for (int t = 0; t < a->n_tenants; t++)
            in_group[t] = order[gi] < 0 || a->group[t] == order[gi];
        rc = place_group(s, in_group, err);
    }
    free(in_group);
    return rc;
}

/* Talos's own TOCT for a placement: the sum over the models of their last pack's end. */
static double own_toct(const tl_state *s, int n_tenants)
{
    double *end = pl_calloc((size_t)n_tenants + 1, sizeof *end), sum = 0;
    for (int q = 0; q < s->n; q++)
        end[s->p->tenant[q]] = fmax(end[s->p->tenant[q]], s->fin[q]);
    for (int t = 0; t < n_tenants; t++)
        sum += end[t];
    free(end);
    return sum;
}

int mt_talos(const pl_cost *k, const pl_multi_opts *o, pl_plan *out, pl_err *err)
{
    pl_multi_analysis a;
    if (pl_multi_analyze(k, o, &a, err) < 0) return -1;
    mt_packs p;
    mt_pack(k, o, a.ref_dev, a.speedup, &p);
    int positions = o->positions > 0 ? o->positions : 8;
    tl_state s;
    state_init(&s, k, &p, positions);
    int *order = group_order(&p, &a);
    int rc = place_groups(&s, &a, order, a.n_groups, err);
    if (rc == 0 && a.n_groups > 1) {
        /* ambiguity 4: also every model in one flow; keep the lower TOCT by Talos's timeline */
        tl_state one;
        state_init(&one, k, &p, positions);
        pl_err ignored = {""};
        if (place_groups(&one, &a, (int[]){-1}, 1, &ignored) == 0 &&
            own_toct(&one, a.n_tenants) < own_toct(&s, a.n_tenants)) {
            tl_state t = s;
            s = one, one = t;
        }
        state_free(&one);
    }
    if (rc == 0) write_plan(&s, out);

    free(order);
    state_free(&s);
    mt_packs_free(&p);
    pl_multi_analysis_free(&a);
    return rc;
}
