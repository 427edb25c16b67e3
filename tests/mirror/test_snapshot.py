"""-o snapshot (issue 24, point 3): each open reads a private snapshot made at the open,
as its opener, which the kernel reads itself (FUSE passthrough: no READ request).

Both sides of the trade: a file opened, read and closed gives procfs's bytes, to each
caller its own; a file held open and read again gives what it gave at its open, where
the exact path (the default mount) gives the content of now. And what stays exact in
snapshot mode: writes, files read at their offsets, a second open of a file already
open as a snapshot (the kernel allows one backing file an inode)."""
import ctypes
import errno
import os
import subprocess
import threading

import pytest

from lib.kernel import has_fuse_passthrough
from lib.mount import Mount
from lib.procs import task_state
from lib.waiting import wait_for

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]



pytestmark = pytest.mark.skipif(not has_fuse_passthrough(),
                                reason="FUSE passthrough is Linux 6.9+ "
                                       "(test_snapshot_refused_without_passthrough covers older)")


@pytest.fixture(scope="module")
def snap():
    # max_busy_per_uid: test_many_opens_of_one_file_at_once opens with four threads of
    # one uid (root) at once, more than a uid's share of a CPU's threads over io_uring
    # (3 of 4, fs/caller/fair.h, lib.mount.SAME_UID_AT_ONCE): beside a CPU hog their
    # opens met on one CPU's queue and one was refused, by design. Here one uid may use
    # every thread.
    m = Mount(["snapshot", "max_busy_per_uid=64"])
    yield m
    m.close()


@pytest.fixture(scope="module")
def exact():
    m = Mount()
    yield m
    m.close()


@pytest.fixture
def sleeper():
    """A process of the test's, asleep (its stat holds still from then on)."""
    p = subprocess.Popen(["sleep", "1000"])
    wait_for(lambda: task_state(p.pid, p.pid) == "S" and
             open("/proc/%d/comm" % p.pid).read() == "sleep\n", 10, "the sleeper asleep")
    yield p
    p.kill()
    p.wait()


def read_as(argv_prefix, path):
    return subprocess.run(argv_prefix + ["cat", path], capture_output=True, check=True).stdout


NAMER = r"""
import sys
print("ready", flush=True)
for line in sys.stdin:  # procfs lets a process rename only itself
    with open("/proc/self/comm", "w") as f:
        f.write(line.strip())
    print("named", flush=True)
"""


@pytest.fixture
def namer():
    """A process of the test's that renames itself on request."""
    p = subprocess.Popen(["/usr/bin/python3", "-c", NAMER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"

    def rename(name):
        p.stdin.write(name + "\n")
        p.stdin.flush()
        assert p.stdout.readline() == "named\n"
    p.rename = rename
    yield p
    p.kill()
    p.wait()


def name_line(text):
    return [line for line in text.split(b"\n") if line.startswith(b"Name:")][0]


def test_reads_give_procfs_bytes(snap, sleeper):
    """open+read+close, read() and sendfile (BusyBox cat), give what /proc gives: the
    files whose content holds still for a sleeping process, and the host's fixed ones."""
    pid = sleeper.pid
    for rel in ["%d/stat" % pid, "%d/cmdline" % pid, "%d/environ" % pid, "%d/limits" % pid,
                "%d/maps" % pid, "%d/task/%d/stat" % (pid, pid), "version", "cmdline",
                "sys/kernel/hostname", "filesystems"]:
        want = open("/proc/" + rel, "rb").read()
        assert open(snap.p(rel), "rb").read() == want, rel
        got = subprocess.run(["busybox", "cat", snap.p(rel)], capture_output=True, check=True)
        assert got.stdout == want, rel + " by sendfile"
        # stat: procfs's attributes (0, or the length for a few: cmdline on 6.18)
        assert os.stat(snap.p(rel)).st_size == os.stat("/proc/" + rel).st_size, rel


def test_held_open_shows_its_open_where_the_exact_path_shows_now(snap, exact, namer):
    """The trade, on both mounts: a process's name changes while its status is held
    open."""
    pid = namer.pid
    namer.rename("before")
    fds = {m: os.open(m.p(pid, "status"), os.O_RDONLY) for m in (snap, exact)}
    try:
        for fd in fds.values():
            assert name_line(os.pread(fd, 65536, 0)) == b"Name:\tbefore"
        namer.rename("after")
        assert name_line(os.pread(fds[snap], 65536, 0)) == b"Name:\tbefore"
        assert name_line(os.pread(fds[exact], 65536, 0)) == b"Name:\tafter"
        # a new open is a new snapshot
        assert name_line(open(snap.p(pid, "status"), "rb").read()) == b"Name:\tafter"
    finally:
        for fd in fds.values():
            os.close(fd)


def test_each_caller_reads_its_own_snapshot(snap, sleeper):
    """A root sleeper's stat: root sees its code addresses, nobody does not (procfs hides
    them from who may not ptrace it). Through snapshots each gets its own, one after the
    other and while the other's snapshot is held open, and never the other's bytes."""
    pid = sleeper.pid
    rel = "%d/stat" % pid
    root_proc, nobody_proc = read_as([], "/proc/" + rel), read_as(NOBODY, "/proc/" + rel)
    assert root_proc.split()[25:28] != nobody_proc.split()[25:28]  # the test can tell them
    assert read_as([], snap.p(rel)) == root_proc
    assert read_as(NOBODY, snap.p(rel)) == nobody_proc
    assert read_as([], snap.p(rel)) == root_proc
    held = os.open(snap.p(rel), os.O_RDONLY)  # root's snapshot, open
    try:
        assert read_as(NOBODY, snap.p(rel)) == nobody_proc
        assert os.pread(held, 65536, 0) == root_proc
    finally:
        os.close(held)
    held = subprocess.Popen(NOBODY + ["sh", "-c", "exec 3<\"$1\"; cat <&3; read x", "sh",
                                      snap.p(rel)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        assert held.stdout.read(len(nobody_proc)) == nobody_proc  # nobody's, held open
        assert read_as([], snap.p(rel)) == root_proc
    finally:
        held.stdin.close()
        held.wait()


def test_many_opens_of_one_file_at_once(snap, sleeper):
    """The kernel allows one backing file an inode, and fails every other open of it
    (EIO) while one is open: opens of a file open as a snapshot are moved to a new
    inode (snapshot_met), and none fails."""
    path, errors, texts = snap.p(sleeper.pid, "cmdline"), [], set()
    want = open("/proc/%d/cmdline" % sleeper.pid, "rb").read()

    def reader():
        try:
            for _ in range(200):
                fds = [os.open(path, os.O_RDONLY) for _ in range(3)]
                texts.update(os.pread(fd, 4096, 0) for fd in fds)
                for fd in fds:
                    os.close(fd)
        except OSError as e:
            errors.append(e)
    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and texts == {want}


def test_a_file_reopened_at_once(snap, sleeper):
    """A close's RELEASE is sent without waiting: the next open of the file may find the
    inode's snapshot place still held, and waits for that RELEASE (snapshot.c). Opened,
    read and closed again and again, through one path and through two names of one
    directory, it gives procfs's bytes every time and never fails."""
    pid = sleeper.pid
    want = {f: open("/proc/%d/%s" % (pid, f), "rb").read() for f in ("cmdline", "environ")}
    for i in range(300):
        f = ("cmdline", "environ")[i % 3 == 0]
        with open(snap.p(pid, f), "rb") as fh:
            assert fh.read() == want[f], (i, f)


def test_writes_stay_exact(snap, sleeper):
    """A read-write open is no snapshot: the write reaches procfs, and a read of the
    same handle afterwards shows it."""
    pid = sleeper.pid
    fd = os.open(snap.p(pid, "oom_score_adj"), os.O_RDWR)
    try:
        assert os.write(fd, b"567") == 3
        assert os.pread(fd, 100, 0) == b"567\n"
    finally:
        os.close(fd)
    assert open("/proc/%d/oom_score_adj" % pid, "rb").read() == b"567\n"


def test_memory_read_at_its_addresses(snap):
    """mem is read at the addresses asked: the reader's own memory, through self/."""
    data = ctypes.create_string_buffer(b"procfast snapshot mem", 32)
    fd = os.open(snap.p("self", "mem"), os.O_RDONLY)
    try:
        assert os.pread(fd, 21, ctypes.addressof(data)) == b"procfast snapshot mem"
    finally:
        os.close(fd)


def test_read_errors_stay_at_the_read(snap, sleeper):
    """nobody may open a root process's environ (procfs refuses at open): the same
    error, and a file whose read fails gives the error at the read, as procfs does."""
    pid = sleeper.pid
    for path in ("/proc/%d/environ" % pid, snap.p(pid, "environ")):
        r = subprocess.run(NOBODY + ["cat", path], capture_output=True)
        assert r.returncode != 0 and b"Permission denied" in r.stderr, path


def test_the_log_says_what_it_trades(snap):
    assert "snapshot:" in snap.output() and "held open" in snap.output()
