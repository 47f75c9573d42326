/* coarsen_internal.h: the grouping state shared by the passes and the graph builder. */
#ifndef PLACER_COARSEN_INTERNAL_H
#define PLACER_COARSEN_INTERNAL_H

#include "placer/coarsen.h"

/* Groups are a union-find over the original ops. Every group the passes make has one exit:
 * only its sink op's outputs leave it, and every member reaches the sink. Contracting such
 * groups never creates a cycle (a path that left a group and re-entered it would also exist
 * in the original DAG through the sink), which is why reachability on the original graph is
 * enough to vet each addition. */
typedef struct cs_state {
    const pl_graph *g;
    pl_reach *reach;
    pl_uf uf;   /* the groups; uf.size[root] its members, uf.n_sets their count */
    int *stamp; /* scratch marks, compared with `tick` */
    int tick;
    int *rule_count; /* fusion pass: groups made per rule */
} cs_state;

/* Constant, Shape, Size, ConstantOfShape: ops that only materialise a constant or read a
 * tensor's metadata, colocated with their one reader and left out of a group's type name. */
bool pl_coarsen_is_feeder_type(const char *type);
void cs_colocate(cs_state *s);
void cs_chain(cs_state *s, int target);
/* Builds the coarse graph and the mapping from the final groups. */
int cs_build(cs_state *s, pl_coarsening *c, pl_err *err);

#endif
