#!/usr/bin/env bash
# The shared-core what-if on recordings the model was not chosen on (issue 45, item 4): NestPipe dbp at 2 and
# 4 ranks, three 100-step runs each, one seed per recording.
#
#   experiments/record/heldout.sh record OUT SEED [BUILD=build] [STEPS=100]
#       OUT/real-{2,4}rank-cpu-dbp-r{1,2,3}.json.gz: `clustertwin launch --nproc W -- run nestpipe --variant dbp
#       --steps STEPS --seed SEED`, a repetition's 2 and 4 ranks back to back (a slow spell of the shared host
#       lands on both). Record on an otherwise idle machine.
#   experiments/record/heldout.sh check [--max-whatif E] [--max-median E] [--max-replay E] DIR...
#       Per recording DIR: `clustertwin calibrate` on its 2-rank runs (the default calibration), then
#         what-if  its 4-rank runs on that profile: the median of the three runs' errors, and pooled (the
#                  twin's step against the runs' mean step);
#         replay   its 2-rank runs on that profile, pooled.
#       One line per recording, then the median what-if over the recordings. Exit 3 when a recording's
#       what-if (median of its runs) is beyond --max-whatif, the median over recordings beyond --max-median,
#       or a pooled replay beyond --max-replay (fractions: 0.08 = 8%; unset: not checked); 2 on bad
#       arguments, 1 when a command fails.
# CLUSTERTWIN names the binary (default: build/cli/clustertwin).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cli=${CLUSTERTWIN:-$here/../../build/cli/clustertwin}
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

record() {
  [[ $# -ge 2 ]] || usage
  local out=$1 seed=$2 build=${3:-build} steps=${4:-100}
  [[ $seed =~ ^[0-9]+$ ]] || { echo "heldout.sh record: SEED '$seed' is not a non-negative integer" >&2; exit 2; }
  local bin=$build/cli/clustertwin
  [[ -x $bin ]] || { echo "heldout.sh record: $bin not found: build first (make build)" >&2; exit 2; }
  mkdir -p "$out"
  for r in 1 2 3; do
    for w in 2 4; do
      echo "== dbp, $w ranks, seed $seed, run $r of 3"
      "$bin" launch --nproc "$w" -- run nestpipe --variant dbp --steps "$steps" --seed "$seed" --json \
        --trace "$out/real-${w}rank-cpu-dbp-r$r.json.gz" > /dev/null || exit 1
    done
  done
}

# "NAME": the value of a top-level JSON number field of validate's output.
field() { sed -n "s/^  \"$1\": \([-0-9.e+]*\).*/\1/p"; }
beyond() { awk -v e="$1" -v m="$2" 'BEGIN { exit !(m != "" && (e < 0 ? -e : e) > m) }'; }

check() {
  local max_whatif="" max_median="" max_replay=""
  while [[ $# -gt 0 && $1 == --* ]]; do
    [[ $# -ge 2 ]] || usage
    case $1 in
      --max-whatif) max_whatif=$2 ;;
      --max-median) max_median=$2 ;;
      --max-replay) max_replay=$2 ;;
      *) echo "heldout.sh check: unknown option '$1'" >&2; exit 2 ;;
    esac
    [[ $2 =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "heldout.sh check: $1 '$2' is not a fraction >= 0" >&2; exit 2; }
    shift 2
  done
  [[ $# -ge 1 ]] || usage
  [[ -x $cli ]] || { echo "heldout.sh: $cli not found (make build, or set CLUSTERTWIN)" >&2; exit 2; }
  local work status=0 medians=()
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  for dir in "$@"; do
    for f in "$dir"/real-{2,4}rank-cpu-dbp-r{1,2,3}.json.gz; do
      [[ -f $f ]] || { echo "heldout.sh check: $f: no such recording (heldout.sh record makes one)" >&2; exit 2; }
    done
  done
  printf '%-40s %16s %16s %16s\n' "recording" "what-if median" "what-if pooled" "replay pooled"
  for dir in "$@"; do
    local two=() four=()
    for r in 1 2 3; do
      two+=("$dir/real-2rank-cpu-dbp-r$r.json.gz")
      four+=("$dir/real-4rank-cpu-dbp-r$r.json.gz")
    done
    "$cli" calibrate "${two[@]}" -o "$work/p.yaml" > /dev/null || exit 1
    local w r
    w=$("$cli" validate nestpipe --json --real "$(IFS=,; echo "${four[*]}")" --profile "$work/p.yaml") || exit 1
    r=$("$cli" validate nestpipe --json --real "$(IFS=,; echo "${two[*]}")" --profile "$work/p.yaml") || exit 1
    local wm wp rp
    wm=$(field step_error <<< "$w")
    wp=$(field pooled_step_error <<< "$w")
    rp=$(field pooled_step_error <<< "$r")
    printf '%-40s %15.2f%% %15.2f%% %15.2f%%\n' "$dir" "$(awk -v x="$wm" 'BEGIN{print 100*x}')" \
      "$(awk -v x="$wp" 'BEGIN{print 100*x}')" "$(awk -v x="$rp" 'BEGIN{print 100*x}')"
    medians+=("$wm")
    beyond "$wm" "$max_whatif" && status=3
    beyond "$rp" "$max_replay" && status=3
  done
  local median
  median=$(printf '%s\n' "${medians[@]}" | sort -g | awk '{v[NR]=$1} END {print NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}')
  printf '%-40s %15.2f%%\n' "median over ${#medians[@]} recording(s)" "$(awk -v x="$median" 'BEGIN{print 100*x}')"
  beyond "$median" "$max_median" && status=3
  return $status
}

case ${1:-} in
  record) shift; record "$@" ;;
  check) shift; check "$@"; exit $? ;;
  *) usage ;;
esac
