/* plan_io.c: placer-plan/1 files (docs/plans.md). Writing records identity and predictions;
 * reading checks that the plan belongs to this model and cluster and that it is complete, so
 * the simulator never sees a half-made or foreign plan. */
#include "placer/json.h"
#include "placer/plan.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing ---- */

/* `sha` is the file's digest ("" for objects built in code, which have no path either). */
static json_t *identity(const char *path, const char *name, const char *sha)
{
    json_t *o = json_object();
    if (name && *name) json_object_set_new(o, "name", json_string(name));
    if (!path) return o;
    json_object_set_new(o, "path", json_string(path));
    if (sha[0]) json_object_set_new(o, "sha256", json_string(sha));
    return o;
}

static json_t *order_json(const pl_plan *p, const pl_graph *g, const pl_cluster *c)
{
    json_t *o = json_object();
    for (int d = 0; d < p->n_devs; d++) {
        if (p->order_off[d] == p->order_off[d + 1]) continue;
        json_t *a = json_array();
        for (int k = p->order_off[d]; k < p->order_off[d + 1]; k++)
            json_array_append_new(a, json_string(g->ops[p->order[k]].name));
        json_object_set_new(o, c->devs[d].name, a);
    }
    return o;
}

/* Edges in the simulator's tie order: priority (NaN last), tensor index, the reader's device,
 * its topological position. A file listing them so reproduces the same transfer order. */
typedef struct edge_key {
    double prio;
    int tensor, dev, topo, e;
} edge_key;

static int cmp_edge_key(const void *a, const void *b)
{
    const edge_key *x = a, *y = b;
    if (x->prio != y->prio) return x->prio < y->prio ? -1 : 1;
    if (x->tensor != y->tensor) return x->tensor - y->tensor;
    if (x->dev != y->dev) return x->dev - y->dev;
    return x->topo - y->topo;
}

/* `prio` NULL: every edge ties (the order of unlisted edges on load). */
static edge_key *sorted_edges(const pl_plan *p, const pl_graph *g, const double *prio)
{
    edge_key *v = pl_malloc((g->n_edges + 1) * sizeof *v);
    for (int e = 0; e < g->n_edges; e++) {
        const pl_edge *ed = &g->edges[e];
        double pr = prio && !isnan(prio[e]) ? prio[e] : INFINITY;
        v[e] = (edge_key){pr, ed->tensor, p->dev[ed->dst], g->topo_pos[ed->dst], e};
    }
    pl_sort(v, g->n_edges, sizeof *v, cmp_edge_key);
    return v;
}

/* [[tensor, reader op], ...] in priority order: every edge, so nothing is left to defaults. */
static json_t *xfer_order_json(const pl_plan *p, const pl_graph *g)
{
    edge_key *v = sorted_edges(p, g, p->xfer_priority);
    json_t *a = json_array();
    for (int i = 0; i < g->n_edges; i++) {
        const pl_edge *ed = &g->edges[v[i].e];
        json_array_append_new(
            a, json_pack("[s,s]", g->tensors[ed->tensor].name, g->ops[ed->dst].name));
    }
    free(v);
    return a;
}

int pl_plan_save(const pl_plan *p, const pl_graph *g, const pl_cluster *c, const char *path,
                 pl_err *err)
{
    const char *model_sha = pl_graph_sha256(g, err);
    if (!model_sha) return -1;
    int rc = 0;
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string("placer-plan/1"));
    json_object_set_new(root, "model", identity(g->path, g->name, model_sha));
    json_object_set_new(root, "cluster", identity(c->path, c->name, c->sha256));
    json_object_set_new(root, "algorithm", json_string(p->algo));
    json_object_set_new(root, "contention", json_string(pl_contention_name(p->contention)));
    json_object_set_new(root, "search_s", json_real(p->search_s));
    if (p->predicted_makespan_s > 0)
        json_object_set_new(root, "predicted",
                            json_pack("{s:f}", "makespan_s", p->predicted_makespan_s));
    json_t *place = json_object(); /* in topological order, so the file reads like the model */
    for (int t = 0; t < g->n_ops; t++) {
        int op = g->topo[t];
        json_object_set_new(place, g->ops[op].name, json_string(c->devs[p->dev[op]].name));
    }
    json_object_set_new(root, "placement", place);
    if (p->order) json_object_set_new(root, "order", order_json(p, g, c));
    if (p->xfer_priority && p->n_edges == g->n_edges)
        json_object_set_new(root, "transfer_order", xfer_order_json(p, g));
    rc = pl_json_save(root, path, JSON_INDENT(1) | JSON_REAL_PRECISION(12), err);
    json_decref(root);
    return rc;
}

/* ---- reading ---- */

/* The plan's sha256 for `field` ("model"/"cluster") must match `have`, the digest of the file
 * we were given; a plan without identity (hand-written) is accepted. */
static int check_identity(const pl_json *root, const char *field, const char *path,
                          const char *have, pl_err *err)
{
    pl_json id = {0};
    const char *sha = NULL;
    if (pl_json_opt_object(root, field, &id, err) < 0) return -1;
    if (!id.v) return 0;
    static const char *const allowed[] = {"name", "path", "sha256", NULL};
    if (pl_json_check_fields(&id, allowed, err) < 0 ||
        pl_json_opt_string(&id, "sha256", &sha, err) < 0)
        return -1;
    if (!sha || !path || !have[0] || strcmp(sha, have) == 0) return 0;
    pl_json at = pl_json_at(&id, "sha256");
    return pl_json_fail(&at, err,
                        "this plan was made for another %s (sha256 %.12s...); %s has sha256 "
                        "%.12s...: make a new plan for it",
                        field, sha, path, have);
}

static int device_of(const pl_json *at, const pl_cluster *c, int *out, pl_err *err)
{
    const char *name;
    if (pl_json_string(at, NULL, &name, err) < 0) return -1;
    *out = pl_cluster_find(c, name);
    if (*out >= 0) return 0;
    char list[256] = "";
    for (int d = 0; d < c->n_devs && strlen(list) < sizeof list - 40; d++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", d ? ", " : "",
                 c->devs[d].name);
    return pl_json_fail(at, err, "no device '%s' in cluster %s (devices: %s)", name, c->name, list);
}

static int op_of(const pl_json *at, const char *name, const pl_graph *g, int *out, pl_err *err)
{
    *out = pl_graph_find_op(g, name);
    if (*out >= 0) return 0;
    return pl_json_fail(at, err, "the model has no op named '%s'", name);
}

static int read_placement(const pl_json *root, const pl_graph *g, const pl_cluster *c, pl_plan *p,
                          pl_err *err)
{
    pl_json place, e, dflt = pl_json_at(root, "default_device");
    int def = -1;
    if (dflt.v && device_of(&dflt, c, &def, err) < 0) return -1;
    if (pl_json_object(root, "placement", &place, err) < 0) return -1;
    for (int i = 0; i < g->n_ops; i++)
        p->dev[i] = -1;
    pl_json_iter it = {0};
    while (pl_json_next(&place, &it, &e)) {
        int op, d;
        if (op_of(&e, e.key, g, &op, err) < 0 || device_of(&e, c, &d, err) < 0) return -1;
        p->dev[op] = d;
    }
    int missing = 0, first = -1;
    for (int t = 0; t < g->n_ops; t++) {
        int op = g->topo[t];
        if (p->dev[op] >= 0) continue;
        if (def >= 0)
            p->dev[op] = def;
        else if (!missing++)
            first = op;
    }
    if (missing)
        return pl_json_fail(&place, err,
                            "op '%s' is not placed (%d op%s missing): place every op, or give "
                            "\"default_device\"",
                            g->ops[first].name, missing, missing == 1 ? "" : "s");
    return 0;
}

/* Each device's list must hold exactly the ops placed on it, each once. */
static int read_order(const pl_json *root, const pl_graph *g, const pl_cluster *c, pl_plan *p,
                      pl_err *err)
{
    pl_json ord = {0}, e;
    if (pl_json_opt_object(root, "order", &ord, err) < 0) return -1;
    if (!ord.v) return 0;
    int *seen = pl_calloc(g->n_ops ? g->n_ops : 1, sizeof *seen),
        *seq = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof *seq);
    int n = 0, rc = 0;
    pl_json_iter it = {0};
    while (rc == 0 && pl_json_next(&ord, &it, &e)) {
        int d = pl_cluster_find(c, e.key);
        pl_json list;
        if (d < 0)
            rc = pl_json_fail(&e, err, "no device '%s' in cluster %s", e.key, c->name);
        else if (pl_json_array(&e, NULL, &list, err) < 0)
            rc = -1;
        for (size_t k = 0; rc == 0 && k < pl_json_len(&list); k++) {
            pl_json x = pl_json_index(&list, k);
            const char *name;
            int op;
            if (pl_json_string(&x, NULL, &name, err) < 0 || op_of(&x, name, g, &op, err) < 0)
                rc = -1;
            else if (seen[op]++)
                rc = pl_json_fail(&x, err, "op '%s' is listed twice", name);
            else if (p->dev[op] != d)
                rc = pl_json_fail(&x, err, "op '%s' is placed on %s, not %s", name,
                                  c->devs[p->dev[op]].name, e.key);
            else
                seq[n++] = op;
        }
    }
    for (int i = 0; rc == 0 && i < g->n_ops; i++)
        if (!seen[i])
            rc = pl_json_fail(&ord, err, "the order leaves out op '%s' (on %s)", g->ops[i].name,
                              c->devs[p->dev[i]].name);
    if (rc == 0) pl_plan_set_order(p, seq);
    free(seen);
    free(seq);
    return rc;
}

/* One [tensor, reader op] pair: the graph edge it names, or -1 with the message. */
static int read_pair(const pl_json *x, const pl_graph *g, pl_err *err)
{
    const char *tn, *on;
    int op;
    if (!json_is_array(x->v) || json_array_size(x->v) != 2)
        return pl_json_fail(x, err, "want a [tensor, reader op] pair");
    pl_json a = pl_json_index(x, 0), b = pl_json_index(x, 1);
    if (pl_json_string(&a, NULL, &tn, err) < 0 || pl_json_string(&b, NULL, &on, err) < 0) return -1;
    int t = pl_graph_find_tensor(g, tn);
    if (t < 0) return pl_json_fail(&a, err, "the model has no tensor named '%s'", tn);
    if (op_of(&b, on, g, &op, err) < 0) return -1;
    int e = pl_plan_edge(g, g->tensors[t].producer, op, t);
    if (e < 0)
        return pl_json_fail(x, err,
                            "['%s', '%s'] is not a graph edge: op '%s' does not read tensor '%s' "
                            "made by another op",
                            tn, on, on, tn);
    return e;
}

/* Listed edges get their position as priority; the others follow in the tie order (tensor,
 * reader's device, reader's topological position). */
static int read_xfer_order(const pl_json *root, const pl_graph *g, pl_plan *p, pl_err *err)
{
    pl_json list = {0};
    if (pl_json_opt_array(root, "transfer_order", &list, err) < 0) return -1;
    if (!list.v) return 0;
    double *prio = pl_malloc((g->n_edges + 1) * sizeof *prio);
    for (int e = 0; e < g->n_edges; e++)
        prio[e] = NAN;
    int rc = 0, n = (int)pl_json_len(&list);
    for (int k = 0; rc == 0 && k < n; k++) {
        pl_json x = pl_json_index(&list, k);
        int e = read_pair(&x, g, err);
        if (e < 0)
            rc = -1;
        else if (!isnan(prio[e]))
            rc = pl_json_fail(&x, err, "the edge ['%s', '%s'] is listed twice",
                              g->tensors[g->edges[e].tensor].name, g->ops[g->edges[e].dst].name);
        else
            prio[e] = k;
    }
    if (rc == 0) {
        edge_key *v = sorted_edges(p, g, NULL);
        for (int i = 0; i < g->n_edges; i++)
            if (isnan(prio[v[i].e])) prio[v[i].e] = n++;
        free(v);
        pl_plan_set_xfer_priority(p, g->n_edges, prio);
    }
    free(prio);
    return rc;
}

static int read_plan(const pl_json *root, const pl_graph *g, const pl_cluster *c, pl_plan *p,
                     pl_err *err)
{
    static const char *const allowed[] = {
        "format",      "model",          "cluster",   "algorithm", "contention",
        "search_s",    "predicted",      "placement", "order",     "default_device",
        "description", "transfer_order", NULL};
    const char *algo = "hand-written", *cont = NULL, *model_sha;
    pl_json pred = {0};
    if (pl_json_check_format(root, "placer-plan/1", err) < 0 ||
        pl_json_check_fields(root, allowed, err) < 0 || !(model_sha = pl_graph_sha256(g, err)) ||
        check_identity(root, "model", g->path, model_sha, err) < 0 ||
        check_identity(root, "cluster", c->path, c->sha256, err) < 0 ||
        pl_json_opt_string(root, "algorithm", &algo, err) < 0 ||
        pl_json_opt_string(root, "contention", &cont, err) < 0 ||
        pl_json_opt_quantity(root, "search_s", PL_UNIT_SECONDS, &p->search_s, err) < 0 ||
        pl_json_opt_object(root, "predicted", &pred, err) < 0)
        return -1;
    if (pred.v && pl_json_opt_quantity(&pred, "makespan_s", PL_UNIT_SECONDS,
                                       &p->predicted_makespan_s, err) < 0)
        return -1;
    if (cont && pl_contention_parse(cont, &p->contention) < 0) {
        pl_json at = pl_json_at(root, "contention");
        return pl_json_fail(&at, err, "unknown contention model '%s' (ports, pair or none)", cont);
    }
    snprintf(p->algo, sizeof p->algo, "%s", algo);
    if (read_placement(root, g, c, p, err) < 0 || read_order(root, g, c, p, err) < 0) return -1;
    return read_xfer_order(root, g, p, err);
}

pl_plan *pl_plan_load(const char *path, const pl_graph *g, const pl_cluster *c, pl_err *err)
{
    pl_json_doc *doc = pl_json_open(path, err);
    if (!doc) return NULL;
    pl_json root = pl_json_root(doc);
    pl_plan *p = pl_plan_new(g->n_ops, c->n_devs);
    int rc = read_plan(&root, g, c, p, err);
    pl_json_close(doc);
    if (rc == 0 && pl_plan_check_silicon(g, c, p->dev, "plan", err) < 0)
        rc = pl_err_prefix(err, "%s: $.placement", path);
    if (rc == 0 && pl_plan_check(p, g, c, err) < 0) rc = pl_err_prefix(err, "%s: $.order", path);
    if (rc < 0) {
        pl_plan_free(p);
        return NULL;
    }
    return p;
}
