/* rules.c: the rule table (docs/rewrite.md, "Rules"): for each rule its target pattern, the
 * conditions under which the replacement computes the same function, and the builder of the
 * replacement. Matchers read placer's graph (shapes, who reads what); builders edit the
 * ModelProto. A matcher that says yes must leave its builder nothing to refuse, except
 * what only the model holds (e.g. an initializer's payload kind). */
#include "rw_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- conditions on placer's graph ---- */

static bool is_op(const pl_graph *g, int op, const char *type)
{
    return op >= 0 && !strcmp(g->ops[op].type, type) && !g->ops[op].domain[0];
}

/* An initializer (not a Constant op's value, not a graph input a caller could feed). */
static bool is_init(const pl_graph *g, int t)
{
    return t >= 0 && (g->tensors[t].flags & PL_TENSOR_WEIGHT) && g->tensors[t].producer < 0 &&
           !(g->tensors[t].flags & PL_TENSOR_INPUT);
}

/* Read by exactly one op and not a graph output: the op producing it may go. */
static int sole_consumer(const pl_graph *g, int t)
{
    const pl_tensor *x = &g->tensors[t];
    if (x->n_consumers != 1 || (x->flags & PL_TENSOR_OUTPUT)) return -1;
    return x->consumers[0];
}

static int in(const pl_graph *g, int op, int k)
{
    return k < g->ops[op].n_inputs ? g->ops[op].inputs[k] : -1;
}

static bool float_init(const pl_graph *g, int t, int rank)
{
    return is_init(g, t) && g->tensors[t].dtype == PL_DT_FLOAT &&
           (rank < 0 || g->tensors[t].rank == rank);
}

static bool same_ints(const pl_op *a, const pl_op *b, const char *name)
{
    const int64_t *va, *vb;
    int na = pl_op_attr_ints(a, name, &va), nb = pl_op_attr_ints(b, name, &vb);
    return na == nb && (!na || !memcmp(va, vb, (size_t)na * sizeof *va));
}

/* ---- shared builder steps ---- */

static Onnx__NodeProto *node_of(rw_edit *e, int op, int *pos)
{
    *pos = rw_node_index(e->gp, e->g->ops[op].name);
    return *pos >= 0 ? e->gp->node[*pos] : NULL;
}

/* Removes the nodes of ops[0..n) from the model and returns where their replacement goes: where
 * the first of them was (`at_last` false: a merge of parallel ops, whose inputs all exist
 * before the first and whose outputs some node between them may read), or where the last was
 * (a chain X -> op1 -> op2 fused into one, whose inputs may be made between op1 and op2). */
static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static size_t remove_ops(rw_edit *e, const int *ops, int n, bool at_last)
{
    int pos[PL_RW_MAX_SITE], k = 0;
    for (int i = 0; i < n; i++) {
        int p = rw_node_index(e->gp, e->g->ops[ops[i]].name);
        if (p >= 0) pos[k++] = p;
    }
    PL_ASSERT(k > 0); /* resolve() found every node of the site in this model */
    qsort(pos, (size_t)k, sizeof *pos, cmp_int);
    for (int i = k; i-- > 0;)
        rw_remove_node(e, (size_t)pos[i]);
    /* the last node stood after the k - 1 others */
    return (size_t)(at_last ? pos[k - 1] - (k - 1) : pos[0]);
}

/* A copy of node n (attributes and all), renamed. */
static Onnx__NodeProto *clone_node(const Onnx__NodeProto *n, const char *name)
{
    size_t len = pl_onnx__node_proto__get_packed_size(n);
    uint8_t *buf = pl_malloc(len ? len : 1);
    pl_onnx__node_proto__pack(n, buf);
    Onnx__NodeProto *c = pl_onnx__node_proto__unpack(NULL, len, buf);
    free(buf);
    PL_ASSERT(c);
    if (!c) abort();
    rw_set_str(&c->name, name);
    return c;
}

/* ---- conv_bn_fold ---- */

static int match_conv_bn(const pl_graph *g, int op, int *ops)
{
    const pl_op *c = &g->ops[op];
    if (c->n_outputs != 1 || !float_init(g, in(g, op, 1), -1)) return 0;
    if (g->tensors[in(g, op, 1)].rank < 3) return 0;
    if (c->n_inputs > 2 && in(g, op, 2) >= 0 && !float_init(g, in(g, op, 2), 1)) return 0;
    int bn = sole_consumer(g, c->outputs[0]);
    if (!is_op(g, bn, "BatchNormalization") || g->ops[bn].n_outputs != 1) return 0;
    if (g->ops[bn].n_inputs != 5 || in(g, bn, 0) != c->outputs[0]) return 0;
    if (pl_op_attr_int(&g->ops[bn], "training_mode", 0)) return 0;
    int64_t o = g->tensors[in(g, op, 1)].dims[0];
    for (int k = 1; k < 5; k++) {
        int t = in(g, bn, k);
        if (!float_init(g, t, 1) || g->tensors[t].dims[0] != o) return 0;
    }
    ops[0] = op, ops[1] = bn;
    return 2;
}

/* W'[o] = W[o] s[o] / sqrt(v[o] + eps); B'[o] = (B[o] - m[o]) s[o] / sqrt(v[o] + eps) + beta[o]
 * (batch normalisation at inference is an affine map per output channel). */
static int build_conv_bn(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    int cpos, bpos;
    Onnx__NodeProto *conv = node_of(e, ops[0], &cpos), *bn = node_of(e, ops[1], &bpos);
    const Onnx__TensorProto *w = rw_init(e->gp, conv->input[1]);
    const Onnx__TensorProto *b =
        conv->n_input > 2 && conv->input[2][0] ? rw_init(e->gp, conv->input[2]) : NULL;
    double eps = pl_op_attr_float(&e->g->ops[ops[1]], "epsilon", 1e-5);
    int64_t nw, no, k;
    float *wv = rw_floats(w, &nw), *bv = b ? rw_floats(b, &k) : NULL, *p[4];
    no = w->dims[0];
    bool weightless = !wv || (b && !bv);
    for (int i = 0; i < 4; i++) {
        p[i] = rw_floats(rw_init(e->gp, bn->input[1 + i]), &k);
        weightless |= !p[i];
    }
    char *wn = rw_fresh(e, w->name), *bname = rw_fresh(e, "conv_bn_bias");
    if (weightless) {
        rw_add_init(e, wn, w->data_type, w->dims, (int)w->n_dims, NULL, 0);
        rw_add_init(e, bname, w->data_type, &no, 1, NULL, 0);
    } else {
        float *nb = pl_malloc((size_t)no * sizeof *nb);
        int64_t per = nw / no;
        for (int64_t o = 0; o < no; o++) {
            double f = p[0][o] / sqrt((double)p[3][o] + eps);
            for (int64_t j = 0; j < per; j++)
                wv[o * per + j] = (float)(wv[o * per + j] * f);
            nb[o] = (float)(((bv ? bv[o] : 0.0) - p[2][o]) * f + p[1][o]);
        }
        rw_add_init(e, wn, w->data_type, w->dims, (int)w->n_dims, wv, (size_t)nw * 4);
        rw_add_init(e, bname, w->data_type, &no, 1, nb, (size_t)no * 4);
        free(nb);
    }
    const char *ins[3] = {conv->input[0], wn, bname};
    Onnx__NodeProto *c = clone_node(conv, conv->name);
    for (size_t i = 0; i < c->n_input; i++)
        free(c->input[i]);
    free(c->input);
    c->input = pl_malloc(3 * sizeof *c->input);
    for (int i = 0; i < 3; i++)
        c->input[i] = pl_strdup(ins[i]);
    c->n_input = 3;
    rw_set_str(&c->output[0], bn->output[0]);
    size_t at = remove_ops(e, ops, 2, true);
    rw_insert_node(e, at, c);
    free(wn), free(bname), free(wv), free(bv);
    for (int i = 0; i < 4; i++)
        free(p[i]);
    return 0;
}

/* ---- matmul_add_gemm ---- */

static bool gemm_bias(const pl_tensor *c, int64_t m, int64_t nn)
{
    if (c->rank == 1) return c->dims[0] == nn || c->dims[0] == 1;
    if (c->rank != 2) return false;
    return (c->dims[0] == m || c->dims[0] == 1) && (c->dims[1] == nn || c->dims[1] == 1);
}

static int match_matmul_add(const pl_graph *g, int op, int *ops)
{
    int a = in(g, op, 0), b = in(g, op, 1);
    if (a < 0 || b < 0 || g->tensors[a].rank != 2 || g->tensors[b].rank != 2) return 0;
    if (g->tensors[a].dtype != PL_DT_FLOAT || g->tensors[b].dtype != PL_DT_FLOAT) return 0;
    int add = sole_consumer(g, g->ops[op].outputs[0]);
    if (!is_op(g, add, "Add") || g->ops[add].n_inputs != 2) return 0;
    int y = g->ops[op].outputs[0];
    int c = in(g, add, 0) == y ? in(g, add, 1) : in(g, add, 0);
    if (c == y || c < 0) return 0; /* x + x is no bias */
    const pl_tensor *yt = &g->tensors[y];
    if (yt->dims[0] < 0 || yt->dims[1] < 0 || !gemm_bias(&g->tensors[c], yt->dims[0], yt->dims[1]))
        return 0;
    ops[0] = op, ops[1] = add;
    return 2;
}

static int build_matmul_add(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    int mpos, apos;
    Onnx__NodeProto *mm = node_of(e, ops[0], &mpos), *add = node_of(e, ops[1], &apos);
    const char *c = strcmp(add->input[0], mm->output[0]) ? add->input[0] : add->input[1];
    char *name = rw_fresh(e, mm->name);
    const char *ins[3] = {mm->input[0], mm->input[1], c};
    Onnx__NodeProto *gm = rw_node("Gemm", name, ins, 3, (const char *const *)add->output, 1);
    size_t at = remove_ops(e, ops, 2, true);
    rw_insert_node(e, at, gm);
    free(name);
    return 0;
}

/* ---- merge_matmul and merge_conv: parallel ops on one input, one op and a Split ---- */

/* Collects the ops reading x as input 0 that `ok` accepts as mergeable with `op`; the site is
 * found once, at the group's first op. */
static int parallel_group(const pl_graph *g, int op, int *ops,
                          bool (*ok)(const pl_graph *, int, int))
{
    int x = in(g, op, 0);
    if (x < 0 || !ok(g, op, op)) return 0;
    int n = 0;
    const pl_tensor *t = &g->tensors[x];
    for (int i = 0; i < t->n_consumers && n < PL_RW_MAX_SITE; i++) {
        int c = t->consumers[i];
        if (in(g, c, 0) == x && ok(g, op, c)) ops[n++] = c;
    }
    qsort(ops, (size_t)n, sizeof *ops, cmp_int);
    return n >= 2 && ops[0] == op ? n : 0;
}

static bool mm_ok(const pl_graph *g, int ref, int op)
{
    if (!is_op(g, op, "MatMul") || g->ops[op].n_inputs != 2) return false;
    int b = in(g, op, 1), rb = in(g, ref, 1);
    if (!float_init(g, b, 2) || g->tensors[in(g, op, 0)].rank < 1) return false;
    if (in(g, op, 0) == b) return false;
    return g->tensors[b].dims[0] == g->tensors[rb].dims[0];
}

static int match_merge_matmul(const pl_graph *g, int op, int *ops)
{
    return parallel_group(g, op, ops, mm_ok);
}

static bool conv_ok(const pl_graph *g, int ref, int op)
{
    if (!is_op(g, op, "Conv") || g->ops[op].n_outputs != 1) return false;
    const pl_op *a = &g->ops[ref], *b = &g->ops[op];
    int w = in(g, op, 1), rw = in(g, ref, 1);
    if (!float_init(g, w, -1) || g->tensors[w].rank != g->tensors[rw].rank) return false;
    for (int k = 1; k < g->tensors[w].rank; k++)
        if (g->tensors[w].dims[k] != g->tensors[rw].dims[k]) return false;
    int bias = in(g, op, 2), rbias = in(g, ref, 2);
    if ((bias >= 0) != (rbias >= 0) || (bias >= 0 && !float_init(g, bias, 1))) return false;
    if (pl_op_attr_int(a, "group", 1) != 1 || pl_op_attr_int(b, "group", 1) != 1) return false;
    if (strcmp(pl_op_attr_string(a, "auto_pad", "NOTSET"),
               pl_op_attr_string(b, "auto_pad", "NOTSET")))
        return false;
    return same_ints(a, b, "strides") && same_ints(a, b, "pads") && same_ints(a, b, "dilations") &&
           same_ints(a, b, "kernel_shape");
}

static int match_merge_conv(const pl_graph *g, int op, int *ops)
{
    return parallel_group(g, op, ops, conv_ok);
}

/* Concatenates the float initializers named by input k of nodes[0..n) along `axis` (0 or 1 of
 * a rank-r tensor: `outer` blocks of each part's inner run); NULL when one is weightless. */
static float *concat_weights(rw_edit *e, Onnx__NodeProto **nodes, int n, int k, int axis,
                             int64_t *dims, int *rank, int64_t *sizes)
{
    const Onnx__TensorProto *t0 = rw_init(e->gp, nodes[0]->input[k]);
    *rank = (int)t0->n_dims;
    memcpy(dims, t0->dims, t0->n_dims * sizeof *dims);
    dims[axis] = 0;
    float **v = pl_calloc((size_t)n, sizeof *v);
    bool weightless = false;
    for (int i = 0; i < n; i++) {
        const Onnx__TensorProto *t = rw_init(e->gp, nodes[i]->input[k]);
        int64_t numel;
        sizes[i] = t->dims[axis];
        dims[axis] += sizes[i];
        v[i] = rw_floats(t, &numel);
        weightless |= !v[i];
    }
    float *out = NULL;
    if (!weightless) {
        int64_t outer = axis == 0 ? 1 : dims[0], inner = 1, total = 1, off = 0;
        for (int d = 0; d < *rank; d++)
            total *= dims[d];
        for (int d = axis + 1; d < *rank; d++)
            inner *= dims[d];
        out = pl_malloc((size_t)(total ? total : 1) * sizeof *out);
        for (int i = 0; i < n; i++, off += sizes[i - 1] * inner)
            for (int64_t r = 0; r < outer; r++)
                memcpy(out + r * dims[axis] * inner + off, v[i] + r * sizes[i] * inner,
                       (size_t)(sizes[i] * inner) * sizeof *out);
    }
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return out;
}

static int64_t numel_of(const int64_t *dims, int rank)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    return n;
}

/* The merged initializer for input k, named after the first node's. */
static char *merged_init(rw_edit *e, Onnx__NodeProto **nodes, int n, int k, int axis,
                         int64_t *sizes)
{
    int64_t dims[8];
    int rank;
    float *v = concat_weights(e, nodes, n, k, axis, dims, &rank, sizes);
    char *name = rw_fresh(e, nodes[0]->input[k]);
    int64_t cnt = numel_of(dims, rank);
    rw_add_init(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, dims, rank, v,
                v ? (size_t)cnt * 4 : 0);
    free(v);
    return name;
}

/* The Split writing the original outputs: sizes as an attribute before opset 13, an input
 * from 13 on. */
static Onnx__NodeProto *split_node(rw_edit *e, Onnx__NodeProto **nodes, int n, const char *x,
                                   int64_t axis, const int64_t *sizes)
{
    const char **outs = pl_malloc((size_t)n * sizeof *outs);
    for (int i = 0; i < n; i++)
        outs[i] = nodes[i]->output[0];
    char *name = rw_fresh(e, "split");
    Onnx__NodeProto *s;
    if (e->opset >= 13) {
        char *sn = rw_fresh(e, "split_sizes");
        int64_t len = n;
        rw_add_init(e, sn, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, &len, 1, sizes, (size_t)n * 8);
        s = rw_node("Split", name, (const char *[]){x, sn}, 2, outs, n);
        free(sn);
    } else {
        s = rw_node("Split", name, &x, 1, outs, n);
        rw_attr_ints(s, "split", sizes, n);
    }
    rw_attr_int(s, "axis", axis);
    free(name);
    free(outs);
    return s;
}

/* One op with the weights of nodes[0..n) concatenated along `waxis`, then a Split along
 * `yaxis`; the new op is a copy of the first (its attributes). */
static int build_merge(rw_edit *e, const int *ops, int n, int waxis, int64_t yaxis)
{
    Onnx__NodeProto **nodes = pl_malloc((size_t)n * sizeof *nodes);
    for (int i = 0; i < n; i++) {
        int pos;
        nodes[i] = node_of(e, ops[i], &pos);
    }
    int64_t sizes[PL_RW_MAX_SITE], bsizes[PL_RW_MAX_SITE];
    char *w = merged_init(e, nodes, n, 1, waxis, sizes);
    char *b = nodes[0]->n_input > 2 && nodes[0]->input[2][0]
                  ? merged_init(e, nodes, n, 2, 0, bsizes)
                  : NULL;
    Onnx__NodeProto *op = clone_node(nodes[0], "");
    char *name = rw_fresh(e, nodes[0]->name), *y = rw_fresh(e, nodes[0]->output[0]);
    rw_set_str(&op->name, name);
    rw_set_str(&op->input[1], w);
    if (b) rw_set_str(&op->input[2], b);
    rw_set_str(&op->output[0], y);
    Onnx__NodeProto *s = split_node(e, nodes, n, y, yaxis, sizes);
    size_t at = remove_ops(e, ops, n, false);
    rw_insert_node(e, at, s);
    rw_insert_node(e, at, op);
    free(w), free(b), free(name), free(y), free(nodes);
    return 0;
}

static int build_merge_matmul(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)err;
    return build_merge(e, ops, n, 1, -1);
}

static int build_merge_conv(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)err;
    return build_merge(e, ops, n, 0, 1);
}

/* ---- split_add_merge ---- */

/* A Split along the last axis whose every output is read only by an Add of a 1-D float
 * initializer as long as that output's last dim; the Adds' ops follow the Split in ops. */
static int match_split_add(const pl_graph *g, int op, int *ops)
{
    const pl_op *s = &g->ops[op];
    int x = in(g, op, 0);
    if (x < 0 || g->tensors[x].rank < 1 || s->n_outputs < 2 || s->n_outputs >= PL_RW_MAX_SITE)
        return 0;
    int64_t axis = pl_op_attr_int(s, "axis", 0), r = g->tensors[x].rank;
    if (axis != -1 && axis != r - 1) return 0;
    ops[0] = op;
    for (int k = 0; k < s->n_outputs; k++) {
        int y = s->outputs[k], add = sole_consumer(g, y);
        if (!is_op(g, add, "Add") || g->ops[add].n_inputs != 2) return 0;
        int b = in(g, add, 0) == y ? in(g, add, 1) : in(g, add, 0);
        const pl_tensor *yt = &g->tensors[y];
        if (!float_init(g, b, 1) || yt->rank != r || yt->dtype != PL_DT_FLOAT) return 0;
        if (yt->dims[r - 1] < 0 || g->tensors[b].dims[0] != yt->dims[r - 1]) return 0;
        ops[1 + k] = add;
    }
    return 1 + s->n_outputs;
}

/* split(x) + (b1, ..., bk) = split(x + [b1 ... bk]): one Add of the concatenated biases before
 * the Split (TASO: element-wise ops commute with concat/split). */
static int build_split_add(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)err;
    int pos;
    Onnx__NodeProto *sp = node_of(e, ops[0], &pos);
    Onnx__NodeProto **adds = pl_malloc((size_t)(n - 1) * sizeof *adds);
    /* concat_weights reads input 1: put each Add's bias there (order does not matter to Add) */
    for (int i = 1; i < n; i++) {
        adds[i - 1] = node_of(e, ops[i], &pos);
        if (!strcmp(adds[i - 1]->input[1], sp->output[i - 1])) {
            char *t = adds[i - 1]->input[0];
            adds[i - 1]->input[0] = adds[i - 1]->input[1];
            adds[i - 1]->input[1] = t;
        }
    }
    int64_t sizes[PL_RW_MAX_SITE];
    char *b = merged_init(e, adds, n - 1, 1, 0, sizes);
    char *name = rw_fresh(e, adds[0]->name), *z = rw_fresh(e, sp->input[0]);
    Onnx__NodeProto *add =
        rw_node("Add", name, (const char *[]){sp->input[0], b}, 2, (const char *const *)&z, 1);
    Onnx__NodeProto *s2 = clone_node(sp, sp->name);
    rw_set_str(&s2->input[0], z);
    for (int i = 1; i < n; i++)
        rw_set_str(&s2->output[i - 1], adds[i - 1]->output[0]);
    size_t at = remove_ops(e, ops, n, false);
    rw_insert_node(e, at, s2);
    rw_insert_node(e, at, add);
    free(b), free(name), free(z), free(adds);
    return 0;
}

/* ---- matmul_distrib ---- */

/* Add(MatMul(A, B1), MatMul(A, B2)), each product read by the Add alone. */
static int match_matmul_distrib(const pl_graph *g, int op, int *ops)
{
    if (g->ops[op].n_inputs != 2) return 0;
    int m1 = g->tensors[in(g, op, 0)].producer, m2 = g->tensors[in(g, op, 1)].producer;
    if (m1 == m2 || !is_op(g, m1, "MatMul") || !is_op(g, m2, "MatMul")) return 0;
    if (sole_consumer(g, in(g, op, 0)) != op || sole_consumer(g, in(g, op, 1)) != op) return 0;
    if (in(g, m1, 0) != in(g, m2, 0)) return 0;
    int b1 = in(g, m1, 1), b2 = in(g, m2, 1);
    if (!float_init(g, b1, 2) || !float_init(g, b2, 2)) return 0;
    if (g->tensors[b1].dims[0] != g->tensors[b2].dims[0] ||
        g->tensors[b1].dims[1] != g->tensors[b2].dims[1])
        return 0;
    ops[0] = op, ops[1] = m1, ops[2] = m2;
    return 3;
}

/* Sums two float initializers of equal dims (or their weightless stand-in). */
static char *sum_init(rw_edit *e, const char *a, const char *b, bool mul)
{
    const Onnx__TensorProto *ta = rw_init(e->gp, a), *tb = rw_init(e->gp, b);
    int64_t na, nb;
    float *va = rw_floats(ta, &na), *vb = rw_floats(tb, &nb);
    const Onnx__TensorProto *big = na >= nb ? ta : tb;
    int64_t n = na >= nb ? na : nb;
    char *name = rw_fresh(e, a);
    if (va && vb) {
        float *v = pl_malloc((size_t)(n ? n : 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++) { /* equal dims, or one side a single value */
            float x = va[na == n ? i : 0], y = vb[nb == n ? i : 0];
            v[i] = mul ? x * y : x + y;
        }
        rw_add_init(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, big->dims, (int)big->n_dims, v,
                    (size_t)n * 4);
        free(v);
    } else {
        rw_add_init(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, big->dims, (int)big->n_dims,
                    NULL, 0);
    }
    free(va), free(vb);
    return name;
}

/* A B1 + A B2 = A (B1 + B2): TASO's equation (9) read right to left, one MatMul fewer. */
static int build_matmul_distrib(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    int pos;
    Onnx__NodeProto *add = node_of(e, ops[0], &pos), *m1 = node_of(e, ops[1], &pos),
                    *m2 = node_of(e, ops[2], &pos);
    char *b = sum_init(e, m1->input[1], m2->input[1], false);
    char *name = rw_fresh(e, m1->name);
    Onnx__NodeProto *mm = rw_node("MatMul", name, (const char *[]){m1->input[0], b}, 2,
                                  (const char *const *)add->output, 1);
    size_t at = remove_ops(e, ops, 3, true);
    rw_insert_node(e, at, mm);
    free(b), free(name);
    return 0;
}

/* ---- matmul_assoc ---- */

/* MatMul(MatMul(A, B), C): B [k,m] and C [m,n] 2-D float initializers, the inner product read
 * by the outer MatMul alone (anchored at the inner one). */
static int match_matmul_assoc(const pl_graph *g, int op, int *ops)
{
    int outer = sole_consumer(g, g->ops[op].outputs[0]);
    if (!is_op(g, outer, "MatMul") || in(g, outer, 0) != g->ops[op].outputs[0]) return 0;
    int b = in(g, op, 1), c = in(g, outer, 1);
    if (!float_init(g, b, 2) || !float_init(g, c, 2) || float_init(g, in(g, op, 0), -1)) return 0;
    if (g->tensors[b].dims[1] != g->tensors[c].dims[0]) return 0;
    ops[0] = op, ops[1] = outer;
    return 2;
}

/* The product B C of two 2-D float initializers (or its weightless stand-in), in double. */
static char *product_init(rw_edit *e, const char *bn, const char *cn)
{
    const Onnx__TensorProto *tb = rw_init(e->gp, bn), *tc = rw_init(e->gp, cn);
    int64_t nb, nc, k = tb->dims[0], m = tb->dims[1], n = tc->dims[1];
    float *vb = rw_floats(tb, &nb), *vc = rw_floats(tc, &nc);
    int64_t dims[2] = {k, n};
    char *name = rw_fresh(e, bn);
    float *v = vb && vc ? pl_malloc((size_t)(k * n > 0 ? k * n : 1) * sizeof *v) : NULL;
    for (int64_t i = 0; v && i < k; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0;
            for (int64_t q = 0; q < m; q++)
                sum += (double)vb[i * m + q] * vc[q * n + j];
            v[i * n + j] = (float)sum;
        }
    rw_add_init(e, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, dims, 2, v,
                v ? (size_t)(k * n) * 4 : 0);
    free(v), free(vb), free(vc);
    return name;
}

/* (A B) C = A (B C), with B C folded: TASO's associativity of matmul; one MatMul on the
 * activations fewer, and a narrower one when B C is smaller than B. */
static int build_matmul_assoc(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    int pos;
    Onnx__NodeProto *inner = node_of(e, ops[0], &pos), *outer = node_of(e, ops[1], &pos);
    char *bc = product_init(e, inner->input[1], outer->input[1]);
    char *name = rw_fresh(e, inner->name);
    Onnx__NodeProto *mm = rw_node("MatMul", name, (const char *[]){inner->input[0], bc}, 2,
                                  (const char *const *)outer->output, 1);
    size_t at = remove_ops(e, ops, 2, true);
    rw_insert_node(e, at, mm);
    free(bc), free(name);
    return 0;
}

/* ---- add_const_assoc, mul_const_assoc ---- */

/* The constant operand of a binary op of type `type` at op (the other input into *x), or -1. */
static int const_operand(const pl_graph *g, int op, int *x)
{
    if (g->ops[op].n_inputs != 2) return -1;
    for (int k = 0; k < 2; k++)
        if (float_init(g, in(g, op, k), -1) && !float_init(g, in(g, op, 1 - k), -1)) {
            *x = in(g, op, 1 - k);
            return in(g, op, k);
        }
    return -1;
}

static bool same_shape(const pl_tensor *a, const pl_tensor *b)
{
    if (a->rank < 0 || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] < 0 || a->dims[d] != b->dims[d]) return false;
    return true;
}

/* (x op c1) op c2 with c1, c2 constants of equal dims or one a single value, and the result as
 * large as the inner one (the constants broadcast nothing further). */
static int match_const_assoc(const pl_graph *g, int op, int *ops)
{
    int x, y, c1 = const_operand(g, op, &x);
    int outer = sole_consumer(g, g->ops[op].outputs[0]);
    if (c1 < 0 || outer < 0 || strcmp(g->ops[outer].type, g->ops[op].type) ||
        g->ops[outer].domain[0])
        return 0;
    int c2 = const_operand(g, outer, &y);
    if (c2 < 0 || y != g->ops[op].outputs[0]) return 0;
    const pl_tensor *t1 = &g->tensors[c1], *t2 = &g->tensors[c2];
    if (!same_shape(t1, t2) && pl_tensor_numel(t1) != 1 && pl_tensor_numel(t2) != 1) return 0;
    const pl_tensor *big = pl_tensor_numel(t1) >= pl_tensor_numel(t2) ? t1 : t2;
    if (big->rank > g->tensors[y].rank) return 0;
    if (!same_shape(&g->tensors[y], &g->tensors[g->ops[outer].outputs[0]])) return 0;
    ops[0] = op, ops[1] = outer;
    return 2;
}

/* (x + c1) + c2 = x + (c1 + c2), and the same for Mul (TASO's associativity of ewadd and
 * ewmul, with the constant part folded). */
static int build_const_assoc(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    int x, y, pos;
    int c1 = const_operand(e->g, ops[0], &x), c2 = const_operand(e->g, ops[1], &y);
    Onnx__NodeProto *inner = node_of(e, ops[0], &pos), *outer = node_of(e, ops[1], &pos);
    bool mul = !strcmp(inner->op_type, "Mul");
    char *c = sum_init(e, e->g->tensors[c1].name, e->g->tensors[c2].name, mul);
    char *name = rw_fresh(e, inner->name);
    Onnx__NodeProto *nn = rw_node(inner->op_type, name, (const char *[]){e->g->tensors[x].name, c},
                                  2, (const char *const *)outer->output, 1);
    size_t at = remove_ops(e, ops, 2, true);
    rw_insert_node(e, at, nn);
    free(c), free(name);
    return 0;
}

/* ---- transpose_merge ---- */

/* The permutation of Transpose op (absent: reversed axes); its length, or -1. */
static int perm_of(const pl_graph *g, int op, int64_t *p)
{
    const int64_t *v;
    int n = pl_op_attr_ints(&g->ops[op], "perm", &v), rank = g->tensors[in(g, op, 0)].rank;
    if (rank < 0 || rank > 16 || (n && n != rank)) return -1;
    for (int i = 0; i < rank; i++)
        p[i] = n ? v[i] : rank - 1 - i;
    return rank;
}

static int match_transpose(const pl_graph *g, int op, int *ops)
{
    int t2 = sole_consumer(g, g->ops[op].outputs[0]);
    if (!is_op(g, t2, "Transpose")) return 0;
    int64_t p[16];
    if (perm_of(g, op, p) < 0 || perm_of(g, t2, p) < 0) return 0;
    ops[0] = op, ops[1] = t2;
    return 2;
}

/* out[j] = mid[p2[j]] = x[p1[p2[j]]]: one Transpose with q[j] = p1[p2[j]], or none at all
 * when q is the identity (the readers of the result then read x). */
static int build_transpose(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    int64_t p1[16], p2[16], q[16];
    int r = perm_of(e->g, ops[0], p1);
    perm_of(e->g, ops[1], p2);
    bool identity = true;
    for (int j = 0; j < r; j++) {
        q[j] = p1[p2[j]];
        identity &= q[j] == j;
    }
    int pos;
    Onnx__NodeProto *t1 = node_of(e, ops[0], &pos), *t2 = node_of(e, ops[1], &pos);
    char *x = pl_strdup(t1->input[0]), *y = pl_strdup(t2->output[0]);
    bool y_out = rw_is_output(e->gp, y);
    Onnx__NodeProto *nt = NULL;
    if (identity && y_out) { /* the output keeps its name: an Identity writes it */
        char *name = rw_fresh(e, t1->name);
        nt = rw_node("Identity", name, (const char *const *)&x, 1, (const char *const *)&y, 1);
        free(name);
    } else if (!identity) {
        char *name = rw_fresh(e, t1->name);
        nt = rw_node("Transpose", name, (const char *const *)&x, 1, (const char *const *)&y, 1);
        rw_attr_ints(nt, "perm", q, r);
        free(name);
    }
    size_t at = remove_ops(e, ops, 2, true);
    if (nt)
        rw_insert_node(e, at, nt);
    else
        rw_rename_uses(e->gp, y, x);
    free(x), free(y);
    return 0;
}

/* ---- reshape_merge ---- */

static int match_reshape(const pl_graph *g, int op, int *ops)
{
    int r2 = sole_consumer(g, g->ops[op].outputs[0]);
    if (!is_op(g, r2, "Reshape")) return 0;
    const pl_tensor *y = &g->tensors[g->ops[r2].outputs[0]];
    const pl_tensor *s = &g->tensors[in(g, r2, 1)];
    bool shape_ok = s->ivals && s->n_ivals > 0;
    for (int i = 0; shape_ok && i < s->n_ivals; i++)
        shape_ok = s->ivals[i] != 0; /* 0 copies a dim of the intermediate tensor */
    bool dims_ok = y->rank >= 0;
    for (int i = 0; dims_ok && i < y->rank; i++)
        dims_ok = y->dims[i] > 0;
    if (!shape_ok && !dims_ok) return 0;
    ops[0] = op, ops[1] = r2;
    return 2;
}

/* reshape(reshape(x, s1), s2) = reshape(x, s2) when s2 does not copy dims (no 0) of the
 * intermediate; otherwise the inferred static output shape is the new s2. */
static int build_reshape(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    const pl_graph *g = e->g;
    const pl_tensor *s = &g->tensors[in(g, ops[1], 1)];
    bool reuse = s->ivals && s->n_ivals > 0;
    for (int i = 0; reuse && i < s->n_ivals; i++)
        reuse = s->ivals[i] != 0;
    int pos;
    Onnx__NodeProto *r1 = node_of(e, ops[0], &pos), *r2 = node_of(e, ops[1], &pos);
    Onnx__NodeProto *r = clone_node(r2, "");
    char *name = rw_fresh(e, r1->name);
    rw_set_str(&r->name, name);
    rw_set_str(&r->input[0], r1->input[0]);
    if (!reuse) {
        const pl_tensor *y = &g->tensors[g->ops[ops[1]].outputs[0]];
        char *sn = rw_fresh(e, "reshape_shape");
        int64_t len = y->rank;
        rw_add_init(e, sn, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, &len, 1, y->dims,
                    (size_t)y->rank * 8);
        rw_set_str(&r->input[1], sn);
        free(sn);
    }
    size_t at = remove_ops(e, ops, 2, true);
    rw_insert_node(e, at, r);
    free(name);
    return 0;
}

/* ---- shape_fold ---- */

/* Every output's value is known to shape inference (integer tensors of at most 64 elements:
 * shapes, indices), so the op computes a constant. */
static bool foldable(const pl_graph *g, int op)
{
    const pl_op *o = &g->ops[op];
    if (o->domain[0] || o->n_subgraphs || !o->n_outputs || !strcmp(o->type, "Constant"))
        return false;
    for (int k = 0; k < o->n_outputs; k++) {
        const pl_tensor *t = &g->tensors[o->outputs[k]];
        if (t->dtype != PL_DT_INT64 && t->dtype != PL_DT_INT32) return false;
        if (!t->ivals || pl_tensor_numel(t) != t->n_ivals) return false;
    }
    return true;
}

/* A foldable op whose value something else needs (a graph output, or a reader that is not
 * foldable): the last op of a shape chain, folded with everything before it. */
static int match_shape_fold(const pl_graph *g, int op, int *ops)
{
    if (!foldable(g, op)) return 0;
    const pl_op *o = &g->ops[op];
    for (int k = 0; k < o->n_outputs; k++) {
        const pl_tensor *t = &g->tensors[o->outputs[k]];
        if (t->flags & PL_TENSOR_OUTPUT) return 0; /* an output stays an op's output */
        for (int c = 0; c < t->n_consumers; c++)
            if (!foldable(g, t->consumers[c])) {
                ops[0] = op;
                return 1;
            }
    }
    return 0;
}

/* Removes nodes none of whose outputs is read, by a node or a subgraph's node (an outer-scope
 * read), or is a graph output: after the fold, the chain that fed it. */
static void drop_dead(rw_edit *e)
{
    size_t *dead = pl_malloc((e->gp->n_node ? e->gp->n_node : 1) * sizeof *dead);
    for (size_t n_dead = 1; n_dead;) {
        pl_strmap read;
        pl_strmap_init(&read);
        rw_mark_reads(e->gp, &read);
        n_dead = 0;
        for (size_t i = 0; i < e->gp->n_node; i++) {
            const Onnx__NodeProto *n = e->gp->node[i];
            bool used = !n->n_output;
            for (size_t k = 0; k < n->n_output && !used; k++)
                used = pl_strmap_get(&read, n->output[k]) >= 0;
            if (!used) dead[n_dead++] = i;
        }
        pl_strmap_free(&read); /* its keys point into nodes about to go */
        for (size_t i = n_dead; i-- > 0;)
            rw_remove_node(e, dead[i]);
    }
    free(dead);
}

static int build_shape_fold(rw_edit *e, const int *ops, int n, pl_err *err)
{
    (void)n, (void)err;
    const pl_op *o = &e->g->ops[ops[0]];
    for (int k = 0; k < o->n_outputs; k++) {
        const pl_tensor *t = &e->g->tensors[o->outputs[k]];
        if (t->dtype == PL_DT_INT64) {
            rw_add_init(e, t->name, PL_DT_INT64, t->dims, t->rank, t->ivals,
                        (size_t)t->n_ivals * 8);
        } else {
            int32_t *v = pl_malloc((size_t)(t->n_ivals ? t->n_ivals : 1) * sizeof *v);
            for (int i = 0; i < t->n_ivals; i++)
                v[i] = (int32_t)t->ivals[i];
            rw_add_init(e, t->name, PL_DT_INT32, t->dims, t->rank, v, (size_t)t->n_ivals * 4);
            free(v);
        }
    }
    remove_ops(e, ops, 1, true);
    drop_dead(e);
    return 0;
}

/* ---- the table ---- */

const rw_rule rw_rule_table[] = {
    {{"conv_bn_fold", "Conv(X, W[, B]) -> BatchNormalization(scale, bias, mean, var)",
      "Conv(X, W', B') with the BN's per-channel affine map folded into the weights",
      "the Conv output is read by the BN alone and is no graph output; W, B and the BN's four "
      "parameters are float initializers of the Conv's output channels; inference mode",
      "TASO (Jia et al., SOSP 2019) fuse_conv_batchnorm (create_fuse_conv_batch_xfer in "
      "TASO/MetaFlow's hand-written substitutions); onnxruntime's ConvBNFusion"},
     "Conv",
     match_conv_bn,
     build_conv_bn},
    {{"matmul_add_gemm", "MatMul(A, B) -> Add(., C)", "Gemm(A, B, C)",
      "A and B are 2-D float tensors, the MatMul output is read by the Add alone and is no graph "
      "output, and C broadcasts to the [M, N] result one-way (shape [N], [1], [M|1, N|1])",
      "onnxruntime's MatMulAddFusion; ONNX optimizer's fuse_matmul_add_bias_into_gemm"},
     "MatMul",
     match_matmul_add,
     build_matmul_add},
    {{"merge_matmul", "MatMul(A, B1), ..., MatMul(A, Bk)",
      "MatMul(A, [B1 ... Bk]) -> Split(last axis)",
      "k >= 2 MatMuls read the same A as first input; each Bi is a 2-D float initializer with "
      "the same number of rows",
      "TASO (Jia et al., SOSP 2019) Figure 1 / create_merge_mm_xfer (MetaFlow's merge of "
      "MatMuls sharing an input)"},
     "MatMul",
     match_merge_matmul,
     build_merge_matmul},
    {{"merge_conv", "Conv(X, W1[, B1]), ..., Conv(X, Wk[, Bk])",
      "Conv(X, [W1; ...; Wk][, [B1; ...; Bk]]) -> Split(axis 1)",
      "k >= 2 Convs read the same X; equal kernel_shape, strides, pads, dilations, auto_pad, "
      "group 1, weights of equal dims apart from the output channels, all with a bias or none",
      "TASO (Jia et al., SOSP 2019) / MetaFlow create_merge_conv_xfer"},
     "Conv",
     match_merge_conv,
     build_merge_conv},
    {{"split_add_merge", "Split(X, last axis) -> Add(., b1), ..., Add(., bk)",
      "Add(X, [b1 ... bk]) -> Split(last axis)",
      "every Split output is read by one Add alone (no graph output) whose other operand is a "
      "1-D float initializer as long as that output's last dim",
      "TASO (Jia et al., SOSP 2019): element-wise ops commute with concat/split (its operator "
      "properties); what lets merge_matmul's three biases of BERT's Q, K, V become one Add"},
     "Split",
     match_split_add,
     build_split_add},
    {{"matmul_distrib", "Add(MatMul(A, B1), MatMul(A, B2))", "MatMul(A, B1 + B2)",
      "both MatMuls read the same A, their products are read by the Add alone (no graph "
      "output), B1 and B2 are 2-D float initializers of equal dims",
      "TASO (Jia et al., SOSP 2019) equation (9), matmul distributes over ewadd; AutoDeep "
      "§IV-B quotes it"},
     "Add",
     match_matmul_distrib,
     build_matmul_distrib},
    {{"matmul_assoc", "MatMul(MatMul(A, B), C)", "MatMul(A, B C), B C folded",
      "B [k,m] and C [m,n] are 2-D float initializers, A is not one, and the inner product is "
      "read by the outer MatMul alone (no graph output)",
      "TASO (Jia et al., SOSP 2019): associativity of matmul (its operator properties), with "
      "the constant product folded"},
     "MatMul",
     match_matmul_assoc,
     build_matmul_assoc},
    {{"add_const_assoc", "Add(Add(X, c1), c2)", "Add(X, c1 + c2)",
      "c1 and c2 are float initializers of equal dims or one a single value, the inner sum is "
      "read by the outer Add alone (no graph output), and the constants widen nothing",
      "TASO (Jia et al., SOSP 2019): associativity of ewadd, with the constant part folded"},
     "Add",
     match_const_assoc,
     build_const_assoc},
    {{"mul_const_assoc", "Mul(Mul(X, c1), c2)", "Mul(X, c1 * c2)", "as add_const_assoc, for Mul",
      "TASO (Jia et al., SOSP 2019): associativity of ewmul, with the constant part folded"},
     "Mul",
     match_const_assoc,
     build_const_assoc},
    {{"transpose_merge", "Transpose(p1) -> Transpose(p2)",
      "Transpose(q), q[j] = p1[p2[j]]; nothing when q is the identity",
      "the first Transpose's output is read by the second alone and is no graph output; both "
      "permutations known",
      "TASO's transpose rules (transpose(transpose(x)) = x, ops.cc); onnxruntime's "
      "TransposeOptimizer; ONNX optimizer's fuse_consecutive_transposes"},
     "Transpose",
     match_transpose,
     build_transpose},
    {{"reshape_merge", "Reshape(X, s1) -> Reshape(., s2)", "Reshape(X, s2')",
      "the first Reshape's output is read by the second alone and is no graph output; s2 is "
      "known without 0 entries (kept as s2' = s2), or the result's shape is static (s2' = it)",
      "ONNX optimizer's fuse_consecutive_reshapes; onnxruntime's ReshapeFusion (chains)"},
     "Reshape",
     match_reshape,
     build_reshape},
    {{"shape_fold",
      "an op whose integer outputs shape inference knows (Shape, Gather, "
      "Unsqueeze, Concat, ... on static dims)",
      "an initializer with the values; the ops that only fed it are dropped",
      "every output is an int32/int64 tensor whose values placer's shape inference knows, no "
      "output is a graph output, and some reader is not itself foldable (the end of a chain)",
      "onnxruntime's ConstantFolding; ONNX optimizer's constant folding of shape subgraphs"},
     NULL,
     match_shape_fold,
     build_shape_fold},
};
const int rw_n_rules = (int)(sizeof rw_rule_table / sizeof rw_rule_table[0]);
