/* multi.c: the placers of several models behind one entry point, and the simulator's figures
 * per model and per device (docs/multi.md). */
#include "multi_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pl_multi_own_algo(const char *algo)
{
    return !strcmp(algo, "talos") || !strcmp(algo, "aswm") || !strcmp(algo, "tsam");
}

static int own_place(const char *algo, const pl_cost *k, const pl_multi_opts *mo, pl_plan *out,
                     pl_err *err)
{
    pl_plan_clear_schedule(out);
    if (pl_place_precheck(k, err) < 0) return -1;
    if (!strcmp(algo, "talos")) return mt_talos(k, mo, out, err);
    if (!strcmp(algo, "aswm")) return mt_aswm(k, out, err);
    return mt_tsam(k, out, err);
}

/* An op keyed by when the simulator ran it. */
typedef struct sim_key {
    double start_s, end_s;
    int pos, op; /* topological position (ties of zero-time ops), op */
} sim_key;

static int by_sim(const void *a, const void *b)
{
    const sim_key *x = a, *y = b;
    if (x->start_s != y->start_s) return x->start_s < y->start_s ? -1 : 1;
    if (x->end_s != y->end_s) return x->end_s < y->end_s ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

int *mt_sim_sequence(const pl_graph *g, const double *start_s, const double *end_s)
{
    int n = g->n_ops;
    sim_key *key = pl_malloc((size_t)(n ? n : 1) * sizeof *key);
    int *seq = pl_malloc((size_t)(n ? n : 1) * sizeof *seq);
    for (int t = 0; t < n; t++) {
        int op = g->topo[t];
        key[t] = (sim_key){start_s[op], end_s[op], t, op};
    }
    qsort(key, (size_t)n, sizeof *key, by_sim);
    for (int t = 0; t < n; t++)
        seq[t] = key[t].op;
    free(key);
    return seq;
}

/* A plan without a per-device order (priorities, or first ready) gets the order the simulator
 * runs it in. A device runs one model's ops per onnxruntime session, so a plan runs as stages
 * cut wherever its device passes from one model to another (pl_plan_schedule_stages); with
 * the order fixed, the simulator charges exactly those stages, and `--run` cuts the same. */
static int fix_order(const pl_cost *k, pl_plan *p, pl_err *err)
{
    if (p->order) return 0;
    pl_sim_opts so = {.contention = p->contention, .record = true, .ignore_memory = true};
    pl_sim_result r;
    if (pl_simulate(k, p, &so, &r, err) < 0) return -1;
    int *seq = mt_sim_sequence(k->g, r.op_start_s, r.op_end_s);
    pl_plan_set_order(p, seq);
    free(seq);
    pl_sim_result_free(&r);
    return 0;
}

/* p's TOCT as pl_multi_evaluate judges it (memory not enforced) into *toct (may be NULL), and
 * whether a device's peak exceeds its memory into *oom; -1 when the simulator refuses p. */
static int judge(const pl_cost *k, const pl_plan *p, double *toct, bool *oom, pl_err *err)
{
    pl_multi_eval e;
    if (pl_multi_evaluate(k, p, p->contention, &e, err) < 0) return -1;
    if (toct) *toct = e.toct_s;
    *oom = e.oom;
    pl_multi_eval_free(&e);
    return 0;
}

/* Talos's plan, then the local search on TOCT from it (docs/multi.md, "The answer, and Talos
 * refined"): the flow decides one topological step at a time, and a move it cannot see (a
 * whole model on its own GPU, a branch kept home) is one simulation away. The search judges
 * plans run by priorities; the plan placer hands on runs in its simulated order, cut into
 * stages where a device passes between models (fix_order), so the search's plan is kept only
 * when, ordered so, it is still below the flow's TOCT, and fits in memory wherever the flow's
 * did (the search caps each device's static memory, not the simulated peak the answer is
 * judged by); otherwise out is the flow's again. */
static int refine(const pl_cost *k, const pl_place_opts *po, const pl_multi_opts *mo, pl_plan *out,
                  pl_multi_credit *credit, pl_err *err)
{
    snprintf(credit->by, sizeof credit->by, "flow");
    if (mo->refine_s <= 0) return 0;
    out->contention = po ? po->contention : PL_CONTENTION_PORTS;
    pl_plan *flow = pl_plan_copy(out);
    double kept = -1; /* the flow's TOCT is credit->refine.before_s, the search's start */
    bool flow_oom = false, kept_oom = false;
    int rc = judge(k, flow, NULL, &flow_oom, err);
    int moves = rc < 0 ? -1
                       : pl_place_refine(k, out, PL_REFINE_TOCT, out->contention, mo->refine_s,
                                         po ? po->seed : 1, &credit->refine, err);
    if (moves < 0 ||
        (moves > 0 && (fix_order(k, out, err) < 0 || judge(k, out, &kept, &kept_oom, err) < 0)))
        rc = -1;
    bool lower = kept < credit->refine.before_s;
    bool better = kept_oom ? flow_oom && lower : flow_oom || lower;
    if (rc == 0 && moves > 0 && better) {
        snprintf(credit->by, sizeof credit->by, "refinement");
        credit->refine.after_s = kept;
    } else if (rc == 0) { /* nothing better, or not once ordered, or not in memory: the flow's */
        pl_plan_assign(out, flow);
        credit->refine.moves = 0, credit->refine.after_s = credit->refine.before_s;
    }
    pl_plan_free(flow);
    return rc;
}

int pl_multi_place(const char *algo, const pl_cost *k, const pl_place_opts *po,
                   const pl_multi_opts *mo, pl_plan *out, pl_multi_credit *credit, pl_err *err)
{
    pl_multi_opts dflt;
    pl_multi_credit own;
    if (!mo) pl_multi_opts_default(&dflt), mo = &dflt;
    if (!credit) credit = &own;
    memset(credit, 0, sizeof *credit);
    snprintf(credit->by, sizeof credit->by, "%s", algo);
    if (!pl_multi_own_algo(algo)) {
        const pl_algo *a = pl_algo_find(algo);
        if (!a)
            return pl_err_set(err,
                              "multi: unknown algorithm '%s' (talos, aswm, tsam, or one of "
                              "`placer place --help`)",
                              algo);
        if (pl_place(a, k, po, out, err) < 0) return -1;
        return fix_order(k, out, err);
    }
    double t0 = pl_now();
    int rc = own_place(algo, k, mo, out, err);
    if (rc == 0 && !strcmp(algo, "talos")) rc = refine(k, po, mo, out, credit, err);
    out->search_s = pl_now() - t0;
    snprintf(out->algo, sizeof out->algo, "%s", algo);
    if (po) out->contention = po->contention;
    return rc < 0 ? rc : fix_order(k, out, err);
}

int pl_multi_evaluate(const pl_cost *k, const pl_plan *p, pl_contention contention,
                      pl_multi_eval *e, pl_err *err)
{
    return pl_multi_evaluate_after(k, p, contention, 0, e, err);
}

int pl_multi_evaluate_after(const pl_cost *k, const pl_plan *p, pl_contention contention,
                            double idle_s, pl_multi_eval *e, pl_err *err)
{
    memset(e, 0, sizeof *e);
    pl_sim_opts so = {.contention = contention, .ignore_memory = true, .idle_s = idle_s};
    pl_sim_result r;
    if (pl_simulate(k, p, &so, &r, err) < 0) return -1;
    int T = r.n_tenants > 0 ? r.n_tenants : 1, D = r.n_devs;
    e->n_tenants = T, e->n_devs = D;
    e->makespan_s = r.makespan_s;
    e->cold_period_s = r.cold_period_s;
    if (r.tenant_end_s)
        e->completion_s = r.tenant_end_s, r.tenant_end_s = NULL;
    else /* one model: its completion is the makespan */
        e->completion_s = pl_malloc(sizeof *e->completion_s), e->completion_s[0] = r.makespan_s;
    for (int t = 0; t < T; t++)
        e->toct_s += e->completion_s[t];
    e->busy_s = r.busy_s, r.busy_s = NULL;
    e->idle_s = pl_malloc((size_t)D * sizeof *e->idle_s);
    for (int d = 0; d < D; d++)
        e->idle_s[d] = e->makespan_s - e->busy_s[d];
    e->ops_on = pl_calloc((size_t)T * D + 1, sizeof *e->ops_on);
    for (int v = 0; v < k->g->n_ops; v++)
        e->ops_on[k->g->ops[v].tenant * D + p->dev[v]]++;
    e->oom_dev = -1;
    for (int d = 0; d < D; d++) {
        double cap = k->c->devs[d].memory_bytes;
        if (cap > 0 && r.peak_mem_bytes[d] > cap && e->oom_dev < 0) e->oom = true, e->oom_dev = d;
    }
    pl_sim_result_free(&r);
    return 0;
}

void pl_multi_eval_free(pl_multi_eval *e)
{
    free(e->completion_s), free(e->busy_s), free(e->idle_s), free(e->ops_on);
    memset(e, 0, sizeof *e);
}
