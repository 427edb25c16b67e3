"""The reader's context (issue 10, point 1): what procfs evaluates in the namespaces of
the task that reads it, procfast gives every caller as procfs gives it to that caller.

Each test runs a reader in namespaces made with unshare. The reader reads the same
entries from the real procfs in those namespaces (the host's instance, which evaluates
them in the reader's namespaces; or one mounted inside, for a pid namespace) and through
the mount, and the two must agree. Writes made through the mount from inside must land in
the reader's namespace, never in the host's (the daemon's)."""
import ctypes
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from lib.build import BIN
from lib.mount import Mount, is_ns_helper

# A reader: argv[1] is the mount, argv[2] a JSON list of steps; prints a JSON list of
# results. A step is [op, path, arg]: op "read" (whole file), "write", "list", "readlink",
# "call" (a Python expression of the reader's, for set-up inside the namespaces).
READER = r'''
import errno, json, os, socket, sys
mnt, steps, proc = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
def on(base, rel):
    return rel.replace("{mnt}", mnt).replace("{proc}", base) if "{" in rel else base + "/" + rel
def run(op, path, arg):
    try:
        if op == "read":
            with open(path, "rb") as f:
                return f.read().decode(errors="replace")
        if op == "write":
            with open(path, "w") as f:
                f.write(arg)
            return "written"
        if op == "list":
            return sorted(os.listdir(path))
        if op == "readlink":
            return os.readlink(path)
        if op == "call":
            return repr(eval(arg))
    except OSError as e:
        return "errno:" + errno.errorcode[e.errno]
out = []
for op, rel, arg in steps:
    if op == "call":
        out.append(run(op, None, arg))
        continue
    out.append([run(op, on(b, rel), arg) for b in (proc, mnt)])
print(json.dumps(out))
'''


def reader(mount, steps, unshare=(), prefix=(), proc="/proc"):
    """Runs the reader in new namespaces (unshare's options); each read step gives
    [what /proc says, what the mount says]."""
    cmd = list(prefix)
    if unshare:
        cmd += ["unshare"] + list(unshare)
    cmd += ["/usr/bin/python3", "-c", READER, mount.path, json.dumps(steps), proc]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def host(path):
    with open(path) as f:
        return f.read()


# ------------------------------------------------------------------ network namespace

def test_network_namespace(mnt):
    """sys/net is the reader's network namespace's: its values, its names (its own
    interfaces under conf/), and a write from inside changes that namespace only."""
    ttl = "/proc/sys/net/ipv4/ip_default_ttl"
    before = host(ttl)
    try:
        res = reader(mnt, [
            ["write", "{proc}/sys/net/ipv4/ip_default_ttl", "33"],   # through /proc
            ["read", "sys/net/ipv4/ip_default_ttl", None],
            ["write", "{mnt}/sys/net/ipv4/ip_default_ttl", "44"],    # through the mount
            ["read", "sys/net/ipv4/ip_default_ttl", None],
            ["list", "sys/net/ipv4/conf", None],
            ["read", "sys/net/ipv4/conf/lo/forwarding", None],
        ], unshare=["--net"])
        assert res[1] == ["33\n", "33\n"], res[1]
        assert res[2] == ["written", "written"]
        assert res[3] == ["44\n", "44\n"], res[3]
        assert res[4][0] == res[4][1] and "lo" in res[4][1], res[4]
        assert "eth0" not in res[4][1] or "eth0" in res[4][0]
        assert res[5][0] == res[5][1], res[5]
    finally:
        assert host(ttl) == before, "a write from another network namespace reached the host"
    # The host reads its own again (nothing of the other namespace was cached).
    with open(mnt.p("sys/net/ipv4/ip_default_ttl")) as f:
        assert f.read() == before
    assert sorted(os.listdir(mnt.p("sys/net/ipv4/conf"))) == sorted(
        os.listdir("/proc/sys/net/ipv4/conf"))


# ------------------------------------------------------------------ uts, ipc, cgroup

def test_uts_namespace(mnt):
    """hostname and domainname are the reader's uts namespace's, for reads and writes."""
    before = host("/proc/sys/kernel/domainname")
    res = reader(mnt, [
        ["call", None, "socket.sethostname('procfast-inside')"],
        ["read", "sys/kernel/hostname", None],
        ["write", "{mnt}/sys/kernel/domainname", "inside.example"],
        ["read", "sys/kernel/domainname", None],
        ["read", "sys/kernel/osrelease", None],
    ], unshare=["--uts"])
    assert res[1] == ["procfast-inside\n"] * 2, res[1]
    assert res[3] == ["inside.example\n"] * 2, res[3]
    assert res[4][0] == res[4][1]
    assert host("/proc/sys/kernel/domainname") == before
    with open(mnt.p("sys/kernel/hostname")) as f:
        assert f.read() == host("/proc/sys/kernel/hostname")


def test_ipc_namespace(mnt):
    """ipc limits, mqueue limits and sysvipc/* are the reader's ipc namespace's."""
    before = host("/proc/sys/kernel/msgmax"), host("/proc/sysvipc/shm")
    res = reader(mnt, [
        ["write", "{mnt}/sys/kernel/msgmax", "4321"],
        ["read", "sys/kernel/msgmax", None],
        ["write", "{mnt}/sys/fs/mqueue/msg_max", "17"],
        ["read", "sys/fs/mqueue/msg_max", None],
        ["call", None, "__import__('subprocess').run(['ipcmk', '-M', '8192'], check=True,"
                       " capture_output=True).returncode"],
        ["read", "sysvipc/shm", None],
    ], unshare=["--ipc"])
    assert res[1] == ["4321\n"] * 2, res[1]
    assert res[3] == ["17\n"] * 2, res[3]
    real, mounted = res[5]
    assert real == mounted and " 8192 " in real, res[5]
    assert (host("/proc/sys/kernel/msgmax"), host("/proc/sysvipc/shm")) == before


def test_cgroup_namespace(mnt):
    """Cgroup paths (cgroup, cpuset, cgroup mounts' roots in mountinfo) are below the
    reader's cgroup namespace root."""
    res = reader(mnt, [["read", "self/cgroup", None], ["read", "self/cpuset", None],
                       ["read", "thread-self/cgroup", None]], unshare=["--cgroup"])
    for real, mounted in res:
        assert real == mounted, (real, mounted)
    assert "::/\n" in res[0][1] or ":/\n" in res[0][1], res[0][1]
    mi = reader(mnt, [["read", "self/mountinfo", None]], unshare=["--cgroup"])[0]
    assert mi[0] == mi[1]


# ------------------------------------------------------------------ the reader's root

def test_root_directory(mnt, tmp_path):
    """Link texts and paths in maps are relative to the reader's root (a chroot): the
    same as a procfs mounted inside it gives."""
    root = tmp_path / "root"
    for d in ("proc", "mnt", "work", "usr", "lib", "lib64", "bin"):
        (root / d).mkdir(parents=True, exist_ok=True)
    script = (
        "mount --bind %s %s/mnt && mount -t proc proc %s/proc && "
        "mount --rbind /usr %s/usr && mount --rbind /lib %s/lib && "
        "mount --rbind /lib64 %s/lib64 && mount --rbind /bin %s/bin && "
        "exec chroot %s /usr/bin/python3 -c '%s' /mnt '%s' /proc"
        % ((mnt.path,) + (root,) * 7 + (
            "import os; os.chdir(\"/work\"); " + READER.replace("'", "'\"'\"'"),
            json.dumps([["readlink", "self/cwd", None], ["readlink", "self/exe", None],
                        ["readlink", "self/root", None], ["readlink", "self/fd/0", None],
                        ["read", "self/maps", None]]))))
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res[0] == ["/work", "/work"], res[0]
    assert res[1][0] == res[1][1] and res[1][1].startswith("/usr/bin/python3"), res[1]
    assert res[2] == ["/", "/"]
    assert res[3][0] == res[3][1], res[3]
    real_paths = sorted({l.split()[-1] for l in res[4][0].splitlines() if "/" in l})
    mount_paths = sorted({l.split()[-1] for l in res[4][1].splitlines() if "/" in l})
    assert real_paths == mount_paths and not any(str(root) in p for p in mount_paths)


# ------------------------------------------------------------------ user namespace

# Runs argv in a new user namespace whose root is the host's uid and gid 100000 (as a
# rootless container's is): the parent writes the maps, as newuidmap would.
MAPPED_ROOT = ["/usr/bin/python3", "-c", r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
go_r, go_w = os.pipe()
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    assert libc.unshare(0x10000000) == 0  # CLONE_NEWUSER
    os.write(ready_w, b"u")
    os.read(go_r, 1)
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    os.execv(sys.argv[1], sys.argv[1:])
os.read(ready_r, 1)
for m in ("uid_map", "gid_map"):
    with open("/proc/%d/%s" % (pid, m), "w") as f:
        f.write("0 100000 65536\n")
os.write(go_w, b"g")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
''']

USER_STEPS = [["read", "self/status", None], ["read", "self/uid_map", None],
              ["read", "self/gid_map", None], ["read", "self/loginuid", None],
              ["read", "key-users", None], ["read", "sys/user/max_user_namespaces", None],
              ["read", "sys/net/ipv4/ping_group_range", None]]


def id_lines(status):
    return [l for l in status.splitlines() if l.startswith(("Uid:", "Gid:", "Groups:"))]


@pytest.mark.parametrize("mapped", [False, True], ids=["root-to-root", "root-to-100000"])
def test_user_namespace(mnt, mapped):
    """Ids in status, the id maps, loginuid and key-users are shown in the opener's user
    namespace: through the mount as through /proc, for a caller in its own."""
    res = reader(mnt, USER_STEPS, prefix=MAPPED_ROOT if mapped else (),
                 unshare=() if mapped else ["--user", "--map-root-user"])
    real, mounted = res[0]
    assert id_lines(real) == id_lines(mounted), (id_lines(real), id_lines(mounted))
    assert "Uid:\t0\t0\t0\t0" in real
    for r in res[1:]:
        assert r[0] == r[1], r


def test_user_namespace_socket_owners(mnt):
    """net/tcp shows a socket's owner in the opener's user namespace."""
    steps = [["call", None, "(lambda s: (s.bind(('127.0.0.1', 0)), s.listen(), "
                            "globals().__setitem__('sk', s), s.getsockname()[1]))"
                            "(socket.socket())[-1]"],
             ["read", "self/net/tcp", None]]
    res = reader(mnt, steps, prefix=MAPPED_ROOT)
    port = "%04X" % int(res[0])
    mine = [[l.split()[7] for l in text.splitlines() if (":%s " % port) in l.split()[1] + " "]
            for text in res[1]]
    assert mine[0] == mine[1] == ["0"], mine


def _userns_of(pid):
    """The user namespace of a process, or None once it has ended."""
    try:
        return os.readlink("/proc/%s/ns/user" % pid)
    except (FileNotFoundError, PermissionError):  # gone; gone after the lookup (procfs: EACCES)
        return None


def test_helper_belongs_to_nobody_in_the_namespace(mnt):
    """The process that reads for a caller in its user namespace is not dumpable: no
    process of that namespace may trace it, though it acts as that namespace's root."""
    probe = r'''
import ctypes, json, os, sys
mnt = sys.argv[1]
open(mnt + "/self/status").read()       # makes a helper for these namespaces
libc = ctypes.CDLL(None, use_errno=True)
tried = {}
for pid in os.listdir("/proc"):
    try:
        if pid.isdigit() and open("/proc/%s/comm" % pid).read().strip() == "procfast-nsh":
            r = libc.ptrace(0x4206, int(pid), None, None)  # PTRACE_SEIZE
            tried[pid] = ctypes.get_errno() if r else 0
    except OSError:
        pass
print(json.dumps({"userns": os.readlink("/proc/self/ns/user"), "ptrace": tried}))
'''
    r = subprocess.run(MAPPED_ROOT + ["/usr/bin/python3", "-c", probe, mnt.path],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout)
    # Other mounts' helpers may end between the probe's listing and this one.
    helpers = [p for p in seen["ptrace"] if _userns_of(p) == seen["userns"]]
    assert len(helpers) == 1, seen  # it lives on a while after its last use
    assert seen["ptrace"][helpers[0]] == 1, seen  # EPERM
    with open("/proc/%s/status" % helpers[0]) as f:
        uids = [l for l in f if l.startswith("Uid:")][0].split()[1:]
    assert uids == ["100000"] * 4, uids  # the namespace's root, not the host's


# ------------------------------------------------------------------ time namespace

def test_time_namespace(mnt):
    """uptime, stat's btime and a process's start time are in the reader's time
    namespace (its boottime offset)."""
    res = reader(mnt, [["read", "uptime", None], ["read", "stat", None],
                       ["read", "self/stat", None], ["read", "1/stat", None]],
                 unshare=["--time", "--boottime", "100000", "--fork"])
    up_real, up_mount = (float(t.split()[0]) for t in res[0])
    assert abs(up_real - up_mount) < 2 and up_real > 100000, res[0]
    btime = [[l for l in t.splitlines() if l.startswith("btime")] for t in res[1]]
    assert btime[0] == btime[1], btime
    for real, mounted in res[2:]:
        assert real.rsplit(")", 1)[1].split()[19] == mounted.rsplit(")", 1)[1].split()[19]
    with open(mnt.p("uptime")) as f:
        assert float(f.read().split()[0]) < up_real - 90000  # the host's own again


# ------------------------------------------------------------------ pid namespace

def test_pid_namespace_entries_fail_closed(mnt):
    """ns_last_pid and pid_max are the reader's active pid namespace's, which no thread
    of the daemon can be in: a caller in another gets EPERM, never the daemon's, and its
    writes never steer the host's pids."""
    res = reader(mnt, [["read", "sys/kernel/ns_last_pid", None],
                       ["write", "{mnt}/sys/kernel/ns_last_pid", "30000"],
                       ["read", "sys/kernel/pid_max", None],
                       ["read", "sys/kernel/hostname", None],
                       ["read", "sys/kernel/cad_pid", None],
                       ["read", "sys/vm/memfd_noexec", None],
                       ["read", "sysvipc/shm", None]],
                 unshare=["--pid", "--fork", "--mount-proc"])
    assert res[0][0].strip().isdigit() and res[0][1] == "errno:EPERM", res[0]
    assert res[1][1] == "errno:EPERM", res[1]
    assert res[2][0].strip().isdigit() and res[2][1] == "errno:EPERM", res[2]
    assert res[3][0] == res[3][1]  # entries of other namespaces are served
    checked = 0
    for real, mounted in res[4:]:  # pids in the reader's pid namespace
        if real.startswith("errno"):
            # not on this kernel (memfd_noexec came in 6.3): the mount has none either
            assert mounted == real, (real, mounted)
        else:
            assert mounted == "errno:EPERM", (real, mounted)
            checked += 1
    assert checked >= 2, res[4:]  # cad_pid and sysvipc/shm are on every kernel


def test_caller_outside_the_pid_namespace_fails_closed(tmp_path):
    """A daemon whose pid namespace does not hold the caller cannot learn the caller's
    namespaces: entries that depend on them fail (EPERM); others are served."""
    procfs = tmp_path / "proc"
    procfs.mkdir()
    init = subprocess.Popen(["unshare", "--pid", "--fork", "--kill-child", "--mount",
                             "--propagation", "private", "sh", "-c",
                             "mount -t proc proc %s && echo up && exec sleep 600" % procfs],
                            stdout=subprocess.PIPE, text=True)
    assert init.stdout.readline().strip() == "up"
    kids = open("/proc/%d/task/%d/children" % (init.pid, init.pid)).read().split()
    m = None
    try:
        m = Mount(["source=/proc"], prefix=["nsenter", "--target", kids[0], "--pid", "--"])
        res = reader(m, [["read", "self/status", None], ["read", "uptime", None],
                         ["read", "sys/kernel/hostname", None], ["read", "meminfo", None],
                         ["read", "1/status", None], ["read", "1/cmdline", None]])
        # "self" names no process of the daemon's namespace for this caller
        assert res[0][1] == "errno:ENOENT", res[0]
        for r in res[1:3] + res[4:5]:
            assert r[1] == "errno:EPERM", res
        assert res[3][1].startswith("MemTotal:"), res[3]
        assert res[5][0] == res[5][1], res[5]
    finally:
        if m:
            m.close()
        init.kill()
        init.wait()


# ------------------------------------------------------------------ views

def test_view_reads_in_the_containers_namespaces():
    """A pidns= view bound over a container's /proc: the container's hostname and
    network values, as its real procfs gives them."""
    from lib.container import Container
    c = Container(extra=["--uts", "--net", "--ipc"])
    m = Mount(["pidns=/proc/%d/ns/pid" % c.host_pid])
    try:
        c.attach(m)
        cmd = ["sh", "-c", "hostname web-1 && echo 55 > /proc/sys/net/ipv4/ip_default_ttl"
               " && cat /proc/sys/kernel/hostname /proc/sys/net/ipv4/ip_default_ttl"
               " /proc/sys/kernel/msgmax"]
        real = c.real(cmd)
        view = c.view(["cat", "/proc/sys/kernel/hostname", "/proc/sys/net/ipv4/ip_default_ttl",
                       "/proc/sys/kernel/msgmax"])
        assert real.returncode == 0 and view.returncode == 0, (real.stderr, view.stderr)
        assert real.stdout.split() == view.stdout.split() == ["web-1", "55", "8192"] or \
            real.stdout.split() == view.stdout.split(), (real.stdout, view.stdout)
        assert view.stdout.split()[:2] == ["web-1", "55"]
        assert host("/proc/sys/net/ipv4/ip_default_ttl") != "55\n"
    finally:
        c.close()
        m.close()


def test_a_helper_that_dies_is_replaced(mnt):
    """A helper killed between two reads of a caller's: the next read gets a new one
    (never an error, never the daemon's answer)."""
    script = r'''
import json, os, signal, sys
mnt = sys.argv[1]
def uids():
    return [l for l in open(mnt + "/self/status") if l.startswith("Uid:")]
first = uids()
mine = os.readlink("/proc/self/ns/user")
print(json.dumps(first), flush=True)
sys.stdin.readline()                    # the test kills this namespace's helper
print(json.dumps(uids()), flush=True)
'''
    p = subprocess.Popen(["unshare", "--user", "--map-root-user", "/usr/bin/python3", "-c",
                          script, mnt.path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        first = json.loads(p.stdout.readline())
        userns = os.readlink("/proc/%d/ns/user" % p.pid)
        helpers = [int(q) for q in os.listdir("/proc") if q.isdigit() and is_ns_helper(int(q))
                   and _userns_of(q) == userns]
        assert len(helpers) == 1, helpers
        os.kill(helpers[0], 9)
        deadline = time.time() + 10
        while os.path.exists("/proc/%d" % helpers[0]):  # reaped by its maker
            assert time.time() < deadline, "the helper lives on"
            time.sleep(0.01)
        p.stdin.write("\n")
        p.stdin.flush()
        assert json.loads(p.stdout.readline()) == first == ["Uid:\t0\t0\t0\t0\n"]
    finally:
        p.kill()
        p.wait()
