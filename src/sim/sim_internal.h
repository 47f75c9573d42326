/* sim_internal.h: what the simulator's files share (docs/simulator.md).
 *
 * prep.c turns (cost table, plan) into a static structure that needs no search while the
 * events run: per op, its distinct non-weight inputs with where each one comes from; per
 * tensor, its transfers ("slots", one per destination device); and the memory "copies" (a
 * tensor on one device) with how many releases free each one. run.c plays the events over
 * K requests; result.c derives the figures; check.c and trace.c read a recorded result. */
#ifndef PLACER_SIM_INTERNAL_H
#define PLACER_SIM_INTERNAL_H

#include "placer/sim.h"

/* ---- the static structure of a plan ---- */

/* Memory shared by the devices of one host (docs/simulator.md, "Shared memory"). An op alone
 * takes dur = fixed + body (fixed: its launch and stage charge); its memory term, at most
 * body, is private_s + shared_s, shared_s the part for the bytes beyond its device's private
 * cache: contention stretches that part. With the domain's demand over its bandwidth at
 * f >= 1, the op's time is dur + max(0, private_s + shared_s * f - body). Its demand is the
 * shared bandwidth it draws alone, shared_s * bandwidth / dur. */
typedef struct sim_share {
    int n_dom;
    int *dom;     /* per device: its domain, or -1 */
    int *dom_off; /* CSR over domains: their devices, in index order */
    int *dom_dev;
    double *dom_Bps;              /* per domain: the shared bandwidth times eff_memory */
    double *private_s, *shared_s; /* per op, on its device */
    double *body_s;               /* per op: its time less launch and stage charge */
    double *demand;               /* per op: B/s drawn alone */
    /* per op: what each other device of its domain running an op with shared_s > 0 adds to
     * it (the stall, pl_device.host_mem_stall_Bps): its bytes beyond the private cache at the
     * stall rate when its memory term is below its body (hidden behind compute), else 0 */
    double *stall_s;
    /* per op: what it spends again when wholly cold (its kept bytes, weights and graph
     * inputs, at its device's cold read rate, plus the cold time share of its time alone), and
     * that times its tenant's cold fraction f(P) - f(own) at the period P cold_s was made for
     * (sim_share_cold; 0 everywhere before, and when the host gives no cold figures) */
    double *kept_s, *cold_s;
    double *own_s; /* per tenant: its work, the sum of its ops' times alone */
    bool cold;     /* some device of a domain gives the cold figures */
} sim_share;

/* The domains and the per-op terms for plan p (dur[op]: each op's time alone); the cold
 * terms only when `cold` (the run is priced as a round: sim_round). n_dom stays 0 (nothing
 * allocated) when no device shares its memory. */
void sim_share_prep(const pl_cost *k, const pl_plan *p, const double *dur, bool cold, sim_share *m);
void sim_share_free(sim_share *m);
/* Prices each op's cold read for period P (period_s 0: none). */
void sim_share_cold(const pl_cost *k, const pl_plan *p, double period_s, sim_share *m);
/* Whether a run is one request that stands for a round of a steady state other than the
 * back-to-back runs the profiles timed (several tenants, or a wait), which the cold term
 * prices where the host gives the figures (docs/simulator.md, "Cold requests"). */
static inline bool sim_round(const pl_graph *g, const pl_sim_opts *o)
{
    return o->requests <= 1 && (pl_graph_tenants(g) > 1 || o->idle_s > 0);
}

/* The contention factor of domain `dom` given the summed demand of the ops running in it. */
static inline double sim_share_factor(const sim_share *m, int dom, double demand)
{
    return demand > m->dom_Bps[dom] ? demand / m->dom_Bps[dom] : 1;
}
/* Op's time under factor f with `others` other devices of its domain running ops that draw
 * shared memory (its time alone when f is 1, others 0 and it is warm). The stall and a cold
 * request's re-reads are both its trip beyond the private cache: it pays the larger, not
 * both (measured: two cold gcn_coras side by side cost each other nothing). */
static inline double sim_share_time(const sim_share *m, int op, double dur, double f, int others)
{
    double over = m->private_s[op] + m->shared_s[op] * f - m->body_s[op];
    double stall = others * m->stall_s[op], cold = m->cold_s[op];
    return (over > 0 ? dur + over : dur) + (stall > cold ? stall : cold);
}
/* The devices of domain `dom` running an op that draws shared memory; run[d] is device d's
 * running op instance or -1, n_ops the plan's ops (instances are r * n_ops + op). */
static inline int sim_share_drawing(const sim_share *m, int dom, const int *run, int n_ops)
{
    int n = 0;
    for (int j = m->dom_off[dom]; j < m->dom_off[dom + 1]; j++)
        n += run[m->dom_dev[j]] >= 0 && m->shared_s[run[m->dom_dev[j]] % n_ops] > 0;
    return n;
}
/* Of those, the others than op's own device's. */
static inline int sim_share_others(const sim_share *m, int op, int drawing)
{
    return drawing - (m->shared_s[op] > 0);
}

/* A transfer of one tensor to one device (made once per request); under opts.per_edge, of
 * one tensor to one reading op. */
typedef struct sim_slot {
    int tensor, from, to;
    int copy;   /* the copy it makes on `to` */
    int reader; /* per_edge: the op it serves; -1 for per-device sends, inputs and returns */
    bool ret;   /* returns a graph output to the I/O device: counts toward the end */
    double dur; /* its time; 0 holds no port and completes when ready */
} sim_slot;

/* One distinct non-weight input of an op. */
typedef struct sim_in {
    int tensor;
    int copy;   /* the copy the op reads */
    int slot;   /* the transfer that brings it, or -1 when it is local */
    bool waits; /* not present at time 0: produced by an op, or sent */
} sim_in;

/* A tensor on one device. Copy t (< n_tensors) is tensor t where it is made: on its
 * producer's device, or a graph input on the I/O device. Later copies, in the order met, are
 * the tensor elsewhere: received (slot >= 0), a graph input on every device that reads it
 * (slot -1), or a weight resident where it is read (slot -1, never allocated: weights are a
 * constant per device). Each tensor chains its other copies through head[t] and next. */
typedef struct sim_copy {
    int dev;
    int slot;
    int next;
    double bytes;
} sim_copy;

typedef struct sim_static {
    const pl_cost *k;
    const pl_plan *p;
    const pl_graph *g;
    const pl_sim_opts *o;
    int n, D, io, n_tensors;
    /* per tensor, copied out of the graph's records so later passes read compact arrays */
    unsigned char *is_weight;
    int *producer;
    int *src_dev; /* where copy t is; -1 for weights and inputs on every device */
    int *head;    /* the tensor's first other copy, or -1 */
    /* per op */
    double *dur;   /* on its device */
    double *extra; /* working memory while it runs (task graphs) */
    int *in_off;   /* CSR into in[]: distinct non-weight inputs */
    sim_in *in;
    int *out_off, *out; /* CSR: non-weight outputs */
    int *wait0;         /* releases it waits for: inputs not there at 0, order predecessor */
    int *order_pos, *order_next; /* in the plan's order; NULL without one */
    /* transfers and copies */
    sim_slot *slots;
    int n_slots, n_returns;
    sim_copy *copies;
    int n_copies;
    int *copy_refs;   /* releases that free a copy: producer, readers, sends, hold */
    int *rd_off, *rd; /* CSR over copies: the ops that read each one */
    int *holds;       /* copies held until their request ends (graph outputs) */
    int n_holds;
    int *t0; /* copies present at time 0 (graph inputs) */
    int n_t0;
    double *weights; /* per device: resident weight bytes */
    /* The transfer order (xorder.c), when the plan gives one and transfers contend: each
     * slot's rank in it, and its neighbours in the sequence of each port it uses
     * ([2 * slot + k], k 0: send port or channel, 1: receive port; -1 when none). */
    bool strict;
    int *rank;
    int *port_prev, *port_next;
    int *slot_wait0; /* releases a slot waits for: its data, its port predecessors */
    sim_share share; /* memory shared between devices (memshare.c); n_dom 0 when none */
} sim_static;

int sim_prep(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o, sim_static *s, pl_err *err);
/* xorder.c: ranks the transfers by the plan's transfer order and links each port's
 * sequence; fails on a malformed transfer order. */
int sim_xorder(sim_static *s, pl_err *err);
void sim_xorder_free(sim_static *s);
void sim_static_free(sim_static *s);

/* ---- run state, kept after the run for the figures ---- */
typedef struct sim_run {
    int K;
    double *op_start, *op_end;     /* [r * n + op] */
    int *dev_prev;                 /* [r * n + op]: instance run just before on its device, or -1 */
    double *slot_start, *slot_end; /* [r * n_slots + s]; -1 when not sent */
    int *xfer_seq;                 /* slot instances in the order they started */
    int n_xfer;
    double *req_start, *req_end;
    double *peak, *busy, *link_bytes, *link_busy;
    long events;
    int done; /* op instances finished */
} sim_run;

int sim_run_events(const sim_static *s, const pl_sim_opts *o, sim_run *run, pl_err *err);
void sim_run_free(sim_run *run);

/* result.c */
int sim_deadlock(const sim_static *s, const sim_run *run, pl_err *err);
/* xorder.c: names the port and transfer a deadlocked transfer order waits on; 0 when the
 * transfer order is not to blame. */
int sim_xorder_deadlock(const sim_static *s, const sim_run *run, pl_err *err);
void sim_fill_result(const sim_static *s, sim_run *run, const pl_sim_opts *o, pl_sim_result *r);

#endif
