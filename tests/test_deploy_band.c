/* test_deploy_band.c: the uncertainty `placer deploy` shows (docs/cost.md, "Uncertainty";
 * issue 29 item 4): every trial carries its plan's band, and when the cheapest configuration
 * meets the SLO only within that band, deploy says so and names the cheapest that meets it
 * with margin.
 *
 * The catalogue is hand-made: "k80" (1 x K80, 1 USD/h) and "v100" (1 x V100, 3 USD/h). The
 * model is one task-graph op of 1 TFLOP: on the K80 the cost model estimates it (the
 * roofline, uncalibrated: band from the cost table, 1 today), on the V100 the graph gives its
 * time (band 0). Every expected band below is the cost table's (pl_cost_plan_band), never a
 * constant. */
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

static char *run_deploy(const fixture *f, const char *model, double slo_s, bool json)
{
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "deploy %s --catalog %s --slo %.17gs --strategy exhaustive --algos heft%s", model,
             f->catalog, slo_s, json ? " --json 2>/dev/null" : " 2>&1");
    int rc = tu_run(cmd, &out);
    if (rc != 0) fail_msg("placer %s: status %d\n%s", cmd, rc, out);
    return out;
}

static json_t *run_json(const fixture *f, const char *model, double slo_s)
{
    char *out = run_deploy(f, model, slo_s, true);
    json_error_t je;
    json_t *doc = json_loads(out, 0, &je);
    if (!doc) fail_msg("not JSON (%s):\n%s", je.text, out);
    free(out);
    return doc;
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

    char *out = run_deploy(f, model, slo, false);
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
    char *out = run_deploy(f, model, slo, false);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency_high),
        cmocka_unit_test(test_within_band_names_margin),
        cmocka_unit_test(test_cheapest_with_margin),
        cmocka_unit_test(test_given_times_band_zero),
        cmocka_unit_test(test_no_margin_anywhere),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
