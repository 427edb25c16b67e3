#!/usr/bin/env bash
# bench/upgrades.sh — requests made while SIGHUP upgrades the daemon: what readers in a
# tight loop lose, and how long a mount waits for its next server, before and after the
# own mount's ring buffers went into a memfd the supervisor hands on and stopping ring
# threads began to park (fs/transport/uring.c, uring_slots.h).
#
# Release builds of BASE (before) and of this tree (after), each `BIN -f -o uring=T MNT`
# (a supervisor: an upgrade executes BIN again) for T in TRANSPORTS (off: /dev/fuse, on:
# io_uring); per round the arms' order rotates. An arm: four readers open, read and
# close a sleeper's PID/stat without a pause while UPGRADES upgrades follow one another
# (each waits for the log's "serving again" of the one before); then the readers are
# told to stop and given 10 s: one still in a read by then never got its answer (its
# connection is aborted, through a fusectl mounted for it). Per upgrade: the time from
# SIGHUP to the next server's "serving again". Sums over ROUNDS rounds, and the median
# upgrade. Writes the section "upgrades" of bench/RESULTS.md.
#
# Run as root: bench/upgrades.sh      (ROUNDS=5 UPGRADES=5 BASE=8191755 TRANSPORTS="off on")
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings upgrades.sh ROUNDS=5 UPGRADES=5 BASE=8191755 "TRANSPORTS=off on"
servers_setup upgrades procps util-linux
allow_uring
release_pair "$BASE"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
sleep 3600 &
SLEEPER=$!

arm() { # BIN TRANSPORT: one JSON line
	/usr/bin/python3 "$ROOT/bench/upgrade_arm.py" "$1" "$2" "$WORK" "$SLEEPER" "$UPGRADES"
}
ARMS=(before after)
: >"$WORK/arms.jsonl"
for round in $(seq "$ROUNDS"); do
	for transport in $TRANSPORTS; do
		for i in 0 1; do
			a=${ARMS[$(((i + round) % 2))]}
			bin=$WORK/base-build/procfast
			[[ $a == after ]] && bin=$WORK/cur-build/procfast
			echo "{\"arm\": \"$a\", \"uring\": \"$transport\", \"got\": $(arm "$bin" "$transport")}" >>"$WORK/arms.jsonl"
		done
	done
done

rows=$(/usr/bin/python3 - "$WORK/arms.jsonl" "$TRANSPORTS" <<'PY'
import json, statistics, sys
arms = [json.loads(l) for l in open(sys.argv[1])]
for t in sys.argv[2].split():
    for a in ("before", "after"):
        got = [x["got"] for x in arms if x["arm"] == a and x["uring"] == t]
        errors = {}
        for g in got:
            for k, v in g["errors"].items():
                errors[k] = errors.get(k, 0) + v
        ups = [s for g in got for s in g["upgrade_ms"]]
        err = ", ".join("%d `%s`" % (v, k) for k, v in sorted(errors.items())) or "0"
        print("| %s | %s | %d | %s | %s | %d | %.0f (%.0f) |" % (
            "/dev/fuse" if t == "off" else "io_uring", a, len(ups),
            "{:,}".format(sum(g["reads"] for g in got)), err,
            sum(g["unanswered"] for g in got), statistics.median(ups), max(ups)))
PY
)
section="<!-- upgrades:begin -->
## Requests across upgrades (\`SIGHUP\`), before and after the parked ring threads

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after. Release builds of
$BASE (before) and of this tree ($(git -C "$ROOT" rev-parse --short HEAD), after), each
\`BIN -f -o uring=T MNT\`; per arm four readers open, read and close a sleeper's
\`PID/stat\` in a tight loop through $UPGRADES upgrades, one after another; $ROUNDS rounds,
the arms' order rotating. \"unanswered\": readers still in a read 10 s after they were told
to stop (their connection then aborted: the \`ECONNABORTED\` errors are those reads). Upgrade: \`SIGHUP\` to the next server's
\"serving again\", median (max) over every upgrade.

| transport | build | upgrades | reads | errors | unanswered | upgrade ms |
|---|---|---|---|---|---|---|
$rows

Before, over io_uring, the kernel handed requests to a stopping server's ring entries
until the rings were closed: those handed once an entry's thread was gone ended
\`ECANCELED\`, and those handed to a live thread in its last ms were written into ring
buffers that the supervisor's own mount kept in anonymous memory, lost at the upgrade's
\`exec\`: such a reader waited until the connection was aborted. After, a stopping ring
thread stays until its entry holds a request (a kick's from the entry's CPU, if none
comes), which the next server answers from the buffers the supervisor handed on; what
that costs an upgrade is the column's difference.
<!-- upgrades:end -->"
write_section upgrades "$section"
echo "$section"
