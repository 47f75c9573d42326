/* learn.h: a small neural-network core for the learned placers (issue 17, docs/learn.md):
 * float matrices, parameters with their Adam moments, reverse-mode gradients recorded on a
 * tape, the layers AutoDeep's DRL placer and TAG's GNN prior need, Adam, and one weights file.
 * It depends on common alone (docs/layers.md): the DRL placer that uses it is declared in
 * place.h, TAG's GNN prior and its distillation in train.h.
 *
 * Semantics, exactly: every value is a row-major float matrix (rows x cols). A tape records
 * each op of a forward pass as a node, identified by the int the op returns (its index on the
 * tape, never negative). pl_tape_backward(t, loss) runs the recorded ops backwards from a 1x1
 * node whose gradient is 1 and ADDS d loss / d w into the gradient of every parameter that
 * the loss depends on; gradients of inputs (pl_t_input) are not kept. Parameter gradients
 * accumulate across backward passes until pl_params_zero_grad, so a batch of episodes is
 * several forward/backward passes on one tape after pl_tape_reset. A parameter node reads the
 * parameter's weights in place (no copy): weights must not change between the forward pass
 * and its backward pass (an Adam step goes after both). Everything is deterministic for a
 * given seed: initialisation draws from pl_rng_*, and no op depends on timing or threads.
 *
 * Shapes are preconditions (PL_ASSERT, checked under `make asan`): a caller builds the model,
 * so a wrong shape is a bug in placer, not bad input. Files are input: pl_params_load checks
 * everything and says what is wrong.
 *
 * Ownership and failure: a tape and a parameter set are the caller's, each freed by its _free
 * function; a parameter added to a set is owned by the set; a tape refers to parameters but
 * never frees them, so the set must outlive every tape that read it. pl_params_load leaves the
 * set unchanged on failure; pl_params_save leaves the file whole or as it was (pl_out). */
#ifndef PLACER_LEARN_H
#define PLACER_LEARN_H

#include "placer/common.h"

#include <stdint.h>

/* ---- parameters (src/learn/param.c) ---- */

/* A trainable matrix: weights w, gradient g, Adam's first and second moments m and v, each
 * rows*cols floats. Owned by its pl_params set. */
typedef struct pl_param {
    char *name;
    int rows, cols;
    float *w, *g, *m, *v;
} pl_param;

/* An ordered set of parameters: the unit that is initialised, trained and saved. */
typedef struct pl_params {
    pl_param **p;
    int n, cap;
} pl_params;

void pl_params_init(pl_params *s);
/* Frees every parameter and the set's array; s is empty afterwards. */
void pl_params_free(pl_params *s);
/* A new zero parameter named `name` (copied; must be unique in s: PL_ASSERT) of rows x cols
 * (both > 0), owned by s; the pointer stays valid until pl_params_free. */
pl_param *pl_params_add(pl_params *s, const char *name, int rows, int cols);
/* The parameter named `name`, or NULL. */
pl_param *pl_params_find(const pl_params *s, const char *name);
/* Number of floats in all parameters. */
long pl_params_count(const pl_params *s);
/* Xavier/Glorot uniform: w ~ U(-a, a), a = sqrt(6 / (rows + cols)), drawn row by row from
 * *rng. (A bias is left at zero by the layers.) */
void pl_param_xavier(pl_param *p, uint64_t *rng);
/* Every element of w set to x. */
void pl_param_fill(pl_param *p, float x);

/* Sets every gradient to zero. */
void pl_params_zero_grad(pl_params *s);
/* Global gradient norm sqrt(sum of g^2 over all parameters), computed in double. When it is
 * above max_norm (> 0) every gradient is multiplied by max_norm / norm. Returns the norm
 * before clipping. */
double pl_params_clip(pl_params *s, double max_norm);

/* Adam (Kingma & Ba, with bias correction): for each element, m = b1 m + (1-b1) g,
 * v = b2 v + (1-b2) g^2, w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps), t the step
 * count after increment. Gradients are left as they are (zero them before the next pass). */
typedef struct pl_adam {
    float lr, beta1, beta2, eps;
    long step;
} pl_adam;
/* lr as given, beta1 0.9, beta2 0.999, eps 1e-8, step 0. */
pl_adam pl_adam_default(float lr);
void pl_adam_step(pl_adam *a, pl_params *s);

/* The weights file (docs/learn.md, "File format"): little-endian; "PLNNWTS\0", uint32
 * version 1, uint32 count; then per parameter uint32 name length, the name's bytes (no NUL),
 * uint32 rows, uint32 cols, rows*cols float32 (IEEE 754) row-major. Nothing after. Only the
 * weights are saved (not gradients, Adam moments or the step count). pl_params_save writes
 * through pl_out (the file is whole or absent). pl_params_load fills the weights of s, whose
 * parameters must match the file's in count, order, names and shapes; anything else (a short
 * file, a wrong magic or version, a different name or shape, trailing bytes, a NaN or
 * infinite weight, or one beyond +-PL_WEIGHT_MAX) is an error naming the file, the parameter
 * and the element, and leaves s unchanged. */
int pl_params_save(const pl_params *s, const char *path, pl_err *err);
int pl_params_load(pl_params *s, const char *path, pl_err *err);

/* The largest weight magnitude placer accepts (docs/learn.md, "File format"): every network it
 * trains keeps its weights within a few units (Xavier starts below 1; the shipped priors are
 * below 2.3), so a weight past 1e4 means a training diverged, and such weights make a forward
 * pass overflow float (3e38 squared is infinite) and its outputs NaN. */
#define PL_WEIGHT_MAX 1e4
/* 0 when every weight of s is finite and within +-PL_WEIGHT_MAX; else -1 with err naming the
 * first that is not ("parameter NAME: element K is W, ..."). */
int pl_params_check(const pl_params *s, pl_err *err);

/* ---- the tape: ops and their gradients (src/learn/tape.c, src/learn/ops.c) ---- */

typedef struct pl_tape pl_tape;

pl_tape *pl_tape_new(void);
/* Forgets every node (frees their values and gradients; keeps the node array for the next
 * pass). Parameters are untouched. */
void pl_tape_reset(pl_tape *t);
void pl_tape_free(pl_tape *t);
/* Number of nodes recorded since the last reset. */
int pl_tape_size(const pl_tape *t);

/* Backward from `loss`, a 1x1 node (PL_ASSERT): accumulates into the parameters' g (see the
 * header). May be called once per forward pass. */
void pl_tape_backward(pl_tape *t, int loss);

/* A node's shape and values (rows*cols floats, row-major; valid until reset). */
int pl_t_rows(const pl_tape *t, int x);
int pl_t_cols(const pl_tape *t, int x);
const float *pl_t_value(const pl_tape *t, int x);
/* The single value of a 1x1 node. */
float pl_t_scalar(const pl_tape *t, int x);

/* Leaves. A parameter: its value is p->w, and backward adds into p->g. An input: a constant
 * rows x cols copied from data (NULL: zeros). */
int pl_t_param(pl_tape *t, pl_param *p);
int pl_t_input(pl_tape *t, int rows, int cols, const float *data);

/* Ops. Shapes: [r,c] is rows x cols. */
/* a[n,k] b[k,m] -> [n,m], through cblas_sgemm. */
int pl_t_matmul(pl_tape *t, int a, int b);
/* a[r,c] + b, b of shape [r,c], [1,c] (a row broadcast: a bias), [r,1] or [1,1]. */
int pl_t_add(pl_tape *t, int a, int b);
/* a[r,c] * b element-wise, b broadcast as in pl_t_add. */
int pl_t_mul(pl_tape *t, int a, int b);
/* c * a. */
int pl_t_scale(pl_tape *t, int a, float c);
/* Element-wise functions. leaky_relu: x for x > 0, slope * x otherwise. */
int pl_t_tanh(pl_tape *t, int a);
int pl_t_sigmoid(pl_tape *t, int a);
int pl_t_relu(pl_tape *t, int a);
int pl_t_leaky_relu(pl_tape *t, int a, float slope);
/* The n nodes xs side by side (same rows) -> [r, sum of cols]; one above the other (same
 * cols) -> [sum of rows, c]. */
int pl_t_concat_cols(pl_tape *t, int n, const int *xs);
int pl_t_concat_rows(pl_tape *t, int n, const int *xs);
/* Rows [r0, r0+n) of a; columns [c0, c0+n) of a. */
int pl_t_slice_rows(pl_tape *t, int a, int r0, int n);
int pl_t_slice_cols(pl_tape *t, int a, int c0, int n);
/* Rows idx[0..n) of a, repeats allowed (an embedding lookup); idx is copied. Backward adds
 * each output row's gradient into its source row. */
int pl_t_gather(pl_tape *t, int a, int n, const int *idx);
/* a[r,c] -> [c,r]. */
int pl_t_transpose(pl_tape *t, int a);
/* Sum and mean of all elements -> [1,1]. */
int pl_t_sum(pl_tape *t, int a);
int pl_t_mean(pl_tape *t, int a);
/* Softmax and log-softmax of each row (max-subtracted, so large logits do not overflow). */
int pl_t_softmax(pl_tape *t, int a);
int pl_t_log_softmax(pl_tape *t, int a);
/* a[r, idx[r]] for each row -> [r,1] (idx copied; each in [0,c)): with pl_t_log_softmax, the
 * log-probability of the chosen action, which REINFORCE scales by its advantage. */
int pl_t_pick(pl_tape *t, int a, const int *idx);
/* Cross-entropy: sum over rows r of -log softmax(a[r])[target[r]] -> [1,1] (targets copied),
 * fused so its gradient is softmax - one-hot. */
int pl_t_cross_entropy(pl_tape *t, int a, const int *target);
/* Graph ops over segments given by a CSR pointer ptr[0..n] (ptr[0] = 0, non-decreasing;
 * copied): segment i is rows ptr[i]..ptr[i+1]-1 of a (the incoming edges of node i).
 * seg_softmax: a[E,1] -> [E,1], softmax within each segment. seg_sum: a[E,c] -> [n,c], row i
 * the sum of segment i's rows (zeros for an empty segment). */
int pl_t_seg_softmax(pl_tape *t, int a, int n, const int *ptr);
int pl_t_seg_sum(pl_tape *t, int a, int n, const int *ptr);

/* ---- layers (src/learn/layers.c) ----
 * Each _init adds its parameters to a set under "NAME.PART" names and initialises them
 * (Xavier weights, zero biases unless said otherwise) from *rng, in a fixed order. A layer
 * struct only points into the set. */

/* Dense: x[r,in] W[in,out] + b[1,out]. */
typedef struct pl_dense {
    pl_param *W, *b;
} pl_dense;
void pl_dense_init(pl_dense *d, pl_params *s, const char *name, int in, int out, uint64_t *rng);
int pl_dense_apply(pl_tape *t, const pl_dense *d, int x);

/* LSTM cell, one step: [i f g o] = [x h] W + b (W [in+hid, 4 hid], b [1, 4 hid]; the forget
 * gate's bias starts at 1, so early training does not forget), i, f, o sigmoid, g tanh;
 * c' = f*c + i*g, h' = o*tanh(c'). x[r,in], h and c [r,hid] (r rows step independently). */
typedef struct pl_lstm {
    pl_param *W, *b;
    int in, hid;
} pl_lstm;
void pl_lstm_init(pl_lstm *l, pl_params *s, const char *name, int in, int hid, uint64_t *rng);
void pl_lstm_step(pl_tape *t, const pl_lstm *l, int x, int h, int c, int *h_out, int *c_out);

/* Additive (Bahdanau) attention over encoder states H[n,enc] for a decoder state s[1,dec]:
 * score_j = v^T tanh(W1 h_j + W2 s) (W1 [enc,att], W2 [dec,att], v [att,1]), alpha =
 * softmax(score) [1,n], context = alpha H [1,enc]. keys = pl_attn_keys(H) = H W1 does not
 * depend on s: compute it once per sequence and pass it to every decoder step. */
typedef struct pl_attn {
    pl_param *W1, *W2, *v;
} pl_attn;
void pl_attn_init(pl_attn *a, pl_params *s, const char *name, int enc, int dec, int att,
                  uint64_t *rng);
int pl_attn_keys(pl_tape *t, const pl_attn *a, int H);
/* The context [1,enc]; *alpha (if not NULL) gets the attention weights [1,n] and *score (if
 * not NULL) the scores before the softmax [1,n] (a pointer network's logits). */
int pl_attn_apply(pl_tape *t, const pl_attn *a, int keys, int H, int s, int *alpha, int *score);

/* One edge type's graph for pl_gat_apply: the incoming edges of each of n nodes in CSR form.
 * Edges ptr[v]..ptr[v+1]-1 end at node v; src[e] is edge e's source; feat is
 * [n_edges, edge_dim] row-major (ignored when the layer's edge_dim is 0). Not copied: must
 * live until pl_gat_apply returns. */
typedef struct pl_gat_edges {
    int n_edges;
    const int *ptr, *src;
    const float *feat;
} pl_gat_edges;

/* A GAT-style layer over typed edges with edge features (TAG's heterogeneous GNN): for each
 * type r, z = H W_r (W_r [in,out]), per edge u->v the logit e_uv = LeakyReLU_0.2(a_r^T [z_u ||
 * z_v || f_uv We_r]) (a_r [3 out,1], We_r [edge_dim,out]; without We_r and a third of a_r
 * when edge_dim is 0), alpha = softmax of e over v's incoming edges of type r, and the message
 * m_r(v) = sum_u alpha_uv z_u. Output [n,out] = sum_r gamma_r m_r (gamma_r [1,1], starting at
 * 1); a node without incoming edges of any type gets zeros. No activation, no self loop and
 * one head: add them around the layer (pl_t_add of a Dense of H, pl_t_relu, and
 * pl_t_concat_cols of several layers for several heads). */
typedef struct pl_gat {
    int n_types, in, out, edge_dim;
    pl_param **W, **We, **a, **gamma; /* n_types each (We NULL entries when edge_dim is 0) */
} pl_gat;
void pl_gat_init(pl_gat *g, pl_params *s, const char *name, int n_types, int in, int out,
                 int edge_dim, uint64_t *rng);
/* Frees the layer's pointer arrays (the parameters belong to the set). */
void pl_gat_free(pl_gat *g);
/* H [n,in]; edges[0..n_types). */
int pl_gat_apply(pl_tape *t, const pl_gat *g, int H, int n, const pl_gat_edges *edges);

#endif
