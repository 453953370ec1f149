#!/usr/bin/env bash
# check_includes.sh must fail on a forbidden include: plant six (real/ -> sim/,
# one executor -> another, the executors read from common/systems.def, the
# mix -> a system's twin, cli/ -> a kernel's internal header and to models/sis,
# cli/ -> experiments/) in a copy of the layers it checks and expect exit 1
# naming each file. The kernels' entry headers stay allowed.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$root/common" "$root/real" "$root/models" "$root/traces" "$root/sim" "$root/calibrators" "$root/cli" "$copy/"
echo '#include "sim/core/simulator.h"' >>"$copy/real/core/communicator.h"
echo '#include "real/flowtrain/worker.h"' >>"$copy/real/nestpipe/trainer.h"
echo '#include "sim/nestpipe/nestpipe_twin.h"' >>"$copy/sim/mix/mix_spec.h"
echo '#include "real/igsp/train.h"' >>"$copy/cli/igsp_command.cpp"
echo '#include "models/sis/anything.h"' >>"$copy/cli/sis_command.cpp"
echo '#include "experiments/sis/README.h"' >>"$copy/cli/main.cpp"
set +e
out=$(bash "$root/tests/layering/check_includes.sh" "$copy" 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 1 ] || ! grep -q 'real/core/communicator.h:.*#include "sim/core/simulator.h"' <<<"$out" ||
  ! grep -q 'real/nestpipe/trainer.h:.*#include "real/flowtrain/worker.h"' <<<"$out" ||
  ! grep -q 'sim/mix/mix_spec.h:.*#include "sim/nestpipe/nestpipe_twin.h"' <<<"$out" ||
  ! grep -q 'cli/igsp_command.cpp:.*#include "real/igsp/train.h"' <<<"$out" ||
  ! grep -q 'cli/sis_command.cpp:.*#include "models/sis/anything.h"' <<<"$out" ||
  ! grep -q 'cli/main.cpp:.*#include "experiments/sis/README.h"' <<<"$out"; then
  echo "planted_include_test.sh: a planted include was not reported (exit $rc)"
  exit 1
fi
# The entry headers themselves are not reported.
if grep -qE '#include "real/(igsp|sis)/(igsp|sis)_command.h"' <<<"$out"; then
  echo "planted_include_test.sh: a kernel's entry header was reported"
  exit 1
fi
echo "planted_include_test.sh: the six planted includes were caught"
