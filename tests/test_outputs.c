/* test_outputs.c: outputs are written whole or not at all (pl_out, docs/formats.md). A write
 * that fails midway (RLIMIT_FSIZE standing in for a full disk) or a process stopped by a signal
 * leaves the old file byte for byte and no other file beside it; the command says why and
 * exits non-zero. */
#include "testutil.h"

#include "placer/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
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

/* ---- files committed as one (pl_outset) ---- */

/* This test's rename() stands in for libc's in the library too (the executable's definition
 * comes first): armed, the rename numbered `fail_at` fails (EIO) and the one numbered
 * `term_at` is followed by SIGTERM, so a fault lands between two renames of a commit without
 * any timing. */
static int renames, fail_at = -1, term_at = -1;

int rename(const char *from, const char *to)
{
    int k = renames++;
    if (k == fail_at) return errno = EIO, -1;
    int rc = renameat(AT_FDCWD, from, AT_FDCWD, to);
    if (k == term_at) raise(SIGTERM);
    return rc;
}

/* A pair w, w.json in a fresh folder: "old" and "old json" unless `absent`. */
static void old_pair(char dir[64], char w[128], char side[128], bool absent)
{
    if (tu_mkdtemp(dir, 64, "placer-outset") < 0) fail_msg("mkdtemp failed");
    snprintf(w, 128, "%s/w", dir), snprintf(side, 128, "%s/w.json", dir);
    pl_err err = {""};
    if (!absent && (pl_out_write_file(w, "old\n", 4, &err) < 0 ||
                    pl_out_write_file(side, "old json\n", 9, &err) < 0))
        fail_msg("%s", err.msg);
}

/* The new pair's temporaries written, then committed with the renames armed; 0 or -1. */
static int commit_new(const char *w, const char *side, pl_err *err)
{
    pl_outset s = {0};
    if (pl_outset_add(&s, w, err) < 0 || pl_outset_add(&s, side, err) < 0) return -1;
    if (pl_out_write_file(s.tmp[0], "new\n", 4, err) < 0 ||
        pl_out_write_file(s.tmp[1], "new json\n", 9, err) < 0)
        return pl_outset_abort(&s), -1;
    renames = 0;
    int rc = pl_outset_commit(&s, err);
    fail_at = term_at = -1;
    return rc;
}

static void expect_pair(const char *dir, const char *w, const char *side, const char *a,
                        const char *b)
{
    expect_content(w, a);
    expect_content(side, b);
    char got[64] = "";
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++, snprintf(got, sizeof got, "%.60s", e->d_name);
    closedir(d);
    if (n != 2) fail_msg("%s holds %d entries (one is '%s'), not w and w.json", dir, n, got);
}

static void test_outset_commit(void **state)
{
    (void)state;
    char dir[64], w[128], side[128];
    pl_err err = {""};
    old_pair(dir, w, side, false);
    assert_int_equal(commit_new(w, side, &err), 0);
    expect_pair(dir, w, side, "new\n", "new json\n");
    tu_rmtree(dir);
    /* the second rename fails: the first is undone, the old pair is back */
    old_pair(dir, w, side, false);
    fail_at = 1;
    assert_int_equal(commit_new(w, side, &err), -1);
    assert_contains(err.msg, "w.json: cannot put the new file in place: Input/output error");
    assert_contains(err.msg, "nothing was replaced");
    expect_pair(dir, w, side, "old\n", "old json\n");
    tu_rmtree(dir);
}

/* A folder where a member goes is refused before anything is renamed (learn-prior's weights
 * were removed when FILE.json was a folder). */
static void test_outset_refuses_folder(void **state)
{
    (void)state;
    char dir[64], w[128], side[128];
    pl_err err = {""};
    old_pair(dir, w, side, false);
    assert_int_equal(unlink(side), 0);
    assert_int_equal(mkdir(side, 0700), 0);
    pl_outset s = {0};
    assert_int_equal(pl_outset_add(&s, w, &err), 0);
    assert_int_equal(pl_outset_add(&s, side, &err), -1);
    assert_contains(err.msg, "w.json: is a folder, not a file");
    pl_outset_abort(&s);
    expect_content(w, "old\n");
    tu_rmtree(dir);
}

/* SIGTERM right after the first rename of a commit, or right after the last (before the commit
 * has marked itself done): the handler puts the old pair back, in the first case over a new
 * w, in the second over both. */
static void signal_in_commit(int at, bool absent)
{
    char dir[64], w[128], side[128];
    old_pair(dir, w, side, absent);
    pid_t pid = fork();
    if (pid == 0) {
        pl_err err = {""};
        term_at = at;
        commit_new(w, side, &err);
        _exit(3); /* not reached */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    if (absent)
        tu_expect_empty_dir(dir);
    else
        expect_pair(dir, w, side, "old\n", "old json\n");
    tu_rmtree(dir);
}

static void test_outset_signal(void **state)
{
    (void)state;
    signal_in_commit(0, false);
    signal_in_commit(1, false);
    signal_in_commit(0, true);
}

/* learn-prior -o w with a folder named w.json: refused before training, w as it was. */
static void test_learn_prior_pair(void **state)
{
    (void)state;
    char dir[64], args[1024], *out;
    if (tu_mkdtemp(dir, sizeof dir, "placer-out") < 0) fail_msg("mkdtemp failed");
    const char *fast = "--topologies 1 --iterations 5 --rounds 1 --steps 1 --min-visits 1";
    snprintf(args, sizeof args, "learn-prior models/gcn_cora.onnx -o %s/w %s 2>&1", dir, fast);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    char w[128], side[128];
    snprintf(w, sizeof w, "%s/w", dir), snprintf(side, sizeof side, "%s/w.json", dir);
    size_t n0, n1;
    char *before = slurp(w, &n0);
    assert_int_equal(unlink(side), 0);
    assert_int_equal(mkdir(side, 0700), 0);
    snprintf(args, sizeof args, "learn-prior models/gcn_cora.onnx -o %s/w %s --seed 3 2>&1", dir,
             fast);
    assert_int_equal(tu_run(args, &out), 2);
    assert_contains(out, "w.json: is a folder, not a file");
    free(out);
    char *after = slurp(w, &n1);
    if (n1 != n0 || memcmp(before, after, n0)) fail_msg("%s: the old weights were changed", w);
    free(before), free(after);
    tu_rmtree(dir);
}

/* ---- temporary folders ---- */

/* A run's private folder (pl_make_temp_dir) and a folder being filled (pl_outdir), with files
 * and a folder in them: SIGTERM removes both whole (serverless --run left /dev/shm/placer-sl-*
 * and $TMPDIR/placer-redis-*; serverless -o DIR an empty .DIR.tmp.PID). */
static void test_signal_removes_folders(void **state)
{
    (void)state;
    char tmp[64], out[128];
    assert_int_equal(tu_tmpdir_begin(tmp, sizeof tmp, "placer-tmpdirs"), 0);
    snprintf(out, sizeof out, "%s/split", tmp);
    pid_t pid = fork();
    if (pid == 0) {
        char run[4096], p[4200];
        pl_err err = {""};
        pl_outdir od;
        if (pl_make_temp_dir("placer-run", run, sizeof run, &err) < 0 ||
            pl_outdir_open(&od, out, &err) < 0)
            _exit(3);
        snprintf(p, sizeof p, "%s/sub", run);
        if (mkdir(p, 0700) < 0) _exit(4);
        snprintf(p, sizeof p, "%s/sub/f", run);
        if (pl_out_write_file(p, "x", 1, &err) < 0) _exit(5);
        snprintf(p, sizeof p, "%s/stage_00.onnx", od.tmp);
        if (pl_out_write_file(p, "x", 1, &err) < 0) _exit(6);
        raise(SIGTERM);
        _exit(7);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    tu_expect_empty_dir(tmp);
    /* and pl_remove_tree ends a registration: the name can be made again and removed */
    char run[4096];
    pl_err err = {""};
    assert_int_equal(pl_make_temp_dir("placer-run", run, sizeof run, &err), 0);
    assert_int_equal(pl_remove_tree(run), 0);
    tu_expect_empty_dir(tmp);
    tu_tmpdir_end(tmp);
}

/* ---- the signal thread's death beside a library's own handler (pl_signals_hold) ---- */

/* This test's signal() stands in for libc's in the library too (as rename above): armed, the
 * call that restores SIGTERM's default action waits `widen_us` after it, so that the moment
 * between it and the raise that follows (src/common/out.c, die_of) lasts 20 ms instead of a
 * microsecond. */
static volatile int widen_us;

void (*signal(int sig, void (*h)(int)))(int)
{
    struct sigaction sa = {0}, old;
    sa.sa_handler = h;
    sa.sa_flags = SA_RESTART; /* glibc's signal() */
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &old) < 0) return SIG_ERR;
    if (widen_us && sig == SIGTERM && h == SIG_DFL) usleep((useconds_t)widen_us);
    return old.sa_handler;
}

static void foreign(int sig)
{
    (void)sig;
    _exit(3);
}

/* A SIGTERM while the main thread calls, again and again, a library that swaps its own
 * handler in for each call (METIS's gk_sigtrap: its handler, run in the signal thread,
 * longjmped into a buffer that thread never set, a SIGSEGV once in `make test`): the process
 * dies of SIGTERM. Before pl_signals_hold, the handler swapped in while the dying thread
 * stood between restoring the default action and raising the signal ran instead: exit 3. */
static void test_signals_hold(void **state)
{
    (void)state;
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction dfl = {0}, f = {0}, old;
        dfl.sa_handler = SIG_DFL, f.sa_handler = foreign;
        sigemptyset(&dfl.sa_mask), sigemptyset(&f.sa_mask);
        sigaction(SIGTERM, &dfl, NULL); /* an earlier test's pl_out installed its handler */
        if (pl_out_take_signals() <= 0) _exit(4);
        widen_us = 20000;
        kill(getpid(), SIGTERM); /* blocked here: the signal thread takes it */
        for (;;) {               /* METIS's handler in place for 1 ms of every 1.2 */
            pl_signals_hold();   /* as src/place/metis.c around each METIS call */
            sigaction(SIGTERM, &f, &old);
            usleep(1000);
            sigaction(SIGTERM, &old, NULL);
            pl_signals_release();
            usleep(200);
        }
    }
    int st = 0;
    pid_t r = 0;
    for (int ms = 0; r == 0 && ms < 10000; ms++) /* the dying thread may not wait forever */
        if ((r = waitpid(pid, &st, WNOHANG)) == 0) usleep(1000);
    if (r == 0) {
        kill(pid, SIGKILL), waitpid(pid, &st, 0);
        fail_msg("still running 10 s after SIGTERM (killed)");
    }
    assert_int_equal(r, pid);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGTERM)
        fail_msg("status %d (%s %d), not death by SIGTERM", st, WIFEXITED(st) ? "exit" : "signal",
                 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* pl_mkdir_p on a read-only file system says so (it said "No such file or directory", the
 * reason of the last mkdir, not of the first that failed). Needs a read-only tmpfs in a
 * private mount namespace; skipped, saying why, where one cannot be made. */
static void test_mkdir_read_only(void **state)
{
    (void)state;
    char dir[64];
    if (tu_mkdtemp(dir, sizeof dir, "placer-rofs") < 0) fail_msg("mkdtemp failed");
    pid_t pid = fork();
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("none", dir, "tmpfs", MS_RDONLY, "size=64k") < 0) {
            printf("  skipped: cannot mount a read-only tmpfs here: %s\n", strerror(errno));
            _exit(77);
        }
        char p[128];
        pl_err err = {""};
        snprintf(p, sizeof p, "%s/a/b", dir);
        if (pl_mkdir_p(p, &err) == 0) _exit(3);
        printf("  %s\n", err.msg);
        _exit(strstr(err.msg, "Read-only file system") ? 0 : 4);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) != 77) assert_int_equal(WEXITSTATUS(st), 0);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_api),
        cmocka_unit_test(test_signal_removes_temporary),
        cmocka_unit_test(test_place_plan),
        cmocka_unit_test(test_place_trace),
        cmocka_unit_test(test_simulate_trace),
        cmocka_unit_test(test_deploy_plan),
        cmocka_unit_test(test_outset_commit),
        cmocka_unit_test(test_outset_refuses_folder),
        cmocka_unit_test(test_outset_signal),
        cmocka_unit_test(test_learn_prior_pair),
        cmocka_unit_test(test_signal_removes_folders),
        cmocka_unit_test(test_mkdir_read_only),
        cmocka_unit_test(test_signals_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
