/* catalog.h: VM catalogues: the configurations a deployment can rent (AutoDeep §III).
 *
 * A catalogue (placer-catalog/1, docs/catalogs.md) lists configurations: a CPU model and core
 * count, a GPU model and count, the interconnect between the GPUs, a price in USD per hour,
 * the provider, region, and the date and source of the price. Each becomes a finalized
 * pl_cluster (the CPU as the I/O device, the GPUs linked by the interconnect and to the CPU by
 * PCIe) that the cost model and the placement algorithms use as is, plus the feature vector
 * D_k the configuration search learns on.
 *
 * Ownership and failure: the readers return a catalogue the caller frees with
 * pl_catalog_free, its configurations' clusters with it (NULL on failure, err set: the
 * configuration, the JSON path and the problem). */
#ifndef PLACER_CATALOG_H
#define PLACER_CATALOG_H

#include "placer/cluster.h"

/* The paper's D_k, in this order: CPU cores, CPU clock (Hz), CUDA cores per GPU, GPU clock
 * (Hz), GPU memory bandwidth (bytes/s), GPU count. */
enum {
    PL_FEAT_CPU_CORES,
    PL_FEAT_CPU_CLOCK,
    PL_FEAT_CUDA_CORES,
    PL_FEAT_GPU_CLOCK,
    PL_FEAT_GPU_MEM_BW,
    PL_FEAT_GPU_COUNT,
    PL_N_FEATURES
};

typedef struct pl_vm_config {
    char *name;                /* unique in the catalogue: "p3.8xlarge" */
    char *provider, *region;   /* "aws", "us-east-1"; "" when not given */
    char *price_date;          /* "2025-06"; when the price was read */
    char *price_source;        /* where it was read */
    double price_usd_per_hour; /* > 0 */
    bool retired;              /* no longer rentable (kept for old papers' reproduction) */
    char *cpu_model, *gpu_model;
    int cpu_cores, gpu_count;       /* gpu_count >= 0 (0: CPU-only configuration) */
    pl_cluster *cluster;            /* finalized; usd_per_hour = price; io_device = the CPU */
    double features[PL_N_FEATURES]; /* raw, in the units above */
} pl_vm_config;

typedef struct pl_catalog {
    char *name;
    char *path;      /* as given to pl_catalog_load (NULL from a buffer) */
    char sha256[65]; /* of the file's bytes, hex (empty from a buffer): deploy reports both */
    pl_vm_config *configs;
    int n;
} pl_catalog;

/* Reads a placer-catalog/1 file. Every error names the file, the configuration (by name and
 * JSON path) and the field; one bad configuration fails the whole file (nothing is silently
 * skipped). */
pl_catalog *pl_catalog_load(const char *path, pl_err *err);
pl_catalog *pl_catalog_load_buffer(const char *buf, size_t len, const char *name, pl_err *err);
void pl_catalog_free(pl_catalog *c);
int pl_catalog_find(const pl_catalog *c, const char *name); /* -1 when absent */

/* The configuration search's inputs: each feature as log(1 + x), then scaled to [0, 1] over
 * the catalogue (min-max; a feature constant over the catalogue becomes 0). out:
 * n × PL_N_FEATURES, row-major. */
void pl_catalog_features(const pl_catalog *c, double *out);

#endif
