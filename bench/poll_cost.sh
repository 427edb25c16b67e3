#!/usr/bin/env bash
# bench/poll_cost.sh — what answering POLL (fs/request/poll.c) costs a Go agent: Go adds
# every file it opens to its epoll, and the kernel asks the server at that epoll_ctl(ADD),
# so each file node_exporter opens costs one more round trip; -o nopoll answers ENOSYS
# once, after which the kernel asks no more.
#
# Arms: /proc, the mount (POLL answered) and the mount with -o nopoll, over io_uring and
# /dev/fuse; ROUNDS rounds, the arms' order alternating. Each: node_exporter
# (--collector.processes) with the arm as its procfs, one scrape to warm, then SCRAPES
# scrapes timed (curl's time_total), and one more with the fuse_request_send tracepoint on,
# which counts the requests a scrape makes. Medians. Writes the section "poll_cost" of
# bench/RESULTS.md.
#
# Run as root: bench/poll_cost.sh      (ROUNDS=5 SCRAPES=5 PROCFAST=)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings poll_cost.sh ROUNDS=5 SCRAPES=5 PROCFAST="$ROOT/build/procfast"
servers_setup poll_cost prometheus-node-exporter curl
ensure_built "$PROCFAST"
# shellcheck disable=SC2034 # servers_cleanup stops what runs it
PROCFAST_BIN=$PROCFAST
TRACE=/sys/kernel/tracing
[[ -d $TRACE/events/fuse ]] || mount -t tracefs none "$TRACE"
allow_uring
PORT=19171

scrape_s() { curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT/metrics"; }

traced_scrape() { # the requests of one scrape by opcode: "TOTAL POLL"
	echo >"$TRACE/trace"
	echo 1 >"$TRACE/events/fuse/fuse_request_send/enable"
	scrape_s >/dev/null
	echo 0 >"$TRACE/events/fuse/fuse_request_send/enable"
	echo "$(grep -c "fuse_request_send" "$TRACE/trace") $(grep -c "(FUSE_POLL)" "$TRACE/trace")"
}

round() { # ARM URING: "ARM URING MEDIAN_MS TOTAL POLL"
	local src=/proc mnt=$WORK/mnt-$1 pid exporter times=() ops="- -"
	if [[ $1 != proc ]]; then
		serve_procfast "$PROCFAST" "$mnt" "$WORK/$1.log" "uring=$2,norestart${3:+,$3}"
		pid=$SERVED
		src=$mnt
	fi
	prometheus-node-exporter --path.procfs="$src" --collector.processes \
		--web.listen-address="127.0.0.1:$PORT" >/dev/null 2>&1 &
	exporter=$!
	for _ in $(seq 100); do scrape_s >/dev/null 2>&1 && break; sleep 0.05; done
	for _ in $(seq "$SCRAPES"); do times+=("$(scrape_s)"); done
	[[ $1 != proc ]] && ops=$(traced_scrape)
	kill "$exporter"
	wait "$exporter" 2>/dev/null || true
	if [[ $1 != proc ]]; then
		umount "$mnt" || umount -l "$mnt"
		stop_server "$pid"
	fi
	echo "$1 $2 $(samples_median "$(printf '%s\n' "${times[@]}" | awk '{printf "%d ", $1 * 1e6}')") $ops"
}

declare -A OPTION=([proc]="" [poll]="" [nopoll]=nopoll)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
	for uring in on off; do
		arms=(proc poll nopoll)
		((r % 2)) || arms=(nopoll poll proc)
		for arm in "${arms[@]}"; do
			echo "poll_cost.sh: round $r, $arm, uring=$uring" >&2
			round "$arm" "$uring" "${OPTION[$arm]}" >>"$WORK/rounds"
		done
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

rows=$(/usr/bin/python3 - "$WORK/rounds" <<'PY'
import statistics, sys
rounds = [l.split() for l in open(sys.argv[1]) if l.strip()]
def med(arm, uring, i):
    v = [float(r[i]) for r in rounds if r[0] == arm and r[1] == uring and r[i] != "-"]
    return statistics.median(v) if v else None
for uring, name in (("on", "io_uring"), ("off", "/dev/fuse")):
    proc = med("proc", uring, 2)
    for arm in ("proc", "poll", "nopoll"):
        us, total, poll = med(arm, uring, 2), med(arm, uring, 3), med(arm, uring, 4)
        print("| %s | %s | %.1f | %.2f | %s | %s |" % (
            name, {"proc": "/proc", "poll": "mount", "nopoll": "mount -o nopoll"}[arm],
            us / 1000, us / proc, "%d" % total if total is not None else "–",
            "%d" % poll if poll is not None else "–"))
PY
)

section="<!-- poll_cost:begin -->
## What answering POLL costs a Go agent

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER,
tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- fs 2>/dev/null || echo " with changes").
node_exporter (\`--collector.processes\`) with each arm as its procfs; $ROUNDS rounds a
transport, the arms alternating; each round $SCRAPES scrapes timed after one to warm, and
one more counted with the \`fuse_request_send\` tracepoint. Medians.

| transport | arm | scrape ms | ratio to /proc | requests a scrape | of them POLL |
|---|---|---|---|---|---|
$rows

Go adds every file it opens to its epoll; a FUSE file accepts that, and the kernel asks
the server at the \`epoll_ctl(ADD)\`: one POLL for each file node_exporter opens, where
a server without POLL is asked once (ENOSYS) and never again. \`-o nopoll\` gives that
back, and with it every file as ready at once (no waiting on \`kmsg\` or \`mountinfo\`).
<!-- poll_cost:end -->"
write_section poll_cost "$section"
