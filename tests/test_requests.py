"""What the kernel asks the daemon: a listing that answers the lookups tools make next
saves them (READDIRPLUS, fs/ops/dir_reply.h). Counted from the daemon's debug log, with
names kept an hour, so that no lifetime runs out between the listing and the walk."""
import os


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
