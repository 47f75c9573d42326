/* fusion.c: the fused kernels a runtime makes of a graph, matched by fusion rules (ordered
 * op-type lists). The coarsening's fusion pass (MOIRAI Algorithm 1, GCOF; docs/coarsen.md)
 * groups them and the cost model prices them as one kernel (docs/cost.md, "Runtime fusion"):
 * both call pl_fusion_match, so a rule means the same group to both. The cost model always
 * prices the built-in rules (what onnxruntime fuses); a coarsening given its own rule file
 * (pl_coarsen_opts) groups by those instead, and its groups need not be fused kernels.
 *
 * From each ungrouped op in topological order, every rule starting with its type is matched
 * greedily: element k is an ungrouped op of that type that reads a tensor the partial group
 * produces (or, failing that, reads a tensor the group reads: the tanh GELU starts with two
 * siblings of x). A partial match is bound tentatively and released when the rule cannot be
 * completed or the completed group is not a valid fused kernel; the longest valid match wins. */
#include "placer/graph.h"

#include <stdlib.h>
#include <string.h>

/* Each rule stands for a fusion a real runtime performs (docs/coarsen.md); the comment names
 * the onnxruntime graph transformer that makes it on the CPU (basic, extended or layout level,
 * all on by default; docs/cost.md, "Runtime fusion"). Torch exports fold BatchNormalization
 * into Conv, so the BN rules only fire on graphs exported without folding. */
static const char *const default_rules[][12] = {
    {"Conv", "BatchNormalization"},                /* ConvBNFusion (basic) */
    {"Conv", "BatchNormalization", "Relu"},        /* ConvBNFusion + ConvActivationFusion */
    {"Conv", "BatchNormalization", "Add", "Relu"}, /* ConvBNFusion + NchwcTransformer (layout) */
    {"Conv", "Relu"},                              /* ConvActivationFusion (extended) */
    {"Conv", "Add", "Relu"},                       /* NchwcTransformer's Conv+Sum+Relu (layout) */
    {"MatMul", "Add"},                             /* MatMulAddFusion (extended) */
    {"Gemm", "Relu"},                              /* GemmActivationFusion (extended) */
    {"MatMul", "Add", "Gelu"},                     /* MatMulAddFusion + BiasGeluFusion */
    /* LayerNormFusion (extended): LayerNorm as torch decomposes it (opset < 17) */
    {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"},
    /* GeluFusion (extended): erf form (BERT) and tanh form (GPT-2, FastGeluFusion); after the
     * MatMul+Add feeding it, BiasGeluFusion */
    {"Div", "Erf", "Add", "Mul", "Mul"},
    {"Mul", "Pow", "Mul", "Add", "Mul", "Tanh", "Add", "Mul"},
    {"MatMul", "Add", "Div", "Erf", "Add", "Mul", "Mul"},
    {"MatMul", "Add", "Mul", "Pow", "Mul", "Add", "Mul", "Tanh", "Add", "Mul"},
};

void pl_fusion_rules_add(pl_fusion_rules *r, const char *const *types, int n)
{
    r->rules = pl_realloc(r->rules, (size_t)(r->n + 1) * sizeof *r->rules);
    pl_fusion_rule *x = &r->rules[r->n++];
    x->n = n;
    x->types = pl_malloc((size_t)n * sizeof *x->types);
    for (int k = 0; k < n; k++)
        x->types[k] = pl_strdup(types[k]);
}

pl_fusion_rules *pl_fusion_rules_default(void)
{
    pl_fusion_rules *r = pl_calloc(1, sizeof *r);
    for (size_t i = 0; i < sizeof default_rules / sizeof default_rules[0]; i++) {
        int n = 0;
        while (n < 12 && default_rules[i][n])
            n++;
        pl_fusion_rules_add(r, default_rules[i], n);
    }
    return r;
}

void pl_fusion_rules_free(pl_fusion_rules *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        for (int k = 0; k < r->rules[i].n; k++)
            free(r->rules[i].types[k]);
        free(r->rules[i].types);
    }
    free(r->rules);
    free(r);
}

#define MAX_RULE 64

typedef struct match {
    int ops[MAX_RULE];
    int n;
} match;

static bool in_match(const match *m, int op)
{
    for (int k = 0; k < m->n; k++)
        if (m->ops[k] == op) return true;
    return false;
}

typedef struct fu_state {
    const pl_graph *g;
    const pl_reach *reach;
    const unsigned char *taken; /* in a group already */
} fu_state;

/* Ops of class CONTROL are never fused with anything. */
static bool free_op(const fu_state *s, int op)
{
    return !s->taken[op] && s->g->ops[op].cls != PL_CLASS_CONTROL;
}

/* Adding c must not close a path that leaves the group and comes back (a cycle once the group
 * is one op): no op outside reached from the group may feed c, and c may not reach an op
 * outside that feeds the group. */
static bool makes_cycle(fu_state *s, const match *m, int c)
{
    const pl_graph *g = s->g;
    for (int k = g->pred_off[c]; k < g->pred_off[c + 1]; k++) {
        int p = g->pred[k];
        if (in_match(m, p)) continue;
        for (int j = 0; j < m->n; j++)
            if (pl_reach_query(s->reach, m->ops[j], p)) return true;
    }
    for (int j = 0; j < m->n; j++)
        for (int k = g->pred_off[m->ops[j]]; k < g->pred_off[m->ops[j] + 1]; k++) {
            int p = g->pred[k];
            if (p != c && !in_match(m, p) && pl_reach_query(s->reach, c, p)) return true;
        }
    return false;
}

static bool candidate(fu_state *s, const match *m, int c, const char *type, bool sibling)
{
    if (in_match(m, c) || !free_op(s, c) || strcmp(s->g->ops[c].type, type) != 0) return false;
    /* the rule's order is the kernel's: a later element never feeds the first */
    if (sibling && pl_reach_query(s->reach, c, m->ops[0])) return false;
    return !makes_cycle(s, m, c);
}

/* The earliest (topological) op of `type` reading a tensor that the group produces
 * (sibling = false) or reads (sibling = true); -1 if none. */
static int pick(fu_state *s, const match *m, const char *type, bool sibling)
{
    const pl_graph *g = s->g;
    int best = -1;
    for (int j = 0; j < m->n; j++) {
        const pl_op *op = &g->ops[m->ops[j]];
        int n = sibling ? op->n_inputs : op->n_outputs;
        const int *ts = sibling ? op->inputs : op->outputs;
        for (int k = 0; k < n; k++) {
            if (ts[k] < 0) continue;
            const pl_tensor *t = &g->tensors[ts[k]];
            /* ops that share only a weight are not one kernel's siblings; a weight shared by
             * thousands of ops (a tied embedding) would make every match scan them all */
            if (sibling && (t->flags & PL_TENSOR_WEIGHT)) continue;
            for (int i = 0; i < t->n_consumers; i++) {
                int c = t->consumers[i];
                if ((best < 0 || g->topo_pos[c] < g->topo_pos[best]) &&
                    candidate(s, m, c, type, sibling))
                    best = c;
            }
        }
    }
    return best;
}

/* A fused kernel exposes only its last result: exactly one member (the sink) has outputs that
 * no member reads, and every other member's outputs are read only inside the group, so no
 * member sits on a multi-output connection. */
static bool valid_kernel(const fu_state *s, const match *m)
{
    const pl_graph *g = s->g;
    int sinks = 0;
    for (int j = 0; j < m->n; j++) {
        const pl_op *op = &g->ops[m->ops[j]];
        bool feeds = false, leaks = false;
        for (int k = 0; k < op->n_outputs; k++) {
            if (op->outputs[k] < 0) continue;
            const pl_tensor *t = &g->tensors[op->outputs[k]];
            if (t->flags & PL_TENSOR_OUTPUT) leaks = true;
            if (!t->n_consumers) leaks = true;
            for (int i = 0; i < t->n_consumers; i++) {
                if (in_match(m, t->consumers[i]))
                    feeds = true;
                else
                    leaks = true;
            }
        }
        if (!feeds)
            sinks++;
        else if (leaks)
            return false;
    }
    return sinks == 1;
}

static bool match_rule(fu_state *s, const pl_fusion_rule *r, int root, match *m)
{
    if (r->n > MAX_RULE || strcmp(s->g->ops[root].type, r->types[0]) != 0) return false;
    m->n = 1;
    m->ops[0] = root;
    for (int k = 1; k < r->n; k++) {
        int c = pick(s, m, r->types[k], false);
        if (c < 0) c = pick(s, m, r->types[k], true);
        if (c < 0) return false; /* released: the partial match is dropped */
        m->ops[m->n++] = c;
    }
    return valid_kernel(s, m);
}

void pl_fusion_match(const pl_graph *g, const pl_fusion_rules *r, const pl_reach *reach,
                     int *root_of, int *rule_count)
{
    pl_reach *own = reach ? NULL : pl_graph_reach(g);
    unsigned char *taken = pl_calloc((size_t)g->n_ops + 1, 1);
    fu_state s = {.g = g, .reach = reach ? reach : own, .taken = taken};
    for (int op = 0; op < g->n_ops; op++)
        root_of[op] = op;
    for (int i = 0; i < g->n_ops; i++) {
        int root = g->topo[i];
        if (!free_op(&s, root)) continue;
        match best = {.n = 0}, m;
        int best_rule = -1;
        for (int k = 0; k < r->n; k++)
            if (match_rule(&s, &r->rules[k], root, &m) && m.n > best.n) {
                best = m;
                best_rule = k;
            }
        if (best_rule < 0) continue;
        for (int j = 0; j < best.n; j++) {
            root_of[best.ops[j]] = root;
            taken[best.ops[j]] = 1;
        }
        if (rule_count) rule_count[best_rule]++;
    }
    free(taken);
    pl_reach_free(own);
}
