/* pack.c: what Talos reads off the models before placing them (docs/multi.md): each op's
 * speedup, op packing by (sv, tv) with its NOD (coarsen.h's join pass with Talos's rule), and
 * the affinity of each pair of models (Eq. 2-3) that decides which models one flow places
 * together. */
#include "multi_internal.h"

#include "placer/coarsen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pl_multi_opts_default(pl_multi_opts *o)
{
    memset(o, 0, sizeof *o);
    o->sv_lo = 0.5, o->sv_hi = 2, o->tv_s = 10e-3;
    o->affinity = 0.4;
    o->positions = 8;
    o->refine_s = 2;
}

int mt_ref_device(const pl_cost *k)
{
    for (int d = 0; d < k->n_devs; d++)
        if (k->c->devs[d].kind == PL_DEV_CPU) return d;
    return 0;
}

double mt_speedup(const double *t, int D, int ref)
{
    double best = INFINITY;
    for (int d = 0; d < D; d++)
        if (d != ref && t[d] < best) best = t[d];
    if (D < 2 || !isfinite(t[ref]) || !isfinite(best)) return 1;
    if (t[ref] <= 1e-12 && best <= 1e-12) return 1;
    return t[ref] / fmax(best, 1e-12);
}

double mt_best(const mt_packs *p, int pack)
{
    double b = INFINITY;
    for (int d = 0; d < p->D; d++)
        b = fmin(b, p->t[(size_t)pack * p->D + d]);
    return b;
}

/* ---- packing ---- */

/* Talos's rule for the join pass (coarsen.h): in a maximal run of adjacent ops, v joins the
 * pack while its speedup is within (sv_lo, sv_hi) x the speedup of the pack's first op and its
 * time on the reference device is below tv. An op the runtime fuses into its predecessor's
 * kernel always joins: its price is the fused one, true only on the kernel's device, and the
 * speedup of its arithmetic alone says nothing of the kernel's. */
typedef struct band {
    const pl_cost *k;
    const pl_multi_opts *o;
    int ref;
    const double *sp;
} band;

static bool in_band(void *ctx, int first, int v)
{
    const band *b = ctx;
    if (b->k->fused_root && b->k->fused_root[v] >= 0) return true;
    double s0 = b->sp[first], tv = b->k->op_s[(size_t)v * b->k->n_devs + b->ref];
    return b->sp[v] > b->o->sv_lo * s0 && b->sp[v] < b->o->sv_hi * s0 && tv < b->o->tv_s;
}

/* Numbers packs by the topological position of their last member, fills members. */
static void number_packs(mt_packs *p, const pl_graph *g, pl_uf *up)
{
    int n = g->n_ops;
    int *id = pl_malloc((size_t)n * sizeof *id);
    for (int v = 0; v < n; v++)
        id[v] = -1;
    p->of = pl_malloc((size_t)n * sizeof *p->of);
    int next = 0;
    for (int i = n - 1; i >= 0; i--) { /* last member first, from the end: reversed below */
        int r = pl_uf_find(up, g->topo[i]);
        if (id[r] < 0) id[r] = next++;
    }
    p->n = next;
    for (int v = 0; v < n; v++)
        p->of[v] = next - 1 - id[pl_uf_find(up, v)];
    p->moff = pl_calloc((size_t)next + 1, sizeof *p->moff);
    p->mem = pl_malloc((size_t)n * sizeof *p->mem);
    for (int v = 0; v < n; v++)
        p->moff[p->of[v] + 1]++;
    for (int q = 0; q < next; q++)
        p->moff[q + 1] += p->moff[q];
    int *fill = pl_malloc((size_t)next * sizeof *fill);
    memcpy(fill, p->moff, (size_t)next * sizeof *fill);
    for (int i = 0; i < n; i++)
        p->mem[fill[p->of[g->topo[i]]]++] = g->topo[i];
    free(fill);
    free(id);
}

/* Distinct neighbour packs, CSR, in either direction. */
static void link_packs(mt_packs *p, const pl_graph *g, bool forward, int **off_out, int **adj_out)
{
    int n = p->n;
    int *off = pl_calloc((size_t)n + 1, sizeof *off), *adj = NULL, cap = 0, m = 0;
    int *seen = pl_malloc((size_t)n * sizeof *seen);
    for (int q = 0; q < n; q++)
        seen[q] = -1;
    for (int q = 0; q < n; q++) {
        for (int j = p->moff[q]; j < p->moff[q + 1]; j++) {
            int v = p->mem[j];
            const int *o = forward ? g->succ_off : g->pred_off, *a = forward ? g->succ : g->pred;
            for (int e = o[v]; e < o[v + 1]; e++) {
                int r = p->of[a[e]];
                if (r == q || seen[r] == q) continue;
                seen[r] = q;
                pl_grow((void **)&adj, &cap, m + 1, sizeof *adj);
                adj[m++] = r;
            }
        }
        off[q + 1] = m;
    }
    free(seen);
    *off_out = off, *adj_out = adj;
}

void mt_pack(const pl_cost *k, const pl_multi_opts *o, int ref, const double *sp, mt_packs *p)
{
    const pl_graph *g = k->g;
    memset(p, 0, sizeof *p);
    p->k = k, p->D = k->n_devs;
    pl_uf up;
    if (o->no_pack)
        pl_uf_init(&up, g->n_ops);
    else
        pl_coarsen_join(g, in_band, &(band){k, o, ref, sp}, &up);
    number_packs(p, g, &up);
    pl_uf_free(&up);
    p->tenant = pl_malloc((size_t)p->n * sizeof *p->tenant);
    p->t = pl_calloc((size_t)p->n * p->D + 1, sizeof *p->t);
    p->order = pl_malloc((size_t)p->n * sizeof *p->order);
    for (int q = 0; q < p->n; q++) {
        p->order[q] = q;
        p->tenant[q] = g->ops[p->mem[p->moff[q]]].tenant;
        for (int j = p->moff[q]; j < p->moff[q + 1]; j++)
            for (int d = 0; d < p->D; d++)
                p->t[(size_t)q * p->D + d] += pl_cost_op_s(k, p->mem[j], d);
    }
    link_packs(p, g, false, &p->poff, &p->pred);
    link_packs(p, g, true, &p->soff, &p->succ);
}

void mt_packs_free(mt_packs *p)
{
    free(p->of), free(p->moff), free(p->mem), free(p->tenant), free(p->t);
    free(p->poff), free(p->pred), free(p->soff), free(p->succ), free(p->order);
    memset(p, 0, sizeof *p);
}

/* ---- affinity (Eq. 2-3) ---- */

/* Eq. 2's distance between the packed ops of tenants a and b, paired in topological order
 * (the k-th of a with the k-th of b, k below the smaller count): the paper's sum of the
 * speedups' differences over the sum of the speedups compared (so in [0, 1), whatever the
 * count: the Bray-Curtis dissimilarity). The paper's raw sum grows with the op count (196 for
 * alexnet + googlenet training), where its Table III stays within 0.14 to 0.56; this form
 * puts the CNN pairs of its workload at 0.32 to 0.63 (docs/multi.md, "Affinity"). */
static double distance(const mt_packs *p, int ref, int a, int b)
{
    int na = 0, nb = 0;
    int *qa = pl_malloc((size_t)p->n * sizeof *qa), *qb = pl_malloc((size_t)p->n * sizeof *qb);
    for (int q = 0; q < p->n; q++) {
        if (p->tenant[q] == a) qa[na++] = q;
        if (p->tenant[q] == b) qb[nb++] = q;
    }
    int K = na < nb ? na : nb;
    double diff = 0, sum = 0;
    for (int i = 0; i < K; i++) {
        double x = mt_speedup(p->t + (size_t)qa[i] * p->D, p->D, ref);
        double y = mt_speedup(p->t + (size_t)qb[i] * p->D, p->D, ref);
        diff += fabs(x - y), sum += x + y;
    }
    free(qa), free(qb);
    return sum > 0 ? diff / sum : 0;
}

/* common / total of Eq. 3: op type names both models use over those either uses. */
static double common_share(const pl_graph *g, int a, int b)
{
    pl_strmap seen;
    pl_strmap_init(&seen);
    int common = 0, total = 0;
    for (int v = 0; v < g->n_ops; v++) { /* bit 1: in a, bit 2: in b */
        int t = g->ops[v].tenant;
        if (t != a && t != b) continue;
        int bit = (t == a ? 1 : 0) | (t == b ? 2 : 0), old = pl_strmap_get(&seen, g->ops[v].type);
        if (old < 0) old = 0, total++;
        if ((old | bit) == 3 && old != 3) common++;
        pl_strmap_put(&seen, g->ops[v].type, old | bit);
    }
    pl_strmap_free(&seen);
    return total ? (double)(common > 0 ? common : 1) / total : 1;
}

static void group_tenants(pl_multi_analysis *a, double threshold)
{
    int T = a->n_tenants;
    pl_uf up;
    pl_uf_init(&up, T);
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++)
            if (threshold < 0 || a->affinity[i * T + j] > threshold) pl_uf_union(&up, i, j);
    a->group = pl_malloc((size_t)T * sizeof *a->group);
    int *id = pl_malloc((size_t)T * sizeof *id);
    for (int i = 0; i < T; i++)
        id[i] = -1;
    a->n_groups = 0;
    for (int i = 0; i < T; i++) {
        int r = pl_uf_find(&up, i);
        if (id[r] < 0) id[r] = a->n_groups++;
        a->group[i] = id[r];
    }
    free(id), pl_uf_free(&up);
}

int pl_multi_analyze(const pl_cost *k, const pl_multi_opts *o, pl_multi_analysis *a, pl_err *err)
{
    pl_multi_opts dflt;
    if (!o) pl_multi_opts_default(&dflt), o = &dflt;
    memset(a, 0, sizeof *a);
    if (!(o->sv_lo > 0 && o->sv_hi > o->sv_lo && o->tv_s >= 0))
        return pl_err_set(err,
                          "multi: packing band (%g, %g) and tv %g s: give 0 < lo < hi, tv >= 0",
                          o->sv_lo, o->sv_hi, o->tv_s);
    const pl_graph *g = k->g;
    int D = k->n_devs, T = pl_graph_tenants(g);
    a->n_tenants = T, a->n_ops = g->n_ops;
    a->ref_dev = mt_ref_device(k);
    a->speedup = pl_malloc((size_t)g->n_ops * sizeof *a->speedup);
    for (int v = 0; v < g->n_ops; v++)
        a->speedup[v] = mt_speedup(k->op_s + (size_t)v * D, D, a->ref_dev);
    mt_packs p;
    mt_pack(k, o, a->ref_dev, a->speedup, &p);
    a->n_packs = p.n;
    a->pack_of = p.of, p.of = NULL;
    a->nod = pl_calloc((size_t)T + 1, sizeof *a->nod);
    for (int q = 0; q < p.n; q++)
        a->nod[p.tenant[q]]++;
    a->affinity = pl_calloc((size_t)T * T + 1, sizeof *a->affinity);
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++)
            a->affinity[i * T + j] = a->affinity[j * T + i] =
                distance(&p, a->ref_dev, i, j) / common_share(g, i, j);
    group_tenants(a, o->affinity);
    mt_packs_free(&p);
    return 0;
}

void pl_multi_speedup_spread(const pl_cost *k, int tenant, pl_multi_spread *s)
{
    memset(s, 0, sizeof *s);
    int D = k->n_devs, ref = mt_ref_device(k);
    if (D < 2) return;
    double *sp = pl_malloc(((size_t)k->n_ops + 1) * sizeof *sp), logsum = 0, on_ref = 0,
           off_ref = 0;
    for (int v = 0; v < k->n_ops; v++) {
        if (k->g->ops[v].tenant != tenant) continue;
        bool fused = k->fused_root && k->fused_root[v] >= 0;
        const double *t = (fused ? k->unfused_s : k->op_s) + (size_t)v * D;
        double x = mt_speedup(t, D, ref), other = INFINITY;
        for (int d = 0; d < D; d++)
            if (d != ref) other = fmin(other, t[d]);
        if (!(t[ref] > 0 && other > 0 && isfinite(t[ref]) && isfinite(other))) continue;
        bool given = true;
        for (int d = 0; d < D; d++)
            given &= k->given[(size_t)v * D + d] != 0;
        s->n_given += given;
        s->below_1 += x < 1;
        logsum += log(x), on_ref += t[ref], off_ref += other;
        sp[s->n_ops++] = x;
    }
    int n = s->n_ops;
    if (n) {
        pl_sort(sp, (size_t)n, sizeof *sp, pl_cmp_double);
        s->min = sp[0], s->max = sp[n - 1];
        s->p10 = sp[(int)ceil(0.1 * n) - 1];
        s->median = sp[(int)ceil(0.5 * n) - 1];
        s->p90 = sp[(int)ceil(0.9 * n) - 1];
        s->geomean = exp(logsum / n);
        s->overall = on_ref / off_ref;
        s->below_1 /= n;
    }
    free(sp);
}

void pl_multi_analysis_free(pl_multi_analysis *a)
{
    free(a->speedup), free(a->pack_of), free(a->nod), free(a->affinity), free(a->group);
    memset(a, 0, sizeof *a);
}
