/* collectives.c: measured collective times as segmented linear curves (docs/clusters.md,
 * "Collectives"): evaluating them, fitting them to measurements, reading them from a cluster
 * file's "collectives" field or from a placer-collectives/1 file, and picking the curves that
 * apply to a collective.
 *
 * The fit is TAG's (§IV-C: "segmented linear regression" of the profiled collectives): sizes
 * double from 1 KB to 1 GB, so the times span six decades and a plain least-squares line is
 * decided by the largest sizes alone. Errors are therefore relative (weights 1/t^2), and the
 * breakpoints are searched exhaustively: with 21 sizes and at most 3 segments that is a few
 * hundred small fits. */
#include "cluster_internal.h"
#include "placer/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEG_MIN_POINTS 3  /* fewer and a segment's line fits any two points exactly */
#define A_MAX 3600.0      /* s: a collective's fixed cost beyond an hour is a unit mistake */
#define B_MAX 1.0         /* s per byte: 1 B/s */
#define FIT_TOLERANCE 1.2 /* a fit with fewer segments is kept within this of the best... */
#define FIT_SLACK 0.01    /* ...plus 1 % relative RMS error */

static const char *const kind_names[PL_COLL_COUNT] = {"allreduce", "broadcast", "p2p"};

const char *pl_collective_name(pl_collective k)
{
    return k >= 0 && k < PL_COLL_COUNT ? kind_names[k] : "?";
}

double pl_coll_curve_s(const pl_coll_curve *cv, double bytes)
{
    if (!cv || cv->n == 0) return -1;
    int k = 0;
    while (k + 1 < cv->n && cv->seg[k + 1].from_bytes <= bytes)
        k++;
    return cv->seg[k].a_s + cv->seg[k].b_s_per_byte * bytes;
}

void pl_coll_curve_free(pl_coll_curve *cv)
{
    if (!cv) return;
    free(cv->seg);
    cv->seg = NULL, cv->n = 0;
}

void pl_coll_scope_free(pl_coll_scope *s)
{
    if (!s) return;
    for (int k = 0; k < PL_COLL_COUNT; k++)
        pl_coll_curve_free(&s->curve[k]);
    free(s->host);
    free(s->file);
    memset(s, 0, sizeof *s);
}

/* ---- fitting ---- */

/* The weighted least-squares line over points [i, j) with weights 1/t^2 (relative errors),
 * a >= 0 and b >= 0: a negative slope becomes a constant, a negative intercept a line through
 * the origin. Returns the sum of squared relative errors. */
static double fit_line(const double *x, const double *t, int i, int j, double *a, double *b)
{
    double xs = x[j - 1]; /* scaled so that the sums stay well conditioned */
    double s0 = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int k = i; k < j; k++) {
        double w = 1 / (t[k] * t[k]), u = x[k] / xs;
        s0 += w, sx += w * u, sy += w * t[k], sxx += w * u * u, sxy += w * u * t[k];
    }
    double det = s0 * sxx - sx * sx;
    double bb = det > 0 ? (s0 * sxy - sx * sy) / det : 0;
    double aa = (sy - bb * sx) / s0;
    if (bb < 0) bb = 0, aa = sy / s0;
    if (aa < 0) aa = 0, bb = sxy / sxx;
    *a = aa, *b = bb / xs;
    double rss = 0;
    for (int k = i; k < j; k++) {
        double e = (t[k] - *a - *b * x[k]) / t[k];
        rss += e * e;
    }
    return rss;
}

/* The best split of [0, n) into `segs` segments (breakpoints in cut[0..segs-2]); its RSS, or
 * INFINITY when n is too small for that many. */
static double best_split(const double *x, const double *t, int n, int segs, int cut[2])
{
    double best = INFINITY, a, b;
    int m = SEG_MIN_POINTS < n ? SEG_MIN_POINTS : n;
    if (segs == 1) return fit_line(x, t, 0, n, &a, &b);
    for (int p = m; p + m <= n; p++) {
        if (segs == 2) {
            double r = fit_line(x, t, 0, p, &a, &b) + fit_line(x, t, p, n, &a, &b);
            if (r < best) best = r, cut[0] = p;
            continue;
        }
        for (int q = p + m; q + m <= n; q++) {
            double r = fit_line(x, t, 0, p, &a, &b) + fit_line(x, t, p, q, &a, &b) +
                       fit_line(x, t, q, n, &a, &b);
            if (r < best) best = r, cut[0] = p, cut[1] = q;
        }
    }
    return best;
}

static int check_points(const double *x, const double *t, int n, pl_err *err)
{
    if (n < 2) return pl_err_set(err, "a fit needs at least 2 sizes, got %d", n);
    for (int i = 0; i < n; i++) {
        if (!(x[i] > 0) || !isfinite(x[i]) || (i && !(x[i] > x[i - 1])))
            return pl_err_set(err, "size %d (%g bytes) is not positive and above the last", i,
                              x[i]);
        if (!(t[i] > 0) || !isfinite(t[i]))
            return pl_err_set(err, "the time at %g bytes (%g s) is not positive", x[i], t[i]);
    }
    return 0;
}

double pl_coll_fit(const double *bytes, const double *s, int n, int max_segments,
                   pl_coll_curve *out, pl_err *err)
{
    *out = (pl_coll_curve){0};
    if (check_points(bytes, s, n, err) < 0) return -1;
    if (max_segments < 1 || max_segments > 3)
        return pl_err_set(err, "at most 1 to 3 segments, not %d", max_segments);
    double rss[4] = {INFINITY, INFINITY, INFINITY, INFINITY}, best = INFINITY;
    int cuts[4][2] = {{0}};
    for (int k = 1; k <= max_segments; k++) {
        rss[k] = best_split(bytes, s, n, k, cuts[k]);
        if (rss[k] < best) best = rss[k];
    }
    /* more segments always fit better: the fewest within reach of the best */
    double best_rms = sqrt(best / n);
    int k = 1;
    while (!(sqrt(rss[k] / n) <= FIT_TOLERANCE * best_rms + FIT_SLACK))
        k++;
    int from[4] = {0, cuts[k][0], cuts[k][1], 0};
    from[k] = n;
    out->seg = pl_calloc((size_t)k, sizeof *out->seg);
    out->n = k;
    for (int g = 0; g < k; g++) {
        pl_coll_segment *sg = &out->seg[g];
        fit_line(bytes, s, from[g], from[g + 1], &sg->a_s, &sg->b_s_per_byte);
        sg->from_bytes = g == 0 ? 0 : bytes[from[g]];
    }
    return sqrt(rss[k] / n);
}

/* ---- reading ---- */

static int read_segment(const pl_json *e, pl_coll_segment *sg, const pl_coll_segment *prev,
                        pl_err *err)
{
    static const char *const fields[] = {"from_bytes", "a_s", "b_s_per_byte", NULL};
    if (pl_json_check_fields(e, fields, err) < 0 ||
        pl_json_quantity(e, "from_bytes", PL_UNIT_BYTES, &sg->from_bytes, err) < 0 ||
        pl_json_quantity(e, "a_s", PL_UNIT_SECONDS, &sg->a_s, err) < 0 ||
        pl_json_check_range(e, "a_s", sg->a_s, 0, A_MAX, PL_UNIT_SECONDS, "a fixed cost", NULL,
                            err) < 0 ||
        pl_json_number(e, "b_s_per_byte", &sg->b_s_per_byte, err) < 0)
        return -1;
    pl_json at = pl_json_at(e, "b_s_per_byte");
    if (!(sg->b_s_per_byte >= 0) || !(sg->b_s_per_byte <= B_MAX))
        return pl_json_fail(&at, err,
                            "a slope of %g s per byte: it must be between 0 and %g (a time "
                            "never falls as the bytes grow)",
                            sg->b_s_per_byte, B_MAX);
    if (!(sg->a_s + sg->b_s_per_byte * fmax(sg->from_bytes, 1) > 0))
        return pl_json_fail(e, err, "the segment gives no time: a_s and b_s_per_byte are both 0");
    if (prev && !(sg->from_bytes > prev->from_bytes)) {
        at = pl_json_at(e, "from_bytes");
        return pl_json_fail(&at, err,
                            "segments must be sorted by increasing from_bytes: %.17g comes after "
                            "%.17g",
                            sg->from_bytes, prev->from_bytes);
    }
    return 0;
}

static int read_curve(const pl_json *o, pl_collective kind, pl_coll_curve *cv, pl_err *err)
{
    pl_json arr;
    int rc = pl_json_opt_array(o, kind_names[kind], &arr, err);
    if (rc <= 0) return rc;
    size_t n = pl_json_len(&arr);
    if (n == 0 || n > 64) return pl_json_fail(&arr, err, "%zu segments; a curve has 1 to 64", n);
    cv->seg = pl_calloc(n, sizeof *cv->seg);
    for (size_t i = 0; i < n; i++) {
        pl_json e = pl_json_index(&arr, i);
        if (read_segment(&e, &cv->seg[i], i ? &cv->seg[i - 1] : NULL, err) < 0) return -1;
        cv->n++;
    }
    return 1;
}

/* The curves of an object (a scope, or a placer-collectives/1 file): at least one. */
static int read_curves(const pl_json *o, pl_coll_scope *s, pl_err *err)
{
    int given = 0;
    for (int k = 0; k < PL_COLL_COUNT; k++) {
        int rc = read_curve(o, (pl_collective)k, &s->curve[k], err);
        if (rc < 0) return -1;
        given += rc;
    }
    return given ? 0
                 : pl_json_fail(o, err, "no curve: give \"allreduce\", \"broadcast\" or \"p2p\"");
}

static int read_devices(const pl_json *o, pl_coll_scope *s, pl_err *err)
{
    int64_t d = 0;
    if (pl_json_opt_int(o, "devices", &d, err) < 0) return -1;
    if (d == 1 || d < 0 || d > 1 << 20) {
        pl_json at = pl_json_at(o, "devices");
        return pl_json_fail(&at, err, "%lld devices; a collective is over 2 or more", (long long)d);
    }
    s->devices = (int)d;
    return 0;
}

static int read_file(const pl_json *root, pl_coll_scope *s, pl_err *err)
{
    static const char *const fields[] = {
        "format",      "devices", "allreduce", "broadcast", "p2p",       "measurements", "fit_rms",
        "description", "source",  "machine",   "repeat",    "max_bytes", "measured_utc", NULL};
    if (pl_json_check_format(root, "placer-collectives/1", err) < 0 ||
        pl_json_check_fields(root, fields, err) < 0 || read_devices(root, s, err) < 0)
        return -1;
    return read_curves(root, s, err);
}

int pl_coll_load(const char *path, pl_coll_scope *out, pl_err *err)
{
    memset(out, 0, sizeof *out);
    pl_json_doc *doc = pl_json_open(path, err);
    if (!doc) return -1;
    pl_json root = pl_json_root(doc);
    int rc = read_file(&root, out, err);
    pl_json_close(doc);
    if (rc < 0) return pl_coll_scope_free(out), -1;
    out->file = pl_strdup(path);
    return 0;
}

/* "file": a placer-collectives/1 file, relative to the cluster file's folder. */
static int scope_file(const pl_json *o, const char *name, pl_coll_scope *s, pl_err *err)
{
    char path[4096];
    const char *slash = o->file ? strrchr(o->file, '/') : NULL;
    int w = name[0] == '/' || !slash
                ? snprintf(path, sizeof path, "%s", name)
                : snprintf(path, sizeof path, "%.*s/%s", (int)(slash - o->file), o->file, name);
    pl_json at = pl_json_at(o, "file");
    if (w < 0 || (size_t)w >= sizeof path) return pl_json_fail(&at, err, "the path is too long");
    int devices = s->devices;
    pl_err inner = {""};
    if (pl_coll_load(path, s, &inner) < 0)
        return pl_json_fail(&at, err, "cannot use the collectives file: %s", inner.msg);
    if (devices && s->devices && devices != s->devices)
        return pl_json_fail(&at, err, "the scope says %d devices, the file %s was measured with %d",
                            devices, path, s->devices);
    if (devices) s->devices = devices;
    return 0;
}

static bool host_exists(const pl_cluster *c, const char *host)
{
    for (int d = 0; d < c->n_devs; d++)
        if (strcmp(c->devs[d].host, host) == 0) return true;
    return false;
}

static int read_scope(const pl_json *o, const pl_cluster *c, pl_coll_scope *s, pl_err *err)
{
    static const char *const fields[] = {"host", "devices",     "file",   "allreduce", "broadcast",
                                         "p2p",  "description", "source", NULL};
    const char *host = NULL, *file = NULL;
    if (pl_json_check_fields(o, fields, err) < 0 || pl_json_opt_string(o, "host", &host, err) < 0 ||
        pl_json_opt_string(o, "file", &file, err) < 0 || read_devices(o, s, err) < 0)
        return -1;
    if (host && !host_exists(c, host)) {
        pl_json at = pl_json_at(o, "host");
        return pl_json_fail(&at, err, "no device has host \"%s\"", host);
    }
    bool inline_ = false;
    for (int k = 0; k < PL_COLL_COUNT; k++)
        inline_ |= pl_json_has(o, kind_names[k]);
    if (file && inline_)
        return pl_json_fail(o, err, "give \"file\" or the curves inline, not both");
    if (file ? scope_file(o, file, s, err) < 0 : read_curves(o, s, err) < 0) return -1;
    s->host = host ? pl_strdup(host) : NULL;
    return 0;
}

static bool same_scope(const pl_coll_scope *a, const pl_coll_scope *b)
{
    return a->devices == b->devices &&
           (a->host && b->host ? strcmp(a->host, b->host) == 0 : a->host == b->host);
}

int cl_read_collectives(const pl_json *root, pl_cluster *c, pl_err *err)
{
    pl_json arr;
    int rc = pl_json_opt_array(root, "collectives", &arr, err);
    if (rc <= 0) return rc;
    size_t n = pl_json_len(&arr);
    c->colls = pl_calloc(n + 1, sizeof *c->colls);
    for (size_t i = 0; i < n; i++) {
        pl_json o = pl_json_index(&arr, i);
        pl_coll_scope *s = &c->colls[c->n_colls];
        if (read_scope(&o, c, s, err) < 0) return pl_coll_scope_free(s), -1;
        c->n_colls++;
        for (int j = 0; j + 1 < c->n_colls; j++)
            if (same_scope(&c->colls[j], s))
                return pl_json_fail(&o, err,
                                    "the same host and device count as $.collectives[%d]; give "
                                    "each scope once",
                                    j);
    }
    return 0;
}

/* ---- lookup ---- */

/* The curve of `kind` among the scopes of `host` (NULL: cluster-wide): measured with n
 * devices, else given for any number. */
static const pl_coll_curve *find_curve(const pl_cluster *c, const char *host, pl_collective kind,
                                       int n)
{
    const pl_coll_curve *any = NULL;
    if (kind == PL_COLL_P2P) n = 2;
    for (int i = 0; i < c->n_colls; i++) {
        const pl_coll_scope *s = &c->colls[i];
        bool here = host ? s->host && strcmp(s->host, host) == 0 : !s->host;
        if (!here || s->curve[kind].n == 0) continue;
        if (s->devices == n) return &s->curve[kind];
        if (s->devices == 0) any = &s->curve[kind];
    }
    return any;
}

double pl_cluster_collective_s(const pl_cluster *c, pl_collective kind, int n_devices, double bytes)
{
    if (kind < 0 || kind >= PL_COLL_COUNT) return -1;
    const pl_coll_curve *cv = find_curve(c, NULL, kind, n_devices);
    return cv ? pl_coll_curve_s(cv, bytes) : -1;
}

double pl_cluster_collective_on_s(const pl_cluster *c, pl_collective kind, const int *devs, int n,
                                  double bytes)
{
    if (kind < 0 || kind >= PL_COLL_COUNT || n < 1) return -1;
    const char *host = c->devs[devs[0]].host;
    for (int i = 1; i < n && *host; i++)
        if (strcmp(c->devs[devs[i]].host, host) != 0) host = "";
    const pl_coll_curve *cv = *host ? find_curve(c, host, kind, n) : NULL;
    if (!cv) cv = find_curve(c, NULL, kind, n);
    return cv ? pl_coll_curve_s(cv, bytes) : -1;
}
