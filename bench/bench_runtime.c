/* bench_runtime.c: what a persistent trial worker saves (AutoDeep's probing-informed block
 * multiplexing, docs/runtime.md).
 *
 *   bench_runtime TRIALS MODEL...
 *
 * For each model: TRIALS measured trials (one warm-up request and one timed request each)
 * through one worker started and loaded once, against the same trials each paying a fresh
 * worker (start Node, load the model). Inflation of a weightless model is done once before
 * either (it is cached on disk in any case). */
#include "placer/report.h"
#include "placer/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int fail(const pl_err *err)
{
    fprintf(stderr, "%s\n", err->msg);
    return -1;
}

/* One trial on a loaded worker: a warm-up and a timed request (timed by the caller, whole). */
static int trial(pl_ort *w, pl_err *err)
{
    pl_ort_result r = {0};
    if (pl_ort_run(w, 1, 1, &r, err) < 0) return -1;
    pl_ort_result_free(&r);
    return 0;
}

/* Start-up (start + load) and the trial's whole time, for a fresh worker. */
static int fresh(const char *path, double *startup_s, double *total_s, pl_err *err)
{
    double t0 = pl_now();
    pl_ort_opts o = {0};
    pl_ort *w = pl_ort_start(&o, err);
    if (!w || pl_ort_load(w, &path, 1, err) < 0) return pl_ort_stop(w), -1;
    *startup_s = pl_now() - t0;
    int rc = trial(w, err);
    *total_s = pl_now() - t0;
    pl_ort_stop(w);
    return rc;
}

static int measure(pl_table *t, const char *model, int n)
{
    pl_err err = {""};
    char path[1024];
    if (pl_inflate_model(model, "build/ort-cache", path, sizeof path, &err) < 0) return fail(&err);
    double restart = 0, startup = 0;
    for (int i = 0; i < n; i++) {
        double s, total;
        if (fresh(path, &s, &total, &err) < 0) return fail(&err);
        restart += total, startup += s;
    }
    double t1 = pl_now(), once_s;
    pl_ort_opts o = {0};
    const char *p = path;
    pl_ort *w = pl_ort_start(&o, &err);
    if (!w || pl_ort_load(w, &p, 1, &err) < 0) return pl_ort_stop(w), fail(&err);
    once_s = pl_now() - t1;
    for (int i = 0; i < n; i++)
        if (trial(w, &err) < 0) return pl_ort_stop(w), fail(&err);
    double persistent = pl_now() - t1;
    pl_ort_stop(w);
    pl_table_row(t, "%s|%d|%.3f|%.3f|%.0f%%|%.3f|%.3f|%.1fx", base(model), n, restart / n,
                 startup / n, 100 * startup / restart, once_s, persistent / n,
                 restart / persistent);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_runtime TRIALS MODEL...\n");
        return 2;
    }
    int n = atoi(argv[1]);
    pl_table *t = pl_table_new("model|>trials|>restart: s per trial|>of which start-up|>start-up "
                               "share|>persistent: start-up once|>s per trial|>speed-up");
    for (int m = 2; m < argc; m++)
        if (measure(t, argv[m], n > 0 ? n : 5) < 0) return 1;
    printf("per trial: one warm-up and one timed request on this machine's CPU (onnxruntime-node, "
           "1 intra-op thread); persistent = one worker for all trials, start-up included\n");
    pl_table_print(t, stdout);
    pl_table_free(t);
    return 0;
}
