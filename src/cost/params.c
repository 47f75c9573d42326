/* params.c: the cost model's efficiencies from a file, format placer-cost-params/1, as
 * `placer calibrate -o` writes it (docs/calibrate.md):
 *
 *   {"format": "placer-cost-params/1", "device_model": "local-epyc-core",
 *    "eff_compute": {"dense": 1.0, "elementwise": 0.093, ...}, "eff_memory": 1.0, ...}
 *
 * eff_compute and eff_memory are required; "gpu" (the GPU kernel rules' parameters),
 * cpu_band, dense_half_flops, peak_scale and mem_scale are optional. Classes the file leaves out
 * keep their defaults, and so does runtime_fusion ("ort" or "none", docs/cost.md "Runtime fusion");
 * the fit's statistics (samples, errors), and the CPU model, date, passes and their spread of a
 * machine calibration (src/calib/machine.c), are accepted and ignored here. */
#include "placer/cost.h"
#include "placer/json.h"

#include <stdio.h>
#include <string.h>

static const char *const fields[] = {"format",
                                     "device_model",
                                     "eff_compute",
                                     "eff_memory",
                                     "samples",
                                     "class_samples",
                                     "before",
                                     "after",
                                     "producer",
                                     "description",
                                     "runtime_fusion",
                                     "cpu_model",
                                     "measured",
                                     "fitted_for",
                                     "runtime_conv_ratio",
                                     "profiler_overhead_s",
                                     "gpu",
                                     "cpu_band",
                                     "dense_half_flops",
                                     "dense_half_note",
                                     "peak_scale",
                                     "mem_scale",
                                     "passes",
                                     "pass_spread",
                                     NULL};

static const char *const gpu_fields[] = {
    "on",           "eff_gemm",     "eff_conv",       "eff_tensor",
    "eff_winograd", "eff_mem",      "mem_half_bytes", "kernel_s",
    "band",         "device_model", "fitted_on",      NULL};

/* A class name as pl_op_class_name gives it, or -1. */
static int class_of(const char *name)
{
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        if (!strcmp(pl_op_class_name((pl_op_class)c), name)) return c;
    return -1;
}

/* An efficiency (`field` NULL: obj itself). The rule is pl_cost_eff_valid's, which
 * pl_cost_params_check applies to the whole set after loading; checked here too, so that a
 * refusal says where in the file the value is. */
static int read_eff(const pl_json *obj, const char *field, double *out, pl_err *err)
{
    if (pl_json_number(obj, field, out, err) < 0) return -1;
    pl_json at = field ? pl_json_at(obj, field) : *obj;
    if (!pl_cost_eff_valid(*out)) return pl_json_fail(&at, err, "an efficiency must be in (0, 1]");
    return 0;
}

static int read_compute(const pl_json *root, pl_cost_params *p, pl_err *err)
{
    pl_json obj, e;
    if (pl_json_object(root, "eff_compute", &obj, err) < 0) return -1;
    pl_json_iter it = {0};
    while (pl_json_next(&obj, &it, &e)) {
        int c = class_of(e.key);
        if (c < 0) return pl_json_fail(&e, err, "unknown op class (dense, elementwise, ...)");
        if (read_eff(&e, NULL, &p->eff_compute[c], err) < 0) return -1;
    }
    return 0;
}

static int read_model(const pl_json *root, pl_cost_params *p, pl_err *err)
{
    const char *model = "";
    if (pl_json_opt_string(root, "device_model", &model, err) < 0) return -1;
    if (strlen(model) >= sizeof p->device_model) {
        pl_json at = pl_json_at(root, "device_model");
        return pl_json_fail(&at, err, "longer than %zu bytes", sizeof p->device_model - 1);
    }
    snprintf(p->device_model, sizeof p->device_model, "%s", model);
    return 0;
}

/* "ort" or "none"; absent: the default. */
static int read_fusion(const pl_json *root, pl_cost_params *p, pl_err *err)
{
    const char *f = NULL;
    if (pl_json_opt_string(root, "runtime_fusion", &f, err) < 0) return -1;
    if (!f) return 0;
    if (!strcmp(f, "ort"))
        p->runtime_fusion = PL_FUSION_ORT;
    else if (!strcmp(f, "none"))
        p->runtime_fusion = PL_FUSION_NONE;
    else {
        pl_json at = pl_json_at(root, "runtime_fusion");
        return pl_json_fail(&at, err, "runtime fusion is \"ort\" or \"none\"");
    }
    return 0;
}

/* Optional; absent: the default 1. */
static int read_conv_ratio(const pl_json *root, pl_cost_params *p, pl_err *err)
{
    int rc = pl_json_opt_number(root, "runtime_conv_ratio", &p->runtime_conv_ratio, err);
    if (rc <= 0) return rc;
    if (p->runtime_conv_ratio > 0 && p->runtime_conv_ratio <= PL_CONV_RATIO_MAX) return 0;
    pl_json at = pl_json_at(root, "runtime_conv_ratio");
    return pl_json_fail(&at, err, "the Conv time ratio must be in (0, %g]", PL_CONV_RATIO_MAX);
}

/* A non-negative number below `hi`, when given. */
static int read_bounded(const pl_json *o, const char *field, double hi, double *out, pl_err *err)
{
    int rc = pl_json_opt_number(o, field, out, err);
    if (rc <= 0) return rc;
    if (*out >= 0 && *out < hi) return 0;
    pl_json at = pl_json_at(o, field);
    return pl_json_fail(&at, err, "must be in [0, %g)", hi);
}

/* A figure's scale (pl_cost_params.peak_scale, mem_scale), optional: in [1, PL_SCALE_MAX]. */
static int read_scale(const pl_json *o, const char *field, double *out, pl_err *err)
{
    int rc = pl_json_opt_number(o, field, out, err);
    if (rc <= 0) return rc;
    if (*out >= 1 && *out <= PL_SCALE_MAX) return 0;
    pl_json at = pl_json_at(o, field);
    return pl_json_fail(&at, err, "must be in [1, %g]", PL_SCALE_MAX);
}

/* "gpu": the GPU kernel rules' parameters (cost.h, pl_gpu_params), each optional over the
 * built-in fit; with a device_model they are that model's (gpu_model), else every GPU's. */
static int read_gpu(const pl_json *root, pl_cost_params *p, pl_err *err)
{
    pl_json o;
    int rc = pl_json_opt_object(root, "gpu", &o, err);
    if (rc <= 0) return rc;
    if (pl_json_check_fields(&o, gpu_fields, err) < 0) return -1;
    const char *model = "";
    if (pl_json_opt_string(&o, "device_model", &model, err) < 0) return -1;
    pl_gpu_params *g = *model ? &p->gpu_model : &p->gpu;
    if (strlen(model) >= sizeof g->device_model) {
        pl_json at = pl_json_at(&o, "device_model");
        return pl_json_fail(&at, err, "longer than %zu bytes", sizeof g->device_model - 1);
    }
    snprintf(g->device_model, sizeof g->device_model, "%s", model);
    double *effs[] = {&g->eff_gemm, &g->eff_conv, &g->eff_tensor, &g->eff_winograd, &g->eff_mem};
    const char *names[] = {"eff_gemm", "eff_conv", "eff_tensor", "eff_winograd", "eff_mem"};
    for (int i = 0; i < 5; i++)
        if (pl_json_has(&o, names[i]) && read_eff(&o, names[i], effs[i], err) < 0) return -1;
    return pl_json_opt_bool(&o, "on", &g->on, err) < 0 ||
                   read_bounded(&o, "mem_half_bytes", 1e12, &g->mem_half_bytes, err) < 0 ||
                   read_bounded(&o, "kernel_s", 1, &g->kernel_s, err) < 0 ||
                   read_bounded(&o, "band", 100, &g->band, err) < 0
               ? -1
               : 0;
}

int pl_cost_params_load(const char *path, pl_cost_params *p, pl_err *err)
{
    pl_json_doc *doc = pl_json_open(path, err);
    if (!doc) return -1;
    pl_cost_params_default(p);
    pl_json root = pl_json_root(doc);
    int rc = pl_json_check_format(&root, "placer-cost-params/1", err) < 0 ||
                     pl_json_check_fields(&root, fields, err) < 0 ||
                     read_model(&root, p, err) < 0 || read_fusion(&root, p, err) < 0 ||
                     read_conv_ratio(&root, p, err) < 0 || read_compute(&root, p, err) < 0 ||
                     read_gpu(&root, p, err) < 0 ||
                     read_bounded(&root, "cpu_band", 100, &p->cpu_band, err) < 0 ||
                     read_bounded(&root, "dense_half_flops", PL_DENSE_HALF_MAX,
                                  &p->dense_half_flops, err) < 0 ||
                     read_eff(&root, "eff_memory", &p->eff_memory, err) < 0 ||
                     read_scale(&root, "peak_scale", &p->peak_scale, err) < 0 ||
                     read_scale(&root, "mem_scale", &p->mem_scale, err) < 0 ||
                     pl_cost_params_check(p, err) < 0
                 ? -1
                 : 0;
    pl_json_close(doc);
    return rc;
}
