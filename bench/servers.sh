# shellcheck shell=bash
# Sourced by the bench scripts that start FUSE servers of their own over io_uring
# (floor.sh, placement.sh), after common.sh:
#
#   servers_setup NAME PKG...  checks root and the kernel's io_uring switch, installs
#                              the packages missing, moves $WORK to /tmp/NAME-work (apart
#                              from the /tmp/procfast-* trees whose cleanups unmount by
#                              pattern) and sets the EXIT trap: servers_cleanup, which
#                              runs the script's own cleanup function if it defines one
#                              and removes a release_pair's worktree
#   allow_uring                sets enable_uring Y until the end ($URING_OLD)
#   SERVERS+=(PID) MOUNTS+=(PATH) PROCFAST_BIN=BIN SLEEPER=PID
#                              what servers_cleanup stops, unmounts and kills
#   stop_server PID            SIGTERM (a floor unmounts itself), SIGKILL after 2 s
#   procfast_pids BIN          the pids of the processes running the binary BIN
#   wait_mounted PATH PID      returns once PATH is a mount point; exits if PID died first
#   serve_procfast BIN MOUNT LOG OPTIONS
#                              BIN -f -o OPTIONS MOUNT in the background (stderr appended
#                              to LOG), recorded for servers_cleanup; returns once
#                              mounted, its pid in SERVED
URING_PARAM=/sys/module/fuse/parameters/enable_uring
MOUNTS=()
SERVERS=()
URING_OLD=
PROCFAST_BIN=
SCRATCH_ROOT=

servers_setup() {
	local me pkg need=()
	me=$(basename "$0")
	SCRATCH_ROOT=/tmp/$1-work
	shift
	[[ $EUID -eq 0 ]] || { echo "$me: must run as root" >&2; exit 1; }
	[[ -w $URING_PARAM ]] || { echo "$me: no $URING_PARAM (a kernel without CONFIG_FUSE_IO_URING?)" >&2; exit 1; }
	for pkg; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
	if ((${#need[@]})); then
		apt-get update -q >/dev/null && apt-get install -y -q "${need[@]}" >/dev/null
	fi
	rmdir "$WORK"
	mkdir -p "$SCRATCH_ROOT"
	WORK=$(mktemp -d "$SCRATCH_ROOT/run.XXXXXX")
	trap servers_cleanup EXIT
	trap 'exit 130' INT TERM
}

allow_uring() {
	URING_OLD=$(cat "$URING_PARAM")
	echo Y >"$URING_PARAM"
}

stop_server() {
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 40); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

procfast_pids() {
	local p
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/exe" 2>/dev/null) == "$1"* ]] && echo "${p#/proc/}"
	done
	return 0
}

servers_cleanup() { # every step, whatever the one before did
	set +e
	declare -F cleanup >/dev/null && cleanup
	for p in "${SERVERS[@]}"; do stop_server "$p"; done
	unmount_all "${MOUNTS[@]}"
	# procfast ends by itself once unmounted, within a second or two here.
	if [[ -n $PROCFAST_BIN ]]; then
		for _ in $(seq 100); do [[ -z $(procfast_pids "$PROCFAST_BIN") ]] && break; sleep 0.1; done
		for p in $(procfast_pids "$PROCFAST_BIN"); do kill -KILL "$p"; done 2>/dev/null
	fi
	[[ -n ${SLEEPER:-} ]] && kill "$SLEEPER" 2>/dev/null
	[[ -n $URING_OLD ]] && echo "$URING_OLD" >"$URING_PARAM"
	release_pair_remove # a release_pair's worktree, if the script made one
	rm -rf "$WORK"
	rmdir "$SCRATCH_ROOT" 2>/dev/null
}

serve_procfast() {
	mkdir -p "$2"
	"$1" -f -o "$4" "$2" 2>>"$3" &
	SERVED=$!
	SERVERS+=("$SERVED")
	MOUNTS+=("$2")
	wait_mounted "$2" "$SERVED"
}

wait_mounted() {
	for _ in $(seq 100); do mountpoint -q "$1" && return 0; kill -0 "$2" 2>/dev/null || break; sleep 0.05; done
	echo "$(basename "$0"): $1 did not mount" >&2
	exit 1
}
