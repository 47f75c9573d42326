/* deploy.c: `placer deploy MODEL --catalog CAT --slo 50ms`: the cheapest configuration of a
 * catalogue, with its placement, whose predicted latency meets the SLO (AutoDeep; the main
 * job). docs/search.md. */
#include "cli.h"

#include "placer/dist.h"
#include "placer/report.h"
#include "placer/search.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer deploy MODEL --catalog CAT --slo 50ms [--budget 6 | --budget 60s]\n"
    "                     [--strategy bo|lcf|uniform|ga|de|exhaustive] [--algos LIST]\n"
    "                     [--place-time 1s] [--place-episodes N] [--seed N] [--batch Q]\n"
    "                     [--include-retired] [-o plan.json] [--optimize] [--measured]\n"
    "                     [--json] [--contention X] [--dim N=V]... [--input NAME=SIZES]...\n"
    "  --optimize       rewrite the model first, once (TASO's search priced on this machine's\n"
    "                   CPU, as `placer optimize`; AutoDeep runs TASO before its search); every\n"
    "                   trial places the result, kept in the cache (its path is on stderr)\n"
    "  --slo T          the latency a request must meet (with a unit: 50ms, 0.05s)\n"
    "  --budget N|T     at most N trials, or T of search (with a unit); both may be given\n"
    "  --strategy S     bo (default: Bayesian optimisation, AutoDeep), lcf (lowest price\n"
    "                   first), uniform (random order), ga, de, exhaustive (every one)\n"
    "  --algos LIST     placement algorithms each trial runs (default moirai, which also runs\n"
    "                   every heuristic), or drl (AutoDeep's learned placer); --place-time\n"
    "                   is moirai's and drl's limit per trial (1 s)\n"
    "  --place-episodes N  drl's episode budget per trial (without --place-time, the only\n"
    "                   one); its progress shows per trial\n"
    "  --measured       each trial's plan is run on this machine (onnxruntime, on the\n"
    "                   machine of the rank that runs the trial under mpirun) and its\n"
    "                   measured latency is the trial's; every configuration must be CPUs\n"
    "                   only, and under mpirun no two ranks may share a host\n"
    "  --batch Q        trials per round (default: the number of ranks, 1 without mpirun);\n"
    "                   under mpirun a round's trials run one per rank; bo, ga and de propose\n"
    "                   a round's Q configurations together (docs/search.md)\n"
    "  --cost-params F  the cost model's efficiencies from `placer calibrate -o`\n"
    "  -o FILE          write the chosen plan (simulate it with --catalog CAT --config NAME)\n"
    "exit status: 0 done, 1 no configuration tried meets the SLO, 2 bad input or failure\n";

typedef struct deploy_args {
    cli_common co;
    const char *out, *algos;
    pl_search_opts so;
    double place_time_s;
    int place_episodes;
    bool learned; /* --algos names a learned algorithm */
    bool optimize, measured;
    char optimized[4096]; /* the --optimize result's path */
    pl_cost_params params;
} deploy_args;

/* A trial count when the value is a bare whole number (sign included, so that "-3" is refused
 * as a count), else a duration with its unit. */
static int parse_budget(const char *v, pl_search_opts *o)
{
    if (!v)
        return cli_error("deploy", "--budget wants a trial count (6) or a time with a unit (60s)");
    if (*v && strspn(v, "-0123456789") == strlen(v)) {
        long n;
        if (cli_count("deploy", "--budget", v, 1, 100000, &n) < 0) return -1;
        return o->budget_trials = (int)n, 0;
    }
    return cli_seconds("deploy", "--budget", v, &o->budget_s);
}

/* The --algos list, checked now (the trial worker resolves it again when it starts). */
static int parse_algos(const char *v, deploy_args *a)
{
    int total;
    pl_algo_list(&total);
    const pl_algo **list = pl_calloc(total, sizeof *list);
    int n = cli_algos("deploy", "--algos", v, list, total);
    for (int k = 0; k < n; k++)
        a->learned |= list[k]->learned;
    free(list);
    return n < 0 ? -1 : (a->algos = v, 0);
}

enum {
    SLO = CLI_OWN,
    BUDGET,
    ALGOS,
    SEED,
    BATCH,
    PLACE_TIME,
    PLACE_EPISODES,
    INCLUDE_RETIRED,
    OPTIMIZE,
    MEASURED,
    STRATEGY
};
static const struct option options[] = {{"slo", required_argument, NULL, SLO},
                                        {"budget", required_argument, NULL, BUDGET},
                                        {"algos", required_argument, NULL, ALGOS},
                                        {"seed", required_argument, NULL, SEED},
                                        {"batch", required_argument, NULL, BATCH},
                                        {"place-time", required_argument, NULL, PLACE_TIME},
                                        {"place-episodes", required_argument, NULL, PLACE_EPISODES},
                                        {"include-retired", no_argument, NULL, INCLUDE_RETIRED},
                                        {"optimize", no_argument, NULL, OPTIMIZE},
                                        {"measured", no_argument, NULL, MEASURED},
                                        {"strategy", required_argument, NULL, STRATEGY},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

static int take(void *o, int c, const char *v)
{
    deploy_args *a = o;
    long n;
    switch (c) {
    case SLO:
        return cli_seconds("deploy", "--slo", v, &a->so.slo_s);
    case BUDGET:
        return parse_budget(v, &a->so) ? -1 : 0;
    case 'o':
        return cli_file("deploy", "-o", v, "a file", &a->out);
    case ALGOS:
        return parse_algos(v, a);
    case SEED:
        return cli_seed("deploy", "--seed", v, &a->so.seed);
    case BATCH:
        if (cli_count("deploy", "--batch", v, 1, PL_SEARCH_MAX_BATCH, &n) < 0) return -1;
        return a->so.batch = (int)n, 0;
    case PLACE_TIME:
        return cli_seconds("deploy", "--place-time", v, &a->place_time_s);
    case PLACE_EPISODES:
        if (cli_count("deploy", "--place-episodes", v, 1, 1000000, &n) < 0) return -1;
        return a->place_episodes = (int)n, 0;
    case INCLUDE_RETIRED:
        return a->so.include_retired = true, 0;
    case OPTIMIZE:
        return a->optimize = true, 0;
    case MEASURED:
        return a->measured = true, 0;
    default: /* STRATEGY */
        if (v && pl_search_strategy_parse(v, &a->so.strategy) == 0) return 0;
        return cli_error("deploy", "--strategy wants bo, lcf, uniform, ga, de or exhaustive");
    }
}

/* The options, checked together; *asked when --help was asked (and printed). */
static cli_exit parse(int argc, char **argv, deploy_args *a, bool *asked)
{
    memset(a, 0, sizeof *a);
    cli_args g = CLI_ARGS("deploy", "ho:", help, false);
    cli_exit parsed = cli_parse(&g, &a->co, take, a);
    if (!cli_ok(parsed) || (*asked = g.asked_help)) return parsed;
    if (!a->co.model) return cli_fail("deploy", "which model? (placer deploy --help)");
    if (a->co.config || a->co.cluster)
        return cli_fail("deploy", "deploy chooses the configuration: give --catalog only");
    if (!a->co.catalog) {
        char dir[4096];
        return cli_fail("deploy", "which catalogue? give --catalog FILE (shipped ones in %s/)",
                        cli_own_dir("share/placer/catalogs", "catalogs", dir, sizeof dir));
    }
    if (!(a->so.slo_s > 0)) return cli_fail("deploy", "give the latency SLO: --slo 50ms");
    if (a->place_episodes && !a->learned)
        return cli_fail("deploy", "--place-episodes is a learned algorithm's budget: give "
                                  "--algos with one (drl, google-rl)");
    /* the shared table takes --profile for every verb, but a trial prices each configuration with
     * the cost model alone: refused rather than ignored in silence */
    if (a->co.n_profiles)
        return cli_fail("deploy", "--profile is not used by deploy (trials estimate op times)");
    if (a->measured && (a->co.n_dims || a->co.n_shapes))
        return cli_fail("deploy", "--measured runs the model file as it is: --dim and --input "
                                  "cannot be used with it");
    return CLI_EXIT_OK;
}

/* ---- --measured (docs/search.md "Measured trials") ---- */

static cli_exit check_hosts(void)
{
    int n = pl_dist_size();
    cli_exit rc = CLI_EXIT_OK;
    for (int i = 0; cli_ok(rc) && i < n; i++)
        for (int j = 0; cli_ok(rc) && j < i; j++)
            if (!strcmp(pl_dist_host(i), pl_dist_host(j)))
                rc = pl_dist_rank() == 0
                         ? cli_fail("deploy",
                                    "--measured: ranks %d and %d share the host '%s': their "
                                    "measurements would time each other's runs; run one rank "
                                    "per machine (mpirun --map-by ppr:1:node)",
                                    j, i, pl_dist_host(i))
                         : CLI_EXIT_BAD_INPUT;
    return rc;
}

/* Every configuration the search may try must be CPUs only: the measurement runs each device's
 * stages on a thread of this machine's CPU (pl_trial_measure_plan). */
static cli_exit check_measurable(const deploy_args *a, const pl_catalog *cat)
{
    pl_err err = {""};
    for (int k = 0; k < cat->n; k++) {
        if (cat->configs[k].retired && !a->so.include_retired) continue;
        if (pl_trial_measure_check(cat->configs[k].cluster, &err) < 0)
            return cli_fail("deploy", "--measured: configuration %s", err.msg); /* names it */
    }
    return check_hosts();
}

/* ---- output ---- */

static double per_10k(const pl_trial_record *t)
{
    return t->runs ? t->cost_usd * 1e4 : NAN;
}

/* Rounds of one trial in one process (the default) keep the sequential search's table; with
 * rounds of several trials, or ranks, each trial also says its round and where it ran. */
static bool in_rounds(const pl_search_result *r)
{
    return r->batch > 1 || r->ranks > 1;
}

static void print_trials(const pl_catalog *cat, const pl_search_result *r)
{
    pl_table *t =
        pl_table_new(in_rounds(r) ? "trial|>round|ran on|configuration|>GPUs|>USD/hour|"
                                    ">latency ms|>band %|>USD per 10k requests|SLO|placement"
                                  : "trial|configuration|>GPUs|>USD/hour|>latency "
                                    "ms|>band %|>USD per 10k requests|SLO|placement");
    for (int i = 0; i < r->n_trials; i++) {
        const pl_trial_record *x = &r->trials[i];
        const pl_vm_config *c = &cat->configs[x->config];
        char lat[32] = "does not run", cost[32] = "-", band[32] = "-";
        if (x->runs) {
            snprintf(lat, sizeof lat, "%.3f", x->latency_s * 1e3);
            snprintf(band, sizeof band, "%.0f", x->band * 100);
            snprintf(cost, sizeof cost, "%.4f", per_10k(x));
        }
        char where[96] = "";
        if (in_rounds(r))
            snprintf(where, sizeof where, "%d|rank %d (%s)|", x->round, x->rank, x->host);
        pl_table_row(t, "%d|%s%s|%d x %s|%.3f|%s|%s|%s|%s|%s", i + 1, where, c->name, c->gpu_count,
                     c->gpu_count ? c->gpu_model : "-", c->price_usd_per_hour, lat, band, cost,
                     !x->runs       ? "-"
                     : x->meets_slo ? "met"
                                    : "missed",
                     x->runs ? x->algo : x->why);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static json_t *trials_json(const pl_catalog *cat, const pl_search_result *r)
{
    json_t *a = json_array();
    for (int i = 0; i < r->n_trials; i++) {
        const pl_trial_record *x = &r->trials[i];
        json_t *o =
            json_pack("{s:s, s:f, s:b, s:b, s:f}", "configuration", cat->configs[x->config].name,
                      "usd_per_hour", cat->configs[x->config].price_usd_per_hour, "runs", x->runs,
                      "meets_slo", x->meets_slo, "work_s", x->work_s);
        if (x->runs) {
            json_object_set_new(o, "latency_s", json_real(x->latency_s));
            json_object_set_new(o, "usd_per_request", json_real(x->cost_usd));
            json_object_set_new(o, "algorithm", json_string(x->algo));
            cli_band_json(o, x->band, x->basis);
            json_object_set_new(o, "latency_high_s", json_real(pl_trial_latency_high(x)));
        } else {
            json_object_set_new(o, "why", json_string(x->why));
        }
        if (isfinite(x->acquisition))
            json_object_set_new(o, "acquisition", json_real(x->acquisition));
        json_object_set_new(o, "round", json_integer(x->round));
        json_object_set_new(o, "rank", json_integer(x->rank));
        json_object_set_new(o, "host", json_string(x->host));
        json_array_append_new(a, o);
    }
    return a;
}

/* The chosen plan, simulated again on its configuration (per-device table; with --json its
 * schedule too, for `placer report`). */
static cli_exit show_plan(const pl_trial_worker *w, const pl_vm_config *cfg, const pl_plan *p,
                          const pl_cost_params *params, bool json, json_t *root)
{
    cli_ctx x = {.g = (pl_graph *)pl_trial_sim_graph(w), .c = cfg->cluster};
    pl_err err = {""};
    x.k = pl_cost_new(x.g, x.c, params, NULL, 0, &err);
    pl_sim_opts so = {.contention = p->contention, .record = json};
    pl_sim_result r = {0};
    if (!x.k || pl_simulate(x.k, p, &so, &r, &err) < 0) {
        pl_cost_free(x.k);
        return cli_fail("deploy", "%s", err.msg);
    }
    if (json) {
        json_object_set_new(root, "devices", cli_devices_json(&x, p, &r));
        json_object_set_new(root, "schedule", cli_schedule_json(&x, p, &so, &r));
    } else
        cli_print_devices(&x, p, &r);
    pl_sim_result_free(&r);
    pl_cost_free(x.k);
    return CLI_EXIT_OK;
}

/* ---- the answer's margin (docs/cost.md, "Uncertainty") ---- */

/* The answer meets the SLO by its prediction but not at the top of its band. */
static bool within_band_only(const pl_search_result *r, double slo_s)
{
    return r->best >= 0 && !(pl_trial_latency_high(&r->trials[r->best]) <= slo_s);
}

/* Says when the answer meets the SLO only within its band, and what meets it with margin. */
static void print_margin(const deploy_args *a, const pl_catalog *cat, const pl_search_result *r)
{
    if (!within_band_only(r, a->so.slo_s)) return;
    const pl_trial_record *b = &r->trials[r->best];
    printf("note        %s meets the SLO of %g ms only within its prediction's band: %.3f ms, up "
           "to %.3f ms (±%.0f %%, %s)\n            ",
           cat->configs[b->config].name, a->so.slo_s * 1e3, b->latency_s * 1e3,
           pl_trial_latency_high(b) * 1e3, b->band * 100, cli_basis_words(b->basis));
    int m = pl_search_with_margin(r, a->so.slo_s);
    if (m < 0) {
        printf("no configuration tried meets it with margin\n");
        return;
    }
    const pl_trial_record *x = &r->trials[m];
    const pl_vm_config *c = &cat->configs[x->config];
    printf("with margin: %s, %.3f ms (up to %.3f ms), %.3f USD/hour\n", c->name, x->latency_s * 1e3,
           pl_trial_latency_high(x) * 1e3, c->price_usd_per_hour);
}

/* {"meets_with_margin", "next_with_margin"} for the answer; null when there is none. */
static json_t *margin_json(const deploy_args *a, const pl_catalog *cat, const pl_search_result *r)
{
    if (r->best < 0) return json_null();
    int m = within_band_only(r, a->so.slo_s) ? pl_search_with_margin(r, a->so.slo_s) : -1;
    return json_pack("{s:b, s:o}", "meets_with_margin", !within_band_only(r, a->so.slo_s),
                     "next_with_margin",
                     m < 0 ? json_null() : json_string(cat->configs[r->trials[m].config].name));
}

static void print_choice(const deploy_args *a, const pl_catalog *cat, const pl_search_result *r)
{
    printf("\n");
    if (r->best >= 0) {
        const pl_trial_record *b = &r->trials[r->best];
        const pl_vm_config *c = &cat->configs[b->config];
        printf("chosen      %s (%s%s%s, %d x %s, %.3f USD/hour)\n", c->name, c->provider,
               c->region[0] ? " " : "", c->region, c->gpu_count, c->gpu_count ? c->gpu_model : "-",
               c->price_usd_per_hour);
        printf("latency     %.3f ms (SLO %.3f ms), %.4f USD per 10,000 requests, plan by %s\n",
               b->latency_s * 1e3, a->so.slo_s * 1e3, per_10k(b), b->algo);
        print_margin(a, cat, r);
    } else if (r->closest >= 0) {
        const pl_trial_record *b = &r->trials[r->closest];
        printf("no configuration tried meets the SLO of %.3f ms; the closest is %s at %.3f ms\n",
               a->so.slo_s * 1e3, cat->configs[b->config].name, b->latency_s * 1e3);
    } else {
        printf("the model runs on no configuration tried (%s)\n",
               r->n_trials ? r->trials[0].why : "nothing tried");
    }
    if (a->measured)
        printf("measured    every trial's plan run with onnxruntime on the machine named in "
               "its trial (--json: host)\n");
    printf("search      %d trials of %d configurations%s, %s; %.2f s (worker start-up %.2f s, "
           "paid once)\n",
           r->n_trials, r->n_candidates, r->n_candidates < cat->n ? " (retired ones left out)" : "",
           r->stop_reason, r->total_s, r->startup_s);
    if (r->best >= 0)
        printf("found at    trial %d of %d, round %d of %d (%d trial%s per round, %d rank%s)\n",
               r->best + 1, r->n_trials, r->trials[r->best].round, r->n_rounds, r->batch,
               r->batch == 1 ? "" : "s", r->ranks, r->ranks == 1 ? "" : "s");
}

/* Trials-to-optimum by trial and by round (docs/search.md "Rounds and batches"). */
static void rounds_json(json_t *root, const pl_search_result *r)
{
    json_object_set_new(root, "batch", json_integer(r->batch));
    json_object_set_new(root, "ranks", json_integer(r->ranks));
    json_object_set_new(root, "rounds", json_integer(r->n_rounds));
    json_object_set_new(root, "found_at",
                        r->best < 0 ? json_null()
                                    : json_pack("{s:i, s:i}", "trial", r->best + 1, "round",
                                                r->trials[r->best].round));
}

static void progress(void *ctx, const pl_search_result *r, int n)
{
    const pl_catalog *cat = ctx;
    if (pl_dist_rank() != 0) return;
    const pl_trial_record *t = &r->trials[r->n_trials - 1];
    cli_progress("trial %d (of at most %d): %s %s", r->n_trials, n, cat->configs[t->config].name,
                 t->runs ? (t->meets_slo ? "meets the SLO" : "misses the SLO") : "does not run");
}

/* A learned algorithm's episodes inside a trial (pl_place_opts.progress): the trial is the
 * worker's next one. */
static void place_progress(const char *algo, int step, int total, double best_s, void *user)
{
    const pl_trial_worker *w = *(pl_trial_worker *const *)user;
    if (pl_dist_rank() != 0) return;
    char of[32] = "";
    if (total > 0) snprintf(of, sizeof of, "/%d", total);
    if (isfinite(best_s))
        cli_progress("trial %ld: %s episode %d%s, best %.4f ms", w->trials + 1, algo, step, of,
                     best_s * 1e3);
    else
        cli_progress("trial %ld: %s episode %d%s", w->trials + 1, algo, step, of);
}

static cli_exit report(const deploy_args *a, const pl_catalog *cat, pl_trial_worker *w,
                       const pl_search_result *r)
{
    int idx = r->best >= 0 ? r->best : r->closest;
    const pl_vm_config *cfg = idx >= 0 ? &cat->configs[r->trials[idx].config] : NULL;
    /* under mpirun rank 0 alone prints and writes (every rank holds the same result) */
    if (pl_dist_rank() != 0) return r->best >= 0 ? CLI_EXIT_OK : CLI_EXIT_INFEASIBLE;
    json_t *root = NULL;
    if (a->co.json)
        root = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:f, s:o, s:s, s:f, s:f}", "format",
                         "placer-deploy/1", "model", a->co.model, "catalog", "path", cat->path,
                         "sha256", cat->sha256, "strategy", pl_search_strategy_name(a->so.strategy),
                         "slo_s", a->so.slo_s, "trials", trials_json(cat, r), "stop_reason",
                         r->stop_reason, "search_s", r->total_s, "startup_s", r->startup_s);
    else
        print_trials(cat, r), print_choice(a, cat, r);
    if (root) {
        rounds_json(root, r);
        json_object_set_new(root, "measured", json_boolean(a->measured));
        json_object_set_new(root, "chosen", r->best >= 0 ? json_string(cfg->name) : json_null());
        json_object_set_new(root, "margin", margin_json(a, cat, r));
        if (r->best < 0 && cfg) json_object_set_new(root, "closest", json_string(cfg->name));
    }
    cli_exit rc = CLI_EXIT_OK;
    if (cfg && r->best_plan) {
        if (!a->co.json) printf("\n");
        rc = show_plan(w, cfg, r->best_plan, &a->params, a->co.json, root);
    }
    pl_err err = {""};
    if (cli_ok(rc) && a->out && r->best_plan &&
        pl_plan_save(r->best_plan, pl_trial_sim_graph(w), cfg->cluster, a->out, &err) < 0)
        rc = cli_fail("deploy", "%s", err.msg);
    if (root) cli_json_out(root);
    if (!cli_ok(rc)) return rc;
    return r->best >= 0 ? CLI_EXIT_OK : CLI_EXIT_INFEASIBLE; /* cli.h */
}

cli_exit cli_deploy(int argc, char **argv)
{
    deploy_args a;
    bool asked = false;
    cli_exit parsed = parse(argc, argv, &a, &asked);
    if (!cli_ok(parsed) || asked) return parsed;
    pl_err err = {""};
    if (a.optimize && cli_optimize_first("deploy", &a.co, a.optimized, sizeof a.optimized))
        return CLI_EXIT_BAD_INPUT;
    pl_catalog *cat = pl_catalog_load(a.co.catalog, &err);
    if (!cat) return cli_fail("deploy", "%s", err.msg);
    pl_trial_sim_opts to = {.model_path = a.co.model,
                            .load = {.dims = a.co.dims,
                                     .n_dims = a.co.n_dims,
                                     .input_shapes = a.co.shapes,
                                     .n_input_shapes = a.co.n_shapes},
                            .algos = a.algos,
                            .place_time_s = a.place_time_s,
                            .contention = a.co.contention,
                            .seed = a.so.seed,
                            .place_episodes = a.place_episodes,
                            .progress = place_progress};
    pl_trial_worker *w = NULL;
    to.progress_user = &w;
    const pl_cluster **clusters = pl_calloc(cat->n + 1, sizeof *clusters);
    for (int k = 0; k < cat->n; k++)
        clusters[k] = cat->configs[k].cluster;
    int rc = cli_cost_params("deploy", &a.co, clusters, cat->n, &a.params);
    free(clusters);
    if (rc < 0) return pl_catalog_free(cat), CLI_EXIT_BAD_INPUT;
    to.params = &a.params;
    if (a.measured && !cli_ok(check_measurable(&a, cat)))
        return pl_catalog_free(cat), CLI_EXIT_BAD_INPUT;
    if (a.measured)
        to.measure = pl_trial_ort_new(&(pl_trial_ort_opts){.model_path = to.model_path});
    w = pl_trial_sim_new(&to);
    pl_search_result r;
    cli_exit status;
    if (pl_dist_rank() == 0) cli_progress("starting the trial worker (loading %s)", a.co.model);
    if (pl_search_run(cat, w, &a.so, progress, cat, &r, &err) < 0) {
        cli_progress("%s", "");
        /* every rank failed with the same message: rank 0 says it */
        status = pl_dist_rank() == 0 ? cli_fail("deploy", "%s", err.msg) : CLI_EXIT_BAD_INPUT;
    } else {
        cli_progress("%s", "");
        if (pl_trial_sim_graph(w) && pl_dist_rank() == 0) cli_print_warnings(pl_trial_sim_graph(w));
        status = report(&a, cat, w, &r);
    }
    pl_search_result_free(&r);
    pl_trial_worker_free(w);
    pl_trial_worker_free(to.measure); /* after the sim worker, which uses it */
    pl_catalog_free(cat);
    return status;
}
