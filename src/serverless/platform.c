/* platform.c: the placer-platform/1 reader and a function's bill (docs/formats.md,
 * docs/serverless.md "Platforms").
 *
 * A platform is read completely or refused: a planner that silently took a default price or
 * a missing transport would pick the wrong split at the wrong cost. Every refusal names the
 * file, the JSON path of the field and the rule broken, "aws.json: $.memory.step_mb: must be
 * above 0, got -1". Memory sizes are the platform's MB (Lambda's MB is a MiB, 2^20 bytes) and a
 * GB of GB-seconds is 1024 of them, as AWS bills: its pricing page turns 512 MB into
 * 512/1024 = 0.5 GB. The vCPU is an embedded placer-cluster/1 of one device, read by the
 * cluster reader itself, so its figures mean what they mean in a cluster file. */
#include "placer/json.h"
#include "placer/serverless.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Beyond these a figure is almost certainly a unit mistake (bytes or KB given as MB, a price
 * per hour given per second): Lambda's are 10,240 MB, $1.7e-5 per GB-s, $2e-7 per request. */
#define MB_MAX 1e7           /* 10 TB of memory in one function */
#define USD_PER_GB_S_MAX 1.0 /* $3,600 per GB-hour */
#define USD_PER_REQUEST_MAX 1.0
#define USD_PER_GB_MAX 100.0 /* per GB moved */
/* A provisioned store: the largest ElastiCache nodes cost a few dollars an hour, and one Redis
 * node serves of the order of 10^5 requests a second; a hundred times either is a unit mistake
 * (a price per month, a rate per hour). */
#define USD_PER_HOUR_MAX 1000.0
#define REQUESTS_PER_S_MAX 1e7
#define BILLING_MAX_S 3600.0   /* granularity: platforms bill per ms, per 100 ms, per s */
#define COLD_START_MAX_S 600.0 /* a function that needs ten minutes to start is not one */
/* A duration within one part in 10^9 of a multiple of the billing granularity bills as that
 * multiple: 2 ms + 17 ms is 19.000000000000004 ms in binary floating point and bills 19 ms,
 * while 0.0030000001 s (1e-7 above 3 ms) bills 4 ms. One part in 10^9 is 1 ns in a second, below
 * what any platform or timer here resolves. The same tolerance rounds memory sizes to the step. */
#define REL_TOL 1e-9

/* A runtime that takes ten times a weight's bytes is a unit mistake. */
#define FACTOR_MAX 10

static const char *const platform_fields[] = {"format",
                                              "name",
                                              "description",
                                              "source",
                                              "memory",
                                              "mb_per_vcpu",
                                              "min_vcpus",
                                              "usd_per_gb_s",
                                              "usd_per_request",
                                              "billing_granularity_s",
                                              "cold_start_s",
                                              "runtime_base_mb",
                                              "runtime_weight_factor",
                                              "runtime_activation_factor",
                                              "parallel_efficiency",
                                              "store",
                                              "shared_memory",
                                              "invocation",
                                              "vcpu",
                                              NULL};

/* ---- small readers ---- */

/* Refuses the field `field` of o (o itself when NULL) with a formatted problem. */
static int fail_field(const pl_json *o, const char *field, pl_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_field(const pl_json *o, const char *field, pl_err *err, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pl_json at = field ? pl_json_at(o, field) : *o;
    return pl_json_fail(&at, err, "%s", msg);
}

/* A plain number whose unit is in its name (min_mb, usd_per_gb_s), in (lo, hi] when
 * `open_lo`, else in [lo, hi]. */
static int read_number(const pl_json *o, const char *field, double lo, bool open_lo, double hi,
                       double *out, pl_err *err)
{
    if (pl_json_number(o, field, out, err) < 0) return -1;
    double v = *out;
    if (open_lo && !(v > lo)) return fail_field(o, field, err, "must be above %g, got %g", lo, v);
    if (!open_lo && v < lo) return fail_field(o, field, err, "must be at least %g, got %g", lo, v);
    if (v > hi)
        return fail_field(o, field, err,
                          "%g is larger than %g: almost certainly a unit mistake (the unit is "
                          "in the field's name)",
                          v, hi);
    return 0;
}

/* A required, non-empty string. */
static int read_text(const pl_json *o, const char *field, const char **out, pl_err *err)
{
    if (pl_json_string(o, field, out, err) < 0) return -1;
    return **out ? 0 : fail_field(o, field, err, "must not be empty");
}

/* "source": a string, or an array of strings (one per figure), none empty: every price and
 * figure says where it comes from and when. */
static int read_source(const pl_json *o, pl_err *err)
{
    pl_json s = pl_json_at(o, "source");
    const char *text;
    if (!s.v || !json_is_array(s.v)) return read_text(o, "source", &text, err);
    if (pl_json_len(&s) == 0) return pl_json_fail(&s, err, "must not be empty");
    for (size_t i = 0; i < pl_json_len(&s); i++) {
        pl_json e = pl_json_index(&s, i);
        if (pl_json_string(&e, NULL, &text, err) < 0) return -1;
        if (!*text) return pl_json_fail(&e, err, "must not be empty");
    }
    return 0;
}

/* ---- the parts ---- */

/* "memory": {"min_mb", "max_mb", "step_mb"}: the sizes min + k * step up to max. */
static int read_memory(const pl_json *root, pl_platform *p, pl_err *err)
{
    static const char *const fields[] = {"min_mb", "max_mb", "step_mb", "description", NULL};
    pl_json m;
    if (pl_json_object(root, "memory", &m, err) < 0 || pl_json_check_fields(&m, fields, err) < 0 ||
        read_number(&m, "min_mb", 0, true, MB_MAX, &p->mem_min_mb, err) < 0 ||
        read_number(&m, "max_mb", 0, true, MB_MAX, &p->mem_max_mb, err) < 0 ||
        read_number(&m, "step_mb", 0, true, MB_MAX, &p->mem_step_mb, err) < 0)
        return -1;
    if (p->mem_max_mb < p->mem_min_mb)
        return fail_field(&m, "max_mb", err, "%g is below min_mb (%g)", p->mem_max_mb,
                          p->mem_min_mb);
    return 0;
}

/* The prices, the billing granularity, the cold start, the runtime's memory and how vCPUs
 * follow memory. */
static int read_figures(const pl_json *root, pl_platform *p, pl_err *err)
{
    if (read_number(root, "mb_per_vcpu", 0, true, MB_MAX, &p->mb_per_vcpu, err) < 0 ||
        read_number(root, "usd_per_gb_s", 0, true, USD_PER_GB_S_MAX, &p->usd_per_gb_s, err) < 0 ||
        read_number(root, "usd_per_request", 0, false, USD_PER_REQUEST_MAX, &p->usd_per_request,
                    err) < 0 ||
        pl_json_quantity(root, "billing_granularity_s", PL_UNIT_SECONDS, &p->billing_s, err) < 0 ||
        pl_json_check_range(root, "billing_granularity_s", p->billing_s, DBL_MIN, BILLING_MAX_S,
                            PL_UNIT_SECONDS, "a billing granularity", "write e.g. \"1 ms\"",
                            err) < 0 ||
        pl_json_quantity(root, "cold_start_s", PL_UNIT_SECONDS, &p->cold_start_s, err) < 0 ||
        pl_json_check_range(root, "cold_start_s", p->cold_start_s, 0, COLD_START_MAX_S,
                            PL_UNIT_SECONDS, "a cold start", "write e.g. \"1 s\"", err) < 0 ||
        read_number(root, "runtime_base_mb", 0, false, MB_MAX, &p->runtime_base_mb, err) < 0 ||
        read_number(root, "parallel_efficiency", 0, true, INFINITY, &p->parallel_eff, err) < 0 ||
        (pl_json_has(root, "min_vcpus") &&
         read_number(root, "min_vcpus", 0, false, PL_PLATFORM_VCPUS_MAX, &p->min_vcpus, err) < 0) ||
        (pl_json_has(root, "runtime_weight_factor") &&
         read_number(root, "runtime_weight_factor", 0, true, FACTOR_MAX, &p->runtime_weight_factor,
                     err) < 0) ||
        (pl_json_has(root, "runtime_activation_factor") &&
         read_number(root, "runtime_activation_factor", 0, true, FACTOR_MAX,
                     &p->runtime_activation_factor, err) < 0))
        return -1;
    if (p->parallel_eff > 1)
        return fail_field(root, "parallel_efficiency", err,
                          "must be at most 1 (each vCPU beyond the first adds this fraction of "
                          "one), got %g",
                          p->parallel_eff);
    /* λ far below a MB (1e-9) gives the largest function 10^13 vCPUs: no platform's, and a
     * parallel degree that is no int */
    if (p->mem_max_mb / p->mb_per_vcpu > PL_PLATFORM_VCPUS_MAX)
        return fail_field(root, "mb_per_vcpu", err,
                          "%g MB per vCPU gives the largest function (memory.max_mb %g) %.3g "
                          "vCPUs; at most %d are allowed (a unit mistake?)",
                          p->mb_per_vcpu, p->mem_max_mb, p->mem_max_mb / p->mb_per_vcpu,
                          PL_PLATFORM_VCPUS_MAX);
    if (p->runtime_base_mb >= p->mem_max_mb)
        return fail_field(root, "runtime_base_mb", err,
                          "%g MB leaves nothing of the largest function (memory.max_mb %g)",
                          p->runtime_base_mb, p->mem_max_mb);
    return 0;
}

/* A field that belongs to the other pricing of a store is refused, not ignored: a provisioned
 * node with a usd_per_gb left over would be priced as if it had none. */
static int refuse_other(const pl_json *o, const char *field, const char *why, pl_err *err)
{
    return pl_json_has(o, field) ? fail_field(o, field, err, "%s", why) : 0;
}

/* The store's price: "pricing" "serverless" (the default: usd_per_gb per GB written or read)
 * or "provisioned" (a node's usd_per_hour at requests_per_s: usd_per_op per write or read). */
static int read_store_price(const pl_json *o, pl_transport *t, pl_err *err)
{
    const char *pricing = "serverless";
    if (pl_json_has(o, "pricing") && pl_json_string(o, "pricing", &pricing, err) < 0) return -1;
    if (!strcmp(pricing, "serverless")) {
        static const char why[] = "only with \"pricing\": \"provisioned\"";
        if (refuse_other(o, "usd_per_hour", why, err) < 0 ||
            refuse_other(o, "requests_per_s", why, err) < 0)
            return -1;
        return read_number(o, "usd_per_gb", 0, false, USD_PER_GB_MAX, &t->usd_per_gb, err);
    }
    if (strcmp(pricing, "provisioned"))
        return fail_field(o, "pricing", err,
                          "must be \"serverless\" or \"provisioned\", got \"%s\"", pricing);
    if (refuse_other(o, "usd_per_gb",
                     "a provisioned node bills the hour, not the bytes (\"pricing\": "
                     "\"serverless\" has usd_per_gb)",
                     err) < 0 ||
        read_number(o, "usd_per_hour", 0, true, USD_PER_HOUR_MAX, &t->usd_per_hour, err) < 0 ||
        read_number(o, "requests_per_s", 0, true, REQUESTS_PER_S_MAX, &t->requests_per_s, err) < 0)
        return -1;
    t->provisioned = true;
    t->usd_per_op = t->usd_per_hour / 3600 / t->requests_per_s;
    return 0;
}

/* "store" (priced) or "shared_memory" (free): optional; bandwidth_Bps and latency_s are read
 * and checked as a cluster file's link, and both are required here. */
static int read_transport(const pl_json *root, const char *field, bool priced, pl_transport *t,
                          pl_err *err)
{
    static const char *const store_fields[] = {"bandwidth_Bps", "latency_s",    "pricing",
                                               "usd_per_gb",    "usd_per_hour", "requests_per_s",
                                               "description",   "source",       NULL};
    static const char *const shm_fields[] = {"bandwidth_Bps", "latency_s", "description", "source",
                                             NULL};
    pl_json o;
    int rc = pl_json_opt_object(root, field, &o, err);
    if (rc <= 0) return rc;
    if (pl_json_check_fields(&o, priced ? store_fields : shm_fields, err) < 0) return -1;
    if (!pl_json_has(&o, "latency_s"))
        return pl_json_fail(&o, err, "the field \"latency_s\" is missing");
    if (pl_cluster_read_link_figures(&o, &t->bandwidth_Bps, &t->latency_s, err) < 0 ||
        (priced && read_store_price(&o, t, err) < 0))
        return -1;
    t->present = true;
    return 0;
}

/* A rate of the invocation, checked as a link's bandwidth. */
static int read_rate(const pl_json *o, const char *field, double *out, pl_err *err)
{
    return pl_json_quantity(o, field, PL_UNIT_BYTES_PER_S, out, err) < 0 ||
                   pl_json_check_range(o, field, *out, PL_LINK_BW_MIN, PL_LINK_BW_MAX,
                                       PL_UNIT_BYTES_PER_S, "a payload rate",
                                       "write e.g. \"2 GB/s\"", err) < 0
               ? -1
               : 0;
}

/* "invocation": optional; round_trip_s, request_Bps and response_Bps all required in it. */
static int read_invocation(const pl_json *root, pl_invocation *v, pl_err *err)
{
    static const char *const fields[] = {"round_trip_s", "request_Bps", "response_Bps",
                                         "description",  "source",      NULL};
    pl_json o;
    int rc = pl_json_opt_object(root, "invocation", &o, err);
    if (rc <= 0) return rc;
    if (pl_json_check_fields(&o, fields, err) < 0 ||
        pl_json_quantity(&o, "round_trip_s", PL_UNIT_SECONDS, &v->round_trip_s, err) < 0 ||
        pl_json_check_range(&o, "round_trip_s", v->round_trip_s, 0, COLD_START_MAX_S,
                            PL_UNIT_SECONDS, "a round trip", "write e.g. \"1 ms\"", err) < 0 ||
        read_rate(&o, "request_Bps", &v->request_Bps, err) < 0 ||
        read_rate(&o, "response_Bps", &v->response_Bps, err) < 0)
        return -1;
    v->present = true;
    return 0;
}

static int read_transports(const pl_json *root, pl_platform *p, pl_err *err)
{
    if (read_transport(root, "store", true, &p->store, err) < 0 ||
        read_transport(root, "shared_memory", false, &p->shm, err) < 0 ||
        read_invocation(root, &p->invocation, err) < 0)
        return -1;
    if (p->store.present || p->shm.present) return 0;
    return pl_json_fail(root, err,
                        "a platform needs a \"store\", a \"shared_memory\" or both: how tensors "
                        "travel between functions");
}

/* "vcpu": a placer-cluster/1 object of exactly one CPU device. */
static int read_vcpu(const pl_json *root, pl_platform *p, pl_err *err)
{
    pl_json o;
    if (pl_json_object(root, "vcpu", &o, err) < 0 || !(p->vcpu = pl_cluster_parse(&o, err)))
        return -1;
    pl_json devs = pl_json_at(&o, "devices");
    if (p->vcpu->n_devs != 1)
        return pl_json_fail(&devs, err,
                            "%d devices: the vcpu cluster describes exactly one, what one vCPU "
                            "of a function computes",
                            p->vcpu->n_devs);
    if (p->vcpu->devs[0].kind != PL_DEV_CPU) {
        pl_json d = pl_json_index(&devs, 0);
        return pl_json_fail(&d, err, "the device is a %s; a function's vCPU is a cpu",
                            pl_dev_kind_name(p->vcpu->devs[0].kind));
    }
    return 0;
}

static int parse(const pl_json *root, pl_platform *p, pl_err *err)
{
    const char *name, *description;
    if (pl_json_check_format(root, "placer-platform/1", err) < 0 ||
        pl_json_check_fields(root, platform_fields, err) < 0 ||
        read_text(root, "name", &name, err) < 0 ||
        read_text(root, "description", &description, err) < 0 || read_source(root, err) < 0)
        return -1;
    p->name = pl_strdup(name);
    return read_memory(root, p, err) < 0 || read_figures(root, p, err) < 0 ||
                   read_transports(root, p, err) < 0 || read_vcpu(root, p, err) < 0
               ? -1
               : 0;
}

/* The platform in doc (closed here), read from `path`. */
static pl_platform *from_doc(pl_json_doc *doc, const char *path, pl_err *err)
{
    if (!doc) return NULL;
    pl_platform *p = pl_calloc(1, sizeof *p);
    pl_json root = pl_json_root(doc);
    int rc = parse(&root, p, err);
    pl_json_close(doc);
    if (rc < 0) {
        pl_platform_free(p);
        return NULL;
    }
    p->path = pl_strdup(path);
    return p;
}

pl_platform *pl_platform_load(const char *path, pl_err *err)
{
    return from_doc(pl_json_open(path, err), path, err);
}

pl_platform *pl_platform_load_buffer(const char *buf, size_t len, const char *name, pl_err *err)
{
    return from_doc(pl_json_parse(buf, len, name, err), name, err);
}

void pl_platform_free(pl_platform *p)
{
    if (!p) return;
    free(p->name);
    free(p->path);
    pl_cluster_free(p->vcpu);
    free(p);
}

/* ---- sizes and bills ---- */

/* The number of `unit`s in the smallest multiple of `unit` at least x (x >= 0), where x
 * within REL_TOL of a multiple counts as that multiple (floating-point error, not time). */
static double units_up(double x, double unit)
{
    double q = x / unit, k = round(q);
    return fabs(q - k) <= REL_TOL * fmax(1.0, q) ? k : ceil(q);
}

double pl_platform_round_mb(const pl_platform *p, double mb)
{
    PL_ASSERT(p && !isnan(mb));
    if (mb <= p->mem_min_mb) return p->mem_min_mb;
    double r = p->mem_min_mb + units_up(mb - p->mem_min_mb, p->mem_step_mb) * p->mem_step_mb;
    /* a max off the grid of steps is not itself a size: above the last step is too much */
    if (r > p->mem_max_mb * (1 + REL_TOL)) return -1;
    return fmin(r, p->mem_max_mb);
}

double pl_platform_billed_s(const pl_platform *p, double s)
{
    PL_ASSERT(p && s >= 0);
    if (!(s > 0)) return 0;
    return units_up(s, p->billing_s) * p->billing_s;
}

double pl_platform_vcpus(const pl_platform *p, double mb)
{
    PL_ASSERT(p && mb >= 0);
    double v = mb / p->mb_per_vcpu;
    return v > p->min_vcpus ? v : p->min_vcpus;
}

double pl_platform_usd(const pl_platform *p, double mb, double s)
{
    PL_ASSERT(p && mb >= 0);
    double gb = mb * PL_PLATFORM_MB_BYTES / PL_PLATFORM_GB_S_BYTES;
    return gb * pl_platform_billed_s(p, s) * p->usd_per_gb_s + p->usd_per_request;
}

double pl_transport_usd(const pl_transport *x, double bytes, double ops)
{
    /* the DP's running sums add and take away a slice's tensors, which may leave a rounding
     * error of a fraction of a byte below zero */
    PL_ASSERT(x && bytes > -1 && ops >= 0);
    return bytes / PL_TRANSPORT_GB_BYTES * x->usd_per_gb + ops * x->usd_per_op;
}

double pl_sl_run_usd(const pl_platform *pf, const pl_sl_plan *p, const pl_sl_run_result *r,
                     const pl_sl_opts *o)
{
    PL_ASSERT(pf && p && r && o);
    double usd = 0;
    for (int k = 0; k < p->n && k < r->n; k++)
        usd += pl_platform_usd(pf, p->slices[k].mem_mb, r->fn_s[k]);
    return usd +
           pl_transport_usd(pl_sl_transport(pf, o), r->bytes_through_store, r->ops_through_store);
}
