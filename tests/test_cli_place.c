/* test_cli_place.c: `place`, `simulate` and `compare` as a user meets them. */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INTRA "examples/clusters/moirai-intra-server.json"

static json_t *run_json(const char *args)
{
    char cmd[1024];
    if (snprintf(cmd, sizeof cmd, "%s 2>/dev/null", args) >= (int)sizeof cmd)
        fail_msg("command too long: %s", args);
    return tu_run_json(cmd);
}

/* The plan `place` writes is scored by `simulate` to the same makespan. */
static void test_place_then_simulate(void **state)
{
    (void)state;
    char plan[256], trace[256], args[1024];
    snprintf(plan, sizeof plan, "%s", tu_tmpfile("", 0, ".json"));
    snprintf(trace, sizeof trace, "%s", tu_tmpfile("", 0, ".json"));
    snprintf(args, sizeof args,
             "place models/bert_base.onnx --cluster " INTRA " --algo heft -o %s --trace %s --json",
             plan, trace);
    json_t *p = run_json(args);
    assert_string_equal(json_string_value(json_object_get(p, "invariants")), "ok");
    double made = json_real_value(json_object_get(p, "makespan_s"));
    assert_true(made >= json_real_value(json_object_get(p, "lower_bound_s")));
    snprintf(args, sizeof args,
             "simulate models/bert_base.onnx --cluster " INTRA " --plan %s --json", plan);
    json_t *s = run_json(args);
    assert_close(json_real_value(json_object_get(s, "makespan_s")), made, 1e-12);
    json_decref(p), json_decref(s);
    /* the trace opens as Chrome trace JSON with one event per op at least */
    json_error_t e;
    json_t *t = json_load_file(trace, 0, &e);
    if (!t) fail_msg("trace is not JSON: %s", e.text);
    assert_true(json_array_size(json_object_get(t, "traceEvents")) >= 773);
    json_decref(t);
    /* the same plan is refused for another model, by its SHA-256 */
    snprintf(args, sizeof args, "simulate models/gpt2_small.onnx --cluster " INTRA " --plan %s",
             plan);
    tu_expect_refusal(args, "this plan was made for another model");
    remove(plan), remove(trace);
}

static void test_throughput_mode(void **state)
{
    (void)state;
    char plan[256], args[1024];
    snprintf(plan, sizeof plan, "%s", tu_tmpfile("", 0, ".json"));
    snprintf(args, sizeof args,
             "place models/resnet50.onnx --cluster " INTRA " --algo expert -o %s --json", plan);
    json_decref(run_json(args));
    snprintf(args, sizeof args,
             "simulate models/resnet50.onnx --cluster " INTRA " --plan %s --requests 8 --json",
             plan);
    json_t *s = run_json(args);
    double period = json_real_value(json_object_get(s, "period_s"));
    double latency = json_real_value(json_object_get(s, "latency_s"));
    assert_true(period > 0 && period <= latency);
    json_decref(s);
    remove(plan);
}

static void test_compare_lists_every_algorithm(void **state)
{
    (void)state;
    json_t *c = run_json("compare models/resnet50.onnx --cluster " INTRA " --time-limit 1s --json");
    json_t *algos = json_object_get(c, "algorithms");
    assert_int_equal(json_array_size(algos), 13); /* the 11 built-in ones, drl and google-rl */
    double lb = json_real_value(json_object_get(c, "lower_bound_s"));
    size_t k;
    json_t *a;
    json_array_foreach(algos, k, a)
    {
        if (!json_is_true(json_object_get(a, "ok")))
            fail_msg("%s failed: %s", json_string_value(json_object_get(a, "algorithm")),
                     json_string_value(json_object_get(a, "error")));
        assert_true(json_real_value(json_object_get(a, "makespan_s")) >= lb * (1 - 1e-12));
    }
    json_decref(c);
}

/* moirai says in its note whether it coarsened (and which part found the plan); with
 * --no-coarsen it solves the model's own graph. Both plans pass the invariant checker. */
/* Plans that pay: on two cores whose every stage costs 20 ms (a session run, as the simulator
 * charges it; HEFT's list schedule does not see it), HEFT cuts inception_v3 into dozens of
 * stages and is predicted far slower than the whole model on one core. `place` without --algo
 * returns the single-device plan, with a note on stderr and in the JSON; `--algo heft --fine-cuts`
 * asks for HEFT's plan as it cut it and gets it (without --fine-cuts its stages are merged first,
 * docs/placement.md, and it is still slower than one core). */
static const char SLOW_STAGES[] =
    "{\"format\": \"placer-cluster/1\", \"name\": \"slow-stages\", \"devices\": [{\"name\": "
    "\"cpu\", \"count\": 2, \"kind\": \"cpu\", \"model\": \"core\", \"memory_bytes\": \"8 GiB\", "
    "\"peak_flops_per_s\": \"110 GFLOP/s\", \"mem_bandwidth_Bps\": \"74 GB/s\", "
    "\"stage_overhead_s\": \"20 ms\"}], \"links\": [{\"from\": \"cpu0\", \"to\": \"cpu1\", "
    "\"bandwidth_Bps\": \"10 GB/s\", \"latency_s\": \"0.3 ms\", \"both_ways\": true}]}";

static void test_default_never_slower_than_one_device(void **state)
{
    (void)state;
    char cluster[256], args[1024];
    snprintf(cluster, sizeof cluster, "%s", tu_tmpfile(SLOW_STAGES, strlen(SLOW_STAGES), ".json"));
    snprintf(args, sizeof args, "place models/inception_v3.onnx --cluster %s --json", cluster);
    json_t *d = run_json(args);
    snprintf(args, sizeof args, "place models/inception_v3.onnx --cluster %s --algo single --json",
             cluster);
    json_t *one = run_json(args);
    snprintf(args, sizeof args,
             "place models/inception_v3.onnx --cluster %s --algo heft --fine-cuts --json", cluster);
    json_t *heft = run_json(args);
    assert_string_equal(json_string_value(json_object_get(d, "algorithm")), "single");
    double ms = json_real_value(json_object_get(d, "makespan_s"));
    assert_close(ms, json_real_value(json_object_get(one, "makespan_s")), 1e-12);
    assert_string_equal(json_string_value(json_object_get(heft, "algorithm")), "heft");
    assert_true(json_real_value(json_object_get(heft, "makespan_s")) > 2 * ms);
    assert_contains(json_string_value(json_object_get(d, "note")),
                    "heft: its plan is predicted at ");
    assert_null(json_object_get(heft, "note"));
    json_decref(d), json_decref(one), json_decref(heft);
    char *out = NULL;
    snprintf(args, sizeof args, "place models/inception_v3.onnx --cluster %s", cluster);
    assert_int_equal(tu_run(args, &out), 0);
    assert_contains(out, "placer: note: heft: its plan is predicted at ");
    assert_contains(out, "the single-device plan is returned instead");
    assert_contains(out, "algorithm   single");
    free(out);
    remove(cluster);
}

static void test_moirai_coarsen_switch(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(
        tu_run("place models/rnnlm.onnx --cluster " INTRA " --algo moirai --time-limit 1s", &out),
        0);
    assert_non_null(strstr(out, "coarsened 49 -> "));
    assert_non_null(strstr(out, "invariants  ok"));
    free(out);
    assert_int_equal(tu_run("place models/rnnlm.onnx --cluster " INTRA
                            " --algo moirai --time-limit 1s --no-coarsen",
                            &out),
                     0);
    assert_null(strstr(out, "coarsened"));
    assert_non_null(strstr(out, "final plan: "));
    assert_non_null(strstr(out, "invariants  ok"));
    free(out);
}

/* A catalogue configuration stands in for --cluster. METIS splitting 49 ops into 17 parts
 * prints warnings on stdout: they must not reach the JSON (a bug found by `deploy`). */
static void test_catalog_config_and_clean_json(void **state)
{
    (void)state;
    json_t *j = run_json("place models/rnnlm.onnx --catalog catalogs/aws.json --config "
                         "p2.16xlarge --algo metis --json");
    assert_string_equal(json_string_value(json_object_get(j, "cluster")), "p2.16xlarge");
    json_decref(j);
    tu_expect_refusal("place models/rnnlm.onnx --catalog catalogs/aws.json --config p9.huge",
                      "no configuration named 'p9.huge'");
    tu_expect_refusal("place models/rnnlm.onnx --catalog catalogs/aws.json", "--config NAME");
}

static void test_refusals(void **state)
{
    (void)state;
    tu_expect_refusal("place models/resnet50.onnx", "which cluster?");
    tu_expect_refusal("place models/resnet50.onnx --cluster " INTRA " --algo magic",
                      "unknown algorithm 'magic'");
    tu_expect_refusal("place models/resnet50.onnx --cluster /nonexistent.json",
                      "/nonexistent.json: cannot open");
    tu_expect_refusal("place models/resnet50.onnx --cluster " INTRA " --contention bus",
                      "--contention wants ports, pair or none");
    tu_expect_refusal("simulate models/resnet50.onnx --cluster " INTRA, "which plan?");
    tu_expect_refusal("compare models/resnet50.onnx --cluster " INTRA " --algos heft,magic",
                      "unknown placement algorithm 'magic'");
    tu_expect_refusal("place models/resnet50.onnx --cluster " INTRA " --time-limit 60",
                      "unit is missing");
}

/* place --algo drl --measured: its episodes run on this machine (7 placements asked: the 2
 * single-device ones, the expert-layers one and 4 episodes), and the latency of the plan it returns
 * is reported, only when it is the plan measured;
 * --measured and --episodes are refused for an algorithm that does not learn, and --measured
 * for a cluster with a GPU. */
static void test_drl_measured(void **state)
{
    (void)state;
    json_t *j =
        run_json("place models/gcn_cora.onnx --cluster examples/clusters/local-cpu-percore.json "
                 "--algo drl --measured --episodes 4 --seed 2 --json");
    json_t *m = json_object_get(j, "measured");
    assert_non_null(m);
    assert_true(json_real_value(json_object_get(m, "latency_s")) > 0);
    assert_int_equal(json_integer_value(json_object_get(m, "placements_run")) +
                         json_integer_value(json_object_get(m, "cache_hits")),
                     7);
    json_decref(j);
    /* on local-cpu.json the whole CPU competes with drl's plan on the cores: it is run too
     * (one placement more than the 7 above), the measurements decide, and the plan returned
     * carries its own latency, whichever wins */
    j = run_json("place models/gcn_cora.onnx --cluster examples/clusters/local-cpu.json "
                 "--algo drl --measured --episodes 4 --seed 2 --json");
    m = json_object_get(j, "measured");
    assert_true(json_real_value(json_object_get(m, "latency_s")) > 0);
    assert_int_equal(json_integer_value(json_object_get(m, "placements_run")) +
                         json_integer_value(json_object_get(m, "cache_hits")),
                     8);
    const char *algo = json_string_value(json_object_get(j, "algorithm"));
    if (!strcmp(algo, "single"))
        assert_contains(json_string_value(json_object_get(j, "note")),
                        "drl: its plan is measured at ");
    else
        assert_string_equal(algo, "drl");
    json_decref(j);
    tu_expect_refusal("place models/gcn_cora.onnx --cluster " INTRA " --algo drl --measured",
                      "--measured: examples/clusters/moirai-intra-server.json: device");
    tu_expect_refusal(
        "place models/gcn_cora.onnx --cluster examples/clusters/local-cpu-percore.json "
        "--algo heft --measured",
        "--measured is for a learned algorithm (drl, google-rl): heft places by the cost model");
    tu_expect_refusal(
        "compare models/gcn_cora.onnx --cluster examples/clusters/local-cpu-percore.json "
        "--algos heft,single --episodes 3",
        "--episodes is for learned algorithms (drl, google-rl), and --algos has none");
}

/* deploy --algos drl --place-episodes: every trial's plan is DRL's, and the chosen plan, saved,
 * simulates on its configuration to the latency the search reported. */
static void test_deploy_drl_episodes(void **state)
{
    (void)state;
    char plan[256], args[1024];
    snprintf(plan, sizeof plan, "%s", tu_tmpfile("", 0, ".json"));
    snprintf(args, sizeof args,
             "deploy models/gcn_cora.onnx --catalog catalogs/autodeep-testbed.json --slo 50ms "
             "--budget 3 --algos drl --place-episodes 6 -o %s --json",
             plan);
    json_t *d = run_json(args);
    json_t *trials = json_object_get(d, "trials");
    assert_int_equal(json_array_size(trials), 3);
    const char *chosen = json_string_value(json_object_get(d, "chosen"));
    assert_non_null(chosen);
    double latency = -1;
    for (size_t i = 0; i < json_array_size(trials); i++) {
        json_t *t = json_array_get(trials, i);
        assert_string_equal(json_string_value(json_object_get(t, "algorithm")), "drl");
        if (!strcmp(json_string_value(json_object_get(t, "configuration")), chosen))
            latency = json_real_value(json_object_get(t, "latency_s"));
    }
    assert_true(latency > 0);
    snprintf(args, sizeof args,
             "simulate models/gcn_cora.onnx --catalog catalogs/autodeep-testbed.json "
             "--config '%s' --plan %s --json",
             chosen, plan);
    json_t *s = run_json(args);
    assert_close(json_real_value(json_object_get(s, "makespan_s")), latency, 1e-9);
    json_decref(d), json_decref(s);
    remove(plan);
    tu_expect_refusal("deploy models/gcn_cora.onnx --catalog catalogs/autodeep-testbed.json "
                      "--slo 50ms --place-episodes 6",
                      "--place-episodes is a learned algorithm's budget");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_place_then_simulate),
        cmocka_unit_test(test_throughput_mode),
        cmocka_unit_test(test_compare_lists_every_algorithm),
        cmocka_unit_test(test_moirai_coarsen_switch),
        cmocka_unit_test(test_default_never_slower_than_one_device),
        cmocka_unit_test(test_catalog_config_and_clean_json),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_drl_measured),
        cmocka_unit_test(test_deploy_drl_episodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
