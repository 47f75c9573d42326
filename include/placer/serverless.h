/* serverless.h: a model split into serverless functions, MOPAR (docs/serverless.md).
 *
 * A serverless platform (placer-platform/1, docs/formats.md) bills each function for its
 * memory size times its billed duration, gives it CPU in proportion to its memory, and moves
 * tensors between functions through an external store or, when two functions share a server,
 * shared memory. MOPAR cuts a model's layers into consecutive slices, one function each, sizes
 * each function's memory, runs resource-dominant slices η ways in parallel and compresses what
 * crosses a cut, at the lowest cost per request with a latency no worse than the whole model's.
 * This header is the module's contract: the platform, the codecs that compress cut tensors,
 * and the partitioning itself.
 *
 * Semantics, exactly: a slice is layers [first, last] run as one function. Its memory is the
 * smallest size the platform allows at least runtime_base + f_w x its weights (a weight shared
 * by several of its layers once) + f_a x the most activation memory one of its layers holds,
 * or raised to one whole vCPU's; its vCPUs are memory / λ (at least min_vcpus); its time is
 * its layers' one-vCPU times at its share of a vCPU (at most one) and parallel degree η (the
 * fastest of 1 .. its whole vCPUs), plus, per cut tensor it reads or writes, the transport's
 * latency + bytes / ratio / bandwidth + the codec's time; its bill is memory (GB) x its time
 * rounded up to billing_s x usd_per_gb_s + usd_per_request + the bytes it moves / ratio x the
 * transport's usd_per_gb + the writes and reads it makes x the transport's usd_per_op. A plan's
 * latency is the sum of its slices' times (one after the other), its bill the sum of theirs. A plan
 * that does not fit is an error; a plan that is slower than the unsplit model is a result (MOPAR
 * refuses it only as its latency bound says). Units: bytes and seconds inside; the platform's MB (a
 * MiB) and GB only at the edges, in the platform file's *_mb fields, the slices' *_mb fields and
 * printed tables (the constants below say which GB each price means; docs/serverless.md, "The
 * bill").
 *
 * Ownership and failure: a function returning a pointer gives the caller what it frees with
 * the matching _free (NULL on failure, err set); a struct filled through a pointer is the
 * caller's, zeroed at entry and freed (and zeroed) by its _free, which accepts a zeroed one;
 * on failure it is zeroed (nothing to free) unless the function says otherwise. Inputs are
 * only read. */
#ifndef PLACER_SERVERLESS_H
#define PLACER_SERVERLESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "placer/cluster.h"
#include "placer/common.h"
#include "placer/cost.h"
#include "placer/graph.h"
#include "placer/plan.h"
#include "placer/sim.h"

/* ---- the platform (src/serverless/platform.c) ---- */

/* How tensors travel between two functions. */
typedef struct pl_transport {
    bool present;         /* the platform offers it */
    double bandwidth_Bps; /* bytes per second, one way */
    double latency_s;     /* per transfer (a PUT or a GET, a write or a read) */
    double usd_per_gb;    /* price of each GB moved (0 for shared memory and a provisioned store) */
    /* A store priced as a provisioned node ("pricing": "provisioned") bills the hour, not the
       bytes: each write or read pays usd_per_op = usd_per_hour / 3600 / requests_per_s, the
       node's price spread over the requests it serves at the stated rate. 0 otherwise. */
    bool provisioned;
    double usd_per_hour, requests_per_s;
    double usd_per_op;
} pl_transport;

/* How a request reaches a function and its answer comes back: the platform's "invocation", the
 * part of a request's latency that is neither compute nor the store. In the latency, not the
 * bill (a platform bills the function from its handler's start). */
typedef struct pl_invocation {
    bool present;        /* absent from the file: invocations are free */
    double round_trip_s; /* once per invocation: asking the function to run, hearing it is done */
    double request_Bps;  /* the graph inputs a function reads, carried to it */
    double response_Bps; /* the graph outputs it makes, carried back */
} pl_invocation;

typedef struct pl_platform {
    char *name;
    char *path;                       /* the file it was read from ("" when built in code) */
    double mem_min_mb, mem_max_mb;    /* the memory sizes a function may have, in the platform's */
    double mem_step_mb;               /* MB, a MiB (2^20 bytes) on Lambda; a GB is 1024 of them */
    double mb_per_vcpu;               /* λ: memory per vCPU; a function of M MB has M / λ vCPUs */
    double min_vcpus;                 /* ...but at least this many (0: the CPU follows memory all
                                         the way down, as on Lambda; 1: every function has a core,
                                         as an OpenFaaS pod with a CPU request of one) */
    double usd_per_gb_s;              /* price of one GB-second of allocated memory */
    double usd_per_request;           /* price of one invocation */
    double billing_s;                 /* billing granularity: durations are rounded up to it */
    double cold_start_s;              /* a function's start when no instance is warm */
    double runtime_base_mb;           /* the runtime's own memory in every function */
    double runtime_weight_factor;     /* the memory a weight MB takes in the runtime (onnxruntime
                                         keeps a prepacked copy beside it; 0: 1) */
    double runtime_activation_factor; /* the same for activation memory (0: 1) */
    double parallel_eff;              /* each vCPU beyond the first adds this fraction of one */
    pl_transport store;               /* external store (Redis, ElastiCache) */
    pl_transport shm;                 /* shared memory between functions on one server */
    pl_invocation invocation;         /* how a request reaches a function (absent: free) */
    pl_cluster *vcpu;                 /* one device: what one vCPU of a function computes */
} pl_platform;

/* The platform's units in bytes, used only where its figures are read or printed (inside,
 * placer works in bytes and seconds): its MB is a MiB (Lambda's, 2^20 bytes); the GB of its
 * GB-seconds (usd_per_gb_s, gb_s) is 1024 of those MB, 2^30 bytes, as AWS bills ("512MB/1024
 * = 0.5 GB"); the GB of a transport's usd_per_gb is 10^9 bytes (SI, as bandwidth_Bps). */
#define PL_PLATFORM_MB_BYTES 1048576.0
#define PL_PLATFORM_GB_S_BYTES 1073741824.0
#define PL_TRANSPORT_GB_BYTES 1e9

/* The most vCPUs a function may have, whether from min_vcpus or from memory.max_mb / λ: no
 * serverless platform gives one function more (Lambda 6), so more is a unit mistake, and it
 * keeps a parallel degree (at most the vCPUs) a small int. */
#define PL_PLATFORM_VCPUS_MAX 1024

/* What moving `bytes` bytes (after any codec) in `ops` writes and reads through x costs:
 * bytes / 10^9 x usd_per_gb + ops x usd_per_op. The one price every bill of a transport uses.
 * ops >= 0; bytes may be a rounding error below zero (above -1), priced as it is. */
double pl_transport_usd(const pl_transport *x, double bytes, double ops);

/* Reads placer-platform/1. A malformed file gives "FILE: FIELD: PROBLEM". */
pl_platform *pl_platform_load(const char *path, pl_err *err);
/* The same from len bytes of buf, named `name` in messages (the fuzzer's entry). */
pl_platform *pl_platform_load_buffer(const char *buf, size_t len, const char *name, pl_err *err);
void pl_platform_free(pl_platform *p);

/* The smallest allowed memory size at least `mb` (the minimum when below it); -1 when `mb` is
 * above the largest. */
double pl_platform_round_mb(const pl_platform *p, double mb);
/* A duration as billed: rounded up to the billing granularity (0 stays 0). */
double pl_platform_billed_s(const pl_platform *p, double s);
/* vCPUs of a function of `mb` MB: mb / λ (fractional below one: a share of a core), at least
 * min_vcpus. */
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
    double ratio;          /* raw bytes / encoded bytes (>= 1 for the codecs here) */
    double encode_s_per_B; /* seconds to encode one raw byte */
    double decode_s_per_B; /* seconds to decode back one raw byte */
} pl_codec_cost;

/* Encodes n floats with codec c into a malloc'd buffer (*out, *out_len: the caller frees
 * *out; NULL and 0 on failure); decodes it back into the caller's n floats x (on failure x
 * may be partly written). NONE, FP16 and ZSTD only; -1 with err on failure or a codec that
 * does not run. */
int pl_codec_encode(pl_codec c, const float *x, size_t n, unsigned char **out, size_t *out_len,
                    pl_err *err);
int pl_codec_decode(pl_codec c, const unsigned char *in, size_t len, float *x, size_t n,
                    pl_err *err);

/* Measures codec c (NONE, FP16 or ZSTD) on the n floats x on this machine (median of `reps`
 * round trips): the ratio and the times per raw byte. *out is written only on success. */
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

/* ---- the partitioning (src/serverless/layers.c, elim.c, mopar.c) ---- */

/* A layer: a group of ops that the runtime runs as one (the coarsening's fusion groups, with
 * the Constants that feed only them), MOPAR's unit of partitioning. */
typedef struct pl_sl_layer {
    int *ops; /* the graph's ops, topological order (NULL for hand-made layers) */
    int n_ops;
    double mem_mb;     /* Eq. (1)-(3): the most activation memory its ops hold at once, MB
                          (what they read and write; ops at the same depth of the layer count
                          together, as parallel branches) */
    double weight_mb;  /* its own weights, MB: resident in the function that holds the layer */
    int *wts;          /* the weights it shares with other layers (ids into pl_sl_graph.wt_mb): */
    int n_wts;         /*   a function holding several of their readers holds them once */
    double t1_s;       /* its time on one whole vCPU (the cost model) */
    double par_s;      /* of t1_s, the time of its dominant ops that η sub-slices divide */
    double out_bytes;  /* bytes its ops write: η sub-slices' partial results are gathered (t_a) */
    int n_dominant;    /* its dominant ops: the fewest ops covering 80 % of its memory */
    int *gins;         /* the graph inputs it reads (ids into pl_sl_graph.gin_bytes): the */
    int n_gins;        /*   request's payload, carried once to each function reading one */
    double gout_bytes; /* graph outputs its ops make: the answer's payload */
} pl_sl_layer;

/* A tensor between layers: made by layer `from`, read by the layers `to` (each later). */
typedef struct pl_sl_tensor {
    double bytes;
    int from;
    int *to;
    int n_to;
} pl_sl_tensor;

/* The layer graph: layers in topological order (every tensor goes from a lower index to higher
 * ones), and the tensors between them. */
typedef struct pl_sl_graph {
    pl_sl_layer *layers;
    int n;
    pl_sl_tensor *tensors;
    int n_tensors;
    double *wt_mb; /* the shared weights' sizes, MB */
    int n_wts;
    double *gin_bytes; /* the graph inputs' sizes, bytes (pl_sl_layer.gins) */
    int n_gins;
    int n_before;   /* layers before elimination */
    int node_elims; /* layers merged by node elimination */
    int edge_elims; /* edges merged by edge elimination */
} pl_sl_graph;

/* A layer graph of g: ops grouped by the coarsening's fusion and colocation passes, each
 * layer's activation memory by Eq. (1)-(3), its weights, and its time on one vCPU of pf from
 * the cost model with
 * `params` (NULL: defaults). Graph inputs and outputs are the request's and response's and
 * cross no cut: they are the payload of the layers that read (gins) or make (gout_bytes) them. */
pl_sl_graph *pl_sl_from_graph(const pl_graph *g, const pl_platform *pf,
                              const pl_cost_params *params, pl_err *err);
/* An empty layer graph of n layers and t tensors (for tests and tools); tensors' `to`
 * arrays are the caller's to malloc. */
pl_sl_graph *pl_sl_new(int n, int n_tensors);
void pl_sl_free(pl_sl_graph *sg);

/* MOPAR's graph simplification (Algorithm 1, lines 2-6) to a fixed point: node elimination
 * merges a layer with one layer before it and one after into the one after when their memory
 * (weights + activations) differs by at most `threshold` (0.05) of its own; edge elimination merges
 * the tensors two layers then exchange into one edge. Counts both in sg. */
void pl_sl_eliminate(pl_sl_graph *sg, double threshold);

typedef enum {
    PL_SL_MOPAR,      /* Eq. (6): least cost, latency no worse than unsplit */
    PL_SL_UNSPLIT,    /* the whole model as one function */
    PL_SL_UNIFORM,    /* MOPAR's slice count, equal layers per slice */
    PL_SL_LATENCY_DP, /* MOPAR's slice count, least latency (AlpaServe-like DP) */
    PL_SL_NONSPLIT,   /* Tarnawski et al.'s non-contiguous split: an integer program on CBC,
                         least cost within MOPAR's latency bound (docs/serverless.md, "NonSplit") */
    PL_SL_CLOCKWORK,  /* Clockwork++ (AlpaServe, OSDI'23, §6): the unsplit function, its instances
                         re-placed at each window's boundary for that window's load and held through
                         it; its bill is what that policy bills serving the default trace
                         (pl_sl_serve_defaults; docs/serverless.md, "Clockwork++") */
    PL_SL_ALGO_COUNT
} pl_sl_algo;
const char *pl_sl_algo_name(pl_sl_algo a);
int pl_sl_algo_parse(const char *name); /* -1 when unknown */

/* Which plan of several wins, as AWS Lambda Power Tuning's three strategies choose a memory size
 * (its analyzer: docs/serverless.md, "The answer a user would choose"). */
typedef enum {
    PL_SL_COST,    /* the cheapest; with a cost tolerance, the fastest of those at most that
                      fraction dearer than the cheapest */
    PL_SL_SPEED,   /* the fastest */
    PL_SL_BALANCED /* the least W x bill / the dearest + (1 - W) x latency / the slowest, over
                      the plans compared (W: balanced_weight) */
} pl_sl_objective;

typedef struct pl_sl_opts {
    double threshold;         /* node elimination's memory similarity (0: 0.05) */
    bool no_elim;             /* skip the simplification */
    bool shm;                 /* cut tensors through shared memory (else the store) */
    double latency_slack;     /* MOPAR's latency bound: the unsplit model's x (1 + slack); 0, the
                                 paper's, allows no slower plan */
    pl_codec codec;           /* how cut tensors are compressed */
    pl_codec_cost codec_cost; /* its ratio and times (PL_CODEC_NONE: 1, 0, 0) */
    int front_cap;            /* the most labels a front of MOPAR's DP keeps (0:
                                 PL_SL_FRONT_CAP; 1 counts as 2) */
    long front_work;          /* the label extensions MOPAR's DP makes before it samples the
                                 earlier fronts (0: PL_SL_FRONT_WORK; docs/serverless.md,
                                 "Bounding the front") */
    double nonsplit_limit_s;  /* CBC's wall-clock limit on NonSplit's program (0: 10 s) */
    /* The objective (ties go to the cheaper plan) picks: the unsplit function's memory among
       MOPAR's two options (what it needs, a whole vCPU), which sets MOPAR's
       latency bound; MOPAR's plan among the partitions within that bound; and the answer on
       the front (pl_sl_front_make). Zeroed: COST with no tolerance, Eq. 6's least bill. */
    pl_sl_objective objective;
    double balanced_weight; /* BALANCED's W in [0, 1]: 1 weighs only the bill, 0 only the
                               latency (Power Tuning's balancedWeight; its default 0.5) */
    double cost_tolerance;  /* COST: how much dearer (a fraction, >= 0) than the cheapest a
                               faster plan may be and win (placer serverless: 0.01) */
    double window_s;        /* Clockwork++'s window (0: PL_SL_CLOCKWORK_WINDOW_S) */
} pl_sl_opts;

/* Clockwork++'s window by default: the replacement interval of AlpaServe's artifact for its
 * Azure v1 trace ("sr-replace-60", osdi23_artifact/general_model_exp.py of
 * github.com/alpa-projects/mms), seconds. */
#define PL_SL_CLOCKWORK_WINDOW_S 60.0

/* The labels a Pareto front of MOPAR's DP keeps at most by default: beyond it, evenly spaced
 * ones along the front, and the plan is no longer exact (pl_sl_plan.exact). */
#define PL_SL_FRONT_CAP 4096

/* The label extensions (an earlier front's label and a slice ending at the layer: one candidate
 * label) MOPAR's DP makes by default before it is cut short: from then on each earlier front is
 * extended through a few evenly spaced labels (its cheapest and fastest among them), so that
 * the rest costs about a quarter of it more, and the plan is no longer exact. The most a zoo
 * model's DP makes is 2.8 x 10^8, about 3.5 s (rnnlm_unrolled's front on
 * mopar-paper-lambda.json; docs/serverless.md, "Bounding the front"). */
#define PL_SL_FRONT_WORK 500000000L

typedef struct pl_sl_slice {
    int first, last;          /* layers [first, last] */
    double mem_mb;            /* the function's memory size */
    bool raised;              /* raised to a whole vCPU's above what the slice needs */
    double weight_mb, act_mb; /* what it needs: its layers' weights (shared ones once) and the
                                 most activation memory one of them holds */
    int eta;                  /* parallel degree */
    double compute_s;         /* its layers' time on its vCPUs at degree eta (Eq. 5's t_p + t_a) */
    double comm_s;            /* reading its inputs and writing its outputs (with the codec) */
    double invoke_s;          /* its invocation (pl_invocation): the round trip, the graph
                                 inputs it reads and the graph outputs it makes */
    double payload_bytes;     /* those graph inputs and outputs, raw */
    double time_s;            /* compute_s + comm_s + invoke_s */
    double billed_s;          /* compute_s + comm_s rounded up to the billing granularity: the
                                 invocation is the platform's, not the function's */
    double gb_s;              /* memory (GB) x billed_s */
    double usd;               /* its bill per request (memory, request, store) */
    double in_bytes, out_bytes; /* cut tensors read and written, raw */
} pl_sl_slice;

typedef struct pl_sl_plan {
    pl_sl_algo algo;
    pl_sl_slice *slices;
    int n;
    double latency_s; /* the slices one after the other (Eq. 5) */
    double usd;       /* per request */
    double gb_s;      /* per request */
    double bytes_moved;
    bool exact; /* the algorithm's search was not cut short: false when a Pareto front of
                   MOPAR's DP (the one that chose this plan or its slice count) passed its
                   cap and was thinned (pl_sl_opts.front_cap) or the DP passed its budget
                   (pl_sl_opts.front_work), or when CBC stopped NonSplit's program at its
                   limit unproven; true for pl_sl_price's */
    int *fn_of; /* NONSPLIT: each layer's slice (slices need not be contiguous; first and last
                   are then its lowest and highest layer); NULL: slice k is [first, last] */

    /* > 0: served by windows of this length (pl_sl_serve), as CLOCKWORK's is; CLOCKWORK's usd
       and gb_s are then what serving the default trace bills (memory held through each window),
       its slices' what one invocation would */
    double window_s;
} pl_sl_plan;

/* The plan of algorithm a on the (simplified) layer graph sg. `k` is the slice count for
 * UNIFORM and LATENCY_DP (0: what MOPAR chooses). Fails when a layer needs more memory than
 * the platform allows, or when a's partition does not fit (UNSPLIT: the whole model in one
 * function). When the whole model does not fit one function, MOPAR has no latency bound and
 * takes the cheapest partition that fits. *out (pl_sl_plan_free) is zeroed on failure. */
int pl_sl_plan_make(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, pl_sl_algo a,
                    int k, pl_sl_plan *out, pl_err *err);
/* The transport cut tensors take: shared memory when o->shm and the platform has it, else the
 * store, else shared memory (a platform has at least one). What the plan prices and what
 * `--run` uses. */
const pl_transport *pl_sl_transport(const pl_platform *pf, const pl_sl_opts *o);

/* Prices the partition whose slices end at layers ends[0] < ... < ends[n - 1] = sg->n - 1:
 * the one pricing every algorithm uses. Slice k's memory is what it needs (MOPAR's), or, when
 * vcpus[k] = v > 0 (vcpus may be NULL: all 0), at least v whole vCPUs' (v x λ, or the
 * platform's largest size when that is smaller): below one vCPU a
 * function's CPU share follows its memory, so the bill per unit of work is the same and the
 * slice runs faster; above, its degree η may grow. *out is the caller's (pl_sl_plan_free); -1 when
 * a slice does not fit, *out then freed and zeroed (what it held before the call is not freed: pass
 * a zeroed or freed plan). No err: the caller names the partition. */
int pl_sl_price(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, const int *ends,
                const int *vcpus, int n, pl_sl_plan *out);
/* Prices the non-contiguous plan whose layer l is in function fn_of[l] (0 .. n - 1, each used),
 * function k at mem_mb[k] MB (an allowed size), degree 1: NonSplit's pricing, the same bill as
 * pl_sl_price's. -1 when a function needs more memory than it has (*out zeroed). */
int pl_sl_price_sets(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                     const int *fn_of, const double *mem_mb, int n, pl_sl_plan *out);
/* ---- the cost-latency front and the answer (src/serverless/mopar.c) ---- */

/* Plans no other beats on both bill and latency, cheapest first (each faster than the one
 * before, up to rounding), and who found each. */
typedef struct pl_sl_front {
    pl_sl_plan *plans;
    int *by;         /* whose plan is stored: -1 the front's own DP, else a pl_sl_algo */
    unsigned *found; /* who found it (the same bill and latency): bit 0 the front's DP, bit
                        1 + a algorithm a */
    int n, cap;
    bool exact;      /* the DP's fronts kept every label (pl_sl_opts.front_cap) and it was not
                        cut short */
    bool cut_short;  /* the DP passed its budget (pl_sl_opts.front_work) and sampled */
    long extensions; /* the candidate labels the DP made: its work */
} pl_sl_front;

/* The front of every contiguous partition of sg, each slice at each of its memory options
 * (what it needs, then 1, 2, 3, 4, 8, ... whole vCPUs up to the platform's most: split points
 * x memory sizes x η), with no latency bound: MOPAR's Pareto DP run over all of them. -1 with
 * err when a layer does not fit (*out zeroed); free with pl_sl_front_free. */
int pl_sl_front_make(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                     pl_sl_front *out, pl_err *err);
/* Adds a copy of p (an algorithm's plan, p->algo its finder; on a layer graph of n_layers
 * layers) unless a plan of f is at least as cheap and as fast (when as cheap and as fast, up to
 * rounding, p->algo is added to that plan's finders); drops the plans p beats. */
void pl_sl_front_add(pl_sl_front *f, const pl_sl_plan *p, int n_layers);
void pl_sl_front_free(pl_sl_front *f);
/* The index of the plan o->objective picks among p[0 .. n - 1]; -1 when n is 0. */
int pl_sl_pick(const pl_sl_plan *p, int n, const pl_sl_opts *o);
/* The knee of a front p[0 .. n - 1]: with bills and latencies scaled to [0, 1] over it, the plan
 * farthest below the line from the cheapest to the fastest; the cheapest when none is below
 * (fewer than three plans, or all on the line). -1 when n is 0. */
int pl_sl_knee(const pl_sl_plan *p, int n);

/* Whether slice k of p holds layer l. */
bool pl_sl_slice_has(const pl_sl_plan *p, int k, int l);
void pl_sl_plan_free(pl_sl_plan *p);

/* ---- the plan as a plan of the one simulator (src/serverless/simplan.c) ----
 *
 * Semantics, exactly (docs/serverless.md, "One simulator"): function k of plan p is device
 * "fn<k>" of a cluster, its memory capacity the function's memory size (mem_mb); the transport
 * cut tensors take (pl_sl_transport) is one more device, "store" or "shm", linked both ways to
 * every function at its latency and bandwidth. A function runs its layers in visits: maximal
 * runs of consecutive layers it holds (a slice of a contiguous plan is one visit; a NonSplit
 * function may have several). Each visit, one after the other in layer order, is: a read of each
 * cut tensor the function takes in first there (a transfer store -> fn<k> of sl_move_s's read
 * time, one per tensor and reading function), its layers (each an op on fn<k> taking its part
 * of the slice's compute time: Eq. 5's t_p + t_a at the slice's memory and degree η, which sum
 * to the slice's compute_s), then a write of each cut tensor its layers make (a transfer
 * fn<k> -> store of the write time, once per tensor). A visit starts when the one before has
 * written everything, through zero-time ops and tokens on the store (an invocation after the
 * previous slice ends, as MOPAR chains them): nothing of one visit overlaps another, so the
 * makespan is the plan's latency_s, each visit's time the sum of its reads, layers and writes.
 * Memory: each function holds the runtime's base, its weights (f_w x, a shared weight once)
 * as weights and, while a layer runs, f_a x its activation memory; cut tensors carry no bytes
 * (a layer's activation memory already counts what it reads and writes), so the simulated peak
 * of a function is what the pricing says it needs, rounded down to the byte. */
typedef struct pl_sl_sim {
    pl_graph *g;
    pl_cluster *c; /* devices 0 .. n_fns - 1 the functions, device n_fns the transport */
    pl_cost *k;
    pl_plan *plan;
    int n_fns;
    int n_visits;
    int *visit_fn;  /* [n_visits]: its function */
    int *visit_end; /* [n_visits]: the op that ends it (all its writes arrived) */
    int *layer_op;  /* [layers]: the op of each layer */
} pl_sl_sim;

/* The simulator's graph, cluster, cost table and plan of plan p (made on sg, pf, o). Refuses,
 * "serverless plan (ALGO): PROBLEM", a plan the simulator could not run as priced: no
 * function, a layer in no function or in two, a contiguous plan whose slices do not follow one
 * another, a function whose memory is not a size pf allows or whose degree η is not 1 .. its
 * whole vCPUs. *out is zeroed on failure; free with pl_sl_sim_free. */
int pl_sl_sim_build(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                    const pl_sl_plan *p, pl_sl_sim *out, pl_err *err);
void pl_sl_sim_free(pl_sl_sim *s);
/* The plan checker on s (pl_plan_check), then the simulator (recorded, ports contention) and its
 * invariants (pl_sim_check: precedence, no overlap, order, memory within capacity), then the
 * plan's own figures: each function's time (its visits') and the latency equal to the
 * simulated ones within 1e-9 relative. -1 with err naming the first problem ("serverless
 * plan (mopar): function 1 ('fn1') needs 2300.0 MB at its peak (the runtime, its weights, its
 * largest layer's activations), more than its 2200 MB"; "...: function 2: the plan says
 * 304.500000 ms, the simulator 404.500000 ms"). r (may be NULL) gets the recorded result on success
 * (free it with pl_sim_result_free); zeroed on failure. */
int pl_sl_sim_check(const pl_sl_sim *s, const pl_sl_plan *p, pl_sim_result *r, pl_err *err);
/* The checker every plan `placer serverless` prints goes through: pl_sl_sim_build, then
 * pl_sl_sim_check; with `trace` (may be NULL) the simulated run is written there as Chrome trace
 * JSON (pl_sim_trace_write: one track per function, the transport and each link). 0, or -1 with
 * err set (the trace's file then as it was). */
int pl_sl_plan_check(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                     const pl_sl_plan *p, const char *trace, pl_err *err);

/* ---- serving a trace (src/serverless/serve.c) ---- */

/* A diurnal trace: the request rate moves between rps_min and rps_max as a sine of period
 * period_s (lowest at 0), for duration_s; arrivals are Poisson at that rate (or evenly spaced
 * when !poisson). Each function keeps an instance warm for keep_alive_s after its last use. */
typedef struct pl_sl_serve_opts {
    double duration_s, period_s, rps_min, rps_max, keep_alive_s;
    bool poisson;
    uint64_t seed;
} pl_sl_serve_opts;

typedef struct pl_sl_serve_result {
    long requests;
    double p50_s, p95_s, p99_s; /* request latency, arrival to the last slice's end */
    double mem_gb_avg;          /* memory of the live instances (busy or warm), time-averaged */
    double mem_gb_per_100rps;   /* mem_gb_avg per 100 requests per second of the trace */
    long instances, cold_starts;
    double busy_gb_s; /* billed: memory x busy time, over the trace */

    /* the bill: the plan's per invocation (pay per use, p->usd) when served on demand; by
       windows, the memory held (mem_gb_avg x duration_s) at usd_per_gb_s over the requests, plus
       what the plan's slices bill besides memory x time (requests, the store) */
    double usd_per_request;
} pl_sl_serve_result;

/* MOPAR's diurnal trace (§III-A1, Fig. 9) as `placer serverless --serve` replays it by default:
 * 600 s, one period, 250 to 1,250 requests a second, Poisson (seed 1), keep-alive 60 s. */
void pl_sl_serve_defaults(pl_sl_serve_opts *o);

/* What one replay may cost (docs/serverless.md, "Serving"): its invocations, duration_s x
 * rps_max x the plan's slices (about 0.2 us each here), and the instances alive at once
 * (about 100 bytes each); its memory does not grow with the requests. */
#define PL_SL_SERVE_INVOCATIONS_MAX 5e7
#define PL_SL_SERVE_INSTANCES_MAX 1000000

/* Serves the trace with plan p on platform pf: every request runs the slices one after the
 * other; a slice takes the warm idle instance of its function freed last, else starts one
 * (cold_start_s first). With p->window_s > 0 (Clockwork++'s policy, docs/serverless.md,
 * "Clockwork++") the trace is cut into windows of that length from 0 instead: each function holds
 * through a window as many instances as its requests in flight at once at most in that window
 * (the trace's own arrivals, known in advance: an oracle), keeping the previous window's where the
 * count allows and starting the others before the window (no cold start, no keep-alive), and memory
 * counts what is held. Deterministic for a seed. *r holds no pointers. -1 with err set when
 * the trace implies more invocations than allowed above (*r zeroed: nothing replayed), or
 * when the replay needs more live instances at once (*r then holds the replay up to where it
 * stopped, with at most PL_SL_SERVE_INSTANCES_MAX + 1 instances). */
int pl_sl_serve(const pl_sl_plan *p, const pl_platform *pf, const pl_sl_serve_opts *o,
                pl_sl_serve_result *r, pl_err *err);

/* ---- running slices for real (src/serverless/run.c) ---- */

/* A split (placer split's folder, or placer serverless -o) run as serverless functions on this
 * machine (docs/serverless.md, "Running the slices for real"): every slice (stage of the manifest)
 * is a function, one onnxruntime worker process of its own (pl_ort, one intra-op thread) that loads
 * only its stage file; the slices of a request run one after the other in the manifest's order, and
 * every tensor a slice sends to later ones goes through a Redis server (SET once by its maker, GET
 * by each reader), under keys "placer:<pid>:<run>:<request>:<tensor>" that are deleted after each
 * request and, whatever happens, at the end. */

/* A Redis server to pass tensors through: started by placer, or one given by its URL. */
typedef struct pl_sl_store pl_sl_store;
/* url "redis://HOST:PORT" connects to that server; NULL starts redis-server on a free local
 * port (bind 127.0.0.1, no persistence, a private temporary folder, killed with placer) and
 * waits up to 10 s for it to answer PING. NULL with err naming the server when it does not
 * start, refuses the connection or does not answer. */
pl_sl_store *pl_sl_store_open(const char *url, pl_err *err);
const char *pl_sl_store_url(const pl_sl_store *s); /* "redis://127.0.0.1:PORT" */
int pl_sl_store_pid(const pl_sl_store *s);         /* the server placer started, else -1 */
/* Disconnects; a server placer started is stopped (SIGTERM, SIGKILL after 2 s), reaped and its
 * folder removed. NULL is fine. */
void pl_sl_store_close(pl_sl_store *s);

typedef struct pl_sl_run_opts {
    const char *store_url; /* "redis://HOST:PORT"; NULL: start one (pl_sl_store_open) */
    bool shm;              /* tensors through shared memory instead (MOPAR's COM): a maker's
                              output stays a file in shared memory ($PLACER_SHM_DIR, else
                              /dev/shm; common.h pl_make_shm_dir) that each reader reads in
                              place; no store is opened */
    int repeat, warmup;    /* timed requests (0: 10) after untimed ones */
    unsigned seed;         /* of the random inputs, as placer run makes them (0: 1) */
    const char *cache_dir; /* where weightless stage files are inflated (pl_inflate_model);
                              NULL: pl_cache_dir("inflated") */
    const char *keep_dir;  /* non-NULL: an existing folder that gets the last request's graph
                              inputs and outputs as raw files (listed in the result) */
    /* non-NULL: called before each slice of each request (warm-ups count) with its worker's
       pid, e.g. to watch or kill it (the tests do) */
    void (*before_slice)(void *arg, int request, int slice, int pid);
    void *arg;
} pl_sl_run_opts;

typedef struct pl_sl_run_result {
    int n;                                  /* slices */
    int repeat;                             /* timed requests */
    double latency_median_s, latency_p95_s; /* one request: first slice invoked to last done */
    double *fn_s;                /* [n] median per function of its billed duration: its Redis
                                    GETs, its worker's run and its Redis SETs */
    double *fn_run_s;            /* [n] median of the onnxruntime part of fn_s */
    double *fn_rss_bytes;        /* [n] peak RSS of its worker process (VmHWM), node included */
    double bytes_through_store;  /* per request: tensor bytes SET plus bytes GET (with shm:
                                    written plus read through shared memory) */
    int ops_through_store;       /* per request: the SETs plus the GETs (with shm: the writes
                                    plus the reads) */
    struct pl_ort_file *tensors; /* with keep_dir: the graph inputs (made) and outputs */
    int n_tensors;
} pl_sl_run_result;

/* Runs the split in split_dir (pl_split_manifest_load's checks) `warmup` + `repeat` times as
 * above and measures it. A slice whose worker dies or fails, or a store that fails, stops the
 * run with an error naming the slice or the server; on success and on failure every worker
 * and a server placer started are stopped and reaped, and the run's keys deleted. r is filled
 * on success (free with pl_sl_run_result_free), zeroed on failure. */
int pl_sl_run(const char *split_dir, const pl_sl_run_opts *o, pl_sl_run_result *r, pl_err *err);
void pl_sl_run_result_free(pl_sl_run_result *r);
/* The bill of one measured request of plan p (what `serverless --run` reports beside the
 * plan's predicted p->usd): for each slice k < min(p->n, r->n), pl_platform_usd of its memory
 * p->slices[k].mem_mb for its measured billed duration r->fn_s[k] (request price included),
 * plus r->bytes_through_store in r->ops_through_store writes and reads at the price of the
 * transport o chooses (pl_sl_transport, pl_transport_usd). USD; reads its arguments only. */
double pl_sl_run_usd(const pl_platform *pf, const pl_sl_plan *p, const pl_sl_run_result *r,
                     const pl_sl_opts *o);

#endif
