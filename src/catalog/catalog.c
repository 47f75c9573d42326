/* catalog.c: freeing, lookup and the normalised (log, min-max) feature matrix. */
#include "catalog_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Log scale first: counts, clocks and bandwidths span an order of magnitude or more, and
 * latency follows them as a power law, which is linear in the logs. */
void pl_catalog_features(const pl_catalog *c, double *out)
{
    for (int f = 0; f < PL_N_FEATURES; f++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < c->n; i++) {
            double v = log1p(fmax(c->configs[i].features[f], 0));
            out[(size_t)i * PL_N_FEATURES + f] = v, lo = fmin(lo, v), hi = fmax(hi, v);
        }
        /* a constant feature tells configurations nothing apart: 0, not a division by 0 */
        for (int i = 0; i < c->n; i++) {
            double *v = &out[(size_t)i * PL_N_FEATURES + f];
            *v = hi > lo ? (*v - lo) / (hi - lo) : 0;
        }
    }
}
