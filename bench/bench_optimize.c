/* bench_optimize.c: TASO's search (`placer optimize`) on the zoo and on generated blocks,
 * predicted and measured (docs/rewrite.md, "Bench").
 *
 *   bench_optimize CLUSTER RUNS TIME_LIMIT_S MAX_WEIGHT_MB MODEL...
 *
 * For each model: pl_rw_search priced on CLUSTER's devices with this machine's calibration
 * (pl_machine_params on the cluster's this_machine device, as `placer optimize` prices; the
 * defaults when the cluster has none), alpha 1.05, at most 200 candidates, TIME_LIMIT_S; ops and
 * predicted time before and after; then the model inflated (pl_inflate_model, the same made-up
 * weights `--verify` uses), the search's log replayed on the inflated copy (pl_rw_replay) so
 * that both files hold the same weights, and both timed in onnxruntime on this CPU (its graph
 * optimisations "all" in both cases, 1 intra-op thread) in RUNS runs, each of RUN_S of
 * predicted time per file after WARMUP requests, before and after in turn (the order alternating
 * between runs). A run's change is its median after over its median before; the row gives the
 * median change over the runs and their range, and the noise: the range of the runs' medians of the
 * file before, relative. A change whose runs all agree in sign and whose median exceeds the noise
 * is "beyond noise", and its sign is compared with the predicted one. A model whose weights exceed
 * MAX_WEIGHT_MB is not measured (inflating and running it would take most of the bench's time): the
 * row says so. When the search changed nothing the file is timed once per run and the row says
 * "same file". */
#include "placer/calib.h"
#include "placer/cluster.h"
#include "placer/report.h"
#include "placer/rewrite.h"
#include "placer/runtime.h"

#include <math.h>
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

/* Requests timed per file per run after WARMUP untimed ones (the first requests after a load
 * run slower, bench_fidelity.c): enough for RUN_S of predicted time, at least MIN_REQUESTS
 * and at most MAX_REQUESTS (a block of 0.1 ms measured by 10 requests varied by 50 % between
 * runs); before and after in turn, the order alternating between runs, so that a change in
 * the machine's load falls on both files alike. */
enum { WARMUP = 3, MIN_REQUESTS = 10, MAX_REQUESTS = 2000, MAX_RUNS = 10 };
#define RUN_S 0.2

static int requests_for(double predicted_s)
{
    double n = predicted_s > 0 ? RUN_S / predicted_s : MIN_REQUESTS;
    return n < MIN_REQUESTS ? MIN_REQUESTS : n > MAX_REQUESTS ? MAX_REQUESTS : (int)n;
}

/* The median latency of `requests` requests of the model at path. */
static double timed(pl_ort *w, const char *path, int requests, pl_err *err)
{
    pl_ort_result r = {0};
    double med = pl_ort_load(w, &path, 1, err) < 0 || pl_ort_run(w, requests, WARMUP, &r, err) < 0
                     ? -1
                     : pl_median(r.latency_s, r.repeat);
    pl_ort_result_free(&r);
    return med;
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

/* Per run k < runs, the medians before[k] and after[k] (after = before when nothing changed). */
typedef struct runs {
    int n, requests;
    double before[MAX_RUNS], after[MAX_RUNS];
} runs;

/* Both files timed: the inflated original and the log replayed on it. */
static int measure(const char *model, const pl_rw_site *log, int n_log, runs *m, pl_err *err)
{
    char cache[1024], ref[1024], tmp[1100];
    if (pl_cache_dir("inflated", cache, sizeof cache, err) < 0) return -1;
    snprintf(tmp, sizeof tmp, "%s/bench-optimize-%ld.onnx", cache, (long)getpid());
    if (n_log ? pl_rw_replay_inflated(model, cache, log, n_log, ref, sizeof ref, tmp, err)
              : pl_mkdir_p(cache, err) || pl_inflate_model(model, cache, ref, sizeof ref, err))
        return -1;
    pl_ort *o = pl_ort_start(&(pl_ort_opts){.threads = 1}, err);
    int rc = o ? 0 : -1; /* err says why when o is NULL */
    for (int k = 0; rc == 0 && k < m->n; k++) {
        bool swap = k % 2 && n_log;
        double a = timed(o, swap ? tmp : ref, m->requests, err);
        double b = a < 0 || !n_log ? a : timed(o, swap ? ref : tmp, m->requests, err);
        m->before[k] = swap ? b : a, m->after[k] = swap ? a : b;
        if (a < 0 || b < 0) rc = -1;
    }
    pl_ort_stop(o);
    if (n_log) unlink(tmp);
    return rc;
}

/* The measured cells: medians, change (median over runs, range), noise, and the verdict on the
 * predicted change's sign; *beyond and *agree say whether the change exceeds the noise and
 * whether the prediction has its sign. */
static void verdict(const runs *m, bool changed, double pred, char *out, size_t n, bool *beyond,
                    bool *agree)
{
    double b[MAX_RUNS], a[MAX_RUNS], c[MAX_RUNS];
    for (int k = 0; k < m->n; k++)
        b[k] = m->before[k], a[k] = m->after[k], c[k] = m->after[k] / m->before[k] - 1;
    double mb = pl_median(b, m->n), ma = pl_median(a, m->n), mc = pl_median(c, m->n);
    double noise = (b[m->n - 1] - b[0]) / mb; /* pl_median sorted b */
    bool same_sign = c[0] > 0 || c[m->n - 1] < 0;
    *beyond = changed && same_sign && fabs(mc) > noise;
    *agree = *beyond && (pred < 0) == (mc < 0) && pred != 0;
    if (!changed) {
        snprintf(out, n, "%.3f (same file)|-|%.1f %%|-", mb * 1e3, 100 * noise);
        return;
    }
    snprintf(out, n, "%.3f -> %.3f|%+.1f %% (%+.1f..%+.1f)|%.1f %%|%s (error %+.1f)", mb * 1e3,
             ma * 1e3, 100 * mc, 100 * c[0], 100 * c[m->n - 1], 100 * noise,
             !*beyond ? "within noise"
             : *agree ? "same sign"
                      : "OPPOSITE SIGN",
             100 * (pred - mc));
}

/* Rows beyond the noise and, of them, those whose predicted change has the measured sign:
 * [0] the search's answers, [1] every rule greedily. */
typedef struct tally {
    int beyond[2], agree[2];
} tally;

/* A rewrite of a model, the search's or every rule's: what a row shows. */
typedef struct outcome {
    const char *how; /* "search" or "all rules" */
    int ops0, ops;
    const pl_rw_site *log;
    int n_log;
    double cost0, cost, secs; /* predicted before and after; search seconds (-1: none) */
    bool timed_out;
} outcome;

static int row(pl_table *t, const char *model, const outcome *o, int n_runs, double mb,
               double max_mb, tally *tl)
{
    pl_err err = {""};
    double pred = o->cost0 > 0 ? (o->cost - o->cost0) / o->cost0 : 0;
    char measured[256], secs[32] = "-";
    if (mb > max_mb) {
        snprintf(measured, sizeof measured, "skipped (%.0f MB of weights > %.0f MB)|-|-|-", mb,
                 max_mb);
    } else {
        runs ms = {.n = n_runs, .requests = requests_for(o->cost0)};
        bool beyond, agree;
        if (measure(model, o->log, o->n_log, &ms, &err) < 0) {
            fprintf(stderr, "bench_optimize: %s: %s\n", model, err.msg);
            return -1;
        }
        verdict(&ms, o->n_log > 0, pred, measured, sizeof measured, &beyond, &agree);
        int k = o->secs < 0; /* the greedy row has no search time */
        tl->beyond[k] += beyond, tl->agree[k] += agree;
    }
    if (o->secs >= 0)
        snprintf(secs, sizeof secs, "%.1f%s", o->secs, o->timed_out ? " (limit)" : "");
    pl_table_row(t, "%s|%s|%d -> %d|%d|%.3f -> %.3f|%+.2f %%|%s|%s|%s", base(model), o->how,
                 o->ops0, o->ops, o->n_log, o->cost0 * 1e3, o->cost * 1e3, 100 * pred, measured,
                 secs, published(base(model)));
    return 0;
}

/* Every rule applied greedily to the model (pl_rw_greedy): the merges the search may have
 * declined, so that their measured effect is seen too. */
static pl_rw_model *greedy(const char *model, const pl_cluster *c, const pl_cost_params *p,
                           pl_rw_site **log, int *n_log, double *cost, pl_err *err)
{
    pl_rw_model *g = pl_rw_load(model, err);
    pl_graph *gr = NULL;
    if (!g || pl_rw_greedy(&g, NULL, 0, NULL, log, n_log, err) < 0 ||
        !(gr = pl_rw_graph(g, NULL, err)) || (*cost = pl_rw_price(gr, c, p, err)) < 0) {
        pl_graph_free(gr);
        pl_rw_free(g);
        return NULL;
    }
    pl_graph_free(gr);
    return g;
}

static int bench(pl_table *t, const pl_cluster *c, const pl_cost_params *params, const char *model,
                 int n_runs, double limit, double max_mb, tally *tl)
{
    pl_err err = {""};
    pl_rw_model *m = pl_rw_load(model, &err), *all = NULL;
    pl_rw_search_result r = {0};
    pl_rw_search_opts so = {
        .c = c, .params = params, .alpha = 1.05, .time_limit_s = limit, .max_expand = 200};
    pl_rw_site *log = NULL;
    int n_log = 0, rc = -1;
    double t0 = pl_now(), mb, cost_all;
    if (!m || pl_rw_search(m, &so, &r, &err) < 0) goto done;
    double secs = pl_now() - t0;
    if ((mb = weight_mb(m, &err)) < 0 ||
        !(all = greedy(model, c, params, &log, &n_log, &cost_all, &err)))
        goto done;
    outcome s = {"search",    pl_rw_nodes(m), pl_rw_nodes(r.best), r.log, r.n_log, r.cost0,
                 r.best_cost, secs,           r.timed_out};
    outcome a = {"all rules", s.ops0, pl_rw_nodes(all), log, n_log, r.cost0, cost_all, -1, false};
    rc = row(t, model, &s, n_runs, mb, max_mb, tl);
    /* the greedy pass's own row when it made another model than the search's answer */
    if (rc == 0 && a.ops != s.ops) rc = row(t, model, &a, n_runs, mb, max_mb, tl);
    err.msg[0] = 0;
done:
    if (err.msg[0]) fprintf(stderr, "bench_optimize: %s: %s\n", model, err.msg);
    pl_rw_sites_free(log, n_log);
    pl_rw_free(all);
    pl_rw_search_result_free(&r);
    pl_rw_free(m);
    return rc;
}

/* This machine's calibration for the cluster's this_machine device, as `placer optimize`
 * prices (the defaults, and a note, when it has none); *what says which. */
static void machine_params(const pl_cluster *c, pl_cost_params *p, char *what, size_t n)
{
    pl_cost_params_default(p);
    snprintf(what, n, "default cost parameters (the cluster has no this_machine device)");
    for (int d = 0; d < c->n_devs; d++) {
        if (!c->devs[d].this_machine) continue;
        pl_err refused = {""}, err = {""};
        char path[4096];
        if (pl_machine_params(&c->devs[d], NULL, p, path, sizeof path, &refused, &err) == 0)
            snprintf(what, n, "UNCALIBRATED (%s)", err.msg);
        else
            snprintf(what, n, "this machine's calibration, %s (dense %.3f, half at %.3g FLOPs)",
                     path, p->eff_compute[PL_CLASS_DENSE], p->dense_half_flops);
        return;
    }
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
    int n_runs = atoi(argv[2]);
    if (n_runs < 1 || n_runs > MAX_RUNS) n_runs = 3;
    double limit = atof(argv[3]), max_mb = atof(argv[4]);
    pl_cost_params params;
    char what[4200];
    machine_params(c, &params, what, sizeof what);
    pl_table *t = pl_table_new("model|rewrite|ops|>rewrites|predicted ms|>predicted|measured ms|"
                               ">measured (runs)|>noise|verdict|>search s|published");
    int status = 0;
    tally tl = {0};
    for (int i = 5; i < argc; i++)
        if (bench(t, c, &params, argv[i], n_runs, limit, max_mb, &tl) < 0) status = 1;
    printf("predicted: pl_rw_price on %s, %s; measured: onnxruntime on this CPU, graph "
           "optimisations on in both, 1 thread, %d runs of %g s of predicted time per file (%d to "
           "%d requests) after %d warm-ups, before and after in turn; noise: the range of the "
           "runs' medians before; "
           "search: alpha 1.05, at most 200 candidates, %g s\n",
           base(argv[1]), what, n_runs, RUN_S, MIN_REQUESTS, MAX_REQUESTS, WARMUP, limit);
    pl_table_print(t, stdout);
    printf("sign: the predicted change has the measured one's sign on %d of the %d search answers "
           "whose measured change is beyond the noise (every rule greedily: %d of %d)\n",
           tl.agree[0], tl.beyond[0], tl.agree[1], tl.beyond[1]);
    printf("published: TASO (SOSP 2019), up to 2.8x end to end over the graph optimizers of "
           "existing frameworks on a V100 GPU (Fig. 7: ResNet-50, NasNet-A, ResNeXt-50, NasRNN, "
           "BERT), 1.3x on a ResNet module; AutoDeep, up to 23 %% faster inference of foundation "
           "models than Google-RL, TASO and its DRL placement together on 4 x K80 (not TASO "
           "alone)\n");
    pl_table_free(t);
    pl_cluster_free(c);
    return status;
}
