/* test_multi_talos.c: `placer multi` on the Talos paper's workload (issue 32, docs/multi.md):
 * training tenants (--train, --batch) that are the very graphs `placer train` places, their
 * bad input refused by name, affinity (Eq. 2-3) on the paper's scale worked out by hand on a
 * pair of task graphs, and the spread of per-op GPU speedups the JSON reports. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/multi.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TALOS " --cluster examples/clusters/talos-1cpu-2gpu.json"
#define ALEX "models/talos/alexnet.onnx"
#define SQZ "models/talos/squeezenet1_1.onnx"

/* The op count `placer train MODEL --batch B` prints ("... training at batch B: N ops"). */
static int train_ops(const char *model, int batch)
{
    char cmd[512], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "train %s" TALOS " --batch %d --budget 1 --placer none --prior uniform", model, batch);
    assert_int_equal(tu_run(cmd, &out), 0);
    char want[64];
    snprintf(want, sizeof want, "training at batch %d: ", batch);
    const char *at = strstr(out, want);
    if (!at) fail_msg("placer %s printed no \"%s\": %s", cmd, want, out);
    int n = atoi(at + strlen(want));
    free(out);
    return n;
}

static json_t *model_of(json_t *doc, int m)
{
    return json_array_get(json_object_get(doc, "models"), (size_t)m);
}

/* A training tenant is `placer train`'s graph at the same batch: the paper's 64 for the CNNs
 * when no --batch is given, one --batch for all, or one per model in order. */
static void test_train_tenant_is_train_graph(void **state)
{
    (void)state;
    int alex64 = train_ops(ALEX, 64), sqz64 = train_ops(SQZ, 64), sqz8 = train_ops(SQZ, 8);
    json_t *doc = tu_run_json("multi --train " ALEX " " SQZ TALOS " --algo aswm --json");
    assert_true(json_is_true(json_object_get(json_object_get(doc, "options"), "train")));
    assert_int_equal(tu_num(model_of(doc, 0), "ops"), alex64);
    assert_int_equal(tu_num(model_of(doc, 0), "batch"), 64);
    assert_int_equal(tu_num(model_of(doc, 1), "ops"), sqz64);
    assert_int_equal(tu_num(model_of(doc, 1), "batch"), 64);
    assert_true(alex64 > 2 * 20); /* forward, backward and optimizer, not the 20 forward ops */
    json_decref(doc);
    doc =
        tu_run_json("multi --train --batch 64 --batch 8 " ALEX " " SQZ TALOS " --algo aswm --json");
    assert_int_equal(tu_num(model_of(doc, 1), "ops"), sqz8);
    assert_int_equal(tu_num(model_of(doc, 1), "batch"), 8);
    json_decref(doc);
    doc = tu_run_json("multi --train --batch 8 " ALEX " " SQZ TALOS " --algo aswm --json");
    assert_int_equal(tu_num(model_of(doc, 0), "batch"), 8);
    assert_int_equal(tu_num(model_of(doc, 1), "batch"), 8);
    json_decref(doc);
    /* inference stays the default */
    doc = tu_run_json("multi " ALEX " " SQZ TALOS " --algo aswm --json");
    assert_int_equal(tu_num(model_of(doc, 0), "ops"), 20);
    assert_null(json_object_get(model_of(doc, 0), "batch"));
    json_decref(doc);
}

static void test_train_bad_input(void **state)
{
    (void)state;
    tu_expect_refusal("multi --batch 64 " ALEX " " SQZ TALOS, "--batch: give --train too");
    tu_expect_refusal("multi --train --batch 64 --batch 32 --batch 16 " ALEX " " SQZ TALOS,
                      "--batch given 3 times for 2 models: give it once (every model) or once "
                      "per model");
    tu_expect_refusal("multi --train --batch 0 " ALEX " " SQZ TALOS,
                      "--batch: '0' is not a whole number");
    tu_expect_refusal("multi --train --batch many " ALEX " " SQZ TALOS, "--batch: 'many'");
    tu_expect_refusal("multi --train --run " ALEX " " SQZ TALOS, "--run with --train");
    tu_expect_refusal("multi --train --profile examples/multi/fig1-a.json " ALEX " " SQZ TALOS,
                      "--profile with --train");
    /* a model with nothing to train: pl_train_graph_build's message, named by --train */
    tu_expect_refusal("multi --train examples/multi/fig1-a.json examples/multi/fig1-b.json "
                      "--cluster examples/multi/fig1-cluster.json",
                      "--train: ");
}

/* Eq. 2-3 by hand on two chains of two ops whose speedups leave every packing band (NOD 2
 * each): a = MatMul (4 ms on the CPU, 1 on the GPU: 4) -> Softmax (1, 2: 0.5); b = Gather
 * (2, 2: 1) -> MatMul (3, 1: 3). Eq. 2 pairs (4, 1) and (0.5, 3): dis = (3 + 2.5) / (5 + 3.5)
 * = 11/17. Eq. 3: op types {MatMul, Softmax} and {Gather, MatMul}, 1 common of 3, so
 * Affi = (11/17) / (1/3) = 33/17 = 1.94. */
static void test_affinity_by_hand(void **state)
{
    (void)state;
#define NODE(n, ty, cpu, gpu)                                                                      \
    "{\"name\": \"" n "\", \"type\": \"" ty "\", \"times_s\": {\"fig1-cpu\": \"" cpu               \
    " ms\", \"fig1-gpu\": \"" gpu " ms\"}}"
#define CHAIN(g, n1, n2)                                                                           \
    "{\"format\": \"placer-taskgraph/1\", \"name\": \"" g "\", \"nodes\": [" n1 ", " n2 "], "      \
    "\"edges\": [{\"from\": \"" g "1\", \"to\": \"" g "2\", \"bytes\": 0}]}"
    pl_graph *m[2] = {
        tu_taskgraph(CHAIN("a", NODE("a1", "MatMul", "4", "1"), NODE("a2", "Softmax", "1", "2"))),
        tu_taskgraph(CHAIN("b", NODE("b1", "Gather", "2", "2"), NODE("b2", "MatMul", "3", "1")))};
    const char *names[] = {"a", "b"};
    pl_err err = {""};
    pl_graph *u = pl_graph_union(m, names, 2, &err);
    assert_non_null(u);
    pl_cluster *c = pl_cluster_load("examples/multi/fig1-cluster.json", &err);
    assert_non_null(c);
    pl_cost *k = tu_cost(u, c);
    pl_multi_analysis a;
    assert_int_equal(pl_multi_analyze(k, NULL, &a, &err), 0);
    assert_int_equal(a.nod[0], 2);
    assert_int_equal(a.nod[1], 2);
    assert_close(a.affinity[1], 33.0 / 17, 1e-9);
    assert_close(a.affinity[2], 33.0 / 17, 1e-9);
    assert_int_equal(a.n_groups, 1); /* above the default threshold 0.4 */
    pl_multi_analysis_free(&a);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(u);
    pl_graph_free(m[0]), pl_graph_free(m[1]);
}

/* The speedup spread in the JSON, on Fig. 1's first model: speedups 5, 1/3 and 1.5 (times
 * given by the task graph, so all three "given"). */
static void test_speedup_spread(void **state)
{
    (void)state;
    json_t *doc = tu_run_json("multi examples/multi/fig1-a.json examples/multi/fig1-b.json "
                              "--cluster examples/multi/fig1-cluster.json --algo aswm --json");
    json_t *sp = json_object_get(model_of(doc, 0), "speedups");
    assert_non_null(sp);
    assert_string_equal(json_string_value(json_object_get(sp, "over")), "cpu0");
    assert_int_equal(tu_num(sp, "ops"), 3);
    assert_int_equal(tu_num(sp, "given_ops"), 3);
    assert_close(tu_num(sp, "min"), 1.0 / 3, 1e-9);
    assert_close(tu_num(sp, "median"), 1.5, 1e-9);
    assert_close(tu_num(sp, "max"), 5, 1e-9);
    assert_close(tu_num(sp, "geomean"), cbrt(2.5), 1e-9);
    assert_close(tu_num(sp, "overall"), 9.0 / 6, 1e-9);
    assert_close(tu_num(sp, "below_1"), 1.0 / 3, 1e-9);
    json_decref(doc);
    char *out = NULL;
    assert_int_equal(tu_run("multi examples/multi/fig1-a.json examples/multi/fig1-b.json "
                            "--cluster examples/multi/fig1-cluster.json --algo aswm --explain",
                            &out),
                     0);
    assert_non_null(strstr(out, "per-op speedup over cpu0"));
    assert_non_null(strstr(out, "Fig. 2"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_tenant_is_train_graph),
        cmocka_unit_test(test_train_bad_input),
        cmocka_unit_test(test_affinity_by_hand),
        cmocka_unit_test(test_speedup_spread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
