/* place.c: `placer place MODEL --cluster C --algo A`: a placement and its simulated run. */
#include "cli.h"
#include "placer/dist.h"
#include "placer/report.h"
#include "placer/trial.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer place MODEL --cluster C [--algo A] [-o plan.json] [--trace t.json] [--json]\n"
    "                        [--contention ports|pair|none] [--seed N] [--time-limit 60s]\n"
    "                        [--profile P]... [--dim N=V]... [--input NAME=SIZES]...\n"
    "                        [--fine-cuts] [--min-gain F] [--episodes N] [--measured]\n"
    "                        [--optimize] [--restarts N]\n"
    "  --optimize     rewrite the model first (TASO's search, as `placer optimize`), kept in the\n"
    "                 cache, and place that (its path is on stderr; the plan is of it)\n"
    "  --algo A       single, expert, expert-layers, m-topo, m-etf, m-sct, heft (default), getf,\n"
    "                 metis, random, moirai, drl (AutoDeep's learned placer), google-rl\n"
    "                 (Mirhoseini et al.'s, AutoDeep's baseline); the default and moirai return "
    "the\n"
    "                 best single-device plan instead unless their plan is predicted at least\n"
    "                 F faster (with a note)\n"
    "  --episodes N   a learned algorithm's (drl, google-rl) episode budget (default 400, or "
    "--time-limit)\n"
    "  --measured     drl scores each episode's placement by running it on this machine\n"
    "                 (split, one onnxruntime thread per device, median of 3 runs) instead of\n"
    "                 simulating it: every device of the cluster must be a CPU, e.g.\n"
    "                 examples/clusters/local-cpu.json (docs/learn.md, \"Measured episodes\")\n"
    "  --restarts N   moirai's independent local searches, the best kept (default: one per\n"
    "                 MPI rank under mpirun, else 1; docs/dist.md)\n"
    "  --min-gain F   that fraction, in [0, 1) (default 0.05: a smaller predicted gain is within\n"
    "                 the predictions' error; docs/placement.md, \"Plans that pay\")\n"
    "  --fine-cuts    keep the algorithm's cuts: do not merge stages where the cluster charges\n"
    "                 for them (stage_overhead_s, stage_copy_Bps; docs/placement.md)\n"
    "  -o FILE        write the plan (placer-plan/1) for `placer simulate`\n"
    "  --catalog CAT --config NAME   a catalogue configuration instead of --cluster\n"
    "  --cost-params F   the cost model's efficiencies from `placer calibrate -o`\n"
    "  --trace FILE   write the simulated run as Chrome trace JSON (open it in Perfetto)\n"
    "exit status: 0 done, 1 no placement fits in memory (or the plan does not), 2 bad input or "
    "failure\n";

static void print_text(const cli_ctx *x, const pl_plan *p, const pl_sim_result *r, double lb,
                       const char *check, const cli_measured *m)
{
    printf("%-11s %s (%d ops)\n", "model", x->g->path ? x->g->path : x->g->name, x->g->n_ops);
    printf("%-11s %s (%d devices)\n", "cluster", x->c->path ? x->c->path : x->c->name,
           x->c->n_devs);
    printf("%-11s %s, placed in %.3f s\n", "algorithm", p->algo, p->search_s);
    printf("%-11s %.4f ms (lower bound %.4f ms, gap %.1f%%), contention %s\n", "makespan",
           r->makespan_s * 1e3, lb * 1e3, lb > 0 ? 100 * (r->makespan_s - lb) / lb : 0.0,
           pl_contention_name(p->contention));
    pl_cost_basis basis;
    double band = pl_cost_plan_band(x->k, p->dev, &basis);
    cli_print_band(band, basis); /* after the call that sets basis */
    if (r->oom)
        printf("%-11s DOES NOT FIT: %s over capacity by %.0f bytes\n", "memory",
               x->c->devs[r->oom_dev].name, r->oom_excess_bytes);
    else
        printf("%-11s fits on every device\n", "memory");
    printf("%-11s %s\n", "invariants", check);
    if (m->w) {
        long measured, hits;
        pl_trial_measure_stats(m->w, &measured, &hits);
        printf("%-11s %.4f ms on this machine (median of 3 runs), %ld placements run, %ld "
               "answered from the cache\n",
               "measured", p->measured_s * 1e3, measured, hits);
    }
    if (p->cut_simulations)
        printf("%-11s %d, merged from %d in %d simulations (%.3f s)\n", "stages", p->stages_after,
               p->stages_before, p->cut_simulations, p->cut_s);
    printf("\n");
    cli_print_devices(x, p, r);
    cli_print_links(x, r);
}

/* Which view of each CPU listed both ways won (docs/clusters.md, "Cores"): "whole" when the
 * plan runs on the multi-core device, "split" when on its cores, "none" when on neither; NULL
 * when the cluster lists no such device. */
static json_t *cores_json(const cli_ctx *x, const pl_plan *p)
{
    json_t *list = NULL;
    for (int d = 0; d < x->c->n_devs; d++) {
        const pl_device *w = &x->c->devs[d];
        if (!w->n_core_devs) continue;
        bool whole = false, split = false;
        for (int v = 0; v < p->n_ops; v++)
            whole |= p->dev[v] == d, split |= pl_cluster_same_silicon(x->c, p->dev[v], d);
        if (!list) list = json_array();
        json_array_append_new(list, json_pack("{s:s, s:i, s:s}", "device", w->name, "cores",
                                              w->cores, "view",
                                              whole   ? "whole"
                                              : split ? "split"
                                                      : "none"));
    }
    return list;
}

static void print_json(const cli_ctx *x, const pl_plan *p, const pl_sim_opts *so,
                       const pl_sim_result *r, double lb, const char *check, const char *out,
                       const char *note, const cli_measured *m)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:b, s:s, s:o}", "format",
                          "placer-place/1", "model", x->g->path ? x->g->path : "", "cluster",
                          x->c->path ? x->c->path : x->c->name, "algorithm", p->algo, "contention",
                          pl_contention_name(p->contention), "makespan_s", r->makespan_s,
                          "lower_bound_s", lb, "gap", lb > 0 ? (r->makespan_s - lb) / lb : 0.0,
                          "search_s", p->search_s, "fits", !r->oom, "invariants", check, "devices",
                          (json_t *)cli_devices_json(x, p, r));
    json_object_set_new(o, "links", (json_t *)cli_links_json(x, r));
    json_object_set_new(o, "schedule", (json_t *)cli_schedule_json(x, p, so, r));
    cli_calibration_json(o, &x->k->params);
    pl_cost_basis basis;
    double band = pl_cost_plan_band(x->k, p->dev, &basis);
    cli_band_json(o, band, basis); /* after the call that sets basis */
    if (out) json_object_set_new(o, "plan", json_string(out));
    json_t *cores = cores_json(x, p);
    if (cores) json_object_set_new(o, "cores", cores);
    if (p->cut_simulations) /* coarser cuts ran (docs/placement.md, "Plans that pay") */
        json_object_set_new(o, "cuts",
                            json_pack("{s:i, s:i, s:i, s:f}", "stages_before", p->stages_before,
                                      "stages_after", p->stages_after, "simulations",
                                      p->cut_simulations, "time_s", p->cut_s));
    if (*note) json_object_set_new(o, "note", json_string(note));
    if (m->w) {
        long measured, hits;
        pl_trial_measure_stats(m->w, &measured, &hits);
        json_object_set_new(o, "measured",
                            json_pack("{s:f, s:i, s:i}", "latency_s", p->measured_s,
                                      "placements_run", (json_int_t)measured, "cache_hits",
                                      (json_int_t)hits));
    }
    cli_json_out(o);
}

enum { ALGO = CLI_OWN, TRACE, OPTIMIZE, RESTARTS, MIN_GAIN };
static const struct option options[] = {{"algo", required_argument, NULL, ALGO},
                                        {"trace", required_argument, NULL, TRACE},
                                        {"optimize", no_argument, NULL, OPTIMIZE},
                                        {"restarts", required_argument, NULL, RESTARTS},
                                        {"min-gain", required_argument, NULL, MIN_GAIN},
                                        CLI_PLACE_OPTIONS,
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

typedef struct args {
    cli_common co;
    const char *algo, *out, *trace;
    pl_place_opts po;
    bool min_gain_given, measured, optimize;
} args;

/* One option of the table into *a; -1 after printing the error. */
static int take(void *o, int c, const char *v)
{
    args *a = o;
    long n;
    int rc = cli_place_set("place", c, v, &a->po, &a->measured);
    if (rc) return rc < 0 ? -1 : 0;
    switch (c) {
    case 'o':
        return cli_file("place", "-o", v, "a file", &a->out);
    case ALGO:
        return cli_file("place", "--algo", v, "an algorithm", &a->algo);
    case TRACE:
        return cli_file("place", "--trace", v, "a file", &a->trace);
    case OPTIMIZE:
        return a->optimize = true, 0;
    case RESTARTS:
        if (cli_count("place", "--restarts", v, 1, 100000, &n) < 0) return -1;
        return a->po.restarts = (int)n, 0;
    default: /* MIN_GAIN */
        a->min_gain_given = true;
        return cli_fraction("place", "--min-gain", v, true, &a->po.min_gain);
    }
}

cli_exit cli_place(int argc, char **argv)
{
    args o = {0};
    cli_args g = CLI_ARGS("place", "ho:", help, false);
    cli_exit parsed = cli_parse(&g, &o.co, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    cli_common co = o.co;
    const char *algo = o.algo, *out = o.out, *trace = o.trace;
    pl_place_opts po = o.po;
    bool min_gain_given = o.min_gain_given, measured = o.measured, optimize = o.optimize;
    char optimized[4096];
    /* plans that pay: the default algorithm and moirai never return a plan predicted slower
     * than the best single-device plan (pl_place_opts.single_if_faster) */
    po.single_if_faster = !algo || !strcmp(algo, "moirai");
    if (!min_gain_given) po.min_gain = PL_MIN_GAIN_DEFAULT;
    if (!algo) algo = "heft";
    const pl_algo *a = pl_algo_find(algo);
    if (!a) return cli_fail("place", "unknown algorithm '%s'\n%s", algo, help);
    if ((measured || po.iterations) && !a->learned)
        return cli_fail(
            "place",
            "--%s is for a learned algorithm (drl, google-rl): %s places by the cost model "
            "and has no episodes",
            measured ? "measured" : "episodes", a->name);
    if (po.restarts && strcmp(a->name, "moirai"))
        return cli_fail("place", "--restarts is for moirai's local search: %s has none", a->name);
    /* ranks on one machine would time each other's runs (as compare --measured) */
    if (measured && pl_dist_size() > 1)
        return cli_fail("place", "--measured runs in one process, not under mpirun");
    po.progress = cli_place_progress;
    /* every rank places the same model together: moirai's searches and drl's episodes are
     * spread over the ranks (docs/dist.md), and every rank gets the same plan */
    po.use_pool = true;
    if (optimize && co.model && cli_optimize_first("place", &co, optimized, sizeof optimized))
        return CLI_EXIT_BAD_INPUT;
    cli_ctx x;
    if (!cli_ok(cli_ctx_open("place", &co, &x))) return CLI_EXIT_BAD_INPUT;
    cli_measured m = {0};
    if (measured && !cli_ok(cli_measured_open("place", &co, &x, &po, &m))) {
        cli_ctx_close(&x);
        return CLI_EXIT_BAD_INPUT;
    }
    pl_sim_opts so = {.contention = co.contention, .record = true};
    po.contention = co.contention;
    pl_plan *p;
    pl_sim_result r;
    pl_err err = {""};
    cli_exit status = CLI_EXIT_OK;
    int rc = cli_run_algo(&x, a, &po, &so, &p, &r, &err);
    cli_progress("%s", "");
    if (rc < 0) {
        cli_fail("place", "%s", err.msg);
        status = rc == -2 ? CLI_EXIT_INFEASIBLE : CLI_EXIT_BAD_INPUT; /* cli.h */
        goto done;
    }
    char note[sizeof err.msg];
    snprintf(note, sizeof note, "%s", err.msg); /* cli_run_algo leaves the algorithm's note */
    char why[512] = "ok";
    pl_sim_check(x.k, p, &so, &r, why, sizeof why);
    if (pl_dist_rank() != 0) /* rank 0 alone prints and writes, as one process would */
        status = r.oom ? CLI_EXIT_INFEASIBLE : CLI_EXIT_OK;
    else if ((out && pl_plan_save(p, x.g, x.c, out, &err) < 0) ||
             (trace && pl_sim_trace_write(x.k, p, &r, trace, &err) < 0))
        status = cli_fail("place", "%s", err.msg);
    else {
        if (co.json)
            print_json(&x, p, &so, &r, pl_lower_bound(x.k), why, out, note, &m);
        else
            print_text(&x, p, &r, pl_lower_bound(x.k), why, &m);
        status = r.oom ? CLI_EXIT_INFEASIBLE : CLI_EXIT_OK; /* cli.h: a plan that does not fit */
    }
    pl_sim_result_free(&r);
    pl_plan_free(p);
done:
    cli_measured_close(&m);
    cli_ctx_close(&x);
    return status;
}
