/* search_table.h: what the configuration-search benchmarks share (bench_search, bench_dist):
 * a model's latency on every configuration of a catalogue, placed once with the worker
 * `placer deploy` uses and cached, and the optimum by brute force over it. Static functions:
 * included by one benchmark file each. */
#ifndef PLACER_BENCH_SEARCH_TABLE_H
#define PLACER_BENCH_SEARCH_TABLE_H

#include "placer/search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct table {
    const pl_catalog *cat;
    const char **names;
    double *lat;
} table;

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The tables are written to build/bench/search-cache/ and, with PLACER_SEARCH_CACHE=1, read
 * back instead of placing again (for tuning a strategy; stale after any change to placement). */
static void cache_path(const table *t, const char *model, char *out, size_t n)
{
    snprintf(out, n, "build/bench/search-cache/%s--%s.tsv", t->cat->name, base(model));
}

static bool cache_read(table *t, const char *model, bool use_cache)
{
    char path[512];
    cache_path(t, model, path, sizeof path);
    FILE *f = use_cache ? fopen(path, "r") : NULL;
    if (!f) return false;
    int k = 0;
    char line[512];
    /* "NAME LATENCY" per line; the latency is after the last space, since names may contain
     * spaces ("P100 x3") */
    while (k < t->cat->n && fgets(line, sizeof line, f)) {
        char *sp = strrchr(line, ' '), *end;
        if (!sp) break;
        *sp = 0;
        double lat = strtod(sp + 1, &end);
        if (end == sp + 1 || strcmp(line, t->cat->configs[k].name)) break;
        t->names[k] = t->cat->configs[k].name, t->lat[k++] = lat;
    }
    fclose(f);
    return k == t->cat->n;
}

static void cache_write(const table *t, const char *model)
{
    char path[512];
    cache_path(t, model, path, sizeof path);
    pl_err err = {""};
    if (pl_mkdir_p("build/bench/search-cache", &err) < 0) return;
    pl_out o; /* whole or not at all: a cut file would be read back as a partial table */
    if (pl_out_open(&o, path, &err) < 0) return;
    for (int k = 0; k < t->cat->n; k++)
        fprintf(o.f, "%s %.17g\n", t->cat->configs[k].name, t->lat[k]);
    if (pl_out_commit(&o, &err) < 0) fprintf(stderr, "%s\n", err.msg);
}

/* Every configuration once, through the deploy worker, unless use_cache and the cache has the
 * table. *w is the model's worker, started on first use and kept for the next catalogue (the
 * model is loaded once, as in a search). */
static int fill(table *t, const char *model, pl_trial_worker **w, bool use_cache)
{
    if (cache_read(t, model, use_cache)) return 0;
    if (!*w) *w = pl_trial_sim_new(&(pl_trial_sim_opts){.model_path = model});
    pl_err err = {""};
    double before = (*w)->trial_s;
    for (int k = 0; k < t->cat->n; k++) {
        pl_trial_out out;
        if (pl_trial_run(*w, t->cat->configs[k].cluster, &out, &err) < 0)
            return fprintf(stderr, "%s\n", err.msg), -1;
        t->names[k] = t->cat->configs[k].name, t->lat[k] = out.latency_s;
        pl_plan_free(out.plan);
    }
    fprintf(stderr, "  %s: %d configurations placed in %.1f s (start-up %.3f s, once)\n",
            base(model), t->cat->n, (*w)->trial_s - before, (*w)->startup_s);
    cache_write(t, model);
    return 0;
}

/* The optimum by brute force over the table (retired configurations left out, as the search
 * does), or -1. */
static int optimum(const table *t, double slo)
{
    int best = -1;
    double bc = INFINITY;
    for (int k = 0; k < t->cat->n; k++) {
        double c = t->cat->configs[k].price_usd_per_hour / 3600 * t->lat[k];
        if (!t->cat->configs[k].retired && t->lat[k] <= slo && c < bc) bc = c, best = k;
    }
    return best;
}

#endif
