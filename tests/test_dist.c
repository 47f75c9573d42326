/* test_dist.c: the pool of workers (dist.h): pl_dist_map in one process, and `compare` under
 * `mpirun -np 2` giving the one-process answer (skipped, saying so, without MPI). */
#include "testutil.h"

#include "placer/dist.h"

#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    int calls[8];
    int order[8], n;
} seen_t;

/* Each item's slot gets 100 + item and its square; the calls are counted in order. */
static void square(int item, void *out, void *user)
{
    seen_t *s = user;
    s->calls[item]++;
    s->order[s->n++] = item;
    int *o = out;
    o[0] = 100 + item;
    o[1] = item * item;
}

/* One process is rank 0 of 1, and runs every item exactly once, in order, into its slot. */
static void test_map_one_process(void **state)
{
    (void)state;
    assert_int_equal(pl_dist_rank(), 0);
    assert_int_equal(pl_dist_size(), 1);
    seen_t s = {0};
    int out[5][2];
    memset(out, 0xff, sizeof out);
    assert_int_equal(pl_dist_map(5, square, out, sizeof *out, &s), 0);
    assert_int_equal(s.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(s.calls[i], 1);
        assert_int_equal(s.order[i], i);
        assert_int_equal(out[i][0], 100 + i);
        assert_int_equal(out[i][1], i * i);
    }
    /* no items: nothing runs; a negative count or no function: refused */
    assert_int_equal(pl_dist_map(0, square, NULL, sizeof *out, &s), 0);
    assert_int_equal(s.n, 5);
    assert_int_equal(pl_dist_map(-1, square, out, sizeof *out, &s), -1);
    assert_int_equal(pl_dist_map(2, NULL, out, sizeof *out, &s), -1);
    assert_int_equal(s.n, 5);
    /* the pool-or-local map: in one process both choices run every item once, in order */
    for (int pool = 0; pool < 2; pool++) {
        seen_t t = {0};
        memset(out, 0xff, sizeof out);
        assert_int_equal(pl_dist_map_or_here(pool, 5, square, out, sizeof *out, &t), 0);
        assert_int_equal(t.n, 5);
        for (int i = 0; i < 5; i++) {
            assert_int_equal(t.order[i], i);
            assert_int_equal(out[i][1], i * i);
        }
    }
}

/* Five algorithms with five different makespans (hand-checked on this cluster), over two
 * ranks (3 and 2 items: the padded last round): rank 0 prints the one-process makespans, in
 * the same order. */
#define CMP                                                                                        \
    "compare models/rnnlm.onnx --cluster examples/clusters/autodeep-4xk80.json "                   \
    "--algos single,m-topo,m-etf,heft,random --seed 1 --json"

static void test_compare_under_mpirun(void **state)
{
    (void)state;
    json_t *one = tu_run_json(CMP " 2>/dev/null");
    if (!tu_mpi_begin(2)) {
        json_decref(one);
        skip();
    }
    /* it must exit 0 with one JSON document (rank 1 prints nothing) */
    json_t *two = tu_run_json(CMP " 2>/dev/null");
    tu_mpi_end();
    json_t *a1 = json_object_get(one, "algorithms"), *a2 = json_object_get(two, "algorithms");
    assert_int_equal(json_array_size(a1), 5);
    assert_int_equal(json_array_size(a2), 5);
    double prev = -1;
    for (size_t k = 0; k < 5; k++) {
        json_t *r1 = json_array_get(a1, k), *r2 = json_array_get(a2, k);
        assert_string_equal(json_string_value(json_object_get(r1, "algorithm")),
                            json_string_value(json_object_get(r2, "algorithm")));
        double m = tu_num(r1, "makespan_s");
        assert_true(m != prev); /* the five differ, so a row in the wrong slot shows */
        prev = m;
        assert_true(tu_num(r2, "makespan_s") == m);
    }
    json_decref(one);
    json_decref(two);
}

/* ---- the pool under mpirun: tests/dist_driver.c and placer-mpi with faults ---- */

static char build_dir[512], host[256];

/* The build folder (PLACER_BIN's) when it holds the MPI programs and mpirun exists. */
static bool have_mpi(void)
{
    char driver[700];
    gethostname(host, sizeof host - 1);
    if (!tu_mpi_program("tests/dist_driver", driver, sizeof driver)) return false;
    snprintf(build_dir, sizeof build_dir, "%s", dirname(dirname(driver)));
    return true;
}

static char *slurp(const char *path)
{
    pl_err err = {""};
    char *text = pl_read_file(path, NULL, &err);
    if (!text) fail_msg("%s", err.msg);
    return text;
}

/* Runs `env ENV mpirun -np N FLAGS PROG ARGS` (PROG in the build folder; at most 120 s, so
 * that a hang fails the test instead of stopping it); its stdout and stderr apart; the exit
 * status. */
static int mpin(int n, const char *env, const char *flags, const char *prog, char **out, char **err)
{
    char o[] = "/tmp/placer-dist-out-XXXXXX", e[] = "/tmp/placer-dist-err-XXXXXX", cmd[3000];
    close(mkstemp(o));
    close(mkstemp(e));
    snprintf(cmd, sizeof cmd,
             "env ASAN_OPTIONS=detect_leaks=0 %s timeout 120 mpirun -np %d --oversubscribe "
             "--allow-run-as-root -x PLACER_DIST_FAULT -x PLACER_DIST_TIMEOUT %s %s/%s >%s 2>%s",
             env, n, flags, build_dir, prog, o, e);
    int st = system(cmd);
    *out = slurp(o);
    *err = slurp(e);
    unlink(o);
    unlink(e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int mpi2(const char *env, const char *flags, const char *prog, char **out, char **err)
{
    return mpin(2, env, flags, prog, out, err);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Every item computed once on the rank that owns it (i % 2), a map nested in an item run
 * whole on its rank, the sum in rank order over both, and each rank's broadcast. */
static void test_primitives_under_mpirun(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, line[64];
    assert_int_equal(
        mpi2("PLACER_DIST_FAULT= PLACER_DIST_TIMEOUT=", "", "tests/dist_driver", &out, &err), 0);
    for (int i = 0; i < 7; i++) {
        snprintf(line, sizeof line, "map %d %d %d\n", i, i * i, i % 2);
        assert_non_null(strstr(out, line));
        snprintf(line, sizeof line, "nested %d %d\n", i, 5 + 100 * i);
        assert_non_null(strstr(out, line));
    }
    assert_non_null(strstr(out, "sum 2 3 30\n"));
    assert_non_null(strstr(out, "bcast 0 7\n"));
    assert_non_null(strstr(out, "bcast 1 107\n"));
    assert_null(strstr(err, "failed with exit")); /* rank 1 found what rank 0 did */
    free(out);
    free(err);
}

/* pl_dist_map_or_here (the map of place's pl_pool_map and train's searches) over two ranks:
 * with the pool, item i runs on rank i % 2; without, every rank runs every item itself. */
static void test_map_or_here_under_mpirun(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, line[64];
    assert_int_equal(mpi2("PLACER_DIST_FAULT= PLACER_DIST_TIMEOUT=", "",
                          "tests/dist_driver or-here", &out, &err),
                     0);
    for (int i = 0; i < 7; i++) {
        snprintf(line, sizeof line, "pool %d %d\n", i, i % 2);
        assert_non_null(strstr(out, line));
        snprintf(line, sizeof line, "here %d 0\n", i);
        assert_non_null(strstr(out, line));
    }
    assert_null(strstr(err, "failed with exit")); /* rank 1 ran its own local map */
    free(out);
    free(err);
}

/* Three ranks, rank 2 killed at its second item (under --enable-recovery): its items run on
 * rank 0, the sum that would need its share fails naming it, and the healthy rank 1, left
 * waiting in that sum, is told to stop: the job ends (no hang) with every map result right. */
static void test_three_ranks_one_dies(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, line[64];
    assert_int_equal(mpin(3, "PLACER_DIST_FAULT=die:2:2 PLACER_DIST_TIMEOUT=", "--enable-recovery",
                          "tests/dist_driver", &out, &err),
                     0);
    for (int i = 0; i < 7; i++) {
        snprintf(line, sizeof line, "map %d %d ", i, i * i);
        assert_non_null(strstr(out, line));
    }
    assert_non_null(strstr(out, "sum failed: rank 2 (pid "));
    assert_non_null(strstr(err, "placer: rank 2 (pid "));
    assert_null(strstr(err, "rank 0 (pid")); /* rank 1 did not take rank 2's death for rank 0's */
    free(out);
    free(err);
}

/* Rank 1 killed at its second item, under `mpirun --enable-recovery` (which lets the others
 * go on): rank 0 names it (rank, pid, host), runs its items, and every result is right; a sum
 * (whose lost share cannot be redone) and a broadcast from the dead rank fail saying why. */
static void test_dead_rank_work_redone(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, line[300];
    assert_int_equal(mpi2("PLACER_DIST_FAULT=die:1:2 PLACER_DIST_TIMEOUT=", "--enable-recovery",
                          "tests/dist_driver", &out, &err),
                     0);
    for (int i = 0; i < 7; i++) {
        snprintf(line, sizeof line, "map %d %d 0\n", i, i * i); /* all on rank 0 in the end */
        assert_non_null(strstr(out, line));
    }
    assert_non_null(strstr(out, "sum failed: rank 1 (pid ")); /* a gradient cannot be redone */
    assert_null(strstr(err, "placer: exit status"));          /* mpirun's 0 says nothing here */
    assert_non_null(strstr(out, "bcast 1 failed: rank 1 (pid "));
    snprintf(line, sizeof line, " on %s) died; its work runs on rank 0", host);
    assert_int_equal(count_of(err, line), 1);
    assert_non_null(strstr(err, "placer: rank 1 (pid "));
    free(out);
    free(err);
}

/* A rank that stops answering (alive, on this host) is lost after PLACER_DIST_TIMEOUT: its
 * work runs on rank 0 and the job ends with the whole answer. */
static void test_stalled_rank_work_redone(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, line[64];
    assert_int_equal(mpi2("PLACER_DIST_FAULT=stall:1:1 PLACER_DIST_TIMEOUT=1", "--enable-recovery",
                          "tests/dist_driver", &out, &err),
                     0);
    for (int i = 0; i < 7; i++) {
        snprintf(line, sizeof line, "map %d %d 0\n", i, i * i);
        assert_non_null(strstr(out, line));
    }
    assert_non_null(strstr(err, "stalled past PLACER_DIST_TIMEOUT; its work runs on rank 0"));
    assert_null(strstr(err, "placer: exit status"));
    free(out);
    free(err);
}

#define CMP_SLOW                                                                                   \
    "compare models/rnnlm.onnx --cluster examples/clusters/autodeep-4xk80.json "                   \
    "--algos moirai,heft --seed 1 --json"

/* Under plain mpirun a death ends the job: rank 1 killed at its first item while rank 0 is in
 * moirai; rank 0 names the dead rank with its host and writes nothing, or (had it finished
 * first) the whole one-process answer; never part of one. */
static void test_dead_rank_under_plain_mpirun(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, line[300];
    int rc = mpi2("PLACER_DIST_FAULT=die:1:1 PLACER_DIST_TIMEOUT=", "", "placer-mpi " CMP_SLOW,
                  &out, &err);
    assert_int_not_equal(rc, 0);
    snprintf(line, sizeof line, " on %s) died", host);
    assert_non_null(strstr(err, line));
    assert_non_null(strstr(err, "placer: rank 1 (pid "));
    if (out[0]) { /* rank 0 finished before mpirun ended it: the answer is whole */
        json_error_t e;
        json_t *j = json_loads(out, 0, &e);
        assert_non_null(j);
        assert_int_equal(json_array_size(json_object_get(j, "algorithms")), 2);
        json_decref(j);
    } else {
        assert_non_null(strstr(err, "mpirun is ending the job: no output written"));
    }
    free(out);
    free(err);
}

/* Bad input fails on every rank alike: the message is told once (by rank 0), with its status. */
static void test_bad_input_told_once(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err;
    int rc = mpi2("PLACER_DIST_FAULT= PLACER_DIST_TIMEOUT=", "",
                  "placer-mpi compare models/nope.onnx --cluster "
                  "examples/clusters/autodeep-4xk80.json",
                  &out, &err);
    assert_int_equal(rc, 2);
    assert_int_equal(count_of(err, "models/nope.onnx: cannot open"), 1);
    assert_string_equal(out, "");
    free(out);
    free(err);
}

/* A failure on one rank only (its host lacks the model): rank 0 does that rank's work, prints
 * the one-process answer, and tells the other rank's message, naming it. */
static void test_failure_on_one_rank(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    json_t *one = tu_run_json(CMP " 2>/dev/null");
    char *out, *err, env[700];
    snprintf(env, sizeof env,
             "PLACER_DIST_FAULT= PLACER_DIST_TIMEOUT= PLACER_MPI_BIN=%s/placer-mpi", build_dir);
    int rc = mpi2(env, "-x PLACER_MPI_BIN", "../tests/one_rank_lacks_model.sh " CMP, &out, &err);
    assert_int_equal(rc, 0);
    json_error_t e;
    json_t *two = json_loads(out, 0, &e);
    assert_non_null(two);
    json_t *a1 = json_object_get(one, "algorithms"), *a2 = json_object_get(two, "algorithms");
    assert_int_equal(json_array_size(a2), 5);
    for (size_t k = 0; k < 5; k++)
        assert_true(tu_num(json_array_get(a1, k), "makespan_s") ==
                    tu_num(json_array_get(a2, k), "makespan_s"));
    assert_non_null(strstr(err, "placer: rank 1 (pid "));
    assert_non_null(strstr(err, "failed with exit 2 (its work ran on rank 0)"));
    assert_non_null(strstr(err, "missing.onnx: cannot open"));
    json_decref(one);
    json_decref(two);
    free(out);
    free(err);
}

/* deploy over two ranks, rank 1 killed (its items: the workers' start, then trials 1, 3, ...). */
#define DEPLOY_X                                                                                   \
    "deploy models/rnnlm.onnx --catalog catalogs/autodeep-testbed.json --slo 10ms --algos heft "   \
    "--strategy exhaustive --json"

/* The files in dir other than keep (a temporary left by a write shows here). */
static int others_in(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, keep)) n++;
    if (d) closedir(d);
    return n;
}

static json_t *plan_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *p = json_load_file(path, 0, NULL);
    if (p) json_object_del(p, "search_s"); /* the one wall time in a plan */
    return p;
}

/* Under `mpirun --enable-recovery`, deploy finishes on rank 0: every configuration tried once,
 * the one-process choice and plan file, and the dead rank named. Rank 1 is killed at its 4th
 * item (the workers' start is its 1st), after it ran the answer (trial 4, 1080 x1): the plan
 * crossed to rank 0 in that round, so it outlives rank 1 (sent only at the end, it died with
 * it and deploy failed). */
static void test_deploy_survives_dead_rank(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char dir[256], args[1024], *out, *err, line[300];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-dist-deploy"), 0);
    snprintf(args, sizeof args, DEPLOY_X " -o %s/one.json 2>/dev/null", dir);
    json_t *one = tu_run_json(args);
    snprintf(args, sizeof args, "placer-mpi " DEPLOY_X " -o %s/two.json", dir);
    assert_int_equal(mpi2("PLACER_DIST_FAULT=die:1:4 PLACER_DIST_TIMEOUT=", "--enable-recovery",
                          args, &out, &err),
                     0);
    json_t *two = json_loads(out, 0, NULL);
    assert_non_null(two);
    assert_string_equal(json_string_value(json_object_get(one, "chosen")),
                        json_string_value(json_object_get(two, "chosen")));
    json_t *t1 = json_object_get(one, "trials"), *t2 = json_object_get(two, "trials");
    assert_int_equal(json_array_size(t2), json_array_size(t1));
    for (size_t i = 0; i < json_array_size(t1); i++) {
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(t1, i), "configuration")),
            json_string_value(json_object_get(json_array_get(t2, i), "configuration")));
        assert_true(tu_num(json_array_get(t1, i), "latency_s") ==
                    tu_num(json_array_get(t2, i), "latency_s"));
    }
    json_t *p1 = plan_file(dir, "one.json"), *p2 = plan_file(dir, "two.json");
    assert_non_null(p2);
    assert_true(json_equal(p1, p2));
    snprintf(line, sizeof line, " on %s) died; its work runs on rank 0", host);
    assert_non_null(strstr(err, line));
    assert_null(strstr(err, "placer: exit status"));
    json_decref(one), json_decref(two), json_decref(p1), json_decref(p2);
    free(out), free(err);
    tu_rmtree(dir);
}

/* Under plain mpirun the death ends the job: the plan file is absent (or, had rank 0 finished
 * first, the whole one-process plan), and no temporary is left beside it. */
static void test_deploy_dead_rank_no_partial_output(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char dir[256], args[1024], *out, *err, line[300];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-dist-deploy"), 0);
    snprintf(args, sizeof args, DEPLOY_X " -o %s/one.json 2>/dev/null", dir);
    json_decref(tu_run_json(args));
    snprintf(args, sizeof args, "placer-mpi " DEPLOY_X " -o %s/two.json", dir);
    int rc = mpi2("PLACER_DIST_FAULT=die:1:2 PLACER_DIST_TIMEOUT=", "", args, &out, &err);
    json_t *p2 = plan_file(dir, "two.json");
    if (p2) { /* rank 0 finished before mpirun ended it */
        json_t *p1 = plan_file(dir, "one.json");
        assert_true(json_equal(p1, p2));
        json_decref(p1);
        assert_int_equal(others_in(dir, "one.json"), 1);
    } else {
        assert_int_not_equal(rc, 0);
        assert_int_equal(others_in(dir, "one.json"), 0);
    }
    snprintf(line, sizeof line, " on %s) died", host);
    assert_non_null(strstr(err, line));
    json_decref(p2);
    free(out), free(err);
    tu_rmtree(dir);
}

/* train under --enable-recovery with rank 1 killed at its first item (in the HeteroG-like
 * pass, before the trees are merged): rank 0 grows rank 1's tree again with its seed and share,
 * so the answer is the fault-free run's: 10 iterations, and rank 1's tree's 19.18 ms (rank 0's
 * 5 iterations end at 27.66 ms on this instance and seed, checked with MCTS's selection of
 * issue 31: one process at --budget 5), the same strategy. Before, the lost tree was dropped:
 * 5 iterations and rank 0's best, with exit 0. Uniform trees (--prior uniform), those the
 * figures were checked on. */
#define TRAIN_DEAD                                                                                 \
    "placer-mpi train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json --batch 4 "    \
    "--budget 10 --seed 8 --placer none --prior uniform --json"
static void test_train_dead_rank_tree(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, *out1, *err1;
    assert_int_equal(mpi2("PLACER_DIST_FAULT= PLACER_DIST_TIMEOUT=", "--enable-recovery",
                          TRAIN_DEAD, &out1, &err1),
                     0);
    assert_int_equal(mpi2("PLACER_DIST_FAULT=die:1:1 PLACER_DIST_TIMEOUT=", "--enable-recovery",
                          TRAIN_DEAD, &out, &err),
                     0);
    json_t *j = json_loads(out, 0, NULL), *whole = json_loads(out1, 0, NULL);
    assert_non_null(j);
    assert_non_null(whole);
    assert_int_equal(tu_num(j, "mcts_iterations"), 10);
    assert_true(tu_num(j, "mcts_iteration_s") == tu_num(whole, "mcts_iteration_s"));
    assert_true(tu_num(j, "mcts_iteration_s") < 0.02);
    assert_true(tu_num(j, "iteration_s") == tu_num(whole, "iteration_s"));
    assert_true(json_equal(json_object_get(j, "strategy"), json_object_get(whole, "strategy")));
    assert_non_null(strstr(err, "died; its work runs on rank 0"));
    assert_null(strstr(err, "exit status"));
    json_decref(j), json_decref(whole);
    free(out), free(err), free(out1), free(err1);
}

/* Under --enable-recovery mpirun returns 0 even when placer fails (OpenMPI 4.1): rank 0 tells
 * the status on stderr instead, once. */
static void test_recovery_status_told(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err;
    mpi2("PLACER_DIST_FAULT= PLACER_DIST_TIMEOUT=", "--enable-recovery",
         "placer-mpi compare models/nope.onnx --cluster examples/clusters/autodeep-4xk80.json",
         &out, &err);
    assert_int_equal(count_of(err, "placer: exit status 2 (mpirun --enable-recovery"), 1);
    assert_int_equal(count_of(err, "models/nope.onnx: cannot open"), 1);
    free(out), free(err);
}

/* A peer that crashes (an abort after printing why) has its last messages told, not lost with
 * the memory its stderr was kept in; rank 0 names it and does its work. */
static void test_crash_text_kept(void **state)
{
    (void)state;
    if (!have_mpi()) skip();
    char *out, *err, line[64];
    assert_int_equal(mpi2("PLACER_DIST_FAULT=abort:1:2 PLACER_DIST_TIMEOUT=", "--enable-recovery",
                          "tests/dist_driver", &out, &err),
                     0);
    assert_non_null(strstr(err, "placer: rank 1 crashed; its last messages:\n"
                                "rank 1: injected fault: aborting at item 3"));
    assert_non_null(strstr(err, "died; its work runs on rank 0"));
    for (int i = 0; i < 7; i++) {
        snprintf(line, sizeof line, "map %d %d ", i, i * i);
        assert_non_null(strstr(out, line));
    }
    free(out), free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_one_process),
        cmocka_unit_test(test_compare_under_mpirun),
        cmocka_unit_test(test_primitives_under_mpirun),
        cmocka_unit_test(test_map_or_here_under_mpirun),
        cmocka_unit_test(test_dead_rank_work_redone),
        cmocka_unit_test(test_three_ranks_one_dies),
        cmocka_unit_test(test_stalled_rank_work_redone),
        cmocka_unit_test(test_crash_text_kept),
        cmocka_unit_test(test_dead_rank_under_plain_mpirun),
        cmocka_unit_test(test_bad_input_told_once),
        cmocka_unit_test(test_recovery_status_told),
        cmocka_unit_test(test_failure_on_one_rank),
        cmocka_unit_test(test_deploy_survives_dead_rank),
        cmocka_unit_test(test_train_dead_rank_tree),
        cmocka_unit_test(test_deploy_dead_rank_no_partial_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
