/* units.c: quantities with units ("25 GB/s", "50ms", "16 GiB", "$3.06/h").
 *
 * A unit-less bandwidth once produced badly unbalanced splits (design.md §6), so the parser
 * works out which kind of quantity the text is before looking at what the caller wanted:
 * that lets it say "'50 GB' is a size, not a time" instead of a vague "bad unit". */
#include "placer/common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define N_UNITS (PL_UNIT_USD_PER_HOUR + 1)

static const struct {
    const char *name;    /* the SI unit results are in */
    const char *kind;    /* for "is a size, not a time" */
    const char *example; /* for "expected a size like '16 GiB'" */
    const char *unit;    /* for "the unit is missing: write e.g. '16 GiB'" */
    const char *units;   /* the units accepted, for "unknown unit" messages */
} kinds[N_UNITS] = {
    [PL_UNIT_BYTES] = {"bytes", "a size", "16 GiB", "GiB",
                       "B, kB, MB, GB, TB, KiB, MiB, GiB, TiB; b, Mb, Gb for bits"},
    [PL_UNIT_SECONDS] = {"seconds", "a time", "50 ms", "ms", "ns, us, ms, s, min, h"},
    [PL_UNIT_BYTES_PER_S] = {"bytes/s", "a bandwidth", "25 GB/s", "GB/s",
                             "B/s, MB/s, GB/s, MiB/s, Gb/s, Gbps"},
    [PL_UNIT_FLOPS] = {"flops", "a FLOP count", "4.1 GFLOP", "GFLOP", "FLOP, MFLOP, GFLOP, TFLOP"},
    [PL_UNIT_FLOPS_PER_S] = {"flop/s", "a compute rate", "19.5 TFLOP/s", "TFLOP/s",
                             "GFLOP/s, TFLOP/s, TFLOPS"},
    [PL_UNIT_USD_PER_HOUR] = {"USD/h", "a price per hour", "0.90 USD/h", "USD/h",
                              "USD/h, USD/hour, $/h"},
};

const char *pl_unit_name(pl_unit unit)
{
    return (unsigned)unit < N_UNITS ? kinds[unit].name : "?";
}

/* ---- the number ---- */

/* Length of a decimal number at s: [+-] digits [. digits] [e [+-] digits]. Hex and "inf"
 * are not numbers here (strtod would take them). An 'e' not followed by digits is left for
 * the unit, so "5 EB" would not be misread as an exponent. */
static size_t number_len(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-') i++;
    while (isdigit((unsigned char)s[i]))
        i++, digits++;
    if (s[i] == '.') {
        i++;
        while (isdigit((unsigned char)s[i]))
            i++, digits++;
    }
    if (!digits) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
    }
    return i;
}

static bool is_non_finite_word(const char *s)
{
    if (*s == '+' || *s == '-') s++;
    return strncasecmp(s, "inf", 3) == 0 || strncasecmp(s, "nan", 3) == 0;
}

/* ---- the unit: text → (kind, scale) ---- */

static bool one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return true;
    return false;
}

static bool time_unit(const char *u, double *scale)
{
    static const struct {
        const char *names[6];
        double scale;
    } t[] = {
        {{"ns", "nsec", NULL}, 1e-9},
        {{"us", "usec", "\xC2\xB5s", "\xCE\xBCs", NULL}, 1e-6}, /* micro sign, Greek mu */
        {{"ms", "msec", NULL}, 1e-3},
        {{"s", "sec", "secs", "second", "seconds", NULL}, 1},
        {{"min", "mins", "minute", "minutes", NULL}, 60},
        {{"h", "hr", "hrs", "hour", "hours", NULL}, 3600},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
        if (one_of(u, t[k].names)) return *scale = t[k].scale, true;
    return false;
}

/* k/K M G T P (powers of 1000) or Ki Mi Gi Ti Pi (powers of 1024); none is scale 1. */
static const char *prefix(const char *u, double *scale, bool *binary)
{
    static const char letters[] = "KMGTP";
    const char *p = strchr(letters, *u == 'k' ? 'K' : *u);
    *scale = 1;
    *binary = false;
    if (!*u || !p) return u;
    int n = (int)(p - letters) + 1;
    *binary = u[1] == 'i';
    *scale = pow(*binary ? 1024 : 1000, n);
    return u + 1 + *binary;
}

static bool per_second(const char *s)
{
    static const char *const names[] = {"/s", "/sec", "ps", NULL};
    return one_of(s, names);
}

/* "B", "bytes", "b", "bits" after a prefix, optionally followed by a per-second suffix. */
static bool data_unit(const char *u, double scale, pl_unit *kind, double *out)
{
    static const struct {
        const char *name;
        double bytes;
    } base[] = {{"bytes", 1}, {"byte", 1}, {"bits", 0.125}, {"bit", 0.125}, {"B", 1}, {"b", 0.125}};
    for (size_t k = 0; k < sizeof base / sizeof base[0]; k++) {
        size_t n = strlen(base[k].name);
        if (strncmp(u, base[k].name, n) != 0) continue;
        const char *rest = u + n;
        if (!*rest)
            *kind = PL_UNIT_BYTES;
        else if (per_second(rest))
            *kind = PL_UNIT_BYTES_PER_S;
        else
            return false;
        *out = scale * base[k].bytes;
        return true;
    }
    return false;
}

/* "FLOPs" is a count and "FLOPS" a rate, as papers write them; "FLOP/s" is unambiguous. */
static bool flop_unit(const char *u, double scale, pl_unit *kind, double *out)
{
    static const char *const counts[] = {"flop", "flops", NULL};
    static const char *const rates[] = {"flop/s", "flops/s", "flop/sec", NULL};
    char low[16];
    size_t n = strlen(u);
    if (n >= sizeof low) return false;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)u[i]);
    if (strcmp(u, "FLOPS") == 0 || one_of(low, rates))
        *kind = PL_UNIT_FLOPS_PER_S;
    else if (one_of(low, counts))
        *kind = PL_UNIT_FLOPS;
    else
        return false;
    *out = scale;
    return true;
}

static bool usd_unit(const char *u)
{
    static const char *const names[] = {"usd/h",  "usd/hr", "usd/hour", "$/h",   "$/hr",
                                        "$/hour", "/h",     "/hr",      "/hour", NULL};
    char low[16];
    size_t n = strlen(u);
    if (n >= sizeof low) return false;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)u[i]);
    /* "/h" alone only follows a leading '$' ("$3.06/h"); the caller strips that '$'. */
    return one_of(low, names);
}

/* Classifies a unit; returns false when it is none that placer knows. */
static bool classify(const char *u, bool dollar, pl_unit *kind, double *scale)
{
    if (dollar || usd_unit(u)) {
        *kind = PL_UNIT_USD_PER_HOUR;
        *scale = 1;
        return usd_unit(u) && (dollar || u[0] != '/');
    }
    if (time_unit(u, scale)) return *kind = PL_UNIT_SECONDS, true;
    bool binary;
    double p;
    const char *rest = prefix(u, &p, &binary);
    if (data_unit(rest, p, kind, scale)) return true;
    return !binary && flop_unit(rest, p, kind, scale);
}

/* ---- the whole quantity ---- */

static int fail(pl_err *err, const char *text, const char *problem, pl_unit want)
{
    return pl_err_set(err, "\"%.80s\": %s; expected %s like \"%s\" (units: %s)", text, problem,
                      kinds[want].kind, kinds[want].example, kinds[want].units);
}

/* Copies the unit text with surrounding blanks removed; false when it does not fit. */
static bool trim_unit(const char *s, char *out, size_t n)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t len = strlen(s);
    while (len && isspace((unsigned char)s[len - 1]))
        len--;
    if (len >= n) return false;
    memcpy(out, s, len);
    out[len] = 0;
    return true;
}

/* Splits "  $3.06 /h " into its number text and unit text; returns the problem, or NULL. */
static const char *split(const char *text, bool *dollar, char num[64], char unit[32])
{
    const char *s = text;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s) return "empty";
    *dollar = *s == '$';
    s += *dollar;
    if (is_non_finite_word(s)) return "not a finite number";
    size_t n = number_len(s);
    if (!n) return "not a number with a unit";
    if (n >= 64) return "number too long";
    memcpy(num, s, n);
    num[n] = 0;
    return trim_unit(s + n, unit, 32) ? NULL : "unknown unit";
}

int pl_parse_quantity(const char *text, pl_unit want, double *out, pl_err *err)
{
    if ((unsigned)want >= N_UNITS) return pl_err_set(err, "internal error: unit %d", (int)want);
    if (!text) text = "";
    char num[64], unit[32];
    bool dollar = false;
    const char *problem = split(text, &dollar, num, unit);
    if (problem) return fail(err, text, problem, want);
    if (!*unit)
        return dollar ? pl_err_set(err, "\"%.80s\": the unit is missing: write e.g. \"$%s/h\"",
                                   text, num)
                      : pl_err_set(err, "\"%.80s\": the unit is missing: write e.g. \"%s %s\"",
                                   text, num, kinds[want].unit);
    pl_unit kind;
    double scale;
    if (!classify(unit, dollar, &kind, &scale)) {
        char what[64];
        snprintf(what, sizeof what, "unknown unit \"%s\"", unit);
        return fail(err, text, what, want);
    }
    if (kind != want)
        return pl_err_set(err, "\"%.80s\" is %s, not %s", text, kinds[kind].kind, kinds[want].kind);
    double v = strtod(num, NULL) * scale;
    if (!isfinite(v)) return fail(err, text, "not a finite number", want);
    if (v < 0)
        return pl_err_set(err, "\"%.80s\" is negative; %s must be >= 0", text, kinds[want].kind);
    *out = v == 0 ? 0 : v; /* no -0 */
    return 0;
}

int pl_parse_int(const char *text, long long lo, long long hi, long long *out)
{
    if (!text) return -1;
    const char *digits = text + (text[0] == '-');
    if (!isdigit((unsigned char)*digits)) return -1; /* strtoll would skip spaces and '+' */
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end || errno == ERANGE || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int pl_env_seconds(const char *name, double *out, pl_err *err)
{
    const char *e = getenv(name);
    if (!e || !*e) return 0;
    char *end;
    double v = strtod(e, &end);
    if (*end && pl_parse_quantity(e, PL_UNIT_SECONDS, &v, NULL) < 0) v = NAN;
    if (!(v > 0) || !isfinite(v))
        return pl_err_set(err, "%s='%s': wants a duration above 0 (30, 30s, 500ms)", name, e);
    *out = v;
    return 0;
}
