#!/usr/bin/env bash
# FlexMARL's real executor, every framework on the same task and machine:
# `clustertwin launch --nproc N -- run flexmarl --framework F ...`, REPS times
# each, one CSV row per run (median step, tokens/s, utilisation, swaps, ...).
#
#   experiments/flexmarl/real_compare.sh [OUT.csv] [NPROC=5] [STEPS=10] [QUERIES=16] [REPS=3]
#
# The defaults are the README's measured configuration: a controller, three
# rollout workers and one trainer, 16 problems x 4 trajectories per agent and
# step in micro-batches of 8 (EXTRA's default, "--micro-batch 8").
# EXTRA="--trainers 3 --micro-batch 16" passes other flags to every run; with
# TRACES=DIR each run also writes DIR/FRAMEWORK-REP.json for
# `clustertwin validate flexmarl` (the process twin).
#
# The runs share this machine's cores: with more ranks than cores, a worker's
# step time includes waiting for a core (see experiments/flexmarl/README.md).
set -euo pipefail
out=${1:-out/flexmarl/real.csv}
nproc=${2:-5}
steps=${3:-10}
queries=${4:-16}
reps=${5:-3}
cli=${CLI:-build/cli/clustertwin}
[[ -x $cli ]] || { echo "real_compare.sh: $cli not built (make build)" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
tmp=$(mktemp "$out.XXXXXX")
echo "framework,nproc,rep,step_s,tokens_per_s,utilization,swaps,reassignments,migrations,weight_loads" > "$tmp"
extra=${EXTRA---micro-batch 8}
[[ -n ${TRACES:-} ]] && mkdir -p "$TRACES"
for rep in $(seq 1 "$reps"); do
  for framework in sync marti flexmarl flexmarl-nobalance flexmarl-noasync; do
    trace=()
    [[ -n ${TRACES:-} ]] && trace=(--trace "$TRACES/$framework-$rep.json")
    # shellcheck disable=SC2086
    line=$("$cli" launch --nproc "$nproc" -- run flexmarl --framework "$framework" --steps "$steps" \
      --queries "$queries" --seed "$rep" $extra "${trace[@]}" --json | sed -n 's/^\[rank 0\] //p')
    field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<< "$line" | tr -d '"'; }
    row="$(field framework),$(field world_size),$rep,$(field step_s),$(field tokens_per_s),$(field utilization)"
    row+=",$(field swaps),$(field reassignments),$(field migrations),$(field weight_loads)"
    echo "$row" >> "$tmp"
    echo "  $row" >&2
  done
done
mv "$tmp" "$out"
echo "wrote $out" >&2
