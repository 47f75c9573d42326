/* test_layers.c: tools/check_layers.sh, the include-graph check that `make test` runs first
 * (docs/layers.md): it passes on the tree as drawn, and fails, naming the file, the line and
 * the arrow, on a diagram that the includes contradict. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The check's output (stdout and stderr) against `diagram` (NULL: docs/layers.md); its status. */
static int check(const char *diagram, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/tools/check_layers.sh %s 2>&1", PL_SRCDIR,
             diagram ? diagram : "");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0, cap = 4096;
    *out = malloc(cap);
    for (size_t got; (got = fread(*out + n, 1, cap - n - 1, p)) > 0;)
        if ((n += got) + 1 == cap) *out = realloc(*out, cap *= 2);
    (*out)[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* docs/layers.md with `from` replaced by `to` (the first occurrence), as a temporary file. */
static char *diagram_with(const char *from, const char *to)
{
    pl_err err = {""};
    char *text = pl_read_file(PL_SRCDIR "/docs/layers.md", NULL, &err);
    if (!text) fail_msg("%s", err.msg);
    char *at = strstr(text, from);
    assert_non_null(at);
    size_t a = (size_t)(at - text), lf = strlen(from), lt = strlen(to), len = strlen(text);
    char *edited = malloc(len - lf + lt + 1);
    memcpy(edited, text, a);
    memcpy(edited + a, to, lt);
    memcpy(edited + a + lt, at + lf, len - a - lf + 1);
    char *path = strdup(tu_tmpfile(edited, strlen(edited), ".md"));
    free(text);
    free(edited);
    return path;
}

/* The tree as it is drawn: no include points up. */
static void test_tree_passes(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(check(NULL, &out), 0);
    assert_non_null(strstr(out, "none upward"));
    free(out);
}

/* The check on docs/layers.md with `from` replaced by `to`: it fails (status 1) and says `says`
 * and `also`. */
static void expect_failure(const char *from, const char *to, const char *says, const char *also)
{
    char *out, *d = diagram_with(from, to);
    int rc = check(d, &out);
    unlink(d);
    free(d);
    if (rc != 1 || !strstr(out, says) || !strstr(out, also))
        fail_msg("status %d, wanted 1 and \"%s\", \"%s\" in:\n%s", rc, says, also, out);
    free(out);
}

#define TOP "search  serverless  multi  train\ntrial\nplace  rewrite\n"

/* train drawn below place: its includes of place.h point up, and the check names the file,
 * the line and the arrow; on place's row: sideways, which fails too; left out: named. */
static void test_upward_arrow_fails(void **state)
{
    (void)state;
    expect_failure(TOP, "search  serverless  multi\ntrial\nplace  rewrite\ntrain\n",
                   "include/placer/train.h:",
                   ": train -> place (\"placer/place.h\"): place is drawn above train");
    expect_failure(TOP, "search  serverless  multi\ntrial\nplace  rewrite  train\n",
                   "include/placer/train.h:",
                   "train -> place (\"placer/place.h\"): place is drawn on the same row as train");
    expect_failure(TOP, "search  serverless  multi\ntrial\nplace  rewrite\n",
                   "src/train is not in the diagram", "upward or unknown arrow(s)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_passes),
        cmocka_unit_test(test_upward_arrow_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
