/* test_platform.c: the placer-platform/1 reader, the shipped platforms, memory rounding,
 * billed durations, vCPUs and the bill, each worked out by hand. */
#include "testutil.h"

#include "placer/serverless.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAMBDA "examples/platforms/aws-lambda.json"
#define OPENFAAS "examples/platforms/openfaas.json"
#define PAPER_LAMBDA "examples/platforms/mopar-paper-lambda.json"
#define PAPER_OPENFAAS "examples/platforms/mopar-paper-openfaas.json"

static pl_platform *load(const char *path)
{
    pl_err err = {""};
    pl_platform *p = pl_platform_load(path, &err);
    if (!p) fail_msg("%s: %s", path, err.msg);
    return p;
}

/* A valid platform: every field, both transports. The malformed ones change one thing. */
static const char good[] =
    "{\"format\": \"placer-platform/1\", \"name\": \"t\", \"description\": \"test\","
    " \"source\": [\"made up\", \"for the test\"],"
    " \"memory\": {\"min_mb\": 128, \"max_mb\": 3008, \"step_mb\": 64},"
    " \"mb_per_vcpu\": 1769, \"usd_per_gb_s\": 0.0000166667, \"usd_per_request\": 0.0000002,"
    " \"billing_granularity_s\": \"100 ms\", \"cold_start_s\": \"1 s\", \"runtime_base_mb\": 68,"
    " \"parallel_efficiency\": 0.85,"
    " \"store\": {\"bandwidth_Bps\": \"1 GB/s\", \"latency_s\": \"1 ms\", \"usd_per_gb\": 0.01},"
    " \"shared_memory\": {\"bandwidth_Bps\": \"2 GB/s\", \"latency_s\": \"20 us\"},"
    " \"vcpu\": {\"devices\": [{\"name\": \"vcpu\", \"kind\": \"cpu\", \"model\": \"core\","
    "  \"memory_bytes\": \"8 GiB\", \"peak_flops_per_s\": \"100 GFLOP/s\","
    "  \"mem_bandwidth_Bps\": \"50 GB/s\"}]}}";

/* Writes v to a temporary file and loads it; returns the platform or NULL with err set. */
static pl_platform *load_json(json_t *v, char *path, size_t n, pl_err *err)
{
    char *text = json_dumps(v, 0);
    snprintf(path, n, "%s", tu_tmpfile(text, strlen(text), ".json"));
    free(text);
    pl_platform *p = pl_platform_load(path, err);
    unlink(path);
    return p;
}

/* `good` with the field at the dotted `where` ("memory.step_mb") set to the JSON `value`, or
 * removed when value is NULL. */
static json_t *edited(const char *where, const char *value)
{
    json_t *root = json_loads(good, 0, NULL), *o = root;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", where);
    char *key = buf, *dot;
    while ((dot = strchr(key, '.'))) {
        *dot = 0;
        o = json_object_get(o, key);
        if (!o) fail_msg("no object \"%s\" in the test platform", key);
        key = dot + 1;
    }
    if (value)
        json_object_set_new(o, key, json_loads(value, JSON_DECODE_ANY, NULL));
    else
        json_object_del(o, key);
    return root;
}

/* The platform v (released here) is refused with "FILE: " then `needle` and `problem`; `where`
 * and `value` name the edit in the failure. */
static void refused_doc(json_t *v, const char *where, const char *value, const char *needle,
                        const char *problem)
{
    char path[256], want[512];
    pl_err err = {""};
    pl_platform *p = load_json(v, path, sizeof path, &err);
    json_decref(v);
    if (p) {
        pl_platform_free(p);
        fail_msg("%s = %s was accepted", where, value ? value : "(removed)");
    }
    snprintf(want, sizeof want, "%s: %s", path, needle);
    assert_contains(err.msg, want);
    assert_contains(err.msg, problem);
}

/* `good` edited at `where` is refused so. */
static void refused(const char *where, const char *value, const char *needle, const char *problem)
{
    refused_doc(edited(where, value), where, value, needle, problem);
}

/* ---- the shipped platforms ---- */

static void test_lambda(void **state)
{
    (void)state;
    pl_platform *p = load(LAMBDA);
    assert_string_equal(p->name, "aws-lambda");
    assert_string_equal(p->path, LAMBDA);
    assert_true(p->mem_min_mb == 128 && p->mem_max_mb == 10240 && p->mem_step_mb == 1);
    assert_true(p->mb_per_vcpu == 1769);
    assert_close(p->usd_per_gb_s, 1.66667e-5, 1e-12);
    assert_close(p->usd_per_request, 0.2e-6, 1e-12); /* $0.20 per million */
    assert_close(p->billing_s, 1e-3, 1e-12);
    assert_true(p->store.present && !p->shm.present); /* Lambda has no shared memory */
    assert_close(p->store.bandwidth_Bps, 538e6 / 8, 1e-12);
    assert_close(p->store.latency_s, 1e-3, 1e-12);
    assert_close(p->store.usd_per_gb, 0.00332, 1e-12);
    assert_true(p->parallel_eff == 0.9 && p->runtime_base_mb == 85);
    assert_true(p->runtime_weight_factor == 1.85 && p->runtime_activation_factor == 0.9);
    assert_int_equal(p->vcpu->n_devs, 1);
    assert_int_equal(p->vcpu->devs[0].kind, PL_DEV_CPU);
    assert_close(p->vcpu->devs[0].peak_flops_per_s[PL_PREC_FP32], 80e9, 1e-12);
    assert_false(p->vcpu->devs[0].this_machine);
    pl_platform_free(p);
}

static void test_openfaas(void **state)
{
    (void)state;
    pl_platform *p = load(OPENFAAS);
    assert_true(p->shm.present && p->store.present);
    assert_true(p->shm.usd_per_gb == 0 && p->store.usd_per_gb == 0);
    assert_close(p->shm.bandwidth_Bps, 1.7e9, 1e-12);
    assert_close(p->shm.latency_s, 20e-6, 1e-12);
    assert_true(p->usd_per_request == 0);
    /* c5.2xlarge: $0.34 an hour for 16 GB */
    assert_close(p->usd_per_gb_s, 0.34 / 16 / 3600, 1e-4);
    assert_close(p->mb_per_vcpu, 187.0 * 1024 / 104, 1e-3);
    /* this machine's core, as examples/clusters/local-cpu-percore.json gives it */
    assert_true(p->vcpu->devs[0].this_machine);
    assert_string_equal(p->vcpu->devs[0].model, "local-epyc-core");
    assert_close(p->vcpu->devs[0].peak_flops_per_s[PL_PREC_FP32], 110e9, 1e-12);
    pl_platform_free(p);
}

/* Paper mode: the MOPAR paper's own assumptions (docs/serverless.md, "Paper mode"), each figure
 * as the paper states it. */
static void check_paper_common(const pl_platform *p)
{
    /* §III-A2 "Costs": "$1.667 x 10^-5" per GB per second, "a price per 1 millisecond", "The
     * minimum configuration is 128MB"; both platforms priced so (Table III) */
    assert_close(p->usd_per_gb_s, 1.667e-5, 1e-12);
    assert_close(p->billing_s, 1e-3, 1e-12);
    assert_true(p->mem_min_mb == 128);
    /* Eq. 6 prices memory x time and the network only: nothing per request */
    assert_true(p->usd_per_request == 0);
    /* Eq. 5-6: a slice's time does not stretch when its memory is cut to what it needs, so a
     * 128 MB slice computes like a whole vCPU; above lambda, footnote 9's vCPUs follow memory */
    assert_true(pl_platform_vcpus(p, 128) == 1);
    assert_close(pl_platform_vcpus(p, 4 * p->mb_per_vcpu), 4, 1e-12);
    /* M_gi is the layers' footprint (Eq. 1-3), no runtime added in each function */
    assert_true(p->runtime_base_mb == 0 && p->runtime_weight_factor == 1 &&
                p->runtime_activation_factor == 1);
    /* 1 GB for 1 ms: 1.667e-8 USD */
    assert_close(pl_platform_usd(p, 1024, 1e-3), 1.667e-8, 1e-12);
}

static void test_paper_lambda(void **state)
{
    (void)state;
    pl_platform *p = load(PAPER_LAMBDA);
    assert_string_equal(p->name, "mopar-paper-lambda");
    check_paper_common(p);
    assert_true(p->mb_per_vcpu == 1769);
    /* no shared memory on Lambda; COM simulated "by increasing the network transmission rate"
     * (§III-A2): the store at shared memory's rate, free */
    assert_true(p->store.present && !p->shm.present);
    assert_close(p->store.bandwidth_Bps, 1.7e9, 1e-12);
    assert_close(p->store.latency_s, 20e-6, 1e-12);
    assert_true(p->store.usd_per_gb == 0);
    pl_platform_free(p);
}

static void test_paper_openfaas(void **state)
{
    (void)state;
    pl_platform *p = load(PAPER_OPENFAAS);
    assert_string_equal(p->name, "mopar-paper-openfaas");
    check_paper_common(p);
    /* Table II: 187 GB over 104 threads */
    assert_close(p->mb_per_vcpu, 187.0 * 1024 / 104, 1e-3);
    /* COM's tmpfs (§II-D) and Redis (§III-C), both free */
    assert_true(p->shm.present && p->store.present);
    assert_true(p->shm.usd_per_gb == 0 && p->store.usd_per_gb == 0);
    pl_platform_free(p);
}

/* The store priced as a provisioned node: each SET or GET pays the hour's price over the
 * requests it serves, nothing per GB; "serverless", the default, is the price per GB. */
/* An invocation: 0.7 ms a round trip, requests at 2.9 GB/s, responses at 1.7 GB/s. */
#define INVOCATION                                                                                 \
    "{\"round_trip_s\": \"0.7 ms\", \"request_Bps\": \"2.9 GB/s\", \"response_Bps\": "             \
    "\"1.7 GB/s\", \"source\": \"made up\"}"

#define NODE_STORE                                                                                 \
    "{\"bandwidth_Bps\": \"1 GB/s\", \"latency_s\": \"1 ms\", \"pricing\": \"provisioned\","       \
    " \"usd_per_hour\": 0.36, \"requests_per_s\": 100}"

static void test_store_pricing(void **state)
{
    (void)state;
    char path[256];
    pl_err err = {""};
    json_t *v = edited("store", NODE_STORE);
    pl_platform *p = load_json(v, path, sizeof path, &err);
    json_decref(v);
    if (!p) fail_msg("%s", err.msg);
    assert_true(p->store.provisioned && p->store.usd_per_gb == 0);
    assert_close(p->store.usd_per_hour, 0.36, 0);
    assert_close(p->store.requests_per_s, 100, 0);
    assert_close(p->store.usd_per_op, 0.36 / 3600 / 100, 1e-12); /* $1e-6 per SET or GET */
    /* 4 MB in 2 requests: 2 x 1e-6, whatever the bytes */
    assert_close(pl_transport_usd(&p->store, 4e6, 2), 2e-6, 1e-12);
    pl_platform_free(p);

    v = edited("store.pricing", "\"serverless\""); /* said, the same as the default */
    p = load_json(v, path, sizeof path, &err);
    json_decref(v);
    if (!p) fail_msg("%s", err.msg);
    assert_true(!p->store.provisioned && p->store.usd_per_op == 0);
    assert_close(pl_transport_usd(&p->store, 4e6, 2), 4e6 / 1e9 * 0.01, 1e-12);
    pl_platform_free(p);

    /* the shipped Lambda with a provisioned node: cache.m6g.large at 1000 requests a second */
    p = load("examples/platforms/aws-lambda-redis-node.json");
    assert_true(p->store.provisioned && p->store.usd_per_gb == 0 && !p->shm.present);
    assert_close(p->store.usd_per_op, 0.149 / 3600 / 1000, 1e-15);
    pl_platform *l = load(LAMBDA); /* everything else is aws-lambda.json's */
    assert_true(p->mb_per_vcpu == l->mb_per_vcpu && p->usd_per_gb_s == l->usd_per_gb_s &&
                p->store.bandwidth_Bps == l->store.bandwidth_Bps && !l->store.provisioned);
    pl_platform_free(l), pl_platform_free(p);
}

/* ---- sizes and bills, by hand ---- */

static void test_round_mb(void **state)
{
    (void)state;
    pl_platform *l = load(LAMBDA);
    assert_true(pl_platform_round_mb(l, 0) == 128); /* below the minimum: the minimum */
    assert_true(pl_platform_round_mb(l, 100) == 128);
    assert_true(pl_platform_round_mb(l, 128) == 128);
    assert_true(pl_platform_round_mb(l, 128.5) == 129);
    assert_true(pl_platform_round_mb(l, 1536) == 1536);
    assert_true(pl_platform_round_mb(l, 1536.01) == 1537);
    /* 1536 + 1e-10 is floating-point error, not another megabyte */
    assert_true(pl_platform_round_mb(l, 1536 + 1e-10) == 1536);
    assert_true(pl_platform_round_mb(l, 10240) == 10240);
    assert_true(pl_platform_round_mb(l, 10240.5) == -1);
    pl_platform_free(l);

    /* the old Lambda: 128 + 64 k up to 3008 = 128 + 45 x 64 */
    json_t *v = json_loads(good, 0, NULL);
    char path[256];
    pl_err err = {""};
    pl_platform *p = load_json(v, path, sizeof path, &err);
    json_decref(v);
    if (!p) fail_msg("%s", err.msg);
    assert_true(pl_platform_round_mb(p, 129) == 192);
    assert_true(pl_platform_round_mb(p, 192) == 192);
    assert_true(pl_platform_round_mb(p, 1000) == 1024); /* 128 + 14 x 64 */
    assert_true(pl_platform_round_mb(p, 3000) == 3008);
    assert_true(pl_platform_round_mb(p, 3008) == 3008);
    assert_true(pl_platform_round_mb(p, 3009) == -1);
    /* a max off the grid: 128, 228 are sizes; 250 is not (the next step is 328) */
    p->mem_step_mb = 100, p->mem_max_mb = 250;
    assert_true(pl_platform_round_mb(p, 200) == 228);
    assert_true(pl_platform_round_mb(p, 229) == -1);
    pl_platform_free(p);
}

static void test_billed_s(void **state)
{
    (void)state;
    pl_platform *l = load(LAMBDA);
    assert_true(pl_platform_billed_s(l, 0) == 0);
    assert_close(pl_platform_billed_s(l, 0.003), 0.003, 1e-12);
    /* 2 ms + 17 ms is 0.019000000000000003 s in binary, 19.000000000000004 ms: still 19 */
    assert_close(pl_platform_billed_s(l, 0.002 + 0.017), 0.019, 1e-12);
    assert_close(pl_platform_billed_s(l, 0.0030000001), 0.004, 1e-12);
    assert_close(pl_platform_billed_s(l, 0.1234), 0.124, 1e-12);
    assert_close(pl_platform_billed_s(l, 1e-9), 0.001, 1e-12); /* any run bills 1 ms */
    assert_close(pl_platform_billed_s(l, 0.999), 0.999, 1e-12);
    assert_close(pl_platform_billed_s(l, 12.3456), 12.346, 1e-12);
    l->billing_s = 0.1; /* the old Lambda's 100 ms */
    assert_close(pl_platform_billed_s(l, 0.1234), 0.2, 1e-12);
    assert_close(pl_platform_billed_s(l, 0.3), 0.3, 1e-12); /* 0.3 / 0.1 = 2.9999999999999996 */
    assert_close(pl_platform_billed_s(l, 0.1 + 0.2), 0.3, 1e-12); /* 3.0000000000000004 */
    pl_platform_free(l);
}

/* From a buffer (the fuzzer's entry): the same platform; a bad one named by the given name. */
static void test_load_buffer(void **state)
{
    (void)state;
    FILE *f = fopen(LAMBDA, "rb");
    assert_non_null(f);
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    pl_err err = {""};
    pl_platform *p = pl_platform_load_buffer(buf, n, "mem.json", &err);
    if (!p) fail_msg("%s", err.msg);
    assert_string_equal(p->name, "aws-lambda");
    assert_close(p->mb_per_vcpu, 1769, 0);
    pl_platform_free(p);
    assert_null(pl_platform_load_buffer("{\"format\": 3}", 14, "mem.json", &err));
    assert_non_null(strstr(err.msg, "mem.json"));
}

static void test_vcpus(void **state)
{
    (void)state;
    pl_platform *l = load(LAMBDA);
    assert_close(pl_platform_vcpus(l, 1769), 1, 1e-12);
    assert_close(pl_platform_vcpus(l, 884.5), 0.5, 1e-12); /* half a core's share */
    assert_close(pl_platform_vcpus(l, 128), 128.0 / 1769, 1e-12);
    assert_close(pl_platform_vcpus(l, 10240), 5.788581119, 1e-9); /* AWS says "up to 6" */
    pl_platform_free(l);
    /* OpenFaaS: a whole core whatever the memory, more as the memory gives (min_vcpus 1) */
    pl_platform *o = load(OPENFAAS);
    assert_close(pl_platform_vcpus(o, 128), 1, 0);
    assert_close(pl_platform_vcpus(o, 1841), 1, 1e-12);
    assert_close(pl_platform_vcpus(o, 3682), 2, 1e-12);
    pl_platform_free(o);
}

static void test_usd(void **state)
{
    (void)state;
    pl_platform *l = load(LAMBDA);
    /* 1536 MB for 0.1234 s bills 124 ms: 1536/1024 = 1.5 GB x 0.124 s = 0.186 GB-s, x
     * 1.66667e-5 = 3.1000062e-6, + 2e-7 per request = 3.3000062e-6 */
    assert_close(pl_platform_usd(l, 1536, 0.1234), 3.3000062e-6, 1e-9);
    /* AWS's pricing example 1: 512 MB for 1 s is 512/1024 = 0.5 GB-s; 3 million of them
     * 1,500,000 GB-s = $25.00005, + $0.60 of requests (before the free tier) */
    assert_close(3e6 * pl_platform_usd(l, 512, 1), 25.00005 + 0.6, 1e-9);
    /* the smallest bill: 128 MB, 1 ms: 0.125 x 0.001 x 1.66667e-5 + 2e-7 */
    assert_close(pl_platform_usd(l, 128, 1e-6), 2.020833375e-7, 1e-9);
    assert_close(pl_platform_usd(l, 2048, 0), 2e-7, 1e-12); /* no run, the request alone */
    pl_platform_free(l);

    pl_platform *o = load(OPENFAAS);
    /* 1 GB for 1 s on our servers: the price per GB-s, nothing per request */
    assert_close(pl_platform_usd(o, 1024, 1), 0.0000059028, 1e-12);
    pl_platform_free(o);
}

/* ---- refusals: the file, the field and the rule ---- */

/* One malformed platform: `good` with `where` set to `value` (removed when NULL), refused
 * with a message holding "FILE: " + `needle` and `problem`. */
typedef struct bad {
    const char *where, *value, *needle, *problem;
} bad;

static void refused_all(const bad *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        refused(b[i].where, b[i].value, b[i].needle, b[i].problem);
}

/* `good` with the object `field` set to the JSON `object`, then each b[i].where inside it set
 * to its value (removed when NULL): each refused so. */
static void refused_inside(const char *field, const char *object, const bad *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *v = edited(field, object), *o = json_object_get(v, field);
        if (b[i].value)
            json_object_set_new(o, b[i].where, json_loads(b[i].value, JSON_DECODE_ANY, NULL));
        else
            json_object_del(o, b[i].where);
        refused_doc(v, b[i].where, b[i].value, b[i].needle, b[i].problem);
    }
}

static void test_refused_numbers(void **state)
{
    (void)state;
    static const bad b[] = {
        {"usd_per_gb_s", NULL, "$: ", "the field \"usd_per_gb_s\" is missing"},
        {"memory.step_mb", "0", "$.memory.step_mb: ", "must be above 0, got 0"},
        {"memory.step_mb", "-1", "$.memory.step_mb: ", "must be above 0, got -1"},
        {"memory.min_mb", "0", "$.memory.min_mb: ", "must be above 0"},
        {"memory.max_mb", "64", "$.memory.max_mb: ", "64 is below min_mb (128)"},
        {"memory", NULL, "$: ", "the field \"memory\" is missing"},
        {"mb_per_vcpu", "\"1769 MB\"", "$.mb_per_vcpu: ", "expected a number"},
        {"mb_per_vcpu", "0", "$.mb_per_vcpu: ", "must be above 0, got 0"},
        {"usd_per_gb_s", "-1e-05", "$.usd_per_gb_s: ", "must be above 0, got -1e-05"},
        {"usd_per_gb_s", "60", "$.usd_per_gb_s: ", "almost certainly a unit mistake"},
        {"usd_per_request", "-2e-07", "$.usd_per_request: ", "must be at least 0, got -2e-07"},
        {"parallel_efficiency", "1.5", "$.parallel_efficiency: ", "must be at most 1"},
        {"parallel_efficiency", "0", "$.parallel_efficiency: ", "must be above 0"},
        {"min_vcpus", "-1", "$.min_vcpus: ", "must be at least 0, got -1"},
        {"min_vcpus", "2000", "$.min_vcpus: ", "almost certainly a unit mistake"},
        /* memory.max_mb 3008 over λ: more than 1024 vCPUs in the largest function */
        {"mb_per_vcpu", "1e-09", "$.mb_per_vcpu: ", "3.01e+12 vCPUs; at most 1024"},
        {"mb_per_vcpu", "0.0001", "$.mb_per_vcpu: ", "3.01e+07 vCPUs; at most 1024"},
        {"mb_per_vcpu", "2.9", "$.mb_per_vcpu: ", "1.04e+03 vCPUs; at most 1024"},
        {"runtime_weight_factor", "0", "$.runtime_weight_factor: ", "must be above 0"},
        {"runtime_activation_factor", "1024",
         "$.runtime_activation_factor: ", "almost certainly a unit mistake"},
        {"billing_granularity_s", "0",
         "$.billing_granularity_s: ", "a billing granularity of zero is not allowed"},
        {"billing_granularity_s", "\"1\"", "$.billing_granularity_s: ", "the unit is missing"},
        {"billing_granularity_s", "\"1 GB\"", "$.billing_granularity_s: ", "a time"},
        {"cold_start_s", "-1", "$.cold_start_s: ", "negative"},
        {"runtime_base_mb", "3008", "$.runtime_base_mb: ", "leaves nothing"},
    };
    refused_all(b, sizeof b / sizeof b[0]);
}

/* The largest function may have 1024 vCPUs, not more: 3008 MB at 2.9375 MB per vCPU is read */
static void test_vcpus_bound(void **state)
{
    (void)state;
    json_t *v = edited("mb_per_vcpu", "2.9375");
    char path[256];
    pl_err err = {""};
    pl_platform *p = load_json(v, path, sizeof path, &err);
    json_decref(v);
    if (!p) fail_msg("%s", err.msg);
    assert_close(pl_platform_vcpus(p, p->mem_max_mb), PL_PLATFORM_VCPUS_MAX, 1e-9);
    pl_platform_free(p);
}

static void test_refused_fields(void **state)
{
    (void)state;
    static const bad b[] = {
        {"usd_per_gbs", "1", "$.usd_per_gbs: ", "did you mean \"usd_per_gb_s\"?"},
        {"memory.step", "1", "$.memory.step: ", "did you mean \"step_mb\"?"},
        {"format", "\"placer-cluster/1\"", "$.format: ", "not \"placer-platform/1\""},
        {"format", "\"placer-platform/2\"", "$.format: ", "this placer reads"},
        {"name", "\"\"", "$.name: ", "must not be empty"},
        {"description", NULL, "$: ", "the field \"description\" is missing"},
        {"source", "[\"a\", \"\"]", "$.source[1]: ", "must not be empty"},
        {"source", "[]", "$.source: ", "must not be empty"},
        {"source", "3", "$.source: ", "expected a string"},
    };
    refused_all(b, sizeof b / sizeof b[0]);
}

static void test_refused_transports(void **state)
{
    (void)state;
    json_t *v = edited("store", NULL);
    json_object_del(v, "shared_memory");
    char path[256];
    pl_err err = {""};
    pl_platform *p = load_json(v, path, sizeof path, &err);
    json_decref(v);
    assert_null(p);
    assert_contains(err.msg, path);
    assert_contains(err.msg, "needs a \"store\", a \"shared_memory\" or both");

    static const bad b[] = {
        {"store.latency_s", NULL, "$.store: ", "the field \"latency_s\" is missing"},
        {"store.usd_per_gb", NULL, "$.store: ", "the field \"usd_per_gb\" is missing"},
        {"store.usd_per_gb", "-1", "$.store.usd_per_gb: ", "must be at least 0, got -1"},
        {"store.bandwidth_Bps", "\"10 B/s\"", "$.store.bandwidth_Bps: ", "smaller than"},
        {"store.bandwidth_Bps", "\"10 GB\"", "$.store.bandwidth_Bps: ", "a bandwidth"},
        {"store.bandwidth_Bps", "\"0 GB/s\"", "$.store.bandwidth_Bps: ", "zero"},
        {"shared_memory.usd_per_gb", "0", "$.shared_memory.usd_per_gb: ", "unknown field"},
        {"shared_memory.latency_s", "\"2 s\"", "$.shared_memory.latency_s: ", "larger"},
        {"store", "\"redis\"", "$.store: ", "expected an object"},
    };
    refused_all(b, sizeof b / sizeof b[0]);
}

/* The store's pricing and the fields of each, refused with the path. */
static void test_refused_store_pricing(void **state)
{
    (void)state;
    static const bad b[] = {
        {"store.pricing", "\"hourly\"",
         "$.store.pricing: ", "must be \"serverless\" or \"provisioned\", got \"hourly\""},
        {"store.pricing", "3", "$.store.pricing: ", "expected a string"},
        {"store.usd_per_hour", "0.149",
         "$.store.usd_per_hour: ", "only with \"pricing\": \"provisioned\""},
        {"store.requests_per_s", "1000",
         "$.store.requests_per_s: ", "only with \"pricing\": \"provisioned\""},
    };
    refused_all(b, sizeof b / sizeof b[0]);
    static const bad n[] = {
        /* each on the provisioned store of NODE_STORE */
        {"usd_per_gb", "0.01", "$.store.usd_per_gb: ", "bills the hour, not the bytes"},
        {"usd_per_hour", NULL, "$.store: ", "the field \"usd_per_hour\" is missing"},
        {"requests_per_s", NULL, "$.store: ", "the field \"requests_per_s\" is missing"},
        {"usd_per_hour", "0", "$.store.usd_per_hour: ", "must be above 0, got 0"},
        {"usd_per_hour", "-1", "$.store.usd_per_hour: ", "must be above 0, got -1"},
        {"usd_per_hour", "5000", "$.store.usd_per_hour: ", "almost certainly a unit mistake"},
        {"requests_per_s", "0", "$.store.requests_per_s: ", "must be above 0, got 0"},
        {"requests_per_s", "\"1000/s\"", "$.store.requests_per_s: ", "expected a number"},
        {"requests_per_s", "1e9", "$.store.requests_per_s: ", "almost certainly a unit mistake"},
    };
    refused_inside("store", NODE_STORE, n, sizeof n / sizeof n[0]);
}

/* "invocation": optional (good has none: free), its three figures required in it, each
 * refused with its path. */
static void test_invocation(void **state)
{
    (void)state;
    char path[256];
    pl_err err = {""};
    json_t *v = edited("invocation", INVOCATION);
    pl_platform *p = load_json(v, path, sizeof path, &err);
    json_decref(v);
    if (!p) fail_msg("%s", err.msg);
    assert_true(p->invocation.present);
    assert_close(p->invocation.round_trip_s, 0.7e-3, 1e-12);
    assert_close(p->invocation.request_Bps, 2.9e9, 1e-12);
    assert_close(p->invocation.response_Bps, 1.7e9, 1e-12);
    pl_platform_free(p);
    p = pl_platform_load_buffer(good, strlen(good), "good.json", &err);
    if (!p) fail_msg("%s", err.msg);
    assert_false(p->invocation.present);
    pl_platform_free(p);
    static const bad b[] = {
        {"round_trip_s", NULL, "$.invocation: ", "the field \"round_trip_s\" is missing"},
        {"request_Bps", NULL, "$.invocation: ", "the field \"request_Bps\" is missing"},
        {"response_Bps", NULL, "$.invocation: ", "the field \"response_Bps\" is missing"},
        {"round_trip_s", "\"-1 ms\"", "$.invocation.round_trip_s: ", "negative"},
        {"round_trip_s", "\"20 min\"", "$.invocation.round_trip_s: ", "larger"},
        {"round_trip_s", "\"1 GB\"", "$.invocation.round_trip_s: ", "a time"},
        {"request_Bps", "\"0 GB/s\"", "$.invocation.request_Bps: ", "zero"},
        {"request_Bps", "\"10 B/s\"", "$.invocation.request_Bps: ", "smaller than"},
        {"response_Bps", "\"2 GB\"", "$.invocation.response_Bps: ", "a bandwidth"},
        {"response_Bps", "\"1e15 B/s\"", "$.invocation.response_Bps: ", "larger"},
        {"latency_s", "\"1 ms\"", "$.invocation.latency_s: ", "unknown field"},
    };
    refused_inside("invocation", INVOCATION, b, sizeof b / sizeof b[0]);
    refused("invocation", "\"1 ms\"", "$.invocation: ", "expected an object");
}

static void test_refused_vcpu(void **state)
{
    (void)state;
    static const bad b[] = {
        {"vcpu", NULL, "$: ", "the field \"vcpu\" is missing"},
        /* two devices the cluster reader accepts (they have a link), refused by the platform
         * reader
         */
        {"vcpu",
         "{\"devices\": [{\"name\": \"v\", \"model\": \"cpu-generic\", \"count\": 2}], "
         "\"links\": "
         "[{\"from\": \"v0\", \"to\": \"v1\", \"bandwidth_Bps\": \"1 GB/s\", \"both_ways\": "
         "true}]}",
         "$.vcpu.devices: ", "2 devices: the vcpu cluster describes exactly one"},
        {"vcpu.devices", "[{\"name\": \"g\", \"model\": \"T4\"}]",
         "$.vcpu.devices[0]: ", "the device is a gpu; a function's vCPU is a cpu"},
        /* the cluster reader's own rules hold inside */
        {"vcpu.devices",
         "[{\"name\": \"v\", \"model\": \"cpu-generic\", \"mem_bandwidth_Bps\": 5}]",
         "$.vcpu.devices[0].mem_bandwidth_Bps: ", "almost certainly a unit mistake"},
        {"vcpu.devices", "[{\"name\": \"v\", \"model\": \"Xeon-9999\"}]",
         "$.vcpu.devices[0].model: ", "unknown model"},
        {"vcpu.devices", "[]", "$.vcpu.devices: ", "at least one device"},
    };
    refused_all(b, sizeof b / sizeof b[0]);
}

/* The example in docs/formats.md loads as documented. */
static void test_doc_example(void **state)
{
    (void)state;
    pl_err err = {""};
    size_t len;
    char *doc = pl_read_file("docs/formats.md", &len, &err);
    if (!doc) fail_msg("%s", err.msg);
    char *start = strstr(doc, "## placer-platform/1");
    assert_non_null(start);
    start = strstr(start, "```json\n");
    assert_non_null(start);
    start += 8;
    char *end = strstr(start, "```");
    assert_non_null(end);
    char path[256];
    snprintf(path, sizeof path, "%s", tu_tmpfile(start, (size_t)(end - start), ".json"));
    pl_platform *p = pl_platform_load(path, &err);
    unlink(path);
    free(doc);
    if (!p) fail_msg("%s", err.msg);
    assert_true(p->mem_step_mb == 1 && p->store.present && !p->shm.present);
    assert_close(pl_platform_usd(p, 1536, 0.1234), 3.3000062e-6, 1e-9);
    pl_platform_free(p);
}

static void test_missing_file(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_null(pl_platform_load("examples/platforms/no-such.json", &err));
    assert_contains(err.msg, "examples/platforms/no-such.json");
    pl_platform_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lambda),
        cmocka_unit_test(test_openfaas),
        cmocka_unit_test(test_paper_lambda),
        cmocka_unit_test(test_paper_openfaas),
        cmocka_unit_test(test_store_pricing),
        cmocka_unit_test(test_refused_store_pricing),
        cmocka_unit_test(test_round_mb),
        cmocka_unit_test(test_billed_s),
        cmocka_unit_test(test_vcpus),
        cmocka_unit_test(test_load_buffer),
        cmocka_unit_test(test_vcpus_bound),
        cmocka_unit_test(test_usd),
        cmocka_unit_test(test_refused_numbers),
        cmocka_unit_test(test_refused_fields),
        cmocka_unit_test(test_refused_transports),
        cmocka_unit_test(test_refused_vcpu),
        cmocka_unit_test(test_invocation),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_doc_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
