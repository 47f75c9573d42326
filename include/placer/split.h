/* split.h: a placed model cut into stages, one runnable ONNX file per stage (docs/split.md).
 *
 * A stage is a group of ops on one device that runs as one ONNX graph: it starts when every
 * tensor it reads from other stages has arrived and sends what other stages read when it ends.
 * Stages form a DAG, so running them one by one in the order given here (or concurrently, as
 * their inputs arrive) computes the whole model.
 *
 * Constant ops are not sent between stages: each stage that reads a Constant's value holds its
 * own copy of the node. The Constant is owned by the stage of its first reader (topological
 * order), or, when nothing reads it, by a stage of the device the plan gives it.
 *
 * Semantics, exactly: every op of the graph is owned by exactly one stage (a Constant's node
 * also copied into each other stage that reads it), a stage's ops all on one device; a stage reads
 * only tensors made by earlier stages (or graph inputs, weights and Constants' values), so the
 * stages in their order compute exactly the whole model's outputs.
 *
 * Ownership and failure: pl_stages and pl_split_manifest are the caller's, zeroed at entry and
 * freed (and zeroed) by their _free; on failure (-1, err set) they hold nothing to free. The
 * files of pl_split_write are replaced whole or not at all (below). */
#ifndef PLACER_SPLIT_H
#define PLACER_SPLIT_H

#include "placer/plan.h"

/* How a device's ops are cut into stages (docs/split.md). FEWEST: as few stages per device as
 * the greedy merge finds (a stage sends its outputs when it ends, so work merged after a send
 * holds the receiver back). SCHEDULE: the plan's run of each device (its order, else
 * topological) cut before every op that receives from another device and after every op that
 * sends to one, so stages overlap as the simulator's ops do. Both are acyclic for a plan whose
 * per-device order respects the graph's edges. */
typedef enum { PL_SPLIT_FEWEST, PL_SPLIT_SCHEDULE } pl_split_cut;

typedef struct pl_stage {
    int dev;
    int *ops; /* the ops it owns, in topological order */
    int n_ops;
    int *consts; /* Constant ops owned by another stage and copied here, topological order */
    int n_consts;
    int *inputs; /* tensors it reads that are graph inputs or other stages' outputs */
    int n_inputs;
    int *outputs; /* tensors it makes that other stages read or that are graph outputs */
    int n_outputs;
    int *weights; /* initializers its ops read (shared ones appear in every reader) */
    int n_weights;
    double weight_bytes, copied_weight_bytes; /* pl_stage_io's: its weights' bytes, and those
                                                 an earlier stage holds too */
    int threads; /* onnxruntime intra-op threads to run it with: its device's cores
                    (pl_split_set_threads); 0 or 1: one */
} pl_stage;

typedef struct pl_stages {
    pl_stage *st; /* in a valid execution order: every stage reads only earlier stages */
    int n;
    pl_split_cut cut; /* how they were cut (written to the manifest) */
    int n_ops, n_tensors;
    int *stage_of; /* op → owning stage */
    int *maker;    /* tensor → stage that makes it and sends it; -1 for graph inputs, weights
                      and the values of Constants (copied, never sent) */
} pl_stages;

/* Cuts the graph into stages by the plan's devices. `g` must be finalized; `p` covers g's ops.
 * pl_split_stages is pl_split_stages_by with PL_SPLIT_FEWEST. */
int pl_split_stages(const pl_graph *g, const pl_plan *p, pl_stages *out, pl_err *err);
int pl_split_stages_by(const pl_graph *g, const pl_plan *p, pl_split_cut cut, pl_stages *out,
                       pl_err *err);
void pl_stages_free(pl_stages *s);
/* Each stage runs with as many intra-op threads as its device in c has cores (pl_device.cores,
 * docs/clusters.md "Cores"); pl_split_write puts them in the manifest. */
void pl_split_set_threads(pl_stages *s, const pl_cluster *c);
/* How many distinct devices the stages run on. */
int pl_stages_devices(const pl_stages *s);
/* The stages (indices, ascending) other than the maker that read tensor t; returns the count
 * and fills `to` (room for s->n). */
int pl_split_readers(const pl_graph *g, const pl_stages *s, int t, int *to);

/* The manifest's format. Version 2 gives each stage file's SHA-256; version 1 manifests are
 * refused (re-run placer split). */
#define PL_SPLIT_FORMAT "placer-split/2"

/* Writes DIR/stage_00.onnx, ... (one ModelProto per stage, with the source's IR version,
 * opsets, producer and functions; the stage's nodes, the initializers they read, graph inputs
 * = source inputs and tensors from other stages, graph outputs = source outputs it makes and
 * tensors other stages read) and DIR/manifest.json (PL_SPLIT_FORMAT, with each stage file's
 * SHA-256). `model_path` is the file g was read from: it is read again for the nodes and
 * weights, so it must be the same model (checked by node count and types); a graph read from
 * a task graph (info.format not "onnx") is refused before anything is written. `dev_names`
 * names devices for the manifest (NULL: "dev0", ...).
 *
 * The folder is replaced whole: everything is written into the hidden sibling ".DIR.tmp.PID"
 * (pl_outdir), which takes DIR's place only when complete; on any failure DIR is left as it
 * was. DIR may be absent (its parents are created), an empty folder, or a previous split (a
 * manifest.json of format placer-split/N); anything else is refused, so that a user's folder
 * is never deleted. */
int pl_split_write(const char *model_path, const pl_graph *g, const pl_stages *s,
                   const char *const *dev_names, const char *dir, pl_err *err);

/* A split read back from DIR/manifest.json: what running it needs. */
typedef struct pl_split_stage_ref {
    char *name;   /* "stage_00" */
    char *path;   /* DIR/stage_00.onnx */
    char *device; /* the cluster's device name */
    int threads;  /* intra-op threads (the manifest's "threads"; 1 when it gives none) */
} pl_split_stage_ref;

typedef struct pl_split_manifest {
    char *model_path, *model_sha256; /* the model split (placer run --plan checks the hash) */
    pl_split_cut cut;
    pl_split_stage_ref *st; /* in the manifest's (runnable) order */
    int n;
} pl_split_manifest;

/* Reads DIR/manifest.json (PL_SPLIT_FORMAT). Refused, with the file and JSON path: another
 * format (placer-split/1: re-run placer split), no stages, a stage file outside DIR or named
 * twice, an input from a stage that does not come earlier, and a stage file whose SHA-256 is
 * not the one the manifest gives (a file swapped, edited or damaged), naming the stage, the
 * file and both hashes. Each stage file is read once for the check. */
int pl_split_manifest_load(const char *dir, pl_split_manifest *m, pl_err *err);
void pl_split_manifest_free(pl_split_manifest *m);

#endif
