/* ort_worker.c: the measuring trial worker: the model runs for real, on this machine's CPU,
 * in the persistent onnxruntime worker (src/runtime, docs/runtime.md).
 *
 * Start-up is the expensive part and is paid once per search: inflating the weightless file,
 * starting Node and loading the model into an onnxruntime session. A trial is then only timed
 * runs. The configuration's cluster is not used: the model runs whole on the local CPU. */
#include "placer/runtime.h"
#include "placer/trial.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ort_state {
    char *model_path, *cache_dir;
    pl_ort_opts opts; /* zeroed when none is given: pl_ort_start's defaults, as for NULL */
    int repeat, warmup;
    pl_ort *ort;
} ort_state;

static int ort_start(pl_trial_worker *w, pl_err *err)
{
    ort_state *s = w->state;
    char path[4096], cache[4096];
    if (!s->cache_dir && pl_cache_dir("inflated", cache, sizeof cache, err) < 0) return -1;
    const char *dir = s->cache_dir ? s->cache_dir : cache;
    if (pl_inflate_model(s->model_path, dir, path, sizeof path, err) < 0) return -1;
    s->ort = pl_ort_start(&s->opts, err);
    if (!s->ort) return -1;
    const char *paths[] = {path};
    return pl_ort_load(s->ort, paths, 1, err) < 0 ? pl_err_prefix(err, "%s", s->model_path) : 0;
}

static int ort_trial(pl_trial_worker *w, const pl_cluster *c, pl_trial_out *out, pl_err *err)
{
    (void)c; /* the model runs whole, on the local CPU: see the top of the file */
    ort_state *s = w->state;
    pl_ort_result r;
    if (pl_ort_run(s->ort, s->repeat, s->warmup, &r, err) < 0)
        return pl_err_prefix(err, "trial of %s", s->model_path);
    out->runs = true;
    out->latency_s = pl_median(r.latency_s, r.repeat); /* one slow repetition does not move it */
    snprintf(out->algo, sizeof out->algo, "onnxruntime");
    pl_ort_result_free(&r);
    return 0;
}

static void ort_stop(pl_trial_worker *w)
{
    ort_state *s = w->state;
    pl_ort_stop(s->ort);
    free(s->model_path), free(s->cache_dir), free(s);
}

static const pl_trial_worker_ops ORT_OPS = {"onnxruntime", ort_start, ort_trial, ort_stop};

pl_trial_worker *pl_trial_ort_new(const pl_trial_ort_opts *o)
{
    ort_state *s = pl_calloc(1, sizeof *s);
    s->model_path = pl_strdup(o->model_path);
    s->cache_dir = o->cache_dir ? pl_strdup(o->cache_dir) : NULL; /* NULL: pl_cache_dir's */
    if (o->ort) s->opts = *o->ort;
    s->repeat = o->repeat > 0 ? o->repeat : 3;
    s->warmup = o->warmup > 0 ? o->warmup : 1;
    pl_trial_worker *w = pl_calloc(1, sizeof *w);
    w->ops = &ORT_OPS, w->state = s;
    return w;
}

pl_ort *pl_trial_ort_client(const pl_trial_worker *w)
{
    return w && w->ops == &ORT_OPS ? ((const ort_state *)w->state)->ort : NULL;
}
