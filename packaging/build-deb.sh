#!/bin/sh
# Builds the Debian package from a clean build directory (default build-deb/)
# and prints the path of the .deb. Needs cmake, a C compiler, the -dev packages
# (packaging/install-deps.sh) and dpkg-dev (dpkg-shlibdeps).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build-deb}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
if [ -d "$dir" ] && [ ! -f "$dir/CMakeCache.txt" ] && [ -n "$(ls -A "$dir")" ]; then
	echo "build-deb.sh: $dir is not a build directory: not removing it" >&2
	exit 1
fi
rm -rf "$dir"
# Only what the package holds is built (not the test helpers), and so cpack's
# install step must not build "all".
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
	-DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
cmake --build "$dir" -j"$(nproc)" --target procfast procfast-attach procfast-enter manpage >/dev/null
cd "$dir"
cpack -G DEB >cpack.log 2>&1 || { cat cpack.log >&2; exit 1; }
ls "$dir"/procfast_*.deb
