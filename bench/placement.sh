#!/usr/bin/env bash
# bench/placement.sh — where the caller runs (issue 11): what a request costs when the
# caller stays on its vCPU and when the scheduler moves it at each wake-up, and what
# is left of procfast's cost once the kernel's work is counted.
#
# Arms, each a pread loop of a kept-open file (bench/readlat.c "moves": the reads that
# ended on another CPU than they began on, and the medians of those that stayed and of
# those that moved), with the reader pinned to CPU 0 (`taskset -c 0`) and free:
#   - /proc/PID/stat of a sleeper (procfs);
#   - the io_uring floor (bench/floor/floor_uring.c), answering from memory;
#   - the same floor with `--calls PID`: each READ makes the system calls procfast
#     makes for that pread (capget, a readlinkat of the caller's ns/user, the pread of
#     /proc/PID/stat), so that what separates procfast from it is procfast's own code;
#   - procfast's PID/stat over io_uring (Release build of this tree, -o uring=on).
# And `ps -ef` and `top -bn1` over /proc and over procfast, pinned and free, each
# `unshare -m` with the mount bound at /proc.
# Everything runs once with the machine's cpuidle setting and, on a guest whose
# haltpoll driver exists and is not at the kernel's default of 200000 ns, once more with
# guest_halt_poll_ns=200000 (restored at exit): an idle vCPU then polls before it
# halts, and waking it costs no exit to the hypervisor.
# Medians over ROUNDS rounds (each round's median of COUNT reads); arms rotate within a
# round. Writes the section "placement" of bench/RESULTS.md.
#
# Run as root: bench/placement.sh      (ROUNDS=9 COUNT=2000 to override)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings placement.sh ROUNDS=9 COUNT=2000
HALT_PARAM=/sys/module/haltpoll/parameters/guest_halt_poll_ns
HALT_DEFAULT=200000
HALT_OLD=
servers_setup placement libfuse3-dev liburing-dev pkg-config procps util-linux
(($(nproc) >= 2)) || { echo "placement.sh: needs 2 CPUs or more" >&2; exit 1; }
cleanup() { [[ -n $HALT_OLD ]] && echo "$HALT_OLD" >"$HALT_PARAM"; }

release "$ROOT" "$WORK/cur-build"
PROCFAST_BIN=$WORK/cur-build/procfast
cc -O2 -o "$WORK/readlat" "$ROOT/bench/readlat.c"
cc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$ROOT" -o "$WORK/floor_uring" \
	"$ROOT/bench/floor/floor_uring.c" -luring -lpthread

allow_uring
sleep 3600 >/dev/null 2>&1 &
SLEEPER=$!

start_floor() { # NAME ARGS...: floor_uring ARGS -f on $WORK/NAME, its stderr in $WORK/NAME.log
	local name=$1
	shift
	mkdir -p "$WORK/$name"
	"$WORK/floor_uring" -f "$@" "$WORK/$name" </dev/null >/dev/null 2>"$WORK/$name.log" &
	SERVERS+=($!)
	MOUNTS+=("$WORK/$name")
	wait_mounted "$WORK/$name" "$!"
}
start_floor floor
start_floor calls --calls "$SLEEPER"
mkdir -p "$WORK/procfast"
"$PROCFAST_BIN" -o uring=on "$WORK/procfast" 2>"$WORK/procfast.log" # mounted when it returns
MOUNTS+=("$WORK/procfast")

path_of() { # TARGET
	case $1 in
	proc) echo "/proc/$SLEEPER/stat" ;;
	procfast) echo "$WORK/procfast/$SLEEPER/stat" ;;
	*) echo "$WORK/$1/stat" ;;
	esac
}
# Sanity: the floor with calls and procfast serve the sleeper's stat; a floor's ring
# serves only once every queue registered (a read before would block).
for t in calls procfast; do
	[[ $(timeout 10 cat "$(path_of "$t")") == "$SLEEPER (sleep) "* ]] ||
		{ echo "placement.sh: $t does not serve the sleeper's stat" >&2; cat "$WORK"/*.log >&2; exit 1; }
done
[[ $(timeout 10 wc -c <"$(path_of floor)") -gt 200 ]] || { echo "placement.sh: the floor serves nothing" >&2; exit 1; }

PINS=(free cpu0)
pin_prefix() { [[ $1 == cpu0 ]] && echo "taskset -c 0"; return 0; }
TARGETS=(proc floor calls procfast)
TOOLS=("ps -ef" "top -bn1")
SRCS=(proc procfast)
src_of() { [[ $1 == proc ]] && echo /proc || echo "$WORK/procfast"; }
arms=()
for t in "${TARGETS[@]}"; do for p in "${PINS[@]}"; do arms+=("read|$t|$p"); done; done
for tool in "${TOOLS[@]}"; do for s in "${SRCS[@]}"; do for p in "${PINS[@]}"; do
	arms+=("tool|$tool|$s|$p")
done; done; done

SETTINGS=(machine)
if [[ -w $HALT_PARAM ]]; then
	HALT_OLD=$(cat "$HALT_PARAM")
	[[ $HALT_OLD != "$HALT_DEFAULT" ]] && SETTINGS+=("$HALT_DEFAULT")
fi

declare -A SAMPLES MOVED STAYED MOVEDT
run_arm() { # SETTING ARM
	local set=$1 kind what src pin out a b moved stayed movedt
	IFS='|' read -r kind what src pin <<<"$2"
	if [[ $kind == read ]]; then
		pin=$src
		# shellcheck disable=SC2046 # the prefix is words
		out=$($(pin_prefix "$pin") "$WORK/readlat" pread "$(path_of "$what")" "$COUNT" moves)
		read -r a b moved stayed movedt <<<"$out"
		[[ $b -gt 0 ]] || { echo "placement.sh: $what read $b bytes" >&2; exit 1; }
		SAMPLES[$set|$2]+="$a "
		MOVED[$set|$2]+="$moved "
		STAYED[$set|$2]+="$stayed "
		MOVEDT[$set|$2]+="$movedt "
		return
	fi
	a=$(date +%s%N)
	# shellcheck disable=SC2046
	$(pin_prefix "$pin") unshare -m --propagation private \
		sh -c "mount --bind $(src_of "$src") /proc && exec $what" >/dev/null 2>&1 ||
		{ echo "placement.sh: $what over $src failed" >&2; exit 1; }
	b=$(date +%s%N)
	SAMPLES[$set|$2]+="$(((b - a) / 1000)) "
}

use_setting() { # SETTING
	if [[ $1 != machine ]]; then echo "$1" >"$HALT_PARAM"
	elif [[ -n $HALT_OLD ]]; then echo "$HALT_OLD" >"$HALT_PARAM"; fi
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for a in "${arms[@]}"; do run_arm warmup "$a"; done # untimed: names cached, threads started
for set in "${SETTINGS[@]}"; do
	use_setting "$set"
	for ((round = 0; round < ROUNDS; round++)); do
		n=${#arms[@]}
		for ((i = 0; i < n; i++)); do run_arm "$set" "${arms[$(((i + round * 5) % n))]}"; done
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
[[ -n $HALT_OLD ]] && echo "$HALT_OLD" >"$HALT_PARAM"

med() { samples_median "$1"; }
setting_name() { # SETTING
	if [[ $1 == machine ]]; then
		[[ -n $HALT_OLD ]] && echo "this machine's (guest_halt_poll_ns=$HALT_OLD)" || echo "this machine's"
	else
		echo "guest_halt_poll_ns=$1 (the kernel's default)"
	fi
}
declare -A LABEL
LABEL[proc]="\`/proc/PID/stat\` (procfs)"
LABEL[floor]="io_uring floor, from memory"
LABEL[calls]="io_uring floor making procfast's calls (\`--calls\`)"
LABEL[procfast]="procfast over io_uring"

pin_name() { if [[ $1 == cpu0 ]]; then echo "pinned to CPU 0"; else echo free; fi; }
table_head() { # FIRST COLUMN...: FIRST, the reader, then the COLUMNs of each setting
	local first=$1 set c head sep="|---|---|"
	shift
	head="| $first | reader |"
	for set in "${SETTINGS[@]}"; do
		head+=" $(setting_name "$set"): $1 |"
		sep+="---|"
		for c in "${@:2}"; do head+=" $c |"; sep+="---|"; done
	done
	printf '%s\n%s' "$head" "$sep"
}
share() { awk -v m="$1" -v c="$COUNT" 'BEGIN {printf "%.0f%%", 100 * m / c}'; }
read_cells() { # SETTING TARGET PIN: median, share moved (median, most), stayed, moved
	local k="$1|read|$2|$3" most movedt
	most=$(tr ' ' '\n' <<<"${MOVED[$k]}" | grep . | sort -n | tail -1)
	movedt=$(med "$(tr ' ' '\n' <<<"${MOVEDT[$k]}" | { grep -v '^0$' || true; } | tr '\n' ' ')")
	printf ' **%s** | %s (%s) | %s | %s |' "$(ns_us "$(med "${SAMPLES[$k]}")")" \
		"$(share "$(med "${MOVED[$k]}")")" "$(share "$most")" \
		"$(ns_us "$(med "${STAYED[$k]}")")" "$(if ((movedt)); then ns_us "$movedt"; else echo –; fi)"
}
tool_cells() { # SETTING TOOL PIN: /proc, procfast, their ratio
	local a b
	a=$(med "${SAMPLES[$1|tool|$2|proc|$3]}")
	b=$(med "${SAMPLES[$1|tool|$2|procfast|$3]}")
	printf ' %s | %s | **%s** |' "$(ns_us "$a")" "$(ns_us "$b")" "$(ratio_of "$b" "$a")"
}
rows() { # CELLS LABEL KEY: a row for each pin, with each setting's CELLS
	local cells=$1 label=$2 key=$3 p set row
	for p in "${PINS[@]}"; do
		row="| $label | $(pin_name "$p") |"
		for set in "${SETTINGS[@]}"; do row+=$("$cells" "$set" "$key" "$p"); done
		printf '\n%s' "$row"
	done
}
reads=$(table_head "read (pread, µs)" median moved stayed "moved reads")
for t in "${TARGETS[@]}"; do reads+=$(rows read_cells "${LABEL[$t]}" "$t"); done
tools=$(table_head tool "/proc ms" "procfast ms" ratio)
for tool in "${TOOLS[@]}"; do tools+=$(rows tool_cells "\`$tool\`" "$tool"); done

section="<!-- placement:begin -->
## Where the caller runs: a vCPU woken at each reply (issue 11)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, cpuidle driver
$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo '?'), load $LOAD_BEFORE → $LOAD_AFTER;
procfast: a Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD)), \`-o uring=on\`.
Medians over $ROUNDS rounds of each round's median of $COUNT preads (\`bench/readlat.c\`
\"moves\"); \"moved\" is the median share over the rounds of reads that ended on another
CPU than they began on (in brackets, the round with most), \"stayed\" and \"moved
reads\" the medians of each kind (of the rounds' medians; moved reads over the rounds that
had any). Tools: wall time of
\`unshare -m\` + bind + the tool, arms rotated, medians of $ROUNDS.

$reads

$tools

A FUSE request wakes the server's thread and then the caller. The kernel queues an
io_uring request on the caller's CPU, where procfast's thread for that queue is
pinned; the reply wakes the caller while that thread still runs there, and the
scheduler may place the caller on the other, idle vCPU (\`select_idle_sibling\`). Once
it has, its last CPU is the idle one at every reply, and it moves at every request.
Each move wakes the other vCPU from idle; on this VM a moved read costs 3 to 6 times one
that stayed, whether or not the guest polls before it halts.
<!-- placement:end -->"
write_section placement "$section"
