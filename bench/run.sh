#!/usr/bin/env bash
# make bench: prints the benchmark tables. Full-size models (with weights) are exported once
# into models/full/ by the zoo script (not committed; needs python3-torch).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p "$build/bench"
[ -f "$build/bench/synth50k.onnx" ] || /usr/bin/python3 tools/synth_model.py --ops 50000 -o "$build/bench/synth50k.onnx" >/dev/null
if [ ! -f models/full/gpt2_small.onnx ] || [ ! -f models/full/vgg19.onnx ]; then
  echo "bench: exporting full-size gpt2_small and vgg19 into models/full/ (once)" >&2
  PLACER_DEPS_TORCH=1 tools/deps.sh
  /usr/bin/python3 tools/export_models.py --full gpt2_small vgg19 >&2
fi
echo "== import: time, peak memory, reachability index (one child process per model)"
"$build/bench/bench_import" models/*.onnx models/full/*.onnx "$build/bench/synth50k.onnx"
echo
echo "== GPU kernels against published timings (docs/cost.md, \"GPU kernels\"): every figure of bench/gpu-published.json predicted by the roofline, the built-in kernel parameters and a fresh fit (fit on the \"fit\" set, errors on the held-out GPUs; host-bound rows reported, never fitted); about a minute"
"$build/bench/bench_gpu" bench/gpu-published.json models
echo
echo "== placement: every heuristic on the zoo x example clusters (simulated makespan, gap to the lower bound; moirai has its own table below)"
"$build/bench/bench_place" zoo examples/clusters/*.json -- models/*.onnx
echo
echo "== placement and simulation on a 50,000-op transformer-like graph, 8 x V100"
"$build/bench/bench_place" big "$build/bench/synth50k.onnx" 8
echo
echo "== placer report: the page's size and render time in headless chromium, a zoo model and the 50,000-op graph (docs/report.md, \"Big plans\")"
bench/bench_report.sh "$build"
echo
moirai=../shared/benchmarks/moirai
if [ -d "$moirai" ]; then
  echo "== MOIRAI instances: heuristics vs moirai (MILP + local search, PLACER_MOIRAI_LIMIT=${PLACER_MOIRAI_LIMIT:-60} s each) vs the reference"
  "$build/bench/bench_place" moirai "$moirai"
else
  echo "== MOIRAI instances: skipped ($moirai not found)"
fi
echo
# the published instances converted to placer's formats and placed through the CLI
/usr/bin/python3 bench/published.py "$build" "${PLACER_BENCHMARKS:-../shared/benchmarks}"
echo
echo "== moirai on the zoo, MOIRAI's inter- and intra-server clusters: gain over m-SCT, GETF, HEFT (PLACER_MOIRAI_LIMIT=${PLACER_MOIRAI_LIMIT:-60} s each; up to 20 minutes)"
"$build/bench/bench_place" moirai-zoo examples/clusters/moirai-inter-server.json examples/clusters/moirai-intra-server.json -- models/*.onnx
echo
echo "== configuration search: trials until each strategy tries the exhaustive optimum, whether it does before its stop, cost regret (every zoo model, testbed, AWS and all-clouds catalogues, SLO 1.2x and 2x the fastest)"
"$build/bench/bench_search" catalogs/autodeep-testbed.json catalogs/aws.json catalogs/clouds.json -- models/*.onnx
echo
echo "== a full deploy over the 40 configurations of every cloud (exhaustive, bert_base, 2 cores)"
TIMEFORMAT="wall %R s"
time ( "$build/placer" deploy models/bert_base.onnx --catalog catalogs/clouds.json --slo 10ms --strategy exhaustive | tail -8 )
echo
echo "== deploy over MPI ranks (docs/dist.md, 'deploy'): the same exhaustive deploy under mpirun -np 1 and -np 2, a projection to 8-64 ranks, and BO's trials and rounds to the optimum with batches of 2, 4, 8 beside the sequential search (tables from bench_search above; about 2 minutes)"
PLACER_SEARCH_CACHE=1 "$build/bench/bench_dist" "$build" models/bert_base.onnx catalogs/clouds.json 10ms \
  catalogs/autodeep-testbed.json catalogs/aws.json catalogs/clouds.json -- models/*.onnx
echo
echo "== serverless (MOPAR): MOPAR and its baselines on the zoo at Lambda and OpenFaaS prices, with the paper's latency bound and with 2 % of slack; then serving a diurnal trace"
"$build/bench/bench_serverless" examples/platforms/aws-lambda.json examples/platforms/openfaas.json -- models/*.onnx
"$build/bench/bench_serverless" --slack 0.02 examples/platforms/aws-lambda.json examples/platforms/openfaas.json -- models/*.onnx | sed -n '1,/^$/p'
echo
echo "== serverless, paper mode (Table III): MOPAR and its baselines on the zoo's CNN, RNN, GCN and transformer models under the paper's own assumptions (examples/platforms/mopar-paper-*.json), beside the paper's figures, with its latency bound and with 2 % of slack"
for slack in 0 0.02; do
  "$build/bench/bench_serverless" --paper --slack $slack examples/platforms/mopar-paper-lambda.json examples/platforms/mopar-paper-openfaas.json -- \
    models/resnet50.onnx models/vgg19.onnx models/inception_v3.onnx models/rnnlm.onnx models/gcn_cora.onnx models/bert_base.onnx models/transformer.onnx
done
echo
echo "== serverless plans run for real on this machine (OpenFaaS prices, 2 % slack, cut tensors through Redis): predicted vs measured latency and bill, and the largest peak RSS over planned memory"
/usr/bin/python3 bench/serverless_run.py "$build" models/*.onnx
echo
echo "== several models on one host (Talos): Talos (the paper's flow alone, then refined as placer runs it), ASWM, TSAM, HEFT and moirai on pairs and triples of zoo models, Talos's testbed (1 CPU + 2 RTX 2080 Ti); TOCT = sum of the models' completion times (moirai ${PLACER_MOIRAI_MULTI_LIMIT:-10} s per set; about 2.5 minutes)"
m=models
PLACER_MOIRAI_LIMIT=${PLACER_MOIRAI_MULTI_LIMIT:-10} "$build/bench/bench_multi" examples/clusters/talos-1cpu-2gpu.json \
  $m/resnet50.onnx,$m/inception_v3.onnx $m/vgg19.onnx,$m/mobilenet_v3_large.onnx $m/bert_base.onnx,$m/resnet50.onnx \
  $m/gpt2_small.onnx,$m/transformer.onnx $m/resnext50_32x4d.onnx,$m/mobilenet_v3_large.onnx $m/nmt_seq2seq.onnx,$m/rnnlm.onnx \
  $m/resnet50.onnx,$m/resnet50.onnx \
  $m/resnet50.onnx,$m/inception_v3.onnx,$m/vgg19.onnx $m/bert_base.onnx,$m/gpt2_small.onnx,$m/resnet50.onnx \
  $m/mobilenet_v3_large.onnx,$m/resnext50_32x4d.onnx,$m/transformer.onnx $m/gcn_cora.onnx,$m/rnnlm_unrolled.onnx,$m/inception_v3.onnx
echo
echo "== the Talos paper's Fig. 9(a): its three training pairs with affinity above 0.4 (and alexnet + squeezenet1_0, above it here), training iterations at batch 64 on Talos's testbed (docs/multi.md; about a minute)"
t=models/talos
PLACER_MOIRAI_LIMIT=${PLACER_MOIRAI_MULTI_LIMIT:-10} "$build/bench/bench_multi" examples/clusters/talos-1cpu-2gpu.json \
  $m/resnet50.onnx:64,$t/squeezenet1_0.onnx:64 $t/googlenet.onnx:64,$t/alexnet.onnx:64 $m/resnet50.onnx:64,$t/alexnet.onnx:64 \
  $t/alexnet.onnx:64,$t/squeezenet1_0.onnx:64
echo
echo "== several models on this machine's two cores for real (placer multi --run, issue 32 item 5): issue 32's three CPU sets and nmt_seq2seq + rnnlm (outside them: two models reading their weights from DRAM, which the simulator prices as one level, docs/cost.md), three rounds each, predicted against measured completion, each model alone beside it and the error the co-run adds (docs/multi.md, \"Fidelity of --run\"); real runs, so only a quiet machine gives figures to trust (about 3 minutes; 10 on the Xeon, which measures its calibration and cold figures first)"
uptime
# the two cores as measured on this CPU: the Xeon's own file there (docs/calibrate.md, "Another
# CPU"; with its cold figures, which price the rounds' waits: docs/simulator.md, "Cold
# requests"), else the EPYC's, which every other CPU gets, scaled by the calibration where it
# outruns it, and which prices every round warm (its cold figures were never measured)
percore=examples/clusters/local-cpu-percore.json
# (KVM names the Xeon only generically: its family and model number tell it from other Xeons)
grep -q "^model name.*Intel(R) Xeon(R) Processor" /proc/cpuinfo && grep -q "^cpu family.*: 6$" /proc/cpuinfo &&
  grep -q "^model[[:space:]]*: 167$" /proc/cpuinfo && percore=examples/clusters/local-xeon-percore.json
echo "cluster: $percore"
# With cold figures (the Xeon's), the calibration and those figures are measured again first:
# they describe the host's other guests as much as this VM, and drift within the hour
# (docs/multi.md, "Measured afresh before each run"; about 7 minutes more, after up to ten
# waiting for the load the benches above left to settle); the waits timed beside a neighbour
# busy on the other core, as in a round ("A neighbour busy while the figures are measured")
refit=()
grep -q '"host_cold_tau_s"' "$percore" && refit=(--refit "$t/alexnet.onnx,$t/squeezenet1_1.onnx,$t/googlenet.onnx,$m/inception_v3.onnx,$m/gpt2_small.onnx,$m/resnext50_32x4d.onnx,$m/gcn_cora.onnx,$m/mobilenet_v3_large.onnx,$m/resnet50.onnx,$m/nmt_seq2seq.onnx,$m/transformer.onnx")
/usr/bin/python3 bench/multi_run.py "${refit[@]}" "$build" "$percore" 3 \
  $m/gcn_cora.onnx,$m/rnnlm.onnx,$m/gcn_cora.onnx $m/mobilenet_v3_large.onnx,$m/resnet50.onnx $m/nmt_seq2seq.onnx,$m/transformer.onnx \
  $m/nmt_seq2seq.onnx,$m/rnnlm.onnx
echo
echo "== training (TAG): TAG against DP-NCCL, DP-NCCL-P, Horovod, a HeteroG-like search, FlexFlow's MCMC (as many proposals as MCTS's trees ran iterations in all) and HEFT on TAG's testbed and cloud at the paper's batch sizes (30 MCTS iterations each, then the refinement; several minutes)"
"$build/bench/bench_train" --iterations 30 examples/clusters/tag-testbed.json examples/clusters/tag-cloud.json -- \
  $m/inception_v3.onnx:96 $m/resnet50.onnx:96 $m/vgg19.onnx:96 $m/transformer.onnx:480 $m/bert_base.onnx:96
echo
echo "== SFB (TAG's Table 5): DP-NCCL and TAG with and without SFB, 2 machines x 1 GTX 1080 Ti, batch 4"
"$build/bench/bench_train" --sfb --iterations 30 examples/clusters/tag-sfb.json -- \
  $m/inception_v3.onnx:4 $m/resnet50.onnx:4 $m/vgg19.onnx:4 $m/transformer.onnx:4 $m/bert_base.onnx:4
echo
echo "== TAG's prior (Tables 7 and 8): each model held out in turn, MCTS alone (no refinement, no SFB) on unseen random topologies (seeds 100001-100005, 2-8 GPUs, 16 op groups, 100 iterations): iterations until it beats DP-NCCL and Horovod, with the uniform prior and the GNN trained without the model (models/priors/tag-gnn-without-MODEL.weights, `make priors`), then on TAG's testbed and cloud clusters; about 6 minutes"
"$build/bench/bench_prior" --iterations 100 --topologies 5 --max-gpus 8 --groups 16 -- \
  $m/inception_v3.onnx:96 $m/resnet50.onnx:96 $m/vgg19.onnx:96 $m/transformer.onnx:480 $m/bert_base.onnx:96 $m/gpt2_small.onnx:16
for cl in tag-testbed tag-cloud; do
  echo "-- on $cl.json (Table 8's TAG- columns are this testbed and cloud)"
  "$build/bench/bench_prior" --iterations 100 --groups 16 --cluster examples/clusters/$cl.json -- \
    $m/inception_v3.onnx:96 $m/resnet50.onnx:96 $m/vgg19.onnx:96 $m/transformer.onnx:480 $m/bert_base.onnx:96 $m/gpt2_small.onnx:16
done
echo
echo "== AutoDeep's DRL placer against Google-RL, the expert placement (expert-layers), single, HEFT and moirai on the zoo, AutoDeep's testbed (4 x K80): simulated makespans beside the paper's Fig. 6 claims and Table V (google-rl and drl ${PLACER_DRL_EPISODES:-3000} episodes, seeds 1-${PLACER_DRL_SEEDS:-3}; moirai ${PLACER_DRL_LIMIT:-10} s; docs/learn.md)"
"$build/bench/bench_drl" examples/clusters/autodeep-4xk80.json models/*.onnx
echo
echo "== graph substitution (TASO's search, placer optimize) on the zoo and five generated blocks: ops, predicted (local CPU cluster, this machine's calibration) and measured (onnxruntime on this CPU, its own fusions on; three runs) time before and after, for the search's answer and for every rule applied greedily; the sign of the predicted change against the measured one beyond the noise; beside TASO's and AutoDeep's published gains (search ${PLACER_OPTIMIZE_LIMIT:-10} s at most per model, models over 450 MB of weights not measured; about 4 minutes)"
/usr/bin/python3 tools/block_models.py "$build/bench/blocks"
"$build/bench/bench_optimize" examples/clusters/local-cpu-percore.json 3 "${PLACER_OPTIMIZE_LIMIT:-10}" 450 models/*.onnx "$build/bench/blocks"/*.onnx
echo
echo "== codecs for tensors crossing a serverless cut (MOPAR): ratio and speed of fp16 and zstd on synthetic activations, one thread"
"$build/bench/bench_codec" 10
echo
echo "== measured trials on this CPU (onnxruntime): a persistent worker against a fresh one per trial"
"$build/bench/bench_runtime" 5 models/rnnlm.onnx models/resnet50.onnx models/bert_base.onnx
echo
echo "== fidelity: the cost model against onnxruntime on this CPU, default settings (this machine's cached calibration), issue 13's acceptance; one core, then the default plan on two (three runs; about 4 minutes)"
"$build/bench/bench_fidelity" --runs 3 models/*.onnx
echo
echo "== a CPU device is its cores (docs/runtime.md, \"Cores\"): onnxruntime with 1 and 2 intra-op threads against placer's default plan on local-cpu.json (and on local-cpu-percore.json, the cores alone), three runs; the target: the plan no slower than 2 threads; real runs, so only a quiet machine gives figures to trust (about 10 minutes)"
uptime
"$build/bench/bench_cores" "$build/placer" 3 10 models/*.onnx
echo
echo "== searches under mpirun (docs/dist.md, \"Benchmark\"): compare on the zoo (autodeep-4xk80, default algorithms, --time-limit ${PLACER_DIST_LIMIT:-2s}) and train resnet50 on TAG's testbed (batch 96, ${PLACER_DIST_ITERATIONS:-30} MCTS iterations in all) with 1 and 2 ranks of placer-mpi; this machine's 2 cores are shared, so the times are noisy (about 2.5 minutes)"
bench/bench_dist_search.sh "$build"
