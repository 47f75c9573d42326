/* random.c: TAG's random topology generator (digest §3.2.4; docs/train.md, "Random
 * topologies").
 *
 * TAG trains its GNN over random device topologies: 1-6 machines, each with 1-8 GPUs of one of
 * three types, 64-160 Gb/s between the GPUs of a machine, 20-50 Gb/s between machines. The
 * generator writes a placer-cluster/1 document, shaped as examples/clusters/tag-testbed.json
 * (each machine's GPUs on its own switch, every machine's switch on one network switch), and
 * the cluster is that document read by the one reader: a generated cluster and the same
 * cluster loaded from its file cannot differ. */
#include "placer/cluster.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The three GPU types: TAG's testbed's (examples/clusters/tag-testbed.json). */
static const char *const gpu_type[3] = {"V100-SXM2-32GB", "GTX-1080-Ti", "P100-PCIE-16GB"};

typedef struct machine {
    int gpus, type;
    int intra_gbps, inter_gbps; /* whole Gb/s: the document states them exactly */
} machine;

/* Draws machines until the total GPU count is within [lo, hi]: the paper's distribution,
 * conditioned on the caps. One machine of one GPU is drawn with probability 1/48, so every
 * cap that admits a GPU is reached. */
static int draw(uint64_t seed, int lo, int hi, machine *m)
{
    uint64_t r = seed;
    for (;;) {
        int n = 1 + pl_rng_below(&r, 6), total = 0;
        for (int i = 0; i < n; i++) {
            m[i].gpus = 1 + pl_rng_below(&r, 8);
            m[i].type = pl_rng_below(&r, 3);
            m[i].intra_gbps = 64 + pl_rng_below(&r, 160 - 64 + 1);
            m[i].inter_gbps = 20 + pl_rng_below(&r, 50 - 20 + 1);
            total += m[i].gpus;
        }
        if (total >= lo && total <= hi) return n;
    }
}

static json_t *topo_link(const char *a, const char *b, int gbps, const char *lat, const char *what)
{
    char bw[32];
    snprintf(bw, sizeof bw, "%d Gb/s", gbps);
    return json_pack("{s:s, s:s, s:s, s:s, s:s}", "a", a, "b", b, "bandwidth_Bps", bw, "latency_s",
                     lat, "description", what);
}

static void add_machine(json_t *devs, json_t *sw, json_t *links, int i, const machine *m, int n)
{
    char host[16], name[32], gpu[40], s[32];
    snprintf(host, sizeof host, "m%d", i);
    snprintf(name, sizeof name, "m%d_gpu", i);
    snprintf(s, sizeof s, "m%d_sw", i);
    json_array_append_new(devs, json_pack("{s:s, s:i, s:s, s:s}", "name", name, "count", m->gpus,
                                          "model", gpu_type[m->type], "host", host));
    json_array_append_new(sw, json_string(s));
    for (int k = 0; k < m->gpus; k++) {
        snprintf(gpu, sizeof gpu, "m%d_gpu%d", i, k);
        json_array_append_new(links,
                              topo_link(gpu, s, m->intra_gbps, "2 us", "inside the machine"));
    }
    if (n > 1)
        json_array_append_new(links,
                              topo_link(s, "net", m->inter_gbps, "5 us", "between machines"));
}

char *pl_cluster_random_json(uint64_t seed, const pl_cluster_random_opts *o, pl_err *err)
{
    int lo = o && o->min_gpus > 0 ? o->min_gpus : 1, hi = o && o->max_gpus > 0 ? o->max_gpus : 48;
    if (lo > 48 || hi < lo)
        return pl_err_set(err, "random cluster: GPUs from %d to %d: TAG's generator makes 1 to 48",
                          lo, hi),
               NULL;
    machine m[6];
    int n = draw(seed, lo, hi, m);
    char name[64], desc[160];
    snprintf(name, sizeof name, "random-%llu", (unsigned long long)seed);
    snprintf(desc, sizeof desc,
             "TAG's random topology for seed %llu (placer pl_cluster_random; docs/train.md)",
             (unsigned long long)seed);
    json_t *devs = json_array(), *sw = json_array(), *links = json_array();
    for (int i = 0; i < n; i++)
        add_machine(devs, sw, links, i, &m[i], n);
    if (n > 1) json_array_append_new(sw, json_string("net"));
    json_t *doc =
        json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "format", "placer-cluster/1", "name", name,
                  "description", desc, "devices", devs, "switches", sw, "topology_links", links);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    return text;
}

pl_cluster *pl_cluster_random(uint64_t seed, const pl_cluster_random_opts *o, pl_err *err)
{
    char *text = pl_cluster_random_json(seed, o, err);
    if (!text) return NULL;
    char name[64];
    snprintf(name, sizeof name, "random-%llu", (unsigned long long)seed);
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), name, err);
    free(text);
    return c;
}
