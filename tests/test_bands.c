/* test_bands.c: the uncertainty the verbs show (docs/cost.md, "Uncertainty"; issue 29 item
 * 4). `placer deploy`: every trial carries its plan's band, and when the cheapest
 * configuration meets the SLO only within that band, deploy says so and names the cheapest
 * that meets it with margin. place, simulate, compare, multi and train: the band and basis of
 * the predicted time in --json; a CPU calibrated by `placer calibrate` gets PL_BAND_CALIBRATED,
 * a GPU priced by the kernel rules its fit's band.
 *
 * deploy's cases: the catalogue is hand-made, "k80" (1 x K80, 1 USD/h) and "v100" (1 x V100,
 * 3 USD/h). The model is one task-graph op of 1 TFLOP: on the K80 the cost model estimates it
 * (the roofline, uncalibrated: band from the cost table, 1 today), on the V100 the graph gives
 * its time (band 0). Expected bands are the cost table's (pl_cost_plan_band) or the default
 * parameters' (the GPU fit), never a constant, but for the calibrated CPU's, which is the rule
 * under test. */
#include "testutil.h"

#include "placer/catalog.h"
#include "placer/cost.h"
#include "placer/search.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CATALOG                                                                                    \
    "{\"format\": \"placer-catalog/1\", \"name\": \"band\", \"configs\": ["                        \
    " {\"name\": \"k80\", \"price_usd_per_hour\": 1.0, \"price_date\": \"2026\","                  \
    "  \"price_source\": \"test\", \"cpu\": {\"model\": \"cpu-generic\"},"                         \
    "  \"gpu\": {\"model\": \"K80\", \"count\": 1}, \"interconnect\": \"pcie3\"},"                 \
    " {\"name\": \"v100\", \"price_usd_per_hour\": 3.0, \"price_date\": \"2026\","                 \
    "  \"price_source\": \"test\", \"cpu\": {\"model\": \"cpu-generic\"},"                         \
    "  \"gpu\": {\"model\": \"V100-SXM2-16GB\", \"count\": 1}, \"interconnect\": \"pcie3\"}]}"

/* One op; %s: its times_s entries. */
#define GRAPH                                                                                      \
    "{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"class\": \"dense\","     \
    " \"flops\": \"1 TFLOP\", \"times_s\": {%s}}], \"edges\": []}"

typedef struct fixture {
    char catalog[4096];
    pl_catalog *cat;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->catalog, sizeof f->catalog, "%s", tu_tmpfile(CATALOG, strlen(CATALOG), ".json"));
    pl_err err = {""};
    f->cat = pl_catalog_load(f->catalog, &err);
    if (!f->cat) fail_msg("%s", err.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pl_catalog_free(f->cat);
    unlink(f->catalog);
    free(f);
    return 0;
}

/* The graph with the given times_s entries, written to a temporary file (path: static). */
static const char *graph_file(const char *times, pl_graph **g)
{
    char text[1024];
    snprintf(text, sizeof text, GRAPH, times);
    *g = tu_taskgraph(text);
    return tu_tmpfile(text, strlen(text), ".json");
}

/* The one op's latency on configuration `name` (its fastest device, where any placement puts
 * a lone op) and that placement's band and basis, from the cost table. */
static double op_on(const fixture *f, const pl_graph *g, const char *name, double *band,
                    pl_cost_basis *basis)
{
    const pl_cluster *c = f->cat->configs[pl_catalog_find(f->cat, name)].cluster;
    pl_cost *k = tu_cost(g, c);
    int best = 0;
    for (int d = 1; d < k->n_devs; d++)
        if (k->op_s[d] < k->op_s[best]) best = d;
    double t = k->op_s[best];
    *band = pl_cost_plan_band(k, &best, basis);
    pl_cost_free(k);
    return t;
}

/* The model with times_s entries `times`, and its latency, band and basis on the K80. */
static const char *on_k80(const fixture *f, const char *times, double *l, double *b,
                          pl_cost_basis *basis)
{
    pl_graph *g;
    const char *model = graph_file(times, &g);
    *l = op_on(f, g, "k80", b, basis);
    pl_graph_free(g);
    return model;
}

static char *run_deploy(const fixture *f, const char *model, double slo_s)
{
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "deploy %s --catalog %s --slo %.17gs --strategy exhaustive --algos heft 2>&1", model,
             f->catalog, slo_s);
    int rc = tu_run(cmd, &out);
    if (rc != 0) fail_msg("placer %s: status %d\n%s", cmd, rc, out);
    return out;
}

static json_t *run_json(const fixture *f, const char *model, double slo_s)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "deploy %s --catalog %s --slo %.17gs --strategy exhaustive --algos heft --json "
             "2>/dev/null",
             model, f->catalog, slo_s);
    return tu_run_json(cmd);
}

/* A trial's band as the JSON gives it: the expected band and basis, and the top of the band
 * latency · (1 + band). */
static void expect_band(json_t *doc, const char *name, double band, pl_cost_basis basis)
{
    json_t *t = tu_find(doc, "trials", "configuration", name);
    assert_close(tu_num(t, "band"), band, 1e-9);
    assert_string_equal(json_string_value(json_object_get(t, "basis")), pl_cost_basis_name(basis));
    /* exactly, up to the JSON's 10 significant digits (report.h's pl_json_print) */
    assert_close(tu_num(t, "latency_high_s"), tu_num(t, "latency_s") * (1 + band), 1e-9);
}

/* The top of a trial's band is latency · (1 + band) to the last bit; INFINITY when it does
 * not run. */
static void test_latency_high(void **state)
{
    (void)state;
    pl_trial_record t = {.runs = true, .latency_s = 0.0231, .band = 0.5};
    assert_true(pl_trial_latency_high(&t) == 0.0231 * 1.5);
    t.band = 0;
    assert_true(pl_trial_latency_high(&t) == 0.0231);
    t.runs = false, t.latency_s = INFINITY;
    assert_true(isinf(pl_trial_latency_high(&t)));
}

static void expect_margin(json_t *doc, bool meets, const char *next)
{
    json_t *m = json_object_get(doc, "margin");
    assert_true(json_is_object(m));
    assert_int_equal(json_is_true(json_object_get(m, "meets_with_margin")), meets);
    json_t *n = json_object_get(m, "next_with_margin");
    if (next)
        assert_string_equal(json_string_value(n), next);
    else
        assert_true(json_is_null(n));
}

/* The K80 meets an SLO of 1.5 x its latency by its prediction, not at the top of its band
 * (band 1: twice its latency); the V100, given 0.9 x that latency (band 0), meets it with
 * margin at 3 x the price: 2.7 x the K80's cost per request, so the K80 stays the answer. */
static void test_within_band_names_margin(void **state)
{
    fixture *f = *state;
    pl_graph *g;
    unlink(graph_file("\"V100-SXM2-16GB\": 1", &g));
    double b, b_v100;
    pl_cost_basis basis, basis_v100;
    double l = op_on(f, g, "k80", &b, &basis);
    pl_graph_free(g);
    assert_true(b > 0); /* an estimate: the case needs a band */
    char times[128];
    snprintf(times, sizeof times, "\"V100-SXM2-16GB\": %.17g", 0.9 * l);
    const char *model = graph_file(times, &g);
    double l_v100 = op_on(f, g, "v100", &b_v100, &basis_v100);
    pl_graph_free(g);
    assert_true(b_v100 == 0 && basis_v100 == PL_BASIS_GIVEN);
    double slo = l * (1 + b / 2);

    json_t *doc = run_json(f, model, slo);
    assert_string_equal(json_string_value(json_object_get(doc, "chosen")), "k80");
    expect_band(doc, "k80", b, basis);
    expect_band(doc, "v100", 0, PL_BASIS_GIVEN);
    assert_close(tu_num(tu_find(doc, "trials", "configuration", "v100"), "latency_s"), l_v100,
                 1e-9);
    expect_margin(doc, false, "v100");
    json_decref(doc);

    char *out = run_deploy(f, model, slo);
    char want[512];
    snprintf(want, sizeof want,
             "k80 meets the SLO of %g ms only within its prediction's band: %.3f ms, up to %.3f "
             "ms (±%.0f %%, ",
             slo * 1e3, l * 1e3, l * (1 + b) * 1e3, b * 100);
    assert_contains(out, want);
    snprintf(want, sizeof want, "with margin: v100, %.3f ms (up to %.3f ms), 3.000 USD/hour",
             l_v100 * 1e3, l_v100 * 1e3);
    assert_contains(out, want);
    assert_contains(out, "band %"); /* the trials' table shows every row's band */
    free(out);
    unlink(model);
}

/* deploy at `slo`: the K80 chosen with band b (basis), the margin as given; and in the text,
 * `said`, or no note when NULL. Returns the JSON (the caller frees it). */
static json_t *expect_k80(const fixture *f, const char *model, double slo, double b,
                          pl_cost_basis basis, bool meets, const char *said)
{
    json_t *doc = run_json(f, model, slo);
    assert_string_equal(json_string_value(json_object_get(doc, "chosen")), "k80");
    expect_band(doc, "k80", b, basis);
    expect_margin(doc, meets, NULL);
    char *out = run_deploy(f, model, slo);
    if (said)
        assert_contains(out, said);
    else
        assert_null(strstr(out, "only within its prediction's band"));
    free(out);
    return doc;
}

/* An SLO above the K80's band: it meets it with margin, no note. */
static void test_cheapest_with_margin(void **state)
{
    double l, b;
    pl_cost_basis basis;
    const char *model = on_k80(*state, "\"V100-SXM2-16GB\": 1", &l, &b, &basis);
    json_decref(expect_k80(*state, model, l * (1 + b) * 1.01, b, basis, true, NULL));
    unlink(model);
}

/* Given times on both GPUs: band 0 everywhere, so an SLO equal to the K80's latency is met
 * with margin (its top is the latency itself). */
static void test_given_times_band_zero(void **state)
{
    double l, b;
    pl_cost_basis basis;
    const char *model = on_k80(*state, "\"K80\": 0.004, \"V100-SXM2-16GB\": 0.002", &l, &b, &basis);
    assert_true(b == 0 && basis == PL_BASIS_GIVEN);
    json_t *doc = expect_k80(*state, model, l, 0, PL_BASIS_GIVEN, true, NULL);
    expect_band(doc, "v100", 0, PL_BASIS_GIVEN);
    json_decref(doc);
    unlink(model);
}

/* Within its band, and nothing tried meets the SLO with margin (the V100 given 1000 s misses
 * it outright): the note says so. */
static void test_no_margin_anywhere(void **state)
{
    double l, b;
    pl_cost_basis basis;
    const char *model = on_k80(*state, "\"V100-SXM2-16GB\": 1000", &l, &b, &basis);
    json_decref(expect_k80(*state, model, l * (1 + b / 2), b, basis, false,
                           "no configuration tried meets it with margin"));
    unlink(model);
}

/* ---- the other verbs ---- */

#define GCN "models/gcn_cora.onnx"
#define CPUS "examples/clusters/local-cpu-percore.json"

/* The band of gcn_cora on the two CPU cores, every op on cpu0, by the cost model with the
 * default parameters (PLACER_CALIBRATION=off: uncalibrated). */
static double gcn_default_band(pl_cost_basis *basis)
{
    pl_err err = {""};
    pl_graph *g = tu_load(GCN);
    pl_cluster *c = pl_cluster_load(CPUS, &err);
    if (!c) fail_msg("%s", err.msg);
    pl_cost *k = tu_cost(g, c);
    int *dev = calloc(k->n_ops, sizeof *dev);
    double b = pl_cost_plan_band(k, dev, basis);
    free(dev), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
    return b;
}

static void expect_json_band(json_t *o, double band, pl_cost_basis basis)
{
    assert_close(tu_num(o, "band"), band, 1e-9);
    assert_string_equal(json_string_value(json_object_get(o, "basis")), pl_cost_basis_name(basis));
}

/* place, simulate (its plan), compare: uncalibrated, the model's band; the text says it. */
static void test_verbs_band(void **state)
{
    (void)state;
    pl_cost_basis basis;
    double b = gcn_default_band(&basis);
    const char *plan = tu_tmpfile("", 0, ".json");
    char cmd[1024], path[256];
    snprintf(path, sizeof path, "%s", plan);
    snprintf(cmd, sizeof cmd,
             "place " GCN " --cluster " CPUS " --algo heft -o %s --json 2>/dev/null", path);
    json_t *doc = tu_run_json(cmd);
    expect_json_band(doc, b, basis);
    json_decref(doc);
    snprintf(cmd, sizeof cmd, "simulate " GCN " --cluster " CPUS " --plan %s --json 2>/dev/null",
             path);
    doc = tu_run_json(cmd);
    expect_json_band(doc, b, basis);
    json_decref(doc);
    doc = tu_run_json("compare " GCN " --cluster " CPUS " --algos heft,single --json 2>/dev/null");
    expect_json_band(tu_find(doc, "algorithms", "algorithm", "single"), b, basis);
    json_decref(doc);
    char *out = NULL, want[256];
    assert_int_equal(tu_run("place " GCN " --cluster " CPUS " --algo heft 2>/dev/null", &out), 0);
    snprintf(want, sizeof want, "band        ±%.0f %% (the roofline with default efficiencies)",
             b * 100);
    assert_contains(out, want);
    free(out);
    unlink(path);
}

/* A fit of the cluster's CPU model (as `placer calibrate -o` writes one) holds the CPU
 * fidelity target: its estimates get PL_BAND_CALIBRATED, basis "cpu". */
static void test_calibrated_cpu_band(void **state)
{
    (void)state;
    const char *fit =
        "{\"format\": \"placer-cost-params/1\", \"device_model\": "
        "\"local-epyc-core\", \"eff_compute\": {\"dense\": 0.5}, \"eff_memory\": 0.8}";
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s", tu_tmpfile(fit, strlen(fit), ".json"));
    snprintf(cmd, sizeof cmd,
             "place " GCN " --cluster " CPUS " --algo heft --cost-params %s --json 2>/dev/null",
             path);
    json_t *doc = tu_run_json(cmd);
    expect_json_band(doc, PL_BAND_CALIBRATED, PL_BASIS_CPU);
    json_decref(doc);
    unlink(path);
}

/* On a GPU the kernel rules price every op of an ONNX model (shapes known): the band is the
 * fit's held-out error, pl_gpu_params.band as pl_cost_params_default has it (its value is the
 * fit's, not this test's). */
static void test_gpu_fit_band(void **state)
{
    (void)state;
    const char *one = "{\"format\": \"placer-cluster/1\", \"name\": \"one-v100\", \"devices\": "
                      "[{\"name\": \"gpu0\", \"kind\": \"gpu\", \"model\": \"V100-SXM2-16GB\"}], "
                      "\"links\": []}";
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s", tu_tmpfile(one, strlen(one), ".json"));
    pl_cost_params p;
    pl_cost_params_default(&p);
    snprintf(cmd, sizeof cmd, "place " GCN " --cluster %s --algo single --json 2>/dev/null", path);
    json_t *doc = tu_run_json(cmd);
    expect_json_band(doc, p.gpu.band, PL_BASIS_GPU_FIT);
    json_decref(doc);
    unlink(path);
}

/* multi's rows and train's answer carry the band of their prediction too. */
static void test_multi_train_band(void **state)
{
    (void)state;
    pl_cost_basis basis;
    double b = gcn_default_band(&basis);
    json_t *doc = tu_run_json("multi " GCN " " GCN " --cluster " CPUS " --json 2>/dev/null");
    json_t *rows = json_object_get(doc, "algorithms");
    assert_true(json_array_size(rows) > 0);
    expect_json_band(json_array_get(rows, 0), b, basis);
    json_decref(doc);
    doc = tu_run_json("train " GCN " --cluster examples/clusters/tag-testbed.json --budget 5 "
                      "--placer none --json 2>/dev/null");
    assert_true(tu_num(doc, "band") >= 0);
    assert_non_null(json_string_value(json_object_get(doc, "basis")));
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency_high),
        cmocka_unit_test(test_within_band_names_margin),
        cmocka_unit_test(test_cheapest_with_margin),
        cmocka_unit_test(test_given_times_band_zero),
        cmocka_unit_test(test_no_margin_anywhere),
        cmocka_unit_test(test_verbs_band),
        cmocka_unit_test(test_calibrated_cpu_band),
        cmocka_unit_test(test_gpu_fit_band),
        cmocka_unit_test(test_multi_train_band),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
