#!/bin/bash
# What pidns= views cost the host (issue 5): each view is a supervisor and a
# server of its own, with its own proc connector socket, so every fork and exit
# on the host is delivered to each view. Measures the host's fork rate and the
# daemons' memory with no procfast, with the host mount alone, and with the host
# mount plus N views (all of one pid namespace). Writes the section "views" of
# bench/RESULTS.md.
#
#   sudo bench/views.sh [ROUNDS [FORKS]]   # default 5 rounds of 3000 forks per arm
#
# Fork rate: build/tests/forker FORKS --vfork (vfork + _exit + waitpid, as fast as
# it can), the median of ROUNDS runs; arms are interleaved round by round so that
# the machine's drift falls on all of them alike. Memory: the sum of Pss over every
# procfast process (/proc/PID/smaps_rollup: shared pages are divided among their
# users, so the sum is what the views really take).
set -euo pipefail
. "$(dirname "$0")/results.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROCFAST=${PROCFAST:-$ROOT/build/procfast}
FORKER=${FORKER:-$ROOT/build/tests/forker}
ROUNDS=${1:-5}
FORKS=${2:-3000}
ARMS=(0 1 4 16) # views beside the host mount; "none" is measured too
RESULTS=$ROOT/bench/RESULTS.md
WORK=$(mktemp -d /tmp/procfast-bench.XXXXXX)
cleanup() {
	for m in "$WORK"/mnt*; do
		mountpoint -q "$m" 2>/dev/null && { umount "$m" || umount -l "$m"; }
	done
	[[ -n ${SLEEPER:-} ]] && kill -9 $(pgrep -P "$SLEEPER") "$SLEEPER" 2>/dev/null
	sleep 0.5
	rm -rf "$WORK"
}
trap cleanup EXIT
[[ -x $PROCFAST && -x $FORKER ]] || (cd "$ROOT" && cmake -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build build -j2 >/dev/null)

unshare --pid --fork --mount-proc sleep 3600 & SLEEPER=$!
sleep 0.5
NS=/proc/$(pgrep -P "$SLEEPER" | head -1)/ns/pid
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Mounts the host mount and $1 views; unmounts everything first.
mount_arm() {
	for m in "$WORK"/mnt*; do
		mountpoint -q "$m" 2>/dev/null && umount "$m"
	done
	[[ $1 == none ]] && return
	mkdir -p "$WORK/mnt"
	"$PROCFAST" "$WORK/mnt"
	for ((i = 0; i < $1; i++)); do
		mkdir -p "$WORK/mnt$i"
		"$PROCFAST" -o "pidns=$NS" "$WORK/mnt$i"
		ls "$WORK/mnt$i" >/dev/null
	done
}

pss_kib() {
	local total=0 p
	for p in $(pgrep -f "^$PROCFAST "); do
		total=$((total + $(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo "$total"
}

declare -A rates pss
for ((r = 0; r < ROUNDS; r++)); do
	for arm in none "${ARMS[@]}"; do
		mount_arm "$arm"
		sleep 0.3
		rate=$("$FORKER" "$FORKS" --vfork | awk '{ print $(NF) }' | tr -d '/s')
		rates[$arm]+="$rate "
		[[ $r == 0 ]] && pss[$arm]=$(pss_kib)
	done
done
mount_arm none

median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(echo "${rates[none]}" | median)
table="| procfast mounts | forks/s (median of $ROUNDS) | fork rate vs none | Pss of all procfast processes |
|---|---|---|---|
| none | $base | 1.00 | 0 |"
for arm in "${ARMS[@]}"; do
	m=$(echo "${rates[$arm]}" | median)
	table+="
| host + $arm views | $m | $(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", a / b }') | $((${pss[$arm]} / 1024)) MiB (${pss[$arm]} KiB) |"
done

section="<!-- views:begin -->
## pidns= views: what each costs the host (issue 5)

Command: \`sudo bench/views.sh $ROUNDS $FORKS\` ($(date -u +%F), $(nproc) CPUs, load before: $load_before).

Each mount is a supervisor and a server with its own proc connector socket, so
every fork and exit on the host is delivered to every view; views do not share
a daemon. Fork rate: \`forker $FORKS --vfork\` on the host, arms interleaved
round by round.

$table
<!-- views:end -->"
write_section views "$section"
printf '%s\n' "$section"
