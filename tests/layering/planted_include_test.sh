#!/usr/bin/env bash
# check_includes.sh must fail on a forbidden include: plant one (real/ -> sim/)
# in a copy of the layers it checks and expect exit 1 naming the file.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$root/common" "$root/real" "$root/models" "$root/traces" "$root/sim" "$root/calibrators" "$copy/"
echo '#include "sim/core/simulator.h"' >>"$copy/real/core/communicator.h"
set +e
out=$(bash "$root/tests/layering/check_includes.sh" "$copy" 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 1 ] || ! grep -q 'real/core/communicator.h:.*#include "sim/core/simulator.h"' <<<"$out"; then
  echo "planted_include_test.sh: the planted include was not reported (exit $rc)"
  exit 1
fi
echo "planted_include_test.sh: the planted include was caught"
