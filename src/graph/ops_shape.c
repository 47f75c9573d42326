/* ops_shape.c: data-movement ops (Reshape, Transpose, Concat, Split, Slice, Gather, Pad,
 * Expand, Tile, Squeeze, Unsqueeze, Shape, Resize, ...). Most of them also carry known
 * contents, since shape subgraphs (Shape -> Gather -> Concat -> Reshape) are built of them. */
#include "infer_internal.h"

#include <math.h>
#include <string.h>

/* Output 0 has input 0's contents (the op only relabels the shape). */
static void pass_vals(ictx *c)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v = ir_in_vals(c, 0);
    if (o && v) o->v = *v;
}

/* ---- Reshape ---- */

typedef struct rs {
    ir_shape x, y;
    bool x_known;
    bool used[IR_MAXRANK];   /* input dims that reappear in the output (0 copies, symbols) */
    bool copied[IR_MAXRANK]; /* output dims taken from an input dim */
    int minus;               /* position of -1, or -1 */
} rs;

/* Output dim j from target entry j; symbols and 0 copies tie it to an input dim. */
static void reshape_entry(ictx *c, rs *r, const ir_vals *v, int j, bool allowzero)
{
    int data = c->op->inputs[0];
    r->y.d[j] = PL_DIM_UNKNOWN;
    if (v->sym[j]) {
        int dim = IR_SYM_DIM(v->sym[j]);
        if (v->sym[j] > 0 && IR_SYM_TENSOR(v->sym[j]) == data && r->x_known && dim < r->x.rank &&
            !r->used[dim])
            r->used[dim] = r->copied[j] = true, r->y.d[j] = r->x.d[dim];
    } else if (v->i[j] == 0 && !allowzero) {
        if (r->x_known && j < r->x.rank && !r->used[j])
            r->used[j] = r->copied[j] = true, r->y.d[j] = r->x.d[j];
    } else if (v->i[j] == -1 && r->minus < 0) {
        r->minus = j;
    } else if (v->i[j] >= 0) {
        r->y.d[j] = v->i[j];
    }
}

/* The -1 entry: input elements over the other output entries, leaving out dims that appear
 * on both sides, so an unknown batch dim copied by 0 does not hide it. */
static int64_t reshape_minus(const rs *r)
{
    int64_t in = 1, out = 1;
    if (!r->x_known) return PL_DIM_UNKNOWN;
    for (int j = 0; j < r->x.rank; j++)
        if (!r->used[j]) in = ir_mul(in, r->x.d[j]);
    for (int j = 0; j < r->y.rank; j++)
        if (j != r->minus && !r->copied[j]) out = ir_mul(out, r->y.d[j]);
    if (in < 0 || out <= 0 || in % out) return PL_DIM_UNKNOWN;
    return in / out;
}

static void sh_reshape(ictx *c)
{
    rs r = {.minus = -1};
    ir_vals attr;
    const ir_vals *v = ir_in_vals(c, 1);
    int dt = ir_in_dtype(c, 0), n;
    r.x_known = ir_in_shape(c, 0, &r.x);
    if (!ir_in(c, 1) && (n = ir_attr_ints(c, "shape", attr.i)) >= 0) { /* opset < 5 */
        attr.n = n;
        memset(attr.sym, 0, sizeof attr.sym);
        v = &attr;
    }
    if (!v || v->n > IR_MAXRANK) {
        ir_set_rank(c, 0, dt, ir_in_rank(c, 1) == 1 ? (int)ir_in(c, 1)->dims[0] : -1);
        pass_vals(c);
        return;
    }
    r.y.rank = v->n;
    bool allowzero = pl_op_attr_int(c->op, "allowzero", 0) != 0;
    for (int j = 0; j < v->n; j++)
        reshape_entry(c, &r, v, j, allowzero);
    if (r.minus >= 0) r.y.d[r.minus] = reshape_minus(&r);
    ir_set(c, 0, dt, &r.y);
    pass_vals(c);
}

/* ---- Flatten, Transpose, Squeeze, Unsqueeze ---- */

static void sh_flatten(ictx *c)
{
    ir_shape x, y = {.rank = 2, .d = {-1, -1}};
    if (ir_in_shape(c, 0, &x)) {
        int64_t a = pl_op_attr_int(c->op, "axis", 1);
        if (a < 0) a += x.rank;
        if (a >= 0 && a <= x.rank) {
            y.d[0] = ir_prod(x.d, (int)a);
            y.d[1] = ir_prod(x.d + a, x.rank - (int)a);
        }
    }
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
    pass_vals(c);
}

/* Strides of a row-major shape (all dims known); false when the tensor is too large to
 * hold contents. */
static bool strides_of(const ir_shape *x, int64_t *st)
{
    int64_t n = 1;
    for (int j = x->rank - 1; j >= 0; j--) {
        if (x->d[j] < 0) return false;
        st[j] = n;
        n = ir_mul(n, x->d[j]);
        if (n < 0 || n > IR_MAXVALS) return false;
    }
    return true;
}

/* Element lin of the row-major shape y read from x at base + sum(coord_j * step[j]) (steps
 * in elements of x): Transpose and Slice contents. */
static void gather_strided(ictx *c, const ir_shape *y, int64_t base, const int64_t *step)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v = ir_in_vals(c, 0);
    int64_t n = ir_prod(y->d, y->rank);
    if (!o || !v || n < 0 || n > IR_MAXVALS) return;
    o->v = *v;
    o->v.n = (int)n;
    for (int64_t lin = 0; lin < n; lin++) {
        int64_t src = base, rest = lin;
        for (int j = y->rank - 1; j >= 0; j--) {
            src += (rest % y->d[j]) * step[j];
            rest /= y->d[j];
        }
        if (src < 0 || src >= v->n) {
            o->v.n = -1;
            return;
        }
        o->v.i[lin] = v->i[src], o->v.f[lin] = v->f[src], o->v.sym[lin] = v->sym[src];
    }
}

static void transpose_vals(ictx *c, const ir_shape *x, const int64_t *perm, bool given)
{
    int64_t st[IR_MAXRANK], step[IR_MAXRANK];
    const ir_vals *v = ir_in_vals(c, 0);
    ir_out *o = ir_o(c, 0);
    if (!o || !v || !strides_of(x, st) || v->n != ir_prod(x->d, x->rank)) return;
    bool seen[IR_MAXRANK] = {false};
    for (int j = 0; j < x->rank; j++) {
        int64_t p = given ? perm[j] : x->rank - 1 - j;
        if (p < 0 || p >= x->rank || seen[p]) return; /* not a permutation */
        seen[p] = true;
        step[j] = st[p];
    }
    gather_strided(c, &o->s, 0, step);
}

static void sh_transpose(ictx *c)
{
    ir_shape x, y;
    int64_t perm[IR_MAXRANK];
    if (!ir_in_shape(c, 0, &x)) {
        ir_set_unknown(c, 0, ir_in_dtype(c, 0));
        return;
    }
    int n = ir_attr_ints(c, "perm", perm);
    y.rank = x.rank;
    for (int j = 0; j < x.rank; j++) {
        int64_t p = n == x.rank ? perm[j] : x.rank - 1 - j; /* default: reversed */
        y.d[j] = p >= 0 && p < x.rank ? x.d[p] : PL_DIM_UNKNOWN;
    }
    ir_set(c, 0, ir_in_dtype(c, 0), &y);
    if (x.rank <= 1)
        pass_vals(c);
    else if (n == x.rank || n <= 0)
        transpose_vals(c, &x, perm, n == x.rank);
}

/* Squeeze: the listed axes (input 1 from opset 13, else attribute), or every 1. */
static void sh_squeeze(ictx *c)
{
    ir_shape x, y = {.rank = 0};
    int64_t axes[IR_MAXRANK];
    bool drop[IR_MAXRANK] = {false};
    int n = ir_ints_from(c, 1, "axes", axes), dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x) || n == -2) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    for (int j = 0; j < n; j++) {
        int a = ir_axis(axes[j], x.rank);
        if (a >= 0) drop[a] = true;
    }
    for (int j = 0; n <= 0 && j < x.rank; j++) {
        if (x.d[j] < 0) { /* might be 1: the rank is not known */
            ir_set_unknown(c, 0, dt);
            return;
        }
        drop[j] = x.d[j] == 1;
    }
    for (int j = 0; j < x.rank; j++)
        if (!drop[j]) y.d[y.rank++] = x.d[j];
    ir_set(c, 0, dt, &y);
    pass_vals(c);
}

static void sh_unsqueeze(ictx *c)
{
    ir_shape x, y;
    int64_t axes[IR_MAXRANK];
    bool one[IR_MAXRANK] = {false};
    int n = ir_ints_from(c, 1, "axes", axes), dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x) || n < 0 || x.rank + n > IR_MAXRANK) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    y.rank = x.rank + n;
    for (int j = 0; j < n; j++) {
        int a = ir_axis(axes[j], y.rank);
        if (a >= 0) one[a] = true;
    }
    for (int j = 0, k = 0; j < y.rank; j++)
        y.d[j] = one[j] ? 1 : k < x.rank ? x.d[k++] : -1;
    ir_set(c, 0, dt, &y);
    pass_vals(c);
}

/* ---- Concat and Split ---- */

/* Concatenation along axis 0 is appending in row-major order; inputs without known
 * contents contribute unknown elements when their size is known. */
static void concat_vals(ictx *c, int axis)
{
    ir_out *o = ir_o(c, 0);
    bool any = false;
    if (!o || axis != 0) return;
    o->v.n = 0;
    o->v.isf = ir_is_float(o->dtype);
    for (int k = 0; k < c->n_in; k++) {
        const ir_vals *v = ir_in_vals(c, k);
        int64_t m = v ? v->n : ir_in_numel(c, k);
        if (!ir_in(c, k) || m < 0 || m > IR_MAXVALS - o->v.n) {
            o->v.n = -1;
            return;
        }
        for (int64_t j = 0; j < m; j++, o->v.n++) {
            o->v.i[o->v.n] = v ? v->i[j] : 0;
            o->v.f[o->v.n] = v ? v->f[j] : 0;
            o->v.sym[o->v.n] = v ? v->sym[j] : IR_SYM_ANON;
        }
        any |= v != NULL;
    }
    if (!any) o->v.n = -1;
}

static void sh_concat(ictx *c)
{
    ir_shape s, y = {.rank = -1};
    int64_t axis_raw = pl_op_attr_int(c->op, "axis", 0);
    int axis = -1;
    bool conflict[IR_MAXRANK] = {false};
    for (int k = 0; k < c->n_in; k++) {
        if (!ir_in_shape(c, k, &s)) continue;
        if (y.rank < 0) {
            y = s;
            axis = ir_axis(axis_raw, y.rank);
            if (axis < 0) break;
            y.d[axis] = 0;
        }
        if (s.rank != y.rank) continue;
        for (int j = 0; j < y.rank; j++) {
            if (j == axis || s.d[j] < 0) continue;
            if (y.d[j] >= 0 && y.d[j] != s.d[j]) conflict[j] = true; /* invalid model */
            y.d[j] = s.d[j];
        }
    }
    for (int j = 0; j < y.rank; j++)
        if (conflict[j]) y.d[j] = PL_DIM_UNKNOWN;
    for (int k = 0; axis >= 0 && k < c->n_in; k++) {
        int64_t d = ir_in(c, k) && ir_in_shape(c, k, &s) && s.rank == y.rank ? s.d[axis] : -1;
        y.d[axis] = y.d[axis] < 0 || d < 0 ? PL_DIM_UNKNOWN : ir_dim_expr(y.d[axis], 1, d);
    }
    ir_set(c, 0, ir_in_dtype(c, 0), axis >= 0 || y.rank < 0 ? &y : NULL);
    if (axis >= 0) concat_vals(c, axis);
}

/* Split sizes: the 'split' input (opset 13) or attribute, else equal parts (the last one
 * smaller when num_outputs does not divide the dim, as opset 18 says). */
static int split_sizes(ictx *c, int64_t dim, int n_out, int64_t *sizes)
{
    int n = ir_ints_from(c, 1, "split", sizes);
    if (n == n_out) return n;
    if (n == -2 || dim < 0 || n_out <= 0) return -1;
    int64_t chunk = dim / n_out + (dim % n_out != 0), left = dim;
    for (int k = 0; k < n_out; k++) {
        sizes[k] = left < chunk ? left : chunk;
        left -= sizes[k];
    }
    return n_out;
}

static void split_vals(ictx *c, int axis, const int64_t *sizes, int n_out)
{
    const ir_vals *v = ir_in_vals(c, 0);
    if (!v || axis != 0 || ir_in_rank(c, 0) != 1) return;
    int64_t off = 0;
    for (int k = 0; k < n_out; k++) {
        ir_out *o = ir_o(c, k);
        if (sizes[k] < 0 || sizes[k] > v->n - off) return;
        if (o) {
            o->v = *v;
            o->v.n = (int)sizes[k];
            memmove(o->v.i, v->i + off, sizes[k] * sizeof *v->i);
            memmove(o->v.f, v->f + off, sizes[k] * sizeof *v->f);
            memmove(o->v.sym, v->sym + off, sizes[k] * sizeof *v->sym);
        }
        off += sizes[k];
    }
}

static void sh_split(ictx *c)
{
    ir_shape x;
    int64_t sizes[IR_MAXVALS];
    int n_out = c->op->n_outputs, dt = ir_in_dtype(c, 0);
    int axis = ir_in_shape(c, 0, &x) ? ir_axis(pl_op_attr_int(c->op, "axis", 0), x.rank) : -1;
    if (axis < 0 || n_out > IR_MAXVALS) {
        for (int k = 0; k < n_out; k++)
            ir_set_rank(c, k, dt, x.rank);
        return;
    }
    int n = split_sizes(c, x.d[axis], n_out, sizes);
    for (int k = 0; k < n_out; k++) {
        ir_shape y = x;
        y.d[axis] = n == n_out ? sizes[k] : PL_DIM_UNKNOWN;
        ir_set(c, k, dt, &y);
    }
    if (n == n_out) split_vals(c, axis, sizes, n_out);
}

/* ---- Slice ---- */

/* Elements selected along one dim, numpy style; *first is the first index taken. */
static int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first)
{
    if (step == 0) return PL_DIM_UNKNOWN;
    if (dim < 0) return start >= 0 && end >= 0 && step > 0 && end <= start ? 0 : PL_DIM_UNKNOWN;
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        *first = start;
        return end > start ? 1 + (end - start - 1) / step : 0;
    }
    if (dim == 0) return 0;
    start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
    end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
    int64_t mstep = step == INT64_MIN ? INT64_MAX : -step;
    *first = start;
    return start > end ? 1 + (start - end - 1) / mstep : 0;
}

typedef struct slicep {
    int n; /* -1: starts or ends unknown */
    int64_t starts[IR_MAXRANK], ends[IR_MAXRANK], axes[IR_MAXRANK], steps[IR_MAXRANK];
    int n_axes; /* -1: axes unknown */
} slicep;

/* Starts, ends, axes and steps: inputs 1-4 from opset 10, attributes before. */
static void slice_params(ictx *c, slicep *p)
{
    bool attrs = c->n_in < 2;
    int ns = ir_ints_from(c, 1, attrs ? "starts" : NULL, p->starts);
    int ne = ir_ints_from(c, 2, attrs ? "ends" : NULL, p->ends);
    p->n = ns >= 0 && ns == ne ? ns : -1;
    p->n_axes = ir_ints_from(c, 3, attrs ? "axes" : NULL, p->axes);
    if (p->n_axes == -1 && p->n >= 0) {
        p->n_axes = p->n;
        for (int j = 0; j < p->n; j++)
            p->axes[j] = j;
    }
    int64_t steps[IR_MAXRANK];
    int nst = ir_ints_from(c, 4, NULL, steps);
    for (int j = 0; j < IR_MAXRANK; j++) /* step 0 is invalid: it marks unknown steps */
        p->steps[j] = nst >= 0 && nst == p->n && j < nst ? steps[j] : nst == -2 ? 0 : 1;
}

static void sh_slice(ictx *c)
{
    ir_shape x;
    slicep p;
    int dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x)) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    slice_params(c, &p);
    if (p.n_axes < 0 || (p.n >= 0 && p.n_axes != p.n)) {
        ir_set_rank(c, 0, dt, x.rank);
        return;
    }
    ir_shape y = x;
    int64_t first[IR_MAXRANK] = {0}, step[IR_MAXRANK];
    for (int j = 0; j < x.rank; j++)
        step[j] = 1;
    for (int j = 0; j < p.n_axes; j++) {
        int a = ir_axis(p.axes[j], x.rank);
        if (a < 0) continue;
        y.d[a] = p.n < 0 ? PL_DIM_UNKNOWN
                         : slice_len(x.d[a], p.starts[j], p.ends[j], p.steps[j], &first[a]);
        step[a] = p.steps[j];
    }
    ir_set(c, 0, dt, &y);
    /* contents: element coord of y reads x at first + coord * step, axis by axis */
    int64_t st[IR_MAXRANK], base = 0;
    const ir_vals *v = ir_in_vals(c, 0);
    if (p.n < 0 || !v || !strides_of(&x, st) || v->n != ir_prod(x.d, x.rank)) return;
    for (int j = 0; j < x.rank; j++) {
        if (y.d[j] < 0) return;
        base += first[j] * st[j];
        /* a step can be huge only when it takes at most one element */
        step[j] = y.d[j] <= 1 ? 0 : step[j] * st[j];
    }
    gather_strided(c, &y, base, step);
}

/* ---- Gather ---- */

static void gather_vals(ictx *c, const ir_shape *x, int axis, int64_t n_idx)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v = ir_in_vals(c, 0);
    int64_t idx[IR_MAXVALS];
    int n;
    int64_t outer = ir_prod(x->d, axis), inner = ir_prod(x->d + axis + 1, x->rank - axis - 1);
    if (!o || !v || outer < 0 || inner < 0 || !ir_in_ints(c, 1, idx, &n) || n != n_idx) return;
    int64_t total = ir_mul(ir_mul(outer, n), inner);
    if (total < 0 || total > IR_MAXVALS || v->n != ir_prod(x->d, x->rank)) return;
    o->v = *v;
    o->v.n = 0;
    for (int64_t a = 0; a < outer; a++)
        for (int j = 0; j < n; j++)
            for (int64_t b = 0; b < inner; b++) {
                int64_t k = idx[j] < 0 ? idx[j] + x->d[axis] : idx[j];
                if (k < 0 || k >= x->d[axis]) {
                    o->v.n = -1;
                    return;
                }
                int64_t src = (a * x->d[axis] + k) * inner + b, dst = o->v.n++;
                o->v.i[dst] = v->i[src], o->v.f[dst] = v->f[src], o->v.sym[dst] = v->sym[src];
            }
}

static void sh_gather(ictx *c)
{
    ir_shape x, ind, y = {.rank = 0};
    int dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x) || !ir_in_shape(c, 1, &ind) || x.rank + ind.rank > IR_MAXRANK) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    int axis = ir_axis(pl_op_attr_int(c->op, "axis", 0), x.rank);
    if (axis < 0) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    for (int j = 0; j < axis; j++)
        y.d[y.rank++] = x.d[j];
    for (int j = 0; j < ind.rank; j++)
        y.d[y.rank++] = ind.d[j];
    for (int j = axis + 1; j < x.rank; j++)
        y.d[y.rank++] = x.d[j];
    ir_set(c, 0, dt, &y);
    int64_t n_idx = ir_prod(ind.d, ind.rank);
    if (n_idx >= 0) gather_vals(c, &x, axis, n_idx);
}

static void sh_gather_elements(ictx *c)
{
    ir_set_like(c, 0, 1, ir_in_dtype(c, 0));
}

/* GatherND: indices[:-1] + data[batch_dims + indices[-1]:]. */
static void sh_gather_nd(ictx *c)
{
    ir_shape x, ind, y = {.rank = 0};
    int64_t b = pl_op_attr_int(c->op, "batch_dims", 0);
    int dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x) || !ir_in_shape(c, 1, &ind) || ind.rank < 1 ||
        ind.d[ind.rank - 1] < 0 || b < 0 || b > x.rank || ind.d[ind.rank - 1] > x.rank - b) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    for (int j = 0; j < ind.rank - 1; j++)
        y.d[y.rank++] = ind.d[j];
    for (int64_t j = b + ind.d[ind.rank - 1]; j < x.rank && y.rank < IR_MAXRANK; j++)
        y.d[y.rank++] = x.d[j];
    ir_set(c, 0, dt, &y);
}

static void sh_like0(ictx *c)
{
    ir_set_like(c, 0, 0, 0);
}

/* ---- Pad, Expand, Tile ---- */

static void sh_pad(ictx *c)
{
    ir_shape x;
    int64_t pads[2 * IR_MAXRANK], axes[IR_MAXRANK];
    int dt = ir_in_dtype(c, 0);
    bool in_form = ir_in(c, 1) != NULL;
    int np = in_form ? ir_ints_from(c, 1, NULL, pads) : ir_attr_ints(c, "pads", pads);
    if (!in_form && np < 0) np = ir_attr_ints(c, "paddings", pads);
    if (!ir_in_shape(c, 0, &x) || np < 0) {
        ir_set_rank(c, 0, dt, x.rank);
        return;
    }
    int na = ir_ints_from(c, 3, NULL, axes);
    if (na == -1) {
        na = x.rank;
        for (int j = 0; j < na; j++)
            axes[j] = j;
    }
    if (na < 0 || np != 2 * na) {
        ir_set_rank(c, 0, dt, x.rank);
        return;
    }
    for (int j = 0; j < na; j++) {
        int a = ir_axis(axes[j], x.rank);
        int64_t sum;
        if (a < 0 || x.d[a] < 0) continue;
        bool ok = !__builtin_add_overflow(pads[j], pads[j + na], &sum);
        x.d[a] = ok ? ir_dim_expr(x.d[a], 1, sum) : PL_DIM_UNKNOWN;
    }
    ir_set(c, 0, dt, &x);
}

/* Known contents broadcast to a larger shape (Expand of a scalar, ...). */
static void expand_vals(ictx *c, const ir_shape *x)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v = ir_in_vals(c, 0);
    int64_t n = o ? ir_prod(o->s.d, o->s.rank) : -1;
    if (!v || n < 0 || n > IR_MAXVALS || v->n != ir_prod(x->d, x->rank)) return;
    o->v = *v;
    o->v.n = (int)n;
    for (int64_t j = 0; j < n; j++) {
        int64_t src = ir_bcast_index(&o->s, x, j);
        o->v.i[j] = v->i[src], o->v.f[j] = v->f[src], o->v.sym[j] = v->sym[src];
    }
}

static void sh_expand(ictx *c)
{
    ir_shape x, t = {.rank = -1};
    const ir_vals *v = ir_in_vals(c, 1);
    int dt = ir_in_dtype(c, 0);
    if (v && v->n <= IR_MAXRANK) {
        t.rank = v->n;
        for (int j = 0; j < v->n; j++)
            t.d[j] = v->sym[j] ? PL_DIM_UNKNOWN : v->i[j];
    } else if (ir_in_rank(c, 1) == 1 && ir_in(c, 1)->dims[0] >= 0 &&
               ir_in(c, 1)->dims[0] <= IR_MAXRANK) {
        t.rank = (int)ir_in(c, 1)->dims[0];
        for (int j = 0; j < t.rank; j++)
            t.d[j] = PL_DIM_UNKNOWN;
    }
    ir_in_shape(c, 0, &x);
    ir_shape y = x;
    ir_broadcast(&y, &t);
    ir_set(c, 0, dt, &y);
    if (y.rank >= 0) expand_vals(c, &x);
}

static void sh_tile(ictx *c)
{
    ir_shape x;
    int64_t rep[IR_MAXVALS];
    int n, dt = ir_in_dtype(c, 0);
    if (!ir_in_shape(c, 0, &x) || !ir_in_ints(c, 1, rep, &n) || n != x.rank) {
        ir_set_rank(c, 0, dt, x.rank >= 0 ? x.rank : -1);
        return;
    }
    for (int j = 0; j < x.rank; j++)
        x.d[j] = ir_mul(x.d[j], rep[j]);
    ir_set(c, 0, dt, &x);
}

/* ---- Shape, Size, ConstantOfShape, Range, Constant ---- */

static void sh_shape(ictx *c)
{
    ir_shape x, y = {.rank = 1, .d = {PL_DIM_UNKNOWN}};
    if (!ir_in_shape(c, 0, &x)) {
        ir_set(c, 0, PL_DT_INT64, &y);
        return;
    }
    int64_t start = pl_op_attr_int(c->op, "start", 0), end = pl_op_attr_int(c->op, "end", x.rank);
    if (start < 0) start += x.rank;
    if (end < 0) end += x.rank;
    start = start < 0 ? 0 : start > x.rank ? x.rank : start;
    end = end < start ? start : end > x.rank ? x.rank : end;
    y.d[0] = end - start;
    ir_set(c, 0, PL_DT_INT64, &y);
    ir_out *o = ir_o(c, 0);
    if (!o) return;
    o->v.n = (int)(end - start);
    o->v.isf = false;
    for (int64_t j = start; j < end; j++) {
        o->v.i[j - start] = x.d[j] < 0 ? 0 : x.d[j];
        o->v.f[j - start] = (double)o->v.i[j - start];
        o->v.sym[j - start] = x.d[j] < 0 ? IR_SYM(c->op->inputs[0], j) : 0;
    }
}

static void sh_size(ictx *c)
{
    ir_shape y = {.rank = 0};
    ir_set(c, 0, PL_DT_INT64, &y);
    ir_out *o = ir_o(c, 0);
    int64_t n = ir_in_numel(c, 0);
    if (!o || n < 0) return;
    o->v.n = 1, o->v.isf = false, o->v.i[0] = n, o->v.f[0] = (double)n, o->v.sym[0] = 0;
}

static void fill_vals(ir_out *o, const ir_vals *val)
{
    int64_t n = ir_prod(o->s.d, o->s.rank);
    if (n < 0 || n > IR_MAXVALS) return;
    o->v.n = (int)n;
    o->v.isf = ir_is_float(o->dtype);
    for (int64_t j = 0; j < n; j++) {
        bool have = ir_vals_known(val) && val->n == 1;
        o->v.i[j] = have ? val->i[0] : 0;
        o->v.f[j] = have ? val->f[0] : 0;
        o->v.sym[j] = 0;
    }
}

/* ConstantOfShape: the shape from input 0's contents; type and fill value from 'value'. */
static void sh_constant_of_shape(ictx *c)
{
    const pl_attr *a = pl_op_attr(c->op, "value");
    int t = a && a->kind == PL_ATTR_TENSOR ? a->tensor : -1;
    int dt = t >= 0 ? c->g->tensors[t].dtype : PL_DT_FLOAT;
    const ir_vals *v = ir_in_vals(c, 0);
    if (!v || v->n > IR_MAXRANK) {
        ir_set_rank(c, 0, dt, ir_in_rank(c, 0) == 1 ? (int)ir_in(c, 0)->dims[0] : -1);
        return;
    }
    ir_shape y = {.rank = v->n};
    for (int j = 0; j < v->n; j++)
        y.d[j] = v->sym[j] ? PL_DIM_UNKNOWN : v->i[j];
    ir_set(c, 0, dt, &y);
    ir_out *o = ir_o(c, 0);
    if (o) fill_vals(o, t >= 0 ? ir_tensor_vals(c->G, t) : NULL);
}

static void range_vals(ir_out *o, const double *f, int64_t n, bool isf)
{
    if (n > IR_MAXVALS) return;
    o->v.n = (int)n;
    o->v.isf = isf;
    for (int64_t j = 0; j < n; j++) {
        o->v.f[j] = f[0] + (double)j * f[2];
        o->v.sym[j] = ir_f2i(o->v.f[j], &o->v.i[j]) ? 0 : IR_SYM_ANON;
    }
}

/* Range: max(ceil((limit - start) / delta), 0) elements. */
static void sh_range(ictx *c)
{
    double f[3];
    int dt = ir_in_dtype(c, 0);
    ir_shape y = {.rank = 1, .d = {PL_DIM_UNKNOWN}};
    for (int k = 0; k < 3; k++)
        if (!ir_in_fscalar(c, k, &f[k])) {
            ir_set(c, 0, dt, &y);
            return;
        }
    double len = f[2] != 0 ? ceil((f[1] - f[0]) / f[2]) : -1;
    if (len >= 0 && len < 9e18)
        y.d[0] = (int64_t)len;
    else if (len < 0 && f[2] != 0)
        y.d[0] = 0;
    ir_set(c, 0, dt, &y);
    ir_out *o = ir_o(c, 0);
    if (o && y.d[0] >= 0) range_vals(o, f, y.d[0], ir_is_float(dt));
}

static void const_el(ir_vals *v, int j, bool isf, int64_t i, double f)
{
    v->sym[j] = 0;
    v->i[j] = i;
    v->f[j] = isf ? f : (double)i;
    if (isf && !ir_f2i(f, &v->i[j])) v->sym[j] = IR_SYM_ANON;
}

/* Constant: what the reader set on the output wins; the attribute forms otherwise. */
static void sh_constant(ictx *c)
{
    const pl_attr *a;
    ir_shape y = {.rank = 0};
    ir_out *o = ir_o(c, 0);
    if (!o) return;
    if ((a = pl_op_attr(c->op, "value_int")) || (a = pl_op_attr(c->op, "value_float"))) {
        bool isf = a->kind == PL_ATTR_FLOAT;
        ir_set(c, 0, isf ? PL_DT_FLOAT : PL_DT_INT64, &y);
        o->v.n = 1, o->v.isf = isf;
        const_el(&o->v, 0, isf, a->i, a->f);
    } else if ((a = pl_op_attr(c->op, "value_ints")) || (a = pl_op_attr(c->op, "value_floats"))) {
        bool isf = a->kind == PL_ATTR_FLOATS;
        y.rank = 1, y.d[0] = a->n;
        ir_set(c, 0, isf ? PL_DT_FLOAT : PL_DT_INT64, &y);
        if (a->n > IR_MAXVALS) return;
        o->v.n = a->n, o->v.isf = isf;
        for (int j = 0; j < a->n; j++)
            const_el(&o->v, j, isf, isf ? 0 : a->ints[j], isf ? a->floats[j] : 0);
    }
}

/* ---- Resize and Upsample ---- */

static bool resize_axes(ictx *c, int rank, int n, int64_t *axes)
{
    int na = ir_attr_ints(c, "axes", axes);
    if (na < 0) {
        for (int j = 0; j < rank; j++)
            axes[j] = j;
        na = rank;
    }
    for (int j = 0; j < na; j++)
        if ((axes[j] = ir_axis(axes[j], rank)) < 0) return false;
    return na == n;
}

/* sizes given: with keep_aspect_ratio_policy (opset 18) one scale for every resized axis. */
static void resize_by_sizes(ictx *c, ir_shape *x, const int64_t *sizes, const int64_t *axes, int n)
{
    const char *policy = pl_op_attr_string(c->op, "keep_aspect_ratio_policy", "stretch");
    bool smaller = strcmp(policy, "not_smaller") == 0, larger = strcmp(policy, "not_larger") == 0;
    double scale = smaller ? 0 : 1e300;
    for (int j = 0; j < n && (smaller || larger); j++) {
        double s = x->d[axes[j]] > 0 ? (double)sizes[j] / (double)x->d[axes[j]] : NAN;
        scale = smaller ? fmax(scale, s) : fmin(scale, s);
    }
    for (int j = 0; j < n; j++) {
        int64_t *d = &x->d[axes[j]];
        int64_t r;
        if (!smaller && !larger)
            *d = sizes[j];
        else
            *d = *d >= 0 && ir_f2i(floor((double)*d * scale + 0.5), &r) ? r : PL_DIM_UNKNOWN;
    }
}

static void resize_by_scales(ir_shape *x, const double *scales, const int64_t *axes, int n)
{
    for (int j = 0; j < n; j++) {
        int64_t *d = &x->d[axes[j]];
        int64_t r;
        *d = *d >= 0 && ir_f2i(floor((double)*d * scales[j]), &r) && r >= 0 ? r : PL_DIM_UNKNOWN;
    }
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample (scales as an input,
 * or an attribute in opset 7). An empty scales tensor means "use sizes". */
static void sh_resize(ictx *c)
{
    ir_shape x;
    double sc[IR_MAXVALS];
    int64_t sizes[IR_MAXVALS], axes[IR_MAXRANK];
    int ns = -1, nz = -1, dt = ir_in_dtype(c, 0);
    bool v10 = strcmp(c->op->type, "Upsample") == 0 || c->R->opset < 11;
    int k_scales = v10 ? 1 : 2;
    if (!ir_in_shape(c, 0, &x)) {
        ir_set_unknown(c, 0, dt);
        return;
    }
    const pl_attr *a = pl_op_attr(c->op, "scales");
    if (a && a->kind == PL_ATTR_FLOATS && a->n <= IR_MAXVALS) {
        ns = a->n;
        memcpy(sc, a->floats, ns * sizeof *sc);
    } else if (ir_in(c, k_scales) && !ir_in_floats(c, k_scales, sc, &ns)) {
        ns = ir_in_numel(c, k_scales) == 0 ? 0 : -2;
    }
    if (!v10 && ir_in(c, 3) && !ir_in_ints(c, 3, sizes, &nz)) nz = -2;
    if (nz > 0 && nz <= IR_MAXRANK && resize_axes(c, x.rank, nz, axes))
        resize_by_sizes(c, &x, sizes, axes, nz);
    else if (ns > 0 && ns <= IR_MAXRANK && resize_axes(c, x.rank, ns, axes))
        resize_by_scales(&x, sc, axes, ns);
    else
        for (int j = 0; j < x.rank; j++)
            x.d[j] = PL_DIM_UNKNOWN;
    ir_set(c, 0, dt, &x);
}

/* Nearest neighbour copies; linear interpolates 2 taps per resized axis (about 8 per output
 * element in 2-D), cubic 4 taps per axis (about 32). */
static double fl_resize(const ictx *c)
{
    const char *mode = pl_op_attr_string(c->op, "mode", "nearest");
    double k = strstr(mode, "linear") ? 8 : strcmp(mode, "cubic") == 0 ? 32 : 0;
    return ir_numel_out(c, 0) * k;
}

/* ---- rearrangements ---- */

static void space_depth(ictx *c, bool to_space)
{
    ir_shape x;
    int64_t b = pl_op_attr_int(c->op, "blocksize", 1);
    if (!ir_in_shape(c, 0, &x) || x.rank != 4 || b <= 0) {
        ir_set_rank(c, 0, ir_in_dtype(c, 0), 4);
        return;
    }
    int64_t bb = ir_mul(b, b);
    if (to_space) {
        x.d[1] = x.d[1] >= 0 && bb > 0 && x.d[1] % bb == 0 ? x.d[1] / bb : -1;
        x.d[2] = ir_mul(x.d[2], b), x.d[3] = ir_mul(x.d[3], b);
    } else {
        x.d[1] = ir_mul(x.d[1], bb);
        x.d[2] = x.d[2] >= 0 && x.d[2] % b == 0 ? x.d[2] / b : -1;
        x.d[3] = x.d[3] >= 0 && x.d[3] % b == 0 ? x.d[3] / b : -1;
    }
    ir_set(c, 0, ir_in_dtype(c, 0), &x);
}

static void sh_depth_to_space(ictx *c)
{
    space_depth(c, true);
}
static void sh_space_to_depth(ictx *c)
{
    space_depth(c, false);
}

/* CenterCropPad (opset 18): the listed axes take the sizes of input 1. */
static void sh_center_crop_pad(ictx *c)
{
    ir_shape x;
    int64_t sh[IR_MAXVALS], axes[IR_MAXRANK];
    int n;
    if (!ir_in_shape(c, 0, &x) || !ir_in_ints(c, 1, sh, &n) || !resize_axes(c, x.rank, n, axes)) {
        ir_set_rank(c, 0, ir_in_dtype(c, 0), x.rank);
        return;
    }
    for (int j = 0; j < n; j++)
        x.d[axes[j]] = sh[j];
    ir_set(c, 0, ir_in_dtype(c, 0), &x);
}

#define DM PL_CLASS_DATA_MOVEMENT

const ir_rule ir_rules_shape[] = {
    {"Reshape", DM, sh_reshape, NULL, 0, NULL, ir_bytes_view},
    {"Flatten", DM, sh_flatten, NULL, 0, NULL, ir_bytes_view},
    {"Transpose", DM, sh_transpose, NULL, 0, NULL, NULL},
    {"Squeeze", DM, sh_squeeze, NULL, 0, NULL, ir_bytes_view},
    {"Unsqueeze", DM, sh_unsqueeze, NULL, 0, NULL, ir_bytes_view},
    {"Concat", DM, sh_concat, NULL, 0, NULL, NULL},
    {"Split", DM, sh_split, NULL, 0, NULL, NULL},
    {"Slice", DM, sh_slice, NULL, 0, NULL, ir_bytes_partial},
    {"Gather", DM, sh_gather, NULL, 0, NULL, ir_bytes_partial},
    {"GatherElements", DM, sh_gather_elements, NULL, 0, NULL, ir_bytes_partial},
    {"GatherND", DM, sh_gather_nd, NULL, 0, NULL, ir_bytes_partial},
    {"Scatter", DM, sh_like0, NULL, 0, NULL, NULL},
    {"ScatterElements", DM, sh_like0, NULL, 0, NULL, NULL},
    {"ScatterND", DM, sh_like0, NULL, 0, NULL, NULL},
    {"Pad", DM, sh_pad, NULL, 0, NULL, NULL},
    {"Expand", DM, sh_expand, NULL, 0, NULL, NULL},
    {"Tile", DM, sh_tile, NULL, 0, NULL, NULL},
    {"Shape", DM, sh_shape, NULL, 0, NULL, ir_bytes_dims},
    {"Size", DM, sh_size, NULL, 0, NULL, ir_bytes_dims},
    {"ConstantOfShape", DM, sh_constant_of_shape, NULL, 0, NULL, NULL},
    {"Range", DM, sh_range, NULL, 0, NULL, NULL},
    {"Constant", DM, sh_constant, NULL, 0, NULL, NULL},
    {"Resize", DM, sh_resize, fl_resize, 0, NULL, NULL},
    {"Upsample", DM, sh_resize, fl_resize, 0, NULL, NULL},
    {"DepthToSpace", DM, sh_depth_to_space, NULL, 0, NULL, NULL},
    {"SpaceToDepth", DM, sh_space_to_depth, NULL, 0, NULL, NULL},
    {"CenterCropPad", DM, sh_center_crop_pad, NULL, 0, NULL, NULL},
    {"ReverseSequence", DM, sh_like0, NULL, 0, NULL, NULL},
};
const int ir_n_rules_shape = sizeof ir_rules_shape / sizeof *ir_rules_shape;
