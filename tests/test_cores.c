/* test_cores.c: a CPU device is its cores (docs/clusters.md "Cores", docs/cost.md "CPU
 * cores"): the price of an op on several cores, the refusal of bad "cores" values, the plan
 * that is the better of one multi-core device and a split over its cores, worked out by hand,
 * and the thread count that `placer split` writes and `placer run` hands the worker. */
#include "testutil.h"

#include "placer/cost.h"
#include "placer/place.h"
#include "placer/sim.h"
#include "placer/split.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two one-core devices core0, core1 (1 GFLOP/s, 1 GB/s, no launch), a link of latency lat_ms
 * between them, and "cpu": the two as one device of 2 cores at parallel efficiency e. */
static pl_cluster *cores_cluster(double e, double lat_ms)
{
    char text[2048];
    const char *figs = "\"memory_bytes\": \"1 GiB\", \"peak_flops_per_s\": \"1 GFLOP/s\", "
                       "\"mem_bandwidth_Bps\": \"1 GB/s\", \"launch_overhead_s\": 0";
    snprintf(text, sizeof text,
             "{\"format\": \"placer-cluster/1\", \"devices\": ["
             "{\"name\": \"core\", \"count\": 2, \"kind\": \"cpu\", \"model\": \"m\", %s},"
             "{\"name\": \"cpu\", \"kind\": \"cpu\", \"model\": \"m\", \"cores\": 2, "
             "\"parallel_efficiency\": %g, \"core_devices\": [\"core0\", \"core1\"], %s}],"
             "\"links\": [{\"from\": \"core0\", \"to\": \"core1\", \"bandwidth_Bps\": \"1 GB/s\", "
             "\"latency_s\": \"%g ms\", \"both_ways\": true}]}",
             figs, e, figs, lat_ms);
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), "c.json", &err);
    if (!c) fail_msg("%s", err.msg);
    return c;
}

/* A fork-join: a feeds b and c (0.6 GFLOP each, dense: 1 s on one core at the default 0.6 of
 * peak), both feed d; a and d compute nothing; tensors of 4 bytes. With `m`, an op m alone,
 * memory-bound (0.7 GB moved: 1 s at the default 0.7 of 1 GB/s). No other op moves bytes. */
static pl_graph *fork_join(bool m)
{
    char text[2048];
    snprintf(
        text, sizeof text,
        "{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
        "{\"name\": \"a\", \"class\": \"dense\", \"flops\": 0, \"moved_bytes\": 0},"
        "{\"name\": \"b\", \"class\": \"dense\", \"flops\": \"0.6 GFLOP\", \"moved_bytes\": 0},"
        "{\"name\": \"c\", \"class\": \"dense\", \"flops\": \"0.6 GFLOP\", \"moved_bytes\": 0},"
        "{\"name\": \"d\", \"class\": \"dense\", \"flops\": 0, \"moved_bytes\": 0}%s],"
        "\"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 4},"
        "{\"from\": \"a\", \"to\": \"c\", \"bytes\": 4},"
        "{\"from\": \"b\", \"to\": \"d\", \"bytes\": 4},"
        "{\"from\": \"c\", \"to\": \"d\", \"bytes\": 4}]}",
        m ? ",{\"name\": \"m\", \"class\": \"elementwise\", \"flops\": 0, "
            "\"moved_bytes\": \"0.7 GB\"}"
          : "");
    return tu_taskgraph(text);
}

static int op(const pl_graph *g, const char *name)
{
    for (int i = 0; i < g->n_ops; i++)
        if (!strcmp(g->ops[i].name, name)) return i;
    fail_msg("no op %s", name);
    return -1;
}

/* Compute runs on 1 + (2 - 1) 0.9 = 1.9 cores; the memory term is one core's bandwidth. */
static void test_price_on_cores(void **state)
{
    (void)state;
    pl_graph *g = fork_join(true);
    pl_cluster *c = cores_cluster(0.9, 1);
    pl_cost *k = tu_cost(g, c);
    int cpu = pl_cluster_find(c, "cpu"), core0 = pl_cluster_find(c, "core0");
    assert_close(pl_parallel_speed(2, 0.9), 1.9, 1e-9);
    assert_close(pl_device_speed(&c->devs[cpu]), 1.9, 1e-9);
    assert_close(pl_device_speed(&c->devs[core0]), 1, 1e-9);
    assert_close(pl_cost_op_s(k, op(g, "b"), core0), 1.0, 1e-9);
    assert_close(pl_cost_op_s(k, op(g, "b"), cpu), 1.0 / 1.9, 1e-9);
    assert_close(pl_cost_op_s(k, op(g, "m"), core0), 1.0, 1e-9);
    assert_close(pl_cost_op_s(k, op(g, "m"), cpu), 1.0, 1e-9);
    pl_cost_free(k);

    /* a profile times one thread: on 2 cores, b's measured 2 s is scaled by the estimate's
     * gain (1 / 1.9), m's (memory-bound: no gain) is kept */
    char dir[4096], path[4200];
    if (tu_mkdtemp(dir, sizeof dir, "placer-cores") < 0) fail_msg("mkdtemp");
    snprintf(path, sizeof path, "%s/p.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"format\": \"placer-profile/1\", \"device_model\": \"m\", "
          "\"times_s\": {\"b\": 2, \"m\": 3}}",
          f);
    fclose(f);
    pl_err err = {""};
    pl_profile *pr = pl_profile_load(path, &err);
    if (!pr) fail_msg("%s", err.msg);
    k = pl_cost_new(g, c, NULL, (const pl_profile *const *)&pr, 1, &err);
    if (!k) fail_msg("%s", err.msg);
    assert_close(pl_cost_op_s(k, op(g, "b"), core0), 2.0, 1e-9);
    assert_close(pl_cost_op_s(k, op(g, "b"), cpu), 2.0 / 1.9, 1e-9);
    assert_close(pl_cost_op_s(k, op(g, "m"), cpu), 3.0, 1e-9);
    pl_cost_free(k);
    pl_profile_free(pr);
    tu_rmtree(dir);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Whatever the algorithm: the better of the whole model on "cpu" (2 cores) and the
 * algorithm's plan over core0 and core1, never both. By hand: whole = b + c on 1 + e cores =
 * 2 / (1 + e) s; HEFT's split runs b on one core and c on the other at once, c after a's 4
 * bytes, and d beside c: 1 + lat + 4 B / 1 GB/s s (d beside b instead: a second hand-off). */
static double place_on(double e, double lat_ms, char *dev, size_t n)
{
    pl_graph *g = fork_join(false);
    pl_cluster *c = cores_cluster(e, lat_ms);
    pl_cost *k = tu_cost(g, c);
    pl_plan *p = pl_plan_new(g->n_ops, c->n_devs);
    pl_place_opts po = {0};
    pl_err err = {""};
    if (pl_place(pl_algo_find("heft"), k, &po, p, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(pl_plan_check_silicon(g, c, p->dev, "t", &err), 0);
    pl_sim_opts so = {0};
    pl_sim_result r = {0};
    if (pl_simulate(k, p, &so, &r, &err) < 0) fail_msg("%s", err.msg);
    double ms = r.makespan_s;
    snprintf(dev, n, "%s", c->devs[p->dev[op(g, "b")]].name);
    if (!strcmp(dev, "cpu")) assert_string_equal(p->algo, "single");
    pl_sim_result_free(&r);
    pl_plan_free(p);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
    return ms;
}

static void test_whole_or_split(void **state)
{
    (void)state;
    char dev[64];
    /* e 0.9, a slow hand-off (100 ms): whole 2 / 1.9 = 1.0526 s, the split at least 1.1 s */
    assert_close(place_on(0.9, 100, dev, sizeof dev), 2 / 1.9, 1e-9);
    assert_string_equal(dev, "cpu");
    /* e 0.5, a fast one (1 ms): whole 2 / 1.5 = 1.333 s, the split 1.001 s: it wins */
    double split = place_on(0.5, 1, dev, sizeof dev);
    assert_true(split >= 1.001 && split <= 1.002 + 1e-8);
    assert_true(!strcmp(dev, "core0") || !strcmp(dev, "core1"));
}

/* placer place says which view won: on gcn_cora, both cores in one session (predicted
 * 4.9 ms uncalibrated) beat HEFT's plan over the cores (9.2 ms). */
static void test_place_says_which(void **state)
{
    (void)state;
    json_t *j = tu_run_json("place models/gcn_cora.onnx --cluster "
                            "examples/clusters/local-cpu.json --json 2>/dev/null");
    assert_string_equal(json_string_value(json_object_get(j, "algorithm")), "single");
    json_t *c = json_array_get(json_object_get(j, "cores"), 0);
    assert_string_equal(json_string_value(json_object_get(c, "device")), "cpu");
    assert_int_equal(json_integer_value(json_object_get(c, "cores")), 2);
    assert_string_equal(json_string_value(json_object_get(c, "view")), "whole");
    assert_contains(json_string_value(json_object_get(j, "note")), "'cpu', all its 2 cores");
    json_decref(j);
}

/* placer multi shares devices among models: on a cluster that gives both views it places the
 * models on the cores, leaves 'cpu' out and says so, on stderr and in the JSON's "note"; every
 * op is on cpu0 or cpu1. (It refused this file: "placer multi does not choose between the two
 * views".) */
#define MULTI                                                                                      \
    "multi models/gcn_cora.onnx models/mobilenet_v3_large.onnx --cluster "                         \
    "examples/clusters/local-cpu.json --algos aswm,heft"
#define LEFT_OUT                                                                                   \
    "examples/clusters/local-cpu.json: 'cpu' left out, as it is also listed core by core "         \
    "(core_devices): the models are placed on the cores, side by side"

static void expect_on_cores(json_t *placement)
{
    const char *op;
    json_t *dev;
    json_object_foreach(placement, op, dev)
    {
        const char *d = json_string_value(dev);
        if (strcmp(d, "cpu0") && strcmp(d, "cpu1")) fail_msg("op '%s' is on '%s'", op, d);
    }
}

static void test_multi_on_the_cores(void **state)
{
    (void)state;
    char *out;
    int rc = tu_run(MULTI, &out);
    if (rc != 0) fail_msg("exit %d:\n%s", rc, out);
    assert_contains(out, "placer multi: note: " LEFT_OUT "\n");
    assert_contains(out, "devices: cpu0/cpu1\n");
    free(out);
    json_t *j = tu_run_json(MULTI " --json 2>/dev/null"), *a, *m;
    assert_string_equal(json_string_value(json_object_get(j, "note")), LEFT_OUT);
    size_t i, k;
    json_array_foreach(json_object_get(j, "algorithms"), i, a)
    {
        assert_true(json_is_true(json_object_get(a, "ok")));
        json_t *idle = json_object_get(a, "idle_s");
        assert_int_equal(json_object_size(idle), 2);
        assert_non_null(json_object_get(idle, "cpu0"));
        assert_non_null(json_object_get(idle, "cpu1"));
        json_array_foreach(json_object_get(a, "models"), k, m)
            expect_on_cores(json_object_get(m, "placement"));
    }
    assert_int_equal(i, 2);
    json_decref(j);
}

/* A plan may use "cpu" or its cores, not both: refused with both devices and an op on each. */
static void test_mixed_plan_refused(void **state)
{
    (void)state;
    pl_graph *g = fork_join(false);
    pl_cluster *c = cores_cluster(0.9, 1);
    int *dev = calloc((size_t)g->n_ops, sizeof *dev);
    for (int i = 0; i < g->n_ops; i++)
        dev[i] = pl_cluster_find(c, "cpu");
    dev[op(g, "c")] = pl_cluster_find(c, "core1");
    pl_err err = {""};
    assert_int_equal(pl_plan_check_silicon(g, c, dev, "plan", &err), -1);
    assert_non_null(strstr(err.msg, "devices 'core1' and 'cpu' are the same cores"));
    assert_non_null(strstr(err.msg, "op 'c' is on 'core1'"));
    free(dev);
    pl_cluster_free(c);
    pl_graph_free(g);
}

#define DEV "{\"format\": \"placer-cluster/1\", \"devices\": [{\"name\": \"a\", "
#define CPU                                                                                        \
    "\"kind\": \"cpu\", \"memory_bytes\": \"8 GiB\", \"peak_flops_per_s\": \"1 TFLOP/s\", "        \
    "\"mem_bandwidth_Bps\": \"10 GB/s\""
static void test_bad_cores(void **state)
{
    (void)state;
    static const struct {
        const char *text, *want[2];
    } bad[] = {
        {DEV CPU ", \"cores\": 0, \"parallel_efficiency\": 0.9}]}",
         {"bad.json: $.devices[0].cores: ", "cores 0 is outside 1..4096"}},
        {DEV CPU ", \"cores\": -2, \"parallel_efficiency\": 0.9}]}",
         {"bad.json: $.devices[0].cores: ", "cores -2 is outside"}},
        {DEV CPU ", \"cores\": 1.5, \"parallel_efficiency\": 0.9}]}",
         {"bad.json: $.devices[0].cores: ", "an integer"}},
        {DEV CPU ", \"cores\": \"2\", \"parallel_efficiency\": 0.9}]}",
         {"bad.json: $.devices[0].cores: ", "an integer"}},
        {DEV CPU ", \"cores\": 2}]}",
         {"bad.json: $.devices[0]: ", "2 cores need \"parallel_efficiency\""}},
        {DEV CPU ", \"cores\": 2, \"parallel_efficiency\": 1.5}]}",
         {"bad.json: $.devices[0].parallel_efficiency: ", "outside (0, 1]"}},
        {DEV CPU ", \"cores\": 2, \"parallel_efficiency\": 0}]}",
         {"bad.json: $.devices[0].parallel_efficiency: ", "outside (0, 1]"}},
        {DEV "\"model\": \"T4\", \"cores\": 2, \"parallel_efficiency\": 0.9}]}",
         {"bad.json: $.devices[0].cores: ", "a CPU device only"}},
        {DEV CPU ", \"cores\": 2, \"parallel_efficiency\": 0.9, \"core_devices\": [\"b\", \"z\"]}, "
                 "{\"name\": \"b\", " CPU "}]}",
         {"bad.json: $.devices[0].core_devices[1]: ", "unknown device \"z\""}},
        {DEV CPU
         ", \"cores\": 3, \"parallel_efficiency\": 0.9, \"core_devices\": [\"b0\", \"b1\"]}, "
         "{\"name\": \"b\", \"count\": 2, " CPU "}], \"links\": [{\"from\": \"b0\", \"to\": "
         "\"b1\", \"bandwidth_Bps\": \"1 GB/s\"}]}",
         {"bad.json: $.devices[0].core_devices: ", "2 cores together, device \"a\" 3"}},
        {DEV CPU ", \"cores\": 2, \"parallel_efficiency\": 0.9, \"core_devices\": [\"b\", \"b\"]}, "
                 "{\"name\": \"b\", " CPU "}]}",
         {"bad.json: $.devices[0].core_devices[1]: ",
          "device \"b\" is already the core of a device"}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl_err err = {""};
        const char *t = bad[i].text;
        pl_cluster *c = pl_cluster_load_buffer(t, strlen(t), "bad.json", &err);
        if (c) fail_msg("loaded but should not: %s", t);
        for (int k = 0; k < 2; k++)
            if (!strstr(err.msg, bad[i].want[k]))
                fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want[k]);
    }
}

/* placer split writes each stage's threads (its device's cores), and placer run hands them to
 * the worker: a fake worker (PLACER_ORT_WORKER) keeps the load request it got. */
static void test_split_and_run_threads(void **state)
{
    (void)state;
    char dir[4096], args[16384], js[4300], *out = NULL;
    if (tu_mkdtemp(dir, sizeof dir, "placer-cores") < 0) fail_msg("mkdtemp");
    /* the fastest single device is "cpu", both cores */
    snprintf(args, sizeof args,
             "place models/gcn_cora.onnx --cluster examples/clusters/local-cpu.json "
             "--algo single -o %s/plan.json",
             dir);
    if (tu_run(args, &out) != 0) fail_msg("%s", out);
    free(out);
    snprintf(args, sizeof args,
             "split models/gcn_cora.onnx --cluster examples/clusters/local-cpu.json "
             "--plan %s/plan.json -o %s/s",
             dir, dir);
    if (tu_run(args, &out) != 0) fail_msg("%s", out);
    free(out);
    snprintf(args, sizeof args, "%s/s/manifest.json", dir);
    char *m = NULL;
    size_t len;
    pl_err err = {""};
    if (!(m = pl_read_file(args, &len, &err))) fail_msg("%s", err.msg);
    assert_non_null(strstr(m, "\"device\": \"cpu\""));
    assert_non_null(strstr(m, "\"threads\": 2"));
    free(m);
    pl_split_manifest sm = {0};
    snprintf(args, sizeof args, "%s/s", dir);
    if (pl_split_manifest_load(args, &sm, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(sm.n, 1);
    assert_int_equal(sm.st[0].threads, 2);
    pl_split_manifest_free(&sm);

    tu_failing_worker(dir, "SIGKILL", js, sizeof js);
    setenv("PLACER_ORT_WORKER", js, 1);
    snprintf(args, sizeof args, "run %s/s --repeat 1 --warmup 0 --cache %s/inflated", dir, dir);
    assert_int_equal(tu_run(args, &out), 2);
    unsetenv("PLACER_ORT_WORKER");
    free(out);
    tu_expect_worker_gone(dir);
    snprintf(args, sizeof args, "%s/load.json", dir);
    if (!(m = pl_read_file(args, &len, &err))) fail_msg("%s", err.msg);
    assert_non_null(strstr(m, "\"stage_threads\":[2]"));
    free(m);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_price_on_cores),        cmocka_unit_test(test_whole_or_split),
        cmocka_unit_test(test_place_says_which),      cmocka_unit_test(test_mixed_plan_refused),
        cmocka_unit_test(test_multi_on_the_cores),    cmocka_unit_test(test_bad_cores),
        cmocka_unit_test(test_split_and_run_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
