"""packaging/kubernetes/ in real containers (podman 4.3 + runc; no Kubernetes here).

What podman 4.3's `kube play` does with the specs' fields (checked by these tests where
it matters): hostPath types Directory, DirectoryOrCreate, File and CharDevice are
honoured (File refuses a missing path, creating nothing); mountPropagation
HostToContainer becomes rslave and Bidirectional rshared; hostNetwork, privileged,
pod labels and resources.limits.memory are honoured. It ignores hostPID (the pod gets
its own pid namespace), plays no DaemonSet (the template is played as a Pod), ignores
capabilities in a privileged container (as containerd and CRI-O do) and has no
--ulimit (tests/podman.py gives it containers.conf defaults). So the daemon as the node
runs it (hostPID, exactly the kept capabilities) is started with `podman run`'s
equivalents (tests/podman.py node_options): --pid=host, --network=host,
--cap-drop=all --cap-add=..., --device /dev/fuse, -v DIR:/var/lib/procfast:rshared.
"""
import os
import re
import subprocess

import pytest
import yaml

from conftest import BIN, ROOT
from podman import KUBE_DIR, NodeDir, Session, node_options, node_ready, podman, wait_for
from test_privileges import cap_numbers, documented_caps

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


# The daemon in the node's container is the plain build: the AddressSanitizer build's
# daemon died there (its mounts left ENOTCONN) under tests/run's sanitized stage, a
# cause not yet found (issue 22's note); the sanitizers still run every host test.
NODE_PROCFAST = os.path.join(ROOT, "build", "procfast") if "build-asan" in BIN else BIN


def start_node(session, node, procfast_bin=NODE_PROCFAST):
    c = session.run(node_options(node, procfast_bin, usable_caps()), ["/opt/procfast/procfast-node"])
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


@pytest.fixture(scope="module")
def node(session):
    """A node's /var/lib/procfast served by the DaemonSet's container, run as podman
    runs it: exactly the kept capabilities, not privileged."""
    n = NodeDir()
    try:
        c = start_node(session, n)
        yield n
        code, logs = stop_node(c)
        assert code == 0, logs
        assert n.mounts() == {}, "SIGTERM without a successor must unmount"
    finally:
        assert n.close() == {}


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
