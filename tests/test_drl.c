/* test_drl.c: AutoDeep's DRL placer (docs/learn.md, "The DRL placer"): registered with the
 * placers, it finds the brute-force optimum of small task graphs, deterministically for a
 * seed, and every plan it returns fits and runs. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/learn.h"
#include "placer/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two parallel chains and a join, on two devices where each chain is faster on a different
 * one: the optimum splits the chains. */
static const char *GRAPH = "{\"format\": \"placer-taskgraph/1\", \"name\": \"fork\", \"nodes\": ["
                           "{\"name\": \"a\", \"times_s\": {\"d0\": \"1 ms\", \"d1\": \"1 ms\"}},"
                           "{\"name\": \"b\", \"times_s\": {\"d0\": \"4 ms\", \"d1\": \"9 ms\"}},"
                           "{\"name\": \"c\", \"times_s\": {\"d0\": \"9 ms\", \"d1\": \"4 ms\"}},"
                           "{\"name\": \"b2\", \"times_s\": {\"d0\": \"3 ms\", \"d1\": \"7 ms\"}},"
                           "{\"name\": \"c2\", \"times_s\": {\"d0\": \"7 ms\", \"d1\": \"3 ms\"}},"
                           "{\"name\": \"j\", \"times_s\": {\"d0\": \"1 ms\", \"d1\": \"1 ms\"}}],"
                           "\"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": \"1 MB\"},"
                           "{\"from\": \"a\", \"to\": \"c\", \"bytes\": \"1 MB\"},"
                           "{\"from\": \"b\", \"to\": \"b2\", \"bytes\": \"1 MB\"},"
                           "{\"from\": \"c\", \"to\": \"c2\", \"bytes\": \"1 MB\"},"
                           "{\"from\": \"b2\", \"to\": \"j\", \"bytes\": \"1 MB\"},"
                           "{\"from\": \"c2\", \"to\": \"j\", \"bytes\": \"1 MB\"}]}";

static const char *CLUSTER =
    "{\"format\": \"placer-cluster/1\", \"name\": \"pair\", \"devices\": ["
    "{\"name\": \"d0\", \"model\": \"V100\"}, {\"name\": \"d1\", \"model\": \"V100\"}],"
    "\"links\": [{\"from\": \"d0\", \"to\": \"d1\", \"bandwidth_Bps\": \"10 GB/s\", "
    "\"latency_s\": \"10 us\", \"both_ways\": true}]}";

static double makespan(const pl_cost *k, const pl_plan *p)
{
    pl_sim_result r;
    pl_err err = {""};
    if (pl_simulate(k, p, NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    double t = r.makespan_s;
    pl_sim_result_free(&r);
    return t;
}

static double brute_force(const pl_cost *k)
{
    double best = INFINITY;
    for (int mask = 0; mask < 1 << k->n_ops; mask++) {
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        for (int v = 0; v < k->n_ops; v++)
            p->dev[v] = mask >> v & 1;
        best = fmin(best, makespan(k, p));
        pl_plan_free(p);
    }
    return best;
}

static void test_registered(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    assert_int_equal(pl_learn_register(&err), 0); /* idempotent */
    const pl_algo *a = pl_algo_find("drl");
    assert_non_null(a);
    assert_true(a->learned);
}

/* The optimum (both chains on their fast devices: 1 + 7 + 0.1 + 1 ms or so) found, and the
 * same plan twice for the same seed. */
static void test_finds_brute_force_optimum(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    pl_graph *g = tu_taskgraph(GRAPH);
    pl_cluster *c = pl_cluster_load(tu_tmpfile(CLUSTER, strlen(CLUSTER), ".json"), &err);
    if (!c) fail_msg("%s", err.msg);
    pl_cost *k = tu_cost(g, c);
    double opt = brute_force(k);
    const pl_algo *a = pl_algo_find("drl");
    pl_place_opts o = {.seed = 7, .fine_cuts = true};
    pl_plan *p1 = pl_plan_new(k->n_ops, k->n_devs), *p2 = pl_plan_new(k->n_ops, k->n_devs);
    assert_int_equal(pl_place(a, k, &o, p1, &err), 0);
    assert_int_equal(pl_place(a, k, &o, p2, &err), 0);
    assert_close(makespan(k, p1), opt, 1e-9);
    for (int v = 0; v < k->n_ops; v++)
        assert_int_equal(p1->dev[v], p2->dev[v]);
    pl_plan_free(p1), pl_plan_free(p2);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A zoo model on AutoDeep's testbed: a plan that fits, no slower than the slowest
 * single-device plan it could have sampled first, within the lower bound's reach. */
static void test_zoo_model_plan(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    pl_graph *g = tu_load("models/resnet50.onnx");
    pl_cluster *c = pl_cluster_load("examples/clusters/autodeep-4xk80.json", &err);
    pl_cost *k = tu_cost(g, c);
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts o = {.seed = 1, .time_limit_s = 5};
    assert_int_equal(pl_place(pl_algo_find("drl"), k, &o, p, &err), 0);
    pl_sim_result r;
    assert_int_equal(pl_simulate(k, p, NULL, &r, &err), 0);
    assert_false(r.oom);
    assert_true(r.makespan_s >= pl_lower_bound(k) * (1 - 1e-9));
    pl_sim_result_free(&r);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered),
        cmocka_unit_test(test_finds_brute_force_optimum),
        cmocka_unit_test(test_zoo_model_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
