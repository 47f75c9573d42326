/* test_cluster_random.c: TAG's random topology generator (pl_cluster_random): every cluster in
 * the paper's ranges, one device group per machine, the same cluster for a seed and from its
 * written document, and the GPU caps. */
#include "testutil.h"

#include "placer/cluster.h"
#include "placer/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GBIT (1e9 / 8)

static pl_cluster *make(uint64_t seed, int lo, int hi)
{
    pl_err err = {""};
    pl_cluster_random_opts o = {.min_gpus = lo, .max_gpus = hi};
    pl_cluster *c = pl_cluster_random(seed, &o, &err);
    if (!c) fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
    return c;
}

static bool is_type(const char *m)
{
    return !strcmp(m, "V100-SXM2-32GB") || !strcmp(m, "GTX-1080-Ti") ||
           !strcmp(m, "P100-PCIE-16GB");
}

/* Hosts are "m0".."m<n-1>", each of 1-8 GPUs of one type; returns the number of machines. */
static int check_machines(const pl_cluster *c)
{
    int per[6] = {0}, n = 0;
    const char *model[6] = {0};
    for (int d = 0; d < c->n_devs; d++) {
        const pl_device *v = &c->devs[d];
        assert_int_equal(v->kind, PL_DEV_GPU);
        assert_true(is_type(v->model));
        int h = -1;
        assert_int_equal(sscanf(v->host, "m%d", &h), 1);
        assert_true(h >= 0 && h < 6);
        if (!per[h]++) model[h] = v->model, n = h + 1 > n ? h + 1 : n;
        assert_string_equal(v->model, model[h]);
    }
    for (int h = 0; h < n; h++)
        assert_true(per[h] >= 1 && per[h] <= 8);
    return n;
}

/* Every pair: 64-160 Gb/s inside a machine, 20-50 Gb/s between (the slower machine's NIC). */
static void check_routes(const pl_cluster *c)
{
    for (int a = 0; a < c->n_devs; a++)
        for (int b = 0; b < c->n_devs; b++) {
            if (a == b) continue;
            double bw = c->bw_Bps[(size_t)a * c->n_devs + b];
            bool same = !strcmp(c->devs[a].host, c->devs[b].host);
            assert_true(bw >= (same ? 64 : 20) * GBIT * (1 - 1e-12));
            assert_true(bw <= (same ? 160 : 50) * GBIT * (1 + 1e-12));
            assert_int_equal(c->hops[(size_t)a * c->n_devs + b], same ? 2 : 4);
        }
}

static void test_in_range(void **state)
{
    (void)state;
    int seen_machines[7] = {0}, seen_types = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        pl_cluster *c = make(seed, 0, 0);
        int n = check_machines(c);
        seen_machines[n]++;
        check_routes(c);
        for (int d = 0; d < c->n_devs; d++)
            seen_types |= !strcmp(c->devs[d].model, "V100-SXM2-32GB") ? 1
                          : !strcmp(c->devs[d].model, "GTX-1080-Ti")  ? 2
                                                                      : 4;
        /* TAG's device groups: one per machine (one model, every pair alike) */
        pl_dev_groups dg;
        pl_err err = {""};
        assert_int_equal(pl_dev_groups_build(c, &dg, &err), 0);
        assert_int_equal(dg.n, n);
        pl_dev_groups_free(&dg);
        pl_cluster_free(c);
    }
    /* 200 draws reach every machine count and every type */
    for (int n = 1; n <= 6; n++)
        assert_true(seen_machines[n] > 0);
    assert_int_equal(seen_types, 7);
}

static void test_same_seed_same_cluster(void **state)
{
    (void)state;
    pl_cluster_random_opts o = {0};
    char *a = pl_cluster_random_json(42, &o, NULL), *b = pl_cluster_random_json(42, NULL, NULL),
         *c = pl_cluster_random_json(43, &o, NULL);
    assert_non_null(a), assert_non_null(b), assert_non_null(c);
    assert_string_equal(a, b);
    assert_true(strcmp(a, c) != 0);
    free(a), free(b), free(c);
}

/* The written document loads back as the same cluster: devices, routes, hops. */
static void test_loads_back(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        char *text = pl_cluster_random_json(seed, NULL, NULL);
        pl_err err = {""};
        pl_cluster *c = make(seed, 0, 0),
                   *d = pl_cluster_load(tu_tmpfile(text, strlen(text), ".json"), &err);
        if (!d) fail_msg("%s", err.msg);
        assert_string_equal(c->name, d->name);
        assert_int_equal(c->n_devs, d->n_devs);
        for (int i = 0; i < c->n_devs; i++) {
            assert_string_equal(c->devs[i].name, d->devs[i].name);
            assert_string_equal(c->devs[i].model, d->devs[i].model);
            assert_string_equal(c->devs[i].host, d->devs[i].host);
            assert_true(c->devs[i].memory_bytes == d->devs[i].memory_bytes);
        }
        size_t nn = (size_t)c->n_devs * c->n_devs;
        assert_memory_equal(c->bw_Bps, d->bw_Bps, nn * sizeof *c->bw_Bps);
        assert_memory_equal(c->lat_s, d->lat_s, nn * sizeof *c->lat_s);
        assert_memory_equal(c->hops, d->hops, nn * sizeof *c->hops);
        pl_cluster_free(c), pl_cluster_free(d), free(text);
    }
}

static void test_caps(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        pl_cluster *c = make(seed, 0, 8);
        assert_true(c->n_devs >= 1 && c->n_devs <= 8);
        pl_cluster_free(c);
        c = make(seed, 2, 4);
        assert_true(c->n_devs >= 2 && c->n_devs <= 4);
        check_routes(c);
        pl_cluster_free(c);
    }
    pl_err err = {""};
    pl_cluster_random_opts bad = {.min_gpus = 49};
    assert_null(pl_cluster_random(1, &bad, &err));
    assert_non_null(strstr(err.msg, "GPUs from 49 to 48"));
    bad = (pl_cluster_random_opts){.min_gpus = 5, .max_gpus = 4};
    assert_null(pl_cluster_random_json(1, &bad, &err));
    assert_non_null(strstr(err.msg, "GPUs from 5 to 4"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_range),
        cmocka_unit_test(test_same_seed_same_cluster),
        cmocka_unit_test(test_loads_back),
        cmocka_unit_test(test_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
