#!/usr/bin/env bash
# bench/soak.sh — the soak of issue 6 for minutes instead of the suite's 20 s: 16 readers
# (4 as nobody) walk the whole procfast mount while a churn process forks and exits and a
# 5,000-thread process lives; the same code as tests/transport/test_soak.py (tests/lib/soak.py).
# Writes the section "soak" of bench/RESULTS.md: requests served, errors by errno and by
# class (see tests/lib/soak.py), daemon RSS and fd count idle / end of load / after, the
# listing check, and the command.
#
# Run as root: bench/soak.sh [SECONDS]          (default 300)
# Environment: PROCFAST (daemon binary, default build/procfast; built if missing),
#              READERS (default 16), THREADS (default 5000).
set -euo pipefail
[[ $EUID -eq 0 ]] || { echo "soak.sh: must run as root (mount, setuid readers)" >&2; exit 1; }
. "$(dirname "$0")/common.sh"

SECONDS_RUN=${1:-300}
READERS=${READERS:-16}
THREADS=${THREADS:-5000}
INVOCATION="$( [[ $READERS != 16 ]] && printf 'READERS=%s ' "$READERS"; [[ $THREADS != 5000 ]] && printf 'THREADS=%s ' "$THREADS"
    [[ $PROCFAST != "$ROOT/build/procfast" ]] && printf 'PROCFAST=%s ' "$PROCFAST"; true)bench/soak.sh $SECONDS_RUN"

chmod 755 "$WORK" # the unprivileged readers must reach the mount
MNT=$WORK/mnt
DAEMON=
cleanup() {
    # (mountpoint(1) fails on a dead daemon's mount: ask /proc/mounts)
    if grep -q " $MNT " /proc/mounts; then fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"; fi
    if [[ -n $DAEMON ]] && ! kill -0 "$DAEMON" 2>/dev/null; then
        wait "$DAEMON" 2>/dev/null; echo "soak.sh: the daemon exited ($?); its log:" >&2
        cat "$WORK/daemon.log" >&2
    elif [[ -n $DAEMON ]]; then
        kill "$DAEMON"; wait "$DAEMON" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ensure_built "$PROCFAST"
[[ -x $(dirname "$PROCFAST")/tests/threads ]] || { echo "soak.sh: build the test helpers ($(dirname "$PROCFAST")/tests)" >&2; exit 1; }

mkdir -p "$MNT"
# 12 root readers at once: more than a uid's share of a CPU's io_uring threads, which
# would refuse some of their requests (EINTR, fs/caller/fair.h); here one uid may use all.
"$PROCFAST" -f -o max_busy_per_uid=64 "$MNT" 2>"$WORK/daemon.log" &
DAEMON=$!
for _ in $(seq 100); do mountpoint -q "$MNT" && [[ -e $MNT/self/stat ]] && break; sleep 0.1; done
mountpoint -q "$MNT" || { echo "soak.sh: procfast did not mount:" >&2; cat "$WORK/daemon.log" >&2; exit 1; }
# The process that serves is the supervisor's child (fs/supervisor/supervisor.c).
SERVER=$(pgrep -P "$DAEMON" | head -1)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
others=$(( $(pgrep -c -x procfast || true) - 1 ))
PROCFAST_BIN=$PROCFAST /usr/bin/python3 "$ROOT/tests/lib/soak.py" run --mount "$MNT" --daemon-pid "$SERVER" \
    --seconds "$SECONDS_RUN" --readers "$READERS" --threads "$THREADS" >"$WORK/report.json"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
kill -0 "$DAEMON" 2>/dev/null || { echo "soak.sh: the daemon died; log:" >&2; cat "$WORK/daemon.log" >&2; exit 1; }
cache=$(dirname "$PROCFAST")/CMakeCache.txt
build_type=$(sed -n 's/^\(CMAKE_BUILD_TYPE\|PROCFAST_SANITIZE\):[A-Z]*=/\1=/p' "$cache" 2>/dev/null | tr '\n' ' ')

section=$(/usr/bin/python3 - "$WORK/report.json" <<EOF
import json, sys
r = json.load(open(sys.argv[1]))
ops = sum(r["ops"].values())
errs = sum(r["errors"].values())
kinds = ", ".join("%s %d" % kv for kv in sorted(r["ops"].items()))
byerr = ", ".join("%s %d" % kv for kv in sorted(r["errors"].items(), key=lambda kv: -kv[1])) or "none"
bycls = ", ".join("%s %d" % kv for kv in sorted(r["classes"].items())) or "none"
i, e, a, d = r["idle"], r["end_of_load"], r["after"], r["after_dentry_drop"]
bad = r["bad"]
print("""<!-- soak:begin -->
## soak: 16 readers over the whole tree, churn, a 5,000-thread process (issue 6)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $load_before before, $load_after after; other procfast daemons running: $others;
procfast build: $build_type.
Load (tests/lib/soak.py, the same code as tests/transport/test_soak.py): %(readers)d reader processes
(%(unpriv)d of them as uid 65534) each walking the mount in its own random order (listing,
lstat of every entry, readlink of links, a read of up to 64 KiB of regular files with
O_NONBLOCK; big directories sampled 24 entries per visit; never read: kmsg, kcore, kpage*,
mem, pagemap, write-only triggers; never entered: sys/fs/binfmt_misc) for %(secs).0f s,
while \`build/tests/forker 0\` forks and reaps continuously and \`build/tests/threads %(threads)d\` lives.
Every failed request is repeated on /proc at once and classified (tests/lib/soak.py).

- Requests served: **%(ops)d** (%(rate).0f/s): %(kinds)s.
- Failed requests: %(errs)d; by errno: %(byerr)s.
- By class: %(bycls)s. Errnos /proc would not give (class bad): **%(nbad)d**%(badlist)s.
- Reader processes that failed: %(rfail)d.
- Daemon fds other than /dev/fuse clones: idle %(ifd)d, end of load %(efd)d, after %(afd)d, after a dentry drop %(dfd)d.
- Daemon VmRSS KiB: idle %(irss)d, end of load %(erss)d, after %(arss)d; after
  \`echo 2 > /proc/sys/vm/drop_caches\` (the kernel forgets the names it caches, the
  daemon their nodes): %(drss)d. (Idle = after a 3 s warm-up walk by 4 readers; "after" =
  polled up to 5 s for RSS within 1 MiB of idle.)
- Root listing against /proc's after the load (pids missing, extra): %(listing)s.

procfast's stderr during the run ($(grep -c . "$WORK/daemon.log" || true) lines, first 5):

$(head -5 "$WORK/daemon.log" | sed 's/^/    /')
<!-- soak:end -->""" % dict(readers=r["readers"], unpriv=r["unprivileged"], secs=r["seconds"],
    threads=r["threads"], ops=ops, rate=ops / max(r["seconds"], 1), kinds=kinds, errs=errs,
    byerr=byerr, bycls=bycls, nbad=len(bad), badlist=(": " + "; ".join(bad[:10])) if bad else "",
    rfail=r["reader_failures"], ifd=i["fds"], efd=e["fds"], afd=a["fds"], irss=i["rss_kib"],
    erss=e["rss_kib"], arss=a["rss_kib"], dfd=d["fds"], drss=d["rss_kib"], listing=r["listing"]))
EOF
)
echo "$section" >&2

write_section soak "$section"
