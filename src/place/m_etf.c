/* m_etf.c: m-ETF (Baechi, Jeon et al., SoCC 2020): earliest-time-first list scheduling with
 * memory constraints. At each step, among the ready ops and the devices that still have room
 * for them, the pair with the earliest start time is committed; ties go to the op with the
 * larger upward rank (the longer remaining path), a choice Baechi leaves open. Transfers are
 * costed once per (tensor, destination) under the contention the options name. */
#include "sched.h"

int pl_place_m_etf(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    pl_place_opts def = {0};
    return pk_list(k, o ? o : &def, LIST_START, "m-etf", out, err);
}
