#!/usr/bin/env bash
# bench_dist_search.sh BUILD: placer's searches under mpirun (docs/dist.md, "Benchmark"): the wall
# time of `compare` on every zoo model (one cluster, default algorithms, a short time limit for
# the time-limited ones) and of `train` on one model, with 1 and 2 ranks of BUILD/placer-mpi;
# the speed-up, and whether the 2-rank answers are the 1-rank ones. Skipped, saying so, without
# MPI. About 2 minutes on this machine; its 2 cores are shared, so the times are noisy.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mpi="$build/placer-mpi"
if ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$mpi" ]; then
  echo "skipped: no mpirun or no $mpi (MPI is optional: docs/dist.md)"
  exit 0
fi
export PLACER_CALIBRATION=${PLACER_CALIBRATION:-off}
cluster=examples/clusters/autodeep-4xk80.json
limit=${PLACER_DIST_LIMIT:-2s}
iters=${PLACER_DIST_ITERATIONS:-30}
out=$(mktemp -d /tmp/placer-bench-dist-XXXXXX)
[ -n "${PLACER_DIST_KEEP:-}" ] || trap 'rm -rf "$out"' EXIT

# run NP NAME ARGS...: BUILD/placer-mpi under mpirun -np NP, stdout to $out/NAME.json and
# stderr (moirai's notes) to $out/NAME.err; prints the wall time in seconds
run() {
  local np=$1 name=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  mpirun -np "$np" --oversubscribe --allow-run-as-root "$mpi" "$@" >"$out/$name.json" 2>"$out/$name.err" ||
    { echo "bench_dist_search: $name failed:" >&2; cat "$out/$name.err" >&2; exit 1; }
  [ -s "$out/$name.json" ] ||
    { echo "bench_dist_search: $name printed nothing:" >&2; cat "$out/$name.err" >&2; exit 1; }
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.2f", $2 - $1}'
}

# compare NP: every zoo model in turn; prints the total wall time
compare_all() {
  local np=$1 total=0 m t
  for m in models/*.onnx; do
    t=$(run "$np" "compare-$np-$(basename "$m" .onnx)" compare "$m" --cluster "$cluster" \
      --time-limit "$limit" --seed 1 --json)
    total=$(echo "$total $t" | awk '{printf "%.2f", $1 + $2}')
  done
  echo "$total"
}

c1=$(compare_all 1)
c2=$(compare_all 2)
t1=$(run 1 train-1 train models/resnet50.onnx --cluster examples/clusters/tag-testbed.json \
  --batch 96 --budget "$iters" --seed 1 --json)
t2=$(run 2 train-2 train models/resnet50.onnx --cluster examples/clusters/tag-testbed.json \
  --batch 96 --budget "$iters" --seed 1 --json)

/usr/bin/python3 - "$out" "$c1" "$c2" "$t1" "$t2" <<'EOF'
import glob, json, os, sys
out, c1, c2, t1, t2 = sys.argv[1], *map(float, sys.argv[2:])
# compare: per model and algorithm, the 2-rank makespan against the 1-rank one
same = rows = 0
differ = set()
for f1 in sorted(glob.glob(os.path.join(out, "compare-1-*.json"))):
    f2 = f1.replace("compare-1-", "compare-2-")
    a1 = json.load(open(f1))["algorithms"]
    a2 = {r["algorithm"]: r for r in json.load(open(f2))["algorithms"]}
    for r in a1:
        rows += 1
        if a2.get(r["algorithm"], {}).get("makespan_s") == r.get("makespan_s"):
            same += 1
        else:
            differ.add(r["algorithm"])
d1, d2 = (json.load(open(os.path.join(out, f"train-{n}.json"))) for n in (1, 2))
s1, s2 = (json.dumps(d["strategy"], sort_keys=True) for d in (d1, d2))
note = "all rows the same" if same == rows else \
    f"{same} of {rows} rows the same (differ: {', '.join(sorted(differ))})"
print("| run | 1 rank s | 2 ranks s | speed-up | answers |")
print("|---|---:|---:|---:|---|")
print(f"| compare, {len(glob.glob(os.path.join(out, 'compare-1-*.json')))} zoo models | "
      f"{c1:.1f} | {c2:.1f} | {c1 / c2:.2f}x | {note} |")
tr = "the same strategy" if s1 == s2 else "another strategy"
print(f"| train resnet50 | {t1:.1f} | {t2:.1f} | {t1 / t2:.2f}x | "
      f"{d1['iteration_s'] * 1e3:.2f} vs {d2['iteration_s'] * 1e3:.2f} ms, {tr}; "
      f"MCTS alone {d1['mcts_iteration_s'] * 1e3:.2f} vs {d2['mcts_iteration_s'] * 1e3:.2f} ms |")
EOF
