/* bench_prior: TAG's GNN prior bench (issue 17; docs/learn.md, "Distillation budget"; the
 * paper's Tables 7 and 8). Two modes.
 *
 *   bench_prior [--iterations K] [--topologies N] [--max-gpus G] [--groups G]
 *               [--cluster FILE] -- MODEL:BATCH...
 *
 * Each model held out in turn: MCTS alone (no refinement, no SFB) on N unseen random
 * topologies (seeds BENCH_SEED0 + 1 .. + N, disjoint from the training seeds 1 .. 100000), with
 * the uniform prior and, when prior_for() gives one, with the prior trained without that
 * model (--cluster FILE: on that cluster instead, e.g. TAG's testbed). Per model: the mean MCTS
 * iterations until a strategy beats DP-NCCL (a search that never does within K counts K, and the
 * table says how many did), the mean DP-NCCL and best iteration times, beside the paper's Table 7
 * (Pure MCTS, TAG) and Table 8 (TAG-).
 *
 *   bench_prior --budget [--iterations K] [--topologies N] [--caps 4,8,16] [--groups-list
 *               60,24,16] [--thresholds 10,25,50,100] -- MODEL:BATCH...
 *
 * What a distillation run costs: per model, GPU cap and op-group count, on N training
 * topologies (seeds 1 ..), the time of the context (grouping, costs), of one strategy
 * evaluation, of an MCTS search of K iterations, and the tree vertices it leaves at each of
 * four visit thresholds or more (the distillation samples at each threshold).
 *
 *   bench_prior --write-cluster SEED [--max-gpus G]
 *
 * prints the placer-cluster/1 document of a topology the bench (2 to G GPUs) or a
 * distillation run would use, to look at or to give a verb's --cluster. */
#include "placer/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_MODELS = 16, MAX_LIST = 8 };
/* Training topologies are seeds 1 .. BENCH_SEED0; the bench's start after. */
#define BENCH_SEED0 100000
/* --cluster FILE: the held-out searches run on this cluster (TAG's testbed or cloud, Table 8's
 * columns) instead of random topologies. */
static const char *fixed_cluster;

/* ---- the prior per held-out model ---- */

/* The prior MCTS uses when `model` (the file's base name without .onnx) is held out: TAG's GNN
 * with the weights `make priors` trained without that model
 * (models/priors/tag-gnn-without-MODEL.weights, run from the repository's root); fn NULL when
 * there are none (the bench then runs the uniform prior alone). */
typedef struct held_prior {
    pl_train_prior_fn fn;
    void *user;
    void (*release)(void *user);
} held_prior;

static void release_gnn(void *user)
{
    pl_tag_gnn_free(user);
}

static held_prior prior_for(const char *model)
{
    char path[512];
    snprintf(path, sizeof path, "models/priors/tag-gnn-without-%s.weights", model);
    if (access(path, R_OK) != 0) return (held_prior){0}; /* not trained: uniform alone */
    pl_tag_gnn *m = pl_tag_gnn_new(1);
    pl_err err = {""};
    if (pl_tag_gnn_load(m, path, &err) < 0) {
        fprintf(stderr, "bench_prior: %s\n", err.msg);
        pl_tag_gnn_free(m);
        return (held_prior){0};
    }
    return (held_prior){pl_tag_gnn_prior, m, release_gnn};
}

/* ---- the paper's figures (digest §3.5) ---- */

typedef struct paper_row {
    const char *tag_model, *zoo; /* TAG's benchmark, placer's zoo stand-in */
    double pure, tag, tag_minus_testbed, tag_minus_cloud; /* NAN: not given */
} paper_row;

static const paper_row paper[] = {
    {"InceptionV3", "inception_v3", 66.0, 9.5, 456.1, 117.7},
    {"ResNet101", "resnet50", 73.4, 4.6, 7.1, 10.4},
    {"VGG19", "vgg19", 56.6, 17.7, 213.6, 43.6},
    {"Transformer", "transformer", 145.0, 121.8, 80.3, 13.4},
    {"BERT-Small", "bert_base", 97.8, 7.9, 279.6, 84.5},
    {"BERT-Large", "gpt2_small", NAN, NAN, NAN, NAN},
};

static const paper_row *paper_of(const char *zoo)
{
    for (size_t i = 0; i < sizeof paper / sizeof *paper; i++)
        if (!strcmp(paper[i].zoo, zoo)) return &paper[i];
    return NULL;
}

/* ---- models ---- */

typedef struct model {
    char name[128];
    int batch;
    pl_graph *g;
    pl_train_graph *t;
} model;

static int model_load(const char *arg, model *m, pl_err *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", arg);
    char *colon = strrchr(path, ':');
    m->batch = colon ? atoi(colon + 1) : 0;
    if (colon) *colon = 0;
    const char *slash = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%.100s", slash ? slash + 1 : path);
    char *dot = strstr(m->name, ".onnx");
    if (dot) *dot = 0;
    pl_train_opts to = {.batch = m->batch};
    m->g = pl_graph_load(path, NULL, err);
    return m->g ? pl_train_graph_build(m->g, &to, &m->t, err) : -1;
}

static void model_free(model *m)
{
    pl_train_graph_free(m->t);
    pl_graph_free(m->g);
}

/* ---- held-out mode ---- */

typedef struct tally {
    double iters, iters_hv, dp_s, best_s, speedup;
    int beat, beat_hv, n;
} tally;

/* The first iteration whose best beats Horovod's time (*t[0]): in t[1], 0 until then. */
static void watch(int iteration, double best_s, double dp_s, void *user)
{
    (void)dp_s;
    double *t = user;
    if (t[1] == 0 && best_s < t[0] * (1 - 1e-9)) t[1] = iteration;
}

/* Horovod (its tensor fusion, docs/train.md "Baselines"): INFINITY when it does not fit or
 * fails. */
static double horovod_s(const pl_train_ctx *x)
{
    pl_err err = {""};
    pl_train_strategy *s = pl_train_horovod(x, NULL, &err);
    pl_train_eval e;
    double t = INFINITY;
    if (s && pl_train_evaluate(x, s, &e, &err) == 0) {
        if (!e.oom) t = e.iteration_s;
        pl_train_eval_free(&e);
    }
    pl_train_strategy_free(s);
    return t;
}

/* One search on one topology, added to *t; -1 on failure (said on stderr). */
static int search_once(const pl_train_ctx *x, int iterations, const held_prior *p, tally *t)
{
    double hv[2] = {horovod_s(x), 0};
    pl_train_search_opts so = {.iterations = iterations,
                               .progress = watch,
                               .progress_user = hv,
                               .seed = 1,
                               .no_refine = true,
                               .no_sfb = true,
                               .prior = p ? p->fn : NULL,
                               .prior_user = p ? p->user : NULL};
    pl_train_search_result r;
    pl_err err = {""};
    if (pl_train_search(x, &so, &r, &err) < 0) {
        fprintf(stderr, "bench_prior: %s\n", err.msg);
        return -1;
    }
    if (isfinite(r.dp_s) && isfinite(r.mcts_s)) {
        int k = r.iterations_to_beat_dp;
        t->iters += k > 0 ? k : iterations, t->beat += k > 0;
        t->iters_hv += hv[1] > 0 ? hv[1] : iterations, t->beat_hv += hv[1] > 0;
        t->dp_s += r.dp_s, t->best_s += r.mcts_s, t->speedup += r.dp_s / r.mcts_s - 1, t->n++;
    }
    pl_train_search_result_free(&r);
    return 0;
}

static void print_tally(const char *label, const tally *t)
{
    if (!t->n) {
        printf(" %-8s %7s %7s %7s %7s %9s %9s %7s", label, "-", "-", "-", "-", "-", "-", "-");
        return;
    }
    printf(" %-8s %7.1f %3d/%-3d %7.1f %3d/%-3d %9.2f %9.2f %6.1f%%", label, t->iters / t->n,
           t->beat, t->n, t->iters_hv / t->n, t->beat_hv, t->n, 1e3 * t->dp_s / t->n,
           1e3 * t->best_s / t->n, 100 * t->speedup / t->n);
}

static void held_out(model *m, int iterations, int topologies, int max_gpus, int groups)
{
    held_prior p = prior_for(m->name);
    tally uni = {0}, gnn = {0};
    for (int k = 1; k <= (fixed_cluster ? 1 : topologies); k++) {
        pl_err err = {""};
        pl_cluster_random_opts co = {.min_gpus = 2, .max_gpus = max_gpus};
        pl_cluster *c = fixed_cluster ? pl_cluster_load(fixed_cluster, &err)
                                      : pl_cluster_random(BENCH_SEED0 + k, &co, &err);
        pl_train_ctx x;
        if (!c || pl_train_ctx_init(&x, m->t, c, NULL, groups, &err) < 0) {
            fprintf(stderr, "bench_prior: %s: %s\n", m->name, err.msg);
            pl_cluster_free(c);
            continue;
        }
        search_once(&x, iterations, NULL, &uni);
        if (p.fn) search_once(&x, iterations, &p, &gnn);
        pl_train_ctx_free(&x);
        pl_cluster_free(c);
    }
    if (p.release) p.release(p.user);
    const paper_row *pr = paper_of(m->name);
    char label[160];
    snprintf(label, sizeof label, "%s@%d", m->name, m->batch);
    printf("  %-18s", label);
    print_tally("uniform", &uni);
    print_tally(p.fn ? "gnn" : "(no gnn)", &gnn);
    if (pr && !isnan(pr->pure))
        printf("   | %-11s %6.1f %6.1f %7.1f%% %7.1f%%\n", pr->tag_model, pr->pure, pr->tag,
               pr->tag_minus_testbed, pr->tag_minus_cloud);
    else
        printf("   | %-11s %6s %6s %8s %8s\n", pr ? pr->tag_model : "-", "-", "-", "-", "-");
}

/* ---- budget mode ---- */

/* The visit thresholds the budget counts vertices at (--thresholds). */
static int threshold[4] = {10, 25, 50, 100};

typedef struct census {
    int at[4]; /* vertices with at least threshold[k] visits */
} census;

static void count_vertex(const pl_train_ctx *x, const pl_train_strategy *partial, int group,
                         const pl_train_action *a, int n, const double *visits, void *user)
{
    (void)x, (void)partial, (void)group, (void)a;
    census *c = user;
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += visits[k];
    for (int k = 0; k < 4; k++)
        c->at[k] += sum >= threshold[k];
}

static void budget_one(model *m, int iterations, int topologies, int cap, int groups)
{
    double ctx_s = 0, eval_s = 0, mcts_s = 0, evals = 0;
    census cs = {{0}};
    int n = 0, gpus = 0, dgroups = 0, ogroups = 0;
    for (int k = 1; k <= topologies; k++) {
        pl_err err = {""};
        pl_cluster_random_opts co = {.min_gpus = 2, .max_gpus = cap};
        pl_cluster *c = pl_cluster_random((uint64_t)k, &co, &err);
        pl_train_ctx x;
        double t0 = pl_now();
        if (!c || pl_train_ctx_init(&x, m->t, c, NULL, groups, &err) < 0) {
            fprintf(stderr, "bench_prior: %s: %s\n", m->name, err.msg);
            pl_cluster_free(c);
            continue;
        }
        double t1 = pl_now();
        pl_train_strategy *dp = pl_train_dp(&x, false, false);
        pl_train_eval e;
        int rc = pl_train_evaluate(&x, dp, &e, &err);
        double t2 = pl_now();
        pl_train_strategy_free(dp);
        if (rc == 0) evals += e.compiled_ops, pl_train_eval_free(&e);
        pl_train_search_opts so = {.iterations = iterations,
                                   .seed = 1,
                                   .no_refine = true,
                                   .no_sfb = true,
                                   .on_vertex = count_vertex,
                                   .on_vertex_user = &cs,
                                   .min_visits = threshold[0]};
        pl_train_search_result r;
        if (rc == 0 && pl_train_search(&x, &so, &r, &err) == 0) {
            ctx_s += t1 - t0, eval_s += t2 - t1, mcts_s += r.search_s, n++;
            gpus += c->n_devs, dgroups += x.dg.n, ogroups += x.og.n;
            pl_train_search_result_free(&r);
        } else
            fprintf(stderr, "bench_prior: %s: %s\n", m->name, err.msg);
        pl_train_ctx_free(&x);
        pl_cluster_free(c);
    }
    if (!n) return;
    printf("  %-14s %4d %6d %5.1f %5.1f %5.1f %7.0f %8.3f %8.1f %8.2f %6.1f %6.1f %6.1f %6.1f\n",
           m->name, cap, groups, (double)gpus / n, (double)dgroups / n, (double)ogroups / n,
           evals / n, ctx_s / n, 1e3 * eval_s / n, mcts_s / n, (double)cs.at[0] / n,
           (double)cs.at[1] / n, (double)cs.at[2] / n, (double)cs.at[3] / n);
}

/* ---- a topology to look at ---- */

/* Prints the placer-cluster/1 document of seed's topology (2 to max_gpus GPUs, as the bench
 * draws them). */
static int write_cluster(uint64_t seed, int max_gpus)
{
    pl_err err = {""};
    pl_cluster_random_opts co = {.min_gpus = 2, .max_gpus = max_gpus};
    char *text = pl_cluster_random_json(seed, &co, &err);
    if (!text) {
        fprintf(stderr, "bench_prior: %s\n", err.msg);
        return 2;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

/* ---- options ---- */

static int parse_list(const char *s, int *out)
{
    int n = 0;
    for (const char *p = s; *p && n < MAX_LIST; n++) {
        out[n] = atoi(p);
        p = strchr(p, ',');
        if (!p) return n + 1;
        p++;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *args[MAX_MODELS];
    int nm = 0, iterations = 100, topologies = 10, max_gpus = 16, groups = 16;
    int caps[MAX_LIST] = {4, 8, 16}, ncaps = 3, glist[MAX_LIST] = {60, 24, 16}, ng = 3;
    bool budget = false, after = false;
    long long write_seed = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (after && nm < MAX_MODELS)
            args[nm++] = a;
        else if (!strcmp(a, "--"))
            after = true;
        else if (!strcmp(a, "--budget"))
            budget = true;
        else if (v && !strcmp(a, "--iterations"))
            iterations = atoi(v), i++;
        else if (v && !strcmp(a, "--topologies"))
            topologies = atoi(v), i++;
        else if (v && !strcmp(a, "--max-gpus"))
            max_gpus = atoi(v), i++;
        else if (v && !strcmp(a, "--groups"))
            groups = atoi(v), i++;
        else if (v && !strcmp(a, "--cluster"))
            fixed_cluster = v, i++;
        else if (v && !strcmp(a, "--caps"))
            ncaps = parse_list(v, caps), i++;
        else if (v && !strcmp(a, "--write-cluster"))
            write_seed = atoll(v), i++;
        else if (v && !strcmp(a, "--groups-list"))
            ng = parse_list(v, glist), i++;
        else if (v && !strcmp(a, "--thresholds") && parse_list(v, threshold) == 4)
            i++;
        else {
            fprintf(stderr, "bench_prior: unknown option '%s' (see bench/bench_prior.c)\n", a);
            return 2;
        }
    }
    if (write_seed >= 0) return write_cluster((uint64_t)write_seed, max_gpus);
    if (!nm || iterations < 1 || topologies < 1) {
        fprintf(stderr, "usage: bench_prior [--budget] [--iterations K] [--topologies N] "
                        "[--max-gpus G] [--groups G] [--caps A,B] [--groups-list A,B] -- "
                        "MODEL:BATCH...\n");
        return 2;
    }
    if (budget)
        printf("  %-14s %4s %6s %5s %5s %5s %7s %8s %8s %8s  >=%-4d >=%-4d >=%-4d >=%-4d\n",
               "model", "cap", "max_g", "GPUs", "dgrp", "ogrp", "ops", "ctx s", "eval ms", "mcts s",
               threshold[0], threshold[1], threshold[2], threshold[3]);
    else
        printf("  %-18s %-8s %7s %7s %7s %7s %9s %9s %7s %-8s %7s %7s %7s %7s %9s %9s %7s   | "
               "%-11s %6s %6s %8s %8s\n",
               "model (held out)", "prior", "iter>DP", "beat", "iter>HV", "beat", "DP ms",
               "best ms", "vs DP", "prior", "iter>DP", "beat", "iter>HV", "beat", "DP ms",
               "best ms", "vs DP", "paper", "pure", "TAG", "TAG- tb", "TAG- cl");
    for (int i = 0; i < nm; i++) {
        model m;
        memset(&m, 0, sizeof m);
        pl_err err = {""};
        if (model_load(args[i], &m, &err) < 0) {
            fprintf(stderr, "bench_prior: %s\n", err.msg);
            model_free(&m);
            continue;
        }
        if (!budget) held_out(&m, iterations, topologies, max_gpus, groups);
        for (int c = 0; budget && c < ncaps; c++)
            for (int g = 0; g < ng; g++)
                budget_one(&m, iterations, topologies, caps[c], glist[g]);
        model_free(&m);
        fflush(stdout);
    }
    return 0;
}
