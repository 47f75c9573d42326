/* dist.h: the pool of workers a search sees when placer runs under `mpirun` (docs/dist.md).
 *
 * This module owns every MPI call. Built with -DPL_MPI (build/placer-mpi) it uses MPI; built
 * without (build/placer, libplacer) it is one process of rank 0 in a pool of size 1, and the
 * rest of the code is the same either way. */
#ifndef PLACER_DIST_H
#define PLACER_DIST_H

#include <stddef.h>

/* MPI_Init / MPI_Finalize (no-ops without MPI). Init once, before anything reads argv. */
void pl_dist_init(int *argc, char ***argv);
void pl_dist_finalize(void);
/* This process's rank and the pool's size (0 and 1 without MPI or before init). */
int pl_dist_rank(void);
int pl_dist_size(void);

/* Runs item i (0 <= i < n_items) as fn(i, out + i * out_size, user) on rank i % size, then
 * gathers every item's out_size bytes to every rank, so that on return `out` (n_items *
 * out_size bytes) holds all results on all ranks, in item order. fn writes only its own slot
 * and must fill it (the bytes are copied as they are: no pointers). Collective: every rank
 * calls it with the same n_items and out_size. Returns 0, or -1 when MPI failed. */
typedef void (*pl_dist_fn)(int item, void *out, void *user);
int pl_dist_map(int n_items, pl_dist_fn fn, void *out, size_t out_size, void *user);

/* Element-wise sum of v[0..n) over the ranks, in rank order (so the same on every run for a
 * rank count), left in v on every rank. Collective. Returns the number of ranks whose vectors
 * were summed (the pool's size; fewer when a rank died and the job went on without it: divide
 * by this to average), or -1 when MPI failed. */
int pl_dist_sum(double *v, int n);
int pl_dist_sumf(float *v, int n);

/* Copies `bytes` bytes of buf on rank `root` into buf on every rank. Collective. 0 or -1. */
int pl_dist_bcast(void *buf, size_t bytes, int root);

/* The host a rank runs on (MPI_Get_processor_name; this machine's name without MPI). */
const char *pl_dist_host(int rank);

#endif
