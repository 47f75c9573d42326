/* test_taskgraph.c: the placer-taskgraph/1 reader: the examples, defaults, every refusal
 * (each naming the JSON path), and a 50,000-node graph. */
#include "testutil.h"

#include "placer/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEAD "{\"format\": \"placer-taskgraph/1\", "

static pl_graph *load_text(const char *text)
{
    pl_err err = {""};
    pl_graph *g = pl_taskgraph_load_buffer(text, strlen(text), "t.json", NULL, &err);
    if (!g) fail_msg("refused: %s\n%s", err.msg, text);
    return g;
}

static const char *refuse_text(const char *text)
{
    static pl_err err;
    err.msg[0] = 0;
    pl_graph *g = pl_taskgraph_load_buffer(text, strlen(text), "t.json", NULL, &err);
    if (g) {
        pl_graph_free(g);
        fail_msg("loaded but should have been refused:\n%s", text);
    }
    if (!err.msg[0]) fail_msg("refused without a message:\n%s", text);
    return err.msg;
}

static int tensor(const pl_graph *g, const char *name)
{
    int t = pl_graph_find_tensor(g, name);
    if (t < 0) fail_msg("no tensor '%s'", name);
    return t;
}

static int op(const pl_graph *g, const char *name)
{
    int i = pl_graph_find_op(g, name);
    if (i < 0) fail_msg("no op '%s'", name);
    return i;
}

static bool has_edge(const pl_graph *g, int src, int dst, int t)
{
    for (int k = 0; k < g->n_edges; k++)
        if (g->edges[k].src == src && g->edges[k].dst == dst && g->edges[k].tensor == t)
            return true;
    return false;
}

static double time_on(const pl_op *o, const char *model)
{
    for (int k = 0; k < o->n_times; k++)
        if (strcmp(o->time_device[k], model) == 0) return o->time_s[k];
    return -1;
}

/* ---- well-formed graphs ---- */

static void test_diamond(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = pl_taskgraph_load("examples/taskgraphs/diamond.json", NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    assert_string_equal(g->name, "diamond");
    assert_string_equal(g->info.format, "json");
    assert_string_equal(g->path, "examples/taskgraphs/diamond.json");
    assert_int_equal(g->n_ops, 4);
    int a = op(g, "a"), b = op(g, "b"), c = op(g, "c"), d = op(g, "d");
    assert_string_equal(g->ops[a].type, "Conv");
    assert_int_equal(g->ops[a].cls, PL_CLASS_DENSE);
    assert_int_equal(g->ops[b].cls, PL_CLASS_ELEMENTWISE);
    assert_true(g->ops[a].flops == 1.2e9);
    assert_true(g->ops[b].flops == 2.5e5);
    for (int i = 0; i < 4; i++)
        assert_true(g->ops[i].flags & PL_OP_COST_GIVEN);
    /* times: numbers and strings with units */
    assert_int_equal(g->ops[a].n_times, 2);
    assert_true(time_on(&g->ops[a], "V100") == 0.0012);
    assert_close(time_on(&g->ops[a], "K80"), 0.0031, 1e-12);
    assert_close(time_on(&g->ops[d], "V100"), 40e-6, 1e-12);
    /* d has only times: its cost is given, with no FLOPs */
    assert_true(g->ops[d].flops == 0);
    assert_int_equal(g->ops[d].cls, PL_CLASS_UNKNOWN);
    /* the shared tensor: one tensor, two consumers, two edges */
    int a0 = tensor(g, "a:0");
    assert_int_equal(g->tensors[a0].producer, a);
    assert_int_equal(g->tensors[a0].n_consumers, 2);
    assert_int_equal(g->tensors[a0].bytes, 1 << 20);
    assert_int_equal(g->tensors[a0].dtype, PL_DT_UINT8);
    assert_int_equal(g->ops[a].n_outputs, 1);
    assert_true(has_edge(g, a, b, a0) && has_edge(g, a, c, a0));
    assert_true(has_edge(g, b, d, tensor(g, "b->d")));
    assert_true(has_edge(g, c, d, tensor(g, "c->d")));
    assert_int_equal(g->n_edges, 4);
    /* weights: a tensor of their own, read last by their node */
    int wa = tensor(g, "a:weights");
    assert_true(g->tensors[wa].flags & PL_TENSOR_WEIGHT);
    assert_int_equal(g->tensors[wa].bytes, 4 << 20);
    assert_int_equal(g->tensors[wa].producer, -1);
    assert_int_equal(g->ops[a].inputs[g->ops[a].n_inputs - 1], wa);
    assert_int_equal(g->tensors[tensor(g, "c:weights")].bytes, 16 << 20);
    assert_int_equal(pl_graph_find_tensor(g, "b:weights"), -1);
    /* graph input and output */
    assert_int_equal(g->n_inputs, 1);
    assert_int_equal(g->inputs[0], tensor(g, "image"));
    assert_true(g->tensors[g->inputs[0]].flags & PL_TENSOR_INPUT);
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(g->outputs[0], tensor(g, "result"));
    assert_int_equal(g->tensors[g->outputs[0]].producer, d);
    /* working memory, and moved bytes counted from the tensors when not given */
    assert_true(g->ops[c].extra_memory_bytes == 8 << 20);
    assert_true(g->ops[a].bytes_moved == (2 + 4 + 1) << 20);
    assert_true(g->ops[c].bytes_moved == (1 + 16 + 1) << 20);
    /* order */
    assert_int_equal(g->topo[0], a);
    assert_int_equal(g->topo[3], d);
    pl_graph_free(g);
}

static void test_transformer(void **state)
{
    (void)state;
    pl_err err = {""};
    pl_graph *g = pl_taskgraph_load("examples/taskgraphs/transformer_block.json", NULL, &err);
    if (!g) fail_msg("%s", err.msg);
    assert_int_equal(g->n_ops, 12);
    assert_string_equal(g->info.producer, "hand-written from the BERT-base shapes");
    int x = tensor(g, "x");
    assert_int_equal(g->tensors[x].n_consumers, 4); /* one graph input, read four times */
    assert_int_equal(g->n_inputs, 1);
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(g->tensors[tensor(g, "h1")].n_consumers, 2);
    assert_int_equal(g->tensors[tensor(g, "ffn_up:weights")].bytes, 9449472);
    assert_true(g->topo_pos[op(g, "softmax")] < g->topo_pos[op(g, "context")]);
    assert_true(g->topo_pos[op(g, "add_ln1")] < g->topo_pos[op(g, "add_ln2")]);
    double flops = 0;
    for (int i = 0; i < g->n_ops; i++)
        flops += g->ops[i].flops;
    assert_close(flops, 1.87e9, 0.01);
    pl_graph_free(g);
}

static void test_defaults(void **state)
{
    (void)state;
    pl_graph *g =
        load_text(HEAD "\"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\", \"flops\": 10},"
                       " {\"name\": \"c\", \"memory_bytes\": \"1 KiB\", \"weight_bytes\": 0}],"
                       " \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 0},"
                       " {\"from\": \"b\", \"to\": \"c\", \"bytes\": \"3 B\"}]}");
    assert_string_equal(g->name, "t"); /* from the file name */
    assert_null(g->path);
    int a = op(g, "a"), b = op(g, "b"), c = op(g, "c");
    assert_string_equal(g->ops[a].type, "Task");
    assert_false(g->ops[a].flags & PL_OP_COST_GIVEN); /* nothing given: infer's default */
    assert_true(g->ops[b].flags & PL_OP_COST_GIVEN);
    assert_int_equal(g->ops[b].cls, PL_CLASS_UNKNOWN);
    assert_true(g->ops[b].bytes_moved == 3);
    assert_false(g->ops[c].flags & PL_OP_COST_GIVEN);
    assert_true(g->ops[c].extra_memory_bytes == 1024);
    assert_int_equal(g->ops[c].n_inputs, 1); /* a zero weight is no tensor */
    assert_int_equal(g->tensors[tensor(g, "a->b")].bytes, 0);
    assert_int_equal(g->n_inputs, 0);
    assert_int_equal(g->n_outputs, 0);
    pl_graph_free(g);

    /* no edges at all; a name given; moved_bytes given; null means absent */
    g = load_text(HEAD
                  "\"name\": \"solo\", \"edges\": null, \"nodes\": [{\"name\": \"x\", "
                  "\"type\": null, \"moved_bytes\": \"1 MB\", \"class\": \"data_movement\"}]}");
    assert_string_equal(g->name, "solo");
    assert_string_equal(g->ops[0].type, "Task");
    assert_true(g->ops[0].bytes_moved == 1e6);
    assert_int_equal(g->ops[0].cls, PL_CLASS_DATA_MOVEMENT);
    pl_graph_free(g);

    /* the options form, and a buffer with no name */
    const char *text = HEAD "\"nodes\": [{\"name\": \"x\"}]}";
    pl_load_opts opts = {.no_infer = true};
    pl_err err = {""};
    g = pl_taskgraph_load_buffer(text, strlen(text), NULL, &opts, &err);
    assert_non_null(g);
    assert_string_equal(g->name, "<buffer>");
    pl_graph_free(g);
    g = pl_taskgraph_load("examples/taskgraphs/diamond.json", &opts, &err);
    assert_non_null(g);
    pl_graph_free(g);
}

static void test_outputs_shared(void **state)
{
    (void)state;
    /* a tensor that is both sent on and a graph output, and a shared graph input */
    pl_graph *g = load_text(
        HEAD "\"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}], \"edges\": ["
             "{\"to\": \"a\", \"bytes\": 8, \"tensor\": \"in\"},"
             "{\"to\": \"b\", \"bytes\": 8, \"tensor\": \"in\"},"
             "{\"from\": \"a\", \"to\": \"c\", \"bytes\": 4, \"tensor\": \"t\"},"
             "{\"from\": \"a\", \"bytes\": 4, \"tensor\": \"t\"},"
             "{\"from\": \"b\", \"bytes\": 2},"
             "{\"to\": \"c\", \"bytes\": 2}]}");
    assert_int_equal(g->n_inputs, 2);
    assert_int_equal(g->tensors[tensor(g, "in")].n_consumers, 2);
    assert_true(g->tensors[tensor(g, "c:input")].flags & PL_TENSOR_INPUT);
    assert_int_equal(g->n_outputs, 2);
    int t = tensor(g, "t");
    assert_true(g->tensors[t].flags & PL_TENSOR_OUTPUT);
    assert_int_equal(g->tensors[t].n_consumers, 1);
    assert_int_equal(g->tensors[tensor(g, "b:output")].producer, op(g, "b"));
    pl_graph_free(g);
}

/* ---- refusals: each names the file, the JSON path and the problem ---- */

typedef struct {
    const char *text;
    const char *msg[2];
} bad_case;

#define NODES2 "\"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}]"
#define NODES3 "\"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}]"

static const bad_case bad[] = {
    /* the document */
    {"{\"format\": \"placer-taskgraph/1\",\n \"nodes\": [}", {"t.json: line 2, column"}},
    {"{\"nodes\": []}", {"t.json: $: the \"format\" field is missing"}},
    {"{\"format\": \"placer-taskgraph/2\", \"nodes\": []}",
     {"t.json: $.format:", "/2\" is not supported"}},
    {"{\"format\": \"placer-cluster/1\"}", {"this is a \"placer-cluster/1\" file"}},
    {"[1, 2]", {"t.json: $: expected an object"}},
    {HEAD "\"node\": []}", {"t.json: $.node: unknown field; did you mean \"nodes\"?"}},
    {HEAD "\"edges\": []}", {"t.json: $: the field \"nodes\" is missing"}},
    {HEAD "\"nodes\": []}", {"t.json: $.nodes: a task graph needs at least one node"}},
    {HEAD "\"nodes\": {}}", {"t.json: $.nodes: expected an array, got an object"}},
    {HEAD "\"name\": 5, " NODES2 "}", {"t.json: $.name: expected a string, got 5"}},
    {HEAD NODES2 ", \"edges\": {}}", {"t.json: $.edges: expected an array"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"flops\": 1e999}]}", {"t.json: line 1"}},
    /* nodes */
    {HEAD "\"nodes\": [{\"name\": \"a\"}, 7]}", {"t.json: $.nodes[1]: expected an object, got 7"}},
    {HEAD "\"nodes\": [{\"type\": \"Conv\"}]}",
     {"t.json: $.nodes[0]: the field \"name\" is missing"}},
    {HEAD "\"nodes\": [{\"name\": \"\"}]}",
     {"t.json: $.nodes[0].name: a node name must not be empty"}},
    {HEAD "\"nodes\": [{\"name\": 3}]}", {"t.json: $.nodes[0].name: expected a string, got 3"}},
    {HEAD "\"nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"a\"}]}",
     {"t.json: $.nodes[2].name: node name \"a\" is already used by $.nodes[0]"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"type\": \"\"}]}",
     {"$.nodes[0].type: the type must not be empty"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"flop\": 1}]}",
     {"t.json: $.nodes[0].flop: unknown field; did you mean \"flops\"?"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"bytes_moved\": 1}]}",
     {"t.json: $.nodes[0].bytes_moved: unknown field; did you mean \"moved_bytes\"?"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"input_bytes\": 1}]}",
     {"$.nodes[0].input_bytes: unknown field"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"class\": \"dens\"}]}",
     {"t.json: $.nodes[0].class: unknown class \"dens\"; did you mean \"dense\"?"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"class\": \"gpu\"}]}",
     {"unknown class \"gpu\" (classes: dense"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"flops\": -5}]}",
     {"t.json: $.nodes[0].flops: -5 is negative"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"flops\": \"5 GB\"}]}",
     {"t.json: $.nodes[0].flops: \"5 GB\" is a size, not a FLOP count"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"flops\": \"inf FLOP\"}]}",
     {"$.nodes[0].flops:", "not a finite number"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"flops\": true}]}",
     {"$.nodes[0].flops: expected a FLOP count like"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"weight_bytes\": \"4\"}]}",
     {"t.json: $.nodes[0].weight_bytes: \"4\": the unit is missing: write e.g. \"4 GiB\""}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"weight_bytes\": 1e30}]}",
     {"t.json: $.nodes[0].weight_bytes: 1e+30 bytes is more than 8 PiB"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"memory_bytes\": -1}]}",
     {"t.json: $.nodes[0].memory_bytes: -1 is negative"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"moved_bytes\": \"2 s\"}]}",
     {"$.nodes[0].moved_bytes: \"2 s\" is a time"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"times_s\": {\"V100\": -0.5}}]}",
     {"t.json: $.nodes[0].times_s.V100: -0.5 is negative"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"times_s\": {\"K80\": 1, \"Tesla T4\": \"3 GB\"}}]}",
     {"t.json: $.nodes[0].times_s[\"Tesla T4\"]: \"3 GB\" is a size, not a time"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"times_s\": {\"\": 1}}]}",
     {"t.json: $.nodes[0].times_s[\"\"]: the device model name is empty"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"times_s\": 0.5}]}",
     {"$.nodes[0].times_s: expected an object, got 0.5"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"times_s\": {\"V100\": [1]}}]}",
     {"$.nodes[0].times_s.V100: expected a time like \"50 ms\" or a number of seconds, got an "
      "array"}},
    /* edges */
    {HEAD NODES2 ", \"edges\": [5]}", {"t.json: $.edges[0]: expected an object, got 5"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"x\", \"bytes\": 1}]}",
     {"t.json: $.edges[0].to: unknown node \"x\""}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1}, {\"from\": \"bb\", "
                 "\"to\": \"a\", \"bytes\": 1}]}",
     {"t.json: $.edges[1].from: unknown node \"bb\"; did you mean \"b\"?"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": 5, \"to\": \"b\", \"bytes\": 1}]}",
     {"t.json: $.edges[0].from: expected a string, got 5"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"a\", \"bytes\": 1}]}",
     {"t.json: $.edges[0]: node \"a\" sends to itself (a self-loop)"}},
    {HEAD NODES2 ", \"edges\": [{\"bytes\": 1}]}",
     {"t.json: $.edges[0]: an edge needs \"from\", \"to\" or both"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\"}]}",
     {"t.json: $.edges[0]: the field \"bytes\" is missing"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"size\": 1}]}",
     {"t.json: $.edges[0].size: unknown field"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": \"100\"}]}",
     {"t.json: $.edges[0].bytes: \"100\": the unit is missing"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": -4}]}",
     {"t.json: $.edges[0].bytes: -4 is negative"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": \"1 EB\"}]}",
     {"$.edges[0].bytes:", "unknown unit"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1e20}]}",
     {"$.edges[0].bytes: 1e+20 bytes is more than 8 PiB"}},
    /* per-device-pair transfer times */
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": 3}]}",
     {"t.json: $.edges[0].times_s: transfer times per device pair: a list of"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "{\"V100->K80\": 1}}]}",
     {"t.json: $.edges[0].times_s[\"V100->K80\"]: unknown field; the fields here are: devices, "
      "matrix_s"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "[{\"from\": \"V100\", \"to\": \"K80\"}]}]}",
     {"t.json: $.edges[0].times_s[0]: the field \"time_s\" is missing"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "[{\"from\": \"V100\", \"to\": \"K80\", \"time\": 1}]}]}",
     {"t.json: $.edges[0].times_s[0].time: unknown field; did you mean \"time_s\"?"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "[{\"from\": \"\", \"to\": \"K80\", \"time_s\": 1}]}]}",
     {"t.json: $.edges[0].times_s[0].from: the device name or model is empty"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "[{\"from\": \"V100\", \"to\": \"K80\", \"time_s\": -1}]}]}",
     {"t.json: $.edges[0].times_s[0].time_s: -1 is negative"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "[{\"from\": \"V100\", \"to\": \"K80\", \"time_s\": \"3 GB\"}]}]}",
     {"t.json: $.edges[0].times_s[0].time_s: \"3 GB\" is a size, not a time"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "{\"devices\": [\"x\", \"y\"], \"matrix_s\": [[0, 1]]}}]}",
     {"t.json: $.edges[0].times_s.matrix_s: 1 rows for 2 devices"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "{\"devices\": [\"x\", \"y\"], \"matrix_s\": [[0, 1], [2]]}}]}",
     {"t.json: $.edges[0].times_s.matrix_s[1]: a row of 2 times (one per device)"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "{\"devices\": [\"x\", \"\"], \"matrix_s\": [[0, 1], [2, 0]]}}]}",
     {"t.json: $.edges[0].times_s.devices[1]: a device name or model (a non-empty string)"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"times_s\": "
                 "{\"devices\": [\"x\", \"y\"], \"matrix_s\": [[0, \"1 kB\"], [2, 0]]}}]}",
     {"t.json: $.edges[0].times_s.matrix_s[0][1]: \"1 kB\" is a size, not a time"}},
    {HEAD NODES3
     ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"tensor\": \"t\", "
     "\"times_s\": [{\"from\": \"x\", \"to\": \"y\", \"time_s\": 1}]}, {\"from\": \"a\", "
     "\"to\": \"c\", \"bytes\": 1, \"tensor\": \"t\", \"times_s\": []}]}",
     {"t.json: $.edges[1].times_s: the transfer times of tensor \"t\" are already given by "
      "$.edges[0]"}},
    /* colocation classes */
    {HEAD "\"nodes\": [{\"name\": \"a\", \"colocation\": \"\"}]}",
     {"t.json: $.nodes[0].colocation: a colocation class name must not be empty"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"colocation\": 5}]}",
     {"t.json: $.nodes[0].colocation: expected a string, got 5"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"colocate\": \"k\"}]}",
     {"t.json: $.nodes[0].colocate: unknown field; did you mean \"colocation\"?"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1, \"tensor\": \"\"}]}",
     {"t.json: $.edges[0].tensor: a tensor name must not be empty"}},
    /* shared tensors */
    {HEAD NODES3 ", \"edges\": [{\"from\": \"a\", \"to\": \"c\", \"bytes\": 4, \"tensor\": \"t\"},"
                 " {\"from\": \"b\", \"to\": \"c\", \"bytes\": 4, \"tensor\": \"t\"}]}",
     {"t.json: $.edges[1].tensor: tensor \"t\" is produced by \"a\" ($.edges[0]), not by \"b\""}},
    {HEAD NODES3 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 4, \"tensor\": \"t\"},"
                 " {\"from\": \"a\", \"to\": \"c\", \"bytes\": 8, \"tensor\": \"t\"}]}",
     {"t.json: $.edges[1].bytes: tensor \"t\" has 4 bytes at $.edges[0], not 8"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 4},"
                 " {\"from\": \"a\", \"to\": \"b\", \"bytes\": 4}]}",
     {"t.json: $.edges[1]: the tensor name \"a->b\" (this edge's default) is already used by "
      "$.edges[0]"}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 4, \"tensor\": \"t\"},"
                 " {\"from\": \"a\", \"to\": \"b\", \"bytes\": 4, \"tensor\": \"t\"}]}",
     {"t.json: $.edges[1]: repeats $.edges[0]: tensor \"t\" to \"b\""}},
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"bytes\": 4, \"tensor\": \"t\"},"
                 " {\"from\": \"a\", \"bytes\": 4, \"tensor\": \"t\"}]}",
     {"t.json: $.edges[1]: repeats $.edges[0]: tensor \"t\" as a graph output"}},
    {HEAD "\"nodes\": [{\"name\": \"a\", \"weight_bytes\": 4}, {\"name\": \"b\"}], \"edges\": ["
          "{\"from\": \"a\", \"to\": \"b\", \"bytes\": 4, \"tensor\": \"a:weights\"}]}",
     {"t.json: $.edges[0].tensor: tensor \"a:weights\" is the weights declared by "
      "$.nodes[0].weight_bytes"}},
    {HEAD NODES3 ", \"edges\": [{\"to\": \"b\", \"bytes\": 4, \"tensor\": \"x\"},"
                 " {\"from\": \"a\", \"to\": \"c\", \"bytes\": 4, \"tensor\": \"x\"}]}",
     {"t.json: $.edges[1].tensor: tensor \"x\" is a graph input ($.edges[0] has no \"from\")"}},
    {HEAD NODES3 ", \"edges\": [{\"from\": \"a\", \"to\": \"c\", \"bytes\": 4, \"tensor\": \"x\"},"
                 " {\"to\": \"b\", \"bytes\": 4, \"tensor\": \"x\"}]}",
     {"t.json: $.edges[1].tensor: tensor \"x\" is produced by \"a\" ($.edges[0]); an edge without "
      "\"from\" brings a graph input"}},
    {HEAD NODES2 ", \"edges\": [{\"to\": \"b\", \"bytes\": 4}, {\"to\": \"b\", \"bytes\": 4}]}",
     {"t.json: $.edges[1]: the tensor name \"b:input\" (this edge's default) is already used"}},
    /* cycles, found by finalize and placed at the edges */
    {HEAD NODES2 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1}, {\"from\": \"b\", "
                 "\"to\": \"a\", \"bytes\": 1}]}",
     {"t.json: $.edges: the graph has a cycle through 2 ops"}},
    {HEAD NODES3 ", \"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": 1}, {\"from\": \"b\", "
                 "\"to\": \"c\", \"bytes\": 1},"
                 " {\"from\": \"c\", \"to\": \"a\", \"bytes\": 1}]}",
     {"t.json: $.edges: the graph has a cycle through 3 ops", "'a' -> 'b' -> 'c' -> 'a'"}},
};

/* Transfer times per device pair, as a list (by device model) and as a matrix (by device
 * name), replace the estimate from bytes and links for those pairs only; colocation classes
 * are read in order of first use. */
static void test_pair_times_and_classes(void **state)
{
    (void)state;
    pl_graph *g = load_text(
        HEAD
        "\"nodes\": [{\"name\": \"a\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 ms\"}},"
        "{\"name\": \"b\", \"colocation\": \"k2\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 "
        "ms\"}},"
        "{\"name\": \"c\", \"colocation\": \"k1\", \"times_s\": {\"m0\": \"1 ms\", \"m1\": \"1 "
        "ms\"}}],"
        "\"edges\": [{\"from\": \"a\", \"to\": \"b\", \"bytes\": \"1 MB\", \"tensor\": \"t1\", "
        "\"times_s\": [{\"from\": \"m0\", \"to\": \"m1\", \"time_s\": \"3 ms\"}]},"
        "{\"from\": \"a\", \"to\": \"c\", \"bytes\": \"1 MB\", \"tensor\": \"t2\", \"times_s\": "
        "{\"devices\": [\"d0\", \"d1\"], \"matrix_s\": [[0, 0.007], [\"5 ms\", 0]]}},"
        "{\"from\": \"c\", \"to\": \"b\", \"bytes\": \"2 MB\", \"tensor\": \"t3\"}]}");
    assert_int_equal(g->n_coloc, 2);
    assert_string_equal(g->coloc_names[0], "k2");
    assert_int_equal(g->ops[op(g, "b")].coloc, 1);
    assert_int_equal(g->ops[op(g, "c")].coloc, 2);
    assert_int_equal(g->ops[op(g, "a")].coloc, 0);
    pl_cluster *c = pl_cluster_new("two");
    pl_cluster_add_device(c, "d0", PL_DEV_GPU, "m0");
    pl_cluster_add_device(c, "d1", PL_DEV_GPU, "m1");
    pl_cluster_set_link(c, 0, 1, 1e9, 0, true);
    pl_err err = {""};
    assert_int_equal(pl_cluster_finalize(c, &err), 0);
    pl_cost *k = pl_cost_new(g, c, NULL, NULL, 0, &err);
    assert_non_null(k);
    int t1 = tensor(g, "t1"), t2 = tensor(g, "t2"), t3 = tensor(g, "t3");
    assert_close(pl_cost_xfer_s(k, t1, 0, 1), 0.003, 1e-12);
    assert_close(pl_cost_xfer_s(k, t1, 1, 0), 0.001, 1e-12); /* not given: 1 MB at 1 GB/s */
    assert_close(pl_cost_xfer_s(k, t2, 0, 1), 0.007, 1e-12);
    assert_close(pl_cost_xfer_s(k, t2, 1, 0), 0.005, 1e-12);
    assert_true(pl_cost_xfer_s(k, t2, 1, 1) == 0);
    assert_close(pl_cost_xfer_s(k, t3, 0, 1), 0.002, 1e-12);
    /* the simulator takes them: a on d0 (0-1 ms), c on d0 (1-2 ms), b on d1 waits for t1
     * (1 + 3 ms) and t3 (2 + 2 ms): 4-5 ms with unlimited links */
    pl_plan *p = pl_plan_new(3, 2);
    p->dev[op(g, "b")] = 1;
    pl_sim_opts so = {.contention = PL_CONTENTION_NONE};
    pl_sim_result r;
    memset(&r, 0, sizeof r);
    assert_int_equal(pl_simulate(k, p, &so, &r, &err), 0);
    assert_close(r.makespan_s, 0.005, 1e-9);
    pl_sim_result_free(&r);
    pl_plan_free(p), pl_cost_free(k), pl_cluster_free(c), pl_graph_free(g);
}

static void test_refusals(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const char *m = refuse_text(bad[k].text);
        for (int j = 0; j < 2 && bad[k].msg[j]; j++)
            if (!strstr(m, bad[k].msg[j]))
                fail_msg("case %zu: message\n  %s\nlacks\n  %s\ninput: %s", k, m, bad[k].msg[j],
                         bad[k].text);
    }
}

static void test_file_errors(void **state)
{
    (void)state;
    pl_err err = {""};
    assert_null(pl_taskgraph_load("/nonexistent/g.json", NULL, &err));
    assert_contains(err.msg, "/nonexistent/g.json");
    assert_null(pl_taskgraph_load("/nonexistent/g.json", NULL, NULL));
    const char *text = HEAD "\"nodes\": [{\"name\": \"a\", \"flops\": \"12\"}]}";
    const char *path = tu_tmpfile(text, strlen(text), ".json");
    char want[512];
    snprintf(want, sizeof want, "%s: $.nodes[0].flops: \"12\": the unit is missing", path);
    assert_null(pl_taskgraph_load(path, NULL, &err));
    assert_contains(err.msg, want);
    remove(path);
    assert_null(pl_taskgraph_load_buffer(NULL, 0, NULL, NULL, &err));
    assert_contains(err.msg, "<buffer>: line");
}

/* ---- size ---- */

/* 50,000 nodes, each reading its predecessor and one node further back, with weights, times
 * and shared tensors: the text is built here so the repository holds no large file. */
static char *synthetic(int n)
{
    size_t cap = (size_t)n * 400 + 256, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, HEAD "\"name\": \"synthetic\", \"nodes\": [");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "%s{\"name\": \"n%d\", \"type\": \"T%d\", \"class\": \"dense\", "
                                "\"flops\": %d, \"weight_bytes\": \"%d KiB\", "
                                "\"times_s\": {\"V100\": %g, \"K80\": \"%d us\"}}",
                                i ? ", " : "", i, i % 7, 1000 + i, 1 + i % 64, 1e-5 * (1 + i % 10),
                                10 + i % 90);
    len += (size_t)snprintf(s + len, cap - len, "], \"edges\": [{\"to\": \"n0\", \"bytes\": 64}");
    for (int i = 1; i < n; i++) {
        len += (size_t)snprintf(s + len, cap - len,
                                ", {\"from\": \"n%d\", \"to\": \"n%d\", \"bytes\": %d, "
                                "\"tensor\": \"t%d\"}",
                                i - 1, i, 4096, i - 1);
        if (i >= 2 && i % 3 == 0) /* t(i-2) also goes to i: a shared tensor */
            len += (size_t)snprintf(s + len, cap - len,
                                    ", {\"from\": \"n%d\", \"to\": \"n%d\", \"bytes\": 4096, "
                                    "\"tensor\": \"t%d\"}",
                                    i - 2, i, i - 2);
    }
    len += (size_t)snprintf(s + len, cap - len, ", {\"from\": \"n%d\", \"bytes\": \"1 MiB\"}]}",
                            n - 1);
    assert_true(len < cap);
    return s;
}

static void test_large(void **state)
{
    (void)state;
    const int n = 50000;
    char *text = synthetic(n);
    pl_err err = {""};
    double t0 = pl_now();
    pl_graph *g = pl_taskgraph_load_buffer(text, strlen(text), "synthetic.json", NULL, &err);
    double dt = pl_now() - t0;
    if (!g) fail_msg("%s", err.msg);
    printf("    %d-node task graph (%.1f MB of JSON): loaded in %.3f s\n", n, strlen(text) / 1e6,
           dt);
    assert_int_equal(g->n_ops, n);
    assert_int_equal(g->n_inputs, 1);
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(g->tensors[tensor(g, "t1")].n_consumers, 2);
    assert_int_equal(g->topo[n - 1], n - 1);
    assert_int_equal(g->ops[n - 1].n_times, 2);
    pl_graph_free(g);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diamond),
        cmocka_unit_test(test_transformer),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_outputs_shared),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_pair_times_and_classes),
        cmocka_unit_test(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
