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
    int rc = 0;
    for (int j = 0; j < m->n && rc == 0; j++) {
        char out[4096];
        /* a weightless stage gets made-up weights, the same as the whole model's (by name) */
        rc = pl_inflate_model(m->st[j].path, cache_dir, out, sizeof out, err) < 0 ? -1 : 0;
        paths[j] = pl_strdup(out), devs[j] = m->st[j].device;
    }
    if (rc == 0)
        rc = pl_ort_load_on(w, (const char *const *)paths, sequential ? NULL : devs, m->n, err);
    for (int j = 0; j < m->n; j++)
        free(paths[j]);
    free(paths), free(devs);
    return rc;
}
