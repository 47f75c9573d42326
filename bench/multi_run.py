#!/usr/bin/python3
"""multi_run.py: `placer multi --run` on sets of models sharing this machine's two cores,
predicted completion against measured, and how much of the error each model carries alone
(docs/multi.md, "Fidelity of --run").

For each set, RUNS rounds. A round runs the set's answer for real (`placer multi SET --run`,
10 timed requests after 2) and then each of its models alone on one core (`--algo single`,
the same). A row is a tenant: its predicted completion, the median measured over the rounds
with their range, the error (predicted / measured - 1) of the median and of each round; then
the same model alone, predicted and measured in the same rounds; and the error the co-run adds
to the model's own: (predicted / measured together) / (predicted / measured alone) - 1. The
first error is what a user sees; the last is the part the simulator's interleaving and shared
memory answer for, the rest being the cost model's error on the model's own ops, which moves
with the hour on this VM (docs/multi.md).

    /usr/bin/python3 bench/multi_run.py BUILD CLUSTER RUNS SET...    (a SET: a.onnx,b.onnx)
"""
import json
import os
import statistics
import subprocess
import sys


def multi(build, cluster, models, extra):
    cmd = [f"{build}/placer", "multi", *models, "--cluster", cluster, "--run", "--repeat", "10",
           "--json", *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        raise RuntimeError(f"{' '.join(cmd)}: {last}")
    doc = json.loads(r.stdout)
    row = doc["algorithms"][doc["answer"]["index"]]
    pred = {m["name"]: m["completion_s"] for m in row["models"]}
    return doc, pred, doc["measured"]["completion_s"]


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def err(p, m):
    return 100 * (p / m - 1)


def run_set(build, cluster, runs, models):
    together, alone, solo_pred = [], {}, {}
    for _ in range(runs):
        doc, pred, meas = multi(build, cluster, models, [])
        together.append(meas)
        for path in dict.fromkeys(models):
            _, p, m = multi(build, cluster, [path], ["--algo", "single"])
            solo_pred[stem(path)] = p[stem(path)]
            alone.setdefault(stem(path), []).append(m[stem(path)])
    a = doc["answer"]
    print(f"{' + '.join(stem(m) for m in models)}: {a['algo']} ({a.get('found_by', '')}), "
          f"{doc['measured']['stages']} stages")
    for t, p in pred.items():
        m = [r[t] for r in together]
        base = t.split("#")[0]
        s, sm = solo_pred[base], statistics.median(alone[base])
        med = statistics.median(m)
        print(f"  {t:20s} {p * 1e3:9.2f} {med * 1e3:9.2f} ({min(m) * 1e3:.2f}-{max(m) * 1e3:.2f})"
              f" {err(p, med):+6.1f}%  [{', '.join(f'{err(p, x):+.0f}' for x in m)}]"
              f"   alone {s * 1e3:8.2f} {sm * 1e3:8.2f} {err(s, sm):+6.1f}%"
              f"   co-run {100 * ((p / med) / (s / sm) - 1):+6.1f}%", flush=True)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    build, cluster, runs, sets = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    print(f"{'':22s} {'pred. ms':>9s} {'measured ms (range)':>21s} {'error':>7s}  [each round]"
          f"   {'alone: pred.':>12s} {'meas.':>8s} {'error':>7s}   co-run error")
    for s in sets:
        try:
            run_set(build, cluster, runs, s.split(","))
        except RuntimeError as e:
            print(f"{s}: failed: {e}", flush=True)


if __name__ == "__main__":
    main()
