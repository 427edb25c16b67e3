#!/usr/bin/env bash
# bench/dedup.sh — issue 4: what walking one process with T threads × F open fds
# costs on /proc, on procfast (fd/fdinfo of sharing threads are links) and on
# procfast -o nodedup (the naive mirror: the kernel's layout), side by side.
#
# Run as root: bench/dedup.sh     (no stdin needed; writes section "dedup" of RESULTS.md)
# Environment: CASES (default "200x200 1000x1000 100x16384"), RUNS (rounds per case,
#   default 3; medians), PROCFAST (default build/procfast).
#
# Per arm: drop dentries+inodes (echo 2 > drop_caches) so arms start equal, reset the
# daemon's peak RSS (clear_refs 5), then `find DIR/PID > file`. Recorded: entries
# visited (all; under fd/ or fdinfo/), wall time, growth of proc_inode_cache,
# fuse_inode and dentry active objects in /proc/slabinfo (global: on the mount arms
# they include the proc inodes the daemon's own reads of /proc create), daemon VmHWM.
set -euo pipefail
. "$(dirname "$0")/results.sh"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CASES=${CASES:-"200x200 1000x1000 100x16384"}
RUNS=${RUNS:-3}
PROCFAST=${PROCFAST:-$ROOT/build/procfast}
HELPER=$(dirname "$PROCFAST")/tests/fdthreads
RESULTS=$ROOT/bench/RESULTS.md
INVOCATION="$([[ $CASES != "200x200 1000x1000 100x16384" ]] && printf 'CASES="%s" ' "$CASES"
    [[ $RUNS != 3 ]] && printf 'RUNS=%s ' "$RUNS"; true)bench/dedup.sh"
ARMS=(proc dedup nodedup)

[[ $EUID -eq 0 ]] || { echo "dedup.sh: must run as root" >&2; exit 1; }
[[ -x $PROCFAST && -x $HELPER ]] || (cd "$ROOT" && cmake -B build >/dev/null && cmake --build build -j2 >/dev/null)

WORK=$(mktemp -d /tmp/procfast-bench-dedup.XXXXXX)
declare -A DPID SYSCTL_SAVED
declare -A SERVER
VICTIM=
cleanup() {
    set +e
    [[ -n $VICTIM ]] && kill -KILL "$VICTIM" 2>/dev/null
    for arm in dedup nodedup; do
        mountpoint -q "$WORK/$arm" && { fusermount3 -u "$WORK/$arm" 2>/dev/null || umount -l "$WORK/$arm"; }
        [[ -n ${DPID[$arm]:-} ]] && { kill "${DPID[$arm]}" 2>/dev/null; wait "${DPID[$arm]}" 2>/dev/null; }
    done
    for k in "${!SYSCTL_SAVED[@]}"; do sysctl -qw "$k=${SYSCTL_SAVED[$k]}"; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

raise() { # sysctl key, minimum value; the old value is restored on exit
    local v; v=$(sysctl -n "$1")
    ((v >= $2)) && return
    SYSCTL_SAVED[$1]=$v; sysctl -qw "$1=$2"
}

start_daemon() { # arm, options...
    local arm=$1; shift
    mkdir -p "$WORK/$arm"
    "$PROCFAST" -f "$@" "$WORK/$arm" 2>"$WORK/$arm.log" </dev/null &
    DPID[$arm]=$!
    for _ in $(seq 100); do
        if mountpoint -q "$WORK/$arm" && [[ -e $WORK/$arm/self/stat ]]; then
            # procfast serves from its supervisor's child (fs/supervisor/supervisor.c): measure that
            SERVER[$arm]=$(pgrep -P "${DPID[$arm]}" | head -1 || true)
            return
        fi
        sleep 0.1
    done
    echo "dedup.sh: procfast $* did not mount" >&2; cat "$WORK/$arm.log" >&2; exit 1
}

slab() { awk '$1=="proc_inode_cache"{p=$2} $1=="fuse_inode"{f=$2} $1=="dentry"{d=$2} END{print p+0, f+0, d+0}' /proc/slabinfo; }
kib() { awk -v k="$2" '$1==k":"{print $2}' "/proc/$1/status"; }
median() { sort -g | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# one arm: prints "entries fd_entries ms proc_inodes fuse_inodes dentries hwm_kib"
walk() { # arm dir
    local arm=$1 dir=$2 s0 s1 t0 t1 hwm=0
    sync; echo 2 >/proc/sys/vm/drop_caches; sleep 1
    [[ $arm != proc ]] && echo 5 >"/proc/${SERVER[$arm]}/clear_refs"
    s0=$(slab); t0=${EPOCHREALTIME/./}
    find "$dir" >"$WORK/out" 2>/dev/null || true
    t1=${EPOCHREALTIME/./}; s1=$(slab)
    [[ $arm != proc ]] && hwm=$(kib "${SERVER[$arm]}" VmHWM)
    echo "$(wc -l <"$WORK/out") $(grep -cE '/fd(info)?/' "$WORK/out") $(((t1 - t0) / 1000)) \
$(echo "$s0 $s1" | awk '{print $4-$1, $5-$2, $6-$3}') $hwm"
}

start_daemon dedup
start_daemon nodedup -o nodedup
IDLE_RSS=$(kib "${SERVER[dedup]}" VmRSS)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
others=$(( $(pgrep -c -x procfast || true) - 2 ))
rows=() targets=() memrows=()
for c in $CASES; do
    T=${c%x*} F=${c#*x}
    threads=$(awk '{split($4, a, "/"); print a[2]}' /proc/loadavg)   # threads on the machine now
    raise kernel.threads-max $((threads + T + 10000))
    raise kernel.pid_max $((threads + T + 10000))
    raise fs.nr_open $((F + 1024))
    "$HELPER" "$T" "$F" --hold >"$WORK/victim.json" </dev/null &
    VICTIM=$!
    until [[ -s $WORK/victim.json ]]; do sleep 0.1; done
    rss0=$(kib "${SERVER[dedup]}" VmRSS)
    for ((r = 0; r < RUNS; r++)); do
        for ((k = 0; k < 3; k++)); do       # rotate which arm goes first
            arm=${ARMS[(r + k) % 3]}
            dir=/proc; [[ $arm != proc ]] && dir=$WORK/$arm
            walk "$arm" "$dir/$VICTIM" >>"$WORK/$c.$arm"
            echo "dedup.sh: $c run $r $arm: $(tail -1 "$WORK/$c.$arm")" >&2
        done
    done
    # net/ share of one (non-leader) thread directory on the dedup mount
    tid=$(ls "/proc/$VICTIM/task" | grep -vx "$VICTIM" | head -1)
    tdir=$WORK/dedup/$VICTIM/task/$tid
    net_share="$(find "$tdir/net" | wc -l) of $(find "$tdir" | wc -l)"
    # the process exits: the daemon's RSS afterwards (at once, +3 s, after drop_caches + 3 s)
    rss_peak=$(kib "${SERVER[dedup]}" VmRSS)
    kill -KILL "$VICTIM"; wait "$VICTIM" 2>/dev/null || true; VICTIM=
    sleep 0.5; rss_a=$(kib "${SERVER[dedup]}" VmRSS)
    sleep 3; rss_b=$(kib "${SERVER[dedup]}" VmRSS)
    echo 2 >/proc/sys/vm/drop_caches; sleep 3; rss_c=$(kib "${SERVER[dedup]}" VmRSS)
    memrows+=("| $T × $F | $IDLE_RSS | $rss0 | $rss_peak | $rss_a | $rss_b | $rss_c |")

    # medians per arm and column
    declare -A m=()
    for arm in "${ARMS[@]}"; do
        for col in 1 2 3 4 5 6 7; do m[$arm.$col]=$(awk -v c=$col '{print $c}' "$WORK/$c.$arm" | median); done
    done
    for arm in "${ARMS[@]}"; do
        rows+=("| $T × $F | $arm | ${m[$arm.1]} | ${m[$arm.2]} | ${m[$arm.3]} | ${m[$arm.4]} | ${m[$arm.5]} | \
$(awk -v a="${m[$arm.4]}" -v b="${m[$arm.5]}" 'BEGIN{print a+b}') | ${m[$arm.6]} | \
$( [[ $arm == proc ]] && echo – || echo "${m[$arm.7]}") |")
    done
    pct() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f%%", (b - a) * 100 / b}'; }
    fd_less=$(pct "${m[dedup.2]}" "${m[proc.2]}")
    ino_less=$(pct "$(awk -v a="${m[dedup.4]}" -v b="${m[dedup.5]}" 'BEGIN{print a+b}')" "${m[proc.4]}")
    speed=$(awk -v a="${m[dedup.3]}" -v b="${m[proc.3]}" 'BEGIN{printf "%.2f×", b / a}')
    targets+=("- $T × $F: dedup vs /proc: $fd_less fewer fd/fdinfo entries, $ino_less fewer inodes \
(proc_inode_cache + fuse_inode), /proc wall time ÷ dedup wall time = $speed; net/ is $net_share entries of one thread's task/TID on the dedup mount.")
    unset m
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

section=$(cat <<EOF
<!-- dedup:begin -->
## dedup: \`find\` over one process with T threads × F fds (issue 4)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $load_before before, $load_after after; other procfast daemons running: $others;
procfast build type $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$(dirname "$PROCFAST")/CMakeCache.txt").
Process: \`build/tests/fdthreads T F --hold\` (T idle threads sharing F fds, dups of /dev/null).
Arms: \`find /proc/PID\`, \`find MOUNT/PID\` (procfast, default = dedup) and \`find MOUNT/PID\` on
\`procfast -o nodedup\` (the naive mirror), rotated each round; before each arm
\`echo 2 > /proc/sys/vm/drop_caches\` and the daemon's peak RSS is reset (\`clear_refs\` 5).
Medians of $RUNS rounds. Slab columns: growth of active objects in /proc/slabinfo during the
walk — global, so on the mount arms proc_inode_cache includes the inodes the daemon's own
reads of /proc create; inodes = proc_inode_cache + fuse_inode. fd entries = paths under
an \`fd/\` or \`fdinfo/\` directory. RSS = daemon VmHWM during the walk (KiB). Names the daemon
never looks up (\`find\` knows from d_type that fd/N are links and does not stat them) get
no FUSE inode, and threads' fixed directories are listed from templates, so what a walk
leaves behind is mostly the proc inodes of the daemon's reads of the leader's fd/ and
fdinfo/.

| case | arm | entries | fd entries | wall ms | proc inodes | fuse inodes | inodes | dentries | daemon peak RSS KiB |
|---|---|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${rows[@]}")

Targets (1000 × 1000: ≥99% fewer fd/fdinfo entries, ≥90% fewer inodes, ≥3× less wall time;
100 × 16384: ≥99% fewer inodes):

$(printf '%s\n' "${targets[@]}")

Daemon (dedup arm) VmRSS in KiB: idle after mount; with the process started; after the
walks; 0.5 s and 3.5 s after the process was killed; after a further drop_caches + 3 s:

| case | idle | process up | after walks | exit +0.5 s | exit +3.5 s | + drop_caches |
|---|---|---|---|---|---|---|
$(printf '%s\n' "${memrows[@]}")
<!-- dedup:end -->
EOF
)
write_section dedup "$section"
