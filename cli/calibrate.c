/* calibrate.c: `placer calibrate PROFILE... --model M`: fits the cost model's efficiencies to
 * measured profiles (docs/calibrate.md). The fit is printed and, with -o, written as
 * placer-cost-params/1, which `place --cost-params` and the other commands read. */
#include "cli.h"
#include "placer/calib.h"
#include "placer/json.h"
#include "placer/report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer calibrate PROFILE... --model M [--model M2]... [--cluster C]\n"
    "                        [--device NAME] [-o params.json] [--json]\n"
    "       placer calibrate --machine [--cluster C] [--device NAME] [--json]\n"
    "  --machine      measures this machine now (six zoo models in three passes, 20 s here) and\n"
    "                 (re)writes the calibration every verb uses for a cluster's\n"
    "                 \"this_machine\" device; prints where (docs/calibrate.md)\n"
    "  PROFILE        placer-profile/1 files (from `placer profile`); each is matched to the\n"
    "                 --model whose sha256 it names (or the only one given)\n"
    "  --cluster C    where the profiled device is (default: the local-cpu.json placer ships)\n"
    "  --device NAME  that device (default: cpu0, else the first)\n"
    "  -o FILE        writes the fitted parameters as placer-cost-params/1\n"
    "exit status: 0 done, 2 bad input or failure\n";

typedef struct calib_opts {
    const char *profiles[CLI_MAX_LIST], *models[CLI_MAX_LIST];
    int n_profiles, n_models;
    const char *cluster, *device, *out;
    bool json, machine;
} calib_opts;

typedef struct calib_in {
    pl_graph *g[CLI_MAX_LIST];
    pl_profile *p[CLI_MAX_LIST];
    const pl_graph *pg[CLI_MAX_LIST]; /* the graph of each profile */
    pl_cluster *c;
} calib_in;

/* The model a profile was measured on: by its sha256, or the only model when it names none. */
static int graph_of(const calib_opts *o, calib_in *in, const pl_profile *p, pl_err *err)
{
    for (int m = 0; m < o->n_models; m++) {
        const char *sha = pl_graph_sha256(in->g[m], err);
        if (!sha) return -1;
        if (!strcmp(sha, p->model_sha256) || (!*p->model_sha256 && o->n_models == 1)) return m;
    }
    return pl_err_set(err, "no --model has sha256 %s", p->model_sha256);
}

static int load_inputs(const calib_opts *o, calib_in *in, pl_err *err)
{
    for (int m = 0; m < o->n_models; m++)
        if (!(in->g[m] = pl_graph_load(o->models[m], NULL, err))) return -1;
    for (int k = 0; k < o->n_profiles; k++) {
        if (!(in->p[k] = pl_profile_load(o->profiles[k], err))) return -1;
        int m = graph_of(o, in, in->p[k], err);
        if (m < 0) return pl_err_prefix(err, "%s", o->profiles[k]);
        in->pg[k] = in->g[m];
    }
    in->c = pl_cluster_load(o->cluster, err);
    return in->c ? 0 : -1;
}

static void free_inputs(const calib_opts *o, calib_in *in)
{
    for (int m = 0; m < o->n_models; m++)
        pl_graph_free(in->g[m]);
    for (int k = 0; k < o->n_profiles; k++)
        pl_profile_free(in->p[k]);
    pl_cluster_free(in->c);
}

/* A GPU's fit: its kernel parameters beside the built-in ones (fitted to published timings). */
static void print_gpu(const pl_calib_result *r, const pl_device *d)
{
    pl_gpu_params b;
    pl_gpu_params_default(&b);
    const pl_gpu_params *g = &r->params.gpu_model;
    printf("calibrated %s (%s) on %d op times: its GPU kernel rules\n\n", d->name, d->model,
           r->n_samples);
    printf("%-16s %10s %10s\n", "parameter", "built in", "fitted");
    const char *names[] = {"eff_gemm", "eff_conv", "eff_tensor", "eff_winograd", "eff_mem"};
    const double bv[] = {b.eff_gemm, b.eff_conv, b.eff_tensor, b.eff_winograd, b.eff_mem};
    const double fv[] = {g->eff_gemm, g->eff_conv, g->eff_tensor, g->eff_winograd, g->eff_mem};
    for (int i = 0; i < 5; i++)
        printf("%-16s %10.3f %10.3f\n", names[i], bv[i], fv[i]);
    printf("%-16s %10.0f %10.0f\n", "mem_half_bytes", b.mem_half_bytes, g->mem_half_bytes);
    printf("%-16s %10.2f %10.2f\n", "kernel_s (us)", b.kernel_s * 1e6, g->kernel_s * 1e6);
    printf("%-16s %10.3f %10.3f\n\n", "band", b.band, g->band);
    printf("relative error  median %.2f, worst %.2f before; median %.2f, worst %.2f after\n",
           r->median_before, r->worst_before, r->median_after, r->worst_after);
}

static void print_text(const pl_calib_result *r, const pl_device *d)
{
    if (r->params.gpu_model.device_model[0]) {
        print_gpu(r, d);
        return;
    }
    pl_cost_params def;
    pl_cost_params_default(&def);
    printf("calibrated %s (%s) on %d op times\n\n", d->name, d->model, r->n_samples);
    printf("%-14s %8s %8s %8s\n", "efficiency", "default", "fitted", "samples");
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        printf("%-14s %8.3f %8.3f %8d\n", pl_op_class_name(c), def.eff_compute[c],
               r->params.eff_compute[c], r->class_samples[c]);
    printf("%-14s %8.3f %8.3f %8d\n\n", "memory", def.eff_memory, r->params.eff_memory,
           r->n_samples);
    if (r->dense_half_why[0])
        printf("dense size     dense_half_flops %.3g: %s\n", r->params.dense_half_flops,
               r->dense_half_why);
    else /* docs/cost.md, "Dense efficiency by size" */
        printf("dense size     a GEMM of %.3g FLOPs reaches half the dense efficiency "
               "(dense_half_flops)\n",
               r->params.dense_half_flops);
    printf("relative error  median %.2f, worst %.2f before; median %.2f, worst %.2f after\n",
           r->median_before, r->worst_before, r->median_after, r->worst_after);
    char note[1024];
    if (pl_calib_scale_note(&r->params, d, note, sizeof note)) printf("figures        %s\n", note);
    if (r->passes > 1) /* docs/calibrate.md, "Passes" */
        printf("passes         %d, each op's time the median; the passes' summed times within "
               "%.1f %%%s\n",
               r->passes, 100 * r->pass_spread,
               r->pass_spread > 0.15 ? " (the machine's speed moved while it was measured: "
                                       "measure again when it is idle)"
                                     : "");
}

static cli_exit run(const calib_opts *o)
{
    calib_in in = {0};
    pl_err err = {""};
    pl_calib_result r;
    cli_exit status = CLI_EXIT_OK;
    if (load_inputs(o, &in, &err) < 0) {
        status = cli_fail("calibrate", "%s", err.msg);
        free_inputs(o, &in);
        return status;
    }
    int dev = pl_cluster_find(in.c, o->device ? o->device : "cpu0");
    if (dev < 0 && o->device) status = cli_fail("calibrate", "no device '%s'", o->device);
    const pl_device *d = &in.c->devs[dev < 0 ? 0 : dev];
    /* a GPU's profiles fit its kernel rules (docs/cost.md, "Measured on a GPU"), a CPU's the
     * roofline */
    const pl_profile *const *pr = (const pl_profile *const *)in.p;
    if (cli_ok(status) &&
        (d->kind == PL_DEV_GPU ? pl_calib_fit_gpu(in.pg, pr, o->n_profiles, d, &r, &err)
                               : pl_calib_fit(in.pg, pr, o->n_profiles, d, NULL, &r, &err)) < 0)
        status = cli_fail("calibrate", "%s", err.msg);
    if (cli_ok(status)) {
        json_t *j = pl_calib_json(&r, d->model, NULL, NULL);
        if (o->out && pl_json_save(j, o->out, JSON_INDENT(1) | JSON_PRESERVE_ORDER, &err) < 0)
            status = cli_fail("calibrate", "%s", err.msg);
        else if (o->json)
            cli_json_out(json_incref(j));
        else
            print_text(&r, d);
        json_decref(j);
    }
    free_inputs(o, &in);
    return status;
}

static void progress(const char *step)
{
    fprintf(stderr, "placer calibrate: measuring %s\n", step);
}

/* --machine: the measurement cli_cost_params makes on first use, made now. */
static cli_exit run_machine(const calib_opts *o)
{
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(o->cluster, &err);
    if (!c) return cli_fail("calibrate", "%s", err.msg);
    int dev = pl_cluster_find(c, o->device ? o->device : "cpu0");
    for (int k = 0; dev < 0 && !o->device && k < c->n_devs; k++)
        if (c->devs[k].this_machine) dev = k;
    cli_exit status = CLI_EXIT_OK;
    char cpu[256], path[4096];
    pl_calib_result r;
    pl_cpu_model(cpu, sizeof cpu);
    if (dev < 0)
        status = cli_fail("calibrate", "no device '%s' in %s", o->device ? o->device : "cpu0",
                          o->cluster);
    else if (pl_machine_calib_path(cpu, c->devs[dev].model, path, sizeof path, &err) < 0 ||
             pl_machine_calibrate(&c->devs[dev], path, progress, &r, &err) < 0)
        status = cli_fail("calibrate", "%s", err.msg);
    else if (o->json) {
        json_t *j = pl_calib_json(&r, c->devs[dev].model, cpu, NULL);
        json_object_set_new(j, "written", json_string(path));
        cli_json_out(j);
    } else {
        print_text(&r, &c->devs[dev]);
        printf("\nCPU '%s': written %s\n", cpu, path);
    }
    pl_cluster_free(c);
    return status;
}

enum { MACHINE = CLI_OWN, MODEL, CLUSTER, DEVICE };
static const struct option options[] = {CLI_JSON_OPTION,
                                        {"machine", no_argument, NULL, MACHINE},
                                        {"model", required_argument, NULL, MODEL},
                                        {"cluster", required_argument, NULL, CLUSTER},
                                        {"device", required_argument, NULL, DEVICE},
                                        CLI_OPTIONS_END};

static int take(void *p, int c, const char *v)
{
    calib_opts *o = p;
    switch (c) {
    case CLI_JSON:
        return o->json = true, 0;
    case MACHINE:
        return o->machine = true, 0;
    case MODEL:
        return cli_list("calibrate", "--model", v, o->models, &o->n_models) < 0 ? -1 : 0;
    case CLUSTER:
        return cli_file("calibrate", "--cluster", v, "a cluster file", &o->cluster);
    case DEVICE:
        return cli_file("calibrate", "--device", v, "a device name", &o->device);
    case 'o':
        return cli_file("calibrate", "-o", v, "a file", &o->out);
    default: /* CLI_ARG */
        return cli_list("calibrate", "PROFILE", v, o->profiles, &o->n_profiles) < 0 ? -1 : 0;
    }
}

cli_exit cli_calibrate(int argc, char **argv)
{
    calib_opts o = {0};
    cli_args g = CLI_ARGS("calibrate", "ho:", help, false);
    g.lists = (const int[]){MODEL, 0}; /* the models the profiles were measured on */
    cli_exit parsed = cli_parse(&g, NULL, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    if (o.machine && (o.n_profiles || o.n_models || o.out))
        return cli_fail("calibrate", "--machine measures this machine: no PROFILE, --model or -o");
    if (!o.machine && (!o.n_profiles || !o.n_models))
        return cli_fail("calibrate", "give PROFILE files and --model\n%s", help);
    char local[4096];
    if (!o.cluster && !(o.cluster = cli_local_cluster("calibrate", local, sizeof local)))
        return CLI_EXIT_BAD_INPUT;
    return o.machine ? run_machine(&o) : run(&o);
}
