/* test_distill.c: training TAG's GNN prior by MCTS distillation (pl_tag_distill) and
 * `placer learn-prior`. */
#include "placer/learn.h"
#include "placer/train.h"
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODEL "models/vgg19.onnx"
#define BATCH 8

/* The first search pl_tag_distill runs (model 0 on topology 1, the fresh model's prior),
 * repeated here: its vertices with enough visits and their targets. */
typedef struct capture {
    pl_tag_gnn *m; /* the prior's model */
    int n;
    pl_tag_input *in[256];
    double *target[256];
} capture;

static void keep(const pl_train_ctx *x, const pl_train_strategy *partial, int group,
                 const pl_train_action *a, int n, const double *visits, void *user)
{
    capture *c = user;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += visits[i];
    if (c->n == 256 || !(sum > 0)) return;
    pl_train_eval fb;
    pl_err err = {""};
    assert_int_equal(
        pl_train_evaluate_opts(x, partial, &(pl_train_eval_opts){.feedback = true}, &fb, &err), 0);
    c->in[c->n] = pl_tag_input_build(x, partial, &fb, group, a, n);
    c->target[c->n] = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++)
        c->target[c->n][i] = visits[i] / sum;
    c->n++;
    pl_train_eval_free(&fb);
}

static void first_search(pl_tag_gnn *m, bool self_play, int iterations, int min_visits, capture *c)
{
    pl_err err = {""};
    pl_graph *g = tu_load(MODEL);
    pl_train_graph *t;
    assert_int_equal(pl_train_graph_build(g, &(pl_train_opts){.batch = BATCH}, &t, &err), 0);
    pl_cluster *cl =
        pl_cluster_random(1, &(pl_cluster_random_opts){.min_gpus = 2, .max_gpus = 8}, &err);
    assert_non_null(cl);
    pl_train_ctx x;
    assert_int_equal(pl_train_ctx_init(&x, t, cl, NULL, PL_TAG_DISTILL_GROUPS, &err), 0);
    c->m = m;
    pl_train_search_opts so = {.iterations = iterations,
                               .prior = self_play ? pl_tag_gnn_prior : NULL,
                               .prior_user = m,
                               .no_sfb = true,
                               .no_refine = true,
                               .seed = 1,
                               .on_vertex = keep,
                               .on_vertex_user = c,
                               .min_visits = min_visits};
    pl_train_search_result r;
    assert_int_equal(pl_train_search(&x, &so, &r, &err), 0);
    pl_train_search_result_free(&r);
    pl_train_ctx_free(&x);
    pl_cluster_free(cl);
    pl_train_graph_free(t);
    pl_graph_free(g);
}

static void capture_free(capture *c)
{
    for (int i = 0; i < c->n; i++)
        pl_tag_input_free(c->in[i]), free(c->target[i]);
}

/* Mean KL divergence of the model's priors from the captured targets: the cross-entropy the
 * training lowers less the targets' own entropy, its floor. Targets spread over many actions
 * (MCTS's scaled values since issue 31) leave a high floor that no training goes below. */
static double mean_kl(pl_tag_gnn *m, const capture *c)
{
    double sum = 0;
    for (int i = 0; i < c->n; i++) {
        int n = c->in[i]->n_cand;
        double *p = malloc((size_t)n * sizeof *p);
        pl_tag_gnn_priors(m, c->in[i], p);
        for (int a = 0; a < n; a++) {
            double t = c->target[i][a];
            if (t > 0) sum += t * (log(t) - log(p[a] > 1e-300 ? p[a] : 1e-300));
        }
        free(p);
    }
    return sum / c->n;
}

static pl_tag_distill_opts one_search(const char **models, const int *batches)
{
    return (pl_tag_distill_opts){.models = models,
                                 .batches = batches,
                                 .n_models = 1,
                                 .iterations = 60,
                                 .min_visits = 5,
                                 .rounds = 1,
                                 .seed = 3};
}

/* One round: the samples are exactly the first search's vertices with enough visits (the
 * search is the one repeated here: under uniform priors, or guided by the same fresh model with
 * self_play), and the Adam steps on them bring the prior closer to their targets. */
static void one_round(bool self_play)
{
    const char *models[] = {MODEL};
    const int batches[] = {BATCH};
    capture c = {0};
    pl_tag_gnn *fresh = pl_tag_gnn_new(7);
    first_search(fresh, self_play, 60, 5, &c);
    assert_true(c.n >= 2); /* the root and at least one child */

    pl_tag_gnn *m = pl_tag_gnn_new(7);
    pl_tag_distill_opts o = one_search(models, batches);
    o.steps = 100, o.self_play = self_play;
    pl_tag_distill_result r;
    pl_err err = {""};
    assert_int_equal(pl_tag_distill(m, &o, &r, &err), 0);
    assert_int_equal(r.rounds, 1);
    assert_int_equal(r.samples, c.n);
    assert_int_equal(r.skipped, 0);
    double before = mean_kl(fresh, &c), after = mean_kl(m, &c);
    assert_true(after < 0.8 * before);
    /* the first and the last minibatch are different draws of the samples, whose targets'
     * entropies (the floors of their cross-entropies) differ: only the KL above, over the same
     * samples, says that the training brought the prior closer */
    assert_true(isfinite(r.first_loss) && isfinite(r.last_loss));
    capture_free(&c);
    pl_tag_gnn_free(fresh);
    pl_tag_gnn_free(m);
}

static void test_one_round_uniform_teacher(void **state)
{
    (void)state;
    one_round(false);
}

static void test_one_round_self_play(void **state)
{
    (void)state;
    one_round(true);
}

/* The same options give the same weights, bit for bit; another seed (minibatch draws) does
 * not. */
static void test_deterministic(void **state)
{
    (void)state;
    const char *models[] = {MODEL};
    const int batches[] = {BATCH};
    float *w[3];
    for (int k = 0; k < 3; k++) {
        pl_tag_gnn *m = pl_tag_gnn_new(7);
        pl_tag_distill_opts o = one_search(models, batches);
        o.rounds = 2, o.steps = 4, o.seed = k < 2 ? 3 : 4;
        pl_tag_distill_result r;
        pl_err err = {""};
        assert_int_equal(pl_tag_distill(m, &o, &r, &err), 0);
        pl_params *p = pl_tag_gnn_params(m);
        long n = pl_params_count(p), at = 0;
        w[k] = malloc((size_t)n * sizeof(float));
        for (int i = 0; i < p->n; i++) {
            memcpy(w[k] + at, p->p[i]->w, (size_t)p->p[i]->rows * p->p[i]->cols * sizeof(float));
            at += (long)p->p[i]->rows * p->p[i]->cols;
        }
        if (k == 2) {
            assert_memory_equal(w[0], w[1], (size_t)n * sizeof(float));
            assert_memory_not_equal(w[0], w[2], (size_t)n * sizeof(float));
        }
        pl_tag_gnn_free(m);
    }
    free(w[0]), free(w[1]), free(w[2]);
}

/* A threshold no vertex reaches is an error that says so, not an untrained file; a round
 * without a sample (no step taken) is not a divergence: every round runs. */
static void test_no_sample_is_an_error(void **state)
{
    (void)state;
    const char *models[] = {MODEL};
    const int batches[] = {BATCH};
    pl_tag_gnn *m = pl_tag_gnn_new(7);
    pl_tag_distill_opts o = one_search(models, batches);
    o.min_visits = 1000, o.rounds = 2;
    pl_tag_distill_result r;
    pl_err err = {""};
    assert_int_equal(pl_tag_distill(m, &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "1000 visits in 2 searches"));
    assert_int_equal(r.rounds, 2);
    pl_tag_gnn_free(m);
}

/* The CLI: weights and FILE.json written, the held-out model left out and recorded, the
 * weights usable by `placer train --prior gnn`. */
static void test_cli(void **state)
{
    (void)state;
    char dir[256], args[1024];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "distill"), 0);
    snprintf(args, sizeof args,
             "learn-prior models/vgg19.onnx:8 models/resnet50.onnx:8 --hold-out resnet50 "
             "--rounds 1 --iterations 30 --min-visits 5 --steps 2 -o %s/p.weights",
             dir);
    char *out = NULL;
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    snprintf(args, sizeof args, "%s/p.weights.json", dir);
    json_error_t je;
    json_t *doc = json_load_file(args, 0, &je);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "format")), "placer-prior/1");
    assert_string_equal(json_string_value(json_object_get(doc, "held_out")), "resnet50");
    json_t *ms = json_object_get(doc, "models");
    assert_int_equal(json_array_size(ms), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ms, 0), "file")),
                        "models/vgg19.onnx");
    assert_int_equal(tu_num(json_array_get(ms, 0), "batch"), 8);
    assert_int_equal(tu_num(doc, "searches"), 1);
    json_decref(doc);
    snprintf(args, sizeof args,
             "train models/vgg19.onnx --cluster examples/clusters/tag-sfb.json --batch 2 --budget "
             "3 --placer none --prior gnn --prior-file %s/p.weights",
             dir);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    tu_rmtree(dir);
}

static void test_cli_refusals(void **state)
{
    (void)state;
    tu_expect_refusal("learn-prior -o /tmp/x.weights", "which models?");
    tu_expect_refusal("learn-prior models/vgg19.onnx", "-o FILE");
    tu_expect_refusal("learn-prior models/vgg19.onnx -o /tmp/x.weights --hold-out nope",
                      "--hold-out nope: no model");
    tu_expect_refusal("learn-prior models/vgg19.onnx -o /tmp/x.weights --hold-out vgg19",
                      "no model to train on");
    tu_expect_refusal("learn-prior models/vgg19.onnx:0 -o /tmp/x.weights", "batch");
    tu_expect_refusal("learn-prior models/vgg19.onnx -o /tmp/x.weights --max-gpus 1", "--max-gpus");
    tu_expect_refusal("learn-prior models/vgg19.onnx -o /tmp/x.weights --init /nonexistent.w",
                      "/nonexistent.w");
    tu_expect_refusal("learn-prior models/nope.onnx --rounds 1 -o /tmp/x.weights", "nope.onnx");
    /* nothing written when training fails */
    assert_int_equal(access("/tmp/x.weights", F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_round_uniform_teacher),
        cmocka_unit_test(test_one_round_self_play),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_no_sample_is_an_error),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_cli_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
