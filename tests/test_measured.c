/* test_measured.c: plans measured for real in the ort trial worker (pl_trial_measure_plan) and
 * the DRL placer's measured episodes (docs/learn.md, "Measured episodes"): gcn_cora (7 ops)
 * on examples/clusters/local-cpu-percore.json, a handful of episodes. A placement is measured once
 * (the worker's run count, pl_ort_stats, says so), the plan DRL returns carries the latency
 * the worker measured for it, and a worker killed mid-search stops the search with a clear
 * error. Needs onnxruntime-node from `make deps`. TMPDIR is a folder of the test's own, so
 * that it can check that no measurement, failed or not, leaves its split behind once the
 * worker stops (the worker keeps the split it has loaded: it reloads it after a restart). */
#include "testutil.h"

#include "placer/place.h"
#include "placer/runtime.h"
#include "placer/trial.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE "build/ort-cache"
#define LOCAL "examples/clusters/local-cpu-percore.json"
#define TALOS "examples/clusters/talos-1cpu-2gpu.json"
#define GCN "models/gcn_cora.onnx"
#define REPEAT 3 /* the worker's default timed runs per measurement */

static char tmpdir[64];

/* The test's TMPDIR holds nothing: no run left a folder behind. */
static void expect_tmp_empty(void)
{
    tu_expect_empty_dir(tmpdir);
}

static long worker_runs(pl_trial_worker *w)
{
    long loads, runs;
    pl_err err = {""};
    if (pl_ort_stats(pl_trial_ort_client(w), &loads, &runs, &err) < 0) fail_msg("%s", err.msg);
    return runs;
}

typedef struct fixture {
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k;
    pl_trial_worker *w;
} fixture;

static void open_fixture(fixture *f, const char *cluster)
{
    pl_err err = {""};
    f->g = tu_load(GCN);
    f->c = pl_cluster_load(cluster, &err);
    if (!f->c) fail_msg("%s", err.msg);
    f->k = tu_cost(f->g, f->c);
    f->w = pl_trial_ort_new(&(pl_trial_ort_opts){.model_path = GCN, .cache_dir = CACHE});
    if (pl_trial_start(f->w, &err) < 0) fail_msg("%s", err.msg);
}

static void close_fixture(fixture *f)
{
    pl_trial_worker_free(f->w);
    pl_cost_free(f->k), pl_cluster_free(f->c), pl_graph_free(f->g);
}

/* The first half of the ops (topological order) on cpu0, the rest on cpu1. */
static pl_plan *half_plan(const fixture *f, int cut)
{
    pl_plan *p = pl_plan_new(f->g->n_ops, f->c->n_devs);
    for (int t = 0; t < f->g->n_ops; t++)
        p->dev[f->g->topo[t]] = t < cut ? 0 : 1;
    return p;
}

/* A placement is run once (REPEAT timed runs), a second ask is answered from the cache with
 * the same latency; another placement is run; the whole model's trial still works after. */
static void test_measure_plan_cached(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, LOCAL);
    pl_err err = {""};
    pl_plan *a = half_plan(&f, 3), *b = half_plan(&f, 5);
    long r0 = worker_runs(f.w), measured, hits;
    double ta, ta2, tb;
    if (pl_trial_measure_plan(f.w, f.g, f.c, a, &ta, &err) < 0) fail_msg("%s", err.msg);
    assert_true(ta > 0 && isfinite(ta));
    assert_int_equal(worker_runs(f.w), r0 + REPEAT);
    if (pl_trial_measure_plan(f.w, f.g, f.c, a, &ta2, &err) < 0) fail_msg("%s", err.msg);
    assert_true(ta2 == ta);
    assert_int_equal(worker_runs(f.w), r0 + REPEAT);
    if (pl_trial_measure_plan(f.w, f.g, f.c, b, &tb, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(worker_runs(f.w), r0 + 2 * REPEAT);
    pl_trial_measure_stats(f.w, &measured, &hits);
    assert_int_equal(measured, 2), assert_int_equal(hits, 1);
    /* the stages replaced the whole model in the process: a trial loads it again */
    pl_trial_out out;
    if (pl_trial_run(f.w, f.c, &out, &err) < 0) fail_msg("%s", err.msg);
    assert_true(out.runs && out.latency_s > 0);
    pl_plan_free(out.plan);
    expect_tmp_empty(); /* the last plan's stages went with the whole model's reload */
    pl_plan_free(a), pl_plan_free(b);
    close_fixture(&f);
}

/* Only CPU devices run here: a plan with an op on a GPU is refused, naming it. */
static void test_measure_gpu_refused(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, TALOS);
    pl_err err = {""};
    pl_plan *p = pl_plan_new(f.g->n_ops, f.c->n_devs);
    int gpu = -1;
    for (int d = 0; d < f.c->n_devs; d++)
        if (f.c->devs[d].kind == PL_DEV_GPU) gpu = d;
    assert_true(gpu >= 0);
    p->dev[f.g->topo[f.g->n_ops - 1]] = gpu;
    double t;
    assert_int_equal(pl_trial_measure_plan(f.w, f.g, f.c, p, &t, &err), -1);
    assert_contains(err.msg, "measuring a plan of " GCN ": op '");
    assert_contains(err.msg, "a gpu: only CPU devices run on this machine");
    assert_true(isinf(t));
    assert_int_equal(pl_trial_measure_check(f.c, &err), -1);
    assert_contains(err.msg, "is a gpu");
    pl_plan_free(p);
    close_fixture(&f);
}

/* pl_place_opts.measure through the worker, every answer recorded; the worker is killed
 * before the measurement numbered kill_at (from 1; 0: never). */
typedef struct hook {
    fixture *f;
    int calls, kill_at;
    double best;
} hook;

static double measure(const pl_plan *p, void *user, pl_err *err)
{
    hook *h = user;
    if (++h->calls == h->kill_at)
        assert_int_equal(kill(pl_ort_pid(pl_trial_ort_client(h->f->w)), SIGKILL), 0);
    double t;
    if (pl_trial_measure_plan(h->f->w, h->f->g, h->f->c, p, &t, err) < 0) return -1;
    h->best = fmin(h->best, t);
    return t;
}

/* 8 measured episodes after the baselines (2 single-device placements, expert-layers): 11
 * measurements asked, each distinct placement run once; the plan returned carries the best latency
 * measured, which is what the worker says (from its cache) for that placement. */
static void test_measured_drl(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    fixture f;
    open_fixture(&f, LOCAL);
    hook h = {.f = &f, .best = INFINITY};
    pl_place_opts o = {.seed = 1, .iterations = 8, .measure = measure, .measure_user = &h};
    pl_plan *p = pl_plan_new(f.k->n_ops, f.k->n_devs);
    long r0 = worker_runs(f.w), measured, hits;
    if (pl_place(pl_algo_find("drl"), f.k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(h.calls, 3 + 8); /* 2 single-device, expert-layers, 8 episodes */
    pl_trial_measure_stats(f.w, &measured, &hits);
    assert_int_equal(measured + hits, 11);
    assert_int_equal(worker_runs(f.w), r0 + REPEAT * measured);
    assert_true(p->measured_s == h.best);
    double again;
    if (pl_trial_measure_plan(f.w, f.g, f.c, p, &again, &err) < 0) fail_msg("%s", err.msg);
    assert_true(again == p->measured_s);
    assert_int_equal(worker_runs(f.w), r0 + REPEAT * measured); /* from the cache */
    pl_plan_free(p);
    close_fixture(&f);
    expect_tmp_empty();
}

/* The worker killed before the 4th measurement: the search stops with the worker's error,
 * naming the episode, and leaves no split behind. */
static void test_killed_worker_stops_drl(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    fixture f;
    open_fixture(&f, LOCAL);
    hook h = {.f = &f, .best = INFINITY, .kill_at = 4};
    pl_place_opts o = {.seed = 1, .iterations = 8, .measure = measure, .measure_user = &h};
    pl_plan *p = pl_plan_new(f.k->n_ops, f.k->n_devs);
    assert_int_equal(pl_place(pl_algo_find("drl"), f.k, &o, p, &err), -1);
    /* the first placement not in the cache after the kill fails (seed 1: the 4th itself) */
    assert_true(h.calls >= 4 && h.calls < 3 + 8);
    assert_contains(err.msg, "drl: episode ");
    assert_contains(err.msg, ": measuring a plan of " GCN ": onnxruntime worker");
    assert_contains(err.msg, "is lost"); /* not "restarted": the search stops here */
    assert_null(strstr(err.msg, "restart"));
    pl_plan_free(p);
    close_fixture(&f);
    expect_tmp_empty();
}

static int setup(void **state)
{
    (void)state;
    if (tu_ort_setup() < 0) return -1;
    return tu_tmpdir_begin(tmpdir, sizeof tmpdir, "placer-measured");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_end(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measure_plan_cached),
        cmocka_unit_test(test_measure_gpu_refused),
        cmocka_unit_test(test_measured_drl),
        cmocka_unit_test(test_killed_worker_stops_drl),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
