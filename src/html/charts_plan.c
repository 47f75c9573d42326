/* charts_plan.c: the charts of a plan (place, simulate), of compare and of deploy. */
#include "html_internal.h"

#include <math.h>
#include <string.h>

/* The index of name in rows[0..*n), added when absent (at most max). */
static int row_of(const char **rows, int *n, int max, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(rows[i], name)) return i;
    if (*n >= max) return max - 1;
    rows[*n] = name;
    return (*n)++;
}

/* The rows, series and spans of a schedule's Gantt chart. */
typedef struct gantt_parts {
    const char **rows, **series;
    int n_rows, max_rows, n_series, n;
    char **links; /* the links' row names, owned */
    hx_span *s;
} gantt_parts;

/* Each op a span on its device's row; the series is the op's tenant (several models share the
 * devices: placer multi) or 0. */
static void gantt_ops(gantt_parts *g, const pl_json *ops)
{
    for (size_t i = 0; i < pl_json_len(ops); i++) {
        pl_json o = pl_json_index(ops, i);
        hx_span *p = &g->s[g->n];
        *p = (hx_span){.start = hx_num(&o, "start_s"),
                       .end = hx_num(&o, "end_s"),
                       .label = hx_str(&o, "op", "?")};
        if (!p->start.ok || !p->end.ok) continue;
        const char *tenant = hx_str(&o, "tenant", NULL);
        p->series =
            row_of(g->series, &g->n_series, g->max_rows, tenant ? tenant : "op on a device");
        p->row = row_of(g->rows, &g->n_rows, g->max_rows, hx_str(&o, "device", "?"));
        g->n++;
    }
}

/* Each transfer a span on its link's row ("A → B"), in the series after the ops'. */
static void gantt_transfers(gantt_parts *g, const pl_json *xf)
{
    int series = g->n_series;
    for (size_t i = 0; i < pl_json_len(xf); i++) {
        pl_json o = pl_json_index(xf, i);
        hx_span *p = &g->s[g->n];
        *p = (hx_span){.start = hx_num(&o, "start_s"),
                       .end = hx_num(&o, "end_s"),
                       .label = hx_str(&o, "tensor", "?"),
                       .series = series};
        if (!p->start.ok || !p->end.ok) continue;
        const char *from = hx_str(&o, "from", "?"), *to = hx_str(&o, "to", "?");
        size_t len = strlen(from) + strlen(to) + 8;
        g->links[i] = pl_malloc(len);
        snprintf(g->links[i], len, "%s \u2192 %s", from, to);
        p->row = row_of(g->rows, &g->n_rows, g->max_rows, g->links[i]);
        g->n++;
    }
    if (g->n > 0 && g->s[g->n - 1].series == series)
        g->series[g->n_series++] = "transfer on a link";
}

/* The schedule's ops and transfers: one row per device (those of "devices" that run ops
 * first, in its order), then one per link that carried a transfer. */
static void gantt(FILE *f, const pl_json *root)
{
    pl_json sch = pl_json_at(root, "schedule"), ops = pl_json_at(&sch, "ops"),
            xf = pl_json_at(&sch, "transfers"), devs = pl_json_at(root, "devices");
    if (!json_is_array(ops.v)) {
        hx_missing(f, "Schedule per device and per link",
                   "the document has no \"schedule\" (written by placer place, simulate and "
                   "multi --json)");
        return;
    }
    size_t n_ops = pl_json_len(&ops), n_xf = pl_json_len(&xf), n_dev = pl_json_len(&devs);
    gantt_parts g = {.max_rows = (int)(n_dev + n_xf + n_ops) + 2};
    g.rows = pl_calloc(g.max_rows, sizeof *g.rows);
    g.series = pl_calloc(g.max_rows, sizeof *g.series);
    g.links = pl_calloc(n_xf + 1, sizeof *g.links);
    g.s = pl_calloc(n_ops + n_xf + 1, sizeof *g.s);
    for (size_t d = 0; d < n_dev; d++) {
        pl_json e = pl_json_index(&devs, d);
        hx_val busy = hx_num(&e, "ops");
        if (json_is_object(e.v) && (!busy.ok || busy.v > 0))
            row_of(g.rows, &g.n_rows, g.max_rows, hx_str(&e, "device", "?"));
    }
    gantt_ops(&g, &ops);
    gantt_transfers(&g, &xf);
    hx_frame fr = {.title = "Schedule per device and per link (first request)",
                   .x_label = "time",
                   .x_kind = HX_TIME,
                   .series = g.series,
                   .n_series = g.n_series};
    hx_gantt(f, &fr, g.rows, g.n_rows, g.s, g.n);
    for (size_t i = 0; i < n_xf; i++)
        free(g.links[i]);
    free(g.links), free(g.rows), free(g.series), free(g.s);
}

/* Peak memory per device against its capacity. */
static void memory(FILE *f, const pl_json *root)
{
    pl_json devs = pl_json_at(root, "devices");
    size_t n = pl_json_len(&devs);
    hx_bar *b = pl_calloc(2 * n + 1, sizeof *b);
    int k = 0;
    for (size_t d = 0; d < n; d++) {
        pl_json e = pl_json_index(&devs, d);
        const char *name = hx_str(&e, "device", "?");
        hx_val peak = hx_num(&e, "peak_memory_bytes"), cap = hx_num(&e, "memory_bytes");
        if (peak.ok) b[k++] = (hx_bar){name, 0, peak};
        if (cap.ok) b[k++] = (hx_bar){name, 1, cap};
    }
    static const char *const series[] = {"peak memory", "capacity"};
    hx_frame fr = {.title = "Peak memory per device",
                   .x_label = "memory",
                   .x_kind = HX_BYTES,
                   .series = series,
                   .n_series = 2};
    if (k)
        hx_bars(f, &fr, b, k, NULL, 0);
    else
        hx_missing(f, fr.title, "no device has \"peak_memory_bytes\"");
    free(b);
}

int hx_series_points(const pl_json *arr, const char *name, const char *xs, const char *ys,
                     hx_point **pt, const char ***series, int *n_series)
{
    size_t ns = pl_json_len(arr), total = 0;
    for (size_t k = 0; k < ns; k++) {
        pl_json e = pl_json_index(arr, k), x = pl_json_at(&e, xs);
        total += pl_json_len(&x);
    }
    *pt = pl_calloc(total + 1, sizeof **pt);
    *series = pl_calloc(ns + 1, sizeof **series);
    *n_series = (int)ns;
    int n = 0;
    for (size_t k = 0; k < ns; k++) {
        pl_json e = pl_json_index(arr, k), x = pl_json_at(&e, xs);
        (*series)[k] = hx_str(&e, name, "?");
        for (size_t i = 0; i < pl_json_len(&x); i++) {
            hx_point q = {hx_elem(&e, xs, i), hx_elem(&e, ys, i), (int)k, false, (*series)[k]};
            if (q.x.ok && q.y.ok) (*pt)[n++] = q;
        }
    }
    return n;
}

/* Memory per device over time: schedule.memory's steps, a line per device. */
static void memory_over_time(FILE *f, const pl_json *root)
{
    pl_json sch = pl_json_at(root, "schedule"), mem = pl_json_at(&sch, "memory");
    const char *title = "Memory per device over time";
    if (!json_is_array(mem.v)) {
        hx_missing(f, title,
                   "the schedule has no \"memory\" (place, simulate and multi --json write it)");
        return;
    }
    const char **series;
    hx_point *pt;
    int nd, n = hx_series_points(&mem, "device", "t_s", "bytes", &pt, &series, &nd);
    hx_frame fr = {.title = title,
                   .note = "Each device's peak is marked. Weights stay resident for the whole "
                           "run; activations and received copies come and go (docs/simulator.md).",
                   .x_label = "time",
                   .x_kind = HX_TIME,
                   .y_label = "memory",
                   .y_kind = HX_BYTES,
                   .series = series,
                   .n_series = nd};
    if (n)
        hx_steps(f, &fr, pt, n);
    else
        hx_missing(f, title, "the memory curve has no steps");
    free(pt), free(series);
}

void hx_schedule_charts(FILE *f, const pl_json *root)
{
    gantt(f, root);
    memory_over_time(f, root);
}

void hx_plan_charts(FILE *f, const pl_json *root)
{
    hx_schedule_charts(f, root);
    memory(f, root);
}

void hx_compare_charts(FILE *f, const pl_json *root)
{
    pl_json al = pl_json_at(root, "algorithms");
    size_t n = pl_json_len(&al);
    hx_bar *b = pl_calloc(n + 1, sizeof *b);
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        pl_json a = pl_json_index(&al, i);
        hx_val m = hx_num(&a, "makespan_s");
        pl_json fits = pl_json_at(&a, "fits");
        if (m.ok) b[k++] = (hx_bar){hx_str(&a, "algorithm", "?"), json_is_false(fits.v), m};
    }
    hx_ref lb = {"lower bound", hx_num(root, "lower_bound_s")};
    static const char *const series[] = {"fits in memory", "does not fit"};
    hx_frame fr = {.title = "Makespan per algorithm, against the lower bound",
                   .x_label = "makespan",
                   .x_kind = HX_TIME,
                   .series = series,
                   .n_series = 2};
    if (k)
        hx_bars(f, &fr, b, k, &lb, lb.val.ok);
    else
        hx_missing(f, fr.title, "no algorithm has a \"makespan_s\"");
    free(b);
}

/* ---- deploy ---- */

enum { MET, MISSED, FAILED };

static int trial_series(const pl_json *t)
{
    pl_json runs = pl_json_at(t, "runs"), meets = pl_json_at(t, "meets_slo");
    return json_is_false(runs.v) ? FAILED : json_is_true(meets.v) ? MET : MISSED;
}

void hx_deploy_charts(FILE *f, const pl_json *root)
{
    pl_json tr = pl_json_at(root, "trials");
    size_t n = pl_json_len(&tr);
    const char *chosen = hx_str(root, "chosen", "");
    hx_point *by_order = pl_calloc(n + 1, sizeof *by_order),
             *by_cost = pl_calloc(n + 1, sizeof *by_cost);
    int k = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        pl_json t = pl_json_index(&tr, i);
        const char *name = hx_str(&t, "configuration", "?");
        hx_val usd = hx_num(&t, "usd_per_request"), lat = hx_num(&t, "latency_s");
        bool marked = !strcmp(name, chosen);
        int s = trial_series(&t);
        if (usd.ok) by_order[k++] = (hx_point){hx_plain((double)i + 1), usd, s, marked, name};
        if (usd.ok && lat.ok) by_cost[m++] = (hx_point){usd, lat, s, marked, name};
    }
    static const char *const series[] = {"meets the SLO", "misses the SLO", "did not run"};
    char note[600];
    snprintf(note, sizeof note, "Chosen (ringed): %s. The search stopped: %s.",
             *chosen ? chosen : "none", hx_str(root, "stop_reason", "(no reason given)"));
    hx_frame fr = {.title = "The search: cost per request of each trial, in order",
                   .note = note,
                   .x_label = "trial",
                   .x_kind = HX_COUNT,
                   .y_label = "cost per request",
                   .y_kind = HX_USD,
                   .series = series,
                   .n_series = 3};
    if (k)
        hx_points(f, &fr, by_order, k, NULL, 0, NULL, 0);
    else
        hx_missing(f, fr.title, "no trial has \"usd_per_request\"");
    hx_ref slo = {"SLO", hx_num(root, "slo_s")};
    hx_frame fc = {.title = "Every configuration tried: latency against cost, with the SLO",
                   .x_label = "cost per request",
                   .x_kind = HX_USD,
                   .y_label = "latency",
                   .y_kind = HX_TIME,
                   .series = series,
                   .n_series = 3};
    if (m)
        hx_points(f, &fc, by_cost, m, NULL, 0, &slo, slo.val.ok);
    else
        hx_missing(f, fc.title, "no trial has both \"usd_per_request\" and \"latency_s\"");
    free(by_order), free(by_cost);
    if (pl_json_has(root, "schedule")) /* the chosen configuration's plan */
        hx_plan_charts(f, root);
}
