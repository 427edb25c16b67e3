"""-o pidns=: a mount that shows one pid namespace as a procfs mounted inside it would.

A "container" here is a pid + mount namespace made with unshare, whose init is the
victim helper (threads, files, sockets, pipes) and whose /proc is a real procfs mounted
inside it. A second process of that namespace gets its own copy of the mount namespace
with the procfast view attached over /proc (procfast-attach). The same tool then runs
in both mount namespaces, inside the pid namespace, and the outputs are compared.
"""
import errno
import os
import re
import subprocess
import time

import pytest

from lib.build import BIN
from lib.container import Container, compare, ps_ef_rows, without_self
from lib.mount import Mount
from lib.procs import ThreadsStopped, kill_tree

@pytest.fixture(scope="module")
def container():
    c = Container()
    m = Mount(["pidns=/proc/%d/ns/pid" % c.host_pid])
    try:
        c.attach(m)
        c.mount = m
        yield c
    finally:
        c.close()
        m.close()


def test_root_listing_is_the_namespace(container):
    """The view's root lists exactly the namespace's processes, with their pids there."""
    def pids(r):
        assert r.returncode == 0, r.stderr
        return sorted(int(p) for p in r.stdout.split() if p.isdigit())
    prog = "import os; print(*[p for p in os.listdir('/proc') if p != str(os.getpid())])"
    listed = compare(container, ["/usr/bin/python3", "-c", prog], pids)
    assert 1 in listed and len(listed) >= 2, listed
    # the same from outside, through the mount itself
    outside = sorted(int(p) for p in os.listdir(container.mount.path) if p.isdigit())
    assert outside == listed


def test_ps_ef(container):
    rows = compare(container, ["ps", "-ef"], ps_ef_rows("ps -ef"))
    assert any(r[1] == "1" and "victim" in " ".join(r) for r in rows), rows


def test_ps_threads(container):
    rows = compare(container, ["ps", "-eLo", "pid,lwp,nlwp,comm"], without_self(" ps"))
    assert len([r for r in rows if r[0] == "1"]) == 4, rows  # victim: main + 3 threads


def lsof_view(r):
    """lsof's rows without lsof's own processes, with the documented differences taken
    out (README, "What differs"): a pipe's DEVICE is the FUSE device; deleted files and
    anon inodes cannot be stat'ed through their links, so only who holds which fd counts."""
    assert r.returncode == 0 or r.stdout, r.stderr
    out = []
    for l in r.stdout.splitlines()[1:]:
        f = l.split()
        if f[0] == "lsof":
            continue
        fd = f.index("root") + 1           # COMMAND PID [TID TASKCMD] USER FD ...
        head, rest = f[:fd + 1], f[fd + 1:]
        if "(deleted)" in l or "anon_inode" in l or "[eventfd" in l:
            rest = []
        elif rest and rest[0] == "FIFO":
            rest = rest[:1] + rest[2:]
        out.append(head + rest)
    return out


def test_lsof(container):
    rows = compare(container, ["lsof", "-n", "-P"], lsof_view)
    assert any(r[1] == "1" and "TCP" in r for r in rows), rows


def test_self_and_thread_self(container):
    prog = ("import os; print(os.getpid(), os.readlink('/proc/self'), "
            "os.readlink('/proc/thread-self'), open('/proc/self/status').read().count('NSpid'))")
    r = container.view(["/usr/bin/python3", "-c", prog])
    assert r.returncode == 0, r.stderr
    pid, self_, thread_self, nspid = r.stdout.split()
    assert self_ == pid and thread_self == "%s/task/%s" % (pid, pid) and nspid == "1"
    # the daemon's own callers outside the namespace have no "self" there, as on procfs
    for name in ("self", "thread-self"):
        with pytest.raises(OSError) as e:
            os.readlink(os.path.join(container.mount.path, name))
        assert e.value.errno == errno.ENOENT


def test_new_process_appears_and_goes(container):
    """Processes started in the namespace after the mount reach the view's listing through
    process events (translated to the namespace's pids), and leave it when they exit."""
    p = subprocess.Popen(["nsenter", "-t", str(container.host_pid), "-p", "--", "sleep", "3600"],
                         start_new_session=True)
    try:
        deadline = time.time() + 10
        while True:
            kids = open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()
            if kids and open("/proc/%s/comm" % kids[0]).read() == "sleep\n":
                break
            assert time.time() < deadline
            time.sleep(0.02)
        host = int(kids[0])
        nspid = int(open("/proc/%d/status" % host).read().split("NSpid:")[1].split()[1])
        assert str(nspid) in os.listdir(container.mount.path)
        with open(os.path.join(container.mount.path, str(nspid), "status")) as f:
            status = f.read()
        assert "\nPid:\t%d\n" % nspid in status and "sleep" in status
        assert str(host) not in os.listdir(container.mount.path) or host == nspid
    finally:
        kill_tree(p)
    deadline = time.time() + 10
    while str(nspid) in os.listdir(container.mount.path):
        assert time.time() < deadline, "exited process still listed"
        time.sleep(0.05)


def test_outside_processes_unreachable(container):
    """A process outside the namespace has no name in the view: neither by its pid nor
    by any other path."""
    me = os.getpid()
    inside = {int(p) for p in os.listdir(container.mount.path) if p.isdigit()}
    assert me not in inside or me in range(1, 100)
    if me not in inside:
        with pytest.raises(FileNotFoundError):
            os.stat(os.path.join(container.mount.path, str(me)))
    with pytest.raises(FileNotFoundError):
        os.stat(os.path.join(container.mount.path, "1", "task", str(me)))


def test_task_listing(container):
    def tids(r):
        assert r.returncode == 0, r.stderr
        return sorted(r.stdout.split())
    tasks = compare(container, ["ls", "/proc/1/task"], tids)
    assert len(tasks) == 4 and "1" in tasks


def view_pid(host_pid):
    with open("/proc/%d/status" % host_pid) as f:
        return int(next(l for l in f if l.startswith("NSpid:")).split()[-1])


def test_exec_and_exit_applied_late(container):
    """A process of the namespace is listed (its FORK applied while it lives), then
    execs and exits while the listener waits: applied after it was reaped, the EXEC
    must not lose the EXIT that follows, and the process leaves the listing."""
    p = subprocess.Popen(["nsenter", "-t", str(container.host_pid), "-p", "-m", "--",
                          "sh", "-c", "read x; exec true"], stdin=subprocess.PIPE)
    try:
        deadline = time.time() + 10
        while not children_of(p.pid):
            assert time.time() < deadline, "sh never started"
            time.sleep(0.02)
        pid = view_pid(children_of(p.pid)[0])
        deadline = time.time() + 5
        while str(pid) not in os.listdir(container.mount.path):
            assert time.time() < deadline, "sh never listed in the view"
            time.sleep(0.02)
        with ThreadsStopped(container.mount.server_pid(), ["pf-events"]):
            p.communicate(b"\n", timeout=10)  # sh execs true, exits, is reaped
        deadline = time.time() + 5
        while str(pid) in os.listdir(container.mount.path):
            assert time.time() < deadline, "pid %d still listed after it was reaped" % pid
            time.sleep(0.05)
    finally:
        if p.poll() is None:  # sh reads EOF and ends
            p.communicate(timeout=10)


def children_of(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(c) for c in f.read().split()]


def test_second_view_and_host_mount_together(container, mnt):
    """Several mounts side by side: a second view of the same namespace, and the host
    mount, each keep their own pids."""
    m2 = Mount(["pidns=/proc/%d/ns/pid" % container.host_pid])
    try:
        a = sorted(p for p in os.listdir(m2.path) if p.isdigit())
        b = sorted(p for p in os.listdir(container.mount.path) if p.isdigit())
        assert a == b
        assert str(container.host_pid) in os.listdir(mnt.path)
        with open(os.path.join(m2.path, "1", "stat")) as f1, \
                open("/proc/%d/stat" % container.host_pid) as f2:
            view, host = f1.read().split(), f2.read().split()
        # the same process; its parent is outside the namespace: 0 there, as on procfs
        assert view[1:3] == host[1:3] and view[3] == "0" and host[3] != "0"
    finally:
        m2.close()


def test_bad_pidns_values(tmp_path):
    for value, word in (("/nonexistent", "No such file"),
                        ("/proc/self/ns/net", "not a pid namespace")):
        r = subprocess.run([BIN, "-o", "pidns=" + value, str(tmp_path)], capture_output=True,
                           text=True, timeout=30)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1 and word in lines[0], (value, lines)
