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
    c->bucket = dup_bytes(s->bucket, 2 * (size_t)s->n_bucket * sizeof *s->bucket);
    return c;
}

void pl_train_strategy_free(pl_train_strategy *s)
{
    if (!s) return;
    free(s->P), free(s->O), free(s->sfb), free(s->batch_share), free(s->bucket);
    free(s);
}

int *pl_train_group_order(const pl_train_ctx *x)
{
    int n = x->og.n, *order = pl_malloc((size_t)n * sizeof *order);
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: stable, at most a few hundred groups */
        for (int j = i; j > 0 && x->og.time_s[order[j]] > x->og.time_s[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    return order;
}

/* [overlap, has sfb, has batch_share, has bucket] P O sfb batch_share bucket: the last three
 * always take their room (the training graph's ops, the cluster's devices, its parameters), so
 * the size is the context's alone. */
size_t tr_strategy_bytes(const pl_train_ctx *x)
{
    return 4 + (size_t)x->og.n * x->dg.n + (size_t)x->og.n * sizeof(pl_train_option) +
           (size_t)x->t->g->n_ops + (size_t)x->c->n_devs * sizeof(double) +
           2 * (size_t)x->t->n_params * sizeof(int);
}

void tr_strategy_pack(const pl_train_ctx *x, const pl_train_strategy *s, unsigned char *buf)
{
    size_t pn = (size_t)x->og.n * x->dg.n, on = (size_t)x->og.n * sizeof *s->O;
    size_t sn = (size_t)x->t->g->n_ops, bn = (size_t)x->c->n_devs * sizeof(double);
    size_t kn = 2 * (size_t)x->t->n_params * sizeof(int);
    PL_ASSERT(s->n_groups == x->og.n && s->n_dgroups == x->dg.n);
    PL_ASSERT(!s->sfb || (size_t)s->n_sfb == sn);
    PL_ASSERT(!s->batch_share || s->n_devs == x->c->n_devs);
    PL_ASSERT(!s->bucket || s->n_bucket == x->t->n_params);
    memset(buf, 0, tr_strategy_bytes(x));
    buf[0] = s->overlap, buf[1] = s->sfb != NULL, buf[2] = s->batch_share != NULL;
    buf[3] = s->bucket != NULL;
    unsigned char *at = buf + 4;
    memcpy(at, s->P, pn);
    memcpy(at + pn, s->O, on);
    if (s->sfb) memcpy(at + pn + on, s->sfb, sn);
    if (s->batch_share) memcpy(at + pn + on + sn, s->batch_share, bn);
    if (s->bucket) memcpy(at + pn + on + sn + bn, s->bucket, kn);
}

pl_train_strategy *tr_strategy_unpack(const pl_train_ctx *x, const unsigned char *buf)
{
    pl_train_strategy *s = pl_train_strategy_new(x->og.n, x->dg.n);
    size_t pn = (size_t)x->og.n * x->dg.n, on = (size_t)x->og.n * sizeof *s->O;
    size_t sn = (size_t)x->t->g->n_ops, bn = (size_t)x->c->n_devs * sizeof(double);
    size_t kn = 2 * (size_t)x->t->n_params * sizeof(int);
    const unsigned char *at = buf + 4;
    s->overlap = buf[0];
    memcpy(s->P, at, pn);
    memcpy(s->O, at + pn, on);
    if (buf[1]) s->n_sfb = (int)sn, s->sfb = dup_bytes(at + pn + on, sn);
    if (buf[2]) s->n_devs = x->c->n_devs, s->batch_share = dup_bytes(at + pn + on + sn, bn);
    if (buf[3]) s->n_bucket = x->t->n_params, s->bucket = dup_bytes(at + pn + on + sn + bn, kn);
    return s;
}
