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
#   release_pair BASE        Release builds of BASE ($WORK/base-build, from the
#                            worktree $WORK/base-src) and of this tree
#                            ($WORK/cur-build), and bench/readlat.c ($WORK/readlat)
#   release_pair_remove      removes that worktree (for the cleanup trap)
#   start_pair CALLER URING BASE  release_pair BASE, LOAD_BEFORE, and both builds
#                            mounted (-o norestart,uring=URING): the caller's
#                            associative arrays MNT and DAEMON, by arm before/after
#   stop_pair                unmounts and stops them, and release_pair_remove
#   samples_median "N N ..." the median of space-separated samples
#   ns_us N, ratio_of A B    N ns in µs (1 decimal); A / B (2 decimals)
#   as PERSONA CMD...        CMD as root, nocaps (root without capabilities), nobody,
#                            or userns (the root of a user namespace of its own)
#   wall_ms PERSONA SRC CMD  µs of CMD as PERSONA (root or nobody) with SRC bound
#                            over /proc in a private mount namespace, output dropped
#   settings SCRIPT VAR=DEFAULT...  each VAR from the environment, else DEFAULT;
#                            INVOCATION: the command that runs SCRIPT so again
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

release() { # SRC BUILD
	cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$2" -j2 >/dev/null
}

release_pair() {
	git -C "$ROOT" worktree add -q --detach "$WORK/base-src" "$1"
	release "$WORK/base-src" "$WORK/base-build"
	release "$ROOT" "$WORK/cur-build"
	cc -O2 -o "$WORK/readlat" "$ROOT/bench/readlat.c"
}

release_pair_remove() {
	git -C "$ROOT" worktree remove --force "$WORK/base-src" 2>/dev/null || true
}

# Builds BASE and this tree (release_pair), takes the load average (LOAD_BEFORE) and
# mounts the builds at $WORK/mnt-before (BASE) and $WORK/mnt-after (this tree),
# filling the caller's associative arrays MNT and DAEMON by arm.
start_pair() { # CALLER URING BASE
	local arm bin
	release_pair "$3"
	chmod 755 "$WORK" "$WORK/readlat"
	LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
	for arm in before after; do
		MNT[$arm]=$WORK/mnt-$arm
		mkdir -p "${MNT[$arm]}"
		bin=$WORK/base-build/procfast
		[[ $arm == after ]] && bin=$WORK/cur-build/procfast
		"$bin" -f -o "norestart,uring=$2" "${MNT[$arm]}" 2>"$WORK/$arm.log" &
		DAEMON[$arm]=$!
		for _ in $(seq 100); do mountpoint -q "${MNT[$arm]}" && break; sleep 0.05; done
		mountpoint -q "${MNT[$arm]}" || { echo "$1: $arm not mounted" >&2; exit 1; }
	done
}

stop_pair() {
	local arm
	for arm in "${!MNT[@]}"; do unmount_all "${MNT[$arm]}"; done
	for arm in "${!DAEMON[@]}"; do kill "${DAEMON[$arm]}" 2>/dev/null || true; done
	release_pair_remove
}

as() {
	local who=$1
	shift
	case $who in
	root) "$@" ;;
	nocaps) setpriv --inh-caps=-all --bounding-set=-all "$@" ;;
	nobody) setpriv --reuid=65534 --regid=65534 --clear-groups "$@" ;;
	userns) unshare -Ur "$@" ;;
	esac
}

wall_ms() {
	local t0 t1
	t0=$(date +%s%N)
	unshare -m --propagation private sh -c "mount --bind $2 /proc && exec setpriv $(
		[[ $1 == nobody ]] && echo '--reuid=65534 --regid=65534 --clear-groups') $3" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}

samples_median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ns_us() { awk -v n="$1" 'BEGIN {printf "%.1f", n / 1000}'; }
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

settings() {
	local script=$1 kv var def prefix=""
	shift
	for kv; do
		var=${kv%%=*}
		def=${kv#*=}
		[[ -n ${!var:-} ]] || printf -v "$var" '%s' "$def"
		[[ ${!var} == "$def" ]] || prefix+="$var=${!var} "
	done
	# shellcheck disable=SC2034 # read by the script that sourced this
	INVOCATION="${prefix}bench/$script"
}
