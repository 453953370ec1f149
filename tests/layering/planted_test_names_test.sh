#!/usr/bin/env bash
# test_names.sh must fail on a library source that no test covers, and on an
# allow-list that has rotted: in a scratch tree of a few sources, each
# covered one way, plant a source with no test, a vouching test that no
# longer includes its source's header, a line for a source that is gone and
# a line made redundant by a new same-named test; expect exit 1 and a line
# naming each. The tree as it is passes.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/common" "$copy/sim/core" "$copy/tests/common" "$copy/tests/sim" "$copy/tests/layering"
for unit in common/a common/b common/c sim/core/plan_run; do
  echo "#pragma once" >"$copy/$unit.h"
  echo "#include \"$unit.h\"" >"$copy/$unit.cpp"
done
echo '#include "sim/core/plan_run.h"' >"$copy/sim/core/plan_run_tasks.cpp"  # a part of plan_run's unit
echo '#include "common/c.h"' >"$copy/common/c_cuda.cpp"                    # no header of its own
echo '#include "common/a.h"' >"$copy/tests/common/a_test.cpp"
echo '#include "common/b.h"' >"$copy/tests/common/other_test.cpp"
echo '#include "common/c.h"' >"$copy/tests/common/c_test.cpp"
echo '#include "sim/core/plan_run.h"' >"$copy/tests/sim/plan_run_test.cpp"
echo '#include "sim/core/plan_run.h"' >"$copy/tests/sim/collective_test.cpp"
allow="$copy/tests/layering/tested_elsewhere.txt"
cat >"$allow" <<'LIST'
# header
common/b.cpp  tests/common/other_test.cpp  b's functions
common/c_cuda.cpp  -  CUDA-only
sim/core/plan_run_tasks.cpp  tests/sim/collective_test.cpp  PlanRun's tasks
LIST
out=$(bash "$root/tests/layering/test_names.sh" "$copy" "$allow") ||
  { echo "$out"; echo "planted_test_names_test.sh: the unplanted tree failed"; exit 1; }
echo "$out"
grep -q '^test_names.sh: 6 sources, 3 with a same-named test, 2 tested elsewhere, 1 without a unit test (0 of them owed one)$' \
  <<<"$out" || { echo "planted_test_names_test.sh: wrong summary"; exit 1; }

echo '#include "common/d.h"' >"$copy/common/d.cpp"                                  # no test at all
echo '#include "common/a.h"' >"$copy/tests/common/other_test.cpp"                    # vouches for b, includes a
echo 'common/gone.cpp  tests/common/a_test.cpp  removed since' >>"$allow"            # gone, and out of order
echo '#include "common/c.h"' >"$copy/tests/common/c_cuda_test.cpp"                   # c_cuda has its own test now
set +e
out=$(bash "$root/tests/layering/test_names.sh" "$copy" "$allow" 2>&1)
rc=$?
set -e
echo "$out"
fail=0
expect() {
  grep -qF "$1" <<<"$out" || { echo "planted_test_names_test.sh: not reported: $1"; fail=1; }
}
expect "test_names.sh: common/d.cpp: no tests/**/d_test.cpp and no line in tests/layering/tested_elsewhere.txt"
expect "tests/layering/tested_elsewhere.txt:2: common/b.cpp: tests/common/other_test.cpp includes none of its unit's headers (common/b.h)"
expect "tests/layering/tested_elsewhere.txt:5: common/gone.cpp no longer exists"
expect "tests/layering/tested_elsewhere.txt:5: common/gone.cpp is out of order"
expect "tests/layering/tested_elsewhere.txt:3: common/c_cuda.cpp has a same-named test now (tests/common/c_cuda_test.cpp): remove its line"
if [ "$rc" -ne 1 ] || [ "$fail" -ne 0 ]; then
  echo "planted_test_names_test.sh: a planted fault was not reported (exit $rc)"
  exit 1
fi
echo "planted_test_names_test.sh: every planted fault was caught"
