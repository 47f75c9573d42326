/* test_drl.c: AutoDeep's DRL placer (docs/learn.md, "The DRL placer"): registered with the
 * placers, it finds the brute-force optimum of small task graphs, deterministically for a
 * seed, and every plan it returns fits and runs. With a scoring hook (pl_place_opts.measure,
 * "Measured episodes"), here a made-up latency per placement, it spends exactly its episode
 * budget, returns the best placement it was told of with that latency, and stops at the first
 * failure to measure. The real measurement is tests/test_measured.c's. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/place.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fork's edges, for the graphs below. */
#define FORK_EDGES                                                                                 \
    "\"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": \"1 MB\"},"                           \
    "{\"from\": \"a\", \"to\": \"c\", \"bytes\": \"1 MB\"},"                                       \
    "{\"from\": \"b\", \"to\": \"b2\", \"bytes\": \"1 MB\"},"                                      \
    "{\"from\": \"c\", \"to\": \"c2\", \"bytes\": \"1 MB\"},"                                      \
    "{\"from\": \"b2\", \"to\": \"j\", \"bytes\": \"1 MB\"},"                                      \
    "{\"from\": \"c2\", \"to\": \"j\", \"bytes\": \"1 MB\"}]}"

/* Two parallel chains and a join, on two devices where each chain is faster on a different
 * one: the optimum splits the chains. */
static const char *GRAPH =
    "{\"format\": \"placer-taskgraph/1\", \"name\": \"fork\", \"nodes\": ["
    "{\"name\": \"a\", \"times_s\": {\"d0\": \"1 ms\", \"d1\": \"1 ms\"}},"
    "{\"name\": \"b\", \"times_s\": {\"d0\": \"4 ms\", \"d1\": \"9 ms\"}},"
    "{\"name\": \"c\", \"times_s\": {\"d0\": \"9 ms\", \"d1\": \"4 ms\"}},"
    "{\"name\": \"b2\", \"times_s\": {\"d0\": \"3 ms\", \"d1\": \"7 ms\"}},"
    "{\"name\": \"c2\", \"times_s\": {\"d0\": \"7 ms\", \"d1\": \"3 ms\"}},"
    "{\"name\": \"j\", \"times_s\": {\"d0\": \"1 ms\", \"d1\": \"1 ms\"}}]," FORK_EDGES;

static const char *CLUSTER =
    "{\"format\": \"placer-cluster/1\", \"name\": \"pair\", \"devices\": ["
    "{\"name\": \"d0\", \"model\": \"V100\"}, {\"name\": \"d1\", \"model\": \"V100\"}],"
    "\"links\": [{\"from\": \"d0\", \"to\": \"d1\", \"bandwidth_Bps\": \"10 GB/s\", "
    "\"latency_s\": \"10 us\", \"both_ways\": true}]}";

static double makespan(const pl_cost *k, const pl_plan *p)
{
    pl_sim_result r;
    pl_err err = {""};
    if (pl_simulate(k, p, NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    double t = r.makespan_s;
    pl_sim_result_free(&r);
    return t;
}

static double brute_force(const pl_cost *k)
{
    double best = INFINITY;
    for (int mask = 0; mask < 1 << k->n_ops; mask++) {
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        for (int v = 0; v < k->n_ops; v++)
            p->dev[v] = mask >> v & 1;
        best = fmin(best, makespan(k, p));
        pl_plan_free(p);
    }
    return best;
}

/* The fork graph on a cluster given as JSON text, drl registered. */
static pl_cost *open_fork(const char *cluster, pl_graph **g, pl_cluster **c)
{
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    *g = tu_taskgraph(GRAPH);
    *c = pl_cluster_load(tu_tmpfile(cluster, strlen(cluster), ".json"), &err);
    if (!*c) fail_msg("%s", err.msg);
    return tu_cost(*g, *c);
}

static void test_registered(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    assert_int_equal(pl_learn_register(&err), 0); /* idempotent */
    const pl_algo *a = pl_algo_find("drl");
    assert_non_null(a);
    assert_true(a->learned);
}

/* The optimum (both chains on their fast devices: 1 + 7 + 0.1 + 1 ms or so) found, and the
 * same plan twice for the same seed. */
static void test_finds_brute_force_optimum(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k = open_fork(CLUSTER, &g, &c);
    double opt = brute_force(k);
    const pl_algo *a = pl_algo_find("drl");
    pl_place_opts o = {.seed = 7, .fine_cuts = true};
    pl_plan *p1 = pl_plan_new(k->n_ops, k->n_devs), *p2 = pl_plan_new(k->n_ops, k->n_devs);
    assert_int_equal(pl_place(a, k, &o, p1, &err), 0);
    assert_int_equal(pl_place(a, k, &o, p2, &err), 0);
    assert_close(makespan(k, p1), opt, 1e-9);
    assert_string_equal(err.msg, ""); /* found by the episodes: no baseline's credit */
    for (int v = 0; v < k->n_ops; v++)
        assert_int_equal(p1->dev[v], p2->dev[v]);
    pl_plan_free(p1), pl_plan_free(p2);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Credit (docs/learn.md): on a link so slow that any split costs seconds, no sampled placement
 * beats the baseline experiment "everything on d0" (25 ms; d1 ties, and a tie is not
 * faster), and the answer says it is that experiment's, not the episodes'. */
static void test_baseline_answer_credited(void **state)
{
    (void)state;
    const char *slow = "{\"format\": \"placer-cluster/1\", \"name\": \"slow\", \"devices\": ["
                       "{\"name\": \"d0\", \"model\": \"V100\"}, {\"name\": \"d1\", "
                       "\"model\": \"V100\"}], \"links\": [{\"from\": \"d0\", \"to\": \"d1\", "
                       "\"bandwidth_Bps\": \"10 kB/s\", \"both_ways\": true}]}";
    pl_err err = {""};
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k = open_fork(slow, &g, &c);
    pl_place_opts o = {.seed = 7, .fine_cuts = true, .iterations = 8};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    assert_int_equal(pl_place(pl_algo_find("drl"), k, &o, p, &err), 0);
    assert_close(makespan(k, p), 0.025, 1e-9);
    for (int v = 0; v < k->n_ops; v++)
        assert_int_equal(p->dev[v], 0);
    assert_non_null(strstr(err.msg, "drl: the answer is a baseline experiment's, everything on "
                                    "d0: none of 8 sampled placements was faster"));
    pl_plan_free(p);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A zoo model on AutoDeep's testbed: a plan that fits, no slower than the slowest
 * single-device plan it could have sampled first, within the lower bound's reach. */
static void test_zoo_model_plan(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    pl_graph *g = tu_load("models/resnet50.onnx");
    pl_cluster *c = pl_cluster_load("examples/clusters/autodeep-4xk80.json", &err);
    pl_cost *k = tu_cost(g, c);
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts o = {.seed = 1, .time_limit_s = 5};
    assert_int_equal(pl_place(pl_algo_find("drl"), k, &o, p, &err), 0);
    pl_sim_result r;
    assert_int_equal(pl_simulate(k, p, NULL, &r, &err), 0);
    assert_false(r.oom);
    assert_true(r.makespan_s >= pl_lower_bound(k) * (1 - 1e-9));
    pl_sim_result_free(&r);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* The fork graph on two devices that charge 1 ms per stage, so that pl_place would merge
 * cuts (docs/placement.md, "Plans that pay") if it were allowed to. */
static const char *STAGED =
    "{\"format\": \"placer-cluster/1\", \"name\": \"pair\", \"devices\": ["
    "{\"name\": \"d0\", \"model\": \"V100\", \"stage_overhead_s\": \"1 ms\"},"
    "{\"name\": \"d1\", \"model\": \"V100\", \"stage_overhead_s\": \"1 ms\"}],"
    "\"links\": [{\"from\": \"d0\", \"to\": \"d1\", \"bandwidth_Bps\": \"10 GB/s\", "
    "\"latency_s\": \"10 us\", \"both_ways\": true}]}";

/* A made-up measurement: a latency per placement (1 ms plus a hash of it, so that placements
 * differ), every call recorded; the call numbered fail_at (from 1) fails as a dead worker. */
typedef struct fake {
    int calls, fail_at;
    double best;     /* the smallest latency returned */
    int best_dev[8]; /* its placement */
} fake;

static double fake_latency(const pl_plan *p)
{
    uint64_t h = 7;
    for (int v = 0; v < p->n_ops; v++)
        h = h * 31 + (uint64_t)p->dev[v] + 1;
    return 1e-3 + (double)(h % 1000) * 1e-6;
}

static double fake_measure(const pl_plan *p, void *user, pl_err *err)
{
    fake *f = user;
    if (++f->calls == f->fail_at) return pl_err_set(err, "onnxruntime worker died"), -1;
    double t = fake_latency(p);
    if (t < f->best) {
        f->best = t;
        memcpy(f->best_dev, p->dev, (size_t)p->n_ops * sizeof *p->dev);
    }
    return t;
}

typedef struct seen {
    int calls, last_step, last_total;
} seen;

static void count_progress(const char *algo, int step, int total, double best_s, void *user)
{
    seen *s = user;
    assert_string_equal(algo, "drl");
    assert_true(step >= s->last_step && best_s > 0);
    s->calls++, s->last_step = step, s->last_total = total;
}

/* 10 episodes (not a multiple of the batch of 4): exactly 10 measured after the 2
 * single-device placements and the expert-layers one (AutoDeep's baseline experiments); the plan is
 * the best placement measured, with its latency, its cuts not merged although the cluster charges
 * for stages; progress ends at 10 of 10. */
static void test_measured_budget_and_best(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k = open_fork(STAGED, &g, &c);
    fake f = {.best = INFINITY};
    seen s = {0};
    pl_place_opts o = {.seed = 3,
                       .iterations = 10,
                       .measure = fake_measure,
                       .measure_user = &f,
                       .progress = count_progress,
                       .progress_user = &s};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    if (pl_place(pl_algo_find("drl"), k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(f.calls, 3 + 10); /* the baselines: 2 single-device, expert-layers */
    assert_int_equal(s.last_step, 10), assert_int_equal(s.last_total, 10);
    assert_int_equal(s.calls, 3); /* batches of 4, 4 and 2 */
    assert_true(p->measured_s == f.best);
    assert_true(fake_latency(p) == f.best);
    for (int v = 0; v < k->n_ops; v++)
        assert_int_equal(p->dev[v], f.best_dev[v]);
    /* without a hook: the simulator scores, nothing is measured */
    o.measure = NULL, s = (seen){0};
    if (pl_place(pl_algo_find("drl"), k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(s.last_step, 10);
    assert_true(p->measured_s == 0);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* The 5th measurement (after 3 baselines) fails: the search stops there and fails, saying
 * which episode. */
static void test_measure_failure_stops(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k = open_fork(CLUSTER, &g, &c);
    fake f = {.best = INFINITY, .fail_at = 5};
    pl_place_opts o = {.seed = 3, .iterations = 10, .measure = fake_measure, .measure_user = &f};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    assert_int_equal(pl_place(pl_algo_find("drl"), k, &o, p, &err), -1);
    assert_int_equal(f.calls, 5);
    assert_string_equal(err.msg, "drl: episode 2: onnxruntime worker died");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* The fork graph on a CPU given both ways (docs/clusters.md, "Cores"): cores d0 and d1, and
 * the whole 'w' at 1 ms per op. drl searches the cores; the whole CPU then competes and, with
 * a measure hook, is measured too (one call more than the search's), the measurements decide,
 * and the plan returned carries its own. When that measurement fails, pl_place fails with it. */
static const char *BOTH_VIEWS =
    "{\"format\": \"placer-cluster/1\", \"name\": \"both\", \"devices\": ["
    "{\"name\": \"d\", \"count\": 2, \"kind\": \"cpu\", \"model\": \"cpu-generic\"},"
    "{\"name\": \"w\", \"kind\": \"cpu\", \"model\": \"cpu-generic\", \"cores\": 2, "
    "\"parallel_efficiency\": 0.9, \"core_devices\": [\"d0\", \"d1\"]}],"
    "\"links\": [{\"from\": \"d0\", \"to\": \"d1\", \"bandwidth_Bps\": \"10 GB/s\", "
    "\"latency_s\": \"10 us\", \"both_ways\": true}]}";

static const char *GRAPH_BOTH =
    "{\"format\": \"placer-taskgraph/1\", \"name\": \"fork\", \"nodes\": ["
    "{\"name\": \"a\", \"times_s\": {\"d0\": \"1 ms\", \"d1\": \"1 ms\", \"w\": \"1 ms\"}},"
    "{\"name\": \"b\", \"times_s\": {\"d0\": \"4 ms\", \"d1\": \"9 ms\", \"w\": \"1 ms\"}},"
    "{\"name\": \"c\", \"times_s\": {\"d0\": \"9 ms\", \"d1\": \"4 ms\", \"w\": \"1 ms\"}},"
    "{\"name\": \"b2\", \"times_s\": {\"d0\": \"3 ms\", \"d1\": \"7 ms\", \"w\": \"1 ms\"}},"
    "{\"name\": \"c2\", \"times_s\": {\"d0\": \"7 ms\", \"d1\": \"3 ms\", \"w\": \"1 ms\"}},"
    "{\"name\": \"j\", \"times_s\": {\"d0\": \"1 ms\", \"d1\": \"1 ms\", \"w\": \"1 "
    "ms\"}}]," FORK_EDGES;

static void test_measured_whole_competes(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    pl_graph *g = tu_taskgraph(GRAPH_BOTH);
    pl_cluster *c = pl_cluster_load(tu_tmpfile(BOTH_VIEWS, strlen(BOTH_VIEWS), ".json"), &err);
    if (!c) fail_msg("%s", err.msg);
    pl_cost *k = tu_cost(g, c);
    fake f = {.best = INFINITY};
    pl_place_opts o = {.seed = 3, .iterations = 6, .measure = fake_measure, .measure_user = &f};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    if (pl_place(pl_algo_find("drl"), k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    int calls = f.calls, w = pl_cluster_find(c, "w");
    assert_int_equal(calls, 3 + 6 + 1); /* baselines, episodes, the whole CPU */
    assert_true(p->measured_s > 0 && p->measured_s == fake_latency(p));
    assert_true(p->measured_s == f.best); /* the faster of the two measurements */
    bool whole = true;
    for (int v = 0; v < k->n_ops; v++)
        whole &= p->dev[v] == w;
    assert_true(whole == !strcmp(p->algo, "single"));
    f = (fake){.best = INFINITY, .fail_at = calls};
    assert_int_equal(pl_place(pl_algo_find("drl"), k, &o, p, &err), -1);
    assert_string_equal(err.msg, "drl: measuring the whole model on 'w': onnxruntime worker died");
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* A measure hook set for a whole `compare` reaches every algorithm: one that never measures
 * (HEFT) must get the plan it gets without the hook, stage merging included (it once lost
 * the merge: nmt_seq2seq on local-cpu-percore.json, 56.2 ms against 53.6 ms). */
static double never_called(const pl_plan *p, void *user, pl_err *err)
{
    (void)p, (void)user, (void)err;
    fail_msg("HEFT measured a plan");
    return -1;
}

static void test_measure_hook_leaves_others_alone(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = tu_load("models/nmt_seq2seq.onnx");
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    assert_non_null(c);
    pl_cost *k = tu_cost(g, c);
    double t[2];
    int stages[2];
    for (int i = 0; i < 2; i++) {
        pl_place_opts o = {.seed = 1, .measure = i ? never_called : NULL};
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        if (pl_place(pl_algo_find("heft"), k, &o, p, &err) < 0) fail_msg("%s", err.msg);
        t[i] = makespan(k, p), stages[i] = p->stages_after;
        pl_plan_free(p);
    }
    assert_true(stages[0] > 0); /* the merge ran: the case this test needs */
    assert_true(t[1] == t[0]);
    assert_int_equal(stages[1], stages[0]);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* Episode e of a batch may run on any rank: it draws from pl_rng_skip(start, e * groups),
 * which must be where e * groups draws of the one stream leave it (docs/dist.md, "moirai and
 * drl"): the same state, so the same next draws. */
static void test_rng_skip_is_draws(void **state)
{
    (void)state;
    /* pinned to splitmix64's published outputs from state 0 (Vigna's reference), and the
     * 1001st from an independent implementation: pl_rng_next is written with pl_rng_skip, so
     * comparing the two alone could not fail */
    uint64_t z = 0;
    assert_true(pl_rng_next(&z) == 0xe220a8397b1dcdafull);
    assert_true(pl_rng_next(&z) == 0x6e789e6aa1b965f4ull);
    assert_true(pl_rng_next(&z) == 0x06c45d188009454full);
    z = pl_rng_skip(0, 1000);
    assert_true(pl_rng_next(&z) == 0x2cfa2f23425329e1ull);
    static const uint64_t draws[] = {0, 1, 7, 64, 1000};
    for (int i = 0; i < 5; i++) {
        uint64_t s = 42, t;
        for (uint64_t d = 0; d < draws[i]; d++)
            pl_rng_next(&s);
        t = pl_rng_skip(42, draws[i]);
        assert_true(t == s);
        assert_true(pl_rng_next(&t) == pl_rng_next(&s));
    }
}

/* A graph that coarsening cannot bring down to drl's 64 groups (600 independent ops, no chain
 * to contract): every group is placed (the episodes' slots hold all 600; they held 64, and
 * `make asan` caught the overflow), and the plan is one of the two devices for every op. */
static void test_more_groups_than_target(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_int_equal(pl_learn_register(&err), 0);
    enum { N = 600 };
    char *text = malloc(N * 96 + 128);
    int at = sprintf(text, "{\"format\": \"placer-taskgraph/1\", \"name\": \"flat\", \"nodes\": [");
    for (int v = 0; v < N; v++)
        at += sprintf(text + at,
                      "%s{\"name\": \"n%d\", \"times_s\": {\"d0\": \"%d ms\", \"d1\": \"%d ms\"}}",
                      v ? ", " : "", v, 1 + v % 7, 1 + v % 5);
    sprintf(text + at, "], \"edges\": []}");
    pl_graph *g = tu_taskgraph(text);
    free(text);
    pl_cluster *c = pl_cluster_load(tu_tmpfile(CLUSTER, strlen(CLUSTER), ".json"), &err);
    if (!c) fail_msg("%s", err.msg);
    pl_cost *k = tu_cost(g, c);
    pl_place_opts o = {.seed = 3, .iterations = 8};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    assert_int_equal(pl_place(pl_algo_find("drl"), k, &o, p, &err), 0);
    assert_int_equal(k->n_ops, N);
    for (int v = 0; v < k->n_ops; v++)
        assert_true(p->dev[v] == 0 || p->dev[v] == 1);
    assert_true(makespan(k, p) >= pl_lower_bound(k) - 1e-12);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* ---- the encoding (pl_drl_encode) on a hand-made graph of 5 ops ----
 *
 *   x -> a (Relu) -> ta [2,3] -> b (Relu) -> tb [4,5,6] -> d (Add) -> td [7] -> e (Split)
 *                 \-> c (Sigmoid) -> tc [2,3] -------------/     e -> te1 [1,2,3,4,5],
 *                                                                     te2 [6,7,8,9,10] */
static float dim(double d)
{
    return (float)(log2(1 + d) / 16);
}

static void set_shape(pl_graph *g, const char *tensor, int rank, const int64_t *d)
{
    pl_tensor_set_shape(&g->tensors[pl_graph_tensor(g, tensor)], PL_DT_FLOAT, rank, d);
}

static pl_graph *five_ops(void)
{
    pl_graph *g = tu_graph_with_input();
    tu_op(g, "a", "Relu", "x", "ta");
    tu_op(g, "b", "Relu", "ta", "tb");
    tu_op(g, "c", "Sigmoid", "ta", "tc");
    tu_op(g, "d", "Add", "tb,tc", "td");
    tu_op(g, "e", "Split", "td", "te1,te2");
    set_shape(g, "ta", 2, (int64_t[]){2, 3});
    set_shape(g, "tb", 3, (int64_t[]){4, 5, 6});
    set_shape(g, "tc", 2, (int64_t[]){2, 3});
    set_shape(g, "td", 1, (int64_t[]){7});
    set_shape(g, "te1", 5, (int64_t[]){1, 2, 3, 4, 5});
    set_shape(g, "te2", 5, (int64_t[]){6, 7, 8, 9, 10});
    pl_graph_add_output(g, pl_graph_tensor(g, "te1"));
    pl_graph_add_output(g, pl_graph_tensor(g, "te2"));
    pl_err err = {""};
    if (pl_graph_finalize(g, "five", &err) < 0) fail_msg("%s", err.msg);
    return g;
}

/* Each op's row: its type index, its padded output shape and exactly the adjacency bits of
 * its direct inputs and outputs, at their topological positions. */
static void test_encoding_of_five_ops(void **state)
{
    (void)state;
    pl_graph *g = five_ops();
    assert_int_equal(g->n_ops, 5);
    int type[5];
    float feat[5 * PL_DRL_FEAT];
    assert_int_equal(pl_drl_encode(g, type, feat), 4); /* Relu, Sigmoid, Add, Split */
    static const char *names[] = {"a", "b", "c", "d", "e"};
    static const char *nbrs[] = {"bc", "ad", "ad", "bce", "d"};
    static const int types[] = {0, 0, -1, -1, -1}; /* a and b share Relu's */
    static const double shapes[5][PL_DRL_SHAPE_W] = {
        {2, 3}, {4, 5, 6}, {2, 3}, {7}, {1, 2, 3, 4, 5, 6, 7, 8}}; /* 9, 10 dropped */
    for (int o = 0; o < 5; o++) {
        int v = pl_graph_find_op(g, names[o]), i = g->topo_pos[v];
        const float *f = &feat[(size_t)i * PL_DRL_FEAT];
        if (types[o] >= 0) assert_int_equal(type[i], types[o]);
        for (int j = 0; j < PL_DRL_SHAPE_W; j++) /* 0 pads: log2(1 + 0) is 0 too */
            assert_true(f[j] == dim(shapes[o][j]));
        float want[PL_DRL_ADJ_W] = {0};
        for (const char *n = nbrs[o]; *n; n++)
            want[g->topo_pos[pl_graph_find_op(g, (char[]){*n, 0})]] = 1;
        for (int j = 0; j < PL_DRL_ADJ_W; j++)
            assert_true(f[PL_DRL_SHAPE_W + j] == want[j]);
    }
    assert_int_equal(type[g->topo_pos[pl_graph_find_op(g, "b")]], type[0]);
    assert_true(type[g->topo_pos[pl_graph_find_op(g, "c")]] !=
                type[g->topo_pos[pl_graph_find_op(g, "a")]]);
    pl_graph_free(g);
}

/* ---- a recording hook: every placement scored, in order, by its simulated makespan ---- */
typedef struct tape_of {
    const pl_cost *k;
    int n;
    double t[1024];
} tape_of;

static double record(const pl_plan *p, void *user, pl_err *err)
{
    (void)err;
    tape_of *r = user;
    double t = makespan(r->k, p);
    if (r->n < 1024) r->t[r->n++] = t;
    return t;
}

/* `algo` on the fork graph with `episodes` episodes from `seed`, every placement it scores
 * recorded in *r; returns the makespan of its plan, and the brute-force optimum in *opt. */
static double fork_run(const char *algo, unsigned seed, int episodes, tape_of *r, double *opt)
{
    pl_err err = {""};
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k = open_fork(CLUSTER, &g, &c);
    *opt = brute_force(k);
    *r = (tape_of){.k = k};
    pl_place_opts o = {.seed = seed, .iterations = episodes, .measure = record, .measure_user = r};
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    if (pl_place(pl_algo_find(algo), k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    double t = makespan(k, p);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
    return t;
}

/* Google-RL (Mirhoseini et al.'s REINFORCE) learns the fork-join's brute-force optimum over
 * its 64 placements: not only the best it returns, its policy ends there (the last 20
 * episodes, sampled from it, nearly all the optimum; a uniform policy samples it 1 in 64). */
static void test_google_rl_learns_optimum(void **state)
{
    (void)state;
    static tape_of r;
    double opt;
    assert_close(fork_run("google-rl", 1, 300, &r, &opt), opt, 1e-12);
    assert_int_equal(r.n, 2 + 300); /* its unit: the 2 single-device placements */
    int at_opt = 0;
    for (int i = r.n - 20; i < r.n; i++)
        at_opt += fabs(r.t[i] - opt) < 1e-12;
    assert_true(at_opt >= 16);
}

/* The random rate halves every 50 episodes up to a budget of 300, every sixth of a longer one;
 * under a time limit (budget unknown) every 50. */
static void test_random_rate(void **state)
{
    (void)state;
    assert_true(pl_drl_random_rate(0, 300) == 0.2);
    assert_true(fabs(pl_drl_random_rate(50, 300) - 0.1) < 1e-15);
    assert_true(fabs(pl_drl_random_rate(50, 100) - 0.1) < 1e-15);
    assert_true(fabs(pl_drl_random_rate(500, 3000) - 0.1) < 1e-15);
    assert_true(fabs(pl_drl_random_rate(1000, 3000) - 0.05) < 1e-15);
    assert_true(fabs(pl_drl_random_rate(100, 0) - 0.05) < 1e-15);
    assert_true(fabs(pl_drl_random_rate(100, 600) - 0.1) < 1e-15);
}

/* DRL for one seed samples the same placements in the same order, run after run; another
 * seed samples others. */
static void test_drl_reproducible(void **state)
{
    (void)state;
    static tape_of r[3];
    static const unsigned seeds[3] = {5, 5, 6};
    double opt;
    for (int i = 0; i < 3; i++)
        fork_run("drl", seeds[i], 40, &r[i], &opt);
    assert_int_equal(r[0].n, 3 + 40); /* the baselines: 2 single-device, expert-layers */
    assert_int_equal(r[1].n, r[0].n);
    assert_memory_equal(r[0].t, r[1].t, (size_t)r[0].n * sizeof *r[0].t);
    assert_int_equal(r[2].n, r[0].n);
    assert_memory_not_equal(r[0].t, r[2].t, (size_t)r[0].n * sizeof *r[0].t);
}

/* expert-layers on resnet50 and AutoDeep's 4 GPUs: the dense ops in four runs of the
 * topological order with the same count (within one), one run per GPU in cluster order. */
static void test_expert_layers(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = tu_load("models/resnet50.onnx");
    pl_cluster *c = pl_cluster_load("examples/clusters/autodeep-4xk80.json", &err);
    pl_cost *k = tu_cost(g, c);
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts o = {.fine_cuts = true};
    if (pl_place(pl_algo_find("expert-layers"), k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    int count[8] = {0}, layers = 0, last = 0;
    for (int i = 0; i < g->n_ops; i++) {
        int v = g->topo[i], d = p->dev[v];
        assert_int_equal(c->devs[d].kind, PL_DEV_GPU);
        assert_true(d >= last); /* contiguous runs, in cluster order */
        last = d;
        if (g->ops[v].cls == PL_CLASS_DENSE) count[d]++, layers++;
    }
    for (int d = 1; d <= 4; d++)
        assert_true(abs(count[d] * 4 - layers) <= 4);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered),
        cmocka_unit_test(test_encoding_of_five_ops),
        cmocka_unit_test(test_google_rl_learns_optimum),
        cmocka_unit_test(test_random_rate),
        cmocka_unit_test(test_drl_reproducible),
        cmocka_unit_test(test_expert_layers),
        cmocka_unit_test(test_more_groups_than_target),
        cmocka_unit_test(test_rng_skip_is_draws),
        cmocka_unit_test(test_finds_brute_force_optimum),
        cmocka_unit_test(test_baseline_answer_credited),
        cmocka_unit_test(test_zoo_model_plan),
        cmocka_unit_test(test_measured_budget_and_best),
        cmocka_unit_test(test_measure_failure_stops),
        cmocka_unit_test(test_measure_hook_leaves_others_alone),
        cmocka_unit_test(test_measured_whole_competes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
