/* test_multi_run.c: several models' shares of one plan run for real (pl_multi_run, issue 15,
 * docs/multi.md "Running it for real"), and the onnxruntime worker's tenants under it
 * (pl_ort_load_tenants): the stages of several models loaded at once, each fed only from its
 * own tenant. gcn_cora (7 ops) and rnnlm (49 ops), the zoo's two smallest files, on
 * examples/clusters/local-cpu-percore.json. Needs onnxruntime-node from `make deps`: without it the
 * tests fail and say so. TMPDIR is a folder of the test's own, so that it can check that every
 * run, failed or not, leaves nothing there. */
#include "testutil.h"

#include "placer/multi.h"
#include "placer/runtime.h"
#include "placer/sim.h"
#include "placer/split.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE "build/ort-cache"
#define LOCAL "examples/clusters/local-cpu-percore.json"
#define TALOS "examples/clusters/talos-1cpu-2gpu.json"
#define GCN "models/gcn_cora.onnx"
#define RNNLM "models/rnnlm.onnx"

static char tmpdir[64];

/* The test's TMPDIR holds nothing: no run left a folder behind. */
static void expect_tmp_empty(void)
{
    tu_expect_empty_dir(tmpdir);
}

/* n models, their union (tenants named by `names`) and its cost on `cluster`. */
typedef struct fixture {
    int n;
    const char *paths[4];
    pl_graph *g[4], *u;
    pl_cluster *c;
    pl_cost *k;
    pl_plan *p;
} fixture;

static void open_fixture(fixture *f, int n, const char *const *paths, const char *const *names,
                         const char *cluster)
{
    pl_err err = {""};
    *f = (fixture){.n = n};
    for (int i = 0; i < n; i++)
        f->paths[i] = paths[i], f->g[i] = tu_load(paths[i]);
    f->u = pl_graph_union(f->g, names, n, &err);
    if (!f->u) fail_msg("%s", err.msg);
    f->c = pl_cluster_load(cluster, &err);
    if (!f->c) fail_msg("%s", err.msg);
    f->k = tu_cost(f->u, f->c);
    f->p = pl_plan_new(f->u->n_ops, f->c->n_devs);
}

/* Tenant i's ops at topological positions [from, to) on device d. */
static void place(fixture *f, int i, int from, int to, int d)
{
    int off = 0;
    for (int j = 0; j < i; j++)
        off += f->g[j]->n_ops;
    for (int t = from; t < to && t < f->g[i]->n_ops; t++)
        f->p->dev[off + f->g[i]->topo[t]] = d;
}

static void close_fixture(fixture *f)
{
    pl_plan_free(f->p);
    pl_cost_free(f->k);
    pl_cluster_free(f->c);
    pl_graph_free(f->u);
    for (int i = 0; i < f->n; i++)
        pl_graph_free(f->g[i]);
}

static int run(fixture *f, pl_multi_run_result *r, pl_err *err)
{
    pl_multi_run_opts o = {.repeat = 3, .warmup = 1, .cache_dir = CACHE, .seed = 1};
    return pl_multi_run(f->g, f->paths, f->n, f->u, f->c, f->k, f->p, &o, r, err);
}

static void expect_sane(const pl_multi_run_result *r, int n_tenants, int n_stages)
{
    assert_int_equal(r->n_tenants, n_tenants);
    assert_int_equal(r->n_stages, n_stages);
    assert_int_equal(r->repeat, 3);
    double sum = 0;
    for (int i = 0; i < n_tenants; i++) {
        if (!(r->completion_s[i] > 0))
            fail_msg("tenant %d completed at %g s", i, r->completion_s[i]);
        sum += r->completion_s[i];
    }
    assert_close(r->toct_s, sum, 1e-12);
    assert_true(r->makespan_s > 0);
}

/* Prints the measurement beside the simulator's prediction (default cost parameters). */
static void report(const fixture *f, const pl_multi_run_result *r)
{
    pl_sim_result sr = {0};
    pl_err err = {""};
    if (pl_simulate(f->k, f->p, &(pl_sim_opts){0}, &sr, &err) < 0) fail_msg("%s", err.msg);
    double toct = 0;
    for (int i = 0; i < r->n_tenants; i++) {
        printf("  %-9s measured %8.3f ms, predicted %8.3f ms\n", f->u->tenant_names[i],
               r->completion_s[i] * 1e3, sr.tenant_end_s[i] * 1e3);
        toct += sr.tenant_end_s[i];
    }
    printf("  %-9s measured %8.3f ms, predicted %8.3f ms (makespan %.3f, %.3f ms; %d stages)\n",
           "TOCT", r->toct_s * 1e3, toct * 1e3, r->makespan_s * 1e3, sr.makespan_s * 1e3,
           r->n_stages);
    pl_sim_result_free(&sr);
}

/* gcn_cora on cpu0 and rnnlm on cpu1: one stage each (nothing crosses devices). */
static void test_two_models(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 2, (const char *[]){GCN, RNNLM}, (const char *[]){"gcn_cora", "rnnlm"}, LOCAL);
    place(&f, 0, 0, 7, 0), place(&f, 1, 0, 49, 1);
    pl_multi_run_result r;
    pl_err err = {""};
    if (run(&f, &r, &err) < 0) fail_msg("%s", err.msg);
    report(&f, &r);
    expect_sane(&r, 2, 2);
    pl_multi_run_result_free(&r);
    expect_tmp_empty();
    close_fixture(&f);
}

/* Union op of tenant i at topological position t. */
static int op_at(const fixture *f, int i, int t)
{
    int off = 0;
    for (int j = 0; j < i; j++)
        off += f->g[j]->n_ops;
    return off + f->g[i]->topo[t];
}

/* gcn_cora twice (two tenants with the same tensor names): tenant a split across both cores,
 * its first three ops (MatMul, Add, MatMul) on cpu0 and the other four on cpu1; tenant b whole
 * on cpu0. cpu0 runs `first` of b's ops, then a's three, then the rest of b's. The schedule cut
 * gives a two stages (the MatMul sends, the Relu receives); b is one stage when first is 0, and
 * two when a's ops run between its own (a session runs one model: the cut where cpu0 passes
 * from b to a and back, pl_plan_schedule_stages). The run cuts where the simulator does: its
 * stage count is the union plan's. */
static void same_model_twice(int first, int stages)
{
    fixture f;
    open_fixture(&f, 2, (const char *[]){GCN, GCN}, (const char *[]){"a", "b"}, LOCAL);
    place(&f, 0, 0, 3, 0), place(&f, 0, 3, 7, 1), place(&f, 1, 0, 7, 0);
    int seq[14], n = 0;
    for (int t = 0; t < first; t++)
        seq[n++] = op_at(&f, 1, t);
    for (int t = 0; t < 7; t++)
        seq[n++] = op_at(&f, 0, t);
    for (int t = first; t < 7; t++)
        seq[n++] = op_at(&f, 1, t);
    pl_plan_set_order(f.p, seq);
    int *stage_of = malloc(sizeof(int) * 14);
    assert_int_equal(pl_plan_schedule_stages(f.u, f.p, stage_of, NULL, NULL), stages);
    free(stage_of);
    pl_multi_run_result r;
    pl_err err = {""};
    if (run(&f, &r, &err) < 0) fail_msg("%s", err.msg);
    report(&f, &r);
    expect_sane(&r, 2, stages);
    pl_multi_run_result_free(&r);
    expect_tmp_empty();
    close_fixture(&f);
}

static void test_same_model_twice(void **state)
{
    (void)state;
    same_model_twice(0, 3);
    same_model_twice(2, 4);
}

/* The refined Talos plan of gcn_cora + rnnlm + gcn_cora that ran 30 times slower than
 * predicted (docs/multi.md, "Interleaved models"): b, the second gcn_cora, starts with its
 * first two ops (MatMul, Add) on cpu1 after rnnlm's Constants and before the rest of rnnlm,
 * which holds cpu1 for about 0.2 s, and ends on cpu0 after a. The simulator has b end long before
 * rnnlm; so must the run, whose cpu1 thread ran rnnlm's stage first when a stage's start was its
 * Constants' (0). Checked by the order on cpu1, not by time (under the sanitizers, beside another
 * test binary, gcn_cora took 67-98 ms where it takes 8): b's stage there ends before rnnlm's
 * longest stage there starts, in the measured medians as in every round. */
static void test_small_model_not_held_behind(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 3, (const char *[]){GCN, RNNLM, GCN}, (const char *[]){"a", "rnnlm", "b"},
                 LOCAL);
    place(&f, 0, 0, 7, 0), place(&f, 1, 0, 49, 1), place(&f, 2, 0, 2, 1), place(&f, 2, 2, 7, 0);
    int seq[63], n = 0; /* cpu1: rnnlm's Constants (they take no time), b's two ops, rnnlm */
    for (int t = 0; t < 49; t++)
        if (!strcmp(f.u->ops[op_at(&f, 1, t)].type, "Constant")) seq[n++] = op_at(&f, 1, t);
    for (int t = 0; t < 2; t++)
        seq[n++] = op_at(&f, 2, t);
    for (int t = 0; t < 7; t++)
        seq[n++] = op_at(&f, 0, t);
    for (int t = 2; t < 7; t++)
        seq[n++] = op_at(&f, 2, t);
    for (int t = 0; t < 49; t++)
        if (strcmp(f.u->ops[op_at(&f, 1, t)].type, "Constant")) seq[n++] = op_at(&f, 1, t);
    pl_plan_set_order(f.p, seq);
    pl_multi_run_result r;
    pl_err err = {""};
    if (run(&f, &r, &err) < 0) fail_msg("%s", err.msg);
    report(&f, &r);
    const pl_multi_run_stage *b = NULL, *rn = NULL;
    for (int s = 0; s < r.n_stages; s++) {
        const pl_multi_run_stage *st = &r.stages[s];
        if (st->dev != 1) continue;
        if (st->tenant == 2) b = st;
        if (st->tenant == 1 && (!rn || st->n_ops > rn->n_ops)) rn = st;
    }
    assert_non_null(b), assert_non_null(rn);
    assert_int_equal(b->n_ops, 2);
    if (!(b->end_s <= rn->start_s))
        fail_msg("b's stage on cpu1 ended at %.1f ms, rnnlm's started at %.1f: b waited for rnnlm",
                 b->end_s * 1e3, rn->start_s * 1e3);
    pl_multi_run_result_free(&r);
    expect_tmp_empty();
    close_fixture(&f);
}

/* A plan with an op on a GPU cannot run here: refused before anything is written. */
static void test_gpu_refused(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 2, (const char *[]){GCN, RNNLM}, (const char *[]){"gcn_cora", "rnnlm"}, TALOS);
    place(&f, 1, 5, 6, 1); /* rnnlm's sixth op on gpu0 */
    pl_multi_run_result r;
    pl_err err = {""};
    assert_int_equal(run(&f, &r, &err), -1);
    assert_contains(err.msg, "of model 'rnnlm' is on 'gpu0', a gpu: only the cluster's CPU "
                             "devices run on this machine");
    assert_null(r.completion_s);
    expect_tmp_empty();
    close_fixture(&f);
}

/* A failure after the folder is made (tenant 1's file is not its model: the split writer
 * refuses it) names the tenant and leaves nothing behind. */
static void test_failure_names_tenant(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 2, (const char *[]){GCN, RNNLM}, (const char *[]){"gcn_cora", "rnnlm"}, LOCAL);
    f.paths[1] = "models/resnet50.onnx";
    pl_multi_run_result r;
    pl_err err = {""};
    assert_int_equal(run(&f, &r, &err), -1);
    assert_contains(err.msg, "multi run: model 'rnnlm' (tenant 1, models/resnet50.onnx): ");
    expect_tmp_empty();
    close_fixture(&f);
}

/* Tenants sharing a device run in the simulator's order, here the plan's: gcn_cora twice,
 * both whole on cpu0, b's ops listed before a's. Both are one stage on one device thread, so
 * b's ends before a's starts in every round, whatever the timings; listed the other way, a's
 * ends first. (Without the order both start at 0 in no order the simulator gives, and a,
 * tenant 0, would go first.) */
static void test_device_order_followed(void **state)
{
    (void)state;
    for (int b_first = 1; b_first >= 0; b_first--) {
        fixture f;
        open_fixture(&f, 2, (const char *[]){GCN, GCN}, (const char *[]){"a", "b"}, LOCAL);
        int n = f.g[0]->n_ops, *seq = pl_malloc(2 * (size_t)n * sizeof *seq);
        for (int t = 0; t < n; t++) {
            seq[t] = (b_first ? n : 0) + f.g[0]->topo[t];
            seq[n + t] = (b_first ? 0 : n) + f.g[0]->topo[t];
        }
        pl_plan_set_order(f.p, seq);
        pl_multi_run_result r;
        pl_err err = {""};
        if (run(&f, &r, &err) < 0) fail_msg("%s", err.msg);
        expect_sane(&r, 2, 2);
        if (b_first)
            assert_true(r.completion_s[1] < r.completion_s[0]);
        else
            assert_true(r.completion_s[0] < r.completion_s[1]);
        pl_multi_run_result_free(&r);
        free(seq);
        close_fixture(&f);
    }
    expect_tmp_empty();
}

/* A worker that refuses the load (a fake that answers every request with an error): the
 * message names the tenants, and the split's folder is gone. */
static void test_worker_failure_names_tenants(void **state)
{
    (void)state;
    char dir[64], js[128];
    if (tu_mkdtemp(dir, sizeof dir, "placer-multi-fake") < 0) fail_msg("mkdtemp failed");
    snprintf(js, sizeof js, "%s/refuse.js", dir);
    FILE *out = fopen(js, "w");
    assert_non_null(out);
    fputs("console.log(JSON.stringify({ok: true, ready: true}));\n"
          "require('readline').createInterface({input: process.stdin}).on('line', (l) =>\n"
          "  console.log(JSON.stringify({ok: false, id: JSON.parse(l).id, error: 'boom'})));\n",
          out);
    fclose(out);
    setenv("PLACER_ORT_WORKER", js, 1);
    fixture f;
    open_fixture(&f, 2, (const char *[]){GCN, RNNLM}, (const char *[]){"gcn_cora", "rnnlm"}, LOCAL);
    pl_multi_run_result r;
    pl_err err = {""};
    int rc = run(&f, &r, &err);
    unsetenv("PLACER_ORT_WORKER");
    assert_int_equal(rc, -1);
    assert_contains(err.msg,
                    "multi run (tenants 0 'gcn_cora', 1 'rnnlm'): onnxruntime worker: load: boom");
    expect_tmp_empty();
    close_fixture(&f);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* The inflated stage files of gcn_cora split by `f`'s tenant 0 (schedule cut) in dir. */
static int split_gcn(const fixture *f, const char *dir, char (*paths)[4096])
{
    pl_err err = {""};
    pl_plan *p = pl_plan_new(f->g[0]->n_ops, f->c->n_devs);
    memcpy(p->dev, f->p->dev, (size_t)f->g[0]->n_ops * sizeof *p->dev);
    pl_stages s;
    if (pl_split_stages_by(f->g[0], p, PL_SPLIT_SCHEDULE, &s, &err) < 0 ||
        pl_split_write(GCN, f->g[0], &s, NULL, dir, &err) < 0)
        fail_msg("%s", err.msg);
    char src[512];
    for (int j = 0; j < s.n; j++) {
        snprintf(src, sizeof src, "%s/stage_%02d.onnx", dir, j);
        if (pl_inflate_model(src, CACHE, paths[j], sizeof paths[j], &err) < 0)
            fail_msg("%s", err.msg);
    }
    int n = s.n;
    pl_stages_free(&s);
    pl_plan_free(p);
    return n;
}

/* The outputs of the stages list[0..n) on devs, one run with seed 1 (tenants NULL: alone). */
static void run_stages(pl_ort *w, const char **list, const char **devs, const int *tenants, int n,
                       pl_ort_result *r)
{
    pl_err err = {""};
    if (pl_ort_load_tenants(w, list, devs, tenants, n, &err) < 0 ||
        pl_ort_run(w, 1, 0, r, &err) < 0)
        fail_msg("%s", err.msg);
}

static const pl_ort_output *output_of(const pl_ort_result *r, int tenant)
{
    for (int k = 0; k < r->n_outputs; k++)
        if (r->outputs[k].tenant == tenant) return &r->outputs[k];
    fail_msg("no output of tenant %d", tenant);
    return NULL;
}

/* The worker's tenant scoping. gcn_cora cut in two: s0 (cpu0) makes tensor T that s1 (cpu1)
 * reads. Tenant 0 is s0 then s1; tenant 1 is s1 alone, on cpu1 after tenant 0's s1, so its
 * input T has the name of tenant 0's s0's output but must be random, made from its own
 * generator. So tenant 0's logits are those of s0+s1 run alone, and tenant 1's those of s1 run
 * alone, both with seed 1. Unscoped, tenant 1's s1 would read tenant 0's T (and compute tenant
 * 0's logits), and the two outputs named "logits" would be one. A worker killed and
 * started again loads the tenants again. */
static void test_worker_tenants(void **state)
{
    (void)state;
    fixture f;
    open_fixture(&f, 1, (const char *[]){GCN}, (const char *[]){"gcn_cora"}, LOCAL);
    place(&f, 0, 0, 3, 0), place(&f, 0, 3, 7, 1);
    char dir[64], paths[2][4096];
    if (tu_mkdtemp(dir, sizeof dir, "placer-tenants") < 0) fail_msg("mkdtemp failed");
    char sub[80];
    snprintf(sub, sizeof sub, "%s/split", dir);
    assert_int_equal(split_gcn(&f, sub, paths), 2);
    pl_err err = {""};
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.seed = 1, .timeout_s = 600}, &err);
    if (!w) fail_msg("%s", err.msg);
    pl_ort_result both, s1, multi;
    run_stages(w, (const char *[]){paths[0], paths[1]}, (const char *[]){"cpu0", "cpu1"}, NULL, 2,
               &both);
    run_stages(w, (const char *[]){paths[1]}, (const char *[]){"cpu1"}, NULL, 1, &s1);
    run_stages(w, (const char *[]){paths[0], paths[1], paths[1]},
               (const char *[]){"cpu0", "cpu1", "cpu1"}, (const int[]){0, 0, 1}, 3, &multi);
    assert_int_equal(both.n_outputs, 1), assert_int_equal(s1.n_outputs, 1);
    assert_int_equal(multi.n_outputs, 2);
    const pl_ort_output *t0 = output_of(&multi, 0), *t1 = output_of(&multi, 1);
    assert_string_equal(t0->name, "logits"), assert_string_equal(t1->name, "logits");
    assert_true(t0->finite && t1->finite);
    assert_close(t0->checksum, both.outputs[0].checksum, 1e-6);
    assert_close(t1->checksum, s1.outputs[0].checksum, 1e-6);
    /* the two differ, so the checks above tell one tenant's inputs from the other's */
    assert_true(fabs(both.outputs[0].checksum - s1.outputs[0].checksum) >
                1e-3 * fabs(both.outputs[0].checksum));
    /* each tenant ended after it started, tenant 1's stage after tenant 0's on cpu1 */
    assert_true(multi.end_s[2] >= multi.end_s[1]);
    /* a worker that dies fails its run; the next request starts one with the tenants loaded */
    pl_ort_result again;
    assert_int_equal(kill(pl_ort_pid(w), SIGKILL), 0);
    assert_int_equal(pl_ort_run(w, 1, 0, &again, &err), -1);
    assert_contains(err.msg, "the answer to 'run' is lost");
    if (pl_ort_run(w, 1, 0, &again, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(pl_ort_restarts(w), 1);
    assert_int_equal(again.n_outputs, 2);
    assert_close(output_of(&again, 1)->checksum, s1.outputs[0].checksum, 1e-6);
    pl_ort_result_free(&again);
    pl_ort_result_free(&both), pl_ort_result_free(&s1), pl_ort_result_free(&multi);
    pl_ort_stop(w);
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
    close_fixture(&f);
}

/* Tenants all 0 (or none) is pl_ort_load_on; a negative tenant is refused. */
static void test_worker_tenants_refused(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_ort *w = pl_ort_start(NULL, &err);
    if (!w) fail_msg("%s", err.msg);
    assert_int_equal(
        pl_ort_load_tenants(w, (const char *[]){GCN}, NULL, (const int[]){-1}, 1, &err), -1);
    assert_contains(err.msg, "stage 0: tenant -1 is below 0");
    pl_ort_stop(w);
}

static int setup(void **state)
{
    (void)state;
    if (tu_ort_setup() < 0) return -1;
    return tu_tmpdir_begin(tmpdir, sizeof tmpdir, "placer-multi-run");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_end(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_tenants),
        cmocka_unit_test(test_worker_tenants_refused),
        cmocka_unit_test(test_two_models),
        cmocka_unit_test(test_same_model_twice),
        cmocka_unit_test(test_small_model_not_held_behind),
        cmocka_unit_test(test_device_order_followed),
        cmocka_unit_test(test_worker_failure_names_tenants),
        cmocka_unit_test(test_gpu_refused),
        cmocka_unit_test(test_failure_names_tenant),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
