/* eval.c: one training iteration of a strategy, compiled and simulated (docs/train.md,
 * "Evaluating a strategy"), and on request the simulator's feedback TAG's GNN reads (Table 1,
 * part 3). */
#include "placer/train.h"
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

/* Per op group: first start to last end of the compiled ops that are replicas of its
 * training ops (origin >= 0; inserted ops belong to no group), and the mean gap between such
 * an op's end and the start of each transfer of a tensor it made. */
static void group_feedback(const pl_train_ctx *x, const pl_graph *g, const int *origin,
                           const pl_sim_result *r, pl_train_eval *e)
{
    int n = x->og.n;
    double *first = pl_malloc((size_t)n * sizeof *first), *last = pl_calloc(n, sizeof *last);
    double *gap = pl_calloc(n, sizeof *gap);
    int *gaps = pl_calloc(n, sizeof *gaps);
    for (int i = 0; i < n; i++)
        first[i] = -1;
    for (int op = 0; op < g->n_ops; op++) {
        if (origin[op] < 0) continue;
        int i = x->og.group_of[origin[op]];
        if (first[i] < 0 || r->op_start_s[op] < first[i]) first[i] = r->op_start_s[op];
        if (r->op_end_s[op] > last[i]) last[i] = r->op_end_s[op];
    }
    for (int k = 0; k < r->n_xfers; k++) {
        int op = r->xfers[k].tensor >= 0 ? g->tensors[r->xfers[k].tensor].producer : -1;
        if (op < 0 || origin[op] < 0) continue;
        int i = x->og.group_of[origin[op]];
        gap[i] += r->xfers[k].start_s - r->op_end_s[op], gaps[i]++;
    }
    e->n_groups = n;
    e->group_makespan_s = pl_calloc(n, sizeof *e->group_makespan_s);
    e->group_out_idle_s = pl_calloc(n, sizeof *e->group_out_idle_s);
    for (int i = 0; i < n; i++) {
        if (first[i] >= 0) e->group_makespan_s[i] = last[i] - first[i];
        if (gaps[i]) e->group_out_idle_s[i] = gap[i] / gaps[i];
    }
    free(first), free(last), free(gap), free(gaps);
}

/* The fraction of the iteration a device, or the links between two device groups, did
 * nothing: 1 - busy / iteration, averaged over the ordered device pairs (a, b), a != b, of the
 * two groups; 1 when there is no such pair (one GPU, within its own group). The simulator
 * reports each route's busy time (link_busy_s), which is what a link idling means here. */
static void device_feedback(const pl_train_ctx *x, const pl_sim_result *r, pl_train_eval *e)
{
    int D = r->n_devs, M = x->dg.n;
    double T = r->makespan_s > 0 ? r->makespan_s : 1;
    e->dev_idle_frac = pl_malloc((size_t)D * sizeof *e->dev_idle_frac);
    for (int d = 0; d < D; d++)
        e->dev_idle_frac[d] = 1 - r->busy_s[d] / T;
    e->n_dgroups = M;
    e->link_idle_frac = pl_malloc((size_t)M * M * sizeof *e->link_idle_frac);
    for (int ja = 0; ja < M; ja++)
        for (int jb = 0; jb < M; jb++) {
            double busy = 0;
            int pairs = 0;
            for (int ka = x->dg.off[ja]; ka < x->dg.off[ja + 1]; ka++)
                for (int kb = x->dg.off[jb]; kb < x->dg.off[jb + 1]; kb++) {
                    int a = x->dg.dev[ka], b = x->dg.dev[kb];
                    if (a == b) continue;
                    busy += r->link_busy_s[(size_t)a * D + b] / T, pairs++;
                }
            e->link_idle_frac[(size_t)ja * M + jb] = pairs ? 1 - busy / pairs : 1;
        }
}

/* One iteration of s compiled and simulated (record: every op's times) into *r, with the
 * compiled graph, its placement, cost table and origin map (NULL: not wanted) for the caller
 * to free (sim_free); -1 with err set, nothing to free. */
typedef struct sim_run {
    pl_graph *g;
    pl_plan *p;
    pl_cost *k;
    int *origin;
    pl_sim_result r;
} sim_run;

static void sim_free(sim_run *u)
{
    pl_sim_result_free(&u->r);
    free(u->origin);
    pl_cost_free(u->k);
    pl_plan_free(u->p);
    pl_graph_free(u->g);
}

static int sim_strategy(const pl_train_ctx *x, const pl_train_strategy *s, bool record, sim_run *u,
                        pl_err *err)
{
    memset(u, 0, sizeof *u);
    if (pl_train_compile(x, s, &u->g, &u->p, record ? &u->origin : NULL, err) < 0) return -1;
    /* onnxruntime's CPU kernel fusion is not a training framework's: ops are priced alone */
    pl_cost_params cp;
    if (x->params)
        cp = *x->params;
    else
        pl_cost_params_default(&cp);
    cp.runtime_fusion = PL_FUSION_NONE;
    u->k = pl_cost_new_placed(u->g, x->c, &cp, u->p->dev, err);
    pl_sim_opts so = {.contention = PL_CONTENTION_PORTS, .record = record};
    if (!u->k || pl_simulate(u->k, u->p, &so, &u->r, err) < 0) {
        sim_free(u);
        return -1;
    }
    return 0;
}

int pl_train_evaluate_opts(const pl_train_ctx *x, const pl_train_strategy *s,
                           const pl_train_eval_opts *o, pl_train_eval *e, pl_err *err)
{
    bool fb = o && o->feedback;
    memset(e, 0, sizeof *e);
    e->oom_dev = -1;
    sim_run u;
    if (sim_strategy(x, s, fb, &u, err) < 0) return -1;
    pl_sim_result *r = &u.r;
    e->iteration_s = r->makespan_s;
    e->band = pl_cost_plan_band(u.k, u.p->dev, &e->basis);
    e->oom = r->oom, e->oom_dev = r->oom_dev, e->oom_excess_bytes = r->oom_excess_bytes;
    e->n_devs = r->n_devs;
    e->peak_mem_bytes = r->peak_mem_bytes, r->peak_mem_bytes = NULL;
    e->compiled_ops = u.g->n_ops;
    if (fb) {
        group_feedback(x, u.g, u.origin, r, e);
        device_feedback(x, r, e);
    }
    sim_free(&u);
    return 0;
}

int tr_grad_times(const pl_train_ctx *x, const pl_train_strategy *s, double *made_s, pl_err *err)
{
    sim_run u;
    if (sim_strategy(x, s, true, &u, err) < 0) return -1;
    const pl_train_graph *t = x->t;
    for (int p = 0; p < t->n_params; p++)
        made_s[p] = -1;
    for (int op = 0; op < u.g->n_ops; op++) {
        int v = u.origin[op];
        if (v < 0) continue;
        for (int p = 0; p < t->n_params; p++) /* the last replica's end: every rank has it */
            if (t->g->tensors[t->grad_tensor[p]].producer == v && u.r.op_end_s[op] > made_s[p])
                made_s[p] = u.r.op_end_s[op];
    }
    sim_free(&u);
    return 0;
}

int pl_train_evaluate(const pl_train_ctx *x, const pl_train_strategy *s, pl_train_eval *e,
                      pl_err *err)
{
    return pl_train_evaluate_opts(x, s, NULL, e, err);
}

void pl_train_eval_free(pl_train_eval *e)
{
    free(e->peak_mem_bytes);
    free(e->group_makespan_s), free(e->group_out_idle_s);
    free(e->dev_idle_frac), free(e->link_idle_frac);
    memset(e, 0, sizeof *e);
}
