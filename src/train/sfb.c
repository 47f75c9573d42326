/* sfb.c: TAG-SFB, sufficient factor broadcasting chosen by an integer program (docs/train.md,
 * "SFB").
 *
 * A replicated gradient g -> l is summed across its D replicas each iteration. When the
 * tensors that g is computed from are smaller than g (a Dense layer's gradient from its input
 * and its output gradient), broadcasting those and letting every replica recompute the same
 * whole gradient ("duplicate") costs less. The ILP picks the ops to duplicate, alpha_i, and the
 * tensors that then cross the cut, b_ji, over g's ancestors inside its op group:
 *
 *   min (D-1) sum alpha_i T_i + D(D-1) sum b_ji L_ji / tau - 2 alpha_g (D-1)/D L_gl / tau
 *   s.t. alpha_k <= sum_{(k,i) in E} alpha_i   for every k but g (a duplicated op feeds one)
 *        b_ji >= alpha_i - alpha_j            (a tensor from a replicated op to a duplicated)
 *
 * T_i is the op's time on its replica's share of the batch, L_ji the shard a replica holds,
 * tau the bottleneck bandwidth among the replicas. A tensor from outside the subgraph has
 * alpha_j = 0. CBC solves it (each is small: an op group's ancestors of one gradient); the
 * solution is applied when its objective is negative. */
#include "placer/dist.h"
#include "placer/train.h"
#include "train_internal.h"

#include <Cbc_C_Interface.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SFB_LIMIT_S 10.0 /* CBC's limit (CPU time, its default clock) on one program */
#define SFB_WHY 160      /* bytes of a failed solve's reason, carried with its map item */

/* Runs in the solver's child process (common.h, "Isolated solves"): CBC 2.10 can crash. */
static void cbc_child(void *ctx, pl_solve_answer *a)
{
    Cbc_Model *m = ctx;
    Cbc_setMaximumSeconds(m, SFB_LIMIT_S);
    Cbc_solve(m);
    bool opt = Cbc_isProvenOptimal(m);
    a->status = opt ? PL_SOLVE_OPTIMAL : PL_SOLVE_STOPPED;
    a->obj = opt ? Cbc_getObjValue(m) : INFINITY;
    a->bound = -INFINITY;
    if (opt) memcpy(a->x, Cbc_getColSolution(m), (size_t)a->n * sizeof *a->x);
}

/* The first n columns of the optimum as alpha, and its objective. */
static int solve(Cbc_Model *m, int n, unsigned char *alpha, double *obj, char *why, size_t cap)
{
    pl_solve_answer a = {.n = Cbc_getNumCols(m)};
    a.x = pl_malloc((size_t)a.n * sizeof *a.x);
    int rc = pl_solve_isolated(cbc_child, m, SFB_LIMIT_S, 0, &a, why, cap);
    if (rc == 0 && a.status != PL_SOLVE_OPTIMAL)
        rc = -1, snprintf(why, cap, "proved no optimum within its limit of %g s", SFB_LIMIT_S);
    for (int i = 0; rc == 0 && i < n; i++)
        alpha[i] = a.x[i] > 0.5;
    if (rc == 0) *obj = a.obj;
    free(a.x);
    return rc;
}

/* Columns: alpha_0..alpha_{n-1}, then b_0..b_{m-1}. Rows: one per k != g (alpha_k - sum of its
 * consumers' alpha <= 0), one per edge (alpha_i - alpha_j - b <= 0, alpha_j absent when -1). */
int tr_sfb_solve(const tr_sfb *p, unsigned char *alpha, double *obj, char *why, size_t cap)
{
    int n = p->n, m = p->m, nc = n + m, nr = 0;
    int *start = pl_calloc((size_t)nc + 1, sizeof *start);
    int n_rows_k = 0;
    int *row_of_k = pl_malloc((size_t)n * sizeof *row_of_k);
    for (int k = 0; k < n; k++)
        row_of_k[k] = k == p->g ? -1 : n_rows_k++;
    nr = n_rows_k + m;
    /* entries (column, row, value), then laid out column by column */
    typedef struct ent {
        int c, r;
        double v;
    } ent;
    ent *es = pl_malloc((size_t)(n + 4 * m + 1) * sizeof *es);
    int ne = 0;
    for (int k = 0; k < n; k++)
        if (row_of_k[k] >= 0) es[ne++] = (ent){k, row_of_k[k], 1};
    for (int e = 0; e < m; e++) {
        int j = p->from[e], i = p->to[e];
        if (j >= 0 && row_of_k[j] >= 0) es[ne++] = (ent){i, row_of_k[j], -1}; /* consumer of j */
        int r = n_rows_k + e;
        es[ne++] = (ent){i, r, 1};
        if (j >= 0) es[ne++] = (ent){j, r, -1};
        es[ne++] = (ent){n + e, r, -1};
    }
    for (int a = 0; a < ne; a++)
        start[es[a].c + 1]++;
    for (int c = 0; c < nc; c++)
        start[c + 1] += start[c];
    int *fill = pl_malloc((size_t)nc * sizeof *fill);
    memcpy(fill, start, (size_t)nc * sizeof *fill);
    int *row = pl_malloc((size_t)ne * sizeof *row);
    double *val = pl_malloc((size_t)ne * sizeof *val);
    for (int a = 0; a < ne; a++) {
        int at = fill[es[a].c]++;
        row[at] = es[a].r, val[at] = es[a].v;
    }
    double *lb = pl_calloc((size_t)nc + 1, sizeof *lb), *ub = pl_malloc((size_t)nc * sizeof *ub);
    double *c = pl_calloc((size_t)nc + 1, sizeof *c);
    double *rlb = pl_malloc((size_t)nr * sizeof *rlb),
           *rub = pl_calloc((size_t)nr + 1, sizeof *rub);
    for (int k = 0; k < nc; k++)
        ub[k] = 1;
    for (int r = 0; r < nr; r++)
        rlb[r] = -INFINITY;
    int D = p->D;
    for (int i = 0; i < n; i++)
        c[i] = (D - 1) * p->time_s[i];
    c[p->g] -= 2.0 * (D - 1) / D * p->grad_bytes / p->tau;
    for (int e = 0; e < m; e++)
        c[n + e] = (double)D * (D - 1) * p->bytes[e] / p->tau;
    Cbc_Model *model = Cbc_newModel();
    Cbc_setLogLevel(model, 0);
    Cbc_loadProblem(model, nc, nr, start, row, val, lb, ub, c, rlb, rub);
    for (int k = 0; k < nc; k++)
        Cbc_setInteger(model, k);
    free(start), free(row), free(val), free(row_of_k), free(es), free(fill);
    free(lb), free(ub), free(c), free(rlb), free(rub);
    int rc = solve(model, n, alpha, obj, why, cap);
    Cbc_deleteModel(model);
    return rc;
}

/* ---- one gradient of a strategy ---- */

/* The bottleneck bandwidth among the devices of op group i (bytes per second). */
static double bottleneck(const pl_train_ctx *x, const pl_train_strategy *s, int i, int *D)
{
    double worst = INFINITY;
    *D = 0;
    for (int j = 0; j < x->dg.n; j++)
        if (s->P[(size_t)i * x->dg.n + j]) *D += x->dg.off[j + 1] - x->dg.off[j];
    for (int ja = 0; ja < x->dg.n; ja++)
        for (int jb = 0; jb < x->dg.n; jb++) {
            if (!s->P[(size_t)i * x->dg.n + ja] || !s->P[(size_t)i * x->dg.n + jb]) continue;
            for (int a = x->dg.off[ja]; a < x->dg.off[ja + 1]; a++)
                for (int b = x->dg.off[jb]; b < x->dg.off[jb + 1]; b++) {
                    if (x->dg.dev[a] == x->dg.dev[b]) continue;
                    double t = pl_cluster_xfer_s(x->c, x->dg.dev[a], x->dg.dev[b], 1e9);
                    worst = fmin(worst, t > 0 ? 1e9 / t : INFINITY);
                }
        }
    return worst;
}

/* g's ancestors within its op group (g included), in topological order; their count. */
static int ancestors(const pl_train_ctx *x, int g, int *v, int *local)
{
    const pl_graph *tg = x->t->g;
    int grp = x->og.group_of[g], n = 0;
    local[g] = -2; /* marked */
    int head = 0;
    v[n++] = g;
    while (head < n) {
        int u = v[head++];
        for (int e = tg->pred_off[u]; e < tg->pred_off[u + 1]; e++) {
            int w = tg->pred[e];
            if (x->og.group_of[w] != grp || local[w] == -2) continue;
            if (x->t->phase[w] == PL_PHASE_OPT) continue;
            local[w] = -2, v[n++] = w;
        }
    }
    for (int a = 1; a < n; a++) /* topological order */
        for (int b = a; b > 0 && tg->topo_pos[v[b]] < tg->topo_pos[v[b - 1]]; b--) {
            int t = v[b];
            v[b] = v[b - 1], v[b - 1] = t;
        }
    for (int a = 0; a < n; a++)
        local[v[a]] = a;
    return n;
}

/* Builds and solves the ILP for parameter p; sets mark[op] (one per training op) for its
 * chosen ops when it saves. It reads s's P and O only, so parameters can be solved apart. -1
 * with why (SFB_WHY bytes) when the solver failed. */
static int sfb_param(const pl_train_ctx *x, const pl_train_strategy *s, int p, int *local, int *v,
                     unsigned char *mark, bool *applied, char *why)
{
    const pl_train_graph *t = x->t;
    const pl_graph *tg = t->g;
    *applied = false;
    int g = tg->tensors[t->grad_tensor[p]].producer;
    if (g < 0) return 0;
    int i = x->og.group_of[g], D;
    if (s->O[i] != PL_OPT_ALLREDUCE && s->O[i] != PL_OPT_PS) return 0;
    double tau = bottleneck(x, s, i, &D);
    if (D < 2 || !isfinite(tau)) return 0;
    int n = ancestors(x, g, v, local);
    tr_sfb q = {.n = n, .g = local[g], .D = D, .tau = tau};
    q.grad_bytes =
        tg->tensors[t->grad_tensor[p]].bytes > 0 ? (double)tg->tensors[t->grad_tensor[p]].bytes : 0;
    q.time_s = pl_malloc((size_t)n * sizeof *q.time_s);
    for (int a = 0; a < n; a++) {
        int u = v[a];
        double f = t->batch_frac[u], tu = x->k->op_s[(size_t)u * x->k->n_devs + x->dg.dev[0]];
        q.time_s[a] = tu * (f / D + 1 - f);
        const pl_op *o = &tg->ops[u];
        for (int k = 0; k < o->n_inputs; k++) /* activation inputs only: weights are local */
            q.m += o->inputs[k] >= 0 && !(tg->tensors[o->inputs[k]].flags & PL_TENSOR_WEIGHT);
    }
    q.from = pl_malloc((size_t)q.m * sizeof *q.from);
    q.to = pl_malloc((size_t)q.m * sizeof *q.to);
    q.bytes = pl_malloc((size_t)q.m * sizeof *q.bytes);
    q.m = 0;
    for (int a = 0; a < n; a++) {
        const pl_op *o = &tg->ops[v[a]];
        for (int k = 0; k < o->n_inputs; k++) {
            int tt = o->inputs[k];
            if (tt < 0 || (tg->tensors[tt].flags & PL_TENSOR_WEIGHT)) continue;
            int w = tg->tensors[tt].producer;
            double b = tg->tensors[tt].bytes > 0 ? (double)tg->tensors[tt].bytes : 0;
            q.from[q.m] = w >= 0 && local[w] >= 0 ? local[w] : -1;
            q.to[q.m] = a;
            q.bytes[q.m++] = t->batched[tt] ? b / D : b;
        }
    }
    unsigned char *alpha = pl_calloc((size_t)n + 1, 1);
    double obj = 0;
    int rc = tr_sfb_solve(&q, alpha, &obj, why, SFB_WHY);
    if (rc == 0 && obj < -1e-12 && alpha[q.g]) {
        for (int a = 0; a < n; a++)
            if (alpha[a]) mark[v[a]] = 1;
        *applied = true;
    }
    for (int a = 0; a < n; a++)
        local[v[a]] = -1;
    free(alpha), free(q.time_s), free(q.from), free(q.to), free(q.bytes);
    return rc;
}

/* Parameter p as an item of a map: [solved, applied, why the solver failed (SFB_WHY bytes),
 * then mark, one byte per training op]. */
typedef struct {
    const pl_train_ctx *x;
    const pl_train_strategy *s;
    int *local, *v; /* scratch: a rank runs its items one after the other */
} sfb_job;

static void sfb_item(int p, void *out, void *user)
{
    sfb_job *j = user;
    unsigned char *o = out;
    bool applied = false;
    memset(o, 0, 2 + SFB_WHY + (size_t)j->x->t->g->n_ops);
    o[0] = sfb_param(j->x, j->s, p, j->local, j->v, o + 2 + SFB_WHY, &applied, (char *)o + 2) == 0;
    o[1] = applied;
}

/* The parameters' programs are independent (sfb_param), so they are the items of one map (on
 * the pool of MPI ranks with x->dist); their choices are then merged in parameter order. */
int pl_train_sfb(const pl_train_ctx *x, pl_train_strategy *s, pl_err *err)
{
    int n_ops = x->t->g->n_ops, n_params = x->t->n_params, count = 0, rc = 0;
    size_t size = 2 + SFB_WHY + (size_t)n_ops;
    if (!s->sfb) {
        s->sfb = pl_calloc((size_t)n_ops + 1, 1);
        s->n_sfb = n_ops;
    }
    sfb_job j = {x, s, pl_malloc((size_t)n_ops * sizeof(int)),
                 pl_malloc((size_t)n_ops * sizeof(int))};
    for (int i = 0; i < n_ops; i++)
        j.local[i] = -1;
    unsigned char *all = pl_malloc((size_t)n_params * size + 1);
    if (pl_dist_map_or_here(x->dist, n_params, sfb_item, all, size, &j) < 0)
        rc = pl_err_set(err, "train: gathering SFB's programs from the MPI ranks failed: %s",
                        pl_dist_error());
    for (int p = 0; rc == 0 && p < n_params; p++) {
        const unsigned char *o = all + (size_t)p * size;
        if (!o[0])
            rc = pl_err_set(err, "train: SFB's integer program for parameter '%s': the solver %.*s",
                            x->t->g->tensors[x->t->param_tensor[p]].name, SFB_WHY,
                            (const char *)o + 2);
        for (int u = 0; rc == 0 && u < n_ops; u++)
            s->sfb[u] |= o[2 + SFB_WHY + u];
        count += o[1];
    }
    free(all), free(j.local), free(j.v);
    return rc < 0 ? -1 : count;
}
