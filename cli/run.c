/* run.c: `placer run DIR`: runs a split (placer split's folder) for real, on this machine's CPU,
 * one onnxruntime session per stage and one thread per device, and prints what each stage took
 * and when it ran; with --cluster and --plan, beside the simulator's prediction for the plan
 * (docs/runtime.md, "Running a split"). */
#include "cli.h"
#include "placer/json.h"
#include "placer/report.h"
#include "placer/runtime.h"
#include "placer/split.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer run DIR [--repeat R] [--warmup W] [--sequential] [--cache DIR]\n"
    "                      [--seed S] [--int-high H] [--trace FILE] [--json] [--deadline T]\n"
    "                      [--plan P (--cluster C | --catalog CAT --config NAME)\n"
    "                       [--cost-params F] [--profile F]... [--contention ports|pair|none]\n"
    "                       [--dim N=V]... [--input NAME=SIZES]...]\n"
    "  DIR            a folder written by `placer split` (manifest.json and the stage files)\n"
    "  --repeat R     timed requests (default 10), after W untimed ones (--warmup, default 2)\n"
    "  --sequential   one stage after the other on one thread, in the manifest's order\n"
    "                 (default: one thread per device, each stage as soon as its inputs are in)\n"
    "  --cache DIR    where weightless stage files are inflated (default: $PLACER_CACHE,\n"
    "                 else $XDG_CACHE_HOME/placer, else ~/.cache/placer; then /inflated)\n"
    "  --deadline T   the onnxruntime worker's time for one step (start, loading a stage, one\n"
    "                 request) before it is taken as stalled and killed (default:\n"
    "                 $PLACER_ORT_DEADLINE, else 60 s plus 60 s per GB of model)\n"
    "  --seed S, --int-high H   random inputs: the seed (1); integers in [0, H) (default 2)\n"
    "  --trace FILE   the median request as a Chrome trace (Perfetto), one track per device\n"
    "  --plan P       with the cluster the split was made for: the simulator's prediction of\n"
    "                 each stage's busy time and of the request's latency, beside the "
    "measurement\n"
    "  --dim N=V, --input NAME=SIZES   with --plan: the bindings the split was made with, so\n"
    "                 that the prediction prices the sizes the stages run at\n"
    "exit status: 0 done, 2 bad input or failure\n";

typedef struct run_opts {
    cli_common co;
    const char *dir, *plan, *cache, *trace;
    int repeat, warmup, int_high;
    unsigned seed;
    double deadline_s; /* 0: the library's default */
    bool sequential;
} run_opts;

/* What the simulator predicts for the plan: per stage (its ops' time on its device) and the
 * request's makespan. */
typedef struct prediction {
    bool have;
    double makespan_s;
    double *stage_s; /* [n stages] */
} prediction;

/* Per stage, the median over the timed requests of its own time, start and end. */
typedef struct stage_stats {
    double own_s, start_s, end_s;
} stage_stats;

/* The median of column `stride`-spaced values of v (v itself is left alone). */
static double median_of(const double *v, int n, int stride)
{
    double *c = pl_malloc((size_t)(n ? n : 1) * sizeof *c);
    for (int i = 0; i < n; i++)
        c[i] = v[(size_t)i * stride];
    double m = pl_median(c, n);
    free(c);
    return m;
}

/* The index of the request whose latency is the median (for the trace). */
static int median_request(const pl_ort_result *r)
{
    double m = median_of(r->latency_s, r->repeat, 1);
    int best = 0;
    for (int i = 1; i < r->repeat; i++)
        if (fabs(r->latency_s[i] - m) < fabs(r->latency_s[best] - m)) best = i;
    return best;
}

static stage_stats *stats_of(const pl_ort_result *r)
{
    stage_stats *s = pl_calloc(r->n_stages ? r->n_stages : 1, sizeof *s);
    for (int j = 0; j < r->n_stages; j++)
        s[j] = (stage_stats){median_of(r->stage_s + j, r->repeat, r->n_stages),
                             median_of(r->start_s + j, r->repeat, r->n_stages),
                             median_of(r->end_s + j, r->repeat, r->n_stages)};
    return s;
}

/* The split's stages again, from the plan (pl_split_stages is deterministic), to price each
 * stage's ops on its device; and the simulated makespan of the plan. The model must be the one
 * the manifest was written from (its sha256), else the stages priced are not the ones run. */
static int predict(const run_opts *o, const pl_split_manifest *m, prediction *p)
{
    cli_common co = o->co;
    co.model = m->model_path;
    cli_ctx x;
    if (!cli_ok(cli_ctx_open("run", &co, &x))) return -1;
    pl_err err = {""};
    pl_stages s = {0};
    pl_sim_result r = {0};
    const char *sha = pl_graph_sha256(x.g, &err);
    pl_plan *plan =
        sha && !strcmp(sha, m->model_sha256) ? pl_plan_load(o->plan, x.g, x.c, &err) : NULL;
    /* the prediction under the plan's contention, as simulate, unless --contention says */
    pl_sim_opts so = {.contention = co.contention_set ? co.contention
                                    : plan            ? plan->contention
                                                      : 0};
    int rc = -1;
    if (sha && strcmp(sha, m->model_sha256))
        cli_error("run",
                  "%s/manifest.json was split from a model with sha256 %s, but %s has %s: not "
                  "the model this split was made from",
                  o->dir, m->model_sha256, m->model_path, sha);
    else if (!plan || pl_split_stages_by(x.g, plan, m->cut, &s, &err) < 0 ||
             pl_simulate(x.k, plan, &so, &r, &err) < 0)
        cli_error("run", "%s", err.msg);
    else if (s.n != m->n)
        cli_error("run",
                  "%s cuts %s into %d stages, but %s/manifest.json has %d: not the plan "
                  "this split was made from",
                  o->plan, m->model_path, s.n, o->dir, m->n);
    else {
        p->have = true, p->makespan_s = r.makespan_s;
        /* each stage as the simulator prices it: its ops as placed (fusion lost at cuts) and
         * the stage's charges (docs/simulator.md, "Stages") */
        p->stage_s = pl_calloc(s.n, sizeof *p->stage_s);
        double *extra = pl_calloc((size_t)x.g->n_ops + 1, sizeof *extra);
        pl_sim_stage_s(x.k, plan, extra);
        for (int j = 0; j < s.n; j++)
            for (int k = 0; k < s.st[j].n_ops; k++) {
                int op = s.st[j].ops[k];
                p->stage_s[j] += pl_cost_op_placed_s(x.k, op, plan->dev) + extra[op];
            }
        free(extra);
        rc = 0;
    }
    pl_sim_result_free(&r);
    pl_stages_free(&s);
    pl_plan_free(plan);
    cli_ctx_close(&x);
    return rc;
}

static cli_exit measure(const run_opts *o, const pl_split_manifest *m, pl_ort_result *r)
{
    pl_err err = {""};
    pl_ort_opts oo = {.seed = o->seed, .int_high = o->int_high, .timeout_s = o->deadline_s};
    cli_progress("run: inflating and loading %d stages\n", m->n);
    pl_ort *w = pl_ort_start(&oo, &err);
    int rc = w ? pl_ort_load_split(w, m, o->cache, o->sequential, &err) : -1;
    if (rc == 0) {
        cli_progress("run: %d + %d requests\n", o->warmup, o->repeat);
        rc = pl_ort_run(w, o->repeat, o->warmup, r, &err);
    }
    pl_ort_stop(w);
    return rc < 0 ? cli_fail("run", "%s: %s", o->dir, err.msg) : CLI_EXIT_OK;
}

/* Distinct devices in manifest order; returns their count, dev[j] = stage j's device index. */
static int devices_of(const pl_split_manifest *m, const char **names, int *dev)
{
    int n = 0;
    for (int j = 0; j < m->n; j++) {
        int d = 0;
        while (d < n && strcmp(names[d], m->st[j].device))
            d++;
        if (d == n) names[n++] = m->st[j].device;
        dev[j] = d;
    }
    return n;
}

static void print_stages(const pl_split_manifest *m, const stage_stats *s, const prediction *p)
{
    pl_table *t = pl_table_new(p->have ? "stage|device|>own ms|>start ms|>end ms|>predicted ms"
                                       : "stage|device|>own ms|>start ms|>end ms");
    for (int j = 0; j < m->n; j++) {
        if (p->have)
            pl_table_row(t, "%s|%s|%.3f|%.3f|%.3f|%.3f", m->st[j].name, m->st[j].device,
                         s[j].own_s * 1e3, s[j].start_s * 1e3, s[j].end_s * 1e3,
                         p->stage_s[j] * 1e3);
        else
            pl_table_row(t, "%s|%s|%.3f|%.3f|%.3f", m->st[j].name, m->st[j].device,
                         s[j].own_s * 1e3, s[j].start_s * 1e3, s[j].end_s * 1e3);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static void print_devices(const pl_split_manifest *m, const stage_stats *s, const prediction *p,
                          double latency_s)
{
    const char **names = pl_calloc(m->n, sizeof *names);
    int *dev = pl_calloc(m->n, sizeof *dev), n = devices_of(m, names, dev);
    pl_table *t = pl_table_new(p->have ? "device|>stages|>busy ms|>busy|>predicted busy ms"
                                       : "device|>stages|>busy ms|>busy");
    for (int d = 0; d < n; d++) {
        int k = 0;
        double busy = 0, pred = 0;
        for (int j = 0; j < m->n; j++)
            if (dev[j] == d) k++, busy += s[j].own_s, pred += p->have ? p->stage_s[j] : 0;
        if (p->have)
            pl_table_row(t, "%s|%d|%.3f|%.0f%%|%.3f", names[d], k, busy * 1e3,
                         100 * busy / latency_s, pred * 1e3);
        else
            pl_table_row(t, "%s|%d|%.3f|%.0f%%", names[d], k, busy * 1e3, 100 * busy / latency_s);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    free(names), free(dev);
}

static void print_outputs(const pl_ort_result *r)
{
    pl_table *t = pl_table_new("output|dims|>checksum|finite");
    for (int k = 0; k < r->n_outputs; k++) {
        const pl_ort_output *out = &r->outputs[k];
        char dims[128] = "[";
        for (int d = 0; d < out->rank; d++)
            snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%lld", d ? "," : "",
                     out->dims[d]);
        strncat(dims, "]", sizeof dims - strlen(dims) - 1);
        pl_table_row(t, "%s|%s|%.6g|%s", out->name, dims, out->checksum,
                     out->finite ? "yes" : "NO");
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static double sum_own(const stage_stats *s, int n)
{
    double sum = 0;
    for (int j = 0; j < n; j++)
        sum += s[j].own_s;
    return sum;
}

static void print_text(const run_opts *o, const pl_split_manifest *m, const pl_ort_result *r,
                       const stage_stats *s, const prediction *p)
{
    double med = median_of(r->latency_s, r->repeat, 1), lo = r->latency_s[0], hi = lo;
    for (int i = 1; i < r->repeat; i++)
        lo = fmin(lo, r->latency_s[i]), hi = fmax(hi, r->latency_s[i]);
    double own = sum_own(s, m->n);
    printf("%-9s %s: %d stages of %s, %s; %d requests after %d warm-ups\n", "run", o->dir, m->n,
           m->model_path,
           r->concurrent ? "one thread per device, each stage when its inputs are in"
                         : "one after the other on one thread",
           r->repeat, o->warmup);
    printf("%-9s median %.3f ms (min %.3f, max %.3f)\n", "latency", med * 1e3, lo * 1e3, hi * 1e3);
    printf("%-9s own times add up to %.3f ms: %.2f stages at once on average\n", "stages",
           own * 1e3, own / med);
    if (p->have)
        printf("%-9s %.3f ms by the simulator (%s): the measurement is %+.0f %% off it\n",
               "predicted", p->makespan_s * 1e3, o->plan,
               100 * (med - p->makespan_s) / p->makespan_s);
    putchar('\n');
    print_stages(m, s, p);
    putchar('\n');
    print_devices(m, s, p, med);
    putchar('\n');
    print_outputs(r);
}

static json_t *outputs_json(const pl_ort_result *r)
{
    json_t *a = json_array();
    for (int k = 0; k < r->n_outputs; k++) {
        const pl_ort_output *out = &r->outputs[k];
        json_t *dims = json_array();
        for (int d = 0; d < out->rank; d++)
            json_array_append_new(dims, json_integer(out->dims[d]));
        json_array_append_new(a, json_pack("{s:s, s:o, s:f, s:b}", "name", out->name, "dims", dims,
                                           "checksum", out->checksum, "finite", out->finite));
    }
    return a;
}

static void print_json(const run_opts *o, const pl_split_manifest *m, const pl_ort_result *r,
                       const stage_stats *s, const prediction *p)
{
    json_t *lat = json_array(), *st = json_array();
    for (int i = 0; i < r->repeat; i++)
        json_array_append_new(lat, json_real(r->latency_s[i]));
    for (int j = 0; j < m->n; j++) {
        json_t *e = json_pack("{s:s, s:s, s:i, s:f, s:f, s:f}", "name", m->st[j].name, "device",
                              m->st[j].device, "threads", m->st[j].threads, "own_s", s[j].own_s,
                              "start_s", s[j].start_s, "end_s", s[j].end_s);
        if (p->have) json_object_set_new(e, "predicted_s", json_real(p->stage_s[j]));
        json_array_append_new(st, e);
    }
    json_t *o_ = json_pack(
        "{s:s, s:s, s:s, s:b, s:i, s:i, s:f, s:o, s:f, s:o, s:o}", "format", "placer-run/1", "dir",
        o->dir, "model", m->model_path, "concurrent", r->concurrent, "repeat", r->repeat, "warmup",
        o->warmup, "latency_median_s", median_of(r->latency_s, r->repeat, 1), "latency_s", lat,
        "own_sum_s", sum_own(s, m->n), "stages", st, "outputs", outputs_json(r));
    if (p->have) json_object_set_new(o_, "predicted_makespan_s", json_real(p->makespan_s));
    cli_json_out(o_);
}

/* The median request as Chrome trace events: one track (tid) per device. */
static cli_exit write_trace(const char *path, const pl_split_manifest *m, const pl_ort_result *r)
{
    const char **names = pl_calloc(m->n, sizeof *names);
    int *dev = pl_calloc(m->n, sizeof *dev), n = devices_of(m, names, dev), q = median_request(r);
    json_t *ev = json_array();
    for (int d = 0; d < n; d++)
        json_array_append_new(ev,
                              json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name",
                                        "ph", "M", "pid", 1, "tid", d, "args", "name", names[d]));
    for (int j = 0; j < m->n; j++) {
        size_t c = (size_t)q * m->n + j;
        json_array_append_new(ev, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i}", "name",
                                            m->st[j].name, "cat", "stage", "ph", "X", "ts",
                                            r->start_s[c] * 1e6, "dur", r->stage_s[c] * 1e6, "pid",
                                            1, "tid", dev[j]));
    }
    json_t *t = json_pack("{s:o, s:s}", "traceEvents", ev, "displayTimeUnit", "ms");
    pl_err err = {""};
    int rc = pl_json_save(t, path, JSON_INDENT(1), &err);
    json_decref(t);
    free(names), free(dev);
    return rc < 0 ? cli_fail("run", "%s", err.msg) : CLI_EXIT_OK;
}

static cli_exit run(run_opts *o)
{
    pl_split_manifest m;
    pl_err err = {""};
    if (pl_split_manifest_load(o->dir, &m, &err) < 0) return cli_fail("run", "%s", err.msg);
    prediction p = {0};
    pl_ort_result r = {0};
    cli_exit status = o->plan && predict(o, &m, &p) < 0 ? CLI_EXIT_BAD_INPUT : CLI_EXIT_OK;
    if (cli_ok(status)) status = measure(o, &m, &r);
    if (cli_ok(status) && r.n_stages != m.n)
        status = cli_fail("run", "the worker ran %d stages, the manifest has %d", r.n_stages, m.n);
    if (cli_ok(status)) {
        stage_stats *s = stats_of(&r);
        if (o->co.json)
            print_json(o, &m, &r, s, &p);
        else
            print_text(o, &m, &r, s, &p);
        if (o->trace) status = write_trace(o->trace, &m, &r);
        free(s);
    }
    pl_ort_result_free(&r);
    free(p.stage_s);
    pl_split_manifest_free(&m);
    return status;
}

enum { SEQUENTIAL = CLI_OWN, PLAN, CACHE, TRACE, DEADLINE, REPEAT, WARMUP, SEED, INT_HIGH };
static const struct option options[] = {{"sequential", no_argument, NULL, SEQUENTIAL},
                                        {"plan", required_argument, NULL, PLAN},
                                        {"cache", required_argument, NULL, CACHE},
                                        {"trace", required_argument, NULL, TRACE},
                                        {"deadline", required_argument, NULL, DEADLINE},
                                        {"repeat", required_argument, NULL, REPEAT},
                                        {"warmup", required_argument, NULL, WARMUP},
                                        {"seed", required_argument, NULL, SEED},
                                        {"int-high", required_argument, NULL, INT_HIGH},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

/* A whole number in [lo, hi] into *out. */
static int count(const char *opt, const char *v, long lo, long hi, int *out)
{
    long x;
    if (cli_count("run", opt, v, lo, hi, &x) < 0) return -1;
    return *out = (int)x, 0;
}

static int take(void *p, int c, const char *v)
{
    run_opts *o = p;
    int seed;
    switch (c) {
    case SEQUENTIAL:
        return o->sequential = true, 0;
    case PLAN:
        return cli_file("run", "--plan", v, "a plan file", &o->plan);
    case CACHE:
        return cli_file("run", "--cache", v, "a folder", &o->cache);
    case TRACE:
        return cli_file("run", "--trace", v, "a file", &o->trace);
    case DEADLINE:
        return cli_seconds("run", "--deadline", v, &o->deadline_s);
    case REPEAT:
        return count("--repeat", v, 1, 100000, &o->repeat);
    case WARMUP:
        return count("--warmup", v, 0, 100000, &o->warmup);
    case SEED:
        if (count("--seed", v, 1, 2147483647, &seed) < 0) return -1;
        return o->seed = (unsigned)seed, 0;
    default:
        return count("--int-high", v, 1, 2147483647, &o->int_high); /* INT_HIGH */
    }
}

cli_exit cli_run(int argc, char **argv)
{
    run_opts o = {.repeat = 10, .warmup = 2, .seed = 1};
    char cache[4096];
    cli_args g = CLI_ARGS("run", NULL, help, false);
    cli_exit parsed = cli_parse(&g, &o.co, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    o.dir = o.co.model, o.co.model = NULL; /* the one positional argument is the folder */
    if (!o.dir)
        return cli_fail("run", "which split? give the folder `placer split -o` wrote\n%s", help);
    if (o.plan && !o.co.cluster && !o.co.catalog)
        return cli_fail("run", "--plan needs the cluster it was made for (--cluster or --catalog)");
    if (!o.plan && (o.co.cluster || o.co.catalog))
        return cli_fail("run", "a cluster without --plan predicts nothing: give --plan too");
    if (!o.cache && !(o.cache = cli_cache_dir("run", cache, sizeof cache)))
        return CLI_EXIT_BAD_INPUT;
    return run(&o);
}
