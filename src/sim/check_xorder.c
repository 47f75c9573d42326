/* check_xorder.c: the checker's account of the plan's transfer order (docs/simulator.md):
 * every port (or channel) must carry its transfers of one request strictly in the order's
 * sequence. The ranks are recomputed here from the plan and graph, sharing nothing with the
 * event loop's xorder.c. */
#include "check_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct xo {
    int res, req;
    double prio;
    int tensor, to, reader; /* reader: its topological position, -1 when none */
    int idx;                /* into r->xfers */
} xo;

static int cmp_xo(const void *a, const void *b)
{
    const xo *x = a, *y = b;
    if (x->res != y->res) return x->res - y->res;
    if (x->req != y->req) return x->req - y->req;
    if (x->prio != y->prio) return x->prio < y->prio ? -1 : 1;
    if (x->tensor != y->tensor) return x->tensor - y->tensor;
    if (x->to != y->to) return x->to - y->to;
    return x->reader - y->reader;
}

/* The priority of edge (src, dst, t), +inf when it is not an edge or has NaN. */
static double edge_prio(const chk *c, int src, int dst, int t)
{
    int e = pl_plan_edge(c->g, src, dst, t);
    return e < 0 || isnan(c->p->xfer_priority[e]) ? INFINITY : c->p->xfer_priority[e];
}

/* A transfer's priority: its reader's edge (per_edge); else the smallest over the readers on
 * its destination; graph inputs first, returns serving no reader last. */
static double xfer_prio(const chk *c, const pl_xfer *x)
{
    const pl_tensor *tp = &c->g->tensors[x->tensor];
    if (tp->producer < 0) return -INFINITY;
    if (x->reader >= 0) return edge_prio(c, tp->producer, x->reader, x->tensor);
    double best = INFINITY;
    for (int i = 0; !c->o->per_edge && i < tp->n_consumers; i++)
        if (c->p->dev[tp->consumers[i]] == x->to)
            best = fmin(best, edge_prio(c, tp->producer, tp->consumers[i], x->tensor));
    return best;
}

static void describe(const chk *c, const pl_xfer *x, char *buf, size_t n)
{
    int len =
        snprintf(buf, n, "'%s' to '%s'", c->g->tensors[x->tensor].name, chk_dev_name(c, x->to));
    if (x->reader >= 0 && len >= 0 && (size_t)len < n)
        snprintf(buf + len, n - len, " (for op '%s')", c->g->ops[x->reader].name);
}

/* kind 0: send ports, 1: receive ports, 2: channels. */
static int check_kind(chk *c, xo *v, int kind)
{
    int m = 0;
    for (int i = 0; i < c->r->n_xfers; i++) {
        const pl_xfer *x = &c->r->xfers[i];
        if (!(pl_cost_xfer_s(c->k, x->tensor, x->from, x->to) > 0)) continue; /* holds no port */
        int res = kind == 0 ? x->from : kind == 1 ? x->to : x->from * c->D + x->to;
        int rd = x->reader >= 0 ? c->g->topo_pos[x->reader] : -1;
        v[m++] = (xo){res, x->request, xfer_prio(c, x), x->tensor, x->to, rd, i};
    }
    pl_sort(v, m, sizeof *v, cmp_xo);
    for (int i = 1; i < m; i++) {
        if (v[i].res != v[i - 1].res || v[i].req != v[i - 1].req) continue;
        const pl_xfer *a = &c->r->xfers[v[i - 1].idx], *b = &c->r->xfers[v[i].idx];
        if (chk_le(a->end_s, b->start_s)) continue;
        static const char *const what[] = {"send port of", "receive port of", "channel from"};
        char da[256], db[256];
        describe(c, a, da, sizeof da);
        describe(c, b, db, sizeof db);
        return chk_fail(c,
                        "the %s '%s'%s%s starts the transfer of %s at %.9g s, before the transfer "
                        "of %s, listed before it in the plan's transfer order, ends at %.9g s "
                        "(request %d)",
                        what[kind], chk_dev_name(c, kind == 1 ? b->to : b->from),
                        kind == 2 ? " to " : "", kind == 2 ? chk_dev_name(c, b->to) : "", db,
                        b->start_s, da, a->end_s, b->request);
    }
    return 0;
}

int chk_xorder(chk *c)
{
    const pl_plan *p = c->p;
    if (!p->xfer_priority || c->o->contention == PL_CONTENTION_NONE) return 0;
    if (p->n_edges != c->g->n_edges)
        return chk_fail(c, "the plan's transfer order has %d entries, the model %d edges",
                        p->n_edges, c->g->n_edges);
    xo *v = pl_malloc((c->r->n_xfers + 1) * sizeof *v);
    int rc = c->o->contention == PL_CONTENTION_PAIR
                 ? check_kind(c, v, 2)
                 : (check_kind(c, v, 0) < 0 ? -1 : check_kind(c, v, 1));
    free(v);
    return rc;
}
