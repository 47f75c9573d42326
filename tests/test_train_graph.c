/* test_train_graph.c: the training graph (issue 16, docs/train.md "The training graph"): the
 * backward and optimizer ops of a Dense network, a Conv network, an attention block and a
 * weight read twice, their FLOPs and bytes worked out by hand at two batch sizes, the tensors
 * kept alive from forward to backward, the splittability classes, every zoo model, and the
 * inputs refused. */
#include "testutil.h"

#include "placer/cost.h"
#include "placer/sim.h"
#include "placer/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int shaped(pl_graph *g, const char *name, int rank, const int64_t *dims, unsigned flags)
{
    int t = pl_graph_tensor(g, name);
    pl_tensor_set_shape(&g->tensors[t], PL_DT_FLOAT, rank, dims);
    g->tensors[t].flags |= flags;
    return t;
}

static void attr_ints(pl_graph *g, int o, const char *name, int n, const int64_t *v)
{
    pl_attr *a = pl_op_add_attr(g, o, name, PL_ATTR_INTS);
    a->ints = malloc(n * sizeof *v);
    memcpy(a->ints, v, n * sizeof *v);
    a->n = n;
}

static void finish(pl_graph *g, const char *out)
{
    pl_graph_add_output(g, pl_graph_find_tensor(g, out));
    pl_err err = {""};
    if (pl_graph_finalize(g, "t", &err) < 0 || pl_graph_infer(g, &err) < 0) fail_msg("%s", err.msg);
}

static pl_train_graph *build(const pl_graph *g, int batch, bool sgd)
{
    pl_train_opts o = {.batch = batch, .sgd = sgd};
    pl_train_graph *t = NULL;
    pl_err err = {""};
    if (pl_train_graph_build(g, &o, &t, &err) < 0) fail_msg("%s", err.msg);
    assert_non_null(t->g->topo); /* finalized: a DAG */
    return t;
}

static int op_of(const pl_train_graph *t, const char *name)
{
    int o = pl_graph_find_op(t->g, name);
    if (o < 0) fail_msg("no op '%s' in the training graph", name);
    return o;
}

static const pl_op *op(const pl_train_graph *t, const char *name)
{
    return &t->g->ops[op_of(t, name)];
}

static bool reads(const pl_train_graph *t, const char *o, const char *tensor)
{
    const pl_op *x = op(t, o);
    int k = pl_graph_find_tensor(t->g, tensor);
    for (int j = 0; j < x->n_inputs; j++)
        if (x->inputs[j] == k) return true;
    return false;
}

static double phase_flops(const pl_train_graph *t, pl_train_phase p)
{
    double s = 0;
    for (int i = 0; i < t->g->n_ops; i++)
        if (t->phase[i] == p) s += t->g->ops[i].flops;
    return s;
}

static int64_t tbytes(const pl_train_graph *t, const char *name)
{
    int k = pl_graph_find_tensor(t->g, name);
    if (k < 0) fail_msg("no tensor '%s'", name);
    return t->g->tensors[k].bytes;
}

/* Two Dense layers: x[1,3] . W1[3,4] + b1 -> Relu -> . W2[4,2] -> out[1,2]. */
static pl_graph *dense_graph(void)
{
    pl_graph *g = pl_graph_new("dense");
    pl_graph_add_input(g, shaped(g, "x", 2, (int64_t[]){1, 3}, 0));
    shaped(g, "W1", 2, (int64_t[]){3, 4}, PL_TENSOR_WEIGHT);
    shaped(g, "b1", 1, (int64_t[]){4}, PL_TENSOR_WEIGHT);
    shaped(g, "W2", 2, (int64_t[]){4, 2}, PL_TENSOR_WEIGHT);
    tu_op(g, "M1", "MatMul", "x,W1", "h");
    tu_op(g, "A1", "Add", "h,b1", "z");
    tu_op(g, "R1", "Relu", "z", "y");
    tu_op(g, "M2", "MatMul", "y,W2", "out");
    finish(g, "out");
    return g;
}

/* At batch B (the model's is 1): forward M1 2*B*3*4 = 24B, A1 4B, R1 4B, M2 2*B*4*2 = 16B:
 * 48B. Backward: the loss 5 * 2B = 10B; M2:grad_in and M2:grad_w 16B each (= M2's forward);
 * R1:grad_in 4B; A1:grad_in 4B, A1:grad_w (the bias: sum of dz) 4B; M1:grad_w 24B; no
 * M1:grad_in, since x needs no gradient. 78B in all. */
static void check_dense(int B)
{
    pl_graph *g = dense_graph();
    pl_train_graph *t = build(g, B, false);
    assert_int_equal(t->batch, B);
    assert_int_equal(t->model_batch, 1);
    assert_int_equal(t->n_fwd, 4);
    assert_int_equal(t->g->n_ops, 4 + 1 + 6 + 3);
    for (int i = 0; i < 4; i++) /* op i is the model's op i */
        assert_string_equal(t->g->ops[i].name, g->ops[i].name);
    assert_close(op(t, "M1")->flops, 24.0 * B, 1e-12);
    assert_close(phase_flops(t, PL_PHASE_FWD), 48.0 * B, 1e-12);
    assert_close(op(t, "M2:grad_in")->flops, 16.0 * B, 1e-12);
    assert_close(op(t, "M2:grad_w")->flops, 16.0 * B, 1e-12);
    assert_close(op(t, "M1:grad_w")->flops, 24.0 * B, 1e-12);
    assert_close(op(t, "A1:grad_w")->flops, 4.0 * B, 1e-12);
    assert_true(pl_graph_find_op(t->g, "M1:grad_in") < 0);
    assert_close(phase_flops(t, PL_PHASE_BWD), 78.0 * B, 1e-12);
    /* Adam: 10 FLOPs per element of W1 (12), b1 (4), W2 (8); 7 passes over 48, 16, 32 bytes */
    assert_close(phase_flops(t, PL_PHASE_OPT), 240, 1e-12);
    assert_close(op(t, "W1:adam")->bytes_moved, 7 * 48, 1e-12);
    /* bytes: M1:grad_w reads dh (16B), x (12B) and writes dW1 (48, not batched) */
    assert_close(op(t, "M1:grad_w")->bytes_moved, 28.0 * B + 48, 1e-12);
    assert_close(op(t, "M1")->bytes_moved, 28.0 * B + 48, 1e-12);
    /* kept alive: the weight gradients read the forward inputs, the input gradient the
     * weight, Relu's gradient its output */
    assert_true(reads(t, "M1:grad_w", "x"));
    assert_true(reads(t, "M2:grad_w", "y"));
    assert_true(reads(t, "M2:grad_in", "W2"));
    assert_false(reads(t, "M2:grad_in", "y"));
    assert_true(reads(t, "R1:grad_in", "y"));
    assert_true(reads(t, "M2:grad_w", "out:grad"));
    assert_true(reads(t, "loss", "out"));
    /* tensors: batched ones scaled, weights not; Adam's moments resident, as weights */
    assert_int_equal(tbytes(t, "x"), 12 * B);
    assert_int_equal(tbytes(t, "W1"), 48);
    assert_int_equal(tbytes(t, "W1:adam_m"), 48);
    assert_int_equal(tbytes(t, "W1:adam_v"), 48);
    assert_true(t->g->tensors[pl_graph_find_tensor(t->g, "W1:adam_v")].flags & PL_TENSOR_WEIGHT);
    assert_true(t->batched[pl_graph_find_tensor(t->g, "y")]);
    assert_false(t->batched[pl_graph_find_tensor(t->g, "W1")]);
    /* parameters */
    assert_int_equal(t->n_params, 3);
    for (int p = 0; p < 3; p++) {
        const char *pn = t->g->tensors[t->param_tensor[p]].name;
        char buf[64];
        snprintf(buf, sizeof buf, "%s:grad", pn);
        assert_string_equal(t->g->tensors[t->grad_tensor[p]].name, buf);
        snprintf(buf, sizeof buf, "%s:adam", pn);
        assert_string_equal(t->g->ops[t->apply_op[p]].name, buf);
        assert_int_equal(t->phase[t->apply_op[p]], PL_PHASE_OPT);
        assert_int_equal(t->split[t->apply_op[p]], PL_SPLIT_OTHER);
        assert_true(t->batch_frac[t->apply_op[p]] == 0);
    }
    /* splittability, phases, fwd_of */
    assert_int_equal(t->split[op_of(t, "M1")], PL_SPLIT_CONCAT);
    assert_int_equal(t->split[op_of(t, "M2:grad_in")], PL_SPLIT_CONCAT);
    assert_int_equal(t->split[op_of(t, "M2:grad_w")], PL_SPLIT_SUM);
    assert_int_equal(t->split[op_of(t, "A1:grad_w")], PL_SPLIT_SUM);
    assert_int_equal(t->phase[op_of(t, "M2:grad_w")], PL_PHASE_BWD);
    assert_int_equal(t->fwd_of[op_of(t, "M2:grad_w")], op_of(t, "M2"));
    assert_int_equal(t->fwd_of[op_of(t, "M1")], -1);
    assert_true(t->batch_frac[op_of(t, "M1:grad_w")] == 1);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

static void test_dense_batch1(void **state)
{
    (void)state;
    check_dense(1);
}

static void test_dense_batch8(void **state)
{
    (void)state;
    check_dense(8);
}

/* SGD: no moments; 2 FLOPs per element (24 elements), 3 passes over the bytes. */
static void test_dense_sgd(void **state)
{
    (void)state;
    pl_graph *g = dense_graph();
    pl_train_graph *t = build(g, 0, true);
    assert_int_equal(t->batch, 1);
    assert_close(phase_flops(t, PL_PHASE_OPT), 48, 1e-12);
    assert_close(op(t, "W1:sgd")->bytes_moved, 3 * 48, 1e-12);
    assert_true(pl_graph_find_tensor(t->g, "W1:adam_m") < 0);
    assert_int_equal(op(t, "W1:sgd")->n_inputs, 2);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

/* Two 3x3 convs, padded: x[1,3,8,8] -> C1 (W1[4,3,3,3], B1[4]) -> Relu -> C2 (W2[2,4,3,3]). */
static pl_graph *conv_graph(void)
{
    pl_graph *g = pl_graph_new("conv");
    pl_graph_add_input(g, shaped(g, "x", 4, (int64_t[]){1, 3, 8, 8}, 0));
    shaped(g, "W1", 4, (int64_t[]){4, 3, 3, 3}, PL_TENSOR_WEIGHT);
    shaped(g, "B1", 1, (int64_t[]){4}, PL_TENSOR_WEIGHT);
    shaped(g, "W2", 4, (int64_t[]){2, 4, 3, 3}, PL_TENSOR_WEIGHT);
    int c1 = tu_op(g, "C1", "Conv", "x,W1,B1", "c");
    tu_op(g, "R", "Relu", "c", "r");
    int c2 = tu_op(g, "C2", "Conv", "r,W2", "out");
    attr_ints(g, c1, "pads", 4, (int64_t[]){1, 1, 1, 1});
    attr_ints(g, c2, "pads", 4, (int64_t[]){1, 1, 1, 1});
    finish(g, "out");
    return g;
}

/* At batch B: C2 = 2 * (B*2*8*8 outputs) * (4*3*3) = 9216B; its input and weight gradients
 * cost as much each. C1's weight gradient costs C1's forward (its 27-MAC products) plus the
 * bias gradient, a sum over dc's 256B elements; no input gradient (x is data). */
static void check_conv(int B)
{
    pl_graph *g = conv_graph();
    pl_train_graph *t = build(g, B, false);
    double c1 = g->ops[0].flops * B;
    assert_close(op(t, "C2")->flops, 9216.0 * B, 1e-12);
    assert_close(op(t, "C2:grad_in")->flops, 9216.0 * B, 1e-12);
    assert_close(op(t, "C2:grad_w")->flops, 9216.0 * B, 1e-12);
    assert_close(op(t, "C1")->flops, c1, 1e-12);
    assert_close(op(t, "C1:grad_w")->flops, c1 + 256.0 * B, 1e-12);
    assert_true(pl_graph_find_op(t->g, "C1:grad_in") < 0);
    assert_true(reads(t, "C1:grad_w", "x"));
    assert_true(reads(t, "C2:grad_w", "r"));
    assert_true(reads(t, "C2:grad_in", "W2"));
    /* fwd 4 + loss + C2 in/w + R in + C1 w + 3 Adam */
    assert_int_equal(t->g->n_ops, 3 + 1 + 4 + 3);
    assert_int_equal(t->n_params, 3);
    /* C1:grad_w reads dc (4*64*4 B bytes) and x (3*64*4 B), writes dW1 (432) and dB1 (16) */
    assert_close(op(t, "C1:grad_w")->bytes_moved, 1024.0 * B + 768.0 * B + 432 + 16, 1e-12);
    assert_int_equal(tbytes(t, "W1:adam_m"), 432);
    assert_int_equal(tbytes(t, "r"), 1024 * B);
    assert_int_equal(t->split[op_of(t, "C1:grad_w")], PL_SPLIT_SUM);
    assert_int_equal(t->split[op_of(t, "C2:grad_in")], PL_SPLIT_CONCAT);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

static void test_conv(void **state)
{
    (void)state;
    check_conv(1);
    check_conv(8);
}

/* Attention: q, k, v = x Wq, x Wk, x Wv; s = q k^T; p = softmax(s); o = p v. The three
 * projections get weight gradients only; both products of activations get one input-gradient
 * op for both operands (2x their forward) and no weight gradient. */
static void test_attention(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("attn");
    pl_graph_add_input(g, shaped(g, "x", 3, (int64_t[]){1, 4, 8}, 0));
    const char *w[3] = {"Wq", "Wk", "Wv"};
    for (int i = 0; i < 3; i++)
        shaped(g, w[i], 2, (int64_t[]){8, 8}, PL_TENSOR_WEIGHT);
    tu_op(g, "Q", "MatMul", "x,Wq", "q");
    tu_op(g, "K", "MatMul", "x,Wk", "k");
    tu_op(g, "V", "MatMul", "x,Wv", "v");
    int tr = tu_op(g, "KT", "Transpose", "k", "kt");
    attr_ints(g, tr, "perm", 3, (int64_t[]){0, 2, 1});
    tu_op(g, "S", "MatMul", "q,kt", "s");
    tu_op(g, "P", "Softmax", "s", "p");
    tu_op(g, "O", "MatMul", "p,v", "o");
    finish(g, "o");
    pl_train_graph *t = build(g, 8, false);
    assert_int_equal(t->n_params, 3);
    const char *gw[] = {"Q:grad_w", "K:grad_w", "V:grad_w"};
    const char *none[] = {"Q:grad_in", "K:grad_in", "V:grad_in", "S:grad_w",
                          "O:grad_w",  "P:grad_w",  "KT:grad_w"};
    for (int i = 0; i < 3; i++) {
        assert_true(reads(t, gw[i], "x"));
        assert_close(op(t, gw[i])->flops, 2.0 * 8 * 4 * 8 * 8, 1e-12);
    }
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        assert_true(pl_graph_find_op(t->g, none[i]) < 0);
    /* S = q kt: 2*8*4*4*8 = 2048 forward; the gradient of both operands 4096, reading both */
    assert_close(op(t, "S")->flops, 2048, 1e-12);
    assert_close(op(t, "S:grad_in")->flops, 4096, 1e-12);
    assert_true(reads(t, "S:grad_in", "q") && reads(t, "S:grad_in", "kt"));
    assert_true(reads(t, "O:grad_in", "p") && reads(t, "O:grad_in", "v"));
    assert_int_equal(op(t, "O:grad_in")->n_outputs, 2);
    assert_true(reads(t, "P:grad_in", "p")); /* softmax's derivative is from its output */
    assert_close(op(t, "P:grad_in")->flops, op(t, "P")->flops, 1e-12);
    assert_true(reads(t, "KT:grad_in", "kt:grad"));
    assert_int_equal(t->split[op_of(t, "S:grad_in")], PL_SPLIT_CONCAT);
    /* fwd 7 + loss + O, P, S, KT input grads + 3 weight grads + 3 Adam */
    assert_int_equal(t->g->n_ops, 7 + 1 + 4 + 3 + 3);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

/* A weight read twice, once through a Transpose: h = x W; out = h W^T. W's gradient is the
 * sum (an AddN, class sum) of M1's share and the Transpose's; one Adam op. The Transpose
 * works on a weight only: class other, no batch in its cost. */
static void test_shared_weight(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("tied");
    pl_graph_add_input(g, shaped(g, "x", 2, (int64_t[]){1, 3}, 0));
    shaped(g, "W", 2, (int64_t[]){3, 3}, PL_TENSOR_WEIGHT);
    tu_op(g, "M1", "MatMul", "x,W", "h");
    tu_op(g, "T", "Transpose", "W", "Wt");
    tu_op(g, "M2", "MatMul", "h,Wt", "out");
    finish(g, "out");
    pl_train_graph *t = build(g, 4, false);
    assert_int_equal(t->n_params, 1);
    int acc = op_of(t, "W:grad_acc");
    assert_int_equal(t->split[acc], PL_SPLIT_SUM);
    assert_int_equal(t->g->ops[acc].n_inputs, 2);
    assert_true(reads(t, "W:grad_acc", "W:grad@M1") && reads(t, "W:grad_acc", "W:grad@T"));
    assert_string_equal(t->g->tensors[t->grad_tensor[0]].name, "W:grad");
    assert_int_equal(t->g->tensors[t->grad_tensor[0]].producer, acc);
    assert_close(t->g->ops[acc].flops, 9, 1e-12);
    assert_int_equal(t->split[op_of(t, "T")], PL_SPLIT_OTHER);
    assert_true(t->batch_frac[op_of(t, "T")] == 0);
    assert_int_equal(t->split[op_of(t, "T:grad_w")], PL_SPLIT_SUM);
    assert_int_equal(t->split[op_of(t, "M2:grad_w")], PL_SPLIT_SUM);
    assert_true(reads(t, "M2:grad_w", "h"));
    int n_opt = 0;
    for (int i = 0; i < t->g->n_ops; i++)
        n_opt += t->phase[i] == PL_PHASE_OPT;
    assert_int_equal(n_opt, 1);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

/* Every zoo model: a DAG, each parameter with one gradient made by a backward op and one
 * optimizer op reading it, the forward ops the model's, and backward FLOPs 1.5-3x the
 * forward's. gcn_cora's is 1x: each of its products has one operand that is data (the
 * features, the adjacency), whose gradient is not needed. */
static void test_zoo(void **state)
{
    (void)state;
    const char *models[] = {"inception_v3",       "resnet50",    "resnext50_32x4d",
                            "mobilenet_v3_large", "vgg19",       "bert_base",
                            "gpt2_small",         "transformer", "rnnlm",
                            "rnnlm_unrolled",     "gcn_cora",    "nmt_seq2seq"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        char path[256];
        snprintf(path, sizeof path, "models/%s.onnx", models[m]);
        pl_graph *g = tu_load(path);
        pl_train_graph *t = build(g, 0, false);
        assert_int_equal(t->n_fwd, g->n_ops);
        double reread = 0; /* an RNN's re-reads of R, priced from a cache (pl_op.bytes_reread) */
        for (int i = 0; i < g->n_ops; i++) {
            assert_string_equal(t->g->ops[i].name, g->ops[i].name);
            assert_close(t->g->ops[i].flops, g->ops[i].flops, 1e-12);
            assert_true(t->g->ops[i].bytes_reread == g->ops[i].bytes_reread);
            assert_true(t->g->ops[i].reread_tensor_bytes == g->ops[i].reread_tensor_bytes);
            reread += g->ops[i].bytes_reread;
        }
        if (!strcmp(models[m], "rnnlm") || !strcmp(models[m], "nmt_seq2seq"))
            assert_true(reread > 0);
        int *n_apply = calloc(t->g->n_tensors, sizeof(int));
        for (int i = 0; i < t->g->n_ops; i++)
            if (t->phase[i] == PL_PHASE_OPT) n_apply[t->g->ops[i].inputs[0]]++;
        for (int p = 0; p < t->n_params; p++) {
            const pl_tensor *gt = &t->g->tensors[t->grad_tensor[p]];
            assert_true(gt->producer >= t->n_fwd);
            assert_int_equal(t->phase[gt->producer], PL_PHASE_BWD);
            assert_int_equal(t->split[gt->producer], PL_SPLIT_SUM);
            assert_int_equal(n_apply[t->param_tensor[p]], 1);
            assert_int_equal(t->g->ops[t->apply_op[p]].inputs[1], t->grad_tensor[p]);
        }
        free(n_apply);
        double ratio = phase_flops(t, PL_PHASE_BWD) / phase_flops(t, PL_PHASE_FWD);
        printf("%-20s ops %5d -> %5d, params %3d, backward/forward FLOPs %.3f\n", models[m],
               g->n_ops, t->g->n_ops, t->n_params, ratio);
        if (!strcmp(models[m], "gcn_cora")) {
            assert_true(ratio > 0.9 && ratio < 1.1);
        } else {
            assert_true(ratio >= 1.5 && ratio <= 3);
        }
        pl_train_graph_free(t);
        pl_graph_free(g);
    }
}

/* At batch 96 resnet50's forward FLOPs are 96 times batch 1's (every op carries the batch). */
static void test_zoo_batch(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/resnet50.onnx");
    pl_train_graph *t1 = build(g, 1, false), *t96 = build(g, 96, false);
    assert_close(phase_flops(t96, PL_PHASE_FWD), 96 * phase_flops(t1, PL_PHASE_FWD), 1e-9);
    assert_close(phase_flops(t96, PL_PHASE_BWD), 96 * phase_flops(t1, PL_PHASE_BWD), 1e-9);
    assert_close(phase_flops(t96, PL_PHASE_OPT), phase_flops(t1, PL_PHASE_OPT), 1e-12);
    int in = g->inputs[0];
    assert_int_equal(t96->g->tensors[in].dims[0], 96);
    assert_int_equal(t96->g->tensors[in].bytes, 96 * g->tensors[in].bytes);
    pl_train_graph_free(t1);
    pl_train_graph_free(t96);
    pl_graph_free(g);
}

/* Peak memory of g on one V100 with every op there (memory not enforced). */
static double peak_on_gpu(const pl_graph *g, const pl_cluster *c)
{
    pl_cost *k = tu_cost(g, c);
    pl_plan *p = pl_plan_new(g->n_ops, c->n_devs);
    int gpu = pl_cluster_find(c, "gpu0");
    for (int i = 0; i < g->n_ops; i++)
        p->dev[i] = gpu;
    pl_sim_opts o = {.ignore_memory = true};
    pl_sim_result r;
    pl_err err = {""};
    if (pl_simulate(k, p, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_true(isfinite(r.makespan_s) && r.makespan_s > 0);
    double peak = r.peak_mem_bytes[gpu];
    pl_sim_result_free(&r);
    pl_plan_free(p);
    pl_cost_free(k);
    return peak;
}

/* The cost model and the simulator take the training graph as they take a model. On one GPU,
 * resnet50's training holds the parameters, Adam's two moments (2 x 102 MB more than SGD)
 * and the activations the backward pass reads: at batch 1, many times the activations of
 * inference, which frees each one after its last forward reader. */
static void test_simulated(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/nvlink-8gpu.json", &err);
    if (!c) fail_msg("%s", err.msg);
    pl_graph *g = tu_load("models/resnet50.onnx");
    pl_train_graph *t = build(g, 32, false);
    double params = 0;
    for (int p = 0; p < t->n_params; p++)
        params += t->g->tensors[t->param_tensor[p]].bytes;
    pl_train_graph *f = build(g, 32, true), *t1 = build(g, 1, true);
    double train = peak_on_gpu(t->g, c), sgd = peak_on_gpu(f->g, c);
    double infer1 = peak_on_gpu(g, c) - params, train1 = peak_on_gpu(t1->g, c) - params;
    printf("resnet50 batch 1 beyond the parameters: inference %.1f MB, training (SGD) %.1f MB\n",
           infer1 / 1e6, train1 / 1e6);
    assert_true(train1 > 5 * infer1);
    pl_train_graph_free(t1);
    printf("resnet50 batch 32 on one V100: peak %.0f MB with Adam, %.0f MB with SGD, "
           "parameters %.0f MB\n",
           train / 1e6, sgd / 1e6, params / 1e6);
    assert_true(train >= 3 * params);
    assert_close(train - sgd, 2 * params, 0.02); /* Adam's two moments */
    pl_train_graph_free(t);
    pl_train_graph_free(f);
    pl_graph_free(g);
    pl_cluster_free(c);
}

static void expect_refused(const pl_graph *g, int batch, const char *needle)
{
    pl_train_opts o = {.batch = batch};
    pl_train_graph *t = (pl_train_graph *)1;
    pl_err err = {""};
    assert_int_equal(pl_train_graph_build(g, &o, &t, &err), -1);
    assert_null(t);
    assert_contains(err.msg, needle);
}

/* x . W1 -> an op of a domain placer has no rule for (its output's dtype is not known) -> . W2.
 * The gradient passes through it, as it does through a typed output: both weights train
 * (before, W1 was left out in silence, and a model whose every weight sat before such an op
 * was refused as having no trainable weight). */
static void test_untyped_op_passes_gradients(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("untyped");
    pl_graph_add_input(g, shaped(g, "x", 2, (int64_t[]){1, 3}, 0));
    shaped(g, "W1", 2, (int64_t[]){3, 4}, PL_TENSOR_WEIGHT);
    shaped(g, "W2", 2, (int64_t[]){4, 2}, PL_TENSOR_WEIGHT);
    tu_op(g, "M1", "MatMul", "x,W1", "h");
    int frob = tu_op(g, "F", "Frob", "h", "z");
    free(g->ops[frob].domain);
    g->ops[frob].domain = strdup("com.example");
    tu_op(g, "M2", "MatMul", "z,W2", "out");
    finish(g, "out");
    assert_int_equal(g->tensors[pl_graph_find_tensor(g, "z")].dtype, PL_DT_UNDEFINED);
    pl_train_graph *t = build(g, 4, false);
    assert_true(pl_graph_find_op(t->g, "W1:adam") >= 0);
    assert_true(pl_graph_find_op(t->g, "W2:adam") >= 0);
    assert_true(pl_graph_find_op(t->g, "M1:grad_w") >= 0);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

static void test_refused(void **state)
{
    (void)state;
    pl_graph *g = dense_graph();
    expect_refused(g, -2, "dense: batch -2: must be at least 1");
    pl_graph_free(g);
    /* no weight at all; and a weight that is an integer table */
    g = pl_graph_new("noweights");
    pl_graph_add_input(g, shaped(g, "x", 2, (int64_t[]){1, 3}, 0));
    tu_op(g, "R", "Relu", "x", "y");
    finish(g, "y");
    expect_refused(g, 4, "noweights: no trainable weight");
    pl_graph_free(g);
    g = pl_graph_new("intw");
    pl_graph_add_input(g, shaped(g, "x", 2, (int64_t[]){1, 3}, 0));
    int w = shaped(g, "W", 2, (int64_t[]){3, 4}, PL_TENSOR_WEIGHT);
    g->tensors[w].dtype = PL_DT_INT32;
    tu_op(g, "M", "MatMul", "x,W", "y");
    finish(g, "y");
    expect_refused(g, 4, "intw: no trainable weight");
    pl_graph_free(g);
    /* an input whose batch is not known */
    g = pl_graph_new("open");
    pl_graph_add_input(g, shaped(g, "x", 2, (int64_t[]){PL_DIM_UNKNOWN, 3}, 0));
    shaped(g, "W", 2, (int64_t[]){3, 4}, PL_TENSOR_WEIGHT);
    tu_op(g, "M", "MatMul", "x,W", "y");
    finish(g, "y");
    expect_refused(g, 4, "open: input 'x': its first dimension (the batch) is not known");
    pl_graph_free(g);
    /* a graph not finalized (no topological order yet) */
    g = pl_graph_new("raw");
    pl_graph_add_input(g, shaped(g, "x", 2, (int64_t[]){1, 3}, 0));
    shaped(g, "W", 2, (int64_t[]){3, 4}, PL_TENSOR_WEIGHT);
    tu_op(g, "M", "MatMul", "x,W", "y");
    expect_refused(g, 4, "raw: the forward graph is not finalized");
    pl_graph_free(g);
}

static void test_class_names(void **state)
{
    (void)state;
    assert_string_equal(pl_split_class_name(PL_SPLIT_CONCAT), "concat");
    assert_string_equal(pl_split_class_name(PL_SPLIT_SUM), "sum");
    assert_string_equal(pl_split_class_name(PL_SPLIT_OTHER), "other");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_batch1), cmocka_unit_test(test_dense_batch8),
        cmocka_unit_test(test_dense_sgd),    cmocka_unit_test(test_conv),
        cmocka_unit_test(test_attention),    cmocka_unit_test(test_shared_weight),
        cmocka_unit_test(test_zoo),          cmocka_unit_test(test_zoo_batch),
        cmocka_unit_test(test_simulated),    cmocka_unit_test(test_refused),
        cmocka_unit_test(test_class_names),  cmocka_unit_test(test_untyped_op_passes_gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
