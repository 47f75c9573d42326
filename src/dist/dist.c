/* dist.c: the pool of workers (dist.h). The only file that includes mpi.h; compiled with
 * mpicc -DPL_MPI into build/placer-mpi, and without PL_MPI into libplacer as one process. */
#include "placer/dist.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef PL_MPI
#include <mpi.h>

static int rank_, size_ = 1;

void pl_dist_init(int *argc, char ***argv)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

void pl_dist_finalize(void)
{
    int inited = 0, done = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&done);
    if (inited && !done) MPI_Finalize();
}

/* Item i's slot is rank (i % size)'s (i / size)-th: each rank fills a contiguous send block
 * of `per` slots (the last round padded), Allgather lays the blocks rank by rank, and the
 * slots are then put back in item order. */
static int map_mpi(int n, pl_dist_fn fn, void *out, size_t sz, void *user)
{
    int per = (n + size_ - 1) / size_;
    size_t block = (size_t)per * sz;
    char *mine = calloc(per ? (size_t)per : 1, sz ? sz : 1);
    char *all = calloc(per ? (size_t)per * (size_t)size_ : 1, sz ? sz : 1);
    if (!mine || !all) return free(mine), free(all), -1;
    for (int j = 0, i = rank_; i < n; j++, i += size_)
        fn(i, mine + (size_t)j * sz, user);
    int rc = MPI_Allgather(mine, (int)block, MPI_BYTE, all, (int)block, MPI_BYTE, MPI_COMM_WORLD);
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++)
        memcpy((char *)out + (size_t)i * sz,
               all + (size_t)(i % size_) * block + (size_t)(i / size_) * sz, sz);
    free(mine);
    free(all);
    return rc == MPI_SUCCESS ? 0 : -1;
}
#else
static const int rank_ = 0, size_ = 1;

void pl_dist_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
}

void pl_dist_finalize(void) {}
#endif

int pl_dist_rank(void)
{
    return rank_;
}

int pl_dist_size(void)
{
    return size_;
}

int pl_dist_map(int n_items, pl_dist_fn fn, void *out, size_t out_size, void *user)
{
    if (n_items < 0 || !fn || (n_items && !out)) return -1;
#ifdef PL_MPI
    if (size_ > 1) return map_mpi(n_items, fn, out, out_size, user);
#endif
    for (int i = 0; i < n_items; i++) /* one process: every item here, in order */
        fn(i, (char *)out + (size_t)i * out_size, user);
    return 0;
}

int pl_dist_sum(double *v, int n)
{
    if (n < 0 || (n && !v)) return -1;
#ifdef PL_MPI
    if (size_ > 1 && MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD))
        return -1;
#endif
    return size_;
}

int pl_dist_sumf(float *v, int n)
{
    if (n < 0 || (n && !v)) return -1;
#ifdef PL_MPI
    if (size_ > 1 && MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD))
        return -1;
#endif
    return size_;
}

int pl_dist_bcast(void *buf, size_t bytes, int root)
{
    if (root < 0 || root >= size_ || (bytes && !buf)) return -1;
#ifdef PL_MPI
    if (size_ > 1 && MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD)) return -1;
#endif
    return 0;
}

const char *pl_dist_host(int rank)
{
    static char host[256];
    (void)rank;
    if (!host[0] && gethostname(host, sizeof host - 1)) strcpy(host, "?");
    return host;
}
