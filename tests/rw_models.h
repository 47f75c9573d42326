/* rw_models.h: hand-made ONNX models for the rewrite tests (test_rewrite.c, test_optimize.c),
 * built with protobuf-c, and looking at what a rewrite made of them; the split tests
 * (test_split.c, test_split_run.c) build their small models with it too (save_tmp). Static
 * helpers: each test includes this once and uses some. */
#ifndef TESTS_RW_MODELS_H
#define TESTS_RW_MODELS_H

#include "testutil.h"
#include "placer/rewrite.h"
#include "onnx/onnx.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

#define FLT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

/* ---- building models: comma-separated lists, as in test_onnx.c ---- */

static char **words(const char *s, size_t *n)
{
    char **v = NULL;
    *n = 0;
    if (!s || !*s) return NULL;
    char *c = strdup(s), *save = NULL;
    for (char *t = strtok_r(c, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        v = realloc(v, (*n + 1) * sizeof *v);
        v[(*n)++] = strdup(t);
    }
    free(c);
    return v;
}

#define APPEND(arr, n, x)                                                                          \
    do {                                                                                           \
        (arr) = realloc((arr), ((n) + 1) * sizeof *(arr));                                         \
        (arr)[(n)++] = (x);                                                                        \
    } while (0)

static Onnx__ValueInfoProto *vi(const char *name, const char *shape)
{
    Onnx__ValueInfoProto *v = malloc(sizeof *v);
    pl_onnx__value_info_proto__init(v);
    v->name = strdup(name);
    v->type = malloc(sizeof *v->type);
    pl_onnx__type_proto__init(v->type);
    v->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    Onnx__TypeProto__Tensor *tt = malloc(sizeof *tt);
    pl_onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1, tt->elem_type = FLT;
    v->type->tensor_type = tt;
    if (!shape) return v; /* shape left to inference */
    tt->shape = malloc(sizeof *tt->shape);
    pl_onnx__tensor_shape_proto__init(tt->shape);
    size_t n;
    char **d = words(shape, &n);
    for (size_t k = 0; k < n; k++) {
        Onnx__TensorShapeProto__Dimension *dim = malloc(sizeof *dim);
        pl_onnx__tensor_shape_proto__dimension__init(dim);
        if (d[k][0] >= '0' && d[k][0] <= '9') {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = atoll(d[k]);
            free(d[k]);
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = d[k];
        }
        APPEND(tt->shape->dim, tt->shape->n_dim, dim);
    }
    free(d);
    return v;
}

static Onnx__ModelProto *model(void)
{
    Onnx__ModelProto *m = malloc(sizeof *m);
    pl_onnx__model_proto__init(m);
    m->has_ir_version = 1, m->ir_version = 8;
    Onnx__OperatorSetIdProto *o = malloc(sizeof *o);
    pl_onnx__operator_set_id_proto__init(o);
    o->domain = strdup("");
    o->has_version = 1, o->version = 17;
    APPEND(m->opset_import, m->n_opset_import, o);
    m->graph = malloc(sizeof *m->graph);
    pl_onnx__graph_proto__init(m->graph);
    m->graph->name = strdup("t");
    return m;
}

static void input(Onnx__ModelProto *m, const char *name, const char *shape)
{
    APPEND(m->graph->input, m->graph->n_input, vi(name, shape));
}

/* shape "": left to inference */
static void output(Onnx__ModelProto *m, const char *name, const char *shape)
{
    APPEND(m->graph->output, m->graph->n_output, vi(name, *shape ? shape : NULL));
}

static Onnx__NodeProto *node(Onnx__ModelProto *m, const char *type, const char *name,
                             const char *ins, const char *outs)
{
    Onnx__NodeProto *n = malloc(sizeof *n);
    pl_onnx__node_proto__init(n);
    n->op_type = strdup(type);
    n->name = strdup(name);
    n->input = words(ins, &n->n_input);
    n->output = words(outs, &n->n_output);
    APPEND(m->graph->node, m->graph->n_node, n);
    return n;
}

static void ints_attr(Onnx__NodeProto *n, const char *name, const char *vals)
{
    Onnx__AttributeProto *a = malloc(sizeof *a);
    pl_onnx__attribute_proto__init(a);
    a->name = strdup(name);
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    size_t k_n;
    char **w = words(vals, &k_n);
    for (size_t k = 0; k < k_n; k++) {
        APPEND(a->ints, a->n_ints, atoll(w[k]));
        free(w[k]);
    }
    free(w);
    APPEND(n->attribute, n->n_attribute, a);
}

static void int_attr(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = malloc(sizeof *a);
    pl_onnx__attribute_proto__init(a);
    a->name = strdup(name);
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1, a->i = v;
    APPEND(n->attribute, n->n_attribute, a);
}

/* A float initializer of dims `dims`, value i -> base + step * (i mod 7); weightless unless
 * `data`. */
static void init_f(Onnx__ModelProto *m, const char *name, const char *dims, double base,
                   double step, bool data)
{
    Onnx__TensorProto *t = malloc(sizeof *t);
    pl_onnx__tensor_proto__init(t);
    t->name = strdup(name);
    t->has_data_type = 1, t->data_type = FLT;
    size_t n;
    char **w = words(dims, &n);
    int64_t numel = 1;
    for (size_t k = 0; k < n; k++) {
        APPEND(t->dims, t->n_dims, atoll(w[k]));
        numel *= t->dims[k];
        free(w[k]);
    }
    free(w);
    if (data) {
        float *v = malloc((size_t)numel * 4);
        for (int64_t i = 0; i < numel; i++)
            v[i] = (float)(base + step * (double)(i % 7));
        t->has_raw_data = 1, t->raw_data.len = (size_t)numel * 4, t->raw_data.data = (void *)v;
    }
    APPEND(m->graph->initializer, m->graph->n_initializer, t);
}

static void init_i(Onnx__ModelProto *m, const char *name, const char *vals, bool scalar)
{
    Onnx__TensorProto *t = malloc(sizeof *t);
    pl_onnx__tensor_proto__init(t);
    t->name = strdup(name);
    t->has_data_type = 1, t->data_type = I64;
    size_t n;
    char **w = words(vals, &n);
    if (!scalar) APPEND(t->dims, t->n_dims, (int64_t)n);
    int64_t *v = malloc(n * 8);
    for (size_t k = 0; k < n; k++)
        v[k] = atoll(w[k]), free(w[k]);
    free(w);
    t->has_raw_data = 1, t->raw_data.len = n * 8, t->raw_data.data = (void *)v;
    APPEND(m->graph->initializer, m->graph->n_initializer, t);
}

/* v's element type (a TensorProto.DataType), for a model of other than float. */
static void elem_type(Onnx__ValueInfoProto *v, int dt)
{
    v->type->tensor_type->elem_type = dt;
}

/* An opset import of `domain` (ops of another domain than ONNX's need one). */
static void opset(Onnx__ModelProto *m, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = malloc(sizeof *o);
    pl_onnx__operator_set_id_proto__init(o);
    o->domain = strdup(domain);
    o->has_version = 1, o->version = version;
    APPEND(m->opset_import, m->n_opset_import, o);
}

/* Packs and frees m into a fresh temporary .onnx file, whose path goes into path. */
static void save_tmp(Onnx__ModelProto *m, char *path, size_t n)
{
    size_t len = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(len);
    pl_onnx__model_proto__pack(m, buf);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    snprintf(path, n, "%s", tu_tmpfile(buf, len, ".onnx"));
    free(buf);
}

/* x [batch, seq, 64] -> MatMul mm1 -> a -> Relu r -> MatMul mm2 -> y (no shape declared),
 * weightless, saved to a fresh temporary file (its path into path): a model of symbolic dims
 * whose tensors have sizes only once --dim binds them. */
static void symbolic_chain(char *path, size_t n)
{
    Onnx__ModelProto *m = model();
    input(m, "x", "batch,seq,64");
    init_f(m, "w1", "64,128", 0, 0, false);
    init_f(m, "w2", "128,32", 0, 0, false);
    node(m, "MatMul", "mm1", "x,w1", "a");
    node(m, "Relu", "r", "a", "ra");
    node(m, "MatMul", "mm2", "ra,w2", "y");
    output(m, "y", "");
    save_tmp(m, path, n);
}

/* Packs and frees m, then loads it as a rewrite model (must load). */
static pl_rw_model *load(Onnx__ModelProto *m)
{
    size_t len = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(len);
    pl_onnx__model_proto__pack(m, buf);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    pl_err err = {""};
    pl_rw_model *r = pl_rw_load_buffer(buf, len, "t.onnx", &err);
    free(buf);
    if (!r) fail_msg("%s", err.msg);
    return r;
}

/* ---- looking at a model ---- */

/* MatMul(a, B) → Add(·, C): matmul_add_gemm's site; data: B and C hold values (else
 * weightless). */
static pl_rw_model *matmul_add(bool data, const char *a_shape, const char *b_dims,
                               const char *c_dims)
{
    Onnx__ModelProto *m = model();
    input(m, "a", a_shape);
    init_f(m, "B", b_dims, 0.1, 0.05, data);
    init_f(m, "C", c_dims, -0.2, 0.1, data);
    node(m, "MatMul", "mm", "a,B", "p");
    node(m, "Add", "add", "p,C", "y");
    output(m, "y", "");
    return load(m);
}

static Onnx__ModelProto *unpack(const pl_rw_model *m)
{
    size_t len;
    void *buf = pl_rw_pack(m, &len);
    Onnx__ModelProto *p = pl_onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    return p;
}

/* "Conv,Split": the node types in file order. */
static void expect_ops(const pl_rw_model *m, const char *want)
{
    Onnx__ModelProto *p = unpack(m);
    char got[512] = "";
    for (size_t i = 0; i < p->graph->n_node; i++) {
        if (i) strcat(got, ",");
        strcat(got, p->graph->node[i]->op_type);
    }
    pl_onnx__model_proto__free_unpacked(p, NULL);
    assert_string_equal(got, want);
}

/* The dims of the initializer node `type` reads as input k, e.g. "4,3,3,3", and its values. */
static void expect_init(const pl_rw_model *m, const char *type, int k, const char *dims,
                        float *vals, int n_vals)
{
    Onnx__ModelProto *p = unpack(m);
    const Onnx__NodeProto *nd = NULL;
    for (size_t i = 0; i < p->graph->n_node && !nd; i++)
        if (!strcmp(p->graph->node[i]->op_type, type)) nd = p->graph->node[i];
    assert_non_null(nd);
    assert_true((size_t)k < nd->n_input);
    const Onnx__TensorProto *t = NULL;
    for (size_t i = 0; i < p->graph->n_initializer; i++)
        if (!strcmp(p->graph->initializer[i]->name, nd->input[k])) t = p->graph->initializer[i];
    assert_non_null(t);
    char got[128] = "";
    for (size_t d = 0; d < t->n_dims; d++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "",
                 (long long)t->dims[d]);
    assert_string_equal(got, dims);
    if (vals) {
        assert_true(t->raw_data.len >= (size_t)n_vals * 4);
        memcpy(vals, t->raw_data.data, (size_t)n_vals * 4);
    }
    pl_onnx__model_proto__free_unpacked(p, NULL);
}

static int n_sites(const pl_rw_model *m, const char *rule)
{
    pl_rw_site *s;
    int n;
    pl_err err = {""};
    if (pl_rw_find(m, NULL, pl_rw_rule_index(rule), &s, &n, &err) < 0) fail_msg("%s", err.msg);
    pl_rw_sites_free(s, n);
    return n;
}

/* Applies the only site of `rule`; returns the new model (m is freed). */
static pl_rw_model *apply_one(pl_rw_model *m, const char *rule)
{
    pl_rw_site *s;
    int n;
    pl_err err = {""};
    int r = pl_rw_rule_index(rule);
    assert_true(r >= 0);
    if (pl_rw_find(m, NULL, r, &s, &n, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(n, 1);
    pl_rw_model *out = pl_rw_apply(m, NULL, &s[0], &err);
    if (!out) fail_msg("%s", err.msg);
    pl_rw_sites_free(s, n);
    pl_graph *g = pl_rw_graph(out, NULL, &err); /* what comes out loads and infers */
    if (!g) fail_msg("%s", err.msg);
    pl_graph_free(g);
    pl_rw_free(m);
    return out;
}

#pragma GCC diagnostic pop

#endif
