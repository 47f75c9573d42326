/* test_dist.c: the pool of workers (dist.h): pl_dist_map in one process, and `compare` under
 * `mpirun -np 2` giving the one-process answer (skipped, saying so, without MPI). */
#include "testutil.h"

#include "placer/dist.h"

#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_one_process),
        cmocka_unit_test(test_compare_under_mpirun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
