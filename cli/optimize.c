/* optimize.c: `placer optimize MODEL -o OUT.onnx`: TASO's search over the rewrite rules
 * (docs/rewrite.md, "placer optimize"), the cheaper equivalent model written, and with --verify
 * compared with the original in onnxruntime. */
#include "cli.h"
#include "placer/dist.h"
#include "placer/cluster.h"
#include "placer/cost.h"
#include "placer/report.h"
#include "placer/rewrite.h"
#include "placer/runtime.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *help =
    "usage: placer optimize MODEL -o OUT.onnx [--cluster C | --catalog CAT --config NAME]\n"
    "                       [--alpha A] [--time-limit T] [--max-expand N] [--verify] [--json]\n"
    "  -o OUT.onnx      the rewritten model (weightless when MODEL is)\n"
    "  --cluster C      whose devices price the candidates (default: this machine's CPU)\n"
    "  --alpha A        keep a candidate costing < A x the best so far (default 1.05, >= 1)\n"
    "  --time-limit T   stop the search after T (e.g. 30s; default 60s)\n"
    "  --max-expand N   expand at most N candidates (default 200)\n"
    "  --verify         run the original and the rewritten model in onnxruntime on the same\n"
    "                   random inputs; a relative difference above 1e-5 is an error\n"
    "exit status: 0 done, 2 bad input, failure or a verification above 1e-5\n";

#define VERIFY_TOL 1e-5

typedef struct verify {
    bool done;
    double max_rel;
    char worst[128];
} verify;

/* The sites replayed on the inflated copy of the model (the weighted one onnxruntime runs),
 * compared with that copy on the same random inputs. */
static int run_verify(const char *model, const pl_rw_search_result *r, verify *v, pl_err *err)
{
    char cache[4096], ref[4096], tmp[4200];
    if (r->n_log == 0) /* nothing rewritten: the file is the model itself */
        return v->done = true, v->max_rel = 0, 0;
    if (pl_cache_dir("optimize", cache, sizeof cache, err) < 0) return -1;
    snprintf(tmp, sizeof tmp, "%s/optimize-verify-%ld.onnx", cache, (long)getpid());
    if (pl_rw_replay_inflated(model, cache, r->log, r->n_log, ref, sizeof ref, tmp, err) < 0)
        return -1;
    pl_ort *ort = pl_ort_start(&(pl_ort_opts){0}, err);
    pl_ort_compare_result c = {0};
    int rc = ort ? pl_ort_compare(ort, ref, (const char *const[]){tmp}, 1, &c, err) : -1;
    pl_ort_stop(ort);
    unlink(tmp);
    if (rc < 0) return -1;
    v->done = true;
    v->max_rel = c.finite ? c.max_rel : INFINITY;
    int worst = -1; /* a non-finite output first, else the largest difference */
    for (int i = 0; i < c.n_outputs; i++)
        if (worst < 0 || (!c.outputs[i].finite && c.outputs[worst].finite) ||
            (c.outputs[i].finite == c.outputs[worst].finite &&
             c.outputs[i].max_rel > c.outputs[worst].max_rel))
            worst = i;
    if (worst >= 0) snprintf(v->worst, sizeof v->worst, "%s", c.outputs[worst].name);
    pl_ort_compare_result_free(&c);
    return 0;
}

/* The log grouped by rule, in table order: count and the anchors. */
static void print_rules(const pl_rw_search_result *r)
{
    int n_rules;
    const pl_rw_rule *rules = pl_rw_rules(&n_rules);
    pl_table *t = pl_table_new("rule|>count|where (first node of each site)");
    for (int k = 0; k < n_rules; k++) {
        int n = 0;
        char where[200] = "";
        for (int i = 0; i < r->n_log; i++) {
            if (r->log[i].rule != k) continue;
            size_t len = strlen(where);
            if (n < 3)
                snprintf(where + len, sizeof where - len, "%s%s", n ? ", " : "",
                         r->log[i].nodes[0]);
            else if (n == 3)
                snprintf(where + len, sizeof where - len, ", ...");
            n++;
        }
        if (n) pl_table_row(t, "%s|%d|%s", rules[k].name, n, where);
    }
    if (r->n_log) pl_table_print(t, stdout);
    pl_table_free(t);
}

static void print_text(const char *model, const char *out, int ops0, int ops1,
                       const pl_rw_search_result *r, double alpha, double secs, const verify *v)
{
    printf("%-10s %s -> %s\n", "optimize", model, out);
    printf("%-10s %d -> %d\n", "ops", ops0, ops1);
    printf("%-10s %.4g ms -> %.4g ms (%+.1f %%) on the fastest device\n", "predicted",
           r->cost0 * 1e3, r->best_cost * 1e3,
           r->cost0 > 0 ? 100 * (r->best_cost - r->cost0) / r->cost0 : 0.0);
    printf("%-10s alpha %g, %d expanded, %d children (%d over alpha x best, %d seen before)%s, "
           "%.2f s\n",
           "search", alpha, r->expanded, r->generated, r->pruned, r->dup,
           r->timed_out ? ", stopped by the time limit" : "", secs);
    if (v->done && r->n_log == 0) /* nothing rewritten: the model is the original */
        printf("%-10s nothing to compare: no rewrite was applied\n", "verify");
    else if (v->done)
        printf("%-10s largest relative difference %.3g (output '%s'), tolerance %g\n", "verify",
               v->max_rel, v->worst, VERIFY_TOL);
    printf("%-10s %d\n\n", "rewrites", r->n_log);
    print_rules(r);
}

static void print_json(const char *model, const char *out, int ops0, int ops1,
                       const pl_rw_search_result *r, double alpha, double secs, const verify *v,
                       const pl_cost_params *cp)
{
    const pl_rw_rule *rules = pl_rw_rules(&(int){0});
    json_t *j = json_object(), *sites = json_array();
    json_object_set_new(j, "format", json_string("placer-optimize/1"));
    json_object_set_new(j, "model", json_string(model));
    json_object_set_new(j, "output", json_string(out));
    json_object_set_new(j, "ops_before", json_integer(ops0));
    json_object_set_new(j, "ops_after", json_integer(ops1));
    json_object_set_new(j, "predicted_before_s", json_real(r->cost0));
    json_object_set_new(j, "predicted_after_s", json_real(r->best_cost));
    cli_calibration_json(j, cp);
    json_t *s = json_object();
    json_object_set_new(s, "alpha", json_real(alpha));
    json_object_set_new(s, "expanded", json_integer(r->expanded));
    json_object_set_new(s, "children", json_integer(r->generated));
    json_object_set_new(s, "pruned", json_integer(r->pruned));
    json_object_set_new(s, "duplicates", json_integer(r->dup));
    json_object_set_new(s, "timed_out", json_boolean(r->timed_out));
    json_object_set_new(s, "seconds", json_real(secs));
    json_object_set_new(j, "search", s);
    for (int i = 0; i < r->n_log; i++) {
        json_t *e = json_object(), *nodes = json_array();
        json_object_set_new(e, "rule", json_string(rules[r->log[i].rule].name));
        for (int k = 0; k < r->log[i].n_nodes; k++)
            json_array_append_new(nodes, json_string(r->log[i].nodes[k]));
        json_object_set_new(e, "nodes", nodes);
        json_array_append_new(sites, e);
    }
    json_object_set_new(j, "rewrites", sites);
    if (v->done) {
        json_t *vj = json_object();
        json_object_set_new(vj, "max_rel", json_real(isfinite(v->max_rel) ? v->max_rel : -1));
        json_object_set_new(vj, "output", json_string(v->worst));
        json_object_set_new(vj, "tolerance", json_real(VERIFY_TOL));
        json_object_set_new(j, "verify", vj);
    }
    cli_json_out(j);
}

typedef struct opts {
    const char *out;
    pl_rw_search_opts so;
    bool verify;
} opts;

/* A model no rule has a site in: the search's answer is the model itself, known without
 * pricing anything, so it is written at once, before the cost model is calibrated (which
 * takes tens of seconds on this machine). Exit 0, as for any search that keeps the input
 * (docs/rewrite.md); 1 when there is something to search, -1 on failure (said). */
static int nothing_to_rewrite(const cli_common *co, const opts *o, const pl_rw_model *m)
{
    pl_err err = {""};
    int n = pl_rw_count_sites(m, NULL, &err);
    if (n < 0) cli_error("optimize", "%s", err.msg);
    cli_common checked = *co; /* the cluster and the rest checked as ever, nothing calibrated */
    checked.refuse |= CLI_NO_COST_PARAMS;
    cli_ctx x;
    if (n == 0 && (n = cli_ok(cli_ctx_open("optimize", &checked, &x)) ? 0 : -1) == 0) {
        cli_ctx_close(&x);
        if (pl_rw_save(m, o->out, &err) < 0) n = cli_error("optimize", "%s", err.msg);
    }
    int ops = pl_rw_nodes(m);
    if (n != 0) return n < 0 ? -1 : 1;
    if (co->json) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:[]}", "format", "placer-optimize/1",
                              "model", co->model, "output", o->out, "ops_before", ops, "ops_after",
                              ops, "nothing_to_rewrite", 1, "rewrites");
        cli_json_out(j);
    } else
        printf("%-10s %s -> %s\n%-10s %d -> %d\n%-10s 0: no rule has a site in the model, so "
               "nothing was searched or priced; %s is the model as it is\n",
               "optimize", co->model, o->out, "ops", ops, ops, "rewrites", o->out);
    return 0;
}

static cli_exit run(const cli_common *co, opts *o)
{
    pl_err err = {""};
    pl_rw_model *m = pl_rw_load(co->model, &err); /* once: the early answer and the search */
    if (!m) return cli_fail("optimize", "%s", err.msg);
    int early = nothing_to_rewrite(co, o, m);
    cli_ctx x;
    if (early <= 0 || !cli_ok(cli_ctx_open("optimize", co, &x))) {
        pl_rw_free(m);
        return early == 0 ? CLI_EXIT_OK : CLI_EXIT_BAD_INPUT;
    }
    cli_exit status = CLI_EXIT_OK;
    pl_rw_search_result r = {0};
    verify v = {0};
    o->so.c = x.c, o->so.params = &x.k->params;
    double t0 = pl_now();
    if (pl_rw_search(m, &o->so, &r, &err) < 0) {
        status = cli_fail("optimize", "%s", err.msg);
        goto done;
    }
    double secs = pl_now() - t0;
    if (o->verify && run_verify(co->model, &r, &v, &err) < 0) {
        status = cli_fail("optimize", "--verify: %s", err.msg);
        goto done;
    }
    if (v.done && !(v.max_rel <= VERIFY_TOL)) {
        /* nothing is written: the file would not compute what the model does */
        status = cli_fail("optimize",
                          "--verify: %s: output '%s' differs from the original's by %.3g "
                          "relative (tolerance %g); %s not written",
                          co->model, v.worst, v.max_rel, VERIFY_TOL, o->out);
        goto done;
    }
    if (pl_rw_save(r.best, o->out, &err) < 0) {
        status = cli_fail("optimize", "%s", err.msg);
        goto done;
    }
    int ops0 = pl_rw_nodes(m), ops1 = pl_rw_nodes(r.best);
    double alpha = o->so.alpha;
    if (co->json)
        print_json(co->model, o->out, ops0, ops1, &r, alpha, secs, &v, &x.k->params);
    else
        print_text(co->model, o->out, ops0, ops1, &r, alpha, secs, &v);
done:
    pl_rw_search_result_free(&r);
    pl_rw_free(m);
    cli_ctx_close(&x);
    return status;
}

/* The cache's name for an optimized model: the model's stem and the start of its content's
 * SHA-256 (the reference file and the file itself must agree on it). */
static void opt_name(const char *model, const char *sha, char *out, size_t n)
{
    char *stem = pl_file_stem(model, "model");
    snprintf(out, n, "%s-%.16s.onnx", stem, sha);
    free(stem);
}

/* What the search's answer depends on: the model's and the cluster's bytes, the cost model
 * and the search's settings, as one string (hashed into the name of a reference file). The
 * leading version changes with the search or the price: 2 since a Gemm is priced as its
 * MatMul + Add and the answer at one price has the fewest rewrites (docs/rewrite.md), so
 * answers cached before, with their Gemms, are searched again. */
static void search_key(const pl_rw_search_opts *so, const char *model_sha, const pl_cluster *c,
                       char out[65])
{
    char key[1024];
    int at = snprintf(key, sizeof key, "optimize/2 %s %s %a %a %a %s %d %a %a %a %a", model_sha,
                      c->sha256, so->alpha, so->time_limit_s, so->params->eff_memory,
                      so->params->device_model, (int)so->params->runtime_fusion,
                      so->params->runtime_conv_ratio, so->params->dense_half_flops,
                      so->params->peak_scale, so->params->mem_scale);
    for (int k = 0; k < PL_CLASS_COUNT && at < (int)sizeof key - 32; k++)
        at += snprintf(key + at, sizeof key - (size_t)at, " %a", so->params->eff_compute[k]);
    pl_sha256_buffer(key, strlen(key), out);
}

/* The optimized model of a search already run with this key: its bytes (malloc'd), or NULL. */
static void *cached_answer(const char *dir, const char *key, size_t *len)
{
    char ref[4200], name[256] = "", file[4500];
    snprintf(ref, sizeof ref, "%s/%.32s.ref", dir, key);
    FILE *f = fopen(ref, "r");
    if (!f) return NULL;
    int ok = fscanf(f, "%255s", name) == 1 && !strchr(name, '/');
    fclose(f);
    if (!ok) return NULL;
    snprintf(file, sizeof file, "%s/%s", dir, name);
    pl_rw_model *m = pl_rw_load(file, &(pl_err){""}); /* a damaged file is searched again */
    void *buf = m ? pl_rw_pack(m, len) : NULL;
    pl_rw_free(m);
    return buf;
}

/* Rank 0's answer (the search's, or the cache's) as bytes: under mpirun every rank must place
 * the same model, and a time-limited search could end differently on each rank, so rank 0
 * searches and the bytes are broadcast (each rank writes them into its own cache). */
static void *answer_bytes(const char *verb, cli_common *co, const char *dir, size_t *len,
                          char *note, size_t note_n)
{
    char local[4096], model_sha[65], key[65];
    const char *cluster = co->cluster;
    if (!cluster && !(cluster = cli_local_cluster(verb, local, sizeof local))) return NULL;
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(cluster, &err);
    pl_rw_model *m = c ? pl_rw_load(co->model, &err) : NULL;
    pl_cost_params params;
    pl_rw_search_result r = {0};
    void *buf = NULL;
    if (!m || pl_sha256_file(co->model, model_sha, &err) < 0) {
        cli_error(verb, "--optimize: %s", err.msg);
        goto done;
    }
    if (cli_cost_params(verb, co, (const pl_cluster *const *)&c, 1, &params) < 0) goto done;
    pl_rw_search_opts so = {.c = c, .params = &params, .alpha = 1.05, .time_limit_s = 60};
    search_key(&so, model_sha, c, key);
    if ((buf = cached_answer(dir, key, len))) {
        snprintf(note, note_n,
                 "the search's answer for this model, cluster and cost model, "
                 "cached");
        goto done;
    }
    double t0 = pl_now();
    if (pl_rw_search(m, &so, &r, &err) < 0) {
        cli_error(verb, "--optimize: %s", err.msg);
        goto done;
    }
    buf = pl_rw_pack(r.best, len);
    snprintf(note, note_n,
             "%d -> %d ops, predicted %.4g -> %.4g ms on %s's fastest device, %d "
             "rewrites in %.2f s",
             pl_rw_nodes(m), pl_rw_nodes(r.best), r.cost0 * 1e3, r.best_cost * 1e3, cluster,
             r.n_log, pl_now() - t0);
    char ref[4200], sha[65], body[300];
    pl_sha256_buffer(buf, *len, sha);
    opt_name(co->model, sha, body, sizeof body - 1);
    int bn = (int)strlen(body);
    body[bn++] = '\n';
    snprintf(ref, sizeof ref, "%s/%.32s.ref", dir, key);
    pl_out_write_file(ref, body, (size_t)bn, &err); /* only a cache: a failure costs a search */
done:
    pl_rw_search_result_free(&r);
    pl_rw_free(m);
    pl_cluster_free(c);
    return buf;
}

int cli_optimize_first(const char *verb, cli_common *co, char *path, size_t n)
{
    char dir[4096], sha[65], note[512] = "";
    pl_err err = {""};
    if (co->n_dims || co->n_shapes)
        return cli_error(verb, "--optimize with --dim/--input: not supported (the rewritten file "
                               "must hold for every size the model takes)");
    if (pl_cache_dir("optimized", dir, sizeof dir, &err) < 0 || pl_mkdir_p(dir, &err) < 0)
        return cli_error(verb, "--optimize: %s", err.msg);
    uint64_t len = 0;
    size_t got = 0;
    void *buf = pl_dist_rank() == 0 ? answer_bytes(verb, co, dir, &got, note, sizeof note) : NULL;
    len = buf ? got : 0;
    if (pl_dist_bcast(&len, sizeof len, 0) < 0 ||
        (len && pl_dist_rank() != 0 && !(buf = malloc(len))) ||
        (len && pl_dist_bcast(buf, len, 0) < 0)) {
        free(buf);
        return cli_error(verb, "--optimize: the MPI ranks' pool failed: %s", pl_dist_error());
    }
    if (!len) return -1; /* rank 0 said why */
    /* named by content: the same optimized model is one file however often it is made */
    pl_sha256_buffer(buf, len, sha);
    char name[300];
    opt_name(co->model, sha, name, sizeof name);
    snprintf(path, n, "%s/%s", dir, name);
    int rc = pl_out_write_file(path, buf, len, &err);
    free(buf);
    if (rc < 0) return cli_error(verb, "--optimize: %s", err.msg);
    fprintf(stderr, "placer %s: --optimize: %s; %s is placed\n", verb, note, path);
    co->model = path;
    return 0;
}

enum { ALPHA = CLI_OWN, TIME_LIMIT, MAX_EXPAND, VERIFY };
static const struct option options[] = {{"alpha", required_argument, NULL, ALPHA},
                                        {"time-limit", required_argument, NULL, TIME_LIMIT},
                                        {"max-expand", required_argument, NULL, MAX_EXPAND},
                                        {"verify", no_argument, NULL, VERIFY},
                                        CLI_COMMON_OPTIONS,
                                        CLI_OPTIONS_END};

static int take(void *p, int c, const char *v)
{
    opts *o = p;
    long n;
    switch (c) {
    case 'o':
        return cli_file("optimize", "-o", v, "a file name", &o->out);
    case ALPHA:
        return cli_number("optimize", "--alpha", v, 1, 100, 0, &o->so.alpha);
    case TIME_LIMIT:
        return cli_seconds("optimize", "--time-limit", v, &o->so.time_limit_s);
    case MAX_EXPAND:
        if (cli_count("optimize", "--max-expand", v, 1, 1000000, &n) < 0) return -1;
        return o->so.max_expand = (int)n, 0;
    default:
        return o->verify = true, 0; /* VERIFY */
    }
}

cli_exit cli_optimize(int argc, char **argv)
{
    /* profiles name the model file they were measured on; the candidates are other files */
    cli_common co = {.refuse = CLI_NO_CONTENTION | CLI_NO_PROFILE};
    opts o = {.so = {.alpha = 1.05, .time_limit_s = 60, .max_expand = 200}};
    char local[4096];
    cli_args g = CLI_ARGS("optimize", "ho:", help, false);
    cli_exit parsed = cli_parse(&g, &co, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    if (!co.model) return cli_fail("optimize", "which model? give MODEL\n%s", help);
    if (!o.out) return cli_fail("optimize", "where? give -o OUT.onnx\n%s", help);
    if (co.n_dims || co.n_shapes)
        return cli_fail("optimize", "--dim/--input: not supported (the rewritten file must hold "
                                    "for every size the model takes)");
    if (!co.cluster && !co.catalog &&
        !(co.cluster = cli_local_cluster("optimize", local, sizeof local)))
        return CLI_EXIT_BAD_INPUT;
    return run(&co, &o);
}
