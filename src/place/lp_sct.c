/* lp_sct.c: favourite children from the SCT linear program (Hanen & Munier), solved by Clp.
 *
 * LP (docs/placement-lp.md has it with the reasoning): for every edge i → j a variable
 * x_ij in [0,1] ("i and j are apart"), a start s_i >= 0 per op and the makespan w:
 *     min w
 *     s_i + p_i + c_ij x_ij <= s_j          every edge
 *     sum_j x_ij >= outdeg(i) - 1            at most one favourite child
 *     sum_i x_ij >= indeg(j) - 1             at most one favourite parent
 *     s_i + p_i <= w                         every sink
 * and j is i's favourite child when x_ij < 0.5.
 *
 * Chains are contracted first: on an edge u → v where u has one child and v one parent,
 * x_uv appears only in its precedence row, so x_uv = 0 and s_v = s_u + p_u are optimal; the
 * chain becomes one LP node with the summed time. This is exact (same optimum, same
 * favourites) and removes 15 % (unrolled RNNs) to 70 % (CNNs) of the ops. Only sinks need a
 * makespan row: every other op's end is bounded by a successor's start. */
#include "lp_sct.h"
#include "lp_common.h"

#include <Clp_C_Interface.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *lp_sct_status_name(lp_sct_status s)
{
    static const char *names[] = {"optimal",    "trivial", "too big",
                                  "time limit", "failed",  "solver crashed"};
    return s >= LP_SCT_OPTIMAL && s <= LP_SCT_CRASHED ? names[s] : "?";
}

/* Distinct (producer, consumer) pairs, CSR by producer, with the mean time to move all the
 * tensors of the pair between two distinct devices. */
typedef struct pairs {
    int n_ops, n;
    int *off, *dst;
    double *c_s;
    int *indeg, *outdeg, *single_pred;
} pairs;

static void pairs_free(pairs *P)
{
    free(P->off), free(P->dst), free(P->c_s), free(P->indeg), free(P->outdeg);
    free(P->single_pred);
}

/* g->edges is sorted by src then dst, so a pair's tensors are consecutive. */
static void pairs_build(const pl_cost *k, pairs *P)
{
    const pl_graph *g = k->g;
    pk_route r = pk_mean_route(k->c);
    bool apart = k->n_devs > 1;
    P->n_ops = g->n_ops;
    P->off = pl_calloc(g->n_ops + 1, sizeof *P->off);
    P->dst = pl_malloc((g->n_edges ? g->n_edges : 1) * sizeof *P->dst);
    P->c_s = pl_malloc((g->n_edges ? g->n_edges : 1) * sizeof *P->c_s);
    P->indeg = pl_calloc(g->n_ops, sizeof *P->indeg);
    P->outdeg = pl_calloc(g->n_ops, sizeof *P->outdeg);
    P->single_pred = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof *P->single_pred);
    int n = 0;
    for (int e = 0; e < g->n_edges; e++) {
        const pl_edge *x = &g->edges[e];
        double c = apart ? pk_mean_xfer_s(k, r, x->tensor) : 0;
        if (n > 0 && e > 0 && g->edges[e - 1].src == x->src && g->edges[e - 1].dst == x->dst) {
            P->c_s[n - 1] += c;
            continue;
        }
        P->dst[n] = x->dst, P->c_s[n] = c, n++;
        P->off[x->src + 1]++;
        P->outdeg[x->src]++;
        P->indeg[x->dst]++;
        P->single_pred[x->dst] = x->src;
    }
    for (int i = 0; i < g->n_ops; i++)
        P->off[i + 1] += P->off[i];
    P->n = n;
}

/* Maximal chains; chain_of[op], with each chain's total time, head and tail. */
typedef struct chains {
    int n;
    int *of, *head, *tail;
    double *time_s;
} chains;

static void chains_free(chains *C)
{
    free(C->of), free(C->head), free(C->tail), free(C->time_s);
}

static void chains_build(const pl_cost *k, const pairs *P, const double *p_s, int *fav, chains *C)
{
    const pl_graph *g = k->g;
    int n = g->n_ops ? g->n_ops : 1;
    C->of = pl_malloc(n * sizeof *C->of);
    C->head = pl_malloc(n * sizeof *C->head);
    C->tail = pl_malloc(n * sizeof *C->tail);
    C->time_s = pl_calloc(n, sizeof *C->time_s);
    C->n = 0;
    for (int t = 0; t < g->n_ops; t++) {
        int v = g->topo[t];
        int u = P->indeg[v] == 1 ? P->single_pred[v] : -1;
        if (u >= 0 && P->outdeg[u] == 1) {
            int c = C->of[v] = C->of[u];
            C->tail[c] = v;
            fav[u] = v; /* exact: x_uv = 0 is optimal */
        } else {
            C->of[v] = C->n;
            C->head[C->n] = C->tail[C->n] = v;
            C->n++;
        }
        C->time_s[C->of[v]] += p_s[v];
    }
}

/* The LP in CSC form for Clp_loadProblem. Columns: x_e (E), s_chain (n), w (1). */
typedef struct lp {
    int n_cols, n_rows, nz, cap;
    int *tcol, *trow;
    double *tval;
    double *collb, *colub, *obj, *rowlb, *rowub;
} lp;

static void lp_free(lp *L)
{
    free(L->tcol), free(L->trow), free(L->tval);
    free(L->collb), free(L->colub), free(L->obj), free(L->rowlb), free(L->rowub);
}

static void put(lp *L, int col, int row, double v)
{
    L->tcol[L->nz] = col, L->trow[L->nz] = row, L->tval[L->nz] = v;
    L->nz++;
}

static int add_row(lp *L, double lo, double hi)
{
    L->rowlb[L->n_rows] = lo, L->rowub[L->n_rows] = hi;
    return L->n_rows++;
}

/* LP edges are pairs between chains: (tail of A) → (head of B). */
typedef struct lpe {
    int n, *src, *dst, *a, *b;
    double *c;
} lpe;

static void lpe_free(lpe *E)
{
    free(E->src), free(E->dst), free(E->a), free(E->b), free(E->c);
}

static void lpe_build(const pairs *P, const chains *C, lpe *E)
{
    int m = P->n ? P->n : 1;
    E->src = pl_malloc(m * sizeof *E->src), E->dst = pl_malloc(m * sizeof *E->dst);
    E->a = pl_malloc(m * sizeof *E->a), E->b = pl_malloc(m * sizeof *E->b);
    E->c = pl_malloc(m * sizeof *E->c);
    E->n = 0;
    for (int u = 0; u < P->n_ops; u++)
        for (int q = P->off[u]; q < P->off[u + 1]; q++) {
            int v = P->dst[q];
            if (C->of[u] == C->of[v]) continue;
            int e = E->n++;
            E->src[e] = u, E->dst[e] = v, E->a[e] = C->of[u], E->b[e] = C->of[v];
            E->c[e] = P->c_s[q];
        }
}

/* Times are scaled so the largest coefficient is 1000: seconds (1e-6 .. 1e-1) would sit
 * near Clp's absolute tolerances. */
static double time_unit(const chains *C, const lpe *E)
{
    double mx = 0;
    for (int a = 0; a < C->n; a++)
        mx = fmax(mx, C->time_s[a]);
    for (int e = 0; e < E->n; e++)
        mx = fmax(mx, E->c[e]);
    return mx > 0 ? mx / 1000 : 1;
}

static void lp_build(const chains *C, const lpe *E, double unit, lp *L)
{
    int nc = C->n, ne = E->n;
    int *out = pl_calloc(nc, sizeof *out), *in = pl_calloc(nc, sizeof *in);
    for (int e = 0; e < ne; e++)
        out[E->a[e]]++, in[E->b[e]]++;
    memset(L, 0, sizeof *L);
    L->n_cols = ne + nc + 1;
    int max_rows = ne + 3 * nc, w = ne + nc;
    L->cap = 5 * ne + 2 * nc;
    L->tcol = pl_malloc((L->cap ? L->cap : 1) * sizeof *L->tcol);
    L->trow = pl_malloc((L->cap ? L->cap : 1) * sizeof *L->trow);
    L->tval = pl_malloc((L->cap ? L->cap : 1) * sizeof *L->tval);
    L->rowlb = pl_malloc(max_rows * sizeof *L->rowlb);
    L->rowub = pl_malloc(max_rows * sizeof *L->rowub);
    for (int e = 0; e < ne; e++) { /* s_A - s_B + c x <= -P_A */
        int r = add_row(L, -DBL_MAX, -C->time_s[E->a[e]] / unit);
        put(L, ne + E->a[e], r, 1), put(L, ne + E->b[e], r, -1);
        if (E->c[e] > 0) put(L, e, r, E->c[e] / unit);
    }
    int *crow = pl_malloc(nc * sizeof *crow), *prow = pl_malloc(nc * sizeof *prow);
    for (int a = 0; a < nc; a++) {
        crow[a] = out[a] >= 2 ? add_row(L, out[a] - 1, DBL_MAX) : -1;
        prow[a] = in[a] >= 2 ? add_row(L, in[a] - 1, DBL_MAX) : -1;
        if (out[a] == 0) { /* sink: s_A + P_A <= w */
            int r = add_row(L, -DBL_MAX, -C->time_s[a] / unit);
            put(L, ne + a, r, 1), put(L, w, r, -1);
        }
    }
    for (int e = 0; e < ne; e++) {
        if (crow[E->a[e]] >= 0) put(L, e, crow[E->a[e]], 1);
        if (prow[E->b[e]] >= 0) put(L, e, prow[E->b[e]], 1);
    }
    L->collb = pl_calloc(L->n_cols, sizeof *L->collb);
    L->colub = pl_malloc(L->n_cols * sizeof *L->colub);
    L->obj = pl_calloc(L->n_cols, sizeof *L->obj);
    for (int j = 0; j < L->n_cols; j++)
        L->colub[j] = j < ne ? 1 : DBL_MAX;
    L->obj[w] = 1;
    free(out), free(in), free(crow), free(prow);
}

/* Counting sort of the triplets by column. */
static void lp_csc(const lp *L, int **start, int **index, double **value)
{
    int *st = pl_calloc(L->n_cols + 1, sizeof *st);
    int *ix = pl_malloc((L->nz ? L->nz : 1) * sizeof *ix);
    double *v = pl_malloc((L->nz ? L->nz : 1) * sizeof *v);
    for (int q = 0; q < L->nz; q++)
        st[L->tcol[q] + 1]++;
    for (int j = 0; j < L->n_cols; j++)
        st[j + 1] += st[j];
    int *fill = pl_malloc(L->n_cols * sizeof *fill);
    memcpy(fill, st, L->n_cols * sizeof *fill);
    for (int q = 0; q < L->nz; q++) {
        int at = fill[L->tcol[q]]++;
        ix[at] = L->trow[q], v[at] = L->tval[q];
    }
    free(fill);
    *start = st, *index = ix, *value = v;
}

typedef struct clp_job {
    Clp_Simplex *m;
    double limit_s;
} clp_job;

/* Runs in the solver's child process (common.h, "Isolated solves"). The limit is set here: Clp
 * stores it as an absolute process CPU time, and the child's CPU clock starts again from zero. */
static void clp_child(void *ctx, pl_solve_answer *a)
{
    clp_job *job = ctx;
    Clp_Simplex *m = job->m;
    Clp_setMaximumSeconds(m, job->limit_s);
    Clp_initialSolve(m);
    a->obj = INFINITY, a->bound = -INFINITY;
    if (Clp_isProvenOptimal(m)) {
        a->status = PL_SOLVE_OPTIMAL;
        memcpy(a->x, Clp_getColSolution(m), a->n * sizeof *a->x);
        a->obj = a->bound = Clp_objectiveValue(m);
    } else /* status 3: stopped on iterations or time */
        a->status = Clp_status(m) == 3 ? PL_SOLVE_STOPPED : PL_SOLVE_FAILED;
}

/* Solves with Clp, the LP engine of the CBC distribution. Not through Cbc_solve: CBC 2.10's
 * C interface runs a pure LP through CbcMain1, whose time limit only bounds branch-and-bound
 * (measured: a 5 s limit, a 70 s solve), while Clp's simplex checks its own limit. In a
 * child process (common.h, "Isolated solves"): a solver crash or stall is a failure with a reason
 * in `why`. On success copies x (the first ne columns) out and returns the objective in LP units.
 */
static lp_sct_status lp_solve(const lp *L, int ne, double time_limit_s, double *x, double *obj,
                              char *why, size_t cap)
{
    int *st, *ix;
    double *v;
    lp_csc(L, &st, &ix, &v);
    Clp_Simplex *m = Clp_newModel();
    Clp_setLogLevel(m, 0);
    Clp_loadProblem(m, L->n_cols, L->n_rows, st, ix, v, L->collb, L->colub, L->obj, L->rowlb,
                    L->rowub);
    free(st), free(ix), free(v);
    clp_job job = {m, time_limit_s};
    pl_solve_answer a = {.n = L->n_cols, .x = pl_malloc((L->n_cols + 1) * sizeof *a.x)};
    lp_sct_status s = LP_SCT_FAILED;
    if (pl_solve_isolated(clp_child, &job, time_limit_s, 0, &a, why, cap) < 0)
        s = LP_SCT_CRASHED;
    else if (a.status == PL_SOLVE_OPTIMAL) {
        s = LP_SCT_OPTIMAL;
        memcpy(x, a.x, ne * sizeof *x);
        *obj = a.obj;
    } else if (a.status == PL_SOLVE_STOPPED)
        s = LP_SCT_TIME_LIMIT;
    free(a.x);
    Clp_deleteModel(m);
    return s;
}

/* Rounding (Hanen & Munier): j is i's favourite when x_ij < 0.5. The LP rows allow at most
 * one such child per parent and parent per child; numerical slack could break a tie, so the
 * smaller x wins. */
static int round_favorites(const lpe *E, const double *x, int n_ops, int *fav)
{
    double *best = pl_malloc((n_ops ? n_ops : 1) * sizeof *best);
    int *par = pl_malloc((n_ops ? n_ops : 1) * sizeof *par);
    for (int i = 0; i < n_ops; i++)
        best[i] = 0.5, par[i] = -1;
    for (int e = 0; e < E->n; e++) {
        int u = E->src[e], v = E->dst[e];
        if (!(x[e] < 0.5) || fav[u] >= 0 || (par[v] >= 0 && best[v] <= x[e])) continue;
        if (par[v] >= 0) fav[par[v]] = -1;
        fav[u] = v, par[v] = u, best[v] = x[e];
    }
    free(best), free(par);
    int n = 0;
    for (int i = 0; i < n_ops; i++)
        n += fav[i] >= 0;
    return n;
}

static _Thread_local const pairs *sort_pairs_ctx; /* qsort has no context argument */

static int by_comm_desc(const void *a, const void *b)
{
    int p = *(const int *)a, q = *(const int *)b;
    double cp = sort_pairs_ctx->c_s[p], cq = sort_pairs_ctx->c_s[q];
    if (cp != cq) return cp > cq ? -1 : 1;
    return p - q; /* pair order is (src, dst) order: deterministic */
}

/* Fallback: a greedy matching on communication, heaviest pair first. Chains come out the
 * same as in the LP (nothing competes for them). */
static int greedy_favorites(const pairs *P, int *fav)
{
    int n = P->n_ops;
    int *src = pl_malloc((P->n ? P->n : 1) * sizeof *src);
    int *idx = pl_malloc((P->n ? P->n : 1) * sizeof *idx);
    bool *has_par = pl_calloc(n ? n : 1, sizeof *has_par);
    for (int u = 0; u < n; u++)
        for (int q = P->off[u]; q < P->off[u + 1]; q++)
            src[q] = u;
    for (int q = 0; q < P->n; q++)
        idx[q] = q;
    for (int i = 0; i < n; i++)
        fav[i] = -1;
    sort_pairs_ctx = P;
    pl_sort(idx, P->n, sizeof *idx, by_comm_desc);
    int count = 0;
    for (int k = 0; k < P->n; k++) {
        int q = idx[k], u = src[q], v = P->dst[q];
        if (fav[u] >= 0 || has_par[v]) continue;
        fav[u] = v, has_par[v] = true, count++;
    }
    free(src), free(idx), free(has_par);
    return count;
}

static int op_times(const pl_cost *k, double *p_s, pl_err *err)
{
    if (lp_check_runnable(k, "m-sct", err) < 0) return -1;
    for (int i = 0; i < k->n_ops; i++)
        p_s[i] = pk_op_mean_s(k, i);
    return 0;
}

/* Builds and solves the contracted LP; fills fav on success. */
static void solve_contracted(const pl_cost *k, const pairs *P, const chains *C, double time_limit_s,
                             int *fav, lp_sct_info *info)
{
    lpe E;
    lpe_build(P, C, &E);
    info->n_lp_edges = E.n;
    if (E.n == 0 || k->n_devs < 2) {
        info->status = LP_SCT_TRIVIAL;
        lpe_free(&E);
        return;
    }
    double t0 = pl_now(), unit = time_unit(C, &E);
    lp L;
    lp_build(C, &E, unit, &L);
    info->n_cols = L.n_cols, info->n_rows = L.n_rows, info->n_nz = L.nz;
    double *x = pl_malloc(E.n * sizeof *x), obj = 0;
    info->build_s = pl_now() - t0;
    t0 = pl_now();
    info->status = lp_solve(&L, E.n, time_limit_s, x, &obj, info->why, sizeof info->why);
    info->solve_s = pl_now() - t0;
    if (info->status == LP_SCT_OPTIMAL) {
        info->lp_makespan_s = obj * unit;
        round_favorites(&E, x, k->n_ops, fav);
    }
    free(x), lp_free(&L), lpe_free(&E);
}

int lp_sct_favorites(const pl_cost *k, double time_limit_s, int max_nodes, int *fav_child,
                     lp_sct_info *info, pl_err *err)
{
    memset(info, 0, sizeof *info);
    int n = k->n_ops;
    info->n_ops = n;
    double *p_s = pl_malloc((n ? n : 1) * sizeof *p_s);
    if (op_times(k, p_s, err) < 0) {
        free(p_s);
        return -1;
    }
    if (max_nodes <= 0) max_nodes = LP_SCT_MAX_NODES;
    if (time_limit_s <= 0) time_limit_s = LP_SCT_DEFAULT_TIME_S;
    pairs P;
    chains C;
    pairs_build(k, &P);
    info->n_edges = P.n;
    for (int i = 0; i < n; i++)
        fav_child[i] = -1;
    chains_build(k, &P, p_s, fav_child, &C);
    info->n_chains = C.n;
    if (C.n > max_nodes)
        info->status = LP_SCT_TOO_BIG;
    else
        solve_contracted(k, &P, &C, time_limit_s, fav_child, info);
    if (info->status != LP_SCT_OPTIMAL && info->status != LP_SCT_TRIVIAL)
        greedy_favorites(&P, fav_child);
    for (int i = 0; i < n; i++)
        info->n_favorites += fav_child[i] >= 0;
    pairs_free(&P), chains_free(&C), free(p_s);
    return 0;
}
