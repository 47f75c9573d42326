/* testutil.h: what every cmocka test file here needs. Tests run from the repo root. */
#ifndef PLACER_TESTUTIL_H
#define PLACER_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <math.h>
#include <cmocka.h>

#include "placer/graph.h"

/* Loads a model or task graph that must load; fails the test with the reader's message. */
pl_graph *tu_load(const char *path);
/* Loads a file that must be refused; returns the message (static buffer). */
const char *tu_load_fails(const char *path);
/* Small graphs for tests: a graph named "t" with one float input "x" of shape [2,3]; and an
 * op reading the comma-separated tensors `ins` and writing `outs` (NULL: none), tensors
 * created on first use. */
pl_graph *tu_graph_with_input(void);
int tu_op(pl_graph *g, const char *name, const char *type, const char *ins, const char *outs);
/* Runs the placer binary (PLACER_BIN, default build/placer) with `args` through the shell,
 * stdout and stderr captured into *out (malloc'd; stderr only when `args` does not redirect
 * it). Returns the exit status. */
int tu_run(const char *args, char **out);
/* tu_run with no file of the command allowed to grow past `max_bytes` (RLIMIT_FSIZE, with
 * SIGXFSZ ignored so that a write past it fails with EFBIG, as on a full disk). */
int tu_run_fsize(const char *args, long max_bytes, char **out);
/* tu_run that must exit 2 (bad input) and print `needle`, and no sanitizer report. */
void tu_expect_refusal(const char *args, const char *needle);
/* Fails the test, saying to run `make deps`, when onnxruntime-node is not installed. */
#define TU_ORT_PKG "build/npm/node_modules/onnxruntime-node/package.json"
void tu_require_ort(void);
/* The same for a group setup: -1 after saying so when it is missing, else 0. */
int tu_ort_setup(void);
/* tu_run that must exit 0 and print one JSON document, which it returns (json_decref it). */
struct json_t *tu_run_json(const char *args);
/* Points PLACER_BIN at `mpirun -np N --oversubscribe ... build/placer-mpi` (leak checks off
 * for the ranks) and returns true; returns false, printing why, when mpirun or placer-mpi is
 * missing (the caller then skips). tu_mpi_end restores PLACER_BIN. */
bool tu_mpi_begin(int n_ranks);
/* The MPI program `name` in PLACER_BIN's build folder ("placer-mpi", "tests/dist_driver") into
 * path; false, printing why, when it or mpirun is missing (the caller then skips). */
bool tu_mpi_program(const char *name, char *path, size_t n);
void tu_mpi_end(void);
/* The number at key k of a JSON object (fails the test when it is not one); and the element
 * of a JSON document's array `list` whose string `field` equals `value` (fails when none). */
double tu_num(struct json_t *o, const char *k);
struct json_t *tu_find(struct json_t *doc, const char *list, const char *field, const char *value);
/* A fresh directory /tmp/PREFIX-XXXXXX into buf (0, or -1); and its removal with its files. */
int tu_mkdtemp(char *buf, size_t n, const char *prefix);
int tu_rmtree(const char *dir);
/* A private $TMPDIR for tests that check a run leaves nothing behind: a fresh folder
 * (tu_mkdtemp) exported as TMPDIR (0, or -1); its end gives TMPDIR back the value it had
 * (tools/run_tests.sh gives each binary its own) and removes the folder. Not nested. */
int tu_tmpdir_begin(char *buf, size_t n, const char *prefix);
int tu_tmpdir_end(const char *dir);
/* Fails the test naming the first entry of `dir`, when it has one. */
void tu_expect_empty_dir(const char *dir);
/* A fake onnxruntime worker (for PLACER_ORT_WORKER) written to dir/failing.js, its path into
 * js: it loads nothing (the last load request it got goes to dir/load.json, one line) and,
 * asked anything else (run, profile), writes its pid to
 * dir/failed.pid and sends itself `sig`: "SIGSTOP" (a stalled worker) or "SIGKILL" (one
 * that dies mid-request). */
void tu_failing_worker(const char *dir, const char *sig, char *js, size_t n);
/* The pid that worker wrote: it must be gone (killed and reaped, not left stopped). */
void tu_expect_worker_gone(const char *dir);
/* The edge index of tensor `tensor` read by op `dst` (finalized graph); fails when none. */
int tu_edge(const pl_graph *g, const char *tensor, const char *dst);
/* Adds an INTS attribute of n values to op o. */
void tu_attr_ints(pl_graph *g, int o, const char *name, int n, const int64_t *v);
/* One 3x3 Conv "conv", 64 -> 64 channels on n x 64 x 56 x 56 (X, W, Y), padded to keep the
 * size, in dtype dt; finalized and inferred (the cost tests' worked example). */
pl_graph *tu_conv_graph(int n, int dt);
/* A task graph (placer-taskgraph/1 JSON text, named "t.json") that must load; and the cost
 * table of g on c with default parameters, which must build. Both fail the test with the
 * reader's message. */
struct pl_cluster;
struct pl_cost;
pl_graph *tu_taskgraph(const char *text);
struct pl_cost *tu_cost(const pl_graph *g, const struct pl_cluster *c);
/* A plan for g by algorithm `algo` on the cluster file `cluster` (default cost parameters). */
struct pl_plan *tu_plan(const pl_graph *g, const char *cluster, const char *algo);
/* Writes `len` bytes to a fresh temporary file and returns its path (static buffer). */
const char *tu_tmpfile(const void *data, size_t len, const char *suffix);
/* Relative comparison |a-b| <= tol*max(|a|,|b|,1e-300). */
#define assert_close(a, b, tol)                                                                    \
    do {                                                                                           \
        double a_ = (a), b_ = (b), m_ = fabs(a_) > fabs(b_) ? fabs(a_) : fabs(b_);                 \
        if (!(fabs(a_ - b_) <= (tol) * (m_ > 1e-300 ? m_ : 1e-300)))                               \
            fail_msg("%s = %.12g, expected %.12g (rel tol %g)", #a, a_, b_, (double)(tol));        \
    } while (0)

/* Fails unless `needle` occurs in the string `hay` (an error message, a command's output). */
#define assert_contains(hay, needle)                                                               \
    do {                                                                                           \
        if (!strstr((hay), (needle))) fail_msg("\"%s\" lacks \"%s\"", (hay), (needle));            \
    } while (0)

/* ---- the training tests' Dense layer (test_train_compile.c, test_tag_gnn.c) ---- */
#include "placer/train.h"

/* y = x W (4 ms), a loss giving dy (free), dW = x^T dy (4 ms), Adam on W (1 ms); W and dW of
 * 1 MB, activations of 8 MB (batch 8); on the cluster JSON `cluster` (two devices; NULL: two
 * V100s on one host, 1 GB/s apart, no latency), each its own device group. n_groups 1: one op group
 * of the four ops; 2: forward {A, loss} (4 ms) and backward {A:grad_w, W:adam} (5 ms, W's 1 MB). */
typedef struct tu_dense {
    pl_train_graph t;
    pl_cluster *c;
    pl_train_ctx x;
} tu_dense;
void tu_dense_build(tu_dense *f, const char *cluster, int n_groups);
void tu_dense_free(tu_dense *f);
/* The iteration time of strategy s on f's context (INFINITY: does not fit); fails the test when
 * it cannot be evaluated. */
double tu_dense_eval_s(const tu_dense *f, const pl_train_strategy *s);
/* The pieces, for other hand-built training graphs: a tensor of `bytes` (PL_TENSOR_BYTES_ONLY
 * | flags); an op of class Dense taking ms on a V100, reading in[0..n_in) and making out; and
 * f's context around f->t (its graph finalized) on `cluster` (NULL: the two V100s): each
 * device its own device group, one op group of every op (time_s, param_bytes), the cost
 * table. tu_dense_free frees it all. */
int tu_dense_tensor(pl_graph *g, const char *name, double bytes, unsigned flags);
int tu_dense_op(pl_graph *g, const char *name, double ms, const int *in, int n_in, int out);
void tu_dense_ctx(tu_dense *f, const char *cluster, double time_s, double param_bytes);

#endif
