/* test_train_compile.c: the training compiler and its evaluation on a hand-built Dense layer
 * (docs/train.md, "The compiler"): iteration times computed by hand for one device, ring
 * AllReduce, a parameter server and duplication; every training op once per replica; every
 * gradient synchronised once. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The same with a measured AllReduce of the two GPUs: 3 ms whatever its size. */
static const char *CLUSTER_MEASURED =
    "{\"format\": \"placer-cluster/1\", \"name\": \"two\", \"devices\": ["
    "{\"name\": \"g0\", \"model\": \"V100\", \"host\": \"m0\"},"
    "{\"name\": \"g1\", \"model\": \"V100\", \"host\": \"m0\"}],"
    "\"links\": [{\"from\": \"g0\", \"to\": \"g1\", \"bandwidth_Bps\": \"1 GB/s\", \"latency_s\": "
    "0,"
    "\"both_ways\": true}],"
    "\"collectives\": [{\"devices\": 2, \"allreduce\": [{\"from_bytes\": 0, \"a_s\": \"3 ms\","
    "\"b_s_per_byte\": 0}]}]}";

static double iteration_ms(tu_dense *f, const unsigned char *P, pl_train_option o, bool overlap)
{
    pl_train_strategy *s = pl_train_strategy_new(1, 2);
    memcpy(s->P, P, 2);
    s->O[0] = o, s->overlap = overlap;
    pl_train_eval e;
    pl_err err = {""};
    if (pl_train_evaluate(&f->x, s, &e, &err) < 0) fail_msg("%s", err.msg);
    double ms = e.iteration_s * 1e3;
    assert_false(e.oom);
    pl_train_eval_free(&e);
    pl_train_strategy_free(s);
    return ms;
}

/* One device: 4 + 4 + 1 ms. Both, ring AllReduce: each replica half the batch (2 + 2 ms), the
 * ring's two phases of (D-1) L / D / bw = 0.5 ms each, Adam on each copy (1 ms): 6 ms.
 * A parameter server on g0: g1 pushes 1 MB (1 ms), g0 adds and applies (1 ms), g1 pulls the
 * updated 1 MB (1 ms): 2 + 2 + 1 + 1 + 1 = 7 ms. Duplicated: the whole batch on both, no
 * synchronisation: 9 ms. The inserted ops (sends, reduce, gather, sums) add launch overheads of
 * a few microseconds each, hence the tolerance. */
static void test_iteration_by_hand(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, NULL, 1);
    assert_close(iteration_ms(&f, (unsigned char[]){1, 0}, PL_OPT_ALLREDUCE, true), 9, 1e-3);
    assert_close(iteration_ms(&f, (unsigned char[]){0, 1}, PL_OPT_ALLREDUCE, true), 9, 1e-3);
    assert_close(iteration_ms(&f, (unsigned char[]){1, 1}, PL_OPT_ALLREDUCE, true), 6, 0.01);
    assert_close(iteration_ms(&f, (unsigned char[]){1, 1}, PL_OPT_ALLREDUCE, false), 6, 0.01);
    assert_close(iteration_ms(&f, (unsigned char[]){1, 1}, PL_OPT_PS, true), 7, 0.01);
    assert_close(iteration_ms(&f, (unsigned char[]){1, 1}, PL_OPT_DUPLICATE, true), 9, 1e-3);
    tu_dense_free(&f);
}

/* A measured AllReduce curve replaces the link model: each phase half of it, 1.5 ms, so the
 * two-GPU iteration is 2 + 2 + 1.5 + 1.5 + 1 = 8 ms. */
static void test_measured_allreduce(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, CLUSTER_MEASURED, 1);
    assert_close(iteration_ms(&f, (unsigned char[]){1, 1}, PL_OPT_ALLREDUCE, true), 8, 0.01);
    tu_dense_free(&f);
}

typedef struct seen_vertex {
    int n, depth_group[64], n_acts;
    double sum[64];
    double edge[64][64]; /* the root's visits per action, when it is reported */
    int path0[64];       /* for a vertex below the root: the root action leading to it */
} seen_vertex;

static void on_vertex(const pl_train_ctx *x, const pl_train_strategy *partial, int group,
                      const pl_train_action *a, int n, const double *visits, void *user)
{
    seen_vertex *v = user;
    (void)x;
    assert_true(v->n < 64 && n <= 64);
    double sum = 0;
    for (int k = 0; k < n; k++)
        sum += visits[k], v->edge[v->n][k] = visits[k];
    v->sum[v->n] = sum, v->depth_group[v->n] = group, v->n_acts = n;
    v->path0[v->n] = -1;
    if (partial->n_groups == 2 && group == 0) /* below the root: group 1 holds its action */
        for (int k = 0; k < n; k++)
            if (partial->O[1] == a[k].option && partial->P[2] == a[k].uses[0] &&
                partial->P[3] == a[k].uses[1])
                v->path0[v->n] = v->path0[v->n] < 0 ? k : v->path0[v->n];
    v->n++;
}

/* Searches f with the vertex hook at threshold min_visits (no refinement, no SFB), the
 * vertices reported into *v. */
static void search_reporting(tu_dense *f, int iterations, unsigned seed, int min_visits,
                             seen_vertex *v)
{
    memset(v, 0, sizeof *v);
    pl_train_search_opts o = {.iterations = iterations,
                              .seed = seed,
                              .on_vertex = on_vertex,
                              .on_vertex_user = v,
                              .min_visits = min_visits,
                              .no_refine = true,
                              .no_sfb = true};
    pl_train_search_result r;
    pl_err err = {""};
    if (pl_train_search(&f->x, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    pl_train_search_result_free(&r);
}

/* One op group: the tree is the root alone, and its visits sum to the iterations, the
 * re-evaluations of strategies already seen included (12 actions, 30 iterations); the
 * threshold keeps it at 30 visits and drops it at 31. */
static void test_vertex_hook_root(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, NULL, 1);
    seen_vertex v;
    search_reporting(&f, 30, 3, 30, &v);
    assert_int_equal(v.n, 1);
    assert_int_equal(v.depth_group[0], 0);
    assert_int_equal(v.n_acts, 12); /* {g0, g1}, {g0}, {g1}: 3 sets x 4 options */
    assert_close(v.sum[0], 30, 1e-12);
    search_reporting(&f, 30, 3, 31, &v);
    assert_int_equal(v.n, 0);
    tu_dense_free(&f);
}

/* Two op groups: the root decides group 1 (the more expensive), its children group 0; a child
 * has one visit fewer than the root's edge into it (the visit that created it stopped there),
 * and a threshold above a child's visits reports the root alone. */
static void test_vertex_hook_children(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, NULL, 2);
    seen_vertex v;
    search_reporting(&f, 60, 5, 0, &v);
    assert_true(v.n >= 2);
    assert_int_equal(v.depth_group[0], 1);
    assert_close(v.sum[0], 60, 1e-12);
    double most = 0;
    for (int k = 1; k < v.n; k++) {
        assert_int_equal(v.depth_group[k], 0);
        assert_true(v.path0[k] >= 0);
        assert_close(v.sum[k], v.edge[0][v.path0[k]] - 1, 1e-12);
        most = fmax(most, v.sum[k]);
    }
    search_reporting(&f, 60, 5, (int)most + 1, &v);
    assert_int_equal(v.n, 1);
    tu_dense_free(&f);
}

/* Model parallelism keeps a weight's readers together: the MatMul, its weight gradient (which
 * follows its forward op) and Adam (which follows the gradient) on one device, so W and its
 * moments are resident once. */
static void test_model_parallel_keeps_weights_together(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, NULL, 1);
    pl_train_strategy *s = pl_train_strategy_new(1, 2);
    s->P[0] = s->P[1] = 1, s->O[0] = PL_OPT_MP;
    pl_graph *g;
    pl_plan *p;
    int *origin;
    pl_err err = {""};
    assert_int_equal(pl_train_compile(&f.x, s, &g, &p, &origin, &err), 0);
    int dev[4] = {-1, -1, -1, -1}, copies[4] = {0};
    for (int i = 0; i < g->n_ops; i++)
        if (origin[i] >= 0) dev[origin[i]] = p->dev[i], copies[origin[i]]++;
    for (int v = 0; v < 4; v++)
        assert_int_equal(copies[v], 1);
    assert_int_equal(dev[2], dev[0]);
    assert_int_equal(dev[3], dev[2]);
    int w_copies = 0;
    for (int t = 0; t < g->n_tensors; t++)
        w_copies += !strncmp(g->tensors[t].name, "W@", 2);
    assert_int_equal(w_copies, 1);
    pl_graph_free(g), pl_plan_free(p), free(origin);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

/* TAG's search on the Dense layer: never slower than DP-NCCL (6 ms here: one gradient, so
 * overlapping changes nothing), and data parallelism or better is what it finds. */
static void test_search_never_slower_than_dp(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, NULL, 1);
    pl_train_search_opts o = {.iterations = 30, .seed = 3};
    pl_train_search_result r;
    pl_err err = {""};
    assert_int_equal(pl_train_search(&f.x, &o, &r, &err), 0);
    assert_close(r.dp_s * 1e3, 6, 0.01);
    assert_true(r.eval.iteration_s <= r.dp_s * (1 + 1e-9));
    assert_false(r.eval.oom);
    assert_int_equal(r.iterations, 30);
    pl_train_search_result_free(&r);
    tu_dense_free(&f);
}

/* Every training op once per replica, the gradient synchronised once (one ring: a reduce and a
 * gather per device), Adam on each replica reading the ring's result; no ring with one device. */
static void test_every_op_once_per_replica(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, NULL, 1);
    pl_train_strategy *s = pl_train_strategy_new(1, 2);
    s->P[0] = s->P[1] = 1, s->O[0] = PL_OPT_ALLREDUCE, s->overlap = true;
    pl_graph *g;
    pl_plan *p;
    int *origin;
    pl_err err = {""};
    assert_int_equal(pl_train_compile(&f.x, s, &g, &p, &origin, &err), 0);
    int count[4] = {0}, reduce = 0, gather = 0;
    for (int i = 0; i < g->n_ops; i++) {
        if (origin[i] >= 0) count[origin[i]]++;
        reduce += !strcmp(g->ops[i].type, "AllReduceReduce");
        gather += !strcmp(g->ops[i].type, "AllReduceGather");
    }
    for (int v = 0; v < 4; v++)
        assert_int_equal(count[v], 2);
    assert_int_equal(reduce, 2);
    assert_int_equal(gather, 2);
    for (int i = 0; i < g->n_ops; i++) /* Adam reads the all-gathered gradient on its device */
        if (origin[i] == 3) {
            int t = g->ops[i].inputs[1], u = g->tensors[t].producer;
            assert_string_equal(g->ops[u].type, "AllReduceGather");
            assert_int_equal(p->dev[u], p->dev[i]);
        }
    pl_graph_free(g), pl_plan_free(p), free(origin);
    s->P[1] = 0;
    assert_int_equal(pl_train_compile(&f.x, s, &g, &p, &origin, &err), 0);
    for (int i = 0; i < g->n_ops; i++)
        assert_true(strcmp(g->ops[i].type, "AllReduceReduce") != 0);
    pl_graph_free(g), pl_plan_free(p), free(origin);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

/* Weights are resident on every device that holds a replica: the peak memory of each GPU in
 * data parallelism holds W and its two moments (3 MB) at least. */
static void test_weights_on_every_replica(void **state)
{
    (void)state;
    tu_dense f;
    tu_dense_build(&f, NULL, 1);
    pl_train_strategy *s = pl_train_strategy_new(1, 2);
    s->P[0] = s->P[1] = 1, s->O[0] = PL_OPT_ALLREDUCE, s->overlap = true;
    pl_train_eval e;
    pl_err err = {""};
    assert_int_equal(pl_train_evaluate(&f.x, s, &e, &err), 0);
    assert_true(e.peak_mem_bytes[0] >= 3e6 && e.peak_mem_bytes[1] >= 3e6);
    pl_train_eval_free(&e);
    pl_train_strategy_free(s);
    tu_dense_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iteration_by_hand),
        cmocka_unit_test(test_measured_allreduce),
        cmocka_unit_test(test_search_never_slower_than_dp),
        cmocka_unit_test(test_vertex_hook_root),
        cmocka_unit_test(test_vertex_hook_children),
        cmocka_unit_test(test_model_parallel_keeps_weights_together),
        cmocka_unit_test(test_every_op_once_per_replica),
        cmocka_unit_test(test_weights_on_every_replica),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
