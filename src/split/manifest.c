/* manifest.c: reading DIR/manifest.json (placer-split/2) back, to run a split (docs/split.md).
 * This is the one place a split is trusted from: every stage file is checked against the hash
 * the manifest gives before anything runs it. */
#include "placer/json.h"
#include "placer/split.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A stage file is named relative to the manifest's folder and must stay inside it. */
static int stage_file(const pl_json *st, const char *dir, char **out, pl_err *err)
{
    const char *file;
    if (pl_json_string(st, "file", &file, err) < 0) return -1;
    if (!*file || file[0] == '/' || strstr(file, "..")) {
        pl_json f = pl_json_at(st, "file");
        return pl_json_fail(&f, err, "'%s' is not a file name inside the split's folder", file);
    }
    *out = pl_malloc(strlen(dir) + strlen(file) + 2);
    sprintf(*out, "%s/%s", dir, file);
    return 0;
}

/* Every input comes from the graph or from an earlier stage: the order must be runnable. */
static int check_inputs(const pl_json *st, size_t j, pl_err *err)
{
    pl_json ins;
    int rc = pl_json_opt_array(st, "inputs", &ins, err);
    if (rc <= 0) return rc;
    for (size_t k = 0; k < pl_json_len(&ins); k++) {
        pl_json in = pl_json_index(&ins, k), from = pl_json_at(&in, "from_stage");
        if (json_is_string(from.v) && !strcmp(json_string_value(from.v), "graph")) continue;
        if (!json_is_integer(from.v) || json_integer_value(from.v) < 0 ||
            (size_t)json_integer_value(from.v) >= j)
            return pl_json_fail(&from, err,
                                "must be \"graph\" or the index of an earlier stage "
                                "(this is stage %zu)",
                                j);
    }
    return 0;
}

/* The stage file must be the one split wrote: same SHA-256. A manifest whose stage names
 * another stage's file, or a file edited or damaged since, would run and give wrong outputs
 * with exit 0. */
static int check_hash(const pl_json *st, size_t j, const char *name, const char *path, pl_err *err)
{
    const char *want;
    char have[65];
    if (pl_json_string(st, "sha256", &want, err) < 0) return -1;
    if (pl_sha256_file(path, have, err) < 0)
        return pl_err_prefix(err, "%s: stage %zu (%s)", st->file, j, name);
    if (strcmp(want, have))
        return pl_err_set(err,
                          "%s: stage %zu (%s): %s has sha256 %s, the manifest expects %s: the "
                          "file is not the one placer split wrote (re-run placer split)",
                          st->file, j, name, path, have, want);
    return 0;
}

/* "threads": optional (1), the stage's intra-op threads, its device's cores: 1..4096. */
static int read_threads(const pl_json *st, int *out, pl_err *err)
{
    int64_t n = 1;
    if (pl_json_opt_int(st, "threads", &n, err) < 0) return -1;
    if (n < 1 || n > 4096) {
        pl_json at = pl_json_at(st, "threads");
        return pl_json_fail(&at, err, "threads %lld is outside 1..4096 (its device's cores)",
                            (long long)n);
    }
    *out = (int)n;
    return 0;
}

static int read_stage(const pl_json *st, size_t j, const char *dir, pl_split_stage_ref *out,
                      pl_err *err)
{
    const char *name, *dev;
    if (pl_json_string(st, "name", &name, err) < 0 || pl_json_string(st, "device", &dev, err) < 0 ||
        check_inputs(st, j, err) < 0 || stage_file(st, dir, &out->path, err) < 0)
        return -1;
    if (check_hash(st, j, name, out->path, err) < 0) { /* the stage is not counted: free it */
        free(out->path);
        out->path = NULL;
        return -1;
    }
    out->name = pl_strdup(name), out->device = pl_strdup(dev);
    return read_threads(st, &out->threads, err);
}

/* Two stages naming one file: at most one of them can hold the right ops. */
static int check_distinct(const pl_split_manifest *m, const pl_json *stages, pl_err *err)
{
    for (int j = 0; j < m->n; j++)
        for (int i = 0; i < j; i++)
            if (!strcmp(m->st[i].path, m->st[j].path)) {
                pl_json f = pl_json_index(stages, (size_t)j);
                f = pl_json_at(&f, "file");
                return pl_json_fail(&f, err, "stage %d names the file of stage %d (%s)", j, i,
                                    m->st[i].path);
            }
    return 0;
}

/* Version 1 had no hashes: its stage files cannot be checked, so it is not run. */
static int check_format(const pl_json *root, pl_err *err)
{
    const char *f = NULL;
    if (pl_json_opt_string(root, "format", &f, err) < 0) return -1;
    if (f && !strcmp(f, "placer-split/1")) {
        pl_json at = pl_json_at(root, "format");
        return pl_json_fail(&at, err,
                            "placer-split/1 was written by an older placer and gives no SHA-256 "
                            "of its stage files, so they cannot be checked: re-run placer split");
    }
    return pl_json_check_format(root, PL_SPLIT_FORMAT, err);
}

int pl_split_manifest_load(const char *dir, pl_split_manifest *m, pl_err *err)
{
    memset(m, 0, sizeof *m);
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) /* a model given where its split goes */
        return pl_err_set(err, "%s is a file, not the folder `placer split -o DIR` writes", dir);
    char *path = pl_malloc(strlen(dir) + 16);
    sprintf(path, "%s/manifest.json", dir);
    pl_json_doc *doc = pl_json_open(path, err);
    free(path);
    if (!doc) return -1;
    pl_json root = pl_json_root(doc), model, stages;
    const char *mp, *sha;
    int rc = -1;
    if (check_format(&root, err) < 0 || pl_json_object(&root, "model", &model, err) < 0 ||
        pl_json_string(&model, "path", &mp, err) < 0 ||
        pl_json_string(&model, "sha256", &sha, err) < 0 ||
        pl_json_array(&root, "stages", &stages, err) < 0)
        goto out;
    if (pl_json_len(&stages) == 0) {
        pl_json_fail(&stages, err, "a split has at least one stage");
        goto out;
    }
    const char *cut = "fewest";
    if (pl_json_opt_string(&root, "cut", &cut, err) < 0) goto out;
    if (strcmp(cut, "fewest") && strcmp(cut, "schedule")) {
        pl_json c = pl_json_at(&root, "cut");
        pl_json_fail(&c, err, "'%s' is not a cut (fewest or schedule)", cut);
        goto out;
    }
    m->cut = strcmp(cut, "schedule") ? PL_SPLIT_FEWEST : PL_SPLIT_SCHEDULE;
    m->model_path = pl_strdup(mp), m->model_sha256 = pl_strdup(sha);
    m->st = pl_calloc(pl_json_len(&stages), sizeof *m->st);
    for (size_t j = 0; j < pl_json_len(&stages); j++, m->n++) {
        pl_json st = pl_json_index(&stages, j);
        if (read_stage(&st, j, dir, &m->st[j], err) < 0) goto out;
    }
    rc = check_distinct(m, &stages, err);
out:
    pl_json_close(doc);
    if (rc < 0) pl_split_manifest_free(m);
    return rc;
}

void pl_split_manifest_free(pl_split_manifest *m)
{
    for (int j = 0; m->st && j < m->n; j++)
        free(m->st[j].name), free(m->st[j].path), free(m->st[j].device);
    free(m->st), free(m->model_path), free(m->model_sha256);
    memset(m, 0, sizeof *m);
}
