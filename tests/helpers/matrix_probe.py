"""The caller of tests/access/test_access_matrix.py.

    matrix_probe.py PROC MOUNT  < ops.json  > result.json

Runs as the persona under test, in its namespaces, and performs every operation of the
list on PROC (a procfs) and on MOUNT (procfast) in turn, so that both trees see the same
caller. Prints {"cells": N, "diffs": [[index, /proc's result, the mount's], ...],
"refused": how many cells /proc refused, "caller": its uid, gid and capabilities}.

An operation is [kind, path, arg], path relative to the tree:
  read      open read-only and read (the first CAP bytes); arg: prefixes of lines to
            drop, values that are noise at each read
  open_rw   open read-write, close at once: only the errno counts
  poll      open read-only, poll for POLLIN, POLLPRI and POLLOUT without waiting: the
            events ready (fs/request/poll.c)
  readlink  the link's text
  list      the directory's sorted names; arg, if any, seconds to wait before each
            /proc listing: for the fd tables of the daemon's server, which holds an fd
            for each file the probe opened until the kernel's RELEASE reaches it
  listed    whether the tree's root lists the name arg
  write     write arg (or, arg null, what PROC's file reads to this caller), once per tree
Every result is ["ok", value] or ["err", "STEP:ERRNO"] (STEP: open, read, write, ...).
"""
import errno
import json
import os
import re
import select
import sys
import time
from itertools import zip_longest

CAP = 1 << 20   # pagemap alone spans the whole address space
RETRIES = 2     # the cells that differ are done again: the live processes move,
SETTLE = 0.05   # and the daemon closes a file only once the kernel's RELEASE, sent after
                # close() returned, reaches it (its fd/ may list one more meanwhile)


def failed(step, e):
    return ["err", "%s:%s" % (step, errno.errorcode.get(e.errno, str(e.errno)))]


def read(path, drop=None):
    """The file's text, without the lines that start with one of drop."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return failed("open", e)
    try:
        chunks, size = [], 0
        while size < CAP:
            data = os.read(fd, 65536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
        text = b"".join(chunks)[:CAP].decode("latin-1")
        if drop:
            text = "".join(l for l in text.splitlines(True) if not l.startswith(tuple(drop)))
        return ["ok", text]
    except OSError as e:
        return failed("read", e)
    finally:
        os.close(fd)


def open_rw(path, _=None):
    try:
        os.close(os.open(path, os.O_RDWR))
        return ["ok", None]
    except OSError as e:
        return failed("open", e)


def poll_now(path, _=None):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        return failed("open", e)
    try:
        p = select.poll()
        p.register(fd, select.POLLIN | select.POLLPRI | select.POLLOUT)
        return ["ok", sorted(events for _, events in p.poll(0))]
    finally:
        os.close(fd)


def readlink(path, _=None):
    try:
        return ["ok", os.readlink(path)]
    except OSError as e:
        return failed("readlink", e)


def listing(path, _=None):
    try:
        return ["ok", sorted(os.listdir(path))]
    except OSError as e:
        return failed("list", e)


def listed(path, name):
    found = listing(path)
    return ["ok", name in found[1]] if found[0] == "ok" else found


def write(path, value):
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return failed("open", e)
    try:
        return ["ok", os.write(fd, value.encode("latin-1"))]
    except OSError as e:
        return failed("write", e)
    finally:
        os.close(fd)


LOOKS = {"read": read, "open_rw": open_rw, "poll": poll_now, "readlink": readlink,
         "list": listing, "listed": listed}


def masked_equal(procs, mount):
    """Token by token, mount equals /proc wherever all of /proc's reads agree: fields
    that change by themselves (counters, times, clock-delta, the states of a daemon that
    serves the read) are those that differ between /proc's reads around the mount's."""
    tokens = [re.findall(r"\S+|\s+", s) for s in procs + [mount]]
    if len({len(t) for t in tokens}) != 1:
        return False
    return all(len(set(column[:-1])) > 1 or column[-1] == column[0]
               for column in zip(*tokens))


def within(procs, mount):
    """mount holds what every /proc read holds and nothing none holds: for names, and
    for the lines of tables whose rows come and go (net/unix of a busy host)."""
    sets = [set(x) for x in procs]
    return set.intersection(*sets) <= set(mount) <= set.union(*sets)


def same(kind, procs, mount):
    """Whether the mount's result is one /proc gives, judged by all of /proc's."""
    if mount in procs:
        return True
    if any(r[0] != "ok" for r in procs + [mount]):
        return False
    values = [r[1] for r in procs]
    if kind == "list":
        return within(values, mount[1])
    if kind != "read" or all(v == values[0] for v in values):   # stable: must be equal
        return False
    return (masked_equal(values, mount[1]) or
            within([v.splitlines() for v in values], mount[1].splitlines()))


def write_cell(where, arg):
    """A write to both trees: (/proc's result, the mount's)."""
    if arg is None:   # a sysctl: what this caller reads, in its namespaces
        value = read(where[0])
        arg = value[1] if value[0] == "ok" else ""
    return write(where[0], arg), write(where[1], arg)


def look_cell(where, kind, arg):
    """/proc, the mount, /proc again: ([/proc's two results], the mount's)."""
    look = LOOKS[kind]
    settle = arg if kind == "list" and arg else 0
    time.sleep(settle)
    first, mount = look(where[0], arg), look(where[1], arg)
    time.sleep(settle)
    return [first, look(where[0], arg)], mount


def describe(first, mount):
    """Short texts of two results: where two contents first differ, which names only
    one of two listings has, or the results themselves."""
    if first[0] == mount[0] == "ok" and isinstance(first[1], list):
        a, b = set(first[1]), set(mount[1])
        return ("%d names" % len(a), "%d names, more %s, fewer %s" % (
            len(b), sorted(b - a)[:8], sorted(a - b)[:8]))
    if first[0] == mount[0] == "ok" and isinstance(first[1], str):
        lines = zip_longest(first[1].splitlines(), mount[1].splitlines(), fillvalue="<end>")
        for n, (x, y) in enumerate(lines):
            if x != y:
                x, y = x.split(), y.split()
                i = next((i for i, (u, v) in enumerate(zip_longest(x, y)) if u != v), 0)
                return ("line %d field %d: %r" % (n + 1, i + 1, " ".join(x[i:i + 6])[:120]),
                        "%r" % " ".join(y[i:i + 6])[:120])
    return tuple(json.dumps(r)[:120] for r in (first, mount))


def main():
    proc, mnt = sys.argv[1], sys.argv[2]
    ops = json.load(sys.stdin)
    procs = {}    # every /proc result so far of the cells that differ
    differ = {}
    refused = 0
    pending = range(len(ops))
    for attempt in range(1 + RETRIES):
        time.sleep(SETTLE if attempt else 0)
        for i in pending:
            kind, path, arg = ops[i]
            where = [os.path.join(tree, path) for tree in (proc, mnt)]
            if kind == "write":   # done once: its errno decides
                first, mount = write_cell(where, arg)
                refused += first[0] == "err"
                if first != mount:
                    differ[i] = describe(first, mount)
                continue
            seen, mount = look_cell(where, kind, arg)
            refused += not attempt and seen[0][0] == "err"
            procs[i] = procs.get(i, []) + seen
            if same(kind, procs[i], mount):
                differ.pop(i, None)
                del procs[i]
            else:
                differ[i] = describe(seen[0], mount)
        pending = list(procs)
    diffs = [[i, *differ[i]] for i in sorted(differ)]
    json.dump({"cells": len(ops), "diffs": diffs, "refused": refused, "caller": caller()},
              sys.stdout)


def caller():
    """Who the probe is, in its own user namespace and on the host."""
    with open("/proc/self/status") as f:
        caps = [l.split()[1] for l in f if l.startswith("CapEff:")][0]
    with open("/proc/self/uid_map") as f:
        host_uid = f.read().split()[1]
    return "uid %d gid %d caps %s, host uid %s" % (os.getuid(), os.getgid(), caps, host_uid)


if __name__ == "__main__":
    main()
