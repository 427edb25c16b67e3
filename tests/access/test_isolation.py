"""Isolation: nothing of a process outside a pidns= view, or hidden by hidepid=, can be
reached through the mount by any path: listings, names (its pid, its thread ids, under
task/), "..", hidden link-target lookups in fd/, caller links, and handles held across
pid reuse."""
import errno
import json
import os
import subprocess
import time

import pytest

from lib.container import Container
from lib.mount import Mount
from lib.procs import start_victim
from lib.users import NOBODY

MARK = "3617.25"  # a sleep argument nothing else on the machine uses


@pytest.fixture(scope="module")
def outsider():
    """A process outside every view: threads, files and sockets (the victim helper), plus
    a sleeper with a unique command line."""
    v = start_victim("--threads", 2)
    s = subprocess.Popen(["sleep", MARK])
    yield v, s
    s.kill()
    s.wait()
    v.stop()


@pytest.fixture(scope="module")
def view():
    c = Container()
    m = Mount(["pidns=/proc/%d/ns/pid" % c.host_pid])
    yield c, m
    c.close()
    m.close()


def errno_of(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return e.errno
    return 0


def socket_names(pid):
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith(("socket:", "pipe:")):
            out.append(t)
    return out


def test_view_lists_and_names_nothing_outside(view, outsider):
    c, m = view
    v, s = outsider
    listed = [p for p in os.listdir(m.path) if p.isdigit()]
    inside = set(listed)
    for p in listed:       # no listed entry is an outsider under another number
        try:
            with open(m.p(p, "cmdline"), "rb") as f:
                assert MARK.encode() not in f.read()
        except (FileNotFoundError, ProcessLookupError):
            pass
    for pid in [v.pid, s.pid] + v.tids:
        if str(pid) in inside:
            continue       # an inside process that happens to have that number
        for rel in ((pid,), (pid, "status"), (pid, "task"), (1, "task", pid),
                    (1, "task", pid, "status"), (1, "..", pid), (1, "task", "..", pid)):
            assert errno_of(os.stat, m.p(*rel)) == errno.ENOENT, rel


def test_view_hidden_link_targets_are_only_those_of_the_directory(view, outsider):
    """fd/ answers hidden lookups of "socket:[N]" names: only for links that directory
    holds, never for an outsider's objects."""
    c, m = view
    v, _ = outsider
    names = socket_names(v.pid)
    assert names
    for name in names:
        for d in ((1, "fd"), (1, "task", 1, "fd"), (1, "fdinfo"), (1, "ns")):
            assert errno_of(os.stat, m.p(*d, name)) == errno.ENOENT, (d, name)


def test_view_caller_links_from_outside(view):
    c, m = view
    for name in ("self", "thread-self"):
        assert errno_of(os.readlink, m.p(name)) == errno.ENOENT
        assert errno_of(os.stat, m.p(name, "status")) == errno.ENOENT


def in_namespace(c, script):
    """A shell in the container's namespaces whose parent (nsenter) reaps it."""
    return subprocess.Popen(["nsenter", "-t", str(c.host_pid), "-p", "-m", "--", "sh", "-c",
                             script], start_new_session=True)


def nspid_of_child(p, comm):
    deadline = time.time() + 10
    while True:
        for kid in open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split():
            for k in [kid] + open("/proc/%s/task/%s/children" % (kid, kid)).read().split():
                if open("/proc/%s/comm" % k).read().strip() == comm:
                    status = open("/proc/%s/status" % k).read()
                    return int(k), int(status.split("NSpid:")[1].split()[1])
        assert time.time() < deadline, "no %s started" % comm
        time.sleep(0.02)


def test_view_handle_never_reads_a_reused_pid(view):
    """A file of an inside process held open while the process exits and its pid (in the
    namespace) is given to a new process: the old handle reads nothing of the new one."""
    c, m = view
    first = in_namespace(c, "sleep 3600 & wait")
    host, nspid = nspid_of_child(first, "sleep")
    second = None
    f = open(m.p(nspid, "cmdline"), "rb", buffering=0)
    try:
        assert b"3600" in f.read()
        os.kill(host, 9)    # its parent in the namespace reaps it
        first.wait()
        deadline = time.time() + 10
        while str(nspid) in os.listdir(m.path):
            assert time.time() < deadline
            time.sleep(0.05)
        # the namespace's next pid is nspid again (ns_last_pid of its own namespace)
        second = in_namespace(c, "echo %d > /proc/sys/kernel/ns_last_pid; "
                                 "sleep 3601 & wait" % (nspid - 1))
        assert nspid_of_child(second, "sleep")[1] == nspid, "pid not reused"
        with open(m.p(nspid, "cmdline"), "rb") as g:
            assert b"3601" in g.read()
        f.seek(0)
        try:
            data = f.read()
        except OSError as e:
            data = e.errno
        assert data in (b"", errno.ESRCH), data
    finally:
        f.close()
        for p in (first, second):
            if p and p.poll() is None:
                for kid in open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split():
                    os.kill(int(kid), 15)   # the shell in the namespace; it reaps its sleep
                os.killpg(p.pid, 9)
                p.wait()


PROBE = r'''
import errno, json, os, sys
mnt, targets, names = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
def e(fn, *a):
    try:
        fn(*a)
        return 0
    except OSError as x:
        return x.errno
out = {"listed": sorted(set(os.listdir(mnt)) & set(map(str, targets)))}
for t in targets:
    for rel in ([t], [t, "status"], [t, "task", t], [t, "exe"], [t, "fd"], [t, "task"]):
        out["/".join(map(str, rel))] = e(os.stat, os.path.join(mnt, *map(str, rel)))
me = str(os.getpid())
for n in names:
    out["self/fd/" + n] = e(os.stat, os.path.join(mnt, me, "fd", n))
print(json.dumps(out))
'''


@pytest.mark.parametrize("hidepid", ["invisible", "ptraceable"])
def test_hidepid_hides_by_every_path(hidepid, mount_with, outsider):
    """Root's processes, hidden from nobody by hidepid, whatever root looked up before."""
    v, s = outsider
    m = mount_with("hidepid=" + hidepid)
    targets = [v.pid, s.pid] + [t for t in v.tids if t != v.pid]
    for t in targets:                        # root fills the kernel's caches first
        for rel in ("", "status", "task", "exe"):
            os.stat(m.p(t, rel))
    r = subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                        "--clear-groups", "/usr/bin/python3", "-c", PROBE, m.path,
                        json.dumps(targets), json.dumps(socket_names(v.pid))],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out.pop("listed") == [], out
    bad = {k: errno.errorcode.get(x, x) for k, x in out.items() if x != errno.ENOENT}
    assert not bad, bad


USERNS_PROBE = r'''
import errno, json, os, sys
mnt, pid = sys.argv[1], sys.argv[2]
out = {}
for rel in (pid + "/environ", pid + "/maps", pid + "/fd", pid + "/root"):
    for base in ("/proc", mnt):
        try:
            p = os.path.join(base, rel)
            os.listdir(p) if rel.endswith(("fd", "root")) else open(p, "rb").read(1)
            r = "ok"
        except OSError as e:
            r = errno.errorcode[e.errno]
        out.setdefault(rel, []).append(r)
print(json.dumps(out))
'''


def test_user_namespace_root_gets_no_host_capabilities(mnt):
    """A caller that is root in its own user namespace (a rootless container) has its
    capabilities there only: through the mount, as on /proc, they do not open the host's
    processes."""
    target = subprocess.Popen(["sleep", "3600"])   # root's, in the host's namespaces
    try:
        r = subprocess.run(["unshare", "-U", "-r", "/usr/bin/python3", "-c", USERNS_PROBE,
                            mnt.path, str(target.pid)],
                           capture_output=True, text=True, timeout=60, cwd="/")
    finally:
        target.kill()
        target.wait()
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert all(real == ours for real, ours in out.values()), out
    assert out["%d/environ" % target.pid][0] == "EACCES", out   # the comparison is not idle
