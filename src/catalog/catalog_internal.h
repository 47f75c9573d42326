/* catalog_internal.h: what the catalogue files share (load.c: the placer-catalog/1 reader;
 * build.c: named interconnects and the cluster and features of one configuration). */
#ifndef PLACER_CATALOG_INTERNAL_H
#define PLACER_CATALOG_INTERNAL_H

#include "placer/catalog.h"

/* One direction of a link between two devices. */
typedef struct cat_link {
    double bw_Bps, lat_s;
} cat_link;

/* A named interconnect ("pcie3", "nvlink2", ...): the per-pair GPU-to-GPU link and the
 * CPU-to-GPU link it implies. Returns -1 when the name is unknown. */
int cat_named_link(const char *name, cat_link *gpu_gpu, cat_link *host);
/* The names, for messages: "\"pcie3\", \"pcie4\", ..." */
const char *cat_link_names(void);
/* A named host link: only the PCIe names. Returns -1 when the name is unknown. */
int cat_named_host_link(const char *name, cat_link *host);

/* Builds v->cluster (finalized) from the models and counts in v: cpu0 then gpu0..gpuN-1, the
 * CPU's peaks scaled by v->cpu_cores over the row's cores. */
pl_cluster *cat_build(const pl_vm_config *v, cat_link gpu_gpu, cat_link host, pl_err *err);
/* Fills v->features from the spec rows of v's models (0 for what a model lacks). */
void cat_features(pl_vm_config *v);

/* Frees what one configuration owns (not the struct itself). */
void cat_free_config(pl_vm_config *v);

#endif
