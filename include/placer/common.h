/* common.h: errors, checked allocation and small string helpers shared by every module.
 *
 * Errors: a function that can fail takes a `pl_err *` (may be NULL) and returns a negative
 * value or NULL; the message names the file, the place in it and the problem, in the form
 * "FILE: PLACE: PROBLEM", so the CLI can print it as is and exit 2.
 *
 * Ownership: a function's comment says who frees what it returns and what an output holds
 * after a failure; a module header that opens with "Ownership and failure" (graph, cluster,
 * cost, plan, place, coarsen, catalog, split, runtime, trial, serverless, multi, train) states
 * its rule once there, and each function it does not say otherwise of follows it. */
#ifndef PLACER_COMMON_H
#define PLACER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define PL_ERR_MAX 1024

typedef struct pl_err {
    char msg[PL_ERR_MAX];
} pl_err;

/* Formats into err->msg (no-op when err is NULL). Always returns -1 so callers can write
 * `return pl_err_set(err, ...)`. */
int pl_err_set(pl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends "PREFIX: " to an existing message, to add the file or outer place. */
int pl_err_prefix(pl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Allocation that aborts with a message on exhaustion: the library cannot recover from it
 * meaningfully and every caller would otherwise repeat the same check. */
void *pl_malloc(size_t n);
void *pl_calloc(size_t n, size_t size);
void *pl_realloc(void *p, size_t n);
char *pl_strdup(const char *s);
char *pl_strndup(const char *s, size_t n);
/* Grows *arr (element size `size`) so that index `need` fits; doubles the capacity. */
void pl_grow(void **arr, int *cap, int need, size_t size);

/* qsort that accepts an empty (possibly NULL) array: C leaves qsort(NULL, 0, ...) undefined,
 * and empty arrays are NULL throughout placer. */
#include <stdlib.h>
static inline void pl_sort(void *base, size_t n, size_t size,
                           int (*cmp)(const void *, const void *))
{
    if (n > 1) qsort(base, n, size, cmp);
}

/* Ascending order of doubles, for pl_sort. */
int pl_cmp_double(const void *a, const void *b);
/* The median of v[0..n) (the mean of the middle two when n is even); sorts v in place. 0 when
 * n is 0. */
double pl_median(double *v, int n);

/* A file's base name without a ".json" or ".onnx" ending, malloc'd ("examples/a/v100.json" ->
 * "v100"); `dflt` when path is NULL. */
char *pl_file_stem(const char *path, const char *dflt);

/* Creates a directory and its missing parents (mkdir -p), for caches (never for an output,
 * whose folder must exist); fails when it is not a directory, with the reason of the first
 * mkdir that failed (EROFS, EACCES), not the ENOENT of the ones below it. */
int pl_mkdir_p(const char *dir, pl_err *err);

/* Output written whole or not at all: every file placer writes for the user goes through
 * pl_out (docs/formats.md, "Interrupted writes"). pl_out_open creates the hidden temporary
 * ".NAME.tmp.PID" in PATH's folder and gives its stream in o->f; pl_out_commit flushes and
 * fsyncs it and renames it over PATH; pl_out_abort, and a commit that fails, remove it. Until
 * the commit PATH keeps its old content (or stays absent). A write that fails at any point
 * (ENOSPC, EFBIG) makes the commit fail with the reason, so callers need not check each
 * fwrite. SIGINT, SIGTERM and SIGHUP remove the temporaries being written (a handler is
 * installed over the default disposition on first use); a SIGKILL leaves the hidden
 * temporary, never a partial PATH. A symbolic link is followed (its target is replaced, the
 * link kept); a PATH that is not a regular file (a pipe, a terminal) or is under /dev or /proc
 * is written in place, as nothing can be renamed over it. After commit or abort, o holds
 * nothing. */
#include <stdio.h>
typedef struct pl_out {
    FILE *f;
    char *path, *tmp;
} pl_out;
int pl_out_open(pl_out *o, const char *path, pl_err *err);
int pl_out_commit(pl_out *o, pl_err *err);
void pl_out_abort(pl_out *o);
/* Removes every temporary that exists now (pl_out's and pl_outset's files, pl_outdir's and
 * pl_make_temp_dir's folders, with what is in them) and undoes a pl_outset_commit under way;
 * async-signal-safe, for a program's own signal handler (which keeps pl_out from installing
 * its own: src/dist's, under mpirun). */
void pl_out_remove_temporaries(void);
/* For a program's main, before it starts any thread: SIGINT, SIGTERM and SIGHUP, each one
 * whose disposition is still the default (an ignored SIGINT stays ignored; a handler of the
 * program's own, src/dist's under mpirun, stays its own), are blocked in the calling thread,
 * and so in every thread it starts from then on, and taken by one thread of their own that
 * waits for them (sigwait): it removes the temporaries and the process dies of the signal.
 * Why: a library may swap its own handler in for a while, as METIS does for SIGTERM inside
 * every call (GKlib's gk_sigtrap: its handler longjmps out of whatever METIS was doing, even
 * out of malloc, which then deadlocks; or the signal is taken as METIS's error and placer
 * carries on), and a blocked signal never reaches any handler. Threads started before the
 * call (a library's pool, made when the library was loaded) keep their mask: the caller
 * restarts them (cli/placer.c: OpenBLAS's). The handler pl_out installs stays, for such a
 * thread. Children of pl_proc start with nothing blocked. Returns the number of signals
 * taken (0 to 3), or -1 if the thread cannot be started (nothing is blocked then). */
int pl_out_take_signals(void);
/* A call into a library that sets signal dispositions for its own duration is made between
 * these two, from any thread but the signal thread. METIS does (gk_sigtrap above): while the
 * thread that takes the signals dies of one (it restores the default action, then raises the
 * signal in itself), a METIS call starting in between made the raise run METIS's handler in
 * that thread, which longjmps into a buffer only METIS's own thread set: a SIGSEGV instead of
 * death by SIGTERM (seen once in `make test`, learn-prior under SIGTERM). So that thread waits
 * for such a call to end, and none begins after it has started to die. Calls may not nest. */
void pl_signals_hold(void);
void pl_signals_release(void);
/* The whole of a buffer to path, through pl_out. */
int pl_out_write_file(const char *path, const void *buf, size_t n, pl_err *err);
/* The temporary's name for path: ".NAME.tmp.PID" in the same folder (malloc'd); a trailing
 * '/' is ignored. */
char *pl_out_tmp_name(const char *path);

/* A folder replaced whole: pl_outdir_open creates the empty hidden folder ".NAME.tmp.PID"
 * beside PATH (o->tmp), the caller fills it (through pl_out, so its files are on disk), and
 * pl_outdir_commit swaps it in for PATH in one rename (renameat2 RENAME_EXCHANGE; elsewhere
 * two renames) and then removes the old folder with everything in it. Open also removes the
 * ".NAME.tmp.PID" folders of processes that no longer exist (left by a SIGKILL). Callers decide
 * first whether an existing PATH may be replaced. pl_outdir_abort, and a failed commit, remove the
 * temporary folder and leave PATH as it was. */
typedef struct pl_outdir {
    char *path, *tmp;
} pl_outdir;
int pl_outdir_open(pl_outdir *o, const char *path, pl_err *err);
int pl_outdir_commit(pl_outdir *o, pl_err *err);
void pl_outdir_abort(pl_outdir *o);
/* rm -r that does not follow symbolic links; 0 when dir is already absent. It ends dir's
 * registration as a temporary (pl_make_temp_dir), and uses only async-signal-safe calls. */
int pl_remove_tree(const char *dir);
/* A new private folder $TMPDIR/NAME-XXXXXX (else /tmp/NAME-XXXXXX), mode 0700 and a random
 * name as mkdtemp's, into out; -1 with err naming the path and the reason when it cannot be
 * made (out is then ""). It is a temporary like pl_out's: SIGINT, SIGTERM and SIGHUP remove it with
 * everything in it (its name is registered before it is made), until the caller removes it with
 * pl_remove_tree. */
int pl_make_temp_dir(const char *name, char *out, size_t n, pl_err *err);
/* The same in shared memory: $PLACER_SHM_DIR/NAME-XXXXXX, else /dev/shm/NAME-XXXXXX. Callers
 * fall back to pl_make_temp_dir (or to the tool's own default) when it fails: a machine or a
 * container may have no /dev/shm. */
int pl_make_shm_dir(const char *name, char *out, size_t n, pl_err *err);

/* Files that go together (learn-prior's weights and the FILE.json that says what made them),
 * replaced as one. pl_outset_add checks that PATH is a regular file or absent (a symbolic link
 * is followed, as by pl_out; a folder, a pipe or a device is refused) and creates its empty
 * hidden temporary s->tmp[k] (".NAME.tmp.PID", same folder), k being the return value; the
 * caller writes each temporary whole with any of placer's writers (they go through pl_out),
 * then pl_outset_commit:
 *   1. checks every PATH again and fsyncs every temporary: a failure here replaces nothing;
 *   2. keeps each old file under a second name, ".NAME.tmp.PID.old" (a hard link: PATH keeps
 *      its old file throughout; where the file system has no links, a rename aside);
 *   3. renames every temporary over its PATH in the order added;
 *   4. after the last rename, fsyncs the folders and removes the backups.
 * A failure in 2 or 3 puts every old file back (and removes new ones that had none) before it
 * returns -1. SIGINT, SIGTERM or SIGHUP at any point (or pl_out_remove_temporaries from a
 * program's own handler) leaves the old set when it comes before the commit has seen its last
 * rename succeed, the new set after: never a mix, never a set with a file missing that it had
 * (a signal that the kernel hands to another thread waits, up to 5 s, for the commit to end
 * and leaves what it left). Only a kill that cannot
 * be caught (SIGKILL, power loss) during the few renames of 2-4 may leave a mix, with the old
 * files still under their ".old" names. s starts zeroed; after commit or abort it holds
 * nothing; pl_outset_abort removes the temporaries. */
#define PL_OUTSET_MAX 4
typedef struct pl_outset {
    int n;
    char *path[PL_OUTSET_MAX], *tmp[PL_OUTSET_MAX];
} pl_outset;
int pl_outset_add(pl_outset *s, const char *path, pl_err *err);
int pl_outset_commit(pl_outset *s, pl_err *err);
void pl_outset_abort(pl_outset *s);

/* Reads a whole file into a malloc'd buffer (NUL-terminated for text use). */
char *pl_read_file(const char *path, size_t *len, pl_err *err);
/* -1 with err "PATH: cannot read: WHY" for a read of path that failed with errno: a folder
 * (which opens, and fails at its first read with EISDIR) said as one. */
int pl_err_read(pl_err *err, const char *path, int errnum);

/* SHA-256 of a file, as 64 lowercase hex digits plus NUL. Streams the file. */
int pl_sha256_file(const char *path, char out[65], pl_err *err);
/* The same for bytes already in memory (a file just read to be parsed: no second read). */
void pl_sha256_buffer(const void *buf, size_t len, char out[65]);

/* Monotonic wall-clock seconds, for reporting search and import times. */
double pl_now(void);

/* Contracts that are otherwise only prose. Checked when PL_CHECKS is defined (`make asan`
 * defines it); a violated contract prints where and what, then aborts, so the sanitizer
 * build turns a silent misuse into a stack trace. Costs nothing in the normal build. */
#ifdef PL_CHECKS
#define PL_ASSERT(cond) ((cond) ? (void)0 : pl_assert_fail(#cond, __FILE__, __LINE__))
#else
#define PL_ASSERT(cond) ((void)0)
#endif
_Noreturn void pl_assert_fail(const char *what, const char *file, int line);

/* The one seeded generator (splitmix64): small, and the same sequence on every platform for a
 * given seed (rand_r's is not), so a search is reproducible from its seed alone. Its state
 * moves by one constant per draw, so pl_rng_skip(s, n) is the state after n draws, in O(1):
 * a search can then run its pieces on any rank (dist.h) and draw exactly what one process
 * drawing them in turn would. */
static inline uint64_t pl_rng_skip(uint64_t s, uint64_t draws)
{
    return s + draws * 0x9e3779b97f4a7c15ull;
}
static inline uint64_t pl_rng_next(uint64_t *s)
{
    uint64_t z = (*s = pl_rng_skip(*s, 1));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1), 53 bits. */
static inline double pl_rng_uniform(uint64_t *s)
{
    return (double)(pl_rng_next(s) >> 11) * 0x1.0p-53;
}
/* Uniform in [0, n) for n > 0 (PL_ASSERT; the modulo bias is below 2^-32 for any n placer uses). */
static inline int pl_rng_below(uint64_t *s, int n)
{
    PL_ASSERT(n > 0);
    return (int)(pl_rng_next(s) % (uint64_t)n);
}

/* Human-readable formatting into a caller buffer; returns buf. */
const char *pl_fmt_bytes(double bytes, char *buf, size_t n); /* "1.50 MiB" */
const char *pl_fmt_count(double x, char *buf, size_t n);     /* "4.09 G" */

/* Quantities with units, as files and command lines give them ("25 GB/s", "50ms",
 * "16 GiB", "4.37 TFLOP/s", "0.9 USD/h"). Decimal prefixes are powers of 1000, binary ones
 * (Ki, Mi, Gi, Ti) powers of 1024; a lower-case b means bits. The result is in SI base units
 * (bytes, seconds, bytes/s, flops, flop/s, USD/h). A bare number, a unit of the wrong kind, a
 * negative, NaN or infinite value is an error naming the text. */
typedef enum {
    PL_UNIT_BYTES,
    PL_UNIT_SECONDS,
    PL_UNIT_BYTES_PER_S,
    PL_UNIT_FLOPS,
    PL_UNIT_FLOPS_PER_S,
    PL_UNIT_USD_PER_HOUR
} pl_unit;
int pl_parse_quantity(const char *text, pl_unit unit, double *out, pl_err *err);
/* The duration in environment variable `name`, as a bare number of seconds ("30") or with its
 * unit ("30s", "500ms"): 0 and *out unchanged when unset or empty, -1 with err naming the
 * variable when not a duration above 0. */
int pl_env_seconds(const char *name, double *out, pl_err *err);
const char *pl_unit_name(pl_unit unit);
/* A whole number in [lo, hi], decimal, the whole text: an optional '-' then digits, nothing
 * before or after ("5x", " 5", "+5", "", "1e3" are not numbers). 0, or -1 when text is not
 * one or is out of range (an overflow is out of range, never saturated). The one integer
 * parser for command-line flags and NAME=VALUE bindings. */
int pl_parse_int(const char *text, long long lo, long long hi, long long *out);

/* A binary min-heap of (a, b, c, id) keys in lexicographic order, so every tie has a
 * documented winner and runs are deterministic: the event queue of the simulator and the
 * ready lists of the schedulers. */
typedef struct pl_heap_item {
    double a, b;
    int c, id;
} pl_heap_item;

typedef struct pl_heap {
    pl_heap_item *v;
    int n, cap;
} pl_heap;

static inline bool pl_heap_less(const pl_heap_item *x, const pl_heap_item *y)
{
    if (x->a != y->a) return x->a < y->a;
    if (x->b != y->b) return x->b < y->b;
    if (x->c != y->c) return x->c < y->c;
    return x->id < y->id;
}
void pl_heap_push(pl_heap *h, pl_heap_item it);
pl_heap_item pl_heap_pop(pl_heap *h); /* h must not be empty (PL_ASSERT) */
static inline const pl_heap_item *pl_heap_top(const pl_heap *h)
{
    return h->n ? &h->v[0] : NULL;
}
void pl_heap_free(pl_heap *h);

/* Open-addressing string → int map (names of tensors and ops). Keys are not copied:
 * they must outlive the map (they are owned by the graph). */
typedef struct pl_strmap {
    const char **keys;
    int *vals;
    size_t cap, n;
} pl_strmap;

void pl_strmap_init(pl_strmap *m);
void pl_strmap_free(pl_strmap *m);
/* Returns the value or -1. */
int pl_strmap_get(const pl_strmap *m, const char *key);
void pl_strmap_put(pl_strmap *m, const char *key, int val);

/* Union-find over 0..n-1 (src/common/uf.c), the one under every grouping of ops, stages or
 * models. pl_uf_union joins the sets of a and b by size, the larger's root staying the root
 * (a's on a tie), and returns it; pl_uf_join joins other's set into keep's, whose root stays
 * the root whatever the sizes (for a caller whose roots carry data: a split's surviving
 * stage); pl_uf_find halves paths as it goes. size[r] is the size of r's set and n_sets the
 * number of sets. pl_uf_free frees the arrays (u may be zeroed instead of
 * initialised when n is 0). */
typedef struct pl_uf {
    int *up, *size;
    int n, n_sets;
} pl_uf;
void pl_uf_init(pl_uf *u, int n);
int pl_uf_find(pl_uf *u, int v);
int pl_uf_union(pl_uf *u, int a, int b);
int pl_uf_join(pl_uf *u, int keep, int other);
void pl_uf_free(pl_uf *u);

/* Child processes (src/common/proc.c), for every program placer starts: the onnxruntime
 * worker, mpirun, redis-server.
 *
 * pl_proc_start runs argv (argv[0] looked up on PATH) in a process group of its own, so that
 * it and whatever it starts are ended as one, and tied to placer's life (PR_SET_PDEATHSIG
 * SIGKILL: a placer that dies, even by SIGKILL, takes it along). Its stdin and stdout are
 * socket pairs (writing to a dead child fails with EPIPE instead of raising SIGPIPE in the
 * caller, a library that installs no handler for it) and its stderr a pipe whose last
 * PL_PROC_TAIL bytes are kept for error messages; with `log` set, stdout and stderr go to
 * that file instead (created 0600, truncated) and stdin is /dev/null. `what` names the
 * program in errors; `hint` follows "cannot execute ARGV0" on its stderr when argv[0] cannot
 * be executed (the child then exits with status 127). -1 with err when the pipes or the fork
 * fail; p is then not running (pid -1).
 *
 * pl_proc_fork starts a copy of the caller instead, in a group of its own and tied to placer
 * as above, that runs fn(ctx) and then _exits with status 0 (fn may _exit itself); it has no
 * pipes (in, out, e are -1: the caller makes its own before). The copy inherits every lock
 * as the caller's other threads held it at the fork (OpenBLAS's, a runtime worker's): a copy
 * that waits on one hangs, and only the caller's deadline (pl_proc_end) ends it.
 *
 * pl_proc_end always ends and reaps it: it closes stdin (end of input: a well-behaved child
 * quits), sends SIGTERM to the group when `term`, waits up to grace_s for the child to exit,
 * then sends SIGKILL to the group whatever happened (nothing it started outlives it), reaps
 * it and closes the pipes; `how` (n bytes, may be NULL) says how it ended: "exited with
 * status 3", "died (signal 9)" or "did not exit and was killed". It returns the child's wait
 * status (WIFEXITED, WIFSIGNALED apply) when it exited by itself within grace_s, else -1 (it
 * was killed, or was not running). The stderr tail survives until the next pl_proc_start. */
#define PL_PROC_TAIL 768
typedef struct pl_proc {
    int pid;        /* -1 when not running; also its process group */
    int in, out, e; /* its stdin (we write), stdout and stderr (we read); -1 when closed */
    char *buf;      /* stdout bytes not yet returned as lines */
    size_t len, cap;
    char tail[PL_PROC_TAIL]; /* the last bytes of its stderr */
    size_t tail_len;
} pl_proc;

typedef enum { PL_PROC_LINE = 0, PL_PROC_EOF = -2, PL_PROC_TIMEOUT = -3 } pl_proc_rc;

/* A pl_proc that is not running, for a struct filled before its first start. */
#define PL_PROC_NONE ((pl_proc){.pid = -1, .in = -1, .out = -1, .e = -1})
int pl_proc_start(pl_proc *p, char *const argv[], const char *log, const char *what,
                  const char *hint, pl_err *err);
/* Sends one line (a newline is added). -1 when the child is gone. */
int pl_proc_send(pl_proc *p, const char *line);
/* The next stdout line (malloc'd, without its newline) within timeout_s: PL_PROC_LINE, or
 * PL_PROC_EOF (its stdout closed: the child is ending) or PL_PROC_TIMEOUT (*line untouched). */
pl_proc_rc pl_proc_line(pl_proc *p, double timeout_s, char **line);
/* Whether the child has exited, without reaping it (its pid and group stay reserved until
 * pl_proc_end); `how` as pl_proc_end's when it has. */
bool pl_proc_exited(const pl_proc *p, char *how, size_t n);
int pl_proc_fork(pl_proc *p, void (*fn)(void *ctx), void *ctx, const char *what, pl_err *err);
int pl_proc_end(pl_proc *p, bool term, double grace_s, char *how, size_t n);
/* The stderr tail, flattened to one line, into out (n bytes). */
const char *pl_proc_tail(const pl_proc *p, char *out, size_t n);

/* Isolated solves (src/common/solve.c), for every CBC/Clp solve (src/place's MOIRAI and
 * LP-SCT, src/train's SFB).
 *
 * CBC 2.10 crashes on some instances (SIGSEGV in CglPreProcess::postProcess when its clock
 * runs out during the root LP of the preprocessed model, docs/moirai.md) and overruns its
 * time limit on others. A solver bug must not take placer down, so the model is built in the
 * parent, solved in a forked child that only solves, writes its answer to a pipe and _exits,
 * and the parent waits no longer than a deadline a little past the time limit. A crash, a
 * stall or a malformed answer comes back as a failure with a reason; the caller falls back
 * or reports it.
 *
 * Fault injection for the tests: PLACER_TEST_SOLVER_FAULT=segv|stall|garbage makes the child
 * raise SIGSEGV, hang, or send a malformed answer instead of solving. */
typedef enum pl_solve_status {
    PL_SOLVE_OPTIMAL,    /* proven optimal; x holds the solution */
    PL_SOLVE_FEASIBLE,   /* a solution, not proven optimal (stopped on a limit); x holds it */
    PL_SOLVE_INFEASIBLE, /* proven infeasible */
    PL_SOLVE_STOPPED,    /* stopped on a limit with no solution */
    PL_SOLVE_FAILED      /* the solver gave up (numerical trouble) */
} pl_solve_status;

/* What the child sends back. The caller sets n and sizes x (n values) before the solve. */
typedef struct pl_solve_answer {
    pl_solve_status status;
    double obj, bound; /* objective of x and the best bound (INFINITY / -INFINITY: none) */
    int n;
    double *x; /* n column values; meaningful for OPTIMAL and FEASIBLE only */
} pl_solve_answer;

/* Runs in the child: solves `ctx` and fills a (status, obj, bound, x[0..n)). It must not
 * change n. */
typedef void (*pl_solve_fn)(void *ctx, pl_solve_answer *a);

/* Grace past the solver's own time limit before the parent kills a child that has not
 * answered: CBC checks its clock only between phases (docs/moirai.md). */
double pl_solve_grace_s(double limit_s);

/* Solves in a child process, waiting for its answer up to wait_s seconds, and at least the
 * solver's time limit limit_s plus pl_solve_grace_s(limit_s). 0: *a filled from a
 * well-formed answer. -1: the solver crashed, gave no answer in time (the child is killed
 * and reaped), exited without answering or sent garbage, or the fork failed; `why` (cap
 * bytes) then says which and after how long, e.g. "crashed (SIGSEGV) after 2.61 s", and
 * a->status, obj, bound and x are unspecified. */
int pl_solve_isolated(pl_solve_fn solve, void *ctx, double limit_s, double wait_s,
                      pl_solve_answer *a, char *why, size_t cap);

/* A CBC model (Cbc_Model *) and its wall-clock limit, for pl_solve_cbc. */
typedef struct pl_cbc_job {
    void *model;
    double limit_s;
} pl_cbc_job;
/* A pl_solve_fn for pl_solve_isolated with a pl_cbc_job: solves within the limit and reports
 * what CBC has (optimal, an incumbent, infeasible or nothing), its best bound, its columns. */
void pl_solve_cbc(void *job, pl_solve_answer *a);

#endif
