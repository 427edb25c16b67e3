"""Which transport serves (fs/transport/transport.c): FUSE over io_uring where the kernel
allows it and -o uring= asks for it, /dev/fuse otherwise. What serves is read from the
server itself: its io_uring instances are fds of its own (anon_inode:[io_uring]), and
a request through the mount must then be answered by one of its ring threads."""
import errno
import os
import signal
import subprocess
import tempfile
import time

import pytest

from lib.build import BIN
from lib.control import children, cmdline
from lib.kmsg_request import killed_with_a_request_taken
from lib.mount import Mount, is_ns_helper
from lib.uring_switch import PARAM
from lib.waiting import wait_for

pytestmark = pytest.mark.skipif(not os.path.exists(PARAM),
                                reason="a kernel without FUSE over io_uring")


def rings(pid):
    """How many io_uring instances the process holds."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[io_uring]"
        except OSError:
            pass
    return n


def possible_cpus():
    """The kernel's queues: one per possible CPU ("0-1", "0,2-3")."""
    with open("/sys/devices/system/cpu/possible") as f:
        return 1 + max(int(n) for part in f.read().strip().split(",") for n in part.split("-"))


def ring_threads_busy(pid):
    """Context switches of the server's threads pinned to one CPU (the ring threads)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
            status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
        if "-" not in status["Cpus_allowed_list"] and "," not in status["Cpus_allowed_list"]:
            total += int(status["voluntary_ctxt_switches"])
    return total


def same_as_proc(m):
    pid = os.getpid()
    with open("/proc/%d/status" % pid) as f:
        want = f.read().splitlines()[0]
    with open(m.p(pid, "status")) as f:
        assert f.read().splitlines()[0] == want


@pytest.mark.parametrize("option", ["", "uring=auto", "uring=on"])
def test_io_uring_serves_where_allowed(allowed, mount_with, option):
    allowed(True)
    m = mount_with(*([option] if option else []))
    server = m.server_pid()
    assert rings(server) == 4 * possible_cpus(), m.output()  # four threads a queue
    assert "serving through io_uring" in m.output()
    before = ring_threads_busy(server)
    for _ in range(20):
        same_as_proc(m)
    assert ring_threads_busy(server) >= before + 20, "the rings served nothing"


@pytest.mark.parametrize("threads", [1, 2])
def test_uring_threads_a_queue(allowed, mount_with, threads):
    allowed(True)
    m = mount_with("uring_threads=%d" % threads)
    server = m.server_pid()
    assert rings(server) == threads * possible_cpus(), m.output()
    assert "%d queues x %d entries" % (possible_cpus(), threads) in m.output(), m.output()
    before = ring_threads_busy(server)
    for _ in range(20):
        same_as_proc(m)
    assert ring_threads_busy(server) >= before + 20, "the rings served nothing"


def test_uring_off_serves_through_dev_fuse(allowed, mount_with):
    allowed(True)
    m = mount_with("uring=off")
    same_as_proc(m)
    assert rings(m.server_pid()) == 0
    assert "over /dev/fuse (uring=off)" in m.output()


def test_auto_falls_back_where_not_allowed(allowed, mount_with):
    allowed(False)
    m = mount_with()
    same_as_proc(m)
    assert rings(m.server_pid()) == 0
    assert "is N" in m.output(), m.output()


def test_on_refuses_to_mount_where_not_allowed(allowed):
    allowed(False)
    path = tempfile.mkdtemp(prefix="procfast-test-")
    try:
        r = subprocess.run([BIN, "-o", "uring=on", path], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode != 0
        assert "echo Y > " + PARAM in r.stderr, r.stderr
        with open("/proc/self/mounts") as f:
            assert not any(line.split()[1] == path for line in f)
    finally:
        os.rmdir(path)


def test_bad_value_refused():
    r = subprocess.run([BIN, "-o", "uring=sometimes", "/nonexistent"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode != 0 and "uring=sometimes: must be auto, on or off" in r.stderr


@pytest.mark.parametrize("value", ["0", "65"])
def test_bad_thread_count_refused(value):
    r = subprocess.run([BIN, "-o", "uring_threads=" + value, "/nonexistent"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "uring_threads=%s: must be 1 to 64" % value in r.stderr


def test_auto_unmount_keeps_dev_fuse(allowed):
    """auto_unmount's helper unmounts on ENOTCONN, which a dead daemon's io_uring connection
    answers only after a few ms of ECONNABORTED (test_faults.py): /dev/fuse then."""
    allowed(True)
    m = Mount(["norestart", "auto_unmount"])
    try:
        same_as_proc(m)
        assert rings(m.proc.pid) == 0
    finally:
        m.close()
    r = subprocess.run([BIN, "-o", "uring=on,auto_unmount", "/nonexistent"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "exclude each other" in r.stderr


@pytest.fixture
def uring_allowed(allowed):
    """enable_uring Y before the fixtures after it mount anything."""
    allowed(True)


def own_server(daemon):
    own = [p for p in children(daemon.proc.pid) if cmdline(p)[-2:] == [daemon.path.encode(), b""]
           and not is_ns_helper(p)]
    assert len(own) == 1, own
    return own[0]


def ring_buffers_held(daemon):
    """The memfds of ring buffers the supervisor holds, by inode."""
    fds = "/proc/%d/fd" % daemon.proc.pid
    return [os.stat(os.path.join(fds, fd)).st_ino for fd in os.listdir(fds)
            if os.readlink(os.path.join(fds, fd)).startswith("/memfd:procfast-rings")]


@pytest.mark.parametrize("option", ["uring=auto", "uring=on"])
def test_handed_over_mount_serves_over_io_uring(uring_allowed, daemon, option):
    """A handed-over mount's servers are executed, not forked: the supervisor holds a memfd
    of ring buffers for each such mount, and each of its servers maps it where the first
    did, so a server after a dead one ends what that one took (ECONNABORTED) instead of
    leaving it to wait for ever, on a mount served over io_uring. So too after an
    upgrade, which hands the memfds on to the new supervisor, its own mount's too."""
    h = daemon.hand_over([option])
    assert h.result.returncode == 0, h.result.stderr
    with open(os.path.join(h.path, str(os.getpid()), "comm")) as f:
        assert f.read() == open("/proc/self/comm").read()
    assert own_server(daemon) != h.server()
    # the rings start once INIT is answered, and the first server then says so
    wait_for(lambda: daemon.output().count("serving through io_uring") == 2, 20,
             "the handed-over mount's rings:\n" + daemon.output())
    assert rings(h.server()) == 4 * possible_cpus(), daemon.output()
    assert rings(own_server(daemon)) == 4 * possible_cpus(), daemon.output()
    held = ring_buffers_held(daemon)
    assert len(held) == 2, held  # the own mount's, and the handed-over one's
    def served_again():  # logged once the rings serve
        return daemon.output().count("serving again: mirroring /proc at %s " % h.path)

    for step in ("killed", "upgraded, then killed"):
        if step.startswith("upgraded"):
            before = served_again()
            daemon.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: served_again() > before, 20, "a server after the upgrade")
            assert ring_buffers_held(daemon) == held, daemon.output()
        server, before = h.server(), served_again()
        taken = daemon.output().count("taken by a server that died")
        assert killed_with_a_request_taken(h.path, server) == {"errno": errno.ECONNABORTED}, step
        wait_for(lambda: served_again() > before, 20, "a new server")
        with open(os.path.join(h.path, str(os.getpid()), "comm")) as f:
            assert f.read() == open("/proc/self/comm").read(), step
        assert rings(h.server()) == 4 * possible_cpus(), daemon.output()
        assert daemon.output().count("taken by a server that died") == taken + 1, daemon.output()


def test_a_connection_keeps_its_rings_when_io_uring_is_disallowed_later(allowed, mount_with):
    """The kernel keeps a connection that used io_uring on its rings, and allows them
    again whatever enable_uring says: a server started after the setting went N must
    register its rings, or its queues hold every request for ever."""
    allowed(True)
    m = mount_with()
    assert m.over_uring(), m.output()
    allowed(False)
    server = m.server_pid()
    os.kill(server, 9)
    deadline = time.time() + 20
    while m.server_pid() in (server, m.proc.pid):
        assert time.time() < deadline, m.output()
        time.sleep(0.02)
    r = subprocess.run(["cat", m.p(os.getpid(), "stat")], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0 and r.stdout.split()[0] == str(os.getpid()), (r, m.output())
    # each ring thread sets its ring up itself: a request may be served by the
    # first before the last is set up
    wait_for(lambda: rings(m.server_pid()) == 4 * possible_cpus(), 20,
             "every ring of the new server: %s" % m.output())


def test_a_connection_on_dev_fuse_stays_there_when_io_uring_is_allowed_later(allowed,
                                                                             mount_with):
    """The kernel lets a server register rings on a connection whose INIT chose /dev/fuse
    while enable_uring is Y, and refuses their commits (EOPNOTSUPP) once it is N: a server
    restarted after the switch went Y that took rings ended at the next switch, and its
    successors with it. The first server records what INIT chose beside the ring buffers
    (fs/transport/uring_slots.h): a later server keeps to /dev/fuse, whatever the switch
    says."""
    allowed(False)
    m = mount_with()
    assert not m.over_uring(), m.output()
    allowed(True)
    for _ in range(2):  # a restart, then a restart's restart
        server = m.server_pid()
        os.kill(server, 9)
        wait_for(lambda: m.server_pid() not in (server, m.proc.pid), 20, "a new server")
        same_as_proc(m)
        assert rings(m.server_pid()) == 0, m.output()
    allowed(False)
    same_as_proc(m)
    assert m.proc.poll() is None and "ending the server" not in m.output(), m.output()
