/* distill.c: training TAG's GNN prior by MCTS distillation (docs/learn.md, "Training the prior";
 * digest §3.2.4). Each round takes a model and a random topology from the training ranges, runs
 * MCTS (under uniform priors, or guided by the prior being trained with self_play), and turns
 * every vertex that gathered at least min_visits visits into a sample: the heterogeneous graph
 * of the vertex's state and, as target, its normalised visit counts N(s, a) / sum N(s, .).
 * Samples go into a replay buffer; after each search the network takes a few Adam steps on
 * minibatches drawn from the buffer, minimising the cross-entropy between target and prior. */
#include "placer/learn.h"
#include "placer/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sample {
    pl_tag_input *in;
    double *target;
} sample;

typedef struct buffer {
    sample *s;
    int n, cap, next; /* a ring once full: the oldest sample is replaced */
    long added;
} buffer;

typedef struct collect {
    buffer *b;
    int cap;
    pl_err *err;
    int failed;
} collect;

static void buffer_put(buffer *b, int cap, pl_tag_input *in, double *target)
{
    if (b->n < cap) {
        pl_grow((void **)&b->s, &b->cap, b->n + 1, sizeof *b->s);
        b->s[b->n++] = (sample){in, target};
    } else {
        sample *old = &b->s[b->next];
        pl_tag_input_free(old->in), free(old->target);
        *old = (sample){in, target};
        b->next = (b->next + 1) % cap;
    }
    b->added++;
}

/* The MCTS hook: one sample per vertex with enough visits (the state's feedback is the
 * simulation of its completed strategy, as the prior sees it during search). */
static void on_vertex(const pl_train_ctx *x, const pl_train_strategy *partial, int group,
                      const pl_train_action *a, int n, const double *visits, void *user)
{
    collect *c = user;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += visits[i];
    if (!(sum > 0) || c->failed) return;
    pl_train_eval fb;
    pl_err err = {""};
    pl_train_eval_opts eo = {.feedback = true};
    if (pl_train_evaluate_opts(x, partial, &eo, &fb, &err) < 0) {
        c->failed = 1;
        *c->err = err;
        return;
    }
    double *target = pl_malloc((size_t)n * sizeof *target);
    for (int i = 0; i < n; i++)
        target[i] = visits[i] / sum;
    pl_tag_input *in = pl_tag_input_build(x, partial, &fb, group, a, n);
    pl_train_eval_free(&fb);
    buffer_put(c->b, c->cap, in, target);
}

/* ---- the instances: the models' training graphs, built once ---- */

typedef struct model {
    pl_graph *fwd;
    pl_train_graph *t;
} model;

static void models_free(model *ms, int n)
{
    for (int i = 0; i < n; i++)
        pl_train_graph_free(ms[i].t), pl_graph_free(ms[i].fwd);
    free(ms);
}

static model *models_load(const pl_tag_distill_opts *o, pl_err *err)
{
    model *ms = pl_calloc((size_t)o->n_models, sizeof *ms);
    for (int i = 0; i < o->n_models; i++) {
        ms[i].fwd = pl_graph_load(o->models[i], NULL, err);
        pl_train_opts to = {.batch = o->batches ? o->batches[i] : 0};
        if (!ms[i].fwd || pl_train_graph_build(ms[i].fwd, &to, &ms[i].t, err) < 0) {
            pl_err_prefix(err, "%s", o->models[i]);
            models_free(ms, i + 1);
            return NULL;
        }
    }
    return ms;
}

/* ---- rounds ---- */

/* Adam steps on minibatches drawn from the buffer; *first and *last get the mean loss of the
 * first and of the last minibatch (left alone when the buffer is empty). */
static void fit(pl_tag_gnn *m, const buffer *b, const pl_tag_distill_opts *o, uint64_t *rng,
                double *first, double *last)
{
    for (int s = 0; s < o->steps && b->n > 0; s++) {
        int k = o->minibatch < b->n ? o->minibatch : b->n;
        double sum = 0;
        for (int i = 0; i < k; i++) {
            const sample *x = &b->s[pl_rng_below(rng, b->n)];
            sum += pl_tag_gnn_accumulate(m, x->in, x->target);
        }
        /* the minibatch's gradients are summed, not averaged: Adam's step does not depend on
         * the gradient's scale, and the clip (norm 5) bounds a minibatch of outliers */
        pl_tag_gnn_update(m, o->lr);
        if (s == 0) *first = sum / k;
        *last = sum / k;
    }
}

/* One search on model mi and topology seed ts, guided by the current prior; its vertices with
 * enough visits become samples. */
static int search_round(pl_tag_gnn *m, const model *mo, uint64_t ts, const pl_tag_distill_opts *o,
                        buffer *b, int *found, pl_err *err)
{
    pl_cluster_random_opts co = {.min_gpus = 2, .max_gpus = o->max_gpus};
    pl_cluster *c = pl_cluster_random(ts, &co, err);
    if (!c) return -1;
    pl_train_ctx x;
    if (pl_train_ctx_init(&x, mo->t, c, NULL, o->max_groups, err) < 0) {
        pl_cluster_free(c);
        return -1;
    }
    long before = b->added;
    collect col = {.b = b, .cap = o->buffer, .err = err};
    pl_train_search_opts so = {.iterations = o->iterations,
                               .prior = o->self_play ? pl_tag_gnn_prior : NULL,
                               .prior_user = m,
                               .no_sfb = true,
                               .no_refine = true,
                               .seed = (unsigned)ts,
                               .on_vertex = on_vertex,
                               .on_vertex_user = &col,
                               .min_visits = o->min_visits};
    pl_train_search_result r;
    int rc = pl_train_search(&x, &so, &r, err);
    if (rc == 0) pl_train_search_result_free(&r);
    if (rc == 0 && col.failed) rc = -1;
    *found = (int)(b->added - before);
    pl_train_ctx_free(&x);
    pl_cluster_free(c);
    return rc;
}

/* After the fit of search `round`: a loss that is not a number, or a weight that is not finite
 * or past PL_WEIGHT_MAX, means the training diverged; its weights would make the next
 * search's priors NaN and must not be written (docs/learn.md, "Training the prior"). */
static int diverged(pl_tag_gnn *m, int round, double loss, const pl_tag_distill_opts *o,
                    pl_err *err)
{
    pl_err why = {""};
    if (isnan(loss))
        snprintf(why.msg, sizeof why.msg, "the loss is not a number");
    else if (isinf(loss))
        snprintf(why.msg, sizeof why.msg, "the loss is infinite");
    else if (pl_params_check(pl_tag_gnn_params(m), &why) == 0)
        return 0;
    return pl_err_set(err,
                      "the training diverged after search %d (%s); nothing is written: lower "
                      "--lr (it is %g)",
                      round, why.msg, (double)o->lr);
}

static void buffer_free(buffer *b)
{
    for (int i = 0; i < b->n; i++)
        pl_tag_input_free(b->s[i].in), free(b->s[i].target);
    free(b->s);
}

static void defaults(pl_tag_distill_opts *o)
{
    if (o->max_groups <= 0) o->max_groups = PL_TAG_DISTILL_GROUPS;
    if (o->max_gpus <= 0) o->max_gpus = PL_TAG_DISTILL_GPUS;
    if (o->n_topologies <= 0) o->n_topologies = PL_TAG_DISTILL_TOPOLOGIES;
    if (o->iterations <= 0) o->iterations = PL_TAG_DISTILL_ITERATIONS;
    if (o->min_visits <= 0) o->min_visits = PL_TAG_DISTILL_VISITS;
    if (o->steps <= 0) o->steps = 32;
    if (o->minibatch <= 0) o->minibatch = 16;
    if (o->buffer <= 0) o->buffer = 4096;
    if (!(o->lr > 0)) o->lr = 1e-3f;
    if (o->rounds <= 0 && !(o->time_s > 0)) o->rounds = o->n_models * o->n_topologies;
}

int pl_tag_distill(pl_tag_gnn *m, const pl_tag_distill_opts *opts, pl_tag_distill_result *r,
                   pl_err *err)
{
    pl_tag_distill_opts o = *opts;
    defaults(&o);
    memset(r, 0, sizeof *r);
    r->first_loss = r->last_loss = NAN;
    if (o.n_models <= 0) return pl_err_set(err, "learn-prior: no model to train on");
    double t0 = pl_now();
    model *ms = models_load(&o, err);
    if (!ms) return -1;
    buffer b = {0};
    uint64_t rng = o.seed ? o.seed : 1;
    pl_rng_next(&rng);
    int rc = 0;
    for (int round = 0; rc == 0; round++) {
        if (o.rounds > 0 && round >= o.rounds) break;
        if (o.time_s > 0 && pl_now() - t0 >= o.time_s) break;
        int mi = round % o.n_models;
        uint64_t ts = 1 + (uint64_t)(round / o.n_models) % (uint64_t)o.n_topologies;
        int found = 0;
        pl_err e = {""};
        if (search_round(m, &ms[mi], ts, &o, &b, &found, &e) < 0) {
            r->skipped++;
            snprintf(r->last_skip, sizeof r->last_skip, "%.200s, topology %llu: %.700s",
                     o.models[mi], (unsigned long long)ts, e.msg);
        }
        double first = NAN, loss = NAN;
        fit(m, &b, &o, &rng, &first, &loss);
        /* an empty buffer took no step (loss NaN, weights as they were): nothing to judge */
        if (b.n > 0 && diverged(m, round + 1, loss, &o, err) < 0) {
            rc = -1;
            break;
        }
        if (isnan(r->first_loss)) r->first_loss = first;
        if (!isnan(loss)) r->last_loss = loss;
        r->rounds = round + 1, r->samples = b.added;
        if (o.progress) o.progress(r, o.models[mi], (int)ts, found, loss, o.progress_user);
    }
    if (rc == 0 && r->samples == 0) /* not over a divergence in the first search's fit */
        rc = pl_err_set(err, "learn-prior: no vertex reached %d visits in %d searches (%s)",
                        o.min_visits, r->rounds, r->skipped ? r->last_skip : "raise --iterations");
    r->seconds = pl_now() - t0;
    buffer_free(&b);
    models_free(ms, o.n_models);
    return rc;
}
