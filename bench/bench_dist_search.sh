#!/usr/bin/env bash
# bench_dist_search.sh BUILD: placer's searches under mpirun (docs/dist.md, "Benchmark"): the wall
# time of `compare` on every zoo model (one cluster, default algorithms, a short time limit for
# the time-limited ones) and of `train` on one model, with 1 and 2 ranks of BUILD/placer-mpi;
# the speed-up, and whether the 2-rank answers are the 1-rank ones. Skipped, saying so, without
# MPI. About 2.5 minutes on this machine; its 2 cores are shared, so the wall times are noisy
# (the CPU seconds, summed over the ranks, say how much work was done).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mpi="$build/placer-mpi"
if ! command -v mpirun >/dev/null 2>&1 || [ ! -x "$mpi" ]; then
  echo "skipped: no mpirun or no $mpi (MPI is optional: docs/dist.md)"
  exit 0
fi
export PLACER_CALIBRATION=${PLACER_CALIBRATION:-off}
# a rank waiting in a collective yields its core instead of spinning on it: this machine's 2
# cores are shared, and a spinning rank would hold the core the other rank needs
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
cluster=examples/clusters/autodeep-4xk80.json
limit=${PLACER_DIST_LIMIT:-2s}
iters=${PLACER_DIST_ITERATIONS:-30}
out=$(mktemp -d /tmp/placer-bench-dist-XXXXXX)
[ -n "${PLACER_DIST_KEEP:-}" ] || trap 'rm -rf "$out"' EXIT

# run NP NAME ARGS...: BUILD/placer-mpi under mpirun -np NP, stdout to $out/NAME.json, stderr
# (moirai's notes) to $out/NAME.err, and "wall user sys" seconds (the ranks' CPU time summed)
# to $out/NAME.time
run() {
  local np=$1 name=$2
  shift 2
  /usr/bin/time -f "%e %U %S" -o "$out/$name.time" \
    mpirun -np "$np" --oversubscribe --allow-run-as-root "$mpi" "$@" >"$out/$name.json" \
    2>"$out/$name.err" ||
    { echo "bench_dist_search: $name failed:" >&2; cat "$out/$name.err" >&2; exit 1; }
  [ -s "$out/$name.json" ] ||
    { echo "bench_dist_search: $name printed nothing:" >&2; cat "$out/$name.err" >&2; exit 1; }
}

for np in 1 2; do
  for m in models/*.onnx; do
    run $np "compare-$np-$(basename "$m" .onnx)" compare "$m" --cluster "$cluster" \
      --time-limit "$limit" --seed 1 --json
  done
done
# train twice with each rank count: the faster run is shown (the machine is shared), and the
# two 2-rank runs must agree
for k in a b; do
  for np in 1 2; do
    run $np "train-$np$k" train models/resnet50.onnx --cluster examples/clusters/tag-testbed.json \
      --batch 96 --budget "$iters" --seed 1 --json
  done
done

/usr/bin/python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]


def times(name):  # wall, CPU (user + sys over the ranks)
    w, u, s = map(float, open(os.path.join(out, name + ".time")).read().split()[-3:])
    return w, u + s


def total(pattern):
    ts = [times(os.path.basename(f)[:-5]) for f in glob.glob(os.path.join(out, pattern))]
    return sum(t[0] for t in ts), sum(t[1] for t in ts)


# compare: per model and algorithm, the 2-rank makespan against the 1-rank one
same = rows = 0
differ = set()
models = sorted(glob.glob(os.path.join(out, "compare-1-*.json")))
for f1 in models:
    a1 = json.load(open(f1))["algorithms"]
    f2 = f1.replace("compare-1-", "compare-2-")
    a2 = {r["algorithm"]: r for r in json.load(open(f2))["algorithms"]}
    for r in a1:
        rows += 1
        if a2.get(r["algorithm"], {}).get("makespan_s") == r.get("makespan_s"):
            same += 1
        else:
            differ.add(r["algorithm"])
note = "all rows the same" if same == rows else \
    f"{same} of {rows} rows the same (differ: {', '.join(sorted(differ))})"
print("| run | 1 rank: wall s | CPU s | 2 ranks: wall s | CPU s | speed-up (wall) | answers |")
print("|---|---:|---:|---:|---:|---:|---|")
(w1, c1), (w2, c2) = total("compare-1-*.json"), total("compare-2-*.json")
print(f"| compare, {len(models)} zoo models | {w1:.1f} | {c1:.1f} | {w2:.1f} | {c2:.1f} | "
      f"{w1 / w2:.2f}x | {note} |")
doc = {n: json.load(open(os.path.join(out, f"train-{n}.json"))) for n in ("1a", "1b", "2a", "2b")}
strat = {n: json.dumps(d["strategy"], sort_keys=True) for n, d in doc.items()}
(w1, c1), (w2, c2) = (min((times(f"train-{np}{k}") for k in "ab"), key=lambda t: t[0])
                      for np in (1, 2))
d1, d2 = doc["1a"], doc["2a"]
tr = "the same strategy" if strat["1a"] == strat["2a"] else "another strategy"
again = "the same" if strat["2a"] == strat["2b"] and d2["iteration_s"] == doc["2b"]["iteration_s"] \
    else "NOT the same"
def ms(v):  # null in the JSON when nothing fits
    return "none fits" if v is None else f"{v * 1e3:.2f}"
print(f"| train resnet50 (faster of 2 runs) | {w1:.1f} | {c1:.1f} | {w2:.1f} | {c2:.1f} | "
      f"{w1 / w2:.2f}x | {ms(d1['iteration_s'])} vs {ms(d2['iteration_s'])} ms, {tr} "
      f"(MCTS alone {ms(d1['mcts_iteration_s'])} vs {ms(d2['mcts_iteration_s'])} ms); "
      f"the two 2-rank runs {again} |")
if again != "the same":  # two runs of one seed and rank count must agree (docs/dist.md)
    sys.exit("bench_dist_search: the two 2-rank train runs differ")
PY
