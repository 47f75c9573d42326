/* inflate.c: gives a weightless ONNX file (models/README.md) payloads of the right size, so
 * that onnxruntime, which refuses tensors without data, can run it and be timed.
 *
 * Floats get small uniform values in [-0.05, 0.05): activations stay finite through deep
 * stacks of layers. Integer and bool tensors get zeros: the exporter keeps every integer
 * tensor of at most 64 elements (shapes, axes, slice bounds), so a stripped one is larger than
 * any shape could be and in the zoo is an index table (position_ids, used by Gather), for
 * which 0 is always a valid index. Values are deterministic: each tensor's generator is
 * seeded by its name, so the same source always gives the same bytes. */
#include "placer/runtime.h"
#include "placer/graph.h"

#include "onnx/onnx.pb-c.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct inflate_ctx {
    const char *file;
    pl_err *err;
    int filled; /* tensors given made-up values: none, and there is nothing to write */
} inflate_ctx;

/* Bytes per element, 0 for types we cannot make up (strings) or do not know. */
static size_t elem_size(int32_t dt)
{
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX128:
        return 16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    default:
        return 0;
    }
}

static bool has_payload(const Onnx__TensorProto *t)
{
    return t->raw_data.len || t->n_float_data || t->n_int32_data || t->n_string_data ||
           t->n_int64_data || t->n_double_data || t->n_uint64_data;
}

static uint64_t name_seed(const char *name)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = name ? name : ""; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

/* Uniform in [-0.05, 0.05). */
static double small_uniform(uint64_t *s)
{
    return (pl_rng_uniform(s) - 0.5) * 0.1;
}

/* float -> IEEE half by truncation; values here are tiny and normal or zero. */
static uint16_t to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff;
    int e = (int)exp - 127 + 15;
    if (e <= 0) return (uint16_t)sign;
    return (uint16_t)(sign | ((uint32_t)e << 10) | ((x >> 13) & 0x3ff));
}

static void fill_floats(uint8_t *p, size_t count, int32_t dt, uint64_t seed)
{
    for (size_t i = 0; i < count; i++) {
        double v = small_uniform(&seed);
        float f = (float)v;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
            memcpy(p + 4 * i, &f, 4);
        } else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
            memcpy(p + 8 * i, &v, 8);
        } else if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16) {
            uint16_t h = to_half(f);
            memcpy(p + 2 * i, &h, 2);
        } else { /* bfloat16: the upper half of the float */
            uint16_t h = (uint16_t)(bits >> 16);
            memcpy(p + 2 * i, &h, 2);
        }
    }
}

static bool is_float(int32_t dt)
{
    return dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
           dt == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
           dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
           dt == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

static int inflate_tensor(inflate_ctx *c, Onnx__TensorProto *t)
{
    const char *name = t->name ? t->name : "(unnamed)";
    if (t->n_external_data || t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return pl_err_set(c->err,
                          "%s: tensor '%s' keeps its data in an external file; inflation "
                          "needs a self-contained model (re-export without external data)",
                          c->file, name);
    size_t count = 1;
    for (size_t k = 0; k < t->n_dims; k++)
        count *= t->dims[k] > 0 ? (size_t)t->dims[k] : 0;
    if (has_payload(t) || count == 0) return 0;
    size_t es = elem_size(t->data_type);
    if (!es)
        return pl_err_set(c->err,
                          "%s: tensor '%s' has no data and a type (%d) that cannot be "
                          "filled with made-up values",
                          c->file, name, (int)t->data_type);
    uint8_t *p = pl_calloc(count, es); /* zeros: integer and bool tensors stay so */
    if (is_float(t->data_type)) fill_floats(p, count, t->data_type, name_seed(t->name));
    t->raw_data.data = p, t->raw_data.len = count * es, t->has_raw_data = 1;
    c->filled++;
    return 0;
}

static int inflate_graph(inflate_ctx *c, Onnx__GraphProto *g);

static int inflate_attr(inflate_ctx *c, Onnx__AttributeProto *a)
{
    if (a->t && inflate_tensor(c, a->t) < 0) return -1;
    for (size_t k = 0; k < a->n_tensors; k++)
        if (inflate_tensor(c, a->tensors[k]) < 0) return -1;
    if (a->g && inflate_graph(c, a->g) < 0) return -1;
    for (size_t k = 0; k < a->n_graphs; k++)
        if (inflate_graph(c, a->graphs[k]) < 0) return -1;
    if (a->sparse_tensor || a->n_sparse_tensors)
        return pl_err_set(c->err, "%s: sparse tensors are not supported by inflation", c->file);
    return 0;
}

static int inflate_graph(inflate_ctx *c, Onnx__GraphProto *g)
{
    if (g->n_sparse_initializer)
        return pl_err_set(c->err, "%s: sparse initializers are not supported by inflation",
                          c->file);
    for (size_t k = 0; k < g->n_initializer; k++)
        if (inflate_tensor(c, g->initializer[k]) < 0) return -1;
    for (size_t k = 0; k < g->n_node; k++)
        for (size_t j = 0; j < g->node[k]->n_attribute; j++)
            if (inflate_attr(c, g->node[k]->attribute[j]) < 0) return -1;
    return 0;
}

/* Streams the packed message to a file: no second in-memory copy of a large model. */
typedef struct file_buffer {
    ProtobufCBuffer base;
    FILE *f;
    bool failed;
} file_buffer;

static void file_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_buffer *fb = (file_buffer *)b;
    if (fwrite(data, 1, len, fb->f) != len) fb->failed = true;
}

/* Through pl_out (temporary + rename), so that no reader (nor a later run, after placer was
 * killed mid-write) ever sees half a file under the final name. */
static int write_model(const Onnx__ModelProto *m, const char *out, pl_err *err)
{
    pl_out o;
    if (pl_out_open(&o, out, err) < 0) return -1;
    file_buffer fb = {{NULL}, o.f, false};
    fb.base.append = file_append;
    protobuf_c_message_pack_to_buffer(&m->base, &fb.base);
    if (fb.failed) {
        pl_out_abort(&o);
        return pl_err_set(err, "%s: cannot write the inflated model", out);
    }
    return pl_out_commit(&o, err);
}

/* The entry's own SHA-256 into its sidecar, out.sha256, the same way. The sidecar comes after
 * the entry: an entry without one is rebuilt, never trusted. */
static int write_sidecar(const char *out, pl_err *err)
{
    char sha[65], side[4200], line[66];
    if (pl_sha256_file(out, sha, err) < 0) return -1;
    snprintf(side, sizeof side, "%s.sha256", out);
    snprintf(line, sizeof line, "%s\n", sha);
    return pl_out_write_file(side, line, 65, err);
}

/* Inflates the model in buf (read from src) into out. Returns 1 when it wrote out, 0 when the
 * model has no weightless tensor (nothing is written: src runs as it is), -1 on error. Frees
 * buf as soon as it is unpacked, so that a large model is not held twice. */
static int inflate_buffer(const char *src, char *buf, size_t len, const char *out, pl_err *err)
{
    Onnx__ModelProto *m = pl_onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
    free(buf);
    if (!m || !m->graph) {
        if (m) pl_onnx__model_proto__free_unpacked(m, NULL);
        return pl_err_set(err, "%s: not an ONNX model (it does not parse as a ModelProto)", src);
    }
    inflate_ctx c = {src, err, 0};
    int rc = inflate_graph(&c, m->graph);
    if (rc == 0 && c.filled) rc = write_model(m, out, err) < 0 ? -1 : 1;
    pl_onnx__model_proto__free_unpacked(m, NULL);
    return rc;
}

/* What is wrong with the cache entry `out` (NULL when it is whole: its SHA-256 is the one
 * its sidecar recorded when it was written), into why. No entry at all is not damage. */
static const char *damage(const char *out, bool *present, char *why, size_t n)
{
    char side[4200], want[80] = "", got[65];
    *present = access(out, F_OK) == 0;
    if (!*present) return NULL;
    snprintf(side, sizeof side, "%s.sha256", out);
    FILE *f = fopen(side, "r");
    bool read = f && fgets(want, sizeof want, f);
    if (f) fclose(f);
    want[strcspn(want, "\n")] = 0;
    if (!read || strlen(want) != 64)
        return snprintf(why, n, "its recorded SHA-256 (<entry>.sha256) is missing or unreadable"),
               why;
    if (pl_sha256_file(out, got, NULL) < 0) return snprintf(why, n, "it cannot be read"), why;
    if (strcmp(got, want))
        return snprintf(why, n,
                        "its SHA-256 is %.12s..., not the %.12s... recorded when it was "
                        "written",
                        got, want),
               why;
    return NULL;
}

/* The entry's name: what shapes it is the source's content (its SHA-256) and the inflation
 * itself, versioned by INFLATE_KEY: change it whenever the made-up values change. */
#define INFLATE_KEY "inflate1"

int pl_inflate_model(const char *src, const char *cache_dir, char *out, size_t n, pl_err *err)
{
    /* Read once: the same bytes give the hash that names the cache entry and, on a miss, the
     * model to inflate. */
    size_t len = 0;
    char *buf = pl_read_file(src, &len, err), sha[65], why[256];
    if (!buf) return -1;
    pl_sha256_buffer(buf, len, sha);
    int rc = pl_mkdir_p(cache_dir, err);
    int w = snprintf(out, n, "%s/%s-%s.onnx", cache_dir, sha, INFLATE_KEY);
    if (rc == 0 && (w < 0 || (size_t)w + 16 >= n)) /* room for the sidecar's name too */
        rc = pl_err_set(err, "%s: the cache path does not fit in %zu bytes", cache_dir, n);
    bool present = false;
    const char *bad = rc == 0 ? damage(out, &present, why, sizeof why) : NULL;
    if (bad) /* a library has no other channel for a warning that is not an error */
        fprintf(stderr, "warning: cache entry %s (for %s) is damaged: %s; rebuilding it\n", out,
                src, bad);
    bool cached = rc == 0 && present && !bad;
    /* Every model reaches onnxruntime through here: it must first pass the reader, which
     * refuses what the ONNX spec forbids (a Conv of stride 0 kills the worker with SIGFPE). A
     * whole cache entry was made from a source that passed it (the entry is named by the
     * source's hash), so only a miss pays for a second parse of a possibly large model. */
    if (rc == 0 && !cached) {
        pl_graph *g = pl_onnx_load_buffer(buf, len, src, NULL, err);
        if (!g) return free(buf), -1;
        pl_graph_free(g);
        rc = inflate_buffer(src, buf, len, out, err);
        if (rc == 1 && write_sidecar(out, err) < 0) rc = -1;
    } else {
        free(buf);
    }
    if (rc == 0 && !cached) { /* nothing to fill: src runs as it is */
        w = snprintf(out, n, "%s", src);
        if (w < 0 || (size_t)w >= n)
            return pl_err_set(err, "%s: the path does not fit in %zu bytes", src, n);
    }
    return rc;
}
