/* test_moirai.c: the MOIRAI instance reader and MILP (docs/moirai.md): the optimum against
 * brute force on tiny instances, example-1's published optimum, and MILP == simulator. */
#include "testutil.h"

#include "placer/place.h"

#include "../src/place/moirai_ls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLE1 "/work/shared/benchmarks/moirai/example-1.json"

typedef struct inst {
    pl_graph *g;
    pl_cluster *c;
    pl_cost *k;
} inst;

static void inst_load(inst *x, const char *path, double mem_scale)
{
    pl_err err = {{0}};
    if (pl_moirai_load(path, &x->g, &x->c, &err) < 0) fail_msg("%s", err.msg);
    for (int d = 0; d < x->c->n_devs; d++)
        x->c->devs[d].memory_bytes *= mem_scale;
    x->k = pl_cost_new(x->g, x->c, NULL, NULL, 0, &err);
    assert_non_null(x->k);
}

static void inst_free(inst *x)
{
    pl_cost_free(x->k), pl_graph_free(x->g), pl_cluster_free(x->c);
}

/* Ports, memory as (5) alone; per_edge: the MILP's world, one transfer per edge (with the
 * plan's op and transfer orders). */
static double simulate(const pl_cost *k, const pl_plan *p, bool per_edge)
{
    pl_sim_opts so = {
        .contention = PL_CONTENTION_PORTS, .ignore_memory = true, .per_edge = per_edge};
    pl_sim_result r = {0};
    pl_err err = {{0}};
    if (pl_simulate(k, p, &so, &r, &err) < 0) fail_msg("%s", err.msg);
    double ms = r.makespan_s;
    pl_sim_result_free(&r);
    return ms;
}

/* Runs the MILP; returns its objective (from the note) and sets *simulated to the returned
 * plan's simulated makespan. */
static double solve(const inst *x, double limit, char *note, size_t n, double *simulated)
{
    pl_place_opts o = {.time_limit_s = limit};
    pl_plan *p = pl_plan_new(x->k->n_ops, x->k->n_devs);
    pl_err err = {{0}};
    if (pl_place(pl_algo_find("moirai"), x->k, &o, p, &err) < 0) fail_msg("%s", err.msg);
    snprintf(note, n, "%s", err.msg);
    const char *s = strstr(err.msg, "MILP objective ");
    assert_non_null(s);
    double obj = atof(s + strlen("MILP objective "));
    *simulated = simulate(x->k, p, true);
    pl_plan_free(p);
    return obj;
}

/* ---- brute force: every placement meeting (5), every schedule order ----
 *
 * For a placement, the augmented DAG has the ops and one node per edge that crosses devices
 * at a positive time (a transfer); an op holds its device, a transfer its sender's send port
 * and its receiver's receive port. Every linear extension fixes the order on each device and
 * each port (the plan's op order and transfer order); the simulator (per edge, ports) then
 * gives the earliest schedule with those orders, and the best over all extensions is the
 * optimum. Extensions that differ only by swapping adjacent independent nodes (no shared
 * device or port, no edge) give the same orders, so only the one with the smaller index
 * first is kept: every class of equivalent extensions keeps its lexicographically least. */

typedef struct brute {
    const pl_cost *k;
    pl_plan *p;
    int n, nn;        /* ops; ops + transfers */
    int xedge[64];    /* transfer node n + t: its edge */
    int res[64][2];   /* resources: device (ops), send and receive port (transfers) */
    bool dep[64][64]; /* u -> v is an edge of the augmented DAG */
    int indeg[64], seq[64];
    bool used[64];
    double *prio, best;
} brute;

static bool independent(const brute *b, int u, int v)
{
    if (b->dep[u][v] || b->dep[v][u]) return false;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (b->res[u][i] >= 0 && b->res[u][i] == b->res[v][j]) return false;
    return true;
}

static void leaf(brute *b)
{
    int ops[64], no = 0;
    for (int i = 0; i < b->nn; i++) {
        int v = b->seq[i];
        if (v < b->n)
            ops[no++] = v;
        else
            b->prio[b->xedge[v - b->n]] = i;
    }
    pl_plan_set_order(b->p, ops);
    pl_plan_set_xfer_priority(b->p, b->k->g->n_edges, b->prio);
    double ms = simulate(b->k, b->p, true);
    if (ms < b->best) b->best = ms;
}

static void extensions(brute *b, int depth)
{
    if (depth == b->nn) return leaf(b);
    int last = depth ? b->seq[depth - 1] : -1;
    for (int v = 0; v < b->nn; v++) {
        if (b->used[v] || b->indeg[v]) continue;
        if (last >= 0 && v < last && independent(b, last, v)) continue;
        b->used[v] = true, b->seq[depth] = v;
        for (int w = 0; w < b->nn; w++)
            b->indeg[w] -= b->dep[v][w];
        extensions(b, depth + 1);
        for (int w = 0; w < b->nn; w++)
            b->indeg[w] += b->dep[v][w];
        b->used[v] = false;
    }
}

/* Resources: device d is d, send port of d is D + d, receive port 2D + d. */
static void augment(brute *b)
{
    const pl_graph *g = b->k->g;
    int D = b->k->n_devs, *dev = b->p->dev;
    b->nn = b->n;
    memset(b->dep, 0, sizeof b->dep);
    for (int i = 0; i < b->n; i++)
        b->res[i][0] = dev[i], b->res[i][1] = -1;
    for (int e = 0; e < g->n_edges; e++) {
        const pl_edge *ed = &g->edges[e];
        int a = dev[ed->src], c = dev[ed->dst];
        if (a == c || !(pl_cost_xfer_s(b->k, ed->tensor, a, c) > 0)) {
            b->dep[ed->src][ed->dst] = true;
            continue;
        }
        int t = b->nn++;
        b->xedge[t - b->n] = e;
        b->res[t][0] = D + a, b->res[t][1] = 2 * D + c;
        b->dep[ed->src][t] = b->dep[t][ed->dst] = true;
    }
    for (int v = 0; v < b->nn; v++) {
        b->indeg[v] = 0, b->used[v] = false;
        for (int u = 0; u < b->nn; u++)
            b->indeg[v] += b->dep[u][v];
    }
}

static bool fits(const pl_cost *k, const int *dev)
{
    for (int d = 0; d < k->n_devs; d++) {
        double m = 0;
        for (int i = 0; i < k->n_ops; i++)
            if (dev[i] == d) m += k->g->ops[i].extra_memory_bytes;
        if (m > k->c->devs[d].memory_bytes) return false;
    }
    return true;
}

static double brute_force(const pl_cost *k)
{
    int n = k->n_ops, D = k->n_devs;
    brute *b = calloc(1, sizeof *b);
    *b = (brute){.k = k, .p = pl_plan_new(n, D), .n = n, .best = INFINITY};
    b->prio = malloc((k->g->n_edges + 1) * sizeof *b->prio);
    long total = 1;
    for (int i = 0; i < n; i++)
        total *= D;
    for (long code = 0; code < total; code++) {
        long c = code;
        for (int i = 0; i < n; i++, c /= D)
            b->p->dev[i] = (int)(c % D);
        if (!fits(k, b->p->dev)) continue;
        for (int e = 0; e < k->g->n_edges; e++)
            b->prio[e] = INFINITY;
        augment(b);
        extensions(b, 0);
    }
    double best = b->best;
    pl_plan_free(b->p), free(b->prio), free(b);
    return best;
}

/* A random MOIRAI-format instance: n tasks in topological order, edges i -> j (i < j) with
 * probability 1/2, a quarter of them untimed (a plain precedence: the simulator's zero-time
 * transfers hold no port), the others timed with a random asymmetric matrix. */
static const char *random_instance(uint64_t *seed, int n, int D, bool tight_memory)
{
    static char buf[16384];
    size_t len = 0;
    int id[8], next = 0, mem[8], total = 0;
    bool edge[8][8] = {{false}};
    for (int i = 0; i < n; i++)
        id[i] = next++, mem[i] = 1 + pl_rng_below(seed, 4), total += mem[i];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            edge[i][j] = pl_rng_below(seed, 2);
    len += snprintf(buf + len, sizeof buf - len, "{\"name\": \"rnd\", \"devices\": [");
    for (int d = 0; d < D; d++)
        len += snprintf(buf + len, sizeof buf - len, "%s{\"id\": %d, \"memory\": %d}", d ? "," : "",
                        d, tight_memory ? total / D + 2 : 1000);
    len += snprintf(buf + len, sizeof buf - len, "], \"tasks\": [");
    for (int i = 0; i < n; i++) {
        len += snprintf(buf + len, sizeof buf - len, "%s{\"id\": %d, \"time\": [", i ? "," : "",
                        id[i]);
        for (int d = 0; d < D; d++)
            len += snprintf(buf + len, sizeof buf - len, "%s%d", d ? "," : "",
                            1 + pl_rng_below(seed, 9));
        len += snprintf(buf + len, sizeof buf - len, "], \"memory\": %d, \"succ\": [", mem[i]);
        for (int j = i + 1, first = 1; j < n; j++)
            if (edge[i][j])
                len += snprintf(buf + len, sizeof buf - len, "%s%d", first ? "" : ",", id[j]),
                    first = 0;
        len += snprintf(buf + len, sizeof buf - len, "]}");
    }
    len += snprintf(buf + len, sizeof buf - len, "], \"transfers\": [");
    char untimed[2048] = "";
    size_t ul = 0;
    int xid = 100, nt = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!edge[i][j]) continue;
            if (pl_rng_below(seed, 4) == 0) {
                ul += snprintf(untimed + ul, sizeof untimed - ul, "%s[%d, %d]", ul ? "," : "",
                               id[i], id[j]);
                continue;
            }
            len += snprintf(buf + len, sizeof buf - len,
                            "%s{\"id\": %d, \"src\": %d, \"dst\": %d, \"time\": [", nt++ ? "," : "",
                            xid++, id[i], id[j]);
            for (int a = 0; a < D; a++) {
                len += snprintf(buf + len, sizeof buf - len, "%s[", a ? "," : "");
                for (int c = 0; c < D; c++)
                    len += snprintf(buf + len, sizeof buf - len, "%s%d", c ? "," : "",
                                    a == c ? 0 : 1 + pl_rng_below(seed, 5));
                len += snprintf(buf + len, sizeof buf - len, "]");
            }
            len += snprintf(buf + len, sizeof buf - len, "]}");
        }
    len += snprintf(buf + len, sizeof buf - len, "], \"untimed_edges\": [%s]}", untimed);
    return tu_tmpfile(buf, len, ".json");
}

/* The acceptance: on tiny instances the MILP optimum equals brute force over every
 * placement, op order and transfer order, and the returned plan, simulated per edge under
 * ports with the MILP's op and transfer orders, makes exactly the MILP's objective. */
static void check_random(int n, int D, bool tight, int count, unsigned seed0)
{
    uint64_t seed = seed0;
    for (int t = 0; t < count; t++) {
        inst x;
        const char *path = random_instance(&seed, n, D, tight);
        inst_load(&x, path, 1);
        char note[PL_ERR_MAX];
        double bf = brute_force(x.k);
        double simulated, obj = solve(&x, 30, note, sizeof note, &simulated);
        if (fabs(obj - bf) > 1e-6 || fabs(simulated - obj) > 1e-6)
            fail_msg("instance %d (%s): MILP %g, brute force %g, simulated %g; %s", t, path, obj,
                     bf, simulated, note);
        assert_non_null(strstr(note, "optimal"));
        inst_free(&x);
    }
}

static void test_random_two_devices(void **state)
{
    (void)state;
    check_random(6, 2, false, 6, 7);
}

static void test_random_three_devices(void **state)
{
    (void)state;
    check_random(5, 3, false, 6, 11);
}

static void test_random_memory(void **state)
{
    (void)state;
    check_random(5, 3, true, 6, 23);
}

/* example-1 with its memory scaled by mem_scale: CBC proves the optimum `want`, and the plan
 * simulates at it. */
static void check_example1(double mem_scale, double want, const char *label)
{
    inst x;
    char note[PL_ERR_MAX];
    inst_load(&x, EXAMPLE1, mem_scale);
    assert_int_equal(x.k->n_ops, 14);
    assert_int_equal(x.g->n_edges, 19);
    double t0 = pl_now();
    double simulated;
    assert_close(solve(&x, 600, note, sizeof note, &simulated), want, 1e-9);
    assert_close(simulated, want, 1e-9);
    print_message("%s: %s (%.1f s)\n", label, note, pl_now() - t0);
    assert_non_null(strstr(note, "optimal"));
    inst_free(&x);
}

static void test_example1(void **state)
{
    (void)state;
    check_example1(1, 30, "example-1");
}

static void test_example1_no_memory(void **state)
{
    (void)state;
    check_example1(1e6, 28, "example-1 without memory");
}

static void test_reader_refuses(void **state)
{
    (void)state;
    const char *bad = "{\"devices\": [{\"id\": 0, \"memory\": 1}], \"tasks\": [{\"id\": 0, "
                      "\"time\": [1], \"memory\": 0, \"succ\": [5]}], \"transfers\": [], "
                      "\"untimed_edges\": []}";
    pl_graph *g;
    pl_cluster *c;
    pl_err err = {{0}};
    assert_int_equal(pl_moirai_load(tu_tmpfile(bad, strlen(bad), ".json"), &g, &c, &err), -1);
    assert_non_null(strstr(err.msg, "no task"));
}

/* ---- the local search on its own ---- */

/* From a given plan (heft's: it may even break memory (5)), the search returns a plan that
 * simulates no worse, and keeps (5) when the start met it. */
static void test_ls_never_worse(void **state)
{
    (void)state;
    uint64_t seed = 5;
    for (int t = 0; t < 8; t++) {
        inst x;
        inst_load(&x, random_instance(&seed, 8, 3, t % 2), 1);
        pl_plan *p = pl_plan_new(x.k->n_ops, x.k->n_devs);
        pl_err err = {{0}};
        pl_place_opts o = {.contention = PL_CONTENTION_PORTS};
        if (pl_place(pl_algo_find("heft"), x.k, &o, p, &err) < 0) fail_msg("%s", err.msg);
        double start = simulate(x.k, p, false);
        bool fit = fits(x.k, p->dev);
        pl_ls_stats st;
        int moves = pl_moirai_local_search(x.k, p, start, pl_now() + 2, 0, t + 1, NULL, &st);
        double after = simulate(x.k, p, false);
        assert_true(after <= start + 1e-12);
        assert_close(after, st.best_ms, 1e-12);
        assert_true(moves == 0 ? after == start : after < start);
        if (fit) assert_true(fits(x.k, p->dev));
        pl_plan_free(p), inst_free(&x);
    }
}

/* Four independent 10 s tasks, all on d0 of two identical devices, no communication: 40 s,
 * where two per device take 20 s. */
static void test_ls_improves(void **state)
{
    (void)state;
    const char *js =
        "{\"devices\": [{\"id\": 0, \"memory\": 10}, {\"id\": 1, \"memory\": 10}],"
        " \"tasks\": [{\"id\": 0, \"time\": [0, 0], \"memory\": 0, \"succ\": [1, 2, 3, 4]},"
        " {\"id\": 1, \"time\": [10, 10], \"memory\": 1, \"succ\": []},"
        " {\"id\": 2, \"time\": [10, 10], \"memory\": 1, \"succ\": []},"
        " {\"id\": 3, \"time\": [10, 10], \"memory\": 1, \"succ\": []},"
        " {\"id\": 4, \"time\": [10, 10], \"memory\": 1, \"succ\": []}],"
        " \"transfers\": [], \"untimed_edges\": [[0, 1], [0, 2], [0, 3], [0, 4]]}";
    inst x;
    inst_load(&x, tu_tmpfile(js, strlen(js), ".json"), 1);
    pl_plan *p = pl_plan_new(x.k->n_ops, x.k->n_devs);
    assert_close(simulate(x.k, p, false), 40, 1e-12);
    pl_ls_stats st;
    assert_true(pl_moirai_local_search(x.k, p, 40, pl_now() + 2, 0, 1, NULL, &st) > 0);
    assert_close(simulate(x.k, p, false), 20, 1e-12);
    pl_plan_free(p), inst_free(&x);
}

/* ---- the solver in a child process (common.h, "Isolated solves") ---- */

/* The plan passes the simulator's checker (memory included) and simulates at least at the
 * published optimum; returns its makespan. */
static double check_plan(const inst *x, const pl_plan *p, double optimum, const char *where)
{
    pl_sim_opts so = {.contention = PL_CONTENTION_PORTS, .per_edge = true, .record = true};
    pl_sim_result r = {0};
    pl_err err = {{0}};
    char why[512];
    if (pl_simulate(x->k, p, &so, &r, &err) < 0) fail_msg("%s: %s", where, err.msg);
    if (pl_sim_check(x->k, p, &so, &r, why, sizeof why) < 0) fail_msg("%s: %s", where, why);
    double ms = r.makespan_s;
    pl_sim_result_free(&r);
    if (!(ms >= optimum * (1 - 1e-9))) fail_msg("%s: %g below the optimum %g", where, ms, optimum);
    return ms;
}

/* PLACER_TEST_SOLVER_FAULT makes the solver's child crash, hang or send garbage: moirai
 * returns 0 with the best heuristic plan (improved by its local search), valid, and its note
 * says what happened. Before the isolation the fault did not exist and the note said
 * "optimal". */
static void check_fault(const char *fault, double limit, const char *said, const char *also)
{
    inst x;
    inst_load(&x, EXAMPLE1, 1e6); /* without memory, where the heuristics have a plan */
    pl_place_opts o = {.time_limit_s = limit};
    pl_plan *p = pl_plan_new(x.k->n_ops, x.k->n_devs);
    pl_err err = {{0}};
    setenv("PLACER_TEST_SOLVER_FAULT", fault, 1);
    int rc = pl_place(pl_algo_find("moirai"), x.k, &o, p, &err);
    unsetenv("PLACER_TEST_SOLVER_FAULT");
    if (rc < 0) fail_msg("%s: %s", fault, err.msg);
    print_message("%s: %s\n", fault, err.msg);
    if (!strstr(err.msg, said) || (also && !strstr(err.msg, also)))
        fail_msg("%s: the note lacks '%s' or '%s': %s", fault, said, also, err.msg);
    if (!strstr(err.msg, "; using the best plan found so far (heuristic "))
        fail_msg("%s: no fallback said: %s", fault, err.msg);
    check_plan(&x, p, 28, fault);
    pl_plan_free(p);
    inst_free(&x);
}

static void test_solver_faults(void **state)
{
    (void)state;
    /* crashed at once, then again without preprocessing (time was left for a second try) */
    check_fault("segv", 20, "the MILP solver crashed (SIGSEGV) after ",
                ", and again without preprocessing");
    check_fault("garbage", 20, "the MILP solver sent a malformed answer (14 bytes)",
                ", and again without preprocessing");
    /* 3 s: CBC's limit is 1 s; the child is killed 1 + pl_solve_grace_s(1) = 3.5 s in */
    check_fault("stall", 3, "the MILP solver gave no answer within ", NULL);
}

/* The time limits at which CBC 2.10 died with SIGSEGV in CglPreProcess::postProcess on
 * mobilenet_v3_large (issue 12): the clock ran out in the root LP of the preprocessed model.
 * Whether it crashes depends on the machine's speed; whatever CBC does, placer must exit 0
 * with a plan the simulator's checker accepts. */
static void test_mobilenet_time_limits(void **state)
{
    (void)state;
    static const char *limits[] = {"8s", "10s", "12s"};
    const char *on = "models/mobilenet_v3_large.onnx --cluster "
                     "examples/clusters/moirai-inter-server.json";
    char dir[256], args[1024], *out;
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "moirai-sweep"), 0);
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "place %s --algo moirai --time-limit %s -o %s/plan.json", on,
                 limits[i], dir);
        int rc = tu_run(args, &out);
        const char *note = strstr(out, "placer: note: ");
        print_message("%s: %.200s\n", limits[i], note ? note : "(no note)");
        if (rc != 0) fail_msg("placer %s: exit %d\n%s", args, rc, out);
        free(out);
        snprintf(args, sizeof args, "simulate %s --plan %s/plan.json", on, dir);
        if (tu_run(args, &out) != 0 || !strstr(out, "invariants  ok"))
            fail_msg("placer %s: the plan fails the checker\n%s", args, out);
        free(out);
    }
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_refuses),       cmocka_unit_test(test_random_two_devices),
        cmocka_unit_test(test_random_three_devices), cmocka_unit_test(test_random_memory),
        cmocka_unit_test(test_example1_no_memory),   cmocka_unit_test(test_example1),
        cmocka_unit_test(test_ls_never_worse),       cmocka_unit_test(test_ls_improves),
        cmocka_unit_test(test_solver_faults),        cmocka_unit_test(test_mobilenet_time_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
