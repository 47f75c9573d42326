/* bench_search.c: the configuration search, strategy against strategy (docs/search.md).
 *
 *   bench_search CATALOG... -- MODEL...
 *
 * For each model and catalogue, every configuration is placed once with the same worker
 * `placer deploy` uses (the in-process simulator, moirai with 1 s per trial); the strategies
 * are then replayed against that table (a table worker), 20 seeds for the randomised ones, at
 * SLOs of 1.2× and 2× the fastest latency. Every search runs as `placer deploy` runs it, with
 * its default stop rule (BO's early stop, LCF's first feasible), and BO once more with no early
 * stop. Measured: trials until the optimum (the exhaustive answer) is tried, catalogue size + 1
 * when a strategy ends without it; how often the optimum is tried before the search ends, and
 * after how many trials it ends; the cost regret after 6 trials and of the answer. */
#include "placer/report.h"
#include "placer/search.h"
#include "search_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SEEDS = 20, BUDGET = 6 };

typedef struct stats {
    double trials_sum, regret_sum, ended_sum, answer_regret_sum;
    int runs, within6, no_feasible6, regret_n, found;
} stats;

/* The rows of the summary: every strategy, then BO with no early stop. */
enum { BO_NO_STOP = PL_SEARCH_COUNT, N_RUNS };

/* The time of one GP fit at the size a long search reaches (docs/search.md "Fitting"):
 * n = 40 points, d = 6 features, on a fixed smooth function with a little noise; the mean over
 * FIT_REPS fits, each with its own seed. */
enum { FIT_N = 40, FIT_REPS = 20 };
static void time_gp_fit(void)
{
    double X[FIT_N * PL_N_FEATURES], y[FIT_N];
    uint64_t rng = 7;
    for (int i = 0; i < FIT_N; i++) {
        double s = 0;
        for (int f = 0; f < PL_N_FEATURES; f++) {
            X[i * PL_N_FEATURES + f] = pl_rng_uniform(&rng);
            s += (f + 1) * X[i * PL_N_FEATURES + f];
        }
        y[i] = -0.3 * s + 0.2 * sin(3 * X[i * PL_N_FEATURES]) + 0.01 * pl_rng_uniform(&rng);
    }
    double t0 = pl_now();
    for (unsigned r = 1; r <= FIT_REPS; r++) {
        pl_gp gp;
        pl_err err = {""};
        if (pl_gp_fit(&gp, X, y, FIT_N, PL_N_FEATURES, r, &err) < 0) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
        pl_gp_free(&gp);
    }
    printf("GP fit (pl_gp_fit, n = %d, d = %d): %.1f ms (mean of %d fits)\n", FIT_N, PL_N_FEATURES,
           (pl_now() - t0) / FIT_REPS * 1e3, FIT_REPS);
}

/* One search, with the default stop rule unless `no_stop` (then BO runs the whole catalogue). */
static void one_run(const table *t, pl_search_strategy s, bool no_stop, unsigned seed, double slo,
                    int opt, stats *st)
{
    pl_trial_worker *w = pl_trial_table_new(t->names, t->lat, t->cat->n);
    pl_search_opts o = {.strategy = s, .slo_s = slo, .seed = seed, .stop_prob = no_stop ? -1 : 0};
    pl_search_result r;
    pl_err err = {""};
    if (pl_search_run(t->cat, w, &o, NULL, NULL, &r, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    int at = r.n_candidates + 1;
    double best6 = INFINITY;
    for (int i = 0; i < r.n_trials; i++) {
        if (r.trials[i].config == opt && at > i + 1) at = i + 1;
        if (i < BUDGET && r.trials[i].meets_slo) best6 = fmin(best6, r.trials[i].cost_usd);
    }
    double opt_cost = t->cat->configs[opt].price_usd_per_hour / 3600 * t->lat[opt];
    st->trials_sum += at, st->runs++, st->within6 += at <= BUDGET;
    st->found += at <= r.n_trials, st->ended_sum += r.n_trials;
    /* the answer is the trial at the optimum's cost when found; a search that ends with nothing
     * feasible (LCF cannot, the others only by a stop) counts as 100 % */
    st->answer_regret_sum += r.best >= 0 ? r.trials[r.best].cost_usd / opt_cost - 1 : 1;
    if (isfinite(best6))
        st->regret_sum += best6 / opt_cost - 1, st->regret_n++;
    else
        st->no_feasible6++;
    pl_search_result_free(&r);
    pl_trial_worker_free(w);
}

static bool randomised(pl_search_strategy s)
{
    return s != PL_SEARCH_LCF && s != PL_SEARCH_EXHAUSTIVE;
}

/* Totals over the rows, per strategy (and BO with no early stop). */
typedef struct total {
    double mean_trials_sum; /* sum over rows of the row's mean */
    int rows;
    stats all; /* every run of every row */
} total;

static void add(stats *a, const stats *b)
{
    a->trials_sum += b->trials_sum, a->regret_sum += b->regret_sum;
    a->ended_sum += b->ended_sum, a->answer_regret_sum += b->answer_regret_sum;
    a->runs += b->runs, a->within6 += b->within6, a->no_feasible6 += b->no_feasible6;
    a->regret_n += b->regret_n, a->found += b->found;
}

/* One table row: a model, a catalogue, an SLO; trials to the optimum per strategy, and for BO
 * how often it tried the optimum before its stop and when it stopped. */
static void row(pl_table *tb, const table *t, const char *model, double factor, total *tot)
{
    double fastest = INFINITY;
    for (int k = 0; k < t->cat->n; k++)
        if (!t->cat->configs[k].retired) fastest = fmin(fastest, t->lat[k]);
    double slo = factor * fastest;
    int opt = optimum(t, slo);
    char cells[N_RUNS][24];
    stats bo = {0};
    for (int s = 0; s < N_RUNS; s++) {
        stats st = {0};
        pl_search_strategy strat = s == BO_NO_STOP ? PL_SEARCH_BO : (pl_search_strategy)s;
        for (unsigned seed = 1; seed <= (randomised(strat) ? SEEDS : 1); seed++)
            one_run(t, strat, s == BO_NO_STOP, seed, slo, opt, &st);
        snprintf(cells[s], sizeof cells[s], "%.1f", st.trials_sum / st.runs);
        tot[s].mean_trials_sum += st.trials_sum / st.runs, tot[s].rows++;
        add(&tot[s].all, &st);
        if (s == PL_SEARCH_BO) bo = st;
    }
    pl_table_row(tb, "%s|%s|%.1fx (%.3f ms)|%s|%s|%d/%d|%.1f|%s|%s|%s|%s|%s|%s", base(model),
                 t->cat->name, factor, slo * 1e3, t->cat->configs[opt].name, cells[0], bo.found,
                 bo.runs, bo.ended_sum / bo.runs, cells[BO_NO_STOP], cells[1], cells[2], cells[3],
                 cells[4], cells[5]);
}

static void summary(const total *tot)
{
    pl_table *t = pl_table_new(
        "strategy|>mean trials to the optimum|>optimum within 6 trials|>optimum tried before "
        "the end|>mean trials at the end|>mean cost regret after 6|>mean regret of the "
        "answer|>runs with nothing feasible in 6");
    for (int s = 0; s < N_RUNS; s++) {
        const total *x = &tot[s];
        const stats *a = &x->all;
        pl_table_row(t, "%s|%.2f|%.0f%%|%.1f%% (%d of %d)|%.2f|%.1f%%|%.1f%%|%d of %d",
                     s == BO_NO_STOP ? "bo, no early stop" : pl_search_strategy_name(s),
                     x->mean_trials_sum / x->rows, 100.0 * a->within6 / a->runs,
                     100.0 * a->found / a->runs, a->found, a->runs, a->ended_sum / a->runs,
                     a->regret_n ? 100 * a->regret_sum / a->regret_n : 0,
                     100 * a->answer_regret_sum / a->runs, a->no_feasible6, a->runs);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

int main(int argc, char **argv)
{
    int sep = 1;
    while (sep < argc && strcmp(argv[sep], "--"))
        sep++;
    if (sep == 1 || sep >= argc - 1) {
        fprintf(stderr, "usage: bench_search CATALOG... -- MODEL...\n");
        return 2;
    }
    const char *env = getenv("PLACER_SEARCH_CACHE");
    bool use_cache = env && *env == '1';
    total tot[N_RUNS] = {{0}};
    int n_models = argc - sep - 1;
    pl_trial_worker **workers = calloc(n_models, sizeof *workers);
    pl_table *tb = pl_table_new("model|catalogue|SLO|optimum|>bo|>bo found|>bo ends at|>bo no "
                                "stop|>lcf|>uniform|>ga|>de|>exhaustive");
    for (int c = 1; c < sep; c++) {
        pl_err err = {""};
        pl_catalog *cat = pl_catalog_load(argv[c], &err);
        if (!cat) return fprintf(stderr, "%s\n", err.msg), 1;
        table t = {cat, calloc(cat->n + 1, sizeof(char *)), calloc(cat->n + 1, sizeof(double))};
        for (int m = sep + 1; m < argc; m++) {
            if (fill(&t, argv[m], &workers[m - sep - 1], use_cache) < 0) return 1;
            row(tb, &t, argv[m], 1.2, tot);
            row(tb, &t, argv[m], 2.0, tot);
        }
        free(t.names), free(t.lat);
        pl_catalog_free(cat);
    }
    printf("trials until the exhaustive optimum is tried (mean over %d seeds for bo, uniform, ga, "
           "de; default stop rules; catalogue size + 1 when never); for bo, the runs that tried "
           "the optimum before stopping and the mean trials at the stop\n",
           SEEDS);
    pl_table_print(tb, stdout);
    pl_table_free(tb);
    printf("\n");
    summary(tot);
    printf("\n");
    time_gp_fit();
    for (int m = 0; m < n_models; m++)
        pl_trial_worker_free(workers[m]);
    free(workers);
    return 0;
}
