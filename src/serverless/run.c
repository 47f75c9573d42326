/* run.c: a split run as serverless functions on this machine, tensors through Redis
 * (docs/serverless.md, "Running the slices for real").
 *
 * Each slice is a function: an onnxruntime worker process of its own (pl_ort) holding only its
 * stage. The worker reads its inputs from raw files and writes its outputs as raw files
 * (pl_ort_run_files); this file moves them between the files and Redis with hiredis, as a
 * function's handler would move them between its memory and the store. Files live in a private
 * shared-memory folder (pl_make_shm_dir: $PLACER_SHM_DIR, else /dev/shm; memory, as a
 * function's own), so the file copy costs a memcpy, not a disk write. Slices of one request run one
 * after the other in the manifest's order: a function is invoked when its predecessor is done, as
 * MOPAR's chain of slices is. */
#include "placer/runtime.h"
#include "placer/serverless.h"
#include "placer/split.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the store ---- */

struct pl_sl_store {
    redisContext *c;
    char url[160], host[128];
    int port;
    pl_proc srv;   /* the redis-server placer started (pid -1: none) */
    char dir[128]; /* its private folder (log and working directory) */
};

const char *pl_sl_store_url(const pl_sl_store *s)
{
    return s->url;
}

int pl_sl_store_pid(const pl_sl_store *s)
{
    return s ? s->srv.pid : -1;
}

/* "redis://HOST:PORT" into s->host and s->port. */
static int parse_url(const char *url, pl_sl_store *s, pl_err *err)
{
    const char *p = strncmp(url, "redis://", 8) == 0 ? url + 8 : NULL;
    const char *colon = p ? strrchr(p, ':') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || colon == p || (size_t)(colon - p) >= sizeof s->host || *end || port < 1 ||
        port > 65535)
        return pl_err_set(err, "store '%s': not a redis://HOST:PORT address", url);
    snprintf(s->host, sizeof s->host, "%.*s", (int)(colon - p), p);
    s->port = (int)port;
    snprintf(s->url, sizeof s->url, "redis://%s:%d", s->host, s->port);
    return 0;
}

/* How long a store may stay silent: at connect and at its first PING, $PLACER_STORE_TIMEOUT
 * (default 5 s: a Redis server answers PING in well under a millisecond, and across the
 * world in a few hundred); during a run, each command's reply may take up to RUN_TIMEOUT_S
 * (a tensor of hundreds of MB through a slow link). */
#define OPEN_TIMEOUT_S 5.0
#define RUN_TIMEOUT_S 30.0

/* s seconds as a timeval; beyond a day (PLACER_STORE_TIMEOUT=1e300) is a day, so the
 * conversion to time_t stays in range. */
static struct timeval seconds_tv(double s)
{
    s = fmin(fmax(s, 0), 86400);
    return (struct timeval){(time_t)s, (suseconds_t)((s - floor(s)) * 1e6)};
}

/* Whether hiredis's error is a wait that ran out (hiredis 0.14 says it with errno's text). */
static bool timed_out(const redisContext *c)
{
    return c && c->err == REDIS_ERR_IO &&
           (!strcmp(c->errstr, strerror(EAGAIN)) || !strcmp(c->errstr, strerror(ETIMEDOUT)));
}

/* Connects and checks that PING answers PONG within wait_s each; -1 with the reason in why,
 * which says how long nothing answered when that is what happened. */
static int connect_ping(pl_sl_store *s, double wait_s, char *why, size_t n)
{
    if (s->c) redisFree(s->c);
    s->c = redisConnectWithTimeout(s->host, s->port, seconds_tv(wait_s));
    if (!s->c || s->c->err) {
        if (timed_out(s->c))
            snprintf(why, n, "no answer within %g s from %s:%d (connect)", wait_s, s->host,
                     s->port);
        else
            snprintf(why, n, "%s", s->c ? s->c->errstr : "out of memory");
        return -1;
    }
    redisSetTimeout(s->c, seconds_tv(wait_s));
    redisReply *r = redisCommand(s->c, "PING");
    bool ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (!ok && !r && timed_out(s->c))
        snprintf(why, n,
                 "no answer within %g s from %s:%d (the connection was accepted; PING was "
                 "not answered)",
                 wait_s, s->host, s->port);
    else if (!ok)
        snprintf(why, n, "%s", !r ? s->c->errstr : r->str ? r->str : "no PONG to PING");
    if (r) freeReplyObject(r);
    if (ok) redisSetTimeout(s->c, seconds_tv(RUN_TIMEOUT_S));
    return ok ? 0 : -1;
}

/* A local port nobody listens on now (the kernel's pick; redis-server binds it just after). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* The end of the server's log, one line, for error messages. */
static void log_tail(const pl_sl_store *s, char *out, size_t n)
{
    char path[192], buf[4096];
    snprintf(path, sizeof path, "%s/redis.log", s->dir);
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = 0;
    char *last = strrchr(buf, '\n');
    snprintf(out, n, "%.400s", last ? last + 1 : buf);
}

static int start_server(pl_sl_store *s, pl_err *err)
{
    if (pl_make_temp_dir("placer-redis", s->dir, sizeof s->dir, err) < 0)
        return pl_err_prefix(err, "cannot start redis-server");
    s->port = free_port();
    snprintf(s->host, sizeof s->host, "127.0.0.1");
    snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
    char port[16], log[192];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    char *argv[] = {"redis-server", "--port", port,           "--bind", "127.0.0.1", "--save", "",
                    "--dir",        s->dir,   "--appendonly", "no",     NULL};
    if (pl_proc_start(&s->srv, argv, log, "redis-server", " (install it: make deps)\n", err) < 0)
        return -1;
    char why[256] = "", tail[512], how[64];
    for (double end = pl_now() + 10; pl_now() < end; usleep(20000)) {
        if (pl_proc_exited(&s->srv, how, sizeof how)) {
            log_tail(s, tail, sizeof tail);
            return pl_err_set(err, "redis-server (%s) %s at start: %s", s->url, how, tail);
        }
        if (connect_ping(s, 1, why, sizeof why) == 0) return 0;
    }
    return pl_err_set(err, "redis-server (%s, pid %d) did not answer PING within 10 s: %s", s->url,
                      s->srv.pid, why);
}

pl_sl_store *pl_sl_store_open(const char *url, pl_err *err)
{
    pl_sl_store *s = pl_calloc(1, sizeof *s);
    s->srv = PL_PROC_NONE;
    char why[256];
    double wait_s = OPEN_TIMEOUT_S;
    int rc = url ? parse_url(url, s, err) : start_server(s, err);
    if (rc == 0 && url && pl_env_seconds("PLACER_STORE_TIMEOUT", &wait_s, err) < 0) rc = -1;
    if (rc == 0 && url && connect_ping(s, wait_s, why, sizeof why) < 0)
        rc = pl_err_set(err, "store %s %s: %s", s->url,
                        strstr(why, "no answer within") ? "is silent" : "refused", why);
    if (rc == 0) return s;
    pl_sl_store_close(s);
    return NULL;
}

void pl_sl_store_close(pl_sl_store *s)
{
    if (!s) return;
    if (s->c) redisFree(s->c);
    pl_proc_end(&s->srv, true, 2, NULL, 0); /* SIGTERM: redis-server exits cleanly */
    if (s->dir[0]) pl_remove_tree(s->dir);
    free(s);
}

/* What went wrong with the store, naming it (and, for placer's own server, whether it died). */
static int store_error(pl_sl_store *s, redisReply *r, const char *what, pl_err *err)
{
    char how[160] = "";
    char died[64];
    if (pl_proc_exited(&s->srv, died, sizeof died))
        snprintf(how, sizeof how, " (redis-server pid %d %s)", s->srv.pid, died);
    char silent[64];
    snprintf(silent, sizeof silent, "no answer within %g s", RUN_TIMEOUT_S);
    pl_err_set(err, "store %s: %s: %s%s", s->url, what,
               r && r->type == REDIS_REPLY_ERROR ? r->str
               : !r && timed_out(s->c)           ? silent
               : s->c->errstr[0]                 ? s->c->errstr
                                                 : "unexpected reply",
               how);
    if (r) freeReplyObject(r);
    return -1;
}

/* Deletes every key matching `pattern` (SCAN, then DEL): what a run leaves, whatever happened. */
static int delete_matching(pl_sl_store *s, const char *pattern, pl_err *err)
{
    char cursor[32] = "0";
    do {
        redisReply *r = redisCommand(s->c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
            return store_error(s, r, "SCAN", err);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t k = 0; k < keys->elements; k++) {
            redisReply *d =
                redisCommand(s->c, "DEL %b", keys->element[k]->str, keys->element[k]->len);
            if (!d || d->type != REDIS_REPLY_INTEGER) {
                freeReplyObject(r);
                return store_error(s, d, "DEL", err);
            }
            freeReplyObject(d);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

/* ---- tensors between files and the store ----
 *
 * A value is a header line "DTYPE D0,D1,...\n" and the tensor's raw bytes; bytes through the
 * store count the raw bytes only (what the manifest gives per tensor). */

static int read_all(const char *path, char **buf, size_t *len, pl_err *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) < 0) {
        if (f) fclose(f);
        return pl_err_set(err, "%s: %s", path, strerror(errno));
    }
    *len = (size_t)st.st_size;
    *buf = pl_malloc(*len + 1);
    bool ok = fread(*buf, 1, *len, f) == *len;
    fclose(f);
    if (!ok) free(*buf);
    return ok ? 0 : pl_err_set(err, "%s: short read", path);
}

static int put_tensor(pl_sl_store *s, const char *key, const pl_ort_file *t, double *bytes,
                      pl_err *err)
{
    char *data;
    size_t len;
    if (read_all(t->path, &data, &len, err) < 0) return -1;
    char head[256];
    int h = snprintf(head, sizeof head, "%s ", t->dtype);
    for (int d = 0; d < t->rank && h < 200; d++)
        h += snprintf(head + h, sizeof head - h, "%s%lld", d ? "," : "", t->dims[d]);
    head[h++] = '\n';
    char *val = pl_malloc((size_t)h + len);
    memcpy(val, head, (size_t)h), memcpy(val + h, data, len);
    free(data);
    redisReply *r = redisCommand(s->c, "SET %s %b", key, val, (size_t)h + len);
    free(val);
    if (!r || r->type != REDIS_REPLY_STATUS) return store_error(s, r, "SET", err);
    freeReplyObject(r);
    *bytes += (double)len;
    return 0;
}

/* Parses a value's header into t (dtype, dims); the offset of the raw bytes, or -1. */
static long parse_head(const char *v, size_t len, pl_ort_file *t)
{
    const char *nl = memchr(v, '\n', len < 256 ? len : 256), *sp = memchr(v, ' ', len);
    if (!nl || !sp || sp > nl || (size_t)(sp - v) >= sizeof t->dtype) return -1;
    snprintf(t->dtype, sizeof t->dtype, "%.*s", (int)(sp - v), v);
    t->rank = 0;
    const char *p = sp + 1;
    while (p < nl && t->rank < 8) {
        char *end;
        t->dims[t->rank++] = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && end != nl)) return -1;
        p = end == nl ? nl : end + 1;
    }
    return p == nl ? nl - v + 1 : -1;
}

/* GETs `key` into the file t->path (t->name and t->path set by the caller). */
static int get_tensor(pl_sl_store *s, const char *key, pl_ort_file *t, double *bytes, pl_err *err)
{
    redisReply *r = redisCommand(s->c, "GET %s", key);
    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r && r->type == REDIS_REPLY_NIL)
            return freeReplyObject(r), pl_err_set(err, "store %s: no key %s", s->url, key);
        return store_error(s, r, "GET", err);
    }
    long off = parse_head(r->str, r->len, t);
    FILE *f = off < 0 ? NULL : fopen(t->path, "wb");
    bool ok = f && fwrite(r->str + off, 1, r->len - (size_t)off, f) == r->len - (size_t)off;
    if (f && fclose(f) != 0) ok = false;
    t->bytes = off < 0 ? 0 : r->len - (size_t)off;
    freeReplyObject(r);
    if (!ok)
        return pl_err_set(err, "store %s: key %s: %s", s->url, key,
                          off < 0 ? "not a tensor placer wrote" : strerror(errno));
    *bytes += (double)t->bytes;
    return 0;
}

/* ---- the split's routing, from the manifest ---- */

typedef struct sl_io {
    char *tensor;
    int from;    /* the stage that sends it; -1: a graph input */
    int readers; /* stages reading it (outputs) */
} sl_io;

typedef struct sl_slice {
    pl_ort *w;
    sl_io *in, *out;
    int n_in, n_out;
    char dir[160];
    double *fn_s, *run_s; /* [repeat] */
} sl_slice;

static int read_io(json_t *list, bool inputs, sl_io **io, int *n)
{
    size_t k;
    json_t *v;
    *io = pl_calloc(json_array_size(list) + 1, sizeof **io);
    json_array_foreach(list, k, v)
    {
        json_t *t = json_object_get(v, "tensor"), *from = json_object_get(v, "from_stage");
        json_t *to = json_object_get(v, "to_stages");
        if (!json_is_string(t) || (inputs && !json_is_integer(from) && !json_is_string(from)) ||
            (!inputs && !json_is_array(to)))
            return -1;
        sl_io *x = &(*io)[(*n)++];
        x->tensor = pl_strdup(json_string_value(t));
        x->from = json_is_integer(from) ? (int)json_integer_value(from) : -1;
        x->readers = inputs ? 0 : (int)json_array_size(to);
    }
    return 0;
}

/* Each stage's inputs and outputs from DIR/manifest.json (pl_split_manifest_load checked it). */
static int read_routes(const char *dir, sl_slice *sl, int n, pl_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je), *stages = json_object_get(m, "stages");
    int rc = json_array_size(stages) == (size_t)n ? 0 : -1;
    for (int j = 0; j < n && rc == 0; j++) {
        json_t *st = json_array_get(stages, j);
        if (read_io(json_object_get(st, "inputs"), true, &sl[j].in, &sl[j].n_in) < 0 ||
            read_io(json_object_get(st, "outputs"), false, &sl[j].out, &sl[j].n_out) < 0)
            rc = -1;
    }
    json_decref(m);
    return rc < 0 ? pl_err_set(err, "%s: stages[].inputs/outputs: not as placer split writes them",
                               path)
                  : 0;
}

/* ---- one run ---- */

typedef struct sl_run {
    const pl_sl_run_opts *o;
    pl_split_manifest m;
    sl_slice *sl;
    pl_sl_store *store;
    char ns[96];           /* key prefix of this run */
    char dir[96];          /* private folder of its files */
    pl_ort_file *graph_in; /* graph inputs made by the first request, given to the others */
    int n_graph_in;
    pl_ort_file *last_out; /* the last request's graph outputs */
    int n_last_out;
    double bytes;     /* through the store, in the last request */
    int ops;          /* its SETs and GETs (writes and reads with shm) */
    pl_ort_file *shm; /* with o->shm: this request's tensors, each a file in dir */
    int n_shm;
} sl_run;

/* ---- shared memory instead of the store (o->shm) ---- */

/* A maker's output stays where it is, moved into the run's folder (tmpfs): "writing" it. */
static int shm_put(sl_run *x, int req, const pl_ort_file *t, pl_err *err)
{
    char path[256];
    snprintf(path, sizeof path, "%s/r%d_t%d.bin", x->dir, req, x->n_shm);
    if (rename(t->path, path) < 0) return pl_err_set(err, "%s: %s", t->path, strerror(errno));
    x->shm = pl_realloc(x->shm, (x->n_shm + 1) * sizeof *x->shm);
    pl_ort_file *k = &x->shm[x->n_shm++];
    *k = *t, k->name = pl_strdup(t->name), k->path = pl_strdup(path);
    x->bytes += (double)t->bytes;
    return 0;
}

/* A reader reads the maker's file in place. */
static int shm_get(sl_run *x, const char *name, pl_ort_file *t, pl_err *err)
{
    for (int k = 0; k < x->n_shm; k++)
        if (!strcmp(x->shm[k].name, name)) {
            char *keep = t->name;
            *t = x->shm[k], t->name = keep, t->path = pl_strdup(x->shm[k].path);
            x->bytes += (double)t->bytes;
            return 0;
        }
    return pl_err_set(err, "shared memory: no tensor %s", name);
}

/* The request's files go once the request is done. */
static void shm_clear(sl_run *x)
{
    for (int k = 0; k < x->n_shm; k++)
        unlink(x->shm[k].path);
    pl_ort_files_free(x->shm, x->n_shm);
    x->shm = NULL, x->n_shm = 0;
}

static const pl_ort_file *find_graph_input(const sl_run *x, const char *name)
{
    for (int i = 0; i < x->n_graph_in; i++)
        if (strcmp(x->graph_in[i].name, name) == 0) return &x->graph_in[i];
    return NULL;
}

/* Slice j's inputs for request `req`: graph inputs from the files the first request made,
 * the others fetched from the store; the files go to the slice's folder. */
static int fetch_inputs(sl_run *x, int j, int req, pl_ort_file *in, int *n_in, pl_err *err)
{
    sl_slice *s = &x->sl[j];
    *n_in = 0;
    for (int i = 0; i < s->n_in; i++) {
        pl_ort_file *t = &in[*n_in];
        const pl_ort_file *g = s->in[i].from < 0 ? find_graph_input(x, s->in[i].tensor) : NULL;
        if (s->in[i].from < 0 && !g) continue; /* the worker makes it (first request) */
        ++*n_in;
        if (g) {
            *t = *g, t->name = pl_strdup(g->name), t->path = pl_strdup(g->path);
            continue;
        }
        char key[4096], path[256];
        snprintf(key, sizeof key, "%s:%d:%s", x->ns, req, s->in[i].tensor);
        snprintf(path, sizeof path, "%s/in%d.bin", s->dir, i);
        t->name = pl_strdup(s->in[i].tensor);
        if (!x->o->shm) t->path = pl_strdup(path);
        if (x->o->shm ? shm_get(x, s->in[i].tensor, t, err) < 0
                      : get_tensor(x->store, key, t, &x->bytes, err) < 0)
            return -1;
        x->ops++;
    }
    return 0;
}

/* Keeps the graph inputs slice j's worker made (first request) for every later request and
 * slice, moved into the run's folder so that the slice's next outputs do not overwrite them. */
static int keep_made(sl_run *x, pl_ort_file *out, int n, pl_err *err)
{
    for (int k = 0; k < n; k++) {
        if (!out[k].made) continue;
        char path[256];
        snprintf(path, sizeof path, "%s/graph_in%d.bin", x->dir, x->n_graph_in);
        if (rename(out[k].path, path) < 0)
            return pl_err_set(err, "%s: %s", out[k].path, strerror(errno));
        x->graph_in = pl_realloc(x->graph_in, (x->n_graph_in + 1) * sizeof *x->graph_in);
        pl_ort_file *g = &x->graph_in[x->n_graph_in++];
        *g = out[k], g->name = pl_strdup(out[k].name), g->path = pl_strdup(path);
    }
    return 0;
}

static const sl_io *find_output(const sl_slice *s, const char *name)
{
    for (int i = 0; i < s->n_out; i++)
        if (strcmp(s->out[i].tensor, name) == 0) return &s->out[i];
    return NULL;
}

/* Slice j's outputs that later slices read go to the store; graph outputs are kept. */
static int send_outputs(sl_run *x, int j, int req, pl_ort_file *out, int n, pl_err *err)
{
    for (int k = 0; k < n; k++) {
        const sl_io *io = out[k].made ? NULL : find_output(&x->sl[j], out[k].name);
        if (!io || io->readers == 0) continue;
        char key[4096];
        snprintf(key, sizeof key, "%s:%d:%s", x->ns, req, out[k].name);
        if (x->o->shm ? shm_put(x, req, &out[k], err) < 0
                      : put_tensor(x->store, key, &out[k], &x->bytes, err) < 0)
            return -1;
        x->ops++;
    }
    return 0;
}

/* The outputs no later slice reads: the request's answer (graph outputs). */
static void keep_answer(sl_run *x, int j, pl_ort_file *out, int n)
{
    for (int k = 0; k < n; k++) {
        const sl_io *io = out[k].made ? NULL : find_output(&x->sl[j], out[k].name);
        if (!io || io->readers > 0) continue;
        x->last_out = pl_realloc(x->last_out, (x->n_last_out + 1) * sizeof *x->last_out);
        pl_ort_file *g = &x->last_out[x->n_last_out++];
        *g = out[k], g->name = pl_strdup(out[k].name), g->path = pl_strdup(out[k].path);
    }
}

/* One invocation of slice j: GETs, the worker's run, SETs. Its billed duration is the time
 * of its GETs and SETs plus the worker's own run time: the reply's trip over placer's pipe is
 * not something a platform bills. */
static int invoke(sl_run *x, int j, int req, double *fn_s, double *run_s, pl_err *err)
{
    sl_slice *s = &x->sl[j];
    pl_ort_file *in = pl_calloc(s->n_in + 1, sizeof *in), *out = NULL;
    int n_in = 0, n_out = 0;
    if (x->o->before_slice) x->o->before_slice(x->o->arg, req, j, pl_ort_pid(s->w));
    double t0 = pl_now();
    int rc = fetch_inputs(x, j, req, in, &n_in, err);
    double t1 = pl_now();
    if (rc == 0) rc = pl_ort_run_files(s->w, in, n_in, s->dir, &out, &n_out, run_s, err);
    double t2 = pl_now();
    if (rc == 0) rc = send_outputs(x, j, req, out, n_out, err);
    *fn_s = (t1 - t0) + *run_s + (pl_now() - t2);
    if (rc == 0) rc = keep_made(x, out, n_out, err);
    if (rc == 0) keep_answer(x, j, out, n_out);
    pl_ort_files_free(in, n_in), pl_ort_files_free(out, n_out);
    return rc;
}

/* The slices' workers, each loading its own stage file (inflated when weightless), and their
 * folders under the run's. */
static int open_slices(sl_run *x, int repeat, pl_err *err)
{
    char cache[4096], path[4096];
    if (x->o->cache_dir)
        snprintf(cache, sizeof cache, "%s", x->o->cache_dir);
    else if (pl_cache_dir("inflated", cache, sizeof cache, err) < 0)
        return -1;
    x->sl = pl_calloc(x->m.n, sizeof *x->sl);
    for (int j = 0; j < x->m.n; j++) {
        sl_slice *s = &x->sl[j];
        s->fn_s = pl_calloc(repeat, sizeof *s->fn_s),
        s->run_s = pl_calloc(repeat, sizeof *s->run_s);
        snprintf(s->dir, sizeof s->dir, "%s/s%d", x->dir, j);
        pl_ort_opts oo = {.threads = 1, .seed = x->o->seed ? x->o->seed : 1};
        if (mkdir(s->dir, 0700) < 0) return pl_err_set(err, "%s: %s", s->dir, strerror(errno));
        if (pl_inflate_model(x->m.st[j].path, cache, path, sizeof path, err) < 0) return -1;
        const char *p = path;
        if (!(s->w = pl_ort_start(&oo, err)) || pl_ort_load(s->w, &p, 1, err) < 0)
            return pl_err_prefix(err, "slice %d (%s)", j, x->m.st[j].name);
    }
    return 0;
}

static void free_answer(sl_run *x)
{
    pl_ort_files_free(x->last_out, x->n_last_out);
    x->last_out = NULL, x->n_last_out = 0;
}

/* One request through every slice; its keys are deleted when it is done. */
static int request(sl_run *x, int req, bool timed, int t, double *latency, pl_err *err)
{
    x->bytes = 0, x->ops = 0;
    free_answer(x);
    double t0 = pl_now();
    for (int j = 0; j < x->m.n; j++) {
        double fn = 0, run = 0;
        if (invoke(x, j, req, &fn, &run, err) < 0)
            return pl_err_prefix(err, "request %d: slice %d (%s)", req, j, x->m.st[j].name);
        if (timed) x->sl[j].fn_s[t] = fn, x->sl[j].run_s[t] = run;
    }
    *latency = pl_now() - t0;
    if (x->o->shm) return shm_clear(x), 0;
    char pattern[128];
    snprintf(pattern, sizeof pattern, "%s:%d:*", x->ns, req);
    return delete_matching(x->store, pattern, err);
}

/* Peak resident memory of process pid (VmHWM), in bytes; 0 when it cannot be read. */
static double peak_rss(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* The q-quantile of v[0..n) by nearest rank (v is sorted in place). */
static double quantile(double *v, int n, double q)
{
    pl_sort(v, n, sizeof *v, pl_cmp_double);
    int k = (int)(q * n + 0.999999);
    return v[k < 1 ? 0 : k > n ? n - 1 : k - 1];
}

static void summarize(sl_run *x, double *lat, int repeat, pl_sl_run_result *r)
{
    r->n = x->m.n, r->repeat = repeat;
    r->latency_p95_s = quantile(lat, repeat, 0.95);
    r->latency_median_s = pl_median(lat, repeat);
    r->fn_s = pl_calloc(r->n, sizeof *r->fn_s), r->fn_run_s = pl_calloc(r->n, sizeof *r->fn_s);
    r->fn_rss_bytes = pl_calloc(r->n, sizeof *r->fn_s);
    for (int j = 0; j < r->n; j++) {
        r->fn_s[j] = pl_median(x->sl[j].fn_s, repeat);
        r->fn_run_s[j] = pl_median(x->sl[j].run_s, repeat);
        r->fn_rss_bytes[j] = peak_rss(pl_ort_pid(x->sl[j].w));
    }
    r->bytes_through_store = x->bytes, r->ops_through_store = x->ops;
}

static int copy_file(const char *from, const char *to, pl_err *err)
{
    char *data;
    size_t len;
    if (read_all(from, &data, &len, err) < 0) return -1;
    FILE *f = fopen(to, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = false;
    free(data);
    return ok ? 0 : pl_err_set(err, "%s: %s", to, strerror(errno));
}

/* The graph inputs and the last answer into keep_dir, listed in r->tensors. */
static int keep_tensors(sl_run *x, pl_sl_run_result *r, pl_err *err)
{
    int n = x->n_graph_in + x->n_last_out;
    r->tensors = pl_calloc(n + 1, sizeof *r->tensors);
    for (int k = 0; k < n; k++) {
        bool in = k < x->n_graph_in;
        const pl_ort_file *f = in ? &x->graph_in[k] : &x->last_out[k - x->n_graph_in];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s%d.bin", x->o->keep_dir, in ? "in" : "out",
                 in ? k : k - x->n_graph_in);
        pl_ort_file *t = &r->tensors[r->n_tensors++];
        *t = *f, t->name = pl_strdup(f->name), t->path = pl_strdup(path), t->made = in;
        if (copy_file(f->path, path, err) < 0) return -1;
    }
    return 0;
}

/* Stops every worker, deletes the run's keys and closes the store (stopping a server placer
 * started), whatever happened; folds a failure to delete the keys into rc. */
static int finish(sl_run *x, int rc, pl_err *err)
{
    for (int j = 0; x->sl && j < x->m.n; j++) {
        pl_ort_stop(x->sl[j].w);
        for (int i = 0; i < x->sl[j].n_in; i++)
            free(x->sl[j].in[i].tensor);
        for (int i = 0; i < x->sl[j].n_out; i++)
            free(x->sl[j].out[i].tensor);
        free(x->sl[j].in), free(x->sl[j].out), free(x->sl[j].fn_s), free(x->sl[j].run_s);
    }
    free(x->sl);
    if (x->store && x->store->c && !x->store->c->err) {
        char pattern[128];
        pl_err e = {""};
        snprintf(pattern, sizeof pattern, "%s:*", x->ns);
        if (delete_matching(x->store, pattern, &e) < 0 && rc == 0) *err = e, rc = -1;
    }
    pl_sl_store_close(x->store);
    shm_clear(x);
    free_answer(x);
    pl_ort_files_free(x->graph_in, x->n_graph_in);
    if (x->dir[0]) pl_remove_tree(x->dir);
    pl_split_manifest_free(&x->m);
    return rc;
}

/* hiredis writes with write(): a store that dies would raise SIGPIPE in the caller, which a
 * library must not install a handler for. SIGPIPE is blocked in this thread for the run (a
 * write then fails with EPIPE) and one raised meanwhile is consumed before the mask is put
 * back. */
static bool block_sigpipe(sigset_t *old)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set), sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    pthread_sigmask(SIG_BLOCK, &pipe_set, old);
    return sigismember(&pending, SIGPIPE);
}

static void restore_sigpipe(const sigset_t *old, bool was_pending)
{
    sigset_t pipe_set;
    sigemptyset(&pipe_set), sigaddset(&pipe_set, SIGPIPE);
    struct timespec zero = {0, 0};
    if (!was_pending)
        while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
            ;
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

static int run(sl_run *x, const char *split_dir, pl_sl_run_result *r, pl_err *err)
{
    static int runs;
    int repeat = x->o->repeat > 0 ? x->o->repeat : 10, warmup = x->o->warmup > 0 ? x->o->warmup : 0;
    snprintf(x->ns, sizeof x->ns, "placer:%d:%d", (int)getpid(), ++runs);
    /* in memory ($PLACER_SHM_DIR, else /dev/shm) where there is one, else in $TMPDIR; a
     * temporary either way (removed on SIGINT, SIGTERM, SIGHUP) */
    if (pl_make_shm_dir("placer-sl", x->dir, sizeof x->dir, NULL) < 0 &&
        pl_make_temp_dir("placer-sl", x->dir, sizeof x->dir, err) < 0)
        return pl_err_prefix(err, "cannot make a folder for the run");
    x->sl = pl_calloc(x->m.n, sizeof *x->sl);
    if (read_routes(split_dir, x->sl, x->m.n, err) < 0) return -1;
    sl_slice *routes = x->sl;
    x->sl = NULL;
    int rc = open_slices(x, repeat, err);
    for (int j = 0; j < x->m.n; j++)
        x->sl[j].in = routes[j].in, x->sl[j].n_in = routes[j].n_in, x->sl[j].out = routes[j].out,
        x->sl[j].n_out = routes[j].n_out;
    free(routes);
    double *lat = pl_calloc(repeat, sizeof *lat);
    for (int q = 0; rc == 0 && q < warmup + repeat; q++) {
        double l = 0;
        rc = request(x, q, q >= warmup, q - warmup, &l, err);
        if (q >= warmup) lat[q - warmup] = l;
    }
    if (rc == 0) summarize(x, lat, repeat, r);
    if (rc == 0 && x->o->keep_dir) rc = keep_tensors(x, r, err);
    free(lat);
    return rc;
}

int pl_sl_run(const char *split_dir, const pl_sl_run_opts *o, pl_sl_run_result *r, pl_err *err)
{
    *r = (pl_sl_run_result){0};
    pl_sl_run_opts dflt = {0};
    sl_run x = {.o = o ? o : &dflt};
    if (pl_split_manifest_load(split_dir, &x.m, err) < 0) return -1;
    sigset_t old;
    bool pending = block_sigpipe(&old);
    if (!x.o->shm) x.store = pl_sl_store_open(x.o->store_url, err);
    int rc = x.o->shm || x.store ? run(&x, split_dir, r, err) : -1;
    rc = finish(&x, rc, err);
    restore_sigpipe(&old, pending);
    if (rc < 0) pl_sl_run_result_free(r);
    return rc;
}

void pl_sl_run_result_free(pl_sl_run_result *r)
{
    if (!r) return;
    free(r->fn_s), free(r->fn_run_s), free(r->fn_rss_bytes);
    pl_ort_files_free(r->tensors, r->n_tensors);
    *r = (pl_sl_run_result){0};
}
