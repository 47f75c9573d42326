/* runtime.h: real CPU execution with onnxruntime, for measured trials (issue 6, docs/runtime.md).
 *
 * onnxruntime runs in a persistent Node process (tools/ort_worker.js, on the npm package
 * onnxruntime-node that `make deps` installs into build/npm): placer starts it once, loads the
 * model (or a set of stages) once, the expensive part, then runs many timed requests over a
 * pipe, one JSON message per line each way. A worker that crashes, answers garbage or does not
 * finish a step of a request within its deadline (pl_ort_opts.timeout_s) is killed with its
 * process group (SIGKILL, reaped) and reported as an error naming its pid, the request and how
 * far it got, and saying that the request's answer is lost. The next request, if any, starts a
 * fresh worker with the same models loaded first.
 *
 * Ownership and failure: pl_ort_start returns a worker the caller ends with pl_ort_stop (the
 * process stopped and reaped, its memory freed), also after any failed request. The results
 * of pl_ort_run, pl_ort_compare and pl_ort_profile* are the caller's, zeroed (NULL, 0) at
 * entry and freed by their _free; on failure (-1, err set) they hold nothing to free. */
#ifndef PLACER_RUNTIME_H
#define PLACER_RUNTIME_H

#include "placer/cluster.h"
#include "placer/common.h"
#include "placer/cost.h"

/* placer's own files, found from the executable, never from the working directory
 * (docs/runtime.md, "Files"): `installed` under the install prefix (PREFIX/bin/placer ->
 * PREFIX/`installed`, e.g. "share/placer/catalogs/aws.json"), else `in_tree` under the source
 * tree the library was built from (e.g. "catalogs/aws.json"). The path goes into out; -1 with
 * both places named in err when neither exists. */
int pl_own_file(const char *installed, const char *in_tree, char *out, size_t n, pl_err *err);
/* The per-user cache folder `sub` (e.g. "inflated"): $PLACER_CACHE/sub, else
 * $XDG_CACHE_HOME/placer/sub, else ~/.cache/placer/sub. Not created here. */
int pl_cache_dir(const char *sub, char *out, size_t n, pl_err *err);

/* Writes a copy of the ONNX file `src` whose weightless tensors (dims but no data) hold
 * made-up values of the right size, as cache_dir/<sha256 of src>-inflate1.onnx (the name says
 * all that shapes it: the source's content and the version of the made-up values), with its own
 * SHA-256 beside it in <entry>.sha256, and puts that path in out. An entry is used only when
 * its SHA-256 is the recorded one; a damaged entry (flipped bytes, truncated, no record) is
 * rebuilt with a warning on stderr. Both files are written to a temporary name in cache_dir and
 * renamed, so no reader sees half an entry. A model without weightless tensors is not copied:
 * out gets src itself. Returns 1 when it wrote the entry, 0 when it did not (already in the
 * cache and whole, or out is src), -1 on error. src is read once, whole (its hash names the
 * entry); the entry is read once more to check it. Models with external data are refused, and so is
 * every model the ONNX reader (pl_onnx_load) refuses: nothing reaches onnxruntime without passing
 * it. */
int pl_inflate_model(const char *src, const char *cache_dir, char *out, size_t n, pl_err *err);

typedef struct pl_ort_opts {
    const char *node;    /* NULL: $PLACER_NODE, else "node" (on PATH) */
    const char *script;  /* NULL: $PLACER_ORT_WORKER, else placer's own (pl_own_file:
                            lib/placer/ort_worker.js installed, tools/ort_worker.js in tree) */
    const char *modules; /* node_modules holding onnxruntime-node; NULL: $PLACER_ORT_MODULES,
                            else placer's own (lib/placer/node_modules installed,
                            build/npm/node_modules in tree) */
    double timeout_s;    /* the deadline of one step of a request (starting, loading a model,
                            one inference request; docs/runtime.md, "Deadlines"), after which
                            the worker is taken as stalled and killed; 0:
                            $PLACER_ORT_DEADLINE, else 60 s plus 60 s per GB of the models */
    int threads;         /* intra-op threads per session; 0: 1 */
    bool no_optimize;    /* graph optimisation "disabled" instead of "all" */
    int int_high;        /* random integer inputs are in [0, int_high); 0: 2 */
    unsigned seed;       /* of the random inputs */
    const char *ep;      /* the execution provider of pl_ort_profile's sessions: "cpu" (NULL)
                            or "cuda" (onnxruntime-node's CUDA build, docs/runtime.md,
                            "Profiling on a GPU"); every other request runs on the CPU */
} pl_ort_opts;

typedef struct pl_ort pl_ort;

#define PL_ORT_FIRST 8
typedef struct pl_ort_output {
    char name[128];
    int tenant; /* whose output (pl_ort_load_tenants); 0 without tenants */
    int rank;
    long long dims[8];
    double checksum;            /* sum of all values */
    bool finite;                /* no NaN or infinity anywhere */
    int n_first;                /* values in first[] */
    double first[PL_ORT_FIRST]; /* the first values, for a look */
} pl_ort_output;

typedef struct pl_ort_result {
    int repeat, n_stages, n_outputs;
    bool concurrent;   /* the stages ran on device threads (pl_ort_load_on with 2+ devices) */
    double *latency_s; /* [repeat]: one request, first input to last output */
    double *stage_s;   /* [repeat * n_stages]: each stage's own run time */
    double *start_s;   /* [repeat * n_stages]: when each stage started, from the request's start */
    double *end_s;     /* [repeat * n_stages]: when it ended */
    pl_ort_output *outputs; /* the last stage's outputs and every output no stage reads (of
                               each tenant, pl_ort_load_tenants) */
} pl_ort_result;
void pl_ort_result_free(pl_ort_result *r);

/* Starts the worker and waits for it to say it is ready (onnxruntime-node found). */
pl_ort *pl_ort_start(const pl_ort_opts *o, pl_err *err);
/* Loads models[0..n) as the stages of one request, in this order: a stage's inputs named like
 * an earlier stage's outputs are fed from them; the rest are random. Replaces what was loaded.
 * The worker keeps the paths so that a worker started again (runtime.h, top) loads them. */
int pl_ort_load(pl_ort *w, const char *const *paths, int n, pl_err *err);
/* The same, with each stage on a device: devices[i] names stage i's device (NULL: as
 * pl_ort_load). Every device gets a thread of its own in the worker holding its stages'
 * sessions; a stage runs as soon as its inputs have arrived, so stages of different devices
 * overlap (each session has the options' intra-op threads: 1 is one core per device). Stages
 * of one device run in the order given; when every stage names one device they run on the
 * worker's main thread instead (pl_ort_load_stages; the result is then not `concurrent`). A
 * stage may read only tensors of earlier stages. */
int pl_ort_load_on(pl_ort *w, const char *const *paths, const char *const *devices, int n,
                   pl_err *err);
/* The same, with the stages of several independent models ("tenants") at once: tenants[i] is
 * stage i's (NULL: all 0, which is pl_ort_load_on). A stage's inputs are fed only from earlier
 * stages of its own tenant, so tensor names of different tenants may be the same (the same
 * model given twice is two tenants); each tenant's random inputs come from a generator of its
 * own seeded with the options' seed, i.e. what it would get loaded alone; a request starts
 * every tenant at once, and returns each tenant's outputs (pl_ort_output::tenant). Stages of
 * one device run in the order given, whatever their tenant. Kept for a worker started again
 * as the paths are. */
int pl_ort_load_tenants(pl_ort *w, const char *const *paths, const char *const *devices,
                        const int *tenants, int n, pl_err *err);
/* The same, with each stage's onnxruntime intra-op threads: threads[i] >= 1 for stage i (a
 * stage of a device with that many cores, pl_split_set_threads); NULL: the options' threads
 * for every stage. Stages of one model that all name one device run on the worker's main
 * thread, in order, as pl_ort_load runs a model (a device thread of their own only cost
 * time). Kept for a worker started again as the paths are. */
int pl_ort_load_stages(pl_ort *w, const char *const *paths, const char *const *devices,
                       const int *tenants, const int *threads, int n, pl_err *err);
/* Loads the split that pl_split_manifest_load read: every stage file inflated into cache_dir
 * (pl_inflate_model: a weightless split gets the same made-up weights as its whole model),
 * then pl_ort_load_stages with the manifest's devices (none when `sequential`) and threads. */
struct pl_split_manifest;
int pl_ort_load_split(pl_ort *w, const struct pl_split_manifest *m, const char *cache_dir,
                      bool sequential, pl_err *err);
/* A plan's stages as runnable files, what running a plan for real needs (pl_multi_run, the
 * ort trial worker's pl_trial_measure_plan): the model g, read from model_path, cut by the plan
 * with PL_SPLIT_SCHEDULE into *s, written to the folder `dir` (pl_split_write, `dev_names`
 * naming the devices) and each stage file inflated into cache_dir (pl_inflate_model). paths[j]
 * gets stage j's runnable file (malloc'd; paths has room for g->n_ops + 1, the most stages a
 * split has). On failure *s and the paths made so far are still the caller's to free. */
struct pl_graph;
struct pl_plan;
struct pl_stages;
int pl_split_runnable(const char *model_path, const struct pl_graph *g, const struct pl_plan *p,
                      const char *const *dev_names, const char *dir, const char *cache_dir,
                      struct pl_stages *s, char **paths, pl_err *err);
/* Runs `warmup` untimed requests, then `repeat` timed ones. */
int pl_ort_run(pl_ort *w, int repeat, int warmup, pl_ort_result *r, pl_err *err);
/* As pl_ort_run, each timed request after the device threads idled gap_s seconds (0 to 10):
 * what a model finds in the caches when it waits between requests, as a tenant waits for its
 * round's others (docs/multi.md, "Fidelity of --run"). gap_s 0 is pl_ort_run. */
int pl_ort_run_spaced(pl_ort *w, int repeat, int warmup, double gap_s, pl_ort_result *r,
                      pl_err *err);
/* A tensor as a raw file (pl_ort_run_files): its bytes as a typed array holds them
 * (row-major, little-endian), with its dtype ("float32", "int64", ...) and dims. */
typedef struct pl_ort_file {
    char *name, *path; /* malloc'd */
    char dtype[16];
    int rank;
    long long dims[8];
    size_t bytes;
    bool made; /* an input the worker made up (random, as pl_ort_run), not an output */
} pl_ort_file;
void pl_ort_files_free(pl_ort_file *f, int n);

/* One request of what pl_ort_load loaded (without devices), its inputs in[0..n_in) read from
 * raw files; the inputs not given are made as pl_ort_run makes them (the options' seed and
 * int_high). Every output of the request, and every input it made, is written as a raw file
 * into the existing folder out_dir; they come back in *out (n_out of them, free with
 * pl_ort_files_free; NULL on failure), with the time inside onnxruntime in *run_s. */
int pl_ort_run_files(pl_ort *w, const pl_ort_file *in, int n_in, const char *out_dir,
                     pl_ort_file **out, int *n_out, double *run_s, pl_err *err);
/* How the stages of a split agree with the whole model on one output (pl_ort_compare). */
typedef struct pl_ort_diff {
    char name[128];
    double max_rel; /* max|a-b| / max(max|a|, 1e-6), a the model's values, b the stages' */
    double max_abs; /* max|a-b| */
    bool finite;    /* no NaN or infinity on either side */
} pl_ort_diff;

typedef struct pl_ort_compare_result {
    int n_outputs;
    pl_ort_diff *outputs; /* one per graph output of the model */
    double max_rel;       /* the largest over the outputs */
    bool finite;          /* every output finite on both sides */
    double reference_s;   /* one run of the whole model */
    double stages_s;      /* one run of the stages, one after the other */
} pl_ort_compare_result;
void pl_ort_compare_result_free(pl_ort_compare_result *r);

/* Runs the model `reference` and the stages[0..n) (in this order, each stage's inputs fed by
 * name from the model's inputs or earlier stages' outputs) on the same random inputs (the
 * options' seed and int_high) and compares every graph output of the model. All files must be
 * runnable: weightless ones are inflated by the caller, each with pl_inflate_model, which
 * gives an initializer or Constant the same values in every file that holds it (values are
 * seeded by the tensor's name). What pl_ort_load loaded stays loaded; the reference's session
 * is kept for the next compare of the same model. */
int pl_ort_compare(pl_ort *w, const char *reference, const char *const *stages, int n,
                   pl_ort_compare_result *r, pl_err *err);
/* pl_ort_node_time, one node's measured kernel time, is in cost.h: cost's profile reads it. */
void pl_ort_node_times_free(pl_ort_node_time *t, int n);

/* Runs `model` (runnable: inflate weightless files first) in a session of its own with graph
 * optimisation off and onnxruntime's profiler on, one warm-up and `repeat` timed requests on
 * random inputs (the options' seed, int_high and threads), and returns every node that got a
 * kernel time in *out (n of them, to free with pl_ort_node_times_free). What pl_ort_load loaded
 * stays loaded. */
int pl_ort_profile(pl_ort *w, const char *model, int repeat, pl_ort_node_time **out, int *n,
                   pl_err *err);
/* With pl_ort_opts.ep "cuda" the times are the GPU's only: onnxruntime runs the nodes it has no
 * CUDA kernel for on the CPU, and those are left out of *out (pl_ort_profile_off_ep counts
 * them); a profile where none ran on the GPU (onnxruntime fell back to the CPU) fails, naming
 * the provider they ran on. */
/* The same with graph optimisation on, as a run executes the model: the nodes are then
 * onnxruntime's (fused kernels, NCHWc convolutions named after their output tensor), not the
 * file's, so the times do not map to ops one to one (pl_machine_calibrate uses their op types). */
int pl_ort_profile_optimized(pl_ort *w, const char *model, int repeat, pl_ort_node_time **out,
                             int *n, pl_err *err);
/* The nodes of the last profile that ran on another execution provider than the options'
 * ep asked for, left out of its times (0 for "cpu": every node counts). */
int pl_ort_profile_off_ep(const pl_ort *w);
/* What the worker process counts: model loads and timed runs since it started. */
int pl_ort_stats(pl_ort *w, long *loads, long *runs, pl_err *err);
int pl_ort_pid(const pl_ort *w);       /* the worker's process id (its process group too) */
int pl_ort_restarts(const pl_ort *w);  /* how many times a request started it again */
double pl_ort_load_s(const pl_ort *w); /* the last load's time, as the worker measured it */
/* Asks the worker to quit, kills it if it does not within a second, reaps it. NULL is fine. */
void pl_ort_stop(pl_ort *w);

/* ---- NVIDIA GPUs (src/runtime/gpu.c; docs/runtime.md, "Profiling on a GPU") ----
 * This machine's GPUs as the driver names them ("Tesla V100-SXM2-16GB"), found without
 * starting onnxruntime: the "Model:" line of every DIR/gpus/<bus id>/information, DIR being
 * $PLACER_NVIDIA_PROC, else /proc/driver/nvidia; when that names none, the lines of
 * `nvidia-smi --query-gpu=name --format=csv,noheader` ($PLACER_NVIDIA_SMI, else nvidia-smi on
 * PATH) through the process helper, killed after 10 s. Up to max names into names[], in bus
 * order. Returns how many; 0 with err saying where it looked and why each came up empty
 * ("no /proc/driver/nvidia/gpus, no nvidia-smi"): a missing nvidia-smi is not a failure. */
#define PL_GPU_NAME 128
int pl_nvidia_gpus(char (*names)[PL_GPU_NAME], int max, pl_err *err);
/* The GPU row of placer's table (pl_gpu_spec_find) a driver's name is, once the vendor's
 * words around the model are dropped ("NVIDIA", "Tesla", "GeForce", "Quadro": "NVIDIA GeForce
 * RTX 2080 Ti" is RTX-2080-Ti); what was looked up goes into stripped (n bytes), for a
 * message. NULL when no GPU row has that name. */
const pl_gpu_spec *pl_gpu_spec_of_driver_name(const char *name, char *stripped, size_t n);

/* ---- measuring collectives with MPI (docs/runtime.md, "Measuring collectives") ----
 * `mpirun -np N placer-collbench ...` (tools/collbench.c, placer's only MPI code, built when
 * mpicc exists) times AllReduce, broadcast and point-to-point over doubling sizes and prints
 * one JSON line per size and collective, read here with a deadline per line. */
typedef struct pl_coll_sample {
    pl_collective kind;
    double bytes, s; /* median time of `reps` repetitions */
    int reps;
} pl_coll_sample;

typedef struct pl_coll_run_opts {
    const char *mpirun; /* NULL: $PLACER_MPIRUN, else mpirun on PATH */
    const char *bench;  /* NULL: $PLACER_COLLBENCH, else placer's own (pl_own_file:
                           lib/placer/placer-collbench installed, build/placer-collbench in tree) */
    int np;             /* processes; 0: 2 */
    double max_bytes;   /* the largest size; 0: 1 GiB (the benchmark cuts it to the memory) */
    int repeat;         /* timed repetitions per size; 0: 10 */
    double budget_s;    /* the benchmark's time budget; 0: 900 s */
    double timeout_s;   /* the deadline of one line (a size and collective); 0: 120 s */
} pl_coll_run_opts;

typedef struct pl_coll_run {
    pl_coll_sample *s;
    int n, np, repeat;
    double max_bytes; /* the largest size measured */
    double elapsed_s;
} pl_coll_run;

/* Runs the benchmark. mpirun that stalls past the deadline, dies or says something that is not
 * the benchmark's is reported naming mpirun, its pid and the last result heard; it and every
 * process it started are killed (SIGTERM to mpirun, then SIGKILL to what is left) and reaped. */
int pl_coll_measure(const pl_coll_run_opts *o, pl_coll_run *out, pl_err *err);
void pl_coll_run_free(pl_coll_run *r);

#endif
