#!/usr/bin/env bash
# bench/profile.sh — where procfast's CPU goes while `ps -ef` runs over it (issue 24:
# what limits its cost per round trip). A Release build of this tree serves
# `-o norestart` (one server process) over each transport; `perf record` samples the
# server (cpu-clock, every thread) while `ps -ef` runs again and again with the mount
# bound over /proc. The samples are sorted into:
#   - procfast's own code, and the libraries it calls (libc, libfuse, liburcu);
#   - the kernel's scheduler: switching to and from a worker that slept for the next
#     request, and waking the reader with the reply (finish_task_switch, __schedule,
#     try_to_wake_up, the wake-up's unlock);
#   - the rest of the kernel: the source's procfs work, FUSE's copies, the syscalls.
# Writes the section "profile" of bench/RESULTS.md.
#
# Run as root: bench/profile.sh      (SECONDS_EACH=10 of sampling per transport)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings profile.sh SECONDS_EACH=10
servers_setup profile linux-perf procps util-linux libfuse3-dev liburing-dev pkg-config
command -v perf >/dev/null || { echo "profile.sh: no perf" >&2; exit 1; }

release "$ROOT" "$WORK/build"
PROCFAST_BIN=$WORK/build/procfast
allow_uring
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

ps_over() { # MOUNT: one ps -ef with MOUNT over /proc
	unshare -m --propagation private sh -c "mount --bind $1 /proc && exec ps -ef" >/dev/null
}

# One transport: mounts, warms, samples the server while ps -ef loops; leaves
# "runs cpu_ms_per_run" in $WORK/NAME.runs and perf's per-symbol table in $WORK/NAME.syms.
profile_one() { # NAME URING(on|off)
	local name=$1 mnt=$WORK/$1 server runs=0 t0 perf_pid
	serve_procfast "$PROCFAST_BIN" "$mnt" "$WORK/$name.log" "norestart,uring=$2"
	server=$SERVED
	for _ in 1 2 3; do ps_over "$mnt"; done
	perf record -q -e cpu-clock -F 4000 -g -p "$server" -o "$WORK/$name.data" \
		-- sleep "$SECONDS_EACH" >/dev/null 2>&1 &
	perf_pid=$!
	sleep 0.3
	t0=$(date +%s%N)
	while (($(date +%s%N) - t0 < (SECONDS_EACH - 1) * 1000000000)); do
		ps_over "$mnt"
		runs=$((runs + 1))
	done
	wait "$perf_pid"
	perf report -i "$WORK/$name.data" --no-children --sort dso,sym -g none -F overhead,dso,sym \
		2>/dev/null | awk '/%/ { sub(/%/, "", $1); print }' >"$WORK/$name.syms"
	# cpu-clock's event count is the sampled CPU time in ns
	local ns
	ns=$(perf report -i "$WORK/$name.data" --stdio --no-children --sort dso -g none 2>/dev/null |
		awk '/^# Event count/ { print $NF }')
	awk -v ns="${ns:-0}" -v r="$runs" 'BEGIN { printf "%d %.1f\n", r, ns / 1e6 / r }' >"$WORK/$name.runs"
	stop_server "$server"
	unmount_all "$mnt"
}

# "own lib sched kernel" percentages, and the top symbols, of one transport.
split_of() { # NAME
	awk '{ p = $1; dso = $2; sym = $NF
	       if (dso ~ /procfast/) own += p
	       else if (dso !~ /kernel/) lib += p
	       else if (sym ~ /^(finish_task_switch|__schedule|schedule|try_to_wake_up|_raw_spin_unlock_irqrestore|__wake_up|ttwu_|enqueue_task|dequeue_task|pick_next_task|update_curr|psi_)/) sched += p
	       else kern += p }
	     END { printf "%.1f %.1f %.1f %.1f\n", own, lib, sched, kern }' "$WORK/$1.syms"
}
top_of() { # NAME: the 6 largest symbols
	sort -rn "$WORK/$1.syms" | head -6 | awk '{ printf "%s%s %.1f%%", (NR > 1 ? ", " : ""), $NF, $1 }'
}

row() { # NAME LABEL
	local runs cpu own lib sched kern
	read -r runs cpu <"$WORK/$1.runs"
	read -r own lib sched kern <<<"$(split_of "$1")"
	printf '| %s | %s | %s | %s%% | %s%% | **%s%%** | %s%% | %s |\n' "$2" "$runs" "$cpu" \
		"$own" "$lib" "$sched" "$kern" "$(top_of "$1")"
}

profile_one devfuse off
rows=$(row devfuse "/dev/fuse")
if profile_one uring on && grep -q "serving through io_uring\| over io_uring, " "$WORK/uring.log"; then
	rows+=$'\n'$(row uring "io_uring")
fi

section="<!-- profile:begin -->
## Where the server's CPU goes under \`ps -ef\` (issue 24)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after.
A Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)) serves \`-o norestart\`;
\`perf record -e cpu-clock -g\` samples every thread of the server for $SECONDS_EACH s while
\`ps -ef\` runs again and again with the mount bound over /proc (warm: names cached). CPU
per run is the server's sampled CPU over the runs. The scheduler's share is the time in
switching a worker in and out of its sleep for the next request and in waking the reader
with the reply; procfast's own code and its libraries are what a faster daemon could
save.

| transport | ps -ef runs | server CPU per run, ms | procfast's code | libc, libfuse, liburcu | kernel: scheduler, wake-ups | kernel: the rest (procfs source, FUSE copies, syscalls) | largest symbols |
|---|---|---|---|---|---|---|---|
$rows
<!-- profile:end -->"
write_section profile "$section"
echo "$section"
