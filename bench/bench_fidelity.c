/* bench_fidelity.c: how far the cost model's predictions are from onnxruntime on this CPU.
 *
 *   bench_fidelity MODEL...
 *
 * For each model: the measured single-request latency (onnxruntime, one intra-op thread,
 * median of 5 after a warm-up, graph optimisation on as placer runs models), the cost model's
 * prediction with its default efficiencies, and the prediction with efficiencies calibrated on
 * the OTHER models' profiles (leave one out; profiles written by `placer profile` into
 * build/bench/fidelity/). The plan is `single` on examples/clusters/local-cpu.json (one core).
 * The latency with graph optimisation off is shown too (not used for the errors): it is the
 * graph the cost model prices and the profiles time, node for node, so the gap between the two
 * measurements is what onnxruntime's fusions and layout changes gain (docs/calibrate.md,
 * "Fidelity"). */
#include "placer/calib.h"
#include "placer/place.h"
#include "placer/report.h"
#include "placer/runtime.h"

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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double measured(pl_ort *w, const char *model, pl_err *err)
{
    char path[1024];
    if (pl_inflate_model(model, "build/ort-cache", path, sizeof path, err) < 0) return -1;
    const char *p = path;
    pl_ort_result r = {0};
    if (pl_ort_load(w, &p, 1, err) < 0 || pl_ort_run(w, 5, 1, &r, err) < 0) return -1;
    pl_sort(r.latency_s, (size_t)r.repeat, sizeof *r.latency_s, cmp_double);
    double med = r.latency_s[r.repeat / 2];
    pl_ort_result_free(&r);
    return med;
}

static double predicted(const pl_graph *g, const pl_cluster *c, const pl_cost_params *params)
{
    pl_err err = {""};
    pl_cost *k = pl_cost_new(g, c, params, NULL, 0, &err);
    pl_plan *p = pl_plan_new(g->n_ops, c->n_devs);
    pl_place_opts po = {0};
    pl_sim_opts so = {0};
    pl_sim_result r = {0};
    double ms = -1;
    if (k && pl_place(pl_algo_find("single"), k, &po, p, &err) == 0 &&
        pl_simulate(k, p, &so, &r, &err) == 0)
        ms = r.makespan_s;
    else
        fprintf(stderr, "%s\n", err.msg);
    pl_sim_result_free(&r);
    pl_plan_free(p), pl_cost_free(k);
    return ms;
}

int main(int argc, char **argv)
{
    int n = argc - 1;
    if (n < 2 || n > MAX_MODELS) return fprintf(stderr, "usage: bench_fidelity MODEL...\n"), 2;
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(CLUSTER, &err);
    pl_ort_opts oo = {0}, off = {.no_optimize = true};
    pl_ort *w = c ? pl_ort_start(&oo, &err) : NULL;
    pl_ort *w_off = w ? pl_ort_start(&off, &err) : NULL;
    if (!w_off) return fprintf(stderr, "%s\n", err.msg), 1;
    pl_graph *g[MAX_MODELS];
    pl_profile *prof[MAX_MODELS];
    double meas[MAX_MODELS], meas_off[MAX_MODELS];
    if (system("mkdir -p build/bench/fidelity") != 0) return 1;
    for (int m = 0; m < n; m++) {
        char cmd[1024], out[512];
        snprintf(out, sizeof out, "build/bench/fidelity/%s.profile.json", base(argv[m + 1]));
        snprintf(cmd, sizeof cmd, "build/placer profile %s -o %s >/dev/null", argv[m + 1], out);
        g[m] = pl_graph_load(argv[m + 1], NULL, &err);
        if (!g[m] || system(cmd) != 0 || !(prof[m] = pl_profile_load(out, &err)) ||
            (meas[m] = measured(w, argv[m + 1], &err)) < 0 ||
            (meas_off[m] = measured(w_off, argv[m + 1], &err)) < 0)
            return fprintf(stderr, "%s: %s\n", argv[m + 1], err.msg), 1;
        fprintf(stderr, "  %s: measured %.2f ms (optimisation off: %.2f ms)\n", base(argv[m + 1]),
                meas[m] * 1e3, meas_off[m] * 1e3);
    }
    pl_ort_stop(w), pl_ort_stop(w_off);
    pl_table *t =
        pl_table_new("model|>measured ms|>opt. off ms|>default ms|>error|>calibrated (others) "
                     "ms|>error|>fitted dense|>fitted memory");
    double e_def[MAX_MODELS], e_cal[MAX_MODELS], e_off[MAX_MODELS];
    for (int m = 0; m < n; m++) {
        const pl_graph *gs[MAX_MODELS];
        const pl_profile *ps[MAX_MODELS];
        int k = 0;
        for (int j = 0; j < n; j++)
            if (j != m) gs[k] = g[j], ps[k++] = prof[j];
        pl_calib_result cr;
        if (pl_calib_fit(gs, ps, k, &c->devs[0], NULL, &cr, &err) < 0)
            return fprintf(stderr, "%s\n", err.msg), 1;
        pl_cost_params def;
        pl_cost_params_default(&def);
        double pd = predicted(g[m], c, &def), pc = predicted(g[m], c, &cr.params);
        e_def[m] = fabs(pd - meas[m]) / meas[m], e_cal[m] = fabs(pc - meas[m]) / meas[m];
        e_off[m] = fabs(pc - meas_off[m]) / meas_off[m];
        pl_table_row(t, "%s|%.2f|%.2f|%.2f|%+.0f%%|%.2f|%+.0f%%|%.3f|%.3f", base(argv[m + 1]),
                     meas[m] * 1e3, meas_off[m] * 1e3, pd * 1e3, 100 * (pd - meas[m]) / meas[m],
                     pc * 1e3, 100 * (pc - meas[m]) / meas[m],
                     cr.params.eff_compute[PL_CLASS_DENSE], cr.params.eff_memory);
    }
    printf("single-device latency on this CPU (one core): measured with onnxruntime vs predicted; "
           "calibrated = efficiencies fitted on the other models' profiles\n");
    pl_table_print(t, stdout);
    qsort(e_def, n, sizeof *e_def, cmp_double), qsort(e_cal, n, sizeof *e_cal, cmp_double);
    qsort(e_off, n, sizeof *e_off, cmp_double);
    printf("relative error: default median %.0f%%, worst %.0f%%; calibrated median %.0f%%, worst "
           "%.0f%% (targets: median under 15%%, worst under 30%%)\n",
           100 * e_def[n / 2], 100 * e_def[n - 1], 100 * e_cal[n / 2], 100 * e_cal[n - 1]);
    printf("calibrated against the latency with graph optimisation off (the graph as priced and "
           "profiled): median %.0f%%, worst %.0f%%\n",
           100 * e_off[n / 2], 100 * e_off[n - 1]);
    pl_table_free(t);
    for (int m = 0; m < n; m++)
        pl_graph_free(g[m]), pl_profile_free(prof[m]);
    pl_cluster_free(c);
    return 0;
}
