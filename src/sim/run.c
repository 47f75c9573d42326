/* run.c: the event loop (docs/simulator.md).
 *
 * Events are op ends and transfer ends, in a heap ordered by time. All events at one instant
 * are applied first (devices and ports freed, inputs arrived, memory released), then every
 * idle device and free port picks its next op or transfer: so "first ready" compares everything
 * that became ready at that instant, whatever order the events were popped in. Starting a
 * zero-duration op or transfer adds an event at the same instant, handled in the next pass.
 *
 * An op instance (request r, op i) is [r * n + i]; a transfer instance [r * n_slots + s]. Each
 * op instance counts the releases it still waits for (missing): its inputs, its predecessor
 * in its device's order, and the same op of the previous request; at zero it joins its
 * device's ready heap. A transfer instance likewise counts its data and, with the plan's
 * transfer order, the transfer before it on each of its ports (xorder.c); at zero it queues
 * for its ports, or, taking no time, starts at once. */
#include "sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { EV_OP_END, EV_XFER_END };

typedef struct ev_ctx {
    const sim_static *s;
    const pl_sim_opts *o;
    sim_run *run;
    int n, D, S, K;
    double now;
    pl_heap events;
    pl_heap *ready; /* per device: op instances ready to start */
    pl_heap *queue; /* per ordered pair: transfer instances waiting, FIFO by readiness */
    int *wait_from; /* per sender: transfers waiting in its queues */
    bool *dev_busy, *send_busy, *recv_busy, *pair_busy;
    int *dev_last;     /* per device: the instance it ran last */
    int *missing;      /* per op instance */
    int *slot_missing; /* per transfer instance: its data, its port predecessors (strict) */
    int *refs;         /* per (request, copy): releases still to come */
    int *req_left;     /* per request: op instances and returns still to end */
    double *cur;       /* per device: bytes held now */
    bool *mem_dirty;
    int *dirty, n_dirty;
    /* Shared memory (s->share.n_dom > 0): per device of a domain, the op instance it runs
     * (-1: idle), its progress left in seconds of its time alone as of `since`, the rate it
     * progresses at, and its end as things stand; per domain, whether its set of running ops
     * changed at this instant. */
    int *run_inst;
    double *left, *rate, *since, *end_at;
    bool *dom_dirty;
} ev_ctx;

/* ---- memory ---- */

static void mem_add(ev_ctx *x, int d, double bytes)
{
    x->cur[d] += bytes;
    if (!x->mem_dirty[d]) x->mem_dirty[d] = true, x->dirty[x->n_dirty++] = d;
}

/* Peaks are taken when time moves on, so an instant's frees and allocations are netted:
 * a lifetime is the half-open interval [alloc, free). */
static void mem_flush(ev_ctx *x)
{
    for (int i = 0; i < x->n_dirty; i++) {
        int d = x->dirty[i];
        if (x->cur[d] > x->run->peak[d]) x->run->peak[d] = x->cur[d];
        x->mem_dirty[d] = false;
    }
    x->n_dirty = 0;
}

static void copy_alloc(ev_ctx *x, int c)
{
    mem_add(x, x->s->copies[c].dev, x->s->copies[c].bytes);
}

static void copy_release(ev_ctx *x, int r, int c)
{
    if (--x->refs[(size_t)r * x->s->n_copies + c] == 0)
        mem_add(x, x->s->copies[c].dev, -x->s->copies[c].bytes);
}

/* ---- readiness ---- */

static void op_ready(ev_ctx *x, int inst)
{
    const sim_static *s = x->s;
    int r = inst / x->n, op = inst % x->n;
    pl_heap_item it = {r, 0, 0, inst};
    if (s->order_pos)
        it.b = s->order_pos[op];
    else {
        it.b = s->p->priority ? s->p->priority[op] : x->now;
        if (isnan(it.b)) it.b = INFINITY; /* NaN would break the heap's order: last */
        it.c = s->g->topo_pos[op];
    }
    pl_heap_push(&x->ready[s->p->dev[op]], it);
}

static void release_op(ev_ctx *x, int r, int op)
{
    int inst = r * x->n + op;
    if (--x->missing[inst] == 0) op_ready(x, inst);
}

static void start_slot(ev_ctx *x, int inst);

/* A zero-time transfer holds no port: it starts (and ends) the instant it is ready. Others
 * queue on their pair: in the plan's transfer order (earliest request, then rank), else FIFO
 * by readiness time, ties by request, then tensor, then destination, then the reader's
 * topological position (per_edge). */
static void slot_ready(ev_ctx *x, int r, int slot)
{
    const sim_static *s = x->s;
    const sim_slot *sl = &s->slots[slot];
    int inst = r * x->S + slot;
    if (!(sl->dur > 0)) return start_slot(x, inst);
    pl_heap_item it = {r, 0, 0, inst};
    if (s->strict)
        it.b = s->rank[slot];
    else
        it = (pl_heap_item){x->now, ((double)r * s->n_tensors + sl->tensor) * x->D + sl->to,
                            sl->reader >= 0 ? s->g->topo_pos[sl->reader] + 1 : 0, inst};
    pl_heap_push(&x->queue[sl->from * x->D + sl->to], it);
    x->wait_from[sl->from]++;
}

static void release_slot(ev_ctx *x, int r, int slot)
{
    if (slot >= 0 && --x->slot_missing[(size_t)r * x->S + slot] == 0) slot_ready(x, r, slot);
}

/* A request ends with its last op or output return; its outputs are then let go. */
static void request_finish(ev_ctx *x, int r)
{
    x->run->req_end[r] = x->now;
    for (int i = 0; i < x->s->n_holds; i++)
        copy_release(x, r, x->s->holds[i]);
}

static void request_step(ev_ctx *x, int r)
{
    if (--x->req_left[r] == 0) request_finish(x, r);
}

static void request_started(ev_ctx *x, int r)
{
    if (x->now < x->run->req_start[r]) x->run->req_start[r] = x->now;
}

/* ---- shared memory (docs/simulator.md, "Shared memory") ---- */

/* A device of a domain starts or ends an op: its domain is re-rated once this instant's
 * starts are known (share_rerate). An op starts at the rate of running alone. */
static void share_start(ev_ctx *x, int d, int inst, double end)
{
    x->run_inst[d] = inst, x->left[d] = x->s->dur[inst % x->n], x->rate[d] = 1;
    x->since[d] = x->now, x->end_at[d] = end;
    x->dom_dirty[x->s->share.dom[d]] = true;
}

/* An end event that a re-rating has moved is stale: the op ends at its latest end only. */
static bool share_stale(const ev_ctx *x, int inst, double at)
{
    int d = x->s->p->dev[inst % x->n];
    return x->s->share.n_dom && x->s->share.dom[d] >= 0 &&
           (x->run_inst[d] != inst || at != x->end_at[d]);
}

static void share_end(ev_ctx *x, int d, int inst)
{
    x->run_inst[d] = -1;
    x->dom_dirty[x->s->share.dom[d]] = true;
    x->run->busy[d] += x->run->op_end[inst] - x->run->op_start[inst];
}

/* Device d's op goes on at factor f from now: what it did since the last change is booked at
 * the old rate, and its end moves (a new event; the old one goes stale). Unchanged rates
 * keep their end to the bit. */
static void share_set_rate(ev_ctx *x, int d, double f, int drawing)
{
    const sim_static *s = x->s;
    int inst = x->run_inst[d], op = inst % x->n;
    int others = sim_share_others(&s->share, op, drawing);
    double dur = s->dur[op], t = sim_share_time(&s->share, op, dur, f, others);
    double rate = t > dur ? dur / t : 1;
    if (rate == x->rate[d]) return;
    x->left[d] -= (x->now - x->since[d]) * x->rate[d];
    if (x->left[d] < 0) x->left[d] = 0;
    x->since[d] = x->now, x->rate[d] = rate;
    x->end_at[d] = x->run->op_end[inst] = x->now + x->left[d] / rate;
    pl_heap_push(&x->events, (pl_heap_item){x->end_at[d], EV_OP_END, 0, inst});
}

/* Every domain whose running set changed this instant: the factor from the summed demand of
 * its running ops (in device order, so the sum is the same bits every run) and the count of
 * those drawing shared memory (the stall), applied to each. */
static void share_rerate(ev_ctx *x)
{
    const sim_share *m = &x->s->share;
    for (int i = 0; i < m->n_dom; i++) {
        if (!x->dom_dirty[i]) continue;
        x->dom_dirty[i] = false;
        double demand = 0;
        for (int j = m->dom_off[i]; j < m->dom_off[i + 1]; j++)
            if (x->run_inst[m->dom_dev[j]] >= 0)
                demand += m->demand[x->run_inst[m->dom_dev[j]] % x->n];
        double f = sim_share_factor(m, i, demand);
        int drawing = sim_share_drawing(m, i, x->run_inst, x->n);
        for (int j = m->dom_off[i]; j < m->dom_off[i + 1]; j++)
            if (x->run_inst[m->dom_dev[j]] >= 0) share_set_rate(x, m->dom_dev[j], f, drawing);
    }
}

/* ---- ops ---- */

static void start_op(ev_ctx *x, int d)
{
    const sim_static *s = x->s;
    int inst = pl_heap_pop(&x->ready[d]).id, r = inst / x->n, op = inst % x->n;
    double end = x->now + s->dur[op];
    x->run->op_start[inst] = x->now, x->run->op_end[inst] = end;
    x->run->dev_prev[inst] = x->dev_last[d];
    x->dev_last[d] = inst, x->dev_busy[d] = true;
    if (s->share.n_dom && s->share.dom[d] >= 0)
        share_start(x, d, inst, end); /* its busy time is booked when it ends */
    else
        x->run->busy[d] += s->dur[op];
    request_started(x, r);
    for (int k = s->out_off[op]; k < s->out_off[op + 1]; k++)
        copy_alloc(x, s->out[k]);
    if (s->extra[op] > 0) mem_add(x, d, s->extra[op]);
    pl_heap_push(&x->events, (pl_heap_item){end, EV_OP_END, 0, inst});
}

/* A copy has arrived: its readers stop waiting for it. */
static void copy_ready(ev_ctx *x, int r, int c)
{
    for (int i = x->s->rd_off[c]; i < x->s->rd_off[c + 1]; i++)
        release_op(x, r, x->s->rd[i]);
}

/* An output is ready for the readers on its device, and for each of its transfers. */
static void output_ready(ev_ctx *x, int r, int t)
{
    const sim_static *s = x->s;
    copy_ready(x, r, t);
    for (int c = s->head[t]; c >= 0; c = s->copies[c].next)
        if (s->copies[c].slot >= 0) release_slot(x, r, s->copies[c].slot);
    copy_release(x, r, t); /* the producer's own hold on it */
}

static void end_op(ev_ctx *x, int inst)
{
    const sim_static *s = x->s;
    int r = inst / x->n, op = inst % x->n, d = s->p->dev[op];
    x->dev_busy[d] = false;
    x->run->done++;
    if (s->share.n_dom && s->share.dom[d] >= 0) share_end(x, d, inst);
    for (int i = s->in_off[op]; i < s->in_off[op + 1]; i++)
        copy_release(x, r, s->in[i].copy);
    if (s->extra[op] > 0) mem_add(x, d, -s->extra[op]);
    for (int k = s->out_off[op]; k < s->out_off[op + 1]; k++)
        output_ready(x, r, s->out[k]);
    if (s->order_next && s->order_next[op] >= 0) release_op(x, r, s->order_next[op]);
    if (r + 1 < x->K) release_op(x, r + 1, op);
    request_step(x, r);
}

/* ---- transfers ---- */

/* A transfer that takes time holds (busy) or frees its ports, or its channel; a zero-time
 * one never holds any. */
static void hold_ports(ev_ctx *x, const sim_slot *sl, bool busy)
{
    if (!(sl->dur > 0)) return;
    if (x->o->contention == PL_CONTENTION_PORTS)
        x->send_busy[sl->from] = x->recv_busy[sl->to] = busy;
    else if (x->o->contention == PL_CONTENTION_PAIR)
        x->pair_busy[sl->from * x->D + sl->to] = busy;
}

/* Starts a transfer instance. */
static void start_slot(ev_ctx *x, int inst)
{
    const sim_static *s = x->s;
    int r = inst / x->S, slot = inst % x->S;
    const sim_slot *sl = &s->slots[slot];
    int a = sl->from, b = sl->to;
    double dur = sl->dur; /* given pair times win (pl_cost_xfer_s) */
    hold_ports(x, sl, true);
    x->run->slot_start[inst] = x->now, x->run->slot_end[inst] = x->now + dur;
    x->run->xfer_seq[x->run->n_xfer++] = inst;
    x->run->link_bytes[a * x->D + b] += s->copies[sl->copy].bytes;
    x->run->link_busy[a * x->D + b] += dur;
    request_started(x, r);
    copy_alloc(x, sl->copy);
    pl_heap_push(&x->events, (pl_heap_item){x->now + dur, EV_XFER_END, 0, inst});
}

static void start_xfer(ev_ctx *x, int a, int b)
{
    int inst = pl_heap_pop(&x->queue[a * x->D + b]).id;
    x->wait_from[a]--;
    start_slot(x, inst);
}

static void end_xfer(ev_ctx *x, int inst)
{
    const sim_static *s = x->s;
    int r = inst / x->S, slot = inst % x->S;
    const sim_slot *sl = &s->slots[slot];
    hold_ports(x, sl, false);
    if (s->strict) /* the next transfer in each port's order may go */
        release_slot(x, r, s->port_next[2 * slot]), release_slot(x, r, s->port_next[2 * slot + 1]);
    copy_ready(x, r, sl->copy);
    copy_release(x, r, sl->tensor); /* the send's hold on the source copy */
    if (sl->ret) request_step(x, r);
}

/* PORTS: repeatedly start the earliest waiting transfer (FIFO key) whose sender's send port
 * and receiver's receive port are both free; a blocked transfer does not block others. */
static void dispatch_ports(ev_ctx *x)
{
    for (;;) {
        const pl_heap_item *best = NULL;
        int ba = -1, bb = -1;
        for (int a = 0; a < x->D; a++) {
            if (x->send_busy[a] || !x->wait_from[a]) continue;
            for (int b = 0; b < x->D; b++) {
                const pl_heap *q = &x->queue[a * x->D + b];
                if (x->recv_busy[b] || !q->n || (best && !pl_heap_less(&q->v[0], best))) continue;
                best = &q->v[0], ba = a, bb = b;
            }
        }
        if (!best) return;
        start_xfer(x, ba, bb);
    }
}

static void dispatch_xfers(ev_ctx *x)
{
    if (x->o->contention == PL_CONTENTION_PORTS) return dispatch_ports(x);
    for (int a = 0; a < x->D; a++) {
        if (!x->wait_from[a]) continue;
        for (int b = 0; b < x->D; b++) {
            pl_heap *q = &x->queue[a * x->D + b];
            if (x->o->contention == PL_CONTENTION_PAIR) {
                if (q->n && !x->pair_busy[a * x->D + b]) start_xfer(x, a, b);
            } else {
                while (q->n)
                    start_xfer(x, a, b);
            }
        }
    }
}

static void dispatch(ev_ctx *x)
{
    dispatch_xfers(x);
    for (int d = 0; d < x->D; d++)
        if (!x->dev_busy[d] && x->ready[d].n) start_op(x, d);
    if (x->s->share.n_dom) share_rerate(x);
}

/* ---- set-up ---- */

static void alloc_run(ev_ctx *x)
{
    sim_run *run = x->run;
    size_t ni = (size_t)x->n * x->K + 1, ns = (size_t)x->S * x->K + 1, dd = (size_t)x->D * x->D + 1;
    run->K = x->K;
    run->op_start = pl_malloc(ni * sizeof *run->op_start);
    run->op_end = pl_malloc(ni * sizeof *run->op_end);
    run->dev_prev = pl_malloc(ni * sizeof *run->dev_prev);
    for (size_t i = 0; i < ni; i++)
        run->op_start[i] = run->op_end[i] = -1, run->dev_prev[i] = -1;
    run->slot_start = pl_malloc(ns * sizeof *run->slot_start);
    run->slot_end = pl_malloc(ns * sizeof *run->slot_end);
    for (size_t i = 0; i < ns; i++)
        run->slot_start[i] = run->slot_end[i] = -1;
    run->xfer_seq = pl_malloc(ns * sizeof *run->xfer_seq);
    run->req_start = pl_malloc((x->K + 1) * sizeof *run->req_start);
    run->req_end = pl_calloc(x->K + 1, sizeof *run->req_end);
    for (int r = 0; r < x->K; r++)
        run->req_start[r] = INFINITY;
    run->peak = pl_calloc(x->D + 1, sizeof *run->peak);
    run->busy = pl_calloc(x->D + 1, sizeof *run->busy);
    run->link_bytes = pl_calloc(dd, sizeof *run->link_bytes);
    run->link_busy = pl_calloc(dd, sizeof *run->link_busy);
}

static void ctx_init(ev_ctx *x)
{
    const sim_static *s = x->s;
    size_t dd = (size_t)x->D * x->D + 1, nc = (size_t)s->n_copies;
    x->ready = pl_calloc(x->D + 1, sizeof *x->ready);
    x->queue = pl_calloc(dd, sizeof *x->queue);
    x->wait_from = pl_calloc(x->D + 1, sizeof *x->wait_from);
    x->dev_busy = pl_calloc(x->D + 1, sizeof *x->dev_busy);
    x->send_busy = pl_calloc(x->D + 1, sizeof *x->send_busy);
    x->recv_busy = pl_calloc(x->D + 1, sizeof *x->recv_busy);
    x->pair_busy = pl_calloc(dd, sizeof *x->pair_busy);
    x->dev_last = pl_malloc((x->D + 1) * sizeof *x->dev_last);
    for (int d = 0; d < x->D; d++)
        x->dev_last[d] = -1;
    x->missing = pl_malloc(((size_t)x->n * x->K + 1) * sizeof *x->missing);
    x->slot_missing = pl_malloc(((size_t)x->S * x->K + 1) * sizeof *x->slot_missing);
    x->refs = pl_malloc((nc * x->K + 1) * sizeof *x->refs);
    x->req_left = pl_malloc((x->K + 1) * sizeof *x->req_left);
    x->cur = pl_malloc((x->D + 1) * sizeof *x->cur);
    x->mem_dirty = pl_calloc(x->D + 1, sizeof *x->mem_dirty);
    x->dirty = pl_malloc((x->D + 1) * sizeof *x->dirty);
    for (int d = 0; d < x->D; d++)
        x->cur[d] = s->weights[d], mem_add(x, d, 0);
    if (s->share.n_dom) {
        x->run_inst = pl_malloc((x->D + 1) * sizeof *x->run_inst);
        for (int d = 0; d < x->D; d++)
            x->run_inst[d] = -1;
        x->left = pl_calloc(x->D + 1, sizeof *x->left);
        x->rate = pl_calloc(x->D + 1, sizeof *x->rate);
        x->since = pl_calloc(x->D + 1, sizeof *x->since);
        x->end_at = pl_calloc(x->D + 1, sizeof *x->end_at);
        x->dom_dirty = pl_calloc(s->share.n_dom + 1, sizeof *x->dom_dirty);
    }
    for (int r = 0; r < x->K; r++) {
        for (int op = 0; op < x->n; op++)
            x->missing[r * x->n + op] = s->wait0[op] + (r > 0);
        memcpy(x->refs + nc * r, s->copy_refs, nc * sizeof *x->refs);
        memcpy(x->slot_missing + (size_t)x->S * r, s->slot_wait0, x->S * sizeof *x->slot_missing);
        x->req_left[r] = x->n + s->n_returns;
    }
}

static void ctx_free(ev_ctx *x)
{
    for (int d = 0; d < x->D; d++)
        pl_heap_free(&x->ready[d]);
    for (int i = 0; i < x->D * x->D; i++)
        pl_heap_free(&x->queue[i]);
    pl_heap_free(&x->events);
    free(x->ready), free(x->queue), free(x->wait_from), free(x->dev_busy), free(x->send_busy);
    free(x->recv_busy), free(x->pair_busy), free(x->dev_last), free(x->missing), free(x->refs);
    free(x->slot_missing);
    free(x->req_left), free(x->cur), free(x->mem_dirty), free(x->dirty);
    free(x->run_inst), free(x->left), free(x->rate), free(x->since), free(x->end_at);
    free(x->dom_dirty);
}

/* Time 0: graph inputs are where they start (their copies held), inputs kept on the I/O
 * device are ready to send, and ops that wait for nothing are ready. */
static void start_requests(ev_ctx *x)
{
    const sim_static *s = x->s;
    for (int r = 0; r < x->K; r++) {
        for (int i = 0; i < s->n_t0; i++)
            copy_alloc(x, s->t0[i]);
        for (int i = 0; i < x->S; i++)
            if (x->slot_missing[(size_t)r * x->S + i] == 0) slot_ready(x, r, i);
        for (int op = 0; op < x->n; op++)
            if (x->missing[r * x->n + op] == 0) op_ready(x, r * x->n + op);
        if (x->req_left[r] == 0) request_finish(x, r);
    }
}

static void handle(ev_ctx *x, pl_heap_item ev)
{
    if ((int)ev.b == EV_OP_END && share_stale(x, ev.id, ev.a)) return;
    x->run->events++;
    if ((int)ev.b == EV_OP_END)
        end_op(x, ev.id);
    else
        end_xfer(x, ev.id);
}

int sim_run_events(const sim_static *s, const pl_sim_opts *o, sim_run *run, pl_err *err)
{
    ev_ctx x = {.s = s, .o = o, .run = run, .n = s->n, .D = s->D, .S = s->n_slots};
    x.K = o->requests > 1 ? o->requests : 1;
    alloc_run(&x);
    ctx_init(&x);
    start_requests(&x);
    dispatch(&x);
    while (x.events.n) {
        if (x.events.v[0].a > x.now) mem_flush(&x), x.now = x.events.v[0].a;
        while (x.events.n && x.events.v[0].a == x.now)
            handle(&x, pl_heap_pop(&x.events));
        dispatch(&x);
    }
    mem_flush(&x);
    ctx_free(&x);
    if (run->done < x.n * x.K) return sim_deadlock(s, run, err);
    return 0;
}

void sim_run_free(sim_run *run)
{
    free(run->op_start), free(run->op_end), free(run->dev_prev), free(run->slot_start);
    free(run->slot_end), free(run->xfer_seq), free(run->req_start), free(run->req_end);
    free(run->peak), free(run->busy), free(run->link_bytes), free(run->link_busy);
    memset(run, 0, sizeof *run);
}
