/* test_cost.c: the cost model (docs/cost.md): the roofline by hand for a Conv on a V100, the
 * precision rule, Constant ops, given times (task graph by model, alias and device name;
 * profiles; a profile for another model refused), INFINITY where nothing can time an op; the
 * bytes moved by ops that read part of an input (Gather, Slice, Shape, views); the fit, also
 * weighted by time. */
#include "testutil.h"

#include "placer/calib.h"
#include "placer/cost.h"
#include "placer/plan.h"
#include "placer/sim.h"

#include <jansson.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* The defaults with the GPU kernel rules off: these tests check the roofline itself, which
 * CPUs and shapeless ops always get, on the GPUs their hand computations use
 * (test_gpu_kernels.c checks the rules). */
static void roofline_default(pl_cost_params *p)
{
    pl_cost_params_default(p);
    p->gpu.on = false;
}

static pl_cluster *cluster_of(const char *const *models, int n)
{
    pl_cluster *c = pl_cluster_new("c");
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", i);
        pl_cluster_add_device(c, name, PL_DEV_GPU, models[i]);
    }
    for (int i = 1; i < n; i++)
        pl_cluster_set_link(c, 0, i, 10e9, 1e-6, true);
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("%s", err.msg);
    return c;
}

static pl_cost *cost_of(const pl_graph *g, const pl_cluster *c, const pl_profile *pr)
{
    pl_err err = {""};
    const pl_profile *list[1] = {pr};
    pl_cost_params p;
    roofline_default(&p);
    pl_cost *k = pl_cost_new(g, c, &p, pr ? list : NULL, pr ? 1 : 0, &err);
    if (!k) fail_msg("%s", err.msg);
    return k;
}

/* flops = 2 · (1·64·56·56 outputs) · (64 inputs · 3·3) = 231,211,008;
 * bytes = X + W + Y = 802,816 + 147,456 + 802,816 = 1,753,088 (fp32).
 * V100-SXM2: fp32 15.7 TFLOP/s × 0.6 = 9.42e12 → 24.5447 us; 900 GB/s × 0.7 = 630e9 → 2.7827 us;
 * plus 5 us launch: 29.5447 us. Compute-bound. */
static void test_roofline_conv_v100(void **state)
{
    (void)state;
    pl_graph *g = tu_conv_graph(1, PL_DT_FLOAT);
    const pl_op *op = &g->ops[0];
    assert_int_equal(op->cls, PL_CLASS_DENSE);
    assert_close(op->flops, 231211008.0, 1e-12);
    assert_close(op->bytes_moved, 1753088.0, 1e-12);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    double want = 5e-6 + 231211008.0 / (15.7e12 * 0.6);
    assert_close(pl_cost_op_s(k, 0, 0), want, 1e-12);
    assert_close(pl_cost_op_s(k, 0, 0), 29.5447e-6, 1e-5);
    assert_int_equal(k->given[0], 0);
    assert_close(k->weight_bytes[0], 147456.0, 1e-12);
    assert_close(k->out_bytes[0], 802816.0, 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* fp16: the tensor-core peak, 125 TFLOP/s × 0.6 = 75e12 → 3.0828 us; bytes halve to 876,544
 * → 1.3913 us; so 8.0828 us. On a K80 (no fast fp16) the fp32 peak applies:
 * 4.37e12 × 0.6 → 88.1813 us + 10 us launch. */
static void test_roofline_precision(void **state)
{
    (void)state;
    pl_graph *g = tu_conv_graph(1, PL_DT_FLOAT16);
    pl_cluster *c = cluster_of((const char *[]){"V100", "K80"}, 2);
    pl_cost *k = cost_of(g, c, NULL);
    assert_close(pl_cost_op_s(k, 0, 0), 5e-6 + 231211008.0 / 75e12, 1e-12);
    assert_close(pl_cost_op_s(k, 0, 1), 10e-6 + 231211008.0 / (4.37e12 * 0.6), 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A memory-bound op: Relu on the same tensor: 2 × 802,816 bytes / 630e9 + 5 us. */
static void test_roofline_memory_bound(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("relu");
    int x = pl_graph_tensor(g, "X"), y = pl_graph_tensor(g, "Y");
    pl_tensor_set_shape(&g->tensors[x], PL_DT_FLOAT, 4, (int64_t[]){1, 64, 56, 56});
    pl_graph_add_input(g, x);
    int op = pl_graph_add_op(g, "relu", "Relu", "");
    pl_op_add_input(g, op, x);
    pl_op_add_output(g, op, y);
    pl_graph_add_output(g, y);
    pl_err err = {""};
    if (pl_graph_finalize(g, "relu", &err) < 0 || pl_graph_infer(g, &err) < 0)
        fail_msg("%s", err.msg);
    pl_cluster *c = cluster_of((const char *[]){"V100"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    assert_close(pl_cost_op_s(k, 0, 0), 5e-6 + 2 * 802816.0 / 630e9, 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A Constant's value is a weight: the op costs nothing, and its reader counts the weight. */
static void test_constant_is_free(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("const");
    int v = pl_graph_tensor(g, "v"), x = pl_graph_tensor(g, "x"), y = pl_graph_tensor(g, "y");
    pl_tensor_set_shape(&g->tensors[v], PL_DT_FLOAT, 1, (int64_t[]){256});
    pl_tensor_set_shape(&g->tensors[x], PL_DT_FLOAT, 1, (int64_t[]){256});
    g->tensors[v].flags |= PL_TENSOR_WEIGHT;
    pl_graph_add_input(g, x);
    int c0 = pl_graph_add_op(g, "c", "Constant", "");
    pl_op_add_output(g, c0, v);
    pl_op_add_attr(g, c0, "value", PL_ATTR_TENSOR)->tensor = v;
    int add = pl_graph_add_op(g, "add", "Add", "");
    pl_op_add_input(g, add, x);
    pl_op_add_input(g, add, v);
    pl_op_add_output(g, add, y);
    pl_graph_add_output(g, y);
    pl_err err = {""};
    if (pl_graph_finalize(g, "const", &err) < 0 || pl_graph_infer(g, &err) < 0)
        fail_msg("%s", err.msg);
    pl_cluster *c = cluster_of((const char *[]){"V100"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    assert_true(pl_cost_op_s(k, c0, 0) == 0);
    assert_close(k->weight_bytes[add], 1024, 1e-12);
    assert_close(k->out_bytes[add], 1024, 1e-12);
    assert_close(pl_cost_op_s(k, add, 0), 5e-6 + 3 * 1024.0 / 630e9, 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* ---- given times ---- */

static const char *times_graph =
    "{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
    " {\"name\": \"a\", \"class\": \"dense\", \"flops\": \"1 GFLOP\","
    "  \"times_s\": {\"V100\": 0.002, \"gpu1\": \"3 ms\"}},"
    " {\"name\": \"b\", \"times_s\": {\"v100-sxm2-16gb\": \"40 us\"}},"
    " {\"name\": \"c\", \"class\": \"elementwise\", \"flops\": 1000}],"
    " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": \"1 MB\"},"
    "            {\"from\": \"b\", \"to\": \"c\", \"bytes\": \"1 MB\"}]}";

static pl_graph *load_tg(const char *text)
{
    pl_err err = {""};
    pl_graph *g = pl_taskgraph_load_buffer(text, strlen(text), "t.json", NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    return g;
}

/* gpu0 is a V100-SXM2-16GB: "V100" is an alias of it, "v100-sxm2-16gb" its model in another
 * case. gpu1 (a T4) is named by a time. gpu2 (K80) has no time: 'a' has FLOPs, so it is
 * estimated (byte vectors count as fp32: 1e9 / (4.37e12 · 0.6) + 10 us plus nothing more, as
 * the memory term is smaller); 'b' has neither: INFINITY. */
static void test_taskgraph_times(void **state)
{
    (void)state;
    pl_graph *g = load_tg(times_graph);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB", "T4", "K80"}, 3);
    pl_cost *k = cost_of(g, c, NULL);
    int a = pl_graph_find_op(g, "a"), b = pl_graph_find_op(g, "b"), cc = pl_graph_find_op(g, "c");
    assert_close(pl_cost_op_s(k, a, 0), 0.002, 1e-12);
    assert_close(pl_cost_op_s(k, a, 1), 0.003, 1e-12);
    assert_close(pl_cost_op_s(k, a, 2), 10e-6 + 1e9 / (4.37e12 * 0.6), 1e-12);
    assert_int_equal(k->given[(size_t)a * 3 + 0], 1);
    assert_int_equal(k->given[(size_t)a * 3 + 2], 0);
    assert_close(pl_cost_op_s(k, b, 0), 40e-6, 1e-12);
    assert_true(isinf(pl_cost_op_s(k, b, 1)));
    assert_true(isinf(pl_cost_op_s(k, b, 2)));
    /* 'c' has no times at all: estimated everywhere. On the T4 it is memory-bound: its 1 MB
     * input / (320e9 · 0.7). */
    assert_close(pl_cost_op_s(k, cc, 1), 5e-6 + 1e6 / (320e9 * 0.7), 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

static pl_profile *profile_text(const char *text, pl_err *err)
{
    char path[256];
    snprintf(path, sizeof path, "%s", tu_tmpfile(text, strlen(text), ".json"));
    pl_profile *p = pl_profile_load(path, err);
    remove(path);
    return p;
}

/* `placer calibrate --machine`'s passes: each op's time is its median over the profiles
 * (3, 1 and 2 ms: 2; 5 and 7 with the third pass lacking the op: 6), an op only a later pass
 * times is not added; the spread is (largest − smallest) / median of the passes' totals. */
static void test_profile_median(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_profile *p[3] = {
        profile_text("{\"format\": \"placer-profile/1\", \"device_model\": \"cpu\","
                     " \"times_s\": {\"a\": \"3 ms\", \"b\": \"5 ms\"}}",
                     &err),
        profile_text("{\"format\": \"placer-profile/1\", \"device_model\": \"cpu\","
                     " \"times_s\": {\"a\": \"1 ms\", \"b\": \"7 ms\", \"c\": 1}}",
                     &err),
        profile_text("{\"format\": \"placer-profile/1\", \"device_model\": \"cpu\","
                     " \"times_s\": {\"a\": \"2 ms\"}}",
                     &err),
    };
    for (int j = 0; j < 3; j++)
        if (!p[j]) fail_msg("%s", err.msg);
    assert_int_equal(pl_profile_median(p, 0), -1);
    assert_int_equal(pl_profile_median(p, PL_PROFILE_MEDIAN_MAX + 1), -1);
    assert_int_equal(pl_profile_median(p, 3), 0);
    assert_int_equal(p[0]->n, 2);
    assert_close(pl_profile_lookup(p[0], "a"), 2e-3, 1e-15);
    assert_close(pl_profile_lookup(p[0], "b"), 6e-3, 1e-15);
    assert_true(pl_profile_lookup(p[0], "c") < 0);
    assert_close(pl_profile_lookup(p[1], "a"), 1e-3, 1e-15); /* the others are left as they were */
    for (int j = 0; j < 3; j++)
        pl_profile_free(p[j]);
    double total[] = {1.10, 0.95, 1.00, 1.02};
    assert_close(pl_machine_pass_spread(total, 3), 0.15, 1e-12);
    assert_close(pl_machine_pass_spread(total, 4), 0.15 / 1.01, 1e-12); /* median 1.01 */
    assert_close(pl_machine_pass_spread(total, 1), 0, 0);
    assert_close(pl_machine_pass_spread(total, 0), 0, 0);
}

/* A profile for "T4" times 'c' on gpu1 and nothing else; the op's own times still win. */
static void test_profile_override(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_profile *pr =
        profile_text("{\"format\": \"placer-profile/1\", \"device_model\": \"Tesla-T4\","
                     " \"times_s\": {\"c\": \"35 us\", \"a\": 0.5, \"zz\": 1}}",
                     &err);
    if (!pr) fail_msg("%s", err.msg);
    assert_int_equal(pr->n, 3);
    assert_close(pl_profile_lookup(pr, "c"), 35e-6, 1e-12);
    assert_true(pl_profile_lookup(pr, "nope") < 0);
    pl_graph *g = load_tg(times_graph);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB", "T4", "K80"}, 3);
    pl_cost *k = cost_of(g, c, pr);
    int a = pl_graph_find_op(g, "a"), cc = pl_graph_find_op(g, "c");
    assert_close(pl_cost_op_s(k, cc, 1), 35e-6, 1e-12);
    assert_int_equal(k->given[(size_t)cc * 3 + 1], 1);
    assert_close(pl_cost_op_s(k, a, 1), 0.003, 1e-12); /* the task graph's own time first */
    assert_int_equal(k->given[(size_t)cc * 3 + 0], 0);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
    pl_profile_free(pr);
}

static void refuse_profile(const char *text, const char *needle)
{
    pl_err err = {""};
    pl_profile *p = profile_text(text, &err);
    if (p) {
        pl_profile_free(p);
        fail_msg("accepted: %s", text);
    }
    assert_contains(err.msg, needle);
}

static void test_profile_refusals(void **state)
{
    (void)state;
    refuse_profile("{\"format\": \"placer-profile/2\", \"device_model\": \"T4\", \"times_s\": {}}",
                   "placer-profile/1");
    refuse_profile("{\"format\": \"placer-profile/1\", \"times_s\": {}}", "device_model");
    refuse_profile(
        "{\"format\": \"placer-profile/1\", \"device_model\": \"T4\", \"times_s\": {\"a\": -1}}",
        "$.times_s.a");
    refuse_profile("{\"format\": \"placer-profile/1\", \"device_model\": \"T4\","
                   " \"times_s\": {\"a\": \"3 GB\"}}",
                   "not a time");
    refuse_profile(
        "{\"format\": \"placer-profile/1\", \"device_model\": \"T4\", \"times_s\": {\"a\": true}}",
        "expected");
    refuse_profile(
        "{\"format\": \"placer-profile/1\", \"device_model\": \"T4\", \"model_sha256\": \"x\","
        " \"times_s\": {}}",
        "64 hexadecimal");
    refuse_profile("{\"format\": \"placer-profile/1\", \"device_model\": \"T4\", \"time_s\": {}}",
                   "did you mean");
}

/* A profile that names the model it was measured on is refused for another model. */
static void test_profile_wrong_model(void **state)
{
    (void)state;
    char gpath[256], sha[65], text[512];
    snprintf(gpath, sizeof gpath, "%s", tu_tmpfile(times_graph, strlen(times_graph), ".json"));
    pl_err err = {""};
    pl_graph *g = pl_taskgraph_load(gpath, NULL, &err);
    if (!g || pl_sha256_file(gpath, sha, &err) < 0) fail_msg("%s", err.msg);
    pl_cluster *c = cluster_of((const char *[]){"T4"}, 1);
    const char *fmt = "{\"format\": \"placer-profile/1\", \"device_model\": \"T4\","
                      " \"model_sha256\": \"%s\", \"times_s\": {\"c\": 1}}";
    snprintf(text, sizeof text, fmt, sha);
    pl_profile *good = profile_text(text, &err);
    snprintf(text, sizeof text, fmt,
             "0000000000000000000000000000000000000000000000000000000000000000");
    pl_profile *bad = profile_text(text, &err);
    assert_non_null(good);
    assert_non_null(bad);
    pl_cost *k = cost_of(g, c, good);
    assert_close(pl_cost_op_s(k, pl_graph_find_op(g, "c"), 0), 1, 1e-12);
    pl_cost_free(k);
    const pl_profile *list[] = {bad};
    assert_null(pl_cost_new(g, c, NULL, list, 1, &err));
    assert_contains(err.msg, "measured on another model");
    pl_profile_free(good);
    pl_profile_free(bad);
    pl_cluster_free(c);
    pl_graph_free(g);
    remove(gpath);
}

/* Implausible times are refused with the file and the op; a profile that times nothing or
 * gives every op 0 s is no measurement. One 0 among real times is a tiny op: kept. */
static void test_profile_plausibility(void **state)
{
    (void)state;
    refuse_profile("{\"format\": \"placer-profile/1\", \"device_model\": \"T4\","
                   " \"times_s\": {\"a\": 1e300}}",
                   "$.times_s.a: 1e+300 s is not a plausible op time (at most 3600 s)");
    refuse_profile("{\"format\": \"placer-profile/1\", \"device_model\": \"T4\","
                   " \"times_s\": {\"a\": \"61 min\"}}",
                   "3660 s is not a plausible op time");
    refuse_profile("{\"format\": \"placer-profile/1\", \"device_model\": \"T4\","
                   " \"times_s\": {\"a\": 0, \"b\": \"0 us\"}}",
                   "$.times_s: every one of its 2 times is 0 s");
    refuse_profile("{\"format\": \"placer-profile/1\", \"device_model\": \"T4\", \"times_s\": {}}",
                   "$.times_s: times no op");
    pl_err err = {""};
    pl_profile *p = profile_text("{\"format\": \"placer-profile/1\", \"device_model\": \"T4\","
                                 " \"times_s\": {\"a\": 0, \"b\": \"1 h\"}}",
                                 &err);
    if (!p) fail_msg("%s", err.msg);
    assert_true(pl_profile_lookup(p, "a") == 0);
    assert_close(pl_profile_lookup(p, "b"), 3600, 1e-12);
    pl_profile_free(p);
}

/* A profile for a device model the cluster does not have would be ignored in silence:
 * pl_cost_new refuses it, naming the file, the model and the cluster's models. A built-in
 * spec alias ("Tesla-T4" for "T4") is the same model. */
static void test_profile_other_device_model(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_profile *z9 = profile_text("{\"format\": \"placer-profile/1\", \"device_model\": "
                                  "\"Tesla-Z9\", \"times_s\": {\"c\": 1}}",
                                  &err);
    if (!z9) fail_msg("%s", err.msg);
    pl_graph *g = load_tg(times_graph);
    pl_cluster *c = cluster_of((const char *[]){"T4", "K80", "T4"}, 3);
    const pl_profile *list[] = {z9};
    assert_null(pl_cost_new(g, c, NULL, list, 1, &err));
    assert_contains(err.msg, z9->path);
    assert_contains(err.msg, "device model 'Tesla-Z9' matches no device of cluster");
    assert_contains(err.msg, "(its device models: T4, K80)");
    assert_int_equal(pl_cost_model_count("Tesla-T4", c), 2);
    assert_int_equal(pl_cost_model_count("k80", c), 1);
    assert_int_equal(pl_cost_model_count("Tesla-Z9", c), 0);
    const pl_cluster *two[] = {c, c};
    assert_int_equal(pl_cost_model_check("f.json", "Tesla-Z9", two, 2, &err), -1);
    assert_contains(err.msg, "f.json: device model 'Tesla-Z9' matches no device of any of the 2 "
                             "clusters (their device models: T4, K80)");
    assert_int_equal(pl_cost_model_check("f.json", "K80", two, 2, &err), 0);
    pl_profile_free(z9);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The example profile makes the diamond runnable on a T4: 'd' has times for V100 and K80 only
 * and no FLOPs (INFINITY without it), 'a' is estimated without it. */
static void test_example_profile(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_profile *pr = pl_profile_load("examples/profiles/diamond-t4.json", &err);
    if (!pr) fail_msg("%s", err.msg);
    pl_graph *g = pl_taskgraph_load("examples/taskgraphs/diamond.json", NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    pl_cluster *c = cluster_of((const char *[]){"T4"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    assert_true(isinf(pl_cost_op_s(k, pl_graph_find_op(g, "d"), 0)));
    pl_cost_free(k);
    k = cost_of(g, c, pr);
    assert_close(pl_cost_op_s(k, pl_graph_find_op(g, "a"), 0), 2.4e-3, 1e-12);
    assert_close(pl_cost_op_s(k, pl_graph_find_op(g, "d"), 0), 80e-6, 1e-12);
    assert_int_equal(k->given[pl_graph_find_op(g, "b")], 0);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
    pl_profile_free(pr);
}

static void test_params(void **state)
{
    (void)state;
    pl_cost_params p;
    roofline_default(&p);
    assert_close(p.eff_compute[PL_CLASS_DENSE], 0.6, 1e-12);
    assert_close(p.eff_memory, 0.7, 1e-12);
    pl_graph *g = load_tg(times_graph);
    pl_cluster *c = cluster_of((const char *[]){"T4"}, 1);
    p.eff_memory = 0;
    pl_err err = {""};
    assert_null(pl_cost_new(g, c, &p, NULL, 0, &err));
    assert_contains(err.msg, "memory efficiency");
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Transfers: latency + bytes / bandwidth, 0 on one device, unknown sizes count 0. */
static void test_xfer(void **state)
{
    (void)state;
    pl_graph *g = load_tg(times_graph);
    pl_cluster *c = cluster_of((const char *[]){"T4", "T4"}, 2);
    pl_cost *k = cost_of(g, c, NULL);
    int t = g->ops[0].outputs[0];
    assert_close(pl_cost_xfer_s(k, t, 0, 1), 1e-6 + 1e6 / 10e9, 1e-12);
    assert_true(pl_cost_xfer_s(k, t, 1, 1) == 0);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* placer-cost-params/1 (placer calibrate -o): read values, defaults for what is left out,
 * refusals with the JSON path; and `place --cost-params` uses them (halving every efficiency
 * slows the plan down). */
static void test_params_file(void **state)
{
    (void)state;
    const char *ok =
        "{\"format\": \"placer-cost-params/1\", \"device_model\": \"local-epyc-core\", "
        "\"eff_compute\": {\"dense\": 0.3, \"elementwise\": 0.125}, "
        "\"eff_memory\": 0.35, \"samples\": 10}";
    pl_cost_params p, def;
    pl_err err = {""};
    roofline_default(&def);
    if (pl_cost_params_load(tu_tmpfile(ok, strlen(ok), ".json"), &p, &err) < 0)
        fail_msg("%s", err.msg);
    assert_close(p.eff_compute[PL_CLASS_DENSE], 0.3, 1e-12);
    assert_close(p.eff_compute[PL_CLASS_ELEMENTWISE], 0.125, 1e-12);
    assert_close(p.eff_compute[PL_CLASS_REDUCTION], def.eff_compute[PL_CLASS_REDUCTION], 1e-12);
    assert_close(p.eff_memory, 0.35, 1e-12);
    assert_string_equal(p.device_model, "local-epyc-core"); /* what --cost-params checks */
    assert_int_equal(p.runtime_fusion, PL_FUSION_ORT);      /* the default */
    const char *none = "{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, "
                       "\"eff_memory\": 0.5, \"runtime_fusion\": \"none\"}";
    if (pl_cost_params_load(tu_tmpfile(none, strlen(none), ".json"), &p, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(p.runtime_fusion, PL_FUSION_NONE);
    assert_close(p.runtime_conv_ratio, 1, 0); /* the default: no knowledge */
    const char *ratio = "{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, "
                        "\"eff_memory\": 0.5, \"runtime_conv_ratio\": 0.8}";
    if (pl_cost_params_load(tu_tmpfile(ratio, strlen(ratio), ".json"), &p, &err) < 0)
        fail_msg("%s", err.msg);
    assert_close(p.runtime_conv_ratio, 0.8, 1e-12);
    const char *bad[][2] = {
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, \"eff_memory\": 0.5, "
         "\"runtime_conv_ratio\": 0}",
         "runtime_conv_ratio: the Conv time ratio must be in (0, 4]"},
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, \"eff_memory\": 0.5, "
         "\"runtime_conv_ratio\": 4.5}",
         "runtime_conv_ratio: the Conv time ratio must be in (0, 4]"},
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {\"dense\": 1.5}, "
         "\"eff_memory\": 0.5}",
         "eff_compute.dense"},
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {\"densest\": 0.5}, "
         "\"eff_memory\": 0.5}",
         "unknown op class"},
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}}", "eff_memory"},
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, \"eff_memory\": 0.5, "
         "\"runtime_fusion\": \"tensorrt\"}",
         "runtime_fusion: runtime fusion is \"ort\" or \"none\""},
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, \"eff_memory\": 0.5, "
         "\"peak_scale\": 0.5}",
         "peak_scale: must be in [1, 10]"},
        {"{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, \"eff_memory\": 0.5, "
         "\"mem_scale\": 11}",
         "mem_scale: must be in [1, 10]"},
    };
    const char *dense = "{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, "
                        "\"eff_memory\": 0.5, \"dense_half_flops\": 176000}";
    if (pl_cost_params_load(tu_tmpfile(dense, strlen(dense), ".json"), &p, &err) < 0)
        fail_msg("%s", err.msg);
    assert_close(p.dense_half_flops, 176000, 0);
    assert_close(def.dense_half_flops, 0, 0); /* the default: no size dependence */
    const char *bad_half[] = {"-1", "1e12", "\"big\""};
    for (size_t i = 0; i < 3; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, "
                 "\"eff_memory\": 0.5, \"dense_half_flops\": %s}",
                 bad_half[i]);
        err.msg[0] = 0;
        assert_int_equal(pl_cost_params_load(tu_tmpfile(text, strlen(text), ".json"), &p, &err),
                         -1);
        assert_contains(err.msg, "dense_half_flops");
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = 0;
        assert_int_equal(
            pl_cost_params_load(tu_tmpfile(bad[i][0], strlen(bad[i][0]), ".json"), &p, &err), -1);
        assert_contains(err.msg, bad[i][1]);
    }
    const char *half = "{\"format\": \"placer-cost-params/1\", \"eff_compute\": {\"dense\": 0.3, "
                       "\"elementwise\": 0.125, \"reduction\": 0.125, \"data-movement\": 0.125, "
                       "\"control\": 0.15, \"unknown\": 0.15}, \"eff_memory\": 0.35}";
    char args[512];
    json_t *j =
        tu_run_json("place models/resnet50.onnx --cluster examples/clusters/local-cpu-percore.json "
                    "--algo single --json 2>/dev/null");
    double base = json_number_value(json_object_get(j, "makespan_s"));
    json_decref(j);
    snprintf(args, sizeof args,
             "place models/resnet50.onnx --cluster examples/clusters/local-cpu-percore.json "
             "--algo single --cost-params %s --json 2>/dev/null",
             tu_tmpfile(half, strlen(half), ".json"));
    j = tu_run_json(args);
    double slow = json_number_value(json_object_get(j, "makespan_s"));
    json_decref(j);
    assert_true(base > 0);
    assert_true(slow > 1.5 * base);
}

/* ---- bytes moved by ops that do not stream their whole inputs (docs/cost.md) ---- */

static int shaped(pl_graph *g, const char *name, int dt, int rank, const int64_t *dims,
                  unsigned flags)
{
    int t = pl_graph_tensor(g, name);
    pl_tensor_set_shape(&g->tensors[t], dt, rank, dims);
    g->tensors[t].flags |= flags;
    return t;
}

static int ints_weight(pl_graph *g, const char *name, int n, const int64_t *v)
{
    int t = shaped(g, name, PL_DT_INT64, 1, (int64_t[]){n}, PL_TENSOR_WEIGHT);
    pl_tensor_set_ivals(&g->tensors[t], v, n);
    return t;
}

static int op_io(pl_graph *g, const char *name, const char *type, int n_in, const int *in, int out)
{
    int o = pl_graph_add_op(g, name, type, "");
    for (int i = 0; i < n_in; i++)
        pl_op_add_input(g, o, in[i]);
    pl_op_add_output(g, o, out);
    return o;
}

/* E: a 1000 x 64 fp32 embedding table (256,000 bytes), a weight; ids: 1 x 8 int64 (64 bytes).
 *   Gather(E, ids) -> 1 x 8 x 64 fp32 = 2,048 bytes: reads the 8 rows (2,048) and the ids (64),
 *     writes 2,048: 4,160 bytes, not 256,000 + 64 + 2,048 = 258,112.
 *   Slice(X 10 x 20 fp32 = 800 bytes, starts [2], ends [5], axes [0]) -> 3 x 20 = 240 bytes:
 *     reads 240, writes 240, plus three 8-byte int64 inputs: 504 bytes.
 *   Shape(X) -> 2 int64 = 16 bytes: the dims only, 16 bytes.
 *   Reshape(X, [200]), Unsqueeze(X, [0]): a view of X, 0 bytes.
 *   Relu(X): unchanged rule, 800 + 800 = 1,600 bytes. */
static void test_bytes_partial_reads(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("bytes");
    int e = shaped(g, "E", PL_DT_FLOAT, 2, (int64_t[]){1000, 64}, PL_TENSOR_WEIGHT);
    int ids = shaped(g, "ids", PL_DT_INT64, 2, (int64_t[]){1, 8}, 0);
    int x = shaped(g, "X", PL_DT_FLOAT, 2, (int64_t[]){10, 20}, 0);
    pl_graph_add_input(g, ids), pl_graph_add_input(g, x);
    int st = ints_weight(g, "st", 1, (int64_t[]){2}), en = ints_weight(g, "en", 1, (int64_t[]){5});
    int ax = ints_weight(g, "ax", 1, (int64_t[]){0}),
        sh = ints_weight(g, "sh", 1, (int64_t[]){200});
    int a0 = ints_weight(g, "a0", 1, (int64_t[]){0});
    int outs[6];
    const char *names[6] = {"emb", "sl", "shp", "flat", "unsq", "relu"};
    for (int i = 0; i < 6; i++)
        outs[i] = pl_graph_tensor(g, names[i]), pl_graph_add_output(g, outs[i]);
    int og = op_io(g, "gather", "Gather", 2, (int[]){e, ids}, outs[0]);
    int os = op_io(g, "slice", "Slice", 4, (int[]){x, st, en, ax}, outs[1]);
    int oh = op_io(g, "shape", "Shape", 1, (int[]){x}, outs[2]);
    int orr = op_io(g, "reshape", "Reshape", 2, (int[]){x, sh}, outs[3]);
    int ou = op_io(g, "unsqueeze", "Unsqueeze", 2, (int[]){x, a0}, outs[4]);
    int ol = op_io(g, "relu", "Relu", 1, (int[]){x}, outs[5]);
    pl_err err = {""};
    if (pl_graph_finalize(g, "bytes", &err) < 0 || pl_graph_infer(g, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(g->tensors[outs[0]].bytes, 2048);
    assert_int_equal(g->tensors[outs[1]].bytes, 240);
    assert_close(g->ops[og].bytes_moved, 4160, 1e-12);
    assert_close(g->ops[os].bytes_moved, 504, 1e-12);
    assert_close(g->ops[oh].bytes_moved, 16, 1e-12);
    assert_close(g->ops[orr].bytes_moved, 0, 1e-12);
    assert_close(g->ops[ou].bytes_moved, 0, 1e-12);
    assert_close(g->ops[ol].bytes_moved, 1600, 1e-12);
    /* the Reshape view costs only the launch overhead on a V100 (5 us); the Gather is
     * memory-bound: 5 us + 4,160 / (900e9 * 0.7) = 5.0066 us */
    pl_cluster *c = cluster_of((const char *[]){"V100"}, 1);
    pl_cost_params p;
    roofline_default(&p);
    assert_close(pl_cost_estimate(&g->ops[orr], g, &c->devs[0], &p), 5e-6, 1e-12);
    assert_close(pl_cost_estimate(&g->ops[og], g, &c->devs[0], &p), 5e-6 + 4160 / 630e9, 1e-9);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The fit finds efficiencies that reproduce a measurement made with other ones: the Conv
 * "measured" at dense efficiency 0.3 is estimated within the grid's step after the fit, and
 * far off with the defaults (0.6) before it. Deterministic, unlike a real profile. */
static void test_calib_fit(void **state)
{
    (void)state;
    pl_graph *g = tu_conv_graph(1, PL_DT_FLOAT);
    pl_cluster *c = cluster_of((const char *[]){"V100"}, 1);
    pl_cost_params truth;
    roofline_default(&truth);
    truth.eff_compute[PL_CLASS_DENSE] = 0.3;
    double t = pl_cost_estimate(&g->ops[0], g, &c->devs[0], &truth);
    char text[256];
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"V100\", "
             "\"times_s\": {\"conv\": %.17g}}",
             t);
    pl_err err = {""};
    pl_profile *pr = profile_text(text, &err);
    if (!pr) fail_msg("%s", err.msg);
    const pl_graph *gs[] = {g};
    const pl_profile *ps[] = {pr};
    pl_calib_result r;
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(r.n_samples, 1);
    assert_int_equal(r.class_samples[PL_CLASS_DENSE], 1);
    assert_true(r.median_before > 0.3);
    assert_true(r.median_after < 0.05 && r.worst_after == r.median_after);
    double fitted = pl_cost_estimate(&g->ops[0], g, &c->devs[0], &r.params);
    assert_close(fitted, t, 0.05);
    pl_profile_free(pr);
    /* a profile for another device model would fit the V100's peaks to A100 times */
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"A100\", "
             "\"times_s\": {\"conv\": %.17g}}",
             t);
    if (!(pr = profile_text(text, &err))) fail_msg("%s", err.msg);
    ps[0] = pr;
    assert_int_equal(pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err), -1);
    if (!strstr(err.msg, "'A100'") || !strstr(err.msg, "V100"))
        fail_msg("'%s' does not name both device models", err.msg);
    pl_profile_free(pr);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The brute-force objective and errors, from pl_cost_estimate on every timed op. */
static double brute_loss(const pl_graph *g, const pl_profile *pr, const pl_device *d,
                         const pl_cost_params *p, double profiler_s, double *median, double *worst)
{
    double sum = 0, *e = calloc(g->n_ops + 1, sizeof *e);
    int n = 0;
    for (int i = 0; i < g->n_ops; i++) {
        double m = pl_profile_lookup(pr, g->ops[i].name);
        if (!(m > 0) || !strcmp(g->ops[i].type, "Constant")) continue;
        double est = pl_cost_estimate(&g->ops[i], g, d, p) + profiler_s;
        double r = log(est > 0 ? est : 1e-12) - log(m);
        sum += m * r * r;
        e[n++] = fabs(est - m) / m;
    }
    *median = pl_median(e, n);
    *worst = n ? e[n - 1] : 0;
    free(e);
    return sum;
}

/* A placer-profile/1 of g on c's first device with made-up times: time(g, device, op), an op
 * skipped where it is negative. */
static pl_profile *made_up_profile(const pl_graph *g, const pl_cluster *c,
                                   double (*time)(const pl_graph *, const pl_device *, int))
{
    size_t cap = 64 + (size_t)g->n_ops * 300, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap,
                            "{\"format\": \"placer-profile/1\", \"device_model\": \"%s\", "
                            "\"times_s\": {",
                            c->devs[0].model);
    int k = 0;
    for (int i = 0; i < g->n_ops; i++) {
        double t = time(g, &c->devs[0], i);
        if (t < 0) continue;
        len += (size_t)snprintf(text + len, cap - len, "%s\"%s\": %.17g", k++ ? ", " : "",
                                g->ops[i].name, t);
    }
    snprintf(text + len, cap - len, "}}");
    pl_err err = {""};
    pl_profile *pr = profile_text(text, &err);
    free(text);
    if (!pr) fail_msg("%s", err.msg);
    return pr;
}

/* 1 us to 0.1 ms, every op, Constants too */
static double spread_time(const pl_graph *g, const pl_device *d, int i)
{
    (void)g, (void)d;
    return 1e-6 * (1 + (i * 37) % 100);
}

/* 1000 times the default estimate: no efficiency in (0.01, 1] reaches it, as when another
 * program held the core while profiling; Constants not timed. */
static double disturbed_time(const pl_graph *g, const pl_device *d, int i)
{
    if (!strcmp(g->ops[i].type, "Constant")) return -1;
    pl_cost_params def;
    roofline_default(&def);
    return 1000 * pl_cost_estimate(&g->ops[i], g, d, &def);
}

/* The default estimate plus 3 us of profiler; Constants not timed. */
static double profiled_time(const pl_graph *g, const pl_device *d, int i)
{
    if (!strcmp(g->ops[i].type, "Constant")) return -1;
    pl_cost_params def;
    roofline_default(&def);
    return pl_cost_estimate(&g->ops[i], g, d, &def) + 3e-6;
}

/* A profile is each op's time plus the profiler's own per node: made from the default
 * estimates plus 3 us on every op of bert_base, the fit finds the 3 us (to its grid's 3 %)
 * and keeps the efficiencies that made the times, instead of bending them to absorb it. */
static void test_calib_profiler(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/bert_base.onnx");
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    if (!c) fail_msg("%s", err.msg);
    pl_cost_params def;
    roofline_default(&def);
    pl_profile *pr = made_up_profile(g, c, profiled_time);
    const pl_graph *gs[] = {g};
    const pl_profile *ps[] = {pr};
    pl_calib_result r;
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_close(r.profiler_s, 3e-6, 0.03);
    assert_close(r.params.eff_compute[PL_CLASS_DENSE], def.eff_compute[PL_CLASS_DENSE], 0.03);
    assert_close(r.params.eff_memory, def.eff_memory, 0.03);
    assert_true(r.median_after < 0.01);
    assert_close(r.total_ratio, 1, 0.01);
    pl_profile_free(pr);
    /* what pl_machine_calibrate refuses to cache: the fit's total far from the profiles' */
    pr = made_up_profile(g, c, disturbed_time);
    ps[0] = pr;
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_true(r.total_ratio < 1 / 1.5);
    pl_profile_free(pr);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A CPU 1.6 times faster than the file says (its peak 1.6x the device's), at dense efficiency
 * 0.9 and the other defaults; Constants not timed. */
static double faster_cpu_time(const pl_graph *g, const pl_device *d, int i)
{
    if (!strcmp(g->ops[i].type, "Constant")) return -1;
    pl_device fast = *d;
    fast.peak_flops_per_s[PL_PREC_FP32] *= 1.6;
    pl_cost_params p;
    roofline_default(&p);
    p.eff_compute[PL_CLASS_DENSE] = 0.9;
    return pl_cost_estimate(&g->ops[i], g, &fast, &p);
}

/* A CPU whose memory is 3 times what the file says, at the default efficiencies. */
static double faster_memory_time(const pl_graph *g, const pl_device *d, int i)
{
    if (!strcmp(g->ops[i].type, "Constant")) return -1;
    pl_device fast = *d;
    fast.mem_bandwidth_Bps *= 3;
    pl_cost_params p;
    roofline_default(&p);
    return pl_cost_estimate(&g->ops[i], g, &fast, &p);
}

/* Profiles from a CPU faster than the cluster file describes (docs/calibrate.md, "Another
 * CPU"): bert_base timed on a peak 1.6x the file's at dense efficiency 0.9 needs dense ops at
 * 1.44x the file's peak, which no efficiency in (0, 1] gives. The fit keeps dense at 1 and
 * scales the peak by 1.44 (to its grid's 1.2 %), the other classes' efficiencies rescaled
 * with it (elementwise 0.25 x 1.6 / 1.44), and prices every op as timed; the note names the
 * factor; the entry keeps it through a file. Profiles that the file's figures reach leave
 * both scales at 1 (test_calib_profiler's, and these on the faster device itself). */
static void test_calib_faster_cpu(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/bert_base.onnx");
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    if (!c) fail_msg("%s", err.msg);
    pl_profile *pr = made_up_profile(g, c, faster_cpu_time);
    const pl_graph *gs[] = {g};
    const pl_profile *ps[] = {pr};
    pl_calib_result r;
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_close(r.params.eff_compute[PL_CLASS_DENSE], 1, 0);
    assert_close(r.params.peak_scale, 1.44, 0.012);
    assert_close(r.params.mem_scale, 1, 0);
    assert_close(r.params.eff_compute[PL_CLASS_ELEMENTWISE], 0.25 * 1.6 / 1.44, 0.03);
    assert_true(r.median_after < 0.02);
    assert_close(r.total_ratio, 1, 0.02);
    char note[1024];
    assert_int_equal(pl_calib_scale_note(&r.params, &c->devs[0], note, sizeof note), 1);
    if (!strstr(note, "dense ops at 1.4") || !strstr(note, "cpu0's fp32 peak (110 GFLOP/s)") ||
        !strstr(note, "'local-epyc-core'") || strstr(note, "memory-bound"))
        fail_msg("note: %s", note);
    /* through a file, as the machine's entry is cached */
    json_t *j = pl_calib_json(&r, c->devs[0].model, NULL, NULL);
    char *text = json_dumps(j, 0);
    json_decref(j);
    pl_cost_params back;
    if (pl_cost_params_load(tu_tmpfile(text, strlen(text), ".json"), &back, &err) < 0)
        fail_msg("%s", err.msg);
    free(text);
    assert_true(back.peak_scale == r.params.peak_scale && back.mem_scale == 1);
    /* the same profiles against the faster device's own figures: nothing to scale */
    c->devs[0].peak_flops_per_s[PL_PREC_FP32] *= 1.6;
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_true(r.params.peak_scale == 1 && r.params.mem_scale == 1);
    assert_close(r.params.eff_compute[PL_CLASS_DENSE], 0.9, 0.012);
    assert_int_equal(pl_calib_scale_note(&r.params, &c->devs[0], note, sizeof note), 0);
    assert_string_equal(note, "");
    pl_profile_free(pr);
    /* memory 3x the file's at eff_memory 0.7: 2.1x, which mem_scale takes to its grid's 1.2 %
     * (2.09), the peak as it is */
    c->devs[0].peak_flops_per_s[PL_PREC_FP32] /= 1.6;
    pr = made_up_profile(g, c, faster_memory_time);
    ps[0] = pr;
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_close(r.params.eff_memory, 1, 0);
    assert_close(r.params.mem_scale, 2.1, 0.012);
    assert_true(r.median_after < 0.02);
    assert_int_equal(pl_calib_scale_note(&r.params, &c->devs[0], note, sizeof note), 1);
    if (!strstr(note, "memory-bound ops at 2.09x") ||
        !strstr(note, "cpu0's memory bandwidth (74 GB/s)"))
        fail_msg("note: %s", note);
    pl_profile_free(pr);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The fit takes each op's estimate apart once (pl_cost_terms) instead of calling
 * pl_cost_estimate on every evaluation: its loss and errors must be those of pl_cost_estimate
 * to the bit, before and after the fit, on a zoo model (every op class, Constants, Gathers,
 * views) with made-up times. */
static void calib_matches_estimate(const char *model)
{
    pl_graph *g = tu_load(model);
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    if (!c) fail_msg("%s", err.msg);
    pl_profile *pr = made_up_profile(g, c, spread_time);
    const pl_graph *gs[] = {g};
    const pl_profile *ps[] = {pr};
    pl_calib_result r;
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    pl_cost_params def;
    roofline_default(&def);
    double med, worst;
    assert_true(pl_calib_loss(gs, ps, 1, &c->devs[0], &def, 0, &err) ==
                brute_loss(g, pr, &c->devs[0], &def, 0, &med, &worst));
    assert_true(med == r.median_before && worst == r.worst_before);
    assert_true(r.profiler_s > 0); /* made-up times of 1 us and up: a floor the fit finds */
    assert_true(pl_calib_loss(gs, ps, 1, &c->devs[0], &r.params, r.profiler_s, &err) ==
                brute_loss(g, pr, &c->devs[0], &r.params, r.profiler_s, &med, &worst));
    assert_true(med == r.median_after && worst == r.worst_after);
    assert_true(r.n_samples > 100 && r.class_samples[PL_CLASS_DENSE] > 0);
    pl_profile_free(pr);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* bert_base; resnet50 for its classifier, a Gemm with a bias, whose C the estimate prices as
 * the Add fused into a MatMul (pl_cost_terms.bias_flops): the fit must price it so too. */
static void test_calib_matches_estimate(void **state)
{
    (void)state;
    calib_matches_estimate("models/bert_base.onnx");
    calib_matches_estimate("models/resnet50.onnx");
}

/* The fit weighs each op's log error by its measured time (docs/calibrate.md), so it follows
 * where the time goes. Two copies of the Conv, one measured at dense efficiency 0.3 (time
 * t0/0.3), one at 0.6 (t0/0.6), with no launch overhead: the loss is
 * (t0/0.3)·log²(0.3/x) + (t0/0.6)·log²(0.6/x), least at log x = (2·log 0.3 + log 0.6) / 3,
 * x = (0.3² · 0.6)^(1/3) = 0.37798, i.e. an estimate of t0 / 0.37798; unweighted it would be
 * t0 / (0.3 · 0.6)^(1/2) = t0 / 0.42426. The grid's step is 2.3 %, so the fit is within 1.2 %. */
static void test_calib_fit_weighted(void **state)
{
    (void)state;
    pl_graph *g[2] = {tu_conv_graph(1, PL_DT_FLOAT), tu_conv_graph(1, PL_DT_FLOAT)};
    pl_cluster *c = cluster_of((const char *[]){"V100"}, 1);
    c->devs[0].launch_overhead_s = 0;
    double t0 = g[0]->ops[0].flops / c->devs[0].peak_flops_per_s[PL_PREC_FP32];
    pl_profile *pr[2];
    pl_err err = {""};
    for (int i = 0; i < 2; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "{\"format\": \"placer-profile/1\", \"device_model\": \"V100\", "
                 "\"times_s\": {\"conv\": %.17g}}",
                 t0 / (i ? 0.6 : 0.3));
        if (!(pr[i] = profile_text(text, &err))) fail_msg("%s", err.msg);
    }
    const pl_graph *gs[] = {g[0], g[1]};
    const pl_profile *ps[] = {pr[0], pr[1]};
    pl_calib_result r;
    if (pl_calib_fit(gs, ps, 2, &c->devs[0], NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(r.n_samples, 2);
    /* one shape cannot tell compute from memory efficiency apart, so the estimate is checked */
    double fitted = pl_cost_estimate(&g[0]->ops[0], g[0], &c->devs[0], &r.params);
    assert_close(fitted, t0 / cbrt(0.3 * 0.3 * 0.6), 0.012);
    for (int i = 0; i < 2; i++)
        pl_profile_free(pr[i]), pl_graph_free(g[i]);
    pl_cluster_free(c);
}

/* ---- runtime fusion (docs/cost.md, "Runtime fusion") ---- */

static const int64_t act[4] = {1, 64, 56, 56}; /* 802,816 bytes in fp32 */

static pl_graph *finish(pl_graph *g)
{
    pl_err err = {""};
    if (pl_graph_finalize(g, g->name, &err) < 0 || pl_graph_infer(g, &err) < 0)
        fail_msg("%s", err.msg);
    return g;
}

/* X -> Conv (tu_conv_graph's) -> c, then `tail` ops (BatchNormalization, Add with the graph
 * input R, Relu), each reading the one before; the last writes Y. */
static pl_graph *conv_chain(const char *const *tail, int n)
{
    pl_graph *g = pl_graph_new("chain");
    int x = shaped(g, "X", PL_DT_FLOAT, 4, act, 0);
    int w = shaped(g, "W", PL_DT_FLOAT, 4, (int64_t[]){64, 64, 3, 3}, PL_TENSOR_WEIGHT);
    int r = shaped(g, "R", PL_DT_FLOAT, 4, act, 0);
    pl_graph_add_input(g, x), pl_graph_add_input(g, r);
    int prev = pl_graph_tensor(g, "c");
    int conv = op_io(g, "conv", "Conv", 2, (int[]){x, w}, prev);
    tu_attr_ints(g, conv, "pads", 4, (int64_t[]){1, 1, 1, 1});
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        int out = pl_graph_tensor(g, i == n - 1 ? "Y" : name);
        if (!strcmp(tail[i], "BatchNormalization")) {
            int in[5] = {prev};
            for (int j = 1; j < 5; j++) {
                snprintf(name, sizeof name, "bn%d", j);
                in[j] = shaped(g, name, PL_DT_FLOAT, 1, (int64_t[]){64}, PL_TENSOR_WEIGHT);
            }
            op_io(g, "bn", tail[i], 5, in, out);
        } else if (!strcmp(tail[i], "Add")) {
            op_io(g, "add", tail[i], 2, (int[]){prev, r}, out);
        } else {
            op_io(g, "relu", tail[i], 1, &prev, out);
        }
        prev = out;
    }
    pl_graph_add_output(g, prev);
    return finish(g);
}

static pl_cost *cost_fusion(const pl_graph *g, const pl_cluster *c, pl_runtime_fusion f)
{
    pl_cost_params p;
    roofline_default(&p);
    p.runtime_fusion = f;
    pl_err err = {""};
    pl_cost *k = pl_cost_new(g, c, &p, NULL, 0, &err);
    if (!k) fail_msg("%s", err.msg);
    return k;
}

/* V100 fp32: dense 15.7e12 × 0.6 = 9.42e12 FLOP/s, elementwise 15.7e12 × 0.25 = 3.925e12,
 * memory 900e9 × 0.7 = 630e9 B/s, launch 5 us. */
#define V100_EW 3.925e12
#define V100_BW 630e9
#define CONV_S (5e-6 + 231211008.0 / 9.42e12) /* test_roofline_conv_v100: 29.5447 us */

/* ConvBNFusion + ConvActivationFusion: Conv -> BatchNormalization -> Relu is one kernel. The
 * Conv keeps its 29.5447 us; the BN is folded into its weights: 0; the Relu costs its
 * arithmetic only, 200,704 FLOPs / 3.925e12 = 51.1 ns, no launch, no pass over the 802,816
 * bytes: 29.5958 us for the three, not 29.5447 + BN + 7.5486 us as three kernels (the default
 * is on). Off: every op at its own estimate, the Relu 5 us + 2 × 802,816 / 630e9 = 7.5486 us. */
static void test_fusion_conv_bn_relu(void **state)
{
    (void)state;
    pl_graph *g = conv_chain((const char *[]){"BatchNormalization", "Relu"}, 2);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB"}, 1);
    int conv = pl_graph_find_op(g, "conv"), bn = pl_graph_find_op(g, "bn"),
        relu = pl_graph_find_op(g, "relu");
    assert_close(g->ops[relu].flops, 200704.0, 1e-12);
    pl_cost *k = cost_of(g, c, NULL);
    assert_close(pl_cost_op_s(k, conv, 0), CONV_S, 1e-12);
    assert_true(pl_cost_op_s(k, bn, 0) == 0);
    assert_close(pl_cost_op_s(k, relu, 0), 200704.0 / V100_EW, 1e-12);
    assert_close(pl_cost_op_s(k, conv, 0) + pl_cost_op_s(k, bn, 0) + pl_cost_op_s(k, relu, 0),
                 29.5958e-6, 1e-5);
    assert_int_equal(k->fused_root[bn], conv), assert_int_equal(k->fused_root[relu], conv);
    assert_int_equal(k->fused_prev[relu], bn), assert_int_equal(k->fused_root[conv], -1);
    pl_cost_free(k);
    k = cost_fusion(g, c, PL_FUSION_NONE);
    assert_null(k->fused_root);
    assert_close(pl_cost_op_s(k, relu, 0), 7.5486e-6, 1e-5);
    for (int op = 0; op < g->n_ops; op++)
        assert_close(pl_cost_op_s(k, op, 0),
                     pl_cost_estimate(&g->ops[op], g, &c->devs[0], &k->params), 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* runtime_conv_ratio: with onnxruntime's fusion, a Conv costs its estimate times the ratio
 * (0.8 x 29.5447 us = 23.6358 us), the BN still 0 and the Relu its 51.1 ns; with no runtime
 * fusion (the graph as written, not onnxruntime's layout) the ratio does not apply. */
static void test_conv_ratio(void **state)
{
    (void)state;
    pl_graph *g = conv_chain((const char *[]){"BatchNormalization", "Relu"}, 2);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB"}, 1);
    int conv = pl_graph_find_op(g, "conv"), relu = pl_graph_find_op(g, "relu");
    pl_cost_params p;
    roofline_default(&p);
    p.runtime_conv_ratio = 0.8;
    pl_err err = {""};
    pl_cost *k = pl_cost_new(g, c, &p, NULL, 0, &err);
    assert_non_null(k);
    assert_close(pl_cost_op_s(k, conv, 0), 0.8 * CONV_S, 1e-12);
    assert_close(pl_cost_op_s(k, relu, 0), 200704.0 / V100_EW, 1e-12);
    pl_cost_free(k);
    p.runtime_fusion = PL_FUSION_NONE;
    k = pl_cost_new(g, c, &p, NULL, 0, &err);
    assert_non_null(k);
    assert_close(pl_cost_op_s(k, conv, 0), CONV_S, 1e-12);
    pl_cost_free(k);
    p.runtime_conv_ratio = 0; /* built in code, not read: pl_cost_new checks it */
    assert_null(pl_cost_new(g, c, &p, NULL, 0, &err));
    assert_contains(err.msg, "Conv time ratio is 0, not in (0, 4]");
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Conv -> Add(residual R) -> Relu (NchwcTransformer's Conv+Sum+Relu): the Add reads R, which
 * the kernel reads for it alone: max(200,704 / 3.925e12 = 51.1 ns, 802,816 / 630e9 =
 * 1.27431 us) = 1.27431 us, no launch; the Relu 51.1 ns. */
static void test_fusion_conv_add_relu(void **state)
{
    (void)state;
    pl_graph *g = conv_chain((const char *[]){"Add", "Relu"}, 2);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    assert_close(pl_cost_op_s(k, pl_graph_find_op(g, "conv"), 0), CONV_S, 1e-12);
    assert_close(pl_cost_op_s(k, pl_graph_find_op(g, "add"), 0), 802816.0 / V100_BW, 1e-12);
    assert_close(pl_cost_op_s(k, pl_graph_find_op(g, "relu"), 0), 200704.0 / V100_EW, 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* ---- GEMM column tiles (pl_device.gemm_tile_columns, docs/cost.md) ----
 * A CPU at 100 GFLOP/s and 74 GB/s, no launch overhead, tile 16; the default efficiencies
 * (dense 0.6: 60 GFLOP/s; memory 0.7: 51.8 GB/s). A 2708 x 2708 by 2708 x B MatMul:
 *   B 2708 x 7: 2 * 2708^2 * 7 = 102,665,696 FLOPs, priced as 16 columns: 234,664,448 / 60e9
 *     = 3.911 ms (untiled: 1.711 ms); bytes 29,333,056 + 75,824 + 75,824 = 29,484,704 /
 *     51.8e9 = 0.569 ms, so compute-bound either way;
 *   B 2708 x 32: two whole tiles, unchanged: 469,328,896 / 60e9 = 7.822 ms;
 *   B a vector of 2708: the GEMV, never padded: 14,666,528 FLOPs = 0.244 ms, below its
 *     29,354,720 bytes / 51.8e9 = 0.567 ms (padded it would be 3.911 ms). */
/* One core of 100 GFLOP/s and 74 GB/s, no launch overhead, GEMM tiles of `tile` columns. */
static pl_cluster *core_cluster(int tile)
{
    pl_cluster *c = pl_cluster_new("cpu");
    int d = pl_cluster_add_device(c, "cpu0", PL_DEV_CPU, "core");
    c->devs[d].peak_flops_per_s[PL_PREC_FP32] = 100e9;
    c->devs[d].mem_bandwidth_Bps = 74e9;
    c->devs[d].memory_bytes = 8e9;
    c->devs[d].launch_overhead_s = 0;
    c->devs[d].gemm_tile_columns = tile;
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("%s", err.msg);
    return c;
}

static double tile_case(int rank_b, int64_t n, int tile)
{
    pl_graph *g = pl_graph_new("mm");
    int a = shaped(g, "A", PL_DT_FLOAT, 2, (int64_t[]){2708, 2708}, 0);
    int b = shaped(g, "B", PL_DT_FLOAT, rank_b, (int64_t[]){2708, n}, 0);
    pl_graph_add_input(g, a), pl_graph_add_input(g, b);
    int y = pl_graph_tensor(g, "Y");
    op_io(g, "mm", "MatMul", 2, (int[]){a, b}, y);
    pl_graph_add_output(g, y);
    finish(g);
    pl_cluster *c = core_cluster(tile);
    pl_cost *k = cost_of(g, c, NULL);
    double s = pl_cost_op_s(k, 0, 0);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
    return s;
}

static void test_gemm_tile(void **state)
{
    (void)state;
    assert_close(tile_case(2, 7, 16), 234664448.0 / 60e9, 1e-12);
    assert_close(tile_case(2, 7, 0), 102665696.0 / 60e9, 1e-12);
    assert_close(tile_case(2, 32, 16), 469328896.0 / 60e9, 1e-12);
    assert_close(tile_case(1, 2708, 16), 29354720.0 / 51.8e9, 1e-12);
}

/* A dense op's efficiency by its GEMM's size (docs/cost.md, "Dense efficiency by size"), on a
 * core of 100 GFLOP/s and 74 GB/s, no launch, the defaults (dense 0.6, memory 0.7):
 *   8 heads of 64x64 by 64x64: 4,194,304 FLOPs, 8 GEMMs of g = 524,288; bytes (32,768 + 4,096
 *     + 32,768) x 4 = 278,528 / 51.8e9 = 5.377 us. Without the size term 4,194,304 / 60e9 =
 *     69.905 us; with dense_half_flops = g each GEMM reaches half: 139.810 us.
 *   the same FLOPs as one 512x64 by 64x64 GEMM (g = 4,194,304): 8 / 9 of 0.6, 78.643 us: a
 *     batch made one GEMM is cheaper, where the plain roofline prices the two alike.
 *   an Add is not dense: no size term. */
/* Op 0 of g on device 0 of c under p; frees g and c. */
static double op0_s(pl_graph *g, pl_cluster *c, const pl_cost_params *p)
{
    pl_err err = {""};
    pl_cost *k = pl_cost_new(g, c, p, NULL, 0, &err);
    if (!k) fail_msg("%s", err.msg);
    double s = pl_cost_op_s(k, 0, 0);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
    return s;
}

static double dense_case(const int64_t *a_dims, int rank, const char *type, double half)
{
    pl_graph *g = pl_graph_new("dense");
    int a = shaped(g, "A", PL_DT_FLOAT, rank, a_dims, 0);
    int b = shaped(g, "B", PL_DT_FLOAT, 2, (int64_t[]){64, 64}, 0);
    if (strcmp(type, "MatMul")) b = shaped(g, "B2", PL_DT_FLOAT, rank, a_dims, 0);
    pl_graph_add_input(g, a), pl_graph_add_input(g, b);
    int y = pl_graph_tensor(g, "Y");
    op_io(g, "op", type, 2, (int[]){a, b}, y);
    pl_graph_add_output(g, y);
    finish(g);
    pl_cost_params p;
    roofline_default(&p);
    p.dense_half_flops = half;
    p.runtime_fusion = PL_FUSION_NONE;
    return op0_s(g, core_cluster(0), &p);
}

/* An RNN's re-reads of R at the core's re-read rate (docs/cost.md, "Bytes moved"): an LSTM of
 * 64 units on 64 inputs, 9 steps, batch 1, on a core of 1 TFLOP/s and 74 GB/s, no launch, the
 * defaults (dense 0.6, memory 0.7: 51.8 GB/s). FLOPs 9 x (2 x 4 x 64 x 128 + 42 x 64) =
 * 614,016: 1.0234 us. Bytes: X 2,304 + W 65,536 + R 65,536 + Y 2,304 = 135,680 once, and R
 * 8 times more, 524,288.
 *   without reread_Bps: all 659,968 at 51.8 GB/s, 12.7407 us;
 *   reread_Bps 20 GB/s: 135,680 / 51.8e9 + 524,288 / 20e9 = 2.6193 + 26.2144 us;
 *   R within a 1 MiB private cache: 524,288 at mem_bandwidth_Bps, 74 GB/s: 2.6193 + 7.0850 us;
 *   mem_scale 2 scales both reads, eff_memory only the first. */
static double reread_case(double reread_Bps, double private_cache, double mem_scale)
{
    pl_graph *g = pl_graph_new("lstm");
    int x = shaped(g, "X", PL_DT_FLOAT, 3, (int64_t[]){9, 1, 64}, 0);
    int w = shaped(g, "W", PL_DT_FLOAT, 3, (int64_t[]){1, 256, 64}, PL_TENSOR_WEIGHT);
    int r = shaped(g, "R", PL_DT_FLOAT, 3, (int64_t[]){1, 256, 64}, PL_TENSOR_WEIGHT);
    pl_graph_add_input(g, x);
    int y = pl_graph_tensor(g, "Y");
    int op = op_io(g, "lstm", "LSTM", 3, (int[]){x, w, r}, y);
    pl_op_add_attr(g, op, "hidden_size", PL_ATTR_INT)->i = 64;
    pl_graph_add_output(g, y);
    finish(g);
    pl_cluster *c = core_cluster(0);
    c->devs[0].peak_flops_per_s[PL_PREC_FP32] = 1e12;
    c->devs[0].reread_Bps = reread_Bps;
    c->devs[0].private_cache_bytes = private_cache;
    pl_cost_params p;
    roofline_default(&p);
    p.mem_scale = mem_scale;
    return op0_s(g, c, &p);
}

static void test_reread(void **state)
{
    (void)state;
    assert_close(reread_case(0, 0, 1), 659968.0 / 51.8e9, 1e-12);
    assert_close(reread_case(20e9, 0, 1), 135680.0 / 51.8e9 + 524288.0 / 20e9, 1e-12);
    assert_close(reread_case(20e9, 1 << 20, 1), 135680.0 / 51.8e9 + 524288.0 / 74e9, 1e-12);
    assert_close(reread_case(20e9, 0, 2), 135680.0 / 103.6e9 + 524288.0 / 40e9, 1e-12);
    /* an R larger than the private cache: the re-read rate */
    assert_close(reread_case(20e9, 32768, 1), 135680.0 / 51.8e9 + 524288.0 / 20e9, 1e-12);
}

static void test_dense_half(void **state)
{
    (void)state;
    const int64_t heads[] = {8, 64, 64}, flat[] = {512, 64};
    assert_close(dense_case(heads, 3, "MatMul", 0), 4194304.0 / 60e9, 1e-12);
    assert_close(dense_case(heads, 3, "MatMul", 524288), 2 * 4194304.0 / 60e9, 1e-12);
    assert_close(dense_case(flat, 2, "MatMul", 0), 4194304.0 / 60e9, 1e-12);
    assert_close(dense_case(flat, 2, "MatMul", 524288), 9.0 / 8 * 4194304.0 / 60e9, 1e-12);
    double add = dense_case(heads, 3, "Add", 0);
    assert_true(add > 0);
    assert_close(dense_case(heads, 3, "Add", 524288), add, 0);
    /* pl_cost_new refuses what a params file could not hold */
    pl_cost_params p;
    roofline_default(&p);
    pl_err err = {""};
    p.dense_half_flops = -1;
    assert_int_equal(pl_cost_params_check(&p, &err), -1);
    assert_contains(err.msg, "dense_half_flops");
    p.dense_half_flops = NAN;
    assert_int_equal(pl_cost_params_check(&p, &err), -1);
}

/* bert_base timed as the cost model prices it with a known size term (dense 0.6, half at
 * 5e6 FLOPs): the fit finds the half (its grid's steps are 3 %: within 10 %) and the
 * efficiency. Four ops are too few to fit it (gcn_cora: not fitted, kept 0, and said), and
 * times made with a half far beyond the largest GEMM sampled cannot say where it is: every
 * GEMM runs far below half, and only "more" can be read from them (refused, kept 0). */
static double half_truth_time(const pl_graph *g, const pl_device *d, int i)
{
    if (!strcmp(g->ops[i].type, "Constant")) return -1;
    pl_cost_params p;
    roofline_default(&p);
    p.dense_half_flops = 5e6;
    return pl_cost_estimate(&g->ops[i], g, d, &p);
}

static double unbounded_time(const pl_graph *g, const pl_device *d, int i)
{
    if (!strcmp(g->ops[i].type, "Constant")) return -1;
    pl_cost_params p;
    roofline_default(&p);
    p.dense_half_flops = 1e11; /* 160 times bert_base's largest GEMM */
    return pl_cost_estimate(&g->ops[i], g, d, &p);
}

static void fit_one(const char *model, double (*time)(const pl_graph *, const pl_device *, int),
                    pl_calib_result *r)
{
    pl_graph *g = tu_load(model);
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    if (!c) fail_msg("%s", err.msg);
    pl_profile *pr = made_up_profile(g, c, time);
    const pl_graph *gs[] = {g};
    const pl_profile *ps[] = {pr};
    if (pl_calib_fit(gs, ps, 1, &c->devs[0], NULL, r, &err) < 0) fail_msg("%s", err.msg);
    pl_profile_free(pr);
    pl_cluster_free(c);
    pl_graph_free(g);
}

static void test_calib_dense_half(void **state)
{
    (void)state;
    pl_calib_result r;
    fit_one("models/bert_base.onnx", half_truth_time, &r);
    assert_string_equal(r.dense_half_why, "");
    assert_close(r.params.dense_half_flops, 5e6, 0.1);
    assert_close(r.params.eff_compute[PL_CLASS_DENSE], 0.6, 0.03);
    assert_true(r.median_after < 0.02); /* each parameter within a step of its grid */
    fit_one("models/gcn_cora.onnx", half_truth_time, &r);
    assert_close(r.params.dense_half_flops, 0, 0);
    assert_contains(r.dense_half_why, "not fitted");
    fit_one("models/bert_base.onnx", unbounded_time, &r);
    assert_close(r.params.dense_half_flops, 0, 0);
    assert_contains(r.dense_half_why, "do not bound");
}

/* MatMulAddFusion: A 128 x 768 by a 768 x 768 weight, + a bias of 768 (3,072 bytes). The Add:
 * max(98,304 / 3.925e12 = 25.05 ns, 3,072 / 630e9 = 4.88 ns) = 25.05 ns; off it is a kernel of
 * its own: 5 us + (393,216 × 2 + 3,072) / 630e9 = 6.2531 us. */
static void test_fusion_matmul_add(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("mm");
    int a = shaped(g, "A", PL_DT_FLOAT, 2, (int64_t[]){128, 768}, 0);
    int w = shaped(g, "W", PL_DT_FLOAT, 2, (int64_t[]){768, 768}, PL_TENSOR_WEIGHT);
    int b = shaped(g, "B", PL_DT_FLOAT, 1, (int64_t[]){768}, PL_TENSOR_WEIGHT);
    int m = pl_graph_tensor(g, "M"), y = pl_graph_tensor(g, "Y");
    pl_graph_add_input(g, a);
    op_io(g, "mm", "MatMul", 2, (int[]){a, w}, m);
    int add = op_io(g, "add", "Add", 2, (int[]){m, b}, y);
    pl_graph_add_output(g, y);
    finish(g);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    assert_close(pl_cost_op_s(k, add, 0), 98304.0 / V100_EW, 1e-12);
    pl_cost_free(k);
    k = cost_fusion(g, c, PL_FUSION_NONE);
    assert_close(pl_cost_op_s(k, add, 0), 5e-6 + (2 * 393216.0 + 3072) / V100_BW, 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* LayerNormFusion on x 128 x 768 (393,216 bytes): ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
 * Div, Mul(gamma), Add(beta). The first ReduceMean keeps its own price (it reads x and writes
 * the 512-byte mean); the Sub reads x too, but the kernel has read it already: 98,304 FLOPs /
 * 3.925e12 = 25.05 ns; the last Add reads beta (3,072 bytes) and writes the result, 393,216 -
 * 512 bytes more than the first op wrote: max(25.05 ns, 395,776 / 630e9 = 628.2 ns). */
static void test_fusion_layernorm(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("ln");
    int x = shaped(g, "x", PL_DT_FLOAT, 2, (int64_t[]){128, 768}, 0);
    pl_graph_add_input(g, x);
    int two = shaped(g, "two", PL_DT_FLOAT, 0, NULL, PL_TENSOR_WEIGHT);
    int eps = shaped(g, "eps", PL_DT_FLOAT, 0, NULL, PL_TENSOR_WEIGHT);
    int gam = shaped(g, "gamma", PL_DT_FLOAT, 1, (int64_t[]){768}, PL_TENSOR_WEIGHT);
    int bet = shaped(g, "beta", PL_DT_FLOAT, 1, (int64_t[]){768}, PL_TENSOR_WEIGHT);
    const char *name[] = {"m", "d", "p", "v", "ve", "s", "n", "gd", "y"};
    int t[9];
    for (int i = 0; i < 9; i++)
        t[i] = pl_graph_tensor(g, name[i]);
    int mean = op_io(g, "mean", "ReduceMean", 1, &x, t[0]);
    int sub = op_io(g, "sub", "Sub", 2, (int[]){x, t[0]}, t[1]);
    op_io(g, "pow", "Pow", 2, (int[]){t[1], two}, t[2]);
    int var = op_io(g, "var", "ReduceMean", 1, &t[2], t[3]);
    tu_attr_ints(g, mean, "axes", 1, (int64_t[]){-1}),
        tu_attr_ints(g, var, "axes", 1, (int64_t[]){-1});
    op_io(g, "addeps", "Add", 2, (int[]){t[3], eps}, t[4]);
    op_io(g, "sqrt", "Sqrt", 1, &t[4], t[5]);
    op_io(g, "div", "Div", 2, (int[]){t[1], t[5]}, t[6]);
    op_io(g, "mul", "Mul", 2, (int[]){t[6], gam}, t[7]);
    int last = op_io(g, "addb", "Add", 2, (int[]){t[7], bet}, t[8]);
    pl_graph_add_output(g, t[8]);
    finish(g);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    for (int op = 1; op < g->n_ops; op++)
        assert_int_equal(k->fused_root[op], mean);
    assert_close(pl_cost_op_s(k, mean, 0),
                 pl_cost_estimate(&g->ops[mean], g, &c->devs[0], &k->params), 1e-12);
    assert_close(pl_cost_op_s(k, sub, 0), 98304.0 / V100_EW, 1e-12);
    assert_close(pl_cost_op_s(k, last, 0), 395776.0 / V100_BW, 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* GeluFusion, erf form, on x 128 x 3072 (1,572,864 bytes): Div(x, √2), Erf, Add(1), Mul(x, .),
 * Mul(0.5). The first Mul reads x again, which the kernel has read for the Div: its
 * arithmetic only, 393,216 / 3.925e12 = 100.2 ns (not 1,572,864 / 630e9 = 2.497 us). */
static void test_fusion_gelu(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("gelu");
    int x = shaped(g, "x", PL_DT_FLOAT, 2, (int64_t[]){128, 3072}, 0);
    pl_graph_add_input(g, x);
    int k2 = shaped(g, "sqrt2", PL_DT_FLOAT, 0, NULL, PL_TENSOR_WEIGHT);
    int one = shaped(g, "one", PL_DT_FLOAT, 0, NULL, PL_TENSOR_WEIGHT);
    int half = shaped(g, "half", PL_DT_FLOAT, 0, NULL, PL_TENSOR_WEIGHT);
    int a = pl_graph_tensor(g, "a"), b = pl_graph_tensor(g, "b"), c1 = pl_graph_tensor(g, "c1");
    int d = pl_graph_tensor(g, "d"), y = pl_graph_tensor(g, "y");
    int div = op_io(g, "div", "Div", 2, (int[]){x, k2}, a);
    op_io(g, "erf", "Erf", 1, &a, b);
    op_io(g, "add", "Add", 2, (int[]){b, one}, c1);
    int mx = op_io(g, "mulx", "Mul", 2, (int[]){x, c1}, d);
    op_io(g, "half", "Mul", 2, (int[]){d, half}, y);
    pl_graph_add_output(g, y);
    finish(g);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB"}, 1);
    pl_cost *k = cost_of(g, c, NULL);
    assert_int_equal(k->fused_root[mx], div);
    assert_close(pl_cost_op_s(k, mx, 0), 393216.0 / V100_EW, 1e-12);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The runtime of each device fuses only what that device holds: Conv -> BN -> Relu with the
 * Relu on the second V100 runs it as a kernel of its own (7.5486 us, the unfused price), in
 * the simulator as in pl_cost_op_placed_s; all on one device, 51.1 ns. */
static void test_fusion_lost_across_devices(void **state)
{
    (void)state;
    pl_graph *g = conv_chain((const char *[]){"BatchNormalization", "Relu"}, 2);
    pl_cluster *c = cluster_of((const char *[]){"V100-SXM2-16GB", "V100-SXM2-16GB"}, 2);
    int relu = pl_graph_find_op(g, "relu");
    pl_cost *k = cost_of(g, c, NULL);
    pl_plan *p = pl_plan_new(g->n_ops, 2);
    for (int split = 0; split < 2; split++) {
        p->dev[relu] = split;
        double want = split ? 7.5486e-6 : 200704.0 / V100_EW;
        assert_close(pl_cost_op_placed_s(k, relu, p->dev), want, 1e-5);
        pl_sim_opts so = {.record = true};
        pl_sim_result r = {0};
        pl_err err = {""};
        char why[256] = "";
        if (pl_simulate(k, p, &so, &r, &err) < 0) fail_msg("%s", err.msg);
        if (pl_sim_check(k, p, &so, &r, why, sizeof why) < 0) fail_msg("%s", why);
        assert_close(r.op_end_s[relu] - r.op_start_s[relu], want, 1e-5);
        pl_sim_result_free(&r);
    }
    pl_plan_free(p);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roofline_conv_v100),
        cmocka_unit_test(test_roofline_precision),
        cmocka_unit_test(test_roofline_memory_bound),
        cmocka_unit_test(test_gemm_tile),
        cmocka_unit_test(test_reread),
        cmocka_unit_test(test_constant_is_free),
        cmocka_unit_test(test_taskgraph_times),
        cmocka_unit_test(test_profile_override),
        cmocka_unit_test(test_profile_refusals),
        cmocka_unit_test(test_profile_wrong_model),
        cmocka_unit_test(test_profile_plausibility),
        cmocka_unit_test(test_profile_other_device_model),
        cmocka_unit_test(test_example_profile),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_params_file),
        cmocka_unit_test(test_xfer),
        cmocka_unit_test(test_calib_fit),
        cmocka_unit_test(test_calib_fit_weighted),
        cmocka_unit_test(test_calib_matches_estimate),
        cmocka_unit_test(test_calib_profiler),
        cmocka_unit_test(test_calib_faster_cpu),
        cmocka_unit_test(test_bytes_partial_reads),
        cmocka_unit_test(test_fusion_conv_bn_relu),
        cmocka_unit_test(test_fusion_conv_add_relu),
        cmocka_unit_test(test_fusion_matmul_add),
        cmocka_unit_test(test_fusion_layernorm),
        cmocka_unit_test(test_fusion_gelu),
        cmocka_unit_test(test_fusion_lost_across_devices),
        cmocka_unit_test(test_conv_ratio),
        cmocka_unit_test(test_dense_half),
        cmocka_unit_test(test_calib_dense_half),
        cmocka_unit_test(test_profile_median),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
