/* test_autocal.c: calibrated by default (docs/calibrate.md): the cache of this machine's
 * calibration is used when valid, refused and rebuilt when for another CPU or corrupt, and a
 * prediction made without it says "uncalibrated". */
#include "testutil.h"

#include "placer/calib.h"
#include "placer/cluster.h"
#include "placer/runtime.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOCAL "examples/clusters/local-cpu-percore.json"

static char cache[256], entry[4096], cpu[256], key[512];
static pl_cluster *local;

/* A fresh PLACER_CACHE for each test, and the path of this machine's entry in it. */
static int setup(void **state)
{
    (void)state;
    if (tu_mkdtemp(cache, sizeof cache, "autocal") < 0) return -1;
    setenv("PLACER_CACHE", cache, 1);
    unsetenv("PLACER_CALIBRATION");
    unsetenv("PLACER_CALIBRATION_MODELS");
    pl_cpu_model(cpu, sizeof cpu);
    pl_err err;
    if (!(local = pl_cluster_load(LOCAL, &err))) return -1;
    pl_machine_fit_key(&local->devs[0], key, sizeof key);
    if (pl_machine_calib_path(cpu, "local-epyc-core", entry, sizeof entry, &err) < 0) return -1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/calibration", cache);
    return pl_mkdir_p(dir, &err);
}

static int teardown(void **state)
{
    (void)state;
    pl_cluster_free(local);
    return tu_rmtree(cache);
}

/* An entry measured on CPU `on`, fitted for `fit` (the device's key as it is: `key`), dense
 * efficiency 0.5, memory 0.3 (not the defaults). */
static void write_entry_for(const char *path, const char *on, const char *fit)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"format\": \"placer-cost-params/1\", \"device_model\": \"local-epyc-core\",\n"
            " \"cpu_model\": \"%s\", \"measured\": \"2026-11-25T00:00:00Z\",\n"
            " \"fitted_for\": \"%s\",\n"
            " \"eff_compute\": {\"dense\": 0.5, \"elementwise\": 0.1}, \"eff_memory\": 0.3}\n",
            on, fit);
    fclose(f);
}

static void write_entry(const char *path, const char *on)
{
    write_entry_for(path, on, key);
}

/* The "makespan_s" of `place --json` with extra arguments; the whole output in *out. */
static double makespan(const char *extra, char **out)
{
    char args[4096];
    snprintf(args, sizeof args, "place models/resnet50.onnx --cluster %s --json %s", LOCAL, extra);
    int rc = tu_run(args, out);
    assert_int_equal(rc, 0);
    const char *m = strstr(*out, "\"makespan_s\":");
    assert_non_null(m);
    return atof(m + strlen("\"makespan_s\":"));
}

static void test_this_machine_field(void **state)
{
    (void)state;
    pl_err err;
    pl_cluster *c = pl_cluster_load(LOCAL, &err);
    assert_non_null(c);
    assert_true(c->devs[0].this_machine && c->devs[1].this_machine);
    pl_cluster_free(c);
    c = pl_cluster_load("examples/clusters/nvlink-8gpu.json", &err);
    assert_non_null(c);
    assert_false(c->devs[0].this_machine);
    pl_cluster_free(c);
}

/* The library's verdicts: absent 0, valid 1, other CPU / device model / corrupt -1. */
static void test_load_verdicts(void **state)
{
    (void)state;
    pl_cost_params p;
    pl_err err;
    assert_int_equal(pl_machine_calib_load(entry, cpu, &local->devs[0], &p, &err), 0);
    write_entry(entry, cpu);
    assert_int_equal(pl_machine_calib_load(entry, cpu, &local->devs[0], &p, &err), 1);
    assert_close(p.eff_compute[PL_CLASS_DENSE], 0.5, 1e-12);
    assert_close(p.eff_memory, 0.3, 1e-12);
    pl_device other = local->devs[0];
    other.model = "other-core";
    assert_int_equal(pl_machine_calib_load(entry, cpu, &other, &p, &err), -1);
    assert_contains(err.msg, "device model 'local-epyc-core'");
    /* fitted with other figures of the device, or by a placer whose cost model had other
     * terms (no key at all): the efficiencies would price wrongly */
    other = local->devs[0];
    other.mem_bandwidth_Bps *= 2;
    assert_int_equal(pl_machine_calib_load(entry, cpu, &other, &p, &err), -1);
    assert_contains(err.msg, "but device cpu0 is now");
    assert_contains(err.msg, "memory 1.48e+11 B/s");
    /* a re-read rate given (or changed) changes what the fit saw: refused; the key of a device
     * without one is the one it always had (local-cpu-percore.json gives none) */
    assert_null(strstr(key, "re-read"));
    other = local->devs[0];
    other.reread_Bps = 25e9;
    assert_int_equal(pl_machine_calib_load(entry, cpu, &other, &p, &err), -1);
    assert_contains(err.msg, "re-read 2.5e+10 B/s");
    write_entry_for(entry, cpu, "");
    assert_int_equal(pl_machine_calib_load(entry, cpu, &local->devs[0], &p, &err), -1);
    assert_contains(err.msg, "fitted for \"(an older placer)\"");
    write_entry(entry, cpu);
    write_entry(entry, "Other CPU 9000");
    assert_int_equal(pl_machine_calib_load(entry, cpu, &local->devs[0], &p, &err), -1);
    assert_contains(err.msg, "measured on CPU 'Other CPU 9000'");
    /* corrupt: bytes flipped, and a value out of range */
    FILE *f = fopen(entry, "r+");
    assert_non_null(f);
    fputs("\x01\xff", f);
    fclose(f);
    assert_int_equal(pl_machine_calib_load(entry, cpu, &local->devs[0], &p, &err), -1);
    f = fopen(entry, "w");
    fprintf(f,
            "{\"format\": \"placer-cost-params/1\", \"cpu_model\": \"%s\", \"eff_compute\": {}, "
            "\"eff_memory\": 7}",
            cpu);
    fclose(f);
    assert_int_equal(pl_machine_calib_load(entry, cpu, &local->devs[0], &p, &err), -1);
    assert_contains(err.msg, "(0, 1]");
}

/* A valid entry prices exactly as the same file given with --cost-params, silently. */
static void test_cache_used(void **state)
{
    (void)state;
    write_entry(entry, cpu);
    /* the entry's name carries the cost model's version: another version's entry beside it is
     * neither read nor rebuilt (two placers on one machine keep one each) */
    char want[32], other[4200];
    snprintf(want, sizeof want, ".v%d.json", PL_MACHINE_COST_MODEL);
    assert_contains(entry, want);
    snprintf(other, sizeof other, "%.*s.v%d.json", (int)(strlen(entry) - strlen(want)), entry,
             PL_MACHINE_COST_MODEL - 1);
    FILE *f = fopen(other, "w");
    assert_non_null(f);
    fputs("an older placer's entry", f);
    fclose(f);
    char *a, *b, *c, args[4200];
    double cached = makespan("", &a);
    snprintf(args, sizeof args, "--cost-params %s", entry);
    double given = makespan(args, &b);
    setenv("PLACER_CALIBRATION", "off", 1);
    double off = makespan("", &c);
    assert_close(cached, given, 1e-12);
    assert_true(fabs(cached - off) > 1e-3 * off); /* the entry is not the defaults */
    assert_null(strstr(a, "uncalibrated"));
    assert_null(strstr(a, "measuring"));
    assert_contains(a, "\"calibration\": \"this-machine\"");
    assert_contains(b, "\"calibration\": \"cost-params\"");
    assert_contains(c, "\"calibration\": \"uncalibrated\"");
    free(a), free(b), free(c);
    pl_err err = {""};
    char *kept = pl_read_file(other, NULL, &err);
    assert_non_null(kept);
    assert_string_equal(kept, "an older placer's entry");
    free(kept);
}

/* An entry whose fit scaled the device's peak (docs/calibrate.md, "Another CPU": profiles from
 * a CPU faster than the file describes) prices dense ops that much faster, and every verb that
 * uses it says so, not only the one that measured; an entry without a scale says nothing. */
static void test_scaled_entry_warns(void **state)
{
    (void)state;
    char *out[3];
    double t[3];
    for (int k = 0; k < 3; k++) {
        FILE *f = fopen(entry, "w");
        assert_non_null(f);
        fprintf(
            f,
            "{\"format\": \"placer-cost-params/1\", \"device_model\": \"local-epyc-core\",\n"
            " \"cpu_model\": \"%s\", \"measured\": \"2026-11-29T00:00:00Z\",\n"
            " \"fitted_for\": \"%s\", \"eff_compute\": {\"dense\": 1.0}, \"eff_memory\": 0.3%s}\n",
            cpu, key, k < 2 ? ", \"peak_scale\": 1.5" : "");
        fclose(f);
        t[k] = makespan("", &out[k]);
    }
    for (int k = 0; k < 2; k++) {
        assert_contains(out[k], "warning: the profiles fitted need dense ops at 1.50x cpu0's "
                                "fp32 peak (110 GFLOP/s)");
        assert_contains(out[k], "peak_scale 1.50, mem_scale 1.00");
        assert_contains(out[k], "\"calibration\": \"this-machine\"");
        assert_contains(out[k], "\"calibration_scale\": {");
        assert_contains(out[k], "\"peak\": 1.5,");
    }
    assert_null(strstr(out[2], "profiles fitted"));
    assert_null(strstr(out[2], "calibration_scale"));
    assert_close(t[0], t[1], 1e-12);
    assert_true(t[0] < 0.9 * t[2]); /* resnet50 is mostly Conv: most of 1.5x shows */
    for (int k = 0; k < 3; k++)
        free(out[k]);
}

/* Calibration off (the variable, or --no-calibration): the output says "uncalibrated"; a
 * cluster with no device of this machine never mentions it. */
static void test_uncalibrated_note(void **state)
{
    (void)state;
    char *a, *b, *c;
    setenv("PLACER_CALIBRATION", "off", 1);
    makespan("", &a);
    assert_contains(a, "uncalibrated");
    unsetenv("PLACER_CALIBRATION");
    setenv("PLACER_CALIBRATION_MODELS", "/nonexistent.onnx", 1); /* must not be measured */
    makespan("--no-calibration", &b);
    assert_contains(b, "uncalibrated");
    assert_contains(b, "(--no-calibration)"); /* not "the measurement failed" */
    assert_null(strstr(b, "measuring this machine"));
    assert_int_equal(
        tu_run("place models/resnet50.onnx --cluster examples/clusters/nvlink-8gpu.json", &c), 0);
    assert_null(strstr(c, "calibrat"));
    /* split prices nothing: it never measures this machine (the measurement would fail here
     * and say so), nor calls its output uncalibrated */
    char dir[256], args[1024], *d, *e;
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-autocal"), 0);
    snprintf(
        args, sizeof args,
        "place models/rnnlm.onnx --cluster examples/clusters/local-cpu-percore.json --algo single "
        "--no-calibration -o %s/p.json",
        dir);
    assert_int_equal(tu_run(args, &d), 0);
    snprintf(args, sizeof args,
             "split models/rnnlm.onnx --cluster examples/clusters/local-cpu-percore.json "
             "--plan %s/p.json -o %s/split",
             dir, dir);
    assert_int_equal(tu_run(args, &e), 0);
    assert_null(strstr(e, "calibrat"));
    assert_null(strstr(e, "measur"));
    assert_int_equal(tu_rmtree(dir), 0);
    free(a), free(b), free(c), free(d), free(e);
}

/* An entry for another CPU, or corrupt, is refused with a warning and measured again (one
 * small model, PLACER_CALIBRATION_MODELS), and the new entry is this CPU's. */
static void rebuilt(const char *why)
{
    tu_require_ort();
    setenv("PLACER_CALIBRATION_MODELS", "models/rnnlm.onnx", 1);
    char *a;
    makespan("", &a);
    assert_contains(a, "refused and rebuilt");
    assert_contains(a, why);
    assert_contains(a, "measuring this machine once");
    assert_null(strstr(a, "uncalibrated"));
    pl_cost_params p;
    pl_err err;
    assert_int_equal(pl_machine_calib_load(entry, cpu, &local->devs[0], &p, &err), 1);
    /* measured in passes, and how far they moved is written */
    json_t *j = json_load_file(entry, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "passes")), 3);
    json_t *spread = json_object_get(j, "pass_spread");
    assert_true(json_is_number(spread) && json_number_value(spread) >= 0 &&
                json_number_value(spread) < 1);
    json_decref(j);
    free(a);
}

static void test_rebuilt_other_cpu(void **state)
{
    (void)state;
    write_entry(entry, "Other CPU 9000");
    rebuilt("measured on CPU 'Other CPU 9000'");
}

static void test_rebuilt_corrupt(void **state)
{
    (void)state;
    write_entry(entry, cpu);
    FILE *f = fopen(entry, "r+");
    assert_non_null(f);
    assert_int_equal(fwrite("\xfe\xff\x00", 1, 3, f), 3); /* not JSON at all */
    fclose(f);
    rebuilt("unable to decode");
}

/* pl_machine_params, the routine every verb and bench_fidelity get this machine's calibration
 * from: a valid entry is used as it is (1); a corrupt one, or one for another CPU, is refused,
 * says why and is measured again (2, one small model) into an entry this CPU's; when nothing
 * can be measured, 0 with the defaults and the reason. */
static void test_machine_params(void **state)
{
    (void)state;
    pl_cluster *c = pl_cluster_load(LOCAL, &(pl_err){""});
    assert_non_null(c);
    pl_cost_params p, dflt;
    pl_cost_params_default(&dflt);
    pl_err refused, err;
    char path[4096];
    /* nothing cached and nothing measurable: the defaults, and why */
    setenv("PLACER_CALIBRATION_MODELS", "/nonexistent.onnx", 1);
    assert_int_equal(pl_machine_params(&c->devs[0], NULL, &p, path, sizeof path, &refused, &err),
                     0);
    assert_contains(err.msg, "this machine could not be measured: ");
    assert_contains(err.msg, "/nonexistent.onnx");
    assert_string_equal(refused.msg, "");
    assert_close(p.eff_memory, dflt.eff_memory, 0);
    /* a valid entry: used, not measured (the models named cannot be) */
    write_entry(entry, cpu);
    assert_int_equal(pl_machine_params(&c->devs[0], NULL, &p, path, sizeof path, &refused, &err),
                     1);
    assert_string_equal(path, entry);
    assert_string_equal(refused.msg, "");
    assert_close(p.eff_compute[PL_CLASS_DENSE], 0.5, 1e-12);
    assert_close(p.eff_memory, 0.3, 1e-12);
    /* another CPU's entry with nothing measurable: refused, and the defaults, not its values */
    write_entry(entry, "Other CPU 9000");
    assert_int_equal(pl_machine_params(&c->devs[0], NULL, &p, NULL, 0, &refused, &err), 0);
    assert_contains(refused.msg, "measured on CPU 'Other CPU 9000'");
    assert_close(p.eff_memory, dflt.eff_memory, 0);
    tu_require_ort();
    setenv("PLACER_CALIBRATION_MODELS", "models/rnnlm.onnx", 1);
    assert_int_equal(pl_machine_params(&c->devs[0], NULL, &p, NULL, 0, &refused, &err), 2);
    assert_contains(refused.msg, "measured on CPU 'Other CPU 9000'");
    assert_string_equal(p.device_model, "local-epyc-core");
    pl_cost_params q;
    assert_int_equal(pl_machine_calib_load(entry, cpu, &c->devs[0], &q, &err), 1);
    assert_close(q.eff_memory, p.eff_memory, 1e-12); /* what was cached is what was returned */
    /* corrupt: rebuilt the same way; then the new entry is used as it is */
    FILE *f = fopen(entry, "r+");
    assert_non_null(f);
    assert_int_equal(fwrite("\xfe\xff\x00", 1, 3, f), 3);
    fclose(f);
    assert_int_equal(pl_machine_params(&c->devs[0], NULL, &p, NULL, 0, &refused, &err), 2);
    assert_contains(refused.msg, "unable to decode");
    setenv("PLACER_CALIBRATION_MODELS", "/nonexistent.onnx", 1);
    assert_int_equal(pl_machine_params(&c->devs[0], NULL, &p, NULL, 0, &refused, &err), 1);
    assert_string_equal(refused.msg, "");
    pl_cluster_free(c);
}

/* runtime_conv_ratio from profiles: resnet50 as run, one NCHWc Conv node per Conv op (named
 * after its output, as onnxruntime names them) at the op's estimate under the fit plus the
 * profiler's 5 us, halved where the profiler's share is not: 0.5; a Relu and a node nested in
 * a body do not count. No Conv at all: 1. */
static void test_conv_ratio_measured(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = pl_graph_load("models/resnet50.onnx", NULL, &err), *r = NULL;
    assert_non_null(g);
    pl_cluster *c = pl_cluster_load(LOCAL, &err);
    assert_non_null(c);
    pl_cost_params fit;
    pl_cost_params_default(&fit);
    fit.eff_compute[PL_CLASS_DENSE] = 0.8;
    fit.runtime_conv_ratio = 3; /* ignored: the ratio is measured against the plain estimate */
    pl_cost_params plain = fit;
    plain.runtime_conv_ratio = 1;
    pl_ort_node_time *on = calloc(g->n_ops + 2, sizeof *on);
    int n_on = 0;
    for (int op = 0; op < g->n_ops; op++) {
        if (strcmp(g->ops[op].type, "Conv")) continue;
        on[n_on] = (pl_ort_node_time){
            .name = "x_nchwc",
            .mean_s = 0.5 * pl_cost_estimate(&g->ops[op], g, &c->devs[0], &plain) + 5e-6,
            .count = 1};
        snprintf(on[n_on++].op_type, sizeof on->op_type, "Conv");
    }
    on[n_on] = (pl_ort_node_time){.name = "relu_nchwc", .mean_s = 1, .count = 1};
    snprintf(on[n_on++].op_type, sizeof on->op_type, "Relu");
    on[n_on] = (pl_ort_node_time){.name = "body_conv", .mean_s = 1, .count = 1, .nested = true};
    snprintf(on[n_on++].op_type, sizeof on->op_type, "Conv");
    const pl_graph *gs[1] = {g};
    const pl_ort_node_time *ons[1] = {on};
    assert_close(pl_machine_conv_ratio(gs, ons, &n_on, 1, &c->devs[0], &fit, 5e-6), 0.5, 1e-9);
    r = pl_graph_load("models/rnnlm.onnx", NULL, &err);
    assert_non_null(r);
    gs[0] = r, n_on = 0;
    assert_close(pl_machine_conv_ratio(gs, ons, &n_on, 1, &c->devs[0], &fit, 5e-6), 1, 0);
    free(on);
    pl_cluster_free(c);
    pl_graph_free(g), pl_graph_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_this_machine_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_verdicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scaled_entry_warns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_used, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uncalibrated_note, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebuilt_other_cpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebuilt_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_machine_params, setup, teardown),
        cmocka_unit_test(test_conv_ratio_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
