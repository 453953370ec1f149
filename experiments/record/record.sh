#!/usr/bin/env bash
# Records the real traces clustertwin ships with, on this machine, and fits
# the profiles the twin validates against (the Calibrators issue):
#
#   collectives/bench-Wrank-cpu-rR-{small,large}.json.gz
#       `clustertwin run collectives` on W = 2, 3, 4 ranks (Gloo over
#       loopback), every collective; 4 KiB..1 MiB with 100 timed iterations,
#       2 MiB..64 MiB with 20; REPS repetitions. The machine at each rank
#       count: a collective's wait for the operating system per latency step
#       (calibrators/step_wait.h) grows with the ranks sharing the cores.
#   nestpipe/real-Wrank-cpu-VARIANT-rR.json.gz
#       `clustertwin run nestpipe` (dlrm-small, batch 64, 4 micro-batches,
#       20 steps, seed 7) for every variant on W = 2, 3, 4 ranks; REPS
#       repetitions of each (the same workload: the repetitions measure the
#       machine's noise).
#
# then runs calibrate.sh, which fits the shipped profiles and writes the
# replay, what-if and per-collective errors to summary.txt.
# A shared machine is noisy: run it on an otherwise idle machine.
# Usage: experiments/record/record.sh [OUT=traces/data] [BUILD=build] [REPS=3]
set -euo pipefail
out=${1:-traces/data}
cli=${2:-build}/cli/clustertwin
reps=${3:-3}
variants=(torchrec semisync dbp fwp nestpipe)
mkdir -p "$out/collectives" "$out/nestpipe" "$out/profiles"
[[ -x $cli ]] || { echo "record.sh: $cli not found: build first (make build)" >&2; exit 2; }

for w in 2 3 4; do
  for r in $(seq 1 "$reps"); do
    echo "== collective benchmark, $w ranks, repetition $r of $reps"
    "$cli" launch --nproc "$w" -- run collectives --sizes 4K:1M --iters 100 \
      --trace "$out/collectives/bench-${w}rank-cpu-r$r-small.json.gz" > /dev/null
    "$cli" launch --nproc "$w" -- run collectives --sizes 2M:64M --iters 20 \
      --trace "$out/collectives/bench-${w}rank-cpu-r$r-large.json.gz" > /dev/null
  done
done
for w in 2 3 4; do
  for v in "${variants[@]}"; do
    for r in $(seq 1 "$reps"); do
      echo "== nestpipe $v, $w ranks, repetition $r of $reps"
      "$cli" launch --nproc "$w" -- run nestpipe --variant "$v" --steps 20 --seed 7 --json \
        --trace "$out/nestpipe/real-${w}rank-cpu-$v-r$r.json.gz" > /dev/null
    done
  done
done

"$(dirname "$0")/calibrate.sh" "$out" "$(dirname "$cli")/.." "$reps"
