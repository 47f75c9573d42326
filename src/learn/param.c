/* param.c: parameters, their initialisation, Adam, gradient clipping and the weights file
 * (docs/learn.md). */
#include "placer/learn.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void pl_params_init(pl_params *s)
{
    memset(s, 0, sizeof *s);
}

void pl_params_free(pl_params *s)
{
    for (int i = 0; i < s->n; i++) {
        pl_param *p = s->p[i];
        free(p->name);
        free(p->w);
        free(p->g);
        free(p->m);
        free(p->v);
        free(p);
    }
    free(s->p);
    pl_params_init(s);
}

pl_param *pl_params_add(pl_params *s, const char *name, int rows, int cols)
{
    PL_ASSERT(rows > 0 && cols > 0 && !pl_params_find(s, name));
    pl_param *p = pl_calloc(1, sizeof *p);
    size_t n = (size_t)rows * cols;
    p->name = pl_strdup(name);
    p->rows = rows;
    p->cols = cols;
    p->w = pl_calloc(n, sizeof(float));
    p->g = pl_calloc(n, sizeof(float));
    p->m = pl_calloc(n, sizeof(float));
    p->v = pl_calloc(n, sizeof(float));
    pl_grow((void **)&s->p, &s->cap, s->n, sizeof *s->p);
    s->p[s->n++] = p;
    return p;
}

pl_param *pl_params_find(const pl_params *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->p[i]->name, name)) return s->p[i];
    return NULL;
}

static long param_size(const pl_param *p)
{
    return (long)p->rows * p->cols;
}

long pl_params_count(const pl_params *s)
{
    long n = 0;
    for (int i = 0; i < s->n; i++)
        n += param_size(s->p[i]);
    return n;
}

void pl_param_xavier(pl_param *p, uint64_t *rng)
{
    double a = sqrt(6.0 / (p->rows + p->cols));
    for (long i = 0; i < param_size(p); i++)
        p->w[i] = (float)((2 * pl_rng_uniform(rng) - 1) * a);
}

void pl_param_fill(pl_param *p, float x)
{
    for (long i = 0; i < param_size(p); i++)
        p->w[i] = x;
}

void pl_params_zero_grad(pl_params *s)
{
    for (int i = 0; i < s->n; i++)
        memset(s->p[i]->g, 0, (size_t)param_size(s->p[i]) * sizeof(float));
}

double pl_params_clip(pl_params *s, double max_norm)
{
    PL_ASSERT(max_norm > 0);
    double ss = 0;
    for (int i = 0; i < s->n; i++)
        for (long k = 0; k < param_size(s->p[i]); k++)
            ss += (double)s->p[i]->g[k] * s->p[i]->g[k];
    double norm = sqrt(ss);
    if (norm <= max_norm) return norm;
    float f = (float)(max_norm / norm);
    for (int i = 0; i < s->n; i++)
        for (long k = 0; k < param_size(s->p[i]); k++)
            s->p[i]->g[k] *= f;
    return norm;
}

pl_adam pl_adam_default(float lr)
{
    return (pl_adam){.lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 0};
}

void pl_adam_step(pl_adam *a, pl_params *s)
{
    a->step++;
    /* the bias corrections in double: beta2^t for t in the thousands loses digits in float */
    float c1 = (float)(1 - pow(a->beta1, (double)a->step));
    float c2 = (float)(1 - pow(a->beta2, (double)a->step));
    for (int i = 0; i < s->n; i++) {
        pl_param *p = s->p[i];
        for (long k = 0; k < param_size(p); k++) {
            float g = p->g[k];
            p->m[k] = a->beta1 * p->m[k] + (1 - a->beta1) * g;
            p->v[k] = a->beta2 * p->v[k] + (1 - a->beta2) * g * g;
            p->w[k] -= a->lr * (p->m[k] / c1) / (sqrtf(p->v[k] / c2) + a->eps);
        }
    }
}

/* ---- bounds ---- */

/* Weight k of p, when it is NaN, infinite or beyond PL_WEIGHT_MAX: -1 with err saying so. */
static int check_weight(const pl_param *p, long k, float w, pl_err *err)
{
    if (!isfinite(w)) return pl_err_set(err, "parameter %s: element %ld is not finite", p->name, k);
    if (fabsf(w) > PL_WEIGHT_MAX)
        return pl_err_set(err,
                          "parameter %s: element %ld is %g, beyond the bound of +-%g on a weight "
                          "(a diverged training)",
                          p->name, k, (double)w, PL_WEIGHT_MAX);
    return 0;
}

int pl_params_check(const pl_params *s, pl_err *err)
{
    for (int i = 0; i < s->n; i++)
        for (long k = 0; k < param_size(s->p[i]); k++)
            if (check_weight(s->p[i], k, s->p[i]->w[k], err) < 0) return -1;
    return 0;
}

/* ---- the weights file ---- */

#define WTS_MAGIC "PLNNWTS"
#define WTS_VERSION 1u

/* Little-endian whatever the host: the file is the same on every machine. */
static void put_u32(FILE *f, uint32_t x)
{
    unsigned char b[4] = {x & 0xff, (x >> 8) & 0xff, (x >> 16) & 0xff, x >> 24};
    fwrite(b, 1, 4, f);
}

static void put_f32(FILE *f, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    put_u32(f, u);
}

int pl_params_save(const pl_params *s, const char *path, pl_err *err)
{
    pl_out o;
    if (pl_out_open(&o, path, err) < 0) return -1;
    fwrite(WTS_MAGIC, 1, 8, o.f); /* the 7 letters and their NUL */
    put_u32(o.f, WTS_VERSION);
    put_u32(o.f, (uint32_t)s->n);
    for (int i = 0; i < s->n; i++) {
        const pl_param *p = s->p[i];
        put_u32(o.f, (uint32_t)strlen(p->name));
        fputs(p->name, o.f);
        put_u32(o.f, (uint32_t)p->rows);
        put_u32(o.f, (uint32_t)p->cols);
        for (long k = 0; k < param_size(p); k++)
            put_f32(o.f, p->w[k]);
    }
    return pl_out_commit(&o, err);
}

/* A cursor over the file's bytes; every read checks what is left. */
typedef struct rd {
    const unsigned char *b;
    size_t len, at;
} rd;

static int get_u32(rd *r, uint32_t *x)
{
    if (r->len - r->at < 4) return -1;
    const unsigned char *b = r->b + r->at;
    *x = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    r->at += 4;
    return 0;
}

/* Checks parameter i's header (name, shape) against p; 0, or -1 with the problem in err. */
static int load_header(rd *r, const pl_param *p, int i, pl_err *err)
{
    uint32_t nlen, rows, cols;
    if (get_u32(r, &nlen) < 0 || r->len - r->at < nlen)
        return pl_err_set(err, "parameter %d (%s): file ends inside the name", i, p->name);
    const char *name = (const char *)r->b + r->at;
    r->at += nlen;
    if (nlen != strlen(p->name) || memcmp(name, p->name, nlen))
        return pl_err_set(err, "parameter %d: named \"%.*s\", expected \"%s\"", i,
                          (int)(nlen > 200 ? 200 : nlen), name, p->name);
    if (get_u32(r, &rows) < 0 || get_u32(r, &cols) < 0)
        return pl_err_set(err, "parameter %s: file ends inside the shape", p->name);
    if (rows != (uint32_t)p->rows || cols != (uint32_t)p->cols)
        return pl_err_set(err, "parameter %s: shape %ux%u, expected %dx%d", p->name, rows, cols,
                          p->rows, p->cols);
    if ((r->len - r->at) / 4 < (size_t)param_size(p))
        return pl_err_set(err, "parameter %s: file ends inside the weights", p->name);
    return 0;
}

/* Checks the whole file into w[i] (one array per parameter) before anything of s changes. */
static int load_all(rd *r, const pl_params *s, float **w, pl_err *err)
{
    uint32_t version, count;
    if (r->len < 8 || memcmp(r->b, WTS_MAGIC, 8))
        return pl_err_set(err, "offset 0: not a placer weights file (no \"%s\" magic)", WTS_MAGIC);
    r->at = 8;
    if (get_u32(r, &version) < 0 || get_u32(r, &count) < 0)
        return pl_err_set(err, "header: file ends inside the header");
    if (version != WTS_VERSION)
        return pl_err_set(err, "header: version %u, this placer reads %u", version, WTS_VERSION);
    if (count != (uint32_t)s->n)
        return pl_err_set(err, "header: %u parameters, expected %d", count, s->n);
    for (int i = 0; i < s->n; i++) {
        if (load_header(r, s->p[i], i, err) < 0) return -1;
        for (long k = 0; k < param_size(s->p[i]); k++) {
            uint32_t u = 0;
            get_u32(r, &u);
            memcpy(&w[i][k], &u, 4);
            if (check_weight(s->p[i], k, w[i][k], err) < 0) return -1;
        }
    }
    if (r->at != r->len)
        return pl_err_set(err, "offset %zu: %zu bytes after the last parameter", r->at,
                          r->len - r->at);
    return 0;
}

int pl_params_load(pl_params *s, const char *path, pl_err *err)
{
    size_t len;
    char *buf = pl_read_file(path, &len, err);
    if (!buf) return -1;
    rd r = {(const unsigned char *)buf, len, 0};
    float **w = pl_calloc(s->n ? s->n : 1, sizeof *w);
    for (int i = 0; i < s->n; i++)
        w[i] = pl_malloc((size_t)param_size(s->p[i]) * sizeof(float));
    int rc = load_all(&r, s, w, err);
    if (rc < 0) pl_err_prefix(err, "%s", path);
    for (int i = 0; i < s->n; i++) {
        if (rc == 0) memcpy(s->p[i]->w, w[i], (size_t)param_size(s->p[i]) * sizeof(float));
        free(w[i]);
    }
    free(w);
    free(buf);
    return rc;
}
