/* union.c: several models as one graph, one tenant each (docs/multi.md, "The union graph").
 *
 * Every placement algorithm, the cost model and the simulator work on one graph. Several
 * models sharing a host are given to them as the disjoint union of their graphs: each op and
 * tensor keeps its model's name behind a "TENANT/" prefix, and pl_op::tenant says whose it is.
 * The copy keeps what costs and simulation read (types, attributes, shapes, weights, given
 * times and transfer times, colocation classes, each op's class, FLOPs and bytes) and leaves
 * out control-flow bodies, whose cost the op already carries (PL_OP_COST_GIVEN keeps it). */
#include "placer/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_attr(pl_attr *to, const pl_attr *a, const int *tmap)
{
    to->i = a->i, to->f = a->f, to->n = a->n;
    to->tensor = a->tensor >= 0 ? tmap[a->tensor] : a->tensor;
    if (a->s) to->s = pl_strdup(a->s);
    if (a->ints) {
        to->ints = pl_malloc((size_t)a->n * sizeof *a->ints);
        memcpy(to->ints, a->ints, (size_t)a->n * sizeof *a->ints);
    }
    if (a->floats) {
        to->floats = pl_malloc((size_t)a->n * sizeof *a->floats);
        memcpy(to->floats, a->floats, (size_t)a->n * sizeof *a->floats);
    }
}

static void copy_tensors(pl_graph *u, const pl_graph *g, const char *pre, int *tmap)
{
    char name[1024];
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *s = &g->tensors[t];
        snprintf(name, sizeof name, "%s/%s", pre, s->name);
        int k = tmap[t] = pl_graph_tensor(u, name);
        pl_tensor *d = &u->tensors[k];
        pl_tensor_set_shape(d, s->dtype, s->rank, s->dims);
        d->bytes = s->bytes; /* task graphs give bytes without a shape */
        d->flags = s->flags & ~(PL_TENSOR_INPUT | PL_TENSOR_OUTPUT);
        if (s->ivals) pl_tensor_set_ivals(d, s->ivals, s->n_ivals);
        if (s->fvals) pl_tensor_set_fvals(d, s->fvals, s->n_fvals);
    }
}

static void copy_op(pl_graph *u, const pl_graph *g, int i, const char *pre, int tenant,
                    const int *tmap)
{
    const pl_op *s = &g->ops[i];
    char name[1024];
    snprintf(name, sizeof name, "%s/%s", pre, s->name);
    int k = pl_graph_add_op(u, name, s->type, s->domain);
    for (int j = 0; j < s->n_inputs; j++)
        pl_op_add_input(u, k, s->inputs[j] >= 0 ? tmap[s->inputs[j]] : -1);
    for (int j = 0; j < s->n_outputs; j++)
        pl_op_add_output(u, k, s->outputs[j] >= 0 ? tmap[s->outputs[j]] : -1);
    for (int j = 0; j < s->n_attrs; j++)
        copy_attr(pl_op_add_attr(u, k, s->attrs[j].name, s->attrs[j].kind), &s->attrs[j], tmap);
    for (int j = 0; j < s->n_times; j++)
        pl_op_add_time(u, k, s->time_device[j], s->time_s[j]);
    if (s->coloc) {
        snprintf(name, sizeof name, "%s/%s", pre, g->coloc_names[s->coloc - 1]);
        pl_op_set_coloc(u, k, name);
    }
    pl_op *d = &u->ops[k];
    d->n_implicit = s->n_implicit;
    d->cls = s->cls, d->flops = s->flops, d->bytes_moved = s->bytes_moved;
    d->bytes_reread = s->bytes_reread, d->reread_tensor_bytes = s->reread_tensor_bytes;
    d->flags = s->flags | PL_OP_COST_GIVEN;
    d->extra_memory_bytes = s->extra_memory_bytes;
    d->tenant = tenant;
    /* ops are copied in order, so the op kernel_of names moved by as much as this one */
    d->kernel_of = s->kernel_of >= 0 && !g->kernel_graph ? k - i + s->kernel_of : -1;
}

static void copy_graph(pl_graph *u, const pl_graph *g, const char *pre, int tenant)
{
    int *tmap = pl_malloc((size_t)g->n_tensors * sizeof *tmap);
    copy_tensors(u, g, pre, tmap);
    for (int i = 0; i < g->n_ops; i++)
        copy_op(u, g, i, pre, tenant, tmap);
    for (int j = 0; j < g->n_inputs; j++)
        pl_graph_add_input(u, tmap[g->inputs[j]]);
    for (int j = 0; j < g->n_outputs; j++)
        pl_graph_add_output(u, tmap[g->outputs[j]]);
    for (int j = 0; j < g->n_xfer_times; j++) {
        const pl_xfer_time *x = &g->xfer_times[j];
        pl_graph_add_xfer_time(u, tmap[x->tensor], x->from, x->to, x->s);
    }
    free(tmap);
}

pl_graph *pl_graph_union(pl_graph *const *gs, const char *const *names, int n, pl_err *err)
{
    if (n < 1) {
        pl_err_set(err, "union of models: no model given");
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (pl_graph_check_ops(gs[i], err) < 0) return NULL;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j])) {
                pl_err_set(err, "union of models: two tenants are named '%s'", names[i]);
                return NULL;
            }
    pl_graph *u = pl_graph_new(n == 1 ? names[0] : "union");
    u->n_tenants = n;
    u->tenant_names = pl_calloc((size_t)n, sizeof *u->tenant_names);
    u->tenant_paths = pl_calloc((size_t)n, sizeof *u->tenant_paths);
    for (int i = 0; i < n; i++) {
        u->tenant_names[i] = pl_strdup(names[i]);
        if (gs[i]->path) u->tenant_paths[i] = pl_strdup(gs[i]->path);
        copy_graph(u, gs[i], names[i], i);
    }
    u->info = gs[0]->info;
    if (pl_graph_finalize(u, "union of models", err) < 0) {
        pl_graph_free(u);
        return NULL;
    }
    return u;
}

int pl_graph_tenants(const pl_graph *g)
{
    return g->n_tenants > 0 ? g->n_tenants : 1;
}

const char *pl_op_own_name(const pl_graph *g, const pl_op *o)
{
    return g->n_tenants ? o->name + strlen(g->tenant_names[o->tenant]) + 1 : o->name;
}

/* A graph of no op would give a makespan of 0 and, to the cloud search, a latency of 0 it
 * cannot model; in a union it would be a tenant that completes at once. */
int pl_graph_check_ops(const pl_graph *g, pl_err *err)
{
    if (g->n_ops) return 0;
    return pl_err_set(err, "%s: the graph has no operators; nothing to place",
                      g->path ? g->path : g->name);
}
