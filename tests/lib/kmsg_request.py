"""A request the server has taken and not answered: a read of kmsg through the mount,
which waits in the server's read of the kernel log until a message comes."""
import os
import signal
import threading
import time


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


def read_kmsg(path, result):
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            result["data"] = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError as e:
        result["errno"] = e.errno


def waits_in_kernel_log(pid):
    """Whether a thread of pid waits in a read of the kernel log: a request it took."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                if f.read() == "syslog_print":
                    return True
        except OSError:
            pass
    return False


def reading_kmsg(path, server):
    """A read of path/kmsg, started and waiting in server's read of the kernel log: its
    thread and where its outcome goes. A message the kernel logs meanwhile ends the read
    first; then the log is drained and it is made again."""
    result = {}
    for _ in range(50):
        drain_kernel_log()
        t = threading.Thread(target=read_kmsg, args=(os.path.join(path, "kmsg"), result))
        t.start()
        deadline = time.time() + 20
        while t.is_alive() and not waits_in_kernel_log(server):
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
