/* cluster.c: building a cluster in code, the route search, and lookups.
 *
 * While a cluster is being built its route matrices hold the direct links, with a row stride
 * of cap_devs so that adding a device does not move every link; pl_cluster_finalize derives
 * the missing routes and compacts the matrices to the stride n_devs that cluster.h promises.
 * Since cap_devs then equals n_devs, the stride is always cap_devs. */
#include "cluster_internal.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

pl_cluster *pl_cluster_new(const char *name)
{
    pl_cluster *c = pl_calloc(1, sizeof *c);
    c->name = pl_strdup(name ? name : "");
    c->io_device = -1;
    return c;
}

/* What a device owns. */
static void device_free(pl_device *d)
{
    free(d->name);
    free(d->model);
    free(d->host);
    free(d->core_devs);
}

void pl_cluster_free(pl_cluster *c)
{
    if (!c) return;
    for (int i = 0; i < c->n_devs; i++)
        device_free(&c->devs[i]);
    free(c->devs);
    for (int i = 0; i < c->n_colls; i++)
        pl_coll_scope_free(&c->colls[i]);
    free(c->colls);
    free(c->bw_Bps);
    free(c->lat_s);
    free(c->hops);
    free(c->name);
    free(c->path);
    free(c);
}

int pl_cluster_find(const pl_cluster *c, const char *device_name)
{
    for (int i = 0; i < c->n_devs; i++)
        if (strcmp(c->devs[i].name, device_name) == 0) return i;
    return -1;
}

/* d lists c among its cores */
static bool has_core(const pl_device *d, int c)
{
    for (int i = 0; i < d->n_core_devs; i++)
        if (d->core_devs[i] == c) return true;
    return false;
}

bool pl_cluster_same_silicon(const pl_cluster *c, int a, int b)
{
    return a != b && (has_core(&c->devs[a], b) || has_core(&c->devs[b], a));
}

/* ---- one view of two (pl_cluster_drop_devices) ---- */

/* d's cores renumbered by `to` (-1: removed), the removed ones left out. */
static void renumber_cores(pl_device *d, const int *to)
{
    int n = 0;
    for (int i = 0; i < d->n_core_devs; i++)
        if (to[d->core_devs[i]] >= 0) d->core_devs[n++] = to[d->core_devs[i]];
    d->n_core_devs = n;
    if (!n) free(d->core_devs), d->core_devs = NULL;
}

/* The routes between kept devices at the new stride: entry (a, b) moves to (to[a], to[b]),
 * which is never past where it was (to[x] <= x, kept <= n), so one pass in order copies in
 * place without overwriting an entry not yet read. */
static void compact_routes(pl_cluster *c, const int *to, int kept)
{
    int n = c->n_devs;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n && to[a] >= 0; b++) {
            if (to[b] < 0) continue;
            size_t from = (size_t)a * n + b, at = (size_t)to[a] * kept + to[b];
            c->bw_Bps[at] = c->bw_Bps[from];
            c->lat_s[at] = c->lat_s[from];
            c->hops[at] = c->hops[from];
        }
}

int pl_cluster_drop_devices(pl_cluster *c, const bool *drop, pl_err *err)
{
    assert(c->cap_devs == c->n_devs); /* finalized: the routes' stride is n_devs */
    int n = c->n_devs, kept = 0, *to = pl_malloc(((size_t)n + 1) * sizeof *to);
    for (int d = 0; d < n; d++)
        to[d] = drop[d] ? -1 : kept++;
    bool io_dropped = c->io_device >= 0 && to[c->io_device] < 0;
    if (!kept || io_dropped) {
        free(to);
        const char *where = c->path ? c->path : c->name;
        if (!kept) return pl_err_set(err, "%s: leaving out devices: none would be left", where);
        return pl_err_set(err,
                          "%s: leaving out devices: device '%s' holds the graph's inputs and "
                          "outputs (io_device), it cannot be left out",
                          where, c->devs[c->io_device].name);
    }
    compact_routes(c, to, kept);
    for (int d = 0; d < n; d++) {
        if (to[d] < 0) {
            device_free(&c->devs[d]);
            continue;
        }
        renumber_cores(&c->devs[d], to);
        c->devs[to[d]] = c->devs[d];
    }
    if (c->io_device >= 0) c->io_device = to[c->io_device];
    c->n_devs = c->cap_devs = kept;
    free(to);
    return n - kept;
}

int pl_cluster_mem_domains(const pl_cluster *c, int *dom)
{
    int n = 0;
    for (int d = 0; d < c->n_devs; d++) {
        dom[d] = -1;
        if (!(c->devs[d].host_mem_bandwidth_Bps > 0)) continue;
        for (int e = 0; e < d && dom[d] < 0; e++)
            if (dom[e] >= 0 && strcmp(c->devs[e].host, c->devs[d].host) == 0) dom[d] = dom[e];
        if (dom[d] < 0) dom[d] = n++;
    }
    return n;
}

/* Copies the route matrices from stride `from` to stride `to` (the first n rows/columns);
 * new entries are "no link" (bandwidth 0, hops 0). */
static void restride(pl_cluster *c, int n, int from, int to)
{
    size_t sz = (size_t)to * to;
    double *bw = pl_calloc(sz, sizeof *bw), *lat = pl_calloc(sz, sizeof *lat);
    int *hops = pl_calloc(sz, sizeof *hops);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            bw[(size_t)i * to + j] = c->bw_Bps[(size_t)i * from + j];
            lat[(size_t)i * to + j] = c->lat_s[(size_t)i * from + j];
            hops[(size_t)i * to + j] = c->hops[(size_t)i * from + j];
        }
    free(c->bw_Bps);
    free(c->lat_s);
    free(c->hops);
    c->bw_Bps = bw;
    c->lat_s = lat;
    c->hops = hops;
}

int pl_cluster_add_device(pl_cluster *c, const char *name, pl_dev_kind kind, const char *model)
{
    if (c->n_devs == c->cap_devs) {
        int cap = c->cap_devs ? 2 * c->cap_devs : 8;
        c->devs = pl_realloc(c->devs, (size_t)cap * sizeof *c->devs);
        restride(c, c->n_devs, c->cap_devs, cap);
        c->cap_devs = cap;
    }
    pl_device *d = &c->devs[c->n_devs];
    memset(d, 0, sizeof *d);
    d->name = pl_strdup(name);
    d->kind = kind;
    d->model = pl_strdup(model ? model : "");
    d->host = pl_strdup("");
    const pl_gpu_spec *s = model ? pl_gpu_spec_find(model) : NULL;
    if (s) {
        d->memory_bytes = s->memory_bytes;
        memcpy(d->peak_flops_per_s, s->peak_flops_per_s, sizeof d->peak_flops_per_s);
        d->mem_bandwidth_Bps = s->mem_bandwidth_Bps;
        d->launch_overhead_s = s->launch_overhead_s;
    }
    return c->n_devs++;
}

void pl_cluster_set_link(pl_cluster *c, int a, int b, double bw_Bps, double lat_s, bool both_ways)
{
    assert(a >= 0 && a < c->n_devs && b >= 0 && b < c->n_devs);
    if (a == b) return; /* a device reaches itself for free: the diagonal is fixed */
    size_t k = (size_t)a * c->cap_devs + b;
    c->bw_Bps[k] = bw_Bps;
    c->lat_s[k] = lat_s;
    c->hops[k] = 1;
    if (both_ways) pl_cluster_set_link(c, b, a, bw_Bps, lat_s, false);
}

/* ---- routes ---- */

typedef struct adj {
    int *start; /* n+1 offsets into to[] */
    int *to;
} adj;

static adj adj_build(int n, const double *link_bw)
{
    adj g = {pl_calloc((size_t)n + 1, sizeof(int)), NULL};
    size_t m = 0;
    for (int u = 0; u < n; u++)
        for (int v = 0; v < n; v++)
            if (u != v && link_bw[(size_t)u * n + v] > 0) m++;
    g.to = pl_malloc((m ? m : 1) * sizeof(int));
    m = 0;
    for (int u = 0; u < n; u++) {
        g.start[u] = (int)m;
        for (int v = 0; v < n; v++)
            if (u != v && link_bw[(size_t)u * n + v] > 0) g.to[m++] = v;
    }
    g.start[n] = (int)m;
    return g;
}

/* Better route: wider bottleneck, then lower latency. */
static bool better(double bw, double lat, double bw0, double lat0)
{
    return bw > bw0 || (bw == bw0 && lat < lat0);
}

/* One source: breadth-first, so every node's predecessors on shortest routes are settled
 * before it is popped; each keeps the best (bottleneck, latency) over those predecessors.
 * (Latency is a tie-break of the widest routes, good enough for the ties found in practice.) */
static void routes_from(int s, int n, const adj *g, const double *link_bw, const double *link_lat,
                        int *queue, int *dist, double *bw, double *lat)
{
    for (int v = 0; v < n; v++)
        dist[v] = -1, bw[v] = 0, lat[v] = INFINITY;
    int head = 0, tail = 0;
    queue[tail++] = s;
    dist[s] = 0, bw[s] = INFINITY, lat[s] = 0;
    while (head < tail) {
        int u = queue[head++];
        for (int e = g->start[u]; e < g->start[u + 1]; e++) {
            int v = g->to[e];
            size_t k = (size_t)u * n + v;
            double b = fmin(bw[u], link_bw[k]), l = lat[u] + link_lat[k];
            if (dist[v] < 0) {
                dist[v] = dist[u] + 1, bw[v] = b, lat[v] = l;
                queue[tail++] = v;
            } else if (dist[v] == dist[u] + 1 && better(b, l, bw[v], lat[v])) {
                bw[v] = b, lat[v] = l;
            }
        }
    }
}

void cl_routes(int n, const double *link_bw, const double *link_lat, const bool *want,
               double *out_bw, double *out_lat, int *out_hops)
{
    adj g = adj_build(n, link_bw);
    int *queue = pl_malloc(((size_t)n + 1) * sizeof(int));
    int *dist = pl_malloc(((size_t)n + 1) * sizeof(int));
    double *bw = pl_malloc(((size_t)n + 1) * sizeof(double));
    double *lat = pl_malloc(((size_t)n + 1) * sizeof(double));
    for (int s = 0; s < n; s++) {
        if (want && !want[s]) continue;
        routes_from(s, n, &g, link_bw, link_lat, queue, dist, bw, lat);
        for (int t = 0; t < n; t++) {
            if (want && !want[t]) continue;
            size_t k = (size_t)s * n + t;
            out_bw[k] = bw[t], out_lat[k] = lat[t], out_hops[k] = dist[t];
        }
    }
    free(g.start);
    free(g.to);
    free(queue);
    free(dist);
    free(bw);
    free(lat);
}

int cl_check_routes(const pl_cluster *c, pl_err *err)
{
    int n = c->n_devs;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            /* a device and its own cores need none (finalize gives them a free one) */
            if (a != b && c->hops[(size_t)a * n + b] <= 0 && !pl_cluster_same_silicon(c, a, b))
                return pl_err_set(err,
                                  "cluster \"%s\": no route from device \"%s\" to device \"%s\" "
                                  "(add a link, or connect both to a switch)",
                                  c->name, c->devs[a].name, c->devs[b].name);
    return 0;
}

/* Pairs that already have a route (a direct link, or a route the reader derived from a
 * topology with switches) keep it; the others are derived from the direct links alone. */
int pl_cluster_finalize(pl_cluster *c, pl_err *err)
{
    int n = c->n_devs;
    if (c->cap_devs != n) restride(c, n, c->cap_devs, n);
    c->cap_devs = n;
    size_t sz = (size_t)n * n;
    double *lbw = pl_calloc(sz, sizeof *lbw), *llat = pl_calloc(sz, sizeof *llat);
    double *bw = pl_calloc(sz, sizeof *bw), *lat = pl_calloc(sz, sizeof *lat);
    int *hops = pl_calloc(sz, sizeof *hops);
    for (size_t k = 0; k < sz; k++)
        if (c->hops[k] == 1) lbw[k] = c->bw_Bps[k], llat[k] = c->lat_s[k];
    cl_routes(n, lbw, llat, NULL, bw, lat, hops);
    for (size_t k = 0; k < sz; k++) {
        bool diag = k % ((size_t)n + 1) == 0;
        if (diag)
            c->bw_Bps[k] = INFINITY, c->lat_s[k] = 0, c->hops[k] = 0;
        else if (c->hops[k] <= 0)
            c->bw_Bps[k] = bw[k], c->lat_s[k] = lat[k], c->hops[k] = hops[k];
        /* a device and its own cores share one memory: nothing to move, and no plan moves
           anything between them anyway (pl_cluster_same_silicon) */
        if (!diag && c->hops[k] <= 0 && pl_cluster_same_silicon(c, (int)(k / n), (int)(k % n)))
            c->bw_Bps[k] = INFINITY, c->lat_s[k] = 0, c->hops[k] = 0;
    }
    free(lbw);
    free(llat);
    free(bw);
    free(lat);
    free(hops);
    return cl_check_routes(c, err);
}
