/* test_slrun.c: a split run as serverless functions, tensors through a real Redis server
 * (pl_sl_run, docs/serverless.md, "Running the slices for real"): mobilenet_v3_large cut into three
 * slices by topological thirds gives the whole model's outputs on the same inputs; the bytes
 * through the store are the manifest's (each cross-slice tensor SET once and GET by each reader);
 * no key, worker or server is left behind, after a run and after a slice's worker is killed
 * mid-run; a store that refuses the connection is named. Needs redis-server and onnxruntime-node
 * (`make deps`): without redis-server the tests skip and say so. */
#include "testutil.h"

#include "placer/runtime.h"
#include "placer/serverless.h"
#include "placer/split.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MODEL "models/mobilenet_v3_large.onnx"
#define CACHE "build/ort-cache"

static char split_dir[64];
static double manifest_bytes; /* cross-slice bytes: each tensor written once, read per reader */
static int manifest_ops;      /* their SETs and GETs: one write, one read per reader */

/* redis-server on PATH; the tests skip without it. */
static bool have_redis(void)
{
    if (system("command -v redis-server >/dev/null 2>&1") == 0) return true;
    print_message("redis-server is not installed (make deps installs it): skipped\n");
    return false;
}

/* The manifest's tensors between slices: bytes x (1 write + one read per reader). */
static double cross_bytes(const char *dir, int *ops)
{
    char path[128];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je), *st, *o;
    assert_non_null(m);
    double sum = 0;
    size_t j, k;
    json_array_foreach(json_object_get(m, "stages"), j, st)
        json_array_foreach(json_object_get(st, "outputs"), k, o)
    {
        size_t readers = json_array_size(json_object_get(o, "to_stages"));
        double b = json_number_value(json_object_get(o, "bytes"));
        assert_true(b > 0);
        sum += b * (double)(readers ? 1 + readers : 0);
        *ops += readers ? 1 + (int)readers : 0;
    }
    json_decref(m);
    return sum;
}

/* MODEL on three devices by topological thirds, as few stages as possible: three slices. */
static int setup(void **state)
{
    (void)state;
    if (tu_ort_setup() < 0) return -1;
    pl_graph *g = tu_load(MODEL);
    pl_plan *p = pl_plan_new(g->n_ops, 3);
    for (int k = 0; k < g->n_ops; k++)
        p->dev[g->topo[k]] = 3 * k / g->n_ops;
    pl_stages s;
    pl_err err = {""};
    if (tu_mkdtemp(split_dir, sizeof split_dir, "placer-slrun") < 0 ||
        pl_split_stages_by(g, p, PL_SPLIT_FEWEST, &s, &err) < 0 ||
        pl_split_write(MODEL, g, &s, NULL, split_dir, &err) < 0) {
        print_error("split: %s\n", err.msg);
        return -1;
    }
    int n = s.n;
    pl_stages_free(&s), pl_plan_free(p), pl_graph_free(g);
    manifest_bytes = cross_bytes(split_dir, &manifest_ops);
    return n == 3 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(split_dir);
}

/* Processes whose parent is this one (zombies included): none may be left. */
static int children(int except)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[len] = 0;
        char *close_paren = strrchr(buf, ')');
        int ppid = 0;
        if (close_paren && sscanf(close_paren + 2, "%*c %d", &ppid) == 1 && ppid == getpid() &&
            atoi(e->d_name) != except)
            n++;
    }
    if (d) closedir(d);
    return n;
}

/* The keys named placer:* in the store at url. */
static long placer_keys(const char *url)
{
    int port = atoi(strrchr(url, ':') + 1);
    redisContext *c = redisConnect("127.0.0.1", port);
    assert_true(c && !c->err);
    redisReply *r = redisCommand(c, "KEYS placer:*");
    assert_true(r && r->type == REDIS_REPLY_ARRAY);
    long n = (long)r->elements;
    freeReplyObject(r), redisFree(c);
    return n;
}

static float *read_floats(const pl_ort_file *f, size_t *n)
{
    FILE *fp = fopen(f->path, "rb");
    assert_non_null(fp);
    *n = f->bytes / sizeof(float);
    float *v = malloc(f->bytes + 1);
    assert_int_equal(fread(v, 1, f->bytes, fp), f->bytes);
    fclose(fp);
    return v;
}

/* max|a-b| / max(max|a|, 1e-6), as pl_ort_compare measures it. */
static double max_rel(const pl_ort_file *a, const pl_ort_file *b)
{
    assert_string_equal(a->dtype, "float32");
    assert_string_equal(b->dtype, "float32");
    size_t na, nb;
    float *x = read_floats(a, &na), *y = read_floats(b, &nb);
    assert_int_equal(na, nb);
    double most = 0, worst = 0;
    for (size_t i = 0; i < na; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) fail_msg("%s is not finite", a->name);
        most = fmax(most, fabs(x[i])), worst = fmax(worst, fabs((double)x[i] - y[i]));
    }
    free(x), free(y);
    return worst / fmax(most, 1e-6);
}

/* The whole model on the inputs the slices got (r's made inputs), through the same worker op:
 * its outputs equal the slices' within 1e-5 relative. */
static void check_against_whole(const pl_sl_run_result *r, const char *dir)
{
    char path[4096];
    pl_err err = {""};
    if (pl_inflate_model(MODEL, CACHE, path, sizeof path, &err) < 0) fail_msg("%s", err.msg);
    pl_ort_opts o = {.threads = 1, .seed = 7};
    pl_ort *w = pl_ort_start(&o, &err);
    const char *p = path;
    if (!w || pl_ort_load(w, &p, 1, &err) < 0) fail_msg("%s", err.msg);
    pl_ort_file *in = calloc(r->n_tensors + 1, sizeof *in), *out = NULL;
    int n_in = 0, n_out = 0, compared = 0;
    for (int k = 0; k < r->n_tensors; k++)
        if (r->tensors[k].made) in[n_in++] = r->tensors[k];
    assert_true(n_in >= 1);
    double run_s;
    if (pl_ort_run_files(w, in, n_in, dir, &out, &n_out, &run_s, &err) < 0) fail_msg("%s", err.msg);
    for (int k = 0; k < n_out; k++) {
        assert_false(out[k].made); /* every input was given */
        for (int i = 0; i < r->n_tensors; i++)
            if (!r->tensors[i].made && strcmp(r->tensors[i].name, out[k].name) == 0) {
                double d = max_rel(&out[k], &r->tensors[i]);
                if (!(d <= 1e-5)) fail_msg("output %s differs by %g relative", out[k].name, d);
                compared++;
            }
    }
    assert_int_equal(compared, n_out);
    assert_true(n_out >= 1);
    pl_ort_files_free(out, n_out);
    free(in);
    pl_ort_stop(w);
}

/* A redis-server the test holds (skips the test without redis-server). */
static pl_sl_store *own_store(void)
{
    if (!have_redis()) skip();
    pl_err err = {""};
    pl_sl_store *st = pl_sl_store_open(NULL, &err);
    if (!st) fail_msg("%s", err.msg);
    return st;
}

/* Three slices through a server the test holds open: the answer is the whole model's, the
 * bytes the manifest's, every figure measured, and no key is left in the server. */
static void test_matches_whole_model(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_sl_store *st = own_store();
    char keep[64];
    assert_int_equal(tu_mkdtemp(keep, sizeof keep, "placer-slrun-keep"), 0);
    pl_sl_run_opts o = {.store_url = pl_sl_store_url(st),
                        .repeat = 10,
                        .warmup = 2,
                        .seed = 7,
                        .cache_dir = CACHE,
                        .keep_dir = keep};
    pl_sl_run_result r;
    if (pl_sl_run(split_dir, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.repeat, 10);
    assert_close(r.bytes_through_store, manifest_bytes, 1e-12);
    assert_int_equal(r.ops_through_store, manifest_ops);
    assert_true(r.latency_median_s > 0 && r.latency_p95_s >= r.latency_median_s);
    for (int j = 0; j < r.n; j++) {
        assert_true(r.fn_run_s[j] > 0 && r.fn_s[j] >= r.fn_run_s[j]);
        assert_true(r.fn_rss_bytes[j] > 10e6); /* node and onnxruntime at least */
    }
    assert_int_equal(placer_keys(pl_sl_store_url(st)), 0);
    assert_int_equal(children(pl_sl_store_pid(st)), 0); /* the slices' workers are gone */
    check_against_whole(&r, keep);
    print_message("%s in 3 slices through %s, %d requests after 2: latency median %.2f ms, "
                  "P95 %.2f ms, %.0f bytes through the store per request\n",
                  MODEL, pl_sl_store_url(st), r.repeat, r.latency_median_s * 1e3,
                  r.latency_p95_s * 1e3, r.bytes_through_store);
    for (int j = 0; j < r.n; j++)
        print_message("  slice %d: billed %.2f ms (onnxruntime %.2f ms), peak RSS %.1f MB\n", j,
                      r.fn_s[j] * 1e3, r.fn_run_s[j] * 1e3, r.fn_rss_bytes[j] / 1e6);
    pl_sl_run_result_free(&r);
    int pid = pl_sl_store_pid(st);
    assert_true(pid > 0);
    pl_sl_store_close(st);
    assert_int_equal(kill(pid, 0), -1); /* stopped and reaped */
    assert_int_equal(children(-1), 0);
    tu_rmtree(keep);
}

/* Shared memory instead of the store (MOPAR's COM): no server, the same answer and bytes, no
 * file of the run left in /dev/shm. */
static void test_shared_memory(void **state)
{
    (void)state;
    pl_err err = {""};
    char keep[64], shm[64], pattern[128];
    assert_int_equal(tu_mkdtemp(keep, sizeof keep, "placer-slrun-keep"), 0);
    /* a private shared-memory folder: another run on the machine (a parallel test) may have
       its own placer-sl-* folder in /dev/shm at the same time */
    assert_int_equal(tu_mkdtemp(shm, sizeof shm, "placer-slrun-shm"), 0);
    setenv("PLACER_SHM_DIR", shm, 1);
    pl_sl_run_opts o = {
        .shm = true, .repeat = 3, .warmup = 1, .seed = 7, .cache_dir = CACHE, .keep_dir = keep};
    pl_sl_run_result r;
    if (pl_sl_run(split_dir, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_close(r.bytes_through_store, manifest_bytes, 1e-12);
    assert_int_equal(r.ops_through_store, manifest_ops);
    check_against_whole(&r, keep);
    pl_sl_run_result_free(&r);
    assert_int_equal(children(-1), 0);
    glob_t g;
    snprintf(pattern, sizeof pattern, "%s/placer-sl-*", shm);
    assert_int_equal(glob(pattern, 0, NULL, &g), GLOB_NOMATCH);
    globfree(&g);
    unsetenv("PLACER_SHM_DIR");
    tu_rmtree(shm);
    tu_rmtree(keep);
}

/* With no store given, placer starts its own and stops it: nothing is left running. */
static void test_own_server_is_stopped(void **state)
{
    (void)state;
    if (!have_redis()) skip();
    pl_err err = {""};
    pl_sl_run_opts o = {.repeat = 1, .cache_dir = CACHE};
    pl_sl_run_result r;
    if (pl_sl_run(split_dir, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_close(r.bytes_through_store, manifest_bytes, 1e-12);
    assert_int_equal(r.ops_through_store, manifest_ops);
    pl_sl_run_result_free(&r);
    assert_int_equal(children(-1), 0);
}

static void kill_slice_1(void *arg, int request, int slice, int pid)
{
    int *killed = arg;
    if (request == 1 && slice == 1) kill(pid, SIGKILL), *killed = pid;
}

/* Slice 1's worker killed in the second request: the error names the slice, and neither its
 * tensors (slice 0's outputs of that request are in the store by then) nor a process stays. */
static void test_killed_slice(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_sl_store *st = own_store();
    int killed = 0;
    pl_sl_run_opts o = {.store_url = pl_sl_store_url(st),
                        .repeat = 3,
                        .cache_dir = CACHE,
                        .before_slice = kill_slice_1,
                        .arg = &killed};
    pl_sl_run_result r;
    assert_int_equal(pl_sl_run(split_dir, &o, &r, &err), -1);
    assert_true(killed > 0);
    print_message("killed: %s\n", err.msg);
    assert_contains(err.msg, "request 1: slice 1 (stage_01)");
    assert_contains(err.msg, "signal 9");
    assert_null(r.fn_s);
    assert_int_equal(placer_keys(pl_sl_store_url(st)), 0);
    assert_int_equal(children(pl_sl_store_pid(st)), 0);
    pl_sl_store_close(st);
    assert_int_equal(children(-1), 0);
}

static void kill_store(void *arg, int request, int slice, int pid)
{
    (void)pid;
    if (request == 1 && slice == 1) kill(pl_sl_store_pid(arg), SIGKILL);
}

/* The server killed mid-run: the error names the store and the slice, placer survives the
 * write to a dead socket (no SIGPIPE), and no worker is left. */
static void test_store_dies(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_sl_store *st = own_store();
    char url[160];
    snprintf(url, sizeof url, "store %s: ", pl_sl_store_url(st));
    pl_sl_run_opts o = {.store_url = pl_sl_store_url(st),
                        .repeat = 3,
                        .cache_dir = CACHE,
                        .before_slice = kill_store,
                        .arg = st};
    pl_sl_run_result r;
    assert_int_equal(pl_sl_run(split_dir, &o, &r, &err), -1);
    print_message("store died: %s\n", err.msg);
    assert_contains(err.msg, "request 1: slice 1 (stage_01)");
    assert_contains(err.msg, url);
    assert_int_equal(children(pl_sl_store_pid(st)), 0);
    pl_sl_store_close(st);
    assert_int_equal(children(-1), 0);
}

/* A store nobody listens at, and an address that is not one: named, nothing started. */
static void test_store_refused(void **state)
{
    (void)state;
    if (!have_redis()) skip();
    pl_err err = {""};
    pl_sl_store *st = pl_sl_store_open(NULL, &err); /* a port that was free, now closed again */
    if (!st) fail_msg("%s", err.msg);
    char url[160];
    snprintf(url, sizeof url, "%s", pl_sl_store_url(st));
    pl_sl_store_close(st);
    pl_sl_run_opts o = {.store_url = url, .repeat = 1, .cache_dir = CACHE};
    pl_sl_run_result r;
    assert_int_equal(pl_sl_run(split_dir, &o, &r, &err), -1);
    assert_contains(err.msg, url);
    assert_contains(err.msg, "refused");
    print_message("refused: %s\n", err.msg);
    o.store_url = "redis://localhost";
    assert_int_equal(pl_sl_run(split_dir, &o, &r, &err), -1);
    assert_contains(err.msg, "store 'redis://localhost': not a redis://HOST:PORT address");
    assert_int_equal(children(-1), 0);
}

/* A store that accepts the connection and never answers (a loopback socket that listens and
 * does nothing: the kernel completes the handshake) is named as silent, with how long it was
 * given, $PLACER_STORE_TIMEOUT here; it was "refused: Resource temporarily unavailable" after
 * 30 s. A timeout that is no duration is refused by name. */
static void test_store_silent(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 4), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    char url[64], want[128];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", ntohs(a.sin_port));
    snprintf(want, sizeof want, "store %s is silent: no answer within 0.2 s from 127.0.0.1:%d", url,
             ntohs(a.sin_port));
    setenv("PLACER_STORE_TIMEOUT", "200ms", 1);
    pl_err err = {""};
    assert_null(pl_sl_store_open(url, &err));
    assert_contains(err.msg, want);
    print_message("silent: %s\n", err.msg);
    setenv("PLACER_STORE_TIMEOUT", "soon", 1);
    assert_null(pl_sl_store_open(url, &err));
    assert_contains(err.msg, "PLACER_STORE_TIMEOUT='soon': wants a duration above 0");
    unsetenv("PLACER_STORE_TIMEOUT");
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_whole_model), cmocka_unit_test(test_own_server_is_stopped),
        cmocka_unit_test(test_killed_slice),        cmocka_unit_test(test_store_dies),
        cmocka_unit_test(test_store_refused),       cmocka_unit_test(test_shared_memory),
        cmocka_unit_test(test_store_silent),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
