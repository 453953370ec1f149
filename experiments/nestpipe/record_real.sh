#!/usr/bin/env bash
# Records NestPipe's real runs on this machine (4 CPU ranks, Gloo, 20 steps,
# seed 7, dlrm-small, batch 64, 4 micro-batches), one compressed trace per
# variant, then checks the twin against them with `clustertwin validate`:
#   replay      costs fitted on the run itself
#   predicted   costs fitted on the other variants' runs (pooled), so the
#               run's own timings are not used: what the plans explain
# Usage: experiments/nestpipe/record_real.sh [OUT=traces/data/nestpipe] [BUILD=build]
set -euo pipefail
out=${1:-traces/data/nestpipe}
cli=${2:-build}/cli/clustertwin
variants=(torchrec semisync dbp fwp nestpipe)
mkdir -p "$out"
for v in "${variants[@]}"; do
  echo "== recording $v"
  "$cli" launch --nproc 4 -- run nestpipe --variant "$v" --steps 20 --seed 7 --json \
    --trace "$out/real-4rank-cpu-$v.json.gz" | tail -1
done
printf '\n%-9s %14s %24s\n' variant "replay error" "predicted from the others"
for v in "${variants[@]}"; do
  others=()
  for o in "${variants[@]}"; do [[ $o == "$v" ]] || others+=("$out/real-4rank-cpu-$o.json.gz"); done
  replay=$("$cli" validate nestpipe --real "$out/real-4rank-cpu-$v.json.gz" --json)
  predicted=$("$cli" validate nestpipe --real "$out/real-4rank-cpu-$v.json.gz" --json \
    --costs-from "$(IFS=,; echo "${others[*]}")")
  field() { sed -n "s/.*\"$1\": \([-0-9.e]*\).*/\1/p" <<<"$2" | head -1; }
  printf '%-9s real %7.2f ms  twin %7.2f ms (%+6.1f%%)  twin %7.2f ms (%+6.1f%%)\n' "$v" \
    "$(field real_step_ms "$replay")" "$(field twin_step_ms "$replay")" \
    "$(awk "BEGIN{print 100*$(field step_error "$replay")}")" \
    "$(field twin_step_ms "$predicted")" "$(awk "BEGIN{print 100*$(field step_error "$predicted")}")"
done
