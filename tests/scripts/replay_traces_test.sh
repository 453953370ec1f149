#!/usr/bin/env bash
# scripts/replay-traces.sh on the shipped Kineto fixtures (a data-parallel step and a two-stage pipeline,
# each two ranks' files, and a device-bound loop whose host runs ahead): each replays within 1% of its
# measured step, and a trace that is not one gets its one-line refusal while the script still exits 0.
#
#   tests/scripts/replay_traces_test.sh CLUSTERTWIN_BINARY SOURCE_DIR
set -u
export CLUSTERTWIN=$1
src=$2
ex="$src/traces/data/examples"
bad=$(mktemp)
trap 'rm -f "$bad"' EXIT
echo '{"schema": "1.0.1", "nodes": []}' > "$bad"
out=$("$src/scripts/replay-traces.sh" "$ex/kineto_ddp_rank0.json,$ex/kineto_ddp_rank1.json" \
  "$ex/kineto_pipeline_rank0.json,$ex/kineto_pipeline_rank1.json" "$ex/kineto_device_bound_rank0.json" "$bad")
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: exit status $rc"; exit 1; }
for name in kineto_ddp_rank0 kineto_pipeline_rank0; do
  line=$(grep "^$name " <<< "$out")
  # trace steps ranks real twin error
  read -r _ steps ranks real twin error _ <<< "$line"
  [ "$steps" = 3 ] && [ "$ranks" = 2 ] || { echo "FAIL: $name: '$line'"; exit 1; }
  awk -v e="${error%\%}" 'BEGIN { exit !(e >= -1 && e <= 1) }' || { echo "FAIL: $name: error $error"; exit 1; }
done
grep -q "import-kineto: .*a PyTorch execution trace" <<< "$out" || { echo "FAIL: no refusal line"; exit 1; }
# The device-bound loop whose host runs steps ahead (make_kineto_device_bound.py): measured and replayed at the
# device's pace, 3.000 ms a step (the markers alone say 0.32 ms; with the window's drain about 6 ms).
read -r _ steps ranks real twin error _ <<< "$(grep "^kineto_device_bound_rank0 " <<< "$out")"
[ "$real" = 3.000 ] && [ "$twin" = 3.000 ] || { echo "FAIL: device-bound: real $real twin $twin"; exit 1; }
# Bad arguments: exit 2 with what to give.
"$src/scripts/replay-traces.sh" > /dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: no trace given should exit 2"; exit 1; }
err=$("$src/scripts/replay-traces.sh" --base 2>&1 > /dev/null)
[ $? -eq 2 ] && [ "$err" = "replay-traces.sh: --base needs a profile name or YAML path" ] ||
  { echo "FAIL: --base without a value: '$err'"; exit 1; }
# --split: each line's set, and a summary per set.
split=$(mktemp)
printf '# a comment\ntest kineto_ddp_rank0\nfit kineto_pipeline_rank0\n' > "$split"
out=$("$src/scripts/replay-traces.sh" --split "$split" "$ex/kineto_ddp_rank0.json,$ex/kineto_ddp_rank1.json" \
  "$ex/kineto_pipeline_rank0.json,$ex/kineto_pipeline_rank1.json")
rm -f "$split"
grep -q "^kineto_ddp_rank0 .* test$" <<< "$out" || { echo "FAIL: no test set on the ddp line: $out"; exit 1; }
grep -q "^# test set: 1 trace(s) replayed" <<< "$out" || { echo "FAIL: no test-set summary: $out"; exit 1; }
grep -q "^# fit set: 1 trace(s) replayed" <<< "$out" || { echo "FAIL: no fit-set summary: $out"; exit 1; }
bad_split=$(mktemp)
printf 'fit kineto_ddp_rank0\nheld kineto_pipeline_rank0\n' > "$bad_split"
err=$("$src/scripts/replay-traces.sh" --split "$bad_split" "$ex/kineto_ddp_rank0.json" 2>&1 > /dev/null)
rc=$?
rm -f "$bad_split"
[ $rc -eq 2 ] && [[ $err == *"a line is not 'fit NAME' or 'test NAME': 'held kineto_pipeline_rank0'" ]] ||
  { echo "FAIL: a bad split line: '$err'"; exit 1; }
err=$("$src/scripts/replay-traces.sh" --split /nonexistent "$ex/kineto_ddp_rank0.json" 2>&1 > /dev/null)
[ $? -eq 2 ] && [ "$err" = "replay-traces.sh: --split /nonexistent: no such file" ] ||
  { echo "FAIL: a missing split file: '$err'"; exit 1; }
echo PASS
