/* mopar.c: slices of a layer graph as serverless functions, priced, and the partitions MOPAR
 * and its baselines choose (docs/serverless.md, "Partitioning").
 *
 * Every algorithm's partition is priced by the one routine, pl_sl_price: a slice is a function
 * whose memory is its layers' weights, its most memory-hungry layer's activations and the
 * runtime's, rounded to a size the
 * platform allows, or raised to a whole vCPU's (below one vCPU the CPU share follows the memory,
 * so raising costs nothing per unit of work and runs faster; MOPAR's paper keeps the memory
 * at the need); its CPU is that memory's share of vCPUs; its time is its layers' on that
 * CPU at its parallel degree, plus reading its inputs and writing its outputs through the
 * store or shared memory, plus its invocation (the platform's round trip and the graph inputs
 * and outputs it carries); its bill is the platform's for that memory and time, the invocation
 * left out. MOPAR minimises
 * the summed bill (Eq. 6) with the latency no worse than the unsplit model's: a DP over the
 * layers in topological order keeping, at each layer, every partition of the layers before it
 * (with each slice's memory option) that no other beats on both bill and latency and that may
 * still lead to the last front ("Bounding the DP" below). */
#include "placer/serverless.h"
#include "sl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const algo_names[PL_SL_ALGO_COUNT] = {"mopar",      "unsplit",  "uniform",
                                                         "latency-dp", "nonsplit", "clockwork++"};

const char *pl_sl_algo_name(pl_sl_algo a)
{
    return a >= 0 && a < PL_SL_ALGO_COUNT ? algo_names[a] : "?";
}

int pl_sl_algo_parse(const char *name)
{
    for (int a = 0; a < PL_SL_ALGO_COUNT; a++)
        if (!strcmp(name, algo_names[a])) return a;
    return -1;
}

/* ---- pricing one slice ---- */

/* The transport cut tensors take. */
const pl_transport *pl_sl_transport(const pl_platform *pf, const pl_sl_opts *o)
{
    if (o->shm && pf->shm.present) return &pf->shm;
    return pf->store.present ? &pf->store : &pf->shm;
}

static double ratio_of(const pl_sl_opts *o)
{
    return o->codec_cost.ratio >= 1 ? o->codec_cost.ratio : 1;
}

/* Seconds to move one tensor of `bytes` raw bytes one way (a write or a read), with the codec's
 * encoding (`enc`) or decoding time. */
double sl_move_s(const pl_transport *x, const pl_sl_opts *o, double bytes, bool enc)
{
    double per_B = enc ? o->codec_cost.encode_s_per_B : o->codec_cost.decode_s_per_B;
    double wire = x->bandwidth_Bps > 0 ? bytes / ratio_of(o) / x->bandwidth_Bps : 0;
    return x->latency_s + wire + bytes * per_B;
}

/* What slice [i, j] is made of: its layers' time on one vCPU, the dominant part of it, their
 * output bytes, the most activation memory one of them holds, their weights; and the cut
 * tensors it reads (made before i, read in it) and writes (made in it, read after j), with
 * their count, raw bytes and transfer time. */
typedef struct span {
    double t, par, out;
    double act_bytes, weight_bytes; /* bytes: the layers' MB are the platform's (a MiB) */
    int n_in, n_out;
    double in_bytes, out_bytes, comm_s;
    double gin_bytes, gout_bytes; /* graph inputs read (each once), graph outputs made */
} span;

/* Adds layer l to the span; a weight it shares with other layers counts once per span, and so
 * does a graph input it reads: stamp[w] == key once this span holds weight w, stamp[n_wts + i]
 * once it reads graph input i. */
static void add_layer(span *sp, const pl_sl_graph *sg, const pl_sl_layer *l, int *stamp, int key)
{
    sp->t += l->t1_s, sp->par += l->par_s, sp->out += l->out_bytes;
    sp->act_bytes = fmax(sp->act_bytes, l->mem_mb * PL_PLATFORM_MB_BYTES);
    sp->weight_bytes += l->weight_mb * PL_PLATFORM_MB_BYTES;
    for (int k = 0; k < l->n_wts; k++)
        if (stamp[l->wts[k]] != key)
            stamp[l->wts[k]] = key, sp->weight_bytes += sg->wt_mb[l->wts[k]] * PL_PLATFORM_MB_BYTES;
    sp->gout_bytes += l->gout_bytes;
    for (int k = 0; k < l->n_gins; k++)
        if (stamp[sg->n_wts + l->gins[k]] != key)
            stamp[sg->n_wts + l->gins[k]] = key, sp->gin_bytes += sg->gin_bytes[l->gins[k]];
}

/* A stamp array for add_layer: every shared weight unheld, every graph input unread (-1). */
static int *stamps(const pl_sl_graph *sg)
{
    int n = sg->n_wts + sg->n_gins;
    int *st = pl_malloc(((size_t)n + 1) * sizeof *st);
    for (int w = 0; w < n; w++)
        st[w] = -1;
    return st;
}

/* A function's invocation (the platform's "invocation"): its round trip, once, the graph inputs
 * it reads carried to it and the graph outputs it makes carried back; 0 when the platform
 * prices none. */
static double invoke_s(const pl_platform *pf, const span *sp)
{
    const pl_invocation *v = &pf->invocation;
    if (!v->present) return 0;
    return v->round_trip_s + sp->gin_bytes / v->request_Bps + sp->gout_bytes / v->response_Bps;
}

/* Tensor tp read by the slice (in) or written by it (!in). */
static void add_cut(span *sp, const pl_transport *x, const pl_sl_opts *o, const pl_sl_tensor *tp,
                    bool in, double sign)
{
    if (in)
        sp->n_in += (int)sign, sp->in_bytes += sign * tp->bytes;
    else
        sp->n_out += (int)sign, sp->out_bytes += sign * tp->bytes;
    sp->comm_s += sign * sl_move_s(x, o, tp->bytes, !in);
}

/* Slice [i, j]'s span, counted directly. */
static void span_of(const pl_sl_graph *sg, const pl_transport *x, const pl_sl_opts *o, int i, int j,
                    span *sp)
{
    memset(sp, 0, sizeof *sp);
    int *stamp = stamps(sg);
    for (int k = i; k <= j; k++)
        add_layer(sp, sg, &sg->layers[k], stamp, 0);
    free(stamp);
    for (int t = 0; t < sg->n_tensors; t++) {
        const pl_sl_tensor *tp = &sg->tensors[t];
        bool read_in = false, read_after = false;
        for (int k = 0; k < tp->n_to; k++)
            read_in |= tp->to[k] >= i && tp->to[k] <= j, read_after |= tp->to[k] > j;
        if (tp->from < i && read_in) add_cut(sp, x, o, tp, true, 1);
        if (tp->from >= i && tp->from <= j && read_after) add_cut(sp, x, o, tp, false, 1);
    }
}

/* The compute time of a span on a function of `mem_bytes` at degree eta: the dominant ops' part
 * divided among eta sub-slices (each vCPU beyond the first adding parallel_eff of one), the
 * gathering of their partial outputs (Eq. 5's t_a: (eta - 1) / eta of the layers' output bytes
 * copied at the vCPU's memory bandwidth), all at the function's share of a vCPU. */
double sl_compute_s(const pl_platform *pf, double t, double par, double out, double mem_bytes,
                    int eta)
{
    double speed = pl_parallel_speed(eta, pf->parallel_eff);
    double bw = pf->vcpu && pf->vcpu->n_devs ? pf->vcpu->devs[0].mem_bandwidth_Bps : 0;
    double agg = eta > 1 && bw > 0 ? (eta - 1.0) / eta * out / bw : 0;
    double share = fmin(pl_platform_vcpus(pf, mem_bytes / PL_PLATFORM_MB_BYTES), 1);
    return share > 0 ? (t - par + par / speed + agg) / share : INFINITY;
}

static double compute_s(const span *sp, const pl_platform *pf, double mem_bytes, int eta)
{
    return sl_compute_s(pf, sp->t, sp->par, sp->out, mem_bytes, eta);
}

double sl_weight_factor(const pl_platform *pf)
{
    return pf->runtime_weight_factor > 0 ? pf->runtime_weight_factor : 1;
}

double sl_activation_factor(const pl_platform *pf)
{
    return pf->runtime_activation_factor > 0 ? pf->runtime_activation_factor : 1;
}

/* The function's memory for a span: its layers' weights, resident, the most activation memory
 * one of them holds (Eq. 1 over the slice's chain of layers), each as the runtime holds them
 * (its factors), and the runtime's own, or at least v whole vCPUs' (v x λ, or the largest
 * size when that is smaller) when v > 0, in bytes, rounded to a size the platform allows; -1
 * when beyond its largest. */
static double memory_of(const span *sp, const pl_platform *pf, int v)
{
    double fw = sl_weight_factor(pf), fa = sl_activation_factor(pf);
    double need = fw * sp->weight_bytes + fa * sp->act_bytes;
    need += pf->runtime_base_mb * PL_PLATFORM_MB_BYTES;
    /* on a platform whose largest size is below v vCPUs' (λ above it), the largest: the
       most CPU a function can have */
    if (v > 0) need = fmax(need, fmin(v * pf->mb_per_vcpu, pf->mem_max_mb) * PL_PLATFORM_MB_BYTES);
    double mb = pl_platform_round_mb(pf, need / PL_PLATFORM_MB_BYTES);
    return mb < 0 ? -1 : mb * PL_PLATFORM_MB_BYTES;
}

/* Whether raising a span to v whole vCPUs changes anything: it needs less memory than that,
 * and its memory alone gives it less than a whole vCPU (its CPU share grows) or fewer than v
 * whole ones (its degree may grow). */
static bool can_raise(const span *sp, const pl_platform *pf, int v)
{
    double a = memory_of(sp, pf, 0), b = memory_of(sp, pf, v);
    return a >= 0 && b > a &&
           (pl_platform_vcpus(pf, a / PL_PLATFORM_MB_BYTES) < 1 || sl_max_degree(pf, a) < v);
}

/* The largest degree a function of `mem_bytes` may take: its whole vCPUs, at least 1, at most
 * PL_PLATFORM_VCPUS_MAX (the reader refuses a platform that implies more; one built in code
 * is held to it here, so the conversion to int is always in range). */
int sl_max_degree(const pl_platform *pf, double mem_bytes)
{
    double v = floor(pl_platform_vcpus(pf, mem_bytes / PL_PLATFORM_MB_BYTES) + 1e-9);
    return v >= PL_PLATFORM_VCPUS_MAX ? PL_PLATFORM_VCPUS_MAX : v >= 1 ? (int)v : 1;
}

/* The fastest degree of 1 .. max for a span, in constant time whatever the vCPUs. With P the
 * dominant part, B the gathering's bytes over the bandwidth and e the efficiency, compute_s
 * is, up to terms that do not depend on it, g(eta) = P / (1 + (eta - 1) e) + B (1 - 1 / eta),
 * and g'(eta) < 0 exactly when eta (sqrt(P e) - e sqrt(B)) > sqrt(B) (1 - e): a line in eta,
 * so g falls all the way, rises all the way, or rises then falls, given 0 <= e <= 1 (the
 * platform reader refuses a larger efficiency; with e > 1 the line could make g fall then
 * rise, and a degree in between win). Its least value on [1, max] is at 1 or at max (1 on a
 * tie, as the loop over every degree this replaces chose). */
static int fastest_degree(const span *sp, const pl_platform *pf, double mem_bytes, double *compute)
{
    int max = sl_max_degree(pf, mem_bytes);
    double one = compute_s(sp, pf, mem_bytes, 1), most = compute_s(sp, pf, mem_bytes, max);
    *compute = most < one ? most : one;
    return most < one ? max : 1;
}

/* A slice's time and bill from its span and memory, its compute_s set: its cuts through the
 * transport, its invocation in the latency but not in the bill (a platform bills the function
 * from its handler's start), the memory held for the billed time. */
static void bill(const pl_platform *pf, const pl_sl_opts *o, const span *sp, double mem_bytes,
                 pl_sl_slice *s)
{
    const pl_transport *x = pl_sl_transport(pf, o);
    s->comm_s = sp->comm_s, s->in_bytes = sp->in_bytes, s->out_bytes = sp->out_bytes;
    s->invoke_s = invoke_s(pf, sp), s->payload_bytes = sp->gin_bytes + sp->gout_bytes;
    s->time_s = s->compute_s + s->comm_s + s->invoke_s;
    s->billed_s = pl_platform_billed_s(pf, s->compute_s + s->comm_s);
    s->gb_s = mem_bytes / PL_PLATFORM_GB_S_BYTES * s->billed_s;
    s->usd =
        pl_platform_usd(pf, mem_bytes / PL_PLATFORM_MB_BYTES, s->compute_s + s->comm_s) +
        pl_transport_usd(x, (sp->in_bytes + sp->out_bytes) / ratio_of(o), sp->n_in + sp->n_out);
}

/* Prices slice [i, j] (its span sp) into s, its degree the fastest of 1 .. floor(memory / λ)
 * (Algorithm 1, step 3; the memory is never raised for a degree). -1 when it does not fit. */
static int price_span(const pl_platform *pf, const pl_sl_opts *o, int i, int j, int v,
                      const span *sp, pl_sl_slice *s)
{
    memset(s, 0, sizeof *s);
    double mem_bytes = memory_of(sp, pf, v);
    s->first = i, s->last = j;
    /* MB only in the slice, the module's edge (tables, JSON) */
    s->mem_mb = mem_bytes < 0 ? -1 : mem_bytes / PL_PLATFORM_MB_BYTES;
    s->weight_mb = sp->weight_bytes / PL_PLATFORM_MB_BYTES;
    s->act_mb = sp->act_bytes / PL_PLATFORM_MB_BYTES;
    s->raised = v > 0 && can_raise(sp, pf, v);
    if (mem_bytes < 0) return -1;
    s->eta = fastest_degree(sp, pf, mem_bytes, &s->compute_s);
    bill(pf, o, sp, mem_bytes, s);
    return 0;
}

static int price_slice(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, int i,
                       int j, int v, pl_sl_slice *s)
{
    span sp;
    span_of(sg, pl_sl_transport(pf, o), o, i, j, &sp);
    return price_span(pf, o, i, j, v, &sp, s);
}

int pl_sl_price(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, const int *ends,
                const int *vcpus, int n, pl_sl_plan *out)
{
    memset(out, 0, sizeof *out);
    out->slices = pl_calloc((size_t)n + 1, sizeof *out->slices);
    out->n = n, out->exact = true; /* a partition given, no search to cut short */
    for (int k = 0, first = 0; k < n; first = ends[k++] + 1) {
        pl_sl_slice *s = &out->slices[k];
        if (price_slice(sg, pf, o, first, ends[k], vcpus ? vcpus[k] : 0, s) < 0)
            return pl_sl_plan_free(out), -1;
        out->latency_s += s->time_s, out->usd += s->usd, out->gb_s += s->gb_s;
        out->bytes_moved += s->in_bytes + s->out_bytes;
    }
    return 0;
}

/* Function k of a non-contiguous plan: the layers with fn_of[l] == k, at mem_mb[k] MB, degree 1
 * (NonSplit has no sub-slices); a cut tensor is read by a function holding a reader but not its
 * maker, written by the maker's function when some reader is elsewhere. -1 when it needs more. */
int sl_price_set(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                 const int *fn_of, int k, double mem_mb, pl_sl_slice *s)
{
    span sp;
    memset(&sp, 0, sizeof sp);
    memset(s, 0, sizeof *s);
    int *stamp = stamps(sg);
    s->first = -1;
    for (int l = 0; l < sg->n; l++)
        if (fn_of[l] == k) {
            add_layer(&sp, sg, &sg->layers[l], stamp, 0);
            s->first = s->first < 0 ? l : s->first, s->last = l;
        }
    free(stamp);
    const pl_transport *x = pl_sl_transport(pf, o);
    for (int t = 0; t < sg->n_tensors; t++) {
        const pl_sl_tensor *tp = &sg->tensors[t];
        bool mine = fn_of[tp->from] == k, read_in = false, read_out = false;
        for (int r = 0; r < tp->n_to; r++)
            read_in |= fn_of[tp->to[r]] == k, read_out |= fn_of[tp->to[r]] != k;
        if (!mine && read_in) add_cut(&sp, x, o, tp, true, 1);
        if (mine && read_out) add_cut(&sp, x, o, tp, false, 1);
    }
    double need = memory_of(&sp, pf, 0);
    if (s->first < 0 || need < 0 || need > mem_mb * PL_PLATFORM_MB_BYTES * (1 + 1e-9)) return -1;
    double mem_bytes = mem_mb * PL_PLATFORM_MB_BYTES;
    s->mem_mb = mem_mb, s->eta = 1, s->raised = need < mem_bytes;
    s->weight_mb = sp.weight_bytes / PL_PLATFORM_MB_BYTES;
    s->act_mb = sp.act_bytes / PL_PLATFORM_MB_BYTES;
    s->compute_s = compute_s(&sp, pf, mem_bytes, 1);
    bill(pf, o, &sp, mem_bytes, s);
    return 0;
}

int pl_sl_price_sets(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                     const int *fn_of, const double *mem_mb, int n, pl_sl_plan *out)
{
    memset(out, 0, sizeof *out);
    out->slices = pl_calloc((size_t)n + 1, sizeof *out->slices);
    out->fn_of = pl_malloc(((size_t)sg->n + 1) * sizeof *out->fn_of);
    memcpy(out->fn_of, fn_of, (size_t)sg->n * sizeof *fn_of);
    out->n = n, out->exact = true; /* priced as given */
    for (int k = 0; k < n; k++) {
        pl_sl_slice *s = &out->slices[k];
        if (sl_price_set(sg, pf, o, fn_of, k, mem_mb[k], s) < 0) return pl_sl_plan_free(out), -1;
        out->latency_s += s->time_s, out->usd += s->usd, out->gb_s += s->gb_s;
        out->bytes_moved += s->in_bytes + s->out_bytes;
    }
    return 0;
}

bool pl_sl_slice_has(const pl_sl_plan *p, int k, int l)
{
    return p->fn_of ? p->fn_of[l] == k : l >= p->slices[k].first && l <= p->slices[k].last;
}

void pl_sl_plan_free(pl_sl_plan *p)
{
    free(p->slices);
    free(p->fn_of);
    memset(p, 0, sizeof *p);
}

/* ---- every slice priced once ---- */

/* cell(i, j, r) for 0 <= i <= j < n: the bill and time of slice [i, j] with its memory option
 * r: as it needs (v[0] = 0) or at least v[r] whole vCPUs' memory; fits == false when it does
 * not fit (or, r > 0, when the option changes nothing: can_raise). */
typedef struct cell {
    double usd, time_s;
    bool fits;
} cell;

typedef struct table {
    int n, R;
    int v[SL_OPTIONS_MAX]; /* the memory options: 0, then vCPU counts, ascending */
    cell *c;               /* [(i * n + j) * R + r] */
} table;

int sl_mem_options(const pl_platform *pf, bool every, int *v)
{
    int R = 0, most = sl_max_degree(pf, pf->mem_max_mb * PL_PLATFORM_MB_BYTES);
    v[R++] = 0, v[R++] = 1;
    if (!every) return R;
    for (int c = 2; c <= most && R < SL_OPTIONS_MAX - 1; c = c < 4 ? c + 1 : 2 * c)
        v[R++] = c;
    if (v[R - 1] < most) v[R++] = most;
    return R;
}

/* The tensors by the layer that makes them and by the last layer that reads them (CSR). */
typedef struct index {
    int *by_from, *from_off, *by_last, *last_off, *last;
} tensor_index;

static void index_build(const pl_sl_graph *sg, tensor_index *ix)
{
    int n = sg->n, T = sg->n_tensors;
    ix->from_off = pl_calloc((size_t)n + 2, sizeof(int));
    ix->last_off = pl_calloc((size_t)n + 2, sizeof(int));
    ix->by_from = pl_malloc(((size_t)T + 1) * sizeof(int));
    ix->by_last = pl_malloc(((size_t)T + 1) * sizeof(int));
    ix->last = pl_malloc(((size_t)T + 1) * sizeof(int));
    for (int t = 0; t < T; t++) {
        int l = sg->tensors[t].from;
        for (int k = 0; k < sg->tensors[t].n_to; k++)
            l = sg->tensors[t].to[k] > l ? sg->tensors[t].to[k] : l;
        ix->last[t] = l;
        ix->from_off[sg->tensors[t].from + 2]++, ix->last_off[l + 2]++;
    }
    for (int l = 0; l < n; l++)
        ix->from_off[l + 2] += ix->from_off[l + 1], ix->last_off[l + 2] += ix->last_off[l + 1];
    for (int t = 0; t < T; t++) {
        ix->by_from[ix->from_off[sg->tensors[t].from + 1]++] = t;
        ix->by_last[ix->last_off[ix->last[t] + 1]++] = t;
    }
}

static void index_free(tensor_index *ix)
{
    free(ix->by_from), free(ix->from_off), free(ix->by_last), free(ix->last_off), free(ix->last);
}

/* The first layer at or after i that reads tensor tp; -1 when none. */
static int first_reader(const pl_sl_tensor *tp, int i)
{
    int f = -1;
    for (int k = 0; k < tp->n_to; k++)
        if (tp->to[k] >= i && (f < 0 || tp->to[k] < f)) f = tp->to[k];
    return f;
}

/* Every slice starting at layer i, growing one layer at a time: a tensor made before i joins
 * the inputs at its first reader from i on; a tensor made in the slice is an output from its
 * maker until its last reader joins the slice. bucket[j] lists the inputs joining at j. */
static void table_row(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                      const tensor_index *ix, int i, int *bucket, int *next, int *stamp, table *tb)
{
    int n = sg->n;
    const pl_transport *x = pl_sl_transport(pf, o);
    for (int j = i; j < n; j++)
        bucket[j] = -1;
    for (int t = 0; t < sg->n_tensors; t++) {
        int f = sg->tensors[t].from < i ? first_reader(&sg->tensors[t], i) : -1;
        if (f >= 0) next[t] = bucket[f], bucket[f] = t;
    }
    span sp;
    memset(&sp, 0, sizeof sp);
    for (int j = i; j < n; j++) {
        add_layer(&sp, sg, &sg->layers[j], stamp, i);
        for (int t = bucket[j]; t >= 0; t = next[t])
            add_cut(&sp, x, o, &sg->tensors[t], true, 1);
        for (int k = ix->from_off[j]; k < ix->from_off[j + 1]; k++)
            add_cut(&sp, x, o, &sg->tensors[ix->by_from[k]], false, 1);
        for (int k = ix->last_off[j]; k < ix->last_off[j + 1]; k++)
            if (sg->tensors[ix->by_last[k]].from >= i) /* read to the end inside the slice */
                add_cut(&sp, x, o, &sg->tensors[ix->by_last[k]], false, -1);
        for (int r = 0; r < tb->R; r++) {
            pl_sl_slice s;
            cell *c = &tb->c[((size_t)i * n + j) * tb->R + r];
            c->fits = (!r || can_raise(&sp, pf, tb->v[r])) &&
                      price_span(pf, o, i, j, tb->v[r], &sp, &s) == 0;
            c->usd = s.usd, c->time_s = s.time_s;
        }
        if (!tb->c[((size_t)i * n + j) * tb->R].fits) break; /* longer slices need more */
    }
}

/* The table of every slice at each memory option: MOPAR's two (as needed, a whole vCPU), or
 * `every` one (sl_mem_options). */
static void table_build(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                        bool every, table *tb)
{
    int n = sg->n;
    tb->n = n, tb->R = sl_mem_options(pf, every, tb->v);
    tb->c = pl_calloc((size_t)n * n * tb->R + 1, sizeof *tb->c);
    tensor_index ix;
    index_build(sg, &ix);
    int *bucket = pl_malloc(((size_t)n + 1) * sizeof *bucket);
    int *next = pl_malloc(((size_t)sg->n_tensors + 1) * sizeof *next), *stamp = stamps(sg);
    for (int i = 0; i < n; i++)
        table_row(sg, pf, o, &ix, i, bucket, next, stamp, tb);
    free(bucket), free(next), free(stamp);
    index_free(&ix);
}

static const cell *at(const table *tb, int i, int j, int r)
{
    return &tb->c[((size_t)i * tb->n + j) * tb->R + r];
}

/* ---- choosing by the objective ---- */

/* Whether a is no more than b, up to the rounding of sums taken in another order. */
static bool no_more(double a, double b)
{
    return a <= b + 1e-12 * fabs(b);
}

/* The one of n candidates (bill usd[k], latency lat[k]) that o->objective picks, as Lambda
 * Power Tuning's analyzer does (docs/serverless.md, "The answer a user would choose"): COST the
 * cheapest, or with a tolerance the fastest of those at most that much dearer; SPEED the
 * fastest; BALANCED the least W x usd / the dearest + (1 - W) x latency / the slowest. Ties go
 * to the cheaper. -1 when n is 0. */
static int pick(int n, const double *usd, const double *lat, const pl_sl_opts *o)
{
    double cheapest = INFINITY, dearest = 0, slowest = 0, w = o->balanced_weight;
    for (int k = 0; k < n; k++)
        cheapest = fmin(cheapest, usd[k]), dearest = fmax(dearest, usd[k]),
        slowest = fmax(slowest, lat[k]);
    double within = cheapest * (1 + (o->cost_tolerance > 0 ? o->cost_tolerance : 0));
    int best = -1;
    double bv = INFINITY;
    for (int k = 0; k < n; k++) {
        double v = lat[k];
        if (o->objective == PL_SL_BALANCED)
            v = w * (dearest > 0 ? usd[k] / dearest : 0) +
                (1 - w) * (slowest > 0 ? lat[k] / slowest : 0);
        else if (o->objective == PL_SL_COST && !no_more(usd[k], within))
            continue;
        if (best < 0 || v < bv || (v == bv && usd[k] < usd[best])) best = k, bv = v;
    }
    return best;
}

int pl_sl_pick(const pl_sl_plan *p, int n, const pl_sl_opts *o)
{
    double *usd = pl_malloc(((size_t)n + 1) * sizeof *usd);
    double *lat = pl_malloc(((size_t)n + 1) * sizeof *lat);
    for (int k = 0; k < n; k++)
        usd[k] = p[k].usd, lat[k] = p[k].latency_s;
    int k = pick(n, usd, lat, o);
    free(usd), free(lat);
    return k;
}

/* ---- MOPAR: least bill, latency at most the bound (Eq. 6) ---- */

/* A partition of layers [0, j]: its bill, its latency, its last slice's memory option, the
 * label it extends (at layer `prev_j`, index `prev`; -1 for the first slice). */
typedef struct label {
    double usd, time_s;
    int prev_j, prev, opt;
} label;

typedef struct front {
    label *l;
    int n, cap;
} front;

/* The first label of f dearer than usd, at or after lo (none before lo is dearer): a galloping
 * search, so that a run of candidates in order of bill finds each place near the last. */
static int first_dearer(const front *f, double usd, int lo)
{
    int hi = lo, step = 1;
    while (hi < f->n && f->l[hi].usd <= usd)
        lo = hi + 1, hi += step, step *= 2;
    if (hi > f->n) hi = f->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (f->l[mid].usd <= usd)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds l to f, which holds the labels no other beats on both bill and latency, cheapest first
 * (so each faster than the one before), unless one of them is at least as cheap and as fast;
 * drops those l beats. A search from `from` (no label before it dearer than l): the partitions
 * of the layers before j make many times more candidates than fronts keep. Returns where a
 * candidate no cheaper than l may start its search. */
static int insert_from(front *f, const label *l, int from)
{
    int p = first_dearer(f, l->usd, from), first = p;
    if (p > 0 && f->l[p - 1].time_s <= l->time_s) return p; /* the fastest of those as cheap */
    while (first > 0 && f->l[first - 1].usd == l->usd)      /* as cheap and slower */
        first--;
    int last = p;
    while (last < f->n && f->l[last].time_s >= l->time_s) /* dearer and no faster */
        last++;
    int keep = f->n - last; /* labels after the ones l beats */
    if (first == last) pl_grow((void **)&f->l, &f->cap, f->n, sizeof *f->l);
    memmove(f->l + first + 1, f->l + last, (size_t)keep * sizeof *f->l);
    f->l[first] = *l, f->n = first + 1 + keep;
    return first + 1;
}

static void insert(front *f, label l)
{
    insert_from(f, &l, 0);
}

/* Beyond `cap` labels, keeps evenly spaced ones. True when it dropped some. */
static bool thin(front *f, int cap)
{
    if (f->n <= cap) return false;
    for (int k = 0; k < cap; k++)
        f->l[k] = f->l[(int)((double)k * (f->n - 1) / (cap - 1))];
    f->n = cap;
    return true;
}

/* Bounding the DP (docs/serverless.md, "Bounding the front"). Every front of the layers before
 * j is extended by every slice ending at j, so the work is the sum over j of every earlier
 * front's labels: cubic in the layers when the fronts grow with them (a fan-out of 3,001 ops
 * gives 3,001 layers and fronts of as many labels, none of which the last front keeps). Two
 * things bound it. Exactly: a label whose partition cannot be completed into a plan that no
 * known whole partition beats on both bill and latency is dropped, before anything extends it;
 * the last front is the same, label for label. Then a budget, for fronts that are large and
 * all of use (no model of the zoo reaches it): past `budget` extensions, each earlier front is
 * extended through a few evenly spaced labels (its cheapest and fastest among them), so the
 * rest costs about a quarter of the budget more; the DP is then cut short (not exact, and said
 * so). A count rather than a clock, so that the same input gives the same front. */
typedef struct dp {
    const table *tb;
    double bound;    /* the latency bound (INFINITY: none) */
    int cap;         /* the most labels a front keeps */
    long budget;     /* extensions before the DP samples */
    int sample;      /* labels of each earlier front extended once past the budget; 0: all */
    long work;       /* extensions made */
    bool exact, cut; /* no front thinned; the budget was passed */
    /* [j]: of the partitions of layers [j, n) (0 at n), the least bill and the latency of one
       that bills it; the least latency and the bill of one that takes it (INFINITY: none) */
    double *rest_usd, *rest_usd_s, *rest_s, *rest_s_usd;
    front known; /* (bill, latency) of whole partitions, a Pareto set: prune's yardstick */
} dp;

/* A relative margin on prune's comparisons: a label's bounds and the known plans are sums taken
 * in another order than the DP's, so equal figures may differ in their last bits. */
#define SL_PRUNE_MARGIN 1e-9

/* The least bill and the least latency of the partitions of every suffix [i, n), each with the
 * other figure of a partition that reaches it (the cheaper, or faster, on a tie): a backward
 * scalar DP over the same table, n^2 R. */
static void rest_build(dp *d)
{
    const table *tb = d->tb;
    int n = tb->n;
    double **a[] = {&d->rest_usd, &d->rest_usd_s, &d->rest_s, &d->rest_s_usd};
    for (int x = 0; x < 4; x++)
        *a[x] = pl_malloc(((size_t)n + 1) * sizeof **a[x]), (*a[x])[n] = 0;
    for (int i = n - 1; i >= 0; i--) {
        double cu = INFINITY, cs = INFINITY, fs = INFINITY, fu = INFINITY;
        for (int j = i; j < n && at(tb, i, j, 0)->fits; j++) /* longer slices need more */
            for (int r = 0; r < tb->R; r++) {
                const cell *c = at(tb, i, j, r);
                if (!c->fits) continue;
                double u = c->usd + d->rest_usd[j + 1], s = c->time_s + d->rest_usd_s[j + 1];
                if (u < cu || (u == cu && s < cs)) cu = u, cs = s;
                u = c->usd + d->rest_s_usd[j + 1], s = c->time_s + d->rest_s[j + 1];
                if (s < fs || (s == fs && u < fu)) fs = s, fu = u;
            }
        d->rest_usd[i] = cu, d->rest_usd_s[i] = cs, d->rest_s[i] = fs, d->rest_s_usd[i] = fu;
    }
}

/* Whether a known whole partition is cheaper and faster than (usd, time_s), both by more than
 * the margin. known is cheapest first, so the last one cheap enough is the fastest of those. */
static bool beaten(const front *known, double usd, double time_s)
{
    int lo = 0, hi = known->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (known->l[mid].usd * (1 + SL_PRUNE_MARGIN) < usd)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && known->l[lo - 1].time_s * (1 + SL_PRUNE_MARGIN) < time_s;
}

/* A whole partition's figures, as a label that extends nothing. */
static label point(double usd, double time_s)
{
    return (label){usd, time_s, -1, -1, 0};
}

/* Records the whole partitions f's labels (partitions of [0, j]) make with the cheapest and with
 * the fastest partition of [j + 1, n), then drops every label of f whose least bill and least
 * latency to the end a known partition beats on both, or whose least latency passes the
 * bound: no partition it starts is on the last front or within the bound. The known
 * partitions are a yardstick only while the DP is exact: once a front was thinned or the DP
 * sampled, the partitions that beat a label may no longer be found, and dropping it could
 * leave the last front without them (the bound still holds). */
static void prune(dp *d, front *f, int j)
{
    double ru = d->rest_usd[j + 1], rs = d->rest_s[j + 1];
    for (int k = 0; d->exact && k < f->n; k++) {
        const label *l = &f->l[k];
        if (isfinite(ru)) insert(&d->known, point(l->usd + ru, l->time_s + d->rest_usd_s[j + 1]));
        if (isfinite(rs)) insert(&d->known, point(l->usd + d->rest_s_usd[j + 1], l->time_s + rs));
    }
    thin(&d->known, d->cap); /* any of them is a yardstick: dropping some loses no exactness */
    int m = 0;
    for (int k = 0; k < f->n; k++) {
        double u = f->l[k].usd + ru, s = f->l[k].time_s + rs;
        if (s > d->bound * (1 + SL_PRUNE_MARGIN) || (d->exact && beaten(&d->known, u, s))) continue;
        f->l[m++] = f->l[k];
    }
    f->n = m;
}

/* Past the budget at layer j: each earlier front is extended through `sample` labels from now
 * on, as many as spend a quarter of the budget more on the (i, j, option) triples left, two at
 * least (the cheapest and the fastest, so that the last front keeps the cheapest and the
 * fastest partitions: each one's prefixes are the cheapest, the fastest, of their layers). */
static void cut_short(dp *d, int j)
{
    double triples = 0;
    for (int jj = j; jj < d->tb->n; jj++)
        triples += (double)(jj + 1) * d->tb->R;
    double s = floor(d->budget / 4.0 / fmax(triples, 1));
    d->sample = s < 2 ? 2 : s > d->cap ? d->cap : (int)s;
    d->cut = true, d->exact = false;
}

/* Extends label k of front p (of the layers before slice c, which starts at layer i and takes
 * memory option r) by c into f, searching from `at`; where the next search may start. */
static int extend_one(dp *d, const front *p, int k, int i, const cell *c, int r, front *f, int at)
{
    label l = {p->l[k].usd + c->usd, p->l[k].time_s + c->time_s, i - 1, k, r};
    return l.time_s <= d->bound ? insert_from(f, &l, at) : at;
}

/* Extends front p by slice c into f: every label, or past the budget `sample` evenly spaced
 * ones. Either way in order of bill, so that each search starts where the last ended. */
static void extend(dp *d, const front *p, int i, const cell *c, int r, front *f)
{
    int s = d->sample && p->n > d->sample ? d->sample : p->n, at = 0;
    if (s == p->n)
        for (int k = 0; k < s; k++)
            at = extend_one(d, p, k, i, c, r, f, at);
    else
        for (int m = 0; m < s; m++)
            at = extend_one(d, p, (int)((double)m * (p->n - 1) / (s - 1)), i, c, r, f, at);
    d->work += s;
}

/* The Pareto DP: fronts[j] holds the partitions of layers [0, j] within the latency bound that
 * may still lead to the last front, each front at most `cap` labels. */
static void mopar_fronts(dp *d, front *fronts)
{
    const table *tb = d->tb;
    for (int j = 0; j < tb->n; j++) {
        front *f = &fronts[j];
        for (int i = 0; i <= j; i++) {
            if (!d->cut && d->work > d->budget) cut_short(d, j);
            for (int r = 0; r < tb->R; r++) {
                const cell *c = at(tb, i, j, r);
                if (!c->fits) continue;
                if (i > 0) {
                    extend(d, &fronts[i - 1], i, c, r, f);
                } else if (c->time_s <= d->bound) {
                    d->work++;
                    insert(f, (label){c->usd, c->time_s, -1, -1, r});
                }
            }
        }
        prune(d, f, j);
        if (thin(f, d->cap)) d->exact = false;
    }
}

/* The slice ends and vCPU options of partition k of fronts[n - 1]; their count. */
static int backtrack(const front *fronts, const table *tb, int k, int *ends, int *vcpus)
{
    int m = 0, j = tb->n - 1;
    while (j >= 0) {
        const label *l = &fronts[j].l[k];
        ends[m] = j, vcpus[m++] = tb->v[l->opt];
        j = l->prev_j, k = l->prev;
    }
    for (int a = 0, b = m - 1; a < b; a++, b--) {
        int t = ends[a], v = vcpus[a];
        ends[a] = ends[b], ends[b] = t, vcpus[a] = vcpus[b], vcpus[b] = v;
    }
    return m;
}

/* The most labels a front keeps (o->front_cap; thin spaces the labels it keeps from the
 * first to the last: two at least). */
static int front_cap(const pl_sl_opts *o)
{
    return o->front_cap <= 0 ? PL_SL_FRONT_CAP : o->front_cap < 2 ? 2 : o->front_cap;
}

/* What a run of the DP did: whether it kept every label (no front thinned, not cut short),
 * whether it passed its budget, and its extensions. */
typedef struct dp_info {
    bool exact, cut;
    long work;
} dp_info;

/* The fronts of tb's partitions within `bound`; free with fronts_free. */
static front *fronts_make(const table *tb, double bound, const pl_sl_opts *o, dp_info *info)
{
    front *fronts = pl_calloc((size_t)tb->n + 1, sizeof *fronts);
    dp d = {.tb = tb, .bound = bound, .cap = front_cap(o), .exact = true};
    d.budget = o->front_work > 0 ? o->front_work : PL_SL_FRONT_WORK;
    rest_build(&d);
    mopar_fronts(&d, fronts);
    *info = (dp_info){d.exact, d.cut, d.work};
    free(d.rest_usd), free(d.rest_usd_s), free(d.rest_s), free(d.rest_s_usd), free(d.known.l);
    return fronts;
}

static void fronts_free(front *fronts, int n)
{
    for (int j = 0; j < n; j++)
        free(fronts[j].l);
    free(fronts);
}

/* The partition the objective picks among those of fronts[n - 1] (cheapest first). */
static int front_pick(const front *last, const pl_sl_opts *o)
{
    double *usd = pl_malloc(((size_t)last->n + 1) * sizeof *usd);
    double *lat = pl_malloc(((size_t)last->n + 1) * sizeof *lat);
    for (int k = 0; k < last->n; k++)
        usd[k] = last->l[k].usd, lat[k] = last->l[k].time_s;
    int k = pick(last->n, usd, lat, o);
    free(usd), free(lat);
    return k;
}

/* MOPAR's slice ends: of the partitions within the bound, the one the objective picks (with
 * COST and no tolerance, Eq. 6's least bill); *exact cleared when a front passed its cap or the
 * DP its budget. */
static int mopar_ends(const table *tb, double bound, const pl_sl_opts *o, int *ends, int *vcpus,
                      bool *exact)
{
    dp_info info;
    front *fronts = fronts_make(tb, bound, o, &info);
    *exact &= info.exact;
    const front *last = &fronts[tb->n - 1];
    int m = last->n ? backtrack(fronts, tb, front_pick(last, o), ends, vcpus) : 0;
    fronts_free(fronts, tb->n);
    return m;
}

/* ---- baselines ---- */

/* k slices of as equal a number of layers as can be. */
static int uniform_ends(int n, int k, int *ends)
{
    if (k > n) k = n;
    for (int s = 0; s < k; s++)
        ends[s] = (int)(((long long)(s + 1) * n) / k) - 1;
    return k;
}

/* The faster memory option of slice [i, j] (the cheaper on a tie); -1 when none fits. */
static int faster(const table *tb, int i, int j)
{
    if (!at(tb, i, j, 0)->fits) return -1;
    int best = 0;
    for (int r = 1; r < tb->R; r++) {
        const cell *a = at(tb, i, j, best), *b = at(tb, i, j, r);
        if (b->fits && (b->time_s < a->time_s || (b->time_s == a->time_s && b->usd < a->usd)))
            best = r;
    }
    return best;
}

/* k slices of least latency: best[s][j] = the least latency of layers [0, j] in s + 1 slices,
 * each slice at its faster memory option. */
static int latency_ends(const table *tb, int k, int *ends, int *vcpus)
{
    int n = tb->n;
    if (k > n) k = n;
    double *best = pl_malloc((size_t)k * n * sizeof *best);
    int *arg = pl_malloc((size_t)k * n * sizeof *arg);
    for (size_t x = 0; x < (size_t)k * n; x++)
        best[x] = INFINITY, arg[x] = -1;
    for (int s = 0; s < k; s++)
        for (int j = s; j < n; j++)
            for (int i = s; i <= j; i++) {
                int r = faster(tb, i, j);
                double before =
                    s == 0 ? (i == 0 ? 0 : INFINITY) : best[(size_t)(s - 1) * n + i - 1];
                if (r < 0 || !isfinite(before)) continue;
                const cell *c = at(tb, i, j, r);
                if (before + c->time_s < best[(size_t)s * n + j])
                    best[(size_t)s * n + j] = before + c->time_s, arg[(size_t)s * n + j] = i;
            }
    int m = 0;
    if (isfinite(best[(size_t)(k - 1) * n + n - 1])) {
        for (int s = k - 1, j = n - 1; s >= 0; j = arg[(size_t)s * n + j] - 1, s--)
            ends[s] = j, vcpus[s] = tb->v[faster(tb, arg[(size_t)s * n + j], j)];
        m = k;
    }
    free(best), free(arg);
    return m;
}

/* ---- the algorithms ---- */

/* The memory option of the unsplit function: of the whole model at MOPAR's two (what it needs,
 * a whole vCPU), the one the objective picks, so that MOPAR's DP, over the same options, always
 * has the unsplit plan within its bound; -1 when it does not fit one function. */
static int unsplit_vcpus(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o)
{
    int v[SL_OPTIONS_MAX], opt[SL_OPTIONS_MAX], R = sl_mem_options(pf, false, v), end = sg->n - 1;
    double usd[SL_OPTIONS_MAX], lat[SL_OPTIONS_MAX];
    int n = 0;
    for (int r = 0; r < R; r++) {
        pl_sl_plan u;
        if (pl_sl_price(sg, pf, o, &end, &v[r], 1, &u) < 0) continue;
        if (r == 0 || u.slices[0].raised) /* an option that changes nothing is option 0 */
            usd[n] = u.usd, lat[n] = u.latency_s, opt[n++] = v[r];
        pl_sl_plan_free(&u);
    }
    int k = pick(n, usd, lat, o);
    return k < 0 ? -1 : opt[k];
}

/* MOPAR's latency bound: the unsplit model's latency (at the memory the objective picks for
 * it), with the slack allowed; none (INFINITY) when the whole model does not fit one function,
 * so there is no unsplit latency to keep. */
double sl_latency_bound(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o)
{
    pl_sl_plan u;
    int end = sg->n - 1, v = unsplit_vcpus(sg, pf, o);
    if (v < 0 || pl_sl_price(sg, pf, o, &end, &v, 1, &u) < 0) return INFINITY;
    double lat = u.latency_s * (1 + (o->latency_slack > 0 ? o->latency_slack : 0));
    pl_sl_plan_free(&u);
    return lat;
}

/* The slice ends (and memory options) algorithm a chooses; their count, 0 when none fits.
 * Uniform takes the memory its slices need, as MOPAR's paper deploys them. */
static int ends_of(const pl_sl_graph *sg, const pl_platform *pf, const table *tb,
                   const pl_sl_opts *o, pl_sl_algo a, int k, double bound, int *ends, int *vcpus,
                   bool *exact)
{
    switch (a) {
    case PL_SL_UNSPLIT:
        ends[0] = sg->n - 1, vcpus[0] = unsplit_vcpus(sg, pf, o);
        return vcpus[0] < 0 ? 0 : 1;
    case PL_SL_UNIFORM:
        return uniform_ends(sg->n, k, ends);
    case PL_SL_LATENCY_DP:
        return latency_ends(tb, k, ends, vcpus);
    default:
        return mopar_ends(tb, bound, o, ends, vcpus, exact);
    }
}

/* 0 when every layer fits a function of the platform's largest size; else -1 with err. */
static int layers_fit(const pl_sl_graph *sg, const pl_platform *pf, pl_err *err)
{
    if (sg->n < 1) return pl_err_set(err, "the model has no layers to partition");
    int *stamp = stamps(sg), rc = 0;
    for (int l = 0; l < sg->n && rc == 0; l++) {
        span one = {0};
        add_layer(&one, sg, &sg->layers[l], stamp, l);
        if (memory_of(&one, pf, 0) < 0)
            rc = pl_err_set(err,
                            "layer %d needs %.0f MB (weights %.0f, activations %.0f) with "
                            "the runtime's %.0f MB, more than %s allows (%.0f MB)",
                            l, (one.weight_bytes + one.act_bytes) / PL_PLATFORM_MB_BYTES,
                            one.weight_bytes / PL_PLATFORM_MB_BYTES,
                            one.act_bytes / PL_PLATFORM_MB_BYTES, pf->runtime_base_mb, pf->name,
                            pf->mem_max_mb);
    }
    free(stamp);
    return rc;
}

/* NonSplit's plan: at most SL_NONSPLIT_K_MAX functions (MOPAR's count, or k), CBC started from
 * MOPAR's slices merged into that many. */
static int nonsplit_plan(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                         const table *tb, int k, double bound, pl_sl_plan *out, pl_err *err)
{
    int *ends = pl_malloc(((size_t)sg->n + 1) * sizeof *ends);
    int *vcpus = pl_calloc((size_t)sg->n + 1, sizeof *vcpus), *start = NULL;
    bool exact = true;
    int mk = mopar_ends(tb, bound * (1 + 1e-12), o, ends, vcpus, &exact);
    k = k > 0 ? k : mk; /* MOPAR's slice count */
    int K = k < SL_NONSPLIT_K_MAX ? k : SL_NONSPLIT_K_MAX;
    if (mk > 1 && K > 1) { /* MOPAR's slices, consecutive ones merged into at most K */
        start = pl_malloc(((size_t)sg->n + 1) * sizeof *start);
        for (int l = 0, f = 0; l < sg->n; l++)
            start[l] = (int)((long long)f * K / mk), f += l == ends[f];
    }
    free(ends), free(vcpus);
    int rc = sl_nonsplit(sg, pf, o, K, bound, start, out, err);
    free(start);
    return rc;
}

int pl_sl_plan_make(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o, pl_sl_algo a,
                    int k, pl_sl_plan *out, pl_err *err)
{
    if (a == PL_SL_CLOCKWORK) return sl_clockwork(sg, pf, o, out, err); /* clockwork.c */
    memset(out, 0, sizeof *out);
    if (layers_fit(sg, pf, err) < 0) return -1;
    double bound =
        a == PL_SL_MOPAR || a == PL_SL_NONSPLIT || k <= 0 ? sl_latency_bound(sg, pf, o) : INFINITY;
    table tb = {0};
    if (a != PL_SL_UNSPLIT) table_build(sg, pf, o, false, &tb);
    if (a == PL_SL_NONSPLIT) {
        int rc = nonsplit_plan(sg, pf, o, &tb, k, bound, out, err);
        free(tb.c);
        return rc;
    }
    int *ends = pl_malloc(((size_t)sg->n + 1) * sizeof *ends), m;
    int *vcpus = pl_calloc((size_t)sg->n + 1, sizeof *vcpus);
    bool exact = true;
    if (k <= 0 && (a == PL_SL_UNIFORM || a == PL_SL_LATENCY_DP)) /* MOPAR's slice count */
        k = mopar_ends(&tb, bound * (1 + 1e-12), o, ends, vcpus, &exact);
    memset(vcpus, 0, ((size_t)sg->n + 1) * sizeof *vcpus);
    m = ends_of(sg, pf, &tb, o, a, k, bound * (1 + 1e-12), ends, vcpus, &exact);
    int rc = m > 0 ? pl_sl_price(sg, pf, o, ends, vcpus, m, out) : -1;
    if (rc == 0)
        out->algo = a, out->exact = exact;
    else
        pl_err_set(err, "%s: no partition into functions of at most %.0f MB fits",
                   pl_sl_algo_name(a), pf->mem_max_mb);
    free(vcpus), free(ends), free(tb.c);
    return rc;
}

/* ---- the front ---- */

/* A copy of p that the caller frees (pl_sl_plan_free). */
static void plan_copy(const pl_sl_plan *p, int n_layers, pl_sl_plan *out)
{
    *out = *p;
    out->slices = pl_malloc(((size_t)p->n + 1) * sizeof *out->slices);
    memcpy(out->slices, p->slices, (size_t)p->n * sizeof *p->slices);
    if (p->fn_of) {
        out->fn_of = pl_malloc(((size_t)n_layers + 1) * sizeof *out->fn_of);
        memcpy(out->fn_of, p->fn_of, (size_t)n_layers * sizeof *p->fn_of);
    }
}

int pl_sl_front_make(const pl_sl_graph *sg, const pl_platform *pf, const pl_sl_opts *o,
                     pl_sl_front *out, pl_err *err)
{
    memset(out, 0, sizeof *out);
    if (layers_fit(sg, pf, err) < 0) return -1;
    table tb = {0};
    table_build(sg, pf, o, true, &tb);
    dp_info info;
    front *fronts = fronts_make(&tb, INFINITY, o, &info);
    bool exact = info.exact;
    const front *last = &fronts[sg->n - 1];
    int *ends = pl_malloc(((size_t)sg->n + 1) * sizeof *ends);
    int *vcpus = pl_malloc(((size_t)sg->n + 1) * sizeof *vcpus);
    out->plans = pl_calloc((size_t)last->n + 1, sizeof *out->plans);
    out->by = pl_calloc((size_t)last->n + 1, sizeof *out->by);
    out->found = pl_calloc((size_t)last->n + 1, sizeof *out->found);
    out->cap = last->n + 1, out->exact = exact;
    out->cut_short = info.cut, out->extensions = info.work;
    int bad = -1; /* a label whose partition does not price: the table and pl_sl_price disagree */
    for (int k = 0; k < last->n && bad < 0; k++) {
        int m = backtrack(fronts, &tb, k, ends, vcpus);
        if (pl_sl_price(sg, pf, o, ends, vcpus, m, &out->plans[out->n]) < 0) {
            bad = k;
            break;
        }
        out->plans[out->n].algo = PL_SL_MOPAR, out->plans[out->n].exact = exact;
        out->found[out->n] = 1, out->by[out->n++] = -1;
    }
    free(ends), free(vcpus), free(tb.c);
    fronts_free(fronts, sg->n);
    if (out->n && bad < 0) return 0;
    pl_sl_front_free(out);
    if (bad >= 0) /* never dropped in silence: the front would not be the front */
        return pl_err_set(err, "the front's plan %d does not fit when priced (a placer bug)", bad);
    return pl_err_set(err, "no partition into functions of at most %.0f MB fits", pf->mem_max_mb);
}

void pl_sl_front_add(pl_sl_front *f, const pl_sl_plan *p, int n_layers)
{
    for (int k = 0; k < f->n; k++) {
        const pl_sl_plan *q = &f->plans[k];
        if (!no_more(q->usd, p->usd) || !no_more(q->latency_s, p->latency_s)) continue;
        if (no_more(p->usd, q->usd) && no_more(p->latency_s, q->latency_s))
            f->found[k] |= 1u << (p->algo + 1); /* the same bill and latency */
        return;
    }
    int m = 0; /* drops the plans p beats, keeps the rest cheapest first */
    for (int k = 0; k < f->n; k++) {
        if (no_more(p->usd, f->plans[k].usd) && no_more(p->latency_s, f->plans[k].latency_s)) {
            pl_sl_plan_free(&f->plans[k]);
            continue;
        }
        f->plans[m] = f->plans[k], f->by[m] = f->by[k], f->found[m++] = f->found[k];
    }
    f->n = m;
    if (f->n + 1 >= f->cap) {
        f->cap = 2 * f->n + 2;
        f->plans = pl_realloc(f->plans, (size_t)f->cap * sizeof *f->plans);
        f->by = pl_realloc(f->by, (size_t)f->cap * sizeof *f->by);
        f->found = pl_realloc(f->found, (size_t)f->cap * sizeof *f->found);
    }
    int at = f->n;
    while (at > 0 && f->plans[at - 1].usd > p->usd)
        at--;
    memmove(f->plans + at + 1, f->plans + at, (size_t)(f->n - at) * sizeof *f->plans);
    memmove(f->by + at + 1, f->by + at, (size_t)(f->n - at) * sizeof *f->by);
    memmove(f->found + at + 1, f->found + at, (size_t)(f->n - at) * sizeof *f->found);
    plan_copy(p, n_layers, &f->plans[at]);
    f->by[at] = p->algo, f->found[at] = 1u << (p->algo + 1), f->n++;
}

int pl_sl_knee(const pl_sl_plan *p, int n)
{
    if (n <= 0) return -1;
    double u0 = INFINITY, u1 = -INFINITY, l0 = INFINITY, l1 = -INFINITY;
    int cheapest = 0;
    for (int k = 0; k < n; k++) {
        if (p[k].usd < p[cheapest].usd) cheapest = k;
        u0 = fmin(u0, p[k].usd), u1 = fmax(u1, p[k].usd);
        l0 = fmin(l0, p[k].latency_s), l1 = fmax(l1, p[k].latency_s);
    }
    if (!(u1 > u0) || !(l1 > l0)) return cheapest;
    int knee = cheapest;
    double most = 0; /* below the chord from the cheapest (0, 1) to the fastest (1, 0) */
    for (int k = 0; k < n; k++) {
        double d = 1 - (p[k].usd - u0) / (u1 - u0) - (p[k].latency_s - l0) / (l1 - l0);
        if (d > most) most = d, knee = k;
    }
    return knee;
}

void pl_sl_front_free(pl_sl_front *f)
{
    for (int k = 0; k < f->n; k++)
        pl_sl_plan_free(&f->plans[k]);
    free(f->plans), free(f->by), free(f->found);
    memset(f, 0, sizeof *f);
}
