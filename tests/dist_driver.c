/* dist_driver.c: the pool's primitives under mpirun, for test_dist (built with mpicc when MPI
 * is present, linked with src/dist's MPI build). Rank 0 prints what every rank got:
 *   map I VALUE RANK   for 7 items (VALUE = I * I, RANK = the rank that ran it)
 *   nested I SUM       a map inside item I of the outer one (runs whole on its rank)
 *   sum COUNT A B      the sum of (rank + 1, 10 * (rank + 1)) and how many ranks it holds,
 *                      or "sum failed: WHY"
 *   bcast ROOT VALUE   rank ROOT's 100 * ROOT + 7 on every rank, or "bcast ROOT failed: WHY"
 * With the argument or-here, only pl_dist_map_or_here's two choices over the same 7 items:
 *   pool I RANK        pool true: item I ran on rank RANK (the pool's i % size)
 *   here I RANK        pool false: every rank ran every item itself (rank 0 prints its own)
 * A rank that finds a result it did not expect exits 3, so a wrong gather shows on any rank. */
#include "placer/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int value, rank, nested;
} item_out;

static void square(int i, void *out, void *user)
{
    (void)user;
    ((int *)out)[0] = i * i;
}

/* An item that uses the pool itself: it must run whole here, not wait for the busy ranks. */
static void outer(int i, void *out, void *user)
{
    (void)user;
    item_out *o = out;
    int inner[3];
    o->value = i * i;
    o->rank = pl_dist_rank();
    o->nested = pl_dist_map(3, square, inner, sizeof *inner, NULL) == 0
                    ? inner[0] + inner[1] + inner[2] + 100 * i
                    : -1;
}

/* pl_dist_map_or_here with the pool and without: "pool" and "here" lines; 3 on a wrong result
 * (an item of the local map run by another rank, or a wrong value). */
static int or_here(int me)
{
    int rc = 0;
    item_out got[7];
    for (int pool = 1; pool >= 0; pool--) {
        if (pl_dist_map_or_here(pool, 7, outer, got, sizeof *got, NULL) != 0) {
            fprintf(stderr, "map failed: %s\n", pl_dist_error());
            return 4;
        }
        for (int i = 0; i < 7; i++) {
            printf("%s %d %d\n", pool ? "pool" : "here", i, got[i].rank);
            if (got[i].value != i * i || (!pool && got[i].rank != me)) rc = 3;
        }
    }
    fflush(stdout);
    return rc;
}

int main(int argc, char **argv)
{
    pl_dist_init(&argc, &argv);
    int rc = 0, me = pl_dist_rank(), n = pl_dist_size();
    if (argc > 1 && strcmp(argv[1], "or-here") == 0) return pl_dist_finalize(or_here(me));
    item_out got[7];
    if (pl_dist_map(7, outer, got, sizeof *got, NULL) != 0) {
        fprintf(stderr, "map failed: %s\n", pl_dist_error());
        return pl_dist_finalize(4);
    }
    for (int i = 0; i < 7; i++) {
        printf("map %d %d %d\n", i, got[i].value, got[i].rank);
        printf("nested %d %d\n", i, got[i].nested);
        if (got[i].value != i * i || got[i].nested != 5 + 100 * i) rc = 3;
    }
    double v[2] = {me + 1, 10.0 * (me + 1)};
    int count = pl_dist_sum(v, 2);
    if (count < 0)
        printf("sum failed: %s\n", pl_dist_error());
    else
        printf("sum %d %g %g\n", count, v[0], v[1]);
    float f[1] = {(float)(me + 1)};
    if (pl_dist_sumf(f, 1) != count || (count > 0 && f[0] != (float)v[0])) rc = 3;
    for (int root = 0; root < n; root++) {
        int b = 100 * me + 7;
        if (pl_dist_bcast(&b, sizeof b, root) == 0)
            printf("bcast %d %d\n", root, b);
        else
            printf("bcast %d failed: %s\n", root, pl_dist_error());
    }
    fflush(stdout);
    return pl_dist_finalize(rc);
}
