/* test_train_baselines.c: the baselines as the paper ran them (docs/train.md, "Baselines"), on
 * two Dense layers built by hand, data parallel on two V100s linked at 1 GB/s: DP-NCCL's
 * AllReduces as dataflow nodes on one stream (the first starts before the second gradient is
 * made, the second waits for the first), Horovod's fusion by cycle and threshold, and "DP,
 * synchronised after backward", each with start and end times computed by hand. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x -> A(W1) -> h -> B(W2) -> y -> loss -> dy; B's weight gradient dW2 (4 MB) and input
 * gradient dh, then A's weight gradient dW1 (4 MB) from dh; plain SGD applies each.
 * Whole-batch times 2 ms (forward and backward) and 1 ms (SGD, not batched): a replica on
 * half the batch runs A 0-1, B 1-2, B:grad_w 2-3 (dW2 made), B:grad_x 3-4, A:grad_w from 4
 * (dW1 made at 5, or a few microseconds later behind a collective's launch). */
static void build(tu_dense *f)
{
    memset(f, 0, sizeof *f);
    pl_graph *g = pl_graph_new("two_dense");
    int x = tu_dense_tensor(g, "x", 8e6, 0), W1 = tu_dense_tensor(g, "W1", 4e6, PL_TENSOR_WEIGHT);
    int W2 = tu_dense_tensor(g, "W2", 4e6, PL_TENSOR_WEIGHT), h = tu_dense_tensor(g, "h", 8e6, 0);
    int y = tu_dense_tensor(g, "y", 8e6, 0), dy = tu_dense_tensor(g, "dy", 8e6, 0),
        dh = tu_dense_tensor(g, "dh", 8e6, 0);
    int dW1 = tu_dense_tensor(g, "dW1", 4e6, 0), dW2 = tu_dense_tensor(g, "dW2", 4e6, 0);
    int W1u = tu_dense_tensor(g, "W1:updated", 4e6, 0),
        W2u = tu_dense_tensor(g, "W2:updated", 4e6, 0);
    pl_graph_add_input(g, x);
    tu_dense_op(g, "A", 2, (int[]){x, W1}, 2, h);
    tu_dense_op(g, "B", 2, (int[]){h, W2}, 2, y);
    tu_dense_op(g, "loss", 0, (int[]){y}, 1, dy);
    tu_dense_op(g, "B:grad_w", 2, (int[]){h, dy}, 2, dW2);
    tu_dense_op(g, "B:grad_x", 2, (int[]){dy, W2}, 2, dh);
    tu_dense_op(g, "A:grad_w", 2, (int[]){x, dh}, 2, dW1);
    tu_dense_op(g, "W2:sgd", 1, (int[]){W2, dW2}, 2, W2u);
    tu_dense_op(g, "W1:sgd", 1, (int[]){W1, dW1}, 2, W1u);
    pl_graph_add_output(g, W1u), pl_graph_add_output(g, W2u);
    pl_err err = {""};
    if (pl_graph_finalize(g, "two_dense", &err) < 0) fail_msg("%s", err.msg);
    pl_train_graph *t = &f->t;
    t->g = g, t->n_fwd = 2, t->batch = 8, t->model_batch = 8;
    static pl_train_phase phase[] = {PL_PHASE_FWD, PL_PHASE_FWD, PL_PHASE_BWD, PL_PHASE_BWD,
                                     PL_PHASE_BWD, PL_PHASE_BWD, PL_PHASE_OPT, PL_PHASE_OPT};
    static pl_split_class split[] = {PL_SPLIT_CONCAT, PL_SPLIT_CONCAT, PL_SPLIT_CONCAT,
                                     PL_SPLIT_SUM,    PL_SPLIT_CONCAT, PL_SPLIT_SUM,
                                     PL_SPLIT_OTHER,  PL_SPLIT_OTHER};
    static int fwd_of[] = {-1, -1, 1, 1, 1, 0, -1, -1};
    static double frac[] = {1, 1, 1, 1, 1, 1, 0, 0};
    t->phase = phase, t->split = split, t->fwd_of = fwd_of, t->batch_frac = frac;
    t->batched = pl_calloc(g->n_tensors, sizeof *t->batched);
    t->batched[x] = t->batched[h] = t->batched[y] = t->batched[dy] = t->batched[dh] = true;
    static int pt[2], gt[2], ap[2];
    pt[0] = W1, gt[0] = dW1, ap[0] = 7, pt[1] = W2, gt[1] = dW2, ap[1] = 6;
    t->n_params = 2, t->param_tensor = pt, t->grad_tensor = gt, t->apply_op = ap;
    tu_dense_ctx(f, NULL, 12e-3, 8e6);
}

/* One simulated iteration of s, recorded: per AllReduce on g0 in stream order, the start of
 * its first send and the end of its gather (ms); their count; the iteration (ms). */
typedef struct timing {
    int n;
    double send_ms[4], gather_ms[4], iteration_ms;
    double dW2_ms, dW1_ms; /* when g0's replica made each gradient */
} timing;

static timing simulate(tu_dense *f, const pl_train_strategy *s)
{
    pl_graph *g;
    pl_plan *p;
    pl_err err = {""};
    if (pl_train_compile(&f->x, s, &g, &p, NULL, &err) < 0) fail_msg("%s", err.msg);
    pl_cost_params cp;
    pl_cost_params_default(&cp);
    cp.runtime_fusion = PL_FUSION_NONE; /* as pl_train_evaluate prices it */
    pl_cost *k = pl_cost_new_placed(g, f->c, &cp, p->dev, &err);
    if (!k) fail_msg("%s", err.msg);
    pl_sim_result r;
    if (pl_simulate(k, p, &(pl_sim_opts){.record = true}, &r, &err) < 0) fail_msg("%s", err.msg);
    timing t = {.iteration_ms = r.makespan_s * 1e3};
    int gathers = 0;
    for (int op = 0; op < g->n_ops; op++) {
        if (p->dev[op] != 0) continue;
        if (!strcmp(g->ops[op].name, "B:grad_w@g0")) t.dW2_ms = r.op_end_s[op] * 1e3;
        if (!strcmp(g->ops[op].name, "A:grad_w@g0")) t.dW1_ms = r.op_end_s[op] * 1e3;
        if (!strcmp(g->ops[op].type, "AllReduceSend") && t.n < 4)
            t.send_ms[t.n++] = r.op_start_s[op] * 1e3;
        if (!strcmp(g->ops[op].type, "AllReduceGather") && gathers < 4)
            t.gather_ms[gathers++] = r.op_end_s[op] * 1e3;
    }
    assert_int_equal(gathers, t.n);
    pl_sim_result_free(&r);
    pl_cost_free(k), pl_plan_free(p), pl_graph_free(g);
    return t;
}

/* The inserted ops (sends, reduces, gathers) cost tens of microseconds: within 1 %. */
#define TOL 1e-2

/* t has n AllReduces, the k-th from ms[2k] (its send's start on g0) to ms[2k+1] (its gather's
 * end), and the iteration takes it_ms. */
static void expect(const timing *t, int n, const double *ms, double it_ms)
{
    assert_int_equal(t->n, n);
    for (int k = 0; k < n; k++) {
        assert_close(t->send_ms[k], ms[2 * k], TOL);
        assert_close(t->gather_ms[k], ms[2 * k + 1], TOL);
    }
    assert_close(t->iteration_ms, it_ms, TOL);
}

/* DP-NCCL: dW2 is made at 3 ms; its AllReduce's launch is an op of the GPU's queue, which
 * runs first what was ready first (sim.h), so it goes after B:grad_x (ready since 2 ms), at
 * 4 ms, and before A:grad_w (ready at 4 ms): before dW1 is made (5 ms). Its two phases of
 * 2 MB at 1 GB/s (2 ms each) overlap the rest of the backward pass: 4-8 ms. dW1's, made at
 * 5 ms, waits for it on the stream: 8-12 ms. SGD of W2 8-9, of W1 12-13: 13 ms. */
static void test_dp_nccl_overlaps_in_graph(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_train_strategy *s = pl_train_dp(&f.x, false, false);
    timing t = simulate(&f, s);
    expect(&t, 2, (double[]){4, 8, 8, 12}, 13);
    assert_close(t.dW2_ms, 3, TOL);
    assert_close(t.dW1_ms, 5, TOL);
    assert_true(t.send_ms[0] < t.dW1_ms);        /* the first starts before dW1 is made */
    assert_true(t.send_ms[1] >= t.gather_ms[0]); /* the second waits for the first */
    pl_train_eval e;
    pl_err err = {""};
    if (pl_train_evaluate(&f.x, s, &e, &err) < 0) fail_msg("%s", err.msg);
    assert_close(e.iteration_s * 1e3, 13, TOL);
    pl_train_eval_free(&e);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

/* "DP, synchronised after backward": one AllReduce of both (8 MB, 4 ms a phase) after the
 * last gradient, 5-13 ms; SGD 13-15 ms. */
static void test_dp_sync_after_backward(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_train_strategy *s = pl_train_dp_sync(&f.x);
    timing t = simulate(&f, s);
    expect(&t, 1, (double[]){5, 13}, 15);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

static timing horovod(tu_dense *f, double fusion_bytes, double cycle_s, int *bucket)
{
    pl_err err = {""};
    pl_train_horovod_opts o = {.fusion_bytes = fusion_bytes, .cycle_s = cycle_s};
    pl_train_strategy *s = pl_train_horovod(&f->x, &o, &err);
    if (!s) fail_msg("%s", err.msg);
    assert_int_equal(s->n_bucket, 2);
    memcpy(bucket, s->bucket, 4 * sizeof *bucket);
    timing t = simulate(f, s);
    pl_train_strategy_free(s);
    return t;
}

/* Horovod. Both gradients made in one cycle (3 and 5 ms, cycle 10 ms): fused into one
 * AllReduce of 8 MB once the cycle has both, 5-13 ms, as dp-sync here. The buffer smaller than
 * both (6 MB): dW1 goes in the next AllReduce, and the cycle's first waits for every gradient
 * of the cycle too: 5-9 and 9-13 ms, SGD 9-10 and 13-14 ms. Two cycles (4.5 ms: dW2 in the
 * first, dW1 in the second): one AllReduce each, as DP-NCCL, 4-8 and 8-12 ms. */
static void test_horovod_fuses_by_cycle_and_threshold(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    int b[4]; /* dW1's AllReduce, dW2's, dW1's cycle's first, dW2's cycle's first */
    timing t = horovod(&f, 0, 10e-3, b);
    assert_int_equal(b[0], 0), assert_int_equal(b[1], 0);
    expect(&t, 1, (double[]){5, 13}, 15);

    t = horovod(&f, 6e6, 10e-3, b);
    assert_int_equal(b[1], 0), assert_int_equal(b[0], 1); /* dW2 made first */
    assert_int_equal(b[2], 0), assert_int_equal(b[3], 0);
    expect(&t, 2, (double[]){5, 9, 9, 13}, 14);

    t = horovod(&f, 0, 4.5e-3, b);
    assert_int_equal(b[2], 1), assert_int_equal(b[3], 0);
    expect(&t, 2, (double[]){4, 8, 8, 12}, 13);
    tu_dense_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dp_nccl_overlaps_in_graph),
        cmocka_unit_test(test_dp_sync_after_backward),
        cmocka_unit_test(test_horovod_fuses_by_cycle_and_threshold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
