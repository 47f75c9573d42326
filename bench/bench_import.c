/* bench_import.c: import time and peak memory per model, each import in its own child
 * process so that peak RSS (getrusage) belongs to that model alone. Also times the
 * reachability index and a million queries on each graph.
 *
 * usage: bench_import FILE...   (prints a table) */
#include "placer/graph.h"
#include "placer/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    int ok, ops, chains;
    double load_s, reach_s, query_ns;
    char err[256];
} result_t;

static void child(const char *path, int fd)
{
    result_t r = {0};
    pl_err err = {""};
    double t0 = pl_now();
    pl_graph *g = pl_graph_load(path, NULL, &err);
    r.load_s = pl_now() - t0;
    if (!g) {
        snprintf(r.err, sizeof r.err, "%s", err.msg);
    } else {
        r.ok = 1;
        r.ops = g->n_ops;
        t0 = pl_now();
        pl_reach *reach = pl_graph_reach(g);
        r.reach_s = pl_now() - t0;
        r.chains = pl_reach_chains(reach);
        int hits = 0, q = 1000000, n = g->n_ops ? g->n_ops : 1;
        unsigned s = 12345;
        t0 = pl_now();
        for (int k = 0; k < q; k++) {
            s = s * 1103515245u + 12345u;
            int i = (int)(s % n);
            s = s * 1103515245u + 12345u;
            hits += pl_reach_query(reach, i, (int)(s % n));
        }
        r.query_ns = (pl_now() - t0) / q * 1e9;
        if (hits < 0) puts("");
        pl_reach_free(reach);
        pl_graph_free(g);
    }
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(3);
    _exit(0);
}

int main(int argc, char **argv)
{
    pl_table *t = pl_table_new(
        "model|>file|>ops|>import s|>peak RSS|>RSS/file|>chains|>reach build s|>query ns");
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) continue;
        int p[2];
        if (pipe(p) != 0) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            child(argv[i], p[1]);
        }
        close(p[1]);
        result_t r = {0};
        ssize_t got = read(p[0], &r, sizeof r);
        close(p[0]);
        int status;
        struct rusage ru;
        wait4(pid, &status, 0, &ru);
        double rss = ru.ru_maxrss * 1024.0;
        char a[32], b[32];
        if (got != (ssize_t)sizeof r || !r.ok) {
            pl_table_row(t, "%s|%s|FAILED: %.40s||||||", argv[i], pl_fmt_bytes(st.st_size, a, 32),
                         got == (ssize_t)sizeof r ? r.err : "crashed");
            continue;
        }
        pl_table_row(t, "%s|%s|%d|%.3f|%s|%.2f|%d|%.3f|%.0f", argv[i],
                     pl_fmt_bytes(st.st_size, a, 32), r.ops, r.load_s, pl_fmt_bytes(rss, b, 32),
                     rss / st.st_size, r.chains, r.reach_s, r.query_ns);
    }
    pl_table_print(t, stdout);
    pl_table_free(t);
    return 0;
}
