/* ops_misc.c: reductions (Reduce*, ArgMax, TopK, CumSum, losses), ops whose output size
 * depends on the data (NonZero, Unique, Compress, NonMaxSuppression), generators (random,
 * windows, OneHot, EyeLike), signal processing (DFT, STFT) and sequence/optional ops. */
#include "infer_internal.h"

#include <math.h>
#include <string.h>

/* ---- reductions ---- */

static bool reduce_vals_op(const char *type, int64_t a, int64_t b, int64_t *r)
{
    if (strcmp(type, "ReduceProd") == 0)
        *r = (int64_t)((uint64_t)a * (uint64_t)b);
    else if (strcmp(type, "ReduceSum") == 0)
        *r = (int64_t)((uint64_t)a + (uint64_t)b);
    else if (strcmp(type, "ReduceMax") == 0)
        *r = a > b ? a : b;
    else if (strcmp(type, "ReduceMin") == 0)
        *r = a < b ? a : b;
    else
        return false;
    return true;
}

/* A whole-tensor integer reduction (ReduceProd of a Shape slice gives a Reshape target). */
static void reduce_vals(ictx *c)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v = ir_in_vals(c, 0);
    int64_t r = 0;
    if (!o || !ir_vals_known(v) || v->isf || v->n < 1 || ir_prod(o->s.d, o->s.rank) != 1) return;
    if (!reduce_vals_op(c->op->type, 0, 0, &r)) return; /* not an integer reduction we know */
    r = v->i[0];
    for (int j = 1; j < v->n; j++)
        reduce_vals_op(c->op->type, r, v->i[j], &r);
    o->v.n = 1, o->v.isf = false, o->v.i[0] = r, o->v.f[0] = (double)r, o->v.sym[0] = 0;
}

/* Reduce*: axes from input 1 (ReduceSum from opset 13, the others from 18) or the attribute;
 * none means all, unless noop_with_empty_axes. */
static void sh_reduce(ictx *c)
{
    ir_shape x, y = {.rank = 0};
    int64_t axes[IR_MAXRANK];
    bool red[IR_MAXRANK];
    bool keep = pl_op_attr_int(c->op, "keepdims", 1) != 0;
    int n = ir_ints_from(c, 1, "axes", axes), dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x) || n == -2) {
        ir_set_rank(c, 0, dt, keep ? x.rank : -1);
        return;
    }
    if (n <= 0 && pl_op_attr_int(c->op, "noop_with_empty_axes", 0)) {
        ir_set(c, 0, dt, &x);
        return;
    }
    for (int j = 0; j < x.rank; j++)
        red[j] = n <= 0;
    for (int j = 0; j < n; j++) {
        int a = ir_axis(axes[j], x.rank);
        if (a >= 0) red[a] = true;
    }
    for (int j = 0; j < x.rank; j++)
        if (!red[j] || keep) y.d[y.rank++] = red[j] ? 1 : x.d[j];
    ir_set(c, 0, dt, &y);
    reduce_vals(c);
}

/* ArgMax, ArgMin: one axis, int64. */
static void sh_argmax(ictx *c)
{
    ir_shape x, y = {.rank = 0};
    bool keep = pl_op_attr_int(c->op, "keepdims", 1) != 0;
    if (!ir_in_shape(c, 0, &x)) {
        ir_set_unknown(c, 0, PL_DT_INT64);
        return;
    }
    int a = ir_axis(pl_op_attr_int(c->op, "axis", 0), x.rank);
    for (int j = 0; j < x.rank; j++)
        if (j != a || keep) y.d[y.rank++] = j == a ? 1 : x.d[j];
    ir_set(c, 0, PL_DT_INT64, a >= 0 ? &y : NULL);
}

/* TopK: k from input 1 (opset 10) or the attribute, along axis (default -1). */
static void sh_topk(ictx *c)
{
    ir_shape x;
    int64_t k = -1;
    if (!ir_in(c, 1))
        k = pl_op_attr_int(c->op, "k", -1);
    else if (!ir_in_scalar(c, 1, &k))
        k = -1;
    if (ir_in_shape(c, 0, &x)) {
        int a = ir_axis(pl_op_attr_int(c->op, "axis", -1), x.rank);
        if (a >= 0) x.d[a] = k;
        if (a < 0) x.rank = -1;
    }
    ir_set(c, 0, ir_in_dtype(c, 0), &x);
    ir_set(c, 1, PL_DT_INT64, &x);
}

/* SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: [N, d1, ...] (scores without the
 * class dim) with reduction 'none', a scalar otherwise; SCE's log_prob is like the scores. */
static void sh_loss(ictx *c)
{
    ir_shape x, y = {.rank = 0};
    int dt = ir_in_dtype(c, 0);
    const char *red = pl_op_attr_string(c->op, "reduction", "mean");
    if (strcmp(red, "none") != 0)
        ir_set(c, 0, dt, &y);
    else if (!ir_in_shape(c, 0, &x) || x.rank < 2)
        ir_set_unknown(c, 0, dt);
    else {
        y.rank = x.rank - 1, y.d[0] = x.d[0];
        for (int j = 2; j < x.rank; j++)
            y.d[j - 1] = x.d[j];
        ir_set(c, 0, dt, &y);
    }
    ir_set_like(c, 1, 0, 0);
}

/* ---- data-dependent sizes ---- */

static void sh_nonzero(ictx *c)
{
    ir_shape y = {.rank = 2, .d = {ir_in_rank(c, 0), PL_DIM_UNKNOWN}};
    ir_set(c, 0, PL_DT_INT64, &y);
}

static void sh_compress(ictx *c)
{
    ir_shape x;
    const pl_attr *a = pl_op_attr(c->op, "axis");
    if (!a) {
        ir_set_rank(c, 0, ir_in_dtype(c, 0), 1);
        return;
    }
    if (ir_in_shape(c, 0, &x)) {
        int ax = ir_axis(a->i, x.rank);
        if (ax >= 0)
            x.d[ax] = PL_DIM_UNKNOWN;
        else
            x.rank = -1;
    }
    ir_set(c, 0, ir_in_dtype(c, 0), &x);
}

/* Unique: Y, indices, inverse_indices, counts. */
static void sh_unique(ictx *c)
{
    ir_shape x, one = {.rank = 1, .d = {PL_DIM_UNKNOWN}}, inv = one;
    const pl_attr *a = pl_op_attr(c->op, "axis");
    bool known = ir_in_shape(c, 0, &x);
    int ax = known && a ? ir_axis(a->i, x.rank) : -1;
    if (!a) {
        ir_set(c, 0, ir_in_dtype(c, 0), &one);
        inv.d[0] = ir_in_numel(c, 0);
    } else {
        if (ax >= 0) inv.d[0] = x.d[ax], x.d[ax] = PL_DIM_UNKNOWN;
        ir_set(c, 0, ir_in_dtype(c, 0), ax >= 0 ? &x : NULL);
    }
    ir_set(c, 1, PL_DT_INT64, &one);
    ir_set(c, 2, PL_DT_INT64, &inv);
    ir_set(c, 3, PL_DT_INT64, &one);
}

static void sh_nms(ictx *c)
{
    ir_shape y = {.rank = 2, .d = {PL_DIM_UNKNOWN, 3}};
    ir_set(c, 0, PL_DT_INT64, &y);
}

/* ---- generators ---- */

/* OneHot: the indices' shape with depth inserted at axis; the values' type. */
static void sh_onehot(ictx *c)
{
    ir_shape x, y;
    double depth;
    int dt = ir_in_dtype(c, 2);
    if (!ir_in_shape(c, 0, &x) || x.rank + 1 > IR_MAXRANK) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    int64_t d = -1;
    if (!ir_in_fscalar(c, 1, &depth) || !ir_f2i(depth, &d) || d < 0) d = -1;
    int a = ir_axis(pl_op_attr_int(c->op, "axis", -1), x.rank + 1);
    y.rank = x.rank + 1;
    for (int j = 0, k = 0; j < y.rank; j++)
        y.d[j] = j == a ? d : x.d[k++];
    ir_set(c, 0, dt, a >= 0 ? &y : NULL);
}

/* The 'dtype' attribute, else input 0's type (the *Like generators, EyeLike, Bernoulli). */
static void sh_like_dtype(ictx *c)
{
    ir_set_like(c, 0, 0, (int)pl_op_attr_int(c->op, "dtype", ir_in_dtype(c, 0)));
}

static void sh_random(ictx *c)
{
    int64_t sh[IR_MAXRANK];
    ir_shape y;
    int n = ir_attr_ints(c, "shape", sh);
    y.rank = n;
    for (int j = 0; j < n; j++)
        y.d[j] = sh[j];
    ir_set(c, 0, (int)pl_op_attr_int(c->op, "dtype", PL_DT_FLOAT), &y);
}

static void sh_multinomial(ictx *c)
{
    ir_shape x, y = {.rank = 2, .d = {-1, pl_op_attr_int(c->op, "sample_size", 1)}};
    if (ir_in_shape(c, 0, &x) && x.rank == 2) y.d[0] = x.d[0];
    ir_set(c, 0, (int)pl_op_attr_int(c->op, "dtype", PL_DT_INT32), &y);
}

/* HannWindow, HammingWindow, BlackmanWindow: [size]. */
static void sh_window(ictx *c)
{
    int64_t size = -1;
    ir_shape y = {.rank = 1};
    y.d[0] = ir_in_scalar(c, 0, &size) && size >= 0 ? size : -1;
    ir_set(c, 0, (int)pl_op_attr_int(c->op, "output_datatype", PL_DT_FLOAT), &y);
}

static void sh_melweight(ictx *c)
{
    int64_t mel = -1, dft = -1;
    ir_shape y = {.rank = 2, .d = {-1, -1}};
    if (ir_in_scalar(c, 1, &dft) && dft >= 0) y.d[0] = dft / 2 + 1;
    if (ir_in_scalar(c, 0, &mel) && mel >= 0) y.d[1] = mel;
    ir_set(c, 0, (int)pl_op_attr_int(c->op, "output_datatype", PL_DT_FLOAT), &y);
}

/* ---- signal processing ---- */

/* DFT (opset 17): complex last dim of 2; the axis becomes dft_length (or onesided half). */
static void sh_dft(ictx *c)
{
    ir_shape x;
    int64_t len = -1;
    int dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x) || x.rank < 2) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    int a = ir_axis(pl_op_attr_int(c->op, "axis", 1), x.rank - 1);
    if (a < 0) {
        ir_set_rank(c, 0, dt, x.rank);
        return;
    }
    if (!ir_in(c, 1) || !ir_in_scalar(c, 1, &len)) len = ir_in(c, 1) ? -1 : x.d[a];
    bool half = pl_op_attr_int(c->op, "onesided", 0) && !pl_op_attr_int(c->op, "inverse", 0);
    x.d[a] = len < 0 ? -1 : half ? len / 2 + 1 : len;
    x.d[x.rank - 1] = 2;
    ir_set(c, 0, dt, &x);
}

/* STFT: [batch, frames, bins, 2]. */
static void sh_stft(ictx *c)
{
    ir_shape x, w, y = {.rank = 4, .d = {-1, -1, -1, 2}};
    int64_t step = -1, frame = -1;
    if (!ir_in_scalar(c, 3, &frame) && ir_in_shape(c, 2, &w) && w.rank == 1) frame = w.d[0];
    ir_in_scalar(c, 1, &step);
    if (ir_in_shape(c, 0, &x) && x.rank == 3) {
        y.d[0] = x.d[0];
        if (x.d[1] >= frame && frame > 0 && step > 0) y.d[1] = (x.d[1] - frame) / step + 1;
    }
    if (frame > 0) y.d[2] = pl_op_attr_int(c->op, "onesided", 1) ? frame / 2 + 1 : frame;
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
}

/* About 5·N·log2(N) per transform of length N: 5·log2(N) per complex output sample. */
static double fl_dft(const ictx *c)
{
    ir_shape x;
    if (!ir_in_shape(c, 0, &x) || x.rank < 2) return 0;
    int a = ir_axis(pl_op_attr_int(c->op, "axis", 1), x.rank - 1);
    int64_t n = a >= 0 ? x.d[a] : -1;
    return n > 1 ? ir_numel_out(c, 0) / 2 * 5 * log2((double)n) : 0;
}

static double fl_stft(const ictx *c)
{
    int t = c->op->n_outputs ? c->op->outputs[0] : -1;
    const pl_tensor *y = t >= 0 ? &c->g->tensors[t] : NULL;
    if (!y || y->rank != 4 || y->dims[2] < 1) return 0;
    return ir_numel_out(c, 0) / 2 * 5 * log2(2.0 * (double)y->dims[2]);
}

/* ---- linear algebra ---- */

static void sh_det(ictx *c)
{
    ir_shape x;
    if (ir_in_shape(c, 0, &x)) x.rank = x.rank >= 2 ? x.rank - 2 : -1;
    ir_set(c, 0, ir_in_dtype(c, 0), &x);
}

/* LU decomposition: (2/3)·M³ per matrix. */
static double fl_det(const ictx *c)
{
    ir_shape x;
    if (!ir_in_shape(c, 0, &x) || x.rank < 2 || x.d[x.rank - 1] < 0) return 0;
    double m = (double)x.d[x.rank - 1], batch = ir_numel_out(c, 0);
    return (batch > 0 ? batch : 1) * 2.0 / 3.0 * m * m * m;
}

/* ---- text ---- */

static void sh_string_normalizer(ictx *c)
{
    int r = ir_in_rank(c, 0);
    ir_shape x;
    if (ir_in_shape(c, 0, &x) && r >= 1) x.d[r - 1] = PL_DIM_UNKNOWN; /* stopwords go */
    ir_set(c, 0, PL_DT_STRING, &x);
}

static void sh_tfidf(ictx *c)
{
    ir_shape x, y = {.rank = -1};
    const int64_t *v;
    int n = pl_op_attr_ints(c->op, "ngram_indexes", &v);
    int64_t width = 0;
    for (int j = 0; j < n; j++)
        width = v[j] >= width ? ir_dim_expr(v[j], 1, 1) : width; /* max index + 1 */
    if (ir_in_shape(c, 0, &x) && (x.rank == 1 || x.rank == 2)) {
        y.rank = x.rank;
        y.d[0] = x.d[0];
        y.d[x.rank - 1] = n > 0 ? width : -1;
    }
    ir_set(c, 0, PL_DT_FLOAT, &y);
}

/* ---- sequences and optionals: no tensor shapes, scalars where ONNX says so ---- */

static void sh_scalar_int64(ictx *c)
{
    ir_shape y = {.rank = 0};
    ir_set(c, 0, PL_DT_INT64, &y);
}

static void sh_scalar_bool(ictx *c)
{
    ir_shape y = {.rank = 0};
    ir_set(c, 0, PL_DT_BOOL, &y);
}

static void sh_like0(ictx *c)
{
    ir_set_like(c, 0, 0, 0);
}

#define EW PL_CLASS_ELEMENTWISE
#define DM PL_CLASS_DATA_MOVEMENT
#define RED PL_CLASS_REDUCTION
#define DENSE PL_CLASS_DENSE

const ir_rule ir_rules_misc[] = {
    {"ReduceSum", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceMean", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceMax", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceMin", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceProd", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceL1", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceL2", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceLogSum", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceLogSumExp", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ReduceSumSquare", RED, sh_reduce, ir_flops_in_k, 1, NULL, NULL},
    {"ArgMax", RED, sh_argmax, ir_flops_in_k, 1, NULL, NULL},
    {"ArgMin", RED, sh_argmax, ir_flops_in_k, 1, NULL, NULL},
    {"TopK", RED, sh_topk, ir_flops_in_k, 1, NULL, NULL},
    {"CumSum", RED, sh_like0, ir_flops_in_k, 1, NULL, NULL},
    {"SoftmaxCrossEntropyLoss", RED, sh_loss, ir_flops_in_k, 6, NULL, NULL},
    {"NegativeLogLikelihoodLoss", RED, sh_loss, ir_flops_in_k, 1, NULL, NULL},
    {"NonZero", RED, sh_nonzero, ir_flops_in_k, 1, NULL, NULL},
    {"Unique", RED, sh_unique, ir_flops_in_k, 1, NULL, NULL},
    {"NonMaxSuppression", RED, sh_nms, ir_flops_in_k, 1, NULL, NULL},
    {"Compress", DM, sh_compress, NULL, 0, NULL, NULL},
    {"Trilu", EW, sh_like0, ir_flops_out_k, 1, NULL, NULL},
    {"OneHot", DM, sh_onehot, NULL, 0, NULL, NULL},
    {"EyeLike", DM, sh_like_dtype, NULL, 0, NULL, NULL},
    {"Bernoulli", EW, sh_like_dtype, ir_flops_out_k, 1, NULL, NULL},
    {"RandomUniformLike", EW, sh_like_dtype, ir_flops_out_k, 1, NULL, NULL},
    {"RandomNormalLike", EW, sh_like_dtype, ir_flops_out_k, 1, NULL, NULL},
    {"RandomUniform", EW, sh_random, ir_flops_out_k, 1, NULL, NULL},
    {"RandomNormal", EW, sh_random, ir_flops_out_k, 1, NULL, NULL},
    {"Multinomial", EW, sh_multinomial, ir_flops_in_k, 1, NULL, NULL},
    {"HannWindow", EW, sh_window, ir_flops_out_k, 4, NULL, NULL},
    {"HammingWindow", EW, sh_window, ir_flops_out_k, 4, NULL, NULL},
    {"BlackmanWindow", EW, sh_window, ir_flops_out_k, 8, NULL, NULL},
    {"MelWeightMatrix", EW, sh_melweight, ir_flops_out_k, 4, NULL, NULL},
    {"DFT", DENSE, sh_dft, fl_dft, 0, NULL, NULL},
    {"STFT", DENSE, sh_stft, fl_stft, 0, NULL, NULL},
    {"Det", DENSE, sh_det, fl_det, 0, NULL, NULL},
    {"StringNormalizer", DM, sh_string_normalizer, NULL, 0, NULL, NULL},
    {"TfIdfVectorizer", RED, sh_tfidf, ir_flops_in_k, 1, NULL, NULL},
    {"SequenceLength", DM, sh_scalar_int64, NULL, 0, NULL, NULL},
    {"OptionalHasElement", DM, sh_scalar_bool, NULL, 0, NULL, NULL},
    {"SequenceEmpty", DM, NULL, NULL, 0, NULL, NULL},
    {"SequenceConstruct", DM, NULL, NULL, 0, NULL, NULL},
    {"SequenceInsert", DM, NULL, NULL, 0, NULL, NULL},
    {"SequenceErase", DM, NULL, NULL, 0, NULL, NULL},
    {"SequenceAt", DM, NULL, NULL, 0, NULL, NULL},
    {"SplitToSequence", DM, NULL, NULL, 0, NULL, NULL},
    {"ConcatFromSequence", DM, NULL, NULL, 0, NULL, NULL},
    {"Optional", DM, NULL, NULL, 0, NULL, NULL},
    {"OptionalGetElement", DM, NULL, NULL, 0, NULL, NULL},
};
const int ir_n_rules_misc = sizeof ir_rules_misc / sizeof *ir_rules_misc;
