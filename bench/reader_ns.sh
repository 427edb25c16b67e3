#!/usr/bin/env bash
# bench/reader_ns.sh — what reading in the reader's context costs (issue 10):
#   - callers in the daemon's own namespaces: this build against the build before the
#     reader's context (BASE, default the commit before it), same run, interleaved: they
#     must have lost nothing;
#   - callers in other namespaces: a network (sys/net, a worker's setns), uts, user and
#     time namespace (a helper process's round trip), against /proc read in the same
#     namespaces.
# Every figure is the median over ROUNDS rounds of each round's median of COUNT reads
# (bench/readlat.c: open+read+close, or pread of a kept-open file); arms rotate within
# a round. Writes the section "reader_ns" of bench/RESULTS.md.
#
# Run as root: bench/reader_ns.sh      (ROUNDS=9 COUNT=2000 BASE=<commit> to override)
set -euo pipefail
. "$(dirname "$0")/common.sh"

settings reader_ns.sh ROUNDS=9 COUNT=2000 BASE=855a56b
[[ $EUID -eq 0 ]] || { echo "reader_ns.sh: must run as root" >&2; exit 1; }

MOUNTS=()
cleanup() {
	unmount_all "${MOUNTS[@]}"
	[[ -n ${SLEEPER:-} ]] && kill "$SLEEPER" 2>/dev/null
	release_pair_remove
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Both builds Release, in scratch directories.
release_pair "$BASE"

mount_arm() { # NAME BINARY
	mkdir -p "$WORK/$1"
	"$2" "$WORK/$1"
	MOUNTS+=("$WORK/$1")
}
mount_arm base "$WORK/base-build/procfast"
mount_arm cur "$WORK/cur-build/procfast"
sleep 600 &
SLEEPER=$!

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A SAMPLES

# arm: NAME PREFIX MODE FILE (FILE relative to a procfs root; BASE is /proc or a mount)
run_arm() { # KEY ROOTDIR PREFIX MODE FILE
	local key=$1 root=$2 prefix=$3 mode=$4 file=$5 out
	out=$($prefix "$WORK/readlat" "$mode" "$root/$file" "$COUNT")
	SAMPLES[$key]+="${out%% *} "
}

# The arms: host callers on the three roots, then callers in other namespaces.
HOST_FILES=("pread $SLEEPER/stat" "orc $SLEEPER/stat" "orc $SLEEPER/status" "orc meminfo"
	    "orc sys/kernel/hostname" "orc sys/net/ipv4/ip_default_ttl" "orc self/stat")
OTHER=("net|unshare --net|orc sys/net/ipv4/ip_default_ttl"
       "uts|unshare --uts|orc sys/kernel/hostname"
       "user|unshare --user --map-root-user|orc self/status"
       "time|unshare --time --boottime 1000 --fork|orc uptime")

arms=()
for f in "${HOST_FILES[@]}"; do
	for r in proc base cur; do arms+=("host|$r||$f"); done
done
for o in "${OTHER[@]}"; do
	IFS='|' read -r ns prefix what <<<"$o"
	for r in proc cur; do arms+=("$ns|$r|$prefix|$what"); done
done

for ((round = 0; round < ROUNDS; round++)); do
	n=${#arms[@]}
	for ((i = 0; i < n; i++)); do
		IFS='|' read -r ns r prefix what <<<"${arms[$(((i + round * 7) % n))]}"
		root=/proc
		[[ $r != proc ]] && root=$WORK/$r
		run_arm "$ns|$r|$what" "$root" "$prefix" ${what% *} ${what#* }
	done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

table="| caller | read | /proc µs | before µs | now µs | now / before | now / /proc |
|---|---|---|---|---|---|---|"
for f in "${HOST_FILES[@]}"; do
	p=$(samples_median "${SAMPLES[host|proc|$f]}"); b=$(samples_median "${SAMPLES[host|base|$f]}")
	c=$(samples_median "${SAMPLES[host|cur|$f]}")
	shown=${f/$SLEEPER/PID}
	table+="
| daemon's namespaces | ${shown#* } (${shown%% *}) | $(ns_us "$p") | $(ns_us "$b") | $(ns_us "$c") | **$(ratio_of "$c" "$b")** | $(ratio_of "$c" "$p") |"
done
for o in "${OTHER[@]}"; do
	IFS='|' read -r ns prefix what <<<"$o"
	p=$(samples_median "${SAMPLES[$ns|proc|$what]}"); c=$(samples_median "${SAMPLES[$ns|cur|$what]}")
	table+="
| \`$prefix\` | ${what#* } (${what%% *}) | $(ns_us "$p") | (wrong namespace) | $(ns_us "$c") | | $(ratio_of "$c" "$p") |"
done

section="<!-- reader_ns:begin -->
## The reader's context (issue 10)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER;
Release builds of this tree ($(git -C "$ROOT" rev-parse --short HEAD)) and of \`$BASE\` (before the
reader's context). Medians over $ROUNDS rounds of each round's median of $COUNT reads
(\`bench/readlat.c\`; orc = open + read to the end + close, pread = 4 KiB at offset 0 of a
kept-open file); arms rotate within a round.

$table

Callers in the daemon's namespaces pay, per open of an entry that depends on the reader,
one \`statx\` of their \`/proc/TID/ns/KIND\` (or \`root\`); in another network or uts
namespace also two \`setns\`; in another user or time namespace, a round trip to the
helper process in their namespaces per open and per read.
<!-- reader_ns:end -->"
write_section reader_ns "$section"
