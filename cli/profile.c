/* profile.c: `placer profile MODEL [-o profile.json]`: runs the model in onnxruntime on this
 * machine's CPU with the profiler on and writes each op's measured time as a placer-profile/1
 * file, which the cost model takes instead of its estimate (docs/runtime.md, docs/cost.md). */
#include "cli.h"
#include "placer/report.h"
#include "placer/runtime.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_DEVICE "cpu0"

static const char *help =
    "usage: placer profile MODEL [-o profile.json] [--device-model NAME] [--repeat R]\n"
    "                      [--cluster C] [--json] [--dim N=V]... [--input NAME=SIZES]...\n"
    "                      [--deadline T]\n"
    "       placer profile --collectives [-o collectives.json] [--np N] [--max-bytes B] ...\n"
    "                      (placer profile --collectives --help)\n"
    "  -o FILE        writes the measured times as placer-profile/1 (for --profile)\n"
    "  --device-model the model the times are for; default: that of cpu0 in the cluster\n"
    "  --cluster C    the cluster whose cpu0 is this machine (default: the local-cpu.json\n"
    "                 placer ships); its cost model gives the estimates printed beside the times\n"
    "  --repeat R     timed requests after one warm-up (default 10); times are means\n"
    "  --deadline T   the onnxruntime worker's time for one step (start, load, one request)\n"
    "                 before it is taken as stalled and killed (default: $PLACER_ORT_DEADLINE,\n"
    "                 else 60 s plus 60 s per GB of model)\n"
    "exit status: 0 done, 2 bad input or failure\n";

typedef struct prof_opts {
    cli_common co;
    const char *out, *device_model;
    int repeat;
    double deadline_s; /* 0: the library's default */
} prof_opts;

/* What was measured: the profile (op name -> seconds) and how the nodes matched. */
typedef struct prof_ops {
    pl_profile *p;
    pl_profile_match m;
} prof_ops;

/* The op's measured time, -1 when it has none. */
static double op_time(const pl_graph *g, const prof_ops *m, int i)
{
    return pl_profile_lookup(m->p, g->ops[i].name);
}

/* Inflates the model, starts the worker, profiles, stops it. */
static int measure(const prof_opts *o, pl_ort_node_time **t, int *n, pl_err *err)
{
    char inflated[4096], cache[4096];
    if (pl_cache_dir("inflated", cache, sizeof cache, err) < 0) return -1;
    if (pl_inflate_model(o->co.model, cache, inflated, sizeof inflated, err) < 0) return -1;
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.timeout_s = o->deadline_s}, err);
    if (!w) return -1;
    int rc = pl_ort_profile(w, inflated, o->repeat, t, n, err);
    pl_ort_stop(w);
    return rc;
}

static int write_profile(const prof_opts *o, const prof_ops *m, pl_err *err)
{
    char desc[256];
    snprintf(desc, sizeof desc,
             "onnxruntime-node 1.22 on the CPU, graph optimisation disabled, 1 intra-op thread; "
             "kernel time per request, mean of %d requests after 1 warm-up",
             o->repeat);
    return pl_profile_save(m->p, o->out, desc, err);
}

/* The k ops with the longest measured times, longest first; returns how many (<= k). */
static int top_ops(const pl_graph *g, const prof_ops *m, int *top, int k)
{
    int n = 0;
    for (int i = 0; i < g->n_ops; i++) {
        double ti = op_time(g, m, i);
        if (ti < 0 || (n == k && ti <= op_time(g, m, top[k - 1]))) continue;
        int j = n < k ? n++ : k - 1;
        for (; j > 0 && op_time(g, m, top[j - 1]) < ti; j--)
            top[j] = top[j - 1];
        top[j] = i;
    }
    return n;
}

static double estimated(const cli_ctx *x, int dev, const prof_ops *m)
{
    double s = 0;
    for (int i = 0; i < x->g->n_ops; i++)
        if (op_time(x->g, m, i) >= 0) s += pl_cost_op_s(x->k, i, dev);
    return s;
}

static void print_text(const prof_opts *o, const cli_ctx *x, int dev, const prof_ops *m)
{
    const pl_graph *g = x->g;
    printf("%-10s %s (%d ops), device model %s\n", "profile", o->co.model, g->n_ops,
           o->device_model);
    printf("%-10s %d of %d ops (%.1f %%); without a kernel time: %d (%d Constant)\n", "timed",
           m->m.n_timed, g->n_ops, g->n_ops ? 100.0 * m->m.n_timed / g->n_ops : 0.0, m->m.n_missing,
           m->m.n_constant);
    if (m->m.n_unmatched)
        printf("%-10s %d onnxruntime nodes match no op\n", "unmatched", m->m.n_unmatched);
    printf("%-10s %.3f ms measured, %.3f ms estimated (%s) for the same ops\n", "total",
           m->m.measured_s * 1e3, estimated(x, dev, m) * 1e3, x->c->devs[dev].name);
    if (o->out) printf("%-10s %s\n", "written", o->out);
    putchar('\n');
    int top[10], n = top_ops(g, m, top, 10);
    pl_table *t = pl_table_new("op|type|>measured ms|>estimate ms|>measured/estimate");
    for (int r = 0; r < n; r++) {
        int i = top[r];
        double e = pl_cost_op_s(x->k, i, dev), ti = op_time(g, m, i);
        pl_table_row(t, "%s|%s|%.4f|%.4f|%.2f", g->ops[i].name, g->ops[i].type, ti * 1e3, e * 1e3,
                     e > 0 ? ti / e : INFINITY);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static void print_json(const prof_opts *o, const cli_ctx *x, int dev, const prof_ops *m)
{
    json_t *top = json_array();
    int idx[10], n = top_ops(x->g, m, idx, 10);
    for (int r = 0; r < n; r++)
        json_array_append_new(top, json_pack("{s:s, s:s, s:f, s:f}", "op", x->g->ops[idx[r]].name,
                                             "type", x->g->ops[idx[r]].type, "measured_s",
                                             op_time(x->g, m, idx[r]), "estimate_s",
                                             pl_cost_op_s(x->k, idx[r], dev)));
    json_t *root =
        json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:o}", "format",
                  "placer-profile-report/1", "model", o->co.model, "device_model", o->device_model,
                  "ops", x->g->n_ops, "timed", m->m.n_timed, "missing", m->m.n_missing,
                  "missing_constant", m->m.n_constant, "unmatched", m->m.n_unmatched, "measured_s",
                  m->m.measured_s, "estimate_s", estimated(x, dev, m), "top", top);
    if (o->out) json_object_set_new(root, "written", json_string(o->out));
    pl_json_print(root, stdout);
}

static cli_exit run(prof_opts *o)
{
    cli_ctx x;
    char local[4096];
    if (!o->co.cluster && !(o->co.cluster = cli_local_cluster("profile", local, sizeof local)))
        return CLI_EXIT_BAD_INPUT;
    if (!cli_ok(cli_ctx_open("profile", &o->co, &x))) return CLI_EXIT_BAD_INPUT;
    int dev = pl_cluster_find(x.c, PROFILE_DEVICE);
    if (dev < 0) dev = 0;
    if (!o->device_model) o->device_model = x.c->devs[dev].model;
    pl_err err = {""};
    pl_ort_node_time *t = NULL;
    int n = 0;
    cli_exit status = CLI_EXIT_OK;
    prof_ops m = {0};
    if (measure(o, &t, &n, &err) < 0) {
        status = cli_fail("profile", "%s", err.msg);
    } else if (!(m.p = pl_profile_from_node_times(x.g, t, n, o->device_model, &m.m, &err))) {
        status = cli_fail("profile", "%s", err.msg);
    } else {
        if (o->out && write_profile(o, &m, &err) < 0)
            status = cli_fail("profile", "%s", err.msg);
        else if (o->co.json)
            print_json(o, &x, dev, &m);
        else
            print_text(o, &x, dev, &m);
    }
    pl_profile_free(m.p);
    pl_ort_node_times_free(t, n);
    cli_ctx_close(&x);
    return status;
}

enum { DEVICE_MODEL = CLI_OWN, DEADLINE, REPEAT };
static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                        {"device-model", required_argument, NULL, DEVICE_MODEL},
                                        {"deadline", required_argument, NULL, DEADLINE},
                                        {"repeat", required_argument, NULL, REPEAT},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

static int take(void *p, int c, const char *v)
{
    prof_opts *o = p;
    long r;
    switch (c) {
    case 'o':
        return cli_file("profile", "-o", v, "a file", &o->out);
    case DEVICE_MODEL:
        return cli_file("profile", "--device-model", v, "a name", &o->device_model);
    case DEADLINE:
        return cli_seconds("profile", "--deadline", v, &o->deadline_s);
    default: /* REPEAT */
        if (cli_count("profile", "--repeat", v, 1, 10000, &r) < 0) return -1;
        return o->repeat = (int)r, 0;
    }
}

cli_exit cli_profile(int argc, char **argv)
{
    prof_opts o = {.repeat = 10, .co.refuse = CLI_NO_CONTENTION}; /* it measures, one device */
    for (int i = 1; i < argc; i++) /* another verb in all but name: its own table */
        if (!strcmp(argv[i], "--collectives")) return cli_profile_collectives(argc, argv);
    cli_args g = CLI_ARGS("profile", "ho:", help, false);
    cli_exit parsed = cli_parse(&g, &o.co, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    if (!o.co.model) return cli_fail("profile", "which model?\n%s", help);
    if (o.co.n_profiles) return cli_fail("profile", "--profile makes no sense here: it measures");
    return run(&o);
}
