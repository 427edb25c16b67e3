#!/usr/bin/env bash
# bench/churn.sh — listings and lookups under thread churn (issue 24, point 4): do they
# stay flat while threads are created and end by the tens of thousands each second?
#
# Measures, on /proc and on procfast over /dev/fuse (`-o uring=off`) side by side, first
# on a quiet host and then while `build/tests/threadchurn 0 CHURN_LIVE` creates and ends
# threads as fast as it can (its rate is reported):
#   - the root listing (`build/tests/dirtime DIR`: open + getdents64 + close),
#   - the `task/` listing of a process of BIG idle threads (`threads BIG --hold`),
#   - lookups: `build/tests/stattime DIR`, a stat of DIR/PID/status for every process
#     (NPROC sleepers are started so that there are many), one pass timed;
# each three ways:
#   cold  = the first of these on a new mount (procfs: `mount -t proc` on a fresh
#           directory; procfast: a new daemon, timed once it answered a statfs), in the
#           order root listing, task/ listing, lookups;
#   first = one listing (or pass) by a new process on the long-lived mount after IDLE s
#           in which this script ran nothing (bench/tools.sh's "cold": the process's own
#           fork and exec are queued events when it lists);
#   warm  = the median of REPEAT in one process on the long-lived mount.
# Beside them, the floor: the root listing (3 entries) of bench/floor/floor_libfuse, a
# server that answers every request from memory at no cost of its own, first and warm:
# how much of procfast's change under churn any FUSE listing on this machine shows.
# Then, on the quiet host, where a first listing's time goes: the same first listing with
# procfast's daemon and the lister free, or both pinned to CPU 0 (a second daemon under
# `taskset -c 0`), so that no FUSE round trip wakes the other vCPU; /proc the same.
# ROUNDS rounds, the arms in rotating order in each; figures are medians over the rounds
# (µs); ratio = procfast / /proc. BASE=PATH adds an arm "before": another procfast binary
# (an earlier tree's Release build), measured the same way.
# Writes the section "churn" of bench/RESULTS.md.
#
# Run as root: bench/churn.sh
# Environment: ROUNDS (9), REPEAT (50), NPROC (200), BIG (10000), IDLE (1), CHURN_LIVE
#              (64 threads alive in the churner at any time), BASE (none), PROCFAST
#              (default: this tree built Release into the scratch directory; the helpers
#              come from that build too).
# On any exit it stops and unmounts everything it started.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
PROCFAST_GIVEN=${PROCFAST:-}
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
settings churn.sh ROUNDS=9 REPEAT=50 NPROC=200 BIG=10000 IDLE=1 CHURN_LIVE=64 BASE=
[[ -n $PROCFAST_GIVEN ]] && INVOCATION="PROCFAST=$PROCFAST_GIVEN $INVOCATION"
[[ $EUID -eq 0 ]] || { echo "churn.sh: must run as root (mount)" >&2; exit 1; }

ARMS=(proc procfast)
[[ -n $BASE ]] && ARMS+=(before)
declare -A BIN=() MNT=([proc]=/proc) DAEMON=()
SLEEPERS=() HOLDER='' CHURNER='' COLD_PID='' COLD_MNT='' FLOOR_PID=''
THREADS_MAX=$(cat /proc/sys/kernel/threads-max) PID_MAX=$(cat /proc/sys/kernel/pid_max)

stop_pid() { # PID [SIGNAL]: ends one process this script started, and reaps it
	[[ -n $1 ]] || return 0
	kill "-${2:-TERM}" "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
unmount_daemon() { # MOUNT PID
	mountpoint -q "$1" && { fusermount3 -u "$1" 2>/dev/null || umount -l "$1"; }
	stop_pid "$2"
}
cleanup() {
	local a p
	stop_pid "$CHURNER" KILL
	stop_pid "$HOLDER" KILL
	for p in "${SLEEPERS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${SLEEPERS[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ -n $PINNED_PID ]] && unmount_daemon "$WORK/pinned" "$PINNED_PID"
	[[ -n $FLOOR_PID ]] && unmount_daemon "$WORK/floor" "$FLOOR_PID"
	[[ -n $COLD_MNT ]] && { unmount_daemon "$COLD_MNT" "$COLD_PID"; umount "$COLD_MNT" 2>/dev/null || true; }
	for a in "${!DAEMON[@]}"; do unmount_daemon "${MNT[$a]}" "${DAEMON[$a]}"; done
	echo "$PID_MAX" >/proc/sys/kernel/pid_max
	echo "$THREADS_MAX" >/proc/sys/kernel/threads-max
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the build: Release, in the scratch directory, unless PROCFAST names one with its helpers
B=$WORK/build
if [[ -n $PROCFAST_GIVEN && -x $(dirname "$PROCFAST_GIVEN")/tests/stattime ]]; then
	B=$(dirname "$PROCFAST_GIVEN")
else
	echo "churn.sh: building procfast (Release) in $B" >&2
	release "$ROOT" "$B"
fi
H=$B/tests
# shellcheck disable=SC2046 # pkg-config's words are flags
cc -std=gnu11 -O2 $(pkg-config --cflags fuse3) -o "$WORK/floor_libfuse" "$ROOT/bench/floor/floor_libfuse.c" \
	$(pkg-config --libs fuse3)
BIN[procfast]=${PROCFAST_GIVEN:-$B/procfast}
[[ -n $BASE ]] && BIN[before]=$BASE

start_daemon() { # BINARY MOUNT LOG: procfast -f -o uring=off; returns once a statfs is answered
	mkdir -p "$2"
	# shellcheck disable=SC2086 # BINARY may be "taskset -c 0 PATH"
	$1 -f -o uring=off "$2" >>"$3" 2>&1 </dev/null &
	STARTED=$!
	for _ in $(seq 200); do
		mountpoint -q "$2" && stat -f "$2" >/dev/null 2>&1 && return 0
		kill -0 "$STARTED" 2>/dev/null || break
		sleep 0.02
	done
	echo "churn.sh: procfast did not mount on $2; log:" >&2; tail -5 "$3" >&2; exit 1
}

# ---- what is looked at: NPROC sleepers, one process of BIG threads
(( THREADS_MAX >= BIG + 50000 )) || echo $((BIG + 50000)) >/proc/sys/kernel/threads-max
(( PID_MAX >= 4 * (BIG + NPROC) + 100000 )) || echo $((4 * (BIG + NPROC) + 100000)) >/proc/sys/kernel/pid_max
for _ in $(seq "$NPROC"); do sleep 3600 & SLEEPERS+=($!); done
"$H/threads" "$BIG" --hold >"$WORK/holder" </dev/null & HOLDER=$!
until [[ -s $WORK/holder ]]; do
	kill -0 "$HOLDER" 2>/dev/null || { echo "churn.sh: threads helper died" >&2; exit 1; }
	sleep 0.1
done
for a in "${ARMS[@]}"; do
	[[ $a == proc ]] && continue
	MNT[$a]=$WORK/$a
	start_daemon "${BIN[$a]}" "${MNT[$a]}" "$WORK/$a.log"
	DAEMON[$a]=$STARTED
done
mkdir -p "$WORK/floor"
"$WORK/floor_libfuse" -f "$WORK/floor" </dev/null >"$WORK/floor.log" 2>&1 & FLOOR_PID=$!
for _ in $(seq 200); do [[ -e $WORK/floor/stat ]] && break; sleep 0.02; done
[[ -e $WORK/floor/stat ]] || { echo "churn.sh: the floor did not mount" >&2; exit 1; }
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- one measurement of each kind; appends "KIND VALUE" lines to $WORK/PHASE.ARM
measure_cold() { # PHASE ARM
	local out=$WORK/$1.$2
	COLD_MNT=$WORK/cold
	mkdir -p "$COLD_MNT"
	if [[ $2 == proc ]]; then
		mount -t proc proc "$COLD_MNT"
	else
		start_daemon "${BIN[$2]}" "$COLD_MNT" "$WORK/cold.log"
		COLD_PID=$STARTED
	fi
	echo "root_cold $("$H/dirtime" "$COLD_MNT" 1 | cut -d' ' -f1)" >>"$out"
	echo "task_cold $("$H/dirtime" "$COLD_MNT/$HOLDER/task" 1 | cut -d' ' -f1)" >>"$out"
	echo "stat_cold $("$H/stattime" "$COLD_MNT" 1 | cut -d' ' -f1)" >>"$out"
	if [[ $2 == proc ]]; then umount "$COLD_MNT"; else unmount_daemon "$COLD_MNT" "$COLD_PID"; fi
	COLD_MNT='' COLD_PID=''
}
measure_first() { # PHASE ARM
	sleep "$IDLE"
	echo "root_first $("$H/dirtime" "${MNT[$2]}" 1 | cut -d' ' -f1)" >>"$WORK/$1.$2"
	sleep "$IDLE"
	echo "task_first $("$H/dirtime" "${MNT[$2]}/$HOLDER/task" 1 | cut -d' ' -f1)" >>"$WORK/$1.$2"
	sleep "$IDLE"
	echo "stat_first $("$H/stattime" "${MNT[$2]}" 1 | cut -d' ' -f1)" >>"$WORK/$1.$2"
}
measure_warm() { # PHASE ARM
	echo "root_warm $("$H/dirtime" "${MNT[$2]}" "$REPEAT" | cut -d' ' -f1)" >>"$WORK/$1.$2"
	echo "task_warm $("$H/dirtime" "${MNT[$2]}/$HOLDER/task" "$REPEAT" | cut -d' ' -f1)" >>"$WORK/$1.$2"
	echo "stat_warm $("$H/stattime" "${MNT[$2]}" "$REPEAT" | cut -d' ' -f1)" >>"$WORK/$1.$2"
}

# The floor's root listing, first and warm: it has no task/ nor processes.
measure_floor() { # PHASE
	sleep "$IDLE"
	echo "root_first $("$H/dirtime" "$WORK/floor" 1 | cut -d' ' -f1)" >>"$WORK/$1.floor"
	echo "root_warm $("$H/dirtime" "$WORK/floor" "$REPEAT" | cut -d' ' -f1)" >>"$WORK/$1.floor"
}

phase() { # PHASE
	local r i n=${#ARMS[@]} order a
	for ((r = 0; r < ROUNDS; r++)); do
		order=()
		for ((i = 0; i < n; i++)); do order+=("${ARMS[(r + i) % n]}"); done
		for a in "${order[@]}"; do measure_cold "$1" "$a"; done
		for a in "${order[@]}"; do measure_first "$1" "$a"; done
		for a in "${order[@]}"; do measure_warm "$1" "$a"; done
		measure_floor "$1"
	done
}

# Where a first listing's time goes: the same first listing, procfast's daemon and the
# lister free (as above) or both pinned to CPU 0 (taskset), so that no FUSE round trip
# wakes the other vCPU; /proc likewise. Quiet host only.
pinned() {
	local r pm=$WORK/pinned
	start_daemon "taskset -c 0 ${BIN[procfast]}" "$pm" "$WORK/pinned.log"
	PINNED_PID=$STARTED
	for ((r = 0; r < ROUNDS; r++)); do
		sleep "$IDLE"; echo "free $("$H/dirtime" "${MNT[procfast]}" 1 | cut -d' ' -f1)" >>"$WORK/pin.procfast"
		sleep "$IDLE"; echo "pinned $(taskset -c 0 "$H/dirtime" "$pm" 1 | cut -d' ' -f1)" >>"$WORK/pin.procfast"
		sleep "$IDLE"; echo "free $("$H/dirtime" /proc 1 | cut -d' ' -f1)" >>"$WORK/pin.proc"
		sleep "$IDLE"; echo "pinned $(taskset -c 0 "$H/dirtime" /proc 1 | cut -d' ' -f1)" >>"$WORK/pin.proc"
	done
	unmount_daemon "$pm" "$PINNED_PID"
	PINNED_PID=''
}
PINNED_PID=''

START=$SECONDS
echo "churn.sh: quiet host, $ROUNDS rounds" >&2
phase quiet
echo "churn.sh: quiet host, first listings pinned to CPU 0 or not, $ROUNDS rounds" >&2
pinned
echo "churn.sh: under churn, $ROUNDS rounds" >&2
"$H/threadchurn" 0 "$CHURN_LIVE" >"$WORK/churner" </dev/null & CHURNER=$!
sleep 1
phase churn
kill -TERM "$CHURNER"
wait "$CHURNER" || true
CHURNER=''
CHURN_RATE=$(awk '{sub("/s", "", $NF); print $NF}' "$WORK/churner")
CHURN_LINE=$(cat "$WORK/churner")
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
ELAPSED=$((SECONDS - START))
ENTRIES=$("$H/dirtime" /proc 1 | cut -d' ' -f3)

# ---- report
med() { # PHASE ARM KIND
	samples_median "$(awk -v k="$3" '$1 == k {printf "%s ", $2}' "$WORK/$1.$2")"
}
us() { awk -v u="$1" 'BEGIN {printf (u >= 1000 ? "%.0f" : "%.1f"), u}'; }
LABELS=([0]=root [1]=task [2]=stat)
label() {
	case $1 in
	root) echo "root listing" ;;
	task) echo "\`$BIG-thread PID/task/\` listing" ;;
	stat) echo "stat of PID/status × every process" ;;
	esac
}
head_cols="| phase | what | when | /proc µs | procfast µs | **procfast / /proc** |"
sep="|---|---|---|---|---|---|"
if [[ -n $BASE ]]; then head_cols+=" before µs | before / /proc |"; sep+="---|---|"; fi
table=$(
	echo "$head_cols"
	echo "$sep"
	for ph in quiet churn; do
		for k in "${LABELS[@]}"; do
			for t in cold first warm; do
				p=$(med "$ph" proc "${k}_$t") f=$(med "$ph" procfast "${k}_$t")
				row="| $ph | $(label "$k") | $t | $(us "$p") | $(us "$f") | **$(ratio_of "$f" "$p")** |"
				[[ -n $BASE ]] && { b=$(med "$ph" before "${k}_$t"); row+=" $(us "$b") | $(ratio_of "$b" "$p") |"; }
				echo "$row"
			done
		done
	done
)
flat=$(
	echo "| what | when | /proc churn / quiet | procfast churn / quiet | procfast cold / warm, quiet | procfast cold / warm, churn |"
	echo "|---|---|---|---|---|---|"
	for k in "${LABELS[@]}"; do
		for t in cold first warm; do
			echo "| $(label "$k") | $t | $(ratio_of "$(med churn proc "${k}_$t")" "$(med quiet proc "${k}_$t")") |" \
				"$(ratio_of "$(med churn procfast "${k}_$t")" "$(med quiet procfast "${k}_$t")") |" \
				"$(ratio_of "$(med quiet procfast "${k}_$t")" "$(med quiet procfast "${k}_warm")") |" \
				"$(ratio_of "$(med churn procfast "${k}_$t")" "$(med churn procfast "${k}_warm")") |"
		done
	done
)
floor_table=$(
	echo "| root listing | floor quiet µs | floor churn µs | **floor churn / quiet** | procfast churn / quiet | /proc churn / quiet |"
	echo "|---|---|---|---|---|---|"
	for t in first warm; do
		q=$(med quiet floor "root_$t") c=$(med churn floor "root_$t")
		echo "| $t | $(us "$q") | $(us "$c") | **$(ratio_of "$c" "$q")** |" \
			"$(ratio_of "$(med churn procfast "root_$t")" "$(med quiet procfast "root_$t")") |" \
			"$(ratio_of "$(med churn proc "root_$t")" "$(med quiet proc "root_$t")") |"
	done
)
pmed() { samples_median "$(awk -v k="$2" '$1 == k {printf "%s ", $2}' "$WORK/pin.$1")"; }
pin_table=$(
	echo "| first root listing (quiet) | free µs | both on CPU 0 µs | free / pinned |"
	echo "|---|---|---|---|"
	for a in proc procfast; do
		echo "| $([[ $a == proc ]] && echo /proc || echo procfast) | $(us "$(pmed "$a" free)") | $(us "$(pmed "$a" pinned)") | $(ratio_of "$(pmed "$a" free)" "$(pmed "$a" pinned)") |"
	done
)
if [[ -n $PROCFAST_GIVEN ]]; then WHICH="\`$PROCFAST_GIVEN\`"
else WHICH="a Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD))"; fi
section="<!-- churn:begin -->
## churn: listings and lookups while threads start and end (issue 24, point 4)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), $((ELAPSED / 60)) min $((ELAPSED % 60)) s;
kernel $(uname -r), $(nproc) CPUs; load average $LOAD0 before, $LOAD1 after (the machine
was shared: figures are only as good as that allows).
procfast: $WHICH, \`-o uring=off\` (/dev/fuse)${BASE:+; before: \`$BASE\`, the same way}.
Host: $NPROC \`sleep\` processes and one of $BIG idle threads (\`threads $BIG --hold\`) started
for the run; the root lists $ENTRIES entries. Churn: \`build/tests/threadchurn 0 $CHURN_LIVE\`
($CHURN_LIVE threads alive, each replaced as it ends): **$CHURN_RATE threads created and ended
per second** over the churn phase ($CHURN_LINE), one CPU's worth.
cold = the first listing or pass on a new mount (procfs: a fresh \`mount -t proc\`; procfast: a
new daemon, once it answered a statfs), in the order root, task/, lookups; first = one run of a
new process on the long-lived mount after $IDLE s in which the script ran nothing; warm = the
median of $REPEAT in one process. Medians over $ROUNDS rounds, arms rotating; µs.

$table

Flatness (ratios of the medians above):

$flat

The floor: the root listing of \`bench/floor/floor_libfuse\` (\`.\`, \`..\`, \`stat\`: OPENDIR,
READDIR, READDIR, RELEASEDIR answered from memory by libfuse's multithreaded loop), timed
like procfast's in each round, right after the arms:

$floor_table

Where a first listing's time goes ($ROUNDS rounds, each after $IDLE s idle): procfast's
daemon and the lister free (the long-lived mount above), or a second daemon started under
\`taskset -c 0\` and listed by \`taskset -c 0 dirtime\`, so that no round trip (OPENDIR,
READDIR, READDIR, RELEASEDIR) wakes the other, halted vCPU; /proc the same:

$pin_table
<!-- churn:end -->"
write_section churn "$section"
printf '%s\n' "$section"
