/* testutil.c: shared helpers for the tests. */
#include "testutil.h"

#include <jansson.h>

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

int tu_tmpdir_begin(char *buf, size_t n, const char *prefix)
{
    if (tu_mkdtemp(buf, n, prefix) < 0) return -1;
    return setenv("TMPDIR", buf, 1);
}

int tu_tmpdir_end(const char *dir)
{
    unsetenv("TMPDIR");
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
