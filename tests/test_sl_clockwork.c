/* test_sl_clockwork.c: Clockwork++ (docs/serverless.md, "Clockwork++"): the window policy of
 * pl_sl_serve on a hand-worked trace and against a brute-force count of each window's peak; held
 * memory below keep-alive's and a bill above pay-per-use on a bursty trace; the plan
 * PL_SL_CLOCKWORK is the unsplit function priced by serving the default trace; and its row in
 * `placer serverless`'s table and JSON, with --window's bad values refused. */
#include "testutil.h"

#include "placer/serverless.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What pl_sl_serve reads of a platform: 1e-5 USD per GB-s, 2e-7 per request, a 1 s cold start
 * (which the window policy never pays); 128-10240 MB for the pricing of a hand-made graph. */
static pl_platform *platform(void)
{
    pl_platform *p = calloc(1, sizeof *p);
    p->name = strdup("test"), p->path = strdup("");
    p->mem_min_mb = 128, p->mem_max_mb = 10240, p->mem_step_mb = 1, p->mb_per_vcpu = 1769;
    p->min_vcpus = 1, p->usd_per_gb_s = 1e-5, p->usd_per_request = 2e-7, p->billing_s = 1e-3;
    p->cold_start_s = 1;
    p->shm = (pl_transport){.present = true, .bandwidth_Bps = 1e9, .latency_s = 1e-5};
    return p;
}

/* One function of 1024 MB (1 GB) taking 0.6 s, billed 0.6 GB-s and 0.6e-5 + 2e-7 USD an
 * invocation; a request every 0.25 s (4 a second, evenly spaced: 0, 0.25, ..., 1.75) for 2 s;
 * windows of 0.25 s. A request is in flight over [arrival, arrival + 0.6). In flight at most:
 * [0, 0.25) request 0: 1; [0.25, 0.5) 0 and 1: 2; [0.5, 0.75) 0, 1, 2 (0 ends at 0.6): 3; and 3
 * in every later window (at each arrival the two before it are still running, the third before
 * has ended: 0.75 > 0.6). Held: (1 + 2 + 3 x 6) instances x 1 GB x 0.25 s = 5.25 GB-s, 2.625 GB
 * on average over 2 s; 8 requests, 4 a second: 65.625 GB per 100 requests a second. Instances:
 * 1, then 1 more, then 1 more, then kept: 3, none cold. The bill: 5.25 GB-s x 1e-5 / 8 + 2e-7 =
 * 6.5625e-6 + 2e-7 = 6.7625e-6 USD a request, against 6.2e-6 paid per use. Busy: 8 x 0.6 GB-s. */
static void test_windows_by_hand(void **state)
{
    (void)state;
    pl_platform *pf = platform();
    pl_sl_slice sl = {.mem_mb = 1024, .time_s = 0.6, .gb_s = 0.6, .usd = 0.6e-5 + 2e-7};
    pl_sl_plan p = {.slices = &sl, .n = 1, .usd = sl.usd, .window_s = 0.25};
    pl_sl_serve_opts o = {.duration_s = 2, .rps_min = 4, .rps_max = 4, .keep_alive_s = 60};
    pl_sl_serve_result r;
    assert_int_equal(pl_sl_serve(&p, pf, &o, &r, &(pl_err){""}), 0);
    assert_int_equal(r.requests, 8);
    assert_int_equal(r.instances, 3);
    assert_int_equal(r.cold_starts, 0);
    assert_close(r.p50_s, 0.6, 1e-12);
    assert_close(r.p95_s, 0.6, 1e-12);
    assert_close(r.p99_s, 0.6, 1e-12);
    assert_close(r.mem_gb_avg, 2.625, 1e-12);
    assert_close(r.mem_gb_per_100rps, 65.625, 1e-9);
    assert_close(r.busy_gb_s, 4.8, 1e-12);
    assert_close(r.usd_per_request, 6.7625e-6, 1e-18);
    /* windows of 1 s: [0, 1) peaks at 3, [1, 2) too: 3 x 1 GB x 2 s, 3 GB on average */
    p.window_s = 1;
    assert_int_equal(pl_sl_serve(&p, pf, &o, &r, &(pl_err){""}), 0);
    assert_int_equal(r.instances, 3);
    assert_close(r.mem_gb_avg, 3, 1e-12);
    /* windows of a nanosecond over 2 s are 2e9 steps: refused, as too many invocations are */
    p.window_s = 1e-9;
    pl_err err = {""};
    assert_int_equal(pl_sl_serve(&p, pf, &o, &r, &err), -1);
    assert_contains(err.msg, "2e+09 steps; at most 5e+07 are replayed");
    assert_int_equal(r.requests, 0);
    /* served on demand (no window), the same plan bills per use and pays its cold starts */
    p.window_s = 0;
    assert_int_equal(pl_sl_serve(&p, pf, &o, &r, &(pl_err){""}), 0);
    assert_close(r.usd_per_request, 6.2e-6, 1e-18);
    assert_true(r.cold_starts > 0 && r.p99_s > 1.5);
    pl_platform_free(pf);
}

/* ---- against brute force ---- */

static double rate(const pl_sl_serve_opts *o, double t)
{
    return o->rps_min + (o->rps_max - o->rps_min) * (1 - cos(2 * M_PI * t / o->period_s)) / 2;
}

/* The most of the intervals [s[i], s[i] + len) that hold one instant of [from, to): checked at
 * `from` and at every start inside, where the count can rise. */
static long peak_in(const double *s, int n, double len, double from, double to)
{
    long best = 0;
    for (int c = -1; c < n; c++) {
        double t = c < 0 ? from : s[c];
        if (t < from || t >= to) continue;
        long k = 0;
        for (int i = 0; i < n; i++)
            k += s[i] <= t && t < s[i] + len;
        if (k > best) best = k;
    }
    return best;
}

/* Two functions (512 MB for 0.35 s, then 2048 MB for 0.2 s) serving a sine from 1 to 40
 * requests a second, evenly spaced, over 30 s, in windows of 2 s (the last cut at 30 s is a
 * whole one; a 7 s window leaves a 2 s remainder): the held memory and the instances started
 * are those of each window's peak counted over every pair of requests, windows rising and
 * falling. The arrivals are drawn here from the rate's definition, t + 1 / rate(t). */
static void test_windows_brute_force(void **state)
{
    (void)state;
    pl_platform *pf = platform();
    pl_sl_slice sl[2] = {{.mem_mb = 512, .time_s = 0.35}, {.mem_mb = 2048, .time_s = 0.2}};
    pl_sl_plan p = {.slices = sl, .n = 2};
    pl_sl_serve_opts o = {.duration_s = 30, .period_s = 30, .rps_min = 1, .rps_max = 40};
    double *a = malloc(2000 * sizeof *a), *s = malloc(2000 * sizeof *s);
    int n = 0;
    for (double t = 0; t < o.duration_s; t += 1 / rate(&o, t))
        a[n++] = t;
    for (int wi = 0; wi < 2; wi++) {
        p.window_s = wi ? 7 : 2;
        double held = 0, off = 0;
        long started = 0;
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < n; i++)
                s[i] = a[i] + off;
            long before = 0;
            for (double from = 0; from < o.duration_s; from += p.window_s) {
                double to = fmin(from + p.window_s, o.duration_s);
                double last = to >= o.duration_s ? INFINITY : to; /* late starts: last window */
                long peak = peak_in(s, n, sl[k].time_s, from, last);
                held += (double)peak * sl[k].mem_mb / 1024 * (to - from);
                started += peak > before ? peak - before : 0, before = peak;
            }
            off += sl[k].time_s;
        }
        pl_sl_serve_result r;
        assert_int_equal(pl_sl_serve(&p, pf, &o, &r, &(pl_err){""}), 0);
        assert_int_equal(r.requests, n);
        assert_close(r.mem_gb_avg * o.duration_s, held, 1e-9);
        assert_int_equal(r.instances, started);
        assert_int_equal(r.cold_starts, 0);
        assert_close(r.p95_s, 0.55, 1e-12);
    }
    free(a), free(s);
    pl_platform_free(pf);
}

/* A bursty trace: a burst a minute (Poisson, 20 to 1,000 requests a second and back every 60 s,
 * for 240 s, seed 3), one function of 1 GB taking 0.2 s. Kept warm 60 s after use, the instances
 * a burst needs outlive the trough after it (about 226 GB on average, measured); held by 10 s
 * windows, each holds what its own peak needs (about 160 GB). So by windows the memory is less,
 * the bill (memory held) more than pay per use (memory busy: 2.2e-6 USD), and no request waits
 * for a cold start. */
static void test_windows_bursty(void **state)
{
    (void)state;
    pl_platform *pf = platform();
    pl_sl_slice sl = {.mem_mb = 1024, .time_s = 0.2, .gb_s = 0.2, .usd = 0.2e-5 + 2e-7};
    pl_sl_plan p = {.slices = &sl, .n = 1, .usd = sl.usd};
    pl_sl_serve_opts o = {.duration_s = 240,
                          .period_s = 60,
                          .rps_min = 20,
                          .rps_max = 1000,
                          .keep_alive_s = 60,
                          .poisson = true,
                          .seed = 3};
    pl_sl_serve_result warm, win;
    assert_int_equal(pl_sl_serve(&p, pf, &o, &warm, &(pl_err){""}), 0);
    p.window_s = 10;
    assert_int_equal(pl_sl_serve(&p, pf, &o, &win, &(pl_err){""}), 0);
    assert_int_equal(win.requests, warm.requests);
    assert_true(win.mem_gb_avg < 0.8 * warm.mem_gb_avg);
    assert_true(win.usd_per_request > 1.2 * p.usd);
    assert_close(warm.usd_per_request, p.usd, 0);
    assert_true(win.mem_gb_avg * o.duration_s > win.busy_gb_s); /* held above busy */
    assert_close(win.busy_gb_s, warm.busy_gb_s, 1e-9);
    assert_int_equal(win.cold_starts, 0);
    assert_close(win.p99_s, 0.2, 1e-12);
    assert_true(warm.cold_starts > 0);
    pl_platform_free(pf);
}

/* ---- the plan ---- */

/* Three layers (300, 200, 100 MB of weights; 0.1, 0.2, 0.3 s) as one function: Clockwork++'s
 * plan is unsplit's, priced by serving the default trace by 60 s windows (or --window's), its
 * bill the window policy's and above unsplit's per-use one. */
static void test_plan(void **state)
{
    (void)state;
    pl_platform *pf = platform();
    pl_sl_graph *sg = pl_sl_new(3, 2);
    for (int l = 0; l < 3; l++) {
        sg->layers[l].weight_mb = 300 - 100 * l, sg->layers[l].mem_mb = 10;
        sg->layers[l].t1_s = 0.1 * (l + 1);
    }
    for (int t = 0; t < 2; t++) {
        sg->tensors[t] = (pl_sl_tensor){1e5, t, malloc(sizeof(int)), 1};
        sg->tensors[t].to[0] = t + 1;
    }
    pl_sl_opts o = {.codec_cost = {1, 0, 0}};
    pl_sl_plan u, c;
    pl_err err = {""};
    assert_int_equal(pl_sl_plan_make(sg, pf, &o, PL_SL_UNSPLIT, 0, &u, &err), 0);
    assert_int_equal(pl_sl_plan_make(sg, pf, &o, PL_SL_CLOCKWORK, 0, &c, &err), 0);
    assert_int_equal(c.algo, PL_SL_CLOCKWORK);
    assert_int_equal(c.n, 1);
    assert_close(c.slices[0].mem_mb, u.slices[0].mem_mb, 0);
    assert_close(c.latency_s, u.latency_s, 0);
    assert_close(c.window_s, 60, 0);
    pl_sl_serve_opts t;
    pl_sl_serve_defaults(&t);
    assert_true(t.duration_s == 600 && t.rps_min == 250 && t.rps_max == 1250 && t.poisson);
    pl_sl_serve_result r;
    assert_int_equal(pl_sl_serve(&c, pf, &t, &r, &err), 0);
    assert_close(c.usd, r.usd_per_request, 0);
    assert_close(c.gb_s, r.mem_gb_avg * 600 / (double)r.requests, 1e-12);
    assert_true(c.usd > u.usd);
    pl_sl_plan_free(&c);
    o.window_s = 30;
    assert_int_equal(pl_sl_plan_make(sg, pf, &o, PL_SL_CLOCKWORK, 0, &c, &err), 0);
    assert_close(c.window_s, 30, 0);
    pl_sl_plan_free(&c), pl_sl_plan_free(&u);
    assert_int_equal(pl_sl_algo_parse("clockwork++"), PL_SL_CLOCKWORK);
    assert_string_equal(pl_sl_algo_name(PL_SL_CLOCKWORK), "clockwork++");
    /* a model that fits no function: Clockwork++ places whole models, and says so */
    pf->mem_max_mb = 256;
    assert_int_equal(pl_sl_plan_make(sg, pf, &o, PL_SL_CLOCKWORK, 0, &c, &err), -1);
    assert_contains(err.msg, "clockwork++: the whole model does not fit one function");
    pl_sl_free(sg);
    pl_platform_free(pf);
}

/* ---- the verb ---- */

#define LAMBDA "examples/platforms/aws-lambda.json"

/* Its row in the JSON: one function, unsplit's memory and latency, priced by serving (the
 * window and the trace said), dearer than unsplit per request; served with --serve (the default
 * trace, 0.2 s), no cold start, less memory than unsplit kept warm 60 s (35.6 against 36.6 GB per
 * 100 requests a second, measured) and a higher bill. The table has the row and says how it was
 * priced. */
static void test_cli(void **state)
{
    (void)state;
    json_t *doc = tu_run_json("serverless models/resnet50.onnx --platform " LAMBDA
                              " --json --no-calibration --nonsplit-limit 1 --serve 2>/dev/null");
    json_t *c = tu_find(doc, "algorithms", "algo", "clockwork++"),
           *u = tu_find(doc, "algorithms", "algo", "unsplit");
    assert_int_equal(json_array_size(json_object_get(c, "slices")), 1);
    json_t *cs = json_array_get(json_object_get(c, "slices"), 0),
           *us = json_array_get(json_object_get(u, "slices"), 0);
    assert_close(tu_num(cs, "memory_mb"), tu_num(us, "memory_mb"), 0);
    assert_close(tu_num(c, "latency_s"), tu_num(u, "latency_s"), 0);
    assert_true(tu_num(c, "usd_per_request") > tu_num(u, "usd_per_request"));
    json_t *pb = json_object_get(c, "priced_by");
    assert_close(tu_num(pb, "window_s"), 60, 0);
    assert_close(tu_num(json_object_get(pb, "trace"), "rps_max"), 1250, 0);
    json_t *sc = json_object_get(c, "serving"), *su = json_object_get(u, "serving");
    assert_close(tu_num(sc, "cold_starts"), 0, 0);
    assert_true(tu_num(sc, "mem_gb_per_100rps") < tu_num(su, "mem_gb_per_100rps"));
    assert_true(tu_num(sc, "usd_per_request") > tu_num(su, "usd_per_request"));
    assert_null(json_object_get(u, "priced_by"));
    json_decref(doc);
    char *out = NULL;
    assert_int_equal(tu_run("serverless models/resnet50.onnx --platform " LAMBDA
                            " --no-calibration --nonsplit-limit 1 --window 30s 2>/dev/null",
                            &out),
                     0);
    assert_contains(out, "\nclockwork++ ");
    assert_contains(out, "clockwork++: priced by serving, not per invocation: windows of 30 s");
    free(out);
    tu_expect_refusal("serverless models/resnet50.onnx --platform " LAMBDA " --window 0s",
                      "--window: '0s' is not a duration above 0");
    tu_expect_refusal("serverless models/resnet50.onnx --platform " LAMBDA " --window 10us",
                      "--window: '10us' is shorter than 1 ms");
    tu_expect_refusal("serverless models/resnet50.onnx --platform " LAMBDA " --window soon",
                      "--window");
    tu_expect_refusal("serverless models/resnet50.onnx --platform " LAMBDA " --algo clock",
                      "nonsplit or clockwork++");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_windows_by_hand),
        cmocka_unit_test(test_windows_brute_force),
        cmocka_unit_test(test_windows_bursty),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
