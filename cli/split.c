/* split.c: `placer split MODEL --plan P -o DIR`: one ONNX file per stage, and a manifest. */
#include "cli.h"
#include "placer/report.h"
#include "placer/split.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer split MODEL --plan P -o DIR (--cluster C | --catalog CAT --config NAME)\n"
    "                        [--cut fewest|schedule] [--json] [--dim N=V]... [--input "
    "NAME=SIZES]...\n"
    "  --plan P       the plan (placer-plan/1) made for this model and cluster\n"
    "  -o DIR         writes DIR/stage_00.onnx, ... and DIR/manifest.json (docs/split.md)\n"
    "  --cut fewest   as few stages per device as keep them a DAG (default)\n"
    "  --cut schedule a stage ends after every send and starts at every receive, so stages\n"
    "                 overlap as the plan's ops do in the simulator (for `placer run`)\n"
    "exit status: 0 done, 2 bad input or failure\n";

/* Stage j's inputs made by other stages: how many, and their bytes in *bytes. */
static int from_stages(const pl_graph *g, const pl_stages *s, int j, double *bytes)
{
    int n = 0;
    *bytes = 0;
    for (int k = 0; k < s->st[j].n_inputs; k++) {
        int t = s->st[j].inputs[k];
        if (s->maker[t] < 0) continue;
        n++;
        if (g->tensors[t].bytes > 0) *bytes += g->tensors[t].bytes;
    }
    return n;
}

static void print_text(const cli_ctx *x, const pl_stages *s, const char *dir)
{
    pl_table *t =
        pl_table_new("stage|device|>ops|>inputs from stages|>bytes in|>outputs|>to stages");
    int *to = pl_malloc((size_t)(s->n ? s->n : 1) * sizeof *to);
    for (int j = 0; j < s->n; j++) {
        const pl_stage *st = &s->st[j];
        double bytes;
        int n_from = from_stages(x->g, s, j, &bytes), n_sent = 0;
        for (int k = 0; k < st->n_outputs; k++)
            n_sent += pl_split_readers(x->g, s, st->outputs[k], to) > 0;
        char b[32];
        pl_table_row(t, "stage_%02d|%s|%d|%d|%s|%d|%d", j, x->c->devs[st->dev].name, st->n_ops,
                     n_from, pl_fmt_bytes(bytes, b, sizeof b), st->n_outputs, n_sent);
    }
    free(to);
    printf("%-8s %s (%d ops) into %d stages in %s (manifest.json)\n\n", "split",
           x->g->path ? x->g->path : x->g->name, x->g->n_ops, s->n, dir);
    pl_table_print(t, stdout);
    pl_table_free(t);
}

/* The manifest as written, read back: what --json prints is exactly what `placer run` reads. */
static cli_exit print_json(const char *dir)
{
    char *path = pl_malloc(strlen(dir) + 32);
    sprintf(path, "%s/manifest.json", dir);
    json_error_t e;
    json_t *m = json_load_file(path, JSON_PRESERVE_ORDER, &e);
    cli_exit rc = m ? CLI_EXIT_OK : cli_fail("split", "%s: cannot read it back: %s", path, e.text);
    free(path);
    if (!m) return rc;
    json_object_set_new(m, "dir", json_string(dir));
    pl_json_print(m, stdout);
    return CLI_EXIT_OK;
}

static cli_exit run(const cli_common *co, const char *plan, const char *dir, pl_split_cut cut)
{
    cli_ctx x;
    if (!cli_ok(cli_ctx_open("split", co, &x))) return CLI_EXIT_BAD_INPUT;
    pl_err err = {""};
    pl_stages s = {0};
    cli_exit status = CLI_EXIT_OK;
    const char **names = pl_malloc((size_t)x.c->n_devs * sizeof *names);
    for (int d = 0; d < x.c->n_devs; d++)
        names[d] = x.c->devs[d].name;
    pl_plan *p = pl_plan_load(plan, x.g, x.c, &err);
    if (!p || pl_split_stages_by(x.g, p, cut, &s, &err) < 0 ||
        (pl_split_set_threads(&s, x.c), pl_split_write(co->model, x.g, &s, names, dir, &err) < 0))
        status = cli_fail("split", "%s", err.msg);
    else if (co->json)
        status = print_json(dir);
    else
        print_text(&x, &s, dir);
    pl_stages_free(&s);
    pl_plan_free(p);
    free(names);
    cli_ctx_close(&x);
    return status;
}

enum { PLAN = CLI_OWN, CUT };
static const struct option options[] = {{"plan", required_argument, NULL, PLAN},
                                        {"cut", required_argument, NULL, CUT},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

typedef struct args {
    cli_common co;
    const char *plan, *dir;
    pl_split_cut cut;
} args;

static int take(void *o, int c, const char *v)
{
    args *a = o;
    switch (c) {
    case PLAN:
        return cli_file("split", "--plan", v, "a plan file", &a->plan);
    case 'o':
        return cli_file("split", "-o", v, "a folder", &a->dir);
    default: /* CUT */
        if (!v || (strcmp(v, "fewest") && strcmp(v, "schedule")))
            return cli_error("split", "--cut wants fewest or schedule");
        return a->cut = strcmp(v, "fewest") ? PL_SPLIT_SCHEDULE : PL_SPLIT_FEWEST, 0;
    }
}

cli_exit cli_split(int argc, char **argv)
{
    /* a split follows the plan: nothing here is priced or simulated */
    args o = {.co = {.refuse = CLI_NO_CONTENTION | CLI_NO_PROFILE | CLI_NO_COST_PARAMS},
              .cut = PL_SPLIT_FEWEST};
    cli_args g = CLI_ARGS("split", "ho:", help, false);
    cli_exit parsed = cli_parse(&g, &o.co, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    const char *plan = o.plan, *dir = o.dir;
    if (!plan) return cli_fail("split", "which plan? give --plan P\n%s", help);
    if (!dir) return cli_fail("split", "where? give -o DIR\n%s", help);
    return run(&o.co, plan, dir, o.cut);
}
