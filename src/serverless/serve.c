/* serve.c: a partition serving a diurnal trace of requests (docs/serverless.md, "Serving").
 *
 * MOPAR's evaluation replays a day of requests (250 to 1,250 a second) and reports P95 latency
 * and memory per 100 requests a second. Here each slice is a function whose instances serve one
 * request at a time, as Lambda's do: a request's slice takes the instance of its function that
 * was freed last (the warmest) if one is idle and within its keep-alive, else a new instance
 * starts, paying the platform's cold start. Memory counts every live instance, busy or warm.
 * This is not the plan simulator (src/sim): that one runs one request's ops on fixed devices;
 * here the devices are the instances, made and dropped as the load moves, and a request is a
 * chain of slices whose times the pricing already gives. */
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
} fn;

typedef struct serve {
    const pl_sl_serve_opts *o;
    const pl_platform *pf;
    fn *fns;
    int n_fns;
    double mem_gb_s; /* the integral of live memory over the trace */
    pl_sl_serve_result *r;
} serve;

/* Drops the instance: its memory counted from birth to its keep-alive's end (or the trace's). */
static void retire(serve *sv, const fn *f, const inst *in)
{
    double end = fmin(in->free_at + sv->o->keep_alive_s, sv->o->duration_s);
    if (end > in->born) sv->mem_gb_s += f->mem_gb * (end - in->born);
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
        retire(sv, f, &f->all[f->idle[f->idle_bottom++]]);
}

/* Slice k of a request ready at t: the instance it runs on; its end. */
static double run_slice(serve *sv, fn *f, double t)
{
    settle(sv, f, t);
    int id;
    double start = t;
    if (f->n_idle > f->idle_bottom)
        id = f->idle[--f->n_idle];
    else {
        pl_grow((void **)&f->all, &f->cap_all, f->n_all, sizeof *f->all);
        id = f->n_all++;
        f->all[id].born = t;
        start = t + sv->pf->cold_start_s;
        sv->r->instances++, sv->r->cold_starts++;
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double rank(const double *v, long n, double q)
{
    long i = (long)ceil(q * n) - 1;
    return n ? v[i < 0 ? 0 : i] : 0;
}

/* Events (time, slice, request) in time order: a request's slices run as it gets to them, so
 * instances are taken in the order of the times they are needed. */
static void replay(serve *sv, double **lat_out)
{
    const pl_sl_serve_opts *o = sv->o;
    pl_heap ev = {0};
    uint64_t seed = o->seed ? o->seed : 1;
    double *arrived = NULL, *lat = NULL;
    int cap = 0, cap_l = 0;
    long n = 0;
    double t = o->poisson ? next_arrival(o, 0, &seed) : 0;
    for (; t < o->duration_s; t = next_arrival(o, t, &seed)) {
        pl_grow((void **)&arrived, &cap, (int)n, sizeof *arrived);
        arrived[n] = t;
        pl_heap_push(&ev, (pl_heap_item){t, 0, 0, (int)n++});
    }
    pl_grow((void **)&lat, &cap_l, (int)n, sizeof *lat);
    while (ev.n) {
        pl_heap_item e = pl_heap_pop(&ev);
        double end = run_slice(sv, &sv->fns[e.c], e.a);
        if (e.c + 1 < sv->n_fns)
            pl_heap_push(&ev, (pl_heap_item){end, 0, e.c + 1, e.id});
        else
            lat[e.id] = end - arrived[e.id];
    }
    sv->r->requests = n;
    free(arrived), pl_heap_free(&ev);
    *lat_out = lat;
}

void pl_sl_serve(const pl_sl_plan *p, const pl_platform *pf, const pl_sl_serve_opts *o,
                 pl_sl_serve_result *r)
{
    memset(r, 0, sizeof *r);
    serve sv = {.o = o, .pf = pf, .n_fns = p->n, .r = r};
    sv.fns = pl_calloc((size_t)p->n + 1, sizeof *sv.fns);
    for (int k = 0; k < p->n; k++)
        sv.fns[k].mem_gb = p->slices[k].mem_mb / 1024, sv.fns[k].time_s = p->slices[k].time_s;
    double *lat = NULL;
    replay(&sv, &lat);
    for (int k = 0; k < p->n; k++) {
        fn *f = &sv.fns[k];
        settle(&sv, f, INFINITY); /* every instance idles out: counted once, by retire */
        pl_heap_free(&f->busy), free(f->idle), free(f->all);
    }
    qsort(lat, r->requests, sizeof *lat, cmp_double);
    r->p50_s = rank(lat, r->requests, 0.5), r->p95_s = rank(lat, r->requests, 0.95);
    r->p99_s = rank(lat, r->requests, 0.99);
    r->mem_gb_avg = o->duration_s > 0 ? sv.mem_gb_s / o->duration_s : 0;
    double rps = o->duration_s > 0 ? r->requests / o->duration_s : 0;
    r->mem_gb_per_100rps = rps > 0 ? r->mem_gb_avg / (rps / 100) : 0;
    free(lat), free(sv.fns);
}
