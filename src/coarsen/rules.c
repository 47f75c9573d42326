/* rules.c: fusion rules, built in and from placer-fusion-rules/1 files. */
#include "placer/coarsen.h"
#include "placer/json.h"

#include <stdlib.h>
#include <string.h>

static int read_rule(const pl_json *list, pl_fusion_rules *r, pl_err *err)
{
    size_t n = pl_json_len(list);
    if (!json_is_array(list->v) || n < 2 || n > 64)
        return pl_json_fail(list, err, "a rule is a list of 2 to 64 op types");
    const char *types[64];
    for (size_t k = 0; k < n; k++) {
        pl_json e = pl_json_index(list, k);
        if (pl_json_string(&e, NULL, &types[k], err) < 0) return -1;
        if (!types[k][0]) return pl_json_fail(&e, err, "an op type is not empty");
    }
    pl_fusion_rules_add(r, types, (int)n);
    return 0;
}

static pl_fusion_rules *read_doc(pl_json_doc *doc, pl_err *err)
{
    if (!doc) return NULL;
    pl_json root = pl_json_root(doc), list;
    static const char *const allowed[] = {"format", "rules", "description", NULL};
    pl_fusion_rules *r = pl_calloc(1, sizeof *r);
    if (pl_json_check_format(&root, "placer-fusion-rules/1", err) < 0 ||
        pl_json_check_fields(&root, allowed, err) < 0 ||
        pl_json_array(&root, "rules", &list, err) < 0)
        goto fail;
    for (size_t i = 0; i < pl_json_len(&list); i++) {
        pl_json e = pl_json_index(&list, i);
        if (read_rule(&e, r, err) < 0) goto fail;
    }
    pl_json_close(doc);
    return r;
fail:
    pl_json_close(doc);
    pl_fusion_rules_free(r);
    return NULL;
}

pl_fusion_rules *pl_fusion_rules_load(const char *path, pl_err *err)
{
    return read_doc(pl_json_open(path, err), err);
}

pl_fusion_rules *pl_fusion_rules_parse(const char *buf, size_t len, const char *name, pl_err *err)
{
    return read_doc(pl_json_parse(buf, len, name, err), err);
}
