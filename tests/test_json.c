/* test_json.c: the JSON reading helpers: documents, paths, getters, units, checks. */
#include "testutil.h"

#include "placer/json.h"

#include <math.h>
#include <string.h>

static pl_json_doc *parse(const char *text)
{
    pl_err err = {""};
    pl_json_doc *d = pl_json_parse(text, strlen(text), "t.json", &err);
    if (!d) fail_msg("parse failed: %s", err.msg);
    return d;
}

static const char *parse_fails(const char *text)
{
    static pl_err err;
    err.msg[0] = 0;
    pl_json_doc *d = pl_json_parse(text, strlen(text), "t.json", &err);
    if (d) {
        pl_json_close(d);
        fail_msg("parsed but should not: %s", text);
    }
    return err.msg;
}

static void test_syntax_errors(void **state)
{
    (void)state;
    const char *m = parse_fails("{\n  \"a\": 1,\n  \"b\": ]\n}");
    assert_contains(m, "t.json: line 3, column");
    m = parse_fails("{\"a\": 1, \"a\": 2}");
    assert_contains(m, "duplicate");
    m = parse_fails("");
    assert_contains(m, "t.json: line");
    m = parse_fails("{\"n\": NaN}");
    assert_contains(m, "t.json: line 1");

    pl_err err = {""};
    assert_null(pl_json_open("/nonexistent/x.json", &err));
    assert_contains(err.msg, "/nonexistent/x.json");

    const char *path = tu_tmpfile("{\"x\": [1, 2]}", 13, ".json");
    pl_json_doc *d = pl_json_open(path, &err);
    assert_non_null(d);
    pl_json root = pl_json_root(d), arr;
    assert_int_equal(pl_json_array(&root, "x", &arr, &err), 0);
    assert_int_equal(pl_json_len(&arr), 2);
    pl_json_close(d);
    pl_json_close(NULL);
    remove(path);
}

static void test_paths(void **state)
{
    (void)state;
    pl_json_doc *d =
        parse("{\"devices\": [{}, {}, {\"a b\": {\"q\\\"\": 1}}], \"m\": {\"V100\": 1}}");
    pl_json root = pl_json_root(d);
    pl_json devs = pl_json_at(&root, "devices");
    pl_json d2 = pl_json_index(&devs, 2);
    pl_json ab = pl_json_at(&d2, "a b");
    pl_json q = pl_json_at(&ab, "q\"");
    pl_json mem = pl_json_at(&d2, "memory_bytes");
    char buf[128];
    assert_string_equal(pl_json_path(&root, buf, sizeof buf), "$");
    assert_string_equal(pl_json_path(&mem, buf, sizeof buf), "$.devices[2].memory_bytes");
    assert_string_equal(pl_json_path(&q, buf, sizeof buf), "$.devices[2][\"a b\"][\"q\\\"\"]");
    assert_null(mem.v);
    assert_non_null(q.v);
    /* truncation never overflows */
    char tiny[8];
    assert_string_equal(pl_json_path(&mem, tiny, sizeof tiny), "$.devic");

    pl_err err = {""};
    assert_int_equal(pl_json_fail(&mem, &err, "bad %d", 7), -1);
    assert_string_equal(err.msg, "t.json: $.devices[2].memory_bytes: bad 7");
    assert_int_equal(pl_json_fail(&mem, NULL, "x"), -1);
    pl_json_close(d);
}

static void test_getters(void **state)
{
    (void)state;
    pl_json_doc *d = parse("{\"s\": \"hi\", \"i\": 42, \"e\": 1e3, \"f\": 1.5, \"b\": true, "
                           "\"n\": null, \"a\": [1], \"o\": {\"k\": 1}}");
    pl_json root = pl_json_root(d), c;
    pl_err err = {""};
    const char *s = NULL;
    int64_t i = 0;
    double x = 0;
    bool b = false;
    assert_int_equal(pl_json_string(&root, "s", &s, &err), 0);
    assert_string_equal(s, "hi");
    assert_int_equal(pl_json_int(&root, "i", &i, &err), 0);
    assert_int_equal(i, 42);
    assert_int_equal(pl_json_int(&root, "e", &i, &err), 0);
    assert_int_equal(i, 1000);
    assert_int_equal(pl_json_number(&root, "i", &x, &err), 0);
    assert_true(x == 42);
    assert_int_equal(pl_json_number(&root, "f", &x, &err), 0);
    assert_true(x == 1.5);
    assert_int_equal(pl_json_bool(&root, "b", &b, &err), 0);
    assert_true(b);
    assert_int_equal(pl_json_array(&root, "a", &c, &err), 0);
    assert_int_equal(pl_json_len(&c), 1);
    assert_int_equal(pl_json_object(&root, "o", &c, &err), 0);
    assert_int_equal(pl_json_len(&c), 1);
    assert_true(pl_json_has(&root, "s"));
    assert_false(pl_json_has(&root, "n"));
    assert_false(pl_json_has(&root, "zz"));

    /* optional: absent and null leave *out alone and return 0 */
    s = "dflt";
    assert_int_equal(pl_json_opt_string(&root, "zz", &s, &err), 0);
    assert_int_equal(pl_json_opt_string(&root, "n", &s, &err), 0);
    assert_string_equal(s, "dflt");
    assert_int_equal(pl_json_opt_string(&root, "s", &s, &err), 1);
    assert_string_equal(s, "hi");
    i = 7;
    assert_int_equal(pl_json_opt_int(&root, "zz", &i, &err), 0);
    assert_int_equal(i, 7);
    assert_int_equal(pl_json_opt_number(&root, "zz", &x, &err), 0);
    assert_int_equal(pl_json_opt_bool(&root, "zz", &b, &err), 0);
    pl_json none = {0};
    assert_int_equal(pl_json_opt_array(&root, "zz", &none, &err), 0);
    assert_int_equal(pl_json_opt_object(&root, "zz", &none, &err), 0);
    assert_null(none.v);
    assert_int_equal(pl_json_len(&none), 0);
    assert_int_equal(pl_json_opt_int(&root, "i", &i, &err), 1);
    assert_int_equal(pl_json_opt_bool(&root, "b", &b, &err), 1);
    assert_int_equal(pl_json_opt_array(&root, "a", &c, &err), 1);

    /* a NULL field reads the cursor itself */
    pl_json arr;
    pl_json_array(&root, "a", &arr, &err);
    pl_json el = pl_json_index(&arr, 0);
    assert_int_equal(pl_json_int(&el, NULL, &i, &err), 0);
    assert_int_equal(i, 1);
    pl_json past = pl_json_index(&arr, 5);
    assert_int_equal(pl_json_int(&past, NULL, &i, &err), -1);
    assert_contains(err.msg, "t.json: $.a[5]: a value is missing");
    assert_int_equal(pl_json_opt_int(&past, NULL, &i, &err), 0);
    pl_json_close(d);
}

typedef struct {
    const char *field;
    int (*get)(const pl_json *, const char *, pl_err *);
    const char *msg;
} type_case;

static int get_s(const pl_json *o, const char *f, pl_err *e)
{
    const char *s;
    return pl_json_string(o, f, &s, e);
}
static int get_i(const pl_json *o, const char *f, pl_err *e)
{
    int64_t i;
    return pl_json_int(o, f, &i, e);
}
static int get_n(const pl_json *o, const char *f, pl_err *e)
{
    double x;
    return pl_json_number(o, f, &x, e);
}
static int get_b(const pl_json *o, const char *f, pl_err *e)
{
    bool b;
    return pl_json_bool(o, f, &b, e);
}
static int get_a(const pl_json *o, const char *f, pl_err *e)
{
    pl_json c;
    return pl_json_array(o, f, &c, e);
}
static int get_o(const pl_json *o, const char *f, pl_err *e)
{
    pl_json c;
    return pl_json_object(o, f, &c, e);
}
static int opt_s(const pl_json *o, const char *f, pl_err *e)
{
    const char *s;
    return pl_json_opt_string(o, f, &s, e);
}

static void test_type_errors(void **state)
{
    (void)state;
    static const type_case cases[] = {
        {"i", get_s, "t.json: $.x.i: expected a string, got 42"},
        {"s", get_i, "t.json: $.x.s: expected an integer, got \"hi\""},
        {"f", get_i, "t.json: $.x.f: expected an integer, got 1.5"},
        {"big", get_i, "t.json: $.x.big: expected an integer, got 1e+30"},
        {"s", get_n, "t.json: $.x.s: expected a number, got \"hi\""},
        {"i", get_b, "t.json: $.x.i: expected true or false, got 42"},
        {"o", get_a, "t.json: $.x.o: expected an array, got an object"},
        {"a", get_o, "t.json: $.x.a: expected an object, got an array"},
        {"nope", get_s, "t.json: $.x: the field \"nope\" is missing"},
        {"n", get_n, "t.json: $.x: the field \"n\" is missing"},
        {"b", opt_s, "t.json: $.x.b: expected a string, got false"},
        {"long", get_i,
         "t.json: $.x.long: expected an integer, got "
         "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\""},
    };
    pl_json_doc *d =
        parse("{\"x\": {\"s\": \"hi\", \"i\": 42, \"f\": 1.5, \"big\": 1e30, \"b\": false,"
              "\"n\": null, \"a\": [], \"o\": {}, \"long\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}, \"arr\": [1]}");
    pl_json root = pl_json_root(d), x = pl_json_at(&root, "x");
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pl_err err = {""};
        assert_int_equal(cases[k].get(&x, cases[k].field, &err), -1);
        assert_string_equal(err.msg, cases[k].msg);
    }
    /* reading a field of something that is not an object */
    pl_err err = {""};
    pl_json arr = pl_json_at(&root, "arr");
    assert_int_equal(get_s(&arr, "name", &err), -1);
    assert_string_equal(err.msg, "t.json: $.arr: expected an object, got an array");
    assert_int_equal(opt_s(&arr, "name", &err), -1);
    /* a field of an absent object: optional reads see nothing, required ones fail */
    pl_json gone = pl_json_at(&root, "gone");
    assert_int_equal(opt_s(&gone, "name", &err), 0);
    assert_int_equal(get_s(&gone, "name", &err), -1);
    assert_string_equal(err.msg, "t.json: $.gone.name: a value is missing");
    pl_json_close(d);
}

static void test_quantities(void **state)
{
    (void)state;
    pl_json_doc *d =
        parse("{\"memory_bytes\": 17179869184, \"mem\": \"16 GiB\", \"memory\": 16,"
              " \"weight_bytes\": \"16\", \"latency_s\": -1, \"bandwidth_Bps\": true,"
              " \"bytes\": 5, \"flops\": 1.2e9, \"peak_flops_per_s\": 19.5e12,"
              " \"price_usd_per_hour\": 3.06, \"times_s\": {\"V100\": 0.0012, \"K80\": \"3.1 ms\"},"
              " \"sizes_bytes\": [1, \"2 KiB\"], \"link_Bps\": \"25 GB/s\", \"wrong\": \"50 GB\","
              " \"bandwidth\": \"16\", \"flag\": false, \"zero_bytes\": -0.0}");
    pl_json root = pl_json_root(d);
    pl_err err = {""};
    double v = 0;
    assert_int_equal(pl_json_quantity(&root, "memory_bytes", PL_UNIT_BYTES, &v, &err), 0);
    assert_true(v == 17179869184.0);
    assert_int_equal(pl_json_quantity(&root, "mem", PL_UNIT_BYTES, &v, &err), 0);
    assert_true(v == 17179869184.0);
    assert_int_equal(pl_json_quantity(&root, "bytes", PL_UNIT_BYTES, &v, &err), 0);
    assert_true(v == 5);
    assert_int_equal(pl_json_quantity(&root, "flops", PL_UNIT_FLOPS, &v, &err), 0);
    assert_true(v == 1.2e9);
    assert_int_equal(pl_json_quantity(&root, "peak_flops_per_s", PL_UNIT_FLOPS_PER_S, &v, &err), 0);
    assert_int_equal(pl_json_quantity(&root, "price_usd_per_hour", PL_UNIT_USD_PER_HOUR, &v, &err),
                     0);
    assert_true(v == 3.06);
    assert_int_equal(pl_json_quantity(&root, "link_Bps", PL_UNIT_BYTES_PER_S, &v, &err), 0);
    assert_true(v == 25e9);
    assert_int_equal(pl_json_quantity(&root, "zero_bytes", PL_UNIT_BYTES, &v, &err), 0);
    assert_false(signbit(v));

    /* map entries and array elements take their container's unit */
    pl_json times, e;
    pl_json_object(&root, "times_s", &times, &err);
    pl_json_iter it = {0};
    assert_true(pl_json_next(&times, &it, &e));
    assert_string_equal(e.key, "V100");
    assert_int_equal(pl_json_quantity(&e, NULL, PL_UNIT_SECONDS, &v, &err), 0);
    assert_true(v == 0.0012);
    assert_true(pl_json_next(&times, &it, &e));
    assert_string_equal(e.key, "K80");
    assert_int_equal(pl_json_quantity(&e, NULL, PL_UNIT_SECONDS, &v, &err), 0);
    assert_close(v, 0.0031, 1e-12);
    assert_false(pl_json_next(&times, &it, &e));
    assert_false(pl_json_next(&times, &it, &e));
    pl_json sizes, el;
    pl_json_array(&root, "sizes_bytes", &sizes, &err);
    el = pl_json_index(&sizes, 1);
    assert_int_equal(pl_json_quantity(&el, NULL, PL_UNIT_BYTES, &v, &err), 0);
    assert_true(v == 2048);

    /* refusals, each naming the path */
    static const struct {
        const char *field;
        pl_unit unit;
        const char *msg;
    } bad[] = {
        {"memory", PL_UNIT_BYTES,
         "t.json: $.memory: the number 16 has no unit: write a size like \"16 GiB\""},
        {"weight_bytes", PL_UNIT_BYTES,
         "t.json: $.weight_bytes: \"16\": the unit is missing: write e.g. \"16 GiB\""},
        {"latency_s", PL_UNIT_SECONDS, "t.json: $.latency_s: -1 is negative"},
        {"bandwidth_Bps", PL_UNIT_BYTES_PER_S,
         "t.json: $.bandwidth_Bps: expected a bandwidth like \"25 GB/s\" or a number of bytes/s, "
         "got true"},
        {"flag", PL_UNIT_BYTES, "t.json: $.flag: expected a size like \"16 GiB\", got false"},
        {"wrong", PL_UNIT_SECONDS, "t.json: $.wrong: \"50 GB\" is a size, not a time"},
        {"bandwidth", PL_UNIT_BYTES_PER_S, "$.bandwidth: \"16\": the unit is missing"},
        /* a rate's name ends in "_s" but does not make a plain number a time */
        {"peak_flops_per_s", PL_UNIT_SECONDS, "no unit"},
        {"absent_bytes", PL_UNIT_BYTES, "t.json: $: the field \"absent_bytes\" is missing"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        err.msg[0] = 0;
        assert_int_equal(pl_json_quantity(&root, bad[k].field, bad[k].unit, &v, &err), -1);
        assert_contains(err.msg, bad[k].msg);
    }
    assert_int_equal(pl_json_quantity(&root, "bytes", (pl_unit)42, &v, &err), -1);
    v = 9;
    assert_int_equal(pl_json_opt_quantity(&root, "nope_bytes", PL_UNIT_BYTES, &v, &err), 0);
    assert_true(v == 9);
    assert_int_equal(pl_json_opt_quantity(&root, "bytes", PL_UNIT_BYTES, &v, &err), 1);
    assert_int_equal(pl_json_opt_quantity(&root, "memory", PL_UNIT_BYTES, &v, &err), -1);
    pl_json_close(d);
}

static void test_check_fields(void **state)
{
    (void)state;
    static const char *const allowed[] = {"name",        "type",         "flops",
                                          "moved_bytes", "memory_bytes", NULL};
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"{\"name\": \"a\", \"flop\": 1}",
         "t.json: $.flop: unknown field; did you mean \"flops\"?"},
        {"{\"memroy_bytes\": 1}", "$.memroy_bytes: unknown field; did you mean \"memory_bytes\"?"},
        {"{\"bytes_moved\": 1}", "$.bytes_moved: unknown field; did you mean \"moved_bytes\"?"},
        {"{\"Type\": 1}", "did you mean \"type\"?"},
        {"{\"colour\": 1}",
         "$.colour: unknown field; the fields here are: name, type, flops, moved_bytes, "
         "memory_bytes"},
        {"{\"a b\": 1}", "t.json: $[\"a b\"]: unknown field"},
        {"[1]", "t.json: $: expected an object, got an array"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pl_json_doc *d = parse(cases[k].text);
        pl_json root = pl_json_root(d);
        pl_err err = {""};
        assert_int_equal(pl_json_check_fields(&root, allowed, &err), -1);
        assert_contains(err.msg, cases[k].msg);
        pl_json_close(d);
    }
    pl_json_doc *d = parse("{\"name\": \"a\", \"flops\": 1}");
    pl_json root = pl_json_root(d);
    pl_err err = {""};
    assert_int_equal(pl_json_check_fields(&root, allowed, &err), 0);
    pl_json_close(d);
}

static void test_check_format(void **state)
{
    (void)state;
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"{}", "t.json: $: the \"format\" field is missing: a placer-taskgraph file starts with "
               "{\"format\": \"placer-taskgraph/1\", ...}"},
        {"{\"format\": \"placer-taskgraph/2\"}",
         "t.json: $.format: \"placer-taskgraph/2\" is not supported: this placer reads "
         "\"placer-taskgraph/1\""},
        {"{\"format\": \"placer-cluster/1\"}",
         "t.json: $.format: this is a \"placer-cluster/1\" file, not \"placer-taskgraph/1\""},
        {"{\"format\": \"onnx\"}", "$.format: unknown format \"onnx\"; expected"},
        {"{\"format\": 1}", "$.format: expected the string \"placer-taskgraph/1\", got 1"},
        {"[]", "t.json: $: expected an object with \"format\": \"placer-taskgraph/1\", got an "
               "array"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        pl_json_doc *d = parse(cases[k].text);
        pl_json root = pl_json_root(d);
        pl_err err = {""};
        assert_int_equal(pl_json_check_format(&root, "placer-taskgraph/1", &err), -1);
        assert_contains(err.msg, cases[k].msg);
        pl_json_close(d);
    }
    pl_json_doc *d = parse("{\"format\": \"placer-taskgraph/1\"}");
    pl_json root = pl_json_root(d);
    pl_err err = {""};
    assert_int_equal(pl_json_check_format(&root, "placer-taskgraph/1", &err), 0);
    pl_json_close(d);
}

static void test_closest(void **state)
{
    (void)state;
    static const char *const names[] = {"conv1", "conv2", "relu", "memory_bytes", "weight_bytes"};
    assert_string_equal(pl_json_closest("conv3", names, 5), "conv1");
    assert_string_equal(pl_json_closest("rleu", names, 5), "relu");
    assert_string_equal(pl_json_closest("RELU", names, 5), "relu");
    assert_string_equal(pl_json_closest("bytes_weight", names, 5), "weight_bytes");
    assert_string_equal(pl_json_closest("memory_byte", names, 5), "memory_bytes");
    assert_string_equal(pl_json_closest("weight", names, 5), "weight_bytes");
    assert_null(pl_json_closest("softmax", names, 5));
    static const char *const short_names[] = {"a", "b", "cd"};
    assert_null(pl_json_closest("x", short_names, 3));
    assert_string_equal(pl_json_closest("A", short_names, 3), "a");
    assert_string_equal(pl_json_closest("dc", short_names, 3), "cd");
    assert_null(pl_json_closest("x", names, 0));
    /* very long words are compared on their first 64 characters, without overflow */
    char longw[200];
    memset(longw, 'a', sizeof longw - 1);
    longw[sizeof longw - 1] = 0;
    assert_null(pl_json_closest(longw, names, 5));
}

static void test_describe(void **state)
{
    (void)state;
    char buf[128];
    json_t *v = json_string("a\"b\n");
    assert_string_equal(pl_json_describe(v, buf, sizeof buf), "\"a\\\"b\\u000a\"");
    json_decref(v);
    assert_string_equal(pl_json_describe(NULL, buf, sizeof buf), "null");
    v = json_real(0.25);
    assert_string_equal(pl_json_describe(v, buf, sizeof buf), "0.25");
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax_errors), cmocka_unit_test(test_paths),
        cmocka_unit_test(test_getters),       cmocka_unit_test(test_type_errors),
        cmocka_unit_test(test_quantities),    cmocka_unit_test(test_check_fields),
        cmocka_unit_test(test_check_format),  cmocka_unit_test(test_closest),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
