/* common.c: what the verbs that run a model on a cluster share: options, loading, the
 * per-device table. */
#include "cli.h"
#include "placer/calib.h"
#include "placer/catalog.h"
#include "placer/json.h"
#include "placer/report.h"

#include <jansson.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A single-valued option: stores v, or says what the option wants. */
static int one(const char *verb, const char *opt, const char *v, const char *wants,
               const char **field)
{
    if (!v) return cli_error(verb, "%s wants %s", opt, wants);
    *field = v;
    return 1;
}

int cli_list(const char *verb, const char *opt, const char *v, const char **list, int *n)
{
    if (!v) return cli_error(verb, "%s wants a value", opt);
    if (*n == CLI_MAX_LIST) return cli_error(verb, "too many %s options", opt);
    list[(*n)++] = v;
    return 1;
}

/* True, after saying so, when the verb has no use for the shared option `opt`. */
static bool refused(const char *verb, const cli_common *o, unsigned bit, const char *opt)
{
    if (!(o->refuse & bit)) return false;
    cli_error(verb, "%s has no effect on placer %s, so it is refused (placer %s --help)", opt, verb,
              verb);
    return true;
}

int cli_common_set(const char *verb, int code, const char *v, cli_common *o)
{
    switch (code) {
    case CLI_JSON:
        return o->json = true, 1;
    case CLI_NO_CALIBRATION:
        return o->no_calibration = true, 1;
    case CLI_CLUSTER:
        return one(verb, "--cluster", v, "a cluster file", &o->cluster);
    case CLI_CATALOG:
        return one(verb, "--catalog", v, "a catalogue file", &o->catalog);
    case CLI_COST_PARAMS:
        return refused(verb, o, CLI_NO_COST_PARAMS, "--cost-params")
                   ? -1
                   : one(verb, "--cost-params", v, "a placer-cost-params/1 file", &o->cost_params);
    case CLI_CONFIG:
        return one(verb, "--config", v, "a configuration name", &o->config);
    case CLI_DIM:
        return cli_list(verb, "--dim", v, o->dims, &o->n_dims);
    case CLI_INPUT:
        return cli_list(verb, "--input", v, o->shapes, &o->n_shapes);
    case CLI_PROFILE:
        return refused(verb, o, CLI_NO_PROFILE, "--profile")
                   ? -1
                   : cli_list(verb, "--profile", v, o->profiles, &o->n_profiles);
    case CLI_CONTENTION:
        if (refused(verb, o, CLI_NO_CONTENTION, "--contention")) return -1;
        if (!v || pl_contention_parse(v, &o->contention) < 0)
            return cli_error(verb, "--contention wants ports, pair or none");
        return o->contention_set = true, 1;
    case CLI_ARG:
        if (o->model) return cli_error(verb, "one model at a time ('%s' and '%s')", o->model, v);
        return o->model = v, 1;
    default:
        return 0;
    }
}

int cli_place_set(const char *verb, int code, const char *v, pl_place_opts *po, bool *measured)
{
    long n;
    switch (code) {
    case CLI_SEED:
        return cli_seed(verb, "--seed", v, &po->seed) < 0 ? -1 : 1;
    case CLI_TIME_LIMIT:
        return cli_seconds(verb, "--time-limit", v, &po->time_limit_s) < 0 ? -1 : 1;
    case CLI_NO_COARSEN:
        return po->no_coarsen = true, 1;
    case CLI_FINE_CUTS:
        return po->fine_cuts = true, 1;
    case CLI_MEASURED:
        return *measured = true, 1;
    case CLI_EPISODES:
        if (cli_count(verb, "--episodes", v, 1, 1000000, &n) < 0) return -1;
        return po->iterations = (int)n, 1;
    default:
        return 0;
    }
}

/* The short options' string for getopt_long: '-' returns positional arguments in order (code
 * 1), ':' returns a missing value as ':' rather than printing. */
static void shorts(const cli_args *a, char *buf, size_t n)
{
    snprintf(buf, n, "-:%s", a->shorts ? a->shorts : "h");
}

/* True when the long option argv[at] is spelled in full (`--name` or `--name=...`). */
static bool full_name(const char *arg, const char *name)
{
    size_t n = strcspn(arg + 2, "=");
    return !strncmp(arg, "--", 2) && strlen(name) == n && !strncmp(arg + 2, name, n);
}

static int unknown(const cli_args *a, const char *arg)
{
    if (!a->brief) return cli_error(a->verb, "unknown option '%s'\n%s", arg, a->help);
    return cli_error(a->verb, "unknown option '%s' (placer %s --help)", arg, a->verb);
}

/* Whether option code c may be given several times, each adding to a list: the shared lists,
 * and those the verb names (by code: train's --batch is one value, multi's a list). */
static bool a_list(const cli_args *a, int c)
{
    if (c == CLI_DIM || c == CLI_INPUT || c == CLI_PROFILE) return true;
    for (const int *l = a->lists; l && *l; l++)
        if (*l == c) return true;
    return false;
}

/* -1, after saying so, when option code c (which takes a value) was given before: the second
 * value would replace the first in silence. */
static int once(cli_args *a, int c, const char *arg)
{
    for (int i = 0; i < a->n_seen; i++)
        if (a->seen[i] == c)
            return cli_error(a->verb, "%.*s given twice: give it once", (int)strcspn(arg, "="),
                             arg);
    if (a->n_seen < (int)(sizeof a->seen / sizeof *a->seen)) a->seen[a->n_seen++] = c;
    return 0;
}

int cli_next(cli_args *a, const char **v)
{
    char opts[64];
    shorts(a, opts, sizeof opts);
    if (!a->at) optind = 0, opterr = 0; /* optind 0: glibc starts a new walk */
    int at = a->at = optind ? optind : 1, index = -1;
    int c = getopt_long(a->argc, a->argv, opts, a->opts, &index);
    *v = optarg;
    if (c == -1 && at < a->argc) /* getopt_long stops early only at "--" */
        return cli_error(a->verb,
                         "'--' to end the options is refused: every argument after the options "
                         "is a path, and a path that starts with '-' is written ./-NAME");
    if (c == -1) return 0;
    if (c == '?') return unknown(a, a->argv[at]);
    if (c == ':') return *v = NULL, optopt; /* the value's parser says what it wants */
    if (index >= 0 && !full_name(a->argv[at], a->opts[index].name)) return unknown(a, a->argv[at]);
    const char *arg = a->argv[at];
    bool takes_value = index >= 0 ? a->opts[index].has_arg != no_argument : c != 'h';
    if (c != CLI_ARG && takes_value && !a_list(a, c) && once(a, c, arg) < 0) return -1;
    if (index < 0 && *v && arg[0] == '-' && arg[1] && arg[2] == '=' && *v == arg + 2)
        ++*v; /* -o=FILE as --opt=value (getopt_long alone would read "=FILE") */
    return c;
}

/* See cli.h: refused when no device of the clusters has the fit's model, warned when some. */
static int check_params_model(const char *verb, const char *path, const char *model,
                              const pl_cluster *const *c, int n_c)
{
    int devs = 0, match = 0;
    for (int k = 0; k < n_c; k++)
        devs += c[k]->n_devs, match += pl_cost_model_count(model, c[k]);
    pl_err err = {""};
    if (pl_cost_model_check(path, model, c, n_c, &err) < 0)
        return cli_error(verb, "--cost-params %s", err.msg);
    if (match < devs)
        fprintf(stderr,
                "placer %s: warning: --cost-params %s was fitted on device model '%s'; %d of "
                "%d devices are of another model and get the same efficiencies\n",
                verb, path, model, devs - match, devs);
    return 0;
}

/* The first CPU of the clusters that `model` applies to, NULL when none: a fit on it
 * (`placer calibrate -o`) holds the CPU fidelity target, so its estimates get that band
 * (docs/cost.md, "Uncertainty"), and it names the figures the fit may have scaled. */
static const pl_device *named_cpu(const char *model, const pl_cluster *const *c, int n_c)
{
    for (int k = 0; k < n_c; k++)
        for (int d = 0; d < c[k]->n_devs; d++)
            if (c[k]->devs[d].kind == PL_DEV_CPU && pl_cost_model_matches(model, &c[k]->devs[d]))
                return &c[k]->devs[d];
    return NULL;
}

/* A fit that scales a device's figures says so every time it prices (docs/calibrate.md,
 * "Another CPU"): the user's figures rest on it. */
static void say_scaled(const char *verb, const pl_cost_params *p, const pl_device *d)
{
    char note[1024];
    if (d && pl_calib_scale_note(p, d, note, sizeof note))
        fprintf(stderr, "placer %s: warning: %s\n", verb, note);
}

/* The first device of the clusters that is this machine, NULL when none. */
static const pl_device *this_machine(const pl_cluster *const *c, int n_c)
{
    for (int k = 0; k < n_c; k++)
        for (int d = 0; d < c[k]->n_devs; d++)
            if (c[k]->devs[d].this_machine) return &c[k]->devs[d];
    return NULL;
}

static void progress(const char *step)
{
    fprintf(stderr, "placer: measuring this machine once (docs/calibrate.md): %s\n", step);
}

/* This machine's calibration into *out (pl_machine_params), saying what happened. 1 when
 * used; 0, after a warning, when neither the cache nor a measurement works (the defaults stay). */
static int machine_params(const char *verb, const pl_device *d, pl_cost_params *out)
{
    char cpu[256], path[4096];
    pl_err refused = {""}, err = {""};
    int rc = pl_machine_params(d, progress, out, path, sizeof path, &refused, &err);
    if (refused.msg[0])
        fprintf(stderr, "placer %s: warning: the cached calibration is refused and rebuilt: %s\n",
                verb, refused.msg);
    if (rc == 0) {
        fprintf(stderr, "placer %s: warning: %s\n", verb, err.msg);
        return 0;
    }
    pl_cpu_model(cpu, sizeof cpu);
    if (rc == 2) fprintf(stderr, "placer: calibration of '%s' cached in %s\n", cpu, path);
    say_scaled(verb, out, d);
    return 1;
}

static const char *calibration = "uncalibrated";

const char *cli_calibration(void)
{
    return calibration;
}

void cli_calibration_json(void *o, const pl_cost_params *p)
{
    json_object_set_new(o, "calibration", json_string(calibration));
    if (p->peak_scale != 1 || p->mem_scale != 1)
        json_object_set_new(o, "calibration_scale",
                            json_pack("{s:f, s:f}", "peak", p->peak_scale, "memory", p->mem_scale));
}

int cli_cost_params(const char *verb, const cli_common *o, const pl_cluster *const *c, int n_c,
                    pl_cost_params *out)
{
    pl_err err = {""};
    pl_cost_params_default(out);
    calibration = o->cost_params ? "cost-params" : "uncalibrated";
    /* a verb that prices nothing (split) must not pay for measuring this machine */
    const pl_device *me =
        o->cost_params || (o->refuse & CLI_NO_COST_PARAMS) ? NULL : this_machine(c, n_c);
    if (me) {
        const char *env = getenv("PLACER_CALIBRATION");
        bool off = o->no_calibration || (env && !strcmp(env, "off"));
        if (!off && machine_params(verb, me, out)) {
            out->cpu_band = PL_BAND_CALIBRATED; /* docs/calibrate.md, "Fidelity" */
            return calibration = "this-machine", 0;
        }
        fprintf(stderr,
                "placer %s: note: uncalibrated: %s (this machine) is priced with the default "
                "efficiencies (%s); see docs/calibrate.md\n",
                verb, me->name,
                off ? (o->no_calibration ? "--no-calibration" : "PLACER_CALIBRATION=off")
                    : "the measurement failed");
        return 0;
    }
    if (!o->cost_params) return 0;
    if (pl_cost_params_load(o->cost_params, out, &err) < 0) return cli_error(verb, "%s", err.msg);
    if (!out->device_model[0]) return 0; /* a hand-written file that names no model */
    if (check_params_model(verb, o->cost_params, out->device_model, c, n_c) < 0) return -1;
    const pl_device *fitted = named_cpu(out->device_model, c, n_c);
    if (fitted) out->cpu_band = PL_BAND_CALIBRATED;
    say_scaled(verb, out, fitted);
    return 0;
}

const char *cli_basis_words(pl_cost_basis b)
{
    static const char *const words[PL_BASIS_COUNT] = {
        "times the model gives",
        "measured",
        "GPU kernel rules fitted to published timings",
        "GPU kernel rules calibrated on this GPU model",
        "the roofline calibrated on this CPU",
        "the roofline with default efficiencies"};
    return b >= 0 && b < PL_BASIS_COUNT ? words[b] : "?";
}

void cli_print_band(double band, pl_cost_basis basis)
{
    printf("%-11s ±%.0f %% (%s)\n", "band", band * 100, cli_basis_words(basis));
}

void cli_band_json(void *o, double band, pl_cost_basis basis)
{
    json_object_set_new(o, "band", json_real(band));
    json_object_set_new(o, "basis", json_string(pl_cost_basis_name(basis)));
}

/* The cluster of configuration --config in catalogue --catalog; x keeps the catalogue. */
static pl_cluster *catalog_cluster(const cli_common *o, cli_ctx *x, pl_err *err)
{
    x->cat = pl_catalog_load(o->catalog, err);
    if (!x->cat) return NULL;
    int k = pl_catalog_find(x->cat, o->config);
    if (k < 0) {
        pl_err_set(err, "%s: no configuration named '%s' (%d in the catalogue, e.g. '%s')",
                   o->catalog, o->config, x->cat->n, x->cat->n ? x->cat->configs[0].name : "");
        return NULL;
    }
    return x->cat->configs[k].cluster;
}

cli_exit cli_ctx_open(const char *verb, const cli_common *o, cli_ctx *x)
{
    memset(x, 0, sizeof *x);
    if (!o->model) return cli_fail(verb, "which model? (placer %s --help)", verb);
    if (o->cluster && o->catalog)
        return cli_fail(verb, "give --cluster FILE or --catalog CAT --config NAME, not both");
    if (o->catalog && !o->config)
        return cli_fail(verb, "--catalog wants --config NAME: which configuration?");
    if (!o->cluster && !o->catalog) {
        char dir[4096];
        return cli_fail(verb,
                        "which cluster? give --cluster FILE (examples in %s/) or --catalog CAT "
                        "--config NAME",
                        cli_own_dir("share/placer/clusters", "examples/clusters", dir, sizeof dir));
    }
    pl_err err = {""};
    pl_load_opts lo = {.dims = (const char **)o->dims,
                       .n_dims = o->n_dims,
                       .input_shapes = (const char **)o->shapes,
                       .n_input_shapes = o->n_shapes};
    x->g = pl_graph_load(o->model, &lo, &err);
    if (x->g) cli_print_warnings(x->g);
    if (x->g && o->cluster) x->c = pl_cluster_load(o->cluster, &err);
    if (x->g && o->catalog) x->c = catalog_cluster(o, x, &err);
    for (int k = 0; x->c && k < o->n_profiles; k++) {
        x->prof[k] = pl_profile_load(o->profiles[k], &err);
        if (!x->prof[k]) break;
        x->n_prof++;
    }
    pl_cost_params params;
    if (x->c && cli_cost_params(verb, o, (const pl_cluster *const *)&x->c, 1, &params) < 0) {
        cli_ctx_close(x);
        return CLI_EXIT_BAD_INPUT;
    }
    if (x->c && x->n_prof == o->n_profiles)
        x->k =
            pl_cost_new(x->g, x->c, &params, (const pl_profile *const *)x->prof, x->n_prof, &err);
    if (!x->k) {
        cli_ctx_close(x);
        return cli_fail(verb, "%s", err.msg);
    }
    return CLI_EXIT_OK;
}

void cli_ctx_close(cli_ctx *x)
{
    pl_cost_free(x->k);
    for (int k = 0; k < x->n_prof; k++)
        pl_profile_free(x->prof[k]);
    if (x->cat)
        pl_catalog_free(x->cat);
    else
        pl_cluster_free(x->c);
    pl_graph_free(x->g);
    memset(x, 0, sizeof *x);
}

static int ops_on(const pl_plan *p, int d)
{
    int n = 0;
    for (int i = 0; i < p->n_ops; i++)
        n += p->dev[i] == d;
    return n;
}

void cli_print_devices(const cli_ctx *x, const pl_plan *p, const pl_sim_result *r)
{
    pl_table *t = pl_table_new("device|model|>ops|>busy ms|>util|>peak memory|>capacity|>use");
    char a[32], b[32];
    for (int d = 0; d < x->c->n_devs; d++) {
        const pl_device *dv = &x->c->devs[d];
        pl_table_row(t, "%s|%s|%d|%.3f|%.0f%%|%s|%s|%.0f%%", dv->name, dv->model, ops_on(p, d),
                     r->busy_s[d] * 1e3, r->makespan_s > 0 ? 100 * r->busy_s[d] / r->makespan_s : 0,
                     pl_fmt_bytes(r->peak_mem_bytes[d], a, sizeof a),
                     pl_fmt_bytes(dv->memory_bytes, b, sizeof b),
                     dv->memory_bytes > 0 ? 100 * r->peak_mem_bytes[d] / dv->memory_bytes : 0);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

void *cli_devices_json(const cli_ctx *x, const pl_plan *p, const pl_sim_result *r)
{
    json_t *a = json_array();
    for (int d = 0; d < x->c->n_devs; d++) {
        const pl_device *dv = &x->c->devs[d];
        json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:f, s:f, s:f, s:f}", "device",
                                           dv->name, "model", dv->model, "ops", ops_on(p, d),
                                           "busy_s", r->busy_s[d], "utilisation",
                                           r->makespan_s > 0 ? r->busy_s[d] / r->makespan_s : 0.0,
                                           "peak_memory_bytes", r->peak_mem_bytes[d],
                                           "memory_bytes", dv->memory_bytes));
    }
    return a;
}

void cli_print_links(const cli_ctx *x, const pl_sim_result *r)
{
    int n = x->c->n_devs, used = 0;
    pl_table *t = pl_table_new("link|>data|>busy ms|>util");
    char a[32];
    for (int i = 0; i < n * n; i++) {
        if (r->link_bytes[i] <= 0) continue;
        used++;
        pl_table_row(t, "%s -> %s|%s|%.3f|%.0f%%", x->c->devs[i / n].name, x->c->devs[i % n].name,
                     pl_fmt_bytes(r->link_bytes[i], a, sizeof a), r->link_busy_s[i] * 1e3,
                     r->makespan_s > 0 ? 100 * r->link_busy_s[i] / r->makespan_s : 0);
    }
    if (used) {
        putchar('\n');
        pl_table_print(t, stdout);
    }
    pl_table_free(t);
}

void *cli_links_json(const cli_ctx *x, const pl_sim_result *r)
{
    int n = x->c->n_devs;
    json_t *a = json_array();
    for (int i = 0; i < n * n; i++)
        if (r->link_bytes[i] > 0)
            json_array_append_new(a,
                                  json_pack("{s:s, s:s, s:f, s:f}", "from", x->c->devs[i / n].name,
                                            "to", x->c->devs[i % n].name, "bytes", r->link_bytes[i],
                                            "busy_s", r->link_busy_s[i]));
    return a;
}

/* The first request's schedule: what `placer report` draws as a Gantt chart per device and
 * per link (docs/report.md); the same times as --trace's, in seconds. */
void *cli_schedule_json(const cli_ctx *x, const pl_plan *p, const pl_sim_opts *so,
                        const pl_sim_result *r)
{
    json_t *ops = json_array(), *xfers = json_array();
    for (int i = 0; r->op_start_s && i < x->g->n_ops; i++) {
        json_t *e = json_pack("{s:s, s:s, s:f, s:f}", "op", x->g->ops[i].name, "device",
                              x->c->devs[p->dev[i]].name, "start_s", r->op_start_s[i], "end_s",
                              r->op_end_s[i]);
        if (x->g->n_tenants > 1) /* several models share the devices (placer multi) */
            json_object_set_new(e, "tenant", json_string(x->g->tenant_names[x->g->ops[i].tenant]));
        json_array_append_new(ops, e);
    }
    for (int i = 0; i < r->n_xfers; i++) {
        const pl_xfer *t = &r->xfers[i];
        int64_t bytes = x->g->tensors[t->tensor].bytes;
        if (t->request == 0)
            json_array_append_new(
                xfers, json_pack("{s:s, s:s, s:s, s:f, s:f, s:I}", "tensor",
                                 x->g->tensors[t->tensor].name, "from", x->c->devs[t->from].name,
                                 "to", x->c->devs[t->to].name, "start_s", t->start_s, "end_s",
                                 t->end_s, "bytes", (json_int_t)(bytes > 0 ? bytes : 0)));
    }
    json_t *o = json_pack("{s:o, s:o}", "ops", ops, "transfers", xfers);
    pl_mem_step *st;
    int n;
    pl_err err = {""};
    if (pl_sim_memory_curve(x->k, p, so, r, &st, &n, &err) < 0) {
        fprintf(stderr, "placer: note: %s\n", err.msg); /* the schedule stands without it */
        return o;
    }
    json_t *mem = json_array();
    for (int i = 0, j; i < n; i = j) {
        json_t *t = json_array(), *b = json_array();
        for (j = i; j < n && st[j].dev == st[i].dev; j++)
            json_array_append_new(t, json_real(st[j].t_s)),
                json_array_append_new(b, json_real(st[j].bytes));
        json_array_append_new(mem, json_pack("{s:s, s:o, s:o}", "device",
                                             x->c->devs[st[i].dev].name, "t_s", t, "bytes", b));
    }
    free(st);
    json_object_set_new(o, "memory", mem);
    return o;
}

void cli_progress(const char *fmt, ...)
{
    if (!isatty(STDERR_FILENO)) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

int cli_run_algo(const cli_ctx *x, const pl_algo *a, const pl_place_opts *po, const pl_sim_opts *so,
                 pl_plan **plan, pl_sim_result *r, pl_err *err)
{
    if (pl_place_precheck(x->k, err) < 0) return *plan = NULL, -2;
    *plan = pl_plan_new(x->g->n_ops, x->c->n_devs);
    (*plan)->contention = so->contention;
    err->msg[0] = 0;
    int rc = pl_place(a, x->k, po, *plan, err);
    /* under the pool (po->use_pool) every rank has the same note: rank 0 alone says it */
    bool say = !po->use_pool || pl_dist_rank() == 0;
    if (rc == 0 && err->msg[0] && say) { /* the note may already name its algorithm */
        size_t n = strlen(a->name);
        bool named = !strncmp(err->msg, a->name, n) && err->msg[n] == ':';
        fprintf(stderr, "placer: note: %s%s%s\n", named ? "" : a->name, named ? "" : ": ",
                err->msg);
    }
    pl_err note = *err;
    if (rc < 0 || pl_simulate(x->k, *plan, so, r, err) < 0) {
        pl_plan_free(*plan);
        *plan = NULL;
        return -1;
    }
    (*plan)->predicted_makespan_s = r->makespan_s;
    *err = note; /* the algorithm's note, "" when none */
    return 0;
}

int cli_count(const char *verb, const char *opt, const char *v, long lo, long hi, long *out)
{
    long long x;
    if (!v) return cli_error(verb, "%s wants a whole number from %ld to %ld", opt, lo, hi);
    if (pl_parse_int(v, lo, hi, &x) < 0)
        return cli_error(verb, "%s: '%s' is not a whole number from %ld to %ld", opt, v, lo, hi);
    return *out = (long)x, 0;
}

int cli_seed(const char *verb, const char *opt, const char *v, unsigned *out)
{
    long long x;
    if (!v) return cli_error(verb, "%s wants a seed from 0 to %u", opt, UINT_MAX);
    if (pl_parse_int(v, 0, UINT_MAX, &x) < 0)
        return cli_error(verb, "%s: '%s' is not a seed: a whole number from 0 to %u", opt, v,
                         UINT_MAX);
    return *out = (unsigned)x, 0;
}

int cli_seconds(const char *verb, const char *opt, const char *v, double *out)
{
    pl_err err;
    if (!v) return cli_error(verb, "%s wants a duration such as 60s", opt);
    double x;
    /* a bare number at or below 0 is wrong whatever its unit: say that, not "unit missing" */
    if (cli_number_in(v, -DBL_MAX, 0, 0, &x))
        return cli_error(verb, "%s: '%s' is not a duration above 0", opt, v);
    if (pl_parse_quantity(v, PL_UNIT_SECONDS, out, &err) < 0)
        return cli_error(verb, "%s: %s", opt, err.msg);
    if (!(*out > 0) || *out > CLI_MAX_SECONDS)
        return cli_error(verb, "%s: '%s' is not a duration above 0 and at most %.0f s (a week)",
                         opt, v, CLI_MAX_SECONDS);
    return 0;
}

int cli_algos(const char *verb, const char *opt, const char *v, const pl_algo **out, int max)
{
    pl_err err;
    int n = pl_algo_parse_list(v, opt, out, max, &err);
    return n < 0 ? cli_error(verb, "%s", err.msg) : n;
}

bool cli_number_in(const char *v, double lo, double hi, unsigned open, double *out)
{
    char *end;
    double x = strtod(v, &end);
    bool in = x > lo || (!(open & CLI_OPEN_LO) && x == lo);
    in = in && (x < hi || (!(open & CLI_OPEN_HI) && x == hi));
    if (end == v || *end || !isfinite(x) || !in) return false;
    return *out = x, true;
}

int cli_number(const char *verb, const char *opt, const char *v, double lo, double hi,
               unsigned open, double *out)
{
    char range[96];
    snprintf(range, sizeof range, "%c%g, %g%c", open & CLI_OPEN_LO ? '(' : '[', lo, hi,
             open & CLI_OPEN_HI ? ')' : ']');
    if (!v) return cli_error(verb, "%s wants a number in %s", opt, range);
    if (!cli_number_in(v, lo, hi, open, out))
        return cli_error(verb, "%s: '%s' is not a number in %s", opt, v, range);
    return 0;
}

int cli_fraction(const char *verb, const char *opt, const char *v, bool below_one, double *out)
{
    const char *range = below_one ? "[0, 1)" : "[0, 1]";
    if (!v) return cli_error(verb, "%s wants a fraction in %s, such as 0.05", opt, range);
    if (!cli_number_in(v, 0, 1, below_one ? CLI_OPEN_HI : 0, out))
        return cli_error(verb, "%s: '%s' is not a fraction in %s", opt, v, range);
    return 0;
}

int cli_bytes(const char *verb, const char *opt, const char *v, double lo, double hi,
              const char *range, double *out)
{
    pl_err err;
    if (!v) return cli_error(verb, "%s wants a size such as 64KiB", opt);
    char *end;
    *out = strtod(v, &end); /* a bare number is bytes */
    if ((end == v || *end) && pl_parse_quantity(v, PL_UNIT_BYTES, out, &err) < 0)
        return cli_error(verb, "%s: %s", opt, err.msg);
    if (!(*out >= lo) || *out > hi) return cli_error(verb, "%s: '%s' is outside %s", opt, v, range);
    return 0;
}

int cli_file(const char *verb, const char *opt, const char *v, const char *what, const char **out)
{
    return one(verb, opt, v && *v ? v : NULL, what, out) < 0 ? -1 : 0;
}

cli_exit cli_parse(cli_args *a, cli_common *co, int (*take)(void *o, int code, const char *v),
                   void *o)
{
    const char *v;
    for (int c, rc; (c = cli_next(a, &v));) {
        if (c < 0) return CLI_EXIT_BAD_INPUT;
        if (c == 'h') { /* what follows is not read, as before the tables */
            fputs(a->help, stdout);
            a->asked_help = true;
            return CLI_EXIT_OK;
        }
        rc = co && !(c == CLI_ARG && a->own_args) ? cli_common_set(a->verb, c, v, co) : 0;
        if (rc < 0 || (!rc && take(o, c, v) < 0)) return CLI_EXIT_BAD_INPUT;
    }
    return CLI_EXIT_OK;
}

cli_exit cli_write_json(const char *verb, const char *path, const void *doc)
{
    pl_err err = {""};
    if (pl_json_save(doc, path, JSON_INDENT(2), &err) < 0)
        return cli_fail(verb, "-o %s: %s", path, err.msg);
    return CLI_EXIT_OK;
}
