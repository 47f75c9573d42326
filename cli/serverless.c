/* serverless.c: `placer serverless MODEL --platform P`: the model cut into serverless functions
 * by MOPAR and its baselines, side by side (docs/serverless.md). */
#include "cli.h"
#include "placer/report.h"
#include "placer/serverless.h"
#include "placer/split.h"

#include <errno.h>
#include <jansson.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer serverless MODEL --platform P\n"
    "                         [--algo mopar|unsplit|uniform|latency-dp|nonsplit|clockwork++]\n"
    "                         [--codec none|fp16|zstd|ae] [--ae-ratio R] [--shm]\n"
    "                         [--threshold X] [--no-elim] [--latency-slack F] [--json] [-o DIR]\n"
    "                         [--nonsplit-limit S] [--window T] [--trace FILE]\n"
    "                         [--objective cost|speed|balanced[:W]] [--cost-tolerance F]\n"
    "                         [--serve [--serve-duration T] [--keep-alive T] [--rps MIN:MAX]\n"
    "                                  [--cold-start T]]\n"
    "                         [--run [--store redis://HOST:PORT] [--repeat R] [--warmup W]]\n"
    "                         [--dim N=V]... [--input NAME=SIZES]... [--cost-params F]\n"
    "  --platform P   a placer-platform/1 file (examples/platforms/aws-lambda.json, "
    "openfaas.json)\n"
    "  --algo A       print only A's plan (default: the answer, the front, and MOPAR and every\n"
    "                 baseline side by side)\n"
    "  --objective O  which plan is the answer, as Lambda Power Tuning's strategies (default\n"
    "                 cost): cost, the cheapest or a faster one within --cost-tolerance of it;\n"
    "                 speed, the fastest; balanced:W, the least W x cost / the dearest +\n"
    "                 (1 - W) x latency / the slowest (W in [0, 1], default 0.5). It also picks\n"
    "                 the unsplit function's memory (MOPAR's latency bound) and MOPAR's plan\n"
    "  --cost-tolerance F  how much dearer (a fraction) than the cheapest a faster plan may be\n"
    "                 and win under --objective cost (default 0.01)\n"
    "  --codec C      how tensors crossing a cut are compressed (default none): fp16 and zstd\n"
    "                 are measured on this machine, ae is MOPAR's auto-encoder, modelled\n"
    "  --ae-ratio R   the auto-encoder's compression ratio (default 8)\n"
    "  --shm          cut tensors through shared memory (the platform must offer it), not the\n"
    "                 store\n"
    "  --threshold X  node elimination's memory similarity (default 0.05)\n"
    "  --no-elim      no graph simplification before the DP\n"
    "  --latency-slack F  MOPAR may be up to F (a fraction) slower than unsplit (default 0)\n"
    "  --nonsplit-limit S  CBC's time on NonSplit's integer program (default 10 s): the best\n"
    "                 plan by then (docs/serverless.md, \"NonSplit\")\n"
    "  --window T     Clockwork++'s window (default 60s, AlpaServe's): its instances are re-sized\n"
    "                 at each window's boundary and billed while held; its cost per request is\n"
    "                 what serving the default trace (250 to 1,250 requests a second, 600 s) "
    "bills\n"
    "  --trace FILE   the plan shown in full (the answer, or --algo's) as the simulator runs it,\n"
    "                 Chrome trace JSON (Perfetto): one track per function, the store, each link\n"
    "  --serve        also replays a diurnal trace (MOPAR's: 250 to 1,250 requests a second) on\n"
    "                 every plan: latency percentiles, memory per 100 requests a second\n"
    "  --serve-duration T  the trace's length, one period of its sine (default 600s); the\n"
    "                 old spelling --trace T is still taken with --serve when T is a duration\n"
    "  --keep-alive T how long an idle instance stays warm (default 60s)\n"
    "  --rps MIN:MAX  the trace's lowest and highest rate (default 250:1250)\n"
    "  --cold-start T the replay's cold start instead of the platform's (0: warm pools)\n"
    "  --run          runs the plan's slices for real on this machine: each a worker process,\n"
    "                 every cut tensor through a Redis server (started by placer unless\n"
    "                 --store names one), or through tmpfs files with --shm; measured latency,\n"
    "                 billed durations, peak memory and the bill beside the prediction (R timed\n"
    "                 requests after W: 10, 2)\n"
    "  -o DIR         writes the plan's slices (the answer's, or --algo's) as one runnable ONNX "
    "file\n"
    "                 each and a manifest (docs/split.md)\n"
    "exit status: 0 done, 2 bad input or failure\n";

typedef struct sl_args {
    cli_common co;
    const char *platform, *dir;
    const char *trace, *trace_arg; /* --trace: the Perfetto file; as given */
    int algo;                      /* -1: all */
    pl_sl_opts so;
    double ae_ratio;
    bool serve;
    pl_sl_serve_opts serve_o;
    double cold_start_s; /* --cold-start: the replay's, < 0 when not given */
    bool run;
    pl_sl_run_opts run_o;
} sl_args;

/* ---- the codec's figures ---- */

/* Measures fp16 or zstd on a tensor like the cut tensors (1 Mi floats, ReLU-like: half zeros),
 * or models the auto-encoder on the largest cut tensor's shape. */
static int codec_figures(const pl_graph *g, const pl_platform *pf, const pl_cost_params *p,
                         sl_args *a, pl_err *err)
{
    pl_sl_opts *so = &a->so;
    so->codec_cost = (pl_codec_cost){1, 0, 0};
    if (so->codec == PL_CODEC_NONE) return 0;
    if (so->codec == PL_CODEC_AE) {
        int64_t dims[4] = {1, 64, 56, 56};
        int rank = 4;
        double most = 0;
        for (int t = 0; t < g->n_tensors; t++)
            if (g->tensors[t].producer >= 0 && g->tensors[t].bytes > most && g->tensors[t].rank > 0)
                most = (double)g->tensors[t].bytes, rank = g->tensors[t].rank,
                memcpy(dims, g->tensors[t].dims, (size_t)(rank < 4 ? rank : 4) * sizeof *dims);
        pl_codec_ae_cost(dims, rank < 4 ? rank : 4, a->ae_ratio, &pf->vcpu->devs[0], p,
                         &so->codec_cost);
        return 0;
    }
    size_t n = (size_t)1 << 20;
    float *x = pl_malloc(n * sizeof *x);
    uint64_t s = 1;
    for (size_t i = 0; i < n; i++)
        x[i] = (i & 1) ? (float)(pl_rng_uniform(&s) * 4) : 0.0f;
    int rc = pl_codec_measure(so->codec, x, n, 5, &so->codec_cost, err);
    free(x);
    return rc;
}

/* ---- output ---- */

/* How a plan served by windows (Clockwork++) was priced: the window and the trace it served. */
static json_t *priced_by_json(const pl_sl_plan *p)
{
    pl_sl_serve_opts t;
    pl_sl_serve_defaults(&t);
    return json_pack("{s:s, s:f, s:{s:f, s:f, s:f, s:b, s:I}}", "policy",
                     "serving by windows: instances for each window's peak, held through it",
                     "window_s", p->window_s, "trace", "duration_s", t.duration_s, "rps_min",
                     t.rps_min, "rps_max", t.rps_max, "poisson", t.poisson, "seed",
                     (json_int_t)t.seed);
}

/* The note under the table for a plan priced by serving (Clockwork++). */
static void print_priced_by(const pl_sl_plan *p)
{
    pl_sl_serve_opts t;
    pl_sl_serve_defaults(&t);
    printf("%s: priced by serving, not per invocation: windows of %g s, each holding the "
           "instances its peak needs, billed while held, over %.0f to %.0f requests a second "
           "for %.0f s (Poisson, seed %llu)\n",
           pl_sl_algo_name(p->algo), p->window_s, t.rps_min, t.rps_max, t.duration_s,
           (unsigned long long)t.seed);
}

static json_t *plan_json(const pl_graph *g, const pl_sl_graph *sg, const pl_sl_plan *p,
                         const char *name)
{
    json_t *slices = json_array();
    for (int k = 0; k < p->n; k++) {
        const pl_sl_slice *s = &p->slices[k];
        json_t *ops = json_array();
        json_t *layers = json_array();
        for (int l = s->first; l <= s->last; l++) {
            if (!pl_sl_slice_has(p, k, l)) continue; /* a NonSplit function skips layers */
            json_array_append_new(layers, json_integer(l));
            for (int m = 0; m < sg->layers[l].n_ops; m++)
                json_array_append_new(ops, json_string(g->ops[sg->layers[l].ops[m]].name));
        }
        json_array_append_new(
            slices,
            json_pack("{s:i, s:i, s:f, s:f, s:f, s:b, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
                      "s:f, s:f, s:f, s:o, s:o}",
                      "first_layer", s->first, "last_layer", s->last, "memory_mb", s->mem_mb,
                      "weights_mb", s->weight_mb, "activations_mb", s->act_mb, "raised", s->raised,
                      "eta", s->eta, "compute_s", s->compute_s, "comm_s", s->comm_s, "invoke_s",
                      s->invoke_s, "payload_bytes", s->payload_bytes, "time_s", s->time_s,
                      "billed_s", s->billed_s, "gb_s", s->gb_s, "usd", s->usd, "in_bytes",
                      s->in_bytes, "out_bytes", s->out_bytes, "layers", layers, "ops", ops));
    }
    json_t *j = json_pack("{s:s, s:b, s:f, s:f, s:f, s:f, s:f, s:o}", "algo", name, "exact",
                          p->exact, "latency_s", p->latency_s, "usd_per_request", p->usd,
                          "usd_per_million", p->usd * 1e6, "gb_s_per_request", p->gb_s,
                          "bytes_moved", p->bytes_moved, "slices", slices);
    if (p->window_s > 0) json_object_set_new(j, "priced_by", priced_by_json(p));
    return j;
}

static void print_plans(const pl_sl_plan *plans, int n, const pl_sl_plan *unsplit)
{
    pl_table *t = pl_table_new("algorithm|>slices|>latency ms|>USD per request|>USD per million|"
                               ">GB-s per request|>moved|>cost vs unsplit|exact");
    for (int a = 0; a < n; a++) {
        const pl_sl_plan *p = &plans[a];
        char b[32];
        if (!p->n) {
            pl_table_row(t, "%s|-|-|-|-|-|-|-|-", pl_sl_algo_name(p->algo));
            continue;
        }
        char ratio[32] = "-";
        if (unsplit && unsplit->usd > 0)
            snprintf(ratio, sizeof ratio, "%.3fx", unsplit->usd / p->usd);
        pl_table_row(t, "%s|%d|%.3f|%.4g|%.2f|%.4f|%s|%s|%s", pl_sl_algo_name(p->algo), p->n,
                     p->latency_s * 1e3, p->usd, p->usd * 1e6, p->gb_s,
                     pl_fmt_bytes(p->bytes_moved, b, sizeof b), ratio, p->exact ? "yes" : "no");
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    for (int a = 0; a < n; a++)
        if (plans[a].n && plans[a].window_s > 0) print_priced_by(&plans[a]);
}

static void print_slices(const pl_platform *pf, const pl_sl_graph *sg, const pl_sl_plan *p,
                         const char *whose)
{
    printf("\n%s's slices\n", whose);
    pl_table *t = pl_table_new("slice|layers|>ops|>memory MB|>vCPUs|>eta|>compute ms|>comm ms|"
                               ">invoke ms|>payload|>billed ms|>GB-s|>USD");
    for (int k = 0; k < p->n; k++) {
        const pl_sl_slice *s = &p->slices[k];
        int ops = 0, n = 0;
        for (int l = s->first; l <= s->last; l++)
            if (pl_sl_slice_has(p, k, l)) ops += sg->layers[l].n_ops, n++;
        char layers[48]; /* a NonSplit function may skip layers of its range: marked * */
        snprintf(layers, sizeof layers, "%d-%d%s", s->first, s->last,
                 n == s->last - s->first + 1 ? "" : "*");
        char b[32];
        pl_table_row(t, "%d|%s|%d|%.0f|%.2f|%d|%.3f|%.3f|%.3f|%s|%.0f|%.5f|%.4g", k, layers, ops,
                     s->mem_mb, pl_platform_vcpus(pf, s->mem_mb), s->eta, s->compute_s * 1e3,
                     s->comm_s * 1e3, s->invoke_s * 1e3,
                     pl_fmt_bytes(s->payload_bytes, b, sizeof b), s->billed_s * 1e3, s->gb_s,
                     s->usd);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

/* ---- the front and the answer ---- */

/* The front of every partition at every memory option, with every algorithm's plan added (so
 * that no row printed beside it beats the answer), and the plans marked on it. */
typedef struct answer {
    pl_sl_front f;
    int pick, knee, cheapest, fastest; /* indices into f.plans */
} answer;

static const char *found_by(int by)
{
    return by < 0 ? "front" : pl_sl_algo_name(by);
}

/* Every finder of a plan of the front: the algorithms whose plan it is, then "front" when the
 * front's own DP found it too. */
static const char *finders(unsigned found, char *b, size_t n)
{
    b[0] = 0;
    for (int a = 0; a <= PL_SL_ALGO_COUNT; a++) {
        int bit = a < PL_SL_ALGO_COUNT ? a + 1 : 0;
        if (found >> bit & 1)
            snprintf(b + strlen(b), n - strlen(b), "%s%s", b[0] ? ", " : "",
                     a < PL_SL_ALGO_COUNT ? pl_sl_algo_name(a) : "front");
    }
    return b;
}

/* The layer graph a plan of the front is on: uniform's is the unsimplified one. */
static const pl_sl_graph *graph_of(int by, const pl_sl_graph *sg, const pl_sl_graph *raw)
{
    return by == PL_SL_UNIFORM ? raw : sg;
}

/* Every plan printed or in the JSON (each algorithm's, the front's) through the one plan checker
 * (docs/serverless.md, "One simulator"); the one shown in full drawn to --trace. */
static int check_plans(const sl_args *a, const pl_platform *pf, const pl_sl_graph *sg,
                       const pl_sl_graph *raw, const pl_sl_plan *plans, const answer *ans,
                       const pl_sl_plan *shown, pl_err *err)
{
    for (int k = 0; k < PL_SL_ALGO_COUNT; k++)
        if (plans[k].n && pl_sl_plan_check(graph_of(k, sg, raw), pf, &a->so, &plans[k],
                                           &plans[k] == shown ? a->trace : NULL, err) < 0)
            return -1;
    for (int k = 0; a->algo < 0 && k < ans->f.n; k++)
        if (pl_sl_plan_check(graph_of(ans->f.by[k], sg, raw), pf, &a->so, &ans->f.plans[k],
                             &ans->f.plans[k] == shown ? a->trace : NULL, err) < 0)
            return -1;
    return 0;
}

static int make_answer(const sl_args *a, const pl_platform *pf, const pl_sl_graph *sg,
                       const pl_sl_graph *raw, const pl_sl_plan *plans, answer *ans, pl_err *err)
{
    if (pl_sl_front_make(sg, pf, &a->so, &ans->f, err) < 0) return -1;
    for (int k = 0; k < PL_SL_ALGO_COUNT; k++)
        if (plans[k].n) pl_sl_front_add(&ans->f, &plans[k], graph_of(k, sg, raw)->n);
    const pl_sl_front *f = &ans->f;
    ans->pick = pl_sl_pick(f->plans, f->n, &a->so);
    ans->knee = pl_sl_knee(f->plans, f->n);
    ans->cheapest = ans->fastest = 0;
    for (int k = 1; k < f->n; k++) {
        if (f->plans[k].usd < f->plans[ans->cheapest].usd) ans->cheapest = k;
        if (f->plans[k].latency_s < f->plans[ans->fastest].latency_s) ans->fastest = k;
    }
    return 0;
}

/* What --objective says, in words. */
static void objective_text(const pl_sl_opts *o, char *b, size_t n)
{
    if (o->objective == PL_SL_SPEED)
        snprintf(b, n, "speed: the fastest plan");
    else if (o->objective == PL_SL_BALANCED)
        snprintf(b, n,
                 "balanced:%g: the least %g x cost / the dearest + %g x latency / the slowest",
                 o->balanced_weight, o->balanced_weight, 1 - o->balanced_weight);
    else
        snprintf(b, n, "cost: the cheapest plan, or the fastest at most %g %% dearer",
                 o->cost_tolerance * 100);
}

static void front_row(pl_table *t, const char *what, const answer *ans, int k)
{
    const pl_sl_plan *p = &ans->f.plans[k], *c = &ans->f.plans[ans->cheapest];
    char b[160];
    pl_table_row(t, "%s|%d|%.3f|%.4f|%+.2f %%|%.4f|%s", what, p->n, p->latency_s * 1e3,
                 p->usd * 1e6, (p->usd / c->usd - 1) * 100, p->gb_s,
                 finders(ans->f.found[k], b, sizeof b));
}

/* Why the front may miss plans: the DP cut short by its budget, or a front thinned at its cap. */
static const char *front_caveat(const pl_sl_front *f, char *b, size_t n)
{
    if (f->cut_short)
        snprintf(b, n,
                 "; the DP was cut short after %ld candidate plans (its budget): the later layers "
                 "extended a few plans of each earlier front (not exact)",
                 f->extensions);
    else
        snprintf(b, n, "%s", f->exact ? "" : "; the DP thinned its fronts (not exact)");
    return b;
}

static void print_front(const sl_args *a, const answer *ans)
{
    char b[160], c[192];
    objective_text(&a->so, b, sizeof b);
    printf("objective  %s\nfront      %d plans that no other beats on both cost and latency "
           "(split points x memory sizes x eta, and every algorithm's plan)%s\n\n",
           b, ans->f.n, front_caveat(&ans->f, c, sizeof c));
    pl_table *t = pl_table_new("plan|>slices|>latency ms|>USD per million|>cost vs cheapest|"
                               ">GB-s per request|found by");
    front_row(t, "answer", ans, ans->pick);
    front_row(t, "cheapest", ans, ans->cheapest);
    front_row(t, "knee", ans, ans->knee);
    front_row(t, "fastest", ans, ans->fastest);
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf("\n");
}

static json_t *front_json(const sl_args *a, const answer *ans)
{
    json_t *pts = json_array();
    for (int k = 0; k < ans->f.n; k++) {
        const pl_sl_plan *p = &ans->f.plans[k];
        json_t *mem = json_array(), *eta = json_array(), *by = json_array();
        for (int a = 0; a <= PL_SL_ALGO_COUNT; a++)
            if (ans->f.found[k] >> (a < PL_SL_ALGO_COUNT ? a + 1 : 0) & 1)
                json_array_append_new(
                    by, json_string(a < PL_SL_ALGO_COUNT ? pl_sl_algo_name(a) : "front"));
        for (int s = 0; s < p->n; s++)
            json_array_append_new(mem, json_real(p->slices[s].mem_mb)),
                json_array_append_new(eta, json_integer(p->slices[s].eta));
        json_array_append_new(pts, json_pack("{s:i, s:f, s:f, s:f, s:o, s:o, s:o}", "slices", p->n,
                                             "latency_s", p->latency_s, "usd_per_request", p->usd,
                                             "gb_s_per_request", p->gb_s, "found_by", by,
                                             "memory_mb", mem, "eta", eta));
    }
    char b[160];
    objective_text(&a->so, b, sizeof b);
    return json_pack(
        "{s:{s:s, s:f, s:f, s:s}, s:b, s:b, s:I, s:i, s:i, s:i, s:i, s:o}", "objective", "name",
        a->so.objective == PL_SL_SPEED      ? "speed"
        : a->so.objective == PL_SL_BALANCED ? "balanced"
                                            : "cost",
        "cost_tolerance", a->so.cost_tolerance, "balanced_weight", a->so.balanced_weight, "rule", b,
        "exact", ans->f.exact, "cut_short", ans->f.cut_short, "extensions",
        (json_int_t)ans->f.extensions, "answer", ans->pick, "cheapest", ans->cheapest, "knee",
        ans->knee, "fastest", ans->fastest, "plans", pts);
}

/* ---- serving a trace ---- */

static json_t *serve_json(const pl_sl_serve_result *r)
{
    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:f}", "requests",
                     (json_int_t)r->requests, "p50_s", r->p50_s, "p95_s", r->p95_s, "p99_s",
                     r->p99_s, "mem_gb_avg", r->mem_gb_avg, "mem_gb_per_100rps",
                     r->mem_gb_per_100rps, "instances", (json_int_t)r->instances, "cold_starts",
                     (json_int_t)r->cold_starts, "busy_gb_s", r->busy_gb_s, "usd_per_request",
                     r->usd_per_request);
}

static void print_serve(const sl_args *a, const pl_platform *pf, const pl_sl_plan *plans,
                        const pl_sl_serve_result *res)
{
    const pl_sl_serve_opts *o = &a->serve_o;
    printf("\nserving a diurnal trace: %.0f to %.0f requests a second over %.0f s (Poisson, seed "
           "%llu), instances warm for %.0f s after use, cold start %g s\n",
           o->rps_min, o->rps_max, o->duration_s, (unsigned long long)o->seed, o->keep_alive_s,
           pf->cold_start_s);
    pl_table *t = pl_table_new("algorithm|>requests|>P50 ms|>P95 ms|>P99 ms|>memory GB|"
                               ">GB per 100 rps|>instances|>cold starts|>USD per million");
    for (int k = 0; k < PL_SL_ALGO_COUNT; k++)
        if (plans[k].n)
            pl_table_row(t, "%s|%ld|%.1f|%.1f|%.1f|%.1f|%.3f|%ld|%ld|%.2f", pl_sl_algo_name(k),
                         res[k].requests, res[k].p50_s * 1e3, res[k].p95_s * 1e3,
                         res[k].p99_s * 1e3, res[k].mem_gb_avg, res[k].mem_gb_per_100rps,
                         res[k].instances, res[k].cold_starts, res[k].usd_per_request * 1e6);
    pl_table_print(t, stdout);
    pl_table_free(t);
    for (int k = 0; k < PL_SL_ALGO_COUNT; k++)
        if (plans[k].n && plans[k].window_s > 0)
            printf("%s: served by windows of %g s instead (instances for each window's peak, "
                   "started before it, held and billed through it)\n",
                   pl_sl_algo_name(k), plans[k].window_s);
}

/* ---- the slices as a split ---- */

static int write_split(const char *model, const pl_graph *g, const pl_sl_graph *sg,
                       const pl_sl_plan *p, const char *dir, pl_err *err)
{
    pl_plan *plan = pl_plan_new(g->n_ops, p->n);
    for (int k = 0; k < p->n; k++)
        for (int l = p->slices[k].first; l <= p->slices[k].last; l++)
            for (int m = 0; pl_sl_slice_has(p, k, l) && m < sg->layers[l].n_ops; m++)
                plan->dev[sg->layers[l].ops[m]] = k;
    char(*names)[32] = pl_calloc((size_t)p->n + 1, sizeof *names);
    const char **np = pl_calloc((size_t)p->n + 1, sizeof *np);
    for (int k = 0; k < p->n; k++)
        snprintf(names[k], sizeof names[k], "function_%d", k), np[k] = names[k];
    pl_stages s = {0};
    int rc = pl_split_stages_by(g, plan, PL_SPLIT_FEWEST, &s, err) < 0 ||
                     pl_split_write(model, g, &s, np, dir, err) < 0
                 ? -1
                 : 0;
    pl_stages_free(&s);
    free(np), free(names);
    pl_plan_free(plan);
    return rc;
}

/* ---- running the slices for real ---- */

static json_t *run_json(const pl_platform *pf, const pl_sl_plan *p, const pl_sl_run_result *r,
                        const pl_sl_opts *o)
{
    json_t *fns = json_array();
    for (int k = 0; k < r->n; k++)
        json_array_append_new(fns, json_pack("{s:f, s:f, s:f, s:f}", "predicted_s",
                                             k < p->n ? p->slices[k].time_s : NAN, "billed_s",
                                             r->fn_s[k], "onnxruntime_s", r->fn_run_s[k],
                                             "peak_rss_bytes", r->fn_rss_bytes[k]));
    return json_pack("{s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:o}", "repeat", r->repeat,
                     "latency_median_s", r->latency_median_s, "latency_p95_s", r->latency_p95_s,
                     "bytes_through_store", r->bytes_through_store, "ops_through_store",
                     r->ops_through_store, "usd_per_request", pl_sl_run_usd(pf, p, r, o),
                     "predicted_latency_s", p->latency_s, "functions", fns);
}

static void print_run(const pl_platform *pf, const pl_sl_plan *p, const pl_sl_run_result *r,
                      const pl_sl_opts *o)
{
    char b1[32], b2[32];
    printf("\nrun for real on this machine (%d requests after the warm-ups; every cut tensor "
           "through %s)\n",
           r->repeat, pl_sl_transport(pf, o) == &pf->shm ? "shared memory (tmpfs files)" : "Redis");
    pl_table *t = pl_table_new("function|>memory MB|>predicted ms|>billed ms|>onnxruntime ms|"
                               ">peak RSS");
    for (int k = 0; k < r->n && k < p->n; k++)
        pl_table_row(t, "%d|%.0f|%.3f|%.3f|%.3f|%s", k, p->slices[k].mem_mb,
                     p->slices[k].time_s * 1e3, r->fn_s[k] * 1e3, r->fn_run_s[k] * 1e3,
                     pl_fmt_bytes(r->fn_rss_bytes[k], b1, sizeof b1));
    pl_table_print(t, stdout);
    pl_table_free(t);
    printf("latency    %.3f ms median, %.3f ms P95 (predicted %.3f ms)\n",
           r->latency_median_s * 1e3, r->latency_p95_s * 1e3, p->latency_s * 1e3);
    printf("store      %s per request (predicted %s)\n",
           pl_fmt_bytes(r->bytes_through_store, b1, sizeof b1),
           pl_fmt_bytes(p->bytes_moved, b2, sizeof b2));
    printf("bill       %.4g USD per request at %s's prices for the measured durations "
           "(predicted %.4g)\n",
           pl_sl_run_usd(pf, p, r, o), pf->name, p->usd);
    if (o->codec != PL_CODEC_NONE)
        printf("note       the run moves cut tensors uncompressed: the plan's %s codec is priced, "
               "not run\n",
               pl_codec_name(o->codec));
    if (!pf->vcpu->devs[0].this_machine || pl_platform_vcpus(pf, 0) < 1)
        printf("note       each function ran on a whole core of this machine: %s's vCPU (%s) "
               "and a share of one below a whole are not emulated\n",
               pf->name, pf->vcpu->devs[0].model ? pf->vcpu->devs[0].model : "?");
}

/* Writes the plan's slices into dir (or a temporary folder) and runs them; prints or adds to
 * json. */
static int run_for_real(const sl_args *a, const pl_graph *g, const pl_platform *pf,
                        const pl_sl_graph *sg, const pl_sl_plan *p, json_t *json, pl_err *err)
{
    char tmp[4096];
    const char *dir = a->dir;
    if (!dir) {
        if (pl_make_temp_dir("placer-serverless", tmp, sizeof tmp, err) < 0) return -1;
        dir = tmp;
        if (write_split(a->co.model, g, sg, p, dir, err) < 0) return pl_remove_tree(tmp), -1;
    }
    pl_sl_run_result r;
    pl_sl_run_opts ro = a->run_o;
    ro.shm = pl_sl_transport(pf, &a->so) == &pf->shm; /* the plan's transport */
    int rc = pl_sl_run(dir, &ro, &r, err);
    if (!a->dir) pl_remove_tree(tmp);
    if (rc < 0) return -1;
    if (json)
        json_object_set_new(json, "run", run_json(pf, p, &r, &a->so));
    else
        print_run(pf, p, &r, &a->so);
    pl_sl_run_result_free(&r);
    return 0;
}

/* ---- the verb ---- */

static json_t *result_json(const sl_args *a, const pl_graph *g, const pl_platform *pf,
                           const pl_sl_graph *sg, const pl_sl_graph *raw, const pl_sl_plan *plans,
                           int n, const pl_sl_serve_result *res)
{
    json_t *algos = json_array();
    for (int k = 0; k < n; k++)
        if (plans[k].n) {
            json_t *j = plan_json(g, k == PL_SL_UNIFORM ? raw : sg, &plans[k], pl_sl_algo_name(k));
            if (a->serve) json_object_set_new(j, "serving", serve_json(&res[k]));
            json_array_append_new(algos, j);
        }
    return json_pack("{s:s, s:s, s:s, s:{s:i, s:i, s:i, s:i}, s:{s:s, s:f, s:f, s:f}, s:o}",
                     "format", "placer-serverless/1", "model", a->co.model, "platform", pf->name,
                     "layers", "before", sg->n_before, "after", sg->n, "node_eliminations",
                     sg->node_elims, "edge_eliminations", sg->edge_elims, "codec", "name",
                     pl_codec_name(a->so.codec), "ratio", a->so.codec_cost.ratio, "encode_s_per_B",
                     a->so.codec_cost.encode_s_per_B, "decode_s_per_B",
                     a->so.codec_cost.decode_s_per_B, "algorithms", algos);
}

/* Every algorithm (or the one asked for) on sg; uniform on the unsimplified layers `raw`, with
 * MOPAR's slice count. */
static int make_plans(const sl_args *a, const pl_platform *pf, const pl_sl_graph *sg,
                      const pl_sl_graph *raw, pl_sl_plan *plans, pl_err *err)
{
    int k = 0;
    for (int al = 0; al < PL_SL_ALGO_COUNT; al++) {
        plans[al].algo = al;
        bool want = a->algo < 0 || a->algo == al;
        if (!want && !(al == PL_SL_MOPAR && a->algo >= 0)) continue;
        const pl_sl_graph *on = al == PL_SL_UNIFORM ? raw : sg;
        if (pl_sl_plan_make(on, pf, &a->so, al, k, &plans[al], err) < 0) {
            /* a baseline that does not fit (unsplit, uniform's equal slices, clockwork++'s
               whole model) or whose solver fails (nonsplit) is a row of "-", said on stderr:
               MOPAR's plan and the front still answer */
            bool optional = al != PL_SL_MOPAR;
            if (!optional || a->algo == al) return -1;
            fprintf(stderr, "placer serverless: note: %s\n", err->msg); /* MOPAR: no bound */
            plans[al].algo = al;
            continue;
        }
        if (al == PL_SL_MOPAR) k = plans[al].n;
        if (!want) pl_sl_plan_free(&plans[al]), plans[al].algo = al;
    }
    return 0;
}

/* Whether the replays of every plan together would pass PL_SL_SERVE_INVOCATIONS_MAX (about
 * 7 s here: docs/serverless.md, "Serving a trace"); said when they would. */
static bool serve_too_long(const sl_args *a, const pl_sl_plan *plans)
{
    int fns = 0, n = 0;
    for (int k = 0; k < PL_SL_ALGO_COUNT; k++)
        fns += plans[k].n, n += plans[k].n > 0;
    double inv = a->serve_o.duration_s * a->serve_o.rps_max * fns;
    if (inv <= PL_SL_SERVE_INVOCATIONS_MAX) return false;
    cli_error(
        "serverless",
        "--serve: %g s at up to %g requests a second through the %d functions of %d plans "
        "is %.3g invocations; at most %.3g are replayed (a shorter --serve-duration, or --algo A "
        "for one plan)",
        a->serve_o.duration_s, a->serve_o.rps_max, fns, n, inv, PL_SL_SERVE_INVOCATIONS_MAX);
    return true;
}

static cli_exit run(sl_args *a)
{
    pl_err err = {""};
    pl_load_opts lo = {.dims = (const char **)a->co.dims,
                       .n_dims = a->co.n_dims,
                       .input_shapes = (const char **)a->co.shapes,
                       .n_input_shapes = a->co.n_shapes};
    pl_graph *g = pl_graph_load(a->co.model, &lo, &err);
    pl_platform *pf = g ? pl_platform_load(a->platform, &err) : NULL;
    if (!g || !pf) {
        pl_graph_free(g);
        return cli_fail("serverless", "%s", err.msg);
    }
    if (a->so.shm && !pf->shm.present) { /* the help promises it: never the store instead */
        cli_fail("serverless",
                 "--shm: %s: the platform offers no shared memory (no "
                 "\"shared_memory\"); leave --shm out to use its store",
                 a->platform);
        pl_platform_free(pf), pl_graph_free(g);
        return CLI_EXIT_BAD_INPUT;
    }
    cli_print_warnings(g);
    pl_cost_params params;
    pl_sl_graph *sg = NULL, *raw = NULL;
    pl_sl_plan plans[PL_SL_ALGO_COUNT] = {0};
    answer ans = {0};
    cli_exit status = CLI_EXIT_BAD_INPUT;
    if (cli_cost_params("serverless", &a->co, (const pl_cluster *const *)&pf->vcpu, 1, &params) < 0)
        goto out;
    if (codec_figures(g, pf, &params, a, &err) < 0 ||
        !(sg = pl_sl_from_graph(g, pf, &params, &err)) ||
        !(raw = pl_sl_from_graph(g, pf, &params, &err))) {
        cli_fail("serverless", "%s", err.msg);
        goto out;
    }
    if (!a->so.no_elim) pl_sl_eliminate(sg, a->so.threshold);
    if (make_plans(a, pf, sg, raw, plans, &err) < 0) {
        cli_fail("serverless", "%s: %s", a->co.model, err.msg);
        goto out;
    }
    if (a->algo < 0 && make_answer(a, pf, sg, raw, plans, &ans, &err) < 0) {
        cli_fail("serverless", "%s: %s", a->co.model, err.msg);
        goto out;
    }
    /* the plan shown in full, written and run: the answer, or --algo's */
    const pl_sl_plan *shown = a->algo >= 0 ? &plans[a->algo] : &ans.f.plans[ans.pick];
    int shown_by = a->algo >= 0 ? a->algo : ans.f.by[ans.pick];
    const pl_sl_graph *shown_sg = graph_of(shown_by, sg, raw);
    char whose[200], fb[160] = "";
    if (a->algo < 0) finders(ans.f.found[ans.pick], fb, sizeof fb);
    snprintf(whose, sizeof whose, a->algo >= 0 ? "%s" : "the answer (found by %s)",
             a->algo >= 0 ? pl_sl_algo_name(a->algo) : fb);
    if (check_plans(a, pf, sg, raw, plans, &ans, shown, &err) < 0) {
        cli_fail("serverless", "%s: %s", a->co.model, err.msg);
        goto out;
    }
    if ((a->dir || a->run) && shown->fn_of) { /* its functions would call each other back */
        cli_fail("serverless",
                 "-o and --run take contiguous slices; the functions of %s are not (--algo "
                 "mopar for MOPAR's)",
                 whose);
        goto out;
    }
    if (a->dir && write_split(a->co.model, g, shown_sg, shown, a->dir, &err) < 0) {
        cli_fail("serverless", "%s", err.msg);
        goto out;
    }
    pl_sl_serve_result res[PL_SL_ALGO_COUNT] = {0};
    if (a->cold_start_s >= 0) pf->cold_start_s = a->cold_start_s; /* the replay's only */
    if (a->serve && serve_too_long(a, plans)) goto out;
    for (int k = 0; k < PL_SL_ALGO_COUNT && a->serve; k++)
        if (plans[k].n && pl_sl_serve(&plans[k], pf, &a->serve_o, &res[k], &err) < 0) {
            cli_fail("serverless", "--serve: %s: %s", pl_sl_algo_name(k), err.msg);
            goto out;
        }
    if (a->co.json) {
        json_t *j = result_json(a, g, pf, sg, raw, plans, PL_SL_ALGO_COUNT, res);
        if (a->algo < 0) {
            json_t *an = plan_json(g, shown_sg, shown, found_by(shown_by));
            json_object_set_new(an, "found_by", json_string(fb));
            json_object_set_new(j, "answer", an);
            json_object_set_new(j, "front", front_json(a, &ans));
        }
        if (a->run && run_for_real(a, g, pf, shown_sg, shown, j, &err) < 0) {
            json_decref(j);
            cli_fail("serverless", "--run: %s", err.msg);
            goto out;
        }
        cli_json_out(j);
    } else {
        printf("%-10s %s (%d ops): %d layers, %d after simplification (%d node, %d edge "
               "eliminations)\n%-10s %s, cut tensors %s, through %s\n\n",
               "model", a->co.model, g->n_ops, sg->n_before, sg->n, sg->node_elims, sg->edge_elims,
               "platform", pf->name,
               a->so.codec == PL_CODEC_NONE ? "uncompressed" : pl_codec_name(a->so.codec),
               pl_sl_transport(pf, &a->so) == &pf->shm ? "shared memory" : "the store");
        if (a->algo < 0) print_front(a, &ans);
        print_plans(plans, PL_SL_ALGO_COUNT, plans[PL_SL_UNSPLIT].n ? &plans[PL_SL_UNSPLIT] : NULL);
        print_slices(pf, shown_sg, shown, whose);
        if (a->serve) print_serve(a, pf, plans, res);
        if (a->dir) printf("\nwritten    %s (one ONNX file per function, manifest.json)\n", a->dir);
        fflush(stdout);
        if (a->run && run_for_real(a, g, pf, shown_sg, shown, NULL, &err) < 0) {
            cli_fail("serverless", "--run: %s", err.msg);
            goto out;
        }
    }
    status = CLI_EXIT_OK;
out:
    for (int k = 0; k < PL_SL_ALGO_COUNT; k++)
        pl_sl_plan_free(&plans[k]);
    pl_sl_front_free(&ans.f);
    pl_sl_free(sg), pl_sl_free(raw);
    pl_platform_free(pf);
    pl_graph_free(g);
    return status;
}

enum {
    PLATFORM = CLI_OWN,
    ALGO,
    CODEC,
    AE_RATIO,
    THRESHOLD,
    LATENCY_SLACK,
    SHM,
    NO_ELIM,
    TRACE,
    SERVE_DURATION, /* the --serve and --run options from here */
    KEEP_ALIVE,
    RPS,
    COLD_START,
    SERVE,
    RUN,
    STORE,
    REPEAT,
    WARMUP,
    NONSPLIT_LIMIT,
    OBJECTIVE,
    COST_TOLERANCE,
    WINDOW
};
static const struct option options[] = {{"platform", required_argument, NULL, PLATFORM},
                                        {"algo", required_argument, NULL, ALGO},
                                        {"codec", required_argument, NULL, CODEC},
                                        {"ae-ratio", required_argument, NULL, AE_RATIO},
                                        {"threshold", required_argument, NULL, THRESHOLD},
                                        {"latency-slack", required_argument, NULL, LATENCY_SLACK},
                                        {"shm", no_argument, NULL, SHM},
                                        {"no-elim", no_argument, NULL, NO_ELIM},
                                        {"trace", required_argument, NULL, TRACE},
                                        {"serve-duration", required_argument, NULL, SERVE_DURATION},
                                        {"keep-alive", required_argument, NULL, KEEP_ALIVE},
                                        {"rps", required_argument, NULL, RPS},
                                        {"cold-start", required_argument, NULL, COLD_START},
                                        {"serve", no_argument, NULL, SERVE},
                                        {"run", no_argument, NULL, RUN},
                                        {"store", required_argument, NULL, STORE},
                                        {"repeat", required_argument, NULL, REPEAT},
                                        {"warmup", required_argument, NULL, WARMUP},
                                        {"nonsplit-limit", required_argument, NULL, NONSPLIT_LIMIT},
                                        {"objective", required_argument, NULL, OBJECTIVE},
                                        {"cost-tolerance", required_argument, NULL, COST_TOLERANCE},
                                        {"window", required_argument, NULL, WINDOW},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

/* --rps MIN:MAX, the replayed trace's request rates. */
static int parse_rps(const char *v, pl_sl_serve_opts *o)
{
    double lo, hi;
    char tail;
    if (!v || sscanf(v, "%lf:%lf%c", &lo, &hi, &tail) != 2 || !(lo > 0) || !(hi >= lo) || hi > 1e6)
        return cli_error("serverless", "--rps wants MIN:MAX, 0 < MIN <= MAX <= 1e6, not '%s'",
                         v ? v : "");
    o->rps_min = lo, o->rps_max = hi;
    return 0;
}

/* --objective cost|speed|balanced[:W]. */
static int parse_objective(const char *v, pl_sl_opts *o)
{
    o->balanced_weight = 0.5; /* Power Tuning's default */
    if (v && !strcmp(v, "cost")) return o->objective = PL_SL_COST, 0;
    if (v && !strcmp(v, "speed")) return o->objective = PL_SL_SPEED, 0;
    if (v && !strncmp(v, "balanced", 8) && (!v[8] || v[8] == ':')) {
        o->objective = PL_SL_BALANCED;
        if (!v[8] || cli_number_in(v + 9, 0, 1, 0, &o->balanced_weight)) return 0;
        return cli_error("serverless", "--objective balanced:W wants W in [0, 1], not '%s'", v + 9);
    }
    return cli_error("serverless",
                     "--objective wants cost, speed, balanced or balanced:W, not '%s'", v ? v : "");
}

/* The options of --serve and --run. */
static int take_serve(sl_args *a, int c, const char *v)
{
    long n;
    switch (c) {
    case SERVE_DURATION:
        if (cli_seconds("serverless", "--serve-duration", v, &a->serve_o.duration_s) < 0) return -1;
        return a->serve_o.period_s = a->serve_o.duration_s, 0;
    case KEEP_ALIVE:
        return cli_seconds("serverless", "--keep-alive", v, &a->serve_o.keep_alive_s);
    case RPS:
        return parse_rps(v, &a->serve_o);
    case COLD_START:
        if (v && !strcmp(v, "0")) return a->cold_start_s = 0, 0;
        return cli_seconds("serverless", "--cold-start", v, &a->cold_start_s);
    case SERVE:
        return a->serve = true, 0;
    case RUN:
        return a->run = true, 0;
    case STORE:
        if (!v || strncmp(v, "redis://", 8))
            return cli_error("serverless", "--store wants redis://HOST:PORT, not '%s'", v ? v : "");
        return a->run_o.store_url = v, 0;
    case REPEAT:
        if (cli_count("serverless", "--repeat", v, 1, 100000, &n) < 0) return -1;
        return a->run_o.repeat = (int)n, 0;
    default: /* WARMUP */
        if (cli_count("serverless", "--warmup", v, 0, 100000, &n) < 0) return -1;
        return a->run_o.warmup = (int)n, 0;
    }
}

static int take(void *o, int c, const char *v)
{
    sl_args *a = o;
    long r;
    switch (c) {
    case PLATFORM:
        return cli_file("serverless", "--platform", v, "a platform file", &a->platform);
    case 'o':
        return cli_file("serverless", "-o", v, "a folder", &a->dir);
    case ALGO:
        if (!v || (a->algo = pl_sl_algo_parse(v)) < 0)
            return cli_error("serverless",
                             "--algo wants mopar, unsplit, uniform, latency-dp, nonsplit or "
                             "clockwork++");
        return 0;
    case CODEC: {
        int k = v ? pl_codec_parse(v) : -1;
        if (k < 0) return cli_error("serverless", "--codec wants none, fp16, zstd or ae");
        return a->so.codec = k, 0;
    }
    case AE_RATIO:
        if (cli_count("serverless", "--ae-ratio", v, 1, 1024, &r) < 0) return -1;
        return a->ae_ratio = (double)r, 0;
    case THRESHOLD:
        return cli_fraction("serverless", "--threshold", v, false, &a->so.threshold);
    case LATENCY_SLACK:
        return cli_number("serverless", "--latency-slack", v, 0, 100, 0, &a->so.latency_slack);
    case NONSPLIT_LIMIT:
        return cli_number("serverless", "--nonsplit-limit", v, 0, 3600, 1, &a->so.nonsplit_limit_s);
    case OBJECTIVE:
        return parse_objective(v, &a->so);
    case COST_TOLERANCE:
        return cli_number("serverless", "--cost-tolerance", v, 0, 10, 0, &a->so.cost_tolerance);
    case WINDOW: /* shorter windows than 1 ms only cost steps (a window each, 6e5 at most) */
        if (cli_seconds("serverless", "--window", v, &a->so.window_s) < 0) return -1;
        if (a->so.window_s < 1e-3)
            return cli_error("serverless", "--window: '%s' is shorter than 1 ms", v);
        return 0;
    case SHM:
        return a->so.shm = true, 0;
    case NO_ELIM:
        return a->so.no_elim = true, 0;
    case TRACE:
        return a->trace_arg = v, 0; /* a file, or the old --serve length: see trace_option */
    default:
        return take_serve(a, c, v);
    }
}

/* --trace V: the Perfetto file, as `place`, `simulate` and `run` name it. A V that reads as a
 * duration ("600s", "168h") is the old spelling of --serve-duration: the replay's length with
 * --serve, refused without it (a file so named can be given as ./600s). */
static int trace_option(sl_args *a)
{
    double s;
    pl_err e;
    const char *v = a->trace_arg;
    if (!v || pl_parse_quantity(v, PL_UNIT_SECONDS, &s, &e) < 0)
        return v ? cli_file("serverless", "--trace", v, "a file", &a->trace) : 0;
    if (!a->serve)
        return cli_error("serverless",
                         "--trace %s: --trace names the file of a Chrome trace (t.json); the "
                         "length of --serve's replay is --serve-duration T",
                         v);
    if (cli_seconds("serverless", "--trace", v, &a->serve_o.duration_s) < 0) return -1;
    return a->serve_o.period_s = a->serve_o.duration_s, 0;
}

/* The options, checked together; *asked when --help was asked (and printed). */
static cli_exit parse(int argc, char **argv, sl_args *a, bool *asked)
{
    cli_args g = CLI_ARGS("serverless", "ho:", help, false);
    cli_exit parsed = cli_parse(&g, &a->co, take, a);
    if (!cli_ok(parsed) || (*asked = g.asked_help)) return parsed;
    if (trace_option(a) < 0) return CLI_EXIT_BAD_INPUT;
    if (!a->co.model) return cli_fail("serverless", "which model? give MODEL\n%s", help);
    if (!a->platform)
        return cli_fail("serverless",
                        "which platform? give --platform P (examples in "
                        "examples/platforms/)\n%s",
                        help);
    /* before anything is loaded: every request is at least one invocation (serve_too_long) */
    if (a->serve && a->serve_o.duration_s * a->serve_o.rps_max > PL_SL_SERVE_INVOCATIONS_MAX)
        return cli_fail(
            "serverless",
            "--serve-duration %g s at up to %g requests a second is %.3g requests; the "
            "replay "
            "keeps each one's latency, so it takes at most 5e7 (a shorter --serve-duration)",
            a->serve_o.duration_s, a->serve_o.rps_max, a->serve_o.duration_s * a->serve_o.rps_max);
    if (a->co.cluster || a->co.catalog)
        return cli_fail("serverless", "a function's CPU is the platform's: no --cluster or "
                                      "--catalog");
    return CLI_EXIT_OK;
}

cli_exit cli_serverless(int argc, char **argv)
{
    sl_args a = {.co = {.refuse = CLI_NO_CONTENTION | CLI_NO_PROFILE},
                 .algo = -1,
                 .ae_ratio = 8,
                 .cold_start_s = -1,
                 .run_o = {.repeat = 10, .warmup = 2, .seed = 1}};
    pl_sl_serve_defaults(&a.serve_o); /* the trace Clockwork++ is priced on, too */
    a.so.threshold = 0.05, a.so.cost_tolerance = 0.01, a.so.balanced_weight = 0.5;
    bool asked = false;
    cli_exit parsed = parse(argc, argv, &a, &asked);
    return !cli_ok(parsed) || asked ? parsed : run(&a);
}
