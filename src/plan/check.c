/* check.c: pl_plan_check, whether a plan's per-device order can run at all (plan.h).
 *
 * A device runs its listed ops one after the other, and an op starts only once the ops it
 * reads from have run (docs/simulator.md). So the order runs exactly when the graph's edges
 * plus "the op listed before it on its device" form no cycle; this holds for every contention
 * model and any number of requests, because a transfer waits only for its producer and for
 * ports that transfers release when they end. A transfer order can deadlock in more ways,
 * which only the simulator sees (it honours that order; nothing else does). */
#include "placer/plan.h"

#include <stdlib.h>

/* Kahn's algorithm over ops, with one extra edge from each op to the next on its device.
 * done[op] is set for every op that can run; returns how many can. */
static int runnable(const pl_plan *p, const pl_graph *g, bool *done)
{
    int n = g->n_ops, *wait = pl_calloc(n ? n : 1, sizeof *wait),
        *next = pl_malloc((n ? n : 1) * sizeof *next),
        *queue = pl_malloc((n ? n : 1) * sizeof *queue);
    int head = 0, tail = 0;
    for (int op = 0; op < n; op++)
        wait[op] = g->pred_off[op + 1] - g->pred_off[op], next[op] = -1;
    for (int d = 0; d < p->n_devs; d++)
        for (int i = p->order_off[d]; i + 1 < p->order_off[d + 1]; i++)
            next[p->order[i]] = p->order[i + 1], wait[p->order[i + 1]]++;
    for (int op = 0; op < n; op++)
        if (!wait[op]) queue[tail++] = op;
    while (head < tail) {
        int op = queue[head++];
        done[op] = true;
        for (int k = g->succ_off[op]; k < g->succ_off[op + 1]; k++)
            if (!--wait[g->succ[k]]) queue[tail++] = g->succ[k];
        if (next[op] >= 0 && !--wait[next[op]]) queue[tail++] = next[op];
    }
    free(wait), free(next), free(queue);
    return tail;
}

/* The first op of a device's order that never runs and waits for an input whose producer never
 * runs: a stuck set always has one (the op heading each device's stuck rest is held only by
 * its inputs). */
static int explain(const pl_plan *p, const pl_graph *g, const pl_cluster *c, const bool *done,
                   pl_err *err)
{
    for (int d = 0; d < p->n_devs; d++)
        for (int i = p->order_off[d]; i < p->order_off[d + 1]; i++) {
            int op = p->order[i];
            if (done[op]) continue;
            for (int e = 0; e < g->n_edges; e++) {
                const pl_edge *x = &g->edges[e];
                if (x->dst != op || x->src < 0 || done[x->src]) continue;
                return pl_err_set(err,
                                  "the plan's order deadlocks: on device '%s', op '%s' waits "
                                  "forever for tensor '%s' from op '%s' on '%s', which never runs "
                                  "(%s)",
                                  c->devs[d].name, g->ops[op].name, g->tensors[x->tensor].name,
                                  g->ops[x->src].name, c->devs[p->dev[x->src]].name,
                                  p->dev[x->src] == d
                                      ? "it is listed after the op that needs it"
                                      : "it waits behind an op that needs a later one");
            }
            break; /* this device's head waits for no input: look at the next device */
        }
    return pl_err_set(err, "the plan's order deadlocks (no op waits on an input: internal error)");
}

int pl_plan_check_silicon(const pl_graph *g, const pl_cluster *c, const int *dev, const char *who,
                          pl_err *err)
{
    int *op_on = pl_malloc(((size_t)c->n_devs + 1) * sizeof *op_on), rc = 0;
    for (int d = 0; d < c->n_devs; d++)
        op_on[d] = -1;
    for (int op = 0; op < g->n_ops; op++)
        if (dev[op] >= 0 && dev[op] < c->n_devs && op_on[dev[op]] < 0) op_on[dev[op]] = op;
    for (int a = 0; a < c->n_devs && rc == 0; a++)
        for (int b = a + 1; b < c->n_devs && rc == 0 && op_on[a] >= 0; b++)
            if (op_on[b] >= 0 && pl_cluster_same_silicon(c, a, b))
                rc = pl_err_set(err,
                                "%s: devices '%s' and '%s' are the same cores (core_devices, "
                                "docs/clusters.md \"Cores\"): op '%s' is on '%s', op '%s' on "
                                "'%s'; a plan uses a device or its cores, not both",
                                who, c->devs[a].name, c->devs[b].name, g->ops[op_on[a]].name,
                                c->devs[a].name, g->ops[op_on[b]].name, c->devs[b].name);
    free(op_on);
    return rc;
}

int pl_plan_check(const pl_plan *p, const pl_graph *g, const pl_cluster *c, pl_err *err)
{
    PL_ASSERT(p->n_ops == g->n_ops && p->n_devs == c->n_devs);
    if (pl_plan_check_coloc(g, c, p->dev, "plan", err) < 0 ||
        pl_plan_check_silicon(g, c, p->dev, "plan", err) < 0)
        return -1;
    if (!p->order) return 0;
    bool *done = pl_calloc(g->n_ops ? g->n_ops : 1, sizeof *done);
    int rc = runnable(p, g, done) == g->n_ops ? 0 : explain(p, g, c, done, err);
    free(done);
    return rc;
}
