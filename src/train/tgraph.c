/* tgraph.c: the training graph of a forward graph (docs/train.md, "The training graph").
 *
 * TAG places a model's training, not its inference: one iteration is the forward pass at the
 * global batch, a backward pass that differentiates every op between a trainable weight and
 * the loss, and one optimizer op per parameter. The zoo's models are exported at batch 1 with
 * every shape fixed, so the batch is not re-inferred: the tensors that carry the batch are
 * found by propagation from the graph inputs and scaled, with their ops' FLOPs and bytes.
 *
 * Backward ops read the forward tensors they need (a MatMul's weight gradient reads its input
 * activation) as ordinary edges: those are the activations kept alive from forward to
 * backward, and the simulator's memory model holds them until their last reader runs.
 * Private prefix: tg_. */
#include "placer/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pl_split_class_name(pl_split_class c)
{
    switch (c) {
    case PL_SPLIT_CONCAT:
        return "concat";
    case PL_SPLIT_SUM:
        return "sum";
    case PL_SPLIT_OTHER:
        return "other";
    }
    return "?";
}

/* ---- which inputs a gradient flows through ---- */

static bool tg_is(const char *type, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(type, list[i])) return true;
    return false;
}

/* Ops whose outputs are piecewise constant in every input (or not numbers): no gradient. */
static const char *const tg_nondiff[] = {"Shape",
                                         "Size",
                                         "Equal",
                                         "Less",
                                         "LessOrEqual",
                                         "Greater",
                                         "GreaterOrEqual",
                                         "Not",
                                         "And",
                                         "Or",
                                         "Xor",
                                         "ArgMax",
                                         "ArgMin",
                                         "NonZero",
                                         "ConstantOfShape",
                                         "Range",
                                         "Constant",
                                         "Floor",
                                         "Ceil",
                                         "Round",
                                         "Sign",
                                         "IsNaN",
                                         "IsInf",
                                         "RandomNormal",
                                         "RandomUniform",
                                         "RandomNormalLike",
                                         "RandomUniformLike",
                                         "Multinomial",
                                         "EyeLike",
                                         "OneHot",
                                         NULL};
/* Ops differentiable in their data input (slot 0) only: the others are shapes, indices, axes,
 * exponents or bounds. */
static const char *const tg_data_only[] = {"Reshape",
                                           "Expand",
                                           "Tile",
                                           "Slice",
                                           "Pad",
                                           "Squeeze",
                                           "Unsqueeze",
                                           "Resize",
                                           "Upsample",
                                           "Gather",
                                           "GatherElements",
                                           "GatherND",
                                           "TopK",
                                           "Pow",
                                           "Clip",
                                           "Dropout",
                                           "CumSum",
                                           "ReduceSum",
                                           "ReduceMean",
                                           "ReduceMax",
                                           "ReduceMin",
                                           "ReduceProd",
                                           "ReduceL1",
                                           "ReduceL2",
                                           "ReduceLogSumExp",
                                           "ReduceSumSquare",
                                           "Split",
                                           "Trilu",
                                           "DepthToSpace",
                                           "SpaceToDepth",
                                           NULL};
static const char *const tg_rnn[] = {"LSTM", "GRU", "RNN", NULL};

static bool tg_float(const pl_tensor *t)
{
    return t->dtype == PL_DT_FLOAT || t->dtype == PL_DT_FLOAT16 || t->dtype == PL_DT_DOUBLE ||
           t->dtype == PL_DT_BFLOAT16;
}

/* Whether a gradient flows from op's outputs to its input slot j. */
static bool tg_diff_slot(const pl_op *op, int j)
{
    if (tg_is(op->type, tg_nondiff) || j >= op->n_inputs - op->n_implicit) return false;
    if (tg_is(op->type, tg_data_only)) return j == 0;
    if (!strcmp(op->type, "Where")) return j == 1 || j == 2;
    if (!strcmp(op->type, "BatchNormalization")) return j <= 2; /* not the running stats */
    if (tg_is(op->type, tg_rnn)) return j <= 3; /* X, W, R, B; not lengths or initial states */
    if (!strcmp(op->type, "ScatterND") || !strcmp(op->type, "ScatterElements"))
        return j == 0 || j == 2;
    return true;
}

/* ---- the builder ---- */

typedef struct tg_builder {
    const pl_graph *f;
    pl_train_graph *t;
    pl_graph *g;
    const char *where;
    double s;       /* B / b0 */
    bool *needs;    /* per forward tensor: depends on a trainable weight */
    bool *reach;    /* per forward tensor: the loss depends on it */
    bool *act;      /* per forward tensor: depends on a graph input */
    bool *param;    /* per forward tensor: a trainable weight */
    bool *flt;      /* per forward tensor: of a float dtype, or of none known made from one */
    int *n_contrib; /* per forward tensor: how many backward ops give it a gradient */
    int *grad;      /* per forward tensor: its gradient in g, -1 */
    int **parts;    /* per forward tensor: the partial gradients made so far */
    int *n_parts;
    int cap_ops, cap_tensors; /* of t's per-op arrays and of t->batched */
} tg_builder;

static bool tg_has_grad(const tg_builder *b, int t)
{
    return t >= 0 && b->needs[t] && b->reach[t];
}

/* Whether input slot j of forward op i receives a gradient from i's backward ops. */
static bool tg_target(const tg_builder *b, int i, int j)
{
    const pl_op *op = &b->f->ops[i];
    int t = op->inputs[j];
    if (t < 0 || !tg_has_grad(b, t) || !tg_diff_slot(op, j)) return false;
    for (int k = 0; k < j; k++) /* each tensor once per op */
        if (op->inputs[k] == t && tg_diff_slot(op, k)) return false;
    for (int k = 0; k < op->n_outputs; k++)
        if (tg_has_grad(b, op->outputs[k])) return true;
    return false;
}

static void tg_grow_ops(tg_builder *b, int need)
{
    pl_train_graph *t = b->t;
    if (need < b->cap_ops) return;
    size_t cap = (size_t)need * 2 + 16;
    t->phase = pl_realloc(t->phase, cap * sizeof *t->phase);
    t->split = pl_realloc(t->split, cap * sizeof *t->split);
    t->fwd_of = pl_realloc(t->fwd_of, cap * sizeof *t->fwd_of);
    t->batch_frac = pl_realloc(t->batch_frac, cap * sizeof *t->batch_frac);
    b->cap_ops = (int)cap;
}

static int tg_add_op(tg_builder *b, const char *name, const char *type, pl_op_class cls,
                     pl_train_phase phase, int fwd_of)
{
    int o = pl_graph_add_op(b->g, name, type, "");
    tg_grow_ops(b, o);
    b->t->phase[o] = phase;
    b->t->fwd_of[o] = fwd_of;
    b->t->split[o] = PL_SPLIT_OTHER; /* set by tg_classify */
    b->t->batch_frac[o] = 0;
    pl_op *op = &b->g->ops[o];
    op->cls = cls;
    op->flags |= PL_OP_COST_GIVEN;
    return o;
}

/* A new tensor of g shaped as g's tensor `like`, batched alike. */
static int tg_new_tensor(tg_builder *b, const char *name, int like, unsigned flags)
{
    int k = pl_graph_tensor(b->g, name);
    const pl_tensor *l = &b->g->tensors[like];
    pl_tensor *d = &b->g->tensors[k];
    pl_tensor_set_shape(d, l->dtype, l->rank, l->dims);
    d->bytes = l->bytes;
    d->flags = flags;
    pl_grow((void **)&b->t->batched, &b->cap_tensors, k, sizeof *b->t->batched);
    b->t->batched[k] = b->t->batched[like];
    return k;
}

static double tg_bytes(const pl_graph *g, int t)
{
    return t >= 0 && g->tensors[t].bytes > 0 ? (double)g->tensors[t].bytes : 0;
}

static double tg_numel(const pl_graph *g, int t)
{
    int64_t n = t >= 0 ? pl_tensor_numel(&g->tensors[t]) : -1;
    return n > 0 ? (double)n : 0;
}

/* ---- step 1: which tensors carry the batch, need a gradient, reach the loss ---- */

/* Batched: the graph inputs whose first dimension is b0, then every output of an op with a
 * batched input whose first dimension is b0 (docs/train.md states the limits). */
static void tg_mark_batched(tg_builder *b, int b0)
{
    const pl_graph *f = b->f;
    bool *bt = b->t->batched;
    for (int k = 0; k < f->n_inputs; k++) {
        const pl_tensor *x = &f->tensors[f->inputs[k]];
        bt[f->inputs[k]] = x->rank >= 1 && x->dims[0] == b0;
        b->act[f->inputs[k]] = true;
    }
    for (int p = 0; p < f->n_ops; p++) {
        const pl_op *op = &f->ops[f->topo[p]];
        bool any = false, act = false;
        for (int j = 0; j < op->n_inputs; j++)
            if (op->inputs[j] >= 0) any |= bt[op->inputs[j]], act |= b->act[op->inputs[j]];
        for (int k = 0; k < op->n_outputs; k++) {
            int o = op->outputs[k];
            if (o < 0) continue;
            const pl_tensor *y = &f->tensors[o];
            bt[o] = any && y->rank >= 1 && y->dims[0] == b0 && !(y->flags & PL_TENSOR_WEIGHT);
            b->act[o] = act;
        }
    }
}

/* Which tensors carry gradients: a float dtype, or no dtype known (an op of a domain placer
 * has no rule for, an output the file does not type) made by an op that reads a float one.
 * Such an output stopped the gradient before: the weights before the op were left untrained
 * in silence (a MatMul -> com.example op -> MatMul model trained one of its two weights). */
static void tg_mark_float(tg_builder *b)
{
    const pl_graph *f = b->f;
    for (int t = 0; t < f->n_tensors; t++)
        b->flt[t] = tg_float(&f->tensors[t]);
    for (int p = 0; p < f->n_ops; p++) {
        const pl_op *op = &f->ops[f->topo[p]];
        bool reads = false;
        for (int j = 0; j < op->n_inputs; j++)
            reads |= op->inputs[j] >= 0 && b->flt[op->inputs[j]];
        for (int k = 0; reads && k < op->n_outputs; k++)
            if (op->outputs[k] >= 0 && f->tensors[op->outputs[k]].dtype == PL_DT_UNDEFINED)
                b->flt[op->outputs[k]] = true;
    }
}

/* Trainable weights: float initializers of at least 2 elements (a scalar is a constant of the
 * formula: an epsilon, a scale) that the loss depends on through differentiable inputs. */
static void tg_mark_grads(tg_builder *b)
{
    const pl_graph *f = b->f;
    tg_mark_float(b);
    for (int t = 0; t < f->n_tensors; t++) {
        const pl_tensor *x = &f->tensors[t];
        b->needs[t] = (x->flags & PL_TENSOR_WEIGHT) && x->producer < 0 && b->flt[t] &&
                      pl_tensor_numel(x) >= 2;
    }
    for (int p = 0; p < f->n_ops; p++) {
        const pl_op *op = &f->ops[f->topo[p]];
        bool any = false;
        for (int j = 0; j < op->n_inputs; j++)
            if (op->inputs[j] >= 0 && b->needs[op->inputs[j]] && tg_diff_slot(op, j)) any = true;
        for (int k = 0; k < op->n_outputs; k++)
            if (op->outputs[k] >= 0) b->needs[op->outputs[k]] = any && b->flt[op->outputs[k]];
    }
    for (int k = 0; k < f->n_outputs; k++)
        b->reach[f->outputs[k]] = b->flt[f->outputs[k]];
    for (int p = f->n_ops - 1; p >= 0; p--) {
        const pl_op *op = &f->ops[f->topo[p]];
        bool any = false;
        for (int k = 0; k < op->n_outputs; k++)
            if (op->outputs[k] >= 0 && b->reach[op->outputs[k]]) any = true;
        for (int j = 0; any && j < op->n_inputs; j++)
            if (op->inputs[j] >= 0 && tg_diff_slot(op, j) && b->flt[op->inputs[j]])
                b->reach[op->inputs[j]] = true;
    }
    for (int t = 0; t < f->n_tensors; t++)
        b->param[t] = tg_has_grad(b, t) && f->tensors[t].producer < 0 && !b->act[t];
}

/* How many backward ops give tensor t a gradient: each op with t as a target, and the loss
 * for a graph output. */
static void tg_count_contrib(tg_builder *b)
{
    const pl_graph *f = b->f;
    for (int i = 0; i < f->n_ops; i++)
        for (int j = 0; j < f->ops[i].n_inputs; j++)
            if (tg_target(b, i, j)) b->n_contrib[f->ops[i].inputs[j]]++;
    for (int k = 0; k < f->n_outputs; k++)
        if (tg_has_grad(b, f->outputs[k])) b->n_contrib[f->outputs[k]]++;
}

/* ---- step 2: the forward ops, at the global batch ---- */

static void tg_copy_tensors(tg_builder *b, int B, int b0)
{
    const pl_graph *f = b->f;
    for (int t = 0; t < f->n_tensors; t++) {
        const pl_tensor *s = &f->tensors[t];
        int k = pl_graph_tensor(b->g, s->name);
        PL_ASSERT(k == t);
        pl_tensor *d = &b->g->tensors[k];
        pl_tensor_set_shape(d, s->dtype, s->rank, s->dims);
        d->bytes = s->bytes;
        if (b->t->batched[t]) {
            d->dims[0] = B;
            d->bytes = s->bytes >= 0 ? s->bytes / b0 * B : -1;
        }
        d->flags = s->flags & ~(PL_TENSOR_INPUT | PL_TENSOR_OUTPUT);
        if (s->ivals) pl_tensor_set_ivals(d, s->ivals, s->n_ivals);
        if (s->fvals) pl_tensor_set_fvals(d, s->fvals, s->n_fvals);
    }
    for (int k = 0; k < f->n_inputs; k++)
        pl_graph_add_input(b->g, f->inputs[k]);
    for (int k = 0; k < f->n_outputs; k++)
        pl_graph_add_output(b->g, f->outputs[k]);
}

/* The op's batched tensors' bytes at the model's batch, each tensor once. */
static double tg_batched_bytes(const tg_builder *b, const pl_op *op)
{
    double sum = 0;
    for (int side = 0; side < 2; side++) {
        const int *v = side ? op->outputs : op->inputs;
        int n = side ? op->n_outputs : op->n_inputs;
        for (int j = 0; j < n; j++) {
            bool seen = false;
            for (int k = 0; k < j; k++)
                seen |= v[k] == v[j];
            if (v[j] >= 0 && !seen && b->t->batched[v[j]]) sum += tg_bytes(b->f, v[j]);
        }
    }
    return sum;
}

/* Forward op i as in the model, its FLOPs scaled by s when it touches a batched tensor, and
 * of its bytes those of the batched tensors (a weight is read once whatever the batch). */
static void tg_copy_op(tg_builder *b, int i)
{
    const pl_op *s = &b->f->ops[i];
    int k = tg_add_op(b, s->name, s->type, s->cls, PL_PHASE_FWD, -1);
    PL_ASSERT(k == i);
    for (int j = 0; j < s->n_inputs; j++)
        pl_op_add_input(b->g, k, s->inputs[j]);
    for (int j = 0; j < s->n_outputs; j++)
        pl_op_add_output(b->g, k, s->outputs[j]);
    pl_op *d = &b->g->ops[k];
    double bb = tg_batched_bytes(b, s);
    bool batched = bb > 0;
    for (int j = 0; j < s->n_inputs; j++)
        batched |= s->inputs[j] >= 0 && b->t->batched[s->inputs[j]];
    d->flops = batched ? s->flops * b->s : s->flops;
    d->bytes_moved = s->bytes_moved + (b->s - 1) * fmin(bb, s->bytes_moved);
    /* an RNN's re-reads of R: one per step whatever the batch (docs/cost.md, "Bytes moved") */
    d->bytes_reread = s->bytes_reread, d->reread_tensor_bytes = s->reread_tensor_bytes;
    d->flags = s->flags | PL_OP_COST_GIVEN;
    d->n_implicit = 0; /* bodies are left out: the op carries their cost */
    d->extra_memory_bytes = s->extra_memory_bytes;
}

/* ---- step 3: the backward ops ---- */

/* The tensor into which a backward op `who` writes its share of t's gradient: t's gradient
 * itself when it is the only contributor, else a partial that an AddN sums (tg_accumulate). */
static int tg_grad_out(tg_builder *b, int t, const char *who)
{
    char name[1024];
    if (b->n_contrib[t] == 1) {
        snprintf(name, sizeof name, "%s:grad", b->f->tensors[t].name);
        return b->grad[t] = tg_new_tensor(b, name, t, 0);
    }
    snprintf(name, sizeof name, "%s:grad@%s", b->f->tensors[t].name, who);
    int k = tg_new_tensor(b, name, t, 0);
    if (!b->parts[t]) b->parts[t] = pl_malloc((size_t)b->n_contrib[t] * sizeof(int));
    PL_ASSERT(b->n_parts[t] < b->n_contrib[t]);
    b->parts[t][b->n_parts[t]++] = k;
    return k;
}

/* An AddN summing t's partial gradients into t's gradient, once all are made. */
static void tg_accumulate(tg_builder *b, int t)
{
    if (b->n_contrib[t] < 2) return;
    PL_ASSERT(b->n_parts[t] == b->n_contrib[t]);
    char name[1024];
    snprintf(name, sizeof name, "%s:grad_acc", b->f->tensors[t].name);
    int o =
        tg_add_op(b, name, "AddN", PL_CLASS_ELEMENTWISE, PL_PHASE_BWD, b->f->tensors[t].producer);
    /* partial sums of a weight's gradient, summed: still partial over the batch */
    if (!b->act[t]) b->t->split[o] = PL_SPLIT_SUM;
    for (int k = 0; k < b->n_parts[t]; k++)
        pl_op_add_input(b->g, o, b->parts[t][k]);
    snprintf(name, sizeof name, "%s:grad", b->f->tensors[t].name);
    b->grad[t] = tg_new_tensor(b, name, t, 0);
    pl_op_add_output(b->g, o, b->grad[t]);
    int n = b->n_parts[t];
    b->g->ops[o].flops = (n - 1) * tg_numel(b->g, t);
    b->g->ops[o].bytes_moved = (n + 1) * tg_bytes(b->g, t);
}

/* The loss: reads every graph output the weights reach and seeds their gradients. */
static void tg_add_loss(tg_builder *b)
{
    const pl_graph *f = b->f;
    int o = tg_add_op(b, "loss", "Loss", PL_CLASS_ELEMENTWISE, PL_PHASE_BWD, -1);
    double n = 0, bytes = 0;
    for (int k = 0; k < f->n_outputs; k++) {
        int t = f->outputs[k];
        if (!tg_has_grad(b, t)) continue;
        pl_op_add_input(b->g, o, t);
        pl_op_add_output(b->g, o, tg_grad_out(b, t, "loss"));
        n += tg_numel(b->g, t), bytes += 2 * tg_bytes(b->g, t);
    }
    b->g->ops[o].flops = 5 * n; /* a softmax cross-entropy's few operations per element */
    b->g->ops[o].bytes_moved = bytes;
}

/* Which forward tensors a backward op of forward op `op` reads besides the output gradients
 * (docs/train.md, "Tensors kept alive"). */
typedef enum {
    TG_KEEP_NONE,   /* linear in its inputs: only shapes needed */
    TG_KEEP_OUT,    /* derivative from the output (sigmoid, tanh, relu, exp, softmax) */
    TG_KEEP_OTHERS, /* products: each operand's gradient reads the other operands */
    TG_KEEP_INDEX,  /* gathers: the indices; Where: the condition */
    TG_KEEP_IN,     /* everything else: the float inputs */
    TG_KEEP_IN_OUT  /* recurrences and max: inputs and outputs */
} tg_keep;

static const char *const tg_linear[] = {"Add",
                                        "Sub",
                                        "Neg",
                                        "Identity",
                                        "Sum",
                                        "ReduceSum",
                                        "ReduceMean",
                                        "AveragePool",
                                        "GlobalAveragePool",
                                        "Reshape",
                                        "Flatten",
                                        "Squeeze",
                                        "Unsqueeze",
                                        "Transpose",
                                        "Concat",
                                        "Split",
                                        "Slice",
                                        "Pad",
                                        "Expand",
                                        "Tile",
                                        "Cast",
                                        "Dropout",
                                        "Resize",
                                        "Upsample",
                                        "DepthToSpace",
                                        "SpaceToDepth",
                                        "CumSum",
                                        "Mean",
                                        NULL};
static const char *const tg_out_based[] = {"Sigmoid", "Tanh",       "Relu", "Exp",
                                           "Softmax", "LogSoftmax", "Sqrt", NULL};
static const char *const tg_products[] = {"Mul",           "MatMul", "Gemm",          "Conv",
                                          "ConvTranspose", "Einsum", "MatMulInteger", NULL};
static const char *const tg_in_out[] = {"LSTM",      "GRU",       "RNN",           "MaxPool",
                                        "ReduceMax", "ReduceMin", "GlobalMaxPool", NULL};

static tg_keep tg_keep_of(const pl_op *op)
{
    if (tg_is(op->type, tg_linear)) return TG_KEEP_NONE;
    if (tg_is(op->type, tg_out_based)) return TG_KEEP_OUT;
    if (tg_is(op->type, tg_products)) return TG_KEEP_OTHERS;
    if (tg_is(op->type, tg_in_out)) return TG_KEEP_IN_OUT;
    if (!strncmp(op->type, "Gather", 6) || !strcmp(op->type, "Where")) return TG_KEEP_INDEX;
    return TG_KEEP_IN;
}

/* The operands of a product: Gemm's and Conv's bias is added, not multiplied. */
static int tg_n_factors(const pl_op *op)
{
    if (!strcmp(op->type, "Mul") || !strcmp(op->type, "Einsum")) return op->n_inputs;
    return op->n_inputs < 2 ? op->n_inputs : 2;
}

/* Appends forward tensor t to the backward op's inputs once; returns its bytes if new. */
static double tg_read(tg_builder *b, int o, int t)
{
    const pl_op *op = &b->g->ops[o];
    if (t < 0) return 0;
    for (int j = 0; j < op->n_inputs; j++)
        if (op->inputs[j] == t) return 0;
    pl_op_add_input(b->g, o, t);
    return tg_bytes(b->g, t);
}

/* The kept-alive reads of the backward op o of forward op i whose targets are the slots
 * with mine[j]; returns their bytes. */
static double tg_read_kept(tg_builder *b, int o, int i, const bool *mine)
{
    const pl_op *op = &b->f->ops[i];
    double bytes = 0;
    switch (tg_keep_of(op)) {
    case TG_KEEP_NONE:
        break;
    case TG_KEEP_OUT:
        for (int k = 0; k < op->n_outputs; k++)
            bytes += tg_read(b, o, op->outputs[k]);
        break;
    case TG_KEEP_OTHERS: {
        int nf = tg_n_factors(op);
        for (int j = 0; j < nf; j++) /* operand j is read when another one is a target */
            for (int k = 0; k < nf; k++)
                if (k != j && mine[k] && op->inputs[j] != op->inputs[k]) {
                    bytes += tg_read(b, o, op->inputs[j]);
                    break;
                }
        break;
    }
    case TG_KEEP_INDEX:
        bytes += tg_read(
            b, o, op->n_inputs > 1 && strcmp(op->type, "Where") ? op->inputs[1] : op->inputs[0]);
        break;
    case TG_KEEP_IN_OUT:
        for (int k = 0; k < op->n_outputs; k++)
            bytes += tg_read(b, o, op->outputs[k]);
        /* fall through */
    case TG_KEEP_IN:
        for (int j = 0; j < op->n_inputs; j++)
            if (tg_diff_slot(op, j) && op->inputs[j] >= 0 && b->flt[op->inputs[j]])
                bytes += tg_read(b, o, op->inputs[j]);
        break;
    }
    return bytes;
}

/* FLOPs of a backward op of forward op i (at the global batch) computing the gradients of
 * the slots with mine[j]; gy = the output gradients' elements (docs/train.md, the table). */
static double tg_bwd_flops(const tg_builder *b, int i, const bool *mine, double gy)
{
    const pl_op *op = &b->g->ops[i];
    double F = op->flops, flops = 0;
    int n = 0;
    for (int j = 0; j < op->n_inputs; j++)
        n += mine[j];
    switch (op->cls) {
    case PL_CLASS_DENSE:
        if (tg_is(op->type, tg_rnn)) return F;
        for (int j = 0; j < op->n_inputs; j++)
            if (mine[j]) flops += j < tg_n_factors(op) ? F : gy; /* a bias: sum of dY */
        return flops;
    case PL_CLASS_ELEMENTWISE:
        return n * fmax(F, gy);
    case PL_CLASS_DATA_MOVEMENT:
        if (!strcmp(op->type, "Expand") || !strcmp(op->type, "Tile") ||
            !strncmp(op->type, "Gather", 6))
            return gy; /* the inverse is a sum: a reduction, a scatter-add */
        return F;
    default:
        return F; /* reductions, pooling, softmax: as the forward; control, unknown */
    }
}

/* One backward op of forward op i: grad_w (weights = true: the targets that derive from
 * weights only) or grad_in (the targets that derive from a graph input). */
static void tg_add_bwd(tg_builder *b, int i, bool weights)
{
    const pl_op *op = &b->f->ops[i];
    bool *mine = pl_calloc((size_t)op->n_inputs + 1, sizeof *mine);
    int n = 0;
    for (int j = 0; j < op->n_inputs; j++)
        if (tg_target(b, i, j) && b->act[op->inputs[j]] != weights) mine[j] = true, n++;
    if (!n) {
        free(mine);
        return;
    }
    char name[1024];
    snprintf(name, sizeof name, "%s:%s", op->name, weights ? "grad_w" : "grad_in");
    char type[256];
    snprintf(type, sizeof type, "%sGrad", op->type);
    int o = tg_add_op(b, name, type, op->cls, PL_PHASE_BWD, i);
    b->g->ops[o].kernel_of = i; /* forward op i is op i of the training graph */
    double bytes = 0, gy = 0;
    for (int k = 0; k < op->n_outputs; k++) {
        int y = op->outputs[k];
        if (!tg_has_grad(b, y)) continue;
        PL_ASSERT(b->grad[y] >= 0);
        bytes += tg_read(b, o, b->grad[y]);
        gy += tg_numel(b->g, y);
    }
    bytes += tg_read_kept(b, o, i, mine);
    for (int j = 0; j < op->n_inputs; j++)
        if (mine[j]) {
            int d = tg_grad_out(b, op->inputs[j], op->name);
            pl_op_add_output(b->g, o, d);
            bytes += tg_bytes(b->g, d);
        }
    pl_op *bo = &b->g->ops[o];
    if (weights) b->t->split[o] = PL_SPLIT_SUM; /* each replica's share of the batch's sum */
    bo->flops = tg_bwd_flops(b, i, mine, gy);
    /* the gradient of a view is a view */
    bool view = op->cls == PL_CLASS_DATA_MOVEMENT && b->g->ops[i].bytes_moved == 0;
    bo->bytes_moved = view ? 0 : bytes;
    free(mine);
}

/* Backward ops in reverse topological order of the forward: every consumer of a tensor has
 * made its share of the tensor's gradient before the tensor's producer reads it. */
static void tg_backward(tg_builder *b)
{
    const pl_graph *f = b->f;
    tg_add_loss(b);
    for (int p = f->n_ops - 1; p >= 0; p--) {
        int i = f->topo[p];
        const pl_op *op = &f->ops[i];
        for (int k = 0; k < op->n_outputs; k++)
            if (tg_has_grad(b, op->outputs[k])) tg_accumulate(b, op->outputs[k]);
        tg_add_bwd(b, i, false);
        tg_add_bwd(b, i, true);
    }
    for (int t = 0; t < f->n_tensors; t++)
        if (b->param[t]) tg_accumulate(b, t);
}

/* ---- step 4: the optimizer ---- */

/* Adam: reads the parameter, its gradient and two moments (resident state, as weights),
 * writes the parameter, about 10 FLOPs per element, 4 reads and 3 writes of the parameter's
 * size. SGD: 2 FLOPs per element, 2 reads and 1 write. */
static void tg_optimizer(tg_builder *b, bool sgd)
{
    pl_train_graph *t = b->t;
    const pl_graph *f = b->f;
    int n = 0;
    for (int x = 0; x < f->n_tensors; x++)
        n += b->param[x];
    t->n_params = n;
    t->param_tensor = pl_malloc((size_t)n * sizeof(int));
    t->grad_tensor = pl_malloc((size_t)n * sizeof(int));
    t->apply_op = pl_malloc((size_t)n * sizeof(int));
    char name[1024];
    for (int x = 0, p = 0; x < f->n_tensors; x++) {
        if (!b->param[x]) continue;
        const char *pn = f->tensors[x].name;
        snprintf(name, sizeof name, "%s:%s", pn, sgd ? "sgd" : "adam");
        int o = tg_add_op(b, name, sgd ? "SGD" : "Adam", PL_CLASS_ELEMENTWISE, PL_PHASE_OPT, -1);
        pl_op_add_input(b->g, o, x);
        pl_op_add_input(b->g, o, b->grad[x]);
        for (int m = 0; !sgd && m < 2; m++) {
            snprintf(name, sizeof name, "%s:%s", pn, m ? "adam_v" : "adam_m");
            pl_op_add_input(b->g, o,
                            tg_new_tensor(b, name, x, PL_TENSOR_WEIGHT | PL_TENSOR_NO_PAYLOAD));
        }
        snprintf(name, sizeof name, "%s:updated", pn);
        pl_op_add_output(b->g, o, tg_new_tensor(b, name, x, 0));
        b->g->ops[o].flops = (sgd ? 2 : 10) * tg_numel(b->g, x);
        b->g->ops[o].bytes_moved = (sgd ? 3 : 7) * tg_bytes(b->g, x);
        t->param_tensor[p] = x, t->grad_tensor[p] = b->grad[x], t->apply_op[p] = o;
        p++;
    }
}

/* ---- step 5: splittability and batch fractions ---- */

static void tg_classify(tg_builder *b)
{
    pl_train_graph *t = b->t;
    const pl_graph *g = b->g;
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        bool any = false;
        for (int j = 0; j < op->n_inputs; j++)
            any |= op->inputs[j] >= 0 && t->batched[op->inputs[j]];
        for (int k = 0; k < op->n_outputs; k++)
            any |= op->outputs[k] >= 0 && t->batched[op->outputs[k]];
        t->batch_frac[o] = any ? 1 : 0;
        if (t->phase[o] == PL_PHASE_OPT)
            t->split[o] = PL_SPLIT_OTHER;
        else if (t->split[o] != PL_SPLIT_SUM) /* SUM: set where made */
            t->split[o] = any ? PL_SPLIT_CONCAT : PL_SPLIT_OTHER;
    }
}

/* ---- the whole ---- */

static int tg_check_input(const pl_graph *f, const pl_train_opts *o, const char *where, int *b0,
                          pl_err *err)
{
    if (!f->topo) return pl_err_set(err, "%s: the forward graph is not finalized", where);
    if (o && o->batch < 0)
        return pl_err_set(err, "%s: batch %d: must be at least 1 (0: the model's own)", where,
                          o->batch);
    if (f->n_inputs < 1)
        return pl_err_set(err, "%s: no graph input, so no batch dimension to scale", where);
    const pl_tensor *x = &f->tensors[f->inputs[0]];
    if (x->rank < 1 || x->dims[0] < 1)
        return pl_err_set(err,
                          "%s: input '%s': %s; give it with --dim NAME=VALUE or --input %s=SIZES",
                          where, x->name,
                          x->rank == 0  ? "a scalar has no first dimension (the batch) to scale"
                          : x->rank < 0 ? "its shape (and so the batch) is not known"
                          : !x->dims[0] ? "its first dimension (the batch) is 0"
                                        : "its first dimension (the batch) is not known",
                          x->name);
    *b0 = (int)x->dims[0];
    return 0;
}

static void tg_builder_free(tg_builder *b)
{
    if (b->parts)
        for (int t = 0; t < b->f->n_tensors; t++)
            free(b->parts[t]);
    free(b->parts), free(b->n_parts), free(b->grad), free(b->n_contrib);
    free(b->needs), free(b->reach), free(b->act), free(b->param), free(b->flt);
}

static void tg_builder_init(tg_builder *b, const pl_graph *f, pl_train_graph *t)
{
    memset(b, 0, sizeof *b);
    size_t n = (size_t)f->n_tensors + 1;
    b->f = f, b->t = t;
    b->needs = pl_calloc(n, sizeof(bool)), b->reach = pl_calloc(n, sizeof(bool));
    b->act = pl_calloc(n, sizeof(bool)), b->param = pl_calloc(n, sizeof(bool));
    b->flt = pl_calloc(n, sizeof(bool));
    b->n_contrib = pl_calloc(n, sizeof(int)), b->n_parts = pl_calloc(n, sizeof(int));
    b->parts = pl_calloc(n, sizeof(int *));
    b->grad = pl_malloc(n * sizeof(int));
    for (int x = 0; x < f->n_tensors; x++)
        b->grad[x] = -1;
    b->cap_tensors = (int)n;
    t->batched = pl_calloc(n, sizeof(bool));
}

static int tg_build(tg_builder *b, const pl_train_opts *o, int b0, pl_err *err)
{
    const pl_graph *f = b->f;
    pl_train_graph *t = b->t;
    t->model_batch = b0;
    t->batch = o && o->batch > 0 ? o->batch : b0;
    b->s = (double)t->batch / b0;
    tg_mark_batched(b, b0);
    tg_mark_grads(b);
    int n_params = 0;
    for (int x = 0; x < f->n_tensors; x++)
        n_params += b->param[x];
    if (!n_params)
        return pl_err_set(err,
                          "%s: no trainable weight (no float initializer that the outputs "
                          "depend on): nothing to train",
                          b->where);
    tg_count_contrib(b);
    t->g = b->g = pl_graph_new(f->name);
    b->g->info = f->info;
    tg_copy_tensors(b, t->batch, b0);
    for (int i = 0; i < f->n_ops; i++)
        tg_copy_op(b, i);
    t->n_fwd = f->n_ops;
    tg_backward(b);
    tg_optimizer(b, o && o->sgd);
    tg_classify(b);
    char where[1100];
    snprintf(where, sizeof where, "training graph of %s", b->where);
    return pl_graph_finalize(b->g, where, err);
}

int pl_train_graph_build(const pl_graph *fwd, const pl_train_opts *o, pl_train_graph **out,
                         pl_err *err)
{
    *out = NULL;
    const char *where = fwd->path ? fwd->path : fwd->name;
    int b0 = 0;
    if (tg_check_input(fwd, o, where, &b0, err) < 0) return -1;
    pl_train_graph *t = pl_calloc(1, sizeof *t);
    tg_builder b;
    tg_builder_init(&b, fwd, t);
    b.where = where;
    int rc = tg_build(&b, o, b0, err);
    tg_builder_free(&b);
    if (rc < 0) {
        pl_train_graph_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void pl_train_graph_free(pl_train_graph *t)
{
    if (!t) return;
    pl_graph_free(t->g);
    free(t->phase), free(t->split), free(t->fwd_of), free(t->batch_frac), free(t->batched);
    free(t->param_tensor), free(t->grad_tensor), free(t->apply_op);
    free(t);
}
