#!/usr/bin/env bash
# bench/request_path.sh — the request path of this tree against BASE's (issue 24, point 1:
# the exact path, cheaper): what a request, a listing and a tool cost, and the daemon's
# CPU. Release builds of BASE (before) and of this tree (after) serve one mount each
# (-o norestart,uring=URING), side by side; per round, arms alternating:
#   - open + read + close of PID/stat of a sleeper (readlat orc, the median of COUNT),
#     as root and as nobody, the reader pinned to CPU 0 (a reader that the scheduler
#     moves to the other CPU at each reply costs 3 to 6 times as much: RESULTS
#     "placement"); even so a round's median may fall in either mode, so the server's
#     CPU per open + read + close is measured too (below);
#   - `ps -ef`, `pstree -p`, `lsof -n -P` and `top -bn1` as root with the mount bound
#     over /proc (wall time; /proc in the same rounds);
#   - the server's CPU (utime + stime of its process, 10 ms ticks) over CPU_RUNS runs of
#     `ps -ef` and of `lsof -n -P`, per run, and over CPU_ORC opens + reads + closes of
#     the sleeper's PID/stat, per open;
# then, with a process of BIG idle threads and one of FDS open files started (after the
# tools: lsof would read every thread's fds), ROUNDS rounds of the task/ listing of the
# first and the fd/ listing of the second (build/tests/dirtime, the median of REPEAT).
# Medians over ROUNDS rounds. Writes the section "request_path" of bench/RESULTS.md.
#
# Run as root: bench/request_path.sh   (ROUNDS=7 COUNT=2000 REPEAT=20 BIG=10000 FDS=3000
#                                        CPU_RUNS=5 CPU_ORC=20000 BASE=64f4409 URING=off)
set -euo pipefail
. "$(dirname "$0")/common.sh"
settings request_path.sh ROUNDS=7 COUNT=2000 REPEAT=20 BIG=10000 FDS=3000 CPU_RUNS=5 \
	CPU_ORC=20000 BASE=64f4409 URING=off
[[ $EUID -eq 0 ]] || { echo "request_path.sh: must run as root" >&2; exit 1; }
ensure_built "$ROOT/build/tests/dirtime" "$ROOT/build/tests/threads"
H=$ROOT/build/tests

declare -A MNT DAEMON
cleanup() {
	stop_pair
	for p in ${SLEEPER:-} ${THREADS:-} ${HOLDER:-}; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

URING_PARAM=/sys/module/fuse/parameters/enable_uring
if [[ $URING != off ]]; then
	URING_WAS=$(cat "$URING_PARAM")
	echo Y >"$URING_PARAM"
	trap 'echo "$URING_WAS" >"$URING_PARAM"; cleanup' EXIT
fi

start_pair request_path.sh "$URING" "$BASE"
sleep 3600 &
SLEEPER=$!

# The process of BIG threads and the one of FDS files, for the listings only: every
# tool would read them too (lsof each thread's fds).
start_big() {
	"$H/threads" "$BIG" --hold >"$WORK/threads.json" &
	THREADS=$!
	python3 -c 'import os, sys, time
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(sys.argv[1]))]
time.sleep(3600)' "$FDS" &
	HOLDER=$!
	for _ in $(seq 200); do
		[[ -s $WORK/threads.json ]] && (($(ls /proc/$HOLDER/fd | wc -l) > FDS)) && return
		sleep 0.05
	done
	echo "request_path.sh: the big processes did not start" >&2
	exit 1
}

ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
cpu_us() { # ARM CMD: the server's CPU per run of CMD, µs
	local t0 i
	t0=$(ticks "${DAEMON[$1]}")
	for ((i = 0; i < CPU_RUNS; i++)); do wall_ms root "${MNT[$1]}" "$2" >/dev/null; done
	echo $((($(ticks "${DAEMON[$1]}") - t0) * 1000000 / HZ / CPU_RUNS))
}
cpu_orc_ns() { # ARM: the server's CPU per open + read + close of PID/stat, ns
	local t0
	t0=$(ticks "${DAEMON[$1]}")
	"$WORK/readlat" orc "${MNT[$1]}/$SLEEPER/stat" "$CPU_ORC" >/dev/null
	echo $((($(ticks "${DAEMON[$1]}") - t0) * 1000000000 / HZ / CPU_ORC))
}
listing_ns() { "$H/dirtime" "$1" "$REPEAT" | awk '{printf "%d", $2 * 1000}'; }

declare -A S
add() { S[$1]="${S[$1]:-} $2"; }
src_of() { if [[ $1 == proc ]]; then echo /proc; else echo "${MNT[$1]}"; fi; }
arms_of() { if (($1 % 2)); then echo proc before after; else echo after before proc; fi; }
for round in $(seq "$ROUNDS"); do
	for arm in $(arms_of "$round"); do
		m=$(src_of "$arm")
		add "$arm.orc" "$(as root taskset -c 0 "$WORK/readlat" orc "$m/$SLEEPER/stat" "$COUNT" | cut -d' ' -f1)"
		add "$arm.orcnobody" "$(as nobody taskset -c 0 "$WORK/readlat" orc "$m/$SLEEPER/stat" "$COUNT" | cut -d' ' -f1)"
		for tool in ps pstree lsof top; do
			case $tool in
			ps) cmd="ps -ef" ;;
			pstree) cmd="pstree -p" ;;
			lsof) cmd="lsof -n -P" ;;
			top) cmd="top -bn1" ;;
			esac
			add "$arm.$tool" "$(wall_ms root "$m" "$cmd")"
		done
		if [[ $arm != proc ]]; then
			add "$arm.cpups" "$(cpu_us "$arm" "ps -ef")"
			add "$arm.cpulsof" "$(cpu_us "$arm" "lsof -n -P")"
			add "$arm.cpuorc" "$(cpu_orc_ns "$arm")"
		fi
	done
done
start_big
for round in $(seq "$ROUNDS"); do
	for arm in $(arms_of "$round"); do
		m=$(src_of "$arm")
		add "$arm.task" "$(listing_ns "$m/$THREADS/task")"
		add "$arm.fd" "$(listing_ns "$m/$HOLDER/fd")"
	done
done

med() { samples_median "${S[$1]}"; }
row() { # KEY LABEL UNIT(ns|us): /proc, before, after, after/before, after//proc
	local p b a conv=ns_us
	[[ $3 == us ]] && conv=us_ms
	p=$(med "proc.$1")
	b=$(med "before.$1")
	a=$(med "after.$1")
	echo "| $2 | $($conv "$p") | $($conv "$b") | $($conv "$a") | **$(ratio_of "$a" "$b")** | $(ratio_of "$b" "$p") | $(ratio_of "$a" "$p") |"
}
us_ms() { awk -v n="$1" 'BEGIN {printf "%.1f", n / 1000}'; }
cpurow() { # KEY LABEL
	local b a
	b=$(med "before.$1")
	a=$(med "after.$1")
	echo "| $2 | $(us_ms "$b") | $(us_ms "$a") | **$(ratio_of "$a" "$b")** |"
}
section="<!-- request_path:begin -->
## The request path against an earlier tree (issue 24, point 1)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after. Release builds of
$BASE (before) and of this tree ($(git -C "$ROOT" rev-parse --short HEAD)) serve \`-o norestart,uring=$URING\`
side by side; /proc, before and after alternate within each of $ROUNDS rounds; medians of the rounds.
A sleeper's \`PID/stat\` (readlat under \`taskset -c 0\`, the median of $COUNT); listings: \`build/tests/dirtime\`,
the median of $REPEAT, of a process of $BIG idle threads and of one of $FDS open files;
tools as root with the mount bound over /proc.

| what | /proc | before | after | **after / before** | before / /proc | after / /proc |
|---|---|---|---|---|---|---|
$(row orc "open + read + close of \`PID/stat\`, root, µs" ns)
$(row orcnobody "open + read + close of \`PID/stat\`, nobody, µs" ns)
$(row task "listing of \`PID/task/\` ($BIG threads), µs" ns)
$(row fd "listing of \`PID/fd/\` ($FDS fds), µs" ns)
$(row ps "\`ps -ef\`, ms" us)
$(row pstree "\`pstree -p\`, ms" us)
$(row lsof "\`lsof -n -P\`, ms" us)
$(row top "\`top -bn1\`, ms" us)

The server's CPU (utime + stime, 10 ms ticks) per run of a tool, over $CPU_RUNS runs, ms; per
open + read + close of \`PID/stat\` (root, unpinned), over $CPU_ORC, µs:

| what | before | after | **after / before** |
|---|---|---|---|
$(cpurow cpups "\`ps -ef\`, ms")
$(cpurow cpulsof "\`lsof -n -P\`, ms")
$(cpurow cpuorc "open + read + close of \`PID/stat\`, µs")
<!-- request_path:end -->"
write_section request_path "$section"
echo "$section"
