/* test_cli_multi.c: `placer multi` as a user runs it (docs/multi.md): Talos's motivating
 * example in the JSON, the op -> device map per model, a model given twice as two tenants, the
 * document written atomically with -o, and bad input refused by name. */
#include "testutil.h"

#include "placer/common.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIG1                                                                                       \
    "multi examples/multi/fig1-a.json examples/multi/fig1-b.json --cluster "                       \
    "examples/multi/fig1-cluster.json"

/* TOCT, per-model completion and idle time per device as the paper's Fig. 1 gives them; each
 * model's placement names every op once; TOCT is the sum of the completions. */
static void test_fig1_json(void **state)
{
    (void)state;
    json_t *doc = tu_run_json(FIG1 " --algos talos,aswm,tsam --json");
    assert_string_equal(json_string_value(json_object_get(doc, "format")), "placer-multi/1");
    const char *names[] = {"talos", "aswm", "tsam"};
    double toct[] = {9e-3, 12.5e-3, 11.5e-3}, idle_gpu[] = {0.5e-3, 0.5e-3, 0};
    for (int i = 0; i < 3; i++) {
        json_t *a = tu_find(doc, "algorithms", "algo", names[i]);
        assert_close(tu_num(a, "toct_s"), toct[i], 1e-9);
        assert_true(fabs(tu_num(json_object_get(a, "idle_s"), "gpu0") - idle_gpu[i]) < 1e-12);
        double sum = 0;
        size_t j;
        json_t *m;
        json_array_foreach(json_object_get(a, "models"), j, m)
        {
            sum += tu_num(m, "completion_s");
            json_t *pl = json_object_get(m, "placement");
            assert_int_equal(json_object_size(pl), 3);
            const char *key;
            json_t *dev;
            json_object_foreach(pl, key, dev)
            {
                const char *d = json_string_value(dev);
                assert_true(!strcmp(d, "cpu0") || !strcmp(d, "gpu0"));
            }
        }
        assert_close(sum, toct[i], 1e-9);
    }
    json_t *m0 =
        json_array_get(json_object_get(tu_find(doc, "algorithms", "algo", "talos"), "models"), 0);
    assert_string_equal(json_string_value(json_object_get(m0, "name")), "fig1-a");
    assert_string_equal(json_string_value(json_object_get(json_object_get(m0, "placement"), "op3")),
                        "gpu0");
    json_decref(doc);
}

/* The table has every algorithm, NOD and the affinity line. */
static void test_fig1_table(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(tu_run(FIG1 " 2>&1", &out), 0);
    assert_contains(out, "NOD (packed)");
    assert_contains(out, "affinity fig1-a + fig1-b: 0.79 (one flow)");
    const char *rows[] = {"talos        9.000", "aswm        12.500", "tsam        11.500", "heft ",
                          "moirai "};
    for (int i = 0; i < 5; i++)
        assert_contains(out, rows[i]);
    free(out);
}

/* The same model twice is two tenants with names of their own. */
static void test_model_twice(void **state)
{
    (void)state;
    json_t *doc = tu_run_json("multi examples/multi/fig1-a.json examples/multi/fig1-a.json "
                              "--cluster examples/multi/fig1-cluster.json --algo talos --json");
    json_t *models = json_object_get(doc, "models");
    assert_int_equal(json_array_size(models), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(models, 1), "name")),
                        "fig1-a#2");
    json_t *a = tu_find(doc, "algorithms", "algo", "talos");
    assert_true(tu_num(json_array_get(json_object_get(a, "models"), 0), "completion_s") > 0);
    assert_true(tu_num(json_array_get(json_object_get(a, "models"), 1), "completion_s") > 0);
    json_decref(doc);
}

/* -o writes the document (the same as --json) and leaves no temporary file beside it. */
static void test_output_file(void **state)
{
    (void)state;
    char dir[64], cmd[512], path[128];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-multi"), 0);
    snprintf(path, sizeof path, "%s/plan.json", dir);
    snprintf(cmd, sizeof cmd, FIG1 " --algo talos -o %s > /dev/null", path);
    char *out;
    assert_int_equal(tu_run(cmd, &out), 0);
    free(out);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) fail_msg("%s: %s", path, je.text);
    assert_close(tu_num(tu_find(doc, "algorithms", "algo", "talos"), "toct_s"), 9e-3, 1e-9);
    json_decref(doc);
    DIR *dp = opendir(dir);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(dp)))
        if (de->d_name[0] != '.') files++, assert_string_equal(de->d_name, "plan.json");
    closedir(dp);
    assert_int_equal(files, 1);
    tu_rmtree(dir);
}

/* The completion of model m (0-based) in the document of one algorithm. */
static double completion(json_t *doc, int m)
{
    json_t *a = json_array_get(json_object_get(doc, "algorithms"), 0);
    return tu_num(json_array_get(json_object_get(a, "models"), m), "completion_s");
}

/* A profile measured on one model times that model's ops only (rnnlm has an op of the same
 * name, untouched); one measured on a model not given is refused. */
static void test_profile_applies_to_its_model(void **state)
{
    (void)state;
    const char *base = "multi models/gcn_cora.onnx models/rnnlm.onnx --cluster "
                       "examples/clusters/local-cpu.json --algo aswm --json";
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s 2>/dev/null", base);
    json_t *doc = tu_run_json(cmd);
    double gcn = completion(doc, 0), rnn = completion(doc, 1);
    json_decref(doc);
    char sha[65], text[512];
    pl_err err = {""};
    assert_int_equal(pl_sha256_file("models/gcn_cora.onnx", sha, &err), 0);
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"model_sha256\": \"%s\", \"times_s\": {\"/MatMul\": \"1 s\", "
             "\"/embed/Gather\": \"1 s\"}}",
             sha);
    snprintf(cmd, sizeof cmd, "%s --profile %s 2>/dev/null", base,
             tu_tmpfile(text, strlen(text), ".json"));
    doc = tu_run_json(cmd);
    assert_true(completion(doc, 0) > 1 && completion(doc, 0) < gcn + 1);
    assert_close(completion(doc, 1), rnn, 1e-12);
    json_decref(doc);
    snprintf(text, sizeof text,
             "{\"format\": \"placer-profile/1\", \"device_model\": \"local-epyc-core\", "
             "\"model_sha256\": \"%064d\", \"times_s\": {\"/MatMul\": \"1 ms\"}}",
             7);
    snprintf(cmd, sizeof cmd, "%s --profile %s", base, tu_tmpfile(text, strlen(text), ".json"));
    tu_expect_refusal(cmd, "that is none of the models given");
}

static void test_bad_input(void **state)
{
    (void)state;
    tu_expect_refusal("multi --cluster examples/multi/fig1-cluster.json", "which models?");
    tu_expect_refusal("multi examples/multi/fig1-a.json", "which cluster?");
    tu_expect_refusal(FIG1 " --algo nosuch", "unknown algorithm 'nosuch'");
    tu_expect_refusal(FIG1 " --algos talos,talos", "'talos' twice");
    tu_expect_refusal(FIG1 " --sv 2,1", "--sv: '2,1'");
    tu_expect_refusal(FIG1 " --affinity -3", "--affinity: '-3'");
    tu_expect_refusal(FIG1 " --tv fast", "--tv: 'fast'");
    tu_expect_refusal(FIG1 " --positions 0", "--positions");
    tu_expect_refusal(FIG1 " --profile examples/multi/nosuch.json", "nosuch.json");
    tu_expect_refusal("multi examples/multi/nosuch.json --cluster examples/multi/fig1-cluster.json",
                      "nosuch.json");
    tu_expect_refusal("multi examples/multi/fig1-a.json --cluster examples/multi/fig1-a.json",
                      "fig1-a.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fig1_json),
        cmocka_unit_test(test_fig1_table),
        cmocka_unit_test(test_model_twice),
        cmocka_unit_test(test_output_file),
        cmocka_unit_test(test_profile_applies_to_its_model),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
