#!/usr/bin/python3
"""Converts an MSR dnn-partitioning latency input (Tarnawski et al., NeurIPS 2020;
../shared/benchmarks/msr/, schema in its LICENSE-NOTE.md) to a placer-taskgraph/1 file and a
placer-cluster/1 file, and scores placer plans with MSR's latency model (docs/benchmarks.md).

    tools/msr_to_taskgraph.py INSTANCE.json GRAPH.json CLUSTER.json
    tools/msr_to_taskgraph.py --score INSTANCE.json PLAN.json

Conversion. The cluster is a CPU pool of maxCPUs devices cpu0.. (model "msr-cpu", memory
without limit) and maxFPGAs accelerators fpga0.. (model "msr-fpga", maxSizePerFPGA bytes).
Each node becomes a node with its cpuLatency on "msr-cpu" and, when supportedOnFpga, its
fpgaLatency on "msr-fpga" (else it cannot run there); its size is its weight_bytes (MSR counts
node sizes against an accelerator's memory); its colorClass, when another node shares it,
its colocation class "c<colorClass>". Each node's result is one tensor "<name>:out" read by
all its out-edges (MSR's cost is per source node); its transfer times are MSR's cost between
an accelerator and a CPU, twice the cost between two accelerators (through CPU memory, one
cost out and one in), and 0 between CPUs (shared memory). Latencies stay in the file's units.

Scoring (--score) computes MSR's latency of the plan's placement, as MSR's evaluator defines it
(docs/benchmarks.md): an accelerator's ops are split into contiguous pieces; a CPU op ends
cpuLatency after its last predecessor; a piece starts when all its outside predecessors have
ended, then pays each such predecessor's cost, runs all its ops back to back, pays the cost of
each of its ops with a successor outside, and all its ops end then. It prints the latency.
Python 3 standard library only.
"""
import json
import math
import os
import sys

CPU, FPGA = "msr-cpu", "msr-fpga"


def fail(path, where, what):
    sys.exit("%s: %s: %s" % (path, where, what))


def number(path, where, v, positive=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
            or (positive and v <= 0):
        fail(path, where, "expected a finite %s number, got %r" %
             ("positive" if positive else "non-negative", v))
    return v


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("%s: %s" % (path, e))


def count(path, inst, field):
    v = inst.get(field)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        fail(path, "$." + field, "expected a positive integer, got %r" % (v,))
    return v


class Instance:
    """The instance, checked: nodes by id, edges, per-source cost."""

    def __init__(self, path):
        inst = load_json(path)
        if not isinstance(inst, dict):
            fail(path, "$", "not a JSON object")
        self.path = path
        self.max_size = number(path, "$.maxSizePerFPGA", inst.get("maxSizePerFPGA"), True)
        self.n_fpgas = count(path, inst, "maxFPGAs")
        self.n_cpus = count(path, inst, "maxCPUs")
        self.nodes, self.order = {}, []
        for i, n in enumerate(inst.get("nodes") or []):
            w = "$.nodes[%d]" % i
            nid = n.get("id")
            if not isinstance(nid, int) or nid in self.nodes:
                fail(path, w + ".id", "not a new integer id")
            if n.get("isBackwardNode"):
                fail(path, w + ".isBackwardNode", "a latency (inference) input has no backward nodes")
            self.nodes[nid] = {
                "name": n.get("name") or "n%d" % nid,
                "cpu": number(path, w + ".cpuLatency", n.get("cpuLatency")),
                "fpga": number(path, w + ".fpgaLatency", n.get("fpgaLatency")),
                "on_fpga": bool(n.get("supportedOnFpga")),
                "size": number(path, w + ".size", n.get("size", 0)),
                "color": n.get("colorClass"),
            }
            self.order.append(nid)
        if not self.nodes:
            fail(path, "$.nodes", "no nodes")
        names = [v["name"] for v in self.nodes.values()]
        if len(set(names)) != len(names):  # unnamed or clashing: ids are unique
            for nid, v in self.nodes.items():
                v["name"] = "n%d:%s" % (nid, v["name"])
        self.succ = {nid: [] for nid in self.nodes}
        self.pred = {nid: [] for nid in self.nodes}
        self.cost = {}
        for i, e in enumerate(inst.get("edges") or []):
            w = "$.edges[%d]" % i
            a, b = e.get("sourceId"), e.get("destId")
            if a not in self.nodes or b not in self.nodes or a == b:
                fail(path, w, "names no node, or a node and itself")
            c = number(path, w + ".cost", e.get("cost"))
            if a in self.cost and abs(self.cost[a] - c) > 1e-6:
                fail(path, w + ".cost", "node %d has two different out-edge costs" % a)
            self.cost.setdefault(a, c)
            if b not in self.succ[a]:
                self.succ[a].append(b)
                self.pred[b].append(a)


# ---- conversion ----

def cluster(inst):
    devices = [{"name": "cpu", "count": inst.n_cpus, "model": CPU, "kind": "cpu",
                "memory_bytes": "1 TiB", "peak_flops_per_s": "1 TFLOP/s",
                "mem_bandwidth_Bps": "100 GB/s",
                "description": "MSR's CPU pool (its latency model runs CPU ops in parallel)"},
               {"name": "fpga", "count": inst.n_fpgas, "model": FPGA, "kind": "accel",
                "memory_bytes": inst.max_size, "peak_flops_per_s": "1 TFLOP/s",
                "mem_bandwidth_Bps": "100 GB/s", "description": "maxSizePerFPGA bytes"}]
    names = ["cpu%d" % i for i in range(inst.n_cpus)] + ["fpga%d" % i for i in range(inst.n_fpgas)]
    return {
        "format": "placer-cluster/1",
        "name": "msr-%dcpu-%dfpga" % (inst.n_cpus, inst.n_fpgas),
        "description": "MSR dnn-partitioning latency setting: a CPU pool and identical "
                       "accelerators; transfer times come from the task graph",
        "source": "converted by tools/msr_to_taskgraph.py from %s" % os.path.basename(inst.path),
        "devices": devices,
        "links": [{"from": a, "to": b, "bandwidth_Bps": "1 TB/s"}
                  for a in names for b in names if a != b],
    }


def graph(inst):
    members = {}
    for v in inst.nodes.values():
        members[v["color"]] = members.get(v["color"], 0) + 1
    nodes = []
    for nid in inst.order:
        v = inst.nodes[nid]
        times = {CPU: v["cpu"]}
        if v["on_fpga"]:
            times[FPGA] = v["fpga"]
        node = {"name": v["name"], "type": "Op", "times_s": times}
        if v["size"]:
            node["weight_bytes"] = v["size"]
        if v["color"] is not None and members[v["color"]] > 1:  # absent: a class of its own
            node["colocation"] = "c%s" % v["color"]
        nodes.append(node)
    edges = []
    for a in inst.order:
        c = inst.cost.get(a, 0)
        times = [{"from": CPU, "to": FPGA, "time_s": c}, {"from": FPGA, "to": CPU, "time_s": c},
                 {"from": FPGA, "to": FPGA, "time_s": 2 * c}, {"from": CPU, "to": CPU, "time_s": 0}]
        for k, b in enumerate(inst.succ[a]):
            e = {"from": inst.nodes[a]["name"], "to": inst.nodes[b]["name"], "bytes": 0,
                 "tensor": inst.nodes[a]["name"] + ":out"}
            if k == 0:
                e["times_s"] = times
            edges.append(e)
    return {
        "format": "placer-taskgraph/1",
        "name": os.path.splitext(os.path.basename(inst.path))[0],
        "producer": "tools/msr_to_taskgraph.py",
        "description": "MSR dnn-partitioning latency input %s (MIT, Microsoft; see "
                       "../shared/benchmarks/msr/LICENSE-NOTE.md). Latencies in the file's units."
                       % os.path.basename(inst.path),
        "nodes": nodes,
        "edges": edges,
    }


# ---- MSR's latency of a placement ----

def pieces(inst, ops):
    """Splits one accelerator's ops into contiguous pieces: an op's piece is 1 + the most
    times a path into it has left the set and come back (MSR's rework)."""
    level = {}

    def lv(v):
        if v not in level:
            inside = v in ops
            best = 1 if inside else 0
            for u in inst.pred[v]:
                best = max(best, lv(u) + (1 if inside and u not in ops else 0))
            level[v] = best
        return level[v]

    sys.setrecursionlimit(max(10000, 4 * len(inst.nodes)))
    out = {}
    for v in ops:
        out.setdefault(lv(v), set()).add(v)
    return list(out.values())


def latency(inst, on_cpu, accel_sets):
    """MSR's latency: CPU ops alone, each accelerator piece as one block."""
    block = {}
    blocks = []
    for ops in accel_sets:
        for p in pieces(inst, ops):
            for v in p:
                block[v] = len(blocks)
            blocks.append(p)
    end = {}
    # blocks and CPU ops in a topological order of the contracted graph
    unit = lambda v: ("b", block[v]) if v in block else ("n", v)
    members = {}
    for v in inst.order:
        members.setdefault(unit(v), []).append(v)
    indeg = {u: 0 for u in members}
    out = {u: set() for u in members}
    for a in inst.order:
        for b in inst.succ[a]:
            ua, ub = unit(a), unit(b)
            if ua != ub and ub not in out[ua]:
                out[ua].add(ub)
                indeg[ub] += 1
    ready = [u for u in members if indeg[u] == 0]
    done = 0
    while ready:
        u = ready.pop()
        done += 1
        ops = members[u]
        if u[0] == "n":
            v = ops[0]
            end[v] = inst.nodes[v]["cpu"] + max([end[p] for p in inst.pred[v]], default=0.0)
        else:
            inside = set(ops)
            srcs = {p for v in ops for p in inst.pred[v] if p not in inside}
            start = max([end[p] for p in srcs], default=0.0)
            t = start + sum(inst.cost.get(p, 0) for p in srcs)
            t += sum(inst.nodes[v]["fpga"] for v in ops)
            t += sum(inst.cost.get(v, 0) for v in ops if any(s not in inside for s in inst.succ[v]))
            for v in ops:
                end[v] = t
        for w in out[u]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    if done != len(members):
        sys.exit("%s: the placement's contracted graph has a cycle" % inst.path)
    return max(end.values())


def score(inst, plan_path):
    plan = load_json(plan_path)
    place = plan.get("placement") if isinstance(plan, dict) else None
    if not isinstance(place, dict):
        fail(plan_path, "$.placement", "expected an object op -> device (placer-plan/1)")
    by_name = {v["name"]: nid for nid, v in inst.nodes.items()}
    on_cpu, accel = set(), {}
    for name, dev in place.items():
        if name not in by_name:
            fail(plan_path, "$.placement", "unknown op %r" % name)
        if not isinstance(dev, str) or not (dev.startswith("cpu") or dev.startswith("fpga")):
            fail(plan_path, "$.placement[%r]" % name, "not a device of the converted cluster")
        (on_cpu.add(by_name[name]) if dev.startswith("cpu")
         else accel.setdefault(dev, set()).add(by_name[name]))
    if len(on_cpu) + sum(len(s) for s in accel.values()) != len(inst.nodes):
        fail(plan_path, "$.placement", "does not place every op")
    return latency(inst, on_cpu, list(accel.values()))


def write(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main(argv):
    if len(argv) == 4 and argv[1] == "--score":
        print("%.3f" % score(Instance(argv[2]), argv[3]))
        return
    if len(argv) != 4 or argv[1].startswith("-"):
        sys.exit("usage: msr_to_taskgraph.py INSTANCE.json GRAPH.json CLUSTER.json\n"
                 "       msr_to_taskgraph.py --score INSTANCE.json PLAN.json")
    inst = Instance(argv[1])
    write(argv[2], graph(inst))
    write(argv[3], cluster(inst))


if __name__ == "__main__":
    main(sys.argv)
