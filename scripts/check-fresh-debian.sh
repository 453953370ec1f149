#!/usr/bin/env bash
# Checks the README's promise on a minimal Debian 12: in a fresh
# `debootstrap --variant=minbase bookworm` chroot with only git and make added,
# a clean clone of this repository runs `make test` and `make demo`.
#
#   sudo scripts/check-fresh-debian.sh [CHROOT_DIR]   (default /var/tmp/ct-fresh-debian)
#
# Needs root and Debian's package mirror. The chroot is kept (delete it by
# hand); a second run reuses it but clones the repository afresh, so packages
# installed by the first run are already there: remove the folder for a
# first-run check. Prints each step's wall time.
set -euo pipefail
root=${1:-/var/tmp/ct-fresh-debian}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ "$(id -u)" -ne 0 ]; then
  echo "check-fresh-debian.sh: needs root (debootstrap and chroot); run it with sudo" >&2
  exit 2
fi
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap

step() { echo "== $(date +%T) $*"; }

if [ ! -x "$root/bin/bash" ]; then
  step "debootstrap --variant=minbase bookworm $root"
  debootstrap --variant=minbase bookworm "$root" "$mirror"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mounted=()
for fs in proc sys dev dev/pts; do
  mountpoint -q "$root/$fs" || { mount --bind "/$fs" "$root/$fs"; mounted+=("$root/$fs"); }
done
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount "${mounted[$i]}" || true; done; }
trap cleanup EXIT

step "apt-get install git make (the only additions to minbase)"
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -q
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends git make ca-certificates

step "clean clone of $repo"
rm -rf "$root/root/clustertwin"
git clone -q "$repo" "$root/root/clustertwin"

step "make test"
start=$(date +%s)
chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c 'cd /root/clustertwin && make test'
echo "make test: $(($(date +%s) - start)) s"

step "make demo"
start=$(date +%s)
chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c 'cd /root/clustertwin && make demo'
echo "make demo: $(($(date +%s) - start)) s"
step "fresh Debian check passed"
