/* test_outputs.c: outputs are written whole or not at all (pl_out, docs/formats.md). A write
 * that fails midway (RLIMIT_FSIZE standing in for a full disk) or a process stopped by a signal
 * leaves the old file byte for byte and no other file beside it; the command says why and
 * exits non-zero. */
#include "testutil.h"

#include "placer/common.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define INTRA "examples/clusters/moirai-intra-server.json"
#define MODEL "models/resnet50.onnx"

static char *slurp(const char *path, size_t *n)
{
    pl_err err;
    char *b = pl_read_file(path, n, &err);
    if (!b) fail_msg("%s", err.msg);
    return b;
}

/* The folder holds exactly `want` (one name), nothing hidden or partial beside it. */
static void only_entry(const char *dir, const char *want)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, want))
            fail_msg("%s holds '%s' beside '%s'", dir, e->d_name, want);
    closedir(d);
}

/* Writes `path` with `args` (which name it) unlimited, then again with files capped at 4 KiB:
 * the second run fails with the reason and leaves the first one's bytes. */
static void check_writer(const char *dir, const char *file, const char *args)
{
    char path[512], *out;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int rc = tu_run(args, &out);
    if (rc != 0) fail_msg("placer %s: exit %d\n%s", args, rc, out);
    free(out);
    size_t n0, n1;
    char *before = slurp(path, &n0);
    if (n0 <= 4096) fail_msg("%s: %zu bytes, too small to be cut at 4 KiB", path, n0);
    rc = tu_run_fsize(args, 4096, &out);
    if (rc == 0) fail_msg("placer %s: exit 0 with files capped at 4 KiB\n%s", args, out);
    assert_contains(out, "cannot write");
    assert_contains(out, "File too large");
    assert_contains(out, path);
    free(out);
    char *after = slurp(path, &n1);
    if (n1 != n0 || memcmp(before, after, n0))
        fail_msg("%s: the old file was changed (%zu bytes, now %zu)", path, n0, n1);
    only_entry(dir, file);
    free(before), free(after);
}

static void test_place_plan(void **state)
{
    (void)state;
    char dir[64], args[1024];
    if (tu_mkdtemp(dir, sizeof dir, "placer-out") < 0) fail_msg("mkdtemp failed");
    snprintf(args, sizeof args,
             "place " MODEL " --cluster " INTRA " --algo heft -o %s/plan.json 2>&1 >/dev/null",
             dir);
    check_writer(dir, "plan.json", args);
    tu_rmtree(dir);
}

static void test_place_trace(void **state)
{
    (void)state;
    char dir[64], args[1024];
    if (tu_mkdtemp(dir, sizeof dir, "placer-out") < 0) fail_msg("mkdtemp failed");
    snprintf(args, sizeof args,
             "place " MODEL " --cluster " INTRA
             " --algo heft --trace %s/trace.json 2>&1 >/dev/null",
             dir);
    check_writer(dir, "trace.json", args);
    tu_rmtree(dir);
}

static void test_deploy_plan(void **state)
{
    (void)state;
    char dir[64], args[1024];
    if (tu_mkdtemp(dir, sizeof dir, "placer-out") < 0) fail_msg("mkdtemp failed");
    snprintf(args, sizeof args,
             "deploy " MODEL " --catalog catalogs/autodeep-testbed.json --slo 50ms -o %s/plan.json "
             "2>&1 >/dev/null",
             dir);
    check_writer(dir, "plan.json", args);
    tu_rmtree(dir);
}

static void test_simulate_trace(void **state)
{
    (void)state;
    char dir[64], args[1024], *out;
    if (tu_mkdtemp(dir, sizeof dir, "placer-out") < 0) fail_msg("mkdtemp failed");
    snprintf(args, sizeof args,
             "place " MODEL " --cluster " INTRA " --algo heft -o %s/p.json >/dev/null", dir);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/t", dir);
    if (mkdir(sub, 0700) < 0) fail_msg("mkdir %s", sub);
    snprintf(args, sizeof args,
             "simulate " MODEL " --cluster " INTRA " --plan %s/p.json --trace %s/trace.json "
             "2>&1 >/dev/null",
             dir, sub);
    check_writer(sub, "trace.json", args);
    tu_rmtree(dir);
}

/* A fresh folder in dir holding f.txt = "old\n" (path), written through pl_out. */
static void old_file(char dir[64], char path[128])
{
    if (tu_mkdtemp(dir, 64, "placer-out") < 0) fail_msg("mkdtemp failed");
    snprintf(path, 128, "%s/f.txt", dir);
    pl_err err = {""};
    if (pl_out_write_file(path, "old\n", 4, &err) < 0) fail_msg("%s", err.msg);
}

static void expect_content(const char *path, const char *want)
{
    size_t n;
    char *b = slurp(path, &n);
    assert_string_equal(b, want);
    free(b);
}

/* The library's own contract: nothing at the path until commit; abort leaves the old file. */
static void test_out_api(void **state)
{
    (void)state;
    char dir[64], path[128];
    old_file(dir, path);
    pl_err err = {""};
    pl_out o;
    assert_int_equal(pl_out_open(&o, path, &err), 0);
    char want[160];
    snprintf(want, sizeof want, "%s/.f.txt.tmp.%ld", dir, (long)getpid());
    assert_string_equal(o.tmp, want); /* hidden, in the same folder, with the writer's PID */
    fputs("new and longer\n", o.f);
    fflush(o.f);
    expect_content(path, "old\n"); /* not yet */
    pl_out_abort(&o);
    expect_content(path, "old\n");
    only_entry(dir, "f.txt");
    assert_int_equal(pl_out_open(&o, path, &err), 0);
    fputs("new\n", o.f);
    assert_int_equal(pl_out_commit(&o, &err), 0);
    expect_content(path, "new\n");
    only_entry(dir, "f.txt");
    tu_rmtree(dir);
}

/* SIGTERM in the middle of a write: the handler removes the temporary, the old file stays. The
 * child stops itself at a known point, so nothing depends on timing. */
static void test_signal_removes_temporary(void **state)
{
    (void)state;
    char dir[64], path[128];
    old_file(dir, path);
    pl_err err = {""};
    pid_t pid = fork();
    if (pid == 0) {
        pl_out o;
        if (pl_out_open(&o, path, &err) < 0) _exit(3);
        fputs("half a fi", o.f);
        fflush(o.f);
        raise(SIGTERM);
        _exit(4); /* not reached: the default action follows the cleanup */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGTERM);
    expect_content(path, "old\n");
    only_entry(dir, "f.txt");
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_api),        cmocka_unit_test(test_signal_removes_temporary),
        cmocka_unit_test(test_place_plan),     cmocka_unit_test(test_place_trace),
        cmocka_unit_test(test_simulate_trace), cmocka_unit_test(test_deploy_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
