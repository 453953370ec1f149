#!/usr/bin/env bash
# json_writers.sh must fail on hand-written JSON outside its list: plant an
# append_json_string call, a literal ending after a key and a compact object
# in a copy of the layers it checks, and list a file that writes no JSON;
# expect exit 1 naming all four.
set -euo pipefail
root=$1
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$root/common" "$root/traces" "$root/models" "$root/sim" "$root/real" "$root/calibrators" "$copy/"
cp "$root/tests/layering/json_writers.txt" "$copy/allowed.txt"
echo 'void f(std::string* o) { traces::append_json_string(o, "x"); }' >>"$copy/sim/mix/sweep.cpp"
echo 'std::string g(int n) { return ",\"steps\":" + std::to_string(n); }' >>"$copy/real/core/run_commands.cpp"
echo 'const char* kDoc = "{\"rows\":[]}";' >>"$copy/calibrators/calibrate.cpp"
echo 'common/status.cpp  planted: writes no JSON' >>"$copy/allowed.txt"
set +e
out=$(bash "$root/tests/layering/json_writers.sh" "$copy" "$copy/allowed.txt" 2>&1)
rc=$?
set -e
echo "$out"
if [ "$rc" -ne 1 ] || ! grep -q 'sim/mix/sweep.cpp:[0-9]*:.*append_json_string' <<<"$out" ||
  ! grep -q 'real/core/run_commands.cpp:[0-9]*:.*steps' <<<"$out" ||
  ! grep -q 'calibrators/calibrate.cpp:[0-9]*:.*kDoc' <<<"$out" ||
  ! grep -q 'lists common/status.cpp, which writes no JSON by hand any more' <<<"$out"; then
  echo "planted_json_writer_test.sh: a planted hand-written JSON was not reported (exit $rc)"
  exit 1
fi
echo "planted_json_writer_test.sh: the three planted writers and the stale entry were caught"
