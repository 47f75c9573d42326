/* test_place_lp.c: m-SCT (LP favourite children + memory-constrained list scheduling) and
 * METIS placement: the LP is solved and picks the heavy child; tiny plans sit between the
 * lower bound and the single-device makespan; METIS balances, keeps heavy edges uncut and
 * repairs memory; both place every op of the zoo in plans the simulator's checker accepts. */
#include "testutil.h"
#include "placer/place.h"
#include "../src/place/lp_common.h"
#include "../src/place/lp_sct.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V100 "V100-SXM2-16GB"

/* ---- building task graphs and clusters in code ---- */

typedef struct tg {
    char *buf;
    size_t len, cap;
    int n_nodes, n_edges;
} tg;

static void tg_printf(tg *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tg_printf(tg *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if ((size_t)n < t->cap - t->len) {
            t->len += n;
            return;
        }
        t->cap = 2 * (t->cap + n);
        t->buf = realloc(t->buf, t->cap);
    }
}

/* Nodes first (name, times per device model as JSON, weight bytes), then edges. */
static void tg_node_times(tg *t, const char *name, const char *times, double weight_bytes)
{
    if (t->n_nodes == 0) {
        t->cap = 1 << 12, t->buf = malloc(t->cap), t->len = 0;
        tg_printf(t, "{\"format\": \"placer-taskgraph/1\", \"name\": \"t\", \"nodes\": [");
    }
    tg_printf(t, "%s{\"name\": \"%s\", \"times_s\": {%s}", t->n_nodes ? "," : "", name, times);
    if (weight_bytes > 0) tg_printf(t, ", \"weight_bytes\": %.0f", weight_bytes);
    tg_printf(t, "}");
    t->n_nodes++;
}

static void tg_node(tg *t, const char *name, double time_s, double weight_bytes)
{
    char times[64];
    snprintf(times, sizeof times, "\"" V100 "\": %.9g", time_s);
    tg_node_times(t, name, times, weight_bytes);
}

static void tg_edge(tg *t, const char *from, const char *to, double bytes)
{
    tg_printf(t, "%s{\"from\": \"%s\", \"to\": \"%s\", \"bytes\": %.0f}",
              t->n_edges ? "," : "], \"edges\": [", from, to, bytes);
    t->n_edges++;
}

static pl_graph *tg_load(tg *t)
{
    tg_printf(t, t->n_edges ? "]}" : "]}");
    pl_err err = {""};
    pl_graph *g = pl_taskgraph_load_buffer(t->buf, t->len, "t.json", NULL, &err);
    if (!g) fail_msg("task graph refused: %s\n%s", err.msg, t->buf);
    free(t->buf);
    return g;
}

/* n V100s, every pair linked at bw; mem_bytes > 0 overrides device `small`'s memory. */
static pl_cluster *cluster(int n, double bw_Bps, int small, double mem_bytes)
{
    pl_cluster *c = pl_cluster_new("test");
    for (int d = 0; d < n; d++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", d);
        pl_cluster_add_device(c, name, PL_DEV_GPU, V100);
    }
    if (mem_bytes > 0) c->devs[small].memory_bytes = mem_bytes;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            pl_cluster_set_link(c, a, b, bw_Bps, 10e-6, true);
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("cluster: %s", err.msg);
    return c;
}

static pl_cost *cost(const pl_graph *g, const pl_cluster *c)
{
    return tu_cost(g, c);
}

/* Runs an algorithm through the registry; the plan must be complete. err gets warnings. */
static pl_plan *place(const char *algo, const pl_cost *k, double limit_s, pl_err *err)
{
    pl_place_opts o = {.seed = 1, .time_limit_s = limit_s};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    err->msg[0] = 0;
    const pl_algo *a = pl_algo_find(algo);
    assert_non_null(a);
    if (pl_place(a, k, &o, p, err) < 0) fail_msg("%s failed: %s", algo, err->msg);
    for (int i = 0; i < k->n_ops; i++) {
        assert_true(p->dev[i] >= 0 && p->dev[i] < k->n_devs);
    }
    return p;
}

/* Simulates with recording and runs the checker; returns the makespan. */
static double simulate_checked(const pl_cost *k, const pl_plan *p, const char *what)
{
    pl_sim_opts so = {.contention = PL_CONTENTION_PORTS, .record = true};
    pl_sim_result r;
    memset(&r, 0, sizeof r);
    pl_err err = {""};
    if (pl_simulate(k, p, &so, &r, &err) < 0) fail_msg("%s: simulate: %s", what, err.msg);
    char why[512] = "";
    if (pl_sim_check(k, p, &so, &r, why, sizeof why) < 0) fail_msg("%s: check: %s", what, why);
    assert_false(r.oom);
    double m = r.makespan_s;
    pl_sim_result_free(&r);
    return m;
}

static int op(const pl_graph *g, const char *name)
{
    int i = pl_graph_find_op(g, name);
    if (i < 0) fail_msg("no op %s", name);
    return i;
}

/* ---- m-SCT ---- */

/* a forks to b (1 GB) and c (1 MB): co-locating b with a saves 0.1 s of transfer. */
static pl_graph *heavy_fork(void)
{
    tg t = {0};
    tg_node(&t, "a", 1e-3, 0);
    tg_node(&t, "b", 10e-3, 0);
    tg_node(&t, "c", 10e-3, 0);
    tg_node(&t, "d", 1e-3, 0);
    tg_edge(&t, "a", "b", 1e9);
    tg_edge(&t, "a", "c", 1e6);
    tg_edge(&t, "b", "d", 1e6);
    tg_edge(&t, "c", "d", 1e6);
    return tg_load(&t);
}

static void test_sct_lp_picks_heavy_child(void **state)
{
    (void)state;
    pl_graph *g = heavy_fork();
    pl_cluster *c = cluster(4, 10e9, 0, 0);
    pl_cost *k = cost(g, c);
    int fav[4];
    lp_sct_info info;
    pl_err err = {""};
    assert_int_equal(lp_sct_favorites(k, 10, 0, fav, &info, &err), 0);
    assert_int_equal(info.status, LP_SCT_OPTIMAL);
    assert_string_equal(lp_sct_status_name(info.status), "optimal");
    assert_int_equal(fav[op(g, "a")], op(g, "b"));
    /* the LP optimum is at least the longest path of mean times (x >= 0) */
    assert_true(info.lp_makespan_s >= 12e-3 * (1 - 1e-6));
    pl_plan *p = place("m-sct", k, 10, &err);
    assert_string_equal(err.msg, ""); /* LP path: no warning */
    assert_int_equal(p->dev[op(g, "b")], p->dev[op(g, "a")]);
    assert_non_null(p->order);
    double m = simulate_checked(k, p, "heavy fork");
    assert_true(m >= pl_lower_bound(k) * (1 - 1e-9));
    assert_true(m < 0.1); /* never paid the 1 GB transfer */
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* The LP solver crashes (fault injected in its child process, common.h, "Isolated solves"): the
 * favourites come from the greedy matching, m-sct says why, and its plan is valid. */
static void test_sct_solver_crash(void **state)
{
    (void)state;
    pl_graph *g = heavy_fork();
    pl_cluster *c = cluster(4, 10e9, 0, 0);
    pl_cost *k = cost(g, c);
    pl_err err;
    setenv("PLACER_TEST_SOLVER_FAULT", "segv", 1);
    pl_plan *p = place("m-sct", k, 10, &err);
    unsetenv("PLACER_TEST_SOLVER_FAULT");
    if (!strstr(err.msg, "m-sct: warning: the LP solver crashed (SIGSEGV) after "))
        fail_msg("no warning: '%s'", err.msg);
    /* the heaviest pair is the greedy matching's first favourite */
    assert_int_equal(p->dev[op(g, "b")], p->dev[op(g, "a")]);
    simulate_checked(k, p, "heavy fork, LP solver crashed");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Each op has at most one favourite child and is the favourite of at most one parent. */
static void assert_matching(const pl_graph *g, const int *fav)
{
    int *parents = calloc(g->n_ops, sizeof *parents);
    for (int i = 0; i < g->n_ops; i++) {
        if (fav[i] < 0) continue;
        bool child = false;
        for (int q = g->succ_off[i]; q < g->succ_off[i + 1]; q++)
            child |= g->succ[q] == fav[i];
        assert_true(child);
        parents[fav[i]]++;
    }
    for (int i = 0; i < g->n_ops; i++)
        assert_true(parents[i] <= 1);
    free(parents);
}

static void test_sct_fallback_is_a_matching(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/inception_v3.onnx");
    pl_cluster *c = cluster(4, 25e9, 0, 0);
    pl_cost *k = cost(g, c);
    int *fav = malloc(g->n_ops * sizeof *fav);
    lp_sct_info info;
    pl_err err = {""};
    assert_int_equal(lp_sct_favorites(k, 30, 0, fav, &info, &err), 0);
    assert_int_equal(info.status, LP_SCT_OPTIMAL);
    assert_true(info.n_chains < info.n_ops); /* chains were contracted */
    assert_int_equal(info.n_cols, info.n_lp_edges + info.n_chains + 1);
    assert_matching(g, fav);
    assert_int_equal(lp_sct_favorites(k, 30, 1, fav, &info, &err), 0); /* force the fallback */
    assert_int_equal(info.status, LP_SCT_TOO_BIG);
    assert_true(info.n_favorites > 0);
    assert_matching(g, fav);
    free(fav), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A time limit too short for the LP: the greedy favourites are used and the run says so. */
static void test_sct_time_limit_warns(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/rnnlm_unrolled.onnx");
    pl_cluster *c = cluster(4, 25e9, 0, 0);
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *p = place("m-sct", k, 1e-9, &err);
    assert_non_null(strstr(err.msg, "warning"));
    assert_non_null(strstr(err.msg, "LP not solved"));
    simulate_checked(k, p, "time limit");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Expensive communication (1 GB/s, 100 MB tensors): m-SCT must not lose to one device. */
static pl_graph *tiny(int which)
{
    tg t = {0};
    if (which == 0) { /* chain */
        const char *n[] = {"a", "b", "c", "d", "e"};
        for (int i = 0; i < 5; i++)
            tg_node(&t, n[i], (i + 1) * 1e-3, 0);
        for (int i = 0; i + 1 < 5; i++)
            tg_edge(&t, n[i], n[i + 1], 1e8);
    } else if (which == 1) { /* diamond */
        tg_node(&t, "a", 2e-3, 0), tg_node(&t, "b", 5e-3, 0);
        tg_node(&t, "c", 4e-3, 0), tg_node(&t, "d", 1e-3, 0);
        tg_edge(&t, "a", "b", 1e8), tg_edge(&t, "a", "c", 1e8);
        tg_edge(&t, "b", "d", 1e8), tg_edge(&t, "c", "d", 1e8);
    } else { /* two forks joined */
        const char *n[] = {"s", "p", "q", "r", "u", "v", "j"};
        for (int i = 0; i < 7; i++)
            tg_node(&t, n[i], 1e-3 * (1 + i % 3), 0);
        tg_edge(&t, "s", "p", 1e8), tg_edge(&t, "s", "q", 2e8), tg_edge(&t, "p", "r", 1e8);
        tg_edge(&t, "q", "u", 1e8), tg_edge(&t, "q", "v", 1e8), tg_edge(&t, "r", "j", 1e8);
        tg_edge(&t, "u", "j", 1e8), tg_edge(&t, "v", "j", 1e8);
    }
    return tg_load(&t);
}

static double single_device_makespan(const pl_cost *k)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs); /* every op on device 0 */
    double m = simulate_checked(k, p, "single");
    pl_plan_free(p);
    return m;
}

static void test_sct_tiny_bounds(void **state)
{
    (void)state;
    for (int w = 0; w < 3; w++) {
        pl_graph *g = tiny(w);
        pl_cluster *c = cluster(3, 1e9, 0, 0);
        pl_cost *k = cost(g, c);
        pl_err err;
        pl_plan *p = place("m-sct", k, 10, &err);
        double m = simulate_checked(k, p, "tiny"), lb = pl_lower_bound(k);
        double one = single_device_makespan(k);
        if (!(m >= lb * (1 - 1e-9) && m <= one * (1 + 1e-9)))
            fail_msg("graph %d: makespan %g outside [lower bound %g, single device %g]", w, m, lb,
                     one);
        pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
    }
}

/* A device with 1.5 GB takes only some of 8 ops of 0.5 GB weights each: memory respected. */
static void test_sct_memory(void **state)
{
    (void)state;
    tg t = {0};
    const char *n[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    for (int i = 0; i < 8; i++)
        tg_node(&t, n[i], 1e-3, 5e8);
    pl_graph *g = tg_load(&t); /* independent ops: ETF would spread them evenly */
    pl_cluster *c = cluster(2, 10e9, 1, 1.5e9);
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *p = place("m-sct", k, 10, &err);
    double used[2];
    pl_plan_static_memory(k, p->dev, used);
    assert_true(used[1] <= 1.5e9);
    simulate_checked(k, p, "memory");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

static void test_sct_no_room_fails_clearly(void **state)
{
    (void)state;
    tg t = {0};
    tg_node(&t, "big", 1e-3, 2e10); /* 20 GB of weights on 16 GB devices */
    pl_graph *g = tg_load(&t);
    pl_cluster *c = cluster(2, 10e9, 0, 0);
    pl_cost *k = cost(g, c);
    pl_place_opts o = {0};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_err err = {""};
    assert_int_equal(pl_place(pl_algo_find("m-sct"), k, &o, p, &err), -1);
    assert_non_null(strstr(err.msg, "big"));
    assert_int_equal(pl_place(pl_algo_find("metis"), k, &o, p, &err), -1);
    assert_non_null(strstr(err.msg, "metis"));
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* An op a device cannot run (time infinite) never lands there; one no device can run fails. */
static void test_unrunnable(void **state)
{
    (void)state;
    pl_graph *g = heavy_fork();
    pl_cluster *c = cluster(2, 10e9, 0, 0);
    pl_cost *k = cost(g, c);
    int b = op(g, "b");
    k->op_s[(size_t)b * k->n_devs + 0] = INFINITY; /* b only on gpu1 */
    const char *algos[] = {"m-sct", "metis"};
    for (int a = 0; a < 2; a++) {
        pl_err err;
        pl_plan *p = place(algos[a], k, 10, &err);
        assert_int_equal(p->dev[b], 1);
        simulate_checked(k, p, algos[a]);
        pl_plan_free(p);
    }
    k->op_s[(size_t)b * k->n_devs + 1] = INFINITY; /* b nowhere */
    for (int a = 0; a < 2; a++) {
        pl_place_opts o = {0};
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_err err = {""};
        assert_int_equal(pl_place(pl_algo_find(algos[a]), k, &o, p, &err), -1);
        assert_non_null(strstr(err.msg, "'b'"));
        pl_plan_free(p);
    }
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A wide layered DAG (width 1,000, 40 layers, two random parents per op): too big for the LP,
 * so greedy favourites with a warning; the lazy heaps keep the schedule fast. */
static void test_sct_wide_dag_fast(void **state)
{
    (void)state;
    enum { W = 1000, L = 40 };
    tg t = {0};
    char a[32], b[32];
    unsigned x = 12345;
    for (int l = 0; l < L; l++)
        for (int i = 0; i < W; i++) {
            x = x * 1103515245u + 12345u;
            snprintf(a, sizeof a, "n%d_%d", l, i);
            tg_node(&t, a, 1e-4 + (x >> 16) % 1000 * 1e-6, 1e5);
        }
    for (int l = 1; l < L; l++)
        for (int i = 0; i < W; i++) {
            x = x * 1103515245u + 12345u;
            int p1 = (int)((x >> 8) % W), p2 = (p1 + 1 + (int)((x >> 4) % (W - 1))) % W;
            snprintf(b, sizeof b, "n%d_%d", l, i);
            snprintf(a, sizeof a, "n%d_%d", l - 1, p1), tg_edge(&t, a, b, 1e5 + (x >> 6) % 900000);
            snprintf(a, sizeof a, "n%d_%d", l - 1, p2), tg_edge(&t, a, b, 1e5 + (x >> 3) % 900000);
        }
    pl_graph *g = tg_load(&t);
    pl_cluster *c = cluster(8, 25e9, 0, 0);
    pl_cost *k = cost(g, c);
    pl_err err;
    double t0 = pl_now();
    pl_plan *p = place("m-sct", k, 30, &err);
    double took = pl_now() - t0;
    assert_non_null(strstr(err.msg, "LP skipped"));
    if (took > 20) fail_msg("m-sct took %.1f s on %d ops", took, g->n_ops);
    simulate_checked(k, p, "wide");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- METIS ---- */

static void test_metis_balanced(void **state)
{
    (void)state;
    tg t = {0}; /* a 16 x 16 grid DAG, uniform ops and edges */
    char a[32], b[32];
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            snprintf(a, sizeof a, "n%d_%d", i, j), tg_node(&t, a, 1e-3, 0);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            snprintf(a, sizeof a, "n%d_%d", i, j);
            if (i + 1 < 16) snprintf(b, sizeof b, "n%d_%d", i + 1, j), tg_edge(&t, a, b, 1e6);
            if (j + 1 < 16) snprintf(b, sizeof b, "n%d_%d", i, j + 1), tg_edge(&t, a, b, 1e6);
        }
    pl_graph *g = tg_load(&t);
    pl_cluster *c = cluster(4, 10e9, 0, 0);
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *p = place("metis", k, 0, &err);
    int count[4] = {0};
    for (int i = 0; i < g->n_ops; i++)
        count[p->dev[i]]++;
    for (int d = 0; d < 4; d++)
        if (fabs(count[d] - 64.0) > 0.05 * 64) fail_msg("device %d has %d of 256 ops", d, count[d]);
    assert_null(p->order); /* no order: the simulator's FIFO runs it */
    simulate_checked(k, p, "grid");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

static void test_metis_keeps_heavy_edges(void **state)
{
    (void)state;
    tg t = {0}; /* two chains of 10 with 1 GB edges, one 1 kB edge between them */
    char a[32], b[32];
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 10; i++)
            snprintf(a, sizeof a, "%c%d", 'x' + s, i), tg_node(&t, a, 1e-3, 0);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i + 1 < 10; i++) {
            snprintf(a, sizeof a, "%c%d", 'x' + s, i),
                snprintf(b, sizeof b, "%c%d", 'x' + s, i + 1);
            tg_edge(&t, a, b, 1e9);
        }
    tg_edge(&t, "x4", "y5", 1e3);
    pl_graph *g = tg_load(&t);
    pl_cluster *c = cluster(2, 10e9, 0, 0);
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *p = place("metis", k, 0, &err);
    int x0 = p->dev[op(g, "x0")], y0 = p->dev[op(g, "y0")];
    assert_int_not_equal(x0, y0);
    for (int i = 0; i < 10; i++) {
        snprintf(a, sizeof a, "x%d", i), snprintf(b, sizeof b, "y%d", i);
        assert_int_equal(p->dev[op(g, a)], x0);
        assert_int_equal(p->dev[op(g, b)], y0);
    }
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

static void test_metis_memory_repair(void **state)
{
    (void)state;
    tg t = {0}; /* 12 independent 0.5 GB ops: a balanced split puts 3 GB on each device */
    char a[32];
    for (int i = 0; i < 12; i++)
        snprintf(a, sizeof a, "w%d", i), tg_node(&t, a, 1e-3, 5e8);
    pl_graph *g = tg_load(&t);
    pl_cluster *c = cluster(2, 10e9, 1, 1.2e9); /* gpu1 holds two of them */
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *p = place("metis", k, 0, &err);
    double used[2];
    pl_plan_static_memory(k, p->dev, used);
    assert_true(used[1] <= 1.2e9);
    assert_true(used[0] <= k->c->devs[0].memory_bytes);
    assert_non_null(strstr(err.msg, "moved")); /* the warning says repair happened */
    simulate_checked(k, p, "repair");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A slow K80 listed before a V100, linked at 10 GB/s. */
static pl_cluster *k80_then_v100(void)
{
    pl_cluster *c = pl_cluster_new("mixed");
    pl_cluster_add_device(c, "k80", PL_DEV_GPU, "K80");
    pl_cluster_add_device(c, "v100", PL_DEV_GPU, V100);
    pl_cluster_set_link(c, 0, 1, 10e9, 10e-6, true);
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("%s", err.msg);
    return c;
}

/* A chain n0 -> ... -> n{len-1}, each op 1 ms on a V100 and 3 ms on a K80, `bytes` per edge. */
static pl_graph *k80_v100_chain(int len, double bytes)
{
    tg t = {0};
    char a[32], b[32], times[64];
    snprintf(times, sizeof times, "\"" V100 "\": 1e-3, \"K80\": 3e-3");
    for (int i = 0; i < len; i++)
        snprintf(a, sizeof a, "n%d", i), tg_node_times(&t, a, times, 0);
    for (int i = 0; i + 1 < len; i++)
        snprintf(a, sizeof a, "n%d", i), snprintf(b, sizeof b, "n%d", i + 1),
            tg_edge(&t, a, b, bytes);
    return tg_load(&t);
}

/* A K80 and a V100, ops 3x slower on the K80: the V100 gets about three times the work. */
static void test_metis_heterogeneous(void **state)
{
    (void)state;
    pl_graph *g = k80_v100_chain(64, 1e3);
    pl_cluster *c = k80_then_v100();
    pl_err err = {""};
    pl_cost *k = cost(g, c);
    pl_plan *p = place("metis", k, 0, &err);
    int count[2] = {0};
    for (int i = 0; i < g->n_ops; i++)
        count[p->dev[i]]++;
    if (!(count[1] >= 40 && count[1] <= 56)) fail_msg("v100 has %d of 64 ops", count[1]);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A slow K80 listed before a V100: everything starts at t = 0 on both, and a chain with heavy
 * edges belongs on the V100, where it finishes first. */
static void test_sct_prefers_fast_device(void **state)
{
    (void)state;
    pl_graph *g = k80_v100_chain(10, 1e9);
    pl_cluster *c = k80_then_v100();
    pl_err err = {""};
    pl_cost *k = cost(g, c);
    pl_plan *p = place("m-sct", k, 10, &err);
    for (int i = 0; i < g->n_ops; i++)
        assert_int_equal(p->dev[i], 1);
    assert_close(simulate_checked(k, p, "fast device"), 10e-3, 1e-6);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Fewer ops than METIS can split over the devices: fewer devices are used, no failure. */
static void test_metis_tiny_graph(void **state)
{
    (void)state;
    for (int n = 1; n <= 5; n++) {
        tg t = {0};
        char a[32], b[32];
        for (int i = 0; i < n; i++)
            snprintf(a, sizeof a, "n%d", i), tg_node(&t, a, 1e-3, 0);
        for (int i = 0; i + 1 < n; i++)
            snprintf(a, sizeof a, "n%d", i), snprintf(b, sizeof b, "n%d", i + 1),
                tg_edge(&t, a, b, 1e3);
        pl_graph *g = tg_load(&t);
        pl_cluster *c = cluster(8, 10e9, 0, 0);
        pl_cost *k = cost(g, c);
        pl_err err;
        pl_plan *p = place("metis", k, 0, &err);
        simulate_checked(k, p, "tiny metis");
        pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
    }
}

/* One upward rank for every list scheduler (pk_upward_rank), HEFT's: the transfer term of an
 * op towards a successor is the mean time of everything it sends it (Topcuoglu et al.'s c(i,j)
 * is the data of the edge i→j), not its largest single tensor. Here only gpu0 runs anything
 * (gpu1's model has no times), so m-SCT puts every op on gpu0 and its only choice is which of
 * the two sources x and y, both ready at 0, runs first: the larger rank. The mean route is gpu0
 * ↔ gpu1: 1 GB/s, 10 us. x sends x2 two tensors of 6 MB, y sends y2 one of 10 MB; ops 1 ms.
 *     rank(x) = 1 ms + (2 × (10 us + 6 ms)) + 1 ms = 14.02 ms
 *     rank(y) = 1 ms + (10 us + 10 ms) + 1 ms       = 12.01 ms  → x first.
 * With the largest tensor only (m-SCT's former rank), rank(x) = 8.01 ms and y went first. */
static void test_sct_ranks_sum_what_an_op_sends(void **state)
{
    (void)state;
    tg t = {0};
    const char *only0 = "\"" V100 "\": 1e-3";
    tg_node_times(&t, "x", only0, 0), tg_node_times(&t, "y", only0, 0);
    tg_node_times(&t, "x2", only0, 0), tg_node_times(&t, "y2", only0, 0);
    tg_printf(&t, "], \"edges\": [{\"from\": \"x\", \"to\": \"x2\", \"bytes\": 6e6, "
                  "\"tensor\": \"a\"}, {\"from\": \"x\", \"to\": \"x2\", \"bytes\": 6e6, "
                  "\"tensor\": \"b\"}, {\"from\": \"y\", \"to\": \"y2\", \"bytes\": 1e7}");
    t.n_edges = 3;
    pl_graph *g = tg_load(&t);
    pl_cluster *c = pl_cluster_new("test");
    pl_cluster_add_device(c, "gpu0", PL_DEV_GPU, V100);
    pl_cluster_add_device(c, "gpu1", PL_DEV_GPU, "A100-SXM4-40GB");
    pl_cluster_set_link(c, 0, 1, 1e9, 10e-6, true);
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("cluster: %s", err.msg);
    pl_cost *k = cost(g, c);
    double rank[4];
    pk_upward_rank(k, rank);
    int x = pl_graph_find_op(g, "x"), y = pl_graph_find_op(g, "y");
    assert_close(rank[x], 14.02e-3, 1e-12);
    assert_close(rank[y], 12.01e-3, 1e-12);
    pl_plan *p = place("m-sct", k, 0, &err);
    assert_non_null(p->order);
    assert_int_equal(p->order_off[1] - p->order_off[0], 4);
    assert_int_equal(p->order[p->order_off[0]], x);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- both, on the zoo ---- */

/* The one memory tracker (pk_mem_track) after moves, as METIS's repair makes them (remove,
 * add, recompute the working sets), gives the figure of a fresh count of the new placement:
 * weights shared by ops on both sides of a move, held outputs and working sets all follow. */
static void assert_same_memory(const pl_cost *k, const pl_plan *p)
{
    int n = k->n_ops, D = k->n_devs, *dev = malloc((n + 1) * sizeof *dev);
    double *want = calloc(D, sizeof *want);
    memcpy(dev, p->dev, n * sizeof *dev);
    pk_mem_track m;
    pk_mem_init(&m, k);
    for (int i = 0; i < n; i++)
        pk_mem_add(&m, i, dev[i]);
    for (int i = 0; i < n; i += 2) { /* every other op to the next device */
        pk_mem_remove(&m, i, dev[i]);
        dev[i] = (dev[i] + 1) % D;
        pk_mem_add(&m, i, dev[i]);
    }
    pk_mem_recompute_ws(&m, dev);
    pl_plan_static_memory(k, dev, want);
    for (int d = 0; d < D; d++)
        assert_close(pk_mem_used(&m, d), want[d], 1e-12);
    pk_mem_free(&m);
    free(want), free(dev);
}

static void zoo_on(pl_cluster *c)
{
    glob_t gl;
    assert_int_equal(glob("models/*.onnx", 0, NULL, &gl), 0);
    assert_true(gl.gl_pathc >= 10);
    const char *algos[] = {"m-sct", "metis"};
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        pl_graph *g = tu_load(gl.gl_pathv[i]);
        pl_cost *k = cost(g, c);
        double lb = pl_lower_bound(k);
        for (int a = 0; a < 2; a++) {
            pl_err err;
            pl_plan *p = place(algos[a], k, 30, &err);
            char what[300];
            snprintf(what, sizeof what, "%s on %s", algos[a], gl.gl_pathv[i]);
            double m = simulate_checked(k, p, what);
            if (!(m >= lb * (1 - 1e-9))) fail_msg("%s: makespan %g < lower bound %g", what, m, lb);
            assert_same_memory(k, p);
            pl_plan_free(p);
        }
        pl_cost_free(k), pl_graph_free(g);
    }
    globfree(&gl);
}

static void test_zoo(void **state)
{
    (void)state;
    pl_cluster *c = cluster(4, 25e9, 0, 0);
    zoo_on(c);
    c->io_device = 0; /* graph inputs now start on gpu0 and travel */
    zoo_on(c);
    pl_cluster_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sct_lp_picks_heavy_child),
        cmocka_unit_test(test_sct_solver_crash),
        cmocka_unit_test(test_sct_fallback_is_a_matching),
        cmocka_unit_test(test_sct_time_limit_warns),
        cmocka_unit_test(test_sct_tiny_bounds),
        cmocka_unit_test(test_sct_memory),
        cmocka_unit_test(test_sct_no_room_fails_clearly),
        cmocka_unit_test(test_unrunnable),
        cmocka_unit_test(test_sct_wide_dag_fast),
        cmocka_unit_test(test_metis_balanced),
        cmocka_unit_test(test_metis_keeps_heavy_edges),
        cmocka_unit_test(test_metis_memory_repair),
        cmocka_unit_test(test_metis_heterogeneous),
        cmocka_unit_test(test_metis_tiny_graph),
        cmocka_unit_test(test_sct_prefers_fast_device),
        cmocka_unit_test(test_sct_ranks_sum_what_an_op_sends),
        cmocka_unit_test(test_zoo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
