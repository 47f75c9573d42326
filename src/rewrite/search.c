/* search.c: TASO's cost-based backtracking search over the rewrite rules (docs/rewrite.md,
 * "Search"). TASO (and MetaFlow before it) keep a priority queue of candidate graphs ordered by
 * cost, pop the cheapest, apply every substitution at every place it matches, and keep a new
 * graph when it costs less than alpha times the best seen: alpha > 1 lets a rewrite that costs a
 * little open the way to one that saves more (merge_matmul before split_add_merge). */
#include "placer/rewrite.h"
#include "placer/cost.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

double pl_rw_price(const pl_graph *g, const pl_cluster *c, const pl_cost_params *params,
                   pl_err *err)
{
    pl_cost_params def;
    if (!params) pl_cost_params_default(&def), params = &def;
    pl_cost *k = pl_cost_new(g, c, params, NULL, 0, err);
    if (!k) return -1;
    double best = INFINITY;
    for (int d = 0; d < k->n_devs; d++) {
        double s = 0;
        for (int op = 0; op < k->n_ops; op++)
            s += pl_cost_op_s(k, op, d);
        if (s < best) best = s;
    }
    pl_cost_free(k);
    return best;
}

/* ---- the candidates ---- */

typedef struct cand {
    void *buf; /* the model serialized (queued models are kept packed: a few times smaller than
                  unpacked ones, and thousands wait); NULL once expanded, unless the best */
    size_t len;
    double cost;
    int ops;         /* top-level nodes: the queue's tie-break (below) */
    int steps;       /* sites from the input: the answer's tie-break (better_answer) */
    int parent;      /* -1 for the input */
    uint64_t path;   /* the multiset of sites from the input (site_hash summed) */
    pl_rw_site site; /* what made it from its parent */
    bool expanded;
} cand;

typedef struct search {
    cand *c;
    int n, cap;
    int *heap; /* candidate indices, cheapest first; ties: the older first */
    int n_heap;
    uint64_t *seen; /* open addressing, 0 = empty */
    size_t n_seen, cap_seen;
} search;

/* Cheaper; at the same price (within rounding: 1e-9 relative, the sums add the same times in
 * another order), fewer ops. The queue pops in this order, so on a plateau of rewrites the price
 * does not see (a MatMul + Add that onnxruntime fuses anyway, made a Gemm) the search dives
 * instead of trying every order of them; the answer is not chosen this way (better_answer). */
static int cmp_cost(double ca, int oa, double cb, int ob)
{
    double tol = 1e-9 * fmax(fabs(ca), fabs(cb));
    if (ca < cb - tol) return -1;
    if (ca > cb + tol) return 1;
    return oa < ob ? -1 : oa > ob;
}

static bool before(const search *s, int a, int b)
{
    int c = cmp_cost(s->c[a].cost, s->c[a].ops, s->c[b].cost, s->c[b].ops);
    return c < 0 || (c == 0 && a < b);
}

/* The answer: cheaper, or at the same price fewer sites from the input. A rewrite the price
 * does not see only writes into the file what the runtime does itself, and can change the
 * order the runtime then runs the graph in: rnnlm_unrolled with its 140 MatMul + Add made Gemms
 * ran 14 % slower, its input projections no longer back to back on their shared weights
 * (docs/rewrite.md, "Search"). */
static bool better_answer(const search *s, int a, int b)
{
    int c = cmp_cost(s->c[a].cost, 0, s->c[b].cost, 0);
    return c < 0 || (c == 0 && s->c[a].steps < s->c[b].steps);
}

static void heap_push(search *s, int i)
{
    int k = s->n_heap++;
    s->heap = pl_realloc(s->heap, (size_t)s->n_heap * sizeof *s->heap);
    for (; k > 0 && before(s, i, s->heap[(k - 1) / 2]); k = (k - 1) / 2)
        s->heap[k] = s->heap[(k - 1) / 2];
    s->heap[k] = i;
}

static int heap_pop(search *s)
{
    int top = s->heap[0], last = s->heap[--s->n_heap], k = 0;
    for (;;) {
        int l = 2 * k + 1, m = l;
        if (l >= s->n_heap) break;
        if (l + 1 < s->n_heap && before(s, s->heap[l + 1], s->heap[l])) m = l + 1;
        if (!before(s, s->heap[m], last)) break;
        s->heap[k] = s->heap[m], k = m;
    }
    if (s->n_heap) s->heap[k] = last;
    return top;
}

/* FNV-1a of the serialized model, never 0 (0 marks an empty slot). */
static uint64_t model_hash(const void *buf, size_t len)
{
    const unsigned char *b = buf;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* Adds h; false when it was there already. */
static bool seen_add(search *s, uint64_t h)
{
    if (2 * (s->n_seen + 1) > s->cap_seen) {
        size_t cap = s->cap_seen ? 2 * s->cap_seen : 256;
        uint64_t *t = pl_calloc(cap, sizeof *t);
        for (size_t i = 0; i < s->cap_seen; i++)
            if (s->seen[i]) {
                size_t j = s->seen[i] & (cap - 1);
                while (t[j])
                    j = (j + 1) & (cap - 1);
                t[j] = s->seen[i];
            }
        free(s->seen);
        s->seen = t, s->cap_seen = cap;
    }
    size_t j = h & (s->cap_seen - 1);
    for (; s->seen[j]; j = (j + 1) & (s->cap_seen - 1))
        if (s->seen[j] == h) return false;
    s->seen[j] = h, s->n_seen++;
    return true;
}

/* The multiset of sites that made a candidate, as a sum of their hashes: the same sites
 * applied in another order make the same graph but for the names of new nodes ("split_rw0"
 * is whichever Split came first), which the serialized model's hash would tell apart. */
static uint64_t site_hash(const pl_rw_site *site)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)site->rule;
    for (int i = 0; i < site->n_nodes; i++) {
        for (const char *c = site->nodes[i]; *c; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull; /* a separator no name holds */
    }
    h ^= h >> 31, h *= 0x7fb5d329728ea185ull, h ^= h >> 27; /* spread before summing */
    return h;
}

/* A path key as a key of the seen table, apart from model hashes. */
static uint64_t path_seen_key(uint64_t path)
{
    uint64_t h = (path ^ 0x9e3779b97f4a7c15ull) * 0x81dadef4bc2dd44dull;
    return h ? h : 2;
}

static void site_copy(pl_rw_site *to, const pl_rw_site *from)
{
    to->rule = from->rule, to->n_nodes = from->n_nodes;
    to->nodes = pl_malloc((size_t)(from->n_nodes ? from->n_nodes : 1) * sizeof *to->nodes);
    for (int i = 0; i < from->n_nodes; i++)
        to->nodes[i] = pl_strdup(from->nodes[i]);
}

static int add_cand(search *s, void *buf, size_t len, double cost, int parent,
                    const pl_rw_site *site)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->c = pl_realloc(s->c, (size_t)s->cap * sizeof *s->c);
    }
    cand *c = &s->c[s->n];
    memset(c, 0, sizeof *c);
    c->buf = buf, c->len = len, c->cost = cost, c->parent = parent;
    if (site) site_copy(&c->site, site);
    return s->n++;
}

static void site_clear(pl_rw_site *s)
{
    for (int k = 0; k < s->n_nodes; k++)
        free(s->nodes[k]);
    free(s->nodes);
}

static void search_free(search *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->c[i].buf), site_clear(&s->c[i].site);
    free(s->c), free(s->heap), free(s->seen);
}

void pl_rw_search_result_free(pl_rw_search_result *r)
{
    pl_rw_free(r->best);
    pl_rw_sites_free(r->log, r->n_log);
    memset(r, 0, sizeof *r);
}

static double price_model(const pl_rw_model *m, const pl_rw_search_opts *o, pl_err *err)
{
    pl_graph *g = pl_rw_graph(m, o->load, err);
    if (!g) return -1;
    double p = pl_rw_price(g, o->c, o->params, err);
    pl_graph_free(g);
    return p;
}

typedef struct run {
    search s;
    const pl_rw_search_opts *o;
    double alpha, t_end;
    int best;
    pl_rw_search_result *r;
} run;

/* Makes the new best model's candidate keep its model, and frees the old best's when it was
 * expanded already (only the best and the queued keep theirs). */
static void new_best(run *u, int i)
{
    cand *old = &u->s.c[u->best];
    if (old->expanded) free(old->buf), old->buf = NULL;
    u->best = i;
}

/* One child of candidate `parent` (whose model is pm, its graph g): kept, pruned or a
 * duplicate. */
static int child(run *u, int parent, const pl_rw_model *pm, const pl_graph *g,
                 const pl_rw_site *site, pl_err *err)
{
    uint64_t path = u->s.c[parent].path + site_hash(site);
    u->r->generated++;
    if (!seen_add(&u->s, path_seen_key(path))) { /* these sites in another order */
        u->r->dup++;
        return 0;
    }
    pl_rw_model *m = pl_rw_apply(pm, g, site, err);
    if (!m) return -1;
    size_t len;
    void *buf = pl_rw_pack(m, &len);
    double p = 0;
    if (!seen_add(&u->s, model_hash(buf, len))) {
        u->r->dup++;
    } else if ((p = price_model(m, u->o, err)) < 0) {
        pl_rw_free(m), free(buf);
        return -1;
    } else if (!(p < u->alpha * u->s.c[u->best].cost)) {
        u->r->pruned++;
    } else {
        int i = add_cand(&u->s, buf, len, p, parent, site);
        u->s.c[i].path = path, u->s.c[i].ops = pl_rw_nodes(m);
        u->s.c[i].steps = u->s.c[parent].steps + 1;
        heap_push(&u->s, i);
        if (better_answer(&u->s, i, u->best)) new_best(u, i);
        buf = NULL;
    }
    pl_rw_free(m), free(buf);
    return 0;
}

static pl_rw_model *unpack(const cand *c, pl_err *err)
{
    return pl_rw_load_buffer(c->buf, c->len, "search candidate", err);
}

/* Every site of every rule on candidate i. */
static int expand(run *u, int i, pl_err *err)
{
    pl_rw_model *m = unpack(&u->s.c[i], err);
    pl_graph *g = m ? pl_rw_graph(m, u->o->load, err) : NULL;
    if (!g) return pl_rw_free(m), -1;
    int n_rules, rc = 0;
    pl_rw_rules(&n_rules);
    for (int rule = 0; rule < n_rules && !rc && !u->r->timed_out; rule++) {
        pl_rw_site *sites;
        int n;
        if (pl_rw_find(m, g, rule, &sites, &n, err) < 0) {
            rc = -1;
            break;
        }
        for (int k = 0; k < n && !rc; k++) {
            if (u->t_end > 0 && pl_now() > u->t_end) {
                u->r->timed_out = true;
                break;
            }
            rc = child(u, i, m, g, &sites[k], err);
        }
        pl_rw_sites_free(sites, n);
    }
    pl_graph_free(g);
    pl_rw_free(m);
    u->s.c[i].expanded = true;
    if (i != u->best) free(u->s.c[i].buf), u->s.c[i].buf = NULL;
    return rc;
}

/* The sites from the input to candidate i, in order. */
static void path_to(const search *s, int i, pl_rw_search_result *r)
{
    int n = 0;
    for (int j = i; s->c[j].parent >= 0; j = s->c[j].parent)
        n++;
    r->log = pl_malloc((size_t)(n ? n : 1) * sizeof *r->log);
    r->n_log = n;
    for (int j = i; s->c[j].parent >= 0; j = s->c[j].parent)
        site_copy(&r->log[--n], &s->c[j].site);
}

int pl_rw_search(const pl_rw_model *m, const pl_rw_search_opts *o, pl_rw_search_result *r,
                 pl_err *err)
{
    memset(r, 0, sizeof *r);
    double alpha = o->alpha > 0 ? o->alpha : 1.05;
    if (!(alpha >= 1) || !isfinite(alpha))
        return pl_err_set(err, "search: alpha %g: must be a number >= 1", alpha), -1;
    run u = {.o = o, .alpha = alpha, .r = r};
    u.t_end = o->time_limit_s > 0 ? pl_now() + o->time_limit_s : 0;
    int max_expand = o->max_expand > 0 ? o->max_expand : 200;
    double p = price_model(m, o, err);
    if (p < 0) return -1;
    r->cost0 = p;
    size_t len;
    void *buf = pl_rw_pack(m, &len);
    seen_add(&u.s, model_hash(buf, len));
    int root = add_cand(&u.s, buf, len, p, -1, NULL);
    u.s.c[root].ops = pl_rw_nodes(m);
    heap_push(&u.s, root);
    int rc = 0;
    while (u.s.n_heap && r->expanded < max_expand && !r->timed_out) {
        if (u.t_end > 0 && pl_now() > u.t_end) {
            r->timed_out = true;
            break;
        }
        int i = heap_pop(&u.s);
        if (!(u.s.c[i].cost < alpha * u.s.c[u.best].cost) && i != u.best) {
            free(u.s.c[i].buf), u.s.c[i].buf = NULL; /* the best got cheaper since */
            continue;
        }
        r->expanded++;
        if ((rc = expand(&u, i, err)) < 0) break;
    }
    if (rc == 0 && u.best == 0)
        r->best = pl_rw_copy(m); /* the input as it is (its name kept) */
    else if (rc == 0 && !(r->best = unpack(&u.s.c[u.best], err)))
        rc = -1;
    if (rc == 0) {
        r->best_cost = u.s.c[u.best].cost;
        path_to(&u.s, u.best, r);
    }
    search_free(&u.s);
    if (rc < 0) memset(r, 0, sizeof *r);
    return rc;
}
