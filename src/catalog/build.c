/* build.c: named interconnects, and the cluster and the AutoDeep feature vector of one
 * configuration (docs/catalogs.md).
 *
 * A configuration is a star with a full mesh: every GPU is linked to the CPU over PCIe and
 * to every other GPU over the interconnect, one direct link per pair at the figure below.
 * That is a deliberate simplification of real topologies (board switches, the NVLink
 * cube-mesh): a cluster file (examples/clusters/) models those exactly, and a catalogue may
 * embed one. Bandwidths are per direction; latencies are assumptions (1-2 us per PCIe or
 * NVLink hop, as in examples/clusters). */
#include "catalog_internal.h"

#include <stdio.h>
#include <string.h>

#define GBps 1e9
#define US 1e-6

/* facts/gpus.md (K): PCIe 3.0 x16 about 15.75 GB/s per direction, PCIe 4.0 x16 about
 * 31.5 GB/s. CPU to GPU crosses the root complex and one slot (1 + 2 us); GPU to GPU peer
 * copies cross two slots (2 + 2 us). */
static const cat_link pcie3_host = {15.75 * GBps, 3 * US}, pcie4_host = {31.5 * GBps, 3 * US};

static const struct {
    const char *name;
    cat_link gpu_gpu;
    const cat_link *host;
} named[] = {
    {"pcie3", {15.75 * GBps, 4 * US}, &pcie3_host},
    {"pcie4", {31.5 * GBps, 4 * US}, &pcie4_host},
    /* V100 NVLink2: 6 links x 25 GB/s per direction per GPU, in the hybrid cube-mesh some
     * pairs have two links, some one and some none (relayed over two hops): 25 GB/s is what
     * every pair gets at least. V100 hosts are PCIe 3.0. */
    {"nvlink2", {25 * GBps, 2 * US}, &pcie3_host},
    /* A100 NVLink3: 12 links x 25 GB/s = 300 GB/s per direction per GPU (600 bidirectional),
     * all-to-all through NVSwitch, so one pair can use all of it (the simulator's one send and
     * one receive port per device then shares it). A100 hosts are PCIe 4.0. */
    {"nvlink3", {300 * GBps, 2 * US}, &pcie4_host},
    {"nvswitch", {300 * GBps, 2 * US}, &pcie4_host},
    /* H100 NVLink4: 18 links x 25 GB/s = 450 GB/s per direction (900 bidirectional) through
     * NVSwitch. H100 hosts have PCIe 5.0, which facts/gpus.md does not give: PCIe 4.0 is the
     * conservative figure. */
    {"nvlink4", {450 * GBps, 2 * US}, &pcie4_host},
};

int cat_named_link(const char *name, cat_link *gpu_gpu, cat_link *host)
{
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(name, named[i].name) == 0) {
            *gpu_gpu = named[i].gpu_gpu;
            *host = *named[i].host;
            return 0;
        }
    return -1;
}

const char *cat_link_names(void)
{
    return "\"pcie3\", \"pcie4\", \"nvlink2\", \"nvlink3\", \"nvswitch\", \"nvlink4\"";
}

int cat_named_host_link(const char *name, cat_link *host)
{
    if (strcmp(name, "pcie3") == 0) return *host = pcie3_host, 0;
    if (strcmp(name, "pcie4") == 0) return *host = pcie4_host, 0;
    return -1;
}

/* The socket's peaks belong to the row's core count; a configuration renting more or fewer
 * cores (a cloud's vCPUs, a second socket) gets them in proportion. */
static void scale_cpu(pl_device *d, const pl_gpu_spec *s, int cores)
{
    if (!s || s->cores <= 0 || cores <= 0 || cores == s->cores) return;
    double f = (double)cores / s->cores;
    for (int p = 0; p < PL_PREC_COUNT; p++)
        d->peak_flops_per_s[p] *= f;
}

pl_cluster *cat_build(const pl_vm_config *v, cat_link gpu_gpu, cat_link host, pl_err *err)
{
    pl_cluster *c = pl_cluster_new(v->name);
    int cpu = pl_cluster_add_device(c, "cpu0", PL_DEV_CPU, v->cpu_model);
    scale_cpu(&c->devs[cpu], pl_gpu_spec_find(v->cpu_model), v->cpu_cores);
    for (int k = 0; k < v->gpu_count; k++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", k);
        int g = pl_cluster_add_device(c, name, PL_DEV_GPU, v->gpu_model);
        pl_cluster_set_link(c, cpu, g, host.bw_Bps, host.lat_s, true);
        for (int o = cpu + 1; o < g; o++)
            pl_cluster_set_link(c, o, g, gpu_gpu.bw_Bps, gpu_gpu.lat_s, true);
    }
    if (pl_cluster_finalize(c, err) < 0) {
        pl_cluster_free(c);
        return NULL;
    }
    c->io_device = cpu;
    c->usd_per_hour = v->price_usd_per_hour;
    return c;
}

void cat_features(pl_vm_config *v)
{
    const pl_gpu_spec *cpu = pl_gpu_spec_find(v->cpu_model);
    const pl_gpu_spec *gpu = v->gpu_count > 0 ? pl_gpu_spec_find(v->gpu_model) : NULL;
    double *f = v->features;
    f[PL_FEAT_CPU_CORES] = v->cpu_cores;
    f[PL_FEAT_CPU_CLOCK] = cpu ? cpu->clock_hz : 0;
    f[PL_FEAT_CUDA_CORES] = gpu ? gpu->cores : 0;
    f[PL_FEAT_GPU_CLOCK] = gpu ? gpu->clock_hz : 0;
    f[PL_FEAT_GPU_MEM_BW] = gpu ? gpu->mem_bandwidth_Bps : 0;
    f[PL_FEAT_GPU_COUNT] = v->gpu_count;
}
