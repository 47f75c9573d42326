/* test_crashers.c: every input that once crashed a reader (found by fuzzing: tools/fuzz.sh)
 * stays here as a test. Each must load or be refused with a message; under `make asan` a
 * sanitizer report fails the run. The reader is chosen by the suffix tools/fuzz.sh gives:
 * *.catalog.json is a catalogue, *.platform.json a serverless platform, *.published.json published
 * GPU timings, anything else (*.onnx, *.json) a model. */
#include "placer/calib.h"
#include "placer/catalog.h"
#include "placer/serverless.h"
#include "testutil.h"

#include <glob.h>
#include <string.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Loads one crasher with its reader; true when it loaded. */
static bool replay(const char *path, pl_err *err)
{
    if (ends_with(path, ".catalog.json")) {
        pl_catalog *c = pl_catalog_load(path, err);
        pl_catalog_free(c);
        return c != NULL;
    }
    if (ends_with(path, ".platform.json")) {
        pl_platform *p = pl_platform_load(path, err);
        pl_platform_free(p);
        return p != NULL;
    }
    if (ends_with(path, ".published.json")) {
        pl_published p;
        int rc = pl_published_load(path, &p, err);
        pl_published_free(&p);
        return rc == 0;
    }
    pl_graph *g = pl_graph_load(path, NULL, err);
    if (!g) return false;
    pl_graph_summary s;
    pl_graph_summarize(g, &s); /* touch every derived field, as the fuzzer does */
    pl_graph_summary_free(&s);
    pl_graph_free(g);
    return true;
}

static void test_replay_crashers(void **state)
{
    (void)state;
    glob_t gl;
    assert_int_equal(glob("tests/data/crashers/*", 0, NULL, &gl), 0);
    for (size_t k = 0; k < gl.gl_pathc; k++) {
        pl_err err = {""};
        if (!replay(gl.gl_pathv[k], &err) && (!err.msg[0] || !strstr(err.msg, gl.gl_pathv[k])))
            fail_msg("%s: refused without a message naming the file: '%s'", gl.gl_pathv[k],
                     err.msg);
    }
    assert_true(gl.gl_pathc >= 1);
    globfree(&gl);
}

/* The first crasher: a Reshape to [1, 0x3100000000000001, 1, 2] then a Tile made the byte
 * count overflow an int64 (undefined behaviour). Its 2 elements do not fit that target, so the
 * Reshape is refused by name before the Tile is reached (it loaded with the huge tensor of
 * unknown size before the element count was checked). */
static void test_huge_shape_has_unknown_size(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_null(pl_graph_load("tests/data/crashers/infer_castoverflow.onnx", NULL, &err));
    assert_non_null(strstr(err.msg, "node 1 'Reshape_1' (Reshape): the input's 2 elements do "
                                    "not fit the target shape"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_crashers),
        cmocka_unit_test(test_huge_shape_has_unknown_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
