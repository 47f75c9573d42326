/* test_plan.c: plan files: a saved plan reads back the same; a plan for another model or
 * cluster is refused by its SHA-256; incomplete or inconsistent plans are refused with the
 * JSON path; hand-written plans may use a default device. */
#include "testutil.h"
#include "placer/plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *diamond_json =
    "{\"format\": \"placer-taskgraph/1\", \"nodes\": [{\"name\": \"a\", \"flops\": 1e9},"
    " {\"name\": \"b\", \"flops\": 1e9}, {\"name\": \"c\", \"flops\": 1e9}, {\"name\": \"d\", "
    "\"flops\": 1e9}],"
    " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1000}, {\"from\": \"a\", \"to\": "
    "\"c\", \"bytes\": 1000},"
    " {\"from\": \"b\", \"to\": \"d\", \"bytes\": 1000}, {\"from\": \"c\", \"to\": \"d\", "
    "\"bytes\": 1000}]}";

static const char *cluster_json =
    "{\"format\": \"placer-cluster/1\", \"name\": \"two\", \"devices\": ["
    " {\"name\": \"gpu0\", \"model\": \"V100-SXM2-16GB\"}, {\"name\": \"gpu1\", \"model\": "
    "\"V100-SXM2-16GB\"}],"
    " \"links\": [{\"from\": \"gpu0\", \"to\": \"gpu1\", \"bandwidth_Bps\": \"10 GB/s\", "
    "\"latency_s\": \"10 us\","
    " \"both_ways\": true}]}";

typedef struct {
    char model[256], cluster[256];
    pl_graph *g;
    pl_cluster *c;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    snprintf(f->model, sizeof f->model, "%s",
             tu_tmpfile(diamond_json, strlen(diamond_json), ".json"));
    snprintf(f->cluster, sizeof f->cluster, "%s",
             tu_tmpfile(cluster_json, strlen(cluster_json), ".json"));
    pl_err err;
    f->g = tu_load(f->model);
    f->c = pl_cluster_load(f->cluster, &err);
    if (!f->c) fail_msg("%s", err.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    pl_graph_free(f->g);
    pl_cluster_free(f->c);
    remove(f->model), remove(f->cluster);
    free(f);
    return 0;
}

static const char *write_plan(const char *body)
{
    return tu_tmpfile(body, strlen(body), ".json");
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    pl_plan *p = pl_plan_new(f->g->n_ops, f->c->n_devs);
    int a = pl_graph_find_op(f->g, "a"), b = pl_graph_find_op(f->g, "b"),
        c = pl_graph_find_op(f->g, "c"), d = pl_graph_find_op(f->g, "d");
    p->dev[c] = 1;
    int seq[4] = {a, c, b, d};
    pl_plan_set_order(p, seq);
    snprintf(p->algo, sizeof p->algo, "heft");
    p->contention = PL_CONTENTION_PAIR;
    p->predicted_makespan_s = 0.25;
    pl_err err;
    const char *path = tu_tmpfile("", 0, ".json");
    assert_int_equal(pl_plan_save(p, f->g, f->c, path, &err), 0);
    pl_plan *q = pl_plan_load(path, f->g, f->c, &err);
    if (!q) fail_msg("%s", err.msg);
    for (int i = 0; i < 4; i++)
        assert_int_equal(q->dev[i], p->dev[i]);
    assert_int_equal(q->order_off[1], 3); /* gpu0 runs a, b, d; gpu1 runs c */
    assert_int_equal(q->order[0], a);
    assert_int_equal(q->order[1], b);
    assert_int_equal(q->order[3], c);
    assert_string_equal(q->algo, "heft");
    assert_int_equal(q->contention, PL_CONTENTION_PAIR);
    assert_close(q->predicted_makespan_s, 0.25, 1e-12);
    pl_plan_free(p), pl_plan_free(q);
}

static void expect_refused(fixture *f, const char *body, const char *needle)
{
    pl_err err = {""};
    const char *path = write_plan(body);
    pl_plan *p = pl_plan_load(path, f->g, f->c, &err);
    if (p) fail_msg("plan accepted: %s", body);
    if (!strstr(err.msg, needle)) fail_msg("message '%s' lacks '%s'", err.msg, needle);
    if (!strstr(err.msg, path)) fail_msg("message '%s' does not name the file", err.msg);
    remove(path);
}

/* The plan checker runs in the loader (pl_plan_check), on the diamond a -> {b, c} -> d with b
 * on gpu1 and the rest on gpu0. gpu0 [d, a, c]: d waits for b, b for a, and a is behind d on
 * gpu0: a cycle through gpu1. gpu0 [a, d, c]: d waits for c, listed after it on gpu0 itself.
 * gpu0 [a, c, d] runs. Each refusal names the device, the waiting op and what it waits for. */
static void test_order_deadlock(void **state)
{
    fixture *f = *state;
    expect_refused(
        f,
        "{\"format\": \"placer-plan/1\", \"placement\": {\"a\": \"gpu0\", \"b\": "
        "\"gpu1\", \"c\": \"gpu0\", \"d\": \"gpu0\"}, \"order\": {\"gpu0\": [\"d\", "
        "\"a\", \"c\"], \"gpu1\": [\"b\"]}}",
        "$.order: the plan's order deadlocks: on device 'gpu0', op 'd' waits forever for "
        "tensor 'b->d' from op 'b' on 'gpu1', which never runs (it waits behind an op that "
        "needs a later one)");
    expect_refused(
        f,
        "{\"format\": \"placer-plan/1\", \"placement\": {\"a\": \"gpu0\", \"b\": "
        "\"gpu1\", \"c\": \"gpu0\", \"d\": \"gpu0\"}, \"order\": {\"gpu0\": [\"a\", "
        "\"d\", \"c\"], \"gpu1\": [\"b\"]}}",
        "op 'd' waits forever for tensor 'c->d' from op 'c' on 'gpu0', which never runs (it "
        "is listed after the op that needs it)");
    pl_err err = {""}; /* the same orders, runnable */
    const char *ok = write_plan(
        "{\"format\": \"placer-plan/1\", \"placement\": {\"a\": \"gpu0\", \"b\": \"gpu1\", "
        "\"c\": \"gpu0\", \"d\": \"gpu0\"}, \"order\": {\"gpu0\": [\"a\", \"c\", \"d\"], "
        "\"gpu1\": [\"b\"]}}");
    pl_plan *p = pl_plan_load(ok, f->g, f->c, &err);
    if (!p) fail_msg("%s", err.msg);
    pl_plan_free(p);
    remove(ok);
}

static void test_refusals(void **state)
{
    fixture *f = *state;
    expect_refused(f, "{\"format\": \"placer-plan/1\", \"placement\": {\"a\": \"gpu0\"}}",
                   "op 'b' is not placed (3 ops missing)");
    expect_refused(f, "{\"format\": \"placer-plan/1\", \"placement\": {\"zz\": \"gpu0\"}}",
                   "no op named 'zz'");
    expect_refused(f,
                   "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\", \"placement\": "
                   "{\"a\": \"tpu9\"}}",
                   "no device 'tpu9' in cluster two (devices: gpu0, gpu1)");
    expect_refused(f,
                   "{\"format\": \"placer-plan/1\", \"model\": {\"sha256\": \"00ff\"}, "
                   "\"default_device\": \"gpu0\", \"placement\": {}}",
                   "this plan was made for another model");
    expect_refused(f,
                   "{\"format\": \"placer-plan/1\", \"cluster\": {\"sha256\": \"00ff\"}, "
                   "\"default_device\": \"gpu0\", \"placement\": {}}",
                   "another cluster");
    expect_refused(
        f,
        "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\", \"placement\": {},"
        " \"order\": {\"gpu0\": [\"a\", \"b\", \"c\", \"d\", \"a\"]}}",
        "op 'a' is listed twice");
    expect_refused(f,
                   "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\", \"placement\": "
                   "{\"c\": \"gpu1\"},"
                   " \"order\": {\"gpu0\": [\"a\", \"b\", \"c\", \"d\"]}}",
                   "op 'c' is placed on gpu1, not gpu0");
    expect_refused(
        f,
        "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\", \"placement\": {},"
        " \"order\": {\"gpu0\": [\"a\", \"b\", \"d\"]}}",
        "the order leaves out op 'c'");
    expect_refused(f,
                   "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\", \"placement\": "
                   "{}, \"contention\": \"bus\"}",
                   "unknown contention model 'bus'");
    expect_refused(f, "{\"format\": \"placer-cluster/1\"}", "placer-plan/1");
}

/* The transfer order survives a save and load as positions: the diamond's four edges, c->d
 * first and a->b last; an unlisted edge comes after the listed ones. */
static void test_xfer_order_round_trip(void **state)
{
    fixture *f = *state;
    pl_plan *p = pl_plan_new(f->g->n_ops, f->c->n_devs);
    p->dev[pl_graph_find_op(f->g, "c")] = 1;
    double prio[4];
    prio[tu_edge(f->g, "c->d", "d")] = -5;
    prio[tu_edge(f->g, "a->c", "c")] = 0.5;
    prio[tu_edge(f->g, "b->d", "d")] = 2;
    prio[tu_edge(f->g, "a->b", "b")] = NAN; /* last */
    pl_plan_set_xfer_priority(p, f->g->n_edges, prio);
    pl_plan *copy = pl_plan_copy(p);
    assert_int_equal(copy->n_edges, 4);
    assert_true(copy->xfer_priority[tu_edge(f->g, "c->d", "d")] == -5);
    pl_plan_free(copy);
    pl_err err;
    const char *path = tu_tmpfile("", 0, ".json");
    assert_int_equal(pl_plan_save(p, f->g, f->c, path, &err), 0);
    pl_plan *q = pl_plan_load(path, f->g, f->c, &err);
    if (!q) fail_msg("%s", err.msg);
    assert_int_equal(q->n_edges, 4);
    assert_true(q->xfer_priority[tu_edge(f->g, "c->d", "d")] == 0);
    assert_true(q->xfer_priority[tu_edge(f->g, "a->c", "c")] == 1);
    assert_true(q->xfer_priority[tu_edge(f->g, "b->d", "d")] == 2);
    assert_true(q->xfer_priority[tu_edge(f->g, "a->b", "b")] == 3);
    pl_plan_free(q);
    /* Hand-written, partial: the unlisted edges follow by tensor index. */
    path = write_plan("{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\", "
                      "\"placement\": {}, \"transfer_order\": [[\"c->d\", \"d\"]]}");
    q = pl_plan_load(path, f->g, f->c, &err);
    if (!q) fail_msg("%s", err.msg);
    assert_true(q->xfer_priority[tu_edge(f->g, "c->d", "d")] == 0);
    assert_true(q->xfer_priority[tu_edge(f->g, "a->b", "b")] == 1);
    assert_true(q->xfer_priority[tu_edge(f->g, "a->c", "c")] == 2);
    assert_true(q->xfer_priority[tu_edge(f->g, "b->d", "d")] == 3);
    pl_plan_free(q);
    /* Without a transfer order, none is written or read. */
    pl_plan_set_xfer_priority(p, 0, NULL);
    assert_int_equal(pl_plan_save(p, f->g, f->c, path, &err), 0);
    q = pl_plan_load(path, f->g, f->c, &err);
    if (!q) fail_msg("%s", err.msg);
    assert_null(q->xfer_priority);
    pl_plan_free(q), pl_plan_free(p);
    remove(path);
}

static void test_xfer_order_refusals(void **state)
{
    fixture *f = *state;
#define XO(list)                                                                                   \
    "{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\", \"placement\": {}, "            \
    "\"transfer_order\": " list "}"
    expect_refused(f, XO("[[\"zz\", \"d\"]]"),
                   "$.transfer_order[0][0]: the model has no tensor "
                   "named 'zz'");
    expect_refused(f, XO("[[\"a->b\", \"zz\"]]"),
                   "$.transfer_order[0][1]: the model has no op "
                   "named 'zz'");
    expect_refused(f, XO("[[\"a->b\", \"b\"], [\"a->b\", \"d\"]]"),
                   "$.transfer_order[1]: ['a->b', 'd'] is not a graph edge");
    expect_refused(f, XO("[[\"a->b\", \"b\"], [\"c->d\", \"d\"], [\"a->b\", \"b\"]]"),
                   "$.transfer_order[2]: the edge ['a->b', 'b'] is listed twice");
    expect_refused(f, XO("[[\"a->b\"]]"), "want a [tensor, reader op] pair");
    expect_refused(f, XO("{}"), "transfer_order");
#undef XO
}

static void test_hand_written_default_device(void **state)
{
    fixture *f = *state;
    pl_err err;
    const char *path = write_plan("{\"format\": \"placer-plan/1\", \"default_device\": \"gpu0\","
                                  " \"placement\": {\"c\": \"gpu1\"}}");
    pl_plan *p = pl_plan_load(path, f->g, f->c, &err);
    if (!p) fail_msg("%s", err.msg);
    assert_int_equal(p->dev[pl_graph_find_op(f->g, "c")], 1);
    assert_int_equal(p->dev[pl_graph_find_op(f->g, "d")], 0);
    assert_null(p->order);
    assert_string_equal(p->algo, "hand-written");
    pl_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_order_deadlock),
        cmocka_unit_test(test_xfer_order_round_trip),
        cmocka_unit_test(test_xfer_order_refusals),
        cmocka_unit_test(test_hand_written_default_device),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
