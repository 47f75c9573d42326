/* bench_serverless: MOPAR and its baselines on the zoo for each platform (docs/serverless.md):
 * slices, latency, cost per request and GB-s, and their ratio to the unsplit model; then MOPAR
 * and unsplit serving a diurnal trace (P95 latency, memory per 100 requests a second).
 *
 *   bench_serverless [--slack F] PLATFORM... -- MODEL...
 *   bench_serverless --paper [--slack F] PLATFORM... -- MODEL...
 *
 * --paper prints, per platform, Table III's comparison instead (docs/serverless.md, "Paper
 * mode"): each model's family, every plan's cost per request, unsplit / MOPAR, the most any
 * split could save under Eq. (6) (every layer its own slice, nothing paid to move tensors), and
 * the P95 latency of serving the trace below with each plan, beside the paper's figures.
 * Clockwork++'s cost is what its windows bill serving the default trace of `placer serverless
 * --serve` (pl_sl_serve_defaults: 600 s), its P95 what they give on the trace below.
 *
 * A platform whose vcpu is this machine's core is priced with this machine's calibration
 * (pl_machine_params, as `placer serverless` does); the others with the default efficiencies. */
#include "placer/calib.h"
#include "placer/serverless.h"

#include <math.h>
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

/* The most any contiguous split saves under Eq. (6): every layer its own slice, billed for its
 * compute only (t_p + t_a, the first term; the second, moving tensors, left out), against the
 * unsplit function billed the same way. Priced by pl_sl_price, as every plan is. */
static double split_bound(const pl_sl_graph *raw, const pl_platform *pf, const pl_sl_opts *o)
{
    int *ends = malloc((size_t)raw->n * sizeof *ends);
    for (int i = 0; i < raw->n; i++)
        ends[i] = i;
    pl_sl_plan every = {0}, whole = {0};
    double bound = 0;
    if (pl_sl_price(raw, pf, o, ends, NULL, raw->n, &every) == 0 &&
        pl_sl_price(raw, pf, o, ends + raw->n - 1, NULL, 1, &whole) == 0) {
        double mb_s = 0;
        for (int i = 0; i < every.n; i++)
            mb_s += every.slices[i].mem_mb * every.slices[i].compute_s;
        bound = whole.slices[0].mem_mb * whole.slices[0].compute_s / mb_s;
    }
    pl_sl_plan_free(&every), pl_sl_plan_free(&whole);
    free(ends);
    return bound;
}

/* One model on one platform: every algorithm's plans into plans[]; with bound, also
 * split_bound's. */
static int make_plans(const char *model, const pl_platform *pf, const pl_cost_params *cp,
                      double slack, pl_sl_plan *plans, double *bound)
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
    if (rc == 0 && bound) *bound = split_bound(raw, pf, &o);
    pl_sl_free(sg), pl_sl_free(raw), pl_graph_free(g);
    return rc;
}

/* One model on one platform: every algorithm's plan, printed; MOPAR's and unsplit's kept for
 * serving. */
static int plans_of(const char *model, const pl_platform *pf, const pl_cost_params *cp,
                    double slack, pl_sl_plan *plans)
{
    int rc = make_plans(model, pf, cp, slack, plans, NULL);
    for (int a = 0; a < PL_SL_ALGO_COUNT && rc == 0; a++) {
        const pl_sl_plan *p = &plans[a], *u = &plans[PL_SL_UNSPLIT];
        if (!p->n) {
            printf("%-12s %-20s %-11s      -\n", pf->name, base(model), pl_sl_algo_name(a));
            continue;
        }
        printf("%-12s %-20s %-11s %6d %11.2f %12.4g %10.4f %8.2fx %8.2fx\n", pf->name, base(model),
               pl_sl_algo_name(a), p->n, p->latency_s * 1e3, p->usd, p->gb_s, u->usd / p->usd,
               p->latency_s / u->latency_s);
    }
    return rc;
}

/* The trace every plan serves: MOPAR's diurnal load (§III-A1, Fig. 9), one period. */
static pl_sl_serve_opts trace(void)
{
    pl_sl_serve_opts o;
    pl_sl_serve_defaults(&o);
    o.duration_s = o.period_s = 120; /* one period of the default, shortened */
    return o;
}

static void serve_rows(const char *model, const pl_platform *pf, const pl_sl_plan *plans)
{
    for (int a = 0; a < 2; a++) { /* MOPAR, unsplit */
        pl_sl_serve_result r;
        pl_err err = {""};
        pl_sl_serve_opts t = trace();
        if (pl_sl_serve(&plans[a], pf, &t, &r, &err) < 0) {
            fprintf(stderr, "bench_serverless: %s\n", err.msg);
            exit(1);
        }
        printf("%-12s %-20s %-10s %9ld %9.1f %9.1f %14.3f %10ld\n", pf->name, base(model),
               pl_sl_algo_name(a), r.requests, r.p50_s * 1e3, r.p95_s * 1e3, r.mem_gb_per_100rps,
               r.cold_starts);
    }
}

/* ---- paper mode ---- */

/* The paper's figures, quoted from its text (../shared/seeds/002_*-mopar.txt, §III-A2): Table
 * III's cost per request (10^-6 USD) of Unsplit and MOPAR, the ratio its text states, and the
 * average P95 reductions against Unsplit for CNNs, RNNs and GCNs (Fig. 10b, OpenFaaS; Fig. 10c,
 * Lambda). The paper gives no cost for its transformers; it reports their latency 16.63 % lower
 * on average (§III-A3). */
typedef struct {
    const char *platform_word; /* in the platform's name */
    double unsplit, mopar, text_ratio, p95_cut[3];
    double clockwork, mem_unsplit, mem_clockwork; /* Table III: its cost; GB per 100 rps */
} paper_row;
static const paper_row PAPER[] = {
    {"openfaas", 29.2, 3.68, 5.6, {5.47, 6.71, 9.31}, 30.3, 8.291, 7.385},
    {"lambda", 32.3, 10.7, 2.58, {3.82, 5.13, 7.01}, 37.5, 8.311, 7.694},
};
static const char *const FAMILY_NAMES[] = {"CNN", "RNN", "GCN", "transformer", "other"};

/* The zoo's models by the paper's four families (§III-A1 "Benchmarks"). */
static int family_of(const char *model)
{
    static const struct {
        const char *name;
        int family;
    } zoo[] = {{"resnet50", 0}, {"vgg19", 0},     {"inception_v3", 0}, {"rnnlm", 1},
               {"gcn_cora", 2}, {"bert_base", 3}, {"transformer", 3}};
    const char *b = base(model);
    for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) {
        size_t n = strlen(zoo[i].name);
        if (!strncmp(b, zoo[i].name, n) && !strcmp(b + n, ".onnx")) return zoo[i].family;
    }
    return 4;
}

static const paper_row *paper_for(const pl_platform *pf)
{
    for (size_t i = 0; i < sizeof PAPER / sizeof PAPER[0]; i++)
        if (strstr(pf->name, PAPER[i].platform_word)) return &PAPER[i];
    return NULL;
}

/* Which term of the paper's Eq. (6) keeps MOPAR below the paper's range (its lower end: the
 * smaller of Table III's ratio and its text's), docs/serverless.md "What prevents the paper's
 * range": the first term when even the bound falls short (every slice pays at least the
 * least memory, min_mb), else the latency constraint (t_tau <= sum t_l, with eta <= M / lambda
 * giving no parallelism to pay back the transfers). */
static const char *shortfall(const pl_sl_plan *plans, double bound, const paper_row *pr, int fam)
{
    if (!pr || fam > 2) return "no paper cost";
    double low = fmin(pr->unsplit / pr->mopar, pr->text_ratio);
    double ratio = plans[PL_SL_UNSPLIT].usd / plans[PL_SL_MOPAR].usd;
    if (ratio >= low) return "in range or above";
    if (bound < low) return "M_gi x (t_p+t_a): bound below range";
    return plans[PL_SL_UNSPLIT].slices[0].eta == 1 ? "t_tau <= sum t_l, eta 1" : "t_tau <= sum t_l";
}

static int paper_rows(const char *model, const pl_platform *pf, const pl_cost_params *cp,
                      double slack)
{
    pl_sl_plan plans[PL_SL_ALGO_COUNT] = {{0}};
    pl_err err = {""};
    double bound = 0;
    int rc = make_plans(model, pf, cp, slack, plans, &bound);
    double p95[PL_SL_ALGO_COUNT];
    for (int a = 0; a < PL_SL_ALGO_COUNT && rc == 0; a++) {
        pl_sl_serve_result r = {.p95_s = NAN}; /* no plan (NonSplit's CBC may fail): nan */
        pl_sl_serve_opts t = trace();
        if (plans[a].n) rc = pl_sl_serve(&plans[a], pf, &t, &r, &err);
        p95[a] = r.p95_s;
    }
    if (rc < 0) {
        fprintf(stderr, "bench_serverless: %s on %s: %s\n", model, pf->name, err.msg);
    } else {
        const pl_sl_plan *m = &plans[PL_SL_MOPAR], *u = &plans[PL_SL_UNSPLIT];
        printf("%-11s %-17s %3d", FAMILY_NAMES[family_of(model)], base(model), m->n);
        for (int a = 0; a < PL_SL_ALGO_COUNT; a++)
            printf(" %*.3f", a == PL_SL_CLOCKWORK ? 11 : 9, plans[a].usd * 1e6);
        printf(" %8.2fx %8.2fx", u->usd / m->usd, bound);
        for (int a = 0; a < PL_SL_ALGO_COUNT; a++)
            printf(" %8.1f", p95[a] * 1e3);
        printf(" %7.1f%%  %s\n", 100 * (1 - p95[PL_SL_MOPAR] / p95[PL_SL_UNSPLIT]),
               shortfall(plans, bound, paper_for(pf), family_of(model)));
    }
    for (int a = 0; a < PL_SL_ALGO_COUNT; a++)
        pl_sl_plan_free(&plans[a]);
    return rc;
}

static void paper_header(const pl_platform *pf, double slack)
{
    const paper_row *pr = paper_for(pf);
    printf("\n== %s, latency slack %.2f: cost per request in 10^-6 USD; P95 ms serving 250 to "
           "1,250 requests a second over 120 s (Poisson, seed 1)\n",
           pf->name, slack);
    if (pr)
        printf("   the paper (Table III, %s): Unsplit %.1f, MOPAR %.2f, %.2fx (its text: %.2fx); "
               "P95 cut vs Unsplit: CNN %.2f %%, RNN %.2f %%, GCN %.2f %% (Fig. 10); "
               "transformers 16.63 %% (Sec. III-A3)\n",
               pr->platform_word, pr->unsplit, pr->mopar, pr->unsplit / pr->mopar, pr->text_ratio,
               pr->p95_cut[0], pr->p95_cut[1], pr->p95_cut[2]);
    if (pr)
        printf("   the paper's Clockwork++ (Table III, %s): %.1f against Unsplit's %.1f; memory "
               "per 100 rps %.3f against %.3f. clockwork++ below: its windows' bill over 250 to "
               "1,250 requests a second for 600 s (`placer serverless --serve`'s trace)\n",
               pr->platform_word, pr->clockwork, pr->unsplit, pr->mem_clockwork, pr->mem_unsplit);
    printf("%-11s %-17s %3s %9s %9s %9s %9s %9s %11s %9s %9s %8s %8s %8s %8s %8s %8s %8s %s\n",
           "family", "model", "k", "mopar", "unsplit", "uniform", "lat-dp", "nonsplit",
           "clockwork++", "unspl/mop", "bound", "P95 mop", "P95 uns", "P95 uni", "P95 ldp",
           "P95 nsp", "P95 cw", "P95 cut", " vs the paper's cost range");
}

static int paper_mode(const char **plat, int np, const char **models, int nm, double slack)
{
    int status = 0;
    for (int p = 0; p < np; p++) {
        pl_err err = {""};
        pl_platform *pf = pl_platform_load(plat[p], &err);
        if (!pf) {
            fprintf(stderr, "bench_serverless: %s\n", err.msg);
            status = 2;
            continue;
        }
        pl_cost_params cp;
        params_for(pf, &cp);
        paper_header(pf, slack);
        for (int m = 0; m < nm; m++)
            if (paper_rows(models[m], pf, &cp, slack) < 0) status = 2;
        pl_platform_free(pf);
    }
    return status;
}

int main(int argc, char **argv)
{
    const char *plat[MAX_FILES], *models[MAX_FILES];
    int np = 0, nm = 0, after = 0, paper = 0;
    double slack = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            after = 1;
        else if (!after && !strcmp(argv[i], "--paper"))
            paper = 1;
        else if (!strcmp(argv[i], "--slack") && i + 1 < argc)
            slack = atof(argv[++i]);
        else if (after && nm < MAX_FILES)
            models[nm++] = argv[i];
        else if (!after && np < MAX_FILES)
            plat[np++] = argv[i];
    }
    if (!np || !nm)
        return fprintf(stderr,
                       "usage: bench_serverless [--paper] [--slack F] PLATFORM... -- MODEL...\n"),
               2;
    if (paper) return paper_mode(plat, np, models, nm, slack);
    printf("latency slack %.2f (MOPAR may be that much slower than unsplit); cut tensors through "
           "shared memory where the platform has it, else the store\n",
           slack);
    printf("%-12s %-20s %-11s %6s %11s %12s %10s %9s %9s\n", "platform", "model", "algorithm",
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
