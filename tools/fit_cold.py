#!/usr/bin/python3
"""fit_cold.py: the cold figures of a cluster file (host_cold_tau_s, host_cold_read_Bps,
host_cold_time_share, host_cold_keep_bytes) fitted to models timed after idle waits (docs/simulator.md, "Cold
requests"; docs/calibrate.md, "Cold requests").

Each IDLE.json is what `/usr/bin/python3 tools/measure_cpu.py --idle MODEL [--busy] --json`
wrote: the model as one stage on cpu0, its requests back to back and after the device thread
idled 10, 48 and 150 ms; all with a neighbour busy on cpu1 (--busy: the regime of a round,
docs/calibrate.md) or all without. The fit asks placer for the same: MODEL placed on CLUSTER (its default plan),
then `placer simulate --idle GAP` for every gap, under figures written into a copy of CLUSTER
(on every device that gives host_mem_bandwidth_Bps). The extra a wait adds is nearly linear
in 1/rate and in the time share at a given tau (the fixed point of the round moves it a
little), so for each tau and keep on two grids it simulates two bases, solves the least squares
of the extras relative to each model's back-to-back time for (1/rate, share) >= 0, then
simulates the best figures for the table it prints. A keep (the most of a tenant's kept
bytes the caches hold) is given only where it fits better than none. Prints the figures to put in the cluster file
and, per model and gap, the measured and predicted extra; with -o OUT, also writes CLUSTER
with the figures on those devices to OUT (a temporary file, then renamed).

With --check it fits nothing: it prices the waits under the figures CLUSTER already gives
(those of its first device that has them) and prints the same error and table, so figures
fitted on some models can be judged on others.

    /usr/bin/python3 tools/fit_cold.py [--placer build/placer] --cluster C [-o OUT | --check]
                                       IDLE.json...
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

TAUS_MS = [10, 15, 20, 25, 30, 35, 40, 50, 60, 80, 120]
KEEPS_MIB = [None, 8, 16, 32, 48, 64, 96, 128, 192, 256]  # None: the caches hold all a tenant keeps
BASE_BPS = 10e9  # the rate of the first basis (share 0)
BASE_SHARE = 0.5  # the share of the second basis (kept bytes at a rate that costs nothing)
FREE_BPS = 1e14  # the cluster loader's largest rate
KEYS = ("host_cold_tau_s", "host_cold_read_Bps", "host_cold_time_share", "host_cold_keep_bytes")


def run(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"fit_cold.py: cannot run {cmd[0]}: {e.strerror} (give --placer PATH)")
    if r.returncode:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
        sys.exit(f"fit_cold.py: {' '.join(cmd)}: {last}")
    return r.stdout


def load_idle(path):
    """(model path, back-to-back ms, {gap ms: median ms}, the neighbour busy meanwhile or None)
    from measure_cpu.py --idle [--busy] --json."""
    try:
        with open(path) as f:
            r = json.load(f)["idle"]
        ms = {float(g): statistics.median(v) for g, v in r["ms"].items()}
        return r["model"], ms.pop(0.0), ms, r.get("neighbour")
    except (OSError, ValueError, KeyError, TypeError, statistics.StatisticsError) as e:
        sys.exit(f"fit_cold.py: {path}: not the JSON of measure_cpu.py --idle MODEL --json ({e})")


class Fitter:
    def __init__(self, placer, cluster, tmp):
        self.placer, self.tmp = placer, tmp
        try:
            with open(cluster) as f:
                self.cluster = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"fit_cold.py: {cluster}: not a readable cluster file ({e})")
        if not isinstance(self.cluster, dict) or not isinstance(self.cluster.get("devices"), list):
            sys.exit(f"fit_cold.py: {cluster}: no \"devices\" list: not a placer-cluster/1 file")
        self.base = os.path.join(tmp, "base.json")
        self.write(self.base, None)
        self.plans = {}

    def given(self):
        """The cold figures of the cluster's first device that has them, or None."""
        for d in self.cluster["devices"]:
            if isinstance(d, dict) and any(k in d for k in KEYS):
                return {k: d[k] for k in KEYS if k in d}
        return None

    def write(self, path, figures):
        c = json.loads(json.dumps(self.cluster))
        for d in c.get("devices", []):
            for k in KEYS:
                d.pop(k, None)
            if figures and "host_mem_bandwidth_Bps" in d:
                d.update(figures)
        d, base = os.path.split(path)
        tmp = os.path.join(d, f".{base}.tmp.{os.getpid()}")  # hidden, as placer's own (pl_out)
        try:
            with open(tmp, "w") as f:
                json.dump(c, f, indent=1)
                f.write("\n")
            os.replace(tmp, path)
        except BaseException:  # a full disk or ^C: nothing half-written is left behind
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def plan(self, model):
        """The model's default plan, without the cluster's identity, so any copy takes it."""
        if model not in self.plans:
            path = os.path.join(self.tmp, f"plan{len(self.plans)}.json")
            run([self.placer, "place", model, "--cluster", self.base, "-o", path])
            with open(path) as f:
                p = json.load(f)
            p.pop("cluster", None)
            with open(path, "w") as f:
                json.dump(p, f)
            self.plans[model] = path
        return self.plans[model]

    def extras(self, figures, model, gaps):
        """Predicted ms each gap adds to the model's request under the figures."""
        path = os.path.join(self.tmp, "cold.json")
        self.write(path, figures)
        def sim(gap):
            cmd = [self.placer, "simulate", model, "--cluster", path, "--plan", self.plan(model),
                   "--json"] + (["--idle", f"{gap}ms"] if gap else [])
            return json.loads(run(cmd))["makespan_s"] * 1e3
        b = sim(0)
        return [sim(g) - b for g in gaps]


def figures(tau_ms, rate_Bps, share, keep_mib=None):
    f = {"host_cold_tau_s": f"{tau_ms:g} ms", "host_cold_read_Bps": f"{rate_Bps / 1e9:.3g} GB/s",
         "host_cold_time_share": round(share, 3)}
    if keep_mib:
        f["host_cold_keep_bytes"] = f"{keep_mib:g} MiB"
    return f


def solve(rows):
    """Least squares of y ~ a*x1 + b*x2 over rows (x1, x2, y) with a, b >= 0."""
    s11 = sum(r[0] * r[0] for r in rows); s22 = sum(r[1] * r[1] for r in rows)
    s12 = sum(r[0] * r[1] for r in rows)
    s1y = sum(r[0] * r[2] for r in rows); s2y = sum(r[1] * r[2] for r in rows)
    det = s11 * s22 - s12 * s12
    a = (s1y * s22 - s2y * s12) / det if det > 0 else -1
    b = (s2y * s11 - s1y * s12) / det if det > 0 else -1
    if a < 0 or b < 0:
        a1, b2 = max(0, s1y / s11) if s11 else 0, max(0, s2y / s22) if s22 else 0
        l1 = sum((r[2] - a1 * r[0]) ** 2 for r in rows)
        l2 = sum((r[2] - b2 * r[1]) ** 2 for r in rows)
        a, b = (a1, 0) if l1 <= l2 else (0, b2)
    return a, b, sum((r[2] - a * r[0] - b * r[1]) ** 2 for r in rows)


def fit_figures(fit, data):
    """(mean squared error, figures) of the best tau and keep on the grids, or None if no wait
    cost anything. A keep is taken only where it fits strictly better than the caches holding
    everything (the first of the grid)."""
    best = None
    tty = sys.stderr.isatty()  # progress on a terminal only: the fit takes a minute or two
    for i, keep in enumerate(KEEPS_MIB):
        if tty:
            print(f"\rfit_cold.py: keep {keep or 'none'} ({i + 1} of {len(KEEPS_MIB)})",
                  end="", file=sys.stderr, flush=True)
        for tau in TAUS_MS:
            rows = []
            for model, own, ms in data:
                gaps = sorted(ms)
                x1 = fit.extras(figures(tau, BASE_BPS, 0, keep), model, gaps)
                x2 = fit.extras(figures(tau, FREE_BPS, BASE_SHARE, keep), model, gaps)
                rows += [(u / own, v / own, (ms[g] - own) / own) for u, v, g in zip(x1, x2, gaps)]
            k, s, loss = solve(rows)
            if (k > 0 or s > 0) and (best is None or loss < best[0]):  # k = 0: bytes cost nothing
                best = (loss, figures(tau, BASE_BPS / k if k > 0 else FREE_BPS, s * BASE_SHARE,
                                      keep))
    if tty:
        print("\r\033[K", end="", file=sys.stderr, flush=True)
    return best


def table(fit, fig, data):
    """Per model and gap, measured and predicted extra; the rms error relative to each model."""
    lines, sq = [], []
    for model, own, ms in data:
        gaps = sorted(ms)
        for g, p in zip(gaps, fit.extras(fig, model, gaps)):
            lines.append(f"{os.path.basename(model):28s} {g:6g} {ms[g] - own:12.2f} {p:13.2f}")
            sq.append(((ms[g] - own - p) / own) ** 2)
    return 100 * math.sqrt(sum(sq) / len(sq)), lines


def busy_words(neighbour):
    return f"with a neighbour busy on cpu1 ({neighbour})" if neighbour else "on an idle machine"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--placer", default="build/placer")
    ap.add_argument("--cluster", required=True)
    ap.add_argument("-o", dest="out", metavar="OUT")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("idle", nargs="+", metavar="IDLE.json")
    a = ap.parse_args()
    if a.check and a.out:
        sys.exit("fit_cold.py: --check fits nothing, so it writes nothing: -o OUT goes without it")
    data = [load_idle(p) for p in a.idle]
    regime = data[0][3]
    for p, d in zip(a.idle, data):
        if d[3] != regime:  # figures fitted across both would price neither
            sys.exit(f"fit_cold.py: {p} was measured {busy_words(d[3])}, {a.idle[0]} "
                     f"{busy_words(regime)}: give measurements of one kind (all with --busy or "
                     "none)")
    data = [d[:3] for d in data]
    with tempfile.TemporaryDirectory(prefix="fit_cold.") as tmp:
        fit = Fitter(a.placer, a.cluster, tmp)
        if a.check:
            fig = fit.given()
            if not fig:
                sys.exit(f"fit_cold.py: {a.cluster}: no device gives cold figures to check")
            what = f"checked the figures of {a.cluster} on {len(data)} models"
        else:
            best = fit_figures(fit, data)
            if best is None:
                sys.exit("fit_cold.py: no wait made any model slower: nothing to fit (no cold figures)")
            fig, what = best[1], f"fitted on {len(data)} models"
        what += f" measured {busy_words(regime)}"
        rms, lines = table(fit, fig, data)
        print(f"{what}: rms error {rms:.1f} % of a request (extra predicted against measured, "
              "over each back-to-back time)")
        print(json.dumps(fig))
        print(f"\n{'model':28s} {'gap ms':>6s} {'measured +ms':>12s} {'predicted +ms':>13s}")
        print("\n".join(lines))
        if a.out:
            try:
                fit.write(a.out, fig)
            except OSError as e:
                sys.exit(f"fit_cold.py: {a.out}: cannot write ({e.strerror})")
            print(f"\nwritten {a.out}: {a.cluster} with these figures")


if __name__ == "__main__":
    main()
