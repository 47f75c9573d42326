/* test_place.c: the placement algorithms and the lower bound.
 *
 * The lower bound is checked against brute force (every placement of tiny random graphs,
 * simulated under every contention model); HEFT, ETF and GETF against schedules whose
 * optimum is known; every algorithm on every zoo model and example cluster against the
 * simulator's invariants and memory; refusals for clusters too small; and the speed of HEFT
 * and m-ETF on 50,000 ops. */
#include "testutil.h"

#include "placer/place.h"

#include "../src/place/algos.h"

#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const ALL[] = {"single", "expert", "expert-layers", "m-topo", "m-etf", "m-sct",
                                  "heft",   "getf",   "metis",         "random", "moirai"};
#define N_ALL ((int)(sizeof ALL / sizeof *ALL))
static const pl_contention MODELS[] = {PL_CONTENTION_PORTS, PL_CONTENTION_PAIR, PL_CONTENTION_NONE};

/* ---- building blocks ---- */

static pl_cluster *finalize(pl_cluster *c)
{
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("cluster: %s", err.msg);
    return c;
}

/* n devices of `model`, fully linked; memory overridden when mem > 0. */
static pl_cluster *uniform(int n, const char *model, double mem, double bw, double lat)
{
    pl_cluster *c = pl_cluster_new("uniform");
    char name[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "gpu%d", i);
        pl_cluster_add_device(c, name, PL_DEV_GPU, model);
        if (mem > 0) c->devs[i].memory_bytes = mem;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            pl_cluster_set_link(c, i, j, bw, lat, true);
    return finalize(c);
}

static pl_cluster *v100x4(void)
{
    return uniform(4, "V100-SXM2-16GB", 0, 25e9, 5e-6);
}

/* Devices d0, d1, ... of models "m0", "m1", ... (task graphs give their times), no memory
 * limit, every pair linked at bw bytes/s with no latency. */
static pl_cluster *labelled(int n, double bw)
{
    pl_cluster *c = pl_cluster_new("labelled");
    char name[16], model[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "d%d", i);
        snprintf(model, sizeof model, "m%d", i);
        pl_cluster_add_device(c, name, PL_DEV_GPU, model);
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            pl_cluster_set_link(c, i, j, bw, 0, true);
    return finalize(c);
}

/* A growing string for task graphs written on the fly. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int w = vsnprintf(b->s ? b->s + b->n : NULL, room, fmt, ap);
        va_end(ap);
        if ((size_t)w < room) {
            b->n += w;
            return;
        }
        b->cap = 2 * (b->cap + w + 64);
        b->s = realloc(b->s, b->cap);
    }
}

static pl_graph *taskgraph(const char *text)
{
    return tu_taskgraph(text);
}

static pl_cost *cost(const pl_graph *g, const pl_cluster *c)
{
    return tu_cost(g, c);
}

/* Places with `name`; NULL (and the message in *why) when the algorithm refuses. */
static pl_plan *try_place(const char *name, const pl_cost *k, pl_contention cont, unsigned seed,
                          pl_err *err)
{
    const pl_algo *a = pl_algo_find(name);
    if (!a) fail_msg("no algorithm '%s'", name);
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    /* moirai searches until its limit: a short one keeps these sweeps quick (its own tests
     * and `make bench` give it the real minute) */
    pl_place_opts o = {.seed = seed, .contention = cont, .time_limit_s = 0.3};
    err->msg[0] = 0;
    if (pl_place(a, k, &o, p, err) == 0) return p;
    if (!err->msg[0]) fail_msg("%s refused without a message", name);
    pl_plan_free(p);
    return NULL;
}

/* Simulates and checks the invariants; the makespan. */
static double simulate(const pl_cost *k, const pl_plan *p, pl_contention cont, bool check)
{
    pl_err err = {""};
    pl_sim_opts so = {.contention = cont, .record = check};
    pl_sim_result r;
    memset(&r, 0, sizeof r);
    if (pl_simulate(k, p, &so, &r, &err) < 0)
        fail_msg("%s: simulation failed: %s", p->algo, err.msg);
    char why[512] = "";
    if (check && pl_sim_check(k, p, &so, &r, why, sizeof why) < 0)
        fail_msg("%s: invariant broken: %s", p->algo, why);
    double ms = r.makespan_s;
    pl_sim_result_free(&r);
    return ms;
}

/* ---- registry and entry point ---- */

static void test_registry_lists_all_ten_in_order(void **state)
{
    (void)state;
    int n = 0;
    const pl_algo *list = pl_algo_list(&n);
    assert_int_equal(n, N_ALL);
    for (int i = 0; i < n; i++) {
        assert_string_equal(list[i].name, ALL[i]);
        assert_ptr_equal(pl_algo_find(ALL[i]), &list[i]);
        assert_non_null(list[i].run);
        assert_true(strlen(list[i].summary) > 10);
    }
    assert_null(pl_algo_find("hefty"));
    assert_null(pl_algo_find(NULL));
}

static const char DIAMOND[] =
    "{\"format\": \"placer-taskgraph/1\", \"name\": \"fork\", \"nodes\": ["
    "{\"name\": \"a\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
    "{\"name\": \"b\", \"times_s\": {\"m0\": \"4 ms\", \"m1\": \"4 ms\"}},"
    "{\"name\": \"c\", \"times_s\": {\"m0\": \"4 ms\", \"m1\": \"4 ms\"}},"
    "{\"name\": \"d\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}}],"
    "\"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 100000, \"tensor\": \"x\"},"
    "{\"from\": \"a\", \"to\": \"c\", \"bytes\": 100000, \"tensor\": \"x\"},"
    "{\"from\": \"b\", \"to\": \"d\", \"bytes\": 100000},"
    "{\"from\": \"c\", \"to\": \"d\", \"bytes\": 100000}]}";

static void test_place_sets_algo_time_and_order(void **state)
{
    (void)state;
    pl_graph *g = taskgraph(DIAMOND);
    pl_cluster *c = labelled(2, 1e9);
    pl_cost *k = cost(g, c);
    for (int i = 0; i < N_ALL; i++) {
        pl_err err;
        pl_plan *p = try_place(ALL[i], k, PL_CONTENTION_PAIR, 1, &err);
        if (!p) fail_msg("%s: %s", ALL[i], err.msg);
        assert_string_equal(p->algo, ALL[i]);
        assert_true(p->search_s >= 0 && p->search_s < 1);
        assert_int_equal(p->contention, PL_CONTENTION_PAIR);
        bool schedules =
            !strcmp(ALL[i], "m-etf") || !strcmp(ALL[i], "heft") || !strcmp(ALL[i], "getf");
        if (schedules) assert_non_null(p->order);
        pl_plan_free(p);
    }
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Re-placing a plan starts from its placement alone: no op order, priority or transfer order
 * of the algorithm that made it survives (moirai's transfer order once did, and then ordered
 * HEFT's transfers). */
static void test_replacing_drops_the_old_schedule(void **state)
{
    (void)state;
    pl_graph *g = taskgraph(DIAMOND);
    pl_cluster *c = labelled(2, 1e8);
    pl_cost *k = cost(g, c);
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    /* no coarsening: the MILP's plan carries its transfer order (docs/moirai.md) */
    pl_place_opts mo = {.seed = 1, .time_limit_s = 2, .no_coarsen = true};
    pl_err err = {""};
    if (pl_place(pl_algo_find("moirai"), k, &mo, p, &err) < 0) fail_msg("moirai: %s", err.msg);
    assert_non_null(p->xfer_priority); /* CBC proves its optimum: the MILP's plan stands */
    pl_place_opts ho = {.contention = PL_CONTENTION_PORTS};
    if (pl_place(pl_algo_find("heft"), k, &ho, p, &err) < 0) fail_msg("heft: %s", err.msg);
    assert_null(p->xfer_priority);
    assert_int_equal(p->n_edges, 0);
    pl_plan *fresh = pl_plan_new(k->n_ops, k->n_devs);
    if (pl_place(pl_algo_find("heft"), k, &ho, fresh, &err) < 0) fail_msg("heft: %s", err.msg);
    assert_memory_equal(p->dev, fresh->dev, k->n_ops * sizeof *p->dev);
    assert_true(!p->priority == !fresh->priority && !p->order == !fresh->order);
    assert_true(simulate(k, p, PL_CONTENTION_PORTS, true) ==
                simulate(k, fresh, PL_CONTENTION_PORTS, true));
    pl_plan_free(fresh), pl_plan_free(p);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

static void test_random_is_seeded(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/inception_v3.onnx");
    pl_cluster *c = v100x4();
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *a = try_place("random", k, 0, 7, &err), *b = try_place("random", k, 0, 7, &err);
    pl_plan *d = try_place("random", k, 0, 8, &err);
    assert_non_null(a), assert_non_null(b), assert_non_null(d);
    assert_memory_equal(a->dev, b->dev, k->n_ops * sizeof *a->dev);
    assert_true(memcmp(a->dev, d->dev, k->n_ops * sizeof *a->dev) != 0);
    int used[4] = {0};
    for (int v = 0; v < k->n_ops; v++)
        used[a->dev[v]]++;
    for (int dv = 0; dv < 4; dv++)
        assert_true(used[dv] > k->n_ops / 8); /* roughly uniform */
    pl_plan_free(a), pl_plan_free(b), pl_plan_free(d);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- the lower bound against brute force ---- */

/* A random DAG of n ops: each op reads the single output tensor of some earlier ops (shared,
 * so it is sent once per destination), times random per device model. */
static char *random_graph_coloc(unsigned seed, int n, int n_devs, int coloc_every);
static char *random_graph(unsigned seed, int n, int n_devs)
{
    return random_graph_coloc(seed, n, n_devs, 0);
}

/* The same, and with coloc_every > 0, every op n_i with i % coloc_every == 1 in colocation
 * class "k". */
static char *random_graph_coloc(unsigned seed, int n, int n_devs, int coloc_every)
{
    srand(seed);
    sbuf b = {0};
    sb_printf(&b, "{\"format\": \"placer-taskgraph/1\", \"name\": \"r%u\", \"nodes\": [", seed);
    for (int i = 0; i < n; i++) {
        sb_printf(&b, "%s{\"name\": \"n%d\", %s\"weight_bytes\": %d, \"times_s\": {", i ? "," : "",
                  i, coloc_every > 0 && i % coloc_every == 1 ? "\"colocation\": \"k\", " : "",
                  rand() % 1000);
        for (int d = 0; d < n_devs; d++)
            sb_printf(&b, "%s\"m%d\": %.6f", d ? "," : "", d, 0.001 * (1 + rand() % 9));
        sb_printf(&b, "}}");
    }
    sb_printf(&b, "], \"edges\": [");
    int ne = 0;
    for (int j = 1; j < n; j++)
        for (int i = 0; i < j; i++)
            if (rand() % 2)
                sb_printf(
                    &b,
                    "%s{\"from\": \"n%d\", \"to\": \"n%d\", \"tensor\": \"t%d\", \"bytes\": %d}",
                    ne++ ? "," : "", i, j, i, 1000000 * (1 + i % 5));
    sb_printf(&b, "]}");
    return b.s;
}

/* The best makespan of any placement (FIFO order) under contention `cont`. */
static double brute_force_best(const pl_cost *k, pl_contention cont)
{
    int n = k->n_ops, D = k->n_devs, total = 1;
    for (int i = 0; i < n; i++)
        total *= D;
    pl_plan *p = pl_plan_new(n, D);
    snprintf(p->algo, sizeof p->algo, "brute");
    double best = INFINITY;
    for (int code = 0; code < total; code++) {
        for (int i = 0, x = code; i < n; i++, x /= D)
            p->dev[i] = x % D;
        best = fmin(best, simulate(k, p, cont, false));
    }
    pl_plan_free(p);
    return best;
}

static void test_lower_bound_brute_force(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 24; seed++) {
        int n = 3 + seed % 4, D = 2 + seed % 2;
        char *text = random_graph(seed, n, D);
        pl_graph *g = taskgraph(text);
        pl_cluster *c = labelled(D, 1e9 * (1 + seed % 3));
        pl_cost *k = cost(g, c);
        double lb = pl_lower_bound(k);
        assert_true(lb > 0 && isfinite(lb));
        for (int m = 0; m < 3; m++) {
            double best = brute_force_best(k, MODELS[m]);
            if (lb > best * (1 + 1e-9))
                fail_msg("seed %u, %s: lower bound %g > best makespan %g", seed,
                         pl_contention_name(MODELS[m]), lb, best);
            for (int i = 0; i < N_ALL; i++) {
                pl_err err;
                pl_plan *p = try_place(ALL[i], k, MODELS[m], seed, &err);
                if (!p) fail_msg("seed %u: %s: %s", seed, ALL[i], err.msg);
                double ms = simulate(k, p, MODELS[m], true);
                if (ms < lb * (1 - 1e-9))
                    fail_msg("seed %u: %s makespan %g < lower bound %g", seed, ALL[i], ms, lb);
                pl_plan_free(p);
            }
        }
        pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
        free(text);
    }
}

/* The bound's two terms, on graphs where each one binds. */
/* ---- colocation classes ---- */

/* The best makespan of any placement that keeps every colocation class together (FIFO). */
static double brute_force_coloc(const pl_cost *k, pl_contention cont)
{
    int n = k->n_ops, D = k->n_devs, total = 1;
    for (int i = 0; i < n; i++)
        total *= D;
    pl_plan *p = pl_plan_new(n, D);
    double best = INFINITY;
    for (int code = 0; code < total; code++) {
        for (int i = 0, x = code; i < n; i++, x /= D)
            p->dev[i] = x % D;
        pl_err e = {""};
        if (pl_plan_check_coloc(k->g, k->c, p->dev, "brute", &e) == 0)
            best = fmin(best, simulate(k, p, cont, false));
    }
    pl_plan_free(p);
    return best;
}

/* Every op of class "k" on one device. */
static void assert_class_together(const pl_graph *g, const pl_plan *p, const char *algo)
{
    int dev = -1;
    for (int i = 0; i < g->n_ops; i++) {
        if (!g->ops[i].coloc) continue;
        if (dev >= 0 && p->dev[i] != dev) fail_msg("%s splits the colocation class", algo);
        dev = p->dev[i];
    }
}

/* A fork a -> {b, c} -> d on two equal devices: without a class, b and c run in parallel on
 * the two devices (1 + 4 + 1 = 6 ms plus the transfers); with b and c in one class, every
 * algorithm keeps them together (so no plan beats 1 + 4 + 4 + 1 = 10 ms), every plan is no
 * better than brute force over the placements that keep the class, and a hand plan that
 * splits the class is refused by the simulator, naming the class and the ops. */
static void test_colocation_fork(void **state)
{
    (void)state;
    const char *text =
        "{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
        "{\"name\": \"a\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
        "{\"name\": \"b\", \"colocation\": \"bc\", \"times_s\": {\"m0\": \"4 ms\", \"m1\": \"4 "
        "ms\"}},"
        "{\"name\": \"c\", \"colocation\": \"bc\", \"times_s\": {\"m0\": \"4 ms\", \"m1\": \"4 "
        "ms\"}},"
        "{\"name\": \"d\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}}], \"edges\": ["
        "{\"from\": \"a\", \"to\": \"b\", \"bytes\": \"1 kB\"}, {\"from\": \"a\", \"to\": \"c\", "
        "\"bytes\": \"1 kB\"},"
        "{\"from\": \"b\", \"to\": \"d\", \"bytes\": \"1 kB\"}, {\"from\": \"c\", \"to\": \"d\", "
        "\"bytes\": \"1 kB\"}]}";
    pl_graph *g = taskgraph(text);
    assert_int_equal(g->n_coloc, 1);
    assert_string_equal(g->coloc_names[0], "bc");
    pl_cluster *c = labelled(2, 1e9);
    pl_cost *k = cost(g, c);
    for (size_t m = 0; m < sizeof MODELS / sizeof *MODELS; m++) {
        double best = brute_force_coloc(k, MODELS[m]);
        assert_true(best >= 0.010 - 1e-12);
        for (int a = 0; a < N_ALL; a++) {
            pl_err err = {""};
            pl_plan *p = try_place(ALL[a], k, MODELS[m], 1, &err);
            if (!p) fail_msg("%s refused: %s", ALL[a], err.msg);
            assert_class_together(g, p, ALL[a]);
            double ms = simulate(k, p, MODELS[m], true);
            if (ms < best - 1e-12) fail_msg("%s: %.9g below brute force %.9g", ALL[a], ms, best);
            pl_plan_free(p);
        }
    }
    pl_plan *hand = pl_plan_new(k->n_ops, k->n_devs);
    hand->dev[pl_graph_find_op(g, "c")] = 1;
    pl_sim_opts so = {0};
    pl_sim_result r;
    memset(&r, 0, sizeof r);
    pl_err err = {""};
    assert_int_equal(pl_simulate(k, hand, &so, &r, &err), -1);
    assert_contains(err.msg, "colocation class 'bc' is split: op 'b' is on 'd0', op 'c' on 'd1'");
    pl_sim_result_free(&r);
    /* the invariant checker refuses it too, given a run recorded for a plan that kept it */
    hand->dev[pl_graph_find_op(g, "c")] = 0;
    so.record = true;
    memset(&r, 0, sizeof r);
    assert_int_equal(pl_simulate(k, hand, &so, &r, &err), 0);
    hand->dev[pl_graph_find_op(g, "c")] = 1;
    char why[256] = "";
    assert_int_equal(pl_sim_check(k, hand, &so, &r, why, sizeof why), -1);
    assert_contains(why, "colocation class 'bc' is split");
    pl_sim_result_free(&r);
    pl_plan_free(hand), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A stand-in algorithm that uses all the time it is given: it splits the class 'bc' (b on d0,
 * c on d1) on its first run, fails its second (the pinned one), and places everything on d0
 * on its third; each run's end (start + its limit) is recorded. */
static double stub_end[4];
static int stub_calls;

static int stub_run(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    int call = stub_calls++;
    stub_end[call] = pl_now() + o->time_limit_s;
    struct timespec ts = {0, (long)(o->time_limit_s * 1e9)};
    nanosleep(&ts, NULL);
    for (int i = 0; i < k->n_ops; i++)
        out->dev[i] = call == 0 && !strcmp(k->g->ops[i].name, "c") ? 1 : 0;
    return call == 1 ? pl_err_set(err, "stub: no room") : 0;
}

/* With classes, the (up to three) runs share the time limit: none may run past it. */
static void test_colocation_time_limit(void **state)
{
    (void)state;
    const char *text = "{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
                       "{\"name\": \"b\", \"colocation\": \"bc\", \"times_s\": {\"m0\": \"1 ms\", "
                       "\"m1\": \"1 ms\"}},"
                       "{\"name\": \"c\", \"colocation\": \"bc\", \"times_s\": {\"m0\": \"1 ms\", "
                       "\"m1\": \"1 ms\"}}],"
                       "\"edges\": []}";
    pl_graph *g = taskgraph(text);
    pl_cluster *c = labelled(2, 1e9);
    pl_cost *k = cost(g, c);
    pl_algo stub = {"stub", stub_run, "test", false};
    pl_place_opts o = {.time_limit_s = 0.2};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_err err = {""};
    stub_calls = 0;
    double end = pl_now() + o.time_limit_s;
    assert_int_equal(pl_place(&stub, k, &o, p, &err), 0);
    assert_int_equal(stub_calls, 3);
    for (int i = 0; i < 3; i++)
        if (stub_end[i] > end + 0.05)
            fail_msg("run %d given until %.3f s past the limit", i, stub_end[i] - end);
    assert_class_together(g, p, "stub");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Random DAGs with a class of every third op: every algorithm keeps it together under every
 * contention model, and no plan beats brute force over the placements that keep it. */
static void test_colocation_brute_force(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 8; seed++) {
        int n = 4 + seed % 3, D = 2 + seed % 2;
        char *text = random_graph_coloc(seed, n, D, 3);
        pl_graph *g = taskgraph(text);
        pl_cluster *c = labelled(D, 1e9 * (1 + seed % 3));
        pl_cost *k = cost(g, c);
        pl_contention cont = MODELS[seed % 3];
        double best = brute_force_coloc(k, cont);
        for (int a = 0; a < N_ALL; a++) {
            pl_err err = {""};
            pl_plan *p = try_place(ALL[a], k, cont, seed, &err);
            if (!p && strstr(err.msg, "colocation"))
                fail_msg("seed %u: %s: %s", seed, ALL[a], err.msg);
            if (!p) continue; /* memory; splitting is what is checked */
            assert_class_together(g, p, ALL[a]);
            double ms = simulate(k, p, cont, true);
            if (ms < best - 1e-12)
                fail_msg("seed %u: %s: %.9g below brute force %.9g", seed, ALL[a], ms, best);
            pl_plan_free(p);
        }
        pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
        free(text);
    }
}

static void test_lower_bound_terms(void **state)
{
    (void)state;
    pl_graph *g = taskgraph(DIAMOND); /* path a-b-d: 6 ms; work 10 ms over 2 devices: 5 ms */
    pl_cluster *c = labelled(2, 1e9);
    pl_cost *k = cost(g, c);
    assert_close(pl_lower_bound(k), 0.006, 1e-9);
    pl_cost_free(k), pl_cluster_free(c);
    c = labelled(1, 1e9); /* one device: all the work, 10 ms */
    k = cost(g, c);
    assert_close(pl_lower_bound(k), 0.010, 1e-9);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- schedulers on examples with a known answer ---- */

/* Fork-join, two identical devices, cheap transfers: b and c run side by side; the optimum is
 * a, then x sent (0.1 ms) while b runs, c on the other device, b's result sent, d after c:
 * 1 + 0.1 + 4 + 1 = 6.1 ms (brute force agrees), and ETF, GETF and HEFT find it. */
static void test_schedulers_find_fork_join_optimum(void **state)
{
    (void)state;
    pl_graph *g = taskgraph(DIAMOND);
    pl_cluster *c = labelled(2, 1e9); /* 100 kB at 1 GB/s: 0.1 ms */
    pl_cost *k = cost(g, c);
    const char *algos[] = {"m-etf", "getf", "heft"};
    for (int m = 0; m < 3; m++) {
        double best = brute_force_best(k, MODELS[m]);
        assert_close(best, 0.0061, 1e-9);
        for (int i = 0; i < 3; i++) {
            pl_err err;
            pl_plan *p = try_place(algos[i], k, MODELS[m], 0, &err);
            if (!p) fail_msg("%s: %s", algos[i], err.msg);
            assert_true(p->dev[1] != p->dev[2]); /* b and c apart */
            assert_close(simulate(k, p, MODELS[m], true), best, 1e-9);
            pl_plan_free(p);
        }
    }
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- plans that pay (pl_place_opts.single_if_faster) ---- */

static pl_plan *place_gaining(const char *name, const pl_cost *k, bool pays, double min_gain,
                              pl_err *err)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts o = {.single_if_faster = pays, .min_gain = min_gain};
    err->msg[0] = 0;
    if (pl_place(pl_algo_find(name), k, &o, p, err) < 0) fail_msg("%s: %s", name, err->msg);
    return p;
}

static pl_plan *place_paying(const char *name, const pl_cost *k, bool pays, pl_err *err)
{
    return place_gaining(name, k, pays, 0, err);
}

/* The fork a(1 ms) → b(4), c(4) → d(1) with 100 kB tensors. Over a 10 MB/s link a transfer
 * takes 10 ms, so any split pays at least two of them: METIS cuts it into [a, b] on d0 and
 * [c, d] on d1 (x → d1 over [1, 11], c [11, 15], b's result waits for d0's send port: → d1
 * over [11, 21], d [21, 22]: 22 ms), while the whole model on d0 takes 1 + 4 + 4 + 1 = 10 ms: the
 * single-device plan comes back, with a note. At 1 GB/s (0.1 ms) HEFT's split, 6.1 ms, pays and is
 * kept. */
static void test_single_if_faster(void **state)
{
    (void)state;
    pl_graph *g = taskgraph(DIAMOND);
    pl_cluster *slow = labelled(2, 1e7), *fast = labelled(2, 1e9);
    pl_cost *k = cost(g, slow);
    pl_err err;
    pl_plan *p = place_paying("metis", k, false, &err);
    assert_true(p->dev[0] != p->dev[3]); /* split */
    assert_close(simulate(k, p, PL_CONTENTION_PORTS, true), 0.022, 1e-9);
    pl_plan_free(p);
    p = place_paying("metis", k, true, &err);
    for (int v = 0; v < k->n_ops; v++)
        assert_int_equal(p->dev[v], 0);
    assert_string_equal(p->algo, "single");
    assert_close(simulate(k, p, PL_CONTENTION_PORTS, true), 0.010, 1e-9);
    assert_contains(err.msg, "metis: its plan is predicted at 22 ms, slower than the whole "
                             "model on 'd0' (10 ms): the single-device plan is returned instead");
    pl_plan_free(p);
    pl_cost_free(k);

    k = cost(g, fast);
    p = place_paying("heft", k, true, &err);
    assert_string_equal(p->algo, "heft");
    assert_true(p->dev[1] != p->dev[2]); /* b and c apart */
    assert_close(simulate(k, p, PL_CONTENTION_PORTS, true), 0.0061, 1e-9);
    assert_string_equal(err.msg, "");
    pl_plan_free(p);
    /* a gain of 39 % is kept when 35 % is asked for, not when 40 % is: 6.1 > 10 x 0.6 */
    p = place_gaining("heft", k, true, 0.35, &err);
    assert_string_equal(p->algo, "heft");
    pl_plan_free(p);
    p = place_gaining("heft", k, true, 0.40, &err);
    assert_string_equal(p->algo, "single");
    assert_contains(err.msg, "heft: its plan is predicted at 6.1 ms, faster than the whole model "
                             "on 'd0' (10 ms) by less than 40 %: the single-device plan is "
                             "returned instead");
    pl_plan_free(p);
    pl_cost_free(k), pl_cluster_free(slow), pl_cluster_free(fast), pl_graph_free(g);
}

/* Topcuoglu, Hariri and Wu (2002), Fig. 2: ten tasks on three processors, HEFT's schedule has
 * makespan 80. Transfer costs are the edge weights: bytes at 1 byte/s. */
static const int TOPC_W[10][3] = {{14, 16, 9},  {13, 19, 18}, {11, 13, 19}, {13, 8, 17},
                                  {12, 13, 10}, {13, 16, 9},  {7, 15, 11},  {5, 11, 14},
                                  {18, 12, 20}, {21, 7, 16}};
static const int TOPC_E[][3] = {{1, 2, 18}, {1, 3, 12}, {1, 4, 9},   {1, 5, 11},  {1, 6, 14},
                                {2, 8, 19}, {2, 9, 16}, {3, 7, 23},  {4, 8, 27},  {4, 9, 23},
                                {5, 9, 13}, {6, 8, 15}, {7, 10, 17}, {8, 10, 11}, {9, 10, 13}};

static char *topcuoglu(void)
{
    sbuf b = {0};
    sb_printf(&b, "{\"format\": \"placer-taskgraph/1\", \"name\": \"topcuoglu\", \"nodes\": [");
    for (int i = 0; i < 10; i++)
        sb_printf(&b, "%s{\"name\": \"n%d\", \"times_s\": {\"m0\": %d, \"m1\": %d, \"m2\": %d}}",
                  i ? "," : "", i + 1, TOPC_W[i][0], TOPC_W[i][1], TOPC_W[i][2]);
    sb_printf(&b, "], \"edges\": [");
    for (size_t e = 0; e < sizeof TOPC_E / sizeof *TOPC_E; e++)
        sb_printf(&b, "%s{\"from\": \"n%d\", \"to\": \"n%d\", \"bytes\": %d}", e ? "," : "",
                  TOPC_E[e][0], TOPC_E[e][1], TOPC_E[e][2]);
    sb_printf(&b, "]}");
    return b.s;
}

static void test_heft_reproduces_topcuoglu(void **state)
{
    (void)state;
    char *text = topcuoglu();
    pl_graph *g = taskgraph(text);
    pl_cluster *c = labelled(3, 1);
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *p = try_place("heft", k, PL_CONTENTION_NONE, 0, &err);
    if (!p) fail_msg("heft: %s", err.msg);
    /* the paper's placement: n1 n3 n5 n7 on P3, n4 n6 n9 n10 on P2, n2 n8 on P1 */
    const int want[10] = {2, 0, 2, 1, 2, 1, 2, 0, 1, 1};
    assert_memory_equal(p->dev, want, sizeof want);
    assert_close(simulate(k, p, PL_CONTENTION_NONE, true), 80, 1e-12);
    /* upward ranks of the paper: n1 108, n10 14.667 (priority is minus the rank) */
    assert_close(p->priority[0], -108, 1e-9);
    assert_close(p->priority[9], -44.0 / 3, 1e-9);
    pl_plan_free(p);
    for (int i = 0; i < N_ALL; i++) { /* the others: valid, and never below the bound */
        pl_plan *q = try_place(ALL[i], k, PL_CONTENTION_NONE, 0, &err);
        if (!q) fail_msg("%s: %s", ALL[i], err.msg);
        assert_true(simulate(k, q, PL_CONTENTION_NONE, true) >= pl_lower_bound(k) * (1 - 1e-12));
        pl_plan_free(q);
    }
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
    free(text);
}

/* GETF, unlike ETF, weighs speed: a device free now but 10x slower loses to a fast one free a
 * moment later. */
static void test_getf_prefers_finish_over_start(void **state)
{
    (void)state;
    const char *text = "{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
                       "{\"name\": \"a\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"10 ms\"}},"
                       "{\"name\": \"b\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"10 ms\"}}],"
                       "\"edges\": [{\"to\": \"a\", \"tensor\": \"x\", \"bytes\": 4},"
                       "{\"to\": \"b\", \"tensor\": \"x\", \"bytes\": 4}]}";
    pl_graph *g = taskgraph(text);
    pl_cluster *c = labelled(2, 1e9);
    pl_cost *k = cost(g, c);
    pl_err err;
    pl_plan *getf = try_place("getf", k, 0, 0, &err), *etf = try_place("m-etf", k, 0, 0, &err);
    assert_non_null(getf), assert_non_null(etf);
    assert_int_equal(getf->dev[0], 0), assert_int_equal(getf->dev[1], 0);
    assert_true(etf->dev[0] != etf->dev[1]); /* ETF starts both at time 0 */
    assert_close(simulate(k, getf, 0, true), 0.002, 1e-9);
    pl_plan_free(getf), pl_plan_free(etf);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- the zoo on every example cluster ---- */

typedef struct zoo_stats {
    int runs;
    double worst_ratio; /* simulated peak / static estimate */
} zoo_stats;

/* Static memory within capacity, and the simulator's peak near it (docs/placement.md). */
static void check_memory(const pl_cost *k, const pl_plan *p, zoo_stats *st, const char *where)
{
    double *stat = calloc(k->n_devs, sizeof *stat);
    pl_plan_static_memory(k, p->dev, stat);
    pl_sim_opts so = {.contention = p->contention};
    pl_sim_result r;
    memset(&r, 0, sizeof r);
    pl_err err = {""};
    if (pl_simulate(k, p, &so, &r, &err) < 0) fail_msg("%s: %s", where, err.msg);
    if (r.oom)
        fail_msg("%s: simulator: device %d over by %g bytes", where, r.oom_dev, r.oom_excess_bytes);
    for (int d = 0; d < k->n_devs; d++) {
        double cap = k->c->devs[d].memory_bytes;
        if (cap > 0 && stat[d] > cap)
            fail_msg("%s: static memory %g > %g on %d", where, stat[d], cap, d);
        if (r.peak_mem_bytes[d] > 0 && stat[d] > 0)
            st->worst_ratio = fmax(st->worst_ratio, r.peak_mem_bytes[d] / stat[d]);
        if (r.peak_mem_bytes[d] > 1.5 * stat[d] + 1)
            fail_msg("%s: device %d peaks at %g, static estimate %g", where, d, r.peak_mem_bytes[d],
                     stat[d]);
    }
    pl_sim_result_free(&r);
    free(stat);
}

/* Also: moirai (listed last) is never worse than the best of the heuristics before it but
 * random, which it runs itself (docs/moirai.md), when they all ran whole; when their time ran
 * out (the sanitizers' build on a slow machine: m-sct alone takes seconds on rnnlm_unrolled),
 * its note must say so ("heuristics: ..."), and the comparison does not apply. */
static void zoo_one(const pl_cost *k, const char *model, const char *cluster, zoo_stats *st)
{
    char where[256];
    double best = INFINITY;
    for (int i = 0; i < N_ALL; i++) {
        snprintf(where, sizeof where, "%s on %s by %s", model, cluster, ALL[i]);
        pl_err err;
        pl_plan *p = try_place(ALL[i], k, PL_CONTENTION_PORTS, 1, &err);
        if (!p) fail_msg("%s: %s", where, err.msg);
        for (int v = 0; v < k->n_ops; v++)
            if (p->dev[v] < 0 || p->dev[v] >= k->n_devs) fail_msg("%s: op %d unplaced", where, v);
        double ms = simulate(k, p, PL_CONTENTION_PORTS, true);
        if (ms < pl_lower_bound(k) * (1 - 1e-9)) fail_msg("%s: below the lower bound", where);
        bool cut = !strcmp(ALL[i], "moirai") && strstr(err.msg, "heuristics: ");
        if (cut) print_message("    %s: %.180s\n", where, err.msg);
        if (!strcmp(ALL[i], "moirai") && !cut && ms > best * (1 + 1e-12))
            fail_msg("%s: %g, worse than the best heuristic's %g (%s)", where, ms, best, err.msg);
        if (strcmp(ALL[i], "random")) best = fmin(best, ms);
        check_memory(k, p, st, where);
        st->runs++;
        pl_plan_free(p);
    }
}

static void test_zoo_on_every_cluster(void **state)
{
    (void)state;
    glob_t models, clusters;
    assert_int_equal(glob("models/*.onnx", 0, NULL, &models), 0);
    if (glob("examples/clusters/*.json", 0, NULL, &clusters) != 0) clusters.gl_pathc = 0;
    int nc = (int)clusters.gl_pathc + 1;
    pl_cluster **cl = calloc(nc, sizeof *cl);
    for (int j = 0; j < nc - 1; j++) {
        pl_err err = {""};
        cl[j] = pl_cluster_load(clusters.gl_pathv[j], &err);
        if (!cl[j]) fail_msg("%s: %s", clusters.gl_pathv[j], err.msg);
    }
    cl[nc - 1] = v100x4();
    zoo_stats st = {0};
    for (size_t i = 0; i < models.gl_pathc; i++) {
        pl_graph *g = tu_load(models.gl_pathv[i]);
        for (int j = 0; j < nc; j++) {
            pl_cost *k = cost(g, cl[j]);
            zoo_one(k, models.gl_pathv[i], j < nc - 1 ? clusters.gl_pathv[j] : "4xV100", &st);
            pl_cost_free(k);
        }
        pl_graph_free(g);
    }
    print_message("zoo: %d plans checked; worst simulated peak / static estimate %.3f\n", st.runs,
                  st.worst_ratio);
    assert_int_equal(st.runs, N_ALL * (int)models.gl_pathc * nc);
    for (int j = 0; j < nc; j++)
        pl_cluster_free(cl[j]);
    free(cl);
    globfree(&models);
    if (nc > 1) globfree(&clusters);
}

/* ---- memory: refusals and forced splits ---- */

static void test_refuses_when_nothing_fits(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/resnet50.onnx"); /* 97 MiB of weights */
    pl_cluster *c = uniform(2, "V100-SXM2-16GB", 32.0 * 1024 * 1024, 25e9, 5e-6);
    pl_cost *k = cost(g, c);
    for (int i = 0; i < N_ALL; i++) {
        pl_err err;
        pl_plan *p = try_place(ALL[i], k, 0, 1, &err);
        if (p) fail_msg("%s placed resnet50 on 2 x 32 MiB", ALL[i]);
        if (strcmp(ALL[i], "single") == 0)
            assert_contains(err.msg, "no single device fits");
        else if (strstr(ALL[i], "m-sct") == NULL && strcmp(ALL[i], "metis") != 0)
            assert_contains(err.msg, "no placement fits: total weights");
    }
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Weights of 97 MiB over devices of 40 MiB: single refuses, naming sizes; every other
 * algorithm splits, and the simulator confirms the memory. */
static void split_forced(const char *model, int n_devs, double mem, const char *msg1,
                         const char *msg2)
{
    pl_graph *g = tu_load(model);
    pl_cluster *c = uniform(n_devs, "V100-SXM2-16GB", mem, 25e9, 5e-6);
    pl_cost *k = cost(g, c);
    zoo_stats st = {0};
    for (int i = 0; i < N_ALL; i++) {
        pl_err err;
        pl_plan *p = try_place(ALL[i], k, 0, 3, &err);
        if (strcmp(ALL[i], "single") == 0) {
            if (p) fail_msg("single placed %s on %g-byte devices", model, mem);
            assert_contains(err.msg, msg1);
            assert_contains(err.msg, msg2);
            continue;
        }
        if (!p) fail_msg("%s: %s: %s", model, ALL[i], err.msg);
        int used = 0, seen[64] = {0};
        for (int v = 0; v < k->n_ops; v++)
            used += !seen[p->dev[v]]++;
        if (used < 2) fail_msg("%s used one device", ALL[i]);
        simulate(k, p, 0, true);
        check_memory(k, p, &st, ALL[i]);
        pl_plan_free(p);
    }
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

static void test_memory_forces_a_split(void **state)
{
    (void)state;
    split_forced("models/resnet50.onnx", 4, 40.0 * 1024 * 1024, "resnet50: needs 97.",
                 "on one device; the largest has 40.00 MiB: no single device fits");
    split_forced("models/bert_base.onnx", 4, 160.0 * 1024 * 1024, "bert_base: needs 4",
                 "no single device fits");
}

/* Issue s44-2: moirai's heuristics keep its time limit (on a 3,001-op model they took 21 s of
 * a 3 s limit: nine coarser-cuts passes of seconds each). Counted, not timed: resnet50 on
 * 4 x 40 MiB, where no single device fits. With no deadline every heuristic runs; with one
 * already passed, they run only until one gives a plan that fits (single refuses, so at least
 * two run), the rest are skipped, and that plan is kept. */
static void test_moirai_heuristics_keep_the_deadline(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/resnet50.onnx");
    pl_cluster *c = uniform(4, "V100-SXM2-16GB", 40.0 * 1024 * 1024, 25e9, 5e-6);
    pl_cost *k = cost(g, c);
    pl_place_opts o = {.seed = 1, .time_limit_s = 0.3};
    pk_heur_stats all, late;
    pl_err why = {""};
    pl_plan *p = pk_moirai_heuristics(k, &o, INFINITY, &all, &why);
    assert_non_null(p);
    assert_int_equal(all.run, all.listed);
    assert_true(all.listed >= 8); /* every listed algorithm but random, moirai, drl */
    assert_false(all.late);
    pl_plan_free(p);
    p = pk_moirai_heuristics(k, &o, pl_now() - 1, &late, &why);
    assert_non_null(p);
    assert_true(late.late);
    assert_int_equal(late.listed, all.listed);
    print_message("    a deadline passed: %d of %d heuristics run\n", late.run, late.listed);
    assert_true(late.run >= 2 && late.run < late.listed);
    assert_contains(why.msg, "no single device fits");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* One op whose own weights exceed the largest device: named in the message. */
static void test_refuses_an_op_too_big(void **state)
{
    (void)state;
    const char *text = "{\"format\": \"placer-taskgraph/1\", \"name\": \"big\", \"nodes\": ["
                       "{\"name\": \"small\", \"flops\": 1e6, \"weight_bytes\": \"1 MiB\"},"
                       "{\"name\": \"huge\", \"flops\": 1e6, \"weight_bytes\": \"3 MiB\"}],"
                       "\"edges\": [{\"from\": \"small\", \"to\": \"huge\", \"bytes\": 1000}]}";
    pl_graph *g = taskgraph(text);
    pl_cluster *c = uniform(4, "V100-SXM2-16GB", 2.0 * 1024 * 1024, 25e9, 5e-6);
    pl_cost *k = cost(g, c);
    pl_err err;
    const char *mine[] = {"m-topo", "m-etf", "heft", "getf", "random", "expert"};
    for (int i = 0; i < 6; i++) {
        assert_null(try_place(mine[i], k, 0, 0, &err));
        assert_contains(err.msg, "op 'huge' alone needs 3.");
    }
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Memory so tight that greedy algorithms may run out although the totals fit: each either
 * places within memory or names the op it could not place; none trips over a device whose
 * queue emptied. */
static void test_tight_memory_places_or_names_the_op(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/resnet50.onnx");
    const double mib = 1024.0 * 1024;
    const double mems[] = {34 * mib, 36 * mib, 40 * mib, 48 * mib};
    for (int m = 0; m < 4; m++) {
        pl_cluster *c = uniform(3, "V100-SXM2-16GB", mems[m], 25e9, 5e-6);
        pl_cost *k = cost(g, c);
        zoo_stats st = {0};
        for (int i = 0; i < N_ALL; i++) {
            if (!strcmp(ALL[i], "single")) continue;
            pl_err err;
            pl_plan *p = try_place(ALL[i], k, 0, 1, &err);
            if (!p) {
                assert_null(strstr(err.msg, "internal"));
                /* a refusal names the op that found no room, or the over-full device, or
                 * says that no split fits (expert) or no plan does (moirai) */
                if (!strstr(err.msg, "no room for op '") &&
                    !strstr(err.msg, "no device can hold op '") &&
                    !strstr(err.msg, "of static memory but has") &&
                    !strstr(err.msg, "fits in memory") &&
                    !strstr(err.msg, "no plan fits the devices: "))
                    fail_msg("%s: unclear refusal: %s", ALL[i], err.msg);
                continue;
            }
            simulate(k, p, 0, true);
            check_memory(k, p, &st, ALL[i]);
            pl_plan_free(p);
        }
        pl_cost_free(k), pl_cluster_free(c);
    }
    pl_graph_free(g);
}

/* ---- static memory ---- */

/* Weights count once per device however many ops read them; the working set is the largest
 * live set; graph outputs stay where they are made. */
static void test_static_memory_counts_weights_once_per_device(void **state)
{
    (void)state;
    pl_graph *g = pl_graph_new("shared");
    int w = pl_graph_tensor(g, "w"), x = pl_graph_tensor(g, "x");
    int y = pl_graph_tensor(g, "y"), z = pl_graph_tensor(g, "z");
    int64_t wd[1] = {1000}, xd[1] = {100}, yd[1] = {10}, zd[1] = {1};
    pl_tensor_set_shape(&g->tensors[w], PL_DT_UINT8, 1, wd);
    pl_tensor_set_shape(&g->tensors[x], PL_DT_UINT8, 1, xd);
    pl_tensor_set_shape(&g->tensors[y], PL_DT_UINT8, 1, yd);
    pl_tensor_set_shape(&g->tensors[z], PL_DT_UINT8, 1, zd);
    g->tensors[w].flags |= PL_TENSOR_WEIGHT;
    pl_graph_add_input(g, x);
    int a = pl_graph_add_op(g, "a", "MatMul", ""), b = pl_graph_add_op(g, "b", "MatMul", "");
    pl_op_add_input(g, a, x), pl_op_add_input(g, a, w), pl_op_add_output(g, a, y);
    pl_op_add_input(g, b, y), pl_op_add_input(g, b, w), pl_op_add_output(g, b, z);
    pl_graph_add_output(g, z);
    pl_err err = {""};
    if (pl_graph_finalize(g, "shared", &err) < 0) fail_msg("%s", err.msg);
    pl_cluster *c = v100x4();
    pl_cost *k = cost(g, c);
    double mem[4];
    int same[2] = {0, 0}, apart[2] = {0, 1};
    pl_plan_static_memory(k, same, mem);
    /* w once; live at a: x, y; at b: y, z; z held as a graph output */
    assert_close(mem[0], 1000 + 110 + 1, 1e-12);
    assert_close(mem[1], 0, 1e-12);
    pl_plan_static_memory(k, apart, mem);
    assert_close(mem[0], 1000 + 110, 1e-12);
    assert_close(mem[1], 1000 + 11 + 1, 1e-12);
    double ws[2], held[2], io = -1;
    pl_op_memory(k, ws, held, &io);
    assert_close(ws[0], 110, 1e-12);
    assert_close(ws[1], 11, 1e-12);
    assert_close(held[0], 0, 1e-12);
    assert_close(held[1], 1, 1e-12);
    assert_close(io, 0, 1e-12);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- speed ---- */

/* A layered random DAG: `width` ops per layer, each reading two ops of the layer before. */
static pl_graph *wide_dag(int n, int width)
{
    pl_graph *g = pl_graph_new("wide");
    char name[32];
    srand(5);
    int64_t dims[1];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "n%d", i);
        int op = pl_graph_add_op(g, name, "Task", "placer.taskgraph");
        int t = pl_graph_tensor(g, name);
        dims[0] = 1000 + rand() % 1000000;
        pl_tensor_set_shape(&g->tensors[t], PL_DT_UINT8, 1, dims);
        pl_op_add_output(g, op, t);
        for (int r = 0; i >= width && r < (width > 1 ? 2 : 1); r++) {
            int from = (i / width - 1) * width + rand() % width;
            snprintf(name, sizeof name, "n%d", from);
            pl_op_add_input(g, op, pl_graph_find_tensor(g, name)); /* a repeat is kept: Mul(x, x) */
        }
    }
    pl_err err = {""};
    if (pl_graph_finalize(g, "wide", &err) < 0) fail_msg("%s", err.msg);
    return g;
}

#if defined(__SANITIZE_ADDRESS__)
#define SPEED_LIMIT_S 20.0 /* sanitizers slow everything several times over */
#else
#define SPEED_LIMIT_S 2.0
#endif

static void test_heft_and_etf_place_50k_ops_fast(void **state)
{
    (void)state;
    const int shapes[2][2] = {{50000, 1}, {50000, 1000}}; /* a chain, and a wide DAG */
    pl_cluster *c = uniform(8, "V100-SXM2-16GB", 0, 25e9, 5e-6);
    for (int s = 0; s < 2; s++) {
        pl_graph *g = wide_dag(shapes[s][0], shapes[s][1]);
        pl_cost *k = cost(g, c);
        srand(9);
        for (size_t i = 0; i < (size_t)k->n_ops * k->n_devs; i++)
            k->op_s[i] = 1e-5 * (1 + rand() % 100);
        const char *fast[] = {"heft", "m-etf", "getf"};
        for (int i = 0; i < 3; i++) {
            pl_err err;
            pl_plan *p = try_place(fast[i], k, 0, 0, &err);
            if (!p) fail_msg("%s: %s", fast[i], err.msg);
            print_message("%s on %d ops (width %d), 8 devices: %.3f s\n", fast[i], k->n_ops,
                          shapes[s][1], p->search_s);
            if (p->search_s > SPEED_LIMIT_S) fail_msg("%s took %.2f s", fast[i], p->search_s);
            assert_true(simulate(k, p, 0, false) >= pl_lower_bound(k) * (1 - 1e-9));
            pl_plan_free(p);
        }
        pl_cost_free(k), pl_graph_free(g);
    }
    pl_cluster_free(c);
}

/* All devices are free at t = 0, so every op's first start time ties across devices: m-ETF
 * must break the tie by finish time, not by device index, or a CPU listed first takes the
 * model (bug found on the example clusters: 29.4 ms instead of 14.6 ms for resnet50). */
static void test_etf_breaks_start_ties_by_finish(void **state)
{
    (void)state;
    pl_graph *g = taskgraph("{\"format\": \"placer-taskgraph/1\", \"nodes\": ["
                            "{\"name\": \"a\", \"times_s\": {\"slow\": 10, \"fast\": 1}},"
                            "{\"name\": \"b\", \"times_s\": {\"slow\": 10, \"fast\": 1}}],"
                            " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1000}]}");
    pl_cluster *c = pl_cluster_new("slow-first");
    pl_cluster_add_device(c, "d0", PL_DEV_CPU, "slow");
    pl_cluster_add_device(c, "d1", PL_DEV_GPU, "fast");
    pl_cluster_set_link(c, 0, 1, 1e9, 0, true);
    finalize(c);
    pl_cost *k = cost(g, c);
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts o = {0};
    pl_err err = {""};
    if (pl_place(pl_algo_find("m-etf"), k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(p->dev[pl_graph_find_op(g, "a")], 1);
    assert_int_equal(p->dev[pl_graph_find_op(g, "b")], 1);
    pl_plan_free(p);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
}

static int echo_run(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    (void)k, (void)o, (void)out, (void)err;
    return 0;
}

/* A module above place registers an algorithm: every verb then finds it by name and lists it;
 * a taken name, a missing entry point and a full registry are refused. */
static void test_register_algorithm(void **state)
{
    (void)state;
    int before;
    pl_algo_list(&before);
    pl_err err = {""};
    pl_algo a = {"echo", echo_run, "test", true};
    assert_int_equal(pl_algo_register(&a, &err), 0);
    const pl_algo *found = pl_algo_find("echo");
    assert_non_null(found);
    assert_true(found->learned && found->run == echo_run);
    int after;
    pl_algo_list(&after);
    assert_int_equal(after, before + 1);
    assert_int_equal(pl_algo_register(&a, &err), -1);
    assert_contains(err.msg, "already registered");
    pl_algo heft = {"heft", echo_run, "test", false};
    assert_int_equal(pl_algo_register(&heft, &err), -1);
    pl_algo none = {"nothing", NULL, "test", false};
    assert_int_equal(pl_algo_register(&none, &err), -1);
    const pl_algo *list[PL_MAX_ALGOS];
    assert_int_equal(pl_algo_parse_list("heft,echo", "--algos", list, PL_MAX_ALGOS, &err), 2);
    char names[PL_MAX_ALGOS][16];
    int n = after;
    for (; n < PL_MAX_ALGOS; n++) {
        snprintf(names[n], sizeof names[n], "fill%d", n);
        pl_algo f = {names[n], echo_run, "test", true};
        assert_int_equal(pl_algo_register(&f, &err), 0);
    }
    pl_algo one_more = {"one-more", echo_run, "test", true};
    assert_int_equal(pl_algo_register(&one_more, &err), -1);
    assert_contains(err.msg, "no room");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_lists_all_ten_in_order),
        cmocka_unit_test(test_place_sets_algo_time_and_order),
        cmocka_unit_test(test_replacing_drops_the_old_schedule),
        cmocka_unit_test(test_random_is_seeded),
        cmocka_unit_test(test_lower_bound_terms),
        cmocka_unit_test(test_lower_bound_brute_force),
        cmocka_unit_test(test_colocation_fork),
        cmocka_unit_test(test_colocation_time_limit),
        cmocka_unit_test(test_colocation_brute_force),
        cmocka_unit_test(test_schedulers_find_fork_join_optimum),
        cmocka_unit_test(test_heft_reproduces_topcuoglu),
        cmocka_unit_test(test_getf_prefers_finish_over_start),
        cmocka_unit_test(test_etf_breaks_start_ties_by_finish),
        cmocka_unit_test(test_static_memory_counts_weights_once_per_device),
        cmocka_unit_test(test_refuses_when_nothing_fits),
        cmocka_unit_test(test_refuses_an_op_too_big),
        cmocka_unit_test(test_memory_forces_a_split),
        cmocka_unit_test(test_moirai_heuristics_keep_the_deadline),
        cmocka_unit_test(test_tight_memory_places_or_names_the_op),
        cmocka_unit_test(test_zoo_on_every_cluster),
        cmocka_unit_test(test_single_if_faster),
        cmocka_unit_test(test_heft_and_etf_place_50k_ops_fast),
        cmocka_unit_test(test_register_algorithm), /* last: it fills the registry */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
