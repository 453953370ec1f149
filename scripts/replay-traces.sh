#!/usr/bin/env bash
# Usage: scripts/replay-traces.sh [--base PROFILE] [--split FILE] TRACE[,TRACE...]...
#
# The bring-your-own-trace chain on each profiler (Kineto) trace given (one
# rank's file, or several ranks' files of one job joined by commas), one
# line per trace: import-kineto, derive-plan, calibrate on the trace itself
# and `validate imported` (the twin at the recorded world size against the
# measured step: the profiler step markers' pace, else the step's span). A
# trace with two or more steps leaves its first out (--warmup 1); a one-step
# trace is measured whole. A trace that cannot go through gets the one line
# of the step that refused it. With --split (traces/data/split.txt: lines
# `fit NAME` and `test NAME`, NAME a trace's file name without .json/.gz),
# each line says its trace's set and a summary per set follows: the figure
# to report is the test set's. Work files go to a temporary folder, removed
# at the end. Exit status 0 when every trace replays or is refused with its
# line, 1 when a step failed otherwise, 2 for bad arguments.
#
#   scripts/replay-traces.sh --split traces/data/split.txt ../shared/traces/hta/*.json* ../shared/traces/h200/*.json*
set -uo pipefail

if [ -n "${CLUSTERTWIN:-}" ]; then
  cli=$CLUSTERTWIN
elif [ -x "$(dirname "$0")/../build/cli/clustertwin" ]; then
  cli=$(dirname "$0")/../build/cli/clustertwin
else
  cli=$(command -v clustertwin || echo clustertwin)
fi
base=h100-1024
split=""
while [ "${1:-}" = "--base" ] || [ "${1:-}" = "--split" ]; do
  if [ $# -lt 2 ]; then
    [ "$1" = "--base" ] && echo "replay-traces.sh: --base needs a profile name or YAML path" >&2
    [ "$1" = "--split" ] && echo "replay-traces.sh: --split needs a file (traces/data/split.txt)" >&2
    exit 2
  fi
  if [ "$1" = "--base" ]; then base=$2; else split=$2; fi
  shift 2
done
[ $# -ge 1 ] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
if [ -n "$split" ]; then
  [ -f "$split" ] || { echo "replay-traces.sh: --split $split: no such file" >&2; exit 2; }
  bad=$(grep -v -E '^[[:space:]]*(#|$)' "$split" | grep -v -E '^(fit|test) [^ ]+$' | head -1)
  [ -z "$bad" ] || { echo "replay-traces.sh: --split $split: a line is not 'fit NAME' or 'test NAME': '$bad'" >&2; exit 2; }
fi
# The set a trace belongs to in the split file ("-" when it names none, or without --split).
set_of() {
  local s=""
  [ -n "$split" ] && s=$(awk -v n="$1" '$2 == n {print $1; exit}' "$split")
  echo "${s:--}"
}
command -v "$cli" > /dev/null || { echo "replay-traces.sh: $cli: not built (make build, or set CLUSTERTWIN)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

printf '%-60s %6s %5s %12s %12s %8s %5s\n' "trace" "steps" "ranks" "real ms" "twin ms" "error" "set"
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
  set=$(set_of "$name")
  printf '%-60s %6s %5s %12s %12s %8s %5s\n' "$short" "$steps" "$ranks" "$real" "$twin" "$error" "$set"
  echo "$set $error" >> "$work/errors"
done
if [ -n "$split" ] && [ -f "$work/errors" ]; then
  for s in fit test; do
    awk -v s="$s" '$1 == s { e = $2; sub(/%/, "", e); e += 0; a = e < 0 ? -e : e; n++; if (a > m) m = a; t += a }
      END { if (n) printf "# %s set: %d trace(s) replayed, largest |error| %.2f%%, mean |error| %.2f%%\n", s, n, m, t / n;
            else printf "# %s set: no trace replayed\n", s }' "$work/errors"
  done
fi
exit $status
