#!/bin/bash
# The supervisor (issue 5): how long a mount answers nothing after its server is
# killed with SIGKILL, and what the supervisor costs in memory. Writes the section
# "restart" of bench/RESULTS.md.
#
#   sudo bench/restart.sh [KILLS]      # default 10 kills, 2.6 s apart (under the
#                                      # supervisor's limit of 5 deaths in 10 s)
#
# Each kill: read MOUNT/self/stat once, SIGKILL the server, wait until it is reaped,
# then read MOUNT/self/stat in a 0.5 ms loop until it succeeds; the time from the
# kill to that success is one sample. Also: VmRSS of the supervisor and of the
# server, idle, and of a pidns= view's pair.
set -euo pipefail
. "$(dirname "$0")/common.sh"
KILLS=${1:-10}
cleanup() {
	unmount_all "$WORK"/mnt "$WORK"/view
	pidns_stop
	sleep 0.5
	rm -rf "$WORK"
}
trap cleanup EXIT
ensure_built "$PROCFAST"
mkdir -p "$WORK/mnt" "$WORK/view"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
"$PROCFAST" "$WORK/mnt"
pidns_start
"$PROCFAST" -o "pidns=/proc/$PIDNS_INIT/ns/pid" "$WORK/view"
section=$(/usr/bin/python3 - "$WORK/mnt" "$WORK/view" "$KILLS" "$PROCFAST" "$load_before" <<'PY'
import os, signal, statistics, subprocess, sys, time
mnt, view, kills, binary, load_before = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]

def pair(path):
    """(supervisor, server) of the mount at path."""
    out = subprocess.run(["pgrep", "-f", "%s( -o [^ ]+)? %s$" % (binary, path)],
                         capture_output=True, text=True).stdout.split()
    pids = [int(p) for p in out]
    ppid = lambda p: int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1])
    sup = [p for p in pids if ppid(p) not in pids][0]
    return sup, [p for p in pids if p != sup][0]

def rss(pid):
    for l in open("/proc/%d/status" % pid):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])

def served():
    while True:
        try:
            with open(os.path.join(mnt, "self", "stat")) as f:
                f.read()
            return
        except OSError:
            time.sleep(0.0005)

os.listdir(view)
sup, srv = pair(mnt)
vsup, vsrv = pair(view)
mem = (rss(sup), rss(srv), rss(vsup), rss(vsrv))
lat = []
for _ in range(kills):
    sup, srv = pair(mnt)
    served()
    t0 = time.monotonic()
    os.kill(srv, signal.SIGKILL)
    while os.path.exists("/proc/%d" % srv):
        time.sleep(0.0005)
    served()
    lat.append((time.monotonic() - t0) * 1000)
    time.sleep(2.6)
lat.sort()
print("""<!-- restart:begin -->
## Restarts (issue 5): a killed server, and the supervisor's cost

Command: `sudo bench/restart.sh %d` (%s, kernel %s, %d CPUs; load average %s before,
%s after).

| | median | min | max |
|---|---|---|---|
| SIGKILL of the server to the next answered read (%d kills) | %.1f ms | %.1f ms | %.1f ms |

Requests made in that time wait in the kernel's queue and are answered by the new
server (tests/lifecycle/test_restart.py); there is no `/proc` counterpart to compare with.

| process (VmRSS, idle) | host mount | `pidns=` view |
|---|---|---|
| supervisor | %d KiB | %d KiB |
| server | %d KiB | %d KiB |
<!-- restart:end -->""" % (kills, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
       os.uname().release, os.cpu_count(), load_before, " ".join(open("/proc/loadavg").read().split()[:3]),
       kills, statistics.median(lat), lat[0], lat[-1], mem[0], mem[2], mem[1], mem[3]))
PY
)
echo "$section" >&2
write_section restart "$section"
