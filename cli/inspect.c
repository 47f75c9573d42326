/* inspect.c: `placer inspect MODEL`: what the model is, as placer reads it. */
#include "cli.h"
#include "placer/coarsen.h"
#include "placer/report.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "usage: placer inspect MODEL [--json] [--dim NAME=VALUE]... [--input NAME=SIZES]... [--top K]\n"
    "  MODEL            an ONNX file or a placer-taskgraph/1 JSON file\n"
    "  --json           print JSON instead of tables\n"
    "  --dim NAME=VALUE bind a symbolic dimension (e.g. --dim batch=1); repeatable\n"
    "  --input NAME=SIZES  give a graph input's shape (e.g. --input x=1,3,224,224); repeatable\n"
    "  --top K          show only the K most frequent op types (default: all)\n"
    "  --coarsen        coarsen the graph (fusion rules, colocation) and report ops per pass\n"
    "  --fusion-rules FILE  placer-fusion-rules/1 file instead of the built-in rules\n"
    "  --coarsen-target N   also contract chains until at most N ops remain\n"
    "exit status: 0 done, 2 bad input or failure\n";

static void shape_str(const pl_tensor *t, char *buf, size_t n)
{
    if (t->rank < 0) {
        snprintf(buf, n, "?");
        return;
    }
    size_t used = snprintf(buf, n, "[");
    for (int d = 0; d < t->rank && used < n; d++) {
        if (t->dims[d] < 0)
            used += snprintf(buf + used, n - used, "%s?", d ? "," : "");
        else
            used += snprintf(buf + used, n - used, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    }
    if (used < n) snprintf(buf + used, n - used, "]");
}

static json_t *tensor_json(const pl_tensor *t)
{
    json_t *shape = json_null();
    if (t->rank >= 0) {
        shape = json_array();
        for (int d = 0; d < t->rank; d++)
            json_array_append_new(shape, t->dims[d] < 0 ? json_null() : json_integer(t->dims[d]));
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "name", t->name, "dtype", pl_dtype_name(t->dtype),
                     "shape", shape, "bytes", t->bytes < 0 ? json_null() : json_integer(t->bytes));
}

static json_t *tensor_list_json(const pl_graph *g, const int *idx, int n)
{
    json_t *a = json_array();
    for (int k = 0; k < n; k++)
        json_array_append_new(a, tensor_json(&g->tensors[idx[k]]));
    return a;
}

static json_t *coarsen_json(const pl_coarsening *c)
{
    json_t *passes = json_array(), *fused = json_array();
    for (int k = 0; k < c->n_passes; k++)
        json_array_append_new(passes, json_pack("{s:s, s:i, s:i}", "pass", c->passes[k].name,
                                                "ops_before", c->passes[k].ops_before, "ops_after",
                                                c->passes[k].ops_after));
    for (int k = 0; k < c->n_fused; k++)
        json_array_append_new(
            fused, json_pack("{s:s, s:i}", "type", c->fused[k].type, "count", c->fused[k].count));
    return json_pack("{s:i, s:i, s:o, s:o}", "ops_before", c->n_orig, "ops_after", c->coarse->n_ops,
                     "passes", passes, "fused_groups", fused);
}

static bool print_json(const pl_graph *g, const pl_graph_summary *s, const char *sha, int top,
                       const pl_coarsening *co)
{
    json_t *hist = json_array(), *unknown = json_array(), *path = json_array();
    for (int k = 0; k < s->n_hist && k < top; k++)
        json_array_append_new(hist, json_pack("{s:s, s:i, s:f, s:b}", "type", s->hist[k].type,
                                              "count", s->hist[k].count, "flops", s->hist[k].flops,
                                              "unknown", s->hist[k].unknown));
    for (int k = 0; k < s->n_hist; k++)
        if (s->hist[k].unknown) json_array_append_new(unknown, json_string(s->hist[k].type));
    for (int k = 0; k < s->longest_path_len; k++)
        json_array_append_new(path, json_string(g->ops[s->longest_path[k]].name));
    json_t *warnings = json_array();
    for (int k = 0; k < g->n_warnings_stored; k++)
        json_array_append_new(warnings, json_string(g->warnings[k]));
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:I, s:I, s:i,"
        " s:f, s:f, s:f, s:o, s:i, s:o, s:i, s:o, s:o, s:i}",
        "format", "placer-inspect/1", "model", g->path ? g->path : "", "sha256", sha,
        "source_format", g->info.format, "ir_version", (json_int_t)g->info.ir_version, "opset",
        (json_int_t)g->info.opset, "producer", g->info.producer, "ops", s->n_ops, "ops_total",
        s->n_ops_total, "subgraphs", s->n_subgraphs, "tensors", s->n_tensors, "edges", s->n_edges,
        "inputs", tensor_list_json(g, g->inputs, g->n_inputs), "outputs",
        tensor_list_json(g, g->outputs, g->n_outputs), "params", (json_int_t)s->n_params,
        "param_bytes", (json_int_t)s->param_bytes, "weight_tensors", s->n_weights, "flops",
        s->flops, "bytes_moved", s->bytes_moved, "longest_path_flops", s->longest_path_flops,
        "longest_path", path, "unknown_ops", s->n_unknown_ops, "unknown_op_types", unknown,
        "unknown_shape_tensors", s->n_unknown_shape, "unknown_shape_examples",
        tensor_list_json(g, s->unknown_shape, s->n_unknown_shape_listed), "op_types", hist,
        "warnings", g->n_warnings);
    if (!o) { /* json_pack refuses a number that is not finite: never print an empty document */
        json_decref(warnings);
        return false;
    }
    json_object_set_new(o, "warning_messages", warnings);
    if (co) json_object_set_new(o, "coarsen", coarsen_json(co));
    pl_json_print(o, stdout);
    return true;
}

static void print_io(const char *label, const pl_graph *g, const int *idx, int n)
{
    char shape[256];
    for (int k = 0; k < n; k++) {
        const pl_tensor *t = &g->tensors[idx[k]];
        if (t->flags & PL_TENSOR_BYTES_ONLY) {
            printf("%-12s %s %s\n", k ? "" : label, t->name,
                   pl_fmt_bytes((double)t->bytes, shape, sizeof shape));
            continue;
        }
        shape_str(t, shape, sizeof shape);
        printf("%-12s %s %s %s\n", k ? "" : label, t->name, pl_dtype_name(t->dtype), shape);
    }
    if (!n) printf("%-12s none\n", label);
}

static void print_text(const pl_graph *g, const pl_graph_summary *s, const char *sha, int top)
{
    char a[32], b[32];
    printf("%-12s %s\n", "model", g->path ? g->path : g->name);
    printf("%-12s %.16s...\n", "sha256", sha);
    if (!strcmp(g->info.format, "onnx"))
        printf("%-12s onnx, IR %lld, opset %lld, producer %s\n", "format",
               (long long)g->info.ir_version, (long long)g->info.opset,
               g->info.producer[0] ? g->info.producer : "unknown");
    else
        printf("%-12s %s\n", "format", g->info.format);
    printf("%-12s %d top-level, %d including %d subgraph%s\n", "ops", s->n_ops, s->n_ops_total,
           s->n_subgraphs, s->n_subgraphs == 1 ? "" : "s");
    printf("%-12s %d tensors, %d edges\n", "tensors", s->n_tensors, s->n_edges);
    print_io("inputs", g, g->inputs, g->n_inputs);
    print_io("outputs", g, g->outputs, g->n_outputs);
    if (s->n_weights_bytes_only == s->n_weights && s->n_weights)
        printf("%-12s not given (the task graph gives sizes): %s in %d weight tensors\n",
               "parameters", pl_fmt_bytes((double)s->param_bytes, b, sizeof b), s->n_weights);
    else
        printf("%-12s %s (%lld), %s in %d weight tensors\n", "parameters",
               pl_fmt_count((double)s->n_params, a, sizeof a), (long long)s->n_params,
               pl_fmt_bytes((double)s->param_bytes, b, sizeof b), s->n_weights);
    printf("%-12s %s total; longest path %s over %d ops\n", "FLOPs",
           pl_fmt_count(s->flops, a, sizeof a), pl_fmt_count(s->longest_path_flops, b, sizeof b),
           s->longest_path_len);
    printf("%-12s %d op%s of unknown type, %d tensor%s of unknown size\n", "unknown",
           s->n_unknown_ops, s->n_unknown_ops == 1 ? "" : "s", s->n_unknown_shape,
           s->n_unknown_shape == 1 ? "" : "s");
    for (int k = 0; k < s->n_unknown_shape_listed && k < 5; k++)
        printf("%-12s   %s\n", "", g->tensors[s->unknown_shape[k]].name);
    putchar('\n');
    /* the note column is there only when some op type needs it */
    pl_table *t = pl_table_new(s->n_unknown_ops ? "op type|>count|>GFLOPs|>share|note"
                                                : "op type|>count|>GFLOPs|>share");
    for (int k = 0; k < s->n_hist && k < top; k++) {
        const pl_type_count *h = &s->hist[k];
        pl_table_row(t, "%s|%d|%.3f|%.1f%%|%s", h->type, h->count, h->flops / 1e9,
                     s->flops > 0 ? 100 * h->flops / s->flops : 0.0,
                     h->unknown ? "unknown op: default cost" : "");
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    if (top < s->n_hist) printf("(%d more op types; --top to show them)\n", s->n_hist - top);
}

/* MOIRAI Table IV style: ops before and after each pass, then the fused groups by type. */
static void print_coarsen(const pl_coarsening *c)
{
    putchar('\n');
    pl_table *t = pl_table_new("coarsening pass|>ops before|>ops after|>reduction");
    for (int k = 0; k < c->n_passes; k++) {
        const pl_coarsen_pass *p = &c->passes[k];
        pl_table_row(t, "%s|%d|%d|%.1f%%", p->name, p->ops_before, p->ops_after,
                     p->ops_before ? 100.0 * (p->ops_before - p->ops_after) / p->ops_before : 0.0);
    }
    pl_table_row(t, "%s|%d|%d|%.1f%%", "total", c->n_orig, c->coarse->n_ops,
                 c->n_orig ? 100.0 * (c->n_orig - c->coarse->n_ops) / c->n_orig : 0.0);
    pl_table_print(t, stdout);
    pl_table_free(t);
    for (int k = 0; k < c->n_fused; k++)
        printf("%s %s \xc3\x97 %d\n", k ? "            " : "fused       ", c->fused[k].type,
               c->fused[k].count);
}

static int coarsen(const pl_graph *g, const char *rules_path, int target, pl_coarsening **out)
{
    pl_err err = {""};
    pl_fusion_rules *r = NULL;
    if (rules_path && !(r = pl_fusion_rules_load(rules_path, &err)))
        return cli_error("inspect", "%s", err.msg);
    pl_coarsen_opts o = {.rules = r, .chain = target > 0, .target_ops = target};
    int rc = pl_coarsen(g, &o, out, &err);
    pl_fusion_rules_free(r);
    return rc < 0 ? cli_error("inspect", "%s", err.msg) : 0;
}

enum { COARSEN = CLI_OWN, FUSION_RULES, COARSEN_TARGET, TOP };
static const struct option options[] = {CLI_JSON_OPTION,
                                        {"coarsen", no_argument, NULL, COARSEN},
                                        {"fusion-rules", required_argument, NULL, FUSION_RULES},
                                        {"coarsen-target", required_argument, NULL, COARSEN_TARGET},
                                        {"dim", required_argument, NULL, CLI_DIM},
                                        {"input", required_argument, NULL, CLI_INPUT},
                                        {"top", required_argument, NULL, TOP},
                                        CLI_OPTIONS_END};

typedef struct args {
    const char *model, *rules_path;
    bool json, want_coarse;
    long top, target;
    const char *dims[CLI_MAX_LIST], *shapes[CLI_MAX_LIST];
    int n_dims, n_shapes;
} args;

/* --dim NAME=VALUE and --input NAME=SIZES. */
static int take_size(args *a, int c, const char *v)
{
    bool dim = c == CLI_DIM;
    if (!v || !strchr(v, '='))
        return cli_error("inspect", "%s wants %s", dim ? "--dim" : "--input",
                         dim ? "NAME=VALUE" : "NAME=SIZES");
    return cli_list("inspect", dim ? "--dim" : "--input", v, dim ? a->dims : a->shapes,
                    dim ? &a->n_dims : &a->n_shapes) < 0
               ? -1
               : 0;
}

static int take(void *o, int c, const char *v)
{
    args *a = o;
    switch (c) {
    case CLI_ARG:
        if (a->model)
            return cli_error("inspect", "one model at a time ('%s' and '%s')", a->model, v);
        return a->model = v, 0;
    case CLI_JSON:
        return a->json = true, 0;
    case COARSEN:
        return a->want_coarse = true, 0;
    case FUSION_RULES:
        a->want_coarse = true;
        return cli_file("inspect", "--fusion-rules", v, "a file", &a->rules_path);
    case COARSEN_TARGET:
        a->want_coarse = true;
        return cli_count("inspect", "--coarsen-target", v, 1, INT_MAX, &a->target);
    case TOP:
        return cli_count("inspect", "--top", v, 1, INT_MAX, &a->top);
    default:
        return take_size(a, c, v); /* CLI_DIM, CLI_INPUT */
    }
}

cli_exit cli_inspect(int argc, char **argv)
{
    args o = {.top = 1 << 30};
    cli_args walk = CLI_ARGS("inspect", NULL, help, false);
    cli_exit parsed = cli_parse(&walk, NULL, take, &o);
    if (!cli_ok(parsed) || walk.asked_help) return parsed;
    const char *model = o.model, *rules_path = o.rules_path;
    bool json = o.json, want_coarse = o.want_coarse;
    int top = (int)o.top, target = (int)o.target;
    pl_load_opts opts = {
        .dims = o.dims, .n_dims = o.n_dims, .input_shapes = o.shapes, .n_input_shapes = o.n_shapes};
    if (!model) return cli_fail("inspect", "which model?\n%s", help);
    pl_err err = {""};
    pl_graph *g = pl_graph_load(model, &opts, &err);
    if (!g) return cli_fail("inspect", "%s", err.msg);
    const char *sha = pl_graph_sha256(g, &err);
    if (!sha) {
        pl_graph_free(g);
        return cli_fail("inspect", "%s", err.msg);
    }
    cli_print_warnings(g);
    pl_coarsening *co = NULL;
    if (want_coarse && coarsen(g, rules_path, target, &co) != 0) {
        pl_graph_free(g);
        return CLI_EXIT_BAD_INPUT;
    }
    pl_graph_summary s;
    pl_graph_summarize(g, &s);
    cli_exit status = CLI_EXIT_OK;
    if (json && !print_json(g, &s, sha, top, co))
        status = cli_fail("inspect",
                          "%s: a figure of the summary is not a finite number, so no "
                          "JSON document is written",
                          g->path ? g->path : g->name);
    else if (!json) {
        print_text(g, &s, sha, top);
        if (co) print_coarsen(co);
    }
    pl_graph_summary_free(&s);
    pl_coarsening_free(co);
    pl_graph_free(g);
    return status;
}
