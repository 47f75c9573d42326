/* published.c: published GPU timings of whole networks, and the GPU kernel rules fitted to
 * them (calib.h, docs/cost.md "GPU kernels", bench/gpu-published.json).
 *
 * A figure is a network's time per batch on one GPU, forward (inference) or one training
 * iteration, as a framework ran it. Its prediction is placer's: the network's training graph at
 * the figure's batch (src/train/tgraph.c: forward ops first, then backward and plain-SGD update
 * ops), in the figure's precision, priced op by op on a device of that GPU model with
 * runtime fusion off (the frameworks measured run every layer as a kernel of its own), summed:
 * on one GPU the simulator runs one op at a time, so its makespan is that sum. */
#include "placer/calib.h"
#include "placer/json.h"
#include "placer/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the file ---- */

static const char *const top_fields[] = {"format", "description", "sources", "figures", NULL};
static const char *const source_fields[] = {"id",    "title", "url",    "date", "software",
                                            "where", "notes", "fusion", NULL};
static const char *const figure_fields[] = {
    "source", "gpu",        "network", "mode", "batch", "precision",  "ms", "set",
    "quote",  "throughput", "seq",     "math", "note",  "host_bound", NULL};

/* A string field that must be there and fit `n` bytes. */
static int read_str(const pl_json *o, const char *field, char *out, size_t n, pl_err *err)
{
    const char *s;
    if (pl_json_string(o, field, &s, err) < 0) return -1;
    if (!*s || strlen(s) >= n) {
        pl_json at = pl_json_at(o, field);
        return pl_json_fail(&at, err, "must be a non-empty string of at most %zu bytes", n - 1);
    }
    snprintf(out, n, "%s", s);
    return 0;
}

static int read_sources(const pl_json *root, pl_published *p, pl_err *err)
{
    pl_json arr;
    if (pl_json_array(root, "sources", &arr, err) < 0) return -1;
    p->n_sources = (int)pl_json_len(&arr);
    p->source_ids = pl_calloc((size_t)p->n_sources + 1, sizeof *p->source_ids);
    p->source_fused = pl_calloc((size_t)p->n_sources + 1, sizeof *p->source_fused);
    p->source_host_s = pl_calloc((size_t)p->n_sources + 1, sizeof *p->source_host_s);
    for (int i = 0; i < p->n_sources; i++) {
        pl_json s = pl_json_index(&arr, (size_t)i);
        char scratch[1024];
        if (pl_json_check_fields(&s, source_fields, err) < 0 ||
            read_str(&s, "id", p->source_ids[i], sizeof p->source_ids[i], err) < 0 ||
            read_str(&s, "url", scratch, sizeof scratch, err) < 0 ||
            read_str(&s, "date", scratch, sizeof scratch, err) < 0 ||
            read_str(&s, "software", scratch, sizeof scratch, err) < 0)
            return -1;
        const char *fusion = NULL;
        if (pl_json_opt_string(&s, "fusion", &fusion, err) < 0) return -1;
        if (fusion && strcmp(fusion, "xla")) {
            pl_json at = pl_json_at(&s, "fusion");
            return pl_json_fail(&at, err, "fusion is \"xla\" when given");
        }
        p->source_fused[i] = fusion != NULL;
        for (int j = 0; j < i; j++)
            if (!strcmp(p->source_ids[j], p->source_ids[i]))
                return pl_json_fail(&s, err, "source id '%s' given twice", p->source_ids[i]);
    }
    return 0;
}

static int source_index(const pl_published *p, const char *id)
{
    for (int i = 0; i < p->n_sources; i++)
        if (!strcmp(p->source_ids[i], id)) return i;
    return -1;
}

/* mode, precision, set and the flags of figure f. */
static int read_kinds(const pl_json *o, pl_pub_figure *f, pl_err *err)
{
    const char *mode, *prec, *set = "fit", *math = NULL;
    if (pl_json_string(o, "mode", &mode, err) < 0 ||
        pl_json_string(o, "precision", &prec, err) < 0 ||
        pl_json_opt_string(o, "set", &set, err) < 0 ||
        pl_json_opt_string(o, "math", &math, err) < 0 ||
        pl_json_opt_bool(o, "host_bound", &f->host_bound, err) < 0)
        return -1;
    pl_json at;
    if (!strcmp(mode, "forward") || !strcmp(mode, "training"))
        f->mode = !strcmp(mode, "forward") ? PL_PUB_FORWARD : PL_PUB_TRAINING;
    else
        return at = pl_json_at(o, "mode"),
               pl_json_fail(&at, err, "mode is \"forward\" or \"training\"");
    if (!strcmp(prec, "fp32") || !strcmp(prec, "fp16"))
        f->precision = !strcmp(prec, "fp32") ? PL_PREC_FP32 : PL_PREC_FP16;
    else
        return at = pl_json_at(o, "precision"),
               pl_json_fail(&at, err, "precision is \"fp32\" or \"fp16\"");
    if (!strcmp(set, "fit") || !strcmp(set, "held-out"))
        f->held_out = !strcmp(set, "held-out");
    else
        return at = pl_json_at(o, "set"), pl_json_fail(&at, err, "set is \"fit\" or \"held-out\"");
    if (math && strcmp(math, "tf32"))
        return at = pl_json_at(o, "math"), pl_json_fail(&at, err, "math is \"tf32\" when given");
    f->tf32 = math != NULL;
    return 0;
}

static int read_figure(const pl_json *o, const pl_published *p, pl_pub_figure *f, pl_err *err)
{
    int64_t batch;
    double ms;
    if (pl_json_check_fields(o, figure_fields, err) < 0) return -1;
    if (!pl_json_has(o, "source"))
        return pl_json_fail(o, err, "a figure without a source: every figure names its source");
    if (read_str(o, "source", f->source, sizeof f->source, err) < 0 ||
        read_str(o, "gpu", f->gpu, sizeof f->gpu, err) < 0 ||
        read_str(o, "network", f->network, sizeof f->network, err) < 0 ||
        read_str(o, "quote", f->quote, sizeof f->quote, err) < 0 || read_kinds(o, f, err) < 0 ||
        pl_json_int(o, "batch", &batch, err) < 0 || pl_json_number(o, "ms", &ms, err) < 0)
        return -1;
    pl_json at = pl_json_at(o, "source");
    int src = source_index(p, f->source);
    if (src < 0) return pl_json_fail(&at, err, "no source has id '%s'", f->source);
    f->fused = p->source_fused[src], f->src = src;
    at = pl_json_at(o, "gpu");
    const pl_gpu_spec *spec = pl_gpu_spec_find(f->gpu);
    if (!spec || spec->kind != PL_DEV_GPU)
        return pl_json_fail(&at, err, "'%s' is no GPU of placer's table", f->gpu);
    if (batch < 1 || batch > 1 << 20)
        return at = pl_json_at(o, "batch"), pl_json_fail(&at, err, "a batch is 1 to 2^20");
    if (!(ms > 0 && ms < 3.6e6))
        return at = pl_json_at(o, "ms"), pl_json_fail(&at, err, "a time must be in (0, 1 h)");
    f->batch = (int)batch, f->s = ms / 1e3;
    return 0;
}

static int load_doc(pl_json_doc *doc, pl_published *p, pl_err *err);

int pl_published_load(const char *path, pl_published *p, pl_err *err)
{
    memset(p, 0, sizeof *p);
    pl_json_doc *doc = pl_json_open(path, err);
    return doc ? load_doc(doc, p, err) : -1;
}

int pl_published_load_buffer(const char *buf, size_t len, const char *name, pl_published *p,
                             pl_err *err)
{
    memset(p, 0, sizeof *p);
    pl_json_doc *doc = pl_json_parse(buf, len, name, err);
    return doc ? load_doc(doc, p, err) : -1;
}

/* Reads doc into *p and closes it. */
static int load_doc(pl_json_doc *doc, pl_published *p, pl_err *err)
{
    pl_json root = pl_json_root(doc), arr;
    int rc = pl_json_check_format(&root, "placer-gpu-published/1", err) < 0 ||
                     pl_json_check_fields(&root, top_fields, err) < 0 ||
                     read_sources(&root, p, err) < 0 ||
                     pl_json_array(&root, "figures", &arr, err) < 0
                 ? -1
                 : 0;
    if (rc == 0) {
        p->n = (int)pl_json_len(&arr);
        p->fig = pl_calloc((size_t)p->n + 1, sizeof *p->fig);
        for (int i = 0; i < p->n && rc == 0; i++) {
            pl_json o = pl_json_index(&arr, (size_t)i);
            rc = read_figure(&o, p, &p->fig[i], err);
        }
        if (rc == 0 && p->n == 0) rc = pl_json_fail(&arr, err, "no figure");
    }
    pl_json_close(doc);
    if (rc < 0) pl_published_free(p);
    return rc;
}

void pl_published_free(pl_published *p)
{
    free(p->fig), free(p->source_ids), free(p->source_fused), free(p->source_host_s);
    memset(p, 0, sizeof *p);
}

/* ---- predictions ---- */

/* One network at one batch and precision: its training graph, shared by the figures. */
typedef struct pub_graph {
    char network[64];
    int batch;
    pl_precision prec;
    pl_train_graph *t;
} pub_graph;

struct pl_pub_eval {
    const pl_published *p;
    pub_graph *g;
    int n_g;
    int *graph_of;  /* per figure */
    pl_cluster **c; /* per figure: its one GPU as priced (TF32: its tensor rate for fp32) */
    int *kernels;   /* per figure: the ops that launch a kernel */
};

/* The graph in half precision: every float tensor fp16, every op's bytes halved (the integer
 * tensors of a model, token ids, are a rounding error beside its activations). */
static void to_fp16(pl_graph *g)
{
    for (int i = 0; i < g->n_tensors; i++) {
        pl_tensor *t = &g->tensors[i];
        if (t->dtype != PL_DT_FLOAT) continue;
        t->dtype = PL_DT_FLOAT16;
        t->bytes /= 2;
    }
    for (int i = 0; i < g->n_ops; i++) {
        g->ops[i].bytes_moved /= 2;
        g->ops[i].bytes_reread /= 2, g->ops[i].reread_tensor_bytes /= 2;
    }
}

static int build_graph(pub_graph *pg, const char *models_dir, pl_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.onnx", models_dir, pg->network);
    pl_graph *fwd = pl_graph_load(path, NULL, err);
    if (!fwd) return -1;
    pl_train_opts o = {.batch = pg->batch, .sgd = true};
    int rc = pl_train_graph_build(fwd, &o, &pg->t, err);
    pl_graph_free(fwd);
    if (rc == 0 && pg->prec == PL_PREC_FP16) to_fp16(pg->t->g);
    return rc;
}

static int graph_for(pl_pub_eval *e, const pl_pub_figure *f, const char *models_dir, pl_err *err)
{
    for (int i = 0; i < e->n_g; i++)
        if (!strcmp(e->g[i].network, f->network) && e->g[i].batch == f->batch &&
            e->g[i].prec == f->precision)
            return i;
    pub_graph *pg = &e->g[e->n_g];
    snprintf(pg->network, sizeof pg->network, "%s", f->network);
    pg->batch = f->batch, pg->prec = f->precision;
    if (build_graph(pg, models_dir, err) < 0) return -1;
    return e->n_g++;
}

static int count_kernels(const pl_pub_eval *e, int fig);

/* The one-GPU cluster a figure is priced on: the table's GPU (pl_cluster_add_device copies its
 * figures); with TF32 math, its fp32 GEMMs run on the TF32 tensor cores, at half the bf16
 * tensor rate (Ampere, Ada, Hopper data sheets). */
static pl_cluster *figure_gpu(const pl_pub_figure *f, pl_err *err)
{
    pl_cluster *c = pl_cluster_new("published");
    int k = pl_cluster_add_device(c, "gpu0", PL_DEV_GPU, f->gpu);
    double *peak = c->devs[k].peak_flops_per_s;
    if (f->tf32 && peak[PL_PREC_BF16] > 0) peak[PL_PREC_FP32] = peak[PL_PREC_BF16] / 2;
    if (pl_cluster_finalize(c, err) < 0) {
        pl_cluster_free(c);
        return NULL;
    }
    return c;
}

pl_pub_eval *pl_pub_eval_new(const pl_published *p, const char *models_dir, pl_err *err)
{
    pl_pub_eval *e = pl_calloc(1, sizeof *e);
    e->p = p;
    e->g = pl_calloc((size_t)p->n + 1, sizeof *e->g);
    e->graph_of = pl_calloc((size_t)p->n + 1, sizeof *e->graph_of);

    e->c = pl_calloc((size_t)p->n + 1, sizeof *e->c);
    e->kernels = pl_calloc((size_t)p->n + 1, sizeof *e->kernels);
    for (int i = 0; i < p->n; i++) {
        e->graph_of[i] = graph_for(e, &p->fig[i], models_dir, err);
        if (e->graph_of[i] < 0) {
            pl_err_prefix(err, "figure %d (%s on %s)", i + 1, p->fig[i].network, p->fig[i].gpu);
            pl_pub_eval_free(e);
            return NULL;
        }
        if (!(e->c[i] = figure_gpu(&p->fig[i], err))) {
            pl_pub_eval_free(e);
            return NULL;
        }
        e->kernels[i] = count_kernels(e, i);
    }
    return e;
}

void pl_pub_eval_free(pl_pub_eval *e)
{
    if (!e) return;
    for (int i = 0; i < e->n_g; i++)
        pl_train_graph_free(e->g[i].t);
    for (int i = 0; i < e->p->n; i++)
        pl_cluster_free(e->c[i]);
    free(e->c), free(e->kernels);
    free(e->g), free(e->graph_of);
    free(e);
}

double pl_pub_predict_s(const pl_pub_eval *e, int fig, const pl_gpu_params *gp)
{
    const pl_pub_figure *f = &e->p->fig[fig];
    const pl_train_graph *t = e->g[e->graph_of[fig]].t;
    int n = f->mode == PL_PUB_FORWARD ? t->n_fwd : t->g->n_ops;
    pl_cost_params p;
    pl_cost_params_default(&p);
    p.gpu = *gp;
    p.runtime_fusion = PL_FUSION_NONE;
    if (!f->fused) return pl_cost_sum_s(t->g, 0, n, &e->c[fig]->devs[0], &p);
    /* XLA fuses elementwise chains into their producers' kernels: placer's fusion rules
     * (docs/cost.md, "Runtime fusion") stand for it, which need the whole table */
    p.runtime_fusion = PL_FUSION_ORT;
    pl_err err = {0};
    pl_cost *k = pl_cost_new(t->g, e->c[fig], &p, NULL, 0, &err);
    double s = 0;
    for (int op = 0; k && op < n; op++)
        s += pl_cost_op_s(k, op, 0);
    if (!k) s = INFINITY; /* the graph was accepted once: only a bad gp lands here */
    pl_cost_free(k);
    return s;
}

/* The ops of figure fig's range that launch a kernel: those the GPU rules price above 0 (not a
 * view, not a Constant), less, with fusion, the ones fused into another op's kernel. */
static int count_kernels(const pl_pub_eval *e, int fig)
{
    const pl_pub_figure *f = &e->p->fig[fig];
    const pl_train_graph *t = e->g[e->graph_of[fig]].t;
    int n = f->mode == PL_PUB_FORWARD ? t->n_fwd : t->g->n_ops, count = 0;
    pl_gpu_params gp;
    pl_gpu_params_default(&gp);
    pl_cost *k = NULL;
    if (f->fused) {
        pl_cost_params p;
        pl_cost_params_default(&p);
        pl_err err = {0};
        k = pl_cost_new(t->g, e->c[fig], &p, NULL, 0, &err);
    }
    for (int op = 0; op < n; op++) {
        const pl_op *o = &t->g->ops[op];
        bool fused = k && k->fused_root && k->fused_root[op] >= 0;
        count += !fused && pl_gpu_op_s(o, t->g, &e->c[fig]->devs[0], 0, &gp, NULL) > 0;
    }
    pl_cost_free(k);
    return count;
}

int pl_pub_kernels(const pl_pub_eval *e, int fig)
{
    return e->kernels[fig];
}

double pl_pub_total_s(const pl_pub_eval *e, int fig, const pl_gpu_params *gp)
{
    double host = e->kernels[fig] * e->p->source_host_s[e->p->fig[fig].src];
    return fmax(pl_pub_predict_s(e, fig, gp), host);
}

/* ---- the fit ---- */

/* coordinates: eff_gemm, eff_tensor, eff_winograd, eff_mem, log mem_half_bytes, log kernel_s,
 * eff_conv, then one log host time per source */
#define NG 7
/* An eager framework's host time per op is tens of microseconds (Python, dispatch, the launch
 * call); more than this is not the host but a model the fit is bending to fit. */
#define HOST_MAX_S 100e-6

/* The search runs on unbounded coordinates: an efficiency e = 1 / (1 + exp(-x)) stays in
 * (0, 1), a size or a time exp(x) stays positive. x[NG + s] is source s's log host time. */
static double sigmoid(double x)
{
    return 1 / (1 + exp(-x));
}

static double logit(double e)
{
    e = fmin(fmax(e, 1e-6), 1 - 1e-6);
    return log(e / (1 - e));
}

static void to_params(const double *x, pl_gpu_params *gp, double *host_s, int n_sources)
{
    gp->eff_gemm = sigmoid(x[0]), gp->eff_tensor = sigmoid(x[1]);
    gp->eff_winograd = sigmoid(x[2]), gp->eff_mem = sigmoid(x[3]);
    gp->mem_half_bytes = exp(fmin(x[4], 27)); /* at most ~0.5 GB */
    gp->kernel_s = exp(fmin(x[5], -4.6));     /* at most 10 ms */
    gp->eff_conv = sigmoid(x[6]);
    for (int s = 0; s < n_sources; s++)
        host_s[s] = exp(fmin(x[NG + s], log(HOST_MAX_S)));
}

static void to_coords(const pl_gpu_params *gp, const double *host_s, int n_sources, double *x)
{
    x[0] = logit(gp->eff_gemm), x[1] = logit(gp->eff_tensor), x[2] = logit(gp->eff_winograd);
    x[3] = logit(gp->eff_mem), x[4] = log(fmax(gp->mem_half_bytes, 1));
    x[5] = log(fmax(gp->kernel_s, 1e-9)), x[6] = logit(gp->eff_conv);
    for (int s = 0; s < n_sources; s++)
        x[NG + s] = log(fmax(host_s[s], 1e-7));
}

static bool counted(const pl_pub_figure *f, bool held_out)
{
    return !f->host_bound && f->held_out == held_out;
}

typedef struct fit_ctx {
    const pl_pub_eval *e;
    pl_gpu_params base;
    int dim;
    double *host; /* scratch: host_s per source */
} fit_ctx;

static double loss(void *ctx, const double *x)
{
    fit_ctx *c = ctx;
    pl_gpu_params gp = c->base;
    to_params(x, &gp, c->host, c->e->p->n_sources);
    double sum = 0;
    int n = 0;
    for (int i = 0; i < c->e->p->n; i++) {
        const pl_pub_figure *f = &c->e->p->fig[i];
        if (!counted(f, false)) continue;
        double pred = fmax(pl_pub_predict_s(c->e, i, &gp), c->e->kernels[i] * c->host[f->src]);
        double r = log(pred / f->s);
        sum += isfinite(r) ? r * r : 1e6, n++;
    }
    return n ? sum / n : 0;
}

/* Nelder-Mead with the usual coefficients (reflection 1, expansion 2, contraction 1/2,
 * shrink 1/2), from a simplex of steps of 0.5 around x; `iters` evaluations at most. */
static void nelder_mead(double (*loss)(void *, const double *), void *c, int D, double *x,
                        int iters)
{
    double *s = pl_malloc((size_t)(D + 1) * D * sizeof *s), *f = pl_malloc((D + 1) * sizeof *f);
    double *cen = pl_malloc(D * sizeof *cen), *r = pl_malloc(D * sizeof *r),
           *t = pl_malloc(D * sizeof *t);
#define S(i) (s + (size_t)(i)*D)
    for (int i = 0; i <= D; i++) {
        memcpy(S(i), x, D * sizeof *x);
        if (i) S(i)[i - 1] += 0.5;
        f[i] = loss(c, S(i));
    }
    for (int it = D + 1; it < iters;) {
        int lo = 0, hi = 0, nh;
        for (int i = 1; i <= D; i++) {
            if (f[i] < f[lo]) lo = i;
            if (f[i] > f[hi]) hi = i;
        }
        nh = hi == 0 ? 1 : 0;
        for (int i = 0; i <= D; i++)
            if (i != hi && f[i] > f[nh]) nh = i;
        if (f[hi] - f[lo] < 1e-10) break;
        memset(cen, 0, D * sizeof *cen);
        for (int i = 0; i <= D; i++)
            for (int j = 0; i != hi && j < D; j++)
                cen[j] += S(i)[j] / D;
        for (int j = 0; j < D; j++)
            r[j] = cen[j] + (cen[j] - S(hi)[j]);
        double fr = loss(c, r), ft;
        it++;
        if (fr < f[lo]) {
            for (int j = 0; j < D; j++)
                t[j] = cen[j] + 2 * (cen[j] - S(hi)[j]);
            ft = loss(c, t), it++;
            memcpy(S(hi), ft < fr ? t : r, D * sizeof *t), f[hi] = fmin(ft, fr);
        } else if (fr < f[nh]) {
            memcpy(S(hi), r, D * sizeof *r), f[hi] = fr;
        } else {
            for (int j = 0; j < D; j++)
                t[j] = cen[j] + 0.5 * (S(hi)[j] - cen[j]);
            ft = loss(c, t), it++;
            if (ft < f[hi]) {
                memcpy(S(hi), t, D * sizeof *t), f[hi] = ft;
                continue;
            }
            for (int i = 0; i <= D; i++) {
                if (i == lo) continue;
                for (int j = 0; j < D; j++)
                    S(i)[j] = S(lo)[j] + 0.5 * (S(i)[j] - S(lo)[j]);
                f[i] = loss(c, S(i)), it++;
            }
        }
    }
    int best = 0;
    for (int i = 1; i <= D; i++)
        if (f[i] < f[best]) best = i;
    memcpy(x, S(best), D * sizeof *x);
#undef S
    free(s), free(f), free(cen), free(r), free(t);
}

/* Median and largest |pred/pub - 1| over one set; in *band, max(pred/pub, pub/pred) - 1 over
 * the figures of the set whose GPU time, not the host's, is the prediction (the part a placer
 * prediction is: it does not model the host). */
static int errors(const pl_pub_eval *e, const pl_gpu_params *gp, bool held_out, double *median,
                  double *worst, double *band)
{
    double *rel = pl_malloc(((size_t)e->p->n + 1) * sizeof *rel);
    int n = 0;
    *worst = *band = 0;
    for (int i = 0; i < e->p->n; i++) {
        if (!counted(&e->p->fig[i], held_out)) continue;
        double gpu = pl_pub_predict_s(e, i, gp), q = pl_pub_total_s(e, i, gp) / e->p->fig[i].s;
        rel[n++] = fabs(q - 1);
        *worst = fmax(*worst, fabs(q - 1));
        if (gpu >= pl_pub_total_s(e, i, gp)) *band = fmax(*band, fmax(q, 1 / q) - 1);
    }
    *median = n ? pl_median(rel, n) : 0;
    free(rel);
    return n;
}

void pl_pub_fit(const pl_pub_eval *e, pl_gpu_params *gp, pl_pub_fit_result *r)
{
    memset(r, 0, sizeof *r);
    int S = e->p->n_sources;
    /* a fixed start, the roofline's defaults, so that the fit does not depend on the built-in
     * parameters it produced */
    /* Fixed starts, so that the fit does not depend on the built-in parameters it produced;
     * several, because the per-kernel time and the size term trade against each other and a
     * simplex settles in whichever valley it starts nearest: the best of them is kept. */
    static const double starts[][2] = {{10e-6, 256e3}, {1e-6, 4e6}, {30e-6, 1e3}};
    fit_ctx c = {.e = e, .dim = NG + S};
    c.host = pl_calloc((size_t)S + 1, sizeof *c.host);
    double *x = pl_malloc((size_t)c.dim * sizeof *x), *y = pl_malloc((size_t)c.dim * sizeof *y);
    double best = INFINITY;
    for (size_t k = 0; k < sizeof starts / sizeof *starts; k++) {
        c.base = (pl_gpu_params){.on = true,
                                 .eff_gemm = 0.6,
                                 .eff_conv = 0.6,
                                 .eff_tensor = 0.5,
                                 .eff_winograd = 0.6,
                                 .eff_mem = 0.7,
                                 .mem_half_bytes = starts[k][1],
                                 .kernel_s = starts[k][0]};
        for (int s = 0; s < S; s++)
            c.host[s] = 1e-6; /* start with the host never the bound */
        to_coords(&c.base, c.host, S, y);
        if (k == 0) r->rms_log_before = sqrt(loss(&c, y));
        for (int round = 0; round < 4; round++) /* restarts: a simplex can collapse early */
            nelder_mead(loss, &c, c.dim, y, 150 * c.dim);
        double l = loss(&c, y);
        if (l < best) best = l, memcpy(x, y, (size_t)c.dim * sizeof *x);
    }
    r->rms_log_after = sqrt(loss(&c, x));
    *gp = c.base;
    to_params(x, gp, e->p->source_host_s, S);
    double band_fit, band_held;
    r->n_fit = errors(e, gp, false, &r->fit_median, &r->fit_worst, &band_fit);
    r->n_held_out = errors(e, gp, true, &r->held_median, &r->held_worst, &band_held);
    gp->band = r->n_held_out ? band_held : band_fit;
    free(x), free(y), free(c.host);
}

/* ---- a GPU model's own profiles ---- */

typedef struct op_sample {
    const pl_op *op;
    const pl_graph *g;
    double measured_s;
} op_sample;

typedef struct prof_ctx {
    op_sample *s;
    int n;
    const pl_device *d;
    int sms;
    pl_gpu_params base;
} prof_ctx;

/* As pl_calib_fit's: Σ measured · (log estimate − log measured)², so that the long kernels
 * that make up a latency decide the fit, not the hundreds of microsecond-long ones. */
static double prof_loss(void *ctx, const double *x)
{
    prof_ctx *c = ctx;
    pl_gpu_params gp = c->base;
    double unused[1];
    to_params(x, &gp, unused, 0);
    double sum = 0, w = 0;
    for (int i = 0; i < c->n; i++) {
        double est = pl_gpu_op_s(c->s[i].op, c->s[i].g, c->d, c->sms, &gp, NULL);
        double r = est > 0 ? log(est / c->s[i].measured_s) : 10;
        sum += c->s[i].measured_s * r * r, w += c->s[i].measured_s;
    }
    return w > 0 ? sum / w : 0;
}

/* Every op a profile times above 0 that the kernel rules price (not a Constant, not a view). */
static int prof_samples(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                        const pl_device *d, prof_ctx *c, pl_err *err)
{
    int cap = 0;
    for (int k = 0; k < n; k++)
        cap += graphs[k]->n_ops;
    c->s = pl_calloc((size_t)cap + 1, sizeof *c->s);
    for (int k = 0; k < n; k++) {
        if (!pl_cost_model_matches(profiles[k]->device_model, d))
            return pl_err_set(err, "%s: profiled on device model '%s', not on %s",
                              profiles[k]->path ? profiles[k]->path : "a profile",
                              profiles[k]->device_model, d->model);
        for (int op = 0; op < graphs[k]->n_ops; op++) {
            const pl_op *o = &graphs[k]->ops[op];
            double t = pl_profile_lookup(profiles[k], o->name);
            if (t > 0 && pl_gpu_has_shapes(o, graphs[k]) &&
                pl_gpu_op_s(o, graphs[k], d, c->sms, &c->base, NULL) > 0)
                c->s[c->n++] = (op_sample){o, graphs[k], t};
        }
    }
    if (!c->n) return pl_err_set(err, "no profile times an op of its model that runs a kernel");
    return 0;
}

/* Median and largest |est / measured - 1| over the samples under gp. */
static void prof_errors(const prof_ctx *c, const pl_gpu_params *gp, double *median, double *worst)
{
    double *rel = pl_malloc(((size_t)c->n + 1) * sizeof *rel);
    *worst = 0;
    for (int i = 0; i < c->n; i++) {
        double est = pl_gpu_op_s(c->s[i].op, c->s[i].g, c->d, c->sms, gp, NULL);
        rel[i] = fabs(est / c->s[i].measured_s - 1);
        *worst = fmax(*worst, rel[i]);
    }
    *median = c->n ? pl_median(rel, c->n) : 0;
    free(rel);
}

int pl_calib_fit_gpu(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                     const pl_device *d, pl_calib_result *r, pl_err *err)
{
    memset(r, 0, sizeof *r);
    pl_cost_params_default(&r->params);
    const pl_gpu_spec *spec = pl_gpu_spec_find(d->model);
    prof_ctx c = {.d = d, .sms = spec ? spec->sms : 0, .base = r->params.gpu};
    if (d->kind != PL_DEV_GPU)
        return pl_err_set(err, "device model %s is no GPU: its profiles fit the roofline",
                          d->model);
    if (prof_samples(graphs, profiles, n, d, &c, err) < 0) {
        free(c.s);
        return -1;
    }
    r->n_samples = c.n;
    for (int i = 0; i < c.n; i++)
        r->class_samples[c.s[i].op->cls >= 0 && c.s[i].op->cls < PL_CLASS_COUNT
                             ? c.s[i].op->cls
                             : PL_CLASS_UNKNOWN]++;
    prof_errors(&c, &c.base, &r->median_before, &r->worst_before);
    double x[NG];
    to_coords(&c.base, NULL, 0, x);
    for (int round = 0; round < 4; round++)
        nelder_mead(prof_loss, &c, NG, x, 150 * NG);
    pl_gpu_params *gp = &r->params.gpu_model;
    *gp = c.base;
    double unused[1];
    to_params(x, gp, unused, 0);
    prof_errors(&c, gp, &r->median_after, &r->worst_after);
    /* the band: how far each profiled model's sum of estimates is from its measured sum, and
     * never less than a profile's own (PL_BAND_PROFILED) */
    gp->band = PL_BAND_PROFILED;
    double est_all = 0, meas_all = 0;
    for (int k = 0; k < n; k++) {
        double est = 0, meas = 0;
        for (int i = 0; i < c.n; i++)
            if (c.s[i].g == graphs[k])
                est += pl_gpu_op_s(c.s[i].op, c.s[i].g, d, c.sms, gp, NULL),
                    meas += c.s[i].measured_s;
        if (meas > 0 && est > 0) gp->band = fmax(gp->band, fmax(est / meas, meas / est) - 1);
        est_all += est, meas_all += meas;
    }
    r->total_ratio = meas_all > 0 ? est_all / meas_all : 1;
    snprintf(gp->device_model, sizeof gp->device_model, "%s", d->model);
    free(c.s);
    return 0;
}
