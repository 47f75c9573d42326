/* test_symbols.c: tools/check_symbols.sh, the exported-symbol check that `make test` runs
 * (issue 28: libplacer exported 309 symbols without the pl_ prefix and held 11 repeated
 * member names). It passes on libplacer.a, and it fails naming the member and the symbol on
 * the unstripped internal library, where graph's private ir_ functions are still global: the
 * check can fail. Both archives are those of PLACER_BIN's build folder (build, build-asan). */
#include "testutil.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char build[1024];

static int setup(void **state)
{
    (void)state;
    const char *b = getenv("PLACER_BIN");
    char bin[1024];
    snprintf(bin, sizeof bin, "%s", b ? b : "build/placer");
    snprintf(build, sizeof build, "%s", dirname(bin));
    /* tu_run runs PLACER_BIN with the arguments: here the check */
    setenv("PLACER_BIN", "tools/check_symbols.sh", 1);
    return 0;
}

static int check(const char *lib, char **out)
{
    char args[1100];
    snprintf(args, sizeof args, "%s/%s", build, lib);
    return tu_run(args, out);
}

static void test_library_exports_only_pl(void **state)
{
    (void)state;
    char *out;
    int rc = check("libplacer.a", &out);
    if (rc != 0) fail_msg("check_symbols on libplacer.a: exit %d:\n%s", rc, out);
    assert_non_null(strstr(out, "exports only pl_ symbols"));
    free(out);
}

static void test_private_symbol_named(void **state)
{
    (void)state;
    char *out;
    int rc = check("libplacer-internal.a", &out);
    assert_int_equal(rc, 1);
    if (!strstr(out, "libplacer-internal.a: graph.o exports ir_"))
        fail_msg("graph's private ir_ symbols not named:\n%s", out);
    assert_null(strstr(out, "exports pl_"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_exports_only_pl),
        cmocka_unit_test(test_private_symbol_named),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
