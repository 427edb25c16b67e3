#!/bin/bash
# Quick start: installs what is missing, builds procfast and mounts it at
# /run/procfast (or the directory given), then says how to use it.
set -euo pipefail
cd "$(dirname "$0")/.."
mnt=${1:-/run/procfast}

packaging/install-deps.sh >/dev/null
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
mkdir -p "$mnt"
if grep -q " $mnt fuse.procfast " /proc/mounts; then
	echo "procfast is already mounted at $mnt"
else
	build/procfast "$mnt" # returns once the mount is usable
	echo "procfast is mounted at $mnt"
fi
cat <<USAGE

Use it like /proc:
  ls $mnt; cat $mnt/self/status
Run the usual tools on it (bound over /proc in a private mount namespace):
  unshare -m sh -c 'mount --bind $mnt /proc && ps -ef'
  unshare -m sh -c 'mount --bind $mnt /proc && lsof -n -P'
Bind it into a container for a monitoring agent:
  mount --bind $mnt /path/to/container/rootfs/host/proc
Unmount:
  fusermount3 -u $mnt
USAGE
