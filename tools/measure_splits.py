#!/usr/bin/python3
"""measure_splits.py: what a stage of a real split costs on this CPU, beyond what the
micro-benchmarks of tools/measure_cpu.py charge (docs/simulator.md, "Stages").

For each model: HEFT's plan on examples/clusters/local-cpu-percore.json with the finest cuts
(`--fine-cuts`) and the single-device plan, each split by the schedule (`placer split --cut
schedule`) and run one stage after the other on one thread (`placer run --sequential --plan`,
graph optimisation on, 10 requests), alternately, `--trials` times. The split's excess over the
whole model, less what the simulator already charges beyond stage_overhead_s (the sum of
`placer run`'s per-stage predictions, which hold every stage charge: tensors, their bytes,
weight copies read cold, fusions lost at the cuts), divided by the extra stages, is what each
stage costs beyond them: the session run itself and whatever no term models.
stage_overhead_s is set to the median over the models.

Usage (from the repository root, after `make`; the other core idle):

    /usr/bin/python3 tools/measure_splits.py [--trials T] [--json] [--cluster FILE] MODEL...

--cluster names the file whose figures the predictions use (default
examples/clusters/local-cpu-percore.json): the file that describes this CPU.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "examples", "clusters", "local-cpu-percore.json")
# every run: 15 timed requests after 3 (the first requests of a split of 150+ stages run 20-40 %
# slower)
REQUESTS = ("--warmup", "3", "--repeat", "15")
UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "GB/s": 1e9, "MB/s": 1e6}


def placer(*args):
    """build/placer with args, with this machine's calibration as every verb uses it (the
    predictions are then a user's); its stdout."""
    r = subprocess.run([os.path.join(ROOT, "build", "placer"), *args], capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"placer {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def split_of(d, model, algo, tag):
    """`model` placed by `algo` (finest cuts) and split by the schedule into d/tag; the split's
    folder and the plan."""
    plan, out = os.path.join(d, f"{tag}.plan.json"), os.path.join(d, tag)
    placer("place", model, "--cluster", CLUSTER, "--algo", algo, "-o", plan, "--fine-cuts")
    placer("split", model, "--cluster", CLUSTER, "--plan", plan, "--cut", "schedule", "-o", out)
    return out, plan


def stage_io(split):
    """Stages, tensors taken in or given out, and their bytes, from a split's manifest."""
    m = json.load(open(os.path.join(split, "manifest.json")))
    ends = sum(len(s["inputs"]) + len(s["outputs"]) for s in m["stages"])
    nbytes = sum(x["bytes"] for s in m["stages"] for x in s["inputs"] + s["outputs"])
    return len(m["stages"]), ends, nbytes


def device_figure(dev, field):
    if field not in dev:
        return 0.0
    num, unit = dev[field].split()
    return float(num) * UNITS[unit]


def measure(models, trials):
    dev = json.load(open(CLUSTER))["devices"][0]
    copy_bps, tensor_s = device_figure(dev, "stage_copy_Bps"), device_figure(dev, "stage_tensor_s")
    overhead_s = device_figure(dev, "stage_overhead_s")
    d = tempfile.mkdtemp(prefix="placer-splits-")
    out = {"trials": trials, "models": {}}
    try:
        for model in models:
            (fine, fplan), (whole, wplan) = (split_of(d, model, "heft", "fine"),
                                             split_of(d, model, "single", "whole"))
            (n, ends, nbytes), (n1, ends1, nbytes1) = stage_io(fine), stage_io(whole)
            if n <= n1:
                continue
            runs, pred, both = {fine: [], whole: []}, {}, []
            for _ in range(trials):
                for split, plan in ((fine, fplan), (whole, wplan)):
                    r = json.loads(placer("run", split, "--sequential", *REQUESTS, "--json",
                                          "--plan", plan, "--cluster", CLUSTER))
                    runs[split].append(r["latency_median_s"])
                    pred[split] = sum(x["predicted_s"] for x in r["stages"])
                both.append(json.loads(placer("run", fine, *REQUESTS, "--json"))["latency_median_s"])
            split_s, whole_s = statistics.median(runs[fine]), statistics.median(runs[whole])
            speedup = whole_s / statistics.median(both)
            # everything the simulator charges the split beyond the whole model, but the
            # overhead per stage; of it, the tensors and their bytes, and the rest (weight
            # copies read cold, fusions lost at the cuts)
            charged = pred[fine] - pred[whole] - (n - n1) * overhead_s
            io_s = ((nbytes - nbytes1) / copy_bps if copy_bps else 0) + (ends - ends1) * tensor_s
            out["models"][os.path.basename(model)] = {
                "stages": n, "split_ms": split_s * 1e3, "whole_ms": whole_s * 1e3,
                "charged_ms": charged * 1e3, "other_ms": (charged - io_s) * 1e3,
                "per_stage_us": (split_s - whole_s - charged) / (n - n1) * 1e6,
                "extra_stages": n - n1, "extra_bytes": nbytes - nbytes1,
                "extra_tensors": ends - ends1,
                "excess_ms": (split_s - whole_s - (charged - io_s)) * 1e3,
                "two_cores_ms": statistics.median(both) * 1e3, "speedup": speedup,
                "matching_us": matching_overhead(d, model, fplan, wplan, speedup) * 1e6}
    finally:
        shutil.rmtree(d, ignore_errors=True)
    per = [m["per_stage_us"] for m in out["models"].values()]
    out["median_per_stage_us"] = statistics.median(per) if per else None
    match = [m["matching_us"] for m in out["models"].values()]
    out["median_matching_us"] = statistics.median(match) if match else None
    out["fit"] = fit(out["models"].values(), tensor_s)
    return out


def simulated(d, model, plan, overhead_s):
    """The simulator's makespan of `plan` with every device's stage_overhead_s set to
    overhead_s (the plan's copy names no cluster digest, so another cluster file takes it)."""
    c = json.load(open(CLUSTER))
    for dev in c["devices"]:
        dev["stage_overhead_s"] = f"{overhead_s * 1e6:.3f} us"
    cpath, ppath = os.path.join(d, "cluster.json"), os.path.join(d, "plan.json")
    json.dump(c, open(cpath, "w"))
    p = json.load(open(plan))
    p["cluster"].pop("sha256", None)
    json.dump(p, open(ppath, "w"))
    return json.loads(placer("simulate", model, "--cluster", cpath, "--plan", ppath,
                             "--json"))["makespan_s"]


def matching_overhead(d, model, fplan, wplan, speedup):
    """The stage_overhead_s at which the simulator predicts the two-core speed-up measured for
    the split of fplan over the whole model (bisection in [0, 2 ms]; 0 when even no overhead
    predicts less, 2 ms when even that predicts more)."""
    whole = simulated(d, model, wplan, 0)  # one stage: it pays the overhead once
    lo, hi = 0.0, 2e-3
    for _ in range(14):
        mid = (lo + hi) / 2
        s = (whole + mid) / simulated(d, model, fplan, mid)
        lo, hi = (mid, hi) if s > speedup else (lo, mid)
    return (lo + hi) / 2


def fit(models, tensor_s):
    """Least squares over the models of excess (less the charges other than the stage's own and
    its tensors') - tensors x stage_tensor_s = stages x a + bytes / B: the fixed part of a stage
    (a) and the copy rate (B) that real splits show."""
    rows = [(m["extra_stages"], m["extra_bytes"], m["excess_ms"] / 1e3 - m["extra_tensors"] *
             tensor_s) for m in models]
    if len(rows) < 2:
        return None
    s11 = sum(a * a for a, _, _ in rows)
    s12 = sum(a * b for a, b, _ in rows)
    s22 = sum(b * b for _, b, _ in rows)
    y1 = sum(a * y for a, _, y in rows)
    y2 = sum(b * y for _, b, y in rows)
    det = s11 * s22 - s12 * s12
    if det == 0:
        return None
    a, inv_b = (y1 * s22 - y2 * s12) / det, (s11 * y2 - s12 * y1) / det
    return {"stage_us": a * 1e6, "copy_gbps": 1 / inv_b / 1e9 if inv_b > 0 else None,
            "residual_ms": [(y - a * n - inv_b * b) * 1e3 for n, b, y in rows]}


def main():
    global CLUSTER
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--cluster", default=CLUSTER)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    CLUSTER = a.cluster
    r = measure(a.models, a.trials)
    if a.json:
        print(json.dumps(r, indent=1))
        return
    for m, x in r["models"].items():
        print(f"{m:28s} {x['stages']:4d} stages: split {x['split_ms']:8.2f} ms, whole "
              f"{x['whole_ms']:8.2f} ms, charged beyond the overhead {x['charged_ms']:7.2f} ms (not "
              f"for tensors {x['other_ms']:6.2f}): "
              f"{x['per_stage_us']:7.1f} us per extra stage")
    f = r["fit"]
    if f:
        rate = f"{f['copy_gbps']:.1f} GB/s" if f["copy_gbps"] else "no positive rate"
        print(f"=> least squares over the models, the tensors at stage_tensor_s: "
              f"{f['stage_us']:.1f} us per stage and bytes in and out at {rate} (residuals "
              f"{', '.join(f'{x:+.1f}' for x in f['residual_ms'])} ms)")
    for m, x in r["models"].items():
        print(f"{m:28s} two cores: {x['two_cores_ms']:8.2f} ms, speed-up {x['speedup']:.3f}: "
              f"predicted alike with stage_overhead_s {x['matching_us']:7.1f} us")
    if r["median_matching_us"] is not None:
        print(f"=> median {r['median_matching_us']:.1f} us per stage for the two-core speed-ups "
              f"(stage_overhead_s, the concurrent way)")
    if r["median_per_stage_us"] is not None:
        print(f"=> median {r['median_per_stage_us']:.1f} us per stage beyond the other charges "
              f"(stage_overhead_s)")


if __name__ == "__main__":
    main()
