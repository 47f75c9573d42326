/* rewrite.h: semantics-preserving graph substitutions on ONNX models (issue 18, docs/rewrite.md).
 *
 * Semantics, exactly:
 * - A pl_rw_model is an ONNX ModelProto held in memory. Rewrites edit its nodes, initializers
 *   and value infos, so what comes out is an ONNX file that onnxruntime loads, not placer's
 *   graph. Conditions (shapes, attributes, who reads a tensor) are checked on placer's graph of
 *   the same model (pl_rw_graph: the ONNX reader with shape inference).
 * - A rule is a row of a table (pl_rw_rules): a target pattern, conditions and a builder of the
 *   replacement. A site is one place where a rule applies; it names the matched nodes BY NODE
 *   NAME, so the same site applies to any copy of the model whose nodes carry the same names,
 *   e.g. the inflated (weighted) copy of a weightless model: verification replays the sites
 *   found on one file on the other and compares outputs in onnxruntime. Nodes without a name,
 *   or with a name used twice, are renamed on load ("rw_node_K", K their position), the same on
 *   every copy, so that every node has a unique name.
 * - Weights: when the initializers a rule reads hold data, the new initializers hold the
 *   exactly computed values (folded Conv+BN weights, concatenated weights); when any of them is
 *   weightless (dims but no data, models/README.md), the new ones are weightless too, with the
 *   right dims and dtype. New tensors and nodes get names used nowhere in the model.
 * - A site that no longer matches (its nodes gone or renamed, or a condition no longer true on
 *   this model) is refused with an error, never applied in part. pl_rw_apply leaves its input
 *   model unchanged: backtracking search keeps every graph it visits.
 * - After a rewrite, initializers no node reads and value infos of tensors that no longer exist
 *   are dropped; nothing else is (nodes dead in the source stay).
 *
 * Ownership and failure: every pl_rw_model a function returns is the caller's (pl_rw_free), and
 * so are site arrays (pl_rw_sites_free) and search results (pl_rw_search_result_free); inputs
 * are only read, except the in-out model of pl_rw_greedy and pl_rw_replay, which on failure is
 * left as it was. A function that fails returns NULL or -1 with err set and gives nothing to
 * free. pl_rw_save writes through pl_out: the file is whole or as it was. */
#ifndef PLACER_REWRITE_H
#define PLACER_REWRITE_H

#include "placer/graph.h"

typedef struct pl_rw_model pl_rw_model;

/* Reads an ONNX file (external data is refused: a rewrite could not compute its weights).
 * NULL with err set on failure; pl_rw_load refuses every file the ONNX reader refuses. */
pl_rw_model *pl_rw_load(const char *path, pl_err *err);
pl_rw_model *pl_rw_load_buffer(const void *buf, size_t len, const char *name, pl_err *err);
/* A deep copy; the caller frees both. */
pl_rw_model *pl_rw_copy(const pl_rw_model *m);
void pl_rw_free(pl_rw_model *m); /* NULL is fine */
/* The serialized model (malloc'd, *len bytes). */
void *pl_rw_pack(const pl_rw_model *m, size_t *len);
/* Writes the model to path atomically (pl_out: a temporary beside it, renamed over it). */
int pl_rw_save(const pl_rw_model *m, const char *path, pl_err *err);
/* Placer's graph of the model (finalized, shapes inferred with opts, which may be NULL): what
 * the rules match on and what the cost model prices. The caller frees it. */
pl_graph *pl_rw_graph(const pl_rw_model *m, const pl_load_opts *opts, pl_err *err);
/* Top-level node count (what `optimize` reports as ops before/after). */
int pl_rw_nodes(const pl_rw_model *m);

/* ---- rules ---- */
typedef struct pl_rw_rule {
    const char *name;        /* "conv_bn_fold", ... (stable: plans and reports name it) */
    const char *pattern;     /* the target graph, e.g. "Conv -> BatchNormalization" */
    const char *rewrite;     /* the replacement, e.g. "Conv (W', B')" */
    const char *description; /* the conditions, in a sentence */
    const char *source;      /* where the rule comes from (paper, rule set, optimizer pass) */
} pl_rw_rule;

/* The rule table; *n gets its length. Indices are stable within a build. */
const pl_rw_rule *pl_rw_rules(int *n);
/* The index of the rule named `name`, or -1. */
int pl_rw_rule_index(const char *name);

#define PL_RW_MAX_SITE 64 /* most nodes a site names */

typedef struct pl_rw_site {
    int rule;     /* index into pl_rw_rules */
    int n_nodes;  /* the matched nodes, the anchor first (the rule fixes the order) */
    char **nodes; /* node names, malloc'd */
} pl_rw_site;
void pl_rw_sites_free(pl_rw_site *s, int n);

/* Every site of rule `rule` in m, anchors in g's topological order, into *sites (n of them;
 * free with pl_rw_sites_free). g is m's graph (pl_rw_graph of this very model); NULL: built
 * here with default options. Sites of one rule may overlap: applying one can invalidate
 * another (find again on the result). Returns 0, or -1 with err set. */
int pl_rw_find(const pl_rw_model *m, const pl_graph *g, int rule, pl_rw_site **sites, int *n,
               pl_err *err);
/* How many sites every rule has in m, all rules together (its graph built with opts, NULL:
 * the defaults); 0 says no rewrite applies, so a search would answer m itself. -1 with err
 * set. */
int pl_rw_count_sites(const pl_rw_model *m, const pl_load_opts *opts, pl_err *err);
/* A new model: m with the site's rule applied there, every condition checked again on g (m's
 * graph, NULL: built here). m is not changed. NULL with err set when the site does not match
 * m ("FILE: rule R at node N: PROBLEM"). */
pl_rw_model *pl_rw_apply(const pl_rw_model *m, const pl_graph *g, const pl_rw_site *site,
                         pl_err *err);

/* Greedy pass: for each rule in table order, applies its sites one by one (finding again after
 * each application, so a rewrite never sees a stale graph) until none is left or `max_per_rule`
 * (0: no limit) were applied. *m is replaced by the result. counts (may be NULL; one entry per
 * rule, zeroed here) gets how many sites of each rule were applied; log (may be NULL) gets
 * every applied site, in order, for replay with pl_rw_replay (*n_log of them; free with
 * pl_rw_sites_free). Returns the number applied, or -1 with err set (*m is then unchanged). */
int pl_rw_greedy(pl_rw_model **m, const pl_load_opts *opts, int max_per_rule, int *counts,
                 pl_rw_site **log, int *n_log, pl_err *err);
/* Applies sites[0..n) in order to *m (e.g. the inflated copy of the model they were found on),
 * rebuilding the graph between steps with opts. *m is replaced by the result; unchanged on
 * error. */
int pl_rw_replay(pl_rw_model **m, const pl_load_opts *opts, const pl_rw_site *sites, int n,
                 pl_err *err);
/* The weighted check of a rewrite found on a weightless model: MODEL inflated into the cache
 * folder `cache` (pl_inflate_model; its path in ref), sites[0..n) replayed on that copy and
 * the result saved to `out`, for onnxruntime to run both. */
int pl_rw_replay_inflated(const char *model, const char *cache, const pl_rw_site *sites, int n,
                          char *ref, size_t ref_n, const char *out, pl_err *err);

/* ---- search (TASO's cost-based backtracking, docs/rewrite.md "Search") ---- */
struct pl_cluster;
struct pl_cost_params;

/* The price the search orders by: the model's predicted time on the cluster's single fastest
 * device, min over devices d of the sum of the cost model's op times on d (pl_cost_new with
 * params, no profile: TASO/MetaFlow sum the ops' times on one device). g is m's graph. -1 with
 * err set when the cost model refuses the graph. */
double pl_rw_price(const pl_graph *g, const struct pl_cluster *c,
                   const struct pl_cost_params *params, pl_err *err);

typedef struct pl_rw_search_opts {
    const struct pl_cluster *c;          /* whose devices price the models */
    const struct pl_cost_params *params; /* NULL: the defaults */
    const pl_load_opts *load;            /* shape inference of every candidate (may be NULL) */
    double alpha;                        /* keep a child when cost < alpha x best; 0: 1.05 */
    double time_limit_s;                 /* 0: none */
    int max_expand;                      /* candidates expanded at most; 0: 200 */
} pl_rw_search_opts;

typedef struct pl_rw_search_result {
    pl_rw_model *best; /* the cheapest model seen, the fewest rewrites from the input at one
                          price (a copy of the input when nothing is cheaper) */
    pl_rw_site *log;   /* the sites from the input to best, in order (pl_rw_replay) */
    int n_log;
    double cost0, best_cost;              /* pl_rw_price of the input and of best */
    int expanded, generated, pruned, dup; /* candidates popped, children made, children over
                                             alpha x best, children seen before */
    bool timed_out;                       /* the time limit stopped it (the result then depends
                                             on the machine's speed) */
} pl_rw_search_result;
void pl_rw_search_result_free(pl_rw_search_result *r);

/* Best-first search from m: a queue of candidates ordered by price (at the same price within
 * 1e-9 relative, fewer top-level nodes first; then the order they were made); the cheapest is
 * popped, every site of every rule is applied to it, and a child is kept when its price is < alpha
 * x the best price so far and its serialized model was not seen before. Stops when the queue is
 * empty, max_expand candidates were expanded or the time limit passed. Deterministic for the same
 * input unless the time limit stops it. 0, or -1 with err set (r is then empty). */
int pl_rw_search(const pl_rw_model *m, const pl_rw_search_opts *o, pl_rw_search_result *r,
                 pl_err *err);

#endif
