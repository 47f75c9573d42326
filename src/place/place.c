/* place.c: the registry of placement algorithms, the timed entry point and the lower bound. */
#include "algos.h"
#include "cuts.h"
#include "sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The built-in algorithms, then those other modules register (pl_algo_register). */
static pl_algo algos[PL_MAX_ALGOS] = {
    {"single", pl_place_single, "the whole model on the fastest device that holds it", false},
    {"expert", pl_place_expert,
     "contiguous stages of equal cost on the fastest devices, the split judged by the simulator",
     false},
    {"expert-layers", pl_place_expert_layers,
     "AutoDeep's expert baseline: parts with the same number of layers, one per GPU, as a "
     "person writes it",
     false},
    {"m-topo", pl_place_m_topo,
     "Baechi m-TOPO: topological order, each device filled up to its memory share", false},
    {"m-etf", pl_place_m_etf,
     "Baechi m-ETF: list scheduling, earliest start first, within device memory", false},
    {"m-sct", pl_place_m_sct,
     "Baechi m-SCT: ETF with small-communication-time favourite children (LP), within memory",
     false},
    {"heft", pl_place_heft,
     "HEFT: upward rank, then insertion-based earliest finish time, within memory", false},
    {"getf", pl_place_getf,
     "generalised ETF: earliest finish with per-pair transfer times, within memory", false},
    {"metis", pl_place_metis, "METIS graph partition balancing compute, cutting few bytes", false},
    {"random", pl_place_random, "each op on a uniformly random device with room (seeded)", false},
    {"moirai", pl_place_moirai,
     "MOIRAI: GCOF coarsening, MILP (CBC) + local search, never worse than the heuristics; "
     "time-limited (60 s)",
     false},
};
static int n_listed = -1; /* counted on first use: the built-ins, then the registered */

static int listed(void)
{
    if (n_listed < 0)
        for (n_listed = 0; n_listed < PL_MAX_ALGOS && algos[n_listed].name;)
            n_listed++;
    return n_listed;
}

const pl_algo *pl_algo_list(int *n)
{
    if (n) *n = listed();
    return algos;
}

const pl_algo *pl_algo_find(const char *name)
{
    for (int i = 0; name && i < listed(); i++)
        if (strcmp(algos[i].name, name) == 0) return &algos[i];
    return NULL;
}

int pl_algo_register(const pl_algo *a, pl_err *err)
{
    if (!a || !a->name || !*a->name || !a->run)
        return pl_err_set(err, "place: an algorithm needs a name and an entry point");
    if (pl_algo_find(a->name))
        return pl_err_set(err, "place: an algorithm named '%s' is already registered", a->name);
    if (listed() == PL_MAX_ALGOS)
        return pl_err_set(err, "place: no room for algorithm '%s' (%d at most)", a->name,
                          PL_MAX_ALGOS);
    algos[n_listed++] = *a;
    return 0;
}

static int unknown_algo(const char *what, const char *name, size_t len, pl_err *err)
{
    char known[512] = "";
    for (int i = 0, at = 0; i < listed() && at < (int)sizeof known; i++)
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
        for (int i = 0; i < listed() && !a; i++)
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
    return pl_plan_check_coloc(k->g, k->c, p->dev, a->name, err);
}

/* ---- colocation classes (pl_op::coloc, docs/placement.md) ----
 * Every algorithm honours them through the same two steps, so that none has to know about
 * them: it first runs as if there were no classes; when its plan splits a class, every class
 * is pinned to the device that ran the largest share of its time in that plan, and the
 * algorithm runs again on a cost table in which a class's ops can run on that device only.
 * Every algorithm already keeps ops off devices where their time is infinite, so the second
 * plan keeps each class together, with the algorithm's own schedule and memory checks. */

/* Is d better than best for a class (best < 0: none yet)? */
static bool better(int d, int best, const double *share, const double *total)
{
    return best < 0 || share[d] > share[best] ||
           (share[d] == share[best] && total[d] < total[best]);
}

/* The device for class c (0-based): among those that can run all its ops and hold their
 * weights, the one that ran most of its time in `dev`, ties to the fastest for the whole
 * class; preferably one where it still fits beside the weights load[d] already there (the
 * first plan's, as the pins move them), which the choice updates. -1 when none can. */
static int pin_device(const pl_cost *k, int c, const int *dev, double *load)
{
    int D = k->n_devs, fit = -1, any = -1;
    double *share = pl_calloc((size_t)D * 3, sizeof *share), *total = share + D, *w_on = total + D;
    double w = 0;
    for (int i = 0; i < k->n_ops; i++) {
        if (k->g->ops[i].coloc != c + 1) continue;
        share[dev[i]] += pl_cost_op_s(k, i, dev[i]);
        w_on[dev[i]] += k->weight_bytes[i];
        w += k->weight_bytes[i];
        for (int d = 0; d < D; d++)
            total[d] += pl_cost_op_s(k, i, d);
    }
    for (int d = 0; d < D; d++) {
        if (!isfinite(total[d]) || w > pk_dev_cap(k, d)) continue;
        if (better(d, any, share, total)) any = d;
        if (load[d] - w_on[d] + w <= pk_dev_cap(k, d) && better(d, fit, share, total)) fit = d;
    }
    int best = fit >= 0 ? fit : any;
    for (int d = 0; best >= 0 && d < D; d++)
        load[d] -= w_on[d];
    if (best >= 0) load[best] += w;
    free(share);
    return best;
}

/* Op i can run on device d only (its time elsewhere becomes infinite). */
static void confine(pl_cost *pinned, int i, int d)
{
    for (int e = 0; e < pinned->n_devs; e++)
        if (e != d) pinned->op_s[(size_t)i * pinned->n_devs + e] = INFINITY;
}

/* The second run: k's table with every class confined to the device its pin gives. When the
 * algorithm's own placement does not fit around the pins (a greedy one may fill a pinned
 * device first), a third run keeps every other op on its device of the first plan as well,
 * so that only the classes move. */
/* The options of a later run: with a time limit, what is left of it by `end` (never 0, which
 * would mean the algorithm's own default). */
static pl_place_opts remaining(const pl_place_opts *o, double end)
{
    pl_place_opts r = *o;
    if (end > 0) r.time_limit_s = fmax(end - pl_now(), 1e-3);
    return r;
}

static int run_pinned(const pl_algo *a, const pl_cost *k, const pl_place_opts *o, double end,
                      pl_plan *out, pl_err *err)
{
    const pl_graph *g = k->g;
    int *pin = pl_malloc((size_t)g->n_coloc * sizeof *pin), *first = NULL;
    double *load = pl_calloc((size_t)k->n_devs, sizeof *load);
    for (int i = 0; i < k->n_ops; i++)
        load[out->dev[i]] += k->weight_bytes[i];
    for (int c = 0; c < g->n_coloc; c++)
        if ((pin[c] = pin_device(k, c, out->dev, load)) < 0) {
            free(pin), free(load);
            return pl_err_set(err,
                              "%s: no device can run every op of colocation class '%s' and hold "
                              "its weights",
                              a->name, g->coloc_names[c]);
        }
    pl_cost pinned = *k;
    size_t cells = (size_t)k->n_ops * k->n_devs;
    pinned.op_s = pl_malloc((cells ? cells : 1) * sizeof *pinned.op_s);
    memcpy(pinned.op_s, k->op_s, cells * sizeof *pinned.op_s);
    first = pl_malloc((size_t)(k->n_ops + 1) * sizeof *first);
    memcpy(first, out->dev, (size_t)k->n_ops * sizeof *first);
    for (int i = 0; i < k->n_ops; i++)
        if (g->ops[i].coloc) confine(&pinned, i, pin[g->ops[i].coloc - 1]);
    pl_plan_clear_schedule(out);
    pl_place_opts left = remaining(o, end);
    int rc = a->run(&pinned, &left, out, err);
    if (rc < 0) {
        pl_err why = *err;
        for (int i = 0; i < k->n_ops; i++)
            if (!g->ops[i].coloc) confine(&pinned, i, first[i]);
        pl_plan_clear_schedule(out);
        err->msg[0] = 0;
        left = remaining(o, end);
        if ((rc = a->run(&pinned, &left, out, err)) < 0)
            *err = why;
        else if (!err->msg[0])
            pl_err_set(err,
                       "%s: colocation classes moved to their pins, every other op kept its "
                       "device of the first plan (a free placement did not fit around the pins)",
                       a->name);
    }
    free(pinned.op_s), free(pin), free(load), free(first);
    return rc;
}

/* Runs a on k, honouring k's colocation classes. With a time limit, the free run gets half of
 * it and the runs after it share what is left, so that all of them together keep the limit;
 * without one, each run takes the algorithm's default. */
static int run_algo(const pl_algo *a, const pl_cost *k, const pl_place_opts *o, pl_plan *out,
                    pl_err *err)
{
    if (!k->g->n_coloc) return a->run(k, o, out, err);
    double end = o->time_limit_s > 0 ? pl_now() + o->time_limit_s : 0;
    pl_place_opts half = *o;
    half.time_limit_s = o->time_limit_s / 2;
    /* the same graph without its classes, read-only, so that the simulator inside an
     * algorithm judges its candidates as if there were none */
    pl_graph free_g = *k->g;
    free_g.n_coloc = 0;
    pl_cost free_k = *k;
    free_k.g = &free_g;
    if (a->run(&free_k, &half, out, err) < 0) return -1;
    pl_err quiet = {{0}};
    if (pl_plan_check_coloc(k->g, k->c, out->dev, a->name, &quiet) == 0) return 0;
    return run_pinned(a, k, o, end, out, err);
}

/* ---- plans that pay (pl_place_opts.single_if_faster, docs/placement.md) ---- */

/* The predicted makespan of p under contention c, or INFINITY when it cannot run or does not
 * fit in memory. */
static double predicted_s(const pl_cost *k, const pl_plan *p, pl_contention c)
{
    pl_sim_opts so = {.contention = c};
    pl_sim_result r = {0};
    pl_err e = {{0}};
    double ms = pl_simulate(k, p, &so, &r, &e) == 0 && !r.oom ? r.makespan_s : INFINITY;
    pl_sim_result_free(&r);
    return ms;
}

/* Appends `what` to the note in err (an algorithm's own note stays). */
static void add_note(pl_err *err, const char *what)
{
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, "%s%s", n ? "; " : "", what);
}

/* The fastest single-device plan by prediction, into one (with `wholes_only`, of the devices
 * that have core_devices alone): its device and predicted time, or -1 when none runs. */
static int fastest_single(const pl_cost *k, pl_contention c, bool wholes_only, pl_plan *one,
                          double *best)
{
    int best_d = -1;
    *best = INFINITY;
    for (int d = 0; d < k->n_devs; d++) {
        if (wholes_only && !k->c->devs[d].n_core_devs) continue;
        bool runs = true;
        for (int v = 0; v < k->n_ops; v++)
            one->dev[v] = d, runs &= isfinite(pl_cost_op_s(k, v, d));
        double t = runs ? predicted_s(k, one, c) : INFINITY;
        if (t < *best) *best = t, best_d = d;
    }
    for (int v = 0; best_d >= 0 && v < k->n_ops; v++)
        one->dev[v] = best_d;
    return best_d;
}

/* Replaces out by the fastest single-device plan unless out is at least o->min_gain faster
 * than it; with `wholes_only`, of the devices that have core_devices alone. Predicted times
 * decide, except for a plan that carries a measured latency (o->measure): the single-device
 * plan is then measured too and the measurements decide, so the plan returned is always one
 * that was run. -1 with err set when that measurement fails. */
static int keep_single_if_faster(const pl_algo *a, const pl_cost *k, const pl_place_opts *o,
                                 bool wholes_only, pl_plan *out, pl_err *err)
{
    double best, min_gain = o->min_gain;
    pl_plan *one = pl_plan_new(k->n_ops, k->n_devs);
    /* (inside another algorithm, a table of cores only has no candidate: nothing simulated) */
    int best_d = fastest_single(k, o->contention, wholes_only, one, &best);
    double mine = best_d >= 0 ? predicted_s(k, out, o->contention) : INFINITY;
    const char *basis = "predicted";
    if (best_d >= 0 && out->measured_s > 0 && o->measure) {
        pl_err e = {""};
        double t = o->measure(one, o->measure_user, &e);
        if (!(t > 0)) {
            pl_plan_free(one);
            return pl_err_set(err, "%s: measuring the whole model on '%s': %s", a->name,
                              k->c->devs[best_d].name, e.msg);
        }
        best = t, mine = out->measured_s, basis = "measured", one->measured_s = t;
    }
    if (best_d >= 0 && mine > best * (1 - min_gain)) {
        pl_plan_assign(out, one);
        out->measured_s = one->measured_s;
        /* the cut pass's figures were the discarded plan's; the note below says what ran */
        out->stages_before = out->stages_after = out->cut_simulations = 0, out->cut_s = 0;
        snprintf(out->algo, sizeof out->algo, "single");
        char note[sizeof err->msg], gain[64] = "", cores[96] = "";
        if (mine < best) snprintf(gain, sizeof gain, " by less than %.3g %%", 100 * min_gain);
        if (k->c->devs[best_d].cores > 1)
            snprintf(cores, sizeof cores, ", all its %d cores", k->c->devs[best_d].cores);
        snprintf(note, sizeof note,
                 "%s: its plan is %s at %.4g ms, %s the whole model on '%s'%s (%.4g ms)%s: "
                 "the single-device plan is returned instead",
                 a->name, basis, mine * 1e3,
                 mine < best   ? "faster than"
                 : mine > best ? "slower than"
                               : "no faster than",
                 k->c->devs[best_d].name, cores, best * 1e3, gain);
        add_note(err, note);
    }
    pl_plan_free(one);
    return 0;
}

/* ---- cores (docs/clusters.md, "Cores") ----
 * A cluster may list a CPU device and its cores as devices of their own (core_devices): the
 * same silicon seen two ways. The algorithm places on the cores (and every other device): it
 * runs on a table in which a device with core_devices can run nothing. The whole device then
 * competes as a single-device plan (keep_single_if_faster), so the plan is the better of the
 * two views and never uses both. */
static bool has_wholes(const pl_cluster *c)
{
    for (int d = 0; d < c->n_devs; d++)
        if (c->devs[d].n_core_devs) return true;
    return false;
}

/* k's table with the devices that have core_devices unable to run any op; the caller frees
 * its op_s. */
static pl_cost cores_only(const pl_cost *k)
{
    pl_cost m = *k;
    size_t cells = (size_t)k->n_ops * k->n_devs;
    m.op_s = pl_malloc((cells ? cells : 1) * sizeof *m.op_s);
    memcpy(m.op_s, k->op_s, cells * sizeof *m.op_s);
    for (int d = 0; d < k->n_devs; d++)
        for (int i = 0; k->c->devs[d].n_core_devs && i < k->n_ops; i++)
            m.op_s[(size_t)i * k->n_devs + d] = INFINITY;
    return m;
}

int pl_place_precheck(const pl_cost *k, pl_err *err)
{
    return pk_precheck(k, err);
}

int pl_place(const pl_algo *a, const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    return pk_place_until(a, k, o, 0, out, err);
}

int pk_place_until(const pl_algo *a, const pl_cost *k, const pl_place_opts *o, double deadline,
                   pl_plan *out, pl_err *err)
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
    out->measured_s = 0;
    pl_place_opts inner = *o;
    inner.single_if_faster = false; /* for the algorithm and any it runs inside */
    double t0 = pl_now();
    bool wholes = has_wholes(k->c);
    pl_cost split = wholes ? cores_only(k) : *k;
    int rc = run_algo(a, &split, &inner, out, err);
    snprintf(out->algo, sizeof out->algo, "%s", a->name);
    if (rc == 0) rc = check_complete(a, &split, out, err);
    out->stages_before = out->stages_after = out->cut_simulations = 0, out->cut_s = 0;
    /* a measured plan keeps its cuts: merging them by the simulator would change it (only the
     * plan that was measured: an algorithm that ignores o->measure is merged as always) */
    if (rc == 0 && !o->fine_cuts && !(out->measured_s > 0) && pk_cuts_apply(k))
        pk_coarsen_cuts(&split, o->contention, PK_CUT_EVALS, deadline, out);
    if (wholes) free(split.op_s);
    /* a device with core_devices competes whatever the algorithm (the cores, above) */
    if (rc == 0 && (o->single_if_faster || wholes))
        rc = keep_single_if_faster(a, k, o, !o->single_if_faster, out, err);
    out->search_s = pl_now() - t0;
    out->contention = o->contention;
    out->predicted_makespan_s = 0;
    return rc < 0 ? -1 : 0;
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
