/* moirai_ls.c: iterated local search over placements, judged by the simulator
 * (docs/moirai.md, "Local search").
 *
 * Why: on GoogLeNet and InceptionV4 CBC finds nothing better than its warm start within
 * minutes, while the simulator judges a placement in well under a millisecond. So we search
 * placements directly: random moves (relocate, swap, group), each simulated, kept when the
 * makespan does not grow (sideways moves let the search cross plateaus); after a long run of
 * failures, restart from the best plan with a few random relocations. Half of the op picks come
 * from the current critical path, where a move can shorten the makespan.
 *
 * A plan here has no per-device order: reordering after a move would need a scheduler. Ops run
 * first-ready-first-served or by a fixed per-op priority (whichever suits the start best), so
 * the priority stays valid whatever device an op moves to. */
#include "placer/dist.h"
#include "moirai_ls.h"
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_GROUP = 8, STALE_ROUNDS = 30 };

typedef struct ls {
    const pl_cost *k;
    int n, D;
    pl_plan *cur; /* dev + the chosen priority (or none) */
    double cur_ms;
    int *best_dev;
    double best_ms;
    double *used, *cap; /* static memory (5) of cur per device */
    int grp[MAX_GROUP], old[MAX_GROUP], ng;
    int *crit, *tmp_crit, ncrit, ntmp;
    uint64_t rng; /* pl_rng_*: the project's one seeded generator */
    long evals;
    pl_sim_opts judge; /* contention and per-edge as the caller judges plans; memory ignored */
    bool toct;         /* the objective: the tenants' summed ends (pl_place_refine), else the
                          makespan */
} ls;

static double mem(const ls *L, int op)
{
    return pl_moirai_op_mem(L->k, op);
}

void pl_moirai_used(const pl_cost *k, const int *dev, double *used)
{
    for (int d = 0; d < k->n_devs; d++)
        used[d] = 0;
    for (int i = 0; i < k->n_ops; i++)
        used[dev[i]] += pl_moirai_op_mem(k, i);
}

static bool runs_on(const ls *L, int op, int d)
{
    return isfinite(pl_cost_op_s(L->k, op, d));
}

/* The tenants' summed ends (a graph of one model: its makespan), summed in tenant order so
 * that the same plan gives the same bits. */
static double sim_toct(const pl_sim_result *r)
{
    if (!r->tenant_end_s) return r->makespan_s;
    double s = 0;
    for (int t = 0; t < r->n_tenants; t++)
        s += r->tenant_end_s[t];
    return s;
}

/* Simulates cur; keeps its critical path in tmp_crit (swapped in when the move is kept). */
static double eval(ls *L)
{
    pl_sim_opts so = L->judge;
    pl_sim_result r = {0};
    pl_err e = {{0}};
    double ms = INFINITY;
    L->evals++;
    if (pl_simulate(L->k, L->cur, &so, &r, &e) == 0) {
        ms = L->toct ? sim_toct(&r) : r.makespan_s;
        L->ntmp = r.critical_len < L->n ? r.critical_len : L->n;
        memcpy(L->tmp_crit, r.critical_path, L->ntmp * sizeof *L->tmp_crit);
    }
    pl_sim_result_free(&r);
    return ms;
}

static void keep_crit(ls *L)
{
    int *t = L->crit;
    L->crit = L->tmp_crit, L->tmp_crit = t, L->ncrit = L->ntmp;
}

static int pick_op(ls *L)
{
    if (L->ncrit > 0 && pl_rng_below(&L->rng, 2)) return L->crit[pl_rng_below(&L->rng, L->ncrit)];
    return pl_rng_below(&L->rng, L->n);
}

/* A random device other than `not` that runs every op of the group, or -1. */
static int pick_dev(ls *L, int not )
{
    int d0 = pl_rng_below(&L->rng, L->D);
    for (int t = 0; t < L->D; t++) {
        int d = (d0 + t) % L->D;
        bool ok = d != not ;
        for (int g = 0; g < L->ng && ok; g++)
            ok = runs_on(L, L->grp[g], d);
        if (ok) return d;
    }
    return -1;
}

/* (5) after moving `delta` onto d: within capacity, or at least not fuller than before. */
static bool fits(const ls *L, int d, double delta)
{
    return delta <= 0 || L->used[d] + delta <= L->cap[d];
}

/* The group: op, then while the last one has exactly one successor, that successor, so that
 * a producer moves with the chain it alone feeds and no transfer is added inside it. */
static void chain(ls *L, int op)
{
    const pl_graph *g = L->k->g;
    L->ng = 0;
    L->grp[L->ng++] = op;
    while (L->ng < MAX_GROUP && g->succ_off[op + 1] - g->succ_off[op] == 1) {
        op = g->succ[g->succ_off[op]];
        L->grp[L->ng++] = op;
    }
}

/* Moves the group to d if (5) allows; remembers the old devices for undo. */
static bool move_group(ls *L, int d)
{
    double add = 0;
    for (int g = 0; g < L->ng; g++)
        if (L->cur->dev[L->grp[g]] != d) add += mem(L, L->grp[g]);
    if (!fits(L, d, add)) return false;
    for (int g = 0; g < L->ng; g++) {
        int op = L->grp[g];
        L->old[g] = L->cur->dev[op];
        L->used[L->old[g]] -= mem(L, op), L->used[d] += mem(L, op);
        L->cur->dev[op] = d;
    }
    return true;
}

static void undo(ls *L)
{
    for (int g = L->ng - 1; g >= 0; g--) {
        int op = L->grp[g], d = L->cur->dev[op];
        L->used[d] -= mem(L, op), L->used[L->old[g]] += mem(L, op);
        L->cur->dev[op] = L->old[g];
    }
}

/* Swap is two one-op groups: set the group to both ops and their new devices directly. */
static bool swap_ops(ls *L, int i, int j)
{
    int a = L->cur->dev[i], b = L->cur->dev[j];
    if (a == b || !runs_on(L, i, b) || !runs_on(L, j, a)) return false;
    if (!fits(L, b, mem(L, i) - mem(L, j)) || !fits(L, a, mem(L, j) - mem(L, i))) return false;
    L->ng = 2, L->grp[0] = i, L->grp[1] = j, L->old[0] = a, L->old[1] = b;
    L->used[a] += mem(L, j) - mem(L, i), L->used[b] += mem(L, i) - mem(L, j);
    L->cur->dev[i] = b, L->cur->dev[j] = a;
    return true;
}

/* Applies one random move; false when the move drawn is not allowed (nothing changed). */
static bool random_move(ls *L)
{
    int op = pick_op(L), kind = pl_rng_below(&L->rng, 3);
    if (kind == 1) return swap_ops(L, op, pick_op(L));
    if (kind == 0)
        L->ng = 1, L->grp[0] = op;
    else
        chain(L, op);
    int d = pick_dev(L, L->cur->dev[op]);
    return d >= 0 && move_group(L, d);
}

static bool improve_best(ls *L)
{
    if (!(L->cur_ms < L->best_ms)) return false;
    L->best_ms = L->cur_ms;
    memcpy(L->best_dev, L->cur->dev, L->n * sizeof *L->best_dev);
    return true;
}

/* From the best plan, a few random relocations: a new basin, near the good one. */
static void restart(ls *L)
{
    for (int i = 0; i < L->n; i++) {
        int d = L->cur->dev[i], b = L->best_dev[i];
        L->used[d] -= mem(L, i), L->used[b] += mem(L, i), L->cur->dev[i] = b;
    }
    int kicks = 2 + pl_rng_below(&L->rng, 2 + L->n / 20);
    for (int t = 0; t < kicks; t++) {
        L->ng = 1, L->grp[0] = pl_rng_below(&L->rng, L->n);
        int d = pick_dev(L, L->cur->dev[L->grp[0]]);
        if (d >= 0) move_group(L, d);
    }
    L->cur_ms = eval(L);
    keep_crit(L);
}

/* The start's own priorities, or its recorded start times as priorities (replays its order
 * when nothing moves), or none (first-ready): the one that simulates the start best. */
static void choose_priority(ls *L, const pl_plan *p)
{
    pl_sim_opts so = L->judge;
    so.record = true;
    pl_sim_result r = {0};
    pl_err e = {{0}};
    double *cand[3] = {NULL, NULL, NULL};
    if (p->priority) {
        cand[1] = pl_malloc((L->n + 1) * sizeof(double));
        memcpy(cand[1], p->priority, L->n * sizeof(double));
    }
    if (pl_simulate(L->k, p, &so, &r, &e) == 0) {
        cand[2] = pl_malloc((L->n + 1) * sizeof(double));
        memcpy(cand[2], r.op_start_s, L->n * sizeof(double));
    }
    pl_sim_result_free(&r);
    double best = INFINITY;
    for (int c = 0; c < 3; c++) {
        if (c && !cand[c]) continue;
        L->cur->priority = cand[c];
        double ms = eval(L);
        if (ms < best) best = ms, L->cur_ms = ms, keep_crit(L), cand[0] = cand[c];
    }
    for (int c = 1; c < 3; c++)
        if (cand[c] != cand[0]) free(cand[c]);
    L->cur->priority = cand[0];
}

static void ls_init(ls *L, const pl_cost *k, const pl_plan *p, double p_ms, unsigned seed,
                    const pl_sim_opts *judge, bool toct)
{
    int n = k->n_ops, D = k->n_devs;
    *L = (ls){.k = k, .n = n, .D = D, .rng = seed, .best_ms = p_ms, .toct = toct};
    L->judge = (pl_sim_opts){.contention = judge ? judge->contention : PL_CONTENTION_PORTS,
                             .per_edge = judge && judge->per_edge,
                             .ignore_memory = true};
    L->cur = pl_plan_new(n, D);
    memcpy(L->cur->dev, p->dev, n * sizeof *p->dev);
    L->best_dev = pl_malloc((n + 1) * sizeof *L->best_dev);
    memcpy(L->best_dev, p->dev, n * sizeof *p->dev);
    L->crit = pl_malloc((n + 1) * sizeof *L->crit);
    L->tmp_crit = pl_malloc((n + 1) * sizeof *L->tmp_crit);
    L->used = pl_calloc(D + 1, sizeof *L->used);
    L->cap = pl_calloc(D + 1, sizeof *L->cap);
    for (int d = 0; d < D; d++)
        L->cap[d] = pk_dev_cap(k, d);
    pl_moirai_used(k, p->dev, L->used);
    choose_priority(L, p);
}

static void ls_free(ls *L)
{
    pl_plan_free(L->cur);
    free(L->best_dev), free(L->crit), free(L->tmp_crit), free(L->used), free(L->cap);
}

/* One hill climb from cur: until `patience` moves in a row fail to lower the makespan.
 * Returns how many times it lowered the best. */
static int climb(ls *L, double deadline, double target)
{
    int patience = 50 + 3 * L->n * L->D, fails = 0, better = 0;
    while (fails < patience && L->best_ms > target && pl_now() < deadline) {
        if (!random_move(L)) {
            fails++;
            continue;
        }
        double ms = eval(L);
        if (ms <= L->cur_ms) {
            fails = ms < L->cur_ms ? 0 : fails + 1;
            L->cur_ms = ms, keep_crit(L);
            better += improve_best(L);
        } else {
            undo(L), fails++;
        }
    }
    return better;
}

static int search(const pl_cost *k, pl_plan *p, double p_ms, double deadline, double target,
                  unsigned seed, const pl_sim_opts *judge, bool toct, pl_ls_stats *st)
{
    double t0 = pl_now();
    ls L;
    ls_init(&L, k, p, p_ms, seed, judge, toct);
    /* target: stop at a lower bound (with round-off room), nothing can beat it */
    target *= 1 + 1e-9;
    int moves = improve_best(&L), stale = 0;
    while (stale < STALE_ROUNDS && L.best_ms > target && pl_now() < deadline) {
        int m = climb(&L, deadline, target);
        moves += m, stale = m ? 0 : stale + 1;
        if (stale < STALE_ROUNDS && L.best_ms > target && pl_now() < deadline) restart(&L);
    }
    if (moves) {
        memcpy(p->dev, L.best_dev, L.n * sizeof *p->dev);
        pl_plan_clear_schedule(p);
        if (L.cur->priority) {
            p->priority = pl_malloc((L.n + 1) * sizeof *p->priority);
            memcpy(p->priority, L.cur->priority, L.n * sizeof *p->priority);
        }
    }
    *st = (pl_ls_stats){moves, L.evals, L.best_ms, pl_now() - t0};
    ls_free(&L);
    return moves;
}

int pl_moirai_local_search(const pl_cost *k, pl_plan *p, double p_ms, double deadline,
                           double target, unsigned seed, const pl_sim_opts *judge, pl_ls_stats *st)
{
    return search(k, p, p_ms, deadline, target, seed, judge, false, st);
}

int pl_place_refine(const pl_cost *k, pl_plan *p, pl_refine_goal goal, pl_contention contention,
                    double seconds, unsigned seed, pl_refine_stats *st, pl_err *err)
{
    pl_sim_opts judge = {.contention = contention, .ignore_memory = true};
    pl_sim_result r;
    if (pl_simulate(k, p, &judge, &r, err) < 0) return -1;
    double start = goal == PL_REFINE_TOCT ? sim_toct(&r) : r.makespan_s;
    pl_sim_result_free(&r);
    pl_ls_stats ls_st;
    int moves =
        search(k, p, start, pl_now() + seconds, 0, seed, &judge, goal == PL_REFINE_TOCT, &ls_st);
    *st = (pl_refine_stats){moves, ls_st.evals, start, moves ? ls_st.best_ms : start, ls_st.secs};
    return moves;
}

/* ---- independent searches, spread over the pool (docs/dist.md, "moirai and drl") ----
 *
 * The search above restarts from its own best plan, so its rounds are a chain. What is
 * independent is a whole search: `count` of them from the same start, search i seeded from
 * the seed and i (never the rank), each on rank i % size, and the best kept, ties to the
 * lower i. The set of searches is then a function of the seed and the count alone; which
 * rank runs one changes only how much time it gets (a rank's searches share its time). */

/* A search's result, as the pool gathers it: this header, then prio[n] (doubles first, for
 * alignment), then dev[n]. */
typedef struct restart_head {
    double best_ms, secs;
    long evals;
    int moves, has_prio;
} restart_head;

size_t pl_moirai_restart_bytes(int n_ops)
{
    size_t b = sizeof(restart_head) + (size_t)n_ops * (sizeof(double) + sizeof(int));
    return (b + 7) / 8 * 8; /* every slot's doubles aligned */
}

unsigned pl_moirai_restart_seed(unsigned seed, int i)
{
    if (i == 0) return seed; /* one search is the search as it always was */
    uint64_t s = (uint64_t)seed << 32 ^ (uint64_t)i;
    return (unsigned)(pl_rng_next(&s) >> 32);
}

/* Search i's deadline: what is left of the rank's time, shared among the rank's searches
 * still to run (items i, i + size, ... run in turn on rank i % size). */
static double restart_deadline(const pl_ls_job *J, int i)
{
    int rank = i % J->size, left = (J->count - 1 - rank) / J->size + 1 - i / J->size;
    double now = pl_now();
    return J->deadline > now ? now + (J->deadline - now) / left : now;
}

void pl_moirai_restart_run(int i, void *slot, void *job)
{
    const pl_ls_job *J = job;
    int n = J->k->n_ops;
    pl_plan *p = pl_plan_copy(J->start);
    pl_ls_stats st;
    int moves = pl_moirai_local_search(J->k, p, J->start_ms, restart_deadline(J, i), J->target,
                                       pl_moirai_restart_seed(J->seed, i), J->judge, &st);
    restart_head h = {st.best_ms, st.secs, st.evals, moves, moves > 0 && p->priority};
    memcpy(slot, &h, sizeof h);
    double *prio = (double *)((char *)slot + sizeof h);
    memset(prio, 0, (size_t)n * sizeof *prio);
    if (h.has_prio) memcpy(prio, p->priority, (size_t)n * sizeof *prio);
    memcpy(prio + n, p->dev, (size_t)n * sizeof *p->dev);
    pl_plan_free(p);
}

int pl_moirai_restart_best(const void *slots, int count, int n_ops)
{
    size_t sz = pl_moirai_restart_bytes(n_ops);
    int best = 0;
    double best_ms = INFINITY;
    for (int i = 0; i < count; i++) {
        restart_head h;
        memcpy(&h, (const char *)slots + (size_t)i * sz, sizeof h);
        if (h.best_ms < best_ms) best = i, best_ms = h.best_ms; /* strict: ties keep lower i */
    }
    return best;
}

int pl_moirai_restart_take(const void *slots, int count, pl_plan *p, pl_ls_stats *st)
{
    int n = p->n_ops, w = pl_moirai_restart_best(slots, count, n);
    size_t sz = pl_moirai_restart_bytes(n);
    restart_head h;
    long evals = 0;
    for (int i = 0; i < count; i++) {
        memcpy(&h, (const char *)slots + (size_t)i * sz, sizeof h);
        evals += h.evals;
    }
    const char *s = (const char *)slots + (size_t)w * sz;
    memcpy(&h, s, sizeof h);
    const double *prio = (const double *)(s + sizeof h);
    if (h.moves > 0) {
        memcpy(p->dev, prio + n, (size_t)n * sizeof *p->dev);
        pl_plan_clear_schedule(p);
        if (h.has_prio) {
            p->priority = pl_malloc((size_t)(n + 1) * sizeof *p->priority);
            memcpy(p->priority, prio, (size_t)n * sizeof *p->priority);
        }
    }
    st->moves = h.moves, st->evals = evals, st->best_ms = h.best_ms;
    return h.moves;
}

int pl_moirai_restarts(const pl_cost *k, pl_plan *p, double p_ms, double deadline, double target,
                       unsigned seed, const pl_sim_opts *judge, const pl_place_opts *o,
                       pl_ls_stats *st, pl_err *err)
{
    double t0 = pl_now();
    pl_pool pool = pl_pool_of(o);
    int count = o && o->restarts > 0 ? o->restarts : pool.size;
    pl_ls_job J = {k, p, p_ms, deadline, target, seed, judge, count, pool.size};
    size_t sz = pl_moirai_restart_bytes(k->n_ops);
    void *slots = pl_malloc((size_t)count * sz);
    if (pl_pool_map(&pool, count, pl_moirai_restart_run, slots, sz, &J) < 0) {
        free(slots);
        return pl_err_set(err, "moirai: the MPI pool failed in the local search: %s",
                          pl_dist_error());
    }
    int moves = pl_moirai_restart_take(slots, count, p, st);
    st->secs = pl_now() - t0;
    free(slots);
    return moves;
}
