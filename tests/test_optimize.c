/* test_optimize.c: TASO's search over the rewrite rules (pl_rw_search, docs/rewrite.md
 * "Search") on hand-made graphs where the greedy order loses, alpha's pruning, determinism; and
 * `placer optimize` on a zoo model and its refusals. */
#include "rw_models.h"

/* the zoo model the command is tried on: shape_fold removes 32 of its 49 ops in 0.1 s (bert_base:
 * the cost model prices merge_matmul + split_add_merge above the input, docs/rewrite.md) */
#define ZOO_MODEL "models/rnnlm.onnx"
#include "placer/cluster.h"
#include "placer/cost.h"

#include <jansson.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static pl_cluster *cluster(void)
{
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load("examples/clusters/local-cpu-percore.json", &err);
    if (!c) fail_msg("%s", err.msg);
    return c;
}

/* Add(Add(MatMul(a, B1), MatMul(a, B2)), bias), a 2-D: greedy (matmul_add_gemm before
 * matmul_distrib in the table) makes Gemm(a, B1, MatMul(a, B2)) → Add, 3 ops, and nothing
 * else applies; the best is matmul_distrib (MatMul(a, B1 + B2) → Add). matmul_add_gemm on
 * what it made, Gemm(a, B1 + B2, bias), is the same kernel as onnxruntime runs it, at the same
 * price: the answer is the one with fewer rewrites. */
static pl_rw_model *two_paths(void)
{
    Onnx__ModelProto *m = model();
    input(m, "a", "64,256");
    init_f(m, "B1", "256,256", 0.1, 0.05, false);
    init_f(m, "B2", "256,256", -0.2, 0.03, false);
    init_f(m, "bias", "256", 0.5, 0.01, false);
    node(m, "MatMul", "mm1", "a,B1", "p1");
    node(m, "MatMul", "mm2", "a,B2", "p2");
    node(m, "Add", "add", "p1,p2", "s");
    node(m, "Add", "add_bias", "s,bias", "y");
    output(m, "y", "");
    return load(m);
}

static void search(const pl_rw_model *m, double alpha, pl_rw_search_result *r)
{
    pl_cluster *c = cluster();
    pl_err err = {""};
    pl_rw_search_opts o = {.c = c, .alpha = alpha, .max_expand = 1000};
    if (pl_rw_search(m, &o, r, &err) < 0) fail_msg("%s", err.msg);
    pl_cluster_free(c);
}

static double price_with(const pl_rw_model *m, const pl_cost_params *params)
{
    pl_err err = {""};
    pl_cluster *c = cluster();
    pl_graph *g = pl_rw_graph(m, NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    double p = pl_rw_price(g, c, params, &err);
    assert_true(p > 0);
    pl_graph_free(g), pl_cluster_free(c);
    return p;
}

static double price(const pl_rw_model *m)
{
    return price_with(m, NULL);
}

/* "rule@anchor;..." of a log */
static void log_str(const pl_rw_search_result *r, char *buf, size_t n)
{
    const pl_rw_rule *rules = pl_rw_rules(&(int){0});
    buf[0] = 0;
    for (int i = 0; i < r->n_log; i++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s@%s", i ? ";" : "",
                 rules[r->log[i].rule].name, r->log[i].nodes[0]);
}

static void test_search_beats_greedy(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_rw_model *g = two_paths();
    assert_true(pl_rw_greedy(&g, NULL, 0, NULL, NULL, NULL, &err) >= 0);
    expect_ops(g, "MatMul,Gemm,Add"); /* greedy's dead end */
    pl_rw_model *m = two_paths();
    pl_rw_search_result r;
    search(m, 1.05, &r);
    expect_ops(r.best, "MatMul,Add");
    char got[512];
    log_str(&r, got, sizeof got);
    assert_string_equal(got, "matmul_distrib@add");
    /* the Gemm it leaves out: made (from the MatMul matmul_distrib named after mm1; mm1_rw0
     * is its new weight), and no cheaper */
    pl_rw_model *gemm = apply_one(pl_rw_copy(r.best), "matmul_add_gemm");
    expect_ops(gemm, "Gemm");
    assert_close(price(gemm), r.best_cost, 1e-12);
    pl_rw_free(gemm);
    assert_true(r.best_cost < price(g));
    assert_true(r.best_cost < r.cost0);
    assert_true(fabs(r.best_cost - price(r.best)) <= 1e-12 * r.best_cost);
    /* the log replays on a fresh copy to the same model */
    pl_rw_model *again = two_paths();
    if (pl_rw_replay(&again, NULL, r.log, r.n_log, &err) < 0) fail_msg("%s", err.msg);
    size_t la, lb;
    void *a = pl_rw_pack(again, &la), *b = pl_rw_pack(r.best, &lb);
    assert_true(la == lb && !memcmp(a, b, la));
    free(a), free(b);
    pl_rw_free(again), pl_rw_free(g), pl_rw_free(m);
    pl_rw_search_result_free(&r);
}

/* Two MatMuls of a 3-D input, each + its own bias: merge_matmul (MatMul → Split → Add, Add)
 * costs more than the input (a Split is added; split_add_merge after it, MatMul → Add → Split,
 * still does). alpha just below that child's ratio to the input drops it unexpanded; just above
 * keeps it, and its own child (split_add_merge) is made. */
static pl_rw_model *merge_path(void)
{
    Onnx__ModelProto *m = model();
    input(m, "a", "8,64,256");
    init_f(m, "B1", "256,256", 0.1, 0.05, false);
    init_f(m, "B2", "256,256", -0.2, 0.03, false);
    init_f(m, "b1", "256", 0.5, 0.01, false);
    init_f(m, "b2", "256", 0.2, 0.01, false);
    node(m, "MatMul", "mm1", "a,B1", "p1");
    node(m, "MatMul", "mm2", "a,B2", "p2");
    node(m, "Add", "add1", "p1,b1", "y1");
    node(m, "Add", "add2", "p2,b2", "y2");
    output(m, "y1", "");
    output(m, "y2", "");
    return load(m);
}

/* Three 32 x 64 by 64 x 64 projections of one input (an attention's Q, K, V at d = 64), merged
 * into one 32 x 64 by 64 x 192 MatMul and a Split. On local-cpu-percore.json's core (110 GFLOP/s,
 * 74 GB/s, 0.2 us launch; dense 0.6, memory 0.7):
 *   the plain roofline: each 262,144 FLOPs / 66e9 = 3.972 us (+ 0.2), the merge 786,432 / 66e9
 *     = 11.916 us (+ 0.2): the MatMuls tie, and the Split's copy (49,152 B / 51.8e9 = 0.949 us
 *     + 0.2) makes the merge dearer: not taken;
 *   with the size term at 1.72e5 FLOPs (this core's fit, docs/cost.md): each 6.579 us, the merge
 *     14.519 us (a GEMM of 262,144 FLOPs reaches 0.60 of the class's efficiency, one of 786,432
 *     0.82): 20.34 us against 15.87, so the search takes it. */
static pl_rw_model *qkv_small(void)
{
    Onnx__ModelProto *m = model();
    input(m, "x", "1,32,64");
    const char *w[] = {"Wq", "Wk", "Wv"}, *mm[] = {"q", "k", "v"}, *y[] = {"yq", "yk", "yv"};
    for (int i = 0; i < 3; i++) {
        init_f(m, w[i], "64,64", 0.1 * i, 0.01, false);
        char in[16];
        snprintf(in, sizeof in, "x,%s", w[i]);
        node(m, "MatMul", mm[i], in, y[i]);
        output(m, y[i], "");
    }
    return load(m);
}

static void test_merge_priced_by_size(void **state)
{
    (void)state;
    pl_rw_model *m = qkv_small(), *merged = apply_one(qkv_small(), "merge_matmul");
    expect_ops(merged, "MatMul,Split");
    pl_cost_params sized;
    pl_cost_params_default(&sized);
    sized.dense_half_flops = 1.72e5;
    double plain0 = price(m), plain1 = price(merged);
    double sized0 = price_with(m, &sized), sized1 = price_with(merged, &sized);
    assert_close(plain0, 3 * (262144 / 66e9 + 0.2e-6), 1e-3);
    assert_close(plain1, 786432 / 66e9 + 0.2e-6 + 49152 / 51.8e9 + 0.2e-6, 1e-2);
    assert_true(plain1 >= plain0); /* a tie on the MatMuls, and the Split */
    assert_close(sized0, 3 * (262144 / (110e9 * 0.6 * 262144 / (262144 + 1.72e5)) + 0.2e-6), 1e-3);
    assert_true(sized1 < 0.8 * sized0);
    pl_cluster *c = cluster();
    pl_err err = {""};
    pl_rw_search_result r;
    pl_rw_search_opts o = {.c = c, .params = &sized, .alpha = 1.05};
    if (pl_rw_search(m, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    char got[512];
    log_str(&r, got, sizeof got);
    assert_string_equal(got, "merge_matmul@q");
    pl_rw_search_result_free(&r);
    o.params = NULL; /* the plain roofline keeps the input */
    if (pl_rw_search(m, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(r.n_log, 0);
    pl_rw_search_result_free(&r);
    pl_cluster_free(c);
    pl_rw_free(m), pl_rw_free(merged);
}

/* rnnlm_unrolled's product, 20 x 650 by 650 x 2600, + its bias: onnxruntime's MatMulAddFusion
 * runs it as a Gemm, so MatMul + Add and Gemm are priced alike to the rounding (the Gemm was
 * 1.9 us cheaper here, 7.2 under this machine's calibration: the 52,000 element-wise FLOPs of
 * the bias it did not count), and the search keeps
 * the input: rnnlm_unrolled with its 140 such sites made Gemms ran 14 % slower under
 * onnxruntime (docs/rewrite.md, "Search"). Greedy, which ignores prices, still makes the Gemm. */
static pl_rw_model *matmul_bias(void)
{
    return matmul_add(false, "20,650", "650,2600", "2600");
}

static void test_plateau_keeps_input(void **state)
{
    (void)state;
    pl_rw_model *m = matmul_bias(), *gemm = apply_one(matmul_bias(), "matmul_add_gemm");
    expect_ops(gemm, "Gemm");
    double p0 = price(m), p1 = price(gemm);
    printf("  MatMul + Add %.6f us, Gemm %.6f us\n", p0 * 1e6, p1 * 1e6);
    assert_close(p1, p0, 1e-12);
    pl_rw_search_result r;
    search(m, 1.05, &r);
    assert_int_equal(r.n_log, 0);
    expect_ops(r.best, "MatMul,Add");
    assert_true(r.generated >= 1); /* the Gemm was made and priced, not missed */
    pl_rw_search_result_free(&r);
    pl_err err = {""};
    assert_true(pl_rw_greedy(&m, NULL, 0, NULL, NULL, NULL, &err) >= 0);
    expect_ops(m, "Gemm");
    pl_rw_free(m), pl_rw_free(gemm);
}

static void test_alpha_prunes(void **state)
{
    (void)state;
    pl_rw_model *m = merge_path();
    double c0 = price(m);
    pl_rw_model *mid = apply_one(merge_path(), "merge_matmul");
    double c1 = price(mid);
    printf("  costs: input %.6g ms, after merge_matmul %.6g ms\n", c0 * 1e3, c1 * 1e3);
    assert_true(c1 > c0); /* the graph this test needs */
    double ratio = c1 / c0;
    pl_rw_search_result r;
    search(m, ratio * 0.999, &r); /* c1 > alpha x c0: dropped */
    assert_int_equal(r.expanded, 1);
    assert_int_equal(r.generated, 1);
    assert_int_equal(r.pruned, 1);
    assert_int_equal(r.n_log, 0);
    assert_true(r.best_cost == c0);
    pl_rw_search_result_free(&r);
    search(m, ratio * 1.001, &r); /* kept and expanded: split_add_merge tried on it */
    assert_int_equal(r.pruned, 0);
    assert_true(r.expanded >= 2);
    assert_true(r.generated >= 2);
    assert_int_equal(r.n_log, 0); /* nothing beat the input */
    pl_rw_search_result_free(&r);
    pl_rw_free(m), pl_rw_free(mid);
}

/* Two independent Add chains with constants: add_const_assoc applies at each, in either order. */
static pl_rw_model *two_chains(void)
{
    Onnx__ModelProto *m = model();
    input(m, "x", "64,256");
    input(m, "z", "64,256");
    init_f(m, "c1", "256", 0.1, 0.05, false);
    init_f(m, "c2", "256", -0.2, 0.03, false);
    init_f(m, "c3", "256", 0.5, 0.01, false);
    init_f(m, "c4", "256", 0.2, 0.01, false);
    node(m, "Add", "a1", "x,c1", "x1");
    node(m, "Add", "a2", "x1,c2", "y");
    node(m, "Add", "a3", "z,c3", "z1");
    node(m, "Add", "a4", "z1,c4", "w");
    output(m, "y", "");
    output(m, "w", "");
    return load(m);
}

/* The same input gives the same log, best and counts; the two orders of the two rewrites are
 * one graph, made once. */
static void test_deterministic(void **state)
{
    (void)state;
    pl_rw_model *m = two_chains();
    pl_rw_search_result a, b;
    search(m, 2.0, &a); /* 3 Adds cost < 2 x 2 Adds: the second child is expanded too */
    search(m, 2.0, &b);
    char la[512], lb[512];
    log_str(&a, la, sizeof la), log_str(&b, lb, sizeof lb);
    assert_string_equal(la, lb);
    assert_int_equal(a.expanded, b.expanded);
    assert_int_equal(a.generated, b.generated);
    assert_int_equal(a.dup, b.dup);
    assert_true(a.best_cost == b.best_cost);
    expect_ops(a.best, "Add,Add");
    assert_int_equal(a.n_log, 2);
    /* root: 2 children; each: 1 child, the same graph */
    assert_int_equal(a.generated, 4);
    assert_int_equal(a.dup, 1);
    pl_rw_search_result_free(&a), pl_rw_search_result_free(&b);
    pl_rw_free(m);
}

static void test_bad_alpha(void **state)
{
    (void)state;
    pl_rw_model *m = merge_path();
    pl_cluster *c = cluster();
    pl_err err = {""};
    pl_rw_search_result r;
    assert_int_equal(pl_rw_search(m, &(pl_rw_search_opts){.c = c, .alpha = 0.5}, &r, &err), -1);
    assert_non_null(strstr(err.msg, "alpha"));
    assert_null(r.best);
    pl_cluster_free(c), pl_rw_free(m);
}

/* ---- the command ---- */

static void test_cli_zoo(void **state)
{
    (void)state;
    char dir[256], cmd[1024], out[300];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "optimize"), 0);
    snprintf(out, sizeof out, "%s/opt.onnx", dir);
    snprintf(cmd, sizeof cmd, "optimize " ZOO_MODEL " -o %s --verify --json 2>/dev/null", out);
    json_t *j = tu_run_json(cmd);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "placer-optimize/1");
    double before = tu_num(j, "ops_before"), after = tu_num(j, "ops_after");
    double p0 = tu_num(j, "predicted_before_s"), p1 = tu_num(j, "predicted_after_s");
    double rel = tu_num(json_object_get(j, "verify"), "max_rel");
    printf("  %s: %g -> %g ops, %.4g -> %.4g ms, verify %.3g\n", ZOO_MODEL, before, after, p0 * 1e3,
           p1 * 1e3, rel);
    assert_true(after < before);
    assert_true(p1 <= p0);
    assert_true(rel >= 0 && rel <= 1e-5);
    assert_true(json_array_size(json_object_get(j, "rewrites")) > 0);
    pl_graph *g = tu_load(out); /* loads back through the ordinary reader */
    assert_true(g->n_ops > 0);
    pl_graph_free(g);
    json_decref(j);
    tu_rmtree(dir);
}

static void test_cli_refusals(void **state)
{
    (void)state;
    char dir[256], args[1024];
    assert_int_equal(tu_tmpdir_begin(dir, sizeof dir, "optimize"), 0);
    tu_expect_refusal("optimize models/gcn_cora.onnx -o x.onnx --alpha 0.9", "--alpha: '0.9'");
    tu_expect_refusal("optimize models/gcn_cora.onnx -o x.onnx --alpha abc", "--alpha: 'abc'");
    tu_expect_refusal("optimize models/no_such.onnx -o x.onnx", "no_such.onnx");
    tu_expect_refusal("optimize models/gcn_cora.onnx", "-o OUT.onnx");
    /* a "folder" that is a file cannot be written, not even by root: the error names the
     * output and nothing is left beside it */
    char ro[300];
    snprintf(ro, sizeof ro, "%s/ro", dir);
    FILE *f = fopen(ro, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(args, sizeof args, "optimize models/gcn_cora.onnx -o %s/out.onnx", ro);
    tu_expect_refusal(args, "out.onnx");
    assert_int_equal(unlink(ro), 0);
    snprintf(args, sizeof args, "optimize models/gcn_cora.onnx -o %s/missing/out.onnx", dir);
    tu_expect_refusal(args, "missing/out.onnx");
    struct stat st;
    char miss[300];
    snprintf(miss, sizeof miss, "%s/missing", dir);
    assert_int_equal(stat(miss, &st), -1);
    tu_tmpdir_end(dir);
}

/* A temporary folder (dir) holding the model m as in = DIR/NAME, with out = DIR/opt.onnx. */
static void model_file(Onnx__ModelProto *m, const char *name, char *dir, char *in, char *out)
{
    assert_int_equal(tu_mkdtemp(dir, 256, "optimize"), 0);
    snprintf(in, 300, "%s/%s", dir, name);
    snprintf(out, 300, "%s/opt.onnx", dir);
    pl_rw_model *r = load(m);
    pl_err err = {""};
    if (pl_rw_save(r, in, &err) < 0) fail_msg("%s", err.msg);
    pl_rw_free(r);
}

/* A model no rule has a site in (one Relu) is answered at once: the file is the model, exit
 * 0, and the cost model was never set up: no calibration note (PLACER_CALIBRATION=off prints
 * one whenever the verb gets to pricing; calibrating took 24 s before this answer). */
static void test_cli_nothing_to_rewrite(void **state)
{
    (void)state;
    char dir[256], in[300], out[300], args[800];
    Onnx__ModelProto *m = model();
    input(m, "x", "64,256");
    node(m, "Relu", "relu", "x", "y");
    output(m, "y", "");
    model_file(m, "relu.onnx", dir, in, out);
    pl_err err = {""};
    setenv("PLACER_CALIBRATION", "off", 1);
    char *o = NULL;
    snprintf(args, sizeof args, "optimize %s -o %s", in, out);
    assert_int_equal(tu_run(args, &o), 0);
    assert_contains(o, "rewrites   0: no rule has a site in the model");
    assert_null(strstr(o, "uncalibrated"));
    free(o);
    snprintf(args, sizeof args, "optimize %s -o %s --json 2>/dev/null", in, out);
    json_t *j = tu_run_json(args);
    assert_true(json_is_true(json_object_get(j, "nothing_to_rewrite")));
    assert_int_equal(tu_num(j, "ops_after"), 1);
    json_decref(j);
    pl_rw_model *back = pl_rw_load(out, &err); /* the model, as it is */
    if (!back) fail_msg("%s", err.msg);
    assert_int_equal(pl_rw_nodes(back), 1);
    pl_rw_free(back);
    snprintf(args, sizeof args, "optimize %s -o %s --cluster /nonexistent.json", in, out);
    tu_expect_refusal(args, "/nonexistent.json"); /* still checked, only not calibrated */
    tu_rmtree(dir);
}

/* --verify catches a rewrite that is exact algebra but not exact in float32: (x + 1e8) - 1e8
 * rounds x to a multiple of 8 (the spacing of float32 near 1e8), add_const_assoc's x + 0 does
 * not; the difference is far above 1e-5, so optimize exits 2 naming the output and writes
 * nothing. */
static void test_cli_verify_mismatch(void **state)
{
    (void)state;
    tu_require_ort();
    char dir[256], in[300], out[300], args[800];
    Onnx__ModelProto *m = model();
    input(m, "x", "64,256");
    init_f(m, "big", "256", 1e8, 0, true);
    init_f(m, "minus_big", "256", -1e8, 0, true);
    node(m, "Add", "up", "x,big", "x1");
    node(m, "Add", "down", "x1,minus_big", "y");
    output(m, "y", "");
    model_file(m, "cancel.onnx", dir, in, out);
    snprintf(args, sizeof args, "optimize %s -o %s --verify", in, out);
    tu_expect_refusal(args, "output 'y' differs");
    tu_expect_refusal(args, "opt.onnx not written");
    assert_int_equal(access(out, F_OK), -1);
    tu_rmtree(dir);
}

/* place --optimize places the rewritten model: rnnlm's 17 ops, not its 49. The search runs once
 * per model, cluster and cost model: a second run takes the cached answer (the same file), a
 * damaged cached file is searched again, and under mpirun rank 0's answer is every rank's. */
#define PLACE_OPT                                                                                  \
    "place " ZOO_MODEL " --cluster examples/clusters/local-cpu-percore.json --optimize"

static char *place_optimized(const char *needle)
{
    char *o = NULL;
    int rc = tu_run(PLACE_OPT, &o);
    if (rc) fail_msg("exit %d: %s", rc, o);
    if (!strstr(o, needle)) fail_msg("no '%s' in:\n%s", needle, o);
    assert_non_null(strstr(o, "(17 ops)"));
    char *end = strstr(o, " is placed"), *at = end;
    assert_non_null(end);
    while (at > o && strncmp(at, "; ", 2)) /* the path follows the note's last "; " */
        at--;
    char *path = strndup(at + 2, (size_t)(end - at - 2));
    free(o);
    return path;
}

static void test_place_optimize(void **state)
{
    (void)state;
    char dir[256];
    const char *was = getenv("PLACER_CACHE");
    char *keep = was ? strdup(was) : NULL;
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-opt-cache"), 0);
    setenv("PLACER_CACHE", dir, 1);
    char *first = place_optimized("--optimize: 49 -> 17 ops");
    char *again = place_optimized("cached");
    assert_string_equal(first, again);
    FILE *f = fopen(first, "w"); /* damaged: searched again, and the file made whole */
    fputs("not onnx", f);
    fclose(f);
    char *third = place_optimized("--optimize: 49 -> 17 ops");
    assert_string_equal(first, third);
    if (tu_mpi_begin(2)) {
        free(place_optimized("cached"));
        tu_mpi_end();
    }
    free(first), free(again), free(third);
    tu_expect_refusal(PLACE_OPT " --dim batch=2", "--optimize with --dim/--input");
    if (keep)
        setenv("PLACER_CACHE", keep, 1);
    else
        unsetenv("PLACER_CACHE");
    free(keep);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_search_beats_greedy),
        cmocka_unit_test(test_plateau_keeps_input),
        cmocka_unit_test(test_alpha_prunes),
        cmocka_unit_test(test_merge_priced_by_size),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_bad_alpha),
        cmocka_unit_test(test_cli_zoo),
        cmocka_unit_test(test_cli_refusals),
        cmocka_unit_test(test_cli_nothing_to_rewrite),
        cmocka_unit_test(test_cli_verify_mismatch),
        cmocka_unit_test(test_place_optimize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
