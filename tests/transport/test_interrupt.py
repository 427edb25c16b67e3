"""A read that waits in the daemon ends when its reader's signal would end it on /proc
(fs/request/read_wait.c). A read of kmsg waits for the next kernel message; the kernel
sends the server INTERRUPT when the reader gets a signal, and then waits for the answer
uninterruptibly: a reader killed meanwhile stayed in D until the next kernel message.

Each test makes the same calls on /proc and on the mount, over /dev/fuse and over
io_uring, and compares. The reader is a process of the test's; the kernel log is drained
first and nothing is logged until the reader's signal was seen, so the read ends by the
signal alone."""
import errno
import os
import signal
import subprocess
import sys
import time

import pytest

from lib.kmsg_request import drain_kernel_log, waiting_in_kernel_log
from lib.task_waits import thread_waits
from lib.waiting import wait_for

# Reads path once, with a SIGUSR1 handler (SA_RESTART when argv[2] is "restart"):
# prints "ready" once open, then the read's outcome and whether the handler ran.
READER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
handled = []
signal.signal(signal.SIGUSR1, lambda *a: handled.append(1))
signal.siginterrupt(signal.SIGUSR1, sys.argv[2] != "restart")
fd = os.open(sys.argv[1], os.O_RDONLY | (os.O_NONBLOCK if sys.argv[2] == "nonblock" else 0))
print("ready", flush=True)
buf = ctypes.create_string_buffer(4096)
r = libc.read(fd, buf, 4096)
print(r if r >= 0 else -ctypes.get_errno(), len(handled), flush=True)
"""


def start_reader(path, mode):
    drain_kernel_log()
    p = subprocess.Popen([sys.executable, "-c", READER, path, mode], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline() == "ready\n"
    return p


def waits(p, server):
    """Whether p comes to wait in its read (in the server's wait for the kernel log, or on
    /proc in the kernel's own): False when a message the kernel logged meanwhile ended
    the read first (the kernel logs one at a server's start over /dev/fuse, after an
    upgrade: "fuse-io-uring is disabled")."""
    def in_read():
        if server is not None:
            return waiting_in_kernel_log(server) == 1
        with open("/proc/%d/wchan" % p.pid) as f:
            return f.read() == "syslog_print"
    deadline = time.monotonic() + 20
    while not in_read():
        if p.poll() is not None:
            got = p.stdout.read().split()
            assert got and int(got[0]) > 0, "the read ended: %s" % got
            return False
        assert time.monotonic() < deadline, (
            "the read did not come to wait for the kernel log; server %s: %s"
            % (server, thread_waits(server)))
        time.sleep(0.02)
    return True


def waiting_reader(path, server, mode="intr"):
    """A reader of path that waits in its read, made again while messages end it."""
    for _ in range(20):
        p = start_reader(path, mode)
        if waits(p, server):
            return p
    raise AssertionError("the kernel log never stayed quiet")


def outcome(p, mount=None):
    """What the reader printed after "ready", once it ended on its own (no kernel message
    comes). Read through p.stdout, whose buffer may hold it already. A read that outlived
    its signal fails with mount's server log, which says where the request went."""
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        state = open("/proc/%d/stat" % p.pid).read().split()[2]
        open("/dev/kmsg", "w").write("procfast tests: ending a read a signal did not end\n")
        p.wait(timeout=20)
        raise AssertionError("the read outlived its reader's signal (state %s)%s" % (
            state, "; server log:\n" + mount.output() if mount is not None else ""))
    return p.stdout.read().split()


def signalled(path, server, sig, mode="intr"):
    p = waiting_reader(path, server, mode)
    p.send_signal(sig)
    return outcome(p), p.returncode


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_reader_killed_while_its_read_of_kmsg_waits_dies_at_once(over_each, sig):
    server = over_each.server_pid()
    want = signalled("/proc/kmsg", None, sig)
    assert want == ([], -sig)
    assert signalled(over_each.p("kmsg"), server, sig) == want
    wait_for(lambda: waiting_in_kernel_log(server) == 0, 20, "the server's wait to end")


def test_a_handled_signal_ends_the_read_with_eintr(over_each):
    """A handler without SA_RESTART: the read fails with EINTR once it ran."""
    want = signalled("/proc/kmsg", None, signal.SIGUSR1)
    assert want == (["-%d" % errno.EINTR, "1"], 0)
    assert signalled(over_each.p("kmsg"), over_each.server_pid(), signal.SIGUSR1) == want


def test_with_sa_restart_the_read_fails_where_procs_goes_on(over_each):
    """A difference from /proc (read_wait.h): procfs's read answers ERESTARTSYS, and
    goes on waiting after a handler with SA_RESTART; the kernel takes no such answer from
    a FUSE server, so the read through the mount fails with EINTR."""
    p = waiting_reader("/proc/kmsg", None, "restart")
    p.send_signal(signal.SIGUSR1)
    time.sleep(0.5)
    assert p.poll() is None, "/proc's read ended: " + p.stdout.read()
    with open("/dev/kmsg", "w") as f:
        f.write("procfast tests: a message for a read that goes on\n")
    got = outcome(p)
    assert int(got[0]) > 0 and got[1] == "1", got
    assert signalled(over_each.p("kmsg"), over_each.server_pid(), signal.SIGUSR1, "restart") == (
        ["-%d" % errno.EINTR, "1"], 0)


def test_a_read_that_must_not_wait_does_not(over_each):
    """O_NONBLOCK with nothing logged: EAGAIN at once, as on /proc."""
    def nonblocking(path):
        p = start_reader(path, "nonblock")
        return outcome(p), p.returncode
    want = nonblocking("/proc/kmsg")
    assert want == (["-%d" % errno.EAGAIN, "0"], 0)
    assert nonblocking(over_each.p("kmsg")) == want


def assert_next_message_read(m):
    """A read through m waits in its server, and the next message ends it."""
    p = waiting_reader(m.p("kmsg"), m.server_pid())
    with open("/dev/kmsg", "w") as f:
        f.write("procfast tests: the next message\n")
    got = outcome(p)
    assert int(got[0]) > 0, got


def test_the_read_after_an_interrupted_one_gets_the_next_message(over_each):
    """The server waits again for the next read: a message ends it with that message."""
    signalled(over_each.p("kmsg"), over_each.server_pid(), signal.SIGKILL)
    assert_next_message_read(over_each)


def test_an_upgrade_ends_a_waiting_read_with_eintr_and_the_next_server_serves(over_each):
    """SIGHUP upgrades (fs/supervisor/supervisor.c): the server stops by draining. A read
    that waits cannot be handed to the next server, and the upgrade must not wait for the
    next kernel message: it is answered EINTR, and the read made again is the next
    server's, which a message ends."""
    old = over_each.server_pid()
    p = waiting_reader(over_each.p("kmsg"), old)
    over_each.proc.send_signal(signal.SIGHUP)
    assert outcome(p, over_each) == ["-%d" % errno.EINTR, "0"], over_each.output()
    wait_for(lambda: over_each.server_pid() not in (old, over_each.proc.pid), 20, "the next server")
    assert_next_message_read(over_each)
