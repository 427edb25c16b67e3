"""-o resources=: meminfo, cpuinfo, stat, uptime, loadavg, swaps and diskstats made from a
cgroup's numbers, compared with Debian's lxcfs reading for the same cgroup at the same
moment (this host's cgroup v1 hierarchies; v2 in test_resources_v2.py).

lxcfs runs twice on scratch mount points: plainly, and with --enable-cfs -l (CPU view
and load averages), which procfast always gives. A reader process placed in a cgroup
made for the test reads both, in turn (tests/lib/resources.py).
"""
import os
import signal
import subprocess
import time

import pytest

from lib.build import BIN
from lib.mount import Mount
from lib.resources import (Cgroup, Lxcfs, Reader, agree, cpuinfo_blocks, meminfo, read,
                       stat_cpus, stat_rest)

MIB = 1 << 20
CASES = {
    "memory": dict(memory=256 * MIB),
    "cpuset": dict(cpus="0"),
    "quota": dict(quota=50000),          # half a CPU: shown as one
    "quota_partial": dict(quota=150000),  # one and a half: two
    "none": dict(),
}
# The fields LXCFS makes from the cgroup (src/proc_fuse.c proc_meminfo_read).
MEMINFO_KEYS = ["MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached",
                "Active", "Inactive", "Active(anon)", "Inactive(anon)", "Active(file)",
                "Inactive(file)", "Unevictable", "SwapTotal", "SwapFree", "Dirty", "Writeback",
                "AnonPages", "Mapped", "Shmem", "Slab", "SReclaimable", "SUnreclaim",
                "AnonHugePages", "ShmemHugePages", "ShmemPmdMapped"]


@pytest.fixture(scope="module")
def lx():
    m = Lxcfs()
    yield m
    m.close()


@pytest.fixture(scope="module")
def lx_cfs():
    m = Lxcfs("--enable-cfs", "-l")
    yield m
    m.close()


@pytest.fixture(scope="module")
def pf():
    # max_busy_per_uid: test_parallel_readers reads with six processes of one uid (root)
    # at once, more than a uid's share of a CPU's threads over io_uring (3 of 4,
    # fs/caller/fair.h), which refuses some of their requests with EINTR by design
    # (tests/transport/test_fairness.py): here one uid may use every thread.
    m = Mount(["resources=caller", "max_busy_per_uid=64"])
    yield m
    m.close()


@pytest.fixture(params=sorted(CASES))
def case(request):
    cg = Cgroup(**CASES[request.param])
    reader = Reader(cg)
    yield request.param, cg, reader
    reader.close()
    cg.close()


def host_meminfo():
    with open("/proc/meminfo") as f:
        return meminfo(f.read())


def test_meminfo(pf, lx, case):
    name, cg, reader = case
    parsed = agree(reader, pf.p("meminfo"), lx.p("meminfo"), meminfo,
                   lambda *p: [k for k in MEMINFO_KEYS if k in p[0]])
    assert set(parsed[0]) == set(parsed[1])
    limit = CASES[name].get("memory")
    host = host_meminfo()["MemTotal"]
    assert parsed[0]["MemTotal"] == (min(limit // 1024, host) if limit else host)


def test_cpuinfo(pf, lx_cfs, case):
    name, cg, reader = case
    ours, theirs = reader.read(pf.p("cpuinfo"), lx_cfs.p("cpuinfo"))
    assert cpuinfo_blocks(ours) == cpuinfo_blocks(theirs)
    cpus = os.sched_getaffinity(reader.pid_inside)
    quota = CASES[name].get("quota")
    assert len(cpuinfo_blocks(ours)) == min(len(cpus), -(-quota // 100000) if quota else 99)


def test_stat(pf, lx, lx_cfs, case):
    name, cg, reader = case
    if "quota" in name:
        # lxcfs's CPU view counts from its own first read of the cgroup (a history it
        # keeps); procfast's from the boot, as /proc: only the CPUs shown compare.
        ours, theirs = reader.read(pf.p("stat"), lx_cfs.p("stat"))
        assert list(stat_cpus(ours)) == list(stat_cpus(theirs))
        assert set(stat_rest(ours)) == set(stat_rest(theirs))
        return

    def fields(text):
        return {"%s.%d" % (cpu, i): v for cpu, vals in stat_cpus(text).items()
                for i, v in enumerate(vals)}
    parsed = agree(reader, pf.p("stat"), lx.p("stat"), fields, lambda *p: list(p[0]))
    assert set(parsed[0]) == set(parsed[1])
    ours, theirs = reader.read(pf.p("stat"), lx.p("stat"))
    assert stat_rest(ours)["btime"] == stat_rest(theirs)["btime"]
    assert set(stat_rest(ours)) == set(stat_rest(theirs))


def test_uptime(pf, lx, case):
    name, cg, reader = case
    agree(reader, pf.p("uptime"), lx.p("uptime"),
          lambda t: {i: round(float(x) * 100) for i, x in enumerate(t.split())},
          lambda *p: [0, 1])


def test_swaps(pf, lx, case):
    name, cg, reader = case
    ours, theirs = reader.read(pf.p("swaps"), lx.p("swaps"))
    assert ours.split() == theirs.split()


def test_diskstats(pf, lx):
    """A cgroup that wrote to the disk with O_DIRECT: its own counts, from its blkio files.
    v1 counts a cgroup's I/O on a device once a throttle rule names it (a limit far above
    anything here). lxcfs 5.0.3 gives the host's file instead: it needs the CFQ-era files
    (blkio.io_merged_recursive...) too, which no kernel since 5.0 has (BFQ names them
    blkio.bfq.*); procfast shows 0 for what they would have said."""
    dev = os.stat("/var/tmp").st_dev
    major, minor = os.major(dev), os.minor(dev)
    cg = Cgroup()
    cg.write("blkio", "blkio.throttle.write_bps_device", "%d:%d %d" % (major, minor, 1 << 40))
    target = "/var/tmp/%s.io" % cg.name
    try:
        subprocess.run(["sh", "-c", cg.join_command() + " exec dd if=/dev/zero of=%s bs=64k "
                        "count=16 oflag=direct status=none" % target], check=True)
        os.unlink(target)
        reader = Reader(cg)
        try:
            ours, theirs = reader.read(pf.p("diskstats"), lx.p("diskstats"))
        finally:
            reader.close()

        def value(name, op):
            for line in read(os.path.join(cg.dir("blkio"), name)).splitlines():
                if line.startswith("%d:%d %s " % (major, minor, op)):
                    return int(line.split()[2])
            return 0
        ios = "blkio.throttle.io_serviced_recursive"
        size = "blkio.throttle.io_service_bytes_recursive"
        rows = [l.split() for l in ours.splitlines()]
        assert [r[:2] for r in rows] == [[str(major), str(minor)]], ours
        assert [int(x) for x in rows[0][3:]] == [
            value(ios, "Read"), 0, value(size, "Read") // 512, 0,
            value(ios, "Write"), 0, value(size, "Write") // 512, 0, 0, 0, 0]
        assert value(ios, "Write") >= 16
        with open("/proc/diskstats") as f:
            host = [l.split()[:3] for l in f]
        assert [l.split()[:3] for l in theirs.splitlines()] == host
    finally:
        if os.path.exists(target):
            os.unlink(target)
        cg.close()


def test_loadavg(pf, lx_cfs):
    """A cgroup with one task that spins: both follow it, count it running, and their
    averages, sampled every 5 s on their own clocks, differ by less than two samples'
    weight (1 - exp(-5/60) each, for the 1-minute average)."""
    cg = Cgroup(cpus="0")
    spinner = subprocess.Popen(["sh", "-c", cg.join_command() + " while :; do :; done"],
                               start_new_session=True)
    reader = Reader(cg)
    try:
        reader.read(pf.p("loadavg"), lx_cfs.p("loadavg"))  # both follow it from now
        time.sleep(11)  # two samples of each
        for _ in range(20):
            ours, theirs = (t.split() for t in reader.read(pf.p("loadavg"), lx_cfs.p("loadavg")))
            # running/total and the last pid: the same tasks, at each one's last sample
            if ours[3] == theirs[3] and ours[4] == theirs[4]:
                break
            time.sleep(1)
        assert ours[3] == theirs[3] and ours[4] == theirs[4], (ours, theirs)
        assert ours[3].startswith("1/") or ours[3].startswith("2/"), ours
        weight = 1 - 1884 / 2048
        for i in range(3):
            assert abs(float(ours[i]) - float(theirs[i])) <= 2 * weight + 0.01, (ours, theirs)
        assert float(ours[0]) > 0
    finally:
        reader.close()
        os.killpg(spinner.pid, signal.SIGKILL)
        spinner.wait()
        cg.close()


def test_view_init_mode(lx):
    """A pidns= view gives its pid 1's cgroup (resources=init, its default): the same as
    lxcfs gives the processes of that namespace."""
    cg = Cgroup(memory=128 * MIB, cpus="0")
    # in the host's mount namespace, so that it sees both mounts
    reader = Reader(cg, prefix=("unshare", "--pid", "--fork"))
    view = None
    try:
        assert reader.pid_inside == 1
        host_pid = int(read("/proc/%d/task/%d/children" % (reader.proc.pid, reader.proc.pid))
                       .split()[0])
        view = Mount(["pidns=/proc/%d/ns/pid" % host_pid])
        parsed = agree(reader, view.p("meminfo"), lx.p("meminfo"), meminfo,
                       lambda *p: [k for k in MEMINFO_KEYS if k in p[0]])
        assert parsed[0]["MemTotal"] == 128 * 1024
        ours, theirs = reader.read(view.p("cpuinfo"), lx.p("cpuinfo"))
        assert cpuinfo_blocks(ours) == cpuinfo_blocks(theirs) and len(cpuinfo_blocks(ours)) == 1
        # a reader outside the namespace gets the view's numbers too (init, not caller)
        with open(view.p("meminfo")) as f:
            assert meminfo(f.read())["MemTotal"] == 128 * 1024
    finally:
        reader.close()
        try:
            if view:
                view.close()
        finally:
            cg.close()


def test_never_anothers_numbers(pf):
    """A caller that may not read its cgroup's files gets the host's file, never the
    numbers it may not read (lxcfs, reading as root, gives them)."""
    cg = Cgroup(memory=64 * MIB)
    os.chmod(cg.dir("memory"), 0o700)
    reader = Reader(cg, user=65534)
    try:
        ours = meminfo(reader.read(pf.p("meminfo"))[0])
        assert ours["MemTotal"] == host_meminfo()["MemTotal"]
        os.chmod(cg.dir("memory"), 0o755)
        assert meminfo(reader.read(pf.p("meminfo"))[0])["MemTotal"] == 64 * 1024
    finally:
        reader.close()
        cg.close()


def test_off_is_the_mirror(mount_with):
    """resources=off (the host mount's default): the source's files, for every caller."""
    plain = mount_with()
    off = mount_with("resources=off")
    cg = Cgroup(memory=64 * MIB, cpus="0")
    reader = Reader(cg)
    try:
        for m in (plain, off):
            assert meminfo(reader.read(m.p("meminfo"))[0])["MemTotal"] == \
                host_meminfo()["MemTotal"]
            assert len(cpuinfo_blocks(reader.read(m.p("cpuinfo"))[0])) == os.cpu_count()
    finally:
        reader.close()
        cg.close()


def test_offsets(pf):
    """Reads at other offsets are slices of the text made at offset 0 (a read at 0 makes
    it afresh, as LXCFS does); past the end, nothing."""
    cg = Cgroup(memory=64 * MIB)
    code = ("import os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "whole = os.pread(fd, 1 << 20, 0)\n"
            "parts = [os.pread(fd, 7, o) for o in range(7, len(whole) + 20, 7)]\n"
            "print(len(whole), int(bytes().join(parts) == whole[7:]),"
            " len(os.pread(fd, 100, 1 << 40)))")
    try:
        out = subprocess.run(["sh", "-c", cg.join_command() + ' exec "$@"', "sh",
                              "/usr/bin/python3", "-c", code, pf.p("meminfo")],
                             capture_output=True, text=True, check=True).stdout.split()
        assert int(out[0]) > 0 and out[1:] == ["1", "0"], out
    finally:
        cg.close()


def test_server_restart(mount_with):
    """After the server is killed, the next one serves the cgroup's numbers as well."""
    m = mount_with("resources=caller")
    cg = Cgroup(memory=96 * MIB)
    reader = Reader(cg)
    try:
        assert meminfo(reader.read(m.p("meminfo"))[0])["MemTotal"] == 96 * 1024
        os.kill(m.server_pid(), signal.SIGKILL)
        deadline = time.time() + 20
        while True:
            try:
                text = reader.read(m.p("meminfo"))[0]
                break
            except AssertionError:
                assert time.time() < deadline
                time.sleep(0.1)
        assert meminfo(text)["MemTotal"] == 96 * 1024
    finally:
        reader.close()
        cg.close()


def test_with_hidepid(mount_with):
    """hidepid= composes: an unprivileged caller of a hidepid=invisible mount still gets
    its cgroup's numbers."""
    m = mount_with("resources=caller", "hidepid=invisible")
    cg = Cgroup(memory=80 * MIB)
    reader = Reader(cg, user=65534)
    try:
        assert meminfo(reader.read(m.p("meminfo"))[0])["MemTotal"] == 80 * 1024
        assert reader.errnos(m.p("1/status")) == [2]  # ENOENT: pid 1 hidden from nobody
    finally:
        reader.close()
        cg.close()


def sampler_switches(mount):
    """Context switches of the server's load sampler thread (fs/cgroup/cgroup_load.c)."""
    pid = mount.server_pid()
    for tid in os.listdir("/proc/%d/task" % pid):
        if read("/proc/%d/task/%s/comm" % (pid, tid)) == "pf-loadavg":
            status = read("/proc/%d/task/%s/status" % (pid, tid))
            return int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    raise AssertionError("no sampler thread")


def test_no_work_while_nobody_reads(mount_with):
    """Until a loadavg is read the sampler sleeps (no wake-up in 6 s); then it samples
    that cgroup every 5 s."""
    m = mount_with("resources=caller")
    os.listdir(m.path)
    before = sampler_switches(m)
    with open(m.p("meminfo")) as f:  # other files start nothing
        f.read()
    time.sleep(6)
    assert sampler_switches(m) == before
    with open(m.p("loadavg")) as f:
        f.read()
    time.sleep(6)
    assert sampler_switches(m) > before


@pytest.mark.parametrize("value", ["bogus", "", "Caller"])
def test_bad_option(value):
    r = subprocess.run([BIN, "-f", "-o", "resources=" + value,
                        "/nonexistent"], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "resources=" in r.stderr


def test_handed_over_and_upgraded(lx):
    """A view handed over to a daemon (-o daemon=) serves its pid 1's cgroup, and so it
    does after the daemon's upgrade (SIGHUP); the daemon's own host mount stays the
    host's (off, its default), a handed-over mount with resources=caller the caller's."""
    import tempfile
    from lib.control import Handed, children
    from lib.waiting import wait_for
    cg = Cgroup(memory=112 * MIB)
    reader = Reader(cg, prefix=("unshare", "--pid", "--fork"))
    sock = tempfile.mktemp(prefix="procfast-test-", suffix=".sock")
    daemon = Mount(["control=" + sock])
    daemon.socket = sock
    handed = []
    try:
        host_pid = int(read("/proc/%d/task/%d/children" % (reader.proc.pid, reader.proc.pid))
                       .split()[0])
        handed.append(Handed(daemon, ["pidns=/proc/%d/ns/pid" % host_pid]))
        handed.append(Handed(daemon, ["resources=caller"]))
        assert all(h.result.returncode == 0 for h in handed), [h.result for h in handed]
        view, caller = handed

        def totals():
            texts = reader.read(view.path + "/meminfo", caller.path + "/meminfo",
                                daemon.p("meminfo"))
            return [meminfo(t)["MemTotal"] for t in texts]
        host = host_meminfo()["MemTotal"]
        assert totals() == [112 * 1024, 112 * 1024, host]
        before = set(children(daemon.proc.pid))
        daemon.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: len(set(children(daemon.proc.pid)) - before) >= 3, 20,
                 "three new servers:\n" + daemon.output())
        deadline = time.time() + 20
        while True:
            try:
                got = totals()
                break
            except AssertionError:  # a handle of the old servers: read again
                assert time.time() < deadline
                time.sleep(0.1)
        assert got == [112 * 1024, 112 * 1024, host]
    finally:
        reader.close()
        try:
            for h in handed:
                h.close()
            daemon.close()
        finally:
            cg.close()


def test_parallel_readers(pf):
    """Readers of every resource file at once, in two cgroups (the load sampler samples
    while workers make texts): every read is a whole text of its cgroup."""
    import threading
    cgs = [Cgroup(memory=72 * MIB), Cgroup(memory=88 * MIB)]
    readers = [Reader(cg) for cg in cgs for _ in range(3)]
    errors = []

    def run(reader, limit):
        try:
            deadline = time.time() + 3
            while time.time() < deadline:
                texts = reader.read(*[pf.p(f) for f in ("meminfo", "stat", "cpuinfo", "uptime",
                                                        "loadavg", "swaps", "diskstats")])
                if meminfo(texts[0])["MemTotal"] != limit // 1024:
                    errors.append(texts[0])
                if len(texts[4].split()) != 5:
                    errors.append(texts[4])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=run, args=(r, (72 if i < 3 else 88) * MIB))
               for i, r in enumerate(readers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]
    finally:
        for r in readers:
            r.close()
        for cg in cgs:
            cg.close()


def test_time_namespace_caller(pf):
    """A caller in a time namespace of its own: the files procfs evaluates in it (stat's
    btime) come through the helper process in its namespaces (see "The caller's
    context"), the cgroup's CPUs around them."""
    cg = Cgroup(cpus="0")
    reader = Reader(cg, prefix=("unshare", "--time", "--boottime", "1000", "--fork"))
    try:
        ours, real = reader.read(pf.p("stat"), "/proc/stat")
        assert stat_rest(ours)["btime"] == stat_rest(real)["btime"]
        with open("/proc/stat") as f:  # the host's boot is 1000 s later than the namespace's
            assert int(stat_rest(f.read())["btime"][0]) == int(stat_rest(ours)["btime"][0]) + 1000
        assert list(stat_cpus(ours)) == ["cpu", "cpu0"]
        up = float(reader.read(pf.p("uptime"))[0].split()[0])
        assert up > 0
    finally:
        reader.close()
        cg.close()
