#!/usr/bin/env bash
# bench/index.sh — the marked TGID index (issue 3), side by side in one run:
#   1. root getdents64 latency on /proc and on procfast with 0, 10,000 and 100,000
#      idle threads in one process (median of REPEAT open+getdents64+close listings);
#      `ps -ef` and `top -bn1` wall time at 0 and 100,000 threads;
#   2. fork+exit throughput (fork and vfork loops) with procfast mounted and
#      listening vs not running at all;
#   3. N = 1, 2, 4, 8 parallel readers (each: list, stat PID, read PID/stat of every
#      process) on /proc and procfast.
# Writes bench/RESULTS.md between <!-- index:begin --> and <!-- index:end -->.
#
# Run as root: bench/index.sh
# Environment: RUNS (rounds per figure, default 5), REPEAT (listings per round, 200),
#              FORKS (children per fork run, 3000; vfork runs 10x that), WALK_S (3 s),
#              BIG (threads of the big case, 100000), PROCFAST (default build/procfast).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-5} REPEAT=${REPEAT:-200} FORKS=${FORKS:-3000} WALK_S=${WALK_S:-3} BIG=${BIG:-100000}
PROCFAST=${PROCFAST:-$ROOT/build/procfast}
H=$ROOT/build/tests
RESULTS=$ROOT/bench/RESULTS.md
INVOCATION="$(for v in RUNS REPEAT FORKS WALK_S BIG; do
    case "$v=${!v}" in RUNS=5|REPEAT=200|FORKS=3000|WALK_S=3|BIG=100000) ;; *) printf '%s=%s ' "$v" "${!v}" ;; esac
done)bench/index.sh"

[[ $EUID -eq 0 ]] || { echo "index.sh: must run as root" >&2; exit 1; }
for t in unshare fusermount3 mountpoint ps top; do
    command -v "$t" >/dev/null || { echo "index.sh: missing $t" >&2; exit 1; }
done
[[ -x $PROCFAST && -x $H/dirtime && -x $H/threads && -x $H/forker && -x $H/walker ]] ||
    (cd "$ROOT" && cmake -B build >/dev/null && cmake --build build -j2 >/dev/null)

# ---- cleanup: daemon, thread holder, sysctls, temp dir — on any exit
WORK=$(mktemp -d /tmp/procfast-bench-index.XXXXXX)
MNT=$WORK/mnt; mkdir "$MNT"
DPID= TPID=
PID_MAX=$(cat /proc/sys/kernel/pid_max) THREADS_MAX=$(cat /proc/sys/kernel/threads-max)
stop_daemon() {
    mountpoint -q "$MNT" && { fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"; }
    [[ -n $DPID ]] && { kill "$DPID" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; }
    DPID=
}
stop_threads() {
    [[ -n $TPID ]] && { kill -KILL "$TPID" 2>/dev/null || true; wait "$TPID" 2>/dev/null || true; }
    TPID=
}
cleanup() {
    stop_threads; stop_daemon
    echo "$PID_MAX" >/proc/sys/kernel/pid_max; echo "$THREADS_MAX" >/proc/sys/kernel/threads-max
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_daemon() {
    "$PROCFAST" -f "$MNT" >>"$WORK/daemon.log" 2>&1 </dev/null & DPID=$!
    for _ in $(seq 500); do mountpoint -q "$MNT" && return; sleep 0.02; done
    echo "index.sh: procfast did not mount" >&2; cat "$WORK/daemon.log" >&2; exit 1
}
start_threads() { # N idle threads in one process; waits until all exist
    rm -f "$WORK/threads.json"
    "$H/threads" "$1" --hold >"$WORK/threads.json" </dev/null & TPID=$!
    until [[ -s $WORK/threads.json ]]; do
        kill -0 "$TPID" 2>/dev/null || { echo "index.sh: threads helper died" >&2; exit 1; }
        sleep 0.2
    done
}
median() { sort -g | awk '{v[NR]=$1} END {print NR ? v[int((NR+1)/2)] : "n/a"}'; }
# wall ms of CMD with SRC bound over /proc in a private mount namespace (same shape for both)
wall_ms() {
    local src=$1 cmd=$2 a b
    a=$(date +%s%N)
    unshare -m --propagation private sh -c "mount --bind $src /proc && exec $cmd >/dev/null 2>&1"
    b=$(date +%s%N)
    awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1f\n", (b - a) / 1e6}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf (b > 0 ? "%.2f" : "n/a"), a / b}'; }

echo "$(( PID_MAX > 4194304 ? PID_MAX : 4194304 ))" >/proc/sys/kernel/pid_max
(( THREADS_MAX >= 250000 )) || echo 250000 >/proc/sys/kernel/threads-max
OTHERS=$(pgrep -c -x procfast || true) # daemons not ours (other users of the machine)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
start_daemon

# ---- 1. root listing, ps, top
declare -A LS WALL
for n in 0 10000 "$BIG"; do
    (( n == 0 )) || start_threads "$n"
    for arm in proc procfast; do : >"$WORK/ls.$arm"; done
    for _ in $(seq "$RUNS"); do # rounds interleave the arms; median of round medians
        "$H/dirtime" /proc "$REPEAT" | cut -d' ' -f1 >>"$WORK/ls.proc"
        "$H/dirtime" "$MNT" "$REPEAT" | cut -d' ' -f1 >>"$WORK/ls.procfast"
    done
    LS[proc,$n]=$(median <"$WORK/ls.proc") LS[procfast,$n]=$(median <"$WORK/ls.procfast")
    if (( n != 10000 )); then
        for arm in proc procfast; do : >"$WORK/ps.$arm"; : >"$WORK/top.$arm"; done
        for _ in $(seq "$RUNS"); do
            for arm in proc procfast; do
                src=/proc; [[ $arm == procfast ]] && src=$MNT
                wall_ms "$src" "ps -ef" >>"$WORK/ps.$arm"
                wall_ms "$src" "top -bn1" >>"$WORK/top.$arm"
            done
        done
        for arm in proc procfast; do
            WALL[ps,$arm,$n]=$(median <"$WORK/ps.$arm") WALL[top,$arm,$n]=$(median <"$WORK/top.$arm")
        done
    fi
    stop_threads
    echo "threads=$n: getdents /proc ${LS[proc,$n]} us, procfast ${LS[procfast,$n]} us" >&2
done

# ---- 2. fork+exit throughput: procfast listening vs not running (alternating rounds)
for arm in on off; do : >"$WORK/fork.$arm"; : >"$WORK/vfork.$arm"; done
for i in $(seq "$RUNS"); do
    for arm in $( ((i % 2)) && echo on off || echo off on); do
        if [[ $arm == on ]]; then [[ -n $DPID ]] || start_daemon; else stop_daemon; fi
        "$H/forker" "$FORKS" | awk '{print $NF+0}' >>"$WORK/fork.$arm"
        "$H/forker" $((FORKS * 10)) --vfork | awk '{print $NF+0}' >>"$WORK/vfork.$arm"
    done
done
for k in fork vfork; do for arm in on off; do
    declare "${k}_$arm=$(median <"$WORK/$k.$arm")"
done; done
[[ -n $DPID ]] || start_daemon
echo "fork/s on $fork_on off $fork_off; vfork/s on $vfork_on off $vfork_off" >&2

# ---- 3. parallel readers
declare -A WALK
for n in 1 2 4 8; do
    for arm in proc procfast; do
        src=/proc; [[ $arm == procfast ]] && src=$MNT
        walkers=()
        for j in $(seq "$n"); do "$H/walker" "$src" "$WALK_S" >"$WORK/walk.$j" & walkers+=($!); done
        wait "${walkers[@]}"
        WALK[$arm,$n]=$(cat "$WORK"/walk.[0-9]* | awk '{s += $3} END {printf "%.0f", s}')
        rm -f "$WORK"/walk.[0-9]*
    done
    echo "readers=$n: /proc ${WALK[proc,$n]}/s procfast ${WALK[procfast,$n]}/s" >&2
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
MODE=$(grep -o 'process index: [a-z() ]*' "$WORK/daemon.log" | head -1)
stop_daemon

# ---- report
pct() { awk -v on="$1" -v off="$2" 'BEGIN {printf "%+.1f%%", (on / off - 1) * 100}'; }
LS_IDLE=${LS[procfast,0]} LS_100K=${LS[procfast,$BIG]}
{
cat <<EOF
<!-- index:begin -->
## index: root listing, ps/top with many threads, fork cost, parallel readers

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD0 before, $LOAD1 after; procfast build type
$(grep -oP 'CMAKE_BUILD_TYPE:STRING=\K.*' "$ROOT/build/CMakeCache.txt" || echo '?'), $MODE;
other procfast daemons running on the machine at start: $OTHERS.
Threads: one process (\`build/tests/threads N --hold\`, 16 KiB stacks); kernel.pid_max and
threads-max raised for the run and restored.

### Root listing (\`build/tests/dirtime DIR $REPEAT\`: open + getdents64 (32 KiB) loop + close)

Median µs over $REPEAT listings, median of $RUNS rounds alternating /proc and procfast.

| idle threads | /proc µs | procfast µs | procfast / /proc |
|---|---|---|---|
EOF
for n in 0 10000 "$BIG"; do
    echo "| $n | ${LS[proc,$n]} | ${LS[procfast,$n]} | $(ratio "${LS[procfast,$n]}" "${LS[proc,$n]}") |"
done
cat <<EOF

Targets: procfast at $BIG threads within 2× of its idle figure: $(ratio "$LS_100K" "$LS_IDLE")×
($( awk -v a="$LS_100K" -v b="$LS_IDLE" 'BEGIN {print (a <= 2 * b) ? "met" : "NOT met"}'));
≥10× faster than /proc at $BIG threads: $(ratio "${LS[proc,$BIG]}" "$LS_100K")×
($( awk -v a="${LS[proc,$BIG]}" -v b="$LS_100K" 'BEGIN {print (a >= 10 * b) ? "met" : "NOT met"}')).

### \`ps -ef\` and \`top -bn1\` wall time

Each run: \`unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'\`
(SRC = /proc or the procfast mount), output to /dev/null; median ms of $RUNS runs, arms alternating.

| command | idle threads | /proc ms | procfast ms | procfast / /proc |
|---|---|---|---|---|
EOF
for c in ps top; do for n in 0 "$BIG"; do
    echo "| \`$( [[ $c == ps ]] && echo 'ps -ef' || echo 'top -bn1')\` | $n | ${WALL[$c,proc,$n]} | ${WALL[$c,procfast,$n]} | $(ratio "${WALL[$c,procfast,$n]}" "${WALL[$c,proc,$n]}") |"
done; done
cat <<EOF

Target: \`ps -ef\` with $BIG threads faster on procfast than on /proc:
$( awk -v a="${WALL[ps,procfast,$BIG]}" -v b="${WALL[ps,proc,$BIG]}" 'BEGIN {print (a < b) ? "met" : "NOT met"}').

### fork+exit throughput (\`build/tests/forker $FORKS\`, \`build/tests/forker $((FORKS * 10)) --vfork\`)

Child \`_exit(0)\`s at once, parent reaps; $RUNS alternating rounds per arm (procfast
started/stopped between arms); medians.

| loop | procfast listening /s | procfast not running /s | change |
|---|---|---|---|
| fork | $fork_on | $fork_off | $(pct "$fork_on" "$fork_off") |
| vfork | $vfork_on | $vfork_off | $(pct "$vfork_on" "$vfork_off") |

Target: under 2% slower.

### Parallel readers (\`build/tests/walker DIR $WALK_S\` × N at once, no extra threads)

Each walker lists DIR, then for every process stats DIR/PID and reads DIR/PID/stat, repeatedly
for ${WALK_S} s. Figures: processes visited per second, summed over the N walkers.

| N | /proc visits/s | procfast visits/s | procfast / /proc |
|---|---|---|---|
EOF
for n in 1 2 4 8; do
    echo "| $n | ${WALK[proc,$n]} | ${WALK[procfast,$n]} | $(ratio "${WALK[procfast,$n]}" "${WALK[proc,$n]}") |"
done
echo
echo "<!-- index:end -->"
} >"$WORK/section.md"

touch "$RESULTS"
python3 - "$RESULTS" "$WORK/section.md" <<'EOF'
import re, sys
path, new = sys.argv[1], open(sys.argv[2]).read().rstrip("\n")
old = open(path).read()
pat = re.compile(r"<!-- index:begin -->.*?<!-- index:end -->", re.S)
out = pat.sub(lambda m: new, old) if pat.search(old) else old.rstrip("\n") + "\n\n" + new + "\n"
open(path, "w").write(out)
EOF
cat "$WORK/section.md"
