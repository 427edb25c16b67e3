"""Each caller's share of the daemon (issue 21 item 3, fs/caller/fair.h).

"One user takes every fd: nobody holding opens of loadavg filled the daemon's 20,000 fds;
root then got EMFILE on 1/status, self/maps and ls 1/fd." Here a uid, and a container,
holds open files until its own opens fail with EMFILE, and that comes at its share;
root and another uid are still served. And a uid with requests that wait in the daemon
(reads of kmsg, which wait for the next kernel message) gets EINTR past its share of the
threads that serve, while another uid is still served.

"Served" means: the call returns what /proc returns for the same call, within a
generous timeout; nothing here measures speed.
"""
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from lib.kmsg_request import drain_kernel_log, end_kernel_log_waits, waiting_in_kernel_log
from lib.mount import Mount
from lib.waiting import wait_for

NOBODY = 65534
OTHER = 4242  # a uid with no process of its own

SHARES = re.compile(r"shares: (\d+) handles a uid, (\d+) a container, of (\d+) \(fd limit (\d+), "
                    r"(\d+) kept for the daemon\); (\d+) requests in flight a uid of (\d+) "
                    r"/dev/fuse workers(?:, (\d+) of each io_uring queue's (\d+) threads)?")
FD_LIMIT = 4096
WORKERS = 32       # libfuse's workers when -o max_threads= is not given (procfast's default)
URING_THREADS = 4  # -o uring_threads= when not given


def server_fd_limit(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no fd limit for %d" % pid)


def default_shares(m):
    """The default shares, as fs/caller/fair.h and the README state them, for m's server:
    the daemon keeps max(256, fd limit / 16) fds (at most half), handles may use the
    rest; a uid, and a container, a quarter of that; a uid half of libfuse's workers and
    all but one of the threads of a CPU's io_uring queue."""
    fd_limit = server_fd_limit(m.server_pid())
    reserve = min(max(256, fd_limit // 16), fd_limit // 2)
    handles = fd_limit - reserve
    return {"uid": handles // 4, "container": handles // 4, "handles": handles,
            "fd_limit": fd_limit, "reserve": reserve, "busy_fuse": WORKERS // 2,
            "fuse_workers": WORKERS, "busy_ring": URING_THREADS - 1,
            "ring_threads": URING_THREADS}


def logged_shares(m):
    """The shares the daemon logged at start (its server's: the last such line)."""
    deadline = time.time() + 10
    while True:
        found = SHARES.findall(m.output())
        if found:
            keys = ("uid", "container", "handles", "fd_limit", "reserve", "busy_fuse",
                    "fuse_workers", "busy_ring", "ring_threads")
            return dict(zip(keys, [int(v) if v else None for v in found[-1]]))
        assert time.time() < deadline, "no shares line in the log:\n" + m.output()
        time.sleep(0.05)


def as_uid(uid):
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
            "--inh-caps=-all"] if uid else []


# ------------------------------------------------------------------ handles

# Opens argv[1] until an open fails (its own fd limit raised out of the way), says how
# many it holds and why it stopped, and holds them until stdin closes. argv[2]: the
# namespaces to make first (a container): "user" (its uid and gid mapped to themselves),
# "pid" (the holder is then a child, the first process of a new pid namespace) or "".
HOLDER = r"""
import ctypes, errno, json, os, resource, sys
path, ns = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if ns and libc.unshare({"user": 0x10000000, "pid": 0x20000000}[ns]):
    print(json.dumps({"unshare": os.strerror(ctypes.get_errno())}), flush=True)
    sys.exit(0)
if ns == "user":  # its own ids mapped, as a container's are
    uid, gid = os.getuid(), os.getgid()
    for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)),
                       ("gid_map", "%d %d 1" % (gid, gid))):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)
if ns == "pid":
    child = os.fork()
    if child:
        _, status = os.waitpid(child, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
held, why = [], None
while why is None:
    try:
        held.append(os.open(path, os.O_RDONLY))
    except OSError as e:
        why = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"held": len(held), "error": why}), flush=True)
sys.stdin.readline()
"""


class Holder:
    """A process (as uid, in a container of kind ns or none) holding opens of path until
    one failed: .held of them, and .error for the one that failed."""

    def __init__(self, path, uid=0, ns=""):
        self.proc = subprocess.Popen(as_uid(uid) + [sys.executable, "-c", HOLDER, path, ns],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd="/")
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            raise AssertionError("holder (uid %d, %s) exited %s" % (uid, ns, self.proc.returncode))
        got = json.loads(line)
        if "unshare" in got:
            self.close()
            pytest.skip("no %s namespace for uid %d: %s" % (ns, uid, got["unshare"]))
        self.held, self.error = got["held"], got["error"]

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


# What the root could no longer do, as a uid: 1/status, self/maps, a listing of
# 1/fd, and loadavg, each as a value or its errno. base is the mount or /proc.
PROBE = r"""
import errno, json, os, sys
base = sys.argv[1]
def outcome(f):
    try:
        return f()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def status():
    with open(os.path.join(base, "1", "status")) as f:
        return [l for l in f if l.startswith(("Name:", "Tgid:", "Uid:"))]
def maps():
    with open(os.path.join(base, "self", "maps")) as f:
        return f.readline().split()[-1]
def fd():
    return sorted(os.listdir(os.path.join(base, "1", "fd")))
def loadavg():
    with open(os.path.join(base, "loadavg")) as f:
        return len(f.read().split())
print(json.dumps({"1/status": outcome(status), "self/maps": outcome(maps),
                  "ls 1/fd": outcome(fd), "loadavg": outcome(loadavg)}))
"""


def probe(base, uid, cpu=None):
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    r = subprocess.run(pin + as_uid(uid) + [sys.executable, "-c", PROBE, base],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def assert_served(m, uid, cpu=None):
    """uid gets from the mount what /proc gives it. pid 1's fds may change between the two
    looks: the listing is looked at again until both agree."""
    for _ in range(10):
        got, want = probe(m.path, uid, cpu), probe("/proc", uid, cpu)
        if got == want:
            return
        if {k: v for k, v in got.items() if k != "ls 1/fd"} != \
                {k: v for k, v in want.items() if k != "ls 1/fd"}:
            break
        time.sleep(0.1)
    assert got == want, "uid %d: mount %s, /proc %s" % (uid, got, want)
    assert "EMFILE" not in json.dumps(got)


STAT_AND_LIST = r"""
import os, sys
os.stat(os.path.join(sys.argv[1], "loadavg"))
print(len(os.listdir(sys.argv[1])))
"""


def stat_and_list(m, uid):
    """uid's requests that open nothing: served past its share of handles."""
    r = subprocess.run(as_uid(uid) + [sys.executable, "-c", STAT_AND_LIST, m.path],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0 and int(r.stdout) > 0, r.stderr


@pytest.fixture
def fd_limited_mount():
    """A mount with the default shares, whose daemon has an fd limit of FD_LIMIT (what it
    starts with is the test runner's, up to millions)."""
    m = Mount(prefix=["prlimit", "--nofile=%d:%d" % (FD_LIMIT, FD_LIMIT), "--"])
    yield m
    m.close()


def test_one_uid_holding_opens_gets_emfile_at_its_share_and_others_are_served(
        fd_limited_mount):
    """The issue's case with the default shares: nobody holds opens of loadavg until
    EMFILE, which comes at its share (a quarter of the daemon's fd limit less its
    reserve: 960 of 4096), not at the daemon's limit; root and another uid still open
    1/status and self/maps and list 1/fd, as /proc answers them, and so may another uid
    hold its own full share. Once nobody closes, it opens again."""
    m = fd_limited_mount
    s = default_shares(m)
    assert (s["fd_limit"], s["uid"]) == (FD_LIMIT, 960)
    nobody = other = None
    try:
        nobody = Holder(m.p("loadavg"), NOBODY)
        assert (nobody.held, nobody.error) == (s["uid"], "EMFILE")
        for uid in (0, OTHER, NOBODY + 1):
            assert_served(m, uid)
        stat_and_list(m, NOBODY)
        other = Holder(m.p("loadavg"), OTHER)
        assert (other.held, other.error) == (s["uid"], "EMFILE")
        assert_served(m, 0)
    finally:
        for h in (nobody, other):
            if h:
                h.close()
    again = Holder(m.p("loadavg"), NOBODY)
    again.close()
    assert (again.held, again.error) == (s["uid"], "EMFILE")
    assert_served(m, NOBODY)
    assert logged_shares(m) == s


def test_shares_given_as_options(mount_with):
    """-o max_handles_per_uid=: the uid's EMFILE comes there; a uid's closed handles are
    given back (released), and the count starts again."""
    m = mount_with("max_handles_per_uid=37")
    assert logged_shares(m)["uid"] == 37
    for _ in range(2):
        h = Holder(m.p("loadavg"), NOBODY)
        try:
            assert (h.held, h.error) == (37, "EMFILE")
            # directories are handles too
            d = Holder(m.p("self", "task"), NOBODY)
            d.close()
            assert (d.held, d.error) == (0, "EMFILE")
            assert_served(m, 0)
        finally:
            h.close()


def test_a_container_gets_emfile_at_its_share(mount_with):
    """A container is its user namespace: nobody in a user namespace of its own holds
    opens until EMFILE at the container's share; the same uid outside it still opens
    up to the rest of its uid's share; root is served. A container without a user
    namespace is its pid namespace: root in a pid namespace of its own gets EMFILE at
    the container's share, and root outside it is served."""
    m = mount_with("max_handles_per_uid=60", "max_handles_per_container=25")
    assert logged_shares(m)["container"] == 25
    held = []
    try:
        held.append(Holder(m.p("loadavg"), NOBODY, "user"))
        assert (held[-1].held, held[-1].error) == (25, "EMFILE")
        held.append(Holder(m.p("loadavg"), NOBODY, "user"))  # another container
        assert (held[-1].held, held[-1].error) == (25, "EMFILE")
        held.append(Holder(m.p("loadavg"), NOBODY))  # the host: the uid's share is left
        assert (held[-1].held, held[-1].error) == (60 - 50, "EMFILE")
        assert_served(m, 0)
        held.append(Holder(m.p("loadavg"), 0, "pid"))
        assert (held[-1].held, held[-1].error) == (25, "EMFILE")
        assert_served(m, 0)
        assert_served(m, OTHER)
    finally:
        for h in held:
            h.close()


# ------------------------------------------------------------------ threads

# The refusal: EINTR, which Python's os.open and os.read make again (PEP 475), as a Go
# program does (fs/caller/fair.h). The calls here are libc's, through ctypes: they
# return it.
RAW_CALLS = r"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def raw_open(path):
    fd = libc.open(path.encode(), os.O_RDONLY)
    return fd if fd >= 0 else -ctypes.get_errno()
def raw_read(fd, n):
    buf = ctypes.create_string_buffer(n)
    r = libc.read(fd, buf, n)
    return r if r >= 0 else -ctypes.get_errno()
def name(err):
    return errno.errorcode.get(-err, str(-err))
"""

# Root, n threads pinned to one CPU (one io_uring queue), each reading path (kmsg) for
# ever; a thread whose open or read fails prints the errno and ends.
HOG = RAW_CALLS + r"""
import sys, threading
path, n, cpu = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lock = threading.Lock()
def hog():
    os.sched_setaffinity(0, {cpu})
    r = fd = raw_open(path)
    while r >= 0:
        r = raw_read(fd, 4096)
    with lock:
        print(name(r), flush=True)
for _ in range(n):
    threading.Thread(target=hog, daemon=True).start()
sys.stdin.readline()
"""

ROOT_REQUEST = RAW_CALLS + r"""
import sys
fd = raw_open(sys.argv[1])
if fd >= 0:
    os.close(fd)
    print("ok")
else:
    print(name(fd))
"""


def root_request(path, cpu):
    """An open of path by root on that CPU, made once: 'ok' or its errno."""
    r = subprocess.run(["taskset", "-c", str(cpu), sys.executable, "-c", ROOT_REQUEST, path],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_uid_past_its_share_of_threads_gets_eintr_and_others_are_served(mount_with):
    """Root reads kmsg through the mount from more threads than the daemon has: each read
    waits in the daemon for the next kernel message, holding the thread that serves it.
    Its share of the threads (half of libfuse's workers over /dev/fuse, all but one of
    its CPU's queue's threads over io_uring) wait; its other reads, and any further request of
    root's, get EINTR at once; nobody and another uid are still served, on the same
    CPU. Without the shares the daemon's threads all wait and nobody waits with them."""
    m = mount_with()
    s = default_shares(m)
    server = m.server_pid()
    cpu = sorted(os.sched_getaffinity(0))[0]
    share = s["busy_ring"] if m.over_uring() else s["busy_fuse"]
    threads = (s["ring_threads"] if m.over_uring() else s["fuse_workers"]) + 2
    assert 1 <= share < threads - 2
    drain_kernel_log()
    hog = subprocess.Popen([sys.executable, "-c", HOG, m.p("kmsg"), str(threads), str(cpu)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    refused = []
    reader = threading.Thread(target=lambda: refused.extend(hog.stdout), daemon=True)
    reader.start()
    try:
        # A kernel message ends one wait; that thread reads again. However the threads
        # race, at the end `share` wait and the rest were refused.
        wait_for(lambda: len(refused) >= threads - share and
                 waiting_in_kernel_log(server) == share, 60,
                 "%d reads waiting and %d refused (now %d, %s)" % (
                     share, threads - share, waiting_in_kernel_log(server), refused))
        assert set(refused) == {"EINTR\n"}, refused
        # nobody and another uid: served on the same CPU, by the threads left
        for uid in (NOBODY, OTHER):
            assert_served(m, uid, cpu)
        # root's further requests: refused at once (a kernel message meanwhile could let
        # one through: looked at again then)
        for _ in range(5):
            before = waiting_in_kernel_log(server)
            got = root_request(m.p(1, "status"), cpu)
            if got == "EINTR" or before != share or waiting_in_kernel_log(server) != share:
                break
        assert got == "EINTR", got
        assert "uid 0 has its share of threads busy (%d)" % share in m.output()
        assert logged_shares(m) == s
    finally:
        hog.kill()
        # its death ends its reads (test_interrupt.py); should one be left, messages end it
        end_kernel_log_waits(lambda: hog.poll() is not None)
        hog.wait()
    wait_for(lambda: waiting_in_kernel_log(server) == 0, 30, "the daemon's reads of kmsg to end")
    assert_served(m, 0, cpu)


def test_shares_of_threads_given_as_an_option(mount_with):
    """-o max_busy_per_uid=1: root's second read of kmsg waiting is refused, and root's
    other requests too, while one waits; nobody is served."""
    m = mount_with("max_busy_per_uid=1")
    s = logged_shares(m)
    assert (s["busy_fuse"], s["busy_ring"]) == (1, 1)
    server = m.server_pid()
    cpu = sorted(os.sched_getaffinity(0))[0]
    drain_kernel_log()
    hog = subprocess.Popen([sys.executable, "-c", HOG, m.p("kmsg"), "3", str(cpu)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    refused = []
    reader = threading.Thread(target=lambda: refused.extend(hog.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: len(refused) >= 2 and waiting_in_kernel_log(server) == 1, 60,
                 "one read waiting and two refused (%s)" % refused)
        assert set(refused) == {"EINTR\n"}, refused
        assert_served(m, NOBODY, cpu)
    finally:
        hog.kill()
        end_kernel_log_waits(lambda: hog.poll() is not None)
        hog.wait()
    assert_served(m, 0, cpu)
