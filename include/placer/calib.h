/* calib.h: fitting the cost model's efficiencies (pl_cost_params) to measured profiles
 * (docs/calibrate.md). The roofline estimate of every op that a profile times is compared
 * with the measurement on log time, each op's squared error weighted by its measured time,
 * and each efficiency is chosen by a coordinate search over a log-spaced grid in [0.01, 1].
 * Launch overhead and peaks are the device's, not fitted. */
#ifndef PLACER_CALIB_H
#define PLACER_CALIB_H

#include "placer/cost.h"

typedef struct pl_calib_result {
    pl_cost_params params;              /* fitted (classes without samples: as started) */
    int n_samples;                      /* ops with a measured time, Constants excluded */
    int class_samples[PL_CLASS_COUNT];  /* of them, per class */
    double median_before, worst_before; /* relative error |est - meas| / meas, start params */
    double median_after, worst_after;   /* the same with the fitted ones */
} pl_calib_result;

/* Fits to profiles[k] measured on graphs[k] (k < n), estimating on device `d` (the device the
 * profiles were measured on). `start` NULL: the defaults. -1 with err set when a profile is
 * for another device model than d's (pl_cost_model_matches) or no profile times any op of
 * its graph. The median error is pl_median's (the mean of the middle two of an even count). */
int pl_calib_fit(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                 const pl_device *d, const pl_cost_params *start, pl_calib_result *r, pl_err *err);
/* What the fit minimises, at `p`: Σ measured · (log estimate − log measured)² over the same
 * ops; -1 with err set where pl_calib_fit fails. */
double pl_calib_loss(const pl_graph *const *graphs, const pl_profile *const *profiles, int n,
                     const pl_device *d, const pl_cost_params *p, pl_err *err);

#endif
