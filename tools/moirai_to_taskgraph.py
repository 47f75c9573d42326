#!/usr/bin/python3
"""Converts a MOIRAI benchmark instance (../shared/benchmarks/moirai/*.json) to a
placer-taskgraph/1 file and a placer-cluster/1 file (docs/benchmarks.md).

    tools/moirai_to_taskgraph.py INSTANCE.json GRAPH.json CLUSTER.json

The result is the same instance pl_moirai_load builds in memory: devices d0..dK-1 with the
instance's memory, one node tK per task with its time per device (keyed by device name) and
its memory as memory_bytes (a memory unit is a byte, or 1 GiB when the devices' memories
are too small to be bytes: memory_unit), one zero-byte tensor per transfer with its device x device times
(the edge's "times_s" matrix) and one per untimed edge. Times and memories stay in the
instance's own units. Python 3 standard library only.
"""
import json
import math
import os
import sys


def fail(path, where, what):
    sys.exit("%s: %s: %s" % (path, where, what))


def number(path, where, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        fail(path, where, "expected a finite non-negative number, got %r" % (v,))
    return v


def memory_unit(inst):
    """The instance's memory unit is not stated. GoogLeNet's and InceptionV4's devices have
    1.4e11..5e11 units, which read as bytes; example-1's have 14..16, which placer would refuse
    as a unit slip (14 bytes), so there one unit becomes 1 GiB. Devices and tasks are scaled
    alike, so the constraint (sum of task memory per device <= device memory) is unchanged."""
    mems = [d.get("memory") for d in inst["devices"]]
    ok = all(isinstance(m, (int, float)) and not isinstance(m, bool) for m in mems)
    return "B" if ok and max(mems) >= 1e6 else "GiB"


def device_names(path, inst):
    devs = inst.get("devices")
    if not isinstance(devs, list) or not devs:
        fail(path, "$.devices", "no devices")
    return ["d%d" % k for k in range(len(devs))]


def convert_devices(path, inst, names, unit):
    devices = []
    for k, d in enumerate(inst["devices"]):
        mem = number(path, "$.devices[%d].memory" % k, d.get("memory"))
        devices.append({
            "name": names[k],
            "model": "moirai-device",
            "kind": "accel",
            "memory_bytes": "%r %s" % (mem, unit),
            # never used: every task time is given; required for a model outside the table
            "peak_flops_per_s": "1 TFLOP/s",
            "mem_bandwidth_Bps": "1 TB/s",
        })
    # Every pair linked, with no latency: the only transfers that take time are the ones
    # whose times the task graph gives (zero-byte tensors cost nothing on a link).
    links = [{"from": a, "to": b, "bandwidth_Bps": "1 TB/s"}
             for a in names for b in names if a != b]
    return {
        "format": "placer-cluster/1",
        "name": inst.get("name", "moirai"),
        "description": "devices of the MOIRAI instance %s (memory in the instance's units); "
                       "transfer times come from the task graph" % inst.get("name", ""),
        "source": "converted by tools/moirai_to_taskgraph.py from %s" % os.path.basename(path),
        "devices": devices,
        "links": links,
    }


def convert_tasks(path, inst, names, unit):
    nodes, ids = [], set()
    for i, t in enumerate(inst.get("tasks") or []):
        tid = t.get("id")
        if not isinstance(tid, int) or tid < 0 or tid in ids:
            fail(path, "$.tasks[%d].id" % i, "not a new non-negative integer")
        ids.add(tid)
        times = t.get("time")
        if not isinstance(times, list) or len(times) != len(names):
            fail(path, "$.tasks[%d].time" % i, "not one time per device")
        nodes.append({
            "name": "t%d" % tid,
            "type": "Task",
            "times_s": {names[k]: number(path, "$.tasks[%d].time[%d]" % (i, k), s)
                        for k, s in enumerate(times)},
            "memory_bytes": "%r %s" % (number(path, "$.tasks[%d].memory" % i, t.get("memory")),
                                       unit),
        })
    if not nodes:
        fail(path, "$.tasks", "no tasks")
    return nodes, ids


def task(path, where, ids, v):
    if v not in ids:
        fail(path, where, "names no task (%r)" % (v,))
    return "t%d" % v


def convert_edges(path, inst, names, ids):
    edges, pairs = [], set()
    for i, x in enumerate(inst.get("transfers") or []):
        a = task(path, "$.transfers[%d].src" % i, ids, x.get("src"))
        b = task(path, "$.transfers[%d].dst" % i, ids, x.get("dst"))
        m = x.get("time")
        if not isinstance(m, list) or len(m) != len(names) or \
                any(not isinstance(r, list) or len(r) != len(names) for r in m):
            fail(path, "$.transfers[%d].time" % i, "not a device x device matrix")
        rows = [[number(path, "$.transfers[%d].time[%d][%d]" % (i, p, q), v)
                 for q, v in enumerate(r)] for p, r in enumerate(m)]
        edges.append({"from": a, "to": b, "bytes": 0, "tensor": "x%s" % x.get("id", i),
                      "times_s": {"devices": names, "matrix_s": rows}})
        pairs.add((a, b))
    for i, e in enumerate(inst.get("untimed_edges") or []):
        if not isinstance(e, list) or len(e) != 2:
            fail(path, "$.untimed_edges[%d]" % i, "not a [src, dst] pair")
        a = task(path, "$.untimed_edges[%d][0]" % i, ids, e[0])
        b = task(path, "$.untimed_edges[%d][1]" % i, ids, e[1])
        edges.append({"from": a, "to": b, "bytes": 0, "tensor": "u%d" % i})
        pairs.add((a, b))
    # every listed successor is an edge and vice versa (a lost precedence would go unnoticed)
    listed = {("t%d" % t["id"], "t%d" % s) for t in inst["tasks"] for s in t.get("succ") or []}
    if listed != pairs:
        fail(path, "$.tasks[*].succ", "successors and edges differ: %s" %
             sorted(listed ^ pairs)[:3])
    return edges


def main(argv):
    if len(argv) != 4:
        sys.exit("usage: moirai_to_taskgraph.py INSTANCE.json GRAPH.json CLUSTER.json")
    path, gpath, cpath = argv[1:]
    try:
        with open(path) as f:
            inst = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("%s: %s" % (path, e))
    if not isinstance(inst, dict):
        fail(path, "$", "not a JSON object")
    names = device_names(path, inst)
    unit = memory_unit(inst)
    cluster = convert_devices(path, inst, names, unit)
    nodes, ids = convert_tasks(path, inst, names, unit)
    graph = {
        "format": "placer-taskgraph/1",
        "name": inst.get("name", os.path.splitext(os.path.basename(path))[0]),
        "producer": "tools/moirai_to_taskgraph.py",
        "description": "MOIRAI instance %s (%s, MIT; notice in the source file). Times in the "
                       "instance's units." % (os.path.basename(path),
                                              (inst.get("source") or {}).get("repository", "")),
        "nodes": nodes,
        "edges": convert_edges(path, inst, names, ids),
    }
    for out, doc in ((gpath, graph), (cpath, cluster)):
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv)
