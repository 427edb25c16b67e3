#!/usr/bin/env bash
# bench/identity.sh — what acting as the caller's whole identity costs (issue 21): the
# worker takes the caller's effective and fs ids, groups and capabilities; a caller in
# another user namespace, and any caller on the daemon's own processes, is served by a
# helper process. Release builds of BASE (before) and of this tree (after) serve one
# mount each (-o norestart); per round, arms alternating:
#   - pread of PID/FILE of a sleeper for each FILE of FILES (default stat; readlat
#     pread, the median of COUNT) as root,
#     root without capabilities, nobody, and the root of a user namespace of its own
#     (unshare -Ur: the helper's path after, the worker's before);
#   - the same as nobody on the server's own PID/stat (the helper's path after);
#   - `ps -ef` and `lsof -n -P` as root with the mount bound over /proc, and `ps -ef` as
#     nobody, wall time (the ratios to /proc in the same rounds).
# Medians over ROUNDS rounds. Writes the section SECTION_NAME (default "identity") of
# bench/RESULTS.md, headed TITLE.
#
# Run as root: bench/identity.sh    (ROUNDS=7 COUNT=2000 BASE=d0f22be URING=off FILES=stat
#                                   SECTION_NAME=identity TITLE=...)
set -euo pipefail
. "$(dirname "$0")/common.sh"
settings identity.sh ROUNDS=7 COUNT=2000 BASE=d0f22be URING=off FILES=stat SECTION_NAME=identity \
	"TITLE=The caller's whole identity (issue 21)"
read -r -a FILE_LIST <<<"$FILES"
[[ $EUID -eq 0 ]] || { echo "identity.sh: must run as root" >&2; exit 1; }

declare -A MNT DAEMON
cleanup() {
	stop_pair
	[[ -n ${SLEEPER:-} ]] && kill "$SLEEPER" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_pair identity.sh "$URING" "$BASE"
sleep 600 &
SLEEPER=$!

pread_ns() { # ARM PERSONA PID [FILE]
	as "$2" "$WORK/readlat" pread "${MNT[$1]}/$3/${4:-stat}" "$COUNT" | cut -d' ' -f1
}

declare -A S
add() { S[$1]="${S[$1]:-} $2"; }
for round in $(seq "$ROUNDS"); do
	arms=(before after)
	((round % 2)) || arms=(after before)
	for arm in "${arms[@]}"; do
		for who in root nocaps nobody userns; do
			for f in "${FILE_LIST[@]}"; do add "$arm.$who.$f" "$(pread_ns "$arm" "$who" "$SLEEPER" "$f")"; done
		done
		add "$arm.own" "$(pread_ns "$arm" nobody "${DAEMON[$arm]}")"
		add "$arm.ps" "$(wall_ms root "${MNT[$arm]}" "ps -ef")"
		add "$arm.psnobody" "$(wall_ms nobody "${MNT[$arm]}" "ps -ef")"
		add "$arm.lsof" "$(wall_ms root "${MNT[$arm]}" "lsof -n -P")"
	done
	add proc.ps "$(wall_ms root /proc "ps -ef")"
	add proc.psnobody "$(wall_ms nobody /proc "ps -ef")"
	add proc.lsof "$(wall_ms root /proc "lsof -n -P")"
done

med() { samples_median "${S[$1]}"; }
prow() { # KEY LABEL
	local b a
	b=$(med "before.$1")
	a=$(med "after.$1")
	echo "| $2 | $(ns_us "$b") | $(ns_us "$a") | $(ratio_of "$a" "$b") |"
}
trow() { # KEY LABEL
	local p b a
	p=$(med "proc.$1")
	b=$(med "before.$1")
	a=$(med "after.$1")
	echo "| $2 | $(ns_us "$p") | $(ns_us "$b") | $(ns_us "$a") | $(ratio_of "$b" "$p") | $(ratio_of "$a" "$p") |"
}

preads() {
	local f
	for f in "${FILE_LIST[@]}"; do
		prow "root.$f" "root (the daemon's equal: nothing switched), \`$f\`"
		prow "nocaps.$f" "root without capabilities, \`$f\`"
		prow "nobody.$f" "nobody, \`$f\`"
		prow "userns.$f" "root of its own user namespace (\`unshare -Ur\`): a helper after, \`$f\`"
	done
}
section="<!-- $SECTION_NAME:begin -->
## $TITLE

Command: \`$INVOCATION\` — $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r), $(nproc) CPUs,
load average $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after. Release builds of
$BASE (before) and of this tree ($(git -C "$ROOT" rev-parse --short HEAD)) serve \`-o norestart,uring=$URING\`
side by side; arms alternate within each of $ROUNDS rounds; medians of the rounds.

pread of \`PID/FILE\` (median of $COUNT per round), µs:

| caller | before | after | after / before |
|---|---|---|---|
$(preads)
$(prow own "nobody, on the daemon's own server (a helper after), \`stat\`")

Tools, wall ms (with the mount bound over \`/proc\` in a private mount namespace):

| command | /proc | before | after | before / proc | after / proc |
|---|---|---|---|---|---|
$(trow ps "\`ps -ef\` as root")
$(trow psnobody "\`ps -ef\` as nobody")
$(trow lsof "\`lsof -n -P\` as root")

After, a switched caller costs its effective ids too (\`setresgid\` and \`setresuid\`
there and back; the fs ids only where they differ from them), and a caller with
capabilities a \`readlinkat\` of its \`ns/user\` at each request (one without has it
cached with its groups). A caller in another user namespace, and any caller on the
daemon's own processes, is a helper's: two messages on a socket pair and the helper's
own switch, and the helper opens the file again at each read. Since 72a137e a read of
\`status\`, \`cmdline\`, \`environ\`, \`statm\` or \`comm\` from a worker's open takes no
identity at all (procfs's read of them asks nothing of the reader), and a request asks
each of its caller's namespaces once.
<!-- $SECTION_NAME:end -->"
write_section "$SECTION_NAME" "$section"
echo "$section"
