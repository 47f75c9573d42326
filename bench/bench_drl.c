/* bench_drl: AutoDeep's DRL placer on the zoo (docs/learn.md, "The DRL placer"): per model,
 * the makespan and search time of single, expert, HEFT, moirai and drl on one cluster, and
 * DRL's speed-up over single and expert (the paper's Fig. 6 and Table V).
 *
 *   bench_drl CLUSTER MODEL...       (moirai and drl: PLACER_DRL_LIMIT seconds each, 20) */
#include "placer/learn.h"
#include "placer/place.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *algos[] = {"single", "expert", "heft", "moirai", "drl"};
enum { N = 5 };

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void one(const pl_cost *k, const pl_place_opts *po, double *t, double *s)
{
    for (int a = 0; a < N; a++) {
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        pl_err err = {""};
        t[a] = s[a] = NAN;
        pl_sim_result r;
        if (pl_place(pl_algo_find(algos[a]), k, po, p, &err) == 0 &&
            pl_simulate(k, p, &(pl_sim_opts){0}, &r, &err) == 0) {
            t[a] = r.oom ? INFINITY : r.makespan_s, s[a] = p->search_s;
            pl_sim_result_free(&r);
        }
        pl_plan_free(p);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_drl CLUSTER MODEL...\n");
        return 2;
    }
    pl_err err = {""};
    if (pl_learn_register(&err) < 0) return fprintf(stderr, "bench_drl: %s\n", err.msg), 2;
    pl_cluster *c = pl_cluster_load(argv[1], &err);
    if (!c) return fprintf(stderr, "bench_drl: %s\n", err.msg), 2;
    const char *lim = getenv("PLACER_DRL_LIMIT");
    pl_place_opts po = {.seed = 1, .time_limit_s = lim ? atof(lim) : 20};
    printf("%s; makespan ms (search s); moirai and drl %.0f s at most\n", c->name, po.time_limit_s);
    printf("  %-22s", "model");
    for (int a = 0; a < N; a++)
        printf(" %17s", algos[a]);
    printf(" %9s %9s %9s\n", "drl/single", "drl/expert", "drl/heft");
    for (int m = 2; m < argc; m++) {
        pl_graph *g = pl_graph_load(argv[m], NULL, &err);
        pl_cost *k = g ? pl_cost_new(g, c, NULL, NULL, 0, &err) : NULL;
        if (!k) {
            printf("  %-22s failed: %s\n", base(argv[m]), err.msg);
            pl_graph_free(g);
            continue;
        }
        double t[N], s[N];
        one(k, &po, t, s);
        printf("  %-22s", base(argv[m]));
        for (int a = 0; a < N; a++)
            if (isfinite(t[a]))
                printf(" %8.3f (%6.2f)", t[a] * 1e3, s[a]);
            else
                printf(" %17s", "-");
        for (int a = 0; a < 3; a++)
            if (isfinite(t[4]) && isfinite(t[a]))
                printf(" %8.2fx", t[a] / t[4]);
            else
                printf(" %9s", "-");
        printf("\n");
        pl_cost_free(k);
        pl_graph_free(g);
    }
    pl_cluster_free(c);
    return 0;
}
