/* serve.c: a partition serving a diurnal trace of requests (docs/serverless.md, "Serving").
 *
 * MOPAR's evaluation replays a day of requests (250 to 1,250 a second) and reports P95 latency
 * and memory per 100 requests a second. Here each slice is a function whose instances serve one
 * request at a time, as Lambda's do: a request's slice takes the instance of its function that
 * was freed last (the warmest) if one is idle and within its keep-alive, else a new instance
 * starts, paying the platform's cold start. Memory counts every live instance, busy or warm.
 * This is not the plan simulator (src/sim): that one runs one request's ops on fixed devices;
 * here the devices are the instances, made and dropped as the load moves, and a request is a
 * chain of slices whose times the pricing already gives.
 *
 * The memory is independent of the number of requests (up to 5e7 are accepted): arrivals are
 * drawn one at a time, as the previous one is served, so the events pending are the requests in
 * flight; a dropped instance's slot is taken again; and a request is never queued (a slice
 * without a warm instance starts one), so its latency is its slices' times plus one cold
 * start per slice that paid one: the latencies are kept as a count per number of cold starts,
 * from which the percentiles are exact. */
#include "placer/serverless.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One function's instances: busy ones in a heap by the time they free up, idle ones in a
 * stack (the one freed last on top) whose bottom holds the oldest. */
typedef struct inst {
    double born, free_at;
} inst;

typedef struct fn {
    double mem_gb, time_s;
    pl_heap busy; /* (free_at, 0, 0, instance) */
    int *idle, n_idle, cap_idle, idle_bottom;
    inst *all;
    int n_all, cap_all;
    int *spare, n_spare, cap_spare; /* slots of `all` whose instance was dropped */
} fn;

typedef struct serve {
    const pl_sl_serve_opts *o;
    const pl_platform *pf;
    fn *fns;
    int n_fns;
    double mem_gb_s; /* the integral of live memory over the trace */
    long live;       /* instances alive now, over every function */
    bool too_many;   /* live went past PL_SL_SERVE_INSTANCES_MAX: the replay stops */
    pl_sl_serve_result *r;
} serve;

/* Drops instance id: its memory counted from birth to its keep-alive's end (or the trace's);
 * its slot is free for the next instance. */
static void retire(serve *sv, fn *f, int id)
{
    const inst *in = &f->all[id];
    double end = fmin(in->free_at + sv->o->keep_alive_s, sv->o->duration_s);
    if (end > in->born) sv->mem_gb_s += f->mem_gb * (end - in->born);
    pl_grow((void **)&f->spare, &f->cap_spare, f->n_spare, sizeof *f->spare);
    f->spare[f->n_spare++] = id;
    sv->live--;
}

/* The idle stack's dropped bottom removed once it is most of the stack: the stack holds the
 * idle instances, not every one that ever idled. */
static void compact_idle(fn *f)
{
    if (f->idle_bottom < 64 || f->idle_bottom < f->n_idle - f->idle_bottom) return;
    f->n_idle -= f->idle_bottom;
    memmove(f->idle, f->idle + f->idle_bottom, (size_t)f->n_idle * sizeof *f->idle);
    f->idle_bottom = 0;
}

/* Instances freed by time t become idle; idle ones past their keep-alive are dropped. */
static void settle(serve *sv, fn *f, double t)
{
    while (f->busy.n && pl_heap_top(&f->busy)->a <= t) {
        pl_heap_item it = pl_heap_pop(&f->busy);
        pl_grow((void **)&f->idle, &f->cap_idle, f->n_idle, sizeof *f->idle);
        f->idle[f->n_idle++] = it.id;
    }
    while (f->idle_bottom < f->n_idle &&
           t - f->all[f->idle[f->idle_bottom]].free_at > sv->o->keep_alive_s)
        retire(sv, f, f->idle[f->idle_bottom++]);
    compact_idle(f);
}

/* A slot of `all` for a new instance: a dropped one's, else a new one. */
static int new_slot(fn *f)
{
    if (f->n_spare) return f->spare[--f->n_spare];
    pl_grow((void **)&f->all, &f->cap_all, f->n_all, sizeof *f->all);
    return f->n_all++;
}

/* Slice k of a request ready at t: the instance it runs on; its end. *cold is set when the
 * instance had to start. */
static double run_slice(serve *sv, fn *f, double t, bool *cold)
{
    settle(sv, f, t);
    int id;
    double start = t;
    *cold = f->n_idle <= f->idle_bottom;
    if (!*cold)
        id = f->idle[--f->n_idle];
    else {
        id = new_slot(f);
        f->all[id].born = t;
        start = t + sv->pf->cold_start_s;
        sv->r->instances++, sv->r->cold_starts++;
        sv->too_many |= ++sv->live > PL_SL_SERVE_INSTANCES_MAX;
    }
    double end = start + f->time_s;
    f->all[id].free_at = end;
    sv->r->busy_gb_s += f->mem_gb * f->time_s;
    pl_heap_push(&f->busy, (pl_heap_item){end, 0, 0, id});
    return end;
}

static double rate(const pl_sl_serve_opts *o, double t)
{
    double phase = o->period_s > 0 ? 2 * M_PI * t / o->period_s : 0;
    return o->rps_min + (o->rps_max - o->rps_min) * (1 - cos(phase)) / 2;
}

/* The next arrival after t: Poisson by thinning at the highest rate, or the rate's interval. */
static double next_arrival(const pl_sl_serve_opts *o, double t, uint64_t *seed)
{
    if (!o->poisson) return t + 1 / rate(o, t);
    for (;;) {
        t += -log(1 - pl_rng_uniform(seed)) / o->rps_max;
        if (pl_rng_uniform(seed) * o->rps_max <= rate(o, t)) return t;
    }
}

/* The latency at quantile q (nearest rank) of n requests, count[c] of which paid c cold starts:
 * sum_s plus c cold starts. */
static double rank(const long *count, int n_fns, long n, double sum_s, double cold_s, double q)
{
    long want = (long)ceil(q * (double)n), seen = 0;
    for (int c = 0; c <= n_fns && n; c++)
        if ((seen += count[c]) >= want) return sum_s + c * cold_s;
    return 0;
}

/* Events (time, arrival, slice, cold starts so far) in time order: a request's slices run as it
 * gets to them, so instances are taken in the order of the times they are needed. The next
 * arrival is drawn when the previous one is served (slice 0 runs at its arrival). count[c]:
 * the requests that paid c cold starts. */
static void replay(serve *sv, long *count)
{
    const pl_sl_serve_opts *o = sv->o;
    pl_heap ev = {0};
    uint64_t seed = o->seed ? o->seed : 1;
    double t = o->poisson ? next_arrival(o, 0, &seed) : 0;
    if (t < o->duration_s) pl_heap_push(&ev, (pl_heap_item){t, t, 0, 0});
    while (ev.n && !sv->too_many) {
        pl_heap_item e = pl_heap_pop(&ev);
        if (e.c == 0) {
            sv->r->requests++;
            double next = next_arrival(o, e.a, &seed);
            if (next < o->duration_s) pl_heap_push(&ev, (pl_heap_item){next, next, 0, 0});
        }
        bool cold;
        double end = run_slice(sv, &sv->fns[e.c], e.a, &cold);
        int colds = e.id + cold;
        if (e.c + 1 < sv->n_fns)
            pl_heap_push(&ev, (pl_heap_item){end, e.b, e.c + 1, colds});
        else
            count[colds]++;
    }
    pl_heap_free(&ev);
}

int pl_sl_serve(const pl_sl_plan *p, const pl_platform *pf, const pl_sl_serve_opts *o,
                pl_sl_serve_result *r, pl_err *err)
{
    memset(r, 0, sizeof *r);
    double invocations = o->duration_s * o->rps_max * p->n;
    if (!(invocations <= PL_SL_SERVE_INVOCATIONS_MAX))
        return pl_err_set(err,
                          "serving %g s at up to %g requests a second through %d functions is "
                          "%.3g invocations; at most %.3g are replayed (a shorter trace)",
                          o->duration_s, o->rps_max, p->n, invocations,
                          PL_SL_SERVE_INVOCATIONS_MAX);
    serve sv = {.o = o, .pf = pf, .n_fns = p->n, .r = r};
    sv.fns = pl_calloc((size_t)p->n + 1, sizeof *sv.fns);
    double sum_s = 0;
    for (int k = 0; k < p->n; k++) {
        sv.fns[k].mem_gb = p->slices[k].mem_mb * PL_PLATFORM_MB_BYTES / PL_PLATFORM_GB_S_BYTES,
        sv.fns[k].time_s = p->slices[k].time_s;
        sum_s += p->slices[k].time_s;
    }
    long *count = pl_calloc((size_t)p->n + 1, sizeof *count);
    if (p->n) replay(&sv, count);
    for (int k = 0; k < p->n; k++) {
        fn *f = &sv.fns[k];
        settle(&sv, f, INFINITY); /* every instance idles out: counted once, by retire */
        pl_heap_free(&f->busy), free(f->idle), free(f->all), free(f->spare);
    }
    double cold = pf->cold_start_s;
    r->p50_s = rank(count, p->n, r->requests, sum_s, cold, 0.5);
    r->p95_s = rank(count, p->n, r->requests, sum_s, cold, 0.95);
    r->p99_s = rank(count, p->n, r->requests, sum_s, cold, 0.99);
    r->mem_gb_avg = o->duration_s > 0 ? sv.mem_gb_s / o->duration_s : 0;
    double rps = o->duration_s > 0 ? r->requests / o->duration_s : 0;
    r->mem_gb_per_100rps = rps > 0 ? r->mem_gb_avg / (rps / 100) : 0;
    free(count), free(sv.fns);
    if (sv.too_many)
        return pl_err_set(err,
                          "the replay needs more than %d instances alive at once (cold start %g "
                          "s, keep-alive %g s, up to %g requests a second); a shorter cold "
                          "start or keep-alive, or fewer requests a second",
                          PL_SL_SERVE_INSTANCES_MAX, pf->cold_start_s, o->keep_alive_s, o->rps_max);
    return 0;
}
