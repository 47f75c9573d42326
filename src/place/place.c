/* place.c: the registry of placement algorithms, the timed entry point and the lower bound. */
#include "algos.h"
#include "sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pl_algo algos[] = {
    {"single", pl_place_single, "the whole model on the fastest device that holds it"},
    {"expert", pl_place_expert,
     "contiguous stages of equal cost on the fastest devices, as a person would split it"},
    {"m-topo", pl_place_m_topo,
     "Baechi m-TOPO: topological order, each device filled up to its memory share"},
    {"m-etf", pl_place_m_etf,
     "Baechi m-ETF: list scheduling, earliest start first, within device memory"},
    {"m-sct", pl_place_m_sct,
     "Baechi m-SCT: ETF with small-communication-time favourite children (LP), within memory"},
    {"heft", pl_place_heft,
     "HEFT: upward rank, then insertion-based earliest finish time, within memory"},
    {"getf", pl_place_getf,
     "generalised ETF: earliest finish with per-pair transfer times, within memory"},
    {"metis", pl_place_metis, "METIS graph partition balancing compute, cutting few bytes"},
    {"random", pl_place_random, "each op on a uniformly random device with room (seeded)"},
    {"moirai", pl_place_moirai,
     "MOIRAI: GCOF coarsening, MILP (CBC) + local search, never worse than the heuristics; "
     "time-limited (60 s)"},
};
enum { N_LISTED = (int)(sizeof algos / sizeof *algos) };

const pl_algo *pl_algo_list(int *n)
{
    if (n) *n = N_LISTED;
    return algos;
}

const pl_algo *pl_algo_find(const char *name)
{
    for (int i = 0; name && i < N_LISTED; i++)
        if (strcmp(algos[i].name, name) == 0) return &algos[i];
    return NULL;
}

static int unknown_algo(const char *what, const char *name, size_t len, pl_err *err)
{
    char known[512] = "";
    for (int i = 0, at = 0; i < N_LISTED && at < (int)sizeof known; i++)
        at += snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "", algos[i].name);
    return pl_err_set(err, "%s: unknown placement algorithm '%.*s' (known: %s)", what, (int)len,
                      name, known);
}

int pl_algo_parse_list(const char *text, const char *what, const pl_algo **out, int max,
                       pl_err *err)
{
    if (!text || !*text) return pl_err_set(err, "%s: the list of algorithms is empty", what);
    int n = 0;
    for (const char *p = text;; p++) {
        size_t len = strcspn(p, ",");
        if (len == 0) return pl_err_set(err, "%s: '%s' has an empty item", what, text);
        const pl_algo *a = NULL;
        for (int i = 0; i < N_LISTED && !a; i++)
            if (strlen(algos[i].name) == len && !strncmp(algos[i].name, p, len)) a = &algos[i];
        if (!a) return unknown_algo(what, p, len, err);
        for (int k = 0; k < n; k++)
            if (out[k] == a) return pl_err_set(err, "%s: '%s' names %s twice", what, text, a->name);
        if (n == max) return pl_err_set(err, "%s: more than %d algorithms", what, max);
        out[n++] = a;
        p += len;
        if (!*p) return n;
    }
}

/* Every op on a device of the cluster that can run it: whatever an algorithm did, a plan
 * that leaves this is never handed on. */
static int check_complete(const pl_algo *a, const pl_cost *k, const pl_plan *p, pl_err *err)
{
    for (int v = 0; v < k->n_ops; v++) {
        int d = p->dev[v];
        if (d < 0 || d >= k->n_devs)
            return pl_err_set(err, "%s: op '%s' left on no device (%d)", a->name, k->g->ops[v].name,
                              d);
        if (!isfinite(pl_cost_op_s(k, v, d)))
            return pl_err_set(err, "%s: op '%s' placed on %s, which cannot run it", a->name,
                              k->g->ops[v].name, k->c->devs[d].name);
    }
    return 0;
}

int pl_place_precheck(const pl_cost *k, pl_err *err)
{
    return pk_precheck(k, err);
}

int pl_place(const pl_algo *a, const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    pl_place_opts def = {0};
    if (!o) o = &def;
    if (!a || !k || !out) return pl_err_set(err, "pl_place: missing algorithm, cost or plan");
    if (out->n_ops != k->n_ops || out->n_devs != k->n_devs)
        return pl_err_set(err,
                          "%s: the plan has %d ops and %d devices, the model %d and the "
                          "cluster %d",
                          a->name, out->n_ops, out->n_devs, k->n_ops, k->n_devs);
    /* a stale order, priority or transfer order would survive an algorithm that sets none */
    pl_plan_clear_schedule(out);
    double t0 = pl_now();
    int rc = a->run(k, o, out, err);
    out->search_s = pl_now() - t0;
    snprintf(out->algo, sizeof out->algo, "%s", a->name);
    out->contention = o->contention;
    out->predicted_makespan_s = 0;
    return rc < 0 ? -1 : check_complete(a, k, out, err);
}

/* Longest path with every op at its fastest and transfers free: an op waits for the ops whose
 * results it reads (not for Constant ops, whose values are weights, present from the start),
 * and runs on some device for at least its fastest time. */
static double critical_path(const pl_cost *k, const double *fastest)
{
    const pl_graph *g = k->g;
    double *end = pl_calloc(g->n_ops + 1, sizeof *end), cp = 0;
    for (int i = 0; i < g->n_ops; i++) {
        int v = g->topo[i];
        const pl_op *o = &g->ops[v];
        double s = 0;
        for (int j = 0; j < o->n_inputs; j++) {
            int t = o->inputs[j];
            if (t < 0 || (g->tensors[t].flags & PL_TENSOR_WEIGHT)) continue;
            if (g->tensors[t].producer >= 0) s = fmax(s, end[g->tensors[t].producer]);
        }
        end[v] = s + fastest[v];
        cp = fmax(cp, end[v]);
    }
    free(end);
    return cp;
}

double pl_lower_bound(const pl_cost *k)
{
    if (k->n_devs < 1) return INFINITY;
    double *fastest = pl_malloc((k->n_ops + 1) * sizeof *fastest), work = 0;
    for (int v = 0; v < k->n_ops; v++) {
        fastest[v] = INFINITY;
        for (int d = 0; d < k->n_devs; d++)
            fastest[v] = fmin(fastest[v], pl_cost_op_s(k, v, d));
        work += fastest[v];
    }
    double lb = fmax(critical_path(k, fastest), work / k->n_devs);
    free(fastest);
    return lb;
}
