/* ops.c: each op's forward pass (recording a node) and its backward pass (lt_backward_node),
 * side by side so that a change to one is seen next to the other. The gradients are written
 * out in docs/learn.md, "Ops and their gradients". */
#include "learn_internal.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define VAL(x) (t->v[x].val)

static int unary(pl_tape *t, lt_kind kind, int a)
{
    int y = lt_push(t, kind, lt_at(t, a)->rows, lt_at(t, a)->cols, 1, &a);
    return y;
}

static long size_of(const lt_node *x)
{
    return (long)x->rows * x->cols;
}

int pl_t_matmul(pl_tape *t, int a, int b)
{
    int n = lt_at(t, a)->rows, k = lt_at(t, a)->cols, m = lt_at(t, b)->cols;
    PL_ASSERT(lt_at(t, b)->rows == k);
    int in[2] = {a, b}, y = lt_push(t, LT_MATMUL, n, m, 2, in);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, m, k, 1, VAL(a), k, VAL(b), m, 0,
                VAL(y), m);
    return y;
}

/* The element of b that meets a[i][j] under broadcasting ([r,c], [1,c], [r,1] or [1,1]). */
static inline long bcast(const lt_node *b, int i, int j)
{
    return (long)(b->rows == 1 ? 0 : i) * b->cols + (b->cols == 1 ? 0 : j);
}

static int binary(pl_tape *t, lt_kind kind, int a, int b)
{
    const lt_node *A = lt_at(t, a), *B = lt_at(t, b);
    PL_ASSERT(B->rows == A->rows || B->rows == 1);
    PL_ASSERT(B->cols == A->cols || B->cols == 1);
    int in[2] = {a, b}, y = lt_push(t, kind, A->rows, A->cols, 2, in);
    A = lt_at(t, a);
    B = lt_at(t, b);
    float *o = VAL(y);
    for (int i = 0; i < A->rows; i++)
        for (int j = 0; j < A->cols; j++) {
            float u = A->val[(long)i * A->cols + j], v = B->val[bcast(B, i, j)];
            o[(long)i * A->cols + j] = kind == LT_ADD ? u + v : u * v;
        }
    return y;
}

int pl_t_add(pl_tape *t, int a, int b)
{
    return binary(t, LT_ADD, a, b);
}

int pl_t_mul(pl_tape *t, int a, int b)
{
    return binary(t, LT_MUL, a, b);
}

/* Element-wise y = f(x) for the unary kinds; f of the node's own parameter (slope, scale). */
static float apply(lt_kind kind, float x, float f)
{
    switch (kind) {
    case LT_SCALE:
        return f * x;
    case LT_TANH:
        return tanhf(x);
    case LT_SIGMOID:
        return 1 / (1 + expf(-x));
    case LT_RELU:
        return x > 0 ? x : 0;
    case LT_LEAKY:
        return x > 0 ? x : f * x;
    default:
        PL_ASSERT(0);
        return 0;
    }
}

/* dy/dx from the input x, the output y and the parameter f. */
static float slope(lt_kind kind, float x, float y, float f)
{
    switch (kind) {
    case LT_SCALE:
        return f;
    case LT_TANH:
        return 1 - y * y;
    case LT_SIGMOID:
        return y * (1 - y);
    case LT_RELU:
        return x > 0 ? 1 : 0;
    case LT_LEAKY:
        return x > 0 ? 1 : f;
    default:
        PL_ASSERT(0);
        return 0;
    }
}

static int elementwise(pl_tape *t, lt_kind kind, int a, float f)
{
    int y = unary(t, kind, a);
    t->v[y].f = f;
    for (long k = 0; k < size_of(&t->v[y]); k++)
        VAL(y)[k] = apply(kind, VAL(a)[k], f);
    return y;
}

int pl_t_scale(pl_tape *t, int a, float c)
{
    return elementwise(t, LT_SCALE, a, c);
}
int pl_t_tanh(pl_tape *t, int a)
{
    return elementwise(t, LT_TANH, a, 0);
}
int pl_t_sigmoid(pl_tape *t, int a)
{
    return elementwise(t, LT_SIGMOID, a, 0);
}
int pl_t_relu(pl_tape *t, int a)
{
    return elementwise(t, LT_RELU, a, 0);
}
int pl_t_leaky_relu(pl_tape *t, int a, float slope)
{
    return elementwise(t, LT_LEAKY, a, slope);
}

int pl_t_concat_cols(pl_tape *t, int n, const int *xs)
{
    PL_ASSERT(n > 0);
    int rows = lt_at(t, xs[0])->rows, cols = 0;
    for (int i = 0; i < n; i++) {
        PL_ASSERT(lt_at(t, xs[i])->rows == rows);
        cols += lt_at(t, xs[i])->cols;
    }
    int y = lt_push(t, LT_CONCAT_COLS, rows, cols, n, xs);
    for (int i = 0, c0 = 0; i < n; c0 += t->v[xs[i]].cols, i++) {
        int c = t->v[xs[i]].cols;
        for (int r = 0; r < rows; r++)
            memcpy(VAL(y) + (long)r * cols + c0, VAL(xs[i]) + (long)r * c, c * sizeof(float));
    }
    return y;
}

int pl_t_concat_rows(pl_tape *t, int n, const int *xs)
{
    PL_ASSERT(n > 0);
    int rows = 0, cols = lt_at(t, xs[0])->cols;
    for (int i = 0; i < n; i++) {
        PL_ASSERT(lt_at(t, xs[i])->cols == cols);
        rows += lt_at(t, xs[i])->rows;
    }
    int y = lt_push(t, LT_CONCAT_ROWS, rows, cols, n, xs);
    for (int i = 0, at = 0; i < n; i++) {
        long k = size_of(&t->v[xs[i]]);
        memcpy(VAL(y) + at, VAL(xs[i]), k * sizeof(float));
        at += k;
    }
    return y;
}

int pl_t_slice_cols(pl_tape *t, int a, int c0, int n)
{
    int rows = lt_at(t, a)->rows, cols = lt_at(t, a)->cols;
    PL_ASSERT(c0 >= 0 && n > 0 && c0 + n <= cols);
    int y = lt_push(t, LT_SLICE_COLS, rows, n, 1, &a);
    t->v[y].idx = pl_malloc(sizeof(int));
    t->v[y].idx[0] = c0;
    t->v[y].nidx = 1;
    for (int r = 0; r < rows; r++)
        memcpy(VAL(y) + (long)r * n, VAL(a) + (long)r * cols + c0, n * sizeof(float));
    return y;
}

/* A node's own copy of an index array. */
static void set_idx(pl_tape *t, int y, int n, const int *idx)
{
    t->v[y].idx = pl_malloc((size_t)n * sizeof(int));
    memcpy(t->v[y].idx, idx, (size_t)n * sizeof(int));
    t->v[y].nidx = n;
}

int pl_t_gather(pl_tape *t, int a, int n, const int *idx)
{
    int rows = lt_at(t, a)->rows, cols = lt_at(t, a)->cols;
    int y = lt_push(t, LT_GATHER, n, cols, 1, &a);
    (void)rows; /* only in the contract */
    set_idx(t, y, n, idx);
    for (int i = 0; i < n; i++) {
        PL_ASSERT(idx[i] >= 0 && idx[i] < rows);
        memcpy(VAL(y) + (long)i * cols, VAL(a) + (long)idx[i] * cols, cols * sizeof(float));
    }
    return y;
}

int pl_t_slice_rows(pl_tape *t, int a, int r0, int n)
{
    PL_ASSERT(r0 >= 0 && n > 0 && r0 + n <= lt_at(t, a)->rows);
    int *idx = pl_malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        idx[i] = r0 + i;
    int y = pl_t_gather(t, a, n, idx);
    free(idx);
    return y;
}

int pl_t_transpose(pl_tape *t, int a)
{
    int rows = lt_at(t, a)->rows, cols = lt_at(t, a)->cols;
    int y = lt_push(t, LT_TRANSPOSE, cols, rows, 1, &a);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            VAL(y)[(long)j * rows + i] = VAL(a)[(long)i * cols + j];
    return y;
}

static int reduce(pl_tape *t, lt_kind kind, int a)
{
    int y = lt_push(t, kind, 1, 1, 1, &a);
    long n = size_of(&t->v[a]);
    double s = 0; /* in double: a long sum in float loses the small terms */
    for (long k = 0; k < n; k++)
        s += VAL(a)[k];
    VAL(y)[0] = (float)(kind == LT_MEAN ? s / n : s);
    return y;
}

int pl_t_sum(pl_tape *t, int a)
{
    return reduce(t, LT_SUM, a);
}

int pl_t_mean(pl_tape *t, int a)
{
    return reduce(t, LT_MEAN, a);
}

/* log(sum(exp(x - max))) of n floats at stride `stride`, and the max in *mx. Kept apart
 * from the max: at logits near 1000, max + log(sum) in float is 6e-5 off, and so would be
 * every probability computed from it. */
static float logsumexp_rel(const float *x, int n, int stride, float *mx)
{
    *mx = x[0];
    for (int j = 1; j < n; j++)
        if (x[(long)j * stride] > *mx) *mx = x[(long)j * stride];
    double s = 0;
    for (int j = 0; j < n; j++)
        s += exp((double)x[(long)j * stride] - *mx);
    return (float)log(s);
}

/* Softmax (or log-softmax) of n values at stride `stride` from x into y. */
static void softmax_into(const float *x, float *y, int n, int stride, bool log_)
{
    float mx, l = logsumexp_rel(x, n, stride, &mx);
    for (int j = 0; j < n; j++) {
        float z = (x[(long)j * stride] - mx) - l;
        y[(long)j * stride] = log_ ? z : expf(z);
    }
}

static int row_softmax(pl_tape *t, lt_kind kind, int a)
{
    int y = unary(t, kind, a), rows = t->v[a].rows, cols = t->v[a].cols;
    for (int r = 0; r < rows; r++)
        softmax_into(VAL(a) + (long)r * cols, VAL(y) + (long)r * cols, cols, 1,
                     kind == LT_LOG_SOFTMAX);
    return y;
}

int pl_t_softmax(pl_tape *t, int a)
{
    return row_softmax(t, LT_SOFTMAX, a);
}

int pl_t_log_softmax(pl_tape *t, int a)
{
    return row_softmax(t, LT_LOG_SOFTMAX, a);
}

int pl_t_pick(pl_tape *t, int a, const int *idx)
{
    int rows = lt_at(t, a)->rows, cols = lt_at(t, a)->cols;
    int y = lt_push(t, LT_PICK, rows, 1, 1, &a);
    set_idx(t, y, rows, idx);
    for (int r = 0; r < rows; r++) {
        PL_ASSERT(idx[r] >= 0 && idx[r] < cols);
        VAL(y)[r] = VAL(a)[(long)r * cols + idx[r]];
    }
    return y;
}

int pl_t_cross_entropy(pl_tape *t, int a, const int *target)
{
    int rows = lt_at(t, a)->rows, cols = lt_at(t, a)->cols;
    int y = lt_push(t, LT_XENT, 1, 1, 1, &a);
    set_idx(t, y, rows, target);
    float *p = t->v[y].aux = pl_malloc((size_t)rows * cols * sizeof(float));
    double s = 0;
    for (int r = 0; r < rows; r++) {
        const float *x = VAL(a) + (long)r * cols;
        PL_ASSERT(target[r] >= 0 && target[r] < cols);
        float mx, l = logsumexp_rel(x, cols, 1, &mx);
        s += (double)(mx - x[target[r]]) + l;
        softmax_into(x, p + (long)r * cols, cols, 1, false);
    }
    VAL(y)[0] = (float)s;
    return y;
}

static void check_ptr(int n, const int *ptr, int rows)
{
    PL_ASSERT(n > 0 && ptr[0] == 0 && ptr[n] == rows);
    for (int i = 0; i < n; i++)
        PL_ASSERT(ptr[i] <= ptr[i + 1]);
    (void)ptr, (void)rows; /* only in the contract */
}

int pl_t_seg_softmax(pl_tape *t, int a, int n, const int *ptr)
{
    PL_ASSERT(lt_at(t, a)->cols == 1);
    check_ptr(n, ptr, lt_at(t, a)->rows);
    int y = unary(t, LT_SEG_SOFTMAX, a);
    set_idx(t, y, n + 1, ptr);
    for (int i = 0; i < n; i++)
        if (ptr[i + 1] > ptr[i])
            softmax_into(VAL(a) + ptr[i], VAL(y) + ptr[i], ptr[i + 1] - ptr[i], 1, false);
    return y;
}

int pl_t_seg_sum(pl_tape *t, int a, int n, const int *ptr)
{
    int cols = lt_at(t, a)->cols;
    check_ptr(n, ptr, lt_at(t, a)->rows);
    int y = lt_push(t, LT_SEG_SUM, n, cols, 1, &a);
    set_idx(t, y, n + 1, ptr);
    memset(VAL(y), 0, (size_t)n * cols * sizeof(float));
    for (int i = 0; i < n; i++)
        for (int e = ptr[i]; e < ptr[i + 1]; e++)
            for (int j = 0; j < cols; j++)
                VAL(y)[(long)i * cols + j] += VAL(a)[(long)e * cols + j];
    return y;
}

/* ---- backward ---- */

static void back_matmul(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]], *B = &t->v[y->in[1]];
    int n = A->rows, k = A->cols, m = B->cols;
    /* dA += dY B^T, dB += A^T dY */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, k, m, 1, y->grad, m, B->val, m, 1,
                A->grad, k);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, m, n, 1, A->val, k, y->grad, m, 1,
                B->grad, m);
}

static void back_binary(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]], *B = &t->v[y->in[1]];
    for (int i = 0; i < y->rows; i++)
        for (int j = 0; j < y->cols; j++) {
            long k = (long)i * y->cols + j, kb = bcast(B, i, j);
            float g = y->grad[k];
            if (y->kind == LT_ADD) {
                A->grad[k] += g;
                B->grad[kb] += g;
            } else {
                float u = A->val[k], v = B->val[kb];
                A->grad[k] += g * v;
                B->grad[kb] += g * u;
            }
        }
}

static void back_elementwise(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]];
    for (long k = 0; k < size_of(y); k++)
        A->grad[k] += y->grad[k] * slope(y->kind, A->val[k], y->val[k], y->f);
}

static void back_concat(pl_tape *t, lt_node *y)
{
    for (int i = 0, at = 0; i < y->nin; i++) {
        lt_node *x = &t->v[y->in[i]];
        for (int r = 0; r < x->rows; r++)
            for (int j = 0; j < x->cols; j++) {
                long k = y->kind == LT_CONCAT_COLS ? (long)r * y->cols + at + j
                                                   : (long)(at + r) * y->cols + j;
                x->grad[(long)r * x->cols + j] += y->grad[k];
            }
        at += y->kind == LT_CONCAT_COLS ? x->cols : x->rows;
    }
}

static void back_slice_gather(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]];
    for (int r = 0; r < y->rows; r++)
        for (int j = 0; j < y->cols; j++) {
            long src = y->kind == LT_GATHER ? (long)y->idx[r] * A->cols + j
                                            : (long)r * A->cols + y->idx[0] + j;
            A->grad[src] += y->grad[(long)r * y->cols + j];
        }
}

static void back_transpose(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]];
    for (int i = 0; i < A->rows; i++)
        for (int j = 0; j < A->cols; j++)
            A->grad[(long)i * A->cols + j] += y->grad[(long)j * A->rows + i];
}

static void back_reduce(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]];
    float g = y->grad[0] / (y->kind == LT_MEAN ? (float)size_of(A) : 1);
    for (long k = 0; k < size_of(A); k++)
        A->grad[k] += g;
}

/* n values at stride s: softmax dx = y (dy - <dy, y>); log-softmax dx = dy - exp(y) sum dy. */
static void back_softmax_run(const float *y, const float *dy, float *dx, int n, bool log_)
{
    double s = 0;
    for (int j = 0; j < n; j++)
        s += log_ ? dy[j] : (double)dy[j] * y[j];
    for (int j = 0; j < n; j++)
        dx[j] += log_ ? dy[j] - expf(y[j]) * (float)s : y[j] * (dy[j] - (float)s);
}

static void back_softmax(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]];
    if (y->kind == LT_SEG_SOFTMAX) {
        for (int i = 0; i + 1 < y->nidx; i++)
            back_softmax_run(y->val + y->idx[i], y->grad + y->idx[i], A->grad + y->idx[i],
                             y->idx[i + 1] - y->idx[i], false);
        return;
    }
    for (int r = 0; r < y->rows; r++) {
        long o = (long)r * y->cols;
        back_softmax_run(y->val + o, y->grad + o, A->grad + o, y->cols, y->kind == LT_LOG_SOFTMAX);
    }
}

static void back_pick_xent(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]];
    if (y->kind == LT_PICK) {
        for (int r = 0; r < A->rows; r++)
            A->grad[(long)r * A->cols + y->idx[r]] += y->grad[r];
        return;
    }
    for (int r = 0; r < A->rows; r++)
        for (int j = 0; j < A->cols; j++) {
            long k = (long)r * A->cols + j;
            A->grad[k] += y->grad[0] * (y->aux[k] - (j == y->idx[r] ? 1 : 0));
        }
}

static void back_seg_sum(pl_tape *t, lt_node *y)
{
    lt_node *A = &t->v[y->in[0]];
    for (int i = 0; i < y->rows; i++)
        for (int e = y->idx[i]; e < y->idx[i + 1]; e++)
            for (int j = 0; j < y->cols; j++)
                A->grad[(long)e * y->cols + j] += y->grad[(long)i * y->cols + j];
}

void lt_backward_node(pl_tape *t, lt_node *y)
{
    switch (y->kind) {
    case LT_PARAM:
        for (long k = 0; k < size_of(y); k++)
            y->param->g[k] += y->grad[k];
        break;
    case LT_INPUT:
        break;
    case LT_MATMUL:
        back_matmul(t, y);
        break;
    case LT_ADD:
    case LT_MUL:
        back_binary(t, y);
        break;
    case LT_SCALE:
    case LT_TANH:
    case LT_SIGMOID:
    case LT_RELU:
    case LT_LEAKY:
        back_elementwise(t, y);
        break;
    case LT_CONCAT_COLS:
    case LT_CONCAT_ROWS:
        back_concat(t, y);
        break;
    case LT_SLICE_COLS:
    case LT_GATHER:
        back_slice_gather(t, y);
        break;
    case LT_TRANSPOSE:
        back_transpose(t, y);
        break;
    case LT_SUM:
    case LT_MEAN:
        back_reduce(t, y);
        break;
    case LT_SOFTMAX:
    case LT_LOG_SOFTMAX:
    case LT_SEG_SOFTMAX:
        back_softmax(t, y);
        break;
    case LT_PICK:
    case LT_XENT:
        back_pick_xent(t, y);
        break;
    case LT_SEG_SUM:
        back_seg_sum(t, y);
        break;
    }
}
