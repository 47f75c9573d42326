#!/usr/bin/python3
"""multi_run.py: `placer multi --run --alone` on sets of models sharing this machine's two
cores: predicted completion against measured, and how much of the error each model carries by
itself (docs/multi.md, "Fidelity of --run").

For each set, RUNS rounds of `placer multi SET --run --alone --json` (10 timed requests after
2): the answer's plan run with every model at once, then each model's share of the same plan
run by itself (same devices, same order, each request after the wait the round left it). A row
is a tenant: its predicted completion, the
median measured over the rounds with their range, the error (predicted / measured - 1) of the
median and of each round; then the same share alone, predicted and measured (median over the
rounds), and the error the co-run adds to the model's own: (predicted / measured together) /
(predicted / measured alone) - 1 on the medians. The first error is what a user sees; the last
is the part the simulator's interleaving and shared memory answer for, the rest being the
model's own error on this VM at the hour (docs/multi.md).

    /usr/bin/python3 bench/multi_run.py BUILD CLUSTER RUNS SET...    (a SET: a.onnx,b.onnx)
"""
import json
import statistics
import subprocess
import sys


def multi(build, cluster, models):
    """One round: (the answer's row, the "measured" object with its "alone")."""
    cmd = [f"{build}/placer", "multi", *models, "--cluster", cluster, "--run", "--repeat", "10",
           "--alone", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        raise RuntimeError(f"{' '.join(cmd)}: {last}")
    doc = json.loads(r.stdout)
    return doc, doc["measured"]


def err(p, m):
    return 100 * (p / m - 1)


def run_set(build, cluster, runs, models):
    rounds = [multi(build, cluster, models) for _ in range(runs)]
    doc = rounds[0][0]
    row = doc["algorithms"][doc["answer"]["index"]]
    print(f"{' + '.join(m['name'] for m in row['models'])}: {doc['answer']['algo']} "
          f"({doc['answer'].get('found_by', '')}), {rounds[0][1]['stages']} stages")
    for m in row["models"]:
        t, p = m["name"], m["completion_s"]
        q = [r[1]["completion_s"][t] for r in rounds]
        ap = rounds[0][1]["alone"][t]["predicted_s"]
        aq = statistics.median(r[1]["alone"][t]["measured_s"] for r in rounds)
        wait = statistics.median(r[1]["alone"][t].get("wait_s", 0) for r in rounds)
        med = statistics.median(q)
        print(f"  {t:20s} {p * 1e3:9.2f} {med * 1e3:9.2f} ({min(q) * 1e3:.2f}-{max(q) * 1e3:.2f})"
              f" {err(p, med):+6.1f}%  [{', '.join(f'{err(p, x):+.0f}' for x in q)}]"
              f"   alone (wait {wait * 1e3:6.1f}) {ap * 1e3:8.2f} {aq * 1e3:8.2f} {err(ap, aq):+6.1f}%"
              f"   co-run {100 * ((p / med) / (ap / aq) - 1):+6.1f}%", flush=True)


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
