#!/usr/bin/env bash
# bench/thread_events.sh — threads' forks kept out of the listener's socket (issue 24,
# point 4): a program that starts threads sends the proc connector a FORK per thread,
# which the index never uses (it marks thread-group leaders). Since the socket filter
# (cache/index/proc_filter.c) the kernel drops them before the socket; before, the
# listener read each and dropped it, and a burst of threads overflowed the socket
# (ENOBUFS), each overflow a rescan of the source.
#
# Release builds of BASE (before) and of this tree (after) each serve -o norestart,uring=off
# alone (one mounted at a time: one listener reads the events), besides an arm with no
# procfast; the arms' order rotates each round. In each arm:
#   - churn: `threadchurn SECONDS 64` (64 threads alive, each replaced as it ends): its
#     threads a second, and the daemon's CPU (utime + stime of all its threads) per thread;
#   - burst: `threads BURST --hold` starts BURST threads as fast as it can: the time it
#     took (the forks' cost with the listener's socket beside them), and the events lost
#     (the daemon's "process events lost" lines: one a rescan) until it is ready; then
#     its kill (an exit event a thread) and the losses it makes: rescans, and since the
#     threads' own socket (proc_filter.h), "threads' events lost" lines (cache drops).
# Medians of ROUNDS rounds. Writes the section "thread_events" of bench/RESULTS.md.
#
# Run as root: bench/thread_events.sh      (ROUNDS=7 SECONDS_EACH=5 BURST=100000 BASE=8c8b013)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings thread_events.sh ROUNDS=7 SECONDS_EACH=5 BURST=100000 BASE=8c8b013
servers_setup thread_events procps util-linux libfuse3-dev liburing-dev pkg-config
release_pair "$BASE"
# room for the burst's threads and pids (restored at the end)
THREADS_MAX=$(cat /proc/sys/kernel/threads-max) PID_MAX=$(cat /proc/sys/kernel/pid_max)
cleanup() {
	echo "$PID_MAX" >/proc/sys/kernel/pid_max
	echo "$THREADS_MAX" >/proc/sys/kernel/threads-max
}
((THREADS_MAX >= 2 * BURST)) || echo $((2 * BURST)) >/proc/sys/kernel/threads-max
((PID_MAX >= 4 * BURST)) || echo $((4 * BURST)) >/proc/sys/kernel/pid_max
H=$WORK/cur-build/tests
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

ticks_of() { # PID: utime + stime of all its threads
	cat /proc/"$1"/task/*/stat 2>/dev/null | sed 's/.*) //' | awk '{ t += $12 + $13 } END { print t + 0 }'
}
lost_in() { grep -c "process events lost" "$1" || true; }
threads_lost_in() { grep -c "threads' events lost" "$1" || true; }

declare -A S
add() { S[$1]="${S[$1]:-} $2"; }
one_arm() { # ARM
	local arm=$1 bin="" log=$WORK/$1.log server="" t0 t1 rate churned c0=0 c1=0 l0=0 l1=0 k1=0 holder
	[[ $arm == before ]] && bin=$WORK/base-build/procfast
	[[ $arm == after ]] && bin=$WORK/cur-build/procfast
	if [[ -n $bin ]]; then
		serve_procfast "$bin" "$WORK/mnt" "$log" "norestart,uring=off"
		server=$SERVED
		ls "$WORK/mnt" >/dev/null
		sleep 1
		c0=$(ticks_of "$server")
	fi
	read -r churned _ _ _ _ rate < <("$H/threadchurn" "$SECONDS_EACH" 64)
	add "$arm.rate" "${rate%/s}"
	if [[ -n $server ]]; then
		c1=$(ticks_of "$server")
		# 10 ms ticks, in µs a thread
		add "$arm.cpu" "$(awk -v c=$((c1 - c0)) -v n="$churned" 'BEGIN { printf "%.2f", c * 10000 / n }')"
		l0=$(lost_in "$log")
	fi
	t0=$(date +%s%N)
	"$H/threads" "$BURST" --hold >"$WORK/holder" </dev/null &
	holder=$!
	until [[ -s $WORK/holder ]]; do
		kill -0 "$holder" 2>/dev/null || { echo "thread_events.sh: threads $BURST failed" >&2; exit 1; }
		sleep 0.01
	done
	t1=$(date +%s%N)
	add "$arm.burst" $(((t1 - t0) / 1000000))
	if [[ -n $server ]]; then
		sleep 1 # the forks' events read, a loss logged
		l1=$(lost_in "$log")
		k1=$(threads_lost_in "$log")
		add "$arm.lost" $((l1 - l0))
	fi
	kill "$holder"
	wait "$holder" 2>/dev/null || true
	if [[ -n $server ]]; then
		sleep 1 # the exits' events read, a loss logged
		add "$arm.lost_exit" $(($(lost_in "$log") - l1))
		add "$arm.threads_lost_exit" $(($(threads_lost_in "$log") - k1))
		umount "$WORK/mnt" || umount -l "$WORK/mnt"
		stop_server "$server"
		unset 'SERVERS[-1]' 'MOUNTS[-1]'
	fi
	rm -f "$WORK/holder"
}

ARMS=(none before after)
for round in $(seq "$ROUNDS"); do
	for i in "${!ARMS[@]}"; do one_arm "${ARMS[$(((i + round) % ${#ARMS[@]}))]}"; done
done

med() { samples_median "${S[$1]:-–}"; }
row() { # ARM LABEL
	local cpu="–" lost="–" lost_exit="–" threads_lost="–"
	if [[ $1 != none ]]; then
		cpu=$(med "$1.cpu")
		lost="$(med "$1.lost") (${S[$1.lost]# })"
		lost_exit="$(med "$1.lost_exit") (${S[$1.lost_exit]# })"
		threads_lost="$(med "$1.threads_lost_exit") (${S[$1.threads_lost_exit]# })"
	fi
	echo "| $2 | $(med "$1.rate") | $cpu | $(med "$1.burst") | $lost | $lost_exit | $threads_lost |"
}
section="<!-- thread_events:begin -->
## Threads' events kept out of the index's socket (issue 24, point 4)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after. Release builds of
$BASE (before) and of this tree ($(git -C "$ROOT" rev-parse --short HEAD)) serve
\`-o norestart,uring=off\`, one at a time; the arms rotate within each of $ROUNDS rounds;
medians of the rounds. Churn: \`threadchurn $SECONDS_EACH 64\`; the daemon's CPU is
utime + stime of all its threads (10 ms ticks) over the churn, per thread started. Burst:
\`threads $BURST --hold\` until it printed its line (every thread started), then killed;
losses are the daemon's \"process events lost (ENOBUFS)\" lines from the start to 1 s
after the line, and from the kill to 1 s after (each round's in brackets): each is a
rescan of the source; the last column counts the \"threads' events lost (ENOBUFS)\"
lines from the kill to 1 s after: a loss on the threads' own socket, which drops
cached names and rescans nothing.

| arm | churn: threads started a second | churn: daemon CPU per thread, µs | burst of $BURST threads, ms | event losses (rescans) as they start | at their kill | threads' socket's losses at their kill |
|---|---|---|---|---|---|---|
$(row none "no procfast")
$(row before "before ($BASE)")
$(row after "after (this tree)")

The kernel builds each event for every listener and runs the socket's filter on it in
the forking thread; what the filter drops is never queued, read or copied: threads'
forks on every socket. Threads' exits still reach the listener (a named thread's
directory is dropped from the kernel's cache at its exit), on a socket of their own
where the second socket can be filtered: the kill of a process sends an exit event for
each of its threads at once, which overflows that socket and not the index's.
<!-- thread_events:end -->"
write_section thread_events "$section"
echo "$section"
