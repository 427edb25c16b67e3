"""Issue 21: the access matrix. Every caller (persona) x every target process x every
operation on the target's entries, under each procfs mode: procfast must give each
caller what a real procfs gives it, read by the same caller in the same namespaces.

The matrix is generated from the tables below, so a persona, a target, a sysctl or a
mode is one line. Per persona and mode one caller process (tests/helpers/
matrix_probe.py) performs the whole list on both trees, in a private mount namespace
where the real procfs is mounted with the mode's options, and reports the cells that
differ. Each test prints the matrix's size and the differing cells, and fails on any.
"""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass

import pytest

from lib.build import HELPERS, ROOT
from lib.kernel import has_fuse_passthrough
from lib.mount import Mount, is_ns_helper
from lib.users import setpriv_root, setpriv_user

TARGET_BIN = os.path.join(HELPERS, "matrix_target")
PROBE = os.path.join(ROOT, "tests", "helpers", "matrix_probe.py")


# podman's and docker's default set
CONTAINER_CAPS = ["chown", "dac_override", "fowner", "fsetid", "kill", "net_bind_service",
                  "setfcap", "setgid", "setpcap", "setuid", "sys_chroot"]

# User namespaces host root makes (with their own net, ipc and uts namespaces), by the
# host uid their root maps to: 0 as `unshare -Ur` gives root, 100000 as a rootful
# `podman --userns` container's. Each maps WORLD_IDS ids, not only its root: the setgid
# target needs a second gid there.
WORLDS = {"host": None, "userns_own": 0, "userns_high": 100000}
WORLD_IDS = 65536

# persona: (its world, the command that makes the world's root into it)
PERSONAS = {
    "nobody": ("host", setpriv_user(65534)),
    # may ptrace every task, so its checks of a thread's fd/ link pass, yet enters a
    # task's fd/ (mode 0500) only as its owner
    "nobody_ptracer": ("host", setpriv_user(65534, ["sys_ptrace"])),
    "uid1000": ("host", setpriv_user(1000)),
    "root_nocaps": ("host", setpriv_root([])),
    "root_container_caps": ("host", setpriv_root(CONTAINER_CAPS)),
    "root_userns_own": ("userns_own", []),
    "root_userns_high": ("userns_high", []),
}

# procfast's options, the same as the real procfs's ("" none: the default mount); and
# procfast's own, which the real procfs is mounted without: snapshot (each open reads a
# snapshot made at the open, for its opener: tests/mirror/test_snapshot.py), where the
# kernel has FUSE passthrough
PROCFAST_ONLY = {"snapshot"}
MODES = ["", "hidepid=0", "hidepid=1", "hidepid=2", "subset=pid"] + (
    ["snapshot"] if has_fuse_passthrough() else [])


def procfs_options(mode):
    return ",".join(o for o in mode.split(",") if o and o not in PROCFAST_ONLY)

SETGID_GID = 4242   # in the persona's world


@dataclass
class Target:
    pid: int
    tid: int            # the thread whose task/TID/ is walked
    own: bool = False   # the test's own process: its files are written (their own values)
    serves: bool = False  # the server: it opens an fd for each file the probe opens


# target: how it is found, from the lab, the persona and the mount under test
TARGETS = {
    "root": lambda lab, who, m: lab.root,
    "same_uid": lambda lab, who, m: lab.as_caller(who),
    "nondumpable": lambda lab, who, m: lab.as_caller(who, "--nondumpable"),
    "setgid": lambda lab, who, m: lab.as_caller(who, "--setresgid", setgid=True),
    "userns_root": lambda lab, who, m: lab.holders["userns_high"],
    "userns_caller": lambda lab, who, m: lab.as_caller(who, via=("unshare", "--user")),
    "zombie": lambda lab, who, m: lab.as_caller(who, "--zombie", zombie=True),
    # root's, but the walked thread (or the leader) took nobody's ids for itself alone
    # (a raw setresuid)
    "thread_own_ids": lambda lab, who, m: lab.own_ids["thread"],
    "leader_own_ids": lambda lab, who, m: lab.own_ids["leader"],
    "server": lambda lab, who, m: daemon_target(m.server_pid(), "pf-events", serves=True),
    "supervisor": lambda lab, who, m: daemon_target(m.proc.pid),
    "nsh_maker": lambda lab, who, m: daemon_target(nsh_maker(m)),
    "nsh_helper": lambda lab, who, m: daemon_target(lab.nsh_helper(m)),
    "kthreadd": lambda lab, who, m: Target(2, 2),
}

# written with the value this caller reads in its namespaces
SYSCTLS = ["net/ipv4/ip_forward", "net/ipv4/ip_unprivileged_port_start",
           "net/ipv4/conf/all/rp_filter", "net/ipv4/ping_group_range", "net/core/somaxconn",
           "kernel/hostname", "kernel/domainname", "kernel/msgmax", "fs/mqueue/msg_max",
           "user/max_user_namespaces", "vm/swappiness"]

# directories of PID/ listed; below fd, fdinfo, map_files, task and ns only the names
# listed here are taken (a thread's net/ is its process's)
LISTINGS = ["", "fd", "fdinfo", "map_files", "task", "ns", "net",
            "task/{tid}", "task/{tid}/fd", "task/{tid}/fdinfo"]
FD_TABLES = {"fd", "fdinfo", "task/{tid}/fd", "task/{tid}/fdinfo"}
# The server closes the fd it served a file with only when the kernel's RELEASE, sent
# after close() returned, reaches it: /proc lists its fd tables once it has. (Its fd/
# seen through the mount also lists the fd it is listed with: a difference that shows
# unless an fd the daemon caches closes just then and the listing takes its number.)
FD_SETTLE = 0.01
# Lines that are noise at every read, which two /proc reads may show the same by chance
# ("": every line: net/netlink's rows count the bytes queued on each socket at the
# instant, the daemon's own proc-connector socket among them, which fills with the
# host's process events while it serves; only whether it opens is compared.)
NOISE = {"sched": ["clock-delta"], "netlink": [""]}
NOT_WALKED = {"fd", "fdinfo", "map_files", "task", "ns"}
# Cells where procfast refuses what /proc allows, for a reason README names ("What
# differs"): (persona, target, kind, path). Only a refusal is let through, never more access.
# - sys/user/*: the ucount table lets a user namespace's root write by its capability
#   alone (set_permissions), behind root-owned 0644 attributes; the kernel's mode check
#   over FUSE (default_permissions) refuses it before the daemon is asked.
KNOWN_REFUSALS = {("root_userns_high", "sysctl", "write", "sys/user/max_user_namespaces")}
# Cells where procfast answers ENOENT, whatever /proc answers, for a reason README names:
# (mode, target, path prefix).
# - hidepid=invisible, a thread the caller may not ptrace in a process it may: procfs
#   walks through task/TID by its mode alone (a thread's directory has no permission op)
#   but fails a stat of it with ENOENT; over FUSE a walk asks for the attributes a stat
#   gets (default_permissions), so everything below answers ENOENT.
KNOWN_HIDDEN = {("hidepid=2", "leader_own_ids", "task/{tid}/")}


# ------------------------------------------------------------------ processes

class Started:
    """A matrix_target (behind whatever prefix started it): ends at stdin EOF."""

    def __init__(self, argv, stdin_line=None, before=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd="/", start_new_session=True)
        if before:
            before(self.proc.pid)
        if stdin_line is not None:
            self.proc.stdin.write(stdin_line)
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError("%s exited %s" % (argv, self.proc.returncode))
        self.info = json.loads(line)

    def target(self, zombie=False):
        if zombie:
            return Target(self.info["zombie"], self.info["zombie"], own=True)
        return Target(self.info["pid"], self.info["tid"], own=True)

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def write_maps(base):
    """The maps of a process that made a user namespace: root is host uid `base`."""
    def write(pid):
        me = os.readlink("/proc/self/ns/user")
        deadline = time.time() + 10
        while os.readlink("/proc/%d/ns/user" % pid) == me:
            assert time.time() < deadline, "no user namespace made"
            time.sleep(0.005)
        for name in ("uid_map", "gid_map"):
            with open("/proc/%d/%s" % (pid, name), "w") as f:
                f.write("0 %d %d\n" % (base, WORLD_IDS))
    return write


def start_in_world(base):
    """A target that is root in a new user namespace (and net, ipc, uts) made by host
    root, as a rootful container's: it waits for host root to write the maps (as
    newuidmap would), then becomes the namespace's root."""
    become_root = 'read _ && exec setpriv --reuid=0 --regid=0 --clear-groups --inh-caps=-all "$@"'
    return Started(["unshare", "--user", "--keep-caps", "--net", "--ipc", "--uts",
                    "sh", "-c", become_root, "sh", TARGET_BIN],
                   stdin_line="\n", before=write_maps(base))


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(c) for c in f.read().split()]


def daemon_target(pid, thread=None, serves=False):
    """One of the daemon's processes; its task/TID/ is the thread named `thread` (an
    idle one: a thread serving the probe's own requests is not what /proc shows)."""
    tid = pid
    for t in os.listdir("/proc/%d/task" % pid) if thread else ():
        with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
            if f.read().strip() == thread:
                tid = int(t)
    return Target(pid, tid, serves=serves)


def nsh_maker(mount):
    makers = [c for c in children(mount.server_pid()) if is_ns_helper(c)]
    assert makers, "the server has no procfast-nsh"
    return makers[0]


class Lab:
    """Everything the matrix reads: targets, user namespaces, mounts, the real procfs's
    mount point. Targets of a persona are started once and kept for every mode."""

    def __init__(self):
        self.started = []
        self.mounts = {}
        self.callers = {}
        self.tmp = tempfile.mkdtemp(prefix="procfast-matrix-")
        os.chmod(self.tmp, 0o755)   # the setgid binaries are run by every persona
        self.procfs = os.path.join(self.tmp, "proc")
        os.mkdir(self.procfs)

    def start(self):
        self.worlds = {w: self.keep(start_in_world(base)) for w, base in WORLDS.items()
                       if base is not None}
        self.holders = {w: s.target() for w, s in self.worlds.items()}
        self.root = self.keep(Started([TARGET_BIN])).target()
        self.own_ids = {who: self.keep(Started([TARGET_BIN, "--%s-ids" % who, "65534"])).target()
                        for who in ("thread", "leader")}
        # a user namespace no persona uses: the ns helper serving it is a target
        self.anchor = self.keep(Started(["unshare", "-Ur", TARGET_BIN])).info["pid"]
        self.setgid_bins = {w: self.setgid_copy(w) for w in WORLDS}

    def keep(self, started):
        self.started.append(started)
        return started

    def enter(self, world):
        """The command that takes host root into the world, as its root."""
        if WORLDS[world] is None:
            return []
        return ["nsenter", "-t", str(self.worlds[world].info["pid"]),
                "--user", "--net", "--ipc", "--uts"]

    def setgid_copy(self, world):
        """matrix_target as a setgid binary of SETGID_GID; owned by ids the world maps
        (else execve ignores the bit)."""
        base = WORLDS[world] or 0
        path = os.path.join(self.tmp, "setgid-" + world)
        shutil.copy(TARGET_BIN, path)
        os.chown(path, base, base + SETGID_GID)
        os.chmod(path, 0o2755)
        return path

    def as_caller(self, persona, flag=None, setgid=False, via=(), zombie=False):
        """A target started as the persona (in its world, with its credentials)."""
        world, prefix = PERSONAS[persona]
        binary = self.setgid_bins[world] if setgid else TARGET_BIN
        argv = self.enter(world) + prefix + list(via) + [binary] + ([flag] if flag else [])
        key = tuple(argv)
        if key not in self.callers:
            self.callers[key] = self.keep(Started(argv))
        return self.callers[key].target(zombie)

    def mount(self, mode):
        if mode not in self.mounts:
            self.mounts[mode] = Mount(mode.split(",") if mode else ())
        return self.mounts[mode]

    def nsh_helper(self, mount):
        """The helper serving the anchor's namespace: a read from it makes (or keeps,
        helpers end after 30 s of disuse) one."""
        subprocess.run(["nsenter", "-t", str(self.anchor), "--user", "cat",
                        mount.p("self/status")], stdout=subprocess.DEVNULL, check=True)
        ns = os.readlink("/proc/%d/ns/user" % self.anchor)
        helpers = [c for c in children(nsh_maker(mount))
                   if os.readlink("/proc/%d/ns/user" % c) == ns]
        assert helpers, "no procfs-nsh serves the anchor's namespace"
        return helpers[0]

    def probe(self, persona, mode, ops):
        """Runs the caller: a private mount namespace with the real procfs mounted with
        the mode's options, then the persona's world and credentials."""
        world, prefix = PERSONAS[persona]
        mount_procfs = 'mount -t proc ${1:+-o "$1"} proc "$2" && shift 2 && exec "$@"'
        argv = (["unshare", "-m", "--propagation", "private", "sh", "-c", mount_procfs, "sh",
                 procfs_options(mode), self.procfs] + self.enter(world) + prefix +
                ["/usr/bin/python3", PROBE, self.procfs, self.mount(mode).path])
        r = subprocess.run(argv, input=json.dumps(ops), capture_output=True, text=True,
                           timeout=120, cwd="/")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def close(self):
        for s in self.started:
            s.stop()
        for m in self.mounts.values():
            m.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


# ------------------------------------------------------------------ the cells

def names(path):
    try:
        return sorted(os.listdir(path), key=lambda n: (len(n), n))
    except OSError:
        return []


def walk(top, rel, skip):
    """Regular files and links below top/rel as host root sees them, relative to top."""
    files, links = [], []
    for name in names(os.path.join(top, rel)):
        sub = os.path.join(rel, name)
        try:
            mode = os.lstat(os.path.join(top, sub)).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            files.append(sub)
        elif stat.S_ISLNK(mode):
            links.append(sub)
        elif stat.S_ISDIR(mode) and name not in skip:
            more = walk(top, sub, ())
            files += more[0]
            links += more[1]
    return files, links


def current(path):
    """What host root reads: the value a write gives back (None: nothing to give)."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("latin-1")
    except OSError:
        return None


def writes(top, tid, files):
    """(file, its value) for every writable file host root reads something from (a
    write of nothing writes nothing: FUSE does not even pass it on)."""
    out = []
    for rel in files:
        path = os.path.join(top, rel.replace("{tid}", str(tid)))
        try:
            writable = os.lstat(path).st_mode & 0o222
        except OSError:
            continue
        value = current(path) if writable else None
        if value:
            out.append((rel, value))
    return out


def target_cells(name, t):
    """[(target, kind, path template, arg)]: every entry of PID/ and task/TID/."""
    top = "/proc/%d" % t.pid
    thread = "task/%d" % t.tid
    files, links = walk(top, "", NOT_WALKED)
    tfiles, tlinks = walk(top, thread, NOT_WALKED | {"net"})
    files += ["fdinfo/" + n for n in names(top + "/fdinfo")]
    files += [f.replace(thread, "task/{tid}", 1) for f in tfiles]
    links += ["fd/" + n for n in names(top + "/fd")] + ["ns/" + n for n in names(top + "/ns")]
    links += [link.replace(thread, "task/{tid}", 1) for link in tlinks]
    cells = [(name, "listed", "", str(t.pid))]
    cells += [(name, "list", d, FD_SETTLE if t.serves and d in FD_TABLES else None)
              for d in LISTINGS]
    cells += [(name, "readlink", p, None) for p in links]
    cells += [(name, "read", p, NOISE.get(os.path.basename(p))) for p in files]
    cells += [(name, "open_rw", p, None) for p in files]
    cells += [(name, "poll", p, None) for p in files]
    if t.own:
        cells += [(name, "write", f, v) for f, v in writes(top, t.tid, files)]
    return cells


def sysctl_cells():
    return ([("sysctl", "read", "sys/" + s, None) for s in SYSCTLS] +
            [("sysctl", "write", "sys/" + s, None) for s in SYSCTLS])


def resolve(cell, pids):
    """The probe's operation for a cell: its path in the tree."""
    name, kind, tmpl, arg = cell
    if name == "sysctl" or kind == "listed":
        return [kind, tmpl, arg]
    t = pids[name]
    path = os.path.join(str(t.pid), tmpl.replace("{tid}", str(t.tid)))
    return [kind, path.rstrip("/"), arg]


# ------------------------------------------------------------------ the tests

TOTAL = {"cells": 0, "differ": 0}


@pytest.fixture(scope="module")
def lab(request):
    lab = Lab()
    try:
        lab.start()
        yield lab
    finally:
        lab.close()
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print("\naccess matrix: %(cells)d cells, %(differ)d differ" % TOTAL)


def outcome(r):
    """A cell's outcome, ["ok", value] or ["err", "op:ERRNO"]; a long one comes cut
    (not JSON), and is then no refusal: None."""
    try:
        return json.loads(r) if isinstance(r, str) else r
    except ValueError:
        return None


def is_known_refusal(persona, mode, cell, on_proc, on_mount):
    target, kind, path, _ = cell
    if any(mode == m and target == t and path.startswith(prefix)
           for m, t, prefix in KNOWN_HIDDEN):
        on_mount = outcome(on_mount)
        return bool(on_mount) and on_mount[0] == "err" and on_mount[1].endswith(":ENOENT")
    if (persona, target, kind, path) not in KNOWN_REFUSALS:
        return False
    return [(outcome(r) or [None])[0] for r in (on_proc, on_mount)] == ["ok", "err"]


def cell_text(persona, mode, cell, on_proc, on_mount):
    target, kind, path, _ = cell
    return "%s %s %s %s %s: /proc %s, procfast %s" % (
        persona, mode or "default", target, kind, path or ".", on_proc, on_mount)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m or "default")
@pytest.mark.parametrize("persona", PERSONAS)
def test_matrix(lab, persona, mode):
    mount = lab.mount(mode)
    targets = {name: find(lab, persona, mount) for name, find in TARGETS.items()}
    cells = [c for name, t in targets.items() for c in target_cells(name, t)]
    cells += sysctl_cells()
    res = lab.probe(persona, mode, [resolve(c, targets) for c in cells])
    known = [cell_text(persona, mode, cells[i], a, b) for i, a, b in res["diffs"]
             if is_known_refusal(persona, mode, cells[i], a, b)]
    diffs = [cell_text(persona, mode, cells[i], a, b) for i, a, b in res["diffs"]
             if not is_known_refusal(persona, mode, cells[i], a, b)]
    for k in known:
        print("known refusal: " + k)
    TOTAL["cells"] += res["cells"]
    TOTAL["differ"] += len(diffs)
    print("%s %s (%s): %d cells, %d refused by /proc, %d differ" % (
        persona, mode or "default", res["caller"], res["cells"], res["refused"], len(diffs)))
    # /proc refuses every persona something: the comparison is not idle
    assert res["refused"] > 0
    if diffs:
        pytest.fail("%d of %d cells differ:\n%s" % (len(diffs), res["cells"], "\n".join(diffs)),
                    pytrace=False)
