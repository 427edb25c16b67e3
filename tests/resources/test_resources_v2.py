"""-o resources= on cgroup v2: this host binds every controller to v1, so the daemon is
given a scratch tree shaped like a v2 hierarchy (-o cgroup_root=DIR: cgroup.controllers
at its root, memory.max, memory.current, memory.stat, memory.swap.*, cpuset.cpus.effective,
cpu.max, cpu.stat, io.stat and cgroup.procs below). The reader is placed in a cgroup of
the host's real, empty v2 hierarchy, so that its /proc/PID/cgroup names the path; the
scratch tree holds the numbers at that path. Every expectation is made here from the
numbers written into the tree by LXCFS's rules, and from the host's own files.

The kernel's own v2 files, against LXCFS, are tested in the guest
(tests/guest/test_cgroup_v2.py); this file covers the shapes the guest does not make:
non-zero Dirty, Writeback, AnonHugePages and Unevictable, swap in use
(memory.swap.current > 0), and a cgroup without the cpuset controller.
"""
import os
import shutil
import tempfile

import pytest

from lib.mount import Mount
from lib.resources import Reader, cpuinfo_blocks, meminfo, owner_tag, sandwiched, stat_cpus

UNIFIED = "/sys/fs/cgroup/unified"
MIB = 1 << 20

MEMORY_STAT = {"anon": 30 * MIB, "file": 20 * MIB, "shmem": 1 * MIB, "file_mapped": 3 * MIB,
               "file_dirty": 4096, "file_writeback": 8192, "anon_thp": 2 * MIB,
               "inactive_anon": 10 * MIB, "active_anon": 21 * MIB, "inactive_file": 12 * MIB,
               "active_file": 8 * MIB, "unevictable": 4096}
PARENT_MAX = 100 * MIB     # binds: the child's own is "max"
CURRENT = 52 * MIB
IO = {"rbytes": 1048576, "wbytes": 2097152, "rios": 10, "wios": 20, "dbytes": 0, "dios": 0}


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def root_disk():
    """major:minor of a disk diskstats lists."""
    with open("/proc/diskstats") as f:
        fields = f.readline().split()
    return int(fields[0]), int(fields[1]), fields[2]


class Tree:
    """The real v2 cgroup the reader joins, and the scratch tree with its numbers."""

    def __init__(self):
        self.name = owner_tag() + "-v2"
        self.real = os.path.join(UNIFIED, self.name, "inner")
        os.makedirs(self.real)
        self.root = tempfile.mkdtemp(prefix="procfast-test-cgroup2-")
        self.parent = os.path.join(self.root, self.name)
        self.leaf = os.path.join(self.parent, "inner")
        write(os.path.join(self.root, "cgroup.controllers"), "cpuset cpu io memory pids\n")
        write(os.path.join(self.root, "cpu.stat"), "usage_usec 1500000\nuser_usec 1000000\n"
              "system_usec 500000\n")
        write(os.path.join(self.parent, "memory.max"), "%d\n" % PARENT_MAX)
        write(os.path.join(self.leaf, "memory.max"), "max\n")
        write(os.path.join(self.leaf, "memory.current"), "%d\n" % CURRENT)
        write(os.path.join(self.leaf, "memory.stat"),
              "".join("%s %d\n" % kv for kv in MEMORY_STAT.items()))
        write(os.path.join(self.parent, "memory.swap.max"), "max\n")
        write(os.path.join(self.leaf, "memory.swap.max"), "%d\n" % (64 * MIB))
        write(os.path.join(self.leaf, "memory.swap.current"), "%d\n" % (8 * MIB))
        write(os.path.join(self.leaf, "cpuset.cpus.effective"), "1\n")
        write(os.path.join(self.leaf, "cpu.max"), "150000 100000\n")
        write(os.path.join(self.leaf, "cpu.stat"), "usage_usec 2000000\n")
        major, minor, _ = root_disk()
        write(os.path.join(self.leaf, "io.stat"), "%d:%d %s\n" % (
            major, minor, " ".join("%s=%d" % kv for kv in IO.items())))

    def join_command(self):
        return "echo $$ > %s/cgroup.procs;" % self.real

    def set_procs(self, pids):
        write(os.path.join(self.leaf, "cgroup.procs"), "".join("%d\n" % p for p in pids))

    def close(self):
        shutil.rmtree(self.root)
        os.rmdir(self.real)
        os.rmdir(os.path.dirname(self.real))


@pytest.fixture(scope="module")
def tree():
    t = Tree()
    yield t
    t.close()


@pytest.fixture(scope="module")
def mount(tree):
    m = Mount(["resources=caller", "cgroup_root=" + tree.root])
    yield m
    m.close()


@pytest.fixture
def reader(tree):
    r = Reader(tree)
    tree.set_procs([r.pid_inside])
    yield r
    r.close()


def host(name):
    with open("/proc/" + name) as f:
        return f.read()


def test_meminfo(mount, reader):
    ours = meminfo(reader.read(mount.p("meminfo"))[0])
    h = meminfo(host("meminfo"))
    total = min(PARENT_MAX // 1024, h["MemTotal"])
    s = {k: v // 1024 for k, v in MEMORY_STAT.items()}
    expected = {
        "MemTotal": total, "MemFree": total - CURRENT // 1024,
        "MemAvailable": total - CURRENT // 1024 + s["file"], "Cached": s["file"],
        "Buffers": 0, "SwapCached": 0, "Slab": 0, "SReclaimable": 0, "SUnreclaim": 0,
        "Active": s["active_anon"] + s["active_file"],
        "Inactive": s["inactive_anon"] + s["inactive_file"],
        "Active(anon)": s["active_anon"], "Inactive(anon)": s["inactive_anon"],
        "Active(file)": s["active_file"], "Inactive(file)": s["inactive_file"],
        "Unevictable": s["unevictable"], "Dirty": s["file_dirty"],
        "Writeback": s["file_writeback"], "Mapped": s["file_mapped"], "Shmem": s["shmem"],
        "AnonPages": (MEMORY_STAT["active_anon"] + MEMORY_STAT["inactive_anon"] -
                      MEMORY_STAT["shmem"]) // 1024,
        "AnonHugePages": s["anon_thp"],
        # swap.max alone on v2, never more than the host has
        "SwapTotal": min(64 * 1024, h["SwapTotal"]),
        "SwapFree": min(64 * 1024, h["SwapTotal"]) - min(8 * 1024, h["SwapTotal"]),
    }
    assert {k: ours[k] for k in expected} == expected
    assert set(ours) == set(h)


def test_cpuinfo(mount, reader):
    """cpuset.cpus.effective "1", a quota of 1.5 CPUs: the host's CPU 1, as CPU 0."""
    ours = cpuinfo_blocks(reader.read(mount.p("cpuinfo"))[0])
    theirs = cpuinfo_blocks(host("cpuinfo"))
    if len(theirs) < 2:
        pytest.fail("this test needs two CPUs")
    assert ours == [["processor\t: 0"] + theirs[1][1:]]


def test_cpuinfo_without_cpuset(mount, reader, tree):
    """No cpuset controller (v2 enables it per subtree): every CPU, cut by the quota of
    1.5 CPUs to two."""
    path = os.path.join(tree.leaf, "cpuset.cpus.effective")
    os.rename(path, path + ".away")
    try:
        ours = cpuinfo_blocks(reader.read(mount.p("cpuinfo"))[0])
    finally:
        os.rename(path + ".away", path)
    theirs = cpuinfo_blocks(host("cpuinfo"))
    assert ours == [["processor\t: %d" % i] + b[1:] for i, b in enumerate(theirs[:2])]


def test_stat(mount, reader):
    """No per-CPU time on v2: the host's line of CPU 1 stands, as cpu0 (LXCFS's rule)."""
    for _ in range(20):
        before = stat_cpus(host("stat"))["cpu1"]
        ours = stat_cpus(reader.read(mount.p("stat"))[0])
        after = stat_cpus(host("stat"))["cpu1"]
        if all(sandwiched(b, o, a) for b, o, a in zip(before, ours["cpu0"], after)):
            break
    assert list(ours) == ["cpu", "cpu0"]
    assert all(sandwiched(b, o, a) for b, o, a in zip(before, ours["cpu0"], after))
    assert ours["cpu"] == ours["cpu0"]


def test_uptime(mount, reader):
    """The age of pid 1 (the reader shares the daemon's pid namespace: LXCFS's rule),
    less the CPU time of pid 1's cgroup (usage_usec at the tree's root) as idle."""
    with open("/proc/1/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")

    def age():
        return time_boot() - start
    a1 = age()
    up, idle = (float(x) for x in reader.read(mount.p("uptime"))[0].split())
    a2 = age()
    assert a1 - 0.01 <= up <= a2 + 0.01
    assert abs((up - idle) - 1.5) <= 0.011


def time_boot():
    import time
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def test_loadavg(mount, reader):
    """The tree's cgroup.procs names the reader: one task, the last pid its own."""
    fields = reader.read(mount.p("loadavg"))[0].split()
    assert fields[3].split("/")[1] == "1" and fields[4] == str(reader.pid_inside)


def test_diskstats(mount, reader):
    major, minor, name = root_disk()
    ours = [l.split() for l in reader.read(mount.p("diskstats"))[0].splitlines()]
    assert ours == [[str(major), str(minor), name, str(IO["rios"]), "0",
                     str(IO["rbytes"] // 512), "0", str(IO["wios"]), "0",
                     str(IO["wbytes"] // 512), "0", "0", "0", "0"]]


def test_swaps(mount, reader):
    h = meminfo(host("meminfo"))["SwapTotal"]
    ours = reader.read(mount.p("swaps"))[0].splitlines()
    assert ours[0].split() == ["Filename", "Type", "Size", "Used", "Priority"]
    assert ours[1:] == ([] if not h else [ours[1]])
