/* baselines.c: Talos's two baselines (docs/multi.md, "Baselines").
 *
 * ASWM (average speedup within a model; Salus, AlloX, Gavel): each model wholly on one device,
 * the models with the largest average speedup choosing first, each the device not yet taken
 * where its average speedup (its summed time on the reference device over its summed time
 * there) is largest; once every device is taken, a model shares its best one.
 * TSAM (transient speedup across models; Baechi): when a device is free and ops are ready, the
 * (ready op, free device) pair with the largest speedup is placed there at once, repeatedly:
 * the op takes a free device even when it would run faster on a busy one. */
#include "multi_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- ASWM ---- */

/* Average speedup of tenant m on device d: 0 when d cannot run one of its ops. */
static double avg_speedup(const pl_cost *k, int m, int d, int ref)
{
    double on_ref = 0, on_d = 0;
    for (int v = 0; v < k->g->n_ops; v++) {
        if (k->g->ops[v].tenant != m) continue;
        double t = pl_cost_op_s(k, v, d);
        if (!isfinite(t)) return 0;
        on_ref += pl_cost_op_s(k, v, ref), on_d += t;
    }
    if (on_d <= 0) return on_ref > 0 ? INFINITY : 1;
    return on_ref / on_d;
}

/* Puts all of tenant m on d if it fits (memory kept in mt), else nothing. */
static bool put_model(const pl_cost *k, pl_mem_track *mt, int m, int d, int *dev)
{
    int n = k->g->n_ops, done = 0;
    for (int v = 0; v < n; v++) {
        if (k->g->ops[v].tenant != m) continue;
        if (!pl_mem_track_fits(mt, v, d)) break;
        pl_mem_track_add(mt, v, d), done++;
    }
    int total = 0;
    for (int v = 0; v < n; v++)
        total += k->g->ops[v].tenant == m;
    if (done == total) {
        for (int v = 0; v < n; v++)
            if (k->g->ops[v].tenant == m) dev[v] = d;
        return true;
    }
    for (int v = 0; v < n && done > 0; v++)
        if (k->g->ops[v].tenant == m) pl_mem_track_remove(mt, v, d), done--;
    return false;
}

int mt_aswm(const pl_cost *k, pl_plan *out, pl_err *err)
{
    int T = pl_graph_tenants(k->g), D = k->n_devs, ref = mt_ref_device(k), rc = 0;
    double *sp = pl_malloc((size_t)T * D * sizeof *sp), *best = pl_calloc(T + 1, sizeof *best);
    for (int m = 0; m < T; m++)
        for (int d = 0; d < D; d++)
            best[m] = fmax(best[m], sp[m * D + d] = avg_speedup(k, m, d, ref));
    int *order = pl_malloc((size_t)T * sizeof *order);
    bool *taken = pl_calloc((size_t)D + 1, sizeof *taken), *done = pl_calloc(T + 1, 1);
    pl_mem_track *mt = pl_mem_track_new(k);
    for (int i = 0; i < T; i++) { /* the largest best average speedup first */
        int pick = -1;
        for (int m = 0; m < T; m++)
            if (!done[m] && (pick < 0 || best[m] > best[pick])) pick = m;
        done[pick] = true, order[i] = pick;
    }
    for (int i = 0; i < T && rc == 0; i++) {
        int m = order[i], placed = -1;
        for (int pass = 0; pass < 2 && placed < 0; pass++) { /* free devices, then any */
            int *cand = pl_malloc((size_t)D * sizeof *cand), nc = 0;
            for (int d = 0; d < D; d++)
                if (sp[m * D + d] > 0 && (pass == 1 || !taken[d])) cand[nc++] = d;
            while (nc > 0 && placed < 0) {
                int b = 0;
                for (int j = 1; j < nc; j++)
                    if (sp[m * D + cand[j]] > sp[m * D + cand[b]]) b = j;
                if (put_model(k, mt, m, cand[b], out->dev)) placed = cand[b];
                cand[b] = cand[--nc];
            }
            free(cand);
        }
        if (placed < 0)
            rc = pl_err_set(err, "aswm: model '%s' fits wholly on no device",
                            k->g->n_tenants ? k->g->tenant_names[m] : k->g->name);
        else
            taken[placed] = true;
    }
    pl_mem_track_free(mt);
    free(sp), free(best), free(order), free(taken), free(done);
    return rc;
}

/* ---- TSAM ---- */

typedef struct ts_state {
    const pl_cost *k;
    const mt_packs *p; /* one op per pack */
    int D, n, ref;
    int *dev, *left;
    double *fin, *avail, *sp_max;
    int *ready, n_ready;
    int *seq, n_seq;
    pl_mem_track *mem;
} ts_state;

static double arrival(const ts_state *s, int q, int d)
{
    const pl_graph *g = s->k->g;
    const pl_op *o = &g->ops[s->p->mem[s->p->moff[q]]];
    double r = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        int t = o->inputs[i];
        if (t < 0) continue;
        int u = g->tensors[t].producer;
        int from = u >= 0 ? s->dev[s->p->of[u]] : s->k->c->io_device;
        if (u < 0 && !(g->tensors[t].flags & PL_TENSOR_INPUT)) continue;
        double at = u >= 0 ? s->fin[s->p->of[u]] : 0;
        r = fmax(r, at + (from >= 0 && from != d ? pl_cost_xfer_s(s->k, t, from, d) : 0));
    }
    return r;
}

/* The best (ready op, free device) pair at time now: largest speedup on the device, ties to
 * the op that gains least elsewhere, then the earlier op. -1 when none. */
static int best_pair(const ts_state *s, double now, int *dev_out)
{
    int bi = -1, bd = -1;
    double bsp = -1;
    for (int i = 0; i < s->n_ready; i++) {
        int q = s->ready[i];
        const double *t = s->p->t + (size_t)q * s->D;
        for (int d = 0; d < s->D; d++) {
            if (s->avail[d] > now || !isfinite(t[d])) continue;
            if (!pl_mem_track_fits(s->mem, s->p->mem[s->p->moff[q]], d)) continue;
            double sp = t[d] > 1e-12 ? t[s->ref] / t[d] : (t[s->ref] > 1e-12 ? INFINITY : 1);
            int cur = bi >= 0 ? s->ready[bi] : -1;
            if (bi < 0 || sp > bsp ||
                (sp == bsp &&
                 (s->sp_max[q] < s->sp_max[cur] || (s->sp_max[q] == s->sp_max[cur] && q < cur))))
                bi = i, bd = d, bsp = sp;
        }
    }
    *dev_out = bd;
    return bi;
}

static void ts_place(ts_state *s, int i, int d, double now)
{
    int q = s->ready[i];
    s->ready[i] = s->ready[--s->n_ready];
    s->dev[q] = d;
    double start = fmax(now, arrival(s, q, d));
    s->fin[q] = s->avail[d] = start + s->p->t[(size_t)q * s->D + d];
    pl_mem_track_add(s->mem, s->p->mem[s->p->moff[q]], d);
    s->seq[s->n_seq++] = q;
}

/* Ops whose predecessors have all ended by now become ready. */
static void release(ts_state *s, double now, bool *queued)
{
    for (int q = 0; q < s->n; q++) {
        if (queued[q] || s->left[q] > 0) continue;
        bool ended = true;
        for (int e = s->p->poff[q]; e < s->p->poff[q + 1] && ended; e++)
            ended = s->fin[s->p->pred[e]] <= now;
        if (ended) queued[q] = true, s->ready[s->n_ready++] = q;
    }
}

static double next_event(const ts_state *s, double now)
{
    double t = INFINITY;
    for (int d = 0; d < s->D; d++)
        if (s->avail[d] > now) t = fmin(t, s->avail[d]);
    for (int q = 0; q < s->n; q++)
        if (s->dev[q] >= 0 && s->fin[q] > now) t = fmin(t, s->fin[q]);
    return t;
}

static int ts_run(ts_state *s, pl_err *err)
{
    bool *queued = pl_calloc((size_t)s->n + 1, sizeof *queued);
    double now = 0;
    int rc = 0;
    while (s->n_seq < s->n) {
        release(s, now, queued);
        int d, i, placed = 0;
        while ((i = best_pair(s, now, &d)) >= 0) {
            int q = s->ready[i];
            ts_place(s, i, d, now), placed++;
            for (int e = s->p->soff[q]; e < s->p->soff[q + 1]; e++)
                s->left[s->p->succ[e]]--;
        }
        double t = next_event(s, now);
        /* an op of no time (a Constant) ends at now: its successors are ready at now, and on
         * one device no other event would come to release them */
        if (!isfinite(t) && placed) continue;
        if (!isfinite(t)) { /* ready ops and free devices, but none fits */
            rc = pl_mem_track_no_room(s->mem, "tsam", s->p->mem[s->p->moff[s->ready[0]]], err);
            break;
        }
        now = t;
    }
    free(queued);
    return rc;
}

int mt_tsam(const pl_cost *k, pl_plan *out, pl_err *err)
{
    pl_multi_opts o;
    pl_multi_opts_default(&o);
    o.no_pack = true;
    ts_state s = {.k = k, .D = k->n_devs, .ref = mt_ref_device(k)};
    mt_packs p;
    mt_pack(k, &o, s.ref, NULL, &p);
    s.p = &p, s.n = p.n;
    s.dev = pl_malloc((size_t)p.n * sizeof *s.dev);
    s.left = pl_malloc((size_t)p.n * sizeof *s.left);
    s.fin = pl_calloc((size_t)p.n + 1, sizeof *s.fin);
    s.avail = pl_calloc((size_t)s.D + 1, sizeof *s.avail);
    s.sp_max = pl_malloc((size_t)p.n * sizeof *s.sp_max);
    s.ready = pl_malloc((size_t)p.n * sizeof *s.ready);
    s.seq = pl_malloc((size_t)p.n * sizeof *s.seq);
    s.mem = pl_mem_track_new(k);
    for (int q = 0; q < p.n; q++) {
        s.dev[q] = -1, s.left[q] = p.poff[q + 1] - p.poff[q];
        s.sp_max[q] = mt_speedup(p.t + (size_t)q * s.D, s.D, s.ref);
    }
    int rc = ts_run(&s, err);
    if (rc == 0) {
        int *seq = pl_malloc((size_t)p.n * sizeof *seq);
        for (int i = 0; i < p.n; i++) { /* one op per pack: pack order is op placement order */
            int v = p.mem[p.moff[s.seq[i]]];
            out->dev[v] = s.dev[s.seq[i]], seq[i] = v;
        }
        pl_plan_set_order(out, seq);
        free(seq);
    }
    pl_mem_track_free(s.mem);
    free(s.dev), free(s.left), free(s.fin), free(s.avail), free(s.sp_max), free(s.ready);
    free(s.seq);
    mt_packs_free(&p);
    return rc;
}
