/* test_report.c: `placer report` and --report (docs/report.md) as a user meets them: every
 * kind of answer, made by running placer on the bundled models, drawn into one page whose
 * every mark carries exactly the JSON's numbers, in the file and in a real browser's DOM
 * (headless chromium), with a screenshot that is not blank; and bad input (an unknown format,
 * a truncated file, a newer version of a format) refused by name with no page left behind. */
#include "testutil.h"
#include "placer/common.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define GCN "models/gcn_cora.onnx"
#define RNN "models/rnnlm.onnx"
#define INTRA "examples/clusters/moirai-intra-server.json"
#define LOCAL "examples/clusters/local-cpu-percore.json"

/* The answers, one per verb, made once for the whole file by running placer. */
static const struct {
    const char *name, *cmd; /* {D} is the fixture folder */
} verbs[] = {
    {"place", "place " GCN " --cluster " INTRA " --algo random --seed 3 -o {D}/plan.json --json"},
    {"simulate", "simulate " GCN " --cluster " INTRA " --plan {D}/plan.json --json"},
    {"compare", "compare " GCN " --cluster " INTRA " --algos single,heft,random,m-etf --json"},
    {"deploy", "deploy " RNN " --catalog catalogs/autodeep-testbed.json --slo 10ms --algos heft "
               "--json"},
    {"serverless", "serverless " GCN " --platform examples/platforms/aws-lambda.json --json"},
    {"multi", "multi " GCN " " RNN " --cluster " LOCAL " --algos talos,aswm,heft --json"},
    {"train", "train " GCN " --cluster examples/clusters/tag-testbed.json --batch 8 --budget 5 "
              "--json"},
    {"optimize", "optimize " GCN " -o {D}/opt.onnx --json"},
    {"run",
     "split " GCN " --cluster " LOCAL " --plan {D}/cpuplan.json -o {D}/stages >/dev/null "
     "&& $PLACER_BIN run {D}/stages --plan {D}/cpuplan.json --cluster " LOCAL " --repeat 2 --json"},
    {"calibrate", "calibrate {D}/prof.json --model " GCN " --json"},
    {"inspect", "inspect " GCN " --json"},
    {"profile", "profile " GCN " --repeat 1 -o {D}/p1.json >/dev/null 2>&1 && cat {D}/p1.json"},
    {"split", "split " GCN " --cluster " LOCAL " --plan {D}/cpuplan.json -o {D}/st --json"},
    {"learn-prior",
     "learn-prior " GCN " --topologies 1 --iterations 40 --rounds 1 -o {D}/w.weights "
     ">/dev/null 2>&1 && cat {D}/w.weights.json"},
};
#define N_VERBS ((int)(sizeof verbs / sizeof *verbs))

static char dir[256];
static json_t *docs[N_VERBS];

/* cmd with {D} replaced by the fixture folder. */
static void expand(const char *cmd, char *out, size_t n)
{
    size_t len = 0;
    for (const char *s = cmd; *s && len + 1 < n;)
        if (!strncmp(s, "{D}", 3))
            len += snprintf(out + len, n - len, "%s", dir), s += 3;
        else
            out[len++] = *s++;
    out[len < n ? len : n - 1] = 0;
}

static int make_answers(void **state)
{
    (void)state;
    if (tu_ort_setup() < 0 || tu_mkdtemp(dir, sizeof dir, "placer-report") < 0) return -1;
    setenv("PLACER_CALIBRATION", "off", 1);
    const char *bin = getenv("PLACER_BIN");
    setenv("PLACER_BIN", bin && *bin ? bin : "build/placer", 1);
    char cmd[2048], args[2600], *out = NULL;
    /* the inputs of run and calibrate: a plan of this CPU's devices, a profile measured here */
    expand("place " GCN " --cluster " LOCAL " --algo heft -o {D}/cpuplan.json >/dev/null 2>&1 && "
           "$PLACER_BIN profile " GCN " --repeat 1 -o {D}/prof.json >/dev/null 2>&1",
           args, sizeof args);
    if (tu_run(args, &out) != 0) return fprintf(stderr, "fixture: %s\n", out), free(out), -1;
    free(out);
    for (int i = 0; i < N_VERBS; i++) {
        expand(verbs[i].cmd, cmd, sizeof cmd);
        snprintf(args, sizeof args, "%s > %s/%s.json 2>/dev/null", cmd, dir, verbs[i].name);
        if (tu_run(args, &out) != 0) return fprintf(stderr, "%s: %s\n", args, out), free(out), -1;
        free(out);
        snprintf(args, sizeof args, "%s/%s.json", dir, verbs[i].name);
        json_error_t e;
        if (!(docs[i] = json_load_file(args, 0, &e)))
            return fprintf(stderr, "%s: %s\n", args, e.text), -1;
    }
    return 0;
}

static int drop_answers(void **state)
{
    (void)state;
    for (int i = 0; i < N_VERBS; i++)
        json_decref(docs[i]);
    return dir[0] ? tu_rmtree(dir) : 0;
}

/* ---- reading the marks back ---- */

/* The value at a path pl_json_path wrote ($.a[2].b, $["x-y"]) in v; NULL when none. */
static json_t *resolve(json_t *v, const char *p)
{
    if (*p++ != '$') return NULL;
    char key[256];
    while (*p && v) {
        if (*p == '.') {
            size_t n = strcspn(++p, ".[");
            snprintf(key, sizeof key, "%.*s", (int)n, p);
            v = json_object_get(v, key), p += n;
        } else if (!strncmp(p, "[\"", 2)) {
            size_t n = 0;
            for (p += 2; *p && *p != '"' && n + 1 < sizeof key; p++)
                key[n++] = *p == '\\' && p[1] ? *++p : *p;
            key[n] = 0;
            v = json_object_get(v, key), p += 2; /* past "] */
        } else if (*p == '[') {
            char *e;
            v = json_array_get(v, strtoul(p + 1, &e, 10)), p = e + 1;
        } else
            return NULL;
    }
    return v;
}

/* The attribute `name`'s value that starts at s (after name=") into out, entities decoded
 * (a browser's DOM writes &quot; where the file had it too). */
static void attr(const char *s, char *out, size_t n)
{
    size_t len = 0;
    static const char *const ent[][2] = {
        {"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}};
    while (*s && *s != '"' && len + 1 < n) {
        int k = 0;
        while (k < 4 && strncmp(s, ent[k][0], strlen(ent[k][0])))
            k++;
        if (k < 4)
            out[len++] = ent[k][1][0], s += strlen(ent[k][0]);
        else
            out[len++] = *s++;
    }
    out[len] = 0;
}

/* Every mark of the page (data-p, data-k, data-v) against its section's document: each
 * value must equal the JSON's number exactly. marks[i]: the marks of section i; spans[i]: those
 * drawn from its schedule's ops and transfers; memory: the peaks marked on the memory curves of
 * section `sched_doc`, each of which must be its device's peak_memory_bytes (the simulator's
 * own account; the curve is the checker's). */
static void check_marks(const char *page, const int *doc_of, int n_docs, int *marks, int *spans,
                        int sched_doc, int *memory)
{
    int sec = -1;
    memset(marks, 0, n_docs * sizeof *marks);
    memset(spans, 0, n_docs * sizeof *spans);
    *memory = 0;
    for (const char *s = page; (s = strstr(s, "data-")); s++) {
        if (!strncmp(s, "data-doc=\"", 10)) {
            sec = atoi(s + 10);
            assert_true(sec >= 0 && sec < n_docs);
            continue;
        }
        if (strncmp(s, "data-p=\"", 8)) continue;
        char p[512], k[512], v[64], name[32], at[1100];
        attr(s + 8, p, sizeof p);
        json_t *obj = resolve(docs[doc_of[sec]], p);
        if (!obj)
            fail_msg("section %d: %s is no place in %s.json", sec, p, verbs[doc_of[sec]].name);
        const char *tag_end = strchr(s, '>');
        double last = NAN; /* the mark's last value (a memory peak's bytes) */
        int n_values = 0;
        for (;; n_values++) { /* data-kN: a path under the object ("bytes[3]", "[\"a.b\"]") */
            snprintf(name, sizeof name, "data-k%d=\"", n_values);
            const char *ks = strstr(s, name);
            if (!ks || ks > tag_end) break;
            attr(ks + strlen(name), k, sizeof k);
            snprintf(name, sizeof name, "data-v%d=\"", n_values);
            const char *vs = strstr(s, name);
            assert_true(vs && vs < tag_end);
            attr(vs + strlen(name), v, sizeof v);
            snprintf(at, sizeof at, k[0] == '[' ? "$%s" : "$.%s", k);
            json_t *x = resolve(obj, at);
            last = strtod(v, NULL);
            if (!json_is_number(x) || json_number_value(x) != last)
                fail_msg("%s.json: %s %s is %.17g, drawn as %s", verbs[doc_of[sec]].name, p, k,
                         json_number_value(x), v);
        }
        assert_true(n_values > 0);
        /* its numbers on hover: a <title> of its own, before the next mark */
        const char *t = strstr(tag_end, "<title>"), *next = strstr(tag_end, "data-p=");
        if (!t || (next && next < t)) fail_msg("the mark of %s has no <title>", p);
        marks[sec]++;
        if (!strncmp(p, "$.schedule.ops[", 15) || !strncmp(p, "$.schedule.transfers[", 21))
            spans[sec]++;
        if (sec == sched_doc && !strncmp(p, "$.schedule.memory[", 18)) {
            const char *dev = json_string_value(json_object_get(obj, "device"));
            json_t *d = tu_find(docs[doc_of[sec]], "devices", "device", dev);
            assert_close(last, tu_num(d, "peak_memory_bytes"), 1e-9);
            ++*memory;
        }
    }
}

/* A file's bytes, NUL-terminated (its length in *len when len is not NULL). */
static char *slurp_n(const char *path, size_t *len);
static char *slurp(const char *path)
{
    return slurp_n(path, NULL);
}

static char *slurp_n(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *b = malloc(n + 1);
    assert_int_equal(fread(b, 1, n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return b;
}

/* The page of every answer, in verbs' order. */
static void report_all(const char *out)
{
    char args[4096];
    int len = snprintf(args, sizeof args, "report");
    for (int i = 0; i < N_VERBS; i++)
        len += snprintf(args + len, sizeof args - len, " %s/%s.json", dir, verbs[i].name);
    snprintf(args + len, sizeof args - len, " -o %s", out);
    char *msg = NULL;
    int rc = tu_run(args, &msg);
    if (rc) fail_msg("placer %s: exit %d: %s", args, rc, msg);
    free(msg);
}

/* What every page of all the answers must show, read from `page` (the file or the DOM). */
static void check_page(const char *page)
{
    int doc_of[N_VERBS], marks[N_VERBS], spans[N_VERBS], memory;
    for (int i = 0; i < N_VERBS; i++)
        doc_of[i] = i;
    check_marks(page, doc_of, N_VERBS, marks, spans, 0, &memory);
    for (int i = 0; i < N_VERBS; i++)
        if (marks[i] == 0) fail_msg("the %s section draws no number of its JSON", verbs[i].name);
    /* place, simulate, deploy (its chosen plan) and multi (sections 0, 1, 3, 5): one span per
     * op and per transfer of the schedule; place's links are drawn too, and multi's ops name
     * their model */
    static const int with_schedule[] = {0, 1, 3, 5};
    for (int k = 0; k < 4; k++) {
        json_t *sk = json_object_get(docs[with_schedule[k]], "schedule");
        size_t want = json_array_size(json_object_get(sk, "ops")) +
                      json_array_size(json_object_get(sk, "transfers"));
        assert_true(want > 0);
        assert_int_equal(spans[with_schedule[k]], (int)want);
    }
    /* train (section 6): one point per iteration of MCTS's history, every tree */
    size_t points = 0, t;
    json_t *tree;
    json_array_foreach(json_object_get(docs[6], "mcts_history"), t, tree) points +=
        json_array_size(json_object_get(tree, "iteration"));
    int drawn = 0;
    for (const char *m = page; (m = strstr(m, "data-p=\"$.mcts_history[")); m++)
        drawn++;
    assert_true(points > 0);
    assert_int_equal(drawn, (int)points);
    json_t *s = json_object_get(docs[0], "schedule");
    assert_true(json_array_size(json_object_get(s, "transfers")) > 0);
    json_t *mops = json_object_get(json_object_get(docs[5], "schedule"), "ops");
    assert_string_equal(json_string_value(json_object_get(json_array_get(mops, 0), "tenant")),
                        "gcn_cora");
    assert_int_equal(memory, (int)json_array_size(json_object_get(s, "memory")));
    assert_int_equal(memory, (int)json_array_size(json_object_get(docs[0], "devices")));
    /* inspect (section 10): FLOPs and count of each op type; profile (11): every op of the
     * small model, each its measured time */
    assert_int_equal(marks[10], 2 * (int)json_array_size(json_object_get(docs[10], "op_types")));
    assert_int_equal(marks[11], (int)json_object_size(json_object_get(docs[11], "times_s")));
    /* split (12): ops and weights of each stage; learn-prior (13): its first and last loss */
    assert_int_equal(marks[12], 2 * (int)json_array_size(json_object_get(docs[12], "stages")));
    assert_int_equal(marks[13], 2);
    /* compare: one bar per algorithm, and the lower bound */
    assert_int_equal(marks[2], (int)json_array_size(json_object_get(docs[2], "algorithms")) + 1);
    for (int i = 0; i < N_VERBS; i++) {
        char sec[64];
        snprintf(sec, sizeof sec, "data-doc=\"%d\"", i);
        assert_non_null(strstr(page, sec));
    }
}

static void test_every_answer_drawn(void **state)
{
    (void)state;
    char out[300];
    snprintf(out, sizeof out, "%s/all.html", dir);
    report_all(out);
    char *page = slurp(out);
    check_page(page);
    /* self-contained: nothing fetched, no script */
    assert_null(strstr(page, "<script"));
    assert_null(strstr(page, "src=\"http"));
    assert_null(strstr(page, "href=\"http"));
    assert_null(strstr(page, "@import"));
    free(page);
}

/* ---- --report on a verb ---- */

static void test_report_flag(void **state)
{
    (void)state;
    char args[1024], out[300], *msg = NULL;
    snprintf(out, sizeof out, "%s/place.html", dir);
    snprintf(args, sizeof args, "place " GCN " --cluster " INTRA " --algo heft --report %s", out);
    assert_int_equal(tu_run(args, &msg), 0);
    assert_null(strstr(msg, "\"format\"")); /* no --json: the document is not printed */
    free(msg);
    char *page = slurp(out);
    assert_non_null(strstr(page, "data-format=\"placer-place/1\""));
    assert_non_null(strstr(page, "data-p=\"$.schedule.ops[0]\""));
    free(page);
    /* with --json too: the page, and the document on stdout */
    unlink(out);
    snprintf(args, sizeof args,
             "compare " GCN " --cluster " INTRA " --algos heft --json --report=%s 2>/dev/null",
             out);
    json_t *doc = tu_run_json(args);
    assert_string_equal(json_string_value(json_object_get(doc, "format")), "placer-compare/1");
    json_decref(doc);
    assert_int_equal(access(out, F_OK), 0);
    /* --report with no file: refused by name */
    tu_expect_refusal("place " GCN " --cluster " INTRA " --report", "--report wants a file");
    tu_expect_refusal("place " GCN " --cluster " INTRA " --report=", "--report wants a file");
    /* a page that cannot be written: exit 2, said */
    snprintf(args, sizeof args,
             "place " GCN " --cluster " INTRA " --report /nonexistent-dir/p.html 2>&1");
    assert_int_equal(tu_run(args, &msg), 2);
    assert_contains(msg, "--report /nonexistent-dir/p.html");
    free(msg);
}

/* ---- bad input ---- */

/* `report IN -o OUT` exits 2 naming IN and `why`, and leaves OUT as it was: absent, or a page
 * written before. */
static void expect_refused(const char *in, const char *why)
{
    char out[300], args[1024], *msg = NULL;
    snprintf(out, sizeof out, "%s/refused.html", dir);
    unlink(out);
    snprintf(args, sizeof args, "report %s -o %s", in, out);
    assert_int_equal(tu_run(args, &msg), 2);
    assert_contains(msg, in);
    assert_contains(msg, why);
    free(msg);
    assert_int_equal(access(out, F_OK), -1);
    FILE *f = fopen(out, "w"); /* a page from before stays whole */
    fputs("before", f);
    fclose(f);
    assert_int_equal(tu_run(args, &msg), 2);
    free(msg);
    char *kept = slurp(out);
    assert_string_equal(kept, "before");
    free(kept);
    /* and alongside a good answer: nothing either */
    snprintf(args, sizeof args, "report %s/compare.json %s -o %s", dir, in, out);
    assert_int_equal(tu_run(args, &msg), 2);
    free(msg);
    kept = slurp(out);
    assert_string_equal(kept, "before");
    free(kept);
    unlink(out);
}

static void test_bad_input(void **state)
{
    (void)state;
    char path[300];
    /* an unknown format: a plan (placer-plan/1) is no answer; and no placer format at all */
    snprintf(path, sizeof path, "%s/plan.json", dir);
    expect_refused(path, "unknown format \"placer-plan/1\"");
    const char *odd = "{\"format\": \"something-else\"}";
    expect_refused(tu_tmpfile(odd, strlen(odd), ".json"), "unknown format \"something-else\"");
    /* a truncated file: the first half of a real answer */
    snprintf(path, sizeof path, "%s/deploy.json", dir);
    char *whole = slurp(path);
    expect_refused(tu_tmpfile(whole, strlen(whole) / 2, ".json"), "line ");
    /* a newer version of a format placer draws */
    json_t *newer = json_deep_copy(docs[3]);
    json_object_set_new(newer, "format", json_string("placer-deploy/2"));
    char *text = json_dumps(newer, 0);
    expect_refused(tu_tmpfile(text, strlen(text), ".json"),
                   "\"placer-deploy/2\" is not supported: this placer reads \"placer-deploy/1\"");
    free(text), free(whole);
    json_decref(newer);
    /* not an object */
    expect_refused(tu_tmpfile("[1, 2]", 6, ".json"), "not a placer document");
}

/* ---- a plan too big to draw op by op ---- */

/* 6,000 spans (above HX_GANTT_DETAIL, 5,000): 5,999 ops of 1 us back to back from 0, then one
 * of 4.001 ms to 10 ms. On the axis of 0 to 10 ms over 590 px an op of 1 us is 0.059 px wide:
 * the 5,999 are one bar (data-merged="5999"), the last op its own bar with its numbers. */
static void test_big_plan_merged(void **state)
{
    (void)state;
    json_t *ops = json_array();
    for (int i = 0; i < 5999; i++)
        json_array_append_new(ops, json_pack("{s:s, s:s, s:f, s:f}", "op", "o", "device", "A",
                                             "start_s", i * 1e-6, "end_s", (i + 1) * 1e-6));
    json_array_append_new(ops, json_pack("{s:s, s:s, s:f, s:f}", "op", "last", "device", "A",
                                         "start_s", 5999e-6, "end_s", 10e-3));
    json_t *doc = json_pack("{s:s, s:f, s:[{s:s, s:i}], s:{s:o, s:[]}}", "format",
                            "placer-simulate/1", "makespan_s", 10e-3, "devices", "device", "A",
                            "ops", 6000, "schedule", "ops", ops, "transfers");
    char *text = json_dumps(doc, 0), out[300], args[700], *msg = NULL;
    snprintf(out, sizeof out, "%s/big.html", dir);
    snprintf(args, sizeof args, "report %s -o %s", tu_tmpfile(text, strlen(text), ".json"), out);
    assert_int_equal(tu_run(args, &msg), 0);
    free(msg), free(text);
    char *page = slurp(out);
    const char *m = strstr(page, "data-merged=\"");
    assert_non_null(m);
    assert_int_equal(atoi(m + 13), 5999);
    assert_null(strstr(m + 1, "data-merged=")); /* one merged bar */
    assert_non_null(strstr(page, "data-p=\"$.schedule.ops[5999]\""));
    assert_null(strstr(page, "data-p=\"$.schedule.ops[0]\""));
    free(page);
    json_decref(doc);
}

/* ---- in a real browser ---- */

/* A PNG's pixels: how many, how many are not white, and whether the palette's first colour
 * (the bars' and spans' #4e79a7) is among them. Decoded here: the chunks' IDAT inflated
 * (zlib) and each row unfiltered (PNG's five filters), for 8-bit RGB or RGBA. */
typedef struct png_stats {
    long pixels, not_white, blue;
} png_stats;

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static png_stats png_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char sig[8], hdr[8];
    assert_int_equal(fread(sig, 1, 8, f), 8);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
    unsigned char *idat = NULL;
    size_t n_idat = 0;
    unsigned w = 0, h = 0, bpp = 0;
    while (fread(hdr, 1, 8, f) == 8) {
        size_t len = (size_t)hdr[0] << 24 | hdr[1] << 16 | hdr[2] << 8 | hdr[3];
        unsigned char *data = malloc(len + 4);
        assert_int_equal(fread(data, 1, len + 4, f), len + 4); /* with the CRC */
        if (!memcmp(hdr + 4, "IHDR", 4)) {
            w = (unsigned)data[0] << 24 | data[1] << 16 | data[2] << 8 | data[3];
            h = (unsigned)data[4] << 24 | data[5] << 16 | data[6] << 8 | data[7];
            assert_int_equal(data[8], 8); /* bit depth */
            bpp = data[9] == 6 ? 4 : data[9] == 2 ? 3 : 0;
            assert_true(bpp && data[12] == 0); /* RGB(A), not interlaced */
        } else if (!memcmp(hdr + 4, "IDAT", 4)) {
            idat = realloc(idat, n_idat + len);
            memcpy(idat + n_idat, data, len), n_idat += len;
        }
        free(data);
    }
    fclose(f);
    size_t stride = (size_t)w * bpp;
    uLongf raw_len = (uLongf)(stride + 1) * h;
    unsigned char *raw = malloc(raw_len);
    assert_int_equal(uncompress(raw, &raw_len, idat, n_idat), Z_OK);
    assert_int_equal(raw_len, (stride + 1) * h);
    png_stats st = {(long)w * h, 0, 0};
    unsigned char *prev = calloc(stride, 1), *row;
    for (unsigned y = 0; y < h; y++, prev = row) {
        int filter = raw[y * (stride + 1)];
        row = raw + y * (stride + 1) + 1;
        for (size_t i = 0; i < stride; i++) {
            int a = i >= bpp ? row[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
            int add = filter == 1   ? a
                      : filter == 2 ? b
                      : filter == 3 ? (a + b) / 2
                      : filter == 4 ? paeth(a, b, c)
                                    : 0;
            row[i] = (unsigned char)(row[i] + add);
        }
        for (unsigned x = 0; x < w; x++) {
            const unsigned char *p = row + (size_t)x * bpp;
            st.not_white += p[0] < 250 || p[1] < 250 || p[2] < 250;
            st.blue += abs(p[0] - 0x4e) < 8 && abs(p[1] - 0x79) < 8 && abs(p[2] - 0xa7) < 8;
        }
        if (y == 0) free(prev);
    }
    free(raw), free(idat);
    return st;
}

/* chromium on PATH, else NULL (the test then says so and skips). */
static const char *chromium(void)
{
    static char path[512];
    const char *dirs = getenv("PATH");
    for (const char *s = dirs; s && *s;) {
        size_t n = strcspn(s, ":");
        snprintf(path, sizeof path, "%.*s/chromium", (int)n, s);
        if (access(path, X_OK) == 0) return path;
        s += n + (s[n] == ':');
    }
    return NULL;
}

/* Renders page headless: its DOM (--dump-dom, read from its stdout) into *dom, its
 * screenshot into png and its print into pdf, in one start of the browser, within a
 * deadline. */
static void render(const char *page, const char *png, const char *pdf, char **dom)
{
    char shot[600], print[600], url[600], profile[600], size[] = "--window-size=1000,9000";
    snprintf(shot, sizeof shot, "--screenshot=%s", png);
    snprintf(print, sizeof print, "--print-to-pdf=%s", pdf);
    snprintf(url, sizeof url, "file://%s", page);
    snprintf(profile, sizeof profile, "--user-data-dir=%s/chromium-profile", dir);
    char *argv[] = {"chromium",
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--hide-scrollbars",
                    "--no-first-run",
                    profile,
                    size,
                    shot,
                    print,
                    "--dump-dom",
                    url,
                    NULL};
    pl_proc p = PL_PROC_NONE;
    pl_err err = {""};
    if (pl_proc_start(&p, argv, NULL, "chromium", "(make deps installs it)", &err) < 0)
        fail_msg("%s", err.msg);
    size_t len = 0, cap = 1 << 16;
    *dom = malloc(cap);
    (*dom)[0] = 0;
    char *line;
    pl_proc_rc rc;
    while ((rc = pl_proc_line(&p, 60, &line)) == PL_PROC_LINE) { /* a minute: a stalled browser */
        size_t n = strlen(line);
        if (len + n + 2 > cap) *dom = realloc(*dom, cap = 2 * (len + n + 2));
        memcpy(*dom + len, line, n), len += n;
        (*dom)[len++] = '\n', (*dom)[len] = 0;
        free(line);
    }
    char how[128], tail[PL_PROC_TAIL + 1];
    int status = pl_proc_end(&p, false, 30, how, sizeof how); /* it ends by itself once done */
    if (rc == PL_PROC_TIMEOUT || status != 0)
        fail_msg("chromium %s (%s): %s", rc == PL_PROC_TIMEOUT ? "stalled" : "failed", how,
                 pl_proc_tail(&p, tail, sizeof tail));
}

static void test_in_browser(void **state)
{
    (void)state;
    if (!chromium()) {
        printf("SKIPPED: chromium is not on PATH (make deps installs Debian's chromium)\n");
        skip();
    }
    char page[300], png[300], pdf[300], *dom = NULL;
    snprintf(page, sizeof page, "%s/browser.html", dir);
    snprintf(png, sizeof png, "%s/browser.png", dir);
    snprintf(pdf, sizeof pdf, "%s/browser.pdf", dir);
    report_all(page);
    render(page, png, pdf, &dom);
    /* the page parsed whole: every section and chart there, no parser error */
    assert_non_null(strstr(dom, "</body></html>"));
    assert_null(strstr(dom, "parsererror"));
    check_page(dom); /* the numbers as the browser holds them */
    char *file = slurp(page);
    int in_file = 0, in_dom = 0;
    for (const char *s = file; (s = strstr(s, "<figure")); s++)
        in_file++;
    for (const char *s = dom; (s = strstr(s, "<figure")); s++)
        in_dom++;
    assert_int_equal(in_dom, in_file);
    free(file), free(dom);
    /* printed: a PDF of several pages (its page tree's /Count), not a blank sheet */
    size_t pdf_len;
    char *printed = slurp_n(pdf, &pdf_len);
    assert_memory_equal(printed, "%PDF-", 5);
    const char *count = memmem(printed, pdf_len, "/Count ", 7);
    assert_non_null(count);
    printf("printed: %d pages\n", atoi(count + 7));
    assert_true(atoi(count + 7) >= 3);
    free(printed);
    /* painted: 2 % of the pixels or more are not white (10.6 % on the page of every answer
     * here), and the bars' blue is there (a page of text alone has none) */
    png_stats st = png_read(png);
    printf("screenshot: %ld of %ld pixels not white, %ld of the bars' blue\n", st.not_white,
           st.pixels, st.blue);
    if (st.not_white * 50 < st.pixels || st.blue < 1000)
        fail_msg("%s looks blank: %ld of %ld pixels not white, %ld of the bars' blue", png,
                 st.not_white, st.pixels, st.blue);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_answer_drawn), cmocka_unit_test(test_report_flag),
        cmocka_unit_test(test_bad_input),          cmocka_unit_test(test_big_plan_merged),
        cmocka_unit_test(test_in_browser),
    };
    return cmocka_run_group_tests(tests, make_answers, drop_answers);
}
