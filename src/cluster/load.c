/* load.c: the placer-cluster/1 reader (docs/clusters.md).
 *
 * The reader builds the cluster with the public building calls, then derives every route
 * itself over a graph of devices *and* switches (cl_routes), because pl_cluster_finalize only
 * knows devices. Links from the three forms ("links", "topology_links", "bandwidth_matrix")
 * go into one node-by-node link matrix; a pair given twice is refused, naming both places. */
#include "cluster_internal.h"
#include "placer/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Magnitudes outside these are almost certainly a unit mistake (design.md §6: a unit-less
 * bandwidth once produced badly unbalanced splits), so they are refused with a hint. */
/* (The link and price limits, shared with the catalogue reader, are in json.h.) */
#define MEM_MIN 1e6    /* 1 MB */
#define MEM_MAX 1.2e18 /* about 1 EiB */
#define FLOPS_MIN 1e6  /* 1 MFLOP/s */
#define FLOPS_MAX 1e18 /* 1 EFLOP/s */
#define MEMBW_MIN 1e6  /* 1 MB/s */
#define MEMBW_MAX 1e14 /* 100 TB/s */
#define LAUNCH_MAX 1.0 /* s */
#define CACHE_MIN 1e3  /* 1 kB: a core's L2 or the like */
#define CACHE_MAX 1e10 /* 10 GB */
#define GEMM_TILE_MAX 1024
/* Cores of one CPU device: the largest servers have a few hundred. */
#define CORES_MAX 4096
/* Devices plus switches in one file: the reader's matrices are nodes x nodes. Larger
 * synthetic clusters are built in code. */
#define NODES_MAX 1024

/* Where a link came from, to name the first place when a pair is given twice. */
typedef enum { SRC_NONE, SRC_LINKS, SRC_TOPOLOGY, SRC_MATRIX } link_src;
typedef struct origin {
    unsigned char src;
    int i, j;
} origin;

typedef struct reader {
    const pl_json *root;
    pl_cluster *c;
    const char **sw; /* switch names (owned by the JSON document) */
    int n_sw;
    int n; /* nodes: devices first, then switches */
    double *bw, *lat;
    origin *from;
    pl_err *err;
} reader;

/* ---- small helpers ---- */

static const char *node_name(const reader *r, int k)
{
    return k < r->c->n_devs ? r->c->devs[k].name : r->sw[k - r->c->n_devs];
}

/* Device or switch index, -1 when the name is neither. */
static int node_find(const reader *r, const char *name)
{
    int d = pl_cluster_find(r->c, name);
    if (d >= 0) return d;
    for (int s = 0; s < r->n_sw; s++)
        if (strcmp(r->sw[s], name) == 0) return r->c->n_devs + s;
    return -1;
}

/* ---- devices ---- */

static const char *const device_fields[] = {"name",
                                            "count",
                                            "kind",
                                            "model",
                                            "host",
                                            "host_mem_bandwidth_Bps",
                                            "host_mem_stall_Bps",
                                            "private_cache_bytes",
                                            "host_cold_read_Bps",
                                            "host_cold_tau_s",
                                            "host_cold_time_share",
                                            "host_cold_keep_bytes",
                                            "gemm_tile_columns",
                                            "reread_Bps",
                                            "memory_bytes",
                                            "peak_flops_per_s",
                                            "mem_bandwidth_Bps",
                                            "launch_overhead_s",
                                            "stage_overhead_s",
                                            "stage_copy_Bps",
                                            "stage_tensor_s",
                                            "this_machine",
                                            "cores",
                                            "parallel_efficiency",
                                            "core_devices",
                                            "description",
                                            "source",
                                            NULL};

static int read_kind(const pl_json *d, bool *given, pl_dev_kind *kind, pl_err *err)
{
    const char *s = NULL;
    int rc = pl_json_opt_string(d, "kind", &s, err);
    *given = rc > 0;
    if (rc <= 0) return rc;
    for (int k = PL_DEV_CPU; k <= PL_DEV_ACCEL; k++)
        if (strcmp(s, pl_dev_kind_name((pl_dev_kind)k)) == 0) return *kind = (pl_dev_kind)k, 0;
    pl_json at = pl_json_at(d, "kind");
    return pl_json_fail(&at, err, "unknown kind \"%s\"; expected \"cpu\", \"gpu\" or \"accel\"", s);
}

/* "peak_flops_per_s": {"fp32": "15.7 TFLOP/s", ...}, or one rate meaning fp32. Returns 1
 * when fp32 was given. */
static int read_peaks(const pl_json *d, double peaks[PL_PREC_COUNT], pl_err *err)
{
    pl_json p = pl_json_at(d, "peak_flops_per_s");
    if (!p.v || json_is_null(p.v)) return 0;
    if (!json_is_object(p.v)) {
        if (pl_json_quantity(d, "peak_flops_per_s", PL_UNIT_FLOPS_PER_S, &peaks[0], err) < 0)
            return -1;
        return pl_json_check_range(d, "peak_flops_per_s", peaks[0], FLOPS_MIN, FLOPS_MAX,
                                   PL_UNIT_FLOPS_PER_S, "a peak", NULL, err) < 0
                   ? -1
                   : 1;
    }
    const char *names[PL_PREC_COUNT + 1] = {0};
    for (int k = 0; k < PL_PREC_COUNT; k++)
        names[k] = pl_precision_name((pl_precision)k);
    if (pl_json_check_fields(&p, names, err) < 0) return -1;
    int fp32 = 0;
    for (int k = 0; k < PL_PREC_COUNT; k++) {
        int rc = pl_json_opt_quantity(&p, names[k], PL_UNIT_FLOPS_PER_S, &peaks[k], err);
        if (rc < 0) return -1;
        /* 0 says "no fast path" for the narrow types; fp32 is what everything falls back on */
        if (rc && (k == PL_PREC_FP32 || peaks[k] != 0) &&
            pl_json_check_range(&p, names[k], peaks[k], FLOPS_MIN, FLOPS_MAX, PL_UNIT_FLOPS_PER_S,
                                "a peak", NULL, err) < 0)
            return -1;
        if (rc && k == PL_PREC_FP32) fp32 = 1;
    }
    return fp32;
}

/* The cost of a stage beyond its ops (docs/clusters.md): optional, 0 when absent. */
static int read_stage_figures(const pl_json *d, pl_device *t, pl_err *err)
{
    if (pl_json_opt_quantity(d, "stage_overhead_s", PL_UNIT_SECONDS, &t->stage_overhead_s, err) <
            0 ||
        pl_json_check_range(d, "stage_overhead_s", t->stage_overhead_s, 0, LAUNCH_MAX,
                            PL_UNIT_SECONDS, "a stage overhead", "write e.g. \"15 us\"", err) < 0)
        return -1;
    if (pl_json_opt_quantity(d, "stage_tensor_s", PL_UNIT_SECONDS, &t->stage_tensor_s, err) < 0 ||
        pl_json_check_range(d, "stage_tensor_s", t->stage_tensor_s, 0, LAUNCH_MAX, PL_UNIT_SECONDS,
                            "a stage's cost per tensor", "write e.g. \"3 us\"", err) < 0)
        return -1;
    int bw =
        pl_json_opt_quantity(d, "stage_copy_Bps", PL_UNIT_BYTES_PER_S, &t->stage_copy_Bps, err);
    if (bw < 0) return -1;
    return bw ? pl_json_check_range(d, "stage_copy_Bps", t->stage_copy_Bps, MEMBW_MIN, MEMBW_MAX,
                                    PL_UNIT_BYTES_PER_S, "a stage copy bandwidth",
                                    "write e.g. \"9 GB/s\"", err)
              : 0;
}

/* "gemm_tile_columns": optional, a whole number of columns; only a CPU's GEMMs are tiled so
 * (the GPU rules count their own tiles, docs/cost.md). */
static int read_gemm_tile(const pl_json *d, pl_device *t, pl_err *err)
{
    int64_t tile = 0;
    int rc = pl_json_opt_int(d, "gemm_tile_columns", &tile, err);
    if (rc <= 0) return rc;
    pl_json at = pl_json_at(d, "gemm_tile_columns");
    if (tile < 1 || tile > GEMM_TILE_MAX)
        return pl_json_fail(&at, err,
                            "gemm_tile_columns %lld is outside 1..%d (the columns a CPU's GEMM "
                            "kernel computes at once, e.g. 16)",
                            (long long)tile, GEMM_TILE_MAX);
    if (t->kind != PL_DEV_CPU)
        return pl_json_fail(&at, err,
                            "gemm_tile_columns applies to a CPU device only (a GPU's GEMM tiles "
                            "are in its cost rules)");
    t->gemm_tile_columns = (int)tile;
    return 0;
}

/* "reread_Bps": optional, a CPU's (the GPU rules price an RNN's kernels their own way). */
static int read_reread(const pl_json *d, pl_device *t, pl_err *err)
{
    int rc = pl_json_opt_quantity(d, "reread_Bps", PL_UNIT_BYTES_PER_S, &t->reread_Bps, err);
    if (rc <= 0) return rc;
    if (pl_json_check_range(d, "reread_Bps", t->reread_Bps, MEMBW_MIN, MEMBW_MAX,
                            PL_UNIT_BYTES_PER_S, "a re-read rate", "write e.g. \"24 GB/s\"",
                            err) < 0)
        return -1;
    if (t->kind == PL_DEV_CPU) return 0;
    pl_json at = pl_json_at(d, "reread_Bps");
    return pl_json_fail(&at, err,
                        "reread_Bps applies to a CPU device only (a GPU's RNN kernels are "
                        "priced by its cost rules)");
}

/* "cores" (a whole number, default 1) and "parallel_efficiency" (in (0, 1], required with
 * more than one core): a CPU's (docs/clusters.md, "Cores"). */
static int read_cores(const pl_json *d, pl_device *t, pl_err *err)
{
    int64_t n = 1;
    pl_json at = pl_json_at(d, "cores"), ae = pl_json_at(d, "parallel_efficiency");
    if (pl_json_opt_int(d, "cores", &n, err) < 0 ||
        pl_json_opt_number(d, "parallel_efficiency", &t->parallel_eff, err) < 0)
        return -1;
    if (n < 1 || n > CORES_MAX)
        return pl_json_fail(&at, err, "cores %lld is outside 1..%d (a CPU's cores, e.g. 2)",
                            (long long)n, CORES_MAX);
    if (t->kind != PL_DEV_CPU && (pl_json_has(d, "cores") || pl_json_has(d, "parallel_efficiency")))
        return pl_json_fail(pl_json_has(d, "cores") ? &at : &ae, err,
                            "cores and parallel_efficiency apply to a CPU device only (a GPU's "
                            "parallelism is in its peak and its cost rules)");
    if (pl_json_has(d, "parallel_efficiency") && !(t->parallel_eff > 0 && t->parallel_eff <= 1))
        return pl_json_fail(&ae, err,
                            "parallel_efficiency %g is outside (0, 1] (each core beyond the "
                            "first adds this fraction of one)",
                            t->parallel_eff);
    if (n > 1 && !pl_json_has(d, "parallel_efficiency"))
        return pl_json_fail(d, err,
                            "%lld cores need \"parallel_efficiency\": what each core beyond the "
                            "first adds, in (0, 1] (measured: docs/cost.md, \"CPU cores\")",
                            (long long)n);
    t->cores = (int)n;
    return 0;
}

/* An optional figure that means something only beside a shared memory (`shared`: whether
 * host_mem_bandwidth_Bps was given), in [lo, hi]: the stall and the private cache. */
typedef struct beside_shared {
    const char *field, *needs, *why, *what, *hint;
    pl_unit unit;
    double lo, hi;
} beside_shared;

static int read_beside_shared(const pl_json *d, const char *name, int shared,
                              const beside_shared *f, double *v, pl_err *err)
{
    int rc = pl_json_opt_quantity(d, f->field, f->unit, v, err);
    if (rc <= 0) return rc;
    pl_json at = pl_json_at(d, f->field);
    if (!shared)
        return pl_json_fail(&at, err, "device \"%s\": %s needs \"host_mem_bandwidth_Bps\": %s",
                            name, f->needs, f->why);
    return pl_json_check_range(d, f->field, *v, f->lo, f->hi, f->unit, f->what, f->hint, err);
}

static const beside_shared STALL = {"host_mem_stall_Bps",
                                    "a stall",
                                    "it is what the memory its host shares costs",
                                    "a stall rate",
                                    "write e.g. \"140 GB/s\"",
                                    PL_UNIT_BYTES_PER_S,
                                    MEMBW_MIN,
                                    MEMBW_MAX};
static const beside_shared CACHE = {"private_cache_bytes",
                                    "a private cache",
                                    "it says which bytes an op keeps off the memory its host "
                                    "shares",
                                    "a private cache",
                                    "write e.g. \"1 MiB\"",
                                    PL_UNIT_BYTES,
                                    CACHE_MIN,
                                    CACHE_MAX};

static const beside_shared COLD_READ = {"host_cold_read_Bps",
                                        "a cold read rate",
                                        "it prices the bytes a request finds gone from the "
                                        "caches its host shares",
                                        "a cold read rate",
                                        "write e.g. \"9 GB/s\"",
                                        PL_UNIT_BYTES_PER_S,
                                        MEMBW_MIN,
                                        MEMBW_MAX};
static const beside_shared COLD_TAU = {"host_cold_tau_s",
                                       "a cold time constant",
                                       "it says how fast the caches its host shares forget",
                                       "a cold time constant",
                                       "write e.g. \"40 ms\"",
                                       PL_UNIT_SECONDS,
                                       1e-6,
                                       1e3};

/* host_cold_keep_bytes: optional, and only beside a cold read rate, whose kept bytes it
 * bounds. */
static int read_cold_keep(const pl_json *d, const char *name, pl_device *t, pl_err *err)
{
    int rc = pl_json_opt_quantity(d, "host_cold_keep_bytes", PL_UNIT_BYTES,
                                  &t->host_cold_keep_bytes, err);
    if (rc <= 0) return rc;
    pl_json at = pl_json_at(d, "host_cold_keep_bytes");
    if (!(t->host_cold_read_Bps > 0))
        return pl_json_fail(&at, err,
                            "device \"%s\": host_cold_keep_bytes needs \"host_cold_read_Bps\" "
                            "and \"host_cold_tau_s\": it bounds the bytes read cold",
                            name);
    return pl_json_check_range(d, "host_cold_keep_bytes", t->host_cold_keep_bytes, CACHE_MIN,
                               CACHE_MAX, PL_UNIT_BYTES, "a cold cache", "write e.g. \"32 MiB\"",
                               err);
}

/* The cold figures come as a pair: one without the other prices nothing. */
static int read_cold(const pl_json *d, const char *name, int shared, pl_device *t, pl_err *err)
{
    if (read_beside_shared(d, name, shared, &COLD_READ, &t->host_cold_read_Bps, err) < 0 ||
        read_beside_shared(d, name, shared, &COLD_TAU, &t->host_cold_tau_s, err) < 0)
        return -1;
    pl_json as = pl_json_at(d, "host_cold_time_share");
    if (pl_json_opt_number(d, "host_cold_time_share", &t->host_cold_time_share, err) < 0) return -1;
    if (pl_json_has(d, "host_cold_time_share") && !(t->host_cold_read_Bps > 0))
        return pl_json_fail(&as, err,
                            "device \"%s\": host_cold_time_share needs \"host_cold_read_Bps\" "
                            "and \"host_cold_tau_s\": it is a part of a cold request's price",
                            name);
    if (!(t->host_cold_time_share >= 0 && t->host_cold_time_share <= 10))
        return pl_json_fail(&as, err,
                            "device \"%s\": host_cold_time_share %g is outside [0, 10] (the part "
                            "of an op's own time a cold request spends again, e.g. 0.3)",
                            name, t->host_cold_time_share);
    if (read_cold_keep(d, name, t, err) < 0) return -1;
    if ((t->host_cold_read_Bps > 0) == (t->host_cold_tau_s > 0)) return 0;
    bool rate = t->host_cold_read_Bps > 0;
    pl_json at = pl_json_at(d, rate ? COLD_READ.field : COLD_TAU.field);
    return pl_json_fail(&at, err,
                        "device \"%s\" gives \"%s\" but not \"%s\": a cold request is priced "
                        "from both (docs/simulator.md, \"Cold requests\")",
                        name, rate ? COLD_READ.field : COLD_TAU.field,
                        rate ? COLD_TAU.field : COLD_READ.field);
}

/* The memory bandwidth the device shares with its host's, and what only means something beside
 * it (check_shared): the stall, the cache the device keeps to itself and the cold figures. All
 * optional. */
static int read_shared(const pl_json *d, const char *name, pl_device *t, pl_err *err)
{
    int rc = pl_json_opt_quantity(d, "host_mem_bandwidth_Bps", PL_UNIT_BYTES_PER_S,
                                  &t->host_mem_bandwidth_Bps, err);
    if (rc < 0 || (rc && pl_json_check_range(d, "host_mem_bandwidth_Bps", t->host_mem_bandwidth_Bps,
                                             MEMBW_MIN, MEMBW_MAX, PL_UNIT_BYTES_PER_S,
                                             "a shared memory bandwidth", "write e.g. \"120 GB/s\"",
                                             err) < 0))
        return -1;
    if (read_beside_shared(d, name, rc, &STALL, &t->host_mem_stall_Bps, err) < 0) return -1;
    if (read_beside_shared(d, name, rc, &CACHE, &t->private_cache_bytes, err) < 0) return -1;
    return read_cold(d, name, rc, t, err);
}

/* The figures a device gives itself, over what it inherited. `full` says whether it gave
 * all of them (needed when the model is not in the table). */
static int read_figures(const pl_json *d, pl_device *t, bool *full, pl_err *err)
{
    int mem = pl_json_opt_quantity(d, "memory_bytes", PL_UNIT_BYTES, &t->memory_bytes, err);
    if (mem < 0) return -1;
    if (mem && pl_json_check_range(d, "memory_bytes", t->memory_bytes, MEM_MIN, MEM_MAX,
                                   PL_UNIT_BYTES, "a memory", "write e.g. \"16 GiB\"", err) < 0)
        return -1;
    int fp32 = read_peaks(d, t->peak_flops_per_s, err);
    if (fp32 < 0) return -1;
    int bw = pl_json_opt_quantity(d, "mem_bandwidth_Bps", PL_UNIT_BYTES_PER_S,
                                  &t->mem_bandwidth_Bps, err);
    if (bw < 0) return -1;
    if (bw && pl_json_check_range(d, "mem_bandwidth_Bps", t->mem_bandwidth_Bps, MEMBW_MIN,
                                  MEMBW_MAX, PL_UNIT_BYTES_PER_S, "a memory bandwidth",
                                  "write e.g. \"900 GB/s\"", err) < 0)
        return -1;
    if (pl_json_opt_quantity(d, "launch_overhead_s", PL_UNIT_SECONDS, &t->launch_overhead_s, err) <
            0 ||
        pl_json_check_range(d, "launch_overhead_s", t->launch_overhead_s, 0, LAUNCH_MAX,
                            PL_UNIT_SECONDS, "a launch overhead", "write e.g. \"5 us\"", err) < 0)
        return -1;
    if (read_stage_figures(d, t, err) < 0 || read_gemm_tile(d, t, err) < 0 ||
        read_reread(d, t, err) < 0)
        return -1;
    *full = mem && fp32 && bw;
    return 0;
}

static int unknown_model(const pl_json *d, const char *model, pl_err *err)
{
    if (!model)
        return pl_json_fail(d, err,
                            "a device needs a \"model\" from the built-in table, or \"kind\", "
                            "\"memory_bytes\", \"peak_flops_per_s\" (with fp32) and "
                            "\"mem_bandwidth_Bps\"");
    char hint[700];
    pl_gpu_spec_suggest(model, -1, hint, sizeof hint);
    pl_json at = pl_json_at(d, "model");
    return pl_json_fail(&at, err,
                        "unknown model \"%s\"; %s (or describe the device with kind, "
                        "memory_bytes, peak_flops_per_s.fp32 and mem_bandwidth_Bps)",
                        model, hint);
}

/* A device's figures: the table row of its model, then its own fields. *model is the name
 * the device keeps: the row's canonical one, or the file's label for a device described in
 * full. */
static int read_template(const pl_json *d, pl_device *t, const char **model, pl_err *err)
{
    const char *given = NULL;
    bool kind_given, full;
    if (pl_json_opt_string(d, "model", &given, err) < 0 ||
        read_kind(d, &kind_given, &t->kind, err) < 0)
        return -1;
    const pl_gpu_spec *s = given ? pl_gpu_spec_find(given) : NULL;
    if (s) {
        if (!kind_given) t->kind = s->kind;
        t->memory_bytes = s->memory_bytes;
        memcpy(t->peak_flops_per_s, s->peak_flops_per_s, sizeof t->peak_flops_per_s);
        t->mem_bandwidth_Bps = s->mem_bandwidth_Bps;
        t->launch_overhead_s = s->launch_overhead_s;
    } else {
        t->launch_overhead_s = t->kind == PL_DEV_CPU ? 1e-6 : 5e-6; /* specs.c's assumption */
    }
    if (read_figures(d, t, &full, err) < 0) return -1;
    if (s) return *model = s->model, 0;
    if (kind_given && full) return *model = given ? given : "", 0;
    return unknown_model(d, given, err);
}

/* host_mem_bandwidth_Bps (docs/clusters.md): optional. The devices of one host that give it
 * share one memory system, so it needs a host, the same figure on each of them, and at least
 * the device's own mem_bandwidth_Bps (one device alone cannot draw more than the memory it
 * shares). Checked on device k once it is added. */
static int check_shared(reader *r, const pl_json *d, int k)
{
    const pl_device *v = &r->c->devs[k];
    if (!(v->host_mem_bandwidth_Bps > 0)) return 0;
    pl_json at = pl_json_at(d, "host_mem_bandwidth_Bps");
    if (!*v->host)
        return pl_json_fail(&at, r->err,
                            "device \"%s\" gives a shared memory bandwidth but no \"host\": the "
                            "devices of one host share it, so name the host",
                            v->name);
    if (v->host_mem_bandwidth_Bps < v->mem_bandwidth_Bps)
        return pl_json_fail(&at, r->err,
                            "device \"%s\": %.4g GB/s is below its own mem_bandwidth_Bps "
                            "(%.4g GB/s): the memory its host shares must carry at least what "
                            "one device draws alone",
                            v->name, v->host_mem_bandwidth_Bps / 1e9, v->mem_bandwidth_Bps / 1e9);
    for (int e = 0; e < k; e++) {
        const pl_device *u = &r->c->devs[e];
        if (u->host_mem_bandwidth_Bps > 0 && strcmp(u->host, v->host) == 0 &&
            u->host_mem_bandwidth_Bps != v->host_mem_bandwidth_Bps)
            return pl_json_fail(&at, r->err,
                                "device \"%s\" gives %.4g GB/s, device \"%s\" %.4g GB/s: the "
                                "devices of host \"%s\" share one memory system, so they must "
                                "give the same figure",
                                v->name, v->host_mem_bandwidth_Bps / 1e9, u->name,
                                u->host_mem_bandwidth_Bps / 1e9, v->host);
    }
    return 0;
}

static int add_one(reader *r, const pl_json *d, const char *name, const pl_device *t,
                   const char *model, const char *host)
{
    if (!*name) return pl_json_fail(d, r->err, "a device name must not be empty");
    if (r->c->n_devs >= NODES_MAX)
        return pl_json_fail(d, r->err, "more than %d devices and switches", NODES_MAX);
    if (pl_cluster_find(r->c, name) >= 0) {
        pl_json at = pl_json_at(d, "name");
        return pl_json_fail(&at, r->err, "device \"%s\" is declared twice", name);
    }
    int k = pl_cluster_add_device(r->c, name, t->kind, model);
    pl_device *dev = &r->c->devs[k];
    free(dev->host);
    dev->host = pl_strdup(host ? host : "");
    dev->memory_bytes = t->memory_bytes;
    memcpy(dev->peak_flops_per_s, t->peak_flops_per_s, sizeof t->peak_flops_per_s);
    dev->mem_bandwidth_Bps = t->mem_bandwidth_Bps;
    dev->launch_overhead_s = t->launch_overhead_s;
    dev->stage_overhead_s = t->stage_overhead_s;
    dev->stage_copy_Bps = t->stage_copy_Bps;
    dev->stage_tensor_s = t->stage_tensor_s;
    dev->this_machine = t->this_machine;
    dev->host_mem_bandwidth_Bps = t->host_mem_bandwidth_Bps;
    dev->private_cache_bytes = t->private_cache_bytes;
    dev->host_mem_stall_Bps = t->host_mem_stall_Bps;
    dev->host_cold_read_Bps = t->host_cold_read_Bps;
    dev->host_cold_tau_s = t->host_cold_tau_s;
    dev->host_cold_time_share = t->host_cold_time_share;
    dev->host_cold_keep_bytes = t->host_cold_keep_bytes;
    dev->gemm_tile_columns = t->gemm_tile_columns;
    dev->reread_Bps = t->reread_Bps;
    dev->cores = t->cores, dev->parallel_eff = t->parallel_eff;
    return check_shared(r, d, k);
}

/* One entry of "devices": one device, or `count` of them named NAME0, NAME1, ... */
static int read_device(reader *r, const pl_json *d)
{
    const char *name, *model = "", *host = NULL;
    int64_t count = 1;
    pl_device t = {0};
    if (pl_json_check_fields(d, device_fields, r->err) < 0 ||
        pl_json_string(d, "name", &name, r->err) < 0 ||
        pl_json_opt_string(d, "host", &host, r->err) < 0 ||
        pl_json_opt_int(d, "count", &count, r->err) < 0 ||
        pl_json_opt_bool(d, "this_machine", &t.this_machine, r->err) < 0 ||
        read_template(d, &t, &model, r->err) < 0 || read_shared(d, name, &t, r->err) < 0 ||
        read_cores(d, &t, r->err) < 0)
        return -1;
    if (pl_json_has(d, "core_devices") && pl_json_has(d, "count")) {
        pl_json at = pl_json_at(d, "core_devices");
        return pl_json_fail(&at, r->err,
                            "core_devices names one device's cores: give it on a device "
                            "without \"count\"");
    }
    if (count < 1 || count > NODES_MAX) {
        pl_json at = pl_json_at(d, "count");
        return pl_json_fail(&at, r->err, "count %lld is outside 1..%d", (long long)count,
                            NODES_MAX);
    }
    if (!pl_json_has(d, "count")) return add_one(r, d, name, &t, model, host);
    for (int64_t i = 0; i < count; i++) {
        char full[256];
        snprintf(full, sizeof full, "%s%lld", name, (long long)i);
        if (add_one(r, d, full, &t, model, host) < 0) return -1;
    }
    return 0;
}

/* One name of device k's "core_devices", resolved into core_devs. */
static int read_core_device(reader *r, const pl_json *e, int k)
{
    pl_cluster *c = r->c;
    int j = e->v && json_is_string(e->v) ? pl_cluster_find(c, json_string_value(e->v)) : -2;
    if (j == -2) return pl_json_fail(e, r->err, "a device name must be a string");
    if (j < 0) return pl_json_fail(e, r->err, "unknown device \"%s\"", json_string_value(e->v));
    const char *why = j == k                          ? "is the device itself"
                      : c->devs[j].kind != PL_DEV_CPU ? "is not a CPU"
                      : c->devs[j].n_core_devs        ? "has core_devices of its own"
                                                      : NULL;
    for (int a = 0; !why && a < c->n_devs; a++)
        if (pl_cluster_same_silicon(c, a, j)) why = "is already the core of a device";
    if (why) return pl_json_fail(e, r->err, "device \"%s\" %s", c->devs[j].name, why);
    c->devs[k].core_devs[c->devs[k].n_core_devs++] = j;
    return 0;
}

/* "core_devices": the devices that are device k's cores, one by one (docs/clusters.md,
 * "Cores"); together they have its cores. */
static int read_core_devices(reader *r, const pl_json *d)
{
    pl_json list;
    const char *name;
    int rc = pl_json_opt_array(d, "core_devices", &list, r->err);
    if (rc <= 0) return rc;
    if (pl_json_string(d, "name", &name, r->err) < 0) return -1;
    pl_device *w = &r->c->devs[pl_cluster_find(r->c, name)];
    size_t n = pl_json_len(&list);
    if (w->kind != PL_DEV_CPU || n < 2)
        return pl_json_fail(&list, r->err,
                            "core_devices lists the cores of a CPU device, at least two");
    int k = (int)(w - r->c->devs), sum = 0;
    for (int a = 0; a < r->c->n_devs; a++)
        if (pl_cluster_same_silicon(r->c, a, k))
            return pl_json_fail(&list, r->err, "device \"%s\" is a core of \"%s\" already", name,
                                r->c->devs[a].name);
    w->core_devs = pl_calloc(n, sizeof *w->core_devs);
    for (size_t i = 0; i < n; i++) {
        pl_json e = pl_json_index(&list, i);
        if (read_core_device(r, &e, k) < 0) return -1;
        sum += r->c->devs[w->core_devs[i]].cores > 1 ? r->c->devs[w->core_devs[i]].cores : 1;
    }
    if (sum != (w->cores > 1 ? w->cores : 1))
        return pl_json_fail(&list, r->err,
                            "the core devices have %d cores together, device \"%s\" %d: they "
                            "must be the same cores",
                            sum, w->name, w->cores > 1 ? w->cores : 1);
    return 0;
}

static int read_devices(reader *r)
{
    pl_json devs;
    if (pl_json_array(r->root, "devices", &devs, r->err) < 0) return -1;
    if (pl_json_len(&devs) == 0)
        return pl_json_fail(&devs, r->err, "a cluster needs at least one device");
    for (size_t i = 0; i < pl_json_len(&devs); i++) {
        pl_json d = pl_json_index(&devs, i);
        if (read_device(r, &d) < 0) return -1;
    }
    for (size_t i = 0; i < pl_json_len(&devs); i++) {
        pl_json d = pl_json_index(&devs, i);
        if (read_core_devices(r, &d) < 0) return -1;
    }
    return 0;
}

static int read_switches(reader *r)
{
    pl_json sw;
    int rc = pl_json_opt_array(r->root, "switches", &sw, r->err);
    if (rc <= 0) return rc;
    r->sw = pl_calloc(pl_json_len(&sw), sizeof *r->sw);
    for (size_t i = 0; i < pl_json_len(&sw); i++) {
        pl_json s = pl_json_index(&sw, i);
        const char *name;
        if (pl_json_string(&s, NULL, &name, r->err) < 0) return -1;
        if (!*name) return pl_json_fail(&s, r->err, "a switch name must not be empty");
        if (r->c->n_devs + r->n_sw >= NODES_MAX)
            return pl_json_fail(&s, r->err, "more than %d devices and switches", NODES_MAX);
        if (node_find(r, name) >= 0)
            return pl_json_fail(&s, r->err, "\"%s\" is already the name of a %s", name,
                                pl_cluster_find(r->c, name) >= 0 ? "device" : "switch");
        r->sw[r->n_sw++] = name;
    }
    return 0;
}

/* ---- links ---- */

static void origin_path(const origin *o, char *buf, size_t n)
{
    if (o->src == SRC_LINKS)
        snprintf(buf, n, "$.links[%d]", o->i);
    else if (o->src == SRC_TOPOLOGY)
        snprintf(buf, n, "$.topology_links[%d]", o->i);
    else
        snprintf(buf, n, "$.bandwidth_matrix.bandwidth_Bps[%d][%d]", o->i, o->j);
}

/* Records link a → b; `at` is the cursor blamed when the pair was already given. */
static int put_link(reader *r, const pl_json *at, int a, int b, double bw, double lat, origin o)
{
    size_t k = (size_t)a * r->n + b;
    if (r->from[k].src != SRC_NONE) {
        char first[96];
        origin_path(&r->from[k], first, sizeof first);
        return pl_json_fail(at, r->err, "the link from \"%s\" to \"%s\" is already given at %s",
                            node_name(r, a), node_name(r, b), first);
    }
    r->bw[k] = bw, r->lat[k] = lat, r->from[k] = o;
    return 0;
}

/* A field naming a device or switch. */
static int read_end(const reader *r, const pl_json *l, const char *field, int *out)
{
    const char *name;
    if (pl_json_string(l, field, &name, r->err) < 0) return -1;
    if ((*out = node_find(r, name)) >= 0) return 0;
    const char **names = pl_malloc(((size_t)r->n + 1) * sizeof *names);
    for (int k = 0; k < r->n; k++)
        names[k] = node_name(r, k);
    const char *near = pl_json_closest(name, names, (size_t)r->n);
    pl_json at = pl_json_at(l, field);
    pl_json_fail(&at, r->err, "unknown device or switch \"%s\"%s%s%s", name,
                 near ? "; did you mean \"" : "", near ? near : "", near ? "\"?" : "");
    free(names);
    return -1;
}

int pl_cluster_read_link_figures(const pl_json *l, double *bw, double *lat, pl_err *err)
{
    *lat = 0;
    if (pl_json_quantity(l, "bandwidth_Bps", PL_UNIT_BYTES_PER_S, bw, err) < 0 ||
        pl_json_check_range(l, "bandwidth_Bps", *bw, PL_LINK_BW_MIN, PL_LINK_BW_MAX,
                            PL_UNIT_BYTES_PER_S, "a link bandwidth",
                            "write e.g. \"25 GB/s\" or \"100 Gb/s\" (b = bits); leave out a "
                            "missing link",
                            err) < 0 ||
        pl_json_opt_quantity(l, "latency_s", PL_UNIT_SECONDS, lat, err) < 0)
        return -1;
    return pl_json_check_range(l, "latency_s", *lat, 0, PL_LINK_LATENCY_MAX, PL_UNIT_SECONDS,
                               "a latency", "write e.g. \"5 us\"", err);
}

static int read_link(reader *r, const pl_json *l, int i, bool topology)
{
    static const char *const fields[] = {
        "from", "to", "bandwidth_Bps", "latency_s", "both_ways", "description", NULL};
    static const char *const tfields[] = {"a",         "b",           "bandwidth_Bps",
                                          "latency_s", "description", NULL};
    int a, b;
    double bw, lat;
    bool both = topology;
    if (pl_json_check_fields(l, topology ? tfields : fields, r->err) < 0 ||
        read_end(r, l, topology ? "a" : "from", &a) < 0 ||
        read_end(r, l, topology ? "b" : "to", &b) < 0 ||
        pl_cluster_read_link_figures(l, &bw, &lat, r->err) < 0 ||
        (!topology && pl_json_opt_bool(l, "both_ways", &both, r->err) < 0))
        return -1;
    if (a == b) return pl_json_fail(l, r->err, "a link from \"%s\" to itself", node_name(r, a));
    origin o = {topology ? SRC_TOPOLOGY : SRC_LINKS, i, 0};
    if (put_link(r, l, a, b, bw, lat, o) < 0) return -1;
    return both ? put_link(r, l, b, a, bw, lat, o) : 0;
}

static int read_links(reader *r, const char *field, bool topology)
{
    pl_json ls;
    int rc = pl_json_opt_array(r->root, field, &ls, r->err);
    if (rc <= 0) return rc;
    for (size_t i = 0; i < pl_json_len(&ls); i++) {
        pl_json l = pl_json_index(&ls, i);
        if (read_link(r, &l, (int)i, topology) < 0) return -1;
    }
    return 0;
}

/* ---- bandwidth matrix ---- */

/* "devices": the order of rows and columns; fills idx[]. */
static int matrix_devices(const reader *r, const pl_json *m, int **idx, size_t *n)
{
    pl_json names;
    if (pl_json_array(m, "devices", &names, r->err) < 0) return -1;
    *n = pl_json_len(&names);
    *idx = pl_malloc((*n + 1) * sizeof **idx);
    for (size_t i = 0; i < *n; i++) {
        pl_json e = pl_json_index(&names, i);
        const char *name;
        if (pl_json_string(&e, NULL, &name, r->err) < 0) return -1;
        if (((*idx)[i] = pl_cluster_find(r->c, name)) < 0)
            return pl_json_fail(&e, r->err, "unknown device \"%s\"", name);
        for (size_t j = 0; j < i; j++)
            if ((*idx)[j] == (*idx)[i])
                return pl_json_fail(&e, r->err, "device \"%s\" is listed twice", name);
    }
    return 0;
}

/* A row of an n-by-n matrix: an array of n entries. */
static int matrix_row(const reader *r, const pl_json *rows, size_t i, size_t n, pl_json *row)
{
    *row = pl_json_index(rows, i);
    if (pl_json_array(row, NULL, row, r->err) < 0) return -1;
    if (pl_json_len(row) != n)
        return pl_json_fail(row, r->err, "a row has %zu entries; the matrix is %zu by %zu",
                            pl_json_len(row), n, n);
    return 0;
}

/* latency_s: one time for every pair, or a matrix like bandwidth_Bps. */
static int matrix_latency(const reader *r, const pl_json *m, size_t i, size_t j, size_t n,
                          double *lat)
{
    pl_json l = pl_json_at(m, "latency_s"), row;
    *lat = 0;
    if (!l.v || !json_is_array(l.v)) {
        if (pl_json_opt_quantity(m, "latency_s", PL_UNIT_SECONDS, lat, r->err) < 0) return -1;
        return pl_json_check_range(m, "latency_s", *lat, 0, PL_LINK_LATENCY_MAX, PL_UNIT_SECONDS,
                                   "a latency", NULL, r->err);
    }
    if (pl_json_len(&l) != n)
        return pl_json_fail(&l, r->err, "%zu rows for %zu devices", pl_json_len(&l), n);
    if (matrix_row(r, &l, i, n, &row) < 0) return -1;
    pl_json e = pl_json_index(&row, j);
    if (pl_json_opt_quantity(&e, NULL, PL_UNIT_SECONDS, lat, r->err) < 0) return -1;
    return pl_json_check_range(&e, NULL, *lat, 0, PL_LINK_LATENCY_MAX, PL_UNIT_SECONDS, "a latency",
                               NULL, r->err);
}

static int matrix_entry(reader *r, const pl_json *m, const pl_json *row, size_t i, size_t j,
                        size_t n, const int *idx)
{
    pl_json e = pl_json_index(row, j);
    double bw = 0, lat;
    if (i == j)
        return e.v && !json_is_null(e.v)
                   ? pl_json_fail(&e, r->err, "the diagonal must be null (a device to itself)")
                   : 0;
    int rc = pl_json_opt_quantity(&e, NULL, PL_UNIT_BYTES_PER_S, &bw, r->err);
    if (rc < 0) return -1;
    if (!rc) return 0; /* null: no direct link, a route is derived */
    if (pl_json_check_range(&e, NULL, bw, PL_LINK_BW_MIN, PL_LINK_BW_MAX, PL_UNIT_BYTES_PER_S,
                            "a link bandwidth",
                            "write e.g. \"44.26 Gb/s\" (b = bits) or \"25 GB/s\"", r->err) < 0 ||
        matrix_latency(r, m, i, j, n, &lat) < 0)
        return -1;
    origin o = {SRC_MATRIX, (int)i, (int)j};
    return put_link(r, &e, idx[i], idx[j], bw, lat, o);
}

static int read_matrix(reader *r)
{
    static const char *const fields[] = {"devices",     "bandwidth_Bps", "latency_s",
                                         "description", "source",        NULL};
    pl_json m, rows, row;
    int rc = pl_json_opt_object(r->root, "bandwidth_matrix", &m, r->err);
    if (rc <= 0) return rc;
    int *idx = NULL;
    size_t n;
    rc = -1;
    if (pl_json_check_fields(&m, fields, r->err) < 0 || matrix_devices(r, &m, &idx, &n) < 0 ||
        pl_json_array(&m, "bandwidth_Bps", &rows, r->err) < 0)
        goto out;
    if (pl_json_len(&rows) != n) {
        pl_json_fail(&rows, r->err, "%zu rows for %zu devices", pl_json_len(&rows), n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (matrix_row(r, &rows, i, n, &row) < 0) goto out;
        for (size_t j = 0; j < n; j++)
            if (matrix_entry(r, &m, &row, i, j, n, idx) < 0) goto out;
    }
    rc = 0;
out:
    free(idx);
    return rc;
}

/* ---- routes ---- */

/* Routes over devices and switches; only device pairs are kept. */
static int derive_routes(reader *r)
{
    pl_cluster *c = r->c;
    int n = r->n, nd = c->n_devs;
    size_t sz = (size_t)n * n;
    double *bw = pl_calloc(sz, sizeof *bw), *lat = pl_calloc(sz, sizeof *lat);
    int *hops = pl_calloc(sz, sizeof *hops);
    bool *want = pl_calloc((size_t)n, sizeof *want);
    for (int k = 0; k < nd; k++)
        want[k] = true;
    cl_routes(n, r->bw, r->lat, want, bw, lat, hops);
    int rc = 0;
    for (int a = 0; a < nd && rc == 0; a++)
        for (int b = 0; b < nd && rc == 0; b++) {
            size_t k = (size_t)a * n + b, kc = (size_t)a * c->cap_devs + b;
            if (a != b && hops[k] < 0 && !pl_cluster_same_silicon(c, a, b))
                rc = pl_json_fail(r->root, r->err,
                                  "no route from device \"%s\" to device \"%s\": add a link, or "
                                  "connect both to a switch",
                                  c->devs[a].name, c->devs[b].name);
            c->bw_Bps[kc] = bw[k], c->lat_s[kc] = lat[k], c->hops[kc] = hops[k];
        }
    free(bw);
    free(lat);
    free(hops);
    free(want);
    return rc < 0 ? -1 : pl_cluster_finalize(c, r->err);
}

static int read_connections(reader *r)
{
    r->n = r->c->n_devs + r->n_sw;
    size_t sz = (size_t)r->n * r->n;
    r->bw = pl_calloc(sz, sizeof *r->bw);
    r->lat = pl_calloc(sz, sizeof *r->lat);
    r->from = pl_calloc(sz, sizeof *r->from);
    if (read_links(r, "links", false) < 0 || read_links(r, "topology_links", true) < 0 ||
        read_matrix(r) < 0)
        return -1;
    return derive_routes(r);
}

/* ---- the cluster ---- */

static const char *const cluster_fields[] = {
    "format",           "name",        "description", "source",   "usd_per_hour",
    "io_device",        "devices",     "links",       "switches", "topology_links",
    "bandwidth_matrix", "collectives", NULL};

/* The name when the file gives none: its base name without ".json". */
static int read_header(reader *r)
{
    const pl_json *o = r->root;
    /* a file says what it is; a cluster embedded in a catalogue need not */
    if ((o->step == PL_JSON_ROOT || pl_json_has(o, "format")) &&
        pl_json_check_format(o, "placer-cluster/1", r->err) < 0)
        return -1;
    const char *name = NULL;
    if (pl_json_check_fields(o, cluster_fields, r->err) < 0 ||
        pl_json_opt_string(o, "name", &name, r->err) < 0 ||
        pl_json_opt_quantity(o, "usd_per_hour", PL_UNIT_USD_PER_HOUR, &r->c->usd_per_hour, r->err) <
            0 ||
        pl_json_check_range(o, "usd_per_hour", r->c->usd_per_hour, 0, PL_USD_PER_HOUR_MAX,
                            PL_UNIT_USD_PER_HOUR, "a price", NULL, r->err) < 0)
        return -1;
    free(r->c->name);
    r->c->name = name ? pl_strdup(name) : pl_file_stem(o->file, "cluster");
    return 0;
}

static int read_io_device(reader *r)
{
    const char *name;
    int rc = pl_json_opt_string(r->root, "io_device", &name, r->err);
    if (rc <= 0) return rc;
    if ((r->c->io_device = pl_cluster_find(r->c, name)) >= 0) return 0;
    pl_json at = pl_json_at(r->root, "io_device");
    return pl_json_fail(&at, r->err, "unknown device \"%s\"", name);
}

pl_cluster *pl_cluster_parse(const struct pl_json *obj, pl_err *err)
{
    reader r = {.root = obj, .c = pl_cluster_new(""), .err = err};
    int rc = read_header(&r) < 0 || read_devices(&r) < 0 || read_switches(&r) < 0 ||
                     read_connections(&r) < 0 || read_io_device(&r) < 0 ||
                     cl_read_collectives(obj, r.c, err) < 0
                 ? -1
                 : 0;
    free(r.sw);
    free(r.bw);
    free(r.lat);
    free(r.from);
    if (rc == 0) return r.c;
    pl_cluster_free(r.c);
    return NULL;
}

pl_cluster *pl_cluster_load_buffer(const char *buf, size_t len, const char *name, pl_err *err)
{
    pl_json_doc *doc = pl_json_parse(buf, len, name, err);
    if (!doc) return NULL;
    pl_json root = pl_json_root(doc);
    pl_cluster *c = pl_cluster_parse(&root, err);
    pl_json_close(doc);
    return c;
}

pl_cluster *pl_cluster_load(const char *path, pl_err *err)
{
    size_t len;
    char *buf = pl_read_file(path, &len, err);
    if (!buf) return NULL;
    pl_cluster *c = pl_cluster_load_buffer(buf, len, path, err);
    if (c) pl_sha256_buffer(buf, len, c->sha256), c->path = pl_strdup(path);
    free(buf);
    return c;
}
