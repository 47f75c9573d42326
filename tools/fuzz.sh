#!/usr/bin/env bash
# make fuzz: builds every fuzz target with libFuzzer + ASan + UBSan and fuzzes each for
# FUZZ_SECONDS (default 300). `make fuzz-build` (or FUZZ_SECONDS=0) only builds them; CI does
# that so that a target that no longer compiles or links is caught.
#
# Targets: fuzz/fuzz_readers.c twice (fuzz_onnx and fuzz_json: the ONNX and task-graph
# readers) and every other fuzz/fuzz_NAME.c as fuzz_NAME, each linked against the whole library
# built once with the fuzzer's instrumentation (through the Makefile, so that include paths and
# libraries such as CBC's come from one place: LDLIBS is passed in by make). Seeds: the zoo,
# small libonnx-testdata models, example task graphs, the shipped catalogues and platforms, the
# published GPU timings. Crashing inputs
# are copied to tests/data/crashers/, where `make test` replays them.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${LDLIBS:?tools/fuzz.sh: run it through make fuzz or make fuzz-build (LDLIBS comes from the Makefile)}"
secs=${FUZZ_SECONDS:-300}
out=build-fuzz
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
make --no-print-directory -j2 BUILD="$out" CC=clang OPT=-O1 \
  SAN="-fsanitize=fuzzer-no-link $san" "$out/libplacer.a" >/dev/null
flags="-std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer $san -Iinclude -I$out/gen -I/usr/include/coin"
link() { # target source [defines...]
  local target=$1 src=$2; shift 2
  # shellcheck disable=SC2086 # LDLIBS is a list of words
  clang $flags "$@" "$src" "$out/libplacer.a" $LDLIBS -o "$out/$target"
  targets+=("$target")
}
targets=()
link fuzz_onnx fuzz/fuzz_readers.c -DREADER_JSON=0
link fuzz_json fuzz/fuzz_readers.c -DREADER_JSON=1
for src in fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  [ "$name" = fuzz_readers ] || link "$name" "$src"
done
echo "fuzz: built ${targets[*]} in $out/" >&2
[ "$secs" -gt 0 ] || exit 0

# Seeds: a target fuzz_NAME reads $out/corpus-NAME.
mkdir -p "$out/crashes"
for t in "${targets[@]}"; do mkdir -p "$out/corpus-${t#fuzz_}"; done
cp models/*.onnx "$out/corpus-onnx/" 2>/dev/null || true
# (process substitution, not a pipe: head closing early must not fail the script under pipefail)
mapfile -t seeds < <(find /usr/share/libonnx-testdata/data/node -name model.onnx -size -4k 2>/dev/null | sort | head -300)
for f in "${seeds[@]}"; do cp "$f" "$out/corpus-onnx/$(echo "$f" | md5sum | cut -c1-12).onnx"; done
cp examples/taskgraphs/*.json "$out/corpus-json/" 2>/dev/null || true
[ -d "$out/corpus-catalog" ] && cp catalogs/*.json "$out/corpus-catalog/" 2>/dev/null || true
[ -d "$out/corpus-platform" ] && cp examples/platforms/*.json "$out/corpus-platform/" 2>/dev/null || true
# the whole file is beyond -max_len: seed a few figures of it
[ -d "$out/corpus-published" ] && /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
d["figures"]=d["figures"][:4]+d["figures"][-3:]; json.dump(d,open(sys.argv[2],"w"))' \
  bench/gpu-published.json "$out/corpus-published/seed.json" 2>/dev/null || true
for t in "${targets[@]}"; do
  r=${t#fuzz_}
  echo "fuzz: $r for ${secs}s" >&2
  ASAN_OPTIONS=detect_leaks=1 "$out/$t" -max_total_time="$secs" -max_len=65536 \
    -rss_limit_mb=2048 -artifact_prefix="$out/crashes/$r-" -print_final_stats=1 \
    "$out/corpus-$r" 2>&1 | grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss|SUMMARY|==)" || true
done
n=$(ls "$out/crashes" | wc -l)
for f in "$out"/crashes/*; do
  [ -e "$f" ] || continue
  case "$(basename "$f")" in
    onnx-*) ext=onnx ;; catalog-*) ext=catalog.json ;; platform-*) ext=platform.json ;;
    published-*) ext=published.json ;; *) ext=json ;;
  esac
  cp "$f" "tests/data/crashers/$(sha1sum "$f" | cut -c1-12).$ext"
done
echo "fuzz: $n crashing inputs (copied to tests/data/crashers/)"
