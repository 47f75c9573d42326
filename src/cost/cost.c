/* cost.c: the roofline estimate and the op × device time table (design.md §5, docs/cost.md). */
#include "cost_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Defaults, justified in docs/cost.md. Non-dense classes get 0.25 because they never use
 * tensor cores: on a V100 the fp16 non-tensor rate is 31.4 of the 125 TFLOP/s the table
 * lists, so a higher figure would time an fp16 Add at tensor-core speed. */
void pl_cost_params_default(pl_cost_params *p)
{
    p->eff_compute[PL_CLASS_DENSE] = 0.6;
    p->eff_compute[PL_CLASS_ELEMENTWISE] = 0.25;
    p->eff_compute[PL_CLASS_REDUCTION] = 0.25;
    p->eff_compute[PL_CLASS_DATA_MOVEMENT] = 0.25;
    p->eff_compute[PL_CLASS_CONTROL] = 0.3;
    p->eff_compute[PL_CLASS_UNKNOWN] = 0.3;
    p->eff_memory = 0.7;
    p->device_model[0] = 0;
    p->runtime_fusion = PL_FUSION_ORT;
    p->runtime_conv_ratio = 1;
    pl_gpu_params_default(&p->gpu);
    pl_gpu_params_default(&p->gpu_model); /* device_model "": applies to no GPU */
    p->cpu_band = PL_BAND_DEFAULT;
    p->dense_half_flops = 0;          /* no knowledge: the calibration measures it */
    p->peak_scale = p->mem_scale = 1; /* the cluster file's figures */
}

const char *pl_runtime_fusion_name(pl_runtime_fusion f)
{
    return f == PL_FUSION_ORT ? "ort" : "none";
}

/* A Constant op's value is a weight (graph.h): runtimes materialise it at load time like an
 * initializer, so running it costs nothing. Only Constant can write a weight (finalize). */
static bool writes_only_weights(const pl_op *op, const pl_graph *g)
{
    if (op->n_outputs == 0) return false;
    for (int k = 0; k < op->n_outputs; k++)
        if (op->outputs[k] < 0 || !(g->tensors[op->outputs[k]].flags & PL_TENSOR_WEIGHT))
            return false;
    return true;
}

/* The first output's dtype; task-graph tensors are byte vectors (uint8), which says nothing
 * about the arithmetic, so they count as fp32. */
pl_precision pl_cost_op_precision(const pl_op *op, const pl_graph *g)
{
    if (op->n_outputs == 0 || op->outputs[0] < 0) return PL_PREC_FP32;
    const pl_tensor *t = &g->tensors[op->outputs[0]];
    if (t->flags & PL_TENSOR_BYTES_ONLY) return PL_PREC_FP32;
    return pl_precision_of_dtype(t->dtype);
}

/* The output columns N of a GEMM op (MatMul, FusedMatMul, Gemm), 0 for any other op or an
 * unknown shape; a MatMul whose B is a vector has N = 1. */
static int64_t gemm_columns(const pl_op *op, const pl_graph *g)
{
    bool mm = !strcmp(op->type, "MatMul") || !strcmp(op->type, "FusedMatMul");
    if ((!mm && strcmp(op->type, "Gemm")) || op->n_outputs < 1 || op->outputs[0] < 0) return 0;
    if (mm && op->n_inputs > 1 && op->inputs[1] >= 0 && g->tensors[op->inputs[1]].rank == 1)
        return 1;
    const pl_tensor *y = &g->tensors[op->outputs[0]];
    if (y->rank < 1 || y->dims[y->rank - 1] <= 0) return 0;
    return y->dims[y->rank - 1];
}

/* The FLOPs a CPU's GEMM kernel spends on the op: its columns rounded up to the device's tile
 * (pl_device.gemm_tile_columns). Measured here: a 2708 x 2708 by 2708 x N MatMul takes
 * 2.3 ms for every N from 2 to 16 and 4.6 ms from 17 to 32 (docs/cost.md, "GEMM column
 * tiles"); N = 1 runs as a GEMV, untiled. */
static double tiled_flops(const pl_op *op, const pl_graph *g, const pl_device *d)
{
    int64_t n = d->gemm_tile_columns > 1 ? gemm_columns(op, g) : 0;
    if (n <= 1) return op->flops;
    int64_t tile = d->gemm_tile_columns, padded = (n + tile - 1) / tile * tile;
    return op->flops * (double)padded / (double)n;
}

/* The FLOPs of one GEMM of a GEMM-like op (pl_cost_terms.gemm_flops), 0 when not one or its
 * output's shape is unknown. A MatMul of rank-3+ output runs one GEMM per matrix of the batch
 * (MLAS loops over them). A grouped Conv has none: onnxruntime runs it by its own grouped and
 * depthwise kernels, which the profiles (optimisation off) time 3-16x slower than the
 * optimised runtime runs them, so no size rule fitted to them would hold (docs/cost.md). */
static double gemm_flops(const pl_op *op, const pl_graph *g)
{
    bool mm = !strcmp(op->type, "MatMul") || !strcmp(op->type, "FusedMatMul");
    bool conv = !strcmp(op->type, "Conv");
    if (!mm && !conv && strcmp(op->type, "Gemm")) return 0;
    if (conv && pl_op_attr_int(op, "group", 1) != 1) return 0;
    if (op->n_outputs < 1 || op->outputs[0] < 0 || !(op->flops > 0)) return 0;
    const pl_tensor *y = &g->tensors[op->outputs[0]];
    if (y->rank < 1) return 0;
    double batch = 1;
    for (int k = 0; mm && k < y->rank - 2; k++) {
        if (y->dims[k] <= 0) return 0;
        batch *= (double)y->dims[k];
    }
    return op->flops / batch;
}

/* A Gemm's C split off t into bias_flops and bias_bytes (pl_cost_terms). MatMulAddFusion makes
 * MatMul + Add a Gemm, so the two spellings are one kernel and must cost the same. Priced
 * whole, a Gemm was 7 us cheaper than its MatMul + Add on rnnlm_unrolled's 20 x 650 by
 * 650 x 2600 products (it did not count the bias's FLOPs), and `placer optimize` took 140 such
 * rewrites that onnxruntime measured 14 % slower (docs/rewrite.md, "Search"). */
static void gemm_bias_split(const pl_op *op, const pl_graph *g, pl_cost_terms *t)
{
    if (strcmp(op->type, "Gemm") || op->n_inputs < 3 || op->n_outputs < 1) return;
    int a = op->inputs[0], b = op->inputs[1], c = op->inputs[2], y = op->outputs[0];
    if (c < 0 || y < 0 || c == a || c == b || g->tensors[c].bytes <= 0) return;
    int64_t n = pl_tensor_numel(&g->tensors[y]);
    if (n <= 0 || !(t->bytes > (double)g->tensors[c].bytes)) return;
    t->bias_flops = (double)n, t->bias_bytes = (double)g->tensors[c].bytes;
    t->bytes -= t->bias_bytes;
}

/* An RNN's re-reads of R split off t into reread_bytes on a CPU that gives reread_Bps. Priced
 * with the rest at the calibrated memory rate (17.7 GB/s on the Xeon), nmt_seq2seq's encoder
 * LSTMs (R 4 MiB, 31 re-reads) came to 7.8 ms against 5.7 measured; onnxruntime's LSTM at batch
 * 1 re-reads R at 22-24 GB/s for R of 4-64 MiB, and 60-68 GB/s within the 2 MiB L2, where it
 * is priced at mem_bandwidth_Bps (34.5 GB/s, an Add's in that cache: still over, but less than
 * at the calibrated rate; docs/cost.md, "Bytes moved"). */
static void reread_split(const pl_op *op, const pl_device *d, pl_cost_terms *t)
{
    double b = op->bytes_reread;
    if (!(d->reread_Bps > 0) || !(b > 0) || !(b < t->bytes)) return;
    bool in_core = d->private_cache_bytes > 0 && op->reread_tensor_bytes <= d->private_cache_bytes;
    t->reread_bw = in_core ? d->mem_bandwidth_Bps : d->reread_Bps;
    t->reread_bytes = b;
    t->bytes -= b;
}

void pl_cost_terms_of(const pl_op *op, const pl_graph *g, const pl_device *d, pl_cost_terms *t)
{
    int cls = op->cls >= 0 && op->cls < PL_CLASS_COUNT ? (int)op->cls : PL_CLASS_UNKNOWN;
    pl_precision prec = pl_cost_op_precision(op, g);
    double peak = d->peak_flops_per_s[prec] > 0 ? d->peak_flops_per_s[prec]
                                                : d->peak_flops_per_s[PL_PREC_FP32];
    *t = (pl_cost_terms){.cls = cls,
                         .launch_s = d->launch_overhead_s,
                         .flops = tiled_flops(op, g, d),
                         .peak = peak * pl_device_speed(d), /* cores: docs/cost.md, "CPU cores" */
                         .bytes = op->bytes_moved,
                         .bandwidth = d->mem_bandwidth_Bps,
                         .gemm_flops = gemm_flops(op, g)};
    /* launch 0 and no work: pl_cost_terms_s gives exactly 0 */
    if (writes_only_weights(op, g)) t->launch_s = t->flops = t->bytes = 0;
    gemm_bias_split(op, g, t);
    reread_split(op, d, t);
}

const pl_gpu_params *pl_cost_gpu_params(const pl_cost_params *p, const pl_device *d)
{
    if (d->kind != PL_DEV_GPU) return NULL;
    const pl_gpu_params *gp =
        p->gpu_model.device_model[0] && pl_cost_model_matches(p->gpu_model.device_model, d)
            ? &p->gpu_model
            : &p->gpu;
    return gp->on ? gp : NULL;
}

/* The estimate, with the device's built-in spec (NULL: none) for the GPU rules' SM count. */
static double estimate(const pl_op *op, const pl_graph *g, const pl_device *d,
                       const pl_gpu_spec *spec, const pl_cost_params *p)
{
    const pl_gpu_params *gp = pl_cost_gpu_params(p, d);
    if (gp && pl_gpu_has_shapes(op, g))
        return writes_only_weights(op, g) ? 0
                                          : pl_gpu_op_s(op, g, d, spec ? spec->sms : 0, gp, NULL);
    pl_cost_terms t;
    pl_cost_terms_of(op, g, d, &t);
    double s = pl_cost_terms_s(&t, p);
    /* the runtime's layout, not the profiled one (pl_cost_params.runtime_conv_ratio) */
    if (p->runtime_fusion == PL_FUSION_ORT && !strcmp(op->type, "Conv")) s *= p->runtime_conv_ratio;
    return s;
}

double pl_cost_estimate(const pl_op *op, const pl_graph *g, const pl_device *d,
                        const pl_cost_params *p)
{
    return estimate(op, g, d, pl_gpu_spec_find(d->model), p);
}

double pl_cost_sum_s(const pl_graph *g, int from, int to, const pl_device *d,
                     const pl_cost_params *p)
{
    const pl_gpu_spec *spec = pl_gpu_spec_find(d->model);
    double s = 0;
    for (int op = from; op < to && op < g->n_ops; op++)
        s += estimate(&g->ops[op], g, d, spec, p);
    return s;
}

/* ---- given times ---- */

/* A time or profile keyed by `key` applies to device d: its model, ignoring case, or the
 * same built-in spec ("V100" and "V100-SXM2-16GB"). `key_spec` is pl_gpu_spec_find(key). */
static bool model_matches(const char *key, const pl_gpu_spec *key_spec, const pl_device *d,
                          const pl_gpu_spec *dev_spec)
{
    if (strcasecmp(key, d->model) == 0) return true;
    return key_spec && key_spec == dev_spec;
}

bool pl_cost_model_matches(const char *model, const pl_device *d)
{
    return model_matches(model, pl_gpu_spec_find(model), d, pl_gpu_spec_find(d->model));
}

int pl_cost_model_count(const char *model, const pl_cluster *c)
{
    int n = 0;
    for (int d = 0; d < c->n_devs; d++)
        n += pl_cost_model_matches(model, &c->devs[d]);
    return n;
}

/* Appends the device models of c that buf does not hold yet, ", "-separated. */
static void add_models(const pl_cluster *c, char *buf, size_t n)
{
    for (int d = 0; d < c->n_devs; d++) {
        size_t at = strlen(buf), len = strlen(c->devs[d].model);
        bool seen = false;
        for (const char *p = buf; *p && !seen; p += strcspn(p, ","), p += *p ? 2 : 0)
            seen = strcspn(p, ",") == len && !strncasecmp(p, c->devs[d].model, len);
        if (!seen && at + len + 3 < n)
            snprintf(buf + at, n - at, "%s%s", at ? ", " : "", c->devs[d].model);
    }
}

int pl_cost_model_check(const char *what, const char *model, const pl_cluster *const *c, int n_c,
                        pl_err *err)
{
    char models[512] = "";
    for (int k = 0; k < n_c; k++) {
        if (pl_cost_model_count(model, c[k]) > 0) return 0;
        add_models(c[k], models, sizeof models);
    }
    if (n_c == 1)
        return pl_err_set(err,
                          "%s: device model '%s' matches no device of cluster %s (its device "
                          "models: %s)",
                          what, model,
                          c[0]->path   ? c[0]->path
                          : c[0]->name ? c[0]->name
                                       : "",
                          models);
    return pl_err_set(err,
                      "%s: device model '%s' matches no device of any of the %d clusters "
                      "(their device models: %s)",
                      what, model, n_c, models);
}

/* The op's own time on device d: matched on the device model first, then on its name. */
static double own_time(const pl_op *op, const pl_gpu_spec *const *key_spec, const pl_device *d,
                       const pl_gpu_spec *dev_spec)
{
    for (int k = 0; k < op->n_times; k++)
        if (model_matches(op->time_device[k], key_spec[k], d, dev_spec)) return op->time_s[k];
    for (int k = 0; k < op->n_times; k++)
        if (strcasecmp(op->time_device[k], d->name) == 0) return op->time_s[k];
    return -1;
}

/* Profiles apply to a model, not to a device: a profile measured on another model would
 * silently give wrong times, so a model_sha256 that differs from the graph file's is refused
 * (for several models in one graph, pl_graph_union: from every model's file). A graph built in
 * code has no file, so there is nothing to compare. A profile for a device model the cluster
 * does not have would be ignored in silence: refused too. */
typedef char sha_hex[65];

/* The SHA-256 of each tenant's file ("" for one built in code), read only when a profile names
 * its model: hashing every model of `placer multi` would read each file once more for nothing.
 * NULL with err set when a file cannot be read; *out NULL when no profile needs them. */
static int tenant_shas(const pl_graph *g, const pl_profile *const *pr, int n, sha_hex **out,
                       pl_err *err)
{
    *out = NULL;
    bool needed = false;
    for (int i = 0; i < n; i++)
        needed |= pr[i]->model_sha256[0] != 0;
    if (g->n_tenants == 0 || !needed) return 0;
    sha_hex *sha = pl_calloc((size_t)g->n_tenants, sizeof *sha);
    for (int t = 0; t < g->n_tenants; t++)
        if (g->tenant_paths && g->tenant_paths[t] &&
            pl_sha256_file(g->tenant_paths[t], sha[t], err) < 0) {
            free(sha);
            return -1;
        }
    *out = sha;
    return 0;
}

static bool tenant_has_sha(const pl_graph *g, const sha_hex *shas, const char *sha)
{
    for (int t = 0; shas && t < g->n_tenants; t++)
        if (!strcmp(shas[t], sha)) return true;
    return false;
}

static int check_profiles(const pl_graph *g, const pl_cluster *c, const pl_profile *const *pr,
                          int n, const sha_hex *shas, pl_err *err)
{
    for (int i = 0; i < n; i++) {
        if (pl_cost_model_check(pr[i]->path ? pr[i]->path : "a profile", pr[i]->device_model, &c, 1,
                                err) < 0)
            return -1;
        if (pl_profile_ops_timed(pr[i], g, -1) == 0)
            return pl_err_set(err,
                              "the profile %s for device model '%s' times none of the ops of %s: "
                              "its op names are another model's (measure this one: `placer "
                              "profile MODEL -o FILE`)",
                              pr[i]->path ? pr[i]->path : "", pr[i]->device_model,
                              g->n_tenants > 0 ? "the models given"
                              : g->path        ? g->path
                                               : "the model");
        if (!pr[i]->model_sha256[0]) continue;
        if (g->n_tenants > 0) {
            if (!tenant_has_sha(g, shas, pr[i]->model_sha256))
                return pl_err_set(err,
                                  "the profile %s for device model '%s' was measured on a model "
                                  "(sha256 %.12s...) that is none of the models given",
                                  pr[i]->path ? pr[i]->path : "", pr[i]->device_model,
                                  pr[i]->model_sha256);
            continue;
        }
        if (!g->path) continue;
        const char *sha = pl_graph_sha256(g, err);
        if (!sha) return -1;
        if (strcmp(sha, pr[i]->model_sha256) != 0)
            return pl_err_set(err,
                              "the profile for device model '%s' was measured on another model "
                              "(sha256 %.12s...), not on %s (sha256 %.12s...)",
                              pr[i]->device_model, pr[i]->model_sha256, g->path, sha);
    }
    return 0;
}

static int gpu_check(const pl_gpu_params *g, const char *which, pl_err *err)
{
    const char *bad = !pl_cost_eff_valid(g->eff_gemm)                         ? "eff_gemm"
                      : !pl_cost_eff_valid(g->eff_tensor)                     ? "eff_tensor"
                      : !pl_cost_eff_valid(g->eff_conv)                       ? "eff_conv"
                      : !pl_cost_eff_valid(g->eff_winograd)                   ? "eff_winograd"
                      : !pl_cost_eff_valid(g->eff_mem)                        ? "eff_mem"
                      : !(g->mem_half_bytes >= 0 && g->mem_half_bytes < 1e12) ? "mem_half_bytes"
                      : !(g->kernel_s >= 0 && g->kernel_s < 1)                ? "kernel_s"
                      : !(g->band >= 0 && g->band <= 100)                     ? "band"
                                                                              : NULL;
    if (!bad) return 0;
    return pl_err_set(err,
                      "cost model: %s GPU parameter %s is out of range (efficiencies in (0, 1], "
                      "mem_half_bytes in [0, 1e12), kernel_s in [0, 1) s, band in [0, 100])",
                      which, bad);
}

int pl_cost_params_check(const pl_cost_params *p, pl_err *err)
{
    if (gpu_check(&p->gpu, "the", err) < 0 || gpu_check(&p->gpu_model, "the model's", err) < 0)
        return -1;
    if (!(p->cpu_band >= 0 && p->cpu_band <= 100))
        return pl_err_set(err, "cost model: the CPU band %g is not in [0, 100]", p->cpu_band);
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        if (!pl_cost_eff_valid(p->eff_compute[c]))
            return pl_err_set(err,
                              "cost model: compute efficiency of class %s is %g, not in (0, 1]",
                              pl_op_class_name((pl_op_class)c), p->eff_compute[c]);
    if (!pl_cost_eff_valid(p->eff_memory))
        return pl_err_set(err, "cost model: memory efficiency is %g, not in (0, 1]", p->eff_memory);
    if (!(p->peak_scale >= 1 && p->peak_scale <= PL_SCALE_MAX && p->mem_scale >= 1 &&
          p->mem_scale <= PL_SCALE_MAX))
        return pl_err_set(err, "cost model: peak_scale %g or mem_scale %g is not in [1, %g]",
                          p->peak_scale, p->mem_scale, PL_SCALE_MAX);
    if (!(p->runtime_conv_ratio > 0 && p->runtime_conv_ratio <= PL_CONV_RATIO_MAX))
        return pl_err_set(err, "cost model: the Conv time ratio is %g, not in (0, %g]",
                          p->runtime_conv_ratio, PL_CONV_RATIO_MAX);
    if (!(p->dense_half_flops >= 0 && p->dense_half_flops < PL_DENSE_HALF_MAX))
        return pl_err_set(err, "cost model: dense_half_flops is %g, not in [0, %g)",
                          p->dense_half_flops, PL_DENSE_HALF_MAX);
    if (p->runtime_fusion != PL_FUSION_NONE && p->runtime_fusion != PL_FUSION_ORT)
        return pl_err_set(err, "cost model: runtime fusion %d is neither none (0) nor ort (1)",
                          (int)p->runtime_fusion);
    return 0;
}

/* ---- the table ---- */

typedef struct table_ctx {
    pl_cost *k;
    /* per (tenant, device), [t * n_devs + d]: the first profile for the device's model (and,
     * with several models, measured on the tenant's), or NULL */
    const pl_profile **dev_profile;
    const pl_gpu_spec **dev_spec; /* per device: its built-in spec, or NULL */
    const pl_gpu_spec **key_spec; /* scratch: the spec of each of the op's time keys */
    const int *only_dev;          /* pl_cost_new_placed: per op, the one device to price */
    const sha_hex *tenant_sha;    /* several models with profiles naming them: each file's */
    int cap_keys;
    /* Recent keys and their specs: a task graph repeats a few model names on every node, and
     * the spec table's search is the costliest step of building the table. */
    const char *seen_key[8];
    const pl_gpu_spec *seen_spec[8];
    int n_seen;
} table_ctx;

static const pl_gpu_spec *spec_of_key(table_ctx *x, const char *key)
{
    for (int i = 0; i < x->n_seen && i < 8; i++)
        if (strcmp(x->seen_key[i], key) == 0) return x->seen_spec[i];
    int slot = x->n_seen++ % 8;
    x->seen_key[slot] = key;
    return x->seen_spec[slot] = pl_gpu_spec_find(key);
}

/* Where an estimate of op on d comes from. */
static pl_cost_basis estimate_basis(const pl_cost_params *p, const pl_op *op, const pl_graph *g,
                                    const pl_device *d)
{
    const pl_gpu_params *gp = pl_cost_gpu_params(p, d);
    if (gp && pl_gpu_has_shapes(op, g))
        return gp == &p->gpu_model ? PL_BASIS_GPU_MODEL : PL_BASIS_GPU_FIT;
    if (d->kind == PL_DEV_CPU && p->cpu_band < PL_BAND_DEFAULT) return PL_BASIS_CPU;
    return PL_BASIS_DEFAULT;
}

/* Given time, else estimate; an op that has times but none for this device and no FLOPs to
 * estimate from cannot be timed there: INFINITY (it cannot run there). */
static void fill_cell(table_ctx *x, int op, int dev)
{
    pl_cost *k = x->k;
    const pl_op *o = &k->g->ops[op];
    const pl_device *d = &k->c->devs[dev];
    size_t cell = (size_t)op * k->n_devs + dev;
    double t = own_time(o, x->key_spec, d, x->dev_spec[dev]);
    const pl_profile *pr = x->dev_profile[(size_t)o->tenant * k->n_devs + dev];
    k->basis[cell] = PL_BASIS_GIVEN;
    if (t < 0 && pr)
        t = pl_cost_on_cores(o, k->g, d, &k->params,
                             pl_profile_lookup(pr, pl_op_own_name(k->g, o))),
        k->basis[cell] = PL_BASIS_PROFILED;
    k->given[cell] = t >= 0;
    if (t < 0) {
        k->basis[cell] = estimate_basis(&k->params, o, k->g, d);
        t = o->n_times > 0 && !(o->flops > 0) ? INFINITY
                                              : estimate(o, k->g, d, x->dev_spec[dev], &k->params);
    }
    k->op_s[cell] = t;
}

static void fill_op(table_ctx *x, int op)
{
    const pl_op *o = &x->k->g->ops[op];
    if (o->n_times > x->cap_keys) {
        x->cap_keys = o->n_times;
        x->key_spec = pl_realloc(x->key_spec, (size_t)x->cap_keys * sizeof *x->key_spec);
    }
    for (int i = 0; i < o->n_times; i++)
        x->key_spec[i] = spec_of_key(x, o->time_device[i]);
    for (int dev = 0; dev < x->k->n_devs; dev++)
        if (!x->only_dev || x->only_dev[op] == dev)
            fill_cell(x, op, dev);
        else
            x->k->op_s[(size_t)op * x->k->n_devs + dev] = INFINITY;
}

/* Bytes of the op's distinct weight inputs and distinct outputs; `stamp` dedups a tensor
 * listed twice. */
static void fill_bytes(pl_cost *k, int op, int *stamp)
{
    const pl_graph *g = k->g;
    const pl_op *o = &g->ops[op];
    double w = 0, out = 0;
    for (int i = 0; i < o->n_inputs + o->n_outputs; i++) {
        int t = i < o->n_inputs ? o->inputs[i] : o->outputs[i - o->n_inputs];
        if (t < 0 || stamp[t] == op + 1) continue;
        stamp[t] = op + 1;
        double b = g->tensors[t].bytes > 0 ? (double)g->tensors[t].bytes : 0;
        if (i >= o->n_inputs)
            out += b;
        else if (g->tensors[t].flags & PL_TENSOR_WEIGHT)
            w += b;
    }
    k->weight_bytes[op] = w;
    k->out_bytes[op] = out;
}

/* With several models, a profile measured on one (its model_sha256) applies to its ops only,
 * and one naming no model to a model whose ops it times. */
static bool profile_for_tenant(const table_ctx *x, const pl_profile *pr, int t)
{
    const pl_graph *g = x->k->g;
    if (g->n_tenants == 0) return true;
    if (!pr->model_sha256[0]) return pl_profile_ops_timed(pr, g, t) > 0;
    return !x->tenant_sha || !strcmp(x->tenant_sha[t], pr->model_sha256);
}

/* Each (tenant, device) takes the first profile for the device's model measured on that
 * tenant's file (its model_sha256), else the first that names no model: a profile measured on
 * the model wins over one that matches by op names alone, whatever their order. */
static void match_profiles(table_ctx *x, const pl_profile *const *pr, int n)
{
    const pl_cluster *c = x->k->c;
    int T = pl_graph_tenants(x->k->g);
    bool *applies = pl_calloc((size_t)n + 1, sizeof *applies);
    for (int dev = 0; dev < c->n_devs; dev++)
        x->dev_spec[dev] = pl_gpu_spec_find(c->devs[dev].model);
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < n; i++)
            applies[i] = profile_for_tenant(x, pr[i], t);
        for (int dev = 0; dev < c->n_devs; dev++) {
            const pl_profile **slot = &x->dev_profile[(size_t)t * c->n_devs + dev];
            for (int named = 1; named >= 0; named--)
                for (int i = 0; i < n && !*slot; i++)
                    if (applies[i] && (pr[i]->model_sha256[0] != 0) == named &&
                        model_matches(pr[i]->device_model, pl_gpu_spec_find(pr[i]->device_model),
                                      &c->devs[dev], x->dev_spec[dev]))
                        *slot = pr[i];
        }
    }
    free(applies);
}

/* A device name or model in a task graph names device d (as own_time matches op times). */
static bool names_device(const char *key, const pl_gpu_spec *key_spec, const pl_device *d,
                         const pl_gpu_spec *dev_spec)
{
    return model_matches(key, key_spec, d, dev_spec) || strcasecmp(key, d->name) == 0;
}

/* The per-pair table from the graph's given transfer times: for each (tensor, a, b) the first
 * entry in file order that names a and b; -1 (time it from bytes) where none does. */
static void fill_pairs(pl_cost *k, const table_ctx *x)
{
    const pl_graph *g = k->g;
    if (!g->n_xfer_times) return;
    size_t D = (size_t)k->n_devs, cells = (size_t)g->n_tensors * D * D;
    k->pair_xfer_s = pl_malloc((cells ? cells : 1) * sizeof *k->pair_xfer_s);
    for (size_t i = 0; i < cells; i++)
        k->pair_xfer_s[i] = -1;
    for (int i = 0; i < g->n_xfer_times; i++) {
        const pl_xfer_time *e = &g->xfer_times[i];
        const pl_gpu_spec *from = pl_gpu_spec_find(e->from), *to = pl_gpu_spec_find(e->to);
        for (size_t a = 0; a < D; a++) {
            if (!names_device(e->from, from, &k->c->devs[a], x->dev_spec[a])) continue;
            for (size_t b = 0; b < D; b++) {
                double *cell = &k->pair_xfer_s[((size_t)e->tensor * D + a) * D + b];
                if (*cell < 0 && names_device(e->to, to, &k->c->devs[b], x->dev_spec[b]))
                    *cell = e->s;
            }
        }
    }
}

static pl_cost *cost_new(const pl_graph *g, const pl_cluster *c, const pl_cost_params *params,
                         const pl_profile *const *profiles, int n_profiles, const int *only_dev,
                         pl_err *err)
{
    pl_cost_params def;
    if (!params) pl_cost_params_default(&def), params = &def;
    /* every verb that places or simulates starts here */
    if (pl_graph_check_ops(g, err) < 0) return NULL;
    sha_hex *shas;
    if (pl_cost_params_check(params, err) < 0 ||
        tenant_shas(g, profiles, n_profiles, &shas, err) < 0)
        return NULL;
    if (check_profiles(g, c, profiles, n_profiles, shas, err) < 0) {
        free(shas);
        return NULL;
    }
    pl_cost *k = pl_calloc(1, sizeof *k);
    k->g = g, k->c = c, k->params = *params;
    k->n_ops = g->n_ops, k->n_devs = c->n_devs;
    size_t cells = (size_t)k->n_ops * k->n_devs;
    k->op_s = pl_malloc((cells ? cells : 1) * sizeof *k->op_s);
    k->given = pl_calloc(cells ? cells : 1, 1);
    k->basis = pl_calloc(cells ? cells : 1, 1);
    k->weight_bytes = pl_calloc(k->n_ops ? k->n_ops : 1, sizeof *k->weight_bytes);
    k->out_bytes = pl_calloc(k->n_ops ? k->n_ops : 1, sizeof *k->out_bytes);
    table_ctx x = {.k = k,
                   .dev_profile =
                       pl_calloc((size_t)pl_graph_tenants(g) * c->n_devs + 1, sizeof(void *)),
                   .dev_spec = pl_calloc(c->n_devs + 1, sizeof(void *)),
                   .only_dev = only_dev,
                   .tenant_sha = shas};
    match_profiles(&x, profiles, n_profiles);
    int *stamp = pl_calloc(g->n_tensors + 1, sizeof *stamp);
    for (int op = 0; op < k->n_ops; op++) {
        fill_op(&x, op);
        fill_bytes(k, op, stamp);
    }
    free(stamp);
    pl_cost_fuse(k); /* after out_bytes, which the fused prices read */
    fill_pairs(k, &x);
    free(x.dev_profile), free(x.dev_spec), free(x.key_spec), free(shas);
    return k;
}

pl_cost *pl_cost_new(const pl_graph *g, const pl_cluster *c, const pl_cost_params *params,
                     const pl_profile *const *profiles, int n_profiles, pl_err *err)
{
    return cost_new(g, c, params, profiles, n_profiles, NULL, err);
}

pl_cost *pl_cost_new_placed(const pl_graph *g, const pl_cluster *c, const pl_cost_params *params,
                            const int *dev_of, pl_err *err)
{
    return cost_new(g, c, params, NULL, 0, dev_of, err);
}

void pl_cost_free(pl_cost *k)
{
    if (!k) return;
    free(k->op_s), free(k->given), free(k->basis), free(k->weight_bytes), free(k->out_bytes);
    free(k->pair_xfer_s);
    free(k->fused_root), free(k->fused_prev), free(k->unfused_s);
    free(k);
}

/* ---- uncertainty ---- */

const char *pl_cost_basis_name(pl_cost_basis b)
{
    static const char *const names[PL_BASIS_COUNT] = {"given",     "profiled", "gpu-fit",
                                                      "gpu-model", "cpu",      "default"};
    return b >= 0 && b < PL_BASIS_COUNT ? names[b] : "?";
}

static double basis_band(const pl_cost *k, pl_cost_basis b, const pl_device *d)
{
    switch (b) {
    case PL_BASIS_GIVEN:
        return 0;
    case PL_BASIS_PROFILED:
        return PL_BAND_PROFILED;
    case PL_BASIS_GPU_FIT:
        return k->params.gpu.band;
    case PL_BASIS_GPU_MODEL:
        return k->params.gpu_model.band;
    case PL_BASIS_CPU:
        return d->kind == PL_DEV_CPU ? k->params.cpu_band : PL_BAND_DEFAULT;
    default:
        return PL_BAND_DEFAULT;
    }
}

double pl_cost_op_band(const pl_cost *k, int op, int dev)
{
    size_t cell = (size_t)op * k->n_devs + dev;
    if (!(k->op_s[cell] > 0)) return 0; /* costs nothing: nothing to be off by */
    return basis_band(k, (pl_cost_basis)k->basis[cell], &k->c->devs[dev]);
}

double pl_cost_plan_band(const pl_cost *k, const int *dev_of, pl_cost_basis *basis)
{
    double widest = 0;
    pl_cost_basis at = PL_BASIS_GIVEN;
    for (int op = 0; op < k->n_ops; op++) {
        if (dev_of[op] < 0 || dev_of[op] >= k->n_devs) continue;
        double b = pl_cost_op_band(k, op, dev_of[op]);
        if (b > widest)
            widest = b, at = (pl_cost_basis)k->basis[(size_t)op * k->n_devs + dev_of[op]];
    }
    if (basis) *basis = at;
    return widest;
}
