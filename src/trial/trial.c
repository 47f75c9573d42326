/* trial.c: the worker life cycle shared by every trial worker: start once, time everything. */
#include "placer/trial.h"

#include <stdlib.h>

int pl_trial_start(pl_trial_worker *w, pl_err *err)
{
    if (w->started) return 0;
    double t0 = pl_now();
    int rc = w->ops->start ? w->ops->start(w, err) : 0;
    w->startup_s += pl_now() - t0;
    w->starts++;
    if (rc == 0) w->started = true;
    return rc;
}

int pl_trial_run(pl_trial_worker *w, const pl_cluster *c, pl_trial_out *out, pl_err *err)
{
    /* set before anything can fail: the caller may free out->plan on any return */
    *out = (pl_trial_out){.latency_s = 1.0 / 0.0};
    if (pl_trial_start(w, err) < 0) return -1;
    double t0 = pl_now();
    int rc = w->ops->trial(w, c, out, err);
    w->trial_s += pl_now() - t0;
    w->trials++;
    return rc;
}

void pl_trial_worker_free(pl_trial_worker *w)
{
    if (!w) return;
    if (w->ops->stop) w->ops->stop(w);
    free(w);
}
