/* tape.c: recording nodes and running them backwards (docs/learn.md, "The tape"). */
#include "learn_internal.h"

#include <string.h>

pl_tape *pl_tape_new(void)
{
    return pl_calloc(1, sizeof(pl_tape));
}

void pl_tape_reset(pl_tape *t)
{
    for (int i = 0; i < t->n; i++) {
        lt_node *x = &t->v[i];
        if (x->kind != LT_PARAM) free(x->val);
        free(x->grad);
        free(x->in);
        free(x->idx);
        free(x->aux);
    }
    t->n = 0;
}

void pl_tape_free(pl_tape *t)
{
    if (!t) return;
    pl_tape_reset(t);
    free(t->v);
    free(t);
}

int pl_tape_size(const pl_tape *t)
{
    return t->n;
}

int lt_push(pl_tape *t, lt_kind kind, int rows, int cols, int nin, const int *in)
{
    PL_ASSERT(rows > 0 && cols > 0);
    for (int i = 0; i < nin; i++)
        PL_ASSERT(in[i] >= 0 && in[i] < t->n);
    pl_grow((void **)&t->v, &t->cap, t->n, sizeof *t->v);
    lt_node *x = &t->v[t->n];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->rows = rows;
    x->cols = cols;
    if (kind != LT_PARAM) x->val = pl_malloc((size_t)rows * cols * sizeof(float));
    x->nin = nin;
    if (nin) {
        x->in = pl_malloc((size_t)nin * sizeof(int));
        memcpy(x->in, in, (size_t)nin * sizeof(int));
    }
    return t->n++;
}

int pl_t_rows(const pl_tape *t, int x)
{
    return lt_at(t, x)->rows;
}

int pl_t_cols(const pl_tape *t, int x)
{
    return lt_at(t, x)->cols;
}

const float *pl_t_value(const pl_tape *t, int x)
{
    return lt_at(t, x)->val;
}

float pl_t_scalar(const pl_tape *t, int x)
{
    PL_ASSERT(lt_at(t, x)->rows == 1 && lt_at(t, x)->cols == 1);
    return lt_at(t, x)->val[0];
}

int pl_t_param(pl_tape *t, pl_param *p)
{
    int x = lt_push(t, LT_PARAM, p->rows, p->cols, 0, NULL);
    t->v[x].val = p->w;
    t->v[x].param = p;
    return x;
}

int pl_t_input(pl_tape *t, int rows, int cols, const float *data)
{
    int x = lt_push(t, LT_INPUT, rows, cols, 0, NULL);
    size_t n = (size_t)rows * cols * sizeof(float);
    if (data)
        memcpy(t->v[x].val, data, n);
    else
        memset(t->v[x].val, 0, n);
    return x;
}

/* Nodes after the loss cannot affect it, and nodes before it are visited in reverse
 * recording order, which is a reverse topological order (an op's inputs are recorded before
 * it). A node whose gradient stays zero is still visited: checking would cost as much. */
void pl_tape_backward(pl_tape *t, int loss)
{
    PL_ASSERT(lt_at(t, loss)->rows == 1 && lt_at(t, loss)->cols == 1);
    for (int i = 0; i <= loss; i++) {
        lt_node *x = &t->v[i];
        size_t n = (size_t)x->rows * x->cols;
        if (!x->grad) x->grad = pl_malloc(n * sizeof(float));
        memset(x->grad, 0, n * sizeof(float));
    }
    t->v[loss].grad[0] = 1;
    for (int i = loss; i >= 0; i--)
        lt_backward_node(t, &t->v[i]);
}
