/* bench_multi: several models on one host (docs/multi.md): for each set of zoo models, Talos
 * as the paper has it (its flow alone, "flow") and as placer runs it (the flow, then the local
 * search on TOCT: "talos"), its baselines ASWM and TSAM, and HEFT and moirai on the union
 * graph: TOCT, makespan, idle time per device and placement time; then each Talos's TOCT
 * against each of the others, and the sets where placer's answer (the least TOCT) is not
 * Talos's.
 *
 *   bench_multi CLUSTER SET...     a SET is comma-separated model files ("a.onnx,b.onnx");
 *                                  "a.onnx:64" is a's training iteration at batch 64 (the
 *                                  graph `placer train` and `placer multi --train` place)
 *
 * moirai stops after PLACER_MOIRAI_LIMIT seconds (default 10) per set. */
#include "placer/multi.h"
#include "placer/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_MODELS = 8, N_ALGOS = 6, MAX_SETS = 64 };
/* "flow" is talos with no refinement (pl_multi_opts.refine_s 0) */
static const char *algos[N_ALGOS] = {"flow", "talos", "aswm", "tsam", "heft", "moirai"};

typedef struct result {
    bool ok;
    double toct, makespan, search, idle_sum;
} result;

static char *stem(const char *p)
{
    const char *s = strrchr(p, '/');
    char *n = strdup(s ? s + 1 : p), *dot = strrchr(n, '.');
    if (dot) *dot = 0;
    return n;
}

/* FILE, or FILE:BATCH for the model's training iteration at that batch. */
static pl_graph *load_model(char *s, pl_err *err)
{
    char *colon = strrchr(s, ':');
    int batch = colon ? atoi(colon + 1) : 0;
    if (colon) *colon = 0;
    pl_graph *g = pl_graph_load(s, NULL, err);
    pl_train_graph *t = NULL;
    if (!g || !colon) return g;
    if (pl_train_graph_build(g, &(pl_train_opts){.batch = batch}, &t, err) < 0) t = NULL;
    pl_graph_free(g);
    if (!t) return NULL;
    g = t->g, t->g = NULL;
    pl_train_graph_free(t);
    return g;
}

/* Loads one set and builds its union; the count of models, or -1. */
static int load_set(char *set, pl_graph **gs, char **names, pl_graph **u, pl_err *err)
{
    int n = 0;
    for (char *s = strtok(set, ","); s && n < MAX_MODELS; s = strtok(NULL, ",")) {
        gs[n] = load_model(s, err);
        if (!gs[n]) return -1;
        names[n] = stem(s);
        for (int j = 0; j < n; j++)
            if (!strcmp(names[j], names[n])) {
                char buf[256];
                snprintf(buf, sizeof buf, "%s#%d", names[n], n + 1);
                free(names[n]);
                names[n] = strdup(buf);
            }
        n++;
    }
    *u = pl_graph_union(gs, (const char *const *)names, n, err);
    return *u ? n : -1;
}

static void run_set(const pl_cost *k, const pl_place_opts *po, result *res)
{
    for (int a = 0; a < N_ALGOS; a++) {
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_multi_eval e;
        pl_err err = {""};
        pl_multi_opts mo;
        pl_multi_opts_default(&mo);
        bool flow = !strcmp(algos[a], "flow");
        if (flow) mo.refine_s = 0;
        res[a].ok = pl_multi_place(flow ? "talos" : algos[a], k, po, &mo, p, NULL, &err) == 0 &&
                    pl_multi_evaluate(k, p, po->contention, &e, &err) == 0;
        if (!res[a].ok) {
            fprintf(stderr, "bench_multi: %s: %s\n", algos[a], err.msg);
            pl_plan_free(p);
            continue;
        }
        res[a].toct = e.toct_s, res[a].makespan = e.makespan_s, res[a].search = p->search_s;
        res[a].idle_sum = 0;
        for (int d = 0; d < e.n_devs; d++)
            res[a].idle_sum += e.idle_s[d];
        printf("  %-7s %9.3f %11.3f", algos[a], e.toct_s * 1e3, e.makespan_s * 1e3);
        for (int d = 0; d < e.n_devs; d++)
            printf(" %9.3f", e.idle_s[d] * 1e3);
        printf(" %10.3f\n", p->search_s);
        pl_multi_eval_free(&e);
        pl_plan_free(p);
    }
}

static void header(const pl_cost *k, char *const *names, int n, const pl_multi_analysis *a)
{
    printf("\n");
    for (int i = 0; i < n; i++) {
        int ops = 0;
        for (int v = 0; v < k->g->n_ops; v++)
            ops += k->g->ops[v].tenant == i;
        printf("%s%s (%d ops, NOD %d)", i ? " + " : "", names[i], ops, a->nod[i]);
    }
    printf("; affinity");
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            printf(" %.2f", a->affinity[i * n + j]);
    printf("; %d flow group(s)\n", a->n_groups);
    printf("  %-7s %9s %11s", "algo", "TOCT ms", "makespan ms");
    for (int d = 0; d < k->n_devs; d++)
        printf(" %9s", k->c->devs[d].name);
    printf(" %10s\n", "placing s");
}

/* Talos (t: 0 the flow, 1 refined) against every later column. */
static void compare(result all[][N_ALGOS], int n_sets, int t)
{
    printf("\n%s's TOCT against each (negative: lower), over %d sets:\n", algos[t], n_sets);
    for (int a = 2; a < N_ALGOS; a++) {
        int wins = 0, cmp = 0;
        double best = 1e9, worst = -1e9;
        for (int s = 0; s < n_sets; s++) {
            if (!all[s][t].ok || !all[s][a].ok) continue;
            double r = all[s][t].toct / all[s][a].toct - 1;
            cmp++, wins += r < -1e-9;
            if (r < best) best = r;
            if (r > worst) worst = r;
        }
        if (cmp)
            printf("  vs %-7s lower in %d of %d sets; from %+.1f %% to %+.1f %%\n", algos[a], wins,
                   cmp, 100 * best, 100 * worst);
    }
}

/* placer multi's answer per set: the least TOCT of the rows it prints (flow is not one), and
 * whether refined Talos is at most the better of ASWM and TSAM (issue 32's acceptance). */
static void answers(result all[][N_ALGOS], int n_sets)
{
    int talos = 0, vs_base = 0;
    for (int s = 0; s < n_sets; s++) {
        int best = -1;
        for (int a = 1; a < N_ALGOS; a++)
            if (all[s][a].ok && (best < 0 || all[s][a].toct < all[s][best].toct)) best = a;
        talos += best == 1;
        double base = all[s][2].toct < all[s][3].toct ? all[s][2].toct : all[s][3].toct;
        vs_base += all[s][1].ok && all[s][1].toct <= base * (1 + 1e-9);
        if (best > 1)
            printf("  set %d: the answer is %s's (%.3f ms; talos %.3f)\n", s + 1, algos[best],
                   all[s][best].toct * 1e3, all[s][1].toct * 1e3);
    }
    printf("answer: talos's plan in %d of %d sets; talos at most the better of ASWM and TSAM in "
           "%d of %d\n",
           talos, n_sets, vs_base, n_sets);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_multi CLUSTER SET... (a SET is a,b,c model files)\n");
        return 2;
    }
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(argv[1], &err);
    if (!c) return fprintf(stderr, "bench_multi: %s\n", err.msg), 2;
    const char *lim = getenv("PLACER_MOIRAI_LIMIT");
    pl_place_opts po = {.time_limit_s = lim ? atof(lim) : 10};
    printf("%s; idle ms per device; ports contention; moirai %.0f s\n", c->name, po.time_limit_s);
    result all[MAX_SETS][N_ALGOS];
    int n_sets = 0;
    for (int s = 2; s < argc && n_sets < MAX_SETS; s++) {
        pl_graph *gs[MAX_MODELS] = {0}, *u = NULL;
        char *names[MAX_MODELS] = {0}, *set = strdup(argv[s]);
        int n = load_set(set, gs, names, &u, &err);
        pl_cost *k = n > 0 ? pl_cost_new(u, c, NULL, NULL, 0, &err) : NULL;
        pl_multi_analysis a;
        if (!k || pl_multi_analyze(k, NULL, &a, &err) < 0) {
            fprintf(stderr, "bench_multi: %s: %s\n", argv[s], err.msg);
        } else {
            header(k, names, n, &a);
            run_set(k, &po, all[n_sets++]);
            pl_multi_analysis_free(&a);
        }
        pl_cost_free(k);
        pl_graph_free(u);
        for (int i = 0; i < MAX_MODELS; i++)
            pl_graph_free(gs[i]), free(names[i]);
        free(set);
    }
    for (int t = 0; t < 2; t++)
        compare(all, n_sets, t);
    answers(all, n_sets);
    pl_cluster_free(c);
    return 0;
}
