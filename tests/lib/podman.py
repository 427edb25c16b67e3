"""Real containers for the tests: podman with runc (Debian 12's packages).

This host needs `--runtime runc --cgroup-manager=cgroupfs` (it mixes cgroup v1 and v2,
which crun refuses) and explicit ulimits. Images cannot be pulled: the one image is
built once per session from a directory (BusyBox applets in /bb, Debian's merged-/usr
symlinks and an empty /usr for binding the host's, for glibc's ps, top, lsof) and
imported.

Everything a session makes carries its owner (this process's pid and start time): the
containers a label, the image its name, the hooks' views a directory of their own.
`close()` removes all of it and checks that nothing of it is left: no container, no
view mounted, no view daemon, no view directory. A session that was killed before it
could clean up is cleaned up by the next one (its owner no longer runs).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

from lib import waiting
from lib.build import ROOT

PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]
ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
LABEL = "io.procfast.test.owner"
IMAGE_PREFIX = "localhost/procfast-test-"
TIMEOUT = 180  # one podman command on a loaded machine
HOOK = os.path.join(ROOT, "packaging", "containers", "procfast-oci-hook")
APPLETS = ["sh", "cat", "head", "ps", "sleep", "chroot", "stat", "ls", "kill", "true",
           "id", "test", "tr", "readlink", "grep", "free", "uptime"]
PASSWD = "root:x:0:0:root:/root:/bin/sh\npfuser:x:1000:1000::/tmp:/bin/sh\n" \
         "nobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"
GROUP = "root:x:0:\npfuser:x:1000:\nnogroup:x:65534:\n"


def podman(*args, check=True, timeout=TIMEOUT, **kw):
    r = subprocess.run(PODMAN + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout, stdin=subprocess.DEVNULL, **kw)
    if check and r.returncode:
        raise AssertionError("podman %s: rc %d\n%s%s" % (" ".join(map(str, args)),
                                                          r.returncode, r.stdout, r.stderr))
    return r


def start_time(pid):
    """A process's start time in clock ticks: with the pid, who it is."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def owner_alive(owner):
    pid, _, start = owner.partition("-")
    return pid.isdigit() and str(start_time(int(pid))) == start


def wait_for(condition, what, timeout=60):
    """waiting.wait_for, with the order of arguments of the container tests."""
    return waiting.wait_for(condition, timeout, what)


def _mini_root(path, image_root):
    """A root for one chroot: merged-/usr symlinks, an empty usr/ (the host's is bound
    there), proc/ (the procfs under test is bound there), BusyBox linked to the
    image's."""
    for d in ("usr", "proc", "etc", "bb", "tmp", "dev"):
        os.makedirs(os.path.join(path, d), exist_ok=True)
    for d in ("bin", "sbin", "lib", "lib64"):
        os.symlink("usr/" + d, os.path.join(path, d))
    with open(os.path.join(path, "etc", "passwd"), "w") as f:
        f.write(PASSWD)
    with open(os.path.join(path, "etc", "group"), "w") as f:
        f.write(GROUP)
    os.chmod(os.path.join(path, "tmp"), 0o1777)
    busybox = os.path.join(path, "bb", "busybox")
    if image_root != path:
        os.link(os.path.join(image_root, "bb", "busybox"), busybox)
    for applet in APPLETS:
        os.symlink("busybox", os.path.join(path, "bb", applet))


def build_image(name):
    """The image: a mini root at / and two more at /host and /realhost for the
    monitoring recipe (tools that always read /proc run chrooted into them)."""
    work = tempfile.mkdtemp(prefix="procfast-test-image-")
    try:
        root = os.path.join(work, "root")
        os.makedirs(os.path.join(root, "bb"))
        shutil.copy2(shutil.which("busybox", path="/usr/bin:/bin"), os.path.join(root, "bb"))
        _mini_root(root, root)
        os.makedirs(os.path.join(root, "sys"))
        for sub in ("host", "realhost"):
            _mini_root(os.path.join(root, sub), root)
        tar = os.path.join(work, "image.tar")
        subprocess.run(["tar", "-C", root, "-cf", tar, "."], check=True)
        podman("import", "-q", tar, name)
    finally:
        shutil.rmtree(work)


class Container:
    def __init__(self, session, cid):
        self.session = session
        self.id = cid

    def inspect(self, fmt):
        return podman("inspect", "-f", fmt, self.id).stdout.strip()

    @property
    def host_pid(self):
        return int(self.inspect("{{.State.Pid}}"))

    def exec(self, *cmd, check=True):
        """podman exec: the process sees the container's own /proc (a procfs)."""
        return podman("exec", self.id, *cmd, check=check)

    def in_view(self, *cmd, check=True, root="/.procfast-root"):
        """podman exec chrooted into the hook's second root: /proc is the view."""
        return podman("exec", self.id, "/bb/chroot", root, *cmd, check=check)

    def remove(self):
        podman("rm", "-f", "-t", "0", self.id)


class Session:
    """The image, the hooks and every container one test session makes."""

    def __init__(self, procfast_bin):
        self.owner = "%d-%d" % (os.getpid(), start_time(os.getpid()))
        self.bin_dir = os.path.dirname(procfast_bin)
        self.image = IMAGE_PREFIX + self.owner
        self.work = tempfile.mkdtemp(prefix="procfast-test-podman-")
        self.views = os.path.join(self.work, "views")
        self.hooks = os.path.join(self.work, "hooks.d")
        os.mkdir(self.views)
        remove_stale()
        self._write_hooks(procfast_bin)
        build_image(self.image)

    def _write_hooks(self, procfast_bin):
        """hooks.d entries like the packaged ones, naming this build and our views."""
        os.mkdir(self.hooks)
        env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "PROCFAST_BIN=" + procfast_bin,
               "PROCFAST_ATTACH=" + os.path.join(self.bin_dir, "procfast-attach"),
               "PROCFAST_VIEWS=" + self.views, "PROCFAST_CONTROL=/nonexistent"]
        for action, stage in (("start", "poststart"), ("stop", "poststop")):
            entry = {"version": "1.0.0",
                     "hook": {"path": HOOK, "args": ["procfast-oci-hook", action], "env": env},
                     "when": {"annotations": {"io.procfast.view": "^(root|true)$"}},
                     "stages": [stage]}
            with open(os.path.join(self.hooks, action + ".json"), "w") as f:
                json.dump(entry, f)

    def run(self, options, cmd, hooks=False, check=True):
        """podman run -d: a Container, or with check=False the failed run's result."""
        args = (["--hooks-dir", self.hooks] if hooks else []) + \
            ["run", "-d", "--label", "%s=%s" % (LABEL, self.owner)] + ULIMITS + \
            list(options) + [self.image] + list(cmd)
        r = podman(*args, check=check)
        if r.returncode:
            return r
        return Container(self, r.stdout.strip().splitlines()[-1])

    def run_with_view(self, cmd, options=(), root="/.procfast-root", enter=()):
        """A container whose workload (cmd) runs in the hook's second root, entered by
        procfast-enter: the recipe of the README."""
        opts = ["--annotation", "io.procfast.view=root", "-v", "/usr:/usr:ro",
                "-v", "%s:/procfast-enter:ro" % os.path.join(self.bin_dir, "procfast-enter")]
        if root != "/.procfast-root":
            opts += ["--annotation", "io.procfast.root=" + root]
        return self.run(opts + list(options), ["/procfast-enter"] + list(enter) + [root] +
                        list(cmd), hooks=True)

    def containers(self):
        r = podman("ps", "-a", "-q", "--no-trunc", "--filter", "label=%s=%s" % (LABEL, self.owner))
        return r.stdout.split()

    def view_mounts(self):
        """Mount points of the hooks' views still mounted, seen from here."""
        with open("/proc/self/mounts") as f:
            return [line.split()[1] for line in f if line.split()[1].startswith(self.views + "/")]

    def view_daemons(self, cid=None):
        """procfast processes serving one of our views, or container cid's (their
        command line names it)."""
        prefix = os.path.join(self.views, cid or "").encode()
        found = []
        for name in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if any(a == prefix if cid else a.startswith(prefix) for a in argv):
                found.append(int(name))
        return found

    def leftovers(self):
        """What of ours is still there: {} when nothing. Daemons are given a while to
        end after their view is unmounted."""
        try:
            wait_for(lambda: not self.view_daemons(), "view daemons to end", timeout=20)
        except AssertionError:
            pass
        left = {"containers": self.containers(), "pods": self.pods(), "mounts": self.view_mounts(),
                "daemons": self.view_daemons(), "view dirs": os.listdir(self.views)}
        return {k: v for k, v in left.items() if v}

    def kube_play(self, pod, conf=()):
        """podman kube play of one Pod (a dict): named and labelled as ours, its images
        (any) replaced by ours; conf: more containers.conf [containers] lines. The
        result (check=False: a refused pod's too)."""
        pod = json.loads(json.dumps(pod))
        pod["metadata"]["name"] += "-" + self.owner
        pod["metadata"].setdefault("labels", {})[LABEL] = self.owner
        for c in pod["spec"]["containers"]:
            c["image"] = self.image
        path = os.path.join(self.work, pod["metadata"]["name"] + ".json")
        with open(path, "w") as f:
            json.dump(pod, f)  # JSON is YAML
        env = dict(os.environ, CONTAINERS_CONF=self._kube_conf(conf))
        r = podman("kube", "play", path, check=False, env=env)
        return pod["metadata"]["name"], r

    def _kube_conf(self, more=()):
        """kube play has no --ulimit: the same limits as containers.conf defaults."""
        path = os.path.join(self.work, "containers.conf")
        limits = ", ".join('"%s"' % ULIMITS[i + 1] for i in range(0, len(ULIMITS), 2))
        with open(path, "w") as f:
            f.write("[containers]\ndefault_ulimits = [%s]\n" % limits)
            f.writelines(line + "\n" for line in more)
        return path

    def pods(self):
        r = podman("pod", "ps", "-q", "--no-trunc", "--filter", "label=%s=%s" % (LABEL, self.owner))
        return r.stdout.split()

    def remove_pods(self):
        for pod in self.pods():
            podman("pod", "rm", "-f", "-t", "0", pod, check=False)

    def remove_containers(self):
        for cid in self.containers():
            podman("rm", "-f", "-t", "0", cid, check=False)

    def close(self):
        """Removes everything of ours, then fails if something had to be forced."""
        self.remove_pods()
        self.remove_containers()
        left = self.leftovers()
        for path in self.view_mounts():
            subprocess.run(["umount", "-l", path], check=False)
        for pid in self.view_daemons():
            os.kill(pid, signal.SIGKILL)
        podman("rmi", "-f", self.image, check=False)
        shutil.rmtree(self.work, ignore_errors=True)
        assert not left, "left behind by the hooks: %s" % left


def remove_stale():
    """Containers, pods and images of sessions that were killed before they could clean
    up."""
    r = podman("pod", "ps", "--filter", "label=" + LABEL,
               "--format", '{{.ID}} {{index .Labels "%s"}}' % LABEL, check=False)
    for line in r.stdout.splitlines():
        pid, _, owner = line.partition(" ")
        if not owner_alive(owner):
            podman("pod", "rm", "-f", "-t", "0", pid, check=False)
    r = podman("ps", "-a", "--no-trunc", "--filter", "label=" + LABEL,
               "--format", '{{.ID}} {{index .Labels "%s"}}' % LABEL, check=False)
    for line in r.stdout.splitlines():
        cid, _, owner = line.partition(" ")
        if not owner_alive(owner):
            podman("rm", "-f", "-t", "0", cid, check=False)
    r = podman("images", "--format", "{{.Repository}}", check=False)
    for repo in r.stdout.split():
        if repo.startswith(IMAGE_PREFIX) and not owner_alive(repo[len(IMAGE_PREFIX):]):
            podman("rmi", "-f", repo, check=False)


# The Kubernetes DaemonSet's container (packaging/kubernetes/) run as podman would ------

KUBE_DIR = os.path.join(ROOT, "packaging", "kubernetes")
NODE_BIN = "/opt/procfast/procfast"  # where the daemon containers see the binary


class NodeDir:
    """A directory standing for a node's /var/lib/procfast: bound on itself and made
    rshared, as a Bidirectional hostPath needs, so that the daemon containers' mounts
    below it reach the host and the consumers."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="procfast-test-node-")
        subprocess.run(["mount", "--bind", self.path, self.path], check=True)
        subprocess.run(["mount", "--make-rshared", self.path], check=True)

    def mounts(self):
        """{mount point: mount id} of the mounts below it, seen from the host."""
        found = {}
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if fields[4].startswith(self.path + "/"):
                    found[fields[4]] = fields[0]
        return found

    def close(self):
        """Detaches whatever is left below it and removes it: what was left."""
        left = self.mounts()
        for point in sorted(left, reverse=True):
            subprocess.run(["umount", "-l", point], check=False)
        subprocess.run(["umount", "-l", self.path], check=False)
        shutil.rmtree(self.path, ignore_errors=True)
        return left


def node_options(node, procfast_bin, caps):
    """podman's equivalent of the DaemonSet's pod: hostPID (--pid=host), hostNetwork,
    exactly caps (not privileged: podman allows rshared without it), /dev/fuse, the
    node's cgroup hierarchies (resources=caller reads other pods' cgroups), the
    hostPath with Bidirectional (rshared). The image is the tests' (the host's /usr
    bound), the entrypoint and procfast_bin bound in."""
    env, files = sanitizer_env()
    return (sum((["-e", "%s=%s" % kv] for kv in env.items()), []) +
            sum((["-v", "%s:%s:ro" % (f, f)] for f in files), []) +
            ["--pid=host", "--network=host", "--cap-drop=all"] +
            ["--cap-add=" + c for c in caps] +
            ["--device", "/dev/fuse", "-v", "/usr:/usr:ro", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro",
             "-v", "%s:%s:ro" % (procfast_bin, NODE_BIN),
             "-v", "%s:/opt/procfast/procfast-node:ro" % os.path.join(KUBE_DIR, "procfast-node"),
             "-e", "PROCFAST_BIN=" + NODE_BIN,
             "-e", "PROCFAST_CAPS=" + ",".join(c.lower() for c in caps),
             "-v", "%s:/var/lib/procfast:rshared" % node.path])


def sanitizer_env():
    """tests/run's sanitizer settings ({name: value}) and the files they name, for a
    sanitized daemon in a container, which inherits no environment. Without
    LSAN_OPTIONS' suppressions (tests/lsan.supp), LeakSanitizer fails the exit of the
    entrypoint's `procfast -o daemon=` (libfuse's mount point string), and the
    entrypoint, under set -e, ends the container and its daemon with it."""
    env = {k: os.environ[k] for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
           if os.environ.get(k)}
    files = [m.group(1) for v in env.values()
             for m in re.finditer(r"(?:^|:)suppressions=([^:]+)", v)]
    return env, files


def node_ready(container):
    """The DaemonSet's readiness probe, run in the container."""
    return container.exec("/opt/procfast/procfast-node", "ready", check=False).returncode == 0


def node_daemons():
    """Processes of the daemon containers' procfast (its argv[0] is NODE_BIN)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                if f.read().split(b"\0")[0] == NODE_BIN.encode():
                    found.append(int(name))
        except OSError:
            continue
    return found
