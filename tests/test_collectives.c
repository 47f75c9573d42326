/* test_collectives.c: measured collectives (docs/clusters.md, "Collectives"; docs/runtime.md,
 * "Measuring collectives"): the segmented fit on data with known breakpoints, the cluster
 * file's "collectives" field read and refused, pl_cluster_collective_s, and `placer profile
 * --collectives` end to end (when OpenMPI is installed) and with fake mpiruns that stall, die
 * or babble. */
#include "testutil.h"

#include "placer/cluster.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the fit ---- */

/* 21 sizes, 1 KiB to 1 GiB, timed by three lines that break at 64 KiB and 8 MiB. */
static double three_lines(double x)
{
    if (x < 65536) return 2e-6 + x / 4e9;
    if (x < 8388608) return 10e-6 + x / 8e9;
    return 500e-6 + x / 3e9;
}

static void sizes(double *x, double *t, int n, double (*f)(double))
{
    for (int i = 0; i < n; i++)
        x[i] = 1024.0 * (1 << i), t[i] = f(x[i]);
}

static void test_fit_recovers_breakpoints(void **state)
{
    (void)state;
    double x[21], t[21];
    sizes(x, t, 21, three_lines);
    pl_coll_curve cv;
    pl_err err = {""};
    double rms = pl_coll_fit(x, t, 21, 3, &cv, &err);
    assert_true(rms >= 0 && rms < 1e-9);
    assert_int_equal(cv.n, 3);
    const double from[3] = {0, 65536, 8388608}, a[3] = {2e-6, 10e-6, 500e-6},
                 b[3] = {1 / 4e9, 1 / 8e9, 1 / 3e9};
    for (int g = 0; g < 3; g++) {
        assert_close(cv.seg[g].from_bytes, from[g], 1e-12);
        assert_close(cv.seg[g].a_s, a[g], 1e-6);
        assert_close(cv.seg[g].b_s_per_byte, b[g], 1e-6);
    }
    assert_close(pl_coll_curve_s(&cv, 1e6), 10e-6 + 1e6 / 8e9, 1e-6);
    pl_coll_curve_free(&cv);
}

static double one_line(double x)
{
    return 30e-6 + x / 5e9;
}

/* Data on one line gets one segment: more would fit no better. */
static void test_fit_keeps_one_segment_for_a_line(void **state)
{
    (void)state;
    double x[12], t[12];
    sizes(x, t, 12, one_line);
    pl_coll_curve cv;
    pl_err err = {""};
    assert_true(pl_coll_fit(x, t, 12, 3, &cv, &err) >= 0);
    assert_int_equal(cv.n, 1);
    assert_close(cv.seg[0].a_s, 30e-6, 1e-6);
    assert_close(cv.seg[0].b_s_per_byte, 1 / 5e9, 1e-6);
    pl_coll_curve_free(&cv);
}

/* A falling time would give a negative slope: the fit keeps slopes at 0 or above. */
static void test_fit_slopes_never_negative(void **state)
{
    (void)state;
    double x[6] = {1024, 2048, 4096, 8192, 16384, 32768},
           t[6] = {6e-6, 5e-6, 4e-6, 3e-6, 2e-6, 1e-6};
    pl_coll_curve cv;
    pl_err err = {""};
    assert_true(pl_coll_fit(x, t, 6, 1, &cv, &err) >= 0);
    assert_int_equal(cv.n, 1);
    assert_true(cv.seg[0].b_s_per_byte == 0);
    assert_true(cv.seg[0].a_s > 1e-6 && cv.seg[0].a_s < 6e-6);
    pl_coll_curve_free(&cv);
    double bad[3] = {1024, 512, 2048};
    assert_true(pl_coll_fit(bad, t, 3, 3, &cv, &err) < 0);
    assert_contains(err.msg, "size 1 (512 bytes) is not positive and above the last");
}

/* ---- the cluster field ---- */

#define DEVICES                                                                                    \
    "\"format\": \"placer-cluster/1\", \"devices\": [{\"name\": \"g\", \"count\": 4, \"model\": "  \
    "\"V100\", \"host\": \"h\"}, {\"name\": \"x\", \"model\": \"V100\", \"host\": \"k\"}], "       \
    "\"switches\": [\"s\"], \"topology_links\": [{\"a\": \"g0\", \"b\": \"s\", "                   \
    "\"bandwidth_Bps\": "                                                                          \
    "\"10 GB/s\"}, {\"a\": \"g1\", \"b\": \"s\", \"bandwidth_Bps\": \"10 GB/s\"}, {\"a\": "        \
    "\"g2\", "                                                                                     \
    "\"b\": \"s\", \"bandwidth_Bps\": \"10 GB/s\"}, {\"a\": \"g3\", \"b\": \"s\", "                \
    "\"bandwidth_Bps\": \"10 GB/s\"}, {\"a\": \"x\", \"b\": \"s\", \"bandwidth_Bps\": \"10 "       \
    "GB/s\"}]"

static pl_cluster *load(const char *collectives, pl_err *err)
{
    char text[8192];
    snprintf(text, sizeof text, "{" DEVICES "%s%s}", collectives ? ", \"collectives\": " : "",
             collectives ? collectives : "");
    return pl_cluster_load_buffer(text, strlen(text), "c.json", err);
}

static void test_cluster_collectives_lookup(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_cluster *c =
        load("[{\"allreduce\": [{\"from_bytes\": 0, \"a_s\": 1e-5, \"b_s_per_byte\": 1e-9},"
             "                  {\"from_bytes\": \"1 MB\", \"a_s\": \"100 us\", \"b_s_per_byte\": "
             "5e-10}],"
             "  \"p2p\": [{\"from_bytes\": 0, \"a_s\": 2e-6, \"b_s_per_byte\": 1e-10}]},"
             " {\"devices\": 4, \"allreduce\": [{\"from_bytes\": 0, \"a_s\": 3e-5, "
             "\"b_s_per_byte\": 2e-9}]},"
             " {\"host\": \"h\", \"devices\": 2, \"broadcast\": [{\"from_bytes\": 0, \"a_s\": 1e-6,"
             "  \"b_s_per_byte\": 1e-11}]}]",
             &err);
    if (!c) fail_msg("%s", err.msg);
    assert_int_equal(c->n_colls, 3);
    /* any count: the first scope; segment 1 from 1 MB on */
    assert_close(pl_cluster_collective_s(c, PL_COLL_ALLREDUCE, 2, 1000), 1e-5 + 1e-6, 1e-12);
    assert_close(pl_cluster_collective_s(c, PL_COLL_ALLREDUCE, 2, 999999), 1e-5 + 999999e-9, 1e-12);
    assert_close(pl_cluster_collective_s(c, PL_COLL_ALLREDUCE, 2, 2e6), 1e-4 + 1e-3, 1e-12);
    /* measured with 4 devices: that scope */
    assert_close(pl_cluster_collective_s(c, PL_COLL_ALLREDUCE, 4, 1e3), 3e-5 + 2e-6, 1e-12);
    /* p2p ignores the count */
    assert_close(pl_cluster_collective_s(c, PL_COLL_P2P, 8, 1e4), 2e-6 + 1e-6, 1e-12);
    /* the broadcast is given for host h only */
    assert_true(pl_cluster_collective_s(c, PL_COLL_BROADCAST, 2, 1e4) == -1);
    int on_h[2] = {0, 1}, mixed[2] = {0, 4};
    assert_close(pl_cluster_collective_on_s(c, PL_COLL_BROADCAST, on_h, 2, 1e4), 1e-6 + 1e-7,
                 1e-12);
    assert_true(pl_cluster_collective_on_s(c, PL_COLL_BROADCAST, mixed, 2, 1e4) == -1);
    /* host h has no allreduce of its own: the cluster's */
    assert_close(pl_cluster_collective_on_s(c, PL_COLL_ALLREDUCE, on_h, 2, 1e3), 1e-5 + 1e-6,
                 1e-12);
    pl_cluster_free(c);
    c = load(NULL, &err);
    assert_non_null(c);
    assert_true(pl_cluster_collective_s(c, PL_COLL_ALLREDUCE, 2, 1e3) == -1);
    pl_cluster_free(c);
}

static void refused(const char *collectives, const char *needle)
{
    pl_err err = {""};
    pl_cluster *c = load(collectives, &err);
    if (c) fail_msg("accepted: %s", collectives);
    assert_contains(err.msg, needle);
}

#define SEG(from, a, b) "{\"from_bytes\": " from ", \"a_s\": " a ", \"b_s_per_byte\": " b "}"

static void test_cluster_collectives_refused(void **state)
{
    (void)state;
    refused("[{\"allreduce\": [" SEG("0", "1e-5", "-1e-9") "]}]",
            "c.json: $.collectives[0].allreduce[0].b_s_per_byte: a slope of -1e-09 s per byte");
    refused("[{\"allreduce\": [" SEG("1000", "1e-5", "1e-9") ", " SEG("10", "1e-5", "1e-9") "]}]",
            "$.collectives[0].allreduce[1].from_bytes: segments must be sorted by increasing "
            "from_bytes: 10 comes after 1000");
    refused("[{\"allgather\": [" SEG("0", "1e-5", "1e-9") "]}]",
            "$.collectives[0].allgather: unknown field");
    refused("[{\"allreduce\": [" SEG("0", "-1e-5", "1e-9") "]}]",
            "$.collectives[0].allreduce[0].a_s");
    refused("[{\"allreduce\": [" SEG("0", "0", "0") "]}]", "the segment gives no time");
    refused("[{\"allreduce\": []}]", "$.collectives[0].allreduce: 0 segments");
    refused("[{\"host\": \"nowhere\", \"p2p\": [" SEG("0", "1e-5", "1e-9") "]}]",
            "$.collectives[0].host: no device has host \"nowhere\"");
    refused("[{\"devices\": 1, \"p2p\": [" SEG("0", "1e-5", "1e-9") "]}]",
            "$.collectives[0].devices: 1 devices");
    refused("[{\"description\": \"empty\"}]", "$.collectives[0]: no curve");
    refused(
        "[{\"p2p\": [" SEG("0", "1e-5", "1e-9") "]}, {\"p2p\": [" SEG("0", "1e-5", "1e-9") "]}]",
        "$.collectives[1]: the same host and device count as $.collectives[0]");
    refused("[{\"file\": \"c2.json\", \"p2p\": [" SEG("0", "1e-5", "1e-9") "]}]",
            "give \"file\" or the curves inline, not both");
    refused("[{\"file\": \"/nonexistent/coll.json\"}]",
            "$.collectives[0].file: cannot use the collectives file: /nonexistent/coll.json");
    refused("{\"p2p\": []}", "$.collectives");
}

/* "file": a placer-collectives/1 file beside the cluster file, and one that is malformed. */
static void test_cluster_collectives_file(void **state)
{
    (void)state;
    char dir[256], path[512], cpath[512];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-coll"), 0);
    snprintf(path, sizeof path, "%s/coll.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"format\": \"placer-collectives/1\", \"devices\": 2,"
          " \"allreduce\": [" SEG("0", "4e-6", "2e-10") "], \"measurements\": {}}",
          f);
    fclose(f);
    snprintf(cpath, sizeof cpath, "%s/c.json", dir);
    f = fopen(cpath, "w");
    fputs("{" DEVICES ", \"collectives\": [{\"host\": \"h\", \"file\": \"coll.json\"}]}", f);
    fclose(f);
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(cpath, &err);
    if (!c) fail_msg("%s", err.msg);
    int on_h[2] = {1, 2};
    assert_close(pl_cluster_collective_on_s(c, PL_COLL_ALLREDUCE, on_h, 2, 1e6), 4e-6 + 2e-4,
                 1e-12);
    /* measured with 2 devices: not for 4 */
    int four[4] = {0, 1, 2, 3};
    assert_true(pl_cluster_collective_on_s(c, PL_COLL_ALLREDUCE, four, 4, 1e6) == -1);
    pl_cluster_free(c);
    f = fopen(path, "w");
    fputs("{\"format\": \"placer-collectives/1\", \"p2p\": [" SEG("0", "4e-6", "-2e-10") "]}", f);
    fclose(f);
    assert_null(pl_cluster_load(cpath, &err));
    assert_contains(err.msg, "$.collectives[0].file: cannot use the collectives file: ");
    assert_contains(err.msg, "coll.json: $.p2p[0].b_s_per_byte: a slope of");
    tu_rmtree(dir);
}

/* The measurement shipped in examples/ (docs/train.md) loads, and its curves give back the
 * medians it holds at 1 KiB and 1 GiB within the fit's error there. */
static void test_shipped_measurement(void **state)
{
    (void)state;
    pl_coll_scope s;
    pl_err err = {""};
    if (pl_coll_load("examples/collectives/local-cpu-np2.json", &s, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(s.devices, 2);
    assert_close(pl_coll_curve_s(&s.curve[PL_COLL_ALLREDUCE], 1073741824.0), 0.5489, 0.1);
    assert_close(pl_coll_curve_s(&s.curve[PL_COLL_P2P], 1024), 0.30e-6, 0.25);
    pl_coll_scope_free(&s);
}

/* ---- the command ---- */

static bool have_mpi(void)
{
    return system("command -v mpirun >/dev/null 2>&1") == 0 &&
           access("build/placer-collbench", X_OK) == 0;
}

static void test_cli_end_to_end(void **state)
{
    (void)state;
    if (!have_mpi()) {
        print_message("skipped: no mpirun or build/placer-collbench (apt-get install "
                      "openmpi-bin libopenmpi-dev, then make)\n");
        skip();
    }
    char dir[256], cmd[1024], *out = NULL;
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-coll"), 0);
    snprintf(cmd, sizeof cmd,
             "profile --collectives --max-bytes 64KiB --repeat 3 -o %s/c.json "
             "--cluster examples/clusters/local-cpu-percore.json",
             dir);
    int rc = tu_run(cmd, &out);
    if (rc != 0) fail_msg("exit %d: %s", rc, out);
    assert_contains(out, "link model us");
    /* local-cpu-percore.json: 10 GB/s, 0.3 ms; 64 KiB ring AllReduce of 2:
     * 2 (0.3 ms + 32768 B / 10 GB/s) = 606.55 us, broadcast and p2p 0.3 ms + 6.5536 us
     * = 306.55 us */
    assert_contains(out, "606.55");
    assert_contains(out, "306.55");
    assert_contains(out, "p2p         64.00 KiB");
    free(out);
    pl_coll_scope s;
    pl_err err = {""};
    char path[512];
    snprintf(path, sizeof path, "%s/c.json", dir);
    if (pl_coll_load(path, &s, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(s.devices, 2);
    for (int k = 0; k < PL_COLL_COUNT; k++) {
        assert_true(s.curve[k].n >= 1 && s.curve[k].n <= 3);
        double t = pl_coll_curve_s(&s.curve[k], 65536);
        assert_true(t > 0 && t < 1);
    }
    pl_coll_scope_free(&s);
    tu_rmtree(dir);
}

/* A fake mpirun (PLACER_MPIRUN): prints `lines`, starts a process of its own group that would
 * outlive it (its pid into DIR/child), then does `then`. */
static void fake(const char *dir, const char *lines, const char *then)
{
    char path[512];
    snprintf(path, sizeof path, "%s/mpirun", dir);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "#!/bin/sh\n"
            "setsid sleep 300 </dev/null >/dev/null 2>&1 &\n"
            "echo $! > %s/child\n"
            "printf '%%s\\n' %s\n"
            "%s\n",
            dir, lines, then);
    fclose(f);
    chmod(path, 0755);
    setenv("PLACER_MPIRUN", path, 1);
    setenv("PLACER_COLLBENCH", "/bin/true", 1);
}

/* The process whose pid is in DIR/child has ended (gone, or a zombie nobody reaped). */
static void assert_child_gone(const char *dir)
{
    char path[512], stat[64], buf[512] = "";
    snprintf(path, sizeof path, "%s/child", dir);
    FILE *f = fopen(path, "r");
    int pid = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    snprintf(stat, sizeof stat, "/proc/%d/stat", pid);
    f = fopen(stat, "r");
    if (!f) return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *r = strrchr(buf, ')');
    if (r && r[2] != 'Z') {
        kill(pid, SIGKILL);
        fail_msg("process %d that mpirun started is still there: %s", pid, buf);
    }
}

static const char *header = "'{\"np\":2,\"repeat\":3}' '{\"op\":\"allreduce\",\"bytes\":1024,"
                            "\"s\":1e-6,\"reps\":3}'";

static void test_cli_stalled_mpirun(void **state)
{
    (void)state;
    char dir[256], *out = NULL;
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-coll"), 0);
    fake(dir, header, "kill -STOP $$");
    int rc = tu_run("profile --collectives --deadline 1s --max-bytes 64KiB", &out);
    assert_int_equal(rc, 2);
    assert_contains(out, "placer profile: mpirun (pid ");
    assert_contains(out, "gave no result within the deadline of 1 s after allreduce of 1.00 KiB");
    assert_child_gone(dir);
    free(out);
    unsetenv("PLACER_MPIRUN"), unsetenv("PLACER_COLLBENCH");
    tu_rmtree(dir);
}

static void test_cli_killed_mpirun(void **state)
{
    (void)state;
    char dir[256], *out = NULL;
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-coll"), 0);
    /* it dies a second in: what it started was seen while it ran */
    fake(dir, header, "echo 'ORTE has lost communication' >&2; sleep 1; kill -KILL $$");
    int rc = tu_run("profile --collectives --max-bytes 64KiB", &out);
    assert_int_equal(rc, 2);
    assert_contains(out, "stopped before the benchmark finished after allreduce of 1.00 KiB; it "
                         "died (signal 9)");
    assert_contains(out, "its stderr: ORTE has lost communication");
    assert_child_gone(dir);
    free(out);
    fake(dir, "'MPI says hello'", "sleep 300");
    rc = tu_run("profile --collectives --max-bytes 64KiB", &out);
    assert_int_equal(rc, 2);
    assert_contains(out, "output line \"MPI says hello\" is not the benchmark's");
    assert_child_gone(dir);
    free(out);
    unsetenv("PLACER_MPIRUN"), unsetenv("PLACER_COLLBENCH");
    tu_rmtree(dir);
}

static void test_cli_refusals(void **state)
{
    (void)state;
    setenv("PLACER_MPIRUN", "/nonexistent/mpirun", 1);
    tu_expect_refusal("profile --collectives", "cannot find /nonexistent/mpirun: install OpenMPI");
    unsetenv("PLACER_MPIRUN");
    tu_expect_refusal("profile --collectives --max-bytes 1KiB", "--max-bytes: '1KiB' is outside");
    tu_expect_refusal("profile --collectives --np 1", "--np");
    tu_expect_refusal("profile --collectives --bogus", "unknown option '--bogus'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_breakpoints),
        cmocka_unit_test(test_fit_keeps_one_segment_for_a_line),
        cmocka_unit_test(test_fit_slopes_never_negative),
        cmocka_unit_test(test_cluster_collectives_lookup),
        cmocka_unit_test(test_cluster_collectives_refused),
        cmocka_unit_test(test_cluster_collectives_file),
        cmocka_unit_test(test_shipped_measurement),
        cmocka_unit_test(test_cli_end_to_end),
        cmocka_unit_test(test_cli_stalled_mpirun),
        cmocka_unit_test(test_cli_killed_mpirun),
        cmocka_unit_test(test_cli_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
