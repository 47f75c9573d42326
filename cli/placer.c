/* placer.c: the command: dispatches to one verb per file. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PLACER_VERSION "0.1.0"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} verbs[] = {
    {"deploy", cli_deploy,
     "the cheapest configuration of a catalogue (and its plan) that meets a latency SLO"},
    {"inspect", cli_inspect, "ops, tensors, parameters, FLOPs, op histogram, unknown ops"},
    {"place", cli_place, "a placement (and order) on a cluster's devices, simulated"},
    {"simulate", cli_simulate, "makespan, per-device use, peak memory, trace of a plan"},
    {"compare", cli_compare, "every placement algorithm side by side, with the lower bound"},
    {"split", cli_split, "one runnable ONNX file per stage of a plan, and a manifest"},
    {"run", cli_run, "a split run for real on this CPU, one thread per device, vs the prediction"},
    {"profile", cli_profile, "per-op times measured in onnxruntime on this CPU, as a profile"},
    {"calibrate", cli_calibrate, "the cost model's efficiencies fitted to measured profiles"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: placer VERB [options]   (placer VERB --help for a verb's options)\n\n");
    for (size_t k = 0; k < sizeof verbs / sizeof *verbs; k++)
        fprintf(f, "  %-10s %s\n", verbs[k].name, verbs[k].summary);
}

int cli_fail(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "placer %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_BAD_INPUT;
}

void cli_print_warnings(const pl_graph *g)
{
    for (int k = 0; k < g->n_warnings_stored; k++)
        fprintf(stderr, "warning: %s\n", g->warnings[k]);
    if (g->n_warnings > g->n_warnings_stored)
        fprintf(stderr, "warning: ... and %d more warnings\n",
                g->n_warnings - g->n_warnings_stored);
}

bool cli_opt(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return false;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return true;
    }
    if (argv[*i][n] != 0) return false;
    *value = *i + 1 < argc ? argv[++*i] : NULL;
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_BAD_INPUT : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("placer %s\n", PLACER_VERSION);
        return 0;
    }
    for (size_t k = 0; k < sizeof verbs / sizeof *verbs; k++)
        if (!strcmp(argv[1], verbs[k].name)) return verbs[k].run(argc - 1, argv + 1);
    fprintf(stderr, "placer: unknown verb '%s'\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_BAD_INPUT;
}
