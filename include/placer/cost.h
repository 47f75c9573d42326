/* cost.h: how long an op takes on a device, and a tensor between two devices (design.md §5).
 *
 *   t(op, dev) = launch_overhead_s + max(flops / (peak_flops_per_s[prec] · eff_compute[class]),
 *                                        bytes_moved / (mem_bandwidth_Bps · eff_memory))
 *
 * A given time replaces the estimate, first match wins: the op's own times from a task graph
 * (matched on device model, then device name), then a measured profile for the device's
 * model. A time of INFINITY means the op cannot run on that device. An estimated op that the
 * runtime fuses into an earlier op's kernel costs only its share of that kernel
 * (pl_cost_params.runtime_fusion; docs/cost.md, "Runtime fusion"). Everything is computed
 * once into an n_ops × n_devs table, so algorithms and the simulator read it in O(1).
 *
 * Ownership and failure: pl_cost_new, pl_cost_new_placed and the profile readers return what
 * the caller frees with the matching _free (NULL on failure, err set); a cost table borrows its
 * graph and cluster, which must outlive it. pl_cost_params_load fills *p: after -1 it holds
 * the defaults with part of the file, fit for nothing. */
#ifndef PLACER_COST_H
#define PLACER_COST_H

#include "placer/cluster.h"
#include "placer/graph.h"

#include <math.h>

/* Which runtime's fusions the table prices (docs/cost.md, "Runtime fusion"). */
typedef enum pl_runtime_fusion {
    PL_FUSION_NONE = 0, /* every op its own kernel: the graph as written */
    PL_FUSION_ORT = 1,  /* onnxruntime's, graph optimisation on (the default) */
} pl_runtime_fusion;

/* GPU kernels (docs/cost.md, "GPU kernels"): on a GPU, an op whose tensors have shapes is
 * priced as cuDNN and cuBLAS run it, not by the roofline:
 *   t = kernel_s + max(compute, bytes_moved / (bandwidth · eff_mem · f_class · b / (b +
 * mem_half_bytes))) with compute by the op's kernel: a GEMM (MatMul, Gemm, a Conv's implicit GEMM)
 * as waves of output tiles over the SMs at eff_gemm of the peak (tensor cores in fp16/bf16); a 3x3
 * stride-1 Conv by Winograd F(4x4,3x3) at eff_winograd when that is cheaper, a stride-1 Conv of 5x5
 * and more by FFT when cheaper (fp32), a depthwise Conv memory-bound; other ops at eff_gemm of the
 * CUDA-core rate. An op that moves nothing launches no kernel (0). A backward op whose
 * pl_op.kernel_of names its forward op runs the forward op's algorithm at its own FLOPs.
 * Ops without shapes (task graphs) and non-GPU devices keep the roofline. */
typedef struct pl_gpu_params {
    bool on;               /* false: GPUs get the roofline too */
    double eff_gemm;       /* fraction of the peak a wave of full 128x128 tiles reaches */
    double eff_conv;       /* the same for a Conv's implicit GEMM, FFT products and depthwise
                          stencils (im2col addressing costs what a plain GEMM does not) */
    double eff_tensor;     /* the part of the tensor-core peak (fp16/bf16) a GEMM reaches, times
                             eff_gemm */
    double eff_winograd;   /* the same for Winograd's and FFT's products and transforms */
    double eff_mem;        /* fraction of peak bandwidth a large streaming kernel reaches */
    double mem_half_bytes; /* the size at which a memory-bound kernel reaches half of eff_mem */
    double kernel_s;       /* per kernel: launch and the framework's dispatch */
    /* How far these predictions may be off, relative (pl_cost_op_band): the held-out error of
     * the fit that produced them. */
    double band;
    /* "" : every GPU; else the one device model these were calibrated on (pl_cost_params'
     * gpu_model), matched as profiles are. */
    char device_model[64];
} pl_gpu_params;
/* The built-in fit (docs/cost.md: fitted to published measurements, bench_gpu). */
void pl_gpu_params_default(pl_gpu_params *g);
/* The op has an output of known shape, so the GPU kernel rules can price it. */
bool pl_gpu_has_shapes(const pl_op *op, const pl_graph *g);
/* The op's time on GPU d (sms: its SM count, 0 unknown) by the kernel rules; *algo (may be
 * NULL) names the kernel chosen: "winograd", "implicit-gemm", "fft", "depthwise", "gemm",
 * "dense", "simt" or "none" (a view). */
double pl_gpu_op_s(const pl_op *op, const pl_graph *g, const pl_device *d, int sms,
                   const pl_gpu_params *gp, const char **algo);
/* A memory-bound kernel's time for `bytes` of class cls (no launch). */
double pl_gpu_mem_s(double bytes, int cls, const pl_device *d, const pl_gpu_params *gp);
/* batch GEMMs of m x n x k at `peak` FLOP/s on `sms` SMs, efficiency eff of 128x128 tiles. */
double pl_gpu_gemm_s(double batch, double m, double n, double k, double peak, int sms, double eff);

typedef struct pl_cost_params {
    double eff_compute[PL_CLASS_COUNT]; /* fraction of peak FLOP/s reached, per op class */
    double eff_memory;                  /* fraction of peak memory bandwidth reached */
    /* The device model the efficiencies were fitted on (placer-cost-params/1's device_model);
     * "" for the defaults and for a file that names none. Not used by the cost table: callers
     * check it against their clusters (pl_cost_model_check) before trusting the fit. */
    char device_model[64];
    /* PL_FUSION_ORT (default): an op that onnxruntime fuses into the kernel of an op before
     * it (pl_fusion_match with the built-in rules) costs no launch and no second pass over
     * the intermediate, only its own arithmetic and the inputs the kernel reads in addition;
     * a BatchNormalization folded into its Conv costs 0. PL_FUSION_NONE: the graph as written,
     * op by op. */
    pl_runtime_fusion runtime_fusion;
    /* With PL_FUSION_ORT, a Conv's time is its roofline estimate times this ratio: onnxruntime
     * runs Conv in its blocked NCHWc layout, whose kernels are faster than the ones a profile
     * with optimisation off times and the efficiencies are fitted to. Measured by the machine
     * calibration (docs/calibrate.md); 1 by default (no knowledge), in (0, PL_CONV_RATIO_MAX]. */
    double runtime_conv_ratio;
    /* GPU kernel rules: `gpu` for every GPU, `gpu_model` instead for the GPUs of the model it
     * names (calibrated from that model's profiles; device_model "" : none). */
    pl_gpu_params gpu, gpu_model;
    /* How far a CPU estimate may be off, relative (pl_cost_op_band): PL_BAND_DEFAULT unless a
     * calibration says better. */
    double cpu_band;
    /* A dense op's size dependence (roofline only; docs/cost.md, "Dense efficiency by size"):
     * an op whose one GEMM does g FLOPs (pl_cost_terms.gemm_flops) reaches
     * eff_compute[dense] · g / (g + dense_half_flops) of the peak, so dense_half_flops is the
     * size at which a GEMM reaches half of the class's efficiency. 0 (the default): none. In
     * [0, PL_DENSE_HALF_MAX); fitted by the calibration. */
    double dense_half_flops;
    /* The device's figures as this CPU runs them, over what its cluster file says (docs/
     * calibrate.md, "Another CPU"): every compute rate is peak · peak_scale · efficiency and
     * every memory rate bandwidth · mem_scale · eff_memory (pl_cost_rate, pl_cost_mem_rate),
     * the host's shared bandwidth included. 1 by default. The fit raises one above 1 only when
     * the efficiency it scales (dense; memory) is at the bound 1 and the profiles ran faster
     * still: a cluster file that describes another, slower CPU. In [1, PL_SCALE_MAX]. */
    double peak_scale, mem_scale;
} pl_cost_params;
#define PL_CONV_RATIO_MAX 4.0
#define PL_DENSE_HALF_MAX 1e12
#define PL_SCALE_MAX 10.0

/* "none" or "ort" */
const char *pl_runtime_fusion_name(pl_runtime_fusion f);
/* Documented defaults (docs/cost.md). */
void pl_cost_params_default(pl_cost_params *p);
/* Reads placer-cost-params/1 (as `placer calibrate -o` writes it, docs/calibrate.md): the
 * defaults, then what the file gives: eff_compute per class (required)
 * name and eff_memory (required), each in (0, 1]; "gpu", the GPU kernel rules' parameters
 * (pl_gpu_params: "on", the efficiencies in (0, 1], mem_half_bytes, kernel_s, band; with a
 * "device_model" they fill gpu_model, else gpu); cpu_band; its device_model (at most 63 bytes),
 * runtime_fusion ("ort" or "none"), runtime_conv_ratio (in (0, PL_CONV_RATIO_MAX]) and
 * dense_half_flops (in [0, PL_DENSE_HALF_MAX)). */
int pl_cost_params_load(const char *path, pl_cost_params *p, pl_err *err);
/* An efficiency is a fraction of a peak: in (0, 1], never above the peak. */
static inline bool pl_cost_eff_valid(double e)
{
    return e > 0 && e <= 1;
}
/* -1 with err set unless every efficiency is valid (pl_cost_new and pl_cost_params_load
 * call it). */
int pl_cost_params_check(const pl_cost_params *p, pl_err *err);
/* A compute rate: a device's peak `peak` at an efficiency `eff` under p (peak_scale). */
static inline double pl_cost_rate(double peak, double eff, const pl_cost_params *p)
{
    return peak * p->peak_scale * eff;
}
/* A memory rate: a device's (or a host's shared) bandwidth `bw` under p (eff_memory,
 * mem_scale). */
static inline double pl_cost_mem_rate(double bw, const pl_cost_params *p)
{
    return bw * p->mem_scale * p->eff_memory;
}

/* Measured op times for one device model: format placer-profile/1 (docs/cost.md). */
typedef struct pl_profile {
    char *path; /* the file it was read from; NULL when built in memory */
    char *device_model;
    char *model_sha256; /* the model the profile was measured on; "" if not given */
    pl_strmap index;    /* op name → entry */
    char **op_names;
    double *time_s;
    int n;
} pl_profile;

/* The longest time a profile may give one op: an op of an hour is a unit mistake or a broken
 * measurement, not an inference op (docs/cost.md, "Profiles"). */
#define PL_PROFILE_MAX_OP_S 3600.0
/* Reads a profile. Refused, naming the file, the op and the value: a time that is negative,
 * not finite or above PL_PROFILE_MAX_OP_S; and a profile that times no op or gives every op
 * 0 s (no measurement looks like that). A single 0 is accepted: the profiler's resolution is
 * 1 us, so a tiny op measures 0. */
pl_profile *pl_profile_load(const char *path, pl_err *err);
void pl_profile_free(pl_profile *p);
/* Seconds, or -1 when the profile has no entry for the op. */
double pl_profile_lookup(const pl_profile *p, const char *op_name);
/* Profiles of one model measured several times (`placer calibrate --machine`'s passes): p[0]'s
 * time of each op becomes the median of its times in p[0..n) (a profile without the op is left
 * out of its median; ops only the others time are not added). -1 when n is not in
 * 1..PL_PROFILE_MEDIAN_MAX. */
#define PL_PROFILE_MEDIAN_MAX 16
int pl_profile_median(pl_profile *const *p, int n);
/* How many ops of g the profile times: those of tenant `tenant` of a union (each by its name in
 * its own model), or with tenant -1 every op. */
int pl_profile_ops_timed(const pl_profile *p, const pl_graph *g, int tenant);

/* How onnxruntime's node times (pl_ort_profile) matched the ops of placer's graph. */
typedef struct pl_profile_match {
    int n_timed, n_missing; /* ops with a kernel time, ops without one */
    int n_constant;         /* of those without, Constants (materialised at load time) */
    int n_unmatched;        /* top-level nodes that match no op */
    double measured_s;      /* the timed ops' sum */
} pl_profile_match;
/* One node's measured kernel time (runtime.h's pl_ort_profile; here, below runtime, because
 * pl_profile_from_node_times reads it). `name` is the node's name as onnxruntime
 * reports it (the ONNX node name; a node inside a Loop/If/Scan body has its body's name and is
 * not an op of placer's graph), `node_index` its position in its graph's node list. */
typedef struct pl_ort_node_time {
    char *name;
    int node_index;
    char op_type[64];
    double mean_s; /* kernel time per request, mean over the timed requests */
    double count;  /* kernel launches per request (more than 1 inside a loop body) */
    bool nested;   /* ran inside another node's kernel: a node of a Loop/If/Scan body */
} pl_ort_node_time;
/* The profile of graph g on `device_model` from the node times t[0..n) of g's ONNX file
 * (`placer profile`, bench_fidelity): a named node is the op of that name; an unnamed one (the
 * profiler reports an empty name) the op at its position, as placer names it TYPE_k, if the
 * types agree; nodes of Loop/If/Scan bodies are not ops (their time is the control op's).
 * Times of nodes that map to the same op add up. Entries are in op order, model_sha256 is g's
 * file's. `m` (may be NULL) gets the counts. NULL with err set when g's file cannot be read. */
pl_profile *pl_profile_from_node_times(const pl_graph *g, const pl_ort_node_time *t, int n,
                                       const char *device_model, pl_profile_match *m, pl_err *err);
/* Writes p as placer-profile/1 (`description` may be NULL). */
int pl_profile_save(const pl_profile *p, const char *path, const char *description, pl_err *err);

typedef struct pl_cost {
    const pl_graph *g;
    const pl_cluster *c;
    pl_cost_params params;
    int n_ops, n_devs;
    double *op_s;         /* [op * n_devs + dev] */
    unsigned char *given; /* [op * n_devs + dev]: 1 when the time was given, not estimated */
    double *weight_bytes; /* per op: bytes of the weights it reads */
    double *out_bytes;    /* per op: bytes of the tensors it writes (unknown sizes: 0) */
    /* Given transfer times, [tensor * n_devs * n_devs + a * n_devs + b] seconds (or the
     * instance's own time unit), from the graph's pl_xfer_time entries (task graphs, MOIRAI
     * instances); a negative cell means none was given, so bytes and links time it. NULL
     * when the graph gives none. */
    double *pair_xfer_s;
    /* Runtime fusion (params.runtime_fusion; NULL when no op is fused). For an op fused into
     * an earlier op's kernel, fused_root[op] is that kernel's first op and fused_prev[op] the
     * member whose result it takes (its latest producer in the kernel); -1 for other ops.
     * op_s holds the fused price, which holds only when op runs on the device of both;
     * unfused_s the op's price as a kernel of its own (pl_cost_op_placed_s). */
    int *fused_root, *fused_prev;
    double *unfused_s; /* [op * n_devs + dev] */
    /* [op * n_devs + dev]: where the cell's time comes from (pl_cost_basis), for its band */
    unsigned char *basis;
} pl_cost;

/* ---- how far a prediction may be off (docs/cost.md, "Uncertainty") ----
 * Every time in the table comes from one basis, and each basis carries a relative band b: the
 * time t stands for a truth within [t / (1 + b), t · (1 + b)] as far as the figures it was
 * checked on go. A time the graph gives is the user's own figure (band 0); a profiled one
 * PL_BAND_PROFILED; a GPU kernel estimate its fit's held-out error (pl_gpu_params.band); a CPU
 * estimate pl_cost_params.cpu_band (calibrated: the fidelity bound); anything else, the
 * uncalibrated roofline, PL_BAND_DEFAULT ("up to 2x off"). */
typedef enum {
    PL_BASIS_GIVEN,     /* the graph's own time */
    PL_BASIS_PROFILED,  /* a measured profile */
    PL_BASIS_GPU_FIT,   /* GPU kernel rules, fitted to published measurements */
    PL_BASIS_GPU_MODEL, /* GPU kernel rules calibrated on this GPU model's profiles */
    PL_BASIS_CPU,       /* the roofline on a CPU, at pl_cost_params.cpu_band */
    PL_BASIS_DEFAULT,   /* the roofline with default efficiencies */
    PL_BASIS_COUNT
} pl_cost_basis;
const char *pl_cost_basis_name(pl_cost_basis b); /* "given", "profiled", "gpu-fit", ... */
#define PL_BAND_PROFILED 0.10
#define PL_BAND_CALIBRATED 0.25
#define PL_BAND_DEFAULT 1.0
/* The cell's band (0 for a weights-only op, which costs nothing). */
double pl_cost_op_band(const pl_cost *k, int op, int dev);
/* A placement's band: the widest band of the ops it runs (dev_of[op] for every op; an op at
 * -1 is skipped); a sum of times each within b of the truth is within b. *basis (may be NULL)
 * gets the basis of the widest. */
double pl_cost_plan_band(const pl_cost *k, const int *dev_of, pl_cost_basis *basis);

/* Builds the table. `profiles` may be NULL. Fails when a profile names the wrong model file
 * (model_sha256), a device model that no device of c has (pl_cost_model_check), or times no op
 * of g: such a profile would otherwise be ignored in silence. A tenant of a union takes, per
 * device, the first profile measured on its file (model_sha256), else the first naming no
 * model that times one of its ops. Fails for a graph without ops (nothing to place). */
pl_cost *pl_cost_new(const pl_graph *g, const pl_cluster *c, const pl_cost_params *params,
                     const pl_profile *const *profiles, int n_profiles, pl_err *err);
/* The same table priced only where a placement puts each op (dev_of[op]; every other cell
 * INFINITY), for a graph simulated once under that placement: a compiled training iteration
 * has 10^4-10^5 ops on tens of devices, and pricing every cell would dominate (train.h). */
pl_cost *pl_cost_new_placed(const pl_graph *g, const pl_cluster *c, const pl_cost_params *params,
                            const int *dev_of, pl_err *err);
void pl_cost_free(pl_cost *k);

/* The sum of the estimates of ops [from, to) of g on device d: on one device the simulator
 * runs one op at a time, so with runtime fusion off (p->runtime_fusion PL_FUSION_NONE) this is
 * its makespan; the GPU fit evaluates it thousands of times without building a table. */
double pl_cost_sum_s(const pl_graph *g, int from, int to, const pl_device *d,
                     const pl_cost_params *p);

/* The roofline estimate alone (no given time). */
double pl_cost_estimate(const pl_op *op, const pl_graph *g, const pl_device *d,
                        const pl_cost_params *p);

/* What the estimate of an op on a device is made of, apart from the efficiencies: the
 * calibration fit (calib.c) evaluates it thousands of times per sample with only the
 * efficiencies changing, so it takes these once. A weights-only op (a Constant) has launch,
 * FLOPs and bytes 0, which the formula turns into exactly 0. */
typedef struct pl_cost_terms {
    int cls;                 /* the op class whose compute efficiency applies */
    double launch_s;         /* the device's launch overhead */
    double flops, peak;      /* the op's FLOPs, the device's peak for its precision */
    double bytes, bandwidth; /* bytes moved, the device's memory bandwidth (B/s) */
    /* The FLOPs of one GEMM the op's kernel runs, untiled: a MatMul's per matrix of its batch
     * (an attention's 12 heads are 12 GEMMs), a Gemm's and a Conv's whole (a grouped Conv runs
     * its groups as one kernel); 0 for other ops and unknown shapes: no size dependence. */
    double gemm_flops;
    /* A Gemm's C, as onnxruntime runs MatMul + Add (MatMulAddFusion: one kernel either way):
     * priced apart as the Add fused into a MatMul is (docs/cost.md, "Runtime fusion"), one
     * element-wise FLOP per output element and C's bytes, no launch; `bytes` then leaves C
     * out. 0 for every other op. */
    double bias_flops, bias_bytes;
    /* What the op reads again of a tensor it read already (pl_op.bytes_reread), where the
     * device serves it from a cache: at reread_bw, the device's reread_Bps, or its
     * mem_bandwidth_Bps when the tensor fits its private cache. A kernel's own rate, measured
     * so: mem_scale applies, eff_memory does not. `bytes` then leaves them out. 0 on devices
     * without reread_Bps, and for every other op. */
    double reread_bytes, reread_bw;
} pl_cost_terms;
void pl_cost_terms_of(const pl_op *op, const pl_graph *g, const pl_device *d, pl_cost_terms *t);

/* The compute efficiency of the terms' op under p: its class's, times g / (g + half) for a
 * dense op of g GEMM FLOPs when p->dense_half_flops > 0. */
static inline double pl_cost_terms_eff(const pl_cost_terms *t, const pl_cost_params *p)
{
    double e = p->eff_compute[t->cls], g = t->gemm_flops, h = p->dense_half_flops;
    return t->cls == PL_CLASS_DENSE && g > 0 && h > 0 ? e * (g / (g + h)) : e;
}

/* The roofline of `flops` at `rate` and `bytes` at `bw`: the slower of the two. A device
 * without the figure cannot do that kind of work at all: INFINITY, never 0. */
static inline double pl_cost_roofline_s(double flops, double rate, double bytes, double bw)
{
    double tc = flops > 0 ? (rate > 0 ? flops / rate : INFINITY) : 0;
    double tm = bytes > 0 ? (bw > 0 ? bytes / bw : INFINITY) : 0;
    return fmax(tc, tm);
}

/* pl_cost_estimate from the terms: the same operations, so the same bits. The op's roofline,
 * then a Gemm's C as the Add fused into it would cost (element-wise, no launch). */
static inline double pl_cost_terms_s(const pl_cost_terms *t, const pl_cost_params *p)
{
    double bw = pl_cost_mem_rate(t->bandwidth, p);
    double rate = pl_cost_rate(t->peak, pl_cost_terms_eff(t, p), p);
    double s = t->launch_s;
    if (t->reread_bytes > 0) /* the two reads one after the other, beside the compute */
        s += fmax(pl_cost_roofline_s(t->flops, rate, 0, 0),
                  pl_cost_roofline_s(0, 0, t->bytes, bw) +
                      pl_cost_roofline_s(0, 0, t->reread_bytes, t->reread_bw * p->mem_scale));
    else
        s += pl_cost_roofline_s(t->flops, rate, t->bytes, bw);
    if (t->bias_flops > 0 || t->bias_bytes > 0)
        s += pl_cost_roofline_s(t->bias_flops,
                                pl_cost_rate(t->peak, p->eff_compute[PL_CLASS_ELEMENTWISE], p),
                                t->bias_bytes, bw);
    return s;
}

/* A profile's or a given time's device model applies to device d: its model ignoring case,
 * or the same built-in spec ("V100" and "V100-SXM2-16GB"). */
bool pl_cost_model_matches(const char *model, const pl_device *d);
/* How many devices of c `model` applies to (pl_cost_model_matches). */
int pl_cost_model_count(const char *model, const pl_cluster *c);
/* 0 when `model` applies to at least one device of the clusters c[0..n_c), else -1 with err
 * "WHAT: device model 'M' matches no device of cluster C (its device models: a, b)" (several
 * clusters: "of any of the N clusters (their device models: ...)"); `what` names the file. */
int pl_cost_model_check(const char *what, const char *model, const pl_cluster *const *c, int n_c,
                        pl_err *err);

static inline double pl_cost_op_s(const pl_cost *k, int op, int dev)
{
    return k->op_s[(size_t)op * k->n_devs + dev];
}

/* The op's time in a placement (dev_of[op] for every op): its table time, except that an op
 * fused into a kernel (fused_root) runs as a kernel of its own, at its unfused price, when
 * that kernel's first op or the member it takes its input from is on another device: the
 * runtime on each device fuses only what it holds (docs/cost.md, "Runtime fusion"). */
static inline double pl_cost_op_placed_s(const pl_cost *k, int op, const int *dev_of)
{
    int d = dev_of[op];
    if (k->fused_root && k->fused_root[op] >= 0 &&
        (dev_of[k->fused_root[op]] != d || dev_of[k->fused_prev[op]] != d))
        return k->unfused_s[(size_t)op * k->n_devs + d];
    return pl_cost_op_s(k, op, d);
}

/* Seconds to send `tensor` from device a to b (0 when a == b; an unknown size counts 0): the
 * time the graph gives for the pair, else the route's time for the tensor's bytes. */
static inline double pl_cost_xfer_s(const pl_cost *k, int tensor, int a, int b)
{
    if (a == b) return 0;
    if (k->pair_xfer_s) {
        double s = k->pair_xfer_s[((size_t)tensor * k->n_devs + a) * k->n_devs + b];
        if (s >= 0) return s;
    }
    int64_t bytes = k->g->tensors[tensor].bytes;
    return pl_cluster_xfer_s(k->c, a, b, bytes > 0 ? (double)bytes : 0);
}

#endif
