/* html_internal.h: src/html's drawing kit (hx_, svg.c) and the charts of each format
 * (charts_*.c), shared by page.c.
 *
 * Every chart is one <figure>: a caption, a legend, and an SVG whose marks (bars, points,
 * spans, reference lines) each carry an SVG <title> with the numbers in words and the data
 * attributes the browser test reads back: data-p, the JSON path of the object the mark draws;
 * data-k0, data-k1, ..., the paths under it of the values it draws ("makespan_s", "t_s[3]",
 * "[\"resnet50.v1\"]"), and data-v0, data-v1, ..., those values, each the shortest text that
 * reads back as the same double. A mark drawn from a number that is in no field (a trial's
 * rank in the search) has no data-k for it. */
#ifndef PL_HTML_INTERNAL_H
#define PL_HTML_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "placer/html.h"

/* A number read from a document, and where: the object's path and, relative to it, the
 * value's ("makespan_s", "bytes[17]"). */
typedef struct hx_val {
    double v;
    bool ok; /* the value was there and a number */
    char p[160];
    char k[48]; /* "" for a value not read from the document */
} hx_val;

/* obj.field as a number (integers too); ok false when absent, null or not a number. */
hx_val hx_num(const pl_json *obj, const char *field);
/* obj.field[i], the same way. */
hx_val hx_elem(const pl_json *obj, const char *field, size_t i);
/* obj.field as a string, or dflt. */
const char *hx_str(const pl_json *obj, const char *field, const char *dflt);
/* A value that is not read from the document (a derived figure): no path, no field. */
hx_val hx_plain(double v);

typedef enum { HX_TIME, HX_USD, HX_BYTES, HX_COUNT, HX_RATIO } hx_kind;

/* What the drawing functions take: the chart's caption and note (a line under it: the stop
 * rule's reason, a missing field; may be NULL), its axis labels and kinds, and the names of
 * its series (colours in order), n_series of them. */
typedef struct hx_frame {
    const char *title, *note;
    const char *x_label, *y_label;
    hx_kind x_kind, y_kind;
    const char *const *series;
    int n_series;
} hx_frame;

/* A horizontal bar: a row label, its series, and its length (from 0). */
typedef struct hx_bar {
    const char *label;
    int series;
    hx_val val;
} hx_bar;

/* A reference line across the chart at value val of the value axis, named label. */
typedef struct hx_ref {
    const char *label;
    hx_val val;
} hx_ref;

/* A point: x, y, series; marked (the chosen one: a ring around it); label in its title. */
typedef struct hx_point {
    hx_val x, y;
    int series;
    bool marked;
    const char *label;
} hx_point;

/* The points of an array of series (arr: objects, each named by its field `name` and holding
 * the parallel arrays `xs` and `ys`: schedule.memory's t_s and bytes), the series numbered in
 * the array's order: how many points; *pt and *series (*n_series names) are the caller's to
 * free. */
int hx_series_points(const pl_json *arr, const char *name, const char *xs, const char *ys,
                     hx_point **pt, const char ***series, int *n_series);

/* A span of a Gantt chart: on row `row`, from start to end. */
typedef struct hx_span {
    int row, series;
    hx_val start, end;
    const char *label;
} hx_span;

/* Bars, one row each, lengths on the x axis (fr->x_*), with reference lines. */
void hx_bars(FILE *f, const hx_frame *fr, const hx_bar *b, int n, const hx_ref *ref, int n_ref);
/* Points on x and y axes; the points of a series listed in `lines` (n_lines of them) are
 * joined in order (a front, a best-so-far); reference lines are horizontal (y values). */
void hx_points(FILE *f, const hx_frame *fr, const hx_point *pt, int n, const int *lines,
               int n_lines, const hx_ref *ref, int n_ref);
/* Spans on rows (row names rows[0..n_rows)), time on the x axis. Above HX_GANTT_DETAIL spans,
 * a row's spans that are each under a pixel wide and under a pixel apart are drawn as one bar
 * (data-merged="N", a title that says how many and when): a 50,000-op plan's page stays
 * small and quick to render, and what it hides could not be seen anyway. */
#define HX_GANTT_DETAIL 5000
void hx_gantt(FILE *f, const hx_frame *fr, const char *const *rows, int n_rows, const hx_span *s,
              int n);
/* Step lines, one per series: the points pt[0..n) of a series in time order (x), each
 * holding its y until the next; the largest y of each series marked with its numbers. Past
 * two points per pixel a line keeps each pixel's largest y (its peak stays exact). */
void hx_steps(FILE *f, const hx_frame *fr, const hx_point *pt, int n);
/* Columns standing on the x axis from x to x + width (both in x units) with height h: the
 * serverless slices' memory over time. */
void hx_columns(FILE *f, const hx_frame *fr, const hx_span *s, const hx_val *h, int n);
/* A chart that cannot be drawn: its caption and why (a field the document lacks). */
void hx_missing(FILE *f, const char *title, const char *why);
/* Text escaped for HTML and SVG. */
void hx_esc(FILE *f, const char *s);
/* v in the kind's readable unit, into buf ("1.234 ms", "0.48 USD per 10^6"). */
const char *hx_fmt(double v, hx_kind kind, char *buf, size_t n);

/* One section per document: its charts (after page.c's heading and headline table). */
void hx_plan_charts(FILE *f, const pl_json *root); /* place, simulate */
/* A schedule's Gantt chart and memory curve (of place, simulate, multi). */
void hx_schedule_charts(FILE *f, const pl_json *root);
void hx_compare_charts(FILE *f, const pl_json *root); /* compare */
void hx_deploy_charts(FILE *f, const pl_json *root);
void hx_serverless_charts(FILE *f, const pl_json *root);
void hx_multi_charts(FILE *f, const pl_json *root);
void hx_train_charts(FILE *f, const pl_json *root);
void hx_run_charts(FILE *f, const pl_json *root);
void hx_optimize_charts(FILE *f, const pl_json *root);
void hx_calib_charts(FILE *f, const pl_json *root);
void hx_inspect_charts(FILE *f, const pl_json *root);
void hx_profile_charts(FILE *f, const pl_json *root);
void hx_split_charts(FILE *f, const pl_json *root);
void hx_prior_charts(FILE *f, const pl_json *root);

#endif
