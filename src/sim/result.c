/* result.c: pl_simulate, and the figures derived from a run: makespan, throughput, memory
 * verdict, critical path; and the message for an order that deadlocks. */
#include "sim_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- deadlock ---- */

/* A deadlock of the transfer order is named by xorder.c; one of the op order by the plan
 * checker every plan reader shares (pl_plan_check), so that simulate, split and run refuse
 * the same plans with the same words. */
int sim_deadlock(const sim_static *s, const sim_run *run, pl_err *err)
{
    if (sim_xorder_deadlock(s, run, err) < 0) return -1;
    if (pl_plan_check(s->p, s->g, s->k->c, err) < 0) return pl_err_prefix(err, "simulate");
    return pl_err_set(err, "simulate: %d op runs never happened (the plan cannot run)",
                      s->n * run->K - run->done);
}

/* ---- critical path ---- */

/* What an op instance waited for last: an input (through its producer) or the op run before
 * it on its device. Ties go to inputs, data explaining more than a busy device; a graph input
 * (no op behind it) ends the walk. Returns the instance, or -1. */
static int crit_pred(const sim_static *s, const sim_run *run, int inst)
{
    int r = inst / s->n, op = inst % s->n, best = -1;
    double bt = -INFINITY;
    for (int k = s->in_off[op]; k < s->in_off[op + 1]; k++) {
        const sim_in *in = &s->in[k];
        int src = s->producer[in->tensor];
        int pred = src >= 0 ? r * s->n + src : -1;
        double at = in->slot >= 0 ? run->slot_end[r * s->n_slots + in->slot]
                    : src >= 0    ? run->op_end[pred]
                                  : 0;
        if (at > bt || (at == bt && best < 0 && pred >= 0)) bt = at, best = pred;
    }
    int prev = run->dev_prev[inst];
    if (prev >= 0 && (run->op_end[prev] > bt || (run->op_end[prev] == bt && best < 0))) best = prev;
    return best;
}

/* The instance that ended last; when a returned output arrived after it, that output's
 * producer, as the return hangs off it. */
static int crit_last(const sim_static *s, const sim_run *run)
{
    int last = -1;
    double end = -INFINITY;
    for (int i = 0; i < s->n * run->K; i++)
        if (run->op_end[i] > end) end = run->op_end[i], last = i;
    for (int r = 0; r < run->K; r++)
        for (int sl = 0; sl < s->n_slots; sl++) {
            double e = run->slot_end[r * s->n_slots + sl];
            if (!s->slots[sl].ret || e <= end) continue;
            end = e, last = r * s->n + s->producer[s->slots[sl].tensor];
        }
    return last;
}

static void critical_path(const sim_static *s, const sim_run *run, pl_sim_result *r)
{
    int cap = 16, n = 0;
    int *path = pl_malloc(cap * sizeof *path);
    /* Every step goes to an instance that started strictly before: the walk ends. */
    for (int i = crit_last(s, run); i >= 0; i = crit_pred(s, run, i)) {
        pl_grow((void **)&path, &cap, n, sizeof *path);
        path[n++] = i % s->n;
    }
    for (int i = 0; i < n / 2; i++) {
        int t = path[i];
        path[i] = path[n - 1 - i], path[n - 1 - i] = t;
    }
    r->critical_path = path, r->critical_len = n;
}

/* ---- figures ---- */

/* The busiest device's or link's time per request: no period can be shorter. */
static double busiest(const pl_sim_result *r, int K)
{
    double m = 0;
    for (int d = 0; d < r->n_devs; d++)
        m = fmax(m, r->busy_s[d]);
    for (int i = 0; i < r->n_devs * r->n_devs; i++)
        m = fmax(m, r->link_busy_s[i]);
    return m / K;
}

/* Makespan: the end of the last request. Period: the mean gap between completions, first to
 * last, but never less than the busiest resource's time per request (requests served in
 * lockstep all complete together, and the gap alone would promise a rate no device can
 * sustain). Latency: the mean of each request's end minus its start (its first op or
 * transfer). One request: period and latency are the makespan. */
static void throughput(const sim_run *run, pl_sim_result *r)
{
    int K = run->K;
    double first = INFINITY, last = -INFINITY, lat = 0;
    for (int i = 0; i < K; i++) {
        first = fmin(first, run->req_end[i]), last = fmax(last, run->req_end[i]);
        lat += run->req_end[i] - (isfinite(run->req_start[i]) ? run->req_start[i] : 0);
    }
    r->makespan_s = last;
    r->period_s = K > 1 ? fmax((last - first) / (K - 1), busiest(r, K)) : r->makespan_s;
    r->latency_s = lat / K;
}

static void memory_verdict(const sim_static *s, const pl_sim_opts *o, pl_sim_result *r)
{
    r->oom_dev = -1;
    if (o->ignore_memory) return;
    for (int d = 0; d < s->D; d++) {
        double cap = s->k->c->devs[d].memory_bytes;
        if (cap > 0 && r->peak_mem_bytes[d] > cap) {
            r->oom = true, r->oom_dev = d, r->oom_excess_bytes = r->peak_mem_bytes[d] - cap;
            return;
        }
    }
}

/* Several models on one host (a union graph): each one's completion, the end of its last op
 * over every request (docs/multi.md); their sum is the TOCT. */
static void tenant_ends(const sim_static *s, const sim_run *run, pl_sim_result *r)
{
    const pl_graph *g = s->k->g;
    if (g->n_tenants == 0) return; /* one model: nothing beyond the makespan to report */
    int T = g->n_tenants, n = g->n_ops;
    r->n_tenants = T;
    r->tenant_end_s = pl_calloc((size_t)T, sizeof *r->tenant_end_s);
    for (int q = 0; q < run->K; q++)
        for (int i = 0; i < n; i++) {
            double e = run->op_end[(size_t)q * n + i];
            int t = g->ops[i].tenant;
            if (e > r->tenant_end_s[t]) r->tenant_end_s[t] = e;
        }
}

static void record(const sim_static *s, sim_run *run, pl_sim_result *r)
{
    r->op_start_s = run->op_start, r->op_end_s = run->op_end;
    run->op_start = run->op_end = NULL;
    r->n_xfers = run->n_xfer;
    r->xfers = pl_malloc((run->n_xfer + 1) * sizeof *r->xfers);
    for (int i = 0; i < run->n_xfer; i++) {
        int inst = run->xfer_seq[i];
        const sim_slot *sl = &s->slots[inst % s->n_slots];
        r->xfers[i] = (pl_xfer){
            sl->tensor,          sl->from,  sl->to, inst / s->n_slots, run->slot_start[inst],
            run->slot_end[inst], sl->reader};
    }
}

void sim_fill_result(const sim_static *s, sim_run *run, const pl_sim_opts *o, pl_sim_result *r)
{
    r->n_devs = s->D;
    r->requests = run->K;
    r->busy_s = run->busy, r->peak_mem_bytes = run->peak;
    r->link_bytes = run->link_bytes, r->link_busy_s = run->link_busy;
    run->busy = run->peak = run->link_bytes = run->link_busy = NULL;
    r->events = run->events;
    throughput(run, r);
    memory_verdict(s, o, r);
    critical_path(s, run, r);
    tenant_ends(s, run, r);
    if (o->record) record(s, run, r);
}

/* ---- entry points ---- */

/* The period P of the steady state is the round the cold term makes: from the warm run's,
 * each round priced at the last one's period, until the period moves by less than 1e-6 of
 * itself (a contraction: the cold fraction's slope is below 1/tau, so a few rounds do; at
 * most 12). *run is the last round's, priced at *period. */
static int cold_rounds(sim_static *s, const pl_sim_opts *o, sim_run *run, double *period,
                       pl_err *err)
{
    double next = run->req_end[0] + o->idle_s;
    for (int i = 0; i < 12; i++) {
        *period = next;
        sim_share_cold(s->k, s->p, *period, &s->share);
        sim_run_free(run);
        if (sim_run_events(s, o, run, err) < 0) return -1;
        next = run->req_end[0] + o->idle_s;
        if (fabs(next - *period) <= 1e-6 * next) break;
    }
    return 0;
}

int pl_simulate(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o, pl_sim_result *r,
                pl_err *err)
{
    static const pl_sim_opts dflt = {0};
    memset(r, 0, sizeof *r);
    r->oom_dev = -1;
    if (!o) o = &dflt;
    if (o->contention < PL_CONTENTION_PORTS || o->contention > PL_CONTENTION_NONE)
        return pl_err_set(err, "simulate: unknown contention model %d", (int)o->contention);
    if (o->requests < 0)
        return pl_err_set(err, "simulate: %d requests: give 1 or more", o->requests);
    if (!(o->idle_s >= 0 && o->idle_s <= 1e4))
        return pl_err_set(err, "simulate: a wait of %g s between requests: give 0 to 1e4 s",
                          o->idle_s);
    sim_static s;
    if (sim_prep(k, p, o, &s, err) < 0) {
        sim_static_free(&s);
        return -1;
    }
    int K = o->requests > 1 ? o->requests : 1;
    if ((double)K * (s.n > s.n_slots ? s.n : s.n_slots) >= INT_MAX) {
        sim_static_free(&s);
        return pl_err_set(err, "simulate: %d requests of %d ops is too many to simulate at once", K,
                          s.n);
    }
    sim_run run = {0};
    double period = 0;
    int rc = sim_run_events(&s, o, &run, err);
    /* share.cold: the run is a round (sim_round) and the host gives the cold figures */
    if (rc == 0 && s.share.cold) rc = cold_rounds(&s, o, &run, &period, err);
    if (rc == 0) sim_fill_result(&s, &run, o, r), r->cold_period_s = period;
    sim_run_free(&run);
    sim_static_free(&s);
    return rc;
}

void pl_sim_result_free(pl_sim_result *r)
{
    if (!r) return;
    free(r->busy_s), free(r->peak_mem_bytes), free(r->link_bytes), free(r->link_busy_s);
    free(r->critical_path), free(r->op_start_s), free(r->op_end_s), free(r->xfers);
    free(r->tenant_end_s);
    memset(r, 0, sizeof *r);
    r->oom_dev = -1;
}
