#!/usr/bin/env bash
# The registry's claim (docs/architecture.md, "Adding a system"): a new system
# is one folder per layer plus one line of common/systems.def. This test adds
# a stub fourth system to a scratch copy of the checkout, from the
# files under tests/registry/stub/ (models/, sim/, calibrators/, real/,
# experiments/, tests/ and cli/ folders of its own), appends CT_SYSTEM(stub, "Stub") to
# common/systems.def, and checks:
#
#   - git in the copy sees only new files and common/systems.def changed
#     (the copy is committed before the stub is added);
#   - the copy configures and builds `clustertwin` (and the program it
#     forwards to), with no other file touched;
#   - `clustertwin sim stub` and `clustertwin plan stub` run the stub's twin
#     through the twin interface (sim/core/twin.h), and `clustertwin run
#     stub` reaches its executor's entry.
#
#   tests/registry/stub_system_test.sh REPO_ROOT [JOBS]
#
# A full build of the copy: minutes (labelled slow). The copy lives in
# ${CT_STUB_DIR:-/tmp/ct_stub_system}, a fixed path, so that ccache
# (CCACHE_BASEDIR) reuses its objects from one run to the next.
set -euo pipefail
root=${1:?usage: stub_system_test.sh REPO_ROOT [JOBS]}
jobs=${2:-$(nproc)}
copy=${CT_STUB_DIR:-/tmp/ct_stub_system}
fail() {
  echo "stub_system_test.sh: $*" >&2
  exit 1
}

rm -rf "$copy/src"
mkdir -p "$copy/src"
# The checkout as it is (tracked and new files, not the ignored build folders).
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - 2>/dev/null) | tar -xf - -C "$copy/src"
cd "$copy/src"
git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base

# The stub: its folders, one per layer, and its line of the registry.
cp -r "$root/tests/registry/stub/." .
echo 'CT_SYSTEM(stub, "Stub")' >>common/systems.def

changed=$(git status --porcelain --untracked-files=no)
[ "$changed" = " M common/systems.def" ] || fail "adding the stub changed more than common/systems.def: $changed"
new=$(git status --porcelain | grep -c '^??' || true)
echo "stub_system_test.sh: the stub is $new new folders and one line of common/systems.def"
git status --porcelain | sed 's/^/  /'

export CCACHE_BASEDIR="$copy" CCACHE_NOHASHDIR=1
mkdir -p "$copy/build"
cmake -S . -B "$copy/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$copy/configure.log" 2>&1 ||
  { tail -20 "$copy/configure.log"; fail "the copy with the stub does not configure"; }
cmake --build "$copy/build" -j "$jobs" --target clustertwin >"$copy/build.log" 2>&1 ||
  { grep -E "error|Error" "$copy/build.log" | head -20; fail "the copy with the stub does not build clustertwin"; }

cli="$copy/build/cli/clustertwin"
out=$("$cli" sim stub --workers 8,16 --set flops=2e12) || fail "clustertwin sim stub failed: $out"
echo "$out"
grep -q "stub" <<<"$out" && [ "$(grep -c '^ ' <<<"$out")" -eq 2 ] || fail "sim stub printed no row per worker count"
# The stub's settings through the generic command: a bad one is one line naming it, exit 2.
set +e
bad=$("$cli" sim stub --set flops=-1 2>&1)
rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$bad" = "clustertwin: --set: field 'flops': -1 must be > 0" ] ||
  fail "sim stub --set flops=-1: exit $rc, '$bad' (wanted exit 2 and one line naming the field)"
bad=$("$cli" sim stub --set flops 2>&1) && fail "sim stub --set flops passed"
grep -q "^clustertwin: --set 'flops': expected KEY=VALUE" <<<"$bad" || fail "sim stub --set flops: '$bad'"
plan=$("$cli" plan stub --target-throughput 1000 --platform h100-1024) || fail "clustertwin plan stub failed: $plan"
echo "$plan"
grep -q "clustertwin sim stub" <<<"$plan" || fail "plan stub gave no command to confirm its answer"
run=$("$cli" run stub) || fail "clustertwin run stub failed: $run"  # clustertwin-torch's entry
[ "$run" = "stub: no real executor" ] || fail "run stub did not reach the stub's executor: $run"
echo "stub_system_test.sh: a system of one registry line builds and runs"
