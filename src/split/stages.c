/* stages.c: ops grouped into stages by device so that the stages form a DAG (docs/split.md).
 *
 * Two steps. Levels: an op's level is the largest over its predecessors of theirs, plus one
 * for a predecessor on another device; (device, level) is a first set of stages, acyclic since
 * every edge between two of them climbs a level. Merges: two stages of a device merge when no
 * path joins them through a third stage, which keeps the DAG acyclic; the closure is rebuilt
 * after each merge, so every check sees the current graph. */
#include "placer/split.h"

#include <stdlib.h>
#include <string.h>

/* ---- the stage graph as bit sets: adj[u] (direct successors) and reach[u] (closure) ---- */

typedef struct sgraph {
    int n, words;
    uint64_t *adj, *reach;
    int *dev;
    bool *alive;
    pl_uf into; /* merged stages joined into the stage that survives (the root) */
} sgraph;

#define ROW(m, u) ((m) + (size_t)(u)*sg->words)
#define HAS(row, v) (((row)[(v) >> 6] >> ((v)&63)) & 1)
#define SET(row, v) ((row)[(v) >> 6] |= (uint64_t)1 << ((v)&63))
#define CLR(row, v) ((row)[(v) >> 6] &= ~((uint64_t)1 << ((v)&63)))

/* Depth-first post-order over live stages: reach[u] = union over successors w of reach[w]+w. */
static void close_from(sgraph *sg, int u, char *state)
{
    state[u] = 1;
    uint64_t *r = ROW(sg->reach, u);
    memset(r, 0, sg->words * sizeof *r);
    for (int w = 0; w < sg->n; w++) {
        if (!HAS(ROW(sg->adj, u), w)) continue;
        if (!state[w]) close_from(sg, w, state);
        const uint64_t *rw = ROW(sg->reach, w);
        for (int k = 0; k < sg->words; k++)
            r[k] |= rw[k];
        SET(r, w);
    }
}

static void close_all(sgraph *sg)
{
    char *state = pl_calloc(sg->n ? sg->n : 1, 1);
    for (int u = 0; u < sg->n; u++)
        if (sg->alive[u] && !state[u]) close_from(sg, u, state);
    free(state);
}

/* u and v may merge when neither reaches the other through a third stage. */
static bool can_merge(const sgraph *sg, int u, int v)
{
    if (HAS(ROW(sg->reach, v), u)) {
        int t = u;
        u = v, v = t;
    }
    if (!HAS(ROW(sg->reach, u), v)) return true;
    for (int w = 0; w < sg->n; w++)
        if (w != v && HAS(ROW(sg->adj, u), w) && HAS(ROW(sg->reach, w), v)) return false;
    return true;
}

static void merge(sgraph *sg, int u, int v)
{
    uint64_t *au = ROW(sg->adj, u), *av = ROW(sg->adj, v);
    for (int k = 0; k < sg->words; k++)
        au[k] |= av[k];
    memset(av, 0, sg->words * sizeof *av);
    for (int x = 0; x < sg->n; x++) {
        uint64_t *ax = ROW(sg->adj, x);
        if (HAS(ax, v)) CLR(ax, v), SET(ax, u);
    }
    CLR(au, u);
    sg->alive[v] = false;
    pl_uf_join(&sg->into, u, v);
    close_all(sg);
}

static void merge_all(sgraph *sg)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (int u = 0; u < sg->n; u++)
            for (int v = u + 1; sg->alive[u] && v < sg->n; v++)
                if (sg->alive[v] && sg->dev[u] == sg->dev[v] && can_merge(sg, u, v)) {
                    merge(sg, u, v);
                    changed = true;
                }
    }
}

/* ---- step 1: levels ---- */

/* Stage (before merging) of each op by (device, level); -1 for Constants placed later. */
static int level_stages(const pl_graph *g, const pl_plan *p, int *stage0, int **dev_of)
{
    int *level = pl_calloc(g->n_ops ? g->n_ops : 1, sizeof *level), max = 0;
    for (int k = 0; k < g->n_ops; k++) {
        int op = g->topo[k];
        for (int e = g->pred_off[op]; e < g->pred_off[op + 1]; e++) {
            int q = g->pred[e];
            if (pl_plan_copied_const(g, q)) continue;
            int l = level[q] + (p->dev[q] != p->dev[op]);
            level[op] = l > level[op] ? l : level[op];
        }
        max = level[op] > max ? level[op] : max;
    }
    int *id = pl_malloc((size_t)(max + 1) * p->n_devs * sizeof *id), n = 0;
    for (int k = 0; k < (max + 1) * p->n_devs; k++)
        id[k] = -1;
    *dev_of = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof **dev_of);
    for (int k = 0; k < g->n_ops; k++) { /* numbered in topological order of first op */
        int op = g->topo[k], *slot = &id[level[op] * p->n_devs + p->dev[op]];
        if (pl_plan_copied_const(g, op)) {
            stage0[op] = -1;
            continue;
        }
        if (*slot < 0) (*dev_of)[n] = p->dev[op], *slot = n++;
        stage0[op] = *slot;
    }
    free(id), free(level);
    return n;
}

/* ---- step 1, by the schedule: the plan module's cut (pl_plan_schedule_stages) ---- */

static int schedule_stages(const pl_graph *g, const pl_plan *p, int *stage0, int **dev_of)
{
    *dev_of = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof **dev_of);
    return pl_plan_schedule_stages(g, p, stage0, *dev_of, NULL);
}

static void sgraph_init(sgraph *sg, const pl_graph *g, const int *stage0, int n, int *dev)
{
    sg->n = n;
    sg->words = (n + 63) / 64 ? (n + 63) / 64 : 1;
    sg->adj = pl_calloc((size_t)(n ? n : 1) * sg->words, sizeof *sg->adj);
    sg->reach = pl_calloc((size_t)(n ? n : 1) * sg->words, sizeof *sg->reach);
    sg->dev = dev;
    sg->alive = pl_malloc((n ? n : 1) * sizeof *sg->alive);
    pl_uf_init(&sg->into, n);
    for (int u = 0; u < n; u++)
        sg->alive[u] = true;
    for (int e = 0; e < g->n_edges; e++) {
        int a = stage0[g->edges[e].src], b = stage0[g->edges[e].dst];
        if (a >= 0 && b >= 0 && a != b) SET(ROW(sg->adj, a), b);
    }
    close_all(sg);
}

static void sgraph_free(sgraph *sg)
{
    free(sg->adj), free(sg->reach), free(sg->dev), free(sg->alive), pl_uf_free(&sg->into);
}

/* ---- step 3: execution order of the merged stages (Kahn; ties by first op) ---- */

static int *stage_order(const sgraph *sg, const int *first, int *n_out)
{
    int n = sg->n, *indeg = pl_calloc(n ? n : 1, sizeof *indeg);
    int *order = pl_malloc((n ? n : 1) * sizeof *order), m = 0;
    for (int u = 0; u < n; u++)
        for (int w = 0; sg->alive[u] && w < n; w++)
            indeg[w] += HAS(ROW(sg->adj, u), w);
    pl_heap h = {0};
    for (int u = 0; u < n; u++)
        if (sg->alive[u] && !indeg[u]) pl_heap_push(&h, (pl_heap_item){first[u], 0, 0, u});
    while (h.n) {
        int u = pl_heap_pop(&h).id;
        order[m++] = u;
        for (int w = 0; w < n; w++)
            if (HAS(ROW(sg->adj, u), w) && --indeg[w] == 0)
                pl_heap_push(&h, (pl_heap_item){first[w], 0, 0, w});
    }
    pl_heap_free(&h);
    free(indeg);
    *n_out = m;
    return order;
}

/* ---- step 4: what each stage owns, copies, reads and sends ---- */

/* The capacities of one stage's arrays while fill_io builds them (pl_stage keeps only the
 * counts: the arrays are plain malloc'd blocks, freed by pl_stages_free). */
typedef struct stage_caps {
    int ops, consts, weights;
} stage_caps;

static void push(int **a, int *n, int *cap, int v)
{
    pl_grow((void **)a, cap, *n, sizeof **a);
    (*a)[(*n)++] = v;
}

/* A Constant something reads is held by one stage (pl_plan_stage_io's choice: its first
 * reader's); the other reading stages copy it. */
static void copy_consts(const pl_graph *g, pl_stages *s, stage_caps *cap)
{
    int *seen = pl_malloc((s->n ? s->n : 1) * sizeof *seen);
    for (int k = 0; k < g->n_ops; k++) {
        int op = g->topo[k];
        if (!pl_plan_copied_const(g, op)) continue;
        for (int j = 0; j < s->n; j++)
            seen[j] = 0;
        for (int o = 0; o < g->ops[op].n_outputs; o++) {
            int t = g->ops[op].outputs[o];
            for (int c = 0; t >= 0 && c < g->tensors[t].n_consumers; c++)
                seen[s->stage_of[g->tensors[t].consumers[c]]] = 1;
        }
        for (int j = 0; j < s->n; j++)
            if (seen[j] && j != s->stage_of[op])
                push(&s->st[j].consts, &s->st[j].n_consts, &cap[j].consts, op);
    }
    free(seen);
}

static bool is_weight(const pl_tensor *t)
{
    return (t->flags & PL_TENSOR_WEIGHT) && t->producer < 0;
}

/* Weights of stage j, from the ops it owns (Constants, copied or not, read none). */
static void stage_weights(const pl_graph *g, pl_stages *s, stage_caps *cap, int j, int *mark)
{
    pl_stage *st = &s->st[j];
    for (int k = 0; k < st->n_ops; k++)
        for (int i = 0; i < g->ops[st->ops[k]].n_inputs; i++) {
            int t = g->ops[st->ops[k]].inputs[i];
            if (t < 0 || mark[t] == j + 1 || !is_weight(&g->tensors[t])) continue;
            mark[t] = j + 1;
            push(&st->weights, &st->n_weights, &cap[j].weights, t);
        }
}

/* Inputs and outputs are the plan module's (pl_plan_stage_io), the tensors the simulator
 * prices each stage for; the rest is the split's own. */
static void fill_io(const pl_graph *g, pl_stages *s)
{
    for (int t = 0; t < g->n_tensors; t++) {
        int p = g->tensors[t].producer;
        s->maker[t] = p < 0 || pl_plan_is_const(g, p) ? -1 : s->stage_of[p];
    }
    pl_stage_io *io = pl_malloc((s->n ? s->n : 1) * sizeof *io);
    pl_plan_stage_io(g, s->stage_of, s->n, io); /* also homes the copied Constants */
    for (int j = 0; j < s->n; j++) {
        s->st[j].inputs = io[j].inputs, s->st[j].n_inputs = io[j].n_inputs;
        s->st[j].outputs = io[j].outputs, s->st[j].n_outputs = io[j].n_outputs;
        s->st[j].weight_bytes = io[j].weight_bytes;
        s->st[j].copied_weight_bytes = io[j].copied_weight_bytes;
    }
    free(io);
    stage_caps *cap = pl_calloc(s->n ? s->n : 1, sizeof *cap);
    copy_consts(g, s, cap);
    for (int k = 0; k < g->n_ops; k++) {
        int op = g->topo[k], j = s->stage_of[op];
        push(&s->st[j].ops, &s->st[j].n_ops, &cap[j].ops, op);
    }
    int *mark = pl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *mark);
    for (int j = 0; j < s->n; j++)
        stage_weights(g, s, cap, j, mark);
    free(mark), free(cap);
}

int pl_split_stages(const pl_graph *g, const pl_plan *p, pl_stages *out, pl_err *err)
{
    return pl_split_stages_by(g, p, PL_SPLIT_FEWEST, out, err);
}

int pl_split_stages_by(const pl_graph *g, const pl_plan *p, pl_split_cut cut, pl_stages *out,
                       pl_err *err)
{
    memset(out, 0, sizeof *out);
    if (!g->topo) return pl_err_set(err, "split: the graph is not finalized");
    if (p->n_ops != g->n_ops)
        return pl_err_set(err, "split: the plan has %d ops, the model %d", p->n_ops, g->n_ops);
    int *stage0 = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof *stage0), *dev;
    int n0 = cut == PL_SPLIT_SCHEDULE ? schedule_stages(g, p, stage0, &dev)
                                      : level_stages(g, p, stage0, &dev);
    sgraph sg;
    sgraph_init(&sg, g, stage0, n0, dev);
    if (cut == PL_SPLIT_FEWEST) merge_all(&sg);
    int *first = pl_malloc((n0 ? n0 : 1) * sizeof *first), n;
    for (int k = g->n_ops - 1; k >= 0; k--)
        if (stage0[g->topo[k]] >= 0) first[pl_uf_find(&sg.into, stage0[g->topo[k]])] = k;
    int *order = stage_order(&sg, first, &n), *rank = pl_malloc((n0 ? n0 : 1) * sizeof *rank);
    int alive = 0;
    for (int u = 0; u < n0; u++)
        alive += sg.alive[u];
    if (n < alive) { /* only a device order that contradicts the graph's edges can do this */
        free(rank), free(order), free(first), free(stage0);
        sgraph_free(&sg);
        return pl_err_set(err, "split: the plan's per-device order runs an op before one it "
                               "depends on (the stages would wait for each other in a cycle)");
    }
    for (int k = 0; k < n; k++)
        rank[order[k]] = k;
    out->n = n, out->n_ops = g->n_ops, out->n_tensors = g->n_tensors, out->cut = cut;
    out->st = pl_calloc(n ? n : 1, sizeof *out->st);
    out->stage_of = pl_malloc((g->n_ops ? g->n_ops : 1) * sizeof *out->stage_of);
    out->maker = pl_malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *out->maker);
    for (int k = 0; k < n; k++)
        out->st[k].dev = sg.dev[order[k]];
    for (int op = 0; op < g->n_ops; op++)
        out->stage_of[op] = stage0[op] >= 0 ? rank[pl_uf_find(&sg.into, stage0[op])] : -1;
    fill_io(g, out);
    free(rank), free(order), free(first), free(stage0);
    sgraph_free(&sg);
    return 0;
}

void pl_stages_free(pl_stages *s)
{
    for (int j = 0; j < s->n; j++) {
        pl_stage *st = &s->st[j];
        free(st->ops), free(st->consts), free(st->inputs), free(st->outputs), free(st->weights);
    }
    free(s->st), free(s->stage_of), free(s->maker);
    memset(s, 0, sizeof *s);
}

void pl_split_set_threads(pl_stages *s, const pl_cluster *c)
{
    for (int j = 0; j < s->n; j++) {
        int d = s->st[j].dev;
        s->st[j].threads =
            c && d >= 0 && d < c->n_devs && c->devs[d].cores > 1 ? c->devs[d].cores : 1;
    }
}

int pl_split_readers(const pl_graph *g, const pl_stages *s, int t, int *to)
{
    int n = 0, maker = s->maker[t];
    for (int c = 0; maker >= 0 && c < g->tensors[t].n_consumers; c++) {
        int j = s->stage_of[g->tensors[t].consumers[c]], k = n;
        if (j == maker) continue;
        while (k > 0 && to[k - 1] > j)
            k--;
        if (k > 0 && to[k - 1] == j) continue;
        memmove(to + k + 1, to + k, (size_t)(n - k) * sizeof *to);
        to[k] = j, n++;
    }
    return n;
}

int pl_stages_devices(const pl_stages *s)
{
    int used = 0;
    for (int j = 0; j < s->n; j++) {
        bool seen = false;
        for (int i = 0; i < j && !seen; i++)
            seen = s->st[i].dev == s->st[j].dev;
        used += !seen;
    }
    return used;
}
