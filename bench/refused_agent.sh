#!/usr/bin/env bash
# bench/refused_agent.sh — a Go agent refused past its uid's share of the daemon's threads
# (fs/caller/fair.h): node_exporter with the mount as its procfs, on one CPU, as root, on a
# mount with max_busy_per_uid=1. One scrape unheld; one made while a read of kmsg of
# root's, on the same CPU, waits in the daemon for HOLD seconds (every further request of
# root's there is refused meanwhile), then ends (bench/refused_agent.py).
#
# Arms: this tree's binary (PROCFAST, else build/procfast) and a Release build of the git
# revision BASE (641afe4 by default: refusals were EAGAIN), over io_uring and /dev/fuse,
# ROUNDS rounds, the arms' order alternating. Per arm: the unheld scrapes that ended; the
# held ones that ended during the hold (their refused requests failed), that never ended
# (SCRAPE_WAIT_S), and that ended after it (median seconds after the read ended); the
# collectors that failed held and not unheld; the daemon's and the exporter's CPU seconds per second of the
# hold (medians). Writes the section "refused_agent" of bench/RESULTS.md.
#
# Run as root: bench/refused_agent.sh      (ROUNDS=5 HOLD=2 BASE=641afe4 PROCFAST=)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings refused_agent.sh ROUNDS=5 HOLD=2 BASE=641afe4 PROCFAST="$ROOT/build/procfast"
servers_setup refused_agent prometheus-node-exporter iproute2 util-linux

cleanup() {
	[[ -n ${BASE_TREE:-} ]] && git -C "$ROOT" worktree remove --force "$BASE_TREE" 2>/dev/null
	return 0
}

ensure_built "$PROCFAST"
BASE_TREE=$WORK/base-src
git -C "$ROOT" worktree add -q --detach "$BASE_TREE" "$BASE"
release "$BASE_TREE" "$WORK/base-build"
declare -A BIN=([before]=$WORK/base-build/procfast [this]=$PROCFAST)
CPU=$(cut -d- -f1 /sys/devices/system/cpu/online | cut -d, -f1)
allow_uring

server_of() { # BIN: the process of BIN with the most threads (the one that serves)
	local p best="" most=0 n
	for p in $(procfast_pids "$1"); do
		n=$(find "/proc/$p/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
		((n > most)) && { most=$n; best=$p; }
	done
	echo "$best"
}

round() { # ARM URING: one JSON line
	local bin=${BIN[$1]} mnt=$WORK/mnt-$1 pid
	# shellcheck disable=SC2034 # servers_cleanup stops what runs it
	PROCFAST_BIN=$bin
	serve_procfast "$bin" "$mnt" "$WORK/$1-$2.log" "uring=$2,norestart,max_busy_per_uid=1"
	pid=$SERVED
	unshare -n /usr/bin/python3 "$ROOT/bench/refused_agent.py" "$mnt" "$(server_of "$bin")" "$CPU" "$HOLD" |
		sed "s/^{/{\"arm\": \"$1\", \"uring\": \"$2\", /"
	umount "$mnt" || umount -l "$mnt"
	stop_server "$pid"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for r in $(seq "$ROUNDS"); do
	for uring in on off; do
		arms=(before this)
		((r % 2)) || arms=(this before)
		for arm in "${arms[@]}"; do
			echo "refused_agent.sh: round $r, $arm, uring=$uring" >&2
			round "$arm" "$uring" >>"$WORK/rounds.json"
		done
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

rows=$(/usr/bin/python3 - "$WORK/rounds.json" <<'PY'
import json, statistics, sys
rounds = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(v):
    return "%.2f" % statistics.median(v) if v else "–"
for uring, name in (("on", "io_uring"), ("off", "/dev/fuse")):
    for arm in ("before", "this"):
        rs = [r for r in rounds if r["arm"] == arm and r["uring"] == uring]
        held = [r for r in rs if r["hold_kept"]]
        # beyond those that fail unheld (read /sys, or hardware this host lacks)
        failed = sorted({c for r in held if r["unheld"]["ok"]
                         for c in set(r["held"].get("failed", [])) - set(r["unheld"]["failed"])})
        print("| %s | %s | %d of %d | %d | %d | %d (%s s) | %s | %s | %s |" % (
            name, arm, sum(r["unheld"]["ok"] for r in rs), len(rs),
            sum(r["ended_in_hold"] for r in held),
            sum(not r["held"]["ok"] for r in held),
            sum(r["after_release_s"] is not None for r in held),
            med([r["after_release_s"] for r in held if r["after_release_s"] is not None]),
            ", ".join(failed) or "none",
            med([r["daemon_cpu"] for r in held]), med([r["exporter_cpu"] for r in held])))
PY
)

section="<!-- refused_agent:begin -->
## A Go agent refused past its share of threads (issue 21's shares; found under issue 24)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER,
tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- fs 2>/dev/null || echo " with changes"); before: a Release build of $(git -C "$ROOT" rev-parse --short "$BASE").
node_exporter (\`--collector.processes\`) on CPU $CPU, as root, with the mount as its procfs,
\`-o max_busy_per_uid=1\`; $ROUNDS rounds a transport, the arms alternating. Each round: one
scrape unheld, then one made while a read of \`kmsg\` of root's on CPU $CPU waits in the
daemon for $HOLD s (every further request of root's there is refused), then ends. Rounds
where a kernel message ended the read early are left out of the held columns.

| transport | arm | unheld scrapes that ended | held: ended during the hold | held: never ended (15 s) | held: ended after the read (median s after) | collectors failed held, not unheld | daemon CPU s/s during the hold | exporter CPU s/s during the hold |
|---|---|---|---|---|---|---|---|---|
$rows

Before, a refused request got \`EAGAIN\`: a Go read that ends so waits for the FUSE file to
poll ready, which it never does (the scrape never ends), or the collector fails; here
now, \`EINTR\`, which Go makes again: the scrape waits, spinning, and ends once the share
frees. The spinning costs the CPU columns: a uid that holds its share for ever (its own
reads of \`kmsg\`) and retries keeps a CPU busy, as a uid that floods the mount with
requests would.
<!-- refused_agent:end -->"
write_section refused_agent "$section"
