"""-o resources=caller against the kernel's own cgroup v2 files, compared with Debian's
LXCFS 5.0.3 reading for the same cgroup at the same moment. Runs in the guest only
(tests/guest/run: Debian 12's kernel, cgroup v2 at /sys/fs/cgroup, a scratch disk at
/dev/vda):

    tests/guest/run -- /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/guest/test_cgroup_v2.py

A cgroup with memory.max (on its parent: the smallest up the tree binds), memory.high,
memory.swap.max, cpu.max, cpuset.cpus and io.max on /dev/vda, which did direct I/O on
/dev/vda (so io.stat has figures); swap on the first 32 MiB of /dev/vda. A reader process
in it reads procfast, LXCFS, procfast, LXCFS in turn (tests/lib/resources.py); each field is
checked against LXCFS and against the kernel's files read around it.

Where procfast and LXCFS 5.0.3 differ on v2, procfast's documented answer is asserted and
LXCFS's named (README "What differs from LXCFS"):
- swap: LXCFS looks for memory.swap.max in the root cgroup, which has none, decides the
  kernel has no swap accounting and shows SwapTotal/SwapFree 0 and no swap in `swaps`;
  procfast shows memory.swap.max (never above the host's swap) and memory.swap.current;
- Mapped: LXCFS matches memory.stat's keys by prefix, so "file_mapped" lines are taken
  for "file" and never read (0); procfast gives file_mapped (Dirty and Writeback the same
  way, 0 here in both as nothing is dirty);
- uptime's idle: LXCFS reads cpuacct.usage, which v2 has not, and shows idle = uptime;
  procfast takes cpu.stat's usage_usec of the init's cgroup off;
- diskstats: LXCFS gives the host's file on v2; procfast the cgroup's io.stat.
"""
import os
import subprocess
import sys
import time

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)

CGROOT = "/sys/fs/cgroup"
DISK = "/dev/vda"


def in_the_guest():
    """tests/guest/run's guest: its job directory, cgroup v2, and /dev/vda its blank
    64 MiB scratch disk (mkswap writes it: never a machine's own disk), unmounted."""
    try:
        with open("/sys/block/vda/size") as f:
            scratch = int(f.read()) * 512 == 64 << 20
        with open("/proc/mounts") as f:
            unmounted = not any(l.startswith(DISK) for l in f)
    except OSError:
        return False
    return (os.path.isdir("/run/procfast-guest") and scratch and unmounted and
            os.path.exists(CGROOT + "/cgroup.subtree_control"))


if not in_the_guest():
    pytest.skip("runs in tests/guest/run's guest only (cgroup v2, a scratch %s)" % DISK,
                allow_module_level=True)

from lib.mount import Mount  # noqa: E402
from lib.resources import (Lxcfs, Reader, agree, cpuinfo_blocks, meminfo, owner_tag,  # noqa: E402
                       read, sandwiched, stat_cpus, stat_rest)

MIB = 1 << 20
PARENT_MAX = 256 * MIB   # memory.max of the parent: binds the child (its own is "max")
HIGH = 192 * MIB         # memory.high: neither LXCFS nor procfast shows it
SWAP_MAX = 16 * MIB
SWAP_AREA_KB = 32 * 1024  # mkswap's size: the first 32 MiB of the disk
CPU_MAX = "50000 100000"  # half a CPU: one shown
CPUS = "1"
IO_BPS = 64 * MIB
# The fields both make from the cgroup the same way on v2 (LXCFS proc_meminfo_read).
SAME = ["MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached", "Active",
        "Inactive", "Active(anon)", "Inactive(anon)", "Active(file)", "Inactive(file)",
        "Unevictable", "Dirty", "Writeback", "AnonPages", "Shmem", "Slab", "SReclaimable",
        "SUnreclaim", "AnonHugePages", "ShmemHugePages", "ShmemPmdMapped"]


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


def dev_of(path):
    return read("/sys/block/%s/dev" % os.path.basename(path))


class Box:
    """parent/box in the v2 hierarchy: the limits, and the tasks in box."""

    def __init__(self):
        self.parent = os.path.join(CGROOT, owner_tag() + "-v2")
        self.leaf = os.path.join(self.parent, "box")
        os.mkdir(self.parent)
        try:
            write(self.f("cgroup.subtree_control", self.parent), "+cpuset +cpu +io +memory")
            os.mkdir(self.leaf)
            write(self.f("memory.max", self.parent), str(PARENT_MAX))
            self.set_limits()
        except BaseException:
            self.close()
            raise

    def set_limits(self):
        write(self.f("memory.max"), "max")
        write(self.f("memory.high"), str(HIGH))
        write(self.f("memory.swap.max"), str(SWAP_MAX))
        write(self.f("cpuset.cpus"), CPUS)
        write(self.f("cpu.max"), CPU_MAX)
        write(self.f("io.max"), "%s rbps=%d wbps=%d" % (dev_of(DISK), IO_BPS, IO_BPS))

    def f(self, name, d=None):
        return os.path.join(d or self.leaf, name)

    def read(self, name, d=None):
        return read(self.f(name, d))

    def join_command(self):
        return "echo $$ > %s;" % self.f("cgroup.procs")

    def run(self, command):
        subprocess.run(["sh", "-c", self.join_command() + " exec " + command], check=True)

    def close(self):
        for d in (self.leaf, self.parent):
            if os.path.exists(d + "/cgroup.kill"):
                write(d + "/cgroup.kill", "1")
            for _ in range(200):  # killed tasks leave at once, but not synchronously
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
            assert not os.path.exists(d), "cgroup %s left behind" % d


def swaps_in_use():
    with open("/proc/swaps") as f:
        return f.read().splitlines()[1:]


@pytest.fixture(scope="module")
def box():
    b = Box()
    swapped = False
    try:
        # I/O first: the kernel refuses writes to an active swap device (ETXTBSY).
        # Past the swap area; direct, so that it is the cgroup's and counted now.
        b.run("dd if=/dev/zero of=%s bs=64k count=16 seek=%d oflag=direct status=none"
              % (DISK, 48 * 16))
        b.run("dd if=%s of=/dev/null bs=64k count=8 skip=%d iflag=direct status=none"
              % (DISK, 48 * 16))
        if not swaps_in_use():
            subprocess.run(["mkswap", DISK, str(SWAP_AREA_KB)], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run(["swapon", DISK], check=True)
            swapped = True
        yield b
    finally:
        try:
            if swapped:
                subprocess.run(["swapoff", DISK], check=True)
        finally:
            b.close()


MAPPER = r"""
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 4 << 20)
m = mmap.mmap(fd, 4 << 20)
m[:] = b"x" * (4 << 20)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def mapper(box):
    """A task of the box with 4 MiB of tmpfs mapped: Shmem and Mapped the box's."""
    path = "/dev/shm/%s-mapped" % owner_tag()
    p = subprocess.Popen(["sh", "-c", box.join_command() + ' exec "$@"', "sh",
                          "/usr/bin/python3", "-c", MAPPER, path],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "ready\n"
        yield p
    finally:
        p.kill()
        p.wait()
        if os.path.exists(path):
            os.unlink(path)


@pytest.fixture(scope="module")
def pf(box):
    m = Mount(["resources=caller"])
    yield m
    m.close()


@pytest.fixture(scope="module")
def lx(box):
    # --enable-cfs -l: the CPU view and load averages, which procfast always gives
    m = Lxcfs("--enable-cfs", "-l")
    yield m
    m.close()


@pytest.fixture(scope="module")
def reader(box, mapper):
    r = Reader(box)
    yield r
    r.close()


def host(name):
    with open("/proc/" + name) as f:
        return f.read()


def memory_stat(box):
    return {k: int(v) for k, v in (l.split() for l in box.read("memory.stat").splitlines())}


def test_meminfo(box, pf, lx, reader):
    parsed = agree(reader, pf.p("meminfo"), lx.p("meminfo"), meminfo, lambda *p: SAME)
    ours, theirs = parsed[0], parsed[1]
    assert ours["Shmem"] >= 4096 and ours["Mapped"] >= 4096 and theirs["Mapped"] == 0
    assert list(ours) == list(meminfo(host("meminfo")))  # the rest: the host's lines
    h = meminfo(host("meminfo"))
    # the smallest memory.max up the tree, not memory.high
    assert ours["MemTotal"] == min(PARENT_MAX // 1024, h["MemTotal"]) == 262144
    # swap alone: memory.swap.max (below the host's 32 MiB) and memory.swap.current
    swap_used = int(box.read("memory.swap.current")) // 1024
    assert ours["SwapTotal"] == min(SWAP_MAX // 1024, h["SwapTotal"]) == 16384
    assert ours["SwapFree"] == 16384 - swap_used
    assert theirs["SwapTotal"] == theirs["SwapFree"] == 0  # LXCFS: "no swap accounting"


def test_meminfo_is_memory_stat(box, pf, reader):
    """Every field procfast makes, against memory.current and memory.stat read just
    before and after (the reader's own pages may move in between)."""
    keys = {"Cached": "file", "Shmem": "shmem", "Mapped": "file_mapped", "Dirty": "file_dirty",
            "Writeback": "file_writeback", "AnonHugePages": "anon_thp",
            "Active(anon)": "active_anon", "Inactive(anon)": "inactive_anon",
            "Active(file)": "active_file", "Inactive(file)": "inactive_file",
            "Unevictable": "unevictable"}
    for _ in range(20):
        s1, c1 = memory_stat(box), int(box.read("memory.current"))
        ours = meminfo(reader.read(pf.p("meminfo"))[0])
        s2, c2 = memory_stat(box), int(box.read("memory.current"))
        want = {k: (s1[v] // 1024, s2[v] // 1024) for k, v in keys.items()}
        want["MemFree"] = (262144 - c1 // 1024, 262144 - c2 // 1024)
        bad = {k: (lo, ours[k], hi) for k, (lo, hi) in want.items()
               if not sandwiched(lo, ours[k], hi)}
        if not bad:
            break
    assert not bad, bad
    assert ours["Buffers"] == ours["SwapCached"] == ours["Slab"] == 0
    # the mapper's 4 MiB: LXCFS shows Mapped 0 (see the docstring)
    assert ours["Mapped"] >= 4096 and ours["Shmem"] >= 4096


def test_cpuinfo(pf, lx, reader):
    """cpuset.cpus "1", cpu.max half a CPU: the host's CPU 1, as CPU 0, in both."""
    ours, theirs = reader.read(pf.p("cpuinfo"), lx.p("cpuinfo"))
    h = cpuinfo_blocks(host("cpuinfo"))
    assert cpuinfo_blocks(ours) == cpuinfo_blocks(theirs) == [["processor\t: 0"] + h[1][1:]]


def test_stat(pf, lx, reader):
    """No per-CPU time on v2: the host's line of CPU 1 stands, as cpu0, in both."""
    for _ in range(20):
        before = stat_cpus(host("stat"))["cpu1"]
        ours, theirs = (stat_cpus(t) for t in reader.read(pf.p("stat"), lx.p("stat")))
        after = stat_cpus(host("stat"))["cpu1"]
        ok = all(sandwiched(b, o, a) and sandwiched(b, t, a)
                 for b, o, t, a in zip(before, ours["cpu0"], theirs["cpu0"], after))
        if ok:
            break
    assert list(ours) == list(theirs) == ["cpu", "cpu0"]
    assert ok, (before, ours, theirs, after)
    assert ours["cpu"] == ours["cpu0"]
    texts = reader.read(pf.p("stat"), lx.p("stat"))
    assert set(stat_rest(texts[0])) == set(stat_rest(texts[1]))
    assert stat_rest(texts[0])["btime"] == stat_rest(texts[1])["btime"]


def usage_s(cgroup_dir):
    return int(read(cgroup_dir + "/cpu.stat").split("usage_usec")[1].split()[0]) / 1e6


def idle_as_documented(up, idle, b1, b2):
    """fs/resources/uptime.c: the age less the CPU time used, or the age itself where the
    cgroup used more CPU time than that (two CPUs busy: the guest under load), as
    LXCFS does; b1 and b2 bound the CPU time read around the read."""
    less = up - b2 - 0.01 <= idle <= up - b1 + 0.01
    return less if up >= b2 else (less or abs(idle - up) <= 0.01) if up >= b1 \
        else abs(idle - up) <= 0.01


def test_uptime(pf, lx, reader):
    """The age of the init (the reader shares the daemon's pid namespace: pid 1), the
    same in both; procfast's idle: that less the CPU time of pid 1's cgroup (the root's
    cpu.stat), LXCFS's: the age itself (no cpuacct.usage on v2)."""
    agree(reader, pf.p("uptime"), lx.p("uptime"),
          lambda t: {0: round(float(t.split()[0]) * 100)}, lambda *p: [0])
    for _ in range(20):
        b1 = usage_s(CGROOT)
        up, idle, lx_up, lx_idle = (float(x) for t in reader.read(pf.p("uptime"),
                                                                  lx.p("uptime"))
                                    for x in t.split())
        b2 = usage_s(CGROOT)
        if idle_as_documented(up, idle, b1, b2):
            break
    assert idle_as_documented(up, idle, b1, b2), (up, idle, b1, b2)
    assert lx_idle == lx_up


def test_loadavg(box, pf, lx, reader):
    """Both count the cgroup's tasks and name its highest pid as the last;
    LXCFS shows 0/1 until its first sample (5 s), procfast samples at the first read."""
    reader.read(pf.p("loadavg"), lx.p("loadavg"))
    tids = [int(t) for t in box.read("cgroup.threads").split()]
    want = "/%d" % len(tids)
    deadline = time.time() + 60
    while True:
        ours, theirs = (t.split() for t in reader.read(pf.p("loadavg"), lx.p("loadavg")))
        # LXCFS's first answer is a placeholder: 0/1 and the caller's pid
        if theirs[3].endswith(want) and theirs[4] == ours[4] == str(max(tids)):
            break
        assert time.time() < deadline, (ours, theirs)
        time.sleep(0.2)
    assert ours[3].endswith(want) and theirs[3].endswith(want), (ours, theirs)


def test_swaps(box, pf, lx, reader):
    ours, theirs = reader.read(pf.p("swaps"), lx.p("swaps"))
    used = int(box.read("memory.swap.current")) // 1024
    assert ours.splitlines()[1].split() == ["none", "virtual", "16384", str(used), "0"]
    assert len(ours.splitlines()) == 2
    assert ours.splitlines()[0] == theirs.splitlines()[0]
    assert theirs.splitlines()[1:] == []  # LXCFS: "no swap accounting"


def test_diskstats(box, pf, lx, reader):
    """vda with io.stat's counts (16 writes, 8 reads of 64 KiB); LXCFS: the host's file."""
    io1 = box.read("io.stat")
    ours, theirs = reader.read(pf.p("diskstats"), lx.p("diskstats"))
    assert box.read("io.stat") == io1
    major, minor = dev_of(DISK).split(":")
    st = dict(kv.split("=") for kv in
              next(l for l in io1.splitlines() if l.startswith(dev_of(DISK) + " ")).split()[1:])
    assert int(st["wios"]) == 16 and int(st["rios"]) == 8
    assert [l.split() for l in ours.splitlines()] == [[
        major, minor, "vda", st["rios"], "0", str(int(st["rbytes"]) // 512), "0",
        st["wios"], "0", str(int(st["wbytes"]) // 512), "0", "0", "0", "0"]]
    assert [l.split()[:3] for l in theirs.splitlines()] == \
        [l.split()[:3] for l in host("diskstats").splitlines()]


def test_changed_limits(box, pf, lx, reader):
    """Limits changed while both are mounted show in both at the next read."""
    def both(name):
        return reader.read(pf.p(name), lx.p(name))

    def cpus():
        return [len(cpuinfo_blocks(t)) for t in both("cpuinfo")]
    h = cpuinfo_blocks(host("cpuinfo"))
    try:
        write(box.f("memory.max"), str(128 * MIB))  # below the parent's 256 MiB
        assert [meminfo(t)["MemTotal"] for t in both("meminfo")] == [131072, 131072]
        write(box.f("memory.swap.max"), str(1 << 30))  # above the host's swap: the host's
        assert meminfo(both("meminfo")[0])["SwapTotal"] == meminfo(host("meminfo"))["SwapTotal"]
        write(box.f("cpuset.cpus"), "0-1")
        write(box.f("cpu.max"), "max 100000")
        assert cpus() == [2, 2]
        assert [list(stat_cpus(t)) for t in both("stat")] == [["cpu", "cpu0", "cpu1"]] * 2
        write(box.f("cpu.max"), "150000 100000")  # one and a half: two
        assert cpus() == [2, 2]
        write(box.f("cpu.max"), "100000 100000")
        assert cpus() == [1, 1]
        write(box.f("cpu.max"), "max 100000")
        write(box.f("cpuset.cpus"), "0")
        ours, theirs = both("cpuinfo")
        assert cpuinfo_blocks(ours) == cpuinfo_blocks(theirs) == [h[0]]
    finally:
        box.set_limits()
    assert meminfo(both("meminfo")[0])["MemTotal"] == 262144
    assert cpus() == [1, 1]


def test_caller_in_its_own_pid_namespace(box, pf, lx):
    """A reader that is pid 1 of a pid namespace of its own (a container's init): its
    cgroup, and its age as the uptime, in both."""
    r = Reader(box, prefix=("unshare", "--pid", "--fork"))
    try:
        assert r.pid_inside == 1
        ours, theirs = (meminfo(t) for t in r.read(pf.p("meminfo"), lx.p("meminfo")))
        assert ours["MemTotal"] == theirs["MemTotal"] == 262144
        agree(r, pf.p("uptime"), lx.p("uptime"),
              lambda t: {0: round(float(t.split()[0]) * 100)}, lambda *p: [0])
        up = float(r.read(pf.p("uptime"))[0].split()[0])
        assert up < float(host("uptime").split()[0]) - 1, "the host's uptime, not the init's"
    finally:
        r.close()


def test_a_view_takes_the_resources_of_its_namespaces_init(box, lx):
    """-o pidns=...,resources=init (a container's own /proc, made by procfast from outside
    it): every reader, here one in no limited cgroup, gets the cgroup of the namespace's
    init, as LXCFS gives that init. On 6.1 the view translates pids without the 6.8
    ioctls (cache/index/pid_translator.c), and the init is found through it."""
    r = Reader(box, prefix=("unshare", "--pid", "--fork"))
    m = None
    try:
        with open("/proc/%d/task/%d/children" % (r.proc.pid, r.proc.pid)) as f:
            init = int(f.read().split()[0])
        m = Mount(["pidns=/proc/%d/ns/pid" % init, "resources=init"])
        ours = meminfo(read(m.p("meminfo")))
        theirs = meminfo(r.read(lx.p("meminfo"))[0])
        assert ours["MemTotal"] == theirs["MemTotal"] == PARENT_MAX // 1024
        assert meminfo(host("meminfo"))["MemTotal"] > PARENT_MAX // 1024  # else no test
        up = float(read(m.p("uptime")).split()[0])
        assert up < float(host("uptime").split()[0]) - 1, "the host's uptime, not the init's"
        assert abs(up - float(r.read(lx.p("uptime"))[0].split()[0])) < 5
    finally:
        if m:
            m.close()
        r.close()
