"""poll, select and epoll on the mount wait as on /proc (fs/request/poll.c): a poller
sleeps until procfs would wake it (kmsg at a message, mountinfo at a mount), and a file
without poll of its own is ready at once. Without POLL the kernel answers every FUSE
file readable at once, and a mount monitor (libmount's, systemd's) never learns of a
mount.

Each test makes the same calls on /proc and on the mount, over /dev/fuse and over
io_uring; what wakes a poller is made by the test, after the poller sleeps."""
import os
import select
import subprocess
import sys
import tempfile
import threading

import pytest

from lib.kmsg_request import drain_kernel_log
from lib.waiting import wait_for

# Polls argv[1] for argv[2] (events, decimal) with epoll; prints "sleeping" once its
# first wait found nothing, then waits up to 20 s and prints what came (events, or none).
POLLER = r"""
import os, select, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
os.read(fd, 1 << 20) if not sys.argv[1].endswith("kmsg") else None
ep = select.epoll()
ep.register(fd, int(sys.argv[2]))
print("sleeping" if not ep.poll(0.2) else "ready at once", flush=True)
got = ep.poll(20)
print(got[0][1] if got else "none", flush=True)
"""


def poll_once(path, events):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        p = select.poll()
        p.register(fd, events)
        return [e for _, e in p.poll(200)]
    finally:
        os.close(fd)


def woken(path, events, wake, prefix=()):
    """What a poller of path gets: asleep first, then after wake()."""
    p = subprocess.Popen(list(prefix) + [sys.executable, "-c", POLLER, path, str(events)],
                         stdout=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline().strip()
        if first == "sleeping":
            wake()
        return first, p.stdout.readline().strip()
    finally:
        p.kill()
        p.wait()


def log_message():
    with open("/dev/kmsg", "w") as f:
        f.write("procfast tests: a message for a poller\n")


def test_a_poller_of_kmsg_sleeps_until_a_message(over_each):
    def kmsg_poll(path):
        for _ in range(20):  # made again while a message the kernel logs wakes it first
            drain_kernel_log()
            got = woken(path, select.EPOLLIN, log_message)
            if got[0] != "ready at once":
                return got
        raise AssertionError("the kernel log never stayed quiet")
    want = kmsg_poll("/proc/kmsg")
    assert want == ("sleeping", str(select.EPOLLIN))
    assert kmsg_poll(over_each.p("kmsg")) == want


@pytest.mark.parametrize("userns", [False, True], ids=["host_userns", "own_userns"])
def test_a_poller_of_mountinfo_wakes_at_a_mount(over_each, userns):
    """In a mount namespace of its own, a poller of its mountinfo for POLLPRI wakes when
    a mount is made there (as systemd and libmount's monitor wait). In a user namespace
    of its own too, where a helper serves the caller's files (the daemon polls its own
    open of the path)."""
    with tempfile.TemporaryDirectory() as d:
        target = os.path.join(d, "t")
        os.mkdir(target)
        # the poller and the mount in one new mount namespace: the mount is made once
        # the poller said it sleeps
        script = ("%s -c '%s' \"$1\" %d | { read first; echo \"$first\"; "
                  "mount -t tmpfs procfast-test %s; cat; }"
                  % (sys.executable, POLLER.replace("'", "'\\''"),
                     select.EPOLLPRI | select.EPOLLERR, target))
        unshare = ["unshare", "-m", "--propagation", "private"] + (["-Ur"] if userns else [])

        def mount_poll(path):
            r = subprocess.run(unshare + ["sh", "-c", script, "sh", path], capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            return r.stdout.split()
        want = mount_poll("/proc/self/mountinfo")
        assert want == ["sleeping", str(select.EPOLLPRI | select.EPOLLERR)]
        assert mount_poll(over_each.p("self", "mountinfo")) == want


def test_a_file_without_poll_is_ready_at_once(over_each):
    for name in ("status", "stat", "cmdline"):
        path = os.path.join(str(os.getpid()), name)
        want = poll_once(os.path.join("/proc", path), select.POLLIN | select.POLLPRI)
        assert want == [select.POLLIN]
        assert poll_once(over_each.p(path), select.POLLIN | select.POLLPRI) == want


def test_an_upgrade_wakes_a_sleeping_poller_and_the_next_server_watches(over_each):
    """The server that stops (SIGHUP: an upgrade) wakes its pollers; each polls again,
    the next server finds nothing ready and watches for it, and a message wakes it.
    Over io_uring that poll may reach a ring the stopped server closed, which the kernel
    ends with ECANCELED: the poller wakes with EPOLLERR then (fs/request/poll_watch.h)."""
    drain_kernel_log()
    old = over_each.server_pid()
    message = threading.Timer(0.5, log_message)

    def upgrade_then_message():
        over_each.proc.send_signal(1)  # SIGHUP
        wait_for(lambda: over_each.server_pid() not in (old, over_each.proc.pid), 20,
                 "the next server")
        message.start()
    try:
        got = woken(over_each.p("kmsg"), select.EPOLLIN, upgrade_then_message)
    finally:
        if message.is_alive():  # logged before the next test's readers start
            message.join()
    woke = {str(select.EPOLLIN)} | ({str(select.EPOLLERR)} if over_each.over_uring() else set())
    assert got[0] == "sleeping" and got[1] in woke, (got, over_each.output())


def test_nopoll_gives_every_file_ready_at_once(mount_with):
    """-o nopoll: the first POLL is answered ENOSYS and the kernel asks no more; a poller
    of kmsg is then ready at once with nothing logged, where on /proc it sleeps."""
    m = mount_with("nopoll")
    for _ in range(20):  # made again while a message the kernel logs wakes /proc's first
        drain_kernel_log()
        on_proc = poll_once("/proc/kmsg", select.POLLIN)
        if not on_proc:
            break
    assert on_proc == []
    assert poll_once(m.p("kmsg"), select.POLLIN) == [select.POLLIN]
