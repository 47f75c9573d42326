/* test_cli.c: the command as a user meets it: bad input gets a message naming the file and
 * the problem and exit status 2; good input gets a table or JSON. */
#include "testutil.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static void test_usage_errors(void **state)
{
    (void)state;
    tu_expect_refusal("", "usage: placer VERB");
    tu_expect_refusal("frobnicate", "unknown verb 'frobnicate'");
    tu_expect_refusal("inspect", "which model?");
    tu_expect_refusal("inspect --bogus models/resnet50.onnx", "unknown option '--bogus'");
    tu_expect_refusal("inspect --dim batch models/resnet50.onnx", "--dim wants NAME=VALUE");
}

static void test_missing_empty_and_non_onnx(void **state)
{
    (void)state;
    tu_expect_refusal("inspect /nonexistent/model.onnx",
                      "/nonexistent/model.onnx: cannot open: No such file or directory");
    char args[512];
    snprintf(args, sizeof args, "inspect %s", tu_tmpfile("", 0, ".onnx"));
    tu_expect_refusal(args, "empty file");
    const char *text = "this is a README, not a model\n";
    snprintf(args, sizeof args, "inspect %s", tu_tmpfile(text, strlen(text), ".onnx"));
    tu_expect_refusal(args, "not an ONNX model");
}

static void test_truncated_model(void **state)
{
    (void)state;
    size_t len;
    pl_err err;
    char *buf = pl_read_file("models/resnet50.onnx", &len, &err);
    assert_non_null(buf);
    char args[512];
    snprintf(args, sizeof args, "inspect %s", tu_tmpfile(buf, len / 2, ".onnx"));
    tu_expect_refusal(args, "not an ONNX model");
    free(buf);
}

static void test_malformed_taskgraph(void **state)
{
    (void)state;
    const char *bad = "{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\"}],\n"
                      " \"edges\": [{\"from\": \"a\", \"to\": \"nowhere\", \"bytes\": 4}]}";
    char args[512];
    const char *path = tu_tmpfile(bad, strlen(bad), ".json");
    snprintf(args, sizeof args, "inspect %s", path);
    tu_expect_refusal(args, path);
    tu_expect_refusal(args, "nowhere");
}

/* Each malformed task graph: exit 2, and the message names the file and the JSON place. */
static void test_taskgraph_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
         " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 4},"
         " {\"from\": \"b\", \"to\": \"a\", \"bytes\": 4}]}",
         "cycle through 2 ops"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"weight_bytes\": "
         "-4}]}",
         "$.nodes[0].weight_bytes"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"memory_bytes\": "
         "\"16\"}]}",
         "unit is missing"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"size\": 4}]}",
         "$.nodes[0]"},
        {"{\"format\": \"placer-cluster/1\", \"nodes\": []}", "placer-taskgraph/1"},
        {"{\"format\": \"placer-taskgraph/1\", \"nodes\": [", "line"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *path = tu_tmpfile(cases[k].text, strlen(cases[k].text), ".json");
        char args[512];
        snprintf(args, sizeof args, "inspect %s", path);
        tu_expect_refusal(args, path);
        tu_expect_refusal(args, cases[k].needle);
    }
}

/* `simulate --per-edge`: a(1 s)@gpu0 writes x (1000 B, 0.5 s + 1 s over the link), read by
 * b(1 s) and c(1 s) on gpu1. Sent once: b [2.5, 3.5], c [3.5, 4.5]; per edge the second copy
 * waits for the port: c [4, 5]. A plan with a bad transfer order is refused with its place. */
static void test_simulate_per_edge(void **state)
{
    (void)state;
    const char *model =
        "{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
        "{\"name\": \"a\", \"times_s\": {\"V100-SXM2-16GB\": 1}},"
        "{\"name\": \"b\", \"times_s\": {\"V100-SXM2-16GB\": 1}},"
        "{\"name\": \"c\", \"times_s\": {\"V100-SXM2-16GB\": 1}}],"
        " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"tensor\": \"x\", \"bytes\": 1000},"
        " {\"from\": \"a\", \"to\": \"c\", \"tensor\": \"x\", \"bytes\": 1000}]}";
    const char *cluster =
        "{\"format\": \"placer-cluster/1\", \"name\": \"two\", \"devices\": ["
        " {\"name\": \"gpu0\", \"model\": \"V100-SXM2-16GB\"},"
        " {\"name\": \"gpu1\", \"model\": \"V100-SXM2-16GB\"}],"
        " \"links\": [{\"from\": \"gpu0\", \"to\": \"gpu1\", \"bandwidth_Bps\": 1000,"
        " \"latency_s\": 0.5, \"both_ways\": true}]}";
    const char *plan = "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\","
                       " \"placement\": {\"b\": \"gpu1\", \"c\": \"gpu1\"},"
                       " \"transfer_order\": [[\"x\", \"b\"]]}";
    const char *bad = "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\","
                      " \"placement\": {}, \"transfer_order\": [[\"x\", \"a\"]]}";
    char m[256], c[256], p[256], args[1024], *out;
    snprintf(m, sizeof m, "%s", tu_tmpfile(model, strlen(model), ".json"));
    snprintf(c, sizeof c, "%s", tu_tmpfile(cluster, strlen(cluster), ".json"));
    snprintf(p, sizeof p, "%s", tu_tmpfile(plan, strlen(plan), ".json"));
    for (int per_edge = 0; per_edge < 2; per_edge++) {
        snprintf(args, sizeof args, "simulate %s --cluster %s --plan %s --json%s", m, c, p,
                 per_edge ? " --per-edge" : "");
        json_t *o = tu_run_json(args);
        assert_true(json_is_true(json_object_get(o, "per_edge")) == per_edge);
        assert_close(json_number_value(json_object_get(o, "makespan_s")), per_edge ? 5 : 4.5,
                     1e-12);
        assert_string_equal(json_string_value(json_object_get(o, "invariants")), "ok");
        json_decref(o);
    }
    assert_int_equal(tu_run("simulate --help", &out), 0);
    assert_contains(out, "--per-edge");
    free(out);
    const char *bp = tu_tmpfile(bad, strlen(bad), ".json");
    snprintf(args, sizeof args, "simulate %s --cluster %s --plan %s", m, c, bp);
    tu_expect_refusal(args, "$.transfer_order[0]: ['x', 'a'] is not a graph edge");
    tu_expect_refusal(args, bp);
    remove(m), remove(c), remove(p), remove(bp);
}

static void test_inspect_table_and_json(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(tu_run("inspect models/resnet50.onnx", &out), 0);
    assert_non_null(strstr(out, "parameters"));
    assert_non_null(strstr(out, "Conv"));
    free(out);
    assert_int_equal(tu_run("inspect --json models/resnet50.onnx 2>/dev/null", &out), 0);
    json_error_t jerr;
    json_t *j = json_loads(out, 0, &jerr);
    if (!j) fail_msg("inspect --json is not JSON (%s):\n%s", jerr.text, out);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "placer-inspect/1");
    assert_true(json_integer_value(json_object_get(j, "ops")) > 100);
    assert_true(json_integer_value(json_object_get(j, "params")) > 25000000);
    assert_int_equal(json_integer_value(json_object_get(j, "unknown_ops")), 0);
    json_decref(j);
    free(out);
}

static void test_input_shapes(void **state)
{
    (void)state;
    tu_expect_refusal("inspect models/resnet50.onnx --input picture=1,3,224,224",
                      "no graph input named 'picture' (inputs: 'image')");
    tu_expect_refusal("inspect models/resnet50.onnx --input image=2,3,224,224",
                      "input 'image' has dim 0 = 1 in the file");
    tu_expect_refusal("inspect models/resnet50.onnx --input image=1,3,224",
                      "has rank 4 in the file");
    tu_expect_refusal("inspect models/resnet50.onnx --input image=1,x",
                      "expected comma-separated sizes");
    /* silero VAD leaves its input's dims open: giving them makes them known */
    char *out;
    assert_int_equal(
        tu_run("inspect build/thirdparty/silero_vad_v5.onnx --input input=1,512", &out), 0);
    assert_non_null(strstr(out, "input float32 [1,512]"));
    free(out);
    assert_int_equal(tu_run("inspect build/thirdparty/silero_vad_v5.onnx", &out), 0);
    assert_non_null(strstr(out, "input float32 [?,?]"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_missing_empty_and_non_onnx),
        cmocka_unit_test(test_truncated_model),
        cmocka_unit_test(test_malformed_taskgraph),
        cmocka_unit_test(test_inspect_table_and_json),
        cmocka_unit_test(test_input_shapes),
        cmocka_unit_test(test_taskgraph_refusals),
        cmocka_unit_test(test_simulate_per_edge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
