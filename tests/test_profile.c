/* test_profile.c: `placer profile` (per-op times measured by onnxruntime's profiler, written as
 * placer-profile/1) and pl_ort_profile under it. Needs onnxruntime-node from `make deps`:
 * without it the tests fail and say so. */
#include "testutil.h"

#include "placer/cost.h"
#include "placer/runtime.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RNNLM "models/rnnlm.onnx"
#define LOCAL "examples/clusters/local-cpu-percore.json"

static char tmpdir[64];

static void run_ok(const char *args)
{
    char *out;
    if (tu_run(args, &out) != 0) fail_msg("placer %s:\n%s", args, out);
    free(out);
}

/* Every op that runs gets a time; only Constant ops do not (onnxruntime turns them into
 * initializers when it loads the model, so they have no kernel). rnnlm: 27 of 49 ops timed,
 * the other 22 are Constant. */
static void check_coverage(const pl_graph *g, const pl_profile *p)
{
    int timed = 0;
    for (int i = 0; i < g->n_ops; i++) {
        double t = pl_profile_lookup(p, g->ops[i].name);
        if (t < 0 && strcmp(g->ops[i].type, "Constant"))
            fail_msg("op %s (%s) has no measured time", g->ops[i].name, g->ops[i].type);
        if (t < 0) continue;
        if (!(t > 0 && isfinite(t))) fail_msg("op %s: time %g", g->ops[i].name, t);
        timed++;
    }
    assert_int_equal(timed, p->n); /* every entry names an op of the model */
    assert_true(timed * 2 >= g->n_ops);
}

/* The fit runs on a real profile and writes sane parameters. Whether the median relative
 * error improves depends on the measured times (the fit minimises squared log error, not the
 * median), so it is not asserted here: test_cost's test_calib_fit checks the fit itself. */
static void check_calibrate(const char *prof)
{
    char params[128], args[512];
    snprintf(params, sizeof params, "%s/params.json", tmpdir);
    snprintf(args, sizeof args, "calibrate %s --model %s -o %s", prof, RNNLM, params);
    run_ok(args);
    json_error_t e;
    json_t *j = json_load_file(params, 0, &e);
    if (!j) fail_msg("%s: %s", params, e.text);
    double before, after, mem;
    int n;
    assert_int_equal(json_unpack(j, "{s:{s:F}, s:{s:F}, s:F, s:i}", "before", "median_rel_error",
                                 &before, "after", "median_rel_error", &after, "eff_memory", &mem,
                                 "samples", &n),
                     0);
    assert_int_equal(n, 27);
    assert_true(isfinite(before) && isfinite(after) && after >= 0 && mem >= 0.01 && mem <= 1);
    json_decref(j);
}

static void test_profile_rnnlm_cli(void **state)
{
    (void)state;
    tu_require_ort();
    char prof[128], plan[128], args[512];
    snprintf(prof, sizeof prof, "%s/rnnlm.json", tmpdir);
    snprintf(plan, sizeof plan, "%s/plan.json", tmpdir);
    snprintf(args, sizeof args, "profile %s -o %s --repeat 3", RNNLM, prof);
    run_ok(args);
    pl_err err = {{0}};
    pl_profile *p = pl_profile_load(prof, &err);
    if (!p) fail_msg("%s", err.msg);
    pl_graph *g = tu_load(RNNLM);
    assert_string_equal(p->model_sha256, pl_graph_sha256(g, &err));
    assert_string_equal(p->device_model, "local-epyc-core"); /* cpu0 of local-cpu-percore.json */
    check_coverage(g, p);
    pl_profile_free(p), pl_graph_free(g);
    snprintf(args, sizeof args, "place %s --cluster %s --profile %s -o %s", RNNLM, LOCAL, prof,
             plan);
    run_ok(args);
    snprintf(args, sizeof args, "simulate %s --cluster %s --profile %s --plan %s", RNNLM, LOCAL,
             prof, plan);
    run_ok(args);
    check_calibrate(prof);
}

/* The JSON summary adds up: timed + missing = ops, and the missing ones are the Constants. */
static void test_profile_json(void **state)
{
    (void)state;
    tu_require_ort();
    json_t *r =
        tu_run_json("profile " RNNLM " --repeat 1 --json --device-model my-cpu 2>/dev/null");
    int ops, timed, missing, constant, unmatched;
    const char *dm;
    assert_int_equal(json_unpack(r, "{s:i, s:i, s:i, s:i, s:i, s:s}", "ops", &ops, "timed", &timed,
                                 "missing", &missing, "missing_constant", &constant, "unmatched",
                                 &unmatched, "device_model", &dm),
                     0);
    assert_int_equal(timed + missing, ops);
    assert_int_equal(missing, constant);
    assert_int_equal(unmatched, 0);
    assert_string_equal(dm, "my-cpu");
    assert_int_equal(json_array_size(json_object_get(r, "top")), 10);
    json_decref(r);
}

/* The C API: every node once per request, named, typed, timed; what was loaded stays. */
static void test_profile_api(void **state)
{
    (void)state;
    tu_require_ort();
    char inflated[4096];
    pl_err err = {{0}};
    assert_true(pl_inflate_model(RNNLM, "build/ort-cache", inflated, sizeof inflated, &err) >= 0);
    pl_ort *w = pl_ort_start(NULL, &err);
    if (!w) fail_msg("%s", err.msg);
    pl_ort_node_time *t;
    int n;
    if (pl_ort_profile(w, inflated, 2, &t, &n, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(n, 27);
    for (int k = 0; k < n; k++) {
        assert_true(*t[k].name && *t[k].op_type && !t[k].nested);
        assert_true(t[k].mean_s > 0 && t[k].count == 1);
    }
    pl_ort_node_times_free(t, n);
    long loads, runs;
    assert_int_equal(pl_ort_stats(w, &loads, &runs, &err), 0);
    assert_int_equal(loads, 1);
    assert_int_equal(runs, 2);
    pl_ort_stop(w);
}

/* pl_profile_from_node_times, without onnxruntime: a named node by name, an unnamed one by
 * position when its type agrees, two nodes of one op add up, a body's node and a node that
 * matches nothing are not ops (only the latter counts as unmatched). */
static void test_profile_from_node_times(void **state)
{
    (void)state;
    pl_graph *g = tu_load(RNNLM);
    int a = 0, b = 1;
    while (b < g->n_ops && !strcmp(g->ops[b].type, g->ops[a].type))
        b++;
    assert_true(b < g->n_ops);
    pl_ort_node_time t[5] = {
        {.name = g->ops[a].name, .node_index = -1, .mean_s = 1e-3},
        {.name = g->ops[a].name, .node_index = -1, .mean_s = 2e-3},
        {.name = "", .node_index = b, .mean_s = 4e-3},
        {.name = "", .node_index = a, .mean_s = 8e-3}, /* type of b: does not agree */
        {.name = "body/x", .node_index = 0, .mean_s = 16e-3, .nested = true},
    };
    snprintf(t[2].op_type, sizeof t[2].op_type, "%s", g->ops[b].type);
    snprintf(t[3].op_type, sizeof t[3].op_type, "%s", g->ops[b].type);
    pl_profile_match m;
    pl_err err = {{0}};
    pl_profile *p = pl_profile_from_node_times(g, t, 5, "my-cpu", &m, &err);
    if (!p) fail_msg("%s", err.msg);
    assert_int_equal(p->n, 2);
    assert_true(fabs(pl_profile_lookup(p, g->ops[a].name) - 3e-3) < 1e-15);
    assert_true(pl_profile_lookup(p, g->ops[b].name) == 4e-3);
    assert_int_equal(m.n_timed, 2);
    assert_int_equal(m.n_missing, g->n_ops - 2);
    assert_int_equal(m.n_unmatched, 1);
    assert_true(fabs(m.measured_s - 7e-3) < 1e-15);
    assert_string_equal(p->device_model, "my-cpu");
    assert_string_equal(p->model_sha256, pl_graph_sha256(g, &err));
    /* written and read back */
    char path[128];
    snprintf(path, sizeof path, "%s/p.json", tmpdir);
    if (pl_profile_save(p, path, NULL, &err) < 0) fail_msg("%s", err.msg);
    pl_profile *q = pl_profile_load(path, &err);
    if (!q) fail_msg("%s", err.msg);
    assert_int_equal(q->n, 2);
    assert_string_equal(q->model_sha256, p->model_sha256);
    assert_true(pl_profile_lookup(q, g->ops[b].name) == 4e-3);
    pl_profile_free(q), pl_profile_free(p);
    pl_graph_free(g);
}

static void test_profile_usage(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(tu_run("profile", &out), 2);
    assert_contains(out, "which model?");
    free(out);
    assert_int_equal(tu_run("profile " RNNLM " --repeat 0", &out), 2);
    assert_contains(out, "--repeat: '0' is not a whole number from 1 to 10000");
    free(out);
}

static int setup(void **state)
{
    (void)state;
    return tu_mkdtemp(tmpdir, sizeof tmpdir, "placer-test-profile");
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_rnnlm_cli), cmocka_unit_test(test_profile_json),
        cmocka_unit_test(test_profile_api),       cmocka_unit_test(test_profile_from_node_times),
        cmocka_unit_test(test_profile_usage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
