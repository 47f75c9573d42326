/* charts_more.c: the charts of serverless, multi, train, run, optimize and calibrate. */
#include "html_internal.h"

#include <math.h>
#include <string.h>

/* Bars of predicted against measured, two per row, and the relative error in the note. */
typedef struct pm_row {
    const char *label;
    hx_val pred, meas;
} pm_row;

/* The error (measured - predicted) / predicted of each row that has both, in words: each
 * row's when there are a few, else the median and the largest in size (a run of 75 stages). */
static void error_note(const pm_row *r, int n, char *note, size_t size)
{
    double *sizes = pl_calloc(n + 1, sizeof *sizes), largest = 0;
    int k = 0, at = -1;
    size_t len = snprintf(note, size, "Error (measured \u2212 predicted) / predicted:");
    for (int i = 0; i < n; i++) {
        if (!r[i].pred.ok || !r[i].meas.ok || !(r[i].pred.v > 0)) continue;
        double err = (r[i].meas.v - r[i].pred.v) / r[i].pred.v;
        if (at < 0 || fabs(err) > fabs(largest)) largest = err, at = i;
        if (n <= 8 && len < size)
            len += snprintf(note + len, size - len, "%s %s %+.1f%%", k ? "," : "", r[i].label,
                            100 * err);
        sizes[k++] = fabs(err);
    }
    if (n > 8 && k && len < size)
        snprintf(note + len, size - len,
                 " %.1f%% in size at the median of %d rows, %+.1f%% at most (%s)",
                 100 * pl_median(sizes, k), k, 100 * largest, r[at].label);
    free(sizes);
}

static void predicted_measured(FILE *f, const char *title, const pm_row *r, int n)
{
    hx_bar *b = pl_calloc(2 * n + 1, sizeof *b);
    char note[1024];
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (r[i].pred.ok) b[k++] = (hx_bar){r[i].label, 0, r[i].pred};
        if (r[i].meas.ok) b[k++] = (hx_bar){r[i].label, 1, r[i].meas};
    }
    error_note(r, n, note, sizeof note);
    static const char *const series[] = {"predicted", "measured"};
    hx_frame fr = {.title = title,
                   .note = note,
                   .x_label = "time",
                   .x_kind = HX_TIME,
                   .series = series,
                   .n_series = 2};
    if (k)
        hx_bars(f, &fr, b, k, NULL, 0);
    else
        hx_missing(f, title, "no predicted or measured times");
    free(b);
}

/* ---- serverless ---- */

static void sl_front(FILE *f, const pl_json *root)
{
    pl_json front = pl_json_at(root, "front"), plans = pl_json_at(&front, "plans"),
            al = pl_json_at(root, "algorithms");
    size_t np = pl_json_len(&plans), na = pl_json_len(&al);
    hx_point *pt = pl_calloc(np + na + 1, sizeof *pt);
    const char **series = pl_calloc(na + 2, sizeof *series);
    hx_val answer = hx_num(&front, "answer");
    int n = 0;
    series[0] = "the front (cost against latency)";
    for (size_t i = 0; i < np; i++) {
        pl_json p = pl_json_index(&plans, i);
        hx_point q = {hx_num(&p, "latency_s"), hx_num(&p, "usd_per_request"), 0,
                      answer.ok && answer.v == (double)i, "a plan of the front"};
        if (q.x.ok && q.y.ok) pt[n++] = q;
    }
    for (size_t i = 0; i < na; i++) {
        pl_json a = pl_json_index(&al, i);
        series[i + 1] = hx_str(&a, "algo", "?");
        hx_point q = {hx_num(&a, "latency_s"), hx_num(&a, "usd_per_request"), (int)i + 1, false,
                      series[i + 1]};
        if (q.x.ok && q.y.ok) pt[n++] = q;
    }
    int line = 0;
    hx_frame fr = {.title = "Cost against latency: the front, and each algorithm's plan",
                   .note = "The answer is ringed; the front's plans are joined in order.",
                   .x_label = "latency",
                   .x_kind = HX_TIME,
                   .y_label = "cost per request",
                   .y_kind = HX_USD,
                   .series = series,
                   .n_series = (int)na + 1};
    if (n)
        hx_points(f, &fr, pt, n, &line, 1, NULL, 0);
    else
        hx_missing(f, fr.title, "no plan has \"latency_s\" and \"usd_per_request\"");
    free(pt), free(series);
}

/* The answer's slices one after another: memory over time. */
static void sl_slices(FILE *f, const pl_json *root)
{
    pl_json ans = pl_json_at(root, "answer"), sl = pl_json_at(&ans, "slices");
    size_t n = pl_json_len(&sl);
    hx_span *s = pl_calloc(n + 1, sizeof *s);
    hx_val *h = pl_calloc(n + 1, sizeof *h);
    char(*names)[32] = pl_calloc(n + 1, sizeof *names);
    double t = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        pl_json e = pl_json_index(&sl, i);
        hx_val time = hx_num(&e, "time_s"), mem = hx_num(&e, "memory_mb");
        if (!time.ok || !mem.ok) continue;
        snprintf(names[k], sizeof names[k], "slice %zu", i);
        s[k] = (hx_span){0, k % 10, hx_plain(t), hx_plain(t + time.v), names[k]};
        h[k++] = mem;
        t += time.v;
    }
    const char *series[] = {"one colour per slice"};
    hx_frame fr = {.title = "The answer's slices: memory over time",
                   .note = "Each slice's function memory for its predicted time, slices in order.",
                   .x_label = "time",
                   .x_kind = HX_TIME,
                   .y_label = "memory (MB)",
                   .y_kind = HX_COUNT,
                   .series = series,
                   .n_series = 1};
    if (k)
        hx_columns(f, &fr, s, h, k);
    else
        hx_missing(f, fr.title, "the answer has no slices with \"time_s\" and \"memory_mb\"");
    free(s), free(h), free(names);
}

static void sl_run(FILE *f, const pl_json *root)
{
    pl_json run = pl_json_at(root, "run"), fns = pl_json_at(&run, "functions");
    if (!json_is_object(run.v)) return; /* not run for real: nothing measured */
    size_t n = pl_json_len(&fns);
    pm_row *r = pl_calloc(n + 2, sizeof *r);
    char(*names)[32] = pl_calloc(n + 1, sizeof *names);
    for (size_t i = 0; i < n; i++) {
        pl_json e = pl_json_index(&fns, i);
        snprintf(names[i], sizeof names[i], "function %zu", i);
        r[i] = (pm_row){names[i], hx_num(&e, "predicted_s"), hx_num(&e, "billed_s")};
    }
    r[n] = (pm_row){"end to end", hx_num(&run, "predicted_latency_s"),
                    hx_num(&run, "latency_median_s")};
    predicted_measured(f, "Run for real: predicted against measured (billed) time", r, (int)n + 1);
    free(r), free(names);
}

void hx_serverless_charts(FILE *f, const pl_json *root)
{
    sl_front(f, root);
    sl_slices(f, root);
    sl_run(f, root);
}

/* ---- multi ---- */

void hx_multi_charts(FILE *f, const pl_json *root)
{
    pl_json models = pl_json_at(root, "models"), al = pl_json_at(root, "algorithms");
    size_t nm = pl_json_len(&models), na = pl_json_len(&al);
    const char **series = pl_calloc(nm + 1, sizeof *series);
    for (size_t m = 0; m < nm; m++) {
        pl_json e = pl_json_index(&models, m);
        series[m] = hx_str(&e, "name", "?");
    }
    hx_bar *b = pl_calloc(na * (nm + 1) + 1, sizeof *b);
    char(*labels)[128] = pl_calloc(na * (nm + 1) + 1, sizeof *labels);
    int k = 0;
    for (size_t i = 0; i < na; i++) {
        pl_json a = pl_json_index(&al, i), ms = pl_json_at(&a, "models");
        for (size_t m = 0; m < pl_json_len(&ms); m++) {
            pl_json e = pl_json_index(&ms, m);
            hx_val c = hx_num(&e, "completion_s");
            if (!c.ok) continue;
            snprintf(labels[k], sizeof labels[k], "%s \u00b7 %s", hx_str(&a, "algo", "?"),
                     hx_str(&e, "name", "?"));
            b[k] = (hx_bar){labels[k], (int)(m < nm ? m : 0), c};
            k++;
        }
    }
    hx_frame fr = {.title = "Completion time of each model, per algorithm",
                   .x_label = "completion",
                   .x_kind = HX_TIME,
                   .series = series,
                   .n_series = (int)nm};
    if (k)
        hx_bars(f, &fr, b, k, NULL, 0);
    else
        hx_missing(f, fr.title, "no algorithm gives its models' \"completion_s\"");
    hx_schedule_charts(f, root); /* the answer's, on the shared devices */
    pl_json meas = pl_json_at(root, "measured"), ans = pl_json_at(root, "answer");
    if (json_is_object(meas.v)) {
        pl_json per = pl_json_at(&meas, "completion_s");
        hx_val idx = hx_num(&ans, "index");
        pl_json chosen = pl_json_index(&al, idx.ok ? (size_t)idx.v : 0),
                cm = pl_json_at(&chosen, "models");
        pm_row *r = pl_calloc(nm + 2, sizeof *r);
        int n = 0;
        for (size_t m = 0; m < pl_json_len(&cm); m++) {
            pl_json e = pl_json_index(&cm, m);
            const char *name = hx_str(&e, "name", "?");
            r[n++] = (pm_row){name, hx_num(&e, "completion_s"), hx_num(&per, name)};
        }
        r[n++] = (pm_row){"TOCT", hx_num(&chosen, "toct_s"), hx_num(&meas, "toct_s")};
        predicted_measured(f, "Run for real: each model's completion, predicted against measured",
                           r, n);
        free(r);
    }
    free(series), free(b), free(labels);
}

/* ---- train ---- */

/* Each MCTS tree's best so far against its iterations, with DP-NCCL's iteration time. */
static void mcts_history(FILE *f, const pl_json *root, const hx_ref *dp)
{
    pl_json h = pl_json_at(root, "mcts_history");
    const char *title = "MCTS's best so far against iteration";
    if (!json_is_array(h.v)) {
        hx_missing(f, title,
                   "the document has no \"mcts_history\" (placer train --json writes it)");
        return;
    }
    const char **series;
    hx_point *pt;
    int nt, n = hx_series_points(&h, "tree", "iteration", "best_s", &pt, &series, &nt);
    int *lines = pl_calloc(nt + 1, sizeof *lines);
    for (int t = 0; t < nt; t++)
        lines[t] = t;
    hx_frame fr = {.title = title,
                   .note = "One line per tree (with a GNN prior, a tree with uniform priors grows "
                           "first, from the same seed); the dashed line is DP (NCCL).",
                   .x_label = "MCTS iteration",
                   .x_kind = HX_COUNT,
                   .y_label = "best iteration time",
                   .y_kind = HX_TIME,
                   .series = series,
                   .n_series = nt};
    if (n)
        hx_points(f, &fr, pt, n, lines, nt, dp, dp->val.ok);
    else
        hx_missing(f, title, "no tree found a strategy that fits");
    free(pt), free(series), free(lines);
}

/* The strategy per op group: which devices each group runs on (a cell per group and device). */
static void strategy_groups(FILE *f, const pl_json *root)
{
    pl_json st = pl_json_at(root, "strategy");
    size_t ng = pl_json_len(&st), cells = 0;
    for (size_t g = 0; g < ng; g++) {
        pl_json e = pl_json_index(&st, g), d = pl_json_at(&e, "devices");
        cells += pl_json_len(&d);
    }
    const char *title = "The strategy per op group: the devices each runs on";
    if (!cells) {
        hx_missing(f, title, "the answer has no \"strategy\" (a placement baseline was chosen)");
        return;
    }
    const char **rows = pl_calloc(cells + 1, sizeof *rows);
    hx_span *s = pl_calloc(cells + 1, sizeof *s);
    char(*names)[32] = pl_calloc(ng + 1, sizeof *names);
    int n_rows = 0, n = 0;
    for (size_t g = 0; g < ng; g++) {
        pl_json e = pl_json_index(&st, g), d = pl_json_at(&e, "devices");
        snprintf(names[g], sizeof names[g], "op group %zu", g);
        for (size_t k = 0; k < pl_json_len(&d); k++) {
            pl_json v = pl_json_index(&d, k);
            const char *dev = json_is_string(v.v) ? json_string_value(v.v) : "?";
            int r = 0;
            while (r < n_rows && strcmp(rows[r], dev))
                r++;
            if (r == n_rows) rows[n_rows++] = dev;
            s[n++] = (hx_span){r, 0, hx_plain((double)g), hx_plain((double)g + 1), names[g]};
        }
    }
    static const char *const series[] = {"the op group runs (replicated) there"};
    hx_frame fr = {
        .title = title, .x_label = "op group", .x_kind = HX_COUNT, .series = series, .n_series = 1};
    hx_gantt(f, &fr, rows, n_rows, s, n);
    free(rows), free(s), free(names);
}

void hx_train_charts(FILE *f, const pl_json *root)
{
    pl_json bl = pl_json_at(root, "baselines");
    size_t n = pl_json_len(&bl);
    hx_bar *b = pl_calloc(n + 1, sizeof *b);
    const char *rec = hx_str(root, "recommended", "");
    int k = 0;
    pl_json_iter it = {0};
    pl_json e;
    while (json_is_object(bl.v) && pl_json_next(&bl, &it, &e)) {
        hx_val v = hx_num(&bl, e.key);
        if (v.ok) b[k++] = (hx_bar){e.key, !strcmp(e.key, rec), v};
    }
    hx_ref dp = {"DP (NCCL)", hx_num(&bl, "dp")};
    static const char *const series[] = {"a strategy", "the one recommended"};
    hx_frame fr = {.title = "Iteration time per strategy and baseline",
                   .x_label = "iteration time",
                   .x_kind = HX_TIME,
                   .series = series,
                   .n_series = 2};
    if (k)
        hx_bars(f, &fr, b, k, &dp, dp.val.ok);
    else
        hx_missing(f, fr.title, "the document has no \"baselines\"");
    free(b);
    mcts_history(f, root, &dp);
    strategy_groups(f, root);
}

/* ---- run ---- */

void hx_run_charts(FILE *f, const pl_json *root)
{
    pl_json st = pl_json_at(root, "stages");
    size_t n = pl_json_len(&st);
    pm_row *r = pl_calloc(n + 2, sizeof *r);
    hx_span *s = pl_calloc(n + 1, sizeof *s);
    const char **rows = pl_calloc(n + 1, sizeof *rows);
    int n_rows = 0, k = 0;
    for (size_t i = 0; i < n; i++) {
        pl_json e = pl_json_index(&st, i);
        const char *name = hx_str(&e, "name", "?"), *dev = hx_str(&e, "device", "?");
        r[i] = (pm_row){name, hx_num(&e, "predicted_s"), hx_num(&e, "own_s")};
        int row = 0;
        while (row < n_rows && strcmp(rows[row], dev))
            row++;
        if (row == n_rows) rows[n_rows++] = dev;
        s[k] = (hx_span){row, (int)i % 10, hx_num(&e, "start_s"), hx_num(&e, "end_s"), name};
        if (s[k].start.ok && s[k].end.ok) k++;
    }
    pm_row whole = {"end to end", hx_num(root, "predicted_makespan_s"),
                    hx_num(root, "latency_median_s")};
    predicted_measured(f, "Predicted against measured, end to end (the median latency)", &whole, 1);
    predicted_measured(f, "Predicted against measured, per stage (its own time)", r, (int)n);
    static const char *const series[] = {"a stage (one colour each)"};
    hx_frame fr = {.title = "The stages per device as measured (each one's median start and end)",
                   .x_label = "time",
                   .x_kind = HX_TIME,
                   .series = series,
                   .n_series = 1};
    if (k)
        hx_gantt(f, &fr, rows, n_rows, s, k);
    else
        hx_missing(f, fr.title, "no stage has \"start_s\" and \"end_s\"");
    free(r), free(s), free(rows);
}

/* ---- optimize ---- */

void hx_optimize_charts(FILE *f, const pl_json *root)
{
    static const char *const series[] = {"before", "after"};
    hx_bar ops[] = {{"ops", 0, hx_num(root, "ops_before")}, {"ops", 1, hx_num(root, "ops_after")}};
    hx_bar t[] = {{"predicted time", 0, hx_num(root, "predicted_before_s")},
                  {"predicted time", 1, hx_num(root, "predicted_after_s")}};
    hx_frame fo = {.title = "Ops before and after the rewrites",
                   .x_label = "ops",
                   .x_kind = HX_COUNT,
                   .series = series,
                   .n_series = 2};
    if (ops[0].val.ok && ops[1].val.ok)
        hx_bars(f, &fo, ops, 2, NULL, 0);
    else
        hx_missing(f, fo.title, "\"ops_before\" or \"ops_after\" is missing");
    hx_frame ft = fo;
    ft.title = "Predicted time before and after the rewrites";
    ft.x_label = "predicted time";
    ft.x_kind = HX_TIME;
    if (t[0].val.ok && t[1].val.ok)
        hx_bars(f, &ft, t, 2, NULL, 0);
    else
        hx_missing(f, ft.title, "\"predicted_before_s\" or \"predicted_after_s\" is missing");
    pl_json rw = pl_json_at(root, "rewrites");
    size_t n = pl_json_len(&rw);
    hx_bar *b = pl_calloc(n + 1, sizeof *b);
    int k = 0;
    for (size_t i = 0; i < n; i++) { /* rewrites applied, counted per rule */
        pl_json e = pl_json_index(&rw, i);
        const char *rule = hx_str(&e, "rule", "?");
        int j = 0;
        while (j < k && strcmp(b[j].label, rule))
            j++;
        if (j == k) b[k++] = (hx_bar){rule, 0, hx_plain(0)};
        b[j].val.v++;
    }
    static const char *const applied[] = {"rewrites applied"};
    hx_frame fr = {.title = "Rewrites applied, per rule",
                   .x_label = "sites rewritten",
                   .x_kind = HX_COUNT,
                   .series = applied,
                   .n_series = 1};
    if (k)
        hx_bars(f, &fr, b, k, NULL, 0);
    else
        hx_missing(f, fr.title, "no rewrite was applied");
    free(b);
}

/* ---- calibrate ---- */

void hx_calib_charts(FILE *f, const pl_json *root)
{
    pl_json eff = pl_json_at(root, "eff_compute");
    hx_bar b[16];
    int k = 0;
    pl_json_iter it = {0};
    pl_json e;
    while (json_is_object(eff.v) && k < 15 && pl_json_next(&eff, &it, &e)) {
        hx_val v = hx_num(&eff, e.key);
        if (v.ok) b[k++] = (hx_bar){e.key, 0, v};
    }
    hx_val mem = hx_num(root, "eff_memory");
    if (mem.ok) b[k++] = (hx_bar){"memory", 1, mem};
    static const char *const series[] = {"compute efficiency per op class",
                                         "memory-bandwidth efficiency"};
    hx_frame fr = {.title = "Fitted efficiencies (fraction of the device's peak)",
                   .x_label = "efficiency",
                   .x_kind = HX_RATIO,
                   .series = series,
                   .n_series = 2};
    if (k)
        hx_bars(f, &fr, b, k, NULL, 0);
    else
        hx_missing(f, fr.title, "no \"eff_compute\"");
    pl_json before = pl_json_at(root, "before"), after = pl_json_at(root, "after");
    hx_bar err[] = {{"median", 0, hx_num(&before, "median_rel_error")},
                    {"median", 1, hx_num(&after, "median_rel_error")},
                    {"worst", 0, hx_num(&before, "worst_rel_error")},
                    {"worst", 1, hx_num(&after, "worst_rel_error")}};
    static const char *const ba[] = {"before the fit", "after the fit"};
    hx_frame fe = {.title = "Relative error of the predicted op times, before and after the fit",
                   .x_label = "relative error",
                   .x_kind = HX_RATIO,
                   .series = ba,
                   .n_series = 2};
    if (err[0].val.ok && err[1].val.ok && err[2].val.ok && err[3].val.ok)
        hx_bars(f, &fe, err, 4, NULL, 0);
    else
        hx_missing(f, fe.title, "\"before\" or \"after\" is missing");
}

/* ---- inspect ---- */

/* The op histogram, as `placer inspect` prints it: FLOPs and count per op type, in the file's
 * order (inspect sorts by FLOPs). */
void hx_inspect_charts(FILE *f, const pl_json *root)
{
    pl_json types = pl_json_at(root, "op_types");
    size_t n = pl_json_len(&types);
    hx_bar *fl = pl_calloc(n + 1, sizeof *fl), *ct = pl_calloc(n + 1, sizeof *ct);
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        pl_json e = pl_json_index(&types, i);
        hx_val flops = hx_num(&e, "flops"), count = hx_num(&e, "count");
        if (!flops.ok || !count.ok) continue;
        const char *type = hx_str(&e, "type", "?");
        fl[k] = (hx_bar){type, 0, flops};
        ct[k++] = (hx_bar){type, 0, count};
    }
    static const char *const sf[] = {"FLOPs"}, *const sc[] = {"ops"};
    hx_frame ff = {.title = "FLOPs per op type",
                   .x_label = "FLOPs",
                   .x_kind = HX_COUNT,
                   .series = sf,
                   .n_series = 1};
    hx_frame fc = {.title = "Ops per op type",
                   .x_label = "ops",
                   .x_kind = HX_COUNT,
                   .series = sc,
                   .n_series = 1};
    if (k) {
        hx_bars(f, &ff, fl, k, NULL, 0);
        hx_bars(f, &fc, ct, k, NULL, 0);
    } else
        hx_missing(f, ff.title, "no \"op_types\" entry with its \"flops\" and \"count\"");
    free(fl), free(ct);
}

/* ---- profile ---- */

#define HX_PROFILE_TOP 25 /* the slowest ops drawn; the rest are summed in the note */

static int by_val_desc(const void *a, const void *b)
{
    double x = ((const hx_bar *)a)->val.v, y = ((const hx_bar *)b)->val.v;
    return (x < y) - (x > y);
}

/* The measured time of each op, the slowest HX_PROFILE_TOP of them (a profile of a large
 * model has thousands: the page would list them all and show none). */
void hx_profile_charts(FILE *f, const pl_json *root)
{
    pl_json times = pl_json_at(root, "times_s");
    size_t n = pl_json_len(&times);
    hx_bar *b = pl_calloc(n + 1, sizeof *b);
    int k = 0;
    double total = 0;
    pl_json_iter it = {0};
    pl_json e;
    while (json_is_object(times.v) && pl_json_next(&times, &it, &e)) {
        hx_val v = hx_num(&times, e.key);
        if (v.ok) b[k++] = (hx_bar){e.key, 0, v}, total += v.v;
    }
    pl_sort(b, (size_t)k, sizeof *b, by_val_desc);
    int shown = k < HX_PROFILE_TOP ? k : HX_PROFILE_TOP;
    double rest = 0;
    for (int i = shown; i < k; i++)
        rest += b[i].val.v;
    char note[160], t1[32], t2[32];
    snprintf(note, sizeof note, "%d ops measured, %s in all; %d more not drawn, %s together", k,
             hx_fmt(total, HX_TIME, t1, sizeof t1), k - shown,
             hx_fmt(rest, HX_TIME, t2, sizeof t2));
    static const char *const series[] = {"measured time per op"};
    hx_frame fr = {.title = "The slowest ops, as measured",
                   .note = note,
                   .x_label = "time per request",
                   .x_kind = HX_TIME,
                   .series = series,
                   .n_series = 1};
    if (shown)
        hx_bars(f, &fr, b, shown, NULL, 0);
    else
        hx_missing(f, fr.title, "no \"times_s\" entry");
    free(b);
}

/* ---- split ---- */

/* The stages `placer split` wrote (its manifest, placer-split/2): ops and weight bytes per
 * stage, coloured by device. */
void hx_split_charts(FILE *f, const pl_json *root)
{
    pl_json stages = pl_json_at(root, "stages");
    size_t n = pl_json_len(&stages);
    hx_bar *ops = pl_calloc(n + 1, sizeof *ops), *wb = pl_calloc(n + 1, sizeof *wb);
    const char **devs = pl_calloc(n + 1, sizeof *devs);
    int k = 0, n_devs = 0;
    for (size_t i = 0; i < n; i++) {
        pl_json e = pl_json_index(&stages, i);
        hx_val o = hx_num(&e, "ops"), w = hx_num(&e, "weight_bytes");
        if (!o.ok || !w.ok) continue;
        const char *dev = hx_str(&e, "device", "?");
        int d = 0;
        while (d < n_devs && strcmp(devs[d], dev))
            d++;
        if (d == n_devs) devs[n_devs++] = dev;
        const char *name = hx_str(&e, "name", "?");
        ops[k] = (hx_bar){name, d, o};
        wb[k++] = (hx_bar){name, d, w};
    }
    hx_frame fo = {.title = "Ops per stage, by device",
                   .x_label = "ops",
                   .x_kind = HX_COUNT,
                   .series = devs,
                   .n_series = n_devs};
    hx_frame fw = fo;
    fw.title = "Weights per stage, by device";
    fw.x_label = "weights held";
    fw.x_kind = HX_BYTES;
    if (k) {
        hx_bars(f, &fo, ops, k, NULL, 0);
        hx_bars(f, &fw, wb, k, NULL, 0);
    } else
        hx_missing(f, fo.title, "no \"stages\" entry with its \"ops\" and \"weight_bytes\"");
    free(ops), free(wb), free(devs);
}

/* ---- learn-prior ---- */

/* What trained a prior (learn-prior's FILE.json, placer-prior/1): the distillation's loss at
 * its first and last step. */
void hx_prior_charts(FILE *f, const pl_json *root)
{
    static const char *const series[] = {"first step", "last step"};
    hx_bar b[] = {{"loss", 0, hx_num(root, "first_loss")}, {"loss", 1, hx_num(root, "last_loss")}};
    hx_frame fr = {.title = "The distillation's loss (cross-entropy against MCTS's visits)",
                   .x_label = "loss",
                   .x_kind = HX_RATIO,
                   .series = series,
                   .n_series = 2};
    if (b[0].val.ok && b[1].val.ok && b[0].val.v >= 0 && b[1].val.v >= 0)
        hx_bars(f, &fr, b, 2, NULL, 0);
    else /* learn-prior writes -1 when no step ran */
        hx_missing(f, fr.title, "\"first_loss\" or \"last_loss\" is missing or -1 (no step ran)");
}
