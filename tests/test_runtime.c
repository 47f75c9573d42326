/* test_runtime.c: inflation of weightless models, the persistent onnxruntime worker and the
 * measuring trial worker. Needs onnxruntime-node from `make deps`: without it the tests fail
 * and say so. Fake workers (small Node scripts written to a temporary directory) stand in for
 * one that answers garbage, crashes or hangs. */
#include "testutil.h"

#include "onnx/onnx.pb-c.h"
#include "placer/runtime.h"
#include "placer/trial.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE "build/ort-cache"

static char tmpdir[64];

/* Writes a fake worker script into the temporary directory; returns its path (static). */
static const char *fake_worker(const char *name, const char *js)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(js, f);
    fclose(f);
    return path;
}

static bool gone(int pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH;
}

static void test_inflate_idempotent(void **state)
{
    (void)state;
    char dir[128], out[4096], again[4096];
    snprintf(dir, sizeof dir, "%s/cache", tmpdir);
    pl_err err = {{0}};
    assert_int_equal(pl_inflate_model("models/rnnlm.onnx", dir, out, sizeof out, &err), 1);
    struct stat a, b;
    assert_int_equal(stat(out, &a), 0);
    /* 19.8 M float parameters now have their 4 bytes each */
    assert_true(a.st_size > 19800000LL * 4);
    pl_graph *g = tu_load(out), *orig = tu_load("models/rnnlm.onnx");
    assert_int_equal(g->n_ops, orig->n_ops); /* still the same model to placer's reader */
    pl_graph_free(g), pl_graph_free(orig);
    assert_int_equal(pl_inflate_model("models/rnnlm.onnx", dir, again, sizeof again, &err), 0);
    assert_string_equal(out, again);
    assert_int_equal(stat(again, &b), 0);
    assert_true(a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec);
    assert_int_equal(a.st_ino, b.st_ino);
    unlink(out);
}

static void test_inflate_refuses_non_onnx(void **state)
{
    (void)state;
    char out[4096];
    pl_err err = {{0}};
    const char *bad = tu_tmpfile("\xff\xff\xff\xff garbage", 13, ".onnx");
    assert_int_equal(pl_inflate_model(bad, tmpdir, out, sizeof out, &err), -1);
    assert_contains(err.msg, "not an ONNX model");
}

/* A model file (a temporary one; tu_tmpfile's static path) holding just initializer t. */
static const char *one_initializer_model(Onnx__TensorProto *t)
{
    Onnx__TensorProto *inits[] = {t};
    Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
    g.name = "one", g.n_initializer = 1, g.initializer = inits;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.ir_version = 8, m.has_ir_version = 1, m.graph = &g;
    size_t len = pl_onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    pl_onnx__model_proto__pack(&m, buf);
    const char *path = tu_tmpfile(buf, len, ".onnx");
    free(buf);
    return path;
}

/* A model whose one initializer points at an external file: refused, never half-inflated. */
static void test_inflate_refuses_external_data(void **state)
{
    (void)state;
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[] = {4};
    Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT, *locs[] = {&loc};
    loc.key = "location", loc.value = "weights.bin";
    t.name = "w", t.n_dims = 1, t.dims = dims, t.data_type = 1, t.has_data_type = 1;
    t.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL, t.has_data_location = 1;
    t.n_external_data = 1, t.external_data = locs;
    const char *path = one_initializer_model(&t);
    char out[4096];
    pl_err err = {{0}};
    assert_int_equal(pl_inflate_model(path, tmpdir, out, sizeof out, &err), -1);
    assert_contains(err.msg, "tensor 'w' keeps its data in an external file");
    assert_int_equal(access(out, F_OK), -1);
}

/* A model whose every tensor has its data is not copied into the cache: out is the file
 * itself. */
static void test_inflate_full_weights(void **state)
{
    (void)state;
    float w[4] = {1, 2, 3, 4};
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[] = {4};
    t.name = "w", t.n_dims = 1, t.dims = dims, t.data_type = 1, t.has_data_type = 1;
    t.raw_data.data = (uint8_t *)w, t.raw_data.len = sizeof w, t.has_raw_data = 1;
    char path[4096], dir[128], out[4096];
    snprintf(path, sizeof path, "%s", one_initializer_model(&t));
    snprintf(dir, sizeof dir, "%s/full-cache", tmpdir);
    pl_err err = {{0}};
    assert_int_equal(pl_inflate_model(path, dir, out, sizeof out, &err), 0);
    assert_string_equal(out, path);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));)
        files += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(files, 0); /* nothing written */
}

/* A weightless model (one float initializer of 1000 elements without data, its path into
 * src) inflated into the cache folder dir; its entry's path into entry and its bytes into
 * *bytes (malloc'd). */
static void inflate_small(const char *dir, char *src, char *entry, char **bytes, size_t *len)
{
    Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[] = {1000};
    t.name = "w", t.n_dims = 1, t.dims = dims, t.data_type = 1, t.has_data_type = 1;
    snprintf(src, 4096, "%s", one_initializer_model(&t));
    pl_err err = {{0}};
    assert_int_equal(pl_inflate_model(src, dir, entry, 4096, &err), 1);
    *bytes = pl_read_file(entry, len, &err);
    assert_non_null(*bytes);
    assert_true(*len > 4000); /* 1000 floats of made-up values */
}

/* The entry is inflated again (1, with a warning) and holds exactly the bytes of the first
 * inflation; the next call uses it (0). */
static void expect_rebuilt(const char *src, const char *dir, const char *want, size_t want_len)
{
    char out[4096];
    size_t len = 0;
    pl_err err = {{0}};
    assert_int_equal(pl_inflate_model(src, dir, out, sizeof out, &err), 1);
    char *got = pl_read_file(out, &len, &err);
    assert_non_null(got);
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);
    free(got);
    assert_int_equal(pl_inflate_model(src, dir, out, sizeof out, &err), 0);
}

/* A cache entry with flipped bytes is found out by its SHA-256 and rebuilt, never used (it
 * was used as it was, and `placer run` printed a wrong checksum with exit 0). */
static void test_cache_flipped_bytes_rebuilt(void **state)
{
    (void)state;
    char dir[128], src[4096], entry[4096], *want;
    size_t len;
    snprintf(dir, sizeof dir, "%s/cache-flip", tmpdir);
    inflate_small(dir, src, entry, &want, &len);
    FILE *f = fopen(entry, "r+b");
    assert_non_null(f);
    fseek(f, (long)len - 100, SEEK_SET); /* inside the made-up floats */
    fputc(want[len - 100] ^ 0x5a, f);
    fclose(f);
    expect_rebuilt(src, dir, want, len);
    free(want);
}

/* A truncated entry (placer killed while writing it, before entries were renamed into place)
 * is rebuilt, instead of failing every later run until deleted by hand. So is an entry whose
 * recorded SHA-256 is missing. */
static void test_cache_truncated_rebuilt(void **state)
{
    (void)state;
    char dir[128], src[4096], entry[4096], side[4200], *want;
    size_t len;
    snprintf(dir, sizeof dir, "%s/cache-trunc", tmpdir);
    inflate_small(dir, src, entry, &want, &len);
    assert_int_equal(truncate(entry, (off_t)len / 2), 0);
    expect_rebuilt(src, dir, want, len);
    snprintf(side, sizeof side, "%s.sha256", entry);
    assert_int_equal(unlink(side), 0);
    expect_rebuilt(src, dir, want, len);
    free(want);
}

/* Start once, three trials: one model load, three timed runs, latencies > 0, and the worker
 * process is gone after the trial worker is freed. */
static void persistent(const char *model)
{
    tu_require_ort();
    pl_trial_worker *w = pl_trial_ort_new(
        &(pl_trial_ort_opts){.model_path = model, .cache_dir = CACHE, .repeat = 1, .warmup = 1});
    pl_err err = {{0}};
    if (pl_trial_start(w, &err) < 0) fail_msg("%s", err.msg);
    pl_ort *o = pl_trial_ort_client(w);
    for (int i = 0; i < 3; i++) {
        pl_trial_out out = {.latency_s = INFINITY};
        if (pl_trial_run(w, NULL, &out, &err) < 0) fail_msg("%s", err.msg);
        assert_true(out.runs && out.latency_s > 0 && isfinite(out.latency_s));
        pl_trial_start(w, &err); /* a no-op: started already */
    }
    long loads = 0, runs = 0;
    assert_int_equal(pl_ort_stats(o, &loads, &runs, &err), 0);
    assert_int_equal(w->starts, 1);
    assert_int_equal(loads, 1);
    assert_int_equal(runs, 3);
    printf("%s: start-up (inflate + node + load) %.3f s, of which load %.3f s; 3 trials %.3f s "
           "(%.3f s each, with 1 warm-up run)\n",
           model, w->startup_s, pl_ort_load_s(o), w->trial_s, w->trial_s / 3);
    int pid = pl_ort_pid(o);
    assert_true(pid > 0 && !gone(pid));
    pl_trial_worker_free(w);
    assert_true(gone(pid));
}

static void test_persistent_rnnlm(void **state)
{
    (void)state;
    persistent("models/rnnlm.onnx");
}

static void test_persistent_resnet50(void **state)
{
    (void)state;
    persistent("models/resnet50.onnx");
}

static pl_ort *start_loaded(const char *model, const pl_ort_opts *o)
{
    char path[4096];
    pl_err err = {{0}};
    if (pl_inflate_model(model, CACHE, path, sizeof path, &err) < 0) fail_msg("%s", err.msg);
    pl_ort *w = pl_ort_start(o, &err);
    if (!w) fail_msg("%s", err.msg);
    const char *paths[] = {path};
    if (pl_ort_load(w, paths, 1, &err) < 0) fail_msg("%s", err.msg);
    return w;
}

static void test_outputs_finite(void **state)
{
    (void)state;
    tu_require_ort();
    pl_ort *w = start_loaded("models/resnet50.onnx", NULL);
    pl_ort_result r;
    pl_err err = {{0}};
    if (pl_ort_run(w, 2, 0, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(r.repeat, 2);
    assert_int_equal(r.n_stages, 1);
    assert_true(r.latency_s[0] > 0 && r.stage_s[1] > 0 && r.stage_s[1] <= r.latency_s[1]);
    assert_int_equal(r.n_outputs, 1);
    assert_string_equal(r.outputs[0].name, "logits");
    assert_int_equal(r.outputs[0].rank, 2);
    assert_int_equal(r.outputs[0].dims[1], 1000);
    assert_true(r.outputs[0].finite && isfinite(r.outputs[0].checksum));
    assert_int_equal(r.outputs[0].n_first, PL_ORT_FIRST);
    pl_ort_result_free(&r);
    pl_ort_stop(w);
}

/* Spaced requests (pl_ort_run_spaced, `placer multi --run --alone`): each timed request comes
 * after the wait, so three of them after 0.2 s each take at least 0.6 s in all, whatever the
 * machine (a bound the wait alone sets, not a speed); a wait outside [0, 10] s is refused
 * before anything is sent, and the worker serves on. */
static void test_spaced_requests_wait(void **state)
{
    (void)state;
    tu_require_ort();
    pl_ort *w = start_loaded("models/resnet50.onnx", NULL);
    pl_ort_result r;
    pl_err err = {{0}};
    double t0 = pl_now();
    if (pl_ort_run_spaced(w, 3, 0, 0.2, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_true(pl_now() - t0 >= 0.6);
    assert_int_equal(r.repeat, 3);
    pl_ort_result_free(&r);
    const double bad[] = {-0.1, 10.5, NAN};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pl_ort_run_spaced(w, 1, 0, bad[i], &r, &err), -1);
        assert_contains(err.msg, "is not in [0, 10]");
    }
    if (pl_ort_run(w, 1, 0, &r, &err) < 0) fail_msg("%s", err.msg);
    pl_ort_result_free(&r);
    pl_ort_stop(w);
}

/* Two stages: each has its own session and its own time; the request covers both. Its outputs
 * are the last stage's (bert_base's two) and every output no stage reads (resnet50's logits). */
static void test_stage_set(void **state)
{
    (void)state;
    tu_require_ort();
    char a[4096], b[4096];
    pl_err err = {{0}};
    if (pl_inflate_model("models/resnet50.onnx", CACHE, a, sizeof a, &err) < 0 ||
        pl_inflate_model("models/bert_base.onnx", CACHE, b, sizeof b, &err) < 0)
        fail_msg("%s", err.msg);
    pl_ort *w = pl_ort_start(NULL, &err);
    if (!w) fail_msg("%s", err.msg);
    const char *paths[] = {a, b};
    if (pl_ort_load(w, paths, 2, &err) < 0) fail_msg("%s", err.msg);
    pl_ort_result r;
    if (pl_ort_run(w, 1, 0, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(r.n_stages, 2);
    assert_true(r.stage_s[0] > 0 && r.stage_s[1] > 0);
    assert_true(r.latency_s[0] >= r.stage_s[0] + r.stage_s[1]);
    assert_int_equal(r.n_outputs, 3);
    const char *want[] = {"last_hidden_state", "pooler_output", "logits"};
    for (int k = 0; k < 3; k++) {
        int i = 0;
        while (i < r.n_outputs && strcmp(r.outputs[i].name, want[k]))
            i++;
        if (i == r.n_outputs) fail_msg("no output '%s'", want[k]);
    }
    long loads = 0, runs = 0;
    assert_int_equal(pl_ort_stats(w, &loads, &runs, &err), 0);
    assert_int_equal(loads, 2);
    pl_ort_result_free(&r);
    pl_ort_stop(w);
}

static void test_missing_modules(void **state)
{
    (void)state;
    pl_err err = {{0}};
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.modules = "/nonexistent/node_modules"}, &err);
    assert_null(w);
    assert_contains(err.msg, "make deps");
}

static void test_malformed_greeting(void **state)
{
    (void)state;
    const char *js = fake_worker("garbage.js", "console.log('this is not JSON');\n"
                                               "setInterval(() => {}, 1000);\n");
    pl_err err = {{0}};
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.script = js}, &err);
    assert_null(w);
    assert_contains(err.msg, "malformed reply to 'start' (not JSON): 'this is not JSON'");
}

/* Greets properly, then answers every request with garbage: the worker is ended and the
 * message says the request's answer is lost, not "restarted" (issue 27: the caller stops
 * there); the next request starts a fresh worker, which fails the same way. */
static void test_malformed_reply_restarts(void **state)
{
    (void)state;
    const char *js =
        fake_worker("bad_reply.js", "console.log(JSON.stringify({ok: true, ready: true}));\n"
                                    "require('readline').createInterface({input: process.stdin})\n"
                                    "  .on('line', () => console.log('{\"garbage\": 1}'));\n");
    pl_err err = {{0}};
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.script = js}, &err);
    if (!w) fail_msg("%s", err.msg);
    int pid = pl_ort_pid(w);
    long loads, runs;
    assert_int_equal(pl_ort_stats(w, &loads, &runs, &err), -1);
    assert_contains(err.msg, "malformed reply to 'stats' (no \"ok\")");
    assert_contains(err.msg, "; the answer to 'stats' is lost");
    assert_null(strstr(err.msg, "restart"));
    assert_int_equal(pl_ort_restarts(w), 0);
    assert_true(gone(pid) && pl_ort_pid(w) <= 0);
    assert_int_equal(pl_ort_stats(w, &loads, &runs, &err), -1);
    assert_int_equal(pl_ort_restarts(w), 1);
    assert_contains(err.msg, "malformed reply to 'stats' (no \"ok\")");
    pl_ort_stop(w);
}

/* Answers like the real worker, but the first run kills it (a marker file remembers): the run
 * fails saying so, and the next request starts a worker with the model loaded again. */
static void test_crash_mid_run_restarts(void **state)
{
    (void)state;
    char script[1024];
    snprintf(script, sizeof script,
             "const fs = require('fs'), marker = '%s/crashed';\n"
             "const say = (o) => console.log(JSON.stringify(o));\n"
             "say({ok: true, ready: true});\n"
             "let loads = 0;\n"
             "require('readline').createInterface({input: process.stdin}).on('line', (l) => {\n"
             "  const m = JSON.parse(l);\n"
             "  if (m.op === 'load') { loads++; return say({ok: true, id: m.id, loads}); }\n"
             "  if (m.op === 'stats') return say({ok: true, id: m.id, loads, runs: 0});\n"
             "  if (!fs.existsSync(marker)) { fs.writeFileSync(marker, ''); "
             "process.stderr.write('about to crash\\n'); process.kill(process.pid, 'SIGKILL'); }\n"
             "  say({ok: true, id: m.id, latency_s: [0.5], stage_s: [[0.5]], start_s: [[0]], "
             "end_s: [[0.5]], outputs: {}});\n"
             "});\n",
             tmpdir);
    const char *js = fake_worker("crash.js", script);
    pl_err err = {{0}};
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.script = js}, &err);
    if (!w) fail_msg("%s", err.msg);
    const char *paths[] = {"model.onnx"};
    assert_int_equal(pl_ort_load(w, paths, 1, &err), 0);
    int pid = pl_ort_pid(w);
    pl_ort_result r;
    assert_int_equal(pl_ort_run(w, 1, 0, &r, &err), -1);
    assert_contains(err.msg, "onnxruntime worker died (signal 9) while running 'run'");
    assert_contains(err.msg, "about to crash");
    assert_contains(err.msg, "; the answer to 'run' is lost");
    assert_null(strstr(err.msg, "restart"));
    assert_true(gone(pid) && pl_ort_pid(w) <= 0);
    long loads = 0, runs = 0; /* the new worker got the model loaded again */
    assert_int_equal(pl_ort_stats(w, &loads, &runs, &err), 0);
    assert_int_equal(loads, 1);
    assert_int_equal(pl_ort_restarts(w), 1);
    if (pl_ort_run(w, 1, 0, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_close(r.latency_s[0], 0.5, 1e-12);
    pl_ort_result_free(&r);
    pid = pl_ort_pid(w);
    pl_ort_stop(w);
    assert_true(gone(pid));
}

static void test_timeout_restarts(void **state)
{
    (void)state;
    const char *js =
        fake_worker("mute.js", "console.log(JSON.stringify({ok: true, ready: true}));\n"
                               "process.stdin.resume();\n");
    pl_err err = {{0}};
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.script = js, .timeout_s = 2}, &err);
    if (!w) fail_msg("%s", err.msg);
    int pid = pl_ort_pid(w);
    long loads, runs;
    assert_int_equal(pl_ort_stats(w, &loads, &runs, &err), -1);
    char want[160];
    snprintf(want, sizeof want,
             "onnxruntime worker (pid %d) stalled: nothing from it for 2 s in 'stats' (before "
             "its first step)",
             pid);
    assert_contains(err.msg, want);
    assert_contains(err.msg, "killed it; the answer to 'stats' is lost");
    assert_true(gone(pid));
    pl_ort_stop(w);
}

/* A worker stopped (SIGSTOP) in the middle of a run: the run fails within one step's deadline
 * with a message naming the worker and the request, the stopped worker is killed and reaped
 * (no process left behind), and the next request's fresh one has the model loaded again. */
static void test_stalled_worker_killed(void **state)
{
    (void)state;
    tu_require_ort();
    pl_ort *w = start_loaded("models/rnnlm.onnx", &(pl_ort_opts){.timeout_s = 5});
    int pid = pl_ort_pid(w);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    pl_ort_result r;
    pl_err err = {{0}};
    assert_int_equal(pl_ort_run(w, 3, 1, &r, &err), -1);
    char want[160];
    snprintf(want, sizeof want,
             "onnxruntime worker (pid %d) stalled: nothing from it for 5 s in 'run'", pid);
    assert_contains(err.msg, want);
    assert_contains(err.msg, "killed it; the answer to 'run' is lost");
    assert_true(gone(pid));          /* killed and reaped: not even a zombie */
    assert_true(pl_ort_pid(w) <= 0); /* none started for nothing */
    if (pl_ort_run(w, 1, 0, &r, &err) < 0) fail_msg("%s", err.msg);
    pl_ort_result_free(&r);
    pl_ort_stop(w);
}

/* A fake worker that answers 'run' after `steps` steps of 0.3 s, each announced by a progress
 * line: 8 steps take 2.4 s, longer than the 1.5 s deadline, but no step does. */
static const char *slow_steps_worker(void)
{
    return fake_worker(
        "steps.js",
        "const say = (o) => console.log(JSON.stringify(o));\n"
        "say({ok: true, ready: true});\n"
        "require('readline').createInterface({input: process.stdin}).on('line', async (l) => {\n"
        "  const m = JSON.parse(l);\n"
        "  for (let i = 1; i <= 8; i++) {\n"
        "    await new Promise((r) => setTimeout(r, 300));\n"
        "    say({id: m.id, progress: `request ${i} of 8`});\n"
        "  }\n"
        "  if (m.op === 'stats') return say({ok: true, id: m.id, loads: 0, runs: 8});\n"
        "});\n");
}

/* The deadline is per step: a request of many steps, each announced, is not a stall however
 * long it takes in all (it was one deadline for the whole reply, and a long run was killed). */
static void test_deadline_is_per_step(void **state)
{
    (void)state;
    pl_err err = {{0}};
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.script = slow_steps_worker(), .timeout_s = 1.5}, &err);
    if (!w) fail_msg("%s", err.msg);
    long loads = -1, runs = -1;
    if (pl_ort_stats(w, &loads, &runs, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(runs, 8);
    assert_int_equal(pl_ort_restarts(w), 0);
    pl_ort_stop(w);
}

/* $PLACER_ORT_DEADLINE sets the deadline when the caller does not; a bad value is refused. */
static void test_deadline_from_environment(void **state)
{
    (void)state;
    const char *js =
        fake_worker("mute2.js", "console.log(JSON.stringify({ok: true, ready: true}));\n"
                                "process.stdin.resume();\n");
    pl_err err = {{0}};
    setenv("PLACER_ORT_DEADLINE", "2500ms", 1);
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.script = js}, &err);
    if (!w) fail_msg("%s", err.msg);
    long loads, runs;
    assert_int_equal(pl_ort_stats(w, &loads, &runs, &err), -1);
    assert_contains(err.msg, "stalled: nothing from it for 2.5 s in 'stats'");
    pl_ort_stop(w);
    setenv("PLACER_ORT_DEADLINE", "-1", 1);
    assert_null(pl_ort_start(&(pl_ort_opts){.script = js}, &err));
    assert_contains(err.msg, "PLACER_ORT_DEADLINE='-1': wants a duration above 0");
    unsetenv("PLACER_ORT_DEADLINE");
}

static void test_worker_error_is_reported(void **state)
{
    (void)state;
    tu_require_ort();
    pl_err err = {{0}};
    pl_ort *w = pl_ort_start(NULL, &err);
    if (!w) fail_msg("%s", err.msg);
    pl_ort_result r;
    assert_int_equal(pl_ort_run(w, 1, 0, &r, &err), -1);
    assert_contains(err.msg, "onnxruntime worker: run: no model is loaded");
    const char *paths[] = {"/nonexistent.onnx"};
    assert_int_equal(pl_ort_load(w, paths, 1, &err), -1);
    assert_contains(err.msg, "onnxruntime worker: load: ");
    assert_int_equal(pl_ort_restarts(w), 0); /* an error reply is not a broken worker */
    pl_ort_stop(w);
}

static int setup(void **state)
{
    (void)state;
    return tu_mkdtemp(tmpdir, sizeof tmpdir, "placer-runtime");
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inflate_idempotent),
        cmocka_unit_test(test_inflate_refuses_non_onnx),
        cmocka_unit_test(test_inflate_refuses_external_data),
        cmocka_unit_test(test_inflate_full_weights),
        cmocka_unit_test(test_cache_flipped_bytes_rebuilt),
        cmocka_unit_test(test_cache_truncated_rebuilt),
        cmocka_unit_test(test_persistent_rnnlm),
        cmocka_unit_test(test_persistent_resnet50),
        cmocka_unit_test(test_outputs_finite),
        cmocka_unit_test(test_stage_set),
        cmocka_unit_test(test_spaced_requests_wait),
        cmocka_unit_test(test_missing_modules),
        cmocka_unit_test(test_malformed_greeting),
        cmocka_unit_test(test_malformed_reply_restarts),
        cmocka_unit_test(test_crash_mid_run_restarts),
        cmocka_unit_test(test_timeout_restarts),
        cmocka_unit_test(test_stalled_worker_killed),
        cmocka_unit_test(test_deadline_is_per_step),
        cmocka_unit_test(test_deadline_from_environment),
        cmocka_unit_test(test_worker_error_is_reported),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
