/* eval.c: one training iteration of a strategy, compiled and simulated (docs/train.md,
 * "Evaluating a strategy"). */
#include "placer/train.h"

#include <stdlib.h>
#include <string.h>

int pl_train_evaluate(const pl_train_ctx *x, const pl_train_strategy *s, pl_train_eval *e,
                      pl_err *err)
{
    memset(e, 0, sizeof *e);
    e->oom_dev = -1;
    pl_graph *g;
    pl_plan *p;
    if (pl_train_compile(x, s, &g, &p, NULL, err) < 0) return -1;
    /* onnxruntime's CPU kernel fusion is not a training framework's: ops are priced alone */
    pl_cost_params cp;
    if (x->params)
        cp = *x->params;
    else
        pl_cost_params_default(&cp);
    cp.runtime_fusion = PL_FUSION_NONE;
    pl_cost *k = pl_cost_new_placed(g, x->c, &cp, p->dev, err);
    pl_sim_result r;
    pl_sim_opts so = {.contention = PL_CONTENTION_PORTS};
    int rc = k ? pl_simulate(k, p, &so, &r, err) : -1;
    if (rc == 0) {
        e->iteration_s = r.makespan_s;
        e->oom = r.oom, e->oom_dev = r.oom_dev, e->oom_excess_bytes = r.oom_excess_bytes;
        e->n_devs = r.n_devs;
        e->peak_mem_bytes = r.peak_mem_bytes, r.peak_mem_bytes = NULL;
        e->compiled_ops = g->n_ops;
        pl_sim_result_free(&r);
    }
    pl_cost_free(k);
    pl_plan_free(p);
    pl_graph_free(g);
    return rc;
}

void pl_train_eval_free(pl_train_eval *e)
{
    free(e->peak_mem_bytes);
    memset(e, 0, sizeof *e);
}
