#!/bin/bash
# DaemonSet rollouts under reading pods (issue 22, points 6 and 7): runs
# tests/containers/test_rollout.py with N rollouts (odd ones to the second binary, even ones
# rollbacks to the first) and prints what it measured. Prints only: the figures go to
# bench/RESULTS.md by hand.
#
#   sudo bench/rollout.sh [N]            # default 20 rollouts
#   OTHER=/path/to/procfast bench/rollout.sh   # the second binary (another version);
#                                        # default: a copy of $PROCFAST
#
# Per consumer: reads that succeeded, errors, and the errors of each kind (path,
# operation, errno) with the rollouts they began and ended in. Per rollout: the time
# from starting the new node container to its daemon's registration as successor
# (podman run, readiness, the old daemon's log), from the old container's SIGTERM to
# its exit (podman kill, podman wait: the hand-over), and the slowest single read any
# consumer began in the seconds from that SIGTERM to the next (what a reader waited).
# The test's own verdict (it requires zero errors) is printed at the end; the script
# fails with it.
set -euo pipefail
. "$(dirname "$0")/common.sh"
N=${1:-20}
trap 'rm -rf "$WORK"' EXIT
ensure_built "$PROCFAST"

rc=0
PROCFAST_ROLLOUTS=$N PROCFAST_ROLLOUT_REPORT=$WORK/report.json PROCFAST_ROLLOUT_OTHER=${OTHER:-} \
	PROCFAST_BIN=$PROCFAST PROCFAST_HELPERS=$(dirname "$PROCFAST")/tests \
	/usr/bin/python3 -m pytest -q -p no:cacheprovider "$ROOT/tests/containers/test_rollout.py" \
	>"$WORK/pytest.out" 2>&1 || rc=$?
[[ -s $WORK/report.json ]] || { cat "$WORK/pytest.out"; echo "rollout.sh: no figures" >&2; exit 1; }

/usr/bin/python3 - "$WORK/report.json" "$PROCFAST" "${OTHER:-a copy of it}" <<'PY'
import json, statistics, sys
report, first, other = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
rollouts, consumers = report["rollouts"], report["consumers"]
times = [f["sigterm"] for f in rollouts] + [float("inf")]

def when(t):
    return max([f["rollout"] for f in rollouts if f["sigterm"] <= t], default=0)

def slowest(i):
    """The slowest read any consumer began from rollout i's SIGTERM to the next's."""
    return max((s for c in consumers.values() for sec, s in c["slowest"].items()
               if times[i] - 1 < int(sec) < times[i + 1]), default=0)

print("%d rollouts in %.0f s: %s <-> %s (even: rollbacks)" %
      (len(rollouts), report["seconds"], first, other))
for name, c in consumers.items():
    print("%-6s %7d reads ok, %d errors" % (name, c["ok"], c["errors"]))
    for kind, (n, t0, t1) in sorted(c["kinds"].items()):
        print("         %s: %d (rollouts %d to %d)" % (kind, n, when(t0), when(t1)))
print("rollout  back  register_s  handover_s  slowest_read_s")
for i, f in enumerate(rollouts):
    print("%7d  %4s  %10.2f  %10.2f  %14.3f" % (f["rollout"], "yes" if f["rollback"] else "",
                                               f["register_s"], f["handover_s"], slowest(i)))
for key in ("register_s", "handover_s"):
    v = [f[key] for f in rollouts]
    print("%s: median %.2f, max %.2f" % (key, statistics.median(v), max(v)))
v = [slowest(i) for i in range(len(rollouts))]
print("slowest_read_s: median %.3f, max %.3f" % (statistics.median(v), max(v)))
PY
echo "test: $(tail -1 "$WORK/pytest.out")"
exit "$rc"
