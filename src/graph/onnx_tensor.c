/* onnx_tensor.c: ONNX types, TensorProtos and Constant values onto graph tensors. Payloads
 * are never kept: a tensor gets its dtype and dims, and small integer tensors their values,
 * which shape inference needs for Reshape, Slice, Expand and the like. */
#include "onnx_internal.h"

#include <stdio.h>
#include <string.h>

const char *ox_domain(const char *domain)
{
    if (!domain || strcmp(domain, "ai.onnx") == 0) return "";
    return domain;
}

bool ox_is_onnx_op(const Onnx__NodeProto *n, const char *type)
{
    return n->op_type && strcmp(n->op_type, type) == 0 && !*ox_domain(n->domain);
}

Onnx__AttributeProto__AttributeType ox_attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return a->type;
    if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (a->sparse_tensor) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    if (a->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    if (a->n_tensors) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
    if (a->n_graphs) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static const char *tname(const ox_scope *s, int t)
{
    return s->g->tensors[t].name;
}

static int check_rank(ox_ctx *c, const ox_scope *s, int t, size_t rank)
{
    if (rank <= OX_MAX_RANK) return 0;
    return pl_err_set(c->err, "%s: tensor '%s': rank %zu is above the limit of %d", s->where,
                      tname(s, t), rank, OX_MAX_RANK);
}

static int check_dim(ox_ctx *c, const ox_scope *s, int t, size_t k, int64_t d)
{
    if (d >= 0) return 0;
    return pl_err_set(c->err, "%s: tensor '%s': dimension %zu is negative (%lld)", s->where,
                      tname(s, t), k, (long long)d);
}

/* A tensor past this many elements (a petabyte of float32) is corrupt input, and refusing it
 * keeps every byte count, and their sums, far from int64 overflow. */
#define OX_MAX_ELEMS ((int64_t)1 << 48)

static int check_size(ox_ctx *c, const ox_scope *s, int t, const int64_t *dims, size_t rank)
{
    int64_t n = 1;
    bool big = false;
    for (size_t k = 0; k < rank; k++) {
        if (dims[k] == 0) return 0;
        if (dims[k] < 0) continue; /* unknown */
        if (n > OX_MAX_ELEMS / dims[k])
            big = true;
        else
            n *= dims[k];
    }
    if (!big) return 0;
    return pl_err_set(c->err, "%s: tensor '%s': more than 2^48 elements", s->where, tname(s, t));
}

/* ---- ValueInfo types ---- */

static int64_t symbolic_dim(ox_ctx *c, const char *param)
{
    for (int k = 0; k < c->n_dims; k++) {
        ox_binding *b = &c->dims[k];
        if (strlen(param) == b->len && memcmp(param, b->name, b->len) == 0) {
            b->used = true;
            return b->value;
        }
    }
    return PL_DIM_UNKNOWN;
}

/* Keeps dimension `dim` of tensor t, which `param` names and no binding gives, when t is a
 * graph input of the model (not a body's), for the warning that names them (onnx.c). */
static void note_unbound(ox_ctx *c, const ox_scope *s, int t, int dim, const char *param)
{
    if (!c->unbound || s->depth || !(s->g->tensors[t].flags & PL_TENSOR_INPUT) ||
        c->n_unbound == OX_MAX_UNBOUND)
        return;
    ox_unbound *u = &c->unbound[c->n_unbound++];
    u->t = t, u->dim = dim;
    snprintf(u->name, sizeof u->name, "%s", param);
}

static int shape_dims(ox_ctx *c, const ox_scope *s, int t, const Onnx__TensorShapeProto *sh,
                      int64_t *dims)
{
    if (check_rank(c, s, t, sh->n_dim) < 0) return -1;
    for (size_t k = 0; k < sh->n_dim; k++) {
        const Onnx__TensorShapeProto__Dimension *d = sh->dim[k];
        dims[k] = PL_DIM_UNKNOWN;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (check_dim(c, s, t, k, d->dim_value) < 0) return -1;
            dims[k] = d->dim_value;
        } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param) {
            dims[k] = symbolic_dim(c, d->dim_param);
            if (dims[k] == PL_DIM_UNKNOWN) note_unbound(c, s, t, (int)k, d->dim_param);
        }
    }
    return check_size(c, s, t, dims, sh->n_dim) < 0 ? -1 : (int)sh->n_dim;
}

/* Tensor and sparse-tensor types share a layout; optional(T) is T when present. Sequences
 * and maps have no tensor shape: they stay unknown. */
static bool tensor_type(const Onnx__TypeProto *tp, int *dtype, const Onnx__TensorShapeProto **sh)
{
    while (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type)
        tp = tp->optional_type->elem_type;
    if (!tp) return false;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) {
        *dtype = tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
        *sh = tp->tensor_type->shape;
        return true;
    }
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE && tp->sparse_tensor_type) {
        *dtype = tp->sparse_tensor_type->has_elem_type ? tp->sparse_tensor_type->elem_type : 0;
        *sh = tp->sparse_tensor_type->shape;
        return true;
    }
    return false;
}

static int check_elem(ox_ctx *c, const ox_scope *s, const char *what, const char *field, bool has,
                      int dt)
{
    if (!has || (dt >= 0 && dt < PL_DT_COUNT)) return 0;
    return pl_err_set(c->err,
                      "%s: %s: %s %d is not an ONNX TensorProto.DataType placer knows (1 to %d)",
                      s->where, what, field, dt, PL_DT_COUNT - 1);
}

/* UNDEFINED (0) or a missing elem_type stays an unknown dtype, as before: exporters leave
 * types out of subgraph signatures. */
int ox_check_type(ox_ctx *c, const ox_scope *s, const Onnx__TypeProto *tp, const char *what)
{
    if (!tp) return 0;
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        return !tp->tensor_type
                   ? 0
                   : check_elem(c, s, what, "elem_type", tp->tensor_type->has_elem_type,
                                tp->tensor_type->elem_type);
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        return !tp->sparse_tensor_type
                   ? 0
                   : check_elem(c, s, what, "elem_type", tp->sparse_tensor_type->has_elem_type,
                                tp->sparse_tensor_type->elem_type);
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        return !tp->sequence_type ? 0 : ox_check_type(c, s, tp->sequence_type->elem_type, what);
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        return !tp->optional_type ? 0 : ox_check_type(c, s, tp->optional_type->elem_type, what);
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        if (!tp->map_type) return 0;
        if (check_elem(c, s, what, "map key_type", tp->map_type->has_key_type,
                       tp->map_type->key_type) < 0)
            return -1;
        return ox_check_type(c, s, tp->map_type->value_type, what);
    default:
        return 0;
    }
}

int ox_apply_type(ox_ctx *c, const ox_scope *s, int t, const Onnx__TypeProto *tp)
{
    int dtype = 0;
    const Onnx__TensorShapeProto *sh = NULL;
    if (!tensor_type(tp, &dtype, &sh)) return 0;
    int64_t dims[OX_MAX_RANK];
    int rank = sh ? shape_dims(c, s, t, sh, dims) : -1;
    if (sh && rank < 0) return -1;
    pl_tensor *tn = &s->g->tensors[t];
    /* A type without a shape must not erase a shape already known from elsewhere. */
    if (rank < 0 && tn->rank >= 0 && tn->rank <= OX_MAX_RANK) {
        rank = tn->rank;
        for (int k = 0; k < rank; k++)
            dims[k] = tn->dims[k];
    }
    pl_tensor_set_shape(tn, dtype, rank, dims);
    return 0;
}

/* ---- TensorProtos ---- */

static bool is_int_dtype(int dt)
{
    switch (dt) {
    case PL_DT_UINT8:
    case PL_DT_INT8:
    case PL_DT_UINT16:
    case PL_DT_INT16:
    case PL_DT_INT32:
    case PL_DT_INT64:
    case PL_DT_UINT32:
    case PL_DT_UINT64:
        return true;
    default:
        return false;
    }
}

static int64_t read_le(const uint8_t *p, int size, bool is_signed)
{
    uint64_t u = 0;
    for (int b = 0; b < size; b++)
        u |= (uint64_t)p[b] << (8 * b);
    if (is_signed && size < 8 && (u >> (8 * size - 1)) & 1) u |= ~(uint64_t)0 << (8 * size);
    return (int64_t)u;
}

/* Fills v[0..n) from whichever field holds the values; false when they are not all there. */
static bool tensor_ints(const Onnx__TensorProto *tp, int dt, int64_t n, int64_t *v)
{
    if (tp->has_raw_data && tp->raw_data.len) {
        int size = (int)pl_dtype_size(dt);
        if (tp->raw_data.len != (size_t)(n * size)) return false;
        bool sgn = dt == PL_DT_INT8 || dt == PL_DT_INT16 || dt == PL_DT_INT32 || dt == PL_DT_INT64;
        for (int64_t k = 0; k < n; k++)
            v[k] = read_le(tp->raw_data.data + k * size, size, sgn);
        return true;
    }
    if (dt == PL_DT_INT64 && tp->n_int64_data == (size_t)n) {
        for (int64_t k = 0; k < n; k++)
            v[k] = tp->int64_data[k];
        return true;
    }
    if ((dt == PL_DT_UINT32 || dt == PL_DT_UINT64) && tp->n_uint64_data == (size_t)n) {
        for (int64_t k = 0; k < n; k++)
            v[k] = (int64_t)tp->uint64_data[k];
        return true;
    }
    if (dt != PL_DT_INT64 && dt != PL_DT_UINT32 && dt != PL_DT_UINT64 &&
        tp->n_int32_data == (size_t)n) {
        for (int64_t k = 0; k < n; k++)
            v[k] = tp->int32_data[k];
        return true;
    }
    return false;
}

/* Small float32/float64 contents (Resize scales, float constants), for shape inference. */
static bool tensor_floats(const Onnx__TensorProto *tp, int dt, int64_t n, double *v)
{
    if (dt != PL_DT_FLOAT && dt != PL_DT_DOUBLE) return false;
    size_t size = dt == PL_DT_FLOAT ? 4 : 8;
    if (tp->has_raw_data && tp->raw_data.len == (size_t)n * size) {
        for (int64_t k = 0; k < n; k++) {
            const uint8_t *p = tp->raw_data.data + k * size;
            if (size == 4) {
                uint32_t u = (uint32_t)read_le(p, 4, false);
                float f;
                memcpy(&f, &u, 4);
                v[k] = f;
            } else {
                uint64_t u = (uint64_t)read_le(p, 8, false);
                memcpy(&v[k], &u, 8);
            }
        }
        return true;
    }
    if (dt == PL_DT_FLOAT && tp->n_float_data == (size_t)n) {
        for (int64_t k = 0; k < n; k++)
            v[k] = tp->float_data[k];
        return true;
    }
    if (dt == PL_DT_DOUBLE && tp->n_double_data == (size_t)n) {
        for (int64_t k = 0; k < n; k++)
            v[k] = tp->double_data[k];
        return true;
    }
    return false;
}

static bool has_payload(const Onnx__TensorProto *tp)
{
    return (tp->has_raw_data && tp->raw_data.len) || tp->n_float_data || tp->n_int32_data ||
           tp->n_string_data || tp->n_int64_data || tp->n_double_data || tp->n_uint64_data;
}

/* ---- what the spec requires of a TensorProto's payload ---- */

/* Entries in each typed field, in the order of typed_name. */
static size_t typed_count(const Onnx__TensorProto *tp, int k)
{
    const size_t counts[] = {tp->n_float_data, tp->n_int32_data,  tp->n_string_data,
                             tp->n_int64_data, tp->n_double_data, tp->n_uint64_data};
    return counts[k];
}

static const char *const typed_name[] = {"float_data", "int32_data",  "string_data",
                                         "int64_data", "double_data", "uint64_data"};

/* The typed field (an index into typed_name) that holds values of dtype dt, as onnx.proto
 * assigns them; *per is its entries per element (complex numbers: real and imaginary). */
static int typed_field(int dt, int *per)
{
    *per = dt == PL_DT_COMPLEX64 || dt == PL_DT_COMPLEX128 ? 2 : 1;
    switch (dt) {
    case PL_DT_FLOAT:
    case PL_DT_COMPLEX64:
        return 0;
    case PL_DT_STRING:
        return 2;
    case PL_DT_INT64:
        return 3;
    case PL_DT_DOUBLE:
    case PL_DT_COMPLEX128:
        return 4;
    case PL_DT_UINT32:
    case PL_DT_UINT64:
        return 5;
    default: /* every other type, 16-bit floats and 4-bit integers as their bits */
        return 1;
    }
}

/* The bytes of raw_data n elements of dt take (4-bit types: two to a byte, rounded up). */
static int64_t raw_bytes(int dt, int64_t n)
{
    double size = pl_dtype_size(dt);
    return size < 1 ? (n + 1) / 2 : n * (int64_t)size;
}

static int check_raw(ox_ctx *c, const ox_scope *s, const char *what, const Onnx__TensorProto *tp,
                     int dt, int64_t n)
{
    for (int k = 0; k < 6; k++)
        if (typed_count(tp, k))
            return pl_err_set(c->err, "%s: %s: raw_data and %s are both given; a tensor has one",
                              s->where, what, typed_name[k]);
    if (dt == PL_DT_STRING)
        return pl_err_set(c->err, "%s: %s: a string tensor cannot use raw_data", s->where, what);
    int64_t want = raw_bytes(dt, n);
    if ((int64_t)tp->raw_data.len == want) return 0;
    return pl_err_set(c->err, "%s: %s: raw_data holds %zu bytes, but %lld elements of %s take %lld",
                      s->where, what, tp->raw_data.len, (long long)n, pl_dtype_name(dt),
                      (long long)want);
}

static int check_typed(ox_ctx *c, const ox_scope *s, const char *what, const Onnx__TensorProto *tp,
                       int dt, int64_t n)
{
    int per, f = typed_field(dt, &per);
    for (int k = 0; k < 6; k++) {
        size_t got = typed_count(tp, k);
        if (!got) continue;
        if (k != f)
            return pl_err_set(c->err, "%s: %s: a %s tensor keeps its values in %s, not in %s",
                              s->where, what, pl_dtype_name(dt), typed_name[f], typed_name[k]);
        /* 4-bit values: one per entry, or (as onnx.helper packs them) two */
        bool ok =
            (int64_t)got == n * per || (pl_dtype_size(dt) < 1 && (int64_t)got == raw_bytes(dt, n));
        if (!ok)
            return pl_err_set(c->err, "%s: %s: %s holds %zu values, but the %s tensor has %lld",
                              s->where, what, typed_name[k], got, pl_dtype_name(dt),
                              (long long)(n * per));
    }
    return 0;
}

/* The payload, if any, must be of the tensor's type and exactly as large as its dims say.
 * An empty payload is a weightless tensor (placer's own weightless files are made so), and
 * external data is not read. */
static int check_payload(ox_ctx *c, const ox_scope *s, const char *what,
                         const Onnx__TensorProto *tp, int dt, bool external)
{
    if (dt <= PL_DT_UNDEFINED || dt >= PL_DT_COUNT)
        return pl_err_set(c->err,
                          "%s: %s: data_type %d is not an ONNX TensorProto.DataType placer "
                          "knows (1 to %d)",
                          s->where, what, dt, PL_DT_COUNT - 1);
    if (external || tp->segment || !has_payload(tp)) return 0; /* a segment: part of it */
    int64_t n = 1;
    for (size_t k = 0; k < tp->n_dims; k++)
        if (tp->dims[k] < 0 || __builtin_mul_overflow(n, tp->dims[k], &n) || n > OX_MAX_ELEMS)
            return pl_err_set(c->err, "%s: %s: dims[%zu] = %lld makes no tensor size", s->where,
                              what, k, (long long)tp->dims[k]);
    if (tp->has_raw_data && tp->raw_data.len) return check_raw(c, s, what, tp, dt, n);
    return check_typed(c, s, what, tp, dt, n);
}

/* Dims from `pdims` (a TensorProto's, or a sparse tensor's dense dims), dtype and payload
 * flags from `vals`, the TensorProto holding the values; small integer values only when
 * `vals` is dense (a sparse tensor's holds the non-zero entries alone). */
static int set_tensor(ox_ctx *c, const ox_scope *s, int t, const int64_t *pdims, size_t rank,
                      const Onnx__TensorProto *vals, bool dense, const char *what)
{
    if (check_rank(c, s, t, rank) < 0) return -1;
    for (size_t k = 0; k < rank; k++)
        if (check_dim(c, s, t, k, pdims[k]) < 0) return -1;
    if (check_size(c, s, t, pdims, rank) < 0) return -1;
    pl_tensor *tn = &s->g->tensors[t];
    int dt = vals && vals->has_data_type ? vals->data_type : PL_DT_UNDEFINED;
    bool external = vals && ((vals->has_data_location &&
                              vals->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
                             vals->n_external_data);
    if (vals && check_payload(c, s, what, vals, dt, external) < 0) return -1;
    pl_tensor_set_shape(tn, dt, (int)rank, pdims);
    if (!vals) return 0;
    int64_t n = dense ? pl_tensor_numel(tn) : -1;
    if (external)
        tn->flags |= PL_TENSOR_EXTERNAL;
    else if (!has_payload(vals) && n != 0)
        tn->flags |= PL_TENSOR_NO_PAYLOAD;
    int64_t v[OX_MAX_IVALS];
    if (!external && is_int_dtype(dt) && n >= 0 && n <= OX_MAX_IVALS && tensor_ints(vals, dt, n, v))
        pl_tensor_set_ivals(tn, v, (int)n);
    double f[OX_MAX_IVALS];
    if (!external && n >= 0 && n <= OX_MAX_IVALS && tensor_floats(vals, dt, n, f))
        pl_tensor_set_fvals(tn, f, (int)n);
    return 0;
}

int ox_set_from_tensor(ox_ctx *c, const ox_scope *s, int t, const Onnx__TensorProto *tp,
                       const char *what)
{
    return set_tensor(c, s, t, tp->dims, tp->n_dims, tp, true, what);
}

int ox_set_from_sparse(ox_ctx *c, const ox_scope *s, int t, const Onnx__SparseTensorProto *sp,
                       const char *what)
{
    /* a sparse tensor without any non-zero entry may leave its values out */
    return set_tensor(c, s, t, sp->dims, sp->n_dims, sp->values, false, what);
}

/* ---- Constant ---- */

static void set_list(pl_tensor *tn, int dt, size_t n, const int64_t *ints)
{
    int64_t dim = (int64_t)n;
    pl_tensor_set_shape(tn, dt, 1, &dim);
    if (ints && n <= OX_MAX_IVALS) pl_tensor_set_ivals(tn, ints, (int)n);
}

/* One of Constant's value attributes; returns 1 when `a` was one, 0 when not. */
static int constant_attr(ox_ctx *c, const ox_scope *s, int t, const Onnx__AttributeProto *a,
                         const Onnx__NodeProto *n, size_t idx)
{
    pl_tensor *tn = &s->g->tensors[t];
    const char *nm = a->name ? a->name : "";
    char what[640];
    snprintf(what, sizeof what, "node %zu '%.400s' (Constant), attribute '%.100s'", idx,
             n->name ? n->name : "", nm);
    if (strcmp(nm, "value") == 0 && a->t)
        return ox_set_from_tensor(c, s, t, a->t, what) < 0 ? -1 : 1;
    if (strcmp(nm, "sparse_value") == 0 && a->sparse_tensor)
        return ox_set_from_sparse(c, s, t, a->sparse_tensor, what) < 0 ? -1 : 1;
    if (strcmp(nm, "value_float") == 0) {
        pl_tensor_set_shape(tn, PL_DT_FLOAT, 0, NULL);
        double f = a->f;
        pl_tensor_set_fvals(tn, &f, 1);
    } else if (strcmp(nm, "value_floats") == 0) {
        set_list(tn, PL_DT_FLOAT, a->n_floats, NULL);
        double f[OX_MAX_IVALS];
        for (size_t k = 0; k < a->n_floats && k < OX_MAX_IVALS; k++)
            f[k] = a->floats[k];
        if (a->n_floats <= OX_MAX_IVALS) pl_tensor_set_fvals(tn, f, (int)a->n_floats);
    } else if (strcmp(nm, "value_int") == 0) {
        pl_tensor_set_shape(tn, PL_DT_INT64, 0, NULL);
        pl_tensor_set_ivals(tn, &a->i, 1);
    } else if (strcmp(nm, "value_ints") == 0)
        set_list(tn, PL_DT_INT64, a->n_ints, a->ints);
    else if (strcmp(nm, "value_string") == 0)
        pl_tensor_set_shape(tn, PL_DT_STRING, 0, NULL);
    else if (strcmp(nm, "value_strings") == 0)
        set_list(tn, PL_DT_STRING, a->n_strings, NULL);
    else
        return 0;
    return 1;
}

int ox_set_constant(ox_ctx *c, const ox_scope *s, int t, const Onnx__NodeProto *n, size_t idx)
{
    s->g->tensors[t].flags |= PL_TENSOR_WEIGHT;
    for (size_t k = 0; k < n->n_attribute; k++) {
        int rc = constant_attr(c, s, t, n->attribute[k], n, idx);
        if (rc != 0) return rc < 0 ? -1 : 0;
    }
    pl_graph_warn(s->g, "%s: Constant '%s' has no value attribute; its size is unknown", s->where,
                  n->name ? n->name : "");
    return 0;
}
