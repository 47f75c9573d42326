/* multi.c: `placer multi M1 M2 ... --cluster C`: several models sharing one host's devices,
 * placed op by op by Talos and by its baselines and placers of one model on their union
 * graph, side by side: per model its completion time and ops per device, the TOCT, each
 * device's idle time, NOD and the placement time (docs/multi.md). */
#include "cli.h"
#include "placer/json.h"
#include "placer/multi.h"
#include "placer/report.h"
#include "placer/train.h"

#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help_text =
    "usage: placer multi M1 M2 ... --cluster C [--algo A | --algos a,b,...] [--json]\n"
    "                    [-o FILE] [--sv LO,HI] [--tv T] [--affinity X] [--positions P]\n"
    "                    [--no-pack] [--refine T] [--contention X] [--seed N]\n"
    "                    [--time-limit T]\n"
    "                    [--profile P]... [--cost-params F]\n"
    "                    [--run [--repeat R] [--warmup W] [--cache DIR] [--deadline T]\n"
    "                     [--alone]]\n"
    "                    [--train [--batch N]...] [--explain]\n"
    "  M1 M2 ...      models (ONNX or task graphs); a model given twice is two tenants\n"
    "  --algo A       one algorithm: talos, aswm, tsam, or any of `placer place --help`\n"
    "  --algos LIST   several (default: talos,aswm,tsam,heft,moirai)\n"
    "  --sv LO,HI     op packing: speedups within (LO, HI) x the run's first (default 0.5,2)\n"
    "  --tv T         op packing: only ops faster than T on the CPU join a run (default 10ms)\n"
    "  --affinity X   models whose affinity exceeds X share one flow (default 0.4; -1: all)\n"
    "  --positions P  queue positions per device per step of the flow (default 8)\n"
    "  --no-pack      place ops as they are\n"
    "  --refine T     talos: local search on TOCT after the flow, at most T (default 2s;\n"
    "                 0 or 0s: the paper's Talos alone)\n"
    "  --profile P    measured op times (placer profile -o) of the model it was measured on\n"
    "  --time-limit T searches (moirai) stop after T (default 10s here; moirai's warm\n"
    "                 starts get at least 5 s, docs/moirai.md \"Time budget\")\n"
    "  -o FILE        the placer-multi/1 document (as --json prints it), written atomically\n"
    "  --train        each model's training iteration (forward, backward, optimizer: the\n"
    "                 graph of `placer train`) is the tenant, not its inference\n"
    "  --batch N      with --train: the batch, once for every model or once per model in\n"
    "                 order (default: the Talos paper's, 64 for alexnet, googlenet,\n"
    "                 resnet50, squeezenet1_0/1_1, 32 for bert_base; else the model's own)\n"
    "  --explain      print each model's spread of per-op speedups over the CPU (always in\n"
    "                 the JSON), beside the Talos paper's Fig. 2\n"
    "  --run          run the answer's plan for real on this machine's CPU devices,\n"
    "                 every model at once, and print measured beside predicted times\n"
    "  --alone        with --run: also run each model's share of the plan by itself, and\n"
    "                 print the error the co-run adds to the model's own\n"
    "the answer is the row of least TOCT that fits in memory (the first such row on a tie)\n"
    "exit status: 0 done, 1 no algorithm's plan fits in memory, 2 bad input or failure\n";

#define MAX_MODELS 16
#define MAX_ALGOS 16

typedef struct multi_opts {
    cli_common co;
    const char *models[MAX_MODELS];
    int n_models;
    const char *algos[MAX_ALGOS];
    int n_algos;
    const char *out;
    pl_multi_opts mo;
    pl_place_opts po;
    bool run;
    pl_multi_run_opts ro;
    bool alone;            /* --alone: each tenant's share also run by itself */
    const char *run_opt;   /* the last of --run's options given (refused without --run) */
    bool train;            /* --train: training iterations as tenants */
    int batch[MAX_MODELS]; /* --batch, in the order given */
    int n_batch;
    bool explain; /* --explain: the speedup spread in the table */
} multi_opts;

typedef struct row {
    const char *algo;
    bool ok;
    char msg[PL_ERR_MAX];
    pl_plan *plan;
    pl_multi_eval e;
    pl_multi_credit credit;
} row;

/* --alone: each tenant's share of the answer's plan, predicted and measured by itself, each
 * request after the wait it has in the round (gap_s). */
typedef struct alone_run {
    double pred_s[MAX_MODELS], meas_s[MAX_MODELS], gap_s[MAX_MODELS];
} alone_run;

typedef struct multi_ctx {
    pl_graph *models[MAX_MODELS];
    char *names[MAX_MODELS];
    int n;
    pl_graph *u;
    pl_cluster *c;
    pl_cost *k;
    pl_profile *prof[CLI_MAX_LIST];
    int n_prof;
    pl_multi_analysis a;
    int batch[MAX_MODELS]; /* --train: each tenant's batch */
    char note[PL_ERR_MAX]; /* the devices left out (keep_cores), "" when none */
} multi_ctx;

/* ---- options ---- */

static int split_algos(const char *v, multi_opts *o)
{
    static char buf[1024];
    if (!v || !*v || strlen(v) >= sizeof buf) return cli_error("multi", "--algos wants a list");
    snprintf(buf, sizeof buf, "%s", v);
    o->n_algos = 0;
    if (buf[0] == ',' || strstr(buf, ",,") || buf[strlen(buf) - 1] == ',')
        return cli_error("multi", "--algos: '%s' has an empty name", v);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
        if (o->n_algos == MAX_ALGOS) return cli_error("multi", "--algos: at most %d", MAX_ALGOS);
        if (!pl_multi_own_algo(s) && !pl_algo_find(s))
            return cli_error("multi",
                             "--algos: unknown algorithm '%s' (talos, aswm, tsam, or one "
                             "of `placer place --help`)",
                             s);
        for (int j = 0; j < o->n_algos; j++)
            if (!strcmp(o->algos[j], s)) return cli_error("multi", "--algos: '%s' twice", s);
        o->algos[o->n_algos++] = s;
    }
    if (!o->n_algos) return cli_error("multi", "--algos wants a list");
    return 0;
}

/* --sv LO,HI: 0 < LO < HI. */
static int parse_band(const char *v, pl_multi_opts *mo)
{
    char lo_s[64];
    const char *comma = v ? strchr(v, ',') : NULL;
    size_t n = comma ? (size_t)(comma - v) : 0;
    double lo = 0, hi = 0;
    if (comma && n < sizeof lo_s) memcpy(lo_s, v, n), lo_s[n] = 0;
    if (!comma || n >= sizeof lo_s || !cli_number_in(lo_s, 0, DBL_MAX, CLI_OPEN_LO, &lo) ||
        !cli_number_in(comma + 1, lo, DBL_MAX, CLI_OPEN_LO, &hi))
        return cli_error("multi", "--sv: '%s': give LO,HI with 0 < LO < HI (e.g. 0.5,2)",
                         v ? v : "");
    mo->sv_lo = lo, mo->sv_hi = hi;
    return 0;
}

/* --affinity: a number >= 0, or -1. */
static int parse_affinity(const char *v, pl_multi_opts *mo)
{
    double x;
    if (!v || (!cli_number_in(v, 0, DBL_MAX, 0, &x) && !cli_number_in(v, -1, -1, 0, &x)))
        return cli_error("multi", "--affinity: '%s': give a number >= 0, or -1 (all together)",
                         v ? v : "");
    mo->affinity = x;
    return 0;
}

/* --refine T: a duration, or 0 ("0", "0s", ...) for none, the paper's Talos alone. */
static int parse_refine(const char *v, pl_multi_opts *mo)
{
    pl_err err;
    double s;
    if (!strcmp(v, "0") || (pl_parse_quantity(v, PL_UNIT_SECONDS, &s, &err) == 0 && s == 0))
        return mo->refine_s = 0, 0;
    return cli_seconds("multi", "--refine", v, &mo->refine_s);
}

static int parse_tv(const char *v, pl_multi_opts *mo)
{
    pl_err err = {""};
    if (v && !strcmp(v, "0")) return mo->tv_s = 0, 0; /* as --refine 0: no unit needed */
    if (!v || pl_parse_quantity(v, PL_UNIT_SECONDS, &mo->tv_s, &err) < 0 || mo->tv_s < 0)
        return cli_error("multi", "--tv: '%s': give a time such as 10ms", v ? v : "");
    return 0;
}

enum {
    NO_PACK = CLI_OWN,
    RUN,
    ALGOS,
    SV,
    AFFINITY,
    TV,
    POSITIONS,
    SEED,
    TIME_LIMIT,
    REFINE,
    REPEAT, /* --run's from here */
    WARMUP,
    CACHE,
    DEADLINE,
    ALONE,
    TRAIN, /* --train's */
    BATCH,
    EXPLAIN
};
static const struct option options[] = {{"no-pack", no_argument, NULL, NO_PACK},
                                        {"run", no_argument, NULL, RUN},
                                        {"algo", required_argument, NULL, ALGOS},
                                        {"algos", required_argument, NULL, ALGOS},
                                        {"sv", required_argument, NULL, SV},
                                        {"affinity", required_argument, NULL, AFFINITY},
                                        {"tv", required_argument, NULL, TV},
                                        {"positions", required_argument, NULL, POSITIONS},
                                        {"seed", required_argument, NULL, SEED},
                                        {"time-limit", required_argument, NULL, TIME_LIMIT},
                                        {"refine", required_argument, NULL, REFINE},
                                        {"repeat", required_argument, NULL, REPEAT},
                                        {"warmup", required_argument, NULL, WARMUP},
                                        {"cache", required_argument, NULL, CACHE},
                                        {"deadline", required_argument, NULL, DEADLINE},
                                        {"alone", no_argument, NULL, ALONE},
                                        {"train", no_argument, NULL, TRAIN},
                                        {"batch", required_argument, NULL, BATCH},
                                        {"explain", no_argument, NULL, EXPLAIN},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

/* --run's options. */
static int take_run(multi_opts *o, int c, const char *v)
{
    long n;
    static const char *const names[] = {"--repeat", "--warmup", "--cache", "--deadline", "--alone"};
    o->run_opt = names[c - REPEAT];
    switch (c) {
    case REPEAT:
        if (cli_count("multi", "--repeat", v, 1, 100000, &n) < 0) return -1;
        return o->ro.repeat = (int)n, 0;
    case WARMUP:
        if (cli_count("multi", "--warmup", v, 0, 100000, &n) < 0) return -1;
        return o->ro.warmup = (int)n, 0;
    case CACHE:
        return cli_file("multi", "--cache", v, "a folder", &o->ro.cache_dir);
    case ALONE:
        return o->alone = true, 0;
    default:
        return cli_seconds("multi", "--deadline", v, &o->ro.deadline_s); /* DEADLINE */
    }
}

/* --train's options (--batch once per model, in order, or once for all) and --explain. */
static int take_train(multi_opts *o, int c, const char *v)
{
    long n;
    if (c == TRAIN) return o->train = true, 0;
    if (c == EXPLAIN) return o->explain = true, 0;
    if (o->n_batch == MAX_MODELS) return cli_error("multi", "--batch: at most %d", MAX_MODELS);
    if (cli_count("multi", "--batch", v, 1, 1 << 24, &n) < 0) return -1;
    return o->batch[o->n_batch++] = (int)n, 0;
}

static int take(void *p, int c, const char *v)
{
    multi_opts *o = p;
    long n;
    switch (c) {
    case CLI_ARG:
        if (o->n_models == MAX_MODELS) return cli_error("multi", "at most %d models", MAX_MODELS);
        return o->models[o->n_models++] = v, 0;
    case NO_PACK:
        return o->mo.no_pack = true, 0;
    case RUN:
        return o->run = true, 0;
    case ALGOS:
        return split_algos(v, o);
    case 'o':
        return cli_file("multi", "-o", v, "a file", &o->out);
    case SV:
        return parse_band(v, &o->mo);
    case AFFINITY:
        return parse_affinity(v, &o->mo);
    case TV:
        return parse_tv(v, &o->mo);
    case POSITIONS:
        if (cli_count("multi", "--positions", v, 1, 64, &n) < 0) return -1;
        return o->mo.positions = (int)n, 0;
    case SEED:
        return cli_seed("multi", "--seed", v, &o->po.seed);
    case TIME_LIMIT:
        return cli_seconds("multi", "--time-limit", v, &o->po.time_limit_s);
    case REFINE:
        return parse_refine(v, &o->mo);
    case TRAIN:
    case BATCH:
    case EXPLAIN:
        return take_train(o, c, v);
    default:
        return take_run(o, c, v);
    }
}

/* --train and --batch, checked together with the models. */
static cli_exit check_train(const multi_opts *o)
{
    if (o->n_batch && !o->train)
        return cli_fail("multi", "--batch: give --train too (an inference tenant runs at its "
                                 "model's own batch)");
    if (o->n_batch > 1 && o->n_batch != o->n_models)
        return cli_fail("multi",
                        "--batch given %d times for %d models: give it once (every model) or "
                        "once per model, in the models' order",
                        o->n_batch, o->n_models);
    if (o->train && o->run)
        return cli_fail("multi", "--run with --train: only inference runs on this machine "
                                 "(a training iteration is predicted, not run)");
    if (o->train && o->co.n_profiles)
        return cli_fail("multi", "--profile with --train: a profile times a model's inference "
                                 "ops at its own batch, not a training iteration");
    return CLI_EXIT_OK;
}

/* The options, checked together; *help when --help was asked (and printed). */
static cli_exit parse(int argc, char **argv, multi_opts *o, bool *help)
{
    memset(o, 0, sizeof *o);
    pl_multi_opts_default(&o->mo);
    o->po.time_limit_s = 10;
    cli_args g = CLI_ARGS("multi", "ho:", help_text, true);
    g.own_args = true;
    g.lists = (const int[]){BATCH, 0}; /* once for every model or once per model */
    cli_exit parsed = cli_parse(&g, &o->co, take, o);
    if (!cli_ok(parsed) || (*help = g.asked_help)) return parsed;
    if (o->n_models < 1) return cli_fail("multi", "which models? (placer multi --help)");
    if (!o->co.cluster) return cli_fail("multi", "which cluster? give --cluster FILE");
    if (o->co.catalog) return cli_fail("multi", "--catalog: give the host as --cluster FILE");
    cli_exit trained = check_train(o);
    if (!cli_ok(trained)) return trained;
    if (o->alone && !o->run)
        return cli_fail("multi", "--alone: give --run too (it runs each model's share of the "
                                 "answer by itself, beside the run of all at once)");
    if (o->run_opt && !o->run)
        return cli_fail("multi",
                        "%s: give --run too (it says how the answer is run; without "
                        "--run nothing is)",
                        o->run_opt);
    if (!o->n_algos) {
        static const char *dflt[] = {"talos", "aswm", "tsam", "heft", "moirai"};
        for (int j = 0; j < 5; j++)
            o->algos[o->n_algos++] = dflt[j];
    }
    o->po.contention = o->co.contention;
    return CLI_EXIT_OK;
}

/* ---- loading ---- */

/* Whether one of the first n tenants is named `name`. */
static bool name_taken(const multi_ctx *x, int n, const char *name)
{
    for (int j = 0; j < n; j++)
        if (!strcmp(x->names[j], name)) return true;
    return false;
}

/* Tenant names: each model's file stem; "#2", "#3" ... for a stem taken by a model before it
 * (the first such suffix that no model before it has: a file named gcn_cora#2.onnx after
 * gcn_cora given twice is gcn_cora#2#2). */
static void name_tenants(multi_ctx *x, const multi_opts *o)
{
    for (int i = 0; i < o->n_models; i++) {
        char *stem = pl_file_stem(o->models[i], "model"), buf[512];
        snprintf(buf, sizeof buf, "%s", stem);
        for (int k = 2; name_taken(x, i, buf); k++)
            snprintf(buf, sizeof buf, "%s#%d", stem, k);
        x->names[i] = pl_strdup(buf);
        free(stem);
    }
}

/* --train's default batch: the Talos paper's (its evaluation: 64 for the CNNs, 32 for BERT, as
 * TensorFlow recommends), by the model file's stem; 0 (the model's own batch, as `placer
 * train`'s default) for every other model. */
static int paper_batch(const char *path)
{
    static const struct {
        const char *stem;
        int batch;
    } paper[] = {{"alexnet", 64},       {"googlenet", 64},     {"resnet50", 64},
                 {"squeezenet1_0", 64}, {"squeezenet1_1", 64}, {"bert_base", 32}};
    char *stem = pl_file_stem(path, "model");
    int b = 0;
    for (size_t i = 0; i < sizeof paper / sizeof *paper; i++)
        if (!strcmp(stem, paper[i].stem)) b = paper[i].batch;
    free(stem);
    return b;
}

/* --train: model i becomes its training iteration, the graph `placer train` places
 * (pl_train_graph_build: forward at the batch, backward, one optimizer op per weight). */
static cli_exit train_tenant(multi_ctx *x, const multi_opts *o, int i)
{
    pl_err err = {""};
    int b = o->n_batch ? o->batch[o->n_batch == 1 ? 0 : i] : paper_batch(o->models[i]);
    pl_train_graph *t = NULL;
    if (pl_train_graph_build(x->models[i], &(pl_train_opts){.batch = b}, &t, &err) < 0)
        return cli_fail("multi", "--train: %s", err.msg);
    pl_graph_free(x->models[i]);
    x->models[i] = t->g, t->g = NULL;
    x->batch[i] = t->batch;
    pl_train_graph_free(t);
    return CLI_EXIT_OK;
}

static void ctx_close(multi_ctx *x)
{
    pl_multi_analysis_free(&x->a);
    pl_cost_free(x->k);
    for (int i = 0; i < x->n_prof; i++)
        pl_profile_free(x->prof[i]);
    pl_graph_free(x->u);
    pl_cluster_free(x->c);
    for (int i = 0; i < x->n; i++)
        pl_graph_free(x->models[i]), free(x->names[i]);
    memset(x, 0, sizeof *x);
}

/* A cluster that gives a CPU both ways (docs/clusters.md, "Cores"): the models are placed on
 * its cores, the devices that have core_devices left out. The schedulers share devices among
 * models and know nothing of a device that is other devices' cores (they would run both at
 * once), and models side by side on the cores is what co-location is (docs/multi.md, "Cores").
 * x->note and stderr say which devices were left out. */
static cli_exit keep_cores(const multi_opts *o, multi_ctx *x)
{
    pl_cluster *c = x->c;
    bool *drop = pl_calloc((size_t)c->n_devs + 1, sizeof *drop);
    char names[512] = "";
    int n = 0;
    for (int d = 0; d < c->n_devs; d++)
        if ((drop[d] = c->devs[d].n_core_devs > 0))
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s'%s'", n++ ? ", " : "",
                     c->devs[d].name);
    pl_err err = {""};
    int rc = n ? pl_cluster_drop_devices(c, drop, &err) : 0;
    free(drop);
    if (rc < 0) return cli_fail("multi", "%s", err.msg);
    if (!n) return CLI_EXIT_OK;
    snprintf(x->note, sizeof x->note,
             "%s: %s left out, as %s also listed core by core (core_devices): the models are "
             "placed on the cores, side by side",
             o->co.cluster, names, n > 1 ? "they are" : "it is");
    fprintf(stderr, "placer multi: note: %s\n", x->note);
    return CLI_EXIT_OK;
}

static cli_exit ctx_open(const multi_opts *o, multi_ctx *x)
{
    memset(x, 0, sizeof *x);
    pl_err err = {""};
    pl_load_opts lo = {.dims = (const char **)o->co.dims,
                       .n_dims = o->co.n_dims,
                       .input_shapes = (const char **)o->co.shapes,
                       .n_input_shapes = o->co.n_shapes};
    for (x->n = 0; x->n < o->n_models; x->n++) {
        x->models[x->n] = pl_graph_load(o->models[x->n], &lo, &err);
        if (!x->models[x->n]) return ctx_close(x), cli_fail("multi", "%s", err.msg);
        if (o->run && strcmp(x->models[x->n]->info.format, "onnx")) {
            const char *path = o->models[x->n++];
            ctx_close(x);
            return cli_fail("multi",
                            "--run: %s is a task graph, not an ONNX model: onnxruntime runs "
                            "ONNX files only (leave out --run to have its plan predicted)",
                            path);
        }
        cli_print_warnings(x->models[x->n]);
        cli_exit trained = o->train ? train_tenant(x, o, x->n) : CLI_EXIT_OK;
        if (!cli_ok(trained)) return x->n++, ctx_close(x), trained;
    }
    name_tenants(x, o);
    x->c = pl_cluster_load(o->co.cluster, &err);
    if (!x->c) return ctx_close(x), cli_fail("multi", "%s", err.msg);
    cli_exit cores = keep_cores(o, x);
    if (!cli_ok(cores)) return ctx_close(x), cores;
    pl_cost_params params;
    if (cli_cost_params("multi", &o->co, (const pl_cluster *const *)&x->c, 1, &params) < 0)
        return ctx_close(x), CLI_EXIT_BAD_INPUT;
    for (; x->n_prof < o->co.n_profiles; x->n_prof++) {
        x->prof[x->n_prof] = pl_profile_load(o->co.profiles[x->n_prof], &err);
        if (!x->prof[x->n_prof]) return ctx_close(x), cli_fail("multi", "%s", err.msg);
    }
    x->u = pl_graph_union(x->models, (const char *const *)x->names, x->n, &err);
    if (x->u)
        x->k =
            pl_cost_new(x->u, x->c, &params, (const pl_profile *const *)x->prof, x->n_prof, &err);
    if (!x->k || pl_multi_analyze(x->k, &o->mo, &x->a, &err) < 0)
        return ctx_close(x), cli_fail("multi", "%s", err.msg);
    return CLI_EXIT_OK;
}

/* ---- running the algorithms ---- */

static void run_algo(const multi_ctx *x, const multi_opts *o, row *r)
{
    pl_err err = {""};
    r->plan = pl_plan_new(x->k->n_ops, x->k->n_devs);
    if (pl_multi_place(r->algo, x->k, &o->po, &o->mo, r->plan, &r->credit, &err) < 0 ||
        pl_multi_evaluate(x->k, r->plan, o->po.contention, &r->e, &err) < 0) {
        snprintf(r->msg, sizeof r->msg, "%s", err.msg);
        return;
    }
    r->ok = true;
    if (err.msg[0]) snprintf(r->msg, sizeof r->msg, "%s", err.msg);
}

/* The answer: the row of least TOCT among those that fit in memory (all rows when none
 * does), the first on a tie; -1 when every algorithm failed. */
static int answer_of(const row *rows, int n)
{
    bool any_fit = false;
    for (int i = 0; i < n; i++)
        any_fit |= rows[i].ok && !rows[i].e.oom;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (!rows[i].ok || (any_fit && rows[i].e.oom)) continue;
        if (best < 0 || rows[i].e.toct_s < rows[best].e.toct_s) best = i;
    }
    return best;
}

/* "talos, by refinement (-12.3 % TOCT, 41 moves)", "aswm". */
static void credit_text(const row *r, char *buf, size_t n)
{
    const pl_refine_stats *s = &r->credit.refine;
    if (!strcmp(r->credit.by, "refinement"))
        snprintf(buf, n, "%s, by refinement (%+.1f %% TOCT, %d moves)", r->algo,
                 100 * (s->after_s / s->before_s - 1), s->moves);
    else if (strcmp(r->credit.by, r->algo))
        snprintf(buf, n, "%s, by its %s", r->algo, r->credit.by);
    else
        snprintf(buf, n, "%s", r->algo);
}

/* ---- the table ---- */

static void print_models(const multi_ctx *x)
{
    pl_table *t = pl_table_new("model|>ops|>NOD (packed)|>group");
    for (int i = 0; i < x->n; i++)
        pl_table_row(t, "%s|%d|%d|%d", x->names[i], x->models[i]->n_ops, x->a.nod[i],
                     x->a.group[i] + 1);
    pl_table_print(t, stdout);
    pl_table_free(t);
    int T = x->n;
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++)
            printf("affinity %s + %s: %.2f (%s)\n", x->names[i], x->names[j],
                   x->a.affinity[i * T + j],
                   x->a.group[i] == x->a.group[j] ? "one flow" : "separate groups");
}

/* One row's cells after its name: TOCT, makespan, idle per device, placement time, note. */
static void summary_cells(const multi_ctx *x, const row *r, char *line, size_t size)
{
    snprintf(line + strlen(line), size - strlen(line), "|%.3f|%.3f", r->e.toct_s * 1e3,
             r->e.makespan_s * 1e3);
    for (int d = 0; d < x->c->n_devs; d++)
        snprintf(line + strlen(line), size - strlen(line), "|%.3f", r->e.idle_s[d] * 1e3);
    char by[128];
    credit_text(r, by, sizeof by);
    snprintf(line + strlen(line), size - strlen(line), "|%.3f|%s|%s", r->plan->search_s, by,
             r->e.oom ? "exceeds memory" : "");
}

/* --explain: each tenant's per-op speedup spread, beside the paper's Fig. 2. */
static void print_spread(const multi_ctx *x)
{
    printf("\nper-op speedup over %s (its time there / its least time elsewhere; each op a "
           "kernel of its own):\n",
           x->c->devs[x->a.ref_dev].name);
    pl_table *t = pl_table_new("model|>ops|>min|>p10|>median|>p90|>max|>geomean|>overall|>below 1");
    for (int m = 0; m < x->n; m++) {
        pl_multi_spread s;
        pl_multi_speedup_spread(x->k, m, &s);
        pl_table_row(t, "%s|%d|%.3g|%.3g|%.3g|%.3g|%.3g|%.3g|%.3g|%.0f%%", x->names[m], s.n_ops,
                     s.min, s.p10, s.median, s.p90, s.max, s.geomean, s.overall, 100 * s.below_1);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf("the Talos paper's Fig. 2 (ResNet-50 training in TensorFlow, batch 64, i9-10900X vs "
           "RTX 2080 Ti): 0.1 to 100, average about 10, about 30%% below 1\n");
}

/* --train: what each tenant is. */
static void print_batches(const multi_ctx *x)
{
    printf("tenants: training iterations (forward, backward, optimizer) at batch");
    for (int i = 0; i < x->n; i++)
        printf(" %d (%s)%s", x->batch[i], x->names[i], i + 1 < x->n ? "," : "\n");
}

static void print_summary(const multi_ctx *x, const row *rows, int n)
{
    char spec[2048] = "algorithm|>TOCT ms|>makespan ms";
    for (int d = 0; d < x->c->n_devs; d++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "|>idle %s ms",
                 x->c->devs[d].name);
    strncat(spec, "|>placement s|found by|note", sizeof spec - strlen(spec) - 1);
    pl_table *t = pl_table_new(spec);
    int a = answer_of(rows, n);
    if (a >= 0) {
        char line[4096] = "answer";
        summary_cells(x, &rows[a], line, sizeof line);
        pl_table_row(t, "%s", line);
    }
    for (int i = 0; i < n; i++) {
        char line[4096];
        const row *r = &rows[i];
        if (!r->ok) {
            snprintf(line, sizeof line, "%s|-|-", r->algo);
            for (int d = 0; d < x->c->n_devs; d++)
                strncat(line, "|-", sizeof line - strlen(line) - 1);
            snprintf(line + strlen(line), sizeof line - strlen(line), "|-|-|failed: %s", r->msg);
        } else {
            snprintf(line, sizeof line, "%s", r->algo);
            summary_cells(x, r, line, sizeof line);
        }
        pl_table_row(t, "%s", line);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    if (a >= 0 && rows[a].e.cold_period_s > 0)
        printf(
            "cold: every row is priced as one round of a steady state (the answer's: %.3f ms): a "
            "model that waits in the round finds what it keeps between requests gone in part "
            "(the cluster's host_cold_* figures; docs/simulator.md, \"Cold requests\")\n",
            rows[a].e.cold_period_s * 1e3);
}

/* Per model and algorithm: completion time and ops per device ("12.3 ms (10/200/0)"). */
static void print_per_model(const multi_ctx *x, const row *rows, int n)
{
    char spec[1024] = "model";
    for (int i = 0; i < n; i++)
        snprintf(spec + strlen(spec), sizeof spec - strlen(spec), "|>%s ms (ops per device)",
                 rows[i].algo);
    pl_table *t = pl_table_new(spec);
    for (int m = 0; m < x->n; m++) {
        char line[4096];
        snprintf(line, sizeof line, "%s", x->names[m]);
        for (int i = 0; i < n; i++) {
            const row *r = &rows[i];
            if (!r->ok) {
                strncat(line, "|-", sizeof line - strlen(line) - 1);
                continue;
            }
            snprintf(line + strlen(line), sizeof line - strlen(line), "|%.3f (",
                     r->e.completion_s[m] * 1e3);
            for (int d = 0; d < x->c->n_devs; d++)
                snprintf(line + strlen(line), sizeof line - strlen(line), "%s%d", d ? "/" : "",
                         r->e.ops_on[m * x->c->n_devs + d]);
            strncat(line, ")", sizeof line - strlen(line) - 1);
        }
        pl_table_row(t, "%s", line);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf("devices: ");
    for (int d = 0; d < x->c->n_devs; d++)
        printf("%s%s", d ? "/" : "", x->c->devs[d].name);
    printf("\n");
}

/* ---- JSON ---- */

static json_t *placement_json(const multi_ctx *x, const pl_plan *p, int m)
{
    json_t *o = json_object();
    for (int v = 0; v < x->u->n_ops; v++) {
        if (x->u->ops[v].tenant != m) continue;
        const char *name = x->u->ops[v].name + strlen(x->names[m]) + 1; /* past "TENANT/" */
        json_object_set_new(o, name, json_string(x->c->devs[p->dev[v]].name));
    }
    return o;
}

static json_t *row_json(const multi_ctx *x, const row *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "algo", json_string(r->algo));
    json_object_set_new(j, "ok", json_boolean(r->ok));
    if (!r->ok) {
        json_object_set_new(j, "error", json_string(r->msg));
        return j;
    }
    json_object_set_new(j, "toct_s", json_real(r->e.toct_s));
    json_object_set_new(j, "makespan_s", json_real(r->e.makespan_s));
    json_object_set_new(j, "cold_period_s", json_real(r->e.cold_period_s));
    pl_cost_basis basis;
    double band = pl_cost_plan_band(x->k, r->plan->dev, &basis);
    cli_band_json(j, band, basis); /* after the call that sets basis */
    json_object_set_new(j, "search_s", json_real(r->plan->search_s));
    json_object_set_new(j, "found_by", json_string(r->credit.by));
    if (!strcmp(r->algo, "talos") && r->credit.refine.evals > 0) {
        const pl_refine_stats *s = &r->credit.refine;
        json_object_set_new(j, "refine",
                            json_pack("{s:i,s:I,s:f,s:f,s:f}", "moves", s->moves, "simulations",
                                      (json_int_t)s->evals, "toct_before_s", s->before_s,
                                      "toct_after_s", s->after_s, "seconds", s->secs));
    }
    json_object_set_new(j, "fits_memory", json_boolean(!r->e.oom));
    json_t *idle = json_object(), *busy = json_object();
    for (int d = 0; d < x->c->n_devs; d++) {
        json_object_set_new(idle, x->c->devs[d].name, json_real(r->e.idle_s[d]));
        json_object_set_new(busy, x->c->devs[d].name, json_real(r->e.busy_s[d]));
    }
    json_object_set_new(j, "idle_s", idle);
    json_object_set_new(j, "busy_s", busy);
    json_t *models = json_array();
    for (int m = 0; m < x->n; m++) {
        json_t *mj = json_object(), *on = json_object();
        json_object_set_new(mj, "name", json_string(x->names[m]));
        json_object_set_new(mj, "completion_s", json_real(r->e.completion_s[m]));
        for (int d = 0; d < x->c->n_devs; d++)
            json_object_set_new(on, x->c->devs[d].name,
                                json_integer(r->e.ops_on[m * x->c->n_devs + d]));
        json_object_set_new(mj, "ops_per_device", on);
        json_object_set_new(mj, "placement", placement_json(x, r->plan, m));
        json_array_append_new(models, mj);
    }
    json_object_set_new(j, "models", models);
    return j;
}

/* A tenant's per-op speedups over the reference device (pl_multi_speedup_spread). */
static json_t *spread_json(const multi_ctx *x, int m)
{
    pl_multi_spread s;
    pl_multi_speedup_spread(x->k, m, &s);
    return json_pack("{s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "over",
                     x->c->devs[x->a.ref_dev].name, "ops", s.n_ops, "given_ops", s.n_given, "min",
                     s.min, "p10", s.p10, "median", s.median, "p90", s.p90, "max", s.max, "geomean",
                     s.geomean, "overall", s.overall, "below_1", s.below_1);
}

/* The answer's schedule (cli_schedule_json, each op with its tenant) as j's "schedule";
 * nothing, with a note, when it cannot be simulated again (it was, to be evaluated). */
static void schedule_json(const multi_ctx *x, const multi_opts *o, const row *r, json_t *j)
{
    pl_sim_opts so = {.contention = o->po.contention, .record = true, .ignore_memory = true};
    pl_sim_result res;
    pl_err err = {""};
    if (!r->plan || pl_simulate(x->k, r->plan, &so, &res, &err) < 0) {
        if (r->plan) fprintf(stderr, "placer multi: note: no schedule: %s\n", err.msg);
        return;
    }
    cli_ctx c = {.g = x->u, .c = x->c, .k = x->k};
    json_object_set_new(j, "schedule", (json_t *)cli_schedule_json(&c, r->plan, &so, &res));
    pl_sim_result_free(&res);
}

/* What the co-run adds to a tenant's own error: (predicted / measured together) over
 * (predicted / measured alone), less 1 (docs/multi.md, "Fidelity of --run"). */
static double corun_error(double p, double q, double ap, double aq)
{
    return q > 0 && ap > 0 && aq > 0 ? (p / q) / (ap / aq) - 1 : 0;
}

/* "measured"."stage_times": every stage as run, in load order, beside the simulator's start
 * and end of the same ops (docs/multi.md, "Output"). */
static json_t *stage_times_json(const multi_ctx *x, const pl_multi_run_result *run)
{
    json_t *a = json_array();
    for (int s = 0; s < run->n_stages; s++) {
        const pl_multi_run_stage *t = &run->stages[s];
        json_array_append_new(a, json_pack("{s:s,s:s,s:i,s:f,s:f,s:f,s:f}", "model",
                                           x->names[t->tenant], "device", x->c->devs[t->dev].name,
                                           "ops", t->n_ops, "predicted_start_s", t->pred_start_s,
                                           "predicted_end_s", t->pred_end_s, "measured_start_s",
                                           t->start_s, "measured_end_s", t->end_s));
    }
    return a;
}

static json_t *doc_json(const multi_ctx *x, const multi_opts *o, const row *rows, int n,
                        const pl_multi_run_result *run, const alone_run *alone)
{
    json_t *j = json_object();
    json_object_set_new(j, "format", json_string("placer-multi/1"));
    json_object_set_new(j, "cluster", json_string(o->co.cluster));
    json_object_set_new(j, "contention", json_string(pl_contention_name(o->po.contention)));
    cli_calibration_json(j, &x->k->params);
    if (x->note[0]) json_object_set_new(j, "note", json_string(x->note));
    json_t *opts = json_object();
    json_object_set_new(opts, "sv", json_pack("[f,f]", o->mo.sv_lo, o->mo.sv_hi));
    json_object_set_new(opts, "tv_s", json_real(o->mo.tv_s));
    json_object_set_new(opts, "affinity_threshold", json_real(o->mo.affinity));
    json_object_set_new(opts, "pack", json_boolean(!o->mo.no_pack));
    json_object_set_new(opts, "train", json_boolean(o->train));
    json_object_set_new(j, "options", opts);
    json_t *models = json_array();
    for (int m = 0; m < x->n; m++) {
        json_t *mj = json_object(), *aff = json_object();
        json_object_set_new(mj, "name", json_string(x->names[m]));
        json_object_set_new(mj, "path", json_string(o->models[m]));
        json_object_set_new(mj, "ops", json_integer(x->models[m]->n_ops));
        if (o->train) json_object_set_new(mj, "batch", json_integer(x->batch[m]));
        json_object_set_new(mj, "nod", json_integer(x->a.nod[m]));
        json_object_set_new(mj, "group", json_integer(x->a.group[m] + 1));
        for (int b = 0; b < x->n; b++)
            if (b != m)
                json_object_set_new(aff, x->names[b], json_real(x->a.affinity[m * x->n + b]));
        json_object_set_new(mj, "affinity", aff);
        json_object_set_new(mj, "speedups", spread_json(x, m));
        json_array_append_new(models, mj);
    }
    json_object_set_new(j, "models", models);
    json_t *algos = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(algos, row_json(x, &rows[i]));
    json_object_set_new(j, "algorithms", algos);
    int a = answer_of(rows, n);
    if (a >= 0) /* the row it copies: "algorithms"[index] */
        json_object_set_new(j, "answer",
                            json_pack("{s:s,s:s,s:i,s:f,s:b}", "algo", rows[a].algo, "found_by",
                                      rows[a].credit.by, "index", a, "toct_s", rows[a].e.toct_s,
                                      "fits_memory", !rows[a].e.oom));
    if (a >= 0) /* the answer's run on the shared devices, for `placer report`'s Gantt chart */
        schedule_json(x, o, &rows[a], j);
    if (run) {
        json_t *rj = json_object(), *per = json_object();
        json_object_set_new(rj, "algo", json_string(rows[a].algo));
        json_object_set_new(rj, "repeat", json_integer(run->repeat));
        json_object_set_new(rj, "stages", json_integer(run->n_stages));
        json_object_set_new(rj, "toct_s", json_real(run->toct_s));
        json_object_set_new(rj, "makespan_s", json_real(run->makespan_s));
        for (int m = 0; m < x->n; m++)
            json_object_set_new(per, x->names[m], json_real(run->completion_s[m]));
        json_object_set_new(rj, "completion_s", per);
        json_object_set_new(rj, "stage_times", stage_times_json(x, run));
        if (alone) {
            json_t *aj = json_object(), *cj = json_object();
            for (int m = 0; m < x->n; m++) {
                json_object_set_new(aj, x->names[m],
                                    json_pack("{s:f,s:f,s:f}", "predicted_s", alone->pred_s[m],
                                              "measured_s", alone->meas_s[m], "wait_s",
                                              alone->gap_s[m]));
                json_object_set_new(
                    cj, x->names[m],
                    json_real(corun_error(rows[a].e.completion_s[m], run->completion_s[m],
                                          alone->pred_s[m], alone->meas_s[m])));
            }
            json_object_set_new(rj, "alone", aj);
            json_object_set_new(rj, "corun_error", cj);
        }
        json_object_set_new(j, "measured", rj);
    }
    return j;
}

/* ---- running for real ---- */

static cli_exit run_real(const multi_ctx *x, const multi_opts *o, const row *r,
                         pl_multi_run_result *res)
{
    pl_err err = {""};
    if (!r->ok) return cli_fail("multi", "--run: %s found no plan: %s", r->algo, r->msg);
    if (pl_multi_run(x->models, o->models, x->n, x->u, x->c, x->k, r->plan, &o->ro, res, &err) < 0)
        return cli_fail("multi", "--run: %s's plan was not measured: %s", r->algo, err.msg);
    return CLI_EXIT_OK;
}

/* Tenant m's share of plan p as a plan of its own on u (its one-model union): the same
 * devices, each device's ops in the same order. The ops of tenant m are contiguous in the
 * union from `off` (pl_graph_union). */
static pl_plan *share_of(const pl_plan *p, int off, int n_ops)
{
    pl_plan *q = pl_plan_new(n_ops, p->n_devs);
    int *seq = pl_malloc((size_t)n_ops * sizeof *seq), n = 0;
    for (int j = 0; j < n_ops; j++)
        q->dev[j] = p->dev[off + j];
    for (int i = 0; p->order && i < p->order_off[p->n_devs]; i++)
        if (p->order[i] >= off && p->order[i] < off + n_ops) seq[n++] = p->order[i] - off;
    if (n == n_ops) pl_plan_set_order(q, seq);
    free(seq);
    return q;
}

/* The profiles that apply to model m alone: its own and those that name no model but time
 * its ops (a union of one model refuses a profile of another, and one that times none of its
 * ops, docs/multi.md). Its file is hashed only when a profile names a model; -1 with err set
 * when it cannot be read. */
static int profiles_of(const multi_ctx *x, int m, const pl_profile **out, pl_err *err)
{
    const char *sha = NULL;
    int n = 0;
    for (int i = 0; i < x->n_prof; i++) {
        const pl_profile *p = x->prof[i];
        if (p->model_sha256[0] && !sha && !(sha = pl_graph_sha256(x->models[m], err))) return -1;
        if (p->model_sha256[0] ? !strcmp(sha, p->model_sha256)
                               : pl_profile_ops_timed(p, x->models[m], -1) > 0)
            out[n++] = p;
    }
    return n;
}

/* One tenant by itself: predicted (the simulator on its share) and measured (pl_multi_run
 * of one model), into a. */
static int alone_one(const multi_ctx *x, const multi_opts *o, const pl_plan *p, int m, int off,
                     alone_run *a, pl_err *err)
{
    pl_multi_run_opts ro = o->ro;
    ro.gap_s = a->gap_s[m];
    const pl_profile *prof[CLI_MAX_LIST];
    int n_prof = profiles_of(x, m, prof, err);
    if (n_prof < 0) return -1;
    pl_graph *u = pl_graph_union(&x->models[m], (const char *const *)&x->names[m], 1, err);
    pl_cost *k = u ? pl_cost_new(u, x->c, &x->k->params, prof, n_prof, err) : NULL;
    pl_plan *q = k ? share_of(p, off, x->models[m]->n_ops) : NULL;
    pl_multi_eval e = {0}; /* predicted after the same wait (cold requests) */
    pl_multi_run_result rr = {0};
    int rc =
        q && pl_multi_evaluate_after(k, q, o->po.contention, ro.gap_s, &e, err) == 0 &&
                pl_multi_run(&x->models[m], &o->models[m], 1, u, x->c, k, q, &ro, &rr, err) == 0
            ? 0
            : -1;
    if (rc == 0) a->pred_s[m] = e.completion_s[0], a->meas_s[m] = rr.completion_s[0];
    pl_multi_run_result_free(&rr);
    pl_multi_eval_free(&e);
    pl_plan_free(q);
    pl_cost_free(k);
    pl_graph_free(u);
    return rc;
}

/* Each share alone, its requests spaced by the wait the round gave it: the round's end less
 * its completion (the median of the run together), at most 10 s, so that its data are as old
 * when it starts as in the round (docs/multi.md, "Fidelity of --run": a model that waits
 * finds them gone from the caches). */
static cli_exit run_alone(const multi_ctx *x, const multi_opts *o, const row *r,
                          const pl_multi_run_result *together, alone_run *a)
{
    pl_err err = {""};
    for (int m = 0; m < x->n; m++)
        a->gap_s[m] = fmin(10, fmax(0, together->makespan_s - together->completion_s[m]));
    for (int m = 0, off = 0; m < x->n; off += x->models[m]->n_ops, m++) {
        cli_progress("multi: %s by itself ...", x->names[m]);
        if (alone_one(x, o, r->plan, m, off, a, &err) < 0)
            return cli_fail("multi", "--alone: model '%s' by itself was not measured: %s",
                            x->names[m], err.msg);
    }
    return CLI_EXIT_OK;
}

static void print_run(const multi_ctx *x, const row *r, const pl_multi_run_result *res,
                      const alone_run *a)
{
    printf("\nmeasured on this machine (%s's plan, %d stages, median of %d rounds):\n", r->algo,
           res->n_stages, res->repeat);
    pl_table *t = pl_table_new(a ? "model|>predicted ms|>measured ms|>error|>alone: wait "
                                   "ms|>predicted ms|>measured ms|>error|>co-run error"
                                 : "model|>predicted ms|>measured ms|>error");
    for (int m = 0; m < x->n; m++) {
        double p = r->e.completion_s[m], q = res->completion_s[m];
        if (!a) {
            pl_table_row(t, "%s|%.3f|%.3f|%+.0f%%", x->names[m], p * 1e3, q * 1e3,
                         q > 0 ? 100 * (p - q) / q : 0);
            continue;
        }
        double ap = a->pred_s[m], aq = a->meas_s[m];
        pl_table_row(t, "%s|%.3f|%.3f|%+.0f%%|%.3f|%.3f|%.3f|%+.0f%%|%+.0f%%", x->names[m], p * 1e3,
                     q * 1e3, q > 0 ? 100 * (p - q) / q : 0, a->gap_s[m] * 1e3, ap * 1e3, aq * 1e3,
                     aq > 0 ? 100 * (ap - aq) / aq : 0, 100 * corun_error(p, q, ap, aq));
    }
    pl_table_row(t, a ? "TOCT|%.3f|%.3f|%+.0f%%|||||" : "TOCT|%.3f|%.3f|%+.0f%%", r->e.toct_s * 1e3,
                 res->toct_s * 1e3,
                 res->toct_s > 0 ? 100 * (r->e.toct_s - res->toct_s) / res->toct_s : 0);
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static cli_exit status_of(const row *rows, int n)
{
    bool any_ok = false, any_fit = false;
    for (int i = 0; i < n; i++) {
        any_ok |= rows[i].ok;
        any_fit |= rows[i].ok && !rows[i].e.oom;
    }
    if (!any_ok) return CLI_EXIT_BAD_INPUT;
    return any_fit ? CLI_EXIT_OK : CLI_EXIT_INFEASIBLE;
}

cli_exit cli_multi(int argc, char **argv)
{
    multi_opts o;
    bool help;
    cli_exit parsed = parse(argc, argv, &o, &help);
    if (!cli_ok(parsed) || help) return parsed;
    multi_ctx x;
    cli_exit rc = ctx_open(&o, &x);
    if (!cli_ok(rc)) return rc;
    pl_err err = {""};
    if (pl_place_precheck(x.k, &err) < 0) { /* an op that fits no device: cli.h, status 1 */
        cli_fail("multi", "%s", err.msg);
        ctx_close(&x);
        return CLI_EXIT_INFEASIBLE;
    }
    row rows[MAX_ALGOS];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < o.n_algos; i++) {
        rows[i].algo = o.algos[i];
        cli_progress("multi: %s on %d models ...", o.algos[i], x.n);
        run_algo(&x, &o, &rows[i]);
        if (!rows[i].ok) fprintf(stderr, "placer multi: %s: %s\n", rows[i].algo, rows[i].msg);
    }
    rc = status_of(rows, o.n_algos);
    pl_multi_run_result res = {0};
    alone_run alone = {0};
    bool ran = false, ran_alone = false;
    if (o.run && rc.status != CLI_EXIT_BAD_INPUT.status) {
        if (!cli_ok(run_real(&x, &o, &rows[answer_of(rows, o.n_algos)], &res)))
            rc = CLI_EXIT_BAD_INPUT;
        else
            ran = true;
    }
    if (ran && o.alone) {
        if (!cli_ok(run_alone(&x, &o, &rows[answer_of(rows, o.n_algos)], &res, &alone)))
            rc = CLI_EXIT_BAD_INPUT;
        else
            ran_alone = true;
    }
    { /* every algorithm's row, failed ones with their error */
        json_t *doc =
            doc_json(&x, &o, rows, o.n_algos, ran ? &res : NULL, ran_alone ? &alone : NULL);
        if (o.out && !cli_ok(cli_write_json("multi", o.out, doc))) rc = CLI_EXIT_BAD_INPUT;
        if (o.co.json)
            cli_json_out(doc);
        else {
            json_decref(doc);
            printf("%d models on %s (%s contention)\n", x.n, x.c->name,
                   pl_contention_name(o.po.contention));
            if (o.train) print_batches(&x);
            print_models(&x);
            if (o.explain) print_spread(&x);
            printf("\n");
            print_summary(&x, rows, o.n_algos);
            printf("\n");
            print_per_model(&x, rows, o.n_algos);
            if (ran)
                print_run(&x, &rows[answer_of(rows, o.n_algos)], &res, ran_alone ? &alone : NULL);
        }
    }
    pl_multi_run_result_free(&res);
    for (int i = 0; i < o.n_algos; i++)
        pl_plan_free(rows[i].plan), pl_multi_eval_free(&rows[i].e);
    ctx_close(&x);
    return rc;
}
