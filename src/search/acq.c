/* acq.c: the acquisition functions of the configuration search (AutoDeep eq. 3-7,
 * docs/search.md "Acquisition"), in their minimisation form: expected improvement over the
 * best cost so far, and the probability that a latency meets the SLO. */
#include "placer/search.h"

#include <math.h>

#define INV_SQRT2 0.70710678118654752440

/* Φ through erfc rather than erf: erfc keeps its relative accuracy in the lower tail, where
 * EI and the SLO probability of hopeless candidates live. */
static double norm_cdf(double z)
{
    return 0.5 * erfc(-z * INV_SQRT2);
}

double pl_ei_lognormal(double price, double mu, double sigma, double best)
{
    if (!(best > 0)) return 0; /* a cost is never below 0: nothing can improve on it */
    if (!(price > 0)) return best;
    if (!(sigma > 0)) {
        double gap = best - price * exp(mu);
        return gap > 0 ? gap : 0;
    }
    /* E[max(0, best − price e^Z)] = best Φ(z) − price E[e^Z; Z < ln(best/price)] and
     * E[e^Z; Z < c] = e^(mu + sigma²/2) Φ((c − mu)/sigma − sigma). */
    double z = (log(best / price) - mu) / sigma;
    double ei = best * norm_cdf(z) - price * exp(mu + 0.5 * sigma * sigma) * norm_cdf(z - sigma);
    return ei > 0 ? ei : 0;
}

double pl_prob_meets(double mu, double sigma, double limit)
{
    if (!(limit > 0)) return 0;
    double c = log(limit);
    if (!(sigma > 0)) return mu <= c ? 1 : 0;
    return norm_cdf((c - mu) / sigma);
}
