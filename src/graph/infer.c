/* infer.c: pl_graph_infer: walks each graph in topological order, asks the op's rule for its
 * outputs, merges them into the tensors (a shape the file declared always wins) and annotates
 * every op with its class, FLOPs and bytes moved (docs/shapes.md). */
#include "infer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* Opset assumed when the file does not say (task graphs, hand-built graphs): the newest
 * the rules know, whose forms (axes as inputs, ...) are also what readers accept. */
#define IR_DEFAULT_OPSET 18
/* Subgraphs nested deeper than this are refused (the reader refuses them too). */
#define IR_MAX_DEPTH 64

/* ---- rule lookup ---- */

static void add_rules(ir_root *R, const ir_rule *rows, int n)
{
    R->rules = pl_realloc(R->rules, (R->n_rules + n) * sizeof *R->rules);
    for (int j = 0; j < n; j++) {
        const ir_rule *r = &rows[j];
        pl_strmap *m = r->domain ? &R->rules_ms : &R->rules_onnx;
        pl_strmap_put(m, r->type, R->n_rules);
        R->rules[R->n_rules++] = r;
    }
}

static void root_init(ir_root *R, const pl_graph *g, pl_err *err)
{
    memset(R, 0, sizeof *R);
    pl_strmap_init(&R->rules_onnx);
    pl_strmap_init(&R->rules_ms);
    pl_strmap_init(&R->unknown);
    pl_strmap_init(&R->checks);
    for (int j = 0; j < ir_n_checks; j++)
        pl_strmap_put(&R->checks, ir_checks[j].type, j);
    add_rules(R, ir_rules_elem, ir_n_rules_elem);
    add_rules(R, ir_rules_nn, ir_n_rules_nn);
    add_rules(R, ir_rules_shape, ir_n_rules_shape);
    add_rules(R, ir_rules_misc, ir_n_rules_misc);
    add_rules(R, ir_rules_ctrl, ir_n_rules_ctrl);
    R->opset = g->info.opset > 0 ? g->info.opset : IR_DEFAULT_OPSET;
    R->err = err;
}

static void root_free(ir_root *R)
{
    pl_strmap_free(&R->rules_onnx);
    pl_strmap_free(&R->rules_ms);
    pl_strmap_free(&R->unknown);
    pl_strmap_free(&R->checks);
    free(R->rules);
    free(R->unknown_type);
    free(R->unknown_count);
}

static const ir_rule *find_rule(const ir_root *R, const pl_op *op)
{
    const pl_strmap *m = NULL;
    if (!op->domain[0] || strcmp(op->domain, "ai.onnx") == 0)
        m = &R->rules_onnx;
    else if (strcmp(op->domain, "com.microsoft") == 0)
        m = &R->rules_ms;
    int r = m ? pl_strmap_get(m, op->type) : -1;
    return r >= 0 ? R->rules[r] : NULL;
}

/* Counts ops without a rule per type; one warning per type is given at the end. */
static void count_unknown(ir_root *R, const pl_op *op)
{
    int u = pl_strmap_get(&R->unknown, op->type);
    if (u < 0) {
        u = R->n_unknown++;
        pl_grow((void **)&R->unknown_type, &R->cap_unknown, u, sizeof *R->unknown_type);
        R->unknown_count = pl_realloc(R->unknown_count, R->cap_unknown * sizeof(int));
        R->unknown_type[u] = op->type;
        R->unknown_count[u] = 0;
        pl_strmap_put(&R->unknown, op->type, u);
    }
    R->unknown_count[u]++;
}

/* ---- merging a rule's output into the tensor ---- */

static void warn_conflict(ictx *c, const pl_tensor *t, const ir_out *o)
{
    char a[256], b[256];
    pl_graph_warn(c->g,
                  "op '%s' (%s): output '%s' is declared %s but inferred %s; keeping the "
                  "declared shape",
                  c->op->name, c->op->type, t->name, ir_fmt_shape(t->dims, t->rank, a, sizeof a),
                  ir_fmt_shape(o->s.d, o->s.rank, b, sizeof b));
}

/* Fills the unknown dimensions of t from o; returns whether anything changed. A known
 * dimension that differs is a conflict: the file's stays. */
static bool merge_dims(pl_tensor *t, const ir_out *o, bool *conflict)
{
    bool changed = false;
    for (int d = 0; d < t->rank; d++) {
        if (o->s.d[d] < 0) continue;
        if (t->dims[d] < 0) {
            t->dims[d] = o->s.d[d];
            changed = true;
        } else if (t->dims[d] != o->s.d[d]) {
            *conflict = true;
        }
    }
    return changed;
}

static void merge_vals(ictx *c, int ti, const ir_out *o)
{
    pl_tensor *t = &c->g->tensors[ti];
    int64_t numel = pl_tensor_numel(t);
    if (o->v.n < 0 || (numel >= 0 && numel != o->v.n)) return;
    ir_store_vals(c->G, ti, &o->v);
    if (!ir_vals_known(&o->v) || t->ivals || t->fvals) return;
    if (ir_is_float(t->dtype))
        pl_tensor_set_fvals(t, o->v.f, o->v.n);
    else if (t->dtype != PL_DT_STRING)
        pl_tensor_set_ivals(t, o->v.i, o->v.n);
}

/* pl_tensor_set_shape frees the old dims, so they are copied out first. */
static void reset_shape(pl_tensor *t, int dtype)
{
    int64_t d[IR_MAXRANK];
    int rank = t->rank <= IR_MAXRANK ? t->rank : -1;
    for (int j = 0; j < rank; j++)
        d[j] = t->dims[j];
    pl_tensor_set_shape(t, dtype, rank, d);
}

static void merge_out(ictx *c, int k)
{
    const ir_out *o = &c->out[k];
    int ti = c->op->outputs[k];
    pl_tensor *t = &c->g->tensors[ti];
    int dtype = t->dtype ? t->dtype : o->dtype;
    bool conflict = false, changed = dtype != t->dtype;
    if (o->s.rank >= 0 && (t->rank < 0 || t->rank > IR_MAXRANK)) {
        pl_tensor_set_shape(t, dtype, o->s.rank, o->s.d);
        changed = false;
    } else if (o->s.rank >= 0 && t->rank != o->s.rank) {
        conflict = true;
    } else if (o->s.rank >= 0) {
        changed |= merge_dims(t, o, &conflict);
    }
    if (changed) reset_shape(t, dtype);
    if (conflict) warn_conflict(c, t, o);
    merge_vals(c, ti, o);
}

/* ---- cost ---- */

/* Bytes of the op's distinct tensors (a tensor read twice is moved once); the stamp makes
 * that O(1) per tensor. Implicit outer-scope inputs are left to the body's ops. */
static double op_bytes(ictx *c, bool *unknown)
{
    double sum = 0;
    int stamp = c->opi + 1;
    for (int k = 0; k < c->n_in + c->op->n_outputs; k++) {
        int ti = k < c->n_in ? c->op->inputs[k] : c->op->outputs[k - c->n_in];
        if (ti < 0 || c->G->stamp[ti] == stamp) continue;
        c->G->stamp[ti] = stamp;
        const pl_tensor *t = &c->g->tensors[ti];
        if (t->bytes < 0)
            *unknown = true;
        else
            sum += (double)t->bytes;
    }
    return sum;
}

/* Bytes of graph tensor `ti`, -1 when it is absent or its size unknown. */
static double tensor_bytes(const ictx *c, int ti)
{
    return ti >= 0 && c->g->tensors[ti].bytes >= 0 ? (double)c->g->tensors[ti].bytes : -1;
}

/* The bytes rules (infer_internal.h). onnxruntime's Gather/Slice kernels read only the rows
 * or the slice they copy, which is the output's size, so a Gather of 128 rows of a 94 MB
 * embedding table moves 2 x 393 KB, not 94 MB; Shape and Size read only the input's dims;
 * Reshape, Squeeze, Unsqueeze, Flatten and Identity return a view of their input (the
 * kernel's output aliases it: no element is copied). */
double ir_bytes_view(const ictx *c)
{
    return c->op->n_outputs < 1 ? -1 : 0;
}

double ir_bytes_dims(const ictx *c)
{
    return c->op->n_outputs < 1 ? -1 : tensor_bytes(c, c->op->outputs[0]);
}

/* The data read (as much as is written) and written, plus the small index inputs: Gather's
 * indices, Slice's starts/ends/axes/steps. A tensor read twice is moved once: op_bytes has
 * already stamped the op's tensors with opi + 1, so this count marks them with -(opi + 1),
 * which no other op uses either. */
double ir_bytes_partial(const ictx *c)
{
    const pl_op *op = c->op;
    double out = op->n_outputs == 1 ? tensor_bytes(c, op->outputs[0]) : -1;
    if (out < 0) return -1;
    int mark = -(c->opi + 1);
    if (c->n_in > 0 && op->inputs[0] >= 0) c->G->stamp[op->inputs[0]] = mark;
    double sum = 2 * out;
    for (int k = 1; k < c->n_in; k++) {
        int ti = op->inputs[k];
        if (ti < 0 || c->G->stamp[ti] == mark) continue;
        c->G->stamp[ti] = mark;
        double b = tensor_bytes(c, ti);
        if (b < 0) return -1;
        sum += b;
    }
    return sum;
}

/* Unknown op types: one FLOP per output element, or per input element when an output's
 * size is not known (docs/shapes.md). */
static double default_flops(const ictx *c)
{
    double out = 0, in = 0;
    bool outs_known = c->op->n_outputs > 0;
    for (int k = 0; k < c->op->n_outputs; k++) {
        int ti = c->op->outputs[k];
        int64_t n = ti >= 0 ? pl_tensor_numel(&c->g->tensors[ti]) : 0;
        if (n < 0)
            outs_known = false;
        else
            out += (double)n;
    }
    if (outs_known) return out;
    for (int k = 0; k < c->n_in; k++)
        in += ir_numel_in(c, k);
    return in;
}

static void annotate(ictx *c)
{
    pl_op *op = c->op;
    if (op->flags & PL_OP_COST_GIVEN) return;
    bool unknown = false;
    op->flags &= ~(unsigned)(PL_OP_UNKNOWN_TYPE | PL_OP_SHAPE_UNKNOWN);
    /* op_bytes always runs: it also tells whether a size is unknown */
    op->bytes_moved = op_bytes(c, &unknown);
    op->bytes_reread = op->reread_tensor_bytes = 0; /* a bytes rule may set them (by_rnn) */
    double own = c->rule && c->rule->bytes ? c->rule->bytes(c) : -1;
    if (own >= 0) op->bytes_moved = own;
    if (c->rule) {
        op->cls = c->rule->cls;
        op->flops = c->rule->flops ? c->rule->flops(c) : 0;
    } else {
        op->cls = PL_CLASS_UNKNOWN;
        op->flags |= PL_OP_UNKNOWN_TYPE;
        op->flops = default_flops(c) + (c->has_body ? c->body_flops : 0);
        count_unknown(c->R, op);
    }
    if (c->has_body) {
        op->bytes_moved += c->body_bytes;
        unknown |= c->body_shape_unknown;
    }
    if (unknown) op->flags |= PL_OP_SHAPE_UNKNOWN;
}

/* ---- the walk ---- */

static ir_out *scratch(ir_graph *G, int n)
{
    if (n > G->cap_out) {
        G->out = pl_realloc(G->out, n * sizeof *G->out);
        G->cap_out = n;
    }
    for (int k = 0; k < n; k++) {
        G->out[k].set = false;
        G->out[k].dtype = PL_DT_UNDEFINED;
        G->out[k].s.rank = -1;
        G->out[k].v.n = -1;
    }
    return G->out;
}

/* The op's spec rules (ops_check.c), for graphs read from ONNX; a broken one fails the
 * whole inference. */
static bool op_valid(ictx *c)
{
    const pl_op *op = c->op;
    bool onnx = !op->domain[0] || !strcmp(op->domain, "ai.onnx");
    int k = c->R->check && onnx ? pl_strmap_get(&c->R->checks, op->type) : -1;
    if (k < 0 || ir_checks[k].fn(c) == 0) return true;
    c->R->failed = c->R->invalid_op = true;
    return false;
}

static void infer_op(ir_root *R, ir_graph *G, int i)
{
    pl_op *op = &G->g->ops[i];
    ictx c = {.R = R, .G = G, .g = G->g, .op = op, .opi = i};
    c.n_in = op->n_inputs - op->n_implicit;
    if (c.n_in < 0) c.n_in = 0;
    if (!op_valid(&c)) return;
    c.rule = find_rule(R, op);
    bool too_many = op->n_outputs > IR_MAX_OUTPUTS;
    c.out = scratch(G, too_many ? 0 : op->n_outputs);
    if (!too_many && c.rule && c.rule->shape)
        c.rule->shape(&c);
    else if (!too_many && !c.rule && op->n_subgraphs)
        ir_infer_bodies(&c); /* bodies' costs */
    for (int k = 0; k < op->n_outputs && !too_many; k++)
        if (op->outputs[k] >= 0 && c.out[k].set) merge_out(&c, k);
    annotate(&c);
    /* a Loop's body times its trip count, nested: the product can leave the doubles, and an
     * infinite cost would price the op as unable to run anywhere */
    if (!isfinite(op->flops) || !isfinite(op->bytes_moved)) {
        pl_err_set(R->err,
                   "node %d '%s' (%s): its %s exceed the range of a double (the trip "
                   "counts of nested loops multiply)",
                   i, op->name, op->type, isfinite(op->flops) ? "bytes moved" : "FLOPs");
        R->failed = R->invalid_op = true;
    }
}

/* An outer-scope tensor of a subgraph takes what the enclosing scopes know about the tensor
 * of the same name. Symbols name tensors of one graph, so they become anonymous here. */
static void copy_outer(ir_graph *G, int t)
{
    pl_tensor *dst = &G->g->tensors[t];
    for (ir_graph *U = G->up; U; U = U->up) {
        int s = pl_graph_find_tensor(U->g, dst->name);
        if (s < 0) continue;
        const pl_tensor *src = &U->g->tensors[s];
        bool dst_known = pl_tensor_numel(dst) >= 0 || (dst->rank >= 0 && src->rank < 0);
        if (!dst_known && src->rank >= 0)
            pl_tensor_set_shape(dst, src->dtype, src->rank, src->dims);
        if (!dst->dtype) reset_shape(dst, src->dtype);
        const ir_vals *v = ir_tensor_vals(U, s);
        if (!v) return;
        ir_vals w = *v;
        for (int j = 0; j < w.n; j++)
            if (w.sym[j]) w.sym[j] = IR_SYM_ANON;
        ir_store_vals(G, t, &w);
        return;
    }
}

int ir_infer_graph(ir_root *R, ir_graph *up, pl_graph *g, pl_err *err)
{
    if (g->n_ops && !g->topo)
        return pl_err_set(err, "%s: shape inference needs a finalized graph",
                          g->path ? g->path : g->name);
    ir_graph G = {.g = g, .up = up};
    G.vals = pl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *G.vals);
    G.vals_tried = pl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *G.vals_tried);
    G.stamp = pl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *G.stamp);
    for (int t = 0; up && t < g->n_tensors; t++)
        if (g->tensors[t].flags & PL_TENSOR_OUTER) copy_outer(&G, t);
    for (int j = 0; j < g->n_ops && !R->failed; j++)
        infer_op(R, &G, g->topo[j]);
    for (int t = 0; t < g->n_tensors; t++)
        free(G.vals[t]);
    free(G.vals), free(G.vals_tried), free(G.stamp), free(G.out);
    return R->failed ? -1 : 0;
}

int ir_infer_subgraph(ictx *c, pl_graph *sub)
{
    ir_root *R = c->R;
    if (R->failed) return -1;
    if (R->depth >= IR_MAX_DEPTH) {
        R->failed = true;
        return pl_err_set(R->err, "op '%s' (%s): subgraphs nested more than %d deep", c->op->name,
                          c->op->type, IR_MAX_DEPTH);
    }
    R->depth++;
    int rc = ir_infer_graph(R, c->G, sub, R->err);
    R->depth--;
    /* a broken spec rule names its node; the ops enclosing it are named on the way out */
    if (rc < 0 && (!R->failed || R->invalid_op)) {
        R->failed = true;
        pl_err_prefix(R->err, "node %d '%s' (%s)", c->opi, c->op->name, c->op->type);
    }
    return rc;
}

static void warn_unknown_types(ir_root *R, pl_graph *g)
{
    for (int u = 0; u < R->n_unknown; u++)
        pl_graph_warn(g,
                      "op type '%s' has no shape or cost rule: %d op%s get%s the default cost "
                      "(one FLOP per output element) and keep only the shapes the file declares",
                      R->unknown_type[u], R->unknown_count[u], R->unknown_count[u] == 1 ? "" : "s",
                      R->unknown_count[u] == 1 ? "s" : "");
}

static int infer_root(pl_graph *g, bool check, pl_err *err)
{
    PL_ASSERT(g && g->topo); /* finalized */
    ir_root R;
    root_init(&R, g, err);
    R.check = check;
    int rc = ir_infer_graph(&R, NULL, g, err);
    if (rc == 0) warn_unknown_types(&R, g);
    root_free(&R);
    return rc;
}

int pl_graph_infer(pl_graph *g, pl_err *err)
{
    return infer_root(g, false, err);
}

int ir_infer_onnx(pl_graph *g, pl_err *err)
{
    return infer_root(g, true, err);
}
