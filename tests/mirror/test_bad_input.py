"""Done-when 5 of issue 2: bad input gives /proc's errno and never hurts the daemon.

Every operation is done the same way on /proc and on the mount and the outcomes
(errno, or a summary of the result) must be equal.  After each test the daemon must
still be running and serving.
"""
import ctypes
import errno
import os
import signal
import stat
import subprocess
import time

import pytest

from lib.procs import Stepper, start_with_pid
from lib.waiting import wait_for


@pytest.fixture(scope="module")
def mnt(kernel_layout_mnt):
    """Comparisons with the kernel's own layout (see conftest.kernel_layout_mnt)."""
    return kernel_layout_mnt

libc = ctypes.CDLL(None, use_errno=True)
SYS_getdents64 = 217  # x86_64


@pytest.fixture(autouse=True)
def daemon_alive(mnt):
    yield
    assert mnt.proc.poll() is None, "procfast died:\n" + mnt.output()[-4000:]
    with open(mnt.p("self", "stat")) as f:
        assert f.read().split()[0] == str(os.getpid())


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except OSError as e:
        return ("err", errno.errorcode.get(e.errno, e.errno))


def stat_summary(path, follow=True):
    st = os.stat(path) if follow else os.lstat(path)
    return (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def both(mnt, fn, rel):
    return outcome(fn, os.path.join("/proc", rel)), outcome(fn, mnt.p(rel))


def assert_same(mnt, fn, rels):
    bad = []
    for rel in rels:
        a, b = both(mnt, fn, rel)
        if a != b:
            bad.append("%s(%r): /proc %r, mount %r" % (fn.__name__, rel, a, b))
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------- lookups

ODD_NAMES = [
    "0", "-1", "01", "001", "1x", "x1", "+1", " 1", "1 ", "1\n", "\t1", "0x1", "1.0", "1e3",
    "4294967296", "4294967295", "4294967297", "2147483647", "2147483648", "-2147483648",
    "18446744073709551615", "18446744073709551616", "99999999999999999999999999",
    "4194304", "4194305", "a" * 255, "9" * 255, "self ", "Self", "self/", "thread-self.",
    "\x01", "\x7f", "\xff", "é", "%d", "%s%s%s", "*", "?", "\\", "'", "\"", "..." ,
    ".hidden", "sys ", "uptime~",
]


def name_ops():
    def st(p):
        return stat_summary(p)

    def lst(p):
        return stat_summary(p, follow=False)

    def rl(p):
        return os.readlink(p)

    def rd(p):
        with open(p, "rb") as f:
            return len(f.read(0))

    def ls(p):
        return sorted(os.listdir(p))
    return st, lst, rl, rd, ls


@pytest.mark.parametrize("where", ["", "1", "self", "self/fd", "self/task", "self/ns",
                                   "sys", "sys/kernel", "net", "1/task/1", "self/fdinfo",
                                   "self/map_files", "self/attr"])
def test_odd_names(mnt, where):
    rels = [os.path.join(where, n) for n in ODD_NAMES]
    for fn in name_ops():
        assert_same(mnt, fn, rels)


def test_name_too_long(mnt):
    """procfs does not enforce NAME_MAX itself: a 256-byte name is simply not found
    (ENOENT).  The FUSE kernel module refuses names over 1024 bytes (FUSE_NAME_MAX) with
    ENAMETOOLONG before asking the daemon, so for those only 'fails' is compared."""
    for where in ("", "self", "self/fd", "self/task", "sys", "sys/kernel", "1/ns"):
        for n in ("a" * 255, "1" * 255, "a" * 256, "1" * 256, "9" * 1024, "a" * 1024):
            rel = os.path.join(where, n)
            for fn in (os.lstat, os.stat, os.readlink, os.listdir):
                a, b = both(mnt, fn, rel)
                assert a[0] == "err" and a == b, (fn.__name__, rel[:40], len(n), a, b)
        for n in ("a" * 1025, "1" * 4000):
            a, b = both(mnt, os.lstat, os.path.join(where, n))
            assert a[0] == b[0] == "err", (where, len(n), a, b)
    a, b = both(mnt, os.lstat, "a" * 255)
    assert a == b == ("err", "ENOENT")


def test_bytes_names(mnt):
    """Names that are not valid UTF-8 (bytes paths)."""
    for raw in (b"\xff", b"1\xff", b"\x80\x80", b"\xc3(", b"1\x00"[:1] + b"\x01", b"\xfe" * 255):
        for where in (b"", b"self/", b"self/fd/", b"sys/"):
            a = outcome(os.lstat, b"/proc/" + where + raw)
            b = outcome(os.lstat, mnt.path.encode() + b"/" + where + raw)
            a = a if a[0] == "err" else ("ok", stat.S_IFMT(a[1].st_mode))
            b = b if b[0] == "err" else ("ok", stat.S_IFMT(b[1].st_mode))
            assert a == b, (where + raw, a, b)


def test_dotdot_at_root(mnt):
    """'..' at the root is resolved by the kernel: it leaves the mount to the directory
    that holds it (like /proc/.. is /), and '..' below the root stays inside."""
    root = os.stat(mnt.path)
    parent = os.stat(os.path.dirname(mnt.path))
    up = os.stat(mnt.p(".."))
    assert (up.st_dev, up.st_ino) == (parent.st_dev, parent.st_ino)
    assert (os.stat("/proc/..").st_ino, os.stat("/proc/..").st_dev) == \
        (os.stat("/").st_ino, os.stat("/").st_dev)
    for rel in ("1/..", "self/..", "sys/..", "1/task/..", "1/task/1/../..", "self/fd/..",
                "sys/kernel/../.."):
        s = os.stat(mnt.p(rel))
        exp = os.stat(os.path.normpath(os.path.join("/proc", rel)))
        got_rel = os.path.normpath(rel)
        s2 = os.stat(mnt.p(got_rel)) if got_rel != "." else root
        assert (s.st_dev, s.st_ino) == (s2.st_dev, s2.st_ino), rel
        assert stat.S_IFMT(s.st_mode) == stat.S_IFMT(exp.st_mode)
    # a directory fd of the root: '..' via openat stays consistent
    fd = os.open(mnt.path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert os.stat("..", dir_fd=fd).st_ino == parent.st_ino
        assert sorted(os.listdir(fd))[:3] == sorted(os.listdir(mnt.path))[:3]
    finally:
        os.close(fd)
    # with the mount over /proc, /proc/.. is / exactly as with the real /proc
    from lib.bind import over_proc
    r = over_proc(mnt, "stat -c %d:%i /proc/.. /proc/1/.. /proc/self/../..")
    assert r.returncode == 0, r.stderr
    ino_root = "%d:%d" % (os.stat("/").st_dev, os.stat("/").st_ino)
    lines = r.stdout.split()
    assert lines[0] == ino_root and lines[2] == ino_root


# --------------------------------------------------------------------------- readdir

def getdents(fd, size=32768):
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(SYS_getdents64, fd, buf, size)
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    names = []
    off = 0
    raw = buf.raw[:n]
    while off < n:
        reclen = int.from_bytes(raw[off + 16:off + 18], "little")
        dtype = raw[off + 18]
        name = raw[off + 19:off + reclen].split(b"\0", 1)[0]
        names.append((name.decode("latin-1"), dtype))
        off += reclen
    return names


def read_at(path, offset, size=32768, whence=os.SEEK_SET):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            pos = os.lseek(fd, offset, whence)
        except OSError as e:
            return ("lseek", errno.errorcode[e.errno])
        except OverflowError:
            return ("lseek", "overflow")
        try:
            ents = getdents(fd, size)
        except OSError as e:
            return ("getdents", errno.errorcode[e.errno])
        # after a read at an absurd offset, the next read must also be sane
        try:
            more = getdents(fd, size)
        except OSError as e:
            more = errno.errorcode[e.errno]
        return (pos, ents, more)
    finally:
        os.close(fd)


ABSURD = [2 ** 62, 2 ** 63 - 1, 2 ** 63 - 2, -1, -2 ** 62, 2 ** 40, 2 ** 33, 2 ** 32,
          2 ** 32 + 3, 2 ** 31, 2 ** 31 - 1, 10 ** 12]


@pytest.mark.parametrize("rel", ["", "1", "self/fd", "self/fdinfo", "self/task", "self/ns",
                                 "sys", "sys/kernel", "net", "self/task/%d" % os.getpid(),
                                 "1/task"])
def test_readdir_absurd_offsets(mnt, rel):
    bad = []
    for off in ABSURD:
        a = read_at(os.path.join("/proc", rel), off)
        b = read_at(mnt.p(rel), off)
        # procfs's s_maxbytes is 2**31-1: its lseek refuses larger directory offsets with
        # EINVAL, where FUSE's lseek (kernel-side, never reaches the daemon) accepts them.
        # Then the daemon must either refuse the read with the same errno or list
        # nothing (end of directory), twice.
        if off > 2 ** 31 - 1 and a == ("lseek", "EINVAL") and \
                (b == ("getdents", "EINVAL") or b == (off, [], [])):
            continue
        if a != b:
            bad.append("offset %d: /proc %r, mount %r" % (off, a, b))
    # SEEK_CUR with absurd values.  (Not SEEK_END: the kernel computes it from the
    # inode size, and FUSE directories carry the st_size procfs reports, e.g. the fd
    # count of fd/, where procfs's own inode size is 0: a kernel-side difference.)
    for whence in (os.SEEK_CUR,):
        for off in (0, 1, -1, 2 ** 31 - 1):
            a = read_at(os.path.join("/proc", rel), off, whence=whence)
            b = read_at(mnt.p(rel), off, whence=whence)
            if a[0] != b[0] or (a[0] == "lseek" and a != b):
                bad.append("whence %d offset %d: /proc %r, mount %r" % (whence, off, a, b))
    assert not bad, "\n".join(bad)


def test_getdents_tiny_buffers(mnt):
    """A buffer too small for one entry gives EINVAL on both."""
    for rel in ("", "self", "self/fd"):
        for size in (1, 8, 19, 24):
            res = []
            for base in ("/proc", mnt.path):
                fd = os.open(os.path.join(base, rel), os.O_RDONLY | os.O_DIRECTORY)
                try:
                    res.append(outcome(getdents, fd, size))
                finally:
                    os.close(fd)
            a, b = res
            assert a[0] == b[0], (rel, size, a, b)
            if a[0] == "err":
                assert a == b, (rel, size, a, b)


def test_readdir_on_files(mnt):
    """getdents on a regular file fd: ENOTDIR on both; O_DIRECTORY on a file: ENOTDIR."""
    for rel in ("uptime", "self/status", "sys/kernel/ostype"):
        a, b = both(mnt, lambda p: os.open(p, os.O_RDONLY | os.O_DIRECTORY), rel)
        assert a == b == ("err", "ENOTDIR")
        res = []
        for base in ("/proc", mnt.path):
            fd = os.open(os.path.join(base, rel), os.O_RDONLY)
            try:
                res.append(outcome(getdents, fd))
            finally:
                os.close(fd)
        assert res[0] == res[1], (rel, res)


# --------------------------------------------------------------------------- reads

READ_FILES = ["uptime", "meminfo", "version", "self/status", "self/stat", "self/maps",
              "self/environ", "self/cmdline", "self/comm", "self/auxv", "self/limits",
              "self/mountinfo", "self/smaps", "self/wchan", "self/oom_score_adj",
              "sys/kernel/ostype", "sys/kernel/pid_max", "1/status", "1/cmdline", "self/mem",
              "self/pagemap", "self/task/%d/stat" % os.getpid(), "self/fdinfo/0", "net/tcp"]
OFFSETS = [0, 10 ** 6, 2 ** 31, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 200, -1]


@pytest.mark.parametrize("rel", READ_FILES)
def test_read_past_end(mnt, rel):
    def pread_at(path, off):
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.pread(fd, 100, off)
            # not the bytes (they may change), only whether it returned data
            return len(data) > 0
        finally:
            os.close(fd)
    bad = []
    for off in OFFSETS:
        if rel in ("self/mem", "self/pagemap") and off < 2 ** 40:
            continue   # real memory of the reader; compared only at impossible addresses
        a = outcome(pread_at, os.path.join("/proc", rel), off)
        b = outcome(pread_at, mnt.p(rel), off)
        if a != b:
            bad.append("pread(%s, 100, %d): /proc %r, mount %r" % (rel, off, a, b))
    # lseek is decided by the kernel for a FUSE file, not by the daemon, so only the
    # plain cases are compared: not SEEK_END (FUSE computes it from st_size 0 where
    # procfs's seq files say EINVAL), not offsets above 2**31-1 (procfs's s_maxbytes
    # refuses them with EINVAL, FUSE's is 2**63-1), and not mem/pagemap (mem_lseek's
    # unsigned offsets).  Reads at those offsets are compared above.
    for whence in (os.SEEK_CUR, os.SEEK_SET):
        if rel in ("self/mem", "self/pagemap"):
            break
        for off in (0, 5, -5, 2 ** 31 - 1):
            def seek(path):
                fd = os.open(path, os.O_RDONLY)
                try:
                    return os.lseek(fd, off, whence) >= 0
                finally:
                    os.close(fd)
            a = outcome(seek, os.path.join("/proc", rel))
            b = outcome(seek, mnt.p(rel))
            if a != b:
                bad.append("lseek(%s, %d, %d): /proc %r, mount %r" % (rel, off, whence, a, b))
    assert not bad, "\n".join(bad)


def test_read_sequential_past_end(mnt):
    """Reading on after EOF keeps returning b'' (and the content equals /proc's)."""
    for rel in ("version", "self/cmdline", "sys/kernel/ostype", "self/environ"):
        out = []
        for base in ("/proc", mnt.path):
            with open(os.path.join(base, rel), "rb", buffering=0) as f:
                data = f.read()
                out.append((data, f.read(), f.read(1), f.read(100000)))
        assert out[0] == out[1], rel


# --------------------------------------------------------------------------- exited process

def start_short():
    p = subprocess.Popen(["sleep", "3600"])
    deadline = time.time() + 5
    while True:
        with open("/proc/%d/stat" % p.pid) as f:
            if f.read().split(") ")[1].split()[0] == "S" and \
                    os.readlink("/proc/%d/exe" % p.pid).endswith("sleep"):
                return p
        assert time.time() < deadline
        time.sleep(0.01)


def hold(base, pid):
    """Open what a reader would hold on PID: dir fds, file fds (positioned at 0)."""
    d = os.path.join(base, str(pid))
    return {
        "dir": os.open(d, os.O_RDONLY | os.O_DIRECTORY),
        "fddir": os.open(os.path.join(d, "fd"), os.O_RDONLY | os.O_DIRECTORY),
        "taskdir": os.open(os.path.join(d, "task"), os.O_RDONLY | os.O_DIRECTORY),
        "tiddir": os.open(os.path.join(d, "task", str(pid)), os.O_RDONLY | os.O_DIRECTORY),
        "status": os.open(os.path.join(d, "status"), os.O_RDONLY),
        "stat": os.open(os.path.join(d, "stat"), os.O_RDONLY),
        "environ": os.open(os.path.join(d, "environ"), os.O_RDONLY),
        "maps": os.open(os.path.join(d, "maps"), os.O_RDONLY),
        "cmdline": os.open(os.path.join(d, "cmdline"), os.O_RDONLY),
        "oom": os.open(os.path.join(d, "oom_score_adj"), os.O_RDWR),
        "fdinfo0": os.open(os.path.join(d, "fdinfo", "0"), os.O_RDONLY),
    }


def probe(base, pid, fds, contents=False):
    """Every way to look at a (dying) process, as (name, outcome) pairs."""
    d = os.path.join(base, str(pid))

    def rd(fd):
        data = os.pread(fd, 65536, 0)
        return data if contents else len(data) > 0

    def st_fd(fd):
        st = os.fstat(fd)
        return (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))

    def lsd(fd):
        # listdir on a dup: listdir(fd) rewinds, and the fd stays usable
        return sorted(os.listdir(fd))

    r = []
    for k in ("status", "stat", "environ", "maps", "cmdline", "oom", "fdinfo0"):
        r.append(("read " + k, outcome(rd, fds[k])))
        r.append(("fstat " + k, outcome(st_fd, fds[k])))
    r.append(("write oom", outcome(os.pwrite, fds["oom"], b"0", 0)))
    for k in ("dir", "fddir", "taskdir", "tiddir"):
        r.append(("fstat " + k, outcome(st_fd, fds[k])))
        r.append(("listdir " + k, outcome(lsd, fds[k])))
        r.append(("getdents " + k, outcome(getdents, fds[k])))
    for name in ("status", "cwd", "exe", "fd", "task", "ns/mnt", "fd/0", "environ"):
        r.append(("stat at " + name, outcome(lambda n: stat.S_IFMT(
            os.stat(n, dir_fd=fds["dir"]).st_mode), name)))
        r.append(("lstat at " + name, outcome(lambda n: stat.S_IFMT(
            os.lstat(n, dir_fd=fds["dir"]).st_mode), name)))
    for name in ("cwd", "exe", "root", "fd/0", "ns/net"):
        r.append(("readlink at " + name, outcome(lambda n: os.readlink(n, dir_fd=fds["dir"]),
                                                 name)))
    for name in ("status", "environ", "fd", "task"):
        def op(n):
            fd = os.open(n, os.O_RDONLY, dir_fd=fds["dir"])
            os.close(fd)
            return True
        r.append(("openat " + name, outcome(op, name)))
    r.append(("stat 0 at fddir", outcome(lambda: os.stat("0", dir_fd=fds["fddir"]).st_mode)))
    r.append(("stat tid at taskdir", outcome(
        lambda: stat.S_IFMT(os.stat(str(pid), dir_fd=fds["taskdir"]).st_mode))))
    def read_at(name, dfd):
        fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
        try:
            return len(os.read(fd, 65536)) > 0
        finally:
            os.close(fd)
    r.append(("read status at tiddir", outcome(read_at, "status", fds["tiddir"])))
    r.append(("read status at dir", outcome(read_at, "status", fds["dir"])))
    # by path
    r.append(("stat path", outcome(lambda: stat.S_IFMT(os.stat(d).st_mode))))
    r.append(("listdir path", outcome(lambda: sorted(os.listdir(d)))))
    r.append(("listdir fd path", outcome(lambda: sorted(os.listdir(os.path.join(d, "fd"))))))
    r.append(("read status path", outcome(read_at, os.path.join(d, "status"), None)))
    r.append(("readlink cwd path", outcome(os.readlink, os.path.join(d, "cwd"))))
    r.append(("readlink exe path", outcome(os.readlink, os.path.join(d, "exe"))))
    r.append(("in root listing", str(pid) in os.listdir(base)))
    return r


def compare_probes(a, b, what, bad=None):
    diffs = ["%s: %s: /proc %r, mount %r" % (what, k, x, y)
             for (k, x), (_, y) in zip(a, b) if x != y]
    if bad is None:
        assert not diffs, "\n".join(diffs)
    else:
        bad += diffs


def test_exited_process(mnt):
    p = start_short()
    held = {base: hold(base, p.pid) for base in ("/proc", mnt.path)}
    bad = []
    try:
        # alive: same answers
        compare_probes(probe("/proc", p.pid, held["/proc"]),
                       probe(mnt.path, p.pid, held[mnt.path]), "alive", bad)
        # zombie: killed, not reaped
        os.kill(p.pid, signal.SIGKILL)
        deadline = time.time() + 5
        while True:
            with open("/proc/%d/stat" % p.pid) as f:
                if f.read().split(") ")[1].split()[0] == "Z":
                    break
            assert time.time() < deadline
            time.sleep(0.01)
        compare_probes(probe("/proc", p.pid, held["/proc"]),
                       probe(mnt.path, p.pid, held[mnt.path]), "zombie", bad)
        # reaped: gone. Names held open inside the directory keep their kernel
        # dentry until procfast's entry timeout (1 s by default) passes: nothing
        # announces a reaping (documented in the README). Everything must agree
        # with /proc within that bound.
        p.wait()
        assert not os.path.exists("/proc/%d" % p.pid)
        deadline = time.time() + 2.5
        while True:
            late = []
            compare_probes(probe("/proc", p.pid, held["/proc"]),
                           probe(mnt.path, p.pid, held[mnt.path]), "reaped", late)
            if not late or time.time() > deadline:
                break
            time.sleep(0.1)
        bad += late
        assert not bad, "\n".join(bad)
    finally:
        for fds in held.values():
            for fd in fds.values():
                os.close(fd)
        if p.poll() is None:
            p.kill()
            p.wait()


def test_exited_process_while_listing(mnt):
    """A listing of a process's fd dir read in several getdents calls while it exits."""
    res = []
    for base in ("/proc", mnt.path):
        p = subprocess.Popen(["sh", "-c", "exec 3</dev/null 4</dev/null 5</dev/null "
                              "6</dev/null 7</dev/null 8</dev/null; exec sleep 3600"])
        deadline = time.time() + 5
        while len(os.listdir("/proc/%d/fd" % p.pid)) < 9:
            assert time.time() < deadline
            time.sleep(0.01)
        fd = os.open(os.path.join(base, str(p.pid), "fd"), os.O_RDONLY | os.O_DIRECTORY)
        try:
            first = getdents(fd, 64)       # room for two or three entries only
            p.kill()
            p.wait()
            rest = outcome(getdents, fd, 64)
            res.append((len(first) > 0, rest))
        finally:
            os.close(fd)
    assert res[0] == res[1], res


def test_exited_thread(mnt):
    """A thread that exits: task/TID and /TID (hidden thread lookup) disappear as on /proc."""
    code = ("import threading, sys, time\n"
            "e = threading.Event()\n"
            "t = threading.Thread(target=e.wait); t.start()\n"
            "import ctypes; print(flush=True)\n"
            "sys.stdin.readline(); e.set(); t.join()\n"
            "print(flush=True); sys.stdin.readline()\n")
    with Stepper(code) as p:
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % p.pid))
        assert len(tids) == 2
        tid = [t for t in tids if t != p.pid][0]
        rels = ["%d/task/%d" % (p.pid, tid), "%d" % tid, "%d/task/%d/stat" % (p.pid, tid),
                "%d/status" % tid]
        held = {}
        for base in ("/proc", mnt.path):
            held[base] = os.open(os.path.join(base, str(p.pid), "task", str(tid), "status"),
                                 os.O_RDONLY)
        assert_same(mnt, lambda x: stat.S_IFMT(os.stat(x).st_mode), rels)
        p.step()
        # join() returns before the kernel has fully removed the thread: compare once
        # /proc no longer has it, so both sides see the same moment.
        deadline = time.time() + 5
        while os.path.exists("/proc/%d/task/%d" % (p.pid, tid)):
            assert time.time() < deadline, "thread did not go away"
            time.sleep(0.01)
        assert_same(mnt, lambda x: stat.S_IFMT(os.stat(x).st_mode), rels)
        assert_same(mnt, lambda x: sorted(os.listdir(x)), ["%d/task" % p.pid])
        a = outcome(os.pread, held["/proc"], 100, 0)
        b = outcome(os.pread, held[mnt.path], 100, 0)
        assert a[0] == b[0] and (a[0] == "ok" or a == b), (a, b)
        for fd in held.values():
            os.close(fd)


def test_pid_reuse_through_old_handle(mnt):
    """An fd opened on a process's file must not read another process's data later.  We
    cannot force the same pid, so: the old handle must fail like /proc's (ESRCH) even
    while new processes are being created."""
    p = start_short()
    fds = {b: os.open(os.path.join(b, str(p.pid), "status"), os.O_RDONLY)
           for b in ("/proc", mnt.path)}
    try:
        p.kill()
        p.wait()
        for _ in range(20):
            subprocess.run(["true"])
        a = outcome(os.pread, fds["/proc"], 4096, 0)
        b = outcome(os.pread, fds[mnt.path], 4096, 0)
        assert a == b, (a, b)
    finally:
        for fd in fds.values():
            os.close(fd)


def test_pid_reused_by_new_process(mnt):
    """The pid of an exited process is given to a new one. Handles and directory fds of
    the old process must not reach the new one (/proc answers for the old struct pid),
    and a fresh path lookup must reach the new one."""
    for _ in range(10):
        old = subprocess.Popen(["sleep", "3600"])
        time.sleep(0.05)
        held = {b: (os.open(os.path.join(b, str(old.pid), "cmdline"), os.O_RDONLY),
                    os.open(os.path.join(b, str(old.pid)), os.O_RDONLY | os.O_DIRECTORY))
                for b in ("/proc", mnt.path)}
        before = open(mnt.p(old.pid, "cmdline"), "rb").read()
        old.kill()
        old.wait()
        new = start_with_pid(old.pid, ["sleep", "3599"])
        if new:
            break
        for fd, dfd in held.values():
            os.close(fd)
            os.close(dfd)
    assert new, "could not reuse a pid"
    try:
        assert before == b"sleep\x003600\x00"
        seen = {}
        for b in ("/proc", mnt.path):
            fd, dfd = held[b]
            seen[b] = (outcome(os.pread, fd, 4096, 0),
                       outcome(lambda: open(os.open("cmdline", os.O_RDONLY, dir_fd=dfd),
                                            "rb").read()))
            os.close(fd)
            os.close(dfd)
        assert seen[mnt.path] == seen["/proc"], seen
        held = seen
        assert b"3599" not in repr(held[mnt.path]).encode()
        # Popen returns once the execve closed its pipe, before the new image's
        # arguments are set up: until then /proc too shows an empty cmdline
        wait_for(lambda: open("/proc/%d/cmdline" % new.pid, "rb").read() == b"sleep\x003599\x00",
                 10, "the new process's command line")
        with open(mnt.p(new.pid, "cmdline"), "rb") as f:
            assert f.read() == b"sleep\x003599\x00"
    finally:
        new.kill()
        new.wait()


# --------------------------------------------------------------------------- namespace ops

def test_namespace_changes_refused(mnt):
    p = start_short()
    pid = str(p.pid)
    try:
        def creat(path):
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))

        def creat_excl(path):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))

        def mkdir(path):
            os.mkdir(path)

        def rmdir(path):
            os.rmdir(path)

        def unlink(path):
            os.unlink(path)

        def rename_to_new(path):
            os.rename(path, path + ".renamed")

        def rename_over(path):
            os.rename(path, os.path.join(os.path.dirname(path), "version"))

        def symlink(path):
            os.symlink("/tmp", path)

        def hardlink(path):
            os.link(path, path + ".link")

        def mkfifo(path):
            os.mkfifo(path)

        def mknod(path):
            os.mknod(path, 0o600 | stat.S_IFREG)

        def chmod_same(path):
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode))

        def chmod_other(path):
            os.chmod(path, 0o600)

        def utime(path):
            os.utime(path, (0, 0))

        def truncate(path):
            os.truncate(path, 0)

        def setxattr(path):
            os.setxattr(path, "user.procfast", b"x")

        def getxattr(path):
            return os.getxattr(path, "user.procfast")

        def listxattr(path):
            return sorted(os.listxattr(path))

        cases = [
            (creat, ["newfile", pid + "/newfile", "sys/newfile", "sys/kernel/newfile",
                     "self/fd/999", "net/newfile"]),
            (creat_excl, ["uptime", pid + "/status", "sys/kernel/ostype", "newfile"]),
            (mkdir, ["newdir", pid + "/newdir", "sys/newdir", "1", "self", pid + "/fd/77"]),
            (rmdir, [pid, pid + "/fd", "sys/kernel", "newdir", "self"]),
            # (unlink of directories is decided by the kernel before the daemon is asked:
            #  EISDIR over FUSE, where procfs says EPERM/EACCES: not compared)
            (unlink, ["uptime", pid + "/status", "sys/kernel/ostype", "self", "nonexistent",
                      pid + "/fd/0", "thread-self", pid + "/exe"]),
            (rename_to_new, ["uptime", pid + "/status", "sys/kernel/ostype", "nonexistent"]),
            (rename_over, ["uptime", "self"]),
            (symlink, ["newlink", pid + "/newlink", "sys/newlink", "uptime"]),
            (hardlink, ["uptime", pid + "/status", "sys/kernel/ostype"]),
            (mkfifo, ["fifo", pid + "/fifo", "uptime"]),
            (mknod, ["node", pid + "/node"]),
            # chmod of /proc/PID and /proc/sys entries is refused; chmod of a /proc root
            # file to its own mode is allowed (a real change would alter /proc: not done)
            (chmod_other, [pid + "/status", pid, pid + "/fd", "sys/kernel/ostype", "self",
                           "sys/kernel"]),
            (chmod_same, [pid + "/status", "sys/kernel/ostype"]),
            (utime, [pid + "/status", "sys/kernel/ostype", pid]),
            (truncate, [pid + "/environ", "sys/kernel/ostype"]),
            (setxattr, ["uptime", pid + "/status", "sys/kernel/ostype"]),
            (getxattr, ["uptime", pid + "/status", "sys/kernel/ostype"]),
            (listxattr, ["uptime", pid + "/status", "sys/kernel/ostype", pid]),
        ]
        bad = []
        for fn, rels in cases:
            for rel in rels:
                a, b = both(mnt, fn, rel)
                if a != b:
                    bad.append("%s(%s): /proc %r, mount %r" % (fn.__name__, rel, a, b))
        assert not bad, "\n".join(bad)
        assert os.readlink("/proc/%s/exe" % pid).endswith("sleep")
    finally:
        p.kill()
        p.wait()
