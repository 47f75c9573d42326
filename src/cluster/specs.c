/* specs.c: the built-in device table, and the names of precisions and device kinds.
 *
 * Figures come from ../shared/facts/gpus.md ("K": vendor figure as published, not re-checked;
 * "S(site)": confirmed on that page). Conventions, so rows compare:
 *  - memory is the marketed size read as GiB (a "16 GB" V100 shows 16160 MiB in nvidia-smi);
 *    bandwidths are decimal (GB/s = 1e9 B/s).
 *  - peaks are at boost clock; fp16/bf16/int8 are the dense tensor-core figure where the chip
 *    has tensor cores (GeForce cards: the fp32-accumulate rate that frameworks get), the
 *    packed-fp16 rate on P100, and 0 where there is no fast path (the cost model then uses the
 *    fp32 peak). int8 is the vendor-quoted figure, 0 where none is quoted. fp64 is the fp32
 *    peak times the chip's published ratio (1/2 on P100/V100/A100/H100 FP64 units, 1/32 or
 *    1/64 on the others).
 *  - launch overhead is an assumption, not a measurement: 10 us for Kepler/Maxwell/Pascal,
 *    5 us for Volta and later, 1 us for a CPU (a function call into a thread pool).
 *  - CPU rows: cores x 32 fp32 flop/cycle (AVX2, two FMA units; 64 with AVX-512) x base
 *    clock; memory bandwidth is the socket's channels x DDR4 rate (Intel ARK, K); memory is an
 *    assumed host RAM.
 *  - cores and clock_hz (AutoDeep's feature vector): GPU rows give CUDA cores per GPU (per
 *    GK210 die for K80) and the boost clock, so fp32 = 2 x cores x clock; CPU rows give the
 *    socket's physical cores and base clock, as the peak above. All K (vendor data sheets and
 *    Intel ARK, not re-checked). GTX 980 Ti's 5.63 TFLOP/s (facts) is at its 1000 MHz base
 *    clock; its boost, 1075 MHz, is what clock_hz holds.
 *  - sms: streaming multiprocessors per GPU (per die for K80), from the vendor's whitepapers
 *    (K): cores / 192 on Kepler, / 128 on Maxwell, GP10x and GA10x, / 64 on GP100, Volta,
 *    Turing and GA100, / 128 on Hopper; 0 on CPU rows. */
#include "placer/cluster.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define T 1e12
#define G 1e9
#define GiB (1024.0 * 1024.0 * 1024.0)
#define US 1e-6
#define MHZ 1e6

/* Peaks in the order of pl_precision: fp32, fp16, bf16, int8, fp64. */
#define PEAKS(fp32, fp16, bf16, int8, fp64)                                                        \
    {                                                                                              \
        (fp32) * T, (fp16)*T, (bf16)*T, (int8)*T, (fp64)*T                                         \
    }

static const pl_gpu_spec specs[] = {
    {"K80", "Tesla-K80,K80-die,GK210", PL_DEV_GPU, 12 * GiB, PEAKS(4.37, 0, 0, 0, 1.46), 240.6 * G,
     10 * US,
     "one GK210 die of the K80 board (what clouds rent as \"1 GPU\"): 4.37 TFLOP/s fp32 at boost "
     "(K), 12 GB and 240.6 GB/s per die S(cputronic K80 vs P40); fp64 1/3 rate (K)",
     2496, 875 * MHZ, 13},
    {"P100-SXM2-16GB", "P100-SXM2", PL_DEV_GPU, 16 * GiB, PEAKS(10.6, 21.2, 0, 0, 5.3), 732 * G,
     10 * US, "S(sysrqmts P100 SXM2; oreograce blog); fp64 K", 3584, 1480 * MHZ, 56},
    {"P100-PCIE-16GB", "P100,P100-PCIe,P100-16GB,Tesla-P100", PL_DEV_GPU, 16 * GiB,
     PEAKS(9.3, 18.7, 0, 0, 4.7), 732 * G, 10 * US, "K; S(sysrqmts); fp64 K", 3584, 1303 * MHZ, 56},
    {"V100-SXM2-16GB", "V100,V100-16GB,V100-SXM2,Tesla-V100", PL_DEV_GPU, 16 * GiB,
     PEAKS(15.7, 125, 0, 0, 7.8), 900 * G, 5 * US,
     "S(infoq: 15.7 TFLOP/s fp32, 125 tensor; ozyphus: 900 GB/s); fp64 K", 5120, 1530 * MHZ, 80},
    {"V100-SXM2-32GB", "V100-32GB,V100-SXM2-32G", PL_DEV_GPU, 32 * GiB, PEAKS(15.7, 125, 0, 0, 7.8),
     900 * G, 5 * US, "as V100-SXM2-16GB with 32 GB (S infoq; ozyphus)", 5120, 1530 * MHZ, 80},
    {"V100-PCIE-16GB", "V100-PCIe", PL_DEV_GPU, 16 * GiB, PEAKS(14.0, 112, 0, 0, 7.0), 900 * G,
     5 * US, "K", 5120, 1380 * MHZ, 80},
    {"V100-PCIE-32GB", "V100-PCIe-32G", PL_DEV_GPU, 32 * GiB, PEAKS(14.0, 112, 0, 0, 7.0), 900 * G,
     5 * US, "K", 5120, 1380 * MHZ, 80},
    {"T4", "Tesla-T4", PL_DEV_GPU, 16 * GiB, PEAKS(8.1, 65, 0, 130, 0.25), 320 * G, 5 * US,
     "S(hmc-tech, sysrqmts); int8 and fp64 K", 2560, 1590 * MHZ, 40},
    {"P4", "Tesla-P4", PL_DEV_GPU, 8 * GiB, PEAKS(5.5, 0, 0, 22, 0.17), 192 * G, 10 * US,
     "K (not in facts/gpus.md): 5.5 TFLOP/s fp32, 22 TOP/s int8, 8 GB, 192 GB/s", 2560, 1063 * MHZ,
     20},
    {"A10G", "", PL_DEV_GPU, 24 * GiB, PEAKS(31.2, 70, 70, 0, 0.49), 600 * G, 5 * US,
     "K (uncertain: AWS does not publish A10G tensor figures; 70 TFLOP/s fp16 is a guess, int8 "
     "left 0)",
     9216, 1710 * MHZ, 80},
    {"L4", "", PL_DEV_GPU, 24 * GiB, PEAKS(30.3, 121, 121, 242, 0.47), 300 * G, 5 * US,
     "K; 121 TFLOP/s fp16 S(lillytechsystems)", 7424, 2040 * MHZ, 58},
    {"A40", "", PL_DEV_GPU, 48 * GiB, PEAKS(37.4, 149.7, 149.7, 299.3, 0.58), 696 * G, 5 * US,
     "K (not in facts/gpus.md): 37.4 TFLOP/s fp32, 48 GB, 696 GB/s", 10752, 1740 * MHZ, 84},
    {"A100-SXM4-40GB", "A100,A100-40GB,A100-SXM4", PL_DEV_GPU, 40 * GiB,
     PEAKS(19.5, 312, 312, 624, 9.7), 1555 * G, 5 * US, "S(sysrqmts A100 SXM4 40 GB); int8, fp64 K",
     6912, 1410 * MHZ, 108},
    {"A100-SXM4-80GB", "A100-80GB", PL_DEV_GPU, 80 * GiB, PEAKS(19.5, 312, 312, 624, 9.7), 2039 * G,
     5 * US, "K; about 2.0 TB/s S(llmbook, ozyphus)", 6912, 1410 * MHZ, 108},
    {"A100-PCIE-80GB", "A100-PCIe", PL_DEV_GPU, 80 * GiB, PEAKS(19.5, 312, 312, 624, 9.7), 1935 * G,
     5 * US, "K (Azure NC A100 v4 GPU)", 6912, 1410 * MHZ, 108},
    {"H100-SXM5-80GB", "H100,H100-SXM,H100-SXM5", PL_DEV_GPU, 80 * GiB,
     PEAKS(67, 989, 989, 1979, 34), 3350 * G, 5 * US, "S(ozyphus, llmbook); int8, fp64 K", 16896,
     1980 * MHZ, 132},
    {"H100-PCIE-80GB", "H100-PCIe", PL_DEV_GPU, 80 * GiB, PEAKS(51, 756, 756, 1513, 26), 2000 * G,
     5 * US, "K", 14592, 1755 * MHZ, 114},
    {"GTX-980-Ti", "980Ti,GTX980Ti", PL_DEV_GPU, 6 * GiB, PEAKS(5.63, 0, 0, 0, 0.176), 336.5 * G,
     10 * US, "K", 2816, 1075 * MHZ, 22},
    {"GTX-1080", "1080", PL_DEV_GPU, 8 * GiB, PEAKS(8.87, 0, 0, 0, 0.277), 320 * G, 10 * US,
     "S(cputronic / alldbin: 8,873 GFLOPS, 320 GB/s); fp16 is 1:64 on GP104, so frameworks "
     "compute it in fp32 units: 0",
     2560, 1733 * MHZ, 20},
    {"GTX-1080-Ti", "1080Ti", PL_DEV_GPU, 11 * GiB, PEAKS(11.34, 0, 0, 0, 0.354), 484 * G, 10 * US,
     "K (not in facts/gpus.md; NVIDIA GTX 1080 Ti specifications: 3584 CUDA cores, 1582 MHz "
     "boost, 11 GB GDDR5X at 11 Gbps on 352 bits = 484 GB/s); fp32 = 2 x 3584 x 1582 MHz; "
     "fp16 is 1:64 on GP102, so 0 as GTX-1080; fp64 1:32",
     3584, 1582 * MHZ, 28},
    {"RTX-2080-Ti", "2080Ti,RTX2080Ti", PL_DEV_GPU, 11 * GiB, PEAKS(13.4, 53.8, 0, 215.2, 0.42),
     616 * G, 5 * US,
     "K (not in facts/gpus.md): 13.4 TFLOP/s fp32, 11 GB, 616 GB/s; Turing whitepaper tensor "
     "rates at reference clock",
     4352, 1545 * MHZ, 68},
    {"Titan-X-Maxwell", "GTX-Titan-X,Maxwell-Titan-X", PL_DEV_GPU, 12 * GiB,
     PEAKS(6.605, 0, 0, 0, 0.206), 336.5 * G, 10 * US,
     "K (not in facts/gpus.md; NVIDIA specifications as printed by hothardware: 24 SMs, 3072 CUDA "
     "cores, 1075 MHz boost, 12 GB GDDR5, 336.5 GB/s); fp32 = 2 x 3072 x 1075 MHz; fp64 1:32",
     3072, 1075 * MHZ, 24},
    {"Titan-X-Pascal", "Pascal-Titan-X", PL_DEV_GPU, 12 * GiB, PEAKS(10.97, 0, 0, 44, 0.343),
     480 * G, 10 * US,
     "K (not in facts/gpus.md; NVIDIA announcement: 3584 CUDA cores, 1531 MHz boost, 12 GB "
     "GDDR5X, 480 GB/s, 11 TFLOP/s fp32, 44 TOP/s int8); fp32 = 2 x 3584 x 1531 MHz; fp16 is "
     "1:64 on GP102, so 0 as GTX-1080; fp64 1:32",
     3584, 1531 * MHZ, 28},
    {"Titan-Xp", "", PL_DEV_GPU, 12 * GiB, PEAKS(12.15, 0, 0, 0, 0.380), 547.7 * G, 10 * US,
     "K (not in facts/gpus.md; NVIDIA specifications: 30 SMs, 3840 CUDA cores, 1582 MHz boost, "
     "12 GB GDDR5X, 547.7 GB/s); fp32 = 2 x 3840 x 1582 MHz; fp16 is 1:64 on GP102, so 0; fp64 "
     "1:32",
     3840, 1582 * MHZ, 30},
    {"Titan-RTX", "", PL_DEV_GPU, 24 * GiB, PEAKS(16.3, 130, 0, 0, 0.51), 672 * G, 5 * US,
     "K (not in facts/gpus.md; NVIDIA specifications as printed by Tom's Hardware: 4608 CUDA "
     "cores, 576 tensor cores, 1770 MHz boost, 24 GB GDDR6, 672 GB/s, 16.3 TFLOP/s fp32, 130 "
     "tensor TFLOP/s; unlike GeForce Turing, full rate with fp32 accumulate); fp64 1:32",
     4608, 1770 * MHZ, 72},
    {"RTX-3090", "3090,RTX3090", PL_DEV_GPU, 24 * GiB, PEAKS(35.6, 71, 71, 284, 0.556), 936 * G,
     5 * US,
     "K (not in facts/gpus.md; NVIDIA specifications as printed by Tom's Hardware: 82 SMs, 10496 "
     "CUDA cores, 1695 MHz boost, 24 GB GDDR6X, 936 GB/s, 35.6 TFLOP/s fp32, 142 TFLOP/s fp16 "
     "tensor with fp16 accumulate); fp16/bf16 = the fp32-accumulate rate, half of that on "
     "GeForce GA102; int8 = 2 x 142; fp64 1:64",
     10496, 1695 * MHZ, 82},
    {"RTX-4090", "4090,RTX4090", PL_DEV_GPU, 24 * GiB, PEAKS(82.6, 165.2, 165.2, 660.6, 1.29),
     1008 * G, 5 * US,
     "K (not in facts/gpus.md; NVIDIA specifications as printed by Tom's Hardware and waredb: "
     "128 SMs, 16384 CUDA cores, 2520 MHz boost, 24 GB GDDR6X, 1008 GB/s, 82.6 TFLOP/s fp32, "
     "165.2 TFLOP/s dense fp16/bf16 tensor (fp32 accumulate on GeForce), 660.6 TOP/s dense "
     "int8); fp64 1:64",
     16384, 2520 * MHZ, 128},
    {"RTX-3060-Ti", "3060Ti,RTX3060Ti", PL_DEV_GPU, 8 * GiB, PEAKS(16.2, 32.4, 32.4, 129.6, 0.25),
     448 * G, 5 * US, "K (not in facts/gpus.md): 16.2 TFLOP/s fp32, 8 GB, 448 GB/s", 4864,
     1665 * MHZ, 38},
    {"cpu-generic", "cpu,generic-cpu", PL_DEV_CPU, 64 * GiB, PEAKS(0.5, 0, 0, 0, 0.25), 50 * G,
     1 * US,
     "assumption: one 8-core AVX2/FMA socket at ~2 GHz sustained (8 x 32 flop/cycle x 2 GHz = "
     "0.5 TFLOP/s fp32), dual-channel DDR4-3200 (51.2 GB/s), 64 GiB RAM",
     8, 2000 * MHZ, 0},
    {"Xeon-E5-2690-v4", "E5-2690v4,Xeon-E5-2690v4", PL_DEV_CPU, 128 * GiB,
     PEAKS(1.165, 0, 0, 0, 0.582), 76.8 * G, 1 * US,
     "K (Intel ARK): 14 cores x 2.6 GHz x 32 flop/cycle; 4 x DDR4-2400; RAM assumed", 14,
     2600 * MHZ, 0},
    {"Xeon-E5-2686-v4", "E5-2686v4,Xeon-E5-2686v4", PL_DEV_CPU, 128 * GiB,
     PEAKS(1.325, 0, 0, 0, 0.662), 76.8 * G, 1 * US,
     "K (Intel/AWS, not in facts/gpus.md): the AWS p2/p3 host CPU, 18 cores x 2.3 GHz x 32 "
     "flop/cycle; 4 x DDR4-2400; RAM assumed",
     18, 2300 * MHZ, 0},
    {"Xeon-E5-2690-v3", "E5-2690v3,Xeon-E5-2690v3", PL_DEV_CPU, 128 * GiB,
     PEAKS(0.998, 0, 0, 0, 0.499), 68 * G, 1 * US,
     "K (Intel ARK): 12 cores x 2.6 GHz x 32 flop/cycle; 4 x DDR4-2133; RAM assumed", 12,
     2600 * MHZ, 0},
    {"i9-10900X", "Core-i9-10900X", PL_DEV_CPU, 128 * GiB, PEAKS(2.368, 0, 0, 0, 1.184), 93.9 * G,
     1 * US,
     "K (Intel ARK): 10 cores x 3.7 GHz x 64 flop/cycle (AVX-512, two FMA units); 4 x DDR4-2933; "
     "128 GB RAM as in Talos' testbed",
     10, 3700 * MHZ, 0},
    {"i7-5930K", "Core-i7-5930K", PL_DEV_CPU, 32 * GiB, PEAKS(0.672, 0, 0, 0, 0.336), 68 * G,
     1 * US, "K (Intel ARK): 6 cores x 3.5 GHz x 32 flop/cycle; 4 x DDR4-2133; RAM assumed", 6,
     3500 * MHZ, 0},
    {"i7-6850K", "Core-i7-6850K", PL_DEV_CPU, 32 * GiB, PEAKS(0.691, 0, 0, 0, 0.346), 76.8 * G,
     1 * US, "K (Intel ARK): 6 cores x 3.6 GHz x 32 flop/cycle; 4 x DDR4-2400; RAM assumed", 6,
     3600 * MHZ, 0},
};

const pl_gpu_spec *pl_gpu_specs(int *n)
{
    if (n) *n = (int)(sizeof specs / sizeof specs[0]);
    return specs;
}

/* Compares up to `len` bytes of `b` with all of `a`, ignoring case and the separators ' ',
 * '-' and '_', so "V100 SXM2 16GB", "v100_sxm2_16gb" and "V100-SXM2-16GB" are one name. */
static bool same_name(const char *a, const char *b, size_t len)
{
    const char *end = b + len;
    for (;;) {
        while (*a == ' ' || *a == '-' || *a == '_')
            a++;
        while (b < end && (*b == ' ' || *b == '-' || *b == '_'))
            b++;
        if (!*a || b == end) return !*a && b == end;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
        a++, b++;
    }
}

static bool has_alias(const char *aliases, const char *name)
{
    for (const char *p = aliases; *p;) {
        size_t len = 0;
        while (p[len] && p[len] != ',')
            len++;
        if (len && same_name(name, p, len)) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

const pl_gpu_spec *pl_gpu_spec_find(const char *model)
{
    if (!model) return NULL;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        const char *m = specs[i].model;
        size_t len = 0;
        while (m[len])
            len++;
        if (same_name(model, m, len) || has_alias(specs[i].aliases, model)) return &specs[i];
    }
    return NULL;
}

const char *pl_precision_name(pl_precision p)
{
    static const char *const names[] = {"fp32", "fp16", "bf16", "int8", "fp64"};
    return p >= 0 && p < PL_PREC_COUNT ? names[p] : "?";
}

/* ONNX TensorProto.DataType codes (graph.h's PL_DT_*), spelled out here so the cluster module
 * does not depend on the graph module's header. */
pl_precision pl_precision_of_dtype(int dtype)
{
    switch (dtype) {
    case 10:
        return PL_PREC_FP16; /* float16 */
    case 16:
        return PL_PREC_BF16; /* bfloat16 */
    case 2:                  /* uint8 */
    case 3:
        return PL_PREC_INT8; /* int8 */
    case 11:
        return PL_PREC_FP64; /* double */
    default:
        return PL_PREC_FP32;
    }
}

const char *pl_dev_kind_name(pl_dev_kind k)
{
    switch (k) {
    case PL_DEV_CPU:
        return "cpu";
    case PL_DEV_GPU:
        return "gpu";
    case PL_DEV_ACCEL:
        return "accel";
    }
    return "?";
}

/* ---- unknown models: suggest the closest names (the cluster and catalogue readers) ---- */

/* Lower case without ' ', '-', '_' (how pl_gpu_spec_find compares names). */
static void squash(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; *s && k + 1 < n; s++)
        if (*s != ' ' && *s != '-' && *s != '_') out[k++] = (char)tolower((unsigned char)*s);
    out[k] = 0;
}

static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[64];
    if (lb >= 64) lb = 63;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up, row[j] = best;
        }
    }
    return row[lb];
}

/* How far squashed `w` is from one squashed name: a contained name counts as close ("a100"
 * in "a100sxm440gb"), and so does a shared family prefix ("rtx4090" and "rtx2080ti"). */
static int name_distance(const char *w, const char *m)
{
    if (strstr(m, w) || strstr(w, m)) return 1;
    size_t common = 0;
    while (w[common] && w[common] == m[common])
        common++;
    int d = edit_distance(w, m) - (common >= 3 ? 2 : 0);
    return d > 0 ? d : 0;
}

/* How far `word` is from a table row: the nearest of its name and aliases. */
static int model_distance(const char *word, const pl_gpu_spec *s)
{
    char w[64], m[64];
    squash(word, w, sizeof w);
    squash(s->model, m, sizeof m);
    int best = name_distance(w, m);
    char aliases[256];
    snprintf(aliases, sizeof aliases, "%s", s->aliases);
    for (char *save = NULL, *t = strtok_r(aliases, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        squash(t, m, sizeof m);
        int d = name_distance(w, m);
        if (d < best) best = d;
    }
    return best;
}

/* Appends to buf (length *len, size n), never past its end. */
static void add(char *buf, size_t n, size_t *len, const char *a, const char *b)
{
    if (*len + 1 >= n) return;
    int w = snprintf(buf + *len, n - *len, "%s%s", a, b);
    *len += w < 0 ? 0 : (size_t)w < n - *len ? (size_t)w : n - *len - 1;
}

void pl_gpu_spec_suggest(const char *word, int kind, char *buf, size_t n)
{
    int n_specs, used = 0;
    const pl_gpu_spec *specs = pl_gpu_specs(&n_specs);
    size_t len = 0;
    buf[0] = 0;
    int limit = 1 + (int)strlen(word) / 3;
    for (int d = 0; d <= limit && used < 3; d++)
        for (int i = 0; i < n_specs && used < 3; i++)
            if ((kind < 0 || (int)specs[i].kind == kind) && model_distance(word, &specs[i]) == d) {
                add(buf, n, &len, used++ ? ", \"" : "did you mean \"", specs[i].model);
                add(buf, n, &len, "\"", "");
            }
    if (used) return add(buf, n, &len, "?", "");
    add(buf, n, &len, "the built-in ", kind < 0 ? "" : pl_dev_kind_name((pl_dev_kind)kind));
    add(buf, n, &len, kind < 0 ? "models are" : " models are", "");
    for (int i = 0, k = 0; i < n_specs; i++)
        if (kind < 0 || (int)specs[i].kind == kind)
            add(buf, n, &len, k++ ? ", " : " ", specs[i].model);
}
