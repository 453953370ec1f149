#!/usr/bin/env bash
# check_includes.sh must fail on a forbidden include: plant three (real/ -> sim/,
# one executor -> another, the executors read from common/systems.def, and
# the mix -> a system's twin) in
# a copy of the layers it checks and expect exit 1 naming both files.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$root/common" "$root/real" "$root/models" "$root/traces" "$root/sim" "$root/calibrators" "$copy/"
echo '#include "sim/core/simulator.h"' >>"$copy/real/core/communicator.h"
echo '#include "real/flowtrain/worker.h"' >>"$copy/real/nestpipe/trainer.h"
echo '#include "sim/nestpipe/nestpipe_twin.h"' >>"$copy/sim/mix/mix_spec.h"
set +e
out=$(bash "$root/tests/layering/check_includes.sh" "$copy" 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 1 ] || ! grep -q 'real/core/communicator.h:.*#include "sim/core/simulator.h"' <<<"$out" ||
  ! grep -q 'real/nestpipe/trainer.h:.*#include "real/flowtrain/worker.h"' <<<"$out" ||
  ! grep -q 'sim/mix/mix_spec.h:.*#include "sim/nestpipe/nestpipe_twin.h"' <<<"$out"; then
  echo "planted_include_test.sh: a planted include was not reported (exit $rc)"
  exit 1
fi
echo "planted_include_test.sh: the three planted includes were caught"
