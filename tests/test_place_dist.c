/* test_place_dist.c: moirai's and drl's searches over the pool (docs/dist.md, "moirai and
 * drl"). In one process: moirai's independent searches give the same answer whatever the
 * number of ranks they are dealt to (played here rank by rank), one search is the search as it
 * always was, and more searches find a better plan on this instance. Under `mpirun -np 2`
 * (skipped, saying so, without MPI): `place --algo moirai` gives the one-process answer of
 * two searches, twice; `place --algo drl` gives the same valid plan twice, and every rank ends
 * with the same weights (drl checks it and fails otherwise). */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/place.h"

#include "../src/place/moirai_ls.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A fork-join task graph, a -> b0..b23 -> j, 1 MB on every edge, on four identical devices
 * (10 GB/s, 10 us links); each b's time on each device 1-9 ms from an LCG. Its MILP has
 * 21874 rows, too big for a limit under ~13 s (moirai.c, too_big: 2e-4 s a row, a third of
 * the limit), so moirai is its warm start and local search; the searches end when thirty
 * rounds bring nothing (about 0.3 s each here), long before a 10 s limit: the answer is a
 * function of the seed and the number of searches, not of the clock. */
static char wide_path[512], four_path[512];

/* A node that takes 1 ms on every device, at `at`; returns the characters written. */
static int one_ms(char *at, size_t cap, const char *name)
{
    return snprintf(at, cap,
                    "{\"name\": \"%s\", \"times_s\": {\"d0\": \"1 ms\", \"d1\": \"1 ms\", "
                    "\"d2\": \"1 ms\", \"d3\": \"1 ms\"}}",
                    name);
}

static void write_instance(void)
{
    char *g = malloc(16384), *c = malloc(4096);
    uint32_t s = 12345;
    int n =
        snprintf(g, 16384, "{\"format\": \"placer-taskgraph/1\", \"name\": \"wide\", \"nodes\": [");
    n += one_ms(g + n, 16384 - n, "a");
    for (int i = 0; i < 24; i++) {
        n += snprintf(g + n, 16384 - n, ", {\"name\": \"b%d\", \"times_s\": {", i);
        for (int d = 0; d < 4; d++) {
            s = (uint32_t)((s * 1103515245ull + 12345) % (1u << 31));
            n += snprintf(g + n, 16384 - n, "%s\"d%d\": \"%u ms\"", d ? ", " : "", d, 1 + s % 9);
        }
        n += snprintf(g + n, 16384 - n, "}}");
    }
    n += snprintf(g + n, 16384 - n, ", ");
    n += one_ms(g + n, 16384 - n, "j");
    n += snprintf(g + n, 16384 - n, "], \"edges\": [");
    for (int i = 0; i < 24; i++)
        n += snprintf(g + n, 16384 - n,
                      "%s{\"from\": \"a\", \"to\": \"b%d\", \"bytes\": \"1 MB\"}, "
                      "{\"from\": \"b%d\", \"to\": \"j\", \"bytes\": \"1 MB\"}",
                      i ? ", " : "", i, i);
    snprintf(g + n, 16384 - n, "]}");
    snprintf(wide_path, sizeof wide_path, "%s", tu_tmpfile(g, strlen(g), ".json"));
    n = snprintf(c, 4096,
                 "{\"format\": \"placer-cluster/1\", \"name\": \"four\", \"devices\": ["
                 "{\"name\": \"d0\", \"model\": \"V100\"}, {\"name\": \"d1\", \"model\": \"V100\"},"
                 "{\"name\": \"d2\", \"model\": \"V100\"}, {\"name\": \"d3\", \"model\": "
                 "\"V100\"}], \"links\": [");
    for (int a = 0, first = 1; a < 4; a++)
        for (int b = a + 1; b < 4; b++, first = 0)
            n += snprintf(c + n, 4096 - n,
                          "%s{\"from\": \"d%d\", \"to\": \"d%d\", \"bandwidth_Bps\": \"10 GB/s\", "
                          "\"latency_s\": \"10 us\", \"both_ways\": true}",
                          first ? "" : ", ", a, b);
    snprintf(c + n, 4096 - n, "]}");
    snprintf(four_path, sizeof four_path, "%s", tu_tmpfile(c, strlen(c), ".json"));
    free(g), free(c);
}

static int setup(void **state)
{
    (void)state;
    write_instance();
    return 0;
}

/* ---- in one process ---- */

/* `count` searches from `start` dealt to `size` ranks, the ranks run last to first (as if
 * they ran at once); the winner's plan. */
static pl_plan *play_pool(const pl_cost *k, const pl_plan *start, double ms, int count, int size,
                          pl_ls_stats *st)
{
    size_t sz = pl_moirai_restart_bytes(k->n_ops);
    char *slots = malloc((size_t)count * sz);
    pl_ls_job job = {k, start, ms, pl_now() + 60, 0, 3, NULL, count, size};
    for (int rank = size - 1; rank >= 0; rank--)
        for (int i = rank; i < count; i += size)
            pl_moirai_restart_run(i, slots + (size_t)i * sz, &job);
    pl_plan *p = pl_plan_copy(start);
    pl_moirai_restart_take(slots, count, p, st);
    free(slots);
    return p;
}

static void assert_same_placement(const pl_plan *a, const pl_plan *b)
{
    for (int v = 0; v < a->n_ops; v++)
        assert_int_equal(a->dev[v], b->dev[v]);
}

/* Three searches from HEFT's plan (seed 3: they end at 19, 18.11 and 18.11 ms), dealt to 1,
 * 2 and 3 ranks: the same winner (search 1: a tie goes to the lower index), the same plan as
 * pl_moirai_restarts in one process with restarts = 3; search 0 is pl_moirai_local_search
 * with the caller's seed; and the best of three beats search 0 alone (so a split that
 * dropped a rank's searches, or seeded them by rank, shows). */
static void test_split_any_rank_count(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = tu_load(wide_path);
    pl_cluster *c = pl_cluster_load(four_path, &err);
    if (!c) fail_msg("%s", err.msg);
    pl_cost *k = tu_cost(g, c);
    pl_plan *start = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts ho = {.contention = PL_CONTENTION_PORTS, .fine_cuts = true};
    if (pl_place(pl_algo_find("heft"), k, &ho, start, &err) < 0) fail_msg("%s", err.msg);
    pl_sim_opts so = {.ignore_memory = true};
    pl_sim_result r = {0};
    assert_int_equal(pl_simulate(k, start, &so, &r, &err), 0);
    double ms = r.makespan_s;
    pl_sim_result_free(&r);

    pl_ls_stats st1, st;
    pl_plan *one = pl_plan_copy(start);
    pl_moirai_local_search(k, one, ms, pl_now() + 60, 0, 3, NULL, &st1);
    pl_plan *ref = play_pool(k, start, ms, 1, 1, &st);
    assert_same_placement(ref, one);
    assert_true(st.best_ms == st1.best_ms);
    pl_plan_free(ref);
    assert_int_equal(pl_moirai_restart_seed(3, 0), 3);

    ref = play_pool(k, start, ms, 3, 1, &st);
    double best = st.best_ms;
    print_message("one search %.6g ms, best of three %.6g ms\n", st1.best_ms * 1e3, best * 1e3);
    assert_true(best < st1.best_ms);
    for (int size = 2; size <= 3; size++) {
        pl_plan *p = play_pool(k, start, ms, 3, size, &st);
        assert_same_placement(p, ref);
        assert_true(st.best_ms == best);
        pl_plan_free(p);
    }
    pl_place_opts o = {.restarts = 3};
    pl_plan *p = pl_plan_copy(start);
    assert_true(pl_moirai_restarts(k, p, ms, pl_now() + 60, 0, 3, NULL, &o, &st, &err) > 0);
    assert_same_placement(p, ref);
    assert_true(st.best_ms == best);
    pl_plan_free(p), pl_plan_free(ref), pl_plan_free(one), pl_plan_free(start);
    pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

/* --restarts is moirai's, and a whole number from 1; --measured is refused under mpirun
 * (below). */
static void test_restarts_refusals(void **state)
{
    (void)state;
    char args[1200];
    snprintf(args, sizeof args, "place %s --cluster %s --algo heft --restarts 2", wide_path,
             four_path);
    tu_expect_refusal(args, "--restarts is for moirai's local search: heft has none");
    snprintf(args, sizeof args, "place %s --cluster %s --algo moirai --restarts 0", wide_path,
             four_path);
    tu_expect_refusal(args, "--restarts: '0' is not a whole number from 1 to 100000");
}

/* ---- under mpirun ---- */

/* Runs `placer place ARGS -o DIR/NAME.json --json`; returns the report and leaves the plan's
 * placement in *placement (both to json_decref). */
static json_t *place(const char *dir, const char *name, const char *args, json_t **placement)
{
    char cmd[2048], path[600];
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    snprintf(cmd, sizeof cmd, "place %s -o %s --json 2>/dev/null", args, path);
    json_t *o = tu_run_json(cmd);
    json_error_t e;
    json_t *plan = json_load_file(path, 0, &e);
    if (!plan) fail_msg("%s: %s", path, e.text);
    *placement = json_incref(json_object_get(plan, "placement"));
    assert_non_null(*placement);
    json_decref(plan);
    return o;
}

/* Two ranks, two searches (one each, by default): the one-process answer of --restarts 2,
 * better than one search's, the same plan twice. Before the searches were spread, each rank
 * ran the one search and rank 0 printed its plan. */
static void test_moirai_under_mpirun(void **state)
{
    (void)state;
    char dir[256], args[1400];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "place-dist"), 0);
    snprintf(args, sizeof args, "%s --cluster %s --algo moirai --time-limit 10s --seed 1",
             wide_path, four_path);
    char a1[1500], a2[1500];
    snprintf(a1, sizeof a1, "%s --restarts 1", args);
    snprintf(a2, sizeof a2, "%s --restarts 2", args);
    json_t *p1, *p2, *pm, *pn;
    json_t *one1 = place(dir, "one1", a1, &p1), *one2 = place(dir, "one2", a2, &p2);
    if (!tu_mpi_begin(2)) {
        json_decref(one1), json_decref(one2), json_decref(p1), json_decref(p2);
        tu_rmtree(dir);
        skip();
    }
    json_t *two = place(dir, "two", args, &pm), *again = place(dir, "again", args, &pn);
    tu_mpi_end();
    double m1 = tu_num(one1, "makespan_s"), m2 = tu_num(one2, "makespan_s");
    print_message("one search %.6g ms, two %.6g ms, two ranks %.6g ms\n", m1 * 1e3, m2 * 1e3,
                  tu_num(two, "makespan_s") * 1e3);
    assert_true(m2 < m1);
    assert_true(tu_num(two, "makespan_s") == m2);
    assert_true(tu_num(again, "makespan_s") == m2);
    assert_true(json_equal(pm, p2));
    assert_true(json_equal(pn, p2));
    json_decref(one1), json_decref(one2), json_decref(two), json_decref(again);
    json_decref(p1), json_decref(p2), json_decref(pm), json_decref(pn);
    tu_rmtree(dir);
}

/* drl over two ranks: the same plan twice (every rank checks at the end that it holds rank
 * 0's weights, and exits 2 otherwise), valid for the plan checker of a one-process `simulate`,
 * at the makespan `place` reported. */
#define DRL                                                                                        \
    "models/transformer.onnx --cluster examples/clusters/autodeep-4xk80.json --algo drl "          \
    "--episodes 16 --seed 2"

static void test_drl_under_mpirun(void **state)
{
    (void)state;
    char dir[256], cmd[1200];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "place-dist"), 0);
    if (!tu_mpi_begin(2)) {
        tu_rmtree(dir);
        skip();
    }
    json_t *pa, *pb;
    json_t *a = place(dir, "a", DRL, &pa), *b = place(dir, "b", DRL, &pb);
    /* --measured stays in one process: ranks would time each other's runs */
    tu_expect_refusal("place " DRL " --measured",
                      "--measured runs in one process, not under mpirun");
    tu_mpi_end();
    assert_true(tu_num(a, "makespan_s") == tu_num(b, "makespan_s"));
    assert_true(json_equal(pa, pb));
    assert_string_equal(json_string_value(json_object_get(a, "invariants")), "ok");
    assert_true(json_is_true(json_object_get(a, "fits")));
    snprintf(cmd, sizeof cmd,
             "simulate models/transformer.onnx --cluster examples/clusters/autodeep-4xk80.json "
             "--plan %s/a.json --json",
             dir);
    json_t *s = tu_run_json(cmd);
    assert_true(tu_num(s, "makespan_s") == tu_num(a, "makespan_s"));
    json_decref(s), json_decref(a), json_decref(b), json_decref(pa), json_decref(pb);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_any_rank_count),
        cmocka_unit_test(test_restarts_refusals),
        cmocka_unit_test(test_moirai_under_mpirun),
        cmocka_unit_test(test_drl_under_mpirun),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
