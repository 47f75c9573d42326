/* test_cli_multi.c: `placer multi` as a user runs it (docs/multi.md): Talos's motivating
 * example in the JSON, the op -> device map per model, a model given twice as two tenants, the
 * document written atomically with -o (and exit 2, the old file kept, when it cannot be), bad
 * input refused by name, and every way `--run` can fail: exit 2 with its message, nothing left
 * behind. */
#include "testutil.h"

#include "placer/common.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIG1                                                                                       \
    "multi examples/multi/fig1-a.json examples/multi/fig1-b.json --cluster "                       \
    "examples/multi/fig1-cluster.json"

/* TOCT, per-model completion and idle time per device as the paper's Fig. 1 gives them; each
 * model's placement names every op once; TOCT is the sum of the completions. */
static void test_fig1_json(void **state)
{
    (void)state;
    json_t *doc = tu_run_json(FIG1 " --algos talos,aswm,tsam --json");
    assert_string_equal(json_string_value(json_object_get(doc, "format")), "placer-multi/1");
    const char *names[] = {"talos", "aswm", "tsam"};
    double toct[] = {9e-3, 12.5e-3, 11.5e-3}, idle_gpu[] = {0.5e-3, 0.5e-3, 0};
    for (int i = 0; i < 3; i++) {
        json_t *a = tu_find(doc, "algorithms", "algo", names[i]);
        assert_close(tu_num(a, "toct_s"), toct[i], 1e-9);
        assert_true(fabs(tu_num(json_object_get(a, "idle_s"), "gpu0") - idle_gpu[i]) < 1e-12);
        double sum = 0;
        size_t j;
        json_t *m;
        json_array_foreach(json_object_get(a, "models"), j, m)
        {
            sum += tu_num(m, "completion_s");
            json_t *pl = json_object_get(m, "placement");
            assert_int_equal(json_object_size(pl), 3);
            const char *key;
            json_t *dev;
            json_object_foreach(pl, key, dev)
            {
                const char *d = json_string_value(dev);
                assert_true(!strcmp(d, "cpu0") || !strcmp(d, "gpu0"));
            }
        }
        assert_close(sum, toct[i], 1e-9);
    }
    json_t *m0 =
        json_array_get(json_object_get(tu_find(doc, "algorithms", "algo", "talos"), "models"), 0);
    assert_string_equal(json_string_value(json_object_get(m0, "name")), "fig1-a");
    assert_string_equal(json_string_value(json_object_get(json_object_get(m0, "placement"), "op3")),
                        "gpu0");
    json_decref(doc);
}

/* The table has every algorithm, NOD and the affinity line. */
static void test_fig1_table(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(tu_run(FIG1 " 2>&1", &out), 0);
    assert_contains(out, "NOD (packed)");
    assert_contains(out, "affinity fig1-a + fig1-b: 0.68 (one flow)");
    const char *rows[] = {"talos        9.000", "aswm        12.500", "tsam        11.500", "heft ",
                          "moirai "};
    for (int i = 0; i < 5; i++)
        assert_contains(out, rows[i]);
    free(out);
}

/* The same model twice is two tenants with names of their own. */
static void test_model_twice(void **state)
{
    (void)state;
    json_t *doc = tu_run_json("multi examples/multi/fig1-a.json examples/multi/fig1-a.json "
                              "--cluster examples/multi/fig1-cluster.json --algo talos --json");
    json_t *models = json_object_get(doc, "models");
    assert_int_equal(json_array_size(models), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(models, 1), "name")),
                        "fig1-a#2");
    json_t *a = tu_find(doc, "algorithms", "algo", "talos");
    assert_true(tu_num(json_array_get(json_object_get(a, "models"), 0), "completion_s") > 0);
    assert_true(tu_num(json_array_get(json_object_get(a, "models"), 1), "completion_s") > 0);
    json_decref(doc);
}

/* -o writes the document (the same as --json) and leaves no temporary file beside it. */
static void test_output_file(void **state)
{
    (void)state;
    char dir[64], cmd[512], path[128];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-multi"), 0);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    snprintf(cmd, sizeof cmd, FIG1 " --algo talos -o %s > /dev/null", path);
    char *out;
    assert_int_equal(tu_run(cmd, &out), 0);
    free(out);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) fail_msg("%s: %s", path, je.text);
    assert_close(tu_num(tu_find(doc, "algorithms", "algo", "talos"), "toct_s"), 9e-3, 1e-9);
    json_decref(doc);
    DIR *dp = opendir(dir);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(dp)))
        if (de->d_name[0] != '.') files++, assert_string_equal(de->d_name, "plan.json");
    closedir(dp);
    assert_int_equal(files, 1);
    tu_rmtree(dir);
}

/* The completion of model m (0-based) in the document of one algorithm. */
static double completion(json_t *doc, int m)
{
    json_t *a = json_array_get(json_object_get(doc, "algorithms"), 0);
    return tu_num(json_array_get(json_object_get(a, "models"), m), "completion_s");
}

/* The time op `name` takes in the answer's schedule (its end less its start). */
static double op_time(json_t *doc, const char *name)
{
    json_t *ops = json_object_get(json_object_get(doc, "schedule"), "ops"), *o;
    size_t i;
    json_array_foreach(ops, i, o)
    {
        if (strcmp(json_string_value(json_object_get(o, "op")), name)) continue;
        return tu_num(o, "end_s") - tu_num(o, "start_s");
    }
    fail_msg("no op '%s' in the schedule", name);
    return 0;
}

/* This machine's cores read a request's inputs in place, as the run feeds them: gcn_cora given
 * twice to ASWM is one copy per core, the same plan on either, so the two are predicted alike
 * and nothing is sent. With cpu0 as the cluster's io_device, the copy on cpu1 waited for its
 * 15.5 and 29.3 MB inputs over the link (9.92 ms against 6.28 alone; the run: 7.0). */
static void test_inputs_read_in_place(void **state)
{
    (void)state;
    json_t *doc = tu_run_json("multi models/gcn_cora.onnx models/gcn_cora.onnx --cluster "
                              "examples/clusters/local-cpu-percore.json --algo aswm --json "
                              "2>/dev/null");
    json_t *row = json_array_get(json_object_get(doc, "algorithms"), 0);
    json_t *a = json_array_get(json_object_get(row, "models"), 0);
    json_t *b = json_array_get(json_object_get(row, "models"), 1);
    assert_true(tu_num(a, "completion_s") > 0);
    assert_close(tu_num(b, "completion_s"), tu_num(a, "completion_s"), 1e-12);
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(doc, "schedule"), "transfers")), 0);
    json_decref(doc);
}

/* A profile measured on one model times that model's ops only (rnnlm has an op of the same
 * name, untouched: its time, not its completion, which the stall of the ops beside it may
 * move); one measured on a model not given is refused. */
static void test_profile_applies_to_its_model(void **state)
{
    (void)state;
    const char *base = "multi models/gcn_cora.onnx models/rnnlm.onnx --cluster "
                       "examples/clusters/local-cpu-percore.json --algo aswm --json";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s 2>/dev/null", base);
    json_t *doc = tu_run_json(cmd);
    double gcn = completion(doc, 0), gather = op_time(doc, "rnnlm//embed/Gather");
    json_decref(doc);
    char sha[65], text[512];
    pl_err err = {""};
    assert_int_equal(pl_sha256_file("models/gcn_cora.onnx", sha, &err), 0);
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"model_sha256\": \"%s\", \"times_s\": {\"/MatMul\": \"1 s\", "
             "\"/embed/Gather\": \"1 s\"}}",
             sha);
    snprintf(cmd, sizeof cmd, "%s --profile %s 2>/dev/null", base,
             tu_tmpfile(text, strlen(text), ".json"));
    doc = tu_run_json(cmd);
    assert_true(completion(doc, 0) > 1 && completion(doc, 0) < gcn + 1);
    assert_close(op_time(doc, "rnnlm//embed/Gather"), gather, 1e-12);
    assert_true(gather < 0.01);
    json_decref(doc);
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"model_sha256\": \"%064d\", \"times_s\": {\"/MatMul\": \"1 ms\"}}",
             7);
    snprintf(cmd, sizeof cmd, "%s --profile %s", base, tu_tmpfile(text, strlen(text), ".json"));
    tu_expect_refusal(cmd, "that is none of the models given");
}

/* A profile measured on a model (its model_sha256) wins over one naming no model, in either
 * order on the command line; one naming no model applies to the models whose ops it times, and
 * one that times none of any model's ops is refused. Before, the first profile matching the
 * device took each model's place, so a profile of gcn_cora without a SHA-256 given first hid
 * rnnlm's own. */
static void test_profile_precedence(void **state)
{
    (void)state;
    const char *base = "multi models/gcn_cora.onnx models/rnnlm.onnx --cluster "
                       "examples/clusters/local-cpu-percore.json --algo aswm --json";
    char sha[65], text[512], own[256], generic[256], cmd[1024];
    pl_err err = {""};
    assert_int_equal(pl_sha256_file("models/rnnlm.onnx", sha, &err), 0);
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"model_sha256\": \"%s\", \"times_s\": {\"/embed/Gather\": \"1 s\"}}",
             sha);
    snprintf(own, sizeof own, "%s", tu_tmpfile(text, strlen(text), ".json"));
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"times_s\": {\"/MatMul\": \"2 s\", \"/embed/Gather\": \"3 s\"}}");
    snprintf(generic, sizeof generic, "%s", tu_tmpfile(text, strlen(text), ".json"));
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s --profile %s --profile %s 2>/dev/null", base,
                 k ? own : generic, k ? generic : own);
        json_t *doc = tu_run_json(cmd);
        assert_close(op_time(doc, "rnnlm//embed/Gather"), 1, 0.01); /* stall, stage charge */
        assert_close(op_time(doc, "gcn_cora//MatMul"), 2, 0.01);
        json_decref(doc);
    }
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"times_s\": {\"zzz\": \"1 ms\"}}");
    snprintf(cmd, sizeof cmd, "%s --profile %s", base, tu_tmpfile(text, strlen(text), ".json"));
    tu_expect_refusal(cmd, "times none of the ops of the models given");
}

/* The text of a small file (static buffer). */
static const char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Runs args (no file of it may grow past fsize bytes when fsize > 0: a full disk), which must
 * exit 2 printing `what` and `needle`, and no sanitizer report; its output (free it). */
static char *expect_fails(const char *args, long fsize, const char *what, const char *needle)
{
    char *out;
    int rc = fsize > 0 ? tu_run_fsize(args, fsize, &out) : tu_run(args, &out);
    if (rc != 2) fail_msg("exit %d, not 2: %s\n%s", rc, args, out);
    assert_contains(out, what);
    assert_contains(out, needle);
    assert_null(strstr(out, "Sanitizer"));
    return out;
}

/* -o that cannot be written (issue 27, item 2): exit 2 naming the file, and a file that was
 * there is left as it was. The status used to be 0: write_doc's 2 was tested as `< 0`. */
static void expect_not_written(const char *args, long fsize, const char *path, const char *needle)
{
    free(expect_fails(args, fsize, "placer multi: -o ", needle));
    if (access(path, F_OK) == 0) assert_string_equal(slurp(path), "old\n");
}

static void test_output_unwritable(void **state)
{
    (void)state;
    char dir[64], path[128], args[512];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-multi-out"), 0);
    snprintf(path, sizeof path, "%s/missing/plan.json", dir);
    snprintf(args, sizeof args, FIG1 " --algo talos -o %s", path);
    expect_not_written(args, 0, path, "No such file or directory");
    /* a full disk: no file of the command may grow past 64 bytes (the document is ~3 KB) */
    snprintf(path, sizeof path, "%s/plan.json", dir);
    FILE *f = fopen(path, "w");
    fputs("old\n", f);
    fclose(f);
    snprintf(args, sizeof args, FIG1 " --algo talos -o %s", path);
    expect_not_written(args, 64, path, "File too large");
    assert_string_equal(slurp(path), "old\n");
    if (geteuid() != 0) { /* root writes into a read-only folder all the same */
        chmod(dir, 0555);
        expect_not_written(args, 0, path, "Permission denied");
        chmod(dir, 0755);
    } else
        printf("  (read-only folder not tried: root may write into it)\n");
    unlink(path);
    tu_expect_empty_dir(dir); /* no temporary left beside it */
    tu_rmtree(dir);
}

/* `multi --run` that fails (issue 27, item 1): exit 2 with the message saying the plan was not
 * measured and why (it ended in SIGSEGV: run_real's status 2 was tested as `< 0` and the
 * missing measurement read), and no folder left in TMPDIR. */
#define RUN_LOCAL                                                                                  \
    "multi models/rnnlm.onnx models/gcn_cora.onnx --cluster "                                      \
    "examples/clusters/local-cpu-percore.json --algos talos --run"

static void expect_run_fails(const char *tmp, const char *args, const char *needle)
{
    char *out =
        expect_fails(args, 0, "placer multi: --run: talos's plan was not measured: ", needle);
    assert_null(strstr(out, "restarted")); /* it was not: the verb stops here */
    free(out);
    tu_expect_empty_dir(tmp);
}

static void test_run_failures(void **state)
{
    (void)state;
    char tmp[64], dir[64], js[128], args[1024];
    assert_int_equal(tu_tmpdir_begin(tmp, sizeof tmp, "placer-multi-tmp"), 0);
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-multi-run"), 0);
    /* the documented cluster has GPUs: its plan cannot run on this machine's CPU */
    expect_run_fails(tmp,
                     "multi models/rnnlm.onnx models/gcn_cora.onnx --cluster "
                     "examples/clusters/talos-1cpu-2gpu.json --algos talos --run",
                     "is on 'gpu0', a gpu: only the cluster's CPU devices run on this machine");
    /* no node to start the worker with */
    setenv("PLACER_NODE", "/nonexistent/node", 1);
    expect_run_fails(tmp, RUN_LOCAL, "cannot execute /nonexistent/node");
    unsetenv("PLACER_NODE");
    /* a cache folder that cannot be made (under a file), or written (read-only, not as root) */
    char file[128];
    snprintf(file, sizeof file, "%s/file", dir);
    fclose(fopen(file, "w"));
    snprintf(args, sizeof args, RUN_LOCAL " --cache %s/cache", file);
    expect_run_fails(tmp, args, "cannot create the directory: Not a directory");
    unlink(file);
    if (geteuid() != 0) {
        chmod(dir, 0555);
        snprintf(args, sizeof args, RUN_LOCAL " --cache %s", dir);
        expect_run_fails(tmp, args, "Permission denied");
        chmod(dir, 0755);
    }
    /* a worker killed in the middle of the run, and one stopped (SIGSTOP) past the deadline */
    tu_failing_worker(dir, "SIGKILL", js, sizeof js);
    setenv("PLACER_ORT_WORKER", js, 1);
    expect_run_fails(tmp, RUN_LOCAL, "onnxruntime worker died (signal 9) while running 'run'");
    tu_expect_worker_gone(dir);
    /* 3 s, not 1: node's start is a step too, and took over 1 s at a load of 13-19 */
    tu_failing_worker(dir, "SIGSTOP", js, sizeof js);
    expect_run_fails(tmp, RUN_LOCAL " --deadline 3s",
                     "stalled: nothing from it for 3 s in 'run' (before its first step), the "
                     "deadline of one step (--deadline, $PLACER_ORT_DEADLINE); killed it; the "
                     "answer to 'run' is lost");
    tu_expect_worker_gone(dir);
    unsetenv("PLACER_ORT_WORKER");
    tu_rmtree(dir);
    assert_int_equal(tu_tmpdir_end(tmp), 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    tu_expect_refusal("multi --cluster examples/multi/fig1-cluster.json", "which models?");
    tu_expect_refusal("multi examples/multi/fig1-a.json", "which cluster?");
    tu_expect_refusal(FIG1 " --algo nosuch", "unknown algorithm 'nosuch'");
    tu_expect_refusal(FIG1 " --algos talos,talos", "'talos' twice");
    tu_expect_refusal(FIG1 " --sv 2,1", "--sv: '2,1'");
    tu_expect_refusal(FIG1 " --affinity -3", "--affinity: '-3'");
    tu_expect_refusal(FIG1 " --tv fast", "--tv: 'fast'");
    tu_expect_refusal(FIG1 " --positions 0", "--positions");
    tu_expect_refusal(FIG1 " --refine fast", "--refine: \"fast\"");
    tu_expect_refusal(FIG1 " --refine -1s", "--refine: \"-1s\" is negative");
    tu_expect_refusal(FIG1 " --profile examples/multi/nosuch.json", "nosuch.json");
    tu_expect_refusal(FIG1 " --alone", "--alone: give --run too");
    tu_expect_refusal(FIG1 " --repeat 3", "--repeat: give --run too");
    tu_expect_refusal(FIG1 " --deadline 5s", "--deadline: give --run too");
    tu_expect_refusal(FIG1 " --algo talos --algo aswm", "--algo given twice");
    tu_expect_refusal(FIG1 " --algos ,talos", "--algos: ',talos' has an empty name");
    tu_expect_refusal(FIG1 " --cluster examples/multi/fig1-cluster.json", "--cluster given twice");
    tu_expect_refusal(FIG1 " -o a.json -o b.json", "-o given twice");
    tu_expect_refusal(FIG1 " -o r.html --report r.html", "-o r.html and --report r.html name one");
    tu_expect_refusal(FIG1 " -o ./r.html --report r.html", "name one file"); /* neither written */
    tu_expect_refusal(FIG1 " --profile examples", "examples: cannot read: a folder, not a file");
    tu_expect_refusal(FIG1 " --time-limit 0", "--time-limit: '0' is not a duration above 0");
    tu_expect_refusal("multi examples/taskgraphs/diamond.json examples/multi/fig1-a.json --cluster "
                      "examples/multi/fig1-cluster.json --run",
                      "--run: examples/taskgraphs/diamond.json is a task graph, not an ONNX model");
    tu_expect_refusal("multi examples/multi/nosuch.json --cluster examples/multi/fig1-cluster.json",
                      "nosuch.json");
    tu_expect_refusal("multi examples/multi/fig1-a.json --cluster examples/multi/fig1-a.json",
                      "fig1-a.json");
}

/* --run --alone: gcn_cora twice, each whole on its own core (ASWM), measured together and
 * each by itself with the same placement (and a profile of gcn_cora applied to each share). The
 * simulator's alone prediction is never later than its prediction together (the other core only
 * adds shared memory and stalls), and the co-run error is (predicted / measured together) /
 * (predicted / measured alone) - 1 of the figures printed beside it. Each share alone waits
 * between its requests what the round left it: the round's end less its completion, both as
 * measured together (docs/multi.md, "Fidelity of --run"). Measured times are only checked to
 * be positive: a test does not time. */
static void test_run_alone(void **state)
{
    (void)state;
    tu_require_ort();
    json_t *doc = tu_run_json("multi models/gcn_cora.onnx models/gcn_cora.onnx --cluster "
                              "examples/clusters/local-cpu-percore.json --algo aswm --run "
                              "--repeat 2 --alone --json 2>/dev/null");
    json_t *ms = json_object_get(doc, "measured"), *alone = json_object_get(ms, "alone");
    json_t *row = json_array_get(json_object_get(doc, "algorithms"), 0);
    const char *names[] = {"gcn_cora", "gcn_cora#2"};
    for (int m = 0; m < 2; m++) {
        json_t *a = json_object_get(alone, names[m]);
        double ap = tu_num(a, "predicted_s"), aq = tu_num(a, "measured_s");
        double p = tu_num(json_array_get(json_object_get(row, "models"), m), "completion_s");
        double q = tu_num(json_object_get(ms, "completion_s"), names[m]);
        printf("  %s: together %.3f / %.3f ms, alone %.3f / %.3f ms\n", names[m], p * 1e3, q * 1e3,
               ap * 1e3, aq * 1e3);
        assert_true(ap > 0 && aq > 0 && q > 0);
        assert_true(ap <= p * (1 + 1e-12));
        assert_close(tu_num(a, "wait_s"), fmax(0, tu_num(ms, "makespan_s") - q), 1e-6);
        assert_close(tu_num(json_object_get(ms, "corun_error"), names[m]), (p / q) / (ap / aq) - 1,
                     1e-6); /* the JSON's 10 digits */
        /* stage by stage: the model's last stage ends when the simulator says it completes
         * (no I/O device to return to), and its measured completion, a median of each round's
         * last end, is no earlier than any of its stages' median end */
        json_t *st;
        size_t i;
        double pend = 0, mend = 0;
        int n = 0;
        json_array_foreach(json_object_get(ms, "stage_times"), i, st)
        {
            double ps = tu_num(st, "predicted_start_s"), pe = tu_num(st, "predicted_end_s");
            double qs = tu_num(st, "measured_start_s"), qe = tu_num(st, "measured_end_s");
            assert_true(ps >= 0 && pe >= ps && qs >= 0 && qe >= qs);
            if (strcmp(json_string_value(json_object_get(st, "model")), names[m])) continue;
            n += (int)json_integer_value(json_object_get(st, "ops"));
            pend = fmax(pend, pe), mend = fmax(mend, qe);
        }
        assert_int_equal(n, 7); /* gcn_cora's ops, each in one stage */
        assert_close(pend, p, 1e-9);
        assert_true(mend <= q * (1 + 1e-9));
    }
    assert_int_equal(json_array_size(json_object_get(ms, "stage_times")),
                     (size_t)json_integer_value(json_object_get(ms, "stages")));
    json_decref(doc);
    /* a profile of gcn_cora (its /MatMul at 50 ms) prices each share by itself too */
    char sha[65], text[512], cmd[1024];
    pl_err err = {""};
    assert_int_equal(pl_sha256_file("models/gcn_cora.onnx", sha, &err), 0);
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"model_sha256\": \"%s\", \"times_s\": {\"/MatMul\": \"50 ms\"}}",
             sha);
    snprintf(cmd, sizeof cmd,
             "multi models/gcn_cora.onnx models/gcn_cora.onnx --cluster "
             "examples/clusters/local-cpu-percore.json --algo aswm --run --repeat 1 --alone "
             "--profile %s --json 2>/dev/null",
             tu_tmpfile(text, strlen(text), ".json"));
    doc = tu_run_json(cmd);
    alone = json_object_get(json_object_get(doc, "measured"), "alone");
    for (int m = 0; m < 2; m++)
        assert_true(tu_num(json_object_get(alone, names[m]), "predicted_s") > 0.05);
    json_decref(doc);
}

/* A model with an op that fits no device is "no feasible answer" (cli.h: status 1, as
 * compare), said once, before any algorithm runs; it was status 2 with every algorithm's
 * failure, a bad-input status for a well-formed question. */
static void test_nothing_fits(void **state)
{
    (void)state;
    char *out = NULL;
    int rc = tu_run("multi models/gcn_cora.onnx --train --batch 16777216 --cluster "
                    "examples/clusters/talos-1cpu-2gpu.json 2>&1",
                    &out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "placer multi: gcn_cora: no placement fits: op "));
    assert_non_null(strstr(out, "the largest device, cpu0, has"));
    assert_null(strstr(out, "talos:")); /* no algorithm ran */
    free(out);
}

/* The answer is the row of least TOCT (the first on a tie), named with what found it. On
 * resnet50 + inception_v3 with the paper's Talos alone (--refine 0), ASWM beats Talos's flow:
 * the answer is ASWM's row, and no row is below it. */
static void test_answer_is_the_best_row(void **state)
{
    (void)state;
    json_t *doc = tu_run_json("multi models/resnet50.onnx models/inception_v3.onnx --cluster "
                              "examples/clusters/talos-1cpu-2gpu.json --algos talos,aswm,tsam,heft "
                              "--refine 0 --json");
    json_t *ans = json_object_get(doc, "answer");
    assert_non_null(ans);
    assert_string_equal(json_string_value(json_object_get(ans, "algo")), "aswm");
    assert_string_equal(json_string_value(json_object_get(ans, "found_by")), "aswm");
    json_t *algos = json_object_get(doc, "algorithms");
    json_t *row = json_array_get(algos, (size_t)json_integer_value(json_object_get(ans, "index")));
    assert_string_equal(json_string_value(json_object_get(row, "algo")), "aswm");
    assert_close(tu_num(ans, "toct_s"), tu_num(row, "toct_s"), 0);
    size_t i;
    json_t *a;
    json_array_foreach(algos, i, a) assert_true(tu_num(ans, "toct_s") <= tu_num(a, "toct_s"));
    json_t *talos = tu_find(doc, "algorithms", "algo", "talos");
    assert_string_equal(json_string_value(json_object_get(talos, "found_by")), "flow");
    assert_true(tu_num(talos, "toct_s") > tu_num(ans, "toct_s"));
    assert_null(json_object_get(talos, "refine")); /* none ran */
    json_decref(doc);
}

/* Talos's cluster with each GPU cut to 100 MB: the refinement's moves keep each device's
 * static memory in bounds, not the simulated peak the answer is judged by, so on AlexNet +
 * GoogLeNet its plans exceeded a GPU's memory where the flow's fitted (the answer then fell
 * to another row, and --algos talos alone exited 1). A refined Talos now keeps the flow's
 * plan unless its own fits too, so with refinement the row fits wherever the flow's does. */
static void test_refine_keeps_memory(void **state)
{
    (void)state;
    json_error_t je;
    json_t *c = json_load_file("examples/clusters/talos-1cpu-2gpu.json", 0, &je);
    assert_non_null(c);
    json_t *gpu = json_array_get(json_object_get(c, "devices"), 1);
    assert_string_equal(json_string_value(json_object_get(gpu, "model")), "RTX-2080-Ti");
    json_object_set_new(gpu, "memory_bytes", json_string("100 MB"));
    char *text = json_dumps(c, 0);
    json_decref(c);
    const char *path = tu_tmpfile(text, strlen(text), ".json");
    free(text);
    char cmd[512];
    double flow = 0;
    for (int refine = 0; refine < 2; refine++) {
        snprintf(cmd, sizeof cmd,
                 "multi models/talos/alexnet.onnx models/talos/googlenet.onnx --cluster %s "
                 "--algos talos --refine %s --json 2>/dev/null",
                 path, refine ? "1s" : "0");
        json_t *doc = tu_run_json(cmd);
        json_t *row = json_array_get(json_object_get(doc, "algorithms"), 0);
        assert_true(json_is_true(json_object_get(row, "fits_memory")));
        if (!refine)
            flow = tu_num(row, "toct_s");
        else
            assert_true(tu_num(row, "toct_s") <= flow);
        json_decref(doc);
    }
}

/* On a host of one device every ready op can start when the device is free. TSAM found no
 * event after a Constant (no time) ended, so the ops it made ready were never looked at, and
 * it reported running out of memory with 27 MiB of 128 GiB used. Now it places every op: on
 * one device, one model's ops run back to back, as ASWM and HEFT run them. */
static void test_tsam_one_device(void **state)
{
    (void)state;
    const char *c = "{\"format\": \"placer-cluster/1\", \"name\": \"one-cpu\", \"devices\": "
                    "[{\"name\": \"cpu0\", \"kind\": \"cpu\", \"model\": \"i9-10900X\"}]}";
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "multi models/rnnlm.onnx --cluster %s --algos tsam,aswm,heft --json 2>/dev/null",
             tu_tmpfile(c, strlen(c), ".json"));
    json_t *doc = tu_run_json(cmd);
    double aswm = tu_num(tu_find(doc, "algorithms", "algo", "aswm"), "toct_s");
    json_t *tsam = tu_find(doc, "algorithms", "algo", "tsam");
    assert_true(json_is_true(json_object_get(tsam, "ok")));
    assert_true(aswm > 0);
    assert_close(tu_num(tsam, "toct_s"), aswm, 1e-12);
    assert_close(tu_num(tu_find(doc, "algorithms", "algo", "heft"), "toct_s"), aswm, 1e-12);
    json_decref(doc);
}

/* Each tenant's name is its file's stem, with the first "#K" that no model before it has: a
 * file named gcn_cora#2.onnx after gcn_cora given twice is gcn_cora#2#2 (it was refused: two
 * tenants named gcn_cora#2). */
static void test_tenant_names(void **state)
{
    (void)state;
    char dir[64], cmd[512];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-names"), 0);
    snprintf(cmd, sizeof cmd, "cp models/gcn_cora.onnx '%s/gcn_cora#2.onnx'", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "multi models/gcn_cora.onnx models/gcn_cora.onnx '%s/gcn_cora#2.onnx' --cluster "
             "examples/clusters/local-cpu-percore.json --algo aswm --json 2>/dev/null",
             dir);
    json_t *doc = tu_run_json(cmd);
    json_t *models = json_object_get(doc, "models");
    const char *want[] = {"gcn_cora", "gcn_cora#2", "gcn_cora#2#2"};
    assert_int_equal(json_array_size(models), 3);
    for (int i = 0; i < 3; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(models, i), "name")),
                            want[i]);
    json_decref(doc);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fig1_json),
        cmocka_unit_test(test_fig1_table),
        cmocka_unit_test(test_model_twice),
        cmocka_unit_test(test_output_file),
        cmocka_unit_test(test_output_unwritable),
        cmocka_unit_test(test_run_failures),
        cmocka_unit_test(test_run_alone),
        cmocka_unit_test(test_inputs_read_in_place),
        cmocka_unit_test(test_profile_applies_to_its_model),
        cmocka_unit_test(test_profile_precedence),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_nothing_fits),
        cmocka_unit_test(test_answer_is_the_best_row),
        cmocka_unit_test(test_refine_keeps_memory),
        cmocka_unit_test(test_tsam_one_device),
        cmocka_unit_test(test_tenant_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
