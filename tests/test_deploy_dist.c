/* test_deploy_dist.c: `placer deploy` in rounds (docs/search.md "Rounds and batches",
 * docs/dist.md "deploy"): BO's batch of proposals in one process (the Kriging believer), the
 * plan sent between ranks as bytes, and deploy under `mpirun -np 2` giving the one-process
 * answer with every trial run once (skipped, saying so, without MPI). */
#include "testutil.h"

#include "placer/search.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TESTBED "catalogs/autodeep-testbed.json"

/* A latency with the shape of the real thing (as test_search.c): per-GPU speed, a parallel
 * part that shrinks with more GPUs and a communication part that grows. Seconds. */
static double model_latency(const pl_vm_config *c)
{
    double speed = strstr(c->gpu_model, "P100")   ? 3.0
                   : strstr(c->gpu_model, "1080") ? 1.6
                   : strstr(c->gpu_model, "980")  ? 1.0
                                                  : 0.8;
    int n = c->gpu_count;
    return 0.040 / speed * (0.4 + 0.6 / n) + 0.002 * (n - 1);
}

/* The testbed with a twin of every configuration: the same machine (the same features and
 * latency) named NAME' at 1.0001 x the price. Without a believer a batch would take the best
 * configuration and then its twin, whose acquisition is the same to four digits. */
static pl_catalog *twins(void)
{
    json_error_t je;
    json_t *doc = json_load_file(TESTBED, 0, &je), *configs = json_object_get(doc, "configs");
    assert_non_null(configs);
    size_t n = json_array_size(configs);
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_deep_copy(json_array_get(configs, i));
        char name[128];
        snprintf(name, sizeof name, "%s'", json_string_value(json_object_get(c, "name")));
        json_object_set_new(c, "name", json_string(name));
        double price = json_real_value(json_object_get(c, "price_usd_per_hour"));
        json_object_set_new(c, "price_usd_per_hour", json_real(price * 1.0001));
        json_array_append_new(configs, c);
    }
    char *text = json_dumps(doc, 0);
    pl_err err = {""};
    pl_catalog *cat = pl_catalog_load_buffer(text, strlen(text), "twins.json", &err);
    if (!cat) fail_msg("%s", err.msg);
    assert_int_equal(cat->n, 30);
    free(text);
    json_decref(doc);
    return cat;
}

static pl_search_result run_bo(const pl_catalog *c, int batch, int budget, unsigned seed)
{
    const char **names = calloc(c->n, sizeof *names);
    double *lat = calloc(c->n, sizeof *lat);
    for (int k = 0; k < c->n; k++)
        names[k] = c->configs[k].name, lat[k] = model_latency(&c->configs[k]);
    pl_trial_worker *w = pl_trial_table_new(names, lat, c->n);
    pl_search_opts o = {.strategy = PL_SEARCH_BO,
                        .slo_s = 0.02,
                        .budget_trials = budget,
                        .seed = seed,
                        .batch = batch,
                        .stop_prob = -1};
    pl_search_result r;
    pl_err err = {""};
    if (pl_search_run(c, w, &o, NULL, NULL, &r, &err) < 0) fail_msg("%s", err.msg);
    pl_trial_worker_free(w);
    free(names), free(lat);
    return r;
}

/* Whether configurations a and b are twins (one is the other's NAME'). */
static bool twin_of(const pl_catalog *c, int a, int b)
{
    const char *x = c->configs[a].name, *y = c->configs[b].name;
    size_t nx = strlen(x), ny = strlen(y);
    return (nx + 1 == ny && !strncmp(x, y, nx)) || (ny + 1 == nx && !strncmp(x, y, ny));
}

/* Rounds of four: the first round is the two space-filling trials (BO's default start), every
 * later round four proposals (the last may be cut by the budget); a configuration is never
 * tried twice; the rounds are numbered 1, 2, ... in the order tried. */
static void test_batch_rounds(void **state)
{
    (void)state;
    pl_catalog *c = twins();
    pl_search_result r = run_bo(c, 4, 12, 1);
    assert_int_equal(r.n_trials, 12);
    assert_int_equal(r.batch, 4);
    assert_int_equal(r.ranks, 1);
    assert_int_equal(r.n_rounds, 4); /* 2 + 4 + 4 + 2 */
    static const int round_of[12] = {1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4};
    for (int i = 0; i < r.n_trials; i++) {
        assert_int_equal(r.trials[i].round, round_of[i]);
        assert_int_equal(r.trials[i].rank, 0);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(r.trials[i].config, r.trials[j].config);
    }
    pl_search_result_free(&r);
    pl_catalog_free(c);
}

/* A round's first proposal is the one the sequential search makes from the same trials: after
 * the same two-trial start, the batch's third trial is the sequential search's third. */
static void test_batch_first_is_sequential(void **state)
{
    (void)state;
    pl_catalog *c = twins();
    for (unsigned seed = 1; seed <= 4; seed++) {
        pl_search_result one = run_bo(c, 1, 3, seed), four = run_bo(c, 4, 6, seed);
        assert_int_equal(one.n_rounds, 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(one.trials[i].config, four.trials[i].config);
        assert_true(one.trials[2].acquisition == four.trials[2].acquisition);
        pl_search_result_free(&one);
        pl_search_result_free(&four);
    }
    pl_catalog_free(c);
}

/* The believer is applied: once a configuration is proposed, its own prediction is taken as
 * its trial, which collapses the spread of its twin (the same features and latency, 0.01 %
 * dearer) and, when the prediction meets the SLO, makes the proposal's believed cost the one
 * to beat. Without the belief the twin's acquisition would equal the proposal's to four digits
 * and the twin would be the round's next proposal; with it, a twin proposed in the same round
 * (it can still be, when the belief leaves every other configuration hopeless) scores at most
 * half what its twin did. Seed 4's second round is such a case (1080 x1 and 1080 x1'). */
static void test_batch_believer(void **state)
{
    (void)state;
    pl_catalog *c = twins();
    int pairs = 0;
    for (unsigned seed = 1; seed <= 6; seed++) {
        pl_search_result r = run_bo(c, 4, 14, seed);
        for (int i = 2; i < r.n_trials; i++) {
            const pl_trial_record *t = &r.trials[i];
            for (int j = 2; j < i; j++) {
                const pl_trial_record *u = &r.trials[j];
                if (u->round != t->round || !twin_of(c, t->config, u->config)) continue;
                pairs++;
                if (!(t->acquisition <= 0.5 * u->acquisition))
                    fail_msg("seed %u, round %d: %s scored %g after its twin %s's %g", seed,
                             t->round, c->configs[t->config].name, t->acquisition,
                             c->configs[u->config].name, u->acquisition);
            }
        }
        pl_search_result_free(&r);
    }
    assert_true(pairs >= 1); /* seed 4's */
    pl_catalog_free(c);
}

/* The same seed and batch give the same trials, acquisitions to the bit. */
static void test_batch_deterministic(void **state)
{
    (void)state;
    pl_catalog *c = twins();
    pl_search_result a = run_bo(c, 4, 14, 7), b = run_bo(c, 4, 14, 7);
    assert_int_equal(a.n_trials, b.n_trials);
    for (int i = 0; i < a.n_trials; i++) {
        assert_int_equal(a.trials[i].config, b.trials[i].config);
        assert_memory_equal(&a.trials[i].acquisition, &b.trials[i].acquisition, sizeof(double));
    }
    pl_search_result_free(&a);
    pl_search_result_free(&b);
    pl_catalog_free(c);
}

/* pl_plan_pack / pl_plan_unpack: everything travels (placement, order, priority, transfer
 * order, algorithm, figures); bytes of another length are refused. */
static void test_plan_bytes(void **state)
{
    (void)state;
    pl_plan *p = pl_plan_new(3, 2);
    p->dev[0] = 1, p->dev[1] = 0, p->dev[2] = 1;
    pl_plan_set_order(p, (int[]){2, 0, 1});
    p->priority = malloc(3 * sizeof *p->priority);
    p->priority[0] = 0.5, p->priority[1] = 1.5, p->priority[2] = -2;
    pl_plan_set_xfer_priority(p, 2, (double[]){7, 8});
    snprintf(p->algo, sizeof p->algo, "heft");
    p->predicted_makespan_s = 0.25;
    size_t len;
    void *buf = pl_plan_pack(p, &len);
    pl_plan *q = pl_plan_unpack(buf, len);
    assert_non_null(q);
    assert_int_equal(q->n_ops, 3);
    assert_int_equal(q->n_devs, 2);
    assert_memory_equal(q->dev, p->dev, 3 * sizeof *q->dev);
    /* the sequence 2, 0, 1 per device: device 0 runs op 1; device 1 runs op 2, then op 0 */
    static const int order[3] = {1, 2, 0}, off[3] = {0, 1, 3};
    static const double xfer[2] = {7, 8};
    assert_memory_equal(q->order, order, sizeof order);
    assert_memory_equal(q->order_off, off, sizeof off);
    assert_memory_equal(q->priority, p->priority, 3 * sizeof *q->priority);
    assert_int_equal(q->n_edges, 2);
    assert_memory_equal(q->xfer_priority, xfer, sizeof xfer);
    assert_string_equal(q->algo, "heft");
    assert_true(q->predicted_makespan_s == 0.25);
    assert_null(pl_plan_unpack(buf, len - 1));
    assert_null(pl_plan_unpack(buf, 8));
    pl_plan_free(q);
    free(buf);
    /* no order, priority or transfer order: absent after the trip too */
    pl_plan_clear_schedule(p);
    buf = pl_plan_pack(p, &len);
    q = pl_plan_unpack(buf, len);
    assert_non_null(q);
    assert_null(q->order);
    assert_null(q->priority);
    assert_null(q->xfer_priority);
    assert_memory_equal(q->dev, p->dev, 3 * sizeof *q->dev);
    pl_plan_free(q), pl_plan_free(p), free(buf);
}

/* ---- under mpirun ---- */

/* SLO 6.2 ms: the cheapest per request, 980Ti x1 (trial 1, 6.48 ms), misses it, so the answer
 * is 1080 x1 (5.96 ms), trial 4, on rank 1 under two ranks: its plan must cross to rank 0. */
#define DEPLOY "deploy models/rnnlm.onnx --catalog " TESTBED " --slo 6.2ms --algos heft --json"

/* The configuration names of a deploy document's trials, in order, each checked once. */
static int trial_names(json_t *doc, const char **names, int cap)
{
    json_t *trials = json_object_get(doc, "trials");
    int n = (int)json_array_size(trials);
    assert_true(n <= cap);
    for (int i = 0; i < n; i++) {
        names[i] = json_string_value(json_object_get(json_array_get(trials, i), "configuration"));
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j])) fail_msg("%s tried twice", names[i]);
    }
    return n;
}

/* The same trials (configuration, latency, cost), the same choice. */
static void same_search(json_t *a, json_t *b)
{
    assert_string_equal(json_string_value(json_object_get(a, "chosen")),
                        json_string_value(json_object_get(b, "chosen")));
    json_t *ta = json_object_get(a, "trials"), *tb = json_object_get(b, "trials");
    assert_int_equal(json_array_size(ta), json_array_size(tb));
    for (size_t i = 0; i < json_array_size(ta); i++) {
        json_t *x = json_array_get(ta, i), *y = json_array_get(tb, i);
        assert_string_equal(json_string_value(json_object_get(x, "configuration")),
                            json_string_value(json_object_get(y, "configuration")));
        assert_true(tu_num(x, "latency_s") == tu_num(y, "latency_s"));
        assert_true(tu_num(x, "usd_per_request") == tu_num(y, "usd_per_request"));
    }
}

/* A plan file without its search time (the one field that is a wall time). */
static json_t *plan_without_time(const char *path)
{
    json_error_t je;
    json_t *p = json_load_file(path, 0, &je);
    if (!p) fail_msg("%s: %s", path, je.text);
    assert_int_equal(json_object_del(p, "search_s"), 0);
    return p;
}

/* Exhaustive over two ranks: the one-process answer (every trial, the choice, the plan file
 * but for its search time), each of the 15 configurations tried once, trial i on rank i % 2
 * (the winner, 1080 x1, is trial 4: rank 1's, so its plan crossed to rank 0 for -o). */
static void test_exhaustive_two_ranks(void **state)
{
    (void)state;
    char dir[256], args[1024];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "placer-deploy-dist"), 0);
    snprintf(args, sizeof args, DEPLOY " --strategy exhaustive -o %s/one.json 2>/dev/null", dir);
    json_t *one = tu_run_json(args);
    if (!tu_mpi_begin(2)) {
        json_decref(one);
        tu_rmtree(dir);
        skip();
    }
    snprintf(args, sizeof args, DEPLOY " --strategy exhaustive -o %s/two.json 2>/dev/null", dir);
    json_t *two = tu_run_json(args);
    tu_mpi_end();
    const char *names[32];
    assert_int_equal(trial_names(two, names, 32), 15);
    same_search(one, two);
    assert_string_equal(json_string_value(json_object_get(two, "chosen")), "1080 x1");
    assert_int_equal(tu_num(two, "ranks"), 2);
    assert_int_equal(tu_num(two, "rounds"), 8);
    json_t *found = json_object_get(two, "found_at");
    assert_int_equal(tu_num(found, "trial"), 4);
    assert_int_equal(tu_num(found, "round"), 2);
    json_t *trials = json_object_get(two, "trials");
    for (int i = 0; i < 15; i++) {
        json_t *t = json_array_get(trials, i);
        assert_int_equal(tu_num(t, "rank"), i % 2);
        assert_int_equal(tu_num(t, "round"), i / 2 + 1);
        assert_non_null(json_string_value(json_object_get(t, "host")));
    }
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/one.json", dir);
    snprintf(p2, sizeof p2, "%s/two.json", dir);
    json_t *a = plan_without_time(p1), *b = plan_without_time(p2);
    assert_true(json_equal(a, b));
    json_decref(a), json_decref(b);
    json_decref(one), json_decref(two);
    tu_rmtree(dir);
}

/* BO over two ranks: the same answer run to run for a seed, every trial once, and the very
 * trials of one process with --batch 2 (rounds of two, run one after the other). */
static void test_bo_two_ranks(void **state)
{
    (void)state;
    json_t *seq = tu_run_json(DEPLOY " --strategy bo --seed 3 --batch 2 2>/dev/null");
    if (!tu_mpi_begin(2)) {
        json_decref(seq);
        skip();
    }
    json_t *a = tu_run_json(DEPLOY " --strategy bo --seed 3 2>/dev/null");
    json_t *b = tu_run_json(DEPLOY " --strategy bo --seed 3 2>/dev/null");
    tu_mpi_end();
    const char *names[32];
    int n = trial_names(a, names, 32);
    assert_true(n >= 3);
    same_search(a, b);
    same_search(seq, a);
    assert_int_equal(tu_num(a, "batch"), 2);
    json_t *trials = json_object_get(a, "trials");
    for (int i = 0; i < n; i++)
        assert_int_equal(tu_num(json_array_get(trials, i), "rank"), i % 2);
    json_decref(seq), json_decref(a), json_decref(b);
}

/* ---- --measured (docs/search.md "Measured trials") ---- */

/* A catalogue of this machine's CPU as one device and as two
 * (examples/clusters/local-cpu-percore.json embedded), written to a temporary file whose path is
 * returned (static buffer). */
static const char *cpu_catalog(void)
{
    json_error_t je;
    json_t *cl = json_load_file("examples/clusters/local-cpu-percore.json", 0, &je);
    assert_non_null(cl);
    json_t *configs = json_array();
    for (int n = 1; n <= 2; n++) {
        json_t *c = json_deep_copy(cl);
        json_object_set_new(json_array_get(json_object_get(c, "devices"), 0), "count",
                            json_integer(n));
        if (n == 1) json_object_set_new(c, "links", json_array());
        json_array_append_new(configs, json_pack("{s:s, s:s, s:f, s:s, s:s, s:o}", "name",
                                                 n == 1 ? "one" : "two", "provider", "local",
                                                 "price_usd_per_hour", 0.05 * n, "price_date",
                                                 "2026", "price_source", "test", "cluster", c));
    }
    json_t *cat = json_pack("{s:s, s:s, s:s, s:s, s:o}", "format", "placer-catalog/1", "name",
                            "local", "description", "test", "source", "test", "configs", configs);
    char *text = json_dumps(cat, 0);
    const char *path = tu_tmpfile(text, strlen(text), ".json");
    free(text);
    json_decref(cat), json_decref(cl);
    return path;
}

/* Refused before anything runs: a catalogue with GPUs (naming the configuration), --dim. */
static void test_measured_refusals(void **state)
{
    (void)state;
    tu_expect_refusal("deploy models/gcn_cora.onnx --catalog " TESTBED " --slo 50ms --measured",
                      "--measured: configuration 980Ti x1: device 'gpu0' is a gpu");
    tu_expect_refusal("deploy models/gcn_cora.onnx --catalog " TESTBED
                      " --slo 50ms --measured --dim N=2",
                      "--measured runs the model file as it is");
}

/* Every trial's latency is the measurement of its plan on this machine, which names itself as
 * the host; the prediction (the same search without --measured) is not what is reported. */
static void test_measured_trials(void **state)
{
    (void)state;
    tu_require_ort();
    char args[1024], host[256] = "";
    const char *cat = cpu_catalog();
    snprintf(args, sizeof args,
             "deploy models/gcn_cora.onnx --catalog %s --slo 1s --algos heft "
             "--strategy exhaustive --json 2>/dev/null",
             cat);
    json_t *pred = tu_run_json(args);
    snprintf(args, sizeof args,
             "deploy models/gcn_cora.onnx --catalog %s --slo 1s --algos heft "
             "--strategy exhaustive --json --measured 2>/dev/null",
             cat);
    json_t *meas = tu_run_json(args);
    assert_true(json_is_true(json_object_get(meas, "measured")));
    assert_true(json_is_false(json_object_get(pred, "measured")));
    gethostname(host, sizeof host - 1);
    json_t *tp = json_object_get(pred, "trials"), *tm = json_object_get(meas, "trials");
    assert_int_equal(json_array_size(tm), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *t = json_array_get(tm, i);
        double lat = tu_num(t, "latency_s");
        assert_true(lat > 0 && isfinite(lat));
        assert_true(lat != tu_num(json_array_get(tp, i), "latency_s"));
        assert_string_equal(json_string_value(json_object_get(t, "host")), host);
    }
    json_decref(pred), json_decref(meas);
}

/* Two ranks on one machine would time each other: refused (exit 2), naming the shared host,
 * once (rank 0 says it). */
static void test_measured_shared_host(void **state)
{
    (void)state;
    char args[1024], *out = NULL, host[256] = "", want[300];
    snprintf(args, sizeof args, "deploy models/gcn_cora.onnx --catalog %s --slo 1s --measured",
             cpu_catalog());
    if (!tu_mpi_begin(2)) skip();
    int rc = tu_run(args, &out);
    tu_mpi_end();
    assert_int_equal(rc, 2);
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, "--measured: ranks 0 and 1 share the host '%s'", host);
    assert_contains(out, want);
    const char *first = strstr(out, "share the host");
    assert_null(strstr(first + 1, "share the host"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_rounds),    cmocka_unit_test(test_batch_first_is_sequential),
        cmocka_unit_test(test_batch_believer),  cmocka_unit_test(test_batch_deterministic),
        cmocka_unit_test(test_plan_bytes),      cmocka_unit_test(test_exhaustive_two_ranks),
        cmocka_unit_test(test_bo_two_ranks),    cmocka_unit_test(test_measured_refusals),
        cmocka_unit_test(test_measured_trials), cmocka_unit_test(test_measured_shared_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
