"""A mount's FUSE connection, found and ended without a request to the mount: a test
whose daemon stopped answering must fail, not wait with it.

A request the server has read waits for its answer even after SIGKILL (the kernel's
request_wait_answer: "Either request is already in userspace, or it was forced. Wait
it out."), so a child killed at its timeout cannot be reaped until the connection
ends. Aborting it through fusectl ends every request at once."""
import os
import subprocess
import tempfile

from lib.procs import task_state


def connection_of(path):
    """The FUSE connection number of the mount at path (its minor device number), read
    from mountinfo rather than stat: a stat of the root asks the server. None if no
    FUSE mount is there."""
    found = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            fstype = fields[fields.index("-") + 1]
            if fields[4] == path and fstype.startswith("fuse"):
                found = int(fields[2].split(":")[1])  # the last mount there is on top
    return found


FUSECTL = "/sys/fs/fuse/connections"


def fusectl_mounted():
    with open("/proc/self/mounts") as f:
        return any(line.split()[2] == "fusectl" and line.split()[1] == FUSECTL for line in f)


def abort_connection(conn):
    """Ends every request of connection conn (answered ECONNABORTED); False if it
    was gone already. Where no fusectl is mounted (a host without systemd, this
    machine), one is mounted for the abort in a directory of its own and unmounted
    after: a test that fails on a request nobody answers leaves no process behind."""
    def abort(base):
        try:
            with open("%s/%d/abort" % (base, conn), "w") as f:
                f.write("1")
            return True
        except FileNotFoundError:
            return False

    if fusectl_mounted():
        return abort(FUSECTL)
    base = tempfile.mkdtemp(prefix="procfast-fusectl-")
    try:
        subprocess.run(["mount", "-t", "fusectl", "none", base], check=True)
        try:
            return abort(base)
        finally:
            subprocess.run(["umount", base], check=False)
    finally:
        os.rmdir(base)


def waits_of(pids):
    """What each thread of pids waits on (state, wchan, kernel stack): for a failure's
    message."""
    out = []
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            base = "/proc/%d/task/%s/" % (pid, tid)
            state = task_state(pid, int(tid))
            if state is None:
                continue
            try:
                with open(base + "wchan") as f:
                    wchan = f.read()
                with open(base + "stack") as f:
                    stack = f.read().strip().replace("\n", " < ")
            except OSError:
                continue
            out.append("%d/%s %s %s: %s" % (pid, tid, state, wchan, stack))
    return "\n".join(out)


def group_members(pgid):
    """The processes of process group pgid."""
    pids = []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % name) as f:
                if int(f.read().rsplit(") ", 1)[1].split()[2]) == pgid:
                    pids.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def run_reading(argv, path, timeout, daemon_pgid=None):
    """subprocess.run(argv) for a child that reads the mount at path, bounded: past
    timeout, what the child and the daemon's process group wait on is captured, the
    connection aborted, the child killed and reaped, and the test fails with all of it."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return subprocess.CompletedProcess(argv, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        waits = waits_of([p.pid] + (group_members(daemon_pgid) if daemon_pgid else []))
        conn = connection_of(path)
        aborted = conn is not None and abort_connection(conn)
        p.kill()
        p.communicate()
        raise AssertionError("%s on %s: no answer in %d s (connection %s aborted: %s); "
                             "what waits:\n%s" % (argv, path, timeout, conn, aborted, waits))
