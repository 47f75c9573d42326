/* test_multi_talos.c: `placer multi` on the Talos paper's workload (issue 32, docs/multi.md):
 * training tenants (--train, --batch) that are the very graphs `placer train` places, their
 * bad input refused by name, affinity (Eq. 2-3) on the paper's scale worked out by hand on a
 * pair of task graphs, and the spread of per-op GPU speedups the JSON reports. */
#include "testutil.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_tenant_is_train_graph),
        cmocka_unit_test(test_train_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
