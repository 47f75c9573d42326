/* rules.c: fusion rules, built in and from placer-fusion-rules/1 files. */
#include "placer/coarsen.h"
#include "placer/json.h"

#include <stdlib.h>
#include <string.h>

/* Each rule stands for a fusion a real runtime performs (docs/coarsen.md). Torch exports fold
 * BatchNormalization into Conv, so the BN rules only fire on graphs exported without folding. */
static const char *const default_rules[][12] = {
    {"Conv", "BatchNormalization"},
    {"Conv", "BatchNormalization", "Relu"},
    {"Conv", "BatchNormalization", "Add", "Relu"},
    {"Conv", "Relu"},
    {"Conv", "Add", "Relu"},
    {"MatMul", "Add"},
    {"Gemm", "Relu"},
    {"MatMul", "Add", "Gelu"},
    /* LayerNorm as torch decomposes it (opset < 17) */
    {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"},
    /* GELU, erf form (BERT) and tanh form (GPT-2), alone and after the MatMul+Add feeding it */
    {"Div", "Erf", "Add", "Mul", "Mul"},
    {"Mul", "Pow", "Mul", "Add", "Mul", "Tanh", "Add", "Mul"},
    {"MatMul", "Add", "Div", "Erf", "Add", "Mul", "Mul"},
    {"MatMul", "Add", "Mul", "Pow", "Mul", "Add", "Mul", "Tanh", "Add", "Mul"},
};

void pl_fusion_rules_add(pl_fusion_rules *r, const char *const *types, int n)
{
    r->rules = pl_realloc(r->rules, (size_t)(r->n + 1) * sizeof *r->rules);
    pl_fusion_rule *x = &r->rules[r->n++];
    x->n = n;
    x->types = pl_malloc((size_t)n * sizeof *x->types);
    for (int k = 0; k < n; k++)
        x->types[k] = pl_strdup(types[k]);
}

pl_fusion_rules *pl_fusion_rules_default(void)
{
    pl_fusion_rules *r = pl_calloc(1, sizeof *r);
    for (size_t i = 0; i < sizeof default_rules / sizeof default_rules[0]; i++) {
        int n = 0;
        while (n < 12 && default_rules[i][n])
            n++;
        pl_fusion_rules_add(r, default_rules[i], n);
    }
    return r;
}

void pl_fusion_rules_free(pl_fusion_rules *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) {
        for (int k = 0; k < r->rules[i].n; k++)
            free(r->rules[i].types[k]);
        free(r->rules[i].types);
    }
    free(r->rules);
    free(r);
}

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
