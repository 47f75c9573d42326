/* memshare.c: memory shared by the devices of one host (docs/simulator.md, "Shared memory").
 *
 * Two cores of one CPU each reach the memory bandwidth the cost model gives them when they run
 * alone, but not both at once: measured on this machine's two cores (local-cpu-percore.json), two
 * chains of memory-bound Adds slow each other, two chains of MatMuls do not. So the devices of
 * one host that give host_mem_bandwidth_Bps draw from one shared bandwidth, and each op's
 * memory term stretches by the factor their summed demand exceeds it (run.c plays it; the
 * checker re-integrates it). Here: the domains and each op's terms, computed once per plan. */
#include "sim_internal.h"

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
    t.bytes += t.bias_bytes; /* all the op moves, a Gemm's C too */
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

void sim_share_prep(const pl_cost *k, const pl_plan *p, const double *dur, sim_share *m)
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
    for (int op = 0; op < k->n_ops; op++)
        if (dom[p->dev[op]] >= 0) share_op(k, op, p->dev, dur[op], m);
}

void sim_share_free(sim_share *m)
{
    free(m->dom), free(m->dom_off), free(m->dom_dev), free(m->dom_Bps);
    free(m->private_s), free(m->shared_s), free(m->body_s), free(m->demand);
    free(m->stall_s);
    memset(m, 0, sizeof *m);
}
