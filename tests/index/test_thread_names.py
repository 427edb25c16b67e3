"""A thread's directories, in its group's task/ and at the root (/proc/TID, which
pstree stats for every thread): what lies below them and their own attributes are kept
while the thread lives, but their names are asked at every walk (a thread is reaped as
it exits, before its exit event can drop anything). The thread's exit, and a change of
its own ids, drop the attributes (fs/request/invalidate.c)."""
import os
import subprocess
import sys
import time

import pytest

# A process whose second thread changes its own ids (a raw setresuid: only that
# thread's), ends, or executes sleep (the exec ends its id), or whose leader changes
# its own ids, on a line of stdin; it answers each with a line.
KEEPER = r"""
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
SYS_setresuid = 117
orders, done = [], threading.Condition()
def worker():
    print(threading.get_native_id(), flush=True)
    while True:
        with done:
            while not orders:
                done.wait()
            order = orders.pop(0)
        if order == "exit":
            return
        if order == "exec":
            os.execv("/bin/sleep", ["sleep", "60"])
        uid = int(order.split()[1])
        print(libc.syscall(SYS_setresuid, uid, uid, uid), flush=True)
t = threading.Thread(target=worker)
t.start()
for line in sys.stdin:
    if line.startswith("leader uid "):  # the leader's own ids, its thread's kept
        uid = int(line.split()[2])
        print(libc.syscall(SYS_setresuid, uid, uid, uid), flush=True)
        continue
    with done:
        orders.append(line.strip())
        done.notify()
    if line.strip() == "exit":
        t.join()
        print("gone", flush=True)
"""

NOBODY = 65534
ATTR_S = 2  # attributes kept this long by the mount's option, where an event says nothing


@pytest.fixture
def keeper():
    p = subprocess.Popen([sys.executable, "-c", KEEPER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    tid = int(p.stdout.readline())
    yield p, tid
    p.kill()
    p.wait()


def order(p, line):
    p.stdin.write(line + "\n")
    p.stdin.flush()
    return p.stdout.readline().strip()


@pytest.fixture
def dumpable():
    """Every process dumpable, so that a thread's directory shows its own ids after a
    setresuid (procfs shows root for a process that is not)."""
    path = "/proc/sys/fs/suid_dumpable"
    with open(path) as f:
        old = f.read().strip()
    with open(path, "w") as f:
        f.write("1")
    yield
    with open(path, "w") as f:
        f.write(old)


def settled_output(mount):
    """The daemon's log once it has stopped growing for a while: its debug lines for
    the requests a call made may be written a moment after the call returned (a busy
    machine, a reply written before the line of the next request's end)."""
    out, still = mount.output(), time.time()
    deadline = still + 5
    while time.time() - still < 0.3 and time.time() < deadline:
        time.sleep(0.05)
        now = mount.output()
        if now != out:
            out, still = now, time.time()
    return out


def requests(mount, path):
    """The LOOKUPs and GETATTRs that a stat() following path makes once every
    attribute kept for ATTR_S has expired."""
    time.sleep(ATTR_S + 0.1)
    before = mount.output()
    os.stat(path)
    after = settled_output(mount)[len(before):]
    return after.count("opcode: LOOKUP "), after.count("opcode: GETATTR ")


def test_thread_walk_asks_nothing_below(mount_with, keeper):
    """A walk through a thread's directory asks for the thread's name and nothing of what
    lies below it: what a walk through its leader's directory asks, plus that name (and
    task/'s attributes, which count threads)."""
    p, tid = keeper
    m = mount_with("debug", "attr_timeout=%d" % ATTR_S)
    assert str(p.pid) in os.listdir(m.p())  # the group indexed: its names cacheable
    paths = {"leader": m.p(p.pid, "ns", "net"), "root": m.p(tid, "ns", "net"),
             "task": m.p(p.pid, "task", tid, "ns", "net")}
    for path in paths.values():
        assert os.stat(path).st_ino == os.stat("/proc/%d/ns/net" % p.pid).st_ino
    asked = {k: requests(m, path) for k, path in paths.items()}
    lookups, getattrs = asked["leader"]
    assert lookups == 0, asked
    assert asked["root"] == (1, getattrs), asked
    assert asked["task"] == (1, getattrs + 1), asked


def held_owners(fds):
    return [(os.fstat(a).st_uid, os.fstat(b).st_uid) for a, b in fds]


def settled(fds, want_uid):
    """The held directories' owners through the mount once they equal procfs's; the
    events that drop the cached ones come a moment after the change."""
    deadline = time.time() + 10
    while True:
        owners = held_owners(fds)
        if all(a == b == want_uid for a, b in owners) or time.time() > deadline:
            return owners
        time.sleep(0.05)


def test_thread_attributes_follow_its_ids_and_exit(mount_with, keeper, dumpable):
    p, tid = keeper
    m = mount_with("attr_timeout=3600")  # nothing expires: only events refresh them
    assert str(p.pid) in os.listdir(m.p())
    rels = ["%d" % tid, "%d/task/%d" % (p.pid, tid)]
    fds = [(os.open(m.p(r), os.O_PATH | os.O_DIRECTORY),
            os.open("/proc/" + r, os.O_PATH | os.O_DIRECTORY)) for r in rels]
    try:
        assert held_owners(fds) == [(0, 0)] * len(rels)
        assert order(p, "uid %d" % NOBODY) == "0"
        assert settled(fds, NOBODY) == [(NOBODY, NOBODY)] * len(rels)
        # the leader keeps its own ids, through the mount as in procfs
        assert os.stat(m.p(p.pid)).st_uid == os.stat("/proc/%d" % p.pid).st_uid == 0
        assert order(p, "exit") == "gone"
        # procfs says root of a gone task's directory
        assert settled(fds, 0) == [(0, 0)] * len(rels)
        for r in rels:
            for base in (m.p(), "/proc/"):
                with pytest.raises(FileNotFoundError):
                    os.stat(os.path.join(base, r))
    finally:
        for a, b in fds:
            os.close(a)
            os.close(b)


def test_exec_by_a_thread_ends_its_name(mount_with, keeper):
    """An exec by a thread other than the leader ends that thread's id (the exec takes
    the leader's) with no exit event of its own: task/TID and /proc/TID are gone at
    once, as in procfs, and nothing below them answers from the cache."""
    p, tid = keeper
    m = mount_with("attr_timeout=3600")
    assert str(p.pid) in os.listdir(m.p())
    assert os.stat(m.p(p.pid, "task", tid)).st_ino
    assert os.stat(m.p(tid, "ns", "net")).st_ino
    p.stdin.write("exec\n")
    p.stdin.flush()
    deadline = time.time() + 10
    while open("/proc/%d/comm" % p.pid).read().strip() != "sleep":
        assert time.time() < deadline, "no exec"
        time.sleep(0.01)
    assert not os.path.exists("/proc/%d/task/%d" % (p.pid, tid))
    for rel in ("%d/task/%d" % (p.pid, tid), "%d/task/%d/ns/net" % (p.pid, tid),
                "%d" % tid, "%d/ns/net" % tid):
        with pytest.raises(FileNotFoundError):
            os.stat(m.p(rel))
    assert os.listdir(m.p(p.pid, "task")) == [str(p.pid)]


def test_files_below_a_thread_follow_its_ids(mount_with, keeper, dumpable):
    """The files in a thread's directories are owned by the thread's ids too: its own
    change of them (no change of its group's) shows on them as in procfs, fd/ and
    fdinfo/ included, which are links to the leader's only while they are owned alike
    (fs/entries/dedup.c: they are asked again within a second)."""
    p, tid = keeper
    m = mount_with("attr_timeout=3600")  # nothing expires: only events refresh them
    assert str(p.pid) in os.listdir(m.p())
    rels = ["%d/status" % tid] + ["%d/task/%d/%s" % (p.pid, tid, f)
                                  for f in ("status", "fd", "fdinfo")]

    def owners():
        return [(os.stat(m.p(r)).st_uid, os.stat("/proc/" + r).st_uid) for r in rels]

    assert owners() == [(0, 0)] * len(rels)
    assert order(p, "uid %d" % NOBODY) == "0"
    deadline = time.time() + 10
    while owners() != [(NOBODY, NOBODY)] * len(rels) and time.time() < deadline:
        time.sleep(0.05)
    assert owners() == [(NOBODY, NOBODY)] * len(rels)


# A caller that may ptrace every task but has no DAC capability: a task's fd/ (mode
# 0500) lets it in by its owner alone.
PTRACER = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
           "--inh-caps=+sys_ptrace", "--ambient-caps=+sys_ptrace"]
LIST = """import os, sys
try:
    print(sorted(os.listdir(sys.argv[1])))
except OSError as e:
    print(e.errno)"""


def listed_by_ptracer(path):
    return subprocess.run(PTRACER + [sys.executable, "-c", LIST, path], capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("changed", ["thread", "leader"])
def test_a_threads_fd_is_given_by_its_own_owner(mount_with, keeper, dumpable, changed):
    """task/TID/fd of a thread whose ids are not its leader's is procfs's answer to a
    caller that passes the ptrace checks of both (the checks that decide the link to
    the leader's fd/) and is let in by the owner alone: given where the thread is its
    own (procfs: the thread's ids), refused where only the leader is (procfs never gives
    it through task/TID/fd, whatever PID/fd gives)."""
    p, tid = keeper
    m = mount_with()
    assert str(p.pid) in os.listdir(m.p())
    assert order(p, ("uid %d" if changed == "thread" else "leader uid %d") % NOBODY) == "0"
    rel = "%d/task/%d/fd" % (p.pid, tid)
    on_proc = listed_by_ptracer("/proc/" + rel)
    assert on_proc == ("13" if changed == "leader" else on_proc)
    assert listed_by_ptracer(m.p(rel)) == on_proc
