#!/usr/bin/python3
"""make bench: the published instances through the CLI (docs/benchmarks.md).

    bench/published.py BUILD BENCHMARKS_DIR

Converts MOIRAI's and MSR's instances with tools/*_to_taskgraph.py, places them with
`placer place`, and prints, per instance and algorithm, placer's simulated makespan and the
reference: MOIRAI's published figures, and for MSR the plan's latency under MSR's model
(tools/msr_to_taskgraph.py --score) beside MSR's latency greedy. Time-limited algorithms get
PLACER_MOIRAI_LIMIT seconds (default 60). Times are in each instance's own unit.
"""
import json
import os
import subprocess
import sys

MOIRAI = [("example-1", "optimum 30"), ("googlenet", "best known 1.72211"),
          ("inceptionv4", "best known 12.77844")]
MSR = [("latency-OperatorGraphs-bert_l-3_inference", "BERT-L3", 416.204),
       ("latency-LayerGraphs-resnet50_inference", "ResNet-50", 4197.055)]
MOIRAI_ALGOS = ["heft", "getf", "moirai"]
MSR_ALGOS = ["m-topo", "m-etf", "heft", "getf", "metis", "moirai"]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr.strip().splitlines()


def place(build, graph, cluster, algo, limit, plan):
    """placer place's simulated makespan (s) and search time, or None and the reason."""
    cmd = [os.path.join(build, "placer"), "place", graph, "--cluster", cluster, "--algo", algo,
           "--time-limit", "%gs" % limit, "--json", "-o", plan]
    rc, out, err = run(cmd)
    if rc != 0:
        return None, (err[-1] if err else "exit %d" % rc)
    doc = json.loads(out)
    return doc["makespan_s"], "%.1f s" % doc["search_s"]


def table(header, rows):
    w = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    for r in [header, ["-" * x for x in w]] + rows:
        print("  ".join(str(c).ljust(w[i]) for i, c in enumerate(r)).rstrip())


def main(argv):
    build, bench = argv[1], argv[2]
    limit = float(os.environ.get("PLACER_MOIRAI_LIMIT", "60"))
    out = os.path.join(build, "bench", "published")
    os.makedirs(out, exist_ok=True)
    g, c, p = (os.path.join(out, x) for x in ("g.json", "c.json", "plan.json"))
    print("== MOIRAI instances through the CLI (tools/moirai_to_taskgraph.py, placer place; "
          "moirai %g s)" % limit)
    rows = []
    for name, ref in MOIRAI:
        src = os.path.join(bench, "moirai", name + ".json")
        if not os.path.exists(src):
            rows.append([name, "-", "skipped (%s not found)" % src, "", ref])
            continue
        subprocess.run(["/usr/bin/python3", "tools/moirai_to_taskgraph.py", src, g, c], check=True)
        for algo in MOIRAI_ALGOS:
            ms, why = place(build, g, c, algo, limit, p)
            rows.append([name, algo, "%.6g" % ms if ms is not None else "-", why, ref])
    table(["instance", "algorithm", "makespan", "search", "reference"], rows)
    print()
    print("== MSR latency inputs through the CLI (tools/msr_to_taskgraph.py, placer place; "
          "moirai %g s): placer's simulated makespan, the plan's latency in MSR's model, MSR's "
          "greedy" % limit)
    rows = []
    for name, short, ref in MSR:
        src = os.path.join(bench, "msr", name + ".json")
        if not os.path.exists(src):
            rows.append([short, "-", "skipped (%s not found)" % src, "", "", "%.3f" % ref])
            continue
        subprocess.run(["/usr/bin/python3", "tools/msr_to_taskgraph.py", src, g, c], check=True)
        for algo in MSR_ALGOS:
            ms, why = place(build, g, c, algo, limit, p)
            score = "-"
            if ms is not None:
                rc, sout, serr = run(["/usr/bin/python3", "tools/msr_to_taskgraph.py", "--score",
                                      src, p])
                score = sout.strip() if rc == 0 else (serr[-1] if serr else "failed")
            rows.append([short, algo, "%.3f" % ms if ms is not None else "-", score,
                         "%.3f" % ref, why])
    table(["instance", "algorithm", "placer sim", "MSR latency", "MSR greedy", "search / note"],
          rows)


if __name__ == "__main__":
    main(sys.argv)
