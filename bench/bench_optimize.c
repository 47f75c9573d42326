/* bench_optimize.c: TASO's search (`placer optimize`) on the zoo, predicted and measured
 * (docs/rewrite.md, "Bench").
 *
 *   bench_optimize CLUSTER RUNS TIME_LIMIT_S MAX_WEIGHT_MB MODEL...
 *
 * For each model: pl_rw_search priced on CLUSTER's devices (default cost parameters, as
 * PLACER_CALIBRATION=off; alpha 1.05, at most 200 candidates, TIME_LIMIT_S), ops and predicted
 * time before and after; then the model inflated (pl_inflate_model, the same made-up weights
 * `--verify` uses), the search's log replayed on the inflated copy (pl_rw_replay) so that both
 * files hold the same weights, and both timed in onnxruntime on this CPU (its graph
 * optimisations "all" in both cases, 1 intra-op thread): the median of 2 x RUNS requests per
 * file (ROUNDS below). A model whose weights exceed MAX_WEIGHT_MB is not measured (inflating and
 * running it would take most of the bench's time): the row says so. When the search changed nothing
 * the file is timed once and the row says "same file". */
#include "placer/cluster.h"
#include "placer/report.h"
#include "placer/rewrite.h"
#include "placer/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* What the papers publish for the model: AutoDeep's foundation models (its Table V's second
 * group, §V) and the models of TASO's end-to-end figure (SOSP 2019 Fig. 7, a V100; its
 * per-model bars are a chart, not numbers in the text, so none is quoted). */
static const char *published(const char *name)
{
    static const char *const f[] = {"bert_base", "transformer", "gpt2_small", "vgg19"};
    static const char *const taso[] = {"bert_base", "resnet50", "resnext50"};
    bool in_f = false, in_taso = false;
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        in_f |= !strncmp(name, f[i], strlen(f[i]));
    for (size_t i = 0; i < sizeof taso / sizeof *taso; i++)
        in_taso |= !strncmp(name, taso[i], strlen(taso[i]));
    if (in_f && in_taso) return "AutoDeep: up to 23 %; TASO: in its Fig. 7";
    if (in_f) return "AutoDeep: up to 23 %";
    return in_taso ? "TASO: in its Fig. 7" : "-";
}

/* Requests timed per file per round after WARMUP untimed ones (the first requests after a load
 * run slower, bench_fidelity.c), in two rounds in the order before, after, after, before, so
 * that a change in the machine's load (the lead's jobs) falls on both files alike. */
enum { WARMUP = 3, ROUNDS = 2 };

/* Appends `runs` latencies of the model at path to lat (*n of them so far). */
static int timed(pl_ort *w, const char *path, int runs, double *lat, int *n, pl_err *err)
{
    pl_ort_result r = {0};
    int rc = pl_ort_load(w, &path, 1, err) < 0 || pl_ort_run(w, runs, WARMUP, &r, err) < 0 ? -1 : 0;
    for (int i = 0; rc == 0 && i < r.repeat; i++)
        lat[(*n)++] = r.latency_s[i];
    pl_ort_result_free(&r);
    return rc;
}

/* Megabytes of weights the model declares (with or without their data). */
static double weight_mb(const pl_rw_model *m, pl_err *err)
{
    pl_graph *g = pl_rw_graph(m, NULL, err);
    if (!g) return -1;
    double b = 0;
    for (int i = 0; i < g->n_tensors; i++)
        if ((g->tensors[i].flags & PL_TENSOR_WEIGHT) && g->tensors[i].bytes > 0)
            b += (double)g->tensors[i].bytes;
    pl_graph_free(g);
    return b / 1e6;
}

/* Both files timed: the inflated original and the log replayed on it. */
static int measure(const char *model, const pl_rw_search_result *r, int runs, double *before,
                   double *after, pl_err *err)
{
    char cache[1024], ref[1024], tmp[1100];
    if (pl_cache_dir("inflated", cache, sizeof cache, err) < 0) return -1;
    snprintf(tmp, sizeof tmp, "%s/bench-optimize-%ld.onnx", cache, (long)getpid());
    if (r->n_log ? pl_rw_replay_inflated(model, cache, r->log, r->n_log, ref, sizeof ref, tmp, err)
                 : pl_mkdir_p(cache, err) || pl_inflate_model(model, cache, ref, sizeof ref, err))
        return -1;
    pl_ort *o = pl_ort_start(&(pl_ort_opts){.threads = 1}, err);
    double *lat0 = calloc((size_t)(ROUNDS * runs), sizeof *lat0);
    double *lat1 = calloc((size_t)(ROUNDS * runs), sizeof *lat1);
    int rc = o ? 0 : -1, n0 = 0, n1 = 0; /* err says why when o is NULL */
    if (o && (!lat0 || !lat1)) rc = pl_err_set(err, "bench_optimize: out of memory");
    for (int k = 0; rc == 0 && k < ROUNDS; k++) {
        const char *first = k % 2 && r->n_log ? tmp : ref, *second = k % 2 ? ref : tmp;
        rc = timed(o, first, runs, first == ref ? lat0 : lat1, first == ref ? &n0 : &n1, err);
        if (rc == 0 && r->n_log)
            rc =
                timed(o, second, runs, second == ref ? lat0 : lat1, second == ref ? &n0 : &n1, err);
    }
    if (rc == 0) {
        *before = pl_median(lat0, n0);
        *after = r->n_log ? pl_median(lat1, n1) : *before;
    }
    free(lat0), free(lat1);
    pl_ort_stop(o);
    if (r->n_log) unlink(tmp);
    return rc;
}

static int bench(pl_table *t, const pl_cluster *c, const char *model, int runs, double limit,
                 double max_mb)
{
    pl_err err = {""};
    pl_rw_model *m = pl_rw_load(model, &err);
    pl_rw_search_result r = {0};
    pl_rw_search_opts so = {.c = c, .alpha = 1.05, .time_limit_s = limit, .max_expand = 200};
    double t0 = pl_now();
    if (!m || pl_rw_search(m, &so, &r, &err) < 0) {
        fprintf(stderr, "bench_optimize: %s\n", err.msg);
        pl_rw_free(m);
        return -1;
    }
    double secs = pl_now() - t0, mb = weight_mb(m, &err), before = 0, after = 0;
    char measured[160], speed[32] = "-";
    if (mb < 0) {
        fprintf(stderr, "bench_optimize: %s\n", err.msg);
        goto fail;
    }
    if (mb > max_mb) {
        snprintf(measured, sizeof measured, "skipped (%.0f MB of weights > %.0f MB)|-", mb, max_mb);
    } else {
        if (measure(model, &r, runs, &before, &after, &err) < 0) {
            fprintf(stderr, "bench_optimize: %s\n", err.msg);
            goto fail;
        }
        snprintf(measured, sizeof measured, "%.2f -> %.2f%s|%+.1f %%", before * 1e3, after * 1e3,
                 r.n_log ? "" : " (same file)", 100 * (after - before) / before);
    }
    if (r.cost0 > 0)
        snprintf(speed, sizeof speed, "%+.2f %%", 100 * (r.best_cost - r.cost0) / r.cost0);
    pl_table_row(t, "%s|%d -> %d|%d|%.2f -> %.2f|%s|%s|%.1f%s|%s", base(model), pl_rw_nodes(m),
                 pl_rw_nodes(r.best), r.n_log, r.cost0 * 1e3, r.best_cost * 1e3, speed, measured,
                 secs, r.timed_out ? " (limit)" : "", published(base(model)));
    pl_rw_search_result_free(&r);
    pl_rw_free(m);
    return 0;
fail:
    pl_rw_search_result_free(&r);
    pl_rw_free(m);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: bench_optimize CLUSTER RUNS TIME_LIMIT_S MAX_WEIGHT_MB MODEL...\n");
        return 2;
    }
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(argv[1], &err);
    if (!c) return fprintf(stderr, "bench_optimize: %s\n", err.msg), 1;
    int runs = atoi(argv[2]) > 0 ? atoi(argv[2]) : 5;
    double limit = atof(argv[3]), max_mb = atof(argv[4]);
    pl_table *t = pl_table_new("model|ops|>rewrites|predicted ms|>predicted|measured ms|>measured|"
                               ">search s|published");
    int status = 0;
    for (int i = 5; i < argc; i++)
        if (bench(t, c, argv[i], runs, limit, max_mb) < 0) status = 1;
    printf("predicted: pl_rw_price on %s (default cost parameters); measured: onnxruntime on this "
           "CPU, graph optimisations on in both, 1 thread, median of %d requests per file (%d "
           "rounds of %d after %d warm-ups, in the order before, after, after, before); "
           "search: alpha 1.05, at most 200 candidates, %g s\n",
           base(argv[1]), ROUNDS * runs, ROUNDS, runs, WARMUP, limit);
    pl_table_print(t, stdout);
    printf("published: TASO (SOSP 2019), up to 2.8x end to end over the graph optimizers of "
           "existing frameworks on a V100 GPU (Fig. 7: ResNet-50, NasNet-A, ResNeXt-50, NasRNN, "
           "BERT), 1.3x on a ResNet module; AutoDeep, up to 23 %% faster inference of foundation "
           "models than Google-RL, TASO and its DRL placement together on 4 x K80 (not TASO "
           "alone)\n");
    pl_table_free(t);
    pl_cluster_free(c);
    return status;
}
