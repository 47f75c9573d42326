/* getf.c: Generalized ETF, as MOIRAI uses it as a baseline: ETF on related machines with
 * per-pair communication delays. At each step, among the ready ops and the devices with room
 * for them, the pair with the earliest *finish* time is committed, the transfer time of each
 * input being the route's own (latency + bytes / bandwidth of that pair), not a mean. Finish
 * rather than start is what makes it fit related machines: a slow device that is free now no
 * longer beats a fast one free a moment later. (The original GETF also solves an LP to split
 * ops among speed groups; the baseline here, like the issue, keeps the greedy rule.) */
#include "sched.h"

int pl_place_getf(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    pl_place_opts def = {0};
    return pk_list(k, o ? o : &def, LIST_FINISH, "getf", out, err);
}
