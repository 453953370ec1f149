#!/usr/bin/env bash
# The GPU check: the one command to run on a lent GPU machine (docs/device-check.md).
#
#   scripts/device-check.sh             run every step; results under $OUT (default build-device/out)
#   scripts/device-check.sh --dry-run   print the steps, their time limits and what is carried; run nothing
#   scripts/device-check.sh --prepare   here, before the call: copy what the GPU machine lacks (GoogleTest's
#                                       source, the CLI11, nlohmann-json, zlib and Gloo headers, libz.a) into
#                                       build-device/deps and print the exact carry list and its size
#   scripts/device-check.sh --predict DIR [BUILD]
#                                       here, after the call: calibrate the twin on one configuration's trace
#                                       from DIR (the call's files) and predict the others' steps, with errors
#
# Steps, each under `timeout`, all inside CT_DEVICE_BUDGET_S seconds (default 500):
#   facts          nvidia-smi, nvidia-smi topo -m, nvcc, g++, cmake, python3's torch           -> facts.txt
#   configure      scripts/device-check/ (real/gpu, tests/gpu) with nvcc                       -> build.txt
#   build          ct_gpu, ct_gpu_kernels_test                                                  -> build.txt
#   gpu-tests      ctest -L gpu; fails if the GPU tests skip where there is a GPU               -> gpu.txt
#   nccl           NCCL all-reduce and all-to-all bus bandwidth on every GPU, 1 MiB..1 GiB      -> nccl.json, gpu.txt
#   kineto         a profiled training step of a small GPT                                     -> traces.tar.gz, gpu.txt
#   kernels        GEMMs and attention timed in torch eager, a kernel-benchmark trace for
#                  `clustertwin calibrate device` (traces/KERNELS.md)                           -> kernels.json, gpu.txt
#   real-configure the real side (CT_REAL_ONLY: no SimGrid) against the pip libtorch, CT_CUDA   -> build.txt
#   real-build     its clustertwin (launch, run collectives|plan|nestpipe|flexmarl|flowtrain)  -> build.txt
#   run-nestpipe   torchrec, dbp, nestpipe on the GPU (NCCL, one rank; GB-sized table), and 4 ranks
#                  sharing the GPU (Gloo, staged through host memory), each with --trace        -> runs.txt, traces.tar.gz
#   run-flowtrain  monolithic and flowtrain on the GPU, --trace                                 -> runs.txt, traces.tar.gz
#   run-flowtrain-large  --model large --dtype bf16 (ViT-L/14 + a ~1.2B decoder): monolithic on one rank,
#                  flowtrain on two ranks sharing the GPU, a few steps; MFU against the GPU's measured bf16
#                  matmul rate (and kernels.json's best GEMM where the kernels step ran)        -> runs.txt, traces.tar.gz
#   run-flexmarl   sync and flexmarl on the GPU, --trace, at --task small and --task large      -> runs.txt, traces.tar.gz
#   run-sizes      the executors at other sizes than the shipped runs (traces/data/h200), 30 steps: NestPipe at
#                  batch 1024 with a 4M-row table, torchrec at batch 512 (a micro-batch of the shipped
#                  nestpipe run's), FlowTrain at --width 12: what the twin predicts from the shipped
#                  calibration (--predict), held out                                            -> runs.txt, traces.tar.gz
#   kineto-dlrm    kineto_step.py --model dlrm: a DLRM step with its tables on the device, fused Adam, no
#                  synchronisation between steps (the device runs behind the host), held out   -> traces.tar.gz
# Each step's status goes to summary.txt (PASS, FAIL or SKIP, seconds, a one-line note);
# the exit code is 0 only when every step passed. Environment: OUT (the results folder),
# CT_DEVICE_BUDGET_S (the overall limit), CT_DEVICE_PYTHON (default python3), CT_DEVICE_STEPS
# (run only these steps, e.g. "real-configure real-build run-nestpipe", for a rerun that must fit the time left).
# The twin (SimGrid) is not on the GPU machine: its predictions from the runs' traces are --predict's, here.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRIPT="$ROOT/scripts/device-check.sh"
DEVICE_DIR="$ROOT/build-device"   # ignored by git (/build-*/)
BUILD="$DEVICE_DIR/build"         # ct_gpu and the GPU tests
REAL_BUILD="$DEVICE_DIR/real"     # the real side against the machine's libtorch
CARRY_DIR="$DEVICE_DIR/deps"      # what --prepare collects
CARRY_REL="build-device/deps"
OUT="${OUT:-$DEVICE_DIR/out}"
PYTHON="${CT_DEVICE_PYTHON:-python3}"
BUDGET_S="${CT_DEVICE_BUDGET_S:-500}"
SELECTED="${CT_DEVICE_STEPS:-}"
DEVICE_TIMEOUT_S=580              # the timeout_s to give the device tool: the budget plus start-up and slack
MAX_OUT_FILES=8                   # the device tool brings back at most 8 files from $OUT

# name, time limit (s), log file under $OUT, what it does
STEPS=(
  "facts 30 facts.txt nvidia-smi, nvidia-smi topo -m, nvcc, g++, cmake, ninja, python3 torch/CUDA/NCCL versions"
  "configure 60 build.txt cmake -S scripts/device-check -B build-device/build (nvcc; GoogleTest installed or carried)"
  "build 120 build.txt cmake --build: ct_gpu (nvcc) and ct_gpu_kernels_test"
  "gpu-tests 60 gpu.txt ctest -L gpu -V; a GPU test that skips where nvidia-smi lists a GPU fails the step"
  "nccl 120 gpu.txt torchrun nccl_bench.py on every GPU: all-reduce and all-to-all, 1 MiB..1 GiB -> nccl.json"
  "kineto 90 gpu.txt torchrun kineto_step.py: profiled TinyGPT steps -> traces/gpt_step.rank0.json.gz"
  "kernels 90 gpu.txt kernel_bench.py: bf16 GEMMs and attention, forward + backward, torch eager -> kernels.json"
  "real-configure 120 build.txt cmake -S . -B build-device/real -DCT_REAL_ONLY=ON -DCT_CUDA=ON against the pip libtorch"
  "real-build 300 build.txt cmake --build build-device/real --target clustertwin (the real side, no SimGrid)"
  "run-nestpipe 180 runs.txt run nestpipe --device cuda: torchrec, dbp, nestpipe (NCCL, 1 rank), dbp on 4 ranks (Gloo)"
  "run-flowtrain 120 runs.txt run flowtrain --device cuda --width 8: monolithic, flowtrain (pool auto, then host)"
  "run-flowtrain-large 240 runs.txt run flowtrain --device cuda --model large --dtype bf16: monolithic (1 rank), flowtrain (2 ranks)"
  "run-flexmarl 120 runs.txt run flexmarl --device cuda, 5 ranks: sync and flexmarl at --task small (14 s each), then sync and flexmarl at --task large (36 s each)"
  "run-sizes 180 runs.txt run nestpipe and flowtrain at other sizes than the shipped runs (held out)"
  "kineto-dlrm 90 gpu.txt kineto_step.py --model dlrm: a DLRM step, tables on the device, no sync (held out)"
)

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
# OMP_NUM_THREADS=1 keeps the Python scripts' CPU threads from fighting; it also makes plain `nproc` print 1,
# so the builds ask `nproc --all`.
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1

generator_args() {
  if command -v ninja >/dev/null 2>&1; then echo "-G Ninja"; fi
}

gpu_count() {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
  else
    echo 0
  fi
}

# A line `NOTE: text` in a step's output becomes the step's note in summary.txt.
note() { echo "NOTE: $*"; }

# --- the steps (each runs in a child: bash device-check.sh --step NAME) ---

step_facts() {
  local failed=0
  section() { printf '\n## %s\n' "$*"; }
  section date; date -u
  section host; uname -a; nproc --all; free -g 2>/dev/null | head -2
  section nvidia-smi; nvidia-smi || failed=1
  section "nvidia-smi --query-gpu"
  nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version,clocks.sm,clocks.max.sm,power.limit \
    --format=csv || failed=1
  section "nvidia-smi topo -m"; nvidia-smi topo -m || failed=1
  section nvcc; nvcc --version || failed=1
  section "c++"; c++ --version | head -1
  section cmake; cmake --version | head -1; ninja --version 2>/dev/null || echo "no ninja"
  section python
  "$PYTHON" - <<'EOF' || failed=1
import sys
import torch
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
print("cmake_prefix_path", torch.utils.cmake_prefix_path)
print("cuda available", torch.cuda.is_available(), "devices", torch.cuda.device_count())
if torch.cuda.is_available():
    print("nccl", ".".join(map(str, torch.cuda.nccl.version())))
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        print(f"device {i}: {p.name}, capability {p.major}.{p.minor}, {p.multi_processor_count} SMs, "
              f"{p.total_memory / 2**30:.1f} GiB")
else:
    sys.exit("torch sees no CUDA device")
EOF
  local gpus names torch_version
  gpus=$(gpu_count)
  names=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c | tr -s ' ' |
    paste -sd ';' -)
  torch_version=$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "none")
  note "$gpus GPU(s):${names:- none}; $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'no nvcc'); torch $torch_version"
  return "$failed"
}

step_configure() {
  local args=()
  if [ -f "$CARRY_DIR/gtest/CMakeLists.txt" ]; then
    args+=("-DCT_DEVICE_GTEST_SOURCE=$CARRY_DIR/gtest")
  fi
  rm -rf "$BUILD"
  # shellcheck disable=SC2046  # generator_args prints zero or two words
  cmake -S "$ROOT/scripts/device-check" -B "$BUILD" $(generator_args) -DCMAKE_BUILD_TYPE=Release "${args[@]}"
}

step_build() {
  cmake --build "$BUILD" --target ct_gpu ct_gpu_kernels_test -j "$(nproc --all)" -v
}

step_gpu_tests() {
  local log rc gpus
  log=$(mktemp)
  ctest --test-dir "$BUILD" -L gpu -V --timeout 50 2>&1 | tee "$log"
  rc=$?
  gpus=$(gpu_count)
  local figures
  figures=$(grep -h -o 'spin kernel: .*\|device-to-device copy of .*' "$log" | paste -sd ';' -)
  [ -n "$figures" ] && note "$figures"
  if [ "$rc" -eq 0 ] && [ "$gpus" -gt 0 ] && grep -q 'GpuKernelsTest\..*Skipped' "$log"; then
    echo "device-check: nvidia-smi lists $gpus GPU(s) but the GPU tests skipped"
    note "GPU tests skipped although nvidia-smi lists $gpus GPU(s)"
    rc=3
  elif [ "$rc" -eq 0 ] && [ "$gpus" -eq 0 ]; then
    note "no GPU here: the GPU tests skipped"
  fi
  rm -f "$log"
  return "$rc"
}

torchrun_all_gpus() {
  local n
  n=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())') || return 1
  if [ "$n" -eq 0 ]; then
    echo "device-check: $PYTHON's torch sees no CUDA device"
    note "no CUDA device for torch"
    return 1
  fi
  "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node="$n" "$@"
}

step_nccl() {
  torchrun_all_gpus "$ROOT/scripts/device-check/nccl_bench.py" --out "$OUT/nccl.json" || return 1
  "$PYTHON" - "$OUT/nccl.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
best = {}
for r in d["results"]:
    best[r["op"]] = max(best.get(r["op"], 0.0), r["busbw_GBps"])
print("NOTE: world size %d, peak busbw %s GB/s, #wrong %d" % (
    d["world_size"], ", ".join(f"{k} {v:.1f}" for k, v in best.items()), d["wrong_total"]))
EOF
}

step_kineto() {
  local log rc
  log=$(mktemp)
  torchrun_all_gpus "$ROOT/scripts/device-check/kineto_step.py" --out-dir "$OUT/traces" 2>&1 | tee "$log"
  rc=$?
  local events nccl
  events=$(grep -h -o '[0-9]* events, [0-9]* bytes gzipped' "$log" | tail -1)
  nccl=$(grep -h -o 'NCCL kernels: [0-9]*' "$log" | tail -1)
  [ -n "$events" ] && note "$events; $nccl"
  rm -f "$log"
  return "$rc"
}

# The kernel benchmark stops before its next kernel once 60 s are spent, so that it writes its trace inside the
# step's limit even on a slow start; `clustertwin calibrate device kernels.json --name NAME -o P.yaml` fits it here.
step_kernels() {
  rm -f "$OUT/kernels.json"
  "$PYTHON" "$ROOT/scripts/device-check/kernel_bench.py" --out "$OUT/kernels.json" --budget-s 60 || return 1
  [ -s "$OUT/kernels.json" ] || { echo "device-check: kernel_bench.py wrote no $OUT/kernels.json"; return 1; }
}

# The pip PyTorch's CMake prefix, the GPU's compute capability and the folder of nccl.h
# (the nvidia-nccl wheel's include/: the torch wheel has no NCCL headers).
torch_prefix() { "$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)'; }
gpu_arch() {
  "$PYTHON" -c 'import torch; c = torch.cuda.get_device_capability(); print(f"{c[0]}.{c[1]}")' 2>/dev/null || echo "9.0"
}
nccl_include() {
  local site
  site=$("$PYTHON" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null) || return 0
  # shellcheck disable=SC2086  # several folders
  find $site -path '*nvidia*' -name nccl.h 2>/dev/null | head -1 | xargs -r dirname
}

step_real_configure() {
  local prefix nccl
  prefix=$(torch_prefix) || { echo "device-check: $PYTHON has no torch"; return 1; }
  if [ ! -f "$CARRY_DIR/include/CLI/CLI.hpp" ]; then
    echo "device-check: $CARRY_REL is missing or incomplete; run scripts/device-check.sh --prepare and carry it"
    note "no $CARRY_REL carried (--prepare)"
    return 1
  fi
  nccl=$(nccl_include)
  echo "torch prefix: $prefix; nccl.h in: ${nccl:-not found}"
  rm -rf "$REAL_BUILD"
  # TORCH_CUDA_ARCH_LIST spares libtorch's CMake config a guess; USE_SYSTEM_NVTX makes it look for the nvtx3
  # headers in the CUDA toolkit (some torch 2.x configs fall back to libnvToolsExt otherwise, which CUDA 13 lacks).
  # shellcheck disable=SC2046  # generator_args prints zero or two words
  TORCH_CUDA_ARCH_LIST="$(gpu_arch)" cmake -S "$ROOT" -B "$REAL_BUILD" $(generator_args) -DCMAKE_BUILD_TYPE=Release \
    -DCT_REAL_ONLY=ON -DCT_CUDA=ON -DCT_BUILD_TESTS=OFF -DCT_BUILD_BENCH=OFF -DCT_THIRD_PARTY_DIR="$CARRY_DIR" \
    -DCMAKE_PREFIX_PATH="$prefix" -DUSE_SYSTEM_NVTX=ON ${nccl:+"-DCMAKE_CXX_FLAGS=-isystem $nccl"} || return 1
  if ! grep -q 'CT_CUDA:BOOL=ON' "$REAL_BUILD/CMakeCache.txt"; then
    note "CT_CUDA was turned off: the libtorch found has no CUDA (see build.txt)"
    return 3
  fi
}

step_real_build() {
  local rc
  # -k 0: every error of the build in one log, so that one call shows them all.
  cmake --build "$REAL_BUILD" --target clustertwin -j "$(nproc --all)" -- -k 0
  rc=$?
  [ "$rc" -ne 0 ] && { note "$(grep -c 'error:' "$OUT/build.txt" 2>/dev/null || echo '?') compiler error lines"; return "$rc"; }
  local version
  version=$("$REAL_BUILD/cli/clustertwin" --version 2>&1)
  echo "$version"
  note "$version"
  grep -q 'cuda yes' <<<"$version" || { echo "device-check: the real side's libtorch sees no GPU"; return 3; }
}

# One real run: the command line to runs.txt, then its output (rank 0's JSON line among it). The step's note
# lists each run's exit status.
RUNS_DONE=""
real_run() {
  local name=$1 limit=$2
  shift 2
  echo "---- $name: clustertwin $*"
  local t0=$SECONDS rc
  timeout -k 5 "$limit" "$REAL_BUILD/cli/clustertwin" "$@"
  rc=$?
  echo "---- $name: exit $rc after $((SECONDS - t0)) s"
  RUNS_DONE="$RUNS_DONE ${name#*-}:$rc"
  note "exit status per run:$RUNS_DONE"
  return "$rc"
}

step_run_nestpipe() {
  local t="$OUT/traces" failed=0 v
  mkdir -p "$t"
  # One rank owning the GPU (NCCL): a 10M-row x 128 table (5.1 GB, pinned host memory) and MLPerf's DLRM.
  local one=(--device cuda --model dlrm-criteo --vocab 10000000 --batch 2048 --micro-batches 4 --steps 12
    --threads 4 --timeout 60 --json)
  for v in torchrec dbp nestpipe; do
    real_run "nestpipe-1gpu-$v" 50 launch --nproc 1 -- run nestpipe --variant "$v" "${one[@]}" \
      --trace "$t/nestpipe-1gpu-$v.json" || failed=1
  done
  # The store on the device instead.
  real_run "nestpipe-1gpu-dbp-store-device" 50 launch --nproc 1 -- run nestpipe --variant dbp "${one[@]}" \
    --store device --trace "$t/nestpipe-1gpu-dbp-store-device.json" || failed=1
  # Four ranks on one GPU: NCCL refuses that, so Gloo with the tensors staged through host memory.
  real_run "nestpipe-4rank-dbp" 60 launch --nproc 4 -- run nestpipe --variant dbp --device cuda --model dlrm-criteo \
    --vocab 1000000 --batch 512 --micro-batches 4 --steps 10 --timeout 50 --json \
    --trace "$t/nestpipe-4rank-gloo-dbp.json" || failed=1
  return "$failed"
}

step_run_flowtrain() {
  local t="$OUT/traces" failed=0 m
  mkdir -p "$t"
  # --width 8: the tiny VLM eight times as wide (d_model 384), so that the GPU has work in a step. Its learning
  # rate is a fifth of the default: at 0.05 the wide model's summed loss grew from 188 to 2,608 in 6 steps, at
  # 0.01 it went 188, 188, 169, 153, 142, 239 (the same seed on the CPU, 2026-12-04).
  local common=(--device cuda --width 8 --lr 0.01 --global-batch 32 --steps 6 --timeout 50 --json)
  for m in monolithic flowtrain; do
    real_run "flowtrain-$m" 55 launch --nproc 2 -- run flowtrain --mode "$m" "${common[@]}" \
      --trace "$t/flowtrain-2rank-$m.json" || failed=1
  done
  # The pool through pinned host memory, whatever CUDA IPC could do.
  real_run "flowtrain-flowtrain-host-pool" 55 launch --nproc 2 -- run flowtrain --mode flowtrain "${common[@]}" \
    --pool-transfer host --trace "$t/flowtrain-2rank-flowtrain-host-pool.json" || failed=1
  return "$failed"
}

# The large preset on the one GPU, bf16: monolithic on one rank (NCCL, nothing to stage), and flowtrain on two
# ranks sharing the GPU (an encoder and a backbone worker, the pool through CUDA IPC where it works; each side's
# all-reduce is a group of one, through Gloo staged in host memory). Each rank makes the float32 model on the host
# (1.55 B seeded draws, tens of seconds) before it casts it to bf16 on the GPU. Global batch 8 of samples up to
# 2,048 tokens. Each run's report line: parameters, model FLOPs per step, achieved FLOP/s, and the MFU against the
# GPU's bf16 matmul rate the run measured (4096^3, rank 0) and, where the kernels step ran, against kernels.json's
# fastest GEMM and its datasheet peak; one rank on the GPU or two, the MFU is the job's FLOP/s over one GPU's rate.
step_run_flowtrain_large() {
  local t="$OUT/traces" failed=0 m nproc log rc figures mfus=""
  mkdir -p "$t"
  log=$(mktemp)
  local common=(--model large --dtype bf16 --device cuda --global-batch 8 --steps 3 --lr 0.01 --threads 4
    --timeout 60 --json)
  for m in monolithic flowtrain; do
    nproc=1
    [ "$m" = flowtrain ] && nproc=2
    real_run "flowtrain-large-$m" 110 launch --nproc "$nproc" -- run flowtrain --mode "$m" "${common[@]}" \
      --trace "$t/flowtrain-large-${nproc}rank-$m.json" >"$log" 2>&1
    rc=$?
    cat "$log"
    if [ "$rc" -ne 0 ]; then
      echo "device-check: run-flowtrain-large: the $m run exited $rc (see the lines above)"
      failed=1
      continue
    fi
    figures=$(large_mfu "$m" "$log") || failed=1
    [ -n "$figures" ] || continue
    echo "$figures"
    figures=${figures##*; MFU }
    mfus="$mfus ${figures%% of the measured*}"
  done
  rm -f "$log"
  [ -n "$mfus" ] && note "MFU against the measured bf16 matmul:${mfus}"
  return "$failed"
}

# One large run's figures from its JSON report (in the launcher's output `log`), against the GPU's measured rates.
large_mfu() {
  local mode=$1 log=$2
  timeout -k 5 20 "$PYTHON" - "$mode" "$log" "$OUT/kernels.json" <<'EOF'
import json, os, sys
mode, log, kernels = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(log, errors="replace").read()
report = None
for i, c in enumerate(text):
    if c == "{":
        try:
            report, _ = json.JSONDecoder().raw_decode(text[i:])
            break
        except ValueError:
            continue
if not report or "flops_per_s" not in report:
    sys.exit(f"device-check: run-flowtrain-large: the {mode} run printed no JSON report with flops_per_s")
achieved, rate = report["flops_per_s"], report["matmul_flops_per_s"]
p = report["params"]
line = (f"flowtrain-large {mode}: {report['world_size']} rank(s), {p['total'] / 1e9:.3f}B parameters "
        f"(encoder {p['encoder'] / 1e6:.1f}M, backbone {p['backbone'] / 1e6:.1f}M), "
        f"{report['model_flops_per_step'] / 1e12:.1f} TFLOP a step, median step {report['step_s']:.3f} s, "
        f"{achieved / 1e12:.1f} TFLOP/s achieved; MFU {mode} {achieved / rate:.1%} of the measured "
        f"{report['dtype']} matmul ({rate / 1e12:.0f} TFLOP/s)")
if os.path.exists(kernels):
    doc = json.load(open(kernels))
    best = max((r["flops"] / r["time_s"] for r in doc.get("records", []) if r.get("time_s", 0) > 0
                and "tokens" in r.get("shape", {})), default=0)
    if best > 0:
        line += f", {achieved / best:.1%} of kernels.json's fastest GEMM ({best / 1e12:.0f} TFLOP/s)"
    if doc.get("peak_flops", 0) > 0:
        line += f", {achieved / doc['peak_flops']:.1%} of the datasheet peak"
print(line)
EOF
}

# Within the step's 120 s: 14 + 14 + 36 + 36 s, and 5 s of grace after each limit (timeout -k 5).
step_run_flexmarl() {
  local t="$OUT/traces" failed=0 f
  mkdir -p "$t"
  # The small task: the shipped runs (traces/data/h200, 3-4 s each there), the ones --predict replays.
  for f in sync flexmarl; do
    real_run "flexmarl-$f" 14 launch --nproc 5 -- run flexmarl --framework "$f" --device cuda --steps 2 \
      --timeout 10 --json --trace "$t/flexmarl-5rank-$f.json" || failed=1
  done
  # The large task (planner 512 x 12 layers writing ~80 tokens, at most 512): generation dominates the step, so
  # flexmarl's micro-batch pipeline has rollouts to hide training under. Not for --predict: the process twin
  # knows only the small task.
  for f in sync flexmarl; do
    real_run "flexmarl-large-$f" 36 launch --nproc 5 -- run flexmarl --framework "$f" --task large --device cuda \
      --steps 2 --timeout 30 --json --trace "$t/flexmarl-5rank-large-$f.json" || failed=1
  done
  return "$failed"
}

# Held out: sizes no shipped run has, so that --predict prices them from the shipped runs' costs (predict.sh's
# "sizes" lines). Longer than the shipped 12-step runs (30 steps): a stall then costs the mean less.
step_run_sizes() {
  local t="$OUT/traces" failed=0 v
  mkdir -p "$t"
  local one=(--device cuda --model dlrm-criteo --micro-batches 4 --steps 30 --threads 4 --timeout 60 --json)
  for v in torchrec dbp nestpipe; do
    real_run "nestpipe-1gpu-$v-size-b1024-v4m" 50 launch --nproc 1 -- run nestpipe --variant "$v" "${one[@]}" \
      --vocab 4000000 --batch 1024 --trace "$t/nestpipe-1gpu-$v-size-b1024-v4m.json" || failed=1
  done
  # The shipped nestpipe run's micro-batch (2048 / 4) as a whole batch: with the shipped torchrec run, two sizes
  # of the same keys, which separate a task's fixed cost from its per-sample one (predict.sh: nestpipe from both).
  real_run "nestpipe-1gpu-torchrec-size-b512" 50 launch --nproc 1 -- run nestpipe --variant torchrec "${one[@]}" \
    --vocab 10000000 --batch 512 --trace "$t/nestpipe-1gpu-torchrec-size-b512.json" || failed=1
  local ft=(--device cuda --width 12 --lr 0.01 --global-batch 48 --steps 6 --timeout 50 --json)
  for v in monolithic flowtrain; do
    real_run "flowtrain-$v-size-w12" 55 launch --nproc 2 -- run flowtrain --mode "$v" "${ft[@]}" \
      --trace "$t/flowtrain-2rank-$v-size-w12.json" || failed=1
  done
  return "$failed"
}

step_kineto_dlrm() {
  local log rc
  log=$(mktemp)
  timeout -k 5 80 "$PYTHON" "$ROOT/scripts/device-check/kineto_step.py" --model dlrm --out-dir "$OUT/traces" \
    --steps 3 --batch 8192 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  local events
  events=$(grep -h -o '[0-9]* events, [0-9]* bytes gzipped' "$log" | tail -1)
  [ -n "$events" ] && note "dlrm_step: $events"
  rm -f "$log"
  return "$rc"
}

# --- the driver ---

record() {  # name status seconds note
  printf '%-14s %-4s %4ss  %s\n' "$1" "$2" "$3" "$4" | tee -a "$OUT/summary.txt"
}

run_all() {
  mkdir -p "$OUT"
  : >"$OUT/summary.txt"
  local start=$SECONDS failures=0 entry name limit log what status
  declare -A result=()
  echo "device-check: $(date -u +%FT%TZ) on $(hostname), budget ${BUDGET_S}s, results in $OUT" | tee -a "$OUT/summary.txt"
  for entry in "${STEPS[@]}"; do
    read -r name limit log what <<<"$entry"
    local left=$((BUDGET_S - (SECONDS - start))) needs=""
    case "$name" in
      build) needs=configure ;;
      gpu-tests) needs=build ;;
      real-build) needs=real-configure ;;
      run-*) needs=real-build ;;
    esac
    if [ -n "$SELECTED" ] && [[ " $SELECTED " != *" $name "* ]]; then
      record "$name" SKIP 0 "not in CT_DEVICE_STEPS"
      result[$name]=SKIP; continue
    fi
    if [ -n "$needs" ] && [ "${result[$needs]:-}" != PASS ] && ! { [ "$needs" = real-build ] && real_built; }; then
      record "$name" SKIP 0 "$needs did not pass"
      result[$name]=SKIP; failures=$((failures + 1)); continue
    fi
    if [ "$left" -lt 15 ]; then
      record "$name" SKIP 0 "the overall budget of ${BUDGET_S}s is spent"
      result[$name]=SKIP; failures=$((failures + 1)); continue
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local tmp t0 rc took note_text
    tmp=$(mktemp)
    printf '\n===== %s (limit %ss): %s\n' "$name" "$limit" "$what" >>"$OUT/$log"
    echo "== $name (limit ${limit}s)"
    t0=$SECONDS
    timeout -k 10 "$limit" bash "$SCRIPT" --step "$name" >"$tmp" 2>&1
    rc=$?
    took=$((SECONDS - t0))
    cat "$tmp" >>"$OUT/$log"
    note_text=$(grep '^NOTE: ' "$tmp" | tail -1 | cut -c7-)
    if [ "$rc" -eq 0 ]; then
      status=PASS
    else
      status=FAIL; failures=$((failures + 1))
      if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        note_text="timed out after ${limit}s (see $log)"
      else
        note_text="exit $rc (see $log)${note_text:+: $note_text}"
        echo "-- last lines of $name:"; grep -v '^NOTE: ' "$tmp" | tail -5
      fi
    fi
    record "$name" "$status" "$took" "$note_text"
    result[$name]=$status
    rm -f "$tmp"
  done
  # Every trace in one archive: the device tool brings back 8 files at most.
  if [ -d "$OUT/traces" ]; then
    tar -czf "$OUT/traces.tar.gz" -C "$OUT" traces && rm -rf "$OUT/traces"
  fi
  local files
  files=$(find "$OUT" -type f | wc -l)
  if [ "$files" -gt "$MAX_OUT_FILES" ]; then
    record files FAIL 0 "$files files under \$OUT; the device tool brings back only $MAX_OUT_FILES"
    failures=$((failures + 1))
  fi
  echo "device-check: $failures step(s) did not pass; $((SECONDS - start))s in all" | tee -a "$OUT/summary.txt"
  [ "$failures" -eq 0 ]
}

# A real build left by an earlier call on a machine still warm (a rerun of the run steps alone).
real_built() { [ -x "$REAL_BUILD/cli/clustertwin" ] && [ -z "$(find "$ROOT/real" -newer "$REAL_BUILD/cli/clustertwin" -name '*.cpp' | head -1)" ]; }

dry_run() {
  echo "device-check steps (overall budget ${BUDGET_S}s; each step's limit is cut to what is left):"
  local entry name limit log what
  for entry in "${STEPS[@]}"; do
    read -r name limit log what <<<"$entry"
    printf '  %-14s %4ss  -> %-10s %s\n' "$name" "$limit" "$log" "$what"
  done
  echo "results: $OUT: summary.txt, facts.txt, build.txt, gpu.txt, nccl.json, kernels.json, runs.txt, traces.tar.gz"
  echo "         (traces/: gpt_step.rank0.json.gz and every run's trace): 8 of the $MAX_OUT_FILES files the device tool brings back"
  echo "python: $PYTHON; build folders: $BUILD, $REAL_BUILD"
  if [ -f "$CARRY_DIR/gtest/CMakeLists.txt" ] && [ -f "$CARRY_DIR/include/CLI/CLI.hpp" ]; then
    echo "carry: $CARRY_REL is ready ($(du -sh "$CARRY_DIR" | cut -f1))"
  else
    echo "carry: $CARRY_REL is missing; run scripts/device-check.sh --prepare first"
  fi
  echo "device tool call: command \"bash scripts/device-check.sh\", carry [\"$CARRY_REL\"], timeout_s $DEVICE_TIMEOUT_S"
  echo "afterwards, here: scripts/device-check.sh --predict <files_at> (the twin's predictions from the runs' traces)"
}

# What a bare GPU machine lacks for the small kernel project and the real side, from this machine's Debian
# packages: GoogleTest's source (googletest), the headers of CLI11 (libcli11-dev), nlohmann-json
# (nlohmann-json3-dev), zlib (zlib1g-dev, with its static libz.a) and Gloo (libgloo-dev: the pip wheel has
# Gloo inside libtorch_cpu.so but ships no headers). About 3 MB.
prepare() {
  local src="" candidate
  for candidate in /usr/src/googletest/googletest /usr/src/gtest; do
    if [ -f "$candidate/CMakeLists.txt" ] && [ -d "$candidate/src" ]; then src=$candidate; break; fi
  done
  if [ -z "$src" ]; then
    echo "device-check.sh --prepare: GoogleTest's source is not in /usr/src/googletest/googletest;" \
      "install Debian's googletest package (scripts/install-deps.sh installs libgtest-dev, which brings it)" >&2
    exit 2
  fi
  local inc=/usr/include lib=/usr/lib/x86_64-linux-gnu path
  for path in "$inc/CLI/CLI.hpp" "$inc/nlohmann/json.hpp" "$inc/zlib.h" "$inc/zconf.h" "$inc/gloo/context.h" \
    "$lib/libz.a"; do
    if [ ! -f "$path" ]; then
      echo "device-check.sh --prepare: $path is missing; scripts/install-deps.sh installs the packages that have it" >&2
      exit 2
    fi
  done
  rm -rf "$CARRY_DIR"
  mkdir -p "$CARRY_DIR/gtest" "$CARRY_DIR/include" "$CARRY_DIR/lib"
  # Only what GoogleTest's CMakeLists.txt builds from: no tests, samples or docs.
  cp -r "$src/CMakeLists.txt" "$src/cmake" "$src/include" "$src/src" "$CARRY_DIR/gtest/"
  cp -r "$inc/CLI" "$inc/nlohmann" "$inc/gloo" "$inc/zlib.h" "$inc/zconf.h" "$CARRY_DIR/include/"
  cp "$lib/libz.a" "$CARRY_DIR/lib/"
  if ! git -C "$ROOT" check-ignore -q "$CARRY_REL"; then
    echo "device-check.sh --prepare: $CARRY_REL is not ignored by git; it would travel twice" >&2
    exit 1
  fi
  local carry_bytes tree_bytes
  carry_bytes=$(du -sb "$CARRY_DIR" | cut -f1)
  tree_bytes=$(cd "$ROOT" && git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 |
    cut -f1)
  echo "prepared $CARRY_REL: GoogleTest from $src, headers of CLI11, nlohmann-json, zlib, Gloo, libz.a: $carry_bytes bytes"
  echo "the working tree that travels: about $tree_bytes bytes; with the carry $((tree_bytes + carry_bytes))" \
    "of the 67108864 (64 MiB) allowed"
  echo
  echo "device tool call:"
  echo "  command:   bash scripts/device-check.sh"
  echo "  carry:     [\"$CARRY_REL\"]"
  echo "  timeout_s: $DEVICE_TIMEOUT_S"
}

case "${1:-}" in
  "") run_all ;;
  --dry-run) dry_run ;;
  --prepare) prepare ;;
  --predict)
    [ -n "${2:-}" ] || { echo "device-check.sh --predict: give the folder of the call's files" >&2; exit 2; }
    exec bash "$ROOT/scripts/device-check/predict.sh" "$2" "${3:-$ROOT/build}"
    ;;
  --step)
    case "${2:-}" in
      facts) step_facts ;;
      configure) step_configure ;;
      build) step_build ;;
      gpu-tests) step_gpu_tests ;;
      nccl) step_nccl ;;
      kineto) step_kineto ;;
      kernels) step_kernels ;;
      real-configure) step_real_configure ;;
      real-build) step_real_build ;;
      run-nestpipe) step_run_nestpipe ;;
      run-flowtrain) step_run_flowtrain ;;
      run-flowtrain-large) step_run_flowtrain_large ;;
      run-flexmarl) step_run_flexmarl ;;
      run-sizes) step_run_sizes ;;
      kineto-dlrm) step_kineto_dlrm ;;
      *) echo "device-check.sh: unknown step '${2:-}'" >&2; exit 2 ;;
    esac
    ;;
  -h | --help) sed -n '2,41p' "$SCRIPT" ;;
  *) echo "device-check.sh: unknown option '$1' (allowed: --dry-run, --prepare, --predict DIR, --help)" >&2; exit 2 ;;
esac
