#!/usr/bin/env bash
# bench_report.sh BUILD: the size of `placer report`'s page and its render time in the headless
# browser (docs/report.md, "Big plans"), for a zoo model and the 50,000-op synthetic graph, each
# placed by HEFT on 8 V100s (NVLink). The render time is chromium's wall time, best of three, to
# start, load the page, lay it out and paint it (a screenshot) and dump its DOM; the same on an
# empty page is printed under the table (the browser's own start, which dominates); timings are
# of this machine as loaded now (the load average is printed with them).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/placer-bench-report-XXXXXX")
trap 'rm -rf "$work"' EXIT
export PLACER_CALIBRATION=off
[ -f "$build/bench/synth50k.onnx" ] || /usr/bin/python3 tools/synth_model.py --ops 50000 -o "$build/bench/synth50k.onnx" >/dev/null
command -v chromium >/dev/null || { echo "bench_report: chromium is missing (make deps): sizes only" >&2; }
now() { date +%s.%N; }
render() { # seconds chromium takes for URL, its best of three
  local best=
  for _ in 1 2 3; do
    local t0 t1
    t0=$(now)
    chromium --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" \
      --window-size=1000,4000 --screenshot="$work/shot.png" --dump-dom "$1" >/dev/null 2>&1
    t1=$(now)
    best=$(echo "$t0 $t1 ${best:-1e9}" | awk '{d = $2 - $1; print d < $3 ? d : $3}')
  done
  echo "$best"
}
printf '<!DOCTYPE html><title>empty</title>' >"$work/empty.html"
base=$(command -v chromium >/dev/null && render "file://$work/empty.html" || echo nan)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (shared machine: timings are indicative)"
printf '%-28s %8s %10s %10s %12s %12s %10s\n' model ops "JSON MB" "page MB" "report s" "render s" "marks"
for m in models/inception_v3.onnx "$build/bench/synth50k.onnx"; do
  name=$(basename "$m" .onnx)
  "$build/placer" place "$m" --cluster examples/clusters/nvlink-8gpu.json --algo heft --json \
    >"$work/$name.json" 2>/dev/null
  t0=$(now)
  "$build/placer" report "$work/$name.json" -o "$work/$name.html"
  t1=$(now)
  ops=$(grep -c '"op":' "$work/$name.json" || true)
  r=nan
  if command -v chromium >/dev/null; then
    r=$(render "file://$work/$name.html" | awk '{printf "%.2f", $1}')
  fi
  printf '%-28s %8d %9.2f %9.3f %12.2f %12s %10d\n' "$name" "$ops" \
    "$(stat -c %s "$work/$name.json" | awk '{print $1 / 1e6}')" \
    "$(stat -c %s "$work/$name.html" | awk '{print $1 / 1e6}')" \
    "$(echo "$t0 $t1" | awk '{print $2 - $1}')" "$r" "$(grep -c '<rect\|<circle' "$work/$name.html")"
done
echo "(render s: chromium's start included; on an empty page it takes ${base} s. marks: <rect> and <circle> elements)"
