"""The caller's whole identity: a worker acts with the caller's effective ids (which own
user namespaces, and so hold capabilities in them), never reads the daemon's own
processes as their thread group, never walks into a root that lies in a FUSE mount, and
a helper's handle ends with its process. Each case compares the mount with /proc read by
the same caller in the same namespaces (the access matrix, test_access_matrix.py, covers
every file; these are the findings of issue 21, each on its own)."""
import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from lib.mount import Mount, is_ns_helper
from lib.procs import start_with_pid
from lib.users import NOBODY

OTHER = 1000

# Runs as a persona, then makes each operation on /proc and on the mount (argv: persona,
# mount, ops as JSON) and prints [[/proc's result, the mount's result], ...]. A result is
# "errno:NAME" or the bytes read (text), "ok" for an open alone.
PROBE = r'''
import ctypes, errno, json, os, sys
persona, mnt, ops = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)

def drop_caps():
    # capset(v3, all sets empty) for this process: a root without capabilities
    hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    assert libc.capset(hdr, data) == 0, ctypes.get_errno()

if persona == "nocaps":
    drop_caps()
elif persona != "root":
    uid = int(persona)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)

def one(base, op):
    kind, rel = op[0], op[1]
    path = os.path.join(base, rel)
    try:
        if kind == "read":
            with open(path, "rb") as f:
                data = f.read(int(op[2]) if len(op) > 2 else -1)
            return data.decode("latin-1")
        if kind == "open":
            os.close(os.open(path, {"r": os.O_RDONLY, "rw": os.O_RDWR, "w": os.O_WRONLY}[op[2]]))
            return "ok"
        if kind == "readlink":
            return os.readlink(path)
        if kind == "list":
            return "ok:%d" % (len(os.listdir(path)) > 0)
        if kind == "write":
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, op[2].encode())
            finally:
                os.close(fd)
            return "ok"
        if kind == "stat_fields":  # PID/stat fields (proc(5) numbering) as one string
            with open(path) as f:
                rest = f.read().rsplit(")", 1)[1].split()
            return " ".join(rest[n - 3] for n in op[2])
    except OSError as e:
        return "errno:" + errno.errorcode[e.errno]
    raise ValueError(kind)

print(json.dumps([[one("/proc", op), one(mnt, op)] for op in ops]))
'''


def probe(mount, persona, ops, prefix=()):
    r = subprocess.run(list(prefix) + [sys.executable, "-c", PROBE, str(persona), mount.path,
                                       json.dumps(ops)],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def differing(ops, results):
    return [(op, real, mounted) for op, (real, mounted) in zip(ops, results) if real != mounted]


@pytest.fixture(scope="module")
def daemon():
    """A daemon of this module's own, so that its processes are known."""
    m = Mount()
    yield m
    m.close()


def daemons_processes(m):
    """The supervisor, the server and the helpers' maker (and its helpers)."""
    server = m.server_pid()
    kids = open("/proc/%d/task/%d/children" % (server, server)).read().split()
    helpers = [int(k) for k in kids if is_ns_helper(int(k))]
    return {"supervisor": m.proc.pid, "server": server, "helper": helpers[0]}


# What procfs guards with ptrace checks, and what it shows anyone: the first must fail
# for these callers exactly as on /proc, the second must read the same.
GUARDED = [["open", "mem", "r"], ["open", "mem", "rw"], ["read", "environ"], ["read", "maps"],
           ["read", "smaps"], ["read", "syscall"], ["read", "stack"], ["read", "auxv"],
           ["readlink", "exe"], ["readlink", "cwd"], ["readlink", "root"], ["list", "fd"],
           ["list", "fdinfo"], ["list", "map_files"], ["readlink", "fd/0"],
           ["read", "fdinfo/0"], ["read", "personality"], ["read", "wchan"],
           ["stat_fields", "stat", [26, 27, 28, 29, 30, 35]]]


@pytest.mark.parametrize("persona", [NOBODY, OTHER, "nocaps"])
@pytest.mark.parametrize("which", ["server", "supervisor", "helper"])
def test_the_daemons_processes_are_read_as_by_the_caller(daemon, persona, which):
    """A caller gets for the daemon's own processes what /proc gives it: a worker is the
    server's thread group, which the kernel lets through its ptrace checks."""
    pid = daemons_processes(daemon)[which]
    ops = [[op[0], "%d/%s" % (pid, op[1])] + op[2:] for op in GUARDED]
    assert differing(ops, probe(daemon, persona, ops)) == []


def test_the_servers_threads_are_read_as_by_the_caller(daemon):
    server = daemon.server_pid()
    tids = [t for t in os.listdir("/proc/%d/task" % server) if int(t) != server][:3]
    ops = [[op[0], "%d/task/%s/%s" % (server, t, op[1])] + op[2:]
           for t in tids for op in GUARDED if op[1] not in ("map_files",)]
    for persona in (NOBODY, "nocaps"):
        assert differing(ops, probe(daemon, persona, ops)) == []


USERNS_TARGET = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
unshared_r, unshared_w = os.pipe()
mapped_r, mapped_w = os.pipe()
pid = os.fork()
if pid == 0:
    assert libc.unshare(0x10000000) == 0  # CLONE_NEWUSER, owned by this (root) process
    os.write(unshared_w, b"x")
    os.read(mapped_r, 1)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the test reads both to their end
    os.dup2(null, 2)
    os.execvp("sleep", ["sleep", "300"])
os.read(unshared_r, 1)
base = sys.argv[1]
open("/proc/%d/uid_map" % pid, "w").write("0 %s 1" % base)
open("/proc/%d/setgroups" % pid, "w").write("deny")
open("/proc/%d/gid_map" % pid, "w").write("0 %s 1" % base)
os.write(mapped_w, b"x")
print(pid, flush=True)
'''


@pytest.fixture(params=[OTHER, 100000], ids=["same-uid", "container-root"])
def userns_target(request):
    """A process in a user namespace that root created (a rootful container's, or a
    user-namespaced pod's), its root mapped to uid OTHER (the caller's own) or 100000."""
    out = subprocess.run([sys.executable, "-c", USERNS_TARGET, str(request.param)],
                         capture_output=True, text=True, timeout=30, check=True).stdout
    pid = int(out)
    deadline = time.time() + 10
    while open("/proc/%d/comm" % pid).read().strip() != "sleep":
        assert time.time() < deadline
        time.sleep(0.01)
    yield pid
    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("persona", [OTHER, NOBODY, "nocaps"])
def test_root_owned_user_namespaces_give_the_worker_nothing(mnt, userns_target, persona):
    """Root owns the namespace, so an euid 0 holds every capability in it: a worker that
    kept euid 0 read (and wrote) what /proc refuses these callers."""
    pid = userns_target
    ops = [[op[0], "%d/%s" % (pid, op[1])] + op[2:] for op in GUARDED if op[1] != "fd/0"]
    slack = open("/proc/%d/timerslack_ns" % pid).read().strip()
    ops.append(["write", "%d/timerslack_ns" % pid, slack])
    assert differing(ops, probe(mnt, persona, ops)) == []


def userns_caller(persona, netns=True):
    """unshare argv: a caller in a user (and net) namespace of its own, mapped root, made
    by root or by a uid."""
    pre = [] if persona == "root" else ["setpriv", "--reuid=%d" % persona,
                                        "--regid=%d" % persona, "--clear-groups"]
    return pre + ["unshare", "-Ur"] + (["-n"] if netns else [])


SYSCTLS = ["sys/net/ipv4/ip_forward", "sys/net/ipv4/ip_unprivileged_port_start",
           "sys/net/ipv4/conf/all/rp_filter", "sys/net/ipv4/conf/lo/rp_filter"]


@pytest.mark.parametrize("persona", [OTHER, "root"])
def test_sysctl_writes_from_a_user_namespace(mnt, persona):
    """A write to a network sysctl from a user+net namespace is allowed or refused as on
    /proc, lands in the caller's network namespace, and never in the host's."""
    host = {s: open("/proc/" + s).read() for s in SYSCTLS}
    # a value other than the namespace's own, so that a write anywhere changes something
    ops = []
    for s in SYSCTLS:
        new = {"ip_forward": "1", "ip_unprivileged_port_start": "1000"}.get(
            os.path.basename(s), "2")
        ops += [["write", s, new], ["read", s]]
    try:
        res = probe(mnt, "root", ops, prefix=userns_caller(persona))
    finally:
        after = {s: open("/proc/" + s).read() for s in SYSCTLS}
        for s in SYSCTLS:
            if after[s] != host[s]:
                open("/proc/" + s, "w").write(host[s])
    assert after == host
    assert differing(ops, res) == []


def test_uts_writes_from_a_user_namespace(mnt):
    """(ipc sysctls are owned by the namespace's root on /proc, by the host's root
    through the mount, whose attributes are the same for every reader: such a caller is
    refused a write /proc allows, README says; only the uts ones are compared.)"""
    ops = [["write", "sys/kernel/hostname", "pf-test"], ["read", "sys/kernel/hostname"],
           ["write", "sys/kernel/domainname", "pf-test"], ["read", "sys/kernel/domainname"],
           ["read", "sys/kernel/msgmax"]]
    host = [open("/proc/sys/kernel/hostname").read(), open("/proc/sys/kernel/msgmax").read()]
    for persona in (OTHER, "root"):
        res = probe(mnt, "root", ops, prefix=userns_caller(persona, False) + ["--uts", "--ipc"])
        assert differing(ops, res) == []
    assert [open("/proc/sys/kernel/hostname").read(),
            open("/proc/sys/kernel/msgmax").read()] == host


# A reader in a user namespace, chrooted into the mount, opens self/maps (whose paths
# procfs prints relative to the reader's root) from many threads at once.
CHROOTED = r'''
import ctypes, json, os, sys, threading
mnt, n = sys.argv[1], int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
os.setgroups([]); os.setresgid(1000, 1000, 1000); os.setresuid(1000, 1000, 1000)
libc.prctl(4, 1, 0, 0, 0)  # dumpable again, to write its own uid_map
assert libc.unshare(0x10000000) == 0
open("/proc/self/uid_map", "w").write("0 1000 1")
os.chroot(mnt)
os.chdir("/")
res = []
def rd():
    for _ in range(4):
        try:
            with open("/self/maps") as f:
                f.read()
            res.append("ok")
        except OSError as e:
            res.append(e.errno)
ts = [threading.Thread(target=rd) for _ in range(n)]
[t.start() for t in ts]
[t.join() for t in ts]
print(json.dumps(sorted(set(res))))
'''


def waiting_on_a_mount(pid):
    """The threads of pid that wait for an answer of a FUSE mount."""
    out = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            if open("/proc/%d/task/%s/wchan" % (pid, t)).read() == "request_wait_answer":
                out.append(int(t))
        except OSError:
            pass
    return out


def test_a_reader_chrooted_into_the_mount_cannot_stop_it():
    """Entering such a reader's root would make the worker ask the mount itself (or any
    FUSE server, which need never answer) for permission: the worker refuses instead
    (EPERM for what procfs shows relative to the reader's root), and never waits on a
    mount; every other caller is served meanwhile. A read past the reader's share of
    workers is refused with EINTR, which Python makes again: only EPERM comes out."""
    m = Mount()
    try:
        server = m.server_pid()
        readers = [subprocess.Popen([sys.executable, "-c", CHROOTED, m.path, "8"],
                                    stdout=subprocess.PIPE, text=True) for _ in range(3)]
        outs = [r.communicate(timeout=60)[0] for r in readers]
        assert all(r.returncode == 0 for r in readers), outs
        assert all(json.loads(o) == [errno.EPERM] for o in outs), outs
        assert waiting_on_a_mount(server) == []
        with open(os.path.join(m.path, "1/status")) as f:
            assert f.read() == open("/proc/1/status").read()
    finally:
        m.close()


# Opens PID/status (served by a helper for a caller in a user namespace of its own) on
# /proc and the mount, says so, waits, and reads both again.
HOLDER = r'''
import json, os, sys
pid, mnt = sys.argv[1], sys.argv[2]
fds = [os.open(os.path.join(base, pid, "status"), os.O_RDONLY) for base in ("/proc", mnt)]
print("open", flush=True)
sys.stdin.readline()
out = []
for fd in fds:
    try:
        out.append(os.pread(fd, 4096, 0).decode())
    except OSError as e:
        out.append("errno:" + str(e.errno))
print(json.dumps(out), flush=True)
'''


def test_a_helpers_handle_ends_with_its_process(mnt):
    """A helper opens the path again at each read: after the process is gone and its pid
    another's, the old handle gives ESRCH as /proc's does, not the new process's file."""
    old = subprocess.Popen(["sleep", "300"])
    holder = subprocess.Popen(["unshare", "-Ur", sys.executable, "-c", HOLDER, str(old.pid),
                               mnt.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    new = None
    try:
        assert holder.stdout.readline().strip() == "open"
        old.kill()
        old.wait()
        for _ in range(20):
            new = start_with_pid(old.pid, ["sleep", "300"])
            if new:
                break
        assert new, "pid %d was taken by another process" % old.pid
        out, _ = holder.communicate("\n", timeout=30)
        real, mounted = json.loads(out)
        assert real == "errno:%d" % errno.ESRCH
        assert mounted == real
    finally:
        for p in (old, new, holder):
            if p and p.poll() is None:
                p.kill()
                p.wait()
