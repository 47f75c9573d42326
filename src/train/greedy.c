/* greedy.c: the greedy passes over the op groups that TAG's refinement and the HeteroG-like
 * baseline make (docs/train.md, "Search" and "Baselines"); their simulations go over the pool of
 * workers (dist.h's pl_dist_map_or_here) when the context asks for it (docs/dist.md, "train").
 *
 * A pass visits the op groups in descending time; for each it tries every alternative row
 * (device groups and option) on a copy of its current strategy and keeps the copy when the
 * simulation is faster. An alternative replaces the group's whole row, so the candidates of one
 * group (of every pass run together) do not depend on which of them was kept before: they are
 * the items of one map, and the keep rule is then replayed in order. The result is exactly what
 * one process trying them in turn gets, on any number of ranks. */
#include "placer/dist.h"
#include "placer/train.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tr_set_row(pl_train_strategy *st, int group, const pl_train_action *a)
{
    memcpy(st->P + (size_t)group * st->n_dgroups, a->uses, (size_t)st->n_dgroups);
    st->O[group] = a->option;
}

/* One candidate's simulation, as the bytes a map gathers. */
typedef struct {
    double t; /* INFINITY when it does not fit */
    int ok;
    char msg[PL_ERR_MAX];
} cand;

typedef struct {
    const pl_train_ctx *x;
    pl_train_strategy **st;
    int n_alt, group;
    tr_alt_fn alt;
    const void *user;
} step;

/* Item i: pass i / n_alt with alternative i % n_alt on the step's group. */
static void try_item(int i, void *out, void *user)
{
    const step *p = user;
    cand *c = out;
    memset(c, 0, sizeof *c);
    pl_train_strategy *s = pl_train_strategy_copy(p->st[i / p->n_alt]);
    p->alt(s, p->group, i % p->n_alt, p->user);
    pl_train_eval e;
    pl_err err = {""};
    c->ok = pl_train_evaluate(p->x, s, &e, &err) == 0;
    if (c->ok) {
        c->t = e.oom ? INFINITY : e.iteration_s;
        pl_train_eval_free(&e);
    } else
        snprintf(c->msg, sizeof c->msg, "%s", err.msg);
    pl_train_strategy_free(s);
}

/* The keep rule, in the order one process tries the candidates. */
static int replay(const step *p, const cand *c, int n, double *t, double eps, pl_err *err)
{
    for (int k = 0; k < n; k++)
        for (int a = 0; a < p->n_alt; a++) {
            const cand *ci = &c[k * p->n_alt + a];
            if (!ci->ok) return pl_err_set(err, "%s", ci->msg);
            if (ci->t < t[k] * (1 - eps)) {
                p->alt(p->st[k], p->group, a, p->user);
                t[k] = ci->t;
            }
        }
    return 0;
}

int tr_greedy(const pl_train_ctx *x, pl_train_strategy **st, double *t, int n, int n_alt,
              tr_alt_fn alt, const void *user, double eps, pl_err *err)
{
    int *order = pl_train_group_order(x), items = n * n_alt, rc = 0;
    cand *c = pl_malloc((size_t)items * sizeof *c);
    step p = {x, st, n_alt, 0, alt, user};
    for (int k = 0; rc == 0 && k < x->og.n; k++) {
        p.group = order[k];
        if (pl_dist_map_or_here(x->dist, items, try_item, c, sizeof *c, &p) < 0)
            rc = pl_err_set(err, "train: gathering the simulations from the MPI ranks failed: %s",
                            pl_dist_error());
        else
            rc = replay(&p, c, n, t, eps, err);
    }
    free(c), free(order);
    return rc < 0 ? -1 : x->og.n * items;
}
