"""The soak load (issue 6), shared by tests/transport/test_soak.py (bounded, ~20 s) and bench/soak.sh
(minutes): 16 reader processes walk the whole mount tree (listings, lstat, reads of small
files, readlink) while a churn process forks and exits continuously and a 5,000-thread
process lives. Every failed request is classified against /proc at once:

  as_proc    /proc gives the same errno for the same operation (EACCES on another
             user's environ, EINVAL reading a write-only sysctl, ...);
  vanished   ENOENT/ESRCH for a name that /proc no longer has either (or an fd, tid or
             mapping name, which another object may have taken meanwhile);
  changed    the name changed between the two looks (a pid or fd number reused, a
             process reaped): the same operation repeated gives the same outcome on both;
  own_entry  the reader's own entries that procfs lets a task read itself (README);
  bad        anything else: an errno /proc would not give.

Run as a program it prints one JSON report:
  soak.py run --mount DIR --daemon-pid PID --seconds S [--readers 16] [--threads 5000]
"""
import argparse
import ctypes
import errno
import json
import os
import random
import re
import stat
import subprocess
import sys
import time

HELPERS = os.environ.get("PROCFAST_HELPERS", os.path.join(
    os.path.dirname(os.environ.get("PROCFAST_BIN", os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build",
        "procfast"))),
    "tests"))

# Names never opened by the walk, and why: what /proc itself cannot read in a walk, or
# what blocks or has side effects.
#   kmsg: a read blocks, and consumes the kernel log;
#   kcore, kpagecount, kpageflags, kpagecgroup: images of all memory, huge;
#   mem, pagemap: a process's memory: EIO/huge at offset 0, nothing to learn here;
#   sysrq-trigger, clear_refs: write-only triggers (never written; not even opened);
# Their lstat and listing entry are still compared.
NO_READ = {"kmsg", "kcore", "kpagecount", "kpageflags", "kpagecgroup", "mem", "pagemap",
           "sysrq-trigger", "clear_refs"}
# Directories never entered: sys/fs/binfmt_misc is an automount point on systemd hosts
# (entering it mounts binfmt_misc, on the host).
NO_ENTER = {"sys/fs/binfmt_misc"}
READ_CAP = 1 << 16
# A walk samples big directories so that it ends in bounded time (the 5,000 threads'
# task/ would take minutes); every walk draws a new sample, so the whole tree is covered
# over the run.
SAMPLE = 24
# Names that come and go inside a live process: an fd closed and another opened with
# the same number, a thread gone and its tid reused, in the moment between two looks.
# ENOENT/ESRCH there is what /proc gives for the name that vanished.
TRANSIENT = re.compile(r"/(fd|fdinfo|task|map_files)/[^/]+(/|$)")
ALWAYS_ERRNOS = {"ENOTCONN", "ENOMEM", "EFAULT", "ECONNABORTED"}  # never what /proc gives


def errname(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def do(op, path):
    """One request; its outcome as 'ok' or an errno name (contents are not compared:
    they change by themselves; test_mirror.py compares them)."""
    try:
        if op == "list":
            os.listdir(path)
        elif op == "lstat":
            os.lstat(path)
        elif op == "readlink":
            os.readlink(path)
        elif op == "read":
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            try:
                os.read(fd, READ_CAP)
            finally:
                os.close(fd)
        return "ok"
    except OSError as e:
        return errname(e)


def target_state(source, rel):
    """What decides access to a process's entries, as /proc shows it now: its name, ids,
    and the owner of the entry (root where the process is not dumpable)."""
    pid = rel.split("/")[0]
    if not NUMERIC.match(pid):
        return "not a process's"
    out = []
    try:
        with open(os.path.join(source, pid, "status")) as f:
            out += [l.strip() for l in f if l.startswith(("Name:", "Uid:", "Gid:"))]
        st = os.lstat(os.path.join(source, rel))
        out.append("owner %d:%d mode %o" % (st.st_uid, st.st_gid, st.st_mode & 0o7777))
    except OSError as e:
        out.append(errname(e))
    return ", ".join(out)


class Reader:
    def __init__(self, mount, source, seed):
        self.mount, self.source = mount, source
        self.rng = random.Random(seed)
        self.ops, self.errors, self.classes, self.bad = {}, {}, {}, []
        self.second_look = None  # the mount's answer when classify looked again

    def request(self, op, rel):
        self.ops[op] = self.ops.get(op, 0) + 1
        got = do(op, os.path.join(self.mount, rel))
        if got != "ok":
            self.errors[got] = self.errors.get(got, 0) + 1
            kind = self.classify(op, rel, got)
            self.classes[kind] = self.classes.get(kind, 0) + 1
            if kind == "bad" and len(self.bad) < 50:
                self.bad.append("%s %s: %s, then %s (/proc: %s; reader uid %d; %s)" % (
                    op, rel, got, self.second_look, do(op, os.path.join(self.source, rel)),
                    os.getuid(), target_state(self.source, rel)))
        return got

    def classify(self, op, rel, got):
        self.second_look = None
        real = os.path.join(self.source, rel)
        theirs = do(op, real)
        if got in ALWAYS_ERRNOS:
            return "bad"
        if theirs == got:
            return "as_proc"
        if rel.split("/")[0] == str(os.getpid()):
            # procfs lets a task read some of its own entries that others may not
            # (timerslack_ns, a non-dumpable task's fd/); through the mount the reader
            # is the daemon (README "What differs"). Counted apart.
            return "own_entry"
        if got in ("ENOENT", "ESRCH") and (theirs in ("ENOENT", "ESRCH")
                                           or not os.path.lexists(real)
                                           or TRANSIENT.search(rel)):
            return "vanished"
        # The name may name another object now (a reused pid or fd number), or none (a
        # process seen alive, EACCES on its owner-only file, and reaped before /proc
        # was asked): look again, a walk made after it is gone.
        again, theirs = do(op, os.path.join(self.mount, rel)), do(op, real)
        self.second_look = again
        return "changed" if again == theirs else "bad"

    def walk(self, rel, deadline):
        if time.time() > deadline or rel in NO_ENTER:
            return
        if self.request("list", rel) != "ok":
            return
        try:
            names = os.listdir(os.path.join(self.mount, rel))
        except OSError:
            return
        if len(names) > SAMPLE * 2 and rel:  # the root is listed whole
            names = self.rng.sample(names, SAMPLE)
        self.rng.shuffle(names)
        for name in names:
            if time.time() > deadline:
                return
            sub = os.path.join(rel, name)
            try:
                mode = os.lstat(os.path.join(self.mount, sub)).st_mode
            except OSError:
                mode = 0
            self.request("lstat", sub)
            if stat.S_ISDIR(mode):
                self.walk(sub, deadline)
            elif stat.S_ISLNK(mode):
                self.request("readlink", sub)
            elif stat.S_ISREG(mode) and name not in NO_READ:
                self.request("read", sub)

    def report(self):
        return {"ops": self.ops, "errors": self.errors, "classes": self.classes,
                "bad": self.bad}


def reader_main(mount, source, seconds, uid, seed):
    if uid:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        # setuid made us non-dumpable: our own entries would then be root's, readable
        # by us on /proc only (README "What differs": not what this load is about).
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    r = Reader(mount, source, seed)
    deadline = time.time() + seconds
    while time.time() < deadline:
        r.walk("", deadline)
    print(json.dumps(r.report()), flush=True)


# ----------------------------------------------------------------- the orchestra

def daemon_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def held_fds(pid):
    """The daemon's fds other than /dev/fuse and pidfds: libfuse's clone_fd gives every
    worker thread its own /dev/fuse clone, and workers come and go with the load; the
    daemon keeps a pidfd of processes it was asked about, in a bounded table of its own
    fds (cache/index/pidfd_kept.h, tests/unit/test_pidfd_kept.c), closed as they exit or
    others take their place. Neither says what the daemon holds for its callers."""
    d = "/proc/%d/fd" % pid
    n = 0
    for fd in os.listdir(d):
        try:
            n += os.readlink(os.path.join(d, fd)) not in ("/dev/fuse", "anon_inode:[pidfd]")
        except FileNotFoundError:
            pass  # closed while we looked
    return n


def daemon_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


def sanitized(pid):
    """AddressSanitizer keeps freed memory in its quarantine: RSS says nothing then."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def steady_fds(pid):
    """The held fd count once two readings 0.1 s apart agree (a request in flight holds a
    pidfd or a source file for a moment)."""
    last = held_fds(pid)
    while True:
        time.sleep(0.1)
        now = held_fds(pid)
        if now == last:
            return now
        last = now


NUMERIC = re.compile(r"[1-9][0-9]*$")


def pids_of(path):
    return {int(n) for n in os.listdir(path) if NUMERIC.match(n)}


def listing_difference(mount):
    """(missing, extra) of the mount's root listing against /proc's before and after."""
    before = pids_of("/proc")
    listed = pids_of(mount)
    after = pids_of("/proc")
    return sorted((before & after) - listed), sorted(listed - (before | after))


def poll(fn, timeout):
    """fn() until it is true or timeout passes; the last value."""
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v or time.time() > deadline:
            return v
        time.sleep(0.1)


def start_readers(mount, seconds, n, unprivileged):
    """n readers; the last `unprivileged` of them as nobody (their EACCES must be /proc's)."""
    return [subprocess.Popen([sys.executable, os.path.abspath(__file__), "reader", mount, "/proc",
                              str(seconds), str(65534 if i >= n - unprivileged else 0), str(i)],
                             stdout=subprocess.PIPE, text=True)
            for i in range(n)]


def merge(reports):
    out = {"ops": {}, "errors": {}, "classes": {}, "bad": []}
    for r in reports:
        for key in ("ops", "errors", "classes"):
            for k, v in r[key].items():
                out[key][k] = out[key].get(k, 0) + v
        out["bad"] += r["bad"]
    return out


def run(mount, daemon, seconds, readers=16, unprivileged=4, threads=5000, settle=5):
    """The soak; returns its report (figures, before/after, the listing difference)."""
    # Idle: after one short walk, so that one-time allocations (worker threads, the
    # node table, template listings) are part of it.
    for p in start_readers(mount, 3, 4, 1):
        p.communicate(timeout=120)
    idle_fds, idle_rss = steady_fds(daemon), daemon_rss_kib(daemon)
    many = subprocess.Popen([os.path.join(HELPERS, "threads"), str(threads)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    many.stdout.readline()
    churn = subprocess.Popen([os.path.join(HELPERS, "forker"), "0"], stdout=subprocess.DEVNULL)
    started = time.time()
    procs = start_readers(mount, seconds, readers, unprivileged)
    try:
        outs = [p.communicate(timeout=seconds + 300)[0] for p in procs]
        codes = [p.returncode for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        churn.kill()
        churn.wait()
        many.stdin.close()
        many.wait(timeout=60)
        many.stdout.close()
    load_secs = time.time() - started
    peak_rss = daemon_rss_kib(daemon)
    report = merge([json.loads(o) for o, c in zip(outs, codes) if c == 0 and o])
    report["reader_failures"] = sum(1 for c in codes if c != 0)
    report["seconds"] = round(load_secs, 1)
    report["readers"], report["unprivileged"], report["threads"] = readers, unprivileged, threads
    report["idle"] = {"fds": idle_fds, "rss_kib": idle_rss}
    report["end_of_load"] = {"fds": held_fds(daemon), "rss_kib": peak_rss}
    # "Back" to idle: the same fd count exactly, RSS within 1 MiB; polled, because the
    # kernel forgets the exited processes' inodes and the daemon trims its memory in
    # the background (once a second).
    poll(lambda: steady_fds(daemon) == idle_fds, settle)
    poll(lambda: daemon_rss_kib(daemon) <= idle_rss + 1024, settle)
    report["after"] = {"fds": steady_fds(daemon), "rss_kib": daemon_rss_kib(daemon)}
    # The nodes of names the kernel still caches (the live processes' entries the walk
    # looked up) stay as long as the kernel keeps those dentries, a memory bounded by
    # the tree, not by the load. Once the kernel drops them (and forgets the inodes),
    # what is left above idle is what the daemon kept for itself.
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2")
    poll(lambda: daemon_rss_kib(daemon) <= idle_rss + 1024, settle)
    report["after_dentry_drop"] = {"fds": steady_fds(daemon), "rss_kib": daemon_rss_kib(daemon)}
    diff = poll(lambda: listing_difference(mount) == ([], []) or None, 10)
    report["listing"] = [[], []] if diff else list(listing_difference(mount))
    return report


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "reader":
        mount, source, seconds, uid, seed = sys.argv[2:7]
        return reader_main(mount, source, float(seconds), int(uid), int(seed))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=["run"])
    ap.add_argument("--mount", required=True)
    ap.add_argument("--daemon-pid", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--readers", type=int, default=16)
    ap.add_argument("--threads", type=int, default=5000)
    a = ap.parse_args()
    print(json.dumps(run(a.mount, a.daemon_pid, a.seconds, a.readers, threads=a.threads)))


if __name__ == "__main__":
    main()
