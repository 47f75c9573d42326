/* placer.c: the command: dispatches to one verb per file. */
#include "cli.h"
#include "placer/dist.h"
#include "placer/place.h"
#include "placer/runtime.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PLACER_VERSION "0.1.0"

static const struct {
    const char *name;
    cli_exit (*run)(int argc, char **argv);
    const char *summary;
    bool pooled; /* splits its work over mpirun's ranks (docs/dist.md); else rank 0 runs it */
} verbs[] = {
    {"deploy", cli_deploy,
     "the cheapest configuration of a catalogue (and its plan) that meets a latency SLO", true},
    {"inspect", cli_inspect, "ops, tensors, parameters, FLOPs, op histogram, unknown ops", false},
    {"place", cli_place, "a placement (and order) on a cluster's devices, simulated", true},
    {"simulate", cli_simulate, "makespan, per-device use, peak memory, trace of a plan", false},
    {"compare", cli_compare, "every placement algorithm side by side, with the lower bound", true},
    {"split", cli_split, "one runnable ONNX file per stage of a plan, and a manifest", false},
    {"optimize", cli_optimize,
     "a cheaper equivalent ONNX model: TASO's search over the rewrite rules", false},
    {"run", cli_run, "a split run for real on this CPU, one thread per device, vs the prediction",
     false},
    {"profile", cli_profile,
     "per-op times measured in onnxruntime (this CPU; --ep cuda: its GPU), as a profile", false},
    {"calibrate", cli_calibrate, "the cost model's efficiencies fitted to measured profiles",
     false},
    {"train", cli_train,
     "a model's training deployed on heterogeneous GPUs (TAG) beside its baselines", true},
    {"learn-prior", cli_learn_prior,
     "TAG's GNN prior trained by MCTS distillation over random topologies", false},
    {"multi", cli_multi,
     "several models sharing one host's devices, placed op by op (Talos) beside its baselines",
     false},
    {"serverless", cli_serverless,
     "the model cut into serverless functions (MOPAR) and priced, beside its baselines", false},
    {"report", cli_report, "one self-contained HTML page of charts from the verbs' --json answers",
     false},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: placer VERB [options]   (placer VERB --help for a verb's options)\n\n");
    for (size_t k = 0; k < sizeof verbs / sizeof *verbs; k++)
        fprintf(f, "  %-10s %s\n", verbs[k].name, verbs[k].summary);
}

/* One of placer's own files or folders as this placer finds it (src/runtime/files.c). */
static void own(const char *what, const char *installed, const char *in_tree)
{
    char path[4096];
    pl_err err;
    if (pl_own_file(installed, in_tree, path, sizeof path, &err) < 0)
        snprintf(path, sizeof path, "(missing: %s)", installed);
    printf("    %s\n        %s\n", path, what);
}

/* What every verb's manual ends with: exit status, environment, files. */
static void manual_tail(void)
{
    char cache[4096];
    pl_err err;
    if (pl_cache_dir("inflated", cache, sizeof cache, &err) < 0) snprintf(cache, sizeof cache, "-");
    printf(
        "\nEXIT STATUS\n"
        "    0   success\n"
        "    1   no feasible answer (deploy: no configuration meets the SLO)\n"
        "    2   bad input, a usage error or a failure; the message names the file, the place\n"
        "        in it and the problem\n"
        "\nENVIRONMENT\n"
        "    PLACER_CACHE          the cache folder (else $XDG_CACHE_HOME/placer, else\n"
        "                          ~/.cache/placer): weightless models inflated for run and\n"
        "                          profile, each checked by its SHA-256 before use\n"
        "    PLACER_ORT_DEADLINE   the onnxruntime worker's time for one step (start, loading a\n"
        "                          model, one request): 30, 30s, 500ms (default: 60 s plus\n"
        "                          60 s per GB of model); --deadline overrides it\n"
        "    PLACER_NODE           the node executable (default: node on PATH)\n"
        "    PLACER_DIST_TIMEOUT   under mpirun, seconds after which a silent rank is lost and\n"
        "                          its work runs on rank 0 (default: never; docs/dist.md)\n"
        "    PLACER_ORT_WORKER, PLACER_ORT_MODULES   another worker script, another\n"
        "                          node_modules holding onnxruntime-node\n"
        "    PLACER_NVIDIA_PROC    the folder read for the NVIDIA driver's GPUs instead of\n"
        "                          /proc/driver/nvidia (profile --ep cuda reads\n"
        "                          DIR/gpus/*/information)\n"
        "    PLACER_NVIDIA_SMI     the nvidia-smi that profile --ep cuda asks when the driver's\n"
        "                          folder names no GPU (default: nvidia-smi on PATH)\n"
        "    TMPDIR                where a run's private folders go (default /tmp)\n"
        "    PLACER_SHM_DIR        where its shared-memory folders go (default /dev/shm):\n"
        "                          serverless --run's tensors, Open MPI's segments\n"
        "\nFILES (as this placer finds them, never relative to the working directory)\n");
    own("cloud catalogues (--catalog)", "share/placer/catalogs", "catalogs");
    own("example clusters (--cluster)", "share/placer/clusters", "examples/clusters");
    own("the onnxruntime worker", "lib/placer/ort_worker.js", "tools/ort_worker.js");
    own("onnxruntime-node", "lib/placer/node_modules", "build/npm/node_modules");
    printf("    %s\n        %s\n", cache, "inflated models (the cache)");
}

static void manual(void)
{
    printf("NAME\n    placer - places deep-learning models on devices: ONNX import, cost model,\n"
           "    simulator, placement algorithms, cloud configuration search, onnxruntime runs\n"
           "\nSYNOPSIS\n    placer VERB [options]\n    placer VERB --help\n    placer --version\n"
           "\nVERBS\n");
    for (size_t k = 0; k < sizeof verbs / sizeof *verbs; k++)
        printf("    %-10s %s\n", verbs[k].name, verbs[k].summary);
    manual_tail();
}

/* The verbs whose --json answer `placer report` draws: they take --report FILE. */
static bool draws(const char *verb)
{
    static const char *const names[] = {"deploy", "place", "simulate", "compare",  "serverless",
                                        "multi",  "train", "run",      "optimize", "calibrate"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(verb, names[i])) return true;
    return false;
}

/* `placer VERB --help`: the verb's own synopsis and options, then what every verb shares. */
static cli_exit verb_help(size_t k, int argc, char **argv)
{
    printf("NAME\n    placer %s - %s\n\nSYNOPSIS AND OPTIONS\n", verbs[k].name, verbs[k].summary);
    fflush(stdout);
    cli_exit rc = verbs[k].run(argc, argv);
    if (draws(verbs[k].name))
        printf("  --report FILE  also draw the answer as one HTML page of charts (placer report;\n"
               "                 docs/report.md); stdout then has the JSON only with --json\n");
    manual_tail();
    return rc;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return true;
    return false;
}

static void say(const char *verb, const char *fmt, va_list ap)
{
    fprintf(stderr, "placer %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

cli_exit cli_fail(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(verb, fmt, ap);
    va_end(ap);
    return CLI_EXIT_BAD_INPUT;
}

int cli_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(verb, fmt, ap);
    va_end(ap);
    return -1;
}

void cli_print_warnings(const pl_graph *g)
{
    for (int k = 0; k < g->n_warnings_stored; k++)
        fprintf(stderr, "warning: %s\n", g->warnings[k]);
    if (g->n_warnings > g->n_warnings_stored)
        fprintf(stderr, "warning: ... and %d more warnings\n",
                g->n_warnings - g->n_warnings_stored);
}

static cli_exit run(int argc, char **argv)
{
    pl_err err = {""};
    if (pl_learn_register(&err) < 0) /* the learned placers join the registry (place.h) */
        return fprintf(stderr, "placer: %s\n", err.msg), CLI_EXIT_BAD_INPUT;
    if (argc < 2) return usage(stderr), CLI_EXIT_BAD_INPUT;
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return manual(), CLI_EXIT_OK;
    if (!strcmp(argv[1], "--version")) {
        printf("placer %s\n", PLACER_VERSION);
        return CLI_EXIT_OK;
    }
    for (size_t k = 0; k < sizeof verbs / sizeof *verbs; k++)
        if (!strcmp(argv[1], verbs[k].name)) {
            if (wants_help(argc - 1, argv + 1)) return verb_help(k, argc - 1, argv + 1);
            /* under mpirun, a verb that does not split its work runs once, on rank 0, rather
             * than N times writing the same files */
            if (!verbs[k].pooled && pl_dist_rank() > 0) return CLI_EXIT_OK;
            int n = argc - 1,
                taken = draws(verbs[k].name) ? cli_report_take(verbs[k].name, &n, argv + 1) : 0;
            if (taken < 0) return CLI_EXIT_BAD_INPUT;
            if (!taken) return verbs[k].run(argc - 1, argv + 1);
            return cli_report_end(verbs[k].run(n, argv + 1));
        }
    fprintf(stderr, "placer: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_BAD_INPUT;
}

/* Under mpirun (build/placer-mpi) every rank runs the verb; the verbs that split work use the
 * pool of dist.h, and without MPI init and finalize do nothing. */
/* OpenBLAS's own (exported, not in its headers): ends its pool of threads, which it starts
 * again, from the thread that next needs it, on its next parallel call. It runs before every
 * fork (OpenBLAS's pthread_atfork), so this is a path it takes all the time. */
int blas_thread_shutdown_(void);

int main(int argc, char **argv)
{
    pl_dist_init(&argc, &argv);
    /* SIGINT, SIGTERM and SIGHUP go to one thread (common.h, pl_out_take_signals); OpenBLAS's
     * pool, started when the library was loaded with nothing blocked, is started again so
     * that its threads block them too (else they take them, and METIS's handler with them) */
    if (pl_out_take_signals() > 0) blas_thread_shutdown_();
    return pl_dist_finalize(run(argc, argv).status); /* the one place a cli_exit becomes an int */
}
