#!/bin/bash
# What following process events costs a host that forks (issues 3 and 5): the
# fork rate with no procfast, with the host mount listening, and with its
# listener threads stopped (ptrace), which leaves the kernel's own cost of
# sending the events (they overflow the socket and are dropped); and the
# daemon's CPU time per fork. Writes the section "forkcost" of bench/RESULTS.md.
#
#   sudo bench/forkcost.sh [ROUNDS [FORKS]]   # default 7 rounds of 20000 vforks
#
# Each round runs the three arms in turn (forker FORKS --vfork: vfork, _exit,
# waitpid, as fast as it can); medians over the rounds.
set -euo pipefail
. "$(dirname "$0")/common.sh"
FORKER=${FORKER:-$ROOT/build/tests/forker}
ROUNDS=${1:-7}
FORKS=${2:-20000}
cleanup() {
	unmount_all "$WORK/mnt"
	sleep 0.3
	rm -rf "$WORK"
}
trap cleanup EXIT
ensure_built "$PROCFAST" "$FORKER"
mkdir -p "$WORK/mnt"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
table=$(/usr/bin/python3 - "$PROCFAST" "$FORKER" "$WORK/mnt" "$ROUNDS" "$FORKS" <<'PY'
import os, statistics, subprocess, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[1]), "..", "tests"))
from lib.procs import ThreadsStopped  # noqa: E402
procfast, forker, mnt, rounds, forks = sys.argv[1:4] + [int(a) for a in sys.argv[4:6]]

def rate():
    out = subprocess.run([forker, str(forks), "--vfork"], capture_output=True, text=True).stdout
    return float(out.split()[-1].rstrip("/s"))

def cpu_ms(pid):
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        f = open("/proc/%d/task/%s/stat" % (pid, t)).read().rsplit(")", 1)[1].split()
        total += int(f[11]) + int(f[12])
    return total * 1000 // os.sysconf("SC_CLK_TCK")

runs = {"none": [], "listening": [], "stopped": [], "cpu": []}
for _ in range(rounds):
    runs["none"].append(rate())
    p = subprocess.Popen([procfast, "-f", mnt], stderr=subprocess.DEVNULL)
    while not os.path.ismount(mnt):
        time.sleep(0.02)
    os.listdir(mnt)
    time.sleep(1)
    server = int(open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()[0])
    before = cpu_ms(server)
    runs["listening"].append(rate())
    runs["cpu"].append((cpu_ms(server) - before) * 1000.0 / forks)
    with ThreadsStopped(server, ["pf-events", "pf-notify"]):
        runs["stopped"].append(rate())
    subprocess.run(["umount", mnt], check=True)
    p.wait()
none = statistics.median(runs["none"])
print("| arm | forks/s (median of %d) | vs none |" % rounds)
print("|---|---|---|")
print("| no procfast | %.0f | 1.00 |" % none)
for arm, what in (("listening", "procfast mounted, listening"),
                  ("stopped", "procfast mounted, listener stopped (the kernel's cost only)")):
    m = statistics.median(runs[arm])
    print("| %s | %.0f | %.2f |" % (what, m, m / none))
print()
print("Daemon CPU per fork while listening (user + system, all threads): median %.1f us."
      % statistics.median(runs["cpu"]))
PY
)
section="<!-- forkcost:begin -->
## Fork cost: the kernel's and the listener's (issues 3 and 5)

Command: \`sudo bench/forkcost.sh $ROUNDS $FORKS\` ($(date -u +%F), $(nproc) CPUs, load before: $load_before).
\`forker $FORKS --vfork\` per arm, the three arms in turn each round.

$table
<!-- forkcost:end -->"
write_section forkcost "$section"
printf '%s\n' "$section"
