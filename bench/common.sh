# Sourced by the bench scripts, after `set -euo pipefail`: what each starts with.
#
#   ROOT        the source tree
#   PROCFAST    the binary under test: $PROCFAST, else build/procfast
#   RESULTS     bench/RESULTS.md, rewritten one section at a time (write_section,
#               from results.sh)
#   WORK        a scratch directory of this run, under /tmp
#   ensure_built FILE...     builds build/ (RelWithDebInfo) unless every FILE runs
#   unmount_all PATH...      unmounts those PATHs that are mount points (lazily if busy)
#   pidns_start, pidns_stop  a pid namespace whose init sleeps, for pidns= views:
#                            $PIDNS_INIT is that init's pid outside it
. "$(dirname "${BASH_SOURCE[0]}")/results.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROCFAST=${PROCFAST:-$ROOT/build/procfast}
RESULTS=$ROOT/bench/RESULTS.md
WORK=$(mktemp -d /tmp/procfast-bench.XXXXXX)

ensure_built() {
	local f
	for f; do
		[[ -x $f ]] && continue
		(cd "$ROOT" && cmake -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
			cmake --build build -j2 >/dev/null)
		return
	done
}

unmount_all() {
	local m
	for m; do
		mountpoint -q "$m" 2>/dev/null && { umount "$m" || umount -l "$m"; }
	done
	return 0
}

pidns_start() {
	unshare --pid --fork --mount-proc sleep 3600 &
	PIDNS_SLEEPER=$!
	sleep 0.5
	PIDNS_INIT=$(pgrep -P "$PIDNS_SLEEPER" | head -1)
}

pidns_stop() {
	[[ -n ${PIDNS_SLEEPER:-} ]] || return 0
	kill -9 $(pgrep -P "$PIDNS_SLEEPER") "$PIDNS_SLEEPER" 2>/dev/null || true
	wait "$PIDNS_SLEEPER" 2>/dev/null || true
}
