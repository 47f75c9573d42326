/* test_cuts.c: coarser cuts, the post-pass pl_place runs on every algorithm's plan when the
 * cluster charges for stages (docs/placement.md, "Plans that pay").
 *
 * Hand-made plans that cut a chain and a fork into one-op stages, merged to a makespan worked
 * out by hand; over seeded random graphs, every algorithm's plan never gets slower, stays
 * valid (pl_plan_check), in memory and keeps its colocation classes; without stage costs
 * nothing changes; and `placer place` reports the stages and takes --fine-cuts. */
#include "testutil.h"

#include "placer/place.h"

#include "../src/place/algos.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building blocks ---- */

/* Devices d0, d1, ... of models m0, m1, ... (task graphs give their times), fully linked at
 * bw bytes/s without latency; every device pays `overhead` seconds per stage when > 0 and
 * holds `mem` bytes when > 0. */
static pl_cluster *cluster(int n, double bw, double overhead, double mem)
{
    pl_cluster *c = pl_cluster_new("cuts");
    char name[16], model[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "d%d", i);
        snprintf(model, sizeof model, "m%d", i);
        pl_cluster_add_device(c, name, PL_DEV_GPU, model);
        c->devs[i].stage_overhead_s = overhead;
        if (mem > 0) c->devs[i].memory_bytes = mem;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            pl_cluster_set_link(c, i, j, bw, 0, true);
    pl_err err = {""};
    if (pl_cluster_finalize(c, &err) < 0) fail_msg("cluster: %s", err.msg);
    return c;
}

static double simulate(const pl_cost *k, const pl_plan *p, bool *oom)
{
    pl_sim_opts so = {.contention = PL_CONTENTION_PORTS};
    pl_sim_result r = {0};
    pl_err err = {""};
    if (pl_simulate(k, p, &so, &r, &err) < 0) fail_msg("simulate: %s", err.msg);
    double ms = r.makespan_s;
    if (oom) *oom = r.oom;
    pl_sim_result_free(&r);
    return ms;
}

/* A hand-made plan as an algorithm: op i on device stub_dev[i], each device's ops in the order
 * of stub_seq when given, else no order (first ready first served), so that pl_place's
 * post-pass is what is tested. */
static const int *stub_dev, *stub_seq;

static int stub_run(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    (void)o, (void)err;
    for (int i = 0; i < k->n_ops; i++)
        out->dev[i] = stub_dev[i];
    if (stub_seq) pl_plan_set_order(out, stub_seq);
    return 0;
}

static pl_plan *place(const pl_algo *a, const pl_cost *k, bool fine, unsigned seed)
{
    pl_place_opts o = {.fine_cuts = fine, .seed = seed, .time_limit_s = 0.5};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_err err = {""};
    if (pl_place(a, k, &o, p, &err) < 0) fail_msg("%s: %s", a->name, err.msg);
    return p;
}

static int op_dev(const pl_graph *g, const pl_plan *p, const char *name)
{
    for (int i = 0; i < g->n_ops; i++)
        if (!strcmp(g->ops[i].name, name)) return p->dev[i];
    fail_msg("no op '%s'", name);
    return -1;
}

/* ---- hand-computed cases ---- */

/* A chain a → b → c → d → e of 1 ms ops (zero-byte tensors, so transfers take no time) cut
 * a@d0, b@d1, c@d0, d@d1, e@d0: five one-op stages at 0.5 ms each, 5 + 2.5 = 7.5 ms. Least
 * busy first, ties by topological rank: [a] joins b's stage on d1 (4 stages, 7 ms), then [c]
 * joins [a b] (its producer's stage) and d on d1 with it (2 stages, 6 ms), then [e]: one stage,
 * 5 + 0.5 = 5.5 ms, the best any placement does (the chain cannot overlap, and one stage is the
 * least it can be cut into). */
static const char CHAIN[] = "{\"format\": \"placer-taskgraph/1\", \"name\": \"chain\", \"nodes\": ["
                            "{\"name\": \"a\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                            "{\"name\": \"b\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                            "{\"name\": \"c\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                            "{\"name\": \"d\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                            "{\"name\": \"e\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}}],"
                            "\"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 0}, "
                            "{\"from\": \"b\", \"to\": \"c\", \"bytes\": 0},"
                            "{\"from\": \"c\", \"to\": \"d\", \"bytes\": 0}, {\"from\": \"d\", "
                            "\"to\": \"e\", \"bytes\": 0}]}";

static void test_chain_merges_into_one_stage(void **state)
{
    (void)state;
    pl_graph *g = tu_taskgraph(CHAIN);
    pl_cluster *c = cluster(2, 1e9, 0.5e-3, 0);
    pl_cost *k = tu_cost(g, c);
    static const int alternate[] = {0, 1, 0, 1, 0};
    stub_dev = alternate;
    pl_algo stub = {"stub", stub_run, "test", false};
    pl_plan *fine = place(&stub, k, true, 0), *p = place(&stub, k, false, 0);
    assert_close(simulate(k, fine, NULL), 7.5e-3, 1e-9);
    assert_int_equal(fine->stages_before, 0); /* the pass did not run */
    assert_close(simulate(k, p, NULL), 5.5e-3, 1e-9);
    assert_int_equal(p->stages_before, 5);
    assert_int_equal(p->stages_after, 1);
    for (int i = 1; i < k->n_ops; i++)
        assert_int_equal(p->dev[i], p->dev[0]);
    /* a move of one stage is tried on each side: a, c and e (b and d merged before their turn) */
    assert_true(p->cut_simulations >= 4 && p->cut_simulations <= 1 + 2 * 5);
    assert_string_equal(p->algo, "stub");
    /* the pass keeps a deadline, as moirai's heuristics give theirs (a pass of 2,000
     * simulations took 2.7 s on a 3,001-op model, nine of them 21 s under a 3 s limit): one
     * already passed stops it after its first simulation, the five stages left as they are;
     * one far ahead changes nothing */
    pl_place_opts o = {.time_limit_s = 0.5};
    pl_err err = {""};
    assert_int_equal(pk_place_until(&stub, k, &o, pl_now() - 1, p, &err), 0);
    assert_int_equal(p->cut_simulations, 1);
    assert_int_equal(p->stages_before, 5);
    assert_int_equal(p->stages_after, 5);
    assert_close(simulate(k, p, NULL), 7.5e-3, 1e-9);
    assert_int_equal(pk_place_until(&stub, k, &o, pl_now() + 3600, p, &err), 0);
    assert_int_equal(p->stages_after, 1);
    assert_close(simulate(k, p, NULL), 5.5e-3, 1e-9);
    pl_plan_free(fine), pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A fork s → (a1 → a2 → a3) and (b1 → b2 → b3) → j of 1 ms ops, zero-byte tensors, 0.5 ms a
 * stage, cut as a list scheduler cuts it when it sees no stage cost: branch b on d1, branch a
 * on d0 but for a2, which fills a gap on d1 (s, a1, a3, j on d0): [a2] is a one-op stage that
 * splits [a1] from [a3]. The pass moves it to d0, between a1 and a3. The best plan runs one
 * branch on each device: d0 [s] 0-1.5 (it sends to b1), [a1 a2 a3] 1.5-5, [j] (it receives
 * b3) 5-6.5; d1 [b1 b2 b3] 1.5-5: 6.5 ms, against 8 + 0.5 = 8.5 ms on one device; no plan does
 * better, since the path s, a1, a2, a3, j takes 5 ms and, with the branches apart, at least
 * three stages lie on it (s's, a branch's after s sends, j's after it receives). */
static const char FORK[] = "{\"format\": \"placer-taskgraph/1\", \"name\": \"fork\", \"nodes\": ["
                           "{\"name\": \"s\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                           "{\"name\": \"a1\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                           "{\"name\": \"a2\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                           "{\"name\": \"a3\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                           "{\"name\": \"b1\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                           "{\"name\": \"b2\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                           "{\"name\": \"b3\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
                           "{\"name\": \"j\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}}],"
                           "\"edges\": [{\"from\": \"s\", \"to\": \"a1\", \"bytes\": 0}, "
                           "{\"from\": \"a1\", \"to\": \"a2\", \"bytes\": 0},"
                           "{\"from\": \"a2\", \"to\": \"a3\", \"bytes\": 0}, {\"from\": \"a3\", "
                           "\"to\": \"j\", \"bytes\": 0},"
                           "{\"from\": \"s\", \"to\": \"b1\", \"bytes\": 0}, {\"from\": \"b1\", "
                           "\"to\": \"b2\", \"bytes\": 0},"
                           "{\"from\": \"b2\", \"to\": \"b3\", \"bytes\": 0}, {\"from\": \"b3\", "
                           "\"to\": \"j\", \"bytes\": 0}]}";

static void test_fork_keeps_one_branch_per_device(void **state)
{
    (void)state;
    pl_graph *g = tu_taskgraph(FORK);
    pl_cluster *c = cluster(2, 1e9, 0.5e-3, 0);
    pl_cost *k = tu_cost(g, c);
    static const int across[] = {0, 0, 1, 0, 1, 1, 1, 0}; /* s a1 a2 a3 b1 b2 b3 j */
    stub_dev = across;
    pl_algo stub = {"stub", stub_run, "test", false};
    pl_plan *fine = place(&stub, k, true, 0), *p = place(&stub, k, false, 0);
    double before = simulate(k, fine, NULL), after = simulate(k, p, NULL);
    assert_true(before > 6.5e-3 + 1e-9);
    assert_close(after, 6.5e-3, 1e-9);
    assert_int_equal(p->stages_after, 4);
    assert_true(p->stages_before > p->stages_after);
    int a = op_dev(g, p, "a1"), b = op_dev(g, p, "b1");
    assert_true(a != b);
    assert_int_equal(op_dev(g, p, "a2"), a), assert_int_equal(op_dev(g, p, "a3"), a);
    assert_int_equal(op_dev(g, p, "b2"), b), assert_int_equal(op_dev(g, p, "b3"), b);
    pl_plan_free(fine), pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* The chain with 1000-byte weights per op, cut a@d0, b@d1, c@d0, d@d1, e@d2, on devices of
 * 2500 bytes: a device holds two ops at most (the static model: their weights, 2000 bytes,
 * and zero-byte activations). Least busy first, ties by topological rank: a, b and c cannot
 * move (each neighbour's device already has two ops); d joins e on d2 (4 stages); in the next
 * round a joins b on d1 (3 stages); then nothing fits: [a b]@d1 0-2.5 ms (a pays the stage's
 * 0.5), [c]@d0 2.5-4, [d e]@d2 4-6.5, 6.5 ms against 7.5 before, each device within memory. */
static const char CHAIN_W[] =
    "{\"format\": \"placer-taskgraph/1\", \"name\": \"chain\", \"nodes\": ["
    "{\"name\": \"a\", \"weight_bytes\": 1000, \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\", "
    "\"m2\": \"1 ms\"}},"
    "{\"name\": \"b\", \"weight_bytes\": 1000, \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\", "
    "\"m2\": \"1 ms\"}},"
    "{\"name\": \"c\", \"weight_bytes\": 1000, \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\", "
    "\"m2\": \"1 ms\"}},"
    "{\"name\": \"d\", \"weight_bytes\": 1000, \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\", "
    "\"m2\": \"1 ms\"}},"
    "{\"name\": \"e\", \"weight_bytes\": 1000, \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\", "
    "\"m2\": \"1 ms\"}}],"
    "\"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 0}, {\"from\": \"b\", \"to\": \"c\", "
    "\"bytes\": 0},"
    "{\"from\": \"c\", \"to\": \"d\", \"bytes\": 0}, {\"from\": \"d\", \"to\": \"e\", \"bytes\": "
    "0}]}";

static void test_merges_stay_in_memory(void **state)
{
    (void)state;
    pl_graph *g = tu_taskgraph(CHAIN_W);
    pl_cluster *c = cluster(3, 1e9, 0.5e-3, 2500);
    pl_cost *k = tu_cost(g, c);
    static const int spread[] = {0, 1, 0, 1, 2};
    stub_dev = spread;
    pl_algo stub = {"stub", stub_run, "test", false};
    pl_plan *p = place(&stub, k, false, 0);
    assert_int_equal(p->stages_before, 5);
    assert_int_equal(p->stages_after, 3);
    static const int expect[] = {1, 1, 0, 2, 2};
    assert_memory_equal(p->dev, expect, sizeof expect);
    bool oom = true;
    assert_close(simulate(k, p, &oom), 6.5e-3, 1e-9);
    assert_false(oom);
    double mem[3];
    pl_plan_static_memory(k, p->dev, mem);
    for (int d = 0; d < 3; d++)
        assert_true(mem[d] <= 2500);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* a (1 ms) feeds s (0.1 ms) and c (1 ms) on d0, s feeds r (0.1 ms) on d1, where a stage costs
 * nothing; a, s, c run on d0 only, r on d1 only. In the order a, s, c, d0's run is cut after
 * s (it sends): [a s] 0-1.6 (a pays 0.5), [c] 1.6-3.1; r 1.6-1.7: 3.1 ms. No op can change
 * device, but c can join a's stage by running before s: [a c s] 0-2.6, r 2.6-2.7: 2.7 ms, two
 * stages. */
static const char REORDER[] =
    "{\"format\": \"placer-taskgraph/1\", \"name\": \"reorder\", \"nodes\": ["
    "{\"name\": \"a\", \"times_s\": {\"m0\": \"1 ms\"}},"
    "{\"name\": \"s\", \"times_s\": {\"m0\": \"0.1 ms\"}},"
    "{\"name\": \"c\", \"times_s\": {\"m0\": \"1 ms\"}},"
    "{\"name\": \"r\", \"times_s\": {\"m1\": \"0.1 ms\"}}],"
    "\"edges\": [{\"from\": \"a\", \"to\": \"s\", \"bytes\": 0},"
    "{\"from\": \"a\", \"to\": \"c\", \"bytes\": 0}, {\"from\": \"s\", \"to\": \"r\", \"bytes\": "
    "0}]}";

static void test_reorder_joins_a_stage_on_its_device(void **state)
{
    (void)state;
    pl_graph *g = tu_taskgraph(REORDER);
    pl_cluster *c = cluster(2, 1e9, 0.5e-3, 0);
    c->devs[1].stage_overhead_s = 0;
    pl_cost *k = tu_cost(g, c);
    static const int dev[] = {0, 0, 0, 1}, seq[] = {0, 1, 2, 3}; /* a s c r */
    stub_dev = dev, stub_seq = seq;
    pl_algo stub = {"stub", stub_run, "test", false};
    pl_plan *fine = place(&stub, k, true, 0), *p = place(&stub, k, false, 0);
    stub_seq = NULL;
    assert_close(simulate(k, fine, NULL), 3.1e-3, 1e-9);
    assert_close(simulate(k, p, NULL), 2.7e-3, 1e-9);
    assert_int_equal(p->stages_before, 3);
    assert_int_equal(p->stages_after, 2);
    static const int order0[] = {0, 2, 1}; /* a c s */
    assert_non_null(p->order);
    assert_int_equal(p->order_off[1] - p->order_off[0], 3);
    assert_memory_equal(p->order + p->order_off[0], order0, sizeof order0);
    pl_plan_free(fine), pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- properties over seeded random graphs ---- */

/* A random DAG of n ops (pl_rng, seeded): times 1-9 ms per device, 0-999 weight bytes, each
 * earlier op an input with probability 1/3, tensors of 10-50 kB, and with coloc, every third
 * op in class "k". */
static char *random_graph(uint64_t seed, int n, int D, bool coloc)
{
    size_t cap = 256 + (size_t)n * (120 + 40 * D) + (size_t)n * n * 80, at = 0;
    char *b = malloc(cap);
    at += snprintf(b + at, cap - at,
                   "{\"format\": \"placer-taskgraph/1\", \"name\": \"r\", \"nodes\": [");
    for (int i = 0; i < n; i++) {
        at += snprintf(b + at, cap - at, "%s{\"name\": \"n%d\", %s\"weight_bytes\": %d, ",
                       i ? "," : "", i, coloc && i % 3 == 1 ? "\"colocation\": \"k\", " : "",
                       pl_rng_below(&seed, 1000));
        at += snprintf(b + at, cap - at, "\"times_s\": {");
        for (int d = 0; d < D; d++)
            at += snprintf(b + at, cap - at, "%s\"m%d\": %.6f", d ? "," : "", d,
                           0.001 * (1 + pl_rng_below(&seed, 9)));
        at += snprintf(b + at, cap - at, "}}");
    }
    at += snprintf(b + at, cap - at, "], \"edges\": [");
    int ne = 0;
    for (int j = 1; j < n; j++)
        for (int i = 0; i < j; i++)
            if (pl_rng_below(&seed, 3) == 0)
                at += snprintf(b + at, cap - at,
                               "%s{\"from\": \"n%d\", \"to\": \"n%d\", \"tensor\": \"t%d\", "
                               "\"bytes\": %d}",
                               ne++ ? "," : "", i, j, i, 10000 * (1 + i % 5));
    snprintf(b + at, cap - at, "]}");
    return b;
}

static const char *const ALGOS[] = {"heft", "m-etf", "getf", "m-topo", "metis", "random", "expert"};
#define N_ALGOS ((int)(sizeof ALGOS / sizeof *ALGOS))

/* Every algorithm's plan, with and without the pass, on random graphs and clusters with stage
 * costs (some with memory tight enough to matter, some with a colocation class): the pass
 * never makes the predicted makespan longer, never more stages, and its plan passes the plan
 * checker, fits in memory and keeps the class together. */
static void test_never_slower_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint64_t r = seed * 7919;
        int n = 8 + pl_rng_below(&r, 20), D = 2 + pl_rng_below(&r, 2);
        bool coloc = seed % 3 == 0;
        char *text = random_graph(seed, n, D, coloc);
        pl_graph *g = tu_taskgraph(text);
        double mem = seed % 4 == 1 ? 1000.0 * n / D + 1e6 : 0;
        pl_cluster *c =
            cluster(D, 1e7 * (1 + pl_rng_below(&r, 100)), 1e-4 * (1 + pl_rng_below(&r, 20)), mem);
        pl_cost *k = tu_cost(g, c);
        for (int a = 0; a < N_ALGOS; a++) {
            const pl_algo *al = pl_algo_find(ALGOS[a]);
            pl_plan *fine = place(al, k, true, (unsigned)seed),
                    *p = place(al, k, false, (unsigned)seed);
            bool oom_fine, oom;
            double before = simulate(k, fine, &oom_fine), after = simulate(k, p, &oom);
            if (!oom_fine && (after > before || oom))
                fail_msg("seed %llu, %s: %.9g ms after the pass, %.9g before%s",
                         (unsigned long long)seed, ALGOS[a], after * 1e3, before * 1e3,
                         oom ? " (out of memory)" : "");
            assert_true(p->cut_simulations >= 1); /* the pass ran */
            assert_true(p->stages_after <= p->stages_before);
            pl_err err = {""};
            if (pl_plan_check(p, g, c, &err) < 0)
                fail_msg("seed %llu, %s: %s", (unsigned long long)seed, ALGOS[a], err.msg);
            pl_plan_free(fine), pl_plan_free(p);
        }
        pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g), free(text);
    }
}

/* Without stage costs the pass does not run: every algorithm's plan is the same, device for
 * device and in the same order, with or without --fine-cuts. */
static void test_no_stage_costs_no_change(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        char *text = random_graph(seed, 12, 2, false);
        pl_graph *g = tu_taskgraph(text);
        pl_cluster *c = cluster(2, 1e8, 0, 0);
        pl_cost *k = tu_cost(g, c);
        for (int a = 0; a < N_ALGOS; a++) {
            const pl_algo *al = pl_algo_find(ALGOS[a]);
            pl_plan *fine = place(al, k, true, (unsigned)seed),
                    *p = place(al, k, false, (unsigned)seed);
            assert_memory_equal(p->dev, fine->dev, (size_t)k->n_ops * sizeof *p->dev);
            assert_true(!p->order == !fine->order);
            if (p->order)
                assert_memory_equal(p->order, fine->order, (size_t)k->n_ops * sizeof *p->order);
            assert_int_equal(p->stages_before, 0);
            assert_int_equal(p->cut_simulations, 0);
            pl_plan_free(fine), pl_plan_free(p);
        }
        pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g), free(text);
    }
}

/* ---- the command ---- */

/* `placer place` on this machine's two cores reports the stages it merged and is never slower
 * than with --fine-cuts, which reports none. */
static void test_cli_reports_cuts(void **state)
{
    (void)state;
    const char *base =
        "place models/inception_v3.onnx --cluster examples/clusters/local-cpu-percore.json "
        "--algo heft --json 2>/dev/null";
    char args[512];
    json_t *coarse = tu_run_json(base);
    snprintf(args, sizeof args, "%s --fine-cuts", base);
    json_t *fine = tu_run_json(args);
    json_t *cuts = json_object_get(coarse, "cuts");
    assert_non_null(cuts);
    assert_null(json_object_get(fine, "cuts"));
    int before = (int)json_integer_value(json_object_get(cuts, "stages_before"));
    int after = (int)json_integer_value(json_object_get(cuts, "stages_after"));
    assert_true(before > 1 && after < before);
    assert_true(json_integer_value(json_object_get(cuts, "simulations")) > 1);
    assert_true(json_real_value(json_object_get(coarse, "makespan_s")) <=
                json_real_value(json_object_get(fine, "makespan_s")));
    json_decref(coarse), json_decref(fine);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_merges_into_one_stage),
        cmocka_unit_test(test_fork_keeps_one_branch_per_device),
        cmocka_unit_test(test_merges_stay_in_memory),
        cmocka_unit_test(test_reorder_joins_a_stage_on_its_device),
        cmocka_unit_test(test_never_slower_random),
        cmocka_unit_test(test_no_stage_costs_no_change),
        cmocka_unit_test(test_cli_reports_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
