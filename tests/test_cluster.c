/* test_cluster.c: devices, routes, the GPU spec table, the placer-cluster/1 reader and the
 * example clusters. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/json.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GBps 1e9
#define US 1e-6

static pl_cluster *load_text(const char *text)
{
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), "c.json", &err);
    if (!c) fail_msg("load failed: %s", err.msg);
    return c;
}

static const char *load_fails(const char *text)
{
    static pl_err err;
    err.msg[0] = 0;
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), "bad.json", &err);
    if (c) {
        pl_cluster_free(c);
        fail_msg("loaded but should not: %s", text);
    }
    return err.msg;
}

static size_t at(const pl_cluster *c, const char *a, const char *b)
{
    int i = pl_cluster_find(c, a), j = pl_cluster_find(c, b);
    if (i < 0 || j < 0) fail_msg("no device %s or %s", a, b);
    return (size_t)i * c->n_devs + j;
}

/* ---- names and the table ---- */

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(pl_precision_name(PL_PREC_FP32), "fp32");
    assert_string_equal(pl_precision_name(PL_PREC_FP16), "fp16");
    assert_string_equal(pl_precision_name(PL_PREC_BF16), "bf16");
    assert_string_equal(pl_precision_name(PL_PREC_INT8), "int8");
    assert_string_equal(pl_precision_name(PL_PREC_FP64), "fp64");
    assert_int_equal(pl_precision_of_dtype(PL_DT_FLOAT16), PL_PREC_FP16);
    assert_int_equal(pl_precision_of_dtype(PL_DT_BFLOAT16), PL_PREC_BF16);
    assert_int_equal(pl_precision_of_dtype(PL_DT_INT8), PL_PREC_INT8);
    assert_int_equal(pl_precision_of_dtype(PL_DT_UINT8), PL_PREC_INT8);
    assert_int_equal(pl_precision_of_dtype(PL_DT_DOUBLE), PL_PREC_FP64);
    assert_int_equal(pl_precision_of_dtype(PL_DT_FLOAT), PL_PREC_FP32);
    assert_int_equal(pl_precision_of_dtype(PL_DT_INT64), PL_PREC_FP32);
    assert_string_equal(pl_dev_kind_name(PL_DEV_CPU), "cpu");
    assert_string_equal(pl_dev_kind_name(PL_DEV_GPU), "gpu");
    assert_string_equal(pl_dev_kind_name(PL_DEV_ACCEL), "accel");
}

static void test_spec_table(void **state)
{
    (void)state;
    int n;
    const pl_gpu_spec *s = pl_gpu_specs(&n);
    assert_true(n >= 20);
    for (int i = 0; i < n; i++) {
        if (!(s[i].memory_bytes > 0 && s[i].peak_flops_per_s[PL_PREC_FP32] > 0 &&
              s[i].mem_bandwidth_Bps > 0 && s[i].launch_overhead_s > 0 && s[i].source[0]))
            fail_msg("row %s lacks a figure or a source", s[i].model);
        /* every name and alias finds its own row, never another one */
        assert_ptr_equal(pl_gpu_spec_find(s[i].model), &s[i]);
        char aliases[256];
        snprintf(aliases, sizeof aliases, "%s", s[i].aliases);
        for (char *sv = NULL, *t = strtok_r(aliases, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
            if (pl_gpu_spec_find(t) != &s[i]) fail_msg("alias %s of %s", t, s[i].model);
    }
    const pl_gpu_spec *v = pl_gpu_spec_find("v100");
    assert_non_null(v);
    assert_string_equal(v->model, "V100-SXM2-16GB");
    assert_ptr_equal(pl_gpu_spec_find("v100 sxm2_16gb"), v);
    assert_close(v->peak_flops_per_s[PL_PREC_FP32], 15.7e12, 1e-9);
    assert_close(v->mem_bandwidth_Bps, 900e9, 1e-9);
    const pl_gpu_spec *k80 = pl_gpu_spec_find("K80");
    assert_close(k80->memory_bytes, 12.0 * 1024 * 1024 * 1024, 1e-9); /* one die */
    assert_close(k80->peak_flops_per_s[PL_PREC_FP32], 4.37e12, 1e-9);
    assert_true(k80->peak_flops_per_s[PL_PREC_FP16] == 0);
    assert_int_equal(pl_gpu_spec_find("cpu-generic")->kind, PL_DEV_CPU);
    const char *need[] = {"P100-SXM2-16GB",
                          "P100-PCIE-16GB",
                          "V100-SXM2-32GB",
                          "V100-PCIE-16GB",
                          "T4",
                          "P4",
                          "A10G",
                          "L4",
                          "A40",
                          "A100-SXM4-40GB",
                          "A100-SXM4-80GB",
                          "A100-PCIE-80GB",
                          "H100-SXM5-80GB",
                          "H100-PCIE-80GB",
                          "GTX-980-Ti",
                          "GTX-1080",
                          "GTX-1080-Ti",
                          "RTX-2080-Ti",
                          "RTX-3060-Ti"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!pl_gpu_spec_find(need[i])) fail_msg("no row %s", need[i]);
    assert_null(pl_gpu_spec_find("V100X"));
    assert_null(pl_gpu_spec_find(""));
    assert_null(pl_gpu_spec_find(NULL));
}

/* ---- building in code ---- */

/* Two hosts of two GPUs: g0-g1 and g2-g3 inside each host, g1-g2 between them. */
static pl_cluster *two_hosts(void)
{
    pl_cluster *c = pl_cluster_new("two-hosts");
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "g%d", i);
        assert_int_equal(pl_cluster_add_device(c, name, PL_DEV_GPU, "V100"), i);
    }
    pl_cluster_set_link(c, 0, 1, 50 * GBps, 1 * US, true);
    pl_cluster_set_link(c, 1, 2, 12.5 * GBps, 5 * US, true);
    pl_cluster_set_link(c, 2, 3, 40 * GBps, 2 * US, true);
    return c;
}

static void test_build_routes(void **state)
{
    (void)state;
    pl_cluster *c = two_hosts();
    pl_cluster_set_link(c, 0, 3, 1 * GBps, 30 * US, false); /* a slow direct link, one way */
    pl_err err = {""};
    assert_int_equal(pl_cluster_finalize(c, &err), 0);
    assert_string_equal(c->devs[2].model, "V100");
    assert_close(c->devs[2].memory_bytes, pl_gpu_spec_find("V100")->memory_bytes, 1e-12);
    /* g3 → g0: 3 hops, the slowest hop, the summed latency */
    size_t k = at(c, "g3", "g0");
    assert_int_equal(c->hops[k], 3);
    assert_close(c->bw_Bps[k], 12.5 * GBps, 1e-12);
    assert_close(c->lat_s[k], 8 * US, 1e-12);
    /* g0 → g3: the direct link wins even though slower */
    k = at(c, "g0", "g3");
    assert_int_equal(c->hops[k], 1);
    assert_close(c->bw_Bps[k], 1 * GBps, 1e-12);
    /* diagonal */
    for (int i = 0; i < 4; i++) {
        size_t d = (size_t)i * 4 + i;
        assert_true(isinf(c->bw_Bps[d]) && c->lat_s[d] == 0 && c->hops[d] == 0);
        assert_true(pl_cluster_xfer_s(c, i, i, 1e9) == 0);
    }
    /* transfer time: latency + bytes / bandwidth */
    assert_close(pl_cluster_xfer_s(c, 3, 0, 25e6), 8e-6 + 25e6 / 12.5e9, 1e-12);
    assert_close(pl_cluster_xfer_s(c, 0, 1, 1e9), 1e-6 + 0.02, 1e-12);
    /* finalizing again changes nothing; a device added later gets routes too */
    assert_int_equal(pl_cluster_finalize(c, &err), 0);
    k = at(c, "g3", "g0");
    assert_int_equal(c->hops[k], 3);
    assert_close(c->bw_Bps[k], 12.5 * GBps, 1e-12);
    int g4 = pl_cluster_add_device(c, "g4", PL_DEV_GPU, "T4");
    pl_cluster_set_link(c, 3, g4, 20 * GBps, 1 * US, true);
    assert_int_equal(pl_cluster_finalize(c, &err), 0);
    assert_int_equal(c->n_devs, 5);
    assert_int_equal(c->hops[at(c, "g0", "g4")], 2); /* through the direct link g0 → g3 */
    assert_close(c->bw_Bps[at(c, "g0", "g4")], 1 * GBps, 1e-12);
    assert_int_equal(c->hops[at(c, "g4", "g0")], 4);
    assert_close(c->bw_Bps[at(c, "g3", "g0")], 12.5 * GBps, 1e-12);
    assert_close(pl_cluster_xfer_s(c, 0, 1, 1e9), 1e-6 + 0.02, 1e-12);
    assert_int_equal(pl_cluster_find(c, "g2"), 2);
    assert_int_equal(pl_cluster_find(c, "g9"), -1);
    assert_int_equal(c->io_device, -1);
    assert_string_equal(c->sha256, "");
    assert_null(c->path);
    pl_cluster_free(c);
}

static void test_build_widest_tie(void **state)
{
    (void)state;
    /* a → d in two hops through b (10, 10) or c (20, 5): the widest bottleneck wins */
    pl_cluster *c = pl_cluster_new("diamond");
    const char *names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        pl_cluster_add_device(c, names[i], PL_DEV_CPU, "custom");
    pl_cluster_set_link(c, 0, 2, 20 * GBps, 1 * US, false);
    pl_cluster_set_link(c, 2, 3, 5 * GBps, 1 * US, false);
    pl_cluster_set_link(c, 0, 1, 10 * GBps, 4 * US, false);
    pl_cluster_set_link(c, 1, 3, 10 * GBps, 4 * US, false);
    pl_cluster_set_link(c, 3, 0, 1 * GBps, 0, false);
    pl_err err = {""};
    assert_int_equal(pl_cluster_finalize(c, &err), 0);
    assert_close(c->bw_Bps[3], 10 * GBps, 1e-12);
    assert_close(c->lat_s[3], 8 * US, 1e-12);
    assert_int_equal(c->hops[3], 2);
    /* b → c: b → d → a → c */
    assert_int_equal(c->hops[1 * 4 + 2], 3);
    assert_close(c->bw_Bps[1 * 4 + 2], 1 * GBps, 1e-12);
    assert_true(c->devs[0].memory_bytes == 0); /* not a table model: figures are set by hand */
    pl_cluster_free(c);
}

static void test_build_no_route(void **state)
{
    (void)state;
    pl_cluster *c = pl_cluster_new("split");
    pl_cluster_add_device(c, "a", PL_DEV_GPU, "T4");
    pl_cluster_add_device(c, "b", PL_DEV_GPU, "T4");
    pl_cluster_add_device(c, "c", PL_DEV_GPU, "T4");
    pl_cluster_set_link(c, 0, 1, 10 * GBps, 0, true);
    pl_cluster_set_link(c, 2, 0, 10 * GBps, 0, false);
    pl_err err = {""};
    assert_int_equal(pl_cluster_finalize(c, &err), -1);
    assert_contains(err.msg, "no route from device \"a\" to device \"c\"");
    pl_cluster_free(c);
}

static void test_build_many_devices(void **state)
{
    (void)state;
    /* a ring of 40 (the matrices grow past their first capacity while links exist) */
    enum { N = 40 };
    pl_cluster *c = pl_cluster_new("ring");
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "d%d", i);
        pl_cluster_add_device(c, name, PL_DEV_GPU, "T4");
        if (i) pl_cluster_set_link(c, i - 1, i, (double)i * GBps, 1 * US, true);
    }
    pl_cluster_set_link(c, N - 1, 0, 100 * GBps, 1 * US, true);
    pl_err err = {""};
    assert_int_equal(pl_cluster_finalize(c, &err), 0);
    assert_int_equal(c->hops[0 * N + N / 2], N / 2);
    assert_int_equal(c->hops[0 * N + 3], 3);
    assert_close(c->bw_Bps[0 * N + 3], 1 * GBps, 1e-12);
    assert_close(c->bw_Bps[0 * N + N - 3], (N - 2) * GBps, 1e-12);
    assert_close(c->lat_s[0 * N + N - 3], 3 * US, 1e-12);
    pl_cluster_free(c);
}

/* ---- the file format ---- */

/* Two hosts with two GPUs each behind a PCIe switch; the switches meet over InfiniBand; one
 * direct link gpu1 → gpu3. */
static const char *topology =
    "{\"format\": \"placer-cluster/1\", \"name\": \"two-hosts\",\n"
    " \"devices\": [\n"
    "   {\"name\": \"gpu0\", \"model\": \"V100\", \"host\": \"h0\"},\n"
    "   {\"name\": \"gpu1\", \"model\": \"V100\", \"host\": \"h0\"},\n"
    "   {\"name\": \"gpu2\", \"model\": \"T4\", \"host\": \"h1\"},\n"
    "   {\"name\": \"gpu3\", \"model\": \"T4\", \"host\": \"h1\"}],\n"
    " \"switches\": [\"sw0\", \"sw1\"],\n"
    " \"topology_links\": [\n"
    "   {\"a\": \"gpu0\", \"b\": \"sw0\", \"bandwidth_Bps\": \"16 GB/s\", \"latency_s\": \"1 "
    "us\"},\n"
    "   {\"a\": \"gpu1\", \"b\": \"sw0\", \"bandwidth_Bps\": \"16 GB/s\", \"latency_s\": \"1 "
    "us\"},\n"
    "   {\"a\": \"sw0\", \"b\": \"sw1\", \"bandwidth_Bps\": \"100 Gb/s\", \"latency_s\": \"3 "
    "us\"},\n"
    "   {\"a\": \"sw1\", \"b\": \"gpu2\", \"bandwidth_Bps\": \"10 GB/s\", \"latency_s\": \"2 "
    "us\"},\n"
    "   {\"a\": \"sw1\", \"b\": \"gpu3\", \"bandwidth_Bps\": 8e9, \"latency_s\": 2e-6}],\n"
    " \"links\": [{\"from\": \"gpu1\", \"to\": \"gpu3\", \"bandwidth_Bps\": \"5 GB/s\",\n"
    "             \"latency_s\": \"10 us\"}],\n"
    " \"io_device\": \"gpu0\", \"usd_per_hour\": \"6.5 USD/h\"}";

static void test_topology_routes(void **state)
{
    (void)state;
    pl_cluster *c = load_text(topology);
    assert_string_equal(c->name, "two-hosts");
    assert_int_equal(c->n_devs, 4);
    assert_string_equal(c->devs[2].host, "h1");
    assert_int_equal(c->io_device, 0);
    assert_close(c->usd_per_hour, 6.5, 1e-12);
    /* gpu0 → gpu2: gpu0 - sw0 - sw1 - gpu2, 3 hops, slowest 10 GB/s, 1 + 3 + 2 us */
    size_t k = at(c, "gpu0", "gpu2");
    assert_int_equal(c->hops[k], 3);
    assert_close(c->bw_Bps[k], 10 * GBps, 1e-12);
    assert_close(c->lat_s[k], 6 * US, 1e-12);
    assert_close(pl_cluster_xfer_s(c, 0, 2, 1e9), 6e-6 + 0.1, 1e-12);
    /* gpu3 → gpu0: 8 GB/s (gpu3's own link) is slower than InfiniBand's 12.5 */
    k = at(c, "gpu3", "gpu0");
    assert_int_equal(c->hops[k], 3);
    assert_close(c->bw_Bps[k], 8 * GBps, 1e-12);
    /* gpu1 → gpu3: the direct link wins; gpu3 → gpu1 goes through the switches */
    k = at(c, "gpu1", "gpu3");
    assert_int_equal(c->hops[k], 1);
    assert_close(c->bw_Bps[k], 5 * GBps, 1e-12);
    assert_close(c->lat_s[k], 10 * US, 1e-12);
    k = at(c, "gpu3", "gpu1");
    assert_int_equal(c->hops[k], 3);
    /* inside a host: through the switch */
    k = at(c, "gpu0", "gpu1");
    assert_int_equal(c->hops[k], 2);
    assert_close(c->bw_Bps[k], 16 * GBps, 1e-12);
    assert_close(c->lat_s[k], 2 * US, 1e-12);
    k = at(c, "gpu1", "gpu2");
    assert_close(c->bw_Bps[k], 10 * GBps, 1e-12);
    k = at(c, "gpu0", "gpu3");
    assert_close(c->bw_Bps[k], 8 * GBps, 1e-12);
    pl_cluster_free(c);
}

static void test_inheritance(void **state)
{
    (void)state;
    pl_cluster *c = load_text(
        "{\"format\": \"placer-cluster/1\", \"description\": \"x\", \"source\": \"y\",\n"
        " \"devices\": [\n"
        "  {\"name\": \"big\", \"model\": \"V100-SXM2-16GB\", \"memory_bytes\": \"32 GiB\",\n"
        "   \"peak_flops_per_s\": {\"fp16\": \"100 TFLOP/s\"}, \"description\": \"d\"},\n"
        "  {\"name\": \"gpu\", \"count\": 3, \"model\": \"a100\", \"launch_overhead_s\": \"8 "
        "us\",\n   \"stage_overhead_s\": \"15 us\", \"stage_copy_Bps\": \"9 GB/s\",\n"
        "   \"stage_tensor_s\": \"3 us\"},\n"
        "  {\"name\": \"acc\", \"kind\": \"accel\", \"model\": \"my-npu\", \"memory_bytes\": "
        "\"8 GiB\",\n"
        "   \"peak_flops_per_s\": \"50 TFLOP/s\", \"mem_bandwidth_Bps\": \"200 GB/s\"},\n"
        "  {\"name\": \"cpu0\", \"model\": \"cpu-generic\", \"kind\": \"accel\"}],\n"
        " \"links\": [{\"from\": \"big\", \"to\": \"gpu0\", \"bandwidth_Bps\": \"25 GB/s\",\n"
        "   \"both_ways\": true}],\n"
        " \"topology_links\": [\n"
        "  {\"a\": \"gpu0\", \"b\": \"gpu1\", \"bandwidth_Bps\": \"25 GB/s\"},\n"
        "  {\"a\": \"gpu1\", \"b\": \"gpu2\", \"bandwidth_Bps\": \"25 GB/s\"},\n"
        "  {\"a\": \"gpu2\", \"b\": \"acc\", \"bandwidth_Bps\": \"25 GB/s\"},\n"
        "  {\"a\": \"acc\", \"b\": \"cpu0\", \"bandwidth_Bps\": \"25 GB/s\"}]}");
    const pl_gpu_spec *v = pl_gpu_spec_find("V100-SXM2-16GB"), *a = pl_gpu_spec_find("A100");
    assert_string_equal(c->name, "c"); /* from the buffer name "c.json" */
    assert_int_equal(c->n_devs, 6);
    const pl_device *big = &c->devs[0];
    assert_string_equal(big->model, "V100-SXM2-16GB");
    assert_int_equal(big->kind, PL_DEV_GPU);
    assert_close(big->memory_bytes, 32.0 * 1024 * 1024 * 1024, 1e-12);
    assert_close(big->peak_flops_per_s[PL_PREC_FP16], 100e12, 1e-12);
    assert_close(big->peak_flops_per_s[PL_PREC_FP32], v->peak_flops_per_s[PL_PREC_FP32], 1e-12);
    assert_close(big->mem_bandwidth_Bps, v->mem_bandwidth_Bps, 1e-12);
    assert_close(big->launch_overhead_s, v->launch_overhead_s, 1e-12);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", i);
        const pl_device *g = &c->devs[pl_cluster_find(c, name)];
        assert_string_equal(g->model, "A100-SXM4-40GB"); /* the canonical name */
        assert_close(g->memory_bytes, a->memory_bytes, 1e-12);
        assert_close(g->launch_overhead_s, 8e-6, 1e-12);
        assert_close(g->stage_overhead_s, 15e-6, 1e-12);
        assert_close(g->stage_copy_Bps, 9e9, 1e-12);
        assert_close(g->stage_tensor_s, 3e-6, 1e-12);
    }
    assert_true(big->stage_overhead_s == 0 && big->stage_copy_Bps == 0 &&
                big->stage_tensor_s == 0); /* not given: 0 */
    const pl_device *acc = &c->devs[pl_cluster_find(c, "acc")];
    assert_int_equal(acc->kind, PL_DEV_ACCEL);
    assert_string_equal(acc->model, "my-npu");
    assert_close(acc->peak_flops_per_s[PL_PREC_FP32], 50e12, 1e-12);
    assert_true(acc->peak_flops_per_s[PL_PREC_FP16] == 0);
    assert_close(acc->launch_overhead_s, 5e-6, 1e-12); /* default for a non-CPU */
    assert_int_equal(c->devs[pl_cluster_find(c, "cpu0")].kind, PL_DEV_ACCEL);
    size_t k = at(c, "big", "cpu0");
    assert_int_equal(c->hops[k], 5);
    assert_true(c->lat_s[k] == 0);
    pl_cluster_free(c);
}

/* The paper's Table III, Gbps, rows send and columns receive (0: the diagonal). */
static const double inter_gbps[4][4] = {{0, 44.26, 32.92, 44.28},
                                        {42.39, 0, 35.32, 44.51},
                                        {33.2, 35.31, 0, 32.95},
                                        {42.08, 43.22, 33.28, 0}};
static const double intra_gbps[4][4] = {{0, 1170.04, 626.10, 610.56},
                                        {1148.16, 0, 618.98, 581.09},
                                        {630.43, 609.82, 0, 571.96},
                                        {622.67, 575.08, 581.35, 0}};

/* Two cores of one host share 120 GB/s; a third device on the same host gives none, a fourth
 * on another host its own: two domains, and the devices without the figure in none. */
static void test_shared_memory(void **state)
{
    (void)state;
    pl_cluster *c = load_text(
        "{\"format\": \"placer-cluster/1\", \"devices\": ["
        "{\"name\": \"cpu\", \"count\": 2, \"kind\": \"cpu\", \"model\": \"core\", "
        "\"host\": \"vm\", \"memory_bytes\": \"8 GiB\", \"peak_flops_per_s\": \"100 GFLOP/s\", "
        "\"mem_bandwidth_Bps\": \"74 GB/s\", \"host_mem_bandwidth_Bps\": \"120 GB/s\", "
        "\"host_mem_stall_Bps\": \"113 GB/s\", \"host_cold_read_Bps\": \"22 GB/s\", "
        "\"host_cold_tau_s\": \"35 ms\", \"host_cold_time_share\": 0.35, "
        "\"host_cold_keep_bytes\": \"48 MiB\", "
        "\"private_cache_bytes\": \"1 MiB\", \"gemm_tile_columns\": 16, "
        "\"reread_Bps\": \"25 GB/s\"},"
        "{\"name\": \"g\", \"model\": \"T4\", \"host\": \"vm\"},"
        "{\"name\": \"h\", \"model\": \"T4\", \"host\": \"other\", "
        "\"host_mem_bandwidth_Bps\": \"400 GB/s\"}],"
        "\"links\": [{\"from\": \"cpu0\", \"to\": \"cpu1\", \"bandwidth_Bps\": \"10 GB/s\", "
        "\"both_ways\": true}, {\"from\": \"cpu0\", \"to\": \"g\", \"bandwidth_Bps\": "
        "\"10 GB/s\", \"both_ways\": true}, {\"from\": \"cpu0\", \"to\": \"h\", "
        "\"bandwidth_Bps\": \"10 GB/s\", \"both_ways\": true}]}");
    assert_close(c->devs[1].host_mem_bandwidth_Bps, 120 * GBps, 1e-12);
    assert_true(c->devs[2].host_mem_bandwidth_Bps == 0);
    assert_close(c->devs[1].private_cache_bytes, 1048576, 1e-12);
    assert_close(c->devs[1].host_mem_stall_Bps, 113 * GBps, 1e-12);
    assert_true(c->devs[3].host_mem_stall_Bps == 0);
    assert_close(c->devs[1].host_cold_read_Bps, 22 * GBps, 1e-12);
    assert_close(c->devs[1].host_cold_tau_s, 0.035, 1e-12);
    assert_close(c->devs[1].host_cold_time_share, 0.35, 1e-12);
    assert_close(c->devs[1].host_cold_keep_bytes, 48 << 20, 1e-12);
    assert_true(c->devs[3].host_cold_keep_bytes == 0);
    assert_true(c->devs[3].host_cold_read_Bps == 0 && c->devs[3].host_cold_tau_s == 0);
    assert_true(c->devs[3].private_cache_bytes == 0);
    assert_int_equal(c->devs[1].gemm_tile_columns, 16),
        assert_int_equal(c->devs[3].gemm_tile_columns, 0);
    assert_close(c->devs[1].reread_Bps, 25 * GBps, 1e-12);
    assert_true(c->devs[3].reread_Bps == 0);
    int dom[4];
    assert_int_equal(pl_cluster_mem_domains(c, dom), 2);
    assert_int_equal(dom[0], 0), assert_int_equal(dom[1], 0);
    assert_int_equal(dom[2], -1), assert_int_equal(dom[3], 1);
    pl_cluster_free(c);
}

static void check_matrix(const char *path, const double gbps[4][4])
{
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(path, &err);
    if (!c) fail_msg("%s", err.msg);
    assert_int_equal(c->n_devs, 4);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (i != j) {
                assert_close(c->bw_Bps[i * 4 + j], gbps[i][j] * 1e9 / 8, 1e-12);
                assert_int_equal(c->hops[i * 4 + j], 1);
            }
    pl_cluster_free(c);
}

static void test_moirai_tables(void **state)
{
    (void)state;
    check_matrix("examples/clusters/moirai-inter-server.json", inter_gbps);
    check_matrix("examples/clusters/moirai-intra-server.json", intra_gbps);
}

static void test_examples_load(void **state)
{
    (void)state;
    glob_t g;
    assert_int_equal(glob("examples/clusters/*.json", 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 8);
    for (size_t f = 0; f < g.gl_pathc; f++) {
        pl_err err = {""};
        pl_cluster *c = pl_cluster_load(g.gl_pathv[f], &err);
        if (!c) fail_msg("%s", err.msg);
        assert_string_equal(c->path, g.gl_pathv[f]);
        char sha[65];
        assert_int_equal(pl_sha256_file(g.gl_pathv[f], sha, &err), 0);
        assert_string_equal(c->sha256, sha);
        for (int a = 0; a < c->n_devs; a++)
            for (int b = 0; b < c->n_devs; b++) {
                size_t k = (size_t)a * c->n_devs + b;
                if (a == b) continue;
                /* a device and its own cores (core_devices): one memory, a free route */
                if (pl_cluster_same_silicon(c, a, b) && c->bw_Bps[k] == INFINITY &&
                    c->lat_s[k] == 0 && pl_cluster_xfer_s(c, a, b, 1e6) == 0)
                    continue;
                if (!(isfinite(c->bw_Bps[k]) && c->bw_Bps[k] > 0 && isfinite(c->lat_s[k]) &&
                      c->hops[k] >= 1 && isfinite(pl_cluster_xfer_s(c, a, b, 1e6))))
                    fail_msg("%s: route %s -> %s", c->path, c->devs[a].name, c->devs[b].name);
            }
        for (int d = 0; d < c->n_devs; d++)
            assert_true(c->devs[d].memory_bytes > 0 && c->devs[d].peak_flops_per_s[0] > 0);
        pl_cluster_free(c);
    }
    globfree(&g);

    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/autodeep-4xk80.json", &err);
    assert_non_null(c);
    assert_int_equal(c->n_devs, 5);
    assert_string_equal(c->devs[4].name, "gpu3");
    assert_string_equal(c->devs[4].model, "K80");
    assert_int_equal(c->hops[at(c, "gpu0", "gpu1")], 2); /* the board's own switch */
    assert_int_equal(c->hops[at(c, "gpu0", "gpu2")], 4); /* through the root complex */
    assert_close(c->usd_per_hour, 3.6, 1e-12);
    assert_string_equal(c->devs[c->io_device].name, "cpu0");
    pl_cluster_free(c);
}

static void test_load_file(void **state)
{
    (void)state;
    const char *path = tu_tmpfile(topology, strlen(topology), ".json");
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(path, &err);
    assert_non_null(c);
    assert_string_equal(c->path, path);
    assert_int_equal(strlen(c->sha256), 64);
    pl_cluster_free(c);
    remove(path);
    assert_null(pl_cluster_load("/nonexistent/c.json", &err));
    assert_contains(err.msg, "/nonexistent/c.json");
}

static void test_parse_embedded(void **state)
{
    (void)state;
    const char *text =
        "{\"configs\": [{\"name\": \"one\", \"devices\": [{\"name\": \"g\", "
        "\"model\": \"T4\"}]},\n"
        " {\"name\": \"two\", \"devices\": [{\"name\": \"g\", \"model\": \"T5\"}]}]}";
    pl_err err = {""};
    pl_json_doc *d = pl_json_parse(text, strlen(text), "cat.json", &err);
    assert_non_null(d);
    pl_json root = pl_json_root(d), configs;
    assert_int_equal(pl_json_array(&root, "configs", &configs, &err), 0);
    pl_json one = pl_json_index(&configs, 0), two = pl_json_index(&configs, 1);
    pl_cluster *c = pl_cluster_parse(&one, &err); /* no "format" needed inside a catalogue */
    assert_non_null(c);
    assert_string_equal(c->name, "one");
    assert_int_equal(c->n_devs, 1);
    pl_cluster_free(c);
    assert_null(pl_cluster_parse(&two, &err));
    assert_contains(err.msg, "cat.json: $.configs[1].devices[0].model: unknown model \"T5\"");
    assert_contains(err.msg, "\"T4\"");
    pl_json_close(d);
}

/* The first ```json block of docs/clusters.md loads, with the routes the text states. */
static void test_doc_example(void **state)
{
    (void)state;
    pl_err err = {""};
    size_t len;
    char *doc = pl_read_file("docs/clusters.md", &len, &err);
    if (!doc) fail_msg("%s", err.msg);
    char *start = strstr(doc, "```json\n");
    assert_non_null(start);
    start += 8;
    char *end = strstr(start, "```");
    assert_non_null(end);
    *end = 0;
    pl_cluster *c = load_text(start);
    size_t k = at(c, "gpu0", "gpu2");
    assert_int_equal(c->hops[k], 4);
    assert_close(c->bw_Bps[k], 12.5 * GBps, 1e-12);
    assert_close(c->lat_s[k], 10 * US, 1e-12);
    assert_int_equal(c->hops[at(c, "gpu0", "gpu1")], 1);
    assert_close(c->devs[pl_cluster_find(c, "gpu2")].memory_bytes, 32.0 * (1 << 30), 1e-12);
    pl_cluster_free(c);
    free(doc);
}

/* ---- refusals: each names the file, the JSON path and the problem ---- */

#define HEAD "{\"format\": \"placer-cluster/1\", "
#define TWO_GPUS                                                                                   \
    "\"devices\": [{\"name\": \"a\", \"model\": \"T4\"}, {\"name\": \"b\", \"model\": \"T4\"}]"
/* A link a → b with `bw` as its bandwidth text (a JSON value). */
#define LINK(bw)                                                                                   \
    ", \"links\": [{\"from\": \"a\", \"to\": \"b\", \"bandwidth_Bps\": " bw                        \
    ", \"both_ways\": true}]}"

static const struct {
    const char *text;
    const char *want[3];
} bad[] = {
    /* units and magnitudes */
    {HEAD TWO_GPUS LINK("\"25\""), {"bad.json: $.links[0].bandwidth_Bps: ", "unit"}},
    {HEAD TWO_GPUS LINK("25"), {"$.links[0].bandwidth_Bps: ", "unit mistake", "25 GB/s"}},
    {HEAD TWO_GPUS LINK("\"20 TB/s\""),
     {"$.links[0].bandwidth_Bps: ", "larger than", "unit mistake"}},
    {HEAD TWO_GPUS LINK("\"0 GB/s\""), {"$.links[0].bandwidth_Bps: ", "zero"}},
    {HEAD TWO_GPUS LINK("\"-5 GB/s\""), {"$.links[0].bandwidth_Bps: ", "negative"}},
    {HEAD TWO_GPUS LINK("\"25 GB\""), {"$.links[0].bandwidth_Bps: ", "size"}},
    {HEAD TWO_GPUS ", \"links\": [{\"from\": \"a\", \"to\": \"b\", \"bandwidth_Bps\": \"1 GB/s\", "
                   "\"latency\": \"5 us\"}]}",
     {"$.links[0].latency: ", "unknown field", "latency_s"}},
    {HEAD TWO_GPUS ", \"links\": [{\"from\": \"a\", \"to\": \"b\", \"bandwidth_Bps\": \"1 GB/s\", "
                   "\"latency_s\": 5}]}",
     {"$.links[0].latency_s: ", "5 s", "unit mistake"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"memory_bytes\": 16}]}",
     {"$.devices[0].memory_bytes: ", "unit mistake", "16 GiB"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"memory\": \"16 GiB\"}]}",
     {"$.devices[0].memory: ", "unknown field", "memory_bytes"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"mem_bandwidth_Bps\": \"300\"}]}",
     {"$.devices[0].mem_bandwidth_Bps: ", "unit"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"peak_flops_per_s\": {\"fp8\": "
          "\"1 TFLOP/s\"}}]}",
     {"$.devices[0].peak_flops_per_s.fp8: ", "unknown field"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"peak_flops_per_s\": {\"fp32\": "
          "\"8 GB/s\"}}]}",
     {"$.devices[0].peak_flops_per_s.fp32: ", "bandwidth"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"launch_overhead_s\": \"5\"}]}",
     {"$.devices[0].launch_overhead_s: ", "unit"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"stage_overhead_s\": \"15\"}]}",
     {"$.devices[0].stage_overhead_s: ", "unit"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"stage_overhead_s\": \"-1 "
          "us\"}]}",
     {"$.devices[0].stage_overhead_s: "}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"stage_copy_Bps\": \"9 "
          "B/s\"}]}",
     {"$.devices[0].stage_copy_Bps: ", "a stage copy bandwidth", "unit mistake"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"stage_copy_Bps\": \"2 "
          "ms\"}]}",
     {"$.devices[0].stage_copy_Bps: "}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"stage_tensor_s\": \"3\"}]}",
     {"bad.json: $.devices[0].stage_tensor_s: ", "unit"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"stage_tensor_s\": \"-3 "
          "us\"}]}",
     {"bad.json: $.devices[0].stage_tensor_s: ", "negative"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"stage_tensor_s\": \"3 "
          "min\"}]}",
     {"bad.json: $.devices[0].stage_tensor_s: ", "a stage's cost per tensor", "3 us"}},
    {HEAD "\"usd_per_hour\": \"3.06\", \"devices\": [{\"name\": \"a\", \"model\": \"T4\"}]}",
     {"bad.json: $.usd_per_hour: ", "unit"}},
    /* models and devices */
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"V100-SXM3\"}]}",
     {"$.devices[0].model: ", "unknown model \"V100-SXM3\"", "did you mean \"V100-SXM2-16GB\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"RTX-4080\"}]}",
     {"$.devices[0].model: ", "unknown model", "did you mean \"RTX-3090\", \"RTX-4090\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"zzzzzzzzzzzz\"}]}",
     {"$.devices[0].model: ", "built-in models are", "H100-SXM5-80GB"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"kind\": \"gpu\", \"memory_bytes\": \"8 GiB\"}]}",
     {"$.devices[0]: ", "needs a \"model\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"kind\": \"tpu\", \"model\": \"T4\"}]}",
     {"$.devices[0].kind: ", "unknown kind \"tpu\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\"}, {\"name\": \"a\", \"model\": "
          "\"P4\"}]}",
     {"$.devices[1].name: ", "device \"a\" is declared twice"}},
    {HEAD "\"devices\": [{\"name\": \"g\", \"count\": 2, \"model\": \"T4\"}, {\"name\": \"g1\", "
          "\"model\": \"P4\"}]}",
     {"$.devices[1].name: ", "\"g1\" is declared twice"}},
    {HEAD "\"devices\": [{\"name\": \"g\", \"count\": 0, \"model\": \"T4\"}]}",
     {"$.devices[0].count: ", "outside"}},
    {HEAD "\"devices\": [{\"name\": \"g\", \"count\": 1000, \"model\": \"T4\"}, "
          "{\"name\": \"h\", \"count\": 1000, \"model\": \"T4\"}]}",
     {"$.devices[1]: ", "more than 1024 devices"}},
    {HEAD "\"devices\": []}", {"$.devices: ", "at least one device"}},
    {HEAD "\"devices\": [{\"name\": \"\", \"model\": \"T4\"}]}", {"$.devices[0]: ", "empty"}},
    /* links, switches, routes */
    {HEAD TWO_GPUS
     ", \"links\": [{\"from\": \"a\", \"to\": \"bb\", \"bandwidth_Bps\": \"1 GB/s\"}]}",
     {"$.links[0].to: ", "unknown device or switch \"bb\"", "did you mean \"b\""}},
    {HEAD TWO_GPUS
     ", \"links\": [{\"from\": \"a\", \"to\": \"a\", \"bandwidth_Bps\": \"1 GB/s\"}]}",
     {"$.links[0]: ", "to itself"}},
    {HEAD TWO_GPUS
     ", \"links\": [{\"from\": \"a\", \"to\": \"b\", \"bandwidth_Bps\": \"1 GB/s\"}]}",
     {"bad.json: $: ", "no route from device \"b\" to device \"a\""}},
    {HEAD TWO_GPUS ", \"switches\": [\"s\"], \"topology_links\": [{\"a\": \"a\", \"b\": \"s\", "
                   "\"bandwidth_Bps\": \"1 GB/s\"}]}",
     {"bad.json: $: ", "no route from device \"a\" to device \"b\""}},
    {HEAD TWO_GPUS ", \"switches\": [\"b\"]}", {"$.switches[0]: ", "already the name of a device"}},
    {HEAD TWO_GPUS ", \"topology_links\": [{\"a\": \"a\", \"b\": \"b\", \"bandwidth_Bps\": "
                   "\"1 GB/s\"}], \"links\": [{\"from\": \"b\", \"to\": \"a\", \"bandwidth_Bps\": "
                   "\"1 GB/s\"}]}",
     {"$.topology_links[0]: ", "link from \"b\" to \"a\" is already given at $.links[0]"}},
    {HEAD TWO_GPUS ", \"topology_links\": [{\"a\": \"a\", \"b\": \"b\", \"bandwidth_Bps\": "
                   "\"1 GB/s\", \"both_ways\": true}]}",
     {"$.topology_links[0].both_ways: ", "unknown field"}},
    /* the matrix */
    {HEAD TWO_GPUS ", \"bandwidth_matrix\": {\"devices\": [\"a\", \"b\"], \"bandwidth_Bps\": "
                   "[[null, \"1 GB/s\"], [\"1 GB/s\"]]}}",
     {"$.bandwidth_matrix.bandwidth_Bps[1]: ", "1 entries"}},
    {HEAD TWO_GPUS ", \"bandwidth_matrix\": {\"devices\": [\"a\", \"b\"], \"bandwidth_Bps\": "
                   "[[\"1 GB/s\", \"1 GB/s\"], [\"1 GB/s\", null]]}}",
     {"$.bandwidth_matrix.bandwidth_Bps[0][0]: ", "diagonal"}},
    {HEAD TWO_GPUS ", \"bandwidth_matrix\": {\"devices\": [\"a\", \"b\"], \"bandwidth_Bps\": "
                   "[[null, \"44\"], [\"1 GB/s\", null]]}}",
     {"$.bandwidth_matrix.bandwidth_Bps[0][1]: ", "unit"}},
    {HEAD TWO_GPUS ", \"bandwidth_matrix\": {\"devices\": [\"a\", \"c\"], \"bandwidth_Bps\": "
                   "[[null, \"1 GB/s\"], [\"1 GB/s\", null]]}}",
     {"$.bandwidth_matrix.devices[1]: ", "unknown device \"c\""}},
    {HEAD TWO_GPUS ", \"bandwidth_matrix\": {\"devices\": [\"a\", \"b\"], \"bandwidth_Bps\": "
                   "[[null, \"1 GB/s\"], [\"1 GB/s\", null]]}, \"links\": [{\"from\": \"a\", "
                   "\"to\": \"b\", \"bandwidth_Bps\": \"1 GB/s\"}]}",
     {"$.bandwidth_matrix.bandwidth_Bps[0][1]: ", "already given at $.links[0]"}},
    {HEAD TWO_GPUS
     ", \"bandwidth_matrix\": {\"devices\": [\"a\", \"b\"], \"bandwidth_Bps\": "
     "[[null, \"1 GB/s\"], [\"1 GB/s\", null]], \"latency_s\": [[null, 5], [5, null]]}}",
     {"$.bandwidth_matrix.latency_s[0][1]: ", "unit mistake"}},
    /* the file */
    {"{\"format\": \"placer-taskgraph/1\", " TWO_GPUS "}", {"$.format: ", "placer-cluster/1"}},
    {"{" TWO_GPUS "}", {"bad.json: $: ", "\"format\" field is missing"}},
    {HEAD TWO_GPUS ", \"link\": []}", {"$.link: ", "unknown field", "links"}},
    {HEAD TWO_GPUS ", \"io_device\": \"c\"" LINK("\"1 GB/s\""),
     {"$.io_device: ", "unknown device \"c\""}},
    /* a shared memory bandwidth (docs/clusters.md): a host, at least the device's own, one
     * figure per host */
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host_mem_bandwidth_Bps\": "
          "\"400 GB/s\"}]}",
     {"bad.json: $.devices[0].host_mem_bandwidth_Bps: ", "device \"a\"", "no \"host\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_stall_Bps\": \"100 GB/s\"}]}",
     {"bad.json: $.devices[0].host_mem_stall_Bps: ", "device \"a\": a stall needs",
      "\"host_mem_bandwidth_Bps\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"host_mem_stall_Bps\": \"1 B/s\"}]}",
     {"bad.json: $.devices[0].host_mem_stall_Bps: ", "a stall rate"}},
    /* the cold figures (docs/simulator.md, "Cold requests"): beside a shared bandwidth, rate
     * and time constant together, the time share with them */
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_cold_read_Bps\": \"9 GB/s\", \"host_cold_tau_s\": \"40 ms\"}]}",
     {"bad.json: $.devices[0].host_cold_read_Bps: ", "a cold read rate needs",
      "\"host_mem_bandwidth_Bps\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"host_cold_read_Bps\": \"9 GB/s\"}]}",
     {"bad.json: $.devices[0].host_cold_read_Bps: ", "gives \"host_cold_read_Bps\" but not "
                                                     "\"host_cold_tau_s\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"host_cold_tau_s\": \"2 h\", "
          "\"host_cold_read_Bps\": \"9 GB/s\"}]}",
     {"bad.json: $.devices[0].host_cold_tau_s: ", "a cold time constant"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"host_cold_time_share\": 0.3}]}",
     {"bad.json: $.devices[0].host_cold_time_share: ", "needs \"host_cold_read_Bps\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"host_cold_read_Bps\": \"9 GB/s\", "
          "\"host_cold_tau_s\": \"40 ms\", \"host_cold_time_share\": -1}]}",
     {"bad.json: $.devices[0].host_cold_time_share: ", "outside [0, 10]"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"host_cold_keep_bytes\": \"32 MiB\"}]}",
     {"bad.json: $.devices[0].host_cold_keep_bytes: ", "needs \"host_cold_read_Bps\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"host_cold_read_Bps\": \"9 GB/s\", "
          "\"host_cold_tau_s\": \"40 ms\", \"host_cold_keep_bytes\": \"12 B\"}]}",
     {"bad.json: $.devices[0].host_cold_keep_bytes: ", "a cold cache"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"100 GB/s\"}]}",
     {"bad.json: $.devices[0].host_mem_bandwidth_Bps: ",
      "device \"a\": 100 GB/s is below its "
      "own mem_bandwidth_Bps (320 GB/s)",
      "at least what one device draws alone"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\"}, {\"name\": \"b\", \"model\": \"T4\", "
          "\"host\": \"h\", \"host_mem_bandwidth_Bps\": \"500 GB/s\"}]" LINK("\"1 GB/s\""),
     {"bad.json: $.devices[1].host_mem_bandwidth_Bps: ",
      "device \"b\" gives 500 GB/s, device \"a\" 400 GB/s", "host \"h\" share one memory"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": 400}]}",
     {"$.devices[0].host_mem_bandwidth_Bps: ", "unit"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"private_cache_bytes\": "
          "\"1 MiB\"}]}",
     {"bad.json: $.devices[0].private_cache_bytes: ", "needs \"host_mem_bandwidth_Bps\""}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"host\": \"h\", "
          "\"host_mem_bandwidth_Bps\": \"400 GB/s\", \"private_cache_bytes\": \"1 B\"}]}",
     {"$.devices[0].private_cache_bytes: ", "a private cache"}},
    {HEAD TWO_GPUS ", \"links\": [{\"from\": \"a\", \"to\": \"b\", \"bandwidth_Bps\": \"1 GB/s\"",
     {"bad.json: line "}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"gemm_tile_columns\": 16}]}",
     {"bad.json: $.devices[0].gemm_tile_columns: ", "CPU device only"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"kind\": \"cpu\", \"memory_bytes\": \"8 GiB\", "
          "\"peak_flops_per_s\": \"100 GFLOP/s\", \"mem_bandwidth_Bps\": \"74 GB/s\", "
          "\"gemm_tile_columns\": 0}]}",
     {"bad.json: $.devices[0].gemm_tile_columns: ", "outside 1..1024"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"kind\": \"cpu\", \"memory_bytes\": \"8 GiB\", "
          "\"peak_flops_per_s\": \"100 GFLOP/s\", \"mem_bandwidth_Bps\": \"74 GB/s\", "
          "\"gemm_tile_columns\": \"16\"}]}",
     {"bad.json: $.devices[0].gemm_tile_columns: "}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"model\": \"T4\", \"reread_Bps\": \"25 GB/s\"}]}",
     {"bad.json: $.devices[0].reread_Bps: ", "CPU device only"}},
    {HEAD "\"devices\": [{\"name\": \"a\", \"kind\": \"cpu\", \"memory_bytes\": \"8 GiB\", "
          "\"peak_flops_per_s\": \"100 GFLOP/s\", \"mem_bandwidth_Bps\": \"74 GB/s\", "
          "\"reread_Bps\": \"0 GB/s\"}]}",
     {"bad.json: $.devices[0].reread_Bps: ", "a re-read rate"}},
};

static void test_bad_inputs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *m = load_fails(bad[i].text);
        if (getenv("SHOW_ERRORS")) printf("%s\n", m);
        for (int k = 0; k < 3 && bad[i].want[k]; k++)
            if (!strstr(m, bad[i].want[k]))
                fail_msg("case %zu: \"%s\" lacks \"%s\"", i, m, bad[i].want[k]);
    }
}

/* ---- one view of two (pl_cluster_drop_devices) ---- */

/* A chain a - b - c (a-b 10 GB/s and 1 us, b-c 5 GB/s and 2 us), c the io device. Leaving out
 * c or every device is refused and changes nothing. Without b, a still reaches c by the route
 * that ran through b (its slowest hop 5 GB/s, 1 + 2 = 3 us, 2 hops), and c, now device 1, is
 * still the io device. */
static void test_drop_devices(void **state)
{
    (void)state;
    pl_cluster *c = pl_cluster_new("chain");
    pl_cluster_add_device(c, "a", PL_DEV_CPU, "cpu-generic");
    pl_cluster_add_device(c, "b", PL_DEV_CPU, "cpu-generic");
    pl_cluster_add_device(c, "c", PL_DEV_CPU, "cpu-generic");
    pl_cluster_set_link(c, 0, 1, 10 * GBps, 1 * US, true);
    pl_cluster_set_link(c, 1, 2, 5 * GBps, 2 * US, true);
    c->io_device = 2;
    pl_err err = {""};
    assert_int_equal(pl_cluster_finalize(c, &err), 0);
    const bool io[3] = {false, false, true}, all[3] = {true, true, true}, b[3] = {false, true};
    assert_int_equal(pl_cluster_drop_devices(c, io, &err), -1);
    assert_contains(err.msg, "chain: leaving out devices: device 'c' holds the graph's inputs "
                             "and outputs (io_device), it cannot be left out");
    assert_int_equal(pl_cluster_drop_devices(c, all, &err), -1);
    assert_contains(err.msg, "chain: leaving out devices: none would be left");
    assert_int_equal(c->n_devs, 3);
    assert_int_equal(c->io_device, 2);
    assert_int_equal(pl_cluster_drop_devices(c, b, &err), 1);
    assert_int_equal(c->n_devs, 2);
    assert_string_equal(c->devs[0].name, "a");
    assert_string_equal(c->devs[1].name, "c");
    assert_int_equal(c->io_device, 1);
    for (int k = 0; k < 2; k++) { /* a -> c and c -> a */
        size_t r = k ? at(c, "c", "a") : at(c, "a", "c");
        assert_int_equal(c->hops[r], 2);
        assert_close(c->bw_Bps[r], 5 * GBps, 1e-12);
        assert_close(c->lat_s[r], 3 * US, 1e-12);
    }
    assert_true(isinf(c->bw_Bps[at(c, "c", "c")]) && c->lat_s[at(c, "c", "c")] == 0);
    pl_cluster_free(c);
}

/* The devices of c that have core_devices, as pl_cluster_drop_devices takes them. */
static void wholes(const pl_cluster *c, bool *drop)
{
    for (int d = 0; d < c->n_devs; d++)
        drop[d] = c->devs[d].n_core_devs > 0;
}

/* local-cpu.json without its whole CPU is local-cpu-percore.json: the same devices in the same
 * order with the same figures and routes, none with cores listed. Without cpu1 instead, 'cpu'
 * lists cpu0 alone, at its new index. */
static void test_drop_whole_cpu(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu.json", &err);
    pl_cluster *p = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    if (!c || !p) fail_msg("%s", err.msg);
    bool drop[8];
    assert_int_equal(c->n_devs, 3);
    wholes(c, drop);
    assert_int_equal(pl_cluster_drop_devices(c, drop, &err), 1);
    assert_int_equal(c->n_devs, p->n_devs);
    assert_int_equal(c->io_device, p->io_device);
    for (int d = 0; d < p->n_devs; d++) {
        const pl_device *x = &c->devs[d], *y = &p->devs[d];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->n_core_devs, 0);
        assert_null(x->core_devs);
        assert_true(x->peak_flops_per_s[PL_PREC_FP32] == y->peak_flops_per_s[PL_PREC_FP32] &&
                    x->mem_bandwidth_Bps == y->mem_bandwidth_Bps &&
                    x->host_mem_bandwidth_Bps == y->host_mem_bandwidth_Bps &&
                    x->host_mem_stall_Bps == y->host_mem_stall_Bps &&
                    x->host_cold_read_Bps == y->host_cold_read_Bps &&
                    x->private_cache_bytes == y->private_cache_bytes &&
                    x->stage_overhead_s == y->stage_overhead_s && x->cores == y->cores);
        for (int e = 0; e < p->n_devs; e++) {
            size_t k = (size_t)d * p->n_devs + e;
            assert_true(c->bw_Bps[k] == p->bw_Bps[k] && c->lat_s[k] == p->lat_s[k] &&
                        c->hops[k] == p->hops[k]);
        }
    }
    pl_cluster_free(c);
    pl_cluster_free(p);
    c = pl_cluster_load("examples/clusters/local-cpu.json", &err);
    for (int d = 0; d < c->n_devs; d++)
        drop[d] = !strcmp(c->devs[d].name, "cpu1");
    assert_int_equal(pl_cluster_drop_devices(c, drop, &err), 1);
    int whole = pl_cluster_find(c, "cpu"), cpu0 = pl_cluster_find(c, "cpu0");
    assert_int_equal(whole, 1);
    assert_int_equal(c->devs[whole].n_core_devs, 1);
    assert_int_equal(c->devs[whole].core_devs[0], cpu0);
    assert_true(pl_cluster_same_silicon(c, whole, cpu0));
    pl_cluster_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),           cmocka_unit_test(test_spec_table),
        cmocka_unit_test(test_build_routes),    cmocka_unit_test(test_build_widest_tie),
        cmocka_unit_test(test_build_no_route),  cmocka_unit_test(test_build_many_devices),
        cmocka_unit_test(test_topology_routes), cmocka_unit_test(test_inheritance),
        cmocka_unit_test(test_moirai_tables),   cmocka_unit_test(test_examples_load),
        cmocka_unit_test(test_load_file),       cmocka_unit_test(test_parse_embedded),
        cmocka_unit_test(test_doc_example),     cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_shared_memory),   cmocka_unit_test(test_drop_devices),
        cmocka_unit_test(test_drop_whole_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
