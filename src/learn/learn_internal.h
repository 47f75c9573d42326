/* learn_internal.h: the tape's node, shared by tape.c (recording, backward) and ops.c (each
 * op's forward and backward). lt_ is this module's private prefix. */
#ifndef PLACER_LEARN_INTERNAL_H
#define PLACER_LEARN_INTERNAL_H

#include "placer/learn.h"

typedef enum {
    LT_PARAM,
    LT_INPUT,
    LT_MATMUL,
    LT_ADD,
    LT_MUL,
    LT_SCALE,
    LT_TANH,
    LT_SIGMOID,
    LT_RELU,
    LT_LEAKY,
    LT_CONCAT_COLS,
    LT_CONCAT_ROWS,
    LT_SLICE_COLS,
    LT_GATHER,
    LT_TRANSPOSE,
    LT_SUM,
    LT_MEAN,
    LT_SOFTMAX,
    LT_LOG_SOFTMAX,
    LT_PICK,
    LT_XENT,
    LT_SEG_SOFTMAX,
    LT_SEG_SUM
} lt_kind;

typedef struct lt_node {
    lt_kind kind;
    int rows, cols;
    float *val;  /* rows*cols; a parameter's w for LT_PARAM (not owned) */
    float *grad; /* rows*cols, zeroed at the start of backward; NULL before */
    int nin, *in;
    int nidx, *idx; /* gather rows, pick/xent targets, seg ptr (n+1), slice start in idx[0] */
    float f;        /* scale factor, leaky slope */
    float *aux;     /* xent: the softmax of each row */
    pl_param *param;
} lt_node;

struct pl_tape {
    lt_node *v;
    int n, cap;
};

/* A new node of kind and shape with inputs in[0..nin) (copied) and an uninitialised value. */
int lt_push(pl_tape *t, lt_kind kind, int rows, int cols, int nin, const int *in);
static inline lt_node *lt_at(const pl_tape *t, int x)
{
    PL_ASSERT(x >= 0 && x < t->n);
    return &t->v[x];
}
/* Adds node x's gradient into its inputs' gradients. */
void lt_backward_node(pl_tape *t, lt_node *x);

#endif
