/* bench_drl: AutoDeep's DRL placer on the zoo (docs/learn.md, "The DRL placer"): per model,
 * the makespan and search time of single, expert, HEFT, moirai and drl on one cluster, and
 * DRL's speed-up over single, expert and HEFT and its quality against moirai (the paper's Fig. 6),
 * beside Table V's optimisation overheads in hours (Google-RL and AutoDeep with TASO, on 4 K80s).
 *
 *   bench_drl CLUSTER MODEL...       (moirai and drl: PLACER_DRL_LIMIT seconds each, 20) */
#include "placer/place.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *algos[] = {"single", "expert", "heft", "moirai", "drl"};
enum { N = 5 };

/* AutoDeep's Table V: optimisation overhead in hours, per model the paper ran. */
static const struct {
    const char *model;
    double google_h, autodeep_h;
} table_v[] = {{"rnnlm", 9.5, 0.3},        {"nmt_seq2seq", 12.8, 0.4},
               {"inception_v3", 8.6, 0.2}, {"resnext50_32x4d", 10.2, 0.3},
               {"bert_base", 8.3, 1.5},    {"transformer", 9.3, 1.5},
               {"gpt2_small", 18.7, 1.9},  {"vgg19", 6.1, 1.0}};

static void print_table_v(const char *file)
{
    char name[256];
    snprintf(name, sizeof name, "%s", file);
    char *dot = strstr(name, ".onnx");
    if (dot) *dot = 0;
    for (size_t i = 0; i < sizeof table_v / sizeof *table_v; i++)
        if (!strcmp(table_v[i].model, name)) {
            printf(" %6.1f h %6.1f h", table_v[i].google_h, table_v[i].autodeep_h);
            return;
        }
    printf(" %8s %8s", "-", "-");
}

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
    printf(" %9s %9s %9s %9s %8s %8s\n", "drl/single", "drl/expert", "drl/heft", "drl/moirai",
           "paper:G-RL", "AutoDeep");
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
        for (int a = 0; a < 4; a++)
            if (isfinite(t[4]) && isfinite(t[a]))
                printf(" %8.2fx", t[a] / t[4]);
            else
                printf(" %9s", "-");
        print_table_v(base(argv[m]));
        printf("\n");
        pl_cost_free(k);
        pl_graph_free(g);
    }
    pl_cluster_free(c);
    return 0;
}
