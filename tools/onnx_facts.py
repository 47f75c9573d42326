#!/usr/bin/python3
"""Independent oracle for placer's ONNX reader: counts what a model holds, with the `onnx`
Python package rather than placer's C code, and prints JSON.

Definitions (placer's, see docs/graph.md):
  ops        nodes of the main graph
  ops_total  nodes including every nested subgraph (If/Loop/Scan bodies), recursively
  subgraphs  number of nested graphs
  params     elements of every initializer and every Constant node's value, in all graphs
  param_bytes  the same, times the element size of its dtype
  initializers, constants  how many initializers and Constant nodes hold them

usage: /usr/bin/python3 tools/onnx_facts.py MODEL.onnx [MODEL.onnx ...]
"""
import json
import sys

import numpy as np
import onnx
from onnx import TensorProto

SIZES = {TensorProto.FLOAT: 4, TensorProto.UINT8: 1, TensorProto.INT8: 1, TensorProto.UINT16: 2,
         TensorProto.INT16: 2, TensorProto.INT32: 4, TensorProto.INT64: 8, TensorProto.BOOL: 1,
         TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8, TensorProto.UINT32: 4, TensorProto.UINT64: 8,
         TensorProto.COMPLEX64: 8, TensorProto.COMPLEX128: 16, TensorProto.BFLOAT16: 2}


def tensor_count(dims, dtype):
    n = int(np.prod(dims)) if len(dims) else 1
    return n, n * SIZES.get(dtype, 0)


def constant_value(node):
    """(elements, bytes) held by a Constant node."""
    for a in node.attribute:
        if a.name == "value":
            return tensor_count(a.t.dims, a.t.data_type)
        if a.name == "sparse_value":
            return tensor_count(a.sparse_tensor.dims, a.sparse_tensor.values.data_type)
        if a.name == "value_float":
            return 1, 4
        if a.name == "value_int":
            return 1, 8
        if a.name == "value_floats":
            return len(a.floats), 4 * len(a.floats)
        if a.name == "value_ints":
            return len(a.ints), 8 * len(a.ints)
        if a.name in ("value_string", "value_strings"):
            return (1 if a.name == "value_string" else len(a.strings)), 0
    return 0, 0


def walk(graph, acc):
    acc["ops_total"] += len(graph.node)
    for t in graph.initializer:
        n, b = tensor_count(t.dims, t.data_type)
        acc["params"] += n
        acc["param_bytes"] += b
        acc["initializers"] += 1
    for t in graph.sparse_initializer:
        n, b = tensor_count(t.dims, t.values.data_type)
        acc["params"] += n
        acc["param_bytes"] += b
        acc["initializers"] += 1
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
            n, b = constant_value(node)
            acc["params"] += n
            acc["param_bytes"] += b
            acc["constants"] += 1
        for a in node.attribute:
            subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)
            for sub in subs:
                acc["subgraphs"] += 1
                walk(sub, acc)


def count(model):
    """The counts above for a loaded ModelProto (the export script records them too)."""
    acc = {"ops": len(model.graph.node), "ops_total": 0, "subgraphs": 0, "params": 0,
           "param_bytes": 0, "initializers": 0, "constants": 0}
    walk(model.graph, acc)
    return acc


def facts(path):
    return count(onnx.load(path, load_external_data=False))


if __name__ == "__main__":
    out = {p: facts(p) for p in sys.argv[1:]}
    print(json.dumps(out if len(out) != 1 else next(iter(out.values()))))
