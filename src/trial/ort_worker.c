/* ort_worker.c: the measuring trial worker: the model runs for real, on this machine's CPU,
 * in the persistent onnxruntime worker (src/runtime, docs/runtime.md).
 *
 * Start-up is the expensive part and is paid once per search: inflating the weightless file,
 * starting Node and loading the model into an onnxruntime session. A trial is then only timed
 * runs. The configuration's cluster is not used: the model runs whole on the local CPU.
 *
 * The same worker measures plans (pl_trial_measure_plan, a learned placer's measured
 * episodes; docs/learn.md, "Measured episodes"): the model split by the plan, as `placer split`
 * and `placer run` do it (pl_split_runnable), its stages loaded into the running process on
 * their devices' threads, timed runs. A search samples the same placement again and again as
 * its policy settles, so latencies are kept by placement and a placement is measured once. */
#include "placer/runtime.h"
#include "placer/split.h"
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
    char whole_path[4096]; /* the runnable whole model */
    bool whole;            /* it is what the process has loaded (a measured plan replaces it) */
    char live[4096];       /* the folder of the measured plan's stages the process has loaded
                              (it reloads them after a restart), "" when none */
    pl_strmap seen;        /* placement key -> index in key[], latency_s[] */
    char **key;
    double *latency_s;
    int n_seen, cap_seen;
    long measured, hits; /* placements measured, and answered from the cache */
} ort_state;

/* The folder a measured plan's stages were loaded from may go once the process no longer
 * holds them (it keeps what it loaded last, to load it again after a restart). */
static void drop_live(ort_state *s)
{
    if (s->live[0]) pl_remove_tree(s->live);
    s->live[0] = 0;
}

static int load_whole(ort_state *s, pl_err *err)
{
    const char *paths[] = {s->whole_path};
    if (pl_ort_load(s->ort, paths, 1, err) < 0) return pl_err_prefix(err, "%s", s->model_path);
    s->whole = true;
    drop_live(s);
    return 0;
}

static int ort_start(pl_trial_worker *w, pl_err *err)
{
    ort_state *s = w->state;
    char path[4096], cache[4096];
    if (!s->cache_dir && pl_cache_dir("inflated", cache, sizeof cache, err) < 0) return -1;
    const char *dir = s->cache_dir ? s->cache_dir : cache;
    if (pl_inflate_model(s->model_path, dir, path, sizeof path, err) < 0) return -1;
    snprintf(s->whole_path, sizeof s->whole_path, "%s", path);
    s->ort = pl_ort_start(&s->opts, err);
    if (!s->ort) return -1;
    return load_whole(s, err);
}

static int ort_trial(pl_trial_worker *w, const pl_cluster *c, pl_trial_out *out, pl_err *err)
{
    (void)c; /* the model runs whole, on the local CPU: see the top of the file */
    ort_state *s = w->state;
    pl_ort_result r;
    if (!s->whole && load_whole(s, err) < 0) return -1; /* a measured plan was loaded */
    if (pl_ort_run(s->ort, s->repeat, s->warmup, &r, err) < 0)
        return pl_err_prefix(err, "trial of %s", s->model_path);
    out->runs = true;
    out->latency_s = pl_median(r.latency_s, r.repeat); /* one slow repetition does not move it */
    out->band = PL_BAND_PROFILED, out->basis = PL_BASIS_PROFILED; /* a measurement */
    snprintf(out->algo, sizeof out->algo, "onnxruntime");
    pl_ort_result_free(&r);
    return 0;
}

static void ort_stop(pl_trial_worker *w)
{
    ort_state *s = w->state;
    pl_ort_stop(s->ort);
    drop_live(s);
    for (int i = 0; i < s->n_seen; i++)
        free(s->key[i]);
    pl_strmap_free(&s->seen);
    free(s->key), free(s->latency_s);
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

/* ---- measuring plans ---- */

/* The placement as a string: device count, then each op's device, then the per-device order
 * when the plan gives one (the rest of a plan does not reach the split). */
static char *placement_key(const pl_plan *p)
{
    size_t n = (size_t)(p->n_ops + (p->order ? p->n_ops + p->n_devs + 1 : 0)) * 12 + 32, at = 0;
    char *k = pl_malloc(n);
    at += (size_t)snprintf(k, n, "%d:", p->n_devs);
    for (int v = 0; v < p->n_ops; v++)
        at += (size_t)snprintf(k + at, n - at, "%d,", p->dev[v]);
    for (int i = 0; p->order && i <= p->n_devs; i++)
        at += (size_t)snprintf(k + at, n - at, "%s%d", i ? "," : "|", p->order_off[i]);
    for (int i = 0; p->order && i < p->n_ops; i++)
        at += (size_t)snprintf(k + at, n - at, ",%d", p->order[i]);
    return k;
}

static void remember(ort_state *s, char *key, double latency_s)
{
    if (s->n_seen == s->cap_seen) {
        s->cap_seen = s->cap_seen ? 2 * s->cap_seen : 64;
        s->key = pl_realloc(s->key, (size_t)s->cap_seen * sizeof *s->key);
        s->latency_s = pl_realloc(s->latency_s, (size_t)s->cap_seen * sizeof *s->latency_s);
    }
    s->key[s->n_seen] = key, s->latency_s[s->n_seen] = latency_s;
    pl_strmap_put(&s->seen, key, s->n_seen++);
}

/* Every op of the plan on a CPU device of c: those are what run here, one thread each, as
 * `placer run` runs a split's devices; a GPU's share cannot run on this machine's CPU and be
 * called its measurement. */
static int check_plan(const pl_graph *g, const pl_cluster *c, const pl_plan *p, pl_err *err)
{
    if (p->n_ops != g->n_ops || p->n_devs != c->n_devs)
        return pl_err_set(err,
                          "the plan has %d ops on %d devices, the model %d ops and the "
                          "cluster %d devices",
                          p->n_ops, p->n_devs, g->n_ops, c->n_devs);
    for (int v = 0; v < p->n_ops; v++) {
        int d = p->dev[v];
        if (d < 0 || d >= c->n_devs)
            return pl_err_set(err, "op '%s' is on no device of the cluster", g->ops[v].name);
        if (c->devs[d].kind != PL_DEV_CPU)
            return pl_err_set(err,
                              "op '%s' is on '%s', a %s: only CPU devices run on this machine "
                              "(one thread each; e.g. examples/clusters/local-cpu-percore.json)",
                              g->ops[v].name, c->devs[d].name, pl_dev_kind_name(c->devs[d].kind));
    }
    return 0;
}

int pl_trial_measure_check(const pl_cluster *c, pl_err *err)
{
    for (int d = 0; d < c->n_devs; d++)
        if (c->devs[d].kind != PL_DEV_CPU)
            return pl_err_set(err,
                              "%s: device '%s' is a %s: measured placements run on this "
                              "machine's CPU, one thread per device, so every device must be a "
                              "CPU (e.g. examples/clusters/local-cpu-percore.json)",
                              c->path ? c->path : c->name, c->devs[d].name,
                              pl_dev_kind_name(c->devs[d].kind));
    return 0;
}

/* Splits, loads and runs the plan in a temporary folder of its own (the split and its
 * inflated stages). Once loaded, the process holds the stages until the next load and reloads
 * them if it is restarted (runtime.h), so the folder stays until then (s->live; the last one
 * goes when the worker stops); a folder whose stages did not load is removed at once. */
static int run_plan(ort_state *s, const pl_graph *g, const pl_cluster *c, const pl_plan *p,
                    double *latency_s, pl_err *err)
{
    char root[4096], dir[4200], cache[4200];
    if (pl_make_temp_dir("placer-episode", root, sizeof root, err) < 0) return -1;
    snprintf(dir, sizeof dir, "%s/split", root);
    snprintf(cache, sizeof cache, "%s/inflated", root);
    const char **names = pl_malloc((size_t)c->n_devs * sizeof *names);
    for (int d = 0; d < c->n_devs; d++)
        names[d] = c->devs[d].name;
    pl_stages st = {0};
    char **paths = pl_calloc((size_t)g->n_ops + 1, sizeof *paths);
    const char **devs = pl_calloc((size_t)g->n_ops + 1, sizeof *devs);
    int rc = pl_split_runnable(s->model_path, g, p, names, dir, cache, &st, paths, err);
    int *threads = pl_calloc((size_t)st.n + 1, sizeof *threads);
    pl_split_set_threads(&st, c); /* a stage runs on all its device's cores */
    for (int j = 0; rc == 0 && j < st.n; j++)
        devs[j] = names[st.st[j].dev], threads[j] = st.st[j].threads;
    if (rc == 0)
        rc = pl_ort_load_stages(s->ort, (const char *const *)paths, devs, NULL, threads, st.n, err);
    free(threads);
    bool loaded = rc == 0;
    if (loaded) {
        s->whole = false;
        drop_live(s);
        snprintf(s->live, sizeof s->live, "%s", root);
    }
    pl_ort_result r = {0};
    if (rc == 0) rc = pl_ort_run(s->ort, s->repeat, s->warmup, &r, err);
    if (rc == 0) *latency_s = pl_median(r.latency_s, r.repeat);
    pl_ort_result_free(&r);
    for (int j = 0; j <= g->n_ops; j++)
        free(paths[j]);
    free(paths), free(devs), free(names);
    pl_stages_free(&st);
    if (!loaded && pl_remove_tree(root) < 0 && rc == 0)
        rc = pl_err_set(err, "cannot remove the temporary folder %s", root);
    return rc;
}

int pl_trial_measure_plan(pl_trial_worker *w, const pl_graph *g, const pl_cluster *c,
                          const pl_plan *p, double *latency_s, pl_err *err)
{
    *latency_s = INFINITY;
    if (!w || w->ops != &ORT_OPS)
        return pl_err_set(err, "measuring a plan needs the onnxruntime trial worker, not '%s'",
                          w ? w->ops->name : "none");
    ort_state *s = w->state;
    if (pl_trial_start(w, err) < 0 || check_plan(g, c, p, err) < 0)
        return pl_err_prefix(err, "measuring a plan of %s", s->model_path);
    char *key = placement_key(p);
    int at = pl_strmap_get(&s->seen, key);
    if (at >= 0) {
        free(key);
        s->hits++;
        *latency_s = s->latency_s[at];
        return 0;
    }
    double t0 = pl_now();
    if (run_plan(s, g, c, p, latency_s, err) < 0) {
        free(key);
        *latency_s = INFINITY;
        return pl_err_prefix(err, "measuring a plan of %s", s->model_path);
    }
    w->trial_s += pl_now() - t0;
    s->measured++;
    remember(s, key, *latency_s);
    return 0;
}

void pl_trial_measure_stats(const pl_trial_worker *w, long *measured, long *hits)
{
    const ort_state *s = w && w->ops == &ORT_OPS ? w->state : NULL;
    *measured = s ? s->measured : 0, *hits = s ? s->hits : 0;
}
