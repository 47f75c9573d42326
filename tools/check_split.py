#!/usr/bin/python3
"""check_split.py DIR: an independent check of `placer split` output with the onnx package:
every stage passes onnx.checker (full check, with shape inference), and every stage input is a
source graph input or an output of an earlier stage in manifest order. Exit 0 when all pass,
1 with the problems, 3 when the onnx package is missing."""
import json
import os
import sys

try:
    import onnx
except ImportError:
    print("check_split.py: the python3 'onnx' package is missing (pip install onnx)")
    sys.exit(3)


def fill_weightless(m):
    """Weightless models (models/) keep initializers without payload, which the checker refuses
    in the source model too: give them zeros so that everything else is checked."""
    import numpy as np
    from onnx import numpy_helper

    tensors = list(m.graph.initializer)
    tensors += [a.t for n in m.graph.node for a in n.attribute if a.HasField("t")]
    for t in tensors:
        has = t.raw_data or t.float_data or t.int32_data or t.int64_data or t.double_data
        has = has or t.uint64_data or t.string_data or t.data_location == onnx.TensorProto.EXTERNAL
        if not has:
            dt = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]
            t.CopyFrom(numpy_helper.from_array(np.zeros(tuple(t.dims), dtype=dt), t.name or None))


def main(d):
    man = json.load(open(os.path.join(d, "manifest.json")))
    src = onnx.load(man["model"]["path"], load_external_data=False)
    graph_inputs = {i.name for i in src.graph.input}
    made, bad = set(), []
    for st in man["stages"]:
        m = onnx.load(os.path.join(d, st["file"]), load_external_data=False)
        fill_weightless(m)
        try:
            onnx.checker.check_model(m, full_check=True)
        except Exception as e:  # the checker raises several kinds
            bad.append("%s: %s" % (st["file"], str(e).splitlines()[0]))
        inits = {i.name for i in m.graph.initializer}
        for i in m.graph.input:
            if i.name not in inits and i.name not in graph_inputs and i.name not in made:
                bad.append("%s: input %s comes from no earlier stage" % (st["file"], i.name))
        made |= {o.name for o in m.graph.output}
    for o in src.graph.output:
        if o.name not in made:
            bad.append("graph output %s comes out of no stage" % o.name)
    print("\n".join(bad) if bad else "ok: %d stages" % len(man["stages"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
