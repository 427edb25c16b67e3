"""A consumer pod of the rollout test (tests/containers/test_rollout.py): reads procfast's files in
a loop, in a container, for as long as the test runs, and says how it went.

    python3 rollout_consumer.py STATUS STOP SPEC

SPEC is JSON: {"reopen": [path...], "list": [dir...], "hold": [path...],
"expect": {path: regex}, "pace": seconds}. Each loop opens, reads and closes every
"reopen" path, lists every "list" directory (the names joined by spaces), and preads
from offset 0 every "hold" path, opened once at the start (as an agent keeps /proc
files open). What is read must not be empty and, where expect names a regular
expression, must match it at its start: else an error of its own, EBADMSG (a stale or
wrong file). STATUS is rewritten (atomically) every tenth of a second: the counts, the
first errors (path, operation, errno, time), the errors of each kind and the slowest
operation of each second. The loop ends when STOP exists, after a last STATUS.
Python and its own modules only: the image binds the host's /usr.
"""
import errno
import json
import os
import re
import sys
import time

FIRST_ERRORS = 20  # errors kept in full; the rest are only counted


class Tally:
    def __init__(self):
        self.ok, self.errors, self.loops = 0, 0, 0
        self.first, self.kinds, self.slowest = [], {}, {}

    def error(self, path, op, err):
        """Counted by kind (path, operation, errno: how many, first and last time)."""
        self.errors += 1
        name, now = errno.errorcode.get(err, str(err)), time.time()
        if len(self.first) < FIRST_ERRORS:
            self.first.append([path, op, name, now])
        kind = self.kinds.setdefault(" ".join((path, op, name)), [0, now, now])
        kind[0] += 1
        kind[2] = now

    def timed(self, began, seconds):
        """The slowest operation that began in each second of the wall clock: what the
        readers saw of each hand-over (bench/rollout.sh)."""
        second = str(int(began))
        self.slowest[second] = max(self.slowest.get(second, 0), seconds)

    def write(self, status, done=False):
        tmp = status + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"ok": self.ok, "errors": self.errors, "loops": self.loops,
                       "first": self.first, "kinds": self.kinds, "slowest": self.slowest,
                       "done": done}, f)
        os.rename(tmp, status)


def checked(tally, path, op, data, pattern):
    """Counts one read: an error if it is empty or is not the file expected."""
    if not data or (pattern and not pattern.match(data)):
        tally.error(path, op, errno.EBADMSG)
    else:
        tally.ok += 1


def one(tally, path, op, action, pattern=None):
    """action()'s result, timed and counted (an open's only when it fails)."""
    began, start = time.time(), time.monotonic()
    try:
        data = action()
    except OSError as e:
        tally.error(path, op, e.errno)
        return None
    finally:
        tally.timed(began, time.monotonic() - start)
    if op != "open":
        checked(tally, path, op, data, pattern)
    return data


def read_all(fd):
    chunks = [os.read(fd, 65536)]
    while chunks[-1]:
        chunks.append(os.read(fd, 65536))
    return b"".join(chunks)


def reopen(tally, path, pattern):
    """Opened, read and closed: which of the two failed is told apart."""
    fd = one(tally, path, "open", lambda: os.open(path, os.O_RDONLY))
    if fd is not None:
        one(tally, path, "read", lambda: read_all(fd), pattern)
        os.close(fd)


def listing(path):
    return " ".join(os.listdir(path)).encode()


def main(status, stop, spec):
    spec = json.loads(spec)
    expect = {p: re.compile(v.encode()) for p, v in spec.get("expect", {}).items()}
    held = {p: os.open(p, os.O_RDONLY) for p in spec.get("hold", [])}
    tally, written = Tally(), 0.0
    while not os.path.exists(stop):
        for p in spec.get("reopen", []):
            reopen(tally, p, expect.get(p))
        for p in spec.get("list", []):
            one(tally, p, "list", lambda: listing(p), expect.get(p))
        for p, fd in held.items():
            one(tally, p, "pread", lambda: os.pread(fd, 65536, 0), expect.get(p))
        tally.loops += 1
        if time.monotonic() - written > 0.1:
            tally.write(status)
            written = time.monotonic()
        time.sleep(spec.get("pace", 0))  # leaves the 2 CPUs to the daemons and podman
    tally.write(status, done=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
