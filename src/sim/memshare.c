/* memshare.c: memory shared by the devices of one host (docs/simulator.md, "Shared memory").
 *
 * Two cores of one CPU each reach the memory bandwidth the cost model gives them when they run
 * alone, but not both at once: measured on this machine's two cores (local-cpu-percore.json), two
 * chains of memory-bound Adds slow each other, two chains of MatMuls do not. So the devices of
 * one host that give host_mem_bandwidth_Bps draw from one shared bandwidth, and each op's
 * memory term stretches by the factor their summed demand exceeds it (run.c plays it; the
 * checker re-integrates it). Here: the domains and each op's terms, computed once per plan. */
#include "sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The domains' devices as CSR, and their bandwidths in the cost model's terms. */
static void share_domains(const pl_cost *k, sim_share *m)
{
    int D = k->n_devs;
    m->dom_off = pl_calloc(m->n_dom + 2, sizeof *m->dom_off);
    m->dom_dev = pl_malloc((D + 1) * sizeof *m->dom_dev);
    m->dom_Bps = pl_calloc(m->n_dom + 1, sizeof *m->dom_Bps);
    for (int d = 0; d < D; d++)
        if (m->dom[d] >= 0) m->dom_off[m->dom[d] + 2]++;
    for (int i = 0; i < m->n_dom; i++)
        m->dom_off[i + 2] += m->dom_off[i + 1];
    for (int d = 0; d < D; d++) {
        int i = m->dom[d];
        if (i < 0) continue;
        m->dom_dev[m->dom_off[i + 1]++] = d;
        /* the loader makes one host's figures equal; built in code, the first device's wins */
        if (!(m->dom_Bps[i] > 0))
            m->dom_Bps[i] = pl_cost_mem_rate(k->c->devs[d].host_mem_bandwidth_Bps, &k->params);
    }
}

/* An op's memory term: the bytes it moves at its device's bandwidth (as the cost model's
 * roofline), at most its body (its time less launch and stage charge): a given (profiled) or
 * fused time may be shorter than the bytes alone suggest, and what it does not spend on
 * memory cannot stretch. Of it, the share of the bytes beyond the device's private cache is
 * drawn from the shared memory: measured here, chains of Adds on tensors that fit a core's L2
 * do not slow each other, larger ones do. */
static void share_op(const pl_cost *k, int op, const int *dev_of, double dur, sim_share *m)
{
    const pl_device *dv = &k->c->devs[dev_of[op]];
    pl_cost_terms t;
    pl_cost_terms_of(&k->g->ops[op], k->g, dv, &t);
    t.bytes += t.bias_bytes + t.reread_bytes; /* all the op moves: a Gemm's C, an RNN's R */
    double bw = pl_cost_mem_rate(dv->mem_bandwidth_Bps, &k->params);
    double body = pl_cost_op_placed_s(k, op, dev_of) - dv->launch_overhead_s;
    m->body_s[op] = body > 0 ? body : 0;
    double mem = bw > 0 && t.bytes > 0 ? t.bytes / bw : 0;
    if (mem > m->body_s[op]) mem = m->body_s[op];
    double beyond = t.bytes > dv->private_cache_bytes ? 1 - dv->private_cache_bytes / t.bytes : 0;
    m->shared_s[op] = mem * beyond;
    m->private_s[op] = mem - m->shared_s[op];
    m->demand[op] = dur > 0 ? m->shared_s[op] * bw / dur : 0;
    /* the stall: measured on compute-bound ops that stream (docs/simulator.md); a memory-bound
       op is already waiting on memory, and the factor above prices what sharing costs it */
    if (dv->host_mem_stall_Bps > 0 && m->shared_s[op] > 0 && mem < m->body_s[op])
        m->stall_s[op] = t.bytes * beyond / dv->host_mem_stall_Bps;
}

/* The bytes op keeps between requests: its distinct inputs that no op makes (weights, graph
 * inputs), which wait in the caches, or not, until the next request reads them. A tensor is
 * read again once per request and device, by its first reader there in topological order
 * (paid[t]: whether a reader on this device has paid for tensor t): an unrolled decoder's
 * steps share one weight, and only the first finds it cold. At most what the op moves (a
 * Gather reads only the rows it copies of its table: the graph's bytes rules, design.md §5). */
static double kept_bytes(const pl_graph *g, int op, unsigned char *paid)
{
    const pl_op *o = &g->ops[op];
    double b = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        int t = o->inputs[i];
        if (t < 0 || g->tensors[t].producer >= 0 || paid[t]) continue;
        paid[t] = 1;
        if (g->tensors[t].bytes > 0) b += (double)g->tensors[t].bytes;
    }
    return b < o->bytes_moved ? b : o->bytes_moved > 0 ? o->bytes_moved : 0;
}

/* op's tenant as an index into per-tenant rows of T (an op outside every tenant: row 0). */
static int tenant_row(const pl_graph *g, int op, int T)
{
    int t = g->ops[op].tenant;
    return t >= 0 && t < T ? t : 0;
}

/* The part of its kept bytes each tenant finds warm back to back: all of them, or where the
 * devices give host_cold_keep_bytes (C: the least of those the tenant's kept bytes are on)
 * and the tenant keeps K > C bytes, C / K of each (the caches hold C; the rest the profiles
 * already read from memory, so a wait cannot make it colder). K is what the profiles saw:
 * the model's kept bytes, each tensor once (kb1: per op, its first reader on any device),
 * however the plan spreads them; a tensor read on two devices is still priced cold on each. */
static void kept_scale(const pl_cost *k, const pl_plan *p, const double *kb1, int T, double *scale)
{
    double *sum = pl_calloc((size_t)T + 1, sizeof *sum);
    double *keep = pl_calloc((size_t)T + 1, sizeof *keep);
    for (int op = 0; op < k->n_ops; op++) {
        int t = tenant_row(k->g, op, T);
        double c = k->c->devs[p->dev[op]].host_cold_keep_bytes;
        sum[t] += kb1[op];
        if (kb1[op] > 0 && c > 0 && (keep[t] == 0 || c < keep[t])) keep[t] = c;
    }
    for (int t = 0; t < T; t++)
        scale[t] = keep[t] > 0 && sum[t] > keep[t] ? keep[t] / sum[t] : 1;
    free(sum), free(keep);
}

/* What each op spends again when wholly cold, and each tenant's work (own_s). The devices
 * with cold figures (`slot`: their index among them, -1 for the others) each get a row of
 * `paid`, so that a tensor pays once per device. */
static void cold_prep(const pl_cost *k, const pl_plan *p, const double *dur, sim_share *m)
{
    int *slot = pl_malloc(((size_t)k->n_devs + 1) * sizeof *slot), n_cold = 0;
    for (int d = 0; d < k->n_devs; d++)
        slot[d] = m->dom[d] >= 0 && k->c->devs[d].host_cold_read_Bps > 0 ? n_cold++ : -1;
    if (!n_cold) return free(slot), (void)0; /* the searches' simulations pay nothing for it */
    const pl_graph *g = k->g;
    int T = pl_graph_tenants(g) > 0 ? pl_graph_tenants(g) : 1;
    size_t nt = (size_t)g->n_tensors + 1;
    m->kept_s = pl_calloc((size_t)k->n_ops + 1, sizeof *m->kept_s);
    m->own_s = pl_calloc((size_t)T + 1, sizeof *m->own_s);
    unsigned char *paid = pl_calloc(nt * ((size_t)n_cold + 1), 1), *once = paid + nt * n_cold;
    double *kb = pl_calloc(2 * ((size_t)k->n_ops + 1), sizeof *kb), *kb1 = kb + k->n_ops + 1;
    double *scale = pl_calloc((size_t)T + 1, sizeof *scale);
    for (int i = 0; i < k->n_ops; i++) {
        int op = g->topo[i], d = p->dev[op];
        m->own_s[tenant_row(g, op, T)] += dur[op];
        if (slot[d] < 0) continue;
        kb[op] = kept_bytes(g, op, paid + nt * (size_t)slot[d]);
        kb1[op] = kept_bytes(g, op, once);
    }
    kept_scale(k, p, kb1, T, scale);
    for (int op = 0; op < k->n_ops; op++) {
        const pl_device *dv = &k->c->devs[p->dev[op]];
        if (slot[p->dev[op]] < 0) continue;
        m->kept_s[op] = kb[op] * scale[tenant_row(g, op, T)] / dv->host_cold_read_Bps +
                        dv->host_cold_time_share * dur[op];
        m->cold = true;
    }
    free(paid), free(slot), free(kb), free(scale);
}

/* The fraction of a share's kept bytes gone from the caches after age a (tau > 0). */
static double gone(double a, double tau)
{
    return a > 0 ? 1 - exp(-a / tau) : 0;
}

void sim_share_cold(const pl_cost *k, const pl_plan *p, double period_s, sim_share *m)
{
    if (!m->cold) return;
    int T = pl_graph_tenants(k->g) > 0 ? pl_graph_tenants(k->g) : 1;
    for (int op = 0; op < k->n_ops; op++) {
        double tau = k->c->devs[p->dev[op]].host_cold_tau_s;
        double own = m->own_s[tenant_row(k->g, op, T)];
        double c = m->kept_s[op] > 0 && period_s > 0 ? gone(period_s, tau) - gone(own, tau) : 0;
        m->cold_s[op] = c > 0 ? c * m->kept_s[op] : 0;
    }
}

void sim_share_prep(const pl_cost *k, const pl_plan *p, const double *dur, bool cold, sim_share *m)
{
    memset(m, 0, sizeof *m);
    int *dom = pl_malloc((k->n_devs + 1) * sizeof *dom);
    m->n_dom = pl_cluster_mem_domains(k->c, dom);
    if (!m->n_dom) return free(dom), (void)0;
    m->dom = dom;
    share_domains(k, m);
    size_t n = (size_t)k->n_ops + 1;
    m->private_s = pl_calloc(n, sizeof *m->private_s);
    m->shared_s = pl_calloc(n, sizeof *m->shared_s);
    m->body_s = pl_calloc(n, sizeof *m->body_s);
    m->demand = pl_calloc(n, sizeof *m->demand);
    m->stall_s = pl_calloc(n, sizeof *m->stall_s);
    m->cold_s = pl_calloc(n, sizeof *m->cold_s);
    for (int op = 0; op < k->n_ops; op++)
        if (dom[p->dev[op]] >= 0) share_op(k, op, p->dev, dur[op], m);
    if (cold) cold_prep(k, p, dur, m); /* a search's back-to-back runs never read it */
}

void sim_share_free(sim_share *m)
{
    free(m->dom), free(m->dom_off), free(m->dom_dev), free(m->dom_Bps);
    free(m->private_s), free(m->shared_s), free(m->body_s), free(m->demand);
    free(m->stall_s), free(m->kept_s), free(m->cold_s), free(m->own_s);
    memset(m, 0, sizeof *m);
}
