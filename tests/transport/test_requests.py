"""What the kernel asks the daemon: a listing that answers the lookups tools make next
saves them (READDIRPLUS, fs/request/dir_reply.h). Counted from the daemon's debug log, with
names kept an hour, so that no lifetime runs out between the listing and the walk."""
import os
import time


def lookups(mount):
    return mount.output().count("opcode: LOOKUP ")


def walked_mount(mount_with, victim):
    m = mount_with("debug", "entry_timeout=3600")
    # A listing applies the process events queued before it: the victim is indexed,
    # and its directory's names are cached from now on.
    assert str(victim.pid) in os.listdir(m.path)
    os.stat(m.p(victim.pid, "fd"))
    os.stat(m.p(victim.pid, "fdinfo"))
    return m


def test_fd_listing_answers_the_lookups(mount_with, victim):
    m = walked_mount(mount_with, victim)
    real = "/proc/%d/fd" % victim.pid
    names = os.listdir(m.p(victim.pid, "fd"))
    assert sorted(names, key=int) == sorted(os.listdir(real), key=int)
    before = lookups(m)
    for n in names:
        assert os.readlink(m.p(victim.pid, "fd", n)) == os.readlink(os.path.join(real, n))
        assert os.lstat(m.p(victim.pid, "fd", n)).st_mode == os.lstat(os.path.join(real, n)).st_mode
    assert lookups(m) == before, "fd/ names looked up after the listing"


def test_other_listings_answer_none(mount_with, victim):
    """fdinfo/ and the root are listed without lookups (the root's would stat every
    process): each name is looked up at its first use, which the count sees."""
    m = walked_mount(mount_with, victim)
    names = os.listdir(m.p(victim.pid, "fdinfo"))
    before = lookups(m)
    for n in names:
        os.stat(m.p(victim.pid, "fdinfo", n))
    assert lookups(m) >= before + len(names)
    pids = [p for p in os.listdir(m.path) if p.isdigit() and p != str(victim.pid)]
    before = lookups(m)
    looked = 0
    for p in pids:
        try:
            os.stat(m.p(p))
            looked += 1
        except FileNotFoundError:
            pass  # exited since the listing; its lookup is counted all the same
    assert lookups(m) >= before + looked


def getattrs(mount):
    return mount.output().count("opcode: GETATTR ")


# Attributes kept for ATTR_S seconds: a walk refreshes each directory's once, and what
# it asks again within the same call is answered from the cache.
ATTR_S = 2


def stat_getattrs(mount, path):
    """GETATTRs that one stat() of path makes once every attribute kept for ATTR_S has
    expired."""
    time.sleep(ATTR_S + 0.1)
    before = getattrs(mount)
    st = os.stat(path)
    return getattrs(mount) - before, st


def test_namespace_attributes_last_with_the_process(mount_with, victim):
    """What stat() through ns/X says is the namespace's file, whose attributes never
    change: cached while the process lives, past attr_timeout, as the same through fd/N
    to a socket is not (a socket can be chown'ed, a pipe's times move).
    A walk to the target asks for the attributes of the directories on the way (root,
    ns/) as stat() of ns/ itself does; the target's own come from the cache."""
    m = mount_with("debug", "attr_timeout=%d" % ATTR_S)
    assert str(victim.pid) in os.listdir(m.p())  # indexed: its names cacheable
    real = "/proc/%d/" % victim.pid
    ns = m.p(victim.pid, "ns", "net")
    assert os.stat(ns).st_ino == os.stat(real + "ns/net").st_ino
    walk, _ = stat_getattrs(m, m.p(victim.pid, "ns"))
    asked, st = stat_getattrs(m, ns)
    assert st.st_ino == os.stat(real + "ns/net").st_ino
    assert asked == walk, "the namespace's attributes were asked again"
    sock = next(n for n in os.listdir(real + "fd")
                if os.readlink(real + "fd/" + n).startswith("socket:"))
    os.stat(m.p(victim.pid, "fd", sock))
    walk, _ = stat_getattrs(m, m.p(victim.pid, "fd"))
    asked, st = stat_getattrs(m, m.p(victim.pid, "fd", sock))
    assert st.st_ino == os.stat(real + "fd/" + sock).st_ino
    assert asked == walk + 1, "a socket's attributes cached"
