/* collectives.c: `placer profile --collectives`: times AllReduce, broadcast and point-to-point
 * with MPI on this machine (pl_coll_measure), fits segmented linear curves (pl_coll_fit),
 * prints them beside the link model of a cluster, and writes them as placer-collectives/1,
 * which a cluster file's "collectives" names (docs/runtime.md, "Measuring collectives"). */
#include "cli.h"
#include "placer/calib.h"
#include "placer/json.h"
#include "placer/report.h"
#include "placer/runtime.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SEGMENTS 3

static const char *help =
    "usage: placer profile --collectives [-o collectives.json] [--np N] [--max-bytes B]\n"
    "                      [--repeat R] [--budget T] [--deadline T] [--cluster C] [--json]\n"
    "  -o FILE        writes the fitted curves as placer-collectives/1 (a cluster's\n"
    "                 \"collectives\": [{\"file\": FILE}])\n"
    "  --np N         MPI processes (default 2)\n"
    "  --max-bytes B  the largest size, from 1 KiB doubling (default 1 GiB; cut to the memory)\n"
    "  --repeat R     timed repetitions per size after one warm-up (default 10; fewer, at\n"
    "                 least 3, where one size takes over 2 s); times are medians\n"
    "  --budget T     the benchmark stops before a size that would overrun it (default 900s)\n"
    "  --deadline T   mpirun's time for one size of one collective before it is taken as\n"
    "                 stalled and killed with what it started (default 120s)\n"
    "  --cluster C    prints what C's link model predicts beside the measurement (its first\n"
    "                 N devices)\n"
    "  --json         prints the placer-collectives/1 document instead of the tables\n"
    "needs OpenMPI (mpirun, mpicc at build time); PLACER_MPIRUN and PLACER_COLLBENCH name\n"
    "other programs. exit status: 0 done, 2 bad input or failure\n";

typedef struct coll_opts {
    const char *out, *cluster;
    pl_coll_run_opts run;
    bool json;
} coll_opts;

typedef struct coll_fit {
    double *bytes, *s; /* the samples of one collective, by size */
    int n;
    pl_coll_curve cv;
    double rms;
} coll_fit;

/* ---- the link model, for comparison ---- */

/* Ring AllReduce over devices 0..D-1: 2(D-1) steps, each moving L/D bytes over the ring's
 * slowest link and paying its largest latency. Broadcast: a binomial tree from device 0,
 * ceil(log2 D) rounds of the whole buffer. Point to point: device 0 to device 1. */
static double link_model_s(const pl_cluster *c, int d, pl_collective k, double bytes)
{
    double bw = INFINITY, lat = 0;
    for (int i = 0; i < d; i++) {
        size_t e = (size_t)i * c->n_devs + (i + 1) % d;
        bw = fmin(bw, c->bw_Bps[e]), lat = fmax(lat, c->lat_s[e]);
    }
    if (k == PL_COLL_ALLREDUCE) return 2.0 * (d - 1) * (lat + bytes / d / bw);
    if (k == PL_COLL_BROADCAST) return ceil(log2(d)) * (lat + bytes / bw);
    return pl_cluster_xfer_s(c, 0, 1, bytes);
}

/* ---- fitting ---- */

static int fit_all(const pl_coll_run *r, coll_fit f[PL_COLL_COUNT], pl_err *err)
{
    for (int k = 0; k < PL_COLL_COUNT; k++) {
        f[k].bytes = pl_calloc((size_t)r->n + 1, sizeof *f[k].bytes);
        f[k].s = pl_calloc((size_t)r->n + 1, sizeof *f[k].s);
        for (int i = 0; i < r->n; i++)
            if (r->s[i].kind == (pl_collective)k)
                f[k].bytes[f[k].n] = r->s[i].bytes, f[k].s[f[k].n++] = r->s[i].s;
        if (f[k].n == 0) continue;
        pl_err e = {""};
        f[k].rms = pl_coll_fit(f[k].bytes, f[k].s, f[k].n, MAX_SEGMENTS, &f[k].cv, &e);
        if (f[k].rms < 0)
            return pl_err_set(err, "%s: %s", pl_collective_name((pl_collective)k), e.msg);
    }
    return 0;
}

static void fits_free(coll_fit f[PL_COLL_COUNT])
{
    for (int k = 0; k < PL_COLL_COUNT; k++)
        free(f[k].bytes), free(f[k].s), pl_coll_curve_free(&f[k].cv);
}

/* ---- output ---- */

static json_t *segments_json(const pl_coll_curve *cv)
{
    json_t *a = json_array();
    for (int g = 0; g < cv->n; g++)
        json_array_append_new(a, json_pack("{s:f, s:f, s:f}", "from_bytes", cv->seg[g].from_bytes,
                                           "a_s", cv->seg[g].a_s, "b_s_per_byte",
                                           cv->seg[g].b_s_per_byte));
    return a;
}

static json_t *document(const coll_opts *o, const pl_coll_run *r, const coll_fit f[PL_COLL_COUNT])
{
    char cpu[256], when[32], desc[512];
    pl_cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    snprintf(desc, sizeof desc,
             "OpenMPI mpirun -np %d, float32 buffers, sizes doubling from 1 KiB; median of up to "
             "%d repetitions after a warm-up, the slowest rank's time; p2p = half a ping-pong. "
             "Segmented least-squares fit on relative errors, at most %d segments",
             r->np, o->run.repeat > 0 ? o->run.repeat : 10, MAX_SEGMENTS);
    json_t *doc = json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:f}", "format", "placer-collectives/1",
                            "devices", r->np, "description", desc, "machine", cpu, "measured_utc",
                            when, "repeat", r->repeat, "max_bytes", r->max_bytes);
    json_t *meas = json_object(), *rms = json_object();
    for (int k = 0; k < PL_COLL_COUNT; k++) {
        if (f[k].n == 0) continue;
        const char *name = pl_collective_name((pl_collective)k);
        json_object_set_new(doc, name, segments_json(&f[k].cv));
        json_object_set_new(rms, name, json_real(f[k].rms));
        json_t *m = json_array();
        for (int i = 0; i < f[k].n; i++)
            json_array_append_new(m,
                                  json_pack("{s:f, s:f}", "bytes", f[k].bytes[i], "s", f[k].s[i]));
        json_object_set_new(meas, name, m);
    }
    json_object_set_new(doc, "fit_rms", rms);
    json_object_set_new(doc, "measurements", meas);
    return doc;
}

static void print_tables(const coll_opts *o, const pl_coll_run *r, const coll_fit f[],
                         const pl_cluster *c)
{
    printf("%-10s mpirun -np %d, sizes 1 KiB to %.0f B, %.1f s\n", "measured", r->np, r->max_bytes,
           r->elapsed_s);
    if (o->out) printf("%-10s %s\n", "written", o->out);
    putchar('\n');
    char spec[160];
    snprintf(spec, sizeof spec, "collective|>bytes|>measured us|>fitted us|>fit/measured%s",
             c ? "|>link model us|>model/measured" : "");
    pl_table *t = pl_table_new(spec);
    for (int k = 0; k < PL_COLL_COUNT; k++)
        for (int i = 0; i < f[k].n; i++) {
            double m = f[k].s[i], fit = pl_coll_curve_s(&f[k].cv, f[k].bytes[i]);
            char b[32], tail[96] = "";
            if (c) {
                double lm = link_model_s(c, r->np, (pl_collective)k, f[k].bytes[i]);
                snprintf(tail, sizeof tail, "|%.2f|%.2f", lm * 1e6, lm / m);
            }
            pl_table_row(t, "%s|%s|%.2f|%.2f|%.2f%s", pl_collective_name((pl_collective)k),
                         pl_fmt_bytes(f[k].bytes[i], b, sizeof b), m * 1e6, fit * 1e6, fit / m,
                         tail);
        }
    pl_table_print(t, stdout);
    pl_table_free(t);
    putchar('\n');
    t = pl_table_new("collective|>from bytes|>a us|>b ns/byte|>GB/s|>rms error %");
    for (int k = 0; k < PL_COLL_COUNT; k++)
        for (int g = 0; g < f[k].cv.n; g++) {
            const pl_coll_segment *s = &f[k].cv.seg[g];
            char b[32];
            pl_table_row(t, "%s|%s|%.2f|%.4f|%.2f|%.1f", pl_collective_name((pl_collective)k),
                         pl_fmt_bytes(s->from_bytes, b, sizeof b), s->a_s * 1e6,
                         s->b_s_per_byte * 1e9, s->b_s_per_byte > 0 ? 1e-9 / s->b_s_per_byte : 0,
                         f[k].rms * 100);
        }
    pl_table_print(t, stdout);
    pl_table_free(t);
}

static cli_exit run(coll_opts *o)
{
    pl_err err = {""};
    pl_cluster *c = NULL;
    int np = o->run.np > 0 ? o->run.np : 2;
    if (o->cluster && !(c = pl_cluster_load(o->cluster, &err)))
        return cli_fail("profile", "%s", err.msg);
    if (c && c->n_devs < np) {
        int n = c->n_devs;
        pl_cluster_free(c);
        return cli_fail("profile", "%s: %d devices, fewer than --np %d", o->cluster, n, np);
    }
    pl_coll_run r;
    coll_fit f[PL_COLL_COUNT] = {0};
    cli_exit status = CLI_EXIT_OK;
    fprintf(stderr, "profile: timing collectives with mpirun -np %d...\n", np);
    if (pl_coll_measure(&o->run, &r, &err) < 0) {
        pl_cluster_free(c);
        return cli_fail("profile", "%s", err.msg);
    }
    json_t *doc = NULL;
    if (fit_all(&r, f, &err) < 0) {
        status = cli_fail("profile", "%s", err.msg);
    } else {
        doc = document(o, &r, f);
        if (o->out && pl_json_save(doc, o->out, JSON_INDENT(1), &err) < 0)
            status = cli_fail("profile", "%s", err.msg);
        else if (o->json)
            pl_json_print(json_incref(doc), stdout);
        else
            print_tables(o, &r, f, c);
    }
    json_decref(doc);
    fits_free(f);
    pl_coll_run_free(&r);
    pl_cluster_free(c);
    return status;
}

enum { COLLECTIVES = CLI_OWN, CLUSTER, NP, REPEAT, MAX_BYTES, BUDGET, DEADLINE };
static const struct option options[] = {{"collectives", no_argument, NULL, COLLECTIVES},
                                        CLI_JSON_OPTION,
                                        {"output", required_argument, NULL, 'o'},
                                        {"cluster", required_argument, NULL, CLUSTER},
                                        {"np", required_argument, NULL, NP},
                                        {"repeat", required_argument, NULL, REPEAT},
                                        {"max-bytes", required_argument, NULL, MAX_BYTES},
                                        {"budget", required_argument, NULL, BUDGET},
                                        {"deadline", required_argument, NULL, DEADLINE},
                                        CLI_OPTIONS_END};

static int take(void *p, int c, const char *v)
{
    coll_opts *o = p;
    long l;
    switch (c) {
    case COLLECTIVES:
        return 0; /* how profile got here */
    case CLI_JSON:
        return o->json = true, 0;
    case 'o':
        return cli_file("profile", "-o", v, "a file", &o->out);
    case CLUSTER:
        return cli_file("profile", "--cluster", v, "a file", &o->cluster);
    case NP:
        if (cli_count("profile", "--np", v, 2, 256, &l) < 0) return -1;
        return o->run.np = (int)l, 0;
    case REPEAT:
        if (cli_count("profile", "--repeat", v, 1, 10000, &l) < 0) return -1;
        return o->run.repeat = (int)l, 0;
    case MAX_BYTES:
        return cli_bytes("profile", "--max-bytes", v, 2048, 1e12, "2 KiB (two sizes) to 1 TB",
                         &o->run.max_bytes);
    case BUDGET:
        return cli_seconds("profile", "--budget", v, &o->run.budget_s);
    case DEADLINE:
        return cli_seconds("profile", "--deadline", v, &o->run.timeout_s);
    default: /* CLI_ARG: the collectives are measured on no model */
        return cli_error("profile", "unknown option '%s' with --collectives\n%s", v, help);
    }
}

cli_exit cli_profile_collectives(int argc, char **argv)
{
    coll_opts o = {0};
    cli_args g = CLI_ARGS("profile", "ho:", help, false);
    cli_exit parsed = cli_parse(&g, NULL, take, &o);
    if (!cli_ok(parsed) || g.asked_help) return parsed;
    return run(&o);
}
