/* groups.c: TAG's device groups and op groups (docs/train.md, "Device groups", "Op groups").
 *
 * Device groups: the GPUs of one model on one host whose links to each other are alike. Op
 * groups: the training graph cut by METIS into at most 60 parts of balanced time with few
 * bytes between them, each optimizer op then moved to its gradient's producer's group. */
#include "placer/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device groups ---- */

/* Two routes are alike within 5 %: measured matrices (MOIRAI Table III) differ by 2 % between
 * the two directions of one link. Latency also within 1 ns (equal zeros). */
#define ALIKE_REL 0.05

static bool close_to(double a, double b, double abs_tol)
{
    return fabs(a - b) <= ALIKE_REL * fmax(fabs(a), fabs(b)) + abs_tol;
}

/* Both directions of the route a-b alike the route ref_a -> ref_b. */
static bool alike(const pl_cluster *c, int a, int b, int ra, int rb)
{
    int n = c->n_devs;
    size_t r = (size_t)ra * n + rb, x = (size_t)a * n + b, y = (size_t)b * n + a;
    return close_to(c->bw_Bps[x], c->bw_Bps[r], 0) && close_to(c->bw_Bps[y], c->bw_Bps[r], 0) &&
           close_to(c->lat_s[x], c->lat_s[r], 1e-9) && close_to(c->lat_s[y], c->lat_s[r], 1e-9);
}

static bool trains_on(const pl_device *d)
{
    return d->kind == PL_DEV_GPU || d->kind == PL_DEV_ACCEL;
}

static bool same_box(const pl_device *a, const pl_device *b)
{
    return a->host[0] && !strcmp(a->host, b->host) && !strcmp(a->model, b->model);
}

/* The pair of ungrouped devices of d's box with the widest route (slower direction), then the
 * lowest latency, then the lowest indices; *pb = -1 when d is alone. */
static void fastest_pair(const pl_cluster *c, const int *gof, int d, int *pa, int *pb)
{
    int n = c->n_devs;
    double best_bw = -1, best_lat = 0;
    *pa = d, *pb = -1;
    for (int a = d; a < n; a++) {
        if (gof[a] != -2 || !same_box(&c->devs[a], &c->devs[d])) continue;
        for (int b = a + 1; b < n; b++) {
            if (gof[b] != -2 || !same_box(&c->devs[b], &c->devs[d])) continue;
            double bw = fmin(c->bw_Bps[(size_t)a * n + b], c->bw_Bps[(size_t)b * n + a]);
            double lat = fmax(c->lat_s[(size_t)a * n + b], c->lat_s[(size_t)b * n + a]);
            if (bw > best_bw || (bw == best_bw && lat < best_lat))
                best_bw = bw, best_lat = lat, *pa = a, *pb = b;
        }
    }
}

/* Seeds group j with the box's fastest pair and adds, in index order, every other ungrouped
 * device of the box whose routes to all members are alike the seed's. */
static void grow(const pl_cluster *c, int *gof, int d, int j)
{
    int a, b;
    fastest_pair(c, gof, d, &a, &b);
    gof[a] = j;
    if (b < 0) return;
    gof[b] = j;
    for (int e = d; e < c->n_devs; e++) {
        if (gof[e] != -2 || !same_box(&c->devs[e], &c->devs[d])) continue;
        bool ok = true;
        for (int m = d; m < c->n_devs && ok; m++)
            if (gof[m] == j) ok = alike(c, e, m, a, b);
        if (ok) gof[e] = j;
    }
}

/* Group numbers in order of each group's first device, and the CSR. */
static void dev_groups_index(pl_dev_groups *out, int n_devs, int ng)
{
    int *renum = pl_malloc(ng * sizeof *renum), k = 0;
    for (int j = 0; j < ng; j++)
        renum[j] = -1;
    for (int d = 0; d < n_devs; d++)
        if (out->group_of[d] >= 0 && renum[out->group_of[d]] < 0) renum[out->group_of[d]] = k++;
    out->n = ng;
    out->off = pl_calloc(ng + 1, sizeof *out->off);
    out->dev = pl_malloc(n_devs * sizeof *out->dev);
    for (int d = 0; d < n_devs; d++)
        if (out->group_of[d] >= 0) out->off[(out->group_of[d] = renum[out->group_of[d]]) + 1]++;
    for (int j = 0; j < ng; j++)
        out->off[j + 1] += out->off[j];
    int *fill = pl_malloc(ng * sizeof *fill);
    memcpy(fill, out->off, ng * sizeof *fill);
    for (int d = 0; d < n_devs; d++)
        if (out->group_of[d] >= 0) out->dev[fill[out->group_of[d]]++] = d;
    free(fill), free(renum);
}

int pl_dev_groups_build(const pl_cluster *c, pl_dev_groups *out, pl_err *err)
{
    memset(out, 0, sizeof *out);
    int n = c->n_devs, ng = 0;
    int *gof = pl_malloc((n ? n : 1) * sizeof *gof);
    for (int d = 0; d < n; d++)
        gof[d] = trains_on(&c->devs[d]) ? -2 : -1; /* -2: not grouped yet */
    for (int d = 0; d < n; d++) {
        if (gof[d] == -2 && !c->devs[d].host[0]) gof[d] = ng++; /* no host: its own group */
        while (gof[d] == -2) /* the box's fastest pair may leave d for a later group */
            grow(c, gof, d, ng++);
    }
    if (ng == 0) {
        free(gof);
        return pl_err_set(err,
                          "%s: devices: no GPU or accelerator among its %d devices: training "
                          "runs on GPUs only",
                          c->path ? c->path : c->name, n);
    }
    out->group_of = gof;
    dev_groups_index(out, n, ng);
    return 0;
}

void pl_dev_groups_free(pl_dev_groups *d)
{
    if (!d) return;
    free(d->off), free(d->dev), free(d->group_of);
    memset(d, 0, sizeof *d);
}

/* ---- op groups ---- */

/* METIS sums weights in 32-bit integers: each total is scaled to this. */
#define WEIGHT_TOTAL 5e8
#define DEFAULT_GROUPS 60

/* The op's mean time over the GPUs and accelerators of k's cluster (its other devices when it
 * has none); 0 when none can run it. */
static double mean_time(const pl_cost *k, int op)
{
    bool any_gpu = false;
    for (int d = 0; d < k->n_devs; d++)
        any_gpu |= trains_on(&k->c->devs[d]);
    double sum = 0;
    int m = 0;
    for (int d = 0; d < k->n_devs; d++) {
        double t = pl_cost_op_s(k, op, d);
        if ((!any_gpu || trains_on(&k->c->devs[d])) && isfinite(t)) sum += t, m++;
    }
    return m ? sum / m : 0;
}

/* The undirected op graph in METIS's CSR: g->edges are sorted by (src, dst), so the tensors
 * between two ops are consecutive; a DAG has no pair in both directions. bytes[q] per entry. */
typedef struct opgraph {
    int32_t *xadj, *adj, *vw, *aw;
    double *bytes;
} opgraph;

static void opgraph_free(opgraph *u)
{
    free(u->xadj), free(u->adj), free(u->vw), free(u->aw), free(u->bytes);
}

static double tensor_bytes(const pl_graph *g, int t)
{
    return g->tensors[t].bytes > 0 ? (double)g->tensors[t].bytes : 0;
}

static void opgraph_build(const pl_graph *g, opgraph *u)
{
    int n = g->n_ops, m = 0;
    int *a = pl_malloc((g->n_edges ? g->n_edges : 1) * sizeof *a);
    int *b = pl_malloc((g->n_edges ? g->n_edges : 1) * sizeof *b);
    double *w = pl_malloc((g->n_edges ? g->n_edges : 1) * sizeof *w);
    for (int e = 0; e < g->n_edges; e++) { /* distinct op pairs, bytes summed */
        const pl_edge *x = &g->edges[e];
        if (x->src == x->dst) continue;
        if (m > 0 && a[m - 1] == x->src && b[m - 1] == x->dst)
            w[m - 1] += tensor_bytes(g, x->tensor);
        else
            a[m] = x->src, b[m] = x->dst, w[m++] = tensor_bytes(g, x->tensor);
    }
    u->xadj = pl_calloc(n + 1, sizeof *u->xadj);
    for (int q = 0; q < m; q++)
        u->xadj[a[q] + 1]++, u->xadj[b[q] + 1]++;
    for (int i = 0; i < n; i++)
        u->xadj[i + 1] += u->xadj[i];
    u->adj = pl_malloc((m > 0 ? 2 * m : 1) * sizeof *u->adj);
    u->bytes = pl_malloc((m > 0 ? 2 * m : 1) * sizeof *u->bytes);
    int *fill = pl_malloc((n ? n : 1) * sizeof *fill);
    memcpy(fill, u->xadj, n * sizeof *fill);
    for (int q = 0; q < m; q++) {
        u->adj[fill[a[q]]] = b[q], u->bytes[fill[a[q]]++] = w[q];
        u->adj[fill[b[q]]] = a[q], u->bytes[fill[b[q]]++] = w[q];
    }
    free(fill), free(a), free(b), free(w);
}

/* Integer weights: shares of the total scaled to WEIGHT_TOTAL, at least 1 (METIS wants
 * positive weights). */
static int32_t *scaled(const double *x, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    int32_t *w = pl_malloc((n ? n : 1) * sizeof *w);
    for (int i = 0; i < n; i++)
        w[i] = 1 + (int32_t)(sum > 0 ? x[i] / sum * WEIGHT_TOTAL : 0);
    return w;
}

/* Each bisection's imbalance so that the recursion's compounds to TAG's factor 2: a part of
 * np weighs at most 2 x its share after ceil(log2 np) bisections. */
static double bisection_ub(int np)
{
    int levels = 0;
    while ((1 << levels) < np)
        levels++;
    return levels ? pow(2.0, 1.0 / levels) : 2.0;
}

/* An optimizer op goes where its gradient is made: the update's inputs (the gradient, the
 * moments) then never cross groups, and a replicated group syncs the gradient it holds. */
static void follow_gradients(const pl_train_graph *t, int32_t *part)
{
    for (int p = 0; p < t->n_params; p++) {
        int apply = t->apply_op[p], grad = t->grad_tensor[p];
        int src = grad >= 0 ? t->g->tensors[grad].producer : -1;
        if (apply >= 0 && src >= 0) part[apply] = part[src];
    }
}

/* Dense numbers in order of each group's first op in topological order; the CSR in
 * topological order; times and parameter bytes. */
static void op_groups_index(const pl_train_graph *t, const double *time, const int32_t *part,
                            int np, pl_op_groups *out)
{
    const pl_graph *g = t->g;
    int n = g->n_ops, k = 0, *renum = pl_malloc((np ? np : 1) * sizeof *renum);
    for (int p = 0; p < np; p++)
        renum[p] = -1;
    out->group_of = pl_malloc((n ? n : 1) * sizeof *out->group_of);
    for (int r = 0; r < n; r++) {
        int i = g->topo[r];
        if (renum[part[i]] < 0) renum[part[i]] = k++;
        out->group_of[i] = renum[part[i]];
    }
    out->n = k;
    out->off = pl_calloc(k + 1, sizeof *out->off);
    out->op = pl_malloc((n ? n : 1) * sizeof *out->op);
    out->time_s = pl_calloc(k ? k : 1, sizeof *out->time_s);
    out->param_bytes = pl_calloc(k ? k : 1, sizeof *out->param_bytes);
    for (int i = 0; i < n; i++)
        out->off[out->group_of[i] + 1]++, out->time_s[out->group_of[i]] += time[i];
    for (int j = 0; j < k; j++)
        out->off[j + 1] += out->off[j];
    int *fill = pl_malloc((k ? k : 1) * sizeof *fill);
    memcpy(fill, out->off, k * sizeof *fill);
    for (int r = 0; r < n; r++)
        out->op[fill[out->group_of[g->topo[r]]]++] = g->topo[r];
    for (int p = 0; p < t->n_params; p++)
        if (t->apply_op[p] >= 0 && t->param_tensor[p] >= 0)
            out->param_bytes[out->group_of[t->apply_op[p]]] += tensor_bytes(g, t->param_tensor[p]);
    free(fill), free(renum);
}

int pl_op_groups_build(const pl_train_graph *t, const pl_cost *k, int max_groups, pl_op_groups *out,
                       pl_err *err)
{
    memset(out, 0, sizeof *out);
    const pl_graph *g = t->g;
    int n = g->n_ops;
    if (max_groups < 0)
        return pl_err_set(err,
                          "op groups: at most %d groups asked: give a positive number "
                          "(0: the default, %d)",
                          max_groups, DEFAULT_GROUPS);
    if (n == 0) return pl_err_set(err, "op groups: the training graph '%s' has no op", g->name);
    int np = max_groups ? max_groups : DEFAULT_GROUPS;
    if (np > n) np = n;
    double *time = pl_malloc(n * sizeof *time);
    for (int i = 0; i < n; i++)
        time[i] = mean_time(k, i);
    opgraph u = {0};
    opgraph_build(g, &u);
    u.vw = scaled(time, n);
    u.aw = scaled(u.bytes, u.xadj[n]);
    int32_t *part = pl_malloc(n * sizeof *part);
    int rc = pl_metis_partition(n, u.xadj, u.adj, u.vw, u.aw, np, bisection_ub(np), 0, part, err);
    if (rc == 0) {
        follow_gradients(t, part);
        op_groups_index(t, time, part, np, out);
    }
    opgraph_free(&u), free(part), free(time);
    return rc;
}

void pl_op_groups_free(pl_op_groups *g)
{
    if (!g) return;
    free(g->group_of), free(g->off), free(g->op), free(g->time_s), free(g->param_bytes);
    memset(g, 0, sizeof *g);
}
