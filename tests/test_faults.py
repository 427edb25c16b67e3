"""Faults (issue 6): the daemon killed, processes exiting between the steps of an
operation, pid reuse and pid_max inside a private pid namespace, a daemon short of file
descriptors, and a reader that never closes.

Each fault is compared with what the kernel's own /proc does in the same situation,
measured in the same test; nothing here hard-codes an expected errno that /proc itself
was not seen to give (except ENOTCONN for a dead daemon, which is FUSE's answer).
Events lost during a fork storm are covered in test_index.py (the ENOBUFS tests).
"""
import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import Mount

O_PATH_LINK = os.O_PATH | os.O_NOFOLLOW


def outcome(fn, *args):
    """fn(*args), or the errno name it failed with: errors compare like values."""
    try:
        return fn(*args)
    except OSError as e:
        return errno.errorcode.get(e.errno, e.errno)


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out waiting for " + what
        time.sleep(0.02)


def mounted(path):
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == path for line in f)


def discard(m):
    """Cleanup for a mount whose daemon was killed (Mount.close wants exit status 0)."""
    if mounted(m.path):
        subprocess.run(["umount", "-l", m.path], check=False)
    if m.proc.poll() is None:
        m.proc.kill()
    m.proc.wait()
    os.unlink(m.log.name)
    os.rmdir(m.path)


def daemon_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def daemon_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


def sleeper():
    """A process that sleeps, once it has exec'd (its /proc entries are then stable)."""
    p = subprocess.Popen(["sleep", "3600"], cwd="/tmp", stdin=subprocess.DEVNULL)
    wait_for(lambda: os.readlink("/proc/%d/exe" % p.pid).endswith("sleep"), 5, "sleep to exec")
    return p


def reap(p):
    p.kill()
    p.wait()


# ----------------------------------------------------------------- the daemon killed

HELD_AFTER_KILL = r"""
import errno, json, os, sys, time
m, pid = sys.argv[1], sys.argv[2]
held = os.open(os.path.join(m, pid, "status"), os.O_RDONLY)
held_dir = os.open(os.path.join(m, pid, "task"), os.O_RDONLY | os.O_DIRECTORY)
os.chdir(os.path.join(m, pid))
os.stat(os.path.join(m, pid, "status"))
print("ready", flush=True)
sys.stdin.readline()

def run(fn, *a):
    t = time.monotonic()
    try:
        r = "ok"
        fn(*a)
    except OSError as e:
        r = errno.errorcode.get(e.errno, e.errno)
    return [r, time.monotonic() - t]

def ops():
    return {
        "lstat uncached": run(os.lstat, os.path.join(m, "1", "comm")),
        "listdir root": run(os.listdir, m),
        "open+read": run(lambda: os.read(os.open(os.path.join(m, "uptime"), os.O_RDONLY), 99)),
        "readlink self": run(os.readlink, os.path.join(m, "self")),
        "readlink exe": run(os.readlink, os.path.join(m, pid, "exe")),
        "read held file": run(os.pread, held, 100, 0),
        "getdents held dir": run(os.listdir, held_dir),
        "listdir cwd": run(os.listdir, "."),
        "read at cwd": run(lambda: os.read(os.open("stat", os.O_RDONLY), 99)),
        # answered from the kernel's attribute cache until attr_timeout (1 s) passes
        "stat cached": run(os.stat, os.path.join(m, pid, "status")),
        "stat root": run(os.stat, m),
        "fstat held": run(os.fstat, held),
    }
first = ops()
time.sleep(1.5)
print(json.dumps([first, ops()]), flush=True)
os.chdir("/")
for fd in (held, held_dir):
    try:
        os.close(fd)
    except OSError:
        pass  # close() flushes: ENOTCONN
"""

CACHED = {"stat cached", "stat root", "fstat held"}
# What still reaches the dead connection once auto_unmount detached the mount (paths
# then name the empty directory beneath).
HELD = {"read held file", "getdents held dir", "listdir cwd", "read at cwd"}


def ops_after_kill(m):
    """Kills the daemon while a reader holds a file, a directory and its cwd in the mount;
    returns the reader's outcomes at once and 1.5 s later. The reader is bounded."""
    r = subprocess.Popen([sys.executable, "-c", HELD_AFTER_KILL, m.path, str(os.getpid())],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        assert r.stdout.readline().strip() == "ready"
        os.kill(m.proc.pid, signal.SIGKILL)
        m.proc.wait()
        out, _ = r.communicate("\n", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("an operation on the mount of a killed daemon hung")
    finally:
        if r.poll() is None:
            r.kill()
        r.wait()
    return json.loads(out)


@pytest.mark.parametrize("options", [(), ("auto_unmount",)], ids=["plain", "auto_unmount"])
def test_daemon_killed(options):
    m = Mount(options)
    try:
        first, later = ops_after_kill(m)
        bad = []
        for when, res in (("at once", first), ("after 1.5 s", later)):
            for op, (err, secs) in res.items():
                if options and op not in HELD:
                    assert secs < 5, "%s %s took %.1f s" % (when, op, secs)
                    continue
                cached_ok = op in CACHED and when == "at once" and err == "ok"
                if not (err == "ENOTCONN" or cached_ok) or secs > 5:
                    bad.append("%s %s: %s in %.1f s" % (when, op, err, secs))
        assert not bad, "\n".join(bad)
        if options:
            # libfuse's auto_unmount helper notices the daemon's death and unmounts.
            wait_for(lambda: not mounted(m.path), 10, "the mount to disappear (auto_unmount)")
        else:
            assert mounted(m.path)
            assert outcome(os.stat, m.path) == "ENOTCONN"
    finally:
        discard(m)


# ------------------------------------------------- the process exits between the steps

def held_file(path):
    return os.open(path, os.O_RDONLY)


def held_dir(path):
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def read_all(fd):
    return os.pread(fd, 1 << 16, 0)


def getdents_rest(fd):
    return sorted(os.listdir(fd))


def partly_listed(path):
    """A directory fd whose listing has begun (the first getdents call done)."""
    fd = held_dir(path)
    os.listdir(fd)  # rewinds, but the source directory was read once
    return fd


def partly_read(path):
    fd = held_file(path)
    os.read(fd, 10)
    return fd


def read_on(fd):
    return os.read(fd, 1 << 16)


def attrs(st):
    return (st.st_mode, st.st_uid, st.st_gid, st.st_nlink)


def reopen(fd):
    """open() of an inode looked up before: no new lookup, only an open."""
    new = os.open("/proc/self/fd/%d" % fd, os.O_RDONLY)
    os.close(new)
    return "opened"


libc = ctypes.CDLL(None, use_errno=True)


def readlink_held(fd):
    """readlinkat(fd, "") on an O_PATH fd of the link: the link looked up before."""
    buf = ctypes.create_string_buffer(4096)
    n = libc.readlinkat(fd, b"", buf, len(buf))
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return buf.raw[:n].decode()


# name: (path under PID, step 1 (gives a handle or None), step 2 (handle or path) -> value)
EXIT_BETWEEN = {
    "lookup": ("status", None, lambda p: attrs(os.lstat(p))),
    "lookup in cached dir": ("status", lambda p: os.stat(p) and None, lambda p: attrs(os.lstat(p))),
    "lookup at held dir": ("", held_dir, lambda fd: attrs(os.stat("status", dir_fd=fd))),
    "getattr": ("status", lambda p: os.open(p, os.O_PATH), lambda fd: attrs(os.fstat(fd))),
    "getattr dir": ("", lambda p: os.open(p, os.O_PATH), lambda fd: attrs(os.fstat(fd))),
    "open": ("status", lambda p: os.open(p, os.O_PATH), reopen),
    "read status": ("status", held_file, read_all),
    "read stat": ("stat", held_file, read_all),
    "read environ": ("environ", held_file, read_all),
    "read on status": ("status", partly_read, read_on),
    "readdir process dir": ("", held_dir, getdents_rest),
    "readdir task": ("task", held_dir, getdents_rest),
    "readdir fd": ("fd", held_dir, getdents_rest),
    "readdir on process dir": ("", partly_listed, getdents_rest),
    "readdir on task": ("task", partly_listed, getdents_rest),
    "readdir on fd": ("fd", partly_listed, getdents_rest),
    "readlink exe": ("exe", lambda p: os.open(p, O_PATH_LINK), readlink_held),
    "readlink cwd": ("cwd", lambda p: os.open(p, O_PATH_LINK), readlink_held),
    "readlink fd/0": ("fd/0", lambda p: os.open(p, O_PATH_LINK), readlink_held),
    "readlink by path": ("exe", None, os.readlink),
}


OPEN_AFTER_EXIT = pytest.mark.xfail(strict=True, reason=(
    "open() of a file looked up before its process was reaped: procfs opens most such "
    "inodes (status: single_open without a task check) and fails the read with ESRCH; "
    "procfast has no handle on the old inode, its open by path fails at once (ESRCH)"))


@pytest.mark.parametrize("case", [pytest.param(c, marks=OPEN_AFTER_EXIT) if c == "open" else c
                                  for c in EXIT_BETWEEN])
def test_process_exits_between_steps(mnt, case):
    """Step 1 on /proc and on the mount, the process exits and is reaped, step 2 on both:
    the same outcome. A name looked up again through a held directory may be answered
    from the kernel's entry cache for entry_timeout (1 s, README "What differs"), so the
    comparison is retried for 2.5 s."""
    rel, first, second = EXIT_BETWEEN[case]
    p = sleeper()
    bases = ("/proc", mnt.path)
    paths = {b: os.path.join(b, str(p.pid), rel) for b in bases}
    handles = {}
    try:
        if first:
            handles = {b: first(paths[b]) for b in bases}
        args = {b: paths[b] if handles.get(b) is None else handles[b] for b in bases}
        reap(p)
        deadline = time.time() + 2.5
        while True:
            got = {b: outcome(second, args[b]) for b in bases}
            if got["/proc"] == got[mnt.path] or time.time() > deadline:
                break
            time.sleep(0.1)
        assert got[mnt.path] == got["/proc"], \
            "%s after the exit: /proc %r, mount %r" % (case, got["/proc"], got[mnt.path])
        assert mnt.proc.poll() is None
    finally:
        for fd in handles.values():
            if isinstance(fd, int):
                os.close(fd)
        if p.poll() is None:
            reap(p)
