#!/usr/bin/env bash
# One JSON style (issue 46): documents are nlohmann::ordered_json
# (common/json.h); JSON is written by hand only in the files that
# tests/layering/json_writers.txt lists, with the reason (the Chrome trace's
# streaming writer and reader, which go event by event through gigabytes).
# tests/CMakeLists.txt runs it as LayeringTest.NoHandWrittenJsonOutsideItsFiles.
#
#   tests/layering/json_writers.sh [REPO_ROOT] [ALLOWED]
#
# A line of ours (outside tests/, not a // comment) writes JSON by hand when it
# calls an append_json_* helper, or has a string literal that ends after a JSON
# key ("...,\"steps\":" + ..., "...\"mode\":\"" + ...) or opens a compact
# object ("{\"rows\":[" ...). Messages that show JSON ("{\"block\": G}") do not
# count. Prints each offending line; exits 1 when a file outside ALLOWED
# (default tests/layering/json_writers.txt) has one or an entry of ALLOWED has
# none left, 0 otherwise, 2 on bad arguments.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
allow=${2:-$root/tests/layering/json_writers.txt}
if [ ! -d "$root/common" ] || [ ! -d "$root/traces" ]; then
  echo "json_writers.sh: '$root' is not a clustertwin checkout (no common/ or traces/)" >&2
  exit 2
fi
if [ ! -r "$allow" ]; then
  echo "json_writers.sh: cannot read the list of allowed files '$allow'" >&2
  exit 2
fi

pattern='append_json_|\\"[A-Za-z0-9_]+\\": ?(\\")?"|\{\\"[A-Za-z0-9_]+\\":[^ ]'
folders=()
for d in common traces models sim real calibrators experiments cli; do
  [ -d "$root/$d" ] && folders+=("$d")
done
hits=$(cd "$root" && grep -rnE --include='*.h' --include='*.cpp' --include='*.cu' "$pattern" "${folders[@]}" |
  grep -vE '^[^:]+:[0-9]+:[[:space:]]*//')

declare -A allowed=()
while read -r file _; do
  [[ -z $file || $file == \#* ]] && continue
  allowed[$file]=1
done <"$allow"

failed=0
declare -A seen=()
while IFS= read -r line; do
  [ -z "$line" ] && continue
  file=${line%%:*}
  seen[$file]=1
  if [ -z "${allowed[$file]:-}" ]; then
    echo "JSON written by hand (build it as nlohmann::ordered_json, common/json.h): $line"
    failed=1
  fi
done <<<"$hits"
for file in "${!allowed[@]}"; do
  if [ -z "${seen[$file]:-}" ]; then
    echo "$allow lists $file, which writes no JSON by hand any more: remove it"
    failed=1
  fi
done
if [ "$failed" -eq 0 ]; then
  echo "json_writers.sh: hand-written JSON only in the ${#allowed[@]} files of $(basename "$allow")"
fi
exit "$failed"
