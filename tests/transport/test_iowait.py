"""Idle ring threads wait for no I/O (fs/transport/uring.c, wait_for_requests). A task that
waits in io_uring_enter while commands of its own are in flight is counted by the kernel
as waiting for I/O: each ring thread of an idle mount added one to procs_blocked, and its
CPU's idle time showed as iowait (vmstat's wa at 90-97 on an idle host). Linux 6.15 lets
a wait say it is none (IORING_ENTER_NO_IOWAIT), which the rings use where the kernel offers
it (IORING_FEAT_NO_IOWAIT); where it does not, the transport's log line says so.

Checked over an idle mount of some 32 ring threads: procs_blocked of /proc/stat while it
is mounted against before and after (a margin for other tasks that wait meanwhile); no
thread of the daemon in D; and, where the kernel has per-task delay accounting
(kernel.task_delayacct, on for the test), the server's own threads: a thread's blkio ticks
(field 42 of its stat) count the time it waited as iowait once it wakes, and a request from
each CPU wakes a ring thread of each queue, which must have counted none."""
import ctypes
import os
import statistics
import time

import pytest

from lib.mount import Mount
from test_transport import PARAM, possible_cpus, rings

pytestmark = pytest.mark.skipif(not os.path.exists(PARAM),
                                reason="a kernel without FUSE over io_uring")

DELAYACCT = "/proc/sys/kernel/task_delayacct"
IORING_FEAT_NO_IOWAIT = 1 << 17
LOG_SAYS = "its idle threads count as iowait"


def kernel_offers_no_iowait():
    """IORING_FEAT_NO_IOWAIT in the features of a ring of our own (io_uring_setup); None
    where no ring can be made."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = (ctypes.c_uint32 * 30)()  # struct io_uring_params, 120 bytes
    fd = libc.syscall(425, 1, params)  # __NR_io_uring_setup
    if fd < 0:
        return None
    os.close(fd)
    return bool(params[5] & IORING_FEAT_NO_IOWAIT)  # features, after five u32s


def procs_blocked():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("procs_blocked "):
                return int(line.split()[1])
    raise AssertionError("no procs_blocked in /proc/stat")


def blocked_over(seconds, check=lambda: None):
    """procs_blocked every 50 ms for that long, check() after each."""
    samples, end = [], time.time() + seconds
    while time.time() < end:
        samples.append(procs_blocked())
        check()
        time.sleep(0.05)
    return samples


def daemon_threads(m):
    """Every thread of the daemon: its supervisor, server and their helpers, by tid."""
    pids, todo = [], [m.proc.pid]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                todo += [int(k) for k in f.read().split()]
        except OSError:
            pass
    return [(pid, int(tid)) for pid in pids for tid in os.listdir("/proc/%d/task" % pid)]


def thread_stat(pid, tid):
    """The fields of /proc/PID/task/TID/stat after the name: [0] is the state, [39] the
    ticks spent waiting for block I/O (delayacct_blkio_ticks, field 42)."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        s = f.read()
    return s[s.rindex(")") + 2:].split()


def none_in_d(m):
    def check():
        for pid, tid in daemon_threads(m):
            try:
                state = thread_stat(pid, tid)[0]
            except OSError:  # a helper that just ended
                continue
            assert state != "D", "thread %d of %d in D while idle" % (tid, pid)
    return check


def wake_every_queue(m):
    """A request from each CPU: the kernel hands it to a ring thread of that CPU's queue,
    which then has ended its wait (and, where it counted as iowait, accounted for it)."""
    old = os.sched_getaffinity(0)
    try:
        for cpu in sorted(old):
            os.sched_setaffinity(0, {cpu})
            with open(m.p(os.getpid(), "stat")) as f:  # OPEN and READ: never from a cache
                assert f.read().startswith("%d " % os.getpid())
    finally:
        os.sched_setaffinity(0, old)


@pytest.fixture
def delayacct():
    """Per-task delay accounting for one test (kernel.task_delayacct), if the kernel has
    it: the threads made while it is on count their iowait in their blkio ticks."""
    if not os.path.exists(DELAYACCT):
        yield False
        return
    with open(DELAYACCT) as f:
        old = f.read().strip()
    with open(DELAYACCT, "w") as f:
        f.write("1")
    yield True
    with open(DELAYACCT, "w") as f:
        f.write(old)


@pytest.mark.skipif(kernel_offers_no_iowait() is not True,
                    reason="a kernel without IORING_ENTER_NO_IOWAIT (Linux 6.15)")
def test_idle_ring_threads_are_not_blocked(allowed, delayacct):
    allowed(True)
    # some 32 idle ring threads: the old code made procs_blocked grow by as many
    threads = max(1, min(16, -(-32 // possible_cpus())))
    idle = threads * possible_cpus()
    # a quarter of them: room for other tasks that wait meanwhile (another mount over
    # io_uring of a procfast without the fix: 4 a CPU)
    margin = max(2, idle // 4)
    before = blocked_over(1)
    m = Mount(["uring_threads=%d" % threads])
    try:
        assert m.over_uring(), m.output()
        server = m.server_pid()
        assert rings(server) == idle, m.output()
        assert LOG_SAYS not in m.output(), m.output()
        time.sleep(0.5)  # the start's requests answered: every ring thread waits
        mounted = blocked_over(1.5, none_in_d(m))
        wake_every_queue(m)
        ticks = {tid: int(thread_stat(pid, tid)[39]) for pid, tid in daemon_threads(m)
                 if pid == server}
    finally:
        m.close()
    after = blocked_over(1)
    baseline = max(statistics.median(before), statistics.median(after))
    grew = statistics.median(mounted) - baseline
    assert grew <= margin, ("procs_blocked grew by %s with %d idle ring threads: before %s, "
                            "mounted %s, after %s" % (grew, idle, before, mounted, after))
    if delayacct:
        # a ring thread woken after >= 1.5 s of idle wait would count >= 150 ticks
        assert sum(ticks.values()) < 25, "blkio ticks of the server's threads: %s" % ticks


def test_log_says_whether_idle_rings_count_as_iowait(allowed, mount_with):
    offered = kernel_offers_no_iowait()
    if offered is None:
        pytest.skip("io_uring_setup fails here")
    allowed(True)
    m = mount_with("uring_threads=1")
    assert m.over_uring(), m.output()
    line = [x for x in m.output().splitlines() if "serving through io_uring" in x]
    assert len(line) == 1, m.output()
    assert (LOG_SAYS in line[0]) == (not offered), m.output()
