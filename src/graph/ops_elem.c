/* ops_elem.c: elementwise ops (arithmetic with multidirectional broadcasting, comparisons,
 * activations, casts) and normalisations, with the known-contents arithmetic that shape
 * subgraphs of torch exports need (Add/Sub/Mul/Div/Equal/Where/Cast on Shape results). */
#include "infer_internal.h"

#include <math.h>
#include <string.h>

/* ---- known contents, element by element ---- */

typedef enum {
    V_NONE,
    V_ADD,
    V_SUB,
    V_MUL,
    V_DIV,
    V_MOD,
    V_MAX,
    V_MIN,
    V_EQ,
    V_LT,
    V_GT,
    V_LE,
    V_GE,
    V_AND,
    V_OR,
    V_XOR,
    V_NEG,
    V_ABS,
    V_ID,
    V_FLOOR,
    V_CEIL,
    V_ROUND,
    V_NOT,
    V_SIGN,
    V_SQRT,
    V_RELU
} vop;

static const struct {
    const char *type;
    vop op;
} vops[] = {
    {"Add", V_ADD},           {"Sub", V_SUB},     {"Mul", V_MUL},     {"Div", V_DIV},
    {"Mod", V_MOD},           {"Max", V_MAX},     {"Min", V_MIN},     {"Sum", V_ADD},
    {"Equal", V_EQ},          {"Less", V_LT},     {"Greater", V_GT},  {"LessOrEqual", V_LE},
    {"GreaterOrEqual", V_GE}, {"And", V_AND},     {"Or", V_OR},       {"Xor", V_XOR},
    {"Neg", V_NEG},           {"Abs", V_ABS},     {"Identity", V_ID}, {"Floor", V_FLOOR},
    {"Ceil", V_CEIL},         {"Round", V_ROUND}, {"Not", V_NOT},     {"Sign", V_SIGN},
    {"Sqrt", V_SQRT},         {"Cast", V_ID},     {"CastLike", V_ID}, {"Relu", V_RELU},
};

/* Only consulted when the inputs' contents are known, so a linear search costs nothing. */
static vop find_vop(const char *type)
{
    for (size_t j = 0; j < sizeof vops / sizeof *vops; j++)
        if (strcmp(vops[j].type, type) == 0) return vops[j].op;
    return V_NONE;
}

typedef struct el {
    int64_t i;
    double f;
    bool known;
} el;

static el get_el(const ir_vals *v, int64_t j)
{
    el e = {v->i[j], v->isf ? v->f[j] : (double)v->i[j], v->sym[j] == 0};
    return e;
}

/* Integer arithmetic wraps like the hardware does instead of being undefined. */
static int64_t wrap(uint64_t x)
{
    return (int64_t)x;
}

static bool int_div(vop op, int64_t a, int64_t b, int64_t fmod_attr, int64_t *r)
{
    if (b == 0 || (a == INT64_MIN && b == -1)) return false;
    if (op == V_DIV) {
        *r = a / b; /* truncation, as onnxruntime does for integers */
        return true;
    }
    int64_t m = a % b;
    if (!fmod_attr && m != 0 && ((m < 0) != (b < 0))) m += b; /* sign of the divisor */
    *r = m;
    return true;
}

static bool int_binary(vop op, int64_t a, int64_t b, int64_t fmod_attr, int64_t *r)
{
    switch (op) {
    case V_ADD:
        *r = wrap((uint64_t)a + (uint64_t)b);
        return true;
    case V_SUB:
        *r = wrap((uint64_t)a - (uint64_t)b);
        return true;
    case V_MUL:
        *r = wrap((uint64_t)a * (uint64_t)b);
        return true;
    case V_DIV:
    case V_MOD:
        return int_div(op, a, b, fmod_attr, r);
    case V_MAX:
        *r = a > b ? a : b;
        return true;
    case V_MIN:
        *r = a < b ? a : b;
        return true;
    case V_EQ:
        *r = a == b;
        return true;
    case V_LT:
        *r = a < b;
        return true;
    case V_GT:
        *r = a > b;
        return true;
    case V_LE:
        *r = a <= b;
        return true;
    case V_GE:
        *r = a >= b;
        return true;
    case V_AND:
        *r = a && b;
        return true;
    case V_OR:
        *r = a || b;
        return true;
    case V_XOR:
        *r = !a != !b;
        return true;
    default:
        return false;
    }
}

static bool float_binary(vop op, double a, double b, double *r)
{
    switch (op) {
    case V_ADD:
        *r = a + b;
        return true;
    case V_SUB:
        *r = a - b;
        return true;
    case V_MUL:
        *r = a * b;
        return true;
    case V_DIV:
        *r = a / b;
        return true;
    case V_MOD:
        *r = fmod(a, b);
        return true;
    case V_MAX:
        *r = a > b ? a : b;
        return true;
    case V_MIN:
        *r = a < b ? a : b;
        return true;
    case V_EQ:
        *r = a == b;
        return true;
    case V_LT:
        *r = a < b;
        return true;
    case V_GT:
        *r = a > b;
        return true;
    case V_LE:
        *r = a <= b;
        return true;
    case V_GE:
        *r = a >= b;
        return true;
    default:
        return false;
    }
}

static bool is_compare(vop op)
{
    return op >= V_EQ && op <= V_XOR;
}

/* Stores a result element; float results keep an integer view when it fits. */
static void put_el(ir_vals *o, int64_t j, bool isf, double f, int64_t i)
{
    o->sym[j] = 0;
    if (isf) {
        o->f[j] = f;
        if (f > -9.2e18 && f < 9.2e18)
            o->i[j] = (int64_t)f;
        else
            o->sym[j] = IR_SYM_ANON;
    } else {
        o->i[j] = i;
        o->f[j] = (double)i;
    }
}

static void binary_el(ictx *c, vop op, ir_vals *o, int64_t j, el a, el b, bool in_f)
{
    bool out_f = o->isf;
    int64_t ri = 0;
    double rf = 0;
    bool ok = a.known && b.known;
    if (ok && in_f) {
        ok = float_binary(op, a.f, b.f, &rf);
        ri = (int64_t)(is_compare(op) ? rf : 0);
    } else if (ok) {
        ok = int_binary(op, a.i, b.i, pl_op_attr_int(c->op, "fmod", 0), &ri);
        rf = (double)ri;
    }
    if (!ok) {
        o->sym[j] = IR_SYM_ANON;
        return;
    }
    put_el(o, j, out_f, rf, ri);
}

/* The output record's contents are computable when its shape is fully known and small and
 * every input's contents are known (elements may still be unknown). */
static bool vals_target(ictx *c, ir_out *o, int n_inputs, const ir_vals **v, ir_shape *s)
{
    int64_t n = ir_prod(o->s.d, o->s.rank);
    if (o->s.rank < 0 || n < 0 || n > IR_MAXVALS) return false;
    for (int k = 0; k < n_inputs; k++) {
        v[k] = ir_in_vals(c, k);
        if (!v[k] || !ir_in_shape(c, k, &s[k]) || ir_prod(s[k].d, s[k].rank) != v[k]->n)
            return false;
    }
    o->v.n = (int)n;
    o->v.isf = ir_is_float(o->dtype);
    return true;
}

static void binary_vals(ictx *c, vop op)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v[2];
    ir_shape s[2];
    if (c->n_in != 2 || !o || !vals_target(c, o, 2, v, s)) return;
    bool in_f = v[0]->isf || v[1]->isf;
    for (int64_t j = 0; j < o->v.n; j++) {
        el a = get_el(v[0], ir_bcast_index(&o->s, &s[0], j));
        el b = get_el(v[1], ir_bcast_index(&o->s, &s[1], j));
        binary_el(c, op, &o->v, j, a, b, in_f);
    }
}

static bool unary_el(vop op, el a, bool isf, double *rf, int64_t *ri)
{
    double f = a.f;
    int64_t i = a.i;
    switch (op) {
    case V_NEG:
        f = -f, i = wrap(-(uint64_t)i);
        break;
    case V_ABS:
        f = fabs(f), i = i < 0 ? wrap(-(uint64_t)i) : i;
        break;
    case V_ID:
        break;
    case V_FLOOR:
        f = floor(f);
        break;
    case V_CEIL:
        f = ceil(f);
        break;
    case V_ROUND:
        f = nearbyint(f);
        break; /* halves to even, as ONNX says */
    case V_NOT:
        i = !i, f = !f;
        break;
    case V_SIGN:
        f = (f > 0) - (f < 0), i = (i > 0) - (i < 0);
        break;
    case V_SQRT:
        f = sqrt(f);
        break;
    case V_RELU: /* max(x, 0): the ONNX Range function clamps its trip count with it */
        f = f < 0 ? 0 : f, i = i < 0 ? 0 : i;
        break;
    default:
        return false;
    }
    *rf = f;
    *ri = isf ? 0 : i;
    return true;
}

/* Unary ops and Cast: the input element converted to the output's type. */
static void unary_vals(ictx *c, vop op)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v[1];
    ir_shape s[1];
    if (!o || op == V_NONE || !vals_target(c, o, 1, v, s) || o->v.n != v[0]->n) {
        if (o) o->v.n = -1;
        return;
    }
    for (int64_t j = 0; j < o->v.n; j++) {
        el a = get_el(v[0], j);
        double rf;
        int64_t ri;
        if (!a.known || !unary_el(op, a, v[0]->isf, &rf, &ri)) {
            /* an unknown element stays the same unknown only through a copy */
            o->v.sym[j] = !a.known && op == V_ID ? v[0]->sym[j] : IR_SYM_ANON;
            continue;
        }
        if (o->dtype == PL_DT_BOOL)
            put_el(&o->v, j, false, 0, v[0]->isf ? rf != 0 : ri != 0);
        else if (o->v.isf)
            put_el(&o->v, j, true, v[0]->isf ? rf : (double)ri, 0);
        else if (v[0]->isf && !(rf > -9.2e18 && rf < 9.2e18))
            o->v.sym[j] = IR_SYM_ANON;
        else
            put_el(&o->v, j, false, 0, v[0]->isf ? (int64_t)rf : ri);
    }
}

/* ---- shape rules ---- */

static void bcast_to(ictx *c, int dtype, int first, int n)
{
    ir_shape acc = {.rank = 0}, s;
    for (int k = first; k < first + n && k < c->n_in; k++) {
        if (!ir_in(c, k)) continue;
        ir_in_shape(c, k, &s);
        ir_broadcast(&acc, &s);
    }
    ir_set(c, 0, dtype, &acc);
}

/* Arithmetic: the broadcast of every input, with input 0's type. */
static void sh_bcast(ictx *c)
{
    bcast_to(c, ir_in_dtype(c, 0), 0, c->n_in);
    if (ir_in_vals(c, 0) && ir_in_vals(c, 1)) binary_vals(c, find_vop(c->op->type));
}

/* Comparisons and logic: broadcast, bool. */
static void sh_compare(ictx *c)
{
    bcast_to(c, PL_DT_BOOL, 0, c->n_in);
    if (ir_in_vals(c, 0) && ir_in_vals(c, 1)) binary_vals(c, find_vop(c->op->type));
}

/* Where(cond, x, y): torch exports choose Reshape targets with it, so contents matter. */
static void where_vals(ictx *c)
{
    ir_out *o = ir_o(c, 0);
    const ir_vals *v[3];
    ir_shape s[3];
    if (!o || !vals_target(c, o, 3, v, s)) return;
    for (int64_t j = 0; j < o->v.n; j++) {
        el cond = get_el(v[0], ir_bcast_index(&o->s, &s[0], j));
        int pick = cond.i ? 1 : 2;
        int64_t src = ir_bcast_index(&o->s, &s[pick], j);
        el x = get_el(v[pick], src);
        if (!cond.known || !x.known)
            o->v.sym[j] = cond.known ? v[pick]->sym[src] : IR_SYM_ANON;
        else
            put_el(&o->v, j, o->v.isf, x.f, x.i);
    }
}

static void sh_where(ictx *c)
{
    bcast_to(c, ir_in_dtype(c, 1), 0, 3);
    where_vals(c);
}

static void sh_unary(ictx *c)
{
    ir_set_like(c, 0, 0, 0);
    if (ir_in_vals(c, 0)) unary_vals(c, find_vop(c->op->type));
}

static void sh_unary_bool(ictx *c)
{
    ir_set_like(c, 0, 0, PL_DT_BOOL);
    if (ir_in_vals(c, 0)) unary_vals(c, find_vop(c->op->type));
}

static void sh_cast(ictx *c)
{
    int to = (int)pl_op_attr_int(c->op, "to", PL_DT_UNDEFINED);
    if (strcmp(c->op->type, "CastLike") == 0) to = ir_in_dtype(c, 1);
    ir_set_like(c, 0, 0, to);
    if (to != PL_DT_UNDEFINED && to != PL_DT_STRING) unary_vals(c, V_ID);
}

/* Dropout: the data, and a bool mask of the same shape. */
static void sh_dropout(ictx *c)
{
    ir_set_like(c, 0, 0, 0);
    ir_set_like(c, 1, 0, PL_DT_BOOL);
}

/* BatchNormalization: Y like X; training outputs (running or saved mean and variance) are
 * per channel. */
static void sh_batchnorm(ictx *c)
{
    ir_set_like(c, 0, 0, 0);
    ir_shape x, ch = {.rank = 1, .d = {PL_DIM_UNKNOWN}};
    if (ir_in_shape(c, 0, &x) && x.rank >= 2) ch.d[0] = x.d[1];
    if (ch.d[0] < 0 && ir_in_rank(c, 1) == 1) ch.d[0] = ir_in(c, 1)->dims[0];
    int dt = ir_in_dtype(c, 3) ? ir_in_dtype(c, 3) : ir_in_dtype(c, 0);
    for (int k = 1; k < c->op->n_outputs; k++)
        ir_set(c, k, dt, &ch);
}

/* LayerNormalization: Y like X; Mean and InvStdDev keep the leading dims, 1 elsewhere. */
static void sh_layernorm(ictx *c)
{
    ir_set_like(c, 0, 0, 0);
    ir_shape x;
    if (!ir_in_shape(c, 0, &x)) {
        ir_set_unknown(c, 1, PL_DT_FLOAT), ir_set_unknown(c, 2, PL_DT_FLOAT);
        return;
    }
    int axis = ir_axis(pl_op_attr_int(c->op, "axis", -1), x.rank);
    for (int d = axis < 0 ? x.rank : axis; d < x.rank; d++)
        x.d[d] = 1;
    int dt = (int)pl_op_attr_int(c->op, "stash_type", PL_DT_FLOAT);
    ir_set(c, 1, dt, &x);
    ir_set(c, 2, dt, &x);
}

/* QuantizeLinear's output type is its zero point's (uint8 without one). */
static void sh_quantize(ictx *c)
{
    int dt = ir_in_dtype(c, 2) ? ir_in_dtype(c, 2) : PL_DT_UINT8;
    int attr = (int)pl_op_attr_int(c->op, "output_dtype", 0); /* opset 21 */
    ir_set_like(c, 0, 0, attr ? attr : dt);
}

static void sh_dequantize(ictx *c)
{
    ir_set_like(c, 0, 0, ir_in_dtype(c, 1) ? ir_in_dtype(c, 1) : PL_DT_FLOAT);
}

static void sh_dynquant(ictx *c)
{
    ir_shape scalar = {.rank = 0};
    ir_set_like(c, 0, 0, PL_DT_UINT8);
    ir_set(c, 1, PL_DT_FLOAT, &scalar);
    ir_set(c, 2, PL_DT_UINT8, &scalar);
}

/* SkipLayerNormalization (com.microsoft): output like input; the optional mean, inverse
 * standard deviation and sum outputs are left to the file. */
static void sh_skipln(ictx *c)
{
    ir_set_like(c, 0, 0, 0);
    ir_set_like(c, 3, 0, 0);
}

/* ---- FLOP rules ---- */

/* Mean: (n - 1) additions and one division per element. */
static double fl_mean(const ictx *c)
{
    int n = 0;
    for (int k = 0; k < c->n_in; k++)
        n += ir_in(c, k) != NULL;
    return ir_numel_out(c, 0) * (n > 1 ? n : 1);
}

/* LRN: a sum of `size` squares (2 each) plus scale, power and divide (6). */
static double fl_lrn(const ictx *c)
{
    return ir_numel_out(c, 0) * (2.0 * (double)pl_op_attr_int(c->op, "size", 1) + 6);
}

#define EW PL_CLASS_ELEMENTWISE
#define DM PL_CLASS_DATA_MOVEMENT
#define RED PL_CLASS_REDUCTION
#define MS "com.microsoft"

/* FLOPs per element: 1 for one arithmetic operation; 4 for one transcendental function
 * (exp, log, erf, sin, ...); composite activations add up their parts (docs/shapes.md). */
const ir_rule ir_rules_elem[] = {
    /* broadcasting arithmetic */
    {"Add", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Sub", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Mul", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Div", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Pow", EW, sh_bcast, ir_flops_variadic, 9, NULL, NULL},
    {"Mod", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Max", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Min", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Sum", EW, sh_bcast, ir_flops_variadic, 1, NULL, NULL},
    {"Mean", EW, sh_bcast, fl_mean, 1, NULL, NULL},
    /* PRelu: X's shape (old opsets: per channel) */
    {"PRelu", EW, sh_unary, ir_flops_out_k, 2, NULL, NULL},
    {"BitShift", EW, sh_bcast, ir_flops_out_k, 1, NULL, NULL},
    {"BitwiseAnd", EW, sh_bcast, ir_flops_out_k, 1, NULL, NULL},
    {"BitwiseOr", EW, sh_bcast, ir_flops_out_k, 1, NULL, NULL},
    {"BitwiseXor", EW, sh_bcast, ir_flops_out_k, 1, NULL, NULL},
    {"Equal", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"Less", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"Greater", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"LessOrEqual", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"GreaterOrEqual", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"And", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"Or", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"Xor", EW, sh_compare, ir_flops_out_k, 1, NULL, NULL},
    {"Where", EW, sh_where, ir_flops_out_k, 1, NULL, NULL},
    /* unary */
    {"Relu", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Neg", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Abs", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Sign", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Floor", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Ceil", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Round", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Reciprocal", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Sqrt", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"BitwiseNot", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"Not", EW, sh_unary_bool, ir_flops_out_k, 1, NULL, NULL},
    {"IsNaN", EW, sh_unary_bool, ir_flops_out_k, 1, NULL, NULL},
    {"IsInf", EW, sh_unary_bool, ir_flops_out_k, 1, NULL, NULL},
    {"ThresholdedRelu", EW, sh_unary, ir_flops_out_k, 1, NULL, NULL},
    {"LeakyRelu", EW, sh_unary, ir_flops_out_k, 2, NULL, NULL},
    {"Clip", EW, sh_unary, ir_flops_out_k, 2, NULL, NULL},
    {"Shrink", EW, sh_unary, ir_flops_out_k, 2, NULL, NULL},
    {"HardSigmoid", EW, sh_unary, ir_flops_out_k, 3, NULL, NULL},
    {"Softsign", EW, sh_unary, ir_flops_out_k, 3, NULL, NULL},
    {"HardSwish", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Exp", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Log", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Erf", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Sin", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Cos", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Tan", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Asin", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Acos", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Atan", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Sinh", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Cosh", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Asinh", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Acosh", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Atanh", EW, sh_unary, ir_flops_out_k, 4, NULL, NULL},
    {"Sigmoid", EW, sh_unary, ir_flops_out_k, 6, NULL, NULL},
    {"Tanh", EW, sh_unary, ir_flops_out_k, 6, NULL, NULL},
    {"Elu", EW, sh_unary, ir_flops_out_k, 6, NULL, NULL},
    {"Selu", EW, sh_unary, ir_flops_out_k, 7, NULL, NULL},
    {"Celu", EW, sh_unary, ir_flops_out_k, 7, NULL, NULL},
    {"Gelu", EW, sh_unary, ir_flops_out_k, 8, NULL, NULL},
    {"Softplus", EW, sh_unary, ir_flops_out_k, 9, NULL, NULL},
    {"Mish", EW, sh_unary, ir_flops_out_k, 16, NULL, NULL},
    /* conversions and copies */
    {"Identity", DM, sh_unary, NULL, 0, NULL, ir_bytes_view},
    {"Dropout", DM, sh_dropout, NULL, 0, NULL, NULL},
    {"Cast", DM, sh_cast, NULL, 0, NULL, NULL},
    {"CastLike", DM, sh_cast, NULL, 0, NULL, NULL},
    {"QuantizeLinear", EW, sh_quantize, ir_flops_out_k, 2, NULL, NULL},
    {"DequantizeLinear", EW, sh_dequantize, ir_flops_out_k, 2, NULL, NULL},
    {"DynamicQuantizeLinear", EW, sh_dynquant, ir_flops_out_k, 4, NULL, NULL},
    /* normalisations: elementwise class (graph.h), a few FLOPs per element */
    {"BatchNormalization", EW, sh_batchnorm, ir_flops_out_k, 2, NULL, NULL},
    {"InstanceNormalization", EW, sh_unary, ir_flops_out_k, 8, NULL, NULL},
    {"LayerNormalization", EW, sh_layernorm, ir_flops_out_k, 8, NULL, NULL},
    {"GroupNormalization", EW, sh_unary, ir_flops_out_k, 8, NULL, NULL},
    {"MeanVarianceNormalization", EW, sh_unary, ir_flops_out_k, 8, NULL, NULL},
    {"LpNormalization", EW, sh_unary, ir_flops_out_k, 3, NULL, NULL},
    {"LRN", EW, sh_unary, fl_lrn, 0, NULL, NULL},
    /* softmax family: a reduction along an axis */
    {"Softmax", RED, sh_unary, ir_flops_out_k, 5, NULL, NULL},
    {"LogSoftmax", RED, sh_unary, ir_flops_out_k, 5, NULL, NULL},
    {"Hardmax", RED, sh_unary, ir_flops_out_k, 2, NULL, NULL},
    /* com.microsoft fusions that onnxruntime's optimiser writes into saved models */
    {"Gelu", EW, sh_unary, ir_flops_out_k, 8, MS, NULL},
    {"FastGelu", EW, sh_unary, ir_flops_out_k, 8, MS, NULL},
    {"QuickGelu", EW, sh_unary, ir_flops_out_k, 7, MS, NULL},
    {"BiasGelu", EW, sh_bcast, ir_flops_out_k, 9, MS, NULL},
    {"SkipLayerNormalization", EW, sh_skipln, ir_flops_out_k, 10, MS, NULL},
};
const int ir_n_rules_elem = sizeof ir_rules_elem / sizeof *ir_rules_elem;
