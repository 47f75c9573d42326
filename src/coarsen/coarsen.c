/* coarsen.c: pl_coarsen(): runs the passes, then builds the coarse graph and the mapping. */
#include "coarsen_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void record(pl_coarsening *c, const char *name, int before, int after)
{
    pl_coarsen_pass *p = &c->passes[c->n_passes++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ops_before = before;
    p->ops_after = after;
}

static int cmp_fused(const void *x, const void *y)
{
    const pl_coarsen_fused *a = x, *b = y;
    if (a->count != b->count) return b->count - a->count;
    return strcmp(a->type, b->type);
}

static char *join_types(const pl_fusion_rule *r)
{
    size_t len = 1;
    for (int k = 0; k < r->n; k++)
        len += strlen(r->types[k]) + 1;
    char *s = pl_calloc(1, len);
    for (int k = 0; k < r->n; k++) {
        if (k) strcat(s, "+");
        strcat(s, r->types[k]);
    }
    return s;
}

/* Groups per rule, merged by type (two rules may spell the same sequence). */
static void summarize_fused(pl_coarsening *c, const pl_fusion_rules *r, const int *count)
{
    c->fused = pl_calloc((size_t)r->n + 1, sizeof *c->fused);
    for (int k = 0; k < r->n; k++) {
        if (!count[k]) continue;
        char *type = join_types(&r->rules[k]);
        int j = 0;
        while (j < c->n_fused && strcmp(c->fused[j].type, type) != 0)
            j++;
        if (j == c->n_fused) {
            c->fused[c->n_fused++].type = type;
        } else {
            free(type);
        }
        c->fused[j].count += count[k];
    }
    pl_sort(c->fused, (size_t)c->n_fused, sizeof *c->fused, cmp_fused);
}

/* The fusion pass: the first, so every op is still a group of its own; the matcher is the
 * graph module's, the one the cost model prices fused kernels with. */
static void fuse(cs_state *s, const pl_fusion_rules *r)
{
    int *root_of = pl_malloc(((size_t)s->g->n_ops + 1) * sizeof *root_of);
    pl_fusion_match(s->g, r, s->reach, root_of, s->rule_count);
    for (int op = 0; op < s->g->n_ops; op++)
        if (root_of[op] != op) pl_uf_union(&s->uf, root_of[op], op);
    free(root_of);
}

static void run_passes(cs_state *s, const pl_coarsen_opts *o, pl_coarsening *c)
{
    pl_fusion_rules *own = o->rules ? NULL : pl_fusion_rules_default();
    const pl_fusion_rules *r = o->rules ? o->rules : own;
    s->rule_count = pl_calloc((size_t)r->n + 1, sizeof(int));
    int before = s->uf.n_sets;
    if (!o->no_fuse) {
        fuse(s, r);
        record(c, "fuse", before, s->uf.n_sets);
        summarize_fused(c, r, s->rule_count);
    }
    if (!o->no_colocate) {
        before = s->uf.n_sets;
        cs_colocate(s);
        record(c, "colocate", before, s->uf.n_sets);
    }
    if (o->chain) {
        before = s->uf.n_sets;
        cs_chain(s, o->target_ops > 0 ? o->target_ops : 1);
        record(c, "chain", before, s->uf.n_sets);
    }
    free(s->rule_count);
    pl_fusion_rules_free(own);
}

int pl_coarsen(const pl_graph *g, const pl_coarsen_opts *o, pl_coarsening **out, pl_err *err)
{
    static const pl_coarsen_opts dflt;
    *out = NULL;
    if (!o) o = &dflt;
    if (!g->topo && g->n_ops) return pl_err_set(err, "coarsen: the graph is not finalized");
    int n = g->n_ops;
    cs_state s = {.g = g};
    pl_uf_init(&s.uf, n);
    s.stamp = pl_calloc((size_t)n + 1, sizeof(int));
    s.reach = pl_graph_reach(g);
    pl_coarsening *c = pl_calloc(1, sizeof *c);
    run_passes(&s, o, c);
    int rc = cs_build(&s, c, err);
    pl_reach_free(s.reach);
    pl_uf_free(&s.uf);
    free(s.stamp);
    if (rc < 0) {
        pl_coarsening_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void pl_coarsen_expand_placement(const pl_coarsening *c, const int *coarse_dev, int *orig_dev)
{
    for (int i = 0; i < c->n_orig; i++)
        orig_dev[i] = coarse_dev[c->coarse_of[i]];
}

void pl_coarsening_free(pl_coarsening *c)
{
    if (!c) return;
    pl_graph_free(c->coarse);
    free(c->coarse_of);
    free(c->member_off);
    free(c->members);
    for (int k = 0; k < c->n_fused; k++)
        free(c->fused[k].type);
    free(c->fused);
    free(c);
}
