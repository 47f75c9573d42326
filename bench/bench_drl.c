/* bench_drl: AutoDeep's DRL placer against its baselines on the zoo (docs/learn.md, "The DRL
 * placer, measured"): per model, the simulated makespan of the paper's single-GPU baseline
 * (1 GPU), single (the best device), expert-layers (the paper's expert baseline), expert
 * (equal-cost stages judged by the simulator), HEFT and moirai, and of google-rl and drl with the
 * same episode budget over several seeds (median, and the range); then drl's speed-up over each,
 * beside the paper's claims (Fig. 6: up to 68 % faster than Google-RL on lightweight models, up to
 * 23 % on foundation models) and Table V's optimisation hours.
 *
 *   bench_drl CLUSTER MODEL...
 *     PLACER_DRL_EPISODES  episodes per google-rl and drl run (300)
 *     PLACER_DRL_SEEDS     seeds 1..N (3)
 *     PLACER_DRL_LIMIT     moirai's time limit in seconds (10) */
#include "placer/place.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fixed[] = {"single", "expert-layers", "expert", "heft", "moirai"};
static const char *learned[] = {"google-rl", "drl"};
enum { NF = 5, NL = 2, MAX_SEEDS = 16, SINGLE = 0, LAYERS = 1, STAGES = 2, HEFT = 3, MOIRAI = 4 };

/* The paper's models: lightweight (L) or foundation (F), and Table V's optimisation hours. */
static const struct {
    const char *model;
    char kind;
    double google_h, autodeep_h;
} paper[] = {{"rnnlm", 'L', 9.5, 0.3},        {"nmt_seq2seq", 'L', 12.8, 0.4},
             {"inception_v3", 'L', 8.6, 0.2}, {"resnext50_32x4d", 'L', 10.2, 0.3},
             {"bert_base", 'F', 8.3, 1.5},    {"transformer", 'F', 9.3, 1.5},
             {"gpt2_small", 'F', 18.7, 1.9},  {"vgg19", 'F', 6.1, 1.0}};

static void print_paper(const char *name)
{
    for (size_t i = 0; i < sizeof paper / sizeof *paper; i++)
        if (!strcmp(paper[i].model, name)) {
            printf("  %s %5.1f h %4.1f h", paper[i].kind == 'L' ? "light " : "found.",
                   paper[i].google_h, paper[i].autodeep_h);
            return;
        }
    printf("  %6s %7s %6s", "-", "-", "-");
}

/* The simulated makespan of algorithm `name` (INFINITY: no plan or it does not fit). */
static double makespan(const char *name, const pl_cost *k, const pl_place_opts *po)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    pl_err err = {""};
    pl_sim_result r;
    double t = INFINITY;
    if (pl_place(pl_algo_find(name), k, po, p, &err) == 0 &&
        pl_simulate(k, p, &(pl_sim_opts){0}, &r, &err) == 0) {
        t = r.oom ? INFINITY : r.makespan_s;
        pl_sim_result_free(&r);
    }
    pl_plan_free(p);
    return t;
}

/* The paper's Single-GPU baseline: everything on one GPU ("we only place the operation to CPU
 * when it has no GPU implementation": such an op on its fastest device), the best GPU. */
static double single_gpu(const pl_cost *k)
{
    double best = INFINITY;
    for (int d = 0; d < k->n_devs; d++) {
        if (k->c->devs[d].kind != PL_DEV_GPU) continue;
        pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
        for (int v = 0; v < k->n_ops; v++) {
            p->dev[v] = d;
            for (int e = 0; !isfinite(pl_cost_op_s(k, v, p->dev[v])) && e < k->n_devs; e++)
                p->dev[v] = e;
        }
        pl_sim_result r;
        pl_err err = {""};
        if (pl_simulate(k, p, &(pl_sim_opts){0}, &r, &err) == 0) {
            if (!r.oom) best = fmin(best, r.makespan_s);
            pl_sim_result_free(&r);
        }
        pl_plan_free(p);
    }
    return best;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void ratio(double num, double den)
{
    if (isfinite(num) && isfinite(den))
        printf(" %6.2fx", num / den);
    else
        printf(" %7s", "-");
}

typedef struct summary {
    double vs_heft[64];
    int n, worse_single, worse_expert;
} summary;

static void one_model(const char *file, const pl_cluster *c, int episodes, int seeds, double limit,
                      summary *S)
{
    const char *b = strrchr(file, '/');
    char name[128];
    snprintf(name, sizeof name, "%s", b ? b + 1 : file);
    if (strstr(name, ".onnx")) *strstr(name, ".onnx") = 0;
    pl_err err = {""};
    pl_graph *g = pl_graph_load(file, NULL, &err);
    pl_cost *k = g ? pl_cost_new(g, c, NULL, NULL, 0, &err) : NULL;
    if (!k) {
        printf("  %-18s failed: %s\n", name, err.msg);
        pl_graph_free(g);
        return;
    }
    double t[NF], med[NL], lo[NL], hi[NL];
    for (int a = 0; a < NF; a++)
        t[a] = makespan(fixed[a], k, &(pl_place_opts){.seed = 1, .time_limit_s = limit});
    for (int a = 0; a < NL; a++) {
        double v[MAX_SEEDS];
        for (int s = 0; s < seeds; s++)
            v[s] = makespan(learned[a], k,
                            &(pl_place_opts){.seed = (unsigned)s + 1, .iterations = episodes});
        med[a] = median(v, seeds), lo[a] = v[0], hi[a] = v[seeds - 1];
    }
    double gpu = single_gpu(k);
    printf("  %-18s %8.3f", name, gpu * 1e3);
    for (int a = 0; a < NF; a++)
        printf(" %8.3f", t[a] * 1e3);
    for (int a = 0; a < NL; a++)
        printf(" %7.3f [%7.3f-%7.3f]", med[a] * 1e3, lo[a] * 1e3, hi[a] * 1e3);
    ratio(t[SINGLE], med[1]), ratio(t[LAYERS], med[1]), ratio(t[HEFT], med[1]);
    ratio(t[MOIRAI], med[1]), ratio(med[0], med[1]), ratio(gpu, med[1]);
    print_paper(name);
    printf("\n");
    if (isfinite(med[1]) && S->n < 64) S->vs_heft[S->n++] = med[1] / t[HEFT];
    S->worse_single += hi[1] > t[SINGLE] * (1 + 1e-9);
    S->worse_expert += hi[1] > t[LAYERS] * (1 + 1e-9);
    pl_cost_free(k);
    pl_graph_free(g);
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
    const char *e = getenv("PLACER_DRL_EPISODES"), *s = getenv("PLACER_DRL_SEEDS");
    const char *l = getenv("PLACER_DRL_LIMIT");
    int episodes = e ? atoi(e) : 3000, seeds = s ? atoi(s) : 3;
    double limit = l ? atof(l) : 10;
    if (episodes < 1 || seeds < 1 || seeds > MAX_SEEDS || !(limit > 0))
        return fprintf(stderr, "bench_drl: bad PLACER_DRL_EPISODES, _SEEDS or _LIMIT\n"), 2;
    printf("%s; makespan ms, simulated; moirai %.0f s; google-rl and drl %d episodes each, "
           "seeds 1-%d: median [min-max]\n",
           c->name, limit, episodes, seeds);
    printf("  %-18s %8s %8s %8s %8s %8s %8s %25s %25s %7s %7s %7s %7s %7s %7s  %s\n", "model",
           "1 GPU", "single", "exp-lay", "exp-stg", "heft", "moirai", "google-rl", "drl", "/single",
           "/expert", "/heft", "/moirai", "/g-rl", "/1 GPU",
           "paper: class, Table V G-RL, AutoDeep");
    summary S = {.n = 0};
    for (int m = 2; m < argc; m++)
        one_model(argv[m], c, episodes, seeds, limit, &S);
    if (S.n)
        printf("  drl (median of seeds) / HEFT on the median model: %.3f (goal <= 1.05); "
               "models where a drl seed is worse than single: %d, than expert-layers: %d\n",
               median(S.vs_heft, S.n), S.worse_single, S.worse_expert);
    pl_cluster_free(c);
    return 0;
}
