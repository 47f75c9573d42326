/* stages.c: a plan's stages by the schedule (docs/split.md, `--cut schedule`), the one
 * definition that `placer split --cut schedule` writes and the simulator charges a stage's
 * overhead by (docs/simulator.md, "Stages").
 *
 * A stage is a run of consecutive ops of one device that receives only before its first op
 * and sends only after its last one: a new stage starts at an op that receives from another
 * device, and after an op that sends to one. Constants that something reads are copied into
 * each reading stage instead of being sent, so they do neither and belong to no stage here. */
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
        for (int k = 0; k < m; k++) {
            int op = ops[k];
            if (pl_plan_copied_const(g, op)) continue;
            if (open && crosses(g, p, op, false)) open = false;
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
