/* test_install.c: `make install` (tools/install.sh) into a temporary prefix, then every verb
 * of the installed placer from another, empty working directory, on the installed catalogues
 * and clusters: placer finds its worker, onnxruntime-node and its default cluster from its
 * executable, never from the working directory (issue 12: `placer run` elsewhere failed with
 * "Cannot find module '<cwd>/tools/ort_worker.js'"), and its cache in $PLACER_CACHE. The
 * install is staged with DESTDIR, so the installed tree is also shown to be relocatable.
 * Needs onnxruntime-node from `make deps`. */
#include "testutil.h"
#include "placer/calib.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char stage[64], cwd[64], prefix[256], share[320], bin[1024];

/* Runs the installed placer in cwd (tu_run runs PLACER_BIN through the shell, so PLACER_BIN
 * can change directory first); it must exit 0 and print `needle`. */
static void verb(const char *args, const char *needle)
{
    char *out;
    int rc = tu_run(args, &out);
    if (rc != 0) fail_msg("placer %s (installed, in %s): exit %d:\n%s", args, cwd, rc, out);
    if (!strstr(out, needle)) fail_msg("placer %s: output lacks '%s':\n%s", args, needle, out);
    free(out);
}

static int setup(void **state)
{
    (void)state;
    if (tu_ort_setup() < 0) return -1;
    if (tu_mkdtemp(stage, sizeof stage, "placer-destdir") < 0 ||
        tu_mkdtemp(cwd, sizeof cwd, "placer-elsewhere") < 0)
        return -1;
    /* the build folder of the placer under test: that of PLACER_BIN (build, build-asan) */
    char build[1024], cmd[2048];
    const char *b = getenv("PLACER_BIN");
    snprintf(build, sizeof build, "%s", b ? b : "build/placer");
    snprintf(prefix, sizeof prefix, "%s/opt/placer", stage);
    snprintf(share, sizeof share, "%s/share/placer", prefix);
    snprintf(cmd, sizeof cmd,
             "DESTDIR=%s PREFIX=/opt/placer tools/install.sh %s >/dev/null && "
             "cp models/resnet50.onnx %s/m.onnx",
             stage, dirname(build), cwd);
    if (system(cmd) != 0) return fprintf(stderr, "failed: %s\n", cmd), -1;
    snprintf(bin, sizeof bin, "cd %s && %s/bin/placer", cwd, prefix);
    setenv("PLACER_BIN", bin, 1);
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", cwd);
    setenv("PLACER_CACHE", cache, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(stage) | tu_rmtree(cwd);
}

/* What was installed where (tools/install.sh's list). */
static void test_layout(void **state)
{
    (void)state;
    const char *files[] = {"bin/placer",
                           "lib/libplacer.a",
                           "include/placer/runtime.h",
                           "include/placer/common.h",
                           "lib/placer/ort_worker.js",
                           "lib/placer/node_modules/onnxruntime-node/package.json",
                           "lib/placer/node_modules/onnxruntime-common/package.json",
                           "share/placer/catalogs/aws.json",
                           "share/placer/clusters/local-cpu.json"};
    for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", prefix, files[k]);
        if (access(path, R_OK) != 0) fail_msg("%s was not installed", path);
    }
    /* what calibrating this machine measures must be there, or an installed placer would price
     * with the defaults */
    for (const char *const *m = pl_machine_model_names(); *m; m++) {
        char path[512];
        snprintf(path, sizeof path, "%s/share/placer/models/%s.onnx", prefix, *m);
        if (access(path, R_OK) != 0) fail_msg("%s was not installed", path);
    }
}

/* The manual names the installed files, not the source tree's. */
static void test_help(void **state)
{
    (void)state;
    char want[512];
    snprintf(want, sizeof want, "    %s/lib/placer/ort_worker.js\n", prefix);
    verb("--help", want);
    verb("--help", "EXIT STATUS");
    snprintf(want, sizeof want, "    %s/catalogs\n", share);
    verb("deploy --help", want);
    verb("run --help", "--deadline T");
    verb("run --help", "PLACER_CACHE");
}

/* Every verb, from the other directory, on the installed catalogue and cluster. */
static void test_every_verb(void **state)
{
    (void)state;
    char args[1024], local[512];
    snprintf(local, sizeof local, "%s/clusters/local-cpu-percore.json", share);
    verb("inspect m.onnx", "ops");
    snprintf(args, sizeof args, "place m.onnx --cluster %s --algo heft -o plan.json", local);
    verb(args, "algorithm   heft");
    snprintf(args, sizeof args, "simulate m.onnx --cluster %s --plan plan.json", local);
    verb(args, "(122 ops)");
    snprintf(args, sizeof args, "compare m.onnx --cluster %s --time-limit 1s", local);
    verb(args, "lower bound");
    snprintf(args, sizeof args,
             "deploy m.onnx --catalog %s/catalogs/autodeep-testbed.json --slo 1s", share);
    verb(args, "met");
    snprintf(args, sizeof args, "split m.onnx --plan plan.json --cluster %s -o split", local);
    verb(args, "manifest.json");
    verb("run split --repeat 1 --warmup 0", "latency");
    verb("profile m.onnx --repeat 1 -o prof.json", "local-epyc-core"); /* the default cluster's */
    verb("calibrate prof.json --model m.onnx", "calibrated cpu0");
    /* the cache is where PLACER_CACHE says, not in the working directory */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/cache/inflated", cwd);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    snprintf(dir, sizeof dir, "%s/build", cwd);
    assert_int_equal(stat(dir, &st), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_every_verb),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
