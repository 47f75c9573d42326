/* common.c: errors, checked allocation, files and directories, timing and formatting. */
#include "placer/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int pl_err_set(pl_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int pl_err_prefix(pl_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    char prefix[PL_ERR_MAX], old[PL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    char joined[2 * PL_ERR_MAX + 2];
    snprintf(joined, sizeof joined, "%s: %s", prefix, old);
    snprintf(err->msg, sizeof err->msg, "%.*s", PL_ERR_MAX - 1, joined);
    return -1;
}

static void oom(size_t n)
{
    fprintf(stderr, "placer: out of memory (allocating %zu bytes)\n", n);
    abort();
}

void *pl_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *pl_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size);
    return p;
}

void *pl_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *pl_strdup(const char *s)
{
    return pl_strndup(s ? s : "", strlen(s ? s : ""));
}

char *pl_strndup(const char *s, size_t n)
{
    char *d = pl_malloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

void pl_grow(void **arr, int *cap, int need, size_t size)
{
    if (need < *cap) return;
    int c = *cap ? *cap : 4;
    while (c <= need)
        c *= 2;
    *arr = pl_realloc(*arr, (size_t)c * size);
    memset((char *)*arr + (size_t)*cap * size, 0, (size_t)(c - *cap) * size);
    *cap = c;
}

int pl_err_read(pl_err *err, const char *path, int errnum)
{
    return pl_err_set(err, "%s: cannot read: %s", path,
                      errnum == EISDIR ? "a folder, not a file" : strerror(errnum));
}

char *pl_read_file(const char *path, size_t *len, pl_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        pl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = pl_malloc(cap + 1);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            cap *= 2;
            buf = pl_realloc(buf, cap + 1);
        }
    }
    int bad = ferror(f) ? errno : 0;
    fclose(f);
    if (bad) {
        free(buf);
        pl_err_read(err, path, bad);
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

void pl_assert_fail(const char *what, const char *file, int line)
{
    fprintf(stderr, "placer: internal check failed at %s:%d: %s\n", file, line, what);
    abort();
}

double pl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

const char *pl_fmt_bytes(double b, char *buf, size_t n)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4)
        b /= 1024, u++;
    if (u == 0)
        snprintf(buf, n, "%.0f B", b);
    else
        snprintf(buf, n, "%.2f %s", b, unit[u]);
    return buf;
}

const char *pl_fmt_count(double x, char *buf, size_t n)
{
    static const char *unit[] = {"", "K", "M", "G", "T", "P"};
    int u = 0;
    while (x >= 1000 && u < 5)
        x /= 1000, u++;
    if (u == 0)
        snprintf(buf, n, "%.0f", x);
    else
        snprintf(buf, n, "%.2f %s", x, unit[u]);
    return buf;
}

/* ---- string map: open addressing with linear probing, FNV-1a hash ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void pl_strmap_init(pl_strmap *m)
{
    memset(m, 0, sizeof *m);
}

void pl_strmap_free(pl_strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

int pl_strmap_get(const pl_strmap *m, const char *key)
{
    if (!m->cap) return -1;
    for (size_t i = hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return -1;
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    }
}

static void strmap_insert(pl_strmap *m, const char *key, int val)
{
    size_t i = hash_str(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
}

void pl_strmap_put(pl_strmap *m, const char *key, int val)
{
    if ((m->n + 1) * 2 > m->cap) { /* keep load under 1/2: probes stay short */
        pl_strmap old = *m;
        m->cap = old.cap ? old.cap * 2 : 64;
        m->keys = pl_calloc(m->cap, sizeof *m->keys);
        m->vals = pl_calloc(m->cap, sizeof *m->vals);
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++)
            if (old.keys[i]) strmap_insert(m, old.keys[i], old.vals[i]);
        free(old.keys);
        free(old.vals);
    }
    strmap_insert(m, key, val);
}

/* The first mkdir that fails for another reason than EEXIST says why (EROFS, EACCES): the
 * ones after it fail only with ENOENT, which would hide it. */
int pl_mkdir_p(const char *dir, pl_err *err)
{
    char *p = pl_strdup(dir);
    int first = 0;
    for (char *c = p + 1;; c++)
        if (*c == '/' || !*c) {
            char end = *c;
            *c = 0;
            if (mkdir(p, 0777) < 0 && errno != EEXIST && !first) first = errno;
            if (!(*c = end)) break;
        }
    struct stat st;
    int rc = 0;
    if (stat(p, &st) < 0)
        rc = pl_err_set(err, "%s: cannot create the directory: %s", dir,
                        strerror(first ? first : errno));
    else if (!S_ISDIR(st.st_mode))
        rc = pl_err_set(err, "%s: cannot create the directory: not a directory", dir);
    free(p);
    return rc;
}

int pl_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pl_median(double *v, int n)
{
    if (n <= 0) return 0;
    pl_sort(v, (size_t)n, sizeof *v, pl_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

char *pl_file_stem(const char *path, const char *dflt)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path ? path : dflt;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    else if (len > 5 && strcmp(base + len - 5, ".onnx") == 0)
        len -= 5;
    return pl_strndup(base, len);
}
