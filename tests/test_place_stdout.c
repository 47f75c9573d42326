/* test_place_stdout.c: a placement leaves the process's standard output alone.
 *
 * METIS prints "***Cannot bisect a graph with 0 vertices!" on stdout from its own recursive
 * bisection (rnnlm on nvlink-8gpu reaches it), and src/place/metis.c used to hide that by
 * pointing fd 1 at /dev/null around the call: anything the program (or another of its threads)
 * wrote to stdout meanwhile was lost, inside a library call. This binary interposes dup2 and
 * dup3 (the executable's definitions win over libc's for the library linked into it) to see
 * any change of fd 1, and captures fd 1 in a file to see what reached it. */
#include "testutil.h"
#include "placer/plan.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd1_changes; /* dup2/dup3 calls onto fd 1 while armed */
static int armed;

int dup2(int old, int new)
{
    static int (*real)(int, int);
    if (!real) real = (int (*)(int, int))dlsym(RTLD_NEXT, "dup2");
    if (armed && new == STDOUT_FILENO) fd1_changes++;
    return real(old, new);
}

int dup3(int old, int new, int flags)
{
    static int (*real)(int, int, int);
    if (!real) real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "dup3");
    if (armed && new == STDOUT_FILENO) fd1_changes++;
    return real(old, new, flags);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *s = calloc(1, 1 << 16);
    size_t n = fread(s, 1, (1 << 16) - 1, f);
    s[n] = 0;
    fclose(f);
    return s;
}

static void test_metis_leaves_stdout_alone(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/rnnlm.onnx");
    char path[] = "/tmp/placer-stdout-XXXXXX";
    int cap = mkstemp(path);
    assert_true(cap >= 0);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO); /* the test's own capture, before arming */
    assert_int_equal(dup2(cap, STDOUT_FILENO), STDOUT_FILENO);
    struct stat before, after;
    assert_int_equal(fstat(STDOUT_FILENO, &before), 0);
    printf("before\n");
    armed = 1;
    struct pl_plan *p = tu_plan(g, "examples/clusters/nvlink-8gpu.json", "metis");
    armed = 0;
    printf("after\n");
    fflush(stdout);
    assert_int_equal(fstat(STDOUT_FILENO, &after), 0);
    dup2(saved, STDOUT_FILENO), close(saved), close(cap);
    char *out = slurp(path);
    unlink(path);
    assert_int_equal(fd1_changes, 0); /* fd 1 never redirected */
    assert_true(before.st_ino == after.st_ino && before.st_dev == after.st_dev);
    assert_string_equal(out, "before\nafter\n"); /* nothing from METIS, nothing lost */
    free(out);
    pl_plan_free(p), pl_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metis_leaves_stdout_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
