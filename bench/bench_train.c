/* bench_train: TAG on a model's training (docs/train.md): per cluster and model, the
 * iteration time of TAG and of each baseline (FlexFlow's MCMC with MCTS's iterations and
 * seed among them), TAG's speed-up over each, and MCTS iterations until TAG beats DP-NCCL;
 * under each model, TAG's parts in turn (docs/train.md, "Who found the answer": MCTS with
 * uniform priors and with TAG's GNN, each alone after the same budget and seed, then the
 * refinement, then SFB) and which found TAG's answer; then the SFB experiment (DP-NCCL and TAG
 * with and without SFB).
 *
 *   bench_train [--iterations N] [--sfb] CLUSTER... -- MODEL:BATCH...
 *
 * With --sfb, each cluster is run with and without SFB instead (the paper's Table 5). */
#include "placer/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FILES = 32 };

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static double run(const pl_train_ctx *x, pl_train_strategy *s)
{
    pl_train_eval e;
    pl_err err = {""};
    double t = NAN;
    if (s && pl_train_evaluate(x, s, &e, &err) == 0) {
        t = e.oom ? INFINITY : e.iteration_s;
        pl_train_eval_free(&e);
    }
    pl_train_strategy_free(s);
    return t;
}

static void cell(double t)
{
    if (isnan(t))
        printf(" %10s", "failed");
    else if (!isfinite(t))
        printf(" %10s", "oom");
    else
        printf(" %10.2f", t * 1e3);
}

/* TAG's GNN for the model of `label` (NAME.onnx@BATCH): the weights `make priors` trained
 * without it (models/priors/tag-gnn-without-NAME.weights), else the shipped ones; NULL when
 * neither loads (run from the repository's root). *which: the file. */
static pl_tag_gnn *gnn_for(const char *label, char *which, size_t n)
{
    const char *name[2] = {"-without-", ""};
    for (int k = 0; k < 2; k++) {
        snprintf(which, n, "models/priors/tag-gnn%s%.*s.weights", name[k],
                 k ? 0 : (int)strcspn(label, ".@"), label);
        pl_tag_gnn *m = pl_tag_gnn_new(1);
        pl_err err = {""};
        if (pl_tag_gnn_load(m, which, &err) == 0) return m;
        pl_tag_gnn_free(m);
    }
    snprintf(which, n, "no GNN weights");
    return NULL;
}

static void part(const char *name, const pl_train_tree_result *t, double s)
{
    if (t && !t->ran) return;
    printf(" %s %.3f%s", name, t ? t->best_s * 1e3 : s * 1e3,
           t && t->at_start ? " (its start)" : "");
}

/* TAG's parts, under the model's row. */
static void parts(const pl_train_search_result *r, const char *which)
{
    printf("  %-14s parts, ms:", "");
    part("mcts-uniform", &r->uniform, 0), part("mcts-gnn", &r->prior, 0);
    part("refinement", NULL, r->refined_s), part("sfb", NULL, r->sfb_s);
    printf("; found by %s (GNN: %s)\n", pl_train_found_name(r->found_by), which);
}

static void one(const pl_train_ctx *x, const char *model, int iterations, bool sfb_table)
{
    pl_err err = {""};
    char which[256];
    pl_tag_gnn *gnn = sfb_table ? NULL : gnn_for(model, which, sizeof which);
    pl_train_search_opts so = {.iterations = iterations,
                               .seed = 1,
                               .prior = gnn ? pl_tag_gnn_prior : NULL,
                               .prior_user = gnn,
                               .uniform_too = true};
    pl_train_search_result r;
    double t0 = pl_now();
    if (pl_train_search(x, &so, &r, &err) < 0) {
        printf("  %-14s TAG failed: %s\n", model, err.msg);
        pl_tag_gnn_free(gnn);
        return;
    }
    double tag = r.eval.iteration_s;
    if (sfb_table) {
        so.no_sfb = true;
        pl_train_search_result r2;
        double tag_no = pl_train_search(x, &so, &r2, &err) == 0 ? r2.eval.iteration_s : NAN;
        if (!isnan(tag_no)) pl_train_search_result_free(&r2);
        pl_train_strategy *dp = pl_train_dp(x, false, false), *dps = pl_train_dp(x, false, false);
        int n = pl_train_sfb(x, dps, &err);
        double t_dp = run(x, dp), t_dps = run(x, dps);
        printf("  %-14s %10.2f %10.2f %+9.1f%% %10.2f %10.2f %+9.1f%%  (SFB: %d gradients in DP)\n",
               model, t_dp * 1e3, t_dps * 1e3, 100 * (t_dp / t_dps - 1), tag_no * 1e3, tag * 1e3,
               100 * (tag_no / tag - 1), n);
        pl_train_search_result_free(&r);
        return;
    }
    double dpp = run(x, pl_train_dp(x, true, false));
    double hv = run(x, pl_train_horovod(x, NULL, &err));
    double hg = run(x, pl_train_heterog(x, &err));
    pl_train_mcmc_opts mo = {.iterations = pl_train_search_iterations(&r), .seed = so.seed};
    double ff = run(x, pl_train_mcmc(x, &mo, NULL, &err));
    pl_train_eval pe;
    double heft = pl_train_placer(x, "heft", NULL, &pe, NULL, &err) == 0
                      ? (pe.oom ? INFINITY : pe.iteration_s)
                      : NAN;
    if (!isnan(heft)) pl_train_eval_free(&pe);
    printf("  %-14s", model);
    cell(tag), cell(r.dp_s), cell(dpp), cell(hv), cell(hg), cell(ff), cell(heft);
    double b[] = {r.dp_s, dpp, hv, hg, ff, heft};
    for (int k = 0; k < 6; k++)
        if (isfinite(b[k]))
            printf(" %+7.0f%%", 100 * (b[k] / tag - 1));
        else
            printf(" %8s", "-");
    printf(" %6d %6d %7.1f\n", r.iterations_to_beat_dp, r.sfb_applied, pl_now() - t0);
    parts(&r, which);
    pl_train_search_result_free(&r);
    pl_tag_gnn_free(gnn);
}

int main(int argc, char **argv)
{
    const char *clusters[MAX_FILES], *models[MAX_FILES];
    int nc = 0, nm = 0, iterations = 100, i = 1;
    bool sfb = false, after = false;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sfb"))
            sfb = true;
        else if (!strcmp(argv[i], "--"))
            after = true;
        else if (after && nm < MAX_FILES)
            models[nm++] = argv[i];
        else if (!after && nc < MAX_FILES)
            clusters[nc++] = argv[i];
    }
    if (!nc || !nm) {
        fprintf(stderr,
                "usage: bench_train [--iterations N] [--sfb] CLUSTER... -- MODEL:BATCH...\n");
        return 2;
    }
    for (int c = 0; c < nc; c++) {
        pl_err err = {""};
        pl_cluster *cl = pl_cluster_load(clusters[c], &err);
        if (!cl) {
            fprintf(stderr, "bench_train: %s\n", err.msg);
            return 2;
        }
        printf("%s (%d MCTS iterations; times in ms per iteration)\n", cl->name, iterations);
        if (sfb)
            printf("  %-14s %10s %10s %10s %10s %10s %10s\n", "model", "DP", "DP+SFB", "speed-up",
                   "TAG-SFB", "TAG", "speed-up");
        else
            printf("  %-14s %10s %10s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s %8s %6s %6s "
                   "%7s\n",
                   "model", "TAG", "DP-NCCL", "DP-NCCL-P", "Horovod", "HeteroG", "FF-MCMC", "HEFT",
                   "vs DP", "vs DP-P", "vs Hvd", "vs HetG", "vs MCMC", "vs HEFT", "beatDP", "SFB",
                   "time s");
        for (int m = 0; m < nm; m++) {
            char path[1024];
            snprintf(path, sizeof path, "%s", models[m]);
            char *colon = strrchr(path, ':');
            int batch = colon ? atoi(colon + 1) : 0;
            if (colon) *colon = 0;
            pl_graph *g = pl_graph_load(path, NULL, &err);
            pl_train_graph *t = NULL;
            pl_train_ctx x;
            pl_train_opts to = {.batch = batch};
            char label[128];
            snprintf(label, sizeof label, "%.100s@%d", base(path), batch);
            if (!g || pl_train_graph_build(g, &to, &t, &err) < 0 ||
                pl_train_ctx_init(&x, t, cl, NULL, 60, &err) < 0) {
                printf("  %-14s failed: %s\n", label, err.msg);
            } else {
                one(&x, label, iterations, sfb);
                pl_train_ctx_free(&x);
            }
            pl_train_graph_free(t);
            pl_graph_free(g);
        }
        pl_cluster_free(cl);
        printf("\n");
    }
    return 0;
}
