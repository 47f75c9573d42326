/* test_sim.c: the simulator (docs/simulator.md) on small graphs whose every figure is worked
 * out by hand in the comments; every run also passes pl_sim_check. Links are 1000 B/s with
 * 0.5 s latency and tensors 1000 bytes unless said otherwise, so a transfer takes 1.5 s. */
#include "testutil.h"

#include "placer/sim.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BW 1000.0
#define LAT 0.5

static unsigned lcg_next(unsigned *s)
{
    return *s = *s * 1103515245u + 12345u, (*s >> 8) & 0xffffff;
}

/* ---- building ---- */

typedef struct fx {
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k;
    pl_plan *p;
    pl_sim_result r;
    bool have_r;
} fx;

static int tensor(fx *f, const char *name)
{
    return pl_graph_tensor(f->g, name);
}

static void set_bytes(fx *f, const char *name, int64_t bytes)
{
    pl_tensor_set_shape(&f->g->tensors[tensor(f, name)], PL_DT_UINT8, 1, &bytes);
}

/* Adds op `name` reading and writing comma-separated tensors (tu_op); new tensors get 1000
 * bytes. */
static int op(fx *f, const char *name, const char *ins, const char *outs)
{
    int before = f->g->n_tensors, o = tu_op(f->g, name, "Task", ins, outs);
    for (int t = before; t < f->g->n_tensors; t++)
        set_bytes(f, f->g->tensors[t].name, 1000);
    return o;
}

static int id(const fx *f, const char *name)
{
    int o = pl_graph_find_op(f->g, name);
    if (o < 0) fail_msg("no op '%s'", name);
    return o;
}

/* Finalizes the graph, builds an n-device cluster (every pair linked both ways) and a plan
 * with every op on device 0; op times are set afterwards with set_time. */
static void build(fx *f, int n_devs)
{
    pl_err err = {""};
    if (pl_graph_finalize(f->g, "test", &err) < 0) fail_msg("%s", err.msg);
    f->c = pl_cluster_new("test");
    for (int d = 0; d < n_devs; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", d);
        pl_cluster_add_device(f->c, name, PL_DEV_GPU, "test");
        f->c->devs[d].memory_bytes = 1e12;
    }
    for (int a = 0; a < n_devs; a++)
        for (int b = a + 1; b < n_devs; b++)
            pl_cluster_set_link(f->c, a, b, BW, LAT, true);
    if (pl_cluster_finalize(f->c, &err) < 0) fail_msg("%s", err.msg);
    f->k = pl_cost_new(f->g, f->c, NULL, NULL, 0, &err);
    if (!f->k) fail_msg("%s", err.msg);
    f->p = pl_plan_new(f->g->n_ops, n_devs);
}

static fx *fx_new(void)
{
    fx *f = calloc(1, sizeof *f);
    f->g = pl_graph_new("t");
    return f;
}

static void fx_free(fx *f)
{
    if (f->have_r) pl_sim_result_free(&f->r);
    pl_plan_free(f->p);
    pl_cost_free(f->k);
    pl_cluster_free(f->c);
    pl_graph_free(f->g);
    free(f);
}

static void set_time(fx *f, const char *name, double s)
{
    for (int d = 0; d < f->k->n_devs; d++)
        f->k->op_s[(size_t)id(f, name) * f->k->n_devs + d] = s;
}

static void place(fx *f, const char *name, int dev)
{
    f->p->dev[id(f, name)] = dev;
}

/* Simulates with record on, and checks the invariants of the result. */
static const pl_sim_result *sim_opts(fx *f, pl_contention cont, int requests, bool per_edge)
{
    if (f->have_r) pl_sim_result_free(&f->r);
    pl_sim_opts o = {
        .contention = cont, .requests = requests, .record = true, .per_edge = per_edge};
    pl_err err = {""};
    if (pl_simulate(f->k, f->p, &o, &f->r, &err) < 0) fail_msg("simulate: %s", err.msg);
    f->have_r = true;
    char why[512];
    if (pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why) < 0) fail_msg("check: %s", why);
    assert_string_equal(why, "ok");
    return &f->r;
}

static const pl_sim_result *sim(fx *f, pl_contention cont, int requests)
{
    return sim_opts(f, cont, requests, false);
}

static double start(const fx *f, const char *name, int r)
{
    return f->r.op_start_s[(size_t)r * f->g->n_ops + id(f, name)];
}

static double end(const fx *f, const char *name, int r)
{
    return f->r.op_end_s[(size_t)r * f->g->n_ops + id(f, name)];
}

static void assert_path(const fx *f, const char *names)
{
    char buf[256] = "";
    for (int i = 0; i < f->r.critical_len; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? "," : "",
                 f->g->ops[f->r.critical_path[i]].name);
    assert_string_equal(buf, names);
}

/* ---- one device, two devices ---- */

/* a(1) → b(2) → c(3) on gpu0: 6 s, no transfer, the path is the chain. */
static void test_chain_one_device(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    op(f, "c", "y", "z");
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 2), set_time(f, "c", 3);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 6, 1e-12);
    assert_close(start(f, "c", 0), 3, 1e-12);
    assert_close(r->busy_s[0], 6, 1e-12);
    assert_true(r->busy_s[1] == 0);
    assert_int_equal(r->n_xfers, 0);
    assert_int_equal(r->events, 3);
    assert_path(f, "a,b,c");
    assert_close(r->period_s, 6, 1e-12);
    assert_close(r->latency_s, 6, 1e-12);
    fx_free(f);
}

/* a(1) on gpu0 → x (1000 B, 0.5 + 1000/1000 = 1.5 s) → b(2) on gpu1: 1 + 1.5 + 2 = 4.5. */
static void test_chain_two_devices(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 2);
    place(f, "b", 1);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 4.5, 1e-12);
    assert_int_equal(r->n_xfers, 1);
    assert_close(r->xfers[0].start_s, 1, 1e-12);
    assert_close(r->xfers[0].end_s, 2.5, 1e-12);
    assert_int_equal(r->xfers[0].from, 0);
    assert_int_equal(r->xfers[0].to, 1);
    assert_close(r->link_bytes[0 * 2 + 1], 1000, 1e-12);
    assert_close(r->link_busy_s[0 * 2 + 1], 1.5, 1e-12);
    assert_true(r->link_bytes[1 * 2 + 0] == 0);
    assert_close(start(f, "b", 0), 2.5, 1e-12);
    assert_close(end(f, "b", 0), 4.5, 1e-12);
    assert_path(f, "a,b");
    fx_free(f);
}

/* ---- shared memory (docs/simulator.md, "Shared memory") ---- */

/* Devices 0 and 1 at 1000 B/s of memory each, no launch cost, eff_memory 1: an op moving B
 * bytes has a memory term of B / 1000 s. Device d sits on hosts[d] and shares `shared` B/s
 * there (0: gives none). */
static void share_memory(fx *f, const char *h0, const char *h1, double shared)
{
    const char *hosts[2] = {h0, h1};
    for (int d = 0; d < 2; d++) {
        pl_device *v = &f->c->devs[d];
        free(v->host);
        v->host = strdup(hosts[d]);
        v->mem_bandwidth_Bps = 1000, v->launch_overhead_s = 0;
        v->host_mem_bandwidth_Bps = shared;
    }
    f->k->params.eff_memory = 1;
}

/* a: nothing → x on gpu0, moving 1000 B; b: nothing → y on gpu1, moving 2000 B; independent. */
static fx *share_pair(double ta, double tb)
{
    fx *f = fx_new();
    int a = op(f, "a", "", "x"), b = op(f, "b", "", "y");
    f->g->ops[a].bytes_moved = 1000, f->g->ops[b].bytes_moved = 2000;
    build(f, 2);
    set_time(f, "a", ta), set_time(f, "b", tb);
    place(f, "b", 1);
    return f;
}

/* Memory-bound: a 1 s moving 1000 B (memory term 1 s), b 2 s moving 2000 B (2 s); each draws
 * 1000 B/s alone. Host h shares 1500 B/s: together they ask 2000, factor 4/3, so each runs at
 * 3/4 of its speed alone: a ends at 4/3; b has then done 1 s of its 2 and does the rest
 * alone: 4/3 + 1 = 7/3. Without the shared figure: a 1, b 2. */
static void test_share_memory_bound(void **state)
{
    (void)state;
    fx *f = share_pair(1, 2);
    share_memory(f, "h", "h", 0);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 2, 1e-12);
    share_memory(f, "h", "h", 1500);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 4.0 / 3, 1e-12);
    assert_close(end(f, "b", 0), 7.0 / 3, 1e-12);
    assert_close(r->makespan_s, 7.0 / 3, 1e-12);
    assert_close(r->busy_s[0], 4.0 / 3, 1e-12);
    assert_close(r->busy_s[1], 7.0 / 3, 1e-12);
    assert_int_equal(r->events, 2); /* the moved end events are not counted */
    /* the trace shows a's real duration, 4/3 s (trace times are in microseconds) */
    char path[256];
    snprintf(path, sizeof path, "%s", tu_tmpfile("", 0, ".json"));
    pl_err err = {""};
    if (pl_sim_trace_write(f->k, f->p, &f->r, path, &err) < 0) fail_msg("%s", err.msg);
    json_t *root = json_load_file(path, 0, NULL), *e;
    size_t i;
    int seen = 0;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (strcmp(name, "a") || strcmp(ph, "X")) continue;
        assert_close(json_number_value(json_object_get(e, "dur")), 4e6 / 3, 1e-6);
        seen++;
    }
    assert_int_equal(seen, 1);
    json_decref(root);
    remove(path);
    /* the checker re-integrates: a recorded as running 1 s did 3/4 s of its work */
    f->r.op_end_s[id(f, "a")] = 1;
    char why[512];
    assert_int_equal(pl_sim_check(f->k, f->p, &(pl_sim_opts){0}, &f->r, why, sizeof why), -1);
    assert_non_null(strstr(why, "op 'a' runs for 1 s on 'gpu0', which shares its memory"));
    fx_free(f);
}

/* Compute-bound: a and b 4 s each moving 1000 and 2000 B (memory terms 1 and 2 s): they draw
 * 250 and 500 B/s, 750 < 1500: factor 1, both as alone. With 600 B/s shared: factor 1.25,
 * memory terms 1.25 and 2.5 s, still under 4 s: unchanged. With 150 B/s: factor 5, memory terms
 * 5 and 10 s: a runs at 4/5 until it ends at 5; b has done 4 s of work at 4/10 rate... b's
 * rate is 4/10: by 5 it has done 2 s, then alone (factor 500/150 = 10/3, memory term 20/3 s,
 * rate 4/(20/3) = 0.6) the 2 s left take 10/3: b ends at 25/3. */
static void test_share_compute_bound(void **state)
{
    (void)state;
    fx *f = share_pair(4, 4);
    share_memory(f, "h", "h", 1500);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 4, 1e-12);
    share_memory(f, "h", "h", 600);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 4, 1e-12);
    share_memory(f, "h", "h", 150);
    sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 5, 1e-12);
    assert_close(end(f, "b", 0), 25.0 / 3, 1e-12);
    fx_free(f);
}

/* A private cache of 1500 B on each device: a and b both 3 s moving 3000 B (memory term 3 s,
 * memory-bound), half of it beyond the cache: 1.5 s private, 1.5 s shared, each drawing
 * 1.5 * 1000 / 3 = 500 B/s. Host h shares 750 B/s: factor 1000/750 = 4/3, memory terms
 * 1.5 + 1.5 * 4/3 = 3.5 s, both end at 3.5. Without the cache every byte is shared: 1000 B/s
 * each, factor 8/3, 3 * 8/3 = 8 s. Moving 1500 B or less (in the cache), nothing stretches. */
static void test_share_private_cache(void **state)
{
    (void)state;
    fx *f = share_pair(3, 3);
    f->g->ops[id(f, "a")].bytes_moved = f->g->ops[id(f, "b")].bytes_moved = 3000;
    share_memory(f, "h", "h", 750);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 8, 1e-12);
    f->c->devs[0].private_cache_bytes = f->c->devs[1].private_cache_bytes = 1500;
    sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 3.5, 1e-12);
    assert_close(end(f, "b", 0), 3.5, 1e-12);
    f->g->ops[id(f, "a")].bytes_moved = f->g->ops[id(f, "b")].bytes_moved = 1500;
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 3, 1e-12);
    fx_free(f);
}

/* The stall (host_mem_stall_Bps 500 B/s on both): the compute-bound pair of
 * test_share_compute_bound (4 s each, memory terms 1 and 2 s, factor 1 at 1500 B/s) run at
 * once, so a takes 1000 / 500 = 2 s longer and b 2000 / 500 = 4 s: a at rate 4/6 ends at 6,
 * when b (rate 4/8) has done 3 s of its 4; alone, b does the last 1 s by 7. A memory-bound op
 * (test_share_memory_bound's pair) gets no stall: 4/3 and 7/3 as there. And an op that draws
 * no shared memory (b moving nothing) does not stall its neighbour: a ends at 4. */
static void test_share_stall(void **state)
{
    (void)state;
    fx *f = share_pair(4, 4);
    share_memory(f, "h", "h", 1500);
    f->c->devs[0].host_mem_stall_Bps = f->c->devs[1].host_mem_stall_Bps = 500;
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 6, 1e-12);
    assert_close(end(f, "b", 0), 7, 1e-12);
    assert_close(r->busy_s[0], 6, 1e-12);
    char why[512];
    assert_int_equal(pl_sim_check(f->k, f->p, &(pl_sim_opts){0}, &f->r, why, sizeof why), 0);
    f->r.op_end_s[id(f, "a")] = 4; /* as if a had run as alone: the checker refuses it */
    assert_int_equal(pl_sim_check(f->k, f->p, &(pl_sim_opts){0}, &f->r, why, sizeof why), -1);
    f->g->ops[id(f, "b")].bytes_moved = 0;
    sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 4, 1e-12);
    fx_free(f);

    f = share_pair(1, 2);
    share_memory(f, "h", "h", 1500);
    f->c->devs[0].host_mem_stall_Bps = f->c->devs[1].host_mem_stall_Bps = 500;
    sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 4.0 / 3, 1e-12);
    assert_close(end(f, "b", 0), 7.0 / 3, 1e-12);
    fx_free(f);
}

/* ---- cold requests (docs/simulator.md, "Cold requests") ---- */

/* One request after `idle` s, its checks passed. */
static const pl_sim_result *sim_idle(fx *f, double idle)
{
    if (f->have_r) pl_sim_result_free(&f->r);
    pl_sim_opts o = {.record = true, .idle_s = idle};
    pl_err err = {""};
    if (pl_simulate(f->k, f->p, &o, &f->r, &err) < 0) fail_msg("simulate: %s", err.msg);
    f->have_r = true;
    char why[512];
    if (pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why) < 0) fail_msg("check: %s", why);
    return &f->r;
}

/* Both devices of host h give the cold figures: `read` B/s, time constant tau, time share. */
static void cold_figures(fx *f, double read, double tau, double share)
{
    for (int d = 0; d < 2; d++)
        f->c->devs[d].host_cold_read_Bps = read, f->c->devs[d].host_cold_tau_s = tau,
        f->c->devs[d].host_cold_time_share = share;
}

/* a reads w (a graph input of 1000 B) and makes x; b reads b_ins and makes y; a and b move
 * a_bytes and b_bytes in ta and tb s; both on gpu0 of host h sharing 1500 B/s. */
static fx *cold_fx(const char *b_ins, double a_bytes, double b_bytes, double ta, double tb)
{
    fx *f = fx_new();
    int a = op(f, "a", "w", "x"), b = op(f, "b", b_ins, "y");
    pl_graph_add_input(f->g, tensor(f, "w"));
    build(f, 2);
    f->g->ops[a].bytes_moved = a_bytes, f->g->ops[b].bytes_moved = b_bytes;
    set_time(f, "a", ta), set_time(f, "b", tb);
    share_memory(f, "h", "h", 1500);
    return f;
}

/* a (4 s) reads w, a graph input of 1000 B, and makes x, moving 2000 B (a memory term of 2 s,
 * under its body: alone it does not stretch); b (2 s) reads x and moves nothing; both on gpu0
 * of host h (alone there: no stall, factor 1). Cold: 500 B/s, tau = 6 s / ln 2, so that
 * f(own) = f(6 s, the tenant's work) = 1/2 and f(12 s) = 3/4. a's kept bytes cost 1000 / 500
 * = 2 s wholly cold, b's none (x is made in the request). After 5.5 s idle the round is P =
 * 6 + 2 (f(P) - 1/2) + 5.5, whose fixed point is P = 12: a takes 4 + 2 * 1/4 = 4.5 s, the
 * makespan 6.5. With a time share of 1/4, a spends 2 + 1 = 3 s again wholly cold, b 0.5: after
 * 5.125 s idle P = 6 + 3.5 * 1/4 + 5.125 = 12, makespan 6.875. Back to back, or without the
 * figures, 6 s. The simulator stops iterating when P moves by under 1e-6 of itself, so the
 * figures hold to 1e-6. */
static void test_cold_idle(void **state)
{
    (void)state;
    fx *f = cold_fx("x", 2000, 0, 4, 2);
    int a = id(f, "a");
    assert_close(sim_idle(f, 5.5)->makespan_s, 6, 1e-12); /* no cold figures */
    assert_true(f->r.cold_period_s == 0);
    cold_figures(f, 500, 6 / log(2), 0);
    assert_close(sim_idle(f, 0)->makespan_s, 6, 1e-12); /* one tenant back to back */
    assert_true(f->r.cold_period_s == 0);
    const pl_sim_result *r = sim_idle(f, 5.5);
    assert_close(r->makespan_s, 6.5, 1e-6);
    assert_close(r->cold_period_s, 12, 1e-3);
    assert_close(end(f, "a", 0), 4.5, 1e-6);
    /* the checker prices the run at the period it records: a warm a is refused */
    f->r.op_end_s[a] = 4;
    char why[512];
    assert_int_equal(pl_sim_check(f->k, f->p, &(pl_sim_opts){0}, &f->r, why, sizeof why), -1);
    assert_non_null(strstr(why, "op 'a' runs for 4 s"));
    cold_figures(f, 500, 6 / log(2), 0.25);
    r = sim_idle(f, 5.125);
    assert_close(r->makespan_s, 6.875, 1e-6);
    assert_close(end(f, "a", 0), 4.75, 1e-6);
    pl_sim_opts bad = {.idle_s = -1};
    pl_sim_result none;
    pl_err err = {""};
    assert_int_equal(pl_simulate(f->k, f->p, &bad, &none, &err), -1);
    assert_non_null(strstr(err.msg, "a wait of -1 s between requests"));
    fx_free(f);
}

/* A request finds a kept tensor cold once per device: the first reader there pays. test_cold_idle's
 * chain with b also reading w (b moves 2000 B in 2 s: memory-bound, 1000 B/s drawn, under
 * the 1500 shared, so alone it does not stretch): after 5.5 s idle still 6.5 s, a 4.5 and b
 * 2; charged twice, b would take 2.5 and the round would not close at 12. On gpu1, b pays its
 * own read (its device's caches): 2 + 2 (f(P) - 1/2) s. */
static void test_cold_kept_once(void **state)
{
    (void)state;
    fx *f = cold_fx("x,w", 2000, 2000, 4, 2);
    cold_figures(f, 500, 6 / log(2), 0);
    assert_close(sim_idle(f, 5.5)->makespan_s, 6.5, 1e-6);
    assert_close(end(f, "b", 0) - start(f, "b", 0), 2, 1e-9);
    place(f, "b", 1);
    const pl_sim_result *r = sim_idle(f, 5.5);
    double c = exp(-6 * log(2) / 6) - exp(-r->cold_period_s * log(2) / 6);
    assert_true(c > 0.2);
    assert_close(end(f, "b", 0) - start(f, "b", 0), 2 + 2 * c, 1e-9);
    fx_free(f);

    /* by turns: a on gpu0, b on gpu1, c (2 s, 2000 B, reading y and w) on gpu0 again: a and b
     * pay for w, each on its device; c, on a device where w has been paid for, does not */
    f = fx_new();
    int a = op(f, "a", "w", "x"), b = op(f, "b", "x,w", "y"), cc = op(f, "c", "y,w", "z");
    pl_graph_add_input(f->g, tensor(f, "w"));
    build(f, 2);
    f->g->ops[a].bytes_moved = f->g->ops[b].bytes_moved = f->g->ops[cc].bytes_moved = 2000;
    set_time(f, "a", 4), set_time(f, "b", 2), set_time(f, "c", 2);
    share_memory(f, "h", "h", 1500);
    cold_figures(f, 500, 6 / log(2), 0);
    place(f, "b", 1);
    r = sim_idle(f, 5.5);
    c = exp(-8 * log(2) / 6) - exp(-r->cold_period_s * log(2) / 6); /* own: 4 + 2 + 2 s */
    assert_true(c > 0.2);
    assert_close(end(f, "a", 0) - start(f, "a", 0), 4 + 2 * c, 1e-9);
    assert_close(end(f, "b", 0) - start(f, "b", 0), 2 + 2 * c, 1e-9);
    assert_close(end(f, "c", 0) - start(f, "c", 0), 2, 1e-9);
    /* a keep of w's 1000 B holds the model's kept bytes as its profile saw them (w once), so
     * reading w on two devices scales neither read: the same times as without a keep (summed
     * per device, K would be 2000 B and each read priced at half) */
    for (int d = 0; d < 2; d++)
        f->c->devs[d].host_cold_keep_bytes = 1000;
    double P = r->cold_period_s; /* sim_idle reuses the result */
    assert_close(sim_idle(f, 5.5)->cold_period_s, P, 1e-9);
    assert_close(end(f, "a", 0) - start(f, "a", 0), 4 + 2 * c, 1e-9);
    assert_close(end(f, "b", 0) - start(f, "b", 0), 2 + 2 * c, 1e-9);
    fx_free(f);
}

/* A tenant keeping more than the caches hold (host_cold_keep_bytes) already reads the rest
 * from memory back to back: a wait makes only keep / K of each kept byte cold. test_cold_idle's
 * chain (a keeps w, 1000 B) with a keep of 250 B: a spends 1000 * 1/4 / 500 = 0.5 s again
 * wholly cold. After 5.875 s idle the round is P = 6 + 0.5 (f(P) - 1/2) + 5.875, whose fixed
 * point is 12: a takes 4 + 0.5 * 1/4 = 4.125 s, the makespan 6.125. A keep of 1000 B holds all
 * of w: the request is priced as without it (6.5 s after 5.5 s, as test_cold_idle). */
static void test_cold_keep(void **state)
{
    (void)state;
    fx *f = cold_fx("x", 2000, 0, 4, 2);
    cold_figures(f, 500, 6 / log(2), 0);
    for (int d = 0; d < 2; d++)
        f->c->devs[d].host_cold_keep_bytes = 250;
    const pl_sim_result *r = sim_idle(f, 5.875);
    assert_close(r->makespan_s, 6.125, 1e-6);
    assert_close(r->cold_period_s, 12, 1e-3);
    assert_close(end(f, "a", 0), 4.125, 1e-6);
    for (int d = 0; d < 2; d++)
        f->c->devs[d].host_cold_keep_bytes = 1000;
    assert_close(sim_idle(f, 5.5)->makespan_s, 6.5, 1e-6);
    fx_free(f);
}

/* The stall and a cold read are one trip beyond the private cache: an op pays the larger, not
 * both (measured: two cold gcn_coras side by side cost each other nothing). a (4 s, reading w
 * of 1000 B, moving 1000 B) on gpu0 beside b (10 s, moving 2000 B) on gpu1, stall 500 B/s:
 * warm, a's stall is 1000 / 500 = 2 s and it ends at 6 (test_share_stall). Cold at 1000 B/s,
 * tau 10 s, after 20 s idle: a's cold read is at most 1000 / 1000 = 1 s, below the stall, so a
 * still ends at 6, though the run was priced cold. */
static void test_cold_or_stall(void **state)
{
    (void)state;
    fx *f = cold_fx("", 1000, 2000, 4, 10);
    place(f, "b", 1);
    f->c->devs[0].host_mem_stall_Bps = f->c->devs[1].host_mem_stall_Bps = 500;
    cold_figures(f, 1000, 10, 0);
    const pl_sim_result *r = sim_idle(f, 20);
    assert_true(r->cold_period_s > 30);
    assert_close(end(f, "a", 0), 6, 1e-12);
    f->c->devs[0].host_mem_stall_Bps = f->c->devs[1].host_mem_stall_Bps = 0;
    r = sim_idle(f, 20); /* without the stall, the cold read shows: 4 + (f(P) - f(14)) s */
    double P = r->cold_period_s, c = exp(-14 / 10.0) - exp(-P / 10);
    assert_true(c > 0.1);
    assert_close(end(f, "a", 0), 4 + c, 1e-9);
    fx_free(f);
}

/* Devices of two hosts, or a device that gives no shared figure, share nothing: the
 * memory-bound pair of test_share_memory_bound runs as alone (a 1, b 2). */
static void test_share_domains(void **state)
{
    (void)state;
    fx *f = share_pair(1, 2);
    share_memory(f, "h0", "h1", 1500);
    sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 1, 1e-12);
    assert_close(end(f, "b", 0), 2, 1e-12);
    share_memory(f, "h", "h", 1500);
    f->c->devs[1].host_mem_bandwidth_Bps = 0;
    int dom[2];
    assert_int_equal(pl_cluster_mem_domains(f->c, dom), 1);
    assert_int_equal(dom[0], 0), assert_int_equal(dom[1], -1);
    sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 1, 1e-12);
    assert_close(end(f, "b", 0), 2, 1e-12);
    fx_free(f);
}

/* ---- stages (docs/simulator.md, "Stages") ---- */

/* Every device: 0.25 s per stage, and a stage's inputs and outputs copied at 4000 B/s (1000 B:
 * 0.25 s). */
static void stage_costs(fx *f)
{
    for (int d = 0; d < f->c->n_devs; d++)
        f->c->devs[d].stage_overhead_s = 0.25, f->c->devs[d].stage_copy_Bps = 4000;
}

/* The stage charges pl_sim_stage_s puts on ops a, b and c, the graph's three. */
static void assert_charges(fx *f, double a, double b, double c)
{
    double extra[3];
    assert_true(pl_sim_stage_s(f->k, f->p, extra));
    assert_close(extra[id(f, "a")], a, 1e-12);
    assert_close(extra[id(f, "b")], b, 1e-12);
    assert_close(extra[id(f, "c")], c, 1e-12);
}

/* a(1) → x → b(2) → y → c(3) → z, a graph output, on two devices, all on gpu0. */
static fx *stage_chain(void)
{
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    op(f, "c", "y", "z");
    pl_graph_add_output(f->g, tensor(f, "z"));
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 2), set_time(f, "c", 3);
    return f;
}

/* a(1)@gpu0 → x → b(2)@gpu1 → y → c(3)@gpu0 → z, a graph output. Cut as split --cut schedule
 * cuts it: [a] (sends x), [b], [c] (receives y): three stages. [a] gives out x: 0.25 + 0.25,
 * a [0, 1.5]; x [1.5, 3]; [b] takes x, gives y: 0.25 + 0.5, b [3, 5.75]; y [5.75, 7.25]; [c]
 * takes y, gives z: 0.75, c [7.25, 11]. Without stage costs 1 + 1.5 + 2 + 1.5 + 3 = 9. */
static void test_stage_chain_two_devices(void **state)
{
    (void)state;
    fx *f = stage_chain();
    place(f, "b", 1);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 9, 1e-12);
    stage_costs(f);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 1.5, 1e-12);
    assert_close(start(f, "b", 0), 3, 1e-12);
    assert_close(end(f, "b", 0), 5.75, 1e-12);
    assert_close(start(f, "c", 0), 7.25, 1e-12);
    assert_close(r->makespan_s, 11, 1e-12);
    assert_close(r->busy_s[1], 2.75, 1e-12);
    assert_charges(f, 0.5, 0.75, 0.75);
    fx_free(f);
}

/* The same chain on gpu0 alone is one stage: it gives out z only, 0.25 + 0.25 on a. A fork
 * a → x → {b@gpu1, d@gpu0}, d after a on gpu0: a sends x, so d begins a stage of its own
 * (cut after a send) although it receives nothing: [a] 0.25 + 0.25 (x out), a [0, 1.5];
 * [d] takes x (from [a]) and gives w (a graph output): 0.25 + 0.5, d [1.5, 3.25];
 * [b] 0.25 + 0.25 (x in; y read by nothing, not an output), x [1.5, 3], b [3, 5.5]. */
static void test_stage_cuts(void **state)
{
    (void)state;
    fx *f = stage_chain();
    stage_costs(f);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 6.5, 1e-12);
    assert_close(start(f, "b", 0), 1.5, 1e-12);
    fx_free(f);

    f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    op(f, "d", "x", "w");
    pl_graph_add_output(f->g, tensor(f, "w"));
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 2), set_time(f, "d", 1);
    place(f, "b", 1);
    stage_costs(f);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "a", 0), 1.5, 1e-12);
    assert_close(start(f, "d", 0), 1.5, 1e-12);
    assert_close(end(f, "d", 0), 3.25, 1e-12);
    assert_close(start(f, "b", 0), 3, 1e-12);
    assert_close(r->makespan_s, 5.5, 1e-12);
    fx_free(f);
}

/* Several tensors per stage, 0.1 s for each a stage takes in or gives out (stage_tensor_s)
 * on top of stage_costs. Graph input in, weight w; a(1)@gpu0 reads in, w and makes x1, x2;
 * b(2)@gpu1 reads x1, x2 and makes y1, y2; c(3)@gpu0 reads y1, y2, x1 and makes z, a graph
 * output. Stages [a] (sends), [b], [c] (receives). [a] takes in (w is a weight, not fed; in, a
 * graph input, is read in place: its bytes are not copied) and gives x1, x2: 0.25 + 3 x 0.1 +
 * 2000 / 4000 = 1.05; [b] takes x1, x2 and gives y1, y2: 0.25 + 0.4 + 1 = 1.65; [c] takes y1,
 * y2 and x1 (from [a], an earlier stage of its device) and gives z: 1.65. No contention:
 * a [0, 2.05]; x1, x2 [2.05, 3.55]; b [3.55, 7.2]; y1, y2 [7.2, 8.7]; c [8.7, 13.35]. */
static void test_stage_tensor_cost(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "in,w", "x1,x2");
    op(f, "b", "x1,x2", "y1,y2");
    op(f, "c", "y1,y2,x1", "z");
    pl_graph_add_input(f->g, tensor(f, "in"));
    f->g->tensors[tensor(f, "w")].flags |= PL_TENSOR_WEIGHT;
    pl_graph_add_output(f->g, tensor(f, "z"));
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 2), set_time(f, "c", 3);
    place(f, "b", 1);
    stage_costs(f);
    for (int d = 0; d < f->c->n_devs; d++)
        f->c->devs[d].stage_tensor_s = 0.1;
    assert_charges(f, 1.05, 1.65, 1.65);
    const pl_sim_result *r = sim(f, PL_CONTENTION_NONE, 1);
    assert_close(start(f, "b", 0), 3.55, 1e-12);
    assert_close(start(f, "c", 0), 8.7, 1e-12);
    assert_close(r->makespan_s, 13.35, 1e-12);
    fx_free(f); /* the per-tensor part alone also turns the stage costs on */
    f = stage_chain();
    for (int d = 0; d < f->c->n_devs; d++)
        f->c->devs[d].stage_tensor_s = 0.1;
    assert_close(sim(f, PL_CONTENTION_NONE, 1)->makespan_s, 6.1, 1e-12); /* gives out z */
    fx_free(f);
}

/* A weight read by ops of several stages is copied into each, and an op reading a copy first in
 * its stage, though not first in the model, reads it cold: its compute and the copy's bytes at
 * the cost model's memory rate one after the other, less its price (docs/simulator.md,
 * "Stages"). a(1)@gpu0, b(2)@gpu1, c(3)@gpu0 each read w (2000 B), chained by x and y; peak 1
 * FLOP/s at efficiency 1, memory 1000 B/s at efficiency 0.5: 4 s per copy. a, 1 FLOP, reads w
 * first; b, 2 FLOPs (compute-bound), pays 2 + 4 - 2 = 4; c, 1 FLOP in its 3 s (memory-bound),
 * 1 + 4 - 3 = 2. [a] 0.25 + 0.25 (x out), a [0, 1.5], x [1.5, 3]; b 0.25 + 0.5 + 4, [3, 9.75];
 * y [9.75, 11.25]; c 0.25 + 0.5 (y in, z out) + 2, [11.25, 17]. On gpu0 alone one stage reads
 * w once: 6 + 0.25 + 0.25 (z out) = 6.5. */
static void test_stage_copied_weights(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "w", "x");
    op(f, "b", "x,w", "y");
    op(f, "c", "y,w", "z");
    set_bytes(f, "w", 2000);
    f->g->tensors[tensor(f, "w")].flags |= PL_TENSOR_WEIGHT;
    pl_graph_add_output(f->g, tensor(f, "z"));
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 2), set_time(f, "c", 3);
    f->g->ops[id(f, "a")].flops = 1, f->g->ops[id(f, "b")].flops = 2;
    f->g->ops[id(f, "c")].flops = 1;
    stage_costs(f);
    f->k->params.eff_memory = 0.5;
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        f->k->params.eff_compute[c] = 1;
    for (int d = 0; d < f->c->n_devs; d++) {
        f->c->devs[d].mem_bandwidth_Bps = 1000, f->c->devs[d].launch_overhead_s = 0;
        for (int q = 0; q < PL_PREC_COUNT; q++)
            f->c->devs[d].peak_flops_per_s[q] = 1;
    }
    assert_close(sim(f, PL_CONTENTION_NONE, 1)->makespan_s, 6.5, 1e-12);
    place(f, "b", 1);
    assert_charges(f, 0.5, 4.75, 2.75);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(end(f, "b", 0), 9.75, 1e-12);
    assert_close(r->makespan_s, 17, 1e-12);
    int stage_of[3], dev[3], first[3];
    int ns = pl_plan_schedule_stages(f->g, f->p, stage_of, dev, first);
    assert_int_equal(ns, 3);
    pl_stage_io io[3];
    pl_plan_stage_io(f->g, stage_of, ns, io);
    double held = 0, copied = 0;
    for (int s = 0; s < ns; s++)
        held += io[s].weight_bytes, copied += io[s].copied_weight_bytes;
    assert_close(held, 6000, 0);
    assert_close(copied, 4000, 0);
    pl_stage_io_free(io, ns);
    fx_free(f);
}

/* A stage is priced for the tensors its stage file lists (pl_plan_stage_io), each once.
 * a(1)@gpu0 makes x; p@gpu0 (x → u), q@gpu1 (x, kv → w), r@gpu0 (x, u → v); k a Constant
 * whose value kv is a graph output, as are v and w. Stages [a] (sends x), [p, r] (x from [a]
 * on the same device: no cut at r), [q]. [a] gives x: 0.25 + 0.25. [p, r] takes x once
 * although q, on another stage, reads it between p and r in op order, and gives v: 0.25 +
 * 0.5. k is held by its first reader's stage, [q], which also gives its value out: [q] takes
 * x, gives w and kv: 0.25 + 0.75. */
static void test_stage_io_is_the_split_files(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "p", "x", "u");
    int k = tu_op(f->g, "k", "Constant", "", "kv");
    set_bytes(f, "kv", 1000);
    op(f, "q", "x,kv", "w");
    op(f, "r", "x,u", "v");
    pl_graph_add_output(f->g, tensor(f, "kv"));
    pl_graph_add_output(f->g, tensor(f, "v"));
    pl_graph_add_output(f->g, tensor(f, "w"));
    build(f, 2);
    place(f, "q", 1);
    f->p->dev[k] = 1;
    stage_costs(f);
    double extra[5];
    assert_true(pl_sim_stage_s(f->k, f->p, extra));
    assert_close(extra[id(f, "a")], 0.5, 1e-12);
    assert_close(extra[id(f, "p")], 0.75, 1e-12);
    assert_close(extra[id(f, "q")], 1, 1e-12);
    assert_true(extra[id(f, "r")] == 0 && extra[k] == 0);
    fx_free(f);
}

/* Diamond: a(1)@0 → x → b(2)@0 and c(3)@1; d(1)@0 reads y (from b) and z (from c).
 * x → gpu1 [1, 2.5]; b [1, 3]; c [2.5, 5.5]; z → gpu0 [5.5, 7]; d [7, 8]. Path a, c, d. */
static void test_diamond(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    op(f, "c", "x", "z");
    op(f, "d", "y,z", "out");
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 2), set_time(f, "c", 3), set_time(f, "d", 1);
    place(f, "c", 1);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(start(f, "b", 0), 1, 1e-12);
    assert_close(start(f, "c", 0), 2.5, 1e-12);
    assert_close(start(f, "d", 0), 7, 1e-12);
    assert_close(r->makespan_s, 8, 1e-12);
    assert_int_equal(r->n_xfers, 2);
    assert_path(f, "a,c,d");
    assert_close(r->busy_s[0], 4, 1e-12);
    assert_close(r->busy_s[1], 3, 1e-12);
    fx_free(f);
}

/* Fork-join over 3 devices: a(1)@0 → x → b0@0, b1@1, b2@2 (2 s each) → j(1)@0.
 * NONE: x to gpu1 and gpu2 both [1, 2.5]; b1, b2 [2.5, 4.5]; y1, y2 → gpu0 [4.5, 6]; j [6, 7].
 * PAIR: the same (all four transfers are on different pairs): 7.
 * PORTS: gpu0 sends x once at a time: to gpu1 [1, 2.5] (tie on readiness: lower destination
 * first), to gpu2 [2.5, 4]; b1 [2.5, 4.5], b2 [4, 6]; y1 → gpu0 [4.5, 6]; y2 waits for gpu0's
 * receive port: [6, 7.5]; j [7.5, 8.5]. */
static fx *fork_join(void)
{
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b0", "x", "y0");
    op(f, "b1", "x", "y1");
    op(f, "b2", "x", "y2");
    op(f, "j", "y0,y1,y2", "out");
    build(f, 3);
    set_time(f, "a", 1), set_time(f, "j", 1);
    set_time(f, "b0", 2), set_time(f, "b1", 2), set_time(f, "b2", 2);
    place(f, "b1", 1), place(f, "b2", 2);
    return f;
}

static void test_fork_join_contention(void **state)
{
    (void)state;
    fx *f = fork_join();
    assert_close(sim(f, PL_CONTENTION_NONE, 1)->makespan_s, 7, 1e-12);
    assert_close(start(f, "b2", 0), 2.5, 1e-12);
    assert_close(sim(f, PL_CONTENTION_PAIR, 1)->makespan_s, 7, 1e-12);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 8.5, 1e-12);
    assert_close(start(f, "b1", 0), 2.5, 1e-12);
    assert_close(start(f, "b2", 0), 4, 1e-12);
    assert_close(start(f, "j", 0), 7.5, 1e-12);
    assert_int_equal(r->n_xfers, 4);
    assert_path(f, "a,b2,j");
    fx_free(f);
}

/* Two tensors from gpu0 to gpu1 share the pair: a(1)@0 writes x1, x2; b(1)@1 reads both.
 * NONE: both [1, 2.5]; b [2.5, 3.5]. PAIR and PORTS: x1 [1, 2.5], x2 [2.5, 4]; b [4, 5]. */
static void test_pair_serialises(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x1,x2");
    op(f, "b", "x1,x2", "y");
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 1);
    place(f, "b", 1);
    assert_close(sim(f, PL_CONTENTION_NONE, 1)->makespan_s, 3.5, 1e-12);
    assert_close(sim(f, PL_CONTENTION_PAIR, 1)->makespan_s, 5, 1e-12);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 5, 1e-12);
    fx_free(f);
}

/* PAIR and PORTS differ: a(1)@0 sends x to b(1)@1 and y to c(1)@2. PAIR: two pairs, in
 * parallel [1, 2.5], so 3.5. PORTS: one send port, x first (lower tensor index on a tie):
 * [1, 2.5] then y [2.5, 4]; c [4, 5]: 5. */
static void test_pair_vs_ports(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x,y");
    op(f, "b", "x", "u");
    op(f, "c", "y", "v");
    build(f, 3);
    set_time(f, "a", 1), set_time(f, "b", 1), set_time(f, "c", 1);
    place(f, "b", 1), place(f, "c", 2);
    assert_close(sim(f, PL_CONTENTION_PAIR, 1)->makespan_s, 3.5, 1e-12);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 5, 1e-12);
    assert_close(start(f, "c", 0), 4, 1e-12);
    fx_free(f);
}

/* a(1)@0 writes x, read by b(1) and c(1), both on gpu1. */
static fx *two_readers(void)
{
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "u");
    op(f, "c", "x", "v");
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 1), set_time(f, "c", 1);
    place(f, "b", 1), place(f, "c", 1);
    return f;
}

/* x is sent to gpu1 once: one transfer, 1000 bytes on the link. b then c (tie at 2.5 on
 * readiness, broken by topological index): 2.5 + 1 + 1 = 4.5. */
static void test_sent_once(void **state)
{
    (void)state;
    fx *f = two_readers();
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_int_equal(r->n_xfers, 1);
    assert_int_equal(r->xfers[0].reader, -1);
    assert_close(r->link_bytes[1], 1000, 1e-12);
    assert_close(start(f, "b", 0), 2.5, 1e-12);
    assert_close(start(f, "c", 0), 3.5, 1e-12);
    assert_close(r->makespan_s, 4.5, 1e-12);
    /* gpu1 holds x [1, 4.5) and u [2.5, 3.5) or v [3.5, 4.5): 2000 at most. */
    assert_close(r->peak_mem_bytes[1], 2000, 1e-12);
    fx_free(f);
}

/* Per edge, x goes to gpu1 once for b and once for c, one after the other on gpu0's send
 * port (tie on readiness: b first, by topological position): x→b [1, 2.5], x→c [2.5, 4];
 * b [2.5, 3.5], c [4, 5]: 5 (4.5 when sent once). gpu1 holds b's copy [1, 3.5), c's copy
 * [2.5, 5) and u [2.5, 3.5): 3000 at most (2000 when sent once: x [1, 4.5) and u or v). */
static void test_per_edge(void **state)
{
    (void)state;
    fx *f = two_readers();
    const pl_sim_result *r = sim_opts(f, PL_CONTENTION_PORTS, 1, true);
    assert_int_equal(r->n_xfers, 2);
    assert_int_equal(r->xfers[0].reader, id(f, "b"));
    assert_int_equal(r->xfers[1].reader, id(f, "c"));
    assert_close(r->xfers[1].start_s, 2.5, 1e-12);
    assert_close(r->link_bytes[1], 2000, 1e-12);
    assert_close(start(f, "c", 0), 4, 1e-12);
    assert_close(r->makespan_s, 5, 1e-12);
    assert_close(r->peak_mem_bytes[1], 3000, 1e-12);
    /* Without contention both copies travel at once: b [2.5, 3.5], c [3.5, 4.5]. */
    assert_close(sim_opts(f, PL_CONTENTION_NONE, 1, true)->makespan_s, 4.5, 1e-12);
    /* Two requests, per edge: every figure still passes the checker. */
    sim_opts(f, PL_CONTENTION_PORTS, 2, true);
    assert_int_equal(f->r.n_xfers, 4);
    fx_free(f);
}

/* ---- transfer order ---- */

/* gpu0 runs a(1) then a2(1); a's x goes to b(1)@1, a2's y to c(3)@2, both over gpu0's send
 * port. FIFO: x is ready first: x [1, 2.5], y waits: [2.5, 4], c [4, 7]: 7. The order y
 * before x makes the port wait from 1 to 2 with x ready: y [2, 3.5], x [3.5, 5], c [3.5, 6.5],
 * b [5, 6]: 6.5, half a second better. Under `pair` the two are on different channels and
 * the order costs nothing: x [1, 2.5], y [2, 3.5]: 6.5 either way. */
static fx *two_sends(void)
{
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "a2", "", "y");
    op(f, "b", "x", "u");
    op(f, "c", "y", "v");
    build(f, 3);
    set_time(f, "a", 1), set_time(f, "a2", 1), set_time(f, "b", 1), set_time(f, "c", 3);
    place(f, "b", 1), place(f, "c", 2);
    return f;
}

/* Transfer priorities: `first` before every other edge. */
static void xfer_first(fx *f, const char *t, const char *dst)
{
    double *pr = calloc(f->g->n_edges + 1, sizeof *pr);
    for (int e = 0; e < f->g->n_edges; e++)
        pr[e] = 1;
    pr[tu_edge(f->g, t, dst)] = 0;
    pl_plan_set_xfer_priority(f->p, f->g->n_edges, pr);
    free(pr);
}

static void test_xfer_order_strict(void **state)
{
    (void)state;
    fx *f = two_sends();
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 7, 1e-12);
    assert_close(start(f, "c", 0), 4, 1e-12);
    xfer_first(f, "y", "c");
    r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 6.5, 1e-12);
    assert_close(r->xfers[0].start_s, 2, 1e-12); /* y: the port waited with x ready at 1 */
    assert_string_equal(f->g->tensors[r->xfers[0].tensor].name, "y");
    assert_close(start(f, "b", 0), 5, 1e-12);
    assert_close(sim(f, PL_CONTENTION_PAIR, 1)->makespan_s, 6.5, 1e-12);
    assert_close(start(f, "b", 0), 2.5, 1e-12);
    /* Per edge the same (each tensor has one reader); and each request keeps the order. */
    assert_close(sim_opts(f, PL_CONTENTION_PORTS, 1, true)->makespan_s, 6.5, 1e-12);
    sim(f, PL_CONTENTION_PORTS, 3);
    fx_free(f);
}

/* a(1)@0 → x1 → b(1)@1 → y → c(1)@0 → x2 → d(1)@1: gpu0's send port carries x1 then x2
 * (FIFO: a [0, 1], x1 [1, 2.5], b [2.5, 3.5], y [3.5, 5], c [5, 6], x2 [6, 7.5], d [7.5, 8.5]).
 * The order x2 before x1 can never run: x2 needs c, which needs x1. */
static void test_xfer_order_deadlock(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x1");
    op(f, "b", "x1", "y");
    op(f, "c", "y", "x2");
    op(f, "d", "x2", "z");
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 1), set_time(f, "c", 1), set_time(f, "d", 1);
    place(f, "b", 1), place(f, "d", 1);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 8.5, 1e-12);
    xfer_first(f, "x2", "d");
    pl_sim_result_free(&f->r); /* pl_simulate below starts from a blank result */
    f->have_r = false;
    pl_sim_opts o = {0};
    pl_err err = {""};
    assert_int_equal(pl_simulate(f->k, f->p, &o, &f->r, &err), -1);
    assert_contains(err.msg, "the plan's transfer order deadlocks: on the send port of 'gpu0', "
                             "the transfer of 'x1' to 'gpu1' is ready but waits forever for the "
                             "transfer of 'x2' to 'gpu1', listed before it, which never runs "
                             "(op 'c', which makes its tensor, never runs)");
    /* Also with the op order given (the transfer order is named, not the op order). */
    int seq[] = {id(f, "a"), id(f, "b"), id(f, "c"), id(f, "d")};
    pl_plan_set_order(f->p, seq);
    o.per_edge = true;
    assert_int_equal(pl_simulate(f->k, f->p, &o, &f->r, &err), -1);
    assert_contains(err.msg, "transfer order deadlocks");
    assert_contains(err.msg, "'x1' to 'gpu1' (for op 'b')");
    /* Under `none` the transfer order is ignored. */
    o.contention = PL_CONTENTION_NONE;
    assert_int_equal(pl_simulate(f->k, f->p, &o, &f->r, &err), 0);
    f->have_r = true;
    assert_close(f->r.makespan_s, 8.5, 1e-12);
    fx_free(f);
}

/* Zero latency: a(1)@0 writes x (1000 B: 1 s) and z (0 B: 0 s); b(1)@1 reads x, c(1)@1 z.
 * z's transfer holds no port: it completes at 1 while x holds both ports [1, 2], so c runs
 * [1, 2] and b [2, 3]: 3. (Were z to queue behind x, c would wait until 2 and end at 4.) */
static void test_zero_time_xfer(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x,z");
    op(f, "b", "x", "u");
    op(f, "c", "z", "v");
    set_bytes(f, "z", 0);
    build(f, 2);
    for (int i = 0; i < 4; i++)
        f->c->lat_s[i] = 0;
    set_time(f, "a", 1), set_time(f, "b", 1), set_time(f, "c", 1);
    place(f, "b", 1), place(f, "c", 1);
    for (int cont = 0; cont < 3; cont++) {
        const pl_sim_result *r = sim(f, (pl_contention)cont, 1);
        assert_close(start(f, "c", 0), 1, 1e-12);
        assert_close(r->makespan_s, 3, 1e-12);
    }
    /* Nor does it take a place in a transfer order: z last changes nothing. */
    xfer_first(f, "x", "b");
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 3, 1e-12);
    fx_free(f);
}

/* The checker: a FIFO run against a plan whose transfer order it broke; a per-device run
 * checked as per-edge; a per-edge run whose reader was tampered. */
static void test_checker_xfer_order(void **state)
{
    (void)state;
    fx *f = two_sends();
    sim(f, PL_CONTENTION_PORTS, 1); /* x [1, 2.5], y [2.5, 4] */
    xfer_first(f, "y", "c");
    pl_sim_opts o = {.record = true};
    char why[512];
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "the send port of 'gpu0' starts the transfer of 'x' to 'gpu1' at 1 s, "
                         "before the transfer of 'y' to 'gpu2', listed before it in the plan's "
                         "transfer order, ends at 4 s (request 0)");
    o.contention = PL_CONTENTION_PAIR; /* different channels: no order between them */
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), 0);
    o.contention = PL_CONTENTION_PORTS;
    pl_plan_set_xfer_priority(f->p, 0, NULL);
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), 0);
    o.per_edge = true;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "for no reader, but per_edge sends once per reading op");
    sim_opts(f, PL_CONTENTION_PORTS, 1, true);
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), 0);
    f->r.xfers[0].reader = id(f, "a");
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "for an op that does not read it there");
    o.per_edge = false;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "for one reader, but transfers are per device");
    fx_free(f);
}

/* ---- memory ---- */

/* One device: graph input in (100 B) → a (weight w1, 1000 B) → x (200 B) → b (weight w2,
 * 2000 B) → y (300 B, graph output); 1 s each. Weights 3000 resident. [0, 1): in + x = 300;
 * [1, 2): x + y = 500 (in freed when a ends, x when b ends, y held to the end). Peak 3500. */
/* a (in, w1 -> x) then b (x, w2 -> y), 1 s each, on two devices: in 100 bytes, w1 1000,
 * x 200, w2 2000, y 300; w1 and w2 weights, in the graph's input, y its output. */
static fx *weights_pair(void)
{
    fx *f = fx_new();
    op(f, "a", "in,w1", "x");
    op(f, "b", "x,w2", "y");
    set_bytes(f, "in", 100), set_bytes(f, "w1", 1000), set_bytes(f, "x", 200);
    set_bytes(f, "w2", 2000), set_bytes(f, "y", 300);
    f->g->tensors[tensor(f, "w1")].flags |= PL_TENSOR_WEIGHT;
    f->g->tensors[tensor(f, "w2")].flags |= PL_TENSOR_WEIGHT;
    pl_graph_add_input(f->g, tensor(f, "in"));
    pl_graph_add_output(f->g, tensor(f, "y"));
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 1);
    return f;
}

static void test_memory_one_device(void **state)
{
    (void)state;
    fx *f = weights_pair();
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->peak_mem_bytes[0], 3500, 1e-12);
    assert_true(r->peak_mem_bytes[1] == 0);
    assert_false(r->oom);
    /* b on gpu1: w2 is resident there instead, and x is received. */
    place(f, "b", 1);
    r = sim(f, PL_CONTENTION_PORTS, 1);
    /* gpu0: w1 + in [0,1) + x [0, 1.7): 1000 + 300 = 1300. gpu1: w2 + x [1, 2.7) + y [1.7, 2.7). */
    assert_close(r->makespan_s, 1 + 0.7 + 1, 1e-12);
    assert_close(r->peak_mem_bytes[0], 1300, 1e-12);
    assert_close(r->peak_mem_bytes[1], 2500, 1e-12);
    fx_free(f);
}

/* Memory over time (pl_sim_memory_curve, drawn by `placer report`): test_memory_one_device's
 * second plan, a on gpu0 (0 to 1 s), x sent in 0.7 s (1 to 1.7), b on gpu1 (1.7 to 2.7).
 *   gpu0: w1 1000 + in 100 [0, 1) + x 200 [0, 1.7): 1300 at 0, 1200 at 1, 1000 at 1.7.
 *   gpu1: w2 2000; x received [1, 2.7), y [1.7, 2.7): 2000 at 0, 2200 at 1, 2500 at 1.7,
 *   2000 at 2.7. Each curve's largest step is the simulator's peak. */
static void test_memory_curve(void **state)
{
    (void)state;
    fx *f = weights_pair();
    place(f, "b", 1);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    pl_mem_step *st;
    int n;
    pl_err err = {""};
    pl_sim_opts o = {.record = true};
    if (pl_sim_memory_curve(f->k, f->p, &o, r, &st, &n, &err) < 0) fail_msg("%s", err.msg);
    const pl_mem_step want[] = {{0, 0, 1300}, {0, 1, 1200},   {0, 1.7, 1000}, {1, 0, 2000},
                                {1, 1, 2200}, {1, 1.7, 2500}, {1, 2.7, 2000}};
    assert_int_equal(n, 7);
    for (int i = 0; i < n; i++) {
        assert_int_equal(st[i].dev, want[i].dev);
        assert_close(st[i].t_s, want[i].t_s, 1e-12);
        assert_close(st[i].bytes, want[i].bytes, 1e-12);
    }
    free(st);
    /* a run that fails its check has no curve */
    f->r.op_end_s[id(f, "b")] = 1.8;
    assert_int_equal(pl_sim_memory_curve(f->k, f->p, &o, &f->r, &st, &n, &err), -1);
    assert_non_null(strstr(err.msg, "no memory curve"));
    fx_free(f);
}

/* Two devices: a(1)@0 writes x (200 B) for b(1)@1 and c(2)@0; b writes y (70 B), c writes
 * z (50 B), both graph outputs. x → gpu1 takes 0.5 + 0.2 = 0.7: [1, 1.7]; b [1.7, 2.7];
 * c [1, 3]. gpu0: x [0, 3) (its last reader c), z [1, 3): peak 250. gpu1: received x
 * [1, 2.7), y [1.7, 3) (held to the end): 270 over [1.7, 2.7). */
static fx *memory_graph(void)
{
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    op(f, "c", "x", "z");
    set_bytes(f, "x", 200), set_bytes(f, "y", 70), set_bytes(f, "z", 50);
    pl_graph_add_output(f->g, tensor(f, "y"));
    pl_graph_add_output(f->g, tensor(f, "z"));
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 1), set_time(f, "c", 2);
    place(f, "b", 1);
    return f;
}

static void test_memory_two_devices(void **state)
{
    (void)state;
    fx *f = memory_graph();
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 3, 1e-12);
    assert_close(r->peak_mem_bytes[0], 250, 1e-12);
    assert_close(r->peak_mem_bytes[1], 270, 1e-12);
    fx_free(f);
}

/* The same with gpu1 holding 250 bytes: 20 over. Ignoring memory reports the peak only. */
static void test_oom(void **state)
{
    (void)state;
    fx *f = memory_graph();
    f->c->devs[1].memory_bytes = 250;
    pl_sim_opts o = {.record = true};
    pl_err err = {""};
    assert_int_equal(pl_simulate(f->k, f->p, &o, &f->r, &err), 0);
    f->have_r = true;
    assert_true(f->r.oom);
    assert_int_equal(f->r.oom_dev, 1);
    assert_close(f->r.oom_excess_bytes, 20, 1e-12);
    char why[256];
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "gpu1");
    assert_contains(why, "20 over");
    pl_sim_result_free(&f->r);
    o.ignore_memory = true;
    assert_int_equal(pl_simulate(f->k, f->p, &o, &f->r, &err), 0);
    assert_false(f->r.oom);
    assert_int_equal(f->r.oom_dev, -1);
    assert_close(f->r.peak_mem_bytes[1], 270, 1e-12);
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), 0);
    fx_free(f);
}

/* The example diamond task graph on one device, 1 s per op (a, b, c, d in that order), in
 * MiB: weights a 4 + c 16 = 20; image [0, 1) 2; a:0 [0, 3) 1; b->d [1, 4) 1; c->d [2, 4) 1;
 * result [3, 4) 1; c's working memory [2, 3) 8. Peak over [2, 3): 20 + 1 + 1 + 1 + 8 = 31. */
static void test_memory_taskgraph(void **state)
{
    (void)state;
    fx *f = calloc(1, sizeof *f);
    pl_err err = {""};
    f->g = pl_taskgraph_load("examples/taskgraphs/diamond.json", NULL, &err);
    if (!f->g) fail_msg("%s", err.msg);
    f->c = pl_cluster_new("one");
    pl_cluster_add_device(f->c, "gpu0", PL_DEV_GPU, "V100");
    if (pl_cluster_finalize(f->c, &err) < 0) fail_msg("%s", err.msg);
    f->k = pl_cost_new(f->g, f->c, NULL, NULL, 0, &err);
    if (!f->k) fail_msg("%s", err.msg);
    f->p = pl_plan_new(f->g->n_ops, 1);
    for (int i = 0; i < f->g->n_ops; i++)
        f->k->op_s[i] = 1;
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 4, 1e-12);
    assert_close(r->peak_mem_bytes[0], 31.0 * 1024 * 1024, 1e-12);
    fx_free(f);
}

/* ---- order and priority ---- */

/* An order listing b before a, which it reads from, can never run. */
static void test_order_deadlock(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    build(f, 1);
    set_time(f, "a", 1), set_time(f, "b", 1);
    int seq[] = {id(f, "b"), id(f, "a")};
    pl_plan_set_order(f->p, seq);
    pl_sim_opts o = {0};
    pl_err err = {""};
    assert_int_equal(pl_simulate(f->k, f->p, &o, &f->r, &err), -1);
    assert_contains(err.msg, "deadlocks");
    assert_contains(err.msg, "gpu0");
    assert_contains(err.msg, "op 'b' waits forever");
    assert_contains(err.msg, "'a'");
    fx_free(f);
}

/* gpu0 has c(3), independent, and a(1) whose x feeds d(1) on gpu1. c comes first in the
 * file. First-ready: both ready at 0, tie by topological index: c [0, 3], a [3, 4],
 * x [4, 5.5], d [5.5, 6.5]. Priority a < c (or the order a, c): a [0, 1], x [1, 2.5],
 * d [2.5, 3.5], c [1, 4]: makespan 4. */
static void test_priority_vs_fifo(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "c", "", "u");
    op(f, "a", "", "x");
    op(f, "d", "x", "v");
    build(f, 2);
    set_time(f, "c", 3), set_time(f, "a", 1), set_time(f, "d", 1);
    place(f, "d", 1);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 6.5, 1e-12);
    assert_path(f, "c,a,d");
    f->p->priority = calloc(3, sizeof(double));
    f->p->priority[id(f, "c")] = 1;
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 4, 1e-12);
    assert_path(f, "a,c");
    free(f->p->priority);
    f->p->priority = NULL;
    int seq[] = {id(f, "a"), id(f, "c"), id(f, "d")};
    pl_plan_set_order(f->p, seq);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 4, 1e-12);
    fx_free(f);
}

/* The order is strict: gpu0 runs c then a, although a is ready at 0 too. */
static void test_order_strict(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    op(f, "c", "", "z");
    build(f, 2);
    set_time(f, "a", 1), set_time(f, "b", 1), set_time(f, "c", 1);
    place(f, "b", 1);
    /* gpu0 runs c, then a, although first-ready would pick a (lower topological index):
     * c [0, 1], a [1, 2], x [2, 3.5], b [3.5, 4.5]. */
    int seq[] = {id(f, "c"), id(f, "a"), id(f, "b")};
    pl_plan_set_order(f->p, seq);
    sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(start(f, "a", 0), 1, 1e-12);
    assert_close(f->r.makespan_s, 2 + 1.5 + 1, 1e-12);
    fx_free(f);
}

/* ---- throughput ---- */

/* Two stages: a(2)@0 → x (1.5 s) → b(3)@1, three requests.
 * r0: a [0, 2], x [2, 3.5], b [3.5, 6.5]; r1: a [2, 4], x [4, 5.5], b [6.5, 9.5];
 * r2: a [4, 6], x [6, 7.5], b [9.5, 12.5]. Period (12.5 − 6.5) / 2 = 3, the slow stage;
 * latencies 6.5, 7.5, 8.5: mean 7.5. */
static void test_throughput_pipeline(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "b", "x", "y");
    build(f, 2);
    set_time(f, "a", 2), set_time(f, "b", 3);
    place(f, "b", 1);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 3);
    assert_int_equal(r->requests, 3);
    assert_close(r->makespan_s, 12.5, 1e-12);
    assert_close(r->period_s, 3, 1e-12);
    assert_close(r->latency_s, 7.5, 1e-12);
    assert_close(start(f, "a", 2), 4, 1e-12);
    assert_close(start(f, "b", 1), 6.5, 1e-12);
    assert_int_equal(r->n_xfers, 3);
    assert_close(r->busy_s[1], 9, 1e-12);
    /* With the plan's order the same holds: each request follows it on each device. */
    int seq[] = {id(f, "a"), id(f, "b")};
    pl_plan_set_order(f->p, seq);
    assert_close(sim(f, PL_CONTENTION_PORTS, 3)->period_s, 3, 1e-12);
    fx_free(f);
}

/* ---- I/O device ---- */

/* gpu2 is the I/O device: input in (1000 B) goes to a(1)@0 [0, 1.5], a [1.5, 2.5], the output
 * returns [2.5, 4]: makespan 4. Without an I/O device: 1. */
static void test_io_device(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "in", "out");
    pl_graph_add_input(f->g, tensor(f, "in"));
    pl_graph_add_output(f->g, tensor(f, "out"));
    build(f, 3);
    set_time(f, "a", 1);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 1, 1e-12);
    f->c->io_device = 2;
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_close(r->makespan_s, 4, 1e-12);
    assert_int_equal(r->n_xfers, 2);
    assert_close(start(f, "a", 0), 1.5, 1e-12);
    /* gpu2 holds in [0, 1.5) and out [2.5, 4): 1000 at most. */
    assert_close(r->peak_mem_bytes[2], 1000, 1e-12);
    assert_path(f, "a");
    /* Placed on the I/O device itself: nothing moves. */
    place(f, "a", 2);
    assert_close(sim(f, PL_CONTENTION_PORTS, 1)->makespan_s, 1, 1e-12);
    assert_int_equal(f->r.n_xfers, 0);
    fx_free(f);
}

/* ---- weights and Constant ---- */

/* A Constant's value is a weight: resident on each device that reads it, never sent, and its
 * readers do not wait for the Constant op. k(5)@1 makes w (500 B); a(1)@0 reads w and starts
 * at 0; b@1 reads w and x: x → gpu1 [1, 2.5], but gpu1 runs k until 5: b [5, 6].
 * gpu0: w + x [0, 2.5) = 1500. gpu1: w + x [1, 6) + y [5, 6) = 2500. */
static void test_constant_resident(void **state)
{
    (void)state;
    fx *f = fx_new();
    int k = pl_graph_add_op(f->g, "k", "Constant", "");
    int w = tensor(f, "w");
    set_bytes(f, "w", 500);
    f->g->tensors[w].flags |= PL_TENSOR_WEIGHT;
    pl_op_add_output(f->g, k, w);
    op(f, "a", "w", "x");
    op(f, "b", "w,x", "y");
    build(f, 2);
    set_time(f, "k", 5), set_time(f, "a", 1), set_time(f, "b", 1);
    place(f, "k", 1), place(f, "b", 1);
    const pl_sim_result *r = sim(f, PL_CONTENTION_PORTS, 1);
    assert_int_equal(r->n_xfers, 1); /* x only */
    assert_close(start(f, "a", 0), 0, 1e-12);
    assert_close(start(f, "b", 0), 5, 1e-12);
    assert_close(r->makespan_s, 6, 1e-12);
    assert_close(r->peak_mem_bytes[0], 1500, 1e-12);
    assert_close(r->peak_mem_bytes[1], 2500, 1e-12);
    fx_free(f);
}

/* ---- refusals ---- */

static void test_refusals(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    build(f, 2);
    set_time(f, "a", INFINITY);
    pl_err err = {""};
    assert_int_equal(pl_simulate(f->k, f->p, NULL, &f->r, &err), -1);
    assert_contains(err.msg, "cannot run on device 'gpu0'");
    set_time(f, "a", 1);
    f->p->dev[0] = 7;
    assert_int_equal(pl_simulate(f->k, f->p, NULL, &f->r, &err), -1);
    assert_contains(err.msg, "does not exist");
    f->p->dev[0] = 0;
    pl_sim_opts o = {.requests = -2};
    assert_int_equal(pl_simulate(f->k, f->p, &o, &f->r, &err), -1);
    fx_free(f);
}

/* ---- checker ---- */

/* Real results pass (every sim() call checks); corrupted ones are caught with words. */
static void test_checker_catches(void **state)
{
    (void)state;
    fx *f = fork_join();
    place(f, "b0", 0);
    pl_sim_opts o = {.record = true};
    sim(f, PL_CONTENTION_PORTS, 1);
    char why[512];
    /* b0 runs [1, 3] on gpu0 and j [7.5, 8.5]: move j onto b0's time. */
    pl_sim_result *r = &f->r;
    int j = id(f, "j");
    double s = r->op_start_s[j], e = r->op_end_s[j];
    r->op_start_s[j] = 1.5, r->op_end_s[j] = 2.5;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, r, why, sizeof why), -1);
    assert_contains(why, "'j'"); /* its inputs arrive later: precedence */
    r->op_start_s[j] = s, r->op_end_s[j] = e;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, r, why, sizeof why), 0);
    /* x to gpu2 went [2.5, 4], after x to gpu1 [1, 2.5]: make both use gpu0's send port at
     * once. PORTS forbids it; PAIR allows it (two pairs), and nothing else breaks. */
    for (int i = 0; i < r->n_xfers; i++)
        if (r->xfers[i].from == 0 && r->xfers[i].to == 2)
            r->xfers[i].start_s -= 1.5, r->xfers[i].end_s -= 1.5;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, r, why, sizeof why), -1);
    assert_contains(why, "overlap on the send port of 'gpu0'");
    o.contention = PL_CONTENTION_PAIR;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, r, why, sizeof why), 0);
    /* A transfer that starts before its tensor is made. */
    r->xfers[0].start_s -= 0.5, r->xfers[0].end_s -= 0.5;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, r, why, sizeof why), -1);
    assert_contains(why, "before it is made");
    fx_free(f);
}

/* An overlap of two ops with no data between them. */
static void test_checker_overlap(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a", "", "x");
    op(f, "c", "", "z");
    build(f, 1);
    set_time(f, "a", 1), set_time(f, "c", 3);
    pl_sim_opts o = {.record = true};
    sim(f, PL_CONTENTION_PORTS, 1);
    int c = id(f, "c");
    f->r.op_start_s[c] -= 0.5, f->r.op_end_s[c] -= 0.5;
    char why[512];
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "overlap on device 'gpu0'");
    f->r.op_start_s[c] += 0.5, f->r.op_end_s[c] += 0.5;
    f->r.makespan_s = 99;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "makespan");
    f->r.makespan_s = 4;
    f->r.peak_mem_bytes[0] += 1;
    assert_int_equal(pl_sim_check(f->k, f->p, &o, &f->r, why, sizeof why), -1);
    assert_contains(why, "not the");
    fx_free(f);
}

/* ---- trace ---- */

static void test_trace(void **state)
{
    (void)state;
    fx *f = fx_new();
    op(f, "a \"quoted\"\n", "", "x\\y");
    op(f, "b", "x\\y", "z");
    build(f, 2);
    set_time(f, "a \"quoted\"\n", 1e-3), set_time(f, "b", 2e-3);
    place(f, "b", 1);
    sim(f, PL_CONTENTION_PORTS, 1);
    char path[256];
    snprintf(path, sizeof path, "%s", tu_tmpfile("", 0, ".json"));
    pl_err err = {""};
    if (pl_sim_trace_write(f->k, f->p, &f->r, path, &err) < 0) fail_msg("%s", err.msg);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) fail_msg("trace does not parse: %s (line %d)", je.text, je.line);
    json_t *ev = json_object_get(root, "traceEvents");
    int ops = 0, xfers = 0, names = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!strcmp(ph, "X") && json_integer_value(json_object_get(e, "pid")) == 1) {
            ops++;
            if (!strcmp(name, "a \"quoted\"\n"))
                assert_close(json_number_value(json_object_get(e, "dur")), 1000, 1e-9);
        }
        if (!strcmp(ph, "X") && json_integer_value(json_object_get(e, "pid")) == 2) {
            xfers++;
            assert_string_equal(name, "x\\y");
            assert_close(json_number_value(json_object_get(e, "ts")), 1000, 1e-9);
        }
        if (!strcmp(ph, "M") && !strcmp(name, "thread_name")) {
            const char *n = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
            names += !strcmp(n, "gpu0\u2192gpu1") || !strcmp(n, "gpu0 (test)");
        }
    }
    assert_int_equal(ops, 2);
    assert_int_equal(xfers, 1);
    assert_int_equal(names, 2);
    json_decref(root);
    remove(path);
    fx_free(f);
}

/* ---- random graphs: every run must pass the checker ---- */

/* A random DAG: graph inputs, weights, unknown sizes, zero-time ops, ops with several
 * outputs, tensors read by several ops; random placement, links, I/O device, order or
 * priority, contention and request count. The checker recomputes everything it can from the
 * recorded times (including memory), so any disagreement with the event loop shows here. */
/* A random topological order: repeatedly a random op whose predecessors are all listed. */
static int *random_topo(const pl_graph *g, unsigned *s)
{
    int n = g->n_ops, *seq = malloc(n * sizeof *seq), *left = malloc(n * sizeof *left);
    for (int i = 0; i < n; i++)
        left[i] = g->pred_off[i + 1] - g->pred_off[i];
    for (int k = 0; k < n; k++) {
        int ready = 0, pick;
        for (int i = 0; i < n; i++)
            ready += left[i] == 0;
        pick = lcg_next(s) % ready;
        for (int i = 0; i < n; i++)
            if (left[i] == 0 && pick-- == 0) {
                seq[k] = i, left[i] = -1;
                for (int j = g->succ_off[i]; j < g->succ_off[i + 1]; j++)
                    left[g->succ[j]]--;
                break;
            }
    }
    free(left);
    return seq;
}

/* A transfer order that cannot deadlock with the op order `seq`: edges by their producer's
 * position in it (a producer never waits for a later one's data). */
static void random_xfer_order(fx *f, const int *seq)
{
    int n = f->g->n_ops, *pos = malloc((n + 1) * sizeof *pos);
    double *pr = malloc((f->g->n_edges + 1) * sizeof *pr);
    for (int i = 0; i < n; i++)
        pos[seq[i]] = i;
    for (int e = 0; e < f->g->n_edges; e++)
        pr[e] = pos[f->g->edges[e].src];
    pl_plan_set_xfer_priority(f->p, f->g->n_edges, pr);
    free(pos), free(pr);
}

/* Devices on two hosts sharing their memory, at random figures (`shared`), so that the
 * checker re-derives every stretched op from the recorded overlaps. */
static void random_share(fx *f, unsigned *s)
{
    for (int d = 0; d < f->c->n_devs; d++) {
        pl_device *v = &f->c->devs[d];
        free(v->host);
        v->host = strdup(lcg_next(s) % 3 ? "h0" : "h1");
        v->mem_bandwidth_Bps = 500 + lcg_next(s) % 1000;
        v->launch_overhead_s = (lcg_next(s) % 3) * 0.1;
        v->host_mem_bandwidth_Bps = lcg_next(s) % 4 ? 300 + lcg_next(s) % 1500 : 0;
        v->private_cache_bytes = lcg_next(s) % 2 ? lcg_next(s) % 2000 : 0;
        v->host_mem_stall_Bps = lcg_next(s) % 2 ? 200 + lcg_next(s) % 2000 : 0;
    }
    for (int i = 0; i < f->g->n_ops; i++)
        f->g->ops[i].bytes_moved = lcg_next(s) % 3000;
}

static void random_case(unsigned seed, bool shared)
{
    unsigned s = seed;
    fx *f = fx_new();
    int n = 1 + lcg_next(&s) % 24, n_t = 0;
    char name[32], ins[96], outs[64];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "in%d", i);
        int t = tensor(f, name);
        set_bytes(f, name, lcg_next(&s) % 3000);
        if (i == 2)
            f->g->tensors[t].flags |= PL_TENSOR_WEIGHT;
        else
            pl_graph_add_input(f->g, t);
    }
    for (int i = 0; i < n; i++) {
        ins[0] = outs[0] = 0;
        for (int k = lcg_next(&s) % 4; k > 0; k--) {
            int pick = lcg_next(&s) % (n_t + 3);
            snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s%s%d", ins[0] ? "," : "",
                     pick < 3 ? "in" : "t", pick < 3 ? pick : pick - 3);
        }
        for (int k = 1 + lcg_next(&s) % 2; k > 0; k--, n_t++)
            snprintf(outs + strlen(outs), sizeof outs - strlen(outs), "%st%d", outs[0] ? "," : "",
                     n_t);
        snprintf(name, sizeof name, "op%d", i);
        op(f, name, ins, outs);
    }
    for (int t = 0; t < n_t; t++) {
        snprintf(name, sizeof name, "t%d", t);
        unsigned kind = lcg_next(&s) % 8;
        if (kind == 0)
            pl_tensor_set_shape(&f->g->tensors[tensor(f, name)], 0, -1, NULL);
        else
            set_bytes(f, name, kind == 1 ? 0 : lcg_next(&s) % 4000);
        if (lcg_next(&s) % 4 == 0) pl_graph_add_output(f->g, tensor(f, name));
    }
    int D = 1 + lcg_next(&s) % 4;
    build(f, D);
    for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++)
            if (a != b) {
                f->c->bw_Bps[a * D + b] = 500 + lcg_next(&s) % 2000;
                f->c->lat_s[a * D + b] = (lcg_next(&s) % 3) * 0.25;
            }
    if (lcg_next(&s) % 3 == 0) f->c->io_device = lcg_next(&s) % D;
    for (int i = 0; i < n; i++) {
        f->p->dev[i] = lcg_next(&s) % D;
        for (int d = 0; d < D; d++)
            f->k->op_s[(size_t)i * D + d] = (lcg_next(&s) % 5) * 0.5;
    }
    unsigned mode = lcg_next(&s) % 3;
    int *seq = random_topo(f->g, &s);
    if (lcg_next(&s) % 2) random_xfer_order(f, seq);
    if (mode == 1) {
        pl_plan_set_order(f->p, seq);
    } else if (mode == 2) {
        f->p->priority = malloc(n * sizeof(double));
        for (int i = 0; i < n; i++)
            f->p->priority[i] = lcg_next(&s) % 4;
    }
    free(seq);
    pl_contention cont = (pl_contention)(lcg_next(&s) % 3);
    int requests = 1 + lcg_next(&s) % 3;
    bool per_edge = lcg_next(&s) % 2;
    if (shared) random_share(f, &s);
    sim_opts(f, cont, requests, per_edge);
    fx_free(f);
}

static void test_random_graphs(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 2000; seed++)
        random_case(seed, false), random_case(seed, true);
}

/* ---- speed ---- */

/* 50,000 ops on 8 devices, each reading one or two of the 64 ops before it; placed in
 * contiguous blocks with a few strays, so there is real traffic. Prints the time. */
static void test_speed_50k(void **state)
{
    (void)state;
    enum { N = 50000, D = 8 };
    fx *f = fx_new();
    unsigned seed = 42;
    char name[32], ins[64], out[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "op%d", i), snprintf(out, sizeof out, "t%d", i);
        ins[0] = 0;
        if (i > 0) snprintf(ins, sizeof ins, "t%u", i - 1 - lcg_next(&seed) % (i < 64 ? i : 64));
        if (i > 1 && lcg_next(&seed) % 2)
            snprintf(ins + strlen(ins), sizeof ins - strlen(ins), ",t%u",
                     i - 1 - lcg_next(&seed) % (i < 64 ? i : 64));
        op(f, name, ins, out);
    }
    build(f, D);
    for (int i = 0; i < N; i++) {
        for (int d = 0; d < D; d++)
            f->k->op_s[(size_t)i * D + d] = 1e-5 * (1 + lcg_next(&seed) % 10);
        f->p->dev[i] = lcg_next(&seed) % 50 ? i / (N / D) : (int)(lcg_next(&seed) % D);
    }
    pl_sim_opts o = {0};
    pl_err err = {""};
    double best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = pl_now();
        if (pl_simulate(f->k, f->p, &o, &f->r, &err) < 0) fail_msg("%s", err.msg);
        best = fmin(best, pl_now() - t0);
        if (rep < 2) pl_sim_result_free(&f->r);
    }
    f->have_r = true;
    printf("    50,000 ops on 8 devices: %.1f ms, %ld events, %d-op critical path\n", best * 1e3,
           f->r.events, f->r.critical_len);
    assert_true(best < 2.0);        /* generous: sanitizer builds; the target (50 ms) is for -O2 */
    sim(f, PL_CONTENTION_PORTS, 1); /* and the checker agrees */
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_one_device),
        cmocka_unit_test(test_chain_two_devices),
        cmocka_unit_test(test_share_memory_bound),
        cmocka_unit_test(test_share_compute_bound),
        cmocka_unit_test(test_share_private_cache),
        cmocka_unit_test(test_share_stall),
        cmocka_unit_test(test_cold_idle),
        cmocka_unit_test(test_cold_kept_once),
        cmocka_unit_test(test_cold_keep),
        cmocka_unit_test(test_cold_or_stall),
        cmocka_unit_test(test_share_domains),
        cmocka_unit_test(test_stage_chain_two_devices),
        cmocka_unit_test(test_stage_copied_weights),
        cmocka_unit_test(test_stage_cuts),
        cmocka_unit_test(test_stage_tensor_cost),
        cmocka_unit_test(test_stage_io_is_the_split_files),
        cmocka_unit_test(test_diamond),
        cmocka_unit_test(test_fork_join_contention),
        cmocka_unit_test(test_pair_serialises),
        cmocka_unit_test(test_pair_vs_ports),
        cmocka_unit_test(test_sent_once),
        cmocka_unit_test(test_per_edge),
        cmocka_unit_test(test_xfer_order_strict),
        cmocka_unit_test(test_xfer_order_deadlock),
        cmocka_unit_test(test_zero_time_xfer),
        cmocka_unit_test(test_checker_xfer_order),
        cmocka_unit_test(test_memory_one_device),
        cmocka_unit_test(test_memory_curve),
        cmocka_unit_test(test_memory_two_devices),
        cmocka_unit_test(test_memory_taskgraph),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_order_deadlock),
        cmocka_unit_test(test_priority_vs_fifo),
        cmocka_unit_test(test_order_strict),
        cmocka_unit_test(test_throughput_pipeline),
        cmocka_unit_test(test_io_device),
        cmocka_unit_test(test_constant_resident),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_checker_catches),
        cmocka_unit_test(test_checker_overlap),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_random_graphs),
        cmocka_unit_test(test_speed_50k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
