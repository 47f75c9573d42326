/* simulate.c: `placer simulate MODEL --cluster C --plan P`: scores a plan, made by placer or
 * by hand, under the simulator's semantics (design.md §4). */
#include "cli.h"
#include "placer/report.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *help =
    "usage: placer simulate MODEL --cluster C --plan P [--contention ports|pair|none]\n"
    "                       [--requests K | --idle S] [--per-edge] [--trace t.json]\n"
    "                       [--json] [--profile P]...\n"
    "  --plan P       a placer-plan/1 file (from `placer place -o`, or written by hand)\n"
    "  --catalog CAT --config NAME   a catalogue configuration instead of --cluster\n"
    "  --cost-params F   the cost model's efficiencies from `placer calibrate -o`\n"
    "  --contention   override the plan's contention model\n"
    "  --per-edge     send a tensor once per reading op (one transfer per graph edge, as\n"
    "                 MOIRAI's flows), not once per (tensor, device)\n"
    "  --requests K   throughput mode: K back-to-back requests; prints period and latency\n"
    "  --idle S       one request after the model sat S (e.g. 50ms) since its last: where\n"
    "                 the cluster gives cold figures, its kept bytes are read again in part\n"
    "                 (docs/simulator.md, \"Cold requests\"); default back to back\n"
    "  --trace FILE   Chrome trace JSON of the run (open it in Perfetto)\n"
    "exit status: 0 done, 1 the plan does not fit in memory, 2 bad input or failure\n";

static void print_text(const cli_ctx *x, const pl_plan *p, const pl_sim_opts *so,
                       const pl_sim_result *r, const char *check)
{
    printf("%-11s %s (%d ops)\n", "model", x->g->path ? x->g->path : x->g->name, x->g->n_ops);
    printf("%-11s %s (%d devices)\n", "cluster", x->c->path ? x->c->path : x->c->name,
           x->c->n_devs);
    printf("%-11s %s, contention %s%s\n", "plan", p->algo, pl_contention_name(so->contention),
           so->per_edge ? ", one transfer per edge" : "");
    if (so->requests > 1)
        printf("%-11s %d requests in %.4f ms: period %.4f ms (%.1f requests/s), mean latency %.4f "
               "ms\n",
               "throughput", so->requests, r->makespan_s * 1e3, r->period_s * 1e3,
               r->period_s > 0 ? 1 / r->period_s : 0.0, r->latency_s * 1e3);
    else
        printf("%-11s %.4f ms\n", "makespan", r->makespan_s * 1e3);
    if (r->cold_period_s > 0)
        printf("%-11s priced in a round of %.4f ms (%.4f ms idle): kept bytes read again in part\n",
               "cold", r->cold_period_s * 1e3, so->idle_s * 1e3);
    else if (so->idle_s > 0)
        printf(
            "%-11s none: no device of the plan gives cold figures, so %.4f ms idle costs nothing\n",
            "cold", so->idle_s * 1e3);
    if (p->predicted_makespan_s > 0 && so->requests <= 1)
        printf("%-11s %.4f ms when the plan was made\n", "predicted",
               p->predicted_makespan_s * 1e3);
    pl_cost_basis basis;
    double band = pl_cost_plan_band(x->k, p->dev, &basis);
    cli_print_band(band, basis); /* after the call that sets basis */
    if (r->oom)
        printf("%-11s DOES NOT FIT: %s over capacity by %.0f bytes\n", "memory",
               x->c->devs[r->oom_dev].name, r->oom_excess_bytes);
    else
        printf("%-11s fits on every device\n", "memory");
    printf("%-11s %s\n", "invariants", check);
    if (so->requests <= 1)
        printf("%-11s %d ops, from %s to %s\n", "critical", r->critical_len,
               r->critical_len ? x->g->ops[r->critical_path[0]].name : "-",
               r->critical_len ? x->g->ops[r->critical_path[r->critical_len - 1]].name : "-");
    putchar('\n');
    cli_print_devices(x, p, r);
    cli_print_links(x, r);
}

enum { PER_EDGE = CLI_OWN, REQUESTS, IDLE, PLAN, TRACE };
static const struct option options[] = {{"per-edge", no_argument, NULL, PER_EDGE},
                                        {"requests", required_argument, NULL, REQUESTS},
                                        {"idle", required_argument, NULL, IDLE},
                                        {"plan", required_argument, NULL, PLAN},
                                        {"trace", required_argument, NULL, TRACE},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

typedef struct args {
    cli_common co;
    const char *plan, *trace;
    bool per_edge;
    long requests; /* simulate's own: the other verbs refuse --requests as unknown */
    double idle_s;
} args;

static int take(void *o, int c, const char *v)
{
    args *a = o;
    switch (c) {
    case PER_EDGE:
        return a->per_edge = true, 0;
    case REQUESTS:
        return cli_count("simulate", "--requests", v, 1, 100000, &a->requests);
    case IDLE:
        if (cli_seconds("simulate", "--idle", v, &a->idle_s) < 0) return -1;
        return a->idle_s > 1e4 ? cli_error("simulate", "--idle: '%s': at most 1e4 s", v) : 0;
    case PLAN:
        return cli_file("simulate", "--plan", v, "a plan file", &a->plan);
    default:
        return cli_file("simulate", "--trace", v, "a file", &a->trace); /* TRACE */
    }
}

cli_exit cli_simulate(int argc, char **argv)
{
    args o = {0};
    cli_args g = CLI_ARGS("simulate", NULL, help, false);
    cli_exit parsed = cli_parse(&g, &o.co, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    cli_common co = o.co;
    const char *plan_path = o.plan, *trace = o.trace;
    bool per_edge = o.per_edge;
    long requests = o.requests;
    if (!plan_path) return cli_fail("simulate", "which plan? give --plan FILE\n%s", help);
    if (o.idle_s > 0 && requests > 1)
        return cli_fail("simulate",
                        "--idle prices one request after a wait; --requests %ld "
                        "runs them back to back: give one of the two",
                        requests);
    cli_ctx x;
    if (!cli_ok(cli_ctx_open("simulate", &co, &x))) return CLI_EXIT_BAD_INPUT;
    pl_err err = {""};
    cli_exit status = CLI_EXIT_OK;
    pl_plan *p = pl_plan_load(plan_path, x.g, x.c, &err);
    pl_sim_opts so = {.contention = co.contention_set ? co.contention
                                    : p               ? p->contention
                                                      : 0,
                      .requests = (int)requests,
                      .record = true,
                      .per_edge = per_edge,
                      .idle_s = o.idle_s};
    pl_sim_result r;
    if (!p || pl_simulate(x.k, p, &so, &r, &err) < 0) {
        status = cli_fail("simulate", "%s", err.msg);
        pl_plan_free(p);
        cli_ctx_close(&x);
        return status;
    }
    char why[512] = "ok";
    pl_sim_check(x.k, p, &so, &r, why, sizeof why);
    if (trace && pl_sim_trace_write(x.k, p, &r, trace, &err) < 0)
        status = cli_fail("simulate", "%s", err.msg);
    else if (co.json) {
        json_t *o = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:f, s:b, s:s, s:o}", "format", "placer-simulate/1", "model",
            x.g->path ? x.g->path : "", "cluster", x.c->path ? x.c->path : "", "plan", plan_path,
            "contention", pl_contention_name(so.contention), "makespan_s", r.makespan_s, "fits",
            !r.oom, "invariants", why, "devices", (json_t *)cli_devices_json(&x, p, &r));
        json_object_set_new(o, "per_edge", json_boolean(so.per_edge));
        json_object_set_new(o, "idle_s", json_real(so.idle_s));
        json_object_set_new(o, "cold_period_s", json_real(r.cold_period_s));
        json_object_set_new(o, "links", (json_t *)cli_links_json(&x, &r));
        json_object_set_new(o, "schedule", (json_t *)cli_schedule_json(&x, p, &so, &r));
        cli_calibration_json(o, &x.k->params);
        pl_cost_basis basis;
        double band = pl_cost_plan_band(x.k, p->dev, &basis);
        cli_band_json(o, band, basis); /* after the call that sets basis */
        if (so.requests > 1) {
            json_object_set_new(o, "requests", json_integer(so.requests));
            json_object_set_new(o, "period_s", json_real(r.period_s));
            json_object_set_new(o, "latency_s", json_real(r.latency_s));
        }
        cli_json_out(o);
    } else
        print_text(&x, p, &so, &r, why);
    if (cli_ok(status) && r.oom) status = CLI_EXIT_INFEASIBLE; /* cli.h: a plan that does not fit */
    pl_sim_result_free(&r);
    pl_plan_free(p);
    cli_ctx_close(&x);
    return status;
}
