/* solve.h: every CBC/Clp solve runs in a child process (private to src/place).
 *
 * CBC 2.10 crashes on some instances (SIGSEGV in CglPreProcess::postProcess when its clock
 * runs out during the root LP of the preprocessed model, docs/moirai.md) and overruns its
 * time limit on others. A solver bug must not take placer down, so the model is built in the
 * parent, solved in a forked child that only solves, writes its answer to a pipe and _exits,
 * and the parent waits no longer than a deadline a little past the time limit. A crash, a
 * stall or a malformed answer comes back as a failure with a reason; the caller falls back
 * to the best plan it already has.
 *
 * Fault injection for the tests: PLACER_TEST_SOLVER_FAULT=segv|stall|garbage makes the child
 * raise SIGSEGV, hang, or send a malformed answer instead of solving. */
#ifndef PLACER_PLACE_SOLVE_H
#define PLACER_PLACE_SOLVE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum lp_answer_status {
    LP_ANS_OPTIMAL,    /* proven optimal; x holds the solution */
    LP_ANS_FEASIBLE,   /* a solution, not proven optimal (stopped on a limit); x holds it */
    LP_ANS_INFEASIBLE, /* proven infeasible */
    LP_ANS_STOPPED,    /* stopped on a limit with no solution */
    LP_ANS_FAILED      /* the solver gave up (numerical trouble) */
} lp_answer_status;

/* What the child sends back. The caller sizes x (n values) before the solve. */
typedef struct lp_answer {
    lp_answer_status status;
    double obj, bound; /* objective of x and the best bound (INFINITY / -INFINITY: none) */
    int n;
    double *x; /* n column values; meaningful for OPTIMAL and FEASIBLE only */
} lp_answer;

/* Runs in the child: solves `ctx` and fills a (status, obj, bound, x[0..n)). */
typedef void (*lp_solve_fn)(void *ctx, lp_answer *a);

/* Grace past the solver's own time limit before the parent kills a child that has not
 * answered: CBC checks its clock only between phases (docs/moirai.md). */
double lp_solve_grace_s(double limit_s);

/* Solves in a child process, waiting for its answer up to wait_s seconds, and at least the
 * solver's time limit limit_s plus lp_solve_grace_s(limit_s). 0: *a filled from a
 * well-formed answer. -1: the solver crashed, gave no answer in time (the child is killed
 * and reaped), exited without answering or sent garbage, or the fork failed; `why` (cap
 * bytes) then says which and after how long, e.g. "crashed (SIGSEGV) after 2.61 s". */
int lp_solve_isolated(lp_solve_fn solve, void *ctx, double limit_s, double wait_s, lp_answer *a,
                      char *why, size_t cap);

#endif
