"""Extended attributes (issue 21 item 5): getxattr, listxattr, setxattr and removexattr
through the mount give what /proc gives the same caller.

procfs has no xattr handlers of its own (EOPNOTSUPP, an empty list, or the VFS's
ENODATA/EPERM for user.* of a link); what an fd's magic link leads to has its own: a
socket names its protocol in system.sockprotoname. lsof reads it through
/proc/PID/fd/N for a socket absent from /proc/net (one of another network namespace,
an AF_ALG socket, an unbound one), and printed "can't identify protocol" over procfast.

A holder process keeps one fd of each kind (sockets of several families, two created in
another network namespace, a pipe, an eventfd, a regular file) and runs as root or as
nobody; a probe runs every call on /proc and on the mount in turn, as root or as nobody.
"""
import json
import os
import subprocess
import tempfile

import pytest

from lib.bind import on_proc, over_proc
from lib.procs import kill_tree

NOBODY = 65534

HOLDER = r'''
import ctypes, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
keep, fds = [], {}

def add(kind, make):
    try:
        obj = make()
    except OSError:
        return   # a family this kernel lacks (AF_ALG without its module)
    keep.append(obj)
    fds[kind] = obj if isinstance(obj, int) else obj.fileno()

add("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
add("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
add("tcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
add("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
add("alg", lambda: socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0))
# sockets of another network namespace: absent from the host's /proc/net
host = os.open("/proc/self/ns/net", os.O_RDONLY)
if libc.unshare(CLONE_NEWNET):
    sys.exit("unshare: %s" % os.strerror(ctypes.get_errno()))
add("netns_netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
add("netns_unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
if libc.setns(host, CLONE_NEWNET):
    sys.exit("setns: %s" % os.strerror(ctypes.get_errno()))
os.close(host)
r, w = os.pipe()
keep.append(w)
add("pipe", lambda: r)
add("eventfd", lambda: os.eventfd(0))
add("file", lambda: os.open(sys.argv[1], os.O_RDWR))
uid = int(sys.argv[2])
if uid:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: its /proc/PID files are uid's again
print(json.dumps({"pid": os.getpid(), "fds": fds}), flush=True)
sys.stdin.read()
'''

# Runs each call on every base in turn (the same process: the same caller); prints
# {base: {case: result}}. A result is an errno name, or the value / length.
PROBE = r'''
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
for f in ("getxattr", "lgetxattr", "listxattr", "llistxattr"):
    getattr(libc, f).restype = ctypes.c_ssize_t
bases, pid, rels = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
GET = ["system.sockprotoname", "user.procfast", "trusted.procfast", "security.capability",
       "security.selinux", "system.posix_acl_access", "procfast.noprefix"]
SET = ["user.procfast", "trusted.procfast", "security.procfast", "system.sockprotoname"]

def result(n, buf=None):
    if n < 0:
        return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
    return buf.raw[:n].decode("latin-1") if buf is not None else n

def cases(path, rel):
    out = {}
    for follow in (True, False):
        pre, how = ("", "follow") if follow else ("l", "nofollow")
        p = path.encode()
        for name in GET:
            k = "%s %s get %s" % (rel, how, name)
            nm = name.encode()
            size = getattr(libc, pre + "getxattr")(p, nm, None, 0)
            out[k + " size"] = result(size)
            buf = ctypes.create_string_buffer(4096)
            out[k] = result(getattr(libc, pre + "getxattr")(p, nm, buf, 4096), buf)
            if size > 1:   # a buffer too small: ERANGE
                small = ctypes.create_string_buffer(size - 1)
                out[k + " small"] = result(getattr(libc, pre + "getxattr")(p, nm, small, size - 1))
        k = "%s %s list" % (rel, how)
        size = getattr(libc, pre + "listxattr")(p, None, 0)
        out[k + " size"] = result(size)
        buf = ctypes.create_string_buffer(4096)
        out[k] = result(getattr(libc, pre + "listxattr")(p, buf, 4096), buf)
        if size > 1:
            small = ctypes.create_string_buffer(size - 1)
            out[k + " small"] = result(getattr(libc, pre + "listxattr")(p, small, size - 1))
        for name in SET:
            k = "%s %s set %s" % (rel, how, name)
            out[k] = result(getattr(libc, pre + "setxattr")(p, name.encode(), b"x", 1, 0))
            k = "%s %s remove %s" % (rel, how, name)
            out[k] = result(getattr(libc, pre + "removexattr")(p, name.encode()))
    return out

print(json.dumps({base: {k: v for rel in rels for k, v in cases(base + "/" + rel, rel).items()}
                  for base in bases}))
'''


class Holder:
    def __init__(self, uid):
        self.uid = uid
        self.dir = tempfile.mkdtemp(prefix="procfast-xattr-")
        os.chmod(self.dir, 0o755)
        self.file = os.path.join(self.dir, "plain")
        with open(self.file, "w"):
            pass
        os.chown(self.file, uid, uid)
        self.proc = subprocess.Popen(["/usr/bin/python3", "-c", HOLDER, self.file, str(uid)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        if not line:
            kill_tree(self.proc)
            raise RuntimeError("holder exited %s" % self.proc.returncode)
        info = json.loads(line)
        self.pid, self.fds = info["pid"], info["fds"]

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_tree(self.proc)
        self.proc.stdout.close()
        os.unlink(self.file)
        os.rmdir(self.dir)


@pytest.fixture(scope="module", params=[0, NOBODY], ids=["root_holder", "nobody_holder"])
def holder(request):
    h = Holder(request.param)
    yield h
    h.close()


def probe(mnt, h, uid):
    pid = h.pid
    rels = ["%d/status" % pid, str(pid), "%d/fd" % pid, "self", "uptime", "sys/kernel/ostype",
            "%d/task/%d/fd/%d" % (pid, pid, h.fds["unix"])]
    rels += ["%d/fd/%d" % (pid, fd) for fd in h.fds.values()]
    prefix = [] if uid == 0 else ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
                                  "--clear-groups", "--inh-caps=-all"]
    r = subprocess.run(prefix + ["/usr/bin/python3", "-c", PROBE, json.dumps(["/proc", mnt.path]),
                                 str(pid), json.dumps(rels)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    return out["/proc"], out[mnt.path]


# Answers the kernel gives on this side before the daemon is asked, from the FUSE inode's
# type, mode and owner (default_permissions), where they differ from procfs's inode: the
# same errors of other numbers. Keyed by (what the path is, operation, name's prefix):
# {(errno on /proc, errno over the mount)}.
KERNEL_SIDE = {
    # procfs's process directories refuse any change (EPERM); the mode check here answers
    # first when user.* needs write permission the caller lacks
    ("process dir", "set", "user"): {("EPERM", "EACCES")},
    ("process dir", "remove", "user"): {("EPERM", "EACCES")},
    # a pipe's link target has no permission bits and an unmappable owner (link.c, so that
    # open() fails instead of waiting for a writer): every change is EPERM, and a name of
    # no known prefix needs read permission (EACCES), for root too
    ("pipe", "set", "*"): {("ENOTSUP", "EPERM")},
    ("pipe", "remove", "*"): {("ENOTSUP", "EPERM")},
    ("pipe", "get", "procfast"): {("ENOTSUP", "EACCES")},
    # an anon inode's link target is shown as a regular file (root's, 0600): user.* needs
    # its permission, and a change of security.* the LSM's CAP_SYS_ADMIN
    ("anon inode", "get", "user"): {("ENODATA", "EACCES")},
    ("anon inode", "set", "user"): {("EPERM", "EACCES")},
    ("anon inode", "remove", "user"): {("EPERM", "EACCES")},
    ("anon inode", "set", "security"): {("ENOTSUP", "EPERM")},
    ("anon inode", "remove", "security"): {("ENOTSUP", "EPERM")},
}


def known_difference(h, case, on_proc_, on_mnt):
    rel, mode, op = case.split()[:3]
    name = case.split()[3] if op != "list" else ""
    what = None
    if rel == str(h.pid) or (rel, mode) == ("self", "follow"):
        what = "process dir"
    elif mode == "follow":
        what = {"%d/fd/%d" % (h.pid, h.fds["pipe"]): "pipe",
                "%d/fd/%d" % (h.pid, h.fds["eventfd"]): "anon inode"}.get(rel)
    prefix = name.split(".")[0]
    allowed = KERNEL_SIDE.get((what, op, prefix), set()) | KERNEL_SIDE.get((what, op, "*"), set())
    return (on_proc_, on_mnt) in allowed


@pytest.mark.parametrize("caller", [0, NOBODY], ids=["root_caller", "nobody_caller"])
def test_xattr_like_proc(mnt, holder, caller):
    """Every call on proc files, the holder's directories and each of its fd links, with
    and without following, gives what /proc gives the same caller: the value (read whole,
    and by the size probe first), ERANGE for a buffer one byte short, the list, and the
    errno of a change."""
    proc, mount = probe(mnt, holder, caller)
    bad = []
    for k in sorted(set(proc) | set(mount)):
        a, b = proc.get(k, "(not made)"), mount.get(k, "(not made)")
        if a != b and not known_difference(holder, k, a, b):
            bad.append("%s: /proc %r, mount %r" % (k, a, b))
    assert not bad, "\n".join(bad)
    # the test means something: a socket's protocol was read, by the caller that may
    protocol = "%d/fd/%d follow get system.sockprotoname" % (holder.pid,
                                                             holder.fds["netns_netlink"])
    if caller == 0 or holder.uid == caller:
        assert mount[protocol] == "NETLINK\0"
        assert mount[protocol + " size"] == len("NETLINK\0")
        assert mount[protocol + " small"] == "ERANGE"
    else:
        assert mount[protocol] == "EACCES"


def lsof_protocols(run, pid, fds):
    """lsof's TYPE, NODE and NAME of those fds of pid (field output: no columns to align)."""
    r = run("lsof -n -P -a -p %d -d %s -F ftin" % (pid, ",".join(str(f) for f in fds)))
    rows, cur = {}, None
    for line in r.stdout.splitlines():
        if line[:1] == "f":
            cur = rows.setdefault(int(line[1:]), {})
        elif cur is not None and line[:1] in "tin":
            cur[line[:1]] = line[1:]
    return rows


def test_lsof_names_protocol(mnt):
    """lsof with the mount bound over /proc names the protocol of sockets absent from
    /proc/net (another netns's netlink and unix sockets, an unbound TCP socket, AF_ALG
    where the kernel has it) exactly as it does on /proc, from system.sockprotoname."""
    h = Holder(0)
    try:
        kinds = [k for k in ("netns_netlink", "netns_unix", "tcp", "alg") if k in h.fds]
        fds = [h.fds[k] for k in kinds]
        real = lsof_protocols(on_proc, h.pid, fds)
        for k in kinds:   # the cases mean something: lsof needs the attribute there
            assert real[h.fds[k]]["n"].startswith("protocol: "), (k, real)
        assert real[h.fds["netns_netlink"]]["n"] == "protocol: NETLINK"
        assert real[h.fds["netns_unix"]]["n"] == "protocol: UNIX"
        assert lsof_protocols(lambda c: over_proc(mnt, c), h.pid, fds) == real
    finally:
        h.close()
