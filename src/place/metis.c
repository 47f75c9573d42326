/* metis.c: placement by k-way graph partitioning with METIS (the baseline of Baechi and
 * others: balance compute, cut as few bytes as possible, ignore precedence).
 *
 * The op DAG is made undirected (edges symmetrised, the tensors between two ops merged into
 * one edge weighted by their bytes); a vertex weighs its mean time over the devices. METIS
 * splits it into one part per device with target weights proportional to each device's speed,
 * by recursive bisection, each bisection a METIS call (below: why not METIS's own recursion,
 * nor its k-way, which starts from that recursion). Parts go to
 * devices by index; when devices differ in speed, the heaviest part goes to the fastest
 * device. Then memory is checked as place.h describes it and over-full devices shed ops to
 * devices with room, fewest bytes cut per byte freed first; if that cannot help, the call
 * fails naming the device. The plan has no order: the simulator's first-ready-first-served
 * runs it, as TensorFlow ran METIS placements in Baechi's evaluation. */
#include "algos.h"
#include "lp_common.h"

#include <math.h>
#include <metis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* METIS sums weights in 32-bit integers: keep each total well below 2^31. */
#define VWGT_TOTAL 5e8
#define ADJWGT_TOTAL 5e8

/* Undirected graph, CSR, with bytes per edge (for repair) and METIS's integer weights. */
typedef struct ugraph {
    int n;
    idx_t *xadj, *adjncy, *vwgt, *adjwgt;
    double *bytes;
} ugraph;

static void ugraph_free(ugraph *u)
{
    free(u->xadj), free(u->adjncy), free(u->vwgt), free(u->adjwgt), free(u->bytes);
}

typedef struct nb {
    int v;
    double bytes;
} nb;

static int by_neighbour(const void *a, const void *b)
{
    return ((const nb *)a)->v - ((const nb *)b)->v;
}

/* Every (producer, consumer, tensor) edge in both directions, then each row sorted and its
 * duplicates (several tensors between two ops) merged; self-loops dropped. */
static nb *symmetrise(const pl_cost *k, int *off)
{
    const pl_graph *g = k->g;
    memset(off, 0, (g->n_ops + 1) * sizeof *off);
    for (int e = 0; e < g->n_edges; e++) {
        if (g->edges[e].src == g->edges[e].dst) continue;
        off[g->edges[e].src + 1]++, off[g->edges[e].dst + 1]++;
    }
    for (int i = 0; i < g->n_ops; i++)
        off[i + 1] += off[i];
    nb *row = pl_malloc((off[g->n_ops] ? off[g->n_ops] : 1) * sizeof *row);
    int *fill = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof *fill);
    memcpy(fill, off, g->n_ops * sizeof *fill);
    for (int e = 0; e < g->n_edges; e++) {
        const pl_edge *x = &g->edges[e];
        if (x->src == x->dst) continue;
        double b = pk_is_weight(k->g, x->tensor) ? 0 : pk_tensor_bytes(k->g, x->tensor);
        row[fill[x->src]++] = (nb){x->dst, b};
        row[fill[x->dst]++] = (nb){x->src, b};
    }
    free(fill);
    return row;
}

static void ugraph_build(const pl_cost *k, ugraph *u)
{
    int n = k->n_ops, *off = pl_malloc((n + 1) * sizeof *off);
    nb *row = symmetrise(k, off);
    u->n = n;
    u->xadj = pl_calloc(n + 1, sizeof *u->xadj);
    u->adjncy = pl_malloc((off[n] ? off[n] : 1) * sizeof *u->adjncy);
    u->bytes = pl_malloc((off[n] ? off[n] : 1) * sizeof *u->bytes);
    int m = 0;
    for (int i = 0; i < n; i++) {
        pl_sort(row + off[i], off[i + 1] - off[i], sizeof *row, by_neighbour);
        for (int q = off[i]; q < off[i + 1]; q++) {
            if (m > u->xadj[i] && u->adjncy[m - 1] == row[q].v) {
                u->bytes[m - 1] += row[q].bytes;
                continue;
            }
            u->adjncy[m] = row[q].v, u->bytes[m] = row[q].bytes, m++;
        }
        u->xadj[i + 1] = m;
    }
    free(row), free(off);
}

/* Integer weights: times and bytes as shares of their totals, at least 1 (METIS wants
 * positive edge weights, and a zero-time op still occupies a device). */
static void ugraph_weights(const pl_cost *k, ugraph *u)
{
    int n = u->n, m = u->xadj[n];
    double tsum = 0, bsum = 0;
    u->vwgt = pl_malloc((n ? n : 1) * sizeof *u->vwgt);
    u->adjwgt = pl_malloc((m ? m : 1) * sizeof *u->adjwgt);
    for (int i = 0; i < n; i++)
        tsum += pk_op_mean_s(k, i);
    for (int q = 0; q < m; q++)
        bsum += u->bytes[q];
    for (int i = 0; i < n; i++) {
        double t = pk_op_mean_s(k, i);
        u->vwgt[i] = 1 + (idx_t)(tsum > 0 ? t / tsum * VWGT_TOTAL : 0);
    }
    for (int q = 0; q < m; q++)
        u->adjwgt[q] = 1 + (idx_t)(bsum > 0 ? u->bytes[q] / bsum * ADJWGT_TOTAL : 0);
}

/* A device's speed on this graph: the inverse of the time it would take to run every op
 * (ops it cannot run are left out). */
static void device_speeds(const pl_cost *k, double *speed)
{
    for (int d = 0; d < k->n_devs; d++) {
        double t = 0;
        for (int i = 0; i < k->n_ops; i++) {
            double x = pl_cost_op_s(k, i, d);
            if (isfinite(x)) t += x;
        }
        speed[d] = t > 0 ? 1 / t : 1;
    }
}

/* ---- recursive bisection ----
 * METIS prints "***Cannot bisect a graph with 0 vertices!" with printf, whatever
 * METIS_OPTION_DBGLVL says, when its own recursive bisection (METIS_PartGraphRecursive with more
 * than 2 parts, and METIS_PartGraphKway's initial partitioning) reaches a branch that an
 * earlier bisection left empty; rnnlm on nvlink-8gpu does. That would land in the middle of
 * --json output, and no option turns it off. So we run the recursion ourselves and ask METIS
 * only for bisections of non-empty graphs, the one call that never prints (every other message
 * of METIS 5.1 is under a debug level, which stays 0): an empty branch is a part left empty,
 * as METIS would leave it, without a word on stdout. */

typedef struct bisector {
    const ugraph *u;
    const double *target; /* per part: its share of the total weight */
    double ub;            /* each bisection's allowed imbalance (METIS's ubvec) */
    unsigned seed;
    idx_t *part;
    int *local; /* vertex → index in the subgraph being split, -1 outside */
} bisector;

/* The subgraph induced by vs[0..n) in METIS's CSR form, into the arrays given. */
static void induce(const bisector *B, const int *vs, int n, idx_t *xadj, idx_t *adj, idx_t *vw,
                   idx_t *aw)
{
    const ugraph *u = B->u;
    int m = 0;
    xadj[0] = 0;
    for (int i = 0; i < n; i++) {
        int v = vs[i];
        vw[i] = u->vwgt[v];
        for (idx_t q = u->xadj[v]; q < u->xadj[v + 1]; q++)
            if (B->local[u->adjncy[q]] >= 0)
                adj[m] = B->local[u->adjncy[q]], aw[m++] = u->adjwgt[q];
        xadj[i + 1] = m;
    }
}

/* side[i] in {0, 1} for vs[0..n), n >= 2: a METIS bisection with target shares w0 and w1. */
static int bisect(const bisector *B, const int *vs, int n, double w0, double w1, idx_t *side,
                  pl_err *err)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        B->local[vs[i]] = i, m += B->u->xadj[vs[i] + 1] - B->u->xadj[vs[i]];
    idx_t *xadj = pl_malloc((n + 1) * sizeof *xadj), *vw = pl_malloc(n * sizeof *vw);
    idx_t *adj = pl_malloc((m ? m : 1) * sizeof *adj), *aw = pl_malloc((m ? m : 1) * sizeof *aw);
    induce(B, vs, n, xadj, adj, vw, aw);
    for (int i = 0; i < n; i++)
        B->local[vs[i]] = -1;
    idx_t nv = n, ncon = 1, two = 2, cut = 0, opts[METIS_NOPTIONS];
    real_t tp[2] = {(real_t)(w0 / (w0 + w1)), (real_t)(w1 / (w0 + w1))}, ub = (real_t)B->ub;
    METIS_SetDefaultOptions(opts);
    opts[METIS_OPTION_SEED] = (idx_t)(B->seed & 0x7fffffff);
    opts[METIS_OPTION_NUMBERING] = 0;
    opts[METIS_OPTION_DBGLVL] = 0;
    pl_signals_hold(); /* METIS sets SIGTERM's action for the call (common.h) */
    int rc = METIS_PartGraphRecursive(&nv, &ncon, xadj, adj, vw, NULL, aw, &two, tp, &ub, opts,
                                      &cut, side);
    pl_signals_release();
    free(xadj), free(adj), free(vw), free(aw);
    if (rc != METIS_OK)
        return pl_err_set(err, "metis: METIS failed (code %d) bisecting %d ops", rc, n);
    return 0;
}

/* Splits vs[0..n) into parts p0 .. p0+np-1: the first np/2 parts on one side (METIS's own
 * split), each side weighted by its parts' targets; vs is reordered. */
static int split_parts(const bisector *B, int *vs, int n, int p0, int np, pl_err *err)
{
    if (n == 0) return 0; /* parts left empty */
    if (np == 1) {
        for (int i = 0; i < n; i++)
            B->part[vs[i]] = p0;
        return 0;
    }
    int nl = np / 2, n0 = 0;
    double w0 = 0, w1 = 0;
    for (int p = 0; p < np; p++)
        *(p < nl ? &w0 : &w1) += B->target[p0 + p];
    idx_t *side = pl_calloc(n, sizeof *side);
    int rc = n == 1 ? (side[0] = w1 > w0, 0) : bisect(B, vs, n, w0, w1, side, err);
    int *tmp = pl_malloc(n * sizeof *tmp);
    for (int i = 0; i < n; i++) /* side 0 first, both in their former order */
        if (side[i] == 0) tmp[n0++] = vs[i];
    for (int i = 0, j = n0; i < n; i++)
        if (side[i] != 0) tmp[j++] = vs[i];
    memcpy(vs, tmp, n * sizeof *vs);
    free(tmp), free(side);
    if (rc == 0) rc = split_parts(B, vs, n0, p0, nl, err);
    if (rc == 0) rc = split_parts(B, vs + n0, n - n0, p0 + nl, np - nl, err);
    return rc;
}

/* Splits into P parts with target weights proportional to the speeds given, each bisection
 * within imbalance ub. */
static int partition(const ugraph *u, int P, const double *speed, double ub, unsigned seed,
                     idx_t *part, pl_err *err)
{
    double ssum = 0, *target = pl_malloc(P * sizeof *target);
    for (int d = 0; d < P; d++)
        ssum += speed[d];
    for (int d = 0; d < P; d++)
        target[d] = speed[d] / ssum;
    bisector B = {u, target, ub, seed, part, pl_malloc((u->n ? u->n : 1) * sizeof(int))};
    int *vs = pl_malloc((u->n ? u->n : 1) * sizeof *vs);
    for (int i = 0; i < u->n; i++)
        vs[i] = i, B.local[i] = -1;
    int rc = split_parts(&B, vs, u->n, 0, P, err);
    free(vs), free(B.local), free(target);
    return rc;
}

/* The recursion for other modules (place.h): METIS's idx_t is 32 bits in Debian's build, as
 * int32_t is, so the caller's arrays are read in place (never written). */
_Static_assert(sizeof(idx_t) == sizeof(int32_t), "METIS built with 64-bit idx_t");
int pl_metis_partition(int n, const int32_t *xadj, const int32_t *adj, const int32_t *vw,
                       const int32_t *aw, int np, double ub, unsigned seed, int32_t *part,
                       pl_err *err)
{
    ugraph u = {n, (idx_t *)xadj, (idx_t *)adj, (idx_t *)vw, (idx_t *)aw, NULL};
    double *equal = pl_malloc((np > 0 ? np : 1) * sizeof *equal);
    for (int p = 0; p < np; p++)
        equal[p] = 1;
    memset(part, 0, (n > 0 ? n : 0) * sizeof *part);
    int rc = np > 1 ? partition(&u, np, equal, ub, seed, (idx_t *)part, err) : 0;
    free(equal);
    return rc;
}

static _Thread_local const double *sort_key; /* qsort has no context argument */

static int by_key_desc(const void *a, const void *b)
{
    int p = *(const int *)a, q = *(const int *)b;
    if (sort_key[p] != sort_key[q]) return sort_key[p] > sort_key[q] ? -1 : 1;
    return p - q;
}

/* Below 2 ops per device a bisection cannot give every part two ops and leaves parts empty,
 * so a small graph uses only its n/2 fastest devices. Fills active[] in
 * index order and their speeds; returns how many. */
static int pick_devices(const double *speed, int D, int n, int *active, double *aspeed)
{
    int P = n / 2 >= D ? D : (n / 2 > 1 ? n / 2 : 1);
    int *order = pl_malloc(D * sizeof *order);
    for (int d = 0; d < D; d++)
        order[d] = d;
    sort_key = speed, pl_sort(order, D, sizeof *order, by_key_desc);
    for (int p = 0; p < P; p++) { /* insertion: back to index order */
        int j = p;
        for (; j > 0 && active[j - 1] > order[p]; j--)
            active[j] = active[j - 1];
        active[j] = order[p];
    }
    for (int p = 0; p < P; p++)
        aspeed[p] = speed[active[p]];
    free(order);
    return P;
}

/* Part p goes to active[p] when the devices are equally fast (keeping METIS's sibling parts on
 * neighbouring device indices); otherwise the k-th heaviest part goes to the k-th fastest. */
static void map_parts(const ugraph *u, int P, const int *active, const double *aspeed,
                      const idx_t *part, int *dev)
{
    double lo = INFINITY, hi = 0;
    for (int p = 0; p < P; p++)
        lo = fmin(lo, aspeed[p]), hi = fmax(hi, aspeed[p]);
    int *to = pl_malloc(P * sizeof *to);
    for (int p = 0; p < P; p++)
        to[p] = active[p];
    if (hi > lo * 1.01) {
        double *w = pl_calloc(P, sizeof *w);
        int *parts = pl_malloc(P * sizeof *parts), *devs = pl_malloc(P * sizeof *devs);
        for (int i = 0; i < u->n; i++)
            w[part[i]] += u->vwgt[i];
        for (int p = 0; p < P; p++)
            parts[p] = devs[p] = p;
        sort_key = w, pl_sort(parts, P, sizeof *parts, by_key_desc);
        sort_key = aspeed, pl_sort(devs, P, sizeof *devs, by_key_desc);
        for (int r = 0; r < P; r++)
            to[parts[r]] = active[devs[r]];
        free(w), free(parts), free(devs);
    }
    for (int i = 0; i < u->n; i++)
        dev[i] = to[part[i]];
    free(to);
}

/* ---- memory repair ---- */

typedef struct repair {
    const pl_cost *k;
    const ugraph *u;
    int *dev;
    pk_mem_track mem;
    double *conn; /* scratch: bytes from one op to each device */
} repair;

static bool over(const repair *R, int d)
{
    return pk_mem_used(&R->mem, d) > pk_dev_cap(R->k, d);
}

static void connections(const repair *R, int op)
{
    memset(R->conn, 0, R->k->n_devs * sizeof *R->conn);
    for (idx_t q = R->u->xadj[op]; q < R->u->xadj[op + 1]; q++)
        R->conn[R->dev[R->u->adjncy[q]]] += R->u->bytes[q];
}

/* The device op would best move to: runs it, has room, most bytes to op; -1 if none. */
static int best_target(const repair *R, int op, int from)
{
    int best = -1;
    connections(R, op);
    for (int e = 0; e < R->k->n_devs; e++) {
        if (e == from || !isfinite(pl_cost_op_s(R->k, op, e))) continue;
        if (!pk_mem_fits(&R->mem, op, e)) continue;
        if (best < 0 || R->conn[e] > R->conn[best]) best = e;
    }
    return best;
}

/* The source's largest working set can only drop when the op holding it leaves. */
static void move(repair *R, int op, int to)
{
    int from = R->dev[op];
    pk_mem_remove(&R->mem, op, from);
    pk_mem_add(&R->mem, op, to);
    R->dev[op] = to;
    if (R->mem.op_ws[op] >= R->mem.wsmax[from]) pk_mem_recompute_ws(&R->mem, R->dev);
}

/* Ops on d ranked by bytes newly cut per byte freed (moving an op frees the weights only it
 * reads there; the op with the largest working set frees part of that). */
static int rank_candidates(repair *R, int d, int *ops, double *key)
{
    int n = 0;
    for (int i = 0; i < R->k->n_ops; i++) {
        if (R->dev[i] != d) continue;
        double freed = pk_mem_freed(&R->mem, i, d);
        if (R->mem.op_ws[i] >= R->mem.wsmax[d]) freed += 1;
        if (freed <= 0) continue;
        connections(R, i);
        double cut = R->conn[d];
        for (int e = 0; e < R->k->n_devs; e++)
            if (e != d) cut -= R->conn[e] / (R->k->n_devs - 1);
        key[i] = -(fmax(cut, 0) + 1) / freed; /* descending key = ascending cost */
        ops[n++] = i;
    }
    sort_key = key, pl_sort(ops, n, sizeof *ops, by_key_desc);
    return n;
}

/* One pass over an over-full device: moves ops in rank order until it fits. */
static int shed(repair *R, int d, int *ops, double *key)
{
    int n = rank_candidates(R, d, ops, key), moved = 0;
    for (int r = 0; r < n && over(R, d); r++) {
        int e = best_target(R, ops[r], d);
        if (e < 0) continue;
        move(R, ops[r], e), moved++;
    }
    return moved;
}

/* Ops on a device that cannot run them go first, to the best device with room. */
static int evict_unrunnable(repair *R, pl_err *err)
{
    for (int i = 0; i < R->k->n_ops; i++) {
        if (isfinite(pl_cost_op_s(R->k, i, R->dev[i]))) continue;
        int e = best_target(R, i, R->dev[i]);
        if (e < 0)
            return pl_err_set(err,
                              "metis: op '%s' cannot run on device '%s' and no other "
                              "device can take it",
                              R->k->g->ops[i].name, R->k->c->devs[R->dev[i]].name);
        move(R, i, e);
    }
    return 0;
}

static int fail_full(const repair *R, int d, pl_err *err)
{
    char a[32], b[32];
    return pl_err_set(err,
                      "metis: device '%s' needs %s of static memory but has %s, and no op "
                      "can move to a device with room",
                      R->k->c->devs[d].name, pl_fmt_bytes(pk_mem_used(&R->mem, d), a, sizeof a),
                      pl_fmt_bytes(pk_dev_cap(R->k, d), b, sizeof b));
}

static int repair_memory(const pl_cost *k, const ugraph *u, int *dev, int *n_moved, pl_err *err)
{
    repair R = {k, u, dev, {0}, pl_malloc(k->n_devs * sizeof(double))};
    int *ops = pl_malloc((k->n_ops ? k->n_ops : 1) * sizeof *ops);
    double *key = pl_malloc((k->n_ops ? k->n_ops : 1) * sizeof *key);
    pk_mem_init(&R.mem, k);
    for (int i = 0; i < k->n_ops; i++)
        pk_mem_add(&R.mem, i, dev[i]);
    int rc = evict_unrunnable(&R, err);
    *n_moved = 0;
    for (int d = 0; d < k->n_devs && rc == 0; d++) {
        while (over(&R, d) && rc == 0) {
            int m = shed(&R, d, ops, key);
            *n_moved += m;
            if (m == 0) rc = fail_full(&R, d, err);
        }
    }
    pk_mem_free(&R.mem), free(R.conn), free(ops), free(key);
    return rc;
}

static int split(const pl_cost *k, const pl_place_opts *o, const ugraph *u, int *dev, pl_err *err)
{
    int D = k->n_devs, *active = pl_malloc(D * sizeof *active);
    double *speed = pl_malloc(D * sizeof *speed), *aspeed = pl_malloc(D * sizeof *aspeed);
    idx_t *part = pl_calloc(k->n_ops ? k->n_ops : 1, sizeof *part);
    device_speeds(k, speed);
    int P = pick_devices(speed, D, k->n_ops, active, aspeed), rc = 0;
    if (P > 1) rc = partition(u, P, aspeed, 1.03, o ? o->seed : 0, part, err);
    if (rc == 0) map_parts(u, P, active, aspeed, part, dev);
    free(active), free(speed), free(aspeed), free(part);
    return rc;
}

int pl_place_metis(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    int moved = 0;
    if (lp_check_runnable(k, "metis", err) < 0) return -1;
    ugraph u = {0};
    ugraph_build(k, &u);
    ugraph_weights(k, &u);
    int rc = split(k, o, &u, out->dev, err);
    if (rc == 0) rc = repair_memory(k, &u, out->dev, &moved, err);
    if (rc == 0) rc = lp_check_memory(k, out->dev, "metis", err);
    if (rc == 0) {
        pl_plan_clear_order(out);
        out->contention = o ? o->contention : PL_CONTENTION_PORTS;
        snprintf(out->algo, sizeof out->algo, "metis");
        if (moved > 0)
            lp_warn(err, "metis: warning: %d ops moved off over-full devices after partitioning",
                    moved);
    }
    ugraph_free(&u);
    return rc;
}
