/* bench_train: TAG on a model's training (docs/train.md): per cluster and model, the
 * iteration time of TAG and of each baseline, TAG's speed-up over each, and MCTS iterations
 * until TAG beats DP-NCCL; then the SFB experiment (DP-NCCL and TAG with and without SFB).
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
    if (isnan(t)) printf(" %10s", "failed");
    else if (!isfinite(t)) printf(" %10s", "oom");
    else printf(" %10.2f", t * 1e3);
}

static void one(const pl_train_ctx *x, const char *model, int iterations, bool sfb_table)
{
    pl_err err = {""};
    pl_train_search_opts so = {.iterations = iterations, .seed = 1};
    pl_train_search_result r;
    double t0 = pl_now();
    if (pl_train_search(x, &so, &r, &err) < 0) {
        printf("  %-14s TAG failed: %s\n", model, err.msg);
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
    pl_train_eval pe;
    double heft = pl_train_placer(x, "heft", NULL, &pe, NULL, &err) == 0
                      ? (pe.oom ? INFINITY : pe.iteration_s)
                      : NAN;
    if (!isnan(heft)) pl_train_eval_free(&pe);
    printf("  %-14s", model);
    cell(tag), cell(r.dp_s), cell(dpp), cell(hv), cell(hg), cell(heft);
    double b[] = {r.dp_s, dpp, hv, hg, heft};
    for (int k = 0; k < 5; k++)
        if (isfinite(b[k])) printf(" %+7.0f%%", 100 * (b[k] / tag - 1));
        else printf(" %8s", "-");
    printf(" %6d %6d %7.1f\n", r.iterations_to_beat_dp, r.sfb_applied, pl_now() - t0);
    pl_train_search_result_free(&r);
}

int main(int argc, char **argv)
{
    const char *clusters[MAX_FILES], *models[MAX_FILES];
    int nc = 0, nm = 0, iterations = 100, i = 1;
    bool sfb = false, after = false;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sfb")) sfb = true;
        else if (!strcmp(argv[i], "--")) after = true;
        else if (after && nm < MAX_FILES) models[nm++] = argv[i];
        else if (!after && nc < MAX_FILES) clusters[nc++] = argv[i];
    }
    if (!nc || !nm) {
        fprintf(stderr, "usage: bench_train [--iterations N] [--sfb] CLUSTER... -- MODEL:BATCH...\n");
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
            printf("  %-14s %10s %10s %10s %10s %10s %10s %8s %8s %8s %8s %8s %6s %6s %7s\n",
                   "model", "TAG", "DP-NCCL", "DP-NCCL-P", "Horovod", "HeteroG", "HEFT", "vs DP",
                   "vs DP-P", "vs Hvd", "vs HetG", "vs HEFT", "beatDP", "SFB", "time s");
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
