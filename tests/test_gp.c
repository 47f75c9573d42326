/* test_gp.c: the GP regression (posterior, marginal likelihood and its gradient, fitting) and
 * the acquisition functions of the search, against hand-computed closed-form values. */
#include "testutil.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "placer/search.h"

#define SQRT5 2.23606797749978969640

/* A fixed-seed generator for test data (splitmix64), independent of libc's rand. */
static double unif(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1.0p-53; /* in (0, 1): safe for log */
}

static double gauss(uint64_t *s)
{
    return sqrt(-2 * log(unif(s))) * cos(2 * M_PI * unif(s)); /* Box-Muller */
}

static pl_gp_hyper hyper1(double l, double sf, double sn)
{
    pl_gp_hyper h = {.signal_var = sf, .noise_var = sn};
    for (int k = 0; k < PL_N_FEATURES; k++)
        h.length[k] = l;
    return h;
}

static void test_matern52_values(void **state)
{
    (void)state;
    pl_gp_hyper h = hyper1(0.5, 2.0, 0);
    double a[2] = {0.1, 0.2}, b[2] = {0.1, 0.2};
    assert_close(pl_matern52(a, b, 2, &h), 2.0, 1e-15); /* r = 0: σf² */
    /* r = |(0.3, 0.4)| / 0.5 = 1: 2 (1 + √5 + 5/3) e^-√5 */
    b[0] = 0.4, b[1] = 0.6;
    assert_close(pl_matern52(a, b, 2, &h), 2 * (1 + SQRT5 + 5.0 / 3.0) * exp(-SQRT5), 1e-14);
    /* per-feature lengths: Δ = (0.3, 0.4), l = (0.3, 0.4) → r = √2 */
    h.length[0] = 0.3, h.length[1] = 0.4;
    double r = sqrt(2.0);
    assert_close(pl_matern52(a, b, 2, &h), 2 * (1 + SQRT5 * r + 5.0 / 3.0 * 2) * exp(-SQRT5 * r),
                 1e-14);
}

/* The 3-point example: d = 1, X = {0, 0.5, 1}, y = {1, 2, 0}, l = 0.5, σf² = 1, σn² = 0.01.
 * Mean m = 1. Kernel values (r = |Δ| / 0.5):
 *   k(r=1)   = (1 + √5 + 5/3) e^-√5           = 0.5239941088318203
 *   k(r=2)   = (1 + 2√5 + 20/3) e^-2√5        = 0.13866021913850426
 *   k(r=0.5) = (1 + √5/2 + 5/12) e^-√5/2      = 0.8286491424181252
 *   k(r=1.5) = (1 + 1.5√5 + 3.75) e^-1.5√5    = 0.2831632713397992
 * K + σn² I = [1.01 .52399 .13866; .52399 1.01 .52399; .13866 .52399 1.01], Cholesky
 *   L11 = √1.01 = 1.004987562112089, L21 = .52399/L11 = 0.5213936257386018,
 *   L31 = 0.13797207484547866, L22 = √(1.01 − L21²) = 0.8591557990487841,
 *   L32 = (.52399 − L31 L21)/L22 = 0.5261634141071426, L33 = 0.8450537072979144.
 * alpha = K⁻¹ (y − 1) = (−1.1102660244274298, 2.737536337421403, −2.257923943834366).
 * x = 0.25: k* = (k(.5), k(.5), k(1.5)); mean = 1 + k*·alpha = 1.7090750189723296,
 *   var = 1 − k*ᵀK⁻¹k* = 0.09690895106529218.
 * x = 0.5: k* = (k(1), 1, k(1)); mean = 1.9726246366257858, var = 0.009812005443285088
 *   (just under σn²: the latent value at an observed point).
 * log p(y) = −½ rᵀalpha − Σ log L_ii − (3/2) log 2π = −4.939360810095268.
 * (Checked with numpy; the test computes nothing but the library.) */
static const double X3[3] = {0, 0.5, 1}, Y3[3] = {1, 2, 0};

static void test_gp_posterior_3pt(void **state)
{
    (void)state;
    pl_gp_hyper h = hyper1(0.5, 1.0, 0.01);
    pl_gp gp;
    pl_err err;
    assert_int_equal(pl_gp_condition(&gp, X3, Y3, 3, 1, &h, &err), 0);
    assert_close(gp.mean, 1.0, 1e-15);
    assert_close(gp.L[0], 1.004987562112089, 1e-12);
    assert_close(gp.L[1 + 1 * 3], 0.8591557990487841, 1e-12);
    assert_close(gp.L[2 + 2 * 3], 0.8450537072979144, 1e-12);
    assert_close(gp.alpha[0], -1.1102660244274298, 1e-10);
    assert_close(gp.alpha[1], 2.737536337421403, 1e-10);
    assert_close(gp.alpha[2], -2.257923943834366, 1e-10);
    double x = 0.25, m, v;
    pl_gp_predict(&gp, &x, &m, &v);
    assert_close(m, 1.7090750189723296, 1e-9);
    assert_close(v, 0.09690895106529218, 1e-9);
    x = 0.5;
    pl_gp_predict(&gp, &x, &m, &v);
    assert_close(m, 1.9726246366257858, 1e-9);
    assert_close(v, 0.009812005443285088, 1e-9);
    /* far from the data: the prior (mean of y, σf²) */
    x = 100;
    pl_gp_predict(&gp, &x, &m, &v);
    assert_close(m, 1.0, 1e-12);
    assert_close(v, 1.0, 1e-12);
    pl_gp_free(&gp);
    assert_null(gp.L);
}

static void test_gp_log_marginal_3pt(void **state)
{
    (void)state;
    pl_gp_hyper h = hyper1(0.5, 1.0, 0.01);
    double g[3];
    assert_close(pl_gp_log_marginal(X3, Y3, 3, 1, &h, g), -4.939360810095268, 1e-12);
    assert_close(pl_gp_log_marginal(X3, Y3, 3, 1, &h, NULL), -4.939360810095268, 1e-12);
}

/* log p at hyper-parameters exp(th) (th: log l_1..l_d, log σf², log σn²) */
static double lml_at(const double *X, const double *y, int n, int d, const double *th)
{
    pl_gp_hyper h = hyper1(1, exp(th[d]), exp(th[d + 1]));
    for (int k = 0; k < d; k++)
        h.length[k] = exp(th[k]);
    return pl_gp_log_marginal(X, y, n, d, &h, NULL);
}

/* The analytic gradient against central differences (step 1e-5 in log space, truncation error
 * ~1e-10) at random data and random hyper-parameters. */
static void test_gp_log_marginal_grad_fd(void **state)
{
    (void)state;
    uint64_t rng = 42;
    for (int rep = 0; rep < 5; rep++) {
        int n = 6 + 3 * rep, d = 1 + rep;
        double X[30 * PL_N_FEATURES], y[30], th[PL_N_FEATURES + 2], g[PL_N_FEATURES + 2];
        for (int i = 0; i < n * d; i++)
            X[i] = unif(&rng);
        for (int i = 0; i < n; i++)
            y[i] = sin(5 * X[i * d]) + 0.3 * gauss(&rng);
        for (int k = 0; k < d; k++)
            th[k] = log(0.1 + unif(&rng));
        th[d] = log(0.2 + 2 * unif(&rng));
        th[d + 1] = log(1e-3 + 0.1 * unif(&rng));
        pl_gp_hyper h = hyper1(1, exp(th[d]), exp(th[d + 1]));
        for (int k = 0; k < d; k++)
            h.length[k] = exp(th[k]);
        assert_true(isfinite(pl_gp_log_marginal(X, y, n, d, &h, g)));
        for (int k = 0; k < d + 2; k++) {
            double e = 1e-5, save = th[k];
            th[k] = save + e;
            double fp = lml_at(X, y, n, d, th);
            th[k] = save - e;
            double fm = lml_at(X, y, n, d, th);
            th[k] = save;
            double fd = (fp - fm) / (2 * e);
            if (fabs(g[k] - fd) > 1e-5 * fmax(fabs(fd), 1e-2))
                fail_msg("rep %d param %d: analytic %.10g, finite difference %.10g", rep, k, g[k],
                         fd);
        }
    }
}

/* Exact duplicates with no noise make K singular: conditioning jitters instead of failing. */
static void test_gp_duplicates(void **state)
{
    (void)state;
    double X[4] = {0.2, 0.2, 0.2, 0.7}, y[4] = {1, 1, 1.1, 3};
    pl_gp_hyper h = hyper1(0.5, 1.0, 0);
    pl_gp gp;
    pl_err err;
    assert_int_equal(pl_gp_condition(&gp, X, y, 4, 1, &h, &err), 0);
    assert_true(gp.h.noise_var > 0); /* the jitter used is recorded */
    double m, v, x = 0.2;
    pl_gp_predict(&gp, &x, &m, &v);
    assert_true(fabs(m - 1.0333) < 0.01 && v >= 0 && v < 1e-2);
    pl_gp_free(&gp);
    assert_int_equal(pl_gp_fit(&gp, X, y, 4, 1, 7, &err), 0);
    pl_gp_predict(&gp, &x, &m, &v);
    assert_true(isfinite(m) && isfinite(v) && v >= 0);
    pl_gp_free(&gp);
}

static double smooth_fn(const double *x)
{
    return sin(3 * x[0]) + 0.5 * x[1] * x[1];
}

/* 12 points of a smooth 2-feature function: predictions at held-out points are close. */
static void test_gp_fit_recovers(void **state)
{
    (void)state;
    uint64_t rng = 3;
    double X[12 * 2], y[12];
    for (int i = 0; i < 12; i++) {
        X[2 * i] = unif(&rng), X[2 * i + 1] = unif(&rng);
        y[i] = smooth_fn(X + 2 * i);
    }
    pl_gp gp;
    pl_err err;
    assert_int_equal(pl_gp_fit(&gp, X, y, 12, 2, 1, &err), 0);
    double worst = 0;
    for (int t = 0; t < 50; t++) { /* held out, inside the convex-ish hull of the data */
        double x[2] = {0.15 + 0.7 * unif(&rng), 0.15 + 0.7 * unif(&rng)}, m, v;
        pl_gp_predict(&gp, x, &m, &v);
        worst = fmax(worst, fabs(m - smooth_fn(x)));
    }
    /* the function spans ~1.5: an error under 0.1 means the shape was learned */
    if (worst > 0.1) fail_msg("worst held-out error %g", worst);
    pl_gp_free(&gp);
}

static void test_gp_fit_deterministic(void **state)
{
    (void)state;
    uint64_t rng = 11;
    double X[40 * 6], y[40];
    for (int i = 0; i < 40 * 6; i++)
        X[i] = unif(&rng);
    for (int i = 0; i < 40; i++)
        y[i] = log(0.01 + X[i * 6] + 2 * X[i * 6 + 3] * X[i * 6 + 5]);
    pl_gp a, b;
    pl_err err;
    assert_int_equal(pl_gp_fit(&a, X, y, 40, 6, 5, &err), 0);
    assert_int_equal(pl_gp_fit(&b, X, y, 40, 6, 5, &err), 0);
    assert_memory_equal(&a.h, &b.h, sizeof a.h);
    /* the fitted parameters lie inside the documented bounds */
    for (int k = 0; k < 6; k++)
        assert_true(a.h.length[k] >= 0.05 && a.h.length[k] <= 20);
    pl_gp_free(&a);
    pl_gp_free(&b);
}

/* n = 1: nothing to fit; the defaults (l = 0.5, σf² = 1, σn² = 1e-4) condition the GP. */
static void test_gp_fit_one_point(void **state)
{
    (void)state;
    double X[2] = {0.3, 0.3}, y[1] = {-2}, m, v;
    pl_gp gp;
    pl_err err;
    assert_int_equal(pl_gp_fit(&gp, X, y, 1, 2, 0, &err), 0);
    assert_close(gp.h.length[0], 0.5, 1e-12);
    assert_close(gp.h.signal_var, 1.0, 1e-12);
    assert_close(gp.h.noise_var, 1e-4, 1e-12);
    pl_gp_predict(&gp, X, &m, &v);
    assert_close(m, -2, 1e-12);
    assert_true(v < 1e-3);
    pl_gp_free(&gp);
}

static void test_gp_errors(void **state)
{
    (void)state;
    pl_gp gp;
    pl_err err;
    pl_gp_hyper h = hyper1(0.5, 1, 0.01);
    assert_int_equal(pl_gp_condition(&gp, X3, Y3, 0, 1, &h, &err), -1);
    assert_non_null(strstr(err.msg, "no observations"));
    double ybad[3] = {1, NAN, 0};
    assert_int_equal(pl_gp_fit(&gp, X3, ybad, 3, 1, 0, &err), -1);
    assert_non_null(strstr(err.msg, "y[1]"));
    h.length[0] = 0;
    assert_int_equal(pl_gp_condition(&gp, X3, Y3, 3, 1, &h, &err), -1);
    assert_non_null(strstr(err.msg, "length scale 0"));
    assert_int_equal(pl_gp_condition(&gp, X3, Y3, 3, 7, &h, &err), -1);
    pl_gp_free(&gp);        /* safe after a failure */
    h = hyper1(0.5, 1, -1); /* negative noise: not positive definite */
    assert_true(isnan(pl_gp_log_marginal(X3, Y3, 3, 1, &h, NULL)));
}

/* best Φ(z) − price e^(mu + sigma²/2) Φ(z − sigma), z = (ln(best/price) − mu)/sigma. */
static void test_ei_lognormal(void **state)
{
    (void)state;
    /* price 2, mu 0, sigma 1, best 3: z = ln 1.5 = 0.4054651081081644,
     * Φ(z) = 0.6574321694851541, Φ(z − 1) = 0.2760772061741955, e^0.5 = 1.6487212707001282
     * → 3 × 0.65743… − 2 × 1.64872… × 0.27607… = 1.0619477841057408 */
    assert_close(pl_ei_lognormal(2, 0, 1, 3), 1.0619477841057408, 1e-13);
    /* price 0.5, mu 1, sigma 0.3, best 1.2: z = (ln 2.4 − 1)/0.3 = −0.41510420882033383,
     * Φ(z) = 0.33903280925370344, Φ(z − 0.3) = 0.2372723267260195, e^1.045 = 2.8433985236517687
     * → 1.2 × 0.33903… − 0.5 × 2.84339… × 0.23727… = 0.06950947934635215 */
    assert_close(pl_ei_lognormal(0.5, 1, 0.3, 1.2), 0.06950947934635215, 1e-12);
    /* sigma = 0: max(0, best − price e^mu) */
    assert_close(pl_ei_lognormal(2, log(1.0), 0, 3), 1.0, 1e-15);
    assert_true(pl_ei_lognormal(2, log(2.0), 0, 3) == 0);
    assert_close(pl_ei_lognormal(2, 0, 1e-9, 3), 1.0, 1e-8);
    /* nothing improves on a cost of 0 or less */
    assert_true(pl_ei_lognormal(2, 0, 1, 0) == 0);
    assert_true(pl_ei_lognormal(2, 0, 1, -1) == 0);
}

/* 200k samples of best − price e^Z with a fixed seed: the closed form lies within 4 standard
 * errors of the sample mean. */
static void test_ei_lognormal_monte_carlo(void **state)
{
    (void)state;
    const double cases[][4] = {{2, 0, 1, 3}, {0.5, 1, 0.3, 1.2}, {1, -1, 2, 0.1}};
    uint64_t rng = 2024;
    for (int c = 0; c < 3; c++) {
        double price = cases[c][0], mu = cases[c][1], sigma = cases[c][2], best = cases[c][3];
        const int N = 200000;
        double s = 0, s2 = 0;
        for (int i = 0; i < N; i++) {
            double imp = fmax(0, best - price * exp(mu + sigma * gauss(&rng)));
            s += imp, s2 += imp * imp;
        }
        double mean = s / N, se = sqrt((s2 / N - mean * mean) / N);
        double ei = pl_ei_lognormal(price, mu, sigma, best);
        if (fabs(ei - mean) > 4 * se)
            fail_msg("case %d: closed form %.6g, Monte Carlo %.6g ± %.2g", c, ei, mean, se);
    }
}

/* Φ((ln limit − mu)/sigma), the SLO probability (eq. 6). */
static void test_prob_meets(void **state)
{
    (void)state;
    /* mu = ln 0.05, sigma 0.5, limit 0.1: z = ln 2 / 0.5 = 1.3862943611198906,
     * Φ(z) = 0.9171714809983015 */
    assert_close(pl_prob_meets(log(0.05), 0.5, 0.1), 0.9171714809983015, 1e-14);
    assert_close(pl_prob_meets(log(0.1), 0.5, 0.1), 0.5, 1e-15);
    /* sigma = 0: a step at the limit */
    assert_true(pl_prob_meets(log(0.05), 0, 0.1) == 1);
    assert_true(pl_prob_meets(log(0.2), 0, 0.1) == 0);
    assert_true(pl_prob_meets(0, 1, 0) == 0);
    assert_true(pl_prob_meets(0, 1, INFINITY) == 1);
    /* Φ(ln 1.5) for mu 0, sigma 1, limit 1.5 */
    assert_close(pl_prob_meets(0, 1, 1.5), 0.6574321694851541, 1e-14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matern52_values),
        cmocka_unit_test(test_gp_posterior_3pt),
        cmocka_unit_test(test_gp_log_marginal_3pt),
        cmocka_unit_test(test_gp_log_marginal_grad_fd),
        cmocka_unit_test(test_gp_duplicates),
        cmocka_unit_test(test_gp_fit_recovers),
        cmocka_unit_test(test_gp_fit_deterministic),
        cmocka_unit_test(test_gp_fit_one_point),
        cmocka_unit_test(test_gp_errors),
        cmocka_unit_test(test_ei_lognormal),
        cmocka_unit_test(test_ei_lognormal_monte_carlo),
        cmocka_unit_test(test_prob_meets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
