#!/usr/bin/env bash
# install.sh BUILD: installs placer from the build folder BUILD under $DESTDIR$PREFIX
# (`make install PREFIX=... DESTDIR=...`; PREFIX defaults to /usr/local). The layout is the one
# the installed placer looks for next to its executable (src/runtime/files.c):
#   bin/placer                      the command
#   lib/libplacer.a, include/placer/*.h   the library and its headers
#   lib/placer/ort_worker.js        the onnxruntime worker (placer run, profile)
#   lib/placer/placer-collbench     the MPI collectives benchmark (profile --collectives), when
#                                   it was built (mpicc present)
#   lib/placer/node_modules/        onnxruntime-node (this platform's binaries only) and
#                                   onnxruntime-common
#   share/placer/catalogs/*.json    the cloud catalogues (--catalog)
#   share/placer/clusters/*.json    the example clusters (--cluster; local-cpu.json is the
#                                   default of profile, calibrate and optimize)
#   share/placer/models/*.onnx      the zoo models that measure this machine once
#                                   (docs/calibrate.md, "Calibrated by default")
#   share/placer/priors/*.weights   TAG's GNN prior (placer train --prior gnn), when trained
# Files are copied to a temporary name and renamed, so a placer running from the same prefix
# never reads half a file.
set -euo pipefail
build=${1:?usage: tools/install.sh BUILD}
prefix=${PREFIX:-/usr/local}
dest="${DESTDIR:-}$prefix"
cd "$(dirname "$0")/.."
mods=build/npm/node_modules
for f in "$build/placer" "$build/libplacer.a" "$mods/onnxruntime-node/package.json"; do
  [ -e "$f" ] || { echo "install: $f is missing: run \`make deps\` and \`make\` first" >&2; exit 2; }
done
# node names the platform whose onnxruntime binaries are kept: asked before anything is copied,
# so that a missing node leaves the prefix as it was
command -v node >/dev/null || { echo "install: node is not on PATH: run \`make deps\` first" >&2; exit 2; }
plat=$(node -p 'process.platform + "/" + process.arch')

# put MODE SRC DIR: SRC into DIR under its own name.
put() {
  local mode=$1 src=$2 dir=$3 name
  name=$(basename "$src")
  install -m "$mode" "$src" "$dir/.$name.tmp$$"
  mv -f "$dir/.$name.tmp$$" "$dir/$name"
}

install -d "$dest/bin" "$dest/lib/placer" "$dest/include/placer" \
  "$dest/share/placer/catalogs" "$dest/share/placer/clusters" "$dest/share/placer/models" \
  "$dest/share/placer/priors"
put 755 "$build/placer" "$dest/bin"
put 644 "$build/libplacer.a" "$dest/lib"
for h in include/placer/*.h; do put 644 "$h" "$dest/include/placer"; done
put 644 tools/ort_worker.js "$dest/lib/placer"
if [ -x "$build/placer-collbench" ]; then put 755 "$build/placer-collbench" "$dest/lib/placer"; fi
for c in catalogs/*.json; do put 644 "$c" "$dest/share/placer/catalogs"; done
for c in examples/clusters/*.json; do put 644 "$c" "$dest/share/placer/clusters"; done
# keep in step with machine_models in src/calib/machine.c (test_install checks each is installed)
for m in mobilenet_v3_large resnet50 transformer rnnlm nmt_seq2seq bert_base; do
  put 644 "models/$m.onnx" "$dest/share/placer/models"
done

for w in models/priors/*.weights; do
  if [ -e "$w" ]; then put 644 "$w" "$dest/share/placer/priors"; fi
done

# onnxruntime-node ships binaries for six platforms (236 MB); only this one's is installed
# (about 32 MB). It needs nothing else at run time but onnxruntime-common.
excl=()
for d in "$mods"/onnxruntime-node/bin/napi-v*/*/*; do
  case "$d" in */"$plat") ;; *) excl+=("--exclude=${d#"$mods"/}") ;; esac
done
tmp="$dest/lib/placer/.node_modules.tmp$$"
rm -rf "$tmp" && mkdir -p "$tmp"
tar -C "$mods" -cf - "${excl[@]}" onnxruntime-node onnxruntime-common | tar -C "$tmp" -xf -
rm -rf "$dest/lib/placer/node_modules"
mv "$tmp" "$dest/lib/placer/node_modules"
echo "installed placer into $dest"
