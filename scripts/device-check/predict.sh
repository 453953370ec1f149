#!/usr/bin/env bash
# The twin's predictions from the device check's real runs (scripts/device-check.sh --predict).
# SimGrid is not on the GPU machine, so this runs here, on the call's files:
#
#   scripts/device-check/predict.sh FILES_DIR [BUILD=build]
#
# FILES_DIR holds traces.tar.gz (and facts.txt) as the device tool brought them back, or the runs' traces
# as .json.gz (traces/data/h200: the call of 2026-12-04). For each system the
# twin is fitted on one configuration's trace and predicts another configuration's step, as a capacity
# planner would use it:
#   nestpipe   costs from the torchrec run (1 rank, NCCL) -> dbp's and nestpipe's steps; dbp's -> dbp with the
#              table on the device; each run replayed on its own costs; the 4-rank Gloo run (GPU shared,
#              staged through host memory) replayed
#   flowtrain  costs from monolithic -> flowtrain's step
#   flexmarl   costs from sync -> flexmarl's step
#   sizes      runs the call recorded at other sizes (*-size-*.json: --sizes in device-check.sh), each from the
#              shipped runs' costs (traces/data/h200)
# Prints one line per prediction: the real step, the twin's, the error; writes predictions.txt beside.
# CT_PREDICT_CORES overrides the core count read from facts.txt (calls before 2026-12-04 18:00 printed
# nproc under OMP_NUM_THREADS=1, which says 1).
# Exit 0 when every prediction ran (whatever its error), 1 when one could not, 2 on bad arguments.
set -uo pipefail
dir=${1:-}
build=${2:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cli=$build/cli/clustertwin
if [ -z "$dir" ] || { [ ! -f "$dir/traces.tar.gz" ] && [ ! -f "$dir/nestpipe-1gpu-torchrec.json.gz" ]; }; then
  echo "predict.sh: '$dir' has neither traces.tar.gz (the device tool's files) nor the runs' .json.gz" \
    "(traces/data/h200)" >&2
  exit 2
fi
if [ ! -x "$cli" ]; then
  echo "predict.sh: $cli is not built (make build, or give BUILD)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -f "$dir/traces.tar.gz" ]; then
  tar -xzf "$dir/traces.tar.gz" -C "$work"
  t=$work/traces
  out=$dir/predictions.txt  # beside the call's files
else
  mkdir -p "$work/traces"
  for f in "$dir"/*.json.gz; do gunzip -c "$f" >"$work/traces/$(basename "$f" .gz)"; done
  t=$work/traces
  out=$work/predictions.txt  # a shipped folder stays as it is
fi

# The machine the runs were recorded on: the shipped h200-1gpu profile (one H200, a host of 16 cores, its
# measured PCIe, host gather and launch costs), with the call's core count (facts.txt) where it says another.
# Ranks that share the one GPU through Gloo (the 4-rank NestPipe run stages its tensors in host memory) are
# host processes on those cores: localhost-cpu's shape with that many cores (shared).
cores=$(sed -n '/^## host/,/^##/p' "$dir/facts.txt" 2>/dev/null | sed -n '3p' | tr -dc '0-9')
cores=${CT_PREDICT_CORES:-${cores:-16}}  # CT_PREDICT_CORES: where facts.txt has no or a wrong count
sed -e "s/^name: .*/name: device-check-gpu/" -e "s/^  cores: [0-9]*/  cores: $cores/" \
  "$root/sim/platforms/h200-1gpu.yaml" >"$work/gpu.yaml"
sed -e "s/^name: .*/name: device-check-shared/" -e "s/^node_cores: [0-9]*/node_cores: $cores/" \
  "$root/sim/platforms/localhost-cpu.yaml" >"$work/shared.yaml"

failed=0
[ -w "$(dirname "$out")" ] || out=$work/predictions.txt
: >"$out"
say() { echo "$*" | tee -a "$out"; }

# validate's JSON: "real_step_ms", "twin_step_ms" and "step_error" of one prediction.
predict() {  # label system real profile [validate options]
  local label=$1 system=$2 real=$3 profile=$4
  shift 4
  if [ ! -f "$real" ]; then
    say "$(printf '%-44s missing: %s' "$label" "${real##*/}")"
    failed=1
    return
  fi
  local json
  if ! json=$("$cli" validate "$system" --json --real "$real" --profile "$profile" "$@" 2>&1); then
    say "$(printf '%-44s failed: %s' "$label" "$(tail -1 <<<"$json")")"
    failed=1
    return
  fi
  local line
  line=$(python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
runs = j.get("runs")
run = runs[0] if isinstance(runs, list) and runs else {}
def ms(prefix):
    for d in (run, j):
        if prefix + "_step_s" in d: return 1e3 * d[prefix + "_step_s"]
        if prefix + "_step_ms" in d: return d[prefix + "_step_ms"]
    return float("nan")
print("real %10.3f ms  twin %10.3f ms  error %+7.1f%%" % (ms("real"), ms("twin"), 100 * j["step_error"]))
' <<<"$json") || line="(no step times in validate's output)"
  say "$(printf '%-46s %s' "$label" "$line")"
}

say "# the twin's predictions from the device check's runs ($(date -u +%F), $cores cores on the GPU machine)"
g=$work/gpu.yaml
for v in torchrec dbp nestpipe; do
  predict "nestpipe $v, 1 GPU: replay" nestpipe "$t/nestpipe-1gpu-$v.json" "$g"
done
for v in dbp nestpipe; do
  predict "nestpipe $v, 1 GPU: from torchrec's costs" nestpipe "$t/nestpipe-1gpu-$v.json" "$g" \
    --costs-from "$t/nestpipe-1gpu-torchrec.json"
done
predict "nestpipe dbp, store on device: replay" nestpipe "$t/nestpipe-1gpu-dbp-store-device.json" "$g"
predict "nestpipe dbp, store on device: from dbp's" nestpipe "$t/nestpipe-1gpu-dbp-store-device.json" "$g" \
  --costs-from "$t/nestpipe-1gpu-dbp.json"
predict "nestpipe dbp, 4 ranks on 1 GPU (Gloo): replay" nestpipe "$t/nestpipe-4rank-gloo-dbp.json" "$work/shared.yaml"
predict "flowtrain monolithic, 2 ranks: replay" flowtrain "$t/flowtrain-2rank-monolithic.json" "$g"
predict "flowtrain flowtrain, 2 ranks: from monolithic" flowtrain "$t/flowtrain-2rank-flowtrain.json" "$g" \
  --costs-from "$t/flowtrain-2rank-monolithic.json"
predict "flexmarl sync, 5 ranks: replay" flexmarl "$t/flexmarl-5rank-sync.json" "$g"
predict "flexmarl flexmarl, 5 ranks: from sync" flexmarl "$t/flexmarl-5rank-flexmarl.json" "$g" \
  --costs-from "$t/flexmarl-5rank-sync.json"
# Runs at other sizes than the shipped calibration's (the device check's --sizes step, when it ran): each
# predicted from the shipped runs of traces/data/h200, the calibration a user would have.
shipped=$root/traces/data/h200
for f in "$t"/nestpipe-1gpu-*-size-*.json; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .json)
  v=${name#nestpipe-1gpu-}
  v=${v%%-size-*}
  src=$work/shipped-nestpipe-1gpu-$v.json
  [ -f "$src" ] || gunzip -c "$shipped/nestpipe-1gpu-$v.json.gz" >"$src" 2>/dev/null || continue
  predict "nestpipe $v, 1 GPU, ${name#*-size-}: from the shipped $v run" nestpipe "$f" "$g" --costs-from "$src"
done
for f in "$t"/flowtrain-2rank-*-size-*.json; do
  [ -f "$f" ] || continue
  name=$(basename "$f" .json)
  src=$work/shipped-flowtrain-2rank-monolithic.json
  [ -f "$src" ] || gunzip -c "$shipped/flowtrain-2rank-monolithic.json.gz" >"$src"
  predict "flowtrain ${name#flowtrain-2rank-}: from the shipped monolithic run" flowtrain "$f" "$g" --costs-from "$src"
done
# The shipped nestpipe run from torchrec at two batch sizes (the shipped 2048 and the call's 512, a micro-batch of
# nestpipe's): the fits' lines then separate each key's fixed cost from its per-sample one.
if [ -f "$t/nestpipe-1gpu-torchrec-size-b512.json" ]; then
  predict "nestpipe nestpipe, 1 GPU: from torchrec at 2048 and 512" nestpipe "$t/nestpipe-1gpu-nestpipe.json" "$g" \
    --costs-from "$t/nestpipe-1gpu-torchrec.json,$t/nestpipe-1gpu-torchrec-size-b512.json"
fi
# Profiler traces the call recorded besides the shipped ones (kineto-dlrm's DLRM step): the bring-your-own-trace
# chain on each, on this profile.
for f in "$t"/*_step.rank0.json.gz; do
  [ -f "$f" ] || continue
  case $(basename "$f") in gpt_step.rank0.json.gz) continue ;; esac
  line=$(CLUSTERTWIN=$cli bash "$root/scripts/replay-traces.sh" --base "$g" "$f" 2>&1 | tail -1)
  # "NAME STEPS RANKS REAL TWIN ERROR SET", or "NAME STEP: REASON" when a step refused it
  read -r _ _ _ real twin error _ <<<"$line"
  if [[ $error == *% ]]; then
    line=$(printf 'real %10.3f ms  twin %10.3f ms  error %7s' "$real" "$twin" "$error")
  else
    line="failed: ${line#* }"
    failed=1
  fi
  say "$(printf '%-46s %s' "kineto $(basename "$f" .rank0.json.gz): replay" "$line")"
done
[ "$out" = "$dir/predictions.txt" ] && echo "predict.sh: written to $out"
exit "$failed"
