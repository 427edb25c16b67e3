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
# tests/guest/run (installed there when missing); prometheus-node-exporter and iproute2:
# tests/tools/test_node_exporter.py (its service is stopped and disabled too: the test
# starts its own, in a network namespace of its own).
PKGS="build-essential cmake pkg-config libfuse3-dev fuse3 liburcu-dev libcap-dev liburing-dev \
      python3 python3-pytest procps psmisc lsof util-linux bindfs hyperfine dpkg-dev file \
      clang libclang-rt-dev cppcheck valgrind podman runc busybox-static keyutils lxcfs \
      catatonit python3-yaml prometheus-node-exporter iproute2"
missing=""
stop_service() {
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    systemctl disable --now "$1" >/dev/null 2>&1 || true
  fi
}
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
    stop_service lxcfs.service ;;
  esac
  case " $missing " in
  *" prometheus-node-exporter "*) # the package starts one on port 9100
    stop_service prometheus-node-exporter.service ;;
  esac
fi
