/* infer_util.c: what every shape rule uses: reading input shapes and known contents,
 * writing output records, attributes, broadcasting and the generic FLOP rules. */
#include "infer_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ir_is_float(int dt)
{
    switch (dt) {
    case PL_DT_FLOAT:
    case PL_DT_DOUBLE:
    case PL_DT_FLOAT16:
    case PL_DT_BFLOAT16:
    case PL_DT_FLOAT8E4M3FN:
    case PL_DT_FLOAT8E4M3FNUZ:
    case PL_DT_FLOAT8E5M2:
    case PL_DT_FLOAT8E5M2FNUZ:
    case PL_DT_COMPLEX64:
    case PL_DT_COMPLEX128:
        return true;
    default:
        return false;
    }
}

/* ---- known contents ---- */

void ir_vals_none(ir_vals *v)
{
    v->n = -1;
}

bool ir_vals_known(const ir_vals *v)
{
    if (!v || v->n < 0) return false;
    for (int j = 0; j < v->n; j++)
        if (v->sym[j]) return false;
    return true;
}

/* Truncation toward zero that cannot overflow: out-of-range values are unknown. */
bool ir_f2i(double f, int64_t *i)
{
    if (!(f > -9.2e18 && f < 9.2e18)) return false;
    *i = (int64_t)f;
    return true;
}

bool ir_vals_of_tensor(const pl_tensor *t, ir_vals *v)
{
    int n = t->ivals ? t->n_ivals : t->fvals ? t->n_fvals : -1;
    int64_t numel = pl_tensor_numel(t);
    v->n = -1;
    if (n < 0 || n > IR_MAXVALS || (numel >= 0 && numel != n)) return false;
    v->n = n;
    v->isf = !t->ivals;
    for (int j = 0; j < n; j++) {
        v->sym[j] = 0;
        if (t->ivals) {
            v->i[j] = t->ivals[j];
            v->f[j] = (double)t->ivals[j];
        } else {
            v->f[j] = t->fvals[j];
            if (!ir_f2i(v->f[j], &v->i[j])) v->sym[j] = IR_SYM_ANON;
        }
    }
    return true;
}

/* Contents the file gave (ivals, fvals), checked against the tensor's size. */
static ir_vals *vals_from_file(const pl_tensor *t)
{
    ir_vals *v = pl_calloc(1, sizeof *v);
    if (ir_vals_of_tensor(t, v)) return v;
    free(v);
    return NULL;
}

const ir_vals *ir_tensor_vals(ir_graph *G, int t)
{
    if (t < 0) return NULL;
    if (!G->vals[t] && !G->vals_tried[t]) {
        G->vals_tried[t] = true;
        G->vals[t] = vals_from_file(&G->g->tensors[t]);
    }
    return G->vals[t];
}

void ir_store_vals(ir_graph *G, int t, const ir_vals *v)
{
    if (G->vals[t] || v->n < 0) return;
    G->vals[t] = pl_malloc(sizeof *v);
    memcpy(G->vals[t], v, sizeof *v);
    G->vals_tried[t] = true;
}

/* ---- inputs ---- */

const pl_tensor *ir_in(const ictx *c, int k)
{
    if (k < 0 || k >= c->n_in || c->op->inputs[k] < 0) return NULL;
    return &c->g->tensors[c->op->inputs[k]];
}

bool ir_in_shape(const ictx *c, int k, ir_shape *s)
{
    const pl_tensor *t = ir_in(c, k);
    s->rank = -1;
    if (!t || t->rank < 0 || t->rank > IR_MAXRANK) return false;
    s->rank = t->rank;
    for (int d = 0; d < t->rank; d++)
        s->d[d] = t->dims[d];
    return true;
}

int ir_in_rank(const ictx *c, int k)
{
    const pl_tensor *t = ir_in(c, k);
    return t && t->rank <= IR_MAXRANK ? t->rank : -1;
}

int ir_in_dtype(const ictx *c, int k)
{
    const pl_tensor *t = ir_in(c, k);
    return t ? t->dtype : PL_DT_UNDEFINED;
}

int64_t ir_in_numel(const ictx *c, int k)
{
    const pl_tensor *t = ir_in(c, k);
    return t ? pl_tensor_numel(t) : -1;
}

const ir_vals *ir_in_vals(ictx *c, int k)
{
    if (!ir_in(c, k)) return NULL;
    return ir_tensor_vals(c->G, c->op->inputs[k]);
}

bool ir_in_ints(ictx *c, int k, int64_t *out, int *n)
{
    const ir_vals *v = ir_in_vals(c, k);
    if (!ir_vals_known(v)) return false;
    for (int j = 0; j < v->n; j++) {
        if (v->isf && (v->f[j] != floor(v->f[j]) || !ir_f2i(v->f[j], &out[j]))) return false;
        if (!v->isf) out[j] = v->i[j];
    }
    *n = v->n;
    return true;
}

bool ir_in_floats(ictx *c, int k, double *out, int *n)
{
    const ir_vals *v = ir_in_vals(c, k);
    if (!ir_vals_known(v)) return false;
    for (int j = 0; j < v->n; j++)
        out[j] = v->isf ? v->f[j] : (double)v->i[j];
    *n = v->n;
    return true;
}

bool ir_in_fscalar(ictx *c, int k, double *v)
{
    double buf[IR_MAXVALS];
    int n;
    if (!ir_in_floats(c, k, buf, &n) || n != 1) return false;
    *v = buf[0];
    return true;
}

bool ir_in_scalar(ictx *c, int k, int64_t *v)
{
    int64_t buf[IR_MAXVALS];
    int n;
    if (!ir_in_ints(c, k, buf, &n) || n != 1) return false;
    *v = buf[0];
    return true;
}

/* ---- outputs ---- */

ir_out *ir_o(ictx *c, int k)
{
    if (k < 0 || k >= c->op->n_outputs || c->op->outputs[k] < 0) return NULL;
    return &c->out[k];
}

void ir_set(ictx *c, int k, int dtype, const ir_shape *s)
{
    ir_out *o = ir_o(c, k);
    if (!o) return;
    o->set = true;
    o->dtype = dtype;
    o->s.rank = s && s->rank >= 0 && s->rank <= IR_MAXRANK ? s->rank : -1;
    for (int d = 0; d < o->s.rank; d++)
        o->s.d[d] = s->d[d] < 0 ? PL_DIM_UNKNOWN : s->d[d];
}

void ir_set_rank(ictx *c, int k, int dtype, int rank)
{
    ir_shape s = {.rank = rank};
    for (int d = 0; d < rank && d < IR_MAXRANK; d++)
        s.d[d] = PL_DIM_UNKNOWN;
    ir_set(c, k, dtype, &s);
}

void ir_set_unknown(ictx *c, int k, int dtype)
{
    ir_set_rank(c, k, dtype, -1);
}

void ir_set_like(ictx *c, int k, int from_in, int dtype)
{
    ir_shape s;
    ir_in_shape(c, from_in, &s);
    ir_set(c, k, dtype ? dtype : ir_in_dtype(c, from_in), &s);
}

/* ---- attributes ---- */

int ir_attr_ints(const ictx *c, const char *name, int64_t *buf)
{
    const int64_t *v;
    const pl_attr *a = pl_op_attr(c->op, name);
    if (!a) return -1;
    if (a->kind == PL_ATTR_INT) { /* some exporters write a one-element list as an int */
        buf[0] = a->i;
        return 1;
    }
    int n = pl_op_attr_ints(c->op, name, &v);
    if (a->kind != PL_ATTR_INTS || n > IR_MAXRANK) return -1;
    if (n > 0) memcpy(buf, v, n * sizeof *v);
    return n;
}

int ir_ints_from(ictx *c, int k, const char *name, int64_t *buf)
{
    int n;
    if (ir_in(c, k)) return ir_in_ints(c, k, buf, &n) && n <= IR_MAXRANK ? n : -2;
    return name ? ir_attr_ints(c, name, buf) : -1;
}

/* ---- shapes ---- */

int ir_axis(int64_t a, int rank)
{
    if (a < 0) a += rank;
    return a >= 0 && a < rank ? (int)a : -1;
}

int64_t ir_mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0) return -1;
    if (a && b > INT64_MAX / a) return -1;
    return a * b;
}

int64_t ir_dim_expr(int64_t a, int64_t b, int64_t c)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r) || r < 0)
        return PL_DIM_UNKNOWN;
    return r;
}

int64_t ir_prod(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int j = 0; j < n && p >= 0; j++)
        p = ir_mul(p, d[j]);
    return p;
}

/* One dimension of a multidirectional broadcast. An unknown dimension is 1 or equal to the
 * other, so against a known x > 1 it must be x; against 1 it stays unknown. */
static int64_t bcast_dim(int64_t x, int64_t y)
{
    if (x == 1) return y;
    if (y == 1) return x;
    if (x < 0) return y;
    if (y < 0) return x;
    return x == y ? x : PL_DIM_UNKNOWN; /* incompatible: the model is wrong, say nothing */
}

void ir_broadcast(ir_shape *acc, const ir_shape *b)
{
    if (acc->rank < 0 || b->rank < 0) {
        acc->rank = -1;
        return;
    }
    int r = acc->rank > b->rank ? acc->rank : b->rank;
    ir_shape res = {.rank = r};
    for (int j = 0; j < r; j++) {
        int ja = j - (r - acc->rank), jb = j - (r - b->rank);
        int64_t x = ja >= 0 ? acc->d[ja] : 1, y = jb >= 0 ? b->d[jb] : 1;
        res.d[j] = bcast_dim(x, y);
    }
    *acc = res;
}

int64_t ir_bcast_index(const ir_shape *out, const ir_shape *in, int64_t lin)
{
    int64_t idx = 0, stride = 1;
    for (int j = out->rank - 1, ji = in->rank - 1; j >= 0; j--, ji--) {
        int64_t coord = lin % out->d[j];
        lin /= out->d[j];
        if (ji < 0) continue;
        if (in->d[ji] != 1) idx += coord * stride;
        stride *= in->d[ji];
    }
    return idx;
}

const char *ir_fmt_shape(const int64_t *d, int rank, char *buf, size_t n)
{
    if (rank < 0) {
        snprintf(buf, n, "?");
        return buf;
    }
    size_t len = 0;
    len += snprintf(buf, n, "[");
    for (int j = 0; j < rank && len < n; j++) {
        if (d[j] < 0)
            len += snprintf(buf + len, n - len, "%s?", j ? "," : "");
        else
            len += snprintf(buf + len, n - len, "%s%lld", j ? "," : "", (long long)d[j]);
    }
    if (len < n) snprintf(buf + len, n - len, "]");
    return buf;
}

/* ---- FLOP helpers ---- */

double ir_numel_in(const ictx *c, int k)
{
    int64_t n = ir_in_numel(c, k);
    return n > 0 ? (double)n : 0;
}

double ir_numel_out(const ictx *c, int k)
{
    if (k >= c->op->n_outputs || c->op->outputs[k] < 0) return 0;
    int64_t n = pl_tensor_numel(&c->g->tensors[c->op->outputs[k]]);
    return n > 0 ? (double)n : 0;
}

double ir_flops_out_k(const ictx *c)
{
    return ir_numel_out(c, 0) * c->rule->k;
}

double ir_flops_in_k(const ictx *c)
{
    return ir_numel_in(c, 0) * c->rule->k;
}

double ir_flops_variadic(const ictx *c)
{
    int n = 0;
    for (int k = 0; k < c->n_in; k++)
        n += ir_in(c, k) != NULL;
    return ir_numel_out(c, 0) * c->rule->k * (n > 2 ? n - 1 : 1);
}
