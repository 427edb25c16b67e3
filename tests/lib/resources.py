"""What the resources tests share: cgroups made for a test, Debian's lxcfs on a scratch
mount point, and a reader process placed in a cgroup that reads files on request.

The reader reads what it is asked, in order, each with open + read to EOF + close into
buffers it made before (so that its own memory does not move between reads), and
answers with the texts. Comparisons read procfast, lxcfs, procfast, lxcfs in turn: a
field that moves is checked to lie within what the reads of the other side show around
it (see `sandwiched`), never against a number written here.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from lib.task_waits import waits_in_session
from lib.waiting import mounted

V1_ROOT = "/sys/fs/cgroup"
V1_CONTROLLERS = ("memory", "cpu", "cpuacct", "cpuset", "blkio")
LXCFS = shutil.which("lxcfs") or "/usr/bin/lxcfs"
ANSWER_WAIT_S = 120

READER = r"""
import json, os, sys
bufs = [bytearray(1 << 20) for _ in range(8)]
print(json.dumps({"pid": os.getpid()}), flush=True)
for line in sys.stdin:
    out = []
    for i, path in enumerate(json.loads(line)):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            out.append({"errno": e.errno})
            continue
        view, n = memoryview(bufs[i % 8]), 0
        try:
            while True:
                got = os.readv(fd, [view[n:]])
                if not got:
                    break
                n += got
            out.append({"text": bytes(view[:n]).decode()})
        except OSError as e:
            out.append({"errno": e.errno})
        finally:
            os.close(fd)
    print(json.dumps(out), flush=True)
"""


def owner_tag():
    return "procfast-res-%d" % os.getpid()


class Cgroup:
    """One cgroup of the same name in each v1 controller this host has, with limits."""
    seq = 0

    def __init__(self, memory=None, cpus=None, quota=None, period=100000):
        Cgroup.seq += 1
        self.name = "%s-%d" % (owner_tag(), Cgroup.seq)
        for c in V1_CONTROLLERS:
            os.makedirs(self.dir(c), exist_ok=True)
        # a task may join a cpuset only once it has CPUs and memory nodes
        self.write("cpuset", "cpuset.mems", read(V1_ROOT + "/cpuset/cpuset.mems"))
        self.write("cpuset", "cpuset.cpus", cpus or read(V1_ROOT + "/cpuset/cpuset.cpus"))
        if memory:
            self.write("memory", "memory.limit_in_bytes", str(memory))
        if quota:
            self.write("cpu", "cpu.cfs_period_us", str(period))
            self.write("cpu", "cpu.cfs_quota_us", str(quota))

    def dir(self, controller):
        return os.path.join(V1_ROOT, controller, self.name)

    def write(self, controller, name, value):
        with open(os.path.join(self.dir(controller), name), "w") as f:
            f.write(value)

    def join_command(self):
        """A shell prefix that moves the shell into this cgroup, then execs."""
        return " ".join("echo $$ > %s/cgroup.procs;" % self.dir(c) for c in V1_CONTROLLERS)

    def close(self):
        for c in V1_CONTROLLERS:
            d = self.dir(c)
            for _ in range(100):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    # a task still leaving: kill what is left, wait for its exit
                    for pid in read(os.path.join(d, "cgroup.procs")).split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    time.sleep(0.05)
            assert not os.path.exists(d), "cgroup %s left behind" % d


def read(path):
    with open(path) as f:
        return f.read().strip()


class Reader:
    """A python process in cgroup (or after prefix, e.g. unshare) that reads on request."""

    def __init__(self, cgroup=None, prefix=(), user=None):
        if user is not None:  # joins as root, then becomes user
            prefix = ("setpriv", "--reuid=%d" % user, "--regid=%d" % user,
                      "--clear-groups") + tuple(prefix)
        script = (cgroup.join_command() if cgroup else "") + \
            " exec %s /usr/bin/python3 -c '%s'" % (" ".join(prefix), READER.replace("'", "'\\''"))
        self.proc = subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, start_new_session=True)
        self.pid_inside = json.loads(self.proc.stdout.readline())["pid"]

    def read(self, *paths):
        answers = self.ask(paths)
        for path, a in zip(paths, answers):
            assert "text" in a, "%s: errno %s" % (path, a.get("errno"))
        return [a["text"] for a in answers]

    def errnos(self, *paths):
        return [a.get("errno", 0) for a in self.ask(paths)]

    def ask(self, paths):
        """The reader's answers for paths. A read that never ends fails the test with
        where the reader waits, rather than hang the suite (a daemon that never answers:
        a FUSE request has no timeout)."""
        self.proc.stdin.write(json.dumps([str(p) for p in paths]) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], ANSWER_WAIT_S)
        assert ready, "the reader has not answered %s in %d s; it waits in %s" % (
            paths, ANSWER_WAIT_S, waits_in_session(self.proc.pid))
        return json.loads(self.proc.stdout.readline())

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


class Lxcfs:
    """Debian's lxcfs in the foreground on a scratch mount point; its files in proc/."""

    def __init__(self, *options):
        self.path = tempfile.mkdtemp(prefix="procfast-test-lxcfs-")
        self.pidfile = self.path + ".pid"
        self.log = tempfile.NamedTemporaryFile(prefix="procfast-test-lxcfs-log-", delete=False)
        self.proc = subprocess.Popen([LXCFS, "-f", "-p", self.pidfile] + list(options) +
                                     [self.path], stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.time() + 20
        while not (mounted(self.path) and os.path.exists(self.p("meminfo"))):
            assert self.proc.poll() is None, "lxcfs exited: " + open(self.log.name).read()
            assert time.time() < deadline, "lxcfs did not mount"
            time.sleep(0.05)

    def p(self, name):
        return os.path.join(self.path, "proc", name)

    def close(self):
        if mounted(self.path):
            subprocess.run(["fusermount3", "-u", self.path], check=False)
        if mounted(self.path):
            subprocess.run(["umount", "-l", self.path], check=False)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for path in (self.pidfile, self.log.name):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        os.rmdir(self.path)


# --- what the files say ---------------------------------------------------------------

def meminfo(text):
    return {k: int(v.split()[0]) for k, v in re.findall(r"^([^:]+):\s+(.*)$", text, re.M)}


def stat_cpus(text):
    """{name: [numbers]} of the cpu lines, in order."""
    return {l.split()[0]: [int(x) for x in l.split()[1:]] for l in text.splitlines()
            if l.startswith("cpu")}


def stat_rest(text):
    return {l.split()[0]: l.split()[1:] for l in text.splitlines() if not l.startswith("cpu")}


def cpuinfo_blocks(text):
    """The processor blocks, without the lines a CPU's clock moves (cpu MHz)."""
    return [[l for l in b.splitlines() if not l.startswith("cpu MHz")]
            for b in text.strip().split("\n\n") if b.strip()]


def sandwiched(before, middle, after, other_spread=0):
    """middle was read between before and after (of the other daemon): it lies in
    their range, widened by how much either side moved between its own reads."""
    lo, hi = min(before, after), max(before, after)
    spread = max(hi - lo, other_spread)
    return lo - spread <= middle <= hi + spread


def compare_fields(pf1, lx1, pf2, lx2, keys):
    """The fields keys of the four parsed reads: every lxcfs value between procfast's
    reads around it and the other way round. The names of those that do not agree."""
    bad = []
    for k in keys:
        a1, b1, a2, b2 = pf1[k], lx1[k], pf2[k], lx2[k]
        if not (sandwiched(a1, b1, a2, abs(b2 - b1)) and sandwiched(b1, a2, b2, abs(a2 - a1))):
            bad.append((k, a1, b1, a2, b2))
    return bad


def agree(reader, pf_path, lx_path, parse, keys_of, tries=20):
    """Reads both in turn until every field agrees (a busy machine can move a field
    between the reads more than they show); the last disagreement fails."""
    bad = None
    for _ in range(tries):
        texts = reader.read(pf_path, lx_path, pf_path, lx_path)
        parsed = [parse(t) for t in texts]
        keys = keys_of(*parsed)
        bad = compare_fields(*parsed, keys)
        if not bad:
            return parsed
        time.sleep(0.2)
    raise AssertionError("fields that differ (procfast, lxcfs, procfast, lxcfs): %s" % bad)
