/* onnx_graph.c: a GraphProto into a pl_graph, subgraphs included.
 *
 * A graph is read in two passes. The first declares every name the graph defines (inputs,
 * initializers, node outputs), so that node order in the file does not matter and so that
 * a subgraph can tell, while its parent is still being read, whether a name it does not
 * define comes from an enclosing scope. The second adds the nodes. A subgraph's reference
 * to an enclosing scope becomes an OUTER tensor in it and an implicit input of the op that
 * owns it, at every level in between, so that the enclosing graphs get the edge. */
#include "onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const char *s)
{
    return s ? s : "";
}

/* ---- pass 1: what the graph defines ---- */

static int declare_weight(ox_ctx *c, ox_scope *s, const char *name, const char *kind, size_t k)
{
    if (!name || !*name) return pl_err_set(c->err, "%s: %s %zu has no name", s->where, kind, k);
    int t = pl_graph_find_tensor(s->g, name);
    if (t >= 0) pl_graph_warn(s->g, "%s: initializer '%s' is given twice", s->where, name);
    t = pl_graph_tensor(s->g, name);
    s->g->tensors[t].flags |= PL_TENSOR_WEIGHT;
    return t;
}

static int declare_initializers(ox_ctx *c, ox_scope *s, const Onnx__GraphProto *gp)
{
    char what[600];
    for (size_t k = 0; k < gp->n_initializer; k++) {
        const Onnx__TensorProto *tp = gp->initializer[k];
        int t = declare_weight(c, s, tp->name, "initializer", k);
        snprintf(what, sizeof what, "initializer %zu '%.500s'", k, str(tp->name));
        if (t < 0 || ox_set_from_tensor(c, s, t, tp, what) < 0) return -1;
    }
    for (size_t k = 0; k < gp->n_sparse_initializer; k++) {
        const Onnx__SparseTensorProto *sp = gp->sparse_initializer[k];
        const char *name = sp->values ? sp->values->name : NULL;
        int t = declare_weight(c, s, name, "sparse initializer", k);
        snprintf(what, sizeof what, "sparse initializer %zu '%.500s'", k, str(name));
        if (t < 0 || ox_set_from_sparse(c, s, t, sp, what) < 0) return -1;
    }
    return 0;
}

static int declare_inputs(ox_ctx *c, ox_scope *s, const Onnx__GraphProto *gp)
{
    for (size_t k = 0; k < gp->n_input; k++) {
        const Onnx__ValueInfoProto *vi = gp->input[k];
        if (!vi->name || !*vi->name)
            return pl_err_set(c->err, "%s: graph input %zu has no name", s->where, k);
        int t = pl_graph_tensor(s->g, vi->name);
        /* Before IR version 4 every initializer was also listed as an input: a weight. */
        if (s->g->tensors[t].flags & (PL_TENSOR_WEIGHT | PL_TENSOR_INPUT)) continue;
        pl_graph_add_input(s->g, t);
        if (ox_apply_type(c, s, t, vi->type) < 0) return -1;
    }
    return 0;
}

static int declare_node_outputs(ox_ctx *c, ox_scope *s, const Onnx__GraphProto *gp)
{
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *n = gp->node[k];
        for (size_t o = 0; o < n->n_output; o++)
            if (n->output[o] && *n->output[o]) pl_graph_tensor(s->g, n->output[o]);
        /* Constant values are weights, known before any node reads them */
        if (ox_is_onnx_op(n, "Constant") && n->n_output && n->output[0] && *n->output[0] &&
            ox_set_constant(c, s, pl_graph_find_tensor(s->g, n->output[0]), n, k) < 0)
            return -1;
    }
    return 0;
}

/* Types of tensors this graph defines; names it does not define are stale annotations. */
static int annotate(ox_ctx *c, ox_scope *s, Onnx__ValueInfoProto *const *vis, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        int t = vis[k]->name ? pl_graph_find_tensor(s->g, vis[k]->name) : -1;
        if (t < 0 || t >= s->n_defined || (s->g->tensors[t].flags & PL_TENSOR_WEIGHT)) continue;
        if (ox_apply_type(c, s, t, vis[k]->type) < 0) return -1;
    }
    return 0;
}

/* ---- outer-scope references ---- */

static void add_implicit(pl_graph *g, int op, int t)
{
    const pl_op *o = &g->ops[op];
    for (int k = o->n_inputs - o->n_implicit; k < o->n_inputs; k++)
        if (o->inputs[k] == t) return;
    pl_op_add_input(g, op, t);
    g->ops[op].n_implicit++;
}

static bool visible(const ox_scope *s, int t)
{
    return t >= 0 && (t < s->n_defined || (s->g->tensors[t].flags & PL_TENSOR_OUTER));
}

/* `name` from an enclosing scope, made visible in s: an OUTER tensor here, and an implicit
 * input of the op owning each graph on the way up. -1 when no enclosing scope defines it. */
static int resolve_outer(ox_scope *s, const char *name)
{
    ox_scope *up = s->up;
    if (!up) return -1;
    int pt = pl_graph_find_tensor(up->g, name);
    if (!visible(up, pt) && (pt = resolve_outer(up, name)) < 0) return -1;
    add_implicit(up->g, up->cur_op, pt);
    int t = pl_graph_tensor(s->g, name);
    pl_tensor *tn = &s->g->tensors[t];
    const pl_tensor *pn = &up->g->tensors[pt];
    tn->flags |= PL_TENSOR_OUTER;
    pl_tensor_set_shape(tn, pn->dtype, pn->rank, pn->dims);
    if (pn->ivals) pl_tensor_set_ivals(tn, pn->ivals, pn->n_ivals);
    return t;
}

/* The tensor a node (op >= 0) or a graph output (op < 0) reads. In the root graph an
 * unknown name is left to pl_graph_finalize, which names the reader. */
static int read_tensor(ox_ctx *c, ox_scope *s, int op, const char *name, int *out)
{
    int t = pl_graph_find_tensor(s->g, name);
    if (visible(s, t) || !s->up) {
        *out = t >= 0 ? t : pl_graph_tensor(s->g, name);
        return 0;
    }
    if ((*out = resolve_outer(s, name)) >= 0) return 0;
    if (op < 0)
        return pl_err_set(c->err,
                          "%s: graph output '%s' is not produced in this subgraph nor defined in "
                          "an enclosing scope",
                          s->where, name);
    const pl_op *o = &s->g->ops[op];
    return pl_err_set(c->err,
                      "%s: op '%s' (%s) reads tensor '%s', which is not produced in this subgraph "
                      "nor defined in an enclosing scope",
                      s->where, o->name, o->type, name);
}

/* ---- subgraphs ---- */

static char *sub_where(const ox_scope *s, int op, const char *attr)
{
    const pl_op *o = &s->g->ops[op];
    const char *fmt = "%s: op '%s' (%s), subgraph '%s'";
    int n = snprintf(NULL, 0, fmt, s->where, o->name, o->type, attr);
    char *w = pl_malloc(n + 1);
    snprintf(w, n + 1, fmt, s->where, o->name, o->type, attr);
    return w;
}

static int add_subgraph(ox_ctx *c, ox_scope *s, int op, const char *attr,
                        const Onnx__GraphProto *gp)
{
    if (s->depth >= OX_MAX_DEPTH) {
        const pl_op *o = &s->g->ops[op];
        return pl_err_set(c->err, "%s: op '%s' (%s): subgraphs are nested more than %d deep",
                          c->file, o->name, o->type, OX_MAX_DEPTH);
    }
    char *where = sub_where(s, op, attr);
    ox_scope cs = {.where = where, .depth = s->depth + 1, .up = s};
    cs.g = pl_graph_new(gp->name && *gp->name ? gp->name : attr);
    cs.g->parent = s->g; /* so that warnings raised while reading reach the root */
    s->cur_op = op;
    int rc = ox_build_graph(c, &cs, gp);
    if (rc == 0) rc = pl_graph_finalize(cs.g, where, c->err);
    if (rc == 0)
        pl_op_add_subgraph(s->g, op, attr, cs.g);
    else
        pl_graph_free(cs.g);
    free(where);
    return rc;
}

/* ---- attributes ---- */

/* The tensor carrying a TENSOR attribute's dtype, shape and small values: a Constant's own
 * output, or else a tensor of its own that no op reads ("OP::ATTR"). */
static int attr_tensor(ox_ctx *c, ox_scope *s, int op, const Onnx__AttributeProto *a, bool is_const,
                       int *out)
{
    const pl_op *o = &s->g->ops[op];
    if (is_const) {
        *out = o->n_outputs ? o->outputs[0] : -1;
        return 0;
    }
    char name[600];
    snprintf(name, sizeof name, "%.400s::%.150s", o->name, str(a->name));
    for (int k = 2; pl_graph_find_tensor(s->g, name) >= 0; k++)
        snprintf(name, sizeof name, "%.400s::%.150s#%d", o->name, str(a->name), k);
    *out = pl_graph_tensor(s->g, name);
    char what[700];
    snprintf(what, sizeof what, "node %d '%.400s' (%.100s), attribute '%.150s'", op, o->name,
             o->type, str(a->name));
    return a->t ? ox_set_from_tensor(c, s, *out, a->t, what)
                : ox_set_from_sparse(c, s, *out, a->sparse_tensor, what);
}

static int fill_attr(ox_ctx *c, ox_scope *s, int op, pl_attr *at, const Onnx__AttributeProto *a,
                     bool is_const)
{
    switch (ox_attr_type(a)) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        at->kind = PL_ATTR_FLOAT, at->f = a->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        at->kind = PL_ATTR_INT, at->i = a->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        at->kind = PL_ATTR_STRING;
        at->s = pl_strndup(a->s.data ? (const char *)a->s.data : "", a->s.len);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        at->kind = PL_ATTR_INTS, at->n = (int)a->n_ints;
        at->ints = pl_malloc(a->n_ints * sizeof *at->ints);
        for (size_t k = 0; k < a->n_ints; k++)
            at->ints[k] = a->ints[k];
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        at->kind = PL_ATTR_FLOATS, at->n = (int)a->n_floats;
        at->floats = pl_malloc(a->n_floats * sizeof *at->floats);
        for (size_t k = 0; k < a->n_floats; k++)
            at->floats[k] = a->floats[k];
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
        if (!a->t && !a->sparse_tensor) break;
        at->kind = PL_ATTR_TENSOR;
        return attr_tensor(c, s, op, a, is_const, &at->tensor);
    default:
        break;
    }
    return 0;
}

static int add_attrs(ox_ctx *c, ox_scope *s, int op, const Onnx__NodeProto *n)
{
    bool is_const = ox_is_onnx_op(n, "Constant");
    for (size_t k = 0; k < n->n_attribute; k++) {
        const Onnx__AttributeProto *a = n->attribute[k];
        const char *name = str(a->name);
        Onnx__AttributeProto__AttributeType type = ox_attr_type(a);
        if (type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH && a->g) {
            if (add_subgraph(c, s, op, name, a->g) < 0) return -1;
        } else if (type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS) {
            for (size_t j = 0; j < a->n_graphs; j++)
                if (add_subgraph(c, s, op, name, a->graphs[j]) < 0) return -1;
        } else {
            pl_attr *at = pl_op_add_attr(s->g, op, name, PL_ATTR_OTHER);
            if (fill_attr(c, s, op, at, a, is_const) < 0) return -1;
        }
    }
    return 0;
}

/* ---- pass 2: nodes and outputs ---- */

static int add_node(ox_ctx *c, ox_scope *s, const Onnx__NodeProto *n, size_t idx)
{
    if (!n->op_type || !*n->op_type)
        return pl_err_set(c->err, "%s: node %zu ('%s') has no op_type", s->where, idx,
                          str(n->name));
    int op = pl_graph_add_op(s->g, n->name, n->op_type, ox_domain(n->domain));
    for (size_t k = 0; k < n->n_input; k++) {
        int t = -1; /* "" is an omitted optional input */
        if (n->input[k] && *n->input[k] && read_tensor(c, s, op, n->input[k], &t) < 0) return -1;
        pl_op_add_input(s->g, op, t);
    }
    for (size_t k = 0; k < n->n_output; k++) {
        const char *o = n->output[k];
        pl_op_add_output(s->g, op, o && *o ? pl_graph_find_tensor(s->g, o) : -1);
    }
    return add_attrs(c, s, op, n);
}

static int add_outputs(ox_ctx *c, ox_scope *s, const Onnx__GraphProto *gp)
{
    for (size_t k = 0; k < gp->n_output; k++) {
        const Onnx__ValueInfoProto *vi = gp->output[k];
        int t;
        if (!vi->name || !*vi->name)
            return pl_err_set(c->err, "%s: graph output %zu has no name", s->where, k);
        if (read_tensor(c, s, -1, vi->name, &t) < 0) return -1;
        if (s->g->tensors[t].flags & PL_TENSOR_OUTPUT) continue;
        pl_graph_add_output(s->g, t);
        /* defined tensors got their type in pass 1 */
        if (t >= s->n_defined && ox_apply_type(c, s, t, vi->type) < 0) return -1;
    }
    return 0;
}

/* Every type the graph declares, before any is used: stale annotations too. */
static int check_types(ox_ctx *c, ox_scope *s, Onnx__ValueInfoProto *const *vis, size_t n,
                       const char *kind)
{
    char what[600];
    for (size_t k = 0; k < n; k++) {
        snprintf(what, sizeof what, "%s %zu '%.500s'", kind, k, str(vis[k]->name));
        if (ox_check_type(c, s, vis[k]->type, what) < 0) return -1;
    }
    return 0;
}

int ox_build_graph(ox_ctx *c, ox_scope *s, const Onnx__GraphProto *gp)
{
    if (check_types(c, s, gp->input, gp->n_input, "graph input") < 0 ||
        check_types(c, s, gp->output, gp->n_output, "graph output") < 0 ||
        check_types(c, s, gp->value_info, gp->n_value_info, "value_info") < 0)
        return -1;
    if (declare_initializers(c, s, gp) < 0 || declare_inputs(c, s, gp) < 0 ||
        declare_node_outputs(c, s, gp) < 0)
        return -1;
    s->n_defined = s->g->n_tensors;
    if (annotate(c, s, gp->value_info, gp->n_value_info) < 0 ||
        annotate(c, s, gp->output, gp->n_output) < 0)
        return -1;
    for (size_t k = 0; k < gp->n_node; k++)
        if (add_node(c, s, gp->node[k], k) < 0) return -1;
    return add_outputs(c, s, gp);
}
