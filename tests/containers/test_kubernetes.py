"""packaging/kubernetes/ in real containers (podman 4.3 + runc; no Kubernetes here).

What podman 4.3's `kube play` does with the specs' fields (checked by these tests where
it matters): hostPath types Directory, DirectoryOrCreate, File and CharDevice are
honoured (File refuses a missing path, creating nothing); mountPropagation
HostToContainer becomes rslave and Bidirectional rshared; hostNetwork, privileged,
pod labels and resources.limits.memory are honoured. It ignores hostPID (the pod gets
its own pid namespace: containers.conf's pidns = "host" stands for it), plays no
DaemonSet (the template is played as a Pod), maps no readinessProbe (no healthcheck:
the probe's command is run by the test), restarts a container that exits (restartPolicy
Always, where the kubelet restarts none of a pod being deleted), ignores capabilities in
a privileged container (as containerd and CRI-O do) and has no --ulimit
(tests/lib/podman.py gives it containers.conf defaults). So the daemon with exactly the kept
capabilities is started with `podman run`'s equivalents (tests/lib/podman.py node_options):
--pid=host, --network=host, --cap-drop=all --cap-add=..., --device /dev/fuse,
-v /sys/fs/cgroup:/sys/fs/cgroup:ro, -v DIR:/var/lib/procfast:rshared.
"""
import json
import os
import re
import subprocess

import pytest
import yaml

from lib.build import BIN
from lib.mount import is_ns_helper
from lib.podman import (KUBE_DIR, NODE_BIN, NodeDir, Session, node_options, node_ready, podman,
                    sanitizer_env, start_time, wait_for)
from lib.caps import cap_numbers, documented_caps

MEM_LIMIT_KB = 256 * 1024
RESOURCE_FILES = ["meminfo", "cpuinfo", "stat", "uptime", "loadavg", "swaps", "diskstats"]


def spec(name):
    with open(os.path.join(KUBE_DIR, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def daemonset_container():
    ds = spec("procfast-daemonset.yaml")[0]
    return ds, ds["spec"]["template"]["spec"]["containers"][0]


def bounding_set(pid="self"):
    with open("/proc/%s/status" % pid) as f:
        return int(re.search(r"^CapBnd:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)


def usable_caps():
    """The kept capabilities this host can give a container: all of them where the
    host's bounding set has them (this sandbox lacks CAP_SYS_RESOURCE)."""
    nums, ours = cap_numbers(), bounding_set()
    return [c[4:] for c in documented_caps() if ours >> nums[c] & 1]


def mask(caps):
    nums = cap_numbers()
    return sum(1 << nums["CAP_" + c.upper()] for c in caps)


def mountinfo_line(text, point):
    return [l for l in text.splitlines() if l.split()[4] == point][0]


@pytest.fixture(scope="module")
def session():
    s = Session(BIN)
    yield s
    s.close()


# The daemon in the node's container is the build under test, sanitized ones too: a
# container inherits no environment, so tests/lib/podman.py sanitizer_env passes tests/run's
# sanitizer settings in (without its LeakSanitizer suppressions, the ASan build's
# `procfast -o daemon=` failed at exit and the entrypoint ended the container).
NODE_PROCFAST = BIN


def start_node(session, node, procfast_bin=NODE_PROCFAST, more=()):
    c = session.run(node_options(node, procfast_bin, usable_caps()) + list(more),
                    ["/opt/procfast/procfast-node"])
    wait_for(lambda: node_ready(c), "the daemon container's readiness")
    return c


def stop_node(c):
    """SIGTERM to the entrypoint alone, as the kubelet stops a container, and its exit.
    (podman stop signals every process of a container that has no pid namespace of its
    own, the daemon's servers too: runc kill --all.)"""
    podman("kill", "-s", "TERM", c.id)
    podman("wait", c.id, timeout=90)
    code = int(c.inspect("{{.State.ExitCode}}"))
    logs = podman("logs", c.id).stderr
    c.remove()
    return code, logs


def node_served(session, more=()):
    n = NodeDir()
    try:
        c = start_node(session, n, more=more)
        yield n
        code, logs = stop_node(c)
        assert code == 0, logs
        assert n.mounts() == {}, "SIGTERM without a successor must unmount"
    finally:
        assert n.close() == {}


@pytest.fixture(scope="module")
def node(session):
    """A node's /var/lib/procfast served by the DaemonSet's container, run as podman
    runs it: exactly the kept capabilities, not privileged."""
    yield from node_served(session)


@pytest.fixture
def node_own_cgroupns(session):
    """The same with a cgroup namespace of its own, as Kubernetes runs every container
    on cgroup v2 nodes: from there another pod's cgroup reads "/../../pod/ctr"."""
    yield from node_served(session, ["--cgroupns=private"])


# The specs --------------------------------------------------------------------------

def test_daemonset_spec():
    ds, c = daemonset_container()
    pod = ds["spec"]["template"]["spec"]
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    assert pod["hostPID"] is True and pod["hostNetwork"] is True
    assert pod["terminationGracePeriodSeconds"] >= 30
    assert c["readinessProbe"]["exec"]["command"] == ["/usr/sbin/procfast-node", "ready"]
    # privileged only because Kubernetes allows Bidirectional in no other container
    sc = c["securityContext"]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/var/lib/procfast"]["mountPropagation"] == "Bidirectional"
    assert sc["privileged"] is True
    # the capabilities it is given, and the bounding set the entrypoint cuts to, are
    # exactly those procfast(8) says the daemon keeps
    kept = [c[4:] for c in documented_caps()]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert sc["capabilities"] == {"drop": ["ALL"], "add": kept}
    assert env["PROCFAST_CAPS"].split(",") == [k.lower() for k in kept]
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["fuse"]["hostPath"] == {"path": "/dev/fuse", "type": "CharDevice"}
    assert vols["procfast"]["hostPath"]["path"] == "/var/lib/procfast"
    # resources=caller reads every pod's cgroup: the node's hierarchies, not the
    # container's own (tests/lib/podman.py node_options binds the same)
    assert vols["cgroup"]["hostPath"] == {"path": "/sys/fs/cgroup", "type": "Directory"}
    assert mounts["/sys/fs/cgroup"]["readOnly"] is True


def test_lxcfs_style_pod_spec_binds_every_resource_file_as_a_file():
    pod = spec("lxcfs-style-pod.yaml")[0]["spec"]
    vols = {v["name"]: v["hostPath"] for v in pod["volumes"]}
    binds = {m["mountPath"]: vols[m["name"]] for m in pod["containers"][0]["volumeMounts"]}
    assert binds == {"/proc/" + f: {"path": "/var/lib/procfast/resources/" + f, "type": "File"}
                     for f in RESOURCE_FILES}


def under(node_path, host_path):
    """A hostPath of the specs with the node directory in place of /var/lib/procfast."""
    return dict(host_path, path=host_path["path"].replace("/var/lib/procfast", node_path, 1))


def playable(pod, node_path, command):
    """A spec's Pod with the node directory in place of /var/lib/procfast and a command
    of the tests' image (BusyBox in /bb)."""
    pod = dict(pod, spec=dict(pod["spec"]))
    pod["spec"]["volumes"] = [dict(v, hostPath=under(node_path, v["hostPath"]))
                              if "hostPath" in v else v for v in pod["spec"]["volumes"]]
    pod["spec"]["containers"] = [dict(c, command=command) for c in pod["spec"]["containers"]]
    return pod


def test_agent_pod_reads_the_hosts_processes(session, node):
    """agent-pod.yaml: /host/proc is the node's mount, read-only and HostToContainer
    (rslave), and shows a process of the host as the host's /proc does."""
    host = subprocess.Popen(["sleep", "100007"])
    try:
        wait_for(lambda: open("/proc/%d/cmdline" % host.pid).read().startswith("sleep"),
                 "the host process to exec")
        name, r = session.kube_play(playable(spec("agent-pod.yaml")[0], node.path,
                                             ["/bb/sleep", "100000"]))
        assert r.returncode == 0, r.stderr
        cid = name + "-agent"
        line = mountinfo_line(podman("exec", cid, "/bb/cat", "/proc/self/mountinfo").stdout,
                              "/host/proc")
        assert " ro," in line and " master:" in line and " - fuse.procfast " in line, line
        # a glob, not ls: ls also stats each entry, and processes come and go
        listed = podman("exec", cid, "/bb/sh", "-c", "cd /host/proc && echo *").stdout.split()
        assert str(host.pid) in listed and "1" in listed
        keys = ("Name:", "State:", "Tgid:", "Pid:", "PPid:", "Uid:", "Gid:")
        inside = podman("exec", cid, "/bb/cat", "/host/proc/%d/status" % host.pid,
                        "/host/proc/%d/cmdline" % host.pid).stdout
        with open("/proc/%d/status" % host.pid) as f:
            real = [l for l in f.read().splitlines() if l.startswith(keys)]
        assert [l for l in inside.splitlines() if l.startswith(keys)] == real
        assert inside.endswith("sleep\x00100007\x00")
    finally:
        host.kill()
        host.wait()
        session.remove_pods()


def cgroup_memory_limit_kb(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        path = [l.split(":", 2)[2].strip() for l in f if l.split(":")[1] == "memory"][0]
    with open("/sys/fs/cgroup/memory%s/memory.limit_in_bytes" % path) as f:
        return int(f.read()) // 1024


@pytest.mark.parametrize("made", ["empty resources dir", "nothing"])
def test_lxcfs_style_pod_refused_without_procfast(session, made):
    """After a node reboot /var/lib/procfast/resources is an empty directory (or not
    there at all) until procfast mounts: the pod is refused, and nothing is made at
    the files' paths (type: File; DirectoryOrCreate would make directories there and
    the pod would run with them over its /proc files)."""
    n = NodeDir()
    try:
        if made != "nothing":
            os.mkdir(os.path.join(n.path, "resources"))
        before = sorted(os.listdir(n.path))
        pod = playable(spec("lxcfs-style-pod.yaml")[0], n.path, ["/bb/sleep", "100000"])
        name, r = session.kube_play(pod)
        assert r.returncode != 0
        assert "meminfo" in r.stderr or "does not exist" in r.stderr, r.stderr
        running = podman("ps", "-q", "--filter", "pod=" + name, check=False).stdout.split()
        assert running == []
        assert sorted(os.listdir(n.path)) == before
        if made != "nothing":
            assert os.listdir(os.path.join(n.path, "resources")) == []
    finally:
        session.remove_pods()
        assert n.close() == {}


@pytest.mark.parametrize("daemon_cgroupns", ["host", "own"])
def test_lxcfs_style_pod_sees_its_memory_limit(session, request, daemon_cgroupns):
    """lxcfs-style-pod.yaml against a running node: the pod's /proc/meminfo (procfast's
    resources=caller file bound over it) gives its cgroup's memory limit as MemTotal,
    not the node's. (Its container has a pid namespace of its own, whose init is in
    the limited cgroup; the daemon needs the node's cgroup hierarchies to find it, and
    reads them in the host's cgroup namespace when its container has one of its own:
    fs/cgroup/cgroup_fs.h cgroup_fs_enter_init_ns.)"""
    node = request.getfixturevalue("node" if daemon_cgroupns == "host" else "node_own_cgroupns")
    try:
        name, r = session.kube_play(playable(spec("lxcfs-style-pod.yaml")[0], node.path,
                                             ["/bb/sleep", "100000"]))
        assert r.returncode == 0, r.stderr
        cid = name + "-app"
        limit = cgroup_memory_limit_kb(int(podman("inspect", "-f", "{{.State.Pid}}", cid).stdout))
        assert limit == MEM_LIMIT_KB
        inside = podman("exec", cid, "/bb/cat", "/proc/meminfo").stdout
        assert re.search(r"^MemTotal:\s+(\d+) kB$", inside, re.M).group(1) == str(limit), inside
        with open("/proc/meminfo") as f:
            host = re.search(r"^MemTotal:\s+(\d+) kB$", f.read(), re.M).group(1)
        assert int(host) > limit  # else the test could not tell the two apart
    finally:
        session.remove_pods()


# The DaemonSet's own pod under kube play --------------------------------------------

ENTRYPOINT = "/opt/procfast/procfast-node"


def daemonset_pod(node_path, procfast_bin):
    """procfast-daemonset.yaml's pod template as a Pod (podman 4.3's kube play plays no
    DaemonSet: "YAML document does not contain any supported kube kind"), with the node
    directory for /var/lib/procfast, and the entrypoint, the daemon and the host's /usr
    bound into the tests' image where the spec's image has them installed.
    restartPolicy Never: a pod being deleted has no container restarted by the kubelet,
    where podman would restart one that exits after a SIGTERM (Always, the default)."""
    ds, _ = daemonset_container()
    t = json.loads(json.dumps(ds["spec"]["template"]))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": dict(t["metadata"], name="procfast"),
           "spec": dict(t["spec"], restartPolicy="Never")}
    c = pod["spec"]["containers"][0]
    c["command"] = [ENTRYPOINT]
    c["readinessProbe"]["exec"]["command"] = [ENTRYPOINT, "ready"]
    c["volumeMounts"] += [{"name": "usr", "mountPath": "/usr", "readOnly": True},
                          {"name": "bin", "mountPath": NODE_BIN, "readOnly": True},
                          {"name": "entry", "mountPath": ENTRYPOINT, "readOnly": True}]
    pod["spec"]["volumes"] = [dict(v, hostPath=under(node_path, v["hostPath"]))
                              if "hostPath" in v else v for v in pod["spec"]["volumes"]]
    pod["spec"]["volumes"] += [
        {"name": "usr", "hostPath": {"path": "/usr", "type": "Directory"}},
        {"name": "bin", "hostPath": {"path": procfast_bin, "type": "File"}},
        {"name": "entry", "hostPath": {"path": os.path.join(KUBE_DIR, "procfast-node"),
                                       "type": "File"}}]
    env, files = sanitizer_env()
    c["env"] += [{"name": "PROCFAST_BIN", "value": NODE_BIN}] + \
        [{"name": k, "value": v} for k, v in env.items()]
    for i, path in enumerate(files):
        c["volumeMounts"].append({"name": "san%d" % i, "mountPath": path, "readOnly": True})
        pod["spec"]["volumes"].append({"name": "san%d" % i,
                                       "hostPath": {"path": path, "type": "File"}})
    return pod


def descendants(pid):
    """pid's children, their children..., from the host's /proc."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/task/%d/children" % (p, p)) as f:
                kids = [int(k) for k in f.read().split()]
        except OSError:
            kids = []
        found += kids
        todo += kids
    return found


def test_daemonset_pod_under_kube_play(session):
    """The DaemonSet's pod as kube play runs it (privileged, hostNetwork, Bidirectional,
    the spec's volumes and entrypoint): both mounts reach the node directory and serve
    the node's processes as its /proc does; the kubelet's stop (SIGTERM to the
    entrypoint) unmounts, and removing the pod leaves nothing. podman 4.3 ignores
    hostPID: containers.conf's pidns = "host" stands for it. It maps no readinessProbe
    (the container has no healthcheck, so podman's health status never turns
    healthy): the spec's probe command is run here, as the kubelet would."""
    n = NodeDir()
    host = subprocess.Popen(["sleep", "100008"])
    pids = []
    try:
        wait_for(lambda: open("/proc/%d/cmdline" % host.pid).read().startswith("sleep"),
                 "the host process to exec")
        name, r = session.kube_play(daemonset_pod(n.path, NODE_PROCFAST),
                                    conf=['pidns = "host"'])
        assert r.returncode == 0, r.stderr
        cid = name + "-procfast"
        probe = daemonset_container()[1]["readinessProbe"]["exec"]["command"]
        assert probe == ["/usr/sbin/procfast-node", "ready"]
        wait_for(lambda: podman("exec", cid, ENTRYPOINT, *probe[1:], check=False).returncode == 0,
                 "the readiness probe", timeout=120)
        entry = int(podman("inspect", "-f", "{{.State.Pid}}", cid).stdout)
        pids = [(p, start_time(p)) for p in [entry] + descendants(entry)]
        assert os.readlink("/proc/%d/ns/pid" % entry) == os.readlink("/proc/self/ns/pid")
        # privileged, and still bounded to the kept capabilities by the entrypoint
        assert bounding_set(entry) == mask(usable_caps())
        mounts = {p[len(n.path):]: i for p, i in n.mounts().items()}
        assert sorted(mounts) == ["/proc", "/resources"], mounts
        with open("/proc/self/mountinfo") as f:
            info = f.read()
        for point in ("/proc", "/resources"):
            assert " - fuse.procfast " in mountinfo_line(info, n.path + point)
        proc = n.path + "/proc"
        assert str(host.pid) in os.listdir(proc) and "1" in os.listdir(proc)
        keys = ("Name:", "State:", "Tgid:", "Pid:", "PPid:", "Uid:", "Gid:")
        for path in ("%d/status" % host.pid, "%d/cmdline" % host.pid, "1/cmdline",
                     "version", "cmdline", "filesystems"):
            with open("/proc/" + path) as real, open(os.path.join(proc, path)) as mirror:
                a, b = real.read(), mirror.read()
            if path.endswith("status"):
                a, b = ([l for l in t.splitlines() if l.startswith(keys)] for t in (a, b))
            assert b == a, path
        # the kubelet's stop: SIGTERM to the entrypoint alone, then the pod removed
        podman("kill", "-s", "TERM", cid)
        podman("wait", cid, timeout=90)
        assert int(podman("inspect", "-f", "{{.State.ExitCode}}", cid).stdout) == 0, \
            podman("logs", cid).stderr
        assert n.mounts() == {}, "SIGTERM without a successor must unmount"
        podman("pod", "rm", "-f", "-t", "0", name)  # only the infra container still runs
        assert session.pods() == []
        assert podman("ps", "-a", "-q", "--filter", "pod=" + name).stdout.split() == []
        wait_for(lambda: not [p for p, t in pids if start_time(p) == t],
                 "the pod's processes to end")
    finally:
        host.kill()
        host.wait()
        session.remove_pods()
        assert n.close() == {}


# The daemon with exactly the kept capabilities --------------------------------------

READER = r"""
import json, os, sys
out = {}
for base in sys.argv[2:]:
    got = out[base] = {}
    for name in ("environ", "maps", "fd", "cwd", "exe", "root", "fd/0", "fd/3", "fdinfo/3"):
        path = "%s/%s/%s" % (base, sys.argv[1], name)
        try:
            if name in ("cwd", "exe", "root") or name.startswith("fd/"):
                got[name] = os.readlink(path)
            elif name == "fd":
                got[name] = sorted(os.listdir(path))
            else:
                with open(path, "rb") as f:
                    got[name] = f.read().hex()
        except OSError as e:
            got[name] = "errno %d" % e.errno
print(json.dumps(out))
"""

AS = {"root": [], "nobody": ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"],
      "pfuser": ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--"]}


def node_daemon_pids(node):
    """The supervisor and servers of node's container: argv[0] NODE_BIN, their
    /var/lib/procfast node's directory (helpers, made for some callers, are not
    counted)."""
    want = os.stat(node.path)
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                if f.read().split(b"\0")[0] != NODE_BIN.encode():
                    continue
            st = os.stat("/proc/%s/root/var/lib/procfast" % name)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (want.st_dev, want.st_ino) and not is_ns_helper(int(name)):
            found.append(int(name))
    return found


def test_kept_capabilities_give_each_caller_what_proc_gives(node):
    """The daemon as the DaemonSet runs it, with exactly the kept capabilities (those
    this host has): root, the process's own user and another user read a nobody
    process's environ, maps, fd, cwd, exe, root and fd links, started after the daemon,
    through the mount and through /proc: the same answers, the same errors."""
    os.chmod(node.path, 0o755)  # mkdtemp's 0700 would stop every other user at the node dir
    daemons = node_daemon_pids(node)
    assert daemons
    for pid in daemons:
        with open("/proc/%d/status" % pid) as f:
            eff = int(re.search(r"^CapEff:\s*([0-9a-f]+)$", f.read(), re.M).group(1), 16)
        assert eff == mask(usable_caps()), pid
    target = subprocess.Popen(AS["nobody"] + ["sh", "-c", "exec sleep 100009 3</etc/hostname"],
                              cwd="/tmp")
    try:
        wait_for(lambda: open("/proc/%d/cmdline" % target.pid).read().startswith("sleep"),
                 "the nobody process to exec")
        got = {}
        for who, prefix in AS.items():
            r = subprocess.run(prefix + ["/usr/bin/python3", "-c", READER, str(target.pid),
                                         "/proc", node.path + "/proc"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            got[who] = json.loads(r.stdout)
            real, mirror = got[who]["/proc"], got[who][node.path + "/proc"]
            assert mirror == real, who
        # the comparison saw both kinds of answer: root's and the owner's, another's refusal
        assert "errno" not in got["root"]["/proc"]["environ"]
        assert "errno" not in got["nobody"]["/proc"]["maps"]
        assert got["pfuser"]["/proc"]["environ"] == "errno 13"
    finally:
        target.kill()
        target.wait()
