/* test_graph.c: the DAG core: linking, topological order, errors, edges, reachability,
 * summary. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every op of these graphs is a Relu: only the edges matter. */
static int op(pl_graph *g, const char *name, const char *ins, const char *out)
{
    return tu_op(g, name, "Relu", ins, out);
}

static void test_unsorted_nodes_are_ordered(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    op(g, "d", "b,c", "y"); /* file order is reversed on purpose */
    op(g, "c", "a", "c");
    op(g, "b", "a", "b");
    op(g, "a", "x", "a");
    pl_graph_add_output(g, pl_graph_tensor(g, "y"));
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "t.onnx", &err), 0);
    /* a first; b and c tie and keep file order (c before b); d last */
    const char *want[] = {"a", "c", "b", "d"};
    for (int k = 0; k < 4; k++)
        assert_string_equal(g->ops[g->topo[k]].name, want[k]);
    for (int k = 0; k < 4; k++)
        assert_int_equal(g->topo[g->topo_pos[k]], k);
    assert_int_equal(g->n_edges, 4);
    pl_graph_free(g);
}

static void test_cycle_names_ops(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    op(g, "a", "x,c", "a");
    op(g, "b", "a", "b");
    op(g, "c", "b", "c");
    op(g, "z", "x", "z");
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "m.onnx", &err), -1);
    assert_non_null(strstr(err.msg, "m.onnx: the graph has a cycle through 3 ops"));
    assert_non_null(strstr(err.msg, "'a' -> 'b' -> 'c' -> 'a'"));
    assert_null(strstr(err.msg, "'z'"));
    pl_graph_free(g);
}

static void test_self_loop(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    op(g, "s", "x,s", "s");
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "m.onnx", &err), -1);
    assert_non_null(strstr(err.msg, "cycle through 1 op: 's' -> 's'"));
    pl_graph_free(g);
}

static void test_dangling_read(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    op(g, "a", "x,ghost", "a");
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "m.onnx", &err), -1);
    assert_string_equal(err.msg, "m.onnx: op 'a' (Relu) reads tensor 'ghost', which no op "
                                 "produces and which is not a graph input or initializer");
    pl_graph_free(g);
}

static void test_double_producer_and_unproduced_output(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    op(g, "a", "x", "t");
    op(g, "b", "x", "t");
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "m", &err), -1);
    assert_non_null(strstr(err.msg, "op 'b': tensor 't' is already produced by op 'a'"));
    pl_graph_free(g);

    g = tu_graph_with_input();
    op(g, "a", "x", "t");
    pl_graph_add_output(g, pl_graph_tensor(g, "nothing"));
    assert_int_equal(pl_graph_finalize(g, "m", &err), -1);
    assert_non_null(strstr(err.msg, "graph output 'nothing' is not produced"));
    pl_graph_free(g);
}

static void test_edges_dedupe_and_names(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    op(g, "a", "x", "t");
    op(g, "b", "t,t", "u");  /* reads t twice: one edge, one consumer entry */
    op(g, NULL, "t,u", "v"); /* unnamed: gets a generated name */
    op(g, "b", "v", "w");    /* duplicate name: renamed with a warning */
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "m", &err), 0);
    assert_int_equal(g->tensors[pl_graph_find_tensor(g, "t")].n_consumers, 2);
    assert_int_equal(g->n_edges, 4); /* a->b(t), a->Relu_2(t), b->Relu_2(u), Relu_2->b#2(v) */
    assert_string_equal(g->ops[2].name, "Relu_2");
    assert_string_equal(g->ops[3].name, "b#2");
    assert_int_equal(g->n_warnings, 1);
    assert_int_equal(g->succ_off[1] - g->succ_off[0], 2); /* a: b, Relu_2 */
    pl_graph_free(g);
}

/* ---- reachability against brute force on random DAGs ---- */

static void brute_closure(int n, const int *off, const int *adj, unsigned char *m)
{
    memset(m, 0, (size_t)n * n);
    for (int s = 0; s < n; s++) { /* BFS from every node */
        int *q = malloc(n * sizeof *q), h = 0, t = 0;
        for (int e = off[s]; e < off[s + 1]; e++)
            if (!m[(size_t)s * n + adj[e]]) m[(size_t)s * n + adj[e]] = 1, q[t++] = adj[e];
        while (h < t) {
            int v = q[h++];
            for (int e = off[v]; e < off[v + 1]; e++)
                if (!m[(size_t)s * n + adj[e]]) m[(size_t)s * n + adj[e]] = 1, q[t++] = adj[e];
        }
        free(q);
    }
}

static void check_random_dag(unsigned seed, int n, double p, size_t cap)
{
    uint64_t rng = seed;
    /* edges only from lower to higher index under a random relabelling: a DAG */
    int *perm = malloc(n * sizeof *perm);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = pl_rng_below(&rng, i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int *off = calloc(n + 1, sizeof *off), *adj = malloc((size_t)n * n * sizeof *adj), m = 0;
    int *cnt = calloc(n, sizeof *cnt);
    unsigned char *has = calloc((size_t)n * n, 1);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (pl_rng_uniform(&rng) < p) has[(size_t)perm[a] * n + perm[b]] = 1, cnt[perm[a]]++;
    for (int v = 0; v < n; v++)
        off[v + 1] = off[v] + cnt[v];
    for (int v = 0; v < n; v++)
        for (int w = 0; w < n; w++)
            if (has[(size_t)v * n + w]) adj[m++] = w;
    int *topo = calloc(n, sizeof *topo); /* calloc: gcc -O1 cannot see the loop below fills it */
    for (int a = 0; a < n; a++)
        topo[a] = perm[a];
    unsigned char *closure = malloc((size_t)n * n);
    brute_closure(n, off, adj, closure);
    pl_reach *r = pl_reach_build_capped(n, off, adj, topo, cap);
    assert_int_equal(pl_reach_chains(r) > 0, cap > 0);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (pl_reach_query(r, i, j) != closure[(size_t)i * n + j])
                fail_msg("seed %u n %d: reach(%d,%d) = %d, brute force %d", seed, n, i, j,
                         pl_reach_query(r, i, j), closure[(size_t)i * n + j]);
    pl_reach_free(r);
    free(perm), free(off), free(adj), free(cnt), free(has), free(topo), free(closure);
}

static void test_reach_matches_brute_force(void **state)
{
    (void)state;
    for (unsigned seed = 1; seed <= 30; seed++) {
        int n = 5 + seed * 7;
        double p = seed % 3 == 0 ? 0.02 : seed % 3 == 1 ? 0.08 : 0.3;
        check_random_dag(seed, n, p, (size_t)1 << 30); /* chain table */
        check_random_dag(seed, n, p, 0);               /* DFS fallback */
    }
}

static void test_reach_on_graph(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    op(g, "a", "x", "a");
    op(g, "b", "a", "b");
    op(g, "c", "a", "c");
    op(g, "d", "b,c", "d");
    op(g, "e", "x", "e");
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "m", &err), 0);
    pl_reach *r = pl_graph_reach(g);
    int a = 0, b = 1, c = 2, d = 3, e = 4;
    assert_true(pl_reach_query(r, a, d));
    assert_true(pl_reach_query(r, c, d));
    assert_false(pl_reach_query(r, b, c));
    assert_false(pl_reach_query(r, c, b));
    assert_false(pl_reach_query(r, d, a));
    assert_false(pl_reach_query(r, a, a));
    assert_false(pl_reach_query(r, e, d));
    pl_reach_free(r);
    pl_graph_free(g);
}

static void test_summary_longest_path_and_params(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    int w = pl_graph_tensor(g, "w");
    int64_t wd[2] = {3, 4};
    pl_tensor_set_shape(&g->tensors[w], PL_DT_FLOAT, 2, wd);
    g->tensors[w].flags |= PL_TENSOR_WEIGHT;
    int a = op(g, "a", "x,w", "a");
    int b = op(g, "b", "a", "b");
    int c = op(g, "c", "a", "c");
    int d = op(g, "d", "b,c", "d");
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "m", &err), 0);
    g->ops[a].flops = 10, g->ops[b].flops = 5, g->ops[c].flops = 7, g->ops[d].flops = 1;
    pl_graph_summary s;
    pl_graph_summarize(g, &s);
    assert_int_equal(s.n_params, 12);
    assert_int_equal(s.param_bytes, 48);
    assert_close(s.flops, 23, 1e-12);
    assert_close(s.longest_path_flops, 18, 1e-12); /* a, c, d */
    assert_int_equal(s.longest_path_len, 3);
    assert_int_equal(s.longest_path[1], c);
    assert_int_equal(s.hist[0].count, 4);
    pl_graph_summary_free(&s);
    pl_graph_free(g);
}

/* A model with no ops is valid (an identity graph): every derived structure must cope. The
 * fuzzer found the summary sorting a NULL histogram. */
static void test_empty_graph(void **state)
{
    (void)state;
    pl_graph *g = tu_graph_with_input();
    pl_graph_add_output(g, g->inputs[0]);
    pl_err err;
    assert_int_equal(pl_graph_finalize(g, "empty.onnx", &err), 0);
    assert_int_equal(g->n_ops, 0);
    assert_int_equal(g->n_edges, 0);
    pl_graph_summary s;
    pl_graph_summarize(g, &s);
    assert_int_equal(s.n_hist, 0);
    assert_int_equal(s.longest_path_len, 0);
    pl_graph_summary_free(&s);
    pl_reach_free(pl_graph_reach(g));
    pl_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsorted_nodes_are_ordered),
        cmocka_unit_test(test_cycle_names_ops),
        cmocka_unit_test(test_self_loop),
        cmocka_unit_test(test_dangling_read),
        cmocka_unit_test(test_double_producer_and_unproduced_output),
        cmocka_unit_test(test_edges_dedupe_and_names),
        cmocka_unit_test(test_reach_matches_brute_force),
        cmocka_unit_test(test_reach_on_graph),
        cmocka_unit_test(test_summary_longest_path_and_params),
        cmocka_unit_test(test_empty_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
