/* machine.c: calibrated by default (include/placer/calib.h, docs/calibrate.md). This machine
 * is measured once, with the profile and fit that `placer profile` and `placer calibrate` use,
 * and the fit is cached per CPU model, so that a cluster describing this machine is priced
 * with its own efficiencies without a calibration step by the user. */
#include "placer/calib.h"
#include "placer/json.h"
#include "placer/runtime.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MACHINE_MODELS_MAX 16
/* Each model is profiled in MACHINE_PASSES passes over the set, one after the other, and each
 * op's time is its median over the passes: a VM's slow spell of a few seconds (its host's
 * other guests) then moves one pass, not the fit. With one pass of 10 requests, four
 * calibrations within five minutes on the Xeon VM gave dense efficiencies of 0.708-0.759 and
 * one of 0.661 (2026-11-30 00:46 UTC), which priced rnnlm 9-14 % slower than it then ran
 * (docs/calibrate.md, "Passes"). */
#define MACHINE_PASSES 3
#define MACHINE_REPEAT 5 /* timed requests per model and pass */

/* The zoo models measured: convolution nets (mobilenet_v3_large, resnet50), attention
 * (transformer, bert_base), recurrent (rnnlm) and a seq2seq model whose time is mostly small
 * memory-bound ops (nmt_seq2seq): without the last two, eff_memory came out at 0.11-0.13 and
 * nmt_seq2seq was predicted at twice its time (docs/calibrate.md). About 20 s here, in three
 * passes.
 * tools/install.sh installs the same list. */
static const char *const machine_models[] = {
    "mobilenet_v3_large", "resnet50", "transformer", "rnnlm", "nmt_seq2seq", "bert_base", NULL};

const char *const *pl_machine_model_names(void)
{
    return machine_models;
}

void pl_cpu_model(char *out, size_t n)
{
    snprintf(out, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = 0;
        if (*v) snprintf(out, n, "%s", v);
        break;
    }
    fclose(f);
}

/* s with every character other than a letter, digit, '-' or '.' made '_', into name. */
static void file_safe(const char *s, char *name, size_t n)
{
    size_t k = 0;
    for (; s[k] && k < n - 1; k++) {
        unsigned char c = (unsigned char)s[k];
        name[k] = isalnum(c) || c == '-' || c == '.' ? (char)c : '_';
    }
    name[k] = 0;
}

int pl_machine_calib_path(const char *cpu, const char *device_model, char *out, size_t n,
                          pl_err *err)
{
    char dir[4096], a[128], b[128];
    if (pl_cache_dir("calibration", dir, sizeof dir, err) < 0) return -1;
    file_safe(cpu, a, sizeof a), file_safe(device_model, b, sizeof b);
    /* the cost model's version in the name: two placers of different versions on one machine
     * (or two worktrees) keep an entry each instead of refitting each other's */
    int w = snprintf(out, n, "%s/%s__%s.v%d.json", dir, a, b, PL_MACHINE_COST_MODEL);
    if (w < 0 || (size_t)w >= n) return pl_err_set(err, "the cache folder's path is too long");
    return 0;
}

void pl_machine_fit_key(const pl_device *d, char *out, size_t n)
{
    int w = snprintf(
        out, n, "cost model %d; fp32 %.6g FLOP/s; memory %.6g B/s; launch %.6g s; GEMM tile %d",
        PL_MACHINE_COST_MODEL, d->peak_flops_per_s[PL_PREC_FP32], d->mem_bandwidth_Bps,
        d->launch_overhead_s, d->gemm_tile_columns);
    /* only when given: a device without it is priced as before, and keeps its entry */
    if (d->reread_Bps > 0 && w > 0 && (size_t)w < n)
        snprintf(out + w, n - (size_t)w, "; re-read %.6g B/s", d->reread_Bps);
}

/* The entry's "cpu_model" and "fitted_for" (pl_cost_params_load has checked the rest); the
 * key is "" when the entry has none (written before it existed). */
static int entry_keys(const char *path, char *cpu, size_t n, char *key, size_t nk, pl_err *err)
{
    pl_json_doc *doc = pl_json_open(path, err);
    if (!doc) return -1;
    pl_json root = pl_json_root(doc);
    const char *s, *k = "";
    int rc = pl_json_string(&root, "cpu_model", &s, err);
    if (rc == 0) snprintf(cpu, n, "%s", s);
    if (rc == 0 && pl_json_opt_string(&root, "fitted_for", &k, err) < 0) rc = -1;
    if (rc == 0) snprintf(key, nk, "%s", k);
    pl_json_close(doc);
    return rc < 0 ? -1 : 0;
}

int pl_machine_calib_load(const char *path, const char *cpu, const pl_device *d, pl_cost_params *p,
                          pl_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return pl_err_set(err, "%s: no such file", path), 0;
    fclose(f);
    char got[256], key[512], want[512];
    if (pl_cost_params_load(path, p, err) < 0 ||
        entry_keys(path, got, sizeof got, key, sizeof key, err) < 0)
        return -1;
    if (strcmp(got, cpu))
        return pl_err_set(err, "%s: measured on CPU '%s', but this machine's is '%s'", path, got,
                          cpu);
    if (strcmp(p->device_model, d->model))
        return pl_err_set(err, "%s: fitted for device model '%s', but the cluster's is '%s'", path,
                          p->device_model, d->model);
    /* efficiencies are fractions of the figures they were fitted with, under the cost model's
     * terms of the time: with other figures or terms they would price wrongly */
    pl_machine_fit_key(d, want, sizeof want);
    if (strcmp(key, want))
        return pl_err_set(err, "%s: fitted for \"%s\", but device %s is now \"%s\"", path,
                          *key ? key : "(an older placer)", d->name, want);
    return 1;
}

json_t *pl_calib_json(const pl_calib_result *r, const char *device_model, const char *cpu,
                      const char *measured)
{
    json_t *eff = json_object();
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        json_object_set_new(eff, pl_op_class_name(c), json_real(r->params.eff_compute[c]));
    json_t *samples = json_object();
    for (int c = 0; c < PL_CLASS_COUNT; c++)
        json_object_set_new(samples, pl_op_class_name(c), json_integer(r->class_samples[c]));
    json_t *j =
        json_pack("{s:s, s:s}", "format", "placer-cost-params/1", "device_model", device_model);
    if (cpu) json_object_set_new(j, "cpu_model", json_string(cpu));
    if (measured) json_object_set_new(j, "measured", json_string(measured));
    json_object_set_new(j, "eff_compute", eff);
    json_object_set_new(j, "eff_memory", json_real(r->params.eff_memory));
    json_object_set_new(j, "profiler_overhead_s", json_real(r->profiler_s));
    if (r->params.runtime_conv_ratio != 1)
        json_object_set_new(j, "runtime_conv_ratio", json_real(r->params.runtime_conv_ratio));
    json_object_set_new(j, "dense_half_flops", json_real(r->params.dense_half_flops));
    /* only when the fit found the device's figures short of this CPU's (calib.h) */
    if (r->params.peak_scale != 1)
        json_object_set_new(j, "peak_scale", json_real(r->params.peak_scale));
    if (r->params.mem_scale != 1)
        json_object_set_new(j, "mem_scale", json_real(r->params.mem_scale));
    if (r->dense_half_why[0])
        json_object_set_new(j, "dense_half_note", json_string(r->dense_half_why));
    const pl_gpu_params *g = &r->params.gpu_model;
    if (g->device_model[0])
        json_object_set_new(j, "gpu",
                            json_pack("{s:s, s:b, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
                                      "device_model", g->device_model, "on", g->on, "eff_gemm",
                                      g->eff_gemm, "eff_conv", g->eff_conv, "eff_tensor",
                                      g->eff_tensor, "eff_winograd", g->eff_winograd, "eff_mem",
                                      g->eff_mem, "mem_half_bytes", g->mem_half_bytes, "kernel_s",
                                      g->kernel_s, "band", g->band));
    if (r->passes > 0) {
        json_object_set_new(j, "passes", json_integer(r->passes));
        json_object_set_new(j, "pass_spread", json_real(r->pass_spread));
    }
    json_object_set_new(j, "samples", json_integer(r->n_samples));
    json_object_set_new(j, "class_samples", samples);
    json_object_set_new(j, "before",
                        json_pack("{s:f, s:f}", "median_rel_error", r->median_before,
                                  "worst_rel_error", r->worst_before));
    json_object_set_new(j, "after",
                        json_pack("{s:f, s:f}", "median_rel_error", r->median_after,
                                  "worst_rel_error", r->worst_after));
    return j;
}

/* The models to measure, into paths[] (each a malloc'd string); how many, -1 on error. */
static int model_paths(char **paths, pl_err *err)
{
    const char *env = getenv("PLACER_CALIBRATION_MODELS");
    int n = 0;
    if (env && *env) {
        for (const char *s = env; *s && n < MACHINE_MODELS_MAX;) {
            size_t len = strcspn(s, ":");
            if (len) paths[n++] = pl_strndup(s, len);
            s += len + (s[len] == ':');
        }
        return n;
    }
    for (; machine_models[n]; n++) {
        char inst[256], tree[256], path[4096];
        snprintf(inst, sizeof inst, "share/placer/models/%s.onnx", machine_models[n]);
        snprintf(tree, sizeof tree, "models/%s.onnx", machine_models[n]);
        if (pl_own_file(inst, tree, path, sizeof path, err) < 0) {
            for (int k = 0; k < n; k++)
                free(paths[k]);
            return -1;
        }
        paths[n] = pl_strdup(path);
    }
    return n;
}

/* One model's profile on this machine, as `placer profile` measures it, from its inflated
 * file; *sum_s gets the timed ops' sum. */
static pl_profile *profile_one(pl_ort *w, const char *inflated, const pl_graph *g,
                               const char *device_model, double *sum_s, pl_err *err)
{
    pl_ort_node_time *t = NULL;
    int n = 0;
    pl_profile_match m = {0};
    if (pl_ort_profile(w, inflated, MACHINE_REPEAT, &t, &n, err) < 0) return NULL;
    pl_profile *p = pl_profile_from_node_times(g, t, n, device_model, &m, err);
    pl_ort_node_times_free(t, n);
    *sum_s = m.measured_s;
    return p;
}

double pl_machine_pass_spread(const double *total, int passes)
{
    if (passes < 1 || passes > PL_MACHINE_PASSES_MAX) return 0;
    double lo = total[0], hi = total[0], t[PL_MACHINE_PASSES_MAX];
    for (int j = 0; j < passes; j++) {
        lo = total[j] < lo ? total[j] : lo, hi = total[j] > hi ? total[j] : hi;
        t[j] = total[j];
    }
    double mid = pl_median(t, passes);
    return mid > 0 ? (hi - lo) / mid : 0;
}

/* Conv time: Σ over nodes of type Conv (the NCHWc ones keep the type) or FusedConv in the
 * optimised profile `on`, less the profiler's time per node; and Σ of the estimates of g's
 * Conv ops under the fit (no ratio: that is what is measured). */
static void conv_sums(const pl_graph *g, const pl_ort_node_time *on, int n_on, const pl_device *d,
                      const pl_cost_params *fit, double profiler_s, double *sum_on, double *sum_est)
{
    for (int i = 0; i < n_on; i++)
        if (!on[i].nested &&
            (!strcmp(on[i].op_type, "Conv") || !strcmp(on[i].op_type, "FusedConv")))
            *sum_on += on[i].mean_s > profiler_s ? on[i].mean_s - profiler_s : 0;
    pl_cost_params p = *fit;
    p.runtime_conv_ratio = 1;
    for (int op = 0; op < g->n_ops; op++)
        if (!strcmp(g->ops[op].type, "Conv")) *sum_est += pl_cost_estimate(&g->ops[op], g, d, &p);
}

double pl_machine_conv_ratio(const pl_graph *const *g, const struct pl_ort_node_time *const *on,
                             const int *n_on, int n, const pl_device *d, const pl_cost_params *fit,
                             double profiler_s)
{
    double sum_on = 0, sum_est = 0;
    for (int k = 0; k < n; k++)
        conv_sums(g[k], on[k], n_on[k], d, fit, profiler_s, &sum_on, &sum_est);
    if (!(sum_on > 0 && sum_est > 0)) return 1;
    double r = sum_on / sum_est;
    return r > PL_CONV_RATIO_MAX ? PL_CONV_RATIO_MAX : r;
}

static bool has_conv(const pl_graph *g)
{
    for (int op = 0; op < g->n_ops; op++)
        if (!strcmp(g->ops[op].type, "Conv")) return true;
    return false;
}

/* One pass's optimised profiles of the models with a Conv (on[k] NULL for the others), for
 * runtime_conv_ratio. */
static int profile_convs(pl_ort *w, char *const *paths, char (*inflated)[4096], pl_graph *const *g,
                         int n, void (*progress)(const char *step), pl_ort_node_time **on,
                         int *n_on, pl_err *err)
{
    for (int k = 0; k < n; k++) {
        if (!has_conv(g[k])) continue;
        if (progress) progress("Conv kernels as run (optimisation on)");
        if (pl_ort_profile_optimized(w, inflated[k], MACHINE_REPEAT, &on[k], &n_on[k], err) < 0)
            return pl_err_prefix(err, "measuring %s", paths[k]);
    }
    return 0;
}

/* A fit that misses the profiles' total time by more than this factor is no fit: the
 * profiles were disturbed (another program running, the machine swapping). The total, not
 * each model's: the fit weighs ops by their time, so a model of many tiny ops (mobilenet's
 * 15 ms of hard-swish pieces, profiled off) may sit at half its time in a sound fit. */
#define FIT_SANE 1.5

/* -1 with err when the fit's total misses the profiles' by more than FIT_SANE. */
static int check_fit(const pl_calib_result *fit, pl_err *err)
{
    double r = fit->total_ratio;
    if (r > FIT_SANE || r < 1 / FIT_SANE)
        return pl_err_set(err,
                          "the fit prices the measured models at %.2fx their measured time: the "
                          "measurements were disturbed (is another program busy on this "
                          "machine?); nothing cached, run `placer calibrate --machine` when it "
                          "is idle",
                          r);
    return 0;
}

static int save(const pl_calib_result *r, const pl_device *d, const char *path, pl_err *err)
{
    char cpu[256], date[32], dir[4096];
    pl_cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (slash && pl_mkdir_p(dir, err) < 0) return -1;
    char key[512];
    pl_machine_fit_key(d, key, sizeof key);
    json_t *j = pl_calib_json(r, d->model, cpu, date);
    json_object_set_new(j, "fitted_for", json_string(key));
    int rc = pl_json_save(j, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER, err);
    json_decref(j);
    return rc;
}

/* What the passes measured: per pass, each model's profile and (a model with a Conv) its
 * optimised node times. */
typedef struct {
    char inflated[MACHINE_MODELS_MAX][4096]; /* each model's file as run, made once */
    pl_profile *p[MACHINE_PASSES][MACHINE_MODELS_MAX];
    pl_ort_node_time *on[MACHINE_PASSES][MACHINE_MODELS_MAX];
    int n_on[MACHINE_PASSES][MACHINE_MODELS_MAX];
    double total[MACHINE_PASSES]; /* each pass's summed op times over the models */
} passes;

/* Each model inflated once, before the passes: the cache checks an entry's SHA-256 on every
 * use, 1.25 GB read for the six here. Inflating in every pass (and again for the Conv
 * profiles) made the measurement take 22.6-23.3 s here, once 20.1-20.9 s. */
static int inflate_all(char *const *paths, int n, passes *m, pl_err *err)
{
    char cache[4096];
    if (pl_cache_dir("inflated", cache, sizeof cache, err) < 0) return -1;
    for (int k = 0; k < n; k++)
        if (pl_inflate_model(paths[k], cache, m->inflated[k], sizeof m->inflated[k], err) < 0)
            return pl_err_prefix(err, "measuring %s", paths[k]);
    return 0;
}

/* The passes, interleaved: every model once, then every model again, ... */
static int measure(pl_ort *w, char *const *paths, pl_graph *const *g, int n, const pl_device *d,
                   void (*progress)(const char *step), passes *m, pl_err *err)
{
    for (int j = 0; j < MACHINE_PASSES; j++) {
        for (int k = 0; k < n; k++) {
            if (progress) {
                char step[4200];
                snprintf(step, sizeof step, "%s (pass %d of %d)", paths[k], j + 1, MACHINE_PASSES);
                progress(step);
            }
            double sum = 0;
            if (!(m->p[j][k] = profile_one(w, m->inflated[k], g[k], d->model, &sum, err)))
                return pl_err_prefix(err, "measuring %s", paths[k]);
            m->total[j] += sum;
        }
        if (profile_convs(w, paths, m->inflated, g, n, progress, m->on[j], m->n_on[j], err) < 0)
            return -1;
    }
    return 0;
}

/* The fit to each op's median over the passes, and the median of the passes' Conv ratios. */
static int fit_passes(pl_graph *const *g, int n, const pl_device *d, passes *m, pl_calib_result *r,
                      pl_err *err)
{
    pl_profile *med[MACHINE_MODELS_MAX];
    for (int k = 0; k < n; k++) {
        pl_profile *each[MACHINE_PASSES];
        for (int j = 0; j < MACHINE_PASSES; j++)
            each[j] = m->p[j][k];
        pl_profile_median(each, MACHINE_PASSES); /* into pass 0's */
        med[k] = m->p[0][k];
    }
    if (pl_calib_fit((const pl_graph *const *)g, (const pl_profile *const *)med, n, d, NULL, r,
                     err) < 0 ||
        check_fit(r, err) < 0)
        return -1;
    double ratio[MACHINE_PASSES];
    for (int j = 0; j < MACHINE_PASSES; j++)
        ratio[j] = pl_machine_conv_ratio((const pl_graph *const *)g,
                                         (const pl_ort_node_time *const *)m->on[j], m->n_on[j], n,
                                         d, &r->params, r->profiler_s);
    r->params.runtime_conv_ratio = pl_median(ratio, MACHINE_PASSES);
    r->passes = MACHINE_PASSES;
    r->pass_spread = pl_machine_pass_spread(m->total, MACHINE_PASSES);
    return 0;
}

static void passes_free(passes *m, int n)
{
    for (int j = 0; j < MACHINE_PASSES; j++)
        for (int k = 0; k < n; k++) {
            pl_profile_free(m->p[j][k]);
            pl_ort_node_times_free(m->on[j][k], m->n_on[j][k]);
        }
}

int pl_machine_calibrate(const pl_device *d, const char *path, void (*progress)(const char *step),
                         pl_calib_result *r, pl_err *err)
{
    char *paths[MACHINE_MODELS_MAX];
    pl_graph *g[MACHINE_MODELS_MAX] = {0};
    passes *m = pl_calloc(1, sizeof *m);
    int n = model_paths(paths, err), rc = n > 0 ? 0 : -1;
    if (n == 0) pl_err_set(err, "PLACER_CALIBRATION_MODELS names no model");
    for (int k = 0; rc == 0 && k < n; k++)
        if (!(g[k] = pl_graph_load(paths[k], NULL, err)))
            rc = pl_err_prefix(err, "measuring %s", paths[k]);
    if (rc == 0) rc = inflate_all(paths, n, m, err);
    pl_ort *w = rc == 0 ? pl_ort_start(&(pl_ort_opts){0}, err) : NULL;
    if (rc == 0 && !w) rc = -1;
    if (rc == 0) rc = measure(w, paths, g, n, d, progress, m, err);
    if (w) pl_ort_stop(w);
    if (rc == 0) rc = fit_passes(g, n, d, m, r, err);
    if (rc == 0) rc = save(r, d, path, err);
    passes_free(m, n > 0 ? n : 0);
    free(m);
    for (int k = 0; k < (n > 0 ? n : 0); k++) {
        pl_graph_free(g[k]);
        free(paths[k]);
    }
    return rc;
}

int pl_machine_params(const pl_device *d, void (*progress)(const char *step), pl_cost_params *out,
                      char *path, size_t n, pl_err *refused, pl_err *err)
{
    char cpu[256], entry[4096];
    pl_err e = {""};
    if (refused) refused->msg[0] = 0;
    pl_cost_params_default(out);
    pl_cpu_model(cpu, sizeof cpu);
    if (pl_machine_calib_path(cpu, d->model, entry, sizeof entry, &e) < 0)
        return pl_err_set(err, "no calibration: %s", e.msg), 0;
    if (path) snprintf(path, n, "%s", entry);
    int rc = pl_machine_calib_load(entry, cpu, d, out, &e);
    if (rc > 0) return 1;
    if (rc < 0 && refused) *refused = e;
    pl_calib_result r;
    if (pl_machine_calibrate(d, entry, progress, &r, &e) < 0) {
        pl_cost_params_default(out); /* a refused entry may have been read into it */
        return pl_err_set(err, "this machine could not be measured: %s", e.msg), 0;
    }
    *out = r.params;
    snprintf(out->device_model, sizeof out->device_model, "%s", d->model);
    return 2;
}
