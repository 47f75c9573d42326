/* stages.c: loading a split (placer split's folder) into the worker, each stage on its
 * device (docs/runtime.md, "Running a split"). */
#include "placer/runtime.h"
#include "placer/split.h"

#include <stdio.h>
#include <stdlib.h>

int pl_ort_load_split(pl_ort *w, const pl_split_manifest *m, const char *cache_dir, bool sequential,
                      pl_err *err)
{
    char **paths = pl_calloc(m->n, sizeof *paths);
    const char **devs = pl_calloc(m->n, sizeof *devs);
    int rc = 0, *threads = pl_calloc(m->n + 1, sizeof *threads);
    for (int j = 0; j < m->n && rc == 0; j++) {
        char out[4096];
        /* a weightless stage gets made-up weights, the same as the whole model's (by name) */
        rc = pl_inflate_model(m->st[j].path, cache_dir, out, sizeof out, err) < 0 ? -1 : 0;
        paths[j] = pl_strdup(out), devs[j] = m->st[j].device;
        threads[j] = m->st[j].threads > 1 ? m->st[j].threads : 1;
    }
    if (rc == 0)
        rc = pl_ort_load_stages(w, (const char *const *)paths, sequential ? NULL : devs, NULL,
                                threads, m->n, err);
    for (int j = 0; j < m->n; j++)
        free(paths[j]);
    free(paths), free(devs), free(threads);
    return rc;
}

int pl_split_runnable(const char *model_path, const pl_graph *g, const pl_plan *p,
                      const char *const *dev_names, const char *dir, const char *cache_dir,
                      pl_stages *s, char **paths, pl_err *err)
{
    if (pl_split_stages_by(g, p, PL_SPLIT_SCHEDULE, s, err) < 0 ||
        pl_split_write(model_path, g, s, dev_names, dir, err) < 0)
        return -1;
    for (int j = 0; j < s->n; j++) {
        char file[4200], out[4096];
        snprintf(file, sizeof file, "%s/stage_%02d.onnx", dir, j);
        if (pl_inflate_model(file, cache_dir, out, sizeof out, err) < 0) return -1;
        paths[j] = pl_strdup(out);
    }
    return 0;
}
