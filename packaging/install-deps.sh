#!/bin/sh
# Installs what building, running and testing procfast need on Debian 12.
# Idempotent; skips apt entirely when everything is already present.
set -eu
# dpkg-dev and file: packaging/build-deb.sh (CPack runs dpkg-shlibdeps and file);
# clang and its runtimes: the fuzz targets (tests/fuzz); podman, runc and
# busybox-static: the real containers of tests/containers/test_podman.py (rootful: no
# uidmap), busybox-static and keyutils also tests of BusyBox tools and of keys;
# libc6-dev (build-essential) has the static libc for procfast-enter; lxcfs: the
# peer tests/resources/test_resources*.py and bench/resources.sh compare with (its service is
# stopped and disabled: the tests start their own on scratch mount points);
# catatonit and python3-yaml: tests/containers/test_kubernetes.py (podman kube play's pod
# infra container; reading the specs); qemu-system-x86, busybox-static and kmod:
# tests/guest/run (installed there when missing).
PKGS="build-essential cmake pkg-config libfuse3-dev fuse3 liburcu-dev libcap-dev liburing-dev \
      python3 python3-pytest procps psmisc lsof util-linux bindfs hyperfine dpkg-dev file \
      clang libclang-rt-dev cppcheck valgrind podman runc busybox-static keyutils lxcfs \
      catatonit python3-yaml"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing </dev/null
  case " $missing " in
  *" lxcfs "*) # the package starts one on /var/lib/lxcfs: not wanted here
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
      systemctl disable --now lxcfs.service >/dev/null 2>&1 || true
    fi ;;
  esac
fi
