/* test_split.c: stages of a plan (docs/split.md): acyclic, complete, and written as ONNX files
 * that placer reads back with the same ops, weights and crossing tensors as the manifest. */
#include "testutil.h"
#include "rw_models.h"

#include "onnx/onnx.pb-c.h"
#include "placer/place.h"
#include "placer/split.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INTRA "examples/clusters/moirai-intra-server.json"

static char *tmpdir(void)
{
    char t[64];
    if (tu_mkdtemp(t, sizeof t, "placer-split") < 0) fail_msg("mkdtemp failed");
    return pl_strdup(t);
}

static void rmdir_all(const char *dir)
{
    if (tu_rmtree(dir) < 0) fail_msg("cannot remove %s", dir);
}

/* ---- checks on the stages themselves ---- */

static void check_stages(const pl_graph *g, const pl_stages *s)
{
    int *owned = pl_calloc(g->n_ops, sizeof *owned);
    for (int j = 0; j < s->n; j++)
        for (int k = 0; k < s->st[j].n_ops; k++) {
            int op = s->st[j].ops[k];
            owned[op]++;
            assert_int_equal(s->stage_of[op], j);
        }
    for (int op = 0; op < g->n_ops; op++)
        if (owned[op] != 1) fail_msg("op '%s' is in %d stages", g->ops[op].name, owned[op]);
    /* the order is topological: every tensor sent goes to a later stage */
    for (int e = 0; e < g->n_edges; e++) {
        int t = g->edges[e].tensor, a = s->stage_of[g->edges[e].src];
        int b = s->stage_of[g->edges[e].dst];
        if (s->maker[t] < 0) { /* a Constant: copied into its readers */
            assert_true(pl_plan_is_const(g, g->edges[e].src));
            continue;
        }
        if (a > b)
            fail_msg("edge %s -> %s goes back from stage %d to %d", g->ops[g->edges[e].src].name,
                     g->ops[g->edges[e].dst].name, a, b);
    }
    free(owned);
}

/* ---- checks on the files, read back with placer's own reader ---- */

static json_t *stage_io(json_t *st, const char *key, const char *tensor)
{
    size_t i;
    json_t *v;
    json_array_foreach(
        json_object_get(st, key), i,
        v) if (!strcmp(json_string_value(json_object_get(v, "tensor")), tensor)) return v;
    return NULL;
}

/* Every edge between two stages is in the manifest on both ends. */
static void check_manifest_edges(const pl_graph *g, const pl_stages *s, json_t *stages)
{
    for (int e = 0; e < g->n_edges; e++) {
        int t = g->edges[e].tensor, a = s->maker[t], b = s->stage_of[g->edges[e].dst];
        if (a < 0 || a == b) continue;
        const char *name = g->tensors[t].name;
        json_t *out = stage_io(json_array_get(stages, a), "outputs", name);
        json_t *in = stage_io(json_array_get(stages, b), "inputs", name);
        if (!out || !in)
            fail_msg("crossing tensor '%s' (%d -> %d) not in the manifest", name, a, b);
        assert_int_equal(json_integer_value(json_object_get(in, "from_stage")), a);
        size_t i;
        json_t *v;
        bool listed = false;
        json_array_foreach(json_object_get(out, "to_stages"), i, v) listed |=
            json_integer_value(v) == b;
        assert_true(listed);
    }
}

static void count_names(const pl_strmap *m, int **counts, const pl_graph *sg)
{
    for (int k = 0; k < sg->n_ops; k++) {
        int i = pl_strmap_get(m, sg->ops[k].name);
        if (i < 0) fail_msg("stage op '%s' is not in the model", sg->ops[k].name);
        (*counts)[i]++;
    }
}

static void check_stage_graph(const pl_graph *g, const pl_graph *sg, pl_strmap *made, int j)
{
    for (int k = 0; k < sg->n_inputs; k++) { /* from the source's inputs or an earlier stage */
        const char *n = sg->tensors[sg->inputs[k]].name;
        int t = pl_graph_find_tensor(g, n);
        if (t < 0 || !((g->tensors[t].flags & PL_TENSOR_INPUT) || pl_strmap_get(made, n) >= 0))
            fail_msg("stage %d reads '%s' from no earlier stage", j, n);
    }
    for (int t = 0; t < sg->n_tensors; t++) { /* weights as in the source */
        const pl_tensor *w = &sg->tensors[t];
        if (!(w->flags & PL_TENSOR_WEIGHT) || w->producer >= 0) continue;
        const pl_tensor *o = &g->tensors[pl_graph_find_tensor(g, w->name)];
        assert_int_equal(w->dtype, o->dtype);
        assert_int_equal(w->rank, o->rank);
        for (int d = 0; d < w->rank; d++)
            assert_int_equal(w->dims[d], o->dims[d]);
    }
    for (int k = 0; k < sg->n_outputs; k++)
        pl_strmap_put(made, sg->tensors[sg->outputs[k]].name, j);
}

static int copies_of(json_t *stages, const char *op)
{
    int n = 0;
    size_t i, c;
    json_t *st, *v;
    json_array_foreach(stages, i, st) json_array_foreach(json_object_get(st, "copied_constants"), c,
                                                         v) n += !strcmp(json_string_value(v), op);
    return n;
}

static void check_files(const pl_graph *g, const pl_stages *s, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_error_t je;
    json_t *man = json_load_file(path, 0, &je), *stages = json_object_get(man, "stages");
    if (!man) fail_msg("%s: %s", path, je.text);
    assert_string_equal(json_string_value(json_object_get(man, "format")), "placer-split/2");
    assert_int_equal(json_array_size(stages), s->n);
    check_manifest_edges(g, s, stages);
    int *counts = pl_calloc(g->n_ops, sizeof *counts);
    pl_strmap made;
    pl_strmap_init(&made);
    pl_graph **sgs = pl_calloc(s->n, sizeof *sgs);
    for (int j = 0; j < s->n; j++) {
        const char *file = json_string_value(json_object_get(json_array_get(stages, j), "file"));
        snprintf(path, sizeof path, "%s/%s", dir, file);
        pl_err err = {""};
        sgs[j] = pl_onnx_load(path, NULL, &err);
        if (!sgs[j]) fail_msg("stage %d: %s", j, err.msg);
        count_names(&g->op_by_name, &counts, sgs[j]);
        check_stage_graph(g, sgs[j], &made, j);
    }
    for (int op = 0; op < g->n_ops; op++) { /* each op once, plus its documented copies */
        int copies = copies_of(stages, g->ops[op].name);
        if (copies) assert_true(pl_plan_is_const(g, op));
        if (counts[op] != 1 + copies)
            fail_msg("op '%s' is in %d stage files, expected %d", g->ops[op].name, counts[op],
                     1 + copies);
    }
    for (int k = 0; k < g->n_outputs; k++) { /* each graph output out of exactly one stage */
        int n = 0;
        for (int j = 0; j < s->n; j++)
            n += pl_graph_find_tensor(sgs[j], g->tensors[g->outputs[k]].name) >= 0 &&
                 (sgs[j]
                      ->tensors[pl_graph_find_tensor(sgs[j], g->tensors[g->outputs[k]].name)]
                      .flags &
                  PL_TENSOR_OUTPUT);
        assert_int_equal(n, 1);
    }
    for (int j = 0; j < s->n; j++)
        pl_graph_free(sgs[j]);
    free(sgs), free(counts);
    pl_strmap_free(&made);
    json_decref(man);
}

static void split_model(const char *model, const char *algo, bool python)
{
    pl_graph *g = tu_load(model);
    pl_plan *p = tu_plan(g, INTRA, algo);
    pl_stages s;
    pl_err err = {""};
    if (pl_split_stages(g, p, &s, &err) < 0) fail_msg("%s", err.msg);
    check_stages(g, &s);
    char *dir = tmpdir();
    if (pl_split_write(model, g, &s, NULL, dir, &err) < 0) fail_msg("%s", err.msg);
    check_files(g, &s, dir);
    if (python) { /* an independent reader: onnx.checker with shape inference */
        char cmd[512];
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/check_split.py %s", dir);
        int rc = system(cmd);
        if (rc != 0)
            fail_msg("%s: exit %d%s", cmd, rc,
                     WEXITSTATUS(rc) == 3 ? " (the python3 onnx package is missing)" : "");
    }
    rmdir_all(dir);
    free(dir);
    pl_stages_free(&s);
    pl_plan_free(p);
    pl_graph_free(g);
}

static void test_resnet50(void **state)
{
    (void)state;
    split_model("models/resnet50.onnx", "heft", true);
    split_model("models/resnet50.onnx", "expert", false);
}

static void test_inception_v3(void **state)
{
    (void)state;
    split_model("models/inception_v3.onnx", "heft", false);
    split_model("models/inception_v3.onnx", "expert", true);
}

/* Constants, Loops (outer-scope reads) and many stages. */
static void test_other_models(void **state)
{
    (void)state;
    split_model("models/gpt2_small.onnx", "heft", false);
    split_model("models/rnnlm.onnx", "heft", true);
}

/* ---- a tiny ONNX model built here, for stages worked out by hand ---- */

typedef struct tnode {
    const char *name, *type, *in[2], *out;
} tnode;

static size_t tiny_model(const tnode *nodes, int n, uint8_t **buf)
{
    Onnx__NodeProto np[8], *npp[8];
    Onnx__AttributeProto attr = ONNX__ATTRIBUTE_PROTO__INIT, *attrp = &attr;
    Onnx__TensorProto val = ONNX__TENSOR_PROTO__INIT;
    float one = 1;
    int64_t dim1 = 1;
    val.n_dims = 1, val.dims = &dim1, val.has_data_type = 1, val.data_type = PL_DT_FLOAT;
    val.n_float_data = 1, val.float_data = &one;
    attr.name = "value", attr.has_type = 1, attr.t = &val;
    attr.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    for (int k = 0; k < n; k++) {
        np[k] = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
        np[k].name = (char *)nodes[k].name, np[k].op_type = (char *)nodes[k].type;
        np[k].input = (char **)nodes[k].in;
        np[k].n_input = nodes[k].in[1] ? 2 : nodes[k].in[0] ? 1 : 0;
        np[k].output = (char **)&nodes[k].out, np[k].n_output = 1;
        if (!strcmp(nodes[k].type, "Constant")) np[k].n_attribute = 1, np[k].attribute = &attrp;
        npp[k] = &np[k];
    }
    Onnx__TensorShapeProto__Dimension d[2] = {ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT,
                                              ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT},
                                      *dp[2] = {&d[0], &d[1]};
    d[0].value_case = d[1].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d[0].dim_value = 2, d[1].dim_value = 3;
    Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
    shape.n_dim = 2, shape.dim = dp;
    Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
    tt.has_elem_type = 1, tt.elem_type = PL_DT_FLOAT, tt.shape = &shape;
    Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
    type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, type.tensor_type = &tt;
    Onnx__ValueInfoProto x = ONNX__VALUE_INFO_PROTO__INIT, out = ONNX__VALUE_INFO_PROTO__INIT;
    Onnx__ValueInfoProto *xp = &x, *outp = &out;
    x.name = "x", x.type = &type, out.name = "out", out.type = &type;
    Onnx__GraphProto gp = ONNX__GRAPH_PROTO__INIT;
    gp.name = "tiny", gp.n_node = (size_t)n, gp.node = npp;
    gp.n_input = 1, gp.input = &xp, gp.n_output = 1, gp.output = &outp;
    Onnx__OperatorSetIdProto os = ONNX__OPERATOR_SET_ID_PROTO__INIT, *osp = &os;
    os.domain = "", os.has_version = 1, os.version = 13;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.has_ir_version = 1, m.ir_version = 7, m.graph = &gp, m.n_opset_import = 1;
    m.opset_import = &osp;
    size_t len = pl_onnx__model_proto__get_packed_size(&m);
    *buf = pl_malloc(len);
    pl_onnx__model_proto__pack(&m, *buf);
    return len;
}

/* Splits a tiny model with devices given per op ("dev" in node order); returns the stages,
 * checked, and its file in *path. */
static pl_graph *split_tiny_by(const tnode *nodes, int n, const int *dev, pl_split_cut cut,
                               pl_stages *s, char *path)
{
    uint8_t *buf;
    size_t len = tiny_model(nodes, n, &buf);
    snprintf(path, 256, "%s", tu_tmpfile(buf, len, ".onnx"));
    free(buf);
    pl_graph *g = tu_load(path);
    pl_plan *p = pl_plan_new(g->n_ops, 2);
    for (int k = 0; k < n; k++)
        p->dev[pl_graph_find_op(g, nodes[k].name)] = dev[k];
    pl_err err = {""};
    if (pl_split_stages_by(g, p, cut, s, &err) < 0) fail_msg("%s", err.msg);
    check_stages(g, s);
    char *dir = tmpdir();
    if (pl_split_write(path, g, s, NULL, dir, &err) < 0) fail_msg("%s", err.msg);
    check_files(g, s, dir);
    pl_split_manifest m; /* read back: the cut and the stages' files and devices */
    if (pl_split_manifest_load(dir, &m, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(m.n, s->n);
    assert_int_equal(m.cut, cut);
    for (int j = 0; j < m.n; j++) {
        char want[32];
        snprintf(want, sizeof want, "dev%d", s->st[j].dev);
        assert_string_equal(m.st[j].device, want);
        assert_contains(m.st[j].path, dir);
    }
    pl_split_manifest_free(&m);
    rmdir_all(dir);
    free(dir);
    pl_plan_free(p);
    return g;
}

static pl_graph *split_tiny(const tnode *nodes, int n, const int *dev, pl_stages *s, char *path)
{
    return split_tiny_by(nodes, n, dev, PL_SPLIT_FEWEST, s, path);
}

static const char *op_of(const pl_graph *g, const pl_stages *s, int j, int k)
{
    assert_true(k < s->st[j].n_ops);
    return g->ops[s->st[j].ops[k]].name;
}

/* a -> b -> c on devices 0, 1, 0: three stages; a Constant read by a and c is owned by a's
 * stage and copied into c's. */
static void test_alternating(void **state)
{
    (void)state;
    const tnode nodes[] = {{"k", "Constant", {NULL}, "kv"},
                           {"a", "Add", {"x", "kv"}, "av"},
                           {"b", "Relu", {"av"}, "bv"},
                           {"c", "Add", {"bv", "kv"}, "out"}};
    int dev[] = {1, 0, 1, 0};
    pl_stages s;
    char path[256];
    pl_graph *g = split_tiny(nodes, 4, dev, &s, path);
    assert_int_equal(s.n, 3);
    int want_dev[] = {0, 1, 0};
    for (int j = 0; j < 3; j++)
        assert_int_equal(s.st[j].dev, want_dev[j]);
    assert_int_equal(s.st[0].n_ops, 2);
    assert_string_equal(op_of(g, &s, 0, 0), "k");
    assert_string_equal(op_of(g, &s, 0, 1), "a");
    assert_string_equal(op_of(g, &s, 1, 0), "b");
    assert_string_equal(op_of(g, &s, 2, 0), "c");
    assert_int_equal(s.st[2].n_consts, 1);
    assert_int_equal(s.st[1].n_consts, 0);
    assert_int_equal(s.st[0].n_inputs, 1); /* x */
    assert_int_equal(s.st[2].n_inputs, 1); /* bv; kv is its own copy */
    assert_string_equal(g->tensors[s.st[2].inputs[0]].name, "bv");
    pl_stages_free(&s);
    pl_graph_free(g);
    remove(path);
}

/* a and b read x on devices 0 and 1, c (device 0) reads both: a and c share a stage, which
 * runs after b's. */
static void test_merge(void **state)
{
    (void)state;
    const tnode nodes[] = {{"a", "Relu", {"x"}, "av"},
                           {"b", "Sigmoid", {"x"}, "bv"},
                           {"c", "Add", {"av", "bv"}, "out"}};
    int dev[] = {0, 1, 0};
    pl_stages s;
    char path[256];
    pl_graph *g = split_tiny(nodes, 3, dev, &s, path);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.st[0].dev, 1);
    assert_string_equal(op_of(g, &s, 0, 0), "b");
    assert_int_equal(s.st[1].dev, 0);
    assert_int_equal(s.st[1].n_ops, 2);
    assert_string_equal(op_of(g, &s, 1, 0), "a");
    assert_string_equal(op_of(g, &s, 1, 1), "c");
    assert_int_equal(s.st[0].n_outputs, 1);
    pl_stages_free(&s);
    pl_graph_free(g);
    remove(path);
}

/* a (device 0) sends to b (device 1) and goes on with c; d (device 0) joins b and c. FEWEST
 * keeps a and c together, so b waits for c; SCHEDULE ends a's stage at its send, so b and c
 * can run at once: stages {a}, {b}, {c}, {d}. */
static const tnode FORK[] = {{"a", "Relu", {"x"}, "av"},
                             {"b", "Sigmoid", {"av"}, "bv"},
                             {"c", "Tanh", {"av"}, "cv"},
                             {"d", "Add", {"bv", "cv"}, "out"}};
static const int FORK_DEV[] = {0, 1, 0, 0};

static void test_schedule_cut(void **state)
{
    (void)state;
    pl_stages s;
    char path[256];
    pl_graph *g = split_tiny_by(FORK, 4, FORK_DEV, PL_SPLIT_FEWEST, &s, path);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.st[0].n_ops, 2); /* a and c */
    assert_string_equal(op_of(g, &s, 0, 1), "c");
    pl_stages_free(&s);
    pl_graph_free(g);
    remove(path);
    g = split_tiny_by(FORK, 4, FORK_DEV, PL_SPLIT_SCHEDULE, &s, path);
    assert_int_equal(s.n, 4);
    const char *want[] = {"a", "b", "c", "d"};
    int want_dev[] = {0, 1, 0, 0};
    for (int j = 0; j < 4; j++) {
        assert_int_equal(s.st[j].n_ops, 1);
        assert_string_equal(op_of(g, &s, j, 0), want[j]);
        assert_int_equal(s.st[j].dev, want_dev[j]);
    }
    assert_int_equal(s.st[3].n_inputs, 2); /* bv from device 1, cv from the stage before */
    pl_stages_free(&s);
    pl_graph_free(g);
    remove(path);
}

/* The simulator charges a stage's cost on the stages `--cut schedule` writes, no others: on
 * HEFT's plan of inception_v3 on local-cpu-percore.json (a stage overhead on each core), exactly
 * one op of each stage carries a charge, at least the overhead, and no op outside a stage does. */
static void test_schedule_cut_is_what_the_simulator_charges(void **state)
{
    (void)state;
    const char *cluster = "examples/clusters/local-cpu-percore.json";
    pl_graph *g = tu_load("models/inception_v3.onnx");
    pl_plan *p = tu_plan(g, cluster, "heft");
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(cluster, &err);
    assert_non_null(c);
    assert_true(c->devs[0].stage_overhead_s > 0);
    pl_cost *k = pl_cost_new(g, c, NULL, NULL, 0, &err);
    assert_non_null(k);
    pl_stages s;
    assert_int_equal(pl_split_stages_by(g, p, PL_SPLIT_SCHEDULE, &s, &err), 0);
    assert_true(s.n > 10);
    double *extra = calloc(g->n_ops, sizeof *extra);
    assert_true(pl_sim_stage_s(k, p, extra));
    int *charged = calloc(s.n, sizeof *charged);
    for (int op = 0; op < g->n_ops; op++) {
        if (extra[op] == 0) continue;
        assert_true(s.stage_of[op] >= 0);
        assert_true(extra[op] >= c->devs[p->dev[op]].stage_overhead_s);
        charged[s.stage_of[op]]++;
    }
    for (int j = 0; j < s.n; j++)
        assert_int_equal(charged[j], 1);
    free(charged), free(extra);
    pl_stages_free(&s);
    pl_cost_free(k), pl_cluster_free(c), pl_plan_free(p), pl_graph_free(g);
}

/* Per manifest stage: how many tensors it lists as inputs and outputs, and their bytes; and
 * the sums of its weight_bytes and copied_weight_bytes over the stages. */
/* Per stage of the manifest in dir: the tensors it lists, and the bytes the simulator copies
 * (all but the graph inputs, which a session reads in place: docs/simulator.md, "Stages"). */
static void manifest_io(const char *dir, int n, double *count, double *bytes, double *held,
                        double *copied)
{
    char path[512];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    json_t *man = json_load_file(path, 0, NULL), *stages = json_object_get(man, "stages");
    assert_int_equal(json_array_size(stages), n);
    for (int j = 0; j < n; j++) {
        const char *keys[] = {"inputs", "outputs"};
        count[j] = bytes[j] = 0;
        json_t *st = json_array_get(stages, j);
        assert_true(json_is_integer(json_object_get(st, "weight_bytes")));
        *held += (double)json_integer_value(json_object_get(st, "weight_bytes"));
        *copied += (double)json_integer_value(json_object_get(st, "copied_weight_bytes"));
        for (int k = 0; k < 2; k++) {
            json_t *ts = json_object_get(json_array_get(stages, j), keys[k]), *t;
            size_t i;
            json_array_foreach(ts, i, t)
            {
                json_int_t b = json_integer_value(json_object_get(t, "bytes"));
                bool fed = json_is_string(json_object_get(t, "from_stage")); /* "graph" */
                count[j]++, bytes[j] += b > 0 && !fed ? (double)b : 0;
            }
        }
    }
    json_decref(man);
}

/* The simulator's charge per stage, stage_overhead_s + stage_tensor_s x tensors + bytes /
 * stage_copy_Bps, by the split's stage numbering (each stage's charge is on one op). Weight
 * copies read cold, charged to the ops reading them (tests/test_sim.c), are left out: without a
 * memory bandwidth nothing is charged for them. */
static void charged(pl_cost *k, pl_cluster *c, const pl_plan *p, const pl_stages *s,
                    double tensor_s, double copy_Bps, double *per_stage)
{
    for (int d = 0; d < c->n_devs; d++)
        c->devs[d].stage_overhead_s = 1000, c->devs[d].stage_tensor_s = tensor_s,
        c->devs[d].stage_copy_Bps = copy_Bps, c->devs[d].mem_bandwidth_Bps = 0;
    double *extra = calloc(k->g->n_ops, sizeof *extra);
    assert_true(pl_sim_stage_s(k, p, extra));
    for (int j = 0; j < s->n; j++)
        per_stage[j] = -1;
    for (int op = 0; op < k->g->n_ops; op++) {
        if (extra[op] == 0) continue;
        assert_true(per_stage[s->stage_of[op]] < 0); /* one charge per stage */
        per_stage[s->stage_of[op]] = extra[op] - 1000;
    }
    free(extra);
}

/* The simulator prices each stage for exactly the tensors `split --cut schedule` writes into
 * its manifest, count and bytes (pl_plan_stage_io, the one routine): on HEFT's plan of
 * nmt_seq2seq on local-cpu-percore.json, whose stages take in and give out up to dozens of
 * tensors. */
static void test_simulator_prices_the_manifest(void **state)
{
    (void)state;
    const char *model = "models/nmt_seq2seq.onnx",
               *cluster = "examples/clusters/local-cpu-percore.json";
    pl_graph *g = tu_load(model);
    pl_plan *p = tu_plan(g, cluster, "heft");
    pl_err err = {""};
    pl_cluster *c = pl_cluster_load(cluster, &err);
    assert_non_null(c);
    pl_cost *k = pl_cost_new(g, c, NULL, NULL, 0, &err);
    assert_non_null(k);
    pl_stages s;
    assert_int_equal(pl_split_stages_by(g, p, PL_SPLIT_SCHEDULE, &s, &err), 0);
    char *dir = tmpdir();
    if (pl_split_write(model, g, &s, NULL, dir, &err) < 0) fail_msg("%s", err.msg);
    double *count = calloc(s.n, sizeof *count), *bytes = calloc(s.n, sizeof *bytes);
    double *got = calloc(s.n, sizeof *got), most = 0;
    double held = 0, copied = 0, distinct = 0;
    manifest_io(dir, s.n, count, bytes, &held, &copied);
    charged(k, c, p, &s, 1, 0, got); /* 1 s per tensor, bytes free: the count */
    for (int j = 0; j < s.n; j++) {
        assert_close(got[j], count[j], 1e-9);
        most = count[j] > most ? count[j] : most;
    }
    assert_true(s.n > 10 && most >= 20);
    charged(k, c, p, &s, 0, 1, got); /* 1 B/s: the bytes */
    for (int j = 0; j < s.n; j++)
        assert_close(got[j], bytes[j], 1e-9);
    /* the weights each stage holds: every initializer read counted once in the first stage
     * holding it, the others' copies as copied */
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *w = &g->tensors[t];
        if ((w->flags & PL_TENSOR_WEIGHT) && w->producer < 0 && w->n_consumers > 0 && w->bytes > 0)
            distinct += (double)w->bytes;
    }
    assert_true(copied > 0); /* the decoder's steps share their weights across stages */
    assert_close(held - copied, distinct, 0.5);
    rmdir_all(dir);
    free(dir), free(got), free(bytes), free(count);
    pl_stages_free(&s);
    pl_cost_free(k), pl_cluster_free(c), pl_plan_free(p), pl_graph_free(g);
}

/* A per-device order that runs d (which waits for b) before a (which b waits for): the stage
 * {d, a} and b's would wait for each other. Refused, not written. */
static void test_schedule_cycle(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len = tiny_model(FORK, 4, &buf);
    char path[256];
    snprintf(path, sizeof path, "%s", tu_tmpfile(buf, len, ".onnx"));
    free(buf);
    pl_graph *g = tu_load(path);
    pl_plan *p = pl_plan_new(g->n_ops, 2);
    for (int k = 0; k < 4; k++)
        p->dev[pl_graph_find_op(g, FORK[k].name)] = FORK_DEV[k];
    p->order = pl_malloc(4 * sizeof *p->order), p->order_off = pl_malloc(3 * sizeof(int));
    const char *run[] = {"d", "a", "c", "b"};
    for (int k = 0; k < 4; k++)
        p->order[k] = pl_graph_find_op(g, run[k]);
    p->order_off[0] = 0, p->order_off[1] = 3, p->order_off[2] = 4;
    pl_stages s;
    pl_err err = {""};
    assert_int_equal(pl_split_stages_by(g, p, PL_SPLIT_SCHEDULE, &s, &err), -1);
    assert_contains(err.msg, "order");
    pl_plan_free(p);
    pl_graph_free(g);
    remove(path);
}

/* Manifests that cannot be run are refused with the file and the place. */
static void test_manifest_errors(void **state)
{
    (void)state;
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"format\":\"placer-plan/1\"}", "placer-split/2"},
        {"{\"format\":\"placer-split/1\"}", "no SHA-256 of its stage files"},
        {"{\"format\":\"placer-split/2\",\"model\":{\"path\":\"m\",\"sha256\":\"x\"},"
         "\"stages\":[]}",
         "at least one stage"},
        {"{\"format\":\"placer-split/2\",\"model\":{\"path\":\"m\",\"sha256\":\"x\"},"
         "\"stages\":[{\"name\":\"s\",\"file\":\"../s.onnx\",\"device\":\"d\"}]}",
         "$.stages[0].file"},
        {"{\"format\":\"placer-split/2\",\"model\":{\"path\":\"m\",\"sha256\":\"x\"},"
         "\"stages\":[{\"name\":\"s\",\"file\":\"s.onnx\",\"device\":\"d\",\"inputs\":"
         "[{\"tensor\":\"t\",\"from_stage\":0}]}]}",
         "$.stages[0].inputs[0].from_stage"},
        {"{\"format\":\"placer-split/2\",\"model\":{\"path\":\"m\",\"sha256\":\"x\"},"
         "\"cut\":\"most\",\"stages\":[{\"name\":\"s\",\"file\":\"s.onnx\",\"device\":\"d\"}]}",
         "$.cut"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char *dir = tmpdir(), path[512];
        snprintf(path, sizeof path, "%s/manifest.json", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(cases[k].json, f);
        fclose(f);
        pl_split_manifest m;
        pl_err err = {""};
        assert_int_equal(pl_split_manifest_load(dir, &m, &err), -1);
        assert_contains(err.msg, "manifest.json");
        assert_contains(err.msg, cases[k].want);
        rmdir_all(dir);
        free(dir);
    }
}

/* ---- trusting a split: stage files checked by SHA-256 ---- */

/* Splits resnet50 by HEFT's plan into DIR/s through the command; the plan is at DIR/p.json. */
static void cli_split(const char *dir, const char *cut)
{
    char args[1024], *out;
    snprintf(args, sizeof args,
             "place models/resnet50.onnx --cluster " INTRA " --algo heft -o %s/p.json >/dev/null",
             dir);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    snprintf(args, sizeof args,
             "split models/resnet50.onnx --cluster " INTRA " --plan %s/p.json -o %s/s --cut %s "
             ">/dev/null",
             dir, dir, cut);
    int rc = tu_run(args, &out);
    if (rc) fail_msg("placer %s: exit %d\n%s", args, rc, out);
    free(out);
}

static const char *manifest_refusal(const char *dir)
{
    static pl_err err;
    pl_split_manifest m;
    err.msg[0] = 0;
    if (pl_split_manifest_load(dir, &m, &err) == 0) fail_msg("%s/manifest.json accepted", dir);
    assert_contains(err.msg, "manifest.json");
    return err.msg;
}

/* A manifest whose stage 3 names stage_01.onnx, and a stage file with one byte flipped: both
 * would run and give wrong outputs with exit 0. Refused, naming the manifest, the stage, the
 * file and both hashes. */
static void test_manifest_hashes(void **state)
{
    (void)state;
    char *dir = tmpdir(), s[256], path[300], file1[300];
    cli_split(dir, "fewest");
    snprintf(s, sizeof s, "%s/s", dir);
    snprintf(path, sizeof path, "%s/manifest.json", s);
    snprintf(file1, sizeof file1, "%s/stage_01.onnx", s);
    json_t *man = json_load_file(path, 0, NULL);
    assert_non_null(man);
    json_t *st3 = json_array_get(json_object_get(man, "stages"), 3);
    char want3[65], have1[65];
    snprintf(want3, sizeof want3, "%s", json_string_value(json_object_get(st3, "sha256")));
    pl_err err;
    if (pl_sha256_file(file1, have1, &err) < 0) fail_msg("%s", err.msg);
    json_object_set_new(st3, "file", json_string("stage_01.onnx"));
    assert_int_equal(json_dump_file(man, path, 0), 0);
    const char *msg = manifest_refusal(s);
    assert_contains(msg, "stage 3 (stage_03)");
    assert_contains(msg, file1);
    assert_contains(msg, want3);
    assert_contains(msg, have1);
    /* the right file back, then one byte of stage 2 flipped */
    json_object_set_new(st3, "file", json_string("stage_03.onnx"));
    assert_int_equal(json_dump_file(man, path, 0), 0);
    json_decref(man);
    pl_split_manifest m;
    if (pl_split_manifest_load(s, &m, &err) < 0) fail_msg("%s", err.msg);
    pl_split_manifest_free(&m);
    snprintf(path, sizeof path, "%s/stage_02.onnx", s);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 40, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 40, SEEK_SET);
    fputc(c ^ 0x01, f);
    fclose(f);
    msg = manifest_refusal(s);
    assert_contains(msg, "stage 2 (stage_02)");
    assert_contains(msg, "the manifest expects");
    /* and through the command that runs it */
    char args[600], *out;
    snprintf(args, sizeof args, "run %s --repeat 1 --warmup 0", s);
    int rc = tu_run(args, &out);
    if (rc == 0 || !strstr(out, "stage 2 (stage_02)"))
        fail_msg("placer %s: exit %d, expected a refusal:\n%s", args, rc, out);
    free(out);
    rmdir_all(dir);
    free(dir);
}

/* Everything under dir as "name size sha256" lines in name order, hidden entries included. */
static char *tree(const char *dir)
{
    struct dirent **v;
    int n = scandir(dir, &v, NULL, alphasort);
    if (n < 0) fail_msg("scandir %s", dir);
    size_t cap = 256 * (size_t)(n + 1), len = 0;
    char *out = pl_malloc(cap);
    out[0] = 0;
    for (int k = 0; k < n; k++) {
        char path[600], sha[65] = "(folder)";
        snprintf(path, sizeof path, "%s/%s", dir, v[k]->d_name);
        struct stat st;
        if (strcmp(v[k]->d_name, ".") && strcmp(v[k]->d_name, "..") && stat(path, &st) == 0) {
            pl_err err;
            if (S_ISREG(st.st_mode) && pl_sha256_file(path, sha, &err) < 0) fail_msg("%s", err.msg);
            len += (size_t)snprintf(out + len, cap - len, "%s %lld %s\n", v[k]->d_name,
                                    (long long)st.st_size, sha);
        }
        free(v[k]);
    }
    free(v);
    return out;
}

/* A re-split (13 stages -> another cut) that fails midway, files capped at 1000 bytes as on a
 * full disk: the old split is left whole (never its manifest beside new stage files), nothing
 * else appears beside it, and the command says why. */
static void test_resplit_fails_whole(void **state)
{
    (void)state;
    char *dir = tmpdir(), s[256], args[1024], *out;
    cli_split(dir, "fewest");
    snprintf(s, sizeof s, "%s/s", dir);
    char *before = tree(s), *parent = tree(dir);
    snprintf(args, sizeof args,
             "split models/resnet50.onnx --cluster " INTRA " --plan %s/p.json -o %s --cut schedule "
             "2>&1 >/dev/null",
             dir, s);
    int rc = tu_run_fsize(args, 1000, &out);
    char *after = tree(s), *parent_after = tree(dir);
    assert_string_equal(after, before);
    assert_string_equal(parent_after, parent);
    if (rc == 0 || !strstr(out, "File too large") || !strstr(out, "left as it was"))
        fail_msg("placer %s: exit %d, expected a write error:\n%s", args, rc, out);
    free(out);
    free(before), free(after), free(parent), free(parent_after);
    /* unlimited, the re-split replaces the folder whole: the other cut's manifest */
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    snprintf(args, sizeof args, "%s/manifest.json", s);
    json_t *man = json_load_file(args, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(man, "cut")), "schedule");
    json_decref(man);
    rmdir_all(dir);
    free(dir);
}

/* A split killed with SIGKILL leaves its hidden ".s.tmp.PID" folder; the next split to the same
 * folder removes it once that PID is gone (4194305 is above Linux's largest pid_max), and
 * keeps the folder of a live PID (this test's) and any other name. */
static void test_stale_temporaries(void **state)
{
    (void)state;
    char *dir = tmpdir(), path[4][300];
    static const char *const names[] = {".s.tmp.4194305", ".s.tmp.%ld", ".s.tmp.12x",
                                        ".t.tmp.4194305"};
    for (int k = 0; k < 4; k++) {
        char name[64];
        snprintf(name, sizeof name, names[k], (long)getpid());
        snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
        assert_int_equal(mkdir(path[k], 0700), 0);
    }
    cli_split(dir, "fewest");
    for (int k = 0; k < 4; k++)
        if ((access(path[k], F_OK) == 0) != (k > 0))
            fail_msg("%s: %s", path[k], k ? "removed, but it is not stale" : "stale, still there");
    /* an output whose own name holds ".tmp.": its temporaries are found by the last one */
    char stale[400], args[1024], *out;
    snprintf(stale, sizeof stale, "%s/.a.tmp.b.tmp.4194305", dir);
    assert_int_equal(mkdir(stale, 0700), 0);
    snprintf(args, sizeof args,
             "split models/resnet50.onnx --cluster " INTRA " --plan %s/p.json -o %s/a.tmp.b "
             ">/dev/null",
             dir, dir);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    if (access(stale, F_OK) == 0) fail_msg("%s: stale, still there", stale);
    rmdir_all(dir);
    free(dir);
}

/* -o naming a folder of the user's (not empty, no split manifest) is refused and left alone;
 * an empty folder is fine. */
static void test_refuses_user_folder(void **state)
{
    (void)state;
    char *dir = tmpdir(), args[1024], path[300], *out;
    cli_split(dir, "fewest");
    snprintf(path, sizeof path, "%s/mine", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/mine/notes.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("keep me\n", f);
    fclose(f);
    snprintf(args, sizeof args,
             "split models/resnet50.onnx --cluster " INTRA " --plan %s/p.json -o %s/mine", dir,
             dir);
    tu_expect_refusal(args, "is not empty and is not a previous split");
    size_t n;
    pl_err err;
    char *b = pl_read_file(path, &n, &err);
    assert_non_null(b);
    assert_string_equal(b, "keep me\n");
    free(b);
    remove(path);
    snprintf(args, sizeof args,
             "split models/resnet50.onnx --cluster " INTRA " --plan %s/p.json -o %s/mine "
             ">/dev/null",
             dir, dir);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    rmdir_all(dir);
    free(dir);
}

/* split --plan runs the plan checker simulate and run use: an order that deadlocks is refused
 * with its words, though the fewest cut ignores the order. FORK on devices A (a, c, d) and B
 * (b): A runs d first, which waits for b, which waits for a behind d. */
static void test_deadlocking_plan(void **state)
{
    (void)state;
    uint8_t *buf;
    size_t len = tiny_model(FORK, 4, &buf);
    char model[256], args[1024];
    snprintf(model, sizeof model, "%s", tu_tmpfile(buf, len, ".onnx"));
    free(buf);
    static const char plan[] =
        "{\"format\": \"placer-plan/1\", \"placement\": {\"a\": \"A\", \"b\": \"B\", "
        "\"c\": \"A\", \"d\": \"A\"}, \"order\": {\"A\": [\"d\", \"a\", \"c\"], \"B\": "
        "[\"b\"]}}";
    char p[256], *dir = tmpdir();
    snprintf(p, sizeof p, "%s", tu_tmpfile(plan, strlen(plan), ".json"));
    const char *words = "the plan's order deadlocks: on device 'A', op 'd' waits forever for "
                        "tensor 'bv' from op 'b' on 'B'";
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "split %s --cluster " INTRA " --plan %s -o %s/s --cut %s",
                 model, p, dir, k ? "schedule" : "fewest");
        tu_expect_refusal(args, words);
    }
    snprintf(args, sizeof args, "simulate %s --cluster " INTRA " --plan %s", model, p);
    tu_expect_refusal(args, words);
    remove(p), remove(model);
    rmdir_all(dir);
    free(dir);
}

/* ---- what a stage file declares for the tensors it reads and makes ---- */

#define LOCAL "examples/clusters/local-cpu-percore.json"

/* x [2,3] -> op "a" -> t -> op "b" -> y [2,3]: the model m (a and b added by the caller), with
 * a on device 0 and b on device 1, split into dir/s. Returns pl_split_write's status, its
 * message in msg; a refused split leaves nothing in dir. The model's file goes to path. */
static int split_pair(Onnx__ModelProto *m, const char *dir, char *path, char *msg, size_t n)
{
    input(m, "x", "2,3");
    output(m, "y", "2,3");
    save_tmp(m, path, 256);
    pl_graph *g = tu_load(path);
    pl_plan *p = pl_plan_new(g->n_ops, 2);
    p->dev[pl_graph_find_op(g, "b")] = 1;
    pl_stages s;
    pl_err err = {""};
    if (pl_split_stages_by(g, p, PL_SPLIT_FEWEST, &s, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(s.n, 2);
    char out[256];
    snprintf(out, sizeof out, "%s/s", dir);
    int rc = pl_split_write(path, g, &s, NULL, out, &err);
    snprintf(msg, n, "%s", err.msg);
    if (rc < 0) tu_expect_empty_dir(dir); /* nor DIR, nor a temporary beside it */
    pl_stages_free(&s);
    pl_plan_free(p);
    pl_graph_free(g);
    return rc;
}

/* The dtype with which stage file dir/s/stage_NN.onnx declares tensor `name`. */
static int stage_dtype(const char *dir, int j, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/s/stage_%02d.onnx", dir, j);
    pl_err err = {""};
    pl_graph *sg = pl_onnx_load(path, NULL, &err);
    if (!sg) fail_msg("%s", err.msg);
    int t = pl_graph_find_tensor(sg, name);
    assert_true(t >= 0);
    int dt = sg->tensors[t].dtype;
    pl_graph_free(sg);
    return dt;
}

/* A tensor sent between stages whose type no stage file could declare, or that onnxruntime-node
 * cannot pass, is refused before anything is written, naming it and why. Before, the stages
 * were written with exit 0 and declared it `tensor(elem_type 0)` (the output of an op of a
 * custom domain, a sequence) or bfloat16, and onnxruntime refused to load them in placer run
 * ("Invalid tensor data type 0", "Unsupported data type: 16"). */
static void test_cut_types_refused(void **state)
{
    (void)state;
    char *dir = tmpdir(), path[256], msg[1024];
    /* a: an op of a custom domain, which placer has no type rule for */
    Onnx__ModelProto *m = model();
    opset(m, "com.example", 1);
    node(m, "Frob", "a", "x", "t")->domain = strdup("com.example");
    node(m, "Relu", "b", "t", "y");
    assert_int_equal(split_pair(m, dir, path, msg, sizeof msg), -1);
    assert_contains(msg, "tensor 't' cannot go from stage_00 (dev0) to stage_01 (dev1)");
    assert_contains(msg, "its element type is unknown");
    assert_contains(msg, "placer has no type rule for Frob of domain com.example");
    assert_contains(msg, "keep 'a' and the ops reading 't' on one device");
    remove(path);
    /* a sequence: onnxruntime-node has no sequence values (OnnxValue is a Tensor) */
    m = model();
    init_i(m, "i", "1", true);
    node(m, "SplitToSequence", "a", "x", "t");
    node(m, "SequenceAt", "b", "t,i", "y");
    assert_int_equal(split_pair(m, dir, path, msg, sizeof msg), -1);
    assert_contains(msg, "tensor 't' cannot go from stage_00 (dev0) to stage_01 (dev1): it is a "
                         "sequence (made by SplitToSequence)");
    assert_contains(msg, "placer run cannot pass it between stages");
    remove(path);
    /* bfloat16: onnxruntime-node has no such tensors */
    m = model();
    int_attr(node(m, "Cast", "a", "x", "t"), "to", PL_DT_BFLOAT16);
    int_attr(node(m, "Cast", "b", "t", "y"), "to", PL_DT_FLOAT);
    assert_int_equal(split_pair(m, dir, path, msg, sizeof msg), -1);
    assert_contains(msg, "tensor 't' cannot go from stage_00 (dev0) to stage_01 (dev1): it is "
                         "bfloat16, which onnxruntime-node does not support");
    /* the command: exit status 2 with the message, nothing written */
    pl_err err = {""};
    pl_graph *g = tu_load(path);
    pl_cluster *c = pl_cluster_load(LOCAL, &err);
    pl_plan *p = pl_plan_new(g->n_ops, 2);
    p->dev[pl_graph_find_op(g, "b")] = 1;
    char plan[256], args[1024];
    snprintf(plan, sizeof plan, "%s", tu_tmpfile("", 0, ".json"));
    if (!c || pl_plan_save(p, g, c, plan, &err) < 0) fail_msg("%s", err.msg);
    snprintf(args, sizeof args, "split %s --cluster " LOCAL " --plan %s -o %s/s", path, plan, dir);
    tu_expect_refusal(args, "placer split: tensor 't' cannot go from stage_00 (cpu0) to stage_01 "
                            "(cpu1): it is bfloat16");
    tu_expect_empty_dir(dir);
    remove(plan), remove(path);
    pl_plan_free(p);
    pl_cluster_free(c);
    pl_graph_free(g);
    rmdir_all(dir);
    free(dir);
}

/* Where the type can be known, it is written: the custom op's output declared in the model's
 * value_info, and a float16 tensor (which onnxruntime-node passes as Uint16Array). */
static void test_cut_types_written(void **state)
{
    (void)state;
    char *dir = tmpdir(), path[256], msg[1024], cmd[512];
    Onnx__ModelProto *m = model();
    opset(m, "com.example", 1);
    node(m, "Frob", "a", "x", "t")->domain = strdup("com.example");
    node(m, "Relu", "b", "t", "y");
    APPEND(m->graph->value_info, m->graph->n_value_info, vi("t", "2,3"));
    if (split_pair(m, dir, path, msg, sizeof msg) < 0) fail_msg("%s", msg);
    assert_int_equal(stage_dtype(dir, 0, "t"), PL_DT_FLOAT);
    assert_int_equal(stage_dtype(dir, 1, "t"), PL_DT_FLOAT);
    remove(path);
    rmdir_all(dir);
    free(dir);
    dir = tmpdir();
    m = model();
    int_attr(node(m, "Cast", "a", "x", "t"), "to", PL_DT_FLOAT16);
    int_attr(node(m, "Cast", "b", "t", "y"), "to", PL_DT_FLOAT);
    if (split_pair(m, dir, path, msg, sizeof msg) < 0) fail_msg("%s", msg);
    assert_int_equal(stage_dtype(dir, 1, "t"), PL_DT_FLOAT16);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/check_split.py %s/s >/dev/null", dir);
    assert_int_equal(system(cmd), 0);
    remove(path);
    rmdir_all(dir);
    free(dir);
}

/* symbolic_chain on devices 0, 1, 0, split with `dims` bound (NULL: none) into dir/s; the
 * model's file in path (256 bytes). */
static void split_symbolic(const char *dir, const char **dims, int n_dims, char *path)
{
    symbolic_chain(path, 256);
    pl_err err = {""};
    pl_graph *g = pl_graph_load(path, &(pl_load_opts){.dims = dims, .n_dims = n_dims}, &err);
    if (!g) fail_msg("%s", err.msg);
    pl_plan *p = pl_plan_new(g->n_ops, 2);
    p->dev[pl_graph_find_op(g, "r")] = 1;
    pl_stages s;
    char out[256];
    snprintf(out, sizeof out, "%s/s", dir);
    if (pl_split_stages_by(g, p, PL_SPLIT_FEWEST, &s, &err) < 0 ||
        pl_split_write(path, g, &s, NULL, out, &err) < 0)
        fail_msg("%s", err.msg);
    assert_int_equal(s.n, 3);
    pl_stages_free(&s);
    pl_plan_free(p);
    pl_graph_free(g);
}

/* The dims with which dir/s/stage_NN.onnx declares tensor `name`, read without bindings
 * (PL_DIM_UNKNOWN for a symbolic one), as "2,4,64". */
static const char *stage_dims(const char *dir, int j, const char *name)
{
    static char buf[128];
    char path[512];
    snprintf(path, sizeof path, "%s/s/stage_%02d.onnx", dir, j);
    pl_err err = {""};
    pl_graph *sg = pl_onnx_load(path, NULL, &err);
    if (!sg) fail_msg("%s", err.msg);
    const pl_tensor *t = &sg->tensors[pl_graph_find_tensor(sg, name)];
    size_t n = 0;
    buf[0] = 0;
    for (int k = 0; k < t->rank; k++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld", k ? "," : "",
                              (long long)t->dims[k]);
    pl_graph_free(sg);
    return buf;
}

/* A split made with --dim declares the bound dims on the stages' graph inputs too, as on the
 * tensors the stages exchange: before, stage 0 read x [batch, seq, 64] while stage 1 expected
 * a [2, 4, 128], and placer run (which makes a symbolic dim 1) always failed. Without --dim the
 * model's symbolic dims stay. A graph output the model declares without a shape gets the one
 * placer inferred (onnx.checker wants one). */
static void test_split_binds_dims(void **state)
{
    (void)state;
    char *dir = tmpdir(), path[256], cmd[512];
    const char *dims[] = {"batch=2", "seq=4"};
    split_symbolic(dir, dims, 2, path);
    assert_string_equal(stage_dims(dir, 0, "x"), "2,4,64");
    assert_string_equal(stage_dims(dir, 0, "a"), "2,4,128");
    assert_string_equal(stage_dims(dir, 1, "a"), "2,4,128");
    assert_string_equal(stage_dims(dir, 2, "y"), "2,4,32");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/check_split.py %s/s >/dev/null", dir);
    assert_int_equal(system(cmd), 0);
    remove(path);
    rmdir_all(dir);
    free(dir);
    dir = tmpdir();
    split_symbolic(dir, NULL, 0, path);
    assert_string_equal(stage_dims(dir, 0, "x"), "-1,-1,64");
    assert_string_equal(stage_dims(dir, 1, "a"), "-1,-1,128");
    remove(path);
    rmdir_all(dir);
    free(dir);
}

/* ---- the command ---- */

static void test_cli(void **state)
{
    (void)state;
    char plan[256], args[1024], *out, *dir = tmpdir();
    snprintf(plan, sizeof plan, "%s", tu_tmpfile("", 0, ".json"));
    snprintf(args, sizeof args,
             "place models/resnet50.onnx --cluster " INTRA " --algo heft -o %s >/dev/null", plan);
    assert_int_equal(tu_run(args, &out), 0);
    free(out);
    snprintf(args, sizeof args,
             "split models/resnet50.onnx --cluster " INTRA " --plan %s -o %s/s --json 2>/dev/null",
             plan, dir);
    json_t *j = tu_run_json(args);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "placer-split/2");
    assert_true(json_array_size(json_object_get(j, "stages")) >= 2);
    json_decref(j);
    /* the text table names every stage */
    snprintf(args, sizeof args,
             "split models/resnet50.onnx --cluster " INTRA " --plan %s -o %s/s 2>/dev/null", plan,
             dir);
    assert_int_equal(tu_run(args, &out), 0);
    assert_contains(out, "stage_01");
    free(out);
    /* a plan for another model is refused by its SHA-256 */
    snprintf(args, sizeof args,
             "split models/resnext50_32x4d.onnx --cluster " INTRA " --plan %s -o %s/t", plan, dir);
    int rc = tu_run(args, &out);
    if (rc != 2 || !strstr(out, "this plan was made for another model"))
        fail_msg("placer %s: exit %d, expected 2 and a refusal:\n%s", args, rc, out);
    free(out);
    remove(plan);
    rmdir_all(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alternating),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_schedule_cut),
        cmocka_unit_test(test_schedule_cycle),
        cmocka_unit_test(test_schedule_cut_is_what_the_simulator_charges),
        cmocka_unit_test(test_simulator_prices_the_manifest),
        cmocka_unit_test(test_manifest_errors),
        cmocka_unit_test(test_manifest_hashes),
        cmocka_unit_test(test_resplit_fails_whole),
        cmocka_unit_test(test_refuses_user_folder),
        cmocka_unit_test(test_stale_temporaries),
        cmocka_unit_test(test_deadlocking_plan),
        cmocka_unit_test(test_cut_types_refused),
        cmocka_unit_test(test_cut_types_written),
        cmocka_unit_test(test_split_binds_dims),
        cmocka_unit_test(test_resnet50),
        cmocka_unit_test(test_inception_v3),
        cmocka_unit_test(test_other_models),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
