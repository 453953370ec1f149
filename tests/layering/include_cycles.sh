#!/usr/bin/env bash
# No include cycle between our source units (issue 46): a unit is a file's
# path without its extension (clustering.h and clustering.cpp are one), and
# unit A depends on unit B when a file of A includes B's header. coreutils'
# tsort orders the graph and names every loop it finds.
#
#   tests/layering/include_cycles.sh [REPO_ROOT] [CAP_FILE]
# CAP_FILE (default tests/layering/include_loops.txt) holds `loops N`: the
# loops tsort may still find while issue 46 breaks them (a ratchet: lower it
# as loops go, never raise it). Prints each loop's units; exits 1 when there
# are more loops than the cap, 0 otherwise, 2 on bad arguments.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cap_file=${2:-$root/tests/layering/include_loops.txt}
cap=$(awk '$1 == "loops" { print $2 }' "$cap_file" 2>/dev/null)
if ! [[ "$cap" =~ ^[0-9]+$ ]]; then
  echo "include_cycles.sh: $cap_file: field 'loops': '${cap}' is not a count" >&2
  exit 2
fi
if [ ! -d "$root/common" ] || [ ! -d "$root/sim" ]; then
  echo "include_cycles.sh: '$root' is not a clustertwin checkout (no common/ or sim/)" >&2
  exit 2
fi
folders=()
for f in common traces models sim real calibrators cli experiments; do
  [ -d "$root/$f" ] && folders+=("$f")
done
# "INCLUDED_UNIT INCLUDING_UNIT" pairs, one per include of ours between two units.
edges=$(cd "$root" && grep -rnE --include='*.h' --include='*.cpp' --include='*.cu' \
  '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]+/[^"]+\.h"' "${folders[@]}" |
  sed -E 's/^([^:]+):[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\2 \1/' |
  awk '{ a = $1; b = $2; sub(/\.[a-z]+$/, "", a); sub(/\.[a-z]+$/, "", b); if (a != b) print a, b }' | sort -u)
if [ -z "$edges" ]; then
  echo "include_cycles.sh: no include of ours found under '$root'" >&2
  exit 2
fi
loops=$(tsort <<<"$edges" 2>&1 >/dev/null)
count=$(grep -c "input contains a loop" <<<"$loops" || true)
if [ "$count" -gt 0 ]; then
  echo "include_cycles.sh: units that include each other (a loop each; tsort's words):"
  echo "$loops" | sed 's/^tsort: //' | sed 's/^/  /'
fi
echo "include_cycles.sh: $(wc -l <<<"$edges") includes between units, $count loops (cap $cap)"
if [ "$count" -gt "$cap" ]; then
  echo "FAIL more include loops than the cap of $cap: a new one; break it" >&2
  exit 1
fi
