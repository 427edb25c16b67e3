"""Where tasks wait in the kernel (their wchan): what a test waits for, and what it shows
when a wait lasted too long."""
import os


def read_text(path):
    with open(path) as f:
        return f.read()


def each_task(pids=None):
    """(pid, tid, wchan) of each task of pids (all processes if None); tasks that end
    meanwhile are left out."""
    for pid in pids if pids is not None else filter(str.isdigit, os.listdir("/proc")):
        try:
            tids = os.listdir("/proc/%s/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                yield int(pid), int(tid), read_text("/proc/%s/task/%s/wchan" % (pid, tid))
            except OSError:
                pass


def thread_waits(pid):
    """Each thread of pid as "wchan:syscall number"."""
    found = []
    for _, tid, wchan in each_task([pid]):
        try:
            call = read_text("/proc/%d/task/%d/syscall" % (pid, tid)).split()[0]
        except (OSError, IndexError):
            call = "?"
        found.append("%s:%s" % (wchan, call))
    return found


def session_of(pid):
    return int(read_text("/proc/%d/stat" % pid).rsplit(")", 1)[1].split()[3])


def waits_in_session(sid):
    """Where each process of session sid waits: its wchan and the kernel's stack."""
    out = []
    for pid, tid, wchan in each_task():
        try:
            if pid == tid and session_of(pid) == sid:
                out.append("%d %s:\n%s" % (pid, wchan, read_text("/proc/%d/stack" % pid)))
        except OSError:
            pass
    return "\n".join(out) or "(no process left)"
