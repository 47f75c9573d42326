/* ort.c: the onnxruntime client: the worker protocol (tools/ort_worker.js, docs/runtime.md)
 * over the child process of proc.c.
 *
 * Every request carries an id that the reply must repeat, so a stray line can never be taken
 * for the answer to a later request. When the worker dies, answers something that is not a
 * reply, or does not answer in time, the stream can no longer be trusted: the worker is killed
 * and the request fails with a message that says what happened and that its answer is lost.
 * It is not retried: a trial whose worker crashed is not a measurement. The next request, if
 * the caller makes one, starts a fresh worker with the same models loaded first; the failed
 * request's message does not say "restarted", because most callers stop there (issue 27).
 *
 * "In time" is per step, not per request: the worker announces every step of a request (a
 * model loaded, one inference request done) with a progress line, and each step has the
 * deadline (docs/runtime.md, "Deadlines"): the caller's, else $PLACER_ORT_DEADLINE, else 60 s
 * plus 60 s per GB of the models the step works on. A run of many requests is therefore never
 * taken for a stall, and a stalled worker (stopped, deadlocked, swapping) is found out within
 * one step's deadline, killed with SIGKILL and reaped. */
#include "placer/runtime.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct pl_ort {
    pl_proc p;
    char *node, *script, *modules;
    pl_ort_opts o;
    char **paths;   /* loaded models, reloaded by the next request after the worker was lost */
    char **devices; /* their devices (NULL: one after the other on one thread) */
    int *tenants;   /* their tenants (NULL: all 0) */
    int *threads;   /* their intra-op threads (NULL: the options') */
    int n_paths;
    long next_id;
    int restarts;
    bool restarting; /* starting (again): a failure now is not met by starting another */
    double load_s;
    double deadline_s;   /* of one step; 0: scaled to the models (step_deadline) */
    double loaded_bytes; /* of the loaded models' files: what a run's steps work on */
    bool cuda;           /* profiles ask for the CUDA execution provider (pl_ort_opts.ep) */
    int off_ep;          /* nodes of the last profile run on another provider, left out */
};

/* Bytes of the files, for the default deadline (a file that cannot be read counts 0: the
 * worker will say what is wrong with it). */
static double bytes_of(const char *const *paths, int n)
{
    double sum = 0;
    struct stat st;
    for (int i = 0; i < n; i++)
        if (paths[i] && stat(paths[i], &st) == 0) sum += (double)st.st_size;
    return sum;
}

/* The deadline of one step that works on `bytes` of models: loading them, or one inference
 * request. Loading a model and running it once both grow with its size; 60 s covers start-up
 * and the zoo's models with a margin of fifty times for a busy machine (docs/runtime.md,
 * "Deadlines", has the figures). */
static double step_deadline(const pl_ort *w, double bytes)
{
    return w->deadline_s > 0 ? w->deadline_s : 60 + 60 * bytes / 1e9;
}

/* $PLACER_ORT_DEADLINE: seconds, as a bare number ("30") or a duration ("30s", "500ms"). */
static int env_deadline(double *out, pl_err *err)
{
    return pl_env_seconds("PLACER_ORT_DEADLINE", out, err);
}

/* The caller's value, else the environment's, else placer's own file (pl_own_file); NULL
 * with err set when even that is missing. */
static char *pick(const char *given, const char *env, const char *installed, const char *in_tree,
                  pl_err *err)
{
    const char *e = getenv(env);
    if (given || (e && *e)) return pl_strdup(given ? given : e);
    char path[4096];
    return pl_own_file(installed, in_tree, path, sizeof path, err) < 0 ? NULL : pl_strdup(path);
}

static int request(pl_ort *w, json_t *msg, const char *what, double bytes, json_t **reply,
                   pl_err *err);

/* Waits for the greeting: the worker found onnxruntime-node and reads requests. */
static int spawn(pl_ort *w, pl_err *err)
{
    char *argv[] = {w->node, w->script, w->modules, NULL};
    if (pl_proc_start(&w->p, argv, NULL, "the onnxruntime worker",
                      " (set PLACER_NODE or put node on PATH)\n", err) < 0)
        return -1;
    json_t *r = NULL;
    int rc = request(w, NULL, "start", 0, &r, err);
    json_decref(r);
    return rc;
}

/* The worker is lost (died, stalled, broke the protocol): its process group is killed and
 * reaped, and err says how, with its last stderr, and that the request's answer is lost. The
 * worker is not started again here: the next request does it (revive), so that a caller that
 * stops at this failure pays for no new worker and is told nothing untrue. */
static int lost(pl_ort *w, const char *how, const char *what, pl_err *err)
{
    char tail[PL_PROC_TAIL], said[PL_PROC_TAIL + 32] = "";
    pl_proc_tail(&w->p, tail, sizeof tail);
    pl_proc_end(&w->p, false, 0.2, NULL, 0);
    if (*tail) snprintf(said, sizeof said, " (its stderr: %.700s)", tail);
    if (w->restarting) return pl_err_set(err, "%s%s", how, said);
    return pl_err_set(err, "%s%s; the answer to '%s' is lost", how, said, what);
}

/* Before a request to a worker that was lost: a fresh one with the same models loaded. */
static int revive(pl_ort *w, pl_err *err)
{
    pl_err e = {{0}};
    w->restarting = true;
    int rc = spawn(w, &e);
    if (rc == 0 && w->n_paths)
        rc = pl_ort_load_stages(w, (const char *const *)w->paths, (const char *const *)w->devices,
                                w->tenants, w->threads, w->n_paths, &e);
    w->restarting = false;
    if (rc == 0) return w->restarts++, 0;
    pl_proc_end(&w->p, false, 0, NULL, 0);
    return pl_err_set(
        err, "onnxruntime worker: starting it again (it was lost before) failed: %.600s", e.msg);
}

/* A progress line of request `id` (see the top of the file): its step into step. */
static bool is_progress(json_t *r, long id, char *step, size_t n)
{
    json_t *pv = json_object_get(r, "progress"), *idv = json_object_get(r, "id");
    if (!json_is_string(pv) || !json_is_integer(idv) || json_integer_value(idv) != id) return false;
    snprintf(step, n, "after %s", json_string_value(pv));
    return true;
}

/* The worker said nothing for a whole step: it is killed (lost() ends it with SIGKILL and
 * reaps it) and the message says which worker, which request and how far it got. */
static void stalled(pl_ort *w, const char *what, const char *step, double deadline, pl_err *err)
{
    char msg[PL_ERR_MAX];
    snprintf(msg, sizeof msg,
             "onnxruntime worker (pid %d) stalled: nothing from it for %g s in '%s' (%s), the "
             "deadline of one step (--deadline, $PLACER_ORT_DEADLINE); killed it",
             (int)w->p.pid, deadline, what, step);
    lost(w, msg, what, err);
}

/* Reads the reply to `what` and checks that it is one: a JSON object with "ok", and our id.
 * Progress lines before it restart the step's deadline. */
static json_t *read_reply(pl_ort *w, long id, const char *what, double deadline, pl_err *err)
{
    char *line = NULL, how[160], msg[PL_ERR_MAX], step[160] = "before its first step";
    json_t *r = NULL;
    for (;;) {
        pl_proc_rc rc = pl_proc_line(&w->p, deadline, &line);
        if (rc == PL_PROC_TIMEOUT) return stalled(w, what, step, deadline, err), NULL;
        if (rc == PL_PROC_EOF) {
            pl_proc_end(&w->p, false, 1.0, how, sizeof how); /* keeps the stderr tail */
            snprintf(msg, sizeof msg, "onnxruntime worker %s while running '%s' (%s)", how, what,
                     step);
            lost(w, msg, what, err);
            return NULL;
        }
        json_error_t je;
        r = json_loads(line, 0, &je);
        if (!is_progress(r, id, step, sizeof step)) break;
        json_decref(r), free(line);
    }
    json_t *okv = r ? json_object_get(r, "ok") : NULL, *idv = r ? json_object_get(r, "id") : NULL;
    bool good = json_is_object(r) && json_is_boolean(okv) &&
                (id < 0 || (json_is_integer(idv) && json_integer_value(idv) == id));
    if (!good) {
        snprintf(msg, sizeof msg,
                 "onnxruntime worker sent a malformed reply to '%s' (%s): '%.120s'", what,
                 !r                      ? "not JSON"
                 : !json_is_boolean(okv) ? "no \"ok\""
                                         : "wrong id",
                 line);
        json_decref(r);
        free(line);
        lost(w, msg, what, err);
        return NULL;
    }
    free(line);
    return r;
}

/* Sends msg (NULL: none, only read the greeting; consumed) with a fresh id and returns the
 * reply in *reply; -1 with err set when the worker failed or answered {"ok": false}. */
static int request(pl_ort *w, json_t *msg, const char *what, double bytes, json_t **reply,
                   pl_err *err)
{
    *reply = NULL;
    if (w->p.pid <= 0 && (w->restarting || revive(w, err) < 0)) return json_decref(msg), -1;
    long id = -1;
    if (msg) {
        id = ++w->next_id;
        json_object_set_new(msg, "id", json_integer(id));
        char *line = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        int rc = pl_proc_send(&w->p, line);
        free(line);
        if (rc < 0) {
            char how[160], m[PL_ERR_MAX];
            pl_proc_end(&w->p, false, 1.0, how, sizeof how);
            snprintf(m, sizeof m, "onnxruntime worker %s before '%s' was sent", how, what);
            return lost(w, m, what, err);
        }
    }
    json_t *r = read_reply(w, id, what, step_deadline(w, bytes), err);
    if (!r) return -1;
    if (!json_is_true(json_object_get(r, "ok"))) {
        const char *e = json_string_value(json_object_get(r, "error"));
        pl_err_set(err, "onnxruntime worker: %s: %s", what, e ? e : "failed (no reason given)");
        json_decref(r);
        return -1;
    }
    *reply = r;
    return 0;
}

/* node, the worker script and its node_modules (docs/runtime.md, "Files"), and the deadline;
 * -1 when one cannot be found or is wrong. */
static int configure(pl_ort *w, pl_err *err)
{
    const char *node = getenv("PLACER_NODE");
    w->node = pl_strdup(w->o.node ? w->o.node : node && *node ? node : "node");
    w->script = pick(w->o.script, "PLACER_ORT_WORKER", "lib/placer/ort_worker.js",
                     "tools/ort_worker.js", err);
    w->modules = w->script ? pick(w->o.modules, "PLACER_ORT_MODULES", "lib/placer/node_modules",
                                  "build/npm/node_modules", err)
                           : NULL;
    if (w->o.ep && strcmp(w->o.ep, "cpu") && strcmp(w->o.ep, "cuda"))
        return pl_err_set(err, "onnxruntime worker: unknown execution provider '%s' (cpu or cuda)",
                          w->o.ep);
    w->cuda = w->o.ep && !strcmp(w->o.ep, "cuda");
    w->o.node = w->o.script = w->o.modules = w->o.ep = NULL; /* the caller's strings are not kept */
    if (!w->modules) return pl_err_prefix(err, "cannot start the onnxruntime worker");
    w->deadline_s = w->o.timeout_s;
    return w->deadline_s > 0 ? 0 : env_deadline(&w->deadline_s, err);
}

pl_ort *pl_ort_start(const pl_ort_opts *o, pl_err *err)
{
    pl_ort *w = pl_calloc(1, sizeof *w);
    if (o) w->o = *o;
    w->p = PL_PROC_NONE;
    if (configure(w, err) < 0) {
        pl_ort_stop(w);
        return NULL;
    }
    if (w->o.threads <= 0) w->o.threads = 1;
    if (w->o.int_high <= 0) w->o.int_high = 2;
    w->restarting = true; /* a worker that cannot start is not restarted */
    int rc = spawn(w, err);
    w->restarting = false;
    if (rc == 0) return w;
    pl_ort_stop(w);
    return NULL;
}

/* The fields every request that makes inputs or sessions carries. */
static json_int_t seed_of(const pl_ort *w)
{
    return w->o.seed ? (json_int_t)w->o.seed : 1;
}

static const char *optimize_of(const pl_ort *w)
{
    return w->o.no_optimize ? "disabled" : "all";
}

static json_t *strings_json(const char *const *v, int n)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_string(v[i]));
    return list;
}

static char **copy_strings(const char *const *v, int n)
{
    if (!v) return NULL;
    char **c = pl_calloc(n + 1, sizeof *c);
    for (int i = 0; i < n; i++)
        c[i] = pl_strdup(v[i]);
    return c;
}

static void free_strings(char **v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void forget_paths(pl_ort *w)
{
    free_strings(w->paths, w->n_paths), free_strings(w->devices, w->n_paths), free(w->tenants);
    free(w->threads);
    w->paths = w->devices = NULL, w->tenants = w->threads = NULL, w->n_paths = 0;
}

static json_t *ints_json(const int *v, int n)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_integer(v[i]));
    return list;
}

/* A copy of v[0..n), NULL for NULL. */
static int *copy_ints(const int *v, int n)
{
    if (!v) return NULL;
    int *c = pl_malloc(((size_t)n + 1) * sizeof *c);
    memcpy(c, v, (size_t)n * sizeof *c);
    return c;
}

/* Every stage names the same device: nothing can run beside anything, so the worker runs the
 * stages on its main thread as it runs a whole model; a device thread of its own cost 1-10 %
 * of a whole model's latency (bench_cores, docs/runtime.md "Cores"). */
static bool one_device(const char *const *devices, int n)
{
    for (int i = 1; i < n; i++)
        if (strcmp(devices[i], devices[0])) return false;
    return true;
}

int pl_ort_load_stages(pl_ort *w, const char *const *paths, const char *const *devices,
                       const int *tenants, const int *threads, int n, pl_err *err)
{
    for (int i = 0; tenants && i < n; i++)
        if (tenants[i] < 0) return pl_err_set(err, "stage %d: tenant %d is below 0", i, tenants[i]);
    for (int i = 0; threads && i < n; i++)
        if (threads[i] < 1) return pl_err_set(err, "stage %d: %d threads", i, threads[i]);
    json_t *msg = json_pack("{s:s, s:o, s:i, s:s}", "op", "load", "models", strings_json(paths, n),
                            "threads", w->o.threads, "optimize", optimize_of(w)),
           *r = NULL;
    if (devices && (tenants || !one_device(devices, n)))
        json_object_set_new(msg, "devices", strings_json(devices, n));
    if (tenants) json_object_set_new(msg, "tenants", ints_json(tenants, n));
    if (threads) json_object_set_new(msg, "stage_threads", ints_json(threads, n));
    double bytes = bytes_of(paths, n);
    int rc = request(w, msg, "load", bytes, &r, err);
    if (rc == 0) w->load_s = json_number_value(json_object_get(r, "load_s"));
    if (rc == 0) w->loaded_bytes = bytes;
    json_decref(r);
    if (rc < 0 || (const char *const *)w->paths == paths) return rc;
    forget_paths(w);
    w->paths = copy_strings(paths, n), w->devices = copy_strings(devices, n), w->n_paths = n;
    w->tenants = copy_ints(tenants, n), w->threads = copy_ints(threads, n);
    return 0;
}

int pl_ort_load_tenants(pl_ort *w, const char *const *paths, const char *const *devices,
                        const int *tenants, int n, pl_err *err)
{
    return pl_ort_load_stages(w, paths, devices, tenants, NULL, n, err);
}

int pl_ort_load_on(pl_ort *w, const char *const *paths, const char *const *devices, int n,
                   pl_err *err)
{
    return pl_ort_load_tenants(w, paths, devices, NULL, n, err);
}

int pl_ort_load(pl_ort *w, const char *const *paths, int n, pl_err *err)
{
    return pl_ort_load_on(w, paths, NULL, n, err);
}

/* One entry of a run reply's outputs: keyed by the worker's tensor key, with the tensor's own
 * name and tenant beside it (the key alone for a worker that gives neither). */
static void read_output(const char *key, json_t *v, pl_ort_output *o)
{
    json_t *name = json_object_get(v, "name");
    snprintf(o->name, sizeof o->name, "%s", json_is_string(name) ? json_string_value(name) : key);
    o->tenant = (int)json_integer_value(json_object_get(v, "tenant"));
    json_t *dims = json_object_get(v, "dims"), *first = json_object_get(v, "first");
    size_t k;
    json_t *x;
    json_array_foreach(dims, k, x) if (k < 8) o->dims[o->rank++] = json_integer_value(x);
    json_array_foreach(first, k, x) if (k < PL_ORT_FIRST) o->first[o->n_first++] =
        json_is_number(x) ? json_number_value(x) : NAN;
    o->checksum = json_number_value(json_object_get(v, "checksum"));
    o->finite = json_is_true(json_object_get(v, "finite"));
}

/* One [repeat][n_stages] matrix of the reply into out; false when its shape is wrong. */
static bool read_matrix(json_t *m, int repeat, int n_stages, double *out)
{
    if (json_array_size(m) != (size_t)repeat) return false;
    for (int i = 0; i < repeat; i++) {
        json_t *row = json_array_get(m, i);
        if (json_array_size(row) != (size_t)n_stages) return false;
        for (int s = 0; s < n_stages; s++)
            out[i * n_stages + s] = json_number_value(json_array_get(row, s));
    }
    return true;
}

/* Fills r from a run reply; -1 when a field is missing or of the wrong kind. */
static int read_result(json_t *rep, int repeat, pl_ort_result *r)
{
    json_t *lat = json_object_get(rep, "latency_s"), *st = json_object_get(rep, "stage_s");
    json_t *outs = json_object_get(rep, "outputs");
    if (json_array_size(lat) != (size_t)repeat || json_array_size(st) != (size_t)repeat ||
        !json_is_object(outs))
        return -1;
    r->repeat = repeat;
    r->n_stages = (int)json_array_size(json_array_get(st, 0));
    r->concurrent = json_is_true(json_object_get(rep, "concurrent"));
    size_t cells = (size_t)repeat * (r->n_stages ? r->n_stages : 1);
    r->latency_s = pl_calloc(repeat, sizeof *r->latency_s);
    r->stage_s = pl_calloc(cells, sizeof *r->stage_s);
    r->start_s = pl_calloc(cells, sizeof *r->start_s);
    r->end_s = pl_calloc(cells, sizeof *r->end_s);
    for (int i = 0; i < repeat; i++) {
        if (!json_is_number(json_array_get(lat, i))) return -1;
        r->latency_s[i] = json_number_value(json_array_get(lat, i));
    }
    if (!read_matrix(st, repeat, r->n_stages, r->stage_s) ||
        !read_matrix(json_object_get(rep, "start_s"), repeat, r->n_stages, r->start_s) ||
        !read_matrix(json_object_get(rep, "end_s"), repeat, r->n_stages, r->end_s))
        return -1;
    r->outputs = pl_calloc(json_object_size(outs) + 1, sizeof *r->outputs);
    const char *name;
    json_t *v;
    json_object_foreach(outs, name, v) read_output(name, v, &r->outputs[r->n_outputs++]);
    return 0;
}

int pl_ort_run(pl_ort *w, int repeat, int warmup, pl_ort_result *r, pl_err *err)
{
    return pl_ort_run_spaced(w, repeat, warmup, 0, r, err);
}

int pl_ort_run_spaced(pl_ort *w, int repeat, int warmup, double gap_s, pl_ort_result *r,
                      pl_err *err)
{
    *r = (pl_ort_result){0};
    if (repeat < 1) repeat = 1;
    if (!(gap_s >= 0 && gap_s <= 10))
        return pl_err_set(err, "a wait between requests of %g s is not in [0, 10]", gap_s);
    json_t *msg = json_pack("{s:s, s:s, s:i, s:i, s:I, s:i}", "op", "run", "inputs", "random",
                            "repeat", repeat, "warmup", warmup > 0 ? warmup : 0, "seed", seed_of(w),
                            "int_high", w->o.int_high),
           *rep = NULL;
    if (gap_s > 0) json_object_set_new(msg, "gap_s", json_real(gap_s));
    int rc = request(w, msg, "run", w->loaded_bytes, &rep, err);
    if (rc == 0 && read_result(rep, repeat, r) < 0) {
        pl_ort_result_free(r);
        rc = pl_err_set(err, "onnxruntime worker sent a malformed reply to 'run': it lacks "
                             "latency_s, stage_s, start_s, end_s (one per repetition) or "
                             "outputs");
    }
    json_decref(rep);
    return rc;
}

static json_t *file_json(const pl_ort_file *f)
{
    json_t *dims = json_array();
    for (int d = 0; d < f->rank; d++)
        json_array_append_new(dims, json_integer(f->dims[d]));
    return json_pack("{s:s, s:o, s:s}", "file", f->path, "dims", dims, "dtype", f->dtype);
}

/* One entry of "outputs" or "made"; false when a field is missing or of the wrong kind. */
static bool read_file_entry(const char *name, json_t *v, bool made, pl_ort_file *f)
{
    json_t *file = json_object_get(v, "file"), *dims = json_object_get(v, "dims");
    json_t *dtype = json_object_get(v, "dtype"), *x;
    if (!json_is_string(file) || !json_is_array(dims) || json_array_size(dims) > 8 ||
        !json_is_string(dtype))
        return false;
    f->name = pl_strdup(name), f->path = pl_strdup(json_string_value(file)), f->made = made;
    snprintf(f->dtype, sizeof f->dtype, "%s", json_string_value(dtype));
    size_t k;
    json_array_foreach(dims, k, x) f->dims[f->rank++] = json_integer_value(x);
    f->bytes = (size_t)json_integer_value(json_object_get(v, "bytes"));
    return true;
}

static int read_files(json_t *rep, pl_ort_file **out, int *n)
{
    json_t *outs = json_object_get(rep, "outputs"), *made = json_object_get(rep, "made"), *v;
    if (!json_is_object(outs) || !json_is_object(made) ||
        !json_is_number(json_object_get(rep, "run_s")))
        return -1;
    *out = pl_calloc(json_object_size(outs) + json_object_size(made) + 1, sizeof **out);
    const char *name;
    json_object_foreach(outs, name,
                        v) if (!read_file_entry(name, v, false, &(*out)[(*n)++])) return -1;
    json_object_foreach(made, name,
                        v) if (!read_file_entry(name, v, true, &(*out)[(*n)++])) return -1;
    return 0;
}

int pl_ort_run_files(pl_ort *w, const pl_ort_file *in, int n_in, const char *out_dir,
                     pl_ort_file **out, int *n_out, double *run_s, pl_err *err)
{
    *out = NULL, *n_out = 0, *run_s = 0;
    json_t *inputs = json_object();
    for (int i = 0; i < n_in; i++)
        json_object_set_new(inputs, in[i].name, file_json(&in[i]));
    json_t *msg = json_pack("{s:s, s:s, s:o, s:I, s:i}", "op", "run_files", "dir", out_dir,
                            "inputs", inputs, "seed", seed_of(w), "int_high", w->o.int_high),
           *rep = NULL;
    int rc = request(w, msg, "run_files", w->loaded_bytes, &rep, err);
    if (rc == 0 && read_files(rep, out, n_out) < 0) {
        pl_ort_files_free(*out, *n_out);
        *out = NULL, *n_out = 0;
        rc = pl_err_set(err, "onnxruntime worker sent a malformed reply to 'run_files': it "
                             "lacks run_s, or outputs and made (each with file, dims, dtype)");
    }
    if (rc == 0) *run_s = json_number_value(json_object_get(rep, "run_s"));
    json_decref(rep);
    return rc;
}

void pl_ort_files_free(pl_ort_file *f, int n)
{
    for (int i = 0; f && i < n; i++)
        free(f[i].name), free(f[i].path);
    free(f);
}

static bool read_diff(const char *name, json_t *v, pl_ort_diff *d)
{
    json_t *rel = json_object_get(v, "max_rel"), *abs = json_object_get(v, "max_abs");
    snprintf(d->name, sizeof d->name, "%s", name);
    d->max_rel = json_number_value(rel), d->max_abs = json_number_value(abs);
    d->finite = json_is_true(json_object_get(v, "finite"));
    return json_is_number(rel) && json_is_number(abs);
}

/* Fills r from a compare reply; -1 when a field is missing or of the wrong kind. */
static int read_compare(json_t *rep, pl_ort_compare_result *r)
{
    json_t *outs = json_object_get(rep, "outputs");
    if (!json_is_object(outs)) return -1;
    r->reference_s = json_number_value(json_object_get(rep, "reference_s"));
    r->stages_s = json_number_value(json_object_get(rep, "stages_s"));
    r->outputs = pl_calloc(json_object_size(outs) + 1, sizeof *r->outputs);
    r->finite = true;
    const char *name;
    json_t *v;
    json_object_foreach(outs, name, v)
    {
        pl_ort_diff *d = &r->outputs[r->n_outputs++];
        if (!read_diff(name, v, d)) return -1;
        r->finite &= d->finite;
        if (d->max_rel > r->max_rel) r->max_rel = d->max_rel;
    }
    return r->n_outputs ? 0 : -1;
}

int pl_ort_compare(pl_ort *w, const char *reference, const char *const *stages, int n,
                   pl_ort_compare_result *r, pl_err *err)
{
    *r = (pl_ort_compare_result){0};
    json_t *msg = json_pack("{s:s, s:s?, s:o, s:I, s:i, s:i, s:s}", "op", "compare", "reference",
                            reference, "stages", strings_json(stages, n), "seed", seed_of(w),
                            "int_high", w->o.int_high, "threads", w->o.threads, "optimize",
                            optimize_of(w)),
           *rep = NULL;
    int rc = request(w, msg, "compare", bytes_of(&reference, 1) + bytes_of(stages, n), &rep, err);
    if (rc == 0 && read_compare(rep, r) < 0) {
        pl_ort_compare_result_free(r);
        rc = pl_err_set(err, "onnxruntime worker sent a malformed reply to 'compare': it lacks "
                             "outputs (with max_rel and max_abs)");
    }
    json_decref(rep);
    return rc;
}

void pl_ort_compare_result_free(pl_ort_compare_result *r)
{
    if (!r) return;
    free(r->outputs);
    *r = (pl_ort_compare_result){0};
}

/* One entry of a profile reply; false when a field is missing or of the wrong kind. */
static bool read_node_time(json_t *v, pl_ort_node_time *t)
{
    json_t *name = json_object_get(v, "name"), *mean = json_object_get(v, "mean_s");
    json_t *idx = json_object_get(v, "node_index"), *type = json_object_get(v, "op_type");
    if (!json_is_string(name) || !json_is_number(mean) || !json_is_integer(idx)) return false;
    t->name = pl_strdup(json_string_value(name));
    t->node_index = (int)json_integer_value(idx);
    snprintf(t->op_type, sizeof t->op_type, "%s",
             json_is_string(type) ? json_string_value(type) : "");
    t->mean_s = json_number_value(mean);
    t->count = json_number_value(json_object_get(v, "count"));
    t->nested = json_is_true(json_object_get(v, "nested"));
    return true;
}

#define CUDA_EP "CUDAExecutionProvider"

/* A node of a CUDA profile that onnxruntime ran elsewhere: counted in w->off_ep, its provider
 * kept in `other` for the message when none ran on the GPU. A node that does not say is not
 * taken for a GPU one. */
static bool off_gpu(pl_ort *w, json_t *v, char *other, size_t n)
{
    const char *p = json_string_value(json_object_get(v, "provider"));
    if (!w->cuda || (p && !strcmp(p, CUDA_EP))) return false;
    if (!*other) snprintf(other, n, "%s", p && *p ? p : "an unnamed provider");
    return ++w->off_ep, true;
}

/* -1: malformed; -2: a CUDA profile of which no node ran on the GPU (err set). */
static int read_profile(pl_ort *w, json_t *rep, pl_ort_node_time **out, int *n, pl_err *err)
{
    json_t *nodes = json_object_get(rep, "nodes"), *v;
    if (!json_is_array(nodes)) return -1;
    *out = pl_calloc(json_array_size(nodes) + 1, sizeof **out);
    char other[64] = "";
    size_t k;
    json_array_foreach(nodes, k, v)
    {
        if (off_gpu(w, v, other, sizeof other)) continue;
        if (!read_node_time(v, &(*out)[*n])) return -1;
        ++*n;
    }
    if (!w->cuda || *n || !w->off_ep) return 0;
    pl_err_set(err,
               "onnxruntime ran none of the %d timed nodes on the GPU (%d on %s): it fell back to "
               "the CPU, and a GPU profile measured on the CPU is not one",
               w->off_ep, w->off_ep, other);
    return -2;
}

/* A CUDA session's failure as onnxruntime logged it (the library it could not load, the CUDA
 * error), which its exception leaves out: the worker's stderr, after the message. */
static void cuda_log(const pl_ort *w, pl_err *err)
{
    char tail[PL_PROC_TAIL], msg[PL_ERR_MAX];
    if (!*pl_proc_tail(&w->p, tail, sizeof tail)) return;
    snprintf(msg, sizeof msg, "%s", err->msg);
    pl_err_set(err, "%s; onnxruntime's log: %.600s", msg, tail);
}

static int profile(pl_ort *w, const char *model, int repeat, bool optimized, pl_ort_node_time **out,
                   int *n, pl_err *err)
{
    *out = NULL, *n = 0;
    /* onnxruntime's trace goes to a folder of placer's, a registered temporary: the worker is
     * killed with placer (SIGKILL) and could not remove one of its own */
    char dir[4096];
    if (pl_make_temp_dir("placer-prof", dir, sizeof dir, err) < 0)
        return pl_err_prefix(err, "onnxruntime profile");
    json_t *msg = json_pack("{s:s, s:s?, s:i, s:i, s:I, s:i, s:i, s:s, s:s, s:s}", "op", "profile",
                            "model", model, "repeat", repeat > 0 ? repeat : 1, "warmup", 1, "seed",
                            seed_of(w), "int_high", w->o.int_high, "threads", w->o.threads,
                            "optimize", optimized ? "all" : "disabled", "dir", dir, "ep",
                            w->cuda ? "cuda" : "cpu"),
           *rep = NULL;
    int rc = request(w, msg, "profile", bytes_of(&model, 1), &rep, err);
    pl_remove_tree(dir);
    if (rc < 0 && w->cuda && w->p.pid > 0) cuda_log(w, err);
    w->off_ep = 0;
    int read = rc == 0 ? read_profile(w, rep, out, n, err) : 0;
    if (read < 0) {
        pl_ort_node_times_free(*out, *n);
        *out = NULL, *n = 0;
        rc = read == -2 ? -1
                        : pl_err_set(err, "onnxruntime worker sent a malformed reply to 'profile': "
                                          "it lacks nodes (each with name, node_index and mean_s)");
    }
    json_decref(rep);
    return rc;
}

int pl_ort_profile(pl_ort *w, const char *model, int repeat, pl_ort_node_time **out, int *n,
                   pl_err *err)
{
    return profile(w, model, repeat, false, out, n, err);
}

int pl_ort_profile_optimized(pl_ort *w, const char *model, int repeat, pl_ort_node_time **out,
                             int *n, pl_err *err)
{
    return profile(w, model, repeat, true, out, n, err);
}

void pl_ort_node_times_free(pl_ort_node_time *t, int n)
{
    if (!t) return;
    for (int i = 0; i < n; i++)
        free(t[i].name);
    free(t);
}

int pl_ort_stats(pl_ort *w, long *loads, long *runs, pl_err *err)
{
    json_t *msg = json_pack("{s:s}", "op", "stats"), *rep = NULL;
    int rc = request(w, msg, "stats", 0, &rep, err);
    if (rc == 0) {
        json_t *l = json_object_get(rep, "loads"), *n = json_object_get(rep, "runs");
        if (!json_is_integer(l) || !json_is_integer(n))
            rc = pl_err_set(err, "onnxruntime worker sent a malformed reply to 'stats': no "
                                 "integer loads and runs");
        else
            *loads = (long)json_integer_value(l), *runs = (long)json_integer_value(n);
    }
    json_decref(rep);
    return rc;
}

int pl_ort_profile_off_ep(const pl_ort *w)
{
    return w ? w->off_ep : 0;
}

int pl_ort_pid(const pl_ort *w)
{
    return w ? (int)w->p.pid : -1;
}

int pl_ort_restarts(const pl_ort *w)
{
    return w ? w->restarts : 0;
}

double pl_ort_load_s(const pl_ort *w)
{
    return w ? w->load_s : 0;
}

void pl_ort_stop(pl_ort *w)
{
    if (!w) return;
    if (w->p.pid > 0) pl_proc_send(&w->p, "{\"op\":\"quit\"}");
    pl_proc_end(&w->p, false, 1.0, NULL, 0);
    forget_paths(w);
    free(w->node), free(w->script), free(w->modules), free(w);
}

void pl_ort_result_free(pl_ort_result *r)
{
    if (!r) return;
    free(r->latency_s), free(r->stage_s), free(r->start_s), free(r->end_s), free(r->outputs);
    *r = (pl_ort_result){0};
}
