/* coarsen.h: graph coarsening before placement (MOIRAI §III-B, Algorithm 1 GCOF).
 *
 * Placement search time grows fast with the number of ops, and an inference runtime fuses
 * some op sequences into one kernel anyway (Conv+Relu, MatMul+Add, a decomposed LayerNorm):
 * splitting such a sequence across devices would both lose the fusion and pay a transfer.
 * pl_coarsen() groups ops by three switchable passes, run in this order:
 *
 *   fuse      fusion rules (ordered op-type lists), matched only across direct and
 *             multi-input connections, never along a multi-output one (docs/coarsen.md);
 *   colocate  an op and the Constant/Shape/Size/ConstantOfShape ops that feed only it;
 *   chain     contraction of an op into its only successor, until a target op count.
 *
 * The result is a real finalized pl_graph whose ops are groups (their cost is given, so
 * inference keeps it), plus the mapping both ways, so a placement of the coarse graph maps
 * back to every original op. Ops of class CONTROL are never grouped with others.
 *
 * Ownership and failure: pl_coarsen sets *out to a coarsening the caller frees (NULL on
 * failure, err set); the rules readers return rules the caller frees (NULL on failure). The
 * fine graph is only read. */
#ifndef PLACER_COARSEN_H
#define PLACER_COARSEN_H

#include "placer/graph.h"

/* ---- fusion rules: pl_fusion_rule(s) and the built-in set are graph.h's ---- */
/* A placer-fusion-rules/1 file: {"format": "placer-fusion-rules/1",
 * "rules": [["Conv", "Relu"], ...]}. Each rule has at least two types. */
pl_fusion_rules *pl_fusion_rules_load(const char *path, pl_err *err);
pl_fusion_rules *pl_fusion_rules_parse(const char *buf, size_t len, const char *name, pl_err *err);

/* ---- options: a zeroed struct runs fusion (default rules) and colocation, no chains ---- */
typedef struct pl_coarsen_opts {
    bool no_fuse;
    bool no_colocate;
    bool chain;                   /* run chain contraction */
    int target_ops;               /* chain: stop at or below this many ops (0: as far as it goes) */
    const pl_fusion_rules *rules; /* NULL: pl_fusion_rules_default() */
} pl_coarsen_opts;

/* ---- result ---- */
typedef struct pl_coarsen_pass {
    char name[16]; /* "fuse", "colocate", "chain" */
    int ops_before, ops_after;
} pl_coarsen_pass;

typedef struct pl_coarsen_fused {
    char *type; /* the rule's types joined by '+', e.g. "Conv+Relu" */
    int count;  /* groups the fusion pass made with this rule */
} pl_coarsen_fused;

typedef struct pl_coarsening {
    pl_graph *coarse; /* finalized; op c is group c */
    int n_orig;
    int *coarse_of;  /* [n_orig]: original op -> coarse op */
    int *member_off; /* CSR [coarse->n_ops + 1]: members of coarse op c, in topological order, */
    int *members;    /*   are members[member_off[c] .. member_off[c+1]) */
    pl_coarsen_pass passes[3];
    int n_passes;            /* the passes that ran, in order */
    pl_coarsen_fused *fused; /* by count descending, then type */
    int n_fused;
} pl_coarsening;

/* Coarsens a finalized (and inferred) graph. On failure returns -1 with err set. */
int pl_coarsen(const pl_graph *g, const pl_coarsen_opts *o, pl_coarsening **out, pl_err *err);
/* orig_dev[op] = coarse_dev[coarse_of[op]] for every original op. */
void pl_coarsen_expand_placement(const pl_coarsening *c, const int *coarse_dev, int *orig_dev);
void pl_coarsening_free(pl_coarsening *c);

/* ---- feeders, and the join pass (Talos's packs, src/multi) ---- */

/* Constant, Shape, Size, ConstantOfShape: ops that only materialise a constant or read a
 * tensor's metadata. The colocation pass groups them with their one reader, a fused group's
 * type name leaves them out, and the join pass puts them in their reader's group. */
bool pl_coarsen_is_feeder_type(const char *type);

/* Whether op v joins the group whose first op (in topological order) is `first`. */
typedef bool (*pl_coarsen_join_rule)(void *ctx, int first, int v);

/* Groups a finalized graph's ops into runs, into groups (initialised here over g's ops; the
 * caller pl_uf_frees it): each op v, in topological order, whose one data predecessor u (a
 * source feeder, below, is not one) has v as its only successor, joins u's group when
 * join(ctx, FIRST, v) says so, FIRST being that group's first op. Then every source feeder (a
 * feeder type with no predecessor and one successor) joins its successor's group. Control
 * ops are not told apart: the rule decides. */
void pl_coarsen_join(const pl_graph *g, pl_coarsen_join_rule join, void *ctx, pl_uf *groups);

#endif
