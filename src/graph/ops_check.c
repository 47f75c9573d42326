/* ops_check.c: the ONNX spec's rules on an op's attributes and on the inputs whose values or
 * shapes are known, checked during inference (each op sees the shapes of its inputs as
 * inferred so far) so that a model the spec forbids is refused, naming the node, instead of
 * getting a silently wrong shape or reaching onnxruntime, whose kernels divide by a stride
 * of 0 (docs/graph.md, "What the reader refuses"). Only rules the spec states plainly are
 * here; a value the check cannot see (an input computed at run time) is not guessed at. */
#include "infer_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Sets the error, naming the node by its index in its graph and its name; returns -1. */
static int invalid(ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int invalid(ictx *c, const char *fmt, ...)
{
    char msg[PL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pl_err_set(c->R->err, "node %d '%s' (%s): %s", c->opi, c->op->name, c->op->type, msg);
}

/* Every entry of INTS attribute `name` at least `min`, and `per` of them per spatial dim
 * when the input's `n` spatial dims are known (n >= 0); absent is fine (the default
 * applies). */
static int ints_at_least(ictx *c, const char *name, int64_t min, int n, int per, const char *why)
{
    int64_t v[IR_MAXRANK];
    int got = ir_attr_ints(c, name, v);
    if (got < 0) return 0;
    for (int j = 0; j < got; j++)
        if (v[j] < min) return invalid(c, "%s[%d] = %lld: %s", name, j, (long long)v[j], why);
    if (n >= 0 && per && got != per * n)
        return invalid(c, "%s has %d entries, but an input of %d spatial dimension%s needs %d",
                       name, got, n, n == 1 ? "" : "s", per * n);
    return 0;
}

/* ---- convolution and pooling windows ---- */

static int check_auto_pad(ictx *c)
{
    const char *ap = pl_op_attr_string(c->op, "auto_pad", "NOTSET");
    const char *ok[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    for (size_t k = 0; k < sizeof ok / sizeof *ok; k++)
        if (!strcmp(ap, ok[k])) return 0;
    return invalid(c, "auto_pad '%s' is none of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
}

/* The weight's kernel dims [2:] (rank n + 2) must be at least 1 and agree with kernel_shape. */
static int check_kernel_dims(ictx *c, int w_in, int n)
{
    ir_shape w;
    int64_t ks[IR_MAXRANK];
    if (w_in < 0 || !ir_in_shape(c, w_in, &w) || w.rank < 3 || (n >= 0 && w.rank != n + 2))
        return 0;
    int nk = ir_attr_ints(c, "kernel_shape", ks);
    const char *wn = ir_in(c, w_in)->name;
    for (int j = 2; j < w.rank; j++) {
        if (w.d[j] == 0)
            return invalid(c, "weight '%s' has kernel dimension %d of size 0", wn, j - 2);
        if (nk == w.rank - 2 && w.d[j] >= 0 && ks[j - 2] != w.d[j])
            return invalid(c, "kernel_shape[%d] = %lld, but weight '%s' has %lld there", j - 2,
                           (long long)ks[j - 2], wn, (long long)w.d[j]);
    }
    return 0;
}

/* group >= 1 and dividing the channels: Conv's weight is [M, C/group, k...], ConvTranspose's
 * [C, M/group, k...]. */
static int check_group(ictx *c, int w_in, bool transposed)
{
    int64_t g = pl_op_attr_int(c->op, "group", 1);
    if (g < 1) return invalid(c, "group = %lld: group must be at least 1", (long long)g);
    ir_shape x, w;
    int64_t ch = ir_in_shape(c, 0, &x) && x.rank >= 2 ? x.d[1] : -1;
    if (ch >= 0 && ch % g)
        return invalid(c, "group = %lld does not divide the %lld input channels", (long long)g,
                       (long long)ch);
    if (!ir_in_shape(c, w_in, &w) || w.rank < 2) return 0;
    const char *wn = ir_in(c, w_in)->name;
    if (transposed && ch >= 0 && w.d[0] >= 0 && w.d[0] != ch)
        return invalid(c, "weight '%s' is for %lld input channels, but the input has %lld", wn,
                       (long long)w.d[0], (long long)ch);
    if (!transposed && w.d[0] >= 0 && w.d[0] % g)
        return invalid(c, "group = %lld does not divide the %lld output channels of weight '%s'",
                       (long long)g, (long long)w.d[0], wn);
    if (!transposed && ch >= 0 && w.d[1] >= 0 && w.d[1] * g != ch)
        return invalid(c,
                       "weight '%s' takes %lld channels per group, but the input has %lld in %lld "
                       "group%s",
                       wn, (long long)w.d[1], (long long)ch, (long long)g, g == 1 ? "" : "s");
    return 0;
}

/* The window attributes every convolution and pooling op shares. w_in: the weight (-1: none). */
static int check_window(ictx *c, int w_in, bool pool)
{
    int rank = ir_in_rank(c, 0), n = rank >= 3 ? rank - 2 : -1;
    if (pool && !pl_op_attr(c->op, "kernel_shape")) return invalid(c, "kernel_shape is required");
    if (ints_at_least(c, "kernel_shape", 1, n, 1, "kernel dimensions must be at least 1") < 0 ||
        ints_at_least(c, "strides", 1, n, 1, "strides must be at least 1") < 0 ||
        ints_at_least(c, "dilations", 1, n, 1, "dilations must be at least 1") < 0 ||
        ints_at_least(c, "pads", 0, n, 2, "pads must not be negative") < 0 ||
        ints_at_least(c, "output_padding", 0, n, 0, "output_padding must not be negative") < 0 ||
        check_auto_pad(c) < 0)
        return -1;
    return check_kernel_dims(c, w_in, n);
}

static int ck_conv(ictx *c)
{
    return check_window(c, 1, false) < 0 ? -1 : check_group(c, 1, false);
}
static int ck_convt(ictx *c)
{
    return check_window(c, 1, false) < 0 ? -1 : check_group(c, 1, true);
}
static int ck_qlinearconv(ictx *c)
{
    return check_window(c, 3, false) < 0 ? -1 : check_group(c, 3, false);
}
static int ck_pool(ictx *c)
{
    return check_window(c, -1, true);
}

/* ---- axes ---- */

/* `axis` within [-r, r - 1] of input 0's rank r (Flatten: [-r, r]) when the rank is known. */
static int axis_in_range(ictx *c, int64_t dflt, bool inclusive)
{
    const pl_attr *at = pl_op_attr(c->op, "axis");
    if (at && at->kind != PL_ATTR_INT) /* read as the default, it hid a malformed node */
        return invalid(c, "axis is not an INT attribute, as the spec has it");
    int r = ir_in_rank(c, 0);
    int64_t a = pl_op_attr_int(c->op, "axis", dflt), hi = inclusive ? r : r - 1;
    if (r < 0 || (a >= -r && a <= hi)) return 0;
    return invalid(c, "axis = %lld is outside [%d, %lld] for an input of rank %d", (long long)a, -r,
                   (long long)hi, r);
}

static int ck_axis0(ictx *c)
{
    return axis_in_range(c, 0, false);
}
static int ck_flatten(ictx *c)
{
    return axis_in_range(c, 1, true);
}
/* LayerNormalization: the first normalised axis, -1 by default. */
static int ck_layernorm(ictx *c)
{
    return axis_in_range(c, -1, false);
}
/* Softmax, LogSoftmax, Hardmax: the default axis was 1 before opset 13, -1 since. */
static int ck_softmax(ictx *c)
{
    return axis_in_range(c, c->R->opset < 13 ? 1 : -1, false);
}

/* Transpose: perm a permutation of 0 .. r - 1. */
static int ck_transpose(ictx *c)
{
    int64_t p[IR_MAXRANK];
    int n = ir_attr_ints(c, "perm", p), r = ir_in_rank(c, 0);
    if (n < 0) return 0;
    if (r >= 0 && n != r) return invalid(c, "perm has %d entries, but the input has rank %d", n, r);
    bool seen[IR_MAXRANK] = {false};
    for (int j = 0; j < n; j++) {
        if (p[j] < 0 || p[j] >= n || seen[p[j]])
            return invalid(c, "perm is not a permutation of 0 to %d (perm[%d] = %lld)", n - 1, j,
                           (long long)p[j]);
        seen[p[j]] = true;
    }
    return 0;
}

/* ---- shapes given as values ---- */

/* Reshape: at most one -1, nothing below -1, and with allowzero not both 0 and -1. Entries
 * not known (a dynamic batch dimension) are not counted. */
/* A Reshape keeps the element count: with the input's shape and every target entry known,
 * the target (0 copying the input's dimension unless allowzero, -1 taking the rest) must hold
 * as many elements; onnxruntime refuses it otherwise. */
static int reshape_count(ictx *c, const ir_vals *v, bool allowzero)
{
    ir_shape x;
    if (!ir_in_shape(c, 0, &x)) return 0;
    int64_t n = ir_prod(x.d, x.rank), m = 1;
    bool rest = false;
    for (int j = 0; j < v->n; j++) {
        if (v->sym[j]) return 0;
        int64_t d = v->i[j];
        if (d == 0 && !allowzero) d = j < x.rank ? x.d[j] : -2;
        if (d == -1) {
            rest = true;
            continue;
        }
        if (d < 0) return 0; /* a dimension not known, or a 0 past the input's rank */
        if (d && m > INT64_MAX / d) return 0;
        m *= d;
    }
    if (n < 0) return 0;
    if (rest ? (m == 0 ? n != 0 : n % m != 0) : n != m)
        return invalid(c, "the input's %lld elements do not fit the target shape (%s%lld)",
                       (long long)n, rest ? "a multiple of " : "", (long long)m);
    return 0;
}

static int ck_reshape(ictx *c)
{
    ir_vals v;
    const ir_vals *in = ir_in(c, 1) ? ir_in_vals(c, 1) : NULL;
    int64_t buf[IR_MAXRANK];
    int n = ir_in(c, 1) ? -1 : ir_attr_ints(c, "shape", buf); /* opset < 5: an attribute */
    if (in)
        v = *in;
    else if (n >= 0) {
        v.n = n;
        for (int j = 0; j < n; j++)
            v.i[j] = buf[j], v.sym[j] = 0;
    } else
        return 0;
    int minus = 0, zero = 0;
    for (int j = 0; j < v.n; j++) {
        if (v.sym[j]) continue;
        if (v.i[j] < -1)
            return invalid(c, "shape[%d] = %lld: entries must be -1 or more", j, (long long)v.i[j]);
        minus += v.i[j] == -1, zero += v.i[j] == 0;
    }
    if (minus > 1) return invalid(c, "shape has %d entries of -1; at most one may be -1", minus);
    bool allowzero = pl_op_attr_int(c->op, "allowzero", 0);
    if (minus && zero && allowzero)
        return invalid(c, "with allowzero = 1 the shape cannot hold both 0 and -1");
    return reshape_count(c, &v, allowzero);
}

/* Integers of input k (or attribute `name`) none below `min`. */
static int values_at_least(ictx *c, int k, const char *name, int64_t min, const char *what,
                           const char *why)
{
    int64_t v[IR_MAXVALS];
    int n = ir_ints_from(c, k, name, v);
    for (int j = 0; j < n; j++)
        if (v[j] < min) return invalid(c, "%s[%d] = %lld: %s", what, j, (long long)v[j], why);
    return 0;
}

static int ck_slice(ictx *c)
{
    int64_t v[IR_MAXVALS];
    int n = ir_in(c, 4) ? ir_ints_from(c, 4, NULL, v) : -1;
    for (int j = 0; j < n; j++)
        if (!v[j]) return invalid(c, "steps[%d] = 0: a step cannot be 0", j);
    return 0;
}

/* Split: sizes non-negative, summing to the split dimension when it is known. */
static int ck_split(ictx *c)
{
    if (axis_in_range(c, 0, false) < 0) return -1;
    int64_t v[IR_MAXVALS], sum = 0;
    int n = ir_ints_from(c, 1, "split", v);
    for (int j = 0; j < n; j++) {
        if (v[j] < 0)
            return invalid(c, "split[%d] = %lld: sizes must not be negative", j, (long long)v[j]);
        if (__builtin_add_overflow(sum, v[j], &sum)) return invalid(c, "split sizes overflow");
    }
    ir_shape x;
    int axis = ir_in_shape(c, 0, &x) ? ir_axis(pl_op_attr_int(c->op, "axis", 0), x.rank) : -1;
    if (n > 0 && axis >= 0 && x.d[axis] >= 0 && sum != x.d[axis])
        return invalid(c, "split sizes sum to %lld, but dimension %d of the input is %lld",
                       (long long)sum, axis, (long long)x.d[axis]);
    return 0;
}

static int ck_constant_of_shape(ictx *c)
{
    return values_at_least(c, 0, NULL, 0, "shape", "dimensions must not be negative");
}

static int ck_topk(ictx *c)
{
    if (axis_in_range(c, -1, false) < 0) return -1;
    return values_at_least(c, 1, "k", 0, "k", "k must not be negative");
}

/* ---- products ---- */

/* The inner dimensions of a product must agree where both are known: onnxruntime refuses the
 * node, and the shape rule would give an output (and FLOPs) for a product that is not
 * defined. */
static int inner_dims(ictx *c, int64_t ka, int64_t kb)
{
    if (ka < 0 || kb < 0 || ka == kb) return 0;
    return invalid(c, "the inner dimensions differ: A's is %lld, B's %lld", (long long)ka,
                   (long long)kb);
}

static int ck_matmul(ictx *c)
{
    ir_shape a, b;
    if (!ir_in_shape(c, 0, &a) || !ir_in_shape(c, 1, &b) || a.rank < 1 || b.rank < 1) return 0;
    return inner_dims(c, a.d[a.rank - 1], b.d[b.rank == 1 ? 0 : b.rank - 2]);
}

static int ck_gemm(ictx *c)
{
    ir_shape a, b;
    if (!ir_in_shape(c, 0, &a) || !ir_in_shape(c, 1, &b) || a.rank != 2 || b.rank != 2) return 0;
    bool ta = pl_op_attr_int(c->op, "transA", 0), tb = pl_op_attr_int(c->op, "transB", 0);
    return inner_dims(c, a.d[ta ? 0 : 1], b.d[tb ? 1 : 0]);
}

/* ---- other attributes ---- */

static int attr_at_least(ictx *c, const char *name, int64_t dflt, int64_t min)
{
    int64_t v = pl_op_attr_int(c->op, name, dflt);
    if (v >= min) return 0;
    if (!pl_op_attr(c->op, name)) return invalid(c, "%s is required", name);
    return invalid(c, "%s = %lld: it must be at least %lld", name, (long long)v, (long long)min);
}

static int ck_blocksize(ictx *c)
{
    return attr_at_least(c, "blocksize", 0, 1);
}

static int ck_rnn(ictx *c)
{
    return attr_at_least(c, "hidden_size", 1, 1);
}

/* A dtype attribute: a TensorProto.DataType placer knows; `zero_ok` when 0 means "the
 * default" (QuantizeLinear's output_dtype). */
static int dtype_attr(ictx *c, const char *name, bool required, bool zero_ok)
{
    const pl_attr *a = pl_op_attr(c->op, name);
    if (!a) return required ? invalid(c, "%s is required", name) : 0;
    int64_t v = pl_op_attr_int(c->op, name, 0);
    if ((v > 0 || (zero_ok && v == 0)) && v < PL_DT_COUNT) return 0;
    return invalid(c, "%s = %lld is not an ONNX TensorProto.DataType placer knows (1 to %d)", name,
                   (long long)v, PL_DT_COUNT - 1);
}

static int ck_cast(ictx *c)
{
    return dtype_attr(c, "to", true, false);
}
static int ck_dtype(ictx *c)
{
    return dtype_attr(c, "dtype", false, false);
}
static int ck_output_dtype(ictx *c)
{
    return dtype_attr(c, "output_dtype", false, true);
}

const ir_check ir_checks[] = {
    {"Conv", ck_conv},
    {"ConvInteger", ck_conv},
    {"QLinearConv", ck_qlinearconv},
    {"ConvTranspose", ck_convt},
    {"MaxPool", ck_pool},
    {"AveragePool", ck_pool},
    {"LpPool", ck_pool},
    {"MaxUnpool", ck_pool},
    {"Reshape", ck_reshape},
    {"MatMul", ck_matmul},
    {"MatMulInteger", ck_matmul},
    {"Gemm", ck_gemm},
    {"Slice", ck_slice},
    {"Split", ck_split},
    {"ConstantOfShape", ck_constant_of_shape},
    {"DepthToSpace", ck_blocksize},
    {"SpaceToDepth", ck_blocksize},
    {"LSTM", ck_rnn},
    {"GRU", ck_rnn},
    {"RNN", ck_rnn},
    {"Concat", ck_axis0},
    {"Gather", ck_axis0},
    {"GatherElements", ck_axis0},
    {"ArgMax", ck_axis0},
    {"ArgMin", ck_axis0},
    {"Flatten", ck_flatten},
    {"Softmax", ck_softmax},
    {"LayerNormalization", ck_layernorm},
    {"LogSoftmax", ck_softmax},
    {"Hardmax", ck_softmax},
    {"TopK", ck_topk},
    {"Transpose", ck_transpose},
    {"Cast", ck_cast},
    {"EyeLike", ck_dtype},
    {"RandomUniform", ck_dtype},
    {"RandomNormal", ck_dtype},
    {"RandomUniformLike", ck_dtype},
    {"RandomNormalLike", ck_dtype},
    {"Multinomial", ck_dtype},
    {"Bernoulli", ck_dtype},
    {"QuantizeLinear", ck_output_dtype},
};
const int ir_n_checks = sizeof ir_checks / sizeof *ir_checks;
