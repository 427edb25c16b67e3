#!/usr/bin/env bash
# bench/core.sh — time `ps -ef` and `lsof -n` with /proc being
#   (a) the real procfs, (b) procfast, (c) bindfs /proc (the naive FUSE mirror),
# and write the medians and ratios to bench/RESULTS.md (section "core").
#
# Run as root from anywhere: bench/core.sh
# Environment: RUNS (timed rounds, default 30), WARMUP (default 3),
#              PROCFAST (daemon binary, default build/procfast; built if missing).
#
# Every arm runs in the same shape,
#   unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'
# so all three pay the same unshare + bind cost. Arms are interleaved within each
# round (rotating order) because these 2-core machines are noisy: a disturbance
# then hits all arms alike, and medians discard the outliers.
set -euo pipefail
. "$(dirname "$0")/results.sh"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-30}
WARMUP=${WARMUP:-3}
PROCFAST=${PROCFAST:-$ROOT/build/procfast}
# the command line as run, with any overridden setting, for RESULTS.md
INVOCATION="$( [[ $RUNS != 30 ]] && printf 'RUNS=%s ' "$RUNS"; [[ $WARMUP != 3 ]] && printf 'WARMUP=%s ' "$WARMUP"
    [[ $PROCFAST != "$ROOT/build/procfast" ]] && printf 'PROCFAST=%s ' "$PROCFAST"; true)bench/core.sh"
RESULTS=$ROOT/bench/RESULTS.md
CMDS=("ps -ef" "lsof -n")
ARMS=(proc procfast bindfs)

[[ $EUID -eq 0 ]] || { echo "core.sh: must run as root (mount, unshare)" >&2; exit 1; }
for t in unshare bindfs fusermount3 lsof ps mountpoint; do
    command -v "$t" >/dev/null || { echo "core.sh: missing $t" >&2; exit 1; }
done

# ---- cleanup: everything we mount or start is recorded here and undone on any exit
WORK=$(mktemp -d /tmp/procfast-bench.XXXXXX)
declare -A PID SRC
declare -A SERVER
cleanup() {
    local arm
    for arm in procfast bindfs; do
        [[ -n ${SRC[$arm]:-} ]] || continue
        # lazy unmount as fallback so a busy mount never survives us
        mountpoint -q "${SRC[$arm]}" && { fusermount3 -u "${SRC[$arm]}" 2>/dev/null || umount -l "${SRC[$arm]}"; }
        if [[ -n ${PID[$arm]:-} ]] && kill -0 "${PID[$arm]}" 2>/dev/null; then
            kill "${PID[$arm]}" 2>/dev/null; wait "${PID[$arm]}" 2>/dev/null || true
        fi
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- build procfast only if there is no binary (the Release build the issue asks for)
build() {
    [[ -x $PROCFAST ]] && return
    (cd "$ROOT" && cmake -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 >/dev/null)
}

# ---- start a FUSE daemon in the foreground (so we know its pid) and wait for the mount
# usage: start ARM DIR CMD...
start() {
    local arm=$1 dir=$2; shift 2
    mkdir -p "$dir"; SRC[$arm]=$dir
    "$@" 2>"$WORK/$arm.log" &
    PID[$arm]=$!
    for _ in $(seq 100); do
        if mountpoint -q "$dir" && [[ -e $dir/self/stat || -e $dir/1/stat ]]; then
            # procfast serves from its supervisor's child (fs/supervisor/supervisor.c): measure that
            SERVER[$arm]=$(pgrep -P "${PID[$arm]}" | head -1 || true)
            SERVER[$arm]=${SERVER[$arm]:-${PID[$arm]}}
            return
        fi
        kill -0 "${PID[$arm]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "core.sh: $arm did not mount at $dir; log:" >&2; cat "$WORK/$arm.log" >&2; exit 1
}

# VmRSS, VmHWM and open fds of a daemon, e.g. "VmRSS 2076 KiB, VmHWM 2076 KiB, 7 open fds"
daemon_stats() {
    local p=$1 rss hwm
    rss=$(awk '/^VmRSS/{print $2}' /proc/$p/status); hwm=$(awk '/^VmHWM/{print $2}' /proc/$p/status)
    printf 'VmRSS %d KiB, VmHWM %d KiB, %d open fds' "$rss" "$hwm" "$(ls /proc/$p/fd | wc -l)"
}

# run CMD with SRC bound over /proc in a private mount namespace (the one shape for all arms)
in_ns() { unshare -m --propagation private sh -c "mount --bind $1 /proc && exec $2"; }

# time one run in microseconds, output discarded; status is not checked here (bindfs fails)
time_us() {
    local t0=${EPOCHREALTIME/./}
    in_ns "$1" "$2" >/dev/null 2>&1 || true
    echo $(( ${EPOCHREALTIME/./} - t0 ))
}

# CPU time (user+system, ms) a process has used so far: where the daemon's share of a run goes
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print ($12 + $13) * 1000 / hz}' "/proc/$1/stat"; }

median_us() { sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms() { awk -v u="$1" 'BEGIN{printf "%.1f", u/1000}'; }
ratio() {    # ratio of arm $1 to /proc, flagged when the arm's output was unusable
    awk -v a="${med[$1]}" -v b="${med[proc]}" 'BEGIN{printf "%.2f×", a/b}'
    [[ $(<"$WORK/ok.$1") == ok ]] || printf ' (broken, see notes)'
}

# outcome of one untimed run: exit status, stdout/stderr line counts, first stderr line;
# an arm that fails or prints nothing is marked broken (its time is then no benchmark)
outcome() {
    local rc=0
    in_ns "$1" "$2" >"$WORK/out" 2>"$WORK/err" || rc=$?
    [[ $rc -eq 0 && -s $WORK/out ]] && echo ok >"$WORK/ok.$3" || echo broken >"$WORK/ok.$3"
    local e; e=$(head -c 70 "$WORK/err" | head -1 | tr '|' '/')
    printf '%s: rc %d, %d lines' "$3" "$rc" "$(wc -l <"$WORK/out")"
    [[ -s $WORK/err ]] && printf ', %d stderr ("%s")' "$(wc -l <"$WORK/err")" "$e"
    return 0
}

# ---- main
build
start procfast "$WORK/procfast" "$PROCFAST" -f "$WORK/procfast"
start bindfs   "$WORK/bindfs"   bindfs -f /proc "$WORK/bindfs"
SRC[proc]=/proc
stats_before=$(daemon_stats "${SERVER[procfast]}")
bstats_before=$(daemon_stats "${SERVER[bindfs]}")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# other FUSE daemons (tests, other benchmarks) at work would skew the figures: record them
others=$(( $(pgrep -c -x procfast || true) - 1 ))

rows=()
declare -A med
for cmd in "${CMDS[@]}"; do
    notes=()
    for arm in "${ARMS[@]}"; do notes+=("$(outcome "${SRC[$arm]}" "$cmd" "$arm")"); : >"$WORK/t.$arm"; done
    cpu0=$(cpu_ms "${SERVER[procfast]}")
    for ((i = 0; i < WARMUP + RUNS; i++)); do
        for ((k = 0; k < 3; k++)); do              # rotate which arm goes first
            arm=${ARMS[(i + k) % 3]}
            us=$(time_us "${SRC[$arm]}" "$cmd")
            ((i >= WARMUP)) && echo "$us" >>"$WORK/t.$arm"
        done
    done
    # a daemon that died mid-run makes every later figure meaningless: stop here
    for arm in procfast bindfs; do
        kill -0 "${PID[$arm]}" 2>/dev/null && continue
        echo "core.sh: $arm daemon died during \`$cmd\`; log:" >&2; cat "$WORK/$arm.log" >&2; exit 1
    done
    notes+=("procfast daemon CPU $(awk -v a="$cpu0" -v b="$(cpu_ms "${SERVER[procfast]}")" -v n=$((WARMUP + RUNS)) \
        'BEGIN{printf "%.1f", (b - a) / n}') ms per run")
    for arm in "${ARMS[@]}"; do med[$arm]=$(median_us <"$WORK/t.$arm"); done
    rows+=("| \`$cmd\` | $(ms "${med[proc]}") | $(ms "${med[procfast]}") | $(ratio procfast) \
| $(ms "${med[bindfs]}") | $(ratio bindfs) | $(IFS=';'; echo "${notes[*]}" | sed 's/;/; /g') |")
    echo "${rows[-1]}" >&2
done

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
stats_after=$(daemon_stats "${SERVER[procfast]}")
bstats_after=$(daemon_stats "${SERVER[bindfs]}")
# an unoptimised or sanitizer build would make the figures meaningless: record what was measured
cache=$(dirname "$PROCFAST")/CMakeCache.txt
build_type="unknown (no CMakeCache.txt)"
[[ -f $cache ]] && build_type=$(sed -n 's/^\(CMAKE_BUILD_TYPE\|PROCFAST_SANITIZE\):[A-Z]*=/\1=/p' "$cache" | tr '\n' ' ')
# the daemon's own messages, quoted (first 5 lines), so warnings and errors are not lost
daemon_log=$(head -5 "$WORK/procfast.log" | sed 's/^/    /')

# ---- write our section of RESULTS.md, leaving other benchmarks' sections alone
section=$(cat <<EOF
<!-- core:begin -->
## core: \`ps -ef\` and \`lsof -n\` over /proc, procfast, bindfs

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'),
kernel $(uname -r), $(nproc) CPUs, load average $load_before before, $load_after after,
other procfast daemons running at start: $others,
procfast build: $build_type (an empty build type means CMakeLists' default, RelWithDebInfo).
Each arm: \`unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'\`
with output to /dev/null (SRC = /proc, the procfast mount, the \`bindfs /proc\` mount).
$RUNS timed rounds after $WARMUP warm-up rounds, the three arms interleaved in rotating order;
wall-clock medians in ms including unshare + bind (about the same for all arms). Ratio = arm / /proc.
Notes give the outcome of one untimed run per arm (exit status, stdout lines, stderr).

| command | /proc median ms | procfast median ms | ratio | bindfs median ms | ratio | notes |
|---|---|---|---|---|---|---|
$(printf '%s\n' "${rows[@]}")

Daemon memory and fds (from /proc/PID/status and /proc/PID/fd, before → after all runs):

- procfast: $stats_before → $stats_after.
- bindfs: $bstats_before → $bstats_after.

procfast's stderr during the run ($(grep -c . "$WORK/procfast.log" || true) lines, first 5):

$daemon_log

Target (issue 2): procfast \`ps -ef\` within 1.5× of /proc.
<!-- core:end -->
EOF
)

if [[ ! -f $RESULTS ]]; then
    cat >"$RESULTS" <<'EOF'
# procfast benchmark results

Each section below is written by one script in `bench/` and replaced whenever that script
runs again. Every figure names the command that produced it; rerun that command to check it.
EOF
fi
write_section core "$section"
