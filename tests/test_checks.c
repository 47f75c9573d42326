/* test_checks.c: contracts written in headers are checked under PL_CHECKS (`make asan`).
 *
 * Each case breaks one contract in a child process and expects the child to die by SIGABRT
 * after printing "internal check failed" with the condition. In the normal build PL_ASSERT
 * costs nothing and checks nothing, so the cases are skipped with a message. */
#include "testutil.h"
#include "placer/common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs breach() in a child; the child's stderr (what the check printed) into msg. Returns the
 * signal that ended it, 0 when it exited. */
#ifdef PL_CHECKS
static int died_by(void (*breach)(void), char *msg, size_t n)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], STDERR_FILENO), close(fd[0]), close(fd[1]);
        breach();
        _exit(0); /* the contract was not checked */
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < n && (r = read(fd[0], msg + len, n - 1 - len)) > 0)
        len += (size_t)r;
    msg[len] = 0;
    close(fd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}
#endif

static void expect_abort(void (*breach)(void), const char *condition)
{
#ifndef PL_CHECKS
    (void)breach, (void)condition;
    print_message("PL_CHECKS is not defined in this build: contracts are not checked "
                  "(run make asan)\n");
    skip();
#else
    char msg[4096];
    assert_int_equal(died_by(breach, msg, sizeof msg), SIGABRT);
    if (!strstr(msg, "internal check failed") || !strstr(msg, condition))
        fail_msg("the check said: %s", msg);
#endif
}

static void pop_empty_heap(void)
{
    pl_heap h = {0};
    pl_heap_pop(&h);
}

static void draw_below_zero(void)
{
    uint64_t s = 1;
    pl_rng_below(&s, 0);
}

static void test_heap_pop_checks_non_empty(void **state)
{
    (void)state;
    expect_abort(pop_empty_heap, "h->n > 0");
}

static void test_rng_below_checks_positive(void **state)
{
    (void)state;
    expect_abort(draw_below_zero, "n > 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_pop_checks_non_empty),
        cmocka_unit_test(test_rng_below_checks_positive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
