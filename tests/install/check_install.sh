#!/usr/bin/env bash
# The installed clustertwin, as a user gets it: `cmake --install` into a
# fresh prefix, then, from an unrelated folder, the command runs a NestPipe
# what-if and a small CMake project finds the libraries with
# find_package(clustertwin), builds against them and runs.
#
#   tests/install/check_install.sh BUILD_DIR
set -euo pipefail

build=$(cd "${1:?usage: check_install.sh BUILD_DIR}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ct_install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
test -x "$prefix/bin/clustertwin"
test -x "$prefix/bin/clustertwin-torch"
test -f "$prefix/share/clustertwin/profiles/npu-1536.yaml"
test -f "$prefix/share/clustertwin/traces/examples/kineto_two_rank_rank0.json"
test -f "$prefix/lib/cmake/clustertwin/clustertwinConfig.cmake"

# The command, from a folder with nothing in it.
mkdir "$work/elsewhere"
cd "$work/elsewhere"
"$prefix/bin/clustertwin" sim nestpipe --workers 128 --variant torchrec,nestpipe --platform gpu-128 \
  --calibration none --steps 5 --warmup 1 --drain 1 > sim.txt
grep -q "^nestpipe" sim.txt || { echo "installed clustertwin sim nestpipe printed no nestpipe row:"; cat sim.txt; exit 1; }
# A torch command goes through the installed clustertwin-torch.
"$prefix/bin/clustertwin" --version | grep -q "libtorch" || { echo "installed clustertwin --version names no libtorch"; exit 1; }
"$prefix/bin/clustertwin" run --help | grep -q "collectives" || { echo "installed clustertwin run --help lists no collectives"; exit 1; }
# The IGSP corpus packs are installed, and a training run from elsewhere reads them by default.
test -f "$prefix/share/clustertwin/igsp/corpus/general.tar.gz"
"$prefix/bin/clustertwin" igsp train -o tiny.pt --steps 1 --minutes 0 --context 16 --d-model 16 --layers 1 \
  --heads 2 --d-ff 32 --domain-bytes 4096 > "$work/train.log" 2>&1 || { cat "$work/train.log"; exit 1; }
"$prefix/bin/clustertwin" igsp manifest --model tiny.pt |
  grep -q '"pack": "../prefix/share/clustertwin/igsp/corpus/general.tar.gz"' ||
  { echo "installed clustertwin igsp train did not read the installed General pack:"; "$prefix/bin/clustertwin" igsp manifest --model tiny.pt | head -30; exit 1; }
# A user's profile, copied from the installed ones.
"$prefix/bin/clustertwin" sim nestpipe --workers 16 --variant nestpipe \
  --platform "$prefix/share/clustertwin/profiles/gpu-128.yaml" --calibration none --steps 3 --warmup 1 --drain 1 > /dev/null

# A C++ user of the libraries.
mkdir "$work/user"
cat > "$work/user/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(ct_install_user CXX)
find_package(clustertwin 0.1 REQUIRED)
add_executable(user main.cpp)
target_link_libraries(user PRIVATE clustertwin::ct_sim_nestpipe)
CMAKE
cat > "$work/user/main.cpp" <<'CPP'
#include <cstdio>

#include "models/cluster/cluster_profile.h"
#include "sim/nestpipe/nestpipe_twin.h"

int main() {
  using namespace clustertwin::sim::nestpipe;
  auto profile = clustertwin::cluster::load_cluster_profile("gpu-128");
  if (!profile.is_ok()) return 1;
  NestPipeSetup setup;
  setup.model = "hstu-small";
  setup.batch_per_worker = 64;
  setup.micro_batches = 4;
  add_nestpipe_default_costs(&*profile);
  NestPipeSweep sweep;
  sweep.variants = {clustertwin::models::nestpipe::Variant::kNestPipe};
  sweep.workers = {16};
  sweep.options = nestpipe_sim_options();
  auto rows = run_nestpipe_sweep(setup, *profile, sweep);
  if (!rows.is_ok()) {
    std::fprintf(stderr, "%s\n", rows.status().message().c_str());
    return 1;
  }
  std::printf("%s at %d workers: %.1f ms\n", rows->front().variant.c_str(), rows->front().workers,
              rows->front().step_ms);
  return rows->front().step_ms > 0 ? 0 : 1;
}
CPP
cmake -S "$work/user" -B "$work/user/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" > "$work/user.log" 2>&1 ||
  { cat "$work/user.log"; exit 1; }
cmake --build "$work/user/build" >> "$work/user.log" 2>&1 || { cat "$work/user.log"; exit 1; }
"$work/user/build/user"
echo "installed clustertwin: the command and find_package(clustertwin) work from $prefix"
