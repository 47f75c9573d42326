/* train.c: `placer train MODEL --cluster C --batch N`: the training of a model deployed on a
 * heterogeneous set of GPUs (TAG): per op group its devices and option, the SFB choices, the
 * per-iteration time and peak memory per device, beside DP-NCCL, DP-NCCL-P, Horovod, data
 * parallelism synchronised after backward, a HeteroG-like search, FlexFlow's MCMC and a placer
 * of one model (docs/train.md). */
#include "cli.h"
#include "placer/dist.h"
#include "placer/report.h"
#include "placer/runtime.h"
#include "placer/train.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help_text =
    "usage: placer train MODEL --cluster C --batch N [--algo A] [--budget 300 | --budget 60s]\n"
    "                    [--no-sfb] [--max-groups G] [--seed S] [--placer heft] [--json]\n"
    "                    [--prior uniform|gnn] [--prior-file F] [-o FILE] [--cost-params F]\n"
    "                    [--no-calibration] [--dim N=V]... [--input NAME=SIZES]...\n"
    "  --batch N      the global batch size (default: the model's own)\n"
    "  --algo A       the answer shown in detail: tag, dp, dp-p, horovod, dp-sync, heterog,\n"
    "                 flexflow-mcmc (FlexFlow's MCMC, MCTS's budget and seed); default: the\n"
    "                 fastest row that fits (the recommended answer, whichever part found it)\n"
    "  --budget B     TAG's MCTS: B iterations (default 300), or a time (60s); FlexFlow's\n"
    "                 MCMC makes as many proposals as MCTS's trees ran iterations in all\n"
    "  --no-sfb       no sufficient factor broadcasting\n"
    "  --max-groups G op groups (METIS; default 60)\n"
    "  --placer P     the model-parallel baseline's placer (default heft; `none` to skip)\n"
    "  --prior P      MCTS's priors: uniform, or gnn (TAG's GNN, weights from --prior-file,\n"
    "                 default models/priors/tag-gnn.weights; a tree with uniform priors grows\n"
    "                 too, same seed and budget); default: gnn when those weights are there\n"
    "  -o FILE        the placer-train/1 document (as --json prints it), written atomically\n"
    "  --dim N=V      bind a symbolic dimension (e.g. --dim batch=1); repeatable\n"
    "  --input NAME=SIZES  a graph input's shape (e.g. --input x=1,3,224,224); repeatable\n"
    "exit status: 0 done, 1 the model fits no strategy, 2 bad input or failure\n";

typedef struct train_opts {
    cli_common co;
    int batch, max_groups;
    const char *algo, *out, *placer, *prior_file;
    bool algo_given;
    int prior; /* PRIOR_AUTO (not given), PRIOR_UNIFORM or PRIOR_GNN */
    pl_train_search_opts so;
} train_opts;

enum { PRIOR_AUTO, PRIOR_UNIFORM, PRIOR_GNN };
enum { B_TAG, B_DP, B_DPP, B_HOROVOD, B_DPSYNC, B_HETEROG, B_MCMC, B_PLACER, B_COUNT };
static const char *bname[B_COUNT] = {"tag",     "dp",      "dp-p",          "horovod",
                                     "dp-sync", "heterog", "flexflow-mcmc", "placer"};

typedef struct outcome {
    bool ran, ok;
    char msg[PL_ERR_MAX];
    pl_train_strategy *s; /* NULL for the placer */
    pl_plan *plan;        /* the placer's placement of the training graph */
    pl_train_eval e;
} outcome;

/* ---- options ---- */

static int parse_budget(const char *v, train_opts *o)
{
    long n;
    if (v && strspn(v, "0123456789") == strlen(v) && *v) {
        if (cli_count("train", "--budget", v, 1, 10000000, &n) < 0) return -1;
        o->so.iterations = (int)n;
        return 0;
    }
    return cli_seconds("train", "--budget", v, &o->so.time_s);
}

enum { NO_SFB = CLI_OWN, BATCH, MAX_GROUPS, BUDGET, SEED, ALGO, PLACER, PRIOR, PRIOR_FILE };
static const struct option options[] = {{"no-sfb", no_argument, NULL, NO_SFB},
                                        {"batch", required_argument, NULL, BATCH},
                                        {"max-groups", required_argument, NULL, MAX_GROUPS},
                                        {"budget", required_argument, NULL, BUDGET},
                                        {"seed", required_argument, NULL, SEED},
                                        {"algo", required_argument, NULL, ALGO},
                                        {"placer", required_argument, NULL, PLACER},
                                        {"prior", required_argument, NULL, PRIOR},
                                        {"prior-file", required_argument, NULL, PRIOR_FILE},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

/* --algo, --placer and --prior: a name of a list. */
static int take_name(train_opts *o, int c, const char *v)
{
    switch (c) {
    case ALGO:
        for (int b = 0; b < B_PLACER && v; b++)
            if (!strcmp(v, bname[b])) return o->algo = v, o->algo_given = true, 0;
        return cli_error("train",
                         "--algo: '%s': give tag, dp, dp-p, horovod, dp-sync, heterog or "
                         "flexflow-mcmc",
                         v ? v : "");
    case PLACER:
        if (!v || (strcmp(v, "none") && !pl_algo_find(v)))
            return cli_error("train", "--placer: '%s': a placer of `placer place --help`, or none",
                             v ? v : "");
        return o->placer = v, 0;
    default: /* PRIOR */
        if (!v || (strcmp(v, "uniform") && strcmp(v, "gnn")))
            return cli_error("train", "--prior: '%s': give uniform or gnn", v ? v : "");
        return o->prior = strcmp(v, "gnn") ? PRIOR_UNIFORM : PRIOR_GNN, 0;
    }
}

static int take(void *p, int c, const char *v)
{
    train_opts *o = p;
    long n;
    switch (c) {
    case NO_SFB:
        return o->so.no_sfb = true, 0;
    case BATCH:
        if (cli_count("train", "--batch", v, 1, 1 << 24, &n) < 0) return -1;
        return o->batch = (int)n, 0;
    case MAX_GROUPS:
        if (cli_count("train", "--max-groups", v, 1, 10000, &n) < 0) return -1;
        return o->max_groups = (int)n, 0;
    case BUDGET:
        return parse_budget(v, o);
    case SEED:
        return cli_seed("train", "--seed", v, &o->so.seed);
    case PRIOR_FILE:
        return cli_file("train", "--prior-file", v, "a file", &o->prior_file);
    case 'o':
        return cli_file("train", "-o", v, "a file", &o->out);
    default:
        return take_name(o, c, v);
    }
}

/* The options, checked together; *help when --help was asked (and printed). */
static cli_exit parse(int argc, char **argv, train_opts *o, bool *help)
{
    memset(o, 0, sizeof *o);
    o->algo = "tag", o->placer = "heft", o->max_groups = 60;
    o->co.refuse = CLI_NO_PROFILE | CLI_NO_CONTENTION;
    cli_args g = CLI_ARGS("train", "ho:", help_text, true);
    cli_exit parsed = cli_parse(&g, &o->co, take, o);
    if (!cli_ok(parsed) || (*help = g.asked_help)) return parsed;
    if (!o->co.model) return cli_fail("train", "which model? (placer train --help)");
    if (!o->co.cluster) return cli_fail("train", "which cluster? give --cluster FILE");
    if (o->prior_file && o->prior == PRIOR_UNIFORM)
        return cli_fail("train", "--prior-file goes with --prior gnn");
    return CLI_EXIT_OK;
}

/* ---- running ---- */

/* MCTS's best so far after each iteration, as its progress says it, per tree (a tree's
 * iterations count from 1 again): the "mcts_history" of --json, drawn by `placer report`. */
typedef struct mcts_trace {
    int n, cap, trees;
    int *tree, *it;
    double *best_s;
} mcts_trace;

static void progress(int it, double best_s, double dp_s, void *user)
{
    mcts_trace *t = user;
    if (pl_dist_rank() != 0) return; /* rank 0's tree speaks for the others */
    cli_progress("train: MCTS iteration %d, best %.3f ms (DP-NCCL %.3f ms)", it, best_s * 1e3,
                 dp_s * 1e3);
    if (it == 1) t->trees++;
    pl_grow((void **)&t->tree, &t->cap, t->n, sizeof *t->tree); /* the others follow it */
    t->it = pl_realloc(t->it, (size_t)t->cap * sizeof *t->it);
    t->best_s = pl_realloc(t->best_s, (size_t)t->cap * sizeof *t->best_s);
    t->tree[t->n] = t->trees - 1, t->it[t->n] = it, t->best_s[t->n++] = best_s;
}

/* The trees in the order they grow: the uniform one first when both do (uniform_too). */
static const char *tree_name(const train_opts *o, int tree)
{
    return o->so.prior && (!o->so.uniform_too || tree > 0) ? "mcts-gnn" : "mcts-uniform";
}

static json_t *history_json(const train_opts *o, const mcts_trace *t)
{
    json_t *a = json_array();
    for (int i = 0, j; i < t->n; i = j) {
        json_t *its = json_array(), *best = json_array();
        for (j = i; j < t->n && t->tree[j] == t->tree[i]; j++)
            if (isfinite(t->best_s[j])) /* nothing that fits found yet: no point */
                json_array_append_new(its, json_integer(t->it[j])),
                    json_array_append_new(best, json_real(t->best_s[j]));
        json_array_append_new(a, json_pack("{s:s, s:o, s:o}", "tree", tree_name(o, t->tree[i]),
                                           "iteration", its, "best_s", best));
    }
    return a;
}

static void run_strategy(const pl_train_ctx *x, pl_train_strategy *s, outcome *r)
{
    pl_err err = {""};
    r->ran = true, r->s = s;
    r->ok = s && pl_train_evaluate(x, s, &r->e, &err) == 0;
    if (!r->ok) snprintf(r->msg, sizeof r->msg, "%s", err.msg);
}

/* FlexFlow's MCMC with MCTS's budget, counted as MCTS counted it (the iterations it ran, so
 * that a time budget gives both the same number of evaluations) and its seed. */
static void run_mcmc(const pl_train_ctx *x, const train_opts *o, const pl_train_search_result *sr,
                     outcome *r)
{
    pl_err err = {""};
    cli_progress("train: FlexFlow's MCMC ...");
    int n = pl_train_search_iterations(sr); /* both trees' when two grew: TAG's whole search */
    pl_train_mcmc_opts mo = {.iterations = n > 0 ? n : o->so.iterations, .seed = o->so.seed};
    pl_train_strategy *s = pl_train_mcmc(x, &mo, NULL, &err);
    if (s)
        run_strategy(x, s, r);
    else
        r->ran = true, snprintf(r->msg, sizeof r->msg, "%s", err.msg);
}

static void run_all(const pl_train_ctx *x, const train_opts *o, outcome *b,
                    pl_train_search_result *sr, mcts_trace *trace)
{
    pl_err err = {""};
    run_strategy(x, pl_train_dp(x, false, false), &b[B_DP]);
    run_strategy(x, pl_train_dp(x, true, false), &b[B_DPP]);
    run_strategy(x, pl_train_horovod(x, NULL, &err), &b[B_HOROVOD]);
    if (!b[B_HOROVOD].ok && !b[B_HOROVOD].s)
        snprintf(b[B_HOROVOD].msg, sizeof b[B_HOROVOD].msg, "%s", err.msg);
    run_strategy(x, pl_train_dp_sync(x), &b[B_DPSYNC]);
    cli_progress("train: the HeteroG-like search ...");
    pl_train_strategy *h = pl_train_heterog(x, &err);
    if (h)
        run_strategy(x, h, &b[B_HETEROG]);
    else
        b[B_HETEROG].ran = true, snprintf(b[B_HETEROG].msg, sizeof b[B_HETEROG].msg, "%s", err.msg);
    if (strcmp(o->placer, "none")) {
        b[B_PLACER].ran = true;
        /* every rank calls it here together: a placer that splits its search (moirai) does */
        pl_place_opts po = {.seed = o->so.seed, .use_pool = x->dist};
        b[B_PLACER].ok =
            pl_train_placer(x, o->placer, &po, &b[B_PLACER].e, &b[B_PLACER].plan, &err) == 0;
        if (!b[B_PLACER].ok) snprintf(b[B_PLACER].msg, sizeof b[B_PLACER].msg, "%s", err.msg);
    }
    pl_train_search_opts so = o->so;
    so.progress = progress, so.progress_user = trace;
    b[B_TAG].ran = true;
    err.msg[0] = 0;
    b[B_TAG].ok = pl_train_search(x, &so, sr, &err) == 0;
    if (b[B_TAG].ok)
        b[B_TAG].s = sr->best, b[B_TAG].e = sr->eval;
    else
        snprintf(b[B_TAG].msg, sizeof b[B_TAG].msg, "%s", err.msg);
    run_mcmc(x, o, sr, &b[B_MCMC]);
}

/* ---- the answer ---- */

/* The recommended answer: the fastest row that ran and fits (ties: the earlier row, TAG
 * first); -1 when none does. */
static int recommend(const outcome *b)
{
    int best = -1;
    for (int k = 0; k < B_COUNT; k++)
        if (b[k].ran && b[k].ok && !b[k].e.oom &&
            (best < 0 || b[k].e.iteration_s < b[best].e.iteration_s))
            best = k;
    return best;
}

static const char *row_name(int k, const train_opts *o);

/* Which part of placer found row k's answer: a baseline's row its own name; TAG's, the last
 * part of its search that improved it. */
static const char *found_by(int k, const pl_train_search_result *sr, const train_opts *o)
{
    return k == B_TAG ? pl_train_found_name(sr->found_by) : row_name(k, o);
}

static const char *row_name(int k, const train_opts *o)
{
    return k == B_PLACER ? o->placer : bname[k];
}

/* TAG's parts in turn (docs/train.md, "Who found the answer"): the two MCTS trees alone, then
 * the refinement, then SFB; each one's best (INFINITY: nothing that fits), `ran` false when
 * it did not run. */
typedef struct part {
    const char *name;
    bool ran;
    double s;
    const pl_train_tree_result *tree; /* an MCTS tree's, else NULL */
    const char *by;                   /* the part that found s: itself or one before */
} part;
enum { P_UNIFORM, P_GNN, P_REFINE, P_SFB, P_COUNT };

/* Who found a tree's best: the tree, or DP-NCCL (the search's first strategy) when nothing
 * the tree tried beat it. */
static const char *tree_by(const pl_train_tree_result *t, const pl_train_search_result *sr,
                           const char *tree)
{
    return !(t->best_s < sr->dp_s) ? bname[B_DP] : tree;
}

static void tag_parts(const pl_train_search_result *sr, const train_opts *o, part *p)
{
    const pl_train_tree_result *u = &sr->uniform, *g = &sr->prior;
    const char *after_refine = pl_train_found_name(sr->refined_by);
    p[P_UNIFORM] = (part){"mcts-uniform", u->ran, u->best_s, u, tree_by(u, sr, "mcts-uniform")};
    p[P_GNN] = (part){"mcts-gnn", g->ran, g->best_s, g, tree_by(g, sr, "mcts-gnn")};
    p[P_REFINE] = (part){"refinement", !o->so.no_refine && isfinite(sr->refined_s), sr->refined_s,
                         NULL, after_refine};
    p[P_SFB] = (part){"sfb", !o->so.no_sfb && isfinite(sr->sfb_s), sr->sfb_s, NULL,
                      sr->sfb_applied ? "sfb" : after_refine};
}

/* What part k's row says beside its time. */
static void part_note(const part *p, int k, const pl_train_search_result *sr, const train_opts *o,
                      char *buf, size_t n)
{
    const pl_train_tree_result *t = p[k].tree;
    if (!p[k].ran)
        snprintf(buf, n, "not run%s",
                 k != P_GNN                  ? ""
                 : o->prior == PRIOR_UNIFORM ? " (--prior uniform)"
                                             : " (no GNN weights)");
    else if (t && t->iterations_to_beat_dp >= 0)
        snprintf(buf, n, "%d iterations, beat DP-NCCL at %d%s", t->iterations,
                 t->iterations_to_beat_dp, t->at_start ? ", its start" : "");
    else if (t)
        snprintf(buf, n, "%d iterations, never beat DP-NCCL", t->iterations);
    else if (k == P_REFINE)
        snprintf(buf, n, "from the faster tree's best and from the start");
    else
        snprintf(buf, n, "%d gradient(s) duplicated", sr->sfb_applied);
}

/* The parts' rows, before TAG's own (its answer once the OOM fallback has run). */
static void part_rows(pl_table *t, const pl_train_search_result *sr, const train_opts *o, double dp)
{
    part p[P_COUNT];
    tag_parts(sr, o, p);
    for (int k = 0; k < P_COUNT; k++) {
        char name[64], note[128], sp[32] = "-", ms[32] = "-";
        snprintf(name, sizeof name, "tag: %s", p[k].name);
        part_note(p, k, sr, o, note, sizeof note);
        if (p[k].ran && isfinite(p[k].s)) snprintf(ms, sizeof ms, "%.3f", p[k].s * 1e3);
        if (p[k].ran && isfinite(p[k].s) && !isnan(dp))
            snprintf(sp, sizeof sp, "%.2fx", dp / p[k].s);
        pl_table_row(t, "%s|%s|%s|-|%s|%s", name, ms, sp, p[k].ran ? p[k].by : "-", note);
    }
}

/* ---- printing ---- */

static double peak_max(const pl_train_eval *e)
{
    double m = 0;
    for (int d = 0; d < e->n_devs; d++)
        m = fmax(m, e->peak_mem_bytes[d]);
    return m;
}

static void devices_of(const pl_train_ctx *x, const pl_train_strategy *s, int i, char *buf,
                       size_t n)
{
    buf[0] = 0;
    int all = 1;
    for (int j = 0; j < x->dg.n; j++)
        all &= s->P[(size_t)i * x->dg.n + j];
    if (all) {
        snprintf(buf, n, "all");
        return;
    }
    for (int j = 0; j < x->dg.n; j++)
        if (s->P[(size_t)i * x->dg.n + j])
            snprintf(buf + strlen(buf), n - strlen(buf), "%sdg%d", buf[0] ? "," : "", j);
}

static void print_strategy(const pl_train_ctx *x, const char *name, const pl_train_strategy *s)
{
    printf("\n%s's strategy, op groups in descending time:\n", name);
    pl_table *t = pl_table_new("group|>ops|>time ms|>params MB|device groups|option|>SFB ops");
    int *order = pl_train_group_order(x);
    for (int k = 0; k < x->og.n; k++) {
        int i = order[k], sfb = 0;
        for (int q = x->og.off[i]; s->sfb && q < x->og.off[i + 1]; q++)
            sfb += s->sfb[x->og.op[q]];
        char devs[256];
        devices_of(x, s, i, devs, sizeof devs);
        pl_table_row(t, "%d|%d|%.3f|%.1f|%s|%s|%d", i, x->og.off[i + 1] - x->og.off[i],
                     x->og.time_s[i] * 1e3, x->og.param_bytes[i] / 1e6, devs,
                     pl_train_option_name(s->O[i]), sfb);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    free(order);
}

static void print_groups(const pl_train_ctx *x)
{
    printf("device groups:");
    for (int j = 0; j < x->dg.n; j++) {
        const pl_device *d = &x->c->devs[x->dg.dev[x->dg.off[j]]];
        printf("%s dg%d %dx %s%s%s", j ? "," : "", j, x->dg.off[j + 1] - x->dg.off[j], d->model,
               d->host[0] ? " on " : "", d->host);
    }
    printf("\n");
}

static void print_table(const pl_train_ctx *x, const outcome *b, const train_opts *o,
                        const pl_train_search_result *sr, int best)
{
    double dp = b[B_DP].ok && !b[B_DP].e.oom ? b[B_DP].e.iteration_s : NAN;
    pl_table *t = pl_table_new(
        "algorithm|>iteration ms|>speed-up over DP-NCCL|>largest peak memory|found by|note");
    for (int k = 0; k < B_COUNT; k++) {
        const outcome *r = &b[k];
        if (!r->ran) continue;
        if (k == B_TAG) part_rows(t, sr, o, dp);
        char name[64], mem[32], sp[32];
        snprintf(name, sizeof name, "%s%s", k == B_PLACER ? o->placer : bname[k],
                 k == B_PLACER ? " (model parallel)" : "");
        if (!r->ok) {
            pl_table_row(t, "%s|-|-|-|-|not eligible, failed: %s", name, r->msg);
            continue;
        }
        if (r->e.oom || isnan(dp))
            snprintf(sp, sizeof sp, "-");
        else
            snprintf(sp, sizeof sp, "%.2fx", dp / r->e.iteration_s);
        pl_table_row(t, "%s|%.3f|%s|%s|%s|%s", name, r->e.iteration_s * 1e3, sp,
                     pl_fmt_bytes(peak_max(&r->e), mem, sizeof mem), found_by(k, sr, o),
                     r->e.oom    ? "not eligible: out of memory"
                     : k == best ? "recommended (the fastest that fits)"
                                 : "");
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    (void)x;
}

/* The placer's answer: its training ops per device. */
static void print_placement(const pl_train_ctx *x, const pl_plan *p, const char *name)
{
    printf("\n%s's placement of the training graph's %d ops (model parallel):\n", name, p->n_ops);
    pl_table *t = pl_table_new("device|model|>ops");
    for (int d = 0; d < x->c->n_devs; d++) {
        int n = 0;
        for (int v = 0; v < p->n_ops; v++)
            n += p->dev[v] == d;
        if (n) pl_table_row(t, "%s|%s|%d", x->c->devs[d].name, x->c->devs[d].model, n);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

/* The line under the table: which answer is shown, and which part of placer found it. */
static void print_answer(const outcome *b, const train_opts *o, const pl_train_search_result *sr,
                         int chosen, int best)
{
    if (best < 0) return;
    printf("\nrecommended: %s, %.3f ms per iteration, found by ", row_name(best, o),
           b[best].e.iteration_s * 1e3);
    if (best == B_TAG && sr->found_by == PL_FOUND_DP)
        printf("the DP-NCCL baseline, which TAG's search kept (nothing beat it)");
    else if (best == B_TAG)
        printf("TAG's %s", found_by(best, sr, o));
    else
        printf("the %s baseline", row_name(best, o));
    if (best != B_TAG && b[B_TAG].ok)
        printf(" (TAG's own answer: %.3f ms, found by %s)", b[B_TAG].e.iteration_s * 1e3,
               found_by(B_TAG, sr, o));
    for (int k = 0; best == B_TAG && k < B_COUNT; k++)
        if (k != B_TAG && b[k].ok && !b[k].e.oom && b[k].e.iteration_s == b[B_TAG].e.iteration_s)
            printf("; the %s row is as fast", row_name(k, o));
    if (chosen != best) printf("; shown below: %s, as --algo asks", row_name(chosen, o));
    printf("\n");
}

static void print_memory(const pl_train_ctx *x, const outcome *r, const char *name)
{
    printf("\npeak memory per device (%s):\n", name);
    pl_table *t = pl_table_new("device|model|>peak|>capacity|>use");
    for (int d = 0; d < x->c->n_devs; d++) {
        if (x->dg.group_of[d] < 0) continue;
        const pl_device *dv = &x->c->devs[d];
        char a[32], b[32];
        pl_table_row(t, "%s|%s|%s|%s|%.0f%%", dv->name, dv->model,
                     pl_fmt_bytes(r->e.peak_mem_bytes[d], a, sizeof a),
                     pl_fmt_bytes(dv->memory_bytes, b, sizeof b),
                     dv->memory_bytes > 0 ? 100 * r->e.peak_mem_bytes[d] / dv->memory_bytes : 0);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

/* ---- JSON ---- */

static json_t *strategy_json(const pl_train_ctx *x, const pl_train_strategy *s)
{
    json_t *groups = json_array();
    for (int i = 0; i < x->og.n; i++) {
        json_t *g = json_object(), *devs = json_array(), *sfb = json_array();
        for (int j = 0; j < x->dg.n; j++)
            if (s->P[(size_t)i * x->dg.n + j])
                for (int k = x->dg.off[j]; k < x->dg.off[j + 1]; k++)
                    json_array_append_new(devs, json_string(x->c->devs[x->dg.dev[k]].name));
        for (int q = x->og.off[i]; s->sfb && q < x->og.off[i + 1]; q++)
            if (s->sfb[x->og.op[q]])
                json_array_append_new(sfb, json_string(x->t->g->ops[x->og.op[q]].name));
        json_object_set_new(g, "group", json_integer(i));
        json_object_set_new(g, "ops", json_integer(x->og.off[i + 1] - x->og.off[i]));
        json_object_set_new(g, "time_s", json_real(x->og.time_s[i]));
        json_object_set_new(g, "param_bytes", json_real(x->og.param_bytes[i]));
        json_object_set_new(g, "devices", devs);
        json_object_set_new(g, "option", json_string(pl_train_option_name(s->O[i])));
        json_object_set_new(g, "sfb_ops", sfb);
        json_array_append_new(groups, g);
    }
    return groups;
}

/* The placer's answer: per training op, its device. */
static json_t *placement_json(const pl_train_ctx *x, const pl_plan *p)
{
    json_t *a = json_array();
    for (int v = 0; v < p->n_ops; v++)
        json_array_append_new(a, json_pack("{s:s,s:s}", "op", x->t->g->ops[v].name, "device",
                                           x->c->devs[p->dev[v]].name));
    return a;
}

/* A time, or null when the search did not reach it (or nothing fitted). */
static json_t *finite_or_null(double t)
{
    return isfinite(t) ? json_real(t) : json_null();
}

/* TAG's parts (tag_parts): each one's best, null when it did not run. */
static json_t *parts_json(const pl_train_search_result *sr, const train_opts *o)
{
    json_t *j = json_object();
    part p[P_COUNT];
    tag_parts(sr, o, p);
    for (int k = 0; k < P_COUNT; k++) {
        if (!p[k].ran) {
            json_object_set_new(j, p[k].name, json_null());
            continue;
        }
        json_t *v = json_pack("{s:o}", "iteration_s", finite_or_null(p[k].s));
        const pl_train_tree_result *t = p[k].tree;
        if (t) json_object_set_new(v, "iterations", json_integer(t->iterations));
        if (t)
            json_object_set_new(v, "iterations_to_beat_dp",
                                t->iterations_to_beat_dp >= 0
                                    ? json_integer(t->iterations_to_beat_dp)
                                    : json_null());
        if (k == P_SFB) json_object_set_new(v, "gradients", json_integer(sr->sfb_applied));
        json_object_set_new(v, "found_by", json_string(p[k].by));
        json_object_set_new(j, p[k].name, v);
    }
    return j;
}

static json_t *doc_json(const pl_train_ctx *x, const train_opts *o, const outcome *b,
                        const pl_train_search_result *sr, const mcts_trace *trace, int chosen)
{
    json_t *j = json_object(), *base = json_object(), *peak = json_object();
    json_object_set_new(j, "format", json_string("placer-train/1"));
    json_object_set_new(j, "model", json_string(o->co.model));
    json_object_set_new(j, "cluster", json_string(o->co.cluster));
    json_object_set_new(j, "batch", json_integer(x->t->batch));
    json_object_set_new(j, "algo", json_string(row_name(chosen, o)));
    /* a row that failed found nothing: null, as its "-" in the table */
    json_object_set_new(j, "found_by",
                        b[chosen].ok ? json_string(found_by(chosen, sr, o)) : json_null());
    int best = recommend(b);
    json_object_set_new(j, "recommended", best >= 0 ? json_string(row_name(best, o)) : json_null());
    json_object_set_new(j, "tag_found_by",
                        b[B_TAG].ok ? json_string(found_by(B_TAG, sr, o)) : json_null());
    const outcome *c = &b[chosen];
    json_object_set_new(j, "iteration_s", c->ok ? json_real(c->e.iteration_s) : json_null());
    if (c->ok) cli_band_json(j, c->e.band, c->e.basis);
    json_object_set_new(j, "fits_memory", json_boolean(c->ok && !c->e.oom));
    for (int d = 0; c->ok && d < c->e.n_devs; d++)
        if (x->dg.group_of[d] >= 0)
            json_object_set_new(peak, x->c->devs[d].name, json_real(c->e.peak_mem_bytes[d]));
    json_object_set_new(j, "peak_memory_bytes", peak);
    for (int k = 0; k < B_COUNT; k++) {
        if (!b[k].ran) continue;
        const char *name = k == B_PLACER ? o->placer : bname[k];
        json_object_set_new(base, name,
                            !b[k].ok     ? json_string("failed")
                            : b[k].e.oom ? json_string("oom")
                                         : json_real(b[k].e.iteration_s));
    }
    json_object_set_new(j, "baselines", base);
    json_object_set_new(j, "ranks", json_integer(pl_dist_size()));
    json_object_set_new(j, "mcts_iterations", json_integer(sr->iterations));
    json_object_set_new(j, "mcts_iteration_s", finite_or_null(sr->mcts_s));
    json_object_set_new(j, "refined_from_mcts_s", finite_or_null(sr->refined_mcts_s));
    json_object_set_new(j, "refined_from_root_s", finite_or_null(sr->refined_root_s));
    json_object_set_new(j, "prior", json_string(o->so.prior ? "gnn" : "uniform"));
    json_object_set_new(j, "mcts_iterations_to_beat_dp",
                        sr->iterations_to_beat_dp >= 0 ? json_integer(sr->iterations_to_beat_dp)
                                                       : json_null());
    json_object_set_new(j, "tag_parts", parts_json(sr, o));
    json_object_set_new(j, "mcts_history", history_json(o, trace));
    json_object_set_new(j, "search_s", json_real(sr->search_s));
    json_object_set_new(j, "sfb_gradients", json_integer(sr->sfb_applied));
    json_object_set_new(j, "sfb_rejected", json_integer(sr->sfb_rejected));
    json_object_set_new(j, "op_groups", json_integer(x->og.n));
    json_object_set_new(j, "device_groups", json_integer(x->dg.n));
    if (c->s) json_object_set_new(j, "strategy", strategy_json(x, c->s));
    if (c->ok && c->plan) json_object_set_new(j, "placement", placement_json(x, c->plan));
    return j;
}

/* ---- the verb ---- */

/* TAG's GNN from --prior-file, else the shipped weights (made by `placer learn-prior`): with
 * --prior gnn, or by default when the shipped weights are there. A tree with uniform priors
 * grows beside it, so that each is credited with what it found alone. */
static cli_exit load_prior(train_opts *o, pl_tag_gnn **m)
{
    char path[4096];
    pl_err err = {""};
    if (o->prior == PRIOR_UNIFORM) return CLI_EXIT_OK;
    if (o->prior_file)
        snprintf(path, sizeof path, "%s", o->prior_file);
    else if (pl_own_file("share/placer/priors/tag-gnn.weights", "models/priors/tag-gnn.weights",
                         path, sizeof path, &err) < 0)
        return o->prior == PRIOR_AUTO ? CLI_EXIT_OK
                                      : cli_fail("train",
                                                 "--prior gnn: no weights (give --prior-file, or "
                                                 "train them with `placer learn-prior`): %s",
                                                 err.msg);
    *m = pl_tag_gnn_new(1);
    if (pl_tag_gnn_load(*m, path, &err) < 0)
        return cli_fail("train", "%s: %s",
                        o->prior == PRIOR_GNN ? "--prior gnn"
                                              : "TAG's GNN prior (or --prior uniform)",
                        err.msg);
    o->so.prior = pl_tag_gnn_prior, o->so.prior_user = *m, o->so.uniform_too = true;
    return CLI_EXIT_OK;
}

static cli_exit load(const train_opts *o, pl_graph **fwd, pl_cluster **c, pl_train_graph **t,
                     pl_cost_params *params)
{
    pl_err err = {""};
    pl_load_opts lo = {.dims = (const char **)o->co.dims,
                       .n_dims = o->co.n_dims,
                       .input_shapes = (const char **)o->co.shapes,
                       .n_input_shapes = o->co.n_shapes};
    *fwd = pl_graph_load(o->co.model, &lo, &err);
    if (!*fwd) return cli_fail("train", "%s", err.msg);
    cli_print_warnings(*fwd);
    *c = pl_cluster_load(o->co.cluster, &err);
    if (!*c) return cli_fail("train", "%s", err.msg);
    if (cli_cost_params("train", &o->co, (const pl_cluster *const *)c, 1, params) < 0)
        return CLI_EXIT_BAD_INPUT;
    pl_train_opts to = {.batch = o->batch};
    if (pl_train_graph_build(*fwd, &to, t, &err) < 0) return cli_fail("train", "%s", err.msg);
    return CLI_EXIT_OK;
}

cli_exit cli_train(int argc, char **argv)
{
    train_opts o;
    bool help;
    cli_exit parsed = parse(argc, argv, &o, &help);
    if (!cli_ok(parsed) || help) return parsed;
    pl_graph *fwd = NULL;
    pl_cluster *c = NULL;
    pl_train_graph *t = NULL;
    pl_cost_params params;
    pl_tag_gnn *gnn = NULL;
    cli_exit rc = load_prior(&o, &gnn);
    if (cli_ok(rc)) rc = load(&o, &fwd, &c, &t, &params);
    pl_train_ctx x;
    pl_err err = {""};
    if (cli_ok(rc) && pl_train_ctx_init(&x, t, c, &params, o.max_groups, &err) < 0)
        rc = cli_fail("train", "%s", err.msg);
    /* under mpirun the searches spread over the ranks (docs/dist.md, "train"); every rank
     * makes the same calls and gets the same answer, and rank 0 alone prints and writes */
    x.dist = true;
    if (!cli_ok(rc)) {
        pl_train_graph_free(t), pl_cluster_free(c), pl_graph_free(fwd), pl_tag_gnn_free(gnn);
        return rc;
    }
    outcome b[B_COUNT];
    memset(b, 0, sizeof b);
    pl_train_search_result sr = {0};
    mcts_trace trace = {0};
    run_all(&x, &o, b, &sr, &trace);
    /* the answer: the one asked for, else the fastest row that fits (docs/train.md) */
    int best = recommend(b), chosen = o.algo_given || best < 0 ? B_TAG : best;
    for (int k = 0; o.algo_given && k < B_PLACER; k++)
        if (!strcmp(o.algo, bname[k])) chosen = k;
    /* TAG's search failing (unusable prior weights, a lost rank's strategy) is the verb's
     * failure even when a baseline fits: its answer would hide it */
    bool tag_failed = !b[B_TAG].ok && !strstr(b[B_TAG].msg, "does not fit");
    int failed = tag_failed ? B_TAG : chosen;
    rc = tag_failed ? CLI_EXIT_BAD_INPUT
         : !b[chosen].ok
             ? (strstr(b[chosen].msg, "does not fit") ? CLI_EXIT_INFEASIBLE : CLI_EXIT_BAD_INPUT)
         : b[chosen].e.oom ? CLI_EXIT_INFEASIBLE
                           : CLI_EXIT_OK;
    json_t *doc = NULL;
    if (pl_dist_rank() != 0) goto done;
    if (!b[failed].ok) fprintf(stderr, "placer train: %s: %s\n", bname[failed], b[failed].msg);
    doc = doc_json(&x, &o, b, &sr, &trace, chosen);
    if (o.out && !cli_ok(cli_write_json("train", o.out, doc))) rc = CLI_EXIT_BAD_INPUT;
    if (o.co.json)
        cli_json_out(doc);
    else {
        json_decref(doc);
        int n_bwd = 0, n_opt = 0;
        for (int v = 0; v < t->g->n_ops; v++)
            n_bwd += t->phase[v] == PL_PHASE_BWD, n_opt += t->phase[v] == PL_PHASE_OPT;
        printf("%s training at batch %d: %d ops (%d forward, %d backward, %d optimizer), %d "
               "parameters\n",
               o.co.model, t->batch, t->g->n_ops, t->n_fwd, n_bwd, n_opt, t->n_params);
        printf("%s: ", c->name);
        print_groups(&x);
        printf("op groups: %d (METIS); TAG's search: %d MCTS iterations per tree (%s), %.1f s "
               "in all; SFB duplicated %d gradient(s)",
               x.og.n, sr.iterations, sr.prior.ran ? "uniform and gnn priors" : "uniform priors",
               sr.search_s, sr.sfb_applied);
        if (sr.sfb_rejected)
            printf(" (it proposed %d more, slower in the simulation)", sr.sfb_rejected);
        printf("\n\n");
        print_table(&x, b, &o, &sr, best);
        print_answer(b, &o, &sr, chosen, best);
        const char *name = row_name(chosen, &o);
        if (b[chosen].ok && b[chosen].s) print_strategy(&x, name, b[chosen].s);
        if (b[chosen].ok && b[chosen].plan) print_placement(&x, b[chosen].plan, name);
        if (b[chosen].ok) print_memory(&x, &b[chosen], name);
    }
done:
    for (int k = 0; k < B_COUNT; k++) {
        if (k != B_TAG) pl_train_strategy_free(b[k].s);
        if (k != B_TAG) pl_train_eval_free(&b[k].e);
        pl_plan_free(b[k].plan);
    }
    pl_train_search_result_free(&sr);
    free(trace.tree), free(trace.it), free(trace.best_s);
    pl_train_ctx_free(&x);
    pl_train_graph_free(t), pl_cluster_free(c), pl_graph_free(fwd), pl_tag_gnn_free(gnn);
    return rc;
}
