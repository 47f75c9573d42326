/* check_internal.h: what check.c (times) and check_mem.c (memory) share. The checker reads
 * only the recorded result, the plan and the graph: it shares no state with the run, so a
 * bug in the event loop cannot hide itself. */
#ifndef PLACER_SIM_CHECK_INTERNAL_H
#define PLACER_SIM_CHECK_INTERNAL_H

#include "placer/sim.h"

typedef struct chk_xref {
    long long key; /* (request, tensor, to, reader) */
    int idx;       /* into r->xfers */
} chk_xref;

typedef struct chk {
    const pl_cost *k;
    const pl_plan *p;
    const pl_sim_opts *o;
    const pl_sim_result *r;
    const pl_graph *g;
    int n, D, K, io;
    chk_xref *xs;    /* transfers sorted by (request, tensor, to, reader) */
    char *is_out;    /* per tensor: a graph output */
    double *req_end; /* per request: last op end or output return */
    double *stage;   /* per op: its stage's cost (pl_sim_stage_s), part of its time */
    int *dom;        /* per device: its shared-memory domain, or -1 (check_share.c) */
    int n_dom;
    char *why;
    size_t why_n;
} chk;

/* Sets the message and returns -1. */
int chk_fail(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a <= b, allowing for rounding. */
bool chk_le(double a, double b);
/* The transfer of tensor t to device `to` in request r (for op `reader` under per_edge, -1
 * for a per-device send or a return), or -1. */
int chk_xfer(const chk *c, int r, int t, int to, int reader);
/* The reader a transfer of t to op `op` must name: op under per_edge for an op's result, else
 * -1. */
int chk_reader(const chk *c, int t, int op);
/* The device holding t's source copy: its producer's, the I/O device for a graph input, or
 * -1 (weights; inputs present on every device). */
int chk_src_dev(const chk *c, int t);

int chk_memory(chk *c);
/* The same account as steps: pl_sim_memory_curve's (sim.h). */
void chk_memory_curve(chk *c, pl_mem_step **steps, int *n_steps);
/* check_share.c: ops on devices that share memory ran for their time stretched as the
 * recorded overlaps say (docs/simulator.md, "Shared memory"). */
int chk_share(chk *c);
/* check_xorder.c: each port or channel kept the plan's transfer order. */
int chk_xorder(chk *c);
const char *chk_dev_name(const chk *c, int d);

#endif
