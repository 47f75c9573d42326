/* mcts.c: TAG's strategy search, Monte-Carlo tree search with PUCT (docs/train.md, "Search").
 *
 * A vertex is a partial strategy: the op groups decided so far, in descending time (the most
 * expensive first). An edge is one op group's action (device groups, option). Each iteration
 * descends by PUCT, U(s, a) = Q'(s, a) + c G'(s, a) sqrt(sum_b N(s, b) + 1) / (1 + N(s, a))
 * (Q' and G' below, at select_action), expands one new vertex, completes its strategy (every
 * undecided group takes the action of the most expensive group, or data parallelism at the root),
 * evaluates it with the compiler and the simulator, and backs up the reward r = T_DP / T - 1 (-1
 * when it does not fit) as a running average, Q += (r - Q) / N (the digest's ambiguity 3). DP-NCCL
 * itself is evaluated first and kept when nothing beats it, so the answer is never slower. */
#include "placer/dist.h"
#include "placer/train.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vertex {
    int *child;        /* per action: vertex index, -1 unexpanded */
    double *N, *Q, *G; /* per action */
    bool priors_set;
    /* With a prior fn: the evaluation, with feedback, of the vertex's completed strategy,
     * kept from the iteration that expanded it until its priors are set. */
    pl_train_eval fb;
    bool has_fb;
} vertex;

typedef struct search {
    const pl_train_ctx *x;
    const pl_train_search_opts *o;
    pl_train_action *acts;
    unsigned char *uses; /* the actions' device-group sets */
    int n_acts;
    int *order; /* op groups, descending time */
    vertex *v;
    int n_v, cap_v;
    double dp_s;
    pl_train_strategy *best;
    double best_s;
    int beat_dp_at;
    int iterations; /* run */
    uint64_t rng;
    pl_strmap seen; /* completed strategies already evaluated: their time */
    double *seen_t;
    char **seen_key; /* the map's keys (it keeps pointers) */
    int refined;     /* evaluations of the refinement */
    int n_seen, cap_seen, cap_keys;
    double r_lo, r_hi; /* the lowest and highest reward backed up; both start at DP-NCCL's, 0 */
} search;

/* A learned prior is trusted as this many visits of a vertex (select_action). */
enum { PRIOR_VISITS = 10 };

/* ---- actions ---- */

/* The device-group sets of the actions, one byte per device group (a bit mask of a fixed width
 * would stop at its width: 64 groups), each set kept once. */
typedef struct sets {
    int M, n, cap;
    unsigned char *uses; /* [k * M + j]: set k holds device group j */
} sets;

static void add_set(sets *ss, const unsigned char *uses)
{
    int M = ss->M;
    if (!memchr(uses, 1, (size_t)M)) return;
    for (int k = 0; k < ss->n; k++)
        if (!memcmp(ss->uses + (size_t)k * M, uses, (size_t)M)) return;
    pl_grow((void **)&ss->uses, &ss->cap, (ss->n + 1) * M, 1);
    memcpy(ss->uses + (size_t)ss->n++ * M, uses, (size_t)M);
}

static double group_speed(const pl_train_ctx *x, int j)
{
    double sp = 0;
    for (int k = x->dg.off[j]; k < x->dg.off[j + 1]; k++)
        sp += x->c->devs[x->dg.dev[k]].peak_flops_per_s[PL_PREC_FP32];
    return sp;
}

/* Device groups in descending speed (ties in group order), malloc'd. */
static int *by_speed(const pl_train_ctx *x)
{
    int M = x->dg.n, *by = pl_malloc((size_t)M * sizeof *by);
    for (int j = 0; j < M; j++)
        by[j] = j;
    for (int a = 1; a < M; a++)
        for (int b = a; b > 0 && group_speed(x, by[b]) > group_speed(x, by[b - 1]); b--) {
            int t = by[b];
            by[b] = by[b - 1], by[b - 1] = t;
        }
    return by;
}

/* All groups; each alone; each GPU model's groups; the k fastest for every k (all groups
 * first, so that action 0 is data parallelism with AllReduce: train_internal.h). */
int tr_actions(const pl_train_ctx *x, pl_train_action **acts, unsigned char **uses)
{
    int M = x->dg.n, cap = 0, n = 0;
    sets ss = {.M = M};
    unsigned char *u = pl_malloc((size_t)M);
    memset(u, 1, (size_t)M);
    add_set(&ss, u);
    for (int j = 0; j < M; j++) {
        memset(u, 0, (size_t)M);
        u[j] = 1;
        add_set(&ss, u);
    }
    for (int j = 0; j < M; j++) {
        const char *model = x->c->devs[x->dg.dev[x->dg.off[j]]].model;
        for (int k = 0; k < M; k++)
            u[k] = !strcmp(x->c->devs[x->dg.dev[x->dg.off[k]]].model, model);
        add_set(&ss, u);
    }
    int *by = by_speed(x);
    memset(u, 0, (size_t)M);
    for (int k = 0; k < M; k++) {
        u[by[k]] = 1;
        add_set(&ss, u);
    }
    free(by), free(u);
    *uses = ss.uses, *acts = NULL; /* the actions point into it: complete before they are made */
    for (int k = 0; k < ss.n; k++)
        for (int o = 0; o < PL_OPT_COUNT; o++) {
            pl_grow((void **)acts, &cap, n + 1, sizeof **acts);
            (*acts)[n++] = (pl_train_action){ss.uses + (size_t)k * M, (pl_train_option)o};
        }
    return n;
}

/* The strategy of a path of `depth` actions, completed: the undecided groups take the first
 * (most expensive) group's action, or data parallelism with AllReduce at the root. */
static pl_train_strategy *complete(const search *s, const int *path, int depth)
{
    pl_train_strategy *st = pl_train_dp(s->x, false, true);
    for (int d = 0; d < s->x->og.n; d++) {
        int a = d < depth ? path[d] : (depth > 0 ? path[0] : -1);
        if (a >= 0) tr_set_row(st, s->order[d], &s->acts[a]);
    }
    return st;
}

/* ---- the tree ---- */

static int new_vertex(search *s)
{
    pl_grow((void **)&s->v, &s->cap_v, s->n_v + 1, sizeof *s->v);
    vertex *v = &s->v[s->n_v];
    v->child = pl_malloc((size_t)s->n_acts * sizeof *v->child);
    for (int a = 0; a < s->n_acts; a++)
        v->child[a] = -1;
    v->N = pl_calloc((size_t)s->n_acts, sizeof *v->N);
    v->Q = pl_calloc((size_t)s->n_acts, sizeof *v->Q);
    v->G = pl_malloc((size_t)s->n_acts * sizeof *v->G);
    v->priors_set = false;
    memset(&v->fb, 0, sizeof v->fb);
    v->has_fb = false;
    return s->n_v++;
}

/* A learned prior's values are used as they come only when they are probabilities: a NaN
 * (weights that overflow) makes every PUCT score NaN and no action is selected. */
static int check_priors(const search *s, const vertex *v, int group, pl_err *err)
{
    double sum = 0;
    for (int a = 0; a < s->n_acts; a++) {
        if (!(v->G[a] >= 0 && v->G[a] <= 1 + 1e-6))
            return pl_err_set(err,
                              "train: MCTS: the prior gave op group %d's action %d the value %g, "
                              "not a probability (unusable prior weights?)",
                              group, a, v->G[a]);
        sum += v->G[a];
    }
    if (!(sum > 0))
        return pl_err_set(err, "train: MCTS: the prior gave op group %d's actions no weight at all",
                          group);
    return 0;
}

/* A prior fn reads the simulator's feedback on the vertex's completed strategy: the iteration
 * that expanded the vertex kept it; the root (and a vertex whose evaluation came from the
 * cache) is evaluated here. */
static int set_priors(search *s, int vi, const int *path, int depth, pl_err *err)
{
    vertex *v = &s->v[vi];
    if (v->priors_set) return 0;
    if (!s->o->prior) {
        for (int a = 0; a < s->n_acts; a++)
            v->G[a] = 1.0 / s->n_acts;
        v->priors_set = true;
        return 0;
    }
    pl_train_strategy *partial = complete(s, path, depth);
    pl_train_eval_opts eo = {.feedback = true};
    if (!v->has_fb && pl_train_evaluate_opts(s->x, partial, &eo, &v->fb, err) < 0) {
        pl_train_strategy_free(partial);
        return -1;
    }
    v->has_fb = true;
    s->o->prior(s->x, partial, &v->fb, s->order[depth], s->acts, s->n_acts, v->G, s->o->prior_user);
    pl_train_strategy_free(partial);
    pl_train_eval_free(&v->fb);
    v->has_fb = false, v->priors_set = true;
    return check_priors(s, v, s->order[depth], err);
}

/* A value on [0, 1]: its place between the lowest and the highest reward backed up so far
 * (MuZero's min-max normalisation). The reward T_DP / T - 1 has no upper bound (41 for
 * gpt2_small on TAG's cloud, where DP-NCCL takes 8.7 s), while the exploration term is about
 * c G sqrt(N): unscaled, the first action tried at a vertex kept every later visit
 * (docs/train.md, "Search"). */
static double scaled(const search *s, double q)
{
    double span = s->r_hi - s->r_lo;
    return span > 0 ? (q - s->r_lo) / span : 0;
}

/* The action of vertex vi with the highest PUCT score (ties at random), or -1 when no score
 * is a number (the priors or the values went NaN): the caller stops the search, saying so.
 * Q' is Q scaled (above); an untried action is valued at the vertex's mean (first-play
 * urgency), so that a vertex tries other actions once the tried ones fall below it. G' is the
 * prior trusted as PRIOR_VISITS visits, then giving way to uniform as the vertex's own visits
 * N grow: G' = (K G + N / |A|) / (K + N), progressive bias's decay; uniform priors are
 * unchanged by it. */
static int select_action(search *s, int vi)
{
    vertex *v = &s->v[vi];
    double sum = 0, qsum = 0, c = s->o->c_puct > 0 ? s->o->c_puct : 1.0;
    for (int a = 0; a < s->n_acts; a++)
        sum += v->N[a], qsum += v->N[a] * v->Q[a];
    double fpu = sum > 0 ? qsum / sum : 0, trust = PRIOR_VISITS / (PRIOR_VISITS + sum);
    int best = -1, ties = 0;
    double bu = -INFINITY;
    for (int a = 0; a < s->n_acts; a++) {
        double q = scaled(s, v->N[a] > 0 ? v->Q[a] : fpu);
        double g = trust * v->G[a] + (1 - trust) / s->n_acts;
        double u = q + c * g * sqrt(sum + 1) / (1 + v->N[a]);
        if (u > bu + 1e-12)
            bu = u, best = a, ties = 1;
        else if (fabs(u - bu) <= 1e-12 && pl_rng_below(&s->rng, ++ties) == 0)
            best = a;
    }
    return best;
}

/* ---- evaluation ---- */

/* T of a complete strategy, INFINITY when it does not fit; remembered by its actions. With
 * `keep`, the evaluation (with feedback) is moved there unless it came from the cache. */
static int evaluate(search *s, const int *path, int depth, double *t, pl_train_eval *keep,
                    pl_err *err)
{
    /* the whole path, however deep (a key cut short would answer for another strategy) */
    size_t cap = (size_t)depth * 12 + 1;
    char *key = pl_malloc(cap);
    size_t len = 0;
    key[0] = 0;
    for (int d = 0; d < depth; d++)
        len += (size_t)snprintf(key + len, cap - len, "%d,", path[d]);
    int hit = pl_strmap_get(&s->seen, key);
    if (hit >= 0) return free(key), *t = s->seen_t[hit], 0;
    pl_train_strategy *st = complete(s, path, depth);
    pl_train_eval e;
    pl_train_eval_opts eo = {.feedback = keep != NULL};
    if (pl_train_evaluate_opts(s->x, st, &eo, &e, err) < 0) {
        pl_train_strategy_free(st);
        free(key);
        return -1;
    }
    *t = e.oom ? INFINITY : e.iteration_s;
    if (keep)
        *keep = e;
    else
        pl_train_eval_free(&e);
    if (*t < s->best_s) {
        pl_train_strategy_free(s->best);
        s->best = st, s->best_s = *t;
    } else
        pl_train_strategy_free(st);
    pl_grow((void **)&s->seen_t, &s->cap_seen, s->n_seen + 1, sizeof *s->seen_t);
    pl_grow((void **)&s->seen_key, &s->cap_keys, s->n_seen + 1, sizeof *s->seen_key);
    s->seen_t[s->n_seen] = *t;
    s->seen_key[s->n_seen] = key;
    pl_strmap_put(&s->seen, s->seen_key[s->n_seen], s->n_seen);
    s->n_seen++;
    return 0;
}

static double reward(const search *s, double t)
{
    if (!isfinite(t)) return -1;
    return isfinite(s->dp_s) ? s->dp_s / t - 1 : 1;
}

/* One iteration: descend, expand one vertex, evaluate, back up. */
static int iterate(search *s, int it, pl_err *err)
{
    int G = s->x->og.n;
    int *path = pl_malloc((size_t)G * sizeof *path), *vs = pl_malloc((size_t)G * sizeof *vs);
    int depth = 0, vi = 0, nv = -1, rc = 0;
    while (depth < G) {
        if ((rc = set_priors(s, vi, path, depth, err)) < 0) break;
        int a = select_action(s, vi);
        if (a < 0) {
            rc = pl_err_set(err,
                            "train: MCTS: no action of op group %d could be selected (every PUCT "
                            "score is NaN)",
                            s->order[depth]);
            break;
        }
        path[depth] = a, vs[depth] = vi;
        depth++;
        if (s->v[vi].child[a] < 0) {
            if (depth < G) {
                nv = new_vertex(s);
                s->v[vi].child[a] = nv;
            }
            break;
        }
        vi = s->v[vi].child[a];
    }
    double t;
    pl_train_eval *keep = nv >= 0 && s->o->prior ? &s->v[nv].fb : NULL;
    if (rc == 0) rc = evaluate(s, path, depth, &t, keep, err);
    if (rc == 0 && keep && keep->n_groups) s->v[nv].has_fb = true;
    if (rc == 0) {
        double r = reward(s, t);
        s->r_lo = fmin(s->r_lo, r), s->r_hi = fmax(s->r_hi, r);
        for (int d = 0; d < depth; d++) {
            vertex *v = &s->v[vs[d]];
            v->N[path[d]] += 1;
            v->Q[path[d]] += (r - v->Q[path[d]]) / v->N[path[d]];
        }
        if (s->beat_dp_at < 0 && t < s->dp_s) s->beat_dp_at = it;
    }
    free(path), free(vs);
    return rc;
}

/* ---- distillation targets ---- */

/* Vertex vi at `depth` (its path in path[0..depth)) and, depth first, its children: a child's
 * visits are at most its edge's, so a vertex below the threshold ends its subtree. */
static void report(const search *s, int vi, int *path, int depth, double min_visits)
{
    const vertex *v = &s->v[vi];
    double sum = 0;
    for (int a = 0; a < s->n_acts; a++)
        sum += v->N[a];
    if (sum < min_visits) return;
    pl_train_strategy *partial = complete(s, path, depth);
    s->o->on_vertex(s->x, partial, s->order[depth], s->acts, s->n_acts, v->N, s->o->on_vertex_user);
    pl_train_strategy_free(partial);
    for (int a = 0; a < s->n_acts; a++)
        if (v->child[a] >= 0) {
            path[depth] = a;
            report(s, v->child[a], path, depth + 1, min_visits);
        }
}

static void report_vertices(const search *s)
{
    int *path = pl_malloc((size_t)s->x->og.n * sizeof *path);
    report(s, 0, path, 0, s->o->min_visits > 0 ? s->o->min_visits : 1);
    free(path);
}

/* ---- refinement ---- */

static void put_action(pl_train_strategy *st, int group, int a, const void *alt)
{
    tr_set_row(st, group, &((const pl_train_action *)alt)[a]);
}

/* placer's addition after MCTS (docs/train.md, "Search"): with uniform priors and hundreds of
 * iterations the tree stays shallow, and its completion rule gives most groups the first
 * group's action. One greedy pass over the op groups in descending time tries, for each, data
 * parallelism with AllReduce or a parameter server on every device group, and model
 * parallelism on the fastest device group, keeping a change when the simulation is faster.
 * It runs from MCTS's best and from the root's completion (data parallelism, overlapped),
 * keeping the faster: a greedy pass lands in different local optima from different starts.
 * The two passes go together through tr_greedy, so that with x->dist their simulations are
 * spread over the ranks. */
static int refine(search *s, pl_train_search_result *r, pl_err *err)
{
    const pl_train_ctx *x = s->x;
    int M = x->dg.n, fastest = 0;
    for (int j = 1; j < M; j++)
        if (group_speed(x, j) > group_speed(x, fastest)) fastest = j;
    unsigned char *all = pl_malloc((size_t)M), *one = pl_calloc((size_t)M, 1);
    memset(all, 1, (size_t)M);
    one[fastest] = 1;
    pl_train_action alt[3] = {{all, PL_OPT_ALLREDUCE}, {all, PL_OPT_PS}, {one, PL_OPT_MP}};
    pl_train_strategy *st[2] = {s->best, complete(s, NULL, 0)};
    pl_train_eval e;
    if (pl_train_evaluate(x, st[1], &e, err) < 0) {
        pl_train_strategy_free(st[1]);
        free(all), free(one);
        return -1;
    }
    double t[2] = {s->best_s, e.oom ? INFINITY : e.iteration_s};
    pl_train_eval_free(&e);
    int n = tr_greedy(x, st, t, 2, 3, put_action, alt, 1e-9, err);
    free(all), free(one);
    if (n >= 0) s->refined += n;
    r->refined_mcts_s = t[0], r->refined_root_s = t[1];
    s->best_s = t[0]; /* st[0] is s->best, improved in place */
    if (n >= 0 && t[1] < t[0]) {
        pl_train_strategy_free(s->best);
        s->best = st[1], s->best_s = t[1];
    } else
        pl_train_strategy_free(st[1]);
    return n < 0 ? -1 : 0;
}

/* SFB on a copy of the best, kept when the simulation agrees that it saves time: the ILP's
 * ring and broadcast terms are a model, the simulator has contention and memory. */
static int apply_sfb(search *s, pl_train_search_result *r, pl_err *err)
{
    pl_train_strategy *c = pl_train_strategy_copy(s->best);
    int n = pl_train_sfb(s->x, c, err);
    pl_train_eval e;
    if (n < 0 || (n > 0 && pl_train_evaluate(s->x, c, &e, err) < 0)) {
        pl_train_strategy_free(c);
        return -1;
    }
    if (n > 0) {
        double t = e.oom ? INFINITY : e.iteration_s;
        pl_train_eval_free(&e);
        if (t < s->best_s) {
            pl_train_strategy_free(s->best);
            s->best = c, s->best_s = t, r->sfb_applied = n;
            return 0;
        }
        r->sfb_rejected = n;
    }
    pl_train_strategy_free(c);
    return 0;
}

/* ---- the whole ---- */

static void search_free(search *s)
{
    for (int i = 0; i < s->n_v; i++) {
        free(s->v[i].child), free(s->v[i].N), free(s->v[i].Q), free(s->v[i].G);
        if (s->v[i].has_fb) pl_train_eval_free(&s->v[i].fb);
    }
    for (int i = 0; i < s->n_seen; i++)
        free(s->seen_key[i]);
    free(s->v), free(s->acts), free(s->uses), free(s->order), free(s->seen_t), free(s->seen_key);
    pl_strmap_free(&s->seen);
}

/* DP-NCCL first: the baseline of the reward and the answer when nothing beats it. */
static int start(search *s, pl_err *err)
{
    pl_train_strategy *dp = pl_train_dp(s->x, false, false);
    pl_train_eval e;
    if (pl_train_evaluate(s->x, dp, &e, err) < 0) {
        pl_train_strategy_free(dp);
        return -1;
    }
    s->dp_s = e.oom ? INFINITY : e.iteration_s;
    pl_train_eval_free(&e);
    s->best = dp, s->best_s = s->dp_s;
    return 0;
}

/* Tree `r` of n (its seed and its share of the iterations; r = 0, n = 1 alone) into s, which
 * the caller frees (search_free, and s->best): from the root to the budget, then its
 * vertices reported. `own`: this process's own tree, which reports progress and vertices; a
 * lost rank's tree grown again on rank 0 does neither. */
static int grow(const pl_train_ctx *x, const pl_train_search_opts *o, int r, int n, bool own,
                search *s, pl_err *err)
{
    double t0 = pl_now();
    *s = (search){
        .x = x, .o = o, .beat_dp_at = -1, .best_s = INFINITY, .rng = tr_tree_seed(o->seed, r)};
    pl_strmap_init(&s->seen);
    s->n_acts = tr_actions(x, &s->acts, &s->uses);
    s->order = pl_train_group_order(x);
    new_vertex(s);
    int rc = start(s, err), budget = tr_tree_budget(o, r, n), it = 0;
    for (; rc == 0 && it < budget; it++) {
        if (o->time_s > 0 && pl_now() - t0 > o->time_s) break;
        rc = iterate(s, it + 1, err);
        if (own && o->progress) o->progress(it + 1, s->best_s, s->dp_s, o->progress_user);
    }
    s->iterations = it;
    if (rc == 0 && own && o->on_vertex) report_vertices(s);
    return rc;
}

/* ---- root parallelism (docs/dist.md, "train") ---- */

uint64_t tr_tree_seed(unsigned seed, int r)
{
    uint64_t s = seed ? seed : 0x9e3779b97f4a7c15ull;
    if (r == 0) return s;
    uint64_t z = s ^ (uint64_t)r * 0xbf58476d1ce4e5b9ull;
    return pl_rng_next(&z);
}

int tr_tree_budget(const pl_train_search_opts *o, int r, int n)
{
    if (o->iterations <= 0 && o->time_s > 0) return 1 << 30;
    int total = o->iterations > 0 ? o->iterations : 300;
    return total / n + (r < total % n);
}

int tr_merge_trees(const tr_tree *all, int n, tr_tree *sum, pl_err *err)
{
    int w = 0;
    *sum = (tr_tree){.best_s = INFINITY, .beat_dp_at = -1, .ok = 1};
    for (int k = 0; k < n; k++) {
        if (!all[k].ok) return pl_err_set(err, "%s", all[k].msg);
        sum->iterations += all[k].iterations;
        if (all[k].beat_dp_at >= 0 && (sum->beat_dp_at < 0 || all[k].beat_dp_at < sum->beat_dp_at))
            sum->beat_dp_at = all[k].beat_dp_at;
        if (all[k].best_s < all[w].best_s) w = k;
    }
    sum->best_s = n > 0 ? all[w].best_s : INFINITY;
    return w;
}

/* The trees' map: this rank's own outcome, and the strategies of lost ranks' trees grown
 * again here. */
typedef struct trees {
    const pl_train_ctx *x;
    const pl_train_search_opts *o;
    tr_tree own;
    pl_train_strategy **regrown; /* per item (rank): its tree's best, grown here; else NULL */
} trees;

static void tree_item(int item, void *out, void *user)
{
    trees *t = user;
    tr_tree *tt = out;
    /* item r runs on rank r (dist.h: i % size): its own tree */
    if (item == pl_dist_rank()) {
        memcpy(tt, &t->own, sizeof *tt);
        return;
    }
    /* a lost rank's item, run on rank 0: its search is gone with it, so its tree is grown again
     * here from the root with its seed and share, the tree it would have grown */
    search s;
    pl_err err = {""};
    int rc = grow(t->x, t->o, item, pl_dist_size(), false, &s, &err);
    *tt = (tr_tree){s.best_s, s.iterations, s.beat_dp_at, rc == 0, "", pl_dist_rank()};
    if (rc < 0)
        snprintf(tt->msg, sizeof tt->msg, "%s", err.msg);
    else
        t->regrown[item] = s.best, s.best = NULL;
    pl_train_strategy_free(s.best);
    search_free(&s);
}

/* The winner w's strategy from `root`, the rank holding it (`held` there when it is a tree
 * grown again, else s->best), into every rank's s->best. 0 or -1. */
static int bcast_best(search *s, int w, int root, pl_train_strategy *held)
{
    const pl_train_ctx *x = s->x;
    int me = pl_dist_rank();
    size_t bytes = tr_strategy_bytes(x);
    unsigned char *buf = pl_malloc(bytes);
    if (me == root) tr_strategy_pack(x, w == me ? s->best : held, buf);
    int rc = pl_dist_bcast(buf, bytes, root);
    if (rc == 0 && me != w) {
        pl_train_strategy_free(s->best);
        s->best = tr_strategy_unpack(x, buf);
    }
    free(buf);
    return rc;
}

/* Every rank's tree's outcome to every rank (tr_merge_trees); the rank holding the winner's
 * strategy (its own rank, or rank 0 when it grew a lost rank's tree again) broadcasts it, and
 * it becomes every rank's best. A rank's failure (rc < 0) fails them all with its message, so
 * that no rank is left waiting in the refinement's maps. */
static int merge_trees(search *s, int rc, pl_err *err)
{
    const pl_train_ctx *x = s->x;
    int n = pl_dist_size(), me = pl_dist_rank();
    trees t = {x, s->o, {s->best_s, s->iterations, s->beat_dp_at, rc == 0, "", me}, NULL};
    if (rc < 0) snprintf(t.own.msg, sizeof t.own.msg, "%s", err->msg);
    t.regrown = pl_calloc((size_t)n, sizeof *t.regrown);
    tr_tree *all = pl_malloc((size_t)n * sizeof *all), sum;
    int mapped = pl_dist_map_or_here(x->dist, n, tree_item, all, sizeof *all, &t), w = -1;
    if (mapped < 0)
        pl_err_set(err, "train: gathering the MCTS trees from the MPI ranks failed: %s",
                   pl_dist_error());
    else
        w = tr_merge_trees(all, n, &sum, err); /* the winning tree's item, or -1 */
    int root = w >= 0 ? all[w].held_by : -1;
    free(all);
    if (w >= 0) rc = bcast_best(s, w, root, t.regrown[w]);
    for (int k = 0; k < n; k++)
        pl_train_strategy_free(t.regrown[k]);
    free(t.regrown);
    if (w < 0) return -1;
    s->iterations = sum.iterations, s->beat_dp_at = sum.beat_dp_at, s->best_s = sum.best_s;
    return rc < 0 ? pl_err_set(err,
                               "train: broadcasting the best strategy to the MPI ranks failed: %s",
                               pl_dist_error())
                  : 0;
}

/* ---- the search ---- */

/* Whether s's best is the root's completion: the search's start, every op group data-parallel
 * with its AllReduce overlapped. */
static bool best_is_root(const search *s)
{
    pl_train_strategy *root = complete(s, NULL, 0);
    size_t n = tr_strategy_bytes(s->x);
    unsigned char *a = pl_malloc(2 * n);
    tr_strategy_pack(s->x, s->best, a), tr_strategy_pack(s->x, root, a + n);
    bool same = !memcmp(a, a + n, n);
    free(a), pl_train_strategy_free(root);
    return same;
}

/* One tree with o's prior (one per rank with x->dist, merged) into s, which the caller frees
 * (search_free, and s->best) even on failure; its outcome into *part. */
static int grow_tree(const pl_train_ctx *x, const pl_train_search_opts *o, search *s,
                     pl_train_tree_result *part, pl_err *err)
{
    int rc = x->dist ? grow(x, o, pl_dist_rank(), pl_dist_size(), true, s, err)
                     : grow(x, o, 0, 1, true, s, err);
    if (x->dist) rc = merge_trees(s, rc, err);
    *part = (pl_train_tree_result){true, s->best_s, s->iterations, s->beat_dp_at,
                                   rc == 0 && s->best && best_is_root(s)};
    return rc;
}

/* The uniform tree then the prior's (uniform_too), or the one tree o asks for, into s: the
 * faster tree's search (ties: the uniform one's). 0 or -1; s is the caller's either way. */
static int grow_trees(const pl_train_ctx *x, const pl_train_search_opts *o, search *s,
                      pl_train_search_result *r, bool *by_prior, pl_err *err)
{
    *by_prior = o->prior != NULL;
    if (!o->prior || !o->uniform_too)
        return grow_tree(x, o, s, o->prior ? &r->prior : &r->uniform, err);
    pl_train_search_opts uo = *o;
    uo.prior = NULL, uo.prior_user = NULL, uo.on_vertex = NULL;
    search u;
    if (grow_tree(x, &uo, &u, &r->uniform, err) < 0) return *s = u, -1;
    int rc = grow_tree(x, o, s, &r->prior, err);
    if (rc == 0 && u.best_s <= s->best_s) {
        search t = *s;
        *s = u, u = t, *by_prior = false;
        s->o = o; /* uo ends here; the refinement and SFB read no prior */
    }
    pl_train_strategy_free(u.best);
    search_free(&u);
    return rc;
}

int pl_train_search(const pl_train_ctx *x, const pl_train_search_opts *o, pl_train_search_result *r,
                    pl_err *err)
{
    static const pl_train_search_opts dflt = {0};
    if (!o) o = &dflt;
    memset(r, 0, sizeof *r);
    r->uniform.best_s = r->prior.best_s = r->refined_s = r->sfb_s = INFINITY;
    double t0 = pl_now();
    search s;
    bool by_prior;
    int rc = grow_trees(x, o, &s, r, &by_prior, err);
    r->dp_s = s.dp_s;
    r->refined_mcts_s = r->refined_root_s = INFINITY;
    r->iterations = s.iterations;
    r->iterations_to_beat_dp = s.beat_dp_at;
    r->mcts_s = s.best_s;
    /* the best starts as DP-NCCL and is replaced only by a faster strategy */
    r->found_by = s.best_s >= s.dp_s ? PL_FOUND_DP
                  : by_prior         ? PL_FOUND_MCTS_PRIOR
                                     : PL_FOUND_MCTS_UNIFORM;
    if (rc == 0 && !o->no_refine && isfinite(s.best_s)) rc = refine(&s, r, err);
    if (rc == 0 && !o->no_refine) r->refined_s = s.best_s;
    if (s.best_s < r->mcts_s) r->found_by = PL_FOUND_REFINE; /* from a tree's best or the start */
    r->refine_evaluations = s.refined;
    r->refined_by = r->found_by;
    if (rc == 0 && !o->no_sfb && isfinite(s.best_s)) rc = apply_sfb(&s, r, err);
    if (rc == 0 && !o->no_sfb) r->sfb_s = s.best_s;
    if (r->sfb_applied) r->found_by = PL_FOUND_SFB;
    if (!isfinite(s.best_s)) r->found_by = PL_FOUND_FALLBACK; /* nothing fitted: fit splits it */
    if (rc == 0) rc = pl_train_fit(x, s.best, &r->eval, err);
    if (rc == 0) r->best = s.best, s.best = NULL;
    if (rc < 0) pl_train_eval_free(&r->eval); /* train.h: nothing to free after a failure */
    pl_train_strategy_free(s.best);
    search_free(&s);
    r->search_s = pl_now() - t0;
    return rc;
}

int pl_train_search_iterations(const pl_train_search_result *r)
{
    int n = (r->uniform.ran ? r->uniform.iterations : 0) + (r->prior.ran ? r->prior.iterations : 0);
    return n > r->iterations ? n : r->iterations;
}

const char *pl_train_found_name(pl_train_found f)
{
    static const char *const name[] = {
        [PL_FOUND_DP] = "dp", /* DP-NCCL, kept by the search */
        [PL_FOUND_MCTS_UNIFORM] = "mcts-uniform",
        [PL_FOUND_MCTS_PRIOR] = "mcts-gnn",
        [PL_FOUND_REFINE] = "refinement",
        [PL_FOUND_SFB] = "sfb",
        [PL_FOUND_FALLBACK] = "fallback",
    };
    return (unsigned)f < sizeof name / sizeof *name ? name[f] : "?";
}

void pl_train_search_result_free(pl_train_search_result *r)
{
    pl_train_strategy_free(r->best);
    pl_train_eval_free(&r->eval);
    memset(r, 0, sizeof *r);
}
