/* run.c: several models' shares of one plan run for real on this machine (placer multi --run;
 * docs/multi.md, "Running it for real").
 *
 * Nothing here runs a model itself: each tenant's share of the union plan becomes a plan on its
 * own model, which the split writer cuts into stage files (the schedule cut, as `placer run`
 * wants it: stages overlap where the simulator's ops do), and every tenant's stages go into one
 * onnxruntime worker (pl_ort_load_tenants), each on its device's thread. A device thread runs
 * its stages in the order given; that order is the simulator's (each stage by the start of its
 * first op in the union plan), so that tenants sharing a device take turns as predicted. It is
 * also made a topological order of every tenant's stages (Kahn's algorithm, the simulator's
 * order breaking ties), which is what keeps device threads from deadlocking (docs/runtime.md,
 * "Concurrent stages"). All files live in one temporary folder, removed on every path. */
#include "multi_internal.h"
#include "placer/runtime.h"
#include "placer/sim.h"
#include "placer/split.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One stage of one tenant, in the run's global list. */
typedef struct mr_stage {
    int tenant, j;  /* tenant and its stage index (pl_stages order) */
    double start_s; /* the simulator's start of its first op in the union plan (not counting
                       Constants, which take no time) */
    char *path;     /* the runnable (inflated) file */
} mr_stage;

typedef struct mr_run {
    pl_graph *const *models;
    const pl_graph *u;
    const pl_cluster *c;
    int n;              /* tenants */
    int *off;           /* tenant → its first op in u */
    double *start_s;    /* union op → simulated start (first request) */
    double *end_s;      /* union op → simulated end */
    int *seq;           /* union ops in the order the simulator ran them */
    unsigned char *cut; /* union op → another model's op ran just before it on its device */
    pl_stages *st;      /* per tenant */
    char root[4096];    /* the temporary folder; "" until made */
    mr_stage *stage;    /* every tenant's stages, in the order they are loaded */
    int n_stages;
} mr_run;

/* Model i's ops are u's ops off[i] .. off[i] + n_ops - 1, in model i's op order
 * (pl_graph_union); anything else is not the union of these models. */
static int check_union(mr_run *x, pl_err *err)
{
    if (pl_graph_tenants(x->u) != x->n)
        return pl_err_set(err, "multi run: the union graph has %d tenants, but %d models are given",
                          pl_graph_tenants(x->u), x->n);
    x->off = pl_calloc((size_t)x->n + 1, sizeof *x->off);
    for (int i = 0; i < x->n; i++) {
        x->off[i + 1] = x->off[i] + x->models[i]->n_ops;
        for (int j = x->off[i]; j < x->off[i + 1] && j < x->u->n_ops; j++)
            if (x->u->ops[j].tenant != i)
                return pl_err_set(err, "multi run: union op %d ('%s') is not model %d's", j,
                                  x->u->ops[j].name, i);
    }
    if (x->off[x->n] != x->u->n_ops)
        return pl_err_set(err, "multi run: the union graph has %d ops, the models %d", x->u->n_ops,
                          x->off[x->n]);
    return 0;
}

/* Every op must be on a CPU device of the cluster: those are what run here, one thread each,
 * as `placer run` runs a split's devices; a GPU's share cannot run on this machine's CPU and
 * be called its measurement. */
static int check_devices(const mr_run *x, const pl_plan *p, pl_err *err)
{
    if (p->n_ops != x->u->n_ops || p->n_devs != x->c->n_devs)
        return pl_err_set(err,
                          "multi run: the plan has %d ops on %d devices, the union %d ops "
                          "and the cluster %d devices",
                          p->n_ops, p->n_devs, x->u->n_ops, x->c->n_devs);
    for (int op = 0; op < p->n_ops; op++) {
        int d = p->dev[op];
        if (d < 0 || d >= x->c->n_devs)
            return pl_err_set(err, "multi run: plan: op '%s' is on no device of the cluster",
                              x->u->ops[op].name);
        const pl_device *dv = &x->c->devs[d];
        if (dv->kind != PL_DEV_CPU)
            return pl_err_set(err,
                              "multi run: plan: op '%s' of model '%s' is on '%s', a %s: only "
                              "the cluster's CPU devices run on this machine (one thread "
                              "each); place every op on a CPU device to run the plan",
                              x->u->ops[op].name, x->u->tenant_names[x->u->ops[op].tenant],
                              dv->name, pl_dev_kind_name(dv->kind));
    }
    return 0;
}

/* The simulator's start and end of every union op (first request). */
static int simulate(mr_run *x, const pl_cost *k, const pl_plan *p, pl_err *err)
{
    pl_sim_opts so = {.contention = p->contention, .record = true, .ignore_memory = true};
    pl_sim_result r = {0};
    if (pl_simulate(k, p, &so, &r, err) < 0) {
        pl_sim_result_free(&r);
        return pl_err_prefix(err, "multi run: simulating the plan");
    }
    size_t n = (size_t)x->u->n_ops + 1;
    x->start_s = pl_malloc(n * sizeof *x->start_s), x->end_s = pl_malloc(n * sizeof *x->end_s);
    memcpy(x->start_s, r.op_start_s, (size_t)x->u->n_ops * sizeof *x->start_s);
    memcpy(x->end_s, r.op_end_s, (size_t)x->u->n_ops * sizeof *x->end_s);
    pl_sim_result_free(&r);
    return 0;
}

/* x->seq: every union op in the order the simulator ran it (mt_sim_sequence). x->cut:
 * walking it, an op whose device last ran another model's op starts a stage there, as
 * pl_plan_schedule_stages cuts the union plan the simulator charged (a session runs one
 * model); so the runtime interleaves the models where the simulator did, not one whole stage
 * after another. */
static void mark_cuts(mr_run *x, const pl_plan *p)
{
    int n = x->u->n_ops, *last = pl_malloc((size_t)(p->n_devs ? p->n_devs : 1) * sizeof *last);
    x->seq = mt_sim_sequence(x->u, x->start_s, x->end_s);
    for (int d = 0; d < p->n_devs; d++)
        last[d] = -1;
    x->cut = pl_calloc((size_t)n + 1, sizeof *x->cut);
    for (int t = 0; t < n; t++) {
        int op = x->seq[t], d = p->dev[op], m = x->u->ops[op].tenant;
        if (pl_plan_copied_const(x->u, op)) continue;
        x->cut[op] = last[d] >= 0 && last[d] != m;
        last[d] = m;
    }
    free(last);
}

/* Tenant i's share of the union plan as a plan on its own model: the same devices, each
 * device's ops in the order the simulator ran them in the union (an op starts after its
 * producers end, so that order respects the model's edges), cut where another model's ops
 * ran in between (mark_cuts). */
static pl_plan *tenant_plan(const mr_run *x, const pl_plan *p, int i)
{
    const pl_graph *g = x->models[i];
    pl_plan *tp = pl_plan_new(g->n_ops, x->c->n_devs);
    int *seq = pl_malloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *seq), n = 0;
    for (int t = 0; t < x->u->n_ops; t++)
        if (x->u->ops[x->seq[t]].tenant == i) seq[n++] = x->seq[t] - x->off[i];
    for (int op = 0; op < g->n_ops; op++)
        tp->dev[op] = p->dev[x->off[i] + op];
    pl_plan_set_order(tp, seq);
    tp->cut_before = pl_malloc((size_t)(g->n_ops ? g->n_ops : 1));
    for (int op = 0; op < g->n_ops; op++)
        tp->cut_before[op] = x->cut[x->off[i] + op];
    tp->contention = p->contention;
    free(seq);
    return tp;
}

/* Splits tenant i into root/tI and inflates its stage files into cache (pl_split_runnable);
 * appends its stages to x->stage. */
static int split_tenant(mr_run *x, const pl_plan *p, int i, const char *model_path,
                        const char *cache, pl_err *err)
{
    const pl_graph *g = x->models[i];
    const char **names = pl_malloc((size_t)x->c->n_devs * sizeof *names);
    for (int d = 0; d < x->c->n_devs; d++)
        names[d] = x->c->devs[d].name;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/t%d", x->root, i);
    pl_plan *tp = tenant_plan(x, p, i);
    pl_stages *s = &x->st[i];
    char **paths = pl_calloc((size_t)g->n_ops + 1, sizeof *paths);
    int rc = pl_split_runnable(model_path, g, tp, names, dir, cache, s, paths, err);
    pl_plan_free(tp);
    free(names);
    for (int j = 0; j < s->n && paths[j]; j++) {
        mr_stage *m = &x->stage[x->n_stages++];
        *m = (mr_stage){.tenant = i, .j = j, .path = paths[j], .start_s = 1e300};
        for (int k = 0; k < s->st[j].n_ops; k++) { /* a Constant "starts" at 0 wherever it is */
            double t = x->start_s[x->off[i] + s->st[j].ops[k]];
            if (t < m->start_s && !pl_plan_is_const(g, s->st[j].ops[k])) m->start_s = t;
        }
    }
    free(paths);
    return rc;
}

/* Whether stage a (an index into x->stage) may run now: every stage of its tenant that makes
 * one of its inputs is placed (placed[] by tenant-local stage, at base[tenant]). */
static bool stage_ready(const mr_run *x, const mr_stage *m, const bool *placed, const int *base)
{
    const pl_stages *s = &x->st[m->tenant];
    const pl_stage *st = &s->st[m->j];
    for (int k = 0; k < st->n_inputs; k++) {
        int from = s->maker[st->inputs[k]];
        if (from >= 0 && !placed[base[m->tenant] + from]) return false;
    }
    return true;
}

static bool stage_before(const mr_stage *a, const mr_stage *b)
{
    if (a->start_s != b->start_s) return a->start_s < b->start_s;
    return a->tenant != b->tenant ? a->tenant < b->tenant : a->j < b->j;
}

/* Puts x->stage in the order to load them: each time, of the stages whose producers are
 * placed, the one the simulator starts first. x->stage holds tenant 0's stages, then tenant
 * 1's, ..., each in pl_stages order, so base[i] + j indexes tenant i's stage j. */
static void order_stages(mr_run *x)
{
    int n = x->n_stages, *base = pl_calloc((size_t)x->n + 1, sizeof *base);
    for (int i = 0; i < x->n; i++)
        base[i + 1] = base[i] + x->st[i].n;
    bool *placed = pl_calloc((size_t)n + 1, sizeof *placed);
    mr_stage *out = pl_malloc((size_t)(n ? n : 1) * sizeof *out);
    for (int m = 0; m < n; m++) {
        int best = -1;
        for (int a = 0; a < n; a++)
            if (!placed[a] && stage_ready(x, &x->stage[a], placed, base) &&
                (best < 0 || stage_before(&x->stage[a], &x->stage[best])))
                best = a;
        PL_ASSERT(best >= 0); /* every tenant's stages form a DAG (pl_stages' order is one) */
        placed[best] = true;
        out[m] = x->stage[best];
    }
    free(x->stage);
    x->stage = out;
    free(placed), free(base);
}

/* Each stage's measured start and end (medians over the R rounds) beside the simulator's
 * start of its first timed op and end of its last. */
static void fill_stages(const mr_run *x, const pl_ort_result *w, pl_multi_run_result *r, double *v)
{
    int R = w->repeat, S = w->n_stages;
    r->stages = pl_calloc((size_t)S + 1, sizeof *r->stages);
    for (int s = 0; s < S; s++) {
        const mr_stage *m = &x->stage[s];
        const pl_stage *st = &x->st[m->tenant].st[m->j];
        pl_multi_run_stage *o = &r->stages[s];
        *o = (pl_multi_run_stage){.tenant = m->tenant,
                                  .dev = st->dev,
                                  .n_ops = st->n_ops,
                                  .pred_start_s = m->start_s < 1e300 ? m->start_s : 0};
        for (int k = 0; k < st->n_ops; k++)
            o->pred_end_s = fmax(o->pred_end_s, x->end_s[x->off[m->tenant] + st->ops[k]]);
        for (int q = 0; q < R; q++)
            v[q] = w->start_s[(size_t)q * S + s];
        o->start_s = pl_median(v, R);
        for (int q = 0; q < R; q++)
            v[q] = w->end_s[(size_t)q * S + s];
        o->end_s = pl_median(v, R);
    }
}

/* The median over rounds of each tenant's completion (its last stage's end) and of the
 * round's end, and each stage's times (fill_stages). */
static void fill_result(const mr_run *x, const pl_ort_result *w, pl_multi_run_result *r)
{
    int R = w->repeat, S = w->n_stages;
    r->n_tenants = x->n, r->repeat = R, r->n_stages = S;
    r->completion_s = pl_calloc((size_t)x->n + 1, sizeof *r->completion_s);
    double *v = pl_calloc((size_t)R + 1, sizeof *v), *span = pl_calloc((size_t)R + 1, sizeof *v);
    for (int i = 0; i < x->n; i++) {
        for (int q = 0; q < R; q++) {
            v[q] = 0;
            for (int s = 0; s < S; s++)
                if (x->stage[s].tenant == i && w->end_s[(size_t)q * S + s] > v[q])
                    v[q] = w->end_s[(size_t)q * S + s];
            if (v[q] > span[q]) span[q] = v[q];
        }
        r->completion_s[i] = pl_median(v, R);
        r->toct_s += r->completion_s[i];
    }
    r->makespan_s = pl_median(span, R);
    fill_stages(x, w, r, v);
    free(v), free(span);
}

/* Every stage into one worker, on its device's thread, with its tenant; warm-up and timed
 * rounds. A failure names the tenants, since the worker's message names stages by number. */
static int measure(mr_run *x, const pl_multi_run_opts *o, pl_multi_run_result *r, pl_err *err)
{
    int n = x->n_stages, repeat = o->repeat > 0 ? o->repeat : 10;
    int warmup = o->warmup > 0 ? o->warmup : 2;
    const char **paths = pl_malloc((size_t)(n ? n : 1) * sizeof *paths);
    const char **devs = pl_malloc((size_t)(n ? n : 1) * sizeof *devs);
    int *tenant = pl_malloc((size_t)(n ? n : 1) * sizeof *tenant);
    for (int s = 0; s < n; s++) {
        const mr_stage *m = &x->stage[s];
        paths[s] = m->path, tenant[s] = m->tenant;
        devs[s] = x->c->devs[x->st[m->tenant].st[m->j].dev].name;
    }
    pl_ort_opts oo = {.seed = o->seed, .timeout_s = o->deadline_s};
    pl_ort_result w = {0};
    pl_ort *ort = pl_ort_start(&oo, err);
    int rc = ort ? pl_ort_load_tenants(ort, paths, devs, tenant, n, err) : -1;
    if (rc == 0) rc = pl_ort_run_spaced(ort, repeat, warmup, o->gap_s, &w, err);
    if (rc == 0 && (w.n_stages != n || w.repeat != repeat))
        rc = pl_err_set(err, "the worker ran %d stages %d times, not %d stages %d times",
                        w.n_stages, w.repeat, n, repeat);
    pl_ort_stop(ort);
    if (rc == 0) fill_result(x, &w, r);
    pl_ort_result_free(&w);
    free(paths), free(devs), free(tenant);
    if (rc == 0) return 0;
    char who[1024] = "";
    for (int i = 0; i < x->n; i++)
        snprintf(who + strlen(who), sizeof who - strlen(who), "%s%d '%s'", i ? ", " : "", i,
                 x->u->tenant_names[i]);
    return pl_err_prefix(err, "multi run (tenants %s)", who);
}

/* $TMPDIR/placer-multi-XXXXXX (else /tmp/...). */
static int make_root(mr_run *x, pl_err *err)
{
    return pl_make_temp_dir("placer-multi", x->root, sizeof x->root, err) < 0
               ? pl_err_prefix(err, "multi run")
               : 0;
}

static int prepare(mr_run *x, const char *const *model_paths, const pl_cost *k, const pl_plan *p,
                   const pl_multi_run_opts *o, pl_err *err)
{
    char cache[4096];
    if (check_union(x, err) < 0 || check_devices(x, p, err) < 0 || simulate(x, k, p, err) < 0)
        return -1;
    mark_cuts(x, p);
    if (o->cache_dir)
        snprintf(cache, sizeof cache, "%s", o->cache_dir);
    else if (pl_cache_dir("inflated", cache, sizeof cache, err) < 0)
        return pl_err_prefix(err, "multi run");
    if (make_root(x, err) < 0) return -1;
    x->st = pl_calloc((size_t)x->n, sizeof *x->st);
    int total = 0;
    for (int i = 0; i < x->n; i++)
        total += x->models[i]->n_ops + 1; /* a tenant has at most one stage per op */
    x->stage = pl_calloc((size_t)total, sizeof *x->stage);
    for (int i = 0; i < x->n; i++)
        if (split_tenant(x, p, i, model_paths[i], cache, err) < 0)
            return pl_err_prefix(err, "multi run: model '%s' (tenant %d, %s)",
                                 x->u->tenant_names[i], i, model_paths[i]);
    order_stages(x);
    return 0;
}

int pl_multi_run(pl_graph *const *models, const char *const *paths, int n, const pl_graph *u,
                 const pl_cluster *c, const pl_cost *k, const pl_plan *p,
                 const pl_multi_run_opts *o, pl_multi_run_result *r, pl_err *err)
{
    *r = (pl_multi_run_result){0};
    pl_multi_run_opts dflt = {0};
    mr_run x = {.models = models, .u = u, .c = c, .n = n};
    if (n < 1) return pl_err_set(err, "multi run: no model given");
    int rc = prepare(&x, paths, k, p, o ? o : &dflt, err);
    if (rc == 0) rc = measure(&x, o ? o : &dflt, r, err);
    if (x.root[0] && pl_remove_tree(x.root) < 0 && rc == 0)
        rc = pl_err_set(err, "multi run: cannot remove the temporary folder %s", x.root);
    for (int s = 0; s < x.n_stages; s++)
        free(x.stage[s].path);
    for (int i = 0; x.st && i < n; i++)
        pl_stages_free(&x.st[i]);
    free(x.stage), free(x.st), free(x.off), free(x.start_s), free(x.end_s), free(x.cut);
    free(x.seq);
    if (rc < 0) pl_multi_run_result_free(r);
    return rc;
}

void pl_multi_run_result_free(pl_multi_run_result *r)
{
    if (!r) return;
    free(r->completion_s), free(r->stages);
    *r = (pl_multi_run_result){0};
}
