/* page.c: the report page (html.h): the check of each document's format, the page around the
 * charts, and its writing through pl_out. */
#include "html_internal.h"

#include <string.h>

/* Each format drawn and the charts of its section, in pl_html_formats' order. */
static const struct {
    const char *format, *verb;
    void (*charts)(FILE *f, const pl_json *root);
} kinds[] = {
    {"placer-place/1", "place", hx_plan_charts},
    {"placer-simulate/1", "simulate", hx_plan_charts},
    {"placer-compare/1", "compare", hx_compare_charts},
    {"placer-deploy/1", "deploy", hx_deploy_charts},
    {"placer-serverless/1", "serverless", hx_serverless_charts},
    {"placer-multi/1", "multi", hx_multi_charts},
    {"placer-train/1", "train", hx_train_charts},
    {"placer-run/1", "run", hx_run_charts},
    {"placer-optimize/1", "optimize", hx_optimize_charts},
    {"placer-cost-params/1", "calibrate", hx_calib_charts},
    {"placer-inspect/1", "inspect", hx_inspect_charts},
    {"placer-profile/1", "profile", hx_profile_charts},
    {"placer-split/2", "split", hx_split_charts},
    {"placer-prior/1", "learn-prior", hx_prior_charts},
};
#define N_KINDS ((int)(sizeof kinds / sizeof *kinds))

const char *const pl_html_formats[] = {
    "placer-place/1",       "placer-simulate/1",   "placer-compare/1",
    "placer-deploy/1",      "placer-serverless/1", "placer-multi/1",
    "placer-train/1",       "placer-run/1",        "placer-optimize/1",
    "placer-cost-params/1", "placer-inspect/1",    "placer-profile/1",
    "placer-split/2",       "placer-prior/1",      NULL};

/* The kind of a document whose format is drawn, -1 otherwise. */
static int kind_of(const pl_json *root)
{
    const char *f = hx_str(root, "format", "");
    for (int k = 0; k < N_KINDS; k++)
        if (!strcmp(f, kinds[k].format)) return k;
    return -1;
}

int pl_html_check(const pl_json *root, pl_err *err)
{
    if (!json_is_object(root->v))
        return pl_json_fail(root, err,
                            "not a placer document: placer report draws an object "
                            "with \"format\": \"placer-VERB/1\"");
    pl_json f = pl_json_at(root, "format");
    if (!f.v || !json_is_string(f.v))
        return pl_json_fail(root, err,
                            "the \"format\" field is missing or not a string: not an "
                            "answer of placer's verbs (their --json output)");
    if (kind_of(root) >= 0) return 0;
    const char *got = json_string_value(f.v);
    size_t family = strcspn(got, "/");
    for (int k = 0; k < N_KINDS; k++) /* another version of a format drawn */
        if (!strncmp(got, kinds[k].format, family) && kinds[k].format[family] == '/')
            return pl_json_fail(&f, err,
                                "\"%.60s\" is not supported: this placer reads \"%s\" (a newer "
                                "placer wrote it?)",
                                got, kinds[k].format);
    char list[512] = "";
    for (int k = 0; k < N_KINDS; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "",
                 kinds[k].format);
    return pl_json_fail(&f, err, "unknown format \"%.60s\": placer report draws %s", got, list);
}

static const char *style =
    "body{font-family:sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222}"
    "h1{font-size:1.5rem}h2{font-size:1.2rem;border-bottom:1px solid #ccc;margin-top:2rem}"
    "table.facts{border-collapse:collapse;font-size:.85rem}"
    "table.facts td{padding:.1rem .6rem .1rem 0;vertical-align:top}"
    "table.facts td:first-child{color:#555}"
    "figure.chart{margin:1.2rem 0;break-inside:avoid;page-break-inside:avoid}"
    "figcaption{font-weight:bold}p.note{font-size:.85rem;color:#555;margin:.2rem 0}"
    "ul.legend{list-style:none;padding:0;margin:.3rem 0;font-size:.8rem}"
    "ul.legend li{display:inline-block;margin-right:1rem}"
    "span.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;"
    "vertical-align:middle}"
    "svg{display:block;max-width:100%;height:auto}"
    "@media print{body{max-width:none;margin:0}*{-webkit-print-color-adjust:exact;"
    "print-color-adjust:exact}}";

/* The document's top-level strings, numbers and booleans, as a two-column table. */
static void facts(FILE *f, const pl_json *root)
{
    fputs("<table class=\"facts\">\n", f);
    pl_json_iter it = {0};
    pl_json m;
    while (pl_json_next(root, &it, &m)) {
        if (!strcmp(m.key, "format") || json_is_object(m.v) || json_is_array(m.v) ||
            json_is_null(m.v))
            continue;
        fputs("<tr><td>", f);
        hx_esc(f, m.key);
        fputs("</td><td>", f);
        if (json_is_string(m.v))
            hx_esc(f, json_string_value(m.v));
        else if (json_is_boolean(m.v))
            fputs(json_is_true(m.v) ? "yes" : "no", f);
        else {
            char b[64];
            size_t len = strlen(m.key);
            bool secs = len > 2 && !strcmp(m.key + len - 2, "_s");
            bool bytes = len > 6 && !strcmp(m.key + len - 6, "_bytes");
            double v = json_number_value(m.v);
            if (secs || bytes)
                hx_fmt(v, secs ? HX_TIME : HX_BYTES, b, sizeof b);
            else
                snprintf(b, sizeof b, "%.6g", v);
            fputs(b, f);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void section(FILE *f, const pl_json *root, int i)
{
    int k = kind_of(root);
    const char *about = hx_str(root, "model", hx_str(root, "device_model", ""));
    fprintf(f, "<section class=\"doc\" data-doc=\"%d\" data-format=\"%s\" data-file=\"", i,
            kinds[k].format);
    hx_esc(f, root->file);
    fprintf(f, "\">\n<h2>%s", kinds[k].verb);
    if (*about) fputs(": ", f);
    hx_esc(f, about);
    pl_json models = pl_json_at(root, "models"); /* multi: the models sharing the devices; */
    for (size_t i = 0; !*about && i < pl_json_len(&models); i++) {
        pl_json m = pl_json_index(&models, i);
        fputs(i ? ", " : ": ", f);
        hx_esc(f, hx_str(&m, "name", hx_str(&m, "file", "?"))); /* learn-prior: "file" */
    }
    fputs(" <small>(", f);
    hx_esc(f, root->file);
    fputs(")</small></h2>\n", f);
    facts(f, root);
    kinds[k].charts(f, root);
    fputs("</section>\n", f);
}

int pl_html_write(FILE *f, const pl_json *docs, int n, const char *title, pl_err *err)
{
    for (int i = 0; i < n; i++)
        if (pl_html_check(&docs[i], err) < 0) return -1;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>",
          f);
    hx_esc(f, title);
    fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>", style);
    hx_esc(f, title);
    fprintf(f, "</h1>\n<p class=\"note\">%d document%s. Hover over a mark for its numbers.</p>\n",
            n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++)
        section(f, &docs[i], i);
    fputs("</body></html>\n", f);
    return 0;
}

int pl_html_save(const char *path, const pl_json *docs, int n, const char *title, pl_err *err)
{
    for (int i = 0; i < n; i++) /* before the temporary exists: nothing to clean up */
        if (pl_html_check(&docs[i], err) < 0) return -1;
    pl_out out;
    if (pl_out_open(&out, path, err) < 0) return -1;
    if (pl_html_write(out.f, docs, n, title, err) < 0) {
        pl_out_abort(&out);
        return -1;
    }
    return pl_out_commit(&out, err);
}
