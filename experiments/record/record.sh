#!/usr/bin/env bash
# Records the real traces clustertwin ships with, on this machine, and fits
# the profiles the twin validates against (the Calibrators issue):
#
#   collectives/bench-Wrank-cpu-rR-{small,large}.json.gz
#       `clustertwin run collectives` on W = 2, 3, 4 ranks (Gloo over
#       loopback), every collective; 4 KiB..1 MiB with 300 timed iterations
#       (small), and at 4 ranks 2 MiB..64 MiB with 60 (large); REPS
#       repetitions. A small message's time is bimodal (on time, or a
#       scheduler tick late) and the fit takes its mean, which 300
#       iterations steady. The 2- and 3-rank ones measure a collective's
#       wait per latency step at each rank count (summary.txt's benchmark
#       waits column; traces/data ships the 4-rank ones only).
#   nestpipe/real-Wrank-cpu-VARIANT-rR.json.gz
#       `clustertwin run nestpipe` (dlrm-small, batch 64, 4 micro-batches,
#       STEPS steps, seed 7) for every variant on W = 2, 3, 4 ranks; REPS
#       repetitions of each (the same workload: the repetitions measure the
#       machine's noise). A step's time moves by ~35% from one step to the
#       next on 2 shared cores: 20 steps (15 measured) leave the mean ~9%
#       noisy, 100 steps ~4%.
#
# then runs calibrate.sh, which fits the shipped profiles and writes the
# replay, what-if and per-collective errors to summary.txt.
# A shared machine is noisy: run it on an otherwise idle machine.
# Usage: experiments/record/record.sh [OUT=traces/data] [BUILD=build] [REPS=3] [STEPS=100]
set -euo pipefail
out=${1:-traces/data}
cli=${2:-build}/cli/clustertwin
reps=${3:-3}
steps=${4:-100}
variants=(torchrec semisync dbp fwp nestpipe)
mkdir -p "$out/collectives" "$out/nestpipe" "$out/profiles"
[[ -x $cli ]] || { echo "record.sh: $cli not found: build first (make build)" >&2; exit 2; }

# Each repetition is a block holding every configuration, and a variant's 2, 3 and 4 ranks run back to back,
# so that a slow spell of the machine (on a shared host it comes and goes over minutes) lands on every rank
# count alike instead of on one of them: recorded rank count by rank count, a 2->4-rank what-if's error moved
# by 20 points from one recording to the next.
for r in $(seq 1 "$reps"); do
  for w in 2 3 4; do
    echo "== collective benchmark, $w ranks, repetition $r of $reps"
    "$cli" launch --nproc "$w" -- run collectives --sizes 4K:1M --iters 300 \
      --trace "$out/collectives/bench-${w}rank-cpu-r$r-small.json.gz" > /dev/null
    # Large messages at 4 ranks only: the network fit's check; the waits come from the smallest message.
    if [[ $w == 4 ]]; then
      "$cli" launch --nproc "$w" -- run collectives --sizes 2M:64M --iters 60 \
        --trace "$out/collectives/bench-${w}rank-cpu-r$r-large.json.gz" > /dev/null
    fi
  done
  for v in "${variants[@]}"; do
    for w in 2 3 4; do
      echo "== nestpipe $v, $w ranks, repetition $r of $reps"
      "$cli" launch --nproc "$w" -- run nestpipe --variant "$v" --steps "$steps" --seed 7 --json \
        --trace "$out/nestpipe/real-${w}rank-cpu-$v-r$r.json.gz" > /dev/null
    done
  done
done

"$(dirname "$0")/calibrate.sh" "$out" "$(dirname "$cli")/.." "$reps"
