/* gpu.c: GPU ops priced as the libraries run them (docs/cost.md, "GPU kernels").
 *
 * The roofline prices a 3x3 convolution by its direct FLOPs, while cuDNN runs it with Winograd
 * at a quarter of the multiplications, and prices a small memory-bound kernel at a bandwidth
 * it never reaches. Here each kernel is priced by what the library does for its shape:
 *
 *  - GEMM (MatMul, Gemm, the implicit GEMM of a Conv): output tiles of the sizes CUTLASS and
 *    cuBLAS use, one tile per SM at a time, so the time is the number of waves of tiles times a
 *    tile's time; a thin matrix pads its tiles or takes small, slower ones, and splits K across
 *    SMs when there are fewer tiles than SMs.
 *  - Conv: the cheapest of the algorithms cuDNN offers for the shape (cudnnFind / benchmark
 *    mode pick the fastest): implicit GEMM always; Winograd F(4x4, 3x3) (36 batched GEMMs and
 *    the transforms' traffic) for 3x3 stride 1 ungrouped; FFT for ungrouped stride-1 kernels of
 *    5 and more in fp32; a depthwise Conv is memory-bound.
 *  - memory-bound ops: bytes at a bandwidth efficiency that grows with the size,
 *    eff_mem · b / (b + mem_half_bytes), times a per-class factor.
 *  - every kernel costs kernel_s (launch and the framework's dispatch); an op that moves
 *    nothing (a view) launches none.
 *
 * An op without shapes (a task graph's) has no kernel to choose: cost.c keeps the roofline. */
#include "cost_internal.h"

#include <math.h>
#include <string.h>

/* Output tiles and their throughput relative to 128x128, as CUTLASS's default threadblock
 * shapes for SIMT and tensor-op GEMMs: smaller tiles reuse each loaded element fewer times.
 * Assumed (docs/cost.md), the fitted eff_gemm scales them all. */
static const struct {
    int m, n;
    double rel;
} tiles[] = {{128, 128, 1.0}, {128, 64, 0.9}, {64, 64, 0.75}, {64, 32, 0.6}, {32, 32, 0.45}};
#define SPLIT_K_MIN 64 /* a split-K chunk is at least this deep (CUTLASS's k-blocks are 8-64) */
#define SPLIT_K_MAX 16
#define GEMV_MAX 8 /* rows (or columns) up to which a product is a GEMV, not tiled */

void pl_gpu_params_default(pl_gpu_params *g)
{
    /* Fitted by `build/bench/bench_gpu bench/gpu-published.json models` (make bench) to the 91
     * published figures marked "fit", rounded to three digits; the band is the worst held-out
     * error of the 25 others (docs/cost.md, "GPU kernels"). GEMMs fit at the bound 1: the tile
     * and wave terms already take what cuBLAS loses. kernel_s fits 0 (5e-26 s): the size
     * term, 4.1 MB to half the bandwidth, is a floor of ~8 us on a small kernel already. */
    *g = (pl_gpu_params){.on = true,
                         .eff_gemm = 1.0,
                         .eff_conv = 0.438,
                         .eff_tensor = 0.616,
                         .eff_winograd = 0.860,
                         .eff_mem = 0.560,
                         .mem_half_bytes = 4.104e6,
                         .kernel_s = 0,
                         .band = 0.585};
}

/* The rate a GEMM-shaped kernel runs at: tensor cores in fp16/bf16 where the device has them
 * (the table's fp16 figure is the tensor-core one: more than twice fp32), at eff_tensor of it
 * times the tile's efficiency, else the CUDA cores at fp32 (or packed fp16) speed. Tensor
 * cores reach a smaller part of their peak than CUDA cores do of theirs: feeding them takes
 * the same loads for 4-8x the arithmetic, and frameworks convert NCHW to their NHWC layout. */
static bool tensor_cores(const pl_device *d, pl_precision prec)
{
    return (prec == PL_PREC_FP16 || prec == PL_PREC_BF16) &&
           d->peak_flops_per_s[prec] > 2.5 * d->peak_flops_per_s[PL_PREC_FP32];
}

static double gemm_peak(const pl_device *d, pl_precision prec, const pl_gpu_params *gp)
{
    if (tensor_cores(d, prec)) return d->peak_flops_per_s[prec] * gp->eff_tensor;
    double p = d->peak_flops_per_s[prec];
    return p > 0 ? p : d->peak_flops_per_s[PL_PREC_FP32];
}

/* The rate of CUDA-core arithmetic (Winograd's and FFT's transforms, elementwise work): packed
 * half2 at twice fp32 in fp16 where the chip has it, never the tensor-core figure. */
static double simt_peak(const pl_device *d, pl_precision prec)
{
    double f32 = d->peak_flops_per_s[PL_PREC_FP32];
    if (prec == PL_PREC_FP16 || prec == PL_PREC_BF16) {
        double p = d->peak_flops_per_s[prec];
        return p > 0 ? fmin(p, 2 * f32) : f32;
    }
    double p = d->peak_flops_per_s[prec]; /* fp32, fp64, int8 */
    return p > 0 ? p : f32;
}

double pl_gpu_gemm_s(double batch, double m, double n, double k, double peak, int sms, double eff)
{
    if (!(batch > 0 && m > 0 && n > 0 && k > 0)) return 0;
    if (!(peak > 0 && eff > 0)) return INFINITY;
    /* a matrix-vector product (one side at most GEMV_MAX): cuBLAS runs a GEMV kernel, no tile
     * is padded, and streaming the matrix (the caller's memory term) decides */
    if (fmin(m, n) <= GEMV_MAX) return 2 * batch * m * n * k / (peak * eff);
    double best = INFINITY, per_sm = sms > 0 ? peak / sms : peak;
    for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++) {
        double count = batch * ceil(m / tiles[i].m) * ceil(n / tiles[i].n);
        /* split-K: when the tiles leave SMs idle, cuBLAS cuts K into chunks computed by more
         * tiles (their partial sums added in a small extra pass, not priced) */
        for (int split = 1; split <= SPLIT_K_MAX; split *= 2) {
            if (split > 1 && (sms <= 0 || k / split < SPLIT_K_MIN)) break;
            /* no SM count known: the tiles spread evenly, no wave is left half empty */
            double waves = sms > 0 ? ceil(count * split / sms) : count * split;
            double tile_s =
                2.0 * tiles[i].m * tiles[i].n * ceil(k / split) / (per_sm * eff * tiles[i].rel);
            best = fmin(best, waves * tile_s);
        }
    }
    return best;
}

/* Per-class factor on the streaming efficiency: a reduction reads its input in more than one
 * pass (statistics, then the normalisation), a data-movement op gathers or scatters with
 * strides. Assumed (docs/cost.md). */
static double class_factor(int cls)
{
    switch (cls) {
    case PL_CLASS_REDUCTION:
        return 0.8;
    case PL_CLASS_DATA_MOVEMENT:
        return 0.9;
    default:
        return 1.0;
    }
}

double pl_gpu_mem_s(double bytes, int cls, const pl_device *d, const pl_gpu_params *gp)
{
    if (!(bytes > 0)) return 0;
    double eff = gp->eff_mem * class_factor(cls) * bytes / (bytes + gp->mem_half_bytes);
    double bw = d->mem_bandwidth_Bps * eff;
    return bw > 0 ? bytes / bw : INFINITY;
}

/* ---- shapes ---- */

static const pl_tensor *tensor_of(const pl_graph *g, int t)
{
    return t >= 0 && t < g->n_tensors ? &g->tensors[t] : NULL;
}

/* A 4-dimensional tensor with every dimension known. */
static bool dims4(const pl_tensor *t, double out[4])
{
    if (!t || t->rank != 4) return false;
    for (int i = 0; i < 4; i++) {
        if (t->dims[i] <= 0) return false;
        out[i] = (double)t->dims[i];
    }
    return true;
}

/* The attribute's first element, or the default: strides and dilations of a Conv are the same
 * on both axes in every model we price, and the second axis does not change the algorithm. */
static double attr_first(const pl_op *op, const char *name, double dflt)
{
    const pl_attr *a = pl_op_attr(op, name);
    return a && a->n > 0 && a->ints ? (double)a->ints[0] : dflt;
}

/* A 2-D Conv's geometry from its tensors (X [N,C,H,W], W [K,C/g,R,S], Y [N,K,P,Q]); the stride
 * from the attribute or, when the op carries none (a training graph's copy), from H / P. */
typedef struct conv_geom {
    double n, c, h, w, k, cg, r, s, p, q, groups, stride, dilation;
} conv_geom;

static bool conv_geometry(const pl_op *op, const pl_graph *g, conv_geom *cv)
{
    double x[4], wt[4], y[4];
    if (op->n_inputs < 2 || op->n_outputs < 1 || !dims4(tensor_of(g, op->inputs[0]), x) ||
        !dims4(tensor_of(g, op->inputs[1]), wt) || !dims4(tensor_of(g, op->outputs[0]), y))
        return false;
    *cv = (conv_geom){.n = x[0],
                      .c = x[1],
                      .h = x[2],
                      .w = x[3],
                      .k = wt[0],
                      .cg = wt[1],
                      .r = wt[2],
                      .s = wt[3],
                      .p = y[2],
                      .q = y[3]};
    cv->groups = cv->cg > 0 ? round(cv->c / cv->cg) : 1;
    cv->stride = attr_first(op, "strides", op->n_attrs ? 1 : round(cv->h / cv->p));
    cv->dilation = attr_first(op, "dilations", 1);
    return cv->groups >= 1;
}

static double next_pow2(double v)
{
    double p = 1;
    while (p < v)
        p *= 2;
    return p;
}

/* Winograd F(4x4, 3x3) as cuDNN's non-fused kernel runs it: the input and the filters
 * transformed to 6x6 tiles, 36 batched GEMMs [tiles x C] x [C x K], the output transform. */
static double winograd_s(const conv_geom *cv, const pl_device *d, pl_precision prec, int sms,
                         const pl_gpu_params *gp, double elem)
{
    double tiles = cv->n * ceil(cv->p / 4) * ceil(cv->q / 4);
    double gemm = pl_gpu_gemm_s(36, tiles, cv->k, cv->c, simt_peak(d, prec), sms, gp->eff_winograd);
    double traffic = elem * (cv->n * cv->c * cv->h * cv->w + 2 * 36 * tiles * cv->c +
                             2 * 36 * tiles * cv->k + cv->n * cv->k * cv->p * cv->q);
    return gemm + pl_gpu_mem_s(traffic, PL_CLASS_ELEMENTWISE, d, gp);
}

/* FFT convolution: inputs, filters and outputs transformed at the padded size (5·n·log2 n
 * flops per transform of n points, real-to-complex halves it), a complex product summed over
 * C for each frequency (a batched complex GEMM, 4 real products each), and the transformed
 * tensors written and read once. */
static double fft_s(const conv_geom *cv, const pl_device *d, int sms, const pl_gpu_params *gp)
{
    double hf = next_pow2(cv->h + cv->r - 1), wf = next_pow2(cv->w + cv->s - 1);
    double freq = hf * (wf / 2 + 1), planes = cv->n * cv->c + cv->k * cv->c + cv->n * cv->k;
    double rate = d->peak_flops_per_s[PL_PREC_FP32];
    double transforms = planes * 2.5 * hf * wf * log2(hf * wf) / (rate * gp->eff_winograd);
    double product = 4 * pl_gpu_gemm_s(freq, cv->n, cv->k, cv->c, rate, sms, gp->eff_conv);
    return transforms + product + pl_gpu_mem_s(2 * 8 * freq * planes, PL_CLASS_ELEMENTWISE, d, gp);
}

/* The compute time of a Conv by the algorithm cuDNN would pick; *algo names it. */
static double conv_s(const pl_op *op, const conv_geom *cv, const pl_device *d, pl_precision prec,
                     int sms, const pl_gpu_params *gp, const char **algo)
{
    double elem = prec == PL_PREC_FP16 || prec == PL_PREC_BF16 ? 2 : 4;
    if (cv->groups > 1 && cv->cg == 1) { /* depthwise: a stencil per channel, memory-bound */
        *algo = "depthwise";
        return op->flops / (simt_peak(d, prec) * gp->eff_conv);
    }
    *algo = "implicit-gemm";
    double best = pl_gpu_gemm_s(cv->groups, cv->n * cv->p * cv->q, cv->k / cv->groups,
                                cv->cg * cv->r * cv->s, gemm_peak(d, prec, gp), sms, gp->eff_conv);
    bool unit = cv->stride == 1 && cv->dilation == 1 && cv->groups == 1;
    if (unit && cv->r == 3 && cv->s == 3) {
        double t = winograd_s(cv, d, prec, sms, gp, elem);
        if (t < best) best = t, *algo = "winograd";
    }
    if (unit && (cv->r >= 5 || cv->s >= 5) && elem == 4) {
        double t = fft_s(cv, d, sms, gp);
        if (t < best) best = t, *algo = "fft";
    }
    return best;
}

/* A GEMM's shape from its output and FLOPs: the output's last two dimensions are M x N (a
 * vector: 1 x N), the others a batch, and K = flops / (2 · elements). Transposed operands and
 * broadcasts change none of these. When the second operand is a matrix (a weight, rank 2 or
 * less), the batch folds into M: cuBLAS runs [B, S, K] x [K, N] as one [B·S, K] x [K, N]. */
static bool gemm_shape(const pl_op *op, const pl_graph *g, double *b, double *m, double *n,
                       double *k)
{
    const pl_tensor *y = op->n_outputs > 0 ? tensor_of(g, op->outputs[0]) : NULL;
    if (!y || y->rank < 1 || !(op->flops > 0)) return false;
    double numel = 1;
    for (int i = 0; i < y->rank; i++) {
        if (y->dims[i] <= 0) return false;
        numel *= (double)y->dims[i];
    }
    *n = (double)y->dims[y->rank - 1];
    *m = y->rank >= 2 ? (double)y->dims[y->rank - 2] : 1;
    *b = numel / (*m * *n);
    const pl_tensor *w = op->n_inputs > 1 ? tensor_of(g, op->inputs[1]) : NULL;
    if (w && w->rank >= 1 && w->rank <= 2) *m *= *b, *b = 1;
    *k = op->flops / (2 * numel);
    return *k >= 1;
}

/* Compute time of the op's main kernel, without the launch and the memory term. */
static double compute_s(const pl_op *op, const pl_graph *g, const pl_device *d, pl_precision prec,
                        int sms, const pl_gpu_params *gp, const char **algo)
{
    *algo = "simt";
    if (!(op->flops > 0)) return 0;
    conv_geom cv;
    if (!strcmp(op->type, "Conv") && conv_geometry(op, g, &cv))
        return conv_s(op, &cv, d, prec, sms, gp, algo);
    double b, m, n, k;
    if ((!strcmp(op->type, "MatMul") || !strcmp(op->type, "Gemm")) &&
        gemm_shape(op, g, &b, &m, &n, &k)) {
        *algo = "gemm";
        return pl_gpu_gemm_s(b, m, n, k, gemm_peak(d, prec, gp), sms, gp->eff_gemm);
    }
    if (op->cls == PL_CLASS_DENSE) { /* RNNs, Einsum, ConvTranspose: as a large GEMM */
        *algo = "dense";
        return op->flops / (gemm_peak(d, prec, gp) * gp->eff_gemm);
    }
    return op->flops / (simt_peak(d, prec) * gp->eff_gemm);
}

/* Any output with a known, non-empty shape, or a kernel_of that names a shaped op: what the
 * kernel rules need. */
bool pl_gpu_has_shapes(const pl_op *op, const pl_graph *g)
{
    if (op->kernel_of >= 0) return true;
    for (int i = 0; i < op->n_outputs; i++) {
        const pl_tensor *t = tensor_of(g, op->outputs[i]);
        if (t && !(t->flags & PL_TENSOR_BYTES_ONLY) && t->rank > 0 && pl_tensor_numel(t) > 0)
            return true;
    }
    return false;
}

/* The compute time of op's kernel: the op it names by kernel_of (a backward op's forward op,
 * a compiled replica's training-graph op, which may name its forward op in turn) at this op's
 * FLOPs, else its own kernel. */
static double kernel_compute_s(const pl_op *op, const pl_graph *g, const pl_device *d, int sms,
                               const pl_gpu_params *gp, const char **algo, int depth)
{
    const pl_graph *kg = g->kernel_graph ? g->kernel_graph : g;
    const pl_op *f =
        op->kernel_of >= 0 && op->kernel_of < kg->n_ops ? &kg->ops[op->kernel_of] : NULL;
    if (f && f != op && f->flops > 0 && depth < 4)
        return kernel_compute_s(f, kg, d, sms, gp, algo, depth + 1) * op->flops / f->flops;
    *algo = "simt";
    return compute_s(op, g, d, pl_cost_op_precision(op, g), sms, gp, algo);
}

double pl_gpu_op_s(const pl_op *op, const pl_graph *g, const pl_device *d, int sms,
                   const pl_gpu_params *gp, const char **algo)
{
    const char *scratch;
    if (!algo) algo = &scratch;
    *algo = "none";
    /* a Constant is a weight, materialised at load time; a view (no FLOPs, no bytes) launches
     * no kernel, but the runtime still runs the node: the device's launch overhead, as the
     * roofline prices it */
    if (!strcmp(op->type, "Constant")) return 0;
    if (!(op->flops > 0) && !(op->bytes_moved > 0)) return d->launch_overhead_s;
    double tc = op->flops > 0 ? kernel_compute_s(op, g, d, sms, gp, algo, 0) : 0;
    return gp->kernel_s + fmax(tc, pl_gpu_mem_s(op->bytes_moved, op->cls, d, gp));
}

double pl_gpu_member_s(const pl_op *op, const pl_graph *g, const pl_device *d,
                       const pl_gpu_params *gp, double bytes)
{
    pl_precision prec = pl_cost_op_precision(op, g);
    double tc = op->flops > 0 ? op->flops / (simt_peak(d, prec) * gp->eff_gemm) : 0;
    return fmax(tc, pl_gpu_mem_s(bytes, op->cls, d, gp));
}
