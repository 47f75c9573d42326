/* sim_worker.c: the in-process trial worker: place the model on the configuration's cluster
 * with each of a list of algorithms, simulate every plan, keep the fastest that fits.
 *
 * Start-up (paid once per search) loads the model and runs shape inference; a trial builds the
 * cost table for the cluster (it depends on the devices) and places. */
#include "placer/trial.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sim_state {
    char *model_path, *algos;
    const char **dims, **shapes;
    pl_load_opts load;
    double place_time_s;
    pl_contention contention;
    unsigned seed;
    pl_cost_params params;
    int place_episodes;
    void (*progress)(const char *, int, int, double, void *);
    void *progress_user;
    const pl_algo **list; /* the algorithms of `algos`, resolved once at start */
    int n_list;
    pl_graph *g;
    pl_trial_worker *measure; /* not owned */
} sim_state;

static char **dup_list(const char **v, int n)
{
    char **o = pl_calloc(n + 1, sizeof *o);
    for (int i = 0; i < n; i++)
        o[i] = pl_strdup(v[i]);
    return o;
}

/* Resolves the comma-separated algorithm names, so that a misspelt name is refused before
 * the model is loaded rather than at the first trial. */
static int resolve_algos(sim_state *s, pl_err *err)
{
    int total;
    pl_algo_list(&total);
    free(s->list); /* a start that failed may be retried */
    s->list = pl_calloc(total, sizeof *s->list);
    int n = pl_algo_parse_list(s->algos, "--algos", s->list, total, err);
    s->n_list = n < 0 ? 0 : n;
    return n < 0 ? -1 : 0;
}

static int sim_start(pl_trial_worker *w, pl_err *err)
{
    sim_state *s = w->state;
    if (resolve_algos(s, err) < 0) return -1;
    pl_graph_free(s->g); /* a start that failed may be retried */
    s->g = pl_graph_load(s->model_path, &s->load, err);
    if (!s->g) return -1;
    return s->measure ? pl_trial_start(s->measure, err) : 0;
}

/* A refusal from an algorithm that splits the model says more than "no single device fits". */
static void keep_why(pl_trial_out *out, const char *algo, const char *msg, bool *split)
{
    bool one = !strcmp(algo, "single") || !strcmp(algo, "expert");
    if (!out->why[0] || (!one && !*split)) snprintf(out->why, sizeof out->why, "%.250s", msg);
    *split |= !one;
}

/* Places with one algorithm and simulates; the makespan, or INFINITY (why in err). */
static double try_algo(const sim_state *s, const pl_cost *k, const pl_algo *a, pl_plan *p,
                       pl_err *err)
{
    /* place_time_s 0: 1 s, except for a learned search given episodes, which they bound */
    double limit = s->place_time_s > 0                   ? s->place_time_s
                   : a->learned && s->place_episodes > 0 ? 0
                                                         : 1;
    pl_place_opts po = {.seed = s->seed,
                        .time_limit_s = limit,
                        .contention = s->contention,
                        .iterations = s->place_episodes,
                        .progress = s->progress,
                        .progress_user = s->progress_user};
    pl_sim_opts so = {.contention = s->contention};
    pl_sim_result r = {0};
    err->msg[0] = 0;
    if (pl_place(a, k, &po, p, err) < 0) return INFINITY;
    double ms = INFINITY;
    if (pl_simulate(k, p, &so, &r, err) == 0) {
        if (r.oom)
            pl_err_set(err, "%s: device '%s' over its memory by %.0f bytes", a->name,
                       k->c->devs[r.oom_dev].name, r.oom_excess_bytes);
        else
            ms = r.makespan_s;
    }
    pl_sim_result_free(&r);
    return ms;
}

static int sim_trial(pl_trial_worker *w, const pl_cluster *c, pl_trial_out *out, pl_err *err)
{
    sim_state *s = w->state;
    pl_cost *k = pl_cost_new(s->g, c, &s->params, NULL, 0, err);
    if (!k) return -1;
    bool split = false;
    for (int i = 0; i < s->n_list; i++) {
        const pl_algo *a = s->list[i];
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_err e = {{0}};
        double ms = try_algo(s, k, a, p, &e);
        if (ms < out->latency_s) {
            pl_plan_free(out->plan);
            p->predicted_makespan_s = ms;
            out->plan = p, out->latency_s = ms, out->runs = true;
            snprintf(out->algo, sizeof out->algo, "%s", a->name);
            continue;
        }
        if (!isfinite(ms)) keep_why(out, a->name, e.msg, &split);
        pl_plan_free(p);
    }
    if (out->runs) out->why[0] = 0;
    if (out->runs) out->band = pl_cost_plan_band(k, out->plan->dev, &out->basis);
    pl_cost_free(k);
    if (!s->measure || !out->runs) return 0;
    /* the plan the simulator chose, run on this machine: its latency is the trial's, and a
     * measurement's band */
    if (pl_trial_measure_plan(s->measure, s->g, c, out->plan, &out->latency_s, err) < 0) return -1;
    out->plan->measured_s = out->latency_s;
    out->band = PL_BAND_PROFILED, out->basis = PL_BASIS_PROFILED;
    return 0;
}

static void sim_stop(pl_trial_worker *w)
{
    sim_state *s = w->state;
    for (int i = 0; i < s->load.n_dims; i++)
        free((char *)s->dims[i]);
    for (int i = 0; i < s->load.n_input_shapes; i++)
        free((char *)s->shapes[i]);
    free(s->dims), free(s->shapes);
    pl_graph_free(s->g);
    free(s->list), free(s->model_path), free(s->algos), free(s);
}

static const pl_trial_worker_ops SIM_OPS = {"sim", sim_start, sim_trial, sim_stop};

pl_trial_worker *pl_trial_sim_new(const pl_trial_sim_opts *o)
{
    sim_state *s = pl_calloc(1, sizeof *s);
    s->model_path = pl_strdup(o->model_path);
    s->algos = pl_strdup(o->algos && *o->algos ? o->algos : "moirai");
    s->load = o->load;
    s->dims = (const char **)dup_list(o->load.dims, o->load.n_dims);
    s->shapes = (const char **)dup_list(o->load.input_shapes, o->load.n_input_shapes);
    s->load.dims = s->dims, s->load.input_shapes = s->shapes;
    s->place_time_s = o->place_time_s > 0 ? o->place_time_s : 0; /* 0: try_algo's default */
    s->place_episodes = o->place_episodes > 0 ? o->place_episodes : 0;
    s->progress = o->progress, s->progress_user = o->progress_user;
    s->contention = o->contention, s->seed = o->seed;
    s->measure = o->measure;
    if (o->params)
        s->params = *o->params;
    else
        pl_cost_params_default(&s->params);
    pl_trial_worker *w = pl_calloc(1, sizeof *w);
    w->ops = &SIM_OPS, w->state = s;
    return w;
}

const pl_graph *pl_trial_sim_graph(const pl_trial_worker *w)
{
    return w && w->ops == &SIM_OPS ? ((const sim_state *)w->state)->g : NULL;
}
