/* test_faults.c: every verb that writes a file or a folder, under the faults docs/formats.md
 * ("Interrupted writes") promises to survive: a missing folder, a read-only file system, a
 * full disk, SIGINT and SIGTERM in the middle of a run. Each case asserts the exit status (2;
 * for a signal, death by that signal), the old output byte for byte, nothing beside it, and
 * no temporary left in TMPDIR (a fresh one per case) or /dev/shm.
 *
 * Each case runs in a forked child with a private mount namespace (unshare(CLONE_NEWNS)),
 * where the read-only and full file systems are small tmpfs mounts, and /dev/shm a fresh tmpfs
 * of its own, so that another program's files there are never taken for a leftover. Where
 * mounts cannot be made (not root, no CAP_SYS_ADMIN), the read-only and full cases are
 * skipped saying why, and /dev/shm is compared by its placer-* entries before and after. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LOCAL "examples/clusters/local-cpu-percore.json"
#define AWS "examples/platforms/aws-lambda.json"
/* a MILP that uses its whole time limit */
#define MOIRAI                                                                                     \
    "models/inception_v3.onnx --cluster examples/clusters/moirai-intra-server.json --algo "        \
    "moirai --time-limit 5s"
#define LP_FAST "--topologies 1 --iterations 5 --rounds 1 --steps 1 --min-visits 1"

enum { K_FILE, K_DIR, K_PAIR, K_NONE };         /* the output: OUT, folder OUT, OUT + OUT.json */
enum { W_OUT = -1, W_TMPDIR = -2, W_SHM = -3 }; /* mid-run once that holds a temporary */

typedef struct verb {
    const char *name;
    int kind;
    const char *args; /* {OUT} the output, {FIX} the fixtures; NULL: nothing to write */
    const char *slow; /* a run long enough to be signalled mid-run; NULL: none (why: in name) */
    int watch;        /* W_*, or the delay in ms before the signal */
} verb;

static const verb verbs[] = {
    {"place -o", K_FILE, "place models/gcn_cora.onnx --cluster " LOCAL " --algo heft -o {OUT}",
     "place " MOIRAI " -o {OUT}", 500},
    {"place --trace", K_FILE,
     "place models/gcn_cora.onnx --cluster " LOCAL " --algo heft --trace {OUT}",
     "place " MOIRAI " --trace {OUT}", 500},
    {"place --report", K_FILE,
     "place models/gcn_cora.onnx --cluster " LOCAL " --algo heft --report {OUT}",
     "place " MOIRAI " --report {OUT}", 500},
    {"report -o", K_FILE, "report {FIX}/place.json -o {OUT}", NULL, 0},
    {"simulate --trace", K_FILE,
     "simulate models/gcn_cora.onnx --cluster " LOCAL " --plan {FIX}/p.json --trace {OUT}", NULL,
     0},
    {"split -o", K_DIR,
     "split models/gcn_cora.onnx --cluster " LOCAL " --plan {FIX}/p.json -o {OUT}", NULL, 0},
    {"deploy -o", K_FILE,
     "deploy models/gcn_cora.onnx --catalog catalogs/autodeep-testbed.json --slo 50ms -o {OUT}",
     "deploy models/resnet50.onnx --catalog catalogs/autodeep-testbed.json --slo 50ms -o {OUT}",
     700},
    {"optimize -o", K_FILE, "optimize models/gcn_cora.onnx -o {OUT}",
     "optimize models/bert_base.onnx -o {OUT}", 500},
    {"profile -o", K_FILE, "profile models/gcn_cora.onnx --repeat 1 -o {OUT}",
     "profile models/resnet50.onnx --repeat 200 -o {OUT}", 500},
    {"profile --collectives -o", K_FILE, "profile --collectives --np 2 --max-bytes 1MB -o {OUT}",
     "profile --collectives --np 2 --max-bytes 64MB -o {OUT}", 500},
    {"calibrate -o", K_FILE, "calibrate {FIX}/prof.json --model models/gcn_cora.onnx -o {OUT}",
     NULL, 0},
    {"learn-prior -o", K_PAIR, "learn-prior models/gcn_cora.onnx -o {OUT} " LP_FAST,
     "learn-prior models/gcn_cora.onnx -o {OUT} --topologies 2 --iterations 50 --rounds 1000000",
     W_OUT},
    {"train -o", K_FILE,
     "train models/gcn_cora.onnx --cluster examples/clusters/tag-sfb.json --budget 5 -o {OUT}",
     "train models/resnet50.onnx --cluster examples/clusters/tag-sfb.json --budget 100000 -o "
     "{OUT}",
     500},
    {"multi -o", K_FILE,
     "multi models/gcn_cora.onnx models/rnnlm.onnx --cluster " LOCAL " --algo talos -o {OUT}",
     "multi models/gcn_cora.onnx models/rnnlm.onnx --cluster " LOCAL
     " --algo talos --run --repeat 100000 -o {OUT}",
     W_TMPDIR},
    {"serverless -o", K_DIR, "serverless models/gcn_cora.onnx --platform " AWS " -o {OUT}", NULL,
     0},
    {"serverless --run", K_NONE, NULL,
     "serverless models/rnnlm.onnx --platform " AWS " --algo mopar --run --repeat 100000", W_SHM},
    {"run --trace", K_FILE, "run {FIX}/s --trace {OUT}",
     "run {FIX}/s --repeat 100000 --trace {OUT}", 500},
};
#define N_VERBS (int)(sizeof verbs / sizeof *verbs)

static char fix[64]; /* plan, split and profile the verbs above read */

/* ---- small helpers (the child reports a failure by message and exit status 1) ---- */

static _Noreturn void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    _exit(1);
}

static _Noreturn void not_here(const char *why, const char *what)
{
    printf("  skipped: %s (%s)\n", why, what);
    fflush(stdout);
    _exit(77);
}

/* text with {OUT} and {FIX} replaced */
static void expand(const char *text, const char *out, char *buf, size_t n)
{
    size_t at = 0;
    for (const char *c = text; *c && at + 1 < n;) {
        const char *with = !strncmp(c, "{OUT}", 5) ? out : !strncmp(c, "{FIX}", 5) ? fix : NULL;
        if (with) {
            at += (size_t)snprintf(buf + at, n - at, "%s", with);
            c += 5;
        } else
            buf[at++] = *c++;
    }
    buf[at < n ? at : n - 1] = 0;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bad("cannot write %s: %s", path, strerror(errno));
}

static void expect_text(const char *path, const char *want)
{
    char got[256] = "";
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
    if (f) fclose(f);
    got[n] = 0;
    if (!f || strcmp(got, want)) bad("%s: the old output was changed (now \"%s\")", path, got);
}

/* The entries of dir (not . and ..) whose names start with prefix, joined by spaces. */
static void entries(const char *dir, const char *prefix, char *buf, size_t n)
{
    buf[0] = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            !strncmp(e->d_name, prefix, strlen(prefix)))
            snprintf(buf + strlen(buf), n - strlen(buf), "%s ", e->d_name);
    if (d) closedir(d);
}

/* ---- one case ---- */

typedef struct fcase {
    const verb *v;
    char root[64], out_dir[128], out[160], tmp[128], log[128];
    char shm_before[4096];
    bool own_shm; /* /dev/shm is a fresh tmpfs of this case */
} fcase;

/* The old output at c->out: a file "old\n", a previous split's folder, or the pair. */
static void old_output(const fcase *c)
{
    char p[256];
    if (c->v->kind == K_DIR) {
        if (mkdir(c->out, 0777) < 0) bad("mkdir %s: %s", c->out, strerror(errno));
        snprintf(p, sizeof p, "%s/manifest.json", c->out);
        put(p, "{\"format\": \"placer-split/1\"}\n");
    } else if (c->v->kind != K_NONE)
        put(c->out, "old\n");
    if (c->v->kind == K_PAIR) snprintf(p, sizeof p, "%s.json", c->out), put(p, "old json\n");
}

static void check_old_output(const fcase *c, const char *extra)
{
    char p[256], want[256], got[4096];
    const char *base = strrchr(c->out, '/') + 1;
    if (c->v->kind == K_DIR) {
        snprintf(p, sizeof p, "%s/manifest.json", c->out);
        expect_text(p, "{\"format\": \"placer-split/1\"}\n");
        entries(c->out, "", got, sizeof got);
        if (strcmp(got, "manifest.json ")) bad("%s holds: %s", c->out, got);
    } else if (c->v->kind != K_NONE)
        expect_text(c->out, "old\n");
    if (c->v->kind == K_PAIR)
        snprintf(p, sizeof p, "%s.json", c->out), expect_text(p, "old json\n");
    /* nothing beside it: no temporary, no backup, no half file */
    entries(c->out_dir, "", got, sizeof got);
    snprintf(want, sizeof want, "%s%s%s%s%s", c->v->kind == K_NONE ? "" : base,
             c->v->kind == K_NONE ? "" : " ", c->v->kind == K_PAIR ? base : "",
             c->v->kind == K_PAIR ? ".json " : "", extra);
    char a[4200], b[300];
    /* the order of readdir is the file system's: compare as sets of names */
    snprintf(a, sizeof a, " %s", got), snprintf(b, sizeof b, " %s", want);
    bool same = strlen(a) == strlen(b);
    for (char *t = strtok(b, " "); same && t; t = strtok(NULL, " ")) {
        char k[300];
        snprintf(k, sizeof k, " %s ", t);
        same = strstr(a, k) != NULL;
    }
    if (!same) bad("%s holds \"%s\", not just \"%s\"", c->out_dir, got, want);
}

static void check_no_temporaries(const fcase *c)
{
    char got[4096];
    entries(c->tmp, "", got, sizeof got);
    if (got[0]) bad("TMPDIR %s holds: %s", c->tmp, got);
    entries("/dev/shm", c->own_shm ? "" : "placer-", got, sizeof got);
    if (strcmp(got, c->shm_before)) bad("/dev/shm holds: %s (before: %s)", got, c->shm_before);
}

/* A private mount namespace with its own /dev/shm; false when this process may not have one. */
static bool private_mounts(void)
{
    return unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

static void setup(fcase *c, const verb *v, const char *root, bool mounts)
{
    memset(c, 0, sizeof *c);
    c->v = v;
    snprintf(c->root, sizeof c->root, "%s", root);
    snprintf(c->tmp, sizeof c->tmp, "%s/tmp", c->root);
    snprintf(c->out_dir, sizeof c->out_dir, "%s/out", c->root);
    snprintf(c->out, sizeof c->out, "%s/output", c->out_dir);
    snprintf(c->log, sizeof c->log, "%s/log", c->root);
    if (mkdir(c->tmp, 0700) < 0 || mkdir(c->out_dir, 0700) < 0) bad("mkdir: %s", strerror(errno));
    c->own_shm = mounts && mount("none", "/dev/shm", "tmpfs", 0, "size=256m") == 0;
    entries("/dev/shm", c->own_shm ? "" : "placer-", c->shm_before, sizeof c->shm_before);
}

static pid_t start(const fcase *c, const char *args)
{
    char line[2048], cmd[2600];
    const char *bin = getenv("PLACER_BIN");
    expand(args, c->out, line, sizeof line);
    snprintf(cmd, sizeof cmd, "exec %s %s >%s 2>&1", bin && *bin ? bin : "build/placer", line,
             c->log);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TMPDIR", c->tmp, 1);
        /* the three signals as a terminal gives them: under nohup SIGHUP comes ignored, which
         * placer rightly leaves ignored and untaken, and check_signals_taken would fail */
        signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL), signal(SIGHUP, SIG_DFL);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int finish(const fcase *c, pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) bad("waitpid: %s", strerror(errno));
    (void)c;
    return st;
}

/* finish, but a process still alive `secs` after its signal is killed and the case fails
 * (once, the suite hung here: a learn-prior run went on after SIGTERM; never reproduced) */
static int finish_within(const fcase *c, pid_t pid, int secs)
{
    int st;
    for (int t = 0; t < secs * 100; t++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return st;
        if (r < 0 && errno != EINTR) bad("waitpid: %s", strerror(errno));
        struct timespec ten = {0, 10000000};
        nanosleep(&ten, NULL);
    }
    kill(pid, SIGKILL);
    finish(c, pid);
    bad("still running %d s after the signal (killed)", secs);
    return 0;
}

static void expect_exit_2(const fcase *c, int st)
{
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 2) {
        char log[2048] = "";
        FILE *f = fopen(c->log, "r");
        size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
        if (f) fclose(f);
        log[n] = 0;
        bad("status %d (%s %d), not exit 2; it printed:\n%s", st, WIFEXITED(st) ? "exit" : "signal",
            WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), log);
    }
}

/* Fills the file system of dir until it is full. */
static void fill(const char *dir)
{
    char p[256], block[1024];
    memset(block, 'x', sizeof block);
    snprintf(p, sizeof p, "%s/filler", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) bad("%s: %s", p, strerror(errno));
    while (write(fd, block, sizeof block) > 0)
        ;
    while (write(fd, block, 1) > 0)
        ;
    close(fd);
}

enum { C_MISSING, C_READONLY, C_FULL, C_SIGINT, C_SIGTERM };
static const char *const case_names[] = {"missing folder", "read-only file system", "full disk",
                                         "SIGINT mid-run", "SIGTERM mid-run"};

/* Every thread of a running placer blocks SIGINT, SIGTERM and SIGHUP, but the one waiting for
 * them (in rt_sigtimedwait, syscall 128 on x86-64, where sigwait's mask is lifted): a thread
 * that takes them would run whatever handler a library swapped in, as METIS's that swallowed
 * a SIGTERM or deadlocked in malloc (common.h, pl_out_take_signals). Mid-run, every pool is
 * up. */
static int threads_waiting(pid_t pid)
{
    char dir[64], path[384], line[256];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d) bad("%s: %s", dir, strerror(errno));
    int waiting = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        unsigned long long blk = 0;
        snprintf(path, sizeof path, "%s/%s/status", dir, e->d_name);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "SigBlk:", 7)) blk = strtoull(line + 7, NULL, 16);
        if (f) fclose(f);
        unsigned long long want =
            1ull << (SIGINT - 1) | 1ull << (SIGTERM - 1) | 1ull << (SIGHUP - 1);
        if ((blk & want) == want) continue;
        snprintf(path, sizeof path, "%s/%s/syscall", dir, e->d_name);
        f = fopen(path, "r");
        long nr = f && fgets(line, sizeof line, f) ? strtol(line, NULL, 10) : -1;
        if (f) fclose(f);
        if (nr == 128 && !waiting++) continue;
        char tid[256]; /* e dies with d */
        snprintf(tid, sizeof tid, "%s", e->d_name);
        closedir(d);
        kill(pid, SIGKILL); /* a placer that would not die of the signal must not outlive us */
        bad("thread %s takes SIGINT/SIGTERM/SIGHUP (blocked mask %llx, in syscall %ld)", tid, blk,
            nr);
    }
    closedir(d);
    return waiting;
}

/* threads_waiting, given the waiting thread the time to get there: it is started at placer's
 * start, but on a busy machine may not have run yet (its mask, inherited, blocks them all). */
static void check_signals_taken(pid_t pid)
{
    for (int t = 0; t < 200; t++) {
        if (threads_waiting(pid) == 1) return;
        struct timespec ten = {0, 10000000};
        nanosleep(&ten, NULL);
    }
    kill(pid, SIGKILL);
    bad("no thread waits for the signals (2 s)");
}

/* The moment a slow run is mid-run: its watched temporary exists, or the delay has passed. */
static void wait_mid_run(const fcase *c, pid_t pid)
{
    char got[4096];
    int ms = c->v->watch > 0 ? c->v->watch : 30000;
    for (int t = 0; t < ms; t++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) bad("it ended before the signal: make it longer");
        if (c->v->watch == W_OUT) entries(c->out_dir, ".", got, sizeof got);
        if (c->v->watch == W_TMPDIR) entries(c->tmp, "placer-", got, sizeof got);
        if (c->v->watch == W_SHM) {
            entries("/dev/shm", c->own_shm ? "" : "placer-", got, sizeof got);
            if (!strcmp(got, c->shm_before)) got[0] = 0;
        }
        if (c->v->watch < 0 && got[0]) return;
        struct timespec one = {0, 1000000};
        nanosleep(&one, NULL);
    }
    if (c->v->watch < 0) kill(pid, SIGKILL), bad("no temporary appeared within %d s", ms / 1000);
}

static void run_case(const verb *v, int kind, const char *root)
{
    bool mounts = private_mounts();
    fcase c;
    setup(&c, v, root, mounts);
    const char *extra = "";
    if (kind == C_MISSING) {
        snprintf(c.out_dir, sizeof c.out_dir, "%s/missing", c.root);
        snprintf(c.out, sizeof c.out, "%s/output", c.out_dir);
    } else if (kind == C_READONLY || kind == C_FULL) {
        if (!mounts) not_here("no private mount namespace here", strerror(errno));
        if (mount("none", c.out_dir, "tmpfs", 0, "size=64k") < 0)
            not_here("cannot mount a tmpfs", strerror(errno));
        old_output(&c);
        if (kind == C_FULL) fill(c.out_dir), extra = "filler ";
        if (kind == C_READONLY && mount(NULL, c.out_dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
            not_here("cannot remount the tmpfs read-only", strerror(errno));
    } else
        old_output(&c);
    pid_t pid = start(&c, kind >= C_SIGINT ? v->slow : v->args);
    if (kind >= C_SIGINT) {
        int sig = kind == C_SIGINT ? SIGINT : SIGTERM;
        wait_mid_run(&c, pid);
        check_signals_taken(pid);
        kill(pid, sig);
        int st = finish_within(&c, pid, 60);
        if (!WIFSIGNALED(st) || WTERMSIG(st) != sig)
            bad("status %d, not death by signal %d", st, sig);
    } else
        expect_exit_2(&c, finish(&c, pid));
    if (kind == C_MISSING) {
        struct stat st;
        if (stat(c.out_dir, &st) == 0) bad("%s was created", c.out_dir);
    } else
        check_old_output(&c, extra);
    check_no_temporaries(&c);
    if (kind == C_READONLY || kind == C_FULL) umount2(c.out_dir, MNT_DETACH);
    if (c.own_shm) umount2("/dev/shm", MNT_DETACH);
    _exit(0);
}

/* Every verb, each in a child of its own; the failures are listed together at the end. */
static void check(int kind)
{
    char failed[1024] = "";
    bool skipped = false;
    for (int k = 0; k < N_VERBS; k++) {
        const verb *v = &verbs[k];
        if (kind >= C_SIGINT && v->args && !v->slow)
            printf("  %s: %s: not run: it ends in milliseconds, no moment is mid-run (test_outputs "
                   "interrupts the pl_out writes it makes)\n",
                   v->name, case_names[kind]);
        if (kind >= C_SIGINT ? !v->slow : !v->args) continue;
        printf("  %s: %s\n", v->name, case_names[kind]);
        fflush(stdout);
        char root[64]; /* the case's folder, removed here whatever the case did */
        assert_int_equal(tu_mkdtemp(root, sizeof root, "placer-faults"), 0);
        pid_t pid = fork();
        if (pid == 0) run_case(v, kind, root);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        tu_rmtree(root);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 77) { /* said why; so would every verb */
            skipped = true;
            break;
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            snprintf(failed + strlen(failed), sizeof failed - strlen(failed), "%s%s",
                     failed[0] ? ", " : "", v->name);
    }
    if (failed[0]) fail_msg("%s failed: %s (their messages are above)", case_names[kind], failed);
    if (skipped) skip(); /* counted as skipped by make test, not as passed */
}

static void test_missing_folder(void **state)
{
    (void)state;
    check(C_MISSING);
}

static void test_read_only(void **state)
{
    (void)state;
    check(C_READONLY);
}

static void test_full_disk(void **state)
{
    (void)state;
    check(C_FULL);
}

static void test_sigint(void **state)
{
    (void)state;
    check(C_SIGINT);
}

static void test_sigterm(void **state)
{
    (void)state;
    check(C_SIGTERM);
}

/* The plan, split, profile and answer (place --json) the verbs read, made once. */
static int fixtures(void **state)
{
    (void)state;
    if (tu_ort_setup() < 0 || tu_mkdtemp(fix, sizeof fix, "placer-faults-fix") < 0) return -1;
    char args[1024], *out;
    const char *steps[] = {
        "place models/gcn_cora.onnx --cluster " LOCAL " --algo heft -o {FIX}/p.json",
        "split models/gcn_cora.onnx --cluster " LOCAL " --plan {FIX}/p.json -o {FIX}/s",
        "profile models/gcn_cora.onnx --repeat 1 -o {FIX}/prof.json",
        "place models/gcn_cora.onnx --cluster " LOCAL " --algo heft --json > {FIX}/place.json",
    };
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        expand(steps[k], "", args, sizeof args);
        int rc = tu_run(args, &out);
        if (rc != 0) fprintf(stderr, "placer %s: exit %d\n%s", args, rc, out);
        free(out);
        if (rc != 0) return -1;
    }
    return 0;
}

static int cleanup(void **state)
{
    (void)state;
    return tu_rmtree(fix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_folder), cmocka_unit_test(test_read_only),
        cmocka_unit_test(test_full_disk),      cmocka_unit_test(test_sigint),
        cmocka_unit_test(test_sigterm),
    };
    return cmocka_run_group_tests(tests, fixtures, cleanup);
}
