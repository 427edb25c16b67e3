"""Test processes: a stepped snippet, the victim helper, a process at a chosen pid,
and threads of a process stopped with ptrace."""
import ctypes
import json
import os
import signal
import subprocess
import time

from lib.build import HELPERS


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
