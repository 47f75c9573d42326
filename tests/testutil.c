/* testutil.c: shared helpers for the tests. */
#include "testutil.h"

#include <jansson.h>
#include <libgen.h>

#include "placer/place.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

pl_graph *tu_load(const char *path)
{
    pl_err err = {""};
    pl_graph *g = pl_graph_load(path, NULL, &err);
    if (!g) fail_msg("loading %s failed: %s", path, err.msg);
    return g;
}

const char *tu_load_fails(const char *path)
{
    static pl_err err;
    err.msg[0] = 0;
    pl_graph *g = pl_graph_load(path, NULL, &err);
    if (g) {
        pl_graph_free(g);
        fail_msg("%s loaded but should have been refused", path);
    }
    if (!err.msg[0]) fail_msg("%s was refused without a message", path);
    return err.msg;
}

int tu_run(const char *args, char **out)
{
    const char *bin = getenv("PLACER_BIN");
    if (!bin) bin = "build/placer";
    size_t n = strlen(bin) + strlen(args) + 16;
    char *cmd = malloc(n);
    /* stderr joins the output unless the caller redirected it already */
    snprintf(cmd, n, "%s %s%s", bin, args, strstr(args, "2>") ? "" : " 2>&1");
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p) fail_msg("cannot run %s", bin);
    size_t cap = 4096, len = 0, r;
    char *buf = malloc(cap);
    while ((r = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += r;
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
    }
    buf[len] = 0;
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int tu_run_fsize(const char *args, long max_bytes, char **out)
{
    /* set here and inherited by the shell and placer; the test itself writes nothing meanwhile
     * (the captured output comes through a pipe) */
    struct rlimit old, lim;
    if (getrlimit(RLIMIT_FSIZE, &old) < 0) fail_msg("getrlimit: %s", strerror(errno));
    lim = old;
    lim.rlim_cur = (rlim_t)max_bytes;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &lim) < 0) fail_msg("setrlimit: %s", strerror(errno));
    int rc = tu_run(args, out);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, was);
    return rc;
}

void tu_expect_refusal(const char *args, const char *needle)
{
    char *out;
    int rc = tu_run(args, &out);
    if (rc != 2) fail_msg("placer %s: exit %d, expected 2; output:\n%s", args, rc, out);
    if (!strstr(out, needle)) fail_msg("placer %s: output lacks '%s':\n%s", args, needle, out);
    if (strstr(out, "AddressSanitizer") || strstr(out, "runtime error"))
        fail_msg("placer %s: sanitizer report:\n%s", args, out);
    free(out);
}

int tu_ort_setup(void)
{
    if (access(TU_ORT_PKG, R_OK) == 0) return 0;
    fprintf(stderr, "onnxruntime-node is not installed (%s is missing): run `make deps`\n",
            TU_ORT_PKG);
    return -1;
}

void tu_require_ort(void)
{
    if (access(TU_ORT_PKG, R_OK) != 0)
        fail_msg("onnxruntime-node is not installed (%s is missing): run `make deps`", TU_ORT_PKG);
}

void tu_attr_ints(pl_graph *g, int o, const char *name, int n, const int64_t *v)
{
    pl_attr *a = pl_op_add_attr(g, o, name, PL_ATTR_INTS);
    a->ints = malloc(n * sizeof *v);
    memcpy(a->ints, v, n * sizeof *v);
    a->n = n;
}

pl_graph *tu_conv_graph(int n, int dt)
{
    pl_graph *g = pl_graph_new("conv");
    int x = pl_graph_tensor(g, "X"), w = pl_graph_tensor(g, "W"), y = pl_graph_tensor(g, "Y");
    pl_tensor_set_shape(&g->tensors[x], dt, 4, (int64_t[]){n, 64, 56, 56});
    pl_tensor_set_shape(&g->tensors[w], dt, 4, (int64_t[]){64, 64, 3, 3});
    g->tensors[w].flags |= PL_TENSOR_WEIGHT;
    pl_graph_add_input(g, x);
    int op = pl_graph_add_op(g, "conv", "Conv", "");
    pl_op_add_input(g, op, x);
    pl_op_add_input(g, op, w);
    pl_op_add_output(g, op, y);
    tu_attr_ints(g, op, "pads", 4, (int64_t[]){1, 1, 1, 1});
    pl_graph_add_output(g, y);
    pl_err err = {""};
    if (pl_graph_finalize(g, "conv", &err) < 0 || pl_graph_infer(g, &err) < 0)
        fail_msg("%s", err.msg);
    return g;
}

int tu_edge(const pl_graph *g, const char *tensor, const char *dst)
{
    int t = pl_graph_find_tensor(g, tensor), d = pl_graph_find_op(g, dst);
    int e = t >= 0 && d >= 0 ? pl_plan_edge(g, g->tensors[t].producer, d, t) : -1;
    if (e < 0) fail_msg("no edge %s -> %s", tensor, dst);
    return e;
}

json_t *tu_run_json(const char *args)
{
    char *out;
    int rc = tu_run(args, &out);
    if (rc != 0) fail_msg("placer %s: exit %d\n%s", args, rc, out);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (!j) fail_msg("placer %s: not JSON (%s):\n%s", args, e.text, out);
    free(out);
    return j;
}

const char *tu_tmpfile(const void *data, size_t len, const char *suffix)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/placer-test-XXXXXX%s", suffix ? suffix : "");
    int fd = mkstemps(path, suffix ? (int)strlen(suffix) : 0);
    if (fd < 0) fail_msg("mkstemps failed");
    if (len && write(fd, data, len) != (ssize_t)len) fail_msg("write failed");
    close(fd);
    return path;
}

pl_graph *tu_graph_with_input(void)
{
    pl_graph *g = pl_graph_new("t");
    int x = pl_graph_tensor(g, "x");
    int64_t d[2] = {2, 3};
    pl_tensor_set_shape(&g->tensors[x], PL_DT_FLOAT, 2, d);
    pl_graph_add_input(g, x);
    return g;
}

static void add_tensors(pl_graph *g, int o, const char *names, bool out)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names ? names : "");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int t = strcmp(tok, "_") == 0 ? -1 : pl_graph_tensor(g, tok); /* "_": omitted */
        out ? pl_op_add_output(g, o, t) : pl_op_add_input(g, o, t);
    }
}

int tu_op(pl_graph *g, const char *name, const char *type, const char *ins, const char *outs)
{
    int o = pl_graph_add_op(g, name, type, "");
    add_tensors(g, o, ins, false);
    add_tensors(g, o, outs, true);
    return o;
}

pl_graph *tu_taskgraph(const char *text)
{
    pl_err err = {""};
    pl_graph *g = pl_taskgraph_load_buffer(text, strlen(text), "t.json", NULL, &err);
    if (!g) fail_msg("task graph refused: %s\n%s", err.msg, text);
    return g;
}

pl_cost *tu_cost(const pl_graph *g, const pl_cluster *c)
{
    pl_err err = {""};
    pl_cost *k = pl_cost_new(g, c, NULL, NULL, 0, &err);
    if (!k) fail_msg("cost: %s", err.msg);
    return k;
}

pl_plan *tu_plan(const pl_graph *g, const char *cluster, const char *algo)
{
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(cluster, &err);
    if (!c) fail_msg("%s", err.msg);
    pl_cost *k = tu_cost(g, c);
    pl_plan *p = pl_plan_new(g->n_ops, c->n_devs);
    pl_place_opts po = {0};
    if (pl_place(pl_algo_find(algo), k, &po, p, &err) < 0) fail_msg("%s: %s", algo, err.msg);
    pl_cost_free(k);
    pl_cluster_free(c);
    return p;
}

int tu_mkdtemp(char *buf, size_t n, const char *prefix)
{
    snprintf(buf, n, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(buf) ? 0 : -1;
}

int tu_rmtree(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *tmpdir_was; /* TMPDIR before tu_tmpdir_begin (NULL: unset) */

int tu_tmpdir_begin(char *buf, size_t n, const char *prefix)
{
    if (tu_mkdtemp(buf, n, prefix) < 0) return -1;
    const char *was = getenv("TMPDIR");
    free(tmpdir_was);
    tmpdir_was = was ? strdup(was) : NULL;
    return setenv("TMPDIR", buf, 1);
}

int tu_tmpdir_end(const char *dir)
{
    if (tmpdir_was)
        setenv("TMPDIR", tmpdir_was, 1);
    else
        unsetenv("TMPDIR");
    free(tmpdir_was), tmpdir_was = NULL;
    return tu_rmtree(dir);
}

void tu_expect_empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            fail_msg("%s/%s was left behind", dir, e->d_name);
    closedir(d);
}

void tu_failing_worker(const char *dir, const char *sig, char *js, size_t n)
{
    snprintf(js, n, "%s/failing.js", dir);
    FILE *f = fopen(js, "w");
    assert_non_null(f);
    fprintf(f,
            "const say = (o) => console.log(JSON.stringify(o));\n"
            "say({ok: true, ready: true});\n"
            "require('readline').createInterface({input: process.stdin}).on('line', (l) => {\n"
            "  const m = JSON.parse(l);\n"
            "  if (m.op === 'load') require('fs').writeFileSync('%s/load.json', l);\n"
            "  if (m.op === 'load') return say({ok: true, id: m.id, loads: 1, load_s: 0});\n"
            "  require('fs').writeFileSync('%s/failed.pid', String(process.pid));\n"
            "  process.kill(process.pid, '%s');\n"
            "});\n",
            dir, dir, sig);
    fclose(f);
}

void tu_expect_worker_gone(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/failed.pid", dir);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: the fake worker was never asked to run", path);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    assert_true(pid > 0);
    if (!(kill(pid, 0) < 0 && errno == ESRCH)) fail_msg("the worker (pid %d) was left behind", pid);
    unlink(path);
}

double tu_num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) fail_msg("no number '%s'", k);
    return json_number_value(v);
}

json_t *tu_find(json_t *doc, const char *list, const char *field, const char *value)
{
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(doc, list), i, a)
    {
        const char *s = json_string_value(json_object_get(a, field));
        if (s && !strcmp(s, value)) return a;
    }
    fail_msg("no %s with %s '%s'", list, field, value);
    return NULL;
}

/* ---- the training tests' Dense layer ---- */

int tu_dense_tensor(pl_graph *g, const char *name, double bytes, unsigned flags)
{
    int t = pl_graph_tensor(g, name);
    int64_t b = (int64_t)bytes;
    pl_tensor_set_shape(&g->tensors[t], PL_DT_UINT8, 1, &b);
    g->tensors[t].flags |= PL_TENSOR_BYTES_ONLY | flags;
    return t;
}

int tu_dense_op(pl_graph *g, const char *name, double ms, const int *in, int n_in, int out)
{
    int o = pl_graph_add_op(g, name, "Op", "");
    for (int i = 0; i < n_in; i++)
        pl_op_add_input(g, o, in[i]);
    pl_op_add_output(g, o, out);
    pl_op_add_time(g, o, "V100", ms * 1e-3);
    g->ops[o].cls = PL_CLASS_DENSE;
    g->ops[o].flags |= PL_OP_COST_GIVEN;
    return o;
}

static pl_graph *dense_graph(pl_train_graph *t)
{
    pl_graph *g = pl_graph_new("dense");
    int x = tu_dense_tensor(g, "x", 8e6, 0), W = tu_dense_tensor(g, "W", 1e6, PL_TENSOR_WEIGHT);
    int m = tu_dense_tensor(g, "W:m", 1e6, PL_TENSOR_WEIGHT);
    int v = tu_dense_tensor(g, "W:v", 1e6, PL_TENSOR_WEIGHT);
    int y = tu_dense_tensor(g, "y", 8e6, 0), dy = tu_dense_tensor(g, "dy", 8e6, 0);
    int dW = tu_dense_tensor(g, "dW", 1e6, 0), W2 = tu_dense_tensor(g, "W:updated", 1e6, 0);
    pl_graph_add_input(g, x);
    tu_dense_op(g, "A", 4, (int[]){x, W}, 2, y);
    tu_dense_op(g, "loss", 0, (int[]){y}, 1, dy);
    tu_dense_op(g, "A:grad_w", 4, (int[]){x, dy}, 2, dW);
    tu_dense_op(g, "W:adam", 1, (int[]){W, dW, m, v}, 4, W2);
    pl_graph_add_output(g, W2);
    pl_err err = {""};
    if (pl_graph_finalize(g, "dense", &err) < 0) fail_msg("%s", err.msg);
    t->g = g, t->n_fwd = 1, t->batch = 8, t->model_batch = 8;
    static pl_train_phase phase[] = {PL_PHASE_FWD, PL_PHASE_BWD, PL_PHASE_BWD, PL_PHASE_OPT};
    static pl_split_class split[] = {PL_SPLIT_CONCAT, PL_SPLIT_CONCAT, PL_SPLIT_SUM,
                                     PL_SPLIT_OTHER};
    static int fwd_of[] = {-1, 0, 0, -1};
    static double frac[] = {1, 1, 1, 0};
    t->phase = phase, t->split = split, t->fwd_of = fwd_of, t->batch_frac = frac;
    t->batched = pl_calloc(g->n_tensors, sizeof *t->batched);
    t->batched[x] = t->batched[y] = t->batched[dy] = true;
    static int pt[1], gt[1], ap[1];
    pt[0] = W, gt[0] = dW, ap[0] = 3;
    t->n_params = 1, t->param_tensor = pt, t->grad_tensor = gt, t->apply_op = ap;
    return g;
}

/* Two V100s on one host, 1 GB/s between them, no latency. */
static const char *TWO_V100 = "{\"format\": \"placer-cluster/1\", \"name\": \"two\", \"devices\": ["
                              "{\"name\": \"g0\", \"model\": \"V100\", \"host\": \"m0\"},"
                              "{\"name\": \"g1\", \"model\": \"V100\", \"host\": \"m0\"}],"
                              "\"links\": [{\"from\": \"g0\", \"to\": \"g1\", \"bandwidth_Bps\": "
                              "\"1 GB/s\", \"latency_s\": 0, \"both_ways\": true}]}";

void tu_dense_ctx(tu_dense *f, const char *cluster, double time_s, double param_bytes)
{
    if (!cluster) cluster = TWO_V100;
    const pl_graph *g = f->t.g;
    pl_err err = {""};
    f->c = pl_cluster_load(tu_tmpfile(cluster, strlen(cluster), ".json"), &err);
    if (!f->c) fail_msg("%s", err.msg);
    pl_train_ctx *c = &f->x; /* by hand: each device its own device group */
    int D = f->c->n_devs, n = g->n_ops;
    c->t = &f->t, c->c = f->c;
    c->dg.n = D;
    c->dg.off = pl_malloc((size_t)(D + 1) * sizeof(int)), c->dg.dev = pl_malloc(D * sizeof(int));
    c->dg.group_of = pl_malloc(D * sizeof(int));
    for (int i = 0; i < D; i++)
        c->dg.off[i] = i, c->dg.dev[i] = i, c->dg.group_of[i] = i;
    c->dg.off[D] = D;
    c->og.n = 1;
    c->og.group_of = pl_calloc(n, sizeof(int));
    c->og.off = pl_malloc(3 * sizeof(int)), c->og.op = pl_malloc(n * sizeof(int));
    for (int i = 0; i < n; i++)
        c->og.op[i] = g->topo[i];
    c->og.off[0] = 0, c->og.off[1] = n;
    c->og.time_s = pl_malloc(2 * sizeof(double)), c->og.param_bytes = pl_malloc(2 * sizeof(double));
    c->og.time_s[0] = time_s, c->og.param_bytes[0] = param_bytes;
    c->k = tu_cost(g, f->c);
}

void tu_dense_build(tu_dense *f, const char *cluster, int n_groups)
{
    PL_ASSERT(n_groups == 1 || n_groups == 2);
    memset(f, 0, sizeof *f);
    dense_graph(&f->t);
    tu_dense_ctx(f, cluster, 9e-3, 1e6);
    pl_train_ctx *c = &f->x;
    if (n_groups == 2) { /* forward {A, loss}, backward {A:grad_w, W:adam} */
        c->og.n = 2;
        for (int i = 0; i < 4; i++)
            c->og.group_of[i] = i / 2;
        c->og.off[1] = 2, c->og.off[2] = 4;
        c->og.time_s[0] = 4e-3, c->og.time_s[1] = 5e-3;
        c->og.param_bytes[0] = 0, c->og.param_bytes[1] = 1e6;
    }
}

double tu_dense_eval_s(const tu_dense *f, const pl_train_strategy *s)
{
    pl_train_eval e;
    pl_err err = {""};
    if (pl_train_evaluate(&f->x, s, &e, &err) < 0) fail_msg("%s", err.msg);
    double t = e.oom ? INFINITY : e.iteration_s;
    pl_train_eval_free(&e);
    return t;
}

void tu_dense_free(tu_dense *f)
{
    pl_cost_free(f->x.k);
    free(f->x.dg.off), free(f->x.dg.dev), free(f->x.dg.group_of);
    free(f->x.og.group_of), free(f->x.og.off), free(f->x.og.op);
    free(f->x.og.time_s), free(f->x.og.param_bytes);
    pl_cluster_free(f->c);
    free(f->t.batched);
    pl_graph_free(f->t.g);
}

static char *mpi_was; /* PLACER_BIN before tu_mpi_begin */
static bool mpi_had;

bool tu_mpi_program(const char *name, char *path, size_t n)
{
    const char *bin = getenv("PLACER_BIN");
    char dir[512];
    snprintf(dir, sizeof dir, "%s", bin ? bin : "build/placer");
    snprintf(path, n, "%s/%s", dirname(dir), name);
    if (access(path, X_OK) == 0 && system("command -v mpirun >/dev/null 2>&1") == 0) return true;
    print_message("skipped: no %s or no mpirun (MPI is optional: docs/dist.md)\n", path);
    return false;
}

bool tu_mpi_begin(int n_ranks)
{
    const char *bin = getenv("PLACER_BIN");
    char mpi[600], cmd[2048];
    if (!tu_mpi_program("placer-mpi", mpi, sizeof mpi)) return false;
    /* leak checking off for the ranks (under `make asan`): OpenMPI's own allocations at
     * MPI_Finalize are reported as leaks; the verbs' are checked by one-process runs */
    snprintf(cmd, sizeof cmd,
             "env ASAN_OPTIONS=detect_leaks=0 mpirun -np %d --oversubscribe --allow-run-as-root %s",
             n_ranks, mpi);
    mpi_had = bin != NULL;
    free(mpi_was);
    mpi_was = bin ? strdup(bin) : NULL;
    setenv("PLACER_BIN", cmd, 1);
    return true;
}

void tu_mpi_end(void)
{
    if (mpi_had)
        setenv("PLACER_BIN", mpi_was, 1);
    else
        unsetenv("PLACER_BIN");
    free(mpi_was);
    mpi_was = NULL;
}
