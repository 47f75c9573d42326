/* serverless.h: a model split into serverless functions, MOPAR (docs/serverless.md).
 *
 * A serverless platform (placer-platform/1, docs/formats.md) bills each function for its
 * memory size times its billed duration, gives it CPU in proportion to its memory, and moves
 * tensors between functions through an external store or, when two functions share a server,
 * shared memory. MOPAR cuts a model's layers into consecutive slices, one function each, sizes
 * each function's memory, runs resource-dominant slices η ways in parallel and compresses what
 * crosses a cut, at the lowest cost per request with a latency no worse than the whole model's.
 * This header is the module's contract: the platform, the codecs that compress cut tensors,
 * and the partitioning itself. */
#ifndef PLACER_SERVERLESS_H
#define PLACER_SERVERLESS_H

#include <stdbool.h>
#include <stddef.h>

#include "placer/cluster.h"
#include "placer/common.h"
#include "placer/cost.h"
#include "placer/graph.h"

/* ---- the platform (src/serverless/platform.c) ---- */

/* How tensors travel between two functions. */
typedef struct pl_transport {
    bool present;         /* the platform offers it */
    double bandwidth_Bps; /* bytes per second, one way */
    double latency_s;     /* per transfer (a PUT or a GET, a write or a read) */
    double usd_per_gb;    /* price of each GB moved (0 for shared memory) */
} pl_transport;

typedef struct pl_platform {
    char *name;
    char *path;                    /* the file it was read from ("" when built in code) */
    double mem_min_mb, mem_max_mb; /* the memory sizes a function may have, MB (10^6 bytes... */
    double mem_step_mb;            /* ...as the platforms say MB for MiB: see docs/formats.md) */
    double mb_per_vcpu;            /* λ: memory per vCPU; a function of M MB has M / λ vCPUs */
    double usd_per_gb_s;           /* price of one GB-second of allocated memory */
    double usd_per_request;        /* price of one invocation */
    double billing_s;              /* billing granularity: durations are rounded up to it */
    double cold_start_s;           /* a function's start when no instance is warm */
    double runtime_base_mb;        /* the runtime's own memory in every function */
    double parallel_eff;           /* each vCPU beyond the first adds this fraction of one */
    pl_transport store;            /* external store (Redis, ElastiCache) */
    pl_transport shm;              /* shared memory between functions on one server */
    pl_cluster *vcpu;              /* one device: what one vCPU of a function computes */
} pl_platform;

/* Reads placer-platform/1. A malformed file gives "FILE: FIELD: PROBLEM". */
pl_platform *pl_platform_load(const char *path, pl_err *err);
void pl_platform_free(pl_platform *p);

/* The smallest allowed memory size at least `mb` (the minimum when below it); -1 when `mb` is
 * above the largest. */
double pl_platform_round_mb(const pl_platform *p, double mb);
/* A duration as billed: rounded up to the billing granularity (0 stays 0). */
double pl_platform_billed_s(const pl_platform *p, double s);
/* vCPUs of a function of `mb` MB: mb / λ (fractional below one: a share of a core). */
double pl_platform_vcpus(const pl_platform *p, double mb);
/* The bill of one invocation of a function of `mb` MB that runs `s` seconds: memory (GB) x
 * billed seconds x price per GB-s + the price per request. */
double pl_platform_usd(const pl_platform *p, double mb, double s);

/* ---- codecs for cut tensors (src/serverless/codec.c) ---- */

typedef enum {
    PL_CODEC_NONE, /* raw bytes */
    PL_CODEC_FP16, /* float32 -> IEEE half, lossy (relative error <= 2^-11 in range) */
    PL_CODEC_ZSTD, /* lossless, zstd level 1 */
    PL_CODEC_AE,   /* MOPAR's one-layer convolutional auto-encoder, modelled (not run) */
    PL_CODEC_COUNT
} pl_codec;

const char *pl_codec_name(pl_codec c);
/* The codec named `name` ("none", "fp16", "zstd", "ae"), or -1. */
int pl_codec_parse(const char *name);

/* What a codec does to a tensor, per byte of the raw tensor. */
typedef struct pl_codec_cost {
    double ratio;        /* raw bytes / encoded bytes (>= 1 for the codecs here) */
    double encode_s_per_B; /* seconds to encode one raw byte */
    double decode_s_per_B; /* seconds to decode back one raw byte */
} pl_codec_cost;

/* Encodes n floats with codec c into a malloc'd buffer (*out, *out_len); decodes it back into
 * n floats. NONE, FP16 and ZSTD only; -1 with err on failure or a codec that does not run. */
int pl_codec_encode(pl_codec c, const float *x, size_t n, unsigned char **out, size_t *out_len,
                    pl_err *err);
int pl_codec_decode(pl_codec c, const unsigned char *in, size_t len, float *x, size_t n,
                    pl_err *err);

/* Measures codec c (NONE, FP16 or ZSTD) on the n floats x on this machine (median of `reps`
 * round trips): the ratio and the times per raw byte. */
int pl_codec_measure(pl_codec c, const float *x, size_t n, int reps, pl_codec_cost *out,
                     pl_err *err);

/* MOPAR's auto-encoder (a one-layer 2-D convolution encoder and one decoder, compression ratio
 * `ratio`), modelled, not run: for a tensor of `dims` (rank 4, NCHW; other ranks as a 1 x C x
 * H x W view, docs/serverless.md), its encoder and decoder FLOPs priced on device d with the
 * cost model's dense efficiency, per raw byte, and the ratio that shape really reaches, which
 * is `ratio` when `ratio` divides the channels (docs/serverless.md, "Compressing cut
 * tensors"). `ratio` >= 1 (PL_ASSERT). */
void pl_codec_ae_cost(const int64_t *dims, int rank, double ratio, const pl_device *d,
                      const pl_cost_params *p, pl_codec_cost *out);

#endif
