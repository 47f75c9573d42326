/* cores.c: a CPU device of several cores in the cost table (docs/cost.md, "CPU cores").
 *
 * An estimate takes the cores in its compute term (pl_cost_terms_of: the peak times
 * pl_device_speed). A profile is measured with one onnxruntime intra-op thread (placer
 * profile), so its time is one core's: on a device of several it is scaled by what the
 * estimate gains on that op, i.e. by the compute-bound part, and a memory-bound op keeps its
 * measured time. */
#include "cost_internal.h"

#include <math.h>

double pl_cost_on_cores(const pl_op *op, const pl_graph *g, const pl_device *d,
                        const pl_cost_params *p, double one_core_s)
{
    if (d->cores <= 1 || !(one_core_s > 0) || !isfinite(one_core_s)) return one_core_s;
    pl_device one = *d;
    one.cores = 1;
    double all = pl_cost_estimate(op, g, d, p), single = pl_cost_estimate(op, g, &one, p);
    return single > 0 && isfinite(all) ? one_core_s * all / single : one_core_s;
}
