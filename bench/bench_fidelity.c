/* bench_fidelity.c: how far the cost model's predictions are from onnxruntime on this CPU.
 *
 *   bench_fidelity [--one-core] MODEL...
 *
 * For each model: the measured single-request latency (onnxruntime, one intra-op thread,
 * median of 5 after a warm-up, graph optimisation on as placer runs models), the cost model's
 * prediction with its default efficiencies, and the prediction with efficiencies calibrated on
 * the OTHER models' profiles (leave one out; profiled in-process as `placer profile` does, on
 * the optimisation-off worker, and written into build/bench/fidelity/). The plan is `single` on
 * examples/clusters/local-cpu.json (one core). The latency with graph optimisation off is shown too
 * (not used for the errors): it is the graph the cost model prices and the profiles time, node for
 * node, so the gap between the two measurements is what onnxruntime's fusions and layout changes
 * gain (docs/calibrate.md, "Fidelity"). Each prediction is made twice, with the cost model's
 * runtime fusion (the default, docs/cost.md "Runtime fusion") and without it (the graph as
 * written, op by op), on the same measurements.
 *
 * Then the same for a two-core plan: HEFT on local-cpu.json with the leave-one-out efficiencies,
 * split with the schedule cut (docs/split.md) and run on two device threads (docs/runtime.md,
 * "Running a split"), against the simulator's makespan of that plan, with the stage costs of
 * local-cpu.json (docs/simulator.md, "Stages") and without them (as before they existed); plus
 * the measured hand-off between the cores (a stage's start minus the end of the stage on the
 * other core it waited for, when nothing else held it back). Last, the default algorithm's
 * plan (`placer place` without --algo: HEFT, or the single-device plan when that is predicted
 * faster, docs/placement.md "Plans that pay"): its measured speed-up is HEFT's, or 1 when it is
 * the single-device plan (the one-core latency). --one-core stops after the one-core table. */
#include "placer/calib.h"
#include "placer/place.h"
#include "placer/report.h"
#include "placer/runtime.h"
#include "placer/split.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLUSTER "examples/clusters/local-cpu.json"
enum { MAX_MODELS = 32 };

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static double measured(pl_ort *w, const char *model, pl_err *err)
{
    char path[1024];
    if (pl_inflate_model(model, "build/ort-cache", path, sizeof path, err) < 0) return -1;
    const char *p = path;
    pl_ort_result r = {0};
    if (pl_ort_load(w, &p, 1, err) < 0 || pl_ort_run(w, 5, 1, &r, err) < 0) return -1;
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

/* The makespan of `algo`'s plan on table k (`pays`: pl_place_opts.single_if_faster, as
 * `placer place` without --algo); the plan itself in *plan_out when asked for. */
static double predicted_by(const pl_cost *k, const char *algo, bool pays, pl_plan **plan_out)
{
    pl_err err = {""};
    pl_plan *p = pl_plan_new(k->g->n_ops, k->c->n_devs);
    pl_place_opts po = {.single_if_faster = pays};
    pl_sim_opts so = {0};
    pl_sim_result r = {0};
    double ms = -1;
    if (pl_place(pl_algo_find(algo), k, &po, p, &err) == 0 && pl_simulate(k, p, &so, &r, &err) == 0)
        ms = r.makespan_s;
    else
        fprintf(stderr, "%s\n", err.msg);
    pl_sim_result_free(&r);
    if (plan_out && ms >= 0)
        *plan_out = p;
    else
        pl_plan_free(p);
    return ms;
}

/* ---- two cores ---- */

typedef struct two_core {
    int stages, devices;
    double measured_s, predicted_s, overlap; /* overlap: stages' own times / latency */
    double before_s;                         /* the prediction without stage costs */
    bool default_one; /* the default algorithm's plan is the single-device plan */
    double handoff_s; /* median hand-off between the cores, -1 when no stage waited for one */
} two_core;

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

/* p's makespan on table k with the cluster's stage costs taken out. */
static double without_stage_costs(const pl_cost *k, const pl_plan *p)
{
    pl_cluster c = *k->c;
    pl_device devs[8];
    pl_cost kb = *k;
    if (c.n_devs > 8) return -1;
    for (int d = 0; d < c.n_devs; d++)
        devs[d] = c.devs[d], devs[d].stage_overhead_s = 0, devs[d].stage_copy_Bps = 0,
        devs[d].stage_tensor_s = 0;
    c.devs = devs, kb.c = &c;
    pl_sim_opts so = {0};
    pl_sim_result r = {0};
    pl_err err = {""};
    double ms = pl_simulate(&kb, p, &so, &r, &err) == 0 ? r.makespan_s : -1;
    pl_sim_result_free(&r);
    return ms;
}

/* HEFT's plan on table k, cut by the schedule, written and run on two device threads. */
static int two_cores(pl_ort *w, const char *model, const pl_cost *k, two_core *out, pl_err *err)
{
    const pl_graph *g = k->g;
    const pl_cluster *c = k->c;
    pl_plan *p = NULL, *dflt = NULL;
    out->predicted_s = predicted_by(k, "heft", false, &p);
    if (!p) return pl_err_set(err, "%s: no HEFT plan", model);
    out->before_s = without_stage_costs(k, p);
    if (predicted_by(k, "heft", true, &dflt) >= 0) out->default_one = !strcmp(dflt->algo, "single");
    pl_plan_free(dflt);
    char dir[512];
    snprintf(dir, sizeof dir, "build/bench/fidelity/split-%s", base(model));
    const char *names[] = {c->devs[0].name, c->devs[1].name};
    pl_stages s = {0};
    pl_split_manifest m = {0};
    pl_ort_result r = {0};
    int rc = pl_split_stages_by(g, p, PL_SPLIT_SCHEDULE, &s, err) < 0 ||
                     pl_split_write(model, g, &s, names, dir, err) < 0 ||
                     pl_split_manifest_load(dir, &m, err) < 0 ||
                     pl_ort_load_split(w, &m, "build/bench/fidelity/inflated", false, err) < 0 ||
                     pl_ort_run(w, 5, 1, &r, err) < 0
                 ? -1
                 : 0;
    if (rc == 0) {
        double own = 0;
        for (int i = 0; i < r.repeat * r.n_stages; i++)
            own += r.stage_s[i];
        out->measured_s = pl_median(r.latency_s, r.repeat);
        out->overlap = own / r.repeat / out->measured_s;
        out->handoff_s = handoff(&s, &r);
        out->stages = s.n, out->devices = pl_stages_devices(&s);
    }
    pl_ort_result_free(&r);
    pl_split_manifest_free(&m);
    pl_stages_free(&s);
    pl_plan_free(p);
    return rc;
}

/* The relative errors' median (sorting v) and worst. */
static void summary(double *v, int n, double *median, double *worst)
{
    *median = pl_median(v, n);
    *worst = n ? v[n - 1] : 0;
}

/* The single-device prediction of a table made like k's without runtime fusion. */
static double unfused(const pl_cost *k, pl_err *err)
{
    pl_cost_params p = k->params;
    p.runtime_fusion = PL_FUSION_NONE;
    pl_cost *u = pl_cost_new(k->g, k->c, &p, NULL, 0, err);
    double s = u ? predicted_by(u, "single", false, NULL) : -1;
    pl_cost_free(u);
    return s;
}

int main(int argc, char **argv)
{
    bool one_core = argc > 1 && !strcmp(argv[1], "--one-core");
    if (one_core) argv++, argc--;
    int n = argc - 1;
    if (n < 2 || n > MAX_MODELS)
        return fprintf(stderr, "usage: bench_fidelity [--one-core] MODEL...\n"), 2;
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(CLUSTER, &err);
    /* w_off also profiles, as `placer profile` does (its timeout) */
    pl_ort_opts oo = {0}, off = {.no_optimize = true, .timeout_s = 600};
    pl_ort *w = c ? pl_ort_start(&oo, &err) : NULL;
    pl_ort *w_off = w ? pl_ort_start(&off, &err) : NULL;
    if (!w_off || pl_mkdir_p("build/bench/fidelity", &err) < 0)
        return fprintf(stderr, "%s\n", err.msg), 1;
    int cpu0 = pl_cluster_find(c, "cpu0");
    const char *device_model = c->devs[cpu0 < 0 ? 0 : cpu0].model;
    pl_graph *g[MAX_MODELS];
    pl_profile *prof[MAX_MODELS];
    double meas[MAX_MODELS], meas_off[MAX_MODELS];
    for (int m = 0; m < n; m++) {
        g[m] = pl_graph_load(argv[m + 1], NULL, &err);
        if (!g[m] || !(prof[m] = profiled(w_off, argv[m + 1], g[m], device_model, &err)) ||
            (meas[m] = measured(w, argv[m + 1], &err)) < 0 ||
            (meas_off[m] = measured(w_off, argv[m + 1], &err)) < 0)
            return fprintf(stderr, "%s: %s\n", argv[m + 1], err.msg), 1;
        fprintf(stderr, "  %s: measured %.2f ms (optimisation off: %.2f ms)\n", base(argv[m + 1]),
                meas[m] * 1e3, meas_off[m] * 1e3);
    }
    pl_ort_stop(w_off);
    pl_table *t =
        pl_table_new("model|>measured ms|>opt. off ms|>default ms|>error|>calibrated (others) "
                     "ms|>error|>no fusion: default ms|>error|>calibrated ms|>error|>fitted "
                     "dense|>fitted memory");
    double e_def[MAX_MODELS], e_cal[MAX_MODELS], e_off[MAX_MODELS], e_two[MAX_MODELS];
    double e_def_nf[MAX_MODELS], e_cal_nf[MAX_MODELS];
    double hand[MAX_MODELS];
    int n_hand = 0;
    pl_table *t2 = pl_table_new(
        "model|>stages|>measured ms|>predicted ms|>error|>without stage costs ms|>error|>stages "
        "at once|>speed-up measured|>predicted|>without stage costs|default plan|>speed-up "
        "measured|>predicted");
    int same_side = 0, same_side_before = 0, default_side = 0, default_ok = 0;
    for (int m = 0; m < n; m++) {
        const pl_graph *gs[MAX_MODELS];
        const pl_profile *ps[MAX_MODELS];
        int k = 0;
        for (int j = 0; j < n; j++)
            if (j != m) gs[k] = g[j], ps[k++] = prof[j];
        pl_calib_result cr;
        if (pl_calib_fit(gs, ps, k, &c->devs[0], NULL, &cr, &err) < 0)
            return fprintf(stderr, "%s\n", err.msg), 1;
        /* one table per parameter set: the calibrated one serves both plans */
        pl_cost *kd = pl_cost_new(g[m], c, NULL, NULL, 0, &err);
        pl_cost *kc = kd ? pl_cost_new(g[m], c, &cr.params, NULL, 0, &err) : NULL;
        if (!kc) return fprintf(stderr, "%s\n", err.msg), 1;
        pl_plan *one = NULL;
        double pd = predicted_by(kd, "single", false, NULL);
        double pc = predicted_by(kc, "single", false, &one);
        double pc0 = one ? without_stage_costs(kc, one) : -1; /* as before stage costs */
        pl_plan_free(one);
        double pd_nf = unfused(kd, &err), pc_nf = unfused(kc, &err);
        if (pd_nf < 0 || pc_nf < 0) return fprintf(stderr, "%s\n", err.msg), 1;
        e_def[m] = fabs(pd - meas[m]) / meas[m], e_cal[m] = fabs(pc - meas[m]) / meas[m];
        e_def_nf[m] = fabs(pd_nf - meas[m]) / meas[m];
        e_cal_nf[m] = fabs(pc_nf - meas[m]) / meas[m];
        e_off[m] = fabs(pc_nf - meas_off[m]) / meas_off[m];
        pl_table_row(
            t, "%s|%.2f|%.2f|%.2f|%+.0f%%|%.2f|%+.0f%%|%.2f|%+.0f%%|%.2f|%+.0f%%|%.3f|%.3f",
            base(argv[m + 1]), meas[m] * 1e3, meas_off[m] * 1e3, pd * 1e3,
            100 * (pd - meas[m]) / meas[m], pc * 1e3, 100 * (pc - meas[m]) / meas[m], pd_nf * 1e3,
            100 * (pd_nf - meas[m]) / meas[m], pc_nf * 1e3, 100 * (pc_nf - meas[m]) / meas[m],
            cr.params.eff_compute[PL_CLASS_DENSE], cr.params.eff_memory);
        if (one_core) {
            pl_cost_free(kd), pl_cost_free(kc);
            continue;
        }
        two_core tc = {0};
        int rc = two_cores(w, argv[m + 1], kc, &tc, &err);
        pl_cost_free(kd), pl_cost_free(kc);
        if (rc < 0) return fprintf(stderr, "%s\n", err.msg), 1;
        fprintf(stderr, "  %s: two cores %.2f ms measured, %.2f ms predicted\n", base(argv[m + 1]),
                tc.measured_s * 1e3, tc.predicted_s * 1e3);
        e_two[m] = fabs(tc.predicted_s - tc.measured_s) / tc.measured_s;
        if (tc.handoff_s >= 0) hand[n_hand++] = tc.handoff_s;
        double sm = meas[m] / tc.measured_s, sp = pc / tc.predicted_s, sb = pc0 / tc.before_s;
        double dm = tc.default_one ? 1 : sm, dp = tc.default_one ? 1 : sp;
        same_side += (sm > 1) == (sp > 1), same_side_before += (sm > 1) == (sb > 1);
        default_side += (dm > 1) == (dp > 1), default_ok += dm >= 1 / 1.05;
        pl_table_row(t2, "%s|%d|%.2f|%.2f|%+.0f%%|%.2f|%+.0f%%|%.2f|%.2f|%.2f|%.2f|%s|%.2f|%.2f",
                     base(argv[m + 1]), tc.stages, tc.measured_s * 1e3, tc.predicted_s * 1e3,
                     100 * (tc.predicted_s - tc.measured_s) / tc.measured_s, tc.before_s * 1e3,
                     100 * (tc.before_s - tc.measured_s) / tc.measured_s, tc.overlap, sm, sp, sb,
                     tc.default_one ? "single" : "heft", dm, dp);
    }
    if (!one_core) pl_ort_stop(w);
    double med_def, worst_def, med_cal, worst_cal, med_off, worst_off, med_two, worst_two;
    summary(e_def, n, &med_def, &worst_def), summary(e_cal, n, &med_cal, &worst_cal);
    summary(e_off, n, &med_off, &worst_off);
    double med_dnf, worst_dnf, med_cnf, worst_cnf;
    summary(e_def_nf, n, &med_dnf, &worst_dnf), summary(e_cal_nf, n, &med_cnf, &worst_cnf);
    printf("single-device latency on this CPU (one core): measured with onnxruntime vs predicted; "
           "calibrated = efficiencies fitted on the other models' profiles\n");
    pl_table_print(t, stdout);
    printf("relative error: default median %.0f%%, worst %.0f%%; calibrated median %.0f%%, worst "
           "%.0f%% (targets: median under 15%%, worst under 30%%)\n",
           100 * med_def, 100 * worst_def, 100 * med_cal, 100 * worst_cal);
    printf("without runtime fusion (the graph as written, op by op): default median %.0f%%, worst "
           "%.0f%%; calibrated median %.0f%%, worst %.0f%%\n",
           100 * med_dnf, 100 * worst_dnf, 100 * med_cnf, 100 * worst_cnf);
    printf("calibrated without fusion against the latency with graph optimisation off (the graph "
           "as profiled): median %.0f%%, worst %.0f%%\n",
           100 * med_off, 100 * worst_off);
    pl_table_free(t);
    if (one_core) {
        pl_ort_stop(w), pl_table_free(t2);
        for (int m = 0; m < n; m++)
            pl_graph_free(g[m]), pl_profile_free(prof[m]);
        pl_cluster_free(c);
        return 0;
    }
    summary(e_two, n, &med_two, &worst_two);
    printf("\ntwo cores: HEFT's plan on local-cpu.json (leave-one-out efficiencies), cut by the "
           "schedule, one onnxruntime thread per core; measured (median of 5) vs the simulator, "
           "with and without the stage costs; then the default algorithm's plan\n");
    pl_table_print(t2, stdout);
    pl_table_free(t2);
    printf(
        "HEFT's speed-up predicted on the same side of 1.0 as measured: %d of %d models (%d "
        "without stage costs); the default plan's: %d of %d, and its measured latency within 1.05x "
        "of one core's: %d of %d\n",
        same_side, n, same_side_before, default_side, n, default_ok, n);
    printf("relative error: median %.0f%%, worst %.0f%% (targets: median under 15%%, worst under "
           "30%%); hand-off between the cores: median over models %.3f ms\n",
           100 * med_two, 100 * worst_two, n_hand ? 1e3 * pl_median(hand, n_hand) : -1.0);
    for (int m = 0; m < n; m++)
        pl_graph_free(g[m]), pl_profile_free(prof[m]);
    pl_cluster_free(c);
    return 0;
}
