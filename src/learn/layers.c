/* layers.c: Dense, the LSTM cell, additive attention and the typed-edge GAT layer, each
 * written with the tape's ops only, so their gradients are the ops' (docs/learn.md,
 * "Layers"). */
#include "placer/learn.h"

#include <stdio.h>

/* A parameter "NAME.PART" added to s. */
static pl_param *add(pl_params *s, const char *name, const char *part, int rows, int cols)
{
    char full[256];
    snprintf(full, sizeof full, "%s.%s", name, part);
    return pl_params_add(s, full, rows, cols);
}

static pl_param *add_xavier(pl_params *s, const char *name, const char *part, int rows, int cols,
                            uint64_t *rng)
{
    pl_param *p = add(s, name, part, rows, cols);
    pl_param_xavier(p, rng);
    return p;
}

void pl_dense_init(pl_dense *d, pl_params *s, const char *name, int in, int out, uint64_t *rng)
{
    d->W = add_xavier(s, name, "W", in, out, rng);
    d->b = add(s, name, "b", 1, out);
}

int pl_dense_apply(pl_tape *t, const pl_dense *d, int x)
{
    return pl_t_add(t, pl_t_matmul(t, x, pl_t_param(t, d->W)), pl_t_param(t, d->b));
}

void pl_lstm_init(pl_lstm *l, pl_params *s, const char *name, int in, int hid, uint64_t *rng)
{
    l->in = in;
    l->hid = hid;
    l->W = add_xavier(s, name, "W", in + hid, 4 * hid, rng);
    l->b = add(s, name, "b", 1, 4 * hid);
    for (int j = hid; j < 2 * hid; j++)
        l->b->w[j] = 1; /* the forget gate */
}

void pl_lstm_step(pl_tape *t, const pl_lstm *l, int x, int h, int c, int *h_out, int *c_out)
{
    int H = l->hid, xh[2] = {x, h};
    PL_ASSERT(pl_t_cols(t, x) == l->in && pl_t_cols(t, h) == H && pl_t_cols(t, c) == H);
    int z = pl_t_matmul(t, pl_t_concat_cols(t, 2, xh), pl_t_param(t, l->W));
    z = pl_t_add(t, z, pl_t_param(t, l->b));
    int i = pl_t_sigmoid(t, pl_t_slice_cols(t, z, 0, H));
    int f = pl_t_sigmoid(t, pl_t_slice_cols(t, z, H, H));
    int g = pl_t_tanh(t, pl_t_slice_cols(t, z, 2 * H, H));
    int o = pl_t_sigmoid(t, pl_t_slice_cols(t, z, 3 * H, H));
    int c2 = pl_t_add(t, pl_t_mul(t, f, c), pl_t_mul(t, i, g));
    *c_out = c2;
    *h_out = pl_t_mul(t, o, pl_t_tanh(t, c2));
}

void pl_attn_init(pl_attn *a, pl_params *s, const char *name, int enc, int dec, int att,
                  uint64_t *rng)
{
    a->W1 = add_xavier(s, name, "W1", enc, att, rng);
    a->W2 = add_xavier(s, name, "W2", dec, att, rng);
    a->v = add_xavier(s, name, "v", att, 1, rng);
}

int pl_attn_keys(pl_tape *t, const pl_attn *a, int H)
{
    return pl_t_matmul(t, H, pl_t_param(t, a->W1));
}

int pl_attn_apply(pl_tape *t, const pl_attn *a, int keys, int H, int s, int *alpha, int *score)
{
    PL_ASSERT(pl_t_rows(t, s) == 1 && pl_t_rows(t, keys) == pl_t_rows(t, H));
    int q = pl_t_matmul(t, s, pl_t_param(t, a->W2)); /* [1,att] */
    int e = pl_t_tanh(t, pl_t_add(t, keys, q));      /* [n,att], q row-broadcast */
    int sc = pl_t_transpose(t, pl_t_matmul(t, e, pl_t_param(t, a->v))); /* [1,n] */
    int al = pl_t_softmax(t, sc);
    if (alpha) *alpha = al;
    if (score) *score = sc;
    return pl_t_matmul(t, al, H);
}

void pl_gat_init(pl_gat *g, pl_params *s, const char *name, int n_types, int in, int out,
                 int edge_dim, uint64_t *rng)
{
    PL_ASSERT(n_types > 0 && edge_dim >= 0);
    g->n_types = n_types;
    g->in = in;
    g->out = out;
    g->edge_dim = edge_dim;
    g->W = pl_calloc(n_types, sizeof *g->W);
    g->We = pl_calloc(n_types, sizeof *g->We);
    g->a = pl_calloc(n_types, sizeof *g->a);
    g->gamma = pl_calloc(n_types, sizeof *g->gamma);
    for (int r = 0; r < n_types; r++) {
        char part[64];
        snprintf(part, sizeof part, "W%d", r);
        g->W[r] = add_xavier(s, name, part, in, out, rng);
        if (edge_dim) {
            snprintf(part, sizeof part, "We%d", r);
            g->We[r] = add_xavier(s, name, part, edge_dim, out, rng);
        }
        snprintf(part, sizeof part, "a%d", r);
        g->a[r] = add_xavier(s, name, part, (edge_dim ? 3 : 2) * out, 1, rng);
        snprintf(part, sizeof part, "gamma%d", r);
        g->gamma[r] = add(s, name, part, 1, 1);
        pl_param_fill(g->gamma[r], 1);
    }
}

void pl_gat_free(pl_gat *g)
{
    free(g->W);
    free(g->We);
    free(g->a);
    free(g->gamma);
}

/* gamma_r m_r for one edge type with at least one edge. */
static int gat_type(pl_tape *t, const pl_gat *g, int r, int H, int n, const pl_gat_edges *E)
{
    int ne = E->n_edges, *dst = pl_malloc((size_t)ne * sizeof(int));
    for (int v = 0; v < n; v++)
        for (int e = E->ptr[v]; e < E->ptr[v + 1]; e++)
            dst[e] = v;
    int z = pl_t_matmul(t, H, pl_t_param(t, g->W[r]));
    int zs = pl_t_gather(t, z, ne, E->src), parts[3] = {zs, pl_t_gather(t, z, ne, dst), 0};
    free(dst);
    if (g->edge_dim) {
        int f = pl_t_input(t, ne, g->edge_dim, E->feat);
        parts[2] = pl_t_matmul(t, f, pl_t_param(t, g->We[r]));
    }
    int cat = pl_t_concat_cols(t, g->edge_dim ? 3 : 2, parts);
    int logit = pl_t_leaky_relu(t, pl_t_matmul(t, cat, pl_t_param(t, g->a[r])), 0.2f);
    int alpha = pl_t_seg_softmax(t, logit, n, E->ptr);          /* [E,1] */
    int m = pl_t_seg_sum(t, pl_t_mul(t, zs, alpha), n, E->ptr); /* alpha column-broadcast */
    return pl_t_mul(t, m, pl_t_param(t, g->gamma[r]));
}

int pl_gat_apply(pl_tape *t, const pl_gat *g, int H, int n, const pl_gat_edges *edges)
{
    PL_ASSERT(pl_t_rows(t, H) == n && pl_t_cols(t, H) == g->in);
    int out = -1;
    for (int r = 0; r < g->n_types; r++) {
        if (edges[r].n_edges == 0) continue; /* contributes zeros (and no gradient) */
        int m = gat_type(t, g, r, H, n, &edges[r]);
        out = out < 0 ? m : pl_t_add(t, out, m);
    }
    return out >= 0 ? out : pl_t_input(t, n, g->out, NULL);
}
