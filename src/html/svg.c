/* svg.c: the drawing kit of the report page (html_internal.h): axes with units, legends,
 * bars, points, Gantt spans, each mark with its <title> and its data attributes.
 *
 * Drawn as inline SVG with a viewBox and width 100%, so that the page needs no script and
 * scales to the window and to paper alike; colours are attributes, not a style sheet's
 * classes, so that a chart copied out of the page keeps them. */
#include "html_internal.h"

#include <math.h>
#include <string.h>

enum { W = 760 };                     /* the viewBox width; the height follows the content */
static const double BAR_LEFT = 190;   /* room for a bar's row label */
static const double PLOT_LEFT = 78;   /* room for the y axis' numbers and label */
static const double PLOT_RIGHT = 740; /* the plot's right edge */
static const double TOP = 10, AXIS_H = 42;

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define N_COLOURS ((int)(sizeof palette / sizeof *palette))

static const char *colour(int series)
{
    return palette[(series < 0 ? 0 : series) % N_COLOURS];
}

hx_val hx_plain(double v)
{
    return (hx_val){.v = v, .ok = true};
}

/* A field's path under its object: the name itself, or ["name"] (with \" and \\ escaped) when
 * it holds anything but letters, digits, '_' and '-' (a model's file name in multi's measured
 * completions may have dots or spaces). */
static void key_path(const char *field, char *out, size_t n)
{
    size_t plain =
        strspn(field, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
    if (!field[plain]) {
        snprintf(out, n, "%s", field);
        return;
    }
    size_t len = snprintf(out, n, "[\"");
    for (const char *c = field; *c && len + 4 < n; c++) {
        if (*c == '"' || *c == '\\') out[len++] = '\\';
        out[len++] = *c;
    }
    snprintf(out + len, n - len, "\"]");
}

hx_val hx_num(const pl_json *obj, const char *field)
{
    hx_val r = {0};
    pl_json c = pl_json_at(obj, field);
    if (!c.v || !json_is_number(c.v)) return r;
    r.v = json_number_value(c.v);
    r.ok = isfinite(r.v);
    pl_json_path(obj, r.p, sizeof r.p);
    key_path(field, r.k, sizeof r.k);
    return r;
}

hx_val hx_elem(const pl_json *obj, const char *field, size_t i)
{
    hx_val r = {0};
    pl_json a = pl_json_at(obj, field), c = pl_json_index(&a, i);
    if (!c.v || !json_is_number(c.v)) return r;
    r.v = json_number_value(c.v);
    r.ok = isfinite(r.v);
    pl_json_path(obj, r.p, sizeof r.p);
    snprintf(r.k, sizeof r.k, "%s[%zu]", field, i);
    return r;
}

const char *hx_str(const pl_json *obj, const char *field, const char *dflt)
{
    pl_json c = pl_json_at(obj, field);
    return c.v && json_is_string(c.v) ? json_string_value(c.v) : dflt;
}

void hx_esc(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
}

/* The shortest decimal text that strtod reads back as v: the data attributes are compared
 * with the JSON's doubles for equality, and shorter text keeps a 50,000-op page small. */
static void put_exact(FILE *f, double v)
{
    char b[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v) break;
    }
    fputs(b, f);
}

/* data-p, and data-k0/data-v0, data-k1/data-v1, ... of the values read from the document
 * (those with a path), numbered in the order given. */
static void data_attrs(FILE *f, const hx_val *const *v, int n)
{
    const char *path = NULL;
    for (int i = 0; i < n && !path; i++)
        if (v[i]->k[0]) path = v[i]->p;
    if (!path) return;
    fputs(" data-p=\"", f);
    hx_esc(f, path);
    fputc('"', f);
    for (int i = 0, j = 0; i < n; i++)
        if (v[i]->k[0]) {
            fprintf(f, " data-k%d=\"", j);
            hx_esc(f, v[i]->k);
            fprintf(f, "\" data-v%d=\"", j++);
            put_exact(f, v[i]->v);
            fputc('"', f);
        }
}

/* ---- units ---- */

typedef struct unit {
    double scale;
    const char *name;
} unit;

static unit unit_of(double mag, hx_kind kind)
{
    switch (kind) {
    case HX_TIME:
        return mag >= 1      ? (unit){1, "s"}
               : mag >= 1e-3 ? (unit){1e3, "ms"}
               : mag >= 1e-6 ? (unit){1e6, "\u00b5s"}
                             : (unit){1e9, "ns"};
    case HX_USD: /* costs per request are fractions of a cent */
        return mag >= 0.01 ? (unit){1, "USD"} : (unit){1e6, "USD per million"};
    case HX_BYTES:
        return mag >= 1e9   ? (unit){1e-9, "GB"}
               : mag >= 1e6 ? (unit){1e-6, "MB"}
                            : (unit){1e-3, "kB"};
    default:
        return (unit){1, ""};
    }
}

const char *hx_fmt(double v, hx_kind kind, char *buf, size_t n)
{
    unit u = unit_of(fabs(v), kind);
    snprintf(buf, n, "%.4g%s%s", v * u.scale, *u.name ? " " : "", u.name);
    return buf;
}

/* ---- axes ---- */

typedef struct axis {
    double lo, hi, step; /* in base units */
    unit u;
    double a, b; /* where lo and hi are drawn */
} axis;

static double nice_step(double range)
{
    double e = pow(10, floor(log10(range / 5))), m = range / 5 / e;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * e;
}

/* An axis over [lo, hi] drawn from a to b, its ends on whole steps. */
static axis axis_fit(double lo, double hi, hx_kind kind, double a, double b)
{
    if (!(hi > lo)) hi = lo + (lo != 0 ? fabs(lo) * 0.1 : 1);
    axis x = {.step = nice_step(hi - lo), .a = a, .b = b};
    x.lo = floor(lo / x.step) * x.step;
    x.hi = ceil(hi / x.step) * x.step;
    if (x.hi <= x.lo) x.hi = x.lo + x.step;
    x.u = unit_of(fmax(fabs(x.lo), fabs(x.hi)), kind);
    return x;
}

static double at(const axis *x, double v)
{
    return x->a + (v - x->lo) / (x->hi - x->lo) * (x->b - x->a);
}

static void axis_label(char *buf, size_t n, const char *label, const axis *x)
{
    snprintf(buf, n, "%s%s%s%s", label, *x->u.name ? " (" : "", x->u.name, *x->u.name ? ")" : "");
}

/* Ticks, grid lines and the label of a horizontal axis along the bottom y of a plot whose top
 * is y_top. */
static void x_axis(FILE *f, const axis *x, double y_top, double y, const char *label)
{
    fprintf(f, "<g class=\"axis\" font-size=\"11\" text-anchor=\"middle\">\n");
    for (double t = x->lo; t <= x->hi + x->step / 2; t += x->step) {
        double px = at(x, t);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">%.4g</text>\n",
                px, y_top, px, y, px, y + 14, (fabs(t) < x->step / 1e6 ? 0 : t) * x->u.scale);
    }
    char l[256];
    axis_label(l, sizeof l, label, x);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">",
            x->a, y, x->b, y, (x->a + x->b) / 2, y + 32);
    hx_esc(f, l);
    fputs("</text></g>\n", f);
}

/* The same for a vertical axis at x_left, the plot reaching x_right. */
static void y_axis(FILE *f, const axis *y, double x_left, double x_right, const char *label)
{
    fprintf(f, "<g class=\"axis\" font-size=\"11\">\n");
    for (double t = y->lo; t <= y->hi + y->step / 2; t += y->step) {
        double py = at(y, t);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
                x_left, py, x_right, py, x_left - 4, py + 4,
                (fabs(t) < y->step / 1e6 ? 0 : t) * y->u.scale);
    }
    char l[256];
    axis_label(l, sizeof l, label, y);
    double mid = (y->a + y->b) / 2;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
            "<text x=\"14\" y=\"%.1f\" font-weight=\"bold\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 14 %.1f)\">",
            x_left, y->a, x_left, y->b, mid, mid);
    hx_esc(f, l);
    fputs("</text></g>\n", f);
}

/* ---- frame ---- */

static void begin(FILE *f, const hx_frame *fr, const char *kind, double height)
{
    fprintf(f, "<figure class=\"chart\" data-chart=\"%s\"><figcaption>", kind);
    hx_esc(f, fr->title);
    fputs("</figcaption>\n", f);
    if (fr->note) {
        fputs("<p class=\"note\">", f);
        hx_esc(f, fr->note);
        fputs("</p>\n", f);
    }
    fputs("<ul class=\"legend\">", f);
    for (int s = 0; s < fr->n_series; s++) {
        fprintf(f, "<li><span class=\"swatch\" style=\"background:%s\"></span>", colour(s));
        hx_esc(f, fr->series[s]);
        fputs("</li>", f);
    }
    fprintf(f,
            "</ul>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %.0f\" "
            "width=\"100%%\" role=\"img\" font-family=\"sans-serif\" aria-label=\"",
            W, height);
    hx_esc(f, fr->title);
    fputs("\">\n", f);
}

static void end(FILE *f)
{
    fputs("</svg></figure>\n", f);
}

void hx_missing(FILE *f, const char *title, const char *why)
{
    fputs("<figure class=\"chart missing\"><figcaption>", f);
    hx_esc(f, title);
    fputs("</figcaption><p class=\"note\">Not drawn: ", f);
    hx_esc(f, why);
    fputs("</p></figure>\n", f);
}

/* "label: 1.2 ms" as a mark's <title>. */
static void title(FILE *f, const char *label, const char *what)
{
    fputs("<title>", f);
    hx_esc(f, label);
    if (label && *label && what && *what) fputs(": ", f);
    hx_esc(f, what);
    fputs("</title>", f);
}

/* A reference line across the plot (vertical when `vertical`), at position pos. */
static void ref_line(FILE *f, const hx_ref *r, bool vertical, double pos, double lo, double hi,
                     hx_kind kind)
{
    char v[64];
    const hx_val *vals[] = {&r->val};
    fprintf(f, "<g class=\"ref\"");
    data_attrs(f, vals, 1);
    fputs(">", f);
    if (vertical)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                "stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/><text x=\"%.1f\" y=\"%.1f\" "
                "font-size=\"11\" text-anchor=\"middle\">",
                pos, lo, pos, hi, pos, lo - 4);
    else
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222\" "
                "stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/><text x=\"%.1f\" y=\"%.1f\" "
                "font-size=\"11\" text-anchor=\"end\">",
                lo, pos, hi, pos, hi - 2, pos - 3 < TOP + 10 ? pos + 12 : pos - 3);
    hx_esc(f, r->label);
    fputs("</text>", f);
    title(f, r->label, hx_fmt(r->val.v, kind, v, sizeof v));
    fputs("</g>\n", f);
}

/* ---- bars ---- */

void hx_bars(FILE *f, const hx_frame *fr, const hx_bar *b, int n, const hx_ref *ref, int n_ref)
{
    enum { ROW = 20 };
    double hi = 0;
    for (int i = 0; i < n; i++)
        hi = fmax(hi, b[i].val.v);
    for (int i = 0; i < n_ref; i++)
        hi = fmax(hi, ref[i].val.v);
    /* room above for the reference lines' names, at the right for the bars' figures */
    double top = TOP + (n_ref ? 14 : 0), bottom = top + ROW * n;
    axis x = axis_fit(0, hi, fr->x_kind, BAR_LEFT, PLOT_RIGHT - 50);
    begin(f, fr, "bars", bottom + AXIS_H);
    x_axis(f, &x, top, bottom, fr->x_label);
    for (int i = 0; i < n; i++) {
        double y = top + ROW * i, w = at(&x, b[i].val.v) - BAR_LEFT;
        char v[64];
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">",
                BAR_LEFT - 6, y + 14);
        hx_esc(f, b[i].label);
        fprintf(f,
                "</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" "
                "fill=\"%s\"",
                BAR_LEFT, y + 3, w > 0 ? w : 0, colour(b[i].series));
        const hx_val *vals[] = {&b[i].val};
        data_attrs(f, vals, 1);
        fputs(">", f);
        title(f, b[i].label, hx_fmt(b[i].val.v, fr->x_kind, v, sizeof v));
        fprintf(f, "</rect><text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%s</text>\n",
                BAR_LEFT + (w > 0 ? w : 0) + 3, y + 14, v);
    }
    for (int i = 0; i < n_ref; i++)
        ref_line(f, &ref[i], true, at(&x, ref[i].val.v), top, bottom, fr->x_kind);
    end(f);
}

/* ---- points ---- */

/* A point of radius r (smaller when there are many: a history of hundreds). */
static void point(FILE *f, const hx_frame *fr, const hx_point *p, const axis *x, const axis *y,
                  double r)
{
    char a[64], b[64], what[160];
    double px = at(x, p->x.v), py = at(y, p->y.v);
    if (p->marked)
        fprintf(f,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"9\" fill=\"none\" stroke=\"#000\" "
                "stroke-width=\"2\"/>",
                px, py);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%g\" fill=\"%s\"", px, py, r,
            colour(p->series));
    const hx_val *vals[] = {&p->x, &p->y};
    data_attrs(f, vals, 2);
    fputs(">", f);
    snprintf(what, sizeof what, "%s %s, %s %s%s", fr->x_label,
             hx_fmt(p->x.v, fr->x_kind, a, sizeof a), fr->y_label,
             hx_fmt(p->y.v, fr->y_kind, b, sizeof b), p->marked ? " (chosen)" : "");
    title(f, p->label, what);
    fputs("</circle>\n", f);
}

void hx_points(FILE *f, const hx_frame *fr, const hx_point *pt, int n, const int *lines,
               int n_lines, const hx_ref *ref, int n_ref)
{
    enum { H = 300 };
    double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
    for (int i = 0; i < n; i++) {
        xl = fmin(xl, pt[i].x.v), xh = fmax(xh, pt[i].x.v);
        yl = fmin(yl, pt[i].y.v), yh = fmax(yh, pt[i].y.v);
    }
    for (int i = 0; i < n_ref; i++)
        yh = fmax(yh, ref[i].val.v);
    for (int i = 0; i < n_ref; i++)
        yl = fmin(yl, ref[i].val.v);
    if (xl > 0 && xl < (xh - xl)) xl = 0; /* from 0 when that costs little room */
    if (yl > 0 && yl < (yh - yl)) yl = 0;
    if (!n) xl = 0, xh = 1, yl = 0, yh = 1;
    axis x = axis_fit(xl, xh, fr->x_kind, PLOT_LEFT, PLOT_RIGHT);
    axis y = axis_fit(yl, yh, fr->y_kind, TOP + H, TOP);
    begin(f, fr, "points", TOP + H + AXIS_H);
    x_axis(f, &x, TOP, TOP + H, fr->x_label);
    y_axis(f, &y, PLOT_LEFT, PLOT_RIGHT, fr->y_label);
    for (int l = 0; l < n_lines; l++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                colour(lines[l]));
        for (int i = 0; i < n; i++)
            if (pt[i].series == lines[l])
                fprintf(f, "%.1f,%.1f ", at(&x, pt[i].x.v), at(&y, pt[i].y.v));
        fputs("\"/>\n", f);
    }
    for (int i = 0; i < n_ref; i++)
        ref_line(f, &ref[i], false, at(&y, ref[i].val.v), PLOT_LEFT, PLOT_RIGHT, fr->y_kind);
    for (int i = 0; i < n; i++)
        point(f, fr, &pt[i], &x, &y, n > 60 ? 2.5 : 5);
    end(f);
}

/* ---- steps ---- */

/* One series' step line from pt[i] on (its points are contiguous), pixel by pixel; the index
 * after its last point. */
static int step_line(FILE *f, const hx_point *pt, int i, int n, const axis *x, const axis *y)
{
    int s = pt[i].series;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colour(s));
    double last_y = at(y, pt[i].y.v), px = at(x, pt[i].x.v), top = last_y;
    fprintf(f, "%.1f,%.1f", px, last_y);
    for (i++; i < n && pt[i].series == s; i++) {
        double qx = at(x, pt[i].x.v), qy = at(y, pt[i].y.v);
        if (qx - px < 0.5) { /* the same pixel: keep its largest (the least y on screen) */
            top = fmin(top, qy), last_y = qy;
            continue;
        }
        if (top < last_y) fprintf(f, " %.1f,%.1f", px, top);
        fprintf(f, " %.1f,%.1f %.1f,%.1f %.1f,%.1f", px, last_y, qx, last_y, qx, qy);
        px = qx, last_y = top = qy;
    }
    fprintf(f, " %.1f,%.1f\"/>\n", fmax(px, x->b), last_y);
    return i;
}

void hx_steps(FILE *f, const hx_frame *fr, const hx_point *pt, int n)
{
    enum { H = 240 };
    double xh = 0, yh = 0;
    for (int i = 0; i < n; i++)
        xh = fmax(xh, pt[i].x.v), yh = fmax(yh, pt[i].y.v);
    axis x = axis_fit(0, xh, fr->x_kind, PLOT_LEFT, PLOT_RIGHT);
    axis y = axis_fit(0, yh, fr->y_kind, TOP + H, TOP);
    begin(f, fr, "steps", TOP + H + AXIS_H);
    x_axis(f, &x, TOP, TOP + H, fr->x_label);
    y_axis(f, &y, PLOT_LEFT, PLOT_RIGHT, fr->y_label);
    for (int i = 0; i < n;) {
        int peak = i, j = step_line(f, pt, i, n, &x, &y);
        for (int k = i; k < j; k++)
            if (pt[k].y.v > pt[peak].y.v) peak = k;
        hx_point mark = pt[peak];
        mark.marked = false;
        point(f, fr, &mark, &x, &y, 5);
        i = j;
    }
    end(f);
}

/* ---- Gantt and columns ---- */

/* The Gantt chart's spans in the order they are drawn: by row, then by start. */
static const hx_span *gantt_sorted;
static int by_row_start(const void *a, const void *b)
{
    const hx_span *p = &gantt_sorted[*(const int *)a], *q = &gantt_sorted[*(const int *)b];
    if (p->row != q->row) return p->row < q->row ? -1 : 1;
    return (p->start.v > q->start.v) - (p->start.v < q->start.v);
}

/* Two spans of a row, b the next after a, each under a pixel wide and less than a pixel
 * apart: one bar shows them as well as two. */
static bool mergeable(const axis *x, const hx_span *a, const hx_span *b)
{
    return a->row == b->row && a->series == b->series && at(x, a->end.v) - at(x, a->start.v) < 1 &&
           at(x, b->end.v) - at(x, b->start.v) < 1 && at(x, b->start.v) - at(x, a->end.v) < 1;
}

/* "LABEL: 1.2 to 1.3 ms" for one span; the bar's height is the row's less a margin. */
static void span(FILE *f, const hx_frame *fr, const axis *x, const hx_span *s)
{
    char a[64], b[64], what[160];
    double x0 = at(x, s->start.v), x1 = at(x, s->end.v);
    fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"", x0,
            (int)TOP + 20 * s->row + 2, x1 - x0 > 0.3 ? x1 - x0 : 0.3, colour(s->series));
    const hx_val *vals[] = {&s->start, &s->end};
    data_attrs(f, vals, 2);
    snprintf(what, sizeof what, "%s to %s", hx_fmt(s->start.v, fr->x_kind, a, sizeof a),
             hx_fmt(s->end.v, fr->x_kind, b, sizeof b));
    fputs(">", f);
    title(f, s->label, what);
    fputs("</rect>\n", f);
}

/* n spans of a row (s[idx[0..n)], in time order) as one bar: its title says how many, the
 * first and last, and when; their own numbers stay in the JSON. */
static void merged_span(FILE *f, const hx_frame *fr, const axis *x, const hx_span *s,
                        const int *idx, int n)
{
    const hx_span *first = &s[idx[0]], *last = &s[idx[n - 1]];
    double end = 0;
    for (int i = 0; i < n; i++)
        end = fmax(end, s[idx[i]].end.v);
    char a[64], b[64], what[600];
    double x0 = at(x, first->start.v), x1 = at(x, end);
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\" "
            "data-merged=\"%d\"><title>",
            x0, (int)TOP + 20 * first->row + 2, x1 - x0 > 0.3 ? x1 - x0 : 0.3,
            colour(first->series), n);
    snprintf(what, sizeof what, "%d spans, each under a pixel wide, %s to %s, from ", n,
             hx_fmt(first->start.v, fr->x_kind, a, sizeof a), hx_fmt(end, fr->x_kind, b, sizeof b));
    hx_esc(f, what);
    hx_esc(f, first->label);
    fputs(" to ", f);
    hx_esc(f, last->label);
    fputs("</title></rect>\n", f);
}

void hx_gantt(FILE *f, const hx_frame *fr, const char *const *rows, int n_rows, const hx_span *s,
              int n)
{
    enum { ROW = 20 };
    double hi = 0;
    for (int i = 0; i < n; i++)
        hi = fmax(hi, s[i].end.v);
    double left = 150, bottom = TOP + ROW * n_rows;
    axis x = axis_fit(0, hi, fr->x_kind, left, PLOT_RIGHT);
    begin(f, fr, "gantt", bottom + AXIS_H);
    x_axis(f, &x, TOP, bottom, fr->x_label);
    for (int r = 0; r < n_rows; r++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">", left - 6,
                TOP + ROW * r + 14);
        hx_esc(f, rows[r]);
        fputs("</text>\n", f);
    }
    int *order = pl_malloc((n + 1) * sizeof *order);
    for (int i = 0; i < n; i++)
        order[i] = i;
    gantt_sorted = s;
    pl_sort(order, n, sizeof *order, by_row_start);
    bool thin = n > HX_GANTT_DETAIL;
    for (int i = 0; i < n;) {
        int j = i;
        while (thin && j + 1 < n && mergeable(&x, &s[order[j]], &s[order[j + 1]]))
            j++;
        if (j > i)
            merged_span(f, fr, &x, s, order + i, j - i + 1);
        else
            span(f, fr, &x, &s[order[i]]);
        i = j + 1;
    }
    free(order);
    end(f);
}

void hx_columns(FILE *f, const hx_frame *fr, const hx_span *s, const hx_val *h, int n)
{
    enum { H = 220 };
    double xh = 0, yh = 0;
    for (int i = 0; i < n; i++)
        xh = fmax(xh, s[i].end.v), yh = fmax(yh, h[i].v);
    axis x = axis_fit(0, xh, fr->x_kind, PLOT_LEFT, PLOT_RIGHT);
    axis y = axis_fit(0, yh, fr->y_kind, TOP + H, TOP);
    begin(f, fr, "columns", TOP + H + AXIS_H);
    x_axis(f, &x, TOP, TOP + H, fr->x_label);
    y_axis(f, &y, PLOT_LEFT, PLOT_RIGHT, fr->y_label);
    for (int i = 0; i < n; i++) {
        char a[64], b[64], c[64], what[200];
        double x0 = at(&x, s[i].start.v), x1 = at(&x, s[i].end.v), y0 = at(&y, h[i].v);
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                "fill=\"%s\" fill-opacity=\"0.8\" stroke=\"#fff\"",
                x0, y0, x1 - x0, TOP + H - y0, colour(s[i].series));
        const hx_val *vals[] = {&s[i].start, &s[i].end, &h[i]};
        data_attrs(f, vals, 3);
        snprintf(what, sizeof what, "%s from %s to %s", hx_fmt(h[i].v, fr->y_kind, c, sizeof c),
                 hx_fmt(s[i].start.v, fr->x_kind, a, sizeof a),
                 hx_fmt(s[i].end.v, fr->x_kind, b, sizeof b));
        fputs(">", f);
        title(f, s[i].label, what);
        fputs("</rect>\n", f);
    }
    end(f);
}
