# Applied by the Makefile to the protobuf-c code generated from onnx.proto: its functions and
# descriptors get the library's prefix (onnx__model_proto__unpack -> pl_onnx__model_proto__unpack),
# since only pl_ symbols leave libplacer (README, "What the library exports"). A prerequisite of
# the generated files, so that a build tree generated before the rename is regenerated.
s/\bonnx__/pl_onnx__/g
