/* m_topo.c: m-TOPO (Baechi, Jeon et al., SoCC 2020): walk the topological order and fill one
 * device after another, each up to its share of the model's memory.
 *
 * Choices where the paper leaves room: an op's memory "mass" is what it adds to a device,
 * its new weights plus its outputs and declared working memory (Baechi's permanent plus
 * temporary memory); a device's share is the model's total mass split in proportion to the
 * devices' memory (equal shares when some device has no size); the last device takes what is
 * left. Capacity is checked with the static memory model (docs/placement.md). An op the
 * current device cannot run goes to the first later device that can; an op that fits on no
 * later device goes to the first earlier one with room, before the run gives up. */
#include "sched.h"

#include <math.h>

/* What an op adds besides weights: its outputs and declared working memory. */
static double act_mass(const pl_cost *k, int v)
{
    double extra = k->g->ops[v].extra_memory_bytes;
    return k->out_bytes[v] + (extra > 0 ? extra : 0);
}

static double op_mass(const pl_cost *k, const pk_mem_track *m, int v, int d)
{
    return pk_mem_new_weights(m, v, d) + act_mass(k, v);
}

/* Each device's share of the total mass: proportional to its memory. */
static void shares(const pl_cost *k, const pk_mem_track *m, double *share)
{
    double total = pk_total_weights(k), cap = 0;
    for (int v = 0; v < k->n_ops; v++)
        total += act_mass(k, v);
    for (int d = 0; d < k->n_devs; d++)
        cap += m->cap[d];
    for (int d = 0; d < k->n_devs; d++)
        share[d] = isfinite(cap) && cap > 0 ? total * m->cap[d] / cap : total / k->n_devs;
}

static bool can(const pl_cost *k, const pk_mem_track *m, int v, int d)
{
    return isfinite(pl_cost_op_s(k, v, d)) && pk_mem_fits(m, v, d);
}

/* Where v goes: the current device if it has room and share left, else the next one. */
static int pick(const pl_cost *k, const pk_mem_track *m, const double *share, const double *mass,
                int *cur, int v)
{
    int last = k->n_devs - 1;
    while (*cur < last && isfinite(pl_cost_op_s(k, v, *cur)) &&
           ((mass[*cur] > 0 && mass[*cur] + op_mass(k, m, v, *cur) > share[*cur]) ||
            !pk_mem_fits(m, v, *cur)))
        (*cur)++;
    for (int d = *cur; d <= last; d++)
        if (can(k, m, v, d)) return d;
    for (int d = 0; d < *cur; d++)
        if (can(k, m, v, d)) return d;
    return -1;
}

int pl_place_m_topo(const pl_cost *k, const pl_place_opts *o, pl_plan *out, pl_err *err)
{
    (void)o;
    if (pk_precheck(k, err) < 0) return -1;
    pk_mem_track m;
    pk_mem_init(&m, k);
    double *share = pl_malloc(k->n_devs * sizeof *share);
    double *mass = pl_calloc(k->n_devs, sizeof *mass);
    shares(k, &m, share);
    int cur = 0, rc = 0;
    for (int i = 0; i < k->n_ops && rc == 0; i++) {
        int v = k->g->topo[i], d = pick(k, &m, share, mass, &cur, v);
        if (d < 0) {
            rc = pk_no_room(k, &m, "m-topo", v, err);
            break;
        }
        mass[d] += op_mass(k, &m, v, d);
        pk_mem_add(&m, v, out->dev[v] = d);
    }
    free(share), free(mass);
    pk_mem_free(&m);
    return rc;
}
