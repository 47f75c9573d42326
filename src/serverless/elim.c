/* elim.c: MOPAR's graph simplification (Algorithm 1, lines 2-6; docs/serverless.md,
 * "Simplification").
 *
 * Node elimination: a layer with one layer before it and one after it, whose memory (weights
 * and activations) is within `threshold` of the one after's, is merged into the one after: a
 * cut between two layers of about the same memory saves little, so the DP need not consider
 * it. Merged, the layer's activations are the larger (Eq. 1, a chain's memory is its largest
 * op's), its weights and time the sums.
 * Edge elimination: the tensors a layer then sends to the same layers are merged into one
 * edge (one transfer). Both repeat until neither changes the graph. */
#include "placer/serverless.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

pl_sl_graph *pl_sl_new(int n, int n_tensors)
{
    pl_sl_graph *sg = pl_calloc(1, sizeof *sg);
    sg->layers = pl_calloc((size_t)n + 1, sizeof *sg->layers);
    sg->tensors = pl_calloc((size_t)n_tensors + 1, sizeof *sg->tensors);
    sg->n = sg->n_before = n, sg->n_tensors = n_tensors;
    return sg;
}

void pl_sl_free(pl_sl_graph *sg)
{
    if (!sg) return;
    for (int l = 0; l < sg->n; l++)
        free(sg->layers[l].ops), free(sg->layers[l].wts), free(sg->layers[l].gins);
    for (int t = 0; t < sg->n_tensors; t++)
        free(sg->tensors[t].to);
    free(sg->layers), free(sg->tensors), free(sg->wt_mb), free(sg->gin_bytes), free(sg);
}

/* The one layer that sends layer v tensors (-1: none or several), and the one it sends to. */
static int only_pred(const pl_sl_graph *sg, int v)
{
    int p = -1;
    for (int t = 0; t < sg->n_tensors; t++)
        for (int k = 0; k < sg->tensors[t].n_to; k++)
            if (sg->tensors[t].to[k] == v) {
                if (p >= 0 && p != sg->tensors[t].from) return -1;
                p = sg->tensors[t].from;
            }
    return p;
}

static int only_succ(const pl_sl_graph *sg, int v)
{
    int s = -1;
    for (int t = 0; t < sg->n_tensors; t++)
        if (sg->tensors[t].from == v)
            for (int k = 0; k < sg->tensors[t].n_to; k++) {
                if (s >= 0 && s != sg->tensors[t].to[k]) return -1;
                s = sg->tensors[t].to[k];
            }
    return s;
}

/* A layer's memory: its weights (its own and those it shares) and its activations. */
static double total_mb(const pl_sl_graph *sg, const pl_sl_layer *l)
{
    double m = l->weight_mb + l->mem_mb;
    for (int k = 0; k < l->n_wts; k++)
        m += sg->wt_mb[l->wts[k]];
    return m;
}

static bool similar(double mv, double mw, double threshold)
{
    return mv > 0 ? fabs(mv - mw) / mv <= threshold : mw == 0;
}

/* The ids of both lists, each once, into a; b is emptied. */
static void union_ids(int **a, int *na, int **b, int *nb)
{
    for (int k = 0; k < *nb; k++) {
        bool has = false;
        for (int m = 0; m < *na && !has; m++)
            has = (*a)[m] == (*b)[k];
        if (has) continue;
        *a = pl_realloc(*a, ((size_t)*na + 1) * sizeof **a);
        (*a)[(*na)++] = (*b)[k];
    }
    free(*b), *b = NULL, *nb = 0;
}

/* Layer v's ops, time and memory go to layer w (v < w). */
static void absorb(pl_sl_layer *w, pl_sl_layer *v)
{
    if (v->n_ops) {
        int *ops = pl_malloc(((size_t)v->n_ops + w->n_ops) * sizeof *ops);
        if (v->n_ops) memcpy(ops, v->ops, (size_t)v->n_ops * sizeof *ops);
        if (w->n_ops) memcpy(ops + v->n_ops, w->ops, (size_t)w->n_ops * sizeof *ops);
        free(w->ops), free(v->ops);
        w->ops = ops, w->n_ops += v->n_ops;
    }
    v->ops = NULL, v->n_ops = 0;
    w->mem_mb = fmax(w->mem_mb, v->mem_mb), w->weight_mb += v->weight_mb;
    union_ids(&w->wts, &w->n_wts, &v->wts, &v->n_wts);     /* shared weights */
    union_ids(&w->gins, &w->n_gins, &v->gins, &v->n_gins); /* graph inputs */
    w->gout_bytes += v->gout_bytes;
    w->t1_s += v->t1_s, w->par_s += v->par_s, w->out_bytes += v->out_bytes;
    w->n_dominant += v->n_dominant;
}

/* Drops tensor t (made and read inside one layer now). */
static void drop_tensor(pl_sl_graph *sg, int t)
{
    free(sg->tensors[t].to);
    sg->tensors[t] = sg->tensors[--sg->n_tensors];
}

/* Removes layer v (merged into a later one): later layers move down one place. */
static void remove_layer(pl_sl_graph *sg, int v)
{
    memmove(&sg->layers[v], &sg->layers[v + 1], (size_t)(sg->n - v - 1) * sizeof *sg->layers);
    sg->n--;
    for (int t = 0; t < sg->n_tensors; t++) {
        pl_sl_tensor *tp = &sg->tensors[t];
        if (tp->from > v) tp->from--;
        for (int k = 0; k < tp->n_to; k++)
            if (tp->to[k] > v) tp->to[k]--;
    }
}

/* Merges v into w, its only successor: v's tensors to w become internal, tensors into v go to
 * w (once). */
static void merge(pl_sl_graph *sg, int v, int w)
{
    absorb(&sg->layers[w], &sg->layers[v]);
    for (int t = sg->n_tensors - 1; t >= 0; t--)
        if (sg->tensors[t].from == v) drop_tensor(sg, t);
    for (int t = 0; t < sg->n_tensors; t++) {
        pl_sl_tensor *tp = &sg->tensors[t];
        int m = 0;
        bool has_w = false;
        for (int k = 0; k < tp->n_to; k++)
            has_w |= tp->to[k] == w;
        for (int k = 0; k < tp->n_to; k++) {
            int to = tp->to[k] == v ? w : tp->to[k];
            if (to == w && tp->to[k] == v && has_w) continue;
            if (to == w) has_w = true;
            tp->to[m++] = to;
        }
        tp->n_to = m;
    }
    remove_layer(sg, v);
}

/* One sweep: every layer that qualifies is merged (the next layer then takes its index). */
static bool node_pass(pl_sl_graph *sg, double threshold)
{
    bool changed = false;
    for (int v = 0; v < sg->n;) {
        int p = only_pred(sg, v), w = only_succ(sg, v);
        if (p < 0 || w < 0 ||
            !similar(total_mb(sg, &sg->layers[v]), total_mb(sg, &sg->layers[w]), threshold)) {
            v++;
            continue;
        }
        merge(sg, v, w);
        sg->node_elims++, changed = true;
    }
    return changed;
}

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static bool same_edge(const pl_sl_tensor *a, const pl_sl_tensor *b)
{
    return a->from == b->from && a->n_to == b->n_to &&
           !memcmp(a->to, b->to, (size_t)a->n_to * sizeof *a->to);
}

/* Merges tensors with the same maker and the same readers into one edge. */
static bool edge_pass(pl_sl_graph *sg)
{
    bool changed = false;
    for (int t = 0; t < sg->n_tensors; t++)
        qsort(sg->tensors[t].to, sg->tensors[t].n_to, sizeof(int), cmp_int);
    for (int a = 0; a < sg->n_tensors; a++)
        for (int b = sg->n_tensors - 1; b > a; b--)
            if (same_edge(&sg->tensors[a], &sg->tensors[b])) {
                sg->tensors[a].bytes += sg->tensors[b].bytes;
                drop_tensor(sg, b);
                sg->edge_elims++, changed = true;
            }
    return changed;
}

void pl_sl_eliminate(pl_sl_graph *sg, double threshold)
{
    if (!(threshold >= 0)) threshold = 0.05;
    bool changed = true;
    while (changed) {
        changed = false;
        changed |= node_pass(sg, threshold);
        changed |= edge_pass(sg);
    }
}
