/* solve.c: LP/MILP solves in a child process (common.h, "Isolated solves"; docs/moirai.md,
 * "Solver isolation"), for src/place (MOIRAI, LP-SCT) and src/train (SFB).
 *
 * The child inherits a copy of the built model, solves it, writes one answer (header, column
 * values, trailer) to a pipe and _exits: no atexit handler, no flush of the parent's stdio,
 * no other work, since the parent may hold threads (OpenBLAS, a runtime worker) whose locks
 * the copy keeps. A child that deadlocks on such a lock is just one more stall the deadline
 * catches. */
#include "placer/common.h"

#include <Cbc_C_Interface.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANS_MAGIC 0x31766c6f736c70ULL /* "plsolv1" */

typedef struct wire_head {
    uint64_t magic;
    int32_t status, n;
    double obj, bound;
} wire_head;

double pl_solve_grace_s(double limit_s)
{
    return 2 + limit_s / 2;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w, len -= (size_t)w;
    }
    return 0;
}

/* Test-only faults (common.h, "Isolated solves"), injected where a real solver bug would strike. */
static void inject_fault(int fd)
{
    const char *f = getenv("PLACER_TEST_SOLVER_FAULT");
    if (!f || !*f) return;
    if (!strcmp(f, "segv")) raise(SIGSEGV);
    if (!strcmp(f, "stall"))
        for (;;)
            pause();
    if (!strcmp(f, "garbage")) {
        static const char junk[] = "not an answer";
        _exit(write_all(fd, junk, sizeof junk) < 0 ? 125 : 0);
    }
}

typedef struct job {
    int fd; /* the pipe's write end */
    pl_solve_fn solve;
    void *ctx;
    pl_solve_answer *a;
} job;

/* In the child (pl_proc_fork: its own group, killed with placer). */
static _Noreturn void child(void *arg)
{
    const job *j = arg;
    int fd = j->fd;
    pl_solve_answer *a = j->a;
    /* The parent's handlers are not the child's to run (a test harness's SIGSEGV handler
     * would carry on with the parent's work in the copy; an output cleaner would remove the
     * parent's files): every signal to its default, none blocked, so a crash is a death. */
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* nor its descriptors: a worker's socket held open here would hide its end of file */
    if (fd > 3) close_range(3, (unsigned)fd - 1, 0);
    close_range((unsigned)fd + 1, ~0U, 0);
    inject_fault(fd);
    j->solve(j->ctx, a);
    wire_head h = {ANS_MAGIC, (int32_t)a->status, a->n, a->obj, a->bound};
    uint64_t end = ~ANS_MAGIC;
    int rc = write_all(fd, &h, sizeof h) || write_all(fd, a->x, (size_t)a->n * sizeof *a->x) ||
             write_all(fd, &end, sizeof end);
    _exit(rc ? 125 : 0);
}

/* Reads into buf (cap bytes; more is counted, not kept) until end of file or the deadline.
 * Returns false on the deadline. */
static bool read_answer(int fd, char *buf, size_t cap, size_t *got, double deadline)
{
    char scratch[4096];
    *got = 0;
    for (;;) {
        double left = deadline - pl_now();
        if (left <= 0) return false;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, (int)fmin(left * 1000 + 1, 1000));
        if (rc < 0 && errno != EINTR) return true; /* cannot wait: judged on what came */
        if (rc <= 0) continue;
        char *to = *got < cap ? buf + *got : scratch;
        size_t room = *got < cap ? cap - *got : sizeof scratch;
        ssize_t r = read(fd, to, room);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return true;
        *got += (size_t)r;
    }
}

/* A well-formed answer: magic numbers, the size we asked for, a known status, a number for
 * the objective and finite column values when it claims a solution. */
static bool decode(const char *buf, size_t got, pl_solve_answer *a)
{
    wire_head h;
    uint64_t end;
    size_t xs = (size_t)a->n * sizeof *a->x;
    if (got != sizeof h + xs + sizeof end) return false;
    memcpy(&h, buf, sizeof h);
    memcpy(&end, buf + sizeof h + xs, sizeof end);
    if (h.magic != ANS_MAGIC || end != ~ANS_MAGIC || h.n != a->n) return false;
    if (h.status < PL_SOLVE_OPTIMAL || h.status > PL_SOLVE_FAILED) return false;
    a->status = (pl_solve_status)h.status, a->obj = h.obj, a->bound = h.bound;
    memcpy(a->x, buf + sizeof h, xs);
    if (a->status != PL_SOLVE_OPTIMAL && a->status != PL_SOLVE_FEASIBLE) return true;
    if (isnan(h.obj)) return false;
    for (int c = 0; c < a->n; c++)
        if (!isfinite(a->x[c])) return false;
    return true;
}

static int failed(char *why, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int failed(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *signame(int sig)
{
    static _Thread_local char b[24];
    const char *n = sigabbrev_np(sig);
    if (n)
        snprintf(b, sizeof b, "SIG%s", n);
    else
        snprintf(b, sizeof b, "signal %d", sig);
    return b;
}

int pl_solve_isolated(pl_solve_fn solve, void *ctx, double limit_s, double wait_s,
                      pl_solve_answer *a, char *why, size_t cap)
{
    double t0 = pl_now(), deadline = t0 + fmax(wait_s, limit_s + pl_solve_grace_s(limit_s));
    int fd[2];
    if (pipe2(fd, O_CLOEXEC) < 0)
        return failed(why, cap, "could not start: pipe: %s", strerror(errno));
    fflush(NULL); /* or a child dying in exit() would write the parent's buffers again */
    pl_proc p;
    pl_err err;
    int started = pl_proc_fork(&p, child, &(job){fd[1], solve, ctx, a}, "the solver", &err);
    close(fd[1]);
    if (started < 0) {
        close(fd[0]);
        return failed(why, cap, "could not start: %s", err.msg);
    }
    size_t want = sizeof(wire_head) + (size_t)a->n * sizeof *a->x + sizeof(uint64_t), got;
    char *buf = pl_malloc(want + 1);
    bool in_time = read_answer(fd[0], buf, want + 1, &got, deadline);
    close(fd[0]);
    /* answered: it has until the deadline to exit; silent: it is killed now */
    int st = pl_proc_end(&p, false, in_time ? deadline - pl_now() : 0, NULL, 0);
    in_time = in_time && st != -1;
    double s = pl_now() - t0;
    int rc = 0;
    if (!in_time)
        rc = failed(why, cap, "gave no answer within %.2f s (its time limit %.2f s): killed", s,
                    limit_s);
    else if (WIFSIGNALED(st))
        rc = failed(why, cap, "crashed (%s) after %.2f s", signame(WTERMSIG(st)), s);
    else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        rc = failed(why, cap, "exited with status %d after %.2f s", WEXITSTATUS(st), s);
    else if (!decode(buf, got, a))
        rc = failed(why, cap, "sent a malformed answer (%zu bytes) after %.2f s", got, s);
    free(buf);
    return rc;
}

/* Runs in the solver's child process: solves and reports what CBC has. The limit is set here,
 * on the child's clocks (Clp, under CBC, keeps absolute CPU times), and counts wall-clock time
 * as placer's limits do: CBC's default, CPU time, runs slower than the wall clock on a loaded
 * machine (a 1.6 s limit took 4.8 s under a load of 10 on 2 cores). */
void pl_solve_cbc(void *ctx, pl_solve_answer *a)
{
    pl_cbc_job *job = ctx;
    Cbc_Model *m = job->model;
    Cbc_setMaximumSeconds(m, job->limit_s);
    Cbc_setParameter(m, "timeMode", "elapsed");
    Cbc_solve(m);
    bool opt = Cbc_isProvenOptimal(m), has = opt || Cbc_numberSavedSolutions(m) > 0;
    a->status = opt                         ? PL_SOLVE_OPTIMAL
                : has                       ? PL_SOLVE_FEASIBLE
                : Cbc_isProvenInfeasible(m) ? PL_SOLVE_INFEASIBLE
                                            : PL_SOLVE_STOPPED;
    a->obj = has ? Cbc_getObjValue(m) : INFINITY;
    a->bound = Cbc_getBestPossibleObjValue(m);
    if (has) memcpy(a->x, Cbc_getColSolution(m), (size_t)a->n * sizeof *a->x);
}
