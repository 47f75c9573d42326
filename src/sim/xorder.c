/* xorder.c: the plan's transfer order (docs/simulator.md): ranks every transfer, links the
 * sequence each port (or channel) serves strictly, and, when a run deadlocks, names the port
 * and the transfer that waits forever. Like the op order, a port's next transfer in the order
 * is one more release its successor waits for, so the event loop never searches. */
#include "sim_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A transfer's priority: the smallest over the edges it serves (NaN counts as +inf). Graph
 * inputs sent from the I/O device serve no edge and come first: they are ready at time 0, so
 * they never make a port wait long. Output returns serving no edge come last: nothing waits
 * for them. */
static double *slot_prios(const sim_static *s)
{
    double *pr = pl_malloc((s->n_slots + 1) * sizeof *pr);
    for (int sl = 0; sl < s->n_slots; sl++)
        pr[sl] = s->producer[s->slots[sl].tensor] < 0 ? -INFINITY : INFINITY;
    for (int op = 0; op < s->n; op++)
        for (int i = s->in_off[op]; i < s->in_off[op + 1]; i++) {
            const sim_in *in = &s->in[i];
            int src = s->producer[in->tensor], e;
            if (in->slot < 0 || src < 0 || (e = pl_plan_edge(s->g, src, op, in->tensor)) < 0)
                continue;
            double v = s->p->xfer_priority[e];
            if (!isnan(v) && v < pr[in->slot]) pr[in->slot] = v;
        }
    return pr;
}

typedef struct xkey {
    double prio;
    int tensor, to, reader, slot; /* reader: its topological position, -1 when none */
} xkey;

/* Priority, then tensor index, then destination, then the reader's topological position. */
static int cmp_xkey(const void *a, const void *b)
{
    const xkey *x = a, *y = b;
    if (x->prio != y->prio) return x->prio < y->prio ? -1 : 1;
    if (x->tensor != y->tensor) return x->tensor - y->tensor;
    if (x->to != y->to) return x->to - y->to;
    if (x->reader != y->reader) return x->reader - y->reader;
    return x->slot - y->slot;
}

/* The port (k 0: send port or channel; 1: receive port) a slot uses, or -1. */
static int port_of(const sim_static *s, const sim_slot *sl, int k)
{
    if (s->o->contention == PL_CONTENTION_PAIR) return k == 0 ? sl->from * s->D + sl->to : -1;
    return k == 0 ? sl->from : sl->to;
}

/* Each port's transfers in rank order; a zero-time transfer holds no port, so it is in no
 * sequence (the MILP makes such an edge a plain precedence). */
static void link_ports(sim_static *s, const xkey *seq)
{
    int np = s->D * s->D + 1;
    int *last = pl_malloc(2 * np * sizeof *last);
    for (int i = 0; i < 2 * np; i++)
        last[i] = -1;
    for (int i = 0; i < s->n_slots; i++) {
        int sl = seq[i].slot;
        s->rank[sl] = i;
        if (!(s->slots[sl].dur > 0)) continue;
        for (int k = 0; k < 2; k++) {
            int port = port_of(s, &s->slots[sl], k);
            if (port < 0) continue;
            int *l = &last[k * np + port];
            if (*l >= 0) s->port_next[2 * *l + k] = sl, s->port_prev[2 * sl + k] = *l;
            s->slot_wait0[sl] += *l >= 0;
            *l = sl;
        }
    }
    free(last);
}

int sim_xorder(sim_static *s, pl_err *err)
{
    s->slot_wait0 = pl_calloc(s->n_slots + 1, sizeof *s->slot_wait0);
    for (int sl = 0; sl < s->n_slots; sl++)
        s->slot_wait0[sl] = s->producer[s->slots[sl].tensor] >= 0; /* its data */
    const pl_plan *p = s->p;
    if (!p->xfer_priority || s->o->contention == PL_CONTENTION_NONE) return 0;
    if (p->n_edges != s->g->n_edges)
        return pl_err_set(err,
                          "simulate: the plan's transfer order has %d entries, but the model "
                          "has %d edges",
                          p->n_edges, s->g->n_edges);
    s->strict = true;
    double *pr = slot_prios(s);
    xkey *seq = pl_malloc((s->n_slots + 1) * sizeof *seq);
    for (int sl = 0; sl < s->n_slots; sl++) {
        const sim_slot *x = &s->slots[sl];
        seq[sl] =
            (xkey){pr[sl], x->tensor, x->to, x->reader >= 0 ? s->g->topo_pos[x->reader] : -1, sl};
    }
    pl_sort(seq, s->n_slots, sizeof *seq, cmp_xkey);
    s->rank = pl_malloc((s->n_slots + 1) * sizeof *s->rank);
    s->port_prev = pl_malloc((2 * s->n_slots + 1) * sizeof *s->port_prev);
    s->port_next = pl_malloc((2 * s->n_slots + 1) * sizeof *s->port_next);
    for (int i = 0; i < 2 * s->n_slots; i++)
        s->port_prev[i] = s->port_next[i] = -1;
    link_ports(s, seq);
    free(seq);
    free(pr);
    return 0;
}

void sim_xorder_free(sim_static *s)
{
    free(s->rank), free(s->port_prev), free(s->port_next), free(s->slot_wait0);
    s->rank = s->port_prev = s->port_next = s->slot_wait0 = NULL;
}

/* ---- deadlock ---- */

/* "'x' to 'gpu1'", and "for 'b'" when the transfer serves one reader. */
static void describe(const sim_static *s, int sl, char *buf, size_t n)
{
    const sim_slot *x = &s->slots[sl];
    int len =
        snprintf(buf, n, "'%s' to '%s'", s->g->tensors[x->tensor].name, s->k->c->devs[x->to].name);
    if (x->reader >= 0 && len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - len, " (for op '%s')", s->g->ops[x->reader].name);
}

static bool data_came(const sim_static *s, const sim_run *run, int r, int sl)
{
    int prod = s->producer[s->slots[sl].tensor];
    return prod < 0 || run->op_end[(size_t)r * s->n + prod] >= 0;
}

static int report(const sim_static *s, const sim_run *run, int r, int sl, int k, pl_err *err)
{
    static const char *const what[] = {"send port of", "receive port of", "channel from"};
    const sim_slot *x = &s->slots[sl];
    int pv = s->port_prev[2 * sl + k], kind = s->o->contention == PL_CONTENTION_PAIR ? 2 : k;
    char a[256], b[256], port[160];
    describe(s, sl, a, sizeof a);
    describe(s, pv, b, sizeof b);
    snprintf(port, sizeof port, "the %s '%s'%s%s", what[kind],
             s->k->c->devs[k == 1 ? x->to : x->from].name, kind == 2 ? " to " : "",
             kind == 2 ? s->k->c->devs[x->to].name : "");
    int prod = s->producer[s->slots[pv].tensor];
    char why[200] = "it waits behind another transfer";
    if (!data_came(s, run, r, pv))
        snprintf(why, sizeof why, "op '%s', which makes its tensor, never runs",
                 s->g->ops[prod].name);
    return pl_err_set(err,
                      "simulate: the plan's transfer order deadlocks: on %s, the transfer of %s "
                      "is ready but waits forever for the transfer of %s, listed before it, "
                      "which never runs (%s)",
                      port, a, b, why);
}

/* A transfer whose data came but that never started waits for a port predecessor that never
 * started: the order is to blame. Returns -1 with the message, or 0 when none is found. */
int sim_xorder_deadlock(const sim_static *s, const sim_run *run, pl_err *err)
{
    if (!s->strict) return 0;
    for (int r = 0; r < run->K; r++)
        for (int sl = 0; sl < s->n_slots; sl++) {
            size_t inst = (size_t)r * s->n_slots + sl;
            if (run->slot_start[inst] >= 0 || !data_came(s, run, r, sl)) continue;
            for (int k = 0; k < 2; k++) {
                int pv = s->port_prev[2 * sl + k];
                if (pv >= 0 && run->slot_start[(size_t)r * s->n_slots + pv] < 0)
                    return report(s, run, r, sl, k, err);
            }
        }
    return 0;
}
