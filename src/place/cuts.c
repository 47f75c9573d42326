/* cuts.c: coarser cuts, the post-pass pl_place runs on every algorithm's plan when the cluster
 * charges for stages (docs/placement.md, "Plans that pay").
 *
 * Why it exists: the list schedulers (HEFT, ETF, ...) see op times and transfers but not what a
 * stage costs (an onnxruntime session run and the copies in and out, docs/simulator.md
 * "Stages"), so on this machine's two cores HEFT cut the zoo's models into 75-208 stages that
 * cost 80-200 us each in reality, and the two-core plans ran slower than one core. Teaching
 * each algorithm the stage cost would be ten changes; judging the finished plan with the
 * simulator, which charges it, and merging stages while that helps is one, for all of them.
 *
 * A move takes one stage's ops to the device of a neighbouring stage (one it reads from or
 * feeds), so that they join it. When the plan has a per-device order, the moved ops go, as a
 * block in their own order, right after the last op they read from (to join a producer's
 * stage) or right before the first op that reads from them (to join a consumer's), in a
 * global sequence of the plan merged from its devices' orders by simulated start time;
 * without an order, only their device changes. With an order the neighbour may be on the
 * stage's own device: HEFT often runs, between an op and the op that reads its result, an op
 * that sends elsewhere, which cuts the two apart; moving the reader up joins them. */
#include "cuts.h"
#include "sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cut_state {
    const pl_cost *k;
    pl_sim_opts so;
    int budget, evals;
    double deadline;                /* pl_now()'s clock; 0: none */
    pl_plan *cur, *cand;            /* the best plan so far; the move being tried */
    double cur_s;                   /* cur's makespan */
    double *start, *try_s, *best_s; /* simulated start per op: cur's, a try's, the best try's */
    int *rank;                      /* op → its place in the graph's topological order */
    int *seq, *pos, *tseq;          /* cur's global sequence, each op's place in it; a try's */
    int *stage_of, *sdev, *first, ns, *tmp;
    int *block, nb; /* the ops being moved, in sequence order when there is one */
    bool *in_block, *prod, *cons;
    double *mem; /* static memory per device */
} cut_state;

bool pk_cuts_apply(const pl_cost *k)
{
    for (int d = 0; d < k->n_devs; d++)
        if (k->c->devs[d].stage_overhead_s > 0 || k->c->devs[d].stage_copy_Bps > 0) return true;
    return false;
}

/* The makespan of p, or INFINITY when it cannot run or does not fit; its start times go into
 * start. Every call counts against the budget. */
static double evaluate(cut_state *s, const pl_plan *p, double *start)
{
    pl_sim_result r = {0};
    pl_err e = {{0}};
    double ms = INFINITY;
    s->evals++;
    if (pl_simulate(s->k, p, &s->so, &r, &e) == 0 && !r.oom) {
        ms = r.makespan_s;
        memcpy(start, r.op_start_s, (size_t)s->k->n_ops * sizeof *start);
    }
    pl_sim_result_free(&r);
    return ms;
}

/* Whether the pass may simulate again: within its budget and, when it has one, before its
 * deadline (a time-limited caller's: moirai's heuristics and warm starts). */
static bool may_eval(const cut_state *s)
{
    return s->evals < s->budget && !(s->deadline > 0 && pl_now() >= s->deadline);
}

static bool preds_placed(const pl_graph *g, const int *pos, int v)
{
    for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
        if (pos[g->pred[e]] < 0) return false;
    return true;
}

/* Does v come before u: by simulated start, ties by topological rank? */
static bool earlier(const cut_state *s, int v, int u)
{
    return s->start[v] < s->start[u] || (s->start[v] == s->start[u] && s->rank[v] < s->rank[u]);
}

/* cur's global sequence: its devices' orders merged, taking each time the earliest of the
 * devices' next ops whose predecessors are all in already, so that it is a topological order
 * that gives back every device's order. -1 when no next op is ready (an order the plan
 * checker would refuse). */
static int build_seq(cut_state *s)
{
    const pl_plan *p = s->cur;
    const pl_graph *g = s->k->g;
    int *head = pl_malloc((size_t)(p->n_devs + 1) * sizeof *head);
    for (int d = 0; d < p->n_devs; d++)
        head[d] = p->order_off[d];
    for (int v = 0; v < g->n_ops; v++)
        s->pos[v] = -1;
    int n = 0;
    for (; n < g->n_ops; n++) {
        int pick = -1;
        for (int d = 0; d < p->n_devs; d++) {
            if (head[d] == p->order_off[d + 1]) continue;
            int v = p->order[head[d]];
            if (preds_placed(g, s->pos, v) && (pick < 0 || earlier(s, v, p->order[head[pick]])))
                pick = d;
        }
        if (pick < 0) break;
        int v = p->order[head[pick]++];
        s->seq[n] = v, s->pos[v] = n;
    }
    free(head);
    return n == g->n_ops ? 0 : -1;
}

static void find_stages(cut_state *s)
{
    s->ns = pl_plan_schedule_stages(s->k->g, s->cur, s->stage_of, s->sdev, s->first);
}

/* The ops of stage st and every op of their colocation classes (which must move with them),
 * in sequence order when the plan has one. */
static void gather_block(cut_state *s, int st)
{
    const pl_graph *g = s->k->g;
    bool *cls = pl_calloc((size_t)g->n_coloc + 1, sizeof *cls);
    for (int v = 0; v < g->n_ops; v++)
        if (s->stage_of[v] == st) cls[g->ops[v].coloc] = true;
    cls[0] = false;
    for (int v = 0; v < g->n_ops; v++)
        s->in_block[v] = s->stage_of[v] == st || cls[g->ops[v].coloc];
    free(cls);
    s->nb = 0;
    for (int i = 0; i < g->n_ops; i++) {
        int v = s->cur->order ? s->seq[i] : i;
        if (s->in_block[v]) s->block[s->nb++] = v;
    }
}

/* The devices of the stages the block reads from (prod) and feeds (cons). Its own device
 * counts when the stage is cut from one there (the op between them sends elsewhere): moving
 * the block in its device's order, next to that stage, can join them. */
static void neighbours(cut_state *s)
{
    const pl_graph *g = s->k->g;
    const int *dev = s->cur->dev;
    memset(s->prod, 0, (size_t)s->k->n_devs * sizeof *s->prod);
    memset(s->cons, 0, (size_t)s->k->n_devs * sizeof *s->cons);
    for (int i = 0; i < s->nb; i++) {
        int v = s->block[i];
        for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++) {
            int u = g->pred[e];
            if (!s->in_block[u] && s->stage_of[u] >= 0) s->prod[dev[u]] = true;
        }
        for (int e = g->succ_off[v]; e < g->succ_off[v + 1]; e++) {
            int w = g->succ[e];
            if (!s->in_block[w] && s->stage_of[w] >= 0) s->cons[dev[w]] = true;
        }
    }
}

/* Where the block goes in the sequence: after the op at place `at` (joining a producer: the
 * last op the block reads from, -1 for the front), or before it (joining a consumer: the first
 * op that reads from the block, n for the end). -1 when the other side's edges forbid it. */
static int anchor(const cut_state *s, bool after)
{
    const pl_graph *g = s->k->g;
    int at = after ? -1 : g->n_ops, other = after ? g->n_ops : -1;
    for (int i = 0; i < s->nb; i++) {
        int v = s->block[i];
        for (int e = g->pred_off[v]; e < g->pred_off[v + 1]; e++)
            if (!s->in_block[g->pred[e]]) {
                int q = s->pos[g->pred[e]];
                if (after)
                    at = q > at ? q : at;
                else
                    other = q > other ? q : other;
            }
        for (int e = g->succ_off[v]; e < g->succ_off[v + 1]; e++)
            if (!s->in_block[g->succ[e]]) {
                int q = s->pos[g->succ[e]];
                if (after)
                    other = q < other ? q : other;
                else
                    at = q < at ? q : at;
            }
    }
    /* after: every reader outside the block must still come after `at`; before: every op
     * the block reads from must still come before it */
    if (after ? other <= at : other >= at) return -2;
    return at;
}

/* The candidate's order: cur's sequence with the block taken out and put back at its anchor. */
static int reorder(cut_state *s, bool after)
{
    int at = anchor(s, after), n = 0, N = s->k->n_ops;
    if (at == -2) return -1;
    for (int i = 0; i <= N; i++) {
        if (i == at + after) /* before the op at place at+1 (after), or at place at (before) */
            for (int j = 0; j < s->nb; j++)
                s->tseq[n++] = s->block[j];
        if (i < N && !s->in_block[s->seq[i]]) s->tseq[n++] = s->seq[i];
    }
    PL_ASSERT(n == N);
    pl_plan_set_order(s->cand, s->tseq);
    return 0;
}

/* s->cand := cur with the block on device b (and, with an order, moved as `after` says);
 * -1 when b cannot run an op of it, its static memory would exceed b's, or the order cannot
 * be kept. */
static int make_candidate(cut_state *s, int b, bool after)
{
    const pl_cost *k = s->k;
    memcpy(s->cand->dev, s->cur->dev, (size_t)k->n_ops * sizeof *s->cand->dev);
    for (int i = 0; i < s->nb; i++) {
        if (!isfinite(pl_cost_op_s(k, s->block[i], b))) return -1;
        s->cand->dev[s->block[i]] = b;
    }
    pl_plan_static_memory(k, s->cand->dev, s->mem);
    if (s->mem[b] > pk_dev_cap(k, b)) return -1;
    pl_err quiet = {{0}};
    if (pl_plan_check_coloc(k->g, k->c, s->cand->dev, "cuts", &quiet) < 0) return -1;
    return s->cur->order ? reorder(s, after) : 0;
}

/* Makes cur the move (b, after) just simulated at makespan t, with start times s->best_s. */
static void accept(cut_state *s, int b, bool after, double t)
{
    make_candidate(s, b, after);
    pl_plan_assign(s->cur, s->cand);
    s->cur_s = t;
    double *swap = s->start;
    s->start = s->best_s, s->best_s = swap;
    find_stages(s);
    if (s->cur->order) build_seq(s); /* cannot fail: cur's order comes from a sequence */
}

/* Is a move to (t, n stages) better than (best, best_n), from cur's cur_n stages? Never more
 * stages than cur (the pass coarsens); then faster, or as fast with fewer stages: a tie goes to
 * the coarser plan because a stage costs more in reality than the simulator's share of it
 * (docs/placement.md), and the stage count falling is what ends the search on ties. */
static bool better(double t, int n, double best, int best_n, int cur_n)
{
    return n <= cur_n && (t < best || (t == best && n < best_n));
}

/* Tries every move of stage st (to each neighbouring device; with an order, joining a producer
 * and joining a consumer) and keeps the best when it beats cur. True when it did. */
static bool try_stage(cut_state *s, int st)
{
    gather_block(s, st);
    neighbours(s);
    double best = s->cur_s;
    int best_n = s->ns, best_b = -1;
    bool best_after = false;
    for (int b = 0; b < s->k->n_devs; b++)
        for (int m = 0; m < 2 && may_eval(s); m++) {
            bool after = m == 0;
            if (!(after ? s->prod[b] : s->cons[b])) continue;
            if (!s->cur->order && (b == s->sdev[st] || (!after && s->prod[b])))
                continue; /* no move, or the same move */
            if (make_candidate(s, b, after) < 0) continue;
            double t = evaluate(s, s->cand, s->try_s);
            int n = t <= best ? pl_plan_schedule_stages(s->k->g, s->cand, s->tmp, NULL, NULL) : 0;
            if (better(t, n, best, best_n, s->ns)) {
                best = t, best_n = n, best_b = b, best_after = after;
                double *swap = s->best_s;
                s->best_s = s->try_s, s->try_s = swap;
            }
        }
    if (best_b >= 0) accept(s, best_b, best_after, best);
    return best_b >= 0;
}

typedef struct stage_key {
    double busy;
    int rank, op;
} stage_key;

static int by_busy(const void *a, const void *b)
{
    const stage_key *x = a, *y = b;
    if (x->busy != y->busy) return x->busy < y->busy ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* One round over cur's stages, least busy first (op time on its device, fusion as placed),
 * each named by its first op: a stage that a move has merged since is skipped, and comes back
 * in the next round as part of the stage it joined. True when some move was kept. */
static bool one_round(cut_state *s)
{
    const pl_cost *k = s->k;
    int ns = s->ns;
    stage_key *key = pl_calloc((size_t)ns + 1, sizeof *key);
    for (int st = 0; st < ns; st++)
        key[st].op = s->first[st], key[st].rank = s->rank[s->first[st]];
    for (int v = 0; v < k->n_ops; v++)
        if (s->stage_of[v] >= 0) key[s->stage_of[v]].busy += pl_cost_op_placed_s(k, v, s->cur->dev);
    qsort(key, (size_t)ns, sizeof *key, by_busy);
    bool moved = false;
    for (int i = 0; i < ns && may_eval(s); i++) {
        int st = s->stage_of[key[i].op];
        if (st >= 0 && s->first[st] == key[i].op) moved |= try_stage(s, st);
    }
    free(key);
    return moved;
}

static void state_init(cut_state *s, const pl_cost *k, pl_contention c, int budget, double deadline,
                       pl_plan *p)
{
    size_t n = (size_t)k->n_ops + 1, d = (size_t)k->n_devs + 1;
    memset(s, 0, sizeof *s);
    s->k = k, s->budget = budget, s->deadline = deadline;
    s->so = (pl_sim_opts){.contention = c, .record = true};
    s->cur = pl_plan_copy(p), s->cand = pl_plan_copy(p);
    s->start = pl_calloc(n, sizeof(double)), s->try_s = pl_calloc(n, sizeof(double));
    s->best_s = pl_calloc(n, sizeof(double)), s->mem = pl_calloc(d, sizeof(double));
    s->rank = pl_malloc(n * sizeof(int)), s->seq = pl_malloc(n * sizeof(int));
    s->pos = pl_malloc(n * sizeof(int)), s->tseq = pl_malloc(n * sizeof(int));
    s->stage_of = pl_malloc(n * sizeof(int)), s->sdev = pl_malloc(n * sizeof(int));
    s->first = pl_malloc(n * sizeof(int)), s->block = pl_malloc(n * sizeof(int));
    s->tmp = pl_malloc(n * sizeof(int));
    s->in_block = pl_calloc(n, sizeof(bool));
    s->prod = pl_calloc(d, sizeof(bool)), s->cons = pl_calloc(d, sizeof(bool));
    for (int i = 0; i < k->n_ops; i++)
        s->rank[k->g->topo[i]] = i;
}

static void state_free(cut_state *s)
{
    pl_plan_free(s->cur), pl_plan_free(s->cand);
    free(s->start), free(s->try_s), free(s->best_s), free(s->mem), free(s->rank), free(s->seq);
    free(s->pos), free(s->tseq), free(s->stage_of), free(s->sdev), free(s->first);
    free(s->block), free(s->tmp), free(s->in_block), free(s->prod), free(s->cons);
}

void pk_coarsen_cuts(const pl_cost *k, pl_contention c, int budget, double deadline, pl_plan *p)
{
    double t0 = pl_now();
    cut_state s;
    state_init(&s, k, c, budget, deadline, p);
    s.cur_s = evaluate(&s, s.cur, s.start);
    find_stages(&s);
    p->stages_before = s.ns;
    if (isfinite(s.cur_s) && (!s.cur->order || build_seq(&s) == 0))
        while (may_eval(&s) && one_round(&s))
            ;
    pl_plan_assign(p, s.cur);
    p->stages_after = s.ns;
    p->cut_simulations = s.evals;
    p->cut_s = pl_now() - t0;
    state_free(&s);
}
