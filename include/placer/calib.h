/* calib.h: fitting the cost model's efficiencies (pl_cost_params) to measured profiles
 * (docs/calibrate.md). The roofline estimate of every op that a profile times is compared
 * with the measurement on log time, each op's squared error weighted by its measured time,
 * and each efficiency is chosen by a coordinate search over a log-spaced grid in [0.01, 1].
 * Launch overhead and peaks are the device's, not fitted.
 *
 * Ownership and failure: pl_calib_result and pl_cost_params hold no pointers (nothing to
 * free); after a failure the *r or *p a function fills is unspecified, except where it says
 * otherwise (pl_machine_params: the defaults). A cached entry is written through pl_out. */
#ifndef PLACER_CALIB_H
#define PLACER_CALIB_H

#include "placer/cost.h"

typedef struct pl_calib_result {
    pl_cost_params params;              /* fitted (classes without samples: as started) */
    int n_samples;                      /* ops with a measured time, Constants excluded */
    int class_samples[PL_CLASS_COUNT];  /* of them, per class */
    double median_before, worst_before; /* relative error |est - meas| / meas, start params */
    double median_after, worst_after;   /* the same with the fitted ones */
    /* The profiler's own time per node, fitted beside the efficiencies (0 to 20 us): a
     * profile times each node with the profiler's bookkeeping in it, which a run without the
     * profiler does not pay, so it is not part of the cost model (docs/calibrate.md). */
    double profiler_s;
    /* Σ of the fitted estimates (profiler time included) over Σ of the measured times: near 1
     * for a sound fit; far from it when the profiles were disturbed (pl_machine_calibrate). */
    double total_ratio;
    /* "" when params.dense_half_flops was fitted; else why it was not (too few dense samples
     * of known GEMM size, sizes spanning under two decades, or a best value the data do not
     * bound), and it is the start's. */
    char dense_half_why[160];
    /* pl_machine_calibrate's passes over its models (0 for a fit to given profiles), and how
     * far the machine's speed moved between them: (largest − smallest) / median of each
     * pass's summed op times over all the models (pl_machine_pass_spread). */
    int passes;
    double pass_spread;
} pl_calib_result;

/* Fits to profiles[k] measured on graphs[k] (k < n), estimating on device `d` (the device the
 * profiles were measured on). `start` NULL: the defaults. -1 with err set when a profile is
 * for another device model than d's (pl_cost_model_matches) or no profile times any op of
 * its graph. The median error is pl_median's (the mean of the middle two of an even count).
 * The efficiencies stay in (0, 1]; where the dense one or eff_memory ends at 1 and a larger
 * rate fits better, the device's figure is scaled instead (params.peak_scale, mem_scale >
 * 1): profiles from a CPU faster than d describes. */
int pl_calib_fit(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                 const pl_device *d, const pl_cost_params *start, pl_calib_result *r, pl_err *err);
/* When p scales device d's figures (peak_scale or mem_scale above 1), what that says, into
 * out: "the profiles fitted need dense ops at 1.26x cpu0's fp32 peak (110 GFLOP/s), ..." with the
 * consequence and the remedy; returns 1. 0 (out "") when p scales nothing. */
int pl_calib_scale_note(const pl_cost_params *p, const pl_device *d, char *out, size_t n);
/* pl_calib_fit fits the roofline: on a GPU device its result has the kernel rules off
 * (params.gpu.on false). A GPU's profiles fit the kernel rules instead: pl_calib_fit_gpu
 * leaves r->params the defaults but for gpu_model, whose efficiencies, mem_half_bytes and
 * kernel_s it chooses by Nelder-Mead (from the built-in fit) to minimise
 * Σ measured · (log estimate − log measured)² over the ops the profiles time that launch a
 * kernel; gpu_model.device_model becomes d's model and its band the largest
 * max(Σ est / Σ meas, Σ meas / Σ est) − 1 over the profiled models, at least
 * PL_BAND_PROFILED. r's statistics are over those ops (errors before: the built-in fit's;
 * profiler_s 0). -1 with err set when d is no GPU, a profile is for another device model, or
 * no profile times such an op. */
int pl_calib_fit_gpu(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                     const pl_device *d, pl_calib_result *r, pl_err *err);
/* What the fit minimises, at `p` and a profiler time per node `profiler_s`: Σ measured ·
 * (log (estimate + profiler_s) − log measured)² over the same ops; -1 with err set where
 * pl_calib_fit fails. */
double pl_calib_loss(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                     const pl_device *d, const pl_cost_params *p, double profiler_s, pl_err *err);

/* ---- published GPU timings (bench/gpu-published.json; docs/cost.md, "GPU kernels") ----
 * Format placer-gpu-published/1: "sources" (each with an id, url, date and software) and
 * "figures", each a whole network's time per batch on one GPU of placer's table, naming its
 * source (refused without one), its network (a model file NETWORK.onnx), its mode, batch,
 * precision, "ms", its set ("fit" or "held-out"), a quote of the published row, and optionally
 * "math": "tf32" (fp32 GEMMs on TF32 tensor cores) and "host_bound": true (the host loop set
 * the time, not the GPU: reported, never fitted or counted in the errors). */
typedef enum { PL_PUB_FORWARD, PL_PUB_TRAINING } pl_pub_mode;
typedef struct pl_pub_figure {
    char source[64], gpu[64], network[64], quote[512];
    pl_pub_mode mode;
    int batch;
    pl_precision precision; /* PL_PREC_FP32 or PL_PREC_FP16 */
    bool tf32, held_out, host_bound;
    bool fused; /* its source's framework fused elementwise ops (the source's "fusion": "xla") */
    int src;    /* its source's index */
    double s;   /* published seconds per batch */
} pl_pub_figure;
typedef struct pl_published {
    pl_pub_figure *fig;
    int n;
    char (*source_ids)[64];
    bool *source_fused;
    /* Per source: its framework's host time per kernel launched (0 until pl_pub_fit sets it):
     * a network's time is at least its kernels times this, however fast the GPU. */
    double *source_host_s;
    int n_sources;
} pl_published;
/* Reads the file; -1 with err set ("FILE: figures[3]: ...") on any figure without a source,
 * with an unknown source id, GPU, mode, precision or set, a batch outside 1..2^20 or a time
 * outside (0, 1 h). *p is the caller's (pl_published_free); zeroed on failure. */
int pl_published_load(const char *path, pl_published *p, pl_err *err);
/* The same from memory; `name` stands for the file in messages (the fuzzer's entry). */
int pl_published_load_buffer(const char *buf, size_t len, const char *name, pl_published *p,
                             pl_err *err);
void pl_published_free(pl_published *p);

/* Predictions of the figures: each network's training graph at the figure's batch (plain SGD),
 * in its precision, priced on the figure's GPU with runtime fusion off and summed: the forward
 * ops for "forward", every op for "training". Borrows p. NULL with err set when a model cannot
 * be read or trained ("figure K (NETWORK on GPU): ..."). */
typedef struct pl_pub_eval pl_pub_eval;
pl_pub_eval *pl_pub_eval_new(const pl_published *p, const char *models_dir, pl_err *err);
void pl_pub_eval_free(pl_pub_eval *e);
/* Figure fig's predicted GPU seconds under GPU parameters gp (gp->on false: the roofline). */
double pl_pub_predict_s(const pl_pub_eval *e, int fig, const pl_gpu_params *gp);
/* The kernels figure fig's range launches (ops priced above 0, fused members not counted). */
int pl_pub_kernels(const pl_pub_eval *e, int fig);
/* The figure's predicted time: the GPU's, or its kernels times its source's host time per
 * kernel when that is longer (the framework cannot launch them faster). */
double pl_pub_total_s(const pl_pub_eval *e, int fig, const pl_gpu_params *gp);

/* The fit: eff_gemm, eff_tensor, eff_winograd, eff_mem, mem_half_bytes, kernel_s and each
 * source's host time per kernel (p->source_host_s) chosen by Nelder-Mead to minimise the mean
 * squared log ratio (pl_pub_total_s / published) over the figures of the fit set not marked
 * host-bound, from three fixed starts (efficiencies 0.6, eff_tensor 0.5, eff_mem 0.7; 10 us and 256
 * kB, 1 us and 4 MB, 30 us and 1 kB), the best kept; gp->band becomes the held-out error: the
 * largest max(pred/pub, pub/pred) - 1 over the held-out figures not marked host-bound whose GPU
 * time is the prediction (the fit set's when none is held out). */
typedef struct pl_pub_fit_result {
    int n_fit, n_held_out;                /* figures used in each (host-bound ones left out) */
    double rms_log_before, rms_log_after; /* over the fit set */
    double held_median, held_worst;       /* |pred/pub - 1| over the held-out figures */
    double fit_median, fit_worst;         /* the same over the fit set */
} pl_pub_fit_result;
void pl_pub_fit(const pl_pub_eval *e, pl_gpu_params *gp, pl_pub_fit_result *r);

/* ---- Calibrated by default: this machine measured once (docs/calibrate.md) ---- */

/* This machine's CPU model, the "model name" line of /proc/cpuinfo ("unknown CPU" when there is
 * none). */
void pl_cpu_model(char *out, size_t n);
/* The zoo models this machine is measured on (names without ".onnx", NULL-terminated); an
 * install puts them in share/placer/models. */
const char *const *pl_machine_model_names(void);
/* Where the calibration of CPU model `cpu`, fitted for device model `device_model`, is cached:
 * pl_cache_dir("calibration")/CPU__DEVICE.vN.json (N: PL_MACHINE_COST_MODEL), CPU and DEVICE
 * with every character other than a letter, digit, '-' or '.' made '_'. One entry per device model,
 * so that two clusters describing this CPU under different names do not rebuild each other's entry.
 */
int pl_machine_calib_path(const char *cpu, const char *device_model, char *out, size_t n,
                          pl_err *err);
/* The version of what a cached fit holds: a new cost-model term that the fit sees, or a new
 * figure measured with it, makes older entries stale, so the number goes up with each.
 * 2: the Conv time under onnxruntime's optimised layout (runtime_conv_ratio).
 * 3: a CPU GEMM's columns rounded up to the device's gemm_tile_columns.
 * 4: a dense op's efficiency by its GEMM's size (dense_half_flops).
 * 5: the device's figures scaled where this CPU outruns them (peak_scale, mem_scale). */
#define PL_MACHINE_COST_MODEL 5
/* What a cached fit holds for: the cost model's number and the figures of device d that the
 * efficiencies are fractions of ("fitted_for" in the entry), and its reread_Bps when it gives
 * one (the fit sees the re-reads at that rate). */
void pl_machine_fit_key(const pl_device *d, char *out, size_t n);
/* The cached calibration at `path` into *p when it is for CPU model `cpu` and device d. 1
 * when used; 0 when absent (err says so); -1 with err set when it cannot be used: unreadable,
 * corrupt (pl_cost_params_load's checks: format, fields, efficiencies in (0, 1]), with no
 * "cpu_model", for another CPU or device model, or fitted for another cost model or other
 * figures of d (pl_machine_fit_key). */
int pl_machine_calib_load(const char *path, const char *cpu, const pl_device *d, pl_cost_params *p,
                          pl_err *err);
/* The fit as placer-cost-params/1 (a jansson object, to json_decref): device_model, the
 * efficiencies, "gpu" when r->params.gpu_model names a device model (pl_calib_fit_gpu), and
 * the fit's statistics; `cpu` and `measured` (a date) are added when not NULL. */
struct json_t *pl_calib_json(const pl_calib_result *r, const char *device_model, const char *cpu,
                             const char *measured);
struct pl_ort_node_time;
/* runtime_conv_ratio from n models: Σ of the Conv (and FusedConv) node times of their
 * optimised profiles on[k] (pl_ort_profile_optimized), each less the fit's profiler time per
 * node, over Σ of the estimates of their Conv ops under the fitted efficiencies `fit` on
 * device d; 1 when they have no Conv; at most PL_CONV_RATIO_MAX. What the efficiencies were
 * fitted to (Conv kernels profiled with optimisation off, in NCHW) against what runs. */
double pl_machine_conv_ratio(const pl_graph *const *g, const struct pl_ort_node_time *const *on,
                             const int *n_on, int n, const pl_device *d, const pl_cost_params *fit,
                             double profiler_s);
/* (largest − smallest) / median of total[0..passes); 0 when passes is not in
 * 1..PL_MACHINE_PASSES_MAX or the median is not positive. */
#define PL_MACHINE_PASSES_MAX 16
double pl_machine_pass_spread(const double *total, int passes);
/* Measures this machine: profiles a fixed set of zoo models in onnxruntime (mobilenet_v3_large,
 * resnet50, transformer, rnnlm, nmt_seq2seq, bert_base, from placer's own files;
 * $PLACER_CALIBRATION_MODELS, paths separated by ':', replaces the set) in three passes over the
 * set, 5 timed requests each, each op's time the median over the passes (pl_profile_median);
 * fits the efficiencies of device d to those (pl_calib_fit), measures runtime_conv_ratio (the
 * models with a Conv profiled again with optimisation on in each pass, pl_machine_conv_ratio,
 * the median of the passes' ratios) and writes them, with this CPU's model, the date, the passes'
 * spread and pl_machine_fit_key, to `path` (through pl_out). `progress`, when not NULL, is told
 * each step. */
int pl_machine_calibrate(const pl_device *d, const char *path, void (*progress)(const char *step),
                         pl_calib_result *r, pl_err *err);
/* This machine's calibration for device d, as every verb gets it (docs/calibrate.md): the entry
 * cached at pl_machine_calib_path(pl_cpu_model, d->model) when pl_machine_calib_load takes it
 * (1); else measured now with pl_machine_calibrate and cached there (2); an entry that was
 * there but refused (corrupt, another CPU or device model) is so rebuilt, and `refused` (may be
 * NULL) gets why ("" when nothing was refused). 0 with err set when neither works ("no
 * calibration: ..." when the cache has no path, "this machine could not be measured: ..."):
 * *out is then the defaults (pl_cost_params_default). `path` (may be NULL) gets the entry's
 * path, n bytes at most; `progress` as pl_machine_calibrate's. */
int pl_machine_params(const pl_device *d, void (*progress)(const char *step), pl_cost_params *out,
                      char *path, size_t n, pl_err *refused, pl_err *err);

#endif
