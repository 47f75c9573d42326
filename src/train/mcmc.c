/* mcmc.c: FlexFlow's strategy search as a baseline (docs/train.md, "Baselines"): Markov chain
 * Monte Carlo, Metropolis-Hastings, over the strategies of MCTS's action space, judged by the
 * same compiler and simulator (pl_train_evaluate).
 *
 * FlexFlow (Jia, Zaharia and Aiken, "Beyond Data and Model Parallelism for Deep Neural
 * Networks", SysML 2019, section 6; its FFModel::optimize) starts from data parallelism, and
 * each step rewrites one operator's parallel configuration at random, accepting it with
 * probability min(1, exp(alpha (cost_current - cost_new))), alpha = 1 by default (its
 * FFConfig's searchAlpha), costs its simulator's milliseconds; every budget / 100 steps
 * (within 1 and 1000) the walk goes back to the best strategy found. Here an operator is an
 * op group and a configuration is one of MCTS's actions for it (tr_actions), so that the two
 * searches differ in how they search and in nothing else. The proposal is symmetric (any
 * group, then any other action, each uniformly), so the acceptance needs no Hastings
 * correction. */
#include "placer/train.h"
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct walk {
    const pl_train_ctx *x;
    pl_train_action *acts;
    unsigned char *uses; /* the actions' device-group sets */
    int n_acts;
    pl_strmap seen; /* states simulated: their time */
    char **keys;    /* the map's keys (it keeps pointers) */
    double *t;
    int n_seen, cap_keys, cap_t;
} walk;

/* A state's key: its action per op group, in hexadecimal, dot-terminated. */
static char *state_key(const walk *w, const int *st)
{
    size_t cap = (size_t)w->x->og.n * 9 + 1, len = 0;
    char *key = pl_malloc(cap);
    key[0] = 0;
    for (int i = 0; i < w->x->og.n; i++)
        len += (size_t)snprintf(key + len, cap - len, "%x.", (unsigned)st[i]);
    return key;
}

/* The strategy of a state, as MCTS completes one: overlapped data parallelism, each op
 * group's row replaced by its action. */
static pl_train_strategy *strategy_of(const walk *w, const int *st)
{
    pl_train_strategy *s = pl_train_dp(w->x, false, true);
    for (int i = 0; i < w->x->og.n; i++)
        tr_set_row(s, i, &w->acts[st[i]]);
    return s;
}

/* T of state st (INFINITY when it does not fit), simulated once per state. */
static int time_of(walk *w, const int *st, double *t, pl_err *err)
{
    char *key = state_key(w, st);
    int hit = pl_strmap_get(&w->seen, key);
    if (hit >= 0) return free(key), *t = w->t[hit], 0;
    pl_train_strategy *s = strategy_of(w, st);
    pl_train_eval e;
    int rc = pl_train_evaluate(w->x, s, &e, err);
    pl_train_strategy_free(s);
    if (rc < 0) return free(key), -1;
    *t = e.oom ? INFINITY : e.iteration_s;
    pl_train_eval_free(&e);
    pl_grow((void **)&w->keys, &w->cap_keys, w->n_seen + 1, sizeof *w->keys);
    pl_grow((void **)&w->t, &w->cap_t, w->n_seen + 1, sizeof *w->t);
    w->keys[w->n_seen] = key, w->t[w->n_seen] = *t;
    pl_strmap_put(&w->seen, key, w->n_seen++);
    return 0;
}

/* FlexFlow's restart span: budget / 100 within [1, 1000], unless the caller gives one. */
static int restart_span(const pl_train_mcmc_opts *o, int budget)
{
    if (o->restart_every > 0) return o->restart_every;
    int span = budget / 100;
    return span < 1 ? 1 : span > 1000 ? 1000 : span;
}

/* Metropolis: a faster proposal always; a slower one with probability exp(-beta dt); one
 * that does not fit never (nor one when the walk's state does not fit either). */
static bool accept(uint64_t *rng, double beta, double cur, double next)
{
    if (next < cur) return true;
    if (!isfinite(next)) return false;
    return pl_rng_uniform(rng) < exp(-beta * (next - cur));
}

/* The walk itself: cur and best (G entries each) start at the start state, best ends at the
 * fastest visited; r's counts are filled. */
static int run(walk *w, const pl_train_mcmc_opts *o, int *cur, int *best, pl_train_mcmc_result *r,
               pl_err *err)
{
    int G = w->x->og.n, budget = o->iterations > 0 ? o->iterations : 300;
    int span = restart_span(o, budget), last_reset = 0;
    size_t bytes = (size_t)G * sizeof *cur;
    double beta = o->beta_per_s > 0 ? o->beta_per_s : 1e3, t_cur = r->start_s;
    uint64_t rng = tr_tree_seed(o->seed, 0);
    int *next = pl_malloc(bytes), rc = 0;
    for (int it = 0; it < budget && rc == 0 && w->n_acts > 1; it++) {
        if (it - last_reset >= span) /* back to the best, as FlexFlow */
            memcpy(cur, best, bytes), t_cur = r->best_s, last_reset = it;
        memcpy(next, cur, bytes);
        int g = pl_rng_below(&rng, G), a = pl_rng_below(&rng, w->n_acts - 1);
        next[g] = a >= cur[g] ? a + 1 : a; /* another action than the group's own */
        double t;
        if ((rc = time_of(w, next, &t, err)) < 0) break;
        r->iterations++;
        if (t < r->best_s) memcpy(best, next, bytes), r->best_s = t;
        if (!accept(&rng, beta, t_cur, t)) continue;
        r->accepted++, r->uphill += t > t_cur;
        memcpy(cur, next, bytes), t_cur = t;
    }
    free(next);
    return rc;
}

pl_train_strategy *pl_train_mcmc(const pl_train_ctx *x, const pl_train_mcmc_opts *o,
                                 pl_train_mcmc_result *r, pl_err *err)
{
    static const pl_train_mcmc_opts dflt = {0};
    pl_train_mcmc_result own;
    if (!o) o = &dflt;
    if (!r) r = &own;
    memset(r, 0, sizeof *r);
    walk w = {.x = x};
    pl_strmap_init(&w.seen);
    w.n_acts = tr_actions(x, &w.acts, &w.uses);
    /* action 0 on every group: data parallelism with AllReduce (tr_actions) */
    int *cur = pl_calloc((size_t)x->og.n, sizeof *cur),
        *best = pl_calloc((size_t)x->og.n, sizeof *best);
    int rc = time_of(&w, cur, &r->start_s, err);
    r->best_s = r->start_s;
    if (rc == 0) rc = run(&w, o, cur, best, r, err);
    r->simulations = w.n_seen;
    pl_train_strategy *s = rc == 0 ? strategy_of(&w, best) : NULL;
    for (int k = 0; k < w.n_seen; k++)
        free(w.keys[k]);
    free(w.keys), free(w.t), free(w.acts), free(w.uses), free(cur), free(best);
    pl_strmap_free(&w.seen);
    return s;
}
