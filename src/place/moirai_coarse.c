/* moirai_coarse.c: `moirai` on a model (docs/moirai.md, "On a model").
 *
 * MOIRAI solves the MILP on the coarsened graph (§III-B): fusing what the runtime fuses anyway
 * shrinks the model (by 22-66 % on the zoo, docs/coarsen.md: least on the recurrent models)
 * and loses nothing a placement could gain. So: coarsen (fuse + colocate), run the pipeline of
 * moirai.c on the coarse graph, map the plan back to every op. Coarsening can still hide a better
 * split, and a minute of search should never return less than a millisecond heuristic, so every
 * listed heuristic also runs on the original graph; the best of all these, simulated on the
 * original graph, seeds a last local search there, and the best plan seen is returned. */
#include "placer/dist.h"
#include "algos.h"
#include "lp_common.h"
#include "moirai_ls.h"
#include "placer/coarsen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct best {
    pl_plan *plan;
    double ms;
    char src[64];
} best;

/* The simulator, under the caller's contention, memory checked: the judge of every
 * candidate. INFINITY for a plan that cannot run or does not fit. */
static double judge(const pl_cost *k, const pl_plan *p, const pl_place_opts *o)
{
    pl_sim_opts so = {.contention = o->contention};
    pl_err e = {{0}};
    double ms = pk_sim_makespan(k, p, &so, true);
    if (isfinite(ms) && lp_check_memory(k, p->dev, "moirai", &e) < 0) ms = INFINITY;
    return ms;
}

/* Takes p when it is strictly better (ties keep the earlier, cheaper source). */
static void offer(best *b, pl_plan *p, double ms, const char *src)
{
    if (!(ms < b->ms)) {
        pl_plan_free(p);
        return;
    }
    if (b->plan) pl_plan_free(b->plan);
    b->plan = p, b->ms = ms;
    snprintf(b->src, sizeof b->src, "%s", src);
}

/* The heuristics' time (docs/moirai.md, "Time budget"): 60 % of the limit (up to the coarse
 * phase's end), and at least HEURISTICS_FLOOR_S whatever the limit. They are the floor moirai
 * promises never to fall below, so they come first and get a few seconds even under a short
 * limit: on the zoo they take milliseconds to 3.4 s (rnnlm_unrolled on local-cpu-percore.json:
 * nine coarser-cuts passes of up to 2,000 simulations), where a share of 0.3 s would drop the
 * best of them. On a model of thousands of ops one pass takes seconds (wide3000: 2.7 s, 21 s
 * for the nine), so past that time the rest wait. */
#define HEURISTICS_SHARE 0.6
#define HEURISTICS_FLOOR_S 5.0

double pk_moirai_heuristics_end(double t0, double limit)
{
    return t0 + fmax(HEURISTICS_SHARE * limit, HEURISTICS_FLOOR_S);
}

/* Every listed heuristic but random, on the original graph, until `deadline`: their coarser
 * cuts stop there, and once it has passed the rest are skipped, unless none has given a plan
 * that fits yet (each then costs its algorithm and one simulation). The first refusal is kept
 * for the message when nothing fits, preferring one from an algorithm that splits the model. */
static void heuristics(const pl_cost *k, const pl_place_opts *o, double deadline, best *b,
                       pl_err *why, pk_heur_stats *hs)
{
    int n;
    const pl_algo *a = pl_algo_list(&n);
    bool split_why = false;
    pl_place_opts h = *o;
    h.use_pool = false; /* every rank runs them alike (milliseconds): none waits for the pool */
    o = &h;
    memset(hs, 0, sizeof *hs);
    for (int i = 0; i < n; i++) {
        if (!strcmp(a[i].name, "random") || !strcmp(a[i].name, "moirai") || a[i].learned) continue;
        hs->listed++;
        hs->late |= pl_now() >= deadline;
        if (hs->late && b->plan) continue; /* a warm start that fits is kept: the rest wait */
        hs->run++;
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_err e = {{0}};
        char src[64];
        snprintf(src, sizeof src, "heuristic %s", a[i].name);
        if (pk_place_until(&a[i], k, o, deadline, p, &e) == 0) {
            offer(b, p, judge(k, p, o), src);
            continue;
        }
        /* a one-device refusal ("no single device fits") says less than a splitting one */
        bool one_dev = !strcmp(a[i].name, "single") || !strcmp(a[i].name, "expert");
        if (!why->msg[0] || (!one_dev && !split_why)) pl_err_set(why, "%s", e.msg);
        split_why |= !one_dev;
        pl_plan_free(p);
    }
    hs->late |= pl_now() >= deadline; /* the last one's coarser cuts may have stopped there */
}

pl_plan *pk_moirai_heuristics(const pl_cost *k, const pl_place_opts *o, double deadline,
                              pk_heur_stats *st, pl_err *why)
{
    best b = {.ms = INFINITY};
    heuristics(k, o, deadline, &b, why, st);
    return b.plan;
}

/* The coarse graph's table: a group takes the sum of its members' times on each device
 * (they run one after the other), not a roofline of the summed FLOPs. */
static pl_cost *coarse_cost(const pl_cost *k, const pl_coarsening *co, pl_err *err)
{
    /* the members' times below already price the runtime's fusions (k's table): the coarse
     * graph is not matched again */
    pl_cost_params p = k->params;
    p.runtime_fusion = PL_FUSION_NONE;
    pl_cost *kc = pl_cost_new(co->coarse, k->c, &p, NULL, 0, err);
    if (!kc) return NULL;
    int D = k->n_devs;
    for (int c = 0; c < kc->n_ops; c++)
        for (int d = 0; d < D; d++) {
            double s = 0;
            bool given = true;
            for (int m = co->member_off[c]; m < co->member_off[c + 1]; m++) {
                s += pl_cost_op_s(k, co->members[m], d);
                given &= k->given[(size_t)co->members[m] * D + d] != 0;
            }
            kc->op_s[(size_t)c * D + d] = s, kc->given[(size_t)c * D + d] = given;
        }
    return kc;
}

/* The coarse plan on every op: its devices, and either first-ready order or priorities from
 * the coarse schedule (a group's start), whichever simulates better. */
static void expand(const pl_cost *k, const pl_cost *kc, const pl_coarsening *co, const pl_plan *cp,
                   const pl_place_opts *o, best *b, const char *src)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_coarsen_expand_placement(co, cp->dev, p->dev);
    offer(b, p, judge(k, p, o), src);
    pl_sim_opts so = {.contention = o->contention, .record = true, .ignore_memory = true};
    pl_sim_result r = {0};
    pl_err e = {{0}};
    if (pl_simulate(kc, cp, &so, &r, &e) == 0) {
        p = pl_plan_new(k->n_ops, k->n_devs);
        pl_coarsen_expand_placement(co, cp->dev, p->dev);
        p->priority = pl_malloc((k->n_ops + 1) * sizeof *p->priority);
        for (int i = 0; i < k->n_ops; i++)
            p->priority[i] = r.op_start_s[co->coarse_of[i]];
        offer(b, p, judge(k, p, o), src);
    }
    pl_sim_result_free(&r);
}

/* The coarse phase: pl_moirai_solve on the coarse graph until `deadline`. Its note, prefixed
 * with the coarsening, goes to `note`. */
static void coarse_phase(const pl_cost *k, const pl_place_opts *o, double deadline, best *b,
                         char *note, size_t nn)
{
    pl_coarsening *co = NULL;
    pl_coarsen_opts copt = {0};
    pl_err e = {{0}};
    if (pl_coarsen(k->g, &copt, &co, &e) < 0) {
        snprintf(note, nn, "coarsening failed (%.*s)", (int)nn / 2, e.msg);
        return;
    }
    pl_cost *kc = coarse_cost(k, co, &e);
    pl_plan *cp = kc ? pl_plan_new(kc->n_ops, kc->n_devs) : NULL;
    e.msg[0] = 0;
    if (kc && pl_moirai_solve(kc, o, deadline, cp, &e) == 0) {
        const char *by = strstr(e.msg, "final plan: ");
        char src[64];
        snprintf(src, sizeof src, "coarse %.56s", by ? by + strlen("final plan: ") : "moirai");
        expand(k, kc, co, cp, o, b, src);
    }
    /* the inner note is long; what matters most (status, figures) comes first in it */
    snprintf(note, nn, "coarsened %d -> %d ops; on the coarse graph: %.*s", k->n_ops,
             co->coarse->n_ops, (int)nn / 2, e.msg[0] ? e.msg : "-");
    pl_plan_free(cp), pl_cost_free(kc), pl_coarsening_free(co);
}

/* Under the pool every rank polishes rank 0's best plan, and stops when rank 0's clock says
 * so: the heuristics and the coarse phase run on every rank and a time-limited one could
 * differ, and the ranks must all reach the searches' gather or none. -1 when MPI failed. */
static int share_best(const pl_pool *pool, const pl_cost *k, best *b, double deadline, bool *go)
{
    struct {
        int has, go;
        double ms;
        char src[64];
    } h = {b->plan != NULL, pl_now() < deadline, b->ms, ""};
    memcpy(h.src, b->src, sizeof h.src);
    if (pl_pool_bcast(pool, &h, sizeof h, 0) < 0) return -1;
    if (h.has && !b->plan) b->plan = pl_plan_new(k->n_ops, k->n_devs);
    if (!h.has && b->plan) pl_plan_free(b->plan), b->plan = NULL;
    b->ms = h.ms, *go = h.go;
    memcpy(b->src, h.src, sizeof b->src);
    return b->plan ? pl_pool_share_plan(pool, b->plan, 0) : 0;
}

/* The last phase: local search on the original graph from the best plan so far (its
 * independent searches over the pool). -1 (err set) when MPI failed. */
static int polish(const pl_cost *k, const pl_place_opts *o, double deadline, best *b,
                  pl_ls_stats *st, pl_err *err)
{
    memset(st, 0, sizeof *st);
    pl_pool pool = pl_pool_of(o);
    bool go = pl_now() < deadline;
    if (pool.on && share_best(&pool, k, b, deadline, &go) < 0)
        return pl_err_set(err, "moirai: the MPI pool failed sharing rank 0's best plan: %s",
                          pl_dist_error());
    if (!b->plan || !go) return 0;
    pl_plan *p = pl_plan_copy(b->plan);
    /* b->ms is already the judge's figure for this plan: no need to simulate it again */
    double lb = pl_lower_bound(k);
    pl_sim_opts so = {.contention = o->contention};
    int moves =
        pl_moirai_restarts(k, p, b->ms, deadline, lb, o->seed ? o->seed : 1, &so, o, st, err);
    if (moves > 0) {
        char src[64];
        snprintf(src, sizeof src, "local search on the model (+%d moves)", st->moves);
        offer(b, p, judge(k, p, o), src);
    } else {
        pl_plan_free(p);
    }
    return moves < 0 ? -1 : 0;
}

/* What the note says of the heuristics when their time ran out (nothing otherwise, as
 * before: they all ran whole). */
static void heuristics_note(const pk_heur_stats *hs, double secs, char *b, size_t n)
{
    b[0] = 0;
    if (hs->run < hs->listed)
        snprintf(b, n,
                 "heuristics: %d of %d run, the rest skipped after their %.3g s (a "
                 "coarser-cuts pass running then stopped there); ",
                 hs->run, hs->listed, secs);
    else if (hs->late)
        snprintf(b, n, "heuristics: a coarser-cuts pass stopped after their %.3g s; ", secs);
}

int pl_place_moirai(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    pl_place_opts def = {0};
    if (!o) o = &def;
    double t0 = pl_now(), limit = o->time_limit_s > 0 ? o->time_limit_s : 60;
    /* Task-graph instances with given per-pair transfer times are MOIRAI's own, already
     * coarse graphs; their transfer table is per tensor and would not survive regrouping. */
    if (o->no_coarsen || k->pair_xfer_s) return pl_moirai_solve(k, o, t0 + limit, out, err);
    best b = {.ms = INFINITY};
    char cnote[PL_ERR_MAX], hnote[192];
    pl_err why = {{0}};
    pk_heur_stats hs;
    double h_end = pk_moirai_heuristics_end(t0, limit);
    heuristics(k, o, h_end, &b, &why, &hs);
    heuristics_note(&hs, h_end - t0, hnote, sizeof hnote);
    /* the coarse phase ends at 60 % of the limit: when the heuristics took that, it is
     * skipped, unless none of them fits (it may still find a plan that does) */
    if (pl_now() < t0 + 0.6 * limit || !b.plan)
        coarse_phase(k, o, t0 + 0.6 * limit, &b, cnote, sizeof cnote);
    else
        snprintf(cnote, sizeof cnote, "no time left for the coarse graph");
    pl_ls_stats st;
    if (polish(k, o, t0 + limit, &b, &st, err) < 0) {
        if (b.plan) pl_plan_free(b.plan);
        return -1;
    }
    if (!b.plan)
        return pl_err_set(err, "moirai: no plan fits the devices: %s",
                          why.msg[0] ? why.msg : cnote);
    pl_plan_assign(out, b.plan);
    pl_plan_free(b.plan);
    pl_err_set(err,
               "moirai: %s%s; local search on the model %ld simulations %.2f s; final plan: %s",
               hnote, cnote, st.evals, st.secs, b.src);
    return 0;
}
