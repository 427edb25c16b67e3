#!/usr/bin/env bash
# bench/tools.sh — real tools through procfast against /proc (the targets of issue 11),
# side by side in one run, three arms: /proc (the real procfs), procfast (a Release
# build of this tree) and `bindfs /proc` (the naive FUSE mirror):
#   1. idle host: `ps -ef`, `ps aux`, `pstree -p`, `lsof -n -P`, `top -bn1`, a full
#      prometheus-node-exporter scrape (`--path.procfs` at the arm, `--collector.processes`)
#      and the root listing (build/tests/dirtime), each cold and warm;
#   2. requests per process for `ps -ef` and per fd for `lsof -n -P`, cold and warm,
#      counted by opcode from a second procfast run with `-f -d` (untimed);
#   3. procfast daemon CPU per `ps -ef` and per scrape (utime+stime of its processes);
#   4. one extra process of THREADS idle threads: `ps -ef`, `pgrep -x sleep`, `top -bn1`
#      and the root listing, cold and warm.
# Cold is the first run after IDLE s in which nothing ran (the case of a monitoring
# scrape); warm is a run right after another of the same tool on the same arm. Each
# round idles once per tool, then times the arms' cold runs in rotating order, then
# each arm's warm run (after one untimed run), again in rotating order; figures are
# medians over ROUNDS rounds. Writes the section "tools" of bench/RESULTS.md.
#
# Run as root: bench/tools.sh
# Environment: ROUNDS (default 9), THREADS (the big process, default 100000), IDLE
#              (seconds before a cold run, default 5), REPEAT (listings of a warm root
#              listing, default 50), CPU_RUNS (back-to-back runs for daemon CPU, 20),
#              PROCFAST (daemon binary; default: this tree built Release into the
#              scratch directory), URING (procfast's -o uring=: on, the default, with
#              /sys/module/fuse/parameters/enable_uring set Y for the run and restored;
#              off for /dev/fuse).
# Installs what it needs (Debian: apt-get update only if something is missing).
# Every arm of a tool runs as
#   unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'
# with output to /dev/null; node_exporter instead takes the arm's path as
# --path.procfs (one exporter per arm, on a free localhost port, scraped with curl);
# the root listing is `dirtime SRC` directly. On any exit it unmounts and stops
# everything it started (no mount under /tmp/procfast-bench.*, no daemon, no exporter).
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
PROCFAST_GIVEN=${PROCFAST:-}
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"

ROUNDS=${ROUNDS:-9} THREADS=${THREADS:-100000} IDLE=${IDLE:-5} REPEAT=${REPEAT:-50}
CPU_RUNS=${CPU_RUNS:-20} URING=${URING:-on}
INVOCATION="$(for v in ROUNDS THREADS IDLE REPEAT CPU_RUNS URING; do
	case "$v=${!v}" in ROUNDS=9 | THREADS=100000 | IDLE=5 | REPEAT=50 | CPU_RUNS=20 | URING=on) ;;
	*) printf '%s=%s ' "$v" "${!v}" ;; esac
done; [[ -n $PROCFAST_GIVEN ]] && printf 'PROCFAST=%s ' "$PROCFAST_GIVEN"; true)bench/tools.sh"
[[ $EUID -eq 0 ]] || { echo "tools.sh: must run as root (mount, unshare)" >&2; exit 1; }

# ---- install what is missing (the tools measured, the arms, the build)
PKGS=(build-essential cmake pkg-config libfuse3-dev fuse3 liburcu-dev libcap-dev procps psmisc
	lsof util-linux iproute2 bindfs curl prometheus-node-exporter)
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "tools.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
fi

# ---- cleanup: exporters, thread holder, sleeper, mounts, daemons, sysctls — on any exit
declare -A MNT=([proc]=/proc) DAEMON=() NE=() PORT=() NE_CRASHES=()
TPID='' SPID=''
PID_MAX=$(cat /proc/sys/kernel/pid_max) THREADS_MAX=$(cat /proc/sys/kernel/threads-max)
URING_PARAM=/sys/module/fuse/parameters/enable_uring URING_WAS=
stop_pid() { # PID [SIGNAL]: ends one process this script started, and reaps it
	[[ -n $1 ]] || return 0
	kill "-${2:-TERM}" "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
stop_fuse() { # NAME
	[[ -n ${DAEMON[$1]:-} ]] || return 0
	mountpoint -q "${MNT[$1]}" && { fusermount3 -u "${MNT[$1]}" 2>/dev/null || umount -l "${MNT[$1]}"; }
	stop_pid "${DAEMON[$1]}"
	unset "DAEMON[$1]"
}
cleanup() {
	local a
	for a in "${!NE[@]}"; do stop_pid "${NE[$a]}"; done
	stop_pid "$TPID" KILL; stop_pid "$SPID"
	for a in debug bindfs procfast; do stop_fuse "$a"; done
	[[ -n $URING_WAS ]] && echo "$URING_WAS" >"$URING_PARAM"
	echo "$PID_MAX" >/proc/sys/kernel/pid_max
	echo "$THREADS_MAX" >/proc/sys/kernel/threads-max
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the build: a Release build of this tree in the scratch directory (the test helpers
# dirtime and threads come from it too)
B=$WORK/build
echo "tools.sh: building procfast (Release) in $B" >&2
cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$B" -j2 >/dev/null
PROCFAST=${PROCFAST_GIVEN:-$B/procfast}
H=$B/tests

# ---- the arms
start_fuse() { # NAME CMD...: runs CMD... $WORK/NAME in the foreground, waits for the mount
	local name=$1; shift
	MNT[$name]=$WORK/$name
	mkdir -p "${MNT[$name]}"
	"$@" "${MNT[$name]}" >"$WORK/$name.log" 2>&1 </dev/null &
	DAEMON[$name]=$!
	for _ in $(seq 100); do
		mountpoint -q "${MNT[$name]}" && [[ -e ${MNT[$name]}/1/stat ]] && return 0
		kill -0 "${DAEMON[$name]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "tools.sh: $name did not mount; log:" >&2; cat "$WORK/$name.log" >&2; exit 1
}
free_port() { # a localhost TCP port nobody listens on and no exporter of ours holds
	local p
	for ((p = 19100; p < 19400; p++)); do
		[[ " ${PORT[*]} " == *" $p "* ]] && continue
		[[ -z $(ss -Hltn "sport = :$p") ]] && { echo "$p"; return; }
	done
	echo "tools.sh: no free port in 19100-19399" >&2; exit 1
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
	echo "tools.sh: node_exporter for $arm did not start; log:" >&2; tail -5 "$WORK/ne.$arm.log" >&2; exit 1
}
exporter_alive() { # ARM: restarts an exporter a scrape crashed (outside any timing)
	kill -0 "${NE[$1]}" 2>/dev/null && return 0
	wait "${NE[$1]}" 2>/dev/null || true
	NE_CRASHES[$1]=$((${NE_CRASHES[$1]:-0} + 1))
	start_exporter "$1"
}

# one run of TOOL on ARM, stdout to $3 and stderr to $4 (default /dev/null); status kept
once() { # ARM TOOL [OUT [ERR]]
	local arm=$1 tool=$2 out=${3:-/dev/null} err=${4:-/dev/null}
	case $tool in
	scrape) curl -sS -f -o "$out" "http://127.0.0.1:${PORT[$arm]}/metrics" 2>"$err" ;;
	dirtime) "$H/dirtime" "${MNT[$arm]}" 1 >"$out" 2>"$err" ;;
	*) unshare -m --propagation private sh -c "mount --bind ${MNT[$arm]} /proc && exec $tool" >"$out" 2>"$err" ;;
	esac
}
# µs of one run: wall clock around the run; for the root listing, dirtime's own figure
# (one listing cold, the median of REPEAT warm: the process start is not the listing)
timed() { # ARM TOOL cold|warm
	local arm=$1 tool=$2 t0
	[[ $tool == scrape ]] && exporter_alive "$arm"
	if [[ $tool == dirtime ]]; then
		"$H/dirtime" "${MNT[$arm]}" "$([[ $3 == cold ]] && echo 1 || echo "$REPEAT")" | cut -d' ' -f1
		return
	fi
	t0=${EPOCHREALTIME/./}
	once "$arm" "$tool" || true
	echo $((${EPOCHREALTIME/./} - t0))
}

# CPU ticks (utime+stime) the procfast daemon's processes (supervisor, server, helpers)
# have used so far, from their /proc/PID/stat
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
tick_ms() { awk -v t="$1" -v n="$2" -v hz="$HZ" 'BEGIN {printf "%.1f", t * 1000 / hz / n}'; }

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g |
	awk '{a[NR] = $1} END {if (!NR) print "n/a"; else print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
ms() { awk -v u="$1" 'BEGIN {printf "%.1f", u / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf (b > 0 ? "%.2f" : "n/a"), a / b}'; }

# ---- outcome of one untimed run per arm: status, lines, stderr; an arm that fails or prints
# nothing is marked broken (its time is then no benchmark)
declare -A OK NOTE
outcome() { # KEY TOOL ARM
	local key=$1 tool=$2 arm=$3 rc=0 e out=$WORK/out.$3 err=$WORK/err.$3
	[[ $tool == scrape ]] && exporter_alive "$arm"
	once "$arm" "$tool" "$out" "$err" || rc=$?
	[[ $rc -eq 0 && -s $out ]] && OK[$key|$arm]=ok || OK[$key|$arm]=broken
	NOTE[$key|$arm]="$arm: rc $rc, $(wc -l <"$out") lines"
	if [[ -s $err ]]; then
		e=$(head -1 "$err" | cut -c1-70 | tr '|`' '/\047')
		NOTE[$key|$arm]+=", $(wc -l <"$err") stderr (\"$e\")"
	fi
	if [[ $tool == scrape ]]; then
		exporter_alive "$arm"
		[[ -s $out ]] && NOTE[$key|$arm]+=", collectors failing: $(grep -c '^node_scrape_collector_success.* 0$' "$out" || true)"
	fi
	if [[ $tool == lsof* && $arm != bindfs ]]; then
		# a FUSE mount gives its own st_dev to whatever its entries' stat returns: lines whose
		# DEVICE is the mount's show where lsof's output changed (pipes, sockets, anon inodes)
		NOTE[$key|$arm]+=", TYPE unknown on $(grep -c ' unknown ' "$out" || true) lines"
		[[ $arm == proc ]] || NOTE[$key|$arm]+=", DEVICE = the mount's own ($(stat -c '%Hd,%Ld' "${MNT[$arm]}")) on $(grep -cw -- "$(stat -c '%Hd,%Ld' "${MNT[$arm]}")" "$out" || true) lines"
	fi
	return 0
}
# the series of a scrape (metric names and labels, values dropped) that one arm has and
# /proc has not, and the reverse; also which collectors failed on the arm only
scrape_diff() { # KEY ARM
	local key=$1 arm=$2 plus minus
	[[ -s $WORK/out.$arm && -s $WORK/out.proc ]] || return 0
	grep -v '^#' "$WORK/out.proc" | sed 's/ [^ ]*$//' | sort >"$WORK/series.proc"
	grep -v '^#' "$WORK/out.$arm" | sed 's/ [^ ]*$//' | sort >"$WORK/series.$arm"
	plus=$(comm -13 "$WORK/series.proc" "$WORK/series.$arm" | wc -l)
	minus=$(comm -23 "$WORK/series.proc" "$WORK/series.$arm" | wc -l)
	NOTE[$key|$arm]+=", series vs /proc: +$plus −$minus"
	comm -3 "$WORK/series.proc" "$WORK/series.$arm" | sed 's/{.*//; s/^\t/+/; s/^[^+]/−&/' |
		sort | uniq -c | sort -rn | head -3 | awk '{printf "%s%s %s", (NR > 1 ? ", " : " ("), $2, $1} END {if (NR) printf ")"}' \
		>"$WORK/diff.$arm"
	NOTE[$key|$arm]+=$(<"$WORK/diff.$arm")
}
# collectors the exporter's log names as failed for ARM but not for /proc; a panic
exporter_log_note() { # ARM
	local arm=$1 only panic
	only=$(comm -13 <(grep -o 'collector failed" name=[a-z_]*' "$WORK/ne.proc.log" | sed 's/.*=//' | sort -u) \
		<(grep -o 'collector failed" name=[a-z_]*' "$WORK/ne.$arm.log" | sed 's/.*=//' | sort -u) | paste -sd, -)
	panic=$(grep -m1 '^panic:' "$WORK/ne.$arm.log" | cut -c1-60 || true)
	[[ -n $panic ]] && panic+=" in $(grep -m1 -o '[a-z_]*_linux\.go:[0-9]*' "$WORK/ne.$arm.log" || echo '?')"
	[[ -n $only ]] && printf '; node_exporter log (%s): collectors failed only here: %s' "$arm" "$only"
	[[ -n $panic ]] && printf '; node_exporter %s crashed %s times (restarted before the next scrape): "%s"' \
		"$arm" "${NE_CRASHES[$arm]:-0}" "$panic"
	return 0
}

# ---- one section of rounds: SECTION TOOL...
ARMS=(proc procfast bindfs)
declare -A S CPU
IDLE_TICKS=0 IDLE_S=0 LOADS=()
rounds() {
	local sec=$1 r ti k arm tool temp t c0 n; shift
	local tools=("$@")
	n=${#tools[@]}
	for ((ti = 0; ti < n; ti++)); do
		for arm in "${ARMS[@]}"; do outcome "$sec|${tools[ti]}" "${tools[ti]}" "$arm"; done
		if [[ ${tools[ti]} == scrape ]]; then for arm in procfast bindfs; do scrape_diff "$sec|scrape" "$arm"; done; fi
	done
	for ((r = 0; r < ROUNDS; r++)); do
		LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
		echo "tools.sh: $sec round $((r + 1))/$ROUNDS (load ${LOADS[-1]})" >&2
		for ((ti = 0; ti < n; ti++)); do
			tool=${tools[ti]}
			if [[ $tool == scrape ]]; then for arm in "${ARMS[@]}"; do exporter_alive "$arm"; done; fi
			c0=$(ticks); sleep "$IDLE"
			IDLE_TICKS=$((IDLE_TICKS + $(ticks) - c0)) IDLE_S=$((IDLE_S + IDLE))
			for temp in cold warm; do
				for ((k = 0; k < 3; k++)); do # rotate which arm goes first
					arm=${ARMS[(r + ti + k) % 3]}
					[[ $temp == warm ]] && { [[ $tool == scrape ]] && exporter_alive "$arm"; once "$arm" "$tool" || true; }
					c0=$(ticks)
					t=$(timed "$arm" "$tool" "$temp")
					[[ $arm == procfast ]] && CPU[$sec|$tool|$temp]=$((${CPU[$sec|$tool|$temp]:-0} + $(ticks) - c0))
					S[$sec|$tool|$arm|$temp]+="$t "
				done
			done
		done
		# a daemon that died mid-run makes every later figure meaningless: stop here
		for arm in procfast bindfs; do
			kill -0 "${DAEMON[$arm]}" 2>/dev/null && continue
			echo "tools.sh: $arm daemon died; log:" >&2; tail -20 "$WORK/$arm.log" >&2; exit 1
		done
	done
}

# open fds of every process (entries of /proc/PID/fd; processes that vanish meanwhile skipped)
count_fds() { { find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 2>/dev/null || true; } | wc -l; }

# ---- requests by opcode from the debug daemon, for one run of TOOL (untimed)
declare -A REQ
count_requests() { # TOOL cold|warm
	local tool=$1 temp=$2 log=$WORK/debug.log l0 l1 procs fds lines p
	[[ $temp == cold ]] && sleep "$IDLE"
	p=(/proc/[0-9]*); procs=${#p[@]}
	fds=$(count_fds)
	l0=$(wc -l <"$log")
	once debug "$tool" "$WORK/req.out" || true
	sleep 0.3 # RELEASE and FORGET come after the tool exits
	l1=$(wc -l <"$log")
	lines=$(wc -l <"$WORK/req.out")
	sed -n "$((l0 + 1)),${l1}p" "$log" | grep -o '^unique: [0-9]*, opcode: [A-Z_]*' | sed 's/.*: //' >"$WORK/ops"
	REQ[$tool|$temp]="$(wc -l <"$WORK/ops") $procs $fds $lines"
	REQ[$tool|$temp|ops]=$(sort "$WORK/ops" | uniq -c | sort -rn | head -6 | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}')
}

# ---- main
OTHERS=$(pgrep -c -x procfast || true) # daemons not ours (other users of the machine)
OTHER_MOUNTS=$(grep -c -e fuse.procfast -e fuse.bindfs /proc/mounts || true)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$SECONDS
if [[ $URING != off ]]; then
	URING_WAS=$(cat "$URING_PARAM")
	echo Y >"$URING_PARAM"
fi
start_fuse procfast "$PROCFAST" -f -o "uring=$URING"
TRANSPORT=$(grep -o -m1 'over [^(]*' "$WORK/procfast.log" | sed 's/ *$//')
grep -q "serving through io_uring" "$WORK/procfast.log" && TRANSPORT="over io_uring"
start_fuse bindfs bindfs -f /proc
mapfile -t DPIDS < <(tree_pids "${DAEMON[procfast]}")
mapfile -t DSTAT < <(printf '/proc/%s/stat\n' "${DPIDS[@]}")
for arm in "${ARMS[@]}"; do start_exporter "$arm"; done
sleep 3600 >/dev/null 2>&1 & SPID=$! # what `pgrep -x sleep` finds
PROCS0=$(find /proc -mindepth 1 -maxdepth 1 -name '[0-9]*' | wc -l)
FDS0=$(count_fds)

IDLE_TOOLS=("ps -ef" "ps aux" "pstree -p" "lsof -n -P" "top -bn1" scrape dirtime)
rounds idle "${IDLE_TOOLS[@]}"

# daemon CPU, warm, back to back (10 ms ticks: many runs make the figure)
declare -A CPU_PASS
for tool in "ps -ef" scrape; do
	c0=$(ticks) t0=${EPOCHREALTIME/./}
	for ((i = 0; i < CPU_RUNS; i++)); do once procfast "$tool" || true; done
	CPU_PASS[$tool]="$(($(ticks) - c0)) $((${EPOCHREALTIME/./} - t0))"
done

echo "tools.sh: counting requests (procfast -f -d)" >&2
start_fuse debug "$PROCFAST" -f -d -o norestart
for tool in "ps -ef" "lsof -n -P"; do
	count_requests "$tool" cold
	count_requests "$tool" warm
done
stop_fuse debug

echo "tools.sh: starting $THREADS idle threads" >&2
echo "$((PID_MAX > 4194304 ? PID_MAX : 4194304))" >/proc/sys/kernel/pid_max
((THREADS_MAX >= THREADS + 100000)) || echo $((THREADS + 100000)) >/proc/sys/kernel/threads-max
"$H/threads" "$THREADS" --hold >"$WORK/threads.json" </dev/null & TPID=$!
until [[ -s $WORK/threads.json ]]; do
	kill -0 "$TPID" 2>/dev/null || { echo "tools.sh: threads helper died" >&2; exit 1; }
	sleep 0.2
done
BIG_TOOLS=("ps -ef" "pgrep -x sleep" "top -bn1" dirtime)
for _ in $(seq 30); do # until the daemon is quiet (under 50 ms of CPU in a second), at most 30 s
	c0=$(ticks); sleep 1
	(($(ticks) - c0 < HZ / 20)) && break
done
rounds big "${BIG_TOOLS[@]}"
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg) # before the threads go: their exit makes a load of thousands
stop_pid "$TPID" KILL; TPID=

ELAPSED=$((SECONDS - T_START))
mapfile -t DPIDS1 < <(tree_pids "${DAEMON[procfast]}")
NE_NOTES=$(exporter_log_note procfast; exporter_log_note bindfs)
DLOG_LINES=$(grep -c . "$WORK/procfast.log" || true)
DLOG=$(awk '{n[$0]++; if (n[$0] == 1) o[++k] = $0} END {for (i = 1; i <= k; i++) printf "    %s%s\n", o[i], (n[o[i]] > 1 ? "  (" n[o[i]] " times)" : "")}' "$WORK/procfast.log" | head -8)
for arm in "${!NE[@]}"; do stop_pid "${NE[$arm]}"; done
NE=()

# ---- report
declare -A TARGET=([idle|ps -ef]=1.8 [idle|ps aux]=1.8 [idle|pstree -p]=3 [idle|lsof -n -P]=4
	[idle|top -bn1]=1.1 [idle|scrape]=2 [big|ps -ef]=1.0 [big|pgrep -x sleep]=1.0 [big|top -bn1]=1.0
	[big|dirtime]=0.01)
label() { case $1 in scrape) echo "node_exporter scrape" ;; dirtime) echo "root listing (µs)" ;; *) echo "\`$1\`" ;; esac; }
table() { # SECTION TOOL...
	local sec=$1 tool temp p f b r tg bcell cpu; shift
	local -a cells met
	local -A bm
	echo "| tool | target | /proc cold | procfast cold | **ratio cold** | /proc warm | procfast warm | **ratio warm** | target met (cold / warm) | bindfs cold / warm (ratio) | procfast daemon CPU ms per run, cold / warm |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	for tool; do
		tg=${TARGET[$sec|$tool]:-} cells=() met=() bcell=
		for temp in cold warm; do
			p=$(median "${S[$sec|$tool|proc|$temp]}") f=$(median "${S[$sec|$tool|procfast|$temp]}")
			b=$(median "${S[$sec|$tool|bindfs|$temp]}")
			r=$(ratio "$f" "$p")
			if [[ $tool == dirtime ]]; then
				cells+=("$p" "$f" "**$r** ($(awk -v a="$p" -v b="$f" 'BEGIN {printf (a >= b ? "%.1f× faster" : "%.1f× slower"), (a >= b ? a / b : b / a)}'))")
				met+=("$(awk -v a="$p" -v b="$f" -v t="$tg" 'BEGIN {print t == "" ? "—" : (a >= 100 * b) ? "met" : "**not met**"}')")
				bm[$temp]=$b
			else
				cells+=("$(ms "$p")" "$(ms "$f")" "**$r**")
				met+=("$(awk -v a="$f" -v b="$p" -v t="$tg" 'BEGIN {print (a <= t * b) ? "met" : "**not met**"}')")
				bm[$temp]=$(ms "$b")
			fi
			bm[$temp]+=" ($(ratio "$b" "$p"))"
		done
		bcell="${bm[cold]} / ${bm[warm]}"
		[[ ${OK[$sec|$tool|bindfs]} == ok ]] || bcell+=" broken"
		cpu="—"
		[[ $tool == dirtime ]] || cpu="$(tick_ms "${CPU[$sec|$tool|cold]:-0}" "$ROUNDS") / $(tick_ms "${CPU[$sec|$tool|warm]:-0}" "$ROUNDS")"
		if [[ -z $tg ]]; then tg="—"; elif [[ $tool == dirtime ]]; then tg="≥ 100× faster"; else tg="≤ $tg×"; fi
		echo "| $(label "$tool") | $tg | ${cells[0]} | ${cells[1]} | ${cells[2]} | ${cells[3]} | ${cells[4]} | ${cells[5]} | ${met[0]} / ${met[1]} | $bcell | $cpu |"
	done
}
notes() { # SECTION TOOL...
	local sec=$1 tool arm line; shift
	for tool; do
		line="- $(label "$tool"):"
		for arm in "${ARMS[@]}"; do line+=" ${NOTE[$sec|$tool|$arm]};"; done
		echo "${line%;}"
	done
}
req_rows() {
	local tool temp n procs fds lines
	for tool in "ps -ef" "lsof -n -P"; do for temp in cold warm; do
		read -r n procs fds lines <<<"${REQ[$tool|$temp]}"
		echo "| \`$tool\` | $temp | $n | $procs | $(ratio "$n" "$procs") | $fds | $(ratio "$n" "$fds") | $lines | $(ratio "$n" "$lines") | ${REQ[$tool|$temp|ops]} |"
	done; done
}
cpu_pass() { # TOOL
	local t us
	read -r t us <<<"${CPU_PASS[$1]}"
	printf '%s ms per run (%s runs in %.1f s; minus the idle rate: %s ms)' "$(tick_ms "$t" "$CPU_RUNS")" "$CPU_RUNS" \
		"$(awk -v u="$us" 'BEGIN {print u / 1e6}')" \
		"$(awk -v t="$t" -v n="$CPU_RUNS" -v hz="$HZ" -v u="$us" -v it="$IDLE_TICKS" -v is="$IDLE_S" \
			'BEGIN {printf "%.1f", (t - it / is * u / 1e6) * 1000 / hz / n}')"
}
LOAD_MIN=$(printf '%s\n' "${LOADS[@]}" | sort -g | head -1) LOAD_MAX=$(printf '%s\n' "${LOADS[@]}" | sort -g | tail -1)
BUILD="Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- fs cache CMakeLists.txt || echo ', with uncommitted changes')) in the scratch directory"
[[ -n $PROCFAST_GIVEN ]] && BUILD="\`$PROCFAST_GIVEN\` (build type: $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$(dirname "$PROCFAST_GIVEN")/CMakeCache.txt" 2>/dev/null || echo unknown))"

section=$(cat <<EOF
<!-- tools:begin -->
## tools: real tools over /proc, procfast and bindfs, cold and warm (issue 11)

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), $((ELAPSED / 60)) min $((ELAPSED % 60)) s;
kernel $(uname -r), $(nproc) CPUs; load average $LOAD0 before, $LOAD1 after the last round (1-min load at
the start of each round: $LOAD_MIN–$LOAD_MAX); other procfast daemons' processes running at start: $OTHERS,
other procfast or bindfs mounts: $OTHER_MOUNTS (the machine was shared: figures are only as good as that load allows).
procfast: $BUILD, \`procfast -f -o uring=$URING MOUNT\` (serving $TRANSPORT); $PROCS0 processes, $FDS0 open fds at start.
Each tool: \`unshare -m --propagation private sh -c 'mount --bind SRC /proc && exec CMD'\`, output
to /dev/null, wall clock (unshare + bind included, the same for every arm); the scrape:
\`curl -sf -o /dev/null http://127.0.0.1:PORT/metrics\` from \`prometheus-node-exporter
--path.procfs=SRC --collector.processes\` (one per arm, other collectors as packaged); the
root listing: \`build/tests/dirtime SRC\` (open + getdents64 + close, µs: one listing cold,
the median of $REPEAT warm). Cold = the first run after ${IDLE} s in which nothing ran
(each round idles once per tool, then times the three arms' cold runs in rotating order);
warm = right after an untimed run of the same tool on the same arm. Medians of $ROUNDS
rounds, ms unless said; ratio = procfast / /proc.
Daemon CPU = utime+stime of procfast's processes (/proc/PID/stat, 10 ms ticks) over the
timed runs, divided by $ROUNDS; idle, the daemon used $(tick_ms "$IDLE_TICKS" "$IDLE_S") ms/s (process events of the
whole machine).

### Idle host

$(table idle "${IDLE_TOOLS[@]}")

Outcome of one untimed run per arm (exit status, stdout lines, stderr; "broken" marks an
arm whose output was unusable: its time is no benchmark):

$(notes idle "${IDLE_TOOLS[@]}")$NE_NOTES

### One process with $THREADS idle threads (\`build/tests/threads $THREADS --hold\`)

$(table big "${BIG_TOOLS[@]}")

$(notes big "${BIG_TOOLS[@]}")

### Requests (a second daemon, \`procfast -f -d -o norestart\`, untimed)

Lines \`unique: N, opcode: OP\` of its log during one run (after ${IDLE} s idle for cold,
right after it for warm), including the bind mount's and the late RELEASE/FORGET; processes
and fds (entries of every /proc/PID/fd) counted on /proc just before; output lines are the
tool's own (lsof prints a line per fd, mapping, cwd, root and txt, and again per thread).

| tool | run | requests | processes | per process | fds | per fd | output lines | per line | top opcodes |
|---|---|---|---|---|---|---|---|---|---|
$(req_rows)

### Daemon CPU, warm, $CPU_RUNS runs back to back

- \`ps -ef\`: $(cpu_pass "ps -ef").
- node_exporter scrape: $(cpu_pass scrape).

procfast's processes: ${#DPIDS[@]} at start, ${#DPIDS1[@]} at the end ($( [[ "${DPIDS[*]}" == "${DPIDS1[*]}" ]] && echo "the same" || echo "CHANGED: ${DPIDS[*]} → ${DPIDS1[*]}")).
Its stderr ($DLOG_LINES lines; each distinct line once, in order, first 8):

$DLOG

Targets (issue 11): \`ps -ef\`, \`ps aux\` ≤ 1.8×, \`pstree -p\` ≤ 3×, \`lsof -n -P\` ≤ 4×,
\`top -bn1\` ≤ 1.1×, scrape ≤ 2× on the idle host; with $THREADS threads \`ps -ef\`, \`pgrep\`,
\`top -bn1\` ≤ 1.0× and the root listing ≥ 100× faster; cold and warm alike.
<!-- tools:end -->
EOF
)
write_section tools "$section"
printf '%s\n' "$section"
