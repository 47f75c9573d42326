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
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- temporaries removed on SIGINT/SIGTERM/SIGHUP ---- */

/* The temporary files being written now. A slot is set before the file is created and
 * cleared after it is renamed or removed; the handler only calls unlink (async-signal-safe).
 * Outputs are written from the main thread only, so the list takes no lock. */
#define MAX_LIVE 16
static char *volatile live[MAX_LIVE];

void pl_out_remove_temporaries(void)
{
    for (int k = 0; k < MAX_LIVE; k++)
        if (live[k]) unlink(live[k]);
}

static void on_signal(int sig)
{
    pl_out_remove_temporaries();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installed on first use, and only over the default disposition: a program that handles these
 * signals itself keeps its handler (and its cleanup is its own). */
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

static void live_add(char *tmp)
{
    install_handlers();
    for (int k = 0; k < MAX_LIVE; k++)
        if (!live[k]) {
            live[k] = tmp;
            return;
        }
}

static void live_remove(const char *tmp)
{
    for (int k = 0; k < MAX_LIVE; k++)
        if (live[k] == tmp) live[k] = NULL;
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
    if (!direct) o->tmp = pl_out_tmp_name(o->path), live_add(o->tmp);
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
    if (rename(o->tmp, o->path) != 0) return write_error(o, errno, err);
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

static int rm_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return type == FTW_DP ? rmdir(p) : unlink(p);
}

int pl_remove_tree(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) < 0) return errno == ENOENT ? 0 : -1;
    return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int pl_make_temp_dir(const char *name, char *out, size_t n, pl_err *err)
{
    const char *tmp = getenv("TMPDIR");
    int w = snprintf(out, n, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (w < 0 || (size_t)w >= n)
        return out[0] = 0, pl_err_set(err, "the temporary folder's path is too long");
    if (mkdtemp(out)) return 0;
    int e = errno;
    char tried[4096];
    snprintf(tried, sizeof tried, "%s", out);
    out[0] = 0;
    return pl_err_set(err, "cannot make the folder %s: %s", tried, strerror(e));
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
    if (mkdir(o->tmp, 0777) < 0) {
        pl_err_set(err, "%s: cannot create %s beside it: %s", path, o->tmp, strerror(errno));
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
    if (rc == 0) rc = swap_in(o->tmp, o->path);
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
