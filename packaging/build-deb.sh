#!/bin/sh
# Builds the Debian package from a clean build directory (default build-deb/)
# and prints the path of the .deb. Needs cmake, a C compiler, the -dev packages
# (packaging/install-deps.sh) and dpkg-dev (dpkg-shlibdeps).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-deb}
rm -rf "$dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$dir" -j"$(nproc)" --target procfast manpage >/dev/null
(cd "$dir" && cpack -G DEB >/dev/null)
ls "$PWD/$dir"/procfast_*.deb
