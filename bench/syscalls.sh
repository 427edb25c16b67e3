#!/usr/bin/env bash
# bench/syscalls.sh — the system calls procfast makes per request (issue 11, point 3: "for
# a caller in the daemon's own context, at most one system call beyond the source
# operation itself and the transport's"). A Release build serves a mount with
# `-o norestart` (one server process); `strace -f -c` counts the calls of all its
# threads while one fixed workload runs, for each of:
#   - root (the daemon's own context, every capability), pread of PID/stat;
#   - root without capabilities (capsh --drop=all), the same;
#   - nobody, the same;
#   - root, open + read to the end + close of PID/stat (the names cached: no LOOKUP);
# and divides each call's count by the replies sent (writev on /dev/fuse: one per
# request but FORGET). Calls of the event listener (recvmmsg, poll, pidfd_open for other
# processes' forks) are those of the machine's churn, not of the requests: they are
# listed apart. Writes the section "syscalls" of bench/RESULTS.md.
#
# Run as root: bench/syscalls.sh      (COUNT=5000 reads per workload by default)
set -euo pipefail
. "$(dirname "$0")/common.sh"

COUNT=${COUNT:-5000}
INVOCATION="$([[ $COUNT != 5000 ]] && printf 'COUNT=%s ' "$COUNT"; true)bench/syscalls.sh"
[[ $EUID -eq 0 ]] || { echo "syscalls.sh: must run as root" >&2; exit 1; }
for tool in strace capsh setpriv; do
	command -v "$tool" >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q strace libcap2-bin util-linux >/dev/null; break; }
done

MNT=$WORK/mnt
cleanup() {
	unmount_all "$MNT"
	[[ -n ${SLEEPER:-} ]] && kill "$SLEEPER" 2>/dev/null
	[[ -n ${DAEMON:-} ]] && { kill "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; }
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cmake -S "$ROOT" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/build" -j2 --target procfast >/dev/null
cc -O2 -o "$WORK/readlat" "$ROOT/bench/readlat.c"
chmod 755 "$WORK" "$WORK/readlat"
mkdir -p "$MNT"
"$WORK/build/procfast" -f -o norestart "$MNT" 2>"$WORK/daemon.log" &
DAEMON=$!
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.05; done
mountpoint -q "$MNT" || { echo "syscalls.sh: not mounted" >&2; exit 1; }
sleep 600 &
SLEEPER=$!
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# One workload under strace: prints "call count" lines of the daemon's calls.
count_calls() { # NAME CMD...
	local name=$1 out=$WORK/$1.strace
	shift
	"$@" >/dev/null # warm: names and attributes cached, threads started
	strace -f -c -U name,calls -o "$out" -p "$DAEMON" &
	local tracer=$!
	sleep 1
	"$@" >/dev/null
	sleep 0.5
	kill -INT "$tracer"
	wait "$tracer" 2>/dev/null || true
	awk 'NF == 2 && $1 != "total" && $2 ~ /^[0-9]+$/ { print $1, $2 }' "$out" >"$WORK/$name.calls"
}

STAT=$MNT/$SLEEPER/stat
count_calls root "$WORK/readlat" pread "$STAT" "$COUNT"
count_calls nocaps capsh --drop=all -- -c "exec $WORK/readlat pread $STAT $COUNT"
count_calls nobody setpriv --reuid=65534 --regid=65534 --clear-groups "$WORK/readlat" pread "$STAT" "$COUNT"
count_calls orc "$WORK/readlat" orc "$STAT" "$((COUNT / 5))"

TRANSPORT="read writev"
LISTENER="recvmmsg poll pidfd_open futex"
row() { # NAME LABEL SOURCE-CALLS
	awk -v label="$2" -v source="$3" -v transport="$TRANSPORT" -v listener="$LISTENER" '
	    BEGIN { split(source, s); for (i in s) src[s[i]] = 1
	            split(transport, t); for (i in t) tr[t[i]] = 1
	            split(listener, l); for (i in l) li[l[i]] = 1 }
	    { n[$1] = $2 }
	    END {
	        req = n["writev"]
	        if (!req) { print "| " label " | (no replies counted) | | | |"; exit }
	        extra = 0; ex = ""; so = ""; ls = ""
	        for (c in n) {
	            per = n[c] / req
	            if (c in tr) continue
	            if (c in li) { if (per >= 0.01) ls = ls sprintf("%s %.2f, ", c, per); continue }
	            if (c in src) { so = so sprintf("%s %.2f, ", c, per); continue }
	            if (per < 0.01) continue
	            extra += per; ex = ex sprintf("%s %.2f, ", c, per)
	        }
	        sub(/, $/, "", ex); sub(/, $/, "", so); sub(/, $/, "", ls)
	        printf "| %s | %d | %s | **%.2f**: %s | %s |\n", label, req, so, extra, ex ? ex : "none", ls ? ls : "none"
	    }' "$WORK/$1.calls"
}

section="<!-- syscalls:begin -->
## System calls per request (issue 11, point 3)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after.
A Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)) serves \`-o norestart\`; \`strace -f -c\`
counts the calls of every thread of the server while one workload runs (after an untimed
run of the same: names and attributes cached, threads started). Per request = count ÷
replies (writev on /dev/fuse). Transport (read and writev on /dev/fuse) left out; the
source operation is its own column; \"beyond\" is everything else a request made; the
event listener's calls come from the machine's other processes, not from the requests.

| caller, workload | replies | source operation per request | beyond the source and the transport, per request | event listener |
|---|---|---|---|---|
$(row root "root (the daemon's context), pread of PID/stat ×$COUNT" pread64)
$(row nocaps "root without capabilities (capsh --drop=all), pread ×$COUNT" pread64)
$(row nobody "nobody, pread ×$COUNT" pread64)
$(row orc "root, open + read + close of PID/stat ×$((COUNT / 5))" "openat pread64 read close")

A caller with capabilities costs \`capget\` (its capabilities, read at every request: they
change without an event) and a \`readlinkat\` of its \`/proc/TID/ns/user\` (capabilities count
only in the daemon's user namespace, and \`unshare(CLONE_NEWUSER)\` gives a full set with
no event; the link's text names the namespace, 0.8 µs here against 2.4 for a stat that
follows the link). A caller without them costs \`capget\` and the switch to its credentials and
back (\`setgroups\`, \`setfsgid\`, \`setfsuid\`, \`capset\`, twice each).
<!-- syscalls:end -->"
write_section syscalls "$section"
echo "$section"
