#!/usr/bin/env bash
# make report-shots: the four screenshots of docs/report.md, from the headless browser the
# browser test uses (Debian's chromium, `make deps`): placer runs four of the README's
# examples with --json (about half a minute: compare runs moirai), `placer report` draws each,
# and chromium takes each page at 900 px wide, a height per page that holds its charts.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
command -v chromium >/dev/null || { echo "report-shots: chromium is missing: run make deps" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/placer-shots-XXXXXX")
trap 'rm -rf "$work"' EXIT
export PLACER_CALIBRATION=off # the same figures on every machine (the uncalibrated cost model)
p="$build/placer"
# name | height in px | the verb's arguments (README examples)
shots=(
  "place|1800|place models/inception_v3.onnx --cluster examples/clusters/moirai-intra-server.json"
  "compare|900|compare models/inception_v3.onnx --cluster examples/clusters/moirai-intra-server.json"
  "deploy|1250|deploy models/inception_v3.onnx --catalog catalogs/autodeep-testbed.json --slo 6ms"
  "serverless|1200|serverless models/bert_base.onnx --platform examples/platforms/aws-lambda.json"
)
for s in "${shots[@]}"; do
  IFS='|' read -r name height args <<<"$s"
  # shellcheck disable=SC2086 # the arguments are words
  "$p" $args --json >"$work/$name.json" 2>/dev/null || [ $? = 1 ] # 1: a plan that does not fit is drawn too
  (cd "$work" && "$OLDPWD/$p" report "$name.json" -o "$name.html" --title "placer $name")
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$work/profile" --window-size="900,$height" \
    --screenshot="$work/$name.png" "file://$work/$name.html" >/dev/null 2>&1
  size=$(stat -c %s "$work/$name.png")
  [ "$size" -lt 200000 ] || { echo "report-shots: $name.png is $size bytes, over 200 kB" >&2; exit 1; }
  mv "$work/$name.png" "docs/report-$name.png"
  echo "docs/report-$name.png  $size bytes"
done
