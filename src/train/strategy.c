/* strategy.c: TAG's deployment strategies (P, O) and SFB decisions, in memory
 * (docs/train.md, "Strategies"). */
#include "placer/train.h"
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

const char *pl_train_option_name(pl_train_option o)
{
    static const char *names[PL_OPT_COUNT] = {"allreduce", "ps", "duplicate", "mp"};
    return o >= 0 && o < PL_OPT_COUNT ? names[o] : "?";
}

pl_train_strategy *pl_train_strategy_new(int n_groups, int n_dgroups)
{
    pl_train_strategy *s = pl_calloc(1, sizeof *s);
    s->n_groups = n_groups, s->n_dgroups = n_dgroups;
    s->P = pl_calloc((size_t)n_groups * n_dgroups + 1, 1);
    s->O = pl_calloc((size_t)n_groups + 1, sizeof *s->O);
    return s;
}

static void *dup_bytes(const void *p, size_t n)
{
    if (!p) return NULL;
    void *q = pl_malloc(n + 1);
    memcpy(q, p, n);
    return q;
}

pl_train_strategy *pl_train_strategy_copy(const pl_train_strategy *s)
{
    pl_train_strategy *c = pl_calloc(1, sizeof *c);
    *c = *s;
    c->P = dup_bytes(s->P, (size_t)s->n_groups * s->n_dgroups);
    c->O = dup_bytes(s->O, (size_t)s->n_groups * sizeof *s->O);
    c->sfb = dup_bytes(s->sfb, (size_t)s->n_sfb);
    c->batch_share = dup_bytes(s->batch_share, (size_t)s->n_devs * sizeof *s->batch_share);
    return c;
}

void pl_train_strategy_free(pl_train_strategy *s)
{
    if (!s) return;
    free(s->P), free(s->O), free(s->sfb), free(s->batch_share);
    free(s);
}

int *pl_train_group_order(const pl_train_ctx *x)
{
    int n = x->og.n, *order = pl_malloc((size_t)n * sizeof *order + 1);
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: stable, at most a few hundred groups */
        for (int j = i; j > 0 && x->og.time_s[order[j]] > x->og.time_s[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    return order;
}
