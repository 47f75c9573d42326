/* multi_internal.h: the packed graph the placers of several models share (docs/multi.md). */
#ifndef PLACER_MULTI_INTERNAL_H
#define PLACER_MULTI_INTERNAL_H

#include "placer/multi.h"

/* Ops packed by Talos's rule (pack.c): a DAG over packs, numbered in a topological order (by
 * the position of each pack's last member, through which every other member's outputs
 * leave), with each pack's time per device the sum of its members'. */
typedef struct mt_packs {
    const pl_cost *k;
    int n, D;
    int *of;          /* op -> pack */
    int *moff, *mem;  /* CSR: members of pack p, in topological order */
    int *tenant;      /* per pack */
    double *t;        /* [p * D + d]: members' summed time; INFINITY if one cannot run on d */
    int *poff, *pred; /* CSR: distinct predecessor packs */
    int *soff, *succ; /* CSR: distinct successor packs */
    int *order;       /* 0..n-1 (the numbering is topological), for pl_reach_build */
} mt_packs;

/* Packs k's ops (o->no_pack: one op per pack); speedup[op] as pl_multi_analysis's. */
void mt_pack(const pl_cost *k, const pl_multi_opts *o, int ref, const double *speedup, mt_packs *p);
void mt_packs_free(mt_packs *p);
/* The device speedups are relative to: the first CPU, else device 0. */
int mt_ref_device(const pl_cost *k);
/* t_ref / least time on another device (1 with one device, or when both are ~0). */
double mt_speedup(const double *t, int D, int ref);
/* Least time of pack p over the devices. */
double mt_best(const mt_packs *p, int pack);

/* One step's min-cost flow (talos.c): n packs, n_slots (device, position) slots, cost[i *
 * n_slots + j] the cost of pack i in slot j (INFINITY: not allowed), tie[] (NULL: none)
 * integers below 64 breaking ties between equal costs. Every pack takes one slot, each slot at
 * most one pack, as many packs as can be placed are, at least total cost (costs are scaled to
 * 2^14 levels of the largest); slot[i] = its slot, or -1 when it waits. */
int mt_assign(int n, int n_slots, const double *cost, const int *tie, int *slot, pl_err *err);

/* Every op of g once (malloc'd), in the order a simulation ran them: by start, then end, then
 * topological position (zero-time ops that start together keep the graph's order). Each
 * device's ops in this order respect the graph's edges. */
int *mt_sim_sequence(const pl_graph *g, const double *start_s, const double *end_s);

int mt_talos(const pl_cost *k, const pl_multi_opts *o, pl_plan *out, pl_err *err);
int mt_aswm(const pl_cost *k, pl_plan *out, pl_err *err);
int mt_tsam(const pl_cost *k, pl_plan *out, pl_err *err);

#endif
