/* stages.c: a plan's stages by the schedule (docs/split.md, `--cut schedule`), the one
 * definition that `placer split --cut schedule` writes and the simulator charges a stage's
 * overhead by (docs/simulator.md, "Stages").
 *
 * A stage is a run of consecutive ops of one device and one model that receives only before
 * its first op and sends only after its last one: a new stage starts at an op that receives
 * from another device, after an op that sends to one, where the run passes from one model's
 * ops to another's (a union of several, pl_graph_union), and where the plan's cut_before says.
 * Constants that something reads are copied into each reading stage instead of being sent, so they
 * do neither and belong to no stage here. */
#include "placer/plan.h"

#include <stdlib.h>
#include <string.h>

bool pl_plan_is_const(const pl_graph *g, int op)
{
    const pl_op *o = &g->ops[op];
    return o->n_inputs == 0 && o->n_subgraphs == 0 && !strcmp(o->type, "Constant") && !*o->domain;
}

bool pl_plan_copied_const(const pl_graph *g, int op)
{
    if (!pl_plan_is_const(g, op)) return false;
    for (int k = 0; k < g->ops[op].n_outputs; k++) {
        int t = g->ops[op].outputs[k];
        if (t >= 0 && g->tensors[t].n_consumers) return true;
    }
    return false;
}

/* Whether op reads (receives) from, or writes (sends) to, an op on another device. */
static bool crosses(const pl_graph *g, const pl_plan *p, int op, bool sends)
{
    const int *off = sends ? g->succ_off : g->pred_off, *adj = sends ? g->succ : g->pred;
    for (int e = off[op]; e < off[op + 1]; e++)
        if (!pl_plan_copied_const(g, adj[e]) && p->dev[adj[e]] != p->dev[op]) return true;
    return false;
}

/* Whether a stage starts at op, the op before it in its device's run being prev: op receives
 * from another device, belongs to another model than prev, or the plan cuts there. */
static bool starts_stage(const pl_graph *g, const pl_plan *p, int prev, int op)
{
    return crosses(g, p, op, false) || g->ops[op].tenant != g->ops[prev].tenant ||
           (p->cut_before && p->cut_before[op]);
}

/* Device d's ops in the order they run: the plan's, else topological. */
static int run_order(const pl_graph *g, const pl_plan *p, int d, int *ops)
{
    int n = 0;
    if (p->order)
        for (int k = p->order_off[d]; k < p->order_off[d + 1]; k++)
            ops[n++] = p->order[k];
    else
        for (int k = 0; k < g->n_ops; k++)
            if (p->dev[g->topo[k]] == d) ops[n++] = g->topo[k];
    return n;
}

int pl_plan_schedule_stages(const pl_graph *g, const pl_plan *p, int *stage_of, int *dev_of,
                            int *first)
{
    int n = 0, *ops = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof *ops);
    for (int op = 0; op < g->n_ops; op++)
        stage_of[op] = -1;
    for (int d = 0; d < p->n_devs; d++) {
        int m = run_order(g, p, d, ops);
        bool open = false;
        int prev = -1;
        for (int k = 0; k < m; k++) {
            int op = ops[k];
            if (pl_plan_copied_const(g, op)) continue;
            if (open && starts_stage(g, p, prev, op)) open = false;
            prev = op;
            if (!open) {
                if (dev_of) dev_of[n] = d;
                if (first) first[n] = op;
                n++, open = true;
            }
            stage_of[op] = n - 1;
            if (crosses(g, p, op, true)) open = false;
        }
    }
    free(ops);
    return n;
}

/* ---- what each stage takes in and gives out (the split's stage files, the simulator's
 * per-stage charge) ---- */

/* A copied Constant is held by the stage of its first reader in topological order (the others
 * copy it); only a graph output makes that stage give its value out. */
static void home_consts(const pl_graph *g, int *stage_of)
{
    for (int op = 0; op < g->n_ops; op++) {
        if (stage_of[op] >= 0 || !pl_plan_copied_const(g, op)) continue;
        int home = -1;
        for (int o = 0; o < g->ops[op].n_outputs; o++) {
            int t = g->ops[op].outputs[o];
            for (int c = 0; t >= 0 && c < g->tensors[t].n_consumers; c++) {
                int r = g->tensors[t].consumers[c];
                if (home < 0 || g->topo_pos[r] < g->topo_pos[home]) home = r;
            }
        }
        stage_of[op] = stage_of[home];
    }
}

/* Whether a stage is fed t by the runtime: not a weight, and a graph input or the result of an
 * op that is not a Constant (whose value every reading stage holds itself). */
static bool fed(const pl_graph *g, int t)
{
    const pl_tensor *tp = &g->tensors[t];
    if (tp->producer < 0) return !(tp->flags & PL_TENSOR_WEIGHT);
    return !pl_plan_is_const(g, tp->producer);
}

/* Whether stage s gives out t, a result of one of its ops: a graph output, or a non-Constant
 * result that an op of another stage reads. */
static bool given_out(const pl_graph *g, const int *stage_of, int s, int t)
{
    const pl_tensor *tp = &g->tensors[t];
    if (tp->flags & PL_TENSOR_OUTPUT) return true;
    if (pl_plan_is_const(g, tp->producer)) return false;
    for (int c = 0; c < tp->n_consumers; c++)
        if (stage_of[tp->consumers[c]] != s) return true;
    return false;
}

static void io_push(int **a, int *n, int *cap, int v)
{
    pl_grow((void **)a, cap, *n, sizeof **a);
    (*a)[(*n)++] = v;
}

/* The ops of each stage, stage by stage, each stage's in topological order: ops[off[s] ..
 * off[s + 1]). */
static int *ops_by_stage(const pl_graph *g, const int *stage_of, int n, int *off)
{
    int *ops = pl_malloc((g->n_ops + 1) * sizeof *ops);
    memset(off, 0, ((size_t)n + 1) * sizeof *off);
    for (int op = 0; op < g->n_ops; op++) {
        PL_ASSERT(stage_of[op] < n);
        if (stage_of[op] >= 0) off[stage_of[op] + 1]++;
    }
    for (int s = 0; s < n; s++)
        off[s + 1] += off[s];
    int *at = pl_malloc(((size_t)n + 1) * sizeof *at);
    memcpy(at, off, ((size_t)n + 1) * sizeof *at);
    for (int k = 0; k < g->n_ops; k++)
        if (stage_of[g->topo[k]] >= 0) ops[at[stage_of[g->topo[k]]]++] = g->topo[k];
    free(at);
    return ops;
}

/* Counts initializer t, read by stage s, in io's weight bytes; held[t] is the first stage
 * (stages are visited in number order) that holds it, -1 before. */
static void held_weight(const pl_graph *g, int t, int s, int *held, pl_stage_io *io)
{
    const pl_tensor *tp = &g->tensors[t];
    if (!(tp->flags & PL_TENSOR_WEIGHT) || tp->producer >= 0 || tp->bytes <= 0) return;
    io->weight_bytes += (double)tp->bytes;
    if (held[t] >= 0)
        io->copied_weight_bytes += (double)tp->bytes;
    else
        held[t] = s;
}

/* Stage s's inputs and outputs from its ops (topological order); mark[t] == s once s took t. */
static void one_stage_io(const pl_graph *g, const int *stage_of, int s, const int *ops, int m,
                         int *mark, int *held, pl_stage_io *io)
{
    int cap_in = 0, cap_out = 0;
    for (int k = 0; k < m; k++) {
        const pl_op *o = &g->ops[ops[k]];
        for (int i = 0; i < o->n_inputs; i++) {
            int t = o->inputs[i], p;
            if (t < 0 || mark[t] == s) continue;
            mark[t] = s;
            if (!fed(g, t)) {
                held_weight(g, t, s, held, io);
                continue;
            }
            p = g->tensors[t].producer;
            if (p < 0 || stage_of[p] != s) io_push(&io->inputs, &io->n_inputs, &cap_in, t);
        }
        for (int i = 0; i < o->n_outputs; i++)
            if (o->outputs[i] >= 0 && given_out(g, stage_of, s, o->outputs[i]))
                io_push(&io->outputs, &io->n_outputs, &cap_out, o->outputs[i]);
    }
}

void pl_plan_stage_io(const pl_graph *g, int *stage_of, int n, pl_stage_io *io)
{
    home_consts(g, stage_of);
    memset(io, 0, (size_t)n * sizeof *io);
    int *off = pl_malloc(((size_t)n + 1) * sizeof *off), *ops = ops_by_stage(g, stage_of, n, off);
    int *mark = pl_malloc((g->n_tensors + 1) * sizeof *mark);
    int *held = pl_malloc((g->n_tensors + 1) * sizeof *held);
    for (int t = 0; t < g->n_tensors; t++)
        mark[t] = held[t] = -1;
    for (int s = 0; s < n; s++)
        one_stage_io(g, stage_of, s, ops + off[s], off[s + 1] - off[s], mark, held, &io[s]);
    free(held), free(mark), free(ops), free(off);
}

void pl_stage_io_free(pl_stage_io *io, int n)
{
    for (int s = 0; s < n; s++)
        free(io[s].inputs), free(io[s].outputs);
}
