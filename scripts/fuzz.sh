#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (make fuzz) for SECONDS each,
# from its seeds (tests/fuzz/corpora.txt), and prints per target its
# executions and the crashes found; a crash's input is saved under
# BUILD/artifacts/TARGET/ (copy it to tests/fuzz/crashers/TARGET/ with the fix,
# so that make test replays it).
#   scripts/fuzz.sh BUILD SECONDS
set -euo pipefail
build=${1:?usage: scripts/fuzz.sh BUILD SECONDS}
seconds=${2:?usage: scripts/fuzz.sh BUILD SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
total_crashes=0
printf '%-20s %12s %8s\n' target executions crashes
while read -r target globs; do
  [[ -z "$target" || "$target" == \#* ]] && continue
  corpus="$build/corpus/$target"
  artifacts="$build/artifacts/$target"
  rm -rf "$corpus" "$artifacts" && mkdir -p "$corpus" "$artifacts"
  for glob in $globs; do
    for f in $root/$glob; do [[ -f "$f" ]] && cp "$f" "$corpus/"; done
  done
  for f in "$root/tests/fuzz/crashers/$target"/*; do [[ -f "$f" ]] && cp "$f" "$corpus/"; done
  log="$build/fuzz-$target.log"
  set +e
  "$build/tests/fuzz/ct_fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$corpus" > "$log" 2>&1
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  crashes=$(find "$artifacts" -type f | wc -l)
  total_crashes=$((total_crashes + crashes))
  printf '%-20s %12s %8s\n' "$target" "${runs:-0}" "$crashes"
done < "$root/tests/fuzz/corpora.txt"
echo "crashes found: $total_crashes (inputs under $build/artifacts/)"
[[ $total_crashes -eq 0 ]]
