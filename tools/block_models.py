#!/usr/bin/python3
"""Writes five small weightless ONNX blocks on which TASO's merges have something to merge, for
the substitution bench (bench_optimize; docs/rewrite.md, "Bench").

  attn_d64, attn_d256, attn_d768: a transformer encoder layer (self-attention with separate Q, K
      and V projections that read the same input, each a MatMul and a bias Add, as exporters
      write them; softmax attention over heads; output projection; a ReLU FFN of 4 x d;
      residual Adds), d = 64 (4 heads, 32 tokens), 256 (8 heads, 64 tokens) and 768 (12
      heads, 128 tokens: bert_base's layer);
  incep_c64, incep_c256: an Inception-like block, three 1x1 Convs of C/2 output channels
      reading the same C x H x W input, each with a bias and a ReLU, concatenated: C = 64 on
      28 x 28, C = 256 on 14 x 14.

Weights carry dims and dtype only (no payload), like the zoo; the bench inflates them.

usage: /usr/bin/python3 tools/block_models.py OUT_DIR
"""
import os
import sys

from onnx import TensorProto, helper
import onnx

from synth_model import const_i64, weight  # the same weightless initializers as the synthetic model


def attention_block(d, heads, seq):
    nodes, inits = [], []
    n = lambda op, ins, out, **kw: nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
    dh = d // heads
    inits += [const_i64("split_heads", [1, seq, heads, dh]), const_i64("join_heads", [1, seq, d])]
    inits.append(helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / dh**0.5]))
    for p in "qkv":
        inits += [weight(f"W{p}", [d, d]), weight(f"b{p}", [d])]
        n("MatMul", ["x", f"W{p}"], f"{p}_mm")
        n("Add", [f"{p}_mm", f"b{p}"], f"{p}_lin")
        n("Reshape", [f"{p}_lin", "split_heads"], f"{p}_4d")
        n("Transpose", [f"{p}_4d"], f"{p}_h", perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])
    n("MatMul", ["q_h", "k_h"], "scores")
    n("Mul", ["scores", "scale"], "scaled")
    n("Softmax", ["scaled"], "probs", axis=-1)
    n("MatMul", ["probs", "v_h"], "ctx_h")
    n("Transpose", ["ctx_h"], "ctx_t", perm=[0, 2, 1, 3])
    n("Reshape", ["ctx_t", "join_heads"], "ctx")
    inits += [weight("Wo", [d, d]), weight("bo", [d])]
    n("MatMul", ["ctx", "Wo"], "o_mm")
    n("Add", ["o_mm", "bo"], "o_lin")
    n("Add", ["x", "o_lin"], "res1")
    inits += [weight("W1", [d, 4 * d]), weight("b1", [4 * d]), weight("W2", [4 * d, d]),
              weight("b2", [d])]
    n("MatMul", ["res1", "W1"], "f1_mm")
    n("Add", ["f1_mm", "b1"], "f1")
    n("Relu", ["f1"], "f1_relu")
    n("MatMul", ["f1_relu", "W2"], "f2_mm")
    n("Add", ["f2_mm", "b2"], "f2")
    n("Add", ["res1", "f2"], "y")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, d])
    return helper.make_graph(nodes, f"attn_d{d}", [x], [y], inits)


def inception_block(c, hw):
    nodes, inits = [], []
    outs = []
    for b in range(3):
        inits += [weight(f"W{b}", [c // 2, c, 1, 1]), weight(f"B{b}", [c // 2])]
        nodes.append(helper.make_node("Conv", ["x", f"W{b}", f"B{b}"], [f"c{b}"], name=f"conv{b}",
                                      kernel_shape=[1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{b}"], [f"r{b}"], name=f"relu{b}"))
        outs.append(f"r{b}")
    nodes.append(helper.make_node("Concat", outs, ["y"], name="concat", axis=1))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3 * (c // 2), hw, hw])
    return helper.make_graph(nodes, f"incep_c{c}", [x], [y], inits)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    graphs = [attention_block(64, 4, 32), attention_block(256, 8, 64),
              attention_block(768, 12, 128), inception_block(64, 28), inception_block(256, 14)]
    for g in graphs:
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="placer")
        m.ir_version = 8
        onnx.save(m, os.path.join(out, g.name + ".onnx"))


if __name__ == "__main__":
    main()
