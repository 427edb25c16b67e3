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
# tree the exact path, over each of TRANSPORTS (uring=off: /dev/fuse, on: io_uring); per
# round, the arms' order rotating: readlat "orc" (open, read to the end, close) of a sleeper's PID/stat,
# the median of COUNT; then, once an arm, the requests of 200 such reopens, counted with
# the fuse_request_send tracepoint. Medians of ROUNDS rounds. Writes the section
# "reopen" of bench/RESULTS.md.
#
# Run as root: bench/reopen.sh      (ROUNDS=7 COUNT=2000 BASE=4b22eb9 TRANSPORTS="off on")
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings reopen.sh ROUNDS=7 COUNT=2000 BASE=4b22eb9 "TRANSPORTS=off on"
servers_setup reopen procps util-linux libfuse3-dev liburing-dev pkg-config
TRACE=/sys/kernel/tracing
[[ -d $TRACE/events/fuse ]] || mount -t tracefs none "$TRACE"
allow_uring
release_pair "$BASE"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
sleep 600 &
SLEEPER=$!

declare -A MNT S OPS
serve() { # ARM TRANSPORT BINARY OPTIONS
	MNT[$1]=$WORK/mnt-$1
	serve_procfast "$3" "${MNT[$1]}" "$WORK/$1.log" "norestart,uring=$2${4:+,$4}"
}
unserve() { # ARM
	umount "${MNT[$1]}" || umount -l "${MNT[$1]}"
	stop_server "${SERVERS[-1]}"
	unset 'SERVERS[-1]' 'MOUNTS[-1]'
}
add() { S[$1]="${S[$1]:-} $2"; }
orc() { "$WORK/readlat" orc "${MNT[$1]}/$SLEEPER/stat" "$2" | cut -d' ' -f1; }
traced() { # ARM: "OPEN READ LOOKUP ALL" of 200 reopens
	local t=$TRACE/trace
	orc "$1" 10 >/dev/null
	echo >"$t"
	echo 1 >"$TRACE/events/fuse/fuse_request_send/enable"
	orc "$1" 200 >/dev/null
	echo 0 >"$TRACE/events/fuse/fuse_request_send/enable"
	echo "$(grep -c "(FUSE_OPEN)" "$t") $(grep -c "(FUSE_READ)" "$t") $(grep -c "(FUSE_LOOKUP)" "$t") $(grep -c fuse_request_send "$t")"
}
ARMS=(proc exact before after)
for transport in $TRANSPORTS; do
	serve exact "$transport" "$WORK/cur-build/procfast" ""
	serve before "$transport" "$WORK/base-build/procfast" snapshot
	serve after "$transport" "$WORK/cur-build/procfast" snapshot
	MNT[proc]=/proc
	for round in $(seq "$ROUNDS"); do
		for i in "${!ARMS[@]}"; do
			arm=${ARMS[$(((i + round) % ${#ARMS[@]}))]}
			add "$transport.$arm" "$(orc "$arm" "$COUNT")"
		done
	done
	for arm in exact before after; do OPS[$transport.$arm]=$(traced "$arm"); done
	for arm in after before exact; do unserve "$arm"; done
done

med() { samples_median "${S[$1]}"; }
row() { # TRANSPORT ARM LABEL
	local m o r l t
	m=$(med "$1.$2")
	read -r o r l t <<<"${OPS[$1.$2]:-– – – –}"
	echo "| $1 | $3 | $(ns_us "$m") | $(ratio_of "$m" "$(med "$1.proc")") | $o | $r | $l | $t |"
}
rows() {
	local transport
	for transport in $TRANSPORTS; do
		row "$transport" proc "/proc"
		row "$transport" exact "exact path"
		row "$transport" before "\`-o snapshot\`, before"
		row "$transport" after "\`-o snapshot\`, after"
	done
}
section="<!-- reopen:begin -->
## A file closed and opened again at once, under \`-o snapshot\` (issue 24, point 3)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after. Release builds of
$BASE (before) and of this tree ($(git -C "$ROOT" rev-parse --short HEAD)) serve
\`-o norestart,uring=T,snapshot\`, and this tree \`-o norestart,uring=T\` (exact), for T in $TRANSPORTS;
the arms rotate within each of $ROUNDS rounds; medians of the rounds. open + read to the
end + close of a sleeper's \`PID/stat\` (\`readlat orc\`, the median of $COUNT a round), and
the requests of 200 of them (the \`fuse_request_send\` tracepoint; RELEASE besides).

| uring= | arm | µs | ratio to /proc | OPEN | READ | LOOKUP | all requests |
|---|---|---|---|---|---|---|---|
$(rows)

Before, an open that found the inode's snapshot place held by an open already closed
(its RELEASE not served yet) was moved to a new inode (ESTALE: the kernel looks the
name up again) and its directory took no more snapshots: the file went the exact path
(READs) from then on. After, the open waits for that RELEASE (yielding for 100 µs, then
sleeping 20 µs at a time, at most 1 ms) and stays a snapshot: one OPEN a reopen, half
the requests. What the wait keeps is the mode itself: the directory keeps taking
snapshots for the tools that open each file once (\`ps\`, \`pgrep\`, a scrape), where
before one reopen ended them; the time of a reopen moves less, since the OPEN now waits
for the worker that serves the RELEASE (over io_uring a thread of the reader's CPU).
<!-- reopen:end -->"
write_section reopen "$section"
echo "$section"
