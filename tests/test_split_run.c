/* test_split_run.c: the stages of a split, run one after the other with onnxruntime, give the
 * whole model's outputs (issue 6): for resnet50, inception_v3, bert_base and rnnlm_unrolled,
 * split by a HEFT and an expert plan on moirai-intra-server, within 1e-4 relative on random
 * inputs. Needs onnxruntime-node from `make deps`: without it the tests fail and say so. One
 * worker serves the whole file, so the whole model is loaded once for its two plans. */
#include "testutil.h"

#include "placer/place.h"
#include "placer/runtime.h"
#include "placer/split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ORT_PKG "build/npm/node_modules/onnxruntime-node/package.json"
#define CACHE "build/ort-cache"
#define INTRA "examples/clusters/moirai-intra-server.json"
#define TOL 1e-4

static pl_ort *worker;

static pl_plan *make_plan(const pl_graph *g, const char *algo)
{
    return tu_plan(g, INTRA, algo);
}

static int devices_used(const pl_stages *s)
{
    int used = 0;
    for (int j = 0; j < s->n; j++) {
        bool seen = false;
        for (int i = 0; i < j; i++)
            seen |= s->st[i].dev == s->st[j].dev;
        used += !seen;
    }
    return used;
}

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

/* Splits `model` by a plan from `algo`, runs the stages and the model, compares. */
static void split_run(const char *model, const char *algo, int min_stages)
{
    double t0 = pl_now();
    pl_graph *g = tu_load(model);
    pl_plan *p = make_plan(g, algo);
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
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
    if (rc < 0) fail_msg("%s/%s: %s", model, algo, err.msg);
    printf("  %-28s %-6s %2d stages on %d devices, %d outputs, max rel %.2e, model %.3f s, "
           "stages %.3f s, all %.1f s\n",
           model, algo, s.n, devices_used(&s), r.n_outputs, r.max_rel, r.reference_s, r.stages_s,
           pl_now() - t0);
    check_result(model, algo, &r);
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

static int setup(void **state)
{
    (void)state;
    if (access(ORT_PKG, R_OK) != 0) {
        fprintf(stderr, "onnxruntime-node is not installed (%s is missing): run `make deps`\n",
                ORT_PKG);
        return -1;
    }
    pl_err err = {""};
    worker = pl_ort_start(&(pl_ort_opts){.timeout_s = 600}, &err);
    if (!worker) fprintf(stderr, "%s\n", err.msg);
    return worker ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    pl_ort_stop(worker);
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
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
