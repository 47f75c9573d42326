#!/usr/bin/env bash
# Runs every test binary in BUILD/tests (from the repo root), TEST_JOBS at a time (default: the
# cores, nproc), then the test_measure_* ones alone, one after the other, and prints, in this
# order: each binary's output whole (it went to a file of its own; printed in the binaries'
# name order once all have ended), the binaries that crashed, the ten slowest binaries with
# their wall times, the suite's own wall time, and one closing line,
# "N passed, N failed, N skipped", summing cmocka's per-binary counts (CI reads "N passed,
# N failed" at the start of the last line). A binary that exits non-zero without a FAILED line
# (a crash, a sanitizer abort) counts as one failure. Exit status 1 on any failure.
#
# Binaries that run at once share nothing that one of them could spoil for another: each gets
# a TMPDIR of its own (placer's temporaries, mpirun's session folder), removed after it; the
# tests' own files are mkstemp/mkdtemp names; Redis servers bind a port the kernel picks;
# test_faults mounts its own /dev/shm; the inflated-model cache (PLACER_CACHE) is shared, as
# its entries are written to a temporary and renamed into place, and the same source always
# inflates to the same bytes (src/runtime/inflate.c).
set -u
build=${1:-build}
cd "$(dirname "$0")/.."
export PLACER_BIN="$build/placer"
# the inflated-model cache of the verbs the tests run: the build tree's, not the user's
export PLACER_CACHE="${PLACER_CACHE:-$PWD/build/ort-cache}"
# no test measures this machine by accident (docs/calibrate.md, "Calibrated by default"):
# test_autocal turns it back on where it tests it
export PLACER_CALIBRATION=off
jobs=${TEST_JOBS:-$(nproc)}
case $jobs in '' | *[!0-9]* | 0*) echo "run_tests: TEST_JOBS=$jobs: not a count of 1 or more" >&2; exit 2 ;; esac
times="$build/tests/.wall-times" # the last run's seconds per binary: the slowest start first
logs=$(mktemp -d "${TMPDIR:-/tmp}/placer-tests-XXXXXX") || exit 1
# on exit (an interrupt, a TERM to this script alone) the binaries still running go too, not
# only the subshells that wait for them
trap 'kill $(jobs -p) $(cat "$logs"/*.pid 2>/dev/null) 2>/dev/null; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM
suite_t0=$EPOCHREALTIME

# One binary, its output into $logs/NAME.out, its pid in $logs/NAME.pid while it runs, then
# "EXIT_STATUS SECONDS" into $logs/NAME.rc.
run_one() {
  local t=$1 name=${1##*/} tmp t0 rc
  tmp=$(mktemp -d "$logs/$name.tmp.XXXXXX")
  t0=$EPOCHREALTIME
  # a job started with & has SIGINT and SIGQUIT ignored (bash, without job control), which the
  # binary would inherit: tests that interrupt a run (test_faults) need them as usual
  env --default-signal=INT,QUIT TMPDIR="$tmp" "$t" >"$logs/$name.out" 2>&1 &
  echo $! >"$logs/$name.pid"
  wait $!
  rc=$?
  rm -f "$logs/$name.pid"
  echo "$rc $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" \
    >"$logs/$name.rc"
  rm -rf "$tmp"
}

all=()
for t in "$build"/tests/test_*; do [ -x "$t" ] && [ -f "$t" ] && all+=("$t"); done
# longest first (by the last run's times; a binary without one counts as slow), so that a
# long binary started last does not leave the other cores idle at the end
order=$(for t in "${all[@]+"${all[@]}"}"; do
  s=$(awk -v n="${t##*/}" '$1 == n { print $2 }' "$times" 2>/dev/null)
  echo "${s:-1e9} $t"
done | sort -k1,1gr | cut -d' ' -f2-)
# test_measure_* binaries time real runs on this machine (tests/test_measure_multi_run.c):
# they start after every other binary has ended, one at a time, so that nothing shares the
# cores with what they time
measuring=()
for t in $order; do
  case ${t##*/} in test_measure_*) measuring+=("$t"); continue ;; esac
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  run_one "$t" &
done
wait
for t in "${measuring[@]+"${measuring[@]}"}"; do run_one "$t"; done

# cmocka's closing count of one kind (PASSED, FAILED, SKIPPED) in binary $name's output
count() { sed -n "s/^\[  $1 *\] \([0-9]*\) test.*/\1/p" "$logs/$name.out" | tail -1; }
passed=0; failed=0; skipped=0; broken=(); : >"$logs/times"
for t in "${all[@]+"${all[@]}"}"; do
  name=${t##*/}
  cat "$logs/$name.out"
  read -r rc secs <"$logs/$name.rc" || { rc=1; secs=0; }
  echo "$name $secs" >>"$logs/times"
  p=$(count PASSED); f=$(count FAILED); s=$(count SKIPPED)
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
  # a crash or sanitizer abort prints no FAILED line: count the binary as one failure
  if [ "$rc" -ne 0 ] && [ -z "$f" ]; then failed=$((failed + 1)); broken+=("$t (exit $rc)"); fi
done
cp "$logs/times" "$times" 2>/dev/null
for b in "${broken[@]+"${broken[@]}"}"; do echo "crashed: $b"; done
echo "slowest test binaries ($jobs at a time):"
sort -k2,2gr "$logs/times" | head -10 | awk '{ printf "  %7.1f s  %s\n", $2, $1 }'
awk -v a="$suite_t0" -v b="$EPOCHREALTIME" -v n="${#all[@]}" \
  'BEGIN { printf "suite: %d binaries in %.1f s of wall time\n", n, b - a }'
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
