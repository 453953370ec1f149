#!/usr/bin/env bash
# function_lengths.sh must fail on a function it does not allow: plant one of
# 101 lines in a copy of the sources, and grow an allowed one past its
# allowance; expect exit 1 naming both. The same copy as it is passes.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/common" "$copy/sim" "$copy/tests/layering"
allow="$copy/tests/layering/long_functions.txt"
printf 'over_60 3\ncommon/old.cpp old_long 120\n' >"$allow"
body() { # NAME LINES: a function of LINES lines
  echo "int $1() {"
  for ((i = 0; i < $2 - 2; ++i)); do echo "  int v$i = $i;"; done
  echo "}"
}
body old_long 120 >"$copy/common/old.cpp"
body brief 40 >"$copy/sim/brief.cpp"
bash "$root/tests/layering/function_lengths.sh" "$copy" "$allow" >/dev/null ||
  { echo "planted_long_function_test.sh: the unplanted copy failed"; exit 1; }
body planted 101 >>"$copy/sim/brief.cpp"
body old_long 121 >"$copy/common/old.cpp"
set +e
out=$(bash "$root/tests/layering/function_lengths.sh" "$copy" "$allow" 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 1 ] || ! grep -q 'sim/brief.cpp:41: planted is 101 lines' <<<"$out" ||
  ! grep -q 'common/old.cpp:1: old_long is 121 lines, over its allowance of 120' <<<"$out"; then
  echo "planted_long_function_test.sh: a planted long function was not reported (exit $rc)"
  exit 1
fi
echo "planted_long_function_test.sh: both planted functions were caught"
