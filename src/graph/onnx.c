/* onnx.c: the ONNX reader's entry points: the file (mapped, never read into a buffer of our
 * own), the ModelProto checks, the import info, and finalize + infer.
 *
 * Memory: protobuf-c copies every bytes field, so while the message is unpacked a model
 * costs about twice its size. The mapping is dropped right after unpacking and the message
 * right after the graph is built, so the peak stays near 2x and the graph keeps no payload. */
#include "infer_internal.h"
#include "onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Above any IR version ONNX will plausibly reach; a larger one is a stray byte string that
 * happened to parse as a protobuf. */
#define OX_MAX_IR_VERSION 1000

static int parse_bindings(ox_ctx *c, const char *file, const pl_load_opts *opts)
{
    int n = opts ? opts->n_dims : 0;
    c->dims = pl_calloc(n ? n : 1, sizeof *c->dims);
    for (int k = 0; k < n; k++) {
        const char *d = opts->dims[k] ? opts->dims[k] : "", *eq = strchr(d, '=');
        long long v = -1;
        if (!eq || eq == d || pl_parse_int(eq + 1, 0, LLONG_MAX, &v) < 0)
            return pl_err_set(c->err,
                              "%s: dimension binding '%s': expected NAME=VALUE with VALUE a "
                              "non-negative integer",
                              file, d);
        c->dims[k] = (ox_binding){d, (size_t)(eq - d), v, false};
        c->n_dims = k + 1;
    }
    return 0;
}

static void warn_unused_bindings(const ox_ctx *c, pl_graph *g)
{
    for (int k = 0; k < c->n_dims; k++)
        if (!c->dims[k].used)
            pl_graph_warn(g, "dimension '%.*s' is bound but no tensor of the model uses it",
                          (int)c->dims[k].len, c->dims[k].name);
}

/* A graph input with a dimension neither --dim nor --input gives makes every tensor computed
 * from it of unknown size, and the cost model prices an op on such tensors as moving nothing:
 * a model of symbolic batch and length came out at 0.004 ms, in silence, on every placing
 * verb. Run once the input shapes are applied (ub: what the reader noted). */
static void warn_unbound_inputs(pl_graph *g, const ox_unbound *ub, int n)
{
    char names[600] = "";
    for (int k = 0, w = 0; k < n && w < (int)sizeof names; k++) {
        bool again = false;
        for (int j = 0; j < k; j++)
            again |= !strcmp(ub[j].name, ub[k].name);
        if (again || g->tensors[ub[k].t].dims[ub[k].dim] != PL_DIM_UNKNOWN) continue;
        w += snprintf(names + w, sizeof names - w, "%s'%s'", w ? ", " : "", ub[k].name);
    }
    if (names[0])
        pl_graph_warn(
            g,
            "the model's inputs have symbolic dimensions no --dim (or --input) binds (%s): the "
            "tensors computed from them have unknown sizes, and the ops on them are "
            "priced as moving nothing (a lower estimate); give --dim NAME=VALUE for each",
            names);
}

/* The newest opset of each domain placer reads: what onnxruntime 1.22, the runtime placer
 * ships (build/npm), loads; it refuses a newer one ("under development"). The default domain's
 * 22 is ONNX 1.17's; the shape rules know every op up to it (docs/shapes.md). Debian 12's onnx
 * package stops at 17. Versions start at 1; other domains' ops are not resolved against a
 * version, so any version but a negative one is read for them. */
static const struct {
    const char *domain;
    int64_t newest;
} ox_opsets[] = {
    {"", 22}, {"ai.onnx.ml", 5}, {"ai.onnx.preview.training", 1}, {"com.microsoft", 1}};

static int check_opset(const Onnx__OperatorSetIdProto *o, size_t k, const char *file, pl_err *err)
{
    const char *dom = ox_domain(o->domain), *shown = *dom ? dom : "ai.onnx";
    if (!o->has_version) return 0; /* the reader then assumes the newest it knows */
    int64_t lowest = 0;            /* a domain placer does not resolve ops against */
    for (size_t j = 0; j < sizeof ox_opsets / sizeof *ox_opsets; j++) {
        if (strcmp(dom, ox_opsets[j].domain) != 0) continue;
        if (o->version > ox_opsets[j].newest)
            return pl_err_set(err,
                              "%s: opset_import %zu: domain '%s' version %lld is newer than %lld, "
                              "the newest placer (and its onnxruntime) reads",
                              file, k, shown, (long long)o->version,
                              (long long)ox_opsets[j].newest);
        lowest = 1;
    }
    if (o->version >= lowest) return 0;
    return pl_err_set(err, "%s: opset_import %zu: domain '%s' version %lld: versions start at 1",
                      file, k, shown, (long long)o->version);
}

static int check_model(const Onnx__ModelProto *m, const char *file, pl_err *err)
{
    if (!m->graph) return pl_err_set(err, "%s: not an ONNX model (it has no graph)", file);
    if (!m->has_ir_version && !m->n_opset_import)
        return pl_err_set(err, "%s: not an ONNX model (no ir_version and no opset_import)", file);
    if (m->has_ir_version && (m->ir_version < 1 || m->ir_version > OX_MAX_IR_VERSION))
        return pl_err_set(err, "%s: not an ONNX model (ir_version %lld)", file,
                          (long long)m->ir_version);
    for (size_t k = 0; k < m->n_opset_import; k++)
        if (check_opset(m->opset_import[k], k, file, err) < 0) return -1;
    return 0;
}

static void set_info(pl_graph *g, const Onnx__ModelProto *m)
{
    pl_import_info *in = &g->info;
    snprintf(in->format, sizeof in->format, "onnx");
    in->ir_version = m->has_ir_version ? m->ir_version : 0;
    /* files older than IR version 3 have no opset_import and mean opset 1 */
    in->opset = m->n_opset_import ? 0 : 1;
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[k];
        if (!*ox_domain(o->domain) && o->has_version) in->opset = o->version;
    }
    const char *pn = m->producer_name ? m->producer_name : "";
    const char *pv = m->producer_version ? m->producer_version : "";
    snprintf(in->producer, sizeof in->producer, "%s%s%s", pn, *pn && *pv ? " " : "", pv);
}

/* "dir/resnet50.onnx" -> "resnet50", for graphs that carry no name */
static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    return pl_strndup(b, dot && dot != b ? (size_t)(dot - b) : strlen(b));
}

static pl_graph *build_model(const Onnx__ModelProto *m, const char *file, const pl_load_opts *opts,
                             ox_unbound *ub, int *n_ub, pl_err *err)
{
    if (check_model(m, file, err) < 0) return NULL;
    ox_ctx c = {.file = file, .err = err, .unbound = ub};
    pl_graph *g = NULL;
    if (parse_bindings(&c, file, opts) == 0) {
        char *name = base_name(file);
        const char *gn = m->graph->name;
        g = pl_graph_new(gn && *gn ? gn : name);
        free(name);
        set_info(g, m);
        ox_scope s = {.g = g, .where = file};
        if (ox_build_graph(&c, &s, m->graph) < 0) {
            pl_graph_free(g);
            g = NULL;
        } else {
            warn_unused_bindings(&c, g);
        }
    }
    free(c.dims);
    *n_ub = c.n_unbound;
    return g;
}

/* ---- nesting depth, checked on the wire before protobuf-c recurses into it ---- */

static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* Skips one field's value of wire type `wt` at *p; for a length-delimited field, sets
 * *len to its length and leaves *p at its start. False when malformed. */
static bool wire_skip(const uint8_t **p, const uint8_t *end, unsigned wt, uint64_t *len)
{
    uint64_t v;
    *len = 0;
    switch (wt) {
    case 0:
        return wire_varint(p, end, &v);
    case 1:
        v = 8;
        break;
    case 5:
        v = 4;
        break;
    case 2:
        if (!wire_varint(p, end, len)) return false;
        return *len <= (uint64_t)(end - *p);
    default:
        return false; /* groups: not in ONNX, and protobuf-c refuses them */
    }
    if (v > (uint64_t)(end - *p)) return false;
    *p += v;
    return true;
}

/* The deepest message nesting in [p, end) read as message `d` at `depth`, scanning no deeper
 * than just past `limit`. Malformed data ends the scan: protobuf-c reports it. */
static int wire_depth(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                      int depth, int limit)
{
    int max = depth;
    uint64_t tag, len;
    while (max <= limit && p < end && wire_varint(&p, end, &tag) &&
           wire_skip(&p, end, tag & 7, &len)) {
        if ((tag & 7) != 2) continue;
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            int m = wire_depth(p, p + len, f->descriptor, depth + 1, limit);
            max = m > max ? m : max;
        }
        p += len;
    }
    return max;
}

/* Where [p, end), read as message `d`, first breaks the wire format: into *at the offset from
 * base of the field that breaks it, into why the reason, with the fields leading to it
 * appended to path ("graph.node"). False when the wire format holds (protobuf-c refused the
 * message for another reason: an enum, a string that is not UTF-8). */
static bool wire_fault(const uint8_t *base, const uint8_t *p, const uint8_t *end,
                       const ProtobufCMessageDescriptor *d, int depth, char *path, size_t n,
                       size_t *at, const char **why)
{
    uint64_t tag, len;
    while (p < end) {
        const uint8_t *start = p;
        if (!wire_varint(&p, end, &tag)) return *at = start - base, *why = "a tag cut short", true;
        unsigned wt = tag & 7;
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
        size_t w = strlen(path);
        snprintf(path + w, n - w, "%s%s", w ? "." : "", f ? f->name : "(unknown field)");
        if (!wire_skip(&p, end, wt, &len)) {
            *at = start - base;
            *why = wt == 2 ? "a length that runs past the end of its message (a truncated file?)"
                   : wt == 0 || wt == 1 || wt == 5 ? "a value cut short"
                                                   : "a wire type protobuf does not have";
            return true;
        }
        if (wt == 2 && f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < OX_MAX_MSG_DEPTH &&
            wire_fault(base, p, p + len, f->descriptor, depth + 1, path, n, at, why))
            return true;
        path[w] = 0;
        p += wt == 2 ? len : 0;
    }
    return false;
}

/* Why protobuf-c refused buf, as " at byte N of M, in FIELD: WHY", or "". */
static void parse_fault(const void *buf, size_t len, char *out, size_t n)
{
    char path[256] = "";
    size_t at = 0;
    const char *why = "";
    out[0] = 0;
    if (wire_fault(buf, buf, (const uint8_t *)buf + len, &pl_onnx__model_proto__descriptor, 1, path,
                   sizeof path, &at, &why))
        snprintf(out, n, " at byte %zu of %zu, in %s: %s", at, len, path[0] ? path : "the model",
                 why);
}

/* `map` is the file's mapping (dropped here), NULL for a caller's buffer. */
static pl_graph *load_message(const void *buf, size_t len, const char *file,
                              const pl_load_opts *opts, pl_err *err, void *map)
{
    if (wire_depth(buf, (const uint8_t *)buf + len, &pl_onnx__model_proto__descriptor, 1,
                   OX_MAX_MSG_DEPTH) > OX_MAX_MSG_DEPTH) {
        if (map) munmap(map, len);
        pl_err_set(err, "%s: messages are nested more than %d deep (subgraphs within subgraphs)",
                   file, OX_MAX_MSG_DEPTH);
        return NULL;
    }
    Onnx__ModelProto *m = pl_onnx__model_proto__unpack(NULL, len, buf);
    char fault[400] = "";
    if (!m) parse_fault(buf, len, fault, sizeof fault);
    if (map) munmap(map, len); /* the message holds copies of everything we need */
    if (!m) {
        pl_err_set(err, "%s: not an ONNX model (protobuf parse failed%s)", file, fault);
        return NULL;
    }
    ox_unbound ub[OX_MAX_UNBOUND];
    int n_ub = 0;
    pl_graph *g = build_model(m, file, opts, ub, &n_ub, err);
    pl_onnx__model_proto__free_unpacked(m, NULL);
    if (!g) return NULL;
    if (map) g->path = pl_strdup(file);
    int rc =
        pl_graph_finalize(g, file, err) < 0 || pl_graph_set_input_shapes(g, opts, file, err) < 0
            ? -1
            : 0;
    if (rc == 0) warn_unbound_inputs(g, ub, n_ub);
    /* inference checks each op against its spec (ops_check.c): its messages name the op */
    if (rc == 0 && !(opts && opts->no_infer) && ir_infer_onnx(g, err) < 0)
        rc = pl_err_prefix(err, "%s", file);
    if (rc < 0) {
        pl_graph_free(g);
        return NULL;
    }
    return g;
}

pl_graph *pl_onnx_load_buffer(const void *buf, size_t len, const char *name,
                              const pl_load_opts *opts, pl_err *err)
{
    if (!name) name = "<buffer>";
    if (!len) {
        pl_err_set(err, "%s: empty file", name);
        return NULL;
    }
    return load_message(buf, len, name, opts, err, NULL);
}

/* Maps the file read-only; NULL with err set on failure. */
static void *map_file(const char *path, size_t *len, pl_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        pl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    void *map = NULL;
    if (fstat(fd, &st) < 0)
        pl_err_set(err, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        pl_err_set(err, "%s: not a regular file", path);
    else if (st.st_size == 0)
        pl_err_set(err, "%s: empty file", path);
    else {
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            pl_err_set(err, "%s: cannot map: %s", path, strerror(errno));
            map = NULL;
        } else {
            *len = (size_t)st.st_size;
            madvise(map, *len, MADV_SEQUENTIAL); /* one pass, front to back */
        }
    }
    close(fd);
    return map;
}

pl_graph *pl_onnx_load(const char *path, const pl_load_opts *opts, pl_err *err)
{
    size_t len = 0;
    void *map = map_file(path, &len, err);
    if (!map) return NULL;
    return load_message(map, len, path, opts, err, map);
}
