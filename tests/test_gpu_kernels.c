/* test_gpu_kernels.c: the GPU kernel rules (docs/cost.md, "GPU kernels"), each on a layer
 * computed by hand with fixed parameters (every efficiency 0.5, 10 us per kernel, no size term
 * unless said) on a V100-SXM2 (80 SMs, 15.7 TFLOP/s fp32, 900 GB/s): a 3x3 Conv by Winograd, a
 * GEMM's waves, a thin GEMM, a batch norm with the size term, a backward op priced by its
 * forward op's kernel; the error bands; the published-timings file's refusals; a GPU model's
 * profile fitted by `placer calibrate`. */
#include "testutil.h"

#include "placer/calib.h"
#include "placer/cost.h"

#include <jansson.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER_SM_HALF (15.7e12 / 80 * 0.5) /* one SM's fp32 rate at efficiency 0.5 */
#define BW_HALF (900e9 * 0.5)

static pl_gpu_params half(void)
{
    return (pl_gpu_params){.on = true,
                           .eff_gemm = 0.5,
                           .eff_conv = 0.5,
                           .eff_tensor = 0.5,
                           .eff_winograd = 0.5,
                           .eff_mem = 0.5,
                           .mem_half_bytes = 0,
                           .kernel_s = 10e-6};
}

static void finish(pl_graph *g)
{
    pl_err err = {""};
    if (pl_graph_finalize(g, g->name, &err) < 0 || pl_graph_infer(g, &err) < 0)
        fail_msg("%s", err.msg);
}
static pl_device v100(void)
{
    const pl_gpu_spec *s = pl_gpu_spec_find("V100-SXM2-16GB");
    pl_device d = {.name = "gpu0", .kind = PL_DEV_GPU, .model = (char *)s->model};
    memcpy(d.peak_flops_per_s, s->peak_flops_per_s, sizeof d.peak_flops_per_s);
    d.mem_bandwidth_Bps = s->mem_bandwidth_Bps;
    d.launch_overhead_s = s->launch_overhead_s;
    assert_int_equal(s->sms, 80);
    return d;
}

/* Winograd F(4x4, 3x3) on 1 x 64 x 56 x 56: 14 x 14 = 196 tiles, 36 GEMMs [196 x 64] x [64 x 64].
 * Tiles 128x64 (0.9): 36 x 2 x 1 = 72 in one wave of 80 SMs, each 2·128·64·64 FLOPs at
 * 0.9 · 98.125 GFLOP/s = 11.873 us (128x128: 21.372; 64x64: 2 waves of 7.124; 64x32: 4 of
 * 4.453; 32x32: 7 of 2.968); K = 64 is too short to split. The transforms move 4 bytes x
 * (X 200,704 + 2·36·196·64 in + 2·36·196·64 out + Y 200,704) = 8,830,976 B at 450 GB/s =
 * 19.624 us. Winograd: 31.497 us. The implicit GEMM [3136 x 576] x [576 x 64]: best 40.074 us
 * (128x64 or 64x64 tiles, K split 8: 200 / 392 tiles in 3 / 5 waves). So Winograd, and the
 * op takes 10 + 31.497 us (its own 1.75 MB at 450 GB/s, 3.9 us, is less). */
static void test_conv_winograd(void **state)
{
    (void)state;
    pl_graph *g = tu_conv_graph(1, PL_DT_FLOAT);
    pl_device d = v100();
    pl_gpu_params gp = half();
    double wino = 2.0 * 128 * 64 * 64 / (PER_SM_HALF * 0.9) + 4.0 * 2207744 / BW_HALF;
    double gemm = 3 * 2.0 * 128 * 64 * 72 / (PER_SM_HALF * 0.9);
    assert_close(pl_gpu_gemm_s(1, 3136, 64, 576, 15.7e12, 80, 0.5), gemm, 1e-12);
    assert_close(gemm, 40.074e-6, 1e-4);
    const char *algo;
    double t = pl_gpu_op_s(&g->ops[0], g, &d, 80, &gp, &algo);
    assert_string_equal(algo, "winograd");
    assert_close(t, 10e-6 + wino, 1e-12);
    assert_close(t, 41.497e-6, 1e-4);
    /* the roofline priced it by its direct FLOPs: 231 MFLOP at 0.6 of 15.7 TFLOP/s + 5 us */
    pl_cost_params p;
    pl_cost_params_default(&p);
    p.gpu.on = false;
    assert_close(pl_cost_estimate(&g->ops[0], g, &d, &p), 5e-6 + 231211008.0 / 9.42e12, 1e-12);
    pl_graph_free(g);
}

/* Waves: [10240 x 64] x [64 x 128] is 80 tiles of 128x128, one wave: 2·128·128·64 FLOPs at
 * 98.125 GFLOP/s = 21.372 us. One more tile row (10368) makes 81 tiles: two waves of 128x128
 * (42.74 us) or the best smaller tiles, 162 of 128x64 in 3 waves of 11.873 = 35.62 us: 1.25 %
 * more work, 67 % more time. */
static void test_gemm_waves(void **state)
{
    (void)state;
    double one = 2.0 * 128 * 128 * 64 / PER_SM_HALF;
    assert_close(pl_gpu_gemm_s(1, 10240, 128, 64, 15.7e12, 80, 0.5), one, 1e-12);
    assert_close(one, 21.372e-6, 1e-4);
    double more = 3 * 2.0 * 128 * 64 * 64 / (PER_SM_HALF * 0.9);
    assert_close(pl_gpu_gemm_s(1, 10368, 128, 64, 15.7e12, 80, 0.5), more, 1e-12);
    assert_close(more, 35.62e-6, 1e-3);
    /* no SM count: no quantisation, the work at the rate */
    assert_close(pl_gpu_gemm_s(1, 10368, 128, 64, 15.7e12, 0, 0.5),
                 2.0 * 10368 * 128 * 64 / (15.7e12 * 0.5), 1e-12);
}

/* A thin GEMM: [1 x 1024] x [1024 x 4096] (a batch-1 linear layer) is a GEMV: 8.4 MFLOP at
 * 7.85 TFLOP/s = 1.07 us, while streaming the 16.8 MB matrix (A 4,096 + W 16,777,216 + Y
 * 16,384 bytes) at 450 GB/s takes 37.328 us: 10 + 37.328 us. A tiled kernel would pad M to 32
 * rows and take 77 us. */
static void test_thin_gemm(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("gemv");
    int a = pl_graph_tensor(g, "A"), w = pl_graph_tensor(g, "W"), y = pl_graph_tensor(g, "Y");
    pl_tensor_set_shape(&g->tensors[a], PL_DT_FLOAT, 2, (int64_t[]){1, 1024});
    pl_tensor_set_shape(&g->tensors[w], PL_DT_FLOAT, 2, (int64_t[]){1024, 4096});
    g->tensors[w].flags |= PL_TENSOR_WEIGHT;
    pl_graph_add_input(g, a);
    int op = pl_graph_add_op(g, "mm", "MatMul", "");
    pl_op_add_input(g, op, a);
    pl_op_add_input(g, op, w);
    pl_op_add_output(g, op, y);
    pl_graph_add_output(g, y);
    finish(g);
    assert_close(g->ops[0].bytes_moved, 16797696.0, 1e-12);
    pl_device d = v100();
    pl_gpu_params gp = half();
    const char *algo;
    double t = pl_gpu_op_s(&g->ops[0], g, &d, 80, &gp, &algo);
    assert_string_equal(algo, "gemm");
    assert_close(pl_gpu_gemm_s(1, 1, 4096, 1024, 15.7e12, 80, 0.5), 8388608.0 / 7.85e12, 1e-12);
    assert_close(t, 10e-6 + 16797696.0 / BW_HALF, 1e-12);
    assert_close(t, 47.328e-6, 1e-4);
    pl_graph_free(g);
}

/* A batch norm on 32 x 64 x 56 x 56 fp32 (25.7 MB in, 25.7 MB out, 4 x 256 B of parameters:
 * 51,381,248 B) is memory-bound; with the size term at 4 MB the bandwidth reached is
 * 0.5 · b / (b + 4e6) of 900 GB/s: (b + 4e6) / 450 GB/s = 123.07 us, 7.8 % more than
 * without the term: 10 + 123.07 us. The same kernel on 1 x 16 x 32 x 32 (131,328 B) is priced
 * by the size term more than by its bytes: 10 + 9.18 us. */
static void test_batchnorm_size(void **state)
{
    (void)state;
    int64_t shapes[2][4] = {{32, 64, 56, 56}, {1, 16, 32, 32}};
    double want[2] = {10e-6 + 51381248.0 * (51381248.0 + 4e6) / 51381248.0 / BW_HALF, 0};
    for (int k = 0; k < 2; k++) {
        pl_graph *g = pl_graph_new("bn");
        int x = pl_graph_tensor(g, "X"), y = pl_graph_tensor(g, "Y");
        pl_tensor_set_shape(&g->tensors[x], PL_DT_FLOAT, 4, shapes[k]);
        pl_graph_add_input(g, x);
        int op = pl_graph_add_op(g, "bn", "BatchNormalization", "");
        pl_op_add_input(g, op, x);
        const char *pn[] = {"scale", "bias", "mean", "var"};
        for (int i = 0; i < 4; i++) {
            int t = pl_graph_tensor(g, pn[i]);
            pl_tensor_set_shape(&g->tensors[t], PL_DT_FLOAT, 1, &shapes[k][1]);
            g->tensors[t].flags |= PL_TENSOR_WEIGHT;
            pl_op_add_input(g, op, t);
        }
        pl_op_add_output(g, op, y);
        pl_graph_add_output(g, y);
        finish(g);
        double b = g->ops[0].bytes_moved;
        assert_close(b, k == 0 ? 51381248.0 : 2 * 65536.0 + 4 * 64, 1e-12);
        assert_int_equal(g->ops[0].cls, PL_CLASS_ELEMENTWISE);
        pl_device d = v100();
        pl_gpu_params gp = half();
        gp.mem_half_bytes = 4e6;
        if (k == 1) want[1] = 10e-6 + (b + 4e6) / BW_HALF;
        assert_close(pl_gpu_op_s(&g->ops[0], g, &d, 80, &gp, NULL), want[k], 1e-12);
        pl_graph_free(g);
    }
    assert_close(want[0], 133.07e-6, 1e-4);
    assert_close(want[1], 19.18e-6, 1e-3);
}

/* A backward op names its forward op (kernel_of): with twice the Conv's FLOPs it runs the
 * Conv's algorithm, Winograd, for twice its compute time; memory as its own bytes. */
static void test_backward_like_forward(void **state)
{
    (void)state;
    pl_graph *g = tu_conv_graph(1, PL_DT_FLOAT);
    int dy = pl_graph_tensor(g, "dY"), dx = pl_graph_tensor(g, "dX");
    pl_tensor_set_shape(&g->tensors[dy], PL_DT_FLOAT, 4, (int64_t[]){1, 64, 56, 56});
    int op = pl_graph_add_op(g, "conv:grad_in", "ConvGrad", "");
    pl_op_add_input(g, op, dy);
    pl_op_add_input(g, op, pl_graph_find_tensor(g, "W"));
    pl_op_add_output(g, op, dx);
    pl_tensor_set_shape(&g->tensors[dx], PL_DT_FLOAT, 4, (int64_t[]){1, 64, 56, 56});
    g->ops[op].kernel_of = 0;
    g->ops[op].flops = 2 * g->ops[0].flops;
    g->ops[op].bytes_moved = g->ops[0].bytes_moved;
    g->ops[op].cls = PL_CLASS_DENSE;
    pl_device d = v100();
    pl_gpu_params gp = half();
    const char *algo;
    double fwd = pl_gpu_op_s(&g->ops[0], g, &d, 80, &gp, NULL);
    double bwd = pl_gpu_op_s(&g->ops[op], g, &d, 80, &gp, &algo);
    assert_string_equal(algo, "winograd");
    assert_close(bwd - 10e-6, 2 * (fwd - 10e-6), 1e-12);
    pl_graph_free(g);
}

/* Each cell's band follows its basis: a GPU estimate the kernel rules' band, a CPU estimate
 * the CPU band, a given time 0; a plan's band is the widest of its ops'. */
static void test_bands(void **state)
{
    (void)state;
    pl_graph *g = tu_conv_graph(1, PL_DT_FLOAT);
    pl_cluster *c = pl_cluster_new("c");
    pl_cluster_add_device(c, "gpu0", PL_DEV_GPU, "V100");
    pl_cluster_add_device(c, "cpu0", PL_DEV_CPU, "cpu-generic");
    pl_cluster_set_link(c, 0, 1, 10e9, 1e-6, true);
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("%s", err.msg);
    pl_cost_params p;
    pl_cost_params_default(&p);
    p.gpu.band = 0.3, p.cpu_band = 0.25;
    pl_cost *k = pl_cost_new(g, c, &p, NULL, 0, &err);
    if (!k) fail_msg("%s", err.msg);
    assert_int_equal(k->basis[0], PL_BASIS_GPU_FIT);
    assert_int_equal(k->basis[1], PL_BASIS_CPU);
    assert_close(pl_cost_op_band(k, 0, 0), 0.3, 1e-15);
    assert_close(pl_cost_op_band(k, 0, 1), 0.25, 1e-15);
    pl_cost_basis b;
    assert_close(pl_cost_plan_band(k, (int[]){1}, &b), 0.25, 1e-15);
    assert_int_equal(b, PL_BASIS_CPU);
    assert_string_equal(pl_cost_basis_name(b), "cpu");
    pl_cost_free(k);
    /* the rules off: the roofline on the GPU, at the default band */
    p.gpu.on = false;
    p.cpu_band = PL_BAND_DEFAULT;
    if (!(k = pl_cost_new(g, c, &p, NULL, 0, &err))) fail_msg("%s", err.msg);
    assert_int_equal(k->basis[0], PL_BASIS_DEFAULT);
    assert_close(pl_cost_plan_band(k, (int[]){0}, NULL), PL_BAND_DEFAULT, 1e-15);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The data file: a figure without a source, with an unknown source or GPU, or an impossible
 * time is refused, naming the place. */
static void test_published_refusals(void **state)
{
    (void)state;
    const char *head = "{\"format\": \"placer-gpu-published/1\", \"sources\": [{\"id\": \"s\", "
                       "\"url\": \"u\", \"date\": \"2020\", \"software\": \"x\"}], \"figures\": [";
    const char *figs[][2] = {
        {"{\"gpu\": \"V100\", \"network\": \"resnet50\", \"mode\": \"forward\", \"batch\": 1, "
         "\"precision\": \"fp32\", \"ms\": 1, \"quote\": \"q\"}",
         "figures[0]: a figure without a source"},
        {"{\"source\": \"t\", \"gpu\": \"V100\", \"network\": \"resnet50\", \"mode\": "
         "\"forward\", \"batch\": 1, \"precision\": \"fp32\", \"ms\": 1, \"quote\": \"q\"}",
         "no source has id 't'"},
        {"{\"source\": \"s\", \"gpu\": \"GTX-9090\", \"network\": \"resnet50\", \"mode\": "
         "\"forward\", \"batch\": 1, \"precision\": \"fp32\", \"ms\": 1, \"quote\": \"q\"}",
         "'GTX-9090' is no GPU of placer's table"},
        {"{\"source\": \"s\", \"gpu\": \"V100\", \"network\": \"resnet50\", \"mode\": "
         "\"forward\", \"batch\": 1, \"precision\": \"fp32\", \"ms\": -1, \"quote\": \"q\"}",
         "figures[0].ms: a time must be in (0, 1 h)"},
        {"{\"source\": \"s\", \"gpu\": \"V100\", \"network\": \"resnet50\", \"mode\": "
         "\"backward\", \"batch\": 1, \"precision\": \"fp32\", \"ms\": 1, \"quote\": \"q\"}",
         "mode is \"forward\" or \"training\""},
    };
    for (size_t i = 0; i < sizeof figs / sizeof *figs; i++) {
        char text[2048];
        snprintf(text, sizeof text, "%s%s]}", head, figs[i][0]);
        pl_published p;
        pl_err err = {""};
        assert_int_equal(pl_published_load(tu_tmpfile(text, strlen(text), ".json"), &p, &err), -1);
        assert_contains(err.msg, figs[i][1]);
        assert_null(p.fig);
    }
    /* the repository's file loads, and every figure names a source */
    pl_published p;
    pl_err err = {""};
    if (pl_published_load("bench/gpu-published.json", &p, &err) < 0) fail_msg("%s", err.msg);
    assert_true(p.n >= 100 && p.n_sources >= 3);
    int held = 0;
    for (int i = 0; i < p.n; i++)
        held += p.fig[i].held_out;
    assert_true(held > 0 && held < p.n);
    pl_published_free(&p);
}

/* A GPU model's own profile fits its kernel rules: a profile of mobilenet_v3_large made with
 * known parameters (eff_conv 0.3, eff_mem 0.4, 20 us per kernel) on a T4 is fitted by
 * `placer calibrate` into a "gpu" object for device model T4; loaded, it prices the T4 (basis
 * gpu-model) within 3 % of the profile over the model, and the V100 beside it still by the
 * published fit. */
static void test_calibrate_gpu_profile(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = pl_graph_load("models/mobilenet_v3_large.onnx", NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    const char *cl =
        "{\"format\": \"placer-cluster/1\", \"name\": \"t4v100\", \"devices\": ["
        "{\"name\": \"gpu0\", \"model\": \"T4\"}, {\"name\": \"gpu1\", "
        "\"model\": \"V100\"}], \"links\": [{\"from\": \"gpu0\", \"to\": \"gpu1\", "
        "\"bandwidth_Bps\": \"10 GB/s\", \"latency_s\": \"1 us\", \"both_ways\": true}]}";
    char *cpath = strdup(tu_tmpfile(cl, strlen(cl), ".json")); /* the next call reuses it */
    pl_cluster *c = pl_cluster_load(cpath, &err);
    if (!c) fail_msg("%s", err.msg);
    pl_gpu_params truth = half();
    truth.eff_conv = 0.3, truth.eff_mem = 0.4, truth.kernel_s = 20e-6;
    json_t *times = json_object();
    double sum = 0;
    for (int op = 0; op < g->n_ops; op++) {
        double t = pl_gpu_op_s(&g->ops[op], g, &c->devs[0], 40, &truth, NULL);
        if (t <= 0 || !pl_gpu_has_shapes(&g->ops[op], g)) continue;
        json_object_set_new(times, g->ops[op].name, json_real(t));
        sum += t;
    }
    json_t *prof = json_pack("{s:s, s:s, s:o}", "format", "placer-profile/1", "device_model", "T4",
                             "times_s", times);
    char *text = json_dumps(prof, 0);
    const char *ppath = tu_tmpfile(text, strlen(text), ".json");
    free(text), json_decref(prof);
    char out[512], cmd[2048];
    snprintf(out, sizeof out, "%s.params.json", ppath);
    snprintf(cmd, sizeof cmd,
             "calibrate %s --model models/mobilenet_v3_large.onnx --cluster %s --device gpu0 -o %s "
             "2>&1",
             ppath, cpath, out);
    char *log;
    if (tu_run(cmd, &log) != 0) fail_msg("placer %s:\n%s", cmd, log);
    free(log);
    pl_cost_params p;
    if (pl_cost_params_load(out, &p, &err) < 0) fail_msg("%s", err.msg);
    assert_string_equal(p.gpu_model.device_model, "T4");
    assert_true(p.gpu.device_model[0] == 0 && p.gpu.on);
    p.runtime_fusion = PL_FUSION_NONE;
    pl_cost *k = pl_cost_new(g, c, &p, NULL, 0, &err);
    if (!k) fail_msg("%s", err.msg);
    double est = 0;
    for (int op = 0; op < g->n_ops; op++)
        if (k->basis[(size_t)op * 2] == PL_BASIS_GPU_MODEL) est += pl_cost_op_s(k, op, 0);
    assert_close(est, sum, 0.03);
    assert_int_equal(k->basis[1], PL_BASIS_GPU_FIT); /* op 0 on the V100 */
    assert_true(pl_cost_op_band(k, 0, 0) >= PL_BAND_PROFILED);
    pl_cost_free(k);
    remove(out);
    free(cpath);
    pl_cluster_free(c);
    pl_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_winograd),
        cmocka_unit_test(test_gemm_waves),
        cmocka_unit_test(test_thin_gemm),
        cmocka_unit_test(test_batchnorm_size),
        cmocka_unit_test(test_backward_like_forward),
        cmocka_unit_test(test_bands),
        cmocka_unit_test(test_published_refusals),
        cmocka_unit_test(test_calibrate_gpu_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
