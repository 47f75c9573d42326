/* dist.h: the pool of workers a search sees when placer runs under `mpirun` (docs/dist.md).
 *
 * This module owns every MPI call. Built with -DPL_MPI (build/placer-mpi) it uses MPI; built
 * without (build/placer, libplacer) it is one process of rank 0 in a pool of size 1, and the
 * rest of the code is the same either way.
 *
 * Semantics, exactly: a collective call (map, sum, bcast) is made by every rank with the same
 * arguments, in the same order; on return its answer is the same on every rank (a map: every
 * item's result once, in item order, whichever rank ran it, a lost rank's items again on rank
 * 0). Ownership: the buffers are the caller's; a pool call writes only `out` / `v` / `buf`,
 * whose bytes are unspecified after -1. */
#ifndef PLACER_DIST_H
#define PLACER_DIST_H

#include <stdbool.h>
#include <stddef.h>

/* MPI_Init / MPI_Finalize (no-ops without MPI). Init once, before anything reads argv.
 * Under mpirun with several ranks, init also sends a rank > 0's stdout to /dev/null and its
 * stderr to memory: rank 0 is the process the user sees. Finalize takes the exit status the
 * process would return and gives the one it must return: on rank 0 it collects every peer's
 * status and stderr, prints a peer's messages when they are not rank 0's own (a failure on
 * every rank, such as bad input, is told once); rank 0 then returns its status and the others
 * 0, so that mpirun's status is rank 0's. */
void pl_dist_init(int *argc, char ***argv);
int pl_dist_finalize(int rc);
/* This process's rank and the pool's size (0 and 1 without MPI or before init). */
int pl_dist_rank(void);
int pl_dist_size(void);

/* Runs item i (0 <= i < n_items) as fn(i, out + i * out_size, user) on rank i % size, then
 * gathers every item's out_size bytes to every rank, so that on return `out` (n_items *
 * out_size bytes) holds all results on all ranks, in item order. fn writes only its own slot
 * and must fill it (the bytes are copied as they are: no pointers). Collective: every rank
 * calls it with the same n_items and out_size. The items of a rank that died, stalled or failed
 * run on rank 0, so the results are the whole pool's (docs/dist.md, "When a rank dies"). A pool
 * call made inside an item (moirai's restarts inside compare's algorithms) runs whole in this
 * process, as without MPI: the other ranks are busy with their own items. Returns 0, or -1
 * (pl_dist_error says why) when this rank lost rank 0 or was told to stop. */
typedef void (*pl_dist_fn)(int item, void *out, void *user);
int pl_dist_map(int n_items, pl_dist_fn fn, void *out, size_t out_size, void *user);

/* pl_dist_map's one-process loop whatever the pool (every item here, in order, and pool calls
 * inside the items too): for a caller whose ranks are not all calling it together. */
int pl_dist_map_here(int n_items, pl_dist_fn fn, void *out, size_t out_size, void *user);

/* pl_dist_map when `pool` (the caller's ranks are all calling it together), else
 * pl_dist_map_here: the one pool-or-local choice, made by place's pl_pool_map (pl_pool.on) and
 * train's searches (pl_train_ctx.dist). */
int pl_dist_map_or_here(bool pool, int n_items, pl_dist_fn fn, void *out, size_t out_size,
                        void *user);

/* Element-wise sum of v[0..n) over the ranks (MPI_Allreduce), left in v on every rank (the
 * same on every run for a rank count). Collective. Returns the number of ranks summed (the
 * pool's size, 1 without MPI or inside a map's item: divide by it to average), or -1 when MPI
 * failed or a rank was lost (its share cannot be redone elsewhere; pl_dist_error names it). */
int pl_dist_sum(double *v, int n);
int pl_dist_sumf(float *v, int n);

/* Copies `bytes` bytes of buf on rank `root` into buf on every rank. Collective. 0 or -1. */
int pl_dist_bcast(void *buf, size_t bytes, int root);

/* Why the last pool call above returned -1 (a rank lost, the pool stopped), or "". */
const char *pl_dist_error(void);

/* The host a rank runs on (MPI_Get_processor_name; this machine's name without MPI). */
const char *pl_dist_host(int rank);

#endif
