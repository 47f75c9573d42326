/* model.c: the ModelProto a rewrite edits, and the edits themselves.
 *
 * The model is unpacked by protobuf-c with its default allocator (malloc), so every edit
 * allocates with malloc as well and pl_onnx__model_proto__free_unpacked frees old and new parts
 * alike. Copies go through pack and unpack: one code path, exact. */
#include "rw_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s)
{
    return pl_strdup(s ? s : "");
}

void rw_set_str(char **field, const char *s)
{
    free(*field);
    *field = dup_str(s);
}

/* Gives every top-level node a unique, non-empty name: the site's handle on it. */
static void name_nodes(Onnx__GraphProto *gp)
{
    pl_strmap seen, given; /* names kept or made so far; every name the file gives */
    pl_strmap_init(&seen), pl_strmap_init(&given);
    for (size_t i = 0; i < gp->n_node; i++)
        if (gp->node[i]->name && gp->node[i]->name[0])
            pl_strmap_put(&given, gp->node[i]->name, (int)i);
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *n = gp->node[i];
        if (n->name && n->name[0] && pl_strmap_get(&seen, n->name) < 0) {
            pl_strmap_put(&seen, n->name, (int)i);
            continue;
        }
        /* a made name must be no node's own, before or after: the graph reader would rename
         * one of the two, and a rewrite site would name a node this model does not have */
        char buf[64];
        snprintf(buf, sizeof buf, "rw_node_%zu", i);
        for (int k = 2; pl_strmap_get(&seen, buf) >= 0 || pl_strmap_get(&given, buf) >= 0; k++)
            snprintf(buf, sizeof buf, "rw_node_%zu_%d", i, k);
        rw_set_str(&n->name, buf);
        pl_strmap_put(&seen, n->name, (int)i);
    }
    pl_strmap_free(&seen), pl_strmap_free(&given);
}

static int check_external(const Onnx__ModelProto *m, const char *name, pl_err *err)
{
    for (size_t i = 0; i < m->graph->n_initializer; i++) {
        const Onnx__TensorProto *t = m->graph->initializer[i];
        if (t->n_external_data || t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
            return pl_err_set(err,
                              "%s: initializer '%s': external data is not supported by rewrites "
                              "(their new weights are computed from the data)",
                              name, t->name ? t->name : "");
    }
    return 0;
}

pl_rw_model *pl_rw_load_buffer(const void *buf, size_t len, const char *name, pl_err *err)
{
    if (!name) name = "<buffer>";
    /* the ONNX reader's checks first (nesting depth, opsets, types): nothing it refuses is
     * rewritten */
    pl_graph *g = pl_onnx_load_buffer(buf, len, name, &(pl_load_opts){.no_infer = true}, err);
    if (!g) return NULL;
    pl_graph_free(g);
    Onnx__ModelProto *m = pl_onnx__model_proto__unpack(NULL, len, buf);
    if (!m || !m->graph) {
        if (m) pl_onnx__model_proto__free_unpacked(m, NULL);
        pl_err_set(err, "%s: not an ONNX model (protobuf parse failed)", name);
        return NULL;
    }
    if (check_external(m, name, err) < 0) {
        pl_onnx__model_proto__free_unpacked(m, NULL);
        return NULL;
    }
    name_nodes(m->graph);
    pl_rw_model *rm = pl_calloc(1, sizeof *rm);
    rm->m = m;
    rm->name = pl_strdup(name);
    return rm;
}

pl_rw_model *pl_rw_load(const char *path, pl_err *err)
{
    size_t len = 0;
    char *buf = pl_read_file(path, &len, err);
    if (!buf) return NULL;
    pl_rw_model *m = pl_rw_load_buffer(buf, len, path, err);
    free(buf);
    return m;
}

void *pl_rw_pack(const pl_rw_model *m, size_t *len)
{
    *len = pl_onnx__model_proto__get_packed_size(m->m);
    uint8_t *buf = pl_malloc(*len ? *len : 1);
    pl_onnx__model_proto__pack(m->m, buf);
    return buf;
}

pl_rw_model *pl_rw_copy(const pl_rw_model *m)
{
    size_t len;
    void *buf = pl_rw_pack(m, &len);
    Onnx__ModelProto *c = pl_onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    PL_ASSERT(c); /* what pack wrote unpacks */
    if (!c) abort();
    pl_rw_model *r = pl_calloc(1, sizeof *r);
    r->m = c;
    r->name = pl_strdup(m->name);
    return r;
}

void pl_rw_free(pl_rw_model *m)
{
    if (!m) return;
    pl_onnx__model_proto__free_unpacked(m->m, NULL);
    free(m->name);
    free(m);
}

int pl_rw_save(const pl_rw_model *m, const char *path, pl_err *err)
{
    size_t len;
    void *buf = pl_rw_pack(m, &len);
    int rc = pl_out_write_file(path, buf, len, err);
    free(buf);
    return rc;
}

pl_graph *pl_rw_graph(const pl_rw_model *m, const pl_load_opts *opts, pl_err *err)
{
    size_t len;
    void *buf = pl_rw_pack(m, &len);
    pl_graph *g = pl_onnx_load_buffer(buf, len, m->name, opts, err);
    free(buf);
    return g;
}

int pl_rw_nodes(const pl_rw_model *m)
{
    return (int)m->m->graph->n_node;
}

/* ---- lookups ---- */

int rw_node_index(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_node; i++)
        if (gp->node[i]->name && !strcmp(gp->node[i]->name, name)) return (int)i;
    return -1;
}

Onnx__TensorProto *rw_init(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name && !strcmp(gp->initializer[i]->name, name))
            return gp->initializer[i];
    return NULL;
}

bool rw_is_output(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && !strcmp(gp->output[i]->name, name)) return true;
    return false;
}

static int64_t rw_numel(const Onnx__TensorProto *t)
{
    int64_t n = 1;
    for (size_t k = 0; k < t->n_dims; k++)
        n *= t->dims[k];
    return n;
}

float *rw_floats(const Onnx__TensorProto *t, int64_t *numel)
{
    int64_t n = rw_numel(t);
    *numel = n;
    if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) return NULL;
    float *v = pl_malloc((size_t)(n ? n : 1) * sizeof *v);
    if (t->raw_data.len == (size_t)n * 4 && n) {
        memcpy(v, t->raw_data.data, (size_t)n * 4); /* little-endian, as the hosts we run on */
        return v;
    }
    if (t->n_float_data == (size_t)n && n) {
        memcpy(v, t->float_data, (size_t)n * 4);
        return v;
    }
    free(v);
    return NULL; /* weightless (or a payload that does not fit: treated as none) */
}

Onnx__TensorProto *rw_add_init(rw_edit *e, const char *name, int dtype, const int64_t *dims,
                               int rank, const void *data, size_t bytes)
{
    Onnx__TensorProto *t = pl_malloc(sizeof *t);
    pl_onnx__tensor_proto__init(t);
    t->name = dup_str(name);
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = pl_malloc((size_t)(rank ? rank : 1) * sizeof *t->dims);
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    if (data) {
        t->has_raw_data = 1;
        t->raw_data.len = bytes;
        t->raw_data.data = pl_malloc(bytes ? bytes : 1);
        memcpy(t->raw_data.data, data, bytes);
    }
    Onnx__GraphProto *gp = e->gp;
    gp->initializer =
        pl_realloc(gp->initializer, (gp->n_initializer + 1) * sizeof *gp->initializer);
    gp->initializer[gp->n_initializer++] = t;
    return t;
}

/* ---- names ---- */

static bool in_list(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] && !strcmp(v[i], s)) return true;
    return false;
}

static bool vi_has(Onnx__ValueInfoProto **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (v[i]->name && !strcmp(v[i]->name, s)) return true;
    return false;
}

static bool name_used(const Onnx__GraphProto *gp, const char *s)
{
    if (rw_init(gp, s) || rw_node_index(gp, s) >= 0) return true;
    if (vi_has(gp->input, gp->n_input, s) || vi_has(gp->output, gp->n_output, s) ||
        vi_has(gp->value_info, gp->n_value_info, s))
        return true;
    for (size_t i = 0; i < gp->n_node; i++)
        if (in_list(gp->node[i]->input, gp->node[i]->n_input, s) ||
            in_list(gp->node[i]->output, gp->node[i]->n_output, s))
            return true;
    return false;
}

char *rw_fresh(rw_edit *e, const char *base)
{
    size_t n = strlen(base) + 32;
    char *s = pl_malloc(n);
    do
        snprintf(s, n, "%s_rw%d", base, e->fresh++);
    while (name_used(e->gp, s));
    return s;
}

/* ---- nodes ---- */

static char **dup_list(const char *const *v, int n)
{
    char **r = pl_malloc((size_t)(n ? n : 1) * sizeof *r);
    for (int i = 0; i < n; i++)
        r[i] = dup_str(v[i]);
    return r;
}

Onnx__NodeProto *rw_node(const char *type, const char *name, const char *const *ins, int n_in,
                         const char *const *outs, int n_out)
{
    Onnx__NodeProto *n = pl_malloc(sizeof *n);
    pl_onnx__node_proto__init(n);
    n->op_type = dup_str(type);
    n->name = dup_str(name);
    n->input = dup_list(ins, n_in);
    n->n_input = (size_t)n_in;
    n->output = dup_list(outs, n_out);
    n->n_output = (size_t)n_out;
    return n;
}

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = pl_malloc(sizeof *a);
    pl_onnx__attribute_proto__init(a);
    a->name = dup_str(name);
    a->has_type = 1;
    a->type = type;
    n->attribute = pl_realloc(n->attribute, (n->n_attribute + 1) * sizeof *n->attribute);
    n->attribute[n->n_attribute++] = a;
    return a;
}

void rw_attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void rw_attr_ints(Onnx__NodeProto *n, const char *name, const int64_t *v, int k)
{
    Onnx__AttributeProto *a = add_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = pl_malloc((size_t)(k ? k : 1) * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)k * sizeof *v);
    a->n_ints = (size_t)k;
}

void rw_insert_node(rw_edit *e, size_t pos, Onnx__NodeProto *n)
{
    Onnx__GraphProto *gp = e->gp;
    gp->node = pl_realloc(gp->node, (gp->n_node + 1) * sizeof *gp->node);
    memmove(gp->node + pos + 1, gp->node + pos, (gp->n_node - pos) * sizeof *gp->node);
    gp->node[pos] = n;
    gp->n_node++;
}

void rw_remove_node(rw_edit *e, size_t pos)
{
    Onnx__GraphProto *gp = e->gp;
    pl_onnx__node_proto__free_unpacked(gp->node[pos], NULL);
    memmove(gp->node + pos, gp->node + pos + 1, (gp->n_node - pos - 1) * sizeof *gp->node);
    gp->n_node--;
}

/* A subgraph that defines `name` itself (input, initializer or node output) shadows it. */
static bool defines(const Onnx__GraphProto *gp, const char *name)
{
    if (vi_has(gp->input, gp->n_input, name) || rw_init(gp, name)) return true;
    for (size_t i = 0; i < gp->n_node; i++)
        if (in_list(gp->node[i]->output, gp->node[i]->n_output, name)) return true;
    return false;
}

void rw_rename_uses(Onnx__GraphProto *gp, const char *from, const char *to)
{
    for (size_t i = 0; i < gp->n_node; i++) {
        Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] && !strcmp(n->input[k], from)) rw_set_str(&n->input[k], to);
        for (size_t a = 0; a < n->n_attribute; a++) {
            Onnx__AttributeProto *at = n->attribute[a];
            if (at->g && !defines(at->g, from)) rw_rename_uses(at->g, from, to);
            for (size_t k = 0; k < at->n_graphs; k++)
                if (!defines(at->graphs[k], from)) rw_rename_uses(at->graphs[k], from, to);
        }
    }
}

/* ---- pruning ---- */

void rw_mark_reads(const Onnx__GraphProto *gp, pl_strmap *read)
{
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] && n->input[k][0]) pl_strmap_put(read, n->input[k], 1);
        for (size_t a = 0; a < n->n_attribute; a++) {
            if (n->attribute[a]->g) rw_mark_reads(n->attribute[a]->g, read);
            for (size_t k = 0; k < n->attribute[a]->n_graphs; k++)
                rw_mark_reads(n->attribute[a]->graphs[k], read);
        }
    }
    for (size_t i = 0; i < gp->n_output; i++)
        pl_strmap_put(read, gp->output[i]->name, 1);
}

/* Removes entries of v[0..*n) for which keep() says no (freed with free_fn). */
#define RW_FILTER(v, n, keep, free_fn)                                                             \
    do {                                                                                           \
        size_t w_ = 0;                                                                             \
        for (size_t i_ = 0; i_ < (n); i_++) {                                                      \
            if (keep((v)[i_]))                                                                     \
                (v)[w_++] = (v)[i_];                                                               \
            else                                                                                   \
                free_fn((v)[i_], NULL);                                                            \
        }                                                                                          \
        (n) = w_;                                                                                  \
    } while (0)

void rw_prune(rw_edit *e)
{
    Onnx__GraphProto *gp = e->gp;
    pl_strmap read, produced;
    pl_strmap_init(&read);
    pl_strmap_init(&produced);
    rw_mark_reads(gp, &read);
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_output; k++)
            pl_strmap_put(&produced, gp->node[i]->output[k], 1);
            /* graph inputs that name a dropped initializer go too (IR < 4 lists initializers
             * there); the map keys point into nodes and outputs, which no filter here frees */
#define KEEP_INPUT(v) (pl_strmap_get(&read, (v)->name) >= 0 || !rw_init(gp, (v)->name))
    RW_FILTER(gp->input, gp->n_input, KEEP_INPUT, pl_onnx__value_info_proto__free_unpacked);
#define KEEP_INIT(t) (pl_strmap_get(&read, (t)->name) >= 0)
    RW_FILTER(gp->initializer, gp->n_initializer, KEEP_INIT, pl_onnx__tensor_proto__free_unpacked);
#define KEEP_VI(v) (pl_strmap_get(&produced, (v)->name) >= 0)
    RW_FILTER(gp->value_info, gp->n_value_info, KEEP_VI, pl_onnx__value_info_proto__free_unpacked);
    pl_strmap_free(&read);
    pl_strmap_free(&produced);
}
