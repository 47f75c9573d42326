/* codec.c: compressing the tensors that cross a cut between serverless functions
 * (docs/serverless.md, "Compressing cut tensors"). Three codecs really run (NONE, FP16, ZSTD);
 * MOPAR's auto-encoder is priced from its FLOPs on the cost model, as placer has no trained one to
 * run.
 *
 * Private prefix cd_. Encoded layouts, all little-endian:
 *   NONE  the n floats as they are in memory (4n bytes)
 *   FP16  n IEEE 754 binary16 values (2n bytes)
 *   ZSTD  "PLZ1", n as 8 bytes, then one zstd frame (level 1, content size and checksum set):
 *         the header lets decode refuse a buffer for another tensor before inflating it, and
 *         the checksum catches a corrupted body that would otherwise inflate to wrong floats. */
#include "placer/serverless.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static const char *const cd_names[PL_CODEC_COUNT] = {"none", "fp16", "zstd", "ae"};

const char *pl_codec_name(pl_codec c)
{
    return (unsigned)c < PL_CODEC_COUNT ? cd_names[c] : "?";
}

int pl_codec_parse(const char *name)
{
    for (int c = 0; name && c < PL_CODEC_COUNT; c++)
        if (!strcmp(name, cd_names[c])) return c;
    return -1;
}

/* ---- FP16: IEEE 754 binary16, round to nearest, ties to even ---- */

/* Rounds the integer m shifted right by `shift` (1..31) to nearest, ties to the even result. */
static uint32_t cd_round_shift(uint32_t m, int shift)
{
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
}

static uint16_t cd_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
    if (ax > 0x7f800000) /* NaN: keep it quiet and keep the top payload bits */
        return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    /* 65520 = 0x477ff000 lies halfway between 65504 (odd mantissa) and 2^16: the tie goes to
     * the even one, which is past the largest half, so it and all above become infinity. */
    if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00);
    if (ax >= 0x38800000) { /* normal half (>= 2^-14): rebias the exponent, round 13 bits off;
                               a carry out of the mantissa correctly bumps the exponent */
        uint32_t biased = ax - ((uint32_t)(127 - 15) << 23);
        return (uint16_t)(sign | cd_round_shift(biased, 13));
    }
    /* Subnormal half, m x 2^-24. Up to 2^-25 (the tie with 2^-24 goes to the even 0) is 0;
     * a float subnormal is far below that. Otherwise f = m24 x 2^(e-23) with the implicit
     * bit, so m = m24 x 2^(e+1) with e+1 in [-24, -14]; rounding up to 0x400 gives the
     * smallest normal, which is also the right encoding. */
    if (ax <= 0x33000000) return (uint16_t)sign;
    int e = (int)(ax >> 23) - 127;
    uint32_t m24 = (ax & 0x7fffff) | 0x800000;
    return (uint16_t)(sign | cd_round_shift(m24, -(e + 1)));
}

static float cd_from_half(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    if (e == 0) { /* zero or subnormal: m x 2^-24, exact in float */
        float f = (float)m * 0x1p-24f;
        return sign ? -f : f;
    }
    if (e == 31)
        x = sign | 0x7f800000 | (m << 13); /* infinity, or NaN with its payload */
    else
        x = sign | ((e - 15 + 127) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---- ZSTD, with its header ---- */

#define CD_ZMAGIC "PLZ1"
#define CD_ZHEAD 12 /* magic + 8-byte count */

static void cd_put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t cd_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int cd_zstd_encode(const float *x, size_t n, unsigned char **out, size_t *out_len,
                          pl_err *err)
{
    size_t raw = n * sizeof(float), cap = CD_ZHEAD + ZSTD_compressBound(raw);
    unsigned char *buf = pl_malloc(cap);
    memcpy(buf, CD_ZMAGIC, 4);
    cd_put_u64(buf + 4, n);
    ZSTD_CCtx *cx = ZSTD_createCCtx();
    size_t z = cx ? 0 : (size_t)-1;
    if (cx) {
        ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, 1);
        ZSTD_CCtx_setParameter(cx, ZSTD_c_checksumFlag, 1);
        z = ZSTD_compress2(cx, buf + CD_ZHEAD, cap - CD_ZHEAD, x, raw);
        ZSTD_freeCCtx(cx);
    }
    if (!cx || ZSTD_isError(z)) {
        free(buf);
        return pl_err_set(err, "zstd: encoding %zu floats: %s", n,
                          cx ? ZSTD_getErrorName(z) : "out of memory");
    }
    *out = buf;
    *out_len = CD_ZHEAD + z;
    return 0;
}

/* The frame must say its size, carry a checksum and fill the buffer: one that does not was not
 * written by cd_zstd_encode (or was damaged), and without the checksum a corrupted body could
 * inflate to wrong floats unnoticed. The checksum flag is bit 2 of the frame header descriptor,
 * the byte after the frame's magic number (RFC 8878, 3.1.1.1.1); zstd's own reader of it is
 * in its experimental API. */
static int cd_zstd_frame_ok(const unsigned char *in, size_t len, size_t raw, pl_err *err)
{
    unsigned long long size = ZSTD_getFrameContentSize(in, len);
    if (size == ZSTD_CONTENTSIZE_ERROR) return pl_err_set(err, "zstd: not a zstd frame");
    if (size != raw)
        return pl_err_set(err, "zstd: frame gives %s%llu bytes, expected %zu",
                          size == ZSTD_CONTENTSIZE_UNKNOWN ? "no size, not " : "", size, raw);
    if (!(in[4] & 4)) return pl_err_set(err, "zstd: frame without a checksum");
    size_t whole = ZSTD_findFrameCompressedSize(in, len);
    if (ZSTD_isError(whole) || whole != len)
        return pl_err_set(err, "zstd: frame of %zu bytes %s", len,
                          ZSTD_isError(whole) ? "is truncated or damaged"
                                              : "has bytes after its end");
    return 0;
}

static int cd_zstd_decode(const unsigned char *in, size_t len, float *x, size_t n, pl_err *err)
{
    if (len < CD_ZHEAD || memcmp(in, CD_ZMAGIC, 4))
        return pl_err_set(
            err, "zstd: buffer of %zu bytes does not start with the %d-byte " CD_ZMAGIC " header",
            len, CD_ZHEAD);
    uint64_t count = cd_get_u64(in + 4);
    if (count != n)
        return pl_err_set(err, "zstd: buffer holds %llu floats, expected %zu",
                          (unsigned long long)count, n);
    size_t raw = n * sizeof(float);
    if (cd_zstd_frame_ok(in + CD_ZHEAD, len - CD_ZHEAD, raw, err) < 0) return -1;
    size_t r = ZSTD_decompress(x, raw, in + CD_ZHEAD, len - CD_ZHEAD);
    if (ZSTD_isError(r)) return pl_err_set(err, "zstd: decoding: %s", ZSTD_getErrorName(r));
    if (r != raw) return pl_err_set(err, "zstd: decoded %zu bytes, expected %zu", r, raw);
    return 0;
}

/* ---- the codecs' entry points ---- */

static int cd_runs(pl_codec c, pl_err *err)
{
    if (c == PL_CODEC_NONE || c == PL_CODEC_FP16 || c == PL_CODEC_ZSTD) return 0;
    return pl_err_set(err, "codec %s: modelled only, it does not run", pl_codec_name(c));
}

int pl_codec_encode(pl_codec c, const float *x, size_t n, unsigned char **out, size_t *out_len,
                    pl_err *err)
{
    *out = NULL;
    *out_len = 0;
    if (cd_runs(c, err) < 0) return -1;
    if (n > SIZE_MAX / sizeof(float) - CD_ZHEAD - 1024)
        return pl_err_set(err, "%s: %zu floats is too many", pl_codec_name(c), n);
    if (c == PL_CODEC_ZSTD) return cd_zstd_encode(x, n, out, out_len, err);
    size_t len = n * (c == PL_CODEC_FP16 ? 2 : sizeof(float));
    unsigned char *buf = pl_malloc(len ? len : 1);
    if (c == PL_CODEC_NONE) {
        if (n) memcpy(buf, x, len);
    } else {
        for (size_t i = 0; i < n; i++) {
            uint16_t h = cd_to_half(x[i]);
            buf[2 * i] = (unsigned char)h;
            buf[2 * i + 1] = (unsigned char)(h >> 8);
        }
    }
    *out = buf;
    *out_len = len;
    return 0;
}

int pl_codec_decode(pl_codec c, const unsigned char *in, size_t len, float *x, size_t n,
                    pl_err *err)
{
    if (cd_runs(c, err) < 0) return -1;
    if (c == PL_CODEC_ZSTD) return cd_zstd_decode(in, len, x, n, err);
    size_t width = c == PL_CODEC_FP16 ? 2 : sizeof(float);
    if (n > SIZE_MAX / width || len != n * width)
        return pl_err_set(err, "%s: buffer of %zu bytes, expected %zu floats of %zu bytes",
                          pl_codec_name(c), len, n, width);
    if (c == PL_CODEC_NONE) {
        if (n) memcpy(x, in, len);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = cd_from_half((uint16_t)(in[2 * i] | in[2 * i + 1] << 8));
    return 0;
}

/* One encode and decode of x, timed; the round trip must succeed. */
static int cd_round_trip(pl_codec c, const float *x, size_t n, float *back, double *enc_s,
                         double *dec_s, size_t *len, pl_err *err)
{
    unsigned char *buf;
    double t0 = pl_now();
    if (pl_codec_encode(c, x, n, &buf, len, err) < 0) return -1;
    double t1 = pl_now();
    int rc = pl_codec_decode(c, buf, *len, back, n, err);
    double t2 = pl_now();
    free(buf);
    *enc_s = t1 - t0;
    *dec_s = t2 - t1;
    return rc;
}

int pl_codec_measure(pl_codec c, const float *x, size_t n, int reps, pl_codec_cost *out,
                     pl_err *err)
{
    if (cd_runs(c, err) < 0) return -1;
    if (n == 0 || reps < 1)
        return pl_err_set(err, "%s: measuring needs floats and at least one repetition (%zu, %d)",
                          pl_codec_name(c), n, reps);
    float *back = pl_malloc(n * sizeof *back);
    double *enc = pl_malloc(reps * sizeof *enc), *dec = pl_malloc(reps * sizeof *dec);
    size_t len = 0;
    int rc = 0;
    for (int r = 0; r < reps && rc == 0; r++)
        rc = cd_round_trip(c, x, n, back, &enc[r], &dec[r], &len, err);
    if (rc == 0) {
        double raw = (double)(n * sizeof(float));
        out->ratio = raw / (double)len;
        out->encode_s_per_B = pl_median(enc, reps) / raw;
        out->decode_s_per_B = pl_median(dec, reps) / raw;
    }
    free(back);
    free(enc);
    free(dec);
    return rc;
}

/* ---- MOPAR's auto-encoder, modelled ---- */

/* The kernel of the encoder's convolution and of the decoder's transposed one. */
#define CD_AE_K 3

/* A tensor as the 1 x C x H x W image the auto-encoder convolves: rank >= 4 is NCHW..., the
 * batch folded into H and the dimensions past the third into W; rank <= 3 has its channels
 * last ([B, S, D]: C = D, H = B x S, W = 1). An unknown dimension (< 1) counts as 1. */
static void cd_ae_view(const int64_t *dims, int rank, double *C, double *H, double *W)
{
    double d[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    int r = rank < 0 ? 0 : rank;
    for (int i = 0; i < r; i++)
        d[i < 8 ? i : 7] *= dims[i] >= 1 ? (double)dims[i] : 1;
    *C = *H = *W = 1;
    if (r >= 4) {
        *C = d[1];
        *H = d[0] * d[2];
        for (int i = 3; i < 8; i++)
            *W *= d[i];
    } else if (r >= 1) {
        *C = d[r - 1];
        for (int i = 0; i < r - 1; i++)
            *H *= d[i];
    }
}

void pl_codec_ae_cost(const int64_t *dims, int rank, double ratio, const pl_device *d,
                      const pl_cost_params *p, pl_codec_cost *out)
{
    PL_ASSERT(ratio >= 1);
    if (!(ratio >= 1)) ratio = 1;
    double C, H, W;
    cd_ae_view(dims, rank, &C, &H, &W);
    /* ceil(C/R) output channels, stride 1; with fewer channels than R, one output channel and
     * a stride s = ceil(R/C) along H makes up the rest. ceil() of a ratio just above a whole
     * number must not round up from floating-point noise: 1e-9 of slack. */
    double ce = ceil(C / ratio - 1e-9), s = 1;
    if (ce < 1) ce = 1;
    if (C < ratio) s = ceil(ratio / C - 1e-9);
    double ho = ceil(H / s);
    /* Encoder: each of the ho x W outputs of each of the ce channels sums k^2 x C products;
     * the transposed decoder scatters each of its ho x W x ce inputs into k^2 x C outputs:
     * the same multiply-adds, 2 FLOPs each. */
    double flops = 2 * ho * W * CD_AE_K * CD_AE_K * C * ce;
    double rate =
        pl_cost_rate(d->peak_flops_per_s[PL_PREC_FP32], p->eff_compute[PL_CLASS_DENSE], p);
    double raw = 4 * C * H * W, t = flops / rate + d->launch_overhead_s;
    out->encode_s_per_B = out->decode_s_per_B = t / raw;
    out->ratio = C * H / (ce * ho);
}
