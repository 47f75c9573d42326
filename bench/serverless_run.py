#!/usr/bin/python3
"""serverless_run.py: MOPAR's plans run for real (`placer serverless --run`), beside the
prediction (docs/serverless.md, "Running the slices for real").

For each model: MOPAR's plan on examples/platforms/openfaas.json (its vCPU is this machine's
core), then on aws-lambda.json (an assumed vCPU; the run is on this machine's cores, so its
times are this machine's, billed at Lambda's prices), with 2 % of latency slack and cut tensors through the store (the run passes them through
a local Redis server, so plan and run agree on the transport), 5 timed requests after 2; one
row of predicted and measured latency, bill and peak memory.

    /usr/bin/python3 bench/serverless_run.py BUILD MODEL...
"""
import json
import subprocess
import sys


def row(build, platform, model):
    cmd = [f"{build}/placer", "serverless", model, "--platform",
           f"examples/platforms/{platform}.json", "--latency-slack", "0.02", "--algo", "mopar", "--run",
           "--repeat", "5", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    name = f"{platform} {model.rsplit('/', 1)[-1]}"
    if r.returncode:
        return f"{name:35s} failed: {r.stderr.strip().splitlines()[-1] if r.stderr else r.returncode}"
    doc = json.loads(r.stdout)
    plan = next(a for a in doc["algorithms"] if a["algo"] == "mopar")  # --run ran it (--algo)
    run = doc["run"]
    over = max(f["peak_rss_bytes"] / 2**20 / s["memory_mb"]
               for f, s in zip(run["functions"], plan["slices"]))
    return (f"{name:35s} {len(plan['slices']):6d} {plan['latency_s'] * 1e3:12.2f} "
            f"{run['latency_median_s'] * 1e3:12.2f} "
            f"{100 * (plan['latency_s'] / run['latency_median_s'] - 1):+7.1f}% "
            f"{plan['usd_per_request']:12.4g} {run['usd_per_request']:12.4g} "
            f"{100 * (plan['usd_per_request'] / run['usd_per_request'] - 1):+7.1f}% {over:10.2f}")


def main():
    build, models = sys.argv[1], sys.argv[2:]
    print(f"{'platform, model':35s} {'slices':>6s} {'predicted ms':>12s} {'measured ms':>12s} {'error':>8s} "
          f"{'USD pred.':>12s} {'USD meas.':>12s} {'error':>8s} {'RSS/memory':>10s}")
    for platform in ("openfaas", "aws-lambda"):
        for m in models:
            print(row(build, platform, m), flush=True)


if __name__ == "__main__":
    main()
