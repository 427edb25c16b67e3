#!/usr/bin/env bash
# bench/syscalls.sh — the system calls procfast makes per request (issue 11, point 3: "for
# a caller in the daemon's own context, at most one system call beyond the source
# operation itself and the transport's"). A Release build serves a mount with
# `-o norestart` (one server process); `strace -f` traces all its threads while one
# fixed workload runs, for each of:
#   - root (the daemon's own context, every capability), pread of PID/stat;
#   - root without capabilities (capsh --drop=all), the same;
#   - nobody, the same;
#   - root, open + read to the end + close of PID/stat (the names cached: no LOOKUP);
# and divides the calls of the threads that reply (writev on /dev/fuse: one per request
# but FORGET) by their replies. The other threads' calls (the event listener's recvmmsg,
# poll and pidfd_open for other processes' forks, the notifier's, liburcu's) follow the
# machine's churn, not the requests: they are
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
"$WORK/build/procfast" -f -o norestart,uring=off "$MNT" 2>"$WORK/daemon.log" &
DAEMON=$!
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.05; done
mountpoint -q "$MNT" || { echo "syscalls.sh: not mounted" >&2; exit 1; }
sleep 600 &
SLEEPER=$!
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# One workload under strace: writes "class call count" lines of the daemon's calls,
# class "request" for the threads that serve requests (workers: they reply with
# writev) and "other" for the rest (the event listener pf-events, the notifier
# pf-notify, liburcu's and the periodic threads), told apart by thread id.
count_calls() { # NAME CMD...
	local name=$1 out=$WORK/$1.strace
	shift
	"$@" >/dev/null # warm: names and attributes cached, threads started
	strace -f -qq -o "$out" -p "$(ls /proc/"$DAEMON"/task | paste -sd,)" &
	local tracer=$!
	sleep 1
	"$@" >/dev/null
	sleep 0.5
	local background
	background=$(grep -l '^pf-' /proc/"$DAEMON"/task/*/comm 2>/dev/null | cut -d/ -f5 | paste -sd' ')
	kill -INT "$tracer"
	wait "$tracer" 2>/dev/null || true
	awk -v background="$background" '
	    BEGIN { split(background, b); for (i in b) bg[b[i]] = 1 }
	    $2 ~ /^<\.\.\./ { next }            # the end of a call counted at its start
	    match($2, /^[a-z_0-9]+\(/) {
	        call = substr($2, 1, RLENGTH - 1)
	        n[$1, call]++
	        if (call == "writev" && !($1 in bg)) worker[$1] = 1
	    }
	    END { for (k in n) { split(k, f, SUBSEP)
	              print (f[1] in worker ? "request" : "other"), f[2], n[k] } }' "$out" >"$WORK/$name.calls"
}

STAT=$MNT/$SLEEPER/stat
count_calls root "$WORK/readlat" pread "$STAT" "$COUNT"
count_calls nocaps capsh --drop=all -- -c "exec $WORK/readlat pread $STAT $COUNT"
count_calls nobody setpriv --reuid=65534 --regid=65534 --clear-groups "$WORK/readlat" pread "$STAT" "$COUNT"
count_calls orc "$WORK/readlat" orc "$STAT" "$((COUNT / 5))"

TRANSPORT="read writev"
row() { # NAME LABEL SOURCE-CALLS
	awk -v label="$2" -v source="$3" -v transport="$TRANSPORT" '
	    BEGIN { split(source, s); for (i in s) src[s[i]] = 1
	            split(transport, t); for (i in t) tr[t[i]] = 1 }
	    $1 == "request" { n[$2] += $3 }
	    $1 == "other" { o[$2] += $3 }
	    END {
	        req = n["writev"]
	        if (!req) { print "| " label " | (no replies counted) | | | |"; exit }
	        extra = 0; ex = ""; so = ""; ls = ""
	        for (c in n) {
	            per = n[c] / req
	            if (c in tr) continue
	            if (c in src) { so = so sprintf("%s %.2f, ", c, per); continue }
	            if (per < 0.01) continue
	            extra += per; ex = ex sprintf("%s %.2f, ", c, per)
	        }
	        for (c in o) if (o[c] / req >= 0.01) ls = ls sprintf("%s %.2f, ", c, o[c] / req)
	        sub(/, $/, "", ex); sub(/, $/, "", so); sub(/, $/, "", ls)
	        printf "| %s | %d | %s | **%.2f**: %s | %s |\n", label, req, so, extra, ex ? ex : "none", ls ? ls : "none"
	    }' "$WORK/$1.calls"
}

section="<!-- syscalls:begin -->
## System calls per request (issue 11, point 3)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after.
A Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)) serves \`-o norestart,uring=off\` (over io_uring the transport is one \`io_uring_enter\` a request, which answers one and fetches the next; the rest is the same); \`strace -f\`
traces every thread of the server while one workload runs (after an untimed run of the
same: names and attributes cached, threads started). The threads that reply (writev on
/dev/fuse) serve the requests: per request = their calls ÷ their replies. Transport
(read and writev on /dev/fuse) left out; the source operation is its own column;
\"beyond\" is everything else the serving threads made. The other threads (the event
listener, the notifier, liburcu's) are counted apart, per request too: they follow the
machine's other processes, not the requests.

| caller, workload | replies | source operation per request | beyond the source and the transport, per request | other threads |
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
back (\`setfsgid\`, \`setfsuid\`, \`capset\`, twice each; \`setgroups\` twice more only for
a caller whose supplementary groups add something to its fsgid: these readers have none).
An OPEN also asks the process's generation (\`pidfd_open\`, \`fstat\`, \`poll\`, \`close\`:
one pidfd tells the task's identity and whether it exited) and the caller's time namespace
(a \`readlinkat\`: \`PID/stat\`'s start time is the reader's).
<!-- syscalls:end -->"
write_section syscalls "$section"
echo "$section"
