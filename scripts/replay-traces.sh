#!/usr/bin/env bash
# Usage: scripts/replay-traces.sh [--base PROFILE] TRACE[,TRACE...]...
#
# The bring-your-own-trace chain on each profiler (Kineto) trace given (one
# rank's file, or several ranks' files of one job joined by commas), one
# line per trace: import-kineto, derive-plan, calibrate on the trace itself
# and `validate imported` (the twin at the recorded world size against the
# measured step: the profiler step markers' pace, else the step's span). A
# trace with two or more steps leaves its first out (--warmup 1); a one-step
# trace is measured whole. A trace that cannot go through gets the one line
# of the step that refused it. Work files go to a temporary folder, removed
# at the end. Exit status 0 when every trace replays or is refused with its
# line, 1 when a step failed otherwise, 2 for bad arguments.
#
#   scripts/replay-traces.sh ../shared/traces/hta/*.json.gz ../shared/traces/h200/*.json.gz
set -uo pipefail

if [ -n "${CLUSTERTWIN:-}" ]; then
  cli=$CLUSTERTWIN
elif [ -x "$(dirname "$0")/../build/cli/clustertwin" ]; then
  cli=$(dirname "$0")/../build/cli/clustertwin
else
  cli=$(command -v clustertwin || echo clustertwin)
fi
base=h100-1024
if [ "${1:-}" = "--base" ]; then
  [ $# -ge 2 ] || { echo "replay-traces.sh: --base needs a profile name or YAML path" >&2; exit 2; }
  base=$2
  shift 2
fi
[ $# -ge 1 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
command -v "$cli" > /dev/null || { echo "replay-traces.sh: $cli: not built (make build, or set CLUSTERTWIN)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-60s %6s %5s %12s %12s %8s\n' "trace" "steps" "ranks" "real ms" "twin ms" "error"
status=0
# Runs one step of the chain (its stdout to $d/out); on failure prints the trace's line with the step's one-line
# reason and returns 1. A refusal (exit 2: the input said no) is an answer; anything else fails the script.
step() {
  local what=$1
  shift
  "$@" > "$d/out" 2> "$d/err"
  local rc=$?
  [ $rc -eq 0 ] && return 0
  printf '%-60s %s: %s\n' "$short" "$what" "$(tail -1 "$d/err" | sed -e 's/^clustertwin: //' -e "s|$d/||g")"
  [ $rc -eq 2 ] || status=1
  return 1
}
for trace in "$@"; do
  IFS=, read -r -a files <<< "$trace"
  name=$(basename "${files[0]}")
  name=${name%.gz}
  name=${name%.json}
  short=${name:0:60}
  d="$work/$name"
  mkdir -p "$d"
  step import-kineto "$cli" trace import-kineto "${files[@]}" "$d/imported.json" || continue
  step derive-plan "$cli" trace derive-plan "$d/imported.json" -o "$d/run.json" || continue
  # "...; N events on R rank(s) x S step(s)"
  read -r ranks steps < <(sed -n 's/.* on \([0-9]*\) rank(s) x \([0-9]*\) step(s).*/\1 \2/p' "$d/out" | tail -1)
  warmup=$([ "${steps:-1}" -ge 2 ] && echo 1 || echo 0)
  step calibrate "$cli" calibrate "$d/run.json" --base "$base" --warmup "$warmup" --drain 0 -o "$d/profile.yaml" ||
    continue
  step validate "$cli" validate imported --real "$d/run.json" --profile "$d/profile.yaml" --warmup "$warmup" \
    --drain 0 || continue
  # "  real step X ms, twin step Y ms, error Z%"
  read -r real twin error < <(sed -n 's/^  real step \([0-9.]*\) ms, twin step \([0-9.]*\) ms, error \(.*\)$/\1 \2 \3/p' "$d/out")
  printf '%-60s %6s %5s %12s %12s %8s\n' "$short" "$steps" "$ranks" "$real" "$twin" "$error"
done
exit $status
