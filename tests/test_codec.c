/* test_codec.c: the codecs for tensors crossing a cut (docs/serverless.md, "Compressing cut tensors"): binary16
 * rounding by hand (ties to even, overflow, subnormals, NaN), every half back to itself, and its
 * error bound on random floats; zstd exact on random and structured data, its ratio on a constant
 * tensor, and a truncated, corrupted or mismatched buffer refused; the names; the auto-encoder's
 * FLOPs by hand on a small device. */
#include "testutil.h"

#include "placer/serverless.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* x through fp16 and back; the encoding in *bits. */
static float fp16_trip(float x, uint16_t *bits)
{
    unsigned char *buf;
    size_t len;
    pl_err err = {""};
    assert_int_equal(pl_codec_encode(PL_CODEC_FP16, &x, 1, &buf, &len, &err), 0);
    assert_int_equal(len, 2);
    *bits = (uint16_t)(buf[0] | buf[1] << 8);
    float y = NAN;
    assert_int_equal(pl_codec_decode(PL_CODEC_FP16, buf, len, &y, 1, &err), 0);
    free(buf);
    return y;
}

static void expect_half(float x, uint16_t want_bits, float want)
{
    uint16_t bits;
    float y = fp16_trip(x, &bits);
    if (bits != want_bits || memcmp(&y, &want, 4))
        fail_msg("%.9g -> 0x%04x = %.9g, expected 0x%04x = %.9g", x, bits, y, want_bits, want);
}

/* Every value worked out from binary16: sign, 5 exponent bits biased by 15, 10 mantissa bits. */
static void test_fp16_hand_values(void **state)
{
    (void)state;
    expect_half(1.0f, 0x3c00, 1.0f);
    expect_half(-2.5f, 0xc100, -2.5f);       /* -1.25 x 2^1: exponent 16, mantissa 0x100 */
    expect_half(65504.0f, 0x7bff, 65504.0f); /* the largest half */
    expect_half(65519.0f, 0x7bff, 65504.0f); /* below the tie: rounds down */
    expect_half(65520.0f, 0x7c00, INFINITY); /* the tie: to even, which is infinity */
    expect_half(-1e6f, 0xfc00, -INFINITY);   /* overflow */
    expect_half(INFINITY, 0x7c00, INFINITY);
    /* Ties to even in the normal range: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 (even
     * mantissa 0 wins); 1 + 3 x 2^-11 halfway between 1 + 2^-10 and 1 + 2^-9 (0x002 wins). */
    expect_half(1.0f + 0x1p-11f, 0x3c00, 1.0f);
    expect_half(1.0f + 3 * 0x1p-11f, 0x3c02, 1.0f + 0x1p-9f);
    expect_half(1.0f + 0x1p-11f + 0x1p-20f, 0x3c01, 1.0f + 0x1p-10f); /* just above: up */
    /* Subnormals, m x 2^-24: 2^-24 itself, 3 x 2^-24, 2^-14 - 2^-24 (the largest) and the
     * smallest normal 2^-14 reached by rounding up from just below it. */
    expect_half(0x1p-24f, 0x0001, 0x1p-24f);
    expect_half(-3 * 0x1p-24f, 0x8003, -3 * 0x1p-24f);
    expect_half(0x3ffp-24f, 0x03ff, 0x3ffp-24f);
    expect_half(0x1p-14f - 0x1p-26f, 0x0400, 0x1p-14f);
    expect_half(2.5f * 0x1p-24f, 0x0002, 2 * 0x1p-24f); /* tie: to the even 2 */
    expect_half(3.5f * 0x1p-24f, 0x0004, 4 * 0x1p-24f); /* tie: to the even 4 */
    /* 1e-8 is about 0.168 x 2^-24: below half the smallest subnormal, so zero (sign kept). */
    expect_half(1e-8f, 0x0000, 0.0f);
    expect_half(-1e-8f, 0x8000, -0.0f);
    expect_half(0x1p-25f, 0x0000, 0.0f);                /* the tie with 2^-24: to 0 */
    expect_half(0x1p-25f + 0x1p-40f, 0x0001, 0x1p-24f); /* just above it: up */
    expect_half(6e-5f, 0x03ef, 0x3efp-24f);             /* 6e-5 = 1006.63 x 2^-24: m = 1007 */
}

/* NaN stays NaN, with either sign, and a NaN whose payload sits in the low bits that binary16
 * drops does not become infinity. */
static void test_fp16_nan(void **state)
{
    (void)state;
    uint32_t payloads[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa00000};
    for (int i = 0; i < 4; i++) {
        float x;
        memcpy(&x, &payloads[i], 4);
        uint16_t bits;
        float y = fp16_trip(x, &bits);
        assert_true(isnan(y));
        assert_int_equal(bits & 0x7c00, 0x7c00);
        assert_int_not_equal(bits & 0x3ff, 0);
        assert_int_equal(bits >> 15, payloads[i] >> 31);
    }
}

/* Every one of the 65,536 halves decodes to a float that encodes back to the same bits (each
 * half is exactly a float, and rounding an exact value must not move it); a NaN comes back as a
 * NaN of the same sign with the quiet bit set. 65,536 halves decoded in order also rise
 * strictly from 0 to 65504 and then +inf. */
static void test_fp16_every_half(void **state)
{
    (void)state;
    enum { N = 65536 };
    unsigned char *in = malloc(2 * N), *back;
    float *f = malloc(N * sizeof *f);
    for (int h = 0; h < N; h++)
        in[2 * h] = (unsigned char)h, in[2 * h + 1] = (unsigned char)(h >> 8);
    pl_err err = {""};
    size_t len;
    assert_int_equal(pl_codec_decode(PL_CODEC_FP16, in, 2 * N, f, N, &err), 0);
    assert_int_equal(pl_codec_encode(PL_CODEC_FP16, f, N, &back, &len, &err), 0);
    for (int h = 0; h < N; h++) {
        int got = back[2 * h] | back[2 * h + 1] << 8;
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan ? !isnan(f[h]) || got != (h | 0x200) : got != h)
            fail_msg("half 0x%04x -> %.9g -> 0x%04x", h, f[h], got);
        if (h > 0 && h <= 0x7c00 && !(f[h] > f[h - 1]))
            fail_msg("0x%04x not above the one below", h);
    }
    assert_true(f[0x7bff] == 65504 && f[0x7c00] == INFINITY && f[1] == 0x1p-24f);
    free(in);
    free(back);
    free(f);
}

/* Round to nearest: within the normal range |y - x| <= 2^-11 |x|, and y is the nearest half,
 * so the next half up or down is never closer. */
static void test_fp16_random_error(void **state)
{
    (void)state;
    uint64_t seed = 14;
    enum { N = 20000 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int i = 0; i < N; i++) /* magnitudes from 2^-14 to 2^15, both signs */
        x[i] = (float)((pl_rng_uniform(&seed) < 0.5 ? -1 : 1) *
                       ldexp(1 + pl_rng_uniform(&seed), -14 + pl_rng_below(&seed, 30)));
    unsigned char *buf;
    size_t len;
    pl_err err = {""};
    assert_int_equal(pl_codec_encode(PL_CODEC_FP16, x, N, &buf, &len, &err), 0);
    assert_int_equal(len, 2 * N);
    assert_int_equal(pl_codec_decode(PL_CODEC_FP16, buf, len, y, N, &err), 0);
    free(buf);
    for (int i = 0; i < N; i++) {
        double e = fabs((double)y[i] - x[i]), ulp = ldexp(1, ilogb(y[i]) - 10);
        if (e > 0x1p-11 * fabs(x[i]) || e > ulp / 2)
            fail_msg("%.9g -> %.9g: error %.3g", x[i], y[i], e);
    }
    free(x);
    free(y);
}

static void zstd_exact(const float *x, size_t n, size_t *enc_len)
{
    unsigned char *buf;
    pl_err err = {""};
    if (pl_codec_encode(PL_CODEC_ZSTD, x, n, &buf, enc_len, &err) < 0) fail_msg("%s", err.msg);
    float *y = malloc(n * sizeof *y + 1);
    if (pl_codec_decode(PL_CODEC_ZSTD, buf, *enc_len, y, n, &err) < 0) fail_msg("%s", err.msg);
    assert_memory_equal(x, y, n * sizeof *x);
    free(buf);
    free(y);
}

/* Lossless on random bits (incompressible: a little larger than raw) and on a ReLU-like
 * tensor; a constant tensor compresses more than 10 times. */
static void test_zstd_round_trip(void **state)
{
    (void)state;
    enum { N = 50000 };
    float *x = malloc(N * sizeof *x);
    uint64_t seed = 7;
    for (int i = 0; i < N; i++) {
        uint32_t b = (uint32_t)pl_rng_next(&seed);
        memcpy(&x[i], &b, 4);
    }
    size_t len;
    zstd_exact(x, N, &len);
    assert_true(len >= 4 * N);
    for (int i = 0; i < N; i++)
        x[i] = i % 2 ? 0.0f : (float)(pl_rng_uniform(&seed) * (1 + i % 7));
    zstd_exact(x, N, &len);
    assert_true(len < 4 * N);
    for (int i = 0; i < N; i++)
        x[i] = 0.25f;
    zstd_exact(x, N, &len);
    assert_true(4.0 * N / len > 10);
    zstd_exact(x, 0, &len); /* an empty tensor is still a valid buffer */
    free(x);
}

static void expect_refused(pl_codec c, const unsigned char *buf, size_t len, size_t n,
                           const char *needle)
{
    pl_err err = {""};
    float *y = calloc(n + 1, sizeof *y);
    assert_int_equal(pl_codec_decode(c, buf, len, y, n, &err), -1);
    if (!strstr(err.msg, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.msg, needle);
    free(y);
}

/* Truncated anywhere, a byte flipped in the header or the body, a byte past the end, or read as a
 * tensor of another size: an error, never wrong floats. */
static void test_zstd_refuses_bad_buffers(void **state)
{
    (void)state;
    enum { N = 4096 };
    float x[N];
    uint64_t seed = 3;
    for (int i = 0; i < N; i++)
        x[i] = (float)(pl_rng_uniform(&seed) < 0.5 ? 0 : pl_rng_uniform(&seed));
    unsigned char *buf;
    size_t len;
    pl_err err = {""};
    assert_int_equal(pl_codec_encode(PL_CODEC_ZSTD, x, N, &buf, &len, &err), 0);
    for (size_t cut = 0; cut < len; cut += cut < 40 ? 1 : 97)
        expect_refused(PL_CODEC_ZSTD, buf, cut, N, "zstd: ");
    expect_refused(PL_CODEC_ZSTD, buf, 5, N, "header");
    expect_refused(PL_CODEC_ZSTD, buf, len, N - 1, "holds 4096 floats, expected 4095");
    for (size_t k = 0; k < len; k++) { /* every single corrupted byte */
        buf[k] ^= 0x5a;
        expect_refused(PL_CODEC_ZSTD, buf, len, N, "zstd: ");
        buf[k] ^= 0x5a;
    }
    unsigned char *longer = malloc(len + 1); /* a byte past the frame's end */
    memcpy(longer, buf, len);
    longer[len] = 0;
    expect_refused(PL_CODEC_ZSTD, longer, len + 1, N, "bytes after its end");
    free(longer);
    free(buf);
    expect_refused(PL_CODEC_FP16, (const unsigned char *)"abc", 3, 2, "expected 2 floats");
    expect_refused(PL_CODEC_NONE, (const unsigned char *)"abcdefg", 7, 2, "expected 2 floats");
    expect_refused(PL_CODEC_AE, (const unsigned char *)"", 0, 0, "modelled only");
}

static void test_none_and_measure(void **state)
{
    (void)state;
    float x[3] = {1.5f, -0.0f, NAN}, y[3];
    unsigned char *buf;
    size_t len;
    pl_err err = {""};
    assert_int_equal(pl_codec_encode(PL_CODEC_NONE, x, 3, &buf, &len, &err), 0);
    assert_int_equal(len, 12);
    assert_int_equal(pl_codec_decode(PL_CODEC_NONE, buf, len, y, 3, &err), 0);
    assert_memory_equal(x, y, sizeof x);
    free(buf);
    /* Ratios are exact; the times only positive (no timed tests). */
    float c[1000];
    for (int i = 0; i < 1000; i++)
        c[i] = 1;
    pl_codec_cost m;
    assert_int_equal(pl_codec_measure(PL_CODEC_FP16, c, 1000, 3, &m, &err), 0);
    assert_true(m.ratio == 2 && m.encode_s_per_B > 0 && m.decode_s_per_B > 0);
    assert_int_equal(pl_codec_measure(PL_CODEC_NONE, c, 1000, 1, &m, &err), 0);
    assert_true(m.ratio == 1);
    assert_int_equal(pl_codec_measure(PL_CODEC_ZSTD, c, 1000, 2, &m, &err), 0);
    assert_true(m.ratio > 10);
    assert_int_equal(pl_codec_measure(PL_CODEC_AE, c, 1000, 1, &m, &err), -1);
    assert_int_equal(pl_codec_measure(PL_CODEC_ZSTD, c, 1000, 0, &m, &err), -1);
}

static void test_names(void **state)
{
    (void)state;
    const char *names[] = {"none", "fp16", "zstd", "ae"};
    for (int c = 0; c < PL_CODEC_COUNT; c++) {
        assert_string_equal(pl_codec_name(c), names[c]);
        assert_int_equal(pl_codec_parse(names[c]), c);
    }
    assert_int_equal(pl_codec_parse("FP16"), -1);
    assert_int_equal(pl_codec_parse("zst"), -1);
    assert_int_equal(pl_codec_parse(""), -1);
    assert_int_equal(pl_codec_parse(NULL), -1);
}

/* A device of 1 GFLOP/s at fp32, dense efficiency 0.5 (5e8 FLOP/s), launch 10 us. */
static void small_device(pl_device *d, pl_cost_params *p)
{
    memset(d, 0, sizeof *d);
    d->peak_flops_per_s[PL_PREC_FP32] = 1e9;
    d->launch_overhead_s = 1e-5;
    pl_cost_params_default(p);
    p->eff_compute[PL_CLASS_DENSE] = 0.5;
}

static void test_ae_cost_by_hand(void **state)
{
    (void)state;
    pl_device d;
    pl_cost_params p;
    small_device(&d, &p);
    pl_codec_cost c;
    /* [1, 16, 8, 8], R = 4: 16 -> 4 channels, 3x3, stride 1. FLOPs = 2 x 8 x 8 x 9 x 16 x 4 =
     * 73,728 each way; 73,728 / 5e8 = 147.456 us, + 10 us = 157.456 us over 4 x 1024 raw bytes. */
    pl_codec_ae_cost((int64_t[]){1, 16, 8, 8}, 4, 4, &d, &p, &c);
    assert_close(c.ratio, 4, 1e-12);
    assert_close(c.encode_s_per_B, 157.456e-6 / 4096, 1e-9);
    assert_close(c.decode_s_per_B, 157.456e-6 / 4096, 1e-9);
    /* A batch of 2 doubles H: [2, 16, 8, 8] costs 2 x 73,728 FLOPs over twice the bytes. */
    pl_codec_ae_cost((int64_t[]){2, 16, 8, 8}, 4, 4, &d, &p, &c);
    assert_close(c.encode_s_per_B, (147456.0 / 5e8 + 1e-5) / 8192, 1e-9);
    /* [B, S, D] = [2, 10, 12], R = 8: C = 12, H = 20, W = 1; ceil(12/8) = 2 channels, so the
     * ratio is 6, not 8. FLOPs = 2 x 20 x 9 x 12 x 2 = 8,640; raw = 4 x 240 = 960 bytes. */
    pl_codec_ae_cost((int64_t[]){2, 10, 12}, 3, 8, &d, &p, &c);
    assert_close(c.ratio, 6, 1e-12);
    assert_close(c.encode_s_per_B, (8640 / 5e8 + 1e-5) / 960, 1e-9);
    /* Fewer channels than R: [1, 3, 32, 32], R = 8: one channel, stride ceil(8/3) = 3 along
     * H, ceil(32/3) = 11 rows: FLOPs = 2 x 11 x 32 x 9 x 3 x 1 = 19,008; ratio 3 x 32 / 11. */
    pl_codec_ae_cost((int64_t[]){1, 3, 32, 32}, 4, 8, &d, &p, &c);
    assert_close(c.ratio, 96.0 / 11, 1e-12);
    assert_close(c.decode_s_per_B, (19008 / 5e8 + 1e-5) / 12288, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_hand_values), cmocka_unit_test(test_fp16_nan),
        cmocka_unit_test(test_fp16_every_half),  cmocka_unit_test(test_fp16_random_error),
        cmocka_unit_test(test_zstd_round_trip),  cmocka_unit_test(test_zstd_refuses_bad_buffers),
        cmocka_unit_test(test_none_and_measure), cmocka_unit_test(test_names),
        cmocka_unit_test(test_ae_cost_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
