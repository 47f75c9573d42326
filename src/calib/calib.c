/* calib.c: least squares on log time, weighted by measured time, over the efficiencies of
 * the roofline model (include/placer/calib.h, docs/calibrate.md). Log time, because a relative
 * error is what matters and a plain least squares on seconds would see only the squares of
 * the longest MatMuls. Weighted by time, because what the fitted model predicts is a latency,
 * a sum of op times, whose relative error is the time-weighted mean of its ops' relative
 * errors: unweighted, the hundreds of microsecond-long elementwise ops of a transformer (whose
 * profiled times are whole microseconds, inflated by the profiler) would decide the dense
 * efficiency as much as the MatMuls that take 90 % of the time. */
#include "placer/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRID 201 /* log-spaced points in [0.01, 1]: steps of 2.3 % */
#define ROUNDS 6 /* coordinate sweeps; the fit settles in three or four */
/* dense_half_flops is fitted only from this many dense samples of known GEMM size spanning
 * this many decades of size: fewer, or all of one size, cannot tell it from the efficiency */
#define DENSE_MIN_SAMPLES 20
#define DENSE_MIN_DECADES 2.0

/* An op with a measured time. The search evaluates the loss ~5,000 times per fit, and only
 * the efficiencies change between evaluations: the rest of the estimate is taken once. */
typedef struct sample {
    pl_cost_terms t;
    double measured_s;
} sample;

typedef struct fit {
    sample *s;
    int n;
    int *by_class[PL_CLASS_COUNT]; /* indices of each class's samples, in sample order */
    int n_class[PL_CLASS_COUNT];
    double profiler_s;       /* the profiler's own time per node, fitted beside the efficiencies */
    int n_sized;             /* dense samples with a GEMM size (pl_cost_terms.gemm_flops) */
    double gemm_lo, gemm_hi; /* their smallest and largest GEMM */
} fit;

static void fit_free(fit *f)
{
    free(f->s);
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        free(f->by_class[c]);
}

static int collect(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                   const pl_device *d, fit *f, pl_err *err)
{
    int cap = 0;
    for (int k = 0; k < n; k++) {
        /* the peaks are d's: times measured on another device model would fit them wrongly */
        if (!pl_cost_model_matches(profiles[k]->device_model, d))
            return pl_err_set(err,
                              "a profile is for device model '%s', but the fit is for device %s "
                              "of model '%s'",
                              profiles[k]->device_model, d->name, d->model);
        cap += graphs[k]->n_ops;
    }
    /* a profile times one intra-op thread: the fit is one core's, whatever d's cores */
    pl_device one = *d;
    one.cores = 1;
    f->s = pl_calloc(cap ? cap : 1, sizeof *f->s);
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        f->by_class[c] = pl_calloc(cap ? cap : 1, sizeof *f->by_class[c]);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < graphs[k]->n_ops; i++) {
            const pl_op *op = &graphs[k]->ops[i];
            double t = pl_profile_lookup(profiles[k], op->name);
            /* Constants cost 0 by rule and never run: nothing to fit */
            if (!(t > 0 && isfinite(t)) || !strcmp(op->type, "Constant")) continue;
            sample *s = &f->s[f->n];
            pl_cost_terms_of(op, graphs[k], &one, &s->t);
            s->measured_s = t;
            f->by_class[s->t.cls][f->n_class[s->t.cls]++] = f->n++;
            if (s->t.cls != PL_CLASS_DENSE || !(s->t.gemm_flops > 0)) continue;
            double g = s->t.gemm_flops;
            f->gemm_lo = f->n_sized ? fmin(f->gemm_lo, g) : g;
            f->gemm_hi = f->n_sized++ ? fmax(f->gemm_hi, g) : g;
        }
    if (f->n == 0)
        return pl_err_set(err, "the profiles time no op of their models (other than Constant)");
    return 0;
}

/* What the profile should show for the sample: the op's estimate plus the profiler's time. */
static double estimate(const fit *f, const sample *s, const pl_cost_params *p)
{
    return pl_cost_terms_s(&s->t, p) + f->profiler_s;
}

/* measured · (log estimate − log measured)² */
static double term(const fit *f, const sample *s, const pl_cost_params *p)
{
    double e = estimate(f, s, p);
    double r = log(e > 0 ? e : 1e-12) - log(s->measured_s);
    return s->measured_s * r * r;
}

/* The loss over every sample (cls < 0), or over class cls's only: searching that class's
 * compute efficiency changes no other term. */
static double loss(const fit *f, const pl_cost_params *p, int cls)
{
    double sum = 0;
    if (cls < 0)
        for (int i = 0; i < f->n; i++)
            sum += term(f, &f->s[i], p);
    else
        for (int j = 0; j < f->n_class[cls]; j++)
            sum += term(f, &f->s[f->by_class[cls][j]], p);
    return sum;
}

static void errors(const fit *f, const pl_cost_params *p, double *median, double *worst)
{
    double *e = pl_calloc(f->n ? f->n : 1, sizeof *e);
    for (int i = 0; i < f->n; i++)
        e[i] = fabs(estimate(f, &f->s[i], p) - f->s[i].measured_s) / f->s[i].measured_s;
    *median = pl_median(e, f->n); /* sorts e */
    *worst = f->n ? e[f->n - 1] : 0;
    free(e);
}

/* Sets *x to the grid value with the smallest loss (keeps it when nothing is better). */
static void search(const fit *f, pl_cost_params *p, double *x, int cls)
{
    double best = loss(f, p, cls), keep = *x;
    for (int g = 0; g < GRID; g++) {
        *x = pow(10, -2.0 + 2.0 * g / (GRID - 1));
        double l = loss(f, p, cls);
        if (l < best) best = l, keep = *x;
    }
    *x = keep;
}

/* A figure's scale (pl_cost_params.peak_scale or mem_scale, *x), searched on the whole loss
 * over a log-spaced grid of [1, PL_SCALE_MAX] only while the efficiency it multiplies is the
 * grid's top, 1: then the profiles ran faster than the device's figure allows at any
 * efficiency, i.e. the cluster file describes a slower CPU than this one (docs/calibrate.md,
 * "Another CPU"). Kept otherwise, and when no scale does better. */
static void search_scale(const fit *f, pl_cost_params *p, double *x, double eff)
{
    if (eff < 1) return;
    double best = loss(f, p, -1), keep = *x;
    for (int g = 0; g < GRID; g++) {
        *x = pow(PL_SCALE_MAX, (double)g / (GRID - 1));
        double l = loss(f, p, -1);
        if (l < best) best = l, keep = *x;
    }
    *x = keep;
}

/* The profiler's time per node: 0, or a grid of 0.05 to 20 us (log-spaced); as search. */
static void search_profiler(fit *f, const pl_cost_params *p)
{
    double best = loss(f, p, -1), keep = f->profiler_s;
    for (int g = -1; g < GRID; g++) {
        f->profiler_s = g < 0 ? 0 : 5e-8 * pow(400, (double)g / (GRID - 1));
        double l = loss(f, p, -1);
        if (l < best) best = l, keep = f->profiler_s;
    }
    f->profiler_s = keep;
}

/* dense_half_flops: 0 or a log-spaced grid from a hundredth of the smallest sampled GEMM to
 * the largest (beyond it nothing in the data bounds it), as search; refused, keeping the start's
 * value and saying why in r->dense_half_why, when the samples cannot tell it from the efficiency or
 * the best value is the largest size sampled (the data only say "more"). */
static void search_dense_half(const fit *f, pl_calib_result *r, double start)
{
    pl_cost_params *p = &r->params;
    double decades = f->n_sized ? log10(f->gemm_hi / f->gemm_lo) : 0;
    if (f->n_sized < DENSE_MIN_SAMPLES || decades < DENSE_MIN_DECADES) {
        snprintf(r->dense_half_why, sizeof r->dense_half_why,
                 "not fitted: %d dense ops of known GEMM size spanning %.1f decades (at least "
                 "%d over %g needed)",
                 f->n_sized, decades, DENSE_MIN_SAMPLES, DENSE_MIN_DECADES);
        return;
    }
    /* a half below a hundredth of the smallest GEMM changes no sample by 1 %: 0 says it */
    double lo = f->gemm_lo / 100, best = loss(f, p, PL_CLASS_DENSE), keep = p->dense_half_flops;
    for (int g = -1; g < GRID; g++) {
        p->dense_half_flops = g < 0 ? 0 : lo * pow(f->gemm_hi / lo, (double)g / (GRID - 1));
        double l = loss(f, p, PL_CLASS_DENSE);
        if (l < best) best = l, keep = p->dense_half_flops;
    }
    p->dense_half_flops = keep;
    if (keep >= f->gemm_hi * (1 - 1e-9)) {
        snprintf(r->dense_half_why, sizeof r->dense_half_why,
                 "refused: the best value is the largest GEMM sampled (%.3g FLOPs), which the "
                 "data do not bound",
                 f->gemm_hi);
        p->dense_half_flops = start;
    } else
        r->dense_half_why[0] = 0;
}

int pl_calib_scale_note(const pl_cost_params *p, const pl_device *d, char *out, size_t n)
{
    char dense[128] = "", mem[128] = "";
    if (p->peak_scale != 1)
        snprintf(dense, sizeof dense, "dense ops at %.2fx %s's fp32 peak (%.4g GFLOP/s)",
                 p->peak_scale, d->name, d->peak_flops_per_s[PL_PREC_FP32] / 1e9);
    if (p->mem_scale != 1)
        snprintf(mem, sizeof mem, "%smemory-bound ops at %.2fx %s's memory bandwidth (%.4g GB/s)",
                 *dense ? " and " : "", p->mem_scale, d->name, d->mem_bandwidth_Bps / 1e9);
    if (!*dense && !*mem) return out[0] = 0, 0;
    snprintf(out, n,
             "the profiles fitted need %s%s, more than any efficiency gives: the cluster file "
             "describes a slower CPU than the one profiled "
             "(device model '%s'), so its figures are scaled by the fit (peak_scale %.2f, "
             "mem_scale %.2f); measure this CPU with tools/measure_cpu.py for a file of its own "
             "(docs/calibrate.md, \"Another CPU\")",
             dense, mem, d->model, p->peak_scale, p->mem_scale);
    return 1;
}

double pl_calib_loss(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                     const pl_device *d, const pl_cost_params *p, double profiler_s, pl_err *err)
{
    fit f = {.profiler_s = profiler_s};
    double l = collect(graphs, profiles, n, d, &f, err) < 0 ? -1 : loss(&f, p, -1);
    fit_free(&f);
    return l;
}

int pl_calib_fit(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                 const pl_device *d, const pl_cost_params *start, pl_calib_result *r, pl_err *err)
{
    PL_ASSERT(n >= 0 && (n == 0 || (graphs && profiles)) && d && r);
    memset(r, 0, sizeof *r);
    if (start)
        r->params = *start;
    else
        pl_cost_params_default(&r->params);
    /* the efficiencies fitted are the roofline's: on a GPU, its kernel rules would replace
     * them (a GPU's profiles fit those: pl_calib_fit_gpu) */
    if (d->kind == PL_DEV_GPU) r->params.gpu.on = false;
    fit f = {0};
    if (collect(graphs, profiles, n, d, &f, err) < 0) {
        fit_free(&f);
        return -1;
    }
    r->n_samples = f.n;
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        r->class_samples[c] = f.n_class[c];
    errors(&f, &r->params, &r->median_before, &r->worst_before);
    double start_half = r->params.dense_half_flops;
    for (int round = 0; round < ROUNDS; round++) {
        search(&f, &r->params, &r->params.eff_memory, -1);
        for (int c = 0; c < PL_CLASS_COUNT; c++)
            if (r->class_samples[c]) search(&f, &r->params, &r->params.eff_compute[c], c);
        search_dense_half(&f, r, start_half);
        search_profiler(&f, &r->params);
        search_scale(&f, &r->params, &r->params.peak_scale, r->params.eff_compute[PL_CLASS_DENSE]);
        search_scale(&f, &r->params, &r->params.mem_scale, r->params.eff_memory);
    }
    errors(&f, &r->params, &r->median_after, &r->worst_after);
    r->profiler_s = f.profiler_s;
    double est = 0, meas = 0;
    for (int i = 0; i < f.n; i++)
        est += estimate(&f, &f.s[i], &r->params), meas += f.s[i].measured_s;
    r->total_ratio = meas > 0 ? est / meas : 1;
    fit_free(&f);
    return 0;
}
