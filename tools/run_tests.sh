#!/usr/bin/env bash
# Runs every test binary in BUILD/tests (from the repo root) and prints one closing line,
# "N passed, N failed", summing cmocka's per-binary counts. Exit status 1 on any failure.
set -u
build=${1:-build}
cd "$(dirname "$0")/.."
export PLACER_BIN="$build/placer"
# the inflated-model cache of the verbs the tests run: the build tree's, not the user's
export PLACER_CACHE="${PLACER_CACHE:-$PWD/build/ort-cache}"
# no test measures this machine by accident (docs/calibrate.md, "Calibrated by default"):
# test_autocal turns it back on where it tests it
export PLACER_CALIBRATION=off
passed=0; failed=0; broken=()
for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out"
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  # a crash or sanitizer abort prints no FAILED line: count the binary as one failure
  if [ $rc -ne 0 ] && [ -z "$f" ]; then failed=$((failed + 1)); broken+=("$t (exit $rc)"); fi
done
for b in "${broken[@]+"${broken[@]}"}"; do echo "crashed: $b"; done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
