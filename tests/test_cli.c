/* test_cli.c: the command as a user meets it: bad input gets a message naming the file and
 * the problem and exit status 2; good input gets a table or JSON. */
#include "testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- cold requests (docs/simulator.md, "Cold requests") ---- */

#define XEON "examples/clusters/local-xeon-percore.json"

/* The Xeon's file with the cold figures given here on every device of its host (and no
 * keep), into path. */
static void cold_cluster(const char *path, const char *tau, const char *rate, double share)
{
    json_t *c = json_load_file(XEON, 0, NULL), *d;
    assert_non_null(c);
    size_t i;
    json_array_foreach(json_object_get(c, "devices"), i, d)
    {
        json_object_del(d, "host_cold_tau_s"), json_object_del(d, "host_cold_read_Bps");
        json_object_del(d, "host_cold_time_share"), json_object_del(d, "host_cold_keep_bytes");
        if (!json_object_get(d, "host_mem_bandwidth_Bps") || !tau) continue;
        json_object_set_new(d, "host_cold_tau_s", json_string(tau));
        json_object_set_new(d, "host_cold_read_Bps", json_string(rate));
        json_object_set_new(d, "host_cold_time_share", json_real(share));
    }
    assert_int_equal(json_dump_file(c, path, 0), 0);
    json_decref(c);
}

/* `placer simulate MODEL` of plan `plan` after `idle` (NULL: back to back): its JSON. */
static json_t *simulate_idle(const char *model, const char *cluster, const char *plan,
                             const char *idle)
{
    char args[1024];
    snprintf(args, sizeof args, "simulate %s --cluster %s --plan %s --json%s%s 2>/dev/null", model,
             cluster, plan, idle ? " --idle " : "", idle ? idle : "");
    return tu_run_json(args);
}

/* A model's one-core plan on the Xeon's file, without the cluster's identity (so that the
 * copies with other cold figures take it), into plan. */
static void bare_plan(const char *model, const char *plan)
{
    char args[1024], *out = NULL;
    snprintf(args, sizeof args, "place %s --cluster %s -o %s", model, XEON, plan);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    json_t *p = json_load_file(plan, 0, NULL);
    assert_non_null(p);
    json_object_del(p, "cluster");
    assert_int_equal(json_dump_file(p, plan, 0), 0);
    json_decref(p);
}

/* tools/fit_cold.py ARGS with the placer under test: its exit status, its first two lines. */
static int fit_cold(const char *args, char line[2][512])
{
    char cmd[4096], rest[512];
    const char *bin = getenv("PLACER_BIN") ? getenv("PLACER_BIN") : "build/placer";
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/fit_cold.py --placer %s %s 2>&1", bin, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    line[0][0] = line[1][0] = 0;
    for (int i = 0; fgets(i < 2 ? line[i] : rest, 512, f); i++)
        ; /* all of it: a reader that stops early breaks the writer's pipe */
    return pclose(f);
}

/* `simulate --idle`: with the cold figures a request after a wait costs more the longer the
 * wait, priced in a round of period makespan + wait; without them, or back to back, nothing
 * changes. Then tools/fit_cold.py, given what the simulator predicts under known figures as
 * if measured, finds those figures again (tau on its grid, the rate and share to a tenth). */
static void test_simulate_idle_and_fit_cold(void **state)
{
    (void)state;
    char dir[256], warm[300], cold[300], plan[2][300], idle[2][300], args[2048];
    const char *models[2] = {"models/gcn_cora.onnx", "models/mobilenet_v3_large.onnx"};
    const char *gaps[3] = {"10ms", "48ms", "150ms"};
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-cold"), 0);
    snprintf(warm, sizeof warm, "%s/warm.json", dir),
        snprintf(cold, sizeof cold, "%s/cold.json", dir);
    cold_cluster(warm, NULL, NULL, 0);
    cold_cluster(cold, "40 ms", "10 GB/s", 0.3);
    for (int m = 0; m < 2; m++) {
        snprintf(plan[m], sizeof plan[m], "%s/plan%d.json", dir, m);
        snprintf(idle[m], sizeof idle[m], "%s/idle%d.json", dir, m);
        bare_plan(models[m], plan[m]);
        json_t *b = simulate_idle(models[m], cold, plan[m], NULL);
        double base = tu_num(b, "makespan_s"), last = base;
        assert_true(tu_num(b, "cold_period_s") == 0);
        json_t *doc =
            json_pack("{s:{s:s,s:{s:[f]}}}", "idle", "model", models[m], "ms", "0", base * 1e3);
        for (int i = 0; i < 3; i++) {
            json_t *w = simulate_idle(models[m], warm, plan[m], gaps[i]);
            assert_close(tu_num(w, "makespan_s"), base, 1e-12); /* no figures: no cost */
            assert_true(tu_num(w, "cold_period_s") == 0);
            json_decref(w);
            json_t *c = simulate_idle(models[m], cold, plan[m], gaps[i]);
            double t = tu_num(c, "makespan_s");
            assert_true(t > last);
            assert_close(tu_num(c, "cold_period_s"), t + tu_num(c, "idle_s"), 1e-5);
            json_object_set_new(json_object_get(json_object_get(doc, "idle"), "ms"),
                                gaps[i][2] == 'm' ? (gaps[i][1] == '0' ? "10" : "48") : "150",
                                json_pack("[f]", t * 1e3));
            last = t;
            json_decref(c);
        }
        assert_int_equal(json_dump_file(doc, idle[m], 0), 0);
        json_decref(doc), json_decref(b);
    }
    char line[2][512], fitted[300], rms[2][64];
    snprintf(fitted, sizeof fitted, "%s/fitted.json", dir);
    snprintf(args, sizeof args, "--cluster %s -o %s %s %s", XEON, fitted, idle[0], idle[1]);
    if (fit_cold(args, line) != 0) fail_msg("fit_cold.py %s: failed: %s%s", args, line[0], line[1]);
    json_t *fig = json_loads(line[1], 0, NULL);
    if (!fig) fail_msg("fit_cold.py printed '%s' then '%s'", line[0], line[1]);
    assert_string_equal(json_string_value(json_object_get(fig, "host_cold_tau_s")), "40 ms");
    double rate = atof(json_string_value(json_object_get(fig, "host_cold_read_Bps")));
    assert_true(rate > 9 && rate < 11);
    assert_true(fabs(json_number_value(json_object_get(fig, "host_cold_time_share")) - 0.3) < 0.1);
    /* -o wrote the figures; --check prices the same waits under them: the same error */
    assert_non_null(strstr(line[0], "fitted on 2 models measured on an idle machine: rms error "));
    sscanf(strstr(line[0], "rms error"), "rms error %63s", rms[0]);
    snprintf(args, sizeof args, "--cluster %s --check %s %s", fitted, idle[0], idle[1]);
    if (fit_cold(args, line) != 0) fail_msg("fit_cold.py %s: failed: %s", args, line[0]);
    assert_non_null(strstr(line[0], "checked the figures of"));
    sscanf(strstr(line[0], "rms error"), "rms error %63s", rms[1]);
    assert_string_equal(rms[0], rms[1]);
    json_t *again = json_loads(line[1], 0, NULL);
    assert_true(json_equal(fig, again));
    json_decref(again);
    snprintf(args, sizeof args, "--cluster %s --check %s", warm, idle[0]);
    assert_int_not_equal(fit_cold(args, line), 0);
    assert_non_null(strstr(line[0], "no device gives cold figures to check"));
    json_decref(fig);
    /* waits timed with a neighbour busy (measure_cpu.py --busy) and without are not fitted
     * together: the file that differs from the first is named */
    json_t *busy = json_load_file(idle[1], 0, NULL);
    json_object_set_new(json_object_get(busy, "idle"), "neighbour", json_string("a Conv chain"));
    assert_int_equal(json_dump_file(busy, idle[1], 0), 0);
    json_decref(busy);
    snprintf(args, sizeof args, "--cluster %s --check %s %s", fitted, idle[0], idle[1]);
    assert_int_not_equal(fit_cold(args, line), 0);
    char want[700];
    snprintf(want, sizeof want,
             "%s was measured with a neighbour busy on cpu1 (a Conv chain), %s on an idle machine",
             idle[1], idle[0]);
    if (!strstr(line[0], want)) fail_msg("fit_cold.py %s said '%s'", args, line[0]);
    /* the text says the request was priced cold */
    char *out = NULL;
    snprintf(args, sizeof args, "simulate %s --cluster %s --plan %s --idle 50ms", models[0], cold,
             plan[0]);
    assert_int_equal(tu_run(args, &out), 0);
    assert_non_null(strstr(out, "cold        priced in a round of"));
    free(out);
    snprintf(args, sizeof args, "simulate %s --cluster %s --plan %s --idle 5ms --requests 3",
             models[0], cold, plan[0]);
    tu_expect_refusal(args, "--idle prices one request after a wait; --requests 3");
    tu_rmtree(dir);
}

static void test_usage_errors(void **state)
{
    (void)state;
    tu_expect_refusal("", "usage: placer VERB");
    tu_expect_refusal("frobnicate", "unknown verb 'frobnicate'");
    tu_expect_refusal("inspect", "which model?");
    tu_expect_refusal("inspect --bogus models/resnet50.onnx", "unknown option '--bogus'");
    tu_expect_refusal("inspect --dim batch models/resnet50.onnx", "--dim wants NAME=VALUE");
}

static void test_missing_empty_and_non_onnx(void **state)
{
    (void)state;
    tu_expect_refusal("inspect /nonexistent/model.onnx",
                      "/nonexistent/model.onnx: cannot open: No such file or directory");
    char args[512];
    snprintf(args, sizeof args, "inspect %s", tu_tmpfile("", 0, ".onnx"));
    tu_expect_refusal(args, "empty file");
    const char *text = "this is a README, not a model\n";
    snprintf(args, sizeof args, "inspect %s", tu_tmpfile(text, strlen(text), ".onnx"));
    tu_expect_refusal(args, "not an ONNX model");
}

static void test_truncated_model(void **state)
{
    (void)state;
    size_t len;
    pl_err err;
    char *buf = pl_read_file("models/resnet50.onnx", &len, &err);
    assert_non_null(buf);
    char args[512];
    snprintf(args, sizeof args, "inspect %s", tu_tmpfile(buf, len / 2, ".onnx"));
    /* where the wire format breaks, and why: the graph's length runs past the end */
    tu_expect_refusal(args, "not an ONNX model (protobuf parse failed at byte ");
    tu_expect_refusal(args, "in graph: a length that runs past the end of its message (a "
                            "truncated file?))");
    free(buf);
}

static void test_malformed_taskgraph(void **state)
{
    (void)state;
    const char *bad = "{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\"}],\n"
                      " \"edges\": [{\"from\": \"a\", \"to\": \"nowhere\", \"bytes\": 4}]}";
    char args[512];
    const char *path = tu_tmpfile(bad, strlen(bad), ".json");
    snprintf(args, sizeof args, "inspect %s", path);
    tu_expect_refusal(args, path);
    tu_expect_refusal(args, "nowhere");
}

/* Each malformed task graph: exit 2, and the message names the file and the JSON place. */
static void test_taskgraph_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
         " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 4},"
         " {\"from\": \"b\", \"to\": \"a\", \"bytes\": 4}]}",
         "cycle through 2 ops"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"weight_bytes\": "
         "-4}]}",
         "$.nodes[0].weight_bytes"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"memory_bytes\": "
         "\"16\"}]}",
         "unit is missing"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"size\": 4}]}",
         "$.nodes[0]"},
        {"{\"format\": \"placer-cluster/1\", \"nodes\": []}", "placer-taskgraph/1"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [", "line"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *path = tu_tmpfile(cases[k].text, strlen(cases[k].text), ".json");
        char args[512];
        snprintf(args, sizeof args, "inspect %s", path);
        tu_expect_refusal(args, path);
        tu_expect_refusal(args, cases[k].needle);
    }
}

/* `simulate --per-edge`: a(1 s)@gpu0 writes x (1000 B, 0.5 s + 1 s over the link), read by
 * b(1 s) and c(1 s) on gpu1. Sent once: b [2.5, 3.5], c [3.5, 4.5]; per edge the second copy
 * waits for the port: c [4, 5]. A plan with a bad transfer order is refused with its place. */
static void test_simulate_per_edge(void **state)
{
    (void)state;
    const char *model =
        "{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
        "{\"name\": \"a\", \"times_s\": {\"V100-SXM2-16GB\": 1}},"
        "{\"name\": \"b\", \"times_s\": {\"V100-SXM2-16GB\": 1}},"
        "{\"name\": \"c\", \"times_s\": {\"V100-SXM2-16GB\": 1}}],"
        " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"tensor\": \"x\", \"bytes\": 1000},"
        " {\"from\": \"a\", \"to\": \"c\", \"tensor\": \"x\", \"bytes\": 1000}]}";
    const char *cluster =
        "{\"format\": \"placer-cluster/1\", \"name\": \"two\", \"devices\": ["
        " {\"name\": \"gpu0\", \"model\": \"V100-SXM2-16GB\"},"
        " {\"name\": \"gpu1\", \"model\": \"V100-SXM2-16GB\"}],"
        " \"links\": [{\"from\": \"gpu0\", \"to\": \"gpu1\", \"bandwidth_Bps\": 1000,"
        " \"latency_s\": 0.5, \"both_ways\": true}]}";
    const char *plan = "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\","
                       " \"placement\": {\"b\": \"gpu1\", \"c\": \"gpu1\"},"
                       " \"transfer_order\": [[\"x\", \"b\"]]}";
    const char *bad = "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\","
                      " \"placement\": {}, \"transfer_order\": [[\"x\", \"a\"]]}";
    char m[256], c[256], p[256], args[1024], *out;
    snprintf(m, sizeof m, "%s", tu_tmpfile(model, strlen(model), ".json"));
    snprintf(c, sizeof c, "%s", tu_tmpfile(cluster, strlen(cluster), ".json"));
    snprintf(p, sizeof p, "%s", tu_tmpfile(plan, strlen(plan), ".json"));
    for (int per_edge = 0; per_edge < 2; per_edge++) {
        snprintf(args, sizeof args, "simulate %s --cluster %s --plan %s --json%s", m, c, p,
                 per_edge ? " --per-edge" : "");
        json_t *o = tu_run_json(args);
        assert_true(json_is_true(json_object_get(o, "per_edge")) == per_edge);
        assert_close(json_number_value(json_object_get(o, "makespan_s")), per_edge ? 5 : 4.5,
                     1e-12);
        assert_string_equal(json_string_value(json_object_get(o, "invariants")), "ok");
        json_decref(o);
    }
    assert_int_equal(tu_run("simulate --help", &out), 0);
    assert_contains(out, "--per-edge");
    free(out);
    const char *bp = tu_tmpfile(bad, strlen(bad), ".json");
    snprintf(args, sizeof args, "simulate %s --cluster %s --plan %s", m, c, bp);
    tu_expect_refusal(args, "$.transfer_order[0]: ['x', 'a'] is not a graph edge");
    tu_expect_refusal(args, bp);
    remove(m), remove(c), remove(p), remove(bp);
}

static void test_inspect_table_and_json(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(tu_run("inspect models/resnet50.onnx", &out), 0);
    assert_non_null(strstr(out, "parameters"));
    assert_non_null(strstr(out, "Conv"));
    free(out);
    assert_int_equal(tu_run("inspect --json models/resnet50.onnx 2>/dev/null", &out), 0);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    if (!j) fail_msg("inspect --json is not JSON (%s):\n%s", jerr.text, out);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "placer-inspect/1");
    assert_true(json_integer_value(json_object_get(j, "ops")) > 100);
    assert_true(json_integer_value(json_object_get(j, "params")) > 25000000);
    assert_int_equal(json_integer_value(json_object_get(j, "unknown_ops")), 0);
    json_decref(j);
    free(out);
}

static void test_input_shapes(void **state)
{
    (void)state;
    tu_expect_refusal("inspect models/resnet50.onnx --input picture=1,3,224,224",
                      "no graph input named 'picture' (inputs: 'image')");
    tu_expect_refusal("inspect models/resnet50.onnx --input image=2,3,224,224",
                      "input 'image' has dim 0 = 1 in the file");
    tu_expect_refusal("inspect models/resnet50.onnx --input image=1,3,224",
                      "has rank 4 in the file");
    tu_expect_refusal("inspect models/resnet50.onnx --input image=1,x",
                      "expected comma-separated sizes");
    /* silero VAD leaves its input's dims open: giving them makes them known */
    char *out;
    assert_int_equal(
        tu_run("inspect build/thirdparty/silero_vad_v5.onnx --input input=1,512", &out), 0);
    assert_non_null(strstr(out, "input float32 [1,512]"));
    free(out);
    assert_int_equal(tu_run("inspect build/thirdparty/silero_vad_v5.onnx", &out), 0);
    assert_non_null(strstr(out, "input float32 [?,?]"));
    free(out);
}

/* ---- flag values: one parser per kind (cli.h), every bad value exit 2 naming the flag ---- */

#define RNN "models/rnnlm.onnx"
#define LOCAL "examples/clusters/local-cpu-percore.json"
#define TESTBED "catalogs/autodeep-testbed.json"

/* Values no numeric flag takes: text, trailing garbage, a sign, overflow, empty. */
static const char *const bad_numbers[] = {
    "abc", "5x", "-1", "1e400", "''", "99999999999999999999", "' 5'", "+5", "0x10"};
/* And what no duration flag takes (the unit parser refuses the numbers above too). */
static const char *const bad_durations[] = {"abc", "5x", "-1s",  "1e400s", "''",
                                            "0s",  "60", "nans", "8d",     "30d"};
/* Lists of algorithms: empty, empty items, unknown or repeated names. */
static const char *const bad_lists[] = {"''",          ",",     "heft,",    ",heft",
                                        "heft,,metis", "magic", "heft,heft"};

typedef struct flag_case {
    const char *cmd;  /* the command up to the flag */
    const char *flag; /* what the message must name */
    const char *const *bad;
    size_t n_bad;
} flag_case;

#define VALUES(a) a, sizeof a / sizeof *a

static void test_flag_values(void **state)
{
    (void)state;
    static const flag_case cases[] = {
        {"place " RNN " --cluster " LOCAL, "--seed", VALUES(bad_numbers)},
        {"place " RNN " --cluster " LOCAL, "--time-limit", VALUES(bad_durations)},
        {"simulate " RNN " --cluster " LOCAL " --plan x.json", "--requests", VALUES(bad_numbers)},
        {"simulate " RNN " --cluster " LOCAL " --plan x.json", "--idle", VALUES(bad_durations)},
        {"compare " RNN " --cluster " LOCAL, "--seed", VALUES(bad_numbers)},
        {"compare " RNN " --cluster " LOCAL, "--time-limit", VALUES(bad_durations)},
        {"compare " RNN " --cluster " LOCAL, "--algos", VALUES(bad_lists)},
        {"deploy " RNN " --catalog " TESTBED " --slo 50ms", "--seed", VALUES(bad_numbers)},
        {"deploy " RNN " --catalog " TESTBED " --slo 50ms", "--budget", VALUES(bad_numbers)},
        {"deploy " RNN " --catalog " TESTBED " --slo 50ms", "--budget", VALUES(bad_durations)},
        {"deploy " RNN " --catalog " TESTBED " --slo 50ms", "--place-time", VALUES(bad_durations)},
        {"deploy " RNN " --catalog " TESTBED " --slo 50ms", "--algos", VALUES(bad_lists)},
        {"deploy " RNN " --catalog " TESTBED, "--slo", VALUES(bad_durations)},
        {"inspect " RNN, "--top", VALUES(bad_numbers)},
        {"inspect " RNN, "--coarsen-target", VALUES(bad_numbers)},
        {"profile " RNN, "--repeat", VALUES(bad_numbers)},
        {"run /nonexistent-split", "--repeat", VALUES(bad_numbers)},
        {"run /nonexistent-split", "--warmup", VALUES(bad_numbers)},
        {"run /nonexistent-split", "--seed", VALUES(bad_numbers)},
        {"run /nonexistent-split", "--int-high", VALUES(bad_numbers)},
    };
    char args[512];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        for (size_t v = 0; v < cases[k].n_bad; v++) {
            /* --budget takes a count or a duration: "60" and "-1" are counts there */
            if (!strcmp(cases[k].flag, "--budget") && cases[k].bad == bad_durations &&
                (!strcmp(cases[k].bad[v], "60")))
                continue;
            snprintf(args, sizeof args, "%s %s %s", cases[k].cmd, cases[k].flag, cases[k].bad[v]);
            tu_expect_refusal(args, cases[k].flag);
        }
    /* only simulate has a throughput mode: elsewhere --requests was taken and ignored */
    tu_expect_refusal("place " RNN " --cluster " LOCAL " --requests 4",
                      "unknown option '--requests'");
    tu_expect_refusal("deploy " RNN " --catalog " TESTBED " --slo 1s --requests 4",
                      "unknown option '--requests'");
    /* shared options a verb has no use for are refused, not taken and ignored */
    tu_expect_refusal("split " RNN " --plan x.json -o d --contention none",
                      "--contention has no effect on placer split");
    tu_expect_refusal("split " RNN " --plan x.json -o d --profile p.json",
                      "--profile has no effect on placer split");
    tu_expect_refusal("split " RNN " --plan x.json -o d --cost-params c.json",
                      "--cost-params has no effect on placer split");
    tu_expect_refusal("profile " RNN " --contention pair",
                      "--contention has no effect on placer profile");
    /* a seed beyond the library's unsigned would be cut silently */
    tu_expect_refusal("place " RNN " --cluster " LOCAL " --seed 4294967296", "--seed");
    /* the --dim binding parser: an overflow is refused, not saturated */
    tu_expect_refusal("inspect models/resnet50.onnx --dim batch=99999999999999999999",
                      "dimension binding 'batch=99999999999999999999'");
    /* the values they do take */
    char *out;
    assert_int_equal(tu_run("place " RNN " --cluster " LOCAL " --algo random --seed 4294967295 "
                            "--time-limit 2s",
                            &out),
                     0);
    free(out);
}

/* ---- profiles and cost parameters for another device model, implausible times ---- */

static void refuse_file(const char *fmt, const char *text, const char *needle)
{
    char path[256], args[512];
    snprintf(path, sizeof path, "%s", tu_tmpfile(text, strlen(text), ".json"));
    snprintf(args, sizeof args, fmt, path);
    tu_expect_refusal(args, path);   /* the file */
    tu_expect_refusal(args, needle); /* and what is wrong in it */
    remove(path);
}

#define PROFILE(model, times)                                                                      \
    "{\"format\": \"placer-profile/1\", \"device_model\": \"" model "\", \"times_s\": " times "}"

static void test_profile_plausibility(void **state)
{
    (void)state;
    const char *place = "place " RNN " --cluster " LOCAL " --profile %s";
    /* a device model the cluster does not have: refused, naming both sides */
    refuse_file(place, PROFILE("Tesla-Z9", "{\"/decoder/MatMul\": \"1 ms\"}"),
                "device model 'Tesla-Z9' matches no device of cluster " LOCAL
                " (its device models: local-epyc-core)");
    refuse_file(place, PROFILE("local-epyc-core", "{\"/decoder/MatMul\": 1e300}"),
                "$.times_s[\"/decoder/MatMul\"]: 1e+300 s is not a plausible op time");
    refuse_file(place, PROFILE("local-epyc-core", "{\"/decoder/MatMul\": \"2 h\"}"),
                "7200 s is not a plausible op time (at most 3600 s)");
    refuse_file(place, PROFILE("local-epyc-core", "{\"/decoder/MatMul\": -1}"), "negative");
    refuse_file(place, PROFILE("local-epyc-core", "{\"/decoder/MatMul\": \"nan s\"}"),
                "not a finite number");
    refuse_file(place, PROFILE("local-epyc-core", "{\"/decoder/MatMul\": 0, \"/decoder/Add\": 0}"),
                "every one of its 2 times is 0 s");
    refuse_file(place, PROFILE("local-epyc-core", "{}"), "$.times_s: times no op");
    /* one 0 among measured times is a tiny op at the profiler's 1 us resolution: accepted */
    char path[256], args[512], *out;
    const char *ok =
        PROFILE("local-epyc-core", "{\"/decoder/MatMul\": \"1 ms\", \"/decoder/Add\": 0}");
    snprintf(path, sizeof path, "%s", tu_tmpfile(ok, strlen(ok), ".json"));
    snprintf(args, sizeof args, place, path);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    remove(path);
}

#define PARAMS(model)                                                                              \
    "{\"format\": \"placer-cost-params/1\", \"device_model\": \"" model "\", "                     \
    "\"eff_compute\": {\"dense\": 0.5}, \"eff_memory\": 0.5}"

static void test_cost_params_device_model(void **state)
{
    (void)state;
    refuse_file("place " RNN " --cluster " LOCAL " --cost-params %s", PARAMS("Tesla-Z9"),
                "--cost-params");
    refuse_file("simulate " RNN " --cluster " LOCAL " --plan x.json --cost-params %s",
                PARAMS("Tesla-Z9"), "device model 'Tesla-Z9' matches no device of cluster");
    refuse_file("deploy " RNN " --catalog " TESTBED " --slo 50ms --cost-params %s",
                PARAMS("Tesla-Z9"), "matches no device of any of the");
    refuse_file("place " RNN " --cluster " LOCAL " --cost-params %s",
                "{\"format\": \"placer-cost-params/1\", \"eff_compute\": {}, \"eff_memory\": 0}",
                "$.eff_memory: an efficiency must be in (0, 1]");
    /* fitted on one of the cluster's models: applied to all, with a warning for the others */
    char path[256], args[512], *out;
    snprintf(path, sizeof path, "%s",
             tu_tmpfile(PARAMS("i9-10900X"), strlen(PARAMS("i9-10900X")), ".json"));
    snprintf(args, sizeof args,
             "place " RNN " --cluster examples/clusters/talos-1cpu-2gpu.json --cost-params %s",
             path);
    assert_int_equal(tu_run(args, &out), 0);
    assert_contains(out, "2 of 3 devices are of another model");
    free(out);
    remove(path);
    /* deploy prices trials with the cost model alone: --profile is refused, not ignored */
    tu_expect_refusal("deploy " RNN " --catalog " TESTBED " --slo 50ms --profile p.json",
                      "--profile is not used by deploy");
}

/* ---- exit status (cli.h): 0 ok, 1 no feasible answer, 2 bad input or failure ---- */

static void expect_status(const char *args, int status)
{
    char *out;
    int rc = tu_run(args, &out);
    if (rc != status) fail_msg("placer %s: exit %d, expected %d\n%s", args, rc, status, out);
    free(out);
}

static void test_exit_status(void **state)
{
    (void)state;
    char dir[256], tiny[256], mid[256], plan[512], oom[512], args[1024];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-test-status"), 0);
    /* local-cpu with 1 MiB per device (resnet50's weights cannot fit anywhere) and 70 MiB
     * (they fit split in two, but not on one device) */
    size_t len;
    pl_err err;
    char *cl = pl_read_file(LOCAL, &len, &err), *at = strstr(cl, "\"8 GiB\"");
    assert_non_null(at);
    memcpy(at, "\"1MiB\" ", 7);
    snprintf(tiny, sizeof tiny, "%s", tu_tmpfile(cl, len, ".json"));
    memcpy(at, "\"70MiB\"", 7);
    snprintf(mid, sizeof mid, "%s", tu_tmpfile(cl, len, ".json"));
    free(cl);
    snprintf(plan, sizeof plan, "%s/plan.json", dir);
    snprintf(oom, sizeof oom, "%s/oom.json", dir);

    /* inspect: 0, 2 */
    expect_status("inspect " RNN, 0);
    expect_status("inspect " RNN " --top 0", 2);
    /* place: 0; 1 when no placement fits; 2 */
    snprintf(args, sizeof args, "place models/resnet50.onnx --cluster %s --algo random -o %s", mid,
             plan);
    expect_status(args, 0);
    snprintf(args, sizeof args, "place models/resnet50.onnx --cluster %s", tiny);
    expect_status(args, 1);
    expect_status("place " RNN " --cluster " LOCAL " --algo magic", 2);
    /* simulate: 0; 1 when the plan does not fit (every op moved to cpu0); 2 */
    snprintf(args, sizeof args, "simulate models/resnet50.onnx --cluster %s --plan %s", mid, plan);
    expect_status(args, 0);
    char *p = pl_read_file(plan, &len, &err);
    assert_non_null(p);
    for (char *c = p; (c = strstr(c, "\"cpu1\"")); c++)
        c[4] = '0';
    FILE *f = fopen(oom, "w");
    assert_non_null(f);
    fwrite(p, 1, len, f);
    fclose(f);
    free(p);
    snprintf(args, sizeof args, "simulate models/resnet50.onnx --cluster %s --plan %s", mid, oom);
    expect_status(args, 1);
    expect_status("simulate " RNN " --cluster " LOCAL " --plan /nonexistent.json", 2);
    /* compare: 0; 1 when no placement fits; 2 */
    expect_status("compare " RNN " --cluster " LOCAL " --algos heft,single", 0);
    snprintf(args, sizeof args, "compare models/resnet50.onnx --cluster %s --algos heft", tiny);
    expect_status(args, 1);
    expect_status("compare " RNN " --cluster " LOCAL " --algos ''", 2);
    /* deploy: 0 when a configuration meets the SLO; 1 when none does; 2 */
    expect_status("deploy " RNN " --catalog " TESTBED " --slo 1s --budget 2 --algos heft", 0);
    expect_status("deploy " RNN " --catalog " TESTBED " --slo 1ns --budget 2 --algos heft", 1);
    expect_status("deploy " RNN " --catalog " TESTBED " --slo 1s --seed -1", 2);
    /* split: 0, 2 */
    snprintf(args, sizeof args, "place " RNN " --cluster " LOCAL " -o %s", plan);
    expect_status(args, 0);
    snprintf(args, sizeof args, "split " RNN " --cluster " LOCAL " --plan %s -o %s/split", plan,
             dir);
    expect_status(args, 0);
    expect_status("split " RNN " --cluster " LOCAL " --plan /nonexistent.json -o /tmp/x", 2);
    /* calibrate: 0, 2 (a hand-written profile of one op) */
    const char *prof = PROFILE("local-epyc-core", "{\"/decoder/MatMul\": \"1 ms\"}");
    snprintf(args, sizeof args, "calibrate %s --model " RNN,
             tu_tmpfile(prof, strlen(prof), ".json"));
    expect_status(args, 0);
    expect_status("calibrate /nonexistent.json --model " RNN, 2);
    /* profile and run: 2 here; their 0 needs onnxruntime (test_profile.c, test_split_run.c),
     * and a failure of the worker is 2 like any other */
    expect_status("profile " RNN " --repeat 0", 2);
    expect_status("run /nonexistent-split", 2);
    /* and the command itself */
    expect_status("", 2);
    expect_status("--help", 0);
    tu_rmtree(dir);
    remove(tiny), remove(mid);
}

/* Issue 28: every verb parses one option table the same way (cli/cli.h, "Options"): `--` is
 * refused with a message, an abbreviated option is unknown, `--opt=value` is read as
 * `--opt value`, and a flag's missing value is refused by its kind's parser. Each row: the verb
 * with its positional argument, an option of its own spelled `--opt=value` with a
 * bad value, and what that refusal says. */
static const struct {
    const char *verb, *bad_value, *says;
} conventions[] = {
    {"place models/resnet50.onnx", "--min-gain=2", "--min-gain: '2' is not a fraction in [0, 1)"},
    {"simulate models/resnet50.onnx", "--requests=0",
     "--requests: '0' is not a whole number from 1"},
    {"compare models/resnet50.onnx", "--episodes=0",
     "--episodes: '0' is not a whole number from 1"},
    {"split models/resnet50.onnx", "--cut=middle", "--cut wants fewest or schedule"},
    {"deploy models/resnet50.onnx", "--strategy=best", "--strategy wants bo, lcf"},
    {"optimize models/resnet50.onnx", "--alpha=0.5", "--alpha: '0.5' is not a number in [1, 100]"},
    {"run models/resnet50.onnx", "--warmup=-1", "--warmup: '-1' is not a whole number from 0"},
    {"profile models/resnet50.onnx", "--repeat=0", "--repeat: '0' is not a whole number from 1"},
    {"calibrate tests/data/p.json", "--device=", "--device wants a device name"},
    {"serverless models/resnet50.onnx", "--latency-slack=-1",
     "--latency-slack: '-1' is not a number in [0, 100]"},
    {"multi models/resnet50.onnx models/gcn_cora.onnx", "--affinity=-2",
     "--affinity: '-2': give a number >= 0, or -1"},
    {"train models/resnet50.onnx", "--prior=best", "--prior: 'best': give uniform or gnn"},
    {"learn-prior models/resnet50.onnx", "--lr=1", "--lr: '1' is not a number in (0, 1)"},
    {"inspect models/resnet50.onnx", "--top=0", "--top: '0' is not a whole number from 1"},
    {"profile --collectives", "--max-bytes=1KiB", "--max-bytes: '1KiB' is outside 2 KiB"},
    {"report x.json", "--title=", "--title wants a text"},
};

static void test_option_conventions(void **state)
{
    (void)state;
    char args[512];
    for (size_t k = 0; k < sizeof conventions / sizeof *conventions; k++) {
        const char *verb = conventions[k].verb;
        snprintf(args, sizeof args, "%s -- -x.onnx", verb);
        tu_expect_refusal(args, "'--' to end the options is refused");
        snprintf(args, sizeof args, "%s --hel", verb);
        tu_expect_refusal(args, "unknown option '--hel'");
        snprintf(args, sizeof args, "%s %s", verb, conventions[k].bad_value);
        tu_expect_refusal(args, conventions[k].says);
    }
    tu_expect_refusal("place models/resnet50.onnx -o", "-o wants a file");
    tu_expect_refusal("optimize models/gcn_cora.onnx -o=", "-o wants a file name"); /* not "=" */
    /* an option that takes a value is given once (a second replaced the first in silence);
     * the lists (--dim, --input, --profile, --model, --batch) add up */
    tu_expect_refusal("place models/gcn_cora.onnx --cluster examples/clusters/local-cpu.json "
                      "--cluster examples/clusters/local-cpu-percore.json",
                      "--cluster given twice: give it once");
    tu_expect_refusal("place models/gcn_cora.onnx --cluster=examples/clusters/local-cpu.json "
                      "--seed 1 --seed=2",
                      "--seed given twice");
    tu_expect_refusal("inspect models/gcn_cora.onnx --dim a=1 --dim b=2 --top 3 --top 4",
                      "--top given twice");
    /* which options are lists is each verb's: train's --batch is one value (it took the
     * last of two when the lists were named across verbs), multi's is one per model */
    tu_expect_refusal("train models/gcn_cora.onnx --cluster examples/clusters/talos-1cpu-2gpu.json "
                      "--batch 4 --batch 8",
                      "--batch given twice");
    tu_expect_refusal(
        "multi models/gcn_cora.onnx models/rnnlm.onnx --cluster "
        "examples/clusters/talos-1cpu-2gpu.json --train --batch 4 --batch 8 --batch 2",
        "--batch given 3 times for 2 models");
    tu_expect_refusal("run models/gcn_cora.onnx", "is a file, not the folder `placer split -o");
    tu_expect_refusal("place models/gcn_cora.onnx --cluster examples/clusters/local-cpu.json "
                      "--time-limit -1",
                      "--time-limit: '-1' is not a duration above 0");
}

/* Issue 28: every verb's --help goes through the shared help: its own part, then the manual's
 * tail (EXIT STATUS, ENVIRONMENT, FILES), and exit status 0; no verb exits on its own (multi
 * and train called exit(), which skipped the tail). */
static void test_help_tail(void **state)
{
    (void)state;
    static const char *verbs[] = {
        "inspect", "place",    "simulate",   "compare",     "deploy",
        "split",   "optimize", "run",        "profile",     "calibrate",
        "train",   "multi",    "serverless", "learn-prior", "profile --collectives",
        "report"};
    char args[128], *out;
    for (size_t k = 0; k < sizeof verbs / sizeof *verbs; k++) {
        snprintf(args, sizeof args, "%s --help", verbs[k]);
        assert_int_equal(tu_run(args, &out), 0);
        if (!strstr(out, "usage: placer") || !strstr(out, "\nEXIT STATUS\n") ||
            !strstr(out, "\nENVIRONMENT\n") || !strstr(out, "\nFILES"))
            fail_msg("placer %s: no shared help tail in:\n%s", args, out);
        free(out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_simulate_idle_and_fit_cold),
        cmocka_unit_test(test_option_conventions),
        cmocka_unit_test(test_help_tail),
        cmocka_unit_test(test_missing_empty_and_non_onnx),
        cmocka_unit_test(test_truncated_model),
        cmocka_unit_test(test_malformed_taskgraph),
        cmocka_unit_test(test_inspect_table_and_json),
        cmocka_unit_test(test_input_shapes),
        cmocka_unit_test(test_taskgraph_refusals),
        cmocka_unit_test(test_simulate_per_edge),
        cmocka_unit_test(test_flag_values),
        cmocka_unit_test(test_profile_plausibility),
        cmocka_unit_test(test_cost_params_device_model),
        cmocka_unit_test(test_exit_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
