/* gnn.c: TAG's heterogeneous GNN, the prior of its MCTS (docs/learn.md, "TAG's GNN prior";
 * the TAG digest §3.2.3): the graph of op groups and device groups with Table 1's features,
 * per-type encoders, four GAT layers over typed edges, and the decoder over the candidate
 * actions of the next op group. */
#include "placer/learn.h"
#include "placer/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_F = 32, TAG_LAYERS = 4 };

/* ---- the input graph ---- */

/* ln(1 + v / unit): sizes and times span orders of magnitude across models and clusters. */
static float lnu(double v, double unit)
{
    return (float)log1p(fmax(v, 0) / unit);
}

typedef struct edges {
    int n, cap, cap_f;
    int *src, *dst;
    float *f; /* PL_TAG_EDGE_FEATS per edge */
} edges;

static void edge_add(edges *e, int src, int dst, float f0, float f1)
{
    int cap = e->cap;
    pl_grow((void **)&e->src, &cap, e->n + 1, sizeof *e->src);
    pl_grow((void **)&e->dst, &e->cap, e->n + 1, sizeof *e->dst);
    pl_grow((void **)&e->f, &e->cap_f, (e->n + 1) * PL_TAG_EDGE_FEATS, sizeof *e->f);
    e->src[e->n] = src, e->dst[e->n] = dst;
    float *f = e->f + (size_t)e->n * PL_TAG_EDGE_FEATS;
    f[0] = f0, f[1] = f1, f[2] = 0;
    e->n++;
}

/* Sorted by destination (stable: a counting sort) into the input's CSR of type r. */
static void edges_to_csr(pl_tag_input *in, int r, edges *e)
{
    int nodes = in->n_op + in->n_dev;
    int *ptr = pl_calloc((size_t)nodes + 1, sizeof *ptr),
        *at = pl_malloc((size_t)nodes * sizeof *at);
    for (int k = 0; k < e->n; k++)
        ptr[e->dst[k] + 1]++;
    for (int v = 0; v < nodes; v++)
        ptr[v + 1] += ptr[v], at[v] = ptr[v];
    in->n_edges[r] = e->n;
    in->ptr[r] = ptr;
    in->src[r] = pl_malloc((size_t)e->n * sizeof(int));
    in->efeat[r] = pl_malloc((size_t)e->n * PL_TAG_EDGE_FEATS * sizeof(float));
    for (int k = 0; k < e->n; k++) {
        int pos = at[e->dst[k]]++;
        in->src[r][pos] = e->src[k];
        memcpy(in->efeat[r] + (size_t)pos * PL_TAG_EDGE_FEATS, e->f + (size_t)k * PL_TAG_EDGE_FEATS,
               PL_TAG_EDGE_FEATS * sizeof(float));
    }
    free(at), free(e->src), free(e->dst), free(e->f);
}

/* Table 1's op-node features (docs/learn.md gives each column). */
static void op_features(const pl_train_ctx *x, const pl_train_strategy *s, const pl_train_eval *fb,
                        int group, pl_tag_input *in)
{
    int N = x->og.n, *order = pl_train_group_order(x), next_at = N;
    for (int k = 0; k < N; k++)
        if (order[k] == group) next_at = k;
    double tsum = 0, psum = 0;
    for (int i = 0; i < N; i++)
        tsum += x->og.time_s[i], psum += x->og.param_bytes[i];
    bool have_fb = fb && fb->group_makespan_s && fb->n_groups == N && fb->iteration_s > 0;
    for (int k = 0; k < N; k++) {
        int i = order[k];
        float *f = in->op_feat + (size_t)i * PL_TAG_OP_FEATS;
        f[0] = tsum > 0 ? (float)(x->og.time_s[i] / tsum) : 0;
        f[1] = lnu(x->og.time_s[i], 1e-3);
        f[2] = psum > 0 ? (float)(x->og.param_bytes[i] / psum) : 0;
        f[3] = lnu(x->og.param_bytes[i], 1 << 20);
        f[4 + s->O[i]] = 1;
        if (have_fb) {
            f[8] = (float)(fb->group_makespan_s[i] / fb->iteration_s);
            f[9] = (float)(fb->group_out_idle_s[i] / fb->iteration_s);
        }
        f[10] = k < next_at;
        f[11] = i == group;
    }
    free(order);
}

/* Mean bandwidth (B/s) of the routes from group ja's devices to group jb's (different
 * devices); 0 when there is none. */
static double group_bw(const pl_train_ctx *x, int ja, int jb)
{
    double bw = 0;
    int pairs = 0;
    for (int ka = x->dg.off[ja]; ka < x->dg.off[ja + 1]; ka++)
        for (int kb = x->dg.off[jb]; kb < x->dg.off[jb + 1]; kb++) {
            int a = x->dg.dev[ka], b = x->dg.dev[kb];
            if (a != b) bw += x->c->bw_Bps[(size_t)a * x->c->n_devs + b], pairs++;
        }
    return pairs ? bw / pairs : 0;
}

static void dev_features(const pl_train_ctx *x, const pl_train_eval *fb, pl_tag_input *in)
{
    int M = x->dg.n;
    double total = 0;
    for (int k = 0; k < x->dg.off[M]; k++)
        total += x->c->devs[x->dg.dev[k]].peak_flops_per_s[PL_PREC_FP32];
    bool have_fb = fb && fb->dev_idle_frac && fb->n_devs == x->c->n_devs;
    for (int j = 0; j < M; j++) {
        float *f = in->dev_feat + (size_t)j * PL_TAG_DEV_FEATS;
        int n = x->dg.off[j + 1] - x->dg.off[j];
        double mem = 0, flops = 0, peak = 0, idle = 0;
        for (int k = x->dg.off[j]; k < x->dg.off[j + 1]; k++) {
            const pl_device *d = &x->c->devs[x->dg.dev[k]];
            mem += d->memory_bytes / n, flops += d->peak_flops_per_s[PL_PREC_FP32];
            if (!have_fb) continue;
            if (d->memory_bytes > 0)
                peak = fmax(peak, fb->peak_mem_bytes[x->dg.dev[k]] / d->memory_bytes);
            idle += fb->dev_idle_frac[x->dg.dev[k]] / n;
        }
        f[0] = lnu(n, 1);
        f[1] = lnu(mem, 1 << 30);
        f[2] = lnu(group_bw(x, j, j), 1e9);
        f[3] = lnu(flops / n, 1e12);
        f[4] = total > 0 ? (float)(flops / total) : 0;
        f[5] = (float)fmin(peak, 4);
        f[6] = (float)idle;
    }
}

/* Bytes of the training graph's tensors from op group a to op group b != a ([a * N + b]): a
 * tensor counts once per group that reads it. */
static double *group_bytes(const pl_train_ctx *x)
{
    const pl_graph *g = x->t->g;
    int N = x->og.n;
    double *b = pl_calloc((size_t)N * N, sizeof *b);
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *te = &g->tensors[t];
        if (te->producer < 0 || te->bytes <= 0) continue;
        int ga = x->og.group_of[te->producer];
        for (int c = 0; c < te->n_consumers; c++) {
            int gb = x->og.group_of[te->consumers[c]], seen = 0;
            for (int d = 0; d < c; d++)
                seen |= x->og.group_of[te->consumers[d]] == gb;
            if (gb != ga && !seen) b[(size_t)ga * N + gb] += (double)te->bytes;
        }
    }
    return b;
}

static void graph_edges(const pl_train_ctx *x, const pl_train_strategy *s, const pl_train_eval *fb,
                        pl_tag_input *in)
{
    int N = x->og.n, M = x->dg.n;
    edges e[PL_TAG_EDGE_TYPES] = {{0}};
    double *bytes = group_bytes(x);
    for (int a = 0; a < N; a++) /* each tensor flow both ways; f1 = 1 along it */
        for (int b = 0; b < N; b++) {
            double v = bytes[(size_t)a * N + b];
            if (v <= 0) continue;
            edge_add(&e[PL_TAG_OP_OP], a, b, lnu(v, 1 << 20), 1);
            edge_add(&e[PL_TAG_OP_OP], b, a, lnu(v, 1 << 20), 0);
        }
    free(bytes);
    bool have_fb = fb && fb->link_idle_frac && fb->n_dgroups == M;
    for (int ja = 0; ja < M; ja++)
        for (int jb = 0; jb < M; jb++)
            if (ja != jb)
                edge_add(&e[PL_TAG_DEV_DEV], N + ja, N + jb, lnu(group_bw(x, ja, jb), 1e9),
                         have_fb ? (float)fb->link_idle_frac[(size_t)ja * M + jb] : 0);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < M; j++) {
            float p = s->P[(size_t)i * M + j] ? 1 : 0;
            edge_add(&e[PL_TAG_OP_DEV], i, N + j, p, 0);
            edge_add(&e[PL_TAG_DEV_OP], N + j, i, p, 0);
        }
    for (int r = 0; r < PL_TAG_EDGE_TYPES; r++)
        edges_to_csr(in, r, &e[r]);
}

/* The slowest route (B/s) between two different GPUs that action a uses; INFINITY for one. */
static double slowest_route(const pl_train_ctx *x, const pl_train_action *a)
{
    double slowest = INFINITY;
    for (int ja = 0; ja < x->dg.n; ja++)
        for (int jb = 0; jb < x->dg.n; jb++) {
            if (!a->uses[ja] || !a->uses[jb]) continue;
            for (int ka = x->dg.off[ja]; ka < x->dg.off[ja + 1]; ka++)
                for (int kb = x->dg.off[jb]; kb < x->dg.off[jb + 1]; kb++) {
                    int da = x->dg.dev[ka], db = x->dg.dev[kb];
                    if (da != db)
                        slowest = fmin(slowest, x->c->bw_Bps[(size_t)da * x->c->n_devs + db]);
                }
        }
    return slowest;
}

/* Candidate a's row (PL_TAG_CAND_FEATS): shares of the groups, GPUs and FP32 compute it
 * uses, whether it uses them all, and the slowest route between two of its GPUs. */
static void cand_features(const pl_train_ctx *x, const pl_train_action *a, float *f)
{
    int M = x->dg.n, groups = 0, devs = 0;
    double flops = 0, total = 0;
    for (int j = 0; j < M; j++) {
        groups += a->uses[j] != 0;
        for (int k = x->dg.off[j]; k < x->dg.off[j + 1]; k++) {
            double fl = x->c->devs[x->dg.dev[k]].peak_flops_per_s[PL_PREC_FP32];
            total += fl;
            if (a->uses[j]) flops += fl, devs++;
        }
    }
    double slowest = slowest_route(x, a);
    f[0] = (float)groups / M;
    f[1] = (float)devs / x->dg.off[M];
    f[2] = total > 0 ? (float)(flops / total) : 0;
    f[3] = groups == M;
    f[4] = isinf(slowest) ? 0 : lnu(slowest, 1e9);
}

pl_tag_input *pl_tag_input_build(const pl_train_ctx *x, const pl_train_strategy *partial,
                                 const pl_train_eval *fb, int group, const pl_train_action *a,
                                 int n)
{
    PL_ASSERT(partial->n_groups == x->og.n && partial->n_dgroups == x->dg.n);
    PL_ASSERT(group >= 0 && group < x->og.n && n > 0);
    pl_tag_input *in = pl_calloc(1, sizeof *in);
    int N = x->og.n, M = x->dg.n;
    in->n_op = N, in->n_dev = M, in->group = group;
    in->op_feat = pl_calloc((size_t)N * PL_TAG_OP_FEATS, sizeof(float));
    in->dev_feat = pl_calloc((size_t)M * PL_TAG_DEV_FEATS, sizeof(float));
    op_features(x, partial, fb, group, in);
    dev_features(x, fb, in);
    graph_edges(x, partial, fb, in);
    in->n_cand = n;
    in->cand_P = pl_calloc((size_t)n * M, sizeof(float));
    in->cand_option = pl_malloc((size_t)n * sizeof(int));
    in->cand_feat = pl_malloc((size_t)n * PL_TAG_CAND_FEATS * sizeof(float));
    for (int c = 0; c < n; c++) {
        for (int j = 0; j < M; j++)
            in->cand_P[(size_t)c * M + j] = a[c].uses[j];
        in->cand_option[c] = (int)a[c].option;
        cand_features(x, &a[c], in->cand_feat + (size_t)c * PL_TAG_CAND_FEATS);
    }
    return in;
}

void pl_tag_input_free(pl_tag_input *in)
{
    if (!in) return;
    for (int r = 0; r < PL_TAG_EDGE_TYPES; r++)
        free(in->ptr[r]), free(in->src[r]), free(in->efeat[r]);
    free(in->op_feat), free(in->dev_feat), free(in->cand_P), free(in->cand_option);
    free(in->cand_feat);
    free(in);
}

/* ---- the model ---- */

struct pl_tag_gnn {
    pl_params s;
    pl_dense enc_op, enc_dev;
    pl_gat gat[TAG_LAYERS];
    pl_dense self[TAG_LAYERS];
    pl_dense dec1, dec2;
    pl_adam adam;
    pl_tape *t;
};

static pl_tag_gnn *gnn_new(uint64_t seed, bool legacy)
{
    pl_tag_gnn *m = pl_calloc(1, sizeof *m);
    uint64_t rng = seed;
    pl_params_init(&m->s);
    pl_dense_init(&m->enc_op, &m->s, "tag.enc_op", PL_TAG_OP_FEATS, TAG_F, &rng);
    pl_dense_init(&m->enc_dev, &m->s, "tag.enc_dev", PL_TAG_DEV_FEATS, TAG_F, &rng);
    for (int l = 0; l < TAG_LAYERS; l++) {
        char name[32];
        snprintf(name, sizeof name, "tag.gat%d", l);
        pl_gat_init(&m->gat[l], &m->s, name, PL_TAG_EDGE_TYPES, TAG_F, TAG_F, PL_TAG_EDGE_FEATS,
                    &rng);
        /* TAG's gamma: 1 between nodes of one type, 0.1 across (a starting value, trained) */
        pl_param_fill(m->gat[l].gamma[PL_TAG_OP_DEV], 0.1f);
        pl_param_fill(m->gat[l].gamma[PL_TAG_DEV_OP], 0.1f);
        snprintf(name, sizeof name, "tag.self%d", l);
        pl_dense_init(&m->self[l], &m->s, name, TAG_F, TAG_F, &rng);
    }
    if (legacy) { /* the decoder before issue 31: only to recognise its files */
        pl_dense_init(&m->dec1, &m->s, "tag.dec1", 2 * TAG_F + PL_OPT_COUNT, TAG_F, &rng);
        pl_dense_init(&m->dec2, &m->s, "tag.dec2", TAG_F, 1, &rng);
    } else {
        pl_dense_init(&m->dec1, &m->s, "tag.decoder1", 2 * TAG_F + PL_OPT_COUNT + PL_TAG_CAND_FEATS,
                      TAG_F, &rng);
        pl_dense_init(&m->dec2, &m->s, "tag.decoder2", TAG_F, 1, &rng);
    }
    m->adam = pl_adam_default(1e-3f);
    m->t = pl_tape_new();
    return m;
}

pl_tag_gnn *pl_tag_gnn_new(uint64_t seed)
{
    return gnn_new(seed, false);
}

void pl_tag_gnn_free(pl_tag_gnn *m)
{
    if (!m) return;
    for (int l = 0; l < TAG_LAYERS; l++)
        pl_gat_free(&m->gat[l]);
    pl_params_free(&m->s);
    pl_tape_free(m->t);
    free(m);
}

int pl_tag_gnn_save(const pl_tag_gnn *m, const char *path, pl_err *err)
{
    return pl_params_save(&m->s, path, err);
}

/* A file that fits the decoder before issue 31 (the sum of an action's device-group
 * embeddings, no candidate features) gets a message saying so instead of a shape: its
 * priors favoured one-group actions on topologies of more groups than it was trained on. */
int pl_tag_gnn_load(pl_tag_gnn *m, const char *path, pl_err *err)
{
    if (pl_params_load(&m->s, path, err) == 0) return 0;
    pl_tag_gnn *old = gnn_new(1, true);
    pl_err ignored = {""};
    bool legacy = pl_params_load(&old->s, path, &ignored) == 0;
    pl_tag_gnn_free(old);
    if (legacy)
        pl_err_set(err,
                   "%s: a prior of the old decoder (the sum of an action's device groups, "
                   "before issue 31): this placer does not read it; retrain it with `placer "
                   "learn-prior` (`make priors`)",
                   path);
    return -1;
}

pl_params *pl_tag_gnn_params(pl_tag_gnn *m)
{
    return &m->s;
}

/* Encoders, then per layer H += relu(GAT(H) + H W_self + b): the GAT has no self loop, and
 * the residual keeps four layers from washing out the node's own features. */
static int encode(pl_tag_gnn *m, const pl_tag_input *in)
{
    pl_tape *t = m->t;
    int nodes = in->n_op + in->n_dev;
    int op = pl_t_input(t, in->n_op, PL_TAG_OP_FEATS, in->op_feat);
    int dev = pl_t_input(t, in->n_dev, PL_TAG_DEV_FEATS, in->dev_feat);
    int parts[2] = {pl_t_relu(t, pl_dense_apply(t, &m->enc_op, op)),
                    pl_t_relu(t, pl_dense_apply(t, &m->enc_dev, dev))};
    int H = pl_t_concat_rows(t, 2, parts);
    pl_gat_edges e[PL_TAG_EDGE_TYPES];
    for (int r = 0; r < PL_TAG_EDGE_TYPES; r++)
        e[r] = (pl_gat_edges){in->n_edges[r], in->ptr[r], in->src[r], in->efeat[r]};
    for (int l = 0; l < TAG_LAYERS; l++) {
        int g = pl_gat_apply(t, &m->gat[l], H, nodes, e);
        H = pl_t_add(t, H, pl_t_relu(t, pl_t_add(t, g, pl_dense_apply(t, &m->self[l], H))));
    }
    return H;
}

/* The candidates' logits [1, n_cand]: x = (mean over the groups c uses of E_dev[j]) ||
 * E_op[group] || onehot(O_c) || c's row of shares, then Dense, relu, Dense (one linear layer
 * would score device groups and option independently: E_op[group] is the same for every
 * candidate and drops out of the softmax). The mean, not the sum: a sum over seven groups is
 * far outside the sums over at most three that the training topologies give, and the prior
 * it gave put 75 % of its mass on one-group actions on TAG's testbed (issue 31, item 4); how
 * much of the topology an action covers is the shares' job. */
/* cand_P with each row divided by its count: the weights of the mean (a row of none stays 0). */
static float *mean_rows(const pl_tag_input *in)
{
    size_t len = (size_t)in->n_cand * in->n_dev;
    float *w = pl_malloc(len * sizeof *w);
    for (int c = 0; c < in->n_cand; c++) {
        const float *p = in->cand_P + (size_t)c * in->n_dev;
        float k = 0;
        for (int j = 0; j < in->n_dev; j++)
            k += p[j];
        for (int j = 0; j < in->n_dev; j++)
            w[(size_t)c * in->n_dev + j] = k > 0 ? p[j] / k : 0;
    }
    return w;
}

static int logits(pl_tag_gnn *m, const pl_tag_input *in)
{
    pl_tape *t = m->t;
    int n = in->n_cand, H = encode(m, in);
    int E_dev = pl_t_slice_rows(t, H, in->n_op, in->n_dev);
    int *idx = pl_malloc((size_t)n * sizeof *idx);
    float *oh = pl_calloc((size_t)n * PL_OPT_COUNT, sizeof *oh), *mean = mean_rows(in);
    for (int c = 0; c < n; c++)
        idx[c] = in->group, oh[(size_t)c * PL_OPT_COUNT + in->cand_option[c]] = 1;
    int parts[4] = {pl_t_matmul(t, pl_t_input(t, n, in->n_dev, mean), E_dev),
                    pl_t_gather(t, H, n, idx), pl_t_input(t, n, PL_OPT_COUNT, oh),
                    pl_t_input(t, n, PL_TAG_CAND_FEATS, in->cand_feat)};
    free(idx), free(oh), free(mean);
    int x = pl_t_concat_cols(t, 4, parts);
    int h = pl_t_relu(t, pl_dense_apply(t, &m->dec1, x));
    return pl_t_transpose(t, pl_dense_apply(t, &m->dec2, h));
}

int pl_tag_gnn_priors(pl_tag_gnn *m, const pl_tag_input *in, double *prior)
{
    pl_tape_reset(m->t);
    const float *z = pl_t_value(m->t, logits(m, in));
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < in->n_cand; c++)
        mx = fmax(mx, z[c]);
    for (int c = 0; c < in->n_cand; c++)
        sum += prior[c] = exp(z[c] - mx);
    for (int c = 0; c < in->n_cand; c++)
        prior[c] /= sum;
    return in->n_cand;
}

double pl_tag_gnn_accumulate(pl_tag_gnn *m, const pl_tag_input *in, const double *target)
{
    pl_tape *t = m->t;
    pl_tape_reset(t);
    float *tg = pl_malloc((size_t)in->n_cand * sizeof *tg);
    for (int c = 0; c < in->n_cand; c++)
        tg[c] = (float)target[c];
    int lp = pl_t_log_softmax(t, logits(m, in));
    int loss = pl_t_scale(t, pl_t_sum(t, pl_t_mul(t, lp, pl_t_input(t, 1, in->n_cand, tg))), -1);
    free(tg);
    pl_tape_backward(t, loss);
    return pl_t_scalar(t, loss);
}

void pl_tag_gnn_update(pl_tag_gnn *m, float lr)
{
    pl_params_clip(&m->s, 5.0);
    m->adam.lr = lr;
    pl_adam_step(&m->adam, &m->s);
    pl_params_zero_grad(&m->s);
}

void pl_tag_gnn_prior(const pl_train_ctx *x, const pl_train_strategy *partial,
                      const pl_train_eval *feedback, int group, const pl_train_action *a, int n,
                      double *prior, void *user)
{
    pl_tag_input *in = pl_tag_input_build(x, partial, feedback, group, a, n);
    pl_tag_gnn_priors(user, in, prior);
    pl_tag_input_free(in);
}
