#!/usr/bin/env bash
# Fits the profiles clustertwin ships from the recorded traces (record.sh)
# and measures the twin's error on them; writes OUT/summary.txt.
#
#   profiles/localhost-cpu-4rank.yaml          the 4-rank collective benchmark (every repetition, 5 size
#                                              segments at most) and every 4-rank NestPipe run
#   profiles/localhost-cpu-2rank-VARIANT.yaml  one variant's 2-rank runs: the what-if's input, its collectives'
#                                              wait per latency step measured from the runs themselves
#                                              (--step-waits runs, calibrators/step_wait.h)
#   profiles/localhost-cpu-2rank.yaml          every variant's 2-rank runs pooled (the same)
#
# Errors are (twin - real) / real of the measured step time:
#   replay    the run's costs fitted on the run itself
#   what-if   the 3- and 4-rank runs predicted from the variant's 2-rank profile (the shipped model)
#   no waits  the same, the profile fitted without a step wait (the collectives' whole time their cost keys')
#   bench     the same, the step waits measured by the collective benchmarks of every rank count recorded
#             (--step-waits benchmarks; when the benchmarks cover more than one rank count)
#   pooled    the shipped model from the profile of all variants' 2-rank runs
# Usage: experiments/record/calibrate.sh [OUT=traces/data] [BUILD=build] [REPS=3]
set -euo pipefail
out=${1:-traces/data}
cli=${2:-build}/cli/clustertwin
reps=${3:-3}
variants=(torchrec semisync dbp fwp nestpipe)
p=$out/profiles
mkdir -p "$p"

echo "== calibrating"
"$cli" calibrate "$out"/collectives/bench-4rank-cpu-r*.json.gz "$out"/nestpipe/real-4rank-cpu-*.json.gz \
  --segments 5 --name localhost-cpu-4rank -o "$p/localhost-cpu-4rank.yaml" > "$p/localhost-cpu-4rank.fit.txt"
"$cli" calibrate "$out"/nestpipe/real-2rank-cpu-*.json.gz --step-waits runs \
  --name localhost-cpu-2rank -o "$p/localhost-cpu-2rank.yaml" > "$p/localhost-cpu-2rank.fit.txt"
# The machine at every rank count benchmarked: each count's collective wait per latency step.
machine=("$out"/collectives/bench-*rank-cpu-r*.json.gz)
counts=$(printf '%s\n' "${machine[@]}" | sed -n 's/.*bench-\([0-9]*\)rank-.*/\1/p' | sort -u | wc -l)
alt=$(mktemp -d)
trap 'rm -rf "$alt"' EXIT
for v in "${variants[@]}"; do
  runs=("$out"/nestpipe/real-2rank-cpu-"$v"-r*.json.gz)
  "$cli" calibrate "${runs[@]}" --step-waits runs --name "localhost-cpu-2rank-$v" -o "$p/localhost-cpu-2rank-$v.yaml" \
    > /dev/null
  "$cli" calibrate "${runs[@]}" --step-waits none --name "localhost-cpu-2rank-$v-nowaits" -o "$alt/$v-nowaits.yaml" > /dev/null
  if [[ $counts -gt 1 ]]; then
    "$cli" calibrate "${runs[@]}" "${machine[@]}" --segments 5 --step-waits benchmarks \
      --name "localhost-cpu-2rank-$v-bench" -o "$alt/$v-bench.yaml" > /dev/null
  fi
done

error() {  # validate's step_error of one run, in percent
  "$cli" validate nestpipe --json --real "$@" | sed -n 's/^  "step_error": \([-0-9.e+]*\).*/\1/p' |
    awk '{printf "%.2f", 100 * $1}'
}
# "median M range LO..HI (n=N)" of numbers; with "abs", of their absolute values
stats() {
  local abs=$1; shift
  tr ' ' '\n' <<<"$*" | sed '/^$/d' | awk -v abs="$abs" '{print (abs == "abs") ? sqrt($1 * $1) : $1}' | sort -g |
    awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
      printf "median %7.2f range %7.2f..%-7.2f (n=%d)", m, v[1], v[NR], NR}'
}
step_ms() {
  "$cli" validate nestpipe --json --real "$1" | sed -n 's/^  "real_step_ms": \([-0-9.e+]*\).*/\1/p'
}

{
  echo "# clustertwin: the twin against the recorded traces ($reps repetitions each, $(date -u +%Y-%m-%d))"
  echo "# errors in % of the measured step time, (twin - real) / real"
  echo "## real step time, ms"
  for w in 2 3 4; do
    for v in "${variants[@]}"; do
      ms=()
      for r in $(seq 1 "$reps"); do ms+=("$(step_ms "$out/nestpipe/real-${w}rank-cpu-$v-r$r.json.gz")"); done
      printf '%d ranks %-9s %s\n' "$w" "$v" "$(stats raw "${ms[@]}")"
    done
  done
  echo "## replay on 4 ranks (each run's costs fitted on itself)"
  all=()
  for v in "${variants[@]}"; do
    e=()
    for r in $(seq 1 "$reps"); do e+=("$(error "$out/nestpipe/real-4rank-cpu-$v-r$r.json.gz")"); done
    all+=("${e[@]}")
    printf '%-9s error %% %s\n' "$v" "$(stats raw "${e[@]}")"
  done
  printf 'all       |error| %% %s\n' "$(stats abs "${all[@]}")"
  for w in 3 4; do
    columns="the variant's / no waits"
    [[ $counts -gt 1 ]] && columns+=" / benchmark waits"
    echo "## what-if: $w ranks predicted from 2-rank profiles ($columns / all variants pooled)"
    all=()
    for v in "${variants[@]}"; do
      own=() nowaits=() bench=() pooled=()
      for r in $(seq 1 "$reps"); do
        f=$out/nestpipe/real-${w}rank-cpu-$v-r$r.json.gz
        own+=("$(error "$f" --profile "$p/localhost-cpu-2rank-$v.yaml")")
        nowaits+=("$(error "$f" --profile "$alt/$v-nowaits.yaml")")
        [[ $counts -gt 1 ]] && bench+=("$(error "$f" --profile "$alt/$v-bench.yaml")")
        pooled+=("$(error "$f" --profile "$p/localhost-cpu-2rank.yaml")")
      done
      all+=("${own[@]}")
      line=$(printf '%-9s own %% %s | no waits %% %s' "$v" "$(stats raw "${own[@]}")" "$(stats raw "${nowaits[@]}")")
      [[ $counts -gt 1 ]] && line+=" | bench % $(stats raw "${bench[@]}")"
      printf '%s | pooled %% %s\n' "$line" "$(stats raw "${pooled[@]}")"
    done
    printf 'all       own |error| %% %s\n' "$(stats abs "${all[@]}")"
  done
  echo "## collectives: the twin on localhost-cpu-4rank against the benchmark"
  benches=$(ls "$out"/collectives/bench-4rank-cpu-r*.json.gz | paste -sd,)
  "$cli" validate collectives --real "$benches" --profile "$p/localhost-cpu-4rank.yaml" | tail -1 |
    sed 's/^# /all repetitions pooled: /'
  for r in $(seq 1 "$reps"); do
    "$cli" validate collectives --profile "$p/localhost-cpu-4rank.yaml" \
      --real "$out/collectives/bench-4rank-cpu-r$r-small.json.gz,$out/collectives/bench-4rank-cpu-r$r-large.json.gz" |
      tail -1 | sed "s/^# /repetition $r alone: /"
  done
} | tee "$out/summary.txt"
