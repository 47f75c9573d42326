/* bench_serverless: MOPAR and its baselines on the zoo for each platform (docs/serverless.md):
 * slices, latency, cost per request and GB-s, and their ratio to the unsplit model; then MOPAR
 * and unsplit serving a diurnal trace (P95 latency, memory per 100 requests a second).
 *
 *   bench_serverless [--slack F] PLATFORM... -- MODEL...
 *
 * A platform whose vcpu is this machine's core is priced with this machine's calibration
 * (pl_machine_params, as `placer serverless` does); the others with the default efficiencies. */
#include "placer/calib.h"
#include "placer/serverless.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FILES = 64 };

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void params_for(const pl_platform *pf, pl_cost_params *p)
{
    pl_cost_params_default(p);
    const pl_device *d = &pf->vcpu->devs[0];
    pl_err err = {""};
    if (d->this_machine && !pl_machine_params(d, NULL, p, NULL, 0, NULL, &err))
        fprintf(stderr, "bench_serverless: %s: uncalibrated (%s)\n", pf->name, err.msg);
}

/* One model on one platform: every algorithm's plan, printed; MOPAR's and unsplit's kept for
 * serving. */
static int plans_of(const char *model, const pl_platform *pf, const pl_cost_params *cp,
                    double slack, pl_sl_plan *plans)
{
    pl_err err = {""};
    pl_graph *g = pl_graph_load(model, NULL, &err);
    pl_sl_graph *sg = g ? pl_sl_from_graph(g, pf, cp, &err) : NULL;
    pl_sl_graph *raw = g ? pl_sl_from_graph(g, pf, cp, &err) : NULL;
    int rc = sg && raw ? 0 : -1;
    if (rc == 0) pl_sl_eliminate(sg, 0.05);
    pl_sl_opts o = {.threshold = 0.05, .latency_slack = slack, .codec_cost = {1, 0, 0}};
    o.shm = pf->shm.present;
    int k = 0;
    for (int a = 0; a < PL_SL_ALGO_COUNT && rc == 0; a++) {
        rc = pl_sl_plan_make(a == PL_SL_UNIFORM ? raw : sg, pf, &o, a, k, &plans[a], &err);
        if (rc < 0 && a == PL_SL_NONSPLIT) /* a baseline that may find no plan: said, not fatal */
            fprintf(stderr, "bench_serverless: %s on %s: %s\n", model, pf->name, err.msg), rc = 0;
        if (a == PL_SL_MOPAR) k = plans[a].n;
    }
    if (rc < 0) fprintf(stderr, "bench_serverless: %s on %s: %s\n", model, pf->name, err.msg);
    for (int a = 0; a < PL_SL_ALGO_COUNT && rc == 0; a++) {
        const pl_sl_plan *p = &plans[a], *u = &plans[PL_SL_UNSPLIT];
        if (!p->n) {
            printf("%-12s %-20s %-10s      -\n", pf->name, base(model), pl_sl_algo_name(a));
            continue;
        }
        printf("%-12s %-20s %-10s %6d %11.2f %12.4g %10.4f %8.2fx %8.2fx\n", pf->name, base(model),
               pl_sl_algo_name(a), p->n, p->latency_s * 1e3, p->usd, p->gb_s, u->usd / p->usd,
               p->latency_s / u->latency_s);
    }
    pl_sl_free(sg), pl_sl_free(raw), pl_graph_free(g);
    return rc;
}

static void serve_rows(const char *model, const pl_platform *pf, const pl_sl_plan *plans)
{
    pl_sl_serve_opts o = {.duration_s = 120,
                          .period_s = 120,
                          .rps_min = 250,
                          .rps_max = 1250,
                          .keep_alive_s = 60,
                          .poisson = true,
                          .seed = 1};
    for (int a = 0; a < 2; a++) { /* MOPAR, unsplit */
        pl_sl_serve_result r;
        pl_err err = {""};
        if (pl_sl_serve(&plans[a], pf, &o, &r, &err) < 0) {
            fprintf(stderr, "bench_serverless: %s\n", err.msg);
            exit(1);
        }
        printf("%-12s %-20s %-10s %9ld %9.1f %9.1f %14.3f %10ld\n", pf->name, base(model),
               pl_sl_algo_name(a), r.requests, r.p50_s * 1e3, r.p95_s * 1e3, r.mem_gb_per_100rps,
               r.cold_starts);
    }
}

int main(int argc, char **argv)
{
    const char *plat[MAX_FILES], *models[MAX_FILES];
    int np = 0, nm = 0, after = 0;
    double slack = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            after = 1;
        else if (!strcmp(argv[i], "--slack") && i + 1 < argc)
            slack = atof(argv[++i]);
        else if (after && nm < MAX_FILES)
            models[nm++] = argv[i];
        else if (!after && np < MAX_FILES)
            plat[np++] = argv[i];
    }
    if (!np || !nm)
        return fprintf(stderr, "usage: bench_serverless [--slack F] PLATFORM... -- MODEL...\n"), 2;
    printf("latency slack %.2f (MOPAR may be that much slower than unsplit); cut tensors through "
           "shared memory where the platform has it, else the store\n",
           slack);
    printf("%-12s %-20s %-10s %6s %11s %12s %10s %9s %9s\n", "platform", "model", "algorithm",
           "slices", "latency ms", "USD/request", "GB-s/req", "cost /", "latency x");
    int status = 0;
    pl_sl_plan *keep = calloc((size_t)np * nm * PL_SL_ALGO_COUNT, sizeof *keep);
    pl_platform **pfs = calloc((size_t)np, sizeof *pfs);
    for (int p = 0; p < np; p++) {
        pl_err err = {""};
        if (!(pfs[p] = pl_platform_load(plat[p], &err))) {
            fprintf(stderr, "bench_serverless: %s\n", err.msg);
            status = 2;
            continue;
        }
        pl_cost_params cp;
        params_for(pfs[p], &cp);
        for (int m = 0; m < nm; m++)
            if (plans_of(models[m], pfs[p], &cp, slack, &keep[(p * nm + m) * PL_SL_ALGO_COUNT]) < 0)
                status = 2;
    }
    printf("\nserving a diurnal trace, 250 to 1,250 requests a second over 120 s (Poisson, seed "
           "1), instances warm 60 s\n");
    printf("%-12s %-20s %-10s %9s %9s %9s %14s %10s\n", "platform", "model", "algorithm",
           "requests", "P50 ms", "P95 ms", "GB per 100 rps", "cold");
    for (int p = 0; p < np; p++)
        for (int m = 0; m < nm && pfs[p]; m++) {
            pl_sl_plan *pl = &keep[(p * nm + m) * PL_SL_ALGO_COUNT];
            if (pl[0].n && pl[1].n) serve_rows(models[m], pfs[p], pl);
        }
    for (int x = 0; x < np * nm * PL_SL_ALGO_COUNT; x++)
        pl_sl_plan_free(&keep[x]);
    for (int p = 0; p < np; p++)
        pl_platform_free(pfs[p]);
    free(keep), free(pfs);
    return status;
}
