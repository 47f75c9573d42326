/* fuse.c: the fusion pass (MOIRAI Algorithm 1, GCOF), matched group by group.
 *
 * From each ungrouped op in topological order, every rule starting with its type is matched
 * greedily: element k is an ungrouped op of that type that reads a tensor the partial group
 * produces (or, failing that, reads a tensor the group reads: the tanh GELU starts with two
 * siblings of x). A partial match is bound tentatively and released when the rule cannot be
 * completed or the completed group is not a valid fused kernel; the longest valid match wins. */
#include "coarsen_internal.h"

#include <string.h>

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

static bool free_op(cs_state *s, int op)
{
    return s->size[cs_find(s, op)] == 1 && s->g->ops[op].cls != PL_CLASS_CONTROL;
}

/* Adding c must not close a path that leaves the group and comes back (a cycle once the group
 * is one op): no op outside reached from the group may feed c, and c may not reach an op
 * outside that feeds the group. */
static bool makes_cycle(cs_state *s, const match *m, int c)
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

static bool candidate(cs_state *s, const match *m, int c, const char *type, bool sibling)
{
    if (in_match(m, c) || !free_op(s, c) || strcmp(s->g->ops[c].type, type) != 0) return false;
    /* the rule's order is the kernel's: a later element never feeds the first */
    if (sibling && pl_reach_query(s->reach, c, m->ops[0])) return false;
    return !makes_cycle(s, m, c);
}

/* The earliest (topological) op of `type` reading a tensor that the group produces
 * (sibling = false) or reads (sibling = true); -1 if none. */
static int pick(cs_state *s, const match *m, const char *type, bool sibling)
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
static bool valid_kernel(const cs_state *s, const match *m)
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

static bool match_rule(cs_state *s, const pl_fusion_rule *r, int root, match *m)
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

void cs_fuse(cs_state *s, const pl_fusion_rules *r)
{
    const pl_graph *g = s->g;
    for (int i = 0; i < g->n_ops; i++) {
        int root = g->topo[i];
        if (!free_op(s, root)) continue;
        match best = {.n = 0}, m;
        int best_rule = -1;
        for (int k = 0; k < r->n; k++)
            if (match_rule(s, &r->rules[k], root, &m) && m.n > best.n) {
                best = m;
                best_rule = k;
            }
        if (best_rule < 0) continue;
        for (int j = 1; j < best.n; j++)
            cs_union(s, root, best.ops[j]);
        s->rule_count[best_rule]++;
    }
}
