/* train.h: deploying a model's training on heterogeneous GPUs (TAG, issue 16, docs/train.md).
 *
 * Everything else in placer is inference. Here the model's forward graph becomes a training
 * graph (forward, backward and optimizer ops, with the tensors the backward pass keeps alive),
 * its ops are grouped by METIS, and a strategy says, per op group, on which device groups it
 * runs and how (replicated with AllReduce or a parameter server, duplicated, or split by model
 * parallelism), plus which ops SFB duplicates. The compiler turns a strategy into one graph with
 * a placement, in which replicas, Split/Concat/AddN, the collectives' steps and broadcasts are
 * ordinary ops and transfers, so that the one simulator judges it (its links, contention and
 * memory). MCTS searches the strategies; the baselines are strategies too.
 *
 * Semantics, exactly: one training iteration = the forward, backward and optimizer ops of the
 * whole global batch on every replica, with every gradient synchronised once, as the compiled
 * graph; its time is that graph's simulated makespan (one request), and it fits when no
 * device's simulated peak memory exceeds its capacity (not fitting is a result, `oom`, not an
 * error). A replica on 1/k of the batch costs t * (f / k + 1 - f), f the op's batch_frac.
 * Every search (MCTS, the greedy passes, the baselines) is judged only by pl_train_evaluate, so
 * two strategies compare by the simulator alone; with ctx.dist every rank returns the same
 * answer (docs/dist.md).
 *
 * Ownership and failure: a function returning a pointer gives the caller what it must free
 * with the matching _free (NULL on failure, err set); a struct filled through a pointer is the
 * caller's, zeroed at entry, freed (and zeroed) by its _free, which accepts a zeroed one; on
 * failure (-1, err set) it holds nothing to free unless the function says otherwise. The
 * context (pl_train_ctx) borrows its training graph, cluster and params: they must outlive it. */
#ifndef PLACER_TRAIN_H
#define PLACER_TRAIN_H

#include "placer/learn.h"
#include "placer/place.h"

#include <stdint.h>

/* ---- the training graph (src/train/tgraph.c) ---- */

typedef enum { PL_PHASE_FWD, PL_PHASE_BWD, PL_PHASE_OPT } pl_train_phase;

/* TAG's splittability classes: how an op's replicas' outputs combine. */
typedef enum {
    PL_SPLIT_CONCAT, /* takes batch-split inputs, outputs concatenate on the batch dimension */
    PL_SPLIT_SUM,    /* takes batch-split inputs, outputs must be summed (weight gradients) */
    PL_SPLIT_OTHER   /* takes whole inputs (optimizer ops are forced here) */
} pl_split_class;
const char *pl_split_class_name(pl_split_class c); /* "concat", "sum", "other" */

typedef struct pl_train_opts {
    int batch; /* global batch size; 0: the forward graph's own */
    bool sgd;  /* plain SGD instead of Adam (no moment buffers) */
} pl_train_opts;

typedef struct pl_train_graph {
    pl_graph *g;           /* finalized, costs given (PL_OP_COST_GIVEN): the forward ops first, in
                              the model's order (op i is the model's op i, at the global batch), then
                              backward, then optimizer ops */
    int n_fwd;             /* ops [0, n_fwd) are forward */
    int batch;             /* the global batch the costs are for */
    int model_batch;       /* the forward graph's own batch (its inputs' first dimension) */
    pl_train_phase *phase; /* per op */
    pl_split_class *split; /* per op */
    int *fwd_of;           /* per op: the forward op a backward op differentiates; -1 otherwise */
    /* Per op: the fraction of its time and bytes that scale with the batch (1 for ops on
     * activations only, 0 for optimizer ops; a replica on 1/k of the batch costs
     * t * (f / k + 1 - f)). */
    double *batch_frac;
    /* Per tensor: true when its first dimension is the batch (split across replicas). */
    bool *batched;
    /* Parameters: n_params weights, each with the tensor of the weight, of its gradient (the
     * sum over the batch, made by PL_SPLIT_SUM ops) and the optimizer op that applies it. */
    int n_params;
    int *param_tensor, *grad_tensor, *apply_op;
} pl_train_graph;

/* Builds the training graph of the forward graph fwd (finalized, inferred) into *out (the
 * caller's, pl_train_graph_free). Backward rules per op class and the memory kept alive are in
 * docs/train.md. -1 with err set, and *out NULL, on failure (e.g. a graph with no weight to
 * train). */
int pl_train_graph_build(const pl_graph *fwd, const pl_train_opts *o, pl_train_graph **out,
                         pl_err *err);
void pl_train_graph_free(pl_train_graph *t);

/* ---- device groups and op groups (src/train/groups.c) ---- */

/* TAG's device groups: GPUs of one model on one host (the cluster's `host`; devices without
 * one are each their own group), every pair linked alike. */
typedef struct pl_dev_groups {
    int n;
    int *off, *dev; /* CSR: devices of group j are dev[off[j] .. off[j+1]) */
    int *group_of;  /* per cluster device; -1 for devices left out (CPUs) */
} pl_dev_groups;
/* The GPU (and accelerator) devices of c, grouped; CPUs take no part in training. -1 with err
 * set when c has no GPU. */
int pl_dev_groups_build(const pl_cluster *c, pl_dev_groups *out, pl_err *err);
void pl_dev_groups_free(pl_dev_groups *d);

/* Op groups by METIS (at most max_groups, default 60): edge weight = tensor bytes, node weight
 * = time (the op's mean over the GPUs of k's cluster), balance factor 2 (recursive bisection,
 * each within 2^(1/levels): docs/train.md gives the METIS options). An optimizer op joins its
 * parameter's gradient producer's group. */
typedef struct pl_op_groups {
    int n;
    int *group_of;       /* per training op */
    int *off, *op;       /* CSR: ops of group i, in topological order */
    double *time_s;      /* per group: its ops' summed mean time */
    double *param_bytes; /* per group: bytes of the parameters its optimizer ops update */
} pl_op_groups;
int pl_op_groups_build(const pl_train_graph *t, const pl_cost *k, int max_groups, pl_op_groups *out,
                       pl_err *err);
void pl_op_groups_free(pl_op_groups *g);

/* ---- strategies (src/train/strategy.c) ---- */

typedef enum {
    PL_OPT_ALLREDUCE, /* replicate on every device of its device groups, batch split evenly,
                         gradients summed by ring AllReduce */
    PL_OPT_PS,        /* the same, gradients summed at a parameter server */
    PL_OPT_DUPLICATE, /* a copy on every device, inputs broadcast whole, no synchronisation */
    PL_OPT_MP,        /* split by METIS over the devices of its device groups */
    PL_OPT_COUNT
} pl_train_option;
const char *pl_train_option_name(pl_train_option o); /* "allreduce", "ps", "duplicate", "mp" */

typedef struct pl_train_strategy {
    int n_groups, n_dgroups;
    unsigned char *P;   /* [i * n_dgroups + j]: op group i uses device group j */
    pl_train_option *O; /* per op group */
    /* SFB: per training op, 1 when it is duplicated to save a gradient's synchronisation
     * (TAG-SFB's alpha); NULL when SFB chose nothing. */
    unsigned char *sfb;
    int n_sfb; /* entries of sfb (the training graph's op count) */
    /* Per cluster device, its weight in the batch split among a group's replicas
     * (DP-NCCL-P: its speed); NULL: even. */
    double *batch_share;
    int n_devs;   /* entries of batch_share */
    bool overlap; /* a group's synchronisation starts as soon as its gradients are made (TAG);
                     false: on each device, after every gradient made there ("DP, synchronised
                     after backward", dp-sync) */
    /* When set, the AllReduce option's gradients are not synchronised per op group: parameter
     * p's gradient goes in AllReduce bucket[p] (0, 1, ...), each one a node of the dataflow
     * graph that starts when its gradients are made and the previous one (bucket[p] - 1) is
     * done on that device: the collectives serialised on one stream, overlapping the rest of
     * the backward pass (DP-NCCL: one per gradient; Horovod: fused). overlap is then unused.
     * The gradients of one bucket must be made on the same devices. bucket[n_bucket + p]
     * (<= bucket[p]): the AllReduce that starts only once p's gradient is made, its cycle's
     * first for Horovod, whose thread launches a cycle's AllReduces when it has them all. */
    int *bucket;
    int n_bucket; /* the training graph's parameters; bucket holds 2 n_bucket entries */
} pl_train_strategy;
pl_train_strategy *pl_train_strategy_new(int n_groups, int n_dgroups);
pl_train_strategy *pl_train_strategy_copy(const pl_train_strategy *s);
void pl_train_strategy_free(pl_train_strategy *s);

/* ---- the compiler and the evaluation (src/train/compile.c, eval.c) ---- */

typedef struct pl_train_ctx {
    const pl_train_graph *t;
    const pl_cluster *c;
    const pl_cost_params *params; /* NULL: defaults */
    pl_dev_groups dg;
    pl_op_groups og;
    pl_cost *k; /* the training graph's cost table on c */
    /* Searches on this context use dist.h's pool of workers (docs/dist.md, "train"): MCTS
     * grows one tree per rank and the greedy passes (refinement, HeteroG-like) spread their
     * simulations over the ranks. Every rank must then make the same calls on the same context
     * (they are collective). false (pl_train_ctx_init's): every search runs here alone. */
    bool dist;
} pl_train_ctx;
int pl_train_ctx_init(pl_train_ctx *x, const pl_train_graph *t, const pl_cluster *c,
                      const pl_cost_params *params, int max_groups, pl_err *err);
void pl_train_ctx_free(pl_train_ctx *x);
/* Op groups in descending time (ties in group order), malloc'd: the order MCTS decides them
 * in (a search's progress: the groups before the next one are decided) and the baselines'
 * greedy passes visit them. */
int *pl_train_group_order(const pl_train_ctx *x);

/* The per-device training graph of strategy s and its placement on c's devices: every
 * training op once per replica, Split/Concat/AddN where shardings differ, gradient
 * synchronisation (ring AllReduce as 2(D-1) steps of L/D bytes between ring neighbours, or PS
 * push, AddN and pull), broadcasts for duplicated ops. `origin[op]` (malloc'd, NULL to skip)
 * is the training op each compiled op is a replica of, -1 for inserted ops. */
int pl_train_compile(const pl_train_ctx *x, const pl_train_strategy *s, pl_graph **out_g,
                     pl_plan **out_p, int **origin, pl_err *err);

typedef struct pl_train_eval {
    double iteration_s;
    /* How far iteration_s may be off (cost.h, pl_cost_plan_band of the compiled graph's
     * placement) and the basis of its widest op. */
    double band;
    pl_cost_basis basis;
    bool oom;
    int oom_dev; /* the first device over its memory, -1 */
    double oom_excess_bytes;
    int n_devs;
    double *peak_mem_bytes; /* per cluster device */
    int compiled_ops;
    /* The simulator's feedback (TAG's Table 1, part 3; docs/train.md, "Feedback"), only with
     * pl_train_eval_opts.feedback (it records every op's and transfer's times); 0 and NULL
     * otherwise. */
    int n_groups;             /* op groups */
    double *group_makespan_s; /* per op group: first start to last end of its compiled ops
                                 (replicas of its training ops), over every replica; 0: none */
    double *group_out_idle_s; /* per op group: mean gap between the end of one of those ops
                                 and the start of a transfer of a tensor it made; 0: none */
    double *dev_idle_frac;    /* per cluster device: 1 - busy / iteration */
    int n_dgroups;            /* device groups */
    double *link_idle_frac;   /* [ja * n_dgroups + jb]: 1 - busy / iteration of the routes
                                 from group ja's devices to group jb's, averaged over the
                                 ordered pairs of different devices; 1 when there are none */
} pl_train_eval;
typedef struct pl_train_eval_opts {
    bool feedback; /* fill the feedback fields (the simulation records its times) */
} pl_train_eval_opts;
/* Compiles and simulates one training iteration (o NULL: no feedback) into *e (the caller's,
 * pl_train_eval_free); an iteration that does not fit is e->oom, not a failure. -1 with err
 * set, and *e zeroed, when the strategy does not compile or the simulation fails. */
int pl_train_evaluate_opts(const pl_train_ctx *x, const pl_train_strategy *s,
                           const pl_train_eval_opts *o, pl_train_eval *e, pl_err *err);
/* The same without feedback. */
int pl_train_evaluate(const pl_train_ctx *x, const pl_train_strategy *s, pl_train_eval *e,
                      pl_err *err);
void pl_train_eval_free(pl_train_eval *e);

/* ---- baselines (src/train/baselines.c) ---- */

/* Data parallelism on every device with ring AllReduce; `proportional`: each device's share
 * of the batch proportional to its speed (DP-NCCL-P). overlap false: DP-NCCL as TensorFlow's
 * in-graph replication runs it, one AllReduce per gradient in the order backpropagation makes
 * them (their forward ops' in reverse, as baselines.c says), serialised on one stream;
 * true: TAG's one AllReduce per op group, each starting as soon as its gradients are made
 * (MCTS's root completion). */
pl_train_strategy *pl_train_dp(const pl_train_ctx *x, bool proportional, bool overlap);
/* "DP, synchronised after backward" (dp-sync): data parallelism with one AllReduce per op
 * group whose ring waits, on each device, for every gradient made there. */
pl_train_strategy *pl_train_dp_sync(const pl_train_ctx *x);

/* Horovod's tensor fusion (docs/train.md, "Baselines"): its background thread wakes every
 * cycle_s and fuses the gradients made since into AllReduces of at most fusion_bytes each
 * (a gradient that would overflow the buffer starts the next one). */
typedef struct pl_train_horovod_opts {
    double fusion_bytes; /* 0: 64 MiB, HOROVOD_FUSION_THRESHOLD's default */
    double cycle_s;      /* 0: 5 ms, HOROVOD_CYCLE_TIME's default */
} pl_train_horovod_opts;
/* Horovod (o NULL: its defaults): data parallelism whose gradients are fused by the cycle
 * each is made in, as the simulation of DP-NCCL's unfused strategy makes them (max over the
 * replicas: Horovod fuses a tensor once every rank has it); NULL with err set on failure. */
pl_train_strategy *pl_train_horovod(const pl_train_ctx *x, const pl_train_horovod_opts *o,
                                    pl_err *err);
/* HeteroG-like: per op group, in descending time, the best by simulation of replicating it on
 * every device (AllReduce or PS) or putting it on one device group (model parallel there);
 * NULL with err set on failure. With x->dist, its simulations are spread over the ranks (the
 * same answer on every rank and as one process). */
pl_train_strategy *pl_train_heterog(const pl_train_ctx *x, pl_err *err);
/* Pipeline-free model parallelism by a placer of one model (place.h: "heft", "moirai", ...) on
 * the training graph at the whole batch: its simulated iteration, and its placement of the
 * training graph's ops into *plan (the caller frees it; NULL: not wanted). */
int pl_train_placer(const pl_train_ctx *x, const char *algo, const pl_place_opts *po,
                    pl_train_eval *e, pl_plan **plan, pl_err *err);
/* OOM fallback: while the strategy does not fit, the op group with the most parameters (then
 * time) not yet model-parallel becomes model-parallel over every device group. 0 when it fits
 * (e holds its evaluation), -1 with err naming the device and the memory short when even all
 * model parallel does not, *e then zeroed; s keeps the splits made (the caller still owns
 * and frees it). */
int pl_train_fit(const pl_train_ctx *x, pl_train_strategy *s, pl_train_eval *e, pl_err *err);

/* ---- search (src/train/mcts.c) ---- */

/* One MCTS action for an op group: the device groups it uses and its option. placer enumerates, per
 * op group, every option over the device-group sets "all", "each one alone", "every group of one
 * GPU model", and "the k fastest groups" (docs/train.md). */
typedef struct pl_train_action {
    /* per device group j of the context (n_dgroups bytes, any number of groups): 1 when the
     * action uses it, else 0; owned by the search (or the caller that made the action) */
    const unsigned char *uses;
    pl_train_option option;
} pl_train_action;

/* Priors G(s, a) of one op group's n actions given the partial strategy (groups decided so far;
 * the others as the search completes them) and `feedback`, the evaluation of `partial` with
 * its feedback (pl_train_eval_opts.feedback): fills prior[0..n), summing to 1. The uniform
 * prior is the default; a learned one plugs in here (pl_tag_gnn_prior, below). */
typedef void (*pl_train_prior_fn)(const pl_train_ctx *x, const pl_train_strategy *partial,
                                  const pl_train_eval *feedback, int group,
                                  const pl_train_action *a, int n, double *prior, void *user);

/* Distillation targets (TAG's GNN training, issue 17): a vertex of the search tree, given as the
 * partial strategy of its path (completed as the search completes it, as for the prior), the op
 * group decided next, the n actions and their visit counts N(s, a) (visits[0..n)). */
typedef void (*pl_train_vertex_fn)(const pl_train_ctx *x, const pl_train_strategy *partial,
                                   int group, const pl_train_action *a, int n, const double *visits,
                                   void *user);

typedef struct pl_train_search_opts {
    int iterations; /* MCTS iterations (0: 300 unless time_s is given); with x->dist, the
                       total over the ranks, rank r running iterations / N (+1 when r <
                       iterations % N) */
    double time_s;  /* or a time budget, each rank's with x->dist; 0: none */
    double c_puct;  /* PUCT's exploration coefficient; 0: 1.0 */
    pl_train_prior_fn prior;
    void *prior_user;
    bool no_sfb;
    bool no_refine; /* skip the greedy pass after MCTS (docs/train.md, "Search") */
    unsigned seed;  /* with x->dist, rank 0's tree's; rank r > 0 derives its own from it */
    void (*progress)(int iteration, double best_s, double dp_s, void *user);
    void *progress_user;
    /* When set: once MCTS ends (before the refinement), called for every tree vertex whose
     * visits sum to at least min_visits (0: 1), parents before children. Every iteration
     * counts one visit at each vertex it passes, re-evaluations of a strategy already seen
     * included, so the root's visits sum to the iterations run; a vertex a first visit
     * created has one visit fewer than the edge into it. With x->dist, each rank reports
     * its own tree. */
    pl_train_vertex_fn on_vertex;
    void *on_vertex_user;
    int min_visits;
    /* With a prior fn: first grow a tree with uniform priors, the same seed and budget (no
     * on_vertex), then the prior's; the faster tree's best goes on to the refinement (ties:
     * the uniform tree's), so that each is credited with what it found alone. */
    bool uniform_too;
} pl_train_search_opts;

/* Which part of the search found its answer, the last that improved it (docs/train.md, "Who
 * found the answer"). */
typedef enum {
    PL_FOUND_DP,           /* DP-NCCL, evaluated first and kept: nothing beat it */
    PL_FOUND_MCTS_UNIFORM, /* the tree search with uniform priors */
    PL_FOUND_MCTS_PRIOR,   /* the tree search guided by the prior fn */
    PL_FOUND_REFINE,       /* the greedy refinement after MCTS */
    PL_FOUND_SFB,          /* SFB's duplication, kept because the simulation was faster */
    PL_FOUND_FALLBACK      /* the OOM fallback: the best did not fit and was split until it did */
} pl_train_found;

/* The name `placer train` and the bench give f: "dp", "mcts-uniform", "mcts-gnn" (placer's one
 * learned prior is TAG's GNN), "refinement", "sfb", "fallback". */
const char *pl_train_found_name(pl_train_found f);

/* One MCTS tree's own outcome (with x->dist, every rank's tree of that prior, merged). */
typedef struct pl_train_tree_result {
    bool ran;                  /* false: not grown (no prior fn, or uniform_too unset) */
    double best_s;             /* its fastest strategy that fits; INFINITY: none */
    int iterations;            /* run */
    int iterations_to_beat_dp; /* -1: none */
    /* its best is the search's start (the root's completion: every op group data-parallel,
     * its AllReduce overlapped with the backward pass), which an iteration reaches whenever
     * every op group takes that action. It was the Horovod baseline's strategy until that
     * baseline fused its gradients (docs/train.md, "Baselines"); no row has it now, so the
     * tree that reached it, or the refinement that started from it, is credited */
    bool at_start;
} pl_train_tree_result;

typedef struct pl_train_search_result {
    pl_train_strategy *best; /* the fastest that fits; never slower than DP-NCCL when it fits */
    pl_train_eval eval;
    double dp_s;               /* DP-NCCL's iteration; INFINITY when it does not fit */
    int iterations;            /* with x->dist, summed over the ranks */
    int iterations_to_beat_dp; /* the first iteration whose strategy beat DP-NCCL; -1: none
                                  (with x->dist, the first of any rank, counted in its tree) */
    double search_s;
    int sfb_applied;  /* gradients SFB duplicated */
    int sfb_rejected; /* gradients the ILP would duplicate, not kept: the simulation was slower */
    double mcts_s;    /* the best iteration MCTS alone found, before refinement and SFB (with
                         x->dist, the best of every rank's tree) */
    /* The refinement's two passes (docs/train.md, "Search"): from MCTS's best and from the
     * root's data parallelism; INFINITY when they did not run. */
    double refined_mcts_s, refined_root_s;
    int refine_evaluations;
    /* Each part's best in turn (docs/train.md, "Who found the answer"): the tree with uniform
     * priors and the prior fn's tree, each alone; after the refinement (from the faster tree's
     * best); after SFB. Each is no slower than the one before; INFINITY when the part did not
     * run or nothing fitted. iterations, iterations_to_beat_dp and mcts_s above are the
     * faster tree's. */
    pl_train_tree_result uniform, prior;
    double refined_s, sfb_s;
    pl_train_found refined_by; /* found_by as the refinement left it, before SFB */
    pl_train_found found_by;
} pl_train_search_result;

/* The strategies MCTS evaluated in all: both trees' iterations when the GNN's tree grew beside
 * the uniform one (uniform_too), else r->iterations. The budget a baseline search is given to
 * be compared on equal terms (FlexFlow's MCMC). */
int pl_train_search_iterations(const pl_train_search_result *r);

/* TAG: MCTS with PUCT over the op groups in descending time, reward = T_DP / T - 1 (-1 when it
 * does not fit), then a greedy refinement (unless no_refine), SFB per synchronised gradient
 * (unless no_sfb), then the OOM fallback. With x->dist, root parallelism: every rank grows its
 * own tree and the fastest strategy of any tree (ties: the lowest rank) goes on to the
 * refinement, whose simulations are spread over the ranks; every rank returns the same
 * result. Rank 0's tree is the one a single process grows with the same seed and rank 0's
 * share of the iterations.
 * On success r->best and r->eval are the caller's (pl_train_search_result_free). On failure
 * (-1, err set) r->best is NULL and r->eval zeroed (nothing to free), while the statistics
 * hold what the search reached before it failed (iterations, dp_s, mcts_s, refined_*_s,
 * sfb_*, search_s, found_by), which `placer train` reports beside the baselines; calling
 * pl_train_search_result_free on it is fine. */
int pl_train_search(const pl_train_ctx *x, const pl_train_search_opts *o, pl_train_search_result *r,
                    pl_err *err);
void pl_train_search_result_free(pl_train_search_result *r);

/* ---- FlexFlow's search (src/train/mcmc.c; docs/train.md, "Baselines") ---- */

/* FlexFlow's MCMC (Jia et al., SysML 2019) over MCTS's action space: a state gives every op
 * group one of MCTS's actions (overlapped synchronisation, as MCTS's strategies); it starts
 * from data parallelism (every group on every device group with AllReduce); a proposal gives
 * one op group, drawn at random, another of its actions at random, and is accepted with
 * probability min(1, exp(beta (T_current - T_proposal))) (T: pl_train_evaluate's iteration,
 * INFINITY when it does not fit, never accepted); every restart_every proposals the walk
 * goes back to the best state found, as FlexFlow's code does. Deterministic for a seed. */
typedef struct pl_train_mcmc_opts {
    int iterations;    /* proposals, each one strategy evaluated as one MCTS iteration is (a
                          strategy seen before is answered from memory); 0: 300, MCTS's */
    double beta_per_s; /* 0: FlexFlow's default, 1 per millisecond of simulated time (1000) */
    int restart_every; /* 0: FlexFlow's rule, iterations / 100 within [1, 1000] */
    unsigned seed;     /* 0: a fixed default */
} pl_train_mcmc_opts;

typedef struct pl_train_mcmc_result {
    double start_s;  /* data parallelism's iteration, the start (INFINITY: it does not fit) */
    double best_s;   /* the returned strategy's; never above start_s */
    int iterations;  /* proposals made */
    int simulations; /* distinct strategies simulated (the start's included) */
    int accepted;    /* proposals accepted, uphill ones included */
    int uphill;      /* proposals accepted although slower than the walk's state */
} pl_train_mcmc_result;

/* The fastest strategy the walk visited (the start when nothing beat it), the caller's
 * (pl_train_strategy_free); r (NULL: not wanted) says how the walk went. NULL with err set
 * when an evaluation fails. Runs here alone, whatever x->dist says: every rank that calls it
 * computes the same answer. */
pl_train_strategy *pl_train_mcmc(const pl_train_ctx *x, const pl_train_mcmc_opts *o,
                                 pl_train_mcmc_result *r, pl_err *err);

/* ---- SFB (src/train/sfb.c) ---- */

/* TAG-SFB's ILP, per gradient the strategy synchronises (CBC): applied to s (its sfb entries)
 * when the objective is negative. The count of gradients changed, or -1 with err set. */
int pl_train_sfb(const pl_train_ctx *x, pl_train_strategy *s, pl_err *err);

/* ---- TAG's GNN prior (src/train/gnn.c; docs/learn.md, "TAG's GNN prior") ----
 * TAG's heterogeneous graph neural network, the prior G(s, a) of its MCTS: a graph of op
 * groups and device groups with Table 1's features (raw, the strategy, the simulator's
 * feedback, the search's progress), four GAT layers over typed edges, and a decoder that
 * scores each candidate action of the next op group. */

/* Columns of the node and edge feature rows (docs/learn.md gives each with its scale). */
enum { PL_TAG_OP_FEATS = 12, PL_TAG_DEV_FEATS = 7, PL_TAG_EDGE_FEATS = 3 };
/* Columns of a candidate action's row: what it covers of the whole topology (shares of the
 * device groups, the GPUs and the FP32 compute; 1 when it uses every group) and ln(1 + GB/s)
 * of the slowest route between two of its GPUs (0 for one GPU). Shares, not counts, so that
 * "every group" reads the same on 3 groups and on 7 (issue 31, item 4). */
enum { PL_TAG_CAND_FEATS = 5 };
/* Edge types: op-op (tensors, both ways), dev-dev (routes between different device groups),
 * op->dev and dev->op (every op group with every device group: placed or not). */
enum { PL_TAG_OP_OP, PL_TAG_DEV_DEV, PL_TAG_OP_DEV, PL_TAG_DEV_OP, PL_TAG_EDGE_TYPES };

/* One search state and its candidate actions as the GNN reads them. Self-contained (no
 * pointer into the ctx, strategy or evaluation it was built from), so a trainer can keep many
 * after those are freed. Nodes: op groups 0..n_op-1, then device groups n_op..n_op+n_dev-1. */
typedef struct pl_tag_input {
    int n_op, n_dev, group; /* group: the op group the candidates are for */
    float *op_feat;         /* [n_op * PL_TAG_OP_FEATS] */
    float *dev_feat;        /* [n_dev * PL_TAG_DEV_FEATS] */
    int n_edges[PL_TAG_EDGE_TYPES];
    int *ptr[PL_TAG_EDGE_TYPES];     /* CSR of incoming edges over the n_op + n_dev nodes */
    int *src[PL_TAG_EDGE_TYPES];     /* per edge: its source node */
    float *efeat[PL_TAG_EDGE_TYPES]; /* [n_edges * PL_TAG_EDGE_FEATS] */
    int n_cand;
    float *cand_P;    /* [n_cand * n_dev]: 1 where the candidate uses device group j */
    int *cand_option; /* per candidate: its pl_train_option */
    float *cand_feat; /* [n_cand * PL_TAG_CAND_FEATS] */
} pl_tag_input;

/* The input for choosing op group `group`'s action among a[0..n) given the partial strategy
 * (completed, as MCTS evaluates it) and fb, its evaluation with feedback (NULL, or one without
 * feedback: the feedback features are 0). Never fails; free with pl_tag_input_free. */
pl_tag_input *pl_tag_input_build(const pl_train_ctx *x, const pl_train_strategy *partial,
                                 const pl_train_eval *fb, int group, const pl_train_action *a,
                                 int n);
void pl_tag_input_free(pl_tag_input *in);

/* The model: encoders, 4 GAT layers, decoder, its Adam state and a tape. Not thread-safe. */
typedef struct pl_tag_gnn pl_tag_gnn;
/* A freshly initialised model (deterministic for a seed). */
pl_tag_gnn *pl_tag_gnn_new(uint64_t seed);
void pl_tag_gnn_free(pl_tag_gnn *m);
/* The weights file (pl_params_save/load, the one format). Loading checks the file against
 * this model (names, shapes) and says what is wrong, naming the file; m is unchanged then. */
int pl_tag_gnn_save(const pl_tag_gnn *m, const char *path, pl_err *err);
int pl_tag_gnn_load(pl_tag_gnn *m, const char *path, pl_err *err);
/* Parameters (for tests and the trainer: counts, gradient checks). */
pl_params *pl_tag_gnn_params(pl_tag_gnn *m);
/* G over in's candidates: prior[0..in->n_cand), summing to 1. Returns in->n_cand. */
int pl_tag_gnn_priors(pl_tag_gnn *m, const pl_tag_input *in, double *prior);
/* Forward and backward of the cross-entropy -sum_c target[c] log G[c] (target: a
 * distribution over in's candidates, e.g. normalised MCTS visit counts): gradients ADD to
 * the model's until pl_tag_gnn_update. Returns the loss. */
double pl_tag_gnn_accumulate(pl_tag_gnn *m, const pl_tag_input *in, const double *target);
/* One training step: clips the gradients' global norm to 5, Adam with learning rate lr,
 * zeroes the gradients. */
void pl_tag_gnn_update(pl_tag_gnn *m, float lr);
/* A pl_train_prior_fn (above) with user = the pl_tag_gnn *: builds the input and fills
 * prior[0..n). */
void pl_tag_gnn_prior(const pl_train_ctx *x, const pl_train_strategy *partial,
                      const pl_train_eval *feedback, int group, const pl_train_action *a, int n,
                      double *prior, void *user);

/* ---- training the prior by MCTS distillation (src/train/distill.c; docs/learn.md,
 * "Training the prior") ----
 * TAG's training loop (digest §3.2.4): searches on the models' training graphs over random
 * topologies (pl_cluster_random, seeds 1..n_topologies), guided by the current prior; each tree
 * vertex with at least min_visits visits gives a sample (its state as a pl_tag_input, with the
 * simulator's feedback for its completed strategy, and the normalised visit counts as target);
 * after each search the model takes `steps` Adam steps on minibatches drawn from a replay
 * buffer of the most recent samples. Search r (0-based) runs model r mod n_models on topology
 * 1 + (r / n_models) mod n_topologies, so every pair is visited in turn; deterministic for a
 * seed and a round count. */
#define PL_TAG_DISTILL_GROUPS 16      /* op groups per model (TAG: 60) */
#define PL_TAG_DISTILL_GPUS 8         /* GPUs per random topology, at most (and 2 at least) */
#define PL_TAG_DISTILL_TOPOLOGIES 36  /* TAG: 100 */
#define PL_TAG_DISTILL_ITERATIONS 200 /* MCTS iterations per search */
#define PL_TAG_DISTILL_VISITS 25      /* a vertex's visits to give a target (TAG: 800) */

typedef struct pl_tag_distill_result {
    int rounds;   /* searches run */
    long samples; /* targets collected */
    int skipped;  /* searches that failed (e.g. nothing fits): skipped, last_skip says why */
    char last_skip[PL_ERR_MAX];
    double first_loss, last_loss; /* mean cross-entropy of the first and the last minibatch */
    double seconds;
} pl_tag_distill_result;

typedef struct pl_tag_distill_opts {
    const char *const *models; /* ONNX files */
    const int *batches;        /* per model, its global batch (NULL or 0: the model's own) */
    int n_models;
    int max_groups, max_gpus, n_topologies, iterations, min_visits; /* 0: the defaults above */
    int rounds;    /* searches; 0: one per (model, topology) pair, unless time_s ends it first */
    double time_s; /* stop starting searches after this long; 0: none */
    int steps, minibatch, buffer; /* per search; 0: 32 steps of 16 samples, 4096 kept */
    float lr;                     /* 0: 1e-3 */
    /* true: each search is guided by the prior being trained (TAG's and AlphaZero's loop);
     * false: by uniform priors, so that the targets are what the rewards alone make MCTS
     * visit (docs/learn.md, "Training the prior", says why this is the default). */
    bool self_play;
    uint64_t seed; /* minibatch draws */
    void (*progress)(const pl_tag_distill_result *r, const char *model, int topology, int samples,
                     double loss, void *user);
    void *progress_user;
} pl_tag_distill_opts;

/* Trains m in place. -1 with err set when a model cannot be loaded or trained, or when no
 * search gave a sample. */
int pl_tag_distill(pl_tag_gnn *m, const pl_tag_distill_opts *o, pl_tag_distill_result *r,
                   pl_err *err);

#endif
