/* cluster_internal.h: what the cluster files share (cluster.c: building in code and the
 * route search; load.c: the placer-cluster/1 reader, which runs the same route search over a
 * topology that also holds switches). */
#ifndef PLACER_CLUSTER_INTERNAL_H
#define PLACER_CLUSTER_INTERNAL_H

#include "placer/cluster.h"

/* Routes over a directed graph of n nodes. Links are n*n row-major matrices: link_bw > 0
 * marks a link. For every ordered pair the route is the shortest in hops, ties broken by the
 * widest bottleneck and then the lowest latency; its bandwidth is the slowest hop and its
 * latency the sum (MOIRAI). Pairs without a route get bw 0, latency INFINITY and hops -1;
 * the diagonal gets bw INFINITY, latency 0 and hops 0. Only pairs whose `want` row and
 * column are both true are filled (NULL: all), so switches can be routed through without
 * being routed to. */
void cl_routes(int n, const double *link_bw, const double *link_lat, const bool *want, double *bw,
               double *lat, int *hops);

/* Finds the first ordered pair of devices without a route and reports it; 0 when none. */
int cl_check_routes(const pl_cluster *c, pl_err *err);

struct pl_json;
/* The file's optional "collectives" array (collectives.c), once the devices are read: every
 * scope's "host" must be one of theirs. */
int cl_read_collectives(const struct pl_json *root, pl_cluster *c, pl_err *err);

#endif
