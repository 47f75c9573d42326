#!/usr/bin/python3
"""measure_cpu.py: measures this CPU's figures for examples/clusters/local-cpu-percore.json the way the
cost model uses them (docs/calibrate.md, "Measuring the device"):

  peak_flops_per_s   FLOPs of a large MatMul / its kernel time (onnxruntime's per-node profiler)
  mem_bandwidth_Bps  bytes_moved of a large Add (both inputs + the output, as placer counts
                     them) / its kernel time, for several sizes (in cache: L2/L3; in L3; in DRAM)
  reread_Bps         one LSTM at batch 1 (its R read again at every step) timed at 16 and 48
                     steps: 32 x R's bytes / the difference, the median over R of 4, 8 and 16
                     MiB (beyond the L2; an R of 1 MiB within it is printed beside them)
  launch_overhead_s  end-to-end latency of a chain of N one-element Relu ops minus that of a
                     chain of 1, divided by N - 1: what each extra node costs beyond any work
  stage_overhead_s   the same chain cut into N one-op stages on one device thread (as `placer
  stage_tensor_s     run` runs a split, docs/runtime.md) minus the chain as one stage, divided
  stage_copy_Bps     by N - 1: what each extra stage costs (session run, feeding its inputs,
                     taking its outputs); with 1, 4 and 16 chains side by side (a stage taking
                     in and giving out that many tensors) a least-squares line gives the fixed
                     part and the part per tensor; with 1 MiB tensors, the copy rate; the same
                     stages alternating between two device threads add the hand-off of each
                     tensor between the cores (the link's latency)
  host_mem_bandwidth_Bps  two independent chains run alone on one device thread, then both at
  private_cache_bytes once on two (cpu0, cpu1): each chain's slowdown, for memory-bound Add
                     chains (in L2, beyond it) and compute-bound MatMul and Conv chains; the
                     shared bandwidth under which the simulator's model gives the beyond-L2
                     chain's slowdown, in units of one core's (docs/simulator.md, "Shared
                     memory"); private_cache_bytes is the core's L2 (sysfs)
  host_mem_stall_Bps  a chain of compute-bound MatMuls that stream their weights (29 MB; 3 x
                     7.8 MB) timed as its own stage alone on cpu0 and beside four other chains
                     on cpu1: the bytes it moves beyond the L2 over the time it gains, the
                     median over the cases (docs/simulator.md, "Shared memory", the stall)
  gemm_tile_columns  a 2708 x 2708 by 2708 x N MatMul (both operands inputs, as gcn_cora's)
                     for N = 1..64: its kernel time is flat within a tile of columns and steps
                     up at each tile's end; the tile is the least N after which the time first
                     jumps (docs/cost.md, "GEMM column tiles")
  (the last-level cache, not a figure of the file) a one-tile MatMul X[m,k] @ W[k,16] whose X
                     grows from the L2 past the 32 MiB L3, and gcn_cora's first layer (its
                     15.5 MB X @ W) alone and followed by a MatMul streaming an A of 11-44 MB:
                     how the rate of an op streaming its operand depends on what else the
                     request touches (docs/multi.md, "Fidelity of --run")
  (the two memory levels, not figures of the file) a chain of Adds within the L3 and one in
                     DRAM, each alone (the rate each level serves one core) and the DRAM one
                     beside its copy (what two cores get from DRAM); with --beside MODEL, that
                     model alone on cpu0 and beside the DRAM chain, a Conv chain within the L2
                     and the L3 chain on cpu1 (docs/cost.md, "What the estimate does not see")

  (a model's idle, not a figure of the file) with --idle MODEL: the model as one stage on cpu0,
                     its requests back to back, then each after the device thread idled
                     10, 48 and 150 ms (the wait of a tenant whose neighbour's request is
                     longer, as `placer multi --run` runs rounds): what a request finds in the
                     caches after others used them (docs/multi.md, "Fidelity of --run"); with
                     --busy, a neighbour (a Conv chain within the L2) runs on cpu1 throughout,
                     as some tenant runs while another waits in every round

Usage (from the repository root, after `make deps`):

    /usr/bin/python3 tools/measure_cpu.py [--trials T] [--json] [--stages-only]
                                          [--contention-only] [--tile-only] [--llc-only]
                                          [--levels-only [--beside MODEL.onnx]]
                                          [--idle MODEL.onnx [--busy]] [--reread-only]

--stages-only measures the stage costs and the hand-off alone (half a minute).
--contention-only measures the slowdown of two cores running at once alone, and the stall (a
                  minute).
--tile-only measures the GEMM column tile alone (half a minute).
--reread-only measures the re-read rate alone (seconds).
--llc-only measures the streaming MatMuls against the last-level cache alone (a minute).
--idle measures the model's requests after idle gaps alone (half a minute). MODEL as --beside.
       --busy keeps a neighbour busy on cpu1 meanwhile (docs/calibrate.md, "Cold requests":
       the figures a round needs are measured so).
--levels-only measures the two memory levels alone (half a minute; a minute more with
              --beside). MODEL may be weightless (the zoo's): the copy placer inflated
              into its cache is run, made first (`placer profile MODEL --repeat 1`) if
              there is none.

Kernel times come from the persistent worker (tools/ort_worker.js, op "profile": graph
optimisation disabled, one intra-op thread, the same settings as `placer profile`), so the
numbers mean what the roofline divides by, with no input copying or session overhead in them.
Peaks take the minimum over T trials (default 7) of each trial's mean kernel time, because
a disturbance only ever slows a kernel down; the overhead takes the median over the trials.
The models are built on the fly with the `onnx` module (Debian's python3-onnx, hence
/usr/bin/python3) in a temporary directory that is removed at the end.
"""
import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
F32 = TensorProto.FLOAT


def save(model_dir, name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = os.path.join(model_dir, name + ".onnx")
    onnx.save(model, path)
    return path


def matmul_model(d, m, k, n):
    """Y[m,n] = X[m,k] @ W[k,n], W an initializer (prepacked by MLAS, as a model's weights)."""
    w = numpy_helper.from_array(np.random.default_rng(1).random((k, n), dtype=np.float32), "W")
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")
    return save(d, f"matmul{m}x{k}x{n}", [node], [helper.make_tensor_value_info("X", F32, [m, k])],
                [helper.make_tensor_value_info("Y", F32, [m, n])], [w]), 2.0 * m * k * n


def conv_model(d, c, hw):
    """A 3x3 convolution c -> c channels on 1 x c x hw x hw, padded: a cross-check of the peak."""
    w = numpy_helper.from_array(
        np.random.default_rng(2).random((c, c, 3, 3), dtype=np.float32) * 0.01, "W")
    node = helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", pads=[1, 1, 1, 1])
    shape = [1, c, hw, hw]
    return save(d, f"conv{c}x{hw}", [node], [helper.make_tensor_value_info("X", F32, shape)],
                [helper.make_tensor_value_info("Y", F32, shape)], [w]), 2.0 * c * hw * hw * c * 9


def add_model(d, n):
    """C[n] = A[n] + B[n]: placer counts 3 * 4n bytes moved (two inputs, one output)."""
    node = helper.make_node("Add", ["A", "B"], ["C"], name="add")
    vi = helper.make_tensor_value_info
    return save(d, f"add{n}", [node], [vi("A", F32, [n]), vi("B", F32, [n])],
                [vi("C", F32, [n])]), 3.0 * 4 * n


def chain_names(k, width):
    """Step i's tensors of `width` side-by-side chains of k ops: names[i][j], i in 0..k."""
    steps = ["X"] + [f"t{i}" for i in range(1, k)] + ["Y"]
    return [[s] if width == 1 else [f"{s}_{j}" for j in range(width)] for s in steps]


def relus(names, i):
    """Step i of the chains: one Relu per chain, names[i][j] -> names[i + 1][j]."""
    return [helper.make_node("Relu", [a], [b], name=f"relu{i}" + (f"_{j}" if j else ""))
            for j, (a, b) in enumerate(zip(names[i], names[i + 1]))]


def chain_model(d, k, n=1, width=1):
    """k Relu ops in a row on an n-element tensor (n = 1: nearly no work, so each costs its
    dispatch); `width` such chains side by side."""
    names, vi = chain_names(k, width), helper.make_tensor_value_info
    return save(d, f"chain{k}x{n}w{width}", [x for i in range(k) for x in relus(names, i)],
                [vi(x, F32, [n]) for x in names[0]], [vi(x, F32, [n]) for x in names[k]])


def stage_models(d, k, n=1, width=1):
    """chain_model(k, n, width) cut into k models of one step each: stage i takes the `width`
    tensors t_i and gives out the `width` tensors t_i+1."""
    names, vi = chain_names(k, width), helper.make_tensor_value_info
    return [save(d, f"stage{i}x{n}w{width}", relus(names, i),
                 [vi(x, F32, [n]) for x in names[i]], [vi(x, F32, [n]) for x in names[i + 1]])
            for i in range(k)]


class Worker:
    """tools/ort_worker.js over stdin/stdout, one JSON message per line each way."""

    def __init__(self):
        modules = os.path.join(ROOT, "build", "npm", "node_modules")
        self.p = subprocess.Popen(["node", os.path.join(ROOT, "tools", "ort_worker.js"), modules],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.id = 0
        hello = json.loads(self.p.stdout.readline())
        if not hello.get("ok"):
            sys.exit("ort worker: " + hello.get("error", "did not start"))

    def ask(self, msg):
        self.id += 1
        msg["id"] = self.id
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()
        r = json.loads(self.p.stdout.readline())
        while "progress" in r:  # a load of many models reports its progress first
            r = json.loads(self.p.stdout.readline())
        if not r.get("ok"):
            sys.exit("ort worker: " + r.get("error", "?"))
        return r

    def kernels_s(self, model, nodes, repeat):
        """Mean kernel time of each of `nodes` over the same `repeat` requests (after one
        warm-up), by name."""
        r = self.ask({"op": "profile", "model": model, "repeat": repeat, "warmup": 1,
                      "threads": 1})
        return {n["name"]: n["mean_s"] for n in r["nodes"] if n["name"] in nodes}

    def kernel_s(self, model, node, repeat):
        """Mean kernel time of one node over `repeat` requests (after one warm-up)."""
        return self.kernels_s(model, (node,), repeat)[node]

    def latencies_s(self, model, repeat, trials):
        """Per trial, the median end-to-end latency of `repeat` requests, optimisation disabled.
        The model is loaded once: a load is the expensive step and the trials need no other."""
        self.ask({"op": "load", "models": [model], "threads": 1, "optimize": "disabled"})
        return [statistics.median(self.ask({"op": "run", "inputs": "random", "repeat": repeat,
                                            "warmup": 3})["latency_s"])
                for _ in range(trials)]

    def threaded_s(self, models, devices, repeat, trials):
        """Per trial, the median latency of `repeat` requests of `models` loaded as the stages
        of a split, each on its device thread (optimisation on, as `placer run` loads them)."""
        self.ask({"op": "load", "models": models, "devices": devices, "threads": 1,
                  "optimize": "all"})
        return [statistics.median(self.ask({"op": "run", "inputs": "random", "repeat": repeat,
                                            "warmup": 3})["latency_s"])
                for _ in range(trials)]

    def close(self):
        self.ask({"op": "quit"})
        self.p.wait()


def add_chain(d, tag, k, n):
    """k Adds in a row on n floats, each adding its input to itself (memory-bound: 12 bytes
    moved per 1 FLOP)."""
    names = [f"X{tag}"] + [f"a{tag}{i}" for i in range(k)]
    nodes = [helper.make_node("Add", [names[i], names[i]], [names[i + 1]]) for i in range(k)]
    vi = helper.make_tensor_value_info
    return save(d, f"add{tag}{k}x{n}", nodes, [vi(names[0], F32, [n])], [vi(names[-1], F32, [n])])


def mlp_chain(d, tag, k, m, c):
    """k MatMul + Relu layers on an m x c input with c x c weights (compute-bound)."""
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.random((c, c), dtype=np.float32) * 0.01, f"W{tag}{i}")
             for i in range(k)]
    names, nodes = [f"X{tag}"], []
    for i in range(k):
        nodes += [helper.make_node("MatMul", [names[-1], f"W{tag}{i}"], [f"h{tag}{i}"]),
                  helper.make_node("Relu", [f"h{tag}{i}"], [f"r{tag}{i}"])]
        names.append(f"r{tag}{i}")
    vi = helper.make_tensor_value_info
    return save(d, f"mlp{tag}{k}x{m}x{c}", nodes, [vi(names[0], F32, [m, c])],
                [vi(names[-1], F32, [m, c])], inits)


def conv_chain(d, tag, k, c, hw):
    """k padded 3x3 convolutions c -> c channels on 1 x c x hw x hw (a CNN's body)."""
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.random((c, c, 3, 3), dtype=np.float32) * 0.01,
                                     f"W{tag}{i}") for i in range(k)]
    names = [f"X{tag}"] + [f"c{tag}{i}" for i in range(k)]
    nodes = [helper.make_node("Conv", [names[i], f"W{tag}{i}"], [names[i + 1]], pads=[1, 1, 1, 1])
             for i in range(k)]
    vi = helper.make_tensor_value_info
    return save(d, f"conv{tag}{k}x{c}x{hw}", nodes, [vi(names[0], F32, [1, c, hw, hw])],
                [vi(names[-1], F32, [1, c, hw, hw])], inits)


def stream_chain(d, tag, k, n, cols=16):
    """k MatMuls H' = A @ H with n x n weights A (n * n * 4 bytes each, read once: gcn_cora's
    adjacency product) and H n x cols: compute-bound by the roofline, yet streaming A."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.random((n, n), dtype=np.float32) * 1e-3, f"A{tag}{i}")
             for i in range(k)]
    names = [f"H{tag}"] + [f"h{tag}{i}" for i in range(k)]
    nodes = [helper.make_node("MatMul", [f"A{tag}{i}", names[i]], [names[i + 1]])
             for i in range(k)]
    vi = helper.make_tensor_value_info
    return save(d, f"stream{tag}{k}x{n}", nodes, [vi(names[0], F32, [n, cols])],
                [vi(names[-1], F32, [n, cols])], inits)


def lstm_chain(d, tag, k, hidden=650, seq=35, batch=20):
    """k LSTM layers as rnnlm's (650 units, 35 steps, batch 20: 13.5 MB of weights each,
    read again at every step)."""
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(np.array([1], dtype=np.int64), f"ax{tag}")]
    names, nodes = [f"X{tag}"], []
    for i in range(k):
        for w in "WR":
            inits.append(numpy_helper.from_array(
                rng.random((1, 4 * hidden, hidden), dtype=np.float32) * 0.01, f"{w}{tag}{i}"))
        nodes += [helper.make_node("LSTM", [names[-1], f"W{tag}{i}", f"R{tag}{i}"],
                                   [f"y{tag}{i}"], name=f"lstm{tag}{i}", hidden_size=hidden),
                  helper.make_node("Squeeze", [f"y{tag}{i}", f"ax{tag}"], [f"s{tag}{i}"])]
        names.append(f"s{tag}{i}")
    vi = helper.make_tensor_value_info
    return save(d, f"lstm{tag}{k}", nodes, [vi(names[0], F32, [seq, batch, hidden])],
                [vi(names[-1], F32, [seq, batch, hidden])], inits)


# the stall cases: a streaming chain on cpu0 (its own stage time timed), alone and beside each
# of these on cpu1; its bytes beyond the L2 per request, for the stall's rate
STALL_STREAMS = (  # name, MatMuls, n
    ("MatMul 1 x 2708^2 by 2708x16 (29 MB)", 1, 2708),
    ("MatMul 3 x 1400^2 by 1400x16 (7.8 MB each)", 3, 1400),
)
STALL_OTHERS = (
    ("its copy", None),
    ("Add 80 x 4 MiB", lambda d, t: add_chain(d, t, 80, 1 << 20)),
    ("MatMul 12 x 128x768", lambda d, t: mlp_chain(d, t, 12, 128, 768)),
    ("LSTM 2 x 650", lambda d, t: lstm_chain(d, t, 2)),
)

CONTENTION_CASES = (  # name, builder of one chain (tag -> path), memory-bound
    ("Add 30 x 4 MiB (beyond L2)", lambda d, t: add_chain(d, t, 30, 1 << 20), True),
    ("Add 300 x 64 KiB (in L2)", lambda d, t: add_chain(d, t, 300, 1 << 14), True),
    ("MatMul 12 x 128x768, W 2.3 MB", lambda d, t: mlp_chain(d, t, 12, 128, 768), False),
    ("MatMul 6 x 64x1536, W 9 MB", lambda d, t: mlp_chain(d, t, 6, 64, 1536), False),
    ("Conv 3x3 4 x 64x56x56", lambda d, t: conv_chain(d, t, 4, 64, 56), False),
)


def matmul_inputs_model(d, m, k, n):
    """Y[m,n] = X[m,k] @ B[k,n] with both operands graph inputs (nothing prepacked)."""
    vi = helper.make_tensor_value_info
    node = helper.make_node("MatMul", ["X", "B"], ["Y"], name="mm")
    return save(d, f"mmin{m}x{k}x{n}", [node], [vi("X", F32, [m, k]), vi("B", F32, [k, n])],
                [vi("Y", F32, [m, n])])


def measure_tile(w, d, trials, out):
    """Kernel time of the 2708 x 2708 by 2708 x N MatMul per N, and the tile: the first N
    whose time is 1.5 x that of N - 1 or more (the step from one tile to two)."""
    times = {}
    for n in (1, 2, 4, 7, 8, 12, 15, 16, 17, 24, 31, 32, 33, 48, 64):
        path = matmul_inputs_model(d, 2708, 2708, n)
        times[n] = min(w.kernel_s(path, "mm", 5) for _ in range(trials))
    out["tile_ms"] = {str(n): t * 1e3 for n, t in times.items()}
    ns = sorted(times)
    steps = [b for a, b in zip(ns, ns[1:]) if a > 1 and times[b] >= 1.5 * times[a]]
    out["gemm_tile_columns"] = steps[0] - 1 if steps else None


def gcn_layer_model(d, a_rows):
    """gcn_cora's first layer, H[2708,16] = X[2708,1433] @ W (X the request's input, 15.5 MB),
    followed when a_rows > 0 by Y = A[a_rows,2708] @ H, A an initializer of a_rows x 2708
    floats: the request then streams X and A, and X comes back after A has passed."""
    rng, vi = np.random.default_rng(1), helper.make_tensor_value_info
    inits = [numpy_helper.from_array(rng.random((1433, 16), dtype=np.float32), "W")]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["H"], name="mm1")]
    out = vi("H", F32, [2708, 16])
    if a_rows:
        inits.append(numpy_helper.from_array(rng.random((a_rows, 2708), dtype=np.float32), "A"))
        nodes.append(helper.make_node("MatMul", ["A", "H"], ["Y"], name="mm2"))
        out = vi("Y", F32, [a_rows, 16])
    return save(d, f"gcnlayer{a_rows}", nodes, [vi("X", F32, [2708, 1433])], [out], inits)


def measure_llc(w, d, trials, out):
    """The one-tile MatMul's rate by the size of its streamed operand X (min over trials of
    10 requests' mean), and gcn_cora's first layer's time with and without a following A
    (the median over trials, as a request of the model sees it)."""
    out["stream_gflops"] = {}
    for m, k in ((512, 512), (1448, 1448), (2708, 1433), (2708, 2708), (4096, 4096)):
        path, flops = matmul_model(d, m, k, 16)
        out["stream_gflops"][f"{m}x{k} ({m * k * 4 / 1e6:.1f} MB)"] = best_rate(
            w, path, "mm", flops, trials, 10) / 1e9
    out["gcn_layer_ms"] = {}
    for a_rows in (0, 1000, 2708, 4096):
        path, nodes = gcn_layer_model(d, a_rows), ("mm1", "mm2")[:1 + (a_rows > 0)]
        runs = [w.kernels_s(path, nodes, 10) for _ in range(trials)]
        out["gcn_layer_ms"][f"A {a_rows * 2708 * 4 / 1e6:.1f} MB"] = {
            n: statistics.median(r[n] for r in runs) * 1e3 for n in nodes}


def cpu_ticks(w):
    """(wall ticks, the machine's busy ticks summed over its CPUs, this script's and its
    worker's ticks), from /proc: to tell how much else ran during a measurement."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    own = sum(os.times()[:2]) * os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{w.p.pid}/stat") as f:
        own += sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
    return os.times()[4] * os.sysconf("SC_CLK_TCK"), sum(v) - v[3] - v[4], own


def others_cpus(a, b):
    """How many CPUs other processes kept busy, on average, between two cpu_ticks: 0 is a
    quiet machine; the measurement itself runs on up to two."""
    return max(0.0, ((b[1] - a[1]) - (b[2] - a[2])) / max(1e-9, b[0] - a[0]))


def private_cache_bytes(own_only=True):
    """The L2 of cpu0 when no other CPU shares it (a core's own cache), else 0 (sysfs); with
    own_only False, its size whoever shares it. 0 when sysfs does not say."""
    base = "/sys/devices/system/cpu/cpu0/cache/index2/"
    try:
        with open(base + "size") as f, open(base + "shared_cpu_list") as g:
            size, shared = f.read().strip(), g.read().strip()
    except OSError:
        return 0
    if own_only and shared != "0":
        return 0
    mult = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
    return int(size.rstrip("KM")) * mult


def fastest_s(w, models, devices, repeat, stage=None):
    """The fastest of `repeat` requests of `models` loaded as stages on their device threads
    (optimisation on, as `placer run` loads them): a disturbance only slows a request down.
    With `stage`, that stage's own time instead of the request's, whatever the others take."""
    w.ask({"op": "load", "models": models, "devices": devices, "threads": 1, "optimize": "all"})
    r = w.ask({"op": "run", "inputs": "random", "repeat": repeat, "warmup": 3})
    return min(r["latency_s"] if stage is None else [t[stage] for t in r["stage_s"]])


def beside(w, a, b, trials, repeat, stage=None):
    """Model a alone on cpu0, then with b on cpu1 at once, alternating trial by trial so that
    the machine's drift hits both alike; each trial keeps its fastest request (with `stage`,
    that stage's own time, fastest_s). The slowdown is the fastest pair over the fastest one:
    contention slows every request, a disturbance (the machine is shared) only some, so the
    minimum keeps the one and sheds the other, as the peaks do; each trial's is kept too."""
    one, both = [], []
    for _ in range(trials):
        one.append(fastest_s(w, [a], ["cpu0"], repeat, stage))
        both.append(fastest_s(w, [a, b], ["cpu0", "cpu1"], repeat, stage))
    return {"alone_ms": min(one) * 1e3, "beside_ms": min(both) * 1e3,
            "slowdown": min(both) / min(one),
            "slowdown_trials": [p / o for p, o in zip(both, one)]}


def measure_stall(w, d, trials, out):
    """Each streaming chain of STALL_STREAMS alone on cpu0, and beside each of STALL_OTHERS on
    cpu1 (alternating trial by trial, the fastest request of each trial, the fastest trial):
    the time the stream's stage gains beside another core's work, and that gain per byte the
    chain moves beyond the L2 (its weights, read once), as a rate: host_mem_stall_Bps
    (docs/simulator.md, "Shared memory") is the median of these rates."""
    l2 = private_cache_bytes()
    out["stall"], rates = {}, []
    for name, k, n in STALL_STREAMS:
        a = stream_chain(d, "a", k, n)
        beyond = k * max(0.0, n * n * 4 - l2)
        for oname, omake in STALL_OTHERS:
            b = stream_chain(d, "b", k, n) if omake is None else omake(d, "b")
            r = beside(w, a, b, trials, 10, stage=0)
            gain = (r["beside_ms"] - r["alone_ms"]) / 1e3
            r["stall_Bps"] = beyond / gain if gain > 0 else float("inf")
            rates.append(r["stall_Bps"])
            out["stall"][f"{name} beside {oname}"] = r
    out["host_mem_stall_Bps"] = statistics.median(rates)


def measure_contention(w, d, trials, out):
    """Each chain of CONTENTION_CASES alone on cpu0, then two copies at once on cpu0 and cpu1
    (two stages on their device threads; beside()). The shared bandwidth, as a multiple of one
    core's, follows from the beyond-L2 Add chain's slowdown: two memory-bound chains at once
    get that much between them."""
    out["contention"] = {}
    for name, make, _ in CONTENTION_CASES:
        out["contention"][name] = beside(w, make(d, "a"), make(d, "b"), trials, 20)
    # the model (docs/simulator.md, "Shared memory"): an op moving B bytes draws the part
    # beyond the core's private cache, phi = 1 - L2 / B, from the shared memory, and its memory
    # term becomes (1 - phi) + phi * f; two such chains at once: f = 2 phi / share, so the
    # measured slowdown s = 1 + phi (f - 1) gives share = 2 phi / (1 + (s - 1) / phi), in
    # units of one core's bandwidth
    l2 = private_cache_bytes()
    phi = max(0.0, 1 - l2 / (3 * 4 * (1 << 20)))  # an Add of the first case moves 3 x 4 MiB
    s = out["contention"][CONTENTION_CASES[0][0]]["slowdown"]
    out["private_cache_bytes"] = l2
    out["host_mem_share"] = 2 * phi / (1 + (s - 1) / phi) if phi > 0 else 2 / s


def best_rate(w, model, node, work, trials, repeat):
    """work / the smallest of `trials` mean kernel times: a disturbance only slows a kernel."""
    return work / min(w.kernel_s(model, node, repeat) for _ in range(trials))


def measure_stages(w, d, trials, out):
    """Per-stage overhead and hand-off (module docstring), medians over the trials, for
    tensors of 4 B, 64 KiB and 1 MiB between the stages."""
    k = 41
    out["stage_overhead_us"], out["handoff_us"] = {}, {}
    for n in (1, 16384, 262144):
        whole, stages = chain_model(d, k, n), stage_models(d, k, n)
        one = w.threaded_s([whole], ["cpu0"], 50, trials)
        same = w.threaded_s(stages, ["cpu0"] * k, 50, trials)
        alt = w.threaded_s(stages, [f"cpu{i % 2}" for i in range(k)], 50, trials)
        size = f"{4 * n} B"
        out["stage_overhead_us"][size] = statistics.median(
            [(s - o) / (k - 1) for s, o in zip(same, one)]) * 1e6
        out["handoff_us"][size] = statistics.median(
            [(a - s) / (k - 1) for a, s in zip(alt, same)]) * 1e6
    # each 1 MiB stage takes in and gives out one tensor, as the 4 B one does, and 1 MiB more
    # each way: the difference is 2 MiB at the copy rate
    small, big = out["stage_overhead_us"]["4 B"], out["stage_overhead_us"]["1048576 B"]
    out["stage_copy_gbps"] = 2 * 2**20 / ((big - small) * 1e-6) / 1e9
    measure_stage_tensors(w, d, trials, k, out)


def measure_stage_tensors(w, d, trials, k, out):
    """The fixed and per-tensor parts of a stage: the same chain with w = 1, 4, 16 one-element
    tensors side by side, each stage taking in w and giving out w, costs fixed + 2 w x
    per-tensor per stage; least squares over the three medians (residuals kept)."""
    out["stage_tensors_us"] = {1: out["stage_overhead_us"]["4 B"]}
    for width in (4, 16):
        whole, stages = chain_model(d, k, 1, width), stage_models(d, k, 1, width)
        one = w.threaded_s([whole], ["cpu0"], 50, trials)
        same = w.threaded_s(stages, ["cpu0"] * k, 50, trials)
        out["stage_tensors_us"][width] = statistics.median(
            [(s - o) / (k - 1) for s, o in zip(same, one)]) * 1e6
    x = [2 * width for width in out["stage_tensors_us"]]
    y = list(out["stage_tensors_us"].values())
    per_tensor, fixed = np.polyfit(x, y, 1)
    out["stage_fixed_us"], out["stage_tensor_us"] = fixed, per_tensor
    out["stage_fit_residuals_us"] = [b - (fixed + per_tensor * a) for a, b in zip(x, y)]


LEVEL_CHAINS = (  # name, builder, bytes the chain's Adds move (3 tensors each)
    ("Add 80 x 4 MiB (in the L3)", lambda d, t: add_chain(d, t, 80, 1 << 20), 80 * 3 * 4 << 20),
    ("Add 6 x 64 MiB (in DRAM)", lambda d, t: add_chain(d, t, 6, 1 << 24), 6 * 3 * 64 << 20),
)


def cached_copy(model):
    """The copy of model placer inflated into its cache (src/runtime/inflate.c names it by the
    source's SHA-256 and "inflate1"), or None."""
    with open(model, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest() + "-inflate1.onnx"
    xdg = os.environ.get("XDG_CACHE_HOME")
    for r in (os.environ.get("PLACER_CACHE"), xdg and os.path.join(xdg, "placer"),
              os.path.expanduser("~/.cache/placer")):
        if r and os.path.exists(os.path.join(r, "inflated", key)):
            return os.path.join(r, "inflated", key)
    return None


def weightless(model):
    """Whether an initializer of model has a shape but no payload (inflate.c's has_payload)."""
    m = onnx.load(model, load_external_data=False)
    data = ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data",
            "uint64_data")
    return any(not any(len(getattr(t, k)) for k in data) and t.data_location != TensorProto.EXTERNAL
               and np.prod(t.dims, dtype=np.int64) > 0 for t in m.graph.initializer)


def inflated(model):
    """model as onnxruntime can run it: itself, or if it is weightless (the zoo's) the copy
    placer inflated into its cache, made first by `placer profile MODEL --repeat 1` when there
    is none yet."""
    try:
        copy = cached_copy(model)
        if copy or not weightless(model):
            return copy or model
    except Exception as e:  # OSError, or protobuf's DecodeError on a file that is not ONNX
        sys.exit(f"measure_cpu.py: {model}: cannot read it as an ONNX model ({e})")
    cmd = [os.path.join(ROOT, "build", "placer"), "profile", model, "--repeat", "1", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    copy = cached_copy(model) if r.returncode == 0 else None
    if not copy:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "no copy made"
        sys.exit(f"measure_cpu.py: {model} is weightless and placer could not inflate it "
                 f"({' '.join(cmd)}: {last})")
    return copy


# a CNN's body beside which a model is timed (--levels-only --beside) or waits (--idle --busy):
# compute-bound, its 0.8 MB activations in the L2 and 2.9 MB of weights in the L3, so it adds
# little contention of its own (docs/calibrate.md, "A neighbour busy")
CONV_L2 = ("Conv 3x3 20 x 64x56x56 (in the L2)", lambda d, t: conv_chain(d, t, 20, 64, 56))


# the re-read rate: one LSTM at batch 1 (its R read again at every step, as nmt_seq2seq's
# encoder), timed at two sequence lengths so that the difference is R's re-reads alone
REREAD_HIDDEN = (256, 512, 724, 1024)  # R of 1, 4, 8 and 16 MiB
REREAD_SEQ = (16, 48)


def measure_reread(w, d, trials, out):
    """reread_Bps: the rate of R's re-reads, (48 - 16) x R / (t(48) - t(16)), the median over
    the R larger than this core's L2; an R within the L2 is printed beside it (the cost model
    prices those at mem_bandwidth_Bps, docs/cost.md). When it cannot be measured, why, in
    out["reread_error"]: --reread-only fails with it, a full run prints it and goes on."""
    # an R no larger than the L2 is re-read from it; when sysfs does not say, 2 MiB stands in
    l2 = private_cache_bytes(own_only=False) or 2 << 20
    out["reread"] = {}
    for h in REREAD_HIDDEN:
        t = {}
        for seq in REREAD_SEQ:
            path = lstm_chain(d, f"r{h}s{seq}", 1, hidden=h, seq=seq, batch=1)
            t[seq] = min(w.kernel_s(path, f"lstmr{h}s{seq}0", 10) for _ in range(trials))
        r_bytes = 16 * h * h
        extra = REREAD_SEQ[1] - REREAD_SEQ[0]
        if not t[REREAD_SEQ[1]] > t[REREAD_SEQ[0]]:
            out["reread_error"] = (f"the LSTM with R of {r_bytes >> 20} MiB took no longer at "
                                   f"{REREAD_SEQ[1]} steps than at {REREAD_SEQ[0]}: the machine "
                                   f"is too disturbed to measure reread_Bps")
            return
        out["reread"][f"{r_bytes / 2**20:.0f} MiB"] = {
            "r_bytes": r_bytes, "ms": {str(k): v * 1e3 for k, v in t.items()},
            "gbps": extra * r_bytes / (t[REREAD_SEQ[1]] - t[REREAD_SEQ[0]]) / 1e9,
            "beyond_l2": r_bytes > l2}
    beyond = [v["gbps"] for v in out["reread"].values() if v["beyond_l2"]]
    if not beyond:
        out["reread_error"] = (f"every R measured (at most 16 MiB) fits this core's {l2 >> 20} "
                               f"MiB L2: reread_Bps, the rate beyond it, is not measured here")
        return
    out["reread_gbps"] = statistics.median(beyond)


def print_reread(r):
    """The re-read rate's lines; when it could not be measured, why (the other figures of a
    full run stand without it: reread_Bps is optional in a cluster file)."""
    if "reread_error" in r:
        return print(f"reread_Bps not measured: {r['reread_error']}")
    for k, v in r["reread"].items():
        ms = ", ".join(f"{s} steps {t:.3f} ms" for s, t in v["ms"].items())
        where = "beyond the L2" if v["beyond_l2"] else "within the L2"
        print(f"LSTM batch 1, R {k:>6s} ({where}): {ms}: R re-read at {v['gbps']:6.1f} GB/s")
    print(f"=> reread_Bps {r['reread_gbps']:.1f} GB/s (the median beyond the L2; min over "
          f"{r['trials']} trials of 10 requests' mean)")


def measure_levels(w, d, trials, out, beside_model=None):
    """Each chain of LEVEL_CHAINS alone on cpu0 (its bytes over its time: the rate the level
    serves one core) and the DRAM chain beside its copy on cpu1; with `beside_model`, that
    model's stage alone on cpu0 and beside the DRAM chain, a Conv chain within the L2 and the
    L3 chain on cpu1 (beside())."""
    out["levels"], chains = {}, {}
    for name, make, nbytes in LEVEL_CHAINS:
        a = chains[name] = make(d, "a")
        t = min(fastest_s(w, [a], ["cpu0"], 5) for _ in range(trials))
        out["levels"][name] = {"ms": t * 1e3, "gbps": nbytes / t / 1e9}
    name, make, _ = LEVEL_CHAINS[1]
    out["dram_pair"] = beside(w, chains[name], make(d, "b"), trials, 5)
    if not beside_model:
        return
    m = inflated(beside_model)
    others = ((name, make(d, "c")),
              (CONV_L2[0], CONV_L2[1](d, "e")),
              (LEVEL_CHAINS[0][0], LEVEL_CHAINS[0][1](d, "f")))
    out["beside"] = {"model": beside_model}
    for oname, o in others:
        out["beside"][oname] = beside(w, m, o, trials, 10, stage=0)


IDLE_GAPS_S = (0, 0.010, 0.048, 0.150)


class Neighbour:
    """A tenant busy on cpu1 while the measured one waits, as in every round of several
    tenants: some other tenant runs while one waits (docs/calibrate.md, "Cold requests").
    A second worker runs CONV_L2's chain request after request until stop()."""

    def __init__(self, d):
        self.w, self.stopping, self.error = Worker(), threading.Event(), None
        self.w.ask({"op": "load", "models": [CONV_L2[1](d, "n")],
                    "devices": ["cpu1"], "threads": 1, "optimize": "all"})
        self.w.ask({"op": "run", "inputs": "random", "repeat": 2, "warmup": 1})
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        try:
            while not self.stopping.is_set():
                self.w.ask({"op": "run", "inputs": "random", "repeat": 2})
        except BaseException as e:  # Worker.ask exits on a worker's error: say so in stop()
            self.error = e

    def stop(self):
        self.stopping.set()
        self.t.join()
        self.w.close()
        if self.error is not None:
            sys.exit(f"measure_cpu.py: the neighbour on cpu1 stopped: {self.error}")


def measure_idle(w, model, trials, out, d=None):
    """`model` (inflated()) as one stage on cpu0: per trial and per gap of IDLE_GAPS_S, the
    median of 15 requests of one run, each after the device thread idled that long (the
    worker's "gap_s": the inputs are sent once, as in a round) after 2 back to back. The gaps
    alternate within a trial, so that the machine's drift hits them alike. With a folder `d`,
    the Neighbour runs on cpu1 throughout (--busy)."""
    if d is not None and len(os.sched_getaffinity(0)) < 2:
        sys.exit("measure_cpu.py: --busy needs a second CPU for the neighbour (cpu1)")
    w.ask({"op": "load", "models": [inflated(model)], "devices": ["cpu0"], "threads": 1,
           "optimize": "all"})
    n = Neighbour(d) if d is not None else None
    try:
        per = idle_trials(w, trials)
    finally:
        if n:
            n.stop()
    out["idle"] = {"model": model, "neighbour": CONV_L2[0] if n else None,
                   "ms": {f"{g * 1e3:g}": [x * 1e3 for x in v] for g, v in per.items()}}


def idle_trials(w, trials):
    """measure_idle's requests, in seconds by gap."""
    w.ask({"op": "run", "inputs": "random", "repeat": 5, "warmup": 3})
    per = {g: [] for g in IDLE_GAPS_S}
    for _ in range(trials):
        for g in IDLE_GAPS_S:
            t = w.ask({"op": "run", "inputs": "random", "repeat": 15, "warmup": 2, "gap_s": g})
            per[g].append(statistics.median(t["latency_s"]))
    return per


def print_idle(r):
    base = statistics.median(r["idle"]["ms"]["0"])
    for g, v in r["idle"]["ms"].items():
        m = statistics.median(v)
        print(f"{r['idle']['model']} after {g:>3s} ms idle: {m:7.3f} ms (trials "
              f"{', '.join(f'{x:.3f}' for x in v)}), {m / base:.2f} x back to back")
    nb = r["idle"].get("neighbour")
    print(f"(the neighbour {nb} ran on cpu1 throughout)" if nb else
          "(no neighbour: the machine otherwise idle)")
    print(f"(other processes kept {r['others_cpus']:.2f} CPUs busy meanwhile"
          + (", the neighbour one of them)" if nb else ")"))


def print_levels(r):
    for name, v in r["levels"].items():
        print(f"{name:36s} alone on cpu0 {v['ms']:7.2f} ms: {v['gbps']:6.1f} GB/s")
    p = r["dram_pair"]
    print(f"the DRAM chain beside its copy: {p['alone_ms']:.2f} -> {p['beside_ms']:.2f} ms, "
          f"slowdown {p['slowdown']:.2f} (trials "
          f"{', '.join(f'{x:.2f}' for x in p['slowdown_trials'])})")
    for oname, v in r.get("beside", {}).items():
        if oname == "model":
            continue
        print(f"{r['beside']['model']} beside {oname}: {v['alone_ms']:.2f} -> "
              f"{v['beside_ms']:.2f} ms, slowdown {v['slowdown']:.2f} (trials "
              f"{', '.join(f'{x:.2f}' for x in v['slowdown_trials'])})")
    print(f"(other processes kept {r['others_cpus']:.2f} CPUs busy meanwhile)")


def measure(trials, stages_only=False, contention_only=False, tile_only=False, llc_only=False,
            levels_only=False, beside_model=None, idle_model=None, busy=False, reread_only=False):
    d = tempfile.mkdtemp(prefix="placer-measure-")
    w = Worker()
    out = {"trials": trials, "matmul_gflops": {}, "conv_gflops": {}, "add_gbps": {}}
    try:
        if idle_model:
            before = cpu_ticks(w)
            measure_idle(w, idle_model, trials, out, d if busy else None)
            out["others_cpus"] = others_cpus(before, cpu_ticks(w))
            return out
        if tile_only:
            measure_tile(w, d, trials, out)
            return out
        if reread_only:
            measure_reread(w, d, trials, out)
            if "reread_error" in out:
                sys.exit(f"measure_cpu.py: {out['reread_error']}")
            return out
        if llc_only:
            measure_llc(w, d, trials, out)
            return out
        if levels_only:
            before = cpu_ticks(w)
            measure_levels(w, d, trials, out, beside_model)
            out["others_cpus"] = others_cpus(before, cpu_ticks(w))
            return out
        if contention_only:
            before = cpu_ticks(w)
            measure_contention(w, d, trials, out)
            measure_stall(w, d, trials, out)
            out["others_cpus"] = others_cpus(before, cpu_ticks(w))
            return out
        measure_stages(w, d, trials, out)
        if stages_only:
            return out
        # a BERT-base feed-forward layer (128 tokens), rnnlm's decoder (the zoo's largest
        # MatMul: 35 x 20 tokens, 650 -> 10,000) and a square one
        for m, k, n in ((128, 768, 3072), (700, 650, 10000), (1024, 1024, 1024)):
            path, flops = matmul_model(d, m, k, n)
            out["matmul_gflops"][f"{m}x{k}x{n}"] = best_rate(w, path, "mm", flops, trials,
                                                             3) / 1e9
        for c, hw in ((64, 56), (256, 14)):
            path, flops = conv_model(d, c, hw)
            out["conv_gflops"][f"{c}x{hw}"] = best_rate(w, path, "conv", flops, trials, 5) / 1e9
        # bytes of ONE tensor (the Add touches three): in cache (L2/L3), in L3, at L3's size,
        # in DRAM
        for mib in (0.5, 4, 32, 256):
            n = int(mib * 2**20 / 4)
            path, nbytes = add_model(d, n)
            repeat = 20 if mib < 32 else 5
            out["add_gbps"][f"{mib:g} MiB"] = best_rate(w, path, "add", nbytes, trials,
                                                        repeat) / 1e9
        measure_reread(w, d, trials, out)
        k = 401
        short, long_ = chain_model(d, 1), chain_model(d, k)
        per_op = [(lo - sh) / (k - 1) for lo, sh in zip(w.latencies_s(long_, 50, trials),
                                                           w.latencies_s(short, 50, trials))]
        out["overhead_us"] = statistics.median(per_op) * 1e6
        out["overhead_trials_us"] = [x * 1e6 for x in per_op]
    finally:
        w.close()
        shutil.rmtree(d, ignore_errors=True)
    if stages_only:
        return out
    out["peak_gflops"] = max(out["matmul_gflops"].values())
    out["bandwidth_gbps"] = max(out["add_gbps"].values())
    return out


def print_contention(r):
    for name, v in r["stall"].items():
        print(f"{name:62s} alone {v['alone_ms']:6.2f} ms, beside {v['beside_ms']:6.2f} ms: "
              f"slowdown {v['slowdown']:.3f}, {v['stall_Bps'] / 1e9:7.1f} GB/s")
    print(f"=> host_mem_stall_Bps {r['host_mem_stall_Bps'] / 1e9:.0f} GB/s (the median)")
    for name, v in r["contention"].items():
        print(f"{name:32s} alone {v['alone_ms']:7.2f} ms, both at once {v['beside_ms']:7.2f} ms: "
              f"slowdown {v['slowdown']:.3f} (per trial: "
              f"{', '.join(f'{x:.3f}' for x in v['slowdown_trials'])})")
    print(f"=> private_cache_bytes {r['private_cache_bytes']} (this core's L2), "
          f"host_mem_bandwidth_Bps {r['host_mem_share']:.2f} x mem_bandwidth_Bps "
          f"(from the beyond-L2 Add chain's slowdown; fastest of {r['trials']} trials; other "
          f"processes kept {r['others_cpus']:.2f} CPUs busy meanwhile)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--stages-only", action="store_true")
    ap.add_argument("--contention-only", action="store_true")
    ap.add_argument("--tile-only", action="store_true")
    ap.add_argument("--llc-only", action="store_true")
    ap.add_argument("--levels-only", action="store_true")
    ap.add_argument("--reread-only", action="store_true")
    ap.add_argument("--beside", metavar="MODEL")
    ap.add_argument("--idle", metavar="MODEL")
    ap.add_argument("--busy", action="store_true")
    a = ap.parse_args()
    if a.beside and not a.levels_only:
        ap.error("--beside goes with --levels-only")
    if a.busy and not a.idle:
        ap.error("--busy goes with --idle")
    r = measure(a.trials, a.stages_only, a.contention_only, a.tile_only, a.llc_only,
                a.levels_only, a.beside, a.idle, a.busy, a.reread_only)
    if a.json:
        print(json.dumps(r, indent=1))
        return
    if a.idle:
        return print_idle(r)
    if a.levels_only:
        return print_levels(r)
    if a.tile_only:
        for n, ms in r["tile_ms"].items():
            print(f"MatMul 2708x2708 by 2708x{n:<3s} {ms:7.3f} ms")
        print(f"=> gemm_tile_columns {r['gemm_tile_columns']} (the time steps up past it; min "
              f"over {a.trials} trials of 5 requests' mean)")
        return
    if a.contention_only:
        return print_contention(r)
    if a.reread_only:
        return print_reread(r)
    if a.llc_only:
        for name, g in r["stream_gflops"].items():
            print(f"MatMul {name:22s} by x16: {g:6.1f} GFLOP/s")
        for name, t in r["gcn_layer_ms"].items():
            print(f"gcn_cora's first layer, then {name:8s}: X @ W {t['mm1']:6.3f} ms"
                  + (f", A @ H {t['mm2']:6.3f} ms" if "mm2" in t else ""))
        return
    for size, v in r["stage_overhead_us"].items():
        print(f"per-stage overhead, {size:>9s} tensors  {v:7.1f} us  "
              f"hand-off between two threads {r['handoff_us'][size]:7.1f} us")
    for width, v in r["stage_tensors_us"].items():
        print(f"per-stage overhead, {width:>2} one-element tensors in and {width:>2} out  "
              f"{v:7.1f} us")
    print(f"=> stage_overhead_s {r['stage_fixed_us']:.1f} us, stage_tensor_s "
          f"{r['stage_tensor_us']:.2f} us (least squares of the above on 2 x tensors, residuals "
          f"{', '.join(f'{e:+.1f}' for e in r['stage_fit_residuals_us'])} us), stage_copy_Bps "
          f"{r['stage_copy_gbps']:.1f} GB/s (2 MiB in and out of a 1 MiB stage over the cost of "
          f"a 4 B one)")
    if a.stages_only:
        return
    for n, v in r["matmul_gflops"].items():
        print(f"MatMul {n:25s} {v:7.1f} GFLOP/s (W an initializer)")
    for k, v in r["conv_gflops"].items():
        print(f"Conv 3x3 {k:24s} {v:7.1f} GFLOP/s")
    for k, v in r["add_gbps"].items():
        print(f"Add, one tensor {k:17s} {v:7.1f} GB/s (3 tensors' bytes / kernel time)")
    print_reread(r)
    print(f"per-node overhead (chain of Relu)  {r['overhead_us']:7.2f} us  "
          f"(trials: {', '.join(f'{x:.2f}' for x in r['overhead_trials_us'])})")
    print(f"=> peak_flops_per_s fp32 {r['peak_gflops']:.1f} GFLOP/s, "
          f"mem_bandwidth_Bps {r['bandwidth_gbps']:.1f} GB/s, "
          f"launch_overhead_s {r['overhead_us']:.1f} us (min over {a.trials} trials for peaks, "
          f"median for the overhead)")


if __name__ == "__main__":
    main()
