/* moirai_instance.c: reads MOIRAI's benchmark instances (../shared/benchmarks/README.md) into
 * a graph and a cluster (docs/moirai.md). Each transfer's device × device times become the
 * graph's given transfer times (pl_graph_add_xfer_time, keyed by device name), exactly as a
 * placer-taskgraph/1 file gives them, so the cost model has one source of transfer times.
 *
 * Times and memories stay in the instance's own units: the cost table and the simulator only
 * add and compare them, so "seconds" and "bytes" are labels here. Each transfer becomes its
 * own tensor with one reader, so the simulator's once-per-(tensor, device) sending is MOIRAI's
 * once-per-edge communication. */
#include "placer/place.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct rd {
    const char *path;
    pl_err *err;
    pl_graph *g;
    int D;
    int max_id;
    int *op_of_id; /* task id -> op, -1 for non-tasks */
} rd;

static int bad(rd *r, const char *what, int i)
{
    return pl_err_set(r->err, "%s: %s (entry %d)", r->path, what, i);
}

/* A finite, non-negative number. */
static int num(rd *r, json_t *v, double *out, const char *what, int i)
{
    if (!json_is_number(v)) return bad(r, what, i);
    *out = json_number_value(v);
    return isfinite(*out) && *out >= 0 ? 0 : bad(r, what, i);
}

static int task_op(rd *r, json_t *id, int i)
{
    if (!json_is_integer(id)) return bad(r, "an id is not an integer", i);
    json_int_t v = json_integer_value(id);
    if (v < 0 || v > r->max_id || r->op_of_id[v] < 0) return bad(r, "an edge names no task", i);
    return r->op_of_id[v];
}

static int read_devices(rd *r, json_t *root, pl_cluster *c)
{
    json_t *devs = json_object_get(root, "devices");
    r->D = (int)json_array_size(devs);
    if (r->D < 1) return pl_err_set(r->err, "%s: no devices", r->path);
    for (int k = 0; k < r->D; k++) {
        char name[32];
        snprintf(name, sizeof name, "d%d", k);
        int d = pl_cluster_add_device(c, name, PL_DEV_ACCEL, name);
        double mem;
        if (num(r, json_object_get(json_array_get(devs, k), "memory"), &mem, "bad device memory",
                k) < 0)
            return -1;
        c->devs[d].memory_bytes = mem;
        for (int p = 0; p < PL_PREC_COUNT; p++)
            c->devs[d].peak_flops_per_s[p] = 1; /* never used: every time is given */
        c->devs[d].mem_bandwidth_Bps = 1;
    }
    /* Routes only to make the cluster complete: the pair table replaces their times. */
    for (int a = 0; a < r->D; a++)
        for (int b = 0; b < r->D; b++)
            if (a != b) pl_cluster_set_link(c, a, b, INFINITY, 0, false);
    return pl_cluster_finalize(c, r->err);
}

static int read_task(rd *r, json_t *t, int i)
{
    char name[32];
    json_t *id = json_object_get(t, "id"), *times = json_object_get(t, "time");
    if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > 1 << 24)
        return bad(r, "a task id is not a small non-negative integer", i);
    int tid = (int)json_integer_value(id);
    if ((int)json_array_size(times) != r->D)
        return bad(r, "a task's time has not one per device", i);
    snprintf(name, sizeof name, "t%d", tid);
    int op = pl_graph_add_op(r->g, name, "Task", "");
    for (int k = 0; k < r->D; k++) {
        double s;
        char dev[32];
        if (num(r, json_array_get(times, k), &s, "bad task time", i) < 0) return -1;
        snprintf(dev, sizeof dev, "d%d", k);
        pl_op_add_time(r->g, op, dev, s);
    }
    double mem;
    if (num(r, json_object_get(t, "memory"), &mem, "bad task memory", i) < 0) return -1;
    r->g->ops[op].extra_memory_bytes = mem;
    r->g->ops[op].cls = PL_CLASS_UNKNOWN;
    r->g->ops[op].flags |= PL_OP_COST_GIVEN;
    if (tid > r->max_id) {
        r->op_of_id = pl_realloc(r->op_of_id, (size_t)(tid + 1) * sizeof *r->op_of_id);
        for (int j = r->max_id + 1; j <= tid; j++)
            r->op_of_id[j] = -1;
        r->max_id = tid;
    }
    if (r->op_of_id[tid] >= 0) return bad(r, "a task id is repeated", i);
    r->op_of_id[tid] = op;
    return 0;
}

/* One zero-byte tensor from op a to op b. */
static int edge_tensor(rd *r, int a, int b, const char *name)
{
    int t = pl_graph_tensor(r->g, name);
    int64_t zero = 0;
    pl_tensor_set_shape(&r->g->tensors[t], PL_DT_UINT8, 1, &zero);
    r->g->tensors[t].flags |= PL_TENSOR_BYTES_ONLY;
    pl_op_add_output(r->g, a, t);
    pl_op_add_input(r->g, b, t);
    return t;
}

/* A transfer's D × D matrix as given times of tensor t; the diagonal (same device) is no
 * transfer at all. */
static int read_matrix(rd *r, json_t *m, int t, int i)
{
    int D = r->D;
    if ((int)json_array_size(m) != D) return bad(r, "a transfer's time is not D x D", i);
    for (int p = 0; p < D; p++) {
        json_t *row = json_array_get(m, p);
        if ((int)json_array_size(row) != D) return bad(r, "a transfer's time is not D x D", i);
        for (int q = 0; q < D; q++) {
            double s;
            char a[32], b[32];
            if (num(r, json_array_get(row, q), &s, "bad transfer time", i) < 0) return -1;
            if (p == q) continue;
            snprintf(a, sizeof a, "d%d", p), snprintf(b, sizeof b, "d%d", q);
            pl_graph_add_xfer_time(r->g, t, a, b, s);
        }
    }
    return 0;
}

/* Transfers first (tensors 0..n_x-1), then untimed edges, which carry zero bytes and no
 * given time (so they cost nothing on the instance's free links). */
static int read_edges(rd *r, json_t *root, int *n_edges)
{
    json_t *xs = json_object_get(root, "transfers"), *un = json_object_get(root, "untimed_edges");
    int nx = (int)json_array_size(xs), nu = (int)json_array_size(un);
    for (int i = 0; i < nx; i++) {
        json_t *x = json_array_get(xs, i), *m = json_object_get(x, "time");
        int a = task_op(r, json_object_get(x, "src"), i), b;
        if (a < 0 || (b = task_op(r, json_object_get(x, "dst"), i)) < 0) return -1;
        char name[48];
        snprintf(name, sizeof name, "x%lld",
                 (long long)json_integer_value(json_object_get(x, "id")));
        if (edge_tensor(r, a, b, name) != i) return bad(r, "a transfer id is repeated", i);
        if (read_matrix(r, m, i, i) < 0) return -1;
    }
    for (int i = 0; i < nu; i++) {
        json_t *e = json_array_get(un, i);
        int a = task_op(r, json_array_get(e, 0), i), b;
        if (a < 0 || (b = task_op(r, json_array_get(e, 1), i)) < 0) return -1;
        char name[48];
        snprintf(name, sizeof name, "u%d", i);
        edge_tensor(r, a, b, name);
    }
    *n_edges = nx + nu;
    return 0;
}

/* Every successor listed by a task is an edge and vice versa: a transcription that lost one
 * would silently drop a precedence. */
static int check_succ(rd *r, json_t *tasks, int n_edges)
{
    int listed = 0;
    for (size_t i = 0; i < json_array_size(tasks); i++) {
        json_t *t = json_array_get(tasks, i), *succ = json_object_get(t, "succ");
        int a = r->op_of_id[json_integer_value(json_object_get(t, "id"))];
        for (size_t j = 0; j < json_array_size(succ); j++, listed++) {
            int b = task_op(r, json_array_get(succ, j), (int)i);
            if (b < 0) return -1;
            bool found = false;
            for (int e = 0; e < r->g->ops[a].n_outputs && !found; e++) {
                const pl_tensor *x = &r->g->tensors[r->g->ops[a].outputs[e]];
                found = x->n_consumers > 0 && x->consumers[0] == b;
            }
            if (!found) return bad(r, "a task lists a successor with no transfer or edge", (int)i);
        }
    }
    return listed == n_edges ? 0
                             : pl_err_set(r->err, "%s: %d edges but %d successors listed", r->path,
                                          n_edges, listed);
}

static int read_all(rd *r, json_t *root, pl_cluster *c)
{
    if (read_devices(r, root, c) < 0) return -1;
    json_t *tasks = json_object_get(root, "tasks");
    if (json_array_size(tasks) < 1) return pl_err_set(r->err, "%s: no tasks", r->path);
    for (size_t i = 0; i < json_array_size(tasks); i++)
        if (read_task(r, json_array_get(tasks, i), (int)i) < 0) return -1;
    int n_edges = 0;
    if (read_edges(r, root, &n_edges) < 0) return -1;
    if (pl_graph_finalize(r->g, r->path, r->err) < 0) return -1;
    return check_succ(r, tasks, n_edges);
}

int pl_moirai_load(const char *path, pl_graph **g, pl_cluster **c, pl_err *err)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    *g = NULL, *c = NULL;
    if (!root) return pl_err_set(err, "%s:%d: %s", path, je.line, je.text);
    json_t *name = json_object_get(root, "name");
    rd r = {path, err, pl_graph_new(json_is_string(name) ? json_string_value(name) : path),
            0,    -1,  NULL};
    pl_cluster *cl = pl_cluster_new(json_is_string(name) ? json_string_value(name) : path);
    int rc = read_all(&r, root, cl);
    json_decref(root);
    free(r.op_of_id);
    if (rc < 0) {
        pl_graph_free(r.g), pl_cluster_free(cl);
        return -1;
    }
    r.g->path = pl_strdup(path);
    *g = r.g, *c = cl;
    return 0;
}
