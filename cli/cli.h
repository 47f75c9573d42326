/* cli.h: what the verbs share. Each verb is one file, cli/VERB.c, with one entry point.
 *
 * Exit status, the same for every verb (README.md, "Exit status"):
 *   0  success: the answer is printed (and written) and it is feasible.
 *   1  no feasible answer: the verb ran to the end and printed what it found, but it is not
 *      usable: deploy, no configuration tried meets the SLO; place and simulate, the plan does
 *      not fit in device memory; compare, no algorithm's plan fits. Files asked for (-o,
 *      --trace) are still written. inspect, split, run, profile and calibrate have no such
 *      outcome.
 *   2  bad input or failure: usage, a file or flag refused, an algorithm or an external
 *      process (CBC, the onnxruntime worker) failed, an output could not be written. The
 *      message on stderr says which verb, file or flag, and where.
 *
 * Two kinds of status, kept apart by the compiler:
 *   - cli_exit, a struct, is an exit status: what a verb's entry point returns (placer.c turns
 *     it into the process's status, once) and what every helper that decides the verb's
 *     outcome returns. cli_fail prints the message and gives CLI_EXIT_BAD_INPUT.
 *   - int is the library's rule, 0 or more on success and -1 on failure (after printing, with
 *     cli_error, which says the same as cli_fail and gives -1).
 * A cli_exit cannot be returned as an int, compared with `<`, or tested by `if`; an int
 * cannot be returned as a cli_exit. So a helper that says "exit status 2" can never be read by
 * a caller that tests `< 0` (issue 27: multi took a failed run for a success and crashed). */
#ifndef PLACER_CLI_H
#define PLACER_CLI_H

#include "placer/place.h"

#include <getopt.h>

typedef struct cli_exit {
    int status; /* 0, 1 or 2, as above */
} cli_exit;
#define CLI_EXIT_OK ((cli_exit){0})
#define CLI_EXIT_INFEASIBLE ((cli_exit){1})
#define CLI_EXIT_BAD_INPUT ((cli_exit){2})
/* True when e is exit status 0 (the verb goes on); false for 1 and 2. */
static inline bool cli_ok(cli_exit e)
{
    return e.status == 0;
}

cli_exit cli_inspect(int argc, char **argv);
cli_exit cli_place(int argc, char **argv);
cli_exit cli_simulate(int argc, char **argv);
cli_exit cli_compare(int argc, char **argv);
cli_exit cli_deploy(int argc, char **argv);
cli_exit cli_split(int argc, char **argv);
cli_exit cli_optimize(int argc, char **argv);
cli_exit cli_profile(int argc, char **argv);
cli_exit cli_profile_collectives(int argc, char **argv); /* profile --collectives */
cli_exit cli_calibrate(int argc, char **argv);
cli_exit cli_run(int argc, char **argv);
cli_exit cli_serverless(int argc, char **argv);
cli_exit cli_multi(int argc, char **argv);
cli_exit cli_train(int argc, char **argv);
cli_exit cli_learn_prior(int argc, char **argv);
cli_exit cli_report(int argc, char **argv);

/* Options every verb that runs a model on a cluster shares. */
#define CLI_MAX_LIST 64
typedef struct cli_common {
    const char *model, *cluster;
    const char *catalog, *config; /* a catalogue configuration instead of --cluster */
    const char *cost_params;      /* placer-cost-params/1 (placer calibrate -o) */
    const char *dims[CLI_MAX_LIST], *shapes[CLI_MAX_LIST], *profiles[CLI_MAX_LIST];
    int n_dims, n_shapes, n_profiles;
    pl_contention contention;
    bool contention_set;
    bool json;
    bool no_calibration; /* --no-calibration: this machine's devices at the default efficiencies */
    unsigned refuse; /* CLI_NO_*: shared options this verb has no use for (set before parsing) */
} cli_common;

/* --optimize (place, deploy): TASO's search run once first, as AutoDeep does (docs/rewrite.md,
 * "place and deploy --optimize"), priced on co->cluster (else this machine's CPU); the result
 * is written into the per-user cache (named by its content, kept: the plan is of it) and
 * co->model becomes its path (path[0..n)). -1 after printing the error. */
int cli_optimize_first(const char *verb, cli_common *co, char *path, size_t n);

/* Shared options a verb may refuse, so that none is accepted and then ignored in silence. */
#define CLI_NO_CONTENTION (1u << 0)
#define CLI_NO_PROFILE (1u << 1)
#define CLI_NO_COST_PARAMS (1u << 2)

/* What those options load: model, cluster, profiles and the cost table. */
typedef struct cli_ctx {
    pl_graph *g;
    pl_cluster *c;
    pl_profile *prof[CLI_MAX_LIST];
    int n_prof;
    pl_cost *k;
    struct pl_catalog *cat; /* owns c when the cluster is a catalogue configuration */
} cli_ctx;

/* Options, the same conventions for every verb (README.md, "Set-up"):
 *   - one table per verb, a getopt_long `struct option` array: the verb's own options, then
 *     the shared parts it takes (CLI_PLACE_OPTIONS, CLI_COMMON_OPTIONS: the options of a verb
 *     that runs a model on a cluster), then CLI_OPTIONS_END (--help and the end mark); the
 *     verb's entry point walks argv by it with cli_parse (cli_next underneath) and a `take`
 *     function that switches on the codes;
 *   - `--opt VALUE` and `--opt=VALUE`; the full name only (getopt_long's abbreviations are
 *     refused as unknown options, so that a new option never changes what an old line means);
 *   - positional arguments (model paths) anywhere, in order;
 *   - `--` to end the options is refused with a message: every positional argument is a
 *     path, and a path that starts with '-' is written ./-NAME;
 *   - an option that takes a value is given once (a second would replace the first in
 *     silence), except the lists: the shared --dim, --input and --profile, and the codes a
 *     verb names in cli_args.lists (multi's --batch, calibrate's --model); two names of one
 *     option (--algo, --algos) are one option;
 *   - every value goes through the parser of its kind below (cli_count, cli_number, ...), so
 *     that a refusal reads "placer VERB: OPT: 'VALUE' is not ...", and a missing value "placer
 *     VERB: OPT wants ...";
 *   - a refused shared option (CLI_NO_*) is refused by cli_common_set, not ignored;
 *   - --help prints the verb's own part and returns CLI_EXIT_OK: placer.c adds the shared
 *     tail (EXIT STATUS, ENVIRONMENT, FILES). No verb calls exit() (MPI's finalize and the
 *     tail run after every verb);
 *   - -o FILE is written whole or not at all, by the shared writer (pl_out, pl_outset,
 *     pl_json_save through cli_write_json, or the library's own savers built on them).
 * The codes a table's entries return: a verb's own from CLI_OWN up (or a short option's
 * letter, named in cli_args.shorts), the shared ones below it. */
enum {
    CLI_ARG = 1, /* a positional argument */
    CLI_JSON = 0x100,
    CLI_NO_CALIBRATION,
    CLI_CLUSTER,
    CLI_CATALOG,
    CLI_COST_PARAMS,
    CLI_CONFIG,
    CLI_DIM,
    CLI_INPUT,
    CLI_PROFILE,
    CLI_CONTENTION,
    CLI_SEED = 0x180, /* CLI_PLACE_OPTIONS */
    CLI_TIME_LIMIT,
    CLI_NO_COARSEN,
    CLI_FINE_CUTS,
    CLI_MEASURED,
    CLI_EPISODES,
    CLI_OWN = 0x200
};
// clang-format off
#define CLI_JSON_OPTION {"json", no_argument, NULL, CLI_JSON}
#define CLI_COMMON_OPTIONS                                                                         \
    CLI_JSON_OPTION,                                                                               \
    {"no-calibration", no_argument, NULL, CLI_NO_CALIBRATION},                                     \
    {"cluster", required_argument, NULL, CLI_CLUSTER},                                             \
    {"catalog", required_argument, NULL, CLI_CATALOG},                                             \
    {"cost-params", required_argument, NULL, CLI_COST_PARAMS},                                     \
    {"config", required_argument, NULL, CLI_CONFIG},                                               \
    {"dim", required_argument, NULL, CLI_DIM},                                                     \
    {"input", required_argument, NULL, CLI_INPUT},                                                 \
    {"profile", required_argument, NULL, CLI_PROFILE},                                             \
    {"contention", required_argument, NULL, CLI_CONTENTION}
/* What a placing verb (place, compare) passes to pl_place: cli_place_set takes them. */
#define CLI_PLACE_OPTIONS                                                                          \
    {"seed", required_argument, NULL, CLI_SEED},                                                   \
    {"time-limit", required_argument, NULL, CLI_TIME_LIMIT},                                       \
    {"no-coarsen", no_argument, NULL, CLI_NO_COARSEN},                                             \
    {"fine-cuts", no_argument, NULL, CLI_FINE_CUTS},                                               \
    {"measured", no_argument, NULL, CLI_MEASURED},                                                 \
    {"episodes", required_argument, NULL, CLI_EPISODES}
/* A table's last entries: --help (-h), then the end mark. */
#define CLI_OPTIONS_END {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}
// clang-format on

/* One walk over a verb's argv (argv[0] is the verb) by its table. shorts: the short options
 * ("ho:"; NULL: "h"). help: the verb's own part of --help; after an unknown option it is
 * printed too, or, when brief, "(placer VERB --help)" is said instead. */
typedef struct cli_args {
    const char *verb;
    int argc;
    char **argv;
    const struct option *opts;
    const char *shorts, *help;
    bool brief;
    bool own_args;    /* positional arguments go to the verb's take (several models), not to co */
    bool asked_help;  /* set by cli_parse: --help or -h was given, and the help printed */
    int at;           /* internal: the index of the element being read */
    const int *lists; /* the verb's own options that may repeat (0-terminated; NULL: none) */
    int seen[64], n_seen; /* internal: the codes of the options that take a value, as given */
} cli_args;
/* The walk of a verb's entry point (argc, argv) over its table, which is named `options`. */
#define CLI_ARGS(verb, shorts, help, brief)                                                        \
    {                                                                                              \
        (verb), argc, argv, options, (shorts), (help), (brief), false, false, 0, NULL, {0}, 0      \
    }
/* The next option's code, its value in *v (NULL when the option wants one and was given
 * none: the value's parser says what it wants); CLI_ARG with *v the positional argument; 0 at
 * the end; -1 after printing the error (unknown or abbreviated option, a value given to a
 * flag, `--`). */
int cli_next(cli_args *a, const char **v);
/* Takes one of CLI_PLACE_OPTIONS into *po (--measured into *measured): 1 when taken, 0 when
 * `code` is not one of them, -1 after printing the error. */
int cli_place_set(const char *verb, int code, const char *v, pl_place_opts *po, bool *measured);
/* The whole walk: --help and -h print a->help, set a->asked_help and end the walk (the verb
 * then returns CLI_EXIT_OK: placer.c adds the shared tail); each option through cli_common_set
 * (when co is not NULL), the others through take(o, code, value), which returns -1 after printing
 * the error. CLI_EXIT_BAD_INPUT after the first error. */
cli_exit cli_parse(cli_args *a, cli_common *co, int (*take)(void *o, int code, const char *v),
                   void *o);
/* Takes a shared option (or, for CLI_ARG, the one model path): 1 when taken, 0 when `code` is
 * not one of them, -1 after printing a usage error (a CLI_NO_* refusal among them). */
int cli_common_set(const char *verb, int code, const char *v, cli_common *o);
/* The cost parameters --cost-params names; without it, when a cluster has a device with
 * "this_machine", the calibration cached for this machine's CPU (measured now, once, when
 * absent, corrupt or for another CPU: docs/calibrate.md, "Calibrated by default"), unless
 * --no-calibration or PLACER_CALIBRATION=off, in which case a note on stderr says the
 * prediction is uncalibrated; else the defaults. -1 after printing the error.
 * Efficiencies are fitted to one device model: a file whose device_model matches no device of
 * the clusters c[0..n_c) (deploy: every configuration of its catalogue) is refused, naming the
 * file, its model and the clusters' models; when only some devices have that model, a warning
 * says the fit is applied to the others too (the cost model has one set of efficiencies).
 * A CPU fit (this machine's, or a file whose device_model is a CPU of the clusters) sets the
 * CPU band to PL_BAND_CALIBRATED (docs/cost.md, "Uncertainty"). */
int cli_cost_params(const char *verb, const cli_common *o, const pl_cluster *const *c, int n_c,
                    pl_cost_params *out);
/* How the last cli_cost_params priced, for the "calibration" field of the JSON outputs:
 * "cost-params" (--cost-params), "this-machine" (the cached fit of this machine) or
 * "uncalibrated" (the default efficiencies). */
const char *cli_calibration(void);
/* Sets o's "calibration" to cli_calibration(), and "calibration_scale" ({"peak": x,
 * "memory": y}) when p (what cli_cost_params gave) scales a device's figures
 * (docs/calibrate.md, "Another CPU"): a reader of the JSON sees what stderr's warning says. */
void cli_calibration_json(void *o, const pl_cost_params *p); /* o: a jansson json_t * */
/* How far a predicted time may be off (docs/cost.md, "Uncertainty"): a basis in words ("GPU
 * kernel rules fitted to published timings"); a placement's band and the basis of its widest
 * op (pl_cost_plan_band) as the line "band  ±B % (words)" of a verb's text output, and as the
 * members "band" (relative) and "basis" (pl_cost_basis_name) of the JSON object o. */
const char *cli_basis_words(pl_cost_basis b);
void cli_print_band(double band, pl_cost_basis basis);
void cli_band_json(void *o, double band, pl_cost_basis basis);
/* Loads everything; prints the error and returns CLI_EXIT_BAD_INPUT on failure. */
cli_exit cli_ctx_open(const char *verb, const cli_common *o, cli_ctx *x);
void cli_ctx_close(cli_ctx *x);
/* The per-device table of a simulated plan (ops, busy, utilisation, peak memory). */
void cli_print_devices(const cli_ctx *x, const pl_plan *p, const pl_sim_result *r);
/* The same as JSON (a jansson json_t *). */
void *cli_devices_json(const cli_ctx *x, const pl_plan *p, const pl_sim_result *r);
/* Links that carried data: bytes, busy time, utilisation; and as JSON. */
void cli_print_links(const cli_ctx *x, const pl_sim_result *r);
void *cli_links_json(const cli_ctx *x, const pl_sim_result *r);
/* The first request's recorded schedule (so->record) as {"ops": [{op, device, start_s,
 * end_s}], "transfers": [{tensor, from, to, start_s, end_s, bytes}], "memory": [{device,
 * t_s: [...], bytes: [...]}]} (memory per device over time: pl_sim_memory_curve's steps,
 * every request): the "schedule" of place's, simulate's and multi's --json, drawn by `placer
 * report`. Ops of a union of several models (multi) also name their "tenant". */
void *cli_schedule_json(const cli_ctx *x, const pl_plan *p, const pl_sim_opts *so,
                        const pl_sim_result *r);
/* Runs algorithm `a` and simulates its plan under `so` (so->record is honoured). On success
 * *plan is the plan (with predicted_makespan_s set), r the result and err the algorithm's
 * note, already shown on stderr ("" when none). -2 with err set when no
 * plan can fit at all (pl_place_precheck: exit status 1), -1 on any other failure. */
int cli_run_algo(const cli_ctx *x, const pl_algo *a, const pl_place_opts *po, const pl_sim_opts *so,
                 pl_plan **plan, pl_sim_result *r, pl_err *err);
/* The parsers every flag's value goes through, one per kind; each prints "placer VERB: OPT:
 * 'VALUE' ..." and returns -1 on a bad value (v NULL: the flag was given no value), else 0.
 * A whole number in [lo, hi] (pl_parse_int: no trailing text, no overflow). */
int cli_count(const char *verb, const char *opt, const char *v, long lo, long hi, long *out);
/* A seed: a whole number from 0 to UINT_MAX (the library's seeds are `unsigned`; a larger one
 * would be cut silently). */
int cli_seed(const char *verb, const char *opt, const char *v, unsigned *out);
/* A duration with its unit ("60s", "500ms"; pl_parse_quantity), above 0 and at most
 * CLI_MAX_SECONDS. */
#define CLI_MAX_SECONDS (7 * 86400.0) /* a week: no search or run of placer's is longer */
int cli_seconds(const char *verb, const char *opt, const char *v, double *out);
/* A decimal number in [lo, hi], an end left out when `open` says so (CLI_OPEN_LO, CLI_OPEN_HI):
 * "OPT: 'V' is not a number in (0, 1)". Infinities and NaN are refused. */
#define CLI_OPEN_LO 1u
#define CLI_OPEN_HI 2u
int cli_number(const char *verb, const char *opt, const char *v, double lo, double hi,
               unsigned open, double *out);
/* cli_number's check without its message, for a value that holds several numbers ("LO,HI"). */
bool cli_number_in(const char *v, double lo, double hi, unsigned open, double *out);
/* A fraction: cli_number in [0, 1], or [0, 1) when below_one ("is not a fraction in ..."). */
int cli_fraction(const char *verb, const char *opt, const char *v, bool below_one, double *out);
/* A size in bytes: a bare number, or with its unit ("64KiB", "1MB"; pl_parse_quantity), in
 * [lo, hi]; `range` names the range in the refusal ("2 KiB (two sizes) to 1 TB"). */
int cli_bytes(const char *verb, const char *opt, const char *v, double lo, double hi,
              const char *range, double *out);
/* One more value of an option that may be repeated (--profile P...): list[(*n)++] = v, at most
 * CLI_MAX_LIST; 1, or -1 after printing the error. */
int cli_list(const char *verb, const char *opt, const char *v, const char **list, int *n);
/* A file or a name: stores v, or says "OPT wants WHAT" when it was given none or "". */
int cli_file(const char *verb, const char *opt, const char *v, const char *what, const char **out);
/* A comma-separated list of placement algorithms (pl_algo_parse_list: not empty, no empty,
 * unknown or repeated item) into out[0..max); the count, or -1. */
int cli_algos(const char *verb, const char *opt, const char *v, const pl_algo **out, int max);
/* The files a verb uses when none is named (cli/files.c), never relative to the working
 * directory: the local-cpu.json cluster placer ships (this machine: its cores and the whole
 * CPU), and the per-user cache of inflated models. NULL after printing the error. */
const char *cli_local_cluster(const char *verb, char *buf, size_t n);
const char *cli_cache_dir(const char *verb, char *buf, size_t n);
/* Where placer's own folder is (catalogues, example clusters), for hints in messages: the
 * installed or in-tree path, else `in_tree` as given. */
const char *cli_own_dir(const char *installed, const char *in_tree, char *buf, size_t n);
/* --measured (place, compare; docs/learn.md, "Measured episodes"): a learned search scores
 * its episodes by running each placement on this machine (pl_trial_measure_plan in the ort
 * trial worker, started here, once). Refused, with the message printed, when a device of the
 * cluster is not a CPU or --dim/--input are given (the file runs as it is), or the worker does
 * not start; then CLI_EXIT_BAD_INPUT. On success po->measure is set; x must outlive it. */
typedef struct cli_measured {
    struct pl_trial_worker *w;
    const cli_ctx *x;
} cli_measured;
cli_exit cli_measured_open(const char *verb, const cli_common *co, const cli_ctx *x,
                           pl_place_opts *po, cli_measured *m);
void cli_measured_close(cli_measured *m); /* stops the worker; fine when never opened */
/* pl_place_opts.progress for the verbs: "drl: episode 40/100, best 1.2 ms" (cli_progress). */
void cli_place_progress(const char *algo, int step, int total, double best_s, void *user);
/* Progress on stderr, only when it is a terminal. */
void cli_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* -o FILE of a verb whose output is a JSON document (a jansson json_t *): written whole or not
 * at all (pl_json_save, pl_out), indented by 2; "placer VERB: -o FILE: why" and
 * CLI_EXIT_BAD_INPUT when it cannot be. */
cli_exit cli_write_json(const char *verb, const char *path, const void *doc);
/* --report FILE (cli/report.c, docs/report.md): cli_report_take removes "--report FILE" (or
 * --report=FILE) from a verb's argv (argv[0] the verb) and, when it was there, makes the verb
 * build its JSON document (adds --json unless given): 1 then, 0 when it was not there, -1 after
 * saying so when it names no file. The verb hands its document
 * to cli_json_out (instead of pl_json_print; it takes the reference): the page is written from
 * it, and the document printed only when --json was given (without --report: printed, as
 * pl_json_print). cli_report_end gives the verb's status, or exit status 2 after saying why
 * when the page could not be written or the verb gave no document (on MPI rank 0: the other
 * ranks write nothing, as the verbs). */
int cli_report_take(const char *verb, int *argc, char **argv);
void cli_json_out(void *doc);
cli_exit cli_report_end(cli_exit verb_status);
/* Prints "placer VERB: MESSAGE" to stderr and returns CLI_EXIT_BAD_INPUT. */
cli_exit cli_fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same message, for a helper under the library's rule: returns -1. */
int cli_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the graph's stored warnings to stderr ("warning: ..."), and how many were not shown. */
void cli_print_warnings(const pl_graph *g);

#endif
