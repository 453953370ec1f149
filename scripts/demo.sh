#!/usr/bin/env bash
# The demo (`make demo`): each system's headline study, then one page that
# puts every reproduced figure beside the paper's.
#
#   scripts/demo.sh BUILD_DIR OUT_DIR JOBS
#
#   [1/6] NestPipe   BUILD/experiments/ct_nestpipe_study   -> OUT/nestpipe   (~25 s on 2 cores)
#   [2/6] FlexMARL   BUILD/experiments/ct_flexmarl_study   -> OUT/flexmarl   (~2 s)
#   [3/6] FlowTrain  BUILD/experiments/ct_flowtrain_study  -> OUT/flowtrain  (~5 s)
#   [4/6] IGSP       BUILD/experiments/ct_igsp_study, quick -> OUT/igsp      (~75 s; full: make igsp, 14 min)
#   [5/6] SIS        BUILD/cli/clustertwin sis ... --quick -> OUT/sis        (~55 s; full: make sis)
#   [6/6] LLM        BUILD/cli/clustertwin sim llm --json  -> OUT/llm/step.json (~8 s: GPT-3 175B on 1,024 H100s,
#                    the planner's split, efficiencies fitted by experiments/llm's study; its checked-in held-out
#                    errors copied beside it as validation.json)
#   report           $REPORT_BIN OUT (default BUILD/experiments/ct_report) -> OUT/report/index.html
#
# About 2.7 min in all on a 2-core machine. Progress goes to stderr, one
# line a step; each study's stdout and stderr go to
# OUT/<system>/{stdout,stderr}.txt. A failing step stops the demo with its
# name and the tail of its output, and a non-zero exit. Each step's folder is
# emptied first, so that the report never shows a previous run's plots.

set -euo pipefail

usage() {
  echo "usage: scripts/demo.sh BUILD_DIR OUT_DIR JOBS   (REPORT_BIN overrides BUILD_DIR/experiments/ct_report)" >&2
  exit 2
}
[[ $# -eq 3 ]] || usage
BUILD=$1
OUT=$2
JOBS=$3
[[ -n $OUT ]] || usage
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "demo: JOBS '$JOBS' is not a positive integer" >&2; exit 2; }
REPORT_BIN=${REPORT_BIN:-$BUILD/experiments/ct_report}
CLI=$BUILD/cli/clustertwin
SRC=$(cd "$(dirname "$0")/.." && pwd)

# The quick IGSP run: the four single sources and their uniform mix (the
# paper's mix-vs-single comparison), Self-Cal, SGS and IGSP (its comparison
# against both), one seed each, every evaluation item kept (Math retention
# is already coarse: the dense model gets ~31 of 600 items right).
IGSP_SETS=general,code,math,commonsense,general+code+math+commonsense,selfcal,sgs,igsp
IGSP_QUICK=(--seeds 1 --sets "$IGSP_SETS")

for program in "$BUILD/experiments/ct_nestpipe_study" "$BUILD/experiments/ct_flexmarl_study" \
  "$BUILD/experiments/ct_flowtrain_study" "$BUILD/experiments/ct_igsp_study" "$CLI" "$REPORT_BIN"; do
  [[ -x $program ]] || { echo "demo: $program is missing or not executable: build first (make build)" >&2; exit 1; }
done
command -v gnuplot >/dev/null 2>&1 ||
  echo "demo: gnuplot is not installed: the report will have its tables but no plots" >&2
mkdir -p "$OUT"

now() {
  local t=${EPOCHREALTIME:-$(date +%s.%N)}
  echo "${t/,/.}"
}
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

demo_start=$(now)
step=0
steps=6

# run_step SYSTEM LABEL COMMAND...: one study into OUT/SYSTEM, its output kept there.
# A step of several commands passes them as one `bash -c` string.
run_step() {
  local system=$1 label=$2
  shift 2
  step=$((step + 1))
  local dir=$OUT/$system
  rm -rf -- "$dir"
  mkdir -p -- "$dir"
  printf '[%d/%d] %s ... ' "$step" "$steps" "$label" >&2
  local start rc=0
  start=$(now)
  "$@" >"$dir/stdout.txt" 2>"$dir/stderr.txt" || rc=$?
  if ((rc != 0)); then
    printf 'FAILED (exit %d after %s s)\n' "$rc" "$(elapsed "$start" "$(now)")" >&2
    echo "demo: step $step/$steps, $label, failed: $*" >&2
    for f in stderr.txt stdout.txt; do
      echo "--- last lines of $dir/$f" >&2
      # Progress written to a file is one line per update (common/progress.h).
      grep -v '^[[:space:]]*$' "$dir/$f" | tail -n 15 >&2 || true
    done
    exit "$rc"
  fi
  printf 'done in %s s\n' "$(elapsed "$start" "$(now)")" >&2
}

# The LLM twin's what-if: GPT-3 175B on 1,024 H100s with `plan llm`'s split, on the profile the held-out
# study fitted to the published steps set aside for fitting (experiments/llm/README.md).
llm_step() {
  "$CLI" sim llm --platform "$SRC/experiments/llm/results/h100-dgx-fitted.yaml" --workers 1024 --tp 4 --pp 8 \
    --micro-batch 1 --global-batch 1536 --schedule interleaved --virtual-stages 6 --recompute none --zero 1 \
    --sequence-parallel --json >"$OUT/llm/step.json" &&
    cp "$SRC/experiments/llm/results/study.json" "$OUT/llm/validation.json"
}

sis_quick() {
  "$CLI" sis study --quick --out "$OUT/sis" && "$CLI" sis stability --quick --out "$OUT/sis"
}

run_step nestpipe "NestPipe scaling, 128-1,536 workers (twin, npu-1536 and gpu-128)" \
  "$BUILD/experiments/ct_nestpipe_study" "$OUT/nestpipe" "$JOBS"
run_step flexmarl "FlexMARL frameworks (twin, npu-768)" \
  "$BUILD/experiments/ct_flexmarl_study" "$OUT/flexmarl"
run_step flowtrain "FlowTrain modes, 128-1,024 GPUs (twin, h100-1024)" \
  "$BUILD/experiments/ct_flowtrain_study" "$OUT/flowtrain"
run_step igsp "IGSP calibration sets, quick: 8 sets x 1 seed (real pruning, CPU)" \
  "$BUILD/experiments/ct_igsp_study" --out "$OUT/igsp" --jobs "$JOBS" "${IGSP_QUICK[@]}"
run_step sis "SIS estimators and GRPO stability, quick (real kernels, CPU)" sis_quick
run_step llm "LLM training: GPT-3 175B on 1,024 H100s (twin, fitted to published steps)" llm_step

printf 'report ... ' >&2
report_start=$(now)
rc=0
report_output=$("$REPORT_BIN" "$OUT" 2>&1) || rc=$?
if ((rc != 0)); then
  printf 'FAILED (exit %d)\n%s\n' "$rc" "$report_output" >&2
  exit "$rc"
fi
printf 'done in %s s\n' "$(elapsed "$report_start" "$(now)")" >&2
echo "Report: $OUT/report/index.html (demo wall time $(elapsed "$demo_start" "$(now)") s)"
