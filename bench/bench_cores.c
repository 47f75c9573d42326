/* bench_cores.c: a CPU device is its cores (docs/runtime.md, "Cores: the default plan against
 * onnxruntime's threads").
 *
 *   bench_cores PLACER RUNS REPEAT MODEL...
 *
 * For each model, RUNS times over: onnxruntime on the whole model with one intra-op thread and
 * with two (all of this machine's cores), and placer's default plan (`placer place` without
 * --algo, then `placer split`, run as `placer run` runs a split: one session per stage, each
 * with its device's cores as threads) on examples/clusters/local-cpu.json (a core per
 * device, or one device with both cores: the better predicted) and on local-cpu-percore.json (the
 * cores alone). Each figure is the median of REPEAT timed requests after two untimed ones; a
 * row gives the median over the runs and their spread. S = the one-thread time over the
 * two-thread time; e = S - 1, the second thread's parallel efficiency over the whole model
 * (a lower bound on the dense ops' part, which is 98-99.8 % of the zoo's priced time). */
#include "placer/common.h"
#include "placer/runtime.h"
#include "placer/split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS_MAX 9
#define CACHE "build/bench/cores"

enum { ORT1, ORT2, PLAN_CORES, PLAN_ONE, N_WAYS };
static const char *const way_name[N_WAYS] = {"ort 1 thread", "ort 2 threads", "plan, local-cpu",
                                             "plan, local-cpu-percore"};

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The median latency of `repeat` requests of what w has loaded. */
static int timed(pl_ort *w, int repeat, double *s, pl_err *err)
{
    pl_ort_result r = {0};
    if (pl_ort_run(w, repeat, 2, &r, err) < 0) return -1;
    *s = pl_median(r.latency_s, r.repeat);
    pl_ort_result_free(&r);
    return 0;
}

/* The whole model in one session with `threads` intra-op threads. */
static int whole(const char *inflated, int threads, int repeat, double *s, pl_err *err)
{
    pl_ort_opts o = {.threads = threads};
    pl_ort *w = pl_ort_start(&o, err);
    int rc = w && pl_ort_load(w, &inflated, 1, err) == 0 ? timed(w, repeat, s, err) : -1;
    pl_ort_stop(w);
    return rc;
}

/* The default plan of `placer place` on the cluster, split into dir; *what gets its algorithm
 * and stage count (e.g. "single, 1 stage"). */
static int make_split(const char *placer, const char *model, const char *cluster, const char *dir,
                      char *what, size_t n, pl_err *err)
{
    char cmd[20000], plan[4200];
    snprintf(plan, sizeof plan, "%s.plan.json", dir);
    snprintf(cmd, sizeof cmd,
             "%s place %s --cluster %s -o %s >/dev/null 2>&1 && %s split %s --cluster %s --plan %s "
             "-o %s >/dev/null 2>&1",
             placer, model, cluster, plan, placer, model, cluster, plan, dir);
    if (system(cmd) != 0) return pl_err_set(err, "failed: %s", cmd);
    pl_split_manifest m = {0};
    if (pl_split_manifest_load(dir, &m, err) < 0) return -1;
    int threads = 0;
    for (int j = 0; j < m.n; j++)
        threads = m.st[j].threads > threads ? m.st[j].threads : threads;
    snprintf(what, n, "%d stage%s, %d thread%s", m.n, m.n == 1 ? "" : "s", threads,
             threads == 1 ? "" : "s");
    pl_split_manifest_free(&m);
    return 0;
}

static int run_split(const char *dir, int repeat, double *s, pl_err *err)
{
    pl_split_manifest m = {0};
    if (pl_split_manifest_load(dir, &m, err) < 0) return -1;
    pl_ort_opts o = {0};
    pl_ort *w = pl_ort_start(&o, err);
    int rc = w && pl_ort_load_split(w, &m, CACHE "/inflated", false, err) == 0
                 ? timed(w, repeat, s, err)
                 : -1;
    pl_ort_stop(w);
    pl_split_manifest_free(&m);
    return rc;
}

static void spread(const double *v, int n, double *med, double *lo, double *hi)
{
    double c[RUNS_MAX];
    memcpy(c, v, (size_t)n * sizeof *v);
    *med = pl_median(c, n), *lo = *hi = v[0];
    for (int i = 1; i < n; i++)
        *lo = v[i] < *lo ? v[i] : *lo, *hi = v[i] > *hi ? v[i] : *hi;
}

static int bench_model(const char *placer, const char *model, int runs, int repeat)
{
    pl_err err = {""};
    char inflated[1024], dir[2][1024], what[2][128];
    const char *cluster[2] = {"examples/clusters/local-cpu.json",
                              "examples/clusters/local-cpu-percore.json"};
    if (pl_inflate_model(model, CACHE "/inflated", inflated, sizeof inflated, &err) < 0) goto fail;
    for (int c = 0; c < 2; c++) {
        snprintf(dir[c], sizeof dir[c], CACHE "/%s.%d", base(model), c);
        if (make_split(placer, model, cluster[c], dir[c], what[c], sizeof what[c], &err) < 0)
            goto fail;
    }
    /* onnxruntime's two threads and the plan back to back, in turn first, so that both meet
     * the same state of the VM (its two-thread latency drifts between modes, docs/runtime.md
     * "Cores"); their ratio is taken per run */
    double t[N_WAYS][RUNS_MAX], ratio[RUNS_MAX];
    for (int r = 0; r < runs; r++) {
        bool plan_first = r % 2;
        if (whole(inflated, 1, repeat, &t[ORT1][r], &err) < 0 ||
            (plan_first && run_split(dir[0], repeat, &t[PLAN_CORES][r], &err) < 0) ||
            whole(inflated, 2, repeat, &t[ORT2][r], &err) < 0 ||
            (!plan_first && run_split(dir[0], repeat, &t[PLAN_CORES][r], &err) < 0) ||
            run_split(dir[1], repeat, &t[PLAN_ONE][r], &err) < 0)
            goto fail;
        ratio[r] = t[PLAN_CORES][r] / t[ORT2][r];
    }
    double med[N_WAYS], lo[N_WAYS], hi[N_WAYS], rmed, rlo, rhi;
    for (int k = 0; k < N_WAYS; k++)
        spread(t[k], runs, &med[k], &lo[k], &hi[k]);
    spread(ratio, runs, &rmed, &rlo, &rhi);
    printf("%-22s", base(model));
    for (int k = 0; k < N_WAYS; k++)
        printf(" %8.2f (%.2f-%.2f)", med[k] * 1e3, lo[k] * 1e3, hi[k] * 1e3);
    printf("  S %.2f e %.2f  plan/ort2 %.2f, per run %.2f (%.2f-%.2f)  [%s | %s]\n",
           med[ORT1] / med[ORT2], med[ORT1] / med[ORT2] - 1, med[PLAN_CORES] / med[ORT2], rmed, rlo,
           rhi, what[0], what[1]);
    fflush(stdout);
    return 0;
fail:
    printf("%-22s failed: %s\n", base(model), err.msg);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: bench_cores PLACER RUNS REPEAT MODEL...\n");
        return 2;
    }
    int runs = atoi(argv[2]), repeat = atoi(argv[3]), bad = 0;
    if (runs < 1 || runs > RUNS_MAX || repeat < 1) {
        fprintf(stderr, "bench_cores: RUNS in 1..%d, REPEAT >= 1\n", RUNS_MAX);
        return 2;
    }
    if (system("mkdir -p " CACHE "/inflated") != 0) return 2;
    printf("ms, median over %d runs (min-max), each the median of %d requests:\n%-22s", runs,
           repeat, "model");
    for (int k = 0; k < N_WAYS; k++)
        printf(" %-22s", way_name[k]);
    printf("\n");
    for (int i = 4; i < argc; i++)
        bad |= bench_model(argv[1], argv[i], runs, repeat) < 0;
    return bad;
}
