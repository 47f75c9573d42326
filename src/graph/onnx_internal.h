/* onnx_internal.h: what the ONNX reader's files share (onnx.c: files and the model,
 * onnx_graph.c: graphs, nodes and scopes, onnx_tensor.c: types, tensors and attributes). */
#ifndef PLACER_ONNX_INTERNAL_H
#define PLACER_ONNX_INTERNAL_H

#include "placer/graph.h"
#include "onnx/onnx.pb-c.h"

/* A rank above this is corrupt input, not a model: no operator set goes near it. */
#define OX_MAX_RANK 64
/* Subgraphs nested deeper than this are refused rather than recursed into. */
#define OX_MAX_DEPTH 64
/* Messages nested deeper than this are refused before protobuf-c, which recurses without a
 * limit, unpacks them: a subgraph level costs three (graph, node, attribute). */
#define OX_MAX_MSG_DEPTH (3 * OX_MAX_DEPTH + 16)
/* Integer tensors up to this many elements keep their values (ivals) for shape inference. */
#define OX_MAX_IVALS 64

/* A symbolic dimension bound by the caller ("batch=8"). */
typedef struct ox_binding {
    const char *name; /* points into the caller's option string */
    size_t len;
    int64_t value;
    bool used;
} ox_binding;

/* A graph input's dimension that a symbol names and no binding gives (--input may still give
 * it: checked once the input shapes are applied). */
typedef struct ox_unbound {
    int t, dim;
    char name[64];
} ox_unbound;
#define OX_MAX_UNBOUND 16

typedef struct ox_ctx {
    const char *file; /* for messages that need no place in the file */
    ox_binding *dims;
    int n_dims;
    ox_unbound *unbound; /* the first OX_MAX_UNBOUND of them; NULL: not kept */
    int n_unbound;
    pl_err *err;
} ox_ctx;

/* One graph being built, and the chain of graphs enclosing it (for outer-scope names). */
typedef struct ox_scope {
    pl_graph *g;
    /* Tensors [0, n_defined) are the ones this graph defines (inputs, initializers, node
     * outputs): they are declared before any node is read, so an index says it all. */
    int n_defined;
    int cur_op;        /* the op whose subgraphs are being read */
    const char *where; /* "FILE" or "FILE: op 'x' (If), subgraph 'then_branch'" */
    int depth;
    struct ox_scope *up;
} ox_scope;

/* onnx_graph.c: reads a GraphProto into s->g (not finalized; its subgraphs are). */
int ox_build_graph(ox_ctx *c, ox_scope *s, const Onnx__GraphProto *gp);

/* onnx_tensor.c */
/* Applies a ValueInfo's type (dtype and shape) to tensor t. */
int ox_apply_type(ox_ctx *c, const ox_scope *s, int t, const Onnx__TypeProto *tp);
/* Dims, dtype, payload flags and small integer values of a TensorProto, once its dtype and
 * payload are checked against the spec; `what` names it in messages ("initializer 3 'W'"). */
int ox_set_from_tensor(ox_ctx *c, const ox_scope *s, int t, const Onnx__TensorProto *tp,
                       const char *what);
int ox_set_from_sparse(ox_ctx *c, const ox_scope *s, int t, const Onnx__SparseTensorProto *sp,
                       const char *what);
/* The value of Constant node `idx` (its index in the graph), onto its output tensor t. */
int ox_set_constant(ox_ctx *c, const ox_scope *s, int t, const Onnx__NodeProto *n, size_t idx);
/* -1 with c->err set unless every elem_type in the ValueInfo's type (nested ones too) is an
 * ONNX TensorProto.DataType or left out; `what` names it ("graph input 0 'x'"). */
int ox_check_type(ox_ctx *c, const ox_scope *s, const Onnx__TypeProto *tp, const char *what);
/* The attribute's type; files from IR version 1 leave it out and set only the value. */
Onnx__AttributeProto__AttributeType ox_attr_type(const Onnx__AttributeProto *a);
/* Whether the (op_type, domain) pair is the default domain's op `type`. */
bool ox_is_onnx_op(const Onnx__NodeProto *n, const char *type);
/* "" for the default domain (also spelled "ai.onnx"). */
const char *ox_domain(const char *domain);

#endif
