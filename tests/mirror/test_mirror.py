"""Issue 2, Done-when 1 and 4: the mount mirrors /proc byte for byte.

Everything here compares the mount with the real /proc at the same moment; nothing
hard-codes an expected answer.  A value that changes by itself is compared in a
"sandwich" (/proc, mount, /proc): it only counts when both /proc reads agree, and a
mismatch only fails after it has repeated in several stable rounds.
"""
import collections
import ctypes
import errno
import json
import os
import re
import stat
import struct
import subprocess
import sys
import threading
import time

import pytest

from lib.mount import SAME_UID_AT_ONCE
from lib.procs import start_victim
from lib.server_trace import server_calls


@pytest.fixture(scope="module")
def mnt(kernel_layout_mnt):
    """Comparisons with the kernel's own layout (see conftest.kernel_layout_mnt)."""
    return kernel_layout_mnt

TRIES = 6           # sandwich rounds before a stable mismatch fails
READ_CAP = 1 << 20  # pagemap never reaches EOF: compare its first MiB only
CHUNK = 1 << 17

# ---------------------------------------------------------------- primitives

_SYS_GETDENTS64 = {"x86_64": 217, "aarch64": 61, "riscv64": 61, "i686": 220,
                   "armv7l": 217}.get(os.uname().machine, 217)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long

DT_NAMES = {0: "UNKNOWN", 1: "FIFO", 2: "CHR", 4: "DIR", 6: "BLK", 8: "REG", 10: "LNK",
            12: "SOCK", 14: "WHT"}
DT_DIR, DT_REG, DT_LNK = 4, 8, 10


def getdents(path, bufsize=32768):
    """The raw listing of a directory: [(name, d_type)] in getdents64 order, '.' and '..' included."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        buf = ctypes.create_string_buffer(bufsize)
        out = []
        while True:
            n = _libc.syscall(_SYS_GETDENTS64, fd, buf, ctypes.c_long(bufsize))
            if n < 0:
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e), path)
            if n == 0:
                return out
            data = buf.raw[:n]
            pos = 0
            while pos < n:
                _ino, _off, reclen, dtype = struct.unpack_from("<QqHB", data, pos)
                name = data[pos + 19:pos + reclen].split(b"\0", 1)[0]
                out.append((os.fsdecode(name), dtype))
                pos += reclen
    finally:
        os.close(fd)


def outcome(fn, *args, **kw):
    """fn(*args), or ('errno', name) if it raises OSError: errors compare like values."""
    try:
        return fn(*args, **kw)
    except OSError as e:
        return ("errno", errno.errorcode.get(e.errno, e.errno))


def read_whole(path, cap=None, chunk=CHUNK):
    """Open and read to EOF; an error says at which step (open/read) it happened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        return ("open-errno", errno.errorcode.get(e.errno, e.errno))
    data = b""
    try:
        while cap is None or len(data) < cap:
            try:
                b = os.read(fd, chunk)
            except OSError as e:
                return ("read-errno", errno.errorcode.get(e.errno, e.errno), data)
            if not b:
                break
            data += b
        return data if cap is None else data[:cap]
    finally:
        os.close(fd)


# Values masked before comparing:
#   sched "clock-delta": nanoseconds between two clock reads inside this very read, so a
#   read done by the daemon's thread legitimately differs from the caller's own;
#   smaps' proportional and shared/private counts and numa_maps' mapmax: they move
#   whenever any process of the machine maps or unmaps the same pages (a fork of libc's
#   users), in both directions, so two equal reads of /proc around the mount's do not
#   show that nothing changed.
SHARING = re.compile(rb"^((?:Pss\w*|SwapPss|Shared_\w+|Private_\w+):\s+)\d+", re.M)
# A TCP socket's timer fields (tr:tm->when, retrnsmt) count down between two reads of
# the same socket (a TIME_WAIT one's for a minute: any TCP client on the host leaves
# some, a monitoring scrape for one).
TCP_TIMERS = re.compile(rb"^(\s*\d+: \S+ \S+ \S+ \S+ )\S+ \S+", re.M)
MASKS = {"sched": (re.compile(rb"^clock-delta .*$", re.M), b"<masked>"),
         "tcp": (TCP_TIMERS, rb"\1<masked>"), "tcp6": (TCP_TIMERS, rb"\1<masked>"),
         "smaps": (SHARING, rb"\1<masked>"), "smaps_rollup": (SHARING, rb"\1<masked>"),
         "numa_maps": (re.compile(rb"mapmax=\d+"), b"mapmax=<masked>")}

# The walker thread's own entries that describe where its read stands: on /proc its
# stack is in proc_pid_stack, through the mount in request_wait_answer, and its syscall
# the one it makes then (read, or the stat the size is measured for).  Both are true;
# these are skipped for that one task.  Its state (stat, status, wchan) is compared: the
# mount gives it as /proc gives it to the task itself (fs/entries/self_state.c).
SELF_OBSERVING = {"stack", "syscall"}


def read_own_stat(path, cap=None):
    """The walker's own stat with its CPU (field 39) masked: a read through the mount is
    a sleep and a wakeup, and the scheduler may wake the walker on the other CPU (the
    server's thread runs on the one it asked from). An observer effect, like the
    voluntary context switches of its status."""
    data = read_masked(path, cap)
    if not isinstance(data, bytes):
        return data
    head, _, tail = data.rpartition(b") ")
    fields = tail.split(b" ")
    if len(fields) > 36:
        fields[36] = b"<masked>"
    return head + b") " + b" ".join(fields)


def read_masked(path, cap=None, chunk=CHUNK):
    data = read_whole(path, cap, chunk)
    mask = MASKS.get(os.path.basename(path))
    if mask is not None and isinstance(data, bytes):
        data = mask[0].sub(mask[1], data)
    return data


def pread_at(path, offset, size=65536):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        return ("open-errno", errno.errorcode.get(e.errno, e.errno))
    try:
        return os.pread(fd, size, offset)
    except OSError as e:
        return ("pread-errno", errno.errorcode.get(e.errno, e.errno))
    finally:
        os.close(fd)


def lstat_fields(path):
    st = os.lstat(path)
    return {"mode": oct(st.st_mode), "uid": st.st_uid, "gid": st.st_gid,
            "nlink": st.st_nlink, "size": st.st_size}


def target_fields(path):
    """What stat() through a link says about the target (st_dev excluded: FUSE's own)."""
    st = os.stat(path)
    return {"type": oct(stat.S_IFMT(st.st_mode)), "ino": st.st_ino, "size": st.st_size,
            "rdev": st.st_rdev}


class Mismatch(Exception):
    pass


def sandwich(fn, real, mounted, tries=TRIES):
    """Compare fn(real) with fn(mounted) between two equal reads of fn(real).

    Returns 'ok' as soon as a stable round agrees, 'unstable' when /proc never read the
    same twice in a row (or only once, e.g. a Pss that other processes move); raises
    Mismatch when at least two stable rounds disagreed and none agreed.
    """
    seen = []
    for _ in range(tries):
        before = fn(real)
        through = fn(mounted)
        after = fn(real)
        if before != after:
            continue
        if through == before:
            return "ok"
        seen.append((before, through))
    if len(seen) < 2:
        return "unstable"
    raise Mismatch(seen[-1])


# Socket tables list every socket of a network namespace, and the machine's other
# processes open and close sockets at any time (an HTTP scrape leaves TIME_WAIT rows for
# 60 s), so two equal reads of /proc around the mount's may not come in TRIES rounds.
# They are compared socket by socket instead, each row named by its columns that do not
# move while the socket lives: every socket both reads of /proc show must be in the
# mount's read, and every one there in one of them.
INET_TABLES = {"tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6"}
SOCKET_TABLES = INET_TABLES | {"unix"}


def socket_rows(data, table):
    """(header, Counter of rows by their stable columns), or None if data is no table."""
    if not isinstance(data, bytes) or not data:
        return None
    lines = data.split(b"\n")
    rows = [line.split() for line in lines[1:] if line.strip()]
    if table == "unix":  # Num RefCount Protocol Flags Type St Inode [Path]
        keys = [(f[4], f[5], f[6], b" ".join(f[7:])) for f in rows]
    else:                # sl local rem st queues timer retrnsmt uid timeout inode ...
        keys = [(f[1], f[2], f[3], f[7], f[9]) for f in rows]
    return lines[0], collections.Counter(keys)


def socket_sandwich(table):
    """sandwich() for a socket table: a round decides when the mount's sockets lie
    between what both reads of /proc show and what either shows."""
    def compare(fn, real, mounted, tries=TRIES):
        seen = []
        for _ in range(tries):
            before, through, after = fn(real), fn(mounted), fn(real)
            b, t, a = (socket_rows(x, table) for x in (before, through, after))
            if None in (b, t, a):
                if before != after:
                    continue
                if through == before:
                    return "ok"
            elif b[0] == t[0] == a[0] and b[1] & a[1] <= t[1] <= b[1] | a[1]:
                return "ok"
            elif before != after:
                continue
            seen.append((before, through))
        if len(seen) < 2:
            return "unstable"
        raise Mismatch(seen[-1])
    return compare


def short(v, n=300):
    r = repr(v)
    return r if len(r) <= n else r[:n] + "...(%d chars)" % len(r)


def first_diff(a, b):
    if isinstance(a, bytes) and isinstance(b, bytes):
        i = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        return "len /proc=%d mount=%d, first difference at byte %d: /proc %r | mount %r" % (
            len(a), len(b), i, a[max(0, i - 40):i + 80], b[max(0, i - 40):i + 80])
    return "/proc %s | mount %s" % (short(a), short(b))


# ---------------------------------------------------------------- the walk

class Walk:
    """Everything under /proc/PID compared with MOUNT/PID, one category at a time."""

    CATEGORIES = ("files", "listings", "links", "lstat")

    def __init__(self, mnt, pid, fd_filter=None, walker_tid=None):
        self.mnt = mnt
        self.pid = pid
        self.fd_filter = fd_filter  # for the test process: ignore its own transient fds
        self.walker_tid = walker_tid  # for the test process: the thread doing the walk
        self.ok = {c: [] for c in self.CATEGORIES}
        self.unstable = {c: [] for c in self.CATEGORIES}
        self.bad = {c: [] for c in self.CATEGORIES}
        self._dir("")

    def _check(self, cat, rel, fn, compare=sandwich, **kw):
        real = os.path.join("/proc", str(self.pid), rel)
        mounted = self.mnt.p(self.pid, rel) if rel else self.mnt.p(self.pid)
        try:
            r = compare(lambda p: outcome(fn, p, **kw), real, mounted)
        except Mismatch as m:
            a, b = m.args[0]
            self.bad[cat].append("%s: %s" % (real, first_diff(a, b)))
            return
        (self.ok if r == "ok" else self.unstable)[cat].append(rel)

    def _skip_fd(self, rel):
        parts = rel.split("/")
        return (self.fd_filter is not None and len(parts) >= 2 and parts[-2] in ("fd", "fdinfo")
                and parts[-1].isdigit() and int(parts[-1]) not in self.fd_filter)

    def _dir(self, rel):
        real = os.path.join("/proc", str(self.pid), rel)
        self._check("lstat", rel, lstat_fields)
        listing = self._listing(rel)
        try:
            entries = getdents(real)
        except OSError:
            return  # the listing comparison above recorded the errno agreement (or not)
        for name, dtype in entries:
            if name in (".", ".."):
                continue
            sub = os.path.join(rel, name)
            if self._skip_fd(sub):
                continue
            if dtype == DT_DIR:
                self._dir(sub)
                continue
            walker_own = (self.walker_tid is not None and name in SELF_OBSERVING
                          and rel == "task/%d" % self.walker_tid)
            if not walker_own:
                self._check("lstat", sub, lstat_fields)
            if dtype == DT_LNK:
                self._check("links", sub, os.readlink)
            elif dtype == DT_REG:
                if walker_own:
                    continue
                cap = READ_CAP if name == "pagemap" else None
                table = os.path.basename(rel) == "net" and name in SOCKET_TABLES
                own_stat = (self.walker_tid is not None and name == "stat"
                            and rel == "task/%d" % self.walker_tid)
                self._check("files", sub, read_own_stat if own_stat else read_masked, cap=cap,
                            compare=socket_sandwich(name) if table else sandwich)
        return listing

    def _listing(self, rel):
        def ls(path):
            entries = getdents(path)
            if self.fd_filter is not None and os.path.basename(rel) in ("fd", "fdinfo"):
                entries = [e for e in entries if not e[0].isdigit() or int(e[0]) in self.fd_filter]
            return [(n, DT_NAMES.get(t, t)) for n, t in entries]
        self._check("listings", rel, ls)

    def report(self, cat):
        return "%d compared, %d unstable on /proc (skipped), %d mismatches:\n%s" % (
            len(self.ok[cat]), len(self.unstable[cat]), len(self.bad[cat]),
            "\n".join(self.bad[cat][:60]))


def stable_own_fds():
    """The test process's fds that stay open (the listing's own fd is gone afterwards)."""
    fds = set()
    for n in os.listdir("/proc/self/fd"):
        try:
            os.readlink("/proc/self/fd/" + n)
            fds.add(int(n))
        except OSError:
            pass
    return fds


_walks = {}


@pytest.fixture(scope="module", params=["victim", "self"])
def walk(request, mnt, victim):
    """One full walk per subject (the victim, and this test process), shared by the tests."""
    if request.param not in _walks:
        if request.param == "victim":
            _walks["victim"] = Walk(mnt, victim.pid)
        else:
            # Walk from a second thread: the leader then sleeps in join() and its own
            # stat/stack read the same on /proc and through the mount.
            _walks["self"] = in_thread(lambda: Walk(mnt, os.getpid(), fd_filter=stable_own_fds(),
                                                    walker_tid=threading.get_native_id()))
    yield _walks[request.param]


# ---------------------------------------------------------------- Done-when 1

@pytest.mark.parametrize("cat", Walk.CATEGORIES)
def test_tree_matches_proc(walk, cat, victim):
    assert not walk.bad[cat], "pid %d %s: %s" % (walk.pid, cat, walk.report(cat))
    # The walk must have compared something real, not skipped everything as unstable.
    assert walk.ok[cat], walk.report(cat)
    if walk.pid == victim.pid:
        # The victim sleeps: these must have been compared (not skipped as unstable).
        must = {
            "files": ["cmdline", "comm", "environ", "maps", "smaps", "mountinfo", "status",
                      "stat", "limits", "net/tcp", "net/unix",
                      "fdinfo/%d" % victim.fds["file"], "fdinfo/%d" % victim.fds["eventfd"]]
            + ["task/%d/%s" % (t, f) for t in victim.tids for f in ("comm", "stat", "status")],
            "listings": ["", "fd", "fdinfo", "task", "ns", "map_files", "net", "attr"]
            + ["task/%d" % t for t in victim.tids],
            "links": ["cwd", "root", "exe"] + ["fd/%d" % n for n in victim.fds.values()]
            + ["ns/" + n for n in os.listdir("/proc/%d/ns" % victim.pid)],
            "lstat": ["", "fd", "task", "exe", "maps"]
            + ["fd/%d" % n for n in victim.fds.values()],
        }[cat]
        missing = [m for m in must if m not in walk.ok[cat]]
        assert not missing, "%s not compared (unstable or absent): %s" % (cat, missing)


def test_victim_threads_named(mnt, victim):
    """The thread names the victim set are visible through the mount, as on /proc."""
    for t in victim.tids:
        real = read_whole("/proc/%d/task/%d/comm" % (victim.pid, t))
        assert read_whole(mnt.p(victim.pid, "task", t, "comm")) == real
    assert sorted(os.listdir(mnt.p(victim.pid, "task"))) == sorted(
        os.listdir("/proc/%d/task" % victim.pid))


# Files read at offsets, whose bytes two equal reads of /proc pin down (not smaps nor
# numa_maps: see MASKS; the walk compares them whole).
BIG = ["maps", "mountinfo", "mountstats", "status", "environ", "cmdline", "net/unix",
       "net/tcp", "net/netlink"]


@pytest.mark.parametrize("who", ["victim", "self"])
@pytest.mark.parametrize("name", BIG)
def test_pread_offsets(mnt, victim, who, name):
    """pread at various offsets, and reads in odd chunk sizes, give /proc's bytes."""
    if who == "victim":
        _pread_offsets(mnt, victim.pid, name)
    else:
        # From a second thread, so that the leader whose status/stat is read sleeps in
        # join() (on /proc a self-reading leader is "R", through the mount "S").
        in_thread(_pread_offsets, mnt, os.getpid(), name)


def in_thread(fn, *args):
    res = {}

    def run():
        try:
            res["r"] = fn(*args)
        except BaseException as e:  # re-raised in the caller
            res["e"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "e" in res:
        raise res["e"]
    return res["r"]


def _pread_offsets(mnt, pid, name):
    real, mounted = "/proc/%d/%s" % (pid, name), mnt.p(pid, name)
    whole = read_whole(real)
    end = len(whole) if isinstance(whole, bytes) else 0
    offsets = [0, 1, 100, 4096, max(end - 10, 0), end, end + 1, end + 4096, 1 << 30]
    bad = []
    for off in offsets:
        for size in (1, 4096, 65536):
            try:
                sandwich(lambda p: pread_at(p, off, size), real, mounted)
            except Mismatch as m:
                bad.append("pread(%d, off=%d): %s" % (size, off, first_diff(*m.args[0])))
    for chunk in (7, 1000, 4096):
        try:
            sandwich(lambda p: read_whole(p, chunk=chunk), real, mounted)
        except Mismatch as m:
            bad.append("read in %d-byte chunks: %s" % (chunk, first_diff(*m.args[0])))
    assert not bad, "%s:\n%s" % (real, "\n".join(bad))


def _first_mapping(pid):
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            rng, perms = line.split()[:2]
            if perms.startswith("r"):
                return int(rng.split("-")[0], 16)
    raise AssertionError("no readable mapping")


@pytest.mark.parametrize("name", ["mem", "pagemap"])
def test_mem_and_pagemap_at_offsets(mnt, victim, name):
    """mem and pagemap are position-addressed: compare them at a mapped address and at 0."""
    addr = _first_mapping(victim.pid)
    off = addr if name == "mem" else addr // 4096 * 8
    real, mounted = "/proc/%d/%s" % (victim.pid, name), mnt.p(victim.pid, name)
    for o, size in ((off, 64), (off, 4096), (0, 64)):
        assert sandwich(lambda p: pread_at(p, o, size), real, mounted) == "ok", (name, o)
    # Sanity: the real mem read at the mapping returned bytes (so the comparison means something).
    assert isinstance(pread_at(real, off, 64), bytes)


def _absolute(text):
    return text.startswith("/")


@pytest.mark.parametrize("kind", ["file", "deleted", "pipe_r", "pipe_w", "tcp", "unix",
                                  "eventfd", "memfd"])
def test_stat_through_fd(mnt, victim, kind):
    """stat() through MOUNT/PID/fd/N gives the real target's type, inode, size and rdev."""
    n = victim.fds[kind]
    real = "/proc/%d/fd/%d" % (victim.pid, n)
    mounted = mnt.p(victim.pid, "fd", n)
    text = os.readlink(real)
    assert os.readlink(mounted) == text
    want = target_fields(real)
    got = outcome(target_fields, mounted)
    if _absolute(text):
        # Over FUSE an fd entry is a plain symlink: the kernel resolves an absolute text
        # itself and never asks the daemon.  So stat through the mount is stat of the
        # literal path: the real file for "file"; for "deleted" and memfd the text ends in
        # " (deleted)" and names nothing (documented limit, DESIGN.md).
        assert got == outcome(target_fields, text)
        if kind == "file":
            assert got == want
        return
    if want["type"] == oct(0):
        # Anon inodes (eventfd, epoll...) have file type 0, which FUSE cannot return (the
        # kernel rejects such an attr with EIO).  The daemon's documented policy (fs/request/link.c,
        # link_target_fixup) shows them as regular files with the real inode, size and rdev
        # and the real permission bits; everything else must still match.
        assert got == dict(want, type=oct(stat.S_IFREG)), got
        assert stat.S_IMODE(os.stat(mounted).st_mode) == stat.S_IMODE(os.stat(real).st_mode)
        assert lstat_fields(mounted) == lstat_fields(real)
        return
    # socket:[N] and pipe:[N] are relative: the hidden lookup in PID/fd answers them.
    assert got == want, "%s -> %s" % (mounted, text)


def test_stat_through_ns(mnt, victim):
    names = sorted(os.listdir("/proc/%d/ns" % victim.pid))
    assert sorted(os.listdir(mnt.p(victim.pid, "ns"))) == names
    for n in names:
        real, mounted = "/proc/%d/ns/%s" % (victim.pid, n), mnt.p(victim.pid, "ns", n)
        assert os.readlink(mounted) == os.readlink(real)
        assert outcome(target_fields, mounted) == target_fields(real), n
        assert lstat_fields(mounted) == lstat_fields(real), n


@pytest.mark.parametrize("name", ["cwd", "root", "exe"])
def test_stat_through_path_links(mnt, victim, name):
    """cwd/root/exe texts are absolute paths: stat through the mount is the real target."""
    real, mounted = "/proc/%d/%s" % (victim.pid, name), mnt.p(victim.pid, name)
    assert os.readlink(mounted) == os.readlink(real)
    st_r, st_m = os.stat(real), os.stat(mounted)
    assert (st_m.st_mode, st_m.st_ino, st_m.st_dev, st_m.st_size) == (
        st_r.st_mode, st_r.st_ino, st_r.st_dev, st_r.st_size)


def test_stat_through_self_fds(mnt):
    """The same for this process's own pipe and socket (not just the victim's)."""
    r, w = os.pipe()
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        for fd in (r, w, s.fileno()):
            real = "/proc/%d/fd/%d" % (os.getpid(), fd)
            mounted = mnt.p(os.getpid(), "fd", fd)
            assert os.readlink(mounted) == os.readlink(real)
            assert outcome(target_fields, mounted) == target_fields(real), os.readlink(real)
    finally:
        s.close()
        os.close(r)
        os.close(w)


# ------------------------------------------ link targets among many fds (issue 21)

MANY_FDS = 19000  # the count; within a hard RLIMIT_NOFILE of 20,000 (no CAP_SYS_RESOURCE)
MANY_FDS_SNIPPET = r"""
import json, os, resource, socket, sys
n = int(sys.argv[1])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
if hard != resource.RLIM_INFINITY and hard < n + 64:
    try:
        hard = n + 64
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        sys.exit("RLIMIT_NOFILE: cannot open %d files" % n)
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 64, hard))
null = os.open("/dev/null", os.O_RDONLY)
while os.dup(null) < n - 1000:
    pass
pairs = [socket.socketpair() for _ in range(500)]
spare = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
print(json.dumps({"socks": [s.fileno() for p in pairs for s in p], "spare": spare.fileno()}),
      flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def many_fds():
    """A process of MANY_FDS descriptors whose last ones (listed last) are 1,000 sockets,
    and one more that no test stats through the mount: (pid, [socket fds], spare fd).
    Each socket's name in fd/ is looked up once (the kernel then keeps it while the
    process lives, entry.c), so each test stats sockets of its own."""
    p = subprocess.Popen([sys.executable, "-c", MANY_FDS_SNIPPET, str(MANY_FDS)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(p.stdout.readline())
        yield p.pid, info["socks"], info["spare"]
    finally:
        p.stdin.close()
        p.wait(timeout=30)


def test_socket_fd_target_is_one_link_not_a_scan(mnt, many_fds):
    """stat() through PID/fd/N of a socket among 19,000 fds: the kernel reads the link, then
    looks its text ("socket:[X]") up in PID/fd. The daemon answers with the socket's own
    attributes by reading the one link that this thread's readlink named; a text that no
    readlink of this thread just gave ("socket:[1]", another socket's) is ENOENT, as /proc
    says. Neither reads the directory's 19,000 links (it did, 35 ms a lookup)."""
    pid, socks, spare = many_fds
    socks = socks[-8:]
    real = "/proc/%d/fd/" % pid
    want = {n: target_fields(real + str(n)) for n in socks}
    other = os.readlink(real + str(spare))
    got = {}

    def stats():
        for n in socks:
            got[n] = outcome(target_fields, mnt.p(pid, "fd", n))
        for name in ("socket:[1]", other):
            got[name] = outcome(os.stat, mnt.p(pid, "fd", name))

    calls = server_calls(mnt, stats)
    # a few per request (the link, the caller's namespaces), not one per fd
    assert calls < 1000, "%d readlinkat/getdents64 for %d lookups" % (calls, len(socks) + 2)
    assert {n: got[n] for n in socks} == want
    assert all(stat.S_ISSOCK(int(w["type"], 8)) for w in want.values())
    for name in ("socket:[1]", other):
        assert got[name] == outcome(os.stat, real + name) == ("errno", "ENOENT"), name


def test_socket_fd_targets_from_many_threads(mnt, many_fds):
    """Threads stat()ing different sockets of one fd/ at once (each a first lookup of its
    text) each get their own socket's attributes: one caller's readlink never stands for,
    nor evicts, another's."""
    pid, socks, _ = many_fds
    socks = socks[:-8]
    want = {n: os.stat("/proc/%d/fd/%d" % (pid, n)).st_ino for n in socks}
    bad = []

    def loop(mine):
        for n in mine:
            got = outcome(lambda: os.stat(mnt.p(pid, "fd", n)).st_ino)
            if got != want[n]:
                bad.append((n, got))

    threads = [threading.Thread(target=loop, args=(socks[i::SAME_UID_AT_ONCE],))
               for i in range(SAME_UID_AT_ONCE)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


OPEN_SNIPPET = r"""
import os, sys
try:
    fd = os.open(sys.argv[1], int(sys.argv[2]))
except OSError as e:
    print("errno", e.errno)
else:
    print("opened")
"""


@pytest.mark.parametrize("flags", ["O_RDONLY", "O_WRONLY", "O_RDWR"])
@pytest.mark.parametrize("end", ["pipe_r", "pipe_w"])
def test_open_pipe_link_does_not_hang(mnt, victim, end, flags):
    """Opening MOUNT/PID/fd/<pipe> returns (works or fails with an errno), never hangs."""
    path = mnt.p(victim.pid, "fd", victim.fds[end])
    p = subprocess.Popen([sys.executable, "-c", OPEN_SNIPPET, path, str(getattr(os, flags))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("open(%s, %s) hung for 10 s" % (path, flags))
    assert p.returncode == 0, err
    assert out.split()[0] in ("opened", "errno"), out
    assert victim.proc.poll() is None  # and the victim is unharmed


# ---------------------------------------------------------------- Done-when 4

def _self_links(mnt):
    return (os.readlink(mnt.p("self")), os.readlink(mnt.p("thread-self")),
            read_whole(mnt.p("self", "stat")).split(b" ")[0],
            read_whole(mnt.p("thread-self", "stat")).split(b" ")[0])


def _want(pid, tid):
    return (str(pid), "%d/task/%d" % (pid, tid), str(pid).encode(), str(tid).encode())


def test_self_names_reader(mnt):
    assert _self_links(mnt) == _want(os.getpid(), threading.get_native_id())
    # and exactly what /proc says for the same reader
    assert os.readlink(mnt.p("self")) == os.readlink("/proc/self")
    assert os.readlink(mnt.p("thread-self")) == os.readlink("/proc/thread-self")
    for name in ("self", "thread-self"):
        assert lstat_fields(mnt.p(name)) == lstat_fields("/proc/" + name), name


def test_thread_self_from_other_threads(mnt):
    results = {}

    def run(i):
        try:
            results[i] = (_self_links(mnt), _want(os.getpid(), threading.get_native_id()),
                          os.readlink("/proc/thread-self"))
        except Exception as e:  # reported below
            results[i] = e
    threads = [threading.Thread(target=run, args=(i,)) for i in range(SAME_UID_AT_ONCE)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, r in results.items():
        assert not isinstance(r, Exception), r
        got, want, real = r
        assert got == want, "thread %d" % i
        assert got[1] == real
    # as many distinct tids were checked
    assert len({r[1][1] for r in results.values()}) == SAME_UID_AT_ONCE


SELF_SNIPPET = r"""
import os, sys, threading
m = sys.argv[1]
def rd(p):
    with open(p, "rb") as f:
        return f.read().split(b" ")[0].decode()
out = []
def one():
    out.append([os.readlink(m + "/self"), os.readlink(m + "/thread-self"),
                rd(m + "/self/stat"), rd(m + "/thread-self/stat"),
                str(os.getpid()), "%d/task/%d" % (os.getpid(), threading.get_native_id()),
                str(threading.get_native_id())])
one()
t = threading.Thread(target=one); t.start(); t.join()
print(repr(out))
"""


def test_self_from_subprocesses(mnt):
    """Several processes in a row: a cached answer for the previous reader would show."""
    seen = set()
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", SELF_SNIPPET, mnt.path], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        for self_l, thread_l, self_stat, thread_stat, pid, want_thread, tid in eval(r.stdout):
            assert self_l == pid and self_stat == pid
            assert thread_l == want_thread and thread_stat == tid
            seen.add(pid)
    assert len(seen) == 3


# ---------------------------------------------------------------- root listing

def _is_thread_not_leader(n):
    try:
        with open("/proc/%d/status" % n) as f:
            for line in f:
                if line.startswith("Tgid:"):
                    return int(line.split()[1]) != n
    except OSError:
        return False
    return False


def _split(listing):
    static = [(n, t) for n, t in listing if not n.isdigit()]
    pids = [(int(n), t) for n, t in listing if n.isdigit()]
    kinds = []
    for n, _t in listing:
        k = "pid" if n.isdigit() else "static"
        if not kinds or kinds[-1] != k:
            kinds.append(k)
    return static, pids, kinds


@pytest.mark.parametrize("bufsize", [32768, 600])
def test_root_listing(mnt, victim, bufsize):
    """Static names identical and in order; every pid that lived throughout is listed, in
    ascending order, as a directory; no non-leader thread is listed (but it resolves)."""
    before = getdents("/proc", bufsize)
    through = getdents(mnt.path, bufsize)
    after = getdents("/proc", bufsize)
    s_b, p_b, k_b = _split(before)
    s_m, p_m, k_m = _split(through)
    s_a, _p_a, _ = _split(after)
    assert s_b == s_a  # /proc's own static part is stable
    assert s_m == s_b
    assert k_m == k_b  # pids in the same place relative to the static names
    listed = [p for p, _ in p_m]
    assert listed == sorted(listed) and len(set(listed)) == len(listed)
    lived = {p for p, _ in p_b} & {int(n) for n, _ in after if n.isdigit()}
    missing = sorted(lived - set(listed))
    assert not missing, "pids alive throughout but not listed: %s" % missing
    real_types = dict(p_b)
    assert [t for p, t in p_m if p in real_types] == [real_types[p] for p in listed
                                                      if p in real_types]
    assert victim.pid in listed
    threads = [p for p in listed if _is_thread_not_leader(p)]
    assert not threads, "non-leader threads listed at the root: %s" % threads
    for t in victim.tids[1:]:
        assert t not in listed
        # ... but MOUNT/TID still resolves, as /proc/TID does
        assert lstat_fields(mnt.p(t)) == lstat_fields("/proc/%d" % t)
        assert read_whole(mnt.p(t, "comm")) == read_whole("/proc/%d/comm" % t)


def test_root_listing_follows_process_lifetime(mnt):
    """A process started just now is listed, and one that exited is gone, as on /proc."""
    v = start_victim("--threads", 1)
    try:
        assert str(v.pid) in [n for n, _ in getdents(mnt.path)]
        assert str(v.tids[1]) not in [n for n, _ in getdents(mnt.path)]
    finally:
        assert v.stop() == 0
    real = outcome(os.lstat, "/proc/%d" % v.pid)
    assert real[0] == "errno"  # gone from /proc (pid not reused this fast)
    assert str(v.pid) not in [n for n, _ in getdents(mnt.path)]
    assert outcome(os.lstat, mnt.p(v.pid)) == real
