/* test_train_groups.c: TAG's device groups and op groups (src/train/groups.c, docs/train.md). */
#include "testutil.h"

#include "placer/cost.h"
#include "placer/train.h"

#include <stdlib.h>
#include <string.h>

/* ---- device groups ---- */

static pl_cluster *load(const char *path)
{
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(path, &err);
    if (!c) fail_msg("%s", err.msg);
    return c;
}

static pl_cluster *load_text(const char *text)
{
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), "c.json", &err);
    if (!c) fail_msg("%s", err.msg);
    return c;
}

/* Group sizes in order, and every device's group consistent with the CSR. */
static void check_groups(const pl_cluster *c, const pl_dev_groups *d, const int *sizes, int n)
{
    assert_int_equal(d->n, n);
    for (int j = 0; j < n; j++) {
        if (d->off[j + 1] - d->off[j] != sizes[j])
            fail_msg("group %d has %d devices, expected %d", j, d->off[j + 1] - d->off[j],
                     sizes[j]);
        for (int q = d->off[j]; q < d->off[j + 1]; q++) {
            assert_int_equal(d->group_of[d->dev[q]], j);
            if (q > d->off[j]) assert_true(d->dev[q] > d->dev[q - 1]);
        }
        if (j > 0) assert_true(d->dev[d->off[j]] > d->dev[d->off[j - 1]]); /* first-device order */
    }
    for (int v = 0; v < c->n_devs; v++)
        assert_int_equal(d->group_of[v] < 0, c->devs[v].kind == PL_DEV_CPU);
}

/* The names of group j's devices, space-separated. */
static const char *members(const pl_cluster *c, const pl_dev_groups *d, int j)
{
    static char buf[512];
    buf[0] = 0;
    for (int q = d->off[j]; q < d->off[j + 1]; q++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", q > d->off[j] ? " " : "",
                 c->devs[d->dev[q]].name);
    return buf;
}

static void test_tag_testbed(void **state)
{
    (void)state;
    pl_cluster *c = load("examples/clusters/tag-testbed.json");
    pl_dev_groups d;
    pl_err err = {""};
    assert_int_equal(pl_dev_groups_build(c, &d, &err), 0);
    check_groups(c, &d, (const int[]){4, 2, 2, 2, 2, 2, 2}, 7);
    assert_string_equal(members(c, &d, 0), "m0_gpu0 m0_gpu1 m0_gpu2 m0_gpu3");
    assert_string_equal(members(c, &d, 5), "m5_gpu0 m5_gpu1");
    assert_string_equal(c->devs[d.dev[d.off[1]]].model, "GTX-1080-Ti");
    assert_string_equal(c->devs[d.dev[d.off[6]]].model, "P100-PCIE-16GB");
    /* NVLink inside m0 (50 GB/s), PCIe inside the others, 100 Gb/s between machines */
    assert_close(c->bw_Bps[0 * c->n_devs + 1], 50e9, 1e-9);
    assert_close(c->bw_Bps[4 * c->n_devs + 5], 15.75e9, 1e-9);
    assert_close(c->bw_Bps[0 * c->n_devs + 4], 12.5e9, 1e-9);
    pl_dev_groups_free(&d);
    pl_cluster_free(c);
}

static void test_tag_cloud(void **state)
{
    (void)state;
    pl_cluster *c = load("examples/clusters/tag-cloud.json");
    pl_dev_groups d;
    pl_err err = {""};
    assert_int_equal(c->n_devs, 32);
    assert_int_equal(pl_dev_groups_build(c, &d, &err), 0);
    check_groups(c, &d, (const int[]){8, 8, 4, 4, 4, 4}, 6);
    assert_string_equal(members(c, &d, 2), "m2_gpu0 m2_gpu1 m2_gpu2 m2_gpu3");
    assert_string_equal(c->devs[d.dev[d.off[5]]].model, "T4");
    assert_close(c->bw_Bps[0 * c->n_devs + 8], 1.25e9, 1e-9); /* 10 Gb/s between machines */
    pl_dev_groups_free(&d);
    pl_cluster_free(c);
}

/* Host h: a CPU, four V100s on one PCIe switch with an NVLink between two of them
 * (`nvlink`), a P100; and a V100 with no host. */
static pl_cluster *host_with_nvlink(const char *a, const char *b)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"format\": \"placer-cluster/1\", \"devices\": ["
             "{\"name\": \"cpu0\", \"model\": \"cpu-generic\", \"host\": \"h\"},"
             "{\"name\": \"g\", \"count\": 4, \"model\": \"V100\", \"host\": \"h\"},"
             "{\"name\": \"p0\", \"model\": \"P100\", \"host\": \"h\"},"
             "{\"name\": \"x0\", \"model\": \"V100\"}],"
             "\"switches\": [\"sw\"], \"topology_links\": ["
             "{\"a\": \"cpu0\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
             "{\"a\": \"g0\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
             "{\"a\": \"g1\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
             "{\"a\": \"g2\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
             "{\"a\": \"g3\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
             "{\"a\": \"p0\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
             "{\"a\": \"x0\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
             "{\"a\": \"%s\", \"b\": \"%s\", \"bandwidth_Bps\": \"50 GB/s\"}]}",
             a, b);
    return load_text(text);
}

static void test_links_split_a_host(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_dev_groups d;
    /* g0-g1 on NVLink, the other pairs on PCIe: {g0 g1} and {g2 g3}, not one group of 4 */
    pl_cluster *c = host_with_nvlink("g0", "g1");
    assert_int_equal(pl_dev_groups_build(c, &d, &err), 0);
    check_groups(c, &d, (const int[]){2, 2, 1, 1}, 4);
    assert_string_equal(members(c, &d, 0), "g0 g1");
    assert_string_equal(members(c, &d, 1), "g2 g3");
    assert_string_equal(members(c, &d, 2), "p0"); /* another model on the same host */
    assert_string_equal(members(c, &d, 3), "x0"); /* no host: alone */
    assert_int_equal(d.group_of[0], -1);          /* the CPU takes no part */
    pl_dev_groups_free(&d);
    pl_cluster_free(c);
    /* the fastest pair seeds a group wherever it is: g2-g3 on NVLink gives the same split,
     * not {g0 g1 g2} and {g3} as adding devices in index order would */
    c = host_with_nvlink("g2", "g3");
    assert_int_equal(pl_dev_groups_build(c, &d, &err), 0);
    check_groups(c, &d, (const int[]){2, 2, 1, 1}, 4);
    assert_string_equal(members(c, &d, 0), "g0 g1");
    assert_string_equal(members(c, &d, 1), "g2 g3");
    pl_dev_groups_free(&d);
    pl_cluster_free(c);
    /* g1-g2 on NVLink: {g1 g2} first, then g0 and g3 alike each other */
    c = host_with_nvlink("g1", "g2");
    assert_int_equal(pl_dev_groups_build(c, &d, &err), 0);
    check_groups(c, &d, (const int[]){2, 2, 1, 1}, 4);
    assert_string_equal(members(c, &d, 0), "g0 g3");
    assert_string_equal(members(c, &d, 1), "g1 g2");
    pl_dev_groups_free(&d);
    pl_cluster_free(c);
}

static void test_no_gpu(void **state)
{
    (void)state;
    pl_cluster *c = load("examples/clusters/local-cpu-percore.json");
    pl_dev_groups d;
    pl_err err = {""};
    assert_int_equal(pl_dev_groups_build(c, &d, &err), -1);
    assert_contains(err.msg, "examples/clusters/local-cpu-percore.json");
    assert_contains(err.msg, "no GPU or accelerator among its 2 devices");
    assert_null(d.group_of);
    pl_dev_groups_free(&d);
    pl_cluster_free(c);
}

/* ---- op groups ---- */

/* A two-layer MLP's training step as a task graph: forward fc1, relu, fc2, loss; backward
 * d_loss, d_fc2 (dW2 and dh), d_relu, d_fc1 (dW1); Adam updates apply_w1, apply_w2. Times on
 * the V100 and T4 are given; the CPU's are estimated (and must not count). */
static const char *mlp_json =
    "{\"format\": \"placer-taskgraph/1\", \"name\": \"mlp\", \"nodes\": ["
    "{\"name\": \"fc1\", \"weight_bytes\": \"4 MiB\", \"times_s\": {\"V100\": 0.004, \"T4\": "
    "0.008}},"
    "{\"name\": \"relu\", \"times_s\": {\"V100\": 0.001, \"T4\": 0.003}},"
    "{\"name\": \"fc2\", \"weight_bytes\": \"2 MiB\", \"times_s\": {\"V100\": 0.002, \"T4\": "
    "0.004}},"
    "{\"name\": \"loss\", \"times_s\": {\"V100\": 0.001, \"T4\": 0.001}},"
    "{\"name\": \"d_loss\", \"times_s\": {\"V100\": 0.001, \"T4\": 0.001}},"
    "{\"name\": \"d_fc2\", \"times_s\": {\"V100\": 0.004, \"T4\": 0.008}},"
    "{\"name\": \"d_relu\", \"times_s\": {\"V100\": 0.001, \"T4\": 0.003}},"
    "{\"name\": \"d_fc1\", \"times_s\": {\"V100\": 0.008, \"T4\": 0.016}},"
    "{\"name\": \"apply_w1\", \"weight_bytes\": \"8 MiB\", \"times_s\": {\"V100\": 0.001, \"T4\": "
    "0.002}},"
    "{\"name\": \"apply_w2\", \"weight_bytes\": \"4 MiB\", \"times_s\": {\"V100\": 0.001, \"T4\": "
    "0.001}}"
    "], \"edges\": ["
    "{\"to\": \"fc1\", \"bytes\": \"1 MiB\", \"tensor\": \"x\"},"
    "{\"to\": \"d_fc1\", \"bytes\": \"1 MiB\", \"tensor\": \"x\"},"
    "{\"from\": \"fc1\", \"to\": \"relu\", \"bytes\": \"2 MiB\", \"tensor\": \"a1\"},"
    "{\"from\": \"fc1\", \"to\": \"d_relu\", \"bytes\": \"2 MiB\", \"tensor\": \"a1\"},"
    "{\"from\": \"relu\", \"to\": \"fc2\", \"bytes\": \"2 MiB\", \"tensor\": \"h\"},"
    "{\"from\": \"relu\", \"to\": \"d_fc2\", \"bytes\": \"2 MiB\", \"tensor\": \"h\"},"
    "{\"from\": \"fc2\", \"to\": \"loss\", \"bytes\": \"1 MiB\", \"tensor\": \"y\"},"
    "{\"from\": \"loss\", \"to\": \"d_loss\", \"bytes\": \"1 MiB\", \"tensor\": \"l\"},"
    "{\"from\": \"d_loss\", \"to\": \"d_fc2\", \"bytes\": \"1 MiB\", \"tensor\": \"dy\"},"
    "{\"from\": \"d_fc2\", \"to\": \"d_relu\", \"bytes\": \"2 MiB\", \"tensor\": \"dh\"},"
    "{\"from\": \"d_fc2\", \"to\": \"apply_w2\", \"bytes\": \"2 MiB\", \"tensor\": \"dW2\"},"
    "{\"from\": \"d_relu\", \"to\": \"d_fc1\", \"bytes\": \"2 MiB\", \"tensor\": \"da1\"},"
    "{\"from\": \"d_fc1\", \"to\": \"apply_w1\", \"bytes\": \"4 MiB\", \"tensor\": \"dW1\"}"
    "]}";

/* The training graph around a finalized graph: forward ops are those before the first op
 * named d_*, optimizer ops those named apply_*; parameters as given (param i is the weight of
 * op pw[i], its gradient the tensor named grads[i], updated by op apply[i]). */
static pl_train_graph *wrap(pl_graph *g, int np, const char *const *pw, const char *const *grads,
                            const char *const *apply)
{
    pl_train_graph *t = calloc(1, sizeof *t);
    int n = g->n_ops;
    t->g = g, t->batch = t->model_batch = 1, t->n_fwd = n;
    t->phase = calloc(n, sizeof *t->phase), t->split = calloc(n, sizeof *t->split);
    t->fwd_of = calloc(n, sizeof *t->fwd_of), t->batch_frac = calloc(n, sizeof *t->batch_frac);
    t->batched = calloc(g->n_tensors, sizeof *t->batched);
    for (int i = 0; i < n; i++) {
        const char *name = g->ops[i].name;
        t->phase[i] = !strncmp(name, "apply_", 6) ? PL_PHASE_OPT
                      : !strncmp(name, "d_", 2)   ? PL_PHASE_BWD
                                                  : PL_PHASE_FWD;
        if (t->phase[i] != PL_PHASE_FWD && t->n_fwd == n) t->n_fwd = i;
        t->fwd_of[i] = -1;
    }
    t->n_params = np;
    t->param_tensor = calloc(np ? np : 1, sizeof(int));
    t->grad_tensor = calloc(np ? np : 1, sizeof(int));
    t->apply_op = calloc(np ? np : 1, sizeof(int));
    for (int p = 0; p < np; p++) {
        int op = pl_graph_find_op(g, pw[p]);
        assert_true(op >= 0);
        char w[64];
        snprintf(w, sizeof w, "%s:weights", pw[p]);
        t->param_tensor[p] = pl_graph_find_tensor(g, w);
        t->grad_tensor[p] = pl_graph_find_tensor(g, grads[p]);
        t->apply_op[p] = pl_graph_find_op(g, apply[p]);
        assert_true(t->param_tensor[p] >= 0 && t->grad_tensor[p] >= 0 && t->apply_op[p] >= 0);
    }
    return t;
}

static void unwrap(pl_train_graph *t)
{
    pl_graph_free(t->g);
    free(t->phase), free(t->split), free(t->fwd_of), free(t->batch_frac), free(t->batched);
    free(t->param_tensor), free(t->grad_tensor), free(t->apply_op), free(t);
}

/* A CPU, a V100 and a T4 on one switch. */
static pl_cluster *mixed(void)
{
    return load_text("{\"format\": \"placer-cluster/1\", \"devices\": ["
                     "{\"name\": \"cpu0\", \"model\": \"cpu-generic\"},"
                     "{\"name\": \"v0\", \"model\": \"V100\"},"
                     "{\"name\": \"t0\", \"model\": \"T4\"}],"
                     "\"switches\": [\"sw\"], \"topology_links\": ["
                     "{\"a\": \"cpu0\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
                     "{\"a\": \"v0\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"},"
                     "{\"a\": \"t0\", \"b\": \"sw\", \"bandwidth_Bps\": \"15.75 GB/s\"}]}");
}

/* Every op in exactly one non-empty group, groups numbered by their first op in topological
 * order, ops of a group in topological order, times summed. */
static void check_partition(const pl_train_graph *t, const pl_cost *k, const pl_op_groups *og,
                            int max_groups)
{
    const pl_graph *g = t->g;
    int n = g->n_ops, *seen = calloc(n, sizeof *seen), next = 0;
    assert_true(og->n >= 1 && og->n <= max_groups);
    assert_int_equal(og->off[0], 0);
    assert_int_equal(og->off[og->n], n);
    for (int j = 0; j < og->n; j++) {
        assert_true(og->off[j + 1] > og->off[j]);
        for (int q = og->off[j]; q < og->off[j + 1]; q++) {
            int i = og->op[q];
            assert_int_equal(og->group_of[i], j);
            seen[i]++;
            if (q > og->off[j]) assert_true(g->topo_pos[i] > g->topo_pos[og->op[q - 1]]);
        }
    }
    for (int r = 0; r < n; r++) { /* first appearance in topological order: 0, 1, 2, ... */
        int j = og->group_of[g->topo[r]];
        assert_true(j <= next);
        if (j == next) next++;
    }
    double total = 0, sum = 0;
    for (int i = 0; i < n; i++) {
        assert_int_equal(seen[i], 1);
        total += (pl_cost_op_s(k, i, 1) + pl_cost_op_s(k, i, 2)) / 2; /* GPUs only */
    }
    for (int j = 0; j < og->n; j++)
        sum += og->time_s[j];
    assert_close(sum, total, 1e-9);
    free(seen);
}

static void test_op_groups_mlp(void **state)
{
    (void)state;
    pl_graph *g = tu_taskgraph(mlp_json);
    pl_train_graph *t =
        wrap(g, 2, (const char *const[]){"fc1", "fc2"}, (const char *const[]){"dW1", "dW2"},
             (const char *const[]){"apply_w1", "apply_w2"});
    assert_int_equal(t->n_fwd, 4);
    pl_cluster *c = mixed();
    pl_cost *k = tu_cost(g, c);
    assert_close(pl_cost_op_s(k, 7, 2), 0.016, 1e-12); /* given times are used */
    int d_fc1 = pl_graph_find_op(g, "d_fc1"), d_fc2 = pl_graph_find_op(g, "d_fc2");
    for (int max = 1; max <= 12; max++) {
        pl_op_groups og;
        pl_err err = {""};
        if (pl_op_groups_build(t, k, max, &og, &err) != 0) fail_msg("%s", err.msg);
        check_partition(t, k, &og, max < 10 ? max : 10);
        /* each update with its gradient's producer */
        assert_int_equal(og.group_of[t->apply_op[0]], og.group_of[d_fc1]);
        assert_int_equal(og.group_of[t->apply_op[1]], og.group_of[d_fc2]);
        /* the parameters' bytes where their updates are: 4 MiB + 2 MiB */
        double pb = 0;
        for (int j = 0; j < og.n; j++)
            pb += og.param_bytes[j];
        assert_close(pb, 6.0 * 1048576, 1e-12);
        assert_close(og.param_bytes[og.group_of[t->apply_op[0]]],
                     og.group_of[d_fc1] == og.group_of[d_fc2] ? 6.0 * 1048576 : 4.0 * 1048576,
                     1e-12);
        if (max == 1) assert_int_equal(og.n, 1);
        pl_op_groups_free(&og);
    }
    pl_err err = {""};
    pl_op_groups og;
    assert_int_equal(pl_op_groups_build(t, k, -1, &og, &err), -1);
    assert_contains(err.msg, "positive");
    pl_cost_free(k);
    pl_cluster_free(c);
    unwrap(t);
}

/* Bytes of the edges whose ends are in different groups. */
static double cut_bytes(const pl_graph *g, const int *group_of)
{
    double b = 0;
    for (int e = 0; e < g->n_edges; e++) {
        const pl_edge *x = &g->edges[e];
        if (group_of[x->src] != group_of[x->dst] && g->tensors[x->tensor].bytes > 0)
            b += (double)g->tensors[x->tensor].bytes;
    }
    return b;
}

/* A forward graph taken as a training graph without optimizer: METIS's groups cut fewer bytes
 * than cutting the topological order into as many runs of equal time. */
static void test_op_groups_cut(void **state)
{
    (void)state;
    pl_graph *g = tu_load("models/inception_v3.onnx");
    pl_train_graph *t = wrap(g, 0, NULL, NULL, NULL);
    pl_cluster *c = load("examples/clusters/tag-testbed.json");
    pl_cost *k = tu_cost(g, c);
    pl_op_groups og;
    pl_err err = {""};
    if (pl_op_groups_build(t, k, 0, &og, &err) != 0) fail_msg("%s", err.msg);
    assert_true(og.n > 30 && og.n <= 60);
    int n = g->n_ops, *naive = malloc(n * sizeof *naive);
    double total = 0, run = 0, biggest = 0;
    for (int j = 0; j < og.n; j++)
        total += og.time_s[j], biggest = fmax(biggest, og.time_s[j]);
    for (int r = 0; r < n; r++) {
        int i = g->topo[r];
        double mean = 0;
        for (int d = 0; d < k->n_devs; d++)
            mean += pl_cost_op_s(k, i, d) / k->n_devs;
        naive[i] = (int)fmin(og.n - 1, run / total * og.n);
        run += mean;
    }
    double metis = cut_bytes(g, og.group_of), contiguous = cut_bytes(g, naive);
    print_message("inception_v3: %d groups, cut %.1f MB (METIS) vs %.1f MB (contiguous), the "
                  "largest group %.2f x the mean\n",
                  og.n, metis / 1e6, contiguous / 1e6, biggest / (total / og.n));
    assert_true(metis < contiguous);
    /* balance factor 2: a group above twice the mean owes it to one op that heavy by itself
     * (with, perhaps, views and Constants that weigh next to nothing beside it): without its
     * heaviest op it is within the bound */
    for (int j = 0; j < og.n; j++) {
        if (og.time_s[j] <= 2 * total / og.n) continue;
        double heaviest = 0;
        for (int m = og.off[j]; m < og.off[j + 1]; m++) {
            double mean = 0;
            for (int d = 0; d < k->n_devs; d++)
                mean += pl_cost_op_s(k, og.op[m], d) / k->n_devs;
            heaviest = fmax(heaviest, mean);
        }
        print_message("group %d: %d ops, %.3g s, its heaviest op %.3g s, the mean %.3g s\n", j,
                      og.off[j + 1] - og.off[j], og.time_s[j], heaviest, total / og.n);
        assert_true(og.time_s[j] - heaviest <= 2 * total / og.n);
    }
    free(naive);
    pl_op_groups_free(&og);
    pl_cost_free(k);
    pl_cluster_free(c);
    unwrap(t);
}

/* A ladder: chains a0 -> .. -> a7 and b0 -> .. -> b7 of 1 MiB tensors, rungs a_i -> b_i of
 * 1 byte, every op 1 ms. In two groups, cutting the 8 rungs (8 bytes) beats cutting both
 * chains in the middle (2 MiB + 1 byte), though it cuts more edges: the groups are the two
 * chains only when edge weights are bytes. */
static void test_op_groups_bytes_weigh(void **state)
{
    (void)state;
    char text[8192];
    int m = snprintf(text, sizeof text, "{\"format\": \"placer-taskgraph/1\", \"nodes\": [");
    for (int i = 0; i < 16; i++)
        m += snprintf(text + m, sizeof text - m,
                      "%s{\"name\": \"%c%d\", \"times_s\": {\"V100\": 0.001}}", i ? "," : "",
                      i < 8 ? 'a' : 'b', i % 8);
    m += snprintf(text + m, sizeof text - m, "], \"edges\": [");
    for (int i = 0; i < 8; i++) {
        m += snprintf(text + m, sizeof text - m,
                      "%s{\"from\": \"a%d\", \"to\": \"b%d\", \"bytes\": 1}", i ? "," : "", i, i);
        if (i < 7)
            m += snprintf(text + m, sizeof text - m,
                          ",{\"from\": \"a%d\", \"to\": \"a%d\", \"bytes\": \"1 MiB\"},"
                          "{\"from\": \"b%d\", \"to\": \"b%d\", \"bytes\": \"1 MiB\"}",
                          i, i + 1, i, i + 1);
    }
    snprintf(text + m, sizeof text - m, "]}");
    pl_graph *g = tu_taskgraph(text);
    pl_train_graph *t = wrap(g, 0, NULL, NULL, NULL);
    pl_cluster *c = mixed();
    pl_cost *k = tu_cost(g, c);
    pl_op_groups og;
    pl_err err = {""};
    if (pl_op_groups_build(t, k, 2, &og, &err) != 0) fail_msg("%s", err.msg);
    check_partition(t, k, &og, 2);
    assert_int_equal(og.n, 2);
    for (int i = 0; i < 16; i++)
        if (og.group_of[i] != og.group_of[i < 8 ? 0 : 8] || og.group_of[i] != (i >= 8))
            fail_msg("op %s in group %d", g->ops[i].name, og.group_of[i]);
    assert_close(cut_bytes(g, og.group_of), 8, 1e-12);
    pl_op_groups_free(&og);
    pl_cost_free(k);
    pl_cluster_free(c);
    unwrap(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tag_testbed),           cmocka_unit_test(test_tag_cloud),
        cmocka_unit_test(test_links_split_a_host),    cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_op_groups_mlp),         cmocka_unit_test(test_op_groups_cut),
        cmocka_unit_test(test_op_groups_bytes_weigh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
