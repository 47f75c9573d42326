/* test_tag_gnn.c: TAG's GNN prior (docs/learn.md, "TAG's GNN prior"): the simulator's
 * feedback on a hand-built Dense layer worked by hand, the input graph's features and edges
 * against hand-computed values, priors that sum to 1 and repeat for a seed, the whole model's
 * gradient against finite differences, Adam fitting one target, the weights file, MCTS with
 * the prior (fed the feedback of each vertex's strategy), MCTS finding brute force's optimum
 * despite a prior on a slower action (issue 31), and `placer train --prior gnn`. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/learn.h"
#include "placer/train.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The Dense layer of testutil in two op groups (forward {A, loss}, 4 ms; backward
 * {A:grad_w, W:adam}, 5 ms and W's 1 MB) on two device groups of one V100 each. */
static void build(tu_dense *f)
{
    tu_dense_build(f, NULL, 2);
}

/* Group i on the device groups of mask[i] (bit j: group j), option o[i]. */
static pl_train_strategy *strategy(const int *mask, const pl_train_option *o)
{
    pl_train_strategy *s = pl_train_strategy_new(2, 2);
    for (int i = 0; i < 2; i++) {
        s->P[i * 2] = mask[i] & 1, s->P[i * 2 + 1] = mask[i] >> 1 & 1;
        s->O[i] = o[i];
    }
    s->overlap = true;
    return s;
}

static void evaluate_fb(tu_dense *f, const pl_train_strategy *s, pl_train_eval *e)
{
    pl_err err = {""};
    pl_train_eval_opts eo = {.feedback = true};
    if (pl_train_evaluate_opts(&f->x, s, &eo, e, &err) < 0) fail_msg("%s", err.msg);
}

/* ---- the simulator's feedback ---- */

/* Forward on g0, backward on g1 (one GPU each, nothing to synchronise): A 0-4 ms on g0, loss
 * at 4 ms, dy's 8 MB over 1 GB/s 4-12 ms (sent as soon as loss ends: no idle before it),
 * grad_w 12-16 and Adam 16-17 ms on g1. Iteration 17 ms; the forward group's makespan 4 ms,
 * the backward's 5; g0 busy 4 of 17 ms, g1 5 of 17; the route g0->g1 busy 8 of 17 ms, g1->g0
 * never. Launch overheads of microseconds: the tolerance. */
static void test_feedback_by_hand(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_train_strategy *s =
        strategy((int[]){1, 2}, (pl_train_option[]){PL_OPT_ALLREDUCE, PL_OPT_ALLREDUCE});
    pl_train_eval e;
    evaluate_fb(&f, s, &e);
    assert_close(e.iteration_s * 1e3, 17, 0.01);
    assert_int_equal(e.n_groups, 2);
    assert_close(e.group_makespan_s[0] * 1e3, 4, 0.01);
    assert_close(e.group_makespan_s[1] * 1e3, 5, 0.01);
    assert_true(fabs(e.group_out_idle_s[0]) < 1e-5 && e.group_out_idle_s[1] == 0);
    assert_close(e.dev_idle_frac[0], 1 - 4 / 17., 1e-3);
    assert_close(e.dev_idle_frac[1], 1 - 5 / 17., 1e-3);
    assert_int_equal(e.n_dgroups, 2);
    assert_close(e.link_idle_frac[0 * 2 + 1], 1 - 8 / 17., 1e-3);
    assert_close(e.link_idle_frac[1 * 2 + 0], 1, 1e-9);
    assert_close(e.link_idle_frac[0], 1, 1e-9); /* one GPU: no route inside the group */
    pl_train_eval_free(&e);
    /* without the option, no feedback (and no recording) */
    pl_err err = {""};
    assert_int_equal(pl_train_evaluate(&f.x, s, &e, &err), 0);
    assert_null(e.group_makespan_s);
    assert_int_equal(e.n_groups, 0);
    pl_train_eval_free(&e);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

/* Both groups on g0 alone: A 0-4, loss 4, grad_w 4-8, Adam 8-9 ms: makespans 4 and 5 ms, g1
 * idle throughout, no transfer. */
static void test_feedback_one_device(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_train_strategy *s =
        strategy((int[]){1, 1}, (pl_train_option[]){PL_OPT_ALLREDUCE, PL_OPT_ALLREDUCE});
    pl_train_eval e;
    evaluate_fb(&f, s, &e);
    assert_close(e.iteration_s * 1e3, 9, 0.01);
    assert_close(e.group_makespan_s[0] * 1e3, 4, 0.01);
    assert_close(e.group_makespan_s[1] * 1e3, 5, 0.01);
    assert_true(fabs(e.dev_idle_frac[0]) < 1e-3);
    assert_close(e.dev_idle_frac[1], 1, 1e-9);
    assert_close(e.link_idle_frac[1], 1, 1e-9);
    pl_train_eval_free(&e);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

/* ---- the input graph ---- */

static const unsigned char BOTH[2] = {1, 1}, G0[2] = {1, 0}, G1[2] = {0, 1};
static const pl_train_action ACTS[3] = {{BOTH, PL_OPT_ALLREDUCE}, {G0, PL_OPT_MP}, {G1, PL_OPT_PS}};

/* A feedback made up for the features: iteration 10 ms, makespans 6 and 3 ms, 1 ms idle
 * before the forward group's output, g0 at 1 GiB of its memory, idle 25 % and 75 %, the
 * route g0->g1 idle 40 %, g1->g0 70 %. */
static void made_up_feedback(pl_train_eval *e, double *mk, double *idle, double *peak,
                             double *didle, double *link)
{
    memset(e, 0, sizeof *e);
    mk[0] = 6e-3, mk[1] = 3e-3, idle[0] = 1e-3, idle[1] = 0;
    peak[0] = 1 << 30, peak[1] = 0, didle[0] = 0.25, didle[1] = 0.75;
    link[0] = 1, link[1] = 0.4, link[2] = 0.7, link[3] = 1;
    e->iteration_s = 10e-3, e->n_devs = 2, e->n_groups = 2, e->n_dgroups = 2;
    e->group_makespan_s = mk, e->group_out_idle_s = idle, e->peak_mem_bytes = peak;
    e->dev_idle_frac = didle, e->link_idle_frac = link;
}

static void expect_row(const float *got, const double *want, int n, const char *what)
{
    for (int k = 0; k < n; k++)
        if (fabs(got[k] - want[k]) > 1e-5)
            fail_msg("%s column %d: %.7g, expected %.7g", what, k, got[k], want[k]);
}

/* Forward group next (it is second in descending time: the backward group, 5 ms, is
 * decided), the forward group on both GPUs with AllReduce, the backward on g0, model parallel. */
static void test_input_by_hand(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_train_strategy *s =
        strategy((int[]){3, 1}, (pl_train_option[]){PL_OPT_ALLREDUCE, PL_OPT_MP});
    pl_train_eval fb;
    double mk[2], idle[2], peak[2], didle[2], link[4];
    made_up_feedback(&fb, mk, idle, peak, didle, link);
    pl_tag_input *in = pl_tag_input_build(&f.x, s, &fb, 0, ACTS, 3);
    pl_train_strategy_free(s);
    const pl_device *d = &f.c->devs[0]; /* a V100 by the built-in spec */
    double mem = log1p(d->memory_bytes / (1 << 30)), memfrac = (1 << 30) / d->memory_bytes,
           fl = log1p(d->peak_flops_per_s[PL_PREC_FP32] / 1e12);
    double MB8 = log1p(8e6 / (1 << 20)), bw = log1p(1.0); /* 8 MB; 1 GB/s */
    tu_dense_free(&f); /* self-contained: nothing below reads the ctx */
    assert_int_equal(in->n_op, 2);
    assert_int_equal(in->n_dev, 2);
    /* time share, ln(1 + ms), param share, ln(1 + MiB), option one-hot, makespan and idle /
     * iteration, decided, next */
    expect_row(in->op_feat, (double[]){4 / 9., log(5), 0, 0, 1, 0, 0, 0, 0.6, 0.1, 0, 1}, 12,
               "op 0");
    expect_row(in->op_feat + 12,
               (double[]){5 / 9., log(6), 1, log1p(1e6 / (1 << 20)), 0, 0, 0, 1, 0.3, 0, 1, 0}, 12,
               "op 1");
    /* ln(1 + GPUs), ln(1 + GiB), intra ln(1 + GB/s) (one GPU: none), ln(1 + TFLOPS), speed
     * share, peak / memory, idle */
    expect_row(in->dev_feat, (double[]){log(2), mem, 0, fl, 0.5, memfrac, 0.25}, 7, "dev 0");
    expect_row(in->dev_feat + 7, (double[]){log(2), mem, 0, fl, 0.5, 0, 0.75}, 7, "dev 1");
    /* op-op: dy's 8 MB from group 0 to 1, both ways, flagged along the flow */
    assert_int_equal(in->n_edges[PL_TAG_OP_OP], 2);
    int oo_ptr[5] = {0, 1, 2, 2, 2};
    assert_memory_equal(in->ptr[PL_TAG_OP_OP], oo_ptr, sizeof oo_ptr);
    assert_int_equal(in->src[PL_TAG_OP_OP][0], 1);
    assert_int_equal(in->src[PL_TAG_OP_OP][1], 0);
    expect_row(in->efeat[PL_TAG_OP_OP], (double[]){MB8, 0, 0, MB8, 1, 0}, 6, "op-op");
    /* dev-dev: nodes 2 and 3, bandwidth and the link's idle share */
    int dd_ptr[5] = {0, 0, 0, 1, 2};
    assert_memory_equal(in->ptr[PL_TAG_DEV_DEV], dd_ptr, sizeof dd_ptr);
    assert_int_equal(in->src[PL_TAG_DEV_DEV][0], 3);
    expect_row(in->efeat[PL_TAG_DEV_DEV], (double[]){bw, 0.7, 0, bw, 0.4, 0}, 6, "dev-dev");
    /* op->dev: every pair, P as the feature: into g0 from both groups, into g1 from both,
     * group 1 not on g1 */
    int od_ptr[5] = {0, 0, 0, 2, 4};
    assert_memory_equal(in->ptr[PL_TAG_OP_DEV], od_ptr, sizeof od_ptr);
    expect_row(in->efeat[PL_TAG_OP_DEV], (double[]){1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0}, 12,
               "op->dev");
    int do_ptr[5] = {0, 2, 4, 4, 4};
    assert_memory_equal(in->ptr[PL_TAG_DEV_OP], do_ptr, sizeof do_ptr);
    expect_row(in->efeat[PL_TAG_DEV_OP], (double[]){1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0}, 12,
               "dev->op");
    assert_int_equal(in->src[PL_TAG_DEV_OP][3], 3);
    /* the candidates */
    assert_int_equal(in->n_cand, 3);
    expect_row(in->cand_P, (double[]){1, 1, 1, 0, 0, 1}, 6, "candidates");
    assert_int_equal(in->cand_option[1], PL_OPT_MP);
    pl_tag_input_free(in);
}

/* Without feedback, its columns are 0 and the rest as before. */
static void test_input_without_feedback(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_train_strategy *s =
        strategy((int[]){3, 1}, (pl_train_option[]){PL_OPT_ALLREDUCE, PL_OPT_MP});
    pl_tag_input *in = pl_tag_input_build(&f.x, s, NULL, 1, ACTS, 3);
    expect_row(in->op_feat, (double[]){4 / 9., log(5), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, 12, "op 0");
    assert_true(in->op_feat[12 + 11] == 1); /* group 1 next, nothing decided */
    assert_true(in->op_feat[12 + 10] == 0);
    assert_true(in->dev_feat[5] == 0 && in->dev_feat[6] == 0);
    assert_true(in->efeat[PL_TAG_DEV_DEV][1] == 0);
    pl_tag_input_free(in);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

/* ---- the model ---- */

static pl_tag_input *tiny_input(tu_dense *f)
{
    build(f);
    pl_train_strategy *s =
        strategy((int[]){3, 1}, (pl_train_option[]){PL_OPT_ALLREDUCE, PL_OPT_MP});
    pl_train_eval e;
    evaluate_fb(f, s, &e);
    pl_tag_input *in = pl_tag_input_build(&f->x, s, &e, 0, ACTS, 3);
    pl_train_eval_free(&e);
    pl_train_strategy_free(s);
    tu_dense_free(f);
    return in;
}

static void test_priors_sum_to_one_and_repeat(void **state)
{
    (void)state;
    tu_dense f;
    pl_tag_input *in = tiny_input(&f);
    pl_tag_gnn *a = pl_tag_gnn_new(7), *b = pl_tag_gnn_new(7), *c = pl_tag_gnn_new(8);
    double pa[3], pb[3], pc[3];
    assert_int_equal(pl_tag_gnn_priors(a, in, pa), 3);
    pl_tag_gnn_priors(b, in, pb);
    pl_tag_gnn_priors(c, in, pc);
    assert_close(pa[0] + pa[1] + pa[2], 1, 1e-12);
    for (int k = 0; k < 3; k++)
        assert_true(pa[k] > 0 && pa[k] == pb[k]);
    assert_true(pa[0] != pc[0] || pa[1] != pc[1]);
    pl_tag_gnn_free(a), pl_tag_gnn_free(b), pl_tag_gnn_free(c);
    pl_tag_input_free(in);
}

/* The central difference of the loss in w's element k, with step h. */
static double central(pl_tag_gnn *m, const pl_tag_input *in, const double *target, float *w,
                      float h)
{
    float w0 = *w;
    *w = w0 + h;
    double lp = pl_tag_gnn_accumulate(m, in, target);
    *w = w0 - h;
    double lm = pl_tag_gnn_accumulate(m, in, target);
    *w = w0;
    return (lp - lm) / (2 * h);
}

/* The loss's gradient by backward against central differences in float: within 2e-2 relative
 * plus 2e-3 absolute, on every parameter (about 40 elements of each, evenly spaced). A step of
 * 1e-3 may cross one of the relus' kinks (the difference then mixes two slopes): an element
 * that disagrees is tried again at 2.5e-4 and 6e-5, and fails when it disagrees at all three,
 * as a wrong gradient would. At most 2 % may need the smaller steps. */
static void test_gradient_fd(void **state)
{
    (void)state;
    tu_dense f;
    pl_tag_input *in = tiny_input(&f);
    pl_tag_gnn *m = pl_tag_gnn_new(11);
    pl_params *s = pl_tag_gnn_params(m);
    /* larger weights than Xavier's, so that every part of the loss moves */
    uint64_t rng = 5;
    for (int i = 0; i < s->n; i++)
        for (int k = 0; k < s->p[i]->rows * s->p[i]->cols; k++)
            s->p[i]->w[k] += (float)(0.2 * (2 * pl_rng_uniform(&rng) - 1));
    const double target[3] = {0.2, 0.5, 0.3};
    pl_params_zero_grad(s);
    pl_tag_gnn_accumulate(m, in, target);
    float **g = malloc((size_t)s->n * sizeof *g); /* the backward's, before the differences */
    for (int i = 0; i < s->n; i++) {
        size_t bytes = (size_t)s->p[i]->rows * s->p[i]->cols * sizeof(float);
        g[i] = malloc(bytes);
        memcpy(g[i], s->p[i]->g, bytes);
    }
    const float steps[3] = {1e-3f, 2.5e-4f, 6e-5f};
    long checked = 0, retried = 0;
    double biggest = 0;
    for (int i = 0; i < s->n; i++) {
        pl_param *p = s->p[i];
        int size = p->rows * p->cols, every = size > 40 ? size / 40 : 1;
        for (int k = 0; k < size; k += every) {
            double an = g[i][k], num = 0;
            bool ok = false;
            for (int h = 0; h < 3 && !ok; h++) {
                num = central(m, in, target, &p->w[k], steps[h]);
                ok = fabs(num - an) <= 2e-2 * fmax(fabs(num), fabs(an)) + 2e-3;
                retried += h == 1;
            }
            if (!ok) fail_msg("%s[%d]: backward %.6g, finite difference %.6g", p->name, k, an, num);
            biggest = fmax(biggest, fabs(an));
            checked++;
        }
    }
    if (biggest < 1e-2) fail_msg("every gradient is ~0 (largest %g)", biggest);
    if (retried > checked / 50) fail_msg("%ld of %ld needed smaller steps", retried, checked);
    for (int i = 0; i < s->n; i++)
        free(g[i]);
    free(g);
    pl_tag_gnn_free(m);
    pl_tag_input_free(in);
}

/* 300 Adam steps towards candidate 1 alone: its prior from about a third to above 0.9, and
 * the loss down. */
static void test_adam_fits_a_target(void **state)
{
    (void)state;
    tu_dense f;
    pl_tag_input *in = tiny_input(&f);
    pl_tag_gnn *m = pl_tag_gnn_new(3);
    const double target[3] = {0, 1, 0};
    double p[3];
    pl_tag_gnn_priors(m, in, p);
    assert_true(p[1] < 0.6);
    double first = pl_tag_gnn_accumulate(m, in, target), last = first;
    pl_tag_gnn_update(m, 1e-3f);
    for (int k = 1; k < 300; k++) {
        last = pl_tag_gnn_accumulate(m, in, target);
        pl_tag_gnn_update(m, 1e-3f);
    }
    pl_tag_gnn_priors(m, in, p);
    if (!(p[1] > 0.9)) fail_msg("prior of the target %g after 300 steps", p[1]);
    assert_true(last < first);
    assert_close(last, -log(p[1]), 0.05);
    pl_tag_gnn_free(m);
    pl_tag_input_free(in);
}

/* Saved, loaded into a model of another seed: the same priors, bit for bit. A file of another
 * model is refused, naming the file, and leaves the model as it was. */
static void test_save_load(void **state)
{
    (void)state;
    tu_dense f;
    pl_tag_input *in = tiny_input(&f);
    pl_tag_gnn *a = pl_tag_gnn_new(21), *b = pl_tag_gnn_new(22);
    char path[] = "/tmp/tag-gnn-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pl_err err = {""};
    assert_int_equal(pl_tag_gnn_save(a, path, &err), 0);
    double pa[3], pb[3], pc[3];
    pl_tag_gnn_priors(a, in, pa);
    pl_tag_gnn_priors(b, in, pb);
    assert_true(pa[0] != pb[0]);
    assert_int_equal(pl_tag_gnn_load(b, path, &err), 0);
    pl_tag_gnn_priors(b, in, pb);
    assert_memory_equal(pa, pb, sizeof pa);
    /* another model's weights */
    pl_params other;
    pl_params_init(&other);
    pl_params_add(&other, "enc.W", 2, 2);
    assert_int_equal(pl_params_save(&other, path, &err), 0);
    pl_params_free(&other);
    pl_tag_gnn *c = pl_tag_gnn_new(21);
    assert_int_equal(pl_tag_gnn_load(c, path, &err), -1);
    assert_non_null(strstr(err.msg, path));
    pl_tag_gnn_priors(c, in, pc);
    assert_memory_equal(pa, pc, sizeof pa);
    unlink(path);
    pl_tag_gnn_free(a), pl_tag_gnn_free(b), pl_tag_gnn_free(c);
    pl_tag_input_free(in);
}

/* ---- the shipped prior on more groups than it was trained on (issue 31, item 4) ---- */

typedef struct root_spy {
    pl_tag_gnn *m;
    int calls, n, every_ar; /* every_ar: the action on every group with AllReduce */
    double every, one;      /* the prior of every_ar; the mass on one-group actions */
} root_spy;

/* The GNN's prior; the first call is the root's (the search decides it first). */
static void root_prior(const pl_train_ctx *x, const pl_train_strategy *partial,
                       const pl_train_eval *fb, int group, const pl_train_action *a, int n,
                       double *prior, void *user)
{
    root_spy *s = user;
    pl_tag_gnn_prior(x, partial, fb, group, a, n, prior, s->m);
    if (s->calls++) return;
    s->n = n, s->every_ar = -1;
    for (int c = 0; c < n; c++) {
        int used = 0;
        for (int j = 0; j < x->dg.n; j++)
            used += a[c].uses[j];
        if (used == 1) s->one += prior[c];
        if (used == x->dg.n && a[c].option == PL_OPT_ALLREDUCE)
            s->every_ar = c, s->every = prior[c];
    }
}

/* bert_base@96 on TAG's testbed (7 device groups; the training topologies have at most 3),
 * with the shipped prior trained without bert_base, at the root of Table 7's search (16 op
 * groups). The root strategy every group with AllReduce is the fastest there (126.84 ms; one
 * group alone is 198.68 ms at best: docs/train.md, "A prior that helps where it is used"), so
 * a prior that gives it less than the uniform prior's 1/n, or puts most of its mass on
 * one-group actions, knows less than nothing about it. The prior of the decoder before issue
 * 31 gave it 0.0004 of 60 (50th) and 75 % to one-group actions. */
static void test_shipped_prior_on_the_testbed(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = pl_graph_load("models/bert_base.onnx", NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    pl_train_graph *t;
    pl_train_opts to = {.batch = 96};
    assert_int_equal(pl_train_graph_build(g, &to, &t, &err), 0);
    pl_cluster *c = pl_cluster_load("examples/clusters/tag-testbed.json", &err);
    if (!c) fail_msg("%s", err.msg);
    pl_train_ctx x;
    if (pl_train_ctx_init(&x, t, c, NULL, 16, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(x.dg.n, 7);
    root_spy s = {.m = pl_tag_gnn_new(1)};
    const char *w = "models/priors/tag-gnn-without-bert_base.weights";
    if (pl_tag_gnn_load(s.m, w, &err) < 0) fail_msg("%s", err.msg);
    pl_train_search_opts o = {.iterations = 1,
                              .seed = 1,
                              .no_refine = true,
                              .no_sfb = true,
                              .prior = root_prior,
                              .prior_user = &s};
    pl_train_search_result r;
    assert_int_equal(pl_train_search(&x, &o, &r, &err), 0);
    pl_train_search_result_free(&r);
    assert_true(s.every_ar >= 0);
    if (!(s.every >= 1.0 / s.n && s.one < 0.5))
        fail_msg("every group with AllReduce: %.4f (uniform: 1/%d); one group alone: %.1f %%",
                 s.every, s.n, 100 * s.one);
    pl_tag_gnn_free(s.m);
    pl_train_ctx_free(&x);
    pl_cluster_free(c);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

/* A weights file of the decoder before issue 31: the same parameters but the decoder's, named
 * tag.dec1 and tag.dec2, whose first layer reads no candidate features. */
static void save_legacy(const char *path)
{
    pl_tag_gnn *m = pl_tag_gnn_new(1);
    const pl_params *cur = pl_tag_gnn_params(m);
    pl_params old;
    pl_params_init(&old);
    for (int i = 0; i < cur->n; i++) {
        const pl_param *p = cur->p[i];
        char name[64];
        int rows = p->rows;
        if (!strncmp(p->name, "tag.decoder", 11)) {
            snprintf(name, sizeof name, "tag.dec%s", p->name + 11);
            if (!strcmp(p->name, "tag.decoder1.W")) rows -= PL_TAG_CAND_FEATS;
        } else {
            snprintf(name, sizeof name, "%s", p->name);
        }
        pl_params_add(&old, name, rows, p->cols);
    }
    pl_err err = {""};
    assert_int_equal(pl_params_save(&old, path, &err), 0);
    pl_params_free(&old);
    pl_tag_gnn_free(m);
}

/* Such a file is refused with the file and the reason (not a shape), by the loader, by
 * `train --prior-file` and by `learn-prior --init`, and the model keeps its weights. */
static void test_legacy_weights_refused(void **state)
{
    (void)state;
    char dir[64], path[128], args[512];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "tag-legacy"), 0);
    snprintf(path, sizeof path, "%s/old.weights", dir);
    save_legacy(path);
    pl_tag_gnn *m = pl_tag_gnn_new(2), *fresh = pl_tag_gnn_new(2);
    pl_err err = {""};
    assert_int_equal(pl_tag_gnn_load(m, path, &err), -1);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "a prior of the old decoder"));
    const pl_params *a = pl_tag_gnn_params(m), *b = pl_tag_gnn_params(fresh);
    for (int i = 0; i < a->n; i++)
        assert_memory_equal(a->p[i]->w, b->p[i]->w,
                            (size_t)a->p[i]->rows * a->p[i]->cols * sizeof(float));
    pl_tag_gnn_free(m), pl_tag_gnn_free(fresh);
    snprintf(args, sizeof args,
             "train models/gcn_cora.onnx --cluster examples/clusters/tag-sfb.json --budget 5 "
             "--prior-file %s",
             path);
    tu_expect_refusal(args, "a prior of the old decoder");
    snprintf(args, sizeof args, "learn-prior models/gcn_cora.onnx -o %s/new --rounds 1 --init %s",
             dir, path);
    tu_expect_refusal(args, "a prior of the old decoder");
    unlink(path);
    tu_expect_empty_dir(dir);
    tu_rmtree(dir);
}

/* ---- MCTS with the prior ---- */

typedef struct spy {
    pl_tag_gnn *m;
    int calls, with_feedback, root_ok;
    double dp_overlap_s;
} spy;

/* The GNN's prior, checking what MCTS hands it: the feedback of `partial` itself. */
static void spy_prior(const pl_train_ctx *x, const pl_train_strategy *partial,
                      const pl_train_eval *fb, int group, const pl_train_action *a, int n,
                      double *prior, void *user)
{
    spy *s = user;
    s->calls++;
    pl_train_eval e;
    pl_err err = {""};
    if (pl_train_evaluate(x, partial, &e, &err) < 0) fail_msg("%s", err.msg);
    if (fb && fb->n_groups == x->og.n && fb->group_makespan_s && fb->iteration_s == e.iteration_s)
        s->with_feedback++;
    pl_train_eval_free(&e);
    pl_tag_gnn_prior(x, partial, fb, group, a, n, prior, s->m);
}

/* TAG's search with the GNN prior on the two-group layer: every call gets the feedback of its
 * own strategy, and the answer is never slower than DP-NCCL. */
static void test_search_with_gnn_prior(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    spy sp = {.m = pl_tag_gnn_new(5)};
    pl_train_search_opts o = {.iterations = 30, .seed = 3, .prior = spy_prior, .prior_user = &sp};
    pl_train_search_result r;
    pl_err err = {""};
    assert_int_equal(pl_train_search(&f.x, &o, &r, &err), 0);
    assert_true(sp.calls >= 2); /* the root and at least one expanded vertex */
    assert_int_equal(sp.with_feedback, sp.calls);
    assert_true(r.eval.iteration_s <= r.dp_s * (1 + 1e-9));
    assert_false(r.eval.oom);
    pl_train_search_result_free(&r);
    pl_tag_gnn_free(sp.m);
    tu_dense_free(&f);
}

static void assert_same_tree(const pl_train_tree_result *a, const pl_train_tree_result *b)
{
    assert_true(a->ran == b->ran && a->best_s == b->best_s && a->at_start == b->at_start);
    assert_int_equal(a->iterations, b->iterations);
    assert_int_equal(a->iterations_to_beat_dp, b->iterations_to_beat_dp);
}

/* Each tree credited (issue 31, item 2): with uniform_too the uniform tree and the GNN's are
 * each the tree a search with that prior alone grows (same seed and budget); the faster goes
 * on (ties: uniform's), credited; each part is no slower than the one before, and the answer
 * is SFB's part's time. */
static void test_uniform_too(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_tag_gnn *m = pl_tag_gnn_new(5);
    pl_err err = {""};
    pl_train_search_result both, u, g;
    pl_train_search_opts o = {.iterations = 20,
                              .seed = 3,
                              .prior = pl_tag_gnn_prior,
                              .prior_user = m,
                              .uniform_too = true};
    assert_int_equal(pl_train_search(&f.x, &o, &both, &err), 0);
    o.uniform_too = false;
    assert_int_equal(pl_train_search(&f.x, &o, &g, &err), 0);
    o.prior = NULL, o.prior_user = NULL;
    assert_int_equal(pl_train_search(&f.x, &o, &u, &err), 0);
    assert_false(u.prior.ran || g.uniform.ran);
    assert_true(both.uniform.ran && both.prior.ran);
    assert_same_tree(&both.uniform, &u.uniform);
    assert_same_tree(&both.prior, &g.prior);
    bool uniform_won = u.uniform.best_s <= g.prior.best_s;
    const pl_train_tree_result *w = uniform_won ? &u.uniform : &g.prior;
    assert_true(both.mcts_s == w->best_s);
    assert_int_equal(both.iterations_to_beat_dp, w->iterations_to_beat_dp);
    pl_train_found tree = !(w->best_s < both.dp_s) ? PL_FOUND_DP
                          : uniform_won            ? PL_FOUND_MCTS_UNIFORM
                                                   : PL_FOUND_MCTS_PRIOR;
    assert_true(both.refined_s <= both.mcts_s && both.sfb_s <= both.refined_s);
    if (both.refined_s == both.mcts_s) assert_int_equal(both.refined_by, tree);
    assert_true(both.eval.iteration_s == both.sfb_s);
    pl_train_search_result_free(&both), pl_train_search_result_free(&u);
    pl_train_search_result_free(&g);
    pl_tag_gnn_free(m);
    tu_dense_free(&f);
}

/* ---- priors that are not numbers (issue 27) ---- */

static void nan_prior(const pl_train_ctx *x, const pl_train_strategy *partial,
                      const pl_train_eval *fb, int group, const pl_train_action *a, int n,
                      double *prior, void *user)
{
    (void)x, (void)partial, (void)fb, (void)group, (void)a, (void)user;
    for (int k = 0; k < n; k++)
        prior[k] = NAN;
}

/* NaN priors (weights that overflow) select no action: the search stops with a message
 * instead of reading child[-1] (a heap overflow under ASan, "double free" in release). */
static void test_nan_prior_stops_search(void **state)
{
    (void)state;
    tu_dense f;
    build(&f);
    pl_train_search_opts o = {.iterations = 10, .seed = 3, .prior = nan_prior};
    pl_train_search_result r;
    pl_err err = {""};
    assert_int_equal(pl_train_search(&f.x, &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "not a probability"));
    /* train.h: a failed search leaves no strategy and nothing to free */
    assert_null(r.best);
    assert_null(r.eval.peak_mem_bytes);
    tu_dense_free(&f);
}

/* ---- a misleading prior (issue 31, item 4) ---- */

/* A V100 and a K80 on two hosts joined by 10 MB/s: DP-NCCL's AllReduce of W's 1 MB over that
 * link is far slower than either GPU alone, so every one-GPU strategy earns a reward of many
 * times PUCT's exploration term. */
static const char *V100_K80_SLOW =
    "{\"format\": \"placer-cluster/1\", \"name\": \"v100-k80\", \"devices\": ["
    "{\"name\": \"g0\", \"model\": \"V100\", \"host\": \"m0\"},"
    "{\"name\": \"g1\", \"model\": \"K80\", \"host\": \"m1\"}],"
    "\"links\": [{\"from\": \"g0\", \"to\": \"g1\", \"bandwidth_Bps\": \"10 MB/s\", "
    "\"latency_s\": 0, \"both_ways\": true}]}";

/* 0.99 on the K80 alone with AllReduce, the rest shared by the other actions. */
static void k80_prior(const pl_train_ctx *x, const pl_train_strategy *partial,
                      const pl_train_eval *fb, int group, const pl_train_action *a, int n,
                      double *prior, void *user)
{
    (void)x, (void)partial, (void)fb, (void)group, (void)user;
    int fav = -1;
    for (int k = 0; k < n; k++)
        if (!a[k].uses[0] && a[k].uses[1] && a[k].option == PL_OPT_ALLREDUCE) fav = k;
    assert_true(fav >= 0);
    for (int k = 0; k < n; k++)
        prior[k] = k == fav ? 0.99 : 0.01 / (n - 1);
}

/* The Dense layer as one op group on the V100 and the K80: the prior puts 0.99 on the K80
 * alone, faster than DP-NCCL but far slower than the V100 alone. Before issue 31 the first
 * action tried at the root (the prior's) kept every visit, its reward (T_DP / T - 1, about 9
 * here) dwarfing c G sqrt(N) of the others, and MCTS ended on the K80. With values scaled to
 * [0, 1], untried actions valued at the vertex's mean and the prior giving way to uniform
 * as visits grow, 30 iterations find the optimum of brute force over every device set and
 * option. */
static void test_misleading_prior_still_finds_optimum(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, V100_K80_SLOW, 1);
    pl_graph *g = f.t.g;
    for (int i = 0; i < g->n_ops; i++) /* the K80 three times slower (the ops' given times) */
        pl_op_add_time(g, i, "K80", 3 * g->ops[i].time_s[0]);
    pl_cost_free(f.x.k);
    f.x.k = tu_cost(g, f.c);
    static const int sets[3][2] = {{1, 1}, {1, 0}, {0, 1}};
    double opt = INFINITY, k80 = INFINITY;
    for (int k = 0; k < 3; k++)
        for (int o = 0; o < PL_OPT_COUNT; o++) {
            pl_train_strategy *s = pl_train_strategy_new(1, 2);
            s->P[0] = (unsigned char)sets[k][0], s->P[1] = (unsigned char)sets[k][1];
            s->O[0] = (pl_train_option)o, s->overlap = true;
            double t = tu_dense_eval_s(&f, s);
            opt = fmin(opt, t);
            if (k == 2 && o == PL_OPT_ALLREDUCE) k80 = t;
            pl_train_strategy_free(s);
        }
    pl_train_strategy *dp = pl_train_dp(&f.x, false, false);
    double dp_s = tu_dense_eval_s(&f, dp);
    pl_train_strategy_free(dp);
    opt = fmin(opt, dp_s);
    /* the case is the one meant: the prior's action beats DP-NCCL well, the optimum beats it */
    assert_true(dp_s / k80 - 1 > 2 && k80 > 1.5 * opt);
    pl_train_search_opts o = {
        .iterations = 30, .seed = 3, .no_refine = true, .no_sfb = true, .prior = k80_prior};
    pl_train_search_result r;
    pl_err err = {""};
    assert_int_equal(pl_train_search(&f.x, &o, &r, &err), 0);
    assert_true(r.prior.ran);
    assert_true(fabs(r.mcts_s - opt) <= 1e-12 * opt);
    pl_train_search_result_free(&r);
    tu_dense_free(&f);
}

/* Weights with one finite but huge value (3e38), or all of them +-w: saved as they are. */
static const char *huge_weights(float w, bool all)
{
    static char path[] = "/tmp/tag-gnn-huge-XXXXXX";
    snprintf(path, sizeof path, "/tmp/tag-gnn-huge-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pl_tag_gnn *m = pl_tag_gnn_new(1);
    pl_params *ps = pl_tag_gnn_params(m);
    ps->p[0]->w[3] = w;
    for (int i = 0; all && i < ps->n; i++) /* alternating signs: no layer's sum cancels */
        for (long k = 0; k < (long)ps->p[i]->rows * ps->p[i]->cols; k++)
            ps->p[i]->w[k] = k % 2 ? w : -w;
    pl_err err = {""};
    assert_int_equal(pl_tag_gnn_save(m, path, &err), 0);
    pl_tag_gnn_free(m);
    return path;
}

/* 3e38 is refused on load with the file, the parameter and the element, and the model keeps its
 * weights; by train --prior gnn and learn-prior --init too. */
static void test_huge_weights_refused(void **state)
{
    (void)state;
    const char *path = huge_weights(3e38f, false);
    pl_tag_gnn *m = pl_tag_gnn_new(2);
    pl_params *ps = pl_tag_gnn_params(m);
    float before = ps->p[0]->w[3];
    pl_err err = {""};
    assert_int_equal(pl_tag_gnn_load(m, path, &err), -1);
    assert_non_null(strstr(err.msg, path));
    char where[128];
    snprintf(where, sizeof where, "parameter %s: element 3 is 3e+38", ps->p[0]->name);
    assert_non_null(strstr(err.msg, where));
    assert_true(ps->p[0]->w[3] == before);
    assert_int_equal(pl_params_check(ps, &err), 0);
    ps->p[1]->w[0] = -2e4f;
    assert_int_equal(pl_params_check(ps, &err), -1);
    assert_non_null(strstr(err.msg, "element 0 is -20000"));
    pl_tag_gnn_free(m);
    /* the commands that load weights refuse the file, exit 2, no crash */
    char args[1024];
    snprintf(args, sizeof args,
             "train models/gcn_cora.onnx --cluster examples/clusters/tag-sfb.json --budget 5 "
             "--placer none --prior gnn --prior-file %s",
             path);
    tu_expect_refusal(args, "element 3 is 3e+38");
    snprintf(args, sizeof args,
             "learn-prior models/gcn_cora.onnx -o /tmp/tag-gnn-never --init %s --rounds 1 "
             "--iterations 5",
             path);
    tu_expect_refusal(args, "element 3 is 3e+38");
    assert_int_equal(access("/tmp/tag-gnn-never", F_OK), -1);
    unlink(path);
    /* weights within the bound whose forward pass still overflows: MCTS refuses the NaN
     * priors, and train fails (exit 2) rather than answer a baseline with TAG's row failed */
    path = huge_weights(9000, true);
    snprintf(args, sizeof args,
             "train models/gcn_cora.onnx --cluster examples/clusters/tag-sfb.json --budget 5 "
             "--prior gnn --prior-file %s",
             path);
    tu_expect_refusal(args, "not a probability");
    unlink(path);
}

/* A learn-prior run whose training diverges (lr 0.99, self-play, 500 steps; 0.5 did under the
 * roofline's costs, before the GPU kernel rules, and 200 steps before issue 31's scaled MCTS
 * values changed the visit targets) stops with a message, exit 2,
 * and writes nothing; before, the NaN weights steered the next search into a heap overflow. */
static void test_diverging_training_stops(void **state)
{
    (void)state;
    char dir[64], args[1024];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "tag-diverge"), 0);
    snprintf(args, sizeof args,
             "learn-prior models/gcn_cora.onnx -o %s/w --topologies 2 --iterations 60 "
             "--min-visits 5 --steps 500 --lr 0.99 --rounds 4 --self-play",
             dir);
    tu_expect_refusal(args, "the training diverged after search");
    tu_expect_empty_dir(dir);
    tu_rmtree(dir);
}

/* ---- the command ---- */

static void test_cli_prior_file(void **state)
{
    (void)state;
    const char *bad = tu_tmpfile("not weights", 11, ".weights");
    char args[1024];
    snprintf(args, sizeof args,
             "train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json --prior gnn "
             "--prior-file %s",
             bad);
    tu_expect_refusal(args, bad);
    tu_expect_refusal("train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json "
                      "--prior gnn --prior-file /nonexistent/tag.weights",
                      "/nonexistent/tag.weights");
    tu_expect_refusal("train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json "
                      "--prior learned",
                      "give uniform or gnn");
    /* fresh weights: runs, reports its prior, never slower than DP-NCCL */
    char path[] = "/tmp/tag-gnn-cli-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    pl_tag_gnn *m = pl_tag_gnn_new(1);
    pl_err err = {""};
    assert_int_equal(pl_tag_gnn_save(m, path, &err), 0);
    pl_tag_gnn_free(m);
    snprintf(args, sizeof args,
             "train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json --batch 4 "
             "--budget 10 --placer none --no-sfb --prior gnn --prior-file %s --json 2>/dev/null",
             path);
    json_t *doc = tu_run_json(args);
    assert_string_equal(json_string_value(json_object_get(doc, "prior")), "gnn");
    double tag = tu_num(doc, "iteration_s"), dp = tu_num(json_object_get(doc, "baselines"), "dp");
    assert_true(tag > 0 && tag <= dp * (1 + 1e-9));
    json_decref(doc);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feedback_by_hand),
        cmocka_unit_test(test_feedback_one_device),
        cmocka_unit_test(test_input_by_hand),
        cmocka_unit_test(test_input_without_feedback),
        cmocka_unit_test(test_priors_sum_to_one_and_repeat),
        cmocka_unit_test(test_gradient_fd),
        cmocka_unit_test(test_adam_fits_a_target),
        cmocka_unit_test(test_save_load),
        cmocka_unit_test(test_shipped_prior_on_the_testbed),
        cmocka_unit_test(test_legacy_weights_refused),
        cmocka_unit_test(test_search_with_gnn_prior),
        cmocka_unit_test(test_uniform_too),
        cmocka_unit_test(test_cli_prior_file),
        cmocka_unit_test(test_nan_prior_stops_search),
        cmocka_unit_test(test_misleading_prior_still_finds_optimum),
        cmocka_unit_test(test_huge_weights_refused),
        cmocka_unit_test(test_diverging_training_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
