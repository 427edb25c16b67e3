"""A request the server has taken and not answered: a read of kmsg through the mount,
which waits in the server until a message comes (or its reader's signal ends it:
fs/request/read_wait.c)."""
import os
import signal
import struct
import threading
import time

from lib.task_waits import each_task

PPOLL = 271  # x86_64's syscall number: the server waits for the kernel log in ppoll


def drain_kernel_log():
    """Reads what the kernel log holds unread, as syslog would: a read of kmsg then waits
    for the next message."""
    fd = os.open("/proc/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    try:
        while os.read(fd, 1 << 16):
            pass
    except BlockingIOError:
        pass
    finally:
        os.close(fd)


def read_kmsg(path, result, cpu=None):
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})  # this thread only: its request goes to cpu's queue
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            result["data"] = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError as e:
        result["errno"] = e.errno


def kmsg_fds(pid):
    """pid's fds open on a kmsg of some procfs."""
    fds = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).endswith("/kmsg"):
                fds.add(int(fd))
        except OSError:
            pass
    return fds


def polled_fd(pid, tid):
    """The first fd a thread of pid waits on in ppoll, or None."""
    with open("/proc/%d/task/%s/syscall" % (pid, tid)) as f:
        call = f.read().split()
    if not call or call[0] != str(PPOLL):
        return None
    with open("/proc/%d/mem" % pid, "rb") as mem:  # struct pollfd's fd
        mem.seek(int(call[1], 16))
        return struct.unpack("i", mem.read(4))[0]


def waiting_in_kernel_log(pid):
    """The threads of pid that wait for the kernel log, in ppoll on a kmsg or in a read
    of it: requests it took."""
    n, fds = 0, kmsg_fds(pid)
    for _, tid, wchan in each_task([pid]):
        try:
            n += wchan == "syslog_print" or polled_fd(pid, tid) in fds
        except OSError:
            pass
    return n


def end_kernel_log_waits(done, seconds=60):
    """Logs a message every 50 ms until done() (each ends one read of the kernel log),
    for reads made by a thread of the test, which no signal of the test's ends. A read
    the messages never end would hang the test: it fails instead, naming the other
    readers of /proc/kmsg, which take messages first."""
    deadline = time.time() + seconds
    while not done():
        assert time.time() < deadline, (
            "the reads of the kernel log did not end in %d s; other readers of /proc/kmsg "
            "take its messages: %s" % (seconds, kernel_log_readers() or "none"))
        with open("/dev/kmsg", "w") as f:
            f.write("procfast tests: waking the reads of kmsg\n")
        time.sleep(0.05)


def kernel_log_readers():
    """Each task waiting in a read of /proc/kmsg, with its command line."""
    found = []
    for pid, tid, wchan in each_task():
        try:
            if wchan == "syslog_print":
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    found.append("%d/%d %s" % (pid, tid, f.read().replace(b"\0", b" ")
                                               .decode(errors="replace")[:100]))
        except OSError:
            pass
    return found


def reading_kmsg(path, server, cpu=None):
    """A read of path/kmsg (made on cpu, if given), started and waiting in server's read
    of the kernel log: its thread and where its outcome goes. A message the kernel logs
    meanwhile ends the read first; then the log is drained and it is made again."""
    result = {}
    for _ in range(50):
        drain_kernel_log()
        t = threading.Thread(target=read_kmsg,
                             args=(os.path.join(path, "kmsg"), result, cpu))
        t.start()
        deadline = time.time() + 20
        while t.is_alive() and waiting_in_kernel_log(server) == 0:
            assert time.time() < deadline, "the read never reached the server"
            time.sleep(0.01)
        if t.is_alive():
            return t, result
        t.join()
        result.clear()
    raise AssertionError("the kernel log never stayed quiet")


def killed_with_a_request_taken(path, server):
    """Kills server while it serves a read of path/kmsg, which waits in the kernel log
    until a message comes: the read's outcome, once it ended."""
    t, result = reading_kmsg(path, server)
    os.kill(server, signal.SIGKILL)
    t.join(20)
    assert not t.is_alive(), "the read never ended"
    return result
