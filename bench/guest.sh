#!/usr/bin/env bash
# bench/guest.sh — the core tool comparison of bench/tools.sh inside a guest booted on
# Debian 12's kernel (6.1) under qemu (tests/guest/run): `ps -ef`, `top -bn1`,
# `pgrep -x sleep` and `lsof -n -P` on /proc and on a procfast mount, the arms
# alternating (which goes first rotates each round), medians of ROUNDS rounds. Prints
# the ratio procfast / /proc per tool, warm (each timed run follows an untimed one of
# the same tool on the same arm). Under TCG everything is slow: read the ratios only.
#
# Run as root: bench/guest.sh
# Environment: ROUNDS (default 9), PROCFAST (daemon binary; default: this tree built
#              Release into the scratch directory, which the guest sees under /tmp).
# Every run of a tool is
#   unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'
# with output to /dev/null, timed by wall clock.
set -euo pipefail

if [[ ${1:-} == --inside ]]; then # in the guest: PROCFAST, ROUNDS from the environment
	MNT=$(mktemp -d /tmp/procfast-bench-guest.XXXXXX)
	"$PROCFAST" -f "$MNT" >"$MNT.log" 2>&1 </dev/null &
	DAEMON=$!
	# shellcheck disable=SC2317 # run by the trap
	stop() {
		mountpoint -q "$MNT" && { fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"; }
		kill "$SLEEPER" 2>/dev/null || true
		wait "$DAEMON" 2>/dev/null || true
		rmdir "$MNT" 2>/dev/null || true
	}
	sleep 3600 >/dev/null 2>&1 & # what `pgrep -x sleep` finds
	SLEEPER=$!
	trap stop EXIT
	for _ in $(seq 200); do
		mountpoint -q "$MNT" && [[ -e $MNT/1/stat ]] && break
		kill -0 "$DAEMON" 2>/dev/null || { cat "$MNT.log"; exit 1; }
		sleep 0.1
	done
	mountpoint -q "$MNT" || { echo "guest.sh: procfast did not mount" >&2; cat "$MNT.log"; exit 1; }
	once() { unshare -m --propagation private sh -c "mount --bind $1 /proc && exec $2" >/dev/null 2>&1 || true; }
	timed() { local t0=${EPOCHREALTIME/./}; once "$1" "$2"; echo $((${EPOCHREALTIME/./} - t0)); }
	median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	TOOLS=("ps -ef" "top -bn1" "pgrep -x sleep" "lsof -n -P")
	declare -A S
	ARMS=(/proc "$MNT")
	for ((r = 0; r < ROUNDS; r++)); do
		for tool in "${TOOLS[@]}"; do
			for k in 0 1; do
				a=${ARMS[(r + k) % 2]}
				once "$a" "$tool"
				S[$tool|$a]+="$(timed "$a" "$tool") "
			done
		done
	done
	echo "kernel $(uname -r), $(nproc) CPUs, $(find /proc -maxdepth 1 -name '[0-9]*' | wc -l) processes; medians of $ROUNDS rounds, warm"
	printf '%-16s %12s %14s %8s\n' tool "/proc ms" "procfast ms" ratio
	for tool in "${TOOLS[@]}"; do
		p=$(median "${S[$tool|/proc]}") f=$(median "${S[$tool|$MNT]}")
		awk -v t="$tool" -v p="$p" -v f="$f" 'BEGIN {printf "%-16s %12.1f %14.1f %8.2f\n", t, p / 1000, f / 1000, f / p}'
	done
	exit 0
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
[[ $EUID -eq 0 ]] || { echo "guest.sh: must run as root" >&2; exit 1; }
export ROUNDS=${ROUNDS:-9}
WORK=$(mktemp -d /tmp/procfast-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if [[ -z ${PROCFAST:-} ]]; then
	echo "guest.sh: building procfast (Release) in $WORK/build" >&2
	cmake -S "$ROOT" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build "$WORK/build" -j2 --target procfast >/dev/null
	PROCFAST=$WORK/build/procfast
fi
export PROCFAST
echo "guest.sh: $ROUNDS rounds in the guest (procfast: $PROCFAST)" >&2
"$ROOT/tests/guest/run" --timeout 1800 -- bash "$ROOT/bench/guest.sh" --inside
