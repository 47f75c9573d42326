/* profile.c: measured op times for one device model, format placer-profile/1 (docs/cost.md).
 *
 *   {"format": "placer-profile/1", "device_model": "V100", "model_sha256": "…",
 *    "times_s": {"/conv1/Conv": 0.0012, "/relu/Relu": "35 us"}}
 *
 * "times_s" maps op names to times: a plain number is seconds (the field's name carries the
 * unit, as everywhere in placer's files), a string carries its own unit. */
#include "placer/cost.h"
#include "placer/json.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_FORMAT "placer-profile/1"

static const char *const profile_fields[] = {
    "format", "device_model", "model_sha256", "times_s", "producer", "description", NULL};

static bool is_sha256(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!isxdigit((unsigned char)s[n])) return false;
    return n == 64;
}

/* One "op": time entry. Plain numbers are seconds; strings go through the unit parser. */
static int read_header(const pl_json *root, pl_profile *p, pl_err *err)
{
    const char *model, *sha = "";
    if (pl_json_check_format(root, PROFILE_FORMAT, err) < 0 ||
        pl_json_check_fields(root, profile_fields, err) < 0 ||
        pl_json_string(root, "device_model", &model, err) < 0 ||
        pl_json_opt_string(root, "model_sha256", &sha, err) < 0)
        return -1;
    if (!*model) {
        pl_json at = pl_json_at(root, "device_model");
        return pl_json_fail(&at, err, "the device model must not be empty");
    }
    if (*sha && !is_sha256(sha)) {
        pl_json at = pl_json_at(root, "model_sha256");
        return pl_json_fail(&at, err, "expected 64 hexadecimal digits");
    }
    p->device_model = pl_strdup(model);
    p->model_sha256 = pl_strdup(sha);
    for (char *c = p->model_sha256; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return 0;
}

/* A measured time: pl_json_quantity has refused negatives, NaN and infinities; an op of more
 * than an hour is a unit mistake (1e300 s, minutes written as seconds x 1e6), not a kernel. */
static int read_time(const pl_json *e, double *v, pl_err *err)
{
    if (pl_json_quantity(e, NULL, PL_UNIT_SECONDS, v, err) < 0) return -1;
    if (*v > PL_PROFILE_MAX_OP_S)
        return pl_json_fail(e, err, "%g s is not a plausible op time (at most %g s)", *v,
                            PL_PROFILE_MAX_OP_S);
    return 0;
}

/* A profile that times nothing, or gives every op 0 s, is no measurement: refused rather than
 * taken as "every op is free". */
static int check_times(const pl_json *ops, const pl_profile *p, pl_err *err)
{
    if (p->n == 0) return pl_json_fail(ops, err, "times no op");
    for (int i = 0; i < p->n; i++)
        if (p->time_s[i] > 0) return 0;
    return pl_json_fail(ops, err, "every one of its %d times is 0 s: not a measurement", p->n);
}

static int read_ops(const pl_json *root, pl_profile *p, pl_err *err)
{
    pl_json ops, e;
    if (pl_json_object(root, "times_s", &ops, err) < 0) return -1;
    size_t n = pl_json_len(&ops);
    p->op_names = pl_calloc(n ? n : 1, sizeof *p->op_names);
    p->time_s = pl_calloc(n ? n : 1, sizeof *p->time_s);
    pl_json_iter it = {0};
    while (pl_json_next(&ops, &it, &e)) {
        double v;
        if (read_time(&e, &v, err) < 0) return -1;
        p->op_names[p->n] = pl_strdup(e.key);
        p->time_s[p->n] = v;
        /* The parser refuses duplicate keys, so each name is put once. */
        pl_strmap_put(&p->index, p->op_names[p->n], p->n);
        p->n++;
    }
    return check_times(&ops, p, err);
}

pl_profile *pl_profile_load(const char *path, pl_err *err)
{
    pl_json_doc *doc = pl_json_open(path, err);
    if (!doc) return NULL;
    pl_profile *p = pl_calloc(1, sizeof *p);
    pl_strmap_init(&p->index);
    p->path = pl_strdup(path);
    pl_json root = pl_json_root(doc);
    int rc = read_header(&root, p, err);
    if (rc == 0) rc = read_ops(&root, p, err);
    pl_json_close(doc);
    if (rc < 0) {
        pl_profile_free(p);
        return NULL;
    }
    return p;
}

void pl_profile_free(pl_profile *p)
{
    if (!p) return;
    pl_strmap_free(&p->index);
    for (int i = 0; i < p->n; i++)
        free(p->op_names[i]);
    free(p->op_names);
    free(p->time_s);
    free(p->path);
    free(p->device_model);
    free(p->model_sha256);
    free(p);
}

double pl_profile_lookup(const pl_profile *p, const char *op_name)
{
    int i = pl_strmap_get(&p->index, op_name);
    return i < 0 ? -1 : p->time_s[i];
}

int pl_profile_median(pl_profile *const *p, int n)
{
    if (n < 1 || n > PL_PROFILE_MEDIAN_MAX) return -1;
    for (int i = 0; i < p[0]->n; i++) {
        double t[PL_PROFILE_MEDIAN_MAX];
        int m = 0;
        for (int j = 0; j < n; j++) {
            double x = pl_profile_lookup(p[j], p[0]->op_names[i]);
            if (x >= 0) t[m++] = x;
        }
        p[0]->time_s[i] = pl_median(t, m); /* m >= 1: p[0] times the op */
    }
    return 0;
}

int pl_profile_ops_timed(const pl_profile *p, const pl_graph *g, int tenant)
{
    int n = 0;
    for (int op = 0; op < g->n_ops; op++) {
        const pl_op *o = &g->ops[op];
        if (tenant >= 0 && o->tenant != tenant) continue;
        n += pl_strmap_get(&p->index, pl_op_own_name(g, o)) >= 0;
    }
    return n;
}

/* ---- from measured node times ---- */

/* The op a node time belongs to, -1 when none. Unnamed nodes by position: placer reads nodes
 * in file order and names an unnamed one TYPE_k after its index k. */
static int op_of(const pl_graph *g, const pl_ort_node_time *t)
{
    if (t->nested) return -1;
    if (*t->name) return pl_strmap_get(&g->op_by_name, t->name);
    if (t->node_index < 0 || t->node_index >= g->n_ops) return -1;
    return strcmp(g->ops[t->node_index].type, t->op_type) ? -1 : t->node_index;
}

pl_profile *pl_profile_from_node_times(const pl_graph *g, const pl_ort_node_time *t, int n,
                                       const char *device_model, pl_profile_match *m, pl_err *err)
{
    const char *sha = pl_graph_sha256(g, err);
    if (!sha) return NULL;
    pl_profile_match none;
    if (!m) m = &none;
    memset(m, 0, sizeof *m);
    double *op_s = pl_malloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *op_s);
    for (int i = 0; i < g->n_ops; i++)
        op_s[i] = -1;
    for (int k = 0; k < n; k++) {
        int op = op_of(g, &t[k]);
        if (op < 0)
            m->n_unmatched += !t[k].nested;
        else
            op_s[op] = (op_s[op] < 0 ? 0 : op_s[op]) + t[k].mean_s;
    }
    pl_profile *p = pl_calloc(1, sizeof *p);
    pl_strmap_init(&p->index);
    p->device_model = pl_strdup(device_model);
    p->model_sha256 = pl_strdup(sha);
    p->op_names = pl_calloc(g->n_ops ? g->n_ops : 1, sizeof *p->op_names);
    p->time_s = pl_calloc(g->n_ops ? g->n_ops : 1, sizeof *p->time_s);
    for (int i = 0; i < g->n_ops; i++) {
        if (op_s[i] < 0) {
            m->n_missing++;
            m->n_constant += !strcmp(g->ops[i].type, "Constant");
            continue;
        }
        m->n_timed++, m->measured_s += op_s[i];
        p->op_names[p->n] = pl_strdup(g->ops[i].name);
        p->time_s[p->n] = op_s[i];
        pl_strmap_put(&p->index, p->op_names[p->n], p->n); /* op names are unique */
        p->n++;
    }
    free(op_s);
    return p;
}

int pl_profile_save(const pl_profile *p, const char *path, const char *description, pl_err *err)
{
    json_t *times = json_object();
    for (int i = 0; i < p->n; i++)
        json_object_set_new(times, p->op_names[i], json_real(p->time_s[i]));
    json_t *root =
        json_pack("{s:s, s:s}", "format", PROFILE_FORMAT, "device_model", p->device_model);
    if (*p->model_sha256) json_object_set_new(root, "model_sha256", json_string(p->model_sha256));
    json_object_set_new(root, "producer", json_string("placer profile 0.1"));
    if (description) json_object_set_new(root, "description", json_string(description));
    json_object_set_new(root, "times_s", times);
    int rc = pl_json_save(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6),
                          err);
    json_decref(root);
    return rc;
}
