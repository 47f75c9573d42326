/* ops_ctrl.c: If, Loop, Scan and other ops with subgraphs. The body is inferred first (its
 * inputs taken from the op's inputs where the file does not declare them), then the op's
 * outputs come from the body's, and its cost is the body's: If the costlier branch, Loop the
 * body × trip count, Scan the body × scanned length. */
#include "infer_internal.h"

#include <stdlib.h>
#include <string.h>

static pl_graph *subgraph(const ictx *c, const char *attr)
{
    for (int s = 0; s < c->op->n_subgraphs; s++)
        if (strcmp(c->op->subgraph_attr[s], attr) == 0) return c->op->subgraphs[s];
    return NULL;
}

/* Input k of the body takes dtype and shape s unless the file declared them; unknown dims
 * of a declared shape are filled when ranks agree. */
static void set_body_input(pl_graph *sub, int k, int dtype, const ir_shape *s)
{
    if (!sub || k >= sub->n_inputs) return;
    pl_tensor *t = &sub->tensors[sub->inputs[k]];
    int dt = t->dtype ? t->dtype : dtype;
    int64_t d[IR_MAXRANK];
    if (t->rank < 0 || t->rank > IR_MAXRANK) {
        pl_tensor_set_shape(t, dt, s ? s->rank : -1, s ? s->d : NULL);
        return;
    }
    for (int j = 0; j < t->rank; j++)
        d[j] = t->dims[j] < 0 && s && s->rank == t->rank ? s->d[j] : t->dims[j];
    pl_tensor_set_shape(t, dt, t->rank, d);
}

static void body_output(const pl_graph *sub, int k, ir_shape *s, int *dtype)
{
    s->rank = -1;
    *dtype = PL_DT_UNDEFINED;
    if (!sub || k >= sub->n_outputs) return;
    const pl_tensor *t = &sub->tensors[sub->outputs[k]];
    *dtype = t->dtype;
    if (t->rank < 0 || t->rank > IR_MAXRANK) return;
    s->rank = t->rank;
    for (int j = 0; j < t->rank; j++)
        s->d[j] = t->dims[j];
}

/* What two possible values of one tensor have in common. */
static void merge_shape(ir_shape *a, const ir_shape *b)
{
    if (a->rank != b->rank) {
        a->rank = -1;
        return;
    }
    for (int j = 0; j < a->rank; j++)
        if (a->d[j] != b->d[j]) a->d[j] = PL_DIM_UNKNOWN;
}

typedef struct cost {
    double flops, bytes;
    bool unknown;
} cost;

static cost body_cost(const pl_graph *sub)
{
    cost k = {0, 0, false};
    for (int i = 0; sub && i < sub->n_ops; i++) {
        k.flops += sub->ops[i].flops;
        k.bytes += sub->ops[i].bytes_moved;
        k.unknown |= (sub->ops[i].flags & (PL_OP_SHAPE_UNKNOWN | PL_OP_UNKNOWN_TYPE)) != 0;
    }
    return k;
}

static void set_body_cost(ictx *c, cost k, double times)
{
    c->has_body = true;
    c->body_flops = k.flops * times;
    c->body_bytes = k.bytes * times;
    c->body_shape_unknown = k.unknown;
}

/* A trip count or scanned length that is not known counts the body once. */
static double times_or_once(ictx *c, int64_t n, const char *what)
{
    if (n >= 0) return (double)n;
    if (!(c->op->flags & PL_OP_COST_GIVEN))
        pl_graph_warn(c->g, "op '%s' (%s): the %s is not known; its body is counted once",
                      c->op->name, c->op->type, what);
    return 1;
}

static double fl_body(const ictx *c)
{
    return c->body_flops;
}

/* ---- If ---- */

/* Contents of body output k (what the body's inference wrote back to the tensor). */
static bool body_vals(const pl_graph *sub, int k, ir_vals *v)
{
    v->n = -1;
    return sub && k < sub->n_outputs && ir_vals_of_tensor(&sub->tensors[sub->outputs[k]], v);
}

/* Output k with the contents both branches agree on (or the taken branch's). */
static void if_vals(ictx *c, int k, const pl_graph *a, const pl_graph *b)
{
    ir_out *o = ir_o(c, k);
    ir_vals *va = pl_malloc(2 * sizeof *va), *vb = va + 1;
    bool same = o && body_vals(a, k, va);
    if (same && b)
        same = body_vals(b, k, vb) && va->n == vb->n && va->isf == vb->isf &&
               memcmp(va->i, vb->i, va->n * sizeof *va->i) == 0 &&
               (!va->isf || memcmp(va->f, vb->f, va->n * sizeof *va->f) == 0);
    if (same && o->s.rank >= 0 && ir_prod(o->s.d, o->s.rank) == va->n) o->v = *va;
    free(va);
}

/* Both branches are inferred (their ops are annotated either way). A condition whose value
 * is known (from shapes: `if x.dim() == 2`) selects the branch that runs: its outputs and
 * its cost. Otherwise the outputs are what the branches have in common and the cost is the
 * costlier branch's. */
static void sh_if(ictx *c)
{
    pl_graph *then_g = subgraph(c, "then_branch"), *else_g = subgraph(c, "else_branch");
    int64_t cond;
    if ((then_g && ir_infer_subgraph(c, then_g) < 0) ||
        (else_g && ir_infer_subgraph(c, else_g) < 0))
        return;
    if (ir_in_scalar(c, 0, &cond)) { /* the other branch does not run */
        if (cond)
            else_g = NULL;
        else
            then_g = NULL;
        if (!then_g && !else_g) return;
    }
    for (int k = 0; k < c->op->n_outputs; k++) {
        ir_shape a, b;
        int dta, dtb;
        body_output(then_g, k, &a, &dta);
        body_output(else_g, k, &b, &dtb);
        if (then_g && else_g) merge_shape(&a, &b);
        ir_set(c, k, dta ? dta : dtb, then_g ? &a : &b);
        if_vals(c, k, then_g ? then_g : else_g, then_g ? else_g : NULL);
    }
    cost t = body_cost(then_g), e = body_cost(else_g);
    bool take_then = else_g == NULL ||
                     (then_g && (t.flops > e.flops || (t.flops == e.flops && t.bytes >= e.bytes)));
    set_body_cost(c, take_then ? t : e, 1);
}

/* ---- Loop ---- */

/* Inputs (M, cond, v...); body inputs (iteration, cond, v...); body outputs (cond, v...,
 * scan outputs...); outputs (v..., scan outputs with the trip count prepended). */
static void sh_loop(ictx *c)
{
    pl_graph *body = subgraph(c, "body");
    ir_shape scalar = {.rank = 0}, s;
    int n_carried = c->n_in - 2, dt;
    int64_t trip = -1;
    if (!body) return;
    set_body_input(body, 0, PL_DT_INT64, &scalar);
    set_body_input(body, 1, PL_DT_BOOL, &scalar);
    for (int j = 0; j < n_carried; j++) {
        ir_in_shape(c, 2 + j, &s);
        set_body_input(body, 2 + j, ir_in_dtype(c, 2 + j), &s); /* the first iteration's */
    }
    if (ir_infer_subgraph(c, body) < 0) return;
    if (!ir_in(c, 0) || !ir_in_scalar(c, 0, &trip) || trip == INT64_MAX) trip = -1;
    for (int k = 0; k < c->op->n_outputs; k++) {
        body_output(body, k + 1, &s, &dt);
        if (k < n_carried) {
            ir_shape init;
            ir_in_shape(c, 2 + k, &init);
            merge_shape(&s, &init); /* a carried value may change shape between iterations */
        } else if (s.rank >= 0 && s.rank < IR_MAXRANK) {
            memmove(s.d + 1, s.d, s.rank * sizeof *s.d);
            s.d[0] = trip, s.rank++;
        } else {
            s.rank = -1;
        }
        ir_set(c, k, dt || k >= n_carried ? dt : ir_in_dtype(c, 2 + k), &s);
    }
    set_body_cost(c, body_cost(body), times_or_once(c, trip, "trip count"));
    c->body_shape_unknown |= trip < 0; /* the cost is a lower estimate */
}

/* ---- Scan ---- */

typedef struct scanp {
    int n_state, n_scan, first; /* first: index of the first state input */
    bool v8;                    /* opset 8: batch dim first, scan axis 1, sequence_lens */
    int64_t seq, batch;
} scanp;

static void scan_params(ictx *c, scanp *p)
{
    ir_shape x;
    int64_t axes[IR_MAXRANK];
    p->v8 = c->R->opset < 9;
    p->first = p->v8 ? 1 : 0;
    p->n_scan = (int)pl_op_attr_int(c->op, "num_scan_inputs", 0);
    p->n_state = c->n_in - p->first - p->n_scan;
    p->seq = p->batch = -1;
    if (p->n_state < 0 || p->n_scan <= 0) return;
    int na = ir_attr_ints(c, "scan_input_axes", axes);
    if (!ir_in_shape(c, p->first + p->n_state, &x)) return;
    int a = p->v8 ? 1 : ir_axis(na > 0 ? axes[0] : 0, x.rank);
    if (a >= 0 && a < x.rank) p->seq = x.d[a];
    if (p->v8 && x.rank >= 1) p->batch = x.d[0];
}

/* Drops `drop` leading dims (opset 8) or the scan axis from an input's shape. */
static void slice_shape(ictx *c, int k, int drop, int axis, ir_shape *s)
{
    if (!ir_in_shape(c, k, s)) return;
    int a = drop ? -1 : ir_axis(axis, s->rank);
    if (drop) {
        if (s->rank < drop)
            s->rank = -1;
        else
            memmove(s->d, s->d + drop, (s->rank -= drop) * sizeof *s->d);
    } else if (a >= 0) {
        memmove(s->d + a, s->d + a + 1, (s->rank - a - 1) * sizeof *s->d);
        s->rank--;
    } else {
        s->rank = -1;
    }
}

static void scan_body_inputs(ictx *c, const scanp *p, pl_graph *body)
{
    int64_t axes[IR_MAXRANK];
    int na = ir_attr_ints(c, "scan_input_axes", axes);
    for (int j = 0; j < p->n_state + p->n_scan; j++) {
        ir_shape s;
        int k = p->first + j,
            axis = j >= p->n_state && na > j - p->n_state ? (int)axes[j - p->n_state] : 0;
        if (p->v8)
            slice_shape(c, k, j < p->n_state ? 1 : 2, 0, &s);
        else if (j < p->n_state)
            ir_in_shape(c, k, &s);
        else
            slice_shape(c, k, 0, axis, &s);
        set_body_input(body, j, ir_in_dtype(c, k), &s);
    }
}

/* Inserts the dims `lead` (n of them) at position at. */
static void insert_dims(ir_shape *s, int at, const int64_t *lead, int n)
{
    if (s->rank < 0 || s->rank + n > IR_MAXRANK || at < 0 || at > s->rank) {
        s->rank = -1;
        return;
    }
    memmove(s->d + at + n, s->d + at, (s->rank - at) * sizeof *s->d);
    memcpy(s->d + at, lead, n * sizeof *lead);
    s->rank += n;
}

static void scan_outputs(ictx *c, const scanp *p, pl_graph *body)
{
    int64_t axes[IR_MAXRANK];
    int na = ir_attr_ints(c, "scan_output_axes", axes);
    for (int k = 0; k < c->op->n_outputs; k++) {
        ir_shape s;
        int dt;
        body_output(body, k, &s, &dt);
        bool state = k < p->n_state;
        int64_t lead[2] = {p->v8 ? p->batch : p->seq, p->seq};
        int at = 0;
        if (!p->v8 && !state && na > k - p->n_state) {
            at = (int)axes[k - p->n_state];
            if (at < 0 && s.rank >= 0) at += s.rank + 1;
        }
        if (p->v8)
            insert_dims(&s, 0, lead, state ? 1 : 2);
        else if (!state)
            insert_dims(&s, at, lead, 1);
        ir_set(c, k, dt, &s);
    }
}

static void sh_scan(ictx *c)
{
    pl_graph *body = subgraph(c, "body");
    scanp p;
    if (!body) return;
    scan_params(c, &p);
    if (p.n_state >= 0 && p.n_scan > 0) scan_body_inputs(c, &p, body);
    if (ir_infer_subgraph(c, body) < 0) return;
    if (p.n_state >= 0 && p.n_scan > 0) scan_outputs(c, &p, body);
    int64_t n = p.v8 ? ir_mul(p.seq, p.batch) : p.seq;
    set_body_cost(c, body_cost(body), times_or_once(c, n, "scanned length"));
    c->body_shape_unknown |= n < 0;
}

/* ---- any other op with subgraphs (SequenceMap, unknown ops): each body once ---- */

void ir_infer_bodies(ictx *c)
{
    cost sum = {0, 0, false};
    for (int s = 0; s < c->op->n_subgraphs; s++) {
        if (ir_infer_subgraph(c, c->op->subgraphs[s]) < 0) return;
        cost k = body_cost(c->op->subgraphs[s]);
        sum.flops += k.flops, sum.bytes += k.bytes, sum.unknown |= k.unknown;
    }
    set_body_cost(c, sum, 1);
}

#define CTRL PL_CLASS_CONTROL

const ir_rule ir_rules_ctrl[] = {
    {"If", CTRL, sh_if, fl_body, 0, NULL, NULL},
    {"Loop", CTRL, sh_loop, fl_body, 0, NULL, NULL},
    {"Scan", CTRL, sh_scan, fl_body, 0, NULL, NULL},
    {"SequenceMap", CTRL, ir_infer_bodies, fl_body, 0, NULL, NULL},
};
const int ir_n_rules_ctrl = sizeof ir_rules_ctrl / sizeof *ir_rules_ctrl;
