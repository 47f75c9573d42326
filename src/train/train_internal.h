/* train_internal.h: what the training module's files share beyond train.h. */
#ifndef PLACER_TRAIN_INTERNAL_H
#define PLACER_TRAIN_INTERNAL_H

#include "placer/dist.h"
#include "placer/train.h"

/* One TAG-SFB integer program (sfb.c): n ops (0..n-1, the gradient's producer g among them),
 * m tensors, tensor e from op from[e] (-1: from outside, never duplicated) to op to[e] with
 * bytes[e] per replica; time_s[i] an op's time per replica; D replicas; tau the bottleneck
 * bandwidth (B/s); grad_bytes the gradient's size. */
typedef struct tr_sfb {
    int n, m, g, D;
    double *time_s, *bytes, tau, grad_bytes;
    int *from, *to;
} tr_sfb;
/* Solves it with CBC in a child process (common.h, "Isolated solves"): alpha[0..n) and the
 * objective. -1 when CBC crashed, stalled, sent garbage or proved no optimum in its limit;
 * why (cap bytes) then says which, and alpha and obj are left as they were. */
int tr_sfb_solve(const tr_sfb *p, unsigned char *alpha, double *obj, char *why, size_t cap);

/* ---- strategies as bytes (strategy.c), to move one between MPI ranks ---- */

/* The fixed size of any strategy of x's context (op groups, device groups, training ops,
 * cluster devices); pack writes exactly that many bytes, unpack returns a new strategy equal
 * to the one packed. */
size_t tr_strategy_bytes(const pl_train_ctx *x);
void tr_strategy_pack(const pl_train_ctx *x, const pl_train_strategy *s, unsigned char *buf);
pl_train_strategy *tr_strategy_unpack(const pl_train_ctx *x, const unsigned char *buf);

/* ---- gradient times (eval.c), for Horovod's fusion ---- */

/* Simulates s once and fills made_s[p], per parameter of the training graph, with the end of
 * the last replica of its gradient's producer (-1: no producer); -1 with err set. */
int tr_grad_times(const pl_train_ctx *x, const pl_train_strategy *s, double *made_s, pl_err *err);

/* ---- greedy passes (greedy.c) ---- */

/* Op group `group`'s row of st becomes action a: its device groups and its option. */
void tr_set_row(pl_train_strategy *st, int group, const pl_train_action *a);
/* Puts alternative a (0 <= a < n_alt) in op group `group`'s row of st: its device groups and
 * option, replacing the whole row (whatever the row held, the result is the same). */
typedef void (*tr_alt_fn)(pl_train_strategy *st, int group, int a, const void *user);
/* Greedy passes from n strategies at once (st[k] with its time t[k], improved in place): for
 * each op group in descending time, each alternative a = 0 .. n_alt-1 in turn replaces the
 * group's row on a copy of st[k], and the copy is kept when its time is below t[k] * (1 - eps)
 * (INFINITY: does not fit). The simulations of one group are spread over the pool when
 * x->dist (greedy.c says why the answer is the same). Returns the simulations made (op groups
 * x n x n_alt), or -1 with err set. */
int tr_greedy(const pl_train_ctx *x, pl_train_strategy **st, double *t, int n, int n_alt,
              tr_alt_fn alt, const void *user, double eps, pl_err *err);

/* ---- the action space (mcts.c), which FlexFlow's MCMC (mcmc.c) searches too ---- */

/* MCTS's actions for any op group of x (docs/train.md, "Search": every option over the
 * device-group sets all, each alone, each GPU model's, the k fastest): returns their count n,
 * *acts malloc'd with n actions whose `uses` point into *uses (malloc'd); the caller frees
 * both, *acts first or not, but never *uses while it reads *acts. Action 0 is every device
 * group with AllReduce, so that all-zero actions are data parallelism. */
int tr_actions(const pl_train_ctx *x, pl_train_action **acts, unsigned char **uses);

/* ---- MCTS's root parallelism (mcts.c; docs/dist.md, "train") ---- */

/* Rank r's tree's generator state: the search's seed on rank 0 (0: the default), so that rank
 * 0's tree is the one a single process grows; a splitmix64 mix of it and r on the others. */
uint64_t tr_tree_seed(unsigned seed, int r);
/* Rank r's (of n) share of o's iterations: o->iterations (0: 300) in all, the first
 * iterations % n ranks one more; a time budget alone (time_s, no iterations) is every rank's
 * own (1 << 30 iterations). */
int tr_tree_budget(const pl_train_search_opts *o, int r, int n);
/* One tree's outcome, as the bytes the pool gathers. */
typedef struct tr_tree {
    double best_s;  /* its fastest strategy (INFINITY: none fits) */
    int iterations; /* run */
    int beat_dp_at; /* its first iteration faster than DP-NCCL; -1: none */
    int ok;         /* 0: the tree failed, with msg */
    char msg[PL_ERR_MAX];
    int held_by; /* the rank holding its strategy: its own, or rank 0 when the tree's rank was
                    lost and rank 0 grew it again */
} tr_tree;
/* The merge of n trees in rank order: returns the rank whose strategy is kept (the fastest;
 * ties: the lowest rank), with sum holding its best_s, the iterations summed and the earliest
 * beat_dp_at of any (-1: none). -1 with err set to the first failed tree's message. */
int tr_merge_trees(const tr_tree *all, int n, tr_tree *sum, pl_err *err);

#endif
