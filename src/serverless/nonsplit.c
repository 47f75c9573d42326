/* nonsplit.c: NonSplit, Tarnawski et al.'s non-contiguous split as MOPAR's paper uses it for a
 * baseline: an integer program that puts every layer in one of K functions, a function's layers
 * need not be consecutive, each function at one memory size of a few the platform allows, at
 * least cost within MOPAR's latency bound (docs/serverless.md, "NonSplit", states the program).
 * CBC solves it in a child process (common.h, "Isolated solves"): CBC 2.10 can crash. */
#include "sl_internal.h"

#include <Cbc_C_Interface.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_LIMIT_S 10.0 /* CBC's default limit on one program (wall clock): the best plan then */
#define NS_MEM_MAX 12   /* memory sizes offered to a function */
/* The program's units: USD per million requests and milliseconds, so that CBC's absolute
 * tolerances (1e-7 and so) are small beside its figures. */
#define NS_USD 1e6
#define NS_S 1e3

/* The memory sizes offered: every allowed size when there are at most NS_MEM_MAX; else, in
 * this order of priority, the smallest, a whole vCPU's (below it a function's CPU follows its
 * memory, so its compute costs the same at any size: more memory is only faster), the unsplit
 * model's need (NonSplit with one function is then never dearer than unsplit), the largest,
 * a half, quarter and eighth of the unsplit need, then a whole vCPU's doubled while below the
 * largest. */
static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int mem_choices(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                       double *mb, double *unsplit_mb)
{
    pl_sl_plan u;
    int end = sg->n - 1;
    *unsplit_mb = pl_sl_price(sg, pf, o, &end, NULL, 1, &u) == 0 ? u.slices[0].mem_mb : -1;
    pl_sl_plan_free(&u);
    double step = pf->mem_step_mb, all[NS_MEM_MAX + 8];
    int n = 0;
    if (step > 0 && (pf->mem_max_mb - pf->mem_min_mb) / step + 1 <= NS_MEM_MAX + 1e-9) {
        for (double m = pf->mem_min_mb; m <= pf->mem_max_mb + 1e-9 && n < NS_MEM_MAX; m += step)
            mb[n++] = m;
        return n;
    }
    double vcpu = pl_platform_round_mb(pf, pf->mb_per_vcpu);
    all[n++] = pf->mem_min_mb;
    if (vcpu > 0) all[n++] = vcpu;
    if (*unsplit_mb > 0) all[n++] = *unsplit_mb;
    all[n++] = pf->mem_max_mb;
    for (int k = 2; k <= 8 && *unsplit_mb > 0; k *= 2) /* what a part of the model may need */
        all[n++] = pl_platform_round_mb(pf, *unsplit_mb / k);
    for (double m = 2 * pf->mb_per_vcpu; m < pf->mem_max_mb && n < NS_MEM_MAX; m *= 2)
        all[n++] = pl_platform_round_mb(pf, m);
    qsort(all, (size_t)n, sizeof *all, by_value);
    int u_n = 0;
    for (int k = 0; k < n; k++)
        if (all[k] > 0 && (u_n == 0 || all[k] > mb[u_n - 1])) mb[u_n++] = all[k];
    return u_n;
}

/* The program's columns, in blocks: x[l][f] (binary), y[f][m] (binary), z[l][f][m], in[t][f],
 * out[t][f], zi[t][f][m], zo[t][f][m], act[f], sw[w][f] (continuous). */
typedef struct ns_cols {
    int n, K, M, T, W;
    int x, y, z, in, out, zi, zo, act, sw, count;
} ns_cols;

static void cols_init(ns_cols *c, int n, int K, int M, int T, int W)
{
    *c = (ns_cols){.n = n, .K = K, .M = M, .T = T, .W = W};
    c->x = 0, c->y = c->x + n * K, c->z = c->y + K * M, c->in = c->z + n * K * M;
    c->out = c->in + T * K, c->zi = c->out + T * K, c->zo = c->zi + T * K * M;
    c->act = c->zo + T * K * M, c->sw = c->act + K, c->count = c->sw + W * K;
}

/* Entries (column, row, value) of the matrix, laid out by column at the end. */
typedef struct ns_mat {
    int *c, *r;
    double *v;
    int n, cap, rows;
    double *rlb, *rub;
    int rcap;
} ns_mat;

static void put(ns_mat *a, int col, double v)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 1024;
        a->c = pl_realloc(a->c, (size_t)a->cap * sizeof *a->c);
        a->r = pl_realloc(a->r, (size_t)a->cap * sizeof *a->r);
        a->v = pl_realloc(a->v, (size_t)a->cap * sizeof *a->v);
    }
    a->c[a->n] = col, a->r[a->n] = a->rows, a->v[a->n++] = v;
}

/* Closes the row being put: lb <= row <= ub. */
static void row_end(ns_mat *a, double lb, double ub)
{
    if (a->rows == a->rcap) {
        a->rcap = a->rcap ? 2 * a->rcap : 1024;
        a->rlb = pl_realloc(a->rlb, (size_t)a->rcap * sizeof *a->rlb);
        a->rub = pl_realloc(a->rub, (size_t)a->rcap * sizeof *a->rub);
    }
    a->rlb[a->rows] = lb, a->rub[a->rows++] = ub;
}

/* A product p >= u + v - 1 of two 0/1 columns (p is pushed down by the objective). */
static void product(ns_mat *a, int u, int v, int p)
{
    put(a, u, 1), put(a, v, 1), put(a, p, -1), row_end(a, -INFINITY, 1);
}

/* What the program needs of the graph and platform: each memory size's GB-s price factor and
 * vCPU share, each tensor's read and write time and store price. */
typedef struct ns_in {
    const pl_sl_graph *sg;
    const pl_platform *pf;
    double mb[NS_MEM_MAX], share[NS_MEM_MAX], usd_s[NS_MEM_MAX];
    double *rd, *wr, *store;
    double unsplit_mb; /* the unsplit model's memory, -1 when it does not fit one function */
} ns_in;

static void assign_rows(ns_mat *a, const ns_cols *c)
{
    for (int l = 0; l < c->n; l++) { /* each layer in one function */
        for (int f = 0; f < c->K; f++)
            put(a, c->x + l * c->K + f, 1);
        row_end(a, 1, 1);
    }
    for (int f = 0; f < c->K; f++) { /* one memory size; a layer only in a function that has one */
        for (int m = 0; m < c->M; m++)
            put(a, c->y + f * c->M + m, 1);
        row_end(a, -INFINITY, 1);
        for (int l = 0; l < c->n; l++) {
            put(a, c->x + l * c->K + f, 1);
            for (int m = 0; m < c->M; m++)
                put(a, c->y + f * c->M + m, -1);
            row_end(a, -INFINITY, 0);
            for (int m = 0; m < c->M; m++)
                product(a, c->x + l * c->K + f, c->y + f * c->M + m,
                        c->z + (l * c->K + f) * c->M + m);
        }
    }
    for (int f = 0; f + 1 < c->K; f++) { /* functions used in order (symmetry) */
        for (int m = 0; m < c->M; m++)
            put(a, c->y + f * c->M + m, 1), put(a, c->y + (f + 1) * c->M + m, -1);
        row_end(a, 0, INFINITY);
    }
}

/* in[t][f] >= x[r][f] - x[from][f] for every reader r, out[t][f] >= x[from][f] - x[r][f]. */
static void cut_rows(ns_mat *a, const ns_cols *c, const pl_sl_graph *sg)
{
    for (int t = 0; t < c->T; t++)
        for (int f = 0; f < c->K; f++) {
            int mk = c->x + sg->tensors[t].from * c->K + f;
            for (int k = 0; k < sg->tensors[t].n_to; k++) {
                int rd = c->x + sg->tensors[t].to[k] * c->K + f;
                put(a, rd, 1), put(a, mk, -1), put(a, c->in + t * c->K + f, -1);
                row_end(a, -INFINITY, 0);
                put(a, mk, 1), put(a, rd, -1), put(a, c->out + t * c->K + f, -1);
                row_end(a, -INFINITY, 0);
            }
            for (int m = 0; m < c->M; m++) {
                product(a, c->in + t * c->K + f, c->y + f * c->M + m,
                        c->zi + (t * c->K + f) * c->M + m);
                product(a, c->out + t * c->K + f, c->y + f * c->M + m,
                        c->zo + (t * c->K + f) * c->M + m);
            }
        }
}

/* A function's memory as pl_sl_price counts it: the runtime's factors on its weights (a shared
 * one once: sw[w][f] >= x[l][f] for its readers) and on its most activation-hungry layer
 * (act[f] >= act_l x[l][f]), plus the runtime's own, at most its size. */
static void memory_rows(ns_mat *a, const ns_cols *c, const ns_in *in)
{
    const pl_sl_graph *sg = in->sg;
    const pl_platform *pf = in->pf;
    double fw = pf->runtime_weight_factor > 0 ? pf->runtime_weight_factor : 1;
    double fa = pf->runtime_activation_factor > 0 ? pf->runtime_activation_factor : 1;
    for (int f = 0; f < c->K; f++) {
        for (int l = 0; l < c->n; l++) {
            put(a, c->x + l * c->K + f, sg->layers[l].mem_mb), put(a, c->act + f, -1);
            row_end(a, -INFINITY, 0);
            for (int k = 0; k < sg->layers[l].n_wts; k++) {
                put(a, c->x + l * c->K + f, 1), put(a, c->sw + sg->layers[l].wts[k] * c->K + f, -1);
                row_end(a, -INFINITY, 0);
            }
        }
        for (int l = 0; l < c->n; l++)
            put(a, c->x + l * c->K + f, fw * sg->layers[l].weight_mb);
        for (int w = 0; w < c->W; w++)
            put(a, c->sw + w * c->K + f, fw * sg->wt_mb[w]);
        put(a, c->act + f, fa);
        for (int m = 0; m < c->M; m++)
            put(a, c->y + f * c->M + m, pf->runtime_base_mb - in->mb[m]);
        row_end(a, -INFINITY, 0);
    }
}

/* The latency: every function's layers at its vCPU share and its reads and writes, summed. */
static void latency_row(ns_mat *a, const ns_cols *c, const ns_in *in, double bound)
{
    if (!isfinite(bound)) return;
    for (int f = 0; f < c->K; f++)
        for (int m = 0; m < c->M; m++) {
            for (int l = 0; l < c->n; l++)
                put(a, c->z + (l * c->K + f) * c->M + m,
                    NS_S * in->sg->layers[l].t1_s / in->share[m]);
            for (int t = 0; t < c->T; t++) {
                put(a, c->zi + (t * c->K + f) * c->M + m, NS_S * in->rd[t]);
                put(a, c->zo + (t * c->K + f) * c->M + m, NS_S * in->wr[t]);
            }
        }
    row_end(a, -INFINITY, NS_S * bound);
}

/* The bill per request: GB-s of compute and of transfers at the function's size, a request per
 * function used, the store's price of every tensor written or read. */
static void objective(const ns_cols *c, const ns_in *in, double *obj)
{
    for (int f = 0; f < c->K; f++)
        for (int m = 0; m < c->M; m++) {
            obj[c->y + f * c->M + m] = in->pf->usd_per_request;
            for (int l = 0; l < c->n; l++)
                obj[c->z + (l * c->K + f) * c->M + m] =
                    in->usd_s[m] * in->sg->layers[l].t1_s / in->share[m];
            for (int t = 0; t < c->T; t++) {
                obj[c->zi + (t * c->K + f) * c->M + m] = in->usd_s[m] * in->rd[t];
                obj[c->zo + (t * c->K + f) * c->M + m] = in->usd_s[m] * in->wr[t];
                obj[c->in + t * c->K + f] = obj[c->out + t * c->K + f] = in->store[t];
            }
        }
}

/* Loads the program into a CBC model. */
static Cbc_Model *load(const ns_cols *c, ns_mat *a, const double *obj)
{
    int *start = pl_calloc((size_t)c->count + 1, sizeof *start);
    for (int e = 0; e < a->n; e++)
        start[a->c[e] + 1]++;
    for (int k = 0; k < c->count; k++)
        start[k + 1] += start[k];
    int *fill = pl_malloc((size_t)c->count * sizeof *fill),
        *row = pl_malloc((size_t)a->n * sizeof *row);
    double *val = pl_malloc((size_t)a->n * sizeof *val);
    memcpy(fill, start, (size_t)c->count * sizeof *fill);
    for (int e = 0; e < a->n; e++) {
        int at = fill[a->c[e]]++;
        row[at] = a->r[e], val[at] = a->v[e];
    }
    double *lb = pl_calloc((size_t)c->count, sizeof *lb),
           *ub = pl_malloc((size_t)c->count * sizeof *ub);
    for (int k = 0; k < c->count; k++)
        ub[k] = k >= c->act && k < c->sw ? INFINITY : 1;
    lb[c->x] = 1; /* layer 0 in function 0 (symmetry) */
    Cbc_Model *m = Cbc_newModel();
    Cbc_setLogLevel(m, 0);
    Cbc_setAllowableFractionGap(m, 1e-9);
    Cbc_loadProblem(m, c->count, a->rows, start, row, val, lb, ub, obj, a->rlb, a->rub);
    for (int k = c->x; k < c->z; k++)
        Cbc_setInteger(m, k);
    free(start), free(fill), free(row), free(val), free(lb), free(ub);
    return m;
}

/* CBC's first incumbent: the assignment fn_of (MOPAR's partition, or the unsplit model), each
 * function at the smallest size of S it fits, every column set to match (CBC drops it when it
 * breaks the latency bound): the answer is never dearer than it, even when CBC stops at its
 * limit. */
static void mip_start(Cbc_Model *m, const ns_cols *c, const ns_in *in, const pl_sl_opts *o,
                      const int *fn_of)
{
    double *v = pl_calloc((size_t)c->count, sizeof *v);
    int *idx = pl_malloc((size_t)c->count * sizeof *idx), size[SL_NONSPLIT_K_MAX];
    const pl_sl_graph *sg = in->sg;
    for (int f = 0; f < c->K; f++) {
        pl_sl_slice s;
        size[f] = -1;
        for (int k = 0; k < c->M && size[f] < 0; k++)
            if (sl_price_set(sg, in->pf, o, fn_of, f, in->mb[k], &s) == 0) size[f] = k;
        bool used = false;
        for (int l = 0; l < c->n; l++)
            used |= fn_of[l] == f;
        if (used && size[f] < 0) goto out; /* it fits no size of S */
        if (used) v[c->y + f * c->M + size[f]] = 1;
    }
    for (int l = 0; l < c->n; l++) {
        int f = fn_of[l];
        v[c->x + l * c->K + f] = v[c->z + (l * c->K + f) * c->M + size[f]] = 1;
        v[c->act + f] = fmax(v[c->act + f], sg->layers[l].mem_mb);
        for (int k = 0; k < sg->layers[l].n_wts; k++)
            v[c->sw + sg->layers[l].wts[k] * c->K + f] = 1;
    }
    for (int t = 0; t < c->T; t++) {
        int mk = fn_of[sg->tensors[t].from];
        for (int r = 0; r < sg->tensors[t].n_to; r++) {
            int f = fn_of[sg->tensors[t].to[r]];
            if (f == mk) continue;
            v[c->in + t * c->K + f] = v[c->zi + (t * c->K + f) * c->M + size[f]] = 1;
            v[c->out + t * c->K + mk] = v[c->zo + (t * c->K + mk) * c->M + size[mk]] = 1;
        }
    }
    for (int k = 0; k < c->count; k++)
        idx[k] = k;
    Cbc_setMIPStartI(m, c->count, idx, v);
out:
    free(v), free(idx);
}

/* The plan in the answer: functions renumbered by their first layer, each at its size. */
static int read_plan(const ns_cols *c, const ns_in *in, const double *x, const pl_sl_opts *o,
                     pl_sl_plan *out)
{
    int *fn_of = pl_malloc((size_t)c->n * sizeof *fn_of), renum[SL_NONSPLIT_K_MAX], used = 0;
    double mem[SL_NONSPLIT_K_MAX];
    for (int f = 0; f < c->K; f++)
        renum[f] = -1;
    for (int l = 0; l < c->n; l++) {
        int best = 0;
        for (int f = 1; f < c->K; f++)
            if (x[c->x + l * c->K + f] > x[c->x + l * c->K + best]) best = f;
        if (renum[best] < 0) {
            mem[used] = in->mb[0];
            for (int m = 0; m < c->M; m++)
                if (x[c->y + best * c->M + m] > 0.5) mem[used] = in->mb[m];
            renum[best] = used++;
        }
        fn_of[l] = renum[best];
    }
    int rc = pl_sl_price_sets(in->sg, in->pf, o, fn_of, mem, used, out);
    free(fn_of);
    return rc;
}

static int solve(const ns_cols *c, const ns_in *in, const pl_sl_opts *o, double bound,
                 const int *start, pl_sl_plan *out, pl_err *err)
{
    ns_mat a = {0};
    assign_rows(&a, c);
    cut_rows(&a, c, in->sg);
    memory_rows(&a, c, in);
    latency_row(&a, c, in, bound);
    double *obj = pl_calloc((size_t)c->count, sizeof *obj);
    objective(c, in, obj);
    for (int k = 0; k < c->count; k++)
        obj[k] *= NS_USD;
    Cbc_Model *m = load(c, &a, obj);
    int *unsplit = start ? NULL : pl_calloc((size_t)c->n + 1, sizeof *unsplit);
    mip_start(m, c, in, o, start ? start : unsplit);
    free(unsplit);
    free(a.c), free(a.r), free(a.v), free(a.rlb), free(a.rub), free(obj);
    pl_solve_answer ans = {.n = c->count};
    ans.x = pl_malloc((size_t)c->count * sizeof *ans.x);
    char why[160] = "";
    pl_cbc_job job = {m, o->nonsplit_limit_s > 0 ? o->nonsplit_limit_s : NS_LIMIT_S};
    int rc = pl_solve_isolated(pl_solve_cbc, &job, job.limit_s, 0, &ans, why, sizeof why);
    Cbc_deleteModel(m);
    if (rc < 0)
        pl_err_set(err, "nonsplit: the solver (CBC) %s", why);
    else if (ans.status != PL_SOLVE_OPTIMAL && ans.status != PL_SOLVE_FEASIBLE)
        rc = pl_err_set(err,
                        "nonsplit: CBC found no plan of at most %d functions within the "
                        "latency bound in %g s",
                        c->K, NS_LIMIT_S);
    else if (read_plan(c, in, ans.x, o, out) < 0)
        rc = pl_err_set(err, "nonsplit: CBC's plan does not fit its functions' memory");
    else
        out->exact = ans.status == PL_SOLVE_OPTIMAL; /* else stopped at its limit, unproven */
    free(ans.x);
    return rc;
}

int sl_nonsplit(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, int k,
                double bound, const int *start, pl_sl_plan *out, pl_err *err)
{
    ns_in in = {.sg = sg, .pf = pf};
    int M = mem_choices(sg, pf, o, in.mb, &in.unsplit_mb);
    for (int m = 0; m < M; m++) {
        in.share[m] = fmin(pl_platform_vcpus(pf, in.mb[m]), 1);
        in.usd_s[m] = in.mb[m] * PL_PLATFORM_MB_BYTES / PL_PLATFORM_GB_S_BYTES * pf->usd_per_gb_s;
    }
    const pl_transport *x = pl_sl_transport(pf, o);
    double ratio = o->codec_cost.ratio >= 1 ? o->codec_cost.ratio : 1;
    int T = sg->n_tensors;
    in.rd = pl_malloc(((size_t)T + 1) * sizeof *in.rd);
    in.wr = pl_malloc(((size_t)T + 1) * sizeof *in.wr);
    in.store = pl_malloc(((size_t)T + 1) * sizeof *in.store);
    for (int t = 0; t < T; t++) {
        in.rd[t] = sl_move_s(x, o, sg->tensors[t].bytes, false);
        in.wr[t] = sl_move_s(x, o, sg->tensors[t].bytes, true);
        in.store[t] = pl_transport_usd(x, sg->tensors[t].bytes / ratio, 1); /* one op */
    }
    ns_cols c;
    cols_init(&c, sg->n, k < 1 ? 1 : k, M, T, sg->n_wts);
    int rc = solve(&c, &in, o, bound, start, out, err);
    if (rc == 0) out->algo = PL_SL_NONSPLIT;
    free(in.rd), free(in.wr), free(in.store);
    return rc;
}
