/* mpi.c: runs the collectives benchmark under mpirun and reads its results (docs/runtime.md,
 * "Measuring collectives"). placer itself links no MPI: the benchmark (tools/collbench.c) is a
 * program of its own, started as `mpirun -np N placer-collbench ...` in its own process group
 * through common.h's pl_proc, read one JSON line at a time with a deadline.
 *
 * OpenMPI's mpirun puts each rank in a process group of its own, so killing mpirun's group is
 * not enough: every process below mpirun is recorded (pid and start time, from /proc) while it
 * runs, and after a stall or a crash mpirun gets SIGTERM (it then ends its ranks), SIGKILL
 * after a grace period, and whatever recorded process is still there SIGKILL too. */
#include "placer/runtime.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MPI_DEADLINE_S 120.0 /* one size of one collective: about 4 s at 1 GB here */
#define MPI_GRACE_S 3.0      /* for mpirun to end its ranks after SIGTERM */
#define TRACKED_MAX 256
#define TRACK_EVERY_S 0.5

typedef struct tracked {
    pid_t pid;
    unsigned long long start; /* field 22 of /proc/PID/stat: tells a reused pid apart */
} tracked;

typedef struct runner {
    pl_proc p;
    tracked t[TRACKED_MAX];
    int n_t;
    char last[96]; /* the last result heard, for messages */
} runner;

/* ppid and start time of pid from /proc; -1 when it is gone. */
static int proc_stat(pid_t pid, pid_t *ppid, unsigned long long *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *r = strrchr(buf, ')'), state;
    int pp;
    /* after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime stime cutime cstime priority nice threads itrealvalue starttime */
    if (!r || sscanf(r + 1,
                     " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                     "%*d %*d %llu",
                     &state, &pp, start) != 3)
        return -1;
    *ppid = pp;
    return state == 'Z' ? -1 : 0; /* a zombie has ended */
}

static bool is_tracked(const runner *r, pid_t pid)
{
    for (int i = 0; i < r->n_t; i++)
        if (r->t[i].pid == pid) return true;
    return false;
}

/* Records every live process below mpirun (a pass over /proc per generation). */
static void track(runner *r)
{
    bool grew = true;
    while (grew && r->n_t < TRACKED_MAX) {
        grew = false;
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d)) && r->n_t < TRACKED_MAX) {
            pid_t pid = (pid_t)atoi(e->d_name), pp;
            unsigned long long start;
            if (pid <= 0 || is_tracked(r, pid) || proc_stat(pid, &pp, &start) < 0) continue;
            if (pp == r->p.pid || is_tracked(r, pp))
                r->t[r->n_t++] = (tracked){pid, start}, grew = true;
        }
        if (d) closedir(d);
    }
}

/* SIGKILL to every recorded process still alive (same pid, same start time); how many. */
static int kill_tracked(const runner *r)
{
    int killed = 0;
    for (int i = 0; i < r->n_t; i++) {
        pid_t pp;
        unsigned long long start;
        if (proc_stat(r->t[i].pid, &pp, &start) == 0 && start == r->t[i].start)
            killed += kill(r->t[i].pid, SIGKILL) == 0;
    }
    /* they are not our children: wait (briefly) until they are gone */
    for (double end = pl_now() + 2; pl_now() < end;) {
        bool alive = false;
        for (int i = 0; i < r->n_t && !alive; i++) {
            pid_t pp;
            unsigned long long start;
            alive = proc_stat(r->t[i].pid, &pp, &start) == 0 && start == r->t[i].start;
        }
        if (!alive) break;
        usleep(10000);
    }
    return killed;
}

/* Ends mpirun and everything it started; `how` says how mpirun ended. */
static void stop(runner *r, bool force, char *how, size_t n)
{
    track(r);
    pl_proc_end(&r->p, force, force ? MPI_GRACE_S : 10.0, how, n);
    kill_tracked(r);
}

static bool on_path(const char *cmd)
{
    if (strchr(cmd, '/')) return access(cmd, X_OK) == 0;
    const char *path = getenv("PATH");
    char dir[4096];
    while (path && *path) {
        size_t k = strcspn(path, ":");
        snprintf(dir, sizeof dir, "%.*s/%s", (int)k, k ? path : ".", cmd);
        if (access(dir, X_OK) == 0) return true;
        path += k + (path[k] == ':');
    }
    return false;
}

static int find_programs(const pl_coll_run_opts *o, const char **mpirun, char *bench, size_t n,
                         pl_err *err)
{
    const char *e = getenv("PLACER_MPIRUN");
    *mpirun = o->mpirun ? o->mpirun : e && *e ? e : "mpirun";
    if (!on_path(*mpirun))
        return pl_err_set(err,
                          "cannot find %s: install OpenMPI (apt-get install openmpi-bin "
                          "libopenmpi-dev; tools/deps.sh does) or set PLACER_MPIRUN",
                          *mpirun);
    e = getenv("PLACER_COLLBENCH");
    if (o->bench || (e && *e)) return snprintf(bench, n, "%s", o->bench ? o->bench : e), 0;
    pl_err inner = {""};
    if (pl_own_file("lib/placer/placer-collbench", "build/placer-collbench", bench, n, &inner) == 0)
        return 0;
    return pl_err_set(err,
                      "%s; it is built by `make` when mpicc exists (apt-get install "
                      "libopenmpi-dev openmpi-bin)",
                      inner.msg);
}

/* One line of the benchmark: the header, a result, or the end. 1 at the end. */
static int take_line(runner *r, const char *line, pl_coll_run *out, pl_err *err)
{
    json_t *j = json_loads(line, 0, NULL), *op = j ? json_object_get(j, "op") : NULL;
    int rc = 0;
    if (j && json_is_true(json_object_get(j, "done"))) {
        rc = 1;
        out->elapsed_s = json_number_value(json_object_get(j, "elapsed_s"));
    } else if (j && json_is_integer(json_object_get(j, "np"))) {
        out->np = (int)json_integer_value(json_object_get(j, "np"));
        out->repeat = (int)json_integer_value(json_object_get(j, "repeat"));
    } else if (j && json_is_string(op)) {
        pl_coll_sample s = {.kind = PL_COLL_COUNT};
        for (int k = 0; k < PL_COLL_COUNT; k++)
            if (!strcmp(json_string_value(op), pl_collective_name((pl_collective)k)))
                s.kind = (pl_collective)k;
        s.bytes = json_number_value(json_object_get(j, "bytes"));
        s.s = json_number_value(json_object_get(j, "s"));
        s.reps = (int)json_integer_value(json_object_get(j, "reps"));
        if (s.kind == PL_COLL_COUNT || !(s.bytes > 0) || !(s.s > 0) || !isfinite(s.s) ||
            s.reps < 1) {
            rc = -1;
        } else {
            out->s = pl_realloc(out->s, (size_t)(out->n + 1) * sizeof *out->s);
            out->s[out->n++] = s;
            if (s.bytes > out->max_bytes) out->max_bytes = s.bytes;
            char b[32];
            snprintf(r->last, sizeof r->last, "%s of %s", pl_collective_name(s.kind),
                     pl_fmt_bytes(s.bytes, b, sizeof b));
        }
    } else {
        rc = -1;
    }
    json_decref(j);
    if (rc < 0)
        pl_err_set(err, "mpirun (pid %d): output line \"%.200s\" is not the benchmark's",
                   (int)r->p.pid, line);
    return rc;
}

/* The next line within the deadline, looking below mpirun every TRACK_EVERY_S meanwhile, so
 * that its ranks are known even if it dies before saying anything. */
static pl_proc_rc next_line(runner *r, double deadline, char **line)
{
    double end = pl_now() + deadline;
    for (;;) {
        double left = end - pl_now();
        pl_proc_rc lr = pl_proc_line(&r->p, left < TRACK_EVERY_S ? left : TRACK_EVERY_S, line);
        if (lr != PL_PROC_TIMEOUT || left <= TRACK_EVERY_S) return lr;
        track(r);
    }
}

static char *const *make_argv(const char *mpirun, const char *bench, const pl_coll_run_opts *o,
                              char num[4][32])
{
    static char *argv[16];
    snprintf(num[0], 32, "%d", o->np > 0 ? o->np : 2);
    snprintf(num[1], 32, "%.0f", o->max_bytes > 0 ? o->max_bytes : 1073741824.0);
    snprintf(num[2], 32, "%d", o->repeat > 0 ? o->repeat : 10);
    snprintf(num[3], 32, "%g", o->budget_s > 0 ? o->budget_s : 900);
    /* root may run it (a container); more ranks than cores is allowed (2 vCPUs here) */
    const char *a[] = {mpirun,
                       "--allow-run-as-root",
                       "--oversubscribe",
                       "-np",
                       num[0],
                       bench,
                       "--max-bytes",
                       num[1],
                       "--repeat",
                       num[2],
                       "--budget-s",
                       num[3],
                       NULL};
    memcpy(argv, a, sizeof a);
    return argv;
}

static int fail_end(runner *r, bool force, const char *what, pl_err *err)
{
    char how[64], tail[PL_PROC_TAIL] = "";
    pid_t pid = r->p.pid;
    track(r);
    int n_below = r->n_t;
    stop(r, force, how, sizeof how);
    pl_proc_tail(&r->p, tail, sizeof tail);
    char below[64] = "";
    if (n_below)
        snprintf(below, sizeof below, ", and the %d processes it started were ended", n_below);
    return pl_err_set(err, "mpirun (pid %d) %s after %s; it %s%s%s%.500s", (int)pid, what, r->last,
                      how, below, *tail ? "; its stderr: " : "", tail);
}

/* The environment variable name set to value ("" leaves it) for a child started meanwhile;
 * the old value back with restore_env. */
static char *set_env(const char *name, const char *value)
{
    const char *was = getenv(name);
    char *old = was ? pl_strdup(was) : NULL;
    if (*value) setenv(name, value, 1);
    return old;
}

static void restore_env(const char *name, char *old)
{
    if (old)
        setenv(name, old, 1);
    else
        unsetenv(name);
    free(old);
}

/* mpirun started with TMPDIR set to tmp, and Open MPI's shared-memory segments in shm (a
 * pl_make_shm_dir folder: $PLACER_SHM_DIR, else /dev/shm, memory as they were), both registered
 * temporaries of placer's (common.h): its session folder and its ranks' files go there, and a
 * signal that ends placer removes them, which mpirun, killed with placer (PR_SET_PDEATHSIG), could
 * not. */
static int spawn(runner *r, const char *mpirun, const char *bench, const pl_coll_run_opts *o,
                 char num[4][32], const char *tmp, const char *shm, pl_err *err)
{
    char *old_tmp = set_env("TMPDIR", tmp),
         *old_shm = set_env("OMPI_MCA_btl_vader_backing_directory", shm);
    int rc = pl_proc_start(&r->p, make_argv(mpirun, bench, o, num), NULL, "mpirun",
                           " (install openmpi-bin or set PLACER_MPIRUN)\n", err);
    restore_env("TMPDIR", old_tmp);
    restore_env("OMPI_MCA_btl_vader_backing_directory", old_shm);
    return rc;
}

static int measure(const pl_coll_run_opts *o, const char *tmp, const char *shm, pl_coll_run *out,
                   pl_err *err)
{
    const char *mpirun;
    char bench[4096], num[4][32];
    if (find_programs(o, &mpirun, bench, sizeof bench, err) < 0) return -1;
    runner r = {.last = "the start (no result yet)"};
    if (spawn(&r, mpirun, bench, o, num, tmp, shm, err) < 0) return -1;
    double deadline = o->timeout_s > 0 ? o->timeout_s : MPI_DEADLINE_S;
    int rc = 0;
    while (rc == 0) {
        char *line = NULL, what[96];
        pl_proc_rc lr = next_line(&r, deadline, &line);
        if (lr == PL_PROC_TIMEOUT) {
            snprintf(what, sizeof what, "gave no result within the deadline of %g s", deadline);
            rc = fail_end(&r, true, what, err);
        } else if (lr == PL_PROC_EOF) {
            rc = fail_end(&r, true, "stopped before the benchmark finished", err);
        } else {
            track(&r);
            rc = take_line(&r, line, out, err);
            if (rc < 0) fail_end(&r, true, "was stopped", &(pl_err){""});
        }
        free(line);
    }
    if (rc < 0) return pl_coll_run_free(out), -1;
    char how[64];
    stop(&r, false, how, sizeof how);
    if (out->n == 0) return pl_err_set(err, "mpirun: the benchmark measured nothing");
    return 0;
}

int pl_coll_measure(const pl_coll_run_opts *o, pl_coll_run *out, pl_err *err)
{
    memset(out, 0, sizeof *out);
    char tmp[4096], shm[4096] = "";
    if (pl_make_temp_dir("placer-mpirun", tmp, sizeof tmp, err) < 0) return -1;
    pl_make_shm_dir("placer-mpi", shm, sizeof shm, NULL); /* else Open MPI's own */
    int rc = measure(o, tmp, shm, out, err);
    pl_remove_tree(tmp);
    if (shm[0]) pl_remove_tree(shm);
    return rc;
}

void pl_coll_run_free(pl_coll_run *r)
{
    if (!r) return;
    free(r->s);
    memset(r, 0, sizeof *r);
}
