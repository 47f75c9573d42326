/* prep.c: checks a plan and derives the static structure the event loop runs on
 * (sim_internal.h): everything that depends on the placement but not on time, so that the
 * loop itself never searches. */
#include "sim_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks ---- */

static int check_shape(const pl_cost *k, const pl_plan *p, pl_err *err)
{
    if (p->n_ops != k->n_ops || p->n_devs != k->n_devs)
        return pl_err_set(err,
                          "simulate: the plan is for %d ops on %d devices, the model has %d "
                          "ops and the cluster %d devices",
                          p->n_ops, p->n_devs, k->n_ops, k->n_devs);
    for (int i = 0; i < p->n_ops; i++) {
        int d = p->dev[i];
        if (d < 0 || d >= k->n_devs)
            return pl_err_set(err, "simulate: op '%s' is placed on device %d, which does not exist",
                              k->g->ops[i].name, d);
        double t = pl_cost_op_s(k, i, d);
        if (!(t >= 0 && t < INFINITY))
            return pl_err_set(err,
                              "simulate: op '%s' cannot run on device '%s' (model '%s'): its "
                              "time there is unknown (no given time for that model and "
                              "nothing to estimate from)",
                              k->g->ops[i].name, k->c->devs[d].name, k->c->devs[d].model);
    }
    return pl_plan_check_coloc(k->g, k->c, p->dev, "simulate", err);
}

static int check_order_entry(const pl_cost *k, const pl_plan *p, int d, int op, char *seen,
                             pl_err *err)
{
    const char *dn = k->c->devs[d].name;
    if (op < 0 || op >= p->n_ops)
        return pl_err_set(
            err, "simulate: the order of device '%s' lists op %d, which does not exist", dn, op);
    if (seen[op])
        return pl_err_set(err, "simulate: the plan's order lists op '%s' twice",
                          k->g->ops[op].name);
    if (p->dev[op] != d)
        return pl_err_set(err, "simulate: the order of device '%s' lists op '%s', placed on '%s'",
                          dn, k->g->ops[op].name, k->c->devs[p->dev[op]].name);
    seen[op] = 1;
    return 0;
}

/* The order must list every op once, each under the device it is placed on. */
static int check_order(const pl_cost *k, const pl_plan *p, pl_err *err)
{
    if (!p->order) return 0;
    if (!p->order_off || p->order_off[0] != 0 || p->order_off[p->n_devs] != p->n_ops)
        return pl_err_set(err, "simulate: the plan's order does not list each of the %d ops once",
                          p->n_ops);
    char *seen = pl_calloc(p->n_ops + 1, 1);
    int rc = 0;
    for (int d = 0; d < p->n_devs && rc == 0; d++)
        for (int i = p->order_off[d]; i < p->order_off[d + 1] && rc == 0; i++)
            rc = check_order_entry(k, p, d, p->order[i], seen, err);
    free(seen);
    return rc;
}

/* ---- tensors ---- */

/* One sequential pass over the tensor records: the passes over ops then read compact arrays.
 * Weights have no source (resident where read); op results are on their producer's device;
 * graph inputs on the I/O device, or (-1) on every device that reads them. */
static void scan_tensors(sim_static *s)
{
    int T = s->n_tensors;
    s->is_weight = pl_malloc(T + 1);
    s->producer = pl_malloc((T + 1) * sizeof *s->producer);
    s->src_dev = pl_malloc((T + 1) * sizeof *s->src_dev);
    s->head = pl_malloc((T + 1) * sizeof *s->head);
    s->copy_refs = pl_calloc(T + 1, sizeof *s->copy_refs);
    s->copies = pl_malloc((T + 1) * sizeof *s->copies);
    s->n_copies = T;
    for (int t = 0; t < T; t++) {
        const pl_tensor *tp = &s->g->tensors[t];
        s->is_weight[t] = (tp->flags & PL_TENSOR_WEIGHT) != 0;
        s->producer[t] = tp->producer;
        s->src_dev[t] = s->is_weight[t] ? -1 : tp->producer >= 0 ? s->p->dev[tp->producer] : s->io;
        s->head[t] = -1;
        s->copies[t] = (sim_copy){s->src_dev[t], -1, -1, tp->bytes > 0 ? (double)tp->bytes : 0};
        s->copy_refs[t] = tp->producer >= 0 && !s->is_weight[t]; /* the producer's own hold */
    }
}

/* ---- copies and transfers ---- */

typedef struct builder {
    sim_static *s;
    int cap_copies, cap_refs, cap_slots, cap_in, cap_out;
    int *stamp; /* per tensor: 1 + the last op that listed it (dedups inputs) */
} builder;

/* Under opts.per_edge, a received copy of an op's result belongs to the one op that reads
 * it: each reader gets its own copy and transfer. */
static bool own_copy(const sim_static *s, int t, int reader)
{
    return s->o->per_edge && reader >= 0 && s->producer[t] >= 0 && !s->is_weight[t];
}

/* The copy of t on device d (for `reader`, or -1), made when first asked for: a transfer from
 * t's source when it has one, else a graph input (or weight) present there. */
static int copy_on(builder *b, int t, int d, int reader)
{
    sim_static *s = b->s;
    if (s->src_dev[t] == d) return t;
    bool own = own_copy(s, t, reader);
    for (int c = s->head[t]; c >= 0 && !own; c = s->copies[c].next)
        if (s->copies[c].dev == d &&
            (s->copies[c].slot < 0 || s->slots[s->copies[c].slot].reader < 0))
            return c;
    int c = s->n_copies++, slot = -1;
    pl_grow((void **)&s->copies, &b->cap_copies, c, sizeof *s->copies);
    pl_grow((void **)&s->copy_refs, &b->cap_refs, c, sizeof *s->copy_refs);
    if (s->src_dev[t] >= 0) {
        slot = s->n_slots++;
        pl_grow((void **)&s->slots, &b->cap_slots, slot, sizeof *s->slots);
        s->slots[slot] = (sim_slot){t,
                                    s->src_dev[t],
                                    d,
                                    c,
                                    own ? reader : -1,
                                    false,
                                    pl_cost_xfer_s(s->k, t, s->src_dev[t], d)};
        s->copy_refs[t]++; /* the send's hold on the source copy */
    }
    s->copies[c] = (sim_copy){d, slot, s->head[t], s->copies[t].bytes};
    s->head[t] = c;
    return c;
}

/* An op's distinct non-weight inputs, each with the copy it reads; weights count once on
 * each device that reads them. */
static void scan_inputs(builder *b, int op)
{
    sim_static *s = b->s;
    const pl_op *o = &s->g->ops[op];
    int d = s->p->dev[op];
    for (int k = 0; k < o->n_inputs; k++) {
        int t = o->inputs[k];
        if (t < 0 || b->stamp[t] == op + 1) continue;
        b->stamp[t] = op + 1;
        int n_before = s->n_copies, c = copy_on(b, t, d, op);
        if (s->is_weight[t]) {
            if (s->n_copies > n_before) s->weights[d] += s->copies[c].bytes;
            continue;
        }
        sim_in in = {t, c, s->copies[c].slot, false};
        in.waits = in.slot >= 0 || s->producer[t] >= 0;
        s->copy_refs[c]++;
        s->wait0[op] += in.waits;
        int n = s->in_off[op + 1]++;
        pl_grow((void **)&s->in, &b->cap_in, n, sizeof *s->in);
        s->in[n] = in;
    }
}

static void scan_outputs(builder *b, int op)
{
    sim_static *s = b->s;
    const pl_op *o = &s->g->ops[op];
    s->extra[op] = o->extra_memory_bytes > 0 ? o->extra_memory_bytes : 0;
    for (int k = 0; k < o->n_outputs; k++) {
        int t = o->outputs[k];
        if (t < 0 || s->is_weight[t]) continue;
        int n = s->out_off[op + 1]++;
        pl_grow((void **)&s->out, &b->cap_out, n, sizeof *s->out);
        s->out[n] = t;
    }
}

/* One pass over the op records. */
static void scan_ops(builder *b)
{
    sim_static *s = b->s;
    s->dur = pl_malloc((s->n + 1) * sizeof *s->dur);
    s->extra = pl_malloc((s->n + 1) * sizeof *s->extra);
    s->in_off = pl_calloc(s->n + 1, sizeof *s->in_off);
    s->out_off = pl_calloc(s->n + 1, sizeof *s->out_off);
    s->wait0 = pl_calloc(s->n + 1, sizeof *s->wait0);
    s->weights = pl_calloc(s->D + 1, sizeof *s->weights);
    pl_sim_stage_s(s->k, s->p, s->dur); /* a stage's cost goes to the op it begins with, a
                                         * cold weight copy to the op reading it */
    for (int op = 0; op < s->n; op++) {
        s->dur[op] += pl_cost_op_placed_s(s->k, op, s->p->dev); /* fusion lost across devices */
        s->in_off[op + 1] = s->in_off[op], s->out_off[op + 1] = s->out_off[op];
        scan_inputs(b, op);
        scan_outputs(b, op);
    }
}

/* Graph outputs stay where they end up until their request ends: on the I/O device (sent
 * there by a return transfer, which counts toward the request's end), else where made. */
static void mark_outputs(builder *b)
{
    sim_static *s = b->s;
    s->holds = pl_malloc((s->g->n_outputs + 1) * sizeof *s->holds);
    for (int k = 0; k < s->g->n_outputs; k++) {
        int t = s->g->outputs[k], src = s->src_dev[t], c = t;
        if (src < 0 || b->stamp[t] == -1) continue; /* no source, or listed twice */
        b->stamp[t] = -1;
        if (s->io >= 0 && src != s->io) {
            c = copy_on(b, t, s->io, -1);
            s->slots[s->copies[c].slot].ret = true, s->n_returns++;
        }
        s->copy_refs[c]++;
        s->holds[s->n_holds++] = c;
    }
}

/* Copies there at time 0 that something will release: graph inputs where they start, and on
 * every device that reads them. */
static void find_t0(sim_static *s)
{
    s->t0 = pl_malloc((s->n_copies + 1) * sizeof *s->t0);
    for (int c = 0; c < s->n_copies; c++) {
        bool input =
            c < s->n_tensors ? s->src_dev[c] >= 0 && s->producer[c] < 0 : s->copies[c].slot < 0;
        if (input && s->copy_refs[c] > 0) s->t0[s->n_t0++] = c;
    }
}

/* Readers of each copy, so that an arrival wakes exactly the ops waiting for it. */
static void build_readers(sim_static *s)
{
    s->rd_off = pl_calloc(s->n_copies + 2, sizeof *s->rd_off);
    s->rd = pl_malloc((s->in_off[s->n] + 1) * sizeof *s->rd);
    for (int i = 0; i < s->in_off[s->n]; i++)
        s->rd_off[s->in[i].copy + 2]++;
    for (int c = 0; c < s->n_copies; c++)
        s->rd_off[c + 2] += s->rd_off[c + 1];
    for (int op = 0; op < s->n; op++)
        for (int i = s->in_off[op]; i < s->in_off[op + 1]; i++)
            s->rd[s->rd_off[s->in[i].copy + 1]++] = op;
}

/* An op waits for its predecessor in its device's order (one more release to wait for). */
static void build_order(sim_static *s)
{
    if (!s->p->order) return;
    s->order_pos = pl_malloc((s->n + 1) * sizeof *s->order_pos);
    s->order_next = pl_malloc((s->n + 1) * sizeof *s->order_next);
    for (int d = 0; d < s->D; d++)
        for (int i = s->p->order_off[d]; i < s->p->order_off[d + 1]; i++) {
            int op = s->p->order[i];
            s->order_pos[op] = i - s->p->order_off[d];
            s->order_next[op] = i + 1 < s->p->order_off[d + 1] ? s->p->order[i + 1] : -1;
            s->wait0[op] += i > s->p->order_off[d];
        }
}

int sim_prep(const pl_cost *k, const pl_plan *p, const pl_sim_opts *o, sim_static *s, pl_err *err)
{
    memset(s, 0, sizeof *s);
    if (check_shape(k, p, err) < 0 || check_order(k, p, err) < 0) return -1;
    s->k = k, s->p = p, s->g = k->g, s->o = o;
    s->n = k->n_ops, s->D = k->n_devs, s->n_tensors = k->g->n_tensors;
    s->io = k->c->io_device >= 0 && k->c->io_device < s->D ? k->c->io_device : -1;
    scan_tensors(s);
    builder b = {
        s, s->n_tensors + 1, s->n_tensors + 1, 0, 0, 0, pl_calloc(s->n_tensors + 1, sizeof(int))};
    scan_ops(&b);
    mark_outputs(&b);
    free(b.stamp);
    find_t0(s);
    build_readers(s);
    build_order(s);
    sim_share_prep(k, p, s->dur, sim_round(k->g, o), &s->share);
    return sim_xorder(s, err);
}

void sim_static_free(sim_static *s)
{
    free(s->is_weight), free(s->producer), free(s->src_dev), free(s->head);
    free(s->dur), free(s->extra), free(s->in_off), free(s->in), free(s->out_off), free(s->out);
    free(s->wait0), free(s->order_pos), free(s->order_next), free(s->slots), free(s->copies);
    free(s->copy_refs), free(s->rd_off), free(s->rd), free(s->holds), free(s->t0);
    free(s->weights);
    sim_share_free(&s->share);
    sim_xorder_free(s);
    memset(s, 0, sizeof *s);
}
