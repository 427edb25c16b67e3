"""One arm of bench/upgrades.sh: BIN -f -o uring=T on a mount of its own, four readers of
a sleeper's PID/stat in a tight loop, UPGRADES upgrades (SIGHUP, each waiting for the
next server's "serving again"); prints one JSON line: reads, errors by errno name,
readers that got no answer, and each upgrade's ms.

    upgrade_arm.py BIN T WORK SLEEPER UPGRADES"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from lib.fuse_conn import abort_connection, connection_of  # noqa: E402

READER = r"""
import errno, os, sys
path, stop = sys.argv[1], sys.argv[2]
reads, errors = 0, {}
while not os.path.exists(stop):
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.read(fd, 4096)
        finally:
            os.close(fd)
        reads += 1
    except OSError as e:
        errors[errno.errorcode[e.errno]] = errors.get(errno.errorcode[e.errno], 0) + 1
print(reads, " ".join("%s=%d" % kv for kv in errors.items()), flush=True)
"""


def main():
    binary, transport, work, sleeper, upgrades = sys.argv[1:6]
    mnt = tempfile.mkdtemp(prefix="mnt-", dir=work)
    log = os.path.join(mnt + ".log")
    stop = mnt + ".stop"
    with open(log, "w") as out:
        daemon = subprocess.Popen([binary, "-f", "-o", "uring=" + transport, mnt],
                                  stdout=out, stderr=subprocess.STDOUT)
    served = lambda: open(log).read().count("serving again: ")
    while connection_of(mnt) is None:
        assert daemon.poll() is None, open(log).read()
        time.sleep(0.02)
    time.sleep(0.3)  # the first server's rings
    readers = [subprocess.Popen([sys.executable, "-c", READER, "%s/%s/stat" % (mnt, sleeper),
                                 stop], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    ms = []
    time.sleep(0.3)
    for _ in range(int(upgrades)):
        before, t0 = served(), time.monotonic()
        daemon.send_signal(signal.SIGHUP)
        while served() == before:
            assert time.monotonic() - t0 < 30, open(log).read()
            time.sleep(0.001)
        ms.append((time.monotonic() - t0) * 1000)
        time.sleep(0.2)
    open(stop, "w").close()
    reads, errors, unanswered = 0, {}, 0
    deadline = time.monotonic() + 10
    while any(r.poll() is None for r in readers) and time.monotonic() < deadline:
        time.sleep(0.05)
    unanswered = sum(r.poll() is None for r in readers)
    if unanswered:
        abort_connection(connection_of(mnt))
    for r in readers:
        out = r.communicate()[0].split()
        reads += int(out[0]) if out else 0
        for kv in out[1:]:
            k, v = kv.split("=")
            errors[k] = errors.get(k, 0) + int(v)
    subprocess.run(["fusermount3", "-u", mnt], check=False)
    try:
        daemon.wait(timeout=20)
    except subprocess.TimeoutExpired:
        subprocess.run(["umount", "-l", mnt], check=False)
        conn = connection_of(mnt)
        if conn is not None:
            abort_connection(conn)
        daemon.kill()
        daemon.wait()
    print(json.dumps({"reads": reads, "errors": errors, "unanswered": unanswered,
                      "upgrade_ms": ms}))


if __name__ == "__main__":
    sys.exit(main())
