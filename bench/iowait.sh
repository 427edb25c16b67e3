#!/usr/bin/env bash
# bench/iowait.sh — what an idle mount over io_uring does to the host's I/O wait (issue 21,
# item 4): procs_blocked and the iowait ticks of /proc/stat over a window of WINDOW seconds with
# no procfast mount, then with one mount over io_uring left idle (uring_threads=THREADS),
# then unmounted again. A ring thread waits in io_uring_enter for its next request; the
# kernel counts such a wait as waiting for I/O unless it says it is none
# (IORING_ENTER_NO_IOWAIT, Linux 6.15), which fs/transport/uring.c does where the kernel
# offers it.
#
# Arms: this tree's binary (PROCFAST, else build/procfast, built if missing) and, to
# compare, BASE_BIN (a binary) or a Release build of the git revision BASE. procs_blocked
# is sampled every 0.1 s (min / median / max); the iowait and idle ticks are the window's
# deltas of the "cpu" line's fifth and fourth fields, beside all its ticks (USER_HZ, all
# CPUs): iowait ÷ all is vmstat's "wa"; a CPU's idle time is iowait while a task that last
# ran there waits for I/O, so iowait ÷ (idle + iowait) is the share of idle time that went
# to it. Writes the section "iowait" of bench/RESULTS.md.
#
# Run as root: bench/iowait.sh      (WINDOW=10 THREADS=4 BASE= BASE_BIN= PROCFAST=)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings iowait.sh WINDOW=10 THREADS=4 BASE= BASE_BIN= PROCFAST="$ROOT/build/procfast"
servers_setup iowait procps util-linux

cleanup() {
	[[ -n ${BASE_TREE:-} ]] && git -C "$ROOT" worktree remove --force "$BASE_TREE" 2>/dev/null
	return 0
}

ensure_built "$PROCFAST"
declare -A BIN WHAT
ARMS=()
if [[ -n $BASE_BIN ]]; then
	BIN[before]=$BASE_BIN
	WHAT[before]="\`$BASE_BIN\`"
	ARMS+=(before)
elif [[ -n $BASE ]]; then
	BASE_TREE=$WORK/base-src
	git -C "$ROOT" worktree add -q --detach "$BASE_TREE" "$BASE"
	release "$BASE_TREE" "$WORK/base-build"
	BIN[before]=$WORK/base-build/procfast
	WHAT[before]="a Release build of $(git -C "$ROOT" rev-parse --short "$BASE")"
	ARMS+=(before)
fi
BIN[this]=$PROCFAST
WHAT[this]="\`$PROCFAST\`"
ARMS+=(this)

allow_uring

# cpu_ticks: "iowait idle total" of the cpu line, in USER_HZ ticks
cpu_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print $6, $5, t; exit }' /proc/stat; }
blocked() { awk '$1 == "procs_blocked" { print $2 }' /proc/stat; }

# window: WINDOW seconds of samples; "min median max iowait_ticks idle_ticks all_ticks"
window() {
	local a b samples="" end
	a=$(cpu_ticks)
	end=$(($(date +%s%N) + WINDOW * 1000000000))
	while (($(date +%s%N) < end)); do
		samples+="$(blocked) "
		sleep 0.1
	done
	b=$(cpu_ticks)
	printf '%s %s %s %s\n' \
		"$(tr ' ' '\n' <<<"$samples" | grep . | sort -n | head -1)" \
		"$(samples_median "$samples")" \
		"$(tr ' ' '\n' <<<"$samples" | grep . | sort -n | tail -1)" \
		"$(awk -v a="$a" -v b="$b" 'BEGIN { split(a, x, " "); split(b, y, " ");
			printf "%d %d %d", y[1] - x[1], y[2] - x[2], y[3] - x[3] }')"
}

rows=""
pct() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.1f%%", d ? 100 * n / d : 0 }'; }
row() { # ARM STATE "min median max iowait idle all"
	local min med max io idle all
	read -r min med max io idle all <<<"$3"
	rows+=$(printf '\n| %s | %s | %s / **%s** / %s | %s | %s | %s | **%s** | %s |' "$1" "$2" "$min" "$med" \
		"$max" "$io" "$idle" "$all" "$(pct "$io" "$all")" "$(pct "$io" $((io + idle)))")
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A LINE
for arm in "${ARMS[@]}"; do
	bin=${BIN[$arm]}
	# shellcheck disable=SC2034 # servers_cleanup stops what runs it
	PROCFAST_BIN=$bin
	mnt=$WORK/mnt-$arm
	mkdir -p "$mnt"
	echo "iowait.sh: $arm ($bin): no mount" >&2
	row "$arm" "no mount" "$(window)"
	serve_procfast "$bin" "$mnt" "$WORK/$arm.log" "uring=on,uring_threads=$THREADS"
	pid=$SERVED
	ls "$mnt" >/dev/null
	for _ in $(seq 100); do grep -q "serving through" "$WORK/$arm.log" && break; sleep 0.05; done
	LINE[$arm]=$(grep -m1 "serving through" "$WORK/$arm.log" || echo "(no transport line)")
	sleep 1 # the start's requests answered: every ring thread waits
	echo "iowait.sh: $arm: mounted, idle" >&2
	row "$arm" "mounted over io_uring, idle" "$(window)"
	umount "$mnt"
	stop_server "$pid"
	echo "iowait.sh: $arm: unmounted" >&2
	row "$arm" "unmounted again" "$(window)"
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

lines=""
# shellcheck disable=SC2016 # backquotes of Markdown
for arm in "${ARMS[@]}"; do lines+=$(printf '\n- %s (%s): `%s`' "$arm" "${WHAT[$arm]}" "${LINE[$arm]}"); done
rings=$((THREADS * $(awk -F'[-,]' '{ print $NF + 1 }' /sys/devices/system/cpu/possible)))

section="<!-- iowait:begin -->
## An idle mount over io_uring and the host's I/O wait (issue 21, item 4)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER,
tree $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- fs 2>/dev/null || echo " with changes").
One mount \`-o uring=on,uring_threads=$THREADS\` ($rings ring threads) left idle, between
windows without it; each window ${WINDOW} s: \`procs_blocked\` of \`/proc/stat\` every 0.1 s, and
the \`cpu\` line's iowait, idle and all ticks (USER_HZ, all CPUs; iowait ÷ all is vmstat's
\`wa\`, iowait ÷ (idle + iowait) the share of the CPUs' idle time counted as iowait). The
transport's line:$lines

| binary | window | procs_blocked min / **median** / max | iowait ticks | idle ticks | all ticks | iowait ÷ all | iowait ÷ (idle + iowait) |
|---|---|---|---|---|---|---|---|$rows

A ring thread waits in \`io_uring_enter\` for its next request with its entry's command in
flight, which the kernel counts as waiting for I/O unless the wait says it is none
(\`IORING_ENTER_NO_IOWAIT\`, Linux 6.15): each idle ring thread was one more blocked task,
and the idle CPUs' time went to iowait. \`fs/transport/uring.c\` waits so where the kernel
offers it (\`IORING_FEAT_NO_IOWAIT\`); where not, the transport's line says the idle
threads count as iowait.
<!-- iowait:end -->"
write_section iowait "$section"
