#!/usr/bin/env bash
# Functions a reader can hold (issue 46): no function of ours outside tests/
# over 100 lines, and at most a budget of them over 60. Function extents come
# from universal-ctags (its `end` field: the line of the closing brace), so a
# lambda counts as part of the function it is written in.
#
#   tests/layering/function_lengths.sh [REPO_ROOT] [ALLOWANCES]
#
# ALLOWANCES (default tests/layering/long_functions.txt) is the ratchet while
# the long functions are being split: `over_60 N` caps the functions over 60
# lines, and each `FILE NAME LINES` line lets one named function stay over
# 100, at most LINES long. An entry is removed when its function is split;
# the file's goal is no entry and `over_60 20`.
#
# Prints the five longest functions and the counts; exits 1 when a function
# is over 100 lines without an allowance (or longer than it), or the count
# over 60 exceeds the cap; 2 on bad arguments or without ctags.
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
allow=${2:-$root/tests/layering/long_functions.txt}
if [ ! -d "$root/common" ] || [ ! -d "$root/sim" ]; then
  echo "function_lengths.sh: '$root' is not a clustertwin checkout (no common/ or sim/)" >&2
  exit 2
fi
if [ ! -r "$allow" ]; then
  echo "function_lengths.sh: cannot read the allowances '$allow'" >&2
  exit 2
fi
if ! ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
  echo "function_lengths.sh: universal-ctags is not installed (scripts/install-deps.sh installs it)" >&2
  exit 2
fi

folders=()
for f in common sim real models calibrators traces cli experiments; do
  [ -d "$root/$f" ] && folders+=("$f")
done
# LINES FILE:LINE NAME, longest first.
lengths=$(cd "$root" && ctags -R --languages=C++ --kinds-C++=f --fields=+ne -x \
  --_xformat='%{end} %n %N %F' "${folders[@]}" 2>/dev/null |
  awk '$1 ~ /^[0-9]+$/ { print $1 - $2 + 1, $4 ":" $2, $3 }' | sort -k1,1nr -k2,2)
if [ -z "$lengths" ]; then
  echo "function_lengths.sh: ctags found no function under '$root'" >&2
  exit 2
fi

cap=$(awk '$1 == "over_60" { print $2 }' "$allow")
if ! [[ "$cap" =~ ^[0-9]+$ ]]; then
  echo "function_lengths.sh: $allow: field 'over_60': '${cap}' is not a count" >&2
  exit 2
fi

echo "the five longest functions:"
echo "$lengths" | head -5 | awk '{ printf "  %4d lines  %s  %s\n", $1, $3, $2 }'
over_100=$(echo "$lengths" | awk '$1 > 100' | wc -l)
over_60=$(echo "$lengths" | awk '$1 > 60' | wc -l)
echo "$(echo "$lengths" | wc -l) functions: $over_100 over 100 lines, $over_60 over 60 (cap $cap)"

failed=0
# Each function over 100 lines needs an allowance naming its file and name, at least as long.
while read -r len where name; do
  file=${where%%:*}
  allowed=$(awk -v f="$file" -v n="$name" '$1 == f && $2 == n { print $3 }' "$allow" | sort -n | tail -1)
  if [ -z "$allowed" ]; then
    echo "FAIL $where: $name is $len lines (over 100): split it" >&2
    failed=1
  elif [ "$len" -gt "$allowed" ]; then
    echo "FAIL $where: $name is $len lines, over its allowance of $allowed: split it" >&2
    failed=1
  fi
done < <(echo "$lengths" | awk '$1 > 100')
if [ "$over_60" -gt "$cap" ]; then
  echo "FAIL $over_60 functions are over 60 lines, over the cap of $cap" >&2
  failed=1
fi
exit $failed
