#!/usr/bin/env bash
# Compile-only check of the code that only a CUDA-enabled libtorch builds
# (CT_HAVE_CUDA_TORCH, USE_C10D_NCCL), so that a broken GPU path shows up on
# machines without a GPU or a CUDA libtorch. Debian's libtorch-dev ships the
# ATen/cuda, c10/cuda and ProcessGroupNCCL headers; the CUDA toolkit gives
# cuda_runtime.h; the one generated header Debian lacks
# (c10/cuda/impl/cuda_cmake_macros.h) is written to a temporary folder.
#
#   cuda_paths_compile_check.sh CXX REPO_ROOT "TORCH_INCLUDE_DIRS" [CUDA_INCLUDE_DIR]
# Exit 0: every file compiles; 1: one does not (its errors are printed);
# 77: skipped, saying why (no CUDA toolkit headers, or libtorch's CUDA headers missing).
set -uo pipefail
cxx=$1
root=$2
read -r -a torch_dirs <<<"${3//;/ }"
cuda=${4:-}
if [ -z "$cuda" ]; then
  for candidate in /usr/local/cuda/include /usr/local/cuda-*/include /usr/include; do
    if [ -f "$candidate/cuda_runtime.h" ]; then cuda=$candidate; break; fi
  done
fi
if [ -z "$cuda" ] || [ ! -f "$cuda/cuda_runtime.h" ]; then
  echo "SKIP: no CUDA toolkit headers (cuda_runtime.h) on this machine"
  exit 77
fi
aten_cuda=""
for d in "${torch_dirs[@]}"; do
  if [ -f "$d/ATen/cuda/CUDAEvent.h" ]; then aten_cuda=$d; fi
done
if [ -z "$aten_cuda" ]; then
  echo "SKIP: this libtorch's headers have no ATen/cuda/CUDAEvent.h"
  exit 77
fi

stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/c10/cuda/impl"
echo '#define C10_CUDA_BUILD_SHARED_LIBS' >"$stub/c10/cuda/impl/cuda_cmake_macros.h"

flags=(-std=c++20 -fsyntax-only -Wall -Wextra -Werror -Wno-unused-parameter -DCT_HAVE_CUDA_TORCH=1
  -DUSE_C10D_NCCL -DUSE_C10D_GLOO -DUSE_DISTRIBUTED -I "$root" -isystem "$stub")
# The compiler's own folders stay out: -isystem /usr/include breaks the C++ headers' #include_next.
for d in "$cuda" "${torch_dirs[@]}"; do
  case "$d" in /usr/include | /usr/local/include) ;; *) flags+=(-isystem "$d") ;; esac
done

# The files whose CUDA paths CT_HAVE_CUDA_TORCH / USE_C10D_NCCL switch on.
files=(real/core/stream_set_cuda.cpp real/core/stream_set.cpp real/core/device.cpp real/core/c10d_compat.cpp
  real/flowtrain/cuda_ipc_pool.cpp real/flowtrain/pool_transfer.cpp)
# One translation unit that includes them all: libtorch's headers are parsed once (as a unity build would),
# about a third of the time of one compiler run per file; a failure names the file and line as usual.
unit=$stub/cuda_paths.cpp
for f in "${files[@]}"; do echo "#include \"$root/$f\""; done >"$unit"
start=$SECONDS
if "$cxx" "${flags[@]}" "$unit"; then
  echo "ok   ${files[*]} ($((SECONDS - start)) s)"
  exit 0
fi
echo "FAIL: the CUDA paths of ${files[*]} do not compile (errors above)"
exit 1
