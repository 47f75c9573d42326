/* rewrite.c: finding a rule's sites, applying one, and the greedy and replay loops the search
 * and the verification build on (docs/rewrite.md, "API"). */
#include "rw_internal.h"
#include "placer/runtime.h"

#include <stdlib.h>
#include <string.h>

const pl_rw_rule *pl_rw_rules(int *n)
{
    /* the public part is the first member of each row: a stride of rw_rule, so callers get a
     * table of their own */
    static pl_rw_rule pub[16];
    PL_ASSERT(rw_n_rules <= 16);
    for (int i = 0; i < rw_n_rules; i++)
        pub[i] = rw_rule_table[i].pub;
    *n = rw_n_rules;
    return pub;
}

int pl_rw_rule_index(const char *name)
{
    for (int i = 0; i < rw_n_rules; i++)
        if (!strcmp(rw_rule_table[i].pub.name, name)) return i;
    return -1;
}

void pl_rw_sites_free(pl_rw_site *s, int n)
{
    if (!s) return;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < s[i].n_nodes; k++)
            free(s[i].nodes[k]);
        free(s[i].nodes);
    }
    free(s);
}

static void site_set(pl_rw_site *s, int rule, const pl_graph *g, const int *ops, int n)
{
    s->rule = rule;
    s->n_nodes = n;
    s->nodes = pl_malloc((size_t)n * sizeof *s->nodes);
    for (int k = 0; k < n; k++)
        s->nodes[k] = pl_strdup(g->ops[ops[k]].name);
}

static int match_at(const rw_rule *r, const pl_graph *g, int op, int *ops)
{
    const pl_op *o = &g->ops[op];
    if (r->anchor && (strcmp(o->type, r->anchor) || o->domain[0])) return 0;
    return r->match(g, op, ops);
}

static int check_rule(int rule, pl_err *err)
{
    if (rule < 0 || rule >= rw_n_rules)
        return pl_err_set(err, "rewrite: no rule %d (there are %d)", rule, rw_n_rules);
    return 0;
}

int pl_rw_find(const pl_rw_model *m, const pl_graph *g, int rule, pl_rw_site **sites, int *n,
               pl_err *err)
{
    *sites = NULL, *n = 0;
    if (check_rule(rule, err) < 0) return -1;
    pl_graph *own = g ? NULL : pl_rw_graph(m, NULL, err);
    if (!g && !own) return -1;
    if (!g) g = own;
    int cap = 0, ops[PL_RW_MAX_SITE];
    for (int i = 0; i < g->n_ops; i++) {
        int op = g->topo[i], k = match_at(&rw_rule_table[rule], g, op, ops);
        if (!k) continue;
        if (*n == cap)
            *sites = pl_realloc(*sites, (size_t)(cap = cap ? 2 * cap : 8) * sizeof **sites);
        site_set(&(*sites)[(*n)++], rule, g, ops, k);
    }
    pl_graph_free(own);
    return 0;
}

int pl_rw_count_sites(const pl_rw_model *m, const pl_load_opts *opts, pl_err *err)
{
    pl_graph *g = pl_rw_graph(m, opts, err);
    if (!g) return -1;
    int total = 0;
    for (int r = 0; r < rw_n_rules && total >= 0; r++) {
        pl_rw_site *s;
        int n;
        if (pl_rw_find(m, g, r, &s, &n, err) < 0) total = -1;
        pl_rw_sites_free(s, n);
        if (total >= 0) total += n;
    }
    pl_graph_free(g);
    return total;
}

static int64_t opset_of(const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain;
        if (!d || !d[0] || !strcmp(d, "ai.onnx")) return m->opset_import[i]->version;
    }
    return 1;
}

/* The site's ops in g when the rule matches there with exactly the site's nodes, else -1. */
static int resolve(const pl_rw_model *m, const pl_graph *g, const pl_rw_site *s, int *ops,
                   pl_err *err)
{
    const char *rn = rw_rule_table[s->rule].pub.name;
    if (s->n_nodes < 1 || s->n_nodes > PL_RW_MAX_SITE)
        return pl_err_set(err, "%s: rule %s: a site names %d nodes", m->name, rn, s->n_nodes);
    int op = pl_graph_find_op(g, s->nodes[0]);
    if (op < 0 || rw_node_index(m->m->graph, s->nodes[0]) < 0)
        return pl_err_set(err, "%s: rule %s at node '%s': no such node", m->name, rn, s->nodes[0]);
    int k = match_at(&rw_rule_table[s->rule], g, op, ops);
    bool same = k == s->n_nodes;
    for (int i = 0; same && i < k; i++)
        same = !strcmp(g->ops[ops[i]].name, s->nodes[i]);
    if (!same)
        return pl_err_set(err, "%s: rule %s at node '%s': the rule does not apply there (%s)",
                          m->name, rn, s->nodes[0],
                          k ? "it matches other nodes" : "a condition fails");
    return 0;
}

pl_rw_model *pl_rw_apply(const pl_rw_model *m, const pl_graph *g, const pl_rw_site *site,
                         pl_err *err)
{
    if (check_rule(site->rule, err) < 0) return NULL;
    pl_graph *own = g ? NULL : pl_rw_graph(m, NULL, err);
    if (!g && !own) return NULL;
    if (!g) g = own;
    int ops[PL_RW_MAX_SITE];
    pl_rw_model *r = NULL;
    if (resolve(m, g, site, ops, err) == 0) {
        r = pl_rw_copy(m);
        rw_edit e = {.gp = r->m->graph, .g = g, .opset = opset_of(r->m)};
        if (rw_rule_table[site->rule].build(&e, ops, site->n_nodes, err) < 0) {
            pl_rw_free(r);
            r = NULL;
        } else {
            rw_prune(&e);
        }
    }
    pl_graph_free(own);
    return r;
}

static void log_site(pl_rw_site **log, int *n, const pl_rw_site *s)
{
    *log = pl_realloc(*log, (size_t)(*n + 1) * sizeof **log);
    pl_rw_site *d = &(*log)[(*n)++];
    d->rule = s->rule;
    d->n_nodes = s->n_nodes;
    d->nodes = pl_malloc((size_t)s->n_nodes * sizeof *d->nodes);
    for (int k = 0; k < s->n_nodes; k++)
        d->nodes[k] = pl_strdup(s->nodes[k]);
}

/* Applies the first site of rule r in *cur; 1 when one was applied, 0 when none is left. */
static int greedy_step(pl_rw_model **cur, const pl_load_opts *opts, int r, pl_rw_site **log,
                       int *n_log, pl_err *err)
{
    pl_graph *g = pl_rw_graph(*cur, opts, err);
    if (!g) return -1;
    pl_rw_site *s;
    int n, rc = pl_rw_find(*cur, g, r, &s, &n, err);
    if (rc == 0 && n > 0) {
        pl_rw_model *next = pl_rw_apply(*cur, g, &s[0], err);
        if (!next) {
            rc = -1;
        } else {
            if (log) log_site(log, n_log, &s[0]);
            pl_rw_free(*cur);
            *cur = next;
            rc = 1;
        }
    }
    pl_rw_sites_free(s, n);
    pl_graph_free(g);
    return rc;
}

int pl_rw_greedy(pl_rw_model **m, const pl_load_opts *opts, int max_per_rule, int *counts,
                 pl_rw_site **log, int *n_log, pl_err *err)
{
    if (counts) memset(counts, 0, (size_t)rw_n_rules * sizeof *counts);
    if (log) *log = NULL, *n_log = 0;
    pl_rw_model *cur = pl_rw_copy(*m);
    int total = 0;
    for (int r = 0; r < rw_n_rules; r++) {
        for (int k = 0; !max_per_rule || k < max_per_rule; k++) {
            int rc = greedy_step(&cur, opts, r, log, n_log, err);
            if (rc < 0) {
                pl_rw_free(cur);
                if (log) pl_rw_sites_free(*log, *n_log), *log = NULL, *n_log = 0;
                return -1;
            }
            if (!rc) break;
            total++;
            if (counts) counts[r]++;
        }
    }
    pl_rw_free(*m);
    *m = cur;
    return total;
}

int pl_rw_replay(pl_rw_model **m, const pl_load_opts *opts, const pl_rw_site *sites, int n,
                 pl_err *err)
{
    pl_rw_model *cur = pl_rw_copy(*m);
    for (int i = 0; i < n; i++) {
        pl_graph *g = pl_rw_graph(cur, opts, err);
        pl_rw_model *next = g ? pl_rw_apply(cur, g, &sites[i], err) : NULL;
        pl_graph_free(g);
        if (!next) {
            pl_rw_free(cur);
            return pl_err_prefix(err, "replaying site %d of %d", i + 1, n);
        }
        pl_rw_free(cur);
        cur = next;
    }
    pl_rw_free(*m);
    *m = cur;
    return 0;
}

int pl_rw_replay_inflated(const char *model, const char *cache, const pl_rw_site *sites, int n,
                          char *ref, size_t ref_n, const char *out, pl_err *err)
{
    if (pl_mkdir_p(cache, err) < 0 || pl_inflate_model(model, cache, ref, ref_n, err) < 0)
        return -1;
    pl_rw_model *w = pl_rw_load(ref, err);
    int rc = w ? pl_rw_replay(&w, NULL, sites, n, err) : -1;
    if (rc == 0) rc = pl_rw_save(w, out, err);
    pl_rw_free(w);
    return rc;
}
