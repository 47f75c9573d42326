/* ops_nn.c: the dense ops (Conv, ConvTranspose, MatMul, Gemm, LSTM/GRU/RNN, Einsum and their
 * quantised forms) and pooling, whose shapes follow the convolution arithmetic. */
#include "infer_internal.h"

#include <string.h>

/* ---- convolution arithmetic ---- */

typedef struct convp {
    int n; /* spatial dimensions */
    int64_t k[IR_MAXRANK], s[IR_MAXRANK], dil[IR_MAXRANK], pads[2 * IR_MAXRANK];
    int64_t outpad[IR_MAXRANK];
    const char *auto_pad;
    bool ceil_mode;
} convp;

/* Fills an INTS attribute of n entries, or the default when absent or malformed. */
static void attr_or(const ictx *c, const char *name, int64_t *v, int n, int64_t dflt)
{
    int64_t buf[IR_MAXRANK];
    int got = ir_attr_ints(c, name, buf);
    for (int j = 0; j < n; j++)
        v[j] = got == n ? buf[j] : dflt;
}

/* Kernel from kernel_shape, else from the weight's dims [2:] (w_in < 0: no weight). */
static void conv_params(const ictx *c, int n, int w_in, convp *p)
{
    int64_t buf[2 * IR_MAXRANK];
    ir_shape w;
    p->n = n;
    attr_or(c, "strides", p->s, n, 1);
    attr_or(c, "dilations", p->dil, n, 1);
    attr_or(c, "output_padding", p->outpad, n, 0);
    int np = ir_attr_ints(c, "pads", buf);
    for (int j = 0; j < 2 * n; j++)
        p->pads[j] = np == 2 * n ? buf[j] : 0;
    attr_or(c, "kernel_shape", p->k, n, PL_DIM_UNKNOWN);
    if (p->k[0] < 0 && w_in >= 0 && ir_in_shape(c, w_in, &w) && w.rank == n + 2)
        for (int j = 0; j < n; j++)
            p->k[j] = w.d[j + 2];
    p->auto_pad = pl_op_attr_string(c->op, "auto_pad", "NOTSET");
    p->ceil_mode = pl_op_attr_int(c->op, "ceil_mode", 0) != 0;
}

static bool same_pad(const convp *p)
{
    return strncmp(p->auto_pad, "SAME", 4) == 0;
}

/* ceil(a / b) for a >= 0, b > 0, without overflow. */
static int64_t ceil_div(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}

/* The dilated kernel extent (k-1)·d+1; -1 when unknown or absurd. */
static int64_t kernel_extent(const convp *p, int j)
{
    if (p->k[j] < 1 || p->dil[j] < 1) return PL_DIM_UNKNOWN;
    return ir_dim_expr(p->k[j] - 1, p->dil[j], 1);
}

/* Total padding along j (0 with VALID); false on overflow. */
static bool pads_of(const convp *p, int j, int64_t *pb, int64_t *total)
{
    bool valid = strcmp(p->auto_pad, "VALID") == 0;
    *pb = valid ? 0 : p->pads[j];
    return !__builtin_add_overflow(*pb, valid ? 0 : p->pads[j + p->n], total);
}

/* Output size along spatial dim j of a convolution or pooling window. With ceil_mode a last
 * window that would start in the end padding is dropped (PyTorch, and ONNX since opset 19). */
static int64_t conv_out(int64_t in, const convp *p, int j)
{
    int64_t ek = kernel_extent(p, j), s = p->s[j], pb, pads, span, start_limit;
    if (in < 0 || ek < 0 || s <= 0) return PL_DIM_UNKNOWN;
    if (same_pad(p)) return ceil_div(in, s);
    if (!pads_of(p, j, &pb, &pads) || __builtin_add_overflow(in, pads, &span) ||
        __builtin_sub_overflow(span, ek, &span) || span < 0 ||
        __builtin_add_overflow(in, pb, &start_limit))
        return PL_DIM_UNKNOWN;
    if (!p->ceil_mode) return span / s + 1;
    int64_t out = ceil_div(span, s) + 1, last = ir_dim_expr(out - 1, s, 0);
    if (last < 0 || last >= start_limit) out--;
    return out;
}

/* Output size of a transposed convolution along spatial dim j:
 * s·(in-1) + output_padding + (k-1)·d + 1 - pads. */
static int64_t convt_out(int64_t in, const convp *p, int j)
{
    int64_t ek = kernel_extent(p, j), pb, pads, out;
    if (in < 1 || ek < 0 || p->s[j] <= 0) return PL_DIM_UNKNOWN;
    if (same_pad(p)) return ir_mul(in, p->s[j]);
    out = ir_dim_expr(p->s[j], in - 1, p->outpad[j]);
    if (out < 0 || !pads_of(p, j, &pb, &pads) || __builtin_add_overflow(out, ek, &out) ||
        __builtin_sub_overflow(out, pads, &out) || out < 0)
        return PL_DIM_UNKNOWN;
    return out;
}

/* Output channels: Conv's weight is [M, C/group, k...]; ConvTranspose's [C, M/group, k...]. */
static int64_t out_channels(const ictx *c, int w_in, bool transposed)
{
    ir_shape w;
    if (!ir_in_shape(c, w_in, &w) || w.rank < 2) return PL_DIM_UNKNOWN;
    if (!transposed) return w.d[0];
    return ir_mul(w.d[1], pl_op_attr_int(c->op, "group", 1));
}

static void conv_shape(ictx *c, int x_in, int w_in, int dtype, bool transposed)
{
    ir_shape x, y;
    convp p;
    if (!ir_in_shape(c, x_in, &x) || x.rank < 3) {
        ir_set_unknown(c, 0, dtype);
        return;
    }
    conv_params(c, x.rank - 2, w_in, &p);
    y.rank = x.rank;
    y.d[0] = x.d[0];
    y.d[1] = out_channels(c, w_in, transposed);
    int64_t os[IR_MAXRANK];
    int nos = transposed ? ir_attr_ints(c, "output_shape", os) : -1;
    for (int j = 0; j < p.n; j++) {
        if (nos >= p.n)
            y.d[j + 2] = os[nos - p.n + j]; /* spatial dims, or N, C too */
        else
            y.d[j + 2] = transposed ? convt_out(x.d[j + 2], &p, j) : conv_out(x.d[j + 2], &p, j);
    }
    ir_set(c, 0, dtype, &y);
}

static void sh_conv(ictx *c)
{
    conv_shape(c, 0, 1, ir_in_dtype(c, 0), false);
}
static void sh_convt(ictx *c)
{
    conv_shape(c, 0, 1, ir_in_dtype(c, 0), true);
}
static void sh_conv_int(ictx *c)
{
    conv_shape(c, 0, 1, PL_DT_INT32, false);
}

static void sh_qlinearconv(ictx *c)
{
    int dt = ir_in_dtype(c, 7) ? ir_in_dtype(c, 7) : ir_in_dtype(c, 0);
    conv_shape(c, 0, 3, dt, false);
}

/* 2 · (output elements) · (input channels per group) · (kernel elements); bias not counted.
 * Transposed: 2 · (input elements) · (output channels per group) · (kernel elements). */
static double conv_flops(const ictx *c, int x_in, int w_in, bool transposed)
{
    ir_shape w, x;
    double per_group = -1, kprod = 1;
    bool have_w = ir_in_shape(c, w_in, &w) && w.rank >= 3;
    if (!ir_in_shape(c, x_in, &x) || x.rank < 3) return 0;
    if (have_w) {
        per_group = (double)w.d[1];
        for (int j = 2; j < w.rank; j++)
            kprod *= (double)w.d[j];
    }
    if (!have_w || per_group < 0 || kprod < 0) return 0;
    double base = transposed ? ir_numel_in(c, x_in) : ir_numel_out(c, 0);
    return 2.0 * base * per_group * kprod;
}

static double fl_conv(const ictx *c)
{
    return conv_flops(c, 0, 1, false);
}
static double fl_convt(const ictx *c)
{
    return conv_flops(c, 0, 1, true);
}
static double fl_qlinearconv(const ictx *c)
{
    return conv_flops(c, 0, 3, false);
}

/* ---- pooling ---- */

static void sh_pool(ictx *c)
{
    ir_shape x, y;
    convp p;
    if (!ir_in_shape(c, 0, &x) || x.rank < 3) {
        ir_set_unknown(c, 0, ir_in_dtype(c, 0));
        ir_set_unknown(c, 1, PL_DT_INT64);
        return;
    }
    conv_params(c, x.rank - 2, -1, &p);
    y = x;
    for (int j = 0; j < p.n; j++)
        y.d[j + 2] = conv_out(x.d[j + 2], &p, j);
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
    ir_set(c, 1, PL_DT_INT64, &y); /* MaxPool's Indices */
}

/* Output elements × kernel elements (one compare or add per window element). */
static double fl_pool(const ictx *c)
{
    int64_t k[IR_MAXRANK];
    int n = ir_attr_ints(c, "kernel_shape", k);
    int64_t kp = n > 0 ? ir_prod(k, n) : -1;
    return kp > 0 ? ir_numel_out(c, 0) * (double)kp : 0;
}

static void sh_global_pool(ictx *c)
{
    ir_shape x;
    if (ir_in_shape(c, 0, &x))
        for (int j = 2; j < x.rank; j++)
            x.d[j] = 1;
    ir_set(c, 0, ir_in_dtype(c, 0), &x);
}

/* MaxUnpool: output_shape input when known, else the inverse of pooling arithmetic. */
static void sh_maxunpool(ictx *c)
{
    int64_t os[IR_MAXVALS];
    int n;
    ir_shape x, y;
    if (ir_in(c, 2) && ir_in_ints(c, 2, os, &n) && n <= IR_MAXRANK) {
        y.rank = n;
        memcpy(y.d, os, n * sizeof *os);
        ir_set(c, 0, ir_in_dtype(c, 0), &y);
        return;
    }
    if (ir_in(c, 2) || !ir_in_shape(c, 0, &x) || x.rank < 3) {
        ir_set_rank(c, 0, ir_in_dtype(c, 0), ir_in_rank(c, 0));
        return;
    }
    convp p;
    conv_params(c, x.rank - 2, -1, &p);
    y = x;
    for (int j = 0; j < p.n; j++) {
        int64_t pb, pads,
            d = x.d[j + 2] < 1 || p.k[j] < 0 ? -1 : ir_dim_expr(x.d[j + 2] - 1, p.s[j], p.k[j]);
        if (d >= 0 && (!pads_of(&p, j, &pb, &pads) || __builtin_sub_overflow(d, pads, &d)))
            d = PL_DIM_UNKNOWN;
        y.d[j + 2] = d;
    }
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
}

/* RoiAlign and MaxRoiPool: [rois, C, output size]. */
static void roi_shape(ictx *c, int64_t oh, int64_t ow)
{
    ir_shape x, r, y = {.rank = 4, .d = {-1, -1, oh, ow}};
    if (ir_in_shape(c, 1, &r) && r.rank == 2) y.d[0] = r.d[0];
    if (ir_in_shape(c, 0, &x) && x.rank == 4) y.d[1] = x.d[1];
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
}

static void sh_roialign(ictx *c)
{
    roi_shape(c, pl_op_attr_int(c->op, "output_height", 1),
              pl_op_attr_int(c->op, "output_width", 1));
}

static void sh_maxroipool(ictx *c)
{
    int64_t ps[IR_MAXRANK];
    if (ir_attr_ints(c, "pooled_shape", ps) == 2)
        roi_shape(c, ps[0], ps[1]);
    else
        roi_shape(c, -1, -1);
}

/* GridSample: [N, C] + the grid's spatial output dims. */
static void sh_gridsample(ictx *c)
{
    ir_shape x, gr, y;
    if (!ir_in_shape(c, 1, &gr) || gr.rank < 3) {
        ir_set_rank(c, 0, ir_in_dtype(c, 0), ir_in_rank(c, 0));
        return;
    }
    y.rank = gr.rank;
    y.d[0] = gr.d[0];
    y.d[1] = ir_in_shape(c, 0, &x) && x.rank >= 2 ? x.d[1] : -1;
    for (int j = 1; j < gr.rank - 1; j++)
        y.d[j + 1] = gr.d[j];
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
}

/* ---- MatMul and Gemm ---- */

/* ONNX MatMul (numpy matmul): 1-D operands get a 1 prepended (A) or appended (B) that the
 * result drops; batch dimensions broadcast. */
static void matmul_shape(ictx *c, int a_in, int b_in, int dtype, bool ta, bool tb)
{
    ir_shape a, b, y;
    if (!ir_in_shape(c, a_in, &a) || !ir_in_shape(c, b_in, &b) || !a.rank || !b.rank) {
        ir_set_unknown(c, 0, dtype);
        return;
    }
    bool a1 = a.rank == 1, b1 = b.rank == 1;
    if (a1) a.rank = 2, a.d[1] = a.d[0], a.d[0] = 1;
    if (b1) b.rank = 2, b.d[1] = 1;
    int64_t m = a.d[a.rank - (ta ? 1 : 2)], n = b.d[b.rank - (tb ? 2 : 1)];
    a.rank -= 2, b.rank -= 2;
    ir_broadcast(&a, &b);
    y = a;
    if (!a1) y.d[y.rank++] = m;
    if (!b1) y.d[y.rank++] = n;
    ir_set(c, 0, dtype, &y);
}

static void sh_matmul(ictx *c)
{
    matmul_shape(c, 0, 1, ir_in_dtype(c, 0), false, false);
}
static void sh_matmul_int(ictx *c)
{
    matmul_shape(c, 0, 1, PL_DT_INT32, false, false);
}

static void sh_qlinearmatmul(ictx *c)
{
    int dt = ir_in_dtype(c, 7) ? ir_in_dtype(c, 7) : ir_in_dtype(c, 0);
    matmul_shape(c, 0, 3, dt, false, false);
}

static void sh_fusedmatmul(ictx *c)
{
    bool ta = pl_op_attr_int(c->op, "transA", 0), tb = pl_op_attr_int(c->op, "transB", 0);
    matmul_shape(c, 0, 1, ir_in_dtype(c, 0), ta, tb);
}

/* 2 · (output elements) · K: the same as 2·batch·M·K·N. */
static double matmul_flops(const ictx *c, int a_in, bool ta)
{
    ir_shape a;
    if (!ir_in_shape(c, a_in, &a) || a.rank < 1) return 0;
    int64_t k = a.rank == 1 ? a.d[0] : a.d[a.rank - (ta ? 2 : 1)];
    return k > 0 ? 2.0 * ir_numel_out(c, 0) * (double)k : 0;
}

static double fl_matmul(const ictx *c)
{
    return matmul_flops(c, 0, false);
}
static double fl_qlinearmatmul(const ictx *c)
{
    return matmul_flops(c, 0, false);
}

static double fl_fusedmatmul(const ictx *c)
{
    return matmul_flops(c, 0, pl_op_attr_int(c->op, "transA", 0));
}

static void sh_gemm(ictx *c)
{
    ir_shape a, b, y = {.rank = 2, .d = {-1, -1}};
    bool ta = pl_op_attr_int(c->op, "transA", 0), tb = pl_op_attr_int(c->op, "transB", 0);
    if (ir_in_shape(c, 0, &a) && a.rank == 2) y.d[0] = a.d[ta ? 1 : 0];
    if (ir_in_shape(c, 1, &b) && b.rank == 2) y.d[1] = b.d[tb ? 0 : 1];
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
}

/* 2·M·K·N. Adding C is not counted, like Conv's bias (an M·N term beside 2·M·K·N; models/
 * zoo.json counts Gemm the same way), nor are the alpha and beta scalings. */
static double fl_gemm(const ictx *c)
{
    ir_shape a;
    if (!ir_in_shape(c, 0, &a) || a.rank != 2) return 0;
    int64_t k = a.d[pl_op_attr_int(c->op, "transA", 0) ? 0 : 1];
    return k > 0 ? 2.0 * ir_numel_out(c, 0) * (double)k : 0;
}

/* ---- recurrent layers ---- */

typedef struct rnnp {
    int64_t seq, batch, input, hidden;
    int dirs, gates;
    bool batch_first;
} rnnp;

static int rnn_gates(const char *type)
{
    return type[0] == 'L' ? 4 : type[0] == 'G' ? 3 : 1;
}

static void rnn_params(const ictx *c, rnnp *p)
{
    ir_shape x, w, r;
    p->gates = rnn_gates(c->op->type);
    p->dirs = strcmp(pl_op_attr_string(c->op, "direction", "forward"), "bidirectional") ? 1 : 2;
    p->batch_first = pl_op_attr_int(c->op, "layout", 0) == 1;
    p->seq = p->batch = p->input = -1;
    if (ir_in_shape(c, 0, &x) && x.rank == 3) {
        p->seq = x.d[p->batch_first ? 1 : 0];
        p->batch = x.d[p->batch_first ? 0 : 1];
        p->input = x.d[2];
    }
    if (p->input < 0 && ir_in_shape(c, 1, &w) && w.rank == 3) p->input = w.d[2];
    p->hidden = pl_op_attr_int(c->op, "hidden_size", -1);
    if (p->hidden < 0 && ir_in_shape(c, 2, &r) && r.rank == 3) p->hidden = r.d[2];
}

/* Y: [seq, dirs, batch, H] ([batch, seq, dirs, H] with layout 1); Y_h and Y_c: [dirs, batch,
 * H] ([batch, dirs, H]). */
static void sh_rnn(ictx *c)
{
    rnnp p;
    rnn_params(c, &p);
    int dt = ir_in_dtype(c, 0);
    ir_shape y = {.rank = 4, .d = {p.seq, p.dirs, p.batch, p.hidden}};
    ir_shape h = {.rank = 3, .d = {p.dirs, p.batch, p.hidden}};
    if (p.batch_first) {
        y.d[0] = p.batch, y.d[1] = p.seq, y.d[2] = p.dirs;
        h.d[0] = p.batch, h.d[1] = p.dirs;
    }
    ir_set(c, 0, dt, &y);
    ir_set(c, 1, dt, &h);
    ir_set(c, 2, dt, &h);
}

/* Per step and direction: the gate matmuls 2·G·H·(I+H)·B, plus per hidden unit and batch
 * row the bias adds and activations: LSTM 42, GRU 28, RNN 8 (docs/shapes.md). */
static double fl_rnn(const ictx *c)
{
    rnnp p;
    rnn_params(c, &p);
    if (p.seq < 0 || p.batch < 0 || p.input < 0 || p.hidden < 0) return 0;
    double ew = p.gates == 4 ? 42 : p.gates == 3 ? 28 : 8;
    double bh = (double)p.batch * (double)p.hidden;
    double step = 2.0 * p.gates * bh * ((double)p.input + (double)p.hidden) + ew * bh;
    return (double)p.seq * p.dirs * step;
}

/* Every distinct input and output once, and the recurrence weights R once more per step
 * after the first: onnxruntime's CPU kernels (deep_cpu_lstm, deep_cpu_gru, rnn) apply W to
 * all steps in one GEMM, then R in a GEMM of each step, so a model whose R is beyond its
 * core's cache streams it seq times (nmt_seq2seq's encoder LSTMs: 4 MiB, 32 steps, 5.8 ms
 * measured on the Xeon against 0.94 ms priced with R once). annotate() has already set
 * bytes_moved to the distinct tensors' bytes when a rule's bytes function runs. */
static double by_rnn(const ictx *c)
{
    rnnp p;
    rnn_params(c, &p);
    int r = c->n_in > 2 ? c->op->inputs[2] : -1;
    if (p.seq < 1 || r < 0 || c->g->tensors[r].bytes < 0) return -1;
    /* the re-reads apart, for a device that serves them from its cache (pl_op.bytes_reread) */
    c->op->reread_tensor_bytes = (double)c->g->tensors[r].bytes;
    c->op->bytes_reread = c->op->reread_tensor_bytes * (double)(p.seq - 1);
    return c->op->bytes_moved + c->op->bytes_reread;
}

/* ---- Einsum ---- */

typedef struct einsum {
    int n_ops;
    int rank[IR_MAXRANK]; /* letters per operand (ellipsis excluded) */
    char letters[IR_MAXRANK][IR_MAXRANK];
    bool ell[IR_MAXRANK];    /* operand has "..." */
    int ell_pos[IR_MAXRANK]; /* where the ellipsis stands among the letters */
    char out[IR_MAXRANK];
    int out_rank, out_ell_pos; /* out_ell_pos -1: no ellipsis in the output */
    bool explicit_out;
} einsum;

/* Parses one term ("ab...c"); false if malformed. */
static bool parse_term(const char **p, char *letters, int *n, bool *ell, int *ell_pos)
{
    *n = 0, *ell = false, *ell_pos = -1;
    for (; **p && **p != ',' && **p != '-'; (*p)++) {
        if (**p == ' ') continue;
        if (**p == '.') {
            if (strncmp(*p, "...", 3) != 0 || *ell) return false;
            *ell = true, *ell_pos = *n, *p += 2;
            continue;
        }
        if (!((**p >= 'a' && **p <= 'z') || (**p >= 'A' && **p <= 'Z')) || *n >= IR_MAXRANK)
            return false;
        letters[(*n)++] = **p;
    }
    return true;
}

/* The implicit output: the ellipsis first, then letters used once, in ASCII order. */
static void implicit_out(einsum *e)
{
    int count[128] = {0};
    bool any_ell = false;
    for (int k = 0; k < e->n_ops; k++) {
        any_ell |= e->ell[k];
        for (int j = 0; j < e->rank[k]; j++)
            count[(int)e->letters[k][j]]++;
    }
    e->out_rank = 0, e->out_ell_pos = any_ell ? 0 : -1;
    for (int ch = 0; ch < 128 && e->out_rank < IR_MAXRANK; ch++)
        if (count[ch] == 1) e->out[e->out_rank++] = (char)ch;
}

static bool parse_einsum(const char *eq, einsum *e)
{
    const char *p = eq;
    memset(e, 0, sizeof *e);
    for (;;) {
        int k = e->n_ops;
        if (k >= IR_MAXRANK) return false;
        if (!parse_term(&p, e->letters[k], &e->rank[k], &e->ell[k], &e->ell_pos[k])) return false;
        e->n_ops++;
        if (*p != ',') break;
        p++;
    }
    if (*p == '-') {
        if (p[1] != '>') return false;
        p += 2;
        bool ell;
        e->explicit_out = true;
        if (!parse_term(&p, e->out, &e->out_rank, &ell, &e->out_ell_pos) || *p) return false;
    } else {
        implicit_out(e);
    }
    return true;
}

/* Letter extents and the broadcast ellipsis shape from the operands' shapes. */
static bool einsum_extents(const ictx *c, const einsum *e, int64_t *ext, ir_shape *ell)
{
    for (int ch = 0; ch < 128; ch++)
        ext[ch] = -2; /* -2: letter unused */
    ell->rank = 0;
    if (e->n_ops != c->n_in) return false;
    for (int k = 0; k < e->n_ops; k++) {
        ir_shape s, es = {.rank = 0};
        if (!ir_in_shape(c, k, &s)) return false;
        int er = s.rank - e->rank[k];
        if (er < 0 || (er > 0 && !e->ell[k])) return false;
        for (int j = 0; j < e->rank[k]; j++) {
            int64_t d = s.d[j < e->ell_pos[k] || !e->ell[k] ? j : j + er];
            int64_t *x = &ext[(int)e->letters[k][j]];
            if (*x < 0 || (*x == 1 && d > 1)) *x = d; /* -2 unused, -1 unknown so far */
        }
        es.rank = er;
        for (int j = 0; j < er; j++)
            es.d[j] = s.d[e->ell_pos[k] + j];
        ir_broadcast(ell, &es);
    }
    return true;
}

static void sh_einsum(ictx *c)
{
    einsum e;
    int64_t ext[128];
    ir_shape ell, y = {.rank = 0};
    const char *eq = pl_op_attr_string(c->op, "equation", "");
    if (!parse_einsum(eq, &e) || !einsum_extents(c, &e, ext, &ell)) {
        ir_set_unknown(c, 0, ir_in_dtype(c, 0));
        return;
    }
    for (int j = 0; j <= e.out_rank; j++) {
        if (j == e.out_ell_pos)
            for (int q = 0; q < ell.rank && y.rank < IR_MAXRANK; q++)
                y.d[y.rank++] = ell.d[q];
        if (j < e.out_rank && y.rank < IR_MAXRANK)
            y.d[y.rank++] = ext[(int)e.out[j]] < 0 ? -1 : ext[(int)e.out[j]];
    }
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
}

/* 2 · the product of every index extent (a multiply and an add per point of the iteration
 * space); with one operand, one operation per point. */
static double fl_einsum(const ictx *c)
{
    einsum e;
    int64_t ext[128];
    ir_shape ell;
    const char *eq = pl_op_attr_string(c->op, "equation", "");
    if (!parse_einsum(eq, &e) || !einsum_extents(c, &e, ext, &ell)) return 0;
    double p = 1;
    for (int ch = 0; ch < 128; ch++) {
        if (ext[ch] == -1) return 0;
        if (ext[ch] >= 0) p *= (double)ext[ch];
    }
    for (int j = 0; j < ell.rank; j++) {
        if (ell.d[j] < 0) return 0;
        p *= (double)ell.d[j];
    }
    return e.n_ops > 1 ? 2 * p : p;
}

#define DENSE PL_CLASS_DENSE
#define RED PL_CLASS_REDUCTION
#define MS "com.microsoft"

const ir_rule ir_rules_nn[] = {
    {"Conv", DENSE, sh_conv, fl_conv, 0, NULL, NULL},
    {"ConvInteger", DENSE, sh_conv_int, fl_conv, 0, NULL, NULL},
    {"QLinearConv", DENSE, sh_qlinearconv, fl_qlinearconv, 0, NULL, NULL},
    {"ConvTranspose", DENSE, sh_convt, fl_convt, 0, NULL, NULL},
    {"MatMul", DENSE, sh_matmul, fl_matmul, 0, NULL, NULL},
    {"MatMulInteger", DENSE, sh_matmul_int, fl_matmul, 0, NULL, NULL},
    {"QLinearMatMul", DENSE, sh_qlinearmatmul, fl_qlinearmatmul, 0, NULL, NULL},
    {"Gemm", DENSE, sh_gemm, fl_gemm, 0, NULL, NULL},
    {"LSTM", DENSE, sh_rnn, fl_rnn, 0, NULL, by_rnn},
    {"GRU", DENSE, sh_rnn, fl_rnn, 0, NULL, by_rnn},
    {"RNN", DENSE, sh_rnn, fl_rnn, 0, NULL, by_rnn},
    {"Einsum", DENSE, sh_einsum, fl_einsum, 0, NULL, NULL},
    {"FusedMatMul", DENSE, sh_fusedmatmul, fl_fusedmatmul, 0, MS, NULL},
    {"MaxPool", RED, sh_pool, fl_pool, 0, NULL, NULL},
    {"AveragePool", RED, sh_pool, fl_pool, 0, NULL, NULL},
    {"LpPool", RED, sh_pool, fl_pool, 0, NULL, NULL},
    {"GlobalAveragePool", RED, sh_global_pool, ir_flops_in_k, 1, NULL, NULL},
    {"GlobalMaxPool", RED, sh_global_pool, ir_flops_in_k, 1, NULL, NULL},
    {"GlobalLpPool", RED, sh_global_pool, ir_flops_in_k, 2, NULL, NULL},
    {"MaxUnpool", PL_CLASS_DATA_MOVEMENT, sh_maxunpool, NULL, 0, NULL, NULL},
    {"MaxRoiPool", RED, sh_maxroipool, ir_flops_in_k, 1, NULL, NULL},
    {"RoiAlign", RED, sh_roialign, ir_flops_out_k, 16, NULL, NULL},
    {"GridSample", PL_CLASS_ELEMENTWISE, sh_gridsample, ir_flops_out_k, 8, NULL, NULL},
};
const int ir_n_rules_nn = sizeof ir_rules_nn / sizeof *ir_rules_nn;
