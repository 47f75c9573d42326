/* bench_codec.c: the codecs for cut tensors on this machine (docs/serverless.md, "Compressing cut tensors").
 *
 *   bench_codec [REPS]
 *
 * Ratio and encode/decode speed (median of REPS round trips, default 10) of none, fp16 and zstd
 * on synthetic activations shaped as the zoo's cut tensors. Synthetic, not a zoo model's real
 * activations: the zoo's ONNX files are weightless (placer inflates them with random weights,
 * whose activations are no more real) and the onnxruntime worker gives back timings, not
 * tensors. Each tensor's kind says what it imitates. */
#include "placer/report.h"
#include "placer/serverless.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Standard normal, Box-Muller on the project's generator. */
static double normal(uint64_t *s)
{
    double u = 1 - pl_rng_uniform(s); /* in (0, 1]: log(u) is finite */
    return sqrt(-2 * log(u)) * cos(2 * M_PI * pl_rng_uniform(s));
}

typedef enum { RELU, GELU, NORMAL } kind;

static const char *kind_text(kind k)
{
    return k == RELU   ? "ReLU(N(0,1)): half zeros"
           : k == GELU ? "GELU(N(0,1)) (FFN inner)"
                       : "N(0,1) (hidden state)";
}

static float *tensor(kind k, size_t n, uint64_t seed)
{
    float *x = pl_malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        double z = normal(&seed);
        if (k == RELU)
            x[i] = (float)fmax(0, z);
        else if (k == GELU)
            x[i] = (float)(0.5 * z * (1 + erf(z / M_SQRT2)));
        else
            x[i] = (float)z;
    }
    return x;
}

/* The largest relative error fp16 makes on x, over the elements at least 2^-14 in size (its
 * normal range, where the 2^-11 bound holds). */
static double fp16_max_rel(const float *x, size_t n, pl_err *err)
{
    unsigned char *buf;
    size_t len;
    float *y = pl_malloc(n * sizeof *y);
    double worst = -1;
    if (pl_codec_encode(PL_CODEC_FP16, x, n, &buf, &len, err) == 0 &&
        pl_codec_decode(PL_CODEC_FP16, buf, len, y, n, err) == 0) {
        worst = 0;
        for (size_t i = 0; i < n; i++)
            if (fabs(x[i]) >= 0x1p-14) worst = fmax(worst, fabs(y[i] - x[i]) / fabs(x[i]));
    }
    if (worst >= 0) free(buf);
    free(y);
    return worst;
}

static int row(pl_table *t, const char *name, kind k, size_t n, int reps)
{
    float *x = tensor(k, n, 14 + k);
    pl_err err = {""};
    double mb = n * 4 / 1e6, rel = fp16_max_rel(x, n, &err);
    char loss[48];
    snprintf(loss, sizeof loss, "rel. error <= %.2e", rel);
    for (pl_codec c = PL_CODEC_NONE; c <= PL_CODEC_ZSTD && rel >= 0; c++) {
        pl_codec_cost m;
        if (pl_codec_measure(c, x, n, reps, &m, &err) < 0) {
            rel = -1;
            break;
        }
        pl_table_row(t, "%s|%s|%.2f|%s|%.2f|%.0f|%.0f|%s", name, kind_text(k), mb, pl_codec_name(c),
                     m.ratio, 1e-6 / m.encode_s_per_B, 1e-6 / m.decode_s_per_B,
                     c == PL_CODEC_FP16 ? loss : "exact");
    }
    free(x);
    if (rel < 0) fprintf(stderr, "bench_codec: %s\n", err.msg);
    return rel < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    if (reps < 1) {
        fprintf(stderr, "usage: bench_codec [REPS]\n");
        return 2;
    }
    pl_table *t = pl_table_new("tensor|kind (synthetic)|>MB|codec|>ratio|>encode MB/s|>decode "
                               "MB/s|>loss");
    /* resnet50 after its first stage; bert_base's FFN inner and hidden states, 128 tokens. */
    if (row(t, "[1,256,56,56]", RELU, 256 * 56 * 56, reps) < 0 ||
        row(t, "[1,128,3072]", GELU, 128 * 3072, reps) < 0 ||
        row(t, "[1,128,768]", NORMAL, 128 * 768, reps) < 0)
        return 1;
    printf("median of %d round trips per codec, one thread; MB = 10^6 bytes of float32; ratio = "
           "raw / encoded\n",
           reps);
    pl_table_print(t, stdout);
    pl_table_free(t);
    return 0;
}
