#!/usr/bin/env bash
# Builds the real side alone (CT_REAL_ONLY) the way a bare GPU machine would:
# SimGrid, Boost and yaml-cpp out of reach (pkg-config sees no .pc file, CMake
# may not find Boost or yaml-cpp), and CLI11, nlohmann-json and GoogleTest
# found only through CT_THIRD_PARTY_DIR, as scripts/device-check.sh --prepare
# collects them. Then runs the real side's unit and real tests.
#
#   scripts/check-real-only.sh [BUILD_DIR=build-real-only] [CTEST_LABELS=unit|real]
#
# About 12 minutes on 2 cores from scratch (ccache makes a rerun quick).
# Exit 0 when it configures, builds and its tests pass; what failed otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-real-only}
labels=${2:-unit|real}
deps=$root/build-device/deps

if [ ! -f "$deps/include/CLI/CLI.hpp" ]; then
  bash "$root/scripts/device-check.sh" --prepare >/dev/null
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
rm -rf "$build"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== configure (SimGrid, Boost, yaml-cpp unfindable; CLI11, nlohmann-json, GoogleTest from $deps)"
PKG_CONFIG_PATH="" PKG_CONFIG_LIBDIR=/nonexistent cmake -S "$root" -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCT_REAL_ONLY=ON -DCT_THIRD_PARTY_DIR="$deps" \
  -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_yaml-cpp=ON -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON >"$log" 2>&1 ||
  { cat "$log"; exit 1; }
grep -E "clustertwin:" "$log" || true
echo "== build"
cmake --build "$build" -j "$(nproc)"
# Nothing of SimGrid, yaml-cpp or Boost was found or linked.
if grep -qE '^(SIMGRID|yaml-cpp|Boost)_[A-Za-z_]*:[A-Z]+=[^N]' "$build/CMakeCache.txt" ||
  ldd "$build/cli/clustertwin" | grep -qiE 'simgrid|yaml-cpp|boost'; then
  echo "check-real-only.sh: SimGrid, yaml-cpp or Boost was found or linked (see $build/CMakeCache.txt)" >&2
  exit 1
fi
echo "== tests (labels $labels)"
ctest --test-dir "$build" -L "$labels" -j "$(nproc)" --output-on-failure
"$build/cli/clustertwin" --version
echo "check-real-only.sh: the real side built and passed without SimGrid, Boost or yaml-cpp"
