/* expert.c: the hand-made baseline of the placement papers: cut the topological order into k
 * contiguous stages of equal cost and give stage j to the j-th device.
 *
 * Choices where "an expert" is vague: the k devices are the k fastest (by the sum of op times
 * on them), used in cluster order (neighbours in a file usually share the fastest links);
 * a stage's cost is measured on its own device, each stage aiming at the remaining cost
 * over the remaining stages, cut at the op that lands nearest that target; a stage ends
 * early when its device is full. When the last stage then cannot hold the rest (weights
 * usually grow towards the end of a network while compute does not), the split packs each
 * device as full as memory allows instead. As an expert would, it tries every k from 1 to the
 * number of devices, runs each split through the simulator, and keeps the fastest that fits in
 * memory (ties to fewer devices): for one request a contiguous split only pays off through memory
 * or faster devices, and the simulator is the judge of that. */
#include "sched.h"

#include <math.h>
#include <string.h>

typedef struct expert {
    const pl_cost *k;
    pk_mem_track m;
    int *by_speed;  /* devices, fastest first */
    double *suffix; /* [d * (n + 1) + i]: time on d of the ops at topological positions >= i */
} expert;

static const double *speed_ctx;

static int faster(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (speed_ctx[x] != speed_ctx[y]) return speed_ctx[x] < speed_ctx[y] ? -1 : 1;
    return x - y;
}

static void expert_init(expert *X, const pl_cost *k)
{
    int n = k->n_ops, D = k->n_devs;
    X->k = k;
    pk_mem_init(&X->m, k);
    X->suffix = pl_malloc((size_t)D * (n + 1) * sizeof *X->suffix);
    double *total = pl_malloc(D * sizeof *total);
    for (int d = 0; d < D; d++) {
        double *s = &X->suffix[(size_t)d * (n + 1)];
        s[n] = 0;
        for (int i = n - 1; i >= 0; i--)
            s[i] = s[i + 1] + pl_cost_op_s(k, k->g->topo[i], d);
        total[d] = s[0];
    }
    X->by_speed = pl_malloc(D * sizeof *X->by_speed);
    for (int d = 0; d < D; d++)
        X->by_speed[d] = d;
    speed_ctx = total; /* qsort has no context argument in C11 */
    pl_sort(X->by_speed, D, sizeof *X->by_speed, faster);
    free(total);
}

static void expert_free(expert *X)
{
    pk_mem_free(&X->m);
    free(X->by_speed), free(X->suffix);
}

/* Fills one stage on device e from topological position *i; returns -1 when the last stage
 * cannot take the rest. */
static int fill_stage(expert *X, int e, double target, bool last, int *i, int *dev)
{
    const pl_cost *k = X->k;
    double acc = 0;
    for (; *i < k->n_ops; (*i)++) {
        int v = k->g->topo[*i];
        double t = pl_cost_op_s(k, v, e);
        if (!last && acc > 0 && acc + t / 2 > target) return 0;
        if (!isfinite(t) || !pk_mem_fits(&X->m, v, e)) return last ? -1 : 0;
        pk_mem_add(&X->m, v, dev[v] = e);
        acc += t;
    }
    return 0;
}

/* Splits the topological order over devs[0..kk) (in cluster order), in stages of equal cost,
 * or (packed) each device filled as far as memory allows; -1 when it does not fit. */
static int split(expert *X, const int *devs, int kk, bool packed, int *dev)
{
    int n = X->k->n_ops, i = 0;
    pk_mem_reset(&X->m);
    for (int j = 0; j < kk; j++) {
        double remaining = X->suffix[(size_t)devs[j] * (n + 1) + i];
        double target = packed ? INFINITY : remaining / (kk - j);
        if (fill_stage(X, devs[j], target, j == kk - 1, &i, dev) < 0) return -1;
    }
    return i == n ? 0 : -1;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Simulated makespan of a placement, +INFINITY when it cannot run or exceeds memory. */
static double judge(const pl_cost *k, const pl_place_opts *o, const int *dev)
{
    pl_plan *p = pl_plan_new(k->n_ops, k->n_devs);
    memcpy(p->dev, dev, k->n_ops * sizeof *dev);
    pl_sim_opts so = {.contention = o->contention};
    double ms = pk_sim_makespan(k, p, &so, true);
    pl_plan_free(p);
    return ms;
}

int pl_place_expert(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    pl_place_opts def = {0};
    if (!o) o = &def;
    if (pk_precheck(k, err) < 0) return -1;
    expert X;
    expert_init(&X, k);
    int D = k->n_devs, *devs = pl_malloc(D * sizeof *devs);
    int *dev = pl_malloc((k->n_ops + 1) * sizeof *dev), found = 0;
    double best = INFINITY;
    for (int kk = 1; kk <= D; kk++) {
        memcpy(devs, X.by_speed, kk * sizeof *devs);
        pl_sort(devs, kk, sizeof *devs, cmp_int);
        if (split(&X, devs, kk, false, dev) < 0 && split(&X, devs, kk, true, dev) < 0) continue;
        double ms = judge(k, o, dev);
        if (!found || ms < best) memcpy(out->dev, dev, k->n_ops * sizeof *dev), best = ms;
        found = 1;
    }
    free(devs), free(dev);
    expert_free(&X);
    if (found) return 0;
    char buf[128];
    const char *name = pk_model_name(k, buf, sizeof buf);
    return pl_err_set(err,
                      "%s: expert: no contiguous split of the topological order over up to "
                      "%d devices fits in memory",
                      name, D);
}

/* ---- expert-layers: the hand placement AutoDeep's paper compares against ----
 *
 * seeds/000 §V-B: "The Inception-V3 model and the ResNeXt-50 model are heuristically
 * partitioned into the parts with almost the same number of layers. Each LSTM layer in the
 * RNNLM/NMT model is put on a GPU device." A layer here is a dense op (Conv, MatMul, Gemm,
 * LSTM, GRU, RNN, Attention: PL_CLASS_DENSE; every op when a graph has none, as task graphs
 * may). The topological order is cut into as many parts as the cluster has GPUs (every device
 * when it has none), part j ending after the layer that brings the count to ceil(j L / k),
 * and part j goes to the j-th GPU in cluster order; the ops before the first layer go with
 * part 0. As the paper's single-GPU baseline does, an op that cannot run on its GPU goes to
 * the fastest device that runs it. No simulator judges the split: a person writes it from
 * the model's structure, which is what the paper's expert baseline is; it moves on to the
 * next GPU early only when a layer does not fit in memory, and when the last GPU then cannot
 * hold the rest (weights grow towards the end of a network), it fills each GPU as far as
 * memory allows instead. */

/* The devices a person spreads layers over: the GPUs, in cluster order, or every device. */
static int layer_devices(const pl_cost *k, int *devs)
{
    int n = 0;
    for (int d = 0; d < k->n_devs; d++)
        if (k->c->devs[d].kind == PL_DEV_GPU) devs[n++] = d;
    if (n == 0)
        for (int d = 0; d < k->n_devs; d++)
            devs[n++] = d;
    return n;
}

static int fastest_runner(const pl_cost *k, int v)
{
    int best = -1;
    for (int d = 0; d < k->n_devs; d++) {
        double t = pl_cost_op_s(k, v, d);
        if (isfinite(t) && (best < 0 || t < pl_cost_op_s(k, v, best))) best = d;
    }
    return best;
}

/* Op v on the part's device when it runs there and has room, else on the next GPU with room
 * (a person moves a layer that does not fit to the next GPU: *part advances), or, for an op
 * no GPU runs, on the fastest device that runs it. -1 when nothing has room. */
static int layer_device(const pl_cost *k, pk_mem_track *m, const int *devs, int nd, int *part,
                        int v)
{
    for (; *part < nd; ++*part) {
        int d = devs[*part];
        if (!isfinite(pl_cost_op_s(k, v, d))) break;
        if (pk_mem_fits(m, v, d)) return d;
    }
    if (*part == nd) --*part;
    int d = fastest_runner(k, v);
    return d >= 0 && pk_mem_fits(m, v, d) ? d : -1;
}

/* One try: parts of the same number of layers, or (packed) each GPU filled as far as memory
 * allows; -1 (err set) when an op finds no room. */
static int layer_split(const pl_cost *k, const int *devs, int nd, bool packed, int *dev,
                       pl_err *err)
{
    const pl_graph *g = k->g;
    long layers = 0, seen = 0;
    for (int v = 0; v < g->n_ops; v++)
        layers += g->ops[v].cls == PL_CLASS_DENSE;
    bool all = layers == 0; /* no dense op: every op is a layer */
    if (all) layers = g->n_ops;
    pk_mem_track m;
    pk_mem_init(&m, k);
    int part = 0, rc = 0;
    for (int i = 0; i < g->n_ops && rc == 0; i++) {
        int v = g->topo[i], d = layer_device(k, &m, devs, nd, &part, v);
        if (d < 0) {
            rc = pk_no_room(k, &m, "expert-layers", v, err);
            break;
        }
        pk_mem_add(&m, v, dev[v] = d);
        if (!packed && (all || g->ops[v].cls == PL_CLASS_DENSE) &&
            ++seen * nd >= (long)(part + 1) * layers && part + 1 < nd)
            part++;
    }
    pk_mem_free(&m);
    return rc;
}

int pl_place_expert_layers(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    (void)o;
    if (pk_precheck(k, err) < 0) return -1;
    int *devs = pl_malloc((size_t)k->n_devs * sizeof *devs), nd = layer_devices(k, devs);
    int rc = layer_split(k, devs, nd, false, out->dev, err);
    if (rc < 0) rc = layer_split(k, devs, nd, true, out->dev, err);
    free(devs);
    return rc;
}
