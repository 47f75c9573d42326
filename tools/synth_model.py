#!/usr/bin/python3
"""Writes a synthetic transformer-like ONNX model with about N ops, for benchmarks.

Each layer is a pre-LayerNorm block written out the way exporters decompose it (ReduceMean,
Sub, Pow, Sqrt, Div, ...), so op types, fan-out and shapes look like a real export. Weights
carry dims and dtype only (no payload): the reader must not need them.

usage: /usr/bin/python3 tools/synth_model.py --ops 50000 -o build/bench/synth50k.onnx
"""
import argparse

import onnx
from onnx import TensorProto, helper

OPS_PER_LAYER = 33


def weight(name, dims):
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(dims)
    return t


def const_i64(name, vals):
    return helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)


def layer(i, x, d, seq, heads, nodes, inits):
    p = f"l{i}_"
    n = lambda op, ins, outs, **kw: nodes.append(helper.make_node(op, ins, outs, name=p + outs[0], **kw))
    # decomposed LayerNorm
    n("ReduceMean", [x], [p + "mu"], axes=[-1])
    n("Sub", [x, p + "mu"], [p + "xc"])
    n("Pow", [p + "xc", "two"], [p + "sq"])
    n("ReduceMean", [p + "sq"], [p + "var"], axes=[-1])
    n("Add", [p + "var", "eps"], [p + "ve"])
    n("Sqrt", [p + "ve"], [p + "sd"])
    n("Div", [p + "xc", p + "sd"], [p + "xn"])
    n("Mul", [p + "xn", p + "g"], [p + "xg"])
    n("Add", [p + "xg", p + "b"], [p + "ln"])
    inits += [weight(p + "g", [d]), weight(p + "b", [d])]
    # attention
    for w in "qkv":
        n("MatMul", [p + "ln", p + "W" + w], [p + w + "0"])
        n("Reshape", [p + w + "0", "heads_shape"], [p + w + "1"])
        n("Transpose", [p + w + "1"], [p + w], perm=[0, 2, 1, 3] if w != "k" else [0, 2, 3, 1])
        inits.append(weight(p + "W" + w, [d, d]))
    n("MatMul", [p + "q", p + "k"], [p + "s"])
    n("Div", [p + "s", "scale"], [p + "ss"])
    n("Softmax", [p + "ss"], [p + "a"], axis=-1)
    n("MatMul", [p + "a", p + "v"], [p + "o"])
    n("Transpose", [p + "o"], [p + "ot"], perm=[0, 2, 1, 3])
    n("Reshape", [p + "ot", "model_shape"], [p + "om"])
    n("MatMul", [p + "om", p + "Wo"], [p + "proj"])
    n("Add", [x, p + "proj"], [p + "r1"])
    inits.append(weight(p + "Wo", [d, d]))
    # MLP
    n("MatMul", [p + "r1", p + "W1"], [p + "h"])
    n("Add", [p + "h", p + "b1"], [p + "hb"])
    n("Mul", [p + "hb", "c1702"], [p + "hs"])
    n("Sigmoid", [p + "hs"], [p + "sg"])
    n("Mul", [p + "hb", p + "sg"], [p + "gelu"])
    n("MatMul", [p + "gelu", p + "W2"], [p + "m"])
    n("Add", [p + "r1", p + "m"], [p + "out"])
    inits += [weight(p + "W1", [d, 4 * d]), weight(p + "b1", [4 * d]), weight(p + "W2", [4 * d, d])]
    return p + "out"


def build(ops, d=256, seq=128, heads=4):
    nodes, inits = [], []
    inits += [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
              helper.make_tensor("eps", TensorProto.FLOAT, [], [1e-5]),
              helper.make_tensor("scale", TensorProto.FLOAT, [], [(d // heads) ** 0.5]),
              helper.make_tensor("c1702", TensorProto.FLOAT, [], [1.702]),
              const_i64("heads_shape", [1, seq, heads, d // heads]),
              const_i64("model_shape", [1, seq, d])]
    x = "x"
    for i in range(max(1, ops // OPS_PER_LAYER)):
        x = layer(i, x, d, seq, heads, nodes, inits)
    graph = helper.make_graph(nodes, "synthetic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, d])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="placer-synth")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=50000)
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args()
    m = build(a.ops)
    onnx.save(m, a.out)
    print(f"{a.out}: {len(m.graph.node)} ops")


if __name__ == "__main__":
    main()
