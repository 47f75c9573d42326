/* test_train_mcmc.c: FlexFlow's MCMC over MCTS's action space (docs/train.md, "Baselines"):
 * on the hand-built Dense layer it reaches the optimum that brute force over every strategy
 * finds, it is deterministic for a seed, it never returns a strategy slower than its start
 * (data parallelism) even when its walk ends far above it, and `placer train` reports it. */
#include "testutil.h"

#include "placer/train.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A V100 and a P100 (given 1.5 times the V100's op times: uneven_build) on two hosts, 1 GB/s
 * apart. */
static const char *UNEVEN =
    "{\"format\": \"placer-cluster/1\", \"name\": \"uneven\", \"devices\": ["
    "{\"name\": \"g0\", \"model\": \"V100\", \"host\": \"m0\"},"
    "{\"name\": \"g1\", \"model\": \"P100\", \"host\": \"m1\"}],"
    "\"links\": [{\"from\": \"g0\", \"to\": \"g1\", \"bandwidth_Bps\": "
    "\"1 GB/s\", \"latency_s\": \"10 us\", \"both_ways\": true}]}";

/* The Dense layer on UNEVEN: the P100's times are the V100's x 1.5. */
static void uneven_build(tu_dense *f)
{
    tu_dense_build(f, UNEVEN, 2);
    for (int v = 0; v < f->t.g->n_ops; v++)
        pl_op_add_time(f->t.g, v, "P100-PCIE-16GB", 1.5 * f->t.g->ops[v].time_s[0]);
    pl_cost_free(f->x.k);
    f->x.k = tu_cost(f->t.g, f->c);
}

/* Iteration time of one strategy of the Dense layer's two op groups: per group a device-group
 * set (1: g0, 2: g1, 3: both) and an option, overlapped as MCTS's (and MCMC's) strategies. */
static double strategy_s(tu_dense *f, const int set[2], const pl_train_option opt[2])
{
    pl_train_strategy *s = pl_train_dp(&f->x, false, true);
    for (int i = 0; i < 2; i++) {
        s->P[i * 2] = set[i] & 1, s->P[i * 2 + 1] = (set[i] >> 1) & 1;
        s->O[i] = opt[i];
    }
    double t = tu_dense_eval_s(f, s);
    pl_train_strategy_free(s);
    return t;
}

/* The optimum by brute force, and in *n_opt how many strategies reach it. On two device
 * groups MCTS's device-group sets (all, each alone, each GPU model's, the k fastest) are every
 * non-empty subset, so its action space is 3 sets x 4 options per op group, 12^2 = 144
 * strategies. */
static double brute_force_s(tu_dense *f, int *n_opt)
{
    double best = INFINITY, t[144];
    for (int k = 0; k < 144; k++) {
        int a0 = k % 12, a1 = k / 12;
        int set[2] = {1 + a0 / 4, 1 + a1 / 4};
        pl_train_option opt[2] = {(pl_train_option)(a0 % 4), (pl_train_option)(a1 % 4)};
        best = fmin(best, t[k] = strategy_s(f, set, opt));
    }
    *n_opt = 0;
    for (int k = 0; k < 144; k++)
        *n_opt += t[k] == best;
    return best;
}

static pl_train_strategy *mcmc(tu_dense *f, const pl_train_mcmc_opts *o, pl_train_mcmc_result *r)
{
    pl_err err = {""};
    pl_train_strategy *s = pl_train_mcmc(&f->x, o, r, &err);
    if (!s) fail_msg("%s", err.msg);
    return s;
}

/* On UNEVEN two of the 144 strategies are optimal: both op groups replicated on both GPUs,
 * the second (the one with the weight) synchronised by a parameter server, the first (no
 * gradient) either way; data parallelism, the start, is 0.2 % slower. With MCTS's default
 * budget (300 proposals), FlexFlow's beta and its restarts, every seed tried reaches the
 * optimum; the strategy returned simulates to the time reported. */
static void test_reaches_brute_force_optimum(void **state)
{
    (void)state;
    tu_dense f;
    uneven_build(&f);
    int n_opt;
    double opt = brute_force_s(&f, &n_opt);
    int set_all[2] = {3, 3};
    pl_train_option ar[2] = {PL_OPT_ALLREDUCE, PL_OPT_ALLREDUCE};
    double dp = strategy_s(&f, set_all, ar);
    print_message("optimum %.4f ms, data parallelism %.4f ms\n", opt * 1e3, dp * 1e3);
    assert_int_equal(n_opt, 2);
    assert_true(opt < dp * (1 - 1e-3));
    for (unsigned seed = 1; seed <= 3; seed++) {
        pl_train_mcmc_result r;
        pl_train_strategy *s = mcmc(&f, &(pl_train_mcmc_opts){.seed = seed}, &r);
        assert_int_equal(r.iterations, 300);
        assert_close(r.start_s, dp, 1e-12);
        assert_close(r.best_s, opt, 1e-12);
        assert_close(tu_dense_eval_s(&f, s), r.best_s, 1e-12);
        pl_train_strategy_free(s);
    }
    tu_dense_free(&f);
}

/* The same seed, the same walk: the same strategy and the same counts; the strategies seen
 * more than once were simulated once. */
static void test_deterministic_for_a_seed(void **state)
{
    (void)state;
    tu_dense f;
    uneven_build(&f);
    pl_train_mcmc_opts o = {.iterations = 60, .seed = 7};
    pl_train_mcmc_result r1, r2;
    pl_train_strategy *a = mcmc(&f, &o, &r1), *b = mcmc(&f, &o, &r2);
    assert_memory_equal(a->P, b->P, 4);
    assert_memory_equal(a->O, b->O, 2 * sizeof *a->O);
    assert_memory_equal(&r1, &r2, sizeof r1);
    assert_int_equal(r1.iterations, 60);
    assert_true(r1.simulations <= 1 + 60 && r1.simulations <= 144);
    pl_train_strategy_free(a), pl_train_strategy_free(b);
    tu_dense_free(&f);
}

/* Nearly every proposal accepted (beta 1e-3 per second) and no restart: the walk goes uphill
 * and wanders, yet the answer is the best state visited, never slower than the start. On the
 * fast pair, where data parallelism is hard to beat, and on the uneven one. */
static void test_never_worse_than_start(void **state)
{
    (void)state;
    for (int c = 0; c < 2; c++) {
        tu_dense f;
        if (c)
            uneven_build(&f);
        else
            tu_dense_build(&f, NULL, 2);
        pl_train_mcmc_result r;
        pl_train_mcmc_opts o = {.iterations = 40, .beta_per_s = 1e-3, .restart_every = 1 << 30};
        pl_train_strategy *s = mcmc(&f, &o, &r);
        assert_true(r.uphill > 0);
        assert_true(r.best_s <= r.start_s);
        assert_close(tu_dense_eval_s(&f, s), r.best_s, 1e-12);
        pl_train_strategy_free(s);
        tu_dense_free(&f);
    }
}

/* placer train: a flexflow-mcmc row among the baselines of placer-train/1, a time that fits,
 * and --algo flexflow-mcmc shows it as the answer. */
static void test_cli_row(void **state)
{
    (void)state;
    const char *cmd = "train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json "
                      "--batch 4 --budget 5 --no-sfb --placer none --json 2>/dev/null";
    json_t *doc = tu_run_json(cmd);
    json_t *row = json_object_get(json_object_get(doc, "baselines"), "flexflow-mcmc");
    assert_true(json_is_real(row) && json_real_value(row) > 0);
    double t = json_real_value(row);
    json_decref(doc);
    doc = tu_run_json("train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json "
                      "--batch 4 --budget 5 --no-sfb --placer none --algo flexflow-mcmc --json "
                      "2>/dev/null");
    assert_string_equal(json_string_value(json_object_get(doc, "algo")), "flexflow-mcmc");
    assert_close(tu_num(doc, "iteration_s"), t, 1e-12);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reaches_brute_force_optimum),
        cmocka_unit_test(test_deterministic_for_a_seed),
        cmocka_unit_test(test_never_worse_than_start),
        cmocka_unit_test(test_cli_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
