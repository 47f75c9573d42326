/* gp.c: Gaussian-process regression for the configuration search (docs/search.md,
 * "Gaussian process"): a Matérn 5/2 kernel with one length scale per feature, a constant mean,
 * Cholesky factorisations through LAPACKE, and hyper-parameters that maximise the log marginal
 * likelihood by projected gradient ascent on their logarithms. */
#include "placer/search.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define SQRT5 2.23606797749978969640
#define LOG_2PI 1.83787706640934548356

/* Bounds of the fit. Features are scaled to [0, 1], so a length below 0.05 would let the GP
 * interpolate between neighbouring configurations with nothing in common, and one above 20 is
 * already "this feature does not matter". Variances are relative to var(y) (see pl_gp_y_scale). */
#define GP_LEN_MIN 0.05
#define GP_LEN_MAX 20.0
#define GP_SIGNAL_MIN 1e-3
#define GP_SIGNAL_MAX 1e2
#define GP_NOISE_MIN 1e-8
#define GP_NOISE_MAX 1e-1
/* var(y) is floored so that a few equal latencies do not make the GP certain that everything
 * runs equally fast: y is a log time, and 1e-2 is a 10% standard deviation. */
#define GP_VAR_FLOOR 1e-2
/* Optimiser: starts (the first deterministic), accepted steps per start, halvings per step. */
#define GP_STARTS 3
#define GP_ITERS 20
#define GP_HALVINGS 30
#define GP_ARMIJO 1e-4
/* Stop a start when the log likelihood gained less than GP_FTOL over GP_WINDOW steps: 0.01 is
 * a 1% change of the evidence, far below what changes the model's predictions. */
#define GP_WINDOW 5
#define GP_FTOL 1e-2
/* Jitter when the Cholesky factorisation fails (rounding with near-duplicate points): up to
 * GP_JITTER_TRIES retries, adding σf² × 1e-10, 1e-8, ... to the diagonal. */
#define GP_JITTER_TRIES 5

#define GP_NP (PL_N_FEATURES + 2) /* log l_1..l_d, log σf², log σn² */

static double sq_dist(const double *a, const double *b, int d, const pl_gp_hyper *h)
{
    double r2 = 0;
    for (int i = 0; i < d; i++) {
        double t = (a[i] - b[i]) / h->length[i];
        r2 += t * t;
    }
    return r2;
}

static double matern_r(double r, double signal_var)
{
    return signal_var * (1 + SQRT5 * r + 5.0 / 3.0 * r * r) * exp(-SQRT5 * r);
}

double pl_matern52(const double *a, const double *b, int d, const pl_gp_hyper *h)
{
    return matern_r(sqrt(sq_dist(a, b, d, h)), h->signal_var);
}

/* Lower triangle of K + noise I, column-major. dpotrf reads and writes only that triangle,
 * so the strict upper one keeps each pair's scaled distance r for the gradient. */
static void build_k(const double *X, int n, int d, const pl_gp_hyper *h, double noise, double *K)
{
    for (int j = 0; j < n; j++) {
        K[j + j * n] = h->signal_var + noise;
        for (int i = j + 1; i < n; i++) {
            double r = sqrt(sq_dist(X + i * d, X + j * d, d, h));
            K[i + j * n] = matern_r(r, h->signal_var);
            K[j + i * n] = r;
        }
    }
}

static double mean_of(const double *y, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += y[i];
    return s / n;
}

/* Factors K + noise I into L and solves alpha = (K + noise I)^-1 (y - m). -1 if not PD. */
static int factor(const double *X, const double *y, int n, int d, const pl_gp_hyper *h,
                  double noise, double m, double *L, double *alpha)
{
    build_k(X, n, d, h, noise, L);
    if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, L, n) != 0) return -1;
    for (int i = 0; i < n; i++)
        alpha[i] = y[i] - m;
    return LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, 1, L, n, alpha, n) == 0 ? 0 : -1;
}

/* Adds ½ Σ_ij W_ij ∂K_ij/∂θ for every θ, W = ααᵀ − K⁻¹ (lower triangle given in W). */
static void lml_grad(const double *X, int n, int d, const pl_gp_hyper *h, const double *L,
                     const double *W, double *grad)
{
    memset(grad, 0, (size_t)(d + 2) * sizeof *grad);
    for (int j = 0; j < n; j++) {
        double w = W[j + j * n];
        grad[d] += 0.5 * w * h->signal_var; /* r = 0: the length scales do not matter */
        grad[d + 1] += 0.5 * w * h->noise_var;
        for (int i = j + 1; i < n; i++) {
            const double *a = X + i * d, *b = X + j * d;
            double r = L[j + i * n], e = exp(-SQRT5 * r); /* r from build_k */
            /* W is symmetric: the pair (i, j) stands for (j, i) too, hence w, not ½ w */
            w = W[i + j * n];
            grad[d] += w * h->signal_var * (1 + SQRT5 * r + 5.0 / 3.0 * r * r) * e;
            double c = w * h->signal_var * 5.0 / 3.0 * (1 + SQRT5 * r) * e;
            for (int k = 0; k < d; k++) {
                double t = (a[k] - b[k]) / h->length[k];
                grad[k] += c * t * t;
            }
        }
    }
}

/* The log marginal likelihood with workspace ws (2n² + n doubles); grad may be NULL. */
static double lml_ws(const double *X, const double *y, int n, int d, const pl_gp_hyper *h,
                     double *grad, double *ws)
{
    double *L = ws, *alpha = ws + (size_t)n * n, *W = alpha + n;
    double m = mean_of(y, n);
    if (factor(X, y, n, d, h, h->noise_var, m, L, alpha) < 0) return NAN;
    double f = -0.5 * n * LOG_2PI;
    for (int i = 0; i < n; i++)
        f -= 0.5 * (y[i] - m) * alpha[i] + log(L[i + i * n]);
    if (!grad) return f;
    /* K⁻¹ by solving against I: dpotri is threaded in OpenBLAS, which at n <= 40 costs
     * twice what it saves (and competes with the rest of the machine) */
    memset(W, 0, (size_t)n * n * sizeof *W);
    for (int i = 0; i < n; i++)
        W[i + i * n] = 1;
    if (LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, n, L, n, W, n) != 0) return NAN;
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++)
            W[i + j * n] = alpha[i] * alpha[j] - W[i + j * n];
    lml_grad(X, n, d, h, L, W, grad);
    return f;
}

double pl_gp_log_marginal(const double *X, const double *y, int n, int d, const pl_gp_hyper *h,
                          double *grad)
{
    if (n < 1 || d < 1 || d > PL_N_FEATURES) return NAN;
    double *ws = pl_malloc(((size_t)2 * n * n + n) * sizeof *ws);
    double f = lml_ws(X, y, n, d, h, grad, ws);
    free(ws);
    if (isnan(f) && grad)
        for (int i = 0; i < d + 2; i++)
            grad[i] = NAN;
    return f;
}

void pl_gp_free(pl_gp *gp)
{
    if (!gp) return;
    free(gp->X);
    free(gp->L);
    free(gp->alpha);
    memset(gp, 0, sizeof *gp);
}

static int check_inputs(const double *X, const double *y, int n, int d, pl_err *err)
{
    if (n < 1) return pl_err_set(err, "gp: no observations");
    if (d < 1 || d > PL_N_FEATURES)
        return pl_err_set(err, "gp: %d features (expected 1..%d)", d, PL_N_FEATURES);
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i])) return pl_err_set(err, "gp: y[%d] = %g is not finite", i, y[i]);
        for (int k = 0; k < d; k++)
            if (!isfinite(X[i * d + k]))
                return pl_err_set(err, "gp: X[%d][%d] = %g is not finite", i, k, X[i * d + k]);
    }
    return 0;
}

static int check_hyper(const pl_gp_hyper *h, int d, pl_err *err)
{
    for (int k = 0; k < d; k++)
        if (!(h->length[k] > 0) || !isfinite(h->length[k]))
            return pl_err_set(err, "gp: length scale %d = %g (must be > 0)", k, h->length[k]);
    if (!(h->signal_var > 0) || !isfinite(h->signal_var))
        return pl_err_set(err, "gp: signal variance %g (must be > 0)", h->signal_var);
    if (!(h->noise_var >= 0) || !isfinite(h->noise_var))
        return pl_err_set(err, "gp: noise variance %g (must be >= 0)", h->noise_var);
    return 0;
}

int pl_gp_condition(pl_gp *gp, const double *X, const double *y, int n, int d, const pl_gp_hyper *h,
                    pl_err *err)
{
    memset(gp, 0, sizeof *gp);
    if (check_inputs(X, y, n, d, err) < 0 || check_hyper(h, d, err) < 0) return -1;
    gp->n = n;
    gp->d = d;
    gp->h = *h;
    gp->mean = mean_of(y, n);
    gp->X = pl_malloc((size_t)n * d * sizeof *gp->X);
    memcpy(gp->X, X, (size_t)n * d * sizeof *gp->X);
    gp->L = pl_calloc((size_t)n * n, sizeof *gp->L);
    gp->alpha = pl_malloc((size_t)n * sizeof *gp->alpha);
    /* Near-duplicate points with little noise can make K numerically singular: jitter the
     * diagonal rather than fail, and record the noise actually used in gp->h. */
    double noise = h->noise_var;
    for (int t = 0; t <= GP_JITTER_TRIES; t++) {
        if (t > 0) noise = h->noise_var + h->signal_var * 1e-12 * pow(100, t);
        if (factor(X, y, n, d, h, noise, gp->mean, gp->L, gp->alpha) == 0) {
            gp->h.noise_var = noise;
            return 0;
        }
    }
    pl_gp_free(gp);
    return pl_err_set(err, "gp: K + σn² I is not positive definite, even with jitter %g", noise);
}

void pl_gp_predict(const pl_gp *gp, const double *x, double *mean, double *var)
{
    int n = gp->n, d = gp->d;
    double kbuf[64], *k = n <= 64 ? kbuf : pl_malloc((size_t)n * sizeof *k);
    double m = gp->mean;
    for (int i = 0; i < n; i++) {
        k[i] = pl_matern52(x, gp->X + i * d, d, &gp->h);
        m += k[i] * gp->alpha[i];
    }
    /* v = L⁻¹ k*, so that k*ᵀ (K + σn² I)⁻¹ k* = vᵀv */
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, gp->L, n, k, 1);
    double v = gp->h.signal_var;
    for (int i = 0; i < n; i++)
        v -= k[i] * k[i];
    if (k != kbuf) free(k);
    *mean = m;
    *var = v > 0 ? v : 0; /* rounding can make it slightly negative near an observation */
}

/* ---- fitting ---- */

typedef struct fit_ctx {
    const double *X, *y;
    int n, d, np;
    double lo[GP_NP], hi[GP_NP]; /* bounds on the log parameters */
    double *ws;
} fit_ctx;

static void theta_to_hyper(const double *th, int d, pl_gp_hyper *h)
{
    memset(h, 0, sizeof *h);
    for (int k = 0; k < PL_N_FEATURES; k++)
        h->length[k] = k < d ? exp(th[k]) : 1.0;
    h->signal_var = exp(th[d]);
    h->noise_var = exp(th[d + 1]);
}

static double objective(const fit_ctx *c, const double *th, double *grad)
{
    pl_gp_hyper h;
    theta_to_hyper(th, c->d, &h);
    return lml_ws(c->X, c->y, c->n, c->d, &h, grad, c->ws);
}

/* The scale of y for the bounds and starts: var(y) floored, or 1 when n = 1 (one latency
 * says nothing of the spread; a factor e is typical across cloud configurations). */
double pl_gp_y_scale(const double *y, int n)
{
    if (n < 2) return 1.0;
    double m = mean_of(y, n), s = 0;
    for (int i = 0; i < n; i++)
        s += (y[i] - m) * (y[i] - m);
    s /= n;
    return s > GP_VAR_FLOOR ? s : GP_VAR_FLOOR;
}

static void set_bounds(fit_ctx *c, double v)
{
    for (int k = 0; k < c->d; k++) {
        c->lo[k] = log(GP_LEN_MIN);
        c->hi[k] = log(GP_LEN_MAX);
    }
    c->lo[c->d] = log(GP_SIGNAL_MIN * v);
    c->hi[c->d] = log(GP_SIGNAL_MAX * v);
    c->lo[c->d + 1] = log(GP_NOISE_MIN * v);
    c->hi[c->d + 1] = log(GP_NOISE_MAX * v);
}


static double log_uniform(uint64_t *s, double lo, double hi)
{
    return log(lo) + pl_rng_uniform(s) * (log(hi) - log(lo));
}

/* Start 0 is the same for every seed (lengths 0.5, σf² = v, σn² = 1e-4 v); the others are
 * drawn from a box well inside the bounds, where the likelihood is not flat. */
static void start_point(int s, double v, int d, uint64_t *rng, double *th)
{
    for (int k = 0; k < d; k++)
        th[k] = s == 0 ? log(0.5) : log_uniform(rng, 0.1, 2.0);
    th[d] = s == 0 ? log(v) : log_uniform(rng, 0.3 * v, 3 * v);
    th[d + 1] = s == 0 ? log(1e-4 * v) : log_uniform(rng, 1e-6 * v, 1e-2 * v);
}

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* The next trial step after an accepted move s = Δθ, yv = Δg: Barzilai-Borwein's sᵀs / −sᵀy
 * (the inverse curvature along s), which makes plain gradient ascent converge in tens of steps
 * on these badly scaled likelihoods; where the function is not concave along s, a longer
 * step. */
static double bb_step(const double *s, const double *yv, int np, double t)
{
    double ss = 0, sy = 0;
    for (int k = 0; k < np; k++)
        ss += s[k] * s[k], sy += s[k] * yv[k];
    double next = sy < 0 ? ss / -sy : 2 * t;
    return clamp(next, 1e-8, 1e8);
}

/* One backtracking step from th (value f, gradient g) with trial step t; on success updates
 * th, f, g and t and returns 1; returns 0 when no step improves enough (a stationary point). */
static int ascent_step(const fit_ctx *c, double *th, double *f, double *g, double *t)
{
    double cand[GP_NP], gc[GP_NP], s[GP_NP], yv[GP_NP];
    for (int h = 0; h < GP_HALVINGS; h++, *t *= 0.5) {
        double slope = 0, moved = 0;
        for (int k = 0; k < c->np; k++) {
            cand[k] = clamp(th[k] + *t * g[k], c->lo[k], c->hi[k]);
            slope += (cand[k] - th[k]) * g[k];
            moved = fmax(moved, fabs(cand[k] - th[k]));
        }
        if (moved < 1e-9) return 0; /* projected gradient ~ 0 */
        double fc = objective(c, cand, gc);
        if (isfinite(fc) && fc >= *f + GP_ARMIJO * slope) {
            for (int k = 0; k < c->np; k++)
                s[k] = cand[k] - th[k], yv[k] = gc[k] - g[k];
            *t = bb_step(s, yv, c->np, *t);
            memcpy(th, cand, (size_t)c->np * sizeof *th);
            memcpy(g, gc, (size_t)c->np * sizeof *g);
            *f = fc;
            return 1;
        }
    }
    return 0;
}

/* Projected gradient ascent from th; returns the final log likelihood (NAN if th fails). */
static double ascend(const fit_ctx *c, double *th)
{
    double g[GP_NP];
    double f = objective(c, th, g);
    if (!isfinite(f)) return NAN;
    double gmax = 0;
    for (int k = 0; k < c->np; k++)
        gmax = fmax(gmax, fabs(g[k]));
    double t = 0.5 / fmax(gmax, 1e-12); /* the first step moves at most 0.5 in log space */
    double hist[GP_WINDOW];             /* f at the start of the last GP_WINDOW iterations */
    for (int it = 0; it < GP_ITERS; it++) {
        hist[it % GP_WINDOW] = f;
        if (!ascent_step(c, th, &f, g, &t)) break;
        if (it >= GP_WINDOW - 1 && f - hist[(it + 1) % GP_WINDOW] < GP_FTOL) break;
    }
    return f;
}

int pl_gp_fit(pl_gp *gp, const double *X, const double *y, int n, int d, unsigned seed, pl_err *err)
{
    memset(gp, 0, sizeof *gp);
    if (check_inputs(X, y, n, d, err) < 0) return -1;
    fit_ctx c = {.X = X, .y = y, .n = n, .d = d, .np = d + 2};
    double v = pl_gp_y_scale(y, n);
    set_bounds(&c, v);
    uint64_t rng = seed;
    double best[GP_NP], th[GP_NP], fbest = -INFINITY;
    start_point(0, v, d, &rng, best);
    if (n >= 2) { /* with one point there is nothing to fit: start 0 are the defaults */
        c.ws = pl_malloc(((size_t)2 * n * n + n) * sizeof *c.ws);
        for (int s = 0; s < GP_STARTS; s++) {
            start_point(s, v, d, &rng, th);
            double f = ascend(&c, th);
            if (f > fbest) { /* NAN never wins; ties keep the earlier start */
                fbest = f;
                memcpy(best, th, sizeof best);
            }
        }
        free(c.ws);
    }
    pl_gp_hyper h;
    theta_to_hyper(best, d, &h);
    return pl_gp_condition(gp, X, y, n, d, &h, err);
}
