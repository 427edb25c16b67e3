"""The mount outlives its server (fs/supervisor/supervisor.c): a server killed with SIGKILL is
replaced on the same FUSE connection, and binds of the mount in other mount namespaces
work again without ENOTCONN. What a restart costs is documented: handles opened before
it answer ESTALE, new lookups work."""
import contextlib
import ctypes
import errno
import os
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from lib.build import BIN
from lib.fuse_conn import run_reading
from lib.kernel import has_fuse_passthrough
from lib.kmsg_request import killed_with_a_request_taken, reading_kmsg
from lib.mount import Mount, is_ns_helper
from lib.procs import Stepper, kill_tree, task_state
from lib.waiting import wait_for

SYS_PIDFD_GETFD = 438


def new_server(m, old, timeout=10):
    deadline = time.time() + timeout
    while True:
        pid = m.server_pid()
        if pid != old and pid != m.proc.pid:
            return pid
        assert time.time() < deadline, "no new server:\n" + m.output()
        time.sleep(0.02)


def gone(pid, timeout=10):
    """Until the process is reaped: a zombie leader may still have threads that take
    requests (and whose requests then end with ECONNABORTED, see supervisor.c)."""
    deadline = time.time() + timeout
    while os.path.exists("/proc/%d" % pid):
        assert time.time() < deadline, "process %d still there" % pid
        time.sleep(0.02)


def all_stopped(pid, timeout=10):
    """Until every thread of pid is stopped (SIGSTOP acts on each thread in turn)."""
    deadline = time.time() + timeout
    while True:
        states = []
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                states.append(open("/proc/%d/task/%s/stat" % (pid, t)).read().split(") ")[1][0])
            except OSError:
                pass
        if states and all(st == "T" for st in states):
            return
        assert time.time() < deadline, "threads of %d not stopped: %s" % (pid, states)
        time.sleep(0.01)


BOUND = r'''
import os, sys
# this process lives in its own mount namespace where the mount is bound over /proc
print(flush=True)
while sys.stdin.readline():
    # the answer is printed after close(): its FLUSH is a request too
    try:
        with open("/proc/self/stat") as f:
            answer = f.read().split()[0] == str(os.getpid())
    except OSError as e:
        answer = "errno %d" % e.errno
    print(answer, flush=True)
'''


def bound_elsewhere(m):
    """A process in its own mount namespace with the mount bound over /proc, and a
    function that has it read /proc/self/stat: "True" when that names it."""
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                          "mount --bind %s /proc && exec /usr/bin/python3 -c '%s'" % (m.path, BOUND)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    assert p.stdout.readline() == "\n"

    def ask():
        p.stdin.write("go\n")
        p.stdin.flush()
        return p.stdout.readline().strip()
    return p, ask


def answered_again(m, ask, served, cancelled):
    """Asks until ask() gives served, from the next server. Over io_uring a request made in
    the few ms after a server's death, while the kernel lets its rings go, ends with
    ECANCELED (fs/fuse/dev_uring.c, fuse_uring_send_in_task; README, "Transport"): that,
    cancelled, and nothing else may come before."""
    deadline = time.time() + 10
    while True:
        got = ask()
        if got == served:
            return
        assert m.over_uring() and got == cancelled, got
        assert time.time() < deadline, "still ECANCELED after 10 s"
        time.sleep(0.01)


def test_sigkill_server_bind_in_other_namespace_answers_again(mount_with):
    m = mount_with()
    server = m.server_pid()
    p, ask = bound_elsewhere(m)
    try:
        assert ask() == "True"
        os.kill(server, signal.SIGKILL)
        gone(server)
        answered_again(m, ask, "True", "errno %d" % errno.ECANCELED)
        # the real tools in that namespace too
        r = subprocess.run(["nsenter", "-t", str(p.pid), "-m", "ps", "-p", str(p.pid), "-o",
                            "pid="], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout.split() == [str(p.pid)], r
        assert "server %d killed by signal 9" % server in m.output()
        assert "serving again" in m.output()
        new = new_server(m, server)
        assert new != server
    finally:
        kill_tree(p)


def zombie(pid, timeout=10):
    """Until pid has exited, every thread of it: a zombie its parent has not waited for
    yet (a leader is a zombie as soon as it exited, while other threads may still be
    exiting)."""
    deadline = time.time() + timeout
    while True:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().split(") ")[1][0] == "Z" and os.listdir("/proc/%d/task" % pid) == [str(pid)]:
                return
        assert time.time() < deadline, "process %d did not exit" % pid
        time.sleep(0.01)


def read_own_stat(m, result):
    try:
        with open(m.p("self", "stat")) as f:
            result["pid"] = f.read().split()[0]
    except OSError as e:
        result["errno"] = e.errno


def own_stat(m):
    result = {}
    read_own_stat(m, result)
    return result


def test_requests_made_while_no_server_runs_are_served_by_the_next(mount_with):
    """A request made while no server runs waits in the kernel's queue and is answered by
    the next server: no error at all. Over io_uring it waits on its CPU's queue, which
    hands requests out only as an entry commits: the next server wakes each queue."""
    m = mount_with()
    server = m.server_pid()
    os.kill(m.proc.pid, signal.SIGSTOP)  # the supervisor starts no server meanwhile
    try:
        os.kill(server, signal.SIGKILL)
        zombie(server)
        # Over io_uring the kernel lets the dead server's rings go in a worker after its
        # threads exited: a request handed to one of their entries meanwhile ends with
        # ECANCELED (README "Transport"), and one made after it waits.
        for _ in range(50):
            result = {}
            t = threading.Thread(target=read_own_stat, args=(m, result))
            t.start()
            time.sleep(0.3)
            if t.is_alive() or not (m.over_uring() and result == {"errno": errno.ECANCELED}):
                break
        assert t.is_alive(), "request answered while no server runs? %s" % result
    finally:
        os.kill(m.proc.pid, signal.SIGCONT)
    t.join(20)
    assert not t.is_alive(), "request never answered:\n" + m.output()
    assert result == {"pid": str(os.getpid())}, result


def test_a_request_held_by_a_stopped_server(mount_with):
    """A request made while the server is stopped: over /dev/fuse nobody reads it, and the
    next server answers it with no error. Over io_uring the kernel hands it to a stopped
    thread's ring at once; when that thread is killed the kernel ends the request with
    ECANCELED (fs/fuse/dev_uring.c, fuse_uring_send_in_task): nothing of it reaches the
    next server."""
    m = mount_with()
    server = m.server_pid()
    result = {}
    os.kill(server, signal.SIGSTOP)   # no request is taken from now on
    all_stopped(server)
    t = threading.Thread(target=read_own_stat, args=(m, result))
    t.start()
    time.sleep(0.3)
    assert t.is_alive(), "request answered by a stopped server?"
    os.kill(server, signal.SIGKILL)
    t.join(20)
    assert not t.is_alive(), "request never answered"
    if m.over_uring():
        assert result == {"errno": errno.ECANCELED}, result
    else:
        assert result == {"pid": str(os.getpid())}, result
    # Then the next server answers. Over io_uring a request made in the few ms around
    # the death, while the kernel still takes the dead rings' entries back, may end
    # ECANCELED too (measured: at most one, within 5 ms of the reap).
    gone(server)

    answered_again(m, lambda: own_stat(m), {"pid": str(os.getpid())}, {"errno": errno.ECANCELED})


def test_a_request_a_killed_server_had_taken_ends_with_econnaborted(mount_with):
    """A request the server took and never answered: the server is killed, and the request
    ends with ECONNABORTED, as any FUSE server's death ends it, not hanging for ever;
    the next server serves. Over io_uring the kernel keeps it in the ring entry the
    dead server took it from, and the next server finds it in the buffers they share
    and ends it (fs/transport/uring.c)."""
    m = mount_with()
    server = m.server_pid()
    uring = m.over_uring()
    assert killed_with_a_request_taken(m.path, server) == {"errno": errno.ECONNABORTED}
    new_server(m, server)

    answered_again(m, lambda: own_stat(m), {"pid": str(os.getpid())}, {"errno": errno.ECANCELED})
    assert ("taken by a server that died" in m.output()) == uring, m.output()


def test_handles_from_before_answer_estale_and_new_opens_work(mount_with):
    m = mount_with()
    server = m.server_pid()
    f = open(m.p("self", "status"), "rb", buffering=0)
    d = os.open(m.p(1), os.O_RDONLY | os.O_DIRECTORY)
    root = os.open(m.path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert f.read(5) == b"Name:"
        os.kill(server, signal.SIGKILL)
        gone(server)
        new_server(m, server)
        with pytest.raises(OSError) as e:
            f.read(10)
        assert e.value.errno == errno.ESTALE
        with pytest.raises(OSError) as e:
            os.listdir(d)
        assert e.value.errno == errno.ESTALE
        # the root needs no handle state: listing through the old handle still works
        assert "1" in os.listdir(root)
        # paths are looked up again: same names, same contents as /proc
        with open(m.p(1, "stat")) as a, open("/proc/1/stat") as b:
            assert a.read().split()[:5] == b.read().split()[:5]
        assert sorted(os.listdir(m.p(1))) == sorted(os.listdir("/proc/1"))
    finally:
        f.close()
        os.close(d)
        os.close(root)


def test_an_owner_cached_before_a_killed_server_follows_its_uid(mount_with):
    """The kernel keeps a live process's names and their owner until an event says they
    changed (tests/index/test_index.py, test_task_files_cached_until_an_event). A killed
    server leaves no node table: the next never saw those names and its events dropped
    none of them, so a uid change went unseen for a day. The next server drops the
    names of the processes that live."""
    code = ("import ctypes, os, sys\n"
            "print(flush=True); sys.stdin.readline()\n"
            "os.setresuid(65534, 65534, 65534)\n"  # an event; the files root's (not dumpable)
            "ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"  # PR_SET_DUMPABLE: now 65534's
            "print(flush=True); sys.stdin.readline()\n")
    m = mount_with()
    with Stepper(code) as p:
        real, path = "/proc/%d/environ" % p.pid, m.p(p.pid, "environ")
        assert str(p.pid) in os.listdir(m.path)  # indexed: its names are cached
        assert os.stat(path).st_uid == os.stat(os.path.dirname(path)).st_uid == 0
        server = m.server_pid()
        os.kill(server, signal.SIGKILL)
        gone(server)
        new_server(m, server)
        p.step()
        assert os.stat(real).st_uid == 65534
        wait_for(lambda: os.stat(path).st_uid == os.stat(os.path.dirname(path)).st_uid == 65534,
                 10, "the owner after the uid change, through the server after the killed one")


def test_handles_on_the_names_beside_the_pids_read_on(mount_with):
    """The names beside the PIDs keep their node ids across a restart (fixed ids), so a
    reader holding meminfo, stat or a sys directory open (top, procps's library) reads
    on: its handle is opened again at its first use. A handle of the server before is
    never taken for one of this server's (that crashed it)."""
    m = mount_with()
    server = m.server_pid()
    meminfo = os.open(m.p("meminfo"), os.O_RDONLY)
    stat = os.open(m.p("stat"), os.O_RDONLY)
    sysdir = os.open(m.p("sys"), os.O_RDONLY | os.O_DIRECTORY)
    unused = [os.open(m.p("uptime"), os.O_RDONLY),
              os.open(m.p("fs"), os.O_RDONLY | os.O_DIRECTORY)]
    try:
        assert os.pread(meminfo, 9, 0) == b"MemTotal:"
        os.kill(server, signal.SIGKILL)
        gone(server)
        again = new_server(m, server)
        for fd in unused:  # released without a use: nothing of them is touched
            os.close(fd)
        unused = []

        def names(text):
            return [line.split()[0] for line in text.splitlines()]
        with open("/proc/meminfo") as real:
            assert names(os.pread(meminfo, 1 << 16, 0).decode()) == names(real.read())
        with open("/proc/stat") as real:
            assert names(os.pread(stat, 1 << 16, 0).decode()) == names(real.read())
        assert sorted(os.listdir(sysdir)) == sorted(os.listdir("/proc/sys"))
        assert os.pread(meminfo, 9, 0) == b"MemTotal:"  # and on, adopted
        assert m.server_pid() == again
        assert m.output().count("killed by signal") == 1, m.output()
    finally:
        for fd in [meminfo, stat, sysdir] + unused:
            os.close(fd)


def test_sigterm_to_the_supervisor_unmounts():
    m = Mount()
    server = m.server_pid()
    m.proc.send_signal(signal.SIGTERM)
    assert m.proc.wait(timeout=10) == 0, m.output()
    gone(server)
    assert not m._mounted()
    m.close()


def kill_servers(m, n):
    """Kills n servers of m, each once it serves: the last one's pid."""
    last = None
    for _ in range(n):
        pid = new_server(m, last)
        os.kill(pid, signal.SIGKILL)
        gone(pid)
        last = pid
    return last


@contextlib.contextmanager
def mount_to_give_up():
    """A mount whose supervisor may give it up: ended, whatever the test found."""
    m = Mount()
    try:
        yield m
    finally:
        if m.proc.poll() is None:
            m.proc.kill()
        if m._mounted():
            subprocess.run(["umount", "-l", m.path])
        os.rmdir(m.path)
        os.unlink(m.log.name)


def test_a_server_that_keeps_dying_ends_the_mount():
    """Five deaths within ten seconds: restarting would not help; the supervisor unmounts
    and exits 1 instead of looping."""
    with mount_to_give_up() as m:
        kill_servers(m, 5)
        assert m.proc.wait(timeout=10) == 1
        assert "servers keep dying" in m.output()
        assert not m._mounted()


def session_fd_copies(pid):
    """Copies of pid's /dev/fuse fds (pidfd_getfd): while one is open the kernel keeps
    their connection."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    copies = []
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "/dev/fuse":
                copy = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(fd), 0)
                assert copy >= 0, os.strerror(ctypes.get_errno())
                copies.append(copy)
    finally:
        os.close(pidfd)
    return copies


def pread_into(fd, result):
    try:
        result["data"] = os.pread(fd, 4096, 0)
    except OSError as e:
        result["errno"] = e.errno


def stopped_dead(pid, timeout=10):
    """Until pid is a zombie: dead, and not reaped by its stopped parent."""
    deadline = time.time() + timeout
    while open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.time() < deadline, "process %d still alive" % pid
        time.sleep(0.01)


def open_once_served(path, uring, timeout=10):
    """os.open(path) on a mount whose last server died an instant ago: over io_uring an
    open made in the few ms in which the kernel lets the dead server's rings go ends
    with ECANCELED (README, "Transport"); that, and nothing else, may come first."""
    deadline = time.time() + timeout
    while True:
        try:
            return os.open(path, os.O_RDONLY)
        except OSError as e:
            if not uring or e.errno != errno.ECANCELED:
                raise
            assert time.time() < deadline, "still ECANCELED after %d s" % timeout
            time.sleep(0.01)


def waiting_read(handle, uring, threads, timeout=10):
    """A pread of handle made while no server runs, which must wait (its thread added to
    threads); its outcome, once it ends. Over io_uring one made while the kernel still
    lets the dead server's rings go ends with ECANCELED (README, "Transport"): a few ms
    on an idle machine, over 0.3 s once beside a CPU hog; it is made again."""
    deadline = time.time() + timeout
    while True:
        queued = {}
        t = threading.Thread(target=pread_into, args=(handle, queued))
        t.start()
        time.sleep(0.3)
        if t.is_alive():
            threads.append(t)
            return queued
        t.join()
        assert uring and queued.get("errno") == errno.ECANCELED, ("answered with no server", queued)
        assert time.time() < deadline, "still ECANCELED after %d s" % timeout


def requests_held_when_given_up(path, supervisor, server, given_up, uring):
    """The two requests a mount holds as its supervisor gives it up: a read server took
    before it was killed, and a read made while no server ran (the supervisor stopped,
    so that none comes before it gives up). A copy of the supervisor's session fds keeps
    the connection meanwhile, as the kernel kept one that used io_uring (see
    fs/transport/fuse_conn.c). given_up() returns once the supervisor gave the mount up.
    The reads' outcomes, once both ended. The server before `server` died just now."""
    copies, threads, handle, stopped = session_fd_copies(supervisor), [], None, False
    try:
        assert copies, "the supervisor holds no /dev/fuse"
        handle = open_once_served(os.path.join(path, str(os.getpid()), "stat"), uring)
        taken_thread, taken = reading_kmsg(path, server)
        threads.append(taken_thread)
        os.kill(supervisor, signal.SIGSTOP)
        stopped = True
        os.kill(server, signal.SIGKILL)
        stopped_dead(server)
        queued = waiting_read(handle, uring, threads)
        os.kill(supervisor, signal.SIGCONT)
        stopped = False
        given_up()
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads), ("still waiting", taken, queued)
        return taken, queued
    finally:
        for fd in copies:  # ends the connection, whatever the test found
            os.close(fd)
        if stopped:
            os.kill(supervisor, signal.SIGCONT)
        if handle is not None:
            try:
                os.close(handle)  # its FLUSH meets the aborted connection
            except OSError:
                pass
        for t in threads:
            t.join(20)


def assert_ended(taken, queued, uring):
    """Both with ECONNABORTED, as a dead server's requests end over /dev/fuse; over
    io_uring the kernel ends one a ring entry held with ENOTCONN at the abort."""
    ended = (errno.ECONNABORTED, errno.ENOTCONN) if uring else (errno.ECONNABORTED,)
    assert taken.get("errno") in ended, (taken, queued)
    assert queued == {"errno": errno.ECONNABORTED}, (taken, queued)


def test_a_mount_given_up_ends_every_request_it_holds():
    """The mount given up after five deaths ends what it holds, even where its
    connection outlives the supervisor's fds: the supervisor aborts it first."""
    with mount_to_give_up() as m:
        server = new_server(m, kill_servers(m, 4))
        uring = m.over_uring()
        taken, queued = requests_held_when_given_up(
            m.path, m.proc.pid, server, lambda: m.proc.wait(timeout=10), uring)
        assert m.proc.returncode == 1, m.output()
        assert_ended(taken, queued, uring)
        assert "aborted FUSE connection" in m.output(), m.output()


def test_norestart_fails_fast(mount_with):
    """Without the supervisor a killed daemon leaves a dead mount that answers ENOTCONN at
    once (no hang), as any FUSE mount. Over io_uring the kernel lets the dead daemon's
    rings go in a worker after it was reaped, and /dev/fuse with them: a request made
    before that ends with ECONNABORTED, when the connection is aborted."""
    m = mount_with("norestart")
    assert m.server_pid() == m.proc.pid
    uring = m.over_uring()
    m.proc.kill()
    m.proc.wait()
    deadline = time.time() + 10
    while True:
        r = subprocess.run(["stat", m.p("self")], capture_output=True, text=True, timeout=10)
        assert r.returncode != 0, r
        if "not connected" in r.stderr:
            break
        assert uring and "connection abort" in r.stderr, r
        assert time.time() < deadline, r
        time.sleep(0.05)
    subprocess.run(["umount", "-l", m.path], check=True)
    m.proc = subprocess.Popen(["true"])  # close() expects a process that exits 0


def test_sighup_upgrades_to_the_binary_now_installed(tmp_path):
    """A package upgrade replaces the binary, then SIGHUP: the supervisor executes the new
    file under the same pid, keeps the connection, and a bind in another mount namespace
    answers throughout."""
    exe = tmp_path / "procfast"
    subprocess.run(["cp", BIN, str(exe)], check=True)
    m = Mount(binary=str(exe))
    p, ask = bound_elsewhere(m)
    try:
        assert ask() == "True"
        old_server = m.server_pid()
        # dpkg's way: write the new file beside the old, rename it over
        subprocess.run(["cp", BIN, str(exe) + ".new"], check=True)
        os.rename(str(exe) + ".new", str(exe))
        new_inode = os.stat(str(exe)).st_ino
        m.proc.send_signal(signal.SIGHUP)
        gone(old_server)
        deadline = time.time() + 10
        while os.stat("/proc/%d/exe" % m.proc.pid).st_ino != new_inode:
            assert time.time() < deadline, "supervisor not upgraded:\n" + m.output()
            time.sleep(0.05)
        assert ask() == "True"
        assert "upgrading: executing %s" % exe in m.output()
        assert new_server(m, old_server) != old_server
    finally:
        kill_tree(p)
        m.close()


def test_files_held_open_read_on_across_an_upgrade(tmp_path):
    """An upgrade stops its server by draining: the server leaves its node table to the
    next (cache/nodes/node_record.h), so files and directories of a process held open from
    before (an agent's pread loop on PID/stat, a listing of PID/task) read on, as
    /proc gives them, instead of ESTALE as after a crash
    (test_handles_from_before_answer_estale_and_new_opens_work)."""
    exe = tmp_path / "procfast"
    subprocess.run(["cp", BIN, str(exe)], check=True)
    m = Mount(binary=str(exe))
    me = str(os.getpid())
    held = {name: os.open(m.p(me, name), os.O_RDONLY) for name in ("stat", "status", "task", "fdinfo")}
    kids = [subprocess.Popen(["sleep", "60"]) for _ in range(3)]
    for k in kids:  # the command line reads empty in the instant of the execve
        deadline = time.time() + 10
        while open("/proc/%d/cmdline" % k.pid, "rb").read() != b"sleep\x0060\x00":
            assert time.time() < deadline, "sleep not started"
            time.sleep(0.01)
    held.update({"child %d" % k.pid: os.open(m.p(k.pid, "cmdline"), os.O_RDONLY) for k in kids})

    def read(name, fd):
        if name in ("task", "fdinfo"):
            return sorted(os.listdir(fd))
        return os.pread(fd, 1 << 16, 0).split()[:3]

    def real(name):
        if name.startswith("child "):
            with open("/proc/%s/cmdline" % name.split()[1], "rb") as f:
                return f.read().split()[:3]
        if name in ("task", "fdinfo"):
            return sorted(os.listdir("/proc/%s/%s" % (me, name)))
        with open("/proc/%s/%s" % (me, name), "rb") as f:
            return f.read().split()[:3]
    try:
        before = {name: read(name, fd) for name, fd in held.items()}
        old_server = m.server_pid()
        m.proc.send_signal(signal.SIGHUP)
        gone(old_server)
        new_server(m, old_server)
        for name, fd in held.items():
            got = read(name, fd)
            if name in ("task", "fdinfo"):  # what this process holds may change
                assert got == real(name), name
            else:
                assert got == before[name] == real(name), name
        assert "upgrading: executing" in m.output()
    finally:
        for fd in held.values():
            os.close(fd)
        for k in kids:
            k.kill()
            k.wait()
        m.close()


class SlowCgroup:
    """A cgroup whose tasks get 1% of a CPU (v1's cpu controller here, v2's cpu.max in
    the guest): what they do takes a hundred times longer, so that a step of theirs can
    be caught before the next."""

    def __init__(self):
        name = "procfast-slow-%d" % os.getpid()
        if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            self.path = os.path.join("/sys/fs/cgroup", name)
            os.mkdir(self.path)
            self.limit, self.free = ("cpu.max", "1000 100000"), ("cpu.max", "max 100000")
        else:
            self.path = os.path.join("/sys/fs/cgroup/cpu", name)
            os.mkdir(self.path)
            self.limit, self.free = ("cpu.cfs_quota_us", "1000"), ("cpu.cfs_quota_us", "-1")
        self.set(*self.limit)

    def set(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def run(self, argv, **kw):
        return subprocess.Popen(["sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % self.path,
                                 "sh"] + argv, **kw)

    def release(self):
        self.set(*self.free)

    def close(self):
        self.release()
        deadline = time.time() + 30
        while True:
            try:
                os.rmdir(self.path)
                return
            except OSError:
                assert time.time() < deadline, "cgroup %s still in use" % self.path
                time.sleep(0.05)


def blocks_sighup(pid):
    """Whether pid blocks SIGHUP: the supervisor does from the start of its loop."""
    with open("/proc/%d/status" % pid) as f:
        mask = [l for l in f if l.startswith("SigBlk:")][0].split()[1]
    return int(mask, 16) & (1 << (signal.SIGHUP - 1)) != 0


OWN_STAT = "import os, sys; print(open(sys.argv[1]).read().split()[0] == str(os.getpid()))"


def test_an_upgrade_before_the_first_server_answered_init(tmp_path):
    """SIGHUP as soon as the supervisor handles it, while its first server (slowed to 1%
    of a CPU) has not yet answered the kernel's INIT: the supervisor executed next must
    start a first server, which answers that INIT, not a resumed one (which the kernel
    would never see answer it: every request would wait, or be refused). The mount then
    serves."""
    path = str(tmp_path / "mnt")
    os.mkdir(path)
    slow = SlowCgroup()
    log = tempfile.TemporaryFile()
    p = None
    try:
        p = slow.run([BIN, "-f", path], stdout=log, stderr=subprocess.STDOUT,
                     start_new_session=True)
        deadline = time.time() + 120
        while not blocks_sighup(p.pid):
            assert p.poll() is None and time.time() < deadline, "supervisor not started"
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGHUP)
        while True:  # the upgraded supervisor executed (same pid, new command)
            log.seek(0)
            if b"upgrading: executing" in log.read():
                break
            assert p.poll() is None and time.time() < deadline, "no upgrade"
            time.sleep(0.05)
        slow.release()
        # in a process of its own: on a connection whose INIT went unanswered it waits
        r = run_reading(["/usr/bin/python3", "-c", OWN_STAT, os.path.join(path, "self", "stat")],
                        path, 60, daemon_pgid=p.pid)
        log.seek(0)
        out = log.read().decode(errors="replace")
        assert r.stdout == "True\n", "%r %s\n%s" % (r.stdout, r.stderr[-300:], out)
        last_start = [l for l in out.splitlines() if "mirroring /proc" in l][-1]
        assert not last_start.startswith("procfast: serving again"), out
    finally:
        if p is not None:
            subprocess.run(["umount", "-l", path], check=False)
            os.killpg(p.pid, signal.SIGKILL)  # the supervisor and its servers
            p.wait(timeout=60)
        slow.close()


def running(pid):
    """Neither gone nor a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped before or during the read
        return False


def parent_of(pid):
    """pid's parent, or None once pid is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().split(") ")[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):  # reaped before or during the read
        return None


def test_an_upgrade_in_the_background_keeps_its_pid(tmp_path):
    """A daemon started in the background (no -f) upgrades under its pid too: the new
    binary does not go to the background again, which would fork."""
    exe = tmp_path / "procfast"
    path = tempfile.mkdtemp(prefix="procfast-test-")  # tests/run unmounts what is left there
    subprocess.run(["cp", BIN, str(exe)], check=True)
    r = subprocess.run([str(exe), str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    try:
        out = subprocess.run(["pgrep", "-f", "^%s %s$" % (exe, path)], capture_output=True,
                             text=True).stdout.split()
        # a process pgrep saw may be gone by now (a helper of the daemon's that ended)
        parents = {p: parent_of(p) for p in (int(p) for p in out) if not is_ns_helper(p)}
        pids = [p for p, parent in parents.items() if parent is not None]
        supervisor = [p for p in pids if parents[p] not in pids]
        assert len(supervisor) == 1, pids
        subprocess.run(["cp", BIN, str(exe) + ".new"], check=True)
        os.rename(str(exe) + ".new", str(exe))
        new_inode = os.stat(str(exe)).st_ino
        os.kill(supervisor[0], signal.SIGHUP)
        deadline = time.time() + 10
        while os.stat("/proc/%d/exe" % supervisor[0]).st_ino != new_inode:
            assert time.time() < deadline, "supervisor not upgraded under its pid"
            time.sleep(0.05)
        with open(os.path.join(str(path), "self", "stat")) as f:
            assert f.read().split()[0] == str(os.getpid())
        # served, so the upgraded supervisor is set up: by then a fork would have left
        with open("/proc/%d/task/%d/children" % (supervisor[0], supervisor[0])) as f:
            assert [int(p) for p in f.read().split() if not is_ns_helper(int(p))], \
                "the supervisor's pid serves nothing after the upgrade"
    finally:
        # lazily if busy: the upgraded server's kickers may still be in a statx of the
        # root (fs/transport/uring.c), which a loaded machine runs late
        if subprocess.run(["umount", str(path)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(path)], check=False)
    try:
        deadline = time.time() + 30
        while any(running(p) for p in pids):
            assert time.time() < deadline, "daemon still running after unmount"
            time.sleep(0.05)
    finally:
        # whatever still runs our copy of the binary, and the mount if it is still
        # there: nothing of this test outlives it
        for p in os.listdir("/proc"):
            try:
                if p.isdigit() and os.readlink("/proc/%s/exe" % p).startswith(str(exe)):
                    os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass
        subprocess.run(["umount", "-l", path], capture_output=True)
        os.rmdir(path)


def test_mounts_on_names_beside_the_pids_stay(mount_with, tmp_path):
    """A container runtime's masks are mounts on the view's names (a read-only bind over
    sys, /dev/null over keys). The names beside the pids keep their node ids in the next
    server, so the kernel, looking them up again once their entries expired, keeps them
    and the mounts on them."""
    m = mount_with("entry_timeout=0.2", "attr_timeout=0.2")
    script = ("mount -t tmpfs masked {m}/sys && mount --bind /dev/null {m}/keys && "
              "echo ready && read line && stat {m}/sys {m}/keys >/dev/null && "
              "cat /proc/self/mountinfo")
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                          script.format(m=m.path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        server = m.server_pid()
        os.kill(server, signal.SIGKILL)
        killed = time.monotonic()
        gone(server)
        new_server(m, server)
        # the kernel asks the new server about a name once its entry expired
        while time.monotonic() < killed + 0.3:
            time.sleep(0.05)
        out, _ = p.communicate("go\n", timeout=30)
        below = sorted(l.split()[4] for l in out.splitlines()
                       if l.split()[4].startswith(m.path + "/"))
        assert below == [m.path + "/keys", m.path + "/sys"], out
    finally:
        if p.poll() is None:
            kill_tree(p)


@pytest.mark.skipif(not has_fuse_passthrough(), reason="-o snapshot needs Linux 6.9+")
@pytest.mark.parametrize("how", ["killed", "upgraded"])
def test_snapshots_held_open_across_a_restart(mount_with, how):
    """-o snapshot: the kernel reads a snapshot held open across a restart by itself
    (no request). A server killed leaves no node record: the kernel's ids are unknown
    to the next (ESTALE), which makes it look the names up again. An upgrade hands its
    nodes over, and the new server cannot tell which of them the kernel holds open as
    snapshots: it moves every open of them to a new inode (the kernel would fail an
    open of a file with a snapshot open, EIO). Either way, opens work as before."""
    m = mount_with("snapshot")
    server = m.server_pid()
    sleeper = subprocess.Popen(["sleep", "1000"])
    try:
        wait_for(lambda: task_state(sleeper.pid, sleeper.pid) == "S", 10, "the sleeper asleep")
        held = os.open(m.p(sleeper.pid, "stat"), os.O_RDONLY)
        first = os.pread(held, 4096, 0)
        assert first == open("/proc/%d/stat" % sleeper.pid, "rb").read()
        if how == "killed":
            os.kill(server, signal.SIGKILL)
        else:
            m.proc.send_signal(signal.SIGHUP)
        gone(server)
        new_server(m, server)
        assert os.pread(held, 4096, 0) == first
        for _ in range(3):  # while it is held, opens of the same name, read or write
            with open(m.p(sleeper.pid, "stat"), "rb") as f:
                assert f.read() == first
        with open(m.p(sleeper.pid, "oom_score_adj"), "r+b", buffering=0) as f:
            f.write(b"321")
        assert open("/proc/%d/oom_score_adj" % sleeper.pid).read() == "321\n"
        os.close(held)
        assert "snapshot: off until the next mount" in m.output(), m.output()
        assert ("took" in m.output() and "nodes over" in m.output()) == (how == "upgraded")
    finally:
        sleeper.kill()
        sleeper.wait()
