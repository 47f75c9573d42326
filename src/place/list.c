/* list.c: memory-constrained list scheduling on related devices: ETF (earliest start) and
 * GETF (earliest finish), in O((n·D + E) log n).
 *
 * At each step the scheduler needs min over ready ops v and devices d of a key built from
 * avail(d) (when d is next free) and ready(v, d) (when v's inputs can be on d): start =
 * max(avail, ready), finish = start + t(v, d). ready(v, d) is fixed once v is ready (up to
 * port contention, below) while avail(d) only grows, so per device the ready ops split into
 * "pending" (ready > avail: key from ready; heap P by ready, to migrate, and for GETF heap Q
 * by ready + t, to query) and "available" (ready <= avail: key from avail alone; heap A by
 * priority for ETF, by t then priority for GETF). Each step looks at D heap tops.
 *
 * Contention makes ready(v, d) grow as other transfers take the ports. Keys are re-checked
 * lazily: the winning pair is re-evaluated when transfers were committed since its key was
 * computed, and if its key grew it goes back into the heaps and the step chooses again
 * (keys only grow, so this finds the true minimum, as lazy greedy does).
 *
 * Memory: a pair (v, d) whose op no longer fits on d is dropped when it reaches a heap top;
 * an op dropped everywhere is re-checked on every device before the run fails. */
#include "sched.h"

#include <math.h>
#include <string.h>

enum { ST_NONE, ST_PEND, ST_AVAIL, ST_DEAD };

typedef struct lst {
    pk_sched s;
    list_key key;
    const char *algo;
    int D;
    double *rank;
    unsigned char *st; /* [v * D + d] */
    double *ready;     /* [v * D + d]: ready(v, d) as last computed */
    long *stamp;       /* [v * D + d]: s.stamp when it was computed */
    int *live;         /* per op: devices it is still queued on */
    int *indeg;
    pl_heap *A, *P, *Q;
    pl_err *err;
    bool failed;
} lst;

static size_t at(const lst *L, int v, int d)
{
    return (size_t)v * L->D + d;
}

static double op_t(const lst *L, int v, int d)
{
    return pl_cost_op_s(L->s.k, v, d);
}

static pl_heap_item entry(const lst *L, double k1, int v)
{
    return (pl_heap_item){k1, -L->rank[v], L->s.g->topo_pos[v], v};
}

static void queue_pending(lst *L, int v, int d)
{
    L->st[at(L, v, d)] = ST_PEND;
    double r = L->ready[at(L, v, d)];
    pl_heap_push(&L->P[d], entry(L, r, v));
    if (L->key == LIST_FINISH) pl_heap_push(&L->Q[d], entry(L, r + op_t(L, v, d), v));
}

static void queue_avail(lst *L, int v, int d)
{
    L->st[at(L, v, d)] = ST_AVAIL;
    pl_heap_push(&L->A[d], entry(L, L->key == LIST_FINISH ? op_t(L, v, d) : 0, v));
}

static void queue(lst *L, int v, int d)
{
    size_t i = at(L, v, d);
    L->ready[i] = pk_sched_ready(&L->s, v, d);
    L->stamp[i] = L->s.stamp;
    if (L->ready[i] <= L->s.avail[d])
        queue_avail(L, v, d);
    else
        queue_pending(L, v, d);
}

/* Queues a newly ready op on every device that can run it and has room. */
static void make_ready(lst *L, int v)
{
    L->live[v] = 0;
    for (int d = 0; d < L->D; d++)
        if (isfinite(op_t(L, v, d)) && pk_mem_fits(&L->s.mem, v, d)) queue(L, v, d), L->live[v]++;
    if (!L->live[v] && !L->failed) {
        pk_no_room(L->s.k, &L->s.mem, L->algo, v, L->err);
        L->failed = true;
    }
}

static void drop(lst *L, int v, int d)
{
    L->st[at(L, v, d)] = ST_DEAD;
    if (--L->live[v] == 0) make_ready(L, v); /* last chance: some device may have room now */
}

/* Moves pending ops whose inputs are there by the time d is free into the available heap. */
static void migrate(lst *L, int d)
{
    pl_heap *h = &L->P[d];
    while (h->n) {
        pl_heap_item e = h->v[0];
        size_t i = at(L, e.id, d);
        bool valid = L->st[i] == ST_PEND && L->ready[i] == e.a;
        if (valid && e.a > L->s.avail[d]) break;
        pl_heap_pop(h);
        if (valid) queue_avail(L, e.id, d);
    }
}

static bool entry_valid(const lst *L, const pl_heap_item *e, int d, pl_heap *h)
{
    size_t i = at(L, e->id, d);
    if (h == &L->A[d]) return L->st[i] == ST_AVAIL;
    if (L->st[i] != ST_PEND) return false;
    double want = L->ready[i] + (h == &L->Q[d] ? op_t(L, e->id, d) : 0);
    return e->a == want;
}

/* The first entry of h that is current and still fits on d; NULL when none. */
static const pl_heap_item *clean_top(lst *L, pl_heap *h, int d)
{
    while (h->n) {
        pl_heap_item e = h->v[0];
        if (!entry_valid(L, &e, d, h)) {
            pl_heap_pop(h);
        } else if (!pk_mem_fits(&L->s.mem, e.id, d)) {
            pl_heap_pop(h);
            drop(L, e.id, d);
        } else {
            return &h->v[0];
        }
    }
    return NULL;
}

typedef struct cand {
    pl_heap_item key; /* k1: the start or finish time; then priority */
    int v, d;
    double fin; /* finish time on d: breaks ties between devices for the same op */
} cand;

/* Equal keys for the same op on two devices happen at every idle moment (all devices free
 * at t = 0): the faster device must win, or ETF starts a whole model on a CPU that happens to
 * come first in the cluster and never leaves it. */
static bool cand_less(const cand *x, const cand *y)
{
    if (x->v < 0 || y->v < 0) return y->v < 0 && x->v >= 0; /* no candidate loses */
    if (x->key.a != y->key.a) return x->key.a < y->key.a;
    if (x->key.b != y->key.b) return x->key.b < y->key.b;
    if (x->key.c != y->key.c) return x->key.c < y->key.c;
    return x->fin < y->fin;
}

/* The best pair on device d. */
static cand best_on(lst *L, int d)
{
    cand best = {.v = -1}, c;
    migrate(L, d);
    const pl_heap_item *a = clean_top(L, &L->A[d], d);
    if (a) {
        c.key = *a, c.v = a->id, c.d = d;
        c.key.a = L->s.avail[d] + (L->key == LIST_FINISH ? op_t(L, a->id, d) : 0);
        c.fin = L->s.avail[d] + op_t(L, a->id, d);
        best = c;
    }
    const pl_heap_item *p = clean_top(L, L->key == LIST_FINISH ? &L->Q[d] : &L->P[d], d);
    if (p) {
        c.key = *p, c.v = p->id, c.d = d;
        c.fin = fmax(L->s.avail[d], L->ready[at(L, p->id, d)]) + op_t(L, p->id, d);
        if (cand_less(&c, &best)) best = c;
    }
    return best;
}

/* Re-evaluates ready(v, d) if transfers were committed since; true when the pair's key grew,
 * in which case it is re-queued and the step must choose again. */
static bool key_grew(lst *L, int v, int d)
{
    size_t i = at(L, v, d);
    if (L->s.cont == PL_CONTENTION_NONE || L->stamp[i] == L->s.stamp) return false;
    double r = pk_sched_ready(&L->s, v, d), old = L->ready[i];
    L->stamp[i] = L->s.stamp;
    if (r <= old) return false;
    L->ready[i] = r;
    if (L->st[i] == ST_AVAIL && r <= L->s.avail[d]) return false;
    queue_pending(L, v, d);
    return true;
}

static void commit(lst *L, int v, int d)
{
    double start = fmax(L->s.avail[d], L->ready[at(L, v, d)]);
    pk_sched_commit(&L->s, v, d, start);
    for (int e = 0; e < L->D; e++)
        L->st[at(L, v, e)] = ST_DEAD;
    const pl_graph *g = L->s.g;
    for (int j = g->succ_off[v]; j < g->succ_off[v + 1]; j++)
        if (--L->indeg[g->succ[j]] == 0) make_ready(L, g->succ[j]);
}

/* One step: choose the best pair, re-checking its key, and commit it. */
static int step(lst *L)
{
    for (;;) {
        cand best = {.v = -1};
        for (int d = 0; d < L->D && !L->failed; d++) {
            cand c = best_on(L, d);
            if (cand_less(&c, &best)) best = c;
        }
        if (L->failed) return -1;
        if (best.v < 0) return pl_err_set(L->err, "%s: no ready op (internal error)", L->algo);
        if (key_grew(L, best.v, best.d)) continue;
        commit(L, best.v, best.d);
        return L->failed ? -1 : 0;
    }
}

static void lst_init(lst *L, const pl_cost *k, const pl_place_opts *o, list_key key)
{
    memset(L, 0, sizeof *L);
    pk_sched_init(&L->s, k, o->contention);
    L->key = key;
    L->D = k->n_devs;
    size_t cells = (size_t)k->n_ops * L->D + 1;
    L->rank = pl_malloc((k->n_ops + 1) * sizeof *L->rank);
    pk_upward_rank(k, L->rank);
    L->st = pl_calloc(cells, 1);
    L->ready = pl_calloc(cells, sizeof *L->ready);
    L->stamp = pl_calloc(cells, sizeof *L->stamp);
    L->live = pl_calloc(k->n_ops + 1, sizeof *L->live);
    L->indeg = pl_malloc((k->n_ops + 1) * sizeof *L->indeg);
    for (int v = 0; v < k->n_ops; v++)
        L->indeg[v] = k->g->pred_off[v + 1] - k->g->pred_off[v];
    L->A = pl_calloc(L->D, sizeof *L->A);
    L->P = pl_calloc(L->D, sizeof *L->P);
    L->Q = pl_calloc(L->D, sizeof *L->Q);
}

static void lst_free(lst *L)
{
    for (int d = 0; d < L->D; d++)
        pl_heap_free(&L->A[d]), pl_heap_free(&L->P[d]), pl_heap_free(&L->Q[d]);
    free(L->A), free(L->P), free(L->Q);
    free(L->rank), free(L->st), free(L->ready), free(L->stamp), free(L->live), free(L->indeg);
    pk_sched_free(&L->s);
}

static void set_priority(pl_plan *out, const double *rank, int n)
{
    free(out->priority);
    out->priority = pl_malloc((n + 1) * sizeof *out->priority);
    for (int v = 0; v < n; v++)
        out->priority[v] = -rank[v]; /* larger rank runs first */
}

int pk_list(const pl_cost *k, const pl_place_opts *o, list_key key, const char *algo, pl_plan *out,
            pl_err *err)
{
    if (pk_precheck(k, err) < 0) return -1;
    lst L;
    lst_init(&L, k, o, key);
    L.algo = algo, L.err = err;
    for (int i = 0; i < k->n_ops && !L.failed; i++)
        if (L.indeg[k->g->topo[i]] == 0) make_ready(&L, k->g->topo[i]);
    int rc = L.failed ? -1 : 0;
    for (int i = 0; i < k->n_ops && rc == 0; i++)
        rc = step(&L);
    if (rc == 0) {
        pk_sched_to_plan(&L.s, out, false);
        set_priority(out, L.rank, k->n_ops);
    }
    lst_free(&L);
    return rc;
}
