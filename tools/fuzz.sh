#!/usr/bin/env bash
# make fuzz: builds the readers with libFuzzer + ASan + UBSan and fuzzes each for
# FUZZ_SECONDS (default 300). Seeds: the zoo, small libonnx-testdata models, example task
# graphs, the shipped catalogues (the catalog target, fuzz/fuzz_catalog.c). Crashing inputs
# are copied to tests/data/crashers/, where `make test` replays them.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-300}
out=build-fuzz
make --no-print-directory build/gen/onnx/onnx.pb-c.c >/dev/null
mkdir -p "$out"
flags="-std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude -Ibuild/gen"
srcs=$(ls src/*/*.c)
for reader in onnx json; do
  clang $flags -DREADER_JSON=$([ $reader = json ] && echo 1 || echo 0) fuzz/fuzz_readers.c $srcs \
    build/gen/onnx/onnx.pb-c.c -lprotobuf-c -ljansson -lcrypto -lm -o "$out/fuzz_$reader"
done
# the catalogue reader needs only its own modules
clang $flags fuzz/fuzz_catalog.c $(ls src/{catalog,cluster,json,common}/*.c) -ljansson -lcrypto \
  -lm -o "$out/fuzz_catalog"
mkdir -p "$out/corpus-onnx" "$out/corpus-json" "$out/corpus-catalog" "$out/crashes"
cp models/*.onnx "$out/corpus-onnx/" 2>/dev/null || true
# (process substitution, not a pipe: head closing early must not fail the script under pipefail)
mapfile -t seeds < <(find /usr/share/libonnx-testdata/data/node -name model.onnx -size -4k 2>/dev/null | sort | head -300)
for f in "${seeds[@]}"; do cp "$f" "$out/corpus-onnx/$(echo "$f" | md5sum | cut -c1-12).onnx"; done
cp examples/taskgraphs/*.json "$out/corpus-json/" 2>/dev/null || true
cp catalogs/*.json "$out/corpus-catalog/" 2>/dev/null || true
for reader in onnx json catalog; do
  echo "fuzz: $reader reader for ${secs}s" >&2
  ASAN_OPTIONS=detect_leaks=1 "$out/fuzz_$reader" -max_total_time="$secs" -max_len=65536 \
    -rss_limit_mb=2048 -artifact_prefix="$out/crashes/$reader-" -print_final_stats=1 \
    "$out/corpus-$reader" 2>&1 | grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss|SUMMARY|==)" || true
done
n=$(ls "$out/crashes" | wc -l)
for f in "$out"/crashes/*; do
  [ -e "$f" ] || continue
  case "$(basename "$f")" in onnx-*) ext=onnx ;; catalog-*) ext=catalog.json ;; *) ext=json ;; esac
  cp "$f" "tests/data/crashers/$(sha1sum "$f" | cut -c1-12).$ext"
done
echo "fuzz: $n crashing inputs (copied to tests/data/crashers/)"
