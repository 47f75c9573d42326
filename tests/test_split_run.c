/* test_split_run.c: the stages of a split, run one after the other with onnxruntime and on
 * device threads, give the whole model's outputs (issue 6): for resnet50, inception_v3,
 * bert_base and rnnlm_unrolled, split by a HEFT and an expert plan on moirai-intra-server,
 * within 1e-4 relative on random inputs (on device threads: each output's checksum). Needs
 * onnxruntime-node from `make deps`: without it the tests fail and say so. One worker serves the
 * whole file, so the whole model is loaded once for its two plans. */
#include "testutil.h"
#include "rw_models.h"

#include "placer/place.h"
#include "placer/runtime.h"
#include "placer/split.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE "build/ort-cache"
#define INTRA "examples/clusters/moirai-intra-server.json"
#define TOL 1e-4

static pl_ort *worker;

/* The whole model's outputs on the worker's random inputs, for the model named `whole_of`: one
 * load and run per model, shared by its two plans. */
static char whole_of[256];
static pl_ort_result whole;

/* Inflates every stage file of dir into dir/inflated (removed with dir); paths[j] gets it. */
static void inflate_stages(const char *dir, int n, char (*paths)[4096])
{
    char src[512], cache[512];
    snprintf(cache, sizeof cache, "%s/inflated", dir);
    for (int j = 0; j < n; j++) {
        pl_err err = {""};
        snprintf(src, sizeof src, "%s/stage_%02d.onnx", dir, j);
        if (pl_inflate_model(src, cache, paths[j], sizeof paths[j], &err) < 0)
            fail_msg("%s", err.msg);
    }
}

static void check_result(const char *model, const char *algo, const pl_ort_compare_result *r)
{
    for (int k = 0; k < r->n_outputs; k++) {
        const pl_ort_diff *d = &r->outputs[k];
        if (!d->finite) fail_msg("%s/%s: output '%s' is not finite", model, algo, d->name);
        if (!(d->max_rel <= TOL))
            fail_msg("%s/%s: output '%s' differs by %g relative (%g absolute), above %g", model,
                     algo, d->name, d->max_rel, d->max_abs, TOL);
    }
}

/* The stages list[0..s->n) on device threads, one per device of the plan (pl_ort_load_on), give
 * every output of the whole model `ref` (inflated `model`) with the same checksum, within TOL. */
static void threads_agree(const char *model, const char *algo, const pl_stages *s,
                          const char **list, const char *ref)
{
    pl_err err = {""};
    if (strcmp(whole_of, model)) {
        pl_ort_result_free(&whole);
        if (pl_ort_load(worker, &ref, 1, &err) < 0 || pl_ort_run(worker, 1, 0, &whole, &err) < 0)
            fail_msg("%s: %s", model, err.msg);
        snprintf(whole_of, sizeof whole_of, "%s", model);
    }
    char(*names)[16] = pl_calloc(s->n, sizeof *names);
    const char **devs = pl_calloc(s->n, sizeof *devs);
    for (int j = 0; j < s->n; j++)
        snprintf(names[j], sizeof names[j], "dev%d", s->st[j].dev), devs[j] = names[j];
    pl_ort_result r;
    if (pl_ort_load_on(worker, list, devs, s->n, &err) < 0 ||
        pl_ort_run(worker, 1, 0, &r, &err) < 0)
        fail_msg("%s/%s on device threads: %s", model, algo, err.msg);
    bool several = false; /* one device's stages run on the main thread (pl_ort_load_stages) */
    for (int j = 1; j < s->n; j++)
        several |= s->st[j].dev != s->st[0].dev;
    assert_int_equal(r.concurrent, several);
    assert_int_equal(r.n_outputs, whole.n_outputs);
    for (int k = 0; k < whole.n_outputs; k++) {
        int i = 0;
        while (i < r.n_outputs && strcmp(r.outputs[i].name, whole.outputs[k].name))
            i++;
        if (i == r.n_outputs)
            fail_msg("%s/%s: no output '%s' from the device threads", model, algo,
                     whole.outputs[k].name);
        assert_true(r.outputs[i].finite);
        assert_close(r.outputs[i].checksum, whole.outputs[k].checksum, TOL);
    }
    pl_ort_result_free(&r);
    free(devs), free(names);
}

/* Splits `model` by a plan from `algo`, runs the stages and the model, compares; then the
 * stages on device threads. */
static void split_run(const char *model, const char *algo, int min_stages)
{
    double t0 = pl_now();
    pl_graph *g = tu_load(model);
    pl_plan *p = tu_plan(g, INTRA, algo);
    pl_stages s;
    pl_err err = {""};
    if (pl_split_stages(g, p, &s, &err) < 0) fail_msg("%s", err.msg);
    char dir[64], ref[4096];
    if (tu_mkdtemp(dir, sizeof dir, "placer-split-run") < 0) fail_msg("mkdtemp failed");
    if (pl_split_write(model, g, &s, NULL, dir, &err) < 0) fail_msg("%s", err.msg);
    if (pl_inflate_model(model, CACHE, ref, sizeof ref, &err) < 0) fail_msg("%s", err.msg);
    char(*paths)[4096] = pl_calloc(s.n, sizeof *paths);
    inflate_stages(dir, s.n, paths);
    const char **list = pl_calloc(s.n, sizeof *list);
    for (int j = 0; j < s.n; j++)
        list[j] = paths[j];
    pl_ort_compare_result r;
    int rc = pl_ort_compare(worker, ref, list, s.n, &r, &err);
    if (rc < 0) fail_msg("%s/%s: %s", model, algo, err.msg);
    printf("  %-28s %-6s %2d stages on %d devices, %d outputs, max rel %.2e, model %.3f s, "
           "stages %.3f s, all %.1f s\n",
           model, algo, s.n, pl_stages_devices(&s), r.n_outputs, r.max_rel, r.reference_s,
           r.stages_s, pl_now() - t0);
    check_result(model, algo, &r);
    threads_agree(model, algo, &s, list, ref);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
    if (s.n < min_stages)
        fail_msg("%s/%s: %d stages, expected >= %d", model, algo, s.n, min_stages);
    pl_ort_compare_result_free(&r);
    free(list), free(paths);
    pl_stages_free(&s);
    pl_plan_free(p);
    pl_graph_free(g);
}

static void test_resnet50(void **state)
{
    (void)state;
    split_run("models/resnet50.onnx", "heft", 2);
    split_run("models/resnet50.onnx", "expert", 1);
}

static void test_inception_v3(void **state)
{
    (void)state;
    split_run("models/inception_v3.onnx", "heft", 2);
    split_run("models/inception_v3.onnx", "expert", 1);
}

static void test_bert_base(void **state)
{
    (void)state;
    split_run("models/bert_base.onnx", "heft", 2);
    split_run("models/bert_base.onnx", "expert", 1);
}

static void test_rnnlm_unrolled(void **state)
{
    (void)state;
    split_run("models/rnnlm_unrolled.onnx", "heft", 2);
    split_run("models/rnnlm_unrolled.onnx", "expert", 1);
}

/* The comparison is not vacuous: resnext50 run as the "stages" of resnet50 (same input and
 * output names, other weights and ops) differs by far more than the tolerance. */
static void test_other_model_differs(void **state)
{
    (void)state;
    char ref[4096], other[4096];
    pl_err err = {""};
    if (pl_inflate_model("models/resnet50.onnx", CACHE, ref, sizeof ref, &err) < 0 ||
        pl_inflate_model("models/resnext50_32x4d.onnx", CACHE, other, sizeof other, &err) < 0)
        fail_msg("%s", err.msg);
    pl_ort_compare_result r;
    if (pl_ort_compare(worker, ref, (const char *[]){other}, 1, &r, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(r.n_outputs, 1);
    printf("  resnext50 as resnet50: max rel %.3g\n", r.max_rel);
    assert_true(r.finite);
    assert_true(r.max_rel > 1e-2);
    pl_ort_compare_result_free(&r);
}

/* ---- concurrent runs: one thread per device (pl_ort_load_split, placer run) ---- */

#define LOCAL "examples/clusters/local-cpu-percore.json"

/* inception_v3 by HEFT on the two cores of local-cpu-percore.json, cut by the schedule: a split
 * whose stages can overlap. Writes it into dir; returns the number of stages. */
static int schedule_split(const char *dir, const char *plan_path)
{
    pl_graph *g = tu_load("models/inception_v3.onnx");
    pl_plan *p = tu_plan(g, LOCAL, "heft");
    pl_stages s;
    pl_err err = {""};
    if (pl_split_stages_by(g, p, PL_SPLIT_SCHEDULE, &s, &err) < 0 ||
        pl_split_write("models/inception_v3.onnx", g, &s, (const char *[]){"cpu0", "cpu1"}, dir,
                       &err) < 0)
        fail_msg("%s", err.msg);
    if (plan_path) {
        pl_cluster *c = pl_cluster_load(LOCAL, &err);
        if (!c || pl_plan_save(p, g, c, plan_path, &err) < 0) fail_msg("%s", err.msg);
        pl_cluster_free(c);
    }
    int n = s.n;
    pl_stages_free(&s);
    pl_plan_free(p);
    pl_graph_free(g);
    return n;
}

/* What must hold for every request, however busy the machine: a stage starts after every stage
 * it reads from has ended, two stages of one device never overlap, and the request ends after
 * its last stage. */
static void check_times(const pl_split_manifest *m, const pl_ort_result *r, json_t *stages)
{
    for (int q = 0; q < r->repeat; q++) {
        const double *st = r->start_s + (size_t)q * m->n, *en = r->end_s + (size_t)q * m->n;
        for (int j = 0; j < m->n; j++) {
            assert_true(en[j] >= st[j] && st[j] >= 0 && en[j] <= r->latency_s[q]);
            json_t *ins = json_object_get(json_array_get(stages, j), "inputs"), *in;
            size_t k;
            json_array_foreach(ins, k, in)
            {
                json_t *from = json_object_get(in, "from_stage");
                if (json_is_integer(from) && !(st[j] >= en[json_integer_value(from)]))
                    fail_msg("request %d: stage %d starts at %g s, before stage %lld ends (%g s)",
                             q, j, st[j], json_integer_value(from), en[json_integer_value(from)]);
            }
            for (int i = 0; i < j; i++)
                if (!strcmp(m->st[i].device, m->st[j].device) && st[j] < en[i] && st[i] < en[j])
                    fail_msg("request %d: stages %d and %d overlap on %s", q, i, j,
                             m->st[i].device);
        }
    }
}

static double checksum_of(const pl_ort_result *r, const char *name)
{
    for (int k = 0; k < r->n_outputs; k++)
        if (!strcmp(r->outputs[k].name, name)) return r->outputs[k].checksum;
    fail_msg("no output '%s'", name);
    return 0;
}

static void run_split(const pl_split_manifest *m, const char *cache, bool sequential,
                      pl_ort_result *r)
{
    pl_err err = {""};
    if (pl_ort_load_split(worker, m, cache, sequential, &err) < 0 ||
        pl_ort_run(worker, 3, 1, r, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(r->n_stages, m->n);
    assert_int_equal(r->concurrent, !sequential);
}

/* The stages on device threads give the outputs of the same stages run one after the other
 * and of the whole model; every request keeps the order the data imposes. */
static void test_concurrent(void **state)
{
    (void)state;
    char dir[64], cache[128], ref[4096], path[256];
    if (tu_mkdtemp(dir, sizeof dir, "placer-run") < 0) fail_msg("mkdtemp failed");
    int n = schedule_split(dir, NULL);
    snprintf(cache, sizeof cache, "%s/inflated", dir);
    pl_split_manifest m;
    pl_err err = {""};
    if (pl_split_manifest_load(dir, &m, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(m.n, n);
    assert_int_equal(m.cut, PL_SPLIT_SCHEDULE);
    long loads0, loads1, runs;
    if (pl_ort_stats(worker, &loads0, &runs, &err) < 0) fail_msg("%s", err.msg);
    pl_ort_result con, seq, whole;
    run_split(&m, cache, false, &con);
    if (pl_ort_stats(worker, &loads1, &runs, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(loads1 - loads0, n); /* one session per stage, in the device threads */
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_t *man = json_load_file(path, 0, NULL);
    check_times(&m, &con, json_object_get(man, "stages"));
    run_split(&m, cache, true, &seq);
    if (pl_inflate_model("models/inception_v3.onnx", CACHE, ref, sizeof ref, &err) < 0 ||
        pl_ort_load(worker, (const char *[]){ref}, 1, &err) < 0 ||
        pl_ort_run(worker, 1, 0, &whole, &err) < 0)
        fail_msg("%s", err.msg);
    double want = checksum_of(&whole, "logits");
    assert_close(checksum_of(&con, "logits"), want, 1e-4);
    assert_close(checksum_of(&seq, "logits"), want, 1e-4);
    printf("  inception_v3 heft/schedule: %d stages, concurrent %.1f ms, one after the other "
           "%.1f ms, whole %.1f ms (first request)\n",
           n, con.latency_s[0] * 1e3, seq.latency_s[0] * 1e3, whole.latency_s[0] * 1e3);
    json_decref(man);
    pl_ort_result_free(&con), pl_ort_result_free(&seq), pl_ort_result_free(&whole);
    pl_split_manifest_free(&m);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* Stages given out of order (one reads what a later one makes) are refused by the worker, which
 * stays usable. */
static void test_out_of_order(void **state)
{
    (void)state;
    char dir[64], cache[128], a[4096], b[4096];
    if (tu_mkdtemp(dir, sizeof dir, "placer-run") < 0) fail_msg("mkdtemp failed");
    schedule_split(dir, NULL);
    snprintf(cache, sizeof cache, "%s/inflated", dir);
    pl_split_manifest m;
    pl_err err = {""};
    if (pl_split_manifest_load(dir, &m, &err) < 0 ||
        pl_inflate_model(m.st[0].path, cache, a, sizeof a, &err) < 0 ||
        pl_inflate_model(m.st[1].path, cache, b, sizeof b, &err) < 0)
        fail_msg("%s", err.msg);
    const char *paths[] = {b, a}, *devs[] = {m.st[1].device, m.st[0].device};
    assert_int_equal(pl_ort_load_on(worker, paths, devs, 2, &err), -1);
    assert_contains(err.msg, "earlier");
    long loads, runs;
    assert_int_equal(pl_ort_stats(worker, &loads, &runs, &err), 0);
    pl_split_manifest_free(&m);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* `placer run`: the JSON report, the simulator's prediction beside it, the trace; and a bad
 * manifest named with its place. */
static void test_cli_run(void **state)
{
    (void)state;
    char dir[64], args[1024], plan[128], trace[128];
    if (tu_mkdtemp(dir, sizeof dir, "placer-run") < 0) fail_msg("mkdtemp failed");
    snprintf(plan, sizeof plan, "%s/plan.json", dir);
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    int n = schedule_split(dir, plan);
    char *out;
    snprintf(args, sizeof args,
             "run %s --repeat 2 --warmup 1 --cache %s/inflated --plan %s --cluster " LOCAL
             " --trace %s --json 2>/dev/null",
             dir, dir, plan, trace);
    json_t *j = tu_run_json(args);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "placer-run/1");
    assert_true(json_is_true(json_object_get(j, "concurrent")));
    assert_int_equal(json_array_size(json_object_get(j, "stages")), n);
    assert_int_equal(json_array_size(json_object_get(j, "latency_s")), 2);
    assert_true(json_number_value(json_object_get(j, "predicted_makespan_s")) > 0);
    double pred = 0;
    size_t k;
    json_t *st;
    json_array_foreach(json_object_get(j, "stages"), k, st) pred +=
        json_number_value(json_object_get(st, "predicted_s"));
    /* the stages' predicted times are the plan's op times, busy time of two devices: at most
     * twice the makespan */
    assert_true(pred > 0);
    assert_true(pred <=
                2 * json_number_value(json_object_get(j, "predicted_makespan_s")) * (1 + 1e-9));
    json_t *o = json_array_get(json_object_get(j, "outputs"), 0);
    assert_string_equal(json_string_value(json_object_get(o, "name")), "logits");
    assert_true(json_is_true(json_object_get(o, "finite")));
    json_decref(j);
    json_error_t e;
    json_t *t = json_load_file(trace, 0, &e);
    if (!t) fail_msg("%s: %s", trace, e.text);
    assert_int_equal(json_array_size(json_object_get(t, "traceEvents")), n + 2); /* + 2 names */
    json_decref(t);
    /* a manifest written from another model (its sha256 edited): refused before anything runs */
    snprintf(args, sizeof args,
             "/usr/bin/python3 -c \"import json,sys; p=sys.argv[1]; m=json.load(open(p)); "
             "m['model']['sha256']='0'*64; json.dump(m,open(p,'w'))\" %s/manifest.json",
             dir);
    assert_int_equal(system(args), 0);
    snprintf(args, sizeof args, "run %s --plan %s --cluster " LOCAL, dir, plan);
    assert_int_equal(tu_run(args, &out), 2);
    assert_contains(out, "was split from a model with sha256 0000");
    assert_contains(out, "not the model this split was made from");
    free(out);
    /* a manifest whose first stage reads from a later one */
    snprintf(args, sizeof args,
             "/usr/bin/python3 -c \"import json,sys; p=sys.argv[1]; m=json.load(open(p)); "
             "m['stages'][0]['inputs'][0]['from_stage']=1; json.dump(m,open(p,'w'))\" "
             "%s/manifest.json",
             dir);
    assert_int_equal(system(args), 0);
    snprintf(args, sizeof args, "run %s", dir);
    assert_int_equal(tu_run(args, &out), 2);
    assert_contains(out, "manifest.json: $.stages[0].inputs[0].from_stage");
    free(out);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* `placer run` and `placer profile` with a worker that stalls (SIGSTOP) in the middle: a clear
 * error within the deadline (--deadline; $PLACER_ORT_DEADLINE for profile), exit 2, and the
 * stopped worker killed and reaped. Before, both waited for as long as the worker stayed
 * stopped (5 minutes for run, 10 for profile). */
static void test_cli_stalled_worker(void **state)
{
    (void)state;
    char dir[64], js[128], args[1024], *out;
    if (tu_mkdtemp(dir, sizeof dir, "placer-stall") < 0) fail_msg("mkdtemp failed");
    schedule_split(dir, NULL);
    tu_failing_worker(dir, "SIGSTOP", js, sizeof js);
    setenv("PLACER_ORT_WORKER", js, 1);
    snprintf(args, sizeof args, "run %s --deadline 2s --cache %s/inflated", dir, dir);
    assert_int_equal(tu_run(args, &out), 2);
    assert_contains(out, "placer run: ");
    assert_contains(out, "stalled: nothing from it for 2 s in 'run' (before its first step)");
    assert_contains(out, "killed it");
    free(out);
    tu_expect_worker_gone(dir);
    setenv("PLACER_ORT_DEADLINE", "2", 1);
    const char *was = getenv("PLACER_CACHE");
    char cache[4096] = "";
    if (was) snprintf(cache, sizeof cache, "%s", was);
    setenv("PLACER_CACHE", dir, 1);
    assert_int_equal(tu_run("profile models/resnet50.onnx --repeat 1", &out), 2);
    assert_contains(out, "placer profile: ");
    assert_contains(out, "stalled: nothing from it for 2 s in 'profile'");
    free(out);
    tu_expect_worker_gone(dir);
    unsetenv("PLACER_ORT_WORKER"), unsetenv("PLACER_ORT_DEADLINE");
    if (*cache)
        setenv("PLACER_CACHE", cache, 1);
    else
        unsetenv("PLACER_CACHE");
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* ---- types and shapes the worker must make and pass ---- */

/* The model in `path` (loaded with `load_dims` bound) split by `placer split ... extra` into
 * dir/s, by a plan that alternates its ops between cpu0 and cpu1 of local-cpu-percore.json in
 * file order, so that every edge is cut. */
static void split_alternating(const char *path, const char *load_dims[], int n_dims,
                              const char *extra, const char *dir)
{
    pl_err err = {""};
    pl_graph *g = pl_graph_load(path, &(pl_load_opts){.dims = load_dims, .n_dims = n_dims}, &err);
    pl_cluster *c = g ? pl_cluster_load(LOCAL, &err) : NULL;
    if (!c) fail_msg("%s", err.msg);
    pl_plan *p = pl_plan_new(g->n_ops, c->n_devs);
    for (int k = 0; k < g->n_ops; k++)
        p->dev[k] = k % 2;
    char plan[256], args[1024], *out;
    snprintf(plan, sizeof plan, "%s/plan.json", dir);
    if (pl_plan_save(p, g, c, plan, &err) < 0) fail_msg("%s", err.msg);
    snprintf(args, sizeof args, "split %s --cluster " LOCAL " --plan %s %s -o %s/s", path, plan,
             extra, dir);
    int rc = tu_run(args, &out);
    if (rc != 0) fail_msg("placer %s: exit %d\n%s", args, rc, out);
    free(out);
    pl_plan_free(p);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* `placer run DIR/s --json` (exit 0): the report. */
static json_t *run_json(const char *dir)
{
    char args[512];
    snprintf(args, sizeof args, "run %s/s --repeat 1 --warmup 0 --cache %s/inflated --json", dir,
             dir);
    return tu_run_json(args);
}

/* A split made with --dim runs: its stages' graph inputs declare the bound dims (docs/split.md),
 * so the worker's inputs are the size of the tensors the stages exchange. Before, stage 0 read
 * x [batch, seq, 64], the worker made it [1, 1, 64], and stage 1, which declares a [2, 4, 128],
 * refused the [1, 1, 128] it got ("Got invalid dimensions for input: a"). */
static void test_run_split_with_dims(void **state)
{
    (void)state;
    char dir[64], path[256];
    if (tu_mkdtemp(dir, sizeof dir, "placer-run-dims") < 0) fail_msg("mkdtemp failed");
    symbolic_chain(path, sizeof path);
    const char *dims[] = {"batch=2", "seq=4"};
    split_alternating(path, dims, 2, "--dim batch=2 --dim seq=4", dir);
    json_t *j = run_json(dir);
    assert_int_equal(json_array_size(json_object_get(j, "stages")), 3);
    json_t *y = tu_find(j, "outputs", "name", "y"), *d = json_object_get(y, "dims");
    assert_int_equal(json_array_size(d), 3);
    assert_int_equal(json_integer_value(json_array_get(d, 0)), 2);
    assert_int_equal(json_integer_value(json_array_get(d, 1)), 4);
    assert_int_equal(json_integer_value(json_array_get(d, 2)), 32);
    assert_true(json_is_true(json_object_get(y, "finite")));
    json_decref(j);
    remove(path);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* A float16 model runs: the worker makes float16 inputs (random values as IEEE half bits in a
 * Uint16Array), passes the float16 tensor between the device threads, and reads the outputs as
 * values, not bits. y = -relu(x) with x in [0, 1): its 128 values add up to between -128 and 0
 * (the bits of a negative half, read as integers, are above 32768 each). Before, run refused:
 * "input 'x': cannot make random values of type float16". The whole model against its stages
 * (pl_ort_compare) agrees exactly. */
static void test_run_float16(void **state)
{
    (void)state;
    char dir[64], path[256];
    if (tu_mkdtemp(dir, sizeof dir, "placer-run-fp16") < 0) fail_msg("mkdtemp failed");
    Onnx__ModelProto *m = model();
    input(m, "x", "4,32");
    output(m, "y", "4,32");
    elem_type(m->graph->input[0], PL_DT_FLOAT16), elem_type(m->graph->output[0], PL_DT_FLOAT16);
    node(m, "Relu", "a", "x", "t");
    node(m, "Neg", "b", "t", "y");
    save_tmp(m, path, sizeof path);
    split_alternating(path, NULL, 0, "", dir);
    json_t *j = run_json(dir);
    assert_true(json_is_true(json_object_get(j, "concurrent"))); /* t crossed two threads */
    json_t *y = tu_find(j, "outputs", "name", "y");
    double sum = tu_num(y, "checksum");
    printf("  float16 -relu(x): checksum %g\n", sum);
    assert_true(sum < 0 && sum > -128);
    assert_true(json_is_true(json_object_get(y, "finite")));
    json_decref(j);
    char s0[512], s1[512], st0[4096], st1[4096];
    snprintf(s0, sizeof s0, "%s/s/stage_00.onnx", dir);
    snprintf(s1, sizeof s1, "%s/s/stage_01.onnx", dir);
    pl_err err = {""};
    pl_ort_compare_result r;
    if (pl_inflate_model(s0, dir, st0, sizeof st0, &err) < 0 ||
        pl_inflate_model(s1, dir, st1, sizeof st1, &err) < 0 ||
        pl_ort_compare(worker, path, (const char *[]){st0, st1}, 2, &r, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(r.n_outputs, 1);
    assert_true(r.finite);
    assert_true(r.max_rel == 0);
    pl_ort_compare_result_free(&r);
    remove(path);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* A string tensor crosses device threads: it is an Array, with no buffer to hand over, so it is
 * copied (split lets strings cross, since onnxruntime-node has string tensors). Before, the
 * sending thread failed: "Cannot read properties of undefined (reading 'byteLength')". */
static void test_run_string_cut(void **state)
{
    (void)state;
    char dir[64], path[256];
    if (tu_mkdtemp(dir, sizeof dir, "placer-run-str") < 0) fail_msg("mkdtemp failed");
    Onnx__ModelProto *m = model();
    input(m, "x", "4");
    output(m, "y", "4");
    int_attr(node(m, "Cast", "a", "x", "t"), "to", PL_DT_STRING);
    int_attr(node(m, "Cast", "b", "t", "y"), "to", PL_DT_FLOAT);
    save_tmp(m, path, sizeof path);
    split_alternating(path, NULL, 0, "", dir);
    json_t *j = run_json(dir);
    json_t *y = tu_find(j, "outputs", "name", "y");
    double sum = tu_num(y, "checksum"); /* four values in [0, 1), through their text */
    assert_true(sum > 0 && sum < 4);
    json_decref(j);
    remove(path);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

static int setup(void **state)
{
    (void)state;
    if (tu_ort_setup() < 0) return -1;
    pl_err err = {""};
    worker = pl_ort_start(&(pl_ort_opts){.timeout_s = 600}, &err);
    if (!worker) fprintf(stderr, "%s\n", err.msg);
    return worker ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pl_ort_stop(worker);
    pl_ort_result_free(&whole);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet50),
        cmocka_unit_test(test_inception_v3),
        cmocka_unit_test(test_bert_base),
        cmocka_unit_test(test_rnnlm_unrolled),
        cmocka_unit_test(test_other_model_differs),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_out_of_order),
        cmocka_unit_test(test_cli_run),
        cmocka_unit_test(test_cli_stalled_worker),
        cmocka_unit_test(test_run_split_with_dims),
        cmocka_unit_test(test_run_float16),
        cmocka_unit_test(test_run_string_cut),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
