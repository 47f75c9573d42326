/* test_onnx.c: the ONNX reader. Models are built here as protobuf-c structs, packed, and read
 * back through pl_onnx_load_buffer, so each test states exactly what is in its file. */
#include "testutil.h"

#include "onnx/onnx.pb-c.h"
#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/runtime.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- building models: everything is malloc'd, so free_unpacked frees a built model ---- */

#define PUSH(arr, n, x)                                                                            \
    do {                                                                                           \
        (arr) = realloc((arr), ((n) + 1) * sizeof *(arr));                                         \
        (arr)[(n)++] = (x);                                                                        \
    } while (0)

static char *sd(const char *s)
{
    return strdup(s);
}

/* "a,b" -> {"a", "b"}; ",b" -> {"", "b"}; "" -> {} */
static void split(const char *spec, char ***out, size_t *n)
{
    if (!spec || !*spec) return;
    for (const char *p = spec;;) {
        const char *q = strchr(p, ',');
        PUSH(*out, *n, strndup(p, q ? (size_t)(q - p) : strlen(p)));
        if (!q) break;
        p = q + 1;
    }
}

/* "2,-3" appended to the int64 array (*out, *n) */
static void split_ints(const char *spec, int64_t **out, size_t *n)
{
    char **toks = NULL;
    size_t k = 0;
    split(spec, &toks, &k);
    for (size_t j = 0; j < k; j++) {
        PUSH(*out, *n, strtoll(toks[j], NULL, 10));
        free(toks[j]);
    }
    free(toks);
}

static Onnx__GraphProto *mk_graph(const char *name)
{
    Onnx__GraphProto *g = malloc(sizeof *g);
    pl_onnx__graph_proto__init(g);
    g->name = sd(name);
    return g;
}

static void set_opset(Onnx__ModelProto *m, const char *domain, int64_t v)
{
    Onnx__OperatorSetIdProto *o = malloc(sizeof *o);
    pl_onnx__operator_set_id_proto__init(o);
    o->domain = sd(domain);
    o->has_version = 1;
    o->version = v;
    PUSH(m->opset_import, m->n_opset_import, o);
}

static Onnx__ModelProto *mk_model(Onnx__GraphProto *g)
{
    Onnx__ModelProto *m = malloc(sizeof *m);
    pl_onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->producer_name = sd("test");
    m->producer_version = sd("1.0");
    set_opset(m, "", 17);
    m->graph = g;
    return m;
}

/* shape "1,batch,3": numbers are dim_value, names dim_param; "" is a scalar, NULL no shape */
static Onnx__TypeProto *mk_type(int dtype, const char *shape)
{
    Onnx__TypeProto *tp = malloc(sizeof *tp);
    pl_onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = malloc(sizeof *tt);
    pl_onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = dtype;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    if (!shape) return tp;
    tt->shape = malloc(sizeof *tt->shape);
    pl_onnx__tensor_shape_proto__init(tt->shape);
    char **toks = NULL;
    size_t n = 0;
    split(shape, &toks, &n);
    for (size_t k = 0; k < n; k++) {
        Onnx__TensorShapeProto__Dimension *d = malloc(sizeof *d);
        pl_onnx__tensor_shape_proto__dimension__init(d);
        if (toks[k][0] == '-' || (toks[k][0] >= '0' && toks[k][0] <= '9')) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = strtoll(toks[k], NULL, 10);
            free(toks[k]);
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = toks[k];
        }
        PUSH(tt->shape->dim, tt->shape->n_dim, d);
    }
    free(toks);
    return tp;
}

static Onnx__ValueInfoProto *mk_vi(const char *name, int dtype, const char *shape)
{
    Onnx__ValueInfoProto *vi = malloc(sizeof *vi);
    pl_onnx__value_info_proto__init(vi);
    vi->name = sd(name);
    vi->type = mk_type(dtype, shape);
    return vi;
}

static void add_input(Onnx__GraphProto *g, const char *name, int dtype, const char *shape)
{
    PUSH(g->input, g->n_input, mk_vi(name, dtype, shape));
}

static void add_output(Onnx__GraphProto *g, const char *name, int dtype, const char *shape)
{
    PUSH(g->output, g->n_output, mk_vi(name, dtype, shape));
}

static Onnx__NodeProto *add_node(Onnx__GraphProto *g, const char *type, const char *name,
                                 const char *ins, const char *outs)
{
    Onnx__NodeProto *n = malloc(sizeof *n);
    pl_onnx__node_proto__init(n);
    n->op_type = sd(type);
    if (name) n->name = sd(name);
    split(ins, &n->input, &n->n_input);
    split(outs, &n->output, &n->n_output);
    PUSH(g->node, g->n_node, n);
    return n;
}

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = malloc(sizeof *a);
    pl_onnx__attribute_proto__init(a);
    a->name = sd(name);
    a->has_type = 1;
    a->type = type;
    PUSH(n->attribute, n->n_attribute, a);
    return a;
}

static void add_graph_attr(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g)
{
    add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = g;
}

/* dims "2,3" ("" for a scalar); no payload until one is given */
static Onnx__TensorProto *mk_tensor(const char *name, int dtype, const char *dims)
{
    Onnx__TensorProto *t = malloc(sizeof *t);
    pl_onnx__tensor_proto__init(t);
    if (name) t->name = sd(name);
    t->has_data_type = 1;
    t->data_type = dtype;
    split_ints(dims, &t->dims, &t->n_dims);
    return t;
}

static void set_raw(Onnx__TensorProto *t, const void *data, size_t len)
{
    t->has_raw_data = 1;
    t->raw_data.len = len;
    t->raw_data.data = malloc(len ? len : 1);
    memcpy(t->raw_data.data, data, len);
}

static Onnx__TensorProto *add_init(Onnx__GraphProto *g, const char *name, int dtype,
                                   const char *dims)
{
    Onnx__TensorProto *t = mk_tensor(name, dtype, dims);
    PUSH(g->initializer, g->n_initializer, t);
    return t;
}

/* ---- loading ---- */

static pl_err last_err;

/* Packs and frees the model, then reads it back; NULL (with last_err) when refused. */
static pl_graph *load_opts(Onnx__ModelProto *m, const pl_load_opts *opts)
{
    size_t len = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(len ? len : 1);
    pl_onnx__model_proto__pack(m, buf);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    last_err.msg[0] = 0;
    pl_graph *g = pl_onnx_load_buffer(buf, len, "test.onnx", opts, &last_err);
    free(buf);
    return g;
}

static pl_graph *must_load(Onnx__ModelProto *m, const pl_load_opts *opts)
{
    pl_graph *g = load_opts(m, opts);
    if (!g) fail_msg("refused: %s", last_err.msg);
    return g;
}

static const char *must_fail(Onnx__ModelProto *m)
{
    pl_graph *g = load_opts(m, NULL);
    if (g) {
        pl_graph_free(g);
        fail_msg("loaded but should have been refused");
    }
    assert_true(last_err.msg[0] != 0);
    return last_err.msg;
}

static void assert_has(const char *msg, const char *part)
{
    if (!strstr(msg, part)) fail_msg("message '%s' does not contain '%s'", msg, part);
}

static pl_tensor *T(const pl_graph *g, const char *name)
{
    int t = pl_graph_find_tensor(g, name);
    if (t < 0) fail_msg("no tensor '%s' in graph '%s'", name, g->name);
    return &g->tensors[t];
}

static pl_op *OP(const pl_graph *g, const char *name)
{
    int i = pl_graph_find_op(g, name);
    if (i < 0) fail_msg("no op '%s' in graph '%s'", name, g->name);
    return &g->ops[i];
}

static bool has_edge(const pl_graph *g, const char *src, const char *dst, const char *tensor)
{
    int s = pl_graph_find_op(g, src), d = pl_graph_find_op(g, dst);
    int t = pl_graph_find_tensor(g, tensor);
    for (int k = 0; k < g->n_edges; k++)
        if (g->edges[k].src == s && g->edges[k].dst == d && g->edges[k].tensor == t) return true;
    return false;
}

static const int FLT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
static const int I64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
static const int BOOL_ = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;

/* ---- tests ---- */

/* x -> A -> a -> B -> b -> C -> c, listed C, A, B */
static Onnx__ModelProto *chain_model(void)
{
    Onnx__GraphProto *g = mk_graph("chain");
    add_input(g, "x", FLT, "1,4");
    add_output(g, "c", FLT, "1,4");
    add_node(g, "Relu", "C", "b", "c");
    add_node(g, "Relu", "A", "x", "a");
    add_node(g, "Sigmoid", "B", "a", "b");
    return mk_model(g);
}

static void test_unsorted_nodes_are_ordered(void **state)
{
    (void)state;
    pl_graph *g = must_load(chain_model(), NULL);
    assert_int_equal(g->n_ops, 3);
    assert_string_equal(g->ops[g->topo[0]].name, "A");
    assert_string_equal(g->ops[g->topo[1]].name, "B");
    assert_string_equal(g->ops[g->topo[2]].name, "C");
    assert_int_equal(g->n_edges, 2);
    assert_true(has_edge(g, "A", "B", "a") && has_edge(g, "B", "C", "b"));
    assert_int_equal(g->n_inputs, 1);
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(T(g, "x")->flags, PL_TENSOR_INPUT);
    assert_int_equal(T(g, "x")->bytes, 16);
    assert_int_equal(T(g, "c")->producer, pl_graph_find_op(g, "C"));
    assert_string_equal(g->name, "chain");
    assert_string_equal(g->info.format, "onnx");
    assert_int_equal(g->info.ir_version, 8);
    assert_int_equal(g->info.opset, 17);
    assert_string_equal(g->info.producer, "test 1.0");
    assert_null(g->path);
    pl_graph_free(g);
}

static void test_cycle_is_refused(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("cyc");
    add_input(g, "x", FLT, "1");
    add_output(g, "b", FLT, "1");
    add_node(g, "Add", "A", "x,b", "a");
    add_node(g, "Relu", "B", "a", "b");
    const char *msg = must_fail(mk_model(g));
    assert_has(msg, "test.onnx: ");
    assert_has(msg, "cycle");
    assert_has(msg, "'A'");
    assert_has(msg, "'B'");
}

static void test_dangling_read_is_refused(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("dangle");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", FLT, "1");
    add_node(g, "Add", "adder", "x,ghost", "y");
    const char *msg = must_fail(mk_model(g));
    assert_has(msg, "test.onnx: ");
    assert_has(msg, "'adder'");
    assert_has(msg, "'ghost'");
}

static void test_output_produced_twice_is_refused(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("twice");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", FLT, "1");
    add_node(g, "Relu", "r1", "x", "y");
    add_node(g, "Relu", "r2", "x", "y");
    assert_has(must_fail(mk_model(g)), "'y'");
}

static void test_constant_nodes_are_weights(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("consts");
    add_input(g, "x", FLT, "2,3");
    add_output(g, "y", FLT, NULL);
    Onnx__NodeProto *n = add_node(g, "Constant", "shape_c", "", "shape");
    Onnx__TensorProto *t = mk_tensor(NULL, I64, "2");
    int64_t v[2] = {3, -1};
    set_raw(t, v, sizeof v);
    add_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
    n = add_node(g, "Constant", "f_c", "", "f");
    Onnx__AttributeProto *a =
        add_attr(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = 2.5f;
    n = add_node(g, "Constant", "ints_c", "", "ints");
    a = add_attr(n, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    for (int k = 0; k < 4; k++)
        PUSH(a->ints, a->n_ints, 10 + k);
    n = add_node(g, "Constant", "big_c", "", "big");
    t = mk_tensor(NULL, FLT, "2,2048"); /* r is [3,2]: the product's inner dims agree */
    float *payload = calloc(64 * 64, sizeof *payload);
    set_raw(t, payload, 64 * 64 * sizeof *payload);
    free(payload);
    add_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
    add_node(g, "Reshape", "reshape", "x,shape", "r");
    add_node(g, "Mul", "mul", "r,f", "m");
    add_node(g, "MatMul", "mm", "m,big", "y");
    add_node(g, "Identity", "id", "ints", "unused");

    pl_graph *pg = must_load(mk_model(g), NULL);
    pl_tensor *s = T(pg, "shape");
    assert_true(s->flags & PL_TENSOR_WEIGHT);
    assert_int_equal(s->dtype, PL_DT_INT64);
    assert_int_equal(s->rank, 1);
    assert_int_equal(s->dims[0], 2);
    assert_int_equal(s->n_ivals, 2);
    assert_int_equal(s->ivals[0], 3);
    assert_int_equal(s->ivals[1], -1);
    assert_int_equal(s->producer, pl_graph_find_op(pg, "shape_c"));
    const pl_attr *va = pl_op_attr(OP(pg, "shape_c"), "value");
    assert_non_null(va);
    assert_int_equal(va->kind, PL_ATTR_TENSOR);
    assert_int_equal(va->tensor, pl_graph_find_tensor(pg, "shape"));
    assert_int_equal(T(pg, "f")->rank, 0);
    assert_int_equal(T(pg, "f")->bytes, 4);
    assert_true(T(pg, "f")->flags & PL_TENSOR_WEIGHT);
    assert_int_equal(T(pg, "ints")->dims[0], 4);
    assert_int_equal(T(pg, "ints")->ivals[3], 13);
    assert_int_equal(T(pg, "big")->bytes, 64 * 64 * 4);
    assert_true(T(pg, "big")->flags & PL_TENSOR_WEIGHT);
    assert_null(T(pg, "big")->ivals);
    assert_true(has_edge(pg, "shape_c", "reshape", "shape"));
    pl_graph_summary sum;
    pl_graph_summarize(pg, &sum);
    assert_int_equal(sum.n_weights, 4);
    assert_int_equal(sum.n_params, 2 + 1 + 4 + 64 * 64);
    pl_graph_summary_free(&sum);
    pl_graph_free(pg);
}

static void test_initializers(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("inits");
    /* the old convention: the initializer W is listed as an input too */
    add_input(g, "x", FLT, "1,8");
    add_input(g, "W", FLT, "8,8");
    add_output(g, "y", FLT, "1,8");
    float w[64] = {0};
    set_raw(add_init(g, "W", FLT, "8,8"), w, sizeof w);
    /* external data: dims and dtype only */
    Onnx__TensorProto *e = add_init(g, "E", FLT, "8,1000");
    e->has_data_location = 1;
    e->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    Onnx__StringStringEntryProto *kv = malloc(sizeof *kv);
    pl_onnx__string_string_entry_proto__init(kv);
    kv->key = sd("location"), kv->value = sd("does-not-exist.bin");
    PUSH(e->external_data, e->n_external_data, kv);
    /* weightless: no payload at all */
    add_init(g, "N", FLT, "8");
    /* small integer initializer, int64_data */
    Onnx__TensorProto *ax = add_init(g, "axes", I64, "2");
    PUSH(ax->int64_data, ax->n_int64_data, 0);
    PUSH(ax->int64_data, ax->n_int64_data, -1);
    /* int32 in int32_data, uint8 in raw_data */
    Onnx__TensorProto *i32 = add_init(g, "i32", ONNX__TENSOR_PROTO__DATA_TYPE__INT32, "1");
    PUSH(i32->int32_data, i32->n_int32_data, -7);
    uint8_t u8v[3] = {1, 200, 255};
    set_raw(add_init(g, "u8", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, "3"), u8v, 3);
    add_node(g, "MatMul", "mm", "x,W", "h");
    add_node(g, "Gemm", "g2", "h,E,N", "h2");
    add_node(g, "ReduceSum", "rs", "h2,axes", "h3");
    add_node(g, "Sum", "y", "h3,i32,u8", "y");

    pl_graph *pg = must_load(mk_model(g), NULL);
    assert_int_equal(pg->n_inputs, 1);
    assert_int_equal(pg->inputs[0], pl_graph_find_tensor(pg, "x"));
    assert_int_equal(T(pg, "W")->flags, PL_TENSOR_WEIGHT);
    assert_int_equal(T(pg, "W")->bytes, 256);
    pl_tensor *et = T(pg, "E");
    assert_int_equal(et->flags, PL_TENSOR_WEIGHT | PL_TENSOR_EXTERNAL);
    assert_int_equal(et->rank, 2);
    assert_int_equal(et->dims[1], 1000);
    assert_int_equal(et->bytes, 32000);
    assert_int_equal(T(pg, "N")->flags, PL_TENSOR_WEIGHT | PL_TENSOR_NO_PAYLOAD);
    assert_int_equal(T(pg, "N")->bytes, 32);
    assert_int_equal(T(pg, "axes")->n_ivals, 2);
    assert_int_equal(T(pg, "axes")->ivals[1], -1);
    assert_int_equal(T(pg, "i32")->ivals[0], -7);
    assert_int_equal(T(pg, "u8")->ivals[1], 200);
    assert_int_equal(T(pg, "u8")->ivals[2], 255);
    pl_graph_free(pg);
}

static void test_sparse_initializer_counts_dense_dims(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("sparse");
    add_input(g, "x", FLT, "4,100");
    add_output(g, "y", FLT, "4,50");
    Onnx__SparseTensorProto *sp = malloc(sizeof *sp);
    pl_onnx__sparse_tensor_proto__init(sp);
    sp->values = mk_tensor("S", FLT, "3");
    float vals[3] = {1, 2, 3};
    set_raw(sp->values, vals, sizeof vals);
    sp->indices = mk_tensor(NULL, I64, "3");
    int64_t idx[3] = {0, 7, 4999};
    set_raw(sp->indices, idx, sizeof idx);
    PUSH(sp->dims, sp->n_dims, 100);
    PUSH(sp->dims, sp->n_dims, 50);
    PUSH(g->sparse_initializer, g->n_sparse_initializer, sp);
    add_node(g, "MatMul", "mm", "x,S", "y");
    pl_graph *pg = must_load(mk_model(g), NULL);
    assert_true(T(pg, "S")->flags & PL_TENSOR_WEIGHT);
    assert_int_equal(T(pg, "S")->dtype, PL_DT_FLOAT);
    assert_int_equal(T(pg, "S")->bytes, 100 * 50 * 4);
    pl_graph_free(pg);
}

static void test_attributes_and_optional_slots(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("attrs");
    add_input(g, "x", FLT, "1,3,8,8");
    add_input(g, "shp", I64, "2");
    add_output(g, "y", FLT, NULL);
    add_output(g, "z", FLT, NULL);
    set_raw(add_init(g, "w", FLT, "4,3,3,3"), (float[108]){0}, 108 * sizeof(float));
    Onnx__NodeProto *n = add_node(g, "Conv", "conv", "x,w,", "c");
    n->domain = sd("ai.onnx");
    Onnx__AttributeProto *a = add_attr(n, "group", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = 1;
    a = add_attr(n, "pads", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    for (int k = 0; k < 4; k++)
        PUSH(a->ints, a->n_ints, 1);
    a = add_attr(n, "auto_pad", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = 6;
    a->s.data = (uint8_t *)sd("NOTSET");
    a = add_attr(n, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = 0.5f;
    a = add_attr(n, "scales", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    PUSH(a->floats, a->n_floats, 1.5f);
    PUSH(a->floats, a->n_floats, 2.0f);
    a = add_attr(n, "names", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    PUSH(a->strings, a->n_strings, ((ProtobufCBinaryData){1, (uint8_t *)sd("a")}));
    /* an IR version 1 attribute: no type, only the value */
    a = add_attr(n, "legacy", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED);
    a->has_type = 0, a->has_i = 1, a->i = 42;
    n = add_node(g, "ConstantOfShape", "cos", "shp", "y");
    Onnx__TensorProto *t = mk_tensor(NULL, FLT, "1");
    set_raw(t, (float[1]){7}, sizeof(float));
    add_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
    add_node(g, "Dropout", "drop", "c", "z,");
    add_node(g, "Split", "split", "c", ",s1");

    pl_graph *pg = must_load(mk_model(g), NULL);
    const pl_op *conv = OP(pg, "conv");
    assert_string_equal(conv->domain, "");
    assert_int_equal(conv->n_inputs, 3);
    assert_int_equal(conv->inputs[2], -1);
    assert_int_equal(pl_op_attr_int(conv, "group", 0), 1);
    const int64_t *pads;
    assert_int_equal(pl_op_attr_ints(conv, "pads", &pads), 4);
    assert_int_equal(pads[3], 1);
    assert_string_equal(pl_op_attr_string(conv, "auto_pad", ""), "NOTSET");
    assert_close(pl_op_attr_float(conv, "alpha", 0), 0.5, 1e-12);
    const pl_attr *sc = pl_op_attr(conv, "scales");
    assert_int_equal(sc->kind, PL_ATTR_FLOATS);
    assert_int_equal(sc->n, 2);
    assert_close(sc->floats[0], 1.5, 1e-12);
    assert_int_equal(pl_op_attr(conv, "names")->kind, PL_ATTR_OTHER);
    assert_int_equal(pl_op_attr_int(conv, "legacy", 0), 42);
    const pl_attr *v = pl_op_attr(OP(pg, "cos"), "value");
    assert_int_equal(v->kind, PL_ATTR_TENSOR);
    assert_true(v->tensor >= 0);
    const pl_tensor *vt = &pg->tensors[v->tensor];
    assert_int_equal(vt->dtype, PL_DT_FLOAT);
    assert_int_equal(vt->rank, 1);
    assert_int_equal(vt->n_consumers, 0);
    const pl_op *drop = OP(pg, "drop"), *split_op = OP(pg, "split");
    assert_int_equal(drop->n_outputs, 2);
    assert_int_equal(drop->outputs[1], -1);
    assert_int_equal(split_op->n_outputs, 2);
    assert_int_equal(split_op->outputs[0], -1);
    assert_int_equal(split_op->outputs[1], pl_graph_find_tensor(pg, "s1"));
    pl_graph_free(pg);
}

/* root: If 'if1' (listed before 'mk', which produces y) with
 *   then: Add(y, x)
 *   else: If 'inner' (reads cond) with then2: Neg(y), else2: outputs y directly */
static Onnx__ModelProto *if_model(const char *then_reads)
{
    Onnx__GraphProto *g = mk_graph("ifs");
    add_input(g, "x", FLT, "2,3");
    add_input(g, "cond", BOOL_, "");
    add_output(g, "out", FLT, NULL);
    Onnx__GraphProto *th = mk_graph("then"), *el = mk_graph("else");
    add_node(th, "Add", "t_add", then_reads, "t_out");
    add_output(th, "t_out", FLT, NULL);
    Onnx__GraphProto *th2 = mk_graph("then2"), *el2 = mk_graph("else2");
    add_node(th2, "Neg", "neg", "y", "a");
    add_output(th2, "a", FLT, NULL);
    add_output(el2, "y", FLT, NULL);
    Onnx__NodeProto *inner = add_node(el, "If", "inner", "cond", "e_out");
    add_graph_attr(inner, "then_branch", th2);
    add_graph_attr(inner, "else_branch", el2);
    add_output(el, "e_out", FLT, NULL);
    Onnx__NodeProto *n = add_node(g, "If", "if1", "cond", "out");
    add_graph_attr(n, "then_branch", th);
    add_graph_attr(n, "else_branch", el);
    add_node(g, "Relu", "mk", "x", "y");
    return mk_model(g);
}

static bool reads(const pl_op *op, int t, bool implicit)
{
    int from = implicit ? op->n_inputs - op->n_implicit : 0;
    int to = implicit ? op->n_inputs : op->n_inputs - op->n_implicit;
    for (int k = from; k < to; k++)
        if (op->inputs[k] == t) return true;
    return false;
}

static void test_subgraph_outer_references(void **state)
{
    (void)state;
    pl_graph *g = must_load(if_model("y,x"), NULL);
    const pl_op *if1 = OP(g, "if1");
    assert_int_equal(if1->n_subgraphs, 2);
    assert_string_equal(if1->subgraph_attr[0], "then_branch");
    assert_string_equal(if1->subgraph_attr[1], "else_branch");
    /* explicit cond, then the implicit y, x (then) and cond (else, via 'inner') */
    assert_int_equal(if1->n_implicit, 3);
    assert_int_equal(if1->n_inputs, 4);
    assert_int_equal(if1->inputs[0], pl_graph_find_tensor(g, "cond"));
    assert_true(reads(if1, pl_graph_find_tensor(g, "y"), true));
    assert_true(reads(if1, pl_graph_find_tensor(g, "x"), true));
    assert_true(reads(if1, pl_graph_find_tensor(g, "cond"), true));
    assert_true(has_edge(g, "mk", "if1", "y"));
    assert_string_equal(g->ops[g->topo[0]].name, "mk");

    const pl_graph *th = if1->subgraphs[0], *el = if1->subgraphs[1];
    assert_ptr_equal(th->parent, g);
    assert_string_equal(th->name, "then");
    assert_int_equal(T(th, "y")->flags, PL_TENSOR_OUTER);
    assert_int_equal(T(th, "x")->flags, PL_TENSOR_OUTER);
    assert_int_equal(T(th, "x")->rank, 2); /* copied from the enclosing graph */
    assert_int_equal(T(th, "x")->dims[1], 3);
    assert_int_equal(OP(th, "t_add")->n_implicit, 0);
    assert_non_null(th->topo);

    /* y comes from the grandparent: 'else' needs it as OUTER and 'inner' as implicit input */
    const pl_op *inner = OP(el, "inner");
    assert_true(T(el, "y")->flags & PL_TENSOR_OUTER);
    assert_true(T(el, "cond")->flags & PL_TENSOR_OUTER);
    assert_int_equal(inner->n_implicit, 1);
    assert_true(reads(inner, pl_graph_find_tensor(el, "y"), true));
    assert_int_equal(T(el, "cond")->consumers[0], pl_graph_find_op(el, "inner"));
    const pl_graph *el2 = inner->subgraphs[1];
    assert_ptr_equal(el2->parent, el);
    assert_int_equal(el2->n_outputs, 1);
    assert_int_equal(T(el2, "y")->flags, PL_TENSOR_OUTER | PL_TENSOR_OUTPUT);
    assert_true(T(inner->subgraphs[0], "y")->flags & PL_TENSOR_OUTER);
    /* the outer tensor is not a weight or input of the subgraph, and not counted twice */
    assert_int_equal(th->n_inputs, 0);
    pl_graph_free(g);
}

static void test_subgraph_unknown_outer_name(void **state)
{
    (void)state;
    const char *msg = must_fail(if_model("y,nope"));
    assert_has(msg, "test.onnx: ");
    assert_has(msg, "'if1'");
    assert_has(msg, "'then_branch'");
    assert_has(msg, "'t_add'");
    assert_has(msg, "'nope'");
}

static void test_loop_body_reads_weight(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("loop");
    add_input(g, "x", FLT, "4");
    add_output(g, "out", FLT, NULL);
    set_raw(add_init(g, "W", FLT, "4"), (float[4]){0}, 4 * sizeof(float));
    set_raw(add_init(g, "M", I64, ""), (int64_t[1]){5}, sizeof(int64_t));
    Onnx__GraphProto *body = mk_graph("body");
    add_input(body, "i", I64, "");
    add_input(body, "c", BOOL_, "");
    add_input(body, "acc", FLT, "4");
    add_node(body, "Identity", "keep", "c", "c_out");
    add_node(body, "Mul", "scale", "acc,W", "acc_out");
    add_output(body, "c_out", BOOL_, "");
    add_output(body, "acc_out", FLT, "4");
    Onnx__NodeProto *n = add_node(g, "Loop", "loop", "M,,x", "out");
    add_graph_attr(n, "body", body);
    pl_graph *pg = must_load(mk_model(g), NULL);
    const pl_op *lp = OP(pg, "loop");
    assert_int_equal(lp->n_inputs, 4);
    assert_int_equal(lp->inputs[1], -1);
    assert_int_equal(lp->n_implicit, 1);
    assert_int_equal(lp->inputs[3], pl_graph_find_tensor(pg, "W"));
    const pl_graph *b = lp->subgraphs[0];
    assert_int_equal(b->n_inputs, 3);
    assert_int_equal(T(b, "W")->flags, PL_TENSOR_OUTER);
    assert_int_equal(T(b, "W")->bytes, 16);
    assert_int_equal(T(pg, "M")->ivals[0], 5);
    /* the weight is counted once, in the root */
    assert_true(T(pg, "W")->flags & PL_TENSOR_WEIGHT);
    pl_graph_free(pg);
}

static void test_symbolic_dims(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("sym");
    add_input(g, "x", FLT, "batch,seq,3");
    add_input(g, "noshape", FLT, NULL);
    add_output(g, "y", FLT, "batch,seq,3");
    add_node(g, "Add", "add", "x,noshape", "y");
    const char *dims[] = {"batch=8", "unused=2"};
    pl_load_opts opts = {.dims = dims, .n_dims = 2, .no_infer = true};
    pl_graph *pg = must_load(mk_model(g), &opts);
    pl_tensor *x = T(pg, "x");
    assert_int_equal(x->rank, 3);
    assert_int_equal(x->dims[0], 8);
    assert_int_equal(x->dims[1], PL_DIM_UNKNOWN);
    assert_int_equal(x->dims[2], 3);
    assert_int_equal(x->bytes, -1);
    assert_int_equal(T(pg, "noshape")->rank, -1);
    assert_int_equal(T(pg, "y")->dims[0], 8);
    bool warned = false, unbound = false;
    for (int k = 0; k < pg->n_warnings_stored; k++) {
        warned |= strstr(pg->warnings[k], "'unused'") != NULL;
        /* the input's unbound dimension makes its ops priced as moving nothing: said */
        unbound |= strstr(pg->warnings[k], "no --dim (or --input) binds ('seq')") != NULL;
    }
    assert_true(warned);
    assert_true(unbound);
    pl_graph_free(pg);
    /* an input shape given whole binds them too: nothing to say (it was said before the
     * shapes were applied) */
    g = mk_graph("sym");
    add_input(g, "x", FLT, "batch,seq,3");
    add_output(g, "y", FLT, "batch,seq,3");
    add_node(g, "Relu", "relu", "x", "y");
    const char *shapes[] = {"x=8,2,3"};
    pl_load_opts given = {.input_shapes = shapes, .n_input_shapes = 1};
    pg = must_load(mk_model(g), &given);
    for (int k = 0; k < pg->n_warnings_stored; k++)
        assert_null(strstr(pg->warnings[k], "symbolic dimensions"));
    pl_graph_free(pg);

    const char *both[] = {"batch=8", "seq=128"};
    opts.dims = both;
    g = mk_graph("sym2");
    add_input(g, "x", FLT, "batch,seq,3");
    add_output(g, "x", FLT, NULL);
    pg = must_load(mk_model(g), &opts);
    assert_int_equal(T(pg, "x")->bytes, 8 * 128 * 3 * 4);
    pl_graph_free(pg);

    const char *bad[] = {"batch"};
    opts.dims = bad, opts.n_dims = 1;
    assert_null(load_opts(mk_model(mk_graph("e")), &opts));
    assert_has(last_err.msg, "'batch'");
}

static void test_bad_dims_and_ranks(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("neg");
    add_input(g, "x", FLT, "2,-3");
    add_output(g, "x", FLT, NULL);
    const char *msg = must_fail(mk_model(g));
    assert_has(msg, "test.onnx: ");
    assert_has(msg, "'x'");
    assert_has(msg, "negative");

    g = mk_graph("neg_init");
    add_output(g, "w", FLT, NULL);
    add_init(g, "w", FLT, "4,-1");
    assert_has(must_fail(mk_model(g)), "'w'");

    g = mk_graph("huge");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", FLT, NULL);
    add_node(g, "Add", "add", "x,h", "y");
    add_init(g, "h", FLT, "4294967296,4294967296,0"); /* empty, and fine */
    Onnx__ModelProto *m = mk_model(g);
    pl_graph_free(must_load(m, NULL));
    g = mk_graph("huge");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", FLT, NULL);
    add_node(g, "Add", "add", "x,h", "y");
    add_init(g, "h", FLT, "4294967296,4294967296,4");
    msg = must_fail(mk_model(g));
    assert_has(msg, "'h'");
    assert_has(msg, "2^48");
    g = mk_graph("huge_vi");
    add_input(g, "x", FLT, "batch,1099511627776,1099511627776");
    add_output(g, "x", FLT, NULL);
    assert_has(must_fail(mk_model(g)), "'x'");

    g = mk_graph("rank");
    char shape[400] = "1";
    for (int k = 0; k < 70; k++)
        strcat(shape, ",1");
    add_input(g, "deep", FLT, shape);
    add_output(g, "deep", FLT, NULL);
    msg = must_fail(mk_model(g));
    assert_has(msg, "'deep'");
    assert_has(msg, "rank");
}

static void test_not_a_model(void **state)
{
    (void)state;
    Onnx__ModelProto *m = mk_model(NULL); /* parses, but has no graph */
    assert_has(must_fail(m), "not an ONNX model");
    m = mk_model(mk_graph("g"));
    m->has_ir_version = 0;
    for (size_t k = 0; k < m->n_opset_import; k++)
        pl_onnx__operator_set_id_proto__free_unpacked(m->opset_import[k], NULL);
    m->n_opset_import = 0;
    assert_has(must_fail(m), "not an ONNX model");

    Onnx__GraphProto *g = mk_graph("g");
    add_node(g, "", "typeless", "", "y");
    assert_has(must_fail(mk_model(g)), "op_type");

    pl_err err = {""};
    const char text[] = "This is a text file, not a model.\nIt has two lines.\n";
    assert_null(pl_onnx_load_buffer(text, sizeof text - 1, "notes.txt", NULL, &err));
    assert_string_equal(err.msg, "notes.txt: not an ONNX model (protobuf parse failed at byte "
                                 "0 of 52, in (unknown field): a wire type protobuf does not "
                                 "have)");
    const char *path = tu_tmpfile(text, sizeof text - 1, ".onnx");
    assert_null(pl_onnx_load(path, NULL, &err));
    assert_has(err.msg, path);
    assert_has(err.msg, "not an ONNX model");
    remove(path);
}

static void test_files(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_null(pl_onnx_load("/nonexistent/model.onnx", NULL, &err));
    assert_string_equal(err.msg, "/nonexistent/model.onnx: cannot open: No such file or directory");
    assert_null(pl_onnx_load_buffer("", 0, "e.onnx", NULL, &err));
    assert_string_equal(err.msg, "e.onnx: empty file");
    char path[256];
    snprintf(path, sizeof path, "%s", tu_tmpfile("", 0, ".onnx"));
    assert_null(pl_onnx_load(path, NULL, &err));
    assert_has(err.msg, "empty file");
    assert_has(tu_load_fails(path), "empty file");
    remove(path);
    /* white space, then '{': the JSON reader's refusal, not the ONNX reader's */
    const char json[] = " \n\t{\"format\": \"not-a-format/9\"}";
    snprintf(path, sizeof path, "%s", tu_tmpfile(json, sizeof json - 1, ".onnx"));
    const char *msg = tu_load_fails(path);
    assert_has(msg, path);
    if (strstr(msg, "ONNX")) fail_msg("ONNX reader chosen for JSON: %s", msg);
    remove(path);
    assert_string_equal(tu_load_fails("/tmp"), "/tmp: cannot read: a folder, not a file");
    assert_null(pl_onnx_load("/tmp", NULL, &err));
    assert_string_equal(err.msg, "/tmp: not a regular file");

    Onnx__ModelProto *m = chain_model();
    size_t len = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(len);
    pl_onnx__model_proto__pack(m, buf);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    snprintf(path, sizeof path, "%s", tu_tmpfile(buf, len, ".onnx"));
    free(buf);
    pl_graph *g = pl_onnx_load(path, NULL, &err);
    assert_non_null(g);
    assert_string_equal(g->path, path);
    assert_int_equal(g->n_ops, 3);
    pl_graph_free(g);
    g = tu_load(path); /* pl_graph_load picks the ONNX reader */
    assert_int_equal(g->n_ops, 3);
    pl_graph_free(g);
    remove(path);
}

/* Every prefix of a model, and every single-byte corruption of it, must either load or be
 * refused with a message; the sanitizers catch anything worse. */
static void test_truncated_and_corrupted(void **state)
{
    (void)state;
    Onnx__ModelProto *m = if_model("y,x");
    size_t len = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(len);
    pl_onnx__model_proto__pack(m, buf);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    int loaded = 0, refused = 0;
    pl_load_opts modes[2] = {{.no_infer = true}, {.no_infer = false}};
    for (int md = 0; md < 2; md++)
        for (size_t cut = 0; cut <= len; cut++) {
            pl_err err = {""};
            pl_graph *g = pl_onnx_load_buffer(buf, cut, "cut.onnx", &modes[md], &err);
            if (g)
                loaded++, pl_graph_free(g);
            else {
                refused++;
                if (strncmp(err.msg, "cut.onnx: ", 10) != 0) fail_msg("bad message '%s'", err.msg);
            }
        }
    assert_true(loaded >= 2); /* the whole model, twice */
    assert_true(refused > (int)len);
    uint8_t *bad = malloc(len);
    for (size_t pos = 0; pos < len; pos++)
        for (int x = 1; x < 256; x <<= 1) {
            memcpy(bad, buf, len);
            bad[pos] ^= (uint8_t)x;
            pl_err err = {""};
            pl_graph *g = pl_onnx_load_buffer(bad, len, "bad.onnx", &modes[pos & 1], &err);
            if (g)
                pl_graph_free(g);
            else if (!err.msg[0])
                fail_msg("refused without a message");
        }
    free(bad);
    free(buf);
}

/* ---- deep nesting, written on the wire from the inside out (protobuf-c would recurse) ---- */

static void put(uint8_t *buf, size_t *pos, const void *data, size_t n)
{
    *pos -= n;
    memcpy(buf + *pos, data, n);
}

static void put_varint(uint8_t *buf, size_t *pos, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    while ((v >>= 7));
    put(buf, pos, tmp, n);
}

/* Prepends the header of a length-delimited field whose payload is [*pos, end). */
static void put_header(uint8_t *buf, size_t *pos, size_t end, int field)
{
    put_varint(buf, pos, end - *pos);
    put_varint(buf, pos, (uint64_t)field << 3 | 2);
}

/* A model whose graph has an If whose then_branch has an If ... `levels` deep; *start is
 * where the bytes begin in the returned buffer. */
static uint8_t *nested_model(int levels, size_t *start, size_t *len)
{
    size_t cap = 64 + (size_t)levels * 32, pos = cap, end;
    uint8_t *buf = malloc(cap);
    end = pos;
    put(buf, &pos, "Relu", 4);
    put_header(buf, &pos, end, 4); /* NodeProto.op_type */
    put_header(buf, &pos, end, 1); /* GraphProto.node */
    for (int k = 0; k < levels; k++) {
        put_header(buf, &pos, end, 6); /* AttributeProto.g */
        put(buf, &pos, "\x0a\x0bthen_branch", 13);
        put_header(buf, &pos, end, 5); /* NodeProto.attribute */
        put(buf, &pos, "\x22\x02If", 4);
        put_header(buf, &pos, end, 1); /* GraphProto.node */
    }
    put_header(buf, &pos, end, 7); /* ModelProto.graph */
    put(buf, &pos, "\x08\x08", 2); /* ir_version 8 */
    *start = pos;
    *len = end - pos;
    return buf;
}

static void test_deep_nesting_is_refused(void **state)
{
    (void)state;
    size_t start, len;
    pl_err err = {""};
    uint8_t *buf = nested_model(64, &start, &len);
    pl_graph *g = pl_onnx_load_buffer(buf + start, len, "deep.onnx", NULL, &err);
    free(buf);
    if (!g) fail_msg("%s", err.msg);
    int depth = 0;
    for (const pl_graph *s = g; s->n_ops && s->ops[0].n_subgraphs; s = s->ops[0].subgraphs[0])
        depth++;
    assert_int_equal(depth, 64);
    pl_graph_free(g);

    buf = nested_model(65, &start, &len);
    assert_null(pl_onnx_load_buffer(buf + start, len, "deep.onnx", NULL, &err));
    free(buf);
    assert_has(err.msg, "deep.onnx: ");
    assert_has(err.msg, "nested more than 64 deep");

    buf = nested_model(100000, &start, &len);
    assert_null(pl_onnx_load_buffer(buf + start, len, "deeper.onnx", NULL, &err));
    free(buf);
    assert_has(err.msg, "deeper.onnx: ");
    assert_has(err.msg, "nested more than");
}

/* A 50,000-op graph, listed backwards, with a weight on every tenth op. */
static void test_large_graph_is_fast(void **state)
{
    (void)state;
    enum { N = 50000 };
    Onnx__GraphProto *g = mk_graph("big");
    add_input(g, "t0", FLT, "1,64");
    char out[32], in[64], name[32];
    snprintf(out, sizeof out, "t%d", N);
    add_output(g, out, FLT, "1,64");
    g->node = malloc(N * sizeof *g->node);
    for (int k = N - 1; k >= 0; k--) {
        snprintf(out, sizeof out, "t%d", k + 1);
        snprintf(name, sizeof name, "op%d", k);
        if (k % 10 == 0) {
            char w[32];
            snprintf(w, sizeof w, "w%d", k);
            add_init(g, w, FLT, "64");
            snprintf(in, sizeof in, "t%d,%s", k, w);
        } else {
            snprintf(in, sizeof in, "t%d", k);
        }
        Onnx__NodeProto *n = malloc(sizeof *n);
        pl_onnx__node_proto__init(n);
        n->op_type = sd(k % 10 == 0 ? "Mul" : "Relu");
        if (k % 3) n->name = sd(name);
        split(in, &n->input, &n->n_input);
        split(out, &n->output, &n->n_output);
        g->node[g->n_node++] = n;
    }
    Onnx__ModelProto *m = mk_model(g);
    size_t len = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(len);
    pl_onnx__model_proto__pack(m, buf);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    pl_err err = {""};
    pl_load_opts opts = {.no_infer = true};
    double t0 = pl_now();
    pl_graph *pg = pl_onnx_load_buffer(buf, len, "big.onnx", &opts, &err);
    double dt = pl_now() - t0;
    free(buf);
    if (!pg) fail_msg("%s", err.msg);
    printf("    50,000-op graph (%zu bytes) imported in %.3f s\n", len, dt);
    assert_int_equal(pg->n_ops, N);
    assert_int_equal(pg->n_edges, N - 1);
    for (int k = 0; k < N; k++)
        assert_int_equal(pg->topo[k], N - 1 - k);
#if defined(__SANITIZE_ADDRESS__)
    assert_true(dt < 10.0);
#else
    assert_true(dt < 0.5);
#endif
    pl_graph_free(pg);
}

/* ---- what the ONNX spec forbids is refused, naming the place (issue 12) ---- */

static void int_attr(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = v;
}

/* "1,-2" -> an INTS attribute */
static void ints_attr(Onnx__NodeProto *n, const char *name, const char *vals)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    split_ints(vals, &a->ints, &a->n_ints);
}

static void str_attr(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.len = strlen(v), a->s.data = (uint8_t *)sd(v);
}

static void int64s(Onnx__TensorProto *t, const char *vals)
{
    split_ints(vals, &t->int64_data, &t->n_int64_data);
}

/* x [1,3,8,8] -> Conv 'conv' (weight W of dims `wdims`, no payload) -> y: the node is returned
 * for the caller's attributes. */
static Onnx__ModelProto *conv_model(const char *type, const char *wdims, Onnx__NodeProto **n)
{
    Onnx__GraphProto *g = mk_graph("conv");
    add_input(g, "x", FLT, "1,3,8,8");
    add_output(g, "y", FLT, NULL);
    if (wdims) add_init(g, "W", FLT, wdims);
    *n = add_node(g, type, "conv", wdims ? "x,W" : "x", "y");
    return mk_model(g);
}

/* The message for a refused model, which must name the file and `node`. */
static const char *refused_node(Onnx__ModelProto *m, const char *node)
{
    const char *msg = must_fail(m);
    assert_has(msg, "test.onnx: ");
    assert_has(msg, node);
    return msg;
}

/* y = Add(x, B), x an input and B an initializer of type dt and dims `dims` */
static Onnx__GraphProto *add_graph(int dt, const char *dims, Onnx__TensorProto **b)
{
    Onnx__GraphProto *g = mk_graph("add");
    add_input(g, "x", dt, dims);
    add_output(g, "y", dt, NULL);
    *b = add_init(g, "B", dt, dims);
    add_node(g, "Add", "add", "x,B", "y");
    return g;
}

static void test_payload_must_match_type_and_dims(void **state)
{
    (void)state;
    /* 12 bytes of raw_data for float[1000,1000] (4,000,000 bytes) */
    Onnx__GraphProto *g = mk_graph("raw");
    add_input(g, "x", FLT, "1,1000");
    add_output(g, "y", FLT, NULL);
    set_raw(add_init(g, "W", FLT, "1000,1000"), "0123456789ab", 12);
    add_node(g, "MatMul", "mm", "x,W", "y");
    const char *msg = must_fail(mk_model(g));
    assert_has(msg, "test.onnx: initializer 0 'W': raw_data holds 12 bytes");
    assert_has(msg, "4000000");

    /* a typed field of the wrong count, of the wrong type, or beside raw_data */
    Onnx__TensorProto *t;
    g = add_graph(FLT, "2,2", &t);
    for (int k = 0; k < 3; k++)
        PUSH(t->float_data, t->n_float_data, 1.0f);
    assert_has(must_fail(mk_model(g)),
               "initializer 0 'B': float_data holds 3 values, but the float32 tensor has 4");
    g = add_graph(FLT, "2", &t);
    int64s(t, "1,2");
    assert_has(must_fail(mk_model(g)),
               "'B': a float32 tensor keeps its values in float_data, not in int64_data");
    g = add_graph(I64, "2", &t);
    int64s(t, "1,2");
    set_raw(t, (int64_t[2]){1, 2}, 16);
    assert_has(must_fail(mk_model(g)), "raw_data and int64_data are both given");
    g = add_graph(FLT, "3", &t);
    t->data_type = 999;
    assert_has(must_fail(mk_model(g)),
               "initializer 0 'B': data_type 999 is not an ONNX TensorProto.DataType");

    /* a Constant's value */
    g = mk_graph("const");
    add_input(g, "x", FLT, "3");
    add_output(g, "y", FLT, NULL);
    add_node(g, "Add", "add", "x,c", "y");
    Onnx__NodeProto *n = add_node(g, "Constant", "cst", "", "c");
    t = mk_tensor(NULL, FLT, "3");
    set_raw(t, (float[2]){1, 2}, 8);
    add_attr(n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
    assert_has(must_fail(mk_model(g)), "test.onnx: node 1 'cst' (Constant), attribute 'value': "
                                       "raw_data holds 8 bytes, but 3 elements of float32 take 12");

    /* exact payloads load; so does an empty one (a weightless file), and 4-bit values packed
     * two to a byte */
    g = add_graph(FLT, "2", &t);
    PUSH(t->float_data, t->n_float_data, 1.0f);
    PUSH(t->float_data, t->n_float_data, 2.0f);
    add_init(g, "E", FLT, "1000,1000");
    set_raw(add_init(g, "Q", PL_DT_INT4, "3"), "\x12\x03", 2);
    pl_graph_free(must_load(mk_model(g), NULL));
}

static void test_opset_versions(void **state)
{
    (void)state;
    /* the default domain: 1 to 22 (onnxruntime 1.22 refuses 23) */
    Onnx__ModelProto *m = chain_model();
    m->opset_import[0]->version = 999;
    assert_has(must_fail(m), "test.onnx: opset_import 0: domain 'ai.onnx' version 999 is newer "
                             "than 22");
    m = chain_model();
    m->opset_import[0]->version = 23;
    assert_has(must_fail(m), "version 23 is newer than 22");
    m = chain_model();
    m->opset_import[0]->version = -1;
    assert_has(must_fail(m), "domain 'ai.onnx' version -1: versions start at 1");
    m = chain_model();
    m->opset_import[0]->version = 0;
    assert_has(must_fail(m), "version 0: versions start at 1");
    m = chain_model();
    set_opset(m, "ai.onnx.ml", 6);
    assert_has(must_fail(m), "opset_import 1: domain 'ai.onnx.ml' version 6 is newer than 5");
    m = chain_model();
    set_opset(m, "com.example", -3);
    assert_has(must_fail(m), "domain 'com.example' version -3");
    /* the newest ones, and another domain's 0 (its ops are not resolved against it) */
    m = chain_model();
    m->opset_import[0]->version = 22;
    set_opset(m, "ai.onnx.ml", 5);
    set_opset(m, "com.example", 0);
    pl_graph *g = must_load(m, NULL);
    assert_int_equal(g->info.opset, 22);
    pl_graph_free(g);
}

static void test_elem_types(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("in");
    add_input(g, "x", 999, "1");
    add_output(g, "x", FLT, NULL);
    assert_has(must_fail(mk_model(g)), "test.onnx: graph input 0 'x': elem_type 999 is not an "
                                       "ONNX TensorProto.DataType placer knows (1 to 22)");
    g = mk_graph("out");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", -4, NULL);
    add_node(g, "Relu", "r", "x", "y");
    assert_has(must_fail(mk_model(g)), "graph output 0 'y': elem_type -4");
    g = mk_graph("vi");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", FLT, NULL);
    add_node(g, "Relu", "r", "x", "y");
    PUSH(g->value_info, g->n_value_info, mk_vi("stale", FLT, NULL));
    PUSH(g->value_info, g->n_value_info, mk_vi("y", 23, NULL));
    assert_has(must_fail(mk_model(g)), "value_info 1 'y': elem_type 23");
    /* a sequence's element type too */
    g = mk_graph("seq");
    add_input(g, "x", FLT, "1");
    add_output(g, "x", FLT, NULL);
    Onnx__ValueInfoProto *vi = mk_vi("s", FLT, NULL);
    Onnx__TypeProto *seq = malloc(sizeof *seq);
    pl_onnx__type_proto__init(seq);
    seq->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    seq->sequence_type = malloc(sizeof *seq->sequence_type);
    pl_onnx__type_proto__sequence__init(seq->sequence_type);
    seq->sequence_type->elem_type = mk_type(1000, NULL);
    pl_onnx__type_proto__free_unpacked(vi->type, NULL);
    vi->type = seq;
    PUSH(g->value_info, g->n_value_info, vi);
    assert_has(must_fail(mk_model(g)), "value_info 0 's': elem_type 1000");
    /* Cast's 'to' */
    g = mk_graph("cast");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", FLT, NULL);
    int_attr(add_node(g, "Cast", "c", "x", "y"), "to", 999);
    assert_has(must_fail(mk_model(g)), "test.onnx: node 0 'c' (Cast): to = 999 is not an ONNX "
                                       "TensorProto.DataType");
    /* an UNDEFINED elem_type stays an unknown dtype, as exporters leave it */
    g = mk_graph("undef");
    add_input(g, "x", FLT, "1");
    add_output(g, "y", 0, NULL);
    int_attr(add_node(g, "Cast", "c", "x", "y"), "to", PL_DT_INT64);
    pl_graph *pg = must_load(mk_model(g), NULL);
    assert_int_equal(T(pg, "y")->dtype, PL_DT_INT64);
    pl_graph_free(pg);
}

/* "strides=0,1;group=2" onto n: group and blocksize-like names are INT, auto_pad a STRING,
 * the rest INTS. */
static void set_attrs(Onnx__NodeProto *n, const char *spec)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        if (!strcmp(tok, "group") || !strncmp(tok, "trans", 5))
            int_attr(n, tok, strtoll(eq + 1, NULL, 10));
        else if (!strcmp(tok, "auto_pad"))
            str_attr(n, tok, eq + 1);
        else
            ints_attr(n, tok, eq + 1);
    }
}

static void test_conv_and_pool_windows(void **state)
{
    (void)state;
    /* x is [1,3,8,8] */
    const struct {
        const char *type, *wdims, *attrs, *want;
    } cases[] = {
        {"Conv", "8,3,3,3", "strides=0,1", "strides[0] = 0: strides must be at least 1"},
        {"Conv", "8,3,3,3", "strides=1,-1", "strides[1] = -1"},
        {"Conv", "8,3,3,3", "dilations=0,1", "dilations[0] = 0: dilations must be at least 1"},
        {"Conv", "8,3,3,3", "kernel_shape=3,0",
         "kernel_shape[1] = 0: kernel dimensions must be at least 1"},
        {"Conv", "8,3,0,3", "", "weight 'W' has kernel dimension 0 of size 0"},
        {"Conv", "8,3,3,3", "kernel_shape=3,2", "kernel_shape[1] = 2, but weight 'W' has 3 there"},
        {"Conv", "8,3,3,3", "pads=0,-1,0,0", "pads[1] = -1: pads must not be negative"},
        {"Conv", "8,3,3,3", "pads=1,1",
         "pads has 2 entries, but an input of 2 spatial dimensions needs 4"},
        {"Conv", "8,3,3,3", "group=0", "group = 0: group must be at least 1"},
        {"Conv", "8,1,3,3", "group=2", "group = 2 does not divide the 3 input channels"},
        {"Conv", "8,2,3,3", "", "weight 'W' takes 2 channels per group, but the input has 3 in 1"},
        {"Conv", "8,3,3,3", "auto_pad=SAME", "auto_pad 'SAME' is none of"},
        {"ConvTranspose", "3,4,3,3", "strides=2,0", "(ConvTranspose): strides[1] = 0"},
        {"ConvTranspose", "4,4,3,3", "", "weight 'W' is for 4 input channels, but the input has 3"},
        {"MaxPool", NULL, "", "(MaxPool): kernel_shape is required"},
        {"AveragePool", NULL, "kernel_shape=2,2;strides=0,2", "(AveragePool): strides[0] = 0"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        Onnx__NodeProto *n;
        Onnx__ModelProto *m = conv_model(cases[k].type, cases[k].wdims, &n);
        set_attrs(n, cases[k].attrs);
        assert_has(refused_node(m, "test.onnx: node 0 'conv' ("), cases[k].want);
    }

    Onnx__NodeProto *n;
    /* a Conv inside a branch: the enclosing If is named too */
    Onnx__GraphProto *g = mk_graph("branch");
    add_input(g, "x", FLT, "1,3,8,8");
    add_input(g, "cond", BOOL_, "");
    add_output(g, "out", FLT, NULL);
    add_init(g, "W", FLT, "8,3,3,3");
    Onnx__GraphProto *th = mk_graph("then"), *el = mk_graph("else");
    ints_attr(add_node(th, "Conv", "inner_conv", "x,W", "t"), "strides", "1,0");
    add_output(th, "t", FLT, NULL);
    add_node(el, "Identity", "id", "x", "e");
    add_output(el, "e", FLT, NULL);
    n = add_node(g, "If", "if1", "cond", "out");
    add_graph_attr(n, "then_branch", th);
    add_graph_attr(n, "else_branch", el);
    assert_has(must_fail(mk_model(g)), "test.onnx: node 0 'if1' (If): node 0 'inner_conv' (Conv): "
                                       "strides[1] = 0");

    /* valid windows load, with the arithmetic's shape */
    Onnx__ModelProto *m = conv_model("Conv", "8,3,3,3", &n);
    set_attrs(n, "strides=2,2;pads=1,1,1,1;kernel_shape=3,3");
    pl_graph *pg = must_load(m, NULL);
    assert_int_equal(T(pg, "y")->dims[1], 8);
    assert_int_equal(T(pg, "y")->dims[3], 4); /* (8 + 2 - 3) / 2 + 1 */
    pl_graph_free(pg);
}

/* x [4,6] -> TYPE 'op' (x, then a tensor of int64 `vals` when given) -> y */
static Onnx__ModelProto *op_model(const char *type, const char *vals, Onnx__NodeProto **n)
{
    Onnx__GraphProto *g = mk_graph("op");
    add_input(g, "x", FLT, "4,6");
    add_output(g, "y", FLT, NULL);
    if (vals) {
        char dims[16];
        size_t k = 1;
        for (const char *p = vals; *p; p++)
            k += *p == ',';
        snprintf(dims, sizeof dims, "%zu", k);
        int64s(add_init(g, "v", I64, dims), vals);
    }
    *n = add_node(g, type, "op", vals ? "x,v" : "x", "y");
    return mk_model(g);
}

/* x [4,6] @ B (an initializer of `bdims`), as `type` with `attrs` (set_attrs' syntax). */
static Onnx__ModelProto *product_model(const char *type, const char *bdims, const char *attrs)
{
    Onnx__GraphProto *g = mk_graph("product");
    add_input(g, "x", FLT, "4,6");
    add_output(g, "y", FLT, NULL);
    add_init(g, "B", FLT, bdims);
    set_attrs(add_node(g, type, "op", "x,B", "y"), attrs);
    return mk_model(g);
}

/* A product whose inner dimensions differ is refused (onnxruntime refuses it; the shape rule
 * gave it an output and FLOPs); one whose dimensions agree loads. */
static void test_product_inner_dims(void **state)
{
    (void)state;
    assert_has(refused_node(product_model("MatMul", "7,2", ""), "node 0 'op' (MatMul)"),
               "the inner dimensions differ: A's is 6, B's 7");
    assert_has(refused_node(product_model("Gemm", "2,7", "transB=1"), "node 0 'op' (Gemm)"),
               "the inner dimensions differ: A's is 6, B's 7");
    assert_has(refused_node(product_model("Gemm", "6,2", "transA=1"), "(Gemm)"), "A's is 4, B's 6");
    pl_graph *pg = must_load(product_model("Gemm", "2,6", "transB=1"), NULL);
    assert_int_equal(T(pg, "y")->dims[1], 2);
    pl_graph_free(pg);
    pg = must_load(product_model("MatMul", "6", ""), NULL); /* B 1-D: its one dimension */
    assert_int_equal(T(pg, "y")->rank, 1);
    pl_graph_free(pg);
}

/* A Loop body (i, cond, acc [64,64]) whose step is acc @ W, or a Loop of `depth` more levels. */
static Onnx__GraphProto *nested_body(int depth)
{
    Onnx__GraphProto *b = mk_graph("body");
    add_input(b, "i", I64, "");
    add_input(b, "c", BOOL_, "");
    add_input(b, "acc", FLT, "64,64");
    add_node(b, "Identity", "keep", "c", "c_out");
    if (!depth)
        add_node(b, "MatMul", "mm", "acc,W", "acc_out");
    else
        add_graph_attr(add_node(b, "Loop", "inner", "M,,acc", "acc_out"), "body",
                       nested_body(depth - 1));
    add_output(b, "c_out", BOOL_, "");
    add_output(b, "acc_out", FLT, "64,64");
    return b;
}

/* Loops nested 21 deep, each of 2^62 trips, around a 64x64 MatMul: the body's FLOPs times
 * the trip counts leave the doubles. Refused, naming the loop where they overflow and those
 * around it (it loaded with infinite FLOPs: `inspect --json` printed an empty document, and
 * `place` said the loop could run on no device); 3 levels load with finite FLOPs. */
static void test_loop_cost_overflow(void **state)
{
    (void)state;
    for (int depth = 2; depth <= 20; depth += 18) {
        Onnx__GraphProto *g = mk_graph("loops");
        add_input(g, "x", FLT, "64,64");
        add_output(g, "out", FLT, NULL);
        add_init(g, "W", FLT, "64,64");
        set_raw(add_init(g, "M", I64, ""), (int64_t[1]){(int64_t)1 << 62}, sizeof(int64_t));
        add_graph_attr(add_node(g, "Loop", "outer", "M,,x", "out"), "body", nested_body(depth));
        if (depth == 20) {
            assert_has(must_fail(mk_model(g)), "node 0 'outer' (Loop): node 1 'inner' (Loop)");
            continue;
        }
        pl_graph *pg = must_load(mk_model(g), NULL);
        assert_close(OP(pg, "outer")->flops, 2.0 * 64 * 64 * 64 * pow(2, 62 * 3), 1e-12);
        pl_graph_free(pg);
    }
}

static void test_other_op_rules(void **state)
{
    (void)state;
    Onnx__NodeProto *n;
    assert_has(refused_node(op_model("Reshape", "-1,-1", &n), "node 0 'op' (Reshape)"),
               "shape has 2 entries of -1; at most one may be -1");
    assert_has(refused_node(op_model("Reshape", "4,-2", &n), "'op'"),
               "shape[1] = -2: entries must be -1 or more");
    /* x [4,6] holds 24 elements: a target of 25, or of a multiple of 5, is refused */
    assert_has(refused_node(op_model("Reshape", "5,5", &n), "(Reshape)"),
               "the input's 24 elements do not fit the target shape (25)");
    assert_has(refused_node(op_model("Reshape", "-1,5", &n), "(Reshape)"),
               "do not fit the target shape (a multiple of 5)");
    pl_graph *ok = must_load(op_model("Reshape", "0,-1", &n), NULL); /* 0 copies the 4 */
    assert_int_equal(T(ok, "y")->dims[1], 6);
    pl_graph_free(ok);
    Onnx__ModelProto *m = op_model("Reshape", "0,-1", &n);
    int_attr(n, "allowzero", 1);
    assert_has(refused_node(m, "'op'"), "with allowzero = 1 the shape cannot hold both 0 and -1");
    assert_has(refused_node(op_model("Split", "2,-1", &n), "(Split)"),
               "split[1] = -1: sizes must not be negative");
    assert_has(refused_node(op_model("Split", "2,3", &n), "(Split)"),
               "split sizes sum to 5, but dimension 0 of the input is 4");
    Onnx__GraphProto *g = mk_graph("cos");
    add_output(g, "y", FLT, NULL);
    int64s(add_init(g, "v", I64, "2"), "2,-3");
    add_node(g, "ConstantOfShape", "cos", "v", "y");
    assert_has(refused_node(mk_model(g), "node 0 'cos' (ConstantOfShape)"),
               "shape[1] = -3: dimensions must not be negative");
    assert_has(refused_node(op_model("TopK", "-1", &n), "(TopK)"), "k[0] = -1");
    m = op_model("DepthToSpace", NULL, &n);
    int_attr(n, "blocksize", 0);
    assert_has(refused_node(m, "(DepthToSpace)"), "blocksize = 0: it must be at least 1");
    assert_has(refused_node(op_model("SpaceToDepth", NULL, &n), "(SpaceToDepth)"),
               "blocksize is required");
    m = op_model("LSTM", NULL, &n);
    int_attr(n, "hidden_size", -2);
    assert_has(refused_node(m, "(LSTM)"), "hidden_size = -2");

    /* axes out of range, and a perm that is no permutation (x is [4,6]) */
    m = op_model("Concat", NULL, &n);
    int_attr(n, "axis", 2);
    assert_has(refused_node(m, "(Concat)"), "axis = 2 is outside [-2, 1] for an input of rank 2");
    m = op_model("Flatten", NULL, &n);
    int_attr(n, "axis", -3);
    assert_has(refused_node(m, "(Flatten)"), "axis = -3 is outside [-2, 2]");
    m = op_model("Transpose", NULL, &n);
    ints_attr(n, "perm", "1,1");
    assert_has(refused_node(m, "(Transpose)"), "perm is not a permutation of 0 to 1 (perm[1] = 1)");
    m = op_model("Softmax", NULL, &n);
    int_attr(n, "axis", 5);
    assert_has(refused_node(m, "(Softmax)"), "axis = 5");
    m = op_model("LayerNormalization", NULL, &n);
    int_attr(n, "axis", 2);
    assert_has(refused_node(m, "(LayerNormalization)"), "axis = 2 is outside [-2, 1]");
    m = op_model("Softmax", NULL, &n);
    str_attr(n, "axis", "1"); /* read as the default before */
    assert_has(refused_node(m, "(Softmax)"), "axis is not an INT attribute");

    /* Slice: steps are input 4 */
    g = mk_graph("slice");
    add_input(g, "x", FLT, "4,6");
    add_output(g, "y", FLT, NULL);
    int64s(add_init(g, "st", I64, "2"), "0,0");
    int64s(add_init(g, "en", I64, "2"), "4,6");
    int64s(add_init(g, "ax", I64, "2"), "0,1");
    int64s(add_init(g, "sp", I64, "2"), "1,0");
    add_node(g, "Slice", "sl", "x,st,en,ax,sp", "y");
    assert_has(must_fail(mk_model(g)), "test.onnx: node 0 'sl' (Slice): steps[1] = 0: a step "
                                       "cannot be 0");

    /* the valid forms load */
    pl_graph *pg = must_load(op_model("Reshape", "-1,3", &n), NULL);
    assert_int_equal(T(pg, "y")->dims[0], 8);
    pl_graph_free(pg);
    pg = must_load(op_model("Reshape", "0,-1", &n), NULL); /* 0 copies: allowzero is 0 */
    assert_int_equal(T(pg, "y")->dims[1], 6);
    pl_graph_free(pg);
    pl_graph_free(must_load(op_model("Split", "1,3", &n), NULL));
    m = op_model("Flatten", NULL, &n);
    int_attr(n, "axis", 2); /* Flatten's axis may equal the rank */
    pl_graph_free(must_load(m, NULL));
}

/* A graph with no op loads (inspect describes it) but nothing can be placed on it. */
static void test_graph_without_ops(void **state)
{
    (void)state;
    Onnx__GraphProto *g = mk_graph("empty");
    add_input(g, "x", FLT, "1,4");
    add_output(g, "x", FLT, "1,4");
    pl_graph *pg = must_load(mk_model(g), NULL);
    assert_int_equal(pg->n_ops, 0);
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    assert_non_null(c);
    assert_null(pl_cost_new(pg, c, NULL, NULL, 0, &err));
    assert_has(err.msg, "empty: the graph has no operators; nothing to place");
    pl_cluster_free(c);
    pl_graph_free(pg);
}

/* Packs m into a temporary .onnx file; its path (static buffer, as tu_tmpfile's). */
static const char *write_model(Onnx__ModelProto *m)
{
    size_t len = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(len);
    pl_onnx__model_proto__pack(m, buf);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    const char *path = tu_tmpfile(buf, len, ".onnx");
    free(buf);
    return path;
}

/* Every verb refuses the same malformed files, and nothing malformed reaches onnxruntime:
 * pl_inflate_model, which every path to the worker takes, runs the reader first. A Conv of
 * stride 0 used to kill the worker with SIGFPE. */
static void test_verbs_refuse_invalid_models(void **state)
{
    (void)state;
    Onnx__NodeProto *n;
    Onnx__ModelProto *m = conv_model("Conv", "8,3,3,3", &n);
    ints_attr(n, "strides", "0,1");
    char stride0[256], empty[256], args[1024];
    snprintf(stride0, sizeof stride0, "%s", write_model(m));
    Onnx__GraphProto *g = mk_graph("empty");
    add_input(g, "x", FLT, "1,4");
    add_output(g, "x", FLT, "1,4");
    snprintf(empty, sizeof empty, "%s", write_model(mk_model(g)));

    char out[4096];
    pl_err err = {""};
    char cache[256];
    assert_int_equal(tu_mkdtemp(cache, sizeof cache, "placer-inflate"), 0);
    assert_int_equal(pl_inflate_model(stride0, cache, out, sizeof out, &err), -1);
    assert_has(err.msg, "node 0 'conv' (Conv): strides[0] = 0");

    const char *cl = "--cluster examples/clusters/local-cpu-percore.json";
    const char *verbs[] = {"inspect %s", "place %s %s", "simulate %s %s --plan /nonexistent.json",
                           "compare %s %s --algos heft",
                           "split %s %s --plan /nonexistent.json -o /tmp/never", "profile %s %s",
                           "deploy %s --catalog catalogs/aws.json --slo 50ms",
                           /* multi's union of models hid an empty one (issue 27) */
                           "multi models/gcn_cora.onnx %s %s --algos heft"};
    for (size_t k = 0; k < sizeof verbs / sizeof *verbs; k++) {
        snprintf(args, sizeof args, verbs[k], stride0, cl);
        tu_expect_refusal(args, ": node 0 'conv' (Conv): strides[0] = 0");
        if (k == 0) continue; /* inspect describes a graph without ops */
        snprintf(args, sizeof args, verbs[k], empty, cl);
        tu_expect_refusal(args, ": the graph has no operators; nothing to place");
    }
    snprintf(args, sizeof args, "inspect %s", empty);
    char *text = NULL;
    assert_int_equal(tu_run(args, &text), 0);
    assert_contains(text, "0 top-level");
    free(text);
    unlink(stride0), unlink(empty);
    tu_rmtree(cache);
}

/* ---- the ONNX test data shipped by Debian (libonnx-testdata) ---- */

#define TESTDATA "/usr/share/libonnx-testdata/data"

typedef struct {
    char **paths;
    size_t n;
} file_list;

static void collect(const char *dir, file_list *fl)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) < 0) continue;
        size_t nl = strlen(e->d_name);
        if (S_ISDIR(st.st_mode))
            collect(path, fl);
        else if (nl > 5 && strcmp(e->d_name + nl - 5, ".onnx") == 0)
            PUSH(fl->paths, fl->n, sd(path));
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Loads every file both ways; returns how many were refused, printing each reason. */
static int load_all(const file_list *fl, int *ops_total)
{
    int refused = 0;
    for (size_t k = 0; k < fl->n; k++) {
        for (int mode = 0; mode < 2; mode++) {
            pl_load_opts opts = {.no_infer = mode == 0};
            pl_err err = {""};
            pl_graph *g = pl_onnx_load(fl->paths[k], &opts, &err);
            if (g) {
                if (mode == 0) *ops_total += g->n_ops;
                pl_graph_free(g);
                continue;
            }
            if (!err.msg[0]) fail_msg("%s: refused without a message", fl->paths[k]);
            printf("    refused (%s): %s\n", mode ? "with infer" : "no_infer", err.msg);
            refused++;
        }
    }
    return refused;
}

static void test_onnx_testdata(void **state)
{
    (void)state;
    file_list fl = {0};
    collect(TESTDATA, &fl);
    if (!fl.n) fail_msg("no ONNX files under %s: make deps installs libonnx-testdata", TESTDATA);
    qsort(fl.paths, fl.n, sizeof *fl.paths, cmp_str);
    int ops = 0;
    double t0 = pl_now();
    int refused = load_all(&fl, &ops);
    printf("    %s: %zu files, each read twice (no_infer, infer): %zu loads, %d refusals, "
           "%d ops, %.2f s\n",
           TESTDATA, fl.n, 2 * fl.n - refused, refused, ops, pl_now() - t0);
    /* every file in the test data is a valid model */
    assert_int_equal(refused, 0);
    assert_true(fl.n > 1000);
    for (size_t k = 0; k < fl.n; k++)
        free(fl.paths[k]);
    free(fl.paths);
}

/* The models directory (*.onnx files exported by tools/export_models.py, and models/full when
 * made): they must load. */
static void test_models_dir(void **state)
{
    (void)state;
    file_list fl = {0};
    collect("models", &fl);
    if (!fl.n) fail_msg("no ONNX files under models/ (they are committed; run from the repo root)");
    for (size_t k = 0; k < fl.n; k++) {
        pl_err err = {""};
        double t0 = pl_now();
        pl_graph *g = pl_onnx_load(fl.paths[k], NULL, &err);
        if (!g) fail_msg("%s", err.msg);
        printf("    %s: %d ops, %.3f s\n", fl.paths[k], g->n_ops, pl_now() - t0);
        pl_graph_free(g);
        free(fl.paths[k]);
    }
    free(fl.paths);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsorted_nodes_are_ordered),
        cmocka_unit_test(test_cycle_is_refused),
        cmocka_unit_test(test_dangling_read_is_refused),
        cmocka_unit_test(test_output_produced_twice_is_refused),
        cmocka_unit_test(test_constant_nodes_are_weights),
        cmocka_unit_test(test_initializers),
        cmocka_unit_test(test_sparse_initializer_counts_dense_dims),
        cmocka_unit_test(test_attributes_and_optional_slots),
        cmocka_unit_test(test_subgraph_outer_references),
        cmocka_unit_test(test_subgraph_unknown_outer_name),
        cmocka_unit_test(test_loop_body_reads_weight),
        cmocka_unit_test(test_symbolic_dims),
        cmocka_unit_test(test_bad_dims_and_ranks),
        cmocka_unit_test(test_not_a_model),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_truncated_and_corrupted),
        cmocka_unit_test(test_deep_nesting_is_refused),
        cmocka_unit_test(test_large_graph_is_fast),
        cmocka_unit_test(test_payload_must_match_type_and_dims),
        cmocka_unit_test(test_opset_versions),
        cmocka_unit_test(test_elem_types),
        cmocka_unit_test(test_conv_and_pool_windows),
        cmocka_unit_test(test_other_op_rules),
        cmocka_unit_test(test_product_inner_dims),
        cmocka_unit_test(test_loop_cost_overflow),
        cmocka_unit_test(test_graph_without_ops),
        cmocka_unit_test(test_verbs_refuse_invalid_models),
        cmocka_unit_test(test_onnx_testdata),
        cmocka_unit_test(test_models_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
