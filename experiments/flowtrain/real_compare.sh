#!/usr/bin/env bash
# FlowTrain's real executor, the three modes on the same samples and machine,
# and the process twin's prediction of each from the other two modes' traces
# (leave-one-out: `clustertwin validate flowtrain --costs-from`):
#
#   experiments/flowtrain/real_compare.sh [OUTDIR=out/flowtrain/real] [NPROC=4] [STEPS=6] [BATCH=32] [REPS=3]
#
# Writes OUTDIR/real.csv (mode, rep, median step, samples/s, MFU against the
# measured matmul rate), OUTDIR/twin.csv (the twin's replay and prediction of
# each run) and the traces OUTDIR/MODE-REP.json. EXTRA passes flags to every
# run (for example "--encoder-workers 2").
set -euo pipefail
dir=${1:-out/flowtrain/real}
nproc=${2:-4}
steps=${3:-6}
batch=${4:-32}
reps=${5:-3}
cli=${CLI:-build/cli/clustertwin}
[[ -x $cli ]] || { echo "real_compare.sh: $cli not built (make build)" >&2; exit 2; }
mkdir -p "$dir"
extra=${EXTRA:-}
modes=(monolithic disagg-sync flowtrain)
real=$(mktemp "$dir/real.csv.XXXXXX")
twin=$(mktemp "$dir/twin.csv.XXXXXX")
echo "mode,nproc,rep,step_s,samples_per_s,mfu" > "$real"
echo "mode,rep,costs,real_step_s,twin_step_s,step_error,real_samples_per_s,twin_samples_per_s,real_mfu,twin_mfu" > "$twin"
field() { sed -n "s/.*\"$1\": *\([^,}]*\).*/\1/p" <<< "$2" | head -1 | tr -d '"'; }
for rep in $(seq 1 "$reps"); do
  for mode in "${modes[@]}"; do
    # shellcheck disable=SC2086
    line=$("$cli" launch --nproc "$nproc" -- run flowtrain --mode "$mode" --steps "$steps" --global-batch "$batch" \
      --seed "$rep" $extra --trace "$dir/$mode-$rep.json" --json | sed -n 's/^\[rank 0\] //p')
    row="$mode,$nproc,$rep,$(field step_s "$line"),$(field samples_per_s "$line"),$(field mfu "$line")"
    echo "$row" >> "$real"
    echo "  real $row" >&2
  done
  for mode in "${modes[@]}"; do
    others=()
    for o in "${modes[@]}"; do [[ $o != "$mode" ]] && others+=("$dir/$o-$rep.json"); done
    for costs in replay others; do
      args=(validate flowtrain --real "$dir/$mode-$rep.json" --json)
      [[ $costs == others ]] && args+=(--costs-from "$(IFS=,; echo "${others[*]}")")
      j=$("$cli" "${args[@]}" | tr -d '\n')
      row="$mode,$rep,$costs,$(field real_step_s "$j"),$(field twin_step_s "$j"),$(field step_error "$j")"
      row+=",$(field real_samples_per_s "$j"),$(field twin_samples_per_s "$j"),$(field real_mfu "$j"),$(field twin_mfu "$j")"
      echo "$row" >> "$twin"
      echo "  twin $row" >&2
    done
  done
done
mv "$real" "$dir/real.csv"
mv "$twin" "$dir/twin.csv"
echo "wrote $dir/real.csv, $dir/twin.csv" >&2
