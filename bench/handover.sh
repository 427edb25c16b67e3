#!/usr/bin/env bash
# bench/handover.sh — a mount handed over to a control= daemon over io_uring (issue 11,
# point 2): what a read costs through it, beside the daemon's own mount over io_uring and
# a handed-over mount over /dev/fuse (uring=off, which uring=auto gave such mounts before
# its servers shared their ring buffers through a memfd).
#
# One daemon, `procfast -f -o control=SOCKET,uring=on OWN` (Release build of this tree),
# and two mounts handed over to it: `-o daemon=SOCKET` (auto: io_uring) and
# `-o daemon=SOCKET,uring=off`. Each arm is a pread loop of a sleeper's PID/stat
# (bench/readlat.c "moves": the reads that ended on another CPU than they began on), with
# the reader free and pinned to CPU 0. Medians over ROUNDS rounds of each round's median
# of COUNT reads; arms rotate within a round. The rings each server holds are counted, so
# that the table says what served. Writes the section "handover" of bench/RESULTS.md.
#
# Run as root: bench/handover.sh      (ROUNDS=9 COUNT=2000 to override)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings handover.sh ROUNDS=9 COUNT=2000
servers_setup handover procps util-linux
(($(nproc) >= 2)) || { echo "handover.sh: needs 2 CPUs or more" >&2; exit 1; }

release "$ROOT" "$WORK/cur-build"
PROCFAST_BIN=$WORK/cur-build/procfast
cc -O2 -o "$WORK/readlat" "$ROOT/bench/readlat.c"

allow_uring
sleep 3600 >/dev/null 2>&1 &
SLEEPER=$!

SOCKET=$WORK/control.sock
mkdir -p "$WORK/own" "$WORK/handed" "$WORK/handed-off"
"$PROCFAST_BIN" -f -o control="$SOCKET",uring=on "$WORK/own" 2>"$WORK/daemon.log" &
SERVERS+=($!)
MOUNTS+=("$WORK/own")
wait_mounted "$WORK/own" "$!"
for _ in $(seq 100); do [[ -S $SOCKET ]] && break; sleep 0.05; done
"$PROCFAST_BIN" -o daemon="$SOCKET" "$WORK/handed"
MOUNTS+=("$WORK/handed")
"$PROCFAST_BIN" -o daemon="$SOCKET",uring=off "$WORK/handed-off"
MOUNTS+=("$WORK/handed-off")

ARMS=(own handed handed-off)
for a in "${ARMS[@]}"; do
	[[ $(timeout 10 cat "$WORK/$a/$SLEEPER/stat") == "$SLEEPER (sleep) "* ]] ||
		{ echo "handover.sh: $a does not serve the sleeper's stat" >&2; cat "$WORK/daemon.log" >&2; exit 1; }
done

server_of() { # MOUNT: the daemon's server process for it (not a namespace helper)
	local p
	for p in $(procfast_pids "$PROCFAST_BIN"); do
		[[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == *" $1 " ]] &&
			[[ $(cat "/proc/$p/comm") != procfast-nsh ]] && [[ $p != "${SERVERS[0]}" ]] && echo "$p"
	done | head -1
}
rings_of() { # PID: its io_uring instances
	local n=0 fd
	for fd in /proc/"$1"/fd/*; do [[ $(readlink "$fd" 2>/dev/null) == "anon_inode:[io_uring]" ]] && n=$((n + 1)); done
	echo "$n"
}
# the rings start once INIT is answered: wait for each io_uring mount's
declare -A RINGS
for a in "${ARMS[@]}"; do
	for _ in $(seq 100); do
		RINGS[$a]=$(rings_of "$(server_of "$WORK/$a")")
		[[ $a == handed-off || ${RINGS[$a]} -gt 0 ]] && break
		sleep 0.05
	done
done

PINS=(free cpu0)
pin_prefix() { [[ $1 == cpu0 ]] && echo "taskset -c 0"; return 0; }
arms=()
for a in "${ARMS[@]}"; do for p in "${PINS[@]}"; do arms+=("$a|$p"); done; done

declare -A SAMPLES MOVED
run_arm() { # ARM
	local what pin out a b moved
	IFS='|' read -r what pin <<<"$1"
	# shellcheck disable=SC2046 # the prefix is words
	out=$($(pin_prefix "$pin") "$WORK/readlat" pread "$WORK/$what/$SLEEPER/stat" "$COUNT" moves)
	read -r a b moved _ <<<"$out"
	[[ $b -gt 0 ]] || { echo "handover.sh: $what read $b bytes" >&2; exit 1; }
	SAMPLES[$1]+="$a "
	MOVED[$1]+="$moved "
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for a in "${arms[@]}"; do run_arm "$a"; done # untimed: names cached, threads started
SAMPLES=() MOVED=()
for ((round = 0; round < ROUNDS; round++)); do
	n=${#arms[@]}
	for ((i = 0; i < n; i++)); do run_arm "${arms[$(((i + round) % n))]}"; done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

declare -A LABEL
LABEL[own]="the daemon's own mount (\`uring=on\`)"
LABEL[handed]="handed over (\`-o daemon=\`, \`uring=auto\`)"
LABEL[handed-off]="handed over, \`uring=off\` (what \`auto\` gave it before)"
pin_name() { if [[ $1 == cpu0 ]]; then echo "pinned to CPU 0"; else echo free; fi; }
share() { awk -v m="$1" -v c="$COUNT" 'BEGIN {printf "%.0f%%", 100 * m / c}'; }
rows=""
for a in "${ARMS[@]}"; do
	for p in "${PINS[@]}"; do
		k="$a|$p"
		most=$(tr ' ' '\n' <<<"${MOVED[$k]}" | grep . | sort -n | tail -1)
		rows+=$(printf '\n| %s | %s | %s | **%s** | %s (%s) | %s |' "${LABEL[$a]}" "${RINGS[$a]}" \
			"$(pin_name "$p")" "$(ns_us "$(samples_median "${SAMPLES[$k]}")")" \
			"$(share "$(samples_median "${MOVED[$k]}")")" "$(share "$most")" \
			"$(ratio_of "$(samples_median "${SAMPLES[$k]}")" "$(samples_median "${SAMPLES[handed-off|$p]}")")")
	done
done

section="<!-- handover:begin -->
## A handed-over mount over io_uring (issue 11, point 2)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER;
procfast: a Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD)): one daemon
\`-o control=SOCKET,uring=on\` and two mounts handed over to it. Medians over $ROUNDS rounds of
each round's median of $COUNT preads of a sleeper's \`PID/stat\` (\`bench/readlat.c\` \"moves\";
\"moved\": the median share of reads that ended on another CPU than they began on, in brackets
the round with most); arms rotate within a round.

| mount | its server's rings | reader | pread, µs | moved | ÷ handed over on \`/dev/fuse\` |
|---|---|---|---|---|---|$rows

A handed-over mount's servers are executed, not forked: they share their ring buffers
through a memfd the daemon holds (\`fs/transport/uring_slots.c\`), so that one started after
a dead one takes back what the kernel had handed it, as the own mount's forked servers
do. Its reads then cost what the own mount's do; the reads that moved are the
scheduler's (\`bench/placement.sh\`).
<!-- handover:end -->"
write_section handover "$section"
