/* test_proc.c: common.h's child processes (pl_proc) and shared-memory folders
 * (pl_make_shm_dir): a child and what it starts end as one, SIGTERM comes before SIGKILL, a
 * log takes both outputs, a program that cannot run says why, a forked copy's status comes
 * back; PLACER_SHM_DIR moves the shared-memory folders. */
#include "testutil.h"

#include "placer/common.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void start(pl_proc *p, const char *script, const char *log)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    pl_err err = {""};
    if (pl_proc_start(p, argv, log, "the test's shell", "\n", &err) < 0) fail_msg("%s", err.msg);
}

static char *line(pl_proc *p)
{
    char *l = NULL;
    assert_int_equal(pl_proc_line(p, 20, &l), PL_PROC_LINE);
    return l;
}

/* Whether pid is still a live process (a zombie has ended). */
static bool alive(int pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *r = strrchr(buf, ')');
    return r && r[1] == ' ' && r[2] != 'Z';
}

/* The grandchild (a background sleep) goes with the child: SIGKILL reaches the whole group. */
static void test_group_killed(void **state)
{
    (void)state;
    pl_proc p;
    start(&p, "sleep 100 & echo $!; wait", NULL);
    char *l = line(&p);
    int grandchild = atoi(l);
    free(l);
    assert_true(grandchild > 0 && alive(grandchild));
    char how[64];
    pl_proc_end(&p, false, 0.05, how, sizeof how);
    assert_string_equal(how, "did not exit and was killed");
    assert_int_equal(p.pid, -1);
    for (int i = 0; i < 400 && alive(grandchild); i++) /* reaped by init, not by us */
        usleep(10000);
    assert_false(alive(grandchild));
}

/* With term, the child gets SIGTERM first and may exit by itself (its status is reported); one
 * that ignores SIGTERM is killed after the grace period. */
static void test_term_then_kill(void **state)
{
    (void)state;
    const char *trap[] = {"trap 'exit 3' TERM", "trap '' TERM"};
    const char *said[] = {"exited with status 3", "did not exit and was killed"};
    double grace[] = {20, 0.2};
    for (int k = 0; k < 2; k++) {
        char script[160], how[64];
        snprintf(script, sizeof script, "%s; echo ready; while :; do sleep 0.02; done", trap[k]);
        pl_proc p;
        start(&p, script, NULL);
        free(line(&p));
        pl_proc_end(&p, true, grace[k], how, sizeof how);
        assert_string_equal(how, said[k]);
    }
}

/* With a log, stdout and stderr go to the file; pl_proc_exited sees the exit without reaping. */
static void test_log(void **state)
{
    (void)state;
    char dir[256], log[300];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-test-proc"), 0);
    snprintf(log, sizeof log, "%s/child.log", dir);
    pl_proc p;
    start(&p, "echo out; echo err >&2; exit 4", log);
    char how[64] = "";
    for (int i = 0; i < 2000 && !pl_proc_exited(&p, how, sizeof how); i++)
        usleep(10000);
    assert_string_equal(how, "exited with status 4");
    assert_true(p.pid > 0); /* not reaped yet */
    pl_proc_end(&p, true, 1, how, sizeof how);
    assert_string_equal(how, "exited with status 4");
    size_t n;
    pl_err err;
    char *text = pl_read_file(log, &n, &err);
    assert_non_null(text);
    assert_string_equal(text, "out\nerr\n");
    free(text);
    tu_rmtree(dir);
}

/* A program that cannot be executed: status 127, and the hint in its stderr tail. */
static void test_cannot_execute(void **state)
{
    (void)state;
    char *argv[] = {"/nonexistent/placer-no-such-program", NULL};
    pl_proc p;
    pl_err err = {""};
    assert_int_equal(pl_proc_start(&p, argv, NULL, "nothing", " (install it)\n", &err), 0);
    char *l = NULL;
    assert_int_equal(pl_proc_line(&p, 20, &l), PL_PROC_EOF);
    char how[64], tail[PL_PROC_TAIL];
    pl_proc_end(&p, false, 20, how, sizeof how);
    assert_string_equal(how, "exited with status 127");
    assert_string_equal(pl_proc_tail(&p, tail, sizeof tail),
                        "cannot execute /nonexistent/placer-no-such-program (install it)");
}

/* A child's coloured log (onnxruntime's errors are red) reaches a message as plain text. */
static void test_tail_colours(void **state)
{
    (void)state;
    char *argv[] = {"sh", "-c", "printf '\\033[1;31mFAIL : no lib\\033[m\\n' >&2", NULL};
    pl_proc p;
    pl_err err = {""};
    assert_int_equal(pl_proc_start(&p, argv, NULL, "sh", "\n", &err), 0);
    char *l = NULL, tail[PL_PROC_TAIL];
    assert_int_equal(pl_proc_line(&p, 20, &l), PL_PROC_EOF);
    pl_proc_end(&p, false, 20, NULL, 0);
    assert_string_equal(pl_proc_tail(&p, tail, sizeof tail), "FAIL : no lib");
}

/* PLACER_SHM_DIR is where shared-memory folders go; TMPDIR does not move them. */
static void test_shm_dir(void **state)
{
    (void)state;
    char base[256], tmp[256], out[512];
    assert_int_equal(tu_mkdtemp(base, sizeof base, "placer-test-shm"), 0);
    assert_int_equal(tu_tmpdir_begin(tmp, sizeof tmp, "placer-test-tmp"), 0);
    setenv("PLACER_SHM_DIR", base, 1);
    pl_err err = {""};
    assert_int_equal(pl_make_shm_dir("placer-x", out, sizeof out, &err), 0);
    char want[300];
    snprintf(want, sizeof want, "%s/placer-x-", base);
    assert_int_equal(strncmp(out, want, strlen(want)), 0);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    pl_remove_tree(out);
    unsetenv("PLACER_SHM_DIR");
    if (stat("/dev/shm", &st) == 0) {
        assert_int_equal(pl_make_shm_dir("placer-x", out, sizeof out, &err), 0);
        assert_int_equal(strncmp(out, "/dev/shm/placer-x-", 18), 0);
        pl_remove_tree(out);
    }
    tu_tmpdir_end(tmp);
    tu_rmtree(base);
}

static void exit_5(void *ctx)
{
    (void)ctx;
    _exit(5);
}

static void hang(void *ctx)
{
    (void)ctx;
    for (;;)
        pause();
}

/* pl_proc_fork: a copy running a function; pl_proc_end returns its wait status when it exits
 * in time, -1 when it had to be killed. */
static void test_fork(void **state)
{
    (void)state;
    pl_proc p;
    pl_err err = {""};
    char how[64];
    assert_int_equal(pl_proc_fork(&p, exit_5, NULL, "a copy", &err), 0);
    assert_int_equal(p.in, -1);
    int st = pl_proc_end(&p, false, 20, how, sizeof how);
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 5);
    assert_string_equal(how, "exited with status 5");
    assert_int_equal(pl_proc_fork(&p, hang, NULL, "a copy", &err), 0);
    assert_int_equal(pl_proc_end(&p, false, 0.05, how, sizeof how), -1);
    assert_string_equal(how, "did not exit and was killed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_killed), cmocka_unit_test(test_term_then_kill),
        cmocka_unit_test(test_log),          cmocka_unit_test(test_cannot_execute),
        cmocka_unit_test(test_tail_colours), cmocka_unit_test(test_shm_dir),
        cmocka_unit_test(test_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
