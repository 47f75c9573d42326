/* bench_place.c: placement algorithms and the simulator, measured.
 *
 *   bench_place zoo CLUSTER... -- MODEL...   makespan, gap to bound, search time per algorithm
 *   bench_place big MODEL N                   a big graph on N uniform V100s: search times and
 *                                             simulator speed (events per second)
 *   bench_place moirai DIR                    MOIRAI's instances (DIR/{example-1,googlenet,
 *                                             inceptionv4}.json): heuristics vs moirai (time
 *                                             limit $PLACER_MOIRAI_LIMIT s, default 60) vs the
 *                                             reference results
 *   bench_place moirai-zoo CLUSTER... -- MODEL...
 *                                             moirai on models beside m-SCT, GETF and HEFT:
 *                                             makespans and gains (same time limit)
 * Prints tables; docs/guide/place.md and docs/placement.md quote them. */
#include "placer/place.h"
#include "placer/report.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void zoo_row(pl_table *t, const pl_cost *k, const char *model, const char *cluster)
{
    int n;
    const pl_algo *algos = pl_algo_list(&n);
    double lb = pl_lower_bound(k);
    for (int a = 0; a < n; a++) {
        if (!strcmp(algos[a].name, "moirai")) continue; /* its own table: moirai-zoo */
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_place_opts po = {.seed = 1, .time_limit_s = 10};
        pl_sim_opts so = {0};
        pl_sim_result r;
        pl_err err = {""};
        if (pl_place(&algos[a], k, &po, p, &err) < 0 || pl_simulate(k, p, &so, &r, &err) < 0) {
            pl_table_row(t, "%s|%s|%s|-|-|-|%.60s", model, cluster, algos[a].name, err.msg);
        } else {
            pl_table_row(t, "%s|%s|%s|%.4f|%.1f%%|%.4f|%s", model, cluster, algos[a].name,
                         r.makespan_s * 1e3, lb > 0 ? 100 * (r.makespan_s - lb) / lb : 0,
                         p->search_s, r.oom ? "OOM" : "");
            pl_sim_result_free(&r);
        }
        pl_plan_free(p);
    }
}

/* Calls row(ctx, cost, model, cluster) for every MODEL x CLUSTER of "CLUSTER... -- MODEL...". */
typedef void (*pair_fn)(void *ctx, const pl_cost *k, const char *model, const char *cluster);

static int each_pair(int argc, char **argv, pair_fn row, void *ctx)
{
    int sep = 0;
    while (sep < argc && strcmp(argv[sep], "--"))
        sep++;
    for (int m = sep + 1; m < argc; m++) {
        pl_err err;
        pl_graph *g = pl_graph_load(argv[m], NULL, &err);
        if (!g) return fprintf(stderr, "%s\n", err.msg), 1;
        for (int c = 0; c < sep; c++) {
            pl_cluster *cl = pl_cluster_load(argv[c], &err);
            pl_cost *k = cl ? pl_cost_new(g, cl, NULL, NULL, 0, &err) : NULL;
            if (!k) return fprintf(stderr, "%s\n", err.msg), 1;
            row(ctx, k, base(argv[m]), base(argv[c]));
            pl_cost_free(k), pl_cluster_free(cl);
        }
        pl_graph_free(g);
    }
    return 0;
}

static void zoo_pair(void *t, const pl_cost *k, const char *model, const char *cluster)
{
    zoo_row(t, k, model, cluster);
}

static int zoo(int argc, char **argv)
{
    pl_table *t = pl_table_new("model|cluster|algorithm|>makespan ms|>gap to bound|>search s|note");
    int rc = each_pair(argc, argv, zoo_pair, t);
    if (rc == 0) pl_table_print(t, stdout);
    pl_table_free(t);
    return rc;
}

static pl_cluster *uniform(int n)
{
    pl_cluster *c = pl_cluster_new("uniform");
    char name[16];
    for (int d = 0; d < n; d++) {
        snprintf(name, sizeof name, "gpu%d", d);
        pl_cluster_add_device(c, name, PL_DEV_GPU, "V100-SXM2-16GB");
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            pl_cluster_set_link(c, a, b, 25e9, 5e-6, true);
    pl_err err;
    if (pl_cluster_finalize(c, &err) < 0) fprintf(stderr, "%s\n", err.msg);
    return c;
}

static int big(const char *model, int ndev)
{
    pl_err err;
    pl_graph *g = pl_graph_load(model, NULL, &err);
    if (!g) return fprintf(stderr, "%s\n", err.msg), 1;
    pl_cluster *c = uniform(ndev);
    pl_cost_params params;
    pl_cost_params_default(&params);
    pl_cost *k = pl_cost_new(g, c, &params, NULL, 0, &err);
    if (!k) return fprintf(stderr, "%s\n", err.msg), 1;
    const char *names[] = {"heft", "m-etf", "m-topo", "getf", "expert", "metis", "m-sct", "random"};
    pl_table *t = pl_table_new("algorithm|>ops|>devices|>search s|>makespan ms|>sim ms|>events/s");
    for (size_t a = 0; a < sizeof names / sizeof *names; a++) {
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_place_opts po = {.seed = 1, .time_limit_s = 30};
        pl_sim_opts so = {.ignore_memory = true};
        pl_sim_result r;
        if (pl_place(pl_algo_find(names[a]), k, &po, p, &err) < 0) {
            pl_table_row(t, "%s|%d|%d|-|-|-|%.50s", names[a], g->n_ops, ndev, err.msg);
            pl_plan_free(p);
            continue;
        }
        double t0 = pl_now();
        int rc = pl_simulate(k, p, &so, &r, &err);
        double sim = pl_now() - t0;
        if (rc < 0)
            pl_table_row(t, "%s|%d|%d|%.3f|-|-|%.50s", names[a], g->n_ops, ndev, p->search_s,
                         err.msg);
        else {
            pl_table_row(t, "%s|%d|%d|%.3f|%.3f|%.2f|%.2e", names[a], g->n_ops, ndev, p->search_s,
                         r.makespan_s * 1e3, sim * 1e3, r.events / sim);
            pl_sim_result_free(&r);
        }
        pl_plan_free(p);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    pl_cost_free(k);
    pl_cluster_free(c);
    pl_graph_free(g);
    return 0;
}

/* ---- MOIRAI instances ---- */

typedef struct moirai_case {
    const char *name;
    double reference; /* ../shared/benchmarks/README.md */
} moirai_case;

/* The bench's figure: ports, memory ignored, -1 (a table cell) when the simulation fails. Its
 * own rather than src/place's pk_sim_makespan: the bench sees only the public headers. */
static double simulate_ports(const pl_cost *k, const pl_plan *p)
{
    pl_sim_opts so = {.contention = PL_CONTENTION_PORTS, .ignore_memory = true};
    pl_sim_result r = {0};
    pl_err err = {""};
    double ms = pl_simulate(k, p, &so, &r, &err) == 0 ? r.makespan_s : -1;
    pl_sim_result_free(&r);
    return ms;
}

/* What follows the last "final plan: " of a moirai note (on a model the note quotes the
 * coarse graph's own), or NULL. */
static const char *last_final(const char *note)
{
    const char *f = NULL;
    for (const char *s = strstr(note, "final plan: "); s; s = strstr(s + 1, "final plan: "))
        f = s + strlen("final plan: ");
    return f;
}

/* A number that follows `key` in the moirai note, or NaN. */
static double note_num(const char *note, const char *key)
{
    const char *s = strstr(note, key);
    return s ? atof(s + strlen(key)) : 0.0 / 0.0;
}

static void moirai_row(pl_table *t, const pl_cost *k, const char *algo, double limit, double ref,
                       const char *inst)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts po = {.seed = 1, .time_limit_s = limit, .contention = PL_CONTENTION_PORTS};
    pl_err err = {""};
    if (pl_place(pl_algo_find(algo), k, &po, p, &err) < 0) {
        pl_table_row(t, "%s|%s|-|-|-|-|-|-|%.50s", inst, algo, err.msg);
        pl_plan_free(p);
        return;
    }
    double ms = simulate_ports(k, p);
    bool is_moirai = !strcmp(algo, "moirai");
    double bound = is_moirai ? note_num(err.msg, ", bound ") : pl_lower_bound(k);
    const char *by = is_moirai ? last_final(err.msg) : NULL;
    char ref_s[32] = "";
    if (ref > 0) snprintf(ref_s, sizeof ref_s, "%.6g", ref);
    char milp[48] = "-";
    if (is_moirai && strstr(err.msg, "MILP skipped ("))
        snprintf(milp, sizeof milp, "skipped (%.0fk rows)",
                 note_num(err.msg, "MILP skipped (") / 1000);
    else if (is_moirai)
        snprintf(milp, sizeof milp, "%.0fk, %.1f + %.1f", note_num(err.msg, " binaries, ") / 1000,
                 note_num(err.msg, ", build "), note_num(err.msg, ", CBC "));
    pl_table_row(t, "%s|%s|%.6g|%.6g|%.1f%%|%.1f|%s|%s|%s", inst, algo, ms, bound,
                 ms > 0 ? 100 * (ms - bound) / ms : 0, p->search_s, milp,
                 by          ? by
                 : is_moirai ? "?"
                             : "-",
                 ref_s);
    pl_plan_free(p);
}

/* Simulated makespan (ports, memory ignored) of one algorithm's plan; -1 when it fails. */
static double place_ms(const pl_cost *k, const char *algo, double limit, double *secs, char *by,
                       size_t nby)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_place_opts po = {.seed = 1, .time_limit_s = limit};
    pl_err err = {""};
    double ms = pl_place(pl_algo_find(algo), k, &po, p, &err) == 0 ? simulate_ports(k, p) : -1;
    *secs = p->search_s;
    const char *f = last_final(err.msg);
    if (by) snprintf(by, nby, "%s", f ? f : "-");
    pl_plan_free(p);
    return ms;
}

/* moirai on models: its makespan beside m-SCT, GETF and HEFT, the gains, its time. */
typedef struct gains {
    pl_table *t;
    double limit, worst[3], best[3];
} gains;

static void gains_row(void *ctx, const pl_cost *k, const char *model, const char *cluster)
{
    gains *G = ctx;
    double limit = G->limit, *worst = G->worst, *best = G->best;
    const char *base_algos[] = {"m-sct", "getf", "heft"};
    double ms[3], secs, m_secs;
    char by[64];
    for (int a = 0; a < 3; a++)
        ms[a] = place_ms(k, base_algos[a], limit, &secs, NULL, 0);
    double mo = place_ms(k, "moirai", limit, &m_secs, by, sizeof by);
    double g[3];
    for (int a = 0; a < 3; a++) {
        g[a] = mo > 0 && ms[a] > 0 ? ms[a] / mo : 0;
        worst[a] = fmin(worst[a], g[a]), best[a] = fmax(best[a], g[a]);
    }
    pl_table_row(G->t, "%s|%s|%d|%.4f|%.4f|%.4f|%.4f|%.3fx|%.3fx|%.3fx|%.1f|%.40s", model, cluster,
                 k->n_ops, ms[0] * 1e3, ms[1] * 1e3, ms[2] * 1e3, mo * 1e3, g[0], g[1], g[2],
                 m_secs, by);
}

/* moirai's time limit in seconds: $PLACER_MOIRAI_LIMIT when positive, else its default 60. */
static double moirai_limit(void)
{
    const char *env = getenv("PLACER_MOIRAI_LIMIT");
    return env && atof(env) > 0 ? atof(env) : 60;
}

static int moirai_zoo(int argc, char **argv)
{
    gains G = {.limit = moirai_limit(), .worst = {INFINITY, INFINITY, INFINITY}};
    G.t = pl_table_new("model|cluster|>ops|>m-sct ms|>getf ms|>heft ms|>moirai ms|>vs "
                       "m-sct|>vs getf|>vs heft|>moirai s|found by");
    int rc = each_pair(argc, argv, gains_row, &G);
    if (rc == 0) {
        printf("moirai time limit %.0f s (PLACER_MOIRAI_LIMIT); makespans simulated under ports; "
               "gain = heuristic / moirai\n",
               G.limit);
        pl_table_print(G.t, stdout);
        printf("gain over m-SCT %.3fx .. %.3fx, GETF %.3fx .. %.3fx, HEFT %.3fx .. %.3fx "
               "(MOIRAI reports up to 1.9x over m-SCT and 1.35x over GETF, placing 3,600-50,000 "
               "ops in minutes with Gurobi)\n",
               G.worst[0], G.best[0], G.worst[1], G.best[1], G.worst[2], G.best[2]);
    }
    pl_table_free(G.t);
    return rc;
}

static int moirai(const char *dir)
{
    const moirai_case cases[] = {
        {"example-1", 30}, {"googlenet", 1.72211}, {"inceptionv4", 12.77844}};
    double limit = moirai_limit();
    pl_table *t = pl_table_new("instance|algorithm|>makespan|>bound|>gap|>time s|>MILP rows, build "
                               "+ CBC s|found by|>reference");
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.json", dir, cases[c].name);
        pl_graph *g;
        pl_cluster *cl;
        pl_err err = {""};
        if (pl_moirai_load(path, &g, &cl, &err) < 0) return fprintf(stderr, "%s\n", err.msg), 1;
        pl_cost *k = pl_cost_new(g, cl, NULL, NULL, 0, &err);
        if (!k) return fprintf(stderr, "%s\n", err.msg), 1;
        moirai_row(t, k, "heft", limit, 0, cases[c].name);
        moirai_row(t, k, "getf", limit, 0, cases[c].name);
        moirai_row(t, k, "moirai", limit, cases[c].reference, cases[c].name);
        pl_cost_free(k), pl_cluster_free(cl), pl_graph_free(g);
    }
    printf("moirai time limit %.0f s (PLACER_MOIRAI_LIMIT); heuristics simulated under ports, "
           "their bound is pl_lower_bound; memory (5) is the moirai rows' only\n",
           limit);
    pl_table_print(t, stdout);
    pl_table_free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "moirai")) return moirai(argv[2]);
    if (argc >= 2 && !strcmp(argv[1], "zoo")) return zoo(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "moirai-zoo")) return moirai_zoo(argc - 2, argv + 2);
    if (argc == 4 && !strcmp(argv[1], "big")) return big(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: bench_place zoo CLUSTER... -- MODEL... | bench_place big MODEL N | "
                    "bench_place moirai DIR | bench_place moirai-zoo CLUSTER... -- MODEL...\n");
    return 2;
}
