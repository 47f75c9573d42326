/* test_learn.c: the neural-network core: hand-computed values of the ops, every op's and
 * layer's gradient against central finite differences, Adam and clipping by hand, a tiny
 * regression that Adam must fit, determinism, and the weights file. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "placer/learn.h"

/* ---- the finite-difference checker ---- */

/* Builds the loss (a 1x1 node) on t from the parameters in ctx. */
typedef int (*build_fn)(pl_tape *t, void *ctx);

/* sum(y * R) for a fixed random R of y's shape (the same R on every call: seeded by `seed`),
 * so each element of y reaches the loss with its own weight. */
static int weigh(pl_tape *t, int y, uint64_t seed)
{
    int n = pl_t_rows(t, y) * pl_t_cols(t, y);
    float *r = malloc((size_t)n * sizeof(float));
    for (int k = 0; k < n; k++)
        r[k] = (float)(2 * pl_rng_uniform(&seed) - 1);
    int R = pl_t_input(t, pl_t_rows(t, y), pl_t_cols(t, y), r);
    free(r);
    return pl_t_sum(t, pl_t_mul(t, y, R));
}

static float loss_of(pl_tape *t, build_fn f, void *ctx)
{
    pl_tape_reset(t);
    return pl_t_scalar(t, f(t, ctx));
}

/* Compares each parameter's backward gradient with (L(w+h) - L(w-h)) / 2h, h = 1e-3, in
 * float: within 1e-2 relative plus 2e-3 absolute (the float rounding of L over 2h). Also
 * fails when every gradient is ~0, which would make the comparison vacuous. */
static void check_grads(pl_params *s, build_fn f, void *ctx)
{
    const float h = 1e-3f;
    pl_tape *t = pl_tape_new();
    pl_params_zero_grad(s);
    pl_tape_backward(t, f(t, ctx));
    double biggest = 0;
    for (int i = 0; i < s->n; i++) {
        pl_param *p = s->p[i];
        for (int k = 0; k < p->rows * p->cols; k++) {
            float w = p->w[k];
            p->w[k] = w + h;
            float lp = loss_of(t, f, ctx);
            p->w[k] = w - h;
            float lm = loss_of(t, f, ctx);
            p->w[k] = w;
            double num = ((double)lp - lm) / (2 * h), an = p->g[k];
            double m = fabs(num) > fabs(an) ? fabs(num) : fabs(an);
            if (m > biggest) biggest = m;
            if (fabs(num - an) > 1e-2 * m + 2e-3)
                fail_msg("%s[%d]: backward %.6g, finite difference %.6g", p->name, k, an, num);
        }
    }
    pl_tape_free(t);
    if (biggest < 1e-2) fail_msg("every gradient is ~0 (largest %g)", biggest);
}

/* A parameter of random values in [-1, 1], kept at least 0.05 from zero (relu's kink). */
static pl_param *rand_param(pl_params *s, const char *name, int rows, int cols, uint64_t *rng)
{
    pl_param *p = pl_params_add(s, name, rows, cols);
    for (int k = 0; k < rows * cols; k++) {
        float x = (float)(2 * pl_rng_uniform(rng) - 1);
        p->w[k] = x < 0 ? x - 0.05f : x + 0.05f;
    }
    return p;
}

/* ---- hand-computed values ---- */

static void test_values(void **state)
{
    (void)state;
    pl_tape *t = pl_tape_new();
    /* [1 2; 3 4] [1; -1] = [-1; -1] */
    float a[] = {1, 2, 3, 4}, b[] = {1, -1};
    int y = pl_t_matmul(t, pl_t_input(t, 2, 2, a), pl_t_input(t, 2, 1, b));
    assert_true(pl_t_value(t, y)[0] == -1 && pl_t_value(t, y)[1] == -1);
    /* softmax [0, ln 3] = [1/4, 3/4]; cross-entropy of index 1 = -ln(3/4) */
    float l[] = {0, logf(3)};
    int x = pl_t_input(t, 1, 2, l), sm = pl_t_softmax(t, x), tgt = 1;
    assert_close(pl_t_value(t, sm)[0], 0.25, 1e-6);
    assert_close(pl_t_value(t, sm)[1], 0.75, 1e-6);
    assert_close(pl_t_scalar(t, pl_t_cross_entropy(t, x, &tgt)), -log(0.75), 1e-6);
    assert_close(pl_t_value(t, pl_t_log_softmax(t, x))[0], log(0.25), 1e-6);
    /* softmax of [1000, 1000] does not overflow */
    float big[] = {1000, 1000};
    assert_close(pl_t_value(t, pl_t_softmax(t, pl_t_input(t, 1, 2, big)))[0], 0.5, 1e-6);
    /* a bias row-broadcast: [1 2; 3 4] + [10 20] */
    float bias[] = {10, 20};
    int s = pl_t_add(t, pl_t_input(t, 2, 2, a), pl_t_input(t, 1, 2, bias));
    assert_true(pl_t_value(t, s)[0] == 11 && pl_t_value(t, s)[3] == 24);
    /* segments {0,1}, {}, {2}: seg_sum rows [1 2]+[3 4], 0, [5 6] */
    float e[] = {1, 2, 3, 4, 5, 6};
    int ptr[] = {0, 2, 2, 3}, ss = pl_t_seg_sum(t, pl_t_input(t, 3, 2, e), 3, ptr);
    const float *v = pl_t_value(t, ss);
    assert_true(v[0] == 4 && v[1] == 6 && v[2] == 0 && v[3] == 0 && v[4] == 5 && v[5] == 6);
    pl_tape_free(t);
}

/* ---- every op's gradient ---- */

typedef struct opctx {
    pl_param *a, *b, *c;
    int which; /* the variant under test */
} opctx;

static int build_matmul(pl_tape *t, void *v)
{
    opctx *o = v;
    return weigh(t, pl_t_matmul(t, pl_t_param(t, o->a), pl_t_param(t, o->b)), 1);
}

static void test_grad_matmul(void **state)
{
    (void)state;
    uint64_t rng = 1;
    pl_params s;
    pl_params_init(&s);
    opctx o = {rand_param(&s, "a", 3, 4, &rng), rand_param(&s, "b", 4, 2, &rng), NULL, 0};
    check_grads(&s, build_matmul, &o);
    pl_params_free(&s);
}

static int build_binary(pl_tape *t, void *v)
{
    opctx *o = v;
    int a = pl_t_param(t, o->a), b = pl_t_param(t, o->b);
    return weigh(t, o->which ? pl_t_mul(t, a, b) : pl_t_add(t, a, b), 2);
}

/* add and mul with b the same shape, a row [1,c], a column [r,1] and a scalar [1,1] */
static void test_grad_add_mul(void **state)
{
    (void)state;
    int shapes[4][2] = {{3, 4}, {1, 4}, {3, 1}, {1, 1}};
    for (int which = 0; which < 2; which++)
        for (int k = 0; k < 4; k++) {
            uint64_t rng = 10 + k;
            pl_params s;
            pl_params_init(&s);
            opctx o = {rand_param(&s, "a", 3, 4, &rng),
                       rand_param(&s, "b", shapes[k][0], shapes[k][1], &rng), NULL, which};
            check_grads(&s, build_binary, &o);
            pl_params_free(&s);
        }
}

/* 0 scale, 1 tanh, 2 sigmoid, 3 relu, 4 leaky relu, 5 transpose, 6 softmax, 7 log-softmax,
 * 8 slice rows, 9 slice cols, 10 gather, 11 mean of a*a, 12 pick of log-softmax,
 * 13 cross-entropy, 14 seg_softmax of a column, 15 seg_sum */
static int build_unary(pl_tape *t, void *v)
{
    opctx *o = v;
    int a = pl_t_param(t, o->a), idx[] = {2, 0, 2, 1}, tg[] = {1, 3, 0};
    int ptr[] = {0, 2, 2, 3};
    switch (o->which) {
    case 0:
        return weigh(t, pl_t_scale(t, a, -2.5f), 3);
    case 1:
        return weigh(t, pl_t_tanh(t, a), 3);
    case 2:
        return weigh(t, pl_t_sigmoid(t, a), 3);
    case 3:
        return weigh(t, pl_t_relu(t, a), 3);
    case 4:
        return weigh(t, pl_t_leaky_relu(t, a, 0.2f), 3);
    case 5:
        return weigh(t, pl_t_transpose(t, a), 3);
    case 6:
        return weigh(t, pl_t_softmax(t, a), 3);
    case 7:
        return weigh(t, pl_t_log_softmax(t, a), 3);
    case 8:
        return weigh(t, pl_t_slice_rows(t, a, 1, 2), 3);
    case 9:
        return weigh(t, pl_t_slice_cols(t, a, 1, 2), 3);
    case 10:
        return weigh(t, pl_t_gather(t, a, 4, idx), 3);
    case 11:
        return pl_t_mean(t, pl_t_mul(t, a, a));
    case 12:
        return weigh(t, pl_t_pick(t, pl_t_log_softmax(t, a), tg), 3);
    case 13:
        return pl_t_cross_entropy(t, a, tg);
    case 14:
        return weigh(t, pl_t_seg_softmax(t, pl_t_slice_cols(t, a, 0, 1), 3, ptr), 3);
    default:
        return weigh(t, pl_t_seg_sum(t, a, 3, ptr), 3);
    }
}

static void test_grad_unary(void **state)
{
    (void)state;
    for (int which = 0; which <= 15; which++) {
        uint64_t rng = 100 + which;
        pl_params s;
        pl_params_init(&s);
        opctx o = {rand_param(&s, "a", 3, 4, &rng), NULL, NULL, which};
        check_grads(&s, build_unary, &o);
        pl_params_free(&s);
    }
}

static int build_concat(pl_tape *t, void *v)
{
    opctx *o = v;
    int xs[3] = {pl_t_param(t, o->a), pl_t_param(t, o->b), pl_t_param(t, o->c)};
    if (o->which) {
        int ys[3] = {pl_t_transpose(t, xs[0]), pl_t_transpose(t, xs[1]), pl_t_transpose(t, xs[2])};
        return weigh(t, pl_t_concat_rows(t, 3, ys), 4);
    }
    return weigh(t, pl_t_concat_cols(t, 3, xs), 4);
}

static void test_grad_concat(void **state)
{
    (void)state;
    for (int which = 0; which < 2; which++) {
        uint64_t rng = 7;
        pl_params s;
        pl_params_init(&s);
        opctx o = {rand_param(&s, "a", 2, 1, &rng), rand_param(&s, "b", 2, 3, &rng),
                   rand_param(&s, "c", 2, 2, &rng), which};
        check_grads(&s, build_concat, &o);
        pl_params_free(&s);
    }
}

/* ---- layers ---- */

typedef struct layerctx {
    pl_param *x; /* an input sequence, as a parameter so its gradient is checked too */
    pl_dense d;
    pl_lstm l;
    pl_attn at;
    pl_gat g;
    pl_gat_edges e[2];
} layerctx;

static int build_dense(pl_tape *t, void *v)
{
    layerctx *c = v;
    return weigh(t, pl_t_tanh(t, pl_dense_apply(t, &c->d, pl_t_param(t, c->x))), 5);
}

static void test_grad_dense(void **state)
{
    (void)state;
    uint64_t rng = 3;
    pl_params s;
    pl_params_init(&s);
    layerctx c = {.x = rand_param(&s, "x", 3, 4, &rng)};
    pl_dense_init(&c.d, &s, "d", 4, 2, &rng);
    pl_param_xavier(c.d.b, &rng); /* a zero bias would hide a wrong bias gradient's scale */
    check_grads(&s, build_dense, &c);
    pl_params_free(&s);
}

/* Three steps from zero state over the rows of x; the loss weighs every h and the last c. */
static int build_lstm(pl_tape *t, void *v)
{
    layerctx *c = v;
    int X = pl_t_param(t, c->x), h = pl_t_input(t, 1, 3, NULL), cc = pl_t_input(t, 1, 3, NULL);
    int hs[3];
    for (int k = 0; k < 3; k++) {
        pl_lstm_step(t, &c->l, pl_t_slice_rows(t, X, k, 1), h, cc, &h, &cc);
        hs[k] = h;
    }
    int all[2] = {pl_t_concat_rows(t, 3, hs), pl_t_concat_rows(t, 1, &cc)};
    return weigh(t, pl_t_concat_rows(t, 2, all), 6);
}

static void test_grad_lstm(void **state)
{
    (void)state;
    uint64_t rng = 4;
    pl_params s;
    pl_params_init(&s);
    layerctx c = {.x = rand_param(&s, "x", 3, 2, &rng)};
    pl_lstm_init(&c.l, &s, "lstm", 2, 3, &rng);
    pl_param_xavier(c.l.b, &rng);
    check_grads(&s, build_lstm, &c);
    pl_params_free(&s);
}

/* Encoder states x[4,3], decoder state = tanh of x's first row, two decoder steps sharing
 * keys; the loss weighs both contexts and the scores. */
static int build_attn(pl_tape *t, void *v)
{
    layerctx *c = v;
    int H = pl_t_param(t, c->x), keys = pl_attn_keys(t, &c->at, H), score, ctx[3];
    int s0 = pl_t_tanh(t, pl_t_slice_cols(t, pl_t_slice_rows(t, H, 0, 1), 0, 2));
    ctx[0] = pl_attn_apply(t, &c->at, keys, H, s0, NULL, &score);
    int s1 = pl_t_slice_cols(t, ctx[0], 1, 2);
    ctx[1] = pl_attn_apply(t, &c->at, keys, H, s1, &ctx[2], NULL);
    int z[3] = {ctx[0], ctx[1], pl_t_concat_cols(t, 2, (int[]){score, ctx[2]})};
    return weigh(t, pl_t_concat_cols(t, 3, z), 7);
}

static void test_grad_attention(void **state)
{
    (void)state;
    uint64_t rng = 5;
    pl_params s;
    pl_params_init(&s);
    layerctx c = {.x = rand_param(&s, "x", 4, 3, &rng)};
    pl_attn_init(&c.at, &s, "att", 3, 2, 5, &rng);
    check_grads(&s, build_attn, &c);
    /* the attention weights sum to 1 */
    pl_tape *t = pl_tape_new();
    int H = pl_t_param(t, c.x), alpha, s0 = pl_t_slice_cols(t, pl_t_slice_rows(t, H, 0, 1), 0, 2);
    pl_attn_apply(t, &c.at, pl_attn_keys(t, &c.at, H), H, s0, &alpha, NULL);
    assert_int_equal(pl_t_cols(t, alpha), 4);
    assert_close(pl_t_scalar(t, pl_t_sum(t, alpha)), 1, 1e-6);
    pl_tape_free(t);
    pl_params_free(&s);
}

static int build_gat(pl_tape *t, void *v)
{
    layerctx *c = v;
    return weigh(t, pl_t_tanh(t, pl_gat_apply(t, &c->g, pl_t_param(t, c->x), 4, c->e)), 8);
}

/* 4 nodes. Type 0 (with 2 edge features): 1->0, 2->0, 3->0, 0->1, 3->2 (node 3 has none).
 * Type 1: 0->3, 1->3, 2->2 (nodes 0 and 1 have none). */
static void test_grad_gat(void **state)
{
    (void)state;
    static const int ptr0[] = {0, 3, 4, 5, 5}, src0[] = {1, 2, 3, 0, 3};
    static const int ptr1[] = {0, 0, 0, 1, 3}, src1[] = {2, 0, 1};
    static const float f0[] = {0.5f, -1, 1, 0.25f, -0.5f, 0.75f, 0.1f, 0.9f, -0.3f, 0.2f};
    static const float f1[] = {1, 0, 0, 1, -1, 1};
    for (int edge_dim = 0; edge_dim <= 2; edge_dim += 2) {
        uint64_t rng = 6;
        pl_params s;
        pl_params_init(&s);
        layerctx c = {.x = rand_param(&s, "x", 4, 3, &rng)};
        pl_gat_init(&c.g, &s, "gat", 2, 3, 2, edge_dim, &rng);
        pl_param_fill(c.g.gamma[1], 0.5f);
        c.e[0] = (pl_gat_edges){5, ptr0, src0, f0};
        c.e[1] = (pl_gat_edges){3, ptr1, src1, f1};
        check_grads(&s, build_gat, &c);
        pl_gat_free(&c.g);
        pl_params_free(&s);
    }
}

/* The output of a one-type GAT layer (in = out = 2, no edge features) with weights W, a
 * (NULL: as initialised) and gamma, on n nodes H[n,2] and the edges ptr/src, into out. */
static void gat_once(const float *W, const float *a, float gamma, int n, const float *H,
                     const int *ptr, const int *src, float *out)
{
    uint64_t rng = 9;
    pl_params s;
    pl_params_init(&s);
    pl_gat g;
    pl_gat_init(&g, &s, "gat", 1, 2, 2, 0, &rng);
    memcpy(g.W[0]->w, W, 4 * sizeof(float));
    if (a) memcpy(g.a[0]->w, a, 4 * sizeof(float));
    pl_param_fill(g.gamma[0], gamma);
    pl_gat_edges e = {ptr[n], ptr, src, NULL};
    pl_tape *t = pl_tape_new();
    memcpy(out, pl_t_value(t, pl_gat_apply(t, &g, pl_t_input(t, n, 2, H), n, &e)),
           (size_t)n * 2 * sizeof(float));
    pl_tape_free(t);
    pl_gat_free(&g);
    pl_params_free(&s);
}

static void test_gat_values(void **state)
{
    (void)state;
    /* A node with one incoming edge gets exactly gamma * h_src W (its softmax is 1): node 0
     * has no edge -> 0; node 1 hears node 0: 2 * [5 -1] [1 2; 3 4] = 2 * [2 6]. */
    float W[] = {1, 2, 3, 4}, H[] = {5, -1, 1, 1}, v[6];
    int ptr[] = {0, 0, 1}, src[] = {0};
    gat_once(W, NULL, 2, 2, H, ptr, src, v);
    assert_true(v[0] == 0 && v[1] == 0 && v[2] == 4 && v[3] == 12);
    /* Node 0 hears nodes 1 and 2 (W = I, a = [1 0 | 0 0]: the logit is LeakyReLU of the
     * source's first feature): z1 = [1 0], z2 = [-1 2], logits 1 and -0.2, so
     * m(0) = s1 z1 + s2 z2 with s = softmax([1, -0.2]). */
    float I[] = {1, 0, 0, 1}, a[] = {1, 0, 0, 0}, H3[] = {0, 0, 1, 0, -1, 2};
    int ptr3[] = {0, 2, 2, 2}, src3[] = {1, 2};
    gat_once(I, a, 1, 3, H3, ptr3, src3, v);
    double s1 = 1 / (1 + exp(-1.2)), s2 = 1 - s1;
    assert_close(v[0], s1 - s2, 1e-5);
    assert_close(v[1], 2 * s2, 1e-5);
}

/* One LSTM step by hand: hid = in = 1, W = 0, so the gates are their biases: the forget
 * bias starts at 1 (init) and the cell bias is set to 0.5; i = o = sigmoid(0) = 1/2,
 * f = sigmoid(1), g = tanh(0.5); from c = 1: c' = f + g/2, h' = tanh(c')/2. */
static void test_lstm_values(void **state)
{
    (void)state;
    uint64_t rng = 1;
    pl_params s;
    pl_params_init(&s);
    pl_lstm l;
    pl_lstm_init(&l, &s, "l", 1, 1, &rng);
    assert_true(l.b->w[0] == 0 && l.b->w[1] == 1 && l.b->w[2] == 0 && l.b->w[3] == 0);
    pl_param_fill(l.W, 0);
    l.b->w[2] = 0.5f;
    pl_tape *t = pl_tape_new();
    float one = 1;
    int h, c;
    pl_lstm_step(t, &l, pl_t_input(t, 1, 1, &one), pl_t_input(t, 1, 1, NULL),
                 pl_t_input(t, 1, 1, &one), &h, &c);
    double c2 = 1 / (1 + exp(-1.0)) + tanh(0.5) / 2;
    assert_close(pl_t_scalar(t, c), c2, 1e-6);
    assert_close(pl_t_scalar(t, h), tanh(c2) / 2, 1e-6);
    pl_tape_free(t);
    pl_params_free(&s);
}

/* ---- optimiser ---- */

static void test_adam_and_clip_by_hand(void **state)
{
    (void)state;
    pl_params s;
    pl_params_init(&s);
    pl_param *p = pl_params_add(&s, "p", 1, 2);
    p->w[0] = 1;
    p->w[1] = 1;
    p->g[0] = 3;
    p->g[1] = 4;
    /* norm 5 clipped to 1: g = [0.6, 0.8] */
    assert_close(pl_params_clip(&s, 1), 5, 1e-12);
    assert_close(p->g[0], 0.6, 1e-6);
    assert_close(p->g[1], 0.8, 1e-6);
    assert_close(pl_params_clip(&s, 10), 1, 1e-6); /* below: unchanged */
    assert_close(p->g[0], 0.6, 1e-6);
    /* first Adam step: m^ = g, v^ = g^2, so w -= lr * g / (|g| + eps) = lr * sign(g) */
    pl_adam a = pl_adam_default(0.1f);
    pl_adam_step(&a, &s);
    assert_close(p->w[0], 0.9, 1e-6);
    assert_close(p->w[1], 0.9, 1e-6);
    /* second step with g = 0: m = 0.9*0.6*0.1... m^ = 0.054/0.19, v^ = 0.00036*0.999/0.001999 */
    pl_params_zero_grad(&s);
    pl_adam_step(&a, &s);
    double m = 0.9 * 0.1 * 0.6 / (1 - 0.81), v = 0.999 * 0.001 * 0.36 / (1 - 0.999 * 0.999);
    assert_close(p->w[0], 0.9 - 0.1 * m / (sqrt(v) + 1e-8), 1e-5);
    pl_params_free(&s);
}

typedef struct regctx {
    pl_dense d;
    float x[32], y[16];
} regctx;

/* mean squared error of a Dense 2->1 on 16 points of y = 2 x0 - 3 x1 + 0.5 */
static int build_reg(pl_tape *t, void *v)
{
    regctx *c = v;
    int pred = pl_dense_apply(t, &c->d, pl_t_input(t, 16, 2, c->x));
    int err = pl_t_add(t, pred, pl_t_scale(t, pl_t_input(t, 16, 1, c->y), -1));
    return pl_t_mean(t, pl_t_mul(t, err, err));
}

/* Trains `steps` Adam steps from seed; returns the last loss; weights left in s. */
static float train_reg(pl_params *s, regctx *c, uint64_t seed, int steps)
{
    uint64_t rng = seed;
    pl_dense_init(&c->d, s, "reg", 2, 1, &rng);
    for (int i = 0; i < 16; i++) {
        c->x[2 * i] = (float)(2 * pl_rng_uniform(&rng) - 1);
        c->x[2 * i + 1] = (float)(2 * pl_rng_uniform(&rng) - 1);
        c->y[i] = 2 * c->x[2 * i] - 3 * c->x[2 * i + 1] + 0.5f;
    }
    pl_adam a = pl_adam_default(0.05f);
    pl_tape *t = pl_tape_new();
    float loss = 0;
    for (int k = 0; k < steps; k++) {
        pl_tape_reset(t);
        pl_params_zero_grad(s);
        int l = build_reg(t, c);
        loss = pl_t_scalar(t, l);
        pl_tape_backward(t, l);
        pl_params_clip(s, 5);
        pl_adam_step(&a, s);
    }
    pl_tape_free(t);
    return loss;
}

static void test_adam_regression(void **state)
{
    (void)state;
    pl_params s;
    pl_params_init(&s);
    regctx c;
    float first = train_reg(&s, &c, 42, 1);
    pl_params_free(&s);
    pl_params_init(&s);
    float last = train_reg(&s, &c, 42, 400);
    assert_true(first > 0.5f); /* the threshold is not met by the initial weights */
    if (!(last < 1e-4f)) fail_msg("loss %g after 400 steps (from %g)", last, first);
    assert_close(s.p[0]->w[0], 2, 1e-2);
    assert_close(s.p[0]->w[1], -3, 1e-2);
    assert_close(s.p[1]->w[0], 0.5, 1e-2);
    pl_params_free(&s);
}

/* ---- determinism ---- */

typedef struct seqctx {
    pl_lstm l;
    pl_dense d;
    pl_attn at;
} seqctx;

/* A small encoder-attention model trained 20 steps to predict index k at step k. */
static void train_seq(pl_params *s, uint64_t seed)
{
    uint64_t rng = seed;
    seqctx c;
    pl_lstm_init(&c.l, s, "enc", 2, 4, &rng);
    pl_attn_init(&c.at, s, "att", 4, 4, 3, &rng);
    pl_dense_init(&c.d, s, "out", 4, 3, &rng);
    float x[6] = {1, 0, 0, 1, 1, 1};
    int target[3] = {0, 1, 2};
    pl_adam a = pl_adam_default(0.01f);
    pl_tape *t = pl_tape_new();
    for (int step = 0; step < 20; step++) {
        pl_tape_reset(t);
        pl_params_zero_grad(s);
        int X = pl_t_input(t, 3, 2, x), h = pl_t_input(t, 1, 4, NULL), cc = h, hs[3];
        for (int k = 0; k < 3; k++) {
            pl_lstm_step(t, &c.l, pl_t_slice_rows(t, X, k, 1), h, cc, &h, &cc);
            hs[k] = h;
        }
        int H = pl_t_concat_rows(t, 3, hs), keys = pl_attn_keys(t, &c.at, H), logits[3];
        for (int k = 0; k < 3; k++)
            logits[k] =
                pl_dense_apply(t, &c.d, pl_attn_apply(t, &c.at, keys, H, hs[k], NULL, NULL));
        pl_tape_backward(t, pl_t_cross_entropy(t, pl_t_concat_rows(t, 3, logits), target));
        pl_adam_step(&a, s);
    }
    pl_tape_free(t);
}

static bool same_weights(const pl_params *a, const pl_params *b)
{
    for (int i = 0; i < a->n; i++)
        if (memcmp(a->p[i]->w, b->p[i]->w, (size_t)a->p[i]->rows * a->p[i]->cols * 4)) return false;
    return true;
}

static void test_deterministic(void **state)
{
    (void)state;
    pl_params a, b, c;
    pl_params_init(&a);
    pl_params_init(&b);
    pl_params_init(&c);
    train_seq(&a, 11);
    train_seq(&b, 11);
    train_seq(&c, 12);
    assert_int_equal(a.n, b.n);
    assert_true(same_weights(&a, &b));
    assert_false(same_weights(&a, &c));
    pl_params_free(&a);
    pl_params_free(&b);
    pl_params_free(&c);
}

static void test_xavier_bounds(void **state)
{
    (void)state;
    pl_params s;
    pl_params_init(&s);
    pl_param *p = pl_params_add(&s, "w", 10, 14);
    uint64_t rng = 1;
    pl_param_xavier(p, &rng);
    double a = sqrt(6.0 / 24), mx = 0;
    for (int k = 0; k < 140; k++) {
        assert_true(fabs(p->w[k]) <= a);
        mx = fmax(mx, fabs(p->w[k]));
    }
    assert_true(mx > 0.8 * a); /* spread over the range, not squeezed */
    pl_params_free(&s);
}

/* ---- the weights file ---- */

static void two_params(pl_params *s, int cols, uint64_t seed)
{
    pl_params_init(s);
    pl_param_xavier(pl_params_add(s, "enc.W", 3, cols), &seed);
    pl_param_xavier(pl_params_add(s, "enc.b", 1, 2), &seed);
}

static void expect_refused(const char *path, pl_params *s, const char *needle)
{
    pl_err err = {{0}};
    float before = s->p[0]->w[0];
    assert_int_equal(pl_params_load(s, path, &err), -1);
    if (!strstr(err.msg, needle) || !strstr(err.msg, path))
        fail_msg("message \"%s\" lacks \"%s\" or the path", err.msg, needle);
    assert_true(s->p[0]->w[0] == before); /* unchanged */
}

static void test_save_load(void **state)
{
    (void)state;
    char dir[256], path[300];
    assert_int_equal(tu_mkdtemp(dir, sizeof dir, "learn"), 0);
    snprintf(path, sizeof path, "%s/w.bin", dir);
    pl_params a, b, c;
    two_params(&a, 2, 1);
    two_params(&b, 2, 2);
    pl_err err = {{0}};
    assert_int_equal(pl_params_save(&a, path, &err), 0);
    /* 8 magic + 4 version + 4 count + (4+5+8+24) + (4+5+8+8) */
    size_t len;
    char *buf = pl_read_file(path, &len, &err);
    assert_int_equal(len, 16 + 41 + 25);
    assert_memory_equal(buf, "PLNNWTS\0\1\0\0\0\2\0\0\0\5\0\0\0enc.W\3\0\0\0\2\0\0\0", 33);
    assert_false(same_weights(&a, &b));
    assert_int_equal(pl_params_load(&b, path, &err), 0);
    assert_true(same_weights(&a, &b));
    /* a shape mismatch names the parameter */
    two_params(&c, 3, 1);
    expect_refused(path, &c, "enc.W: shape 3x2, expected 3x3");
    pl_params_free(&c);
    /* truncated by one byte */
    assert_int_equal(pl_out_write_file(path, buf, len - 1, &err), 0);
    expect_refused(path, &b, "enc.b: file ends inside the weights");
    /* trailing bytes */
    char *more = malloc(len + 1);
    memcpy(more, buf, len);
    more[len] = 0;
    assert_int_equal(pl_out_write_file(path, more, len + 1, &err), 0);
    expect_refused(path, &b, "1 bytes after the last parameter");
    /* wrong magic */
    more[0] = 'X';
    assert_int_equal(pl_out_write_file(path, more, len, &err), 0);
    expect_refused(path, &b, "not a placer weights file");
    /* a different name */
    memcpy(more, buf, len);
    more[20] = 'x';
    assert_int_equal(pl_out_write_file(path, more, len, &err), 0);
    expect_refused(path, &b, "named \"xnc.W\", expected \"enc.W\"");
    /* a NaN weight */
    memcpy(more, buf, len);
    memcpy(more + 33, &(float){NAN}, 4);
    assert_int_equal(pl_out_write_file(path, more, len, &err), 0);
    expect_refused(path, &b, "enc.W: element 0 is not finite");
    free(more);
    free(buf);
    pl_params_free(&a);
    pl_params_free(&b);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),          cmocka_unit_test(test_grad_matmul),
        cmocka_unit_test(test_grad_add_mul),    cmocka_unit_test(test_grad_unary),
        cmocka_unit_test(test_grad_concat),     cmocka_unit_test(test_grad_dense),
        cmocka_unit_test(test_grad_lstm),       cmocka_unit_test(test_grad_attention),
        cmocka_unit_test(test_grad_gat),        cmocka_unit_test(test_gat_values),
        cmocka_unit_test(test_lstm_values),     cmocka_unit_test(test_adam_and_clip_by_hand),
        cmocka_unit_test(test_adam_regression), cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_xavier_bounds),   cmocka_unit_test(test_save_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
