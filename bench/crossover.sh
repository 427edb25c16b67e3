#!/usr/bin/env bash
# bench/crossover.sh — the crossover curve of issue 24, point 2: at which count of idle
# threads does a tool become faster through procfast than through /proc?
#
# For each N of THREADS_LIST and each shape of SHAPES (one: one process holding all N
# threads, `build/tests/threads N --hold`; spread: 100 such processes of N/100 threads
# each; N = 0 is the idle host, measured once for both shapes), times warm runs of
# `ps -ef`, `ps aux`, `pgrep -x sleep`, `top -bn1`, `pstree -p`, htop (its first screen:
# `printf q | script -qec htop /dev/null`, htop 3.2 has no batch mode) and a
# prometheus-node-exporter scrape (`--collector.processes`), over three arms side by side:
# /proc, procfast over io_uring (`-o uring=on`, enable_uring set Y for the run and restored)
# and procfast over /dev/fuse (`-o uring=off`). Both daemons serve at once, so one set of
# threads and one /proc series serve both transports. Per tool and N: one untimed run per
# arm, then ROUNDS rounds of one timed run per arm in rotating order (each run follows a
# run of the same tool: warm); figures are medians; ratio = procfast / /proc. The
# crossover of a tool on a transport and shape is the smallest N whose ratio is < 1.
# Each tool's floor, at the thread counts of FLOOR_AT (first shape): the synchronous
# round trips one warm run makes (counted by opcode in the log of a `procfast -f -d`
# daemon, one exact and one -o snapshot, untimed; RELEASE, RELEASEDIR, FORGET and
# INTERRUPT do not hold the tool back), times one round trip of the minimal server on
# the same transport (bench/floor/: a pread of its /stat, ROUNDS medians of 1000),
# added to the tool's time on /proc: what the tool would take through a server that
# answered at no cost of its own.
# Writes the section "crossover" of bench/RESULTS.md.
#
# Run as root: bench/crossover.sh
# Environment: THREADS_LIST (default "0 10000 30000 60000 100000 300000"), SHAPES ("one spread"),
#              ROUNDS (5), CAP (seconds a run may take, 3: a run of a tool on an arm
#              that exceeds it is killed, and that tool is no longer timed on that arm
#              and shape at this or larger N: its ratio is then "> CAP"), TOOLS (default all eight, `|`-separated),
#              FLOOR_AT (thread counts whose floor is measured, "0 30000 60000 100000": the
#              idle host, the targets' crossovers and 100,000), COUNT_CAP (seconds a
#              counted run may take, 30: each of its requests is logged), PROCFAST (default:
#              this tree built Release into the scratch directory; the helpers come from
#              that build too).
# Each tool runs as
#   unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'
# with output to /dev/null; node_exporter takes the arm's path as --path.procfs (one per
# arm, on a free localhost port, scraped with curl). pid_max and threads-max are raised
# for the run if needed and restored. On any exit it stops and unmounts everything it
# started (no mount under /tmp/procfast-bench.*, no daemon, exporter or thread holder).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
PROCFAST_GIVEN=${PROCFAST:-}
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
settings crossover.sh "THREADS_LIST=0 10000 30000 60000 100000 300000" "SHAPES=one spread" ROUNDS=5 CAP=3 \
	"TOOLS=ps -ef|ps aux|pgrep -x sleep|top -bn1|pstree -p|lsof -n -P|htop|scrape" "FLOOR_AT=0 30000 60000 100000" \
	COUNT_CAP=30
[[ -n $PROCFAST_GIVEN ]] && INVOCATION="PROCFAST=$PROCFAST_GIVEN $INVOCATION"
[[ $EUID -eq 0 ]] || { echo "crossover.sh: must run as root (mount, unshare)" >&2; exit 1; }
IFS='|' read -r -a TOOL_LIST <<<"$TOOLS"
read -r -a NS <<<"$THREADS_LIST"
read -r -a SHAPE_LIST <<<"$SHAPES"
SPREAD=100 # processes of the spread shape

# ---- install what is missing (the tools measured, the build)
PKGS=(build-essential cmake pkg-config libfuse3-dev fuse3 liburcu-dev libcap-dev procps psmisc
	util-linux curl prometheus-node-exporter htop lsof liburing-dev)
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "crossover.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
fi

# ---- cleanup: exporters, thread holders, sleeper, mounts, daemons, sysctls — on any exit
# /proc, procfast over io_uring, over /dev/fuse, and with -o snapshot over each (where the
# kernel has FUSE passthrough, 6.9+; SNAPSHOT=0 leaves them out)
FUSE_ARMS=(on off)
passthrough_kernel() { # FUSE passthrough: Linux 6.9
	local v maj min
	v=$(uname -r) && v=${v%%-*} && maj=${v%%.*} && min=${v#*.} && min=${min%%.*}
	((maj > 6 || (maj == 6 && min >= 9)))
}
[[ ${SNAPSHOT:-1} == 1 ]] && passthrough_kernel && FUSE_ARMS+=(snap_on snap_off)
ARMS=(proc "${FUSE_ARMS[@]}")
# the counting daemons (-d: each request logged), exact and -o snapshot, both over /dev/fuse
COUNT_ARMS=(count)
[[ " ${FUSE_ARMS[*]} " == *" snap_on "* ]] && COUNT_ARMS+=(count_snap)
declare -A OPTS=([on]=uring=on [off]=uring=off [snap_on]=uring=on,snapshot [snap_off]=uring=off,snapshot
	[count]=uring=off,norestart [count_snap]=uring=off,norestart,snapshot)
# which daemon counts an arm's round trips, and which floor gives a round trip's cost
declare -A COUNTER=([on]=count [off]=count [snap_on]=count_snap [snap_off]=count_snap)
declare -A FLOOR_OF=([on]=uring [off]=libfuse [snap_on]=uring [snap_off]=libfuse)
FLOORS=() # the floors' pids
declare -A MNT=([proc]=/proc) DAEMON=() NE=() PORT=() TRANSPORT=()
HOLDERS=() SPID=''
PID_MAX=$(cat /proc/sys/kernel/pid_max) THREADS_MAX=$(cat /proc/sys/kernel/threads-max)
URING_PARAM=/sys/module/fuse/parameters/enable_uring URING_WAS=
stop_pid() { # PID [SIGNAL]: ends one process this script started, and reaps it
	[[ -n $1 ]] || return 0
	kill "-${2:-TERM}" "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
stop_holders() {
	local p
	for p in "${HOLDERS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	for p in "${HOLDERS[@]}"; do wait "$p" 2>/dev/null || true; done
	HOLDERS=()
}
stop_fuse() { # ARM
	[[ -n ${DAEMON[$1]:-} ]] || return 0
	mountpoint -q "${MNT[$1]}" && { fusermount3 -u "${MNT[$1]}" 2>/dev/null || umount -l "${MNT[$1]}"; }
	stop_pid "${DAEMON[$1]}"
	unset "DAEMON[$1]"
}
cleanup() {
	local a
	for a in "${!NE[@]}"; do stop_pid "${NE[$a]}"; done
	stop_holders; stop_pid "$SPID"
	for a in "${FUSE_ARMS[@]}" "${COUNT_ARMS[@]}"; do stop_fuse "$a"; done
	for a in "${FLOORS[@]}"; do kill -TERM "$a" 2>/dev/null || true; done # a floor unmounts itself
	for a in "${FLOORS[@]}"; do wait "$a" 2>/dev/null || true; done
	unmount_all "$WORK/mnt_uring" "$WORK/mnt_libfuse"
	[[ -n $URING_WAS ]] && echo "$URING_WAS" >"$URING_PARAM"
	echo "$PID_MAX" >/proc/sys/kernel/pid_max
	echo "$THREADS_MAX" >/proc/sys/kernel/threads-max
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the build: Release, in the scratch directory (the helper `threads` comes from it),
# unless PROCFAST names a build that has its helpers beside it
B=$WORK/build
if [[ -n $PROCFAST_GIVEN && -x $(dirname "$PROCFAST_GIVEN")/tests/threads ]]; then
	B=$(dirname "$PROCFAST_GIVEN")
else
	echo "crossover.sh: building procfast (Release) in $B" >&2
	cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$B" -j2 >/dev/null
fi
PROCFAST=${PROCFAST_GIVEN:-$B/procfast}
H=$B/tests
cc -O2 -o "$WORK/readlat" "$ROOT/bench/readlat.c"
# shellcheck disable=SC2046 # pkg-config's words are flags
cc -std=gnu11 -O2 $(pkg-config --cflags fuse3) -o "$WORK/floor_libfuse" "$ROOT/bench/floor/floor_libfuse.c" \
	$(pkg-config --libs fuse3)
cc -std=gnu11 -O2 -I"$ROOT" -o "$WORK/floor_uring" "$ROOT/bench/floor/floor_uring.c" -luring -lpthread

# ---- the arms
start_fuse() { # ARM [FLAG...]: procfast -f FLAG... -o OPTS[ARM] on $WORK/ARM, waits for the mount
	local arm=$1
	MNT[$arm]=$WORK/$arm
	mkdir -p "${MNT[$arm]}"
	"$PROCFAST" -f "${@:2}" -o "${OPTS[$arm]}" "${MNT[$arm]}" >"$WORK/$arm.log" 2>&1 </dev/null &
	DAEMON[$arm]=$!
	for _ in $(seq 100); do
		mountpoint -q "${MNT[$arm]}" && [[ -e ${MNT[$arm]}/1/stat ]] && return 0
		kill -0 "${DAEMON[$arm]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "crossover.sh: $arm did not mount; log:" >&2; cat "$WORK/$arm.log" >&2; exit 1
}
free_port() { # a localhost TCP port nobody listens on and no exporter of ours holds
	local p
	for ((p = 19400; p < 19700; p++)); do
		[[ " ${PORT[*]} " == *" $p "* ]] && continue
		[[ -z $(ss -Hltn "sport = :$p") ]] && { echo "$p"; return; }
	done
	echo "crossover.sh: no free port in 19400-19699" >&2; exit 1
}
start_exporter() { # ARM: node_exporter reading the arm's procfs, on a free port
	local arm=$1
	PORT[$arm]=$(free_port)
	prometheus-node-exporter --web.listen-address="127.0.0.1:${PORT[$arm]}" \
		--path.procfs="${MNT[$arm]}" --collector.processes >>"$WORK/ne.$arm.log" 2>&1 </dev/null &
	NE[$arm]=$!
	for _ in $(seq 100); do # the landing page, not /metrics: no scrape before we time one
		curl -sf -o /dev/null "http://127.0.0.1:${PORT[$arm]}/" && return 0
		kill -0 "${NE[$arm]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "crossover.sh: node_exporter for $arm did not start; log:" >&2; tail -5 "$WORK/ne.$arm.log" >&2; exit 1
}
exporter_alive() { # ARM: restarts an exporter a scrape crashed (outside any timing)
	kill -0 "${NE[$1]}" 2>/dev/null && return 0
	wait "${NE[$1]}" 2>/dev/null || true
	NOTES+=("node_exporter on $1 crashed; restarted")
	start_exporter "$1"
}

# one run of TOOL on ARM, stdout to OUT; the tool's exit status is returned. htop draws
# its first screen on a pty of `script`, then reads the pending q and quits.
once() { # ARM TOOL [OUT]
	local arm=$1 tool=$2 out=${3:-/dev/null} cmd=$2
	[[ $tool == scrape ]] && { curl -sS -f -m "$CAP" -o "$out" "http://127.0.0.1:${PORT[$arm]}/metrics" 2>/dev/null; return; }
	[[ $tool == htop ]] && cmd="script -qec htop /dev/null"
	printf q | HTOPRC=$WORK/htoprc TERM=xterm timeout -k 1 "$CAP" \
		unshare -m --propagation private sh -c "mount --bind ${MNT[$arm]} /proc && exec $cmd" >"$out" 2>/dev/null
}
timed() { # ARM TOOL: µs of one run, wall clock; "cap" if it ran out of CAP (killed)
	local t0 rc=0
	t0=${EPOCHREALTIME/./}
	once "$1" "$2" || rc=$?
	if [[ $rc -eq 124 || $rc -eq 28 || $rc -eq 137 ]]; then echo cap; else echo $((${EPOCHREALTIME/./} - t0)); fi
}

# CPU ticks (utime+stime) both daemons' processes have used so far
tree_pids() {
	local p kids
	for p; do
		echo "$p"
		mapfile -t kids < <(pgrep -P "$p" || true)
		((${#kids[@]} == 0)) || tree_pids "${kids[@]}"
	done
}
ticks() { { cat "${DSTAT[@]}" 2>/dev/null || true; } | awk '{sub(/.*\) /, ""); t += $12 + $13} END {print t + 0}'; }
HZ=$(getconf CLK_TCK)
quiet() { # until the daemons use under 50 ms of CPU in a second (their event listeners have
	# followed every thread start or exit), at most 60 s; prints the seconds waited
	local i c0
	for ((i = 1; i <= 60; i++)); do
		c0=$(ticks); sleep 1
		(($(ticks) - c0 < HZ / 20)) && break
	done
	echo "$i"
}

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g |
	awk '{a[NR] = $1} END {if (!NR) print "n/a"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
ms() { awk -v u="$1" 'BEGIN {printf (u >= 10000 ? "%.0f" : "%.1f"), u / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf (b > 0 ? "%.2f" : "n/a"), a / b}'; }

# ---- the threads of one configuration: SHAPE N
start_holders() {
	local shape=$1 n=$2 k per count i
	[[ $n -eq 0 ]] && return 0
	if [[ $shape == one ]]; then count=1 per=$n; else count=$SPREAD per=$((n / SPREAD)); fi
	# a holder writes its line once all its threads run: an earlier configuration's
	# line would let the rounds begin while they are still being made
	rm -f "$WORK"/holder.*
	for ((i = 0; i < count; i++)); do
		"$H/threads" "$per" --hold >"$WORK/holder.$i" </dev/null &
		HOLDERS+=($!)
	done
	for ((i = 0; i < count; i++)); do
		until [[ -s $WORK/holder.$i ]]; do
			kill -0 "${HOLDERS[i]}" 2>/dev/null || { echo "crossover.sh: threads helper died" >&2; exit 1; }
			sleep 0.2
		done
	done
	k=$(cut -d' ' -f4 /proc/loadavg) # runnable/total tasks
	echo "crossover.sh: $shape $n: $count holders up, $k tasks on the host" >&2
}

# ---- one configuration: KEY (shape|N); outcome of one untimed run per arm, then the rounds
declare -A S BAD DROP
NOTES=()
measure() {
	local key=$1 shape=${1%|*} tool arm r k rc t out=$WORK/out
	for tool in "${TOOL_LIST[@]}"; do
		for arm in "${ARMS[@]}"; do # the untimed run, kept for sanity: status and lines
			[[ -z ${DROP[$shape|$tool|$arm]:-} ]] || continue
			[[ $tool == scrape ]] && exporter_alive "$arm"
			rc=0; once "$arm" "$tool" "$out" || rc=$?
			if [[ $rc -eq 124 || $rc -eq 28 || $rc -eq 137 ]]; then
				DROP[$shape|$tool|$arm]=${key#*|}
			elif [[ $rc -ne 0 || ! -s $out ]]; then
				BAD[$key|$tool|$arm]="rc $rc, $(wc -l <"$out") lines"
			fi
		done
		for ((r = 0; r < ROUNDS; r++)); do
			for ((k = 0; k < ${#ARMS[@]}; k++)); do # rotate which arm goes first
				arm=${ARMS[(r + k) % ${#ARMS[@]}]}
				[[ -z ${DROP[$shape|$tool|$arm]:-} ]] || continue
				[[ $tool == scrape ]] && exporter_alive "$arm"
				t=$(timed "$arm" "$tool")
				[[ $t != cap ]] || { DROP[$shape|$tool|$arm]=${key#*|}; continue; }
				S[$key|$tool|$arm]+="$t "
			done
		done
	done
	for arm in "${FUSE_ARMS[@]}"; do # a daemon that died makes every later figure meaningless
		kill -0 "${DAEMON[$arm]}" 2>/dev/null && continue
		echo "crossover.sh: procfast ($arm) died; log:" >&2; tail -20 "$WORK/$arm.log" >&2; exit 1
	done
}

# ---- each tool's floor at one configuration: KEY
start_floor() { # NAME: bench/floor/floor_NAME on $WORK/mnt_NAME, until its /stat answers
	local m=$WORK/mnt_$1
	mkdir -p "$m"
	"$WORK/floor_$1" -f "$m" </dev/null >/dev/null 2>"$WORK/floor_$1.log" &
	FLOORS+=($!)
	for _ in $(seq 100); do
		timeout 1 cat "$m/stat" >/dev/null 2>&1 && return 0 # io_uring: once every queue registered
		sleep 0.1
	done
	echo "crossover.sh: floor_$1 did not serve; log:" >&2; cat "$WORK/floor_$1.log" >&2; exit 1
}
ASYNC_OPS='^(RELEASE|RELEASEDIR|FORGET|BATCH_FORGET|INTERRUPT)$'
trips() { # ARM TOOL: the synchronous requests of one warm run through the counting daemon ARM
	# (each logged: a run may take COUNT_CAP s)
	local log=$WORK/$1.log l0 rc=0
	[[ $2 == scrape ]] && exporter_alive "$1"
	CAP=$COUNT_CAP once "$1" "$2" || rc=$?
	[[ $rc -eq 124 || $rc -eq 28 || $rc -eq 137 ]] && { echo cap; return; }
	l0=$(wc -l <"$log")
	CAP=$COUNT_CAP once "$1" "$2" || rc=$?
	[[ $rc -eq 124 || $rc -eq 28 || $rc -eq 137 ]] && { echo cap; return; }
	sleep 0.3 # the log lines of the last replies
	tail -n +"$((l0 + 1))" "$log" | grep -o '^unique: [0-9]*, opcode: [A-Z_]*' | sed 's/.*: //' |
		grep -cvE "$ASYNC_OPS" || true
}
declare -A TRIPS FS LIST
floor_measure() {
	local key=$1 tool arm r f
	for tool in "${TOOL_LIST[@]}"; do
		for arm in "${COUNT_ARMS[@]}"; do
			TRIPS[$key|$tool|$arm]=cap # not counted where /proc itself ran over CAP
			[[ -n ${DROP[${key%|*}|$tool|proc]:-} ]] || TRIPS[$key|$tool|$arm]=$(trips "$arm" "$tool")
		done
	done
	for ((r = 0; r < ROUNDS; r++)); do
		for f in uring libfuse; do
			FS[$key|$f]+="$("$WORK/readlat" pread "$WORK/mnt_$f/stat" 1000 | cut -d' ' -f1) "
		done
		for arm in "${ARMS[@]}"; do # the root listing each tool makes once
			LIST[$key|$arm]+="$("$H/dirtime" "${MNT[$arm]}" 5 | cut -d' ' -f1) "
		done
	done
}

# ---- main
OTHERS=$(pgrep -c -x procfast || true)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$SECONDS
MAXN=$(printf '%s\n' "${NS[@]}" | sort -n | tail -1)
echo "$((PID_MAX > 4194304 ? PID_MAX : 4194304))" >/proc/sys/kernel/pid_max
((THREADS_MAX >= MAXN + 100000)) || echo $((MAXN + 100000)) >/proc/sys/kernel/threads-max
URING_WAS=$(cat "$URING_PARAM")
echo Y >"$URING_PARAM"
for arm in "${FUSE_ARMS[@]}"; do
	start_fuse "$arm"
	grep -q "serving through io_uring" "$WORK/$arm.log" && TRANSPORT[$arm]="io_uring" || TRANSPORT[$arm]="/dev/fuse"
	[[ $arm == snap_* ]] && TRANSPORT[$arm]+=", -o snapshot"
done
for arm in "${COUNT_ARMS[@]}"; do start_fuse "$arm" -d; done
start_floor uring
start_floor libfuse
mapfile -t DPIDS < <(for arm in "${FUSE_ARMS[@]}" "${COUNT_ARMS[@]}"; do tree_pids "${DAEMON[$arm]}"; done)
mapfile -t DSTAT < <(printf '/proc/%s/stat\n' "${DPIDS[@]}")
for arm in "${ARMS[@]}" "${COUNT_ARMS[@]}"; do start_exporter "$arm"; done
sleep 3600 >/dev/null 2>&1 & SPID=$! # what `pgrep -x sleep` finds
PROCS0=$(find /proc -mindepth 1 -maxdepth 1 -name '[0-9]*' | wc -l)

declare -A WAITED SECS LOADS
for n in "${NS[@]}"; do
	for shape in "${SHAPE_LIST[@]}"; do
		key="$shape|$n"
		if [[ $n -eq 0 && $shape != "${SHAPE_LIST[0]}" ]]; then # the idle host: measured once
			for k in "${!S[@]}"; do
				rest=${k#*|}
				[[ $k != "${SHAPE_LIST[0]}|0|"* ]] || S[$shape|$rest]=${S[$k]}
			done
			continue
		fi
		t0=$SECONDS
		start_holders "$shape" "$n"
		WAITED[$key]=$(quiet)
		LOADS[$key]=$(cut -d' ' -f1 /proc/loadavg)
		echo "crossover.sh: $shape $n: measuring (load ${LOADS[$key]})" >&2
		measure "$key"
		# shellcheck disable=SC2153 # FLOOR_AT comes from settings
		[[ " $FLOOR_AT " == *" $n "* && $shape == "${SHAPE_LIST[0]}" ]] && floor_measure "$key"
		stop_holders
		SECS[$key]=$((SECONDS - t0))
	done
done
quiet >/dev/null
ELAPSED=$((SECONDS - T_START))
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
for arm in "${!NE[@]}"; do stop_pid "${NE[$arm]}"; done
NE=()
DLOG=$(for arm in "${FUSE_ARMS[@]}"; do grep -v -e 'serving' -e '^$' "$WORK/$arm.log" | sort | uniq -c | sort -rn | head -3 | sed "s/^/    $arm: /"; done)

# ---- report
label() { case $1 in scrape) echo "node_exporter scrape" ;; htop) echo "htop (first screen)" ;; *) echo "\`$1\`" ;; esac; }
cell_median() { # SHAPE N TOOL ARM: the median, or n/a where the arm was not timed (over CAP)
	local d=${DROP[$1|$3|$4]:-}
	if [[ -n $d && $2 -ge $d ]]; then echo n/a; else median "${S[$1|$2|$3|$4]:-}"; fi
}
cross() { # SHAPE ARM TOOL: the smallest N whose ratio is < 1; and whether it stays so
	local shape=$1 arm=$2 tool=$3 n p f first="" back=""
	for n in "${NS[@]}"; do
		p=$(cell_median "$shape" "$n" "$tool" proc) f=$(cell_median "$shape" "$n" "$tool" "$arm")
		if [[ $f != n/a && $p != n/a ]] && awk -v a="$f" -v b="$p" 'BEGIN {exit !(a < b)}'; then
			[[ -n $first ]] || first=$n
		elif [[ -n $first && -z $back ]]; then back=$n; fi
	done
	if [[ -z $first ]]; then echo "not within the range"
	else echo "$first${back:+ (≥ 1 again at $back)}"; fi
}
table() { # SHAPE ARM
	local shape=$1 arm=$2 tool n p f line
	line="| tool |"; for n in "${NS[@]}"; do line+=" $n |"; done
	echo "$line crossover |"
	line="|---|"; for _ in "${NS[@]}"; do line+="---|"; done
	echo "$line---|"
	for tool in "${TOOL_LIST[@]}"; do
		line="| $(label "$tool") |"
		for n in "${NS[@]}"; do
			p=$(cell_median "$shape" "$n" "$tool" proc) f=$(cell_median "$shape" "$n" "$tool" "$arm")
			if [[ $p == n/a ]]; then
				line+=" /proc and procfast > ${CAP} s, not timed"
			elif [[ $f == n/a ]]; then
				line+=" > ${CAP} s, not timed ($(ms "$p") / > ${CAP} s)"
			else
				line+=" **$(ratio "$f" "$p")** ($(ms "$p") / $(ms "$f"))"
			fi
			[[ -n ${BAD[$shape|$n|$tool|$arm]:-} || -n ${BAD[$shape|$n|$tool|proc]:-} ]] && line+=" ⚠"
			line+=" |"
		done
		echo "$line $(cross "$shape" "$arm" "$tool") |"
	done
}
summary() {
	local tool shape arm line
	line="| tool |"
	for shape in "${SHAPE_LIST[@]}"; do for arm in "${FUSE_ARMS[@]}"; do line+=" $shape, ${TRANSPORT[$arm]} |"; done; done
	echo "$line"
	echo "|---|$(for _ in "${SHAPE_LIST[@]}"; do for _ in "${FUSE_ARMS[@]}"; do printf -- '---|'; done; done)"
	for tool in "${TOOL_LIST[@]}"; do
		line="| $(label "$tool") |"
		for shape in "${SHAPE_LIST[@]}"; do for arm in "${FUSE_ARMS[@]}"; do line+=" $(cross "$shape" "$arm" "$tool") |"; done; done
		echo "$line"
	done
}
# the floor of each tool at KEY: its time on /proc with the arm's root listing in place of
# procfs's (the index's, whose cost does not grow with threads), plus its round trips at
# the floor's cost
floor_cell() { # KEY TOOL ARM
	local key=$1 tool=$2 arm=$3 p f n rtt lp la
	p=$(cell_median "${key%|*}" "${key#*|}" "$tool" proc) f=$(cell_median "${key%|*}" "${key#*|}" "$tool" "$arm")
	n=${TRIPS[$key|$tool|${COUNTER[$arm]}]} rtt=$(median "${FS[$key|${FLOOR_OF[$arm]}]}")
	lp=$(median "${LIST[$key|proc]}") la=$(median "${LIST[$key|$arm]}")
	if [[ $p == n/a || $n == cap ]]; then echo "not counted"; return; fi
	awk -v p="$p" -v f="$f" -v n="$n" -v rtt="$rtt" -v lp="$lp" -v la="$la" 'BEGIN {
		printf "**%.2f** · %s", (p - lp + la + n * rtt / 1000) / p, (f == "n/a" ? "> CAP" : sprintf("%.2f", f / p))
		if (f != "n/a" && n > 0) printf " · %.1f µs", (f - p + lp - la) / n }'
}
floor_table() { # KEY
	local key=$1 tool arm line p
	line="| tool | round trips"
	[[ ${#COUNT_ARMS[@]} -gt 1 ]] && line+=" (exact / -o snapshot)"
	line+=" | /proc ms |"
	for arm in "${FUSE_ARMS[@]}"; do line+=" ${TRANSPORT[$arm]} |"; done
	echo "$line"
	echo "|---|---|---|$(for _ in "${FUSE_ARMS[@]}"; do printf -- '---|'; done)"
	for tool in "${TOOL_LIST[@]}"; do
		line="| $(label "$tool") | ${TRIPS[$key|$tool|count]}"
		[[ ${#COUNT_ARMS[@]} -gt 1 ]] && line+=" / ${TRIPS[$key|$tool|count_snap]}"
		p=$(cell_median "${key%|*}" "${key#*|}" "$tool" proc)
		if [[ $p == n/a ]]; then line+=" | > ${CAP} s |"; else line+=" | $(ms "$p") |"; fi
		for arm in "${FUSE_ARMS[@]}"; do line+=" $(floor_cell "$key" "$tool" "$arm") |"; done
		echo "$line"
	done
}
listings() { # KEY: the arms' root listings, µs
	local arm
	printf '/proc %s µs' "$(median "${LIST[$1|proc]}")"
	for arm in "${FUSE_ARMS[@]}"; do printf ', %s %s µs' "${TRANSPORT[$arm]}" "$(median "${LIST[$1|$arm]}")"; done
}
floor_tables() {
	local key
	for key in "${!FS[@]}"; do echo "${key%|*}"; done | sort -u -t'|' -k2,2n | while read -r key; do
		printf '\n#### %s\n\nOne round trip at the floor: io_uring %s µs, /dev/fuse %s µs. The root listing: %s (medians).\n\n%s\n' \
			"$( [[ ${key#*|} == 0 ]] && echo "the idle host" || echo "${key#*|} idle threads, shape ${key%|*}")" \
			"$(ms "$(median "${FS[$key|uring]}")")" "$(ms "$(median "${FS[$key|libfuse]}")")" \
			"$(listings "$key")" "$(floor_table "$key")"
	done
}
configs() {
	local n shape key
	for n in "${NS[@]}"; do for shape in "${SHAPE_LIST[@]}"; do
		key="$shape|$n"
		[[ -n ${SECS[$key]:-} ]] && printf '%s %s: %s s (daemons quiet after %s s, 1-min load %s); ' \
			"$shape" "$n" "${SECS[$key]}" "${WAITED[$key]}" "${LOADS[$key]}"
	done; done
}
bad() {
	local k
	for k in "${!BAD[@]}"; do echo "- ⚠ ${k//|/ }: ${BAD[$k]}"; done | sort
	for k in "${NOTES[@]}"; do echo "- $k"; done | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/\2 (\1 times)/'
}
BUILD="Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- fs cache CMakeLists.txt || echo ', with uncommitted changes')) in the scratch directory"
[[ -n $PROCFAST_GIVEN ]] && BUILD="\`$PROCFAST_GIVEN\` (build type: $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$(dirname "$PROCFAST_GIVEN")/CMakeCache.txt" 2>/dev/null || echo unknown))"
tables=$(for shape in "${SHAPE_LIST[@]}"; do for arm in "${FUSE_ARMS[@]}"; do
	case $shape in
	one) d="one process holding all N threads (\`build/tests/threads N --hold\`)" ;;
	*) d="$SPREAD processes of N/$SPREAD threads each" ;;
	esac
	printf '\n### %s, over %s\n\n%s\n' "$d" "${TRANSPORT[$arm]}" "$(table "$shape" "$arm")"
done; done)

section=$(cat <<EOF
<!-- crossover:begin -->
## crossover: where procfast becomes faster than /proc as idle threads grow (issue 24, point 2)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), $((ELAPSED / 60)) min $((ELAPSED % 60)) s;
kernel $(uname -r), $(nproc) CPUs; load average $LOAD0 before, $LOAD1 after; other procfast
processes at start: $OTHERS (the machine was shared). procfast: $BUILD; ${#FUSE_ARMS[@]} daemons serving at
once, $(for arm in "${FUSE_ARMS[@]}"; do printf '`procfast -f -o %s` (%s); ' "${OPTS[$arm]}" "${TRANSPORT[$arm]}"; done)enable_uring set Y
for the run and restored. $PROCS0 processes at start, besides the threads.
Each tool: \`unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'\`, output to
/dev/null, wall clock; htop: \`printf q | script -qec htop /dev/null\` in that namespace (htop
$(htop --version 2>/dev/null | awk '{print $2}') has no batch mode: it scans twice, draws its first screen, reads the q and quits);
the scrape: \`curl http://127.0.0.1:PORT/metrics\` from \`prometheus-node-exporter --path.procfs=SRC
--collector.processes\` (one per arm). Per tool and configuration: one untimed run per arm, then
$ROUNDS rounds of one run per arm in rotating order (warm); medians. Cells: **procfast / /proc**
(/proc ms / procfast ms); "> $CAP s" = a procfast run took longer than CAP = $CAP s and was killed: that tool was
not timed further on that arm and shape (cost bound of the run); ⚠ = a run failed or printed nothing (see below). Column = idle threads
added (0 = the idle host, measured once for both shapes). Crossover = the smallest N whose ratio is < 1.
Time per configuration: $(configs)
$tables

### Crossover per tool (the smallest thread count at which procfast is faster than /proc)

$(summary)

### Each tool's floor: its round trips at the minimal server's cost

Round trips: the synchronous requests of one warm run, counted by opcode in the log of a
\`procfast -f -d\` daemon ($(for arm in "${COUNT_ARMS[@]}"; do printf '`-o %s`; ' "${OPTS[$arm]}"; done)RELEASE, RELEASEDIR, FORGET and
INTERRUPT left out: the kernel sends them without waiting). A round trip's cost at the floor:
a pread of the minimal server's \`/stat\` (\`bench/floor/\`: \`floor_uring\` for io_uring,
\`floor_libfuse\` for /dev/fuse), $ROUNDS medians of 1000 in the same configuration. Each tool
lists the root once: its time on /proc holds procfs's listing, which grows with threads,
where procfast lists its index (\`build/tests/dirtime\`, $ROUNDS medians of 5 listings).
Cells: **floor** = (/proc − procfs's listing + the arm's listing + round trips × that
cost) ÷ /proc, what a server that answered every other request at no cost of its own would
give · procfast ÷ /proc (the tables above) · procfast's time beyond that floor's part
of /proc, per round trip.
$(floor_tables)

Targets (issue 24): the crossover for \`ps -ef\` at ≤ 30,000 threads over io_uring, ≤ 60,000 over /dev/fuse.
With \`-o snapshot\`: idle host \`ps -ef\` ≤ 1.4×, scrape ≤ 1.2×; beside 100,000 threads \`ps -ef\` ≤ 0.7×.
Failed runs and notes:
$(bad)
Daemons' stderr, besides the serving line (most frequent first):
$DLOG
<!-- crossover:end -->
EOF
)
write_section crossover "$section"
printf '%s\n' "$section"
