/* learn_prior.c: `placer learn-prior MODEL[:BATCH]... -o FILE`: trains TAG's GNN prior by MCTS
 * distillation over random topologies (docs/learn.md, "Training the prior") and writes its
 * weights, with a FILE.json beside them saying what produced them. */
#include "cli.h"
#include "placer/json.h"
#include "placer/train.h"
#include "placer/report.h"

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *help =
    "usage: placer learn-prior MODEL[:BATCH]... -o FILE [--hold-out NAME] [--topologies N]\n"
    "                          [--iterations K] [--min-visits V] [--max-groups G] [--max-gpus G]\n"
    "                          [--rounds R] [--time T] [--steps S] [--lr X] [--seed S]\n"
    "                          [--init FILE] [--self-play] [--json]\n"
    "  MODEL[:BATCH]  the ONNX models to train on, each at its global batch (default: its own)\n"
    "  -o FILE        the weights (placer's weights file) and FILE.json, what produced them\n"
    "  --hold-out N   leave out the model whose file is named N (N.onnx), for the bench\n"
    "  --topologies N random topologies, seeds 1..N (default 36); --max-gpus G GPUs at most (8)\n"
    "  --iterations K MCTS iterations per search (200); --min-visits V a target's visits (25)\n"
    "  --max-groups G op groups per model (16); --rounds R searches (default: every model on\n"
    "                 every topology once); --time T stop starting searches after T\n"
    "  --steps S      Adam steps after each search (32, minibatches of 16); --lr X (0.001)\n"
    "  --init FILE    start from these weights instead of fresh ones (--seed S: fresh ones')\n"
    "  --self-play    guide each search by the prior being trained (TAG's loop; default:\n"
    "                 uniform priors, the targets then come from the rewards alone)\n"
    "exit status: 0 done, 2 bad input or failure\n";

enum { MAX_MODELS = 64 };

typedef struct lp_opts {
    const char *out, *hold_out, *init;
    const char *models[MAX_MODELS];
    char *owned[MAX_MODELS]; /* the copies models[] point into */
    int batches[MAX_MODELS], n_models;
    bool json;
    unsigned seed;
    pl_tag_distill_opts d;
} lp_opts;

/* MODEL or MODEL:BATCH (the batch a whole number after the last colon). The path is a copy
 * (argv stays as given: the provenance records the command). */
static int add_model(lp_opts *o, const char *given)
{
    if (o->n_models == MAX_MODELS) return cli_error("learn-prior", "at most %d models", MAX_MODELS);
    char *arg = o->owned[o->n_models] = pl_strdup(given);
    char *colon = strrchr(arg, ':');
    long batch = 0;
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        if (cli_count("learn-prior", "batch", colon + 1, 1, 1 << 24, &batch) < 0) return -1;
        *colon = 0;
    }
    o->models[o->n_models] = arg, o->batches[o->n_models++] = (int)batch;
    return 0;
}

/* The counts: option, range, field of pl_tag_distill_opts; their codes are CLI_OWN + index. */
static const struct {
    const char *name;
    long lo, hi;
    size_t off;
} counts[] = {
    {"--topologies", 1, 100000, offsetof(pl_tag_distill_opts, n_topologies)},
    {"--iterations", 1, 1000000, offsetof(pl_tag_distill_opts, iterations)},
    {"--min-visits", 1, 1000000, offsetof(pl_tag_distill_opts, min_visits)},
    {"--max-groups", 1, 10000, offsetof(pl_tag_distill_opts, max_groups)},
    {"--max-gpus", 2, 48, offsetof(pl_tag_distill_opts, max_gpus)},
    {"--rounds", 1, 10000000, offsetof(pl_tag_distill_opts, rounds)},
    {"--steps", 1, 100000, offsetof(pl_tag_distill_opts, steps)},
};
enum { N_COUNTS = sizeof counts / sizeof *counts };
enum { HOLD_OUT = CLI_OWN + N_COUNTS, INIT, TIME, SEED, LR, SELF_PLAY };
static const struct option options[] = {{"topologies", required_argument, NULL, CLI_OWN + 0},
                                        {"iterations", required_argument, NULL, CLI_OWN + 1},
                                        {"min-visits", required_argument, NULL, CLI_OWN + 2},
                                        {"max-groups", required_argument, NULL, CLI_OWN + 3},
                                        {"max-gpus", required_argument, NULL, CLI_OWN + 4},
                                        {"rounds", required_argument, NULL, CLI_OWN + 5},
                                        {"steps", required_argument, NULL, CLI_OWN + 6},
                                        {"hold-out", required_argument, NULL, HOLD_OUT},
                                        {"init", required_argument, NULL, INIT},
                                        {"time", required_argument, NULL, TIME},
                                        {"seed", required_argument, NULL, SEED},
                                        {"lr", required_argument, NULL, LR},
                                        {"self-play", no_argument, NULL, SELF_PLAY},
                                        CLI_JSON_OPTION,
                                        CLI_OPTIONS_END};

static int take_count(lp_opts *o, int k, const char *v)
{
    long n;
    if (cli_count("learn-prior", counts[k].name, v, counts[k].lo, counts[k].hi, &n) < 0) return -1;
    return *(int *)((char *)&o->d + counts[k].off) = (int)n, 0;
}

static int take(void *p, int c, const char *v)
{
    lp_opts *o = p;
    double lr;
    switch (c) {
    case CLI_ARG:
        return add_model(o, v);
    case 'o':
        return cli_file("learn-prior", "-o", v, "a file", &o->out);
    case HOLD_OUT:
        return cli_file("learn-prior", "--hold-out", v, "a name", &o->hold_out);
    case INIT:
        return cli_file("learn-prior", "--init", v, "a file", &o->init);
    case TIME:
        return cli_seconds("learn-prior", "--time", v, &o->d.time_s);
    case SEED:
        return cli_seed("learn-prior", "--seed", v, &o->seed);
    case LR:
        if (cli_number("learn-prior", "--lr", v, 0, 1, CLI_OPEN_LO | CLI_OPEN_HI, &lr) < 0)
            return -1;
        return o->d.lr = (float)lr, 0;
    case SELF_PLAY:
        return o->d.self_play = true, 0;
    case CLI_JSON:
        return o->json = true, 0;
    default:
        return take_count(o, c - CLI_OWN, v);
    }
}

/* The model's name: its file's base name without .onnx. */
static void model_name(const char *path, char *out, size_t n)
{
    const char *b = strrchr(path, '/');
    snprintf(out, n, "%s", b ? b + 1 : path);
    char *dot = strstr(out, ".onnx");
    if (dot && !dot[5]) *dot = 0;
}

/* Drops the held-out model from the list; -1 when no model has that name. */
static int hold_out(lp_opts *o)
{
    if (!o->hold_out) return 0;
    int k = 0, found = 0;
    for (int i = 0; i < o->n_models; i++) {
        char name[256];
        model_name(o->models[i], name, sizeof name);
        if (!strcmp(name, o->hold_out)) {
            found = 1;
            continue;
        }
        o->models[k] = o->models[i], o->batches[k++] = o->batches[i];
    }
    if (!found)
        return cli_error("learn-prior", "--hold-out %s: no model of that name is given",
                         o->hold_out);
    o->n_models = k;
    return k ? 0 : cli_error("learn-prior", "--hold-out leaves no model to train on");
}

/* The options, checked together; *asked when --help was asked (and printed). */
static cli_exit parse(int argc, char **argv, lp_opts *o, bool *asked)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    cli_args g = CLI_ARGS("learn-prior", "ho:", help, true);
    cli_exit parsed = cli_parse(&g, NULL, take, o);
    if (!cli_ok(parsed) || (*asked = g.asked_help)) return parsed;
    if (!o->n_models)
        return cli_fail("learn-prior", "which models? (placer learn-prior --help; `make priors` "
                                       "trains the shipped ones)");
    if (!o->out) return cli_fail("learn-prior", "where to? give -o FILE");
    return hold_out(o) < 0 ? CLI_EXIT_BAD_INPUT : CLI_EXIT_OK;
}

/* ---- running ---- */

static void progress(const pl_tag_distill_result *r, const char *model, int topology, int samples,
                     double loss, void *user)
{
    const lp_opts *o = user;
    int total = o->d.rounds > 0 ? o->d.rounds : 0;
    char of[32] = "";
    if (total) snprintf(of, sizeof of, "/%d", total);
    cli_progress("learn-prior: search %d%s, %s on topology %d: %d samples (%ld in all), loss "
                 "%.3f, %.0f s",
                 r->rounds, of, model, topology, samples, r->samples, loss, r->seconds);
}

/* FILE.json: what produced the weights, so that a shipped prior can be reproduced. */
static json_t *provenance(const lp_opts *o, int argc, char **argv, const pl_tag_distill_result *r)
{
    json_t *cmd = json_array(), *models = json_array();
    json_array_append_new(cmd, json_string("placer"));
    for (int i = 0; i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));
    for (int i = 0; i < o->n_models; i++)
        json_array_append_new(models,
                              json_pack("{s:s,s:i}", "file", o->models[i], "batch", o->batches[i]));
    char when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const pl_tag_distill_opts *d = &o->d;
    return json_pack(
        "{s:s,s:o,s:s,s:o,s:s?,s:i,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:b},s:i,s:I,s:i,s:f,s:f,s:"
        "f}",
        "format", "placer-prior/1", "command", cmd, "finished", when, "models", models, "held_out",
        o->hold_out, "seed", (int)o->seed, "settings", "topologies", d->n_topologies, "max_gpus",
        d->max_gpus, "max_groups", d->max_groups, "iterations", d->iterations, "min_visits",
        d->min_visits, "steps", d->steps, "minibatch", d->minibatch, "lr", (double)d->lr,
        "self_play", d->self_play, "searches", r->rounds, "samples", (json_int_t)r->samples,
        "skipped", r->skipped, "first_loss", isfinite(r->first_loss) ? r->first_loss : -1,
        "last_loss", isfinite(r->last_loss) ? r->last_loss : -1, "seconds", r->seconds);
}

/* The defaults the library would use, written into the options so the provenance shows them. */
static void settle(pl_tag_distill_opts *d)
{
    if (!d->max_groups) d->max_groups = PL_TAG_DISTILL_GROUPS;
    if (!d->max_gpus) d->max_gpus = PL_TAG_DISTILL_GPUS;
    if (!d->n_topologies) d->n_topologies = PL_TAG_DISTILL_TOPOLOGIES;
    if (!d->iterations) d->iterations = PL_TAG_DISTILL_ITERATIONS;
    if (!d->min_visits) d->min_visits = PL_TAG_DISTILL_VISITS;
    if (!d->steps) d->steps = 32;
    if (!d->minibatch) d->minibatch = 16;
    if (!(d->lr > 0)) d->lr = 1e-3f;
}

/* The weights and FILE.json go together: one pl_outset, opened before training (a folder
 * named FILE.json, or a folder that cannot be written, is refused before any search) and
 * committed as one: FILE and FILE.json are both the new ones or both as they were. */
static cli_exit open_out(const lp_opts *o, pl_outset *set)
{
    pl_err err = {""};
    char side[4200];
    snprintf(side, sizeof side, "%s.json", o->out);
    if (pl_outset_add(set, o->out, &err) < 0 || pl_outset_add(set, side, &err) < 0) {
        pl_outset_abort(set);
        return cli_fail("learn-prior", "-o %s: %s", o->out, err.msg);
    }
    return CLI_EXIT_OK;
}

static cli_exit write_out(const lp_opts *o, pl_outset *set, pl_tag_gnn *m, json_t *doc)
{
    pl_err err = {""};
    int rc = pl_tag_gnn_save(m, set->tmp[0], &err) == 0 &&
                     pl_json_save(doc, set->tmp[1], JSON_INDENT(2), &err) == 0
                 ? pl_outset_commit(set, &err)
                 : -1;
    if (rc < 0) pl_outset_abort(set);
    return rc < 0
               ? cli_fail("learn-prior", "-o %s: %s", o->out, err.msg[0] ? err.msg : "cannot write")
               : CLI_EXIT_OK;
}

/* Trains and writes; the exit status. */
static cli_exit learn(lp_opts *o, int argc, char **argv)
{
    settle(&o->d);
    o->d.models = o->models, o->d.batches = o->batches, o->d.n_models = o->n_models;
    o->d.seed = o->seed, o->d.progress = progress, o->d.progress_user = o;
    pl_err err = {""};
    pl_tag_gnn *m = pl_tag_gnn_new(o->seed);
    pl_tag_distill_result r;
    pl_outset set = {0};
    cli_exit rc = !cli_ok(open_out(o, &set)) ? CLI_EXIT_BAD_INPUT
                  : o->init && pl_tag_gnn_load(m, o->init, &err) < 0
                      ? cli_fail("learn-prior", "--init: %s", err.msg)
                  : pl_tag_distill(m, &o->d, &r, &err) < 0 ? cli_fail("learn-prior", "%s", err.msg)
                                                           : CLI_EXIT_OK;
    if (cli_ok(rc)) {
        json_t *doc = provenance(o, argc, argv, &r);
        rc = write_out(o, &set, m, doc);
        if (cli_ok(rc) && o->json)
            pl_json_print(doc, stdout);
        else {
            if (cli_ok(rc))
                printf("%s: %d searches on %d model(s) in %.0f s, %ld samples, loss %.3f -> %.3f; "
                       "%d search(es) skipped%s%s\n",
                       o->out, r.rounds, o->n_models, r.seconds, r.samples, r.first_loss,
                       r.last_loss, r.skipped, r.skipped ? ", the last: " : "",
                       r.skipped ? r.last_skip : "");
            json_decref(doc);
        }
    }
    pl_outset_abort(&set); /* a failed search: the temporaries go */
    pl_tag_gnn_free(m);
    return rc;
}

cli_exit cli_learn_prior(int argc, char **argv)
{
    lp_opts o;
    bool asked = false;
    cli_exit rc = parse(argc, argv, &o, &asked);
    if (cli_ok(rc) && !asked) rc = learn(&o, argc, argv);
    for (int i = 0; i < MAX_MODELS; i++)
        free(o.owned[i]);
    return rc;
}
