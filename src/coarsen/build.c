/* build.c: the coarse graph of the final groups, and the mapping both ways. */
#include "coarsen_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct builder {
    const pl_graph *g;
    pl_graph *cg;
    const pl_coarsening *c;
    int *tmap;   /* original tensor -> coarse tensor, -1 until used */
    int *tstamp; /* dedupes a coarse op's inputs */
} builder;

static int tensor_of(builder *b, int t)
{
    if (b->tmap[t] >= 0) return b->tmap[t];
    const pl_tensor *o = &b->g->tensors[t];
    int k = pl_graph_tensor(b->cg, o->name);
    pl_tensor *x = &b->cg->tensors[k];
    pl_tensor_set_shape(x, o->dtype, o->rank, o->dims);
    x->bytes = o->bytes; /* task graphs give sizes that no shape implies */
    x->flags = o->flags & ~(unsigned)(PL_TENSOR_INPUT | PL_TENSOR_OUTPUT);
    if (o->ivals) pl_tensor_set_ivals(x, o->ivals, o->n_ivals);
    return b->tmap[t] = k;
}

/* Member types joined by '+', leaving out colocated feeders; "Group" when that is too long
 * to read (chain contraction). */
static void group_type(const builder *b, const int *m, int n, char *buf, size_t len)
{
    size_t used = 0;
    int parts = 0;
    buf[0] = 0;
    for (int k = 0; k < n; k++) {
        const char *t = b->g->ops[m[k]].type;
        if (pl_coarsen_is_feeder_type(t)) continue;
        if (++parts > 10) break;
        used += snprintf(buf + used, used < len ? len - used : 0, "%s%s", parts > 1 ? "+" : "", t);
    }
    if (parts > 10 || used >= len) snprintf(buf, len, "Group");
    if (!parts) snprintf(buf, len, "%s", b->g->ops[m[0]].type);
}

static int lead_member(const builder *b, const int *m, int n)
{
    for (int k = 0; k < n; k++)
        if (!pl_coarsen_is_feeder_type(b->g->ops[m[k]].type)) return m[k];
    return m[0];
}

static void add_op(builder *b, const int *m, int n)
{
    const pl_graph *g = b->g;
    char type[256], name[512];
    if (n == 1) {
        pl_graph_add_op(b->cg, g->ops[m[0]].name, g->ops[m[0]].type, g->ops[m[0]].domain);
        return;
    }
    group_type(b, m, n, type, sizeof type);
    snprintf(name, sizeof name, "%s+%d", g->ops[lead_member(b, m, n)].name, n - 1);
    pl_graph_add_op(b->cg, name, type, "");
}

static void link_inputs(builder *b, int c, const int *m, int n)
{
    const pl_graph *g = b->g;
    for (int j = 0; j < n; j++) {
        const pl_op *op = &g->ops[m[j]];
        for (int k = 0; k < op->n_inputs; k++) {
            int t = op->inputs[k];
            if (t < 0 || b->tstamp[t] == c + 1) continue;
            int p = g->tensors[t].producer;
            /* inside a group only weights (a colocated Constant's value) stay visible */
            if (p >= 0 && b->c->coarse_of[p] == c && !(g->tensors[t].flags & PL_TENSOR_WEIGHT))
                continue;
            b->tstamp[t] = c + 1;
            pl_op_add_input(b->cg, c, tensor_of(b, t));
        }
    }
}

static bool leaves_group(const builder *b, int c, int t)
{
    const pl_tensor *x = &b->g->tensors[t];
    if ((x->flags & PL_TENSOR_OUTPUT) || !x->n_consumers) return true;
    for (int i = 0; i < x->n_consumers; i++)
        if (b->c->coarse_of[x->consumers[i]] != c) return true;
    return false;
}

static void link_outputs(builder *b, int c, const int *m, int n)
{
    const pl_graph *g = b->g;
    bool multi = n > 1;
    for (int j = 0; j < n; j++) {
        const pl_op *op = &g->ops[m[j]];
        for (int k = 0; k < op->n_outputs; k++) {
            int t = op->outputs[k];
            if (t < 0 || !leaves_group(b, c, t)) continue;
            /* a Constant's value written by a group would read as an op writing a weight */
            if (multi && (g->tensors[t].flags & PL_TENSOR_WEIGHT) && !g->tensors[t].n_consumers)
                continue;
            pl_op_add_output(b->cg, c, tensor_of(b, t));
        }
    }
}

/* Sums of the members' costs; a device time only when every member has one for it. */
static void set_costs(builder *b, int c, const int *m, int n)
{
    const pl_graph *g = b->g;
    pl_op *x = &b->cg->ops[c];
    double best = -1;
    for (int j = 0; j < n; j++) {
        const pl_op *op = &g->ops[m[j]];
        x->flops += op->flops;
        x->bytes_moved += op->bytes_moved;
        /* members run one after the other: each re-reads its own tensor, the largest decides
           which cache serves them (pl_cost_terms_of) */
        x->bytes_reread += op->bytes_reread;
        if (op->reread_tensor_bytes > x->reread_tensor_bytes)
            x->reread_tensor_bytes = op->reread_tensor_bytes;
        x->flags |= op->flags & (PL_OP_UNKNOWN_TYPE | PL_OP_SHAPE_UNKNOWN);
        /* members run one after the other: their working memory is not live at once */
        if (op->extra_memory_bytes > x->extra_memory_bytes)
            x->extra_memory_bytes = op->extra_memory_bytes;
        if (op->flops > best) best = op->flops, x->cls = op->cls;
    }
    x->flags |= PL_OP_COST_GIVEN;
    const pl_op *first = &g->ops[m[0]];
    for (int d = 0; d < first->n_times; d++) {
        double sum = 0;
        int have = 0;
        for (int j = 0; j < n; j++) {
            const pl_op *op = &g->ops[m[j]];
            for (int e = 0; e < op->n_times; e++)
                if (!strcmp(op->time_device[e], first->time_device[d])) {
                    sum += op->time_s[e];
                    have++;
                    break;
                }
        }
        if (have == n) pl_op_add_time(b->cg, c, first->time_device[d], sum);
    }
}

/* Coarse ids in topological order of each group's first member; members in topological order. */
static void number_groups(cs_state *s, pl_coarsening *c)
{
    const pl_graph *g = s->g;
    int n = g->n_ops, next = 0;
    int *id = pl_malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        id[i] = -1;
    c->n_orig = n;
    c->coarse_of = pl_malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) {
        int v = g->topo[i], r = pl_uf_find(&s->uf, v);
        if (id[r] < 0) id[r] = next++;
        c->coarse_of[v] = id[r];
    }
    c->member_off = pl_calloc((size_t)next + 1, sizeof(int));
    c->members = pl_malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++)
        c->member_off[c->coarse_of[i] + 1]++;
    for (int k = 0; k < next; k++)
        c->member_off[k + 1] += c->member_off[k];
    int *fill = pl_malloc((size_t)next * sizeof(int));
    memcpy(fill, c->member_off, (size_t)next * sizeof(int));
    for (int i = 0; i < n; i++)
        c->members[fill[c->coarse_of[g->topo[i]]]++] = g->topo[i];
    free(fill);
    free(id);
}

static pl_graph *new_coarse(const pl_graph *g)
{
    pl_graph *cg = pl_graph_new(g->name);
    if (g->path) cg->path = pl_strdup(g->path);
    cg->info = g->info;
    return cg;
}

int cs_build(cs_state *s, pl_coarsening *c, pl_err *err)
{
    const pl_graph *g = s->g;
    number_groups(s, c);
    builder b = {g, new_coarse(g), c, pl_malloc((size_t)g->n_tensors * sizeof(int)),
                 pl_calloc((size_t)g->n_tensors + 1, sizeof(int))};
    for (int t = 0; t < g->n_tensors; t++)
        b.tmap[t] = -1;
    c->coarse = b.cg;
    int n_coarse = s->uf.n_sets;
    for (int k = 0; k < n_coarse; k++) {
        const int *m = c->members + c->member_off[k];
        int n = c->member_off[k + 1] - c->member_off[k];
        add_op(&b, m, n);
        link_inputs(&b, k, m, n);
        link_outputs(&b, k, m, n);
        set_costs(&b, k, m, n);
    }
    for (int k = 0; k < g->n_inputs; k++)
        pl_graph_add_input(b.cg, tensor_of(&b, g->inputs[k]));
    for (int k = 0; k < g->n_outputs; k++)
        pl_graph_add_output(b.cg, tensor_of(&b, g->outputs[k]));
    free(b.tmap);
    free(b.tstamp);
    char where[300];
    snprintf(where, sizeof where, "coarse graph of %s", g->path ? g->path : g->name);
    return pl_graph_finalize(b.cg, where, err);
}
