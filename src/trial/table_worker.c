/* table_worker.c: a trial worker that looks each configuration's latency up in a table: the
 * search strategies can then be compared on the same figures, many seeds over, without
 * placing the model again (the benchmark places each configuration once). */
#include "placer/trial.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct table {
    pl_strmap index; /* name -> row */
    double *latency_s;
    char **names;
    int n;
} table;

static int table_trial(pl_trial_worker *w, const pl_cluster *c, pl_trial_out *out, pl_err *err)
{
    (void)err;
    table *t = w->state;
    int row = pl_strmap_get(&t->index, c->name);
    double ms = row >= 0 ? t->latency_s[row] : INFINITY;
    out->runs = isfinite(ms);
    out->latency_s = ms;
    snprintf(out->algo, sizeof out->algo, "table");
    if (!out->runs) snprintf(out->why, sizeof out->why, "the table says it does not run");
    return 0;
}

static void table_stop(pl_trial_worker *w)
{
    table *t = w->state;
    for (int i = 0; i < t->n; i++)
        free(t->names[i]);
    pl_strmap_free(&t->index);
    free(t->names), free(t->latency_s), free(t);
}

static const pl_trial_worker_ops TABLE_OPS = {"table", NULL, table_trial, table_stop};

pl_trial_worker *pl_trial_table_new(const char *const *names, const double *latency_s, int n)
{
    table *t = pl_calloc(1, sizeof *t);
    t->n = n;
    t->names = pl_calloc(n + 1, sizeof *t->names);
    t->latency_s = pl_calloc(n + 1, sizeof *t->latency_s);
    for (int i = 0; i < n; i++) {
        t->names[i] = pl_strdup(names[i]);
        t->latency_s[i] = latency_s[i];
        pl_strmap_put(&t->index, t->names[i], i);
    }
    pl_trial_worker *w = pl_calloc(1, sizeof *w);
    w->ops = &TABLE_OPS, w->state = t;
    return w;
}
