"""Containers see their own resources, in real podman + runc containers made with
--memory 256m --cpuset-cpus 0 (tests/lib/podman.py):

(a) LXCFS-style: a host mount with -o resources=caller, its seven files bound over the
    container's /proc/meminfo, cpuinfo, stat, uptime, loadavg, swaps and diskstats (runc
    allows binds there for LXCFS);
(b) a view: the OCI hook's pidns= view (resources=init, a view's default) in the
    workload's second root.

procps (the host's /usr bound in) and BusyBox tools in the container must show the
container's numbers: the limit the test set, one CPU, the container's age.
"""
import re

import pytest

from lib.build import BIN
from lib.mount import Mount
from lib.podman import Session

FILES = ("meminfo", "cpuinfo", "stat", "uptime", "loadavg", "swaps", "diskstats")
LIMITS = ["--memory", "256m", "--cpuset-cpus", "0"]
LIMIT_KB = 256 * 1024


@pytest.fixture(scope="module")
def session():
    s = Session(BIN)
    yield s
    s.close()


@pytest.fixture(scope="module")
def host_mount():
    m = Mount(["resources=caller"])
    yield m
    m.close()


@pytest.fixture(scope="module")
def bound(session, host_mount):
    """(a): the files bound LXCFS-style."""
    binds = []
    for f in FILES:
        binds += ["-v", "%s:/proc/%s:ro" % (host_mount.p(f), f)]
    c = session.run(LIMITS + binds + ["-v", "/usr:/usr:ro"], ["/bb/sleep", "100000"])
    yield c.exec
    c.remove()


@pytest.fixture(scope="module")
def view(session):
    """(b): the hook's view of the container's pid namespace, in the second root."""
    c = session.run_with_view(["/bb/sleep", "100000"], options=LIMITS)
    yield c.in_view
    c.remove()


@pytest.fixture(params=["bound", "view"])
def run(request):
    run = request.getfixturevalue(request.param)
    return lambda *cmd: run(*cmd).stdout


def test_meminfo_and_free(run):
    meminfo = dict(re.findall(r"^(\w+):\s+(\d+)", run("/bb/cat", "/proc/meminfo"), re.M))
    assert int(meminfo["MemTotal"]) == LIMIT_KB
    mem = run("/usr/bin/free", "-m").splitlines()[1].split()
    assert mem[0] == "Mem:" and int(mem[1]) == LIMIT_KB // 1024



def test_busybox_free(run):
    """BusyBox free takes total, free and shared from sysinfo(2), a system call no file
    can change (through LXCFS the same), and buff/cache and available from
    /proc/meminfo: those are the container's."""
    def available():
        return int(re.search(r"^MemAvailable:\s+(\d+)", run("/bb/cat", "/proc/meminfo"),
                             re.M).group(1))
    for _ in range(20):
        before = available()
        mem = run("/bb/free").splitlines()[1].split()
        after = available()
        if min(before, after) <= int(mem[6]) <= max(before, after):
            break
    assert mem[0] == "Mem:" and min(before, after) <= int(mem[6]) <= max(before, after)
    assert int(mem[6]) <= LIMIT_KB
    host_total = int(re.search(r"^MemTotal:\s+(\d+)", open("/proc/meminfo").read(),
                               re.M).group(1))
    assert int(mem[1]) == host_total  # sysinfo(2): the host's, as documented


def test_one_cpu(run):
    assert run("/bb/grep", "-c", "^processor", "/proc/cpuinfo").strip() == "1"
    stat = run("/bb/cat", "/proc/stat")
    assert [l.split()[0] for l in stat.splitlines() if l.startswith("cpu")] == ["cpu", "cpu0"]


def test_top_header(run):
    """top's header: the container's memory, its load and uptime, its CPU line."""
    head = run("/usr/bin/top", "-bn1").splitlines()[:5]
    assert re.search(r"MiB Mem :\s+256\.0 total", "\n".join(head)), head
    loadavg = run("/bb/cat", "/proc/loadavg").split()
    # the load averages top prints are those of the file, read a moment apart
    shown = re.search(r"load average: ([\d.]+), ([\d.]+), ([\d.]+)", head[0]).groups()
    assert all(abs(float(a) - float(b)) <= 0.2 for a, b in zip(shown, loadavg[:3])), (head, loadavg)
    assert re.search(r"up\s+(\d+ min|\d+:\d+)", head[0]) and "day" not in head[0], head


def test_uptime(run):
    """The container's age: it started a moment ago (the host has been up far longer)."""
    up = float(run("/bb/cat", "/proc/uptime").split()[0])
    host = float(open("/proc/uptime").read().split()[0])
    assert 0 < up < host and up < 600
    assert re.search(r"up\s+(\d+ min|\d+:\d+)", run("/usr/bin/uptime"))
    assert re.search(r"up\s+(\d+ min|\d+:\d+)", run("/bb/uptime"))
