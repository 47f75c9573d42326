/* rw_internal.h: what the rewrite module's files share (model.c: the ModelProto and edits on it,
 * rules.c: the rule table, matchers and builders, rewrite.c: find, apply, greedy, replay).
 * Private prefix rw_. */
#ifndef PLACER_RW_INTERNAL_H
#define PLACER_RW_INTERNAL_H

#include "placer/rewrite.h"
#include "onnx/onnx.pb-c.h"

struct pl_rw_model {
    Onnx__ModelProto *m; /* unpacked with the default allocator: edits use malloc/free too */
    char *name;          /* for messages: the file, or the buffer's name */
};

/* ---- one edit of a model's top-level graph (model.c) ---- */
typedef struct rw_edit {
    Onnx__GraphProto *gp;
    const pl_graph *g; /* the graph of the model before the edit */
    int64_t opset;     /* default-domain opset */
    int fresh;         /* counter behind rw_fresh */
} rw_edit;

/* Index of the node named `name` in gp, or -1. */
int rw_node_index(const Onnx__GraphProto *gp, const char *name);
/* The initializer named `name`, or NULL. */
Onnx__TensorProto *rw_init(const Onnx__GraphProto *gp, const char *name);
/* The float values of a FLOAT initializer (malloc'd, numel of them), or NULL when it is
 * weightless (no payload). */
float *rw_floats(const Onnx__TensorProto *t, int64_t *numel);
/* Adds an initializer; data (bytes, little-endian) NULL: weightless. */
Onnx__TensorProto *rw_add_init(rw_edit *e, const char *name, int dtype, const int64_t *dims,
                               int rank, const void *data, size_t bytes);
/* A name not used by any node, tensor or value info of the graph: "base_rwK" (malloc'd). */
char *rw_fresh(rw_edit *e, const char *base);
/* A new node (strings copied), not yet in the graph. */
Onnx__NodeProto *rw_node(const char *type, const char *name, const char *const *ins, int n_in,
                         const char *const *outs, int n_out);
void rw_attr_int(Onnx__NodeProto *n, const char *name, int64_t v);
void rw_attr_ints(Onnx__NodeProto *n, const char *name, const int64_t *v, int k);
/* Inserts node at position pos (0..n_node) / removes the node at pos (freed). */
void rw_insert_node(rw_edit *e, size_t pos, Onnx__NodeProto *n);
void rw_remove_node(rw_edit *e, size_t pos);
/* Replaces every read of tensor `from` by `to` in the graph's nodes (subgraphs included). */
void rw_rename_uses(Onnx__GraphProto *gp, const char *from, const char *to);
/* Sets a string field to a copy of s, freeing what was there. */
void rw_set_str(char **field, const char *s);
/* Drops initializers nothing reads (and their graph-input entries) and value infos of tensors
 * no node produces. */
void rw_prune(rw_edit *e);
/* Puts into `read` every tensor name a node of gp reads (subgraphs' nodes too, outer-scope
 * reads included) and every graph output. Keys point into gp. */
void rw_mark_reads(const Onnx__GraphProto *gp, pl_strmap *read);
/* Whether tensor `name` is a graph output. */
bool rw_is_output(const Onnx__GraphProto *gp, const char *name);

/* ---- rules (rules.c) ---- */
typedef struct rw_rule {
    pl_rw_rule pub;
    const char *anchor; /* op type of ops[0] */
    /* Fills ops (anchor first, at most PL_RW_MAX_SITE) and returns their count when the rule
     * applies at op `op` of g, 0 when it does not. */
    int (*match)(const pl_graph *g, int op, int *ops);
    /* Rewrites e->gp at the matched ops (g's indices, named as in the model). */
    int (*build)(rw_edit *e, const int *ops, int n, pl_err *err);
} rw_rule;

extern const rw_rule rw_rule_table[];
extern const int rw_n_rules;

#endif
