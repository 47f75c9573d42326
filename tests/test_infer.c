/* test_infer.c: shape inference and cost annotation (pl_graph_infer). Graphs are built with
 * the builder API so every shape and FLOP count here is computed by hand; the oracle tests at
 * the end check the rules against the shapes declared in the ONNX test-data models and the
 * model zoo, and the zoo's FLOP counts computed with the onnx package (models/zoo.json). */
#include "testutil.h"

#include "onnx/onnx.pb-c.h"

#include <glob.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building graphs by name ---- */

/* A tensor with a known shape: dims end at -2 ("X", FLOAT, 1, 3, -2); -1 is unknown. */
static int tn(pl_graph *g, const char *name, int dtype, ...)
{
    int64_t d[16];
    int rank = 0;
    va_list ap;
    va_start(ap, dtype);
    for (int64_t x; (x = va_arg(ap, int)) != -2;)
        d[rank++] = x;
    va_end(ap);
    int t = pl_graph_tensor(g, name);
    pl_tensor_set_shape(&g->tensors[t], dtype, rank, d);
    return t;
}

static int input(pl_graph *g, const char *name, int dtype, int rank, const int64_t *dims)
{
    int t = pl_graph_tensor(g, name);
    pl_tensor_set_shape(&g->tensors[t], dtype, rank, dims);
    pl_graph_add_input(g, t);
    return t;
}

/* An int64 initializer with known contents, 1-D (or a scalar when scalar is set). */
static int iconst(pl_graph *g, const char *name, bool scalar, int n, const int64_t *v)
{
    int t = pl_graph_tensor(g, name);
    int64_t dim = n;
    pl_tensor_set_shape(&g->tensors[t], PL_DT_INT64, scalar ? 0 : 1, &dim);
    pl_tensor_set_ivals(&g->tensors[t], v, n);
    g->tensors[t].flags |= PL_TENSOR_WEIGHT;
    return t;
}

static int fconst(pl_graph *g, const char *name, int n, const double *v)
{
    int t = pl_graph_tensor(g, name);
    int64_t dim = n;
    pl_tensor_set_shape(&g->tensors[t], PL_DT_FLOAT, 1, &dim);
    pl_tensor_set_fvals(&g->tensors[t], v, n);
    g->tensors[t].flags |= PL_TENSOR_WEIGHT;
    return t;
}

static int weight(pl_graph *g, const char *name, int rank, const int64_t *dims)
{
    int t = pl_graph_tensor(g, name);
    pl_tensor_set_shape(&g->tensors[t], PL_DT_FLOAT, rank, dims);
    g->tensors[t].flags |= PL_TENSOR_WEIGHT;
    return t;
}

static void attr_i(pl_graph *g, int o, const char *name, int64_t v)
{
    pl_op_add_attr(g, o, name, PL_ATTR_INT)->i = v;
}

static void attr_s(pl_graph *g, int o, const char *name, const char *v)
{
    pl_op_add_attr(g, o, name, PL_ATTR_STRING)->s = strdup(v);
}

static void attr_ints(pl_graph *g, int o, const char *name, int n, const int64_t *v)
{
    pl_attr *a = pl_op_add_attr(g, o, name, PL_ATTR_INTS);
    a->ints = malloc(n * sizeof *v);
    memcpy(a->ints, v, n * sizeof *v);
    a->n = n;
}

static void attr_floats(pl_graph *g, int o, const char *name, int n, const double *v)
{
    pl_attr *a = pl_op_add_attr(g, o, name, PL_ATTR_FLOATS);
    a->floats = malloc(n * sizeof *v);
    memcpy(a->floats, v, n * sizeof *v);
    a->n = n;
}

#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define F64(...) ((const double[]){__VA_ARGS__})
#define NELEM(...) (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static void run(pl_graph *g)
{
    pl_err err = {""};
    if (pl_graph_finalize(g, "test", &err) < 0) fail_msg("finalize: %s", err.msg);
    if (pl_graph_infer(g, &err) < 0) fail_msg("infer: %s", err.msg);
}

static const pl_tensor *T(const pl_graph *g, const char *name)
{
    int t = pl_graph_find_tensor(g, name);
    if (t < 0) fail_msg("no tensor '%s'", name);
    return &g->tensors[t];
}

/* Checks a tensor's shape; dims end at -2 ("y", 2, 3, -2); -1 stands for unknown. */
static void check_shape(const pl_graph *g, const char *name, ...)
{
    int64_t d[16];
    int rank = 0;
    va_list ap;
    va_start(ap, name);
    for (int64_t x; (x = va_arg(ap, int)) != -2;)
        d[rank++] = x;
    va_end(ap);
    const pl_tensor *t = T(g, name);
    char got[128] = "", want[128] = "";
    for (int j = 0, n = 0; j < t->rank; j++)
        n += snprintf(got + n, sizeof got - n, "%lld,", (long long)t->dims[j]);
    for (int j = 0, n = 0; j < rank; j++)
        n += snprintf(want + n, sizeof want - n, "%lld,", (long long)d[j]);
    if (t->rank != rank || strcmp(got, want) != 0)
        fail_msg("tensor '%s': shape (rank %d) [%s], expected (rank %d) [%s]", name, t->rank, got,
                 rank, want);
}

static const pl_op *O(const pl_graph *g, int o)
{
    return &g->ops[o];
}

static bool has_warning(const pl_graph *g, const char *needle)
{
    for (int j = 0; j < g->n_warnings_stored; j++)
        if (strstr(g->warnings[j], needle)) return true;
    return false;
}

static int count_warnings(const pl_graph *g, const char *needle)
{
    int n = 0;
    for (int j = 0; j < g->n_warnings_stored; j++)
        n += strstr(g->warnings[j], needle) != NULL;
    return n;
}

/* ---- dense ops ---- */

/* Grouped, dilated, strided Conv with explicit pads: ek = (3-1)·2+1 = 5,
 * out = (32 + 2 - 5) / 2 + 1 = 15; FLOPs = 2·N·Cout·Hout·Wout·(Cin/groups)·Kh·Kw. */
static void test_conv_grouped_dilated(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("conv");
    input(g, "X", PL_DT_FLOAT, 4, I64(1, 8, 32, 32));
    weight(g, "W", 4, I64(16, 2, 3, 3));
    weight(g, "B", 1, I64(16));
    int c = tu_op(g, NULL, "Conv", "X,W,B", "Y");
    attr_i(g, c, "group", 4);
    attr_ints(g, c, "strides", 2, I64(2, 2));
    attr_ints(g, c, "dilations", 2, I64(2, 2));
    attr_ints(g, c, "pads", 4, I64(1, 1, 1, 1));
    run(g);
    check_shape(g, "Y", 1, 16, 15, 15, -2);
    assert_int_equal(T(g, "Y")->dtype, PL_DT_FLOAT);
    assert_int_equal(O(g, c)->cls, PL_CLASS_DENSE);
    assert_close(O(g, c)->flops, 2.0 * 1 * 16 * 15 * 15 * 2 * 3 * 3, 1e-12);
    /* X 32768 + W 1152 + B 64 + Y 14400 bytes */
    assert_close(O(g, c)->bytes_moved, 32768 + 1152 + 64 + 14400, 1e-12);
    assert_false(O(g, c)->flags & (PL_OP_SHAPE_UNKNOWN | PL_OP_UNKNOWN_TYPE));
    pl_graph_free(g);
}

/* auto_pad: SAME_UPPER and SAME_LOWER give ceil(in / stride); VALID no padding; 3-D. */
static void test_conv_auto_pad(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("conv");
    input(g, "X", PL_DT_FLOAT, 4, I64(1, 8, 33, 33));
    input(g, "X3", PL_DT_FLOAT, 5, I64(2, 3, 8, 9, 10));
    weight(g, "W", 4, I64(4, 8, 3, 3));
    weight(g, "W3", 5, I64(5, 3, 3, 3, 3));
    int a = tu_op(g, NULL, "Conv", "X,W", "Ya");
    attr_s(g, a, "auto_pad", "SAME_UPPER");
    attr_ints(g, a, "strides", 2, I64(2, 2));
    int b = tu_op(g, NULL, "Conv", "X,W", "Yb");
    attr_s(g, b, "auto_pad", "SAME_LOWER");
    int v = tu_op(g, NULL, "Conv", "X,W", "Yv");
    attr_s(g, v, "auto_pad", "VALID");
    attr_ints(g, v, "strides", 2, I64(2, 2));
    int d3 = tu_op(g, NULL, "Conv", "X3,W3", "Y3");
    run(g);
    check_shape(g, "Ya", 1, 4, 17, 17, -2);
    check_shape(g, "Yb", 1, 4, 33, 33, -2);
    check_shape(g, "Yv", 1, 4, 16, 16, -2);
    check_shape(g, "Y3", 2, 5, 6, 7, 8, -2);
    assert_close(O(g, a)->flops, 2.0 * 4 * 17 * 17 * 8 * 9, 1e-12);
    assert_close(O(g, d3)->flops, 2.0 * 2 * 5 * 6 * 7 * 8 * 3 * 27, 1e-12);
    pl_graph_free(g);
}

/* out = s·(in-1) + output_padding + (k-1)·d + 1 - pads = 2·4 + 1 + 3 - 2 = 10; channels
 * W.dim1 · group = 6; FLOPs = 2·N·Cin·Hin·Win·(Cout/group)·Kh·Kw. */
static void test_conv_transpose(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("convt");
    input(g, "X", PL_DT_FLOAT, 4, I64(1, 4, 5, 5));
    weight(g, "W", 4, I64(4, 3, 3, 3));
    int c = tu_op(g, NULL, "ConvTranspose", "X,W", "Y");
    attr_i(g, c, "group", 2);
    attr_ints(g, c, "strides", 2, I64(2, 2));
    attr_ints(g, c, "pads", 4, I64(1, 1, 1, 1));
    attr_ints(g, c, "output_padding", 2, I64(1, 1));
    int s = tu_op(g, NULL, "ConvTranspose", "X,W", "Ys");
    attr_i(g, s, "group", 2);
    attr_ints(g, s, "strides", 2, I64(2, 2));
    attr_ints(g, s, "output_shape", 2, I64(11, 11));
    int u = tu_op(g, NULL, "ConvTranspose", "X,W", "Yu");
    attr_s(g, u, "auto_pad", "SAME_UPPER");
    attr_ints(g, u, "strides", 2, I64(3, 3));
    run(g);
    check_shape(g, "Y", 1, 6, 10, 10, -2);
    check_shape(g, "Ys", 1, 6, 11, 11, -2);
    check_shape(g, "Yu", 1, 3, 15, 15, -2);
    assert_close(O(g, c)->flops, 2.0 * 1 * 4 * 5 * 5 * 3 * 3 * 3, 1e-12);
    assert_int_equal(O(g, c)->cls, PL_CLASS_DENSE);
    pl_graph_free(g);
}

/* Batch dims broadcast; 1-D operands get a dim that is dropped again. FLOPs 2·batch·M·K·N. */
static void test_matmul(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("mm");
    input(g, "A", PL_DT_FLOAT, 4, I64(2, 1, 4, 3));
    input(g, "B", PL_DT_FLOAT, 3, I64(5, 3, 6));
    input(g, "v", PL_DT_FLOAT, 1, I64(3));
    input(g, "C", PL_DT_FLOAT, 3, I64(2, 3, 4));
    input(g, "D", PL_DT_FLOAT, 3, I64(-1, 4, 3));
    int m = tu_op(g, NULL, "MatMul", "A,B", "Y");
    int lv = tu_op(g, NULL, "MatMul", "v,C", "Yv");
    int rv = tu_op(g, NULL, "MatMul", "C,v4", "Yr");
    weight(g, "v4", 1, I64(4));
    tu_op(g, NULL, "MatMul", "D,B", "Yd");
    tu_op(g, NULL, "MatMul", "v,v", "Ydot");
    run(g);
    check_shape(g, "Y", 2, 5, 4, 6, -2);
    check_shape(g, "Yv", 2, 4, -2);
    check_shape(g, "Yr", 2, 3, -2);
    check_shape(g, "Yd", 5, 4, 6, -2); /* unknown 1 or 5 against 5 */
    check_shape(g, "Ydot", -2);
    assert_close(O(g, m)->flops, 2.0 * 10 * 4 * 3 * 6, 1e-12);
    assert_close(O(g, lv)->flops, 2.0 * 2 * 1 * 3 * 4, 1e-12);
    assert_close(O(g, rv)->flops, 2.0 * 2 * 3 * 4 * 1, 1e-12);
    pl_graph_free(g);
}

/* Gemm with transA and transB: 2·M·K·N (C not counted, like a bias). */
static void test_gemm(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("gemm");
    input(g, "A", PL_DT_FLOAT, 2, I64(3, 4)); /* [K, M] */
    weight(g, "B", 2, I64(5, 3));             /* [N, K] */
    weight(g, "C", 1, I64(5));
    int o = tu_op(g, NULL, "Gemm", "A,B,C", "Y");
    attr_i(g, o, "transA", 1);
    attr_i(g, o, "transB", 1);
    int p = tu_op(g, NULL, "Gemm", "Y,W2", "Z");
    weight(g, "W2", 2, I64(5, 7));
    run(g);
    check_shape(g, "Y", 4, 5, -2);
    check_shape(g, "Z", 4, 7, -2);
    assert_close(O(g, o)->flops, 2.0 * 4 * 3 * 5, 1e-12);
    assert_close(O(g, p)->flops, 2.0 * 4 * 5 * 7, 1e-12);
    pl_graph_free(g);
}

/* Bidirectional LSTM: Y [seq, 2, batch, H], Y_h and Y_c [2, batch, H]; FLOPs per step and
 * direction 2·4·H·(I+H)·B + 42·H·B; bytes with R read at every step. */
static void test_lstm(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("lstm");
    input(g, "X", PL_DT_FLOAT, 3, I64(7, 2, 10));
    weight(g, "W", 3, I64(2, 80, 10));
    weight(g, "R", 3, I64(2, 80, 20));
    weight(g, "B", 2, I64(2, 160));
    int l = tu_op(g, NULL, "LSTM", "X,W,R,B", "Y,Yh,Yc");
    attr_i(g, l, "hidden_size", 20);
    attr_s(g, l, "direction", "bidirectional");
    input(g, "Xb", PL_DT_FLOAT, 3, I64(2, 7, 10));
    int gr = tu_op(g, NULL, "GRU", "Xb,Wg,Rg", "Yg,Yhg");
    weight(g, "Wg", 3, I64(1, 60, 10));
    weight(g, "Rg", 3, I64(1, 60, 20));
    attr_i(g, gr, "layout", 1);
    int rn = tu_op(g, NULL, "RNN", "X,Wr,Rr", "_,Yhr");
    weight(g, "Wr", 3, I64(1, 20, 10));
    weight(g, "Rr", 3, I64(1, 20, 20));
    run(g);
    check_shape(g, "Y", 7, 2, 2, 20, -2);
    check_shape(g, "Yh", 2, 2, 20, -2);
    check_shape(g, "Yc", 2, 2, 20, -2);
    check_shape(g, "Yg", 2, 7, 1, 20, -2); /* layout 1: [batch, seq, dirs, H] */
    check_shape(g, "Yhg", 2, 1, 20, -2);
    check_shape(g, "Yhr", 1, 2, 20, -2);
    double step = 2.0 * 4 * 20 * (10 + 20) * 2 + 42.0 * 20 * 2;
    assert_close(O(g, l)->flops, 7 * 2 * step, 1e-12);
    assert_close(O(g, gr)->flops, 7 * (2.0 * 3 * 20 * 30 * 2 + 28.0 * 20 * 2), 1e-12);
    assert_close(O(g, rn)->flops, 7 * (2.0 * 20 * 30 * 2 + 8.0 * 20 * 2), 1e-12);
    /* bytes: every distinct tensor once, and R once more per step after the first (each step's
     * GEMM reads it): LSTM X 560 + W 6400 + R 12800 + B 1280 + Y 2240 + Yh 320 + Yc 320, then
     * 6 x 12800; GRU Xb 560 + Wg 2400 + Rg 4800 + Yg 1120 + Yhg 160, then 6 x 4800; RNN X 560
     * + Wr 800 + Rr 1600 + Yhr 160, then 6 x 1600 */
    assert_close(O(g, l)->bytes_moved, 23920 + 6 * 12800, 1e-12);
    assert_close(O(g, gr)->bytes_moved, 9040 + 6 * 4800, 1e-12);
    assert_close(O(g, rn)->bytes_moved, 3120 + 6 * 1600, 1e-12);
    /* the re-reads apart, and the tensor they read (pl_op.bytes_reread) */
    assert_close(O(g, l)->bytes_reread, 6 * 12800, 1e-12);
    assert_close(O(g, l)->reread_tensor_bytes, 12800, 1e-12);
    assert_close(O(g, gr)->bytes_reread, 6 * 4800, 1e-12);
    assert_close(O(g, rn)->reread_tensor_bytes, 1600, 1e-12);
    pl_graph_free(g);
}

/* Einsum: explicit, implicit and ellipsis forms; FLOPs 2·product of all index extents. */
static void test_einsum(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("einsum");
    input(g, "A", PL_DT_FLOAT, 3, I64(2, 3, 4));
    input(g, "B", PL_DT_FLOAT, 3, I64(2, 4, 5));
    int e = tu_op(g, NULL, "Einsum", "A,B", "Y");
    attr_s(g, e, "equation", "bij,bjk->bik");
    int i = tu_op(g, NULL, "Einsum", "A,B", "Yi");
    attr_s(g, i, "equation", "bij, bjk");
    int el = tu_op(g, NULL, "Einsum", "A,B", "Ye");
    attr_s(g, el, "equation", "...ij,...jk->...ik");
    int t = tu_op(g, NULL, "Einsum", "A", "Yt");
    attr_s(g, t, "equation", "bij->jb");
    int bad = tu_op(g, NULL, "Einsum", "A,B", "Ybad");
    attr_s(g, bad, "equation", "bij,bjk->bi?");
    run(g);
    check_shape(g, "Y", 2, 3, 5, -2);
    check_shape(g, "Yi", 3, 5, -2); /* implicit: letters used once, sorted: i, k */
    check_shape(g, "Ye", 2, 3, 5, -2);
    check_shape(g, "Yt", 4, 2, -2);
    assert_int_equal(T(g, "Ybad")->rank, -1);
    assert_close(O(g, e)->flops, 2.0 * 2 * 3 * 4 * 5, 1e-12);
    assert_close(O(g, el)->flops, 2.0 * 2 * 3 * 4 * 5, 1e-12);
    assert_int_equal(O(g, e)->cls, PL_CLASS_DENSE);
    pl_graph_free(g);
}

/* ---- elementwise ---- */

static void test_broadcast(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("bcast");
    input(g, "A", PL_DT_FLOAT, 3, I64(3, 1, 5));
    input(g, "B", PL_DT_FLOAT, 2, I64(4, 1));
    input(g, "U", PL_DT_FLOAT, 2, I64(-1, 3));
    input(g, "V", PL_DT_FLOAT, 2, I64(-1, 1));
    input(g, "S", PL_DT_FLOAT, 0, NULL);
    int a = tu_op(g, NULL, "Add", "A,B", "Y");
    tu_op(g, NULL, "Mul", "U,S", "Yu");
    tu_op(g, NULL, "Sub", "U,V", "Yuv");
    tu_op(g, NULL, "Equal", "A,B", "Yeq");
    int s = tu_op(g, NULL, "Sum", "A,B,Y", "Ysum");
    int ge = tu_op(g, NULL, "Gelu", "Y", "Yg");
    tu_op(g, NULL, "Where", "Yeq,A,B", "Yw");
    run(g);
    check_shape(g, "Y", 3, 4, 5, -2);
    check_shape(g, "Yu", -1, 3, -2);
    check_shape(g, "Yuv", -1, 3, -2);
    check_shape(g, "Yeq", 3, 4, 5, -2);
    check_shape(g, "Yw", 3, 4, 5, -2);
    assert_int_equal(T(g, "Yeq")->dtype, PL_DT_BOOL);
    assert_int_equal(T(g, "Yeq")->bytes, 60);
    assert_int_equal(T(g, "Yu")->bytes, -1);
    assert_int_equal(O(g, a)->cls, PL_CLASS_ELEMENTWISE);
    assert_close(O(g, a)->flops, 60, 1e-12);
    assert_close(O(g, s)->flops, 120, 1e-12); /* three inputs: two additions */
    assert_close(O(g, ge)->flops, 60 * 8, 1e-12);
    pl_graph_free(g);
}

/* dtypes: Shape, Size, ArgMax -> int64; comparisons -> bool; Cast -> 'to'. */
static void test_dtypes(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("dtypes");
    input(g, "X", PL_DT_FLOAT16, 2, I64(3, 4));
    tu_op(g, NULL, "Shape", "X", "s");
    tu_op(g, NULL, "Size", "X", "n");
    int am = tu_op(g, NULL, "ArgMax", "X", "am");
    attr_i(g, am, "axis", 1);
    attr_i(g, am, "keepdims", 0);
    tu_op(g, NULL, "Greater", "X,X", "gt");
    int c = tu_op(g, NULL, "Cast", "X", "c");
    attr_i(g, c, "to", PL_DT_DOUBLE);
    int d = tu_op(g, NULL, "Dropout", "X", "dy,dm");
    tu_op(g, NULL, "Relu", "X", "r");
    run(g);
    assert_int_equal(T(g, "s")->dtype, PL_DT_INT64);
    check_shape(g, "s", 2, -2);
    assert_int_equal(T(g, "s")->n_ivals, 2);
    assert_int_equal(T(g, "s")->ivals[1], 4);
    assert_int_equal(T(g, "n")->dtype, PL_DT_INT64);
    check_shape(g, "n", -2);
    assert_int_equal(T(g, "n")->ivals[0], 12);
    assert_int_equal(T(g, "am")->dtype, PL_DT_INT64);
    check_shape(g, "am", 3, -2);
    assert_int_equal(T(g, "gt")->dtype, PL_DT_BOOL);
    assert_int_equal(T(g, "c")->dtype, PL_DT_DOUBLE);
    assert_int_equal(T(g, "c")->bytes, 96);
    assert_int_equal(T(g, "dm")->dtype, PL_DT_BOOL);
    assert_int_equal(T(g, "r")->dtype, PL_DT_FLOAT16);
    assert_int_equal(T(g, "r")->bytes, 24);
    assert_int_equal(O(g, d)->cls, PL_CLASS_DATA_MOVEMENT);
    pl_graph_free(g);
}

static void test_normalisation(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("norm");
    input(g, "X", PL_DT_FLOAT, 3, I64(2, 5, 8));
    weight(g, "s", 1, I64(8));
    int ln = tu_op(g, NULL, "LayerNormalization", "X,s", "Y,M,R");
    int sm = tu_op(g, NULL, "Softmax", "X", "P");
    input(g, "Xb", PL_DT_FLOAT, 4, I64(2, 3, 4, 4));
    weight(g, "c", 1, I64(3));
    int bn = tu_op(g, NULL, "BatchNormalization", "Xb,c,c,c,c", "Yb");
    run(g);
    check_shape(g, "Y", 2, 5, 8, -2);
    check_shape(g, "M", 2, 5, 1, -2);
    check_shape(g, "R", 2, 5, 1, -2);
    check_shape(g, "Yb", 2, 3, 4, 4, -2);
    assert_close(O(g, ln)->flops, 80 * 8, 1e-12);
    assert_close(O(g, sm)->flops, 80 * 5, 1e-12);
    assert_close(O(g, bn)->flops, 96 * 2, 1e-12);
    assert_int_equal(O(g, ln)->cls, PL_CLASS_ELEMENTWISE);
    assert_int_equal(O(g, sm)->cls, PL_CLASS_REDUCTION);
    pl_graph_free(g);
}

/* ---- pooling and reductions ---- */

static void test_pooling(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("pool");
    input(g, "X", PL_DT_FLOAT, 4, I64(1, 2, 4, 4));
    int f = tu_op(g, NULL, "MaxPool", "X", "Yf");
    attr_ints(g, f, "kernel_shape", 2, I64(3, 3));
    attr_ints(g, f, "strides", 2, I64(2, 2));
    int cm = tu_op(g, NULL, "MaxPool", "X", "Yc,Ic");
    attr_ints(g, cm, "kernel_shape", 2, I64(3, 3));
    attr_ints(g, cm, "strides", 2, I64(2, 2));
    attr_i(g, cm, "ceil_mode", 1);
    /* ceil mode, and a last window that would start in the end padding: dropped */
    int dp = tu_op(g, NULL, "AveragePool", "X", "Yd");
    attr_ints(g, dp, "kernel_shape", 2, I64(2, 2));
    attr_ints(g, dp, "strides", 2, I64(2, 2));
    attr_ints(g, dp, "pads", 4, I64(0, 0, 1, 1));
    attr_i(g, dp, "ceil_mode", 1);
    int di = tu_op(g, NULL, "MaxPool", "X", "Ydil");
    attr_ints(g, di, "kernel_shape", 2, I64(2, 2));
    attr_ints(g, di, "dilations", 2, I64(2, 2));
    int gp = tu_op(g, NULL, "GlobalAveragePool", "X", "Yg");
    int rm = tu_op(g, NULL, "ReduceMean", "X,axes", "Yr");
    iconst(g, "axes", false, 2, I64(-1, -2));
    int rs = tu_op(g, NULL, "ReduceSum", "X", "Ys");
    attr_i(g, rs, "keepdims", 0);
    run(g);
    check_shape(g, "Yf", 1, 2, 1, 1, -2);
    check_shape(g, "Yc", 1, 2, 2, 2, -2);
    check_shape(g, "Ic", 1, 2, 2, 2, -2);
    assert_int_equal(T(g, "Ic")->dtype, PL_DT_INT64);
    check_shape(g, "Yd", 1, 2, 2, 2, -2);
    check_shape(g, "Ydil", 1, 2, 2, 2, -2);
    check_shape(g, "Yg", 1, 2, 1, 1, -2);
    check_shape(g, "Yr", 1, 2, 1, 1, -2);
    check_shape(g, "Ys", -2);
    assert_close(O(g, cm)->flops, 8 * 9, 1e-12); /* output elements × kernel elements */
    assert_close(O(g, gp)->flops, 32, 1e-12);    /* input elements */
    assert_close(O(g, rm)->flops, 32, 1e-12);
    assert_int_equal(O(g, cm)->cls, PL_CLASS_REDUCTION);
    pl_graph_free(g);
}

/* ---- data movement and shape subgraphs ---- */

/* y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): names end in `sfx`. */
static void view_chain(pl_graph *g, const char *x, const char *sfx)
{
    char ins[64], s[16], b[16], u[16], cat[16], y[16];
    snprintf(s, 16, "s%s", sfx), snprintf(b, 16, "b%s", sfx), snprintf(u, 16, "u%s", sfx);
    snprintf(cat, 16, "cat%s", sfx), snprintf(y, 16, "Y2%s", sfx);
    tu_op(g, NULL, "Shape", x, s);
    snprintf(ins, 64, "%s,zero", s);
    tu_op(g, NULL, "Gather", ins, b);
    snprintf(ins, 64, "%s,ax0", b);
    tu_op(g, NULL, "Unsqueeze", ins, u);
    snprintf(ins, 64, "%s,m1", u);
    attr_i(g, tu_op(g, NULL, "Concat", ins, cat), "axis", 0);
    snprintf(ins, 64, "%s,%s", x, cat);
    tu_op(g, NULL, "Reshape", ins, y);
}

/* Reshape with 0 (copy) and -1 (infer), allowzero, and a target computed at run time by
 * Shape -> Gather -> Unsqueeze -> Concat as torch exports write x.view(x.size(0), -1). */
static void test_reshape(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("reshape");
    input(g, "X", PL_DT_FLOAT, 4, I64(2, 3, 4, 5));
    input(g, "D", PL_DT_FLOAT, 3, I64(-1, 3, 4)); /* dynamic batch */
    iconst(g, "t1", false, 3, I64(0, -1, 5));
    iconst(g, "zero", true, 1, I64(0));
    iconst(g, "m1", false, 1, I64(-1));
    iconst(g, "ax0", false, 1, I64(0));
    iconst(g, "t0", false, 3, I64(0, 4, 30));
    int r = tu_op(g, NULL, "Reshape", "X,t1", "Y1");
    view_chain(g, "X", "0");
    view_chain(g, "D", "1");
    int az = tu_op(g, NULL, "Reshape", "X,t0", "Yz");
    attr_i(g, az, "allowzero", 1);
    run(g);
    check_shape(g, "Y1", 2, 12, 5, -2);
    check_shape(g, "cat0", 2, -2);
    assert_int_equal(T(g, "cat0")->ivals[0], 2);
    assert_int_equal(T(g, "cat0")->ivals[1], -1);
    check_shape(g, "Y20", 2, 60, -2);
    check_shape(g, "Y21", -1, 12, -2); /* the unknown batch cancels out */
    assert_null(T(g, "cat1")->ivals);  /* not fully known: no ivals */
    check_shape(g, "Yz", 0, 4, 30, -2);
    assert_int_equal(O(g, r)->cls, PL_CLASS_DATA_MOVEMENT);
    assert_close(O(g, r)->flops, 0, 1e-12);
    pl_graph_free(g);
}

/* Slice with negative starts, clamped ends and negative steps, from inputs and from the
 * opset-1 attributes; and Slice on known contents (Shape(x)[-2:]). */
static void test_slice(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("slice");
    g->info.opset = 13;
    input(g, "X", PL_DT_FLOAT, 3, I64(20, 10, 5));
    iconst(g, "st", false, 2, I64(-1, 1));
    iconst(g, "en", false, 2, I64(-1000, 9));
    iconst(g, "ax", false, 2, I64(0, -2));
    iconst(g, "sp", false, 2, I64(-2, 3));
    tu_op(g, NULL, "Slice", "X,st,en,ax,sp", "Y");
    iconst(g, "st2", false, 1, I64(-2));
    iconst(g, "en2", false, 1, I64(INT64_MAX));
    tu_op(g, NULL, "Shape", "X", "s");
    tu_op(g, NULL, "Slice", "s,st2,en2", "tail");
    tu_op(g, NULL, "Slice", "X,st2,en2", "Y2");
    input(g, "dyn", PL_DT_INT64, 1, I64(1));
    tu_op(g, NULL, "Slice", "X,dyn,en2,ax0", "Yd");
    iconst(g, "ax0", false, 1, I64(1));
    run(g);
    check_shape(g, "Y", 10, 3, 5, -2);
    check_shape(g, "tail", 2, -2);
    assert_int_equal(T(g, "tail")->ivals[0], 10);
    assert_int_equal(T(g, "tail")->ivals[1], 5);
    check_shape(g, "Y2", 2, 10, 5, -2);
    check_shape(g, "Yd", 20, -1, 5, -2); /* start unknown: that axis only */
    pl_graph_free(g);

    g = pl_graph_new("slice1");
    g->info.opset = 9;
    input(g, "X", PL_DT_FLOAT, 2, I64(6, 7));
    int s = tu_op(g, NULL, "Slice", "X", "Y");
    attr_ints(g, s, "starts", 2, I64(1, -3));
    attr_ints(g, s, "ends", 2, I64(100, -1));
    run(g);
    check_shape(g, "Y", 5, 2, -2);
    pl_graph_free(g);
}

static void test_split(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("split");
    input(g, "X", PL_DT_FLOAT, 2, I64(6, 4));
    input(g, "Z", PL_DT_FLOAT, 1, I64(7));
    iconst(g, "sp", false, 2, I64(2, 4));
    tu_op(g, NULL, "Split", "X,sp", "a,b");
    int at = tu_op(g, NULL, "Split", "X", "c,d");
    attr_ints(g, at, "split", 2, I64(1, 3));
    attr_i(g, at, "axis", -1);
    tu_op(g, NULL, "Split", "X", "e,f,h");
    int n = tu_op(g, NULL, "Split", "Z", "p,q,r");
    attr_i(g, n, "num_outputs", 3);
    run(g);
    check_shape(g, "a", 2, 4, -2);
    check_shape(g, "b", 4, 4, -2);
    check_shape(g, "c", 6, 1, -2);
    check_shape(g, "d", 6, 3, -2);
    check_shape(g, "e", 2, 4, -2);
    check_shape(g, "h", 2, 4, -2);
    check_shape(g, "p", 3, -2);
    check_shape(g, "r", 1, -2); /* the last chunk is smaller */
    pl_graph_free(g);
}

static void test_squeeze_unsqueeze(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("squeeze");
    input(g, "X", PL_DT_FLOAT, 4, I64(1, 3, 1, 5));
    input(g, "V", PL_DT_FLOAT, 2, I64(3, 5));
    input(g, "U", PL_DT_FLOAT, 2, I64(-1, 5));
    iconst(g, "ax", false, 2, I64(0, -2));
    iconst(g, "uax", false, 2, I64(0, -1));
    tu_op(g, NULL, "Squeeze", "X,ax", "s1");
    attr_ints(g, tu_op(g, NULL, "Squeeze", "X", "s2"), "axes", 1, I64(2));
    tu_op(g, NULL, "Squeeze", "X", "s3");
    tu_op(g, NULL, "Squeeze", "U", "s4"); /* which dims are 1 is not known */
    tu_op(g, NULL, "Unsqueeze", "V,uax", "u1");
    attr_ints(g, tu_op(g, NULL, "Unsqueeze", "V", "u2"), "axes", 1, I64(1));
    run(g);
    check_shape(g, "s1", 3, 5, -2);
    check_shape(g, "s2", 1, 3, 5, -2);
    check_shape(g, "s3", 3, 5, -2);
    assert_int_equal(T(g, "s4")->rank, -1);
    assert_int_equal(T(g, "s4")->bytes, -1);
    check_shape(g, "u1", 1, 3, 5, 1, -2);
    check_shape(g, "u2", 3, 1, 5, -2);
    pl_graph_free(g);
}

/* Resize by scales (floor(in·scale)), by sizes, with scales computed at run time from
 * Shape as torch exports do, and Upsample with attribute scales. */
static void test_resize(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("resize");
    g->info.opset = 13;
    input(g, "X", PL_DT_FLOAT, 4, I64(1, 3, 10, 10));
    fconst(g, "sc", 4, F64(1, 1, 2, 1.5));
    fconst(g, "empty", 0, NULL);
    iconst(g, "sz", false, 4, I64(1, 3, 7, 9));
    int lin = tu_op(g, NULL, "Resize", "X,_,sc", "Y");
    attr_s(g, lin, "mode", "linear");
    int near = tu_op(g, NULL, "Resize", "X,_,empty,sz", "Ysz");
    /* sizes = Concat(Shape(X)[:2], Cast(Cast(Shape(X)[2:], float) * 2.0, int64)) */
    iconst(g, "z", false, 1, I64(0)), iconst(g, "two_i", false, 1, I64(2));
    iconst(g, "big", false, 1, I64(INT64_MAX));
    fconst(g, "two", 1, F64(2.0));
    tu_op(g, NULL, "Shape", "X", "s");
    tu_op(g, NULL, "Slice", "s,z,two_i", "nc");
    tu_op(g, NULL, "Slice", "s,two_i,big", "hw");
    attr_i(g, tu_op(g, NULL, "Cast", "hw", "hwf"), "to", PL_DT_FLOAT);
    tu_op(g, NULL, "Mul", "hwf,two", "hw2f");
    attr_i(g, tu_op(g, NULL, "Cast", "hw2f", "hw2"), "to", PL_DT_INT64);
    attr_i(g, tu_op(g, NULL, "Concat", "nc,hw2", "sizes"), "axis", 0);
    tu_op(g, NULL, "Resize", "X,_,_,sizes", "Yrt");
    int up = tu_op(g, NULL, "Upsample", "X", "Yup");
    attr_floats(g, up, "scales", 4, F64(1, 1, 3, 3));
    run(g);
    check_shape(g, "Y", 1, 3, 20, 15, -2);
    check_shape(g, "Ysz", 1, 3, 7, 9, -2);
    check_shape(g, "Yrt", 1, 3, 20, 20, -2);
    check_shape(g, "Yup", 1, 3, 30, 30, -2);
    assert_int_equal(O(g, lin)->cls, PL_CLASS_DATA_MOVEMENT);
    assert_close(O(g, lin)->flops, 900.0 * 8, 1e-12);
    assert_close(O(g, near)->flops, 0, 1e-12);
    pl_graph_free(g);
}

/* ConstantOfShape, Range, Expand, Tile, Pad, Gather, Transpose, Flatten, Concat, TopK,
 * OneHot, Trilu, CumSum. */
static void test_data_movement(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("dm");
    input(g, "X", PL_DT_FLOAT, 3, I64(2, 3, 4));
    iconst(g, "shp", false, 2, I64(3, 1));
    tu_op(g, NULL, "ConstantOfShape", "shp", "cos");
    iconst(g, "r0", true, 1, I64(2)), iconst(g, "r1", true, 1, I64(11));
    iconst(g, "r2", true, 1, I64(3));
    tu_op(g, NULL, "Range", "r0,r1,r2", "rng");
    iconst(g, "eshp", false, 4, I64(5, 1, 3, 1));
    tu_op(g, NULL, "Expand", "X,eshp", "ex");
    iconst(g, "reps", false, 3, I64(1, 2, 3));
    tu_op(g, NULL, "Tile", "X,reps", "til");
    iconst(g, "pads", false, 6, I64(0, 1, 2, 0, 3, 4));
    tu_op(g, NULL, "Pad", "X,pads", "pad");
    iconst(g, "idx", false, 2, I64(0, 2));
    attr_i(g, tu_op(g, NULL, "Gather", "X,idx", "gat"), "axis", 1);
    tu_op(g, NULL, "Transpose", "X", "tr");
    attr_ints(g, tu_op(g, NULL, "Transpose", "X", "tr2"), "perm", 3, I64(1, 0, 2));
    attr_i(g, tu_op(g, NULL, "Flatten", "X", "fl"), "axis", 2);
    attr_i(g, tu_op(g, NULL, "Concat", "X,X,tr2", "cat"), "axis", -1);
    attr_i(g, tu_op(g, NULL, "Concat", "X,tr", "bad"), "axis", 0);
    iconst(g, "k", false, 1, I64(2));
    tu_op(g, NULL, "TopK", "X,k", "tv,ti");
    iconst(g, "depth", true, 1, I64(6));
    weight(g, "onoff", 1, I64(2));
    input(g, "ind", PL_DT_INT64, 2, I64(2, 3));
    attr_i(g, tu_op(g, NULL, "OneHot", "ind,depth,onoff", "oh"), "axis", 1);
    tu_op(g, NULL, "NonZero", "X", "nz");
    run(g);
    check_shape(g, "cos", 3, 1, -2);
    assert_int_equal(T(g, "cos")->dtype, PL_DT_FLOAT);
    check_shape(g, "rng", 3, -2);
    assert_int_equal(T(g, "rng")->ivals[2], 8);
    check_shape(g, "ex", 5, 2, 3, 4, -2);
    check_shape(g, "til", 2, 6, 12, -2);
    check_shape(g, "pad", 2, 7, 10, -2);
    check_shape(g, "gat", 2, 2, 4, -2);
    check_shape(g, "tr", 4, 3, 2, -2);
    check_shape(g, "tr2", 3, 2, 4, -2);
    check_shape(g, "fl", 6, 4, -2);
    check_shape(g, "cat", -1, -1, 12, -2); /* tr2 [3,2,4] does not agree with X [2,3,4] */
    check_shape(g, "tv", 2, 3, 2, -2);
    assert_int_equal(T(g, "ti")->dtype, PL_DT_INT64);
    check_shape(g, "oh", 2, 6, 3, -2);
    check_shape(g, "nz", 3, -1, -2); /* data-dependent: stays unknown */
    assert_int_equal(T(g, "nz")->bytes, -1);
    pl_graph_summary sum;
    pl_graph_summarize(g, &sum);
    assert_true(sum.n_unknown_shape >= 1);
    pl_graph_summary_free(&sum);
    pl_graph_free(g);
}

/* Where(Equal(shape, -1), 1, shape), the torch export of expand(-1, ...) targets. */
static void test_where_equal_contents(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("where");
    input(g, "X", PL_DT_FLOAT, 2, I64(1, 4));
    iconst(g, "tgt", false, 3, I64(3, -1, -1));
    iconst(g, "neg", false, 1, I64(-1));
    iconst(g, "one", false, 1, I64(1));
    tu_op(g, NULL, "Equal", "tgt,neg", "eq");
    tu_op(g, NULL, "Where", "eq,one,tgt", "w");
    tu_op(g, NULL, "Expand", "X,w", "Y");
    tu_op(g, NULL, "ReduceProd", "tgt", "prod");
    run(g);
    check_shape(g, "w", 3, -2);
    assert_int_equal(T(g, "w")->ivals[0], 3);
    assert_int_equal(T(g, "w")->ivals[1], 1);
    check_shape(g, "Y", 3, 1, 4, -2);
    assert_int_equal(T(g, "prod")->ivals[0], 3);
    pl_graph_free(g);
}

/* The torch export of F.pad(x, (0, 64)): pads built as contents through ConstantOfShape,
 * Concat, Reshape to [-1, 2], Slice with step -1 on axis 0 (a 2-D tensor), Transpose and
 * Reshape to [-1], then Cast. Contents [0,64,0,0] -> [[0,64],[0,0]] -> reversed rows
 * [[0,0],[0,64]] -> transposed [[0,0],[0,64]] -> pads [0,0,0,64]: X [1,512] -> [1,576]. */
static void test_pad_contents_chain(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("torch_pad");
    g->info.opset = 13;
    input(g, "X", PL_DT_FLOAT, 2, I64(1, 512));
    iconst(g, "two", false, 1, I64(2));
    int cv = iconst(g, "zero", false, 1, I64(0));
    int o = tu_op(g, NULL, "ConstantOfShape", "two", "zeros");
    pl_op_add_attr(g, o, "value", PL_ATTR_TENSOR)->tensor = cv;
    iconst(g, "lastpad", false, 2, I64(0, 64));
    attr_i(g, tu_op(g, NULL, "Concat", "lastpad,zeros", "cat"), "axis", 0);
    iconst(g, "pairs", false, 2, I64(-1, 2));
    tu_op(g, NULL, "Reshape", "cat,pairs", "p2");
    iconst(g, "st", false, 1, I64(-1));
    iconst(g, "en", false, 1, I64(INT64_MIN + 1));
    iconst(g, "ax", false, 1, I64(0));
    iconst(g, "sp", false, 1, I64(-1));
    tu_op(g, NULL, "Slice", "p2,st,en,ax,sp", "rev");
    attr_ints(g, tu_op(g, NULL, "Transpose", "rev", "tr"), "perm", 2, I64(1, 0));
    iconst(g, "flat", false, 1, I64(-1));
    tu_op(g, NULL, "Reshape", "tr,flat", "pads64");
    attr_i(g, tu_op(g, NULL, "Cast", "pads64", "pads"), "to", PL_DT_INT64);
    tu_op(g, NULL, "Pad", "X,pads", "Y");
    run(g);
    assert_int_equal(T(g, "zeros")->dtype, PL_DT_INT64);
    check_shape(g, "rev", 2, 2, -2);
    const pl_tensor *r = T(g, "rev"), *p = T(g, "pads");
    assert_int_equal(r->n_ivals, 4);
    assert_int_equal(r->ivals[0], 0), assert_int_equal(r->ivals[1], 0);
    assert_int_equal(r->ivals[2], 0), assert_int_equal(r->ivals[3], 64);
    assert_int_equal(p->n_ivals, 4);
    assert_int_equal(p->ivals[0], 0), assert_int_equal(p->ivals[1], 0);
    assert_int_equal(p->ivals[2], 0), assert_int_equal(p->ivals[3], 64);
    check_shape(g, "Y", 1, 576, -2);
    pl_graph_free(g);
}

/* Contents through Transpose and Slice of tensors of any rank. A [2,3,4] tensor holding
 * 0..23: Transpose perm (2,0,1) gives element [k,i,j] = 12i + 4j + k, so out[0..3] are
 * 0,4,8,12 and out[12] (k=2,i=0,j=0) is 2; without perm it is reversed ([4,3,2]: element
 * [k,j,i] = 12i + 4j + k, out[1] = 12). Slice axes (2,0) starts (3,1) ends (0,2) steps
 * (-2,1) takes i=1, k=3,1: [1,3,2] = 15,13, 19,17, 23,21. */
static void test_transpose_slice_contents(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("tr_slice_vals");
    g->info.opset = 13;
    int64_t v[24];
    for (int j = 0; j < 24; j++)
        v[j] = j;
    int x = iconst(g, "V", false, 24, v);
    pl_tensor_set_shape(&g->tensors[x], PL_DT_INT64, 3, I64(2, 3, 4));
    attr_ints(g, tu_op(g, NULL, "Transpose", "V", "t"), "perm", 3, I64(2, 0, 1));
    tu_op(g, NULL, "Transpose", "V", "trev");
    iconst(g, "st", false, 2, I64(3, 1));
    iconst(g, "en", false, 2, I64(0, 2));
    iconst(g, "ax", false, 2, I64(2, 0));
    iconst(g, "sp", false, 2, I64(-2, 1));
    tu_op(g, NULL, "Slice", "V,st,en,ax,sp", "s");
    run(g);
    check_shape(g, "t", 4, 2, 3, -2);
    const pl_tensor *t = T(g, "t");
    assert_int_equal(t->n_ivals, 24);
    assert_int_equal(t->ivals[0], 0), assert_int_equal(t->ivals[1], 4);
    assert_int_equal(t->ivals[3], 12), assert_int_equal(t->ivals[12], 2);
    assert_int_equal(t->ivals[23], 23);
    check_shape(g, "trev", 4, 3, 2, -2);
    assert_int_equal(T(g, "trev")->ivals[1], 12);
    assert_int_equal(T(g, "trev")->ivals[2], 4);
    check_shape(g, "s", 1, 3, 2, -2);
    const pl_tensor *sl = T(g, "s");
    int64_t want[6] = {15, 13, 19, 17, 23, 21};
    assert_int_equal(sl->n_ivals, 6);
    for (int j = 0; j < 6; j++)
        assert_int_equal(sl->ivals[j], want[j]);
    pl_graph_free(g);
}

/* The ONNX Range function's trip count, Cast(Relu(Ceil((limit - start) / delta))), on
 * float contents: ceil((5.5 - 1) / 2) = 3; with limit < start, Relu clamps -2 to 0. */
static void test_relu_contents(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("range_fn");
    fconst(g, "start", 1, F64(1.0));
    fconst(g, "limit", 1, F64(5.5));
    fconst(g, "back", 1, F64(-3.5));
    fconst(g, "delta", 1, F64(2.0));
    const char *names[2][2] = {{"limit", "n"}, {"back", "m"}};
    for (int k = 0; k < 2; k++) {
        char ins[64], d[16], q[16], cl[16], r[16];
        snprintf(d, sizeof d, "d%d", k), snprintf(q, sizeof q, "q%d", k);
        snprintf(cl, sizeof cl, "c%d", k), snprintf(r, sizeof r, "r%d", k);
        snprintf(ins, sizeof ins, "%s,start", names[k][0]);
        tu_op(g, NULL, "Sub", ins, d);
        snprintf(ins, sizeof ins, "%s,delta", d);
        tu_op(g, NULL, "Div", ins, q);
        tu_op(g, NULL, "Ceil", q, cl);
        tu_op(g, NULL, "Relu", cl, r);
        attr_i(g, tu_op(g, NULL, "Cast", r, names[k][1]), "to", PL_DT_INT64);
    }
    tu_op(g, NULL, "ConstantOfShape", "n", "Z");
    run(g);
    assert_int_equal(T(g, "n")->ivals[0], 3);
    assert_int_equal(T(g, "m")->ivals[0], 0);
    assert_close(T(g, "r1")->fvals[0], 0, 0);
    check_shape(g, "Z", 3, -2);
    pl_graph_free(g);
}

/* ---- unknown ops, declared shapes, given costs ---- */

static void test_unknown_op(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("unknown");
    input(g, "X", PL_DT_FLOAT, 2, I64(2, 3));
    int f1 = pl_graph_add_op(g, NULL, "FooBar", "com.example");
    pl_op_add_input(g, f1, pl_graph_find_tensor(g, "X"));
    pl_op_add_output(g, f1, tn(g, "u", PL_DT_FLOAT, 4, 5, -2)); /* declared by the file */
    int f2 = pl_graph_add_op(g, NULL, "FooBar", "com.example");
    pl_op_add_input(g, f2, pl_graph_find_tensor(g, "X"));
    pl_op_add_output(g, f2, pl_graph_tensor(g, "v"));
    int att = pl_graph_add_op(g, NULL, "Attention", "com.microsoft");
    pl_op_add_input(g, att, pl_graph_find_tensor(g, "X"));
    pl_op_add_output(g, att, pl_graph_tensor(g, "att"));
    int r1 = tu_op(g, NULL, "Relu", "u", "ru");
    int r2 = tu_op(g, NULL, "Relu", "v", "rv");
    run(g);
    check_shape(g, "u", 4, 5, -2);
    check_shape(g, "ru", 4, 5, -2); /* later ops still inferred */
    assert_int_equal(T(g, "v")->rank, -1);
    assert_int_equal(T(g, "v")->bytes, -1);
    assert_int_equal(O(g, f1)->cls, PL_CLASS_UNKNOWN);
    assert_true(O(g, f1)->flags & PL_OP_UNKNOWN_TYPE);
    assert_close(O(g, f1)->flops, 20, 1e-12); /* output elements */
    assert_close(O(g, f2)->flops, 6, 1e-12);  /* outputs unknown: input elements */
    assert_true(O(g, f2)->flags & PL_OP_SHAPE_UNKNOWN);
    assert_close(O(g, f2)->bytes_moved, 24, 1e-12); /* unknown sizes count 0 */
    assert_true(O(g, att)->flags & PL_OP_UNKNOWN_TYPE);
    assert_false(O(g, r1)->flags & (PL_OP_UNKNOWN_TYPE | PL_OP_SHAPE_UNKNOWN));
    assert_true(O(g, r2)->flags & PL_OP_SHAPE_UNKNOWN);
    assert_int_equal(count_warnings(g, "'FooBar'"), 1);
    assert_true(has_warning(g, "2 ops"));
    assert_int_equal(count_warnings(g, "'Attention'"), 1);
    pl_graph_free(g);
}

/* A shape the file declares is kept; a disagreeing inference is a warning. Given costs stay. */
static void test_declared_wins(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("declared");
    input(g, "X", PL_DT_FLOAT, 2, I64(2, 3));
    tu_op(g, NULL, "Relu", "X", "y");
    tn(g, "y", PL_DT_FLOAT, 3, 2, -2);
    tu_op(g, NULL, "Relu", "X", "p");
    tn(g, "p", PL_DT_FLOAT, -1, 3, -2); /* partly known: filled */
    int c = tu_op(g, NULL, "Relu", "X", "q");
    g->ops[c].flags |= PL_OP_COST_GIVEN;
    g->ops[c].cls = PL_CLASS_DENSE;
    g->ops[c].flops = 123;
    run(g);
    check_shape(g, "y", 3, 2, -2);
    assert_true(has_warning(g, "keeping the declared shape"));
    check_shape(g, "p", 2, 3, -2);
    check_shape(g, "q", 2, 3, -2);
    assert_int_equal(O(g, c)->cls, PL_CLASS_DENSE);
    assert_close(O(g, c)->flops, 123, 1e-12);
    pl_graph_free(g);
}

/* ---- control flow ---- */

/* A subgraph reading outer tensor `outer` (so that the op lists it as an implicit input). */
static pl_graph *sub_new(const char *name, const char *outer)
{
    pl_graph *s = pl_graph_new(name);
    if (outer) {
        int t = pl_graph_tensor(s, outer);
        s->tensors[t].flags |= PL_TENSOR_OUTER;
    }
    return s;
}

static void sub_done(pl_graph *parent, int o, const char *attr, pl_graph *s)
{
    pl_err err = {""};
    if (pl_graph_finalize(s, attr, &err) < 0) fail_msg("finalize %s: %s", attr, err.msg);
    pl_op_add_subgraph(parent, o, attr, s);
}

static void add_implicit(pl_graph *g, int o, const char *name)
{
    pl_op_add_input(g, o, pl_graph_tensor(g, name));
    g->ops[o].n_implicit++;
}

/* If: outputs from the branches (merged where they differ); cost of the costlier branch. */
static void test_if(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("if");
    input(g, "c", PL_DT_BOOL, 0, NULL);
    input(g, "X", PL_DT_FLOAT, 2, I64(4, 8));
    int o = tu_op(g, NULL, "If", "c", "Y,Z");
    add_implicit(g, o, "X");
    pl_graph *t = sub_new("then", "X");
    weight(t, "Wt", 2, I64(8, 8));
    tu_op(t, NULL, "MatMul", "X,Wt", "yt");
    tu_op(t, NULL, "Relu", "X", "zt");
    pl_graph_add_output(t, pl_graph_find_tensor(t, "yt"));
    pl_graph_add_output(t, pl_graph_find_tensor(t, "zt"));
    sub_done(g, o, "then_branch", t);
    pl_graph *e = sub_new("else", "X");
    tu_op(e, NULL, "Add", "X,X", "ye");
    iconst(e, "shp", false, 2, I64(8, 4));
    tu_op(e, NULL, "Reshape", "X,shp", "ze");
    pl_graph_add_output(e, pl_graph_find_tensor(e, "ye"));
    pl_graph_add_output(e, pl_graph_find_tensor(e, "ze"));
    sub_done(g, o, "else_branch", e);
    run(g);
    check_shape(t, "yt", 4, 8, -2);
    check_shape(g, "Y", 4, 8, -2);
    check_shape(g, "Z", -1, -1, -2); /* [4,8] or [8,4] */
    assert_int_equal(O(g, o)->cls, PL_CLASS_CONTROL);
    double then_flops = 2.0 * 4 * 8 * 8 + 32;
    assert_close(O(g, o)->flops, then_flops, 1e-12);
    /* own bytes (cond, known outputs) + the then branch's */
    double then_bytes = O(t, 0)->bytes_moved + O(t, 1)->bytes_moved;
    assert_close(O(g, o)->bytes_moved, 1 + 128 + then_bytes, 1e-12);
    assert_true(O(g, o)->flags & PL_OP_SHAPE_UNKNOWN); /* Z's size is not known */
    pl_graph_free(g);
}

/* If whose condition is known from shapes (torch's LSTMCell: `if x.dim() != 2: x =
 * x.unsqueeze(0)`): Not(Equal(Size(Shape(X)), 2)) is known, so the output is the branch
 * that runs even though the branches differ in rank, and the cost is that branch's even
 * when the other is costlier. Outputs both branches give the same contents carry them. */
static void build_if_rank(pl_graph *g, int rank)
{
    input(g, "X", PL_DT_FLOAT, rank, rank == 2 ? I64(3, 16) : I64(16));
    tu_op(g, NULL, "Shape", "X", "shp");
    tu_op(g, NULL, "Size", "shp", "rk");
    iconst(g, "two", true, 1, I64(2));
    tu_op(g, NULL, "Equal", "rk,two", "eq");
    tu_op(g, NULL, "Not", "eq", "c");
    int o = tu_op(g, NULL, "If", "c", "Y,K");
    add_implicit(g, o, "X");
    pl_graph *t = sub_new("then", "X");
    iconst(t, "ax", false, 1, I64(0));
    tu_op(t, NULL, "Unsqueeze", "X,ax", "yt");
    iconst(t, "kt", false, 2, I64(7, 9));
    pl_graph_add_output(t, pl_graph_find_tensor(t, "yt"));
    pl_graph_add_output(t, pl_graph_find_tensor(t, "kt"));
    sub_done(g, o, "then_branch", t);
    pl_graph *e = sub_new("else", "X");
    weight(e, "W", 2, I64(16, 16));
    tu_op(e, NULL, "MatMul", "X,W", "ye");
    iconst(e, "ke", false, 2, I64(7, 9));
    pl_graph_add_output(e, pl_graph_find_tensor(e, "ye"));
    pl_graph_add_output(e, pl_graph_find_tensor(e, "ke"));
    sub_done(g, o, "else_branch", e);
}

static void test_if_known_condition(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("if_rank1");
    build_if_rank(g, 1); /* rank 1: then branch, [1,16]; else would be [16] */
    run(g);
    assert_int_equal(T(g, "c")->ivals[0], 1);
    check_shape(g, "Y", 1, 16, -2);
    int o = T(g, "Y")->producer;
    assert_close(O(g, o)->flops, 0, 1e-12); /* the MatMul branch does not run */
    assert_false(O(g, o)->flags & PL_OP_SHAPE_UNKNOWN);
    check_shape(g, "K", 2, -2);
    assert_int_equal(T(g, "K")->n_ivals, 2);
    assert_int_equal(T(g, "K")->ivals[1], 9);
    pl_graph_free(g);

    g = pl_graph_new("if_rank2");
    build_if_rank(g, 2); /* rank 2: else branch, [3,16] */
    run(g);
    check_shape(g, "Y", 3, 16, -2);
    o = T(g, "Y")->producer;
    assert_close(O(g, o)->flops, 2.0 * 3 * 16 * 16, 1e-12);
    pl_graph_free(g);

    /* condition not known: ranks differ, so the rank is unknown */
    g = pl_graph_new("if_dyn");
    input(g, "c", PL_DT_BOOL, 0, NULL);
    input(g, "X", PL_DT_FLOAT, 1, I64(16));
    o = tu_op(g, NULL, "If", "c", "Y,K,L");
    add_implicit(g, o, "X");
    pl_graph *t = sub_new("then", "X");
    iconst(t, "ax", false, 1, I64(0));
    tu_op(t, NULL, "Unsqueeze", "X,ax", "yt");
    iconst(t, "kt", false, 2, I64(7, 9));
    iconst(t, "lt", false, 2, I64(7, 9));
    pl_graph_add_output(t, pl_graph_find_tensor(t, "yt"));
    pl_graph_add_output(t, pl_graph_find_tensor(t, "kt"));
    pl_graph_add_output(t, pl_graph_find_tensor(t, "lt"));
    sub_done(g, o, "then_branch", t);
    pl_graph *e = sub_new("else", "X");
    tu_op(e, NULL, "Identity", "X", "ye");
    iconst(e, "ke", false, 2, I64(7, 9));
    iconst(e, "le", false, 2, I64(7, 8));
    pl_graph_add_output(e, pl_graph_find_tensor(e, "ye"));
    pl_graph_add_output(e, pl_graph_find_tensor(e, "ke"));
    pl_graph_add_output(e, pl_graph_find_tensor(e, "le"));
    sub_done(g, o, "else_branch", e);
    run(g);
    assert_int_equal(T(g, "Y")->rank, -1);
    assert_int_equal(T(g, "K")->n_ivals, 2); /* the same in both branches */
    assert_int_equal(T(g, "K")->ivals[0], 7);
    check_shape(g, "L", 2, -2);
    assert_null(T(g, "L")->ivals); /* the branches disagree */
    pl_graph_free(g);
}

/* Loop: carried values and scan outputs from the body; cost body × trip count. */
static void build_loop(pl_graph *g, bool known_trips)
{
    input(g, "X", PL_DT_FLOAT, 1, I64(4));
    input(g, "Mdyn", PL_DT_INT64, 0, NULL);
    iconst(g, "M", true, 1, I64(5));
    int c = iconst(g, "cond", true, 1, I64(1));
    pl_tensor_set_shape(&g->tensors[c], PL_DT_BOOL, 0, NULL);
    int o = tu_op(g, NULL, "Loop", known_trips ? "M,cond,X" : "Mdyn,cond,X", "Xf,scan");
    pl_graph *b = sub_new("body", NULL);
    pl_graph_add_input(b, pl_graph_tensor(b, "i"));
    pl_graph_add_input(b, pl_graph_tensor(b, "ci"));
    pl_graph_add_input(b, pl_graph_tensor(b, "v"));
    fconst(b, "one", 1, F64(1));
    tu_op(b, NULL, "Identity", "ci", "co");
    tu_op(b, NULL, "Add", "v,one", "vo");
    tu_op(b, NULL, "Mul", "vo,vo", "s");
    pl_graph_add_output(b, pl_graph_find_tensor(b, "co"));
    pl_graph_add_output(b, pl_graph_find_tensor(b, "vo"));
    pl_graph_add_output(b, pl_graph_find_tensor(b, "s"));
    sub_done(g, o, "body", b);
}

static void test_loop(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("loop");
    build_loop(g, true);
    run(g);
    const pl_graph *b = g->ops[0].subgraphs[0];
    check_shape(b, "vo", 4, -2);
    check_shape(g, "Xf", 4, -2);
    check_shape(g, "scan", 5, 4, -2);
    assert_int_equal(O(g, 0)->cls, PL_CLASS_CONTROL);
    assert_close(O(g, 0)->flops, 5 * (4 + 4), 1e-12); /* (Add + Mul) × 5 */
    double body_bytes = 0;
    for (int i = 0; i < b->n_ops; i++)
        body_bytes += b->ops[i].bytes_moved;
    assert_close(O(g, 0)->bytes_moved, 8 + 1 + 16 + 16 + 80 + 5 * body_bytes, 1e-12);
    assert_int_equal(g->n_warnings, 0);
    pl_graph_free(g);

    g = pl_graph_new("loop_dyn");
    build_loop(g, false);
    run(g);
    check_shape(g, "scan", -1, 4, -2);
    assert_close(O(g, 0)->flops, 8, 1e-12); /* once, with a warning */
    assert_true(has_warning(g, "trip count is not known"));
    assert_true(O(g, 0)->flags & PL_OP_SHAPE_UNKNOWN);
    pl_graph_free(g);
}

/* Scan: body × scanned length; state and scan outputs. */
static void test_scan(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("scan");
    input(g, "S0", PL_DT_FLOAT, 1, I64(3));
    input(g, "Xs", PL_DT_FLOAT, 2, I64(6, 3));
    int o = tu_op(g, NULL, "Scan", "S0,Xs", "Sf,Ys");
    attr_i(g, o, "num_scan_inputs", 1);
    pl_graph *b = sub_new("body", NULL);
    pl_graph_add_input(b, pl_graph_tensor(b, "s"));
    pl_graph_add_input(b, pl_graph_tensor(b, "x"));
    tu_op(b, NULL, "Add", "s,x", "so");
    tu_op(b, NULL, "Tanh", "so", "y");
    pl_graph_add_output(b, pl_graph_find_tensor(b, "so"));
    pl_graph_add_output(b, pl_graph_find_tensor(b, "y"));
    sub_done(g, o, "body", b);
    run(g);
    check_shape(b, "x", 3, -2);
    check_shape(g, "Sf", 3, -2);
    check_shape(g, "Ys", 6, 3, -2);
    assert_close(O(g, o)->flops, 6 * (3 + 3 * 6), 1e-12);
    pl_graph_free(g);
}

/* ---- speed ---- */

/* 50,000 ops (Conv, Relu, Reshape chains with shape subgraphs) in well under 0.1 s. */
static void test_speed(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("big");
    input(g, "x0", PL_DT_FLOAT, 4, I64(1, 8, 16, 16));
    weight(g, "W", 4, I64(8, 8, 3, 3));
    iconst(g, "shp", false, 4, I64(0, 8, 16, -1));
    char a[32], b[32], ins[80];
    int n = 0;
    for (int k = 0; n < 50000; k++) {
        snprintf(a, sizeof a, "x%d", k), snprintf(b, sizeof b, "c%d", k);
        snprintf(ins, sizeof ins, "%s,W", a);
        attr_ints(g, tu_op(g, NULL, "Conv", ins, b), "pads", 4, I64(1, 1, 1, 1));
        snprintf(a, sizeof a, "r%d", k);
        tu_op(g, NULL, "Relu", b, a);
        snprintf(ins, sizeof ins, "%s,shp", a), snprintf(b, sizeof b, "x%d", k + 1);
        tu_op(g, NULL, "Reshape", ins, b);
        n += 3;
    }
    pl_err err = {""};
    assert_int_equal(pl_graph_finalize(g, "big", &err), 0);
    double t0 = pl_now();
    assert_int_equal(pl_graph_infer(g, &err), 0);
    double dt = pl_now() - t0;
    printf("infer: %d ops in %.4f s\n", g->n_ops, dt);
    check_shape(g, b, 1, 8, 16, 16, -2);
#if defined(__SANITIZE_ADDRESS__)
    assert_true(dt < 1.0);
#else
    assert_true(dt < 0.1);
#endif
    pl_graph_free(g);
}

/* ---- the ONNX test-data oracle ----
 * For each node test model: load without inference, remember and clear every declared,
 * fully known shape of an op output (subgraphs included), infer, and compare. */

#define ORACLE_GLOB "/usr/share/libonnx-testdata/data/node/*/model.onnx"

typedef struct decl {
    pl_graph *g;
    int t;
    const char *type;
    bool covered;
    int rank;
    int64_t dims[16];
} decl;

typedef struct type_stat {
    const char *type;
    int agree, total;
    bool covered;
} type_stat;

typedef struct oracle {
    decl *d;
    int n, cap;
    type_stat *ts;
    int n_ts, cap_ts;
    int models, load_failed, infer_failed;
    int agree, total, cov_agree, cov_total;
    int printed;
    bool feed; /* give small graph inputs the test's values */
    int wrong; /* outputs of covered ops whose inferred shape contradicts the declared one */
} oracle;

static void collect(oracle *o, pl_graph *g)
{
    for (int i = 0; i < g->n_ops; i++) {
        pl_op *op = &g->ops[i];
        for (int s = 0; s < op->n_subgraphs; s++)
            collect(o, op->subgraphs[s]);
        for (int k = 0; k < op->n_outputs; k++) {
            if (op->outputs[k] < 0) continue;
            pl_tensor *t = &g->tensors[op->outputs[k]];
            if ((t->flags & PL_TENSOR_WEIGHT) || pl_tensor_numel(t) < 0 || t->rank > 16) continue;
            if (o->n == o->cap) o->d = realloc(o->d, (o->cap = o->cap * 2 + 64) * sizeof *o->d);
            decl *d = &o->d[o->n++];
            d->g = g, d->t = op->outputs[k], d->type = op->type, d->rank = t->rank;
            if (t->rank) memcpy(d->dims, t->dims, t->rank * sizeof *t->dims);
            d->covered = true;
            pl_tensor_set_shape(t, t->dtype, -1, NULL);
        }
    }
}

static type_stat *stat_for(oracle *o, const char *type)
{
    for (int j = 0; j < o->n_ts; j++)
        if (strcmp(o->ts[j].type, type) == 0) return &o->ts[j];
    if (o->n_ts == o->cap_ts)
        o->ts = realloc(o->ts, (o->cap_ts = o->cap_ts * 2 + 64) * sizeof *o->ts);
    type_stat *s = &o->ts[o->n_ts++];
    s->type = strdup(type), s->agree = s->total = 0, s->covered = true;
    return s;
}

static bool same_shape(const pl_tensor *t, const decl *d)
{
    if (t->rank != d->rank) return false;
    for (int j = 0; j < d->rank; j++)
        if (t->dims[j] != d->dims[j]) return false;
    return true;
}

/* Known where the declaration is, but different: a wrong rule, not missing information. */
static bool contradicts(const pl_tensor *t, const decl *d)
{
    if (t->rank < 0) return false;
    if (t->rank != d->rank) return true;
    for (int j = 0; j < d->rank; j++)
        if (t->dims[j] >= 0 && t->dims[j] != d->dims[j]) return true;
    return false;
}

static void judge(oracle *o, const char *model, const decl *d)
{
    const pl_tensor *t = &d->g->tensors[d->t];
    int op = t->producer;
    bool covered = op >= 0 && !(d->g->ops[op].flags & PL_OP_UNKNOWN_TYPE);
    bool ok = same_shape(t, d);
    type_stat *s = stat_for(o, d->type);
    s->covered = covered, s->total++, s->agree += ok;
    o->total++, o->agree += ok;
    if (covered) o->cov_total++, o->cov_agree += ok;
    bool wrong = covered && contradicts(t, d);
    o->wrong += wrong;
    if (ok || !covered || o->printed >= 200 || (!wrong && !getenv("PLACER_ORACLE_VERBOSE"))) return;
    char a[256] = "", b[256] = "";
    for (int j = 0, n = 0; j < t->rank && t->rank >= 0; j++)
        n += snprintf(a + n, sizeof a - n, "%lld,", (long long)t->dims[j]);
    for (int j = 0, n = 0; j < d->rank; j++)
        n += snprintf(b + n, sizeof b - n, "%lld,", (long long)d->dims[j]);
    printf("  %s %s: %s '%s': inferred %s[%s] declared [%s]\n", wrong ? "WRONG" : "unknown", model,
           d->type, t->name, t->rank < 0 ? "?" : "", a, b);
    o->printed++;
}

/* The test's own input values (test_data_set_0/input_K.pb), set as known contents of small
 * graph inputs: the declared output shapes of, say, Slice with starts given as an input were
 * computed for those values, and nothing else in the file says what they are. */
static bool proto_values(const Onnx__TensorProto *tp, int64_t n, int64_t *iv, double *fv)
{
    int dt = tp->data_type;
    double sz = pl_dtype_size(dt);
    bool raw = tp->has_raw_data && tp->raw_data.len == (size_t)(n * sz);
    for (int64_t j = 0; j < n; j++) {
        const uint8_t *p = raw ? tp->raw_data.data + j * (size_t)sz : NULL;
        if (dt == PL_DT_FLOAT) {
            float f;
            if (p)
                memcpy(&f, p, 4);
            else if (tp->n_float_data == (size_t)n)
                f = tp->float_data[j];
            else
                return false;
            fv[j] = f;
        } else if (dt == PL_DT_DOUBLE) {
            if (p)
                memcpy(&fv[j], p, 8);
            else if (tp->n_double_data == (size_t)n)
                fv[j] = tp->double_data[j];
            else
                return false;
        } else if (dt == PL_DT_INT64) {
            if (p)
                memcpy(&iv[j], p, 8);
            else if (tp->n_int64_data == (size_t)n)
                iv[j] = tp->int64_data[j];
            else
                return false;
        } else if (dt == PL_DT_INT32) {
            int32_t x;
            if (p)
                memcpy(&x, p, 4);
            else if (tp->n_int32_data == (size_t)n)
                x = tp->int32_data[j];
            else
                return false;
            iv[j] = x;
        } else {
            return false;
        }
    }
    return true;
}

static void feed_inputs(pl_graph *g, const char *model_path)
{
    char dir[1024], path[1100];
    snprintf(dir, sizeof dir, "%s", model_path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
        size_t len;
        char *buf = pl_read_file(path, &len, NULL);
        if (!buf) continue;
        Onnx__TensorProto *tp = pl_onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)buf);
        free(buf);
        if (!tp) continue;
        pl_tensor *t = &g->tensors[g->inputs[k]];
        int64_t n = pl_tensor_numel(t), iv[64];
        double fv[64];
        if (n >= 0 && n <= 64 && proto_values(tp, n, iv, fv)) {
            if (tp->data_type == PL_DT_FLOAT || tp->data_type == PL_DT_DOUBLE)
                pl_tensor_set_fvals(t, fv, (int)n);
            else
                pl_tensor_set_ivals(t, iv, (int)n);
        }
        pl_onnx__tensor_proto__free_unpacked(tp, NULL);
    }
}

static void oracle_model(oracle *o, const char *path)
{
    pl_err err = {""};
    pl_load_opts opts = {.no_infer = true};
    pl_graph *g = pl_onnx_load(path, &opts, &err);
    o->models++;
    if (!g) {
        o->load_failed++;
        return;
    }
    o->n = 0;
    collect(o, g);
    if (o->feed) feed_inputs(g, path);
    if (pl_graph_infer(g, &err) < 0) {
        o->infer_failed++;
        printf("  infer failed %s: %s\n", path, err.msg);
    } else {
        const char *name = strstr(path, "/node/") ? strstr(path, "/node/") + 6 : path;
        for (int j = 0; j < o->n; j++)
            judge(o, name, &o->d[j]);
    }
    pl_graph_free(g);
}

static int cmp_stat(const void *a, const void *b)
{
    return strcmp(((const type_stat *)a)->type, ((const type_stat *)b)->type);
}

static void oracle_report(oracle *o)
{
    qsort(o->ts, o->n_ts, sizeof *o->ts, cmp_stat);
    printf("oracle: %d models (%d not loadable, %d inference failures)\n", o->models,
           o->load_failed, o->infer_failed);
    for (int j = 0; j < o->n_ts; j++)
        printf("  %-28s %4d/%-4d%s\n", o->ts[j].type, o->ts[j].agree, o->ts[j].total,
               o->ts[j].covered ? "" : "  (no rule)");
    printf("oracle%s: covered op types: %d/%d outputs agree (%.1f%%), %d contradict the "
           "declared shape; all op types: %d/%d\n",
           o->feed ? " (test inputs known)" : "", o->cov_agree, o->cov_total,
           100.0 * o->cov_agree / (o->cov_total ? o->cov_total : 1), o->wrong, o->agree, o->total);
}

static void run_oracle_glob(oracle *o, const char *pattern, bool feed)
{
    glob_t gl;
    if (glob(pattern, 0, NULL, &gl) != 0 || gl.gl_pathc == 0) {
        globfree(&gl);
        fail_msg("oracle: no models at %s (make deps installs libonnx-testdata)", pattern);
    }
    o->feed = feed;
    for (size_t j = 0; j < gl.gl_pathc; j++)
        oracle_model(o, gl.gl_pathv[j]);
    globfree(&gl);
    oracle_report(o);
    for (int j = 0; j < o->n_ts; j++)
        free((char *)o->ts[j].type);
    free(o->ts), free(o->d);
}

static void run_oracle(oracle *o, bool feed)
{
    const char *pattern = getenv("PLACER_ORACLE_GLOB");
    run_oracle_glob(o, pattern ? pattern : ORACLE_GLOB, feed);
}

/* As the files are: shapes that depend on graph inputs' values cannot be known. */
static void test_oracle_testdata(void **state)
{
    (void)state;
    oracle o = {0};
    run_oracle(&o, false);
    assert_true(o.cov_total > 0);
    assert_int_equal(o.wrong, 0);
    assert_true(o.cov_agree >= 0.85 * o.cov_total);
}

/* With the test's input values known: only data-dependent sizes (NonZero, Unique, ...) may
 * stay unknown. */
static void test_oracle_testdata_inputs(void **state)
{
    (void)state;
    oracle o = {0};
    run_oracle(&o, true);
    assert_true(o.cov_total > 0);
    assert_int_equal(o.wrong, 0);
    assert_true(o.cov_agree >= 0.95 * o.cov_total);
}

/* The model zoo carries onnx's value_info for every tensor: all of it must be re-inferred. */
static void test_oracle_zoo(void **state)
{
    (void)state;
    oracle o = {0};
    run_oracle_glob(&o, "models/*.onnx", false);
    assert_true(o.cov_total > 1000);
    assert_int_equal(o.cov_agree, o.cov_total);
    assert_int_equal(o.total, o.cov_total); /* no op type without a rule */
}

/* Tensors of unknown size in g and its subgraphs. */
static int count_unknown(const pl_graph *g)
{
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++)
        n += g->tensors[t].bytes < 0;
    for (int i = 0; i < g->n_ops; i++)
        for (int s = 0; s < g->ops[i].n_subgraphs; s++)
            n += count_unknown(g->ops[i].subgraphs[s]);
    return n;
}

static const pl_graph *branch(const pl_op *o, const char *attr)
{
    for (int s = 0; s < o->n_subgraphs; s++)
        if (strcmp(o->subgraph_attr[s], attr) == 0) return o->subgraphs[s];
    fail_msg("op '%s' has no %s", o->name, attr);
    return NULL;
}

/* FLOPs of the dense ops that run: into an If only through the branch its known condition
 * takes. */
static double dense_flops(const pl_graph *g)
{
    double sum = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const pl_op *o = &g->ops[i];
        if (o->cls == PL_CLASS_DENSE) sum += o->flops;
        if (strcmp(o->type, "If") != 0) continue;
        const pl_tensor *c = &g->tensors[o->inputs[0]];
        if (!c->ivals) fail_msg("If '%s': condition not known", o->name);
        sum += dense_flops(branch(o, c->ivals[0] ? "then_branch" : "else_branch"));
    }
    return sum;
}

/* silero VAD v5 and v6 (tools/fetch_thirdparty.sh) with its inputs' shapes given: the top-level If
 * on the sample rate holds the 16 kHz model (then) and the 8 kHz one (else); each pads the
 * input through the F.pad chain, runs the STFT as a Conv, four encoder Convs and an LSTM
 * cell behind `if x.dim() != 2` Ifs. 512 samples at 16 kHz, by hand: padded to 576, STFT
 * Conv [1,258,3] (k 256, s 128) 2·258·3·256 = 396288; encoder [1,128,3], [1,64,2],
 * [1,64,1], [1,128,1]: 2·128·3·129·3 + 2·64·2·128·3 + 2·64·64·3 + 2·128·64·3 = 469248;
 * LSTM 2·4·128·256 + 42·128 = 267520; decoder Conv 256: 1133312 in dense ops. The 8 kHz
 * model expects 256 samples: at 512 its encoder ends with 2 frames, the LSTM's input
 * would be [1,1,128,2] (onnxruntime fails there), so part of that branch stays unknown;
 * at 256 samples both branches are fully known. */
static void test_silero_vad(void **state)
{
    (void)state;
    const char *files[2] = {"build/thirdparty/silero_vad_v5.onnx",
                            "build/thirdparty/silero_vad_v6.onnx"};
    FILE *f = fopen(files[0], "rb");
    if (!f) fail_msg("%s missing: run tools/fetch_thirdparty.sh (make deps)", files[0]);
    fclose(f);
    for (int run = 0; run < 4; run++) {
        const char *path = files[run / 2];
        const char *shapes[2] = {run % 2 ? "input=1,256" : "input=1,512", "state=2,1,128"};
        pl_load_opts opts = {.input_shapes = shapes, .n_input_shapes = 2};
        pl_err err = {""};
        pl_graph *g = pl_graph_load(path, &opts, &err);
        if (!g) fail_msg("%s: %s", path, err.msg);
        int o = T(g, "If_0_outputs_0")->producer;
        const pl_graph *hi = branch(O(g, o), "then_branch");
        assert_int_equal(count_unknown(hi), 0);
        double dense = dense_flops(hi);
        if (run % 2 == 0) {
            check_shape(hi, "If_0_then_branch__Inline_0__/stft/padding/Pad_output_0", 1, 576, -2);
            check_shape(hi, "If_0_then_branch__Inline_0__/stft/Conv_output_0", 1, 258, 3, -2);
            assert_close(dense, 1133312, 1e-9);
            assert_true(O(g, o)->flops >= dense && O(g, o)->flops < 1.2e6);
        } else {
            assert_int_equal(count_unknown(g), 0);
            check_shape(g, "stateN", 2, 1, 128, -2);
        }
        pl_graph_free(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_grouped_dilated),
        cmocka_unit_test(test_conv_auto_pad),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_lstm),
        cmocka_unit_test(test_einsum),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_normalisation),
        cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_squeeze_unsqueeze),
        cmocka_unit_test(test_resize),
        cmocka_unit_test(test_data_movement),
        cmocka_unit_test(test_where_equal_contents),
        cmocka_unit_test(test_pad_contents_chain),
        cmocka_unit_test(test_transpose_slice_contents),
        cmocka_unit_test(test_relu_contents),
        cmocka_unit_test(test_unknown_op),
        cmocka_unit_test(test_declared_wins),
        cmocka_unit_test(test_if),
        cmocka_unit_test(test_if_known_condition),
        cmocka_unit_test(test_loop),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_speed),
        cmocka_unit_test(test_oracle_testdata),
        cmocka_unit_test(test_oracle_testdata_inputs),
        cmocka_unit_test(test_oracle_zoo),
        cmocka_unit_test(test_silero_vad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
