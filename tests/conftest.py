"""Shared fixtures: a real procfast mount, test processes, and tool runners.

Every test compares the mount with the real /proc, so the fixtures here only start
and stop things; they never decide what is "right".
"""
import ctypes
import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("PROCFAST_BIN", os.path.join(ROOT, "build", "procfast"))
HELPERS = os.environ.get("PROCFAST_HELPERS", os.path.join(os.path.dirname(BIN), "tests"))
# PROCFAST_WITHOUT=pidfs:pid_ioctl:...: every daemon the tests start behaves as on a kernel
# without those interfaces (-o without=, fs/lib/kernel_feature.h), to test the fallbacks here.
WITHOUT = os.environ.get("PROCFAST_WITHOUT", "")


def with_without(options):
    """options (-o values) with PROCFAST_WITHOUT's names added to their without=."""
    options = list(options)
    if not WITHOUT:
        return options
    for i, o in enumerate(options):
        if o.startswith("without="):
            options[i] = o + ":" + WITHOUT
            return options
    return options + ["without=" + WITHOUT]


def is_ns_helper(pid):
    """A server's maker of helper processes, or one of them (fs/caller/ns_helper.h): a
    process of the daemon's that is neither supervisor nor server."""
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip() == "procfast-nsh"
    except OSError:
        return False


class Mount:
    """One procfast daemon in the foreground (-f) on a fresh directory; `prefix` is a
    command that runs it (nsenter into a pid namespace, say)."""

    def __init__(self, options=(), prefix=(), binary=None):
        self.exit_status = 0  # what close() requires of the daemon
        self.path = tempfile.mkdtemp(prefix="procfast-test-")
        self.log = tempfile.NamedTemporaryFile(prefix="procfast-log-", delete=False)
        args = list(prefix) + [binary or BIN, "-f"]
        for o in with_without(options):
            args += ["-o", o]
        args.append(self.path)
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.time() + 20
        while not self._mounted():
            if self.proc.poll() is not None:
                raise RuntimeError("procfast exited %d: %s" % (self.proc.returncode, self.output()))
            if time.time() > deadline:
                self.close()
                raise RuntimeError("procfast did not mount: " + self.output())
            time.sleep(0.02)
        # Served once a listing returns: the start-up line is in the log by then.
        os.listdir(self.path)
        # The rings start after INIT (fs/transport/transport.c), and /dev/fuse serves until
        # they do: wait for the line that says which serves, so that tests know.
        while "once INIT accepts it" in self.output() and "serving through" not in self.output():
            if time.time() > deadline:
                self.close()
                raise RuntimeError("no transport settled: " + self.output())
            time.sleep(0.02)

    def server_pid(self):
        """The process that serves: the supervisor's child (see fs/supervisor/supervisor.c), or the
        daemon itself with -o norestart."""
        deadline = time.time() + 10
        while True:
            kids = [int(k) for k in open("/proc/%d/task/%d/children" % (
                self.proc.pid, self.proc.pid)).read().split() if not is_ns_helper(int(k))]
            if kids:
                return kids[0]
            if self.proc.poll() is not None or time.time() > deadline:
                return self.proc.pid
            time.sleep(0.02)

    def _mounted(self):
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == self.path for line in f)

    def _connection(self):
        """The FUSE connection number (the mount's minor device number)."""
        try:
            return os.minor(os.stat(self.path).st_dev)
        except OSError:
            return None

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def p(self, *parts):
        return os.path.join(self.path, *[str(x) for x in parts])

    def over_uring(self):
        """Whether the rings serve (fs/transport/transport.c logs it once they do)."""
        out = self.output()
        return "serving through io_uring" in out or " over io_uring, " in out

    def close(self):
        """Unmount, wait for the daemon, and fail on sanitizer reports or a bad exit."""
        conn = self._connection()
        if self._mounted():
            subprocess.run(["fusermount3", "-u", self.path], check=False,
                           stderr=subprocess.DEVNULL)
            if self._mounted():
                # Busy (a test still holds something): detach it, and if the
                # daemon then waits for the last user, abort the connection.
                subprocess.run(["umount", "-l", self.path], check=False)
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            # Still connected: the daemon waits for the last user of a detached
            # mount, so abort the connection. Already gone: there is nothing to
            # abort, the daemon is only slow to end (a loaded machine: an ASan
            # build's exit-time leak check took 8 s at load 7 on two CPUs).
            # A daemon that never ends is still killed, and fails below.
            if conn:
                try:
                    with open("/sys/fs/fuse/connections/%d/abort" % conn, "w") as f:
                        f.write("1")
                except FileNotFoundError:
                    pass
            try:
                rc = self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        out = self.output()
        os.unlink(self.log.name)
        try:
            os.rmdir(self.path)
        except OSError:
            pass
        bad = [m for m in ("AddressSanitizer", "runtime error:", "LeakSanitizer", "ThreadSanitizer")
               if m in out]
        assert not bad and rc == self.exit_status, "procfast exit %s, log:\n%s" % (rc, out[-4000:])


@pytest.fixture(scope="session")
def mnt():
    """The default mount (source=/proc), shared by the read-only tests."""
    m = Mount()
    yield m
    m.close()


@pytest.fixture(scope="module")
def kernel_layout_mnt():
    """A mount with the kernel's exact layout: threads' fd/, fdinfo/ and net/ are
    directories (-o nodedup). The default layout, where they link to the leader's, is
    compared in test_dedup.py."""
    m = Mount(["nodedup"])
    yield m
    m.close()


@pytest.fixture
def mount_with():
    """Factory for mounts with options; each is unmounted after the test."""
    made = []

    def make(*options):
        m = Mount(options)
        made.append(m)
        return m
    yield make
    for m in made:
        m.close()


def over_proc(mount, cmd, **kw):
    """Run a shell command in a private mount namespace with the mount bound over /proc."""
    script = "mount --bind %s /proc && exec %s" % (mount.path, cmd)
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120, **kw)


def on_proc(cmd, **kw):
    """The same command against the real /proc, for comparison."""
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120, **kw)


class Stepper:
    """A Python snippet run step by step: it prints an empty line when a step is done and
    waits for a line on stdin before the next. Use as a context manager."""

    def __init__(self, code):
        self.proc = subprocess.Popen(["/usr/bin/python3", "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.proc.stdout.readline()

    def step(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def stop_helper(proc, timeout):
    """Ends a helper that exits at stdin EOF: close its stdin, wait, kill if it lingers."""
    try:
        proc.stdin.close()
        if proc.poll() is None:
            proc.wait(timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        kill_tree(proc)
    proc.stdout.close()


def kill_tree(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()


class Victim:
    """A running build/tests/victim: threads plus one fd of every kind (see helpers/victim.c)."""

    def __init__(self, proc, info):
        self.proc = proc
        self.pid = info["pid"]
        self.tids = info["tids"]
        self.port = info["port"]
        self.unix_path = info["unix_path"]
        self.fds = info["fds"]

    def stop(self):
        """Close its stdin (it exits 0 and removes its files); kill it if it lingers."""
        stop_helper(self.proc, 10)
        return self.proc.returncode


def start_victim(*args):
    """Start build/tests/victim in its own session and wait for its JSON line."""
    proc = subprocess.Popen([os.path.join(HELPERS, "victim")] + [str(a) for a in args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    line = proc.stdout.readline()
    if not line:
        kill_tree(proc)
        raise RuntimeError("victim exited %s before reporting" % proc.returncode)
    v = Victim(proc, json.loads(line))
    # Its main thread still runs for a moment after the line (on a busy machine, long
    # enough for a tool to list it R, then S): tests compare its rows between runs.
    deadline = time.time() + 10
    while not all(task_state(v.pid, t) == "S" for t in v.tids):
        if time.time() > deadline:
            kill_tree(proc)
            raise RuntimeError("victim not asleep after 10 s")
        time.sleep(0.01)
    return v


def task_state(pid, tid):
    try:
        with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.fixture(scope="module")
def victim():
    """A victim with 4 extra threads, shared by a test module."""
    v = start_victim("--threads", 4)
    yield v
    v.stop()


def start_with_pid(pid, argv):
    """Starts argv as process `pid` (kernel.ns_last_pid), or returns None if another
    process took that pid first."""
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    p = subprocess.Popen(argv)
    if p.pid == pid:
        return p
    p.kill()
    p.wait()
    return None


LIBC = ctypes.CDLL(None, use_errno=True)
PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000


class ThreadsStopped:
    """Stops some threads of a process with ptrace while the others run on: the
    daemon's event threads (pf-events, pf-notify), to make a late event as late as
    a test needs."""

    def __init__(self, pid, names):
        task = "/proc/%d/task" % pid
        self.tids = [int(t) for t in os.listdir(task)
                     if open(os.path.join(task, t, "comm")).read().strip() in names]
        assert len(self.tids) == len(names), "threads %s of %d" % (names, pid)

    def __enter__(self):
        for tid in self.tids:
            assert LIBC.ptrace(PTRACE_SEIZE, tid, None, None) == 0, os.strerror(ctypes.get_errno())
            assert LIBC.ptrace(PTRACE_INTERRUPT, tid, None, None) == 0
            os.waitpid(tid, WALL)
        return self

    def __exit__(self, *exc):
        for tid in self.tids:
            LIBC.ptrace(PTRACE_DETACH, tid, None, None)
