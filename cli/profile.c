/* profile.c: `placer profile MODEL [-o profile.json]`: runs the model in onnxruntime on this
 * machine's CPU (or, with --ep cuda, its NVIDIA GPU) with the profiler on and writes each op's
 * measured time as a placer-profile/1 file, which the cost model takes instead of its estimate
 * (docs/runtime.md, and its "Profiling on a GPU"; docs/cost.md). */
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
    "usage: placer profile MODEL [-o profile.json] [--ep cpu|cuda] [--device-model NAME]\n"
    "                      [--repeat R] [--cluster C] [--json] [--dim N=V]...\n"
    "                      [--input NAME=SIZES]... [--deadline T]\n"
    "       placer profile --collectives [-o collectives.json] [--np N] [--max-bytes B] ...\n"
    "                      (placer profile --collectives --help)\n"
    "  -o FILE        writes the measured times as placer-profile/1 (for --profile)\n"
    "  --ep cpu|cuda  onnxruntime's execution provider (default cpu). cuda: this machine's\n"
    "                 NVIDIA GPU (found in /proc/driver/nvidia, else by nvidia-smi; exit 2\n"
    "                 when there is none), with onnxruntime-node's CUDA build (CUDA 12, cuDNN\n"
    "                 9); nodes onnxruntime runs on the CPU are left out of the times\n"
    "  --device-model the model the times are for; default: that of cpu0 in the cluster, or\n"
    "                 with --ep cuda the GPU table's row of the GPU's name\n"
    "  --cluster C    the cluster whose cpu0 is this machine (default: the local-cpu.json\n"
    "                 placer ships; with --ep cuda its first device of the GPU's model,\n"
    "                 default one such GPU); its cost model gives the estimates printed beside\n"
    "                 the times\n"
    "  --repeat R     timed requests after one warm-up (default 10); times are means\n"
    "  --deadline T   the onnxruntime worker's time for one step (start, load, one request)\n"
    "                 before it is taken as stalled and killed (default: $PLACER_ORT_DEADLINE,\n"
    "                 else 60 s plus 60 s per GB of model)\n"
    "exit status: 0 done, 2 bad input or failure\n";

typedef struct prof_opts {
    cli_common co;
    const char *out, *device_model;
    int repeat;
    double deadline_s;     /* 0: the library's default */
    bool cuda;             /* --ep cuda */
    char gpu[PL_GPU_NAME]; /* with cuda: the GPU as its driver names it */
} prof_opts;

/* What was measured: the profile (op name -> seconds) and how the nodes matched. */
typedef struct prof_ops {
    pl_profile *p;
    pl_profile_match m;
    int off_gpu; /* with cuda: nodes onnxruntime ran on the CPU, left out */
} prof_ops;

/* The op's measured time, -1 when it has none. */
static double op_time(const pl_graph *g, const prof_ops *m, int i)
{
    return pl_profile_lookup(m->p, g->ops[i].name);
}

/* Inflates the model, starts the worker, profiles, stops it. */
static int measure(const prof_opts *o, pl_ort_node_time **t, int *n, int *off_gpu, pl_err *err)
{
    char inflated[4096], cache[4096];
    if (pl_cache_dir("inflated", cache, sizeof cache, err) < 0) return -1;
    if (pl_inflate_model(o->co.model, cache, inflated, sizeof inflated, err) < 0) return -1;
    pl_ort_opts wo = {.timeout_s = o->deadline_s, .ep = o->cuda ? "cuda" : "cpu"};
    pl_ort *w = pl_ort_start(&wo, err);
    if (!w) return -1;
    int rc = pl_ort_profile(w, inflated, o->repeat, t, n, err);
    *off_gpu = pl_ort_profile_off_ep(w);
    pl_ort_stop(w);
    return rc;
}

static int write_profile(const prof_opts *o, const prof_ops *m, pl_err *err)
{
    char desc[512];
    if (o->cuda)
        snprintf(desc, sizeof desc,
                 "onnxruntime-node 1.22 with its CUDA execution provider on the GPU '%s', "
                 "CUDA_LAUNCH_BLOCKING=1 (a node's time is its kernels' launch and run), graph "
                 "optimisation disabled; kernel time per request, mean of %d requests after 1 "
                 "warm-up; %d nodes onnxruntime ran on the CPU left out",
                 o->gpu, o->repeat, m->off_gpu);
    else
        snprintf(desc, sizeof desc,
                 "onnxruntime-node 1.22 on the CPU, graph optimisation disabled, 1 intra-op "
                 "thread; kernel time per request, mean of %d requests after 1 warm-up",
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
    if (o->cuda)
        printf("%-10s %s; %d nodes onnxruntime ran on the CPU, left out\n", "gpu", o->gpu,
               m->off_gpu);
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
    json_object_set_new(root, "ep", json_string(o->cuda ? "cuda" : "cpu"));
    if (o->cuda) json_object_set_new(root, "gpu", json_string(o->gpu));
    if (o->cuda) json_object_set_new(root, "off_gpu", json_integer(m->off_gpu));
    pl_json_print(root, stdout);
}

/* What a failure of --ep cuda's measurement is most often missing, said with it. */
#define GPU_HINT                                                                                   \
    "; --ep cuda needs onnxruntime-node's CUDA build: its CUDA provider libraries (npm install "   \
    "--prefix build/npm onnxruntime-node@1.22.0 --onnxruntime-node-install=cuda12) and CUDA 12 "   \
    "with cuDNN 9 on the library path (docs/runtime.md, \"Profiling on a GPU\")"

/* --ep cuda: the GPU table's row the times are for: --device-model's, else that of the name
 * the driver gives this machine's GPU. Found before onnxruntime starts, so that a machine
 * without a GPU is told so plainly rather than by onnxruntime's failure to load CUDA. */
static cli_exit find_gpu(prof_opts *o)
{
    char names[8][PL_GPU_NAME], word[PL_GPU_NAME], hint[512];
    pl_err err = {""};
    int n = pl_nvidia_gpus(names, 8, &err);
    if (!n) return cli_fail("profile", "--ep cuda: no NVIDIA GPU on this machine (%s)", err.msg);
    snprintf(o->gpu, sizeof o->gpu, "%s", names[0]);
    const pl_gpu_spec *s = NULL;
    if (o->device_model && !((s = pl_gpu_spec_find(o->device_model)) && s->kind == PL_DEV_GPU)) {
        pl_gpu_spec_suggest(o->device_model, PL_DEV_GPU, hint, sizeof hint);
        return cli_fail("profile", "--device-model: '%s' is not a GPU of placer's table (%s)",
                        o->device_model, hint);
    }
    for (int i = 1; !s && i < n; i++) /* onnxruntime's device 0 is one of them: which? */
        if (strcmp(names[i], names[0]))
            return cli_fail("profile",
                            "--ep cuda: this machine has GPUs of different models ('%s', '%s') "
                            "and onnxruntime profiles CUDA device 0: --device-model NAME says "
                            "which it is (CUDA_VISIBLE_DEVICES=K picks the device)",
                            names[0], names[i]);
    if (!s && !(s = pl_gpu_spec_of_driver_name(names[0], word, sizeof word))) {
        pl_gpu_spec_suggest(word, PL_DEV_GPU, hint, sizeof hint);
        return cli_fail("profile",
                        "--ep cuda: the GPU '%s' is not in placer's GPU table (%s); "
                        "--device-model NAME says which row it is",
                        names[0], hint);
    }
    o->device_model = s->model;
    return CLI_EXIT_OK;
}

/* --ep cuda without --cluster: a cluster of one GPU of the profiled model, written into the
 * temporary folder dir (made here), whose cost model gives the estimates beside the times. */
static int gpu_cluster(const prof_opts *o, char *dir, char *path, size_t n, pl_err *err)
{
    if (pl_make_temp_dir("placer-gpu", dir, n, err) < 0) return -1;
    snprintf(path, n, "%.4000s/gpu.json", dir);
    json_t *c =
        json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "format", "placer-cluster/1", "name",
                  "this-gpu", "devices", "name", "gpu0", "kind", "gpu", "model", o->device_model);
    int rc = json_dump_file(c, path, 0);
    json_decref(c);
    return rc < 0 ? pl_err_set(err, "%s: cannot write the GPU's cluster", path) : 0;
}

/* The device whose estimates are printed beside the times: cpu0 (else the first device), or
 * with --ep cuda the first of the profiled GPU's model; -1 when the cluster has none. */
static int profiled_device(const prof_opts *o, const pl_cluster *c)
{
    int dev = pl_cluster_find(c, PROFILE_DEVICE);
    if (!o->cuda) return dev < 0 ? 0 : dev;
    const pl_gpu_spec *s = pl_gpu_spec_find(o->device_model);
    for (int d = 0; d < c->n_devs; d++)
        if (pl_gpu_spec_find(c->devs[d].model) == s) return d;
    return -1;
}

/* Loads model and cluster (with --ep cuda, the GPU's); *dev is the device profiled. */
static cli_exit open_ctx(prof_opts *o, cli_ctx *x, int *dev)
{
    char local[4096], tmp[4096] = "";
    pl_err err = {""};
    if (!o->co.cluster && o->cuda && gpu_cluster(o, tmp, local, sizeof local, &err) < 0)
        return pl_remove_tree(tmp), cli_fail("profile", "%s", err.msg);
    if (*tmp) o->co.cluster = local;
    if (!o->co.cluster && !(o->co.cluster = cli_local_cluster("profile", local, sizeof local)))
        return CLI_EXIT_BAD_INPUT;
    cli_exit opened = cli_ctx_open("profile", &o->co, x);
    if (*tmp) pl_remove_tree(tmp), o->co.cluster = NULL;
    if (!cli_ok(opened)) return opened;
    if ((*dev = profiled_device(o, x->c)) >= 0) return CLI_EXIT_OK;
    cli_ctx_close(x);
    return cli_fail("profile", "--cluster %s: no device of model %s, the GPU profiled ('%s')",
                    o->co.cluster, o->device_model, o->gpu);
}

static cli_exit run(prof_opts *o)
{
    cli_ctx x;
    int dev;
    if (o->cuda && !cli_ok(find_gpu(o))) return CLI_EXIT_BAD_INPUT;
    if (!cli_ok(open_ctx(o, &x, &dev))) return CLI_EXIT_BAD_INPUT;
    if (!o->device_model) o->device_model = x.c->devs[dev].model;
    pl_err err = {""};
    pl_ort_node_time *t = NULL;
    int n = 0;
    cli_exit status = CLI_EXIT_OK;
    prof_ops m = {0};
    if (measure(o, &t, &n, &m.off_gpu, &err) < 0) {
        status = o->cuda ? cli_fail("profile", "--ep cuda (%s, device model %s): %s" GPU_HINT,
                                    o->gpu, o->device_model, err.msg)
                         : cli_fail("profile", "%s", err.msg);
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

enum { DEVICE_MODEL = CLI_OWN, DEADLINE, REPEAT, EP };
static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                        {"ep", required_argument, NULL, EP},
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
    case EP:
        if (!v || (strcmp(v, "cpu") && strcmp(v, "cuda")))
            return cli_error("profile", "--ep wants cpu or cuda");
        return o->cuda = !strcmp(v, "cuda"), 0;
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
