/* sl_internal.h: what the serverless module's files share (not exported). */
#ifndef SL_INTERNAL_H
#define SL_INTERNAL_H

#include "placer/serverless.h"

/* The most functions NonSplit's integer program takes (its size grows with their count). */
#define SL_NONSPLIT_K_MAX 3

/* The most memory options a slice is priced at (sl_mem_options). */
#define SL_OPTIONS_MAX 16

/* The memory options of a slice, into v (at most SL_OPTIONS_MAX): 0, as it needs, and 1, at
 * least a whole vCPU's (MOPAR's two); with `every`, also 2, 3 and 4 whole vCPUs, then doubling,
 * and the most a function may have (memory.max_mb / λ), so that the front spans the parallel
 * degrees too. Their count. */
int sl_mem_options(const pl_platform *pf, bool every, int *v);

/* Seconds to move one tensor of `bytes` raw bytes one way through x: a write (enc) or a read. */
double sl_move_s(const pl_transport *x, const pl_sl_opts *o, double bytes, bool enc);
/* The compute time of layers whose one-vCPU time is t, of which par is their dominant ops',
 * writing out bytes, on a function of mem_bytes at degree eta (mopar.c's compute_s: Eq. 5's
 * t_p + t_a at the function's share of a vCPU). Linear in (t, par, out): the sum over layers is
 * the slice's. */
double sl_compute_s(const pl_platform *pf, double t, double par, double out, double mem_bytes,
                    int eta);
/* The memory a weight byte and an activation byte take in the runtime (the platform's factors,
 * 1 when not given). */
double sl_weight_factor(const pl_platform *pf);
double sl_activation_factor(const pl_platform *pf);
/* The largest parallel degree a function of mem_bytes may take: its whole vCPUs, 1 ..
 * PL_PLATFORM_VCPUS_MAX. */
int sl_max_degree(const pl_platform *pf, double mem_bytes);
/* MOPAR's latency bound: the unsplit model's latency x (1 + slack); INFINITY when it does not
 * fit one function. */
double sl_latency_bound(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o);
/* Function k of the non-contiguous plan fn_of at mem_mb MB, priced into s (pl_sl_price_sets'
 * pricing of one function); -1 when it needs more memory. */
int sl_price_set(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                 const int *fn_of, int k, double mem_mb, pl_sl_slice *s);
/* NonSplit (nonsplit.c): at most k functions (k >= 1), latency at most bound; CBC starts from
 * `start` (each layer's function, at most k of them; NULL: the unsplit model); *out priced by
 * pl_sl_price_sets. -1 with err when CBC fails, crashes or finds no plan. */
int sl_nonsplit(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, int k,
                double bound, const int *start, pl_sl_plan *out, pl_err *err);
/* Clockwork++ (clockwork.c): the unsplit function served by windows of o->window_s
 * (PL_SL_CLOCKWORK_WINDOW_S when 0), its usd and gb_s what serving the default trace
 * (pl_sl_serve_defaults) by them bills. -1 with err when the model does not fit one function. */
int sl_clockwork(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, pl_sl_plan *out,
                 pl_err *err);

#endif
