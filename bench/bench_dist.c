/* bench_dist.c: `placer deploy` over MPI ranks (docs/dist.md "deploy").
 *
 *   bench_dist BUILD MODEL CATALOG SLO CATALOG... -- MODEL...
 *
 * 1. `deploy MODEL --catalog CATALOG --slo SLO --strategy exhaustive --json` under
 *    `mpirun -np 1` and `-np 2` (BUILD/placer-mpi; skipped, saying so, without it or mpirun):
 *    wall time, search time, rounds, the trials' own times, and the per-round overhead
 *    (search time less the start-up and each round's slowest trial, per round).
 * 2. A projection to 8-64 ranks. Model: wall(N) = fixed + sum over rounds of the round's
 *    slowest trial + rounds x per-round overhead, where a trial takes what it took in the
 *    one-rank run, exhaustive's rounds are its catalogue order cut in N, and fixed (launch,
 *    loading, report) and the overhead are the two-rank run's. BO's rounds are the replayed
 *    mean with batch N (3. below), its round the expected slowest of N trials drawn from the
 *    measured ones, plus the replay's proposal time per round (fit + believer).
 * 3. BO replayed on cached tables (search_table.h: bench_search's, which `make bench` runs just
 *    before) for every CATALOG x MODEL at SLOs of 1.2x and 2x the fastest, SEEDS seeds, with
 *    batches 1 (sequential), 2, 4, 8 and, for the projection, 16, 32, 64: how often the
 *    exhaustive optimum is tried before BO stops, the trials and rounds until it is (over the
 *    runs that try it), trials and rounds at the stop, and the proposals' time per round. */
#include "placer/report.h"
#include "placer/search.h"
#include "search_table.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SEEDS = 10, MAX_TRIALS = 256, N_BATCH = 7 };
static const int BATCHES[N_BATCH] = {1, 2, 4, 8, 16, 32, 64};
static const int PROJECT[] = {1, 2, 8, 16, 32, 64};

/* ---- 1. deploy under mpirun ---- */

typedef struct deploy_run {
    bool ok;
    double wall_s, search_s, startup_s, overhead_s;
    int rounds, n;
    double work_s[MAX_TRIALS];
    int round[MAX_TRIALS];
    char chosen[128];
} deploy_run;

/* Runs `cmd`, its stdout parsed as the deploy JSON into *d; false (saying why) when it fails. */
static bool run_deploy(const char *cmd, deploy_run *d)
{
    *d = (deploy_run){0};
    double t0 = pl_now();
    FILE *f = popen(cmd, "r");
    if (!f) return false;
    json_error_t je;
    json_t *doc = json_loadf(f, 0, &je);
    int status = pclose(f);
    d->wall_s = pl_now() - t0;
    if (!doc || status != 0) {
        fprintf(stderr, "bench_dist: %s: exit %d%s%s\n", cmd, status, doc ? "" : ", ",
                doc ? "" : je.text);
        json_decref(doc);
        return false;
    }
    json_t *trials = json_object_get(doc, "trials");
    d->n = (int)json_array_size(trials);
    if (d->n > MAX_TRIALS) d->n = MAX_TRIALS;
    for (int i = 0; i < d->n; i++) {
        json_t *t = json_array_get(trials, i);
        d->work_s[i] = json_number_value(json_object_get(t, "work_s"));
        d->round[i] = (int)json_integer_value(json_object_get(t, "round"));
    }
    d->search_s = json_number_value(json_object_get(doc, "search_s"));
    d->startup_s = json_number_value(json_object_get(doc, "startup_s"));
    d->rounds = (int)json_integer_value(json_object_get(doc, "rounds"));
    const char *c = json_string_value(json_object_get(doc, "chosen"));
    snprintf(d->chosen, sizeof d->chosen, "%s", c ? c : "(none)");
    /* what the rounds cost beyond their slowest trials */
    double slowest = 0;
    for (int r = 1; r <= d->rounds; r++) {
        double m = 0;
        for (int i = 0; i < d->n; i++)
            if (d->round[i] == r) m = fmax(m, d->work_s[i]);
        slowest += m;
    }
    d->overhead_s = d->rounds ? (d->search_s - d->startup_s - slowest) / d->rounds : 0;
    json_decref(doc);
    return d->ok = true;
}

static bool have_mpi(const char *build)
{
    char bin[512];
    snprintf(bin, sizeof bin, "%s/placer-mpi", build);
    return access(bin, X_OK) == 0 && system("command -v mpirun >/dev/null 2>&1") == 0;
}

static void deploy_cmd(char *cmd, size_t n, const char *build, int np, const char *model,
                       const char *cat, const char *slo)
{
    snprintf(cmd, n,
             "mpirun -np %d --oversubscribe%s %s/placer-mpi deploy %s --catalog %s --slo %s "
             "--strategy exhaustive --json 2>/dev/null",
             np, geteuid() == 0 ? " --allow-run-as-root" : "", build, model, cat, slo);
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n ? s / n : 0;
}

static void print_runs(const deploy_run *run, int n_runs)
{
    pl_table *t = pl_table_new("ranks|>wall s|>search s|>start-up s|>rounds|>trials|>mean trial "
                               "s|>overhead per round ms|chosen");
    for (int i = 0; i < n_runs; i++) {
        const deploy_run *d = &run[i];
        pl_table_row(t, "%d|%.2f|%.2f|%.2f|%d|%d|%.3f|%.2f|%s", i + 1, d->wall_s, d->search_s,
                     d->startup_s, d->rounds, d->n, mean(d->work_s, d->n), d->overhead_s * 1e3,
                     d->chosen);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

/* ---- 3. BO with batches, replayed ---- */

typedef struct batch_stats {
    double trials_sum, rounds_sum, end_trials_sum, end_rounds_sum, propose_s_sum;
    int runs, found;
    double clouds_end_rounds_sum; /* on the projection's catalogue only */
    int clouds_runs;
} batch_stats;

static void bo_run(const table *t, int batch, unsigned seed, double slo, int opt, bool proj,
                   batch_stats *st)
{
    pl_trial_worker *w = pl_trial_table_new(t->names, t->lat, t->cat->n);
    pl_search_opts o = {.strategy = PL_SEARCH_BO, .slo_s = slo, .seed = seed, .batch = batch};
    pl_search_result r;
    pl_err err = {""};
    if (pl_search_run(t->cat, w, &o, NULL, NULL, &r, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    int at = -1;
    for (int i = 0; i < r.n_trials && at < 0; i++)
        if (r.trials[i].config == opt) at = i;
    st->runs++, st->found += at >= 0;
    if (at >= 0) st->trials_sum += at + 1, st->rounds_sum += r.trials[at].round;
    st->end_trials_sum += r.n_trials, st->end_rounds_sum += r.n_rounds;
    st->propose_s_sum += r.n_rounds ? r.total_s / r.n_rounds : 0; /* the trials cost nothing */
    if (proj) st->clouds_end_rounds_sum += r.n_rounds, st->clouds_runs++;
    pl_search_result_free(&r);
    pl_trial_worker_free(w);
}

static void bo_rows(const table *t, bool proj, batch_stats *st)
{
    double fastest = INFINITY;
    for (int k = 0; k < t->cat->n; k++)
        if (!t->cat->configs[k].retired) fastest = fmin(fastest, t->lat[k]);
    for (double factor = 1.2; factor < 2.5; factor += 0.8) {
        int opt = optimum(t, factor * fastest);
        for (int b = 0; b < N_BATCH; b++)
            for (unsigned seed = 1; seed <= SEEDS; seed++)
                bo_run(t, BATCHES[b], seed, factor * fastest, opt, proj, &st[b]);
    }
}

static void print_batches(const batch_stats *st)
{
    pl_table *t = pl_table_new("batch|>mean trials to the optimum|>mean rounds to the "
                               "optimum|>optimum tried before the stop|>mean trials at the "
                               "stop|>mean rounds at the stop|>proposals per round ms");
    for (int b = 0; b < N_BATCH; b++) {
        const batch_stats *s = &st[b];
        pl_table_row(t, "%d%s|%.2f|%.2f|%.1f%%|%.2f|%.2f|%.2f", BATCHES[b],
                     b == 0 ? " (sequential)" : "", s->trials_sum / s->found,
                     s->rounds_sum / s->found, 100.0 * s->found / s->runs,
                     s->end_trials_sum / s->runs, s->end_rounds_sum / s->runs,
                     s->propose_s_sum / s->runs * 1e3);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

/* ---- 2. the projection ---- */

/* Exhaustive with N ranks: rounds of N trials in catalogue order, each as slow as its slowest. */
static double exhaustive_rounds_s(const deploy_run *one, int N, int *rounds)
{
    double s = 0;
    *rounds = 0;
    for (int i = 0; i < one->n; i += N, ++*rounds) {
        double m = 0;
        for (int j = i; j < i + N && j < one->n; j++)
            m = fmax(m, one->work_s[j]);
        s += m;
    }
    return s;
}

/* The expected slowest of N trials drawn (with replacement) from the measured ones. */
static double expected_max(const deploy_run *one, int N)
{
    uint64_t rng = 12345;
    double s = 0;
    enum { DRAWS = 2000 };
    for (int d = 0; d < DRAWS; d++) {
        double m = 0;
        for (int j = 0; j < N; j++)
            m = fmax(m, one->work_s[pl_rng_below(&rng, one->n)]);
        s += m;
    }
    return s / DRAWS;
}

static void print_projection(const deploy_run *one, const deploy_run *two, const batch_stats *st)
{
    double fixed = two->wall_s - two->search_s + two->startup_s, o = fmax(two->overhead_s, 0);
    pl_table *t = pl_table_new("ranks|>exhaustive rounds|>exhaustive s|>speed-up|>bo rounds (batch "
                               "= ranks)|>bo s|>bo speed-up");
    double ex1 = 0, bo1 = 0;
    for (size_t i = 0; i < sizeof PROJECT / sizeof *PROJECT; i++) {
        int N = PROJECT[i], rounds, b = 0;
        double ex = fixed + exhaustive_rounds_s(one, N, &rounds) + rounds * o;
        while (BATCHES[b] != N)
            b++;
        const batch_stats *s = &st[b];
        double bo_rounds = s->clouds_runs ? s->clouds_end_rounds_sum / s->clouds_runs : NAN;
        double bo = fixed + bo_rounds * (expected_max(one, N) + o + s->propose_s_sum / s->runs);
        if (i == 0) ex1 = ex, bo1 = bo;
        pl_table_row(t, "%d|%d|%.1f|%.1fx|%.2f|%.1f|%.1fx", N, rounds, ex, ex1 / ex, bo_rounds, bo,
                     bo1 / bo);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf(
        "model: wall(N) = %.2f s fixed (launch, loading, report; 2 ranks) + each round's slowest "
        "trial (as measured with 1 rank) + %.1f ms per round (2 ranks) [+ BO's proposal time "
        "per round, replayed]; one core per rank; the catalogue's %d trials\n",
        fixed, o * 1e3, one->n);
}

int main(int argc, char **argv)
{
    int sep = 5;
    while (sep < argc && strcmp(argv[sep], "--"))
        sep++;
    if (argc < 8 || sep >= argc - 1) {
        fprintf(stderr, "usage: bench_dist BUILD MODEL CATALOG SLO CATALOG... -- MODEL...\n");
        return 2;
    }
    const char *build = argv[1], *dmodel = argv[2], *dcat = argv[3], *slo = argv[4];
    deploy_run run[2];
    bool mpi = have_mpi(build);
    printf("-- deploy %s --catalog %s --slo %s --strategy exhaustive, 1 and 2 ranks\n", dmodel,
           dcat, slo);
    if (mpi) {
        char cmd[2048];
        for (int np = 1; np <= 2 && mpi; np++) {
            deploy_cmd(cmd, sizeof cmd, build, np, dmodel, dcat, slo);
            mpi = run_deploy(cmd, &run[np - 1]);
        }
    }
    if (mpi)
        print_runs(run, 2);
    else
        printf("skipped: no %s/placer-mpi or no mpirun, or a run failed (MPI is optional: "
               "docs/dist.md)\n",
               build);
    batch_stats st[N_BATCH] = {{0}};
    /* bench_search's tables, as it left them: only when asked (make bench runs bench_search
     * first); else placed afresh, since a cached table outlives any change to the placers */
    const char *env = getenv("PLACER_SEARCH_CACHE");
    bool use_cache = env && *env == '1';
    int n_models = argc - sep - 1;
    pl_trial_worker **workers = calloc(n_models, sizeof *workers);
    for (int c = 5; c < sep; c++) {
        pl_err err = {""};
        pl_catalog *cat = pl_catalog_load(argv[c], &err);
        if (!cat) return fprintf(stderr, "%s\n", err.msg), 1;
        table t = {cat, calloc(cat->n + 1, sizeof(char *)), calloc(cat->n + 1, sizeof(double))};
        for (int m = sep + 1; m < argc; m++) {
            if (fill(&t, argv[m], &workers[m - sep - 1], use_cache) < 0) return 1;
            bo_rows(&t, !strcmp(argv[c], dcat), st);
        }
        free(t.names), free(t.lat);
        pl_catalog_free(cat);
    }
    if (mpi) {
        printf("\n-- projection to 8-64 ranks (exhaustive and BO on %s)\n", dcat);
        print_projection(&run[0], &run[1], st);
    }
    printf("\n-- BO's trials and rounds to the exhaustive optimum by batch (the Kriging believer; "
           "every model x catalogue, SLOs 1.2x and 2x the fastest, %d seeds, default stop; "
           "trials and rounds to the optimum over the runs that tried it)\n",
           SEEDS);
    print_batches(st);
    for (int m = 0; m < n_models; m++)
        pl_trial_worker_free(workers[m]);
    free(workers);
    return 0;
}
