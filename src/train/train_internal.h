/* train_internal.h: what the training module's files share beyond train.h. */
#ifndef PLACER_TRAIN_INTERNAL_H
#define PLACER_TRAIN_INTERNAL_H

#include "placer/train.h"

/* One TAG-SFB integer program (sfb.c): n ops (0..n-1, the gradient's producer g among them),
 * m tensors, tensor e from op from[e] (-1: from outside, never duplicated) to op to[e] with
 * bytes[e] per replica; time_s[i] an op's time per replica; D replicas; tau the bottleneck
 * bandwidth (B/s); grad_bytes the gradient's size. */
typedef struct tr_sfb {
    int n, m, g, D;
    double *time_s, *bytes, tau, grad_bytes;
    int *from, *to;
} tr_sfb;
/* Solves it with CBC: alpha[0..n) and the objective; -1 when CBC proves nothing. */
int tr_sfb_solve(const tr_sfb *p, unsigned char *alpha, double *obj);

#endif
