"""A task reading its own state through the mount (issue 10, point 4).

procfs shows a task that reads its own stat or status running (R), with no wait
channel. Through FUSE it sleeps in the request while the daemon reads: procfast gives it
those fields as procfs gives them to the task itself. The one thing that cannot be given
back: each request is a voluntary context switch of the reader (status), documented."""
import os
import subprocess
import threading

STATE_READER = r'''
import json, os, sys, threading
mnt = sys.argv[1]
def fields(base, which):
    stat = open("%s/%s/stat" % (base, which)).read().rsplit(")", 1)[1].split()
    status = [l for l in open("%s/%s/status" % (base, which)) if l.startswith("State:")]
    return {"state": stat[0], "wchan_field": stat[32], "status": status,
            "wchan": open("%s/%s/wchan" % (base, which)).read()}
def chunked(base, which, name, size):
    fd = os.open("%s/%s/%s" % (base, which, name), os.O_RDONLY)
    data = b""
    while True:
        b = os.read(fd, size)
        if not b:
            break
        data += b
    os.close(fd)
    return data.decode()
def both(which):
    return {b: fields(b, which) for b in ("/proc", mnt)}
out = {"self": both("self"), "thread-self": both("thread-self"),
       "task": both("self/task/%d" % threading.get_native_id())}
chunks = {b: chunked(b, "self", "status", 7) for b in ("/proc", mnt)}
out["chunked_status"] = {b: [l for l in t.splitlines() if l.startswith(("State", "Name", "Pid"))]
                         for b, t in chunks.items()}
out["chunked_stat"] = {b: chunked(b, "self", "stat", 3).rsplit(")", 1)[1].split()[0]
                       for b in ("/proc", mnt)}
res = {}
t = threading.Thread(target=lambda: res.update(both("thread-self")))
t.start(); t.join()
out["second_thread"] = res
print(json.dumps(out))
'''


def run_reader(mnt, prefix=()):
    r = subprocess.run(list(prefix) + ["/usr/bin/python3", "-c", STATE_READER, mnt.path],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    import json
    return json.loads(r.stdout)


def check(out, mnt):
    for which in ("self", "thread-self", "task", "second_thread"):
        real, mounted = out[which]["/proc"], out[which][mnt.path]
        assert real == mounted, (which, real, mounted)
        assert real["state"] == "R" and real["status"] == ["State:\tR (running)\n"], real
        assert real["wchan"] == "0" and real["wchan_field"] == "0", real
    assert out["chunked_status"]["/proc"] == out["chunked_status"][mnt.path]
    assert out["chunked_stat"]["/proc"] == out["chunked_stat"][mnt.path] == "R"


def test_reads_of_its_own_state(mnt):
    check(run_reader(mnt), mnt)


def test_reads_of_its_own_state_in_a_user_namespace(mnt):
    """The same for a caller whose status a helper process reads (its user namespace)."""
    check(run_reader(mnt, prefix=["unshare", "--user", "--map-root-user"]), mnt)


def test_another_tasks_state_is_as_it_is(mnt):
    """A thread reading its sleeping leader's stat sees it sleeping, on both."""
    r, w = os.pipe()
    seen = {}

    def look():
        leader = "/proc/%d/task/%d/stat" % (os.getpid(), os.getpid())
        # the leader is in os.read below: wait until /proc says so
        while open(leader).read().rsplit(")", 1)[1].split()[0] != "S":
            pass
        seen["real"] = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[0]
        seen["mount"] = open(mnt.p("self", "stat")).read().rsplit(")", 1)[1].split()[0]
        os.write(w, b"x")
    t = threading.Thread(target=look)
    t.start()
    os.read(r, 1)
    t.join()
    os.close(r)
    os.close(w)
    assert seen == {"real": "S", "mount": "S"}, seen
