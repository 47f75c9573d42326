/* trace.c: a recorded run as Chrome trace JSON (the "Trace Event Format"; Perfetto and
 * chrome://tracing open it). Process 1 "devices" has one track per device, process 2 "links"
 * one per ordered pair that carried a transfer ("gpu0→gpu1"); ops and transfers are complete
 * events ("ph": "X") with times in microseconds. Written with stdio: a 50,000-op trace would
 * otherwise be built as a tree first. */
#include "placer/sim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum { PID_DEVICES = 1, PID_LINKS = 2 };

/* Length of the valid UTF-8 sequence at s, or 0 (RFC 3629: no overlongs, no surrogates). */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] >= 0xC2 && s[0] <= 0xDF   ? 2
            : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
            : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                           : 0;
    if (!n) return 0;
    unsigned char lo = s[0] == 0xE0 ? 0xA0 : s[0] == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = s[0] == 0xED ? 0x9F : s[0] == 0xF4 ? 0x8F : 0xBF;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

/* A JSON string: quotes, backslashes and control bytes escaped; bytes that are not UTF-8
 * (names come from files) become U+FFFD, so the trace always parses. */
static void put_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        if (*p == '"' || *p == '\\')
            fputc('\\', f), fputc(*p++, f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p++);
        else if (*p < 0x80)
            fputc(*p++, f);
        else {
            int n = utf8_len(p);
            if (n)
                fwrite(p, 1, n, f), p += n;
            else
                fputs("\\ufffd", f), p++;
        }
    }
    fputc('"', f);
}

/* Metadata come first, so every later event is preceded by ",\n". */
static void meta(FILE *f, const char *what, int pid, int tid, const char *key, const char *name,
                 int sort)
{
    bool first = pid == PID_DEVICES && tid == 0 && !strcmp(what, "process_name");
    fprintf(f, "%s{\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"%s\": ",
            first ? "" : ",\n", what, pid, tid, key);
    if (name)
        put_str(f, name);
    else
        fprintf(f, "%d", sort);
    fputs("}}", f);
}

static void link_name(const pl_cluster *c, int a, int b, char *buf, size_t n)
{
    snprintf(buf, n, "%s\u2192%s", c->devs[a].name, c->devs[b].name);
}

static void tracks(FILE *f, const pl_cluster *c, const pl_sim_result *r)
{
    int D = c->n_devs;
    meta(f, "process_name", PID_DEVICES, 0, "name", "devices", 0);
    meta(f, "process_name", PID_LINKS, 0, "name", "links", 0);
    for (int d = 0; d < D; d++) {
        char name[512];
        snprintf(name, sizeof name, "%s (%s)", c->devs[d].name, c->devs[d].model);
        meta(f, "thread_name", PID_DEVICES, d, "name", name, 0);
        meta(f, "thread_sort_index", PID_DEVICES, d, "sort_index", NULL, d);
    }
    for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) {
            if (a == b || r->link_busy_s[a * D + b] <= 0) continue;
            char name[512];
            link_name(c, a, b, name, sizeof name);
            meta(f, "thread_name", PID_LINKS, a * D + b, "name", name, 0);
            meta(f, "thread_sort_index", PID_LINKS, a * D + b, "sort_index", NULL, a * D + b);
        }
}

static void op_event(FILE *f, const pl_cost *k, const pl_plan *p, const pl_sim_result *r, int i)
{
    int op = i % k->n_ops;
    const pl_op *o = &k->g->ops[op];
    fputs(",\n{\"name\": ", f);
    put_str(f, o->name);
    fprintf(f,
            ", \"cat\": \"op\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, "
            "\"tid\": %d, \"args\": {\"type\": ",
            r->op_start_s[i] * 1e6, (r->op_end_s[i] - r->op_start_s[i]) * 1e6, PID_DEVICES,
            p->dev[op]);
    put_str(f, o->type);
    fprintf(f, ", \"flops\": %.17g, \"request\": %d}}", o->flops, i / k->n_ops);
}

static void xfer_event(FILE *f, const pl_cost *k, const pl_xfer *x)
{
    int D = k->n_devs;
    char name[512];
    link_name(k->c, x->from, x->to, name, sizeof name);
    int64_t bytes = k->g->tensors[x->tensor].bytes;
    fputs(",\n{\"name\": ", f);
    put_str(f, k->g->tensors[x->tensor].name);
    fprintf(f,
            ", \"cat\": \"transfer\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, "
            "\"tid\": %d, \"args\": {\"link\": ",
            x->start_s * 1e6, (x->end_s - x->start_s) * 1e6, PID_LINKS, x->from * D + x->to);
    put_str(f, name);
    fprintf(f, ", \"bytes\": %lld, \"request\": %d}}", (long long)(bytes > 0 ? bytes : 0),
            x->request);
}

int pl_sim_trace_write(const pl_cost *k, const pl_plan *p, const pl_sim_result *r, const char *path,
                       pl_err *err)
{
    if (!r->op_start_s) return pl_err_set(err, "%s: the run was not recorded (opts.record)", path);
    pl_out out;
    if (pl_out_open(&out, path, err) < 0) return -1;
    FILE *f = out.f;
    fprintf(f,
            "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"makespan_s\": %.17g}, "
            "\"traceEvents\": [\n",
            r->makespan_s);
    tracks(f, k->c, r);
    int runs = k->n_ops * (r->requests > 1 ? r->requests : 1);
    for (int i = 0; i < runs; i++)
        op_event(f, k, p, r, i);
    for (int i = 0; i < r->n_xfers; i++)
        xfer_event(f, k, &r->xfers[i]);
    fputs("\n]}\n", f);
    return pl_out_commit(&out, err); /* any failed write above shows here */
}
