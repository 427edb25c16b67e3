#!/usr/bin/env bash
# bench/resources.sh — containers' own resources (issue 12), side by side with LXCFS:
#   - open+read+close of meminfo, stat and cpuinfo by a reader in a cgroup limited to
#     256 MiB and CPU 0, through /proc, Debian's lxcfs (--enable-cfs -l), procfast with
#     -o resources=caller, and a pidns= view (resources=init) of a namespace whose init
#     is in that cgroup;
#   - files not virtualised (PID/stat, PID/status, and meminfo with resources=off)
#     through this build and the build before (BASE, default main just before the
#     merge that brought fs/res/): they must cost no more than before.
# Every figure is the median over ROUNDS rounds of each round's median of COUNT reads
# (bench/readlat.c); arms rotate within a round. Writes the section "resources" of
# bench/RESULTS.md.
#
# Run as root: bench/resources.sh      (ROUNDS=9 COUNT=1000 BASE=<commit> to override)
set -euo pipefail
. "$(dirname "$0")/common.sh"

# main just before resources merged: the first parent of the merge that brought them
DEFAULT_BASE=$(git -C "$(dirname "$0")" rev-parse "$(git -C "$(dirname "$0")" log --first-parent \
	--merges --format=%H -- :/fs/res/resources.c | tail -1)^1")
settings resources.sh ROUNDS=9 COUNT=1000 BASE="$DEFAULT_BASE"
[[ $EUID -eq 0 ]] || { echo "resources.sh: must run as root" >&2; exit 1; }
command -v lxcfs >/dev/null || { echo "resources.sh: needs lxcfs (apt-get install lxcfs)" >&2; exit 1; }

CG=procfast-bench-$$
CONTROLLERS=(memory cpu cpuacct cpuset blkio)
MOUNTS=()
LXCFS_PID=
cleanup() { # every step, whatever the one before did
	set +e
	unmount_all "${MOUNTS[@]}"
	[[ -n $LXCFS_PID ]] && { kill "$LXCFS_PID" 2>/dev/null; wait "$LXCFS_PID" 2>/dev/null; }
	[[ -n ${PIDNS_SLEEPER:-} ]] && { pkill -9 -P "$PIDNS_SLEEPER"; kill -9 "$PIDNS_SLEEPER"; wait "$PIDNS_SLEEPER"; } 2>/dev/null
	[[ -n ${SLEEPER:-} ]] && kill "$SLEEPER" 2>/dev/null
	for c in "${CONTROLLERS[@]}"; do
		d=/sys/fs/cgroup/$c/$CG
		[[ -d $d ]] || continue
		for p in $(cat "$d/cgroup.procs"); do kill -9 "$p"; done 2>/dev/null
		for _ in $(seq 50); do rmdir "$d" 2>/dev/null && break; sleep 0.1; done
	done
	release_pair_remove
	[[ -n ${URING_WAS:-} ]] && echo "$URING_WAS" >"$URING_PARAM"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Both builds Release, in scratch directories. This tree's serves over FUSE over io_uring
# where the kernel has it (enable_uring set Y for the run, restored at exit; URING=off:
# /dev/fuse), the base build over /dev/fuse (it predates the transport).
release_pair "$BASE"
URING_PARAM=/sys/module/fuse/parameters/enable_uring
if [[ ${URING:-on} != off && -w $URING_PARAM ]]; then
	URING_WAS=$(cat "$URING_PARAM")
	echo Y >"$URING_PARAM"
fi
TRANSPORT=$([[ $(cat "$URING_PARAM" 2>/dev/null) == Y && ${URING:-on} != off ]] && echo "FUSE over io_uring" || echo "/dev/fuse")

# The container's cgroup: 256 MiB, CPU 0.
for c in "${CONTROLLERS[@]}"; do mkdir "/sys/fs/cgroup/$c/$CG"; done
cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$CG/cpuset.mems"
echo 0 >"/sys/fs/cgroup/cpuset/$CG/cpuset.cpus"
echo $((256 << 20)) >"/sys/fs/cgroup/memory/$CG/memory.limit_in_bytes"
JOIN=$(for c in "${CONTROLLERS[@]}"; do printf 'echo $$ > /sys/fs/cgroup/%s/%s/cgroup.procs; ' "$c" "$CG"; done)

mount_arm() { # NAME BINARY OPTIONS...
	local name=$1 bin=$2
	shift 2
	mkdir -p "$WORK/$name"
	"$bin" "$@" "$WORK/$name"
	MOUNTS+=("$WORK/$name")
}
# The namespace a view shows: its init in the cgroup.
sh -c "$JOIN exec unshare --pid --fork --mount-proc sleep 3600" </dev/null >/dev/null 2>&1 &
PIDNS_SLEEPER=$! # unshare, once sh has executed it; its child is the namespace's init
for _ in $(seq 100); do
	PIDNS_INIT=$(pgrep -P "$PIDNS_SLEEPER" | head -1 || true)
	[[ -n $PIDNS_INIT && $(cat /proc/$PIDNS_INIT/comm 2>/dev/null) == sleep ]] && break
	sleep 0.05
done

mount_arm base "$WORK/base-build/procfast"
mount_arm off "$WORK/cur-build/procfast"
mount_arm caller "$WORK/cur-build/procfast" -o resources=caller
mount_arm view "$WORK/cur-build/procfast" -o pidns=/proc/$PIDNS_INIT/ns/pid
mkdir -p "$WORK/lxcfs"
lxcfs -f --enable-cfs -l -p "$WORK/lxcfs.pid" "$WORK/lxcfs" </dev/null >"$WORK/lxcfs.log" 2>&1 &
LXCFS_PID=$!
MOUNTS+=("$WORK/lxcfs")
for _ in $(seq 100); do [[ -e $WORK/lxcfs/proc/meminfo ]] && break; sleep 0.05; done
sleep 600 </dev/null >/dev/null 2>&1 &
SLEEPER=$!

# Sanity: each virtualising arm shows the cgroup's 256 MiB to a reader in it.
for r in "$WORK/lxcfs/proc" "$WORK/caller" "$WORK/view"; do
	total=$(sh -c "$JOIN exec grep MemTotal $r/meminfo" | awk '{print $2}')
	[[ $total == 262144 ]] || { echo "resources.sh: $r/meminfo: MemTotal $total" >&2; exit 1; }
done

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A SAMPLES
run_arm() { # KEY PATH
	local out
	out=$(sh -c "$JOIN exec $WORK/readlat orc $2 $COUNT")
	SAMPLES[$1]+="${out%% *} "
}

arms=()
for f in meminfo stat cpuinfo; do
	arms+=("$f|proc|/proc/$f" "$f|lxcfs|$WORK/lxcfs/proc/$f" "$f|caller|$WORK/caller/$f"
	       "$f|view|$WORK/view/$f")
done
for f in "$SLEEPER/stat" "$SLEEPER/status" meminfo; do
	for r in base off caller; do arms+=("plain $f|$r|$WORK/$r/$f"); done
done

for ((round = 0; round < ROUNDS; round++)); do
	n=${#arms[@]}
	for ((i = 0; i < n; i++)); do
		IFS='|' read -r what arm path <<<"${arms[$(((i + round * 5) % n))]}"
		run_arm "$what|$arm" "$path"
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

table="| file | /proc µs | lxcfs µs | resources=caller µs | view (init) µs | caller / lxcfs | view / lxcfs |
|---|---|---|---|---|---|---|"
for f in meminfo stat cpuinfo; do
	p=$(samples_median "${SAMPLES[$f|proc]}"); l=$(samples_median "${SAMPLES[$f|lxcfs]}")
	c=$(samples_median "${SAMPLES[$f|caller]}"); v=$(samples_median "${SAMPLES[$f|view]}")
	table+="
| $f | $(ns_us "$p") | $(ns_us "$l") | $(ns_us "$c") | $(ns_us "$v") | **$(ratio_of "$c" "$l")** | **$(ratio_of "$v" "$l")** |"
done
plain="| file not virtualised | before µs | resources=off µs | resources=caller µs | off / before | caller / before |
|---|---|---|---|---|---|"
for f in "$SLEEPER/stat" "$SLEEPER/status" meminfo; do
	b=$(samples_median "${SAMPLES[plain $f|base]}"); o=$(samples_median "${SAMPLES[plain $f|off]}")
	c=$(samples_median "${SAMPLES[plain $f|caller]}")
	shown=${f/$SLEEPER/PID}
	[[ $f == meminfo ]] && shown="meminfo (caller: made)"
	plain+="
| $shown | $(ns_us "$b") | $(ns_us "$o") | $(ns_us "$c") | $(ratio_of "$o" "$b") | $(ratio_of "$c" "$b") |"
done

section="<!-- resources:begin -->
## Containers' own resources, against LXCFS (issue 12)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER;
Release builds of this tree ($(git -C "$ROOT" rev-parse --short HEAD)) and of \`$BASE\`
($(git -C "$ROOT" rev-parse --short "$BASE"), before resources), $(lxcfs --version 2>&1 | head -1 | tr -d '\n') with
\`--enable-cfs -l\`. The reader is in a cgroup of 256 MiB and CPU 0 (every virtualising
arm checked to show it 262144 kB). Medians over $ROUNDS rounds of each round's median of
$COUNT open + read to the end + close (\`bench/readlat.c\`); arms rotate within a round.

$table

$plain

This tree serves over $TRANSPORT, the base build over \`/dev/fuse\`: the "before" columns
compare the transports too. Each open + read to the end + close is three round trips
(OPEN, READ, and the READ at the end); over \`/dev/fuse\` (2026-12-01, ddcc570) the same
files cost 0.53, 0.61 and 0.63× LXCFS. Of what a text costs beyond the plain mirror (some
45 µs for \`meminfo\`), about 20 µs is the kernel generating the files it reads
(\`/proc/PID/cgroup\` 3 µs, \`memory.stat\` 11 µs, \`memory.usage_in_bytes\` 2 µs,
\`/proc/meminfo\` 4 µs, each open+read+close measured alone on this VM, 2026-12-01), the
rest the daemon's reading, parsing and formatting.
<!-- resources:end -->"
write_section resources "$section"
