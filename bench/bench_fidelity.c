/* bench_fidelity.c: how far the cost model's predictions are from onnxruntime on this CPU, with
 * the settings a user gets by default, against issue 13's acceptance (docs/calibrate.md,
 * "Fidelity").
 *
 *   bench_fidelity [--one-core] [--runs N] [--cluster FILE] MODEL...
 *
 * Default settings: examples/clusters/local-cpu-percore.json (or --cluster's file: the one that
 * describes this CPU, docs/calibrate.md, "Another CPU") priced with this machine's calibration
 * (pl_machine_params: the cached entry, or measured now and cached, exactly what `placer place`
 * and `placer simulate` use when given no --cost-params), runtime fusion and stage costs on.
 *
 * One core, per model: the single-request latency (onnxruntime, graph optimisation on as placer
 * runs models, one intra-op thread, median of 5 after a warm-up) against the prediction of the
 * `single` plan with the default settings. For an out-of-sample figure, also the prediction
 * with efficiencies fitted on the OTHER models' profiles only (leave one out; profiled
 * in-process as `placer profile` does, on the optimisation-off worker, written into
 * build/bench/fidelity/): this machine's own calibration profiles some zoo models (marked *),
 * so the default column is partly in-sample. The latency with graph optimisation off is shown
 * too (the graph the profiles time, node for node; not used for any error).
 *
 * Two cores, per model: the default algorithm's plan, made as `placer place` makes it without
 * --algo (HEFT with pl_place_opts.single_if_faster), default settings. When it uses one device
 * it IS the single-device plan: the user runs the model whole, so its measured latency is the
 * one-core latency, its prediction the one-core prediction and its speed-up 1 both ways
 * (counted as agreeing). Otherwise it is split with the schedule cut (docs/split.md) and run on
 * two device threads (docs/runtime.md, "Running a split"). HEFT's own plan (without the
 * fallback) is measured too when it differs, for its speed-ups only.
 *
 * --runs N (default 1): every latency is measured N times (whole models and splits, run after
 * run); predictions are deterministic, and the profiles and the optimisation-off latencies are
 * taken once. The tables show each latency's median over the runs; each run's summary, the
 * spread over runs and the acceptance lines follow, a target PASSing when met in every run.
 * --one-core stops after the one-core part. */
#include "placer/calib.h"
#include "placer/place.h"
#include "placer/report.h"
#include "placer/runtime.h"
#include "placer/split.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the cluster file (--cluster); its first device is the one core */
static const char *CLUSTER = "examples/clusters/local-cpu-percore.json";
/* Timed requests after WARMUP untimed ones: a split of 150+ stages runs its first few requests
 * 20-40 % slower (rnnlm_unrolled's HEFT split, 2026-11-25: 250 ms for the first five, 180-190
 * after), so a median of five after one warm-up measured the warm-up, not the plan. */
enum { MAX_MODELS = 32, MAX_RUNS = 10, REPEAT = 15, WARMUP = 3 };

/* A two-core plan as it is run: split on two device threads, or whole when on one device. */
typedef struct plan_run {
    bool whole;    /* the plan uses one device: the single-device plan, not split */
    int stages;    /* 1 when whole */
    double pred_s; /* the simulator's makespan (the one-core prediction when whole) */
    pl_stages s;   /* the schedule cut, when split */
    pl_split_manifest m;
    double meas_s[MAX_RUNS], hand_s[MAX_RUNS]; /* measured latency, hand-off (-1: none) */
} plan_run;

typedef struct row {
    const char *path;
    pl_graph *g;
    pl_profile *prof;
    bool in_calib;            /* one of the models this machine's calibration profiles */
    double off_s;             /* measured with graph optimisation off, once */
    double pd_s, loo_s, nf_s; /* one core predicted: default, leave one out, default unfused */
    plan_run dflt, heft;      /* the default algorithm's plan; HEFT's (when it differs) */
    bool heft_is_dflt;        /* HEFT's plan is the default plan (no fallback happened) */
    double one_s[MAX_RUNS];   /* one core measured, per run */
} row;

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static bool in_calibration_set(const char *path)
{
    const char *b = base(path);
    size_t n = strcspn(b, ".");
    for (const char *const *m = pl_machine_model_names(); *m; m++)
        if (strlen(*m) == n && !strncmp(*m, b, n)) return true;
    return false;
}

static double measured(pl_ort *w, const char *model, pl_err *err)
{
    char path[1024];
    if (pl_inflate_model(model, "build/ort-cache", path, sizeof path, err) < 0) return -1;
    const char *p = path;
    pl_ort_result r = {0};
    if (pl_ort_load(w, &p, 1, err) < 0 || pl_ort_run(w, REPEAT, WARMUP, &r, err) < 0) return -1;
    double med = pl_median(r.latency_s, r.repeat);
    pl_ort_result_free(&r);
    return med;
}

/* What `placer profile MODEL -o build/bench/fidelity/MODEL.profile.json` does, on the worker
 * at hand (pl_ort_profile opens a session of its own, optimisation off): 10 timed requests
 * after a warm-up, the times mapped to g's ops and written. */
static pl_profile *profiled(pl_ort *w, const char *model, const pl_graph *g,
                            const char *device_model, pl_err *err)
{
    char path[1024], out[512];
    if (pl_inflate_model(model, "build/ort-cache", path, sizeof path, err) < 0) return NULL;
    pl_ort_node_time *t = NULL;
    int n = 0;
    if (pl_ort_profile(w, path, 10, &t, &n, err) < 0) return NULL;
    pl_profile *p = pl_profile_from_node_times(g, t, n, device_model, NULL, err);
    pl_ort_node_times_free(t, n);
    snprintf(out, sizeof out, "build/bench/fidelity/%s.profile.json", base(model));
    if (p && pl_profile_save(p, out,
                             "onnxruntime-node 1.22 on the CPU, graph optimisation disabled, 1 "
                             "intra-op thread; kernel time per request, mean of 10 requests "
                             "after 1 warm-up (bench_fidelity)",
                             err) < 0) {
        pl_profile_free(p);
        return NULL;
    }
    return p;
}

/* `algo`'s plan on table k as `placer place` makes it (`pays`: pl_place_opts.single_if_faster,
 * as without --algo), into *plan; its simulated makespan, -1 with err set on failure. */
static double placed(const pl_cost *k, const char *algo, bool pays, pl_plan **plan, pl_err *err)
{
    pl_plan *p = pl_plan_new(k->g->n_ops, k->c->n_devs);
    pl_place_opts po = {.single_if_faster = pays, .min_gain = pays ? PL_MIN_GAIN_DEFAULT : 0};
    pl_sim_opts so = {0};
    pl_sim_result r = {0};
    double ms = -1;
    if (pl_place_precheck(k, err) == 0 && pl_place(pl_algo_find(algo), k, &po, p, err) == 0 &&
        pl_simulate(k, p, &so, &r, err) == 0)
        ms = r.makespan_s;
    pl_sim_result_free(&r);
    if (plan && ms >= 0)
        *plan = p;
    else
        pl_plan_free(p);
    return ms;
}

static int devices_used(const pl_plan *p)
{
    int used = 0;
    for (int d = 0; d < p->n_devs && d < 64; d++)
        for (int i = 0; i < p->n_ops; i++)
            if (p->dev[i] == d) {
                used++;
                break;
            }
    return used;
}

/* HEFT's plan for row r on table k (`pays`: with the fallback to one core), made ready to run:
 * split with the schedule cut and written to build/bench/fidelity/split-TAG-MODEL, unless its
 * work is on one device (every op, or every stage of the cut: a Constant placed on the other
 * device is copied into its readers' stage, not run there). */
static int plan_prepare(const row *r, const pl_cost *k, bool pays, const char *tag, plan_run *out,
                        pl_err *err)
{
    pl_plan *p = NULL;
    double ms = placed(k, "heft", pays, &p, err);
    if (ms < 0) return pl_err_prefix(err, "%s: placing", r->path);
    int rc = 0;
    out->whole = devices_used(p) == 1;
    if (!out->whole) rc = pl_split_stages_by(r->g, p, PL_SPLIT_SCHEDULE, &out->s, err);
    if (rc == 0 && !out->whole && pl_stages_devices(&out->s) == 1)
        out->whole = true, pl_stages_free(&out->s);
    out->stages = out->whole ? 1 : out->s.n;
    out->pred_s = out->whole ? r->pd_s : ms;
    if (rc == 0 && !out->whole) {
        char dir[512];
        snprintf(dir, sizeof dir, "build/bench/fidelity/split-%s%s", tag, base(r->path));
        const char *names[] = {k->c->devs[0].name, k->c->devs[1].name};
        rc = pl_split_write(r->path, r->g, &out->s, names, dir, err) < 0 ||
                     pl_split_manifest_load(dir, &out->m, err) < 0
                 ? -1
                 : 0;
    }
    pl_plan_free(p);
    return rc;
}

/* Per request, every stage whose start waited on a tensor from the other core (its latest
 * input came from there, after the end of its device's previous stage): start - that end. */
static double handoff(const pl_stages *s, const pl_ort_result *r)
{
    double *gap = pl_calloc((size_t)r->repeat * s->n + 1, sizeof *gap);
    int n = 0;
    for (int q = 0; q < r->repeat; q++) {
        const double *st = r->start_s + (size_t)q * s->n, *en = r->end_s + (size_t)q * s->n;
        for (int j = 0; j < s->n; j++) {
            double cross = -1, local = 0;
            for (int i = 0; i < j; i++)
                if (s->st[i].dev == s->st[j].dev) local = fmax(local, en[i]);
            for (int k = 0; k < s->st[j].n_inputs; k++) {
                int from = s->maker[s->st[j].inputs[k]];
                if (from < 0) continue;
                if (s->st[from].dev == s->st[j].dev)
                    local = fmax(local, en[from]);
                else
                    cross = fmax(cross, en[from]);
            }
            if (cross >= local) gap[n++] = st[j] - cross;
        }
    }
    double med = n ? pl_median(gap, n) : -1;
    free(gap);
    return med;
}

/* Run `run` of plan p: the one-core latency when whole, else the split on two device threads. */
static int plan_measure(pl_ort *w, plan_run *p, double one_s, int run, pl_err *err)
{
    p->hand_s[run] = -1;
    if (p->whole) return p->meas_s[run] = one_s, 0;
    pl_ort_result r = {0};
    int rc = pl_ort_load_split(w, &p->m, "build/bench/fidelity/inflated", false, err) < 0 ||
                     pl_ort_run(w, REPEAT, WARMUP, &r, err) < 0
                 ? -1
                 : 0;
    if (rc == 0) {
        p->meas_s[run] = pl_median(r.latency_s, r.repeat);
        p->hand_s[run] = handoff(&p->s, &r);
    }
    pl_ort_result_free(&r);
    return rc;
}

static void plan_free(plan_run *p)
{
    pl_stages_free(&p->s);
    pl_split_manifest_free(&p->m);
}

/* ---- predictions (deterministic, made once) ---- */

/* The single-device prediction on table k; with `unfused`, of a table made like k's without
 * runtime fusion. */
static double one_core(const pl_cost *k, bool unfused, pl_err *err)
{
    if (!unfused) return placed(k, "single", false, NULL, err);
    pl_cost_params p = k->params;
    p.runtime_fusion = PL_FUSION_NONE;
    pl_cost *u = pl_cost_new(k->g, k->c, &p, NULL, 0, err);
    double s = u ? placed(u, "single", false, NULL, err) : -1;
    pl_cost_free(u);
    return s;
}

/* Row m's one-core prediction with efficiencies fitted on the other rows' profiles, as
 * pl_machine_calibrate fits them (the Conv ratio it measures besides the fit: `conv_ratio`). */
static double leave_one_out(row *rows, int n, int m, const pl_cluster *c, double conv_ratio,
                            pl_err *err)
{
    const pl_graph *gs[MAX_MODELS];
    const pl_profile *ps[MAX_MODELS];
    int k = 0;
    for (int j = 0; j < n; j++)
        if (j != m) gs[k] = rows[j].g, ps[k++] = rows[j].prof;
    pl_calib_result cr;
    if (pl_calib_fit(gs, ps, k, &c->devs[0], NULL, &cr, err) < 0) return -1;
    cr.params.runtime_conv_ratio = conv_ratio;
    pl_cost *kc = pl_cost_new(rows[m].g, c, &cr.params, NULL, 0, err);
    double s = kc ? one_core(kc, false, err) : -1;
    pl_cost_free(kc);
    return s;
}

/* Everything predicted for row r, and its plans made ready (two_cores: the plans too). */
static int predict(row *rows, int n, int m, const pl_cluster *c, const pl_cost_params *dflt,
                   bool two_cores, pl_err *err)
{
    row *r = &rows[m];
    pl_cost *k = pl_cost_new(r->g, c, dflt, NULL, 0, err);
    int rc = k ? 0 : -1;
    if (rc == 0 &&
        ((r->pd_s = one_core(k, false, err)) < 0 || (r->nf_s = one_core(k, true, err)) < 0 ||
         (r->loo_s = leave_one_out(rows, n, m, c, dflt->runtime_conv_ratio, err)) < 0))
        rc = -1;
    if (rc == 0 && two_cores) rc = plan_prepare(r, k, true, "", &r->dflt, err);
    r->heft_is_dflt = rc == 0 && two_cores && !r->dflt.whole;
    if (rc == 0 && two_cores && !r->heft_is_dflt)
        rc = plan_prepare(r, k, false, "heft-", &r->heft, err);
    pl_cost_free(k);
    return rc;
}

/* ---- the figures ---- */

/* v[run], or the median of v[0..runs) when run < 0. */
static double at(const double *v, int runs, int run)
{
    double t[MAX_RUNS];
    if (run >= 0) return v[run];
    memcpy(t, v, (size_t)runs * sizeof *t);
    return pl_median(t, runs);
}

static double rel(double pred, double meas)
{
    return (pred - meas) / meas;
}

/* One model's measured figures in run `run` (< 0: the medians over the runs). */
typedef struct meas {
    double one_s, two_s, heft_s;    /* one core; the default plan; HEFT's plan */
    double speedup, heft_speedup;   /* measured: one core / two cores */
    double pred_speedup, pred_heft; /* predicted: the same with the predictions */
} meas;

static meas measures(const row *r, int runs, int run)
{
    meas x = {.one_s = at(r->one_s, runs, run)};
    const plan_run *h = r->heft_is_dflt ? &r->dflt : &r->heft;
    if (!(r->dflt.pred_s > 0)) return x; /* --one-core: no plans */
    x.two_s = r->dflt.whole ? x.one_s : at(r->dflt.meas_s, runs, run);
    x.heft_s = h->whole ? x.one_s : at(h->meas_s, runs, run);
    x.speedup = x.one_s / x.two_s, x.heft_speedup = x.one_s / x.heft_s;
    x.pred_speedup = r->pd_s / r->dflt.pred_s, x.pred_heft = r->pd_s / h->pred_s;
    return x;
}

/* The summary of one run (< 0: of the medians over the runs). */
typedef struct figures {
    double one_med, one_worst, loo_med, loo_worst, two_med, two_worst;
    double nf_med, nf_worst, off_med, off_worst; /* unfused vs optimisation on; vs off */
    int one_ok, two_ok, side_ok, slow_ok;        /* models meeting the per-model targets */
    int one_at, two_at;                          /* the models with the worst errors */
} figures;

/* The index of v[0..n)'s largest value. */
static int largest(const double *v, int n)
{
    int k = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[k]) k = i;
    return k;
}

/* The median and worst of v[0..n) (sorting v). */
static void summary(double *v, int n, double *median, double *worst)
{
    *median = pl_median(v, n);
    *worst = n ? v[n - 1] : 0;
}

static figures figures_of(const row *rows, int n, int runs, int run, bool two_cores)
{
    figures f = {0};
    double e1[MAX_MODELS], el[MAX_MODELS], e2[MAX_MODELS], enf[MAX_MODELS], eoff[MAX_MODELS];
    for (int m = 0; m < n; m++) {
        const row *r = &rows[m];
        meas x = measures(r, runs, run);
        e1[m] = fabs(rel(r->pd_s, x.one_s)), el[m] = fabs(rel(r->loo_s, x.one_s));
        enf[m] = fabs(rel(r->nf_s, x.one_s)), eoff[m] = fabs(rel(r->nf_s, r->off_s));
        f.one_ok += e1[m] <= 0.25;
        if (!two_cores) continue;
        e2[m] = fabs(rel(r->dflt.pred_s, x.two_s));
        f.two_ok += e2[m] <= 0.25;
        f.side_ok += r->dflt.whole || (x.speedup > 1) == (x.pred_speedup > 1);
        f.slow_ok += x.two_s <= 1.05 * x.one_s;
    }
    f.one_at = largest(e1, n), f.two_at = two_cores ? largest(e2, n) : 0;
    summary(e1, n, &f.one_med, &f.one_worst), summary(el, n, &f.loo_med, &f.loo_worst);
    summary(enf, n, &f.nf_med, &f.nf_worst), summary(eoff, n, &f.off_med, &f.off_worst);
    if (two_cores) summary(e2, n, &f.two_med, &f.two_worst);
    return f;
}

/* ---- measuring ---- */

/* Run `run`: every model whole on one core, then its default plan and HEFT's on two. */
static int measure_run(pl_ort *w, row *rows, int n, int run, bool two_cores, pl_err *err)
{
    for (int m = 0; m < n; m++) {
        row *r = &rows[m];
        if ((r->one_s[run] = measured(w, r->path, err)) < 0 ||
            (two_cores && plan_measure(w, &r->dflt, r->one_s[run], run, err) < 0) ||
            (two_cores && !r->heft_is_dflt &&
             plan_measure(w, &r->heft, r->one_s[run], run, err) < 0))
            return pl_err_prefix(err, "%s", r->path);
        fprintf(stderr, "  run %d, %s: one core %.2f ms", run + 1, base(r->path),
                r->one_s[run] * 1e3);
        if (two_cores)
            fprintf(stderr, ", default plan %.2f ms (%d stages)", r->dflt.meas_s[run] * 1e3,
                    r->dflt.stages);
        fputc('\n', stderr);
    }
    return 0;
}

/* This machine's calibration as the verbs get it; the line that says which, into `what`. */
static void default_settings(const pl_cluster *c, pl_cost_params *p, char *what, size_t n)
{
    const pl_device *me = NULL;
    for (int d = 0; d < c->n_devs && !me; d++)
        if (c->devs[d].this_machine) me = &c->devs[d];
    if (!me) {
        pl_cost_params_default(p);
        snprintf(what, n, "uncalibrated: %s has no this_machine device", CLUSTER);
        return;
    }
    char path[4096];
    pl_err refused = {""}, err = {""};
    int rc = pl_machine_params(me, NULL, p, path, sizeof path, &refused, &err);
    if (refused.msg[0]) fprintf(stderr, "bench_fidelity: cache refused: %s\n", refused.msg);
    if (rc == 0)
        snprintf(what, n, "UNCALIBRATED (%s)", err.msg);
    else
        snprintf(what, n,
                 "this machine's calibration, %s %s (dense %.3f, half at %.3g FLOPs, memory "
                 "%.3f, Conv as run %.3f)",
                 rc == 1 ? "cached in" : "measured now into", path, p->eff_compute[PL_CLASS_DENSE],
                 p->dense_half_flops, p->eff_memory, p->runtime_conv_ratio);
}

/* ---- printing ---- */

static void print_one_core(const row *rows, int n, int runs)
{
    pl_table *t = pl_table_new("model|>measured ms|>opt. off ms|>default (this machine) "
                               "ms|>error|>leave-one-out ms|>error");
    for (int m = 0; m < n; m++) {
        const row *r = &rows[m];
        double one = at(r->one_s, runs, -1);
        pl_table_row(t, "%s%s|%.2f|%.2f|%.2f|%+.0f%%|%.2f|%+.0f%%", base(r->path),
                     r->in_calib ? " *" : "", one * 1e3, r->off_s * 1e3, r->pd_s * 1e3,
                     100 * rel(r->pd_s, one), r->loo_s * 1e3, 100 * rel(r->loo_s, one));
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static void print_two_cores(const row *rows, int n, int runs)
{
    pl_table *t = pl_table_new("model|default plan|>stages|>measured ms|>predicted ms|>error|>"
                               "speed-up measured|>predicted|>vs one core|HEFT's plan|>stages|>"
                               "speed-up measured|>predicted");
    for (int m = 0; m < n; m++) {
        const row *r = &rows[m];
        const plan_run *h = r->heft_is_dflt ? &r->dflt : &r->heft;
        meas x = measures(r, runs, -1);
        pl_table_row(t, "%s|%s|%d|%.2f|%.2f|%+.0f%%|%.2f|%.2f|%.2fx|%s|%d|%.2f|%.2f", base(r->path),
                     r->dflt.whole ? "one core" : "heft", r->dflt.stages, x.two_s * 1e3,
                     r->dflt.pred_s * 1e3, 100 * rel(r->dflt.pred_s, x.two_s), x.speedup,
                     x.pred_speedup, x.two_s / x.one_s,
                     r->heft_is_dflt ? "the same"
                     : h->whole      ? "one core"
                                     : "heft",
                     h->stages, x.heft_speedup, x.pred_heft);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static void print_run(const figures *f, const row *rows, int run, int n, bool two_cores)
{
    if (run < 0)
        printf("table (medians over the runs):");
    else
        printf("run %d:", run + 1);
    printf(" one core median %.0f%%, worst %.0f%% (%s; %d of %d within 25%%); leave-one-out "
           "median %.0f%%, worst %.0f%%",
           100 * f->one_med, 100 * f->one_worst, base(rows[f->one_at].path), f->one_ok, n,
           100 * f->loo_med, 100 * f->loo_worst);
    if (two_cores)
        printf("; two cores median %.0f%%, worst %.0f%% (%s; %d of %d within 25%%); speed-up on "
               "the same side of 1.0: %d of %d; default plan within 1.05x of one core: %d of %d",
               100 * f->two_med, 100 * f->two_worst, base(rows[f->two_at].path), f->two_ok, n,
               f->side_ok, n, f->slow_ok, n);
    printf("\n");
}

/* One acceptance line: the figure's spread over the runs and PASS when every run meets it. */
static void accept_rate(const char *what, const figures *f, int runs, size_t off, double target)
{
    double lo = INFINITY, hi = -INFINITY;
    int met = 0;
    for (int r = 0; r < runs; r++) {
        double v = *(const double *)((const char *)&f[r] + off);
        lo = fmin(lo, v), hi = fmax(hi, v), met += v <= target;
    }
    printf("  %-42s <= %2.0f%%: runs %5.1f%% .. %5.1f%%   %s (met in %d of %d runs)\n", what,
           100 * target, 100 * lo, 100 * hi, met == runs ? "PASS" : "FAIL", met, runs);
}

static void accept_count(const char *what, const figures *f, int runs, size_t off, int n)
{
    int lo = n, hi = 0, met = 0;
    for (int r = 0; r < runs; r++) {
        int v = *(const int *)((const char *)&f[r] + off);
        lo = v < lo ? v : lo, hi = v > hi ? v : hi, met += v == n;
    }
    printf("  %-50s runs %d .. %d of %d models   %s (met in %d of %d runs)\n", what, lo, hi, n,
           met == runs ? "PASS" : "FAIL", met, runs);
}

static void print_acceptance(const figures *f, int runs, int n, bool two_cores)
{
    printf("\nacceptance (issue 13: default settings, graph optimisation on; PASS = met in every "
           "one of the %d runs):\n",
           runs);
    accept_rate("one core, median error", f, runs, offsetof(figures, one_med), 0.10);
    accept_rate("one core, worst error", f, runs, offsetof(figures, one_worst), 0.25);
    if (!two_cores) return;
    accept_rate("two cores (default plan), median error", f, runs, offsetof(figures, two_med),
                0.15);
    accept_rate("two cores (default plan), worst error", f, runs, offsetof(figures, two_worst),
                0.25);
    accept_count("speed-up on the same side of 1.0, every model:", f, runs,
                 offsetof(figures, side_ok), n);
    accept_count("default plan <= 1.05x one core, every model:", f, runs,
                 offsetof(figures, slow_ok), n);
}

/* ---- main ---- */

typedef struct args {
    bool one_core;
    int runs;
    const char **models;
    int n;
} args;

static int parse(int argc, char **argv, args *a)
{
    *a = (args){.runs = 1, .models = (const char **)argv + 1};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--one-core"))
            a->one_core = true;
        else if (!strcmp(argv[i], "--runs")) {
            long long v;
            if (i + 1 == argc || pl_parse_int(argv[++i], 1, MAX_RUNS, &v) < 0) return -1;
            a->runs = (int)v;
        } else if (!strcmp(argv[i], "--cluster")) {
            if (i + 1 == argc) return -1;
            CLUSTER = argv[++i];
        } else if (argv[i][0] == '-')
            return -1;
        else
            a->models[a->n++] = argv[i];
    }
    return a->n >= 2 && a->n <= MAX_MODELS ? 0 : -1;
}

/* The graphs, the profiles for leave-one-out and the optimisation-off latencies, taken once. */
static int load_rows(row *rows, const args *a, const pl_cluster *c, pl_err *err)
{
    pl_ort *w = pl_ort_start(&(pl_ort_opts){.no_optimize = true, .timeout_s = 600}, err);
    if (!w) return -1;
    int rc = 0;
    for (int m = 0; rc == 0 && m < a->n; m++) {
        row *r = &rows[m];
        r->path = a->models[m], r->in_calib = in_calibration_set(r->path);
        if (!(r->g = pl_graph_load(r->path, NULL, err)) ||
            !(r->prof = profiled(w, r->path, r->g, c->devs[0].model, err)) ||
            (r->off_s = measured(w, r->path, err)) < 0)
            rc = pl_err_prefix(err, "%s", r->path);
    }
    pl_ort_stop(w);
    return rc;
}

int main(int argc, char **argv)
{
    args a;
    if (parse(argc, argv, &a) < 0)
        return fprintf(stderr,
                       "usage: bench_fidelity [--one-core] [--runs 1..%d] [--cluster FILE] "
                       "MODEL...\n",
                       MAX_RUNS),
               2;
    bool two = !a.one_core;
    pl_err err = {""};
    static row rows[MAX_MODELS];
    pl_cost_params dflt;
    char what[4096 + 256];
    pl_cluster *c = pl_cluster_load(CLUSTER, &err);
    if (!c || pl_mkdir_p("build/bench/fidelity", &err) < 0 || load_rows(rows, &a, c, &err) < 0)
        return fprintf(stderr, "%s\n", err.msg), 1;
    default_settings(c, &dflt, what, sizeof what);
    for (int m = 0; m < a.n; m++)
        if (predict(rows, a.n, m, c, &dflt, two, &err) < 0)
            return fprintf(stderr, "%s\n", err.msg), 1;
    pl_ort *w = pl_ort_start(&(pl_ort_opts){0}, &err);
    for (int run = 0; w && run < a.runs; run++)
        if (measure_run(w, rows, a.n, run, two, &err) < 0) {
            pl_ort_stop(w);
            w = NULL;
        }
    if (!w) return fprintf(stderr, "%s\n", err.msg), 1;
    pl_ort_stop(w);

    figures f[MAX_RUNS], med = figures_of(rows, a.n, a.runs, -1, two);
    for (int run = 0; run < a.runs; run++)
        f[run] = figures_of(rows, a.n, a.runs, run, two);
    printf("default settings: %s, %s\n", CLUSTER, what);
    printf("\none core: measured with onnxruntime (median of %d requests after %d, median over %d "
           "runs) vs "
           "the single plan predicted; * = in this machine's calibration set (so in sample); "
           "leave-one-out = efficiencies fitted on the other models' profiles (out of sample)\n",
           REPEAT, WARMUP, a.runs);
    print_one_core(rows, a.n, a.runs);
    printf("without runtime fusion (default settings otherwise): median %.0f%%, worst %.0f%% "
           "against the optimised latency; %.0f%%, %.0f%% against the optimisation-off one\n",
           100 * med.nf_med, 100 * med.nf_worst, 100 * med.off_med, 100 * med.off_worst);
    if (two) {
        double hand[MAX_MODELS * MAX_RUNS];
        int nh = 0;
        for (int m = 0; m < a.n; m++)
            for (int run = 0; run < a.runs; run++)
                if (rows[m].dflt.hand_s[run] >= 0) hand[nh++] = rows[m].dflt.hand_s[run];
        printf("\ntwo cores: the default algorithm's plan (placer place without --algo: HEFT, or "
               "one core when that is predicted faster), cut by the schedule, one onnxruntime "
               "thread per core; a one-core plan is the model run whole (speed-up 1 both ways, "
               "counted as agreeing); vs one core = measured latency over the one-core one; "
               "HEFT's plan = HEFT without the fallback\n");
        print_two_cores(rows, a.n, a.runs);
        printf("hand-off between the cores: median %.3f ms over the split default plans' "
               "requests' medians (%d)\n",
               nh ? 1e3 * pl_median(hand, nh) : -1.0, nh);
    }
    printf("\n");
    print_run(&med, rows, -1, a.n, two);
    for (int run = 0; run < a.runs; run++)
        print_run(&f[run], rows, run, a.n, two);
    print_acceptance(f, a.runs, a.n, two);
    for (int m = 0; m < a.n; m++) {
        pl_graph_free(rows[m].g), pl_profile_free(rows[m].prof);
        plan_free(&rows[m].dflt), plan_free(&rows[m].heft);
    }
    pl_cluster_free(c);
    return 0;
}
