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

With --refit MODEL,... the host's figures are measured afresh first, as docs/calibrate.md says
they must be (they drift with the VM's other guests): `placer calibrate --machine --cluster
CLUSTER`, then `tools/measure_cpu.py --idle --busy` on each MODEL (a neighbour busy on cpu1
meanwhile, as in a round) and `tools/fit_cold.py -o` into a temporary copy of CLUSTER, which
the sets are then predicted with (about 30 s a model, 1-2 minutes for the fit). It first waits
(at most ten minutes) for the 5-minute load average to fall below 0.6: a calibration taken
right after minutes of load priced the runs that followed up to 60 % over.
--refit-idle MODEL,... does the same with the models timed on an otherwise idle machine (the
figures before 2026-11-30; docs/calibrate.md, "Cold requests", says why they price rounds cold).

    /usr/bin/python3 bench/multi_run.py [--refit|--refit-idle MODEL,...] BUILD CLUSTER RUNS SET...
                                                                    (a SET: a.onnx,b.onnx)
"""
import os
import tempfile
import json
import statistics
import subprocess
import sys
import time


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


def step(cmd, out=None):
    """Runs cmd (its stdout to the file out), or says which step failed and stops."""
    with open(out or os.devnull, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        sys.exit(f"multi_run.py: {' '.join(cmd)}: {last}")


QUIET_LOAD = 0.6  # the 5-minute load average a machine that has rested for minutes shows here
QUIET_WAIT_S = 600


def wait_quiet():
    """Waits (at most QUIET_WAIT_S) until the 5-minute load average is below QUIET_LOAD: right
    after minutes of both cores busy the Xeon VM calibrated 9 % slower than five idle minutes
    later, and the runs that followed ran at the rested speed (docs/calibrate.md, "Passes").
    Returns what it says of the wait."""
    t0, slept = time.monotonic(), False
    load = os.getloadavg()[1]
    tty = sys.stderr.isatty()  # progress only on a terminal; the result line says the wait
    while load >= QUIET_LOAD and time.monotonic() - t0 < QUIET_WAIT_S:
        if tty:
            print(f"\rrefit: waiting for a quiet machine: 5-minute load {load:.2f}", end="",
                  file=sys.stderr, flush=True)
        time.sleep(10)
        load, slept = os.getloadavg()[1], True
    waited = time.monotonic() - t0
    if slept and tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    if load >= QUIET_LOAD:
        return (f"5-minute load still {load:.2f} after {waited / 60:.0f} minutes: the "
                "calibration may be slower than the runs")
    return f"5-minute load {load:.2f}" + (f" after {waited:.0f} s waiting" if slept else "")


def refit(build, cluster, models, tmp, busy):
    """The cluster file with cold figures fitted now, after a fresh calibration; the models
    timed with a neighbour busy on cpu1 if `busy`."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"refit: placer calibrate --machine, then {len(models)} models timed after waits"
          + (", a neighbour busy on cpu1" if busy else ", the machine otherwise idle"),
          flush=True)
    print(f"refit: {wait_quiet()}", flush=True)
    cal = os.path.join(tmp, "calibration.json")
    step([f"{build}/placer", "calibrate", "--machine", "--cluster", cluster, "--json"], cal)
    with open(cal) as f:
        c = json.load(f)
    eff = c.get("eff_compute", {})
    print(f"refit: calibrated: dense {eff.get('dense', 0):.3f}, memory {c.get('eff_memory', 0):.3f}"
          f", {c.get('passes', 1)} passes within {100 * c.get('pass_spread', 0):.1f} %"
          f" ({c.get('written', '')})", flush=True)
    idle = []
    for i, m in enumerate(models):
        idle.append(os.path.join(tmp, f"idle{i}.json"))
        step(["/usr/bin/python3", os.path.join(root, "tools", "measure_cpu.py"), "--idle", m,
              "--trials", "3", "--json"] + ["--busy"] * busy, idle[-1])
    out = os.path.join(tmp, "cluster.json")
    fit = os.path.join(tmp, "fit.txt")
    step(["/usr/bin/python3", os.path.join(root, "tools", "fit_cold.py"), "--placer",
          f"{build}/placer", "--cluster", cluster, "-o", out] + idle, fit)
    with open(fit) as f:
        lines = f.read().splitlines()
    print("\n".join(f"refit: {x}" for x in lines if x.strip()), flush=True)
    return out


def main():
    args = sys.argv[1:]
    fresh, busy = None, True
    if args[:1] in (["--refit"], ["--refit-idle"]) and len(args) > 1:
        fresh, busy, args = args[1].split(","), args[0] == "--refit", args[2:]
    if len(args) < 4:
        sys.exit(__doc__)
    build, cluster, runs, sets = args[0], args[1], int(args[2]), args[3:]
    with tempfile.TemporaryDirectory(prefix="multi_run.") as tmp:
        if fresh:
            cluster = refit(build, cluster, fresh, tmp, busy)
        run_sets(build, cluster, runs, sets)


def run_sets(build, cluster, runs, sets):
    print(f"{'':22s} {'pred. ms':>9s} {'measured ms (range)':>21s} {'error':>7s}  [each round]"
          f"   {'alone: pred.':>12s} {'meas.':>8s} {'error':>7s}   co-run error")
    for s in sets:
        try:
            run_set(build, cluster, runs, s.split(","))
        except RuntimeError as e:
            print(f"{s}: failed: {e}", flush=True)


if __name__ == "__main__":
    main()
