#!/bin/bash
# What pidns= views cost the host (issue 5): each view has a server of its own,
# with its own proc connector socket, so every fork and exit on the host is
# delivered to each view. Measures the host's fork rate and the daemons' memory
# with no procfast, with the host mount alone, and with the host mount plus N
# views (all of one pid namespace), each view either a daemon of its own or
# handed over to the host mount's daemon (-o daemon=). Writes the section
# "views" of bench/RESULTS.md.
#
#   sudo bench/views.sh [ROUNDS [FORKS]]   # default 5 rounds of 3000 forks per arm
#
# Fork rate: build/tests/forker FORKS --vfork (vfork + _exit + waitpid, as fast as
# it can), the median of ROUNDS runs; arms are interleaved round by round so that
# the machine's drift falls on all of them alike. Memory: the sum of Pss over every
# procfast process (/proc/PID/smaps_rollup: shared pages are divided among their
# users, so the sum is what the views really take).
set -euo pipefail
. "$(dirname "$0")/common.sh"
FORKER=${FORKER:-$ROOT/build/tests/forker}
ROUNDS=${1:-5}
FORKS=${2:-3000}
ARMS=(0 4/own 16/own 4/handed 16/handed) # views beside the host mount; "none" too
cleanup() {
	unmount_all "$WORK"/mnt?* "$WORK"/mnt
	pidns_stop
	sleep 0.5
	rm -rf "$WORK"
}
trap cleanup EXIT
ensure_built "$PROCFAST" "$FORKER"

pidns_start
NS=/proc/$PIDNS_INIT/ns/pid
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# Mounts the host mount and N views (arm N/own or N/handed); unmounts all first.
mount_arm() {
	local n=${1%%/*} how=${1#*/}
	unmount_all "$WORK"/mnt?* "$WORK"/mnt
	local t
	for ((t = 0; t < 100; t++)); do # the daemons of the last arm gone
		pgrep -f "^$PROCFAST " >/dev/null || break
		sleep 0.05
	done
	[[ $1 == none ]] && return
	mkdir -p "$WORK/mnt"
	if [[ $how == handed ]]; then
		"$PROCFAST" -o "control=$WORK/control" "$WORK/mnt"
	else
		"$PROCFAST" "$WORK/mnt"
	fi
	for ((i = 0; i < n; i++)); do
		mkdir -p "$WORK/mnt$i"
		if [[ $how == handed ]]; then
			"$PROCFAST" -o "daemon=$WORK/control,pidns=$NS" "$WORK/mnt$i"
		else
			"$PROCFAST" -o "pidns=$NS" "$WORK/mnt$i"
		fi
		ls "$WORK/mnt$i" >/dev/null
	done
	# the host mount last: its daemon then ends with it (views handed over go first)
}

pss_kib() {
	local total=0 p
	for p in $(pgrep -f "^$PROCFAST "); do
		total=$((total + $(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo "$total"
}

declare -A rates pss procs
for ((r = 0; r < ROUNDS; r++)); do
	for arm in none "${ARMS[@]}"; do
		mount_arm "$arm"
		sleep 1 # start-up scans done
		rate=$("$FORKER" "$FORKS" --vfork | awk '{ print $(NF) }' | tr -d '/s')
		rates[$arm]+="$rate "
		if [[ $r == 0 ]]; then
			pss[$arm]=$(pss_kib)
			procs[$arm]=$(pgrep -cf "^$PROCFAST " || true)
		fi
	done
done
mount_arm none

label() { [[ $1 == 0 ]] && echo "host alone" || echo "host + ${1%%/*} views, ${1#*/}"; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(echo "${rates[none]}" | median)
table="| procfast mounts | processes | forks/s (median of $ROUNDS) | fork rate vs none | Pss of all procfast processes |
|---|---|---|---|---|
| none | 0 | $base | 1.00 | 0 |"
for arm in "${ARMS[@]}"; do
	m=$(echo "${rates[$arm]}" | median)
	table+="
| $(label "$arm") | ${procs[$arm]} | $m | $(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", a / b }') | $((${pss[$arm]} / 1024)) MiB (${pss[$arm]} KiB) |"
done

section="<!-- views:begin -->
## pidns= views: what each costs the host (issue 5)

Command: \`sudo bench/views.sh $ROUNDS $FORKS\` ($(date -u +%F), $(nproc) CPUs, load before: $load_before).

\"own\": each view is a daemon of its own (supervisor and server). \"handed\": each
view is handed over to the host mount's daemon (\`-o daemon=\`) and served by one more
child of its supervisor. Either way each view's server has its own proc connector
socket, so every fork and exit on the host is delivered to every view. Fork rate:
\`forker $FORKS --vfork\` on the host, arms interleaved round by round. Pss: shared
pages divided among the processes that map them (\`/proc/PID/smaps_rollup\`)."

section+="

$table
<!-- views:end -->"
write_section views "$section"
printf '%s\n' "$section"
