/* clockwork.c: Clockwork++, the baseline MOPAR's paper takes from AlpaServe (docs/serverless.md,
 * "Clockwork++").
 *
 * AlpaServe (Li et al., OSDI'23, §6) builds Clockwork++ from Clockwork's replacement: whole models,
 * no model parallelism, placed again at the boundary of each window of the trace with that
 * window's load known. Here the model is the unsplit function; what changes from window to window
 * is how many instances of it are held, and the bill is for what is held. So its price per
 * request is not a property of the function alone but of a trace: the plan is priced by serving
 * the default trace with the window policy (serve.c), and says so (pl_sl_plan.window_s). */
#include "placer/serverless.h"
#include "sl_internal.h"

#include <string.h>

int sl_clockwork(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, pl_sl_plan *out,
                 pl_err *err)
{
    if (pl_sl_plan_make(sg, pf, o, PL_SL_UNSPLIT, 1, out, err) < 0)
        return pl_err_set(err,
                          "clockwork++: the whole model does not fit one function (%.0f MB "
                          "at most): Clockwork++ places whole models",
                          pf->mem_max_mb);
    out->algo = PL_SL_CLOCKWORK;
    out->window_s = o->window_s > 0 ? o->window_s : PL_SL_CLOCKWORK_WINDOW_S;
    pl_sl_serve_opts trace;
    pl_sl_serve_defaults(&trace);
    pl_sl_serve_result r;
    if (pl_sl_serve(out, pf, &trace, &r, err) < 0) {
        pl_sl_plan_free(out);
        return pl_err_prefix(err, "clockwork++: pricing by serving the default trace");
    }
    out->usd = r.usd_per_request;
    out->gb_s = r.requests ? r.mem_gb_avg * trace.duration_s / (double)r.requests : 0;
    return 0;
}
