/* cluster.h: devices, the routes between them, and the built-in GPU spec table.
 *
 * A cluster is a set of devices plus, for every ordered pair, a route with a bandwidth and a
 * latency. Routes come from the file's direct links, or are derived from a topology of hosts
 * and switches: the bandwidth of a multi-hop route is its slowest hop and its latency the sum
 * (MOIRAI §III). Units are SI (design.md §3): bytes, seconds, bytes/s, flop/s.
 *
 * Ownership and failure: the readers, pl_cluster_new and pl_cluster_random return a cluster
 * the caller frees with pl_cluster_free (NULL on failure, err set); after pl_cluster_finalize
 * returns -1 the cluster is fit only for pl_cluster_free. Later modules only read it. */
#ifndef PLACER_CLUSTER_H
#define PLACER_CLUSTER_H

#include "placer/common.h"

/* Precisions with their own peak; an op's precision comes from its output dtype. */
typedef enum {
    PL_PREC_FP32,
    PL_PREC_FP16,
    PL_PREC_BF16,
    PL_PREC_INT8,
    PL_PREC_FP64,
    PL_PREC_COUNT
} pl_precision;
const char *pl_precision_name(pl_precision p); /* "fp32", ... */
pl_precision pl_precision_of_dtype(
    int dtype); /* float16 → FP16, bfloat16 → BF16, int8/uint8 → INT8, float64 → FP64, else FP32 */

typedef enum { PL_DEV_CPU, PL_DEV_GPU, PL_DEV_ACCEL } pl_dev_kind;
const char *pl_dev_kind_name(pl_dev_kind k); /* "cpu", "gpu", "accel" */

/* One row of the built-in table (../shared/facts/gpus.md). A peak of 0 means the device has
 * no fast path at that precision: the cost model then uses the FP32 peak. */
typedef struct pl_gpu_spec {
    const char *model;   /* canonical name, e.g. "V100-SXM2-16GB" */
    const char *aliases; /* comma-separated other accepted names, e.g. "V100,V100-16GB" */
    pl_dev_kind kind;
    double memory_bytes;
    double peak_flops_per_s[PL_PREC_COUNT];
    double mem_bandwidth_Bps;
    double launch_overhead_s;
    const char *source; /* where the figures come from */
    /* AutoDeep's D_k needs these (catalog.h). GPU: CUDA cores per GPU (per die for K80) and
     * boost clock; CPU: physical cores of the socket and base clock. Vendor figures (K). */
    int cores;
    double clock_hz;
    /* GPU rows: streaming multiprocessors (per die for K80), vendor figure (K). The GPU cost
     * rules count waves of GEMM tiles over them (docs/cost.md, "GPU kernels"); 0 on CPU rows. */
    int sms;
} pl_gpu_spec;

/* Case-insensitive match on the model or an alias; NULL when unknown. */
const pl_gpu_spec *pl_gpu_spec_find(const char *model);
const pl_gpu_spec *pl_gpu_specs(int *n);
/* For a message about an unknown model: up to three table names close to `word` (by name or
 * alias, case and ' ', '-', '_' ignored), "did you mean "A", "B"?", or else the whole table,
 * "the built-in models are A, B, ...". kind >= 0 (a pl_dev_kind) looks only at rows of that
 * kind; -1 at every row. Truncated to fit buf. */
void pl_gpu_spec_suggest(const char *word, int kind, char *buf, size_t n);

typedef struct pl_device {
    char *name; /* unique in the cluster: "gpu0" */
    pl_dev_kind kind;
    char *model; /* "V100-SXM2-16GB"; profiles and task-graph times match on it */
    char *host;  /* "" when not given */
    /* The memory bandwidth this device shares with the other devices of its host that give
     * one (docs/simulator.md, "Shared memory"): their memory-bound work is stretched while
     * they run at once. 0 when not given (nothing shared). */
    double host_mem_bandwidth_Bps;
    /* The cache the device keeps to itself (a core's L2), with host_mem_bandwidth_Bps: an op
     * moving B bytes draws only the part beyond it, max(0, 1 - private_cache_bytes / B), from
     * the shared memory. 0 when not given: every byte is shared. */
    double private_cache_bytes;
    /* With host_mem_bandwidth_Bps: what another device of the host costs an op that hides its
     * memory behind compute (its roofline memory term below its time), as a rate: while k
     * other devices of the host run ops that draw shared memory, the op takes k · (its bytes
     * beyond private_cache_bytes) / host_mem_stall_Bps longer (docs/simulator.md, "Shared
     * memory"). 0 when not given: no stall. */
    double host_mem_stall_Bps;
    /* With host_mem_bandwidth_Bps, rate and tau both or neither: what a request pays when its
     * tenant waited. Of what it keeps between requests, a fraction f(a) = 1 - exp(-a /
     * host_cold_tau_s) is gone from the caches after age a: its kept bytes (weights, graph
     * inputs), read again at host_cold_read_Bps, and the rest it warms (code, activation
     * buffers), host_cold_time_share of each op's own time. A request in a round of period P
     * pays per op (f(P) - f(own)) · (kept bytes / rate + share · its time), own its tenant's
     * work (the back-to-back period the profiles saw; docs/simulator.md, "Cold requests").
     * 0 when not given: requests are priced warm. */
    double host_cold_read_Bps;
    double host_cold_tau_s;
    double host_cold_time_share;
    /* With the cold figures, optional: the most of a tenant's kept bytes the caches hold
     * between requests. A tenant keeping K > host_cold_keep_bytes bytes on the devices with
     * cold figures already reads the rest from memory back to back (its profile times have
     * it), so a wait makes only host_cold_keep_bytes / K of each kept byte cold. 0 when not
     * given: the caches hold all of them. */
    double host_cold_keep_bytes;
    /* A CPU's GEMM kernel computes a MatMul's or Gemm's output columns in tiles of this many
     * (onnxruntime's MLAS with AVX-512: 16 fp32 a register), so an op with N > 1 columns costs
     * the FLOPs of ceil(N / tile) * tile; N = 1 takes the GEMV path and is not padded
     * (docs/cost.md, "GEMM column tiles"). 0 when not given: no padding. */
    int gemm_tile_columns;
    /* A CPU's rate for the bytes an op reads again of a tensor larger than its private cache
     * that it read moments before (pl_op.bytes_reread: an RNN's R at each step), served by
     * the caches beyond the core: measured as onnxruntime's LSTM at batch 1 reads R with R of
     * 4-16 MiB (tools/measure_cpu.py --reread-only). A tensor within private_cache_bytes is
     * read again at mem_bandwidth_Bps, the rate measured in that cache. Neither is a fraction
     * the calibration fits (eff_memory): they are the kernel's own rates. 0 when not given:
     * re-reads are priced as every other byte. */
    double reread_Bps;
    double memory_bytes;
    double peak_flops_per_s[PL_PREC_COUNT];
    double mem_bandwidth_Bps;
    double launch_overhead_s;
    /* What running a stage costs beyond its ops (docs/simulator.md, "Stages"): a fixed
     * stage_overhead_s per stage (a session run), stage_tensor_s per tensor the stage takes in
     * or gives out, and those tensors' bytes at stage_copy_Bps; 0 when not given (not
     * charged). */
    double stage_overhead_s;
    double stage_copy_Bps;
    double stage_tensor_s;
    /* The file says this device is this machine's CPU ("this_machine": true): the verbs price
     * it with the calibration cached for this machine's CPU model (docs/calibrate.md,
     * "Calibrated by default"). */
    bool this_machine;
    /* A CPU's cores (docs/clusters.md, "Cores"): 0 or 1 is one. The peak and bandwidth above
     * are one core's; an op's compute runs on all of them at pl_device_speed (docs/cost.md,
     * "CPU cores"), and a split runs the device's stages with this many onnxruntime intra-op
     * threads. parallel_eff: what each core beyond the first adds, in (0, 1]. */
    int cores;
    double parallel_eff;
    /* The devices that are this device's cores listed one by one ("core_devices"): the same
     * silicon seen as separate devices, so a plan uses this device or them, never both
     * (pl_cluster_same_silicon); NULL, 0 when none. */
    int *core_devs;
    int n_core_devs;
} pl_device;

/* What n workers computing at once give, counted in workers, when each beyond the first adds
 * e of one (0 < e <= 1): a CPU device's cores (pl_device_speed) and a serverless function's
 * vCPUs (docs/serverless.md, "CPU follows memory") share this one rule. */
static inline double pl_parallel_speed(double n, double e)
{
    return n > 1 ? 1 + (n - 1) * e : 1;
}

/* A device's compute speed in cores: pl_parallel_speed of its cores (1 for one core). */
static inline double pl_device_speed(const pl_device *d)
{
    return d->cores > 1 ? pl_parallel_speed(d->cores, d->parallel_eff) : 1;
}

/* ---- measured collectives (docs/clusters.md, "Collectives") ----
 * A collective's time as a segmented linear curve of its bytes: on segment k, from
 * from_bytes[k] up to the next segment's, time = a_s + b_s_per_byte * bytes (TAG §IV-C).
 * `placer profile --collectives` measures and fits them; a cluster file may carry them. */
typedef enum { PL_COLL_ALLREDUCE, PL_COLL_BROADCAST, PL_COLL_P2P, PL_COLL_COUNT } pl_collective;
const char *pl_collective_name(pl_collective k); /* "allreduce", "broadcast", "p2p" */

typedef struct pl_coll_segment {
    double from_bytes, a_s, b_s_per_byte;
} pl_coll_segment;

/* Segments by increasing from_bytes; n == 0: no curve. */
typedef struct pl_coll_curve {
    pl_coll_segment *seg;
    int n;
} pl_coll_curve;

/* The curves that apply to the devices of one host, or to every device (host NULL), for
 * collectives over `devices` devices (0: over any number). */
typedef struct pl_coll_scope {
    char *host;
    int devices;
    pl_coll_curve curve[PL_COLL_COUNT];
    char *file; /* the placer-collectives/1 file they came from, or NULL when inline */
} pl_coll_scope;

/* The curve's time for `bytes`: the segment whose range holds it (the first below its start,
 * the last beyond the measured sizes); -1 when the curve is empty. */
double pl_coll_curve_s(const pl_coll_curve *cv, double bytes);
/* Least-squares segmented fit of times s[i] at sizes bytes[i] (increasing, n >= 2), at most
 * max_segments segments of at least 3 points each (docs/clusters.md, "Fitting"): relative
 * errors, slopes >= 0, the fewest segments within reach of the best. Fills *out (free with
 * pl_coll_curve_free); returns the relative RMS error, or -1 with err set. */
double pl_coll_fit(const double *bytes, const double *s, int n, int max_segments,
                   pl_coll_curve *out, pl_err *err);
void pl_coll_curve_free(pl_coll_curve *cv);
/* Reads a placer-collectives/1 file into *out (host NULL); errors "FILE: PATH: PROBLEM". */
int pl_coll_load(const char *path, pl_coll_scope *out, pl_err *err);
void pl_coll_scope_free(pl_coll_scope *s);

typedef struct pl_cluster {
    char *name;
    char *path;      /* file it was read from, or NULL */
    char sha256[65]; /* of the file; "" for clusters built in code */
    pl_device *devs;
    int n_devs;
    /* Routes, row-major [from * n_devs + to]. Diagonal: bandwidth INFINITY, latency 0. */
    double *bw_Bps;
    double *lat_s;
    int *hops;           /* physical hops of the route; 0 on the diagonal */
    int io_device;       /* device holding graph inputs/outputs, or -1 (inputs everywhere) */
    double usd_per_hour; /* 0 when not rentable / not given */
    int cap_devs;
    /* The file's "collectives" (pl_cluster_collective_s); NULL, 0 when it gives none. */
    pl_coll_scope *colls;
    int n_colls;
} pl_cluster;

/* Reads a placer-cluster/1 file (docs/clusters.md). Every error names the file, the JSON
 * path and the problem; a bandwidth without a unit, a negative or absurd value, an unknown
 * GPU model, a pair of devices with no route, are refused. */
pl_cluster *pl_cluster_load(const char *path, pl_err *err);
pl_cluster *pl_cluster_load_buffer(const char *buf, size_t len, const char *name, pl_err *err);
struct pl_json;
/* A cluster object at a JSON cursor (catalogues embed clusters). */
pl_cluster *pl_cluster_parse(const struct pl_json *obj, pl_err *err);
/* bandwidth_Bps (required) and latency_s (default 0) of the link object at `l`, refused
 * outside PL_LINK_BW_MIN..PL_LINK_BW_MAX and above PL_LINK_LATENCY_MAX (json.h) with a hint:
 * the cluster reader's links, and the catalogue reader's interconnect objects. */
int pl_cluster_read_link_figures(const struct pl_json *l, double *bw, double *lat, pl_err *err);
void pl_cluster_free(pl_cluster *c);
int pl_cluster_find(const pl_cluster *c, const char *device_name); /* -1 if absent */
/* Devices a and b (a != b) are the same silicon: one is a device whose cores the other is
 * ("core_devices"), so a plan must not use both. */
bool pl_cluster_same_silicon(const pl_cluster *c, int a, int b);
/* Removes from the finalized cluster c the devices d whose drop[d] is true (drop holds
 * c->n_devs entries), in place: one view of a machine out of a file that gives two (placer
 * multi keeps the cores of docs/clusters.md, "Cores"). The devices kept keep their order,
 * names and figures; every route between two of them stays as it was, even one that ran
 * through a removed device (the silicon is still there, only no longer a device to place on);
 * io_device follows its device; a kept device's core_devs lists only its cores that are kept.
 * path, sha256, the name and the collectives stay the file's. Returns the number of devices
 * removed; -1 with err set and c unchanged when that would remove every device, or the io
 * device. */
int pl_cluster_drop_devices(pl_cluster *c, const bool *drop, pl_err *err);
/* The shared memory systems (docs/simulator.md, "Shared memory"): dom[d] is the index of the
 * domain of device d, or -1 when d gives no host_mem_bandwidth_Bps; devices giving one with
 * the same host share a domain, numbered in order of their first device. Returns the number
 * of domains (0: nothing shared). dom holds n_devs entries. */
int pl_cluster_mem_domains(const pl_cluster *c, int *dom);

/* The measured time of collective `kind` over n_devices devices moving `bytes` (the
 * AllReduce's or the broadcast's buffer, the message of a point-to-point transfer), from the
 * cluster-wide curves (no "host"): those measured with n_devices devices, else those given
 * for any number; p2p is between two devices, whatever n_devices says. -1 when the cluster
 * gives none: the caller then uses the link model. */
double pl_cluster_collective_s(const pl_cluster *c, pl_collective kind, int n_devices,
                               double bytes);
/* The same for the collective over devices devs[0..n): the curves of their host when they
 * all share one that has some, else the cluster-wide ones. */
double pl_cluster_collective_on_s(const pl_cluster *c, pl_collective kind, const int *devs, int n,
                                  double bytes);

/* ---- building in code (tests, synthetic benchmarks) ---- */
pl_cluster *pl_cluster_new(const char *name);
/* Adds a device; `model` may name a built-in spec (its figures are copied) or be any label
 * when the figures are set by hand afterwards. Returns its index. */
int pl_cluster_add_device(pl_cluster *c, const char *name, pl_dev_kind kind, const char *model);
/* A direct link a → b (and b → a when both_ways). Must come before pl_cluster_finalize. */
void pl_cluster_set_link(pl_cluster *c, int a, int b, double bw_Bps, double lat_s, bool both_ways);
/* Derives routes for pairs without a direct link (shortest in hops through other devices,
 * then widest); fails naming a pair that has no route. */
int pl_cluster_finalize(pl_cluster *c, pl_err *err);

/* ---- random topologies (src/cluster/random.c; docs/train.md, "Random topologies") ----
 * TAG's generator: 1-6 machines (host "m<i>"), each with 1-8 GPUs of one of three types
 * (V100-SXM2-32GB, GTX-1080-Ti, P100-PCIE-16GB: TAG's testbed's), linked to the machine's
 * switch at one bandwidth drawn in 64-160 Gb/s; each machine's switch reaches one network
 * switch at its own bandwidth drawn in 20-50 Gb/s (whole Gb/s). The same seed gives the same
 * cluster. */
typedef struct pl_cluster_random_opts {
    int min_gpus, max_gpus; /* the total GPUs drawn again until within; 0: 1 and 48 */
} pl_cluster_random_opts;
/* The placer-cluster/1 document (malloc'd text, the caller frees) of seed's topology; NULL with
 * err set when the caps admit no topology. o may be NULL. */
char *pl_cluster_random_json(uint64_t seed, const pl_cluster_random_opts *o, pl_err *err);
/* That document read by pl_cluster_load_buffer: finalized, named "random-<seed>". */
pl_cluster *pl_cluster_random(uint64_t seed, const pl_cluster_random_opts *o, pl_err *err);

/* Time to move `bytes` from device a to b: latency + bytes / bandwidth; 0 when a == b. */
static inline double pl_cluster_xfer_s(const pl_cluster *c, int a, int b, double bytes)
{
    if (a == b) return 0;
    size_t k = (size_t)a * c->n_devs + b;
    return c->lat_s[k] + bytes / c->bw_Bps[k];
}

#endif
