"""Requests made while an upgrade stops one server and starts the next are all answered
(fs/transport/drain.c, fs/transport/uring_slots.h). Readers open, read and close a
process's stat through the mount without a pause while SIGHUP upgrades the daemon three
times. Over io_uring the kernel may hand a request to the stopping server's ring entries
until its rings are closed: it writes the request into the entry's buffers, which the
supervisor holds in a memfd and hands on to the next supervisor, whose server answers
it. Before, the supervisor's own mount kept them in anonymous memory, lost at the
upgrade's exec: such a request (a reader's FLUSH at its exit, 1 upgrade in 25 of
test_interrupt.py's beside a CPU hog) then waited for ever."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

from lib.fuse_conn import run_reading
from lib.waiting import wait_for

UPGRADES = 3
# Loops until the file "stop" beside argv[2] exists; prints the reads and the errnos.
READER = r"""
import errno, json, os, sys
path, stop = sys.argv[1], sys.argv[2]
want = open(sys.argv[3]).read().split()[:2]
reads, errors = 0, {}
while not os.path.exists(stop):
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            got = os.read(fd, 4096).decode().split()[:2]
        finally:
            os.close(fd)
        assert got == want, (got, want)
        reads += 1
    except OSError as e:
        errors[errno.errorcode[e.errno]] = errors.get(errno.errorcode[e.errno], 0) + 1
print(json.dumps({"reads": reads, "errors": errors}))
"""


def served_again(m):
    return m.output().count("serving again: ")


def upgrade(m):
    old, before = m.server_pid(), served_again(m)
    m.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: served_again(m) > before and m.server_pid() not in (old, m.proc.pid), 30,
             "the server after an upgrade")


def test_requests_across_upgrades_are_answered(over_each, tmp_path):
    sleeper = subprocess.Popen(["sleep", "300"])
    stop = tmp_path / "stop"
    target = over_each.p(sleeper.pid, "stat")
    readers = []
    try:
        results = [None] * 4

        def read(i):  # a reader that waits for ever fails with what it waits on
            try:
                results[i] = run_reading([sys.executable, "-c", READER, target, str(stop),
                                          "/proc/%d/stat" % sleeper.pid], over_each.path, 120,
                                         os.getpgid(over_each.proc.pid))
            except AssertionError as e:
                results[i] = e
        readers = [threading.Thread(target=read, args=(i,)) for i in range(len(results))]
        for t in readers:
            t.start()
        time.sleep(0.3)
        for _ in range(UPGRADES):
            upgrade(over_each)
            time.sleep(0.2)
        stop.touch()
        for t in readers:
            t.join()
    finally:
        stop.touch()
        for t in readers:
            t.join()
        sleeper.kill()
        sleeper.wait()
    for r in results:
        assert isinstance(r, subprocess.CompletedProcess) and r.returncode == 0, (
            r, over_each.output())
        got = json.loads(r.stdout)
        assert got["reads"] > 0 and got["errors"] == {}, (got, over_each.output())
    assert over_each.output().count("upgrading: executing") == UPGRADES
