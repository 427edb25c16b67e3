"""Directories listed from the source (a process's task/ and fd/): the same entries,
types and offsets as /proc's whatever the reader's buffer and wherever it seeks, and
each of the source's entries read once a listing (dir.c reads only what a reply
holds: procfs makes every entry it lists, a task/ of 10,000 threads in milliseconds)."""
import ctypes
import json
import os
import re
import subprocess
import sys

import pytest

from lib.procs import stop_helper
from lib.server_trace import server_trace
from test_index import small_getdents, Threads

THREADS = 3000
FDS = 3000

HOLD_FDS = """
import os, sys
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(int(sys.argv[1]))]
print(flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def big_dirs():
    """{"task": the task/ of a process of THREADS threads, "fd": the fd/ of one holding
    FDS more descriptors}, as paths below a procfs root."""
    threads = Threads(THREADS)
    fds = subprocess.Popen([sys.executable, "-c", HOLD_FDS, str(FDS)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        fds.stdout.readline()
        yield {"task": "%d/task" % threads.pid, "fd": "%d/fd" % fds.pid}
    finally:
        threads.stop()
        stop_helper(fds, 20)


def entries(path, bufsize):
    """[(name, d_type, d_off)] of the whole listing, read with getdents64(bufsize)."""
    return small_getdents(path, bufsize, with_type=True)[0]


@pytest.mark.parametrize("bufsize", [32768, 4096, 600])
@pytest.mark.parametrize("which", ["task", "fd"])
def test_listing_is_procs(mnt, big_dirs, which, bufsize):
    """Every entry, its type and its offset, in /proc's order: read on from where a reply
    ended (a reader's buffer as large as the reply), and from inside a reply (a smaller
    one: the kernel asks for the offset after the last entry the reader took)."""
    rel = big_dirs[which]
    real = entries(os.path.join("/proc", rel), bufsize)
    through = entries(os.path.join(mnt.path, rel), bufsize)
    assert len(real) >= (THREADS if which == "task" else FDS)
    assert through == real


@pytest.mark.parametrize("which", ["task", "fd"])
def test_seek_within_a_listing(mnt, big_dirs, which):
    """A listing resumed at an offset read before (telldir/seekdir) goes on at the entry
    after it, back or forth, as /proc's does."""
    rel = big_dirs[which]
    listed = entries(os.path.join(mnt.path, rel), 4096)
    names = [n for n, _, _ in listed]
    fd = os.open(os.path.join(mnt.path, rel), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in (len(listed) * 3 // 4, 5, len(listed) // 2, len(listed) - 2, 0):
            os.lseek(fd, listed[i][2], os.SEEK_SET)
            got = small_getdents(fd, 600, with_type=True, calls_most=1)[0]
            assert [n for n, _, _ in got] == names[i + 1:i + 1 + len(got)], \
                "after the offset of %s" % names[i]
    finally:
        os.close(fd)


ENTRIES_READ = re.compile(r"getdents64\(\d+, \S+ /\* (\d+) entries \*/")


@pytest.mark.parametrize("which", ["task", "fd"])
def test_source_entries_read_once(mnt, big_dirs, which):
    """A listing makes the server read each of the source's entries once, not again for
    each reply that could not hold what it read."""
    path = os.path.join(mnt.path, big_dirs[which])
    listed = []
    lines = server_trace(mnt, lambda: listed.extend(entries(path, 32768)), ["getdents64"])
    read = sum(int(m.group(1)) for m in map(ENTRIES_READ.search, lines) if m)
    assert len(listed) >= (THREADS if which == "task" else FDS)
    assert read == len(listed), "%d source entries read for a listing of %d" % (
        read, len(listed))
