#!/usr/bin/env bash
# bench/floor.sh — the floor, measured in every run (issue 11, point 1): what a FUSE read
# costs when the server does nothing but answer, next to what procfast's costs. Two
# minimal servers answer one ~300-byte direct-I/O file, /stat, from memory:
#   - bench/floor/floor_libfuse.c: libfuse 3 low-level API, multithreaded loop, over
#     /dev/fuse;
#   - bench/floor/floor_uring.c: the raw protocol over FUSE-over-io_uring, a queue per
#     vCPU, each served by a thread pinned to it (enable_uring is set Y for the run and
#     restored at exit).
# Measured, each with open+read-to-EOF+close and with pread of a kept-open file
# (bench/readlat.c): /proc/PID/stat of a sleeper, the two floors' /stat, procfast's
# PID/stat (Release build of this tree) over each transport (-o uring=off, -o uring=on).
# Every figure is the median over ROUNDS rounds
# of each round's median of COUNT reads; arms rotate within a round. Writes the section
# "floor" of bench/RESULTS.md. Issue 11's targets: procfast ≤ 1.2× the floor on the
# same transport; over io_uring, procfast's open+read+close ≤ 0.75× the libfuse floor.
#
# Run as root: bench/floor.sh      (ROUNDS=9 COUNT=1000 to override)
set -euo pipefail
. "$(dirname "$0")/common.sh"
. "$(dirname "$0")/servers.sh"

settings floor.sh ROUNDS=9 COUNT=1000
servers_setup floor libfuse3-dev liburing-dev pkg-config

# Builds: procfast Release, readlat and the two floors with the same compiler flags.
release "$ROOT" "$WORK/cur-build"
PROCFAST_BIN=$WORK/cur-build/procfast
cc -O2 -o "$WORK/readlat" "$ROOT/bench/readlat.c"
CFLAGS_FLOOR=(-std=gnu11 -O2 -Wall -Wextra -Werror)
# shellcheck disable=SC2046 # pkg-config's words are flags
cc "${CFLAGS_FLOOR[@]}" $(pkg-config --cflags fuse3) -o "$WORK/floor_libfuse" \
	"$ROOT/bench/floor/floor_libfuse.c" $(pkg-config --libs fuse3)
cc "${CFLAGS_FLOOR[@]}" -I"$ROOT" -o "$WORK/floor_uring" "$ROOT/bench/floor/floor_uring.c" -luring -lpthread

allow_uring

start_floor() { # NAME: bench/floor/floor_NAME -f on $WORK/NAME, its stderr in $WORK/NAME.log
	mkdir -p "$WORK/$1"
	"$WORK/floor_$1" -f "$WORK/$1" </dev/null >/dev/null 2>"$WORK/$1.log" &
	SERVERS+=($!)
	MOUNTS+=("$WORK/$1")
	wait_mounted "$WORK/$1" "$!"
}
start_floor libfuse
start_floor uring
URING_PID=${SERVERS[1]}
for t in off on; do
	mkdir -p "$WORK/procfast-$t"
	"$PROCFAST_BIN" -o uring=$t "$WORK/procfast-$t" # mounted when it returns
	MOUNTS+=("$WORK/procfast-$t")
done
sleep 600 >/dev/null 2>&1 &
SLEEPER=$!

# Sanity: both floors serve the same text (the io_uring one only once every queue
# registered: a read before would block), procfast serves the sleeper's stat.
floor_text=$(timeout 10 cat "$WORK/libfuse/stat")
FLOOR_BYTES=$(wc -c <"$WORK/libfuse/stat")
[[ ${#floor_text} -gt 200 && $(timeout 10 cat "$WORK/uring/stat") == "$floor_text" ]] ||
	{ echo "floor.sh: the floors' /stat differ or are empty" >&2; cat "$WORK"/*.log >&2; exit 1; }
for t in off on; do
	[[ $(cat "$WORK/procfast-$t/$SLEEPER/stat") == "$SLEEPER (sleep) "* ]] ||
		{ echo "floor.sh: procfast's $SLEEPER/stat (uring=$t) is not the sleeper's" >&2; exit 1; }
done

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A SAMPLES
TARGETS=(proc libfuse uring pf_dev pf_uring)
path_of() { # TARGET
	case $1 in
	proc) echo "/proc/$SLEEPER/stat" ;;
	pf_dev) echo "$WORK/procfast-off/$SLEEPER/stat" ;;
	pf_uring) echo "$WORK/procfast-on/$SLEEPER/stat" ;;
	*) echo "$WORK/$1/stat" ;;
	esac
}
arms=()
for m in orc pread; do for t in "${TARGETS[@]}"; do arms+=("$m|$t"); done; done
for ((round = 0; round < ROUNDS; round++)); do
	n=${#arms[@]}
	for ((i = 0; i < n; i++)); do
		IFS='|' read -r mode target <<<"${arms[$(((i + round * 3) % n))]}"
		out=$("$WORK/readlat" "$mode" "$(path_of "$target")" "$COUNT")
		[[ ${out#* } -gt 0 ]] || { echo "floor.sh: $mode $target read ${out#* } bytes" >&2; exit 1; }
		SAMPLES[$mode|$target]+="${out%% *} "
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# The io_uring floor says what each transport served: proof that the ring did.
stop_server "$URING_PID"
URING_SERVED=$(grep -o 'served .*' "$WORK/uring.log" || echo "served: (no report)")

declare -A MED
for a in "${arms[@]}"; do MED[$a]=$(samples_median "${SAMPLES[$a]}"); done
declare -A LABEL
LABEL[proc]="\`/proc/PID/stat\` (procfs)"
LABEL[libfuse]="floor, libfuse $(pkg-config --modversion fuse3) over \`/dev/fuse\`, multithreaded (\`floor_libfuse\`)"
LABEL[uring]="floor, raw FUSE-over-io_uring, a queue per vCPU, threads pinned (\`floor_uring\`)"
LABEL[pf_dev]="procfast \`PID/stat\` over \`/dev/fuse\` (Release, \`-o uring=off\`)"
LABEL[pf_uring]="procfast \`PID/stat\` over io_uring (Release, \`-o uring=on\`)"
table="| path, median µs | open+read-to-EOF+close | pread of the first 4 KiB |
|---|---|---|"
for t in "${TARGETS[@]}"; do
	table+="
| ${LABEL[$t]} | $(ns_us "${MED[orc|$t]}") | $(ns_us "${MED[pread|$t]}") |"
done
ratio_row() { # LABEL A B TARGET
	printf '\n| %s | **%s** | **%s** | %s |' "$1" "$(ratio_of "${MED[orc|$2]}" "${MED[orc|$3]}")" \
		"$(ratio_of "${MED[pread|$2]}" "${MED[pread|$3]}")" "$4"
}
ratios="| ratio | open+read+close | pread | issue 11's target |
|---|---|---|---|"
ratios+=$(ratio_row "procfast over \`/dev/fuse\` ÷ libfuse floor" pf_dev libfuse "≤ 1.2")
ratios+=$(ratio_row "procfast over io_uring ÷ io_uring floor" pf_uring uring "≤ 1.2")
ratios+=$(ratio_row "procfast over io_uring ÷ libfuse floor" pf_uring libfuse "open+read+close ≤ 0.75")
ratios+=$(ratio_row "procfast over io_uring ÷ procfast over \`/dev/fuse\`" pf_uring pf_dev "what the transport gives procfast")
ratios+=$(ratio_row "io_uring floor ÷ libfuse floor" uring libfuse "what the transport gives the floor")

section="<!-- floor:begin -->
## The floor, measured in every run (issue 11)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER;
procfast: a Release build of this tree ($(git -C "$ROOT" rev-parse --short HEAD)); liburing $(dpkg-query -W -f '${Version}' liburing2 2>/dev/null || echo '?').
Both floors (\`bench/floor/\`) answer one file, \`/stat\`: $FLOOR_BYTES bytes of fixed text from memory,
direct I/O, names and attributes cached for a day. The io_uring floor $URING_SERVED.
Medians over $ROUNDS rounds of each round's median of $COUNT reads (\`bench/readlat.c\`);
arms rotate within a round.

$table

$ratios

What separates procfast from the floor on the same transport: the floors answer from
memory, procfast makes the source operation (a pread of \`/proc/PID/stat\`, the procfs row
above) and the caller's checks (\`capget\`, a \`readlinkat\` of its \`ns/user\`:
\`bench/syscalls.sh\`); an OPEN also probes the process's generation. Over \`/dev/fuse\` a
\`perf record\` of the server during a pread loop (2026-12-01) put 94% of its time in the
kernel, 44% of it in \`finish_task_switch\` (a worker put to sleep and woken on the other
vCPU); over io_uring the request is answered by a thread pinned to the caller's vCPU.
<!-- floor:end -->"
write_section floor "$section"
