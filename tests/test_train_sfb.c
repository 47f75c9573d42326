/* test_train_sfb.c: TAG-SFB's integer program (docs/train.md, "SFB") against brute force over
 * every duplication of small random subgraphs, the Dense layer case worked by hand, and a
 * solver that crashes or sends garbage reported as a failure. */
#include "testutil.h"

#include "../src/train/train_internal.h"

#include <stdlib.h>
#include <string.h>

/* The objective of alpha, or INFINITY when it breaks a constraint (b set to its least value). */
static double objective(const tr_sfb *p, const unsigned char *alpha)
{
    int D = p->D;
    double z = 0;
    for (int k = 0; k < p->n; k++) {
        if (k == p->g || !alpha[k]) continue;
        bool fed = false; /* a duplicated op must feed a duplicated one */
        for (int e = 0; e < p->m; e++)
            fed |= p->from[e] == k && alpha[p->to[e]];
        if (!fed) return INFINITY;
    }
    for (int i = 0; i < p->n; i++)
        z += (D - 1) * alpha[i] * p->time_s[i];
    for (int e = 0; e < p->m; e++) {
        int aj = p->from[e] >= 0 ? alpha[p->from[e]] : 0;
        if (alpha[p->to[e]] > aj) z += (double)D * (D - 1) * p->bytes[e] / p->tau;
    }
    z -= 2.0 * alpha[p->g] * (D - 1) / D * p->grad_bytes / p->tau;
    return z;
}

static void test_against_brute_force(void **state)
{
    (void)state;
    uint64_t rng = 7;
    for (int trial = 0; trial < 200; trial++) {
        int n = 1 + pl_rng_below(&rng, 7);
        tr_sfb p = {.n = n, .g = n - 1, .D = 2 + pl_rng_below(&rng, 7), .tau = 1e9};
        p.grad_bytes = 1e5 * (1 + pl_rng_below(&rng, 100));
        double time_s[8], bytes[32];
        int from[32], to[32];
        for (int i = 0; i < n; i++)
            time_s[i] = 1e-6 * pl_rng_below(&rng, 200);
        p.m = 0;
        for (int i = 0; i < n;
             i++) { /* each op reads one to three tensors: earlier ops or outside */
            int k = 1 + pl_rng_below(&rng, 3);
            for (int j = 0; j < k && p.m < 32; j++) {
                from[p.m] = i > 0 && pl_rng_below(&rng, 3) ? pl_rng_below(&rng, i) : -1;
                to[p.m] = i;
                bytes[p.m++] = 1e4 * pl_rng_below(&rng, 100);
            }
        }
        for (int i = 0; i + 1 < n; i++) { /* every op feeds a later one, as in an ancestor set */
            bool feeds = false;
            for (int e = 0; e < p.m; e++)
                feeds |= from[e] == i;
            if (!feeds && p.m < 32)
                from[p.m] = i, to[p.m] = i + 1 + pl_rng_below(&rng, n - i - 1), bytes[p.m++] = 1e4;
        }
        p.time_s = time_s, p.bytes = bytes, p.from = from, p.to = to;
        unsigned char alpha[8];
        double obj;
        char why[160];
        assert_int_equal(tr_sfb_solve(&p, alpha, &obj, why, sizeof why), 0);
        double best = INFINITY;
        for (int mask = 0; mask < 1 << n; mask++) {
            unsigned char a[8];
            for (int i = 0; i < n; i++)
                a[i] = mask >> i & 1;
            double z = objective(&p, a);
            if (z < best) best = z;
        }
        assert_true(fabs(obj - best) <= 1e-9 + 1e-6 * fabs(best));
        assert_true(fabs(objective(&p, alpha) - obj) <= 1e-9 + 1e-6 * fabs(obj));
    }
}

static int from_outside[] = {-1, -1}, into_g[] = {0, 0};

/* One op g reading two tensors from outside (a Dense layer's input and output gradient). */
static tr_sfb dense(double *time_s, double *bytes)
{
    return (tr_sfb){.n = 1,
                    .m = 2,
                    .g = 0,
                    .D = 2,
                    .tau = 1e9,
                    .grad_bytes = 4194304,
                    .time_s = time_s,
                    .bytes = bytes,
                    .from = from_outside,
                    .to = into_g};
}

/* A Dense layer's weight gradient dW = x^T dy, H1 = H2 = 1024 fp32 (4 MB), batch 4 on 2
 * devices: x and dy shards of 2 x 1024 x 4 B = 8 KB each. Duplicating dW's op costs its time
 * once more plus 2 x 1 x 2 x 8 KB of broadcast and saves 2 x 1/2 x 4 MB of AllReduce. */
static void test_dense_gradient_by_hand(void **state)
{
    (void)state;
    double time_s[] = {1e-5}, bytes[] = {8192, 8192};
    tr_sfb p = dense(time_s, bytes);
    unsigned char alpha[1];
    double obj;
    char why[160];
    assert_int_equal(tr_sfb_solve(&p, alpha, &obj, why, sizeof why), 0);
    assert_int_equal(alpha[0], 1);
    double want = 1e-5 + 2 * 1 * (8192 + 8192) / 1e9 - 2 * 0.5 * 4194304 / 1e9;
    assert_close(obj, want, 1e-9);
    p.D = 2, bytes[0] = bytes[1] = 4e6; /* a large batch: the factors outweigh the gradient */
    assert_int_equal(tr_sfb_solve(&p, alpha, &obj, why, sizeof why), 0);
    assert_int_equal(alpha[0], 0);
    assert_close(obj, 0, 1e-9);
}

/* CBC runs in a child process (common.h, "Isolated solves"): a crash or a stall there is a
 * failure with its reason, and alpha and obj are left alone; placer goes on. */
static void test_solver_fault(void **state)
{
    (void)state;
    double time_s[] = {1e-5}, bytes[] = {8192, 8192};
    tr_sfb p = dense(time_s, bytes);
    unsigned char alpha[1] = {7};
    double obj = 42;
    char why[160] = "";
    setenv("PLACER_TEST_SOLVER_FAULT", "segv", 1);
    int rc = tr_sfb_solve(&p, alpha, &obj, why, sizeof why);
    setenv("PLACER_TEST_SOLVER_FAULT", "garbage", 1);
    char why2[160] = "";
    int rc2 = tr_sfb_solve(&p, alpha, &obj, why2, sizeof why2);
    unsetenv("PLACER_TEST_SOLVER_FAULT");
    assert_int_equal(rc, -1);
    assert_non_null(strstr(why, "crashed (SIGSEGV)"));
    assert_int_equal(rc2, -1);
    assert_non_null(strstr(why2, "sent a malformed answer"));
    assert_int_equal(alpha[0], 7);
    assert_true(obj == 42);
    assert_int_equal(tr_sfb_solve(&p, alpha, &obj, why, sizeof why), 0); /* and then solves */
    assert_int_equal(alpha[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_dense_gradient_by_hand),
        cmocka_unit_test(test_solver_fault),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
