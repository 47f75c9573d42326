/* load.c: the placer-catalog/1 reader (docs/catalogs.md).
 *
 * Every configuration is read completely or the whole file is refused: a search over a
 * catalogue that silently lost a row would pick among the wrong machines. A message names the
 * file, the configuration (its name once read) and the JSON path of the field:
 * `aws.json: config "p3.8xlarge": $.configs[4].gpu.model: unknown GPU model "V100-SXM3"`. */
#include "catalog_internal.h"
#include "placer/json.h"

#include <ctype.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPUS_MAX 64    /* per configuration: clouds rent at most 16 per VM */
#define CORES_MAX 4096 /* CPU cores or vCPUs */

static const char *const catalog_fields[] = {"format", "name",    "description",
                                             "source", "configs", NULL};
static const char *const config_fields[] = {
    "name",         "description",  "provider", "region", "price_usd_per_hour",
    "price_date",   "price_source", "retired",  "cpu",    "gpu",
    "interconnect", "host_link",    "cluster",  NULL};

/* ---- small checks ---- */

static int fail_at(const pl_json *obj, const char *field, pl_err *err, const char *msg,
                   const char *arg)
{
    pl_json at = field ? pl_json_at(obj, field) : *obj;
    return pl_json_fail(&at, err, msg, arg);
}

/* YYYY, YYYY-MM or YYYY-MM-DD. */
static bool is_date(const char *s, size_t len)
{
    static const char shape[] = "dddd-dd-dd";
    if (len != 4 && len != 7 && len != 10) return false;
    for (size_t i = 0; i < len; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != '-') return false;
    return true;
}

/* A date, or an ISO 8601 interval of two ("2023/2025-06") when the source only bounds when
 * the price held. */
static bool is_date_or_interval(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash) return is_date(s, strlen(s));
    return is_date(s, (size_t)(slash - s)) && is_date(slash + 1, strlen(slash + 1));
}

static int read_text(const pl_json *o, const char *field, bool required, char **out, pl_err *err)
{
    const char *s = "";
    int rc = required ? pl_json_string(o, field, &s, err) : pl_json_opt_string(o, field, &s, err);
    if (rc < 0) return -1;
    if (required && !*s) return fail_at(o, field, err, "%s must not be empty", field);
    *out = pl_strdup(s);
    return 0;
}

/* ---- models ---- */

/* Refuses `model`, unknown among the table's rows of `kind`, with the cluster reader's
 * suggestions (the closest rows by name or alias, or all of them). */
static int unknown_model(const pl_json *o, pl_dev_kind kind, const char *model, pl_err *err)
{
    char hint[700];
    pl_gpu_spec_suggest(model, (int)kind, hint, sizeof hint);
    pl_json at = pl_json_at(o, "model");
    return pl_json_fail(&at, err, "unknown %s model \"%s\"; %s", pl_dev_kind_name(kind), model,
                        hint);
}

/* The table row of a "model" field, which must be of `kind`. */
static int read_model(const pl_json *o, pl_dev_kind kind, const pl_gpu_spec **out, pl_err *err)
{
    const char *model;
    if (pl_json_string(o, "model", &model, err) < 0) return -1;
    const pl_gpu_spec *s = pl_gpu_spec_find(model);
    if (s && s->kind == kind) return *out = s, 0;
    if (!s) return unknown_model(o, kind, model, err);
    pl_json at = pl_json_at(o, "model");
    return pl_json_fail(&at, err, "\"%s\" is a %s, not a %s", model, pl_dev_kind_name(s->kind),
                        pl_dev_kind_name(kind));
}

/* "cpu": {"model": "Xeon-E5-2690-v4", "cores": 14}; cores default to the row's. */
static int read_cpu(const pl_json *cfg, pl_vm_config *v, pl_err *err)
{
    static const char *const fields[] = {"model", "cores", "description", NULL};
    pl_json o;
    const pl_gpu_spec *s;
    int64_t cores;
    if (pl_json_object(cfg, "cpu", &o, err) < 0 || pl_json_check_fields(&o, fields, err) < 0 ||
        read_model(&o, PL_DEV_CPU, &s, err) < 0)
        return -1;
    cores = s->cores;
    if (pl_json_opt_int(&o, "cores", &cores, err) < 0) return -1;
    if (cores < 1 || cores > CORES_MAX) {
        pl_json at = pl_json_at(&o, "cores");
        return pl_json_fail(&at, err, "%lld cores is outside 1..%d", (long long)cores, CORES_MAX);
    }
    v->cpu_model = pl_strdup(s->model);
    v->cpu_cores = (int)cores;
    return 0;
}

/* "gpu": {"model": "V100-SXM2-16GB", "count": 4}; absent: a CPU-only configuration. */
static int read_gpu(const pl_json *cfg, pl_vm_config *v, pl_err *err)
{
    static const char *const fields[] = {"model", "count", "description", NULL};
    pl_json o;
    const pl_gpu_spec *s;
    int64_t count;
    int rc = pl_json_opt_object(cfg, "gpu", &o, err);
    if (rc <= 0) return v->gpu_model = pl_strdup(""), rc;
    if (pl_json_check_fields(&o, fields, err) < 0 || read_model(&o, PL_DEV_GPU, &s, err) < 0 ||
        pl_json_int(&o, "count", &count, err) < 0)
        return -1;
    if (count < 0 || count > GPUS_MAX) {
        pl_json at = pl_json_at(&o, "count");
        return pl_json_fail(&at, err, "a GPU count of %lld is outside 0..%d", (long long)count,
                            GPUS_MAX);
    }
    v->gpu_model = pl_strdup(s->model);
    v->gpu_count = (int)count;
    return 0;
}

/* {"bandwidth_Bps": "25 GB/s", "latency_s": "5 us"}: read and checked as a cluster file's
 * link. */
static int read_link_object(const pl_json *o, cat_link *l, pl_err *err)
{
    static const char *const fields[] = {"bandwidth_Bps", "latency_s", "description", NULL};
    if (pl_json_check_fields(o, fields, err) < 0) return -1;
    return pl_cluster_read_link_figures(o, &l->bw_Bps, &l->lat_s, err);
}

/* "interconnect": a name or a link object; sets the GPU-GPU link and the default host link.
 * Required when the configuration has a "gpu". */
static int read_interconnect(const pl_json *cfg, cat_link *gg, cat_link *host, pl_err *err)
{
    pl_json o = pl_json_at(cfg, "interconnect");
    cat_named_link("pcie3", gg, host);
    if (!pl_json_has(cfg, "interconnect")) {
        if (!pl_json_has(cfg, "gpu")) return 0;
        return pl_json_fail(cfg, err,
                            "the field \"interconnect\" is missing (one of %s, or "
                            "{\"bandwidth_Bps\": ..., \"latency_s\": ...})",
                            cat_link_names());
    }
    if (json_is_object(o.v)) return read_link_object(&o, gg, err);
    const char *name;
    if (pl_json_string(&o, NULL, &name, err) < 0) return -1;
    if (cat_named_link(name, gg, host) == 0) return 0;
    return pl_json_fail(&o, err,
                        "unknown interconnect \"%s\"; expected one of %s, or "
                        "{\"bandwidth_Bps\": ..., \"latency_s\": ...}",
                        name, cat_link_names());
}

/* "host_link": "pcie3" | "pcie4" | a link object; overrides the interconnect's default. */
static int read_host_link(const pl_json *cfg, cat_link *host, pl_err *err)
{
    pl_json o = pl_json_at(cfg, "host_link");
    if (!pl_json_has(cfg, "host_link")) return 0;
    if (json_is_object(o.v)) return read_link_object(&o, host, err);
    const char *name;
    if (pl_json_string(&o, NULL, &name, err) < 0) return -1;
    if (cat_named_host_link(name, host) == 0) return 0;
    return pl_json_fail(&o, err,
                        "unknown host link \"%s\"; expected \"pcie3\", \"pcie4\" or "
                        "{\"bandwidth_Bps\": ..., \"latency_s\": ...}",
                        name);
}

/* The devices a configuration describes field by field. */
static int read_parts(const pl_json *cfg, pl_vm_config *v, pl_err *err)
{
    cat_link gg, host;
    if (read_cpu(cfg, v, err) < 0 || read_gpu(cfg, v, err) < 0 ||
        read_interconnect(cfg, &gg, &host, err) < 0 || read_host_link(cfg, &host, err) < 0)
        return -1;
    pl_json at = *cfg;
    pl_err berr = {""};
    if (!(v->cluster = cat_build(v, gg, host, &berr)))
        return pl_json_fail(&at, err, "building the cluster: %s", berr.msg);
    cat_features(v);
    return 0;
}

/* "cluster": a placer-cluster/1 object, instead of cpu/gpu/interconnect. Its CPU is the
 * io_device when it names one, else its first CPU; its GPUs are counted, and the first GPU's
 * model stands for all of them in the features. */
static int read_embedded(const pl_json *cfg, pl_vm_config *v, pl_err *err)
{
    static const char *const exclusive[] = {"cpu", "gpu", "interconnect", "host_link"};
    pl_json o;
    for (size_t i = 0; i < sizeof exclusive / sizeof exclusive[0]; i++)
        if (pl_json_has(cfg, exclusive[i]))
            return fail_at(cfg, exclusive[i], err,
                           "\"%s\" and \"cluster\" are exclusive: the cluster describes the "
                           "devices",
                           exclusive[i]);
    if (pl_json_object(cfg, "cluster", &o, err) < 0 || !(v->cluster = pl_cluster_parse(&o, err)))
        return -1;
    pl_cluster *c = v->cluster;
    for (int d = 0; d < c->n_devs && c->io_device < 0; d++)
        if (c->devs[d].kind == PL_DEV_CPU) c->io_device = d;
    if (c->io_device < 0 || c->devs[c->io_device].kind != PL_DEV_CPU)
        return pl_json_fail(&o, err, "the cluster needs a CPU device as its io_device");
    const pl_device *cpu = &c->devs[c->io_device];
    const pl_gpu_spec *s = pl_gpu_spec_find(cpu->model);
    v->cpu_model = pl_strdup(cpu->model);
    v->cpu_cores = s ? s->cores : 0;
    for (int d = 0; d < c->n_devs; d++)
        if (c->devs[d].kind == PL_DEV_GPU && v->gpu_count++ == 0)
            v->gpu_model = pl_strdup(c->devs[d].model);
    if (!v->gpu_model) v->gpu_model = pl_strdup("");
    free(c->name);
    c->name = pl_strdup(v->name);
    c->usd_per_hour = v->price_usd_per_hour;
    cat_features(v);
    return 0;
}

/* ---- one configuration ---- */

static int read_name(const pl_json *cfg, const pl_catalog *cat, pl_vm_config *v, pl_err *err)
{
    if (read_text(cfg, "name", true, &v->name, err) < 0) return -1;
    for (int j = 0; j < cat->n; j++)
        if (strcmp(cat->configs[j].name, v->name) == 0) {
            pl_json at = pl_json_at(cfg, "name");
            return pl_json_fail(&at, err,
                                "config \"%s\" is declared twice (first at "
                                "$.configs[%d])",
                                v->name, j);
        }
    return 0;
}

static int read_price(const pl_json *cfg, pl_vm_config *v, pl_err *err)
{
    double *p = &v->price_usd_per_hour;
    if (pl_json_quantity(cfg, "price_usd_per_hour", PL_UNIT_USD_PER_HOUR, p, err) < 0) return -1;
    /* unlike a cluster's optional price, a configuration's must be above 0: DBL_MIN as the
     * lower limit refuses exactly 0 ("a price of zero is not allowed") */
    if (pl_json_check_range(cfg, "price_usd_per_hour", *p, DBL_MIN, PL_USD_PER_HOUR_MAX,
                            PL_UNIT_USD_PER_HOUR, "a price", NULL, err) < 0 ||
        read_text(cfg, "price_date", true, &v->price_date, err) < 0 ||
        read_text(cfg, "price_source", true, &v->price_source, err) < 0)
        return -1;
    if (!is_date_or_interval(v->price_date))
        return fail_at(cfg, "price_date", err,
                       "\"%s\" is not a date: write YYYY, YYYY-MM or YYYY-MM-DD, or an interval "
                       "like \"2023/2025-06\"",
                       v->price_date);
    return 0;
}

static int read_config(const pl_json *cfg, const pl_catalog *cat, pl_vm_config *v, pl_err *err)
{
    if (!json_is_object(cfg->v)) {
        char got[64];
        return pl_json_fail(cfg, err, "expected a configuration object, got %s",
                            pl_json_describe(cfg->v, got, sizeof got));
    }
    /* the name first, so that every later message can name the configuration */
    if (read_name(cfg, cat, v, err) < 0 || pl_json_check_fields(cfg, config_fields, err) < 0 ||
        read_text(cfg, "provider", false, &v->provider, err) < 0 ||
        read_text(cfg, "region", false, &v->region, err) < 0 || read_price(cfg, v, err) < 0 ||
        pl_json_opt_bool(cfg, "retired", &v->retired, err) < 0)
        return -1;
    return pl_json_has(cfg, "cluster") ? read_embedded(cfg, v, err) : read_parts(cfg, v, err);
}

/* Puts `config "NAME": ` after the file in an error message, so the configuration is named
 * even when the failing field is deep inside it. */
static void name_config(pl_err *err, const char *file, const char *name)
{
    if (!err || !name) return;
    char msg[2 * PL_ERR_MAX];
    size_t lf = strlen(file);
    const char *rest = err->msg;
    if (strncmp(rest, file, lf) == 0 && strncmp(rest + lf, ": ", 2) == 0) rest += lf + 2;
    int len = snprintf(msg, sizeof msg, "%s: config \"%s\": %s", file, name, rest);
    size_t n = len < 0 ? 0 : (size_t)len < sizeof err->msg ? (size_t)len : sizeof err->msg - 1;
    memcpy(err->msg, msg, n);
    err->msg[n] = 0;
}

/* ---- the catalogue ---- */

static int read_configs(const pl_json *root, pl_catalog *cat, pl_err *err)
{
    pl_json cfgs;
    if (pl_json_array(root, "configs", &cfgs, err) < 0) return -1;
    size_t n = pl_json_len(&cfgs);
    if (n == 0) return pl_json_fail(&cfgs, err, "a catalogue needs at least one configuration");
    cat->configs = pl_calloc(n, sizeof *cat->configs);
    for (size_t i = 0; i < n; i++) {
        pl_json cfg = pl_json_index(&cfgs, i);
        pl_vm_config *v = &cat->configs[cat->n];
        if (read_config(&cfg, cat, v, err) < 0) {
            name_config(err, root->file, v->name);
            cat_free_config(v);
            return -1;
        }
        cat->n++;
    }
    return 0;
}

static pl_catalog *parse(const pl_json_doc *doc, pl_err *err)
{
    pl_json root = pl_json_root(doc);
    pl_catalog *cat = pl_calloc(1, sizeof *cat);
    const char *name = NULL;
    if (pl_json_check_format(&root, "placer-catalog/1", err) < 0 ||
        pl_json_check_fields(&root, catalog_fields, err) < 0 ||
        pl_json_opt_string(&root, "name", &name, err) < 0 || read_configs(&root, cat, err) < 0) {
        pl_catalog_free(cat);
        return NULL;
    }
    cat->name = name ? pl_strdup(name) : pl_file_stem(root.file, "catalog");
    return cat;
}

pl_catalog *pl_catalog_load_buffer(const char *buf, size_t len, const char *name, pl_err *err)
{
    pl_json_doc *doc = pl_json_parse(buf, len, name, err);
    if (!doc) return NULL;
    pl_catalog *c = parse(doc, err);
    pl_json_close(doc);
    return c;
}

pl_catalog *pl_catalog_load(const char *path, pl_err *err)
{
    size_t len;
    char *buf = pl_read_file(path, &len, err);
    if (!buf) return NULL;
    pl_catalog *c = pl_catalog_load_buffer(buf, len, path, err);
    if (c) pl_sha256_buffer(buf, len, c->sha256), c->path = pl_strdup(path);
    free(buf);
    return c;
}
