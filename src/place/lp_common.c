/* lp_common.c: warnings and checks shared by m-SCT and METIS. */
#include "lp_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void lp_warn(pl_err *err, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

int lp_check_runnable(const pl_cost *k, const char *algo, pl_err *err)
{
    for (int i = 0; i < k->n_ops; i++)
        if (!isfinite(pk_op_mean_s(k, i)))
            return pl_err_set(err, "%s: op '%s' (%s) can run on no device of cluster '%s'", algo,
                              k->g->ops[i].name, k->g->ops[i].type, k->c->name ? k->c->name : "");
    return 0;
}

int lp_check_memory(const pl_cost *k, const int *dev, const char *algo, pl_err *err)
{
    double *used = pl_calloc(k->n_devs, sizeof *used);
    pl_plan_static_memory(k, dev, used);
    int rc = 0;
    for (int d = 0; d < k->n_devs && rc == 0; d++) {
        double cap = pk_dev_cap(k, d);
        if (used[d] <= cap) continue;
        char a[32], b[32];
        rc = pl_err_set(err, "%s: device '%s' needs %s of static memory but has %s", algo,
                        k->c->devs[d].name, pl_fmt_bytes(used[d], a, sizeof a),
                        pl_fmt_bytes(cap, b, sizeof b));
    }
    free(used);
    return rc;
}
