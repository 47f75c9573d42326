/* report.c: `placer report RESULT.json... -o report.html`, and `--report FILE` on the verbs
 * that answer with a placer document (their --json): one self-contained HTML page of charts
 * (include/placer/html.h, docs/report.md). */
#include "cli.h"
#include "placer/dist.h"
#include "placer/html.h"
#include "placer/report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *help =
    "usage: placer report RESULT.json... -o report.html [--title TEXT]\n"
    "  RESULT.json    the --json answer of deploy, place, simulate, compare, serverless, multi,\n"
    "                 train, run, optimize, calibrate, inspect or split (placer-VERB/N), a\n"
    "                 profile (profile -o) or learn-prior's FILE.json; one section each, in\n"
    "                 the order given\n"
    "  -o FILE        the page: one HTML file, its charts inline SVG (no script, nothing\n"
    "                 fetched), written whole or not at all\n"
    "  --title TEXT   the page's heading (default: placer report)\n"
    "  deploy, place, simulate, compare, serverless, multi, train, run, optimize and\n"
    "  calibrate also take --report FILE to write their answer's page directly.\n"
    "exit status: 0 done, 2 bad input (an unknown format, another version of one, a file that\n"
    "is not JSON or is cut short: named with the reason, and nothing written)\n";

enum { TITLE = CLI_OWN };
static const struct option options[] = {{"title", required_argument, NULL, TITLE}, CLI_OPTIONS_END};

typedef struct args {
    const char *out, *title;
    const char *in[CLI_MAX_LIST];
    int n_in;
} args;

static int take(void *o, int c, const char *v)
{
    args *a = o;
    switch (c) {
    case 'o':
        return cli_file("report", "-o", v, "a file", &a->out);
    case TITLE:
        return cli_file("report", "--title", v, "a text", &a->title);
    default: /* CLI_ARG */
        return cli_list("report", "RESULT", v, a->in, &a->n_in) < 0 ? -1 : 0;
    }
}

cli_exit cli_report(int argc, char **argv)
{
    args a = {.title = "placer report"};
    cli_args g = CLI_ARGS("report", "ho:", help, false);
    g.own_args = true;
    cli_exit parsed = cli_parse(&g, NULL, take, &a);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    if (!a.n_in) return cli_fail("report", "which answers? give RESULT.json (a verb's --json)");
    if (!a.out) return cli_fail("report", "where? give -o report.html");
    pl_json_doc *doc[CLI_MAX_LIST] = {0};
    pl_json root[CLI_MAX_LIST];
    pl_err err = {""};
    cli_exit status = CLI_EXIT_OK;
    for (int i = 0; i < a.n_in && cli_ok(status); i++) {
        doc[i] = pl_json_open(a.in[i], &err);
        if (!doc[i] || (root[i] = pl_json_root(doc[i]), pl_html_check(&root[i], &err) < 0))
            status = cli_fail("report", "%s", err.msg);
    }
    if (cli_ok(status) && pl_html_save(a.out, root, a.n_in, a.title, &err) < 0)
        status = cli_fail("report", "%s", err.msg);
    for (int i = 0; i < a.n_in; i++)
        pl_json_close(doc[i]);
    return status;
}

/* ---- --report FILE on the verbs ---- */

typedef struct report_flag {
    const char *verb, *path;
    bool json;    /* --json was given too: the document also goes to stdout */
    bool written; /* the page was written (or its failure said) */
    cli_exit status;
} report_flag;
static report_flag rep;

/* -o's value in argv (-o FILE, -o=FILE, -oFILE), NULL when none. */
static const char *out_path(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o")) return i + 1 < argc ? argv[i + 1] : NULL;
        if (!strncmp(argv[i], "-o", 2) && argv[i][2] != '-')
            return argv[i] + 2 + (argv[i][2] == '=');
    }
    return NULL;
}

/* path with its folder resolved (the file itself need not exist yet), into out; false when
 * the folder cannot be resolved. */
static bool resolved(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    char *real = realpath(dir[0] ? dir : "/", NULL);
    if (!real) return false;
    snprintf(out, n, "%s/%s", real, slash ? slash + 1 : path);
    free(real);
    return true;
}

/* Whether paths a and b name one file: the same text, the same existing file, or the same
 * name in the same folder (./r.html and r.html, before either is written). */
static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    char ra[8192], rb[8192];
    if (!strcmp(a, b)) return true;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return resolved(a, ra, sizeof ra) && resolved(b, rb, sizeof rb) && !strcmp(ra, rb);
}

int cli_report_take(const char *verb, int *argc, char **argv)
{
    static char json_flag[] = "--json";
    bool json = false;
    int w = 0, given = 0;
    rep = (report_flag){.verb = verb};
    const char *out = out_path(*argc, argv);
    for (int i = 0; i < *argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        if (!strcmp(argv[i], "--report"))
            rep.path = i + 1 < *argc ? argv[++i] : "", given++;
        else if (!strncmp(argv[i], "--report=", 9))
            rep.path = argv[i] + 9, given++;
        else
            argv[w++] = argv[i];
    }
    if (!rep.path) return 0;
    if (!*rep.path) return cli_error(verb, "--report wants a file (report.html)");
    if (given > 1) return cli_error(verb, "--report given twice: give it once");
    if (out && same_file(out, rep.path))
        return cli_error(verb,
                         "-o %s and --report %s name one file: the page would replace the "
                         "document; give two names",
                         out, rep.path);
    rep.json = json;
    if (!json) argv[w++] = json_flag; /* the verb builds its document; cli_json_out routes it */
    argv[w] = NULL;
    *argc = w;
    return 1;
}

void cli_json_out(void *doc)
{
    if (rep.path && !rep.written) {
        pl_json root = {.v = doc, .step = PL_JSON_ROOT, .file = rep.verb};
        pl_err err = {""};
        rep.written = true;
        if (pl_html_save(rep.path, &root, 1, "placer report", &err) < 0)
            rep.status = cli_fail(rep.verb, "--report %s: %s", rep.path, err.msg);
    }
    if (!rep.path || rep.json)
        pl_json_print(doc, stdout);
    else
        json_decref(doc);
}

cli_exit cli_report_end(cli_exit verb_status)
{
    if (!rep.path || pl_dist_rank() > 0) return verb_status; /* rank 0 alone prints and writes */
    if (!rep.written && verb_status.status != CLI_EXIT_BAD_INPUT.status)
        return cli_fail(rep.verb, "--report %s: no page written: this verb gave no answer to draw",
                        rep.path);
    return cli_ok(rep.status) ? verb_status : rep.status;
}
