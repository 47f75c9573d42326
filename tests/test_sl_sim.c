/* test_sl_sim.c: a serverless plan as a plan of the one simulator (docs/serverless.md, "One
 * simulator"): the simulated latency of a slice chain is the hand-computed sum and the plan's
 * latency_s; every algorithm's plan of zoo models simulates to its latency; the checker refuses
 * broken plans by name; `placer serverless --trace FILE` draws the plan, one track per function. */
#include "testutil.h"

#include "placer/serverless.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A platform worked by hand: 128-10240 MB in 1 MB steps, one vCPU per 1024 MB (below it a share
 * of one), 1e-5 USD per GB-s, 1 ms billing, a 100 MB runtime, each vCPU beyond the first adding
 * half of one; a store at 1 GB/s and 1 ms per write or read; a vCPU with 10 GB/s of memory. */
static pl_platform *platform(void)
{
    pl_platform *p = calloc(1, sizeof *p);
    p->name = strdup("hand"), p->path = strdup("");
    p->mem_min_mb = 128, p->mem_max_mb = 10240, p->mem_step_mb = 1, p->mb_per_vcpu = 1024;
    p->usd_per_gb_s = 1e-5, p->billing_s = 1e-3, p->runtime_base_mb = 100, p->parallel_eff = 0.5;
    p->store = (pl_transport){.present = true, .bandwidth_Bps = 1e9, .latency_s = 1e-3};
    pl_err err = {""};
    p->vcpu = pl_cluster_new("vcpu");
    pl_cluster_add_device(p->vcpu, "vcpu", PL_DEV_CPU, "test");
    p->vcpu->devs[0].mem_bandwidth_Bps = 1e10;
    if (pl_cluster_finalize(p->vcpu, &err) < 0) fail_msg("%s", err.msg);
    return p;
}

static void tensor(pl_sl_graph *sg, int t, int from, double bytes, int n, const int *to)
{
    sg->tensors[t] = (pl_sl_tensor){bytes, from, malloc((size_t)n * sizeof(int)), n};
    memcpy(sg->tensors[t].to, to, (size_t)n * sizeof(int));
}

/* Four layers: L0 0.2 s, 100 MB of activations; L1 0.4 s (0.3 of it dominant), 2000 MB of
 * weights, 200 MB of activations, writing 1e8 bytes; L2 0.1 s, 50 MB; L3 0.05 s, 20 MB.
 * Tensors: T0 2 MB from L0 to L1 and L3 (two functions read it), T1 1 MB L1 -> L2, T2 0.5 MB
 * L2 -> L3. */
static pl_sl_graph *hand_graph(void)
{
    pl_sl_graph *sg = pl_sl_new(4, 3);
    sg->layers[0] = (pl_sl_layer){.t1_s = 0.2, .mem_mb = 100};
    sg->layers[1] = (pl_sl_layer){
        .t1_s = 0.4, .par_s = 0.3, .mem_mb = 200, .weight_mb = 2000, .out_bytes = 1e8};
    sg->layers[2] = (pl_sl_layer){.t1_s = 0.1, .mem_mb = 50};
    sg->layers[3] = (pl_sl_layer){.t1_s = 0.05, .mem_mb = 20};
    tensor(sg, 0, 0, 2e6, 2, (int[]){1, 3});
    tensor(sg, 1, 1, 1e6, 1, (int[]){2});
    tensor(sg, 2, 2, 5e5, 1, (int[]){3});
    return sg;
}

/* Slices [0], [1, 2], [3], worked by hand:
 *   fn0: 100 + 100 = 200 MB, 200/1024 of a vCPU: 0.2 / 0.1953125 = 1.024 s; writes T0 (1 ms +
 *        2 MB / 1 GB/s = 3 ms): 1.027 s.
 *   fn1: 100 + 2000 + 200 = 2300 MB, 2.25 vCPUs, so η = 2: 0.1 + 0.3 / 1.5 + (1 - 1/2) x 1e8 B /
 *        1e10 B/s = 0.405 s; reads T0 (3 ms), writes T2 (1.5 ms): 0.4095 s (T1 stays inside).
 *   fn2: 100 + 20 = 120, so 128 MB, 1/8 of a vCPU: 0.05 x 8 = 0.4 s; reads T0 (3 ms) and T2
 *        (1.5 ms): 0.4045 s.
 * Latency 1.027 + 0.4095 + 0.4045 = 1.841 s. T0 is written once and read twice. */
typedef struct hand {
    pl_platform *pf;
    pl_sl_graph *sg;
    pl_sl_opts o;
    pl_sl_plan p;
} hand;

static void hand_begin(hand *h)
{
    h->pf = platform(), h->sg = hand_graph(), h->o = (pl_sl_opts){.codec_cost = {1, 0, 0}};
    assert_int_equal(pl_sl_price(h->sg, h->pf, &h->o, (int[]){0, 2, 3}, NULL, 3, &h->p), 0);
}

static void hand_end(hand *h)
{
    pl_sl_plan_free(&h->p);
    pl_sl_free(h->sg);
    pl_platform_free(h->pf);
}

static void test_hand_worked_chain(void **state)
{
    (void)state;
    hand h;
    hand_begin(&h);
    pl_platform *pf = h.pf;
    pl_sl_graph *sg = h.sg;
    pl_sl_opts o = h.o;
    pl_sl_plan p = h.p;
    pl_err err = {""};
    assert_close(p.latency_s, 1.841, 1e-12);
    assert_int_equal(p.slices[1].eta, 2);
    pl_sl_sim s;
    pl_sim_result r;
    if (pl_sl_sim_build(sg, pf, &o, &p, &s, &err) < 0) fail_msg("%s", err.msg);
    if (pl_sl_sim_check(&s, &p, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_close(r.makespan_s, 1.841, 1e-12);
    assert_close(r.makespan_s, p.latency_s, 1e-9 * p.latency_s);
    /* the functions' memory as capacities, each peak what the pricing says it needs */
    assert_int_equal(s.c->n_devs, 4); /* three functions and the store */
    const double mb = PL_PLATFORM_MB_BYTES, need[3] = {200, 2300, 120}, cap[3] = {200, 2300, 128};
    for (int k = 0; k < 3; k++) {
        assert_close(s.c->devs[k].memory_bytes, cap[k] * mb, 1e-6);
        assert_close(r.peak_mem_bytes[k], need[k] * mb, 1.0);
    }
    /* five timed transfers: T0 written once and read by fn1 and fn2, T2 written and read; each
       write and read at its time; nothing of one slice overlaps the next */
    int timed = 0, writes = 0;
    for (int x = 0; x < r.n_xfers; x++) {
        double d = r.xfers[x].end_s - r.xfers[x].start_s;
        if (d <= 0) continue;
        timed++, writes += r.xfers[x].to == 3;
        assert_true(fabs(d - 3e-3) < 1e-12 || fabs(d - 1.5e-3) < 1e-12);
    }
    assert_int_equal(timed, 5);
    assert_int_equal(writes, 2);
    assert_close(r.op_start_s[s.layer_op[1]], 1.027 + 3e-3, 1e-12); /* after its read */
    assert_close(r.op_start_s[s.layer_op[3]], 1.027 + 0.4095 + 4.5e-3, 1e-12);
    assert_close(r.op_end_s[s.layer_op[3]], 1.841, 1e-12);
    pl_sim_result_free(&r);
    pl_sl_sim_free(&s);
    h.p = p;
    hand_end(&h);
}

/* A broken plan is refused by the checker, naming what is wrong. */
static void expect_refused(const hand *h, const char *needle)
{
    pl_err err = {""};
    assert_int_equal(pl_sl_plan_check(h->sg, h->pf, &h->o, &h->p, NULL, &err), -1);
    if (!strstr(err.msg, needle)) fail_msg("'%s' does not say '%s'", err.msg, needle);
}

static void test_broken_plans_refused(void **state)
{
    (void)state;
    hand h;
    hand_begin(&h);
    pl_err err = {""};
    if (pl_sl_plan_check(h.sg, h.pf, &h.o, &h.p, NULL, &err) < 0) fail_msg("%s", err.msg);
    pl_sl_slice keep = h.p.slices[1];
    h.p.slices[1].mem_mb = 2200; /* 100 MB short of what it holds */
    expect_refused(&h, "serverless plan (mopar): function 1 ('fn1') needs 2300.0 MB at its peak");
    h.p.slices[1] = keep, h.p.slices[1].mem_mb = 2300.5;
    expect_refused(&h, "function 1's memory, 2300.5 MB, is not a size hand allows");
    h.p.slices[1] = keep, h.p.slices[1].eta = 3;
    expect_refused(&h, "function 1's parallel degree is 3, not 1 to its 2 whole vCPUs");
    h.p.slices[1] = keep, h.p.slices[1].first = 2;
    expect_refused(&h, "layer 1 is in no function");
    h.p.slices[1] = keep, h.p.slices[1].last = 3;
    expect_refused(&h, "layer 3 is in functions 1 and 2");
    h.p.slices[1] = keep, h.p.slices[2].time_s -= 0.1, h.p.latency_s -= 0.1;
    expect_refused(&h, "function 2: the plan says 304.500000 ms, the simulator 404.500000 ms");
    h.p.slices[2].time_s += 0.1, h.p.latency_s += 0.2;
    expect_refused(&h, "its latency is 1941.000000 ms, the simulator's 1841.000000");
    hand_end(&h);
}

/* Every algorithm's plan of vgg19 and resnet50 on OpenFaaS (2 % slack: MOPAR splits them in 6
 * and 3) and of gcn_cora: the checker passes it and the simulated latency is its latency_s
 * within 1e-9. */
static void test_zoo_plans_simulate_to_their_latency(void **state)
{
    (void)state;
    const char *models[] = {"models/vgg19.onnx", "models/resnet50.onnx", "models/gcn_cora.onnx"};
    pl_err err = {""};
    pl_platform *pf = pl_platform_load("examples/platforms/openfaas.json", &err);
    if (!pf) fail_msg("%s", err.msg);
    int split = 0;
    for (int m = 0; m < 3; m++) {
        pl_graph *g = tu_load(models[m]);
        pl_sl_graph *sg = pl_sl_from_graph(g, pf, NULL, &err),
                    *raw = pl_sl_from_graph(g, pf, NULL, &err);
        if (!sg || !raw) fail_msg("%s", err.msg);
        pl_sl_eliminate(sg, 0.05);
        for (int shm = 0; shm < 2; shm++) {
            pl_sl_opts o = {
                .codec_cost = {1, 0, 0}, .latency_slack = 0.02, .shm = shm, .nonsplit_limit_s = 1};
            int k = 0;
            for (int a = 0; a < PL_SL_ALGO_COUNT; a++) {
                const pl_sl_graph *on = a == PL_SL_UNIFORM ? raw : sg;
                pl_sl_plan p;
                if (pl_sl_plan_make(on, pf, &o, a, k, &p, &err) < 0)
                    fail_msg("%s %s: %s", models[m], pl_sl_algo_name(a), err.msg);
                if (a == PL_SL_MOPAR) k = p.n;
                split += p.n > 1;
                pl_sl_sim s;
                pl_sim_result r;
                if (pl_sl_sim_build(on, pf, &o, &p, &s, &err) < 0 ||
                    pl_sl_sim_check(&s, &p, &r, &err) < 0)
                    fail_msg("%s %s: %s", models[m], pl_sl_algo_name(a), err.msg);
                assert_true(fabs(r.makespan_s - p.latency_s) <= 1e-9 * p.latency_s);
                pl_sim_result_free(&r);
                pl_sl_sim_free(&s);
                pl_sl_plan_free(&p);
            }
        }
        pl_sl_free(sg), pl_sl_free(raw);
        pl_graph_free(g);
    }
    assert_true(split >= 8); /* the chains checked are chains, not single functions */
    pl_platform_free(pf);
}

/* --trace FILE: the plan as the simulator runs it, valid Chrome trace JSON with one track per
 * function of the plan (and the store); --trace T with --serve stays the replay's length. */
static void test_cli_trace(void **state)
{
    (void)state;
    char dir[256], path[512], cmd[1024];
    tu_tmpdir_begin(dir, sizeof dir, "sl-sim");
    snprintf(path, sizeof path, "%s/t.json", dir);
    snprintf(cmd, sizeof cmd,
             "serverless models/vgg19.onnx --platform examples/platforms/openfaas.json "
             "--latency-slack 0.02 --shm --algo mopar --trace %s --json --no-calibration "
             "2>/dev/null",
             path);
    json_t *doc = tu_run_json(cmd);
    json_t *mopar = tu_find(doc, "algorithms", "algo", "mopar");
    size_t n = json_array_size(json_object_get(mopar, "slices"));
    assert_true(n > 1);
    json_error_t je;
    json_t *tr = json_load_file(path, 0, &je);
    if (!tr) fail_msg("%s: %s", path, je.text);
    size_t i;
    json_t *e;
    int fns = 0, shm = 0, layers = 0;
    json_array_foreach(json_object_get(tr, "traceEvents"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        json_t *args = json_object_get(e, "args");
        if (!strcmp(ph, "M") && !strcmp(name, "thread_name")) {
            const char *t = json_string_value(json_object_get(args, "name"));
            fns += !strncmp(t, "fn", 2) && !strchr(t, '>') && !strstr(t, "\xe2\x86\x92");
            shm += !strncmp(t, "shm ", 4);
        }
        layers += !strcmp(ph, "X") && !strncmp(name, "layer ", 6);
    }
    assert_int_equal(fns, (int)n);
    assert_int_equal(shm, 1);
    assert_true(layers > 0);
    json_decref(tr);
    json_decref(doc);
    /* the old spelling of the replay's length still works with --serve */
    snprintf(cmd, sizeof cmd,
             "serverless models/gcn_cora.onnx --platform examples/platforms/openfaas.json "
             "--algo mopar --serve --trace 30s --rps 10:20 --json --no-calibration 2>/dev/null");
    doc = tu_run_json(cmd);
    json_t *sv = json_object_get(tu_find(doc, "algorithms", "algo", "mopar"), "serving");
    assert_true(tu_num(sv, "requests") > 300 && tu_num(sv, "requests") < 600);
    json_decref(doc);
    /* without --serve, a duration is not taken for a file's name */
    tu_expect_refusal("serverless models/gcn_cora.onnx --platform examples/platforms/openfaas.json "
                      "--trace 600s",
                      "--trace 600s: --trace names the file of a Chrome trace");
    tu_tmpdir_end(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked_chain),
        cmocka_unit_test(test_broken_plans_refused),
        cmocka_unit_test(test_zoo_plans_simulate_to_their_latency),
        cmocka_unit_test(test_cli_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
