/* measured.c: what place and compare share for a learned search: --measured (its episodes
 * scored by real runs on this machine, docs/learn.md "Measured episodes") and its progress. */
#include "cli.h"
#include "placer/trial.h"

#include <math.h>
#include <stdio.h>

/* pl_place_opts.measure: the placement run for real by the ort trial worker. */
static double measure(const pl_plan *p, void *user, pl_err *err)
{
    const cli_measured *m = user;
    double t;
    return pl_trial_measure_plan(m->w, m->x->g, m->x->c, p, &t, err) < 0 ? -1 : t;
}

cli_exit cli_measured_open(const char *verb, const cli_common *co, const cli_ctx *x,
                           pl_place_opts *po, cli_measured *m)
{
    *m = (cli_measured){.x = x};
    pl_err err = {""};
    if (co->n_dims || co->n_shapes)
        return cli_fail(verb, "--measured runs the model file as it is: --dim and --input "
                              "cannot be used with it");
    if (pl_trial_measure_check(x->c, &err) < 0) return cli_fail(verb, "--measured: %s", err.msg);
    m->w = pl_trial_ort_new(&(pl_trial_ort_opts){.model_path = co->model});
    cli_progress("--measured: starting the onnxruntime worker (loading %s)", co->model);
    int rc = pl_trial_start(m->w, &err);
    cli_progress("%s", "");
    if (rc < 0) {
        cli_measured_close(m);
        return cli_fail(verb, "--measured: %s", err.msg);
    }
    po->measure = measure, po->measure_user = m;
    return CLI_EXIT_OK;
}

void cli_measured_close(cli_measured *m)
{
    pl_trial_worker_free(m->w);
    m->w = NULL;
}

void cli_place_progress(const char *algo, int step, int total, double best_s, void *user)
{
    (void)user;
    char of[32] = "";
    if (total > 0) snprintf(of, sizeof of, "/%d", total);
    if (isfinite(best_s))
        cli_progress("%s: episode %d%s, best %.4f ms", algo, step, of, best_s * 1e3);
    else
        cli_progress("%s: episode %d%s, nothing fits yet", algo, step, of);
}
