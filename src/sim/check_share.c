/* check_share.c: the checker's view of shared memory (docs/simulator.md, "Shared memory").
 *
 * The event loop moves ends as the set of running ops changes; this re-derives the same from
 * the recorded intervals alone: a sweep over every start and end on the devices of shared
 * domains, which integrates each op's progress (its time alone per second, at the factor of
 * the ops running with it) and asks that every op has done exactly its time alone when it
 * ends. Runs after the device-overlap check, so a device runs one op at a time. */
#include "check_internal.h"
#include "sim_internal.h"

#include <stdlib.h>

typedef struct mark {
    double t;
    int inst;
} mark;

static int cmp_mark(const void *a, const void *b)
{
    const mark *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->inst > y->inst) - (x->inst < y->inst);
}

/* Progress of every running op of every domain over [t0, t1]. */
static void advance(const chk *c, const sim_share *m, const int *running, const double *dur,
                    double t0, double t1, double *prog)
{
    for (int i = 0; i < m->n_dom; i++) {
        double demand = 0;
        for (int j = m->dom_off[i]; j < m->dom_off[i + 1]; j++)
            if (running[m->dom_dev[j]] >= 0) demand += m->demand[running[m->dom_dev[j]] % c->n];
        double f = sim_share_factor(m, i, demand);
        int drawing = sim_share_drawing(m, i, running, c->n);
        for (int j = m->dom_off[i]; j < m->dom_off[i + 1]; j++) {
            int inst = running[m->dom_dev[j]], op = inst % c->n;
            if (inst < 0) continue;
            double t = sim_share_time(m, op, dur[op], f, sim_share_others(m, op, drawing));
            prog[inst] += t > 0 ? (t1 - t0) * dur[op] / t : 0;
        }
    }
}

/* Starts and ends (as inst and -1 - inst) of the op instances on shared devices, by time; at
 * one instant ends come first. An instant op (start == end) has none: it did no work. */
static int collect(const chk *c, mark *v)
{
    int n = 0;
    for (int r = 0; r < c->K; r++)
        for (int op = 0; op < c->n; op++) {
            int inst = r * c->n + op;
            if (c->dom[c->p->dev[op]] < 0) continue;
            if (c->r->op_start_s[inst] == c->r->op_end_s[inst]) {
                v[n++] = (mark){c->r->op_end_s[inst], -1 - inst};
                continue;
            }
            v[n++] = (mark){c->r->op_start_s[inst], inst};
            v[n++] = (mark){c->r->op_end_s[inst], -1 - inst};
        }
    pl_sort(v, n, sizeof *v, cmp_mark);
    return n;
}

static int sweep(chk *c, const sim_share *m, const double *dur)
{
    size_t ni = (size_t)c->n * c->K + 1;
    mark *v = pl_malloc(2 * ni * sizeof *v);
    double *prog = pl_calloc(ni, sizeof *prog);
    int *running = pl_malloc((c->D + 1) * sizeof *running), nv = collect(c, v), rc = 0;
    for (int d = 0; d < c->D; d++)
        running[d] = -1;
    for (int i = 0; i < nv && rc == 0; i++) {
        if (i > 0 && v[i].t > v[i - 1].t) advance(c, m, running, dur, v[i - 1].t, v[i].t, prog);
        int inst = v[i].inst >= 0 ? v[i].inst : -1 - v[i].inst, op = inst % c->n;
        int d = c->p->dev[op];
        if (v[i].inst >= 0) {
            running[d] = inst;
            continue;
        }
        if (running[d] == inst) running[d] = -1;
        if (!chk_le(prog[inst], dur[op]) || !chk_le(dur[op], prog[inst]))
            rc = chk_fail(c,
                          "op '%s' runs for %.9g s on '%s', which shares its memory: that is "
                          "%.9g s of its %.9g s alone at the recorded overlaps (request %d)",
                          c->g->ops[op].name, c->r->op_end_s[inst] - c->r->op_start_s[inst],
                          chk_dev_name(c, d), prog[inst], dur[op], inst / c->n);
    }
    free(v), free(prog), free(running);
    return rc;
}

int chk_share(chk *c)
{
    double *dur = pl_malloc((c->n + 1) * sizeof *dur);
    for (int op = 0; op < c->n; op++)
        dur[op] = pl_cost_op_placed_s(c->k, op, c->p->dev) + c->stage[op];
    sim_share m;
    sim_share_prep(c->k, c->p, dur, c->r->cold_period_s > 0, &m);
    sim_share_cold(c->k, c->p, c->r->cold_period_s, &m); /* the period the run was priced at */
    int rc = sweep(c, &m, dur);
    sim_share_free(&m);
    free(dur);
    return rc;
}
