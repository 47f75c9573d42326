/* catalog.c: freeing, lookup, feature names and the normalised feature matrix. */
#include "catalog_internal.h"

#include <stdlib.h>
#include <string.h>

const char *pl_feature_name(int f)
{
    static const char *const names[PL_N_FEATURES] = {
        "cpu_cores",    "cpu_clock_hz",          "cuda_cores",
        "gpu_clock_hz", "gpu_mem_bandwidth_Bps", "gpu_count"};
    return f >= 0 && f < PL_N_FEATURES ? names[f] : "?";
}

void pl_catalog_free(pl_catalog *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++)
        cat_free_config(&c->configs[i]);
    free(c->configs);
    free(c->name);
    free(c->path);
    free(c);
}

void cat_free_config(pl_vm_config *v)
{
    free(v->name);
    free(v->provider);
    free(v->region);
    free(v->price_date);
    free(v->price_source);
    free(v->cpu_model);
    free(v->gpu_model);
    pl_cluster_free(v->cluster);
}

int pl_catalog_find(const pl_catalog *c, const char *name)
{
    for (int i = 0; c && name && i < c->n; i++)
        if (strcmp(c->configs[i].name, name) == 0) return i;
    return -1;
}

void pl_catalog_features(const pl_catalog *c, double *out)
{
    for (int f = 0; f < PL_N_FEATURES; f++) {
        double lo = 0, hi = 0;
        for (int i = 0; i < c->n; i++) {
            double x = c->configs[i].features[f];
            if (i == 0 || x < lo) lo = x;
            if (i == 0 || x > hi) hi = x;
        }
        /* a constant feature tells configurations nothing apart: 0, not a division by 0 */
        for (int i = 0; i < c->n; i++)
            out[(size_t)i * PL_N_FEATURES + f] =
                hi > lo ? (c->configs[i].features[f] - lo) / (hi - lo) : 0;
    }
}
