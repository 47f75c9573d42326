/* test_coarsen.c: graph coarsening: which connections fuse, partial matches, cycles,
 * colocation, chains, the mapping back, and every zoo model. */
#include "testutil.h"

#include "placer/coarsen.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Adds op `name` of `type` reading `ins` and writing `outs` (comma-separated tensor names);
 * its flops are 10 * (index + 1) so that sums are checkable. */
static int op(pl_graph *g, const char *name, const char *type, const char *ins, const char *outs)
{
    int o = tu_op(g, name, type, ins, outs);
    g->ops[o].cls = PL_CLASS_ELEMENTWISE;
    g->ops[o].flops = 10.0 * (o + 1);
    g->ops[o].bytes_moved = 1.0 + o;
    return o;
}

static pl_graph *graph_x(void)
{
    return tu_graph_with_input();
}

static void weight(pl_graph *g, const char *name)
{
    g->tensors[pl_graph_tensor(g, name)].flags |= PL_TENSOR_WEIGHT;
}

static void done(pl_graph *g, const char *out)
{
    pl_graph_add_output(g, pl_graph_tensor(g, out));
    pl_err err = {""};
    if (pl_graph_finalize(g, "t", &err) < 0) fail_msg("%s", err.msg);
}

/* Every original op in exactly one group, coarse_of agreeing with the member lists, costs
 * summed, and the coarse graph finalized. */
static void check_mapping(const pl_graph *g, const pl_coarsening *c)
{
    int n = c->coarse->n_ops;
    assert_int_equal(c->n_orig, g->n_ops);
    assert_non_null(c->coarse->topo);
    int *seen = calloc((size_t)g->n_ops + 1, sizeof(int));
    double total = 0, total_c = 0;
    for (int k = 0; k < n; k++) {
        double f = 0;
        assert_true(c->member_off[k + 1] > c->member_off[k]);
        for (int j = c->member_off[k]; j < c->member_off[k + 1]; j++) {
            int m = c->members[j];
            seen[m]++;
            assert_int_equal(c->coarse_of[m], k);
            f += g->ops[m].flops;
        }
        assert_true(c->coarse->ops[k].flops == f); /* same order of summation: exact */
        assert_true(c->coarse->ops[k].flags & PL_OP_COST_GIVEN);
        total_c += c->coarse->ops[k].flops;
    }
    assert_int_equal(c->member_off[n], g->n_ops);
    for (int i = 0; i < g->n_ops; i++) {
        assert_int_equal(seen[i], 1);
        total += g->ops[i].flops;
    }
    assert_close(total_c, total, 1e-12);
    int *cd = malloc((size_t)n * sizeof(int) + 1), *od = malloc((size_t)g->n_ops * sizeof(int) + 1);
    for (int k = 0; k < n; k++)
        cd[k] = k % 3;
    pl_coarsen_expand_placement(c, cd, od);
    for (int i = 0; i < g->n_ops; i++)
        assert_int_equal(od[i], c->coarse_of[i] % 3);
    free(cd);
    free(od);
    free(seen);
}

static pl_coarsening *run(const pl_graph *g, const pl_coarsen_opts *o)
{
    pl_coarsening *c = NULL;
    pl_err err = {""};
    if (pl_coarsen(g, o, &c, &err) < 0) fail_msg("%s", err.msg);
    check_mapping(g, c);
    return c;
}

static bool together(const pl_coarsening *c, const pl_graph *g, const char *a, const char *b)
{
    return c->coarse_of[pl_graph_find_op(g, a)] == c->coarse_of[pl_graph_find_op(g, b)];
}

static void test_direct_connection_fuses(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    weight(g, "w");
    op(g, "conv", "Conv", "x,w", "t");
    op(g, "relu", "Relu", "t", "y");
    done(g, "y");
    pl_coarsening *c = run(g, NULL);
    assert_int_equal(c->coarse->n_ops, 1);
    assert_string_equal(c->coarse->ops[0].type, "Conv+Relu");
    assert_int_equal(c->n_fused, 1);
    assert_string_equal(c->fused[0].type, "Conv+Relu");
    /* the weight stays a weight read by the coarse op; the inner tensor is gone */
    int w = pl_graph_find_tensor(c->coarse, "w");
    assert_true(w >= 0 && (c->coarse->tensors[w].flags & PL_TENSOR_WEIGHT));
    assert_int_equal(c->coarse->tensors[w].consumers[0], 0);
    assert_int_equal(pl_graph_find_tensor(c->coarse, "t"), -1);
    assert_close(c->coarse->ops[0].bytes_moved, 1.0 + 2.0, 1e-12);
    pl_coarsening_free(c);
    pl_graph_free(g);
}

static void test_multi_input_fuses(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    op(g, "c1", "Conv", "x", "a");
    op(g, "c2", "Conv", "x", "b");
    op(g, "add", "Add", "a,b", "s");
    op(g, "relu", "Relu", "s", "y");
    done(g, "y");
    pl_coarsening *c = run(g, NULL);
    assert_int_equal(c->coarse->n_ops, 2);
    assert_true(together(c, g, "c1", "add") && together(c, g, "add", "relu"));
    assert_false(together(c, g, "c2", "add"));
    /* the tensor crossing groups is kept between the coarse ops */
    assert_true(pl_graph_find_tensor(c->coarse, "b") >= 0);
    assert_string_equal(c->fused[0].type, "Conv+Add+Relu");
    pl_coarsening_free(c);
    pl_graph_free(g);
}

static void test_multi_output_not_fused(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    op(g, "conv", "Conv", "x", "t");
    op(g, "relu", "Relu", "t", "r");
    op(g, "sig", "Sigmoid", "t", "s");
    op(g, "add", "Add", "r,s", "y");
    done(g, "y");
    pl_coarsen_opts o = {.no_colocate = true};
    pl_coarsening *c = run(g, &o);
    assert_int_equal(c->coarse->n_ops, 4);
    assert_int_equal(c->passes[0].ops_after, 4);
    pl_coarsening_free(c);
    /* several outputs of one producer, one read elsewhere: not fused either */
    pl_graph *h = graph_x();
    op(h, "split", "Conv", "x", "p,q");
    op(h, "relu", "Relu", "p", "r");
    op(h, "sig", "Sigmoid", "q", "s");
    op(h, "add", "Add", "r,s", "y");
    done(h, "y");
    c = run(h, &o);
    assert_int_equal(c->coarse->n_ops, 4);
    pl_coarsening_free(c);
    pl_graph_free(h);
    pl_graph_free(g);
}

static pl_fusion_rules *rules1(const char *a, const char *b, const char *cc)
{
    pl_fusion_rules *r = calloc(1, sizeof *r);
    const char *t[3] = {a, b, cc};
    pl_fusion_rules_add(r, t, cc ? 3 : 2);
    return r;
}

static void test_partial_match_released(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    op(g, "a", "A", "x", "t");
    op(g, "b", "B", "t", "u");
    op(g, "d", "D", "u", "y");
    done(g, "y");
    pl_fusion_rules *r = rules1("A", "B", "C");
    pl_coarsen_opts o = {.rules = r};
    pl_coarsening *c = run(g, &o);
    assert_int_equal(c->coarse->n_ops, 3);
    assert_int_equal(c->n_fused, 0);
    pl_coarsening_free(c);
    /* with a rule that ends where the graph does, the same ops fuse */
    pl_fusion_rules_free(r);
    r = rules1("A", "B", "D");
    o.rules = r;
    c = run(g, &o);
    assert_int_equal(c->coarse->n_ops, 1);
    pl_coarsening_free(c);
    pl_fusion_rules_free(r);
    pl_graph_free(g);
}

/* A sibling is an op reading what the group reads (the tanh GELU's x); sharing only a weight
 * does not make one: a = A(x, W), b = B(u, W), c = C(a, b) stays three ops under the rule
 * A, B, C (b is not of the kernel that reads x), and becomes one when b reads x. */
static void test_sibling_not_through_weight(void **state)
{
    (void)state;
    pl_fusion_rules *r = rules1("A", "B", "C");
    pl_coarsen_opts o = {.rules = r};
    for (int via_x = 0; via_x < 2; via_x++) {
        pl_graph *g = graph_x();
        pl_graph_add_input(g, pl_graph_tensor(g, "u"));
        weight(g, "W");
        op(g, "a", "A", "x,W", "a");
        op(g, "b", "B", via_x ? "x,W" : "u,W", "b");
        op(g, "c", "C", "a,b", "y");
        done(g, "y");
        pl_coarsening *c = run(g, &o);
        assert_int_equal(c->coarse->n_ops, via_x ? 1 : 3);
        pl_coarsening_free(c);
        pl_graph_free(g);
    }
    pl_fusion_rules_free(r);
}

/* A and B both read x, but B also reads what A feeds through W: grouping A with B would make
 * the edge A -> W -> B a cycle. The fusion is refused and the result is still a DAG. */
static void test_cycle_refused(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    op(g, "a", "A", "x", "t");
    op(g, "w", "W", "t", "u");
    op(g, "b", "B", "x,u", "v");
    done(g, "v");
    pl_fusion_rules *r = rules1("A", "B", NULL);
    pl_coarsen_opts o = {.rules = r};
    pl_coarsening *c = run(g, &o);
    assert_false(together(c, g, "a", "b"));
    assert_int_equal(c->coarse->n_ops, 3);
    pl_coarsening_free(c);
    pl_fusion_rules_free(r);
    pl_graph_free(g);
}

static void test_control_never_fused(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    int k = op(g, "conv", "Conv", "x", "t");
    g->ops[k].cls = PL_CLASS_CONTROL;
    op(g, "relu", "Relu", "t", "y");
    done(g, "y");
    pl_coarsen_opts o = {.chain = true};
    pl_coarsening *c = run(g, &o);
    assert_int_equal(c->coarse->n_ops, 2);
    pl_coarsening_free(c);
    pl_graph_free(g);
}

static void test_colocation(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    weight(g, "k");
    weight(g, "shared");
    op(g, "const", "Constant", "", "k");
    op(g, "const2", "Constant", "", "shared");
    op(g, "shape", "Shape", "x", "s");
    op(g, "reshape", "Reshape", "x,k,s", "r");
    op(g, "m1", "Mul", "r,shared", "p");
    op(g, "m2", "Mul", "p,shared", "y");
    done(g, "y");
    pl_coarsen_opts o = {.no_fuse = true};
    pl_coarsening *c = run(g, &o);
    assert_true(together(c, g, "const", "reshape") && together(c, g, "shape", "reshape"));
    assert_false(together(c, g, "const2", "m1") || together(c, g, "const2", "m2"));
    assert_int_equal(c->coarse->n_ops, 4);
    assert_string_equal(c->passes[0].name, "colocate");
    /* the colocated Constant's value is a weight the group reads */
    int k = pl_graph_find_tensor(c->coarse, "k");
    assert_true(k >= 0 && (c->coarse->tensors[k].flags & PL_TENSOR_WEIGHT));
    assert_int_equal(c->coarse->tensors[k].producer, -1);
    pl_coarsening_free(c);
    o.no_colocate = true;
    c = run(g, &o);
    assert_int_equal(c->coarse->n_ops, g->n_ops);
    assert_int_equal(c->n_passes, 0);
    pl_coarsening_free(c);
    pl_graph_free(g);
}

/* The join pass (Talos's packs): along runs, the rule decides, asked with the group's first
 * op; a run breaks where an op has two data predecessors or its predecessor two successors;
 * a source feeder joins its reader whatever the rule says. */
static bool join_unless_stop(void *ctx, int first, int v)
{
    const pl_graph *g = ctx;
    assert_true(first >= 0 && first < g->n_ops && first != v);
    return strcmp(g->ops[v].name, "stop") != 0;
}

static bool join_never(void *ctx, int first, int v)
{
    (void)ctx, (void)first, (void)v;
    return false;
}

static bool same_group(pl_uf *u, const pl_graph *g, const char *a, const char *b)
{
    return pl_uf_find(u, pl_graph_find_op(g, a)) == pl_uf_find(u, pl_graph_find_op(g, b));
}

static void test_join_pass(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    weight(g, "k");
    op(g, "a", "Relu", "x", "ta");
    op(g, "b", "Relu", "ta", "tb");
    op(g, "const", "Constant", "", "k");
    op(g, "c", "Mul", "tb,k", "tc"); /* one data predecessor: the Constant does not count */
    op(g, "stop", "Relu", "tc", "ts");
    op(g, "d", "Relu", "ts", "td");
    op(g, "e1", "Relu", "td", "u1"); /* d has two successors: the run ends at d */
    op(g, "e2", "Relu", "td", "u2");
    op(g, "f", "Add", "u1,u2", "y");
    done(g, "y");
    pl_uf u;
    pl_coarsen_join(g, join_unless_stop, g, &u);
    assert_true(same_group(&u, g, "a", "b") && same_group(&u, g, "a", "c"));
    assert_true(same_group(&u, g, "const", "c"));
    assert_false(same_group(&u, g, "c", "stop"));
    assert_true(same_group(&u, g, "stop", "d"));
    assert_false(same_group(&u, g, "d", "e1") || same_group(&u, g, "d", "e2"));
    assert_false(same_group(&u, g, "e1", "f") || same_group(&u, g, "e2", "f"));
    assert_int_equal(u.n_sets, 5); /* {a,b,const,c} {stop,d} {e1} {e2} {f} */
    pl_uf_free(&u);
    pl_coarsen_join(g, join_never, NULL, &u);
    assert_true(same_group(&u, g, "const", "c"));
    assert_int_equal(u.n_sets, g->n_ops - 1);
    pl_uf_free(&u);
    pl_graph_free(g);
}

static void test_chain_to_target(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    char in[16] = "x", out[16];
    for (int i = 0; i < 10; i++) {
        snprintf(out, sizeof out, "t%d", i);
        op(g, NULL, "Sigmoid", in, out);
        snprintf(in, sizeof in, "%s", out);
    }
    op(g, "side", "Tanh", "x", "s"); /* a second branch joining at the end */
    op(g, "join", "Add", "t9,s", "y");
    done(g, "y");
    pl_coarsen_opts o = {.chain = true, .target_ops = 4};
    pl_coarsening *c = run(g, &o);
    assert_true(c->coarse->n_ops <= 4 && c->coarse->n_ops >= 2);
    assert_string_equal(c->passes[c->n_passes - 1].name, "chain");
    pl_coarsening_free(c);
    o.target_ops = 0; /* as far as it goes: everything feeds the join */
    c = run(g, &o);
    assert_int_equal(c->coarse->n_ops, 1);
    pl_coarsening_free(c);
    pl_graph_free(g);
}

static void test_times_summed(void **state)
{
    (void)state;
    pl_graph *g = graph_x();
    int a = op(g, "conv", "Conv", "x", "t");
    int b = op(g, "relu", "Relu", "t", "y");
    pl_op_add_time(g, a, "V100", 1e-3);
    pl_op_add_time(g, a, "K80", 3e-3);
    pl_op_add_time(g, b, "V100", 2e-4);
    done(g, "y");
    pl_coarsening *c = run(g, NULL);
    assert_int_equal(c->coarse->ops[0].n_times, 1); /* K80: not every member has a time */
    assert_string_equal(c->coarse->ops[0].time_device[0], "V100");
    assert_close(c->coarse->ops[0].time_s[0], 1.2e-3, 1e-12);
    pl_coarsening_free(c);
    pl_graph_free(g);
}

static void test_rules_file(void **state)
{
    (void)state;
    pl_err err = {""};
    const char *ok = "{\"format\": \"placer-fusion-rules/1\", \"rules\": [[\"Conv\", \"Relu\"],"
                     " [\"MatMul\", \"Add\", \"Relu\"]]}";
    pl_fusion_rules *r = pl_fusion_rules_parse(ok, strlen(ok), "r.json", &err);
    assert_non_null(r);
    assert_int_equal(r->n, 2);
    assert_int_equal(r->rules[1].n, 3);
    assert_string_equal(r->rules[1].types[2], "Relu");
    pl_fusion_rules_free(r);
    const char *one = "{\"format\": \"placer-fusion-rules/1\", \"rules\": [[\"Conv\"]]}";
    assert_null(pl_fusion_rules_parse(one, strlen(one), "r.json", &err));
    assert_non_null(strstr(err.msg, "$.rules[0]"));
    const char *fmt = "{\"format\": \"placer-cluster/1\", \"rules\": []}";
    assert_null(pl_fusion_rules_parse(fmt, strlen(fmt), "r.json", &err));
    pl_fusion_rules *d = pl_fusion_rules_default();
    assert_true(d->n >= 10);
    pl_fusion_rules_free(d);
}

static void test_zoo_models(void **state)
{
    (void)state;
    glob_t gl;
    assert_int_equal(glob("models/*.onnx", 0, NULL, &gl), 0);
    assert_true(gl.gl_pathc >= 8);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        pl_graph *g = tu_load(gl.gl_pathv[i]);
        pl_coarsening *c = run(g, NULL);
        assert_true(c->coarse->n_ops < g->n_ops);
        pl_err err = {""};
        /* inference keeps the given costs of the coarse ops: checked on a fused group, whose
         * summed cost inference would otherwise recompute (a one-member op keeps its own) */
        int f = 0;
        while (f < c->coarse->n_ops && c->member_off[f + 1] - c->member_off[f] < 2)
            f++;
        assert_true(f < c->coarse->n_ops);
        double before = c->coarse->ops[f].flops, bytes = c->coarse->ops[f].bytes_moved;
        if (pl_graph_infer(c->coarse, &err) < 0) fail_msg("%s", err.msg);
        assert_true(c->coarse->ops[f].flops == before);
        assert_true(c->coarse->ops[f].bytes_moved == bytes);
        int target = g->n_ops / 10 + 1;
        pl_coarsen_opts o = {.chain = true, .target_ops = target};
        pl_coarsening *d = run(g, &o);
        assert_true(d->coarse->n_ops < c->coarse->n_ops);
        pl_coarsening_free(d);
        pl_coarsening_free(c);
        pl_graph_free(g);
    }
    globfree(&gl);
}

static void test_zoo_fusions(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/resnet50.onnx");
    pl_coarsening *c = run(g, NULL);
    assert_int_equal(c->n_fused, 2);
    assert_string_equal(c->fused[0].type, "Conv+Relu");
    assert_int_equal(c->fused[0].count, 33);
    assert_string_equal(c->fused[1].type, "Conv+Add+Relu");
    assert_int_equal(c->fused[1].count, 16);
    pl_coarsening_free(c);
    pl_graph_free(g);
    g = tu_load("models/bert_base.onnx");
    c = run(g, NULL);
    int ln = 0;
    for (int k = 0; k < c->n_fused; k++)
        if (!strncmp(c->fused[k].type, "ReduceMean+Sub+Pow", 18)) ln += c->fused[k].count;
    assert_int_equal(ln, 25); /* every LayerNorm: embeddings + 2 per layer */
    pl_coarsening_free(c);
    pl_graph_free(g);
}

static void test_cli(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(tu_run("inspect models/resnet50.onnx --coarsen", &out), 0);
    assert_non_null(strstr(out, "Conv+Relu \xc3\x97 33"));
    assert_non_null(strstr(out, "colocate"));
    free(out);
    assert_int_equal(tu_run("inspect models/vgg19.onnx --coarsen --json", &out), 0);
    assert_non_null(strstr(out, "\"fused_groups\""));
    free(out);
    const char *f = "{\"format\": \"placer-fusion-rules/1\", \"rules\": [[\"Gemm\", \"Relu\"]]}";
    char args[512];
    snprintf(args, sizeof args, "inspect models/vgg19.onnx --fusion-rules %s",
             tu_tmpfile(f, strlen(f), ".json"));
    assert_int_equal(tu_run(args, &out), 0);
    assert_non_null(strstr(out, "Gemm+Relu \xc3\x97 2"));
    assert_null(strstr(out, "Conv+Relu"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_connection_fuses),
        cmocka_unit_test(test_multi_input_fuses),
        cmocka_unit_test(test_multi_output_not_fused),
        cmocka_unit_test(test_sibling_not_through_weight),
        cmocka_unit_test(test_partial_match_released),
        cmocka_unit_test(test_cycle_refused),
        cmocka_unit_test(test_control_never_fused),
        cmocka_unit_test(test_colocation),
        cmocka_unit_test(test_join_pass),
        cmocka_unit_test(test_chain_to_target),
        cmocka_unit_test(test_times_summed),
        cmocka_unit_test(test_rules_file),
        cmocka_unit_test(test_zoo_models),
        cmocka_unit_test(test_zoo_fusions),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
