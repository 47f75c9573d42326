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
 * from which the percentiles are exact.
 *
 * Clockwork++'s policy (a plan with window_s > 0, docs/serverless.md "Clockwork++") replaces the
 * instances' lifecycle with windows: each function holds through a window the most requests it
 * has in flight at once in that window, started before it. Nothing waits, so a request's latency
 * is its slices' sum, and what is counted is the in-flight requests per window: a queue of their
 * ends per function, no heap. */
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

/* ---- Clockwork++'s windows (docs/serverless.md, "Clockwork++") ---- */

/* One function served by windows: the ends of its requests in flight, in order (its requests
 * start in order and all take time_s), as a queue; the window its last start fell in, the most
 * in flight in it so far, and what the windows before held. */
typedef struct win_fn {
    double mem_gb, time_s, offset_s; /* offset_s: when a request reaches it, after arrival */
    double *ends;
    int head, n, cap;
    long w, peak, held_before; /* held_before: instances held through window w - 1 */
} win_fn;

typedef struct windows {
    const pl_sl_serve_opts *o;
    double window_s;
    long n_windows;
    double held_gb_s; /* memory held, summed over windows and functions */
    long instances;   /* started at a boundary: beyond the previous window's */
    bool too_many;
} windows;

static void win_push(win_fn *f, double end)
{
    if (f->head + f->n == f->cap && f->head > 0) { /* the dropped front reused */
        memmove(f->ends, f->ends + f->head, (size_t)f->n * sizeof *f->ends);
        f->head = 0;
    }
    pl_grow((void **)&f->ends, &f->cap, f->head + f->n, sizeof *f->ends);
    f->ends[f->head + f->n++] = end;
}

/* The requests done by t leave the queue: those left are in flight at t (start <= t < end). */
static void win_pop(win_fn *f, double t)
{
    while (f->n && f->ends[f->head] <= t)
        f->head++, f->n--;
}

/* Window f->w closes: its instances held through its length (the trace's end cuts the last);
 * those beyond the previous window's were started before it. The next window starts with the
 * requests in flight at its boundary. */
static void win_close(windows *ws, win_fn *f)
{
    double from = (double)f->w * ws->window_s;
    double to = fmin(from + ws->window_s, ws->o->duration_s);
    ws->held_gb_s += (double)f->peak * f->mem_gb * (to - from);
    if (f->peak > f->held_before) ws->instances += f->peak - f->held_before;
    ws->too_many |= f->peak > PL_SL_SERVE_INSTANCES_MAX;
    f->held_before = f->peak;
    f->w++;
    win_pop(f, (double)f->w * ws->window_s);
    f->peak = f->n;
}

/* A request reaches f at t (those past the trace's end count in its last window). */
static void win_start(windows *ws, win_fn *f, double t)
{
    long w = (long)floor(t / ws->window_s);
    if (w > ws->n_windows - 1) w = ws->n_windows - 1;
    while (f->w < w)
        win_close(ws, f);
    win_pop(f, t);
    win_push(f, t + f->time_s);
    if (f->n > f->peak) f->peak = f->n;
    ws->too_many |= f->n > PL_SL_SERVE_INSTANCES_MAX;
}

/* Serves the trace by windows: every arrival walks the functions at their offsets (no cold
 * start, no queue: each window holds enough instances), so its latency is the slices' sum. */
static int serve_windows(const pl_sl_plan *p, const pl_platform *pf, const pl_sl_serve_opts *o,
                         pl_sl_serve_result *r, pl_err *err)
{
    double n_windows = ceil(o->duration_s / p->window_s);
    if (!(n_windows * p->n <= PL_SL_SERVE_INVOCATIONS_MAX)) /* a step each, as an invocation */
        return pl_err_set(err,
                          "windows of %g s over %g s through %d functions are %.3g steps; at most "
                          "%.3g are replayed (a longer window)",
                          p->window_s, o->duration_s, p->n, n_windows * p->n,
                          PL_SL_SERVE_INVOCATIONS_MAX);
    windows ws = {.o = o, .window_s = p->window_s, .n_windows = (long)fmax(1, n_windows)};
    win_fn *fs = pl_calloc((size_t)p->n + 1, sizeof *fs);
    double sum_s = 0, busy_gb = 0, other_usd = 0;
    for (int k = 0; k < p->n; k++) {
        const pl_sl_slice *s = &p->slices[k];
        fs[k].mem_gb = s->mem_mb * PL_PLATFORM_MB_BYTES / PL_PLATFORM_GB_S_BYTES;
        fs[k].time_s = s->time_s, fs[k].offset_s = sum_s;
        sum_s += s->time_s, busy_gb += fs[k].mem_gb * s->time_s;
        other_usd += s->usd - s->gb_s * pf->usd_per_gb_s; /* requests, the store */
    }
    uint64_t seed = o->seed ? o->seed : 1;
    for (double t = o->poisson ? next_arrival(o, 0, &seed) : 0; t < o->duration_s && !ws.too_many;
         t = next_arrival(o, t, &seed)) {
        r->requests++;
        for (int k = 0; k < p->n; k++)
            win_start(&ws, &fs[k], t + fs[k].offset_s);
    }
    for (int k = 0; k < p->n; k++) {
        while (fs[k].w < ws.n_windows)
            win_close(&ws, &fs[k]);
        free(fs[k].ends);
    }
    free(fs);
    r->p50_s = r->p95_s = r->p99_s = r->requests ? sum_s : 0;
    r->instances = ws.instances, r->busy_gb_s = busy_gb * (double)r->requests;
    r->mem_gb_avg = ws.held_gb_s / o->duration_s;
    double rps = r->requests / o->duration_s;
    r->mem_gb_per_100rps = rps > 0 ? r->mem_gb_avg / (rps / 100) : 0;
    r->usd_per_request =
        r->requests ? ws.held_gb_s * pf->usd_per_gb_s / (double)r->requests + other_usd : 0;
    if (ws.too_many)
        return pl_err_set(err, "a window needs more than %d instances of one function",
                          PL_SL_SERVE_INSTANCES_MAX);
    return 0;
}

void pl_sl_serve_defaults(pl_sl_serve_opts *o)
{
    *o = (pl_sl_serve_opts){.duration_s = 600,
                            .period_s = 600,
                            .rps_min = 250,
                            .rps_max = 1250,
                            .keep_alive_s = 60,
                            .poisson = true,
                            .seed = 1};
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
    if (p->window_s > 0 && o->duration_s > 0) return serve_windows(p, pf, o, r, err);
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
    r->usd_per_request = p->usd;
    free(count), free(sv.fns);
    if (sv.too_many)
        return pl_err_set(err,
                          "the replay needs more than %d instances alive at once (cold start %g "
                          "s, keep-alive %g s, up to %g requests a second); a shorter cold "
                          "start or keep-alive, or fewer requests a second",
                          PL_SL_SERVE_INSTANCES_MAX, pf->cold_start_s, o->keep_alive_s, o->rps_max);
    return 0;
}
