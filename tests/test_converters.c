/* test_converters.c: tools/moirai_to_taskgraph.py and tools/msr_to_taskgraph.py on the shipped
 * public instances (../shared/benchmarks), read back by placer (docs/benchmarks.md).
 *
 * A converted MOIRAI instance must be the very instance pl_moirai_load builds (same times,
 * memories and transfer table), so `placer place` on it gives bench_place's figures; a converted
 * MSR instance keeps the accelerator <-> CPU costs and the colour classes; the MSR latency
 * scorer agrees with hand-computed latencies. */
#include "testutil.h"

#include "placer/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MOIRAI_DIR "/work/shared/benchmarks/moirai"
#define MSR_DIR "/work/shared/benchmarks/msr"
#define BERT "latency-OperatorGraphs-bert_l-3_inference"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    return tu_mkdtemp(dir, sizeof dir, "placer-conv");
}

static int teardown(void **state)
{
    (void)state;
    return tu_rmtree(dir);
}

/* Runs a command that must succeed. */
static void run_ok(const char *cmd)
{
    int rc = system(cmd);
    if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        fail_msg("command failed (status %d): %s", rc, cmd);
}

static char *path_in(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static pl_cost *cost_of(const pl_graph *g, const pl_cluster *c)
{
    pl_err err = {""};
    pl_cost *k = pl_cost_new(g, c, NULL, NULL, 0, &err);
    if (!k) fail_msg("%s", err.msg);
    return k;
}

/* The converted instance against pl_moirai_load's: op by op (by name), device by device. */
static void same_instance(const char *name)
{
    char src[256], cmd[1024];
    snprintf(src, sizeof src, MOIRAI_DIR "/%s.json", name);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/moirai_to_taskgraph.py %s %s %s", src,
             path_in("g.json"), path_in("c.json"));
    run_ok(cmd);
    pl_err err = {""};
    pl_graph *g0, *g1 = tu_load(path_in("g.json"));
    pl_cluster *c0, *c1 = pl_cluster_load(path_in("c.json"), &err);
    if (!c1) fail_msg("%s", err.msg);
    if (pl_moirai_load(src, &g0, &c0, &err) < 0) fail_msg("%s", err.msg);
    pl_cost *k0 = cost_of(g0, c0), *k1 = cost_of(g1, c1);
    assert_int_equal(g1->n_ops, g0->n_ops);
    assert_int_equal(g1->n_edges, g0->n_edges);
    assert_int_equal(c1->n_devs, c0->n_devs);
    /* memory: one instance unit is a byte (GoogLeNet, InceptionV4: 1e11 units a device) or,
     * when that would be absurdly small (example-1: 14), 1 GiB, on tasks and devices alike */
    double unit = c1->devs[0].memory_bytes / c0->devs[0].memory_bytes;
    assert_true(unit == (strcmp(name, "example-1") ? 1.0 : 1073741824.0));
    for (int d = 0; d < c0->n_devs; d++)
        assert_close(c1->devs[d].memory_bytes, c0->devs[d].memory_bytes * unit, 1e-12);
    for (int i = 0; i < g0->n_ops; i++) {
        int j = pl_graph_find_op(g1, g0->ops[i].name);
        assert_true(j >= 0);
        for (int d = 0; d < c0->n_devs; d++)
            assert_true(pl_cost_op_s(k1, j, d) == pl_cost_op_s(k0, i, d));
        assert_close(g1->ops[j].extra_memory_bytes, g0->ops[i].extra_memory_bytes * unit, 1e-12);
    }
    for (int t = 0; t < g0->n_tensors; t++) {
        int u = pl_graph_find_tensor(g1, g0->tensors[t].name);
        assert_true(u >= 0);
        for (int a = 0; a < c0->n_devs; a++)
            for (int b = 0; b < c0->n_devs; b++)
                if (pl_cost_xfer_s(k1, u, a, b) != pl_cost_xfer_s(k0, t, a, b))
                    fail_msg("%s: tensor %s %d->%d: %g, not %g", name, g0->tensors[t].name, a, b,
                             pl_cost_xfer_s(k1, u, a, b), pl_cost_xfer_s(k0, t, a, b));
    }
    pl_cost_free(k0), pl_cost_free(k1);
    pl_graph_free(g0), pl_graph_free(g1), pl_cluster_free(c0), pl_cluster_free(c1);
}

static void test_moirai_instances(void **state)
{
    (void)state;
    same_instance("example-1");
    same_instance("googlenet");
    same_instance("inceptionv4");
}

/* Through the CLI: heft's plan on the converted example-1 is heft's plan on
 * pl_moirai_load's instance (28 time units, simulated under ports). */
static void test_moirai_cli(void **state)
{
    (void)state;
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 tools/moirai_to_taskgraph.py " MOIRAI_DIR "/example-1.json %s %s",
             path_in("g.json"), path_in("c.json"));
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "place %s --cluster %s --algo heft", path_in("g.json"),
             path_in("c.json"));
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_contains(out, "makespan    28000.0000 ms");
    free(out);
    pl_err err = {""};
    pl_graph *g;
    pl_cluster *c;
    if (pl_moirai_load(MOIRAI_DIR "/example-1.json", &g, &c, &err) < 0) fail_msg("%s", err.msg);
    pl_cost *k = cost_of(g, c);
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts o = {0};
    assert_int_equal(pl_place(pl_algo_find("heft"), k, &o, p, &err), 0);
    pl_sim_opts so = {0};
    pl_sim_result r;
    memset(&r, 0, sizeof r);
    assert_int_equal(pl_simulate(k, p, &so, &r, &err), 0);
    assert_true(r.makespan_s == 28);
    pl_sim_result_free(&r);
    pl_plan_free(p), pl_cost_free(k), pl_graph_free(g), pl_cluster_free(c);
}

/* BERT-L3: 235 ops, MSR's 63 colour classes of two or more nodes, and each node's cost as the
 * transfer time of its result: c between an accelerator and a CPU, 2c between accelerators,
 * 0 between CPUs. Every algorithm's plan through `placer compare` keeps the classes (the
 * simulator refuses any that does not, and compare simulates every plan). */
static void test_msr_bert(void **state)
{
    (void)state;
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 tools/msr_to_taskgraph.py " MSR_DIR "/" BERT ".json %s %s",
             path_in("g.json"), path_in("c.json"));
    run_ok(cmd);
    pl_err err = {""};
    pl_graph *g = tu_load(path_in("g.json"));
    pl_cluster *c = pl_cluster_load(path_in("c.json"), &err);
    if (!c) fail_msg("%s", err.msg);
    assert_int_equal(g->n_ops, 235);
    assert_int_equal(g->n_coloc, 63);
    assert_int_equal(c->n_devs, 8 + 4);
    assert_true(c->devs[8].memory_bytes == 629145600.0);
    pl_cost *k = cost_of(g, c);
    /* node 0 "cls.seq_relationship.weight": cost 0.000476837158203125 on its out-edge */
    int t = pl_graph_find_tensor(g, "cls.seq_relationship.weight:out");
    assert_true(t >= 0);
    double cost = 0.000476837158203125;
    assert_true(pl_cost_xfer_s(k, t, 0, 8) == cost);
    assert_true(pl_cost_xfer_s(k, t, 9, 1) == cost);
    assert_true(pl_cost_xfer_s(k, t, 8, 9) == 2 * cost);
    assert_true(pl_cost_xfer_s(k, t, 0, 1) == 0);
    pl_cost_free(k), pl_graph_free(g), pl_cluster_free(c);
    /* heft's free placement does not fit around BERT's pinned classes (Add36 and its 358 MiB
     * bias pinned to an accelerator that heft fills first): the third run keeps heft's other
     * devices and moves only the classes */
    snprintf(cmd, sizeof cmd, "place %s --cluster %s --algo heft", path_in("g.json"),
             path_in("c.json"));
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_contains(out, "every other op kept its device of the first plan");
    assert_contains(out, "invariants  ok");
    free(out);
    snprintf(cmd, sizeof cmd, "compare %s --cluster %s --algos single,m-etf,getf,metis,random",
             path_in("g.json"), path_in("c.json"));
    assert_int_equal(tu_run(cmd, &out), 0);
    assert_contains(out, "getf ");
    free(out);
}

/* MSR's latency of a placement, by hand on A -> B -> C, A -> C (cpu 5/4/3, fpga 1/2/1, costs
 * A 0.5, B 0.25): B, C on one accelerator: 5 (A on a CPU) + 0.5 (A's cost in) + 2 + 1 = 8.5.
 * A, C on one accelerator, B on a CPU: not contiguous, so two pieces: {A} ends 1 + 0.5 (its
 * cost out) = 1.5, B 1.5 + 4 = 5.5, {C} starts 5.5, pays 0.5 + 0.25 in, runs 1: 7.25. */
static void test_msr_score(void **state)
{
    (void)state;
    const char *inst =
        "{\"maxSizePerFPGA\": 1e9, \"maxFPGAs\": 2, \"maxCPUs\": 1, \"nodes\": ["
        "{\"id\": 0, \"name\": \"A\", \"supportedOnFpga\": true, \"cpuLatency\": 5, "
        "\"fpgaLatency\": 1, \"isBackwardNode\": false, \"colorClass\": 7, \"size\": 10},"
        "{\"id\": 1, \"name\": \"B\", \"supportedOnFpga\": true, \"cpuLatency\": 4, "
        "\"fpgaLatency\": 2, \"isBackwardNode\": false, \"colorClass\": 8, \"size\": 10},"
        "{\"id\": 2, \"name\": \"C\", \"supportedOnFpga\": true, \"cpuLatency\": 3, "
        "\"fpgaLatency\": 1, \"isBackwardNode\": false, \"colorClass\": 7, \"size\": 10}],"
        "\"edges\": [{\"sourceId\": 0, \"destId\": 1, \"cost\": 0.5, \"size\": 1},"
        "{\"sourceId\": 0, \"destId\": 2, \"cost\": 0.5, \"size\": 1},"
        "{\"sourceId\": 1, \"destId\": 2, \"cost\": 0.25, \"size\": 1}]}";
    const char *plans[2] = {
        "{\"format\": \"placer-plan/1\", \"placement\": {\"A\": \"cpu0\", \"B\": \"fpga0\", "
        "\"C\": \"fpga0\"}}",
        "{\"format\": \"placer-plan/1\", \"placement\": {\"A\": \"fpga1\", \"B\": \"cpu0\", "
        "\"C\": \"fpga1\"}}"};
    const char *want[2] = {"8.500", "7.250"};
    FILE *f = fopen(path_in("msr.json"), "w");
    assert_non_null(f);
    fputs(inst, f);
    fclose(f);
    for (int i = 0; i < 2; i++) {
        f = fopen(path_in("p.json"), "w");
        assert_non_null(f);
        fputs(plans[i], f);
        fclose(f);
        char cmd[1024], line[64] = "";
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/msr_to_taskgraph.py --score %s %s",
                 path_in("msr.json"), path_in("p.json"));
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        if (!fgets(line, sizeof line, p)) line[0] = 0;
        assert_int_equal(pclose(p), 0);
        assert_contains(line, want[i]);
    }
    /* the colour class {A, C} becomes a colocation class; the cluster has 1 CPU, 2 FPGAs */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/msr_to_taskgraph.py %s %s %s",
             path_in("msr.json"), path_in("g.json"), path_in("c.json"));
    run_ok(cmd);
    pl_graph *g = tu_load(path_in("g.json"));
    assert_int_equal(g->n_coloc, 1);
    assert_int_equal(g->ops[pl_graph_find_op(g, "A")].coloc, 1);
    assert_int_equal(g->ops[pl_graph_find_op(g, "C")].coloc, 1);
    assert_int_equal(g->ops[pl_graph_find_op(g, "B")].coloc, 0);
    pl_graph_free(g);
    /* a plan that splits the class is refused by `placer simulate`, naming it */
    snprintf(cmd, sizeof cmd, "simulate %s --cluster %s --plan %s", path_in("g.json"),
             path_in("c.json"), path_in("p.json"));
    f = fopen(path_in("p.json"), "w");
    assert_non_null(f);
    fputs("{\"format\": \"placer-plan/1\", \"placement\": {\"A\": \"fpga0\", \"B\": \"cpu0\", "
          "\"C\": \"fpga1\"}}",
          f);
    fclose(f);
    tu_expect_refusal(cmd,
                      "colocation class 'c7' is split: op 'A' is on 'fpga0', op 'C' on 'fpga1'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moirai_instances),
        cmocka_unit_test(test_moirai_cli),
        cmocka_unit_test(test_msr_bert),
        cmocka_unit_test(test_msr_score),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
