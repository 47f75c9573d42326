/* plan.c: the plan in memory: placement, per-device order, priority. */
#include "placer/plan.h"

#include <stdlib.h>
#include <string.h>

static const char *contention_names[] = {"ports", "pair", "none"};

const char *pl_contention_name(pl_contention c)
{
    return c >= PL_CONTENTION_PORTS && c <= PL_CONTENTION_NONE ? contention_names[c] : "?";
}

int pl_contention_parse(const char *s, pl_contention *out)
{
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, contention_names[i]) == 0) {
            *out = (pl_contention)i;
            return 0;
        }
    return -1;
}

pl_plan *pl_plan_new(int n_ops, int n_devs)
{
    pl_plan *p = pl_calloc(1, sizeof *p);
    p->n_ops = n_ops;
    p->n_devs = n_devs;
    p->dev = pl_calloc(n_ops ? n_ops : 1, sizeof *p->dev);
    return p;
}

static void *dup_array(const void *a, size_t bytes)
{
    if (!a) return NULL;
    void *d = pl_malloc(bytes ? bytes : 1);
    memcpy(d, a, bytes);
    return d;
}

pl_plan *pl_plan_copy(const pl_plan *p)
{
    pl_plan *q = pl_malloc(sizeof *q);
    *q = *p;
    q->dev = dup_array(p->dev, p->n_ops * sizeof *p->dev);
    q->order = dup_array(p->order, p->n_ops * sizeof *p->order);
    q->order_off = dup_array(p->order_off, (p->n_devs + 1) * sizeof *p->order_off);
    q->cut_before = dup_array(p->cut_before, p->n_ops * sizeof *p->cut_before);
    q->priority = dup_array(p->priority, p->n_ops * sizeof *p->priority);
    q->xfer_priority = dup_array(p->xfer_priority, p->n_edges * sizeof *p->xfer_priority);
    return q;
}

/* The arrays after the struct, in this order: dev, order, order_off, priority, xfer_priority;
 * the struct's pointers say which are present (non-NULL) and are never followed. */
static size_t pack_size(const pl_plan *p)
{
    size_t n = sizeof *p + (size_t)p->n_ops * sizeof *p->dev;
    if (p->order) n += ((size_t)p->n_ops + (size_t)p->n_devs + 1) * sizeof *p->order;
    if (p->priority) n += (size_t)p->n_ops * sizeof *p->priority;
    if (p->xfer_priority) n += (size_t)p->n_edges * sizeof *p->xfer_priority;
    return n;
}

void *pl_plan_pack(const pl_plan *p, size_t *len)
{
    *len = pack_size(p);
    char *buf = pl_malloc(*len), *at = buf + sizeof *p;
    memcpy(buf, p, sizeof *p);
    size_t ops = (size_t)p->n_ops;
    memcpy(at, p->dev, ops * sizeof *p->dev), at += ops * sizeof *p->dev;
    if (p->order) {
        memcpy(at, p->order, ops * sizeof *p->order), at += ops * sizeof *p->order;
        size_t off = ((size_t)p->n_devs + 1) * sizeof *p->order_off;
        memcpy(at, p->order_off, off), at += off;
    }
    if (p->priority) memcpy(at, p->priority, ops * sizeof *p->priority), at += ops * sizeof(double);
    if (p->xfer_priority) memcpy(at, p->xfer_priority, (size_t)p->n_edges * sizeof(double));
    return buf;
}

/* The next `bytes` of the buffer as a fresh array, or NULL when `present` is false. */
static void *take(const char **at, size_t bytes, bool present)
{
    if (!present) return NULL;
    void *a = dup_array(*at, bytes);
    *at += bytes;
    return a;
}

pl_plan *pl_plan_unpack(const void *buf, size_t len)
{
    pl_plan h;
    if (!buf || len < sizeof h) return NULL;
    memcpy(&h, buf, sizeof h);
    if (h.n_ops < 0 || h.n_devs < 0 || h.n_edges < 0 || pack_size(&h) != len) return NULL;
    pl_plan *p = pl_malloc(sizeof *p);
    *p = h;
    p->cut_before = NULL; /* not packed */
    const char *at = (const char *)buf + sizeof h;
    size_t ops = (size_t)h.n_ops;
    p->dev = take(&at, ops * sizeof *p->dev, true);
    p->order = take(&at, ops * sizeof *p->order, h.order);
    p->order_off = take(&at, ((size_t)h.n_devs + 1) * sizeof *p->order_off, h.order);
    p->priority = take(&at, ops * sizeof *p->priority, h.priority);
    p->xfer_priority = take(&at, (size_t)h.n_edges * sizeof *p->xfer_priority, h.xfer_priority);
    return p;
}

void pl_plan_free(pl_plan *p)
{
    if (!p) return;
    free(p->dev), free(p->order), free(p->order_off), free(p->priority);
    free(p->xfer_priority), free(p->cut_before);
    free(p);
}

void pl_plan_clear_order(pl_plan *p)
{
    free(p->order), free(p->order_off), free(p->cut_before);
    p->order = p->order_off = NULL;
    p->cut_before = NULL;
}

void pl_plan_clear_schedule(pl_plan *p)
{
    pl_plan_clear_order(p);
    free(p->priority), p->priority = NULL;
    pl_plan_set_xfer_priority(p, 0, NULL);
}

void pl_plan_assign(pl_plan *dst, const pl_plan *src)
{
    memcpy(dst->dev, src->dev, src->n_ops * sizeof *dst->dev);
    pl_plan_clear_schedule(dst);
    dst->order = dup_array(src->order, src->n_ops * sizeof *src->order);
    dst->order_off = dup_array(src->order_off, (src->n_devs + 1) * sizeof *src->order_off);
    dst->cut_before = dup_array(src->cut_before, src->n_ops * sizeof *src->cut_before);
    dst->priority = dup_array(src->priority, src->n_ops * sizeof *src->priority);
    pl_plan_set_xfer_priority(dst, src->n_edges, src->xfer_priority);
}

void pl_plan_set_xfer_priority(pl_plan *p, int n_edges, const double *prio)
{
    free(p->xfer_priority);
    p->xfer_priority = prio ? dup_array(prio, n_edges * sizeof *prio) : NULL;
    p->n_edges = prio ? n_edges : 0;
}

int pl_plan_edge(const pl_graph *g, int src, int dst, int tensor)
{
    PL_ASSERT(g->topo); /* finalized: edges derived and sorted */
    int lo = 0, hi = g->n_edges - 1;
    while (src >= 0 && lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const pl_edge *e = &g->edges[mid];
        int d = e->src != src ? e->src - src : e->dst != dst ? e->dst - dst : e->tensor - tensor;
        if (d == 0) return mid;
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* Bucket the global sequence by device, keeping its order within each device. */
void pl_plan_set_order(pl_plan *p, const int *seq)
{
    pl_plan_clear_order(p);
    p->order_off = pl_calloc(p->n_devs + 1, sizeof *p->order_off);
    p->order = pl_malloc((p->n_ops ? p->n_ops : 1) * sizeof *p->order);
    for (int k = 0; k < p->n_ops; k++)
        p->order_off[p->dev[seq[k]] + 1]++;
    for (int d = 0; d < p->n_devs; d++)
        p->order_off[d + 1] += p->order_off[d];
    int *fill = pl_malloc((p->n_devs ? p->n_devs : 1) * sizeof *fill);
    memcpy(fill, p->order_off, p->n_devs * sizeof *fill);
    for (int k = 0; k < p->n_ops; k++)
        p->order[fill[p->dev[seq[k]]]++] = seq[k];
    free(fill);
}

int pl_plan_check_coloc(const pl_graph *g, const pl_cluster *c, const int *dev, const char *who,
                        pl_err *err)
{
    if (!g->n_coloc) return 0;
    int *first = pl_malloc((size_t)g->n_coloc * sizeof *first), rc = 0;
    for (int k = 0; k < g->n_coloc; k++)
        first[k] = -1;
    for (int i = 0; i < g->n_ops && !rc; i++) {
        int k = g->ops[i].coloc - 1;
        if (k < 0) continue;
        int f = first[k];
        if (f < 0)
            first[k] = i;
        else if (dev[f] != dev[i])
            rc = pl_err_set(
                err, "%s: colocation class '%s' is split: op '%s' is on '%s', op '%s' on '%s'", who,
                g->coloc_names[k], g->ops[f].name, c->devs[dev[f]].name, g->ops[i].name,
                c->devs[dev[i]].name);
    }
    free(first);
    return rc;
}
