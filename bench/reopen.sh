#!/usr/bin/env bash
# bench/reopen.sh — a file closed and opened again at once under -o snapshot (issue 24,
# point 3): the kernel sends a close's RELEASE without waiting, so the next OPEN of the
# same file may come before a worker has served it, and finds the inode's one snapshot
# place still held. Before, that open was moved to a new inode (ESTALE, a LOOKUP again)
# and the directory took no more snapshots; after, it waits for the RELEASE (bounded,
# fs/request/snapshot.c). Tools that do this: psutil (each of cpu_times(),
# create_time(), ... reads PID/stat again), watch loops, agents polling one file.
#
# Release builds of BASE (before) and of this tree (after) serve -o snapshot, and this
# tree the exact path, over URING (on: io_uring, off: /dev/fuse); per round, the arms'
# order rotating: readlat "orc" (open, read to the end, close) of a sleeper's PID/stat,
# the median of COUNT; then, once an arm, the requests of 200 such reopens, counted with
# the fuse_request_send tracepoint. Medians of ROUNDS rounds. Writes the section
# "reopen" of bench/RESULTS.md.
#
# Run as root: bench/reopen.sh      (ROUNDS=7 COUNT=2000 BASE=4b22eb9 URING=off)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings reopen.sh ROUNDS=7 COUNT=2000 BASE=4b22eb9 URING=off
servers_setup reopen procps util-linux libfuse3-dev liburing-dev pkg-config
TRACE=/sys/kernel/tracing
[[ -d $TRACE/events/fuse ]] || mount -t tracefs none "$TRACE"
allow_uring
release_pair "$BASE"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
sleep 600 &
SLEEPER=$!
cleanup() { release_pair_remove; }

declare -A MNT
serve() { # ARM BINARY OPTIONS
	local mnt=$WORK/mnt-$1 pid
	mkdir -p "$mnt"
	"$2" -f -o "norestart,uring=$URING${3:+,$3}" "$mnt" 2>"$WORK/$1.log" &
	pid=$!
	SERVERS+=("$pid")
	MOUNTS+=("$mnt")
	wait_mounted "$mnt" "$pid"
	MNT[$1]=$mnt
}
serve before "$WORK/base-build/procfast" snapshot
serve after "$WORK/cur-build/procfast" snapshot
serve exact "$WORK/cur-build/procfast" ""
MNT[proc]=/proc
ARMS=(proc exact before after)

declare -A S
add() { S[$1]="${S[$1]:-} $2"; }
for round in $(seq "$ROUNDS"); do
	for i in "${!ARMS[@]}"; do
		arm=${ARMS[$(((i + round) % ${#ARMS[@]}))]}
		add "$arm" "$("$WORK/readlat" orc "${MNT[$arm]}/$SLEEPER/stat" "$COUNT" | cut -d' ' -f1)"
	done
done

declare -A OPS
for arm in exact before after; do
	"$WORK/readlat" orc "${MNT[$arm]}/$SLEEPER/stat" 10 >/dev/null
	echo >"$TRACE/trace"
	echo 1 >"$TRACE/events/fuse/fuse_request_send/enable"
	"$WORK/readlat" orc "${MNT[$arm]}/$SLEEPER/stat" 200 >/dev/null
	echo 0 >"$TRACE/events/fuse/fuse_request_send/enable"
	OPS[$arm]="$(grep -c "(FUSE_OPEN)" "$TRACE/trace" || true) $(grep -c "(FUSE_READ)" "$TRACE/trace" || true) $(grep -c "(FUSE_LOOKUP)" "$TRACE/trace" || true) $(grep -c "fuse_request_send" "$TRACE/trace" || true)"
done

med() { samples_median "${S[$1]}"; }
row() { # ARM LABEL
	local m ops
	m=$(med "$1")
	ops=${OPS[$1]:-"– – – –"}
	read -r o r l t <<<"$ops"
	echo "| $2 | $(ns_us "$m") | $(ratio_of "$m" "$(med proc)") | $o | $r | $l | $t |"
}
section="<!-- reopen:begin -->
## A file closed and opened again at once, under \`-o snapshot\` (issue 24, point 3)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after. Release builds of
$BASE (before) and of this tree ($(git -C "$ROOT" rev-parse --short HEAD)) serve
\`-o norestart,uring=$URING,snapshot\`, and this tree \`-o norestart,uring=$URING\` (exact);
the arms rotate within each of $ROUNDS rounds; medians of the rounds. open + read to the
end + close of a sleeper's \`PID/stat\` (\`readlat orc\`, the median of $COUNT a round), and
the requests of 200 of them (the \`fuse_request_send\` tracepoint; RELEASE besides).

| arm | µs | ratio to /proc | OPEN | READ | LOOKUP | all requests |
|---|---|---|---|---|---|---|
$(row proc "/proc")
$(row exact "exact path")
$(row before "\`-o snapshot\`, before")
$(row after "\`-o snapshot\`, after")

Before, an open that found the inode's snapshot place held by an open already closed
(its RELEASE not served yet) was moved to a new inode (ESTALE: the kernel looks the
name up again) and its directory took no more snapshots: the file went the exact path
(READs) from then on. After, the open waits for that RELEASE (yielding for 100 µs, then
sleeping 20 µs at a time, at most 1 ms) and stays a snapshot: one OPEN a reopen.
<!-- reopen:end -->"
write_section reopen "$section"
echo "$section"
