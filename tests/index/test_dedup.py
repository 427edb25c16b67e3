"""Issue 4, Done-when 1 and 2: a thread's fd/ and fdinfo/ as links to the leader's.

The test process (helpers/fdthreads.c) has 50 threads sharing the leader's file table,
one thread that called unshare(CLONE_FILES) and then opened /dev/zero (so its table
differs from the leader's), and one "late" thread that unshares only when asked.
Every listing is compared with the real /proc at the same moment.
"""
import ctypes
import json
import os
import re
import stat
import struct
import subprocess
import time

import pytest

from lib.bind import on_proc, over_proc
from lib.build import HELPERS
from lib.procs import stop_helper

SHARERS = 50
RECHECK_S = 1.5   # the daemon re-checks link entries at most 1 s later; 0.5 s slack

_SYS_GETDENTS64 = {"x86_64": 217, "aarch64": 61, "riscv64": 61}.get(os.uname().machine, 217)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
DT_DIR, DT_LNK = 4, 10


def dtypes(path):
    """{name: d_type} from raw getdents64 (os.scandir would lstat on DT_UNKNOWN)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    buf, out = ctypes.create_string_buffer(32768), {}
    try:
        while True:
            n = _libc.syscall(_SYS_GETDENTS64, fd, buf, ctypes.c_long(len(buf)))
            if n < 0:
                raise OSError(ctypes.get_errno(), "getdents64", path)
            if n == 0:
                return out
            pos, data = 0, buf.raw[:n]
            while pos < n:
                _ino, _off, reclen, dtype = struct.unpack_from("<QqHB", data, pos)
                out[os.fsdecode(data[pos + 19:pos + reclen].split(b"\0", 1)[0])] = dtype
                pos += reclen
    finally:
        os.close(fd)


def listing(path):
    return sorted(os.listdir(path), key=lambda s: (len(s), s))


def links(path):
    """{fd: link text} of an fd directory."""
    return {n: os.readlink(os.path.join(path, n)) for n in os.listdir(path)}


class FdThreads:
    """build/tests/fdthreads THREADS FDS --unshare, stopped by closing its stdin."""

    def __init__(self, threads, fds):
        self.proc = subprocess.Popen([os.path.join(HELPERS, "fdthreads"), str(threads), str(fds),
                                      "--unshare"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        info = json.loads(self.proc.stdout.readline())
        self.pid, self.tids = info["pid"], info["tids"]
        self.unshared, self.late = info["unshared"], info["late"]
        self.sharers = [t for t in self.tids if t != self.unshared]   # late shares until asked

    def unshare_late(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        assert json.loads(self.proc.stdout.readline()) == {"late_unshared": self.late}
        self.sharers.remove(self.late)

    def stop(self):
        stop_helper(self.proc, 10)


@pytest.fixture(scope="module")
def fdproc():
    p = FdThreads(SHARERS, 4)
    yield p
    p.stop()


# ------------------------------------------------------------------ default mount (dedup)

def test_helper_shape(fdproc):
    """The helper is what the tests assume: 50 sharers + leader + unsharer + late thread."""
    assert sorted(int(t) for t in os.listdir("/proc/%d/task" % fdproc.pid)) == sorted(fdproc.tids)
    assert len(fdproc.sharers) == SHARERS + 2
    own = links("/proc/%d/task/%d/fd" % (fdproc.pid, fdproc.unshared))
    assert "/dev/zero" in own.values() and "/dev/zero" not in links("/proc/%d/fd" % fdproc.pid).values()


def test_sharers_fd_are_links(mnt, fdproc):
    """Every sharing thread, the leader's own task/PID included: fd -> ../../fd."""
    for tid in fdproc.sharers:
        for name in ("fd", "fdinfo"):
            p = mnt.p(fdproc.pid, "task", tid, name)
            assert stat.S_ISLNK(os.lstat(p).st_mode), p
            assert os.readlink(p) == "../../" + name, p


def test_listing_through_link_equals_proc(mnt, fdproc):
    pid = fdproc.pid
    want = {n: listing("/proc/%d/%s" % (pid, n)) for n in ("fd", "fdinfo")}
    for tid in fdproc.sharers:
        for name in ("fd", "fdinfo"):
            assert listing(mnt.p(pid, "task", tid, name)) == want[name], (tid, name)
    # the entries behind the leader's link: same targets, same fdinfo text
    assert links(mnt.p(pid, "task", pid, "fd")) == links("/proc/%d/fd" % pid)
    for n in want["fdinfo"]:
        with open(mnt.p(pid, "task", pid, "fdinfo", n)) as a, open("/proc/%d/fdinfo/%s" % (pid, n)) as b:
            assert a.read() == b.read(), n


def test_unshared_thread_has_real_dir(mnt, fdproc):
    pid, tid = fdproc.pid, fdproc.unshared
    for name in ("fd", "fdinfo"):
        p = mnt.p(pid, "task", tid, name)
        assert stat.S_ISDIR(os.lstat(p).st_mode), p
        assert listing(p) == listing("/proc/%d/task/%d/%s" % (pid, tid, name))
    own = links(mnt.p(pid, "task", tid, "fd"))
    assert own == links("/proc/%d/task/%d/fd" % (pid, tid))
    assert own != links(mnt.p(pid, "fd")) and "/dev/zero" in own.values()


def test_non_leader_task_is_link(mnt, fdproc):
    """MOUNT/TID/task -> ../TGID/task for a non-leader; the leader's stays a directory."""
    pid = fdproc.pid
    want = listing("/proc/%d/task" % pid)
    assert stat.S_ISDIR(os.lstat(mnt.p(pid, "task")).st_mode)
    for tid in fdproc.tids[1:]:
        p = mnt.p(tid, "task")
        assert os.readlink(p) == "../%d/task" % pid, tid
        assert listing(p) == want, tid
    assert listing("/proc/%d/task" % fdproc.tids[1]) == want


def test_dtype_lnk_in_listing(mnt, fdproc):
    pid = fdproc.pid
    for tid in (pid, fdproc.tids[1], fdproc.tids[SHARERS]):
        d = dtypes(mnt.p(pid, "task", tid))
        assert sorted(d) == sorted(os.listdir("/proc/%d/task/%d" % (pid, tid)) + [".", ".."])
        assert (d["fd"], d["fdinfo"]) == (DT_LNK, DT_LNK), tid
    d = dtypes(mnt.p(pid, "task", fdproc.unshared))
    assert (d["fd"], d["fdinfo"]) == (DT_DIR, DT_DIR)
    assert dtypes(mnt.p(fdproc.tids[1]))["task"] == DT_LNK
    assert dtypes(mnt.p(pid))["task"] == DT_DIR


def test_unshare_while_mounted(mnt):
    """A thread that unshares while its link is cached gets a real dir within ~1 s."""
    p = FdThreads(3, 2)
    try:
        link = mnt.p(p.pid, "task", p.late, "fd")
        assert os.readlink(link) == "../../fd"
        listing(link)                         # the kernel now caches the link entry
        p.unshare_late()
        t0 = time.monotonic()
        while not stat.S_ISDIR(os.lstat(link).st_mode):
            assert time.monotonic() - t0 < RECHECK_S, "still a link after %.1f s" % RECHECK_S
            time.sleep(0.05)
        assert links(link) == links("/proc/%d/task/%d/fd" % (p.pid, p.late))
        assert "/dev/zero" in links(link).values()
        assert os.readlink(mnt.p(p.pid, "task", p.pid, "fd")) == "../../fd"   # others unchanged
    finally:
        p.stop()


# ------------------------------------------------------------------ -o nodedup

def test_nodedup_gives_directories(mount_with, fdproc):
    m = mount_with("nodedup")
    pid = fdproc.pid
    for tid in fdproc.tids:
        for name in ("fd", "fdinfo"):
            p = m.p(pid, "task", tid, name)
            assert stat.S_ISDIR(os.lstat(p).st_mode), p
            assert listing(p) == listing("/proc/%d/task/%d/%s" % (pid, tid, name)), p
        d = dtypes(m.p(pid, "task", tid))
        assert (d["fd"], d["fdinfo"]) == (DT_DIR, DT_DIR), tid
    for tid in fdproc.tids[1:]:
        assert stat.S_ISDIR(os.lstat(m.p(tid, "task")).st_mode), tid
        assert listing(m.p(tid, "task")) == listing("/proc/%d/task" % tid)
        assert dtypes(m.p(tid))["task"] == DT_DIR


# ------------------------------------------------------------------ lsof

COLUMNS = ("COMMAND", "PID", "TID", "TASKCMD", "USER", "FD", "TYPE", "SIZE/OFF", "NODE", "NAME")
# DEVICE of pipes and sockets: lsof prints st_dev of the fd's lstat target, which over FUSE
# is always the mount's device (DESIGN.md, "st_dev is always the FUSE device"); every
# other type's DEVICE comes from the real file's stat and must match.
# Not covered here (the helper's stderr is /dev/null so its fds are fixed): an fd on a
# deleted file (pytest's captured stderr is one) differs by design: its link text
# "/tmp/x (deleted)" is absolute, so the kernel resolves it without the daemon, lsof's
# stat fails and it prints TYPE "unknown" and "(stat: No such file or directory)" where
# /proc gives REG, size and inode (DESIGN.md, FUSE limits; test_tools.py covers it).
FUSE_DEVICE_TYPES = {"FIFO", "sock", "unix", "IPv4", "IPv6", "netlink", "a_inode"}


def lsof_table(text):
    """Rows of lsof's default output as dicts, split by header position: lsof pads each
    column to its widest value, so a value overlaps its header, or starts at its header's
    start (left-aligned columns) or ends at its header's end (right-aligned ones);
    TID/DEVICE may be blank."""
    lines = text.splitlines()
    heads = [(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", lines[0])]
    name_at = dict((h, s) for h, s, _ in heads)["NAME"]
    rows = []
    for line in lines[1:]:
        row = {"NAME": line[name_at:]}
        for m in re.finditer(r"\S+", line[:name_at]):
            col = [h for h, s, e in heads if m.start() < e and s < m.end()] or \
                [h for h, s, e in heads if m.start() == s or m.end() == e]
            assert col, "unaligned lsof value %r in %r" % (m.group(), line)
            row[col[0]] = m.group()
        rows.append(row)
    return rows


def lsof_rows(text, pid):
    rows = [r for r in lsof_table(text) if r.get("PID") == str(pid)]
    keys = sorted(tuple(r.get(c, "") for c in COLUMNS) for r in rows)
    devs = sorted((r.get("TID", ""), r["FD"], r.get("DEVICE", "")) for r in rows
                  if r.get("TYPE") not in FUSE_DEVICE_TYPES)
    return keys, devs


@pytest.mark.parametrize("opts", ["-n -P", "-n -P -K"])
def test_lsof_same_files(mnt, fdproc, opts):
    """lsof with the mount bound over /proc lists the same rows as on /proc. `-K` here
    also lists every other process's tasks (lsof ORs -K with -p): rows are filtered by PID."""
    cmd = "lsof %s -p %d" % (opts, fdproc.pid)
    mine, real = over_proc(mnt, cmd), on_proc(cmd)
    assert mine.returncode == real.returncode == 0, mine.stderr + real.stderr
    got, want = lsof_rows(mine.stdout, fdproc.pid), lsof_rows(real.stdout, fdproc.pid)
    assert got[0] == want[0]
    assert got[1] == want[1]
    tasks = {r[2] for r in got[0]}
    assert len(got[0]) > 0
    if "-K" in opts:   # one block per non-leader thread, the unsharer with its /dev/zero
        assert tasks == {str(t) for t in fdproc.tids[1:]} | {""}
        assert any(r[2] == str(fdproc.unshared) and r[9] == "/dev/zero" for r in got[0])
