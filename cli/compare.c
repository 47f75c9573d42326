/* compare.c: `placer compare MODEL --cluster C`: every algorithm side by side, with the lower
 * bound. */
#include "cli.h"
#include "placer/dist.h"
#include "placer/report.h"
#include "placer/trial.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer compare MODEL --cluster C [--algos a,b,...] [--json] [--contention X]\n"
    "                      [--seed N] [--time-limit 60s] [--profile P]... [--fine-cuts]\n"
    "                      [--episodes N] [--measured]\n"
    "  --algos LIST   comma-separated algorithms (default: all)\n"
    "  --episodes N   the learned algorithms' (drl, google-rl) episode budget (default: "
    "--time-limit)\n"
    "  --measured     the learned algorithms score their episodes by running each placement\n"
    "                 on this machine (every device of the cluster a CPU); the others place\n"
    "                 by the cost model as always; every makespan shown is simulated, and a\n"
    "                 measured plan's latency is in its note (docs/learn.md)\n"
    "  --fine-cuts    keep each algorithm's cuts: do not merge stages (docs/placement.md)\n"
    "  --catalog CAT --config NAME   a catalogue configuration instead of --cluster\n"
    "  --cost-params F   the cost model's efficiencies from `placer calibrate -o`\n"
    "exit status: 0 done, 1 no placement fits in memory, 2 bad input or failure\n";

typedef struct {
    const pl_algo *a;
    bool ok;
    char msg[PL_ERR_MAX];
    double makespan_s, search_s, measured_s;
    double peak[64]; /* per device, bytes (the first 64 devices) */
    bool oom;
    double band; /* the plan's band (pl_cost_plan_band) and its widest op's basis */
    pl_cost_basis basis;
} row_t;

static void run_one(const cli_ctx *x, const pl_place_opts *po, const pl_sim_opts *so, row_t *row)
{
    pl_plan *p;
    pl_sim_result r;
    pl_err err = {""};
    if (cli_run_algo(x, row->a, po, so, &p, &r, &err) < 0) {
        snprintf(row->msg, sizeof row->msg, "%s", err.msg);
        return;
    }
    row->ok = true;
    row->makespan_s = r.makespan_s;
    row->search_s = p->search_s;
    row->measured_s = p->measured_s;
    row->oom = r.oom;
    row->band = pl_cost_plan_band(x->k, p->dev, &row->basis);
    for (int d = 0; d < x->c->n_devs && d < 64; d++)
        row->peak[d] = r.peak_mem_bytes[d];
    pl_sim_result_free(&r);
    pl_plan_free(p);
}

/* One algorithm as an item of the pool (dist.h): its row, filled on the rank that runs it and
 * gathered as bytes, so the pointer to the algorithm is put back by the caller. */
typedef struct {
    const cli_ctx *x;
    const pl_place_opts *po;
    const pl_sim_opts *so;
    const row_t *rows;
    int n;
} job_t;

static void run_item(int k, void *out, void *user)
{
    const job_t *j = user;
    row_t *row = out;
    *row = (row_t){.a = j->rows[k].a};
    cli_progress("[%d/%d] %s", k + 1, j->n, row->a->name);
    run_one(j->x, j->po, j->so, row);
}

/* Every algorithm, in the library's order; returns the count. */
static int pick_all(const pl_algo **picked, int max)
{
    int n = 0, total;
    const pl_algo *all = pl_algo_list(&total);
    for (int k = 0; k < total && n < max; k++)
        picked[n++] = &all[k];
    return n;
}

static bool any_learned(const pl_algo *const *picked, int n)
{
    for (int k = 0; k < n; k++)
        if (picked[k]->learned) return true;
    return false;
}

/* cli.h: 2 when every algorithm failed, 1 when none of the plans made fits, else 0; `say`:
 * print why when every one failed (rank 0 only under mpirun). */
static cli_exit status_of(const row_t *rows, int n, bool say)
{
    int ran = 0, fit = 0;
    for (int k = 0; k < n; k++)
        ran += rows[k].ok, fit += rows[k].ok && !rows[k].oom;
    if (!ran) {
        if (say)
            fprintf(stderr, "placer compare: no algorithm made a plan%s%s\n", n ? ": " : "",
                    n ? rows[0].msg : "");
        return CLI_EXIT_BAD_INPUT;
    }
    return fit ? CLI_EXIT_OK : CLI_EXIT_INFEASIBLE;
}

static double single_makespan(const row_t *rows, int n)
{
    for (int k = 0; k < n; k++)
        if (rows[k].ok && !strcmp(rows[k].a->name, "single")) return rows[k].makespan_s;
    return 0;
}

static void print_text(const cli_ctx *x, const row_t *rows, int n, double lb)
{
    double base = single_makespan(rows, n);
    printf("model %s (%d ops) on %s (%d devices); lower bound %.4f ms\n\n",
           x->g->path ? x->g->path : x->g->name, x->g->n_ops, x->c->path ? x->c->path : x->c->name,
           x->c->n_devs, lb * 1e3);
    pl_table *t = pl_table_new(
        "algorithm|>makespan ms|>band %|>vs single|>gap to bound|>search s|peak MiB per device|"
        "note");
    for (int k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        if (!r->ok) {
            pl_table_row(t, "%s|-|-|-|-|-|-|%s", r->a->name, r->msg);
            continue;
        }
        char vs[32] = "-";
        if (base > 0) snprintf(vs, sizeof vs, "%.2fx", base / r->makespan_s);
        char peaks[256] = "";
        for (int d = 0; d < x->c->n_devs && d < 64 && strlen(peaks) < sizeof peaks - 16; d++)
            snprintf(peaks + strlen(peaks), sizeof peaks - strlen(peaks), "%s%.0f", d ? " " : "",
                     r->peak[d] / (1 << 20));
        char note[64] = "";
        if (r->oom)
            snprintf(note, sizeof note, "does not fit in memory");
        else if (r->measured_s > 0)
            snprintf(note, sizeof note, "measured %.4f ms", r->measured_s * 1e3);
        pl_table_row(t, "%s|%.4f|%.0f|%s|%.1f%%|%.3f|%s|%s", r->a->name, r->makespan_s * 1e3,
                     r->band * 100, vs, lb > 0 ? 100 * (r->makespan_s - lb) / lb : 0.0, r->search_s,
                     peaks, note);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static void print_json(const cli_ctx *x, const row_t *rows, int n, double lb)
{
    json_t *a = json_array();
    double base = single_makespan(rows, n);
    for (int k = 0; k < n; k++) {
        const row_t *r = &rows[k];
        json_t *o = json_pack("{s:s, s:b}", "algorithm", r->a->name, "ok", r->ok);
        if (!r->ok)
            json_object_set_new(o, "error", json_string(r->msg));
        else {
            json_object_set_new(o, "makespan_s", json_real(r->makespan_s));
            cli_band_json(o, r->band, r->basis);
            json_object_set_new(o, "speedup_vs_single",
                                base > 0 ? json_real(base / r->makespan_s) : json_null());
            json_object_set_new(o, "gap", json_real(lb > 0 ? (r->makespan_s - lb) / lb : 0));
            json_t *peaks = json_array();
            for (int d = 0; d < x->c->n_devs && d < 64; d++)
                json_array_append_new(peaks, json_real(r->peak[d]));
            json_object_set_new(o, "peak_memory_bytes", peaks);
            json_object_set_new(o, "fits", json_boolean(!r->oom));
            json_object_set_new(o, "search_s", json_real(r->search_s));
            if (r->measured_s > 0) json_object_set_new(o, "measured_s", json_real(r->measured_s));
        }
        json_array_append_new(a, o);
    }
    json_t *j = json_pack("{s:s, s:s, s:s, s:f}", "format", "placer-compare/1", "model",
                          x->g->path ? x->g->path : "", "cluster",
                          x->c->path ? x->c->path : x->c->name, "lower_bound_s", lb);
    cli_calibration_json(j, &x->k->params);
    json_object_set_new(j, "algorithms", a);
    cli_json_out(j);
}

enum { ALGOS = CLI_OWN };
static const struct option options[] = {{"algos", required_argument, NULL, ALGOS},
                                        CLI_PLACE_OPTIONS,
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

typedef struct args {
    cli_common co;
    const pl_algo *picked[32];
    int n;
    pl_place_opts po;
    bool measured;
} args;

static int take(void *o, int c, const char *v)
{
    args *a = o;
    int rc = cli_place_set("compare", c, v, &a->po, &a->measured);
    if (rc) return rc < 0 ? -1 : 0;
    return (a->n = cli_algos("compare", "--algos", v, a->picked, 32)) < 0 ? -1 : 0; /* ALGOS */
}

cli_exit cli_compare(int argc, char **argv)
{
    /* a side-by-side table is for looking at now: moirai gets 10 s unless told otherwise */
    args o = {.n = -1, .po = {.time_limit_s = 10, .progress = cli_place_progress}};
    cli_args g = CLI_ARGS("compare", NULL, help, false);
    cli_exit parsed = cli_parse(&g, &o.co, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    cli_common co = o.co;
    const pl_algo **picked = o.picked;
    int n = o.n; /* -1: --algos not given, every algorithm */
    pl_place_opts po = o.po;
    bool measured = o.measured;
    if (n < 0) n = pick_all(picked, 32);
    if ((measured || po.iterations) && !any_learned(picked, n))
        return cli_fail("compare",
                        "--%s is for learned algorithms (drl, google-rl), and --algos has none",
                        measured ? "measured" : "episodes");
    row_t rows[32] = {0};
    for (int k = 0; k < n; k++)
        rows[k].a = picked[k];
    cli_ctx x;
    if (!cli_ok(cli_ctx_open("compare", &co, &x))) return CLI_EXIT_BAD_INPUT;
    pl_sim_opts so = {.contention = co.contention};
    po.contention = co.contention;
    pl_err err = {""};
    if (pl_place_precheck(x.k, &err) < 0) { /* no algorithm can fit it: cli.h, status 1 */
        cli_fail("compare", "%s", err.msg);
        cli_ctx_close(&x);
        return CLI_EXIT_INFEASIBLE;
    }
    cli_measured m = {0};
    /* ranks on one machine would time each other's work, and a rank whose worker fails to
     * start would leave the others waiting in the gather */
    if (measured && pl_dist_size() > 1) {
        cli_ctx_close(&x);
        return cli_fail("compare", "--measured runs in one process, not under mpirun");
    }
    if (measured && !cli_ok(cli_measured_open("compare", &co, &x, &po, &m))) {
        cli_ctx_close(&x);
        return CLI_EXIT_BAD_INPUT;
    }
    if (measured)
        fprintf(stderr, "placer compare: note: --measured: only the learned algorithms' "
                        "episodes are measured; the others place by the cost model\n");
    /* under mpirun the algorithms are spread over the ranks and every row gathered to all */
    row_t got[32];
    job_t job = {&x, &po, &so, rows, n};
    int rc = pl_dist_map(n, run_item, got, sizeof *got, &job);
    for (int k = 0; rc == 0 && k < n; k++) {
        const pl_algo *a = rows[k].a;
        rows[k] = got[k];
        rows[k].a = a;
    }
    cli_progress("%s", "");
    cli_measured_close(&m);
    if (rc < 0) {
        cli_ctx_close(&x);
        return cli_fail("compare", "the MPI ranks' pool failed: %s", pl_dist_error());
    }
    double lb = pl_lower_bound(x.k);
    if (pl_dist_rank() != 0) { /* rank 0 alone prints, as one process would */
        cli_ctx_close(&x);
        return status_of(rows, n, false);
    }
    if (co.json)
        print_json(&x, rows, n, lb);
    else
        print_text(&x, rows, n, lb);
    cli_ctx_close(&x);
    return status_of(rows, n, true);
}
