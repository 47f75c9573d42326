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
#include <stdlib.h>
#include <string.h>

#define GRID 201 /* log-spaced points in [0.01, 1]: steps of 2.3 % */
#define ROUNDS 4 /* coordinate sweeps; the fit settles in two or three */

typedef struct sample {
    const pl_op *op;
    const pl_graph *g;
    double measured_s;
} sample;

typedef struct fit {
    sample *s;
    int n;
    const pl_device *d;
} fit;

static int collect(const pl_graph *const *graphs, const pl_profile *const *profiles, int n, fit *f)
{
    int cap = 0;
    for (int k = 0; k < n; k++)
        cap += graphs[k]->n_ops;
    f->s = pl_calloc(cap ? cap : 1, sizeof *f->s);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < graphs[k]->n_ops; i++) {
            const pl_op *op = &graphs[k]->ops[i];
            double t = pl_profile_lookup(profiles[k], op->name);
            /* Constants cost 0 by rule and never run: nothing to fit */
            if (t > 0 && isfinite(t) && strcmp(op->type, "Constant"))
                f->s[f->n++] = (sample){op, graphs[k], t};
        }
    return f->n;
}

/* Σ measured · (log estimate − log measured)² */
static double loss(const fit *f, const pl_cost_params *p)
{
    double sum = 0;
    for (int i = 0; i < f->n; i++) {
        double e = pl_cost_estimate(f->s[i].op, f->s[i].g, f->d, p);
        double r = log(e > 0 ? e : 1e-12) - log(f->s[i].measured_s);
        sum += f->s[i].measured_s * r * r;
    }
    return sum;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void errors(const fit *f, const pl_cost_params *p, double *median, double *worst)
{
    double *e = pl_calloc(f->n ? f->n : 1, sizeof *e);
    for (int i = 0; i < f->n; i++) {
        double est = pl_cost_estimate(f->s[i].op, f->s[i].g, f->d, p);
        e[i] = fabs(est - f->s[i].measured_s) / f->s[i].measured_s;
    }
    pl_sort(e, (size_t)f->n, sizeof *e, cmp_double);
    *median = f->n ? e[f->n / 2] : 0;
    *worst = f->n ? e[f->n - 1] : 0;
    free(e);
}

/* Sets *x to the grid value with the smallest loss (keeps it when nothing is better). */
static void search(const fit *f, pl_cost_params *p, double *x)
{
    double best = loss(f, p), keep = *x;
    for (int g = 0; g < GRID; g++) {
        *x = pow(10, -2.0 + 2.0 * g / (GRID - 1));
        double l = loss(f, p);
        if (l < best) best = l, keep = *x;
    }
    *x = keep;
}

int pl_calib_fit(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                 const pl_device *d, const pl_cost_params *start, pl_calib_result *r, pl_err *err)
{
    memset(r, 0, sizeof *r);
    if (start)
        r->params = *start;
    else
        pl_cost_params_default(&r->params);
    fit f = {.d = d};
    if (collect(graphs, profiles, n, &f) == 0) {
        free(f.s);
        return pl_err_set(err, "the profiles time no op of their models (other than Constant)");
    }
    r->n_samples = f.n;
    for (int i = 0; i < f.n; i++)
        r->class_samples[f.s[i].op->cls]++;
    errors(&f, &r->params, &r->median_before, &r->worst_before);
    for (int round = 0; round < ROUNDS; round++) {
        search(&f, &r->params, &r->params.eff_memory);
        for (int c = 0; c < PL_CLASS_COUNT; c++)
            if (r->class_samples[c]) search(&f, &r->params, &r->params.eff_compute[c]);
    }
    errors(&f, &r->params, &r->median_after, &r->worst_after);
    free(f.s);
    return 0;
}
