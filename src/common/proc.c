/* proc.c: every child program placer starts (common.h, "Child processes"): spawned in its own
 * process group (so it and anything it starts can be killed as one), tied to placer's life
 * (PR_SET_PDEATHSIG), read with poll and a deadline, ended TERM then KILL, always reaped.
 *
 * Its stdin and stdout are socket pairs rather than pipes so that writing to a dead child
 * fails with EPIPE (send with MSG_NOSIGNAL) instead of raising SIGPIPE in placer, a library
 * that must not install signal handlers behind its caller's back. */
#include "placer/common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* In a new child: its own process group, and death with placer (parent is placer's pid
 * before the fork: if it died meanwhile, PDEATHSIG came too late). */
static void tie(pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* placer's own signals are taken by one thread (pl_out_take_signals) and so blocked in
     * this copy of the forking thread; a mask survives exec, and a worker that blocked
     * SIGTERM would ignore being ended */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (getppid() != parent) _exit(126);
}

/* Only async-signal-safe calls between fork and exec. With a log, in is /dev/null's and out
 * and e the log's descriptor (opened here: the parent keeps no copy). */
static void child(pid_t parent, int in, int out, int e, char *const argv[], const char *log,
                  const char *hint)
{
    tie(parent);
    if (log) {
        in = open("/dev/null", O_RDONLY);
        out = e = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (in < 0 || out < 0) _exit(126);
    }
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(e, 2) < 0) _exit(126);
    execvp(argv[0], argv);
    static const char msg[] = "cannot execute ";
    if (write(2, msg, sizeof msg - 1) < 0 || write(2, argv[0], strlen(argv[0])) < 0 ||
        write(2, hint, strlen(hint)) < 0)
        _exit(127);
    _exit(127);
}

int pl_proc_fork(pl_proc *p, void (*fn)(void *ctx), void *ctx, const char *what, pl_err *err)
{
    *p = PL_PROC_NONE;
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        tie(parent);
        fn(ctx);
        _exit(0);
    }
    if (pid < 0) return pl_err_set(err, "cannot start %s: fork: %s", what, strerror(errno));
    setpgid(pid, pid); /* also here: no window where a kill of the group misses it */
    p->pid = pid;
    return 0;
}

/* The child's ends in in[1], out[1], e[1], ours in [0]. */
static int make_pipes(int in[2], int out[2], int e[2])
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) < 0) return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) == 0) {
        if (pipe2(e, O_CLOEXEC) == 0) return 0;
        close(out[0]), close(out[1]);
    }
    close(in[0]), close(in[1]);
    return -1;
}

int pl_proc_start(pl_proc *p, char *const argv[], const char *log, const char *what,
                  const char *hint, pl_err *err)
{
    *p = PL_PROC_NONE;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, e[2] = {-1, -1};
    if (!log && make_pipes(in, out, e) < 0)
        return pl_err_set(err, "cannot start %s: %s", what, strerror(errno));
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) child(parent, in[1], out[1], e[1], argv, log, hint);
    close_fd(&in[1]), close_fd(&out[1]), close_fd(&e[1]);
    if (pid < 0) {
        int errno_was = errno;
        close_fd(&in[0]), close_fd(&out[0]), close_fd(&e[0]);
        return pl_err_set(err, "cannot start %s: fork: %s", what, strerror(errno_was));
    }
    setpgid(pid, pid); /* also here: no window where a kill of the group misses it */
    *p = (pl_proc){.pid = pid, .in = in[0], .out = out[0], .e = e[0]};
    return 0;
}

int pl_proc_send(pl_proc *p, const char *line)
{
    size_t n = strlen(line);
    char *msg = pl_malloc(n + 1);
    memcpy(msg, line, n);
    msg[n++] = '\n';
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(p->in, msg + off, n - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    free(msg);
    return off == n ? 0 : -1;
}

static void keep_tail(pl_proc *p, const char *b, size_t n)
{
    if (n >= PL_PROC_TAIL) b += n - (PL_PROC_TAIL - 1), n = PL_PROC_TAIL - 1;
    size_t keep = p->tail_len + n < PL_PROC_TAIL ? p->tail_len : PL_PROC_TAIL - 1 - n;
    memmove(p->tail, p->tail + p->tail_len - keep, keep);
    memcpy(p->tail + keep, b, n);
    p->tail_len = keep + n;
}

/* Takes a complete line out of the buffer, if there is one. */
static bool pop_line(pl_proc *p, char **line)
{
    char *nl = p->len ? memchr(p->buf, '\n', p->len) : NULL;
    if (!nl) return false;
    size_t k = (size_t)(nl - p->buf);
    *line = pl_strndup(p->buf, k);
    memmove(p->buf, nl + 1, p->len - k - 1);
    p->len -= k + 1;
    return true;
}

/* Reads what is there on one descriptor; 0 at end of file. */
static ssize_t drain(pl_proc *p, int fd)
{
    char b[65536];
    ssize_t r;
    do
        r = read(fd, b, sizeof b);
    while (r < 0 && errno == EINTR);
    if (r <= 0) return 0;
    if (fd == p->e) {
        keep_tail(p, b, (size_t)r);
    } else {
        if (p->len + (size_t)r > p->cap) {
            p->cap = (p->len + (size_t)r) * 2;
            p->buf = pl_realloc(p->buf, p->cap);
        }
        memcpy(p->buf + p->len, b, (size_t)r);
        p->len += (size_t)r;
    }
    return r;
}

pl_proc_rc pl_proc_line(pl_proc *p, double timeout_s, char **line)
{
    double deadline = pl_now() + timeout_s;
    while (!pop_line(p, line)) {
        double left = deadline - pl_now();
        if (left <= 0) return PL_PROC_TIMEOUT;
        struct pollfd f[2] = {{p->out, POLLIN, 0}, {p->e, POLLIN, 0}};
        int r = poll(f, p->e >= 0 ? 2 : 1, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR) return PL_PROC_EOF;
        if (r <= 0) continue;
        if (f[1].revents && p->e >= 0 && drain(p, p->e) == 0) close_fd(&p->e);
        if (f[0].revents && drain(p, p->out) == 0) {
            if (p->e >= 0) drain(p, p->e); /* its last words, usually why */
            return PL_PROC_EOF;
        }
    }
    return PL_PROC_LINE;
}

static void describe(int st, char *how, size_t n)
{
    if (WIFSIGNALED(st))
        snprintf(how, n, "died (signal %d)", WTERMSIG(st));
    else
        snprintf(how, n, "exited with status %d", WEXITSTATUS(st));
}

/* Whether it has exited, without reaping it: its process group stays reserved until then. */
static bool exited(pid_t pid, int *st)
{
    siginfo_t si = {0};
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) return true;
    if (si.si_pid != pid) return false;
    *st = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : si.si_status;
    return true;
}

bool pl_proc_exited(const pl_proc *p, char *how, size_t n)
{
    int st = 0;
    if (p->pid <= 0 || !exited(p->pid, &st)) return false;
    if (how && n) describe(st, how, n);
    return true;
}

int pl_proc_end(pl_proc *p, bool term, double grace_s, char *how, size_t n)
{
    char local[64];
    if (!how || !n) how = local, n = sizeof local;
    how[0] = 0;
    close_fd(&p->in); /* end of input: a healthy child quits */
    int rc = -1;
    if (p->pid > 0) {
        int st = 0;
        if (term) kill(-p->pid, SIGTERM);
        bool gone = exited(p->pid, &st);
        for (double end = pl_now() + grace_s; !gone && pl_now() < end; gone = exited(p->pid, &st))
            usleep(1000); /* a solve child exits just after its answer: be there soon */
        if (gone)
            describe(st, how, n), rc = st;
        else
            snprintf(how, n, "did not exit and was killed");
        kill(-p->pid, SIGKILL); /* the whole group: nothing it started outlives it */
        while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    close_fd(&p->out), close_fd(&p->e);
    free(p->buf);
    p->buf = NULL, p->len = p->cap = 0, p->pid = -1;
    return rc;
}

/* The length of the terminal escape (colour) sequence at s[0..n), 0 when there is none: a
 * child's log colours (onnxruntime's errors are red) are not text for a message. */
static size_t escape_len(const char *s, size_t n)
{
    if (n < 2 || s[0] != '\033' || s[1] != '[') return 0;
    size_t k = 2;
    while (k < n && !(s[k] >= 0x40 && s[k] <= 0x7e))
        k++;
    return k < n ? k + 1 : n;
}

const char *pl_proc_tail(const pl_proc *p, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0, e; i < p->tail_len && k + 1 < n; i++)
        if ((e = escape_len(p->tail + i, p->tail_len - i)))
            i += e - 1;
        else
            out[k++] = p->tail[i] == '\n' || p->tail[i] == '\r' ? ' ' : p->tail[i];
    while (k && out[k - 1] == ' ')
        k--;
    out[k] = 0;
    return out;
}
