"""A DaemonSet rollout played with real containers (issue 22, points 6 and 7).

One node directory (tests/lib/podman.py NodeDir, the node's /var/lib/procfast) is shared by
the node containers, each the DaemonSet's pod as podman runs it (test_kubernetes.py
start_node: --pid=host, the kept capabilities, the entrypoint procfast-node, which runs
`procfast -o control=...,takeover,pidfile=...,uring=off`). Consumer containers read
through the whole test (tests/containers/rollout_consumer.py):

- "agent": the node's mount at /host/proc (agent-pod.yaml's bind, read-only, rslave):
  reopens meminfo, stat, PID/status of a host process the test started and lists
  /host/proc; keeps meminfo and that PID/stat open and preads them;
- "lxcfs": the resources=caller files bound over its /proc/meminfo, stat, uptime and
  loadavg (lxcfs-style-pod.yaml's binds): reopens each, keeps meminfo and uptime open.

Each rollout starts the next node container at the same directory, waits until its
daemon is registered as the successor (readiness, and the old daemon's log), stops the
old one as the kubelet does (SIGTERM to the entrypoint alone: podman kill, not podman
stop, which signals every process of a container in the host's pid namespace), waits
for its exit and removes it. The same two mounts (same mount ids) must then be served
by the new container's daemon alone, and every consumer must read on. The node's
daemons alternate between two binaries: odd rollouts go to the second, even ones are
rollbacks to the first. The second is PROCFAST_ROLLOUT_OTHER when set (another version),
else a copy of the first at another path.

At the end the consumers must have seen no error at all (no failed open, read or
listing, no ESTALE, no wrong content), and nothing may be left: no mount below the node
directory, no container, no daemon process.

PROCFAST_ROLLOUTS (20) sets the number of rollouts; PROCFAST_ROLLOUT_REPORT names a file
that receives the figures as JSON (bench/rollout.sh). 20 rollouts take about 30 s on this
2-core machine when it is quiet (each: ~0.5 s to start and register the new container,
~0.35 s from SIGTERM to the old one's exit), and a few minutes beside a heavy load.
"""
import json
import os
import shutil
import subprocess
import time

import pytest

from lib.build import BIN
from lib.podman import NodeDir, Session, podman, wait_for
from test_kubernetes import NODE_PROCFAST, start_node

ROLLOUTS = int(os.environ.get("PROCFAST_ROLLOUTS", "20"))
REPORT = os.environ.get("PROCFAST_ROLLOUT_REPORT")
OTHER = os.environ.get("PROCFAST_ROLLOUT_OTHER")
CONSUMER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rollout_consumer.py")
PIDFILE = "/run/procfast-node/procfast.pid"  # procfast-node's, in the node container
PACE = 0.002  # seconds between a consumer's loops: the CPUs go to daemons and podman
PROGRESS = 10  # successful reads each consumer must add after each rollout
LXCFS_FILES = {"meminfo": r"MemTotal:\s+\d+ kB\n", "stat": r"cpu  \d+ ",
               "uptime": r"\d+\.\d\d \d+\.\d\d\n", "loadavg": r"\d+\.\d\d \d+\.\d\d \d+\.\d\d "}


def logs(container):
    return podman("logs", container.id).stderr


def daemon_pid(container):
    """The supervisor the node container started (its pidfile: the host's pid)."""
    return int(container.exec("/bb/cat", PIDFILE).stdout)


class Binaries:
    """The two versions the node containers alternate, as copies of their own, so that
    the daemons' processes are told from any other procfast's by their executable."""

    def __init__(self, work):
        self.paths = []
        for i, src in enumerate((NODE_PROCFAST, OTHER or NODE_PROCFAST)):
            dst = os.path.join(work, "procfast-v%d" % (i + 1))
            shutil.copy2(src, dst)
            self.paths.append(dst)
        self.ids = {self._id(p) for p in self.paths}

    @staticmethod
    def _id(path):
        st = os.stat(path)
        return st.st_dev, st.st_ino

    def processes(self):
        """{pid: ppid} of every process running one of the two."""
        found = {}
        for name in filter(str.isdigit, os.listdir("/proc")):
            try:
                if self._id("/proc/%s/exe" % name) in self.ids:
                    with open("/proc/%s/stat" % name) as f:
                        found[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
        return found


def described(pids):
    """Each pid with its parent, and both commands, for a failure's message."""
    def cmd(pid):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            return "gone"
    out = []
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            ppid = 0
        out.append("%d (%s), parent %d (%s)" % (pid, cmd(pid), ppid, cmd(ppid) if ppid else "-"))
    return "; ".join(out)


def outside(processes, root):
    """The pids of processes that are not root nor descend from it."""
    def descends(pid):
        while pid in processes and pid != root:
            pid = processes[pid]
        return pid == root
    return [p for p in processes if not descends(p)]


class Consumers:
    """The consumer containers and their status files (a directory bound at /out)."""

    def __init__(self, session, node, sleeper):
        self.session, self.out = session, os.path.join(session.work, "consumers")
        os.mkdir(self.out)
        self.stop_file = os.path.join(self.out, "stop")
        pid = "/host/proc/%d/" % sleeper
        agent = {"reopen": ["/host/proc/meminfo", "/host/proc/stat", pid + "status"],
                 "list": ["/host/proc"], "hold": ["/host/proc/meminfo", pid + "stat"],
                 "expect": {"/host/proc/meminfo": r"MemTotal:\s+\d+ kB\n",
                            "/host/proc/stat": r"cpu  \d+ ", pid + "status": r"Name:\tsleep\n",
                            pid + "stat": r"%d \(sleep\) " % sleeper,
                            "/host/proc": r"(?=(.* )?%d( |$))(?=(.* )?1( |$))" % sleeper}}
        lxcfs = {"reopen": ["/proc/" + f for f in LXCFS_FILES],
                 "hold": ["/proc/meminfo", "/proc/uptime"],
                 "expect": {"/proc/" + f: r for f, r in LXCFS_FILES.items()}}
        binds = {"agent": ["-v", "%s/proc:/host/proc:ro,rslave" % node.path],
                 "lxcfs": [a for f in LXCFS_FILES for a in
                           ("-v", "%s/resources/%s:/proc/%s:ro" % (node.path, f, f))]}
        self.containers = {name: self._start(name, spec, binds[name])
                           for name, spec in (("agent", agent), ("lxcfs", lxcfs))}
        for name in self.containers:
            wait_for(lambda: self.status(name).get("loops", 0) > 0, name + "'s first reads")

    def _start(self, name, spec, binds):
        spec = dict(spec, pace=PACE)
        return self.session.run(["-v", "/usr:/usr:ro", "-v", self.out + ":/out",
                                 "-v", CONSUMER + ":/consumer.py:ro"] + binds,
                                ["/usr/bin/python3", "/consumer.py", "/out/%s.json" % name,
                                 "/out/stop", json.dumps(spec)])

    def status(self, name):
        try:
            with open(os.path.join(self.out, name + ".json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}

    def wait_progress(self):
        """Each consumer's successful reads grow by PROGRESS from now."""
        for name in self.containers:
            start = self.status(name)["ok"]
            wait_for(lambda: self.status(name)["ok"] >= start + PROGRESS,
                     "%s to read on (%s)" % (name, self.status(name)))

    def stop(self):
        """Ends the loops and the containers: each one's last status."""
        open(self.stop_file, "w").close()
        final = {}
        for name, c in self.containers.items():
            wait_for(lambda: self.status(name).get("done"), name + "'s last status")
            podman("wait", c.id, timeout=60)
            final[name] = self.status(name)
            c.remove()
        return final


class Rollout:
    """The node containers: the running one, and the figures of each hand-over."""

    def __init__(self, session, node, binaries):
        self.session, self.node, self.binaries = session, node, binaries
        self.current = start_node(session, node, binaries.paths[0])
        self.mounts = node.mounts()
        assert sorted(self.mounts) == [node.path + "/proc", node.path + "/resources"]
        self.figures = []
        self.assert_served(daemon_pid(self.current))

    def roll(self, number):
        """Rollout number (1-based) to the other binary: a rollback when even."""
        old, t0 = self.current, time.monotonic()
        new = start_node(self.session, self.node, self.binaries.paths[number % 2])
        self.current, successor = new, daemon_pid(new)
        wait_for(lambda: "a successor (pid %d) waits" % successor in logs(old),
                 "the old daemon to hear its successor")
        t1, wall = time.monotonic(), time.time()
        podman("kill", "-s", "TERM", old.id)
        podman("wait", old.id, timeout=90)
        t2 = time.monotonic()
        old_logs, code = logs(old), int(old.inspect("{{.State.ExitCode}}"))
        assert code == 0 and "handed every mount over to the successor" in old_logs, old_logs
        # the old daemon's servers end by themselves, before the container is removed
        wait_for(lambda: not outside(self.binaries.processes(), successor),
                 "the old daemon's processes to end")
        old.remove()
        wait_for(lambda: "taking over the mounts of the daemon before (handed over)" in logs(new),
                 "the take-over")
        self.figures.append({"rollout": number, "rollback": number % 2 == 0, "sigterm": wall,
                             "register_s": t1 - t0, "handover_s": t2 - t1})
        self.assert_served(successor)

    def assert_served(self, supervisor):
        """The same mounts, answered, and only supervisor's processes run the daemon."""
        assert self.node.mounts() == self.mounts
        assert "1" in os.listdir(self.node.path + "/proc")
        with open(self.node.path + "/resources/meminfo") as f:
            assert f.readline().startswith("MemTotal:")
        processes = self.binaries.processes()
        assert supervisor in processes and len(processes) > 1, processes  # and its servers
        # A process is read after its parent in one pass over /proc: one that forks and
        # one that exits meanwhile can make a tree of processes that never was at once
        # (CI, once). What stays outside for 10 s is a daemon's process left behind.
        deadline = time.monotonic() + 10
        while (stray := outside(self.binaries.processes(), supervisor)) and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        assert not stray, "processes of the daemon outside %d's tree for 10 s: %s" % (
            supervisor, described(stray))

    def stop(self):
        """The last one stopped with no successor: exits 0 and unmounts both."""
        podman("kill", "-s", "TERM", self.current.id)
        podman("wait", self.current.id, timeout=90)
        out, code = logs(self.current), int(self.current.inspect("{{.State.ExitCode}}"))
        self.current.remove()
        assert code == 0, out


def when(figures, t):
    """Which rollout an error's time falls after (0: before the first)."""
    return max([f["rollout"] for f in figures if f["sigterm"] <= t], default=0)


def describe(final, figures):
    """Each consumer's counts and errors of each kind, with the rollouts they came in."""
    lines = []
    for name, s in final.items():
        lines.append("%s: %d reads ok, %d errors in %d loops" %
                     (name, s["ok"], s["errors"], s["loops"]))
        lines += ["  %s: %d, from rollout %d to %d" %
                  (kind, n, when(figures, first), when(figures, last))
                  for kind, (n, first, last) in s["kinds"].items()]
    return "\n".join(lines)


def mounts_at(path):
    """Mount points at or below path in this mount namespace."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [p for p in points if p == path or p.startswith(path + "/")]


def nothing_left(node, session, binaries):
    """What is left of the test ({} when nothing), removed: mounts below the node
    directory, containers, processes of the daemons' binaries."""
    try:
        wait_for(lambda: not binaries.processes(), "every daemon process to end", timeout=30)
    except AssertionError:
        pass
    left = {"containers": session.containers(), "processes": binaries.processes(),
            "mounts": list(node.close())}
    left["mounts"] += mounts_at(node.path)  # node.close() detached its own bind too
    session.remove_containers()
    return {k: v for k, v in left.items() if v}


@pytest.fixture
def session():
    s = Session(BIN)
    yield s
    s.close()


@pytest.fixture
def sleeper():
    """A host process whose files the agent reads (its host pid)."""
    p = subprocess.Popen(["sleep", "100000"])
    def comm():
        with open("/proc/%d/comm" % p.pid) as f:
            return f.read()
    wait_for(lambda: comm() == "sleep\n", "the sleeper's exec")
    yield p.pid
    p.kill()
    p.wait()


def test_rollouts_and_rollbacks_under_reading_pods(session, sleeper):
    node, binaries = NodeDir(), Binaries(session.work)
    started, finished = time.monotonic(), False
    try:
        rollout = Rollout(session, node, binaries)
        consumers = Consumers(session, node, sleeper)
        for number in range(1, ROLLOUTS + 1):
            rollout.roll(number)
            consumers.wait_progress()
        final = consumers.stop()
        rollout.stop()
        assert node.mounts() == {}, "SIGTERM without a successor must unmount"
        finished = True
    finally:
        if not finished:  # a failure's leftovers, forced (podman rm -f kills them all)
            session.remove_containers()
        left = nothing_left(node, session, binaries)
    if REPORT:
        with open(REPORT, "w") as f:
            json.dump({"rollouts": rollout.figures, "consumers": final,
                       "seconds": time.monotonic() - started}, f)
    assert not left, left
    assert all(s["errors"] == 0 for s in final.values()), describe(final, rollout.figures)
