#!/bin/bash
# Quick start: installs what is missing, builds and installs the procfast
# Debian package (/usr/sbin/procfast, procfast(8), procfast.service), mounts
# procfast at /run/procfast (or the directory given) the way Linux users do,
# with mount -t fuse, then says how to use it.
set -euo pipefail
cd "$(dirname "$0")/.."
mnt=${1:-/run/procfast}

packaging/install-deps.sh >/dev/null
deb=$(packaging/build-deb.sh)
# dpkg -i rather than apt-get install: it also replaces an installed package of
# the same version with the one just built. install-deps.sh installed its
# dependencies. Where systemd runs, this starts procfast.service on /run/procfast.
dpkg -i "$deb" >/dev/null
echo "installed $deb"
mkdir -p "$mnt"
if awk -v m="$mnt" '$2 == m && $3 == "fuse.procfast" { f = 1 } END { exit !f }' /proc/self/mounts; then
	echo "procfast is already mounted at $mnt"
else
	mount -t fuse procfast "$mnt" # returns once the mount is usable
	echo "procfast is mounted at $mnt (mount -t fuse procfast $mnt)"
fi
cat <<USAGE

Use it like /proc:
  ls $mnt; cat $mnt/self/status
Run the usual tools on it (bound over /proc in a private mount namespace):
  unshare -m sh -c 'mount --bind $mnt /proc && ps -ef'
  unshare -m sh -c 'mount --bind $mnt /proc && lsof -n -P'
Bind it into a container for a monitoring agent:
  mount --bind $mnt /path/to/container/rootfs/host/proc
Mount it at boot: the line for /etc/fstab, or the service (where systemd runs):
  procfast $mnt fuse.procfast defaults 0 0
  systemctl enable --now procfast.service
Unmount:
  umount $mnt
Read more: man procfast
USAGE
