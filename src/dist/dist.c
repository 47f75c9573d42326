/* dist.c: the pool of workers (dist.h, docs/dist.md). The only file that includes mpi.h;
 * compiled with mpicc -DPL_MPI into build/placer-mpi, and without PL_MPI into libplacer as one
 * process.
 *
 * Under MPI every exchange is point-to-point with rank 0 as the hub (the ranks send their
 * part to rank 0, which combines and sends the whole back), and every wait is a polling loop
 * rather than a blocking collective. That is what lets a pool outlive a rank: while it waits,
 * rank 0 watches its peers (a peer on its host whose process is gone has died; one silent past
 * PLACER_DIST_TIMEOUT has stalled; one that reached pl_dist_finalize early has failed), and does
 * a lost peer's items itself, so the answer is the one the whole pool would have given. A
 * blocking MPI_Allgather would wait for ever on a dead rank. Whether the job survives a death
 * at all is mpirun's choice: by default it ends every rank (and placer's handler below says
 * which rank died and removes the temporaries); under `mpirun --enable-recovery` it lets the
 * others go on. */
#include "placer/dist.h"
#include "placer/common.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char error_[512]; /* why the last pool call failed */
static int depth_;       /* > 0 while a map runs its items: nested pool calls run here */

const char *pl_dist_error(void)
{
    return error_;
}

#ifdef PL_MPI
#include <fcntl.h>
#include <mpi.h>
#include <sys/mman.h>
#include <time.h>

enum { TAG_DATA = 11, TAG_FINAL, TAG_ACK, TAG_STOP };
#define TEXT_MAX 8192 /* the tail of a peer's stderr that rank 0 may print */

typedef struct peer_id {
    int pid;
    char host[128];
} peer_id;

typedef struct peer_state {
    bool gone;       /* left the pool: died, stalled, or finished early */
    bool reported;   /* its loss was told on stderr */
    bool finaled;    /* its FINAL (exit status and stderr) was received */
    bool stopped;    /* rank 0 sent it STOP */
    bool dismissed;  /* alive, but out of the pool after a failed collective (rank 0 does its
                        work); rank 0 still waits for its FINAL */
    int rc;          /* from FINAL */
    char *text;      /* from FINAL: its stderr's tail */
    const char *why; /* "died", "stalled", "failed" */
} peer_state;

static int rank_, size_ = 1;
static peer_id *ids_;     /* every rank's pid and host, gathered at init */
static peer_state *peer_; /* rank 0's view of each peer */
static bool stop_;        /* a peer: rank 0 said stop */
static bool root_lost_;   /* a peer: rank 0 died or stalled */
static bool finalizing_;  /* a peer: in pl_dist_finalize, waiting for rank 0's answer */
static volatile sig_atomic_t finishing_; /* in pl_dist_finalize: the verb's output is whole */
static int err_fd_ = -1; /* a peer: the real stderr (its fd 2 is captured in cap_fd_) */
static int cap_fd_ = -1;
static double timeout_s_; /* PLACER_DIST_TIMEOUT: a silent peer is lost after this long */
static int fault_rank_ = -1, fault_item_; /* PLACER_DIST_FAULT=die:R:K or stall:R:K */
static bool fault_stall_, fault_abort_;
static int items_run_;        /* items run on this rank, for the fault */
static bool left_collective_; /* a collective's request was abandoned: MPI_Finalize would wait */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- a peer's process, seen from this host (async-signal-safe) ---- */

static void put_int(char *buf, size_t *at, long v)
{
    char digits[24];
    int n = 0;
    if (v < 0) buf[(*at)++] = '-', v = -v;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n > 0)
        buf[(*at)++] = digits[--n];
}

static void put_str(char *buf, size_t *at, size_t cap, const char *s)
{
    while (*s && *at + 1 < cap)
        buf[(*at)++] = *s++;
}

/* A rank on this host whose process is gone or a zombie; on another host this cannot be
 * seen (false: the stall timeout is the only sign). */
static bool is_dead(int r)
{
    if (r == rank_ || strcmp(ids_[r].host, ids_[rank_].host) != 0) return false;
    if (kill(ids_[r].pid, 0) < 0 && errno == ESRCH) return true;
    char path[64], st[512];
    size_t at = 0;
    put_str(path, &at, sizeof path, "/proc/");
    put_int(path, &at, ids_[r].pid);
    put_str(path, &at, sizeof path, "/stat");
    path[at] = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return true;
    ssize_t n = read(fd, st, sizeof st - 1);
    close(fd);
    if (n <= 0) return true;
    st[n] = 0;
    const char *paren = strrchr(st, ')'); /* the state follows the command's name */
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* ---- SIGTERM from mpirun: a rank died, or the job was interrupted ---- */

/* mpirun ends every rank when one dies (unless --enable-recovery). Rank 0 says which rank
 * it can see is dead, and every rank removes the outputs it was writing; only what the
 * handler does here is async-signal-safe. */
static void on_term(int sig)
{
    if (rank_ == 0) {
        char msg[1024];
        size_t at = 0;
        int dead = 0;
        for (int r = 1; r < size_ && at < 700; r++)
            if (!peer_[r].finaled && is_dead(r)) { /* a rank that reported its end has not died */
                put_str(msg, &at, sizeof msg, dead++ ? "; rank " : "placer: rank ");
                put_int(msg, &at, r);
                put_str(msg, &at, sizeof msg, " (pid ");
                put_int(msg, &at, ids_[r].pid);
                put_str(msg, &at, sizeof msg, " on ");
                put_str(msg, &at, sizeof msg, ids_[r].host);
                put_str(msg, &at, sizeof msg, ") died");
            }
        if (finishing_) /* the verb was done: what it printed and wrote is whole */
            put_str(msg, &at, sizeof msg,
                    dead ? "; mpirun is ending the job after placer finished\n"
                         : "placer: mpirun is ending the job after placer finished\n");
        else
            put_str(
                msg, &at, sizeof msg,
                dead ? "; mpirun is ending the job: no output written\n"
                     : "placer: mpirun is ending the job (a rank on another host died or failed, "
                       "or the job was interrupted): no output written\n");
        if (write(STDERR_FILENO, msg, at) < 0) { /* nothing more to do */
        }
    }
    pl_out_remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* A peer that crashes (SIGSEGV, an abort after "out of memory") would take what it wrote on
 * stderr with it, as that is read only at pl_dist_finalize: the tail goes to the real stderr
 * first (pread and write are async-signal-safe). */
static void on_crash(int sig)
{
    static char tail[4096];
    if (cap_fd_ >= 0 && err_fd_ >= 0) {
        off_t end = lseek(cap_fd_, 0, SEEK_END),
              from = end > (off_t)sizeof tail ? end - (off_t)sizeof tail : 0;
        ssize_t n = pread(cap_fd_, tail, sizeof tail, from);
        char head[160];
        size_t at = 0;
        put_str(head, &at, sizeof head, "placer: rank ");
        put_int(head, &at, rank_);
        put_str(head, &at, sizeof head, " crashed; its last messages:\n");
        if (n > 0 && write(err_fd_, head, at) >= 0 && write(err_fd_, tail, (size_t)n) >= 0) {
        }
    }
    pl_out_remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_handlers(void)
{
    static const int crashes[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t k = 0; rank_ > 0 && k < sizeof crashes / sizeof *crashes; k++) {
        struct sigaction sa = {0};
        sa.sa_handler = on_crash;
        sigemptyset(&sa.sa_mask);
        sigaction(crashes[k], &sa, NULL);
    }
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
        struct sigaction sa = {0};
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[k], &sa, NULL);
    }
}

/* ---- init and finalize ---- */

/* A peer's stdout goes nowhere and its stderr into memory: rank 0 is the process the user
 * sees, and prints a peer's messages only when they are not its own (pl_dist_finalize). */
static void capture_output(void)
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) dup2(null, STDOUT_FILENO), close(null);
    cap_fd_ = memfd_create("placer-rank-stderr", MFD_CLOEXEC);
    err_fd_ = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (cap_fd_ >= 0 && err_fd_ >= 0) dup2(cap_fd_, STDERR_FILENO);
}

static void read_env(void)
{
    const char *t = getenv("PLACER_DIST_TIMEOUT"), *f = getenv("PLACER_DIST_FAULT");
    if (t) timeout_s_ = atof(t);
    char kind[16];
    int r, k;
    if (f && sscanf(f, "%15[a-z]:%d:%d", kind, &r, &k) == 3 && k > 0)
        fault_rank_ = r, fault_item_ = k, fault_stall_ = !strcmp(kind, "stall"),
        fault_abort_ = !strcmp(kind, "abort");
}

void pl_dist_init(int *argc, char ***argv)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(argc, argv) != MPI_SUCCESS) return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ids_ = calloc((size_t)size_, sizeof *ids_);
    peer_ = calloc((size_t)size_, sizeof *peer_);
    peer_id me = {.pid = (int)getpid()};
    if (gethostname(me.host, sizeof me.host - 1) < 0) strcpy(me.host, "?");
    if (!ids_ || !peer_ ||
        MPI_Allgather(&me, sizeof me, MPI_BYTE, ids_, sizeof me, MPI_BYTE, MPI_COMM_WORLD)) {
        fprintf(stderr, "placer: rank %d: cannot start the pool of workers\n", rank_);
        exit(2);
    }
    read_env();
    if (size_ > 1) {
        install_handlers();
        if (rank_ > 0) capture_output();
    }
}

const char *pl_dist_host(int rank)
{
    static char here[128];
    if (ids_ && rank >= 0 && rank < size_) return ids_[rank].host;
    if (!here[0] && gethostname(here, sizeof here - 1) < 0) strcpy(here, "?");
    return here;
}

/* ---- waiting while watching the pool ---- */

/* A collective's request (r < 0) cannot be cancelled: it is left, and the pool fails. */
static void cancel(MPI_Request *rq, int r)
{
    if (*rq == MPI_REQUEST_NULL || r < 0) return;
    MPI_Cancel(rq);
    MPI_Request_free(rq);
}

/* Rank 0: a peer that reached pl_dist_finalize has left the pool; keep its status and text. */
static void poll_finals(void)
{
    for (;;) {
        int flag = 0, n = 0;
        MPI_Status st;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_FINAL, MPI_COMM_WORLD, &flag, &st) || !flag) return;
        MPI_Get_count(&st, MPI_BYTE, &n);
        char *buf = calloc((size_t)n + 1, 1);
        if (!buf) return;
        MPI_Recv(buf, n, MPI_BYTE, st.MPI_SOURCE, TAG_FINAL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        peer_state *p = &peer_[st.MPI_SOURCE];
        memcpy(&p->rc, buf, sizeof p->rc);
        free(p->text);
        p->text = strdup(n > (int)sizeof p->rc ? buf + sizeof p->rc : "");
        free(buf);
        p->finaled = true;
        if (!p->gone) p->gone = true, p->why = "failed";
    }
}

/* A peer: rank 0 said stop (it failed, or the job is ending). */
static bool poll_stop(void)
{
    int flag = 0;
    if (finalizing_) return false; /* the answer is coming: a STOP no longer matters */
    if (!stop_ &&
        MPI_Iprobe(0, TAG_STOP, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) {
        int dummy;
        MPI_Recv(&dummy, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        stop_ = true;
        snprintf(error_, sizeof error_, "rank 0 stopped the pool");
    }
    return stop_;
}

/* Rank 0 loses a peer (it said why); a peer loses rank 0, and with it the pool. */
static void lose(int r, const char *why)
{
    if (rank_ == 0) {
        if (!peer_[r].gone) peer_[r].gone = true, peer_[r].why = why;
        return;
    }
    if (r != 0) return; /* a peer's loss is rank 0's to handle: it stops or redoes the work */
    root_lost_ = true;
    snprintf(error_, sizeof error_, "rank 0 (pid %d on %s) %s", ids_[0].pid, ids_[0].host, why);
}

/* Rank 0 tells once that a lost peer's items run here from now on. */
static void report_loss(int r)
{
    peer_state *p = &peer_[r];
    if (p->reported || !p->gone || p->finaled) return;
    p->reported = true;
    fprintf(stderr, "placer: rank %d (pid %d on %s) %s; its work runs on rank 0\n", r, ids_[r].pid,
            ids_[r].host, p->why);
}

/* Is rank r (or, with r = -1, any rank but this one) lost: reported gone, dead on this host,
 * or silent past the timeout since t0? Says why through lose(). */
static bool lost_now(int r, double t0, double t)
{
    if (rank_ > 0) /* a peer waits for rank 0 as long as rank 0 lives: rank 0 may be redoing a
                    * lost rank's work, or waiting out PLACER_DIST_TIMEOUT itself */
        return is_dead(0) && (lose(0, "died"), true);
    for (int k = r < 0 ? 0 : r; k < (r < 0 ? size_ : r + 1); k++) {
        if (k == rank_) continue;
        if (rank_ == 0 && peer_[k].gone) return true;
        if (is_dead(k)) return lose(k, "died"), true;
    }
    if (timeout_s_ > 0 && t - t0 > timeout_s_) {
        if (r >= 0) return lose(r, "stalled past PLACER_DIST_TIMEOUT"), true;
        snprintf(error_, sizeof error_, "a rank stalled past PLACER_DIST_TIMEOUT");
        return true;
    }
    return false;
}

/* Waits for rq, an exchange with rank `r` (-1: a collective of every rank), watching the pool
 * meanwhile. 0 when it completed; 1 when a rank it needs left the pool (a point-to-point rq is
 * cancelled; a collective one cannot be, and the pool fails); on a peer, -1 when rank 0 said
 * stop. */
static int wait_for(MPI_Request *rq, int r)
{
    double t0 = now_s(), checked = t0;
    useconds_t nap = 20;
    for (;;) {
        int done = 0;
        if (MPI_Test(rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            if (r >= 0) lose(r, "failed to communicate");
            return cancel(rq, r), 1;
        }
        if (done) return 0;
        if (rank_ == 0)
            poll_finals();
        else if (poll_stop())
            return cancel(rq, r), -1;
        double t = now_s();
        if (rank_ == 0 && r >= 0 && peer_[r].gone) return cancel(rq, r), 1;
        if (t - checked > 0.05) {
            checked = t;
            if (lost_now(r, t0, t)) return cancel(rq, r), 1;
        }
        usleep(nap);
        if (nap < 2000) nap *= 2;
    }
}

static int exchange(bool send, void *buf, size_t bytes, int r, int tag)
{
    MPI_Request rq;
    if (bytes > INT_MAX) return snprintf(error_, sizeof error_, "message too large"), -1;
    int rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, r, tag, MPI_COMM_WORLD, &rq)
                  : MPI_Irecv(buf, (int)bytes, MPI_BYTE, r, tag, MPI_COMM_WORLD, &rq);
    if (rc != MPI_SUCCESS) return lose(r, "failed to communicate"), 1;
    return wait_for(&rq, r);
}

/* A peer that lost rank 0 or was stopped: the pool call fails, saying why. */
static int peer_failed(void)
{
    if (!error_[0]) snprintf(error_, sizeof error_, "the pool stopped");
    return -1;
}

/* ---- map ---- */

static void run_item(int i, pl_dist_fn fn, void *slot, void *user)
{
    if (rank_ == fault_rank_ && ++items_run_ == fault_item_) { /* PLACER_DIST_FAULT, tests */
        if (fault_stall_)
            for (;;)
                pause();
        if (fault_abort_) {
            fprintf(stderr, "rank %d: injected fault: aborting at item %d\n", rank_, i);
            fflush(stderr);
            abort();
        }
        raise(SIGKILL);
    }
    depth_++;
    fn(i, slot, user);
    depth_--;
}

/* Rank r's items are r, r + size, ...; its block holds their results in that order. */
static int count_of(int n, int r)
{
    return n > r ? (n - r + size_ - 1) / size_ : 0;
}

static void run_block(int n, int r, pl_dist_fn fn, char *out, size_t sz, void *user)
{
    for (int i = r; i < n; i += size_)
        run_item(i, fn, out + (size_t)i * sz, user);
}

static int map_root(int n, pl_dist_fn fn, char *out, size_t sz, void *user)
{
    run_block(n, 0, fn, out, sz, user);
    size_t cap = (size_t)count_of(n, 1) * sz + 1;
    char *block = pl_malloc(cap);
    for (int r = 1; r < size_; r++) {
        bool was_gone = peer_[r].gone;
        int got = was_gone ? 1 : exchange(false, block, (size_t)count_of(n, r) * sz, r, TAG_DATA);
        if (got == 0)
            for (int j = 0, i = r; i < n; j++, i += size_)
                memcpy(out + (size_t)i * sz, block + (size_t)j * sz, sz);
        else {
            /* an abandoned receive may still complete into its buffer (a slow peer's message
             * already matched when the timeout fired): that buffer is left to it */
            if (!was_gone) block = pl_malloc(cap);
            report_loss(r);
            run_block(n, r, fn, out, sz, user);
        }
    }
    free(block);
    for (int r = 1; r < size_; r++)
        if (!peer_[r].gone) exchange(true, out, (size_t)n * sz, r, TAG_DATA);
    return 0;
}

static int map_peer(int n, pl_dist_fn fn, char *out, size_t sz, void *user)
{
    if (stop_ || root_lost_) return peer_failed();
    int mine = count_of(n, rank_);
    char *block = pl_malloc((size_t)mine * sz + 1);
    for (int j = 0, i = rank_; i < n; j++, i += size_)
        run_item(i, fn, block + (size_t)j * sz, user);
    int rc = exchange(true, block, (size_t)mine * sz, 0, TAG_DATA);
    free(block);
    if (rc == 0) rc = exchange(false, out, (size_t)n * sz, 0, TAG_DATA);
    return rc == 0 ? 0 : peer_failed();
}

/* ---- sum and broadcast ---- */

/* Rank 0, after a sum that lost a rank: the other ranks may be waiting in the same collective,
 * which will never complete; each is told to stop and leaves the pool (rank 0 does its items
 * from now on, and the verb fails on the sum's message). */
static void dismiss_all(void)
{
    for (int r = 1; r < size_; r++) {
        peer_state *p = &peer_[r];
        if (p->gone) continue;
        int zero = 0;
        MPI_Request rq;
        if (MPI_Isend(&zero, 1, MPI_INT, r, TAG_STOP, MPI_COMM_WORLD, &rq) == MPI_SUCCESS)
            MPI_Request_free(&rq);
        p->gone = p->dismissed = p->stopped = p->reported = true;
        p->why = "stopped";
    }
}

/* MPI_Allreduce, non-blocking so that the wait can watch the pool. A lost rank's share cannot
 * be redone elsewhere (a DRL episode's gradient exists only on its rank), so a sum that loses
 * a rank fails, naming it, and the search stops with that message. */
static int sum_mpi(void *v, int n, bool f32)
{
    if (rank_ > 0 && (stop_ || root_lost_)) return peer_failed();
    for (int r = 1; rank_ == 0 && r < size_; r++)
        if (peer_[r].gone && !peer_[r].dismissed) {
            report_loss(r);
            snprintf(error_, sizeof error_,
                     "rank %d (pid %d on %s) %s: its share of the sum is lost", r, ids_[r].pid,
                     ids_[r].host, peer_[r].why);
            return dismiss_all(), -1;
        }
    MPI_Request rq;
    if (MPI_Iallreduce(MPI_IN_PLACE, v, n, f32 ? MPI_FLOAT : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                       &rq) != MPI_SUCCESS)
        return snprintf(error_, sizeof error_, "MPI_Iallreduce failed"), -1;
    int w = wait_for(&rq, -1);
    if (w == 0) return size_;
    left_collective_ = true;
    if (rank_ > 0) return peer_failed();
    dismiss_all();
    for (int r = 1; r < size_; r++)
        if (peer_[r].gone && !error_[0])
            snprintf(error_, sizeof error_, "rank %d (pid %d on %s) %s during a sum", r,
                     ids_[r].pid, ids_[r].host, peer_[r].why);
    if (!error_[0]) snprintf(error_, sizeof error_, "a rank was lost during a sum");
    return -1;
}

/* The root's bytes reach rank 0 first (when the root is a peer), then every peer. */
static int bcast_mpi(void *buf, size_t bytes, int root)
{
    if (rank_ > 0) {
        if (stop_ || root_lost_) return peer_failed();
        if (rank_ == root && exchange(true, buf, bytes, 0, TAG_DATA)) return peer_failed();
        return exchange(false, buf, bytes, 0, TAG_DATA) ? peer_failed() : 0;
    }
    if (root > 0 && (peer_[root].gone || exchange(false, buf, bytes, root, TAG_DATA))) {
        report_loss(root);
        snprintf(error_, sizeof error_,
                 "rank %d (pid %d on %s), whose data the others wait for, %s", root, ids_[root].pid,
                 ids_[root].host, peer_[root].why ? peer_[root].why : "left");
        return -1;
    }
    for (int r = 1; r < size_; r++)
        if (!peer_[r].gone) exchange(true, buf, bytes, r, TAG_DATA);
    return 0;
}

/* ---- finalize ---- */

/* The tail of what this peer wrote on stderr. */
static char *captured(void)
{
    char *text = calloc(TEXT_MAX + 1, 1);
    if (!text || cap_fd_ < 0) return text;
    off_t end = lseek(cap_fd_, 0, SEEK_END), from = end > TEXT_MAX ? end - TEXT_MAX : 0;
    ssize_t n = pread(cap_fd_, text, TEXT_MAX, from);
    text[n > 0 ? n : 0] = 0;
    return text;
}

/* A peer reports its exit status and stderr to rank 0 and exits with the status rank 0
 * decides (so mpirun's status is rank 0's); without rank 0 it tells the user itself. */
static int finalize_peer(int rc)
{
    char *text = captured();
    size_t len = text ? strlen(text) : 0;
    char *msg = malloc(sizeof rc + len + 1);
    int final = rc;
    finalizing_ = true;
    bool ok = msg && !root_lost_;
    if (ok) {
        memcpy(msg, &rc, sizeof rc);
        memcpy(msg + sizeof rc, text ? text : "", len + 1);
        ok = exchange(true, msg, sizeof rc + len + 1, 0, TAG_FINAL) == 0 &&
             exchange(false, &final, sizeof final, 0, TAG_ACK) == 0;
    }
    free(msg);
    (void) final; /* rank 0 returns the job's status: a peer's own non-zero exit would make
                   * mpirun end rank 0 before it does */
    final = 0;
    if (!ok && err_fd_ >= 0) { /* rank 0 is lost: nobody else will say it */
        dprintf(err_fd_, "placer: rank %d (pid %d on %s): %s; stopping\n%s", rank_, (int)getpid(),
                ids_[rank_].host, error_[0] ? error_ : "rank 0 is lost", text ? text : "");
        free(text);
        fflush(NULL);
        _exit(rc ? rc : 2); /* MPI_Finalize would wait for the lost rank */
    }
    free(text);
    if (left_collective_) _exit(final); /* MPI_Finalize would wait for the collective */
    MPI_Finalize();
    return final;
}

/* Rank 0 waits for every peer's FINAL (telling the ones still working to stop when it
 * failed), prints the messages that are not its own, and answers each with its status. */
static int finalize_root(int rc)
{
    bool lost = false, stalled = false;
    for (int r = 1; r < size_; r++) {
        peer_state *p = &peer_[r];
        if (rc != 0 && !p->finaled && !p->gone) {
            int zero = 0;
            p->stopped = true;
            MPI_Request rq;
            if (MPI_Isend(&zero, 1, MPI_INT, r, TAG_STOP, MPI_COMM_WORLD, &rq) == MPI_SUCCESS)
                MPI_Request_free(&rq);
        }
        double t0 = now_s();
        while (!p->finaled && (!p->gone || p->dismissed)) {
            poll_finals();
            if (p->finaled) break;
            if (is_dead(r) || (timeout_s_ > 0 && now_s() - t0 > timeout_s_)) {
                if (!p->gone || p->dismissed) p->why = is_dead(r) ? "died" : "stalled";
                p->gone = true, p->dismissed = false;
                break;
            }
            usleep(1000);
        }
        if (!p->finaled) lost = true, stalled |= !is_dead(r), report_loss(r);
    }
    fflush(stdout);
    for (int r = 1; r < size_; r++) {
        peer_state *p = &peer_[r];
        /* the same failure as rank 0's (bad input, on every rank) is told once, by rank 0 */
        if (p->finaled && p->rc != 0 && !p->stopped && (rc == 0 || p->rc != rc))
            fprintf(stderr, "placer: rank %d (pid %d on %s) failed with exit %d%s:\n%s", r,
                    ids_[r].pid, ids_[r].host, p->rc, rc == 0 ? " (its work ran on rank 0)" : "",
                    p->text ? p->text : "");
        if (p->finaled) exchange(true, &rc, sizeof rc, r, TAG_ACK);
        free(p->text);
        p->text = NULL;
    }
    fflush(NULL);
    /* MPI_Finalize would wait for a lost rank; a dead one is gone, but a stalled one would keep
     * mpirun (and the job) waiting, and only MPI_Abort ends it on another host */
    /* under --enable-recovery mpirun (OpenMPI 4.1) returns 0 whatever the ranks return or
     * pass to MPI_Abort: the status is told on stderr instead, for scripts to read */
    const char *recovery = getenv("OMPI_MCA_orte_enable_recovery");
    if (rc != 0 && recovery && !strcmp(recovery, "1")) {
        fprintf(stderr,
                "placer: exit status %d (mpirun --enable-recovery returns 0 whatever "
                "the ranks return)\n",
                rc);
        fflush(stderr);
    }
    if (stalled) MPI_Abort(MPI_COMM_WORLD, rc);
    if (lost || left_collective_) _exit(rc);
    MPI_Finalize();
    return rc;
}

int pl_dist_finalize(int rc)
{
    int inited = 0, done = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&done);
    if (!inited || done) return rc;
    finishing_ = true; /* the verb is done: its output is whole */
    if (size_ > 1)
        rc = rank_ == 0 ? finalize_root(rc) : finalize_peer(rc);
    else
        MPI_Finalize();
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP}; /* the handler reads what is freed */
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++)
        signal(sigs[k], SIG_DFL);
    free(ids_);
    free(peer_);
    ids_ = NULL, peer_ = NULL;
    return rc;
}
#else
static const int rank_ = 0, size_ = 1;

void pl_dist_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
}

int pl_dist_finalize(int rc)
{
    return rc;
}

const char *pl_dist_host(int rank)
{
    static char host[128];
    (void)rank;
    if (!host[0] && gethostname(host, sizeof host - 1) < 0) strcpy(host, "?");
    return host;
}
#endif

int pl_dist_rank(void)
{
    return rank_;
}

int pl_dist_size(void)
{
    return size_;
}

#ifdef PL_MPI
/* Inside a map's item the other ranks are busy with their own items: a nested pool call runs
 * here, whole, as one process would. */
static bool pooled(void)
{
    return size_ > 1 && depth_ == 0;
}
#endif

/* A new call's error starts empty, unless this peer has lost the pool for good. */
static void clear_error(void)
{
#ifdef PL_MPI
    if (stop_ || root_lost_) return;
#endif
    error_[0] = 0;
}

int pl_dist_map_here(int n_items, pl_dist_fn fn, void *out, size_t out_size, void *user)
{
    if (n_items < 0 || !fn || (n_items && !out)) return -1;
    depth_++;                         /* a pool call inside an item runs here too */
    for (int i = 0; i < n_items; i++) /* every item here, in order */
        fn(i, (char *)out + (size_t)i * out_size, user);
    depth_--;
    return 0;
}

int pl_dist_map(int n_items, pl_dist_fn fn, void *out, size_t out_size, void *user)
{
    clear_error();
    if (n_items < 0 || !fn || (n_items && !out)) return -1;
#ifdef PL_MPI
    if (pooled())
        return rank_ == 0 ? map_root(n_items, fn, out, out_size, user)
                          : map_peer(n_items, fn, out, out_size, user);
#endif
    return pl_dist_map_here(n_items, fn, out, out_size, user);
}

int pl_dist_map_or_here(bool pool, int n_items, pl_dist_fn fn, void *out, size_t out_size,
                        void *user)
{
    return pool ? pl_dist_map(n_items, fn, out, out_size, user)
                : pl_dist_map_here(n_items, fn, out, out_size, user);
}

int pl_dist_sum(double *v, int n)
{
    clear_error();
    if (n < 0 || (n && !v)) return -1;
#ifdef PL_MPI
    if (pooled()) return sum_mpi(v, n, false);
#endif
    return 1;
}

int pl_dist_sumf(float *v, int n)
{
    clear_error();
    if (n < 0 || (n && !v)) return -1;
#ifdef PL_MPI
    if (pooled()) return sum_mpi(v, n, true);
#endif
    return 1;
}

int pl_dist_bcast(void *buf, size_t bytes, int root)
{
    clear_error();
    if (root < 0 || root >= size_ || (bytes && !buf)) return -1;
#ifdef PL_MPI
    if (pooled()) return bcast_mpi(buf, bytes, root);
#endif
    return 0;
}
