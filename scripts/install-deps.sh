#!/usr/bin/env bash
# Installs the Debian 12 packages clustertwin needs, and only those missing.
# This is the one list: a dependency that is not here is not a dependency.
#
#   scripts/install-deps.sh           install what is missing (as root, or through sudo)
#   scripts/install-deps.sh --check   list what is missing; exit 0 if nothing is, 2 otherwise
#   scripts/install-deps.sh --list    print the package list
#
# Run as root it calls apt-get directly; otherwise through `sudo -n`; when
# neither works it prints the exact command to run and exits 2.
set -euo pipefail

PACKAGES=(
  # The compiler and build tools (a minimal Debian has none of them).
  g++ make cmake ninja-build pkg-config ccache git ca-certificates
  # clang and its libFuzzer runtime, for `make fuzz`.
  clang libclang-rt-14-dev
  # The twin: SimGrid 3.32.
  libsimgrid-dev
  # The real executors: libtorch 1.13 (CPU) with c10d, and Gloo.
  libtorch-dev libgloo-dev
  # An optimised BLAS/LAPACK for libtorch (Debian's libtorch links libblas.so.3,
  # which is otherwise the reference BLAS at ~4 GFLOP/s; OpenBLAS gives ~75 on
  # one core here). The OpenMP build follows libtorch's thread count.
  libopenblas0-openmp
  # Numerics, graphs, formats, the command line.
  libeigen3-dev libboost-graph-dev libyaml-cpp-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  # Chakra execution traces (traces/chakra): protoc generates the reader and
  # writer from our .proto, libprotobuf runs them.
  protobuf-compiler libprotobuf-dev
  # Tests and benchmarks.
  libgtest-dev libgmock-dev libbenchmark-dev
  # The function-length check of `make test` (tests/layering/function_lengths.sh).
  universal-ctags
  # Plots (PNG through gnuplot's cairo terminal).
  gnuplot-nox
)

case "${1:-}" in
  --list) printf '%s\n' "${PACKAGES[@]}"; exit 0 ;;
  --check | "") ;;
  -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
  *) echo "install-deps.sh: unknown option '$1' (allowed: --check, --list, --help)" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  [ "${1:-}" = "--check" ] && echo "install-deps.sh: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "install-deps.sh: missing: ${missing[*]}"
  exit 2
fi

echo "install-deps.sh: installing ${#missing[@]} missing package(s): ${missing[*]}"
apt_install() {
  "$@" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "$@" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}
if [ "$(id -u)" -eq 0 ]; then
  apt_install
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  apt_install sudo
else
  echo "install-deps.sh: not root and no password-less sudo; run this, then try again:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 2
fi
