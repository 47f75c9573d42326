/* bench_gpu: placer's GPU predictions against published measurements (issue 29; docs/cost.md,
 * "GPU kernels"). Fits the GPU kernel parameters on the figures marked "fit" and prints every
 * figure predicted (the roofline, the built-in parameters and the fit) against published, each
 * marked fit, held-out or host-bound, then the summary errors, the order of networks on each GPU
 * and the ratios between GPUs.
 *
 *   bench_gpu bench/gpu-published.json models
 */
#include "placer/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mark(const pl_pub_figure *f)
{
    return f->host_bound ? "host" : f->held_out ? "held" : "fit";
}

static double err_of(double pred, double pub)
{
    return 100 * (pred / pub - 1);
}

static void print_table(const pl_published *p, const double *roof, const double *builtin,
                        const double *fit)
{
    printf("%-30s %-16s %-16s %-5s %5s %-4s %-4s %9s %9s %7s %9s %7s %9s %7s\n", "source", "gpu",
           "network", "mode", "batch", "prec", "set", "pub ms", "roof ms", "err %", "built ms",
           "err %", "fit ms", "err %");
    for (int i = 0; i < p->n; i++) {
        const pl_pub_figure *f = &p->fig[i];
        double pub = f->s * 1e3;
        printf("%-30.30s %-16.16s %-16.16s %-5s %5d %-4s %-4s %9.2f %9.2f %+7.1f %9.2f %+7.1f "
               "%9.2f %+7.1f\n",
               f->source, f->gpu, f->network, f->mode == PL_PUB_FORWARD ? "fwd" : "train", f->batch,
               f->tf32 ? "tf32" : pl_precision_name(f->precision), mark(f), pub, roof[i] * 1e3,
               err_of(roof[i], f->s), builtin[i] * 1e3, err_of(builtin[i], f->s), fit[i] * 1e3,
               err_of(fit[i], f->s));
    }
}

/* Median and worst |err| of one set ("fit", "held") under predictions `pred`. */
static void summary(const pl_published *p, const double *pred, const char *name, const char *set)
{
    double *e = malloc(((size_t)p->n + 1) * sizeof *e), worst = 0;
    int n = 0, within25 = 0;
    for (int i = 0; i < p->n; i++) {
        if (strcmp(mark(&p->fig[i]), set)) continue;
        e[n] = fabs(pred[i] / p->fig[i].s - 1);
        worst = fmax(worst, e[n]);
        within25 += e[n] <= 0.25;
        n++;
    }
    if (n)
        printf("  %-10s %-5s %3d figures: median |err| %5.1f %%, worst %6.1f %%, within 25 %%: "
               "%d of %d\n",
               name, set, n, 100 * pl_median(e, n), 100 * worst, within25, n);
    free(e);
}

static bool same_setting(const pl_pub_figure *a, const pl_pub_figure *b)
{
    return !strcmp(a->source, b->source) && a->mode == b->mode && a->batch == b->batch &&
           a->precision == b->precision && a->tf32 == b->tf32;
}

/* Pairs of networks timed on one GPU in one setting: is the faster one predicted faster? */
static void order(const pl_published *p, const double *pred, const char *name)
{
    int pairs = 0, right = 0;
    for (int i = 0; i < p->n; i++)
        for (int j = i + 1; j < p->n; j++) {
            const pl_pub_figure *a = &p->fig[i], *b = &p->fig[j];
            if (a->host_bound || b->host_bound || strcmp(a->gpu, b->gpu) ||
                !strcmp(a->network, b->network) || !same_setting(a, b))
                continue;
            pairs++;
            right += (a->s < b->s) == (pred[i] < pred[j]);
        }
    printf("  %-10s order of networks on one GPU: %d of %d pairs right\n", name, right, pairs);
}

/* Pairs of GPUs timing one network in one setting: predicted ratio against published. */
static void ratios(const pl_published *p, const double *pred, const char *name)
{
    int pairs = 0, within = 0;
    double worst = 0;
    for (int i = 0; i < p->n; i++)
        for (int j = i + 1; j < p->n; j++) {
            const pl_pub_figure *a = &p->fig[i], *b = &p->fig[j];
            if (a->host_bound || b->host_bound || !strcmp(a->gpu, b->gpu) ||
                strcmp(a->network, b->network) || !same_setting(a, b))
                continue;
            double e = fabs((pred[i] / pred[j]) / (a->s / b->s) - 1);
            pairs++, within += e <= 0.15, worst = fmax(worst, e);
        }
    printf("  %-10s ratio between GPUs: %d of %d pairs within 15 %%, worst %.1f %%\n", name, within,
           pairs, 100 * worst);
}

static void print_params(const char *name, const pl_gpu_params *g)
{
    printf("%-8s eff_gemm %.4g, eff_conv %.4g, eff_tensor %.4g, eff_winograd %.4g, eff_mem %.4g, "
           "mem_half_bytes %.4g, kernel_s %.4g us, band %.4g\n",
           name, g->eff_gemm, g->eff_conv, g->eff_tensor, g->eff_winograd, g->eff_mem,
           g->mem_half_bytes, g->kernel_s * 1e6, g->band);
}

static void predict_all(const pl_pub_eval *e, int n, const pl_gpu_params *gp, double *out)
{
    for (int i = 0; i < n; i++)
        out[i] = pl_pub_predict_s(e, i, gp);
}

/* The roofline's predictions: the default efficiencies, GPU rules off, fusion off. */
static void roofline_all(const pl_pub_eval *e, int n, double *out)
{
    pl_gpu_params off;
    pl_gpu_params_default(&off);
    off.on = false;
    for (int i = 0; i < n; i++)
        out[i] = pl_pub_predict_s(e, i, &off);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_gpu PUBLISHED.json MODELS_DIR\n");
        return 2;
    }
    pl_err err = {0};
    pl_published p;
    if (pl_published_load(argv[1], &p, &err) < 0) {
        fprintf(stderr, "bench_gpu: %s\n", err.msg);
        return 2;
    }
    pl_pub_eval *e = pl_pub_eval_new(&p, argv[2], &err);
    if (!e) {
        fprintf(stderr, "bench_gpu: %s\n", err.msg);
        pl_published_free(&p);
        return 2;
    }
    double *roof = calloc((size_t)p.n + 1, sizeof *roof), *bi = calloc((size_t)p.n + 1, sizeof *bi),
           *fit = calloc((size_t)p.n + 1, sizeof *fit);
    pl_gpu_params builtin, fitted;
    pl_gpu_params_default(&builtin);
    fitted = builtin;
    roofline_all(e, p.n, roof);
    predict_all(e, p.n, &builtin, bi);
    pl_pub_fit_result r;
    pl_pub_fit(e, &fitted, &r);
    for (int i = 0; i < p.n; i++)
        fit[i] = pl_pub_total_s(e, i, &fitted);
    print_table(&p, roof, bi, fit);
    printf("\nfit on %d figures, rms log error %.3f -> %.3f\n", r.n_fit, r.rms_log_before,
           r.rms_log_after);
    print_params("fitted", &fitted);
    print_params("built in", &builtin);
    for (int k = 0; k < p.n_sources; k++)
        printf("  host time per kernel, %-30s %6.2f us\n", p.source_ids[k],
               p.source_host_s[k] * 1e6);
    const char *names[] = {"roofline", "built-in", "fit"};
    const double *preds[] = {roof, bi, fit};
    for (int k = 0; k < 3; k++) {
        summary(&p, preds[k], names[k], "fit");
        summary(&p, preds[k], names[k], "held");
        summary(&p, preds[k], names[k], "host");
        order(&p, preds[k], names[k]);
        ratios(&p, preds[k], names[k]);
    }
    free(roof), free(bi), free(fit);
    pl_pub_eval_free(e);
    pl_published_free(&p);
    return 0;
}
