/* test_catalog.c: the placer-catalog/1 reader, the shipped catalogues, the clusters and
 * features built from configurations, and the spec table's cores and clocks. */
#include "testutil.h"

#include "placer/catalog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GBps 1e9

static pl_catalog *load(const char *path)
{
    pl_err err = {""};
    pl_catalog *c = pl_catalog_load(path, &err);
    if (!c) fail_msg("%s: %s", path, err.msg);
    return c;
}

static pl_catalog *load_text(const char *text)
{
    pl_err err = {""};
    pl_catalog *c = pl_catalog_load_buffer(text, strlen(text), "c.json", &err);
    if (!c) fail_msg("load failed: %s", err.msg);
    return c;
}

static const char *load_fails(const char *text)
{
    static pl_err err;
    err.msg[0] = 0;
    pl_catalog *c = pl_catalog_load_buffer(text, strlen(text), "bad.json", &err);
    if (c) {
        pl_catalog_free(c);
        fail_msg("loaded but should not: %s", text);
    }
    return err.msg;
}

static const pl_vm_config *config(const pl_catalog *c, const char *name)
{
    int i = pl_catalog_find(c, name);
    if (i < 0) fail_msg("no config \"%s\" in %s", name, c->name);
    return &c->configs[i];
}

/* A catalogue of one good configuration followed by `second` (a config object's text). */
static char *with_second(const char *second)
{
    static const char head[] =
        "{\"format\": \"placer-catalog/1\", \"configs\": [\n"
        "{\"name\": \"good\", \"price_usd_per_hour\": 1, \"price_date\": \"2025-06\", "
        "\"price_source\": \"test\", \"cpu\": {\"model\": \"cpu-generic\"}, "
        "\"gpu\": {\"model\": \"T4\", \"count\": 1}, \"interconnect\": \"pcie3\"},\n";
    size_t n = strlen(head) + strlen(second) + 8;
    char *s = malloc(n);
    snprintf(s, n, "%s%s]}", head, second);
    return s;
}

/* Loading `second` fails, naming the config `name` and the JSON `path` of the field. */
static void refused(const char *second, const char *name, const char *path, const char *problem)
{
    char *text = with_second(second);
    const char *msg = load_fails(text);
    free(text);
    char want[128];
    snprintf(want, sizeof want, "bad.json: config \"%s\": %s", name, path);
    assert_contains(msg, want);
    assert_contains(msg, problem);
}

/* ---- the spec table's new columns ---- */

static void test_spec_cores_clocks(void **state)
{
    (void)state;
    int n;
    const pl_gpu_spec *s = pl_gpu_specs(&n);
    for (int i = 0; i < n; i++) {
        if (s[i].cores <= 0 || s[i].clock_hz < 5e8 || s[i].clock_hz > 5e9)
            fail_msg("%s: cores %d, clock %g", s[i].model, s[i].cores, s[i].clock_hz);
        /* the peak is cores x flop/cycle x clock: 2 (one FMA) per CUDA core, 32 or 64 per
         * CPU core (AVX2 / AVX-512, two FMA units); GTX 980 Ti's peak is at base clock */
        double per = s[i].peak_flops_per_s[PL_PREC_FP32] / (s[i].cores * s[i].clock_hz);
        bool ok = s[i].kind == PL_DEV_GPU ? fabs(per - 2) < 0.15
                                          : fabs(per - 32) < 1.5 || fabs(per - 64) < 1.5;
        if (!ok) fail_msg("%s: %.3f flop per core and cycle", s[i].model, per);
    }
    assert_int_equal(pl_gpu_spec_find("K80")->cores, 2496);
    assert_close(pl_gpu_spec_find("P100")->clock_hz, 1.303e9, 1e-9);
    assert_int_equal(pl_gpu_spec_find("Xeon-E5-2690-v4")->cores, 14);
}

/* ---- shipped catalogues ---- */

static void test_testbed(void **state)
{
    (void)state;
    pl_catalog *c = load("catalogs/autodeep-testbed.json");
    assert_string_equal(c->name, "autodeep-testbed");
    assert_int_equal(c->n, 15);
    assert_int_equal(strlen(c->sha256), 64);
    static const struct {
        const char *gpu;
        int max;
        double per_gpu;
        const char *cpu;
    } rows[] = {{"980Ti", 3, 0.56, "i7-5930K"},
                {"1080", 4, 0.70, "i7-6850K"},
                {"P100", 4, 2.07, "Xeon-E5-2690-v4"},
                {"K80", 4, 0.90, "Xeon-E5-2690-v3"}};
    for (size_t r = 0; r < 4; r++)
        for (int k = 1; k <= rows[r].max; k++) {
            char name[32];
            snprintf(name, sizeof name, "%s x%d", rows[r].gpu, k);
            const pl_vm_config *v = config(c, name);
            assert_close(v->price_usd_per_hour, rows[r].per_gpu * k, 1e-9);
            assert_close(v->cluster->usd_per_hour, rows[r].per_gpu * k, 1e-9);
            assert_int_equal(v->gpu_count, k);
            assert_string_equal(v->cpu_model, rows[r].cpu);
            assert_string_equal(v->price_date, "2023");
            assert_int_equal(v->cluster->n_devs, 1 + k);
        }
    assert_close(config(c, "P100 x3")->price_usd_per_hour, 6.21, 1e-9);
    /* a reproduction catalogue: every row is searched, though Azure has retired NC/NCv2 */
    for (int i = 0; i < c->n; i++)
        assert_false(c->configs[i].retired);
    pl_catalog_free(c);
}

/* 4 x P100 on Xeon E5-2690 v4, by hand: 24 vCPUs (NC24s_v2), 2.6 GHz base clock, 3584 CUDA
 * cores at 1303 MHz boost (P100 PCIe), 732 GB/s, 4 GPUs. */
static void test_features_by_hand(void **state)
{
    (void)state;
    pl_catalog *c = load("catalogs/autodeep-testbed.json");
    const pl_vm_config *v = config(c, "P100 x4");
    const double want[PL_N_FEATURES] = {24, 2.6e9, 3584, 1.303e9, 732e9, 4};
    for (int f = 0; f < PL_N_FEATURES; f++)
        assert_close(v->features[f], want[f], 1e-9);
    pl_catalog_free(c);
}

static void test_cloud_catalogues(void **state)
{
    (void)state;
    static const struct {
        const char *path;
        int n, retired;
    } files[] = {
        {"catalogs/aws.json", 18, 0}, {"catalogs/azure.json", 12, 2}, {"catalogs/gcp.json", 13, 1}};
    for (size_t i = 0; i < 3; i++) {
        pl_catalog *c = load(files[i].path);
        assert_int_equal(c->n, files[i].n);
        int retired = 0;
        for (int k = 0; k < c->n; k++) {
            const pl_vm_config *v = &c->configs[k];
            retired += v->retired;
            assert_true(v->price_usd_per_hour > 0);
            assert_true(v->price_date[0] && v->price_source[0] && v->provider[0]);
            assert_int_equal(v->cluster->n_devs, 1 + v->gpu_count);
            assert_int_equal(v->cluster->io_device, 0);
        }
        assert_int_equal(retired, files[i].retired);
        pl_catalog_free(c);
    }
    pl_catalog *c = load("catalogs/aws.json");
    assert_close(config(c, "p3.8xlarge")->price_usd_per_hour, 12.24, 1e-9);
    assert_int_equal(config(c, "p2.16xlarge")->gpu_count, 16);
    assert_string_equal(config(c, "p4d.24xlarge")->gpu_model, "A100-SXM4-40GB");
    pl_catalog_free(c);
    c = load("catalogs/gcp.json");
    assert_close(config(c, "n1-standard-4+1xK80")->price_usd_per_hour, 0.64, 1e-9);
    assert_true(config(c, "n1-standard-4+1xK80")->retired);
    pl_catalog_free(c);
}

/* catalogs/clouds.json is written by tools/merge_catalogs.py: the AWS, Azure and GCP
 * configurations, in that order. Fails when one of the three changed and the union was not
 * written again. */
static void test_clouds_is_the_union(void **state)
{
    (void)state;
    static const char *const parts[] = {"catalogs/aws.json", "catalogs/azure.json",
                                        "catalogs/gcp.json"};
    pl_catalog *u = load("catalogs/clouds.json");
    int k = 0, retired = 0;
    for (size_t p = 0; p < 3; p++) {
        pl_catalog *c = load(parts[p]);
        for (int i = 0; i < c->n; i++, k++) {
            if (k >= u->n)
                fail_msg("clouds.json ends before %s's %s", parts[p], c->configs[i].name);
            const pl_vm_config *a = &u->configs[k], *b = &c->configs[i];
            if (strcmp(a->name, b->name))
                fail_msg("clouds.json config %d is %s, %s has %s: run tools/merge_catalogs.py", k,
                         a->name, parts[p], b->name);
            assert_close(a->price_usd_per_hour, b->price_usd_per_hour, 1e-12);
            assert_int_equal(a->gpu_count, b->gpu_count);
            assert_int_equal(a->retired, b->retired);
        }
        pl_catalog_free(c);
    }
    assert_int_equal(u->n, k);
    for (int i = 0; i < u->n; i++)
        retired += u->configs[i].retired;
    /* the counts tools/merge_catalogs.py and docs/catalogs.md state */
    assert_int_equal(u->n, 43);
    assert_int_equal(u->n - retired, 40);
    pl_catalog_free(u);
}

/* ---- clusters from configurations ---- */

static void test_cluster_built(void **state)
{
    (void)state;
    pl_catalog *c = load("catalogs/aws.json");
    const pl_cluster *k = config(c, "p3.8xlarge")->cluster;
    assert_string_equal(k->name, "p3.8xlarge");
    assert_int_equal(k->n_devs, 5);
    assert_int_equal(pl_cluster_find(k, "cpu0"), 0);
    assert_int_equal(k->io_device, 0);
    assert_int_equal(k->devs[0].kind, PL_DEV_CPU);
    assert_string_equal(k->devs[0].model, "Xeon-E5-2686-v4");
    for (int g = 1; g < 5; g++) {
        char name[8];
        snprintf(name, sizeof name, "gpu%d", g - 1);
        assert_int_equal(pl_cluster_find(k, name), g);
        assert_string_equal(k->devs[g].model, "V100-SXM2-16GB");
        assert_close(k->bw_Bps[g], 15.75 * GBps, 1e-12);     /* cpu0 -> gpu: PCIe 3.0 */
        assert_close(k->bw_Bps[g * 5], 15.75 * GBps, 1e-12); /* gpu -> cpu0 */
        assert_int_equal(k->hops[g], 1);
    }
    assert_close(k->bw_Bps[1 * 5 + 2], 25 * GBps, 1e-12); /* gpu0 -> gpu1: NVLink2 */
    assert_close(k->lat_s[1 * 5 + 2], 2e-6, 1e-12);
    /* 32 vCPUs of an 18-core socket: the socket's peak in proportion */
    assert_close(k->devs[0].peak_flops_per_s[PL_PREC_FP32], 1.325e12 * 32 / 18, 1e-9);
    const pl_cluster *h = config(c, "p5.48xlarge")->cluster;
    assert_close(h->bw_Bps[1 * 9 + 8], 450 * GBps, 1e-12);
    assert_close(h->bw_Bps[1], 31.5 * GBps, 1e-12);
    pl_catalog_free(c);
}

static void test_custom_and_embedded(void **state)
{
    (void)state;
    pl_catalog *c = load_text(
        "{\"format\": \"placer-catalog/1\", \"name\": \"x\", \"configs\": ["
        "{\"name\": \"custom\", \"price_usd_per_hour\": \"2.5 USD/h\", \"price_date\": "
        "\"2023/2025-06\", \"price_source\": \"t\", \"cpu\": {\"model\": \"E5-2690v4\", "
        "\"cores\": 14}, \"gpu\": {\"model\": \"v100\", \"count\": 2}, "
        "\"interconnect\": {\"bandwidth_Bps\": \"10 GB/s\", \"latency_s\": \"5 us\"}, "
        "\"host_link\": \"pcie4\"},"
        "{\"name\": \"cpu-only\", \"price_usd_per_hour\": 0.1, \"price_date\": \"2025\", "
        "\"price_source\": \"t\", \"cpu\": {\"model\": \"cpu-generic\", \"cores\": 16}},"
        "{\"name\": \"embedded\", \"price_usd_per_hour\": 3.6, \"price_date\": \"2025-06-01\", "
        "\"price_source\": \"t\", \"cluster\": {\"devices\": ["
        "{\"name\": \"host\", \"model\": \"Xeon-E5-2690-v3\"}, "
        "{\"name\": \"g\", \"count\": 2, \"model\": \"K80\"}], \"links\": ["
        "{\"from\": \"host\", \"to\": \"g0\", \"bandwidth_Bps\": \"10 GB/s\", \"both_ways\": true},"
        "{\"from\": \"host\", \"to\": \"g1\", \"bandwidth_Bps\": \"10 GB/s\", \"both_ways\": true}"
        "]}}]}");
    assert_int_equal(c->n, 3);
    const pl_vm_config *v = config(c, "custom");
    assert_close(v->price_usd_per_hour, 2.5, 1e-12);
    assert_string_equal(v->cpu_model, "Xeon-E5-2690-v4");
    assert_string_equal(v->gpu_model, "V100-SXM2-16GB");
    assert_close(v->cluster->bw_Bps[1 * 3 + 2], 10 * GBps, 1e-12);
    assert_close(v->cluster->lat_s[1 * 3 + 2], 5e-6, 1e-12);
    assert_close(v->cluster->bw_Bps[1], 31.5 * GBps, 1e-12);
    assert_close(v->cluster->devs[0].peak_flops_per_s[PL_PREC_FP32], 1.165e12, 1e-12);
    v = config(c, "cpu-only");
    assert_int_equal(v->gpu_count, 0);
    assert_int_equal(v->cluster->n_devs, 1);
    assert_string_equal(v->provider, "");
    assert_close(v->features[PL_FEAT_CUDA_CORES], 0, 0);
    v = config(c, "embedded");
    assert_string_equal(v->cluster->name, "embedded");
    assert_int_equal(v->cluster->io_device, 0);
    assert_close(v->cluster->usd_per_hour, 3.6, 1e-12);
    assert_int_equal(v->gpu_count, 2);
    assert_string_equal(v->gpu_model, "K80");
    assert_close(v->features[PL_FEAT_CUDA_CORES], 2496, 0);
    assert_close(v->features[PL_FEAT_CPU_CORES], 12, 0);
    pl_catalog_free(c);
}

/* ---- features ---- */

static void test_features_normalised(void **state)
{
    (void)state;
    const char *paths[] = {"catalogs/autodeep-testbed.json", "catalogs/aws.json",
                           "catalogs/azure.json", "catalogs/gcp.json"};
    for (size_t p = 0; p < 4; p++) {
        pl_catalog *c = load(paths[p]);
        double *x = malloc((size_t)c->n * PL_N_FEATURES * sizeof *x);
        pl_catalog_features(c, x);
        for (int f = 0; f < PL_N_FEATURES; f++) {
            double lo = INFINITY, hi = -INFINITY;
            bool varies = false;
            for (int i = 0; i < c->n; i++) {
                double v = x[(size_t)i * PL_N_FEATURES + f];
                assert_true(v >= 0 && v <= 1);
                lo = fmin(lo, v), hi = fmax(hi, v);
                varies |= c->configs[i].features[f] != c->configs[0].features[f];
            }
            assert_close(lo, 0, 0);
            assert_close(hi, varies ? 1 : 0, 0);
        }
        free(x);
        pl_catalog_free(c);
    }
    /* log scale, then min-max: GPU count 1..4 maps to (ln 3 - ln 2) / (ln 5 - ln 2) at 2 */
    pl_catalog *c = load("catalogs/autodeep-testbed.json");
    double *x = malloc((size_t)c->n * PL_N_FEATURES * sizeof *x);
    pl_catalog_features(c, x);
    int i = pl_catalog_find(c, "1080 x2");
    assert_close(x[(size_t)i * PL_N_FEATURES + PL_FEAT_GPU_COUNT],
                 (log(3.0) - log(2.0)) / (log(5.0) - log(2.0)), 1e-12);
    free(x);
    pl_catalog_free(c);
}

/* ---- refused inputs ---- */

#define GOOD_PRICE "\"price_usd_per_hour\": 1, \"price_date\": \"2025\", \"price_source\": \"s\""
#define GOOD_CPU "\"cpu\": {\"model\": \"cpu-generic\"}"

static void test_bad_configs(void **state)
{
    (void)state;
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU
            ", \"gpu\": {\"model\": \"V100-SXM3\", \"count\": 1}, \"interconnect\": \"pcie3\"}",
            "b", "$.configs[1].gpu.model", "unknown gpu model \"V100-SXM3\"");
    /* suggestions as in cluster files: by alias too ("980Ti"), and only rows of the kind */
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU
            ", \"gpu\": {\"model\": \"980Tii\", \"count\": 1}, \"interconnect\": \"pcie3\"}",
            "b", "$.configs[1].gpu.model", "did you mean \"GTX-980-Ti\"");
    refused("{\"name\": \"b\", " GOOD_PRICE ", \"cpu\": {\"model\": \"E5-2690v5\"}}", "b",
            "$.configs[1].cpu.model", "did you mean \"Xeon-E5-2690-v4\"");
    refused("{\"name\": \"b\", \"price_date\": \"2025\", \"price_source\": \"s\", " GOOD_CPU "}",
            "b", "$.configs[1]", "price_usd_per_hour");
    refused("{\"name\": \"b\", \"price_usd_per_hour\": -2, \"price_date\": \"2025\", "
            "\"price_source\": \"s\", " GOOD_CPU "}",
            "b", "$.configs[1].price_usd_per_hour", "negative");
    refused("{\"name\": \"b\", \"price_usd_per_hour\": 0, \"price_date\": \"2025\", "
            "\"price_source\": \"s\", " GOOD_CPU "}",
            "b", "$.configs[1].price_usd_per_hour", "a price of zero is not allowed");
    refused("{\"name\": \"good\", " GOOD_PRICE ", " GOOD_CPU "}", "good", "$.configs[1].name",
            "declared twice");
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU
            ", \"gpu\": {\"model\": \"T4\", \"count\": 2}, \"interconnect\": \"nvlink9\"}",
            "b", "$.configs[1].interconnect", "unknown interconnect \"nvlink9\"");
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU ", \"prize\": 3}", "b",
            "$.configs[1].prize", "unknown field");
    refused("{\"name\": \"b\", " GOOD_PRICE ", \"cpu\": {\"model\": \"cpu-generic\", \"cors\": 3}}",
            "b", "$.configs[1].cpu.cors", "unknown field");
    refused("{\"name\": \"b\", \"price_usd_per_hour\": 1, \"price_date\": \"June\", "
            "\"price_source\": \"s\", " GOOD_CPU "}",
            "b", "$.configs[1].price_date", "not a date");
    refused("{\"name\": \"b\", \"price_usd_per_hour\": 1, \"price_source\": \"s\", " GOOD_CPU "}",
            "b", "$.configs[1]", "price_date");
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU
            ", \"gpu\": {\"model\": \"T4\", \"count\": 65}, \"interconnect\": \"pcie3\"}",
            "b", "$.configs[1].gpu.count", "outside 0..64");
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU ", \"gpu\": {\"model\": \"T4\", "
            "\"count\": 2}}",
            "b", "$.configs[1]", "interconnect");
    refused("{\"name\": \"b\", " GOOD_PRICE ", \"cpu\": {\"model\": \"T4\"}}", "b",
            "$.configs[1].cpu.model", "is a gpu, not a cpu");
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU
            ", \"cluster\": {\"devices\": [{\"name\": \"c\", \"model\": \"cpu\"}]}}",
            "b", "$.configs[1].cpu", "exclusive");
    refused("{\"name\": \"b\", " GOOD_PRICE ", \"cluster\": {\"devices\": "
            "[{\"name\": \"c\", \"model\": \"V100-SXM3\"}]}}",
            "b", "$.configs[1].cluster.devices[0].model", "unknown model");
    refused("{\"name\": \"b\", " GOOD_PRICE ", " GOOD_CPU
            ", \"gpu\": {\"model\": \"T4\", \"count\": 2}, \"interconnect\": "
            "{\"bandwidth_Bps\": 25}}",
            "b", "$.configs[1].interconnect.bandwidth_Bps", "unit mistake");
}

static void test_bad_catalogues(void **state)
{
    (void)state;
    assert_contains(load_fails("{\"format\": \"placer-cluster/1\", \"configs\": []}"),
                    "placer-catalog/1");
    assert_contains(load_fails("{\"format\": \"placer-catalog/1\", \"configs\": []}"),
                    "at least one configuration");
    assert_contains(load_fails("{\"format\": \"placer-catalog/1\", \"configs\": [3]}"),
                    "bad.json: $.configs[0]: expected a configuration object");
    assert_contains(load_fails("{\"format\": \"placer-catalog/1\", \"configs\": [{}]}"),
                    "bad.json: $.configs[0]");
    assert_contains(load_fails("{\"format\": \"placer-catalog/1\", \"configs\": [], \"x\": 1}"),
                    "$.x: unknown field");
    pl_err err = {""};
    assert_null(pl_catalog_load("catalogs/none.json", &err));
    assert_contains(err.msg, "catalogs/none.json");
}

/* The example in docs/catalogs.md loads as documented. */
static void test_doc_example(void **state)
{
    (void)state;
    pl_err err = {""};
    size_t len;
    char *doc = pl_read_file("docs/catalogs.md", &len, &err);
    if (!doc) fail_msg("%s", err.msg);
    char *start = strstr(doc, "```json\n");
    assert_non_null(start);
    start += 8;
    char *end = strstr(start, "```");
    assert_non_null(end);
    pl_catalog *c = pl_catalog_load_buffer(start, (size_t)(end - start), "doc.json", &err);
    if (!c) fail_msg("%s", err.msg);
    assert_int_equal(c->n, 3);
    assert_non_null(config(c, "p3.8xlarge")->cluster);
    pl_catalog_free(c);
    free(doc);
}

/* Inputs that once crashed the catalogue reader (tools/fuzz.sh, *.catalog.json) load or are
 * refused with a message. There may be none. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_cores_clocks),   cmocka_unit_test(test_testbed),
        cmocka_unit_test(test_features_by_hand),    cmocka_unit_test(test_cloud_catalogues),
        cmocka_unit_test(test_clouds_is_the_union), cmocka_unit_test(test_cluster_built),
        cmocka_unit_test(test_custom_and_embedded), cmocka_unit_test(test_features_normalised),
        cmocka_unit_test(test_bad_configs),         cmocka_unit_test(test_bad_catalogues),
        cmocka_unit_test(test_doc_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
