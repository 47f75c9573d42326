/* ctx.c: what every evaluation of one model's training on one cluster shares: device groups,
 * op groups and the training graph's cost table (docs/train.md). */
#include "placer/train.h"

#include <string.h>

int pl_train_ctx_init(pl_train_ctx *x, const pl_train_graph *t, const pl_cluster *c,
                      const pl_cost_params *params, int max_groups, pl_err *err)
{
    memset(x, 0, sizeof *x);
    x->t = t, x->c = c, x->params = params;
    if (pl_dev_groups_build(c, &x->dg, err) < 0) return -1;
    pl_cost_params cp; /* ops priced alone, as the compiled iteration prices them (eval.c) */
    if (params)
        cp = *params;
    else
        pl_cost_params_default(&cp);
    cp.runtime_fusion = PL_FUSION_NONE;
    x->k = pl_cost_new(t->g, c, &cp, NULL, 0, err);
    if (!x->k || pl_op_groups_build(t, x->k, max_groups, &x->og, err) < 0) {
        pl_train_ctx_free(x);
        return -1;
    }
    return 0;
}

void pl_train_ctx_free(pl_train_ctx *x)
{
    pl_dev_groups_free(&x->dg);
    pl_op_groups_free(&x->og);
    pl_cost_free(x->k);
    memset(x, 0, sizeof *x);
}
