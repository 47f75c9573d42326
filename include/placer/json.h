/* json.h: reading placer's JSON files, with errors that say where (docs/formats.md).
 *
 * Every placer file format is JSON, and a mistake in one is reported as
 * "FILE: $.devices[2].memory_bytes: PROBLEM". A pl_json cursor is a value plus the step that
 * reached it (a field name or an array index) and the cursor it was reached from, so a path
 * costs nothing until an error prints it. Cursors live on the stack: a child points to its
 * parent and must not outlive it.
 *
 * Getters take an object cursor and a field name; a NULL field reads the cursor's own value
 * (an array element, a map entry). The required form fails when the field is absent; the
 * pl_json_opt_* form returns 0 and leaves *out untouched when the field is absent or null, and
 * 1 when it read it; the required form returns 0. Every function that can fail returns -1
 * with err set.
 *
 *     pl_json_doc *doc = pl_json_open(path, err);
 *     pl_json root = pl_json_root(doc), devs;
 *     if (pl_json_check_format(&root, "placer-cluster/1", err) < 0 ||
 *         pl_json_array(&root, "devices", &devs, err) < 0) goto fail;
 *     for (size_t i = 0; i < pl_json_len(&devs); i++) {
 *         pl_json d = pl_json_index(&devs, i);
 *         if (pl_json_quantity(&d, "memory_bytes", PL_UNIT_BYTES, &mem, err) < 0) goto fail;
 *     }
 *     pl_json_close(doc);
 *
 * Ownership and failure: a pl_json_doc is the caller's, closed by pl_json_close (NULL is fine);
 * every cursor and every string a getter gives points into it and dies with it. */
#ifndef PLACER_JSON_H
#define PLACER_JSON_H

#include <jansson.h>

#include "placer/common.h"

/* A parsed file: owns the jansson tree and the name used in messages. */
typedef struct pl_json_doc pl_json_doc;

typedef enum {
    PL_JSON_ROOT,
    PL_JSON_FIELD,   /* a field of a record, reached by name: its name may carry a unit */
    PL_JSON_ELEMENT, /* an array element */
    PL_JSON_ENTRY,   /* an entry of a map with free keys ("times_s": {"V100": ...}) */
} pl_json_step;

typedef struct pl_json {
    json_t *v;                /* NULL when the field is absent (or the parent is not an object) */
    const struct pl_json *up; /* NULL at the root */
    const char *key;          /* FIELD, ENTRY */
    size_t index;             /* ELEMENT */
    pl_json_step step;
    const char *file; /* for messages */
} pl_json;

/* Parses a file or a buffer (`name` is used in messages). A syntax error names the line and
 * column; duplicate keys in an object are refused. */
pl_json_doc *pl_json_open(const char *path, pl_err *err);
pl_json_doc *pl_json_parse(const char *buf, size_t len, const char *name, pl_err *err);
void pl_json_close(pl_json_doc *doc);
/* Writes v to path with jansson's dump flags, whole or not at all (pl_out): a failure leaves
 * path as it was and says why. Does not take v. */
int pl_json_save(const json_t *v, const char *path, size_t flags, pl_err *err);
pl_json pl_json_root(const pl_json_doc *doc);

/* ---- moving around (never fail: errors come when a value is read) ---- */
pl_json pl_json_at(const pl_json *obj, const char *field);
pl_json pl_json_index(const pl_json *arr, size_t i);
/* Elements of an array or members of an object; 0 for anything else. */
size_t pl_json_len(const pl_json *c);
/* Present and not null. */
bool pl_json_has(const pl_json *obj, const char *field);
/* Members of an object in file order, as ENTRY cursors:
 *     pl_json_iter it = {0}; pl_json e;
 *     while (pl_json_next(&obj, &it, &e)) use(e.key, &e); */
typedef struct pl_json_iter {
    void *it;
    bool started;
} pl_json_iter;
bool pl_json_next(const pl_json *obj, pl_json_iter *it, pl_json *member);

/* ---- errors ---- */
/* "$.nodes[3].name"; fields that are not identifiers are written $["a b"]. Returns buf. */
const char *pl_json_path(const pl_json *c, char *buf, size_t n);
/* Sets "FILE: PATH: MESSAGE" and returns -1. */
int pl_json_fail(const pl_json *c, pl_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A short rendering of a value for "got ..." ("\"16\"", "true", "an array"). Returns buf. */
const char *pl_json_describe(const json_t *v, char *buf, size_t n);
/* The name in `names` closest to `word` (edit distance, ignoring case and the order of '_'
 * separated words), or NULL when none is close enough to be a likely misspelling. */
const char *pl_json_closest(const char *word, const char *const *names, size_t n);

/* ---- checks ---- */
/* The root is an object whose "format" is `format` ("placer-taskgraph/1"). Explains a missing
 * field, another placer format, and another version of this one. */
int pl_json_check_format(const pl_json *root, const char *format, pl_err *err);
/* The value is an object with no field outside `allowed` (NULL-terminated); an unknown field
 * is named, with the closest allowed name as a suggestion. */
int pl_json_check_fields(const pl_json *obj, const char *const *allowed, pl_err *err);

/* ---- typed getters ---- */
int pl_json_string(const pl_json *obj, const char *field, const char **out, pl_err *err);
int pl_json_int(const pl_json *obj, const char *field, int64_t *out, pl_err *err);
int pl_json_number(const pl_json *obj, const char *field, double *out, pl_err *err);
int pl_json_bool(const pl_json *obj, const char *field, bool *out, pl_err *err);
/* *out is a cursor on the array or object; it points to obj, so it must not outlive it. */
int pl_json_array(const pl_json *obj, const char *field, pl_json *out, pl_err *err);
int pl_json_object(const pl_json *obj, const char *field, pl_json *out, pl_err *err);
/* A quantity in SI base units (bytes, seconds, ...; see pl_parse_quantity): a string with a
 * unit ("16 GiB"), or a plain number when the field's name carries the unit
 * (memory_bytes: 17179869184). A name carries its unit when the unit word is the whole name
 * or its last '_' word: bytes, *_bytes; *_s; *_Bps; flops, *_flops; *_flops_per_s;
 * *_usd_per_hour. Array elements and map entries take their container's name. Negative and
 * non-finite values are refused. */
int pl_json_quantity(const pl_json *obj, const char *field, pl_unit unit, double *out, pl_err *err);

/* Refuses v outside [lo, hi] as "WHAT of V UNIT is smaller/larger than LIMIT UNIT: almost
 * certainly a unit mistake; HINT" ("WHAT of zero is not allowed" for 0), at obj's `field`, or
 * at obj itself when field is NULL; hint may be NULL. 0 when in range. */
int pl_json_check_range(const pl_json *obj, const char *field, double v, double lo, double hi,
                        pl_unit unit, const char *what, const char *hint, pl_err *err);
/* The magnitudes the cluster and catalogue readers share: outside them a figure is almost
 * certainly a unit mistake (design.md §6: a unit-less bandwidth once produced badly
 * unbalanced splits). */
#define PL_LINK_BW_MIN 1e3      /* bytes/s: 1 kB/s */
#define PL_LINK_BW_MAX 1e13     /* 10 TB/s: above NVLink4's 900 GB/s by an order of magnitude */
#define PL_LINK_LATENCY_MAX 1.0 /* s: a satellite hop is 0.6 s */
#define PL_USD_PER_HOUR_MAX 1e5 /* a price */

int pl_json_opt_string(const pl_json *obj, const char *field, const char **out, pl_err *err);
int pl_json_opt_int(const pl_json *obj, const char *field, int64_t *out, pl_err *err);
int pl_json_opt_number(const pl_json *obj, const char *field, double *out, pl_err *err);
int pl_json_opt_bool(const pl_json *obj, const char *field, bool *out, pl_err *err);
int pl_json_opt_array(const pl_json *obj, const char *field, pl_json *out, pl_err *err);
int pl_json_opt_object(const pl_json *obj, const char *field, pl_json *out, pl_err *err);
int pl_json_opt_quantity(const pl_json *obj, const char *field, pl_unit unit, double *out,
                         pl_err *err);

#endif
