#!/usr/bin/python3
"""What the zoo's exporters share, with the onnx package alone (no torch): making a model
weightless, and the expected values of its zoo.json entry (ops, params, I/O, op histogram,
hand-formula FLOPs of named nodes), so that placer's C tests have an oracle independent of
placer's C code. Used by tools/export_models.py (torch models) and
tools/export_talos_models.py (Talos's CNNs, written with onnx.helper). See models/README.md.
"""

import collections
import json
import math
import re
import sys
from pathlib import Path
from typing import Dict, List

import onnx
from onnx import AttributeProto, TensorProto

sys.path.insert(0, str(Path(__file__).resolve().parent))
import onnx_facts  # noqa: E402  (the one definition of the counts, shared with the tests)

OPSET = 14
SEED = 0
# Integer initializers and Constant values up to this many elements keep their payload:
# they are shapes, axes and slice bounds that shape inference cannot do without.
SMALL_TENSOR = 64

DEFINITION = (
    "Computed with the onnx Python package (same definitions as docs/graph.md and "
    "tools/onnx_facts.py). ops: nodes of graph.node; ops_total: nodes including every "
    "If/Loop/Scan subgraph, recursively. params: elements of every initializer (dense or "
    "sparse: dense dims) of the main graph and all subgraphs, plus the elements of every "
    "Constant node's value in all graphs (value / sparse_value: product of the dense dims; "
    "value_float, value_int, value_string: 1; value_floats, value_ints, value_strings: list "
    "length), so shape constants count too. param_bytes: the same elements times the size "
    "of their dtype (FLOAT 4, INT64 8, FLOAT16 2, BOOL 1, ...; value_float(s) 4, "
    "value_int(s) 8, strings 0). initializers, constants: counts over all graphs. inputs: "
    "graph inputs that are not initializers. flops_check: Conv = "
    "2*N*Cout*Hout*Wout*(Cin/group)*Kh*Kw (bias not counted); MatMul [..,M,K]x[..,K,N] = "
    "2*batch*M*K*N with batch the product of the output's leading dims; Gemm = 2*M*K*N; "
    "attributes are listed with ONNX defaults filled in."
)



def subgraphs(graph: onnx.GraphProto):
    """The graph and, recursively, every graph held in a node attribute (If/Loop/Scan)."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                yield from subgraphs(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from subgraphs(g)


def clear_payload(tensor: TensorProto):
    for data in ("raw_data", "float_data", "int32_data", "string_data", "int64_data",
                 "double_data", "uint64_data"):
        tensor.ClearField(data)


def strip_weights(model: onnx.ModelProto):
    """Makes the model weightless in place: every tensor keeps name, dims and dtype, but
    only small integer initializers and small Constant values keep their data."""
    for graph in subgraphs(model.graph):
        for init in graph.initializer:
            if not (init.data_type in (TensorProto.INT32, TensorProto.INT64)
                    and math.prod(init.dims) <= SMALL_TENSOR):
                clear_payload(init)
        for sparse in graph.sparse_initializer:
            clear_payload(sparse.values)
            clear_payload(sparse.indices)
        for node in graph.node:
            if node.op_type != "Constant":
                continue
            for attr in node.attribute:
                if attr.name == "value" and math.prod(attr.t.dims) > SMALL_TENSOR:
                    clear_payload(attr.t)
                elif (attr.name == "sparse_value"
                      and math.prod(attr.sparse_tensor.dims) > SMALL_TENSOR):
                    clear_payload(attr.sparse_tensor.values)
                    clear_payload(attr.sparse_tensor.indices)


# ----------------------------------------------------------------------------------------
# Expected values (zoo.json), from the onnx protobuf only.
# ----------------------------------------------------------------------------------------

def value_shapes(graph: onnx.GraphProto) -> Dict[str, List]:
    """Name -> shape (ints, or strings for symbolic dims) of every typed tensor in the graph."""
    shapes = {init.name: list(init.dims) for init in graph.initializer}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        dims = vi.type.tensor_type.shape.dim
        shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else d.dim_param
                           for d in dims]
    return shapes


def io_list(values, initializer_names) -> List[dict]:
    out = []
    for vi in values:
        if vi.name in initializer_names:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in tt.shape.dim]
        out.append({"name": vi.name, "dtype": TensorProto.DataType.Name(tt.elem_type),
                    "shape": shape})
    return out


def flops_record(graph: onnx.GraphProto, node_name: str) -> dict:
    """Shapes, attributes and the hand-formula FLOPs of one Conv, MatMul or Gemm node."""
    node = next((n for n in graph.node if n.name == node_name), None)
    if node is None:
        raise KeyError(f"no node named {node_name!r}")
    shapes = value_shapes(graph)
    weights = {init.name for init in graph.initializer}
    ins = [shapes[name] for name in node.input]
    out = shapes[node.output[0]]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Conv":
        (n, c_in), (c_out, c_per_group, *kernel) = ins[0][:2], ins[1]
        attrs = {"group": attrs.get("group", 1),
                 "kernel_shape": attrs.get("kernel_shape", kernel),
                 "strides": attrs.get("strides", [1] * len(kernel)),
                 "pads": attrs.get("pads", [0] * 2 * len(kernel)),
                 "dilations": attrs.get("dilations", [1] * len(kernel))}
        assert c_per_group == c_in // attrs["group"] and out[:2] == [n, c_out]
        flops = 2 * n * c_out * math.prod(out[2:]) * (c_in // attrs["group"]) * math.prod(kernel)
    elif node.op_type == "MatMul":
        (m, k), (k2, n) = ins[0][-2:], ins[1][-2:]
        assert k == k2 and out[-2:] == [m, n]
        flops = 2 * math.prod(out[:-2]) * m * k * n
    elif node.op_type == "Gemm":
        attrs = {"alpha": attrs.get("alpha", 1.0), "beta": attrs.get("beta", 1.0),
                 "transA": attrs.get("transA", 0), "transB": attrs.get("transB", 0)}
        m, k = ins[0][::-1] if attrs["transA"] else ins[0]
        k2, n = ins[1][::-1] if attrs["transB"] else ins[1]
        assert k == k2 and out == [m, n]
        flops = 2 * m * k * n
    else:
        raise ValueError(f"{node_name}: no FLOPs formula for {node.op_type}")
    weight = [shapes[name] for name in node.input[:2] if name in weights]
    return {"node": node_name, "op_type": node.op_type, "inputs": ins,
            "weight": weight[0] if weight else None, "attributes": attrs, "output": out,
            "flops": flops}


def describe(model: onnx.ModelProto) -> dict:
    """A model's zoo.json entry except torch_params, flops_check and note: all of it can be
    recomputed from the ONNX file alone, weightless or full."""
    graph = model.graph
    counts = onnx_facts.count(model)
    init_names = {init.name for init in graph.initializer}
    histogram = collections.Counter(node.op_type for node in graph.node)
    return {
        **{k: counts[k] for k in ("ops", "ops_total", "params", "param_bytes", "initializers",
                                  "constants")},
        "inputs": io_list(graph.input, init_names),
        "outputs": io_list(graph.output, init_names),
        "opset": next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
        "ir_version": model.ir_version,
        "op_histogram": dict(sorted(histogram.items())),
    }


def write_zoo(path: Path, doc: dict):
    """Writes a zoo.json document indented for review, with innermost lists (shapes,
    attribute values) on one line."""
    text = re.sub(r"\[[^\[\]{}\"]*\]", lambda m: re.sub(r"\s+", " ", m.group())
                  .replace("[ ", "[").replace(" ]", "]"), json.dumps(doc, indent=1))
    path.write_text(text + "\n")
