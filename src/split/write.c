/* write.c: one ONNX ModelProto per stage, and manifest.json (docs/split.md).
 *
 * The source model is unpacked once and each stage's model is assembled from pointers into it
 * (nodes, initializers, value infos, opsets): nothing is copied, so a full model costs its
 * unpacked size once plus one packed stage at a time. Only the value infos of tensors the
 * source does not describe are built here, from the graph's inferred dtype and shape, and
 * copies of the source's where the graph knows more (a dim bound by --dim, a missing dtype).
 *
 * Every stage input and output must carry a type onnxruntime can load, and every tensor sent
 * between stages one that onnxruntime-node (placer run) can pass: this is checked for the
 * whole split before anything is written, and a split that cannot run is refused naming the
 * tensor (check_types). */
#include "placer/json.h"
#include "placer/split.h"
#include "onnx/onnx.pb-c.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>

/* A built value info and what it owns. */
typedef struct vinfo {
    Onnx__ValueInfoProto vi;
    Onnx__TypeProto type;
    Onnx__TypeProto__Tensor tensor;
    Onnx__TensorShapeProto shape;
    Onnx__TensorShapeProto__Dimension *dims, **dimp;
    char **params;
    int rank;
} vinfo;

typedef struct wctx {
    const pl_graph *g;
    const pl_stages *s;
    Onnx__ModelProto *m;
    pl_strmap vi_by_name; /* source inputs, outputs and value infos */
    pl_strmap init_by_name, sparse_by_name;
    Onnx__ValueInfoProto **src_vi;
    int n_src_vi;
    vinfo **built; /* per tensor, built on first use */
} wctx;

/* v's shape from g's tensor t, whose rank is known: each unknown dim a dim_param of its own. */
static void fill_shape(vinfo *v, const pl_tensor *t)
{
    v->shape = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
    v->rank = t->rank;
    v->tensor.shape = &v->shape;
    v->dims = pl_calloc(t->rank ? t->rank : 1, sizeof *v->dims);
    v->dimp = pl_calloc(t->rank ? t->rank : 1, sizeof *v->dimp);
    v->params = pl_calloc(t->rank ? t->rank : 1, sizeof *v->params);
    for (int k = 0; k < t->rank; k++) {
        Onnx__TensorShapeProto__Dimension *d = &v->dims[k];
        *d = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
        if (t->dims[k] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = t->dims[k];
        } else { /* one name per unknown dim: equal names would claim equal sizes */
            size_t n = strlen(t->name) + 32;
            v->params[k] = pl_malloc(n);
            snprintf(v->params[k], n, "%s_dim%d", t->name, k);
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = v->params[k];
        }
        v->dimp[k] = d;
    }
    v->shape.n_dim = (size_t)t->rank;
    v->shape.dim = v->dimp;
}

static bool rank_known(const pl_tensor *t)
{
    return t->rank >= 0 && !(t->flags & PL_TENSOR_BYTES_ONLY);
}

static vinfo *build_vi(const pl_tensor *t)
{
    vinfo *v = pl_calloc(1, sizeof *v);
    v->vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
    v->type = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
    v->tensor = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
    v->vi.name = t->name;
    v->vi.type = &v->type;
    v->type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    v->type.tensor_type = &v->tensor;
    v->tensor.has_elem_type = t->dtype != PL_DT_UNDEFINED;
    v->tensor.elem_type = t->dtype;
    if (rank_known(t)) fill_shape(v, t); /* rank unknown: no shape */
    return v;
}

static void free_vi(vinfo *v)
{
    if (!v) return;
    for (int k = 0; k < v->rank; k++)
        free(v->params[k]);
    free(v->params), free(v->dims), free(v->dimp), free(v);
}

/* Whether dim k of a source shape is symbolic (or unset) where g knows its size. */
static bool bindable(const Onnx__TensorShapeProto__Dimension *d, const pl_tensor *t, int k)
{
    return d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && t->dims[k] >= 0;
}

/* Whether the source's tensor type says less than g knows: a dim that --dim or --input bound
 * (the source keeps "batch"), no dtype where g inferred one, or no shape where g knows the
 * rank (onnx.checker wants a shape on every graph input and output). */
static bool knows_more(const Onnx__TypeProto__Tensor *tt, const pl_tensor *t)
{
    if ((!tt->has_elem_type || tt->elem_type == PL_DT_UNDEFINED) && t->dtype != PL_DT_UNDEFINED)
        return true;
    if (!tt->shape) return rank_known(t);
    if (t->rank != (int)tt->shape->n_dim || !rank_known(t)) return false;
    for (int k = 0; k < t->rank; k++)
        if (bindable(tt->shape->dim[k], t, k)) return true;
    return false;
}

/* A copy of the source's value info src (name, doc string, denotations, other dims as they
 * are) with what g knows filled in (its dtype, its shape when src has none, bound dims): the
 * stages of a split made with --dim batch=2 declare 2 where the source says "batch", as the
 * tensors they exchange do (build_vi), so a stage's graph inputs and the tensors another stage
 * sends it agree (docs/split.md). */
static vinfo *bound_vi(const Onnx__ValueInfoProto *src, const pl_tensor *t)
{
    vinfo *v = pl_calloc(1, sizeof *v);
    v->vi = *src;
    v->type = *src->type;
    v->tensor = *src->type->tensor_type;
    v->vi.type = &v->type;
    v->type.tensor_type = &v->tensor;
    if (!v->tensor.has_elem_type || v->tensor.elem_type == PL_DT_UNDEFINED)
        v->tensor.has_elem_type = t->dtype != PL_DT_UNDEFINED, v->tensor.elem_type = t->dtype;
    const Onnx__TensorShapeProto *sh = v->tensor.shape;
    if (!sh && rank_known(t)) fill_shape(v, t);
    if (!sh || t->rank != (int)sh->n_dim || !rank_known(t)) return v;
    v->shape = *sh;
    v->tensor.shape = &v->shape;
    size_t n = sh->n_dim ? sh->n_dim : 1;
    v->dims = pl_calloc(n, sizeof *v->dims);
    v->dimp = pl_calloc(n, sizeof *v->dimp);
    for (int k = 0; k < t->rank; k++) {
        v->dims[k] = *sh->dim[k];
        if (bindable(sh->dim[k], t, k)) {
            v->dims[k].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            v->dims[k].dim_value = t->dims[k];
        }
        v->dimp[k] = &v->dims[k];
    }
    v->shape.dim = v->dimp;
    return v;
}

/* The source's description of tensor t when it has a typed one (completed from g when g knows
 * more), else one built from g. */
static Onnx__ValueInfoProto *value_info(wctx *w, int t)
{
    int k = pl_strmap_get(&w->vi_by_name, w->g->tensors[t].name);
    const Onnx__ValueInfoProto *src = k >= 0 ? w->src_vi[k] : NULL;
    if (src && src->type) {
        const Onnx__TypeProto *tp = src->type;
        if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
            !knows_more(tp->tensor_type, &w->g->tensors[t]))
            return w->src_vi[k];
        if (!w->built[t]) w->built[t] = bound_vi(src, &w->g->tensors[t]);
        return &w->built[t]->vi;
    }
    if (!w->built[t]) w->built[t] = build_vi(&w->g->tensors[t]);
    return &w->built[t]->vi;
}

/* Whether the source gives tensor t a type (its value_info(), maybe completed from g, is
 * then the source's). */
static bool described(const wctx *w, int t)
{
    int k = pl_strmap_get(&w->vi_by_name, w->g->tensors[t].name);
    return k >= 0 && w->src_vi[k]->type;
}

static void index_vis(wctx *w, Onnx__ValueInfoProto **v, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (!v[k]->name || pl_strmap_get(&w->vi_by_name, v[k]->name) >= 0) continue;
        w->src_vi = pl_realloc(w->src_vi, (size_t)(w->n_src_vi + 1) * sizeof *w->src_vi);
        w->src_vi[w->n_src_vi] = v[k];
        pl_strmap_put(&w->vi_by_name, v[k]->name, w->n_src_vi++);
    }
}

static int wctx_init(wctx *w, const char *path, const pl_graph *g, const pl_stages *s, pl_err *err)
{
    memset(w, 0, sizeof *w);
    w->g = g, w->s = s;
    size_t len;
    char *buf = pl_read_file(path, &len, err);
    if (!buf) return -1;
    w->m = pl_onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
    free(buf); /* protobuf-c copied what it needs */
    const Onnx__GraphProto *gp = w->m ? w->m->graph : NULL;
    if (!gp) return pl_err_set(err, "%s: not an ONNX model (protobuf parse failed)", path);
    if (gp->n_node != (size_t)g->n_ops)
        return pl_err_set(err, "%s: has %zu nodes, the model split has %d: not the same model",
                          path, gp->n_node, g->n_ops);
    for (int k = 0; k < g->n_ops; k++)
        if (!gp->node[k]->op_type || strcmp(gp->node[k]->op_type, g->ops[k].type))
            return pl_err_set(err, "%s: node %d is not a %s: not the same model", path, k,
                              g->ops[k].type);
    pl_strmap_init(&w->vi_by_name), pl_strmap_init(&w->init_by_name);
    pl_strmap_init(&w->sparse_by_name);
    index_vis(w, gp->input, gp->n_input);
    index_vis(w, gp->output, gp->n_output);
    index_vis(w, gp->value_info, gp->n_value_info);
    for (size_t k = 0; k < gp->n_initializer; k++)
        if (gp->initializer[k]->name)
            pl_strmap_put(&w->init_by_name, gp->initializer[k]->name, (int)k);
    for (size_t k = 0; k < gp->n_sparse_initializer; k++) {
        const Onnx__TensorProto *v = gp->sparse_initializer[k]->values;
        if (v && v->name) pl_strmap_put(&w->sparse_by_name, v->name, (int)k);
    }
    w->built = pl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *w->built);
    return 0;
}

static void wctx_free(wctx *w)
{
    if (w->m) pl_onnx__model_proto__free_unpacked(w->m, NULL);
    for (int t = 0; w->built && t < w->g->n_tensors; t++)
        free_vi(w->built[t]);
    free(w->built), free(w->src_vi);
    pl_strmap_free(&w->vi_by_name), pl_strmap_free(&w->init_by_name);
    pl_strmap_free(&w->sparse_by_name);
}

/* ---- one stage ---- */

typedef struct parts {
    Onnx__NodeProto **node;
    Onnx__TensorProto **init;
    Onnx__SparseTensorProto **sparse;
    Onnx__ValueInfoProto **in, **out;
    size_t n_node, n_init, n_sparse, n_in, n_out;
} parts;

static int by_topo_pos(const void *a, const void *b, const pl_graph *g)
{
    return g->topo_pos[*(const int *)a] - g->topo_pos[*(const int *)b];
}

/* Owned ops and copied Constants, merged in topological order. */
static void stage_nodes(const wctx *w, const pl_stage *st, parts *p)
{
    const Onnx__GraphProto *gp = w->m->graph;
    int i = 0, j = 0;
    p->node = pl_malloc((size_t)(st->n_ops + st->n_consts + 1) * sizeof *p->node);
    while (i < st->n_ops || j < st->n_consts) {
        bool own = j == st->n_consts ||
                   (i < st->n_ops && by_topo_pos(&st->ops[i], &st->consts[j], w->g) < 0);
        p->node[p->n_node++] = gp->node[own ? st->ops[i++] : st->consts[j++]];
    }
}

static void stage_weights(const wctx *w, const pl_stage *st, parts *p)
{
    const Onnx__GraphProto *gp = w->m->graph;
    size_t n = (size_t)st->n_weights + 1;
    p->init = pl_malloc(n * sizeof *p->init);
    p->sparse = pl_malloc(n * sizeof *p->sparse);
    for (int k = 0; k < st->n_weights; k++) {
        const char *name = w->g->tensors[st->weights[k]].name;
        int d = pl_strmap_get(&w->init_by_name, name), sp = pl_strmap_get(&w->sparse_by_name, name);
        if (d >= 0) p->init[p->n_init++] = gp->initializer[d];
        if (sp >= 0) p->sparse[p->n_sparse++] = gp->sparse_initializer[sp];
    }
}

static void stage_io(wctx *w, const pl_stage *st, parts *p)
{
    const Onnx__GraphProto *gp = w->m->graph;
    p->in = pl_malloc((size_t)(st->n_inputs + st->n_weights + 1) * sizeof *p->in);
    p->out = pl_malloc((size_t)(st->n_outputs + 1) * sizeof *p->out);
    for (int k = 0; k < st->n_inputs; k++)
        p->in[p->n_in++] = value_info(w, st->inputs[k]);
    /* a weight the source also lists as an input (IR < 4 requires it) stays an input */
    for (size_t k = 0; k < gp->n_input; k++)
        for (int j = 0; gp->input[k]->name && j < st->n_weights; j++)
            if (!strcmp(gp->input[k]->name, w->g->tensors[st->weights[j]].name))
                p->in[p->n_in++] = gp->input[k];
    for (int k = 0; k < st->n_outputs; k++)
        p->out[p->n_out++] = value_info(w, st->outputs[k]);
}

/* ---- what a stage may read and make ---- */

/* The element types onnxruntime-node 1.22 has tensors for (float32 to uint64, with string and
 * float16 as Uint16Array): a model input or output of any other type fails to load there
 * (bfloat16, the float8 and 4-bit types: "Unsupported data type: 16"; complex: not registered),
 * so placer run could not pass such a tensor from one stage to the next. */
static bool ort_passes(int dt)
{
    return dt >= PL_DT_FLOAT && dt <= PL_DT_UINT64;
}

/* What a value that is not a tensor is ("a sequence"), or NULL for a tensor: from the type the
 * source declares, else from its maker (the sequence ops have no tensor type in placer's
 * graph, so their outputs otherwise look like tensors of unknown type). */
static const char *non_tensor(const pl_graph *g, int t, const Onnx__TypeProto *tp)
{
    switch (tp ? tp->value_case : ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        return "a sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        return "a map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        return "an optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        return "a sparse tensor";
    default:
        break;
    }
    static const char *const seq[] = {"SplitToSequence", "SequenceConstruct", "SequenceEmpty",
                                      "SequenceInsert", "SequenceErase"};
    int p = g->tensors[t].producer;
    if (p < 0 || g->ops[p].domain[0]) return NULL;
    for (size_t k = 0; k < sizeof seq / sizeof *seq; k++)
        if (!strcmp(g->ops[p].type, seq[k])) return "a sequence";
    return strcmp(g->ops[p].type, "Optional") ? NULL : "an optional";
}

/* "Attention of domain com.microsoft", "Cast": op o's type for a message. */
static const char *op_type_words(const pl_op *op, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", op->type, op->domain[0] ? " of domain " : "", op->domain);
    return buf;
}

static const char *dev_name(const pl_stages *s, const char *const *dev_names, int j, char *buf,
                            size_t n)
{
    if (dev_names) return dev_names[s->st[j].dev];
    snprintf(buf, n, "dev%d", s->st[j].dev);
    return buf;
}

typedef enum { FITS, UNTYPED, NOT_PASSED } verdict;

/* Why tensor t, typed tp as a stage would declare it, cannot be there (into why): UNTYPED when
 * no stage file could declare it, NOT_PASSED when it is `sent` from one stage to another and
 * onnxruntime-node could not pass it; FITS otherwise. */
static verdict why_not(const wctx *w, int t, const Onnx__TypeProto *tp, bool sent, char *why,
                       size_t n)
{
    const pl_graph *g = w->g;
    int p = g->tensors[t].producer;
    char op[256] = "";
    if (p >= 0) op_type_words(&g->ops[p], op, sizeof op);
    const char *kind = non_tensor(g, t, tp);
    if (kind && sent) {
        snprintf(why, n, "it is %s (made by %s), and onnxruntime-node passes only tensors", kind,
                 op);
        return NOT_PASSED;
    }
    if (kind && tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return FITS; /* the source's own non-tensor input or output, as the source has it */
    if (kind) {
        snprintf(why, n, "it is %s (made by %s) and the model declares no type for it", kind, op);
        return UNTYPED;
    }
    const Onnx__TypeProto__Tensor *tt = tp ? tp->tensor_type : NULL;
    int dt = tt && tt->has_elem_type ? tt->elem_type : PL_DT_UNDEFINED;
    if (dt == PL_DT_UNDEFINED) {
        bool no_rule = p >= 0 && (g->ops[p].flags & PL_OP_UNKNOWN_TYPE);
        snprintf(why, n, "its element type is unknown: the model declares none%s%s%s",
                 p < 0 ? "" : " and placer ",
                 p < 0     ? ""
                 : no_rule ? "has no type rule for "
                           : "could not infer it from ",
                 p < 0 ? "" : op);
        return UNTYPED;
    }
    if (!sent || ort_passes(dt)) return FITS;
    snprintf(why, n, "it is %s, which onnxruntime-node does not support%s", pl_dtype_name(dt),
             dt == PL_DT_BFLOAT16 ? " (it has no bfloat16 tensors)" : "");
    return NOT_PASSED;
}

/* Tensor t from stage `from` to stage `to` (the first other stage reading it): -1 for a graph
 * input (from) or an output no other stage reads (to). Refused, naming the tensor, when a stage
 * file could not declare it or, sent between stages, placer run could not pass it. */
static int check_io(wctx *w, const char *const *dev_names, int from, int t, int to, pl_err *err)
{
    const pl_graph *g = w->g;
    bool sent = from >= 0 && to >= 0;
    const Onnx__ValueInfoProto *vi = value_info(w, t);
    if (!sent && described(w, t)) return 0; /* as valid as the source itself */
    char why[1024], a[32], b[32];
    verdict v = why_not(w, t, vi->type, sent, why, sizeof why);
    if (v == FITS) return 0;
    const char *name = g->tensors[t].name;
    if (!sent) {
        int j = from >= 0 ? from : to;
        return pl_err_set(err,
                          "stage_%02d (%s): its %s '%s' cannot be declared: %s; declare its "
                          "type in the model",
                          j, dev_name(w->s, dev_names, j, a, sizeof a),
                          from >= 0 ? "output" : "input", name, why);
    }
    return pl_err_set(err,
                      "tensor '%s' cannot go from stage_%02d (%s) to stage_%02d (%s): %s, so %s; "
                      "keep '%s' and the ops reading '%s' on one device%s",
                      name, from, dev_name(w->s, dev_names, from, a, sizeof a), to,
                      dev_name(w->s, dev_names, to, b, sizeof b), why,
                      v == UNTYPED ? "no stage file can declare it"
                                   : "placer run cannot pass it between stages",
                      g->ops[g->tensors[t].producer].name, name,
                      v == UNTYPED ? ", or declare its type in the model (value_info)" : "");
}

/* Every stage's inputs and outputs, before anything is written: a split that onnxruntime
 * would refuse to load or run is refused here instead, exit status 2, rather than written and
 * found out by placer run. */
static int check_types(wctx *w, const char *const *dev_names, pl_err *err)
{
    const pl_stages *s = w->s;
    int *to = pl_malloc((size_t)(s->n ? s->n : 1) * sizeof *to), rc = 0;
    for (int j = 0; rc == 0 && j < s->n; j++) {
        const pl_stage *st = &s->st[j];
        for (int k = 0; rc == 0 && k < st->n_inputs; k++) /* a sent one fails at its maker */
            if (s->maker[st->inputs[k]] < 0) rc = check_io(w, dev_names, -1, st->inputs[k], j, err);
        for (int k = 0; rc == 0 && k < st->n_outputs; k++) {
            int t = st->outputs[k], n = pl_split_readers(w->g, s, t, to);
            rc = check_io(w, dev_names, j, t, n ? to[0] : -1, err);
        }
    }
    free(to);
    return rc;
}

/* The packed model to path, and its SHA-256 into sha (the manifest's check of the file). */
static int write_file(const char *path, const Onnx__ModelProto *m, char sha[65], pl_err *err)
{
    size_t n = pl_onnx__model_proto__get_packed_size(m);
    uint8_t *buf = pl_malloc(n ? n : 1);
    pl_onnx__model_proto__pack(m, buf);
    pl_sha256_buffer(buf, n, sha);
    int rc = pl_out_write_file(path, buf, n, err);
    free(buf);
    return rc;
}

static int write_stage(wctx *w, int j, const char *path, char sha[65], pl_err *err)
{
    const pl_stage *st = &w->s->st[j];
    parts p = {0};
    stage_nodes(w, st, &p);
    stage_weights(w, st, &p);
    stage_io(w, st, &p);
    char name[32];
    snprintf(name, sizeof name, "stage_%02d", j);
    Onnx__GraphProto gp = *w->m->graph; /* keeps doc_string and unknown fields */
    gp.name = name;
    gp.n_node = p.n_node, gp.node = p.node;
    gp.n_initializer = p.n_init, gp.initializer = p.init;
    gp.n_sparse_initializer = p.n_sparse, gp.sparse_initializer = p.sparse;
    gp.n_input = p.n_in, gp.input = p.in;
    gp.n_output = p.n_out, gp.output = p.out;
    gp.n_value_info = 0, gp.value_info = NULL;
    gp.n_quantization_annotation = 0, gp.quantization_annotation = NULL;
    Onnx__ModelProto m = *w->m; /* IR version, opsets, producer, functions, metadata */
    m.graph = &gp;
    m.n_training_info = 0, m.training_info = NULL;
    int rc = write_file(path, &m, sha, err);
    free(p.node), free(p.init), free(p.sparse), free(p.in), free(p.out);
    return rc;
}

/* ---- manifest.json ---- */

static json_t *stage_json(const pl_graph *g, const pl_stages *s, int j, const char *dev,
                          const char *sha)
{
    const pl_stage *st = &s->st[j];
    char name[32], file[48];
    snprintf(name, sizeof name, "stage_%02d", j);
    snprintf(file, sizeof file, "%s.onnx", name);
    json_t *in = json_array(), *out = json_array(), *consts = json_array();
    for (int k = 0; k < st->n_inputs; k++) {
        int t = st->inputs[k];
        json_t *from = s->maker[t] >= 0 ? json_integer(s->maker[t]) : json_string("graph");
        json_array_append_new(in, json_pack("{s:s, s:o, s:I}", "tensor", g->tensors[t].name,
                                            "from_stage", from, "bytes",
                                            (json_int_t)g->tensors[t].bytes));
    }
    int *to = pl_malloc((size_t)(s->n ? s->n : 1) * sizeof *to);
    for (int k = 0; k < st->n_outputs; k++) {
        int t = st->outputs[k], n = pl_split_readers(g, s, t, to);
        json_t *ts = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(ts, json_integer(to[i]));
        json_array_append_new(out, json_pack("{s:s, s:o, s:b, s:I}", "tensor", g->tensors[t].name,
                                             "to_stages", ts, "graph_output",
                                             (g->tensors[t].flags & PL_TENSOR_OUTPUT) != 0, "bytes",
                                             (json_int_t)g->tensors[t].bytes));
    }
    free(to);
    for (int k = 0; k < st->n_consts; k++)
        json_array_append_new(consts, json_string(g->ops[st->consts[k]].name));
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:o, s:o, s:o}", "name", name,
                     "file", file, "sha256", sha, "device", dev, "threads",
                     st->threads > 1 ? st->threads : 1, "ops", st->n_ops, "weights", st->n_weights,
                     "weight_bytes", (json_int_t)st->weight_bytes, "copied_weight_bytes",
                     (json_int_t)st->copied_weight_bytes, "copied_constants", consts, "inputs", in,
                     "outputs", out);
}

static int write_manifest(const char *model_path, const pl_graph *g, const pl_stages *s,
                          const char *const *dev_names, char (*shas)[65], const char *path,
                          pl_err *err)
{
    const char *sha = pl_graph_sha256(g, err);
    char sha_buf[65];
    if (!sha || !*sha) { /* a graph built in code has no path of its own */
        if (pl_sha256_file(model_path, sha_buf, err) < 0) return -1;
        sha = sha_buf;
    }
    json_t *stages = json_array();
    for (int j = 0; j < s->n; j++) {
        char dev[32];
        snprintf(dev, sizeof dev, "dev%d", s->st[j].dev);
        json_array_append_new(
            stages, stage_json(g, s, j, dev_names ? dev_names[s->st[j].dev] : dev, shas[j]));
    }
    json_t *o = json_pack("{s:s, s:{s:s, s:s}, s:s, s:o}", "format", PL_SPLIT_FORMAT, "model",
                          "path", model_path, "sha256", sha, "cut",
                          s->cut == PL_SPLIT_SCHEDULE ? "schedule" : "fewest", "stages", stages);
    int rc = pl_json_save(o, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER, err);
    json_decref(o);
    return rc;
}

/* ---- the folder, replaced whole ---- */

/* A previous split: its manifest says so. Anything else non-empty is the user's. */
static bool is_split(const char *dir)
{
    size_t n = strlen(dir) + 16;
    char *path = pl_malloc(n);
    snprintf(path, n, "%s/manifest.json", dir);
    json_t *m = json_load_file(path, 0, NULL);
    free(path);
    const char *f = json_string_value(json_object_get(m, "format"));
    bool yes = f && !strncmp(f, "placer-split/", 13);
    json_decref(m);
    return yes;
}

static bool is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool empty = d != NULL;
    while (empty && (e = readdir(d)))
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    if (d) closedir(d);
    return empty;
}

/* DIR may be replaced when it is absent, an empty folder or a previous split, so that a
 * user's folder given to -o by mistake is never deleted. Its parent must exist, as for every
 * output (docs/formats.md): a mistyped path is refused, not created. */
static int check_replaceable(const char *dir, pl_err *err)
{
    struct stat st;
    if (lstat(dir, &st) < 0)
        return errno == ENOENT ? 0 : pl_err_set(err, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return pl_err_set(err, "%s: exists and is not a folder: refusing to replace it", dir);
    if (!is_empty(dir) && !is_split(dir))
        return pl_err_set(err,
                          "%s: is not empty and is not a previous split (no manifest.json of "
                          "format placer-split): refusing to replace it; give -o a new or empty "
                          "folder, or one placer split wrote",
                          dir);
    return 0;
}

static int write_all(wctx *w, const char *model_path, const char *const *dev_names, const char *dir,
                     pl_err *err)
{
    const pl_stages *s = w->s;
    int rc = 0;
    size_t n = strlen(dir) + 32;
    char *path = pl_malloc(n), (*shas)[65] = pl_calloc((size_t)s->n + 1, sizeof *shas);
    for (int j = 0; rc == 0 && j < s->n; j++) {
        snprintf(path, n, "%s/stage_%02d.onnx", dir, j);
        rc = write_stage(w, j, path, shas[j], err);
    }
    snprintf(path, n, "%s/manifest.json", dir);
    if (rc == 0) rc = write_manifest(model_path, w->g, s, dev_names, shas, path, err);
    free(path), free(shas);
    return rc;
}

/* Everything goes into a hidden sibling folder that replaces DIR only when complete: an
 * interrupted or failed (re-)split leaves DIR as it was, never an old manifest beside new
 * stage files. */
int pl_split_write(const char *model_path, const pl_graph *g, const pl_stages *s,
                   const char *const *dev_names, const char *dir, pl_err *err)
{
    pl_outdir od;
    if (strcmp(g->info.format, "onnx"))
        return pl_err_set(err,
                          "%s is a task graph, not an ONNX model: only an ONNX model is split "
                          "into stage files (and run)",
                          model_path);
    if (check_replaceable(dir, err) < 0) return -1;
    /* the model is read and every stage's types checked before the folder is touched */
    wctx w;
    if (wctx_init(&w, model_path, g, s, err) < 0 || check_types(&w, dev_names, err) < 0 ||
        pl_outdir_open(&od, dir, err) < 0) {
        wctx_free(&w);
        return -1;
    }
    int rc = write_all(&w, model_path, dev_names, od.tmp, err);
    wctx_free(&w);
    if (rc < 0) {
        pl_err_prefix(err, "%s: not written (left as it was)", dir);
        pl_outdir_abort(&od);
        return -1;
    }
    return pl_outdir_commit(&od, err);
}
