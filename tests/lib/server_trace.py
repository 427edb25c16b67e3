"""What a mount's server asks of its source while a test acts: strace -f on every
thread of the server, for the calls named (the source operations of a request)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest


def _tracer_of(pid, tid):
    try:
        with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
            return int(f.read().split("TracerPid:")[1].split()[0])
    except (FileNotFoundError, ProcessLookupError):  # gone before or during the read
        return None     # a worker that ended


def server_trace(m, fn, calls):
    """fn() run while strace -f watches every thread of m's server: the lines of the
    calls made, in strace's format ("TID name(args) = result")."""
    if not shutil.which("strace"):
        pytest.skip("strace is not installed")
    server = m.server_pid()
    tids = os.listdir("/proc/%d/task" % server)
    with tempfile.NamedTemporaryFile(prefix="procfast-strace-") as out:
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=" + ",".join(calls),
                                   "-o", out.name, "-p", ",".join(tids)],
                                  stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 20
            while any(_tracer_of(server, t) not in (tracer.pid, None) for t in tids):
                assert tracer.poll() is None and time.time() < deadline, "strace did not attach"
                time.sleep(0.02)
            fn()
        finally:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=30)
        with open(out.name) as f:
            pattern = re.compile(r"\d+ +(%s)\(" % "|".join(calls))
            return [line for line in f if pattern.match(line)]


def server_calls(m, fn, calls=("readlinkat", "getdents64")):
    """How many of `calls` m's server made while fn() ran."""
    return len(server_trace(m, fn, calls))
