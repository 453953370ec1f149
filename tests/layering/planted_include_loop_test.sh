#!/usr/bin/env bash
# include_cycles.sh must count a loop: two units that include each other
# (a.h includes b.h, b.cpp includes a.h) in a scratch tree, with a cap of 0,
# exit 1 naming both; without the second include, exit 0.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/common" "$copy/sim"
echo 'loops 0' >"$copy/caps.txt"
printf '#pragma once\n#include "common/b.h"\n' >"$copy/common/a.h"
printf '#pragma once\n' >"$copy/common/b.h"
printf '#include "common/b.h"\n' >"$copy/common/b.cpp"
bash "$root/tests/layering/include_cycles.sh" "$copy" "$copy/caps.txt" >/dev/null ||
  { echo "planted_include_loop_test.sh: the tree without a loop failed"; exit 1; }
printf '#include "common/a.h"\n' >>"$copy/common/b.cpp"
set +e
out=$(bash "$root/tests/layering/include_cycles.sh" "$copy" "$copy/caps.txt" 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 1 ] || ! grep -q '^  common/a$' <<<"$out" || ! grep -q '^  common/b$' <<<"$out"; then
  echo "planted_include_loop_test.sh: the planted loop was not reported (exit $rc)"
  exit 1
fi
echo "planted_include_loop_test.sh: the planted loop was caught"
