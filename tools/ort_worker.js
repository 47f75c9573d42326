#!/usr/bin/env node
// ort_worker.js: placer's persistent onnxruntime worker (docs/runtime.md). placer starts it
// once and talks to it over stdin/stdout, one JSON message per line each way:
//
//   (on start)                                -> {"ok":true,"ready":true,"ort":"1.22.0"}
//   {"op":"load","id":1,"models":[paths],"devices":[names]?,"tenants":[ints]?,"threads":1,
//    "stage_threads":[ints]?,"optimize":"all"|"disabled"}
//                                             -> {"ok":true,"id":1,"loads":N,"load_s":..,"stages":[..]}
//   {"op":"run","id":2,"inputs":"random"|{name:{dims,dtype,data}},"repeat":R,"warmup":W,
//    "seed":S,"int_high":H,"gap_s":G?}        -> {"ok":true,"id":2,"latency_s":[..R],
//                                                 "stage_s":[[..stages] x R],
//                                                 "start_s":[[..] x R],"end_s":[[..] x R],
//                                                 "concurrent":bool,"outputs":{..}}
//   {"op":"compare","id":3,"reference":path,"stages":[paths],"seed":S,"int_high":H,"threads":1,
//    "optimize":..}                           -> {"ok":true,"id":3,"reference_s":..,"stages_s":..,
//                                                 "stage_s":[..],
//                                                 "outputs":{name:{max_rel,max_abs,finite,dims}}}
//   {"op":"profile","id":4,"model":path,"repeat":R,"warmup":W,"seed":S,"int_high":H,"threads":1,
//    "optimize":"all"|"disabled" (default "disabled": the nodes are the ONNX file's),
//    "ep":"cpu"|"cuda" (default "cpu": the execution provider asked for)}
//                                             -> {"ok":true,"id":4,"runs":R,"run_s":[..R],
//                                                 "nodes":[{name,node_index,op_type,nested,mean_s,count,
//                                                           provider}]}
//     provider is the one onnxruntime ran the node on ("CPUExecutionProvider",
//     "CUDAExecutionProvider"): with "cuda", nodes it has no CUDA kernel for still run on the
//     CPU, and placer leaves those out of a GPU profile.
//   {"op":"run_files","id":5,"dir":D,"inputs":{name:{file,dims,dtype}},"seed":S,"int_high":H}
//                                             -> {"ok":true,"id":5,"run_s":..,
//                                                 "outputs":{name:{file,dims,dtype,bytes}},
//                                                 "made":{name:{file,dims,dtype,bytes}}}
//     One request of the loaded stages (one after the other, not on device threads), each
//     input read from a raw file (the tensor's bytes, little-endian, row-major, as a typed
//     array holds them); inputs not given are made as "run" makes them (seed, int_high) and
//     written to D too ("made"), so a caller can give the same values to another model.
//     Every output is written raw to D/o<k>.bin, made inputs to D/i<k>.bin; run_s is the time
//     inside session.run only (placer serverless --run, docs/serverless.md, "Running the slices for real").
//   {"op":"stats"}                            -> {"ok":true,"loads":N,"runs":M}
//   {"op":"quit"}                             -> {"ok":true}, then exits
//   any failure                               -> {"ok":false,"id":..,"error":"..."}
//
// While a request is under way, every step of it (a model loaded, one inference request
// done, a trace read) is announced with {"id":..,"progress":"request 3 of 12"} before the
// reply: placer gives each step, not the whole request, its deadline, so a long run of many
// requests is not taken for a stall and a stalled one is found out within one step.
//
// Without "devices", stages run one after the other on the main thread, in the order given.
// With "devices" (one name per stage), every device gets a worker thread of its own holding
// its stages' sessions, and a stage runs as soon as its inputs have arrived: onnxruntime-node
// runs session.run on the calling thread, so threads are what lets two stages overlap.
//
// With "tenants" (one integer per stage; all 0 without it), the stages are those of several
// independent models loaded at once (placer multi --run, docs/multi.md): a stage's inputs are
// fed only from earlier stages of its own tenant, each tenant's random inputs come from a
// generator of its own seeded with "seed" (so a tenant gets the inputs it would get alone), and
// a request starts every tenant at once. Tensor names of different tenants may be the same
// (the same model given twice is two tenants): inside the worker a tensor is known by its key,
// the name for tenant 0 and "T\u0001name" for tenant T, and each output in a reply carries
// its "name" and "tenant".
// Nothing but replies goes to stdout; diagnostics go to stderr. The worker exits when stdin
// closes, so it never outlives placer.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');
const {isMainThread, Worker, MessageChannel, parentPort, workerData} = require('worker_threads');

const modulesDir = isMainThread
  ? process.argv[2] || process.env.PLACER_ORT_MODULES || path.join(__dirname, '..', 'build', 'npm', 'node_modules')
  : workerData.modules;
let ort;
try {
  ort = require(path.resolve(modulesDir, 'onnxruntime-node'));
} catch (e) {
  if (!isMainThread) throw e; // the main thread sees it as the device thread's 'error'
  reply({ok: false, error: `onnxruntime-node is not installed in ${modulesDir} (run \`make deps\`): ${e.message}`});
  process.exit(3);
}

const FIRST = 8; // output values echoed back for a look
let stages = []; // [{path, tenant, session, inputs: [{name,type,shape}], outputs: [names]}]
let loads = 0, runs = 0, quitting = false;

// A tensor's key: its name within the tenant's stages (see the top of the file). Tenant 0's
// keys are the names themselves, so a load without tenants works exactly as before.
function tkey(tenant, name) {
  return tenant ? `${tenant}\u0001${name}` : name;
}

function unkey(k) {
  const i = k.indexOf('\u0001');
  return i < 0 ? {tenant: 0, name: k} : {tenant: Number(k.slice(0, i)), name: k.slice(i + 1)};
}

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// One step of request `id` is done (see the top of the file); nothing for a device thread.
function progress(id, what) {
  if (isMainThread && id !== undefined) reply({id, progress: what});
}

// A small seeded generator (mulberry32): the same seed gives the same inputs in every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROVIDERS = ['cpu', 'cuda'];

function sessionOptions(msg) {
  const ep = msg.ep === undefined ? 'cpu' : msg.ep;
  if (!PROVIDERS.includes(ep)) throw new Error(`unknown execution provider '${ep}' (cpu or cuda)`);
  return {
    intraOpNumThreads: msg.threads || 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: msg.optimize === 'disabled' ? 'disabled' : 'all',
    executionProviders: [ep],
  };
}

// Stage i's session options: the load's, with the stage's own intra-op threads when
// "stage_threads" gives them (a stage of a device with that many cores, docs/runtime.md).
function stageOptions(msg, i) {
  const o = sessionOptions(msg), t = msg.stage_threads && msg.stage_threads[i];
  return t ? Object.assign(o, {intraOpNumThreads: t}) : o;
}

// One stage's session.run; a failure names the stage, and its tenant when there are several.
async function runStage(s, given) {
  try {
    return await s.session.run(given);
  } catch (e) {
    const who = s.tenant === undefined ? '' : ` of tenant ${s.tenant}`;
    throw new Error(`stage ${s.index}${who} (${s.path}): ${e && e.message ? e.message : e}`);
  }
}

// onnxruntime-node's words for a model input or output of a type it has no tensors for, with
// the type's name (its number is the ONNX TensorProto.DataType).
const UNSUPPORTED = {16: 'bfloat16', 17: 'float8e4m3fn', 18: 'float8e4m3fnuz', 19: 'float8e5m2', 20: 'float8e5m2fnuz',
                     21: 'uint4', 22: 'int4'};

async function createSession(p, opts) {
  try {
    return await ort.InferenceSession.create(p, opts);
  } catch (e) {
    const m = /Unsupported data type: (\d+)/.exec(String(e && e.message));
    if (!m || !UNSUPPORTED[m[1]]) throw e;
    throw new Error(`${e.message} (type ${m[1]} is ${UNSUPPORTED[m[1]]}: onnxruntime-node has no ${UNSUPPORTED[m[1]]} tensors, ` +
                    'so it cannot load a model with an input or output of that type; docs/runtime.md, "random inputs")');
  }
}

async function openStage(p, opts) {
  const session = await createSession(p, opts);
  loads++;
  const meta = session.inputMetadata || [];
  const inputs = session.inputNames.map((name, i) => ({name, type: meta[i] && meta[i].type, shape: meta[i] && meta[i].shape}));
  return {path: p, session, inputs, outputs: session.outputNames};
}

async function openAll(paths, opts, id) {
  const out = [];
  for (const p of paths) {
    const o = typeof opts === 'function' ? opts(out.length) : opts;
    out.push(Object.assign(await openStage(p, o), {index: out.length}));
    progress(id, `model ${out.length} of ${paths.length} loaded`);
  }
  return out;
}

// ---- device threads ("load" with "devices") ----
//
// Every device thread holds its stages' sessions. Tensors go from thread to thread directly,
// over one MessageChannel per pair of devices that exchange data, as {type, dims, data}: the
// typed array's buffer is handed over without a copy to the last receiver when nothing else on
// the sending side needs it, and copied to the others. A tensor read by a later stage of the
// same device stays in that thread. The main thread is one more receiver, of the request's
// outputs, over the thread's parentPort; it sends each thread its external inputs once per
// "run" op, starts the requests and collects the stages' times.

function pack(t) {
  return {type: t.type, dims: t.dims, data: t.data};
}

function unpack(o) {
  return new ort.Tensor(o.type, o.data, o.dims);
}

// Posts a tensor; hands its buffer over when `handOver`, which onnxruntime's output buffers
// allow (a buffer that cannot be handed over, or that the typed array shares with other
// data, is copied instead).
function postTensor(port, m, handOver) {
  const buf = m.tensor.data.buffer; // none for a string tensor (an Array): copied
  if (handOver && buf && buf.byteLength === m.tensor.data.byteLength) {
    try {
      return port.postMessage(m, [buf]);
    } catch (e) {
      // not transferable: copy
    }
  }
  port.postMessage(m);
}

// The body of a device thread: its stages run in the order given, each as soon as every input
// is in `values`. Messages are handled one at a time, so a tensor that arrives while a stage
// runs waits, as it would on a device that is busy. A tensor of the next request can arrive
// before the thread has heard of that request (its sender was quicker than the main thread's
// "run"): it is kept in `early` until then. The external inputs come once per "run" op
// ("feeds") and are kept as tensors for every request of it.
function deviceThread() {
  let mine = [], feeds = new Map(), values = new Map(), next = 0, req = -1, early = new Map();
  let times = []; // this request's {stage, start, end}, sent to the main thread in one message
  const post = (m) => parentPort.postMessage(m);
  async function pump() {
    while (next < mine.length && mine[next].inputs.every((i) => values.has(tkey(mine[next].tenant, i.name)))) {
      const s = mine[next], given = {};
      for (const i of s.inputs) given[i.name] = values.get(tkey(s.tenant, i.name));
      const start = process.hrtime.bigint();
      const out = await runStage(s, given);
      const end = process.hrtime.bigint();
      next++;
      for (const o of s.outputs) {
        const to = s.to.get(o) || [], keep = s.keep.has(o), k = tkey(s.tenant, o);
        if (keep) values.set(k, out[o]);
        to.forEach((port, j) => postTensor(port, {op: 'tensor', req, name: k, tensor: pack(out[o])}, j === to.length - 1 && !keep));
      }
      // The times go to the main thread once, with the thread's last stage, after the
      // outputs: a message per stage would wake the main thread once per stage, and on a
      // machine with a core per device thread it can only run by taking one from them.
      times.push({stage: s.index, start, end});
      if (next === mine.length) post({op: 'done', req, stages: times}), (times = []);
    }
  }
  async function handleThread(m) {
    if (m.op === 'load') {
      mine = [];
      for (const st of m.stages) mine.push(Object.assign(await openStage(st.path, st.opts), {index: st.index, tenant: st.tenant}));
      post({op: 'loaded', loads, stages: mine.map((x) => ({index: x.index, inputs: x.inputs, outputs: x.outputs}))});
    } else if (m.op === 'wire') {
      for (const port of m.inPorts) port.on('message', receive);
      const ports = Object.assign({}, m.outPorts, {main: parentPort});
      mine.forEach((x, k) => {
        const w = m.stages[k];
        x.keep = new Set(w.keep);
        x.to = new Map(Object.entries(w.to).map(([o, peers]) => [o, peers.map((p) => ports[p])]));
      });
    } else if (m.op === 'feeds') {
      feeds = new Map(Object.entries(m.feeds).map(([name, t]) => [name, unpack(t)]));
    } else if (m.op === 'run') {
      req = m.req, next = 0, values = new Map(feeds), times = [];
      for (const [name, t] of early.get(req) || []) values.set(name, unpack(t));
      early = new Map();
      await pump();
    } else if (m.op === 'tensor') {
      if (m.req > req) {
        if (!early.has(m.req)) early.set(m.req, []);
        return early.get(m.req).push([m.name, m.tensor]);
      }
      if (m.req !== req) return; // left over from a request that failed
      values.set(m.name, unpack(m.tensor));
      await pump();
    } else if (m.op === 'release') {
      for (const x of mine) await x.session.release();
      mine = [], feeds = new Map();
      post({op: 'released'});
    }
  }
  let chain = Promise.resolve();
  function receive(m) {
    chain = chain.then(() => handleThread(m)).catch((e) => post({op: 'error', req, error: String(e && e.message ? e.message : e)}));
  }
  parentPort.on('message', receive);
}

let devices = null; // with "devices": [{name, worker, stages: [indices into stages], waiting}]
let current = null; // the request in flight on the device threads
let reqSeq = 0;
let finals = new Set(); // the loaded stages' outputs a request hands back (finalOutputs)

// A device thread that dies takes the worker with it: placer sees the worker die and fails the
// request (a later request starts a fresh worker and loads the stages again), so nothing is
// left half-loaded or orphaned.
function threadDied(d, why) {
  process.stderr.write(`ort_worker: device thread '${d.name}' ${why}\n`);
  process.exit(4);
}

function startThread(name) {
  const d = {name, stages: [], waiting: null, ending: false};
  d.worker = new Worker(__filename, {workerData: {modules: modulesDir}});
  d.worker.on('message', (m) => threadMessage(d, m));
  d.worker.on('error', (e) => threadDied(d, `failed: ${e && e.message ? e.message : e}`));
  d.worker.on('exit', (code) => d.ending || threadDied(d, `exited with code ${code}`));
  return d;
}

// Sends m to d's thread and waits for its answer of kind `want` (load and release).
function ask(d, m, want) {
  return new Promise((resolve, reject) => {
    d.waiting = {want, resolve, reject};
    d.worker.postMessage(m);
  });
}

function threadMessage(d, m) {
  if (m.op === 'error' && d.waiting) {
    const w = d.waiting;
    d.waiting = null;
    return w.reject(new Error(`device '${d.name}': ${m.error}`));
  }
  if (d.waiting && m.op === d.waiting.want) {
    const w = d.waiting;
    d.waiting = null;
    return w.resolve(m);
  }
  if (!current || m.req !== current.req) return; // a late message of a request that failed
  if (m.op === 'error') return current.reject(new Error(`device '${d.name}': ${m.error}`));
  // An output of the request stays packed: only the last request's are summarised, and
  // summarize() reads nothing but data, dims and type.
  if (m.op === 'tensor') current.values[m.name] = m.tensor;
  if (m.op === 'done') stageDone(m);
}

// A device thread's stages of the request, all run.
function stageDone(m) {
  const c = current;
  for (const t of m.stages) c.start[t.stage] = t.start, c.end[t.stage] = t.end;
  if ((c.remaining -= m.stages.length) > 0) return;
  current = null;
  const rel = (t) => Number(t - c.t0) / 1e9;
  c.resolve({latency: rel(process.hrtime.bigint()), times: c.start.map((t, i) => Number(c.end[i] - t) / 1e9),
             start: c.start.map(rel), end: c.end.map(rel), values: c.values});
}

// The outputs a request hands back, by key: each tenant's last stage's, and any that no stage
// of its tenant reads.
function finalOutputs(set) {
  const read = new Set(), last = new Map();
  for (const s of set) s.inputs.forEach((i) => read.add(tkey(s.tenant, i.name))), last.set(s.tenant || 0, s);
  const out = new Set();
  for (const s of last.values()) s.outputs.forEach((o) => out.add(tkey(s.tenant, o)));
  for (const s of set) s.outputs.map((o) => tkey(s.tenant, o)).filter((k) => !read.has(k)).forEach((k) => out.add(k));
  return out;
}

// After the threads have loaded: per stage, which outputs go to which other devices (by index)
// and to 'main' (the request's outputs), and which stay for a later stage of the same device;
// and one channel per pair of devices that exchange tensors.
function wire(stages, devices, final) {
  const made = new Map(); // tensor key -> the first stage making it
  stages.forEach((s, i) => s.outputs.forEach((o) => made.has(tkey(s.tenant, o)) || made.set(tkey(s.tenant, o), i)));
  stages.forEach((s, i) => s.inputs.forEach((x) => {
    const k = tkey(s.tenant, x.name);
    if (made.has(k) && made.get(k) >= i)
      throw new Error(`stage ${i} (${s.path}) reads '${x.name}', made by stage ${made.get(k)}: stages must come in an order where each reads only earlier ones`);
  }));
  // whether a stage of device d after `after` reads the tensor of key k
  const reads = (d, k, after) => d.stages.some((j) => j > after && stages[j].inputs.some((x) => tkey(stages[j].tenant, x.name) === k));
  const plans = devices.map((d) => ({inPorts: [], outPorts: {}, stages: d.stages.map((i) => {
    const to = {}, t = stages[i].tenant;
    for (const o of stages[i].outputs) {
      const peers = devices.map((e, b) => b).filter((b) => devices[b] !== d && reads(devices[b], tkey(t, o), -1));
      if (final.has(tkey(t, o))) peers.push('main');
      if (peers.length) to[o] = peers;
    }
    return {to, keep: stages[i].outputs.filter((o) => reads(d, tkey(t, o), i))};
  })}));
  devices.forEach((d, a) => devices.forEach((e, b) => {
    if (a === b || !plans[a].stages.some((st) => Object.values(st.to).some((p) => p.includes(b)))) return;
    const {port1, port2} = new MessageChannel();
    plans[a].outPorts[b] = port1, plans[b].inPorts.push(port2);
  }));
  devices.forEach((d, a) => {
    const p = plans[a];
    d.worker.postMessage(Object.assign({op: 'wire'}, p), [...Object.values(p.outPorts), ...p.inPorts]);
  });
}

async function loadThreads(paths, names, tenants, opts, id) {
  const byName = new Map();
  paths.forEach((p, i) => {
    if (typeof names[i] !== 'string' || !names[i]) throw new Error(`"devices"[${i}] must be a device name`);
    if (!byName.has(names[i])) byName.set(names[i], startThread(names[i]));
    byName.get(names[i]).stages.push(i);
  });
  const next = [...byName.values()], set = paths.map((p, i) => ({path: p, device: names[i], tenant: tenants && tenants[i]}));
  try {
    let done = 0;
    const loadOn = (d) => ask(d, {op: 'load', stages: d.stages.map((i) => ({index: i, path: paths[i], tenant: tenants && tenants[i], opts: opts(i)}))}, 'loaded')
      .then((a) => (progress(id, `device ${d.name} loaded (${++done} of ${next.length})`), a));
    const answers = await Promise.all(next.map(loadOn));
    answers.forEach((a) => {
      loads += a.loads;
      for (const st of a.stages) Object.assign(set[st.index], {inputs: st.inputs, outputs: st.outputs});
    });
  } catch (e) {
    await endThreads(next);
    throw e;
  }
  return {set, threads: next};
}

async function endThreads(list) {
  for (const d of list) {
    d.ending = true;
    await d.worker.terminate();
  }
}

async function unload() {
  for (const s of stages) if (s.session) await s.session.release();
  if (devices) {
    await Promise.all(devices.map((d) => ask(d, {op: 'release'}, 'released')));
    await endThreads(devices);
  }
  stages = [], devices = null;
}

async function load(msg) {
  if (!Array.isArray(msg.models) || !msg.models.length) throw new Error('"models" must be a non-empty list of paths');
  const threaded = msg.devices !== undefined, tenants = msg.tenants;
  if (threaded && (!Array.isArray(msg.devices) || msg.devices.length !== msg.models.length))
    throw new Error('"devices" must list one device name per model');
  if (tenants !== undefined && (!Array.isArray(tenants) || tenants.length !== msg.models.length ||
                                !tenants.every((t) => Number.isInteger(t) && t >= 0)))
    throw new Error('"tenants" must list one integer >= 0 per model');
  const st = msg.stage_threads;
  if (st !== undefined && (!Array.isArray(st) || st.length !== msg.models.length || !st.every((t) => Number.isInteger(t) && t >= 1)))
    throw new Error('"stage_threads" must list one integer >= 1 per model');
  const t0 = process.hrtime.bigint();
  let next, threads = null;
  const opts = (i) => stageOptions(msg, i);
  if (threaded) ({set: next, threads} = await loadThreads(msg.models, msg.devices, tenants, opts, msg.id));
  else next = (await openAll(msg.models, opts, msg.id)).map((s, i) => Object.assign(s, {tenant: tenants && tenants[i]}));
  const final = finalOutputs(next);
  try {
    if (threads) wire(next, threads, final);
  } catch (e) {
    await endThreads(threads);
    throw e;
  }
  await unload();
  stages = next, devices = threads, finals = final;
  const load_s = Number(process.hrtime.bigint() - t0) / 1e9;
  return {loads, load_s, concurrent: threaded,
          stages: stages.map((s) => ({path: s.path, device: s.device, tenant: s.tenant || 0, inputs: s.inputs, outputs: s.outputs}))};
}

// Before the requests of one "run" op: each device thread gets the external inputs its stages
// read, once (a request then carries only its number).
function sendFeeds(feeds) {
  for (const d of devices) {
    const mine = {};
    for (const i of d.stages)
      for (const inp of stages[i].inputs) {
        const k = tkey(stages[i].tenant, inp.name);
        if (feeds[k]) mine[k] = pack(feeds[k]);
      }
    d.worker.postMessage({op: 'feeds', feeds: mine});
  }
}

// One request over the device threads, on the inputs sendFeeds sent.
function runThreads() {
  return new Promise((resolve, reject) => {
    current = {req: ++reqSeq, remaining: stages.length, start: [], end: [], values: {}, t0: process.hrtime.bigint(), resolve, reject};
    for (const d of devices) d.worker.postMessage({op: 'run', req: current.req});
  }).finally(() => (current = null));
}

// Symbolic or unknown dims become 1.
function concreteDims(shape) {
  return (shape || []).map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
}

// The typed array of each numeric type onnxruntime-node takes. float16 is a Uint16Array of
// IEEE half-precision bits (onnxruntime-node 1.22; Node 20 has no Float16Array): values go in
// through toHalf and come out through fromHalf. bfloat16 has no entry: onnxruntime-node has no
// bfloat16 tensors and refuses to load a model with such an input or output (createSession).
const ARRAYS = {float32: Float32Array, float64: Float64Array, float16: Uint16Array, int32: Int32Array,
                int64: BigInt64Array, uint64: BigUint64Array, int8: Int8Array, uint8: Uint8Array,
                bool: Uint8Array, int16: Int16Array, uint16: Uint16Array, uint32: Uint32Array};

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

// x as the bits of the nearest IEEE half (ties to even), through float32: the values made here
// are in [0, 1), but a given input may be anything, so overflow, subnormals, infinities and
// NaN are kept as a half has them.
function toHalf(x) {
  f32[0] = x;
  const b = u32[0], sign = (b >>> 16) & 0x8000, exp = (b >>> 23) & 0xff, mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 112; // the half's biased exponent (127 - 15)
  if (e >= 0x1f) return sign | 0x7c00;
  const full = e > 0 ? mant : mant | 0x800000, shift = e > 0 ? 13 : 14 - e;
  if (shift > 24) return sign; // below half the smallest subnormal
  let h = e > 0 ? (e << 10) | (mant >>> 13) : full >>> shift;
  const rem = full & ((1 << shift) - 1), half = 1 << (shift - 1);
  if (rem > half || (rem === half && (h & 1))) h++; // a carry into the exponent is right
  return sign | h;
}

function fromHalf(h) {
  const e = (h >>> 10) & 0x1f, m = h & 0x3ff, s = h & 0x8000 ? -1 : 1;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (e ? (1 + m / 1024) * 2 ** (e - 15) : m * 2 ** -24);
}

// Element i of a tensor as a number (float16 decoded from its bits).
function valueAt(t, i) {
  return t.type === 'float16' ? fromHalf(t.data[i]) : Number(t.data[i]);
}

function randomTensor(input, next, intHigh) {
  const type = input.type || 'float32';
  const dims = concreteDims(input.shape);
  const n = dims.reduce((a, b) => a * b, 1);
  const Arr = ARRAYS[type];
  if (!Arr) throw new Error(`input '${input.name}': cannot make random values of type ${type}`);
  const data = new Arr(n);
  for (let i = 0; i < n; i++) {
    if (type === 'float32' || type === 'float64') data[i] = next();
    else if (type === 'float16') data[i] = toHalf(next());
    else if (type === 'int64' || type === 'uint64') data[i] = BigInt(Math.floor(next() * intHigh));
    else if (type === 'bool') data[i] = next() < 0.5 ? 0 : 1;
    else data[i] = Math.floor(next() * intHigh);
  }
  return new ort.Tensor(type, data, dims);
}

function givenTensor(name, v) {
  const type = v.dtype || 'float32';
  const Arr = ARRAYS[type];
  if (!Arr || !Array.isArray(v.dims) || !Array.isArray(v.data)) throw new Error(`input '${name}': needs dims, dtype and data`);
  const data = type === 'int64' || type === 'uint64' ? Arr.from(v.data.map((x) => BigInt(x)))
    : type === 'float16' ? Arr.from(v.data.map(toHalf)) : Arr.from(v.data);
  return new ort.Tensor(type, data, v.dims);
}

// The request's external inputs, by key: every stage input that no earlier stage of its tenant
// produces. Each tenant has a generator of its own, seeded alike, so a tenant's inputs are
// those it would get loaded alone.
function makeFeeds(msg, set = stages) {
  const gens = new Map();
  const intHigh = msg.int_high > 0 ? msg.int_high : 2;
  const produced = new Set(), feeds = {};
  for (const s of set) {
    const t = s.tenant || 0;
    if (!gens.has(t)) gens.set(t, rng(msg.seed || 1));
    for (const inp of s.inputs) {
      const k = tkey(t, inp.name);
      if (produced.has(k) || feeds[k]) continue;
      const given = msg.inputs && typeof msg.inputs === 'object' ? msg.inputs[inp.name] : undefined;
      feeds[k] = given ? givenTensor(inp.name, given) : randomTensor(inp, gens.get(t), intHigh);
    }
    s.outputs.forEach((o) => produced.add(tkey(t, o)));
  }
  return feeds;
}

async function runOnce(feeds, set = stages) {
  if (set === stages && devices) return runThreads();
  const values = Object.assign({}, feeds), times = [], start = [], end = [];
  const t0 = process.hrtime.bigint(), rel = (t) => Number(t - t0) / 1e9;
  for (const s of set) {
    const mine = {};
    for (const inp of s.inputs) {
      const k = tkey(s.tenant, inp.name);
      if (!values[k]) throw new Error(`${s.path}: input '${inp.name}' is made by no earlier stage`);
      mine[inp.name] = values[k];
    }
    const ts = process.hrtime.bigint();
    const out = await runStage(s, mine);
    const te = process.hrtime.bigint();
    times.push(Number(te - ts) / 1e9), start.push(rel(ts)), end.push(rel(te));
    for (const o of Object.keys(out)) values[tkey(s.tenant, o)] = out[o];
  }
  return {latency: rel(process.hrtime.bigint()), times, start, end, values};
}

function summarize(t) {
  let sum = 0, finite = true;
  const first = [];
  for (let i = 0; i < t.data.length; i++) {
    const x = valueAt(t, i);
    if (!Number.isFinite(x)) finite = false;
    else sum += x;
    if (i < FIRST) first.push(Number.isFinite(x) ? x : String(x));
  }
  return {dims: t.dims, dtype: t.type, first, checksum: sum, finite};
}

async function run(msg) {
  if (!stages.length) throw new Error('no model is loaded (send "load" first)');
  const repeat = msg.repeat > 0 ? msg.repeat : 1, warmup = msg.warmup > 0 ? msg.warmup : 0;
  // gap_s: each timed request after that long idle, as a tenant waits for its round's others
  // (tools/measure_cpu.py --idle); the inputs stay where the first request found them
  const gap = msg.gap_s === undefined ? 0 : msg.gap_s;
  if (!(typeof gap === 'number' && gap >= 0 && gap <= 10)) throw new Error('"gap_s" must be a number of seconds in [0, 10]');
  const feeds = makeFeeds(msg);
  if (devices) sendFeeds(feeds);
  for (let i = 0; i < warmup; i++) {
    await runOnce(feeds);
    progress(msg.id, `warm-up request ${i + 1} of ${warmup}`);
  }
  const latency_s = [], stage_s = [], start_s = [], end_s = [];
  let last;
  for (let i = 0; i < repeat; i++) {
    if (gap > 0) await new Promise((r) => setTimeout(r, gap * 1000));
    last = await runOnce(feeds);
    latency_s.push(last.latency);
    stage_s.push(last.times), start_s.push(last.start), end_s.push(last.end);
    runs++;
    progress(msg.id, `timed request ${i + 1} of ${repeat}`);
  }
  const outputs = {};
  for (const k of finals) outputs[k] = Object.assign(summarize(last.values[k]), unkey(k));
  return {latency_s, stage_s, start_s, end_s, concurrent: devices !== null, outputs};
}

// ---- "run_files": tensors as raw files (see the top of the file) ----

function fileTensor(name, v) {
  const type = v && v.dtype, Arr = ARRAYS[type];
  if (!Arr || typeof v.file !== 'string' || !Array.isArray(v.dims))
    throw new Error(`input '${name}': needs file, dims and a numeric dtype`);
  const buf = fs.readFileSync(v.file), n = v.dims.reduce((a, b) => a * b, 1);
  if (buf.length !== n * Arr.BYTES_PER_ELEMENT)
    throw new Error(`input '${name}': ${v.file} holds ${buf.length} bytes, dims [${v.dims}] of ${type} need ${n * Arr.BYTES_PER_ELEMENT}`);
  // a view of the bytes read, copied only when the file's Buffer sits unaligned in Node's shared
  // pool (small files): a large input (gcn_cora's 29 MB adjacency) is not copied twice, which
  // cost a 44 MB request 8-12 ms more (docs/serverless.md, "The invocation")
  const data = buf.byteOffset % Arr.BYTES_PER_ELEMENT === 0
    ? new Arr(buf.buffer, buf.byteOffset, n)
    : new Arr(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  return new ort.Tensor(type, data, v.dims);
}

function writeTensor(t, file) {
  if (!ARRAYS[t.type]) throw new Error(`cannot write a tensor of type ${t.type} as raw bytes`);
  const d = t.data;
  fs.writeFileSync(file, Buffer.from(d.buffer, d.byteOffset, d.byteLength));
  return {file, dims: t.dims, dtype: t.type, bytes: d.byteLength};
}

async function runFiles(msg) {
  if (!stages.length) throw new Error('no model is loaded (send "load" first)');
  if (devices) throw new Error('"run_files" runs stages loaded without "devices"');
  if (typeof msg.dir !== 'string') throw new Error('"dir" must be a folder');
  const given = {};
  for (const [name, v] of Object.entries(msg.inputs || {})) given[name] = fileTensor(name, v);
  const feeds = Object.assign(makeFeeds(Object.assign({}, msg, {inputs: null}), stages.map((s) => (
    {inputs: s.inputs.filter((i) => !given[i.name]), outputs: s.outputs}))), given);
  const made = {}, outputs = {};
  Object.keys(feeds).filter((k) => !given[k]).forEach((k, i) => (made[k] = writeTensor(feeds[k], path.join(msg.dir, `i${i}.bin`))));
  const r = await runOnce(feeds);
  runs++;
  [...finals].forEach((o, k) => (outputs[o] = writeTensor(r.values[o], path.join(msg.dir, `o${k}.bin`))));
  return {run_s: r.times.reduce((a, b) => a + b, 0), outputs, made};
}

// The reference (the whole model) is kept between compares: the tests compare two plans of
// one model in a row, and loading bert_base costs more than running it.
let reference = null;

async function referenceSet(p, opts) {
  const key = JSON.stringify([p, opts]);
  if (reference && reference.key === key) return reference.set;
  if (reference) await reference.set[0].session.release();
  reference = null;
  const set = [await openStage(p, opts)];
  reference = {key, set};
  return set;
}

// max|a-b| / max(max|a|, 1e-6) over one output; NaN or infinity on either side: not finite.
function difference(name, a, b) {
  if (!b) throw new Error(`graph output '${name}' comes out of no stage`);
  if (a.data.length !== b.data.length || a.dims.join() !== b.dims.join())
    throw new Error(`graph output '${name}': dims [${a.dims}] in the model, [${b.dims}] from the stages`);
  let maxAbs = 0, maxA = 0, finite = true;
  for (let i = 0; i < a.data.length; i++) {
    const x = valueAt(a, i), y = valueAt(b, i);
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      finite = false;
      continue;
    }
    maxAbs = Math.max(maxAbs, Math.abs(x - y));
    maxA = Math.max(maxA, Math.abs(x));
  }
  return {max_rel: maxAbs / Math.max(maxA, 1e-6), max_abs: maxAbs, finite, dims: a.dims};
}

// Runs the whole model and the stage set on the same random inputs (made from the model's
// inputs) and compares every graph output. The stage sessions are released afterwards, so
// what "load" loaded stays loaded.
async function compare(msg) {
  if (typeof msg.reference !== 'string' || !Array.isArray(msg.stages) || !msg.stages.length)
    throw new Error('"reference" must be a path and "stages" a non-empty list of paths');
  const opts = sessionOptions(msg);
  const ref = await referenceSet(msg.reference, opts);
  progress(msg.id, 'reference loaded');
  const set = await openAll(msg.stages, opts, msg.id);
  try {
    const feeds = makeFeeds(msg, ref);
    const want = await runOnce(feeds, ref);
    progress(msg.id, 'reference run');
    const got = await runOnce(feeds, set);
    const outputs = {};
    for (const o of ref[0].outputs) outputs[o] = difference(o, want.values[o], got.values[o]);
    return {reference_s: want.latency, stages_s: got.latency, stage_s: got.times, outputs};
  } finally {
    for (const s of set) await s.session.release();
  }
}

// Profiling: a session of its own with graph optimisation off, so that every node of the file
// is one kernel (nothing fused or removed) and its time can be given back to the op of the same
// name. onnxruntime-node's endProfiling() returns nothing, so the trace is found by its prefix
// in a fresh temporary directory, which is removed afterwards.
function readTrace(dir) {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
  if (files.length !== 1) throw new Error(`profiling wrote ${files.length} trace files, expected 1`);
  return JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
}

// Which request an event belongs to: the index of the "model_run" span holding its start.
function runIndex(spans, ts) {
  for (let i = 0; i < spans.length; i++)
    if (ts >= spans[i].ts && ts <= spans[i].ts + spans[i].dur) return i;
  return -1;
}

// Per node: its kernel time summed within each timed request, averaged over the requests (a
// node inside a Loop body runs several times per request: count says how many).
function nodeTimes(events, warmup, repeat) {
  const spans = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts);
  if (spans.length !== warmup + repeat)
    throw new Error(`the trace holds ${spans.length} runs, expected ${warmup + repeat}`);
  const byKey = new Map(), open = [];
  const kernels = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time')).sort((a, b) => a.ts - b.ts);
  for (const e of kernels) {
    // A kernel that starts inside another's span is a node of a Loop/If/Scan body.
    while (open.length && open[open.length - 1] < e.ts) open.pop();
    const nested = open.length > 0;
    open.push(e.ts + e.dur);
    const r = runIndex(spans, e.ts);
    if (r < warmup) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    const args = e.args || {};
    const key = `${name}\u0000${args.node_index}`;
    let n = byKey.get(key);
    if (!n) byKey.set(key, (n = {name, node_index: Number(args.node_index), op_type: args.op_name || '', provider: args.provider || '', nested, total_us: 0, events: 0}));
    n.total_us += e.dur, n.events++;
  }
  return [...byKey.values()].map((n) => ({name: n.name, node_index: n.node_index, op_type: n.op_type, nested: n.nested,
                                         mean_s: n.total_us / 1e6 / repeat, count: n.events / repeat, provider: n.provider}));
}

// The profiled session. With CUDA, onnxruntime's profiler times a node on the CPU around its
// Compute(), which only queues its kernels on the GPU: CUDA_LAUNCH_BLOCKING=1 (read by CUDA when
// this process first uses it, so set before the session exists) makes every launch wait for its
// kernel, so a node's time is its launch and its run on the GPU, not the launch alone
// (onnxruntime's release builds have no CUPTI kernel timing). A session that cannot be made
// with CUDA (no provider library, no CUDA or cuDNN library, no device) says so.
async function openProfiled(model, opts, ep) {
  if (ep !== 'cuda') return openStage(model, opts);
  process.env.CUDA_LAUNCH_BLOCKING = '1';
  try {
    return await openStage(model, opts);
  } catch (e) {
    throw new Error(`onnxruntime could not create a session with its CUDA execution provider: ${e && e.message ? e.message : e} (${cudaLibsSay()})`);
  }
}

// What onnxruntime-node's own CUDA files say about a failed CUDA session: the npm package ships
// without them (its install script fetches them from NuGet unless told to skip, as `make deps`
// does), and without them nothing else matters.
function cudaLibsSay() {
  const bin = path.join(path.resolve(modulesDir, 'onnxruntime-node'), 'bin', 'napi-v6', process.platform, process.arch);
  const missing = ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'].filter((f) => !fs.existsSync(path.join(bin, f)));
  if (missing.length) return `onnxruntime-node's CUDA provider libraries are not installed: no ${missing.join(', ')} in ${bin}`;
  return `onnxruntime-node's CUDA provider libraries are in ${bin}: what they load (CUDA 12, cuDNN 9) or the GPU is missing`;
}

async function profile(msg) {
  if (typeof msg.model !== 'string') throw new Error('"model" must be a path');
  const repeat = msg.repeat > 0 ? msg.repeat : 10, warmup = msg.warmup >= 0 ? msg.warmup : 1;
  // placer's own temporary folder when it gives one (it removes it even if this worker is killed)
  const dir = typeof msg.dir === 'string' ? msg.dir : fs.mkdtempSync(path.join(os.tmpdir(), 'placer-prof-'));
  try {
    const opts = Object.assign(sessionOptions(Object.assign({}, msg, {optimize: msg.optimize === 'all' ? 'all' : 'disabled'})),
                               {enableProfiling: true, profileFilePrefix: path.join(dir, 'trace')});
    const set = [await openProfiled(msg.model, opts, msg.ep)];
    progress(msg.id, 'model loaded');
    const feeds = makeFeeds(msg, set), run_s = [];
    try {
      for (let i = 0; i < warmup + repeat; i++) {
        const r = await runOnce(feeds, set);
        if (i >= warmup) run_s.push(r.latency), runs++;
        progress(msg.id, `request ${i + 1} of ${warmup + repeat}`);
      }
      set[0].session.endProfiling();
    } finally {
      await set[0].session.release();
    }
    return {runs: repeat, run_s, nodes: nodeTimes(readTrace(dir), warmup, repeat)};
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

async function handle(line) {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    return {ok: false, error: `not JSON: ${e.message}`};
  }
  const id = msg.id;
  try {
    let body;
    if (msg.op === 'load') body = await load(msg);
    else if (msg.op === 'run') body = await run(msg);
    else if (msg.op === 'compare') body = await compare(msg);
    else if (msg.op === 'profile') body = await profile(msg);
    else if (msg.op === 'run_files') body = await runFiles(msg);
    else if (msg.op === 'stats') body = {loads, runs};
    else if (msg.op === 'quit') body = {}, quitting = true;
    else throw new Error(`unknown op '${msg.op}'`);
    return Object.assign({ok: true, id}, body);
  } catch (e) {
    return {ok: false, id, error: String(e && e.message ? e.message : e)};
  }
}

// One request at a time, in order: the next line waits for the previous reply.
function serve() {
  const rl = readline.createInterface({input: process.stdin, terminal: false});
  let chain = Promise.resolve();
  rl.on('line', (line) => {
    if (!line.trim()) return;
    chain = chain.then(async () => {
      const r = await handle(line);
      reply(r);
      if (quitting) process.exit(0);
    });
  });
  rl.on('close', () => chain.then(() => process.exit(0)));
  reply({ok: true, ready: true, ort: ort.env.versions ? ort.env.versions.node : 'unknown', pid: process.pid});
}

if (isMainThread) serve();
else deviceThread();
