/* out.c: output files and folders written whole or not at all (common.h, pl_out).
 *
 * Everything placer writes for the user goes to a hidden temporary beside the final path
 * (".NAME.tmp.PID", same folder, so the rename cannot cross file systems) and is renamed over
 * it only once complete and on disk (fflush, fsync). Until then the final path keeps its old
 * content; a failed write (ENOSPC, EFBIG) removes the temporary. SIGINT, SIGTERM and SIGHUP
 * remove the temporary files being written before the process dies; only a kill that cannot
 * be caught (SIGKILL, power loss) leaves one, and its leading dot and ".tmp.PID" ending keep it
 * from being taken for output. */
/* renameat2 needs _GNU_SOURCE, which the Makefile defines */
#include "placer/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- temporaries removed on SIGINT/SIGTERM/SIGHUP ---- */

/* The temporaries that exist now: files being written (pl_out, pl_outset), folders being
 * filled (pl_outdir) and a run's private folders (pl_make_temp_dir). A slot holds its own copy
 * of the path, published before the temporary is created and cleared after it is renamed or
 * removed; the handler only reads the slots and calls async-signal-safe functions.
 * Temporaries are made from the main thread only, so the list takes no lock. */
#define MAX_LIVE 32
static char *volatile live[MAX_LIVE];
static volatile sig_atomic_t live_dir[MAX_LIVE];

static void rollback(void);
static int remove_entry(int parent, const char *name);

void pl_out_remove_temporaries(void)
{
    rollback(); /* a multi-file commit under way: its old files are put back first */
    for (int k = 0; k < MAX_LIVE; k++) {
        char *p = live[k];
        if (p && live_dir[k])
            remove_entry(AT_FDCWD, p);
        else if (p)
            unlink(p);
    }
}

static void on_signal(int sig)
{
    pl_out_remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installed on first use, and only over the default disposition: a program that handles these
 * signals itself keeps its handler (and calls pl_out_remove_temporaries from it). */
static void install_handlers(void)
{
    static bool done;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    if (done) return;
    done = true;
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
        struct sigaction old, sa = {0};
        if (sigaction(sigs[k], NULL, &old) < 0 || old.sa_handler != SIG_DFL) continue;
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[k], &sa, NULL);
    }
}

/* ---- signals taken by a thread of their own (common.h, pl_out_take_signals) ---- */

static sigset_t taken;

/* The renames that put an output in place and the signal thread's cleanup exclude each other.
 * A handler interrupts the thread it runs on, but the signal thread runs beside the main one:
 * without the gate, a main thread about to rename would put its new output in place after the
 * signal, while the temporaries were being removed. With it, a commit under way ends first
 * (its output whole), and one not yet begun never begins: the signal thread keeps the gate
 * until the process dies. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

/* Held by a call that sets dispositions of its own (common.h, pl_signals_hold), and by
 * die_of from the moment it restores the default action until the process is gone. */
static pthread_mutex_t dispositions = PTHREAD_MUTEX_INITIALIZER;

void pl_signals_hold(void)
{
    pthread_mutex_lock(&dispositions);
}

void pl_signals_release(void)
{
    pthread_mutex_unlock(&dispositions);
}

/* The default action, from a thread that no longer blocks it: the process dies of sig, as if
 * nothing had caught it (a parent sees WTERMSIG). raise() sends to this thread alone, and the
 * action it takes is the one in place at that moment: no other thread may set another between
 * signal() and raise() (pl_signals_hold). */
static _Noreturn void die_of(int sig)
{
    pthread_mutex_lock(&dispositions); /* never unlocked: the process dies with it held */
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    _exit(128 + sig); /* not reached unless another handler was swapped in meanwhile */
}

static void *wait_for_signals(void *unused)
{
    (void)unused;
    int sig = 0;
    while (sigwait(&taken, &sig) != 0) {
    }
    pthread_mutex_lock(&gate); /* never unlocked: the process dies with it held */
    pl_out_remove_temporaries();
    die_of(sig);
}

int pl_out_take_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    int n = 0;
    sigemptyset(&taken);
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
        struct sigaction old;
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            sigaddset(&taken, sigs[k]), n++;
    }
    if (!n) return 0;
    install_handlers(); /* for a thread that was started before and still takes them */
    sigset_t was;
    pthread_sigmask(SIG_BLOCK, &taken, &was);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, wait_for_signals, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_sigmask(SIG_SETMASK, &was, NULL);
        return -1;
    }
    return n;
}

/* A full list leaves the temporary unregistered (32 at once: placer holds a handful). The
 * list changes under the gate: the signal thread reads it beside the main thread, and a name
 * freed while it unlinks it was a use after free (a SIGSEGV instead of death by SIGTERM, seen
 * once in CI on learn-prior, which commits an output every round). */
static void live_add(const char *path, bool dir)
{
    install_handlers();
    char *copy = pl_strdup(path);
    pthread_mutex_lock(&gate);
    int k = 0;
    while (k < MAX_LIVE && live[k])
        k++;
    if (k < MAX_LIVE) live_dir[k] = dir, live[k] = copy, copy = NULL;
    pthread_mutex_unlock(&gate);
    free(copy);
}

static void live_remove(const char *path)
{
    char *p = NULL;
    pthread_mutex_lock(&gate);
    for (int k = 0; path && k < MAX_LIVE && !p; k++)
        if (live[k] && !strcmp(live[k], path)) p = live[k], live[k] = NULL;
    pthread_mutex_unlock(&gate);
    free(p);
}

/* ---- names ---- */

char *pl_out_tmp_name(const char *path)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') /* "out/" names the folder "out" */
        len--;
    const char *base = path + len;
    while (base > path && base[-1] != '/')
        base--;
    size_t dir = (size_t)(base - path), n = len + 48;
    char *tmp = pl_malloc(n);
    snprintf(tmp, n, "%.*s.%.*s.tmp.%ld", (int)dir, path, (int)(len - dir), base, (long)getpid());
    return tmp;
}

/* A folder's entries on disk: what makes a rename (or a new file in it) durable. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The folder holding path ("." for a bare name). */
static int sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? pl_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : NULL;
    int rc = sync_dir(dir ? dir : ".");
    free(dir);
    return rc;
}

/* ---- files ---- */

/* What is renamed over: a symbolic link's target (the link stays a link). A path that exists
 * but is not a regular file (a pipe, a terminal), or is under /dev or /proc (/dev/stdout, even
 * when the shell sent stdout to a file), is written in place (*direct): renaming over it would
 * replace the device or pipe itself, or the file behind another open descriptor. */
static char *target(const char *path, bool *direct)
{
    struct stat st;
    *direct = !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6);
    if (*direct || stat(path, &st) < 0) return pl_strdup(path); /* or new */
    if (!S_ISREG(st.st_mode)) return *direct = true, pl_strdup(path);
    char *real = realpath(path, NULL);
    char *out = pl_strdup(real ? real : path);
    free(real);
    return out;
}

int pl_out_open(pl_out *o, const char *path, pl_err *err)
{
    memset(o, 0, sizeof *o);
    bool direct;
    o->path = target(path, &direct);
    if (!direct) o->tmp = pl_out_tmp_name(o->path), live_add(o->tmp, false);
    int fd = open(direct ? o->path : o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    o->f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!o->f) {
        int e = errno;
        if (fd >= 0) close(fd);
        if (direct)
            pl_err_set(err, "%s: cannot open: %s", path, strerror(e));
        else
            pl_err_set(err, "%s: cannot create %s beside it: %s", path, o->tmp, strerror(e));
        pl_out_abort(o);
        return -1;
    }
    return 0;
}

static int write_error(pl_out *o, int e, pl_err *err)
{
    pl_err_set(err, "%s: cannot write: %s%s", o->path, strerror(e ? e : EIO),
               o->tmp ? " (nothing was written there: the old file, if any, is as it was)" : "");
    pl_out_abort(o);
    return -1;
}

int pl_out_commit(pl_out *o, pl_err *err)
{
    PL_ASSERT(o->f);
    /* A write may have failed earlier (json_dumpf, fprintf): ferror keeps it. Flushing again
     * retries what is buffered, which fails with the reason (ENOSPC, EFBIG); with nothing
     * buffered, errno is still the failed write's. */
    if (ferror(o->f)) {
        fflush(o->f);
        return write_error(o, errno, err);
    }
    if (fflush(o->f) != 0 || (o->tmp && fsync(fileno(o->f)) != 0))
        return write_error(o, errno, err);
    int rc = fclose(o->f);
    o->f = NULL;
    if (rc != 0) return write_error(o, errno, err);
    if (!o->tmp) { /* written in place (a device or a pipe) */
        pl_out_abort(o);
        return 0;
    }
    pthread_mutex_lock(&gate);
    int moved = rename(o->tmp, o->path), e = errno;
    pthread_mutex_unlock(&gate);
    if (moved != 0) return write_error(o, e, err);
    sync_parent(o->path); /* the rename itself on disk; a failure here loses nothing written */
    live_remove(o->tmp);
    free(o->tmp), free(o->path);
    memset(o, 0, sizeof *o);
    return 0;
}

void pl_out_abort(pl_out *o)
{
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    live_remove(o->tmp);
    free(o->tmp), free(o->path);
    memset(o, 0, sizeof *o);
}

int pl_out_write_file(const char *path, const void *buf, size_t n, pl_err *err)
{
    pl_out o;
    if (pl_out_open(&o, path, err) < 0) return -1;
    if (n && fwrite(buf, 1, n, o.f) != n) return write_error(&o, errno, err);
    return pl_out_commit(&o, err);
}

/* ---- folders ---- */

/* rm -r with only async-signal-safe calls (openat, getdents64, unlinkat, close, nanosleep), so
 * that the signal handler removes folders as pl_remove_tree does: no opendir (it allocates),
 * no nftw. A folder that is not empty once its entries are gone gained one meanwhile (a worker
 * still writing its outputs there): it is emptied again, a bounded number of times. */
#define MAX_DEPTH 32
#define MAX_PASSES 100

static int remove_dir_at(int parent, const char *name, int depth);

static int empty_dir(int fd, int depth)
{
    _Alignas(8) char buf[2048];
    int rc = 0;
    long n;
    while ((n = (long)getdents64(fd, buf, sizeof buf)) > 0)
        for (long at = 0; at < n;) {
            struct dirent64 *e = (struct dirent64 *)(buf + at);
            at += e->d_reclen;
            const char *nm = e->d_name;
            if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2]))) continue;
            if (unlinkat(fd, nm, 0) == 0 || errno == ENOENT) continue;
            if ((errno != EISDIR && errno != EPERM) || remove_dir_at(fd, nm, depth + 1) < 0)
                rc = -1;
        }
    return n < 0 ? -1 : rc;
}

/* The folder name in parent, with everything in it; a symbolic link is not followed. */
static int remove_dir_at(int parent, const char *name, int depth)
{
    if (depth > MAX_DEPTH) return -1;
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    int rc = -1;
    for (int pass = 0; pass < MAX_PASSES; pass++) {
        if (pass) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
            lseek(fd, 0, SEEK_SET);
        }
        int emptied = empty_dir(fd, depth);
        if (unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
            rc = 0;
            break;
        }
        if (emptied < 0 || (errno != ENOTEMPTY && errno != EEXIST)) break; /* no use trying again */
    }
    close(fd);
    return rc;
}

/* A file, a link or a whole folder. */
static int remove_entry(int parent, const char *name)
{
    if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) return 0;
    return errno == EISDIR || errno == EPERM ? remove_dir_at(parent, name, 0) : -1;
}

int pl_remove_tree(const char *dir)
{
    int rc = remove_entry(AT_FDCWD, dir);
    live_remove(dir); /* a pl_make_temp_dir folder's registration ends with it */
    return rc;
}

/* mkdtemp's folder, but registered under its name before it is made, as pl_out's files are:
 * a signal in between finds nothing to remove, and one after finds it registered. (Blocking
 * the signals around mkdtemp instead would only send them to another thread, OpenBLAS's, whose
 * handler would run before the folder is registered.) A name that exists already is never
 * registered, so the handler cannot remove another's folder. */
static int make_dir_in(const char *env, const char *dflt, const char *name, char *out, size_t n,
                       pl_err *err)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const char *base = getenv(env);
    int w = snprintf(out, n, "%s/%s-XXXXXX", base && *base ? base : dflt, name);
    if (w < 0 || (size_t)w >= n)
        return out[0] = 0, pl_err_set(err, "the temporary folder's path is too long");
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    static uint64_t made;
    uint64_t s =
        (uint64_t)getpid() << 40 ^ (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 20 ^ ++made;
    int e = EEXIST;
    for (int tries = 0; tries < 1000 && e == EEXIST; tries++) {
        for (int i = 0; i < 6; i++)
            out[w - 6 + i] = chars[pl_rng_next(&s) % 62];
        struct stat st;
        if (lstat(out, &st) == 0) continue;
        live_add(out, true);
        if (mkdir(out, 0700) == 0) return 0;
        e = errno;
        live_remove(out);
    }
    char tried[4096];
    snprintf(tried, sizeof tried, "%s", out);
    out[0] = 0;
    return pl_err_set(err, "cannot make the folder %s: %s", tried, strerror(e));
}

int pl_make_temp_dir(const char *name, char *out, size_t n, pl_err *err)
{
    return make_dir_in("TMPDIR", "/tmp", name, out, n, err);
}

int pl_make_shm_dir(const char *name, char *out, size_t n, pl_err *err)
{
    return make_dir_in("PLACER_SHM_DIR", "/dev/shm", name, out, n, err);
}

/* Removes the temporary folders ".NAME.tmp.PID" beside tmp (ours) left by processes that no
 * longer exist (killed with SIGKILL: a split of a large model leaves hundreds of MB). A PID
 * that is alive, even reused by another program, keeps its folder. */
static void remove_stale(const char *tmp)
{
    const char *slash = strrchr(tmp, '/'), *base = slash ? slash + 1 : tmp;
    size_t dir_len = slash ? (size_t)(slash - tmp) + 1 : 0;
    /* ".NAME.tmp.": NAME may hold ".tmp." itself, so the last one ends the prefix */
    const char *last = strstr(base, ".tmp."), *next;
    while ((next = strstr(last + 1, ".tmp.")))
        last = next;
    size_t prefix = (size_t)(last - base) + 5;
    char *dir = dir_len ? pl_strndup(tmp, dir_len) : pl_strdup("./");
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *pid = e->d_name + prefix, *end = pid;
        if (strncmp(e->d_name, base, prefix) || !*pid) continue;
        while (*end >= '0' && *end <= '9')
            end++;
        long p = strtol(pid, NULL, 10);
        if (*end || p <= 0 || p == (long)getpid() || kill((pid_t)p, 0) == 0 || errno != ESRCH)
            continue;
        char *stale = pl_malloc(strlen(dir) + strlen(e->d_name) + 1);
        sprintf(stale, "%s%s", dir, e->d_name);
        pl_remove_tree(stale);
        free(stale);
    }
    if (d) closedir(d);
    free(dir);
}

int pl_outdir_open(pl_outdir *o, const char *path, pl_err *err)
{
    memset(o, 0, sizeof *o);
    o->path = pl_strdup(path);
    o->tmp = pl_out_tmp_name(path);
    pl_remove_tree(o->tmp); /* a folder left by a killed process that had our PID */
    remove_stale(o->tmp);
    live_add(o->tmp, true); /* before it exists: a signal in between finds nothing */
    if (mkdir(o->tmp, 0777) < 0) {
        pl_err_set(err, "%s: cannot create %s beside it: %s", path, o->tmp, strerror(errno));
        live_remove(o->tmp);
        free(o->tmp), free(o->path);
        memset(o, 0, sizeof *o);
        return -1;
    }
    return 0;
}

/* Puts the complete folder tmp in place of path. With an old folder there, the two are
 * exchanged in one step where the kernel can (renameat2), else the old one is first renamed
 * aside: either way path is, at every instant, the old folder whole, the new one whole, or
 * (only in the fallback's gap between two renames) absent. The old one ends at tmp's name. */
static int swap_in(const char *tmp, const char *path)
{
    if (rename(tmp, path) == 0) return 0; /* nothing there, or an empty folder */
    if (errno != EEXIST && errno != ENOTEMPTY) return -1;
#ifdef RENAME_EXCHANGE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
#endif
    char *aside = pl_malloc(strlen(tmp) + 8);
    sprintf(aside, "%s.old", tmp);
    int rc = rename(path, aside);
    if (rc == 0 && (rc = rename(tmp, path)) != 0)
        rename(aside, path);
    else if (rc == 0)
        rename(aside, tmp);
    free(aside);
    return rc;
}

int pl_outdir_commit(pl_outdir *o, pl_err *err)
{
    /* the new folder's entries, then the folder itself in its parent, before it replaces
     * anything (its files were synced as they were committed) */
    int rc = sync_dir(o->tmp) == 0 && sync_parent(o->tmp) == 0 ? 0 : -1;
    if (rc == 0) {
        pthread_mutex_lock(&gate);
        rc = swap_in(o->tmp, o->path);
        int e = errno;
        pthread_mutex_unlock(&gate);
        errno = e;
    }
    if (rc != 0) {
        pl_err_set(err,
                   "%s: cannot put the new folder in place: %s (the old one, if any, is as "
                   "it was)",
                   o->path, strerror(errno));
        pl_outdir_abort(o);
        return -1;
    }
    sync_parent(o->path);
    pl_outdir_abort(o); /* removes the old folder, now at the temporary's name */
    return 0;
}

void pl_outdir_abort(pl_outdir *o)
{
    if (o->tmp) pl_remove_tree(o->tmp);
    free(o->tmp), free(o->path);
    memset(o, 0, sizeof *o);
}

/* ---- files committed as one ---- */

/* The commit under way, for the signal handler: what each member's rename and backup have
 * reached. Each step's flag is raised before the step, so a signal between a step and its flag
 * finds the flag up; the undo of every step is harmless when the step was not taken (see
 * rollback). */
enum { IDLE, COMMITTING, COMMITTED };
static struct {
    volatile sig_atomic_t stage, n;
    pid_t tid; /* the committing thread */
    const char *path[PL_OUTSET_MAX], *tmp[PL_OUTSET_MAX];
    char *backup[PL_OUTSET_MAX]; /* ".NAME.tmp.PID.old": the old file, while it exists */
    volatile sig_atomic_t backed[PL_OUTSET_MAX], renamed[PL_OUTSET_MAX];
} cm;

/* Async-signal-safe (rename, unlink, access). Until the last rename every member gets its old
 * file back: a backup made by link() is the old file under a second name, so renaming it over
 * the member restores the old file whether the new one was renamed there or not (rename
 * between two names of one file does nothing and succeeds; the second name is then
 * unlinked); a backup kept only when it was renamed back, so nothing old is ever deleted. A
 * member that had no old file loses the new one, if its temporary is gone (renamed there).
 * After the last rename the new files stay and only the backups go. */
static void rollback(void)
{
    if (cm.stage == IDLE) return;
    /* in another thread (a signal the kernel gave to one of OpenBLAS's): the commit goes on
     * meanwhile, so undoing it here would race it; it is a few renames, let it end */
    for (int ms = 0; gettid() != cm.tid && cm.stage != IDLE && ms < 5000; ms++) {
        struct timespec one = {0, 1000000};
        nanosleep(&one, NULL);
    }
    if (cm.stage == IDLE || gettid() != cm.tid) return;
    for (int k = cm.n - 1; k >= 0; k--) {
        if (cm.stage == COMMITTED) {
            if (cm.backed[k]) unlink(cm.backup[k]);
            continue;
        }
        if (cm.backed[k] && rename(cm.backup[k], cm.path[k]) == 0)
            unlink(cm.backup[k]);
        else if (!cm.backed[k] && cm.renamed[k] && access(cm.tmp[k], F_OK) != 0)
            unlink(cm.path[k]);
        unlink(cm.tmp[k]);
    }
}

/* path's member target (a symbolic link's target, as pl_out) into *out, or why it cannot be
 * one: only a regular file is replaced with another (a folder named FILE.json, a pipe or a
 * device cannot take part in a rename that may have to be undone). */
static int member_target(const char *path, char **out, bool *exists, pl_err *err)
{
    struct stat st;
    *out = NULL;
    *exists = stat(path, &st) == 0;
    if (!*exists && errno != ENOENT) return pl_err_set(err, "%s: %s", path, strerror(errno));
    if (*exists && !S_ISREG(st.st_mode))
        return pl_err_set(err, "%s: is %s, not a file: refusing to replace it", path,
                          S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
    bool direct;
    *out = target(path, &direct);
    return 0;
}

int pl_outset_add(pl_outset *s, const char *path, pl_err *err)
{
    PL_ASSERT(s->n < PL_OUTSET_MAX);
    if (s->n == PL_OUTSET_MAX) return pl_err_set(err, "%s: too many files in one output", path);
    char *real;
    bool exists;
    if (member_target(path, &real, &exists, err) < 0) return -1;
    char *tmp = pl_out_tmp_name(real);
    live_add(tmp, false);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        pl_err_set(err, "%s: cannot create %s beside it: %s", path, tmp, strerror(errno));
        live_remove(tmp);
        free(tmp), free(real);
        return -1;
    }
    close(fd);
    s->path[s->n] = real, s->tmp[s->n] = tmp;
    return s->n++;
}

void pl_outset_abort(pl_outset *s)
{
    for (int k = 0; k < s->n; k++) {
        unlink(s->tmp[k]);
        live_remove(s->tmp[k]);
        free(s->tmp[k]), free(s->path[k]);
    }
    memset(s, 0, sizeof *s);
}

/* Every member checked again and its temporary on disk, before anything is renamed. */
static int preflight(pl_outset *s, bool *had, pl_err *err)
{
    for (int k = 0; k < s->n; k++) {
        char *again;
        if (member_target(s->path[k], &again, &had[k], err) < 0) return -1;
        free(again);
        int fd = open(s->tmp[k], O_RDONLY | O_CLOEXEC);
        int rc = fd >= 0 ? fsync(fd) : -1, e = errno;
        if (fd >= 0) close(fd);
        if (rc < 0) return pl_err_set(err, "%s: %s: %s", s->path[k], s->tmp[k], strerror(e));
    }
    return 0;
}

/* The old file kept under the backup's name: a second link (the member keeps its old file
 * throughout), or where the file system has none, the old file renamed aside. */
static int keep_old(int k)
{
    unlink(cm.backup[k]); /* one left by a killed process that had our PID */
    cm.backed[k] = 1;
    if (link(cm.path[k], cm.backup[k]) == 0 || rename(cm.path[k], cm.backup[k]) == 0) return 0;
    cm.backed[k] = 0;
    return -1;
}

static int swap_members(const bool *had, pl_err *err)
{
    for (int k = 0; k < cm.n; k++)
        if (had[k] && keep_old(k) < 0)
            return pl_err_set(err, "%s: cannot keep the old file aside while replacing it: %s",
                              cm.path[k], strerror(errno));
    for (int k = 0; k < cm.n; k++) {
        cm.renamed[k] = 1;
        if (rename(cm.tmp[k], cm.path[k]) < 0)
            return pl_err_set(err, "%s: cannot put the new file in place: %s", cm.path[k],
                              strerror(errno));
    }
    return 0;
}

int pl_outset_commit(pl_outset *s, pl_err *err)
{
    bool had[PL_OUTSET_MAX] = {false};
    int rc = preflight(s, had, err);
    if (rc == 0) {
        memset((void *)&cm, 0, sizeof cm);
        cm.n = s->n;
        for (int k = 0; k < s->n; k++) {
            cm.path[k] = s->path[k], cm.tmp[k] = s->tmp[k];
            cm.backup[k] = pl_malloc(strlen(s->tmp[k]) + 8);
            sprintf(cm.backup[k], "%s.old", s->tmp[k]);
        }
        pthread_mutex_lock(&gate);
        cm.tid = gettid();
        cm.stage = COMMITTING;
        rc = swap_members(had, err);
        if (rc == 0) cm.stage = COMMITTED;
        rollback(); /* the old files back, or (committed) only the backups removed */
        pthread_mutex_unlock(&gate);
        for (int k = 0; k < s->n; k++)
            if (rc == 0) sync_parent(s->path[k]);
        cm.stage = IDLE;
        for (int k = 0; k < s->n; k++)
            free(cm.backup[k]);
    }
    if (rc < 0 && err) {
        size_t at = strlen(err->msg);
        snprintf(err->msg + at, sizeof err->msg - at,
                 " (nothing was replaced: the old files, if any, are as they were)");
    }
    pl_outset_abort(s);
    return rc;
}
