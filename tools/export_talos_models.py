#!/usr/bin/python3
"""Export the Talos paper's CNNs that the zoo lacks as weightless ONNX files: AlexNet,
SqueezeNet 1.0 and 1.1 and GoogLeNet, to models/talos/ with their expected values in
models/talos/zoo.json (the same fields as models/zoo.json).

torch is not needed: each model is written node by node with onnx.helper, layer for layer as
torchvision defines it and as torch.onnx.export (opset 14, eval mode, constant folding) writes
it: Dropout gone, each BatchNorm folded into its Conv as a bias, an adaptive average pool to
1x1 as GlobalAveragePool and AlexNet's to 6x6 (on a 6x6 input) as a 1x1 AveragePool, the
classifier's Linear as Gemm (transB=1). Node names follow torch's scopes
("/features/features.0/Conv"). Initializers carry dims and dtype only (models/README.md,
"Weightless"). torch's parameter count is worked out from the layers (a Conv's weight and
bias, a BatchNorm's scale and shift) and checked against torchvision's published count.

Run with Debian's interpreter: /usr/bin/python3 tools/export_talos_models.py (part of
`make models`; `make talos-models` alone). Output is deterministic.
"""

import argparse
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zoo_facts import DEFINITION, OPSET, describe, flops_record, write_zoo  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

BN_NOTE = ("Below torch_params: eval-mode export folds each BatchNorm into the preceding "
           "Conv, so the BN scale and shift (2*C parameters) become a C-element Conv bias.")


class Net:
    """A graph under construction: nodes, weightless initializers, torch's parameter count,
    and the current activation's channel count."""

    def __init__(self):
        self.nodes, self.inits, self.torch_params = [], [], 0

    def weight(self, name, dims):
        t = TensorProto()
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(dims)
        self.inits.append(t)
        return name

    def node(self, op, scope, ins, **attrs):
        name = f"{scope}/{op}"
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def conv(self, x, scope, c_in, c_out, k, stride=1, pad=0, bn=False):
        """torch's Conv2d (with bias unless a BatchNorm follows, which export folds in)."""
        w = self.weight(f"{scope}.weight", [c_out, c_in, k, k])
        b = self.weight(f"{scope}.bias", [c_out])
        self.torch_params += c_out * c_in * k * k + (2 * c_out if bn else c_out)
        return self.node("Conv", scope, [x, w, b], dilations=[1, 1], group=1,
                         kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride])

    def relu(self, x, scope):
        return self.node("Relu", scope, [x])

    def maxpool(self, x, scope, k, stride, pad=0, ceil=False):
        return self.node("MaxPool", scope, [x], ceil_mode=int(ceil), kernel_shape=[k, k],
                         pads=[pad] * 4, strides=[stride, stride])

    def gemm(self, x, scope, n_in, n_out):
        w = self.weight(f"{scope}.weight", [n_out, n_in])
        b = self.weight(f"{scope}.bias", [n_out])
        self.torch_params += n_out * n_in + n_out
        return self.node("Gemm", scope, [x, w, b], alpha=1.0, beta=1.0, transB=1)

    def model(self, name):
        """The graph as a model, its last node's output named "logits" as the zoo's CNNs
        name theirs, with every tensor's shape inferred (value_info)."""
        self.nodes[-1].output[0] = "logits"
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 224, 224])],
            [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="placer tools/export_talos_models.py")
        m.ir_version = 7
        return onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)


def alexnet():
    """torchvision.models.alexnet: 61,100,840 parameters."""
    n = Net()
    x = "image"
    convs = [(0, 3, 64, 11, 4, 2), (3, 64, 192, 5, 1, 2), (6, 192, 384, 3, 1, 1),
             (8, 384, 256, 3, 1, 1), (10, 256, 256, 3, 1, 1)]
    for i, c_in, c_out, k, s, p in convs:
        x = n.conv(x, f"/features/features.{i}", c_in, c_out, k, s, p)
        x = n.relu(x, f"/features/features.{i + 1}")
        if i in (0, 3, 10):
            x = n.maxpool(x, f"/features/features.{i + 2}", 3, 2)
    x = n.node("AveragePool", "/avgpool", [x], ceil_mode=0, kernel_shape=[1, 1],
               pads=[0, 0, 0, 0], strides=[1, 1])
    x = n.node("Flatten", "", [x], axis=1)
    x = n.gemm(x, "/classifier/classifier.1", 256 * 6 * 6, 4096)
    x = n.relu(x, "/classifier/classifier.2")
    x = n.gemm(x, "/classifier/classifier.4", 4096, 4096)
    x = n.relu(x, "/classifier/classifier.5")
    n.gemm(x, "/classifier/classifier.6", 4096, 1000)
    return n


def fire(n, x, scope, c_in, squeeze, e1, e3):
    s = n.relu(n.conv(x, f"{scope}/squeeze", c_in, squeeze, 1), f"{scope}/squeeze_activation")
    a = n.relu(n.conv(s, f"{scope}/expand1x1", squeeze, e1, 1), f"{scope}/expand1x1_activation")
    b = n.relu(n.conv(s, f"{scope}/expand3x3", squeeze, e3, 3, 1, 1),
               f"{scope}/expand3x3_activation")
    return n.node("Concat", scope, [a, b], axis=1), e1 + e3


def squeezenet(version):
    """torchvision.models.squeezenet1_0 (1,248,424 parameters) and squeezenet1_1
    (1,235,496): Fire modules (a 1x1 squeeze, then 1x1 and 3x3 expands concatenated)."""
    n = Net()
    F = lambda s, e: (s, e, e)  # noqa: E731  (squeeze, expand1x1, expand3x3)
    if version == "1_0":
        x, c = n.conv("image", "/features/features.0", 3, 96, 7, 2), 96
        layers = ["pool", F(16, 64), F(16, 64), F(32, 128), "pool", F(32, 128), F(48, 192),
                  F(48, 192), F(64, 256), "pool", F(64, 256)]
    else:
        x, c = n.conv("image", "/features/features.0", 3, 64, 3, 2), 64
        layers = ["pool", F(16, 64), F(16, 64), "pool", F(32, 128), F(32, 128), "pool",
                  F(48, 192), F(48, 192), F(64, 256), F(64, 256)]
    x = n.relu(x, "/features/features.1")
    for i, layer in enumerate(layers, start=2):
        scope = f"/features/features.{i}"
        if layer == "pool":
            x = n.maxpool(x, scope, 3, 2, ceil=True)
        else:
            x, c = fire(n, x, scope, c, *layer)
    x = n.relu(n.conv(x, "/classifier/classifier.1", c, 1000, 1), "/classifier/classifier.2")
    x = n.node("GlobalAveragePool", "/classifier/classifier.3", [x])
    n.node("Flatten", "", [x], axis=1)
    return n


def basic_conv(n, x, scope, c_in, c_out, k, stride=1, pad=0):
    """GoogLeNet's BasicConv2d: Conv (no bias) + BatchNorm (eps 0.001) + ReLU."""
    return n.relu(n.conv(x, f"{scope}/conv", c_in, c_out, k, stride, pad, bn=True), scope)


def inception(n, x, scope, c_in, c1, c3r, c3, c5r, c5, pool):
    """torchvision's Inception block; its "5x5" branch is a 3x3 conv, as torchvision has it."""
    b1 = basic_conv(n, x, f"{scope}/branch1", c_in, c1, 1)
    b2 = basic_conv(n, x, f"{scope}/branch2/branch2.0", c_in, c3r, 1)
    b2 = basic_conv(n, b2, f"{scope}/branch2/branch2.1", c3r, c3, 3, 1, 1)
    b3 = basic_conv(n, x, f"{scope}/branch3/branch3.0", c_in, c5r, 1)
    b3 = basic_conv(n, b3, f"{scope}/branch3/branch3.1", c5r, c5, 3, 1, 1)
    b4 = n.maxpool(x, f"{scope}/branch4/branch4.0", 3, 1, 1, ceil=True)
    b4 = basic_conv(n, b4, f"{scope}/branch4/branch4.1", c_in, pool, 1)
    return n.node("Concat", scope, [b1, b2, b3, b4], axis=1)


def googlenet():
    """torchvision.models.googlenet without the auxiliary classifiers (eval mode, which does
    not run them; transform_input off): 6,624,904 parameters."""
    n = Net()
    x = basic_conv(n, "image", "/conv1", 3, 64, 7, 2, 3)
    x = n.maxpool(x, "/maxpool1", 3, 2, ceil=True)
    x = basic_conv(n, x, "/conv2", 64, 64, 1)
    x = basic_conv(n, x, "/conv3", 64, 192, 3, 1, 1)
    x = n.maxpool(x, "/maxpool2", 3, 2, ceil=True)
    blocks = [("3a", 192, 64, 96, 128, 16, 32, 32), ("3b", 256, 128, 128, 192, 32, 96, 64),
              ("pool3", 3), ("4a", 480, 192, 96, 208, 16, 48, 64),
              ("4b", 512, 160, 112, 224, 24, 64, 64), ("4c", 512, 128, 128, 256, 24, 64, 64),
              ("4d", 512, 112, 144, 288, 32, 64, 64), ("4e", 528, 256, 160, 320, 32, 128, 128),
              ("pool4", 2), ("5a", 832, 256, 160, 320, 32, 128, 128),
              ("5b", 832, 384, 192, 384, 48, 128, 128)]
    for b in blocks:
        if b[0].startswith("pool"):
            x = n.maxpool(x, f"/max{b[0][:4]}{b[0][4]}", b[1], 2, ceil=True)
        else:
            x = inception(n, x, f"/inception{b[0]}", *b[1:])
    x = n.node("GlobalAveragePool", "/avgpool", [x])
    x = n.node("Flatten", "", [x], axis=1)
    n.gemm(x, "/fc", 1024, 1000)
    return n


MODELS = {
    # name: (builder, torchvision's parameter count, nodes whose FLOPs zoo.json records, note)
    "alexnet": (alexnet, 61100840, ["/features/features.0/Conv", "/classifier/classifier.1/Gemm"],
                ""),
    "squeezenet1_0": (lambda: squeezenet("1_0"), 1248424,
                      ["/features/features.0/Conv", "/features/features.12/expand3x3/Conv"], ""),
    "squeezenet1_1": (lambda: squeezenet("1_1"), 1235496,
                      ["/features/features.0/Conv", "/features/features.12/expand3x3/Conv"], ""),
    "googlenet": (googlenet, 6624904,
                  ["/conv1/conv/Conv", "/inception4e/branch2/branch2.1/conv/Conv", "/fc/Gemm"],
                  BN_NOTE),
}


def build_one(name: str, out_dir: Path) -> dict:
    build, published, flops_nodes, note = MODELS[name]
    net = build()
    if net.torch_params != published:
        raise RuntimeError(f"{name}: {net.torch_params} parameters, torchvision has {published}")
    model = net.model(name)
    entry = describe(model)
    entry["torch_params"] = net.torch_params
    entry["flops_check"] = [flops_record(model.graph, node) for node in flops_nodes]
    if note:
        entry["note"] = note
    path = out_dir / f"{name}.onnx"
    onnx.save(model, str(path))
    if describe(onnx.load(str(path))) != describe(model):
        raise RuntimeError(f"{name}: the file does not read back as written")
    print(f"{name:16s} ops {entry['ops']:5d}  params {entry['params']:>11,}  "
          f"{path.stat().st_size / 1024:10.1f} KiB")
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "models" / "talos",
                    help="output directory (default: models/talos/ in the repository)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    zoo = {name: build_one(name, args.out) for name in MODELS}
    doc = {"definition": DEFINITION,
           "generator": {"script": "tools/export_talos_models.py", "onnx": onnx.__version__,
                         "opset": OPSET},
           "models": zoo}
    write_zoo(args.out / "zoo.json", doc)


if __name__ == "__main__":
    main()
