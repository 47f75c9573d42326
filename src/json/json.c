/* json.c: typed reading over jansson, with the JSON path of every value kept so that each
 * error can say "FILE: $.nodes[3].flops: PROBLEM" (docs/formats.md, "Conventions"). */
#include "placer/json.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct pl_json_doc {
    json_t *root;
    char *name;
};

/* ---- documents ---- */

pl_json_doc *pl_json_parse(const char *buf, size_t len, const char *name, pl_err *err)
{
    if (!name) name = "<buffer>";
    json_error_t je;
    /* a key given twice is almost always an edit gone wrong; jansson would keep the last */
    json_t *root = json_loadb(buf ? buf : "", buf ? len : 0, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        pl_err_set(err, "%s: line %d, column %d: %s", name, je.line, je.column, je.text);
        return NULL;
    }
    pl_json_doc *d = pl_malloc(sizeof *d);
    d->root = root;
    d->name = pl_strdup(name);
    return d;
}

pl_json_doc *pl_json_open(const char *path, pl_err *err)
{
    size_t len;
    char *buf = pl_read_file(path, &len, err);
    if (!buf) return NULL;
    pl_json_doc *d = pl_json_parse(buf, len, path, err);
    free(buf);
    return d;
}

void pl_json_close(pl_json_doc *d)
{
    if (!d) return;
    json_decref(d->root);
    free(d->name);
    free(d);
}

pl_json pl_json_root(const pl_json_doc *d)
{
    return (pl_json){.v = d->root, .step = PL_JSON_ROOT, .file = d->name};
}

/* ---- moving around ---- */

pl_json pl_json_at(const pl_json *obj, const char *field)
{
    json_t *v = json_is_object(obj->v) ? json_object_get(obj->v, field) : NULL;
    return (pl_json){v, obj, field, 0, PL_JSON_FIELD, obj->file};
}

pl_json pl_json_index(const pl_json *arr, size_t i)
{
    json_t *v = json_is_array(arr->v) ? json_array_get(arr->v, i) : NULL;
    return (pl_json){v, arr, NULL, i, PL_JSON_ELEMENT, arr->file};
}

size_t pl_json_len(const pl_json *c)
{
    if (json_is_array(c->v)) return json_array_size(c->v);
    if (json_is_object(c->v)) return json_object_size(c->v);
    return 0;
}

bool pl_json_has(const pl_json *obj, const char *field)
{
    pl_json c = pl_json_at(obj, field);
    return c.v && !json_is_null(c.v);
}

bool pl_json_next(const pl_json *obj, pl_json_iter *it, pl_json *m)
{
    if (!json_is_object(obj->v)) return false;
    it->it = it->started ? json_object_iter_next(obj->v, it->it) : json_object_iter(obj->v);
    it->started = true;
    if (!it->it) return false;
    *m = (pl_json){json_object_iter_value(it->it),
                   obj,
                   json_object_iter_key(it->it),
                   0,
                   PL_JSON_ENTRY,
                   obj->file};
    return true;
}

/* ---- paths and messages ---- */

static void append(char *buf, size_t n, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
    if (*len >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *len, n - *len, fmt, ap);
    va_end(ap);
    *len = w < 0 ? n : *len + (size_t)w;
}

static bool is_identifier(const char *s)
{
    if (!isalpha((unsigned char)*s) && *s != '_') return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return false;
    return true;
}

/* A key as a JSON string, escaped and cut short so that a hostile key cannot fill the
 * message. */
static void append_quoted(char *buf, size_t n, size_t *len, const char *s)
{
    append(buf, n, len, "\"");
    for (int k = 0; *s && k < 60; s++, k++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            append(buf, n, len, "\\%c", ch);
        else if (ch < 0x20)
            append(buf, n, len, "\\u%04x", ch);
        else
            append(buf, n, len, "%c", ch);
    }
    append(buf, n, len, *s ? "...\"" : "\"");
}

const char *pl_json_path(const pl_json *c, char *buf, size_t n)
{
    enum { MAX_DEPTH = 64 };
    const pl_json *chain[MAX_DEPTH];
    int depth = 0;
    for (const pl_json *p = c; p && p->step != PL_JSON_ROOT; p = p->up)
        if (depth < MAX_DEPTH) chain[depth++] = p;
    size_t len = 0;
    if (n) buf[0] = 0;
    append(buf, n, &len, "$");
    for (int k = depth - 1; k >= 0; k--) {
        const pl_json *p = chain[k];
        if (p->step == PL_JSON_ELEMENT)
            append(buf, n, &len, "[%zu]", p->index);
        else if (is_identifier(p->key))
            append(buf, n, &len, ".%s", p->key);
        else {
            append(buf, n, &len, "[");
            append_quoted(buf, n, &len, p->key);
            append(buf, n, &len, "]");
        }
    }
    return buf;
}

int pl_json_fail(const pl_json *c, pl_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    char msg[PL_ERR_MAX], path[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pl_err_set(err, "%s: %s: %s", c->file ? c->file : "<json>",
                      pl_json_path(c, path, sizeof path), msg);
}

const char *pl_json_describe(const json_t *v, char *buf, size_t n)
{
    size_t len = 0;
    if (n) buf[0] = 0;
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
        append(buf, n, &len, "an object");
        break;
    case JSON_ARRAY:
        append(buf, n, &len, "an array");
        break;
    case JSON_STRING:
        append_quoted(buf, n, &len, json_string_value(v));
        break;
    case JSON_INTEGER:
        append(buf, n, &len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        append(buf, n, &len, "%.15g", json_real_value(v));
        break;
    case JSON_TRUE:
        append(buf, n, &len, "true");
        break;
    case JSON_FALSE:
        append(buf, n, &len, "false");
        break;
    case JSON_NULL:
        append(buf, n, &len, "null");
        break;
    }
    return buf;
}

static int fail_type(const pl_json *c, const char *expected, pl_err *err)
{
    char got[96];
    return pl_json_fail(c, err, "expected %s, got %s", expected,
                        pl_json_describe(c->v, got, sizeof got));
}

/* ---- suggestions for misspelt names ---- */

#define WORD_MAX 64

/* Lower case, with the '_'-separated words sorted, so that "bytes_moved" matches
 * "moved_bytes". */
static void normalize(const char *s, char out[WORD_MAX + 1])
{
    enum { MAX_WORDS = 16 };
    char words[MAX_WORDS][WORD_MAX + 1];
    int nw = 0;
    while (*s && nw < MAX_WORDS) {
        size_t len = strcspn(s, "_"), keep = len < WORD_MAX ? len : WORD_MAX;
        for (size_t i = 0; i < keep; i++)
            words[nw][i] = (char)tolower((unsigned char)s[i]);
        words[nw++][keep] = 0;
        s += len + (s[len] == '_');
    }
    for (int i = 1; i < nw; i++) /* insertion sort: a handful of words */
        for (int j = i; j > 0 && strcmp(words[j - 1], words[j]) > 0; j--) {
            char tmp[WORD_MAX + 1];
            memcpy(tmp, words[j], sizeof tmp);
            memcpy(words[j], words[j - 1], sizeof tmp);
            memcpy(words[j - 1], tmp, sizeof tmp);
        }
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < nw; i++)
        append(out, WORD_MAX + 1, &len, "%s%s", i ? "_" : "", words[i]);
}

/* Edit distance with adjacent transpositions counted as one (optimal string alignment),
 * ignoring case; strings are cut at WORD_MAX characters. */
static int distance(const char *a, const char *b)
{
    int la = (int)strnlen(a, WORD_MAX), lb = (int)strnlen(b, WORD_MAX);
    int r0[WORD_MAX + 1], r1[WORD_MAX + 1], r2[WORD_MAX + 1];
    int *prev2 = r0, *prev = r1, *cur = r2;
    for (int j = 0; j <= lb; j++)
        prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int d = prev[j - 1] + (ca != cb);
            if (prev[j] + 1 < d) d = prev[j] + 1;
            if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        int *t = prev2;
        prev2 = prev, prev = cur, cur = t;
    }
    return prev[lb];
}

/* "weight" for "weight_bytes": a name given without its unit word. */
static bool word_prefix(const char *word, const char *name)
{
    size_t n = strlen(word);
    return n && strncasecmp(word, name, n) == 0 && name[n] == '_';
}

const char *pl_json_closest(const char *word, const char *const *names, size_t n)
{
    char nw[WORD_MAX + 1], nn[WORD_MAX + 1];
    normalize(word, nw);
    const char *best = NULL;
    int best_d = 0;
    for (size_t i = 0; i < n; i++) {
        normalize(names[i], nn);
        int d = strcmp(nw, nn) == 0           ? 0
                : word_prefix(word, names[i]) ? 1
                                              : distance(word, names[i]);
        int len =
            (int)strlen(word) > (int)strlen(names[i]) ? (int)strlen(word) : (int)strlen(names[i]);
        /* further than that is another word; for short names ("a", "b") even one edit is */
        if (d > 1 + len / 4 || (d && 2 * d > len)) continue;
        if (!best || d < best_d) best = names[i], best_d = d;
    }
    return best;
}

/* ---- checks ---- */

int pl_json_check_fields(const pl_json *obj, const char *const *allowed, pl_err *err)
{
    if (!json_is_object(obj->v)) return fail_type(obj, "an object", err);
    size_t n_allowed = 0;
    while (allowed[n_allowed])
        n_allowed++;
    pl_json_iter it = {0};
    pl_json m;
    while (pl_json_next(obj, &it, &m)) {
        size_t k = 0;
        while (k < n_allowed && strcmp(allowed[k], m.key) != 0)
            k++;
        if (k < n_allowed) continue;
        m.step = PL_JSON_FIELD;
        const char *near = pl_json_closest(m.key, allowed, n_allowed);
        if (near) return pl_json_fail(&m, err, "unknown field; did you mean \"%s\"?", near);
        char list[512];
        size_t len = 0;
        list[0] = 0;
        for (k = 0; k < n_allowed; k++)
            append(list, sizeof list, &len, "%s%s", k ? ", " : "", allowed[k]);
        return pl_json_fail(&m, err, "unknown field; the fields here are: %s", list);
    }
    return 0;
}

int pl_json_check_format(const pl_json *root, const char *format, pl_err *err)
{
    size_t family = strcspn(format, "/");
    if (!json_is_object(root->v)) {
        char want[128];
        snprintf(want, sizeof want, "an object with \"format\": \"%s\"", format);
        return fail_type(root, want, err);
    }
    pl_json f = pl_json_at(root, "format");
    if (!f.v)
        return pl_json_fail(root, err,
                            "the \"format\" field is missing: a %.*s file starts with "
                            "{\"format\": \"%s\", ...}",
                            (int)family, format, format);
    if (!json_is_string(f.v)) {
        char want[128];
        snprintf(want, sizeof want, "the string \"%s\"", format);
        return fail_type(&f, want, err);
    }
    const char *got = json_string_value(f.v);
    if (strcmp(got, format) == 0) return 0;
    if (strncmp(got, format, family + 1) == 0)
        return pl_json_fail(&f, err, "\"%.60s\" is not supported: this placer reads \"%s\"", got,
                            format);
    if (strncmp(got, "placer-", 7) == 0)
        return pl_json_fail(&f, err, "this is a \"%.60s\" file, not \"%s\"", got, format);
    return pl_json_fail(&f, err, "unknown format \"%.60s\"; expected \"%s\"", got, format);
}

/* ---- getters ---- */

/* Finds the value to read: 1 present, 0 absent or null (optional only), -1 error. */
static int fetch(const pl_json *obj, const char *field, bool required, pl_json *c, pl_err *err)
{
    if (!field) {
        *c = *obj;
    } else {
        if (obj->v && !json_is_object(obj->v)) return fail_type(obj, "an object", err);
        *c = pl_json_at(obj, field);
    }
    if (c->v && !json_is_null(c->v)) return 1;
    if (!required) return 0;
    if (field && obj->v) return pl_json_fail(obj, err, "the field \"%s\" is missing", field);
    return pl_json_fail(c, err, "a value is missing");
}

static int get_string(const pl_json *obj, const char *field, bool req, const char **out,
                      pl_err *err)
{
    pl_json c;
    int rc = fetch(obj, field, req, &c, err);
    if (rc <= 0) return rc;
    if (!json_is_string(c.v)) return fail_type(&c, "a string", err);
    *out = json_string_value(c.v);
    return 1;
}

static int get_int(const pl_json *obj, const char *field, bool req, int64_t *out, pl_err *err)
{
    pl_json c;
    int rc = fetch(obj, field, req, &c, err);
    if (rc <= 0) return rc;
    if (json_is_integer(c.v)) {
        *out = json_integer_value(c.v);
        return 1;
    }
    /* 1e3 is an integer to a person, and to Python's json module when it writes one */
    double d = json_is_real(c.v) ? json_real_value(c.v) : 0.5;
    if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return fail_type(&c, "an integer", err);
    *out = (int64_t)d;
    return 1;
}

static int get_number(const pl_json *obj, const char *field, bool req, double *out, pl_err *err)
{
    pl_json c;
    int rc = fetch(obj, field, req, &c, err);
    if (rc <= 0) return rc;
    if (!json_is_number(c.v)) return fail_type(&c, "a number", err);
    double d = json_number_value(c.v);
    if (!isfinite(d)) return fail_type(&c, "a finite number", err);
    *out = d;
    return 1;
}

static int get_bool(const pl_json *obj, const char *field, bool req, bool *out, pl_err *err)
{
    pl_json c;
    int rc = fetch(obj, field, req, &c, err);
    if (rc <= 0) return rc;
    if (!json_is_boolean(c.v)) return fail_type(&c, "true or false", err);
    *out = json_is_true(c.v);
    return 1;
}

static int get_container(const pl_json *obj, const char *field, bool req, bool array, pl_json *out,
                         pl_err *err)
{
    pl_json c;
    int rc = fetch(obj, field, req, &c, err);
    if (rc <= 0) return rc;
    if (array ? !json_is_array(c.v) : !json_is_object(c.v))
        return fail_type(&c, array ? "an array" : "an object", err);
    *out = c;
    return 1;
}

/* ---- quantities ---- */

static const struct {
    const char *word;   /* the unit as the last word of a field name */
    const char *like;   /* what to write instead of a plain number */
    const char *number; /* what a plain number means where one is allowed */
} unit_words[] = {
    [PL_UNIT_BYTES] = {"bytes", "a size like \"16 GiB\"", "a number of bytes"},
    [PL_UNIT_SECONDS] = {"s", "a time like \"50 ms\"", "a number of seconds"},
    [PL_UNIT_BYTES_PER_S] = {"Bps", "a bandwidth like \"25 GB/s\"", "a number of bytes/s"},
    [PL_UNIT_FLOPS] = {"flops", "a FLOP count like \"4.1 GFLOP\"", "a number of FLOPs"},
    [PL_UNIT_FLOPS_PER_S] = {"flops_per_s", "a compute rate like \"19.5 TFLOP/s\"",
                             "a number of FLOP/s"},
    [PL_UNIT_USD_PER_HOUR] = {"usd_per_hour", "a price like \"0.90 USD/h\"", "a number of USD/h"},
};

/* The field name that says what a plain number means: an element or map entry has none of
 * its own and takes its container's ("times_s": {"V100": 0.0012}). */
static const char *unit_field(const pl_json *c)
{
    while (c && c->step != PL_JSON_FIELD)
        c = c->step == PL_JSON_ROOT ? NULL : c->up;
    return c ? c->key : "";
}

static bool carries_unit(const char *name, pl_unit unit)
{
    const char *w = unit_words[unit].word;
    size_t n = strlen(name), k = strlen(w);
    if (strcmp(name, w) == 0) return true;
    if (n <= k || name[n - k - 1] != '_' || strcmp(name + n - k, w) != 0) return false;
    /* "peak_flops_per_s" ends in "_s" but is a rate, not a time */
    return unit != PL_UNIT_SECONDS || n < 6 || strcmp(name + n - 6, "_per_s") != 0;
}

static int number_quantity(const pl_json *c, pl_unit unit, double *out, pl_err *err)
{
    char got[96];
    pl_json_describe(c->v, got, sizeof got);
    if (!carries_unit(unit_field(c), unit))
        return pl_json_fail(c, err, "the number %s has no unit: write %s", got,
                            unit_words[unit].like);
    double d = json_number_value(c->v);
    if (!isfinite(d)) return pl_json_fail(c, err, "%s is not a finite number", got);
    if (d < 0) return pl_json_fail(c, err, "%s is negative; expected >= 0", got);
    *out = d == 0 ? 0 : d;
    return 1;
}

static int get_quantity(const pl_json *obj, const char *field, bool req, pl_unit unit, double *out,
                        pl_err *err)
{
    if ((unsigned)unit > PL_UNIT_USD_PER_HOUR)
        return pl_err_set(err, "internal error: unit %d", (int)unit);
    pl_json c;
    int rc = fetch(obj, field, req, &c, err);
    if (rc <= 0) return rc;
    if (json_is_number(c.v)) return number_quantity(&c, unit, out, err);
    if (!json_is_string(c.v)) {
        char want[160];
        bool plain = carries_unit(unit_field(&c), unit);
        snprintf(want, sizeof want, "%s%s%s", unit_words[unit].like, plain ? " or " : "",
                 plain ? unit_words[unit].number : "");
        return fail_type(&c, want, err);
    }
    pl_err perr;
    if (pl_parse_quantity(json_string_value(c.v), unit, out, &perr) < 0)
        return pl_json_fail(&c, err, "%s", perr.msg);
    return 1;
}

/* ---- the public getters: required ones return 0 on success, optional ones 0 or 1 ---- */

#define REQUIRED(call) return (call) < 0 ? -1 : 0

int pl_json_string(const pl_json *o, const char *f, const char **out, pl_err *err)
{
    REQUIRED(get_string(o, f, true, out, err));
}
int pl_json_int(const pl_json *o, const char *f, int64_t *out, pl_err *err)
{
    REQUIRED(get_int(o, f, true, out, err));
}
int pl_json_number(const pl_json *o, const char *f, double *out, pl_err *err)
{
    REQUIRED(get_number(o, f, true, out, err));
}
int pl_json_bool(const pl_json *o, const char *f, bool *out, pl_err *err)
{
    REQUIRED(get_bool(o, f, true, out, err));
}
int pl_json_array(const pl_json *o, const char *f, pl_json *out, pl_err *err)
{
    REQUIRED(get_container(o, f, true, true, out, err));
}
int pl_json_object(const pl_json *o, const char *f, pl_json *out, pl_err *err)
{
    REQUIRED(get_container(o, f, true, false, out, err));
}
int pl_json_quantity(const pl_json *o, const char *f, pl_unit u, double *out, pl_err *err)
{
    REQUIRED(get_quantity(o, f, true, u, out, err));
}

int pl_json_opt_string(const pl_json *o, const char *f, const char **out, pl_err *err)
{
    return get_string(o, f, false, out, err);
}
int pl_json_opt_int(const pl_json *o, const char *f, int64_t *out, pl_err *err)
{
    return get_int(o, f, false, out, err);
}
int pl_json_opt_number(const pl_json *o, const char *f, double *out, pl_err *err)
{
    return get_number(o, f, false, out, err);
}
int pl_json_opt_bool(const pl_json *o, const char *f, bool *out, pl_err *err)
{
    return get_bool(o, f, false, out, err);
}
int pl_json_opt_array(const pl_json *o, const char *f, pl_json *out, pl_err *err)
{
    return get_container(o, f, false, true, out, err);
}
int pl_json_opt_object(const pl_json *o, const char *f, pl_json *out, pl_err *err)
{
    return get_container(o, f, false, false, out, err);
}
int pl_json_opt_quantity(const pl_json *o, const char *f, pl_unit u, double *out, pl_err *err)
{
    return get_quantity(o, f, false, u, out, err);
}

int pl_json_check_range(const pl_json *obj, const char *field, double v, double lo, double hi,
                        pl_unit unit, const char *what, const char *hint, pl_err *err)
{
    if (v >= lo && v <= hi) return 0;
    pl_json at = field ? pl_json_at(obj, field) : *obj;
    const char *sep = hint ? "; " : "";
    if (v == 0)
        return pl_json_fail(&at, err, "%s of zero is not allowed%s%s", what, sep, hint ? hint : "");
    return pl_json_fail(&at, err,
                        "%s of %g %s is %s than %g %s: almost certainly a unit mistake%s%s", what,
                        v, pl_unit_name(unit), v < lo ? "smaller" : "larger", v < lo ? lo : hi,
                        pl_unit_name(unit), sep, hint ? hint : "");
}

int pl_json_save(const json_t *v, const char *path, size_t flags, pl_err *err)
{
    pl_out o;
    if (pl_out_open(&o, path, err) < 0) return -1;
    json_dumpf(v, o.f, flags); /* a failed write shows in the commit, with its reason */
    fputc('\n', o.f);
    return pl_out_commit(&o, err);
}
