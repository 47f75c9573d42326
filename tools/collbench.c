/* collbench.c: times MPI collectives for `placer profile --collectives` (docs/runtime.md,
 * "Measuring collectives"); placer's only MPI code, built with mpicc into
 * build/placer-collbench when mpicc exists and run by placer under `mpirun -np N`.
 *
 *     placer-collbench [--min-bytes B] [--max-bytes B] [--repeat R] [--budget-s T]
 *
 * For sizes doubling from --min-bytes (1 KiB) to --max-bytes (1 GiB), on float32 buffers of
 * random values, it times MPI_Allreduce (sum), MPI_Bcast from rank 0 and a ping-pong of
 * MPI_Send/MPI_Recv between ranks 0 and 1 (one way = half the round trip): one untimed
 * warm-up, then R timed repetitions, each started after a barrier; a repetition's time is the
 * slowest rank's, and rank 0 prints the median as one JSON line per size and collective:
 *
 *     {"op":"allreduce","bytes":1024,"s":4.1e-06,"reps":10}
 *
 * The first line says what runs ({"np":2,"max_bytes":...,"repeat":10}), the last one
 * {"done":true,...}. The largest size is cut to fit half the available memory (MemAvailable:
 * each rank holds two buffers) and the time budget: a size is skipped, and the run ends,
 * when twice the last size's time for all three collectives would overrun it. Large sizes
 * take fewer repetitions (at least 3) so that one size and collective stays near 2 s. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_ALLREDUCE, OP_BCAST, OP_P2P, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"allreduce", "broadcast", "p2p"};

typedef struct opts {
    double min_bytes, max_bytes, budget_s;
    int repeat;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.min_bytes = 1024, .max_bytes = 1 << 30, .budget_s = 900, .repeat = 10};
    for (int i = 1; i < argc; i++) {
        double *d = !strcmp(argv[i], "--min-bytes")   ? &o->min_bytes
                    : !strcmp(argv[i], "--max-bytes") ? &o->max_bytes
                    : !strcmp(argv[i], "--budget-s")  ? &o->budget_s
                                                      : NULL;
        if (i + 1 >= argc) return -1;
        if (d)
            *d = strtod(argv[++i], NULL);
        else if (!strcmp(argv[i], "--repeat"))
            o->repeat = atoi(argv[++i]);
        else
            return -1;
    }
    return o->min_bytes >= 4 && o->max_bytes >= o->min_bytes && o->repeat >= 1 && o->budget_s > 0
               ? 0
               : -1;
}

/* MemAvailable in bytes, 0 when unknown. */
static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

static void fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((seed >> 40) * (1.0 / 16777216.0)); /* [0, 1) */
    }
}

/* One repetition of op on `count` floats; returns this rank's elapsed time. */
static double once(int op, float *a, float *b, int count, int rank)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (op == OP_ALLREDUCE) {
        MPI_Allreduce(a, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (op == OP_BCAST) {
        MPI_Bcast(rank == 0 ? a : b, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Send(a, count, MPI_FLOAT, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(b, count, MPI_FLOAT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(b, count, MPI_FLOAT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(b, count, MPI_FLOAT, 0, 8, MPI_COMM_WORLD);
    }
    double t = MPI_Wtime() - t0;
    return op == OP_P2P ? t / 2 : t;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median over repetitions of the slowest rank's time (on rank 0). */
static double measure(int op, float *a, float *b, int count, int reps, int rank, double *t,
                      double *tmax)
{
    once(op, a, b, count, rank); /* warm-up */
    for (int r = 0; r < reps; r++)
        t[r] = once(op, a, b, count, rank);
    MPI_Reduce(t, tmax, reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    qsort(tmax, (size_t)reps, sizeof *tmax, cmp);
    return reps % 2 ? tmax[reps / 2] : (tmax[reps / 2 - 1] + tmax[reps / 2]) / 2;
}

/* The largest size: --max-bytes, cut to half the available memory (np ranks, two buffers). */
static double cap_bytes(const opts *o, int np)
{
    double avail = mem_available(), max = o->max_bytes;
    while (avail > 0 && max > o->min_bytes && 2.0 * np * max > avail / 2)
        max /= 2;
    return max;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    opts o;
    if (parse(argc, argv, &o) < 0 || np < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N (N >= 2) placer-collbench [--min-bytes B] "
                            "[--max-bytes B] [--repeat R] [--budget-s T]\n");
        MPI_Finalize();
        return 2;
    }
    double max = cap_bytes(&o, np), start = MPI_Wtime(), last_s = 0;
    size_t n = (size_t)(max / 4);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    double *t = malloc((size_t)o.repeat * sizeof *t), *tmax = malloc((size_t)o.repeat * sizeof *t);
    if (!a || !b || !t || !tmax) MPI_Abort(MPI_COMM_WORLD, 3);
    fill(a, n, 42u + (unsigned)rank), fill(b, n, 4242u + (unsigned)rank);
    if (rank == 0)
        printf("{\"np\":%d,\"min_bytes\":%.0f,\"max_bytes\":%.0f,\"asked_max_bytes\":%.0f,"
               "\"repeat\":%d,\"budget_s\":%g}\n",
               np, o.min_bytes, max, o.max_bytes, o.repeat, o.budget_s),
            fflush(stdout);
    double bytes = o.min_bytes;
    for (; bytes <= max; bytes *= 2) {
        /* rank 0 decides for all, so that every rank runs the same collectives */
        int go = MPI_Wtime() - start + 2 * last_s <= o.budget_s;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!go) break;
        int count = (int)(bytes / 4);
        last_s = 0;
        for (int op = 0; op < OP_COUNT; op++) {
            double t0 = MPI_Wtime();
            once(op, a, b, count, rank); /* a probe sets the repetitions */
            double probe = MPI_Wtime() - t0;
            MPI_Bcast(&probe, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            int reps = probe * o.repeat > 2 ? (int)(2 / probe) : o.repeat;
            if (reps < 3) reps = o.repeat < 3 ? o.repeat : 3;
            double s = measure(op, a, b, count, reps, rank, t, tmax);
            last_s += MPI_Wtime() - t0;
            if (rank == 0)
                printf("{\"op\":\"%s\",\"bytes\":%.0f,\"s\":%.9g,\"reps\":%d}\n", op_names[op],
                       bytes, s, reps),
                    fflush(stdout);
        }
    }
    if (rank == 0)
        printf("{\"done\":true,\"largest_bytes\":%.0f,\"elapsed_s\":%.3f}\n", bytes / 2,
               MPI_Wtime() - start),
            fflush(stdout);
    free(a), free(b), free(t), free(tmax);
    MPI_Finalize();
    return 0;
}
