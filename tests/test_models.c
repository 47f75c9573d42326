/* test_models.c: the model zoo and real third-party models, read completely and correctly.
 * Expected counts come from outside placer's C code: models/zoo.json (recorded by the
 * export script with the onnx package) and tools/onnx_facts.py (run here on third-party
 * files). */
#include "testutil.h"

#include <glob.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *zoo_in(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/zoo.json", dir);
    json_error_t e;
    json_t *z = json_load_file(path, 0, &e);
    if (!z) fail_msg("%s: %s (line %d)", path, e.text, e.line);
    return z;
}

static void check_io(const pl_graph *g, const int *idx, int n, json_t *want, const char *model)
{
    assert_int_equal(n, (int)json_array_size(want));
    for (int k = 0; k < n; k++) {
        const pl_tensor *t = &g->tensors[idx[k]];
        json_t *w = json_array_get(want, k), *shape = json_object_get(w, "shape");
        assert_string_equal(t->name, json_string_value(json_object_get(w, "name")));
        if (t->rank != (int)json_array_size(shape)) fail_msg("%s: %s rank", model, t->name);
        for (int d = 0; d < t->rank; d++)
            assert_int_equal(t->dims[d], json_integer_value(json_array_get(shape, d)));
    }
}

static void check_histogram(const pl_graph *g, json_t *hist, const char *model)
{
    const char *type;
    json_t *count;
    json_object_foreach(hist, type, count)
    {
        int n = 0;
        for (int i = 0; i < g->n_ops; i++)
            n += !strcmp(g->ops[i].type, type);
        if (n != json_integer_value(count))
            fail_msg("%s: %d %s ops, onnx counts %lld", model, n, type,
                     (long long)json_integer_value(count));
    }
}

/* Every model of dir/zoo.json (dir/NAME.onnx): op counts, parameters, I/O shapes and the op
 * histogram as the onnx package counted them; every tensor's size known; no unknown op. */
static void check_zoo(const char *dir, int n_models)
{
    json_t *z = zoo_in(dir), *models = json_object_get(z, "models"), *m;
    const char *name;
    int n = 0;
    json_object_foreach(models, name, m)
    {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
        pl_graph *g = tu_load(path);
        pl_graph_summary s;
        pl_graph_summarize(g, &s);
        assert_int_equal(s.n_ops, json_integer_value(json_object_get(m, "ops")));
        assert_int_equal(s.n_ops_total, json_integer_value(json_object_get(m, "ops_total")));
        assert_int_equal(s.n_params, json_integer_value(json_object_get(m, "params")));
        assert_int_equal(s.param_bytes, json_integer_value(json_object_get(m, "param_bytes")));
        assert_int_equal(g->info.opset, json_integer_value(json_object_get(m, "opset")));
        check_io(g, g->inputs, g->n_inputs, json_object_get(m, "inputs"), name);
        check_io(g, g->outputs, g->n_outputs, json_object_get(m, "outputs"), name);
        check_histogram(g, json_object_get(m, "op_histogram"), name);
        if (s.n_unknown_ops || s.n_unknown_shape)
            fail_msg("%s: %d unknown ops, %d tensors of unknown size", name, s.n_unknown_ops,
                     s.n_unknown_shape);
        for (int i = 0; i < g->n_ops; i++)
            if (g->ops[i].flags & PL_OP_SHAPE_UNKNOWN) fail_msg("%s: op %s", name, g->ops[i].name);
        pl_graph_summary_free(&s);
        pl_graph_free(g);
        n++;
    }
    assert_int_equal(n, n_models);
    json_decref(z);
}

static void test_zoo_counts(void **state)
{
    (void)state;
    check_zoo("models", 12);
}

/* The Talos paper's CNNs (models/talos/, tools/export_talos_models.py), kept apart from the
 * zoo so that the tests and benches over the zoo's folder do not change. */
static void test_talos_models(void **state)
{
    (void)state;
    check_zoo("models/talos", 4);
}

/* FLOPs of named layers of dir's models, as recorded from the formulas at export time; how
 * many were checked. */
static int check_layer_flops(const char *dir)
{
    json_t *z = zoo_in(dir), *models = json_object_get(z, "models"), *m;
    const char *name;
    int checked = 0;
    json_object_foreach(models, name, m)
    {
        char path[256];
        snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
        pl_graph *g = tu_load(path);
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(m, "flops_check"), k, c)
        {
            const char *node = json_string_value(json_object_get(c, "node"));
            int op = pl_graph_find_op(g, node);
            if (op < 0) fail_msg("%s: no op %s", name, node);
            double want = json_number_value(json_object_get(c, "flops"));
            if (fabs(g->ops[op].flops - want) > 1e-9 * want)
                fail_msg("%s %s: %.0f FLOPs, expected %.0f", name, node, g->ops[op].flops, want);
            assert_int_equal(g->ops[op].cls, PL_CLASS_DENSE);
            checked++;
        }
        pl_graph_free(g);
    }
    json_decref(z);
    return checked;
}

static void test_zoo_layer_flops(void **state)
{
    (void)state;
    assert_true(check_layer_flops("models") >= 15);
    assert_int_equal(check_layer_flops("models/talos"), 9);
}

/* The same by hand, with the formula written out, for a conv, a grouped conv, and a matmul. */
static void test_hand_computed_flops(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/resnet50.onnx");
    /* conv1: 2·N·Cout·Hout·Wout·(Cin/groups)·Kh·Kw, 224→112 with stride 2 */
    assert_close(g->ops[pl_graph_find_op(g, "/conv1/Conv")].flops,
                 2.0 * 1 * 64 * 112 * 112 * 3 * 7 * 7, 1e-15);
    pl_graph_free(g);
    g = tu_load("models/resnext50_32x4d.onnx");
    /* first grouped 3x3 conv: 128 channels in 32 groups of 4, 56x56 */
    int op = pl_graph_find_op(g, "/layer1/layer1.0/conv2/Conv");
    assert_true(op >= 0);
    assert_close(g->ops[op].flops, 2.0 * 1 * 128 * 56 * 56 * (128 / 32) * 3 * 3, 1e-15);
    pl_graph_free(g);
    g = tu_load("models/bert_base.onnx");
    /* every Q/K/V/output projection is [1,128,768] x [768,768]: 2·128·768·768 */
    int proj = 0;
    for (int i = 0; i < g->n_ops; i++)
        if (!strcmp(g->ops[i].type, "MatMul") && g->ops[i].flops == 2.0 * 128 * 768 * 768) proj++;
    assert_int_equal(proj, 12 * 4);
    pl_graph_free(g);
}

static json_t *oracle(const char *path)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/onnx_facts.py '%s'", path);
    FILE *p = popen(cmd, "r");
    json_error_t e;
    json_t *j = p ? json_loadf(p, 0, &e) : NULL;
    if (p) pclose(p);
    if (!j) fail_msg("tools/onnx_facts.py %s gave no JSON", path);
    return j;
}

/* Real third-party files fetched by tools/fetch_thirdparty.sh (make deps): PaddleOCR keeps
 * its weights in Constant nodes; silero VAD hides its LSTMs inside If subgraphs. */
static void test_thirdparty_models(void **state)
{
    (void)state;
    glob_t gl;
    if (glob("build/thirdparty/*.onnx", 0, NULL, &gl) != 0 || gl.gl_pathc < 6)
        fail_msg("third-party models missing: run tools/fetch_thirdparty.sh (make deps)");
    for (size_t k = 0; k < gl.gl_pathc; k++) {
        const char *path = gl.gl_pathv[k];
        json_t *want = oracle(path);
        pl_graph *g = tu_load(path);
        pl_graph_summary s;
        pl_graph_summarize(g, &s);
        assert_int_equal(s.n_ops, json_integer_value(json_object_get(want, "ops")));
        assert_int_equal(s.n_ops_total, json_integer_value(json_object_get(want, "ops_total")));
        assert_int_equal(s.n_subgraphs, json_integer_value(json_object_get(want, "subgraphs")));
        assert_int_equal(s.n_params, json_integer_value(json_object_get(want, "params")));
        assert_int_equal(s.param_bytes, json_integer_value(json_object_get(want, "param_bytes")));
        if (strstr(path, "silero")) {
            /* the If ops carry their branches' LSTM cost */
            double ctrl = 0;
            for (int i = 0; i < g->n_ops; i++)
                if (g->ops[i].cls == PL_CLASS_CONTROL) ctrl += g->ops[i].flops;
            assert_true(s.n_subgraphs > 0);
            if (!(ctrl > 0.5 * s.flops))
                fail_msg("%s: control ops carry %.0f of %.0f FLOPs", path, ctrl, s.flops);
        }
        pl_graph_summary_free(&s);
        pl_graph_free(g);
        json_decref(want);
    }
    globfree(&gl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_counts),        cmocka_unit_test(test_talos_models),
        cmocka_unit_test(test_zoo_layer_flops),   cmocka_unit_test(test_hand_computed_flops),
        cmocka_unit_test(test_thirdparty_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
