/* test_rewrite.c: the rewrite rules (docs/rewrite.md) on hand-made ONNX graphs: each applies
 * where it should (ops before and after, the new node's attributes, the new initializers' dims
 * and hand-computed values) and refuses where a condition fails; each rewritten model computes
 * what the original does in onnxruntime (within 1e-5 relative); and the zoo's resnet50 and
 * bert_base, rewritten greedily, load back with the same output shapes. */
#include "testutil.h"
#include "placer/rewrite.h"
#include "placer/runtime.h"
#include "onnx/onnx.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rw_models.h"

/* ---- the rules' models (data: weighted, else weightless) ---- */

/* s_step: the BN scale's step (0.5; the model with another one computes something else). */
static pl_rw_model *conv_bn_s(bool data, bool relu_reads_conv, double s_step)
{
    Onnx__ModelProto *m = model();
    input(m, "x", "1,3,8,8");
    output(m, "y", "1,4,8,8");
    init_f(m, "W", "4,3,3,3", 0.1, 0.01, data);
    init_f(m, "B", "4", 0.5, 0.1, data);
    init_f(m, "s", "4", 2.0, s_step, data);
    init_f(m, "beta", "4", 0.25, 0.25, data);
    init_f(m, "mean", "4", 0.1, 0.2, data);
    init_f(m, "var", "4", 3.0, 1.0, data);
    ints_attr(node(m, "Conv", "conv", "x,W,B", "c"), "pads", "1,1,1,1");
    node(m, "BatchNormalization", "bn", "c,s,beta,mean,var", "y");
    if (relu_reads_conv) {
        node(m, "Relu", "relu", "c", "r");
        output(m, "r", "1,4,8,8");
    }
    return load(m);
}

static pl_rw_model *conv_bn(bool data, bool relu_reads_conv)
{
    return conv_bn_s(data, relu_reads_conv, 0.5);
}

static void test_conv_bn_fold(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(conv_bn(true, false), "conv_bn_fold");
    expect_ops(m, "Conv");
    float w[2], b[4];
    expect_init(m, "Conv", 1, "4,3,3,3", w, 2);
    expect_init(m, "Conv", 2, "4", b, 4);
    /* channel 0: B = 0.5, s = 2, beta = 0.25, mean = 0.1, var = 3, eps 1e-5:
     * f = 2 / sqrt(3.00001) = 1.15469861; W[0] = 0.1 -> 0.115469861, W[1] = 0.11 -> 0.127016847;
     * B'[0] = (B - mean) f + beta = 0.4 f + 0.25 = 0.711879446.
     * channel 1: B = 0.6, s = 2.5, beta = 0.5, mean = 0.3, var = 4:
     * f = 2.5 / sqrt(4.00001) = 1.24999844, B'[1] = 0.3 f + 0.5 = 0.874999531 */
    assert_close(w[0], 0.115469861, 1e-6);
    assert_close(w[1], 0.127016847, 1e-6);
    assert_close(b[0], 0.711879446, 1e-6);
    assert_close(b[1], 0.874999531, 1e-6);
    pl_rw_free(m);
    /* weightless in, weightless out, with the right dims */
    m = apply_one(conv_bn(false, false), "conv_bn_fold");
    expect_init(m, "Conv", 1, "4,3,3,3", NULL, 0);
    expect_init(m, "Conv", 2, "4", NULL, 0);
    pl_rw_free(m);
}

static void test_conv_bn_refused(void **state)
{
    (void)state;
    pl_rw_model *m = conv_bn(true, true); /* the Relu reads the conv output too */
    assert_int_equal(n_sites(m, "conv_bn_fold"), 0);
    pl_rw_free(m);
}

/* The bias is computed between the MatMul and the Add: the Gemm goes where the Add was, after
 * it (ONNX wants nodes in topological order). */
static void test_gemm_keeps_order(void **state)
{
    (void)state;
    Onnx__ModelProto *p = model();
    input(p, "a", "3,4");
    input(p, "c0", "5");
    init_f(p, "B", "4,5", 0.1, 0.05, true);
    node(p, "MatMul", "mm", "a,B", "prod");
    node(p, "Neg", "neg", "c0", "C");
    node(p, "Add", "add", "prod,C", "y");
    output(p, "y", "");
    pl_rw_model *m = apply_one(load(p), "matmul_add_gemm");
    expect_ops(m, "Neg,Gemm");
    pl_rw_free(m);
}

static void test_matmul_add_gemm(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(matmul_add(true, "3,4", "4,5", "5"), "matmul_add_gemm");
    expect_ops(m, "Gemm");
    expect_init(m, "Gemm", 1, "4,5", NULL, 0);
    expect_init(m, "Gemm", 2, "5", NULL, 0);
    pl_rw_free(m);
    m = matmul_add(true, "2,3,4", "4,5", "5"); /* 3-D A: Gemm is 2-D only */
    assert_int_equal(n_sites(m, "matmul_add_gemm"), 0);
    pl_rw_free(m);
    m = matmul_add(true, "3,4", "4,5", "2,3,5"); /* C broadcasts the result up: not Gemm's C */
    assert_int_equal(n_sites(m, "matmul_add_gemm"), 0);
    pl_rw_free(m);
}

/* Names the rewrites make for unnamed nodes are no node's own: a node named rw_node_1, an
 * unnamed MatMul at position 1 and an Add also named rw_node_1. The unnamed one was named
 * rw_node_1 too, the reader renamed a copy, and the MatMul + Add site named a node the model
 * did not have ("no such node"). */
static void test_made_names_are_free(void **state)
{
    (void)state;
    Onnx__ModelProto *om = model();
    input(om, "a", "3,4");
    init_f(om, "B1", "4,5", 0.1, 0.05, false);
    init_f(om, "B2", "4,6", 0.1, 0.05, false);
    init_f(om, "C", "6", -0.2, 0.1, false);
    node(om, "MatMul", "rw_node_1", "a,B1", "y1");
    node(om, "MatMul", "", "a,B2", "p");
    node(om, "Add", "rw_node_1", "p,C", "y2");
    output(om, "y1", "");
    output(om, "y2", "");
    pl_rw_model *m = apply_one(load(om), "matmul_add_gemm");
    expect_ops(m, "MatMul,Gemm");
    pl_rw_free(m);
}

static pl_rw_model *parallel_mm(bool data, bool b2_input)
{
    Onnx__ModelProto *m = model();
    input(m, "a", "2,3,4");
    init_f(m, "B1", "4,5", 0.1, 0.05, data);
    if (b2_input)
        input(m, "B2", "4,6");
    else
        init_f(m, "B2", "4,6", -0.1, 0.03, data);
    node(m, "MatMul", "mm1", "a,B1", "y1");
    node(m, "MatMul", "mm2", "a,B2", "y2");
    node(m, "Relu", "r", "y2", "z");
    output(m, "y1", "");
    output(m, "z", "");
    return load(m);
}

static void test_merge_matmul(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(parallel_mm(true, false), "merge_matmul");
    expect_ops(m, "MatMul,Split,Relu");
    float v[12];
    expect_init(m, "MatMul", 1, "4,11", v, 12);
    /* row 0 is B1's row 0 (5 values) then B2's row 0 (6): B1[0][0] = 0.1, B2[0][0] = -0.1,
     * and row 1 starts with B1[1][0], element 5 of B1: 0.1 + 0.05 * 5 - 0.05 * 0 = 0.35 */
    assert_close(v[0], 0.1, 1e-6);
    assert_close(v[5], -0.1, 1e-6);
    assert_close(v[11], 0.35, 1e-6);
    Onnx__ModelProto *p = unpack(m);
    const Onnx__NodeProto *s = p->graph->node[1];
    assert_int_equal(s->n_input, 2); /* opset 17: the sizes are an input */
    assert_int_equal(s->n_output, 2);
    assert_string_equal(s->output[0], "y1");
    assert_string_equal(s->output[1], "y2");
    pl_onnx__model_proto__free_unpacked(p, NULL);
    pl_rw_free(m);
    m = parallel_mm(true, true); /* B2 is fed at run time: no weights to concatenate */
    assert_int_equal(n_sites(m, "merge_matmul"), 0);
    pl_rw_free(m);
}

static pl_rw_model *parallel_conv(bool data, const char *strides2)
{
    Onnx__ModelProto *m = model();
    input(m, "x", "1,3,8,8");
    init_f(m, "W1", "4,3,3,3", 0.1, 0.01, data);
    init_f(m, "B1", "4", 0.2, 0.1, data);
    init_f(m, "W2", "2,3,3,3", -0.1, 0.02, data);
    init_f(m, "B2", "2", -0.3, 0.1, data);
    Onnx__NodeProto *c1 = node(m, "Conv", "c1", "x,W1,B1", "y1");
    Onnx__NodeProto *c2 = node(m, "Conv", "c2", "x,W2,B2", "y2");
    ints_attr(c1, "pads", "1,1,1,1"), ints_attr(c2, "pads", "1,1,1,1");
    ints_attr(c1, "strides", "1,1"), ints_attr(c2, "strides", strides2);
    output(m, "y1", "");
    output(m, "y2", "");
    return load(m);
}

static void test_merge_conv(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(parallel_conv(true, "1,1"), "merge_conv");
    expect_ops(m, "Conv,Split");
    float b[6];
    expect_init(m, "Conv", 1, "6,3,3,3", NULL, 0);
    expect_init(m, "Conv", 2, "6", b, 6);
    assert_close(b[3], 0.5, 1e-6);  /* B1[3] = 0.2 + 0.1 * 3 */
    assert_close(b[4], -0.3, 1e-6); /* B2[0] */
    pl_rw_free(m);
    m = apply_one(parallel_conv(false, "1,1"), "merge_conv");
    expect_init(m, "Conv", 1, "6,3,3,3", NULL, 0);
    pl_rw_free(m);
    m = parallel_conv(true, "2,2"); /* different strides */
    assert_int_equal(n_sites(m, "merge_conv"), 0);
    pl_rw_free(m);
}

static pl_rw_model *transposes(const char *p1, const char *p2, bool t1_read_twice)
{
    Onnx__ModelProto *m = model();
    input(m, "x", "2,3,4");
    ints_attr(node(m, "Transpose", "t1", "x", "u"), "perm", p1);
    ints_attr(node(m, "Transpose", "t2", "u", "v"), "perm", p2);
    node(m, "Relu", "r", "v", "y");
    output(m, "y", "");
    if (t1_read_twice) {
        node(m, "Neg", "n", "u", "z");
        output(m, "z", "");
    }
    return load(m);
}

static void test_transpose_merge(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(transposes("0,2,1", "0,2,1", false), "transpose_merge");
    expect_ops(m, "Relu"); /* the two cancel: Relu reads x */
    Onnx__ModelProto *p = unpack(m);
    assert_string_equal(p->graph->node[0]->input[0], "x");
    pl_onnx__model_proto__free_unpacked(p, NULL);
    pl_rw_free(m);
    /* p1 = (1,0,2), p2 = (0,2,1): q[j] = p1[p2[j]] = (1,2,0) */
    m = apply_one(transposes("1,0,2", "0,2,1", false), "transpose_merge");
    expect_ops(m, "Transpose,Relu");
    p = unpack(m);
    const Onnx__AttributeProto *a = p->graph->node[0]->attribute[0];
    assert_int_equal(a->n_ints, 3);
    assert_int_equal(a->ints[0], 1), assert_int_equal(a->ints[1], 2);
    assert_int_equal(a->ints[2], 0);
    pl_onnx__model_proto__free_unpacked(p, NULL);
    pl_rw_free(m);
    m = transposes("0,2,1", "0,2,1", true);
    assert_int_equal(n_sites(m, "transpose_merge"), 0);
    pl_rw_free(m);
}

static pl_rw_model *reshapes(const char *x_shape, const char *s2)
{
    Onnx__ModelProto *m = model();
    input(m, "x", x_shape);
    init_i(m, "s1", "-1,4", false);
    init_i(m, "s2", s2, false);
    node(m, "Reshape", "r1", "x,s1", "u");
    node(m, "Reshape", "r2", "u,s2", "v");
    node(m, "Relu", "r", "v", "y");
    output(m, "y", "");
    return load(m);
}

static void test_reshape_merge(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(reshapes("2,3,4", "3,8"), "reshape_merge");
    expect_ops(m, "Reshape,Relu");
    Onnx__ModelProto *p = unpack(m);
    assert_string_equal(p->graph->node[0]->input[0], "x");
    assert_string_equal(p->graph->node[0]->input[1], "s2");
    pl_onnx__model_proto__free_unpacked(p, NULL);
    pl_rw_free(m);
    /* s2 copies dim 0 of the intermediate (0), which is symbolic (x is [n,3,4]): the
     * result's shape is not static and s2 cannot be reused */
    m = reshapes("n,3,4", "0,2,2");
    assert_int_equal(n_sites(m, "reshape_merge"), 0);
    pl_rw_free(m);
}

static pl_rw_model *shape_chain(const char *x_shape)
{
    Onnx__ModelProto *m = model();
    input(m, "x", x_shape);
    init_i(m, "i0", "0", true);
    init_i(m, "ax", "0", false);
    init_i(m, "minus1", "-1", false);
    node(m, "Shape", "shape", "x", "sh");
    node(m, "Gather", "gather", "sh,i0", "d0");
    node(m, "Unsqueeze", "unsq", "d0,ax", "d0v");
    int_attr(node(m, "Concat", "concat", "d0v,minus1", "target"), "axis", 0);
    node(m, "Reshape", "reshape", "x,target", "y");
    output(m, "y", "");
    return load(m);
}

static void test_shape_fold(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(shape_chain("2,3,4"), "shape_fold");
    expect_ops(m, "Reshape");
    Onnx__ModelProto *p = unpack(m);
    const Onnx__TensorProto *t = NULL;
    for (size_t i = 0; i < p->graph->n_initializer; i++)
        if (!strcmp(p->graph->initializer[i]->name, "target")) t = p->graph->initializer[i];
    assert_non_null(t);
    int64_t v[2];
    assert_int_equal(t->raw_data.len, 16);
    memcpy(v, t->raw_data.data, 16);
    assert_int_equal(v[0], 2), assert_int_equal(v[1], -1); /* [x.shape[0], -1] */
    assert_int_equal(p->graph->n_initializer, 1);          /* i0, ax, minus1 dropped */
    pl_onnx__model_proto__free_unpacked(p, NULL);
    pl_rw_free(m);
    m = shape_chain("n,3,4"); /* the batch is symbolic: nothing is static */
    assert_int_equal(n_sites(m, "shape_fold"), 0);
    pl_rw_free(m);
}

static pl_rw_model *split_adds(bool data, int64_t axis, bool y1_read_twice)
{
    Onnx__ModelProto *m = model();
    input(m, "y", "2,11");
    init_i(m, "sizes", axis == 0 ? "1,1" : "5,6", false);
    init_f(m, "b1", axis == 0 ? "11" : "5", 0.1, 0.1, data);
    init_f(m, "b2", axis == 0 ? "11" : "6", -0.5, 0.2, data);
    int_attr(node(m, "Split", "split", "y,sizes", "y1,y2"), "axis", axis);
    node(m, "Add", "add1", "y1,b1", "z1");
    node(m, "Add", "add2", "b2,y2", "z2"); /* the bias first: Add commutes */
    output(m, "z1", "");
    output(m, "z2", "");
    if (y1_read_twice) {
        node(m, "Neg", "neg", "y1", "w");
        output(m, "w", "");
    }
    return load(m);
}

static void test_split_add_merge(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(split_adds(true, -1, false), "split_add_merge");
    expect_ops(m, "Add,Split");
    float b[11];
    expect_init(m, "Add", 1, "11", b, 11);
    /* b1 = 0.1, 0.2, ..., 0.5, then b2 = -0.5, -0.3, ... */
    assert_close(b[0], 0.1, 1e-6);
    assert_close(b[4], 0.5, 1e-6);
    assert_close(b[5], -0.5, 1e-6);
    assert_close(b[6], -0.3, 1e-6);
    Onnx__ModelProto *p = unpack(m);
    assert_string_equal(p->graph->node[1]->output[0], "z1");
    assert_string_equal(p->graph->node[1]->output[1], "z2");
    pl_onnx__model_proto__free_unpacked(p, NULL);
    pl_rw_free(m);
    m = split_adds(true, -1, true); /* y1 is read by the Neg as well */
    assert_int_equal(n_sites(m, "split_add_merge"), 0);
    pl_rw_free(m);
    m = split_adds(true, 0, false); /* a split of rows: a bias per row half is no concat */
    assert_int_equal(n_sites(m, "split_add_merge"), 0);
    pl_rw_free(m);
}

static pl_rw_model *distrib(bool data, bool same_a)
{
    Onnx__ModelProto *m = model();
    input(m, "a", "3,4");
    input(m, "a2", "3,4");
    init_f(m, "B1", "4,5", 0.1, 0.05, data);
    init_f(m, "B2", "4,5", -0.2, 0.03, data);
    node(m, "MatMul", "mm1", "a,B1", "p1");
    node(m, "MatMul", "mm2", same_a ? "a,B2" : "a2,B2", "p2");
    node(m, "Add", "add", "p1,p2", "y");
    output(m, "y", "");
    return load(m);
}

static void test_matmul_distrib(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(distrib(true, true), "matmul_distrib");
    expect_ops(m, "MatMul");
    float b[2];
    expect_init(m, "MatMul", 1, "4,5", b, 2);
    assert_close(b[0], 0.1 - 0.2, 1e-6);
    assert_close(b[1], 0.15 - 0.17, 1e-6);
    pl_rw_free(m);
    m = apply_one(distrib(false, true), "matmul_distrib");
    expect_init(m, "MatMul", 1, "4,5", NULL, 0);
    pl_rw_free(m);
    m = distrib(true, false); /* A B1 + A2 B2 does not factor */
    assert_int_equal(n_sites(m, "matmul_distrib"), 0);
    pl_rw_free(m);
}

/* y = (a B) C, a [3,4], B [4,5], C [5,2]; `shared`: the inner product is read by a Neg too;
 * `b_input`: B is a graph input, not an initializer. */
static pl_rw_model *mm_chain(bool data, bool shared, bool b_input)
{
    Onnx__ModelProto *m = model();
    input(m, "a", "3,4");
    if (b_input)
        input(m, "B", "4,5");
    else
        init_f(m, "B", "4,5", 0.1, 0.05, data);
    init_f(m, "C", "5,2", -0.2, 0.1, data);
    node(m, "MatMul", "mm1", "a,B", "p");
    node(m, "MatMul", "mm2", "p,C", "y");
    output(m, "y", "");
    if (shared) {
        node(m, "Neg", "neg", "p", "q");
        output(m, "q", "");
    }
    return load(m);
}

static void test_matmul_assoc(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(mm_chain(true, false, false), "matmul_assoc");
    expect_ops(m, "MatMul");
    float bc[2];
    expect_init(m, "MatMul", 1, "4,2", bc, 2);
    /* init_f: flat element i is base + step (i mod 7). B's row 0 (i = 0..4): 0.1 0.15 0.2 0.25
     * 0.3. C's column 0 (i = 0 2 4 6 8, mod 7: 0 2 4 6 1): -0.2 0 0.2 0.4 -0.1; column 1
     * (i = 1 3 5 7 9, mod 7: 1 3 5 0 2): -0.1 0.1 0.3 -0.2 0. */
    assert_close(bc[0], -0.02 + 0 + 0.04 + 0.1 - 0.03, 1e-6);   /* 0.09 */
    assert_close(bc[1], -0.01 + 0.015 + 0.06 - 0.05 + 0, 1e-6); /* 0.015 */
    pl_rw_free(m);
    m = apply_one(mm_chain(false, false, false), "matmul_assoc");
    expect_init(m, "MatMul", 1, "4,2", NULL, 0);
    pl_rw_free(m);
    m = mm_chain(true, true, false); /* the inner product is read twice */
    assert_int_equal(n_sites(m, "matmul_assoc"), 0);
    pl_rw_free(m);
    m = mm_chain(true, false, true); /* B is not a constant: nothing to fold */
    assert_int_equal(n_sites(m, "matmul_assoc"), 0);
    pl_rw_free(m);
}

static pl_rw_model *const_chain(const char *type, const char *c2_dims)
{
    Onnx__ModelProto *m = model();
    input(m, "x", "2,3");
    init_f(m, "c1", "3", 0.5, 0.25, true);
    init_f(m, "c2", c2_dims, 2.0, 1.0, true);
    node(m, type, "inner", "x,c1", "u");
    node(m, type, "outer", "c2,u", "y");
    output(m, "y", "");
    return load(m);
}

static void test_const_assoc(void **state)
{
    (void)state;
    pl_rw_model *m = apply_one(const_chain("Add", ""), "add_const_assoc");
    expect_ops(m, "Add");
    float c[3];
    expect_init(m, "Add", 1, "3", c, 3);
    assert_close(c[0], 2.5, 1e-6);
    assert_close(c[2], 3.0, 1e-6); /* c1 + 2 */
    pl_rw_free(m);
    m = apply_one(const_chain("Mul", "1"), "mul_const_assoc");
    expect_init(m, "Mul", 1, "3", c, 3);
    assert_close(c[1], 1.5, 1e-6); /* 0.75 * 2 */
    pl_rw_free(m);
    m = const_chain("Add", "2,3"); /* c2 widens nothing but has another shape than c1 */
    assert_int_equal(n_sites(m, "add_const_assoc"), 0);
    pl_rw_free(m);
    m = const_chain("Add", "4,1,1"); /* c2 would widen the result: [4,2,3] */
    assert_int_equal(n_sites(m, "add_const_assoc"), 0);
    pl_rw_free(m);
}

/* A body that reads d0 from the enclosing graph: Cast(d0) to float. */
static Onnx__AttributeProto *branch(const char *attr, const char *out)
{
    Onnx__AttributeProto *a = malloc(sizeof *a);
    pl_onnx__attribute_proto__init(a);
    a->name = strdup(attr);
    a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    Onnx__ModelProto *holder = model(); /* borrow its graph */
    a->g = holder->graph;
    holder->graph = NULL;
    pl_onnx__model_proto__free_unpacked(holder, NULL);
    Onnx__ModelProto tmp = {.graph = a->g};
    int_attr(node(&tmp, "Cast", out, "d0", out), "to", FLT);
    output(&tmp, out, "");
    return a;
}

/* The fold drops the chain that fed the folded op, but not a node a subgraph still reads from
 * the enclosing scope (d0, read by the If's branches, is no input of the If node). */
static void test_shape_fold_keeps_outer_reads(void **state)
{
    (void)state;
    Onnx__ModelProto *m = model();
    input(m, "x", "2,3,4");
    APPEND(m->graph->input, m->graph->n_input, vi("cond", ""));
    m->graph->input[1]->type->tensor_type->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    init_i(m, "i0", "0", true);
    init_i(m, "ax", "0", false);
    init_i(m, "minus1", "-1", false);
    node(m, "Shape", "shape", "x", "sh");
    node(m, "Gather", "gather", "sh,i0", "d0");
    node(m, "Unsqueeze", "unsq", "d0,ax", "d0v");
    int_attr(node(m, "Concat", "concat", "d0v,minus1", "target"), "axis", 0);
    Onnx__NodeProto *iff = node(m, "If", "if", "cond", "z");
    APPEND(iff->attribute, iff->n_attribute, branch("then_branch", "t"));
    APPEND(iff->attribute, iff->n_attribute, branch("else_branch", "e"));
    node(m, "Reshape", "reshape", "x,target", "y");
    output(m, "y", "");
    output(m, "z", "");
    pl_rw_model *r = load(m);
    pl_rw_site *s;
    int n;
    pl_err err = {""};
    if (pl_rw_find(r, NULL, pl_rw_rule_index("shape_fold"), &s, &n, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(n, 2); /* the Gather (read by the If) and the Concat */
    assert_string_equal(s[1].nodes[0], "concat");
    pl_rw_model *out = pl_rw_apply(r, NULL, &s[1], &err);
    if (!out) fail_msg("%s", err.msg);
    expect_ops(out, "Shape,Gather,If,Reshape");
    pl_graph *g = pl_rw_graph(out, NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    pl_graph_free(g);
    pl_rw_sites_free(s, n);
    pl_rw_free(out), pl_rw_free(r);
}

/* A site that does not match (a stale one, or one for another model) is refused whole. */
static void test_stale_site(void **state)
{
    (void)state;
    pl_rw_model *m = conv_bn(true, false);
    pl_rw_site s = {pl_rw_rule_index("conv_bn_fold"), 2, (char *[]){"bn", "conv"}};
    pl_err err = {""};
    assert_null(pl_rw_apply(m, NULL, &s, &err));
    assert_contains(err.msg, "rule conv_bn_fold at node 'bn'");
    s.nodes = (char *[]){"nope", "bn"};
    assert_null(pl_rw_apply(m, NULL, &s, &err));
    assert_contains(err.msg, "no such node");
    pl_rw_free(m);
}

/* ---- equivalence in onnxruntime ---- */

static pl_ort *worker;

#define CACHE "build/ort-cache"

static void start_worker(void)
{
    tu_require_ort();
    pl_err err = {""};
    if (!worker) worker = pl_ort_start(&(pl_ort_opts){.timeout_s = 600}, &err);
    if (!worker) fail_msg("%s", err.msg);
}

static void save(const pl_rw_model *m, const char *path)
{
    pl_err err = {""};
    if (pl_rw_save(m, path, &err) < 0) fail_msg("%s", err.msg);
}

/* Runs before (the model) and after (its one site of `rule` applied) on the same random
 * inputs; returns the largest relative difference of an output. */
static double max_diff(pl_rw_model *m, const char *rule)
{
    char dir[256];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "rewrite"), 0);
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/a.onnx", dir), snprintf(b, sizeof b, "%s/b.onnx", dir);
    save(m, a);
    m = apply_one(m, rule);
    save(m, b);
    pl_err err = {""};
    pl_ort_compare_result r;
    if (pl_ort_compare(worker, a, (const char *[]){b}, 1, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_true(r.finite);
    double d = r.max_rel;
    pl_ort_compare_result_free(&r);
    pl_rw_free(m);
    tu_rmtree(dir);
    return d;
}

static void test_equivalence(void **state)
{
    (void)state;
    start_worker();
    struct {
        const char *what;
        pl_rw_model *m;
        const char *rule;
    } cases[] = {
        {"conv_bn_fold", conv_bn(true, false), "conv_bn_fold"},
        {"matmul_add_gemm", matmul_add(true, "3,4", "4,5", "5"), "matmul_add_gemm"},
        {"matmul_add_gemm [1,5] bias", matmul_add(true, "3,4", "4,5", "1,5"), "matmul_add_gemm"},
        {"merge_matmul", parallel_mm(true, false), "merge_matmul"},
        {"merge_conv", parallel_conv(true, "1,1"), "merge_conv"},
        {"transpose_merge (cancel)", transposes("0,2,1", "0,2,1", false), "transpose_merge"},
        {"transpose_merge", transposes("1,0,2", "0,2,1", false), "transpose_merge"},
        {"reshape_merge", reshapes("2,3,4", "3,8"), "reshape_merge"},
        {"shape_fold", shape_chain("2,3,4"), "shape_fold"},
        {"split_add_merge", split_adds(true, -1, false), "split_add_merge"},
        {"matmul_distrib", distrib(true, true), "matmul_distrib"},
        {"matmul_assoc", mm_chain(true, false, false), "matmul_assoc"},
        {"add_const_assoc", const_chain("Add", ""), "add_const_assoc"},
        {"mul_const_assoc", const_chain("Mul", "1"), "mul_const_assoc"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double d = max_diff(cases[i].m, cases[i].rule);
        printf("  %-28s max rel %.3g\n", cases[i].what, d);
        if (!(d <= 1e-5)) fail_msg("%s: outputs differ by %g relative", cases[i].what, d);
    }
}

/* The comparison is not vacuous: a wrong fold (epsilon ignored would be too small to see, so
 * the BN's scale is doubled after the fold) differs by far more than the tolerance. */
static void test_equivalence_detects(void **state)
{
    (void)state;
    start_worker();
    pl_err err = {""};
    char dir[256];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "rewrite"), 0);
    char a[300], b[300];
    snprintf(a, sizeof a, "%s/a.onnx", dir), snprintf(b, sizeof b, "%s/b.onnx", dir);
    pl_rw_model *m = conv_bn(true, false);
    save(m, a);
    pl_rw_free(m);
    m = apply_one(conv_bn_s(true, false, 1.0), "conv_bn_fold"); /* another BN scale */
    save(m, b);
    pl_rw_free(m);
    pl_ort_compare_result r;
    if (pl_ort_compare(worker, a, (const char *[]){b}, 1, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_true(r.max_rel > 1e-2);
    pl_ort_compare_result_free(&r);
    tu_rmtree(dir);
}

/* ---- the zoo ---- */

/* The sites applied to the weightless model, replayed by node name on its inflated copy (the
 * one onnxruntime runs), give a model that computes what the inflated original does. */
static void replay_inflated(const char *path, const pl_rw_site *log, int n_log, const char *dir)
{
    start_worker();
    pl_err err = {""};
    char ref[4096], out[300];
    snprintf(out, sizeof out, "%s/weighted.onnx", dir);
    if (pl_rw_replay_inflated(path, CACHE, log, n_log, ref, sizeof ref, out, &err) < 0)
        fail_msg("%s", err.msg);
    pl_ort_compare_result r;
    if (pl_ort_compare(worker, ref, (const char *[]){out}, 1, &r, &err) < 0)
        fail_msg("%s", err.msg);
    printf("  %s, %d sites replayed on the inflated copy: max rel %.3g\n", path, n_log, r.max_rel);
    assert_true(r.finite);
    assert_true(r.max_rel <= 1e-5);
    pl_ort_compare_result_free(&r);
}

/* Every site of every rule, greedily: `must_apply` applies at least `at_least` times, and the
 * result loads back with the original's outputs (names, shapes). */
static void zoo(const char *path, const char *must_apply, int at_least)
{
    pl_err err = {""};
    pl_rw_model *m = pl_rw_load(path, &err);
    if (!m) fail_msg("%s", err.msg);
    pl_graph *g0 = tu_load(path);
    int n_rules, n_log;
    pl_rw_site *log;
    const pl_rw_rule *rules = pl_rw_rules(&n_rules);
    int *counts = calloc((size_t)n_rules, sizeof *counts);
    int before = pl_rw_nodes(m);
    int n = pl_rw_greedy(&m, NULL, 0, counts, &log, &n_log, &err);
    if (n < 0) fail_msg("%s", err.msg);
    printf("  %s: %d ops -> %d ops;", path, before, pl_rw_nodes(m));
    for (int r = 0; r < n_rules; r++)
        if (counts[r]) printf(" %s %d", rules[r].name, counts[r]);
    printf("\n");
    assert_int_equal(n_log, n);
    assert_true(counts[pl_rw_rule_index(must_apply)] >= at_least);
    char tmp[256];
    assert_int_equal(tu_mkdtemp(tmp, sizeof tmp, "rewrite"), 0);
    char out[300];
    snprintf(out, sizeof out, "%s/out.onnx", tmp);
    save(m, out);
    pl_graph *g1 = tu_load(out); /* loads back through the ordinary reader */
    assert_int_equal(g1->n_outputs, g0->n_outputs);
    for (int i = 0; i < g0->n_outputs; i++) {
        const pl_tensor *a = &g0->tensors[g0->outputs[i]], *b = &g1->tensors[g1->outputs[i]];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->rank, b->rank);
        for (int d = 0; d < a->rank; d++)
            assert_int_equal(a->dims[d], b->dims[d]);
    }
    replay_inflated(path, log, n_log, tmp);
    pl_rw_sites_free(log, n_log);
    free(counts);
    pl_graph_free(g0), pl_graph_free(g1), pl_rw_free(m);
    tu_rmtree(tmp);
}

static void test_zoo_resnet50(void **state)
{
    (void)state;
    zoo("models/resnet50.onnx", "merge_conv", 1);
}

static void test_zoo_bert_base(void **state)
{
    (void)state;
    zoo("models/bert_base.onnx", "split_add_merge", 12); /* after merge_matmul: Q, K, V of each
                                                            of the 12 layers */
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
        cmocka_unit_test(test_conv_bn_fold),
        cmocka_unit_test(test_conv_bn_refused),
        cmocka_unit_test(test_matmul_add_gemm),
        cmocka_unit_test(test_made_names_are_free),
        cmocka_unit_test(test_gemm_keeps_order),
        cmocka_unit_test(test_merge_matmul),
        cmocka_unit_test(test_merge_conv),
        cmocka_unit_test(test_transpose_merge),
        cmocka_unit_test(test_reshape_merge),
        cmocka_unit_test(test_shape_fold),
        cmocka_unit_test(test_split_add_merge),
        cmocka_unit_test(test_matmul_distrib),
        cmocka_unit_test(test_matmul_assoc),
        cmocka_unit_test(test_const_assoc),
        cmocka_unit_test(test_shape_fold_keeps_outer_reads),
        cmocka_unit_test(test_stale_site),
        cmocka_unit_test(test_equivalence),
        cmocka_unit_test(test_equivalence_detects),
        cmocka_unit_test(test_zoo_resnet50),
        cmocka_unit_test(test_zoo_bert_base),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
