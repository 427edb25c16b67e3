"""node_exporter over the mount (`--path.procfs=`, as an agent given /host/proc runs it)
gives what it gives over /proc, for the same caller in the same namespaces.

Each persona runs two exporters at once, one on /proc and one on the mount, in a network
namespace of its own (tests/helpers/exporter_pair.py), scraped /proc, mount, /proc. What
the two /proc scrapes agree on is stable, and the mount's scrape must give it:
- every series (metric and labels): the collectors that succeed and fail, the CPUs,
  the network devices of the exporters' own namespace (procfs answers /proc/net in its
  reader's), the mounts, the pressure and memory fields;
- the values that do not change by themselves (STABLE_VALUES) and each collector's
  success.
A round where the /proc scrapes disagree, or where the mount's differs from both (a
process that lived only through it), is made again.

The mount's scrape is also made while root's share of the daemon's threads is taken:
every request the exporter makes is refused until it frees, and Go must wait, by making
it again, rather than for ever (fs/caller/fair.h).
"""
import json
import os
import re
import subprocess

import pytest

from lib.build import ROOT
from lib.mount import Mount
from lib.users import NOBODY, setpriv_root, setpriv_user

PAIR = os.path.join(ROOT, "tests", "helpers", "exporter_pair.py")
TRIES = 5
PERSONAS = {"root": [], "nobody": setpriv_user(NOBODY), "root_nocaps": setpriv_root([])}
# Series that come and go by themselves: a process state counted only while some
# process is in it (the exporter itself runs, R, in some scrapes and not others).
VARYING = ("node_processes_state", "node_processes_threads_state")
# Values that change only with the machine's configuration, and the number of processes,
# which a process of the machine's changes only now and then (every pid the mount lists).
STABLE_VALUES = ("node_boot_time_seconds", "node_memory_MemTotal_bytes",
                 "node_memory_SwapTotal_bytes", "node_processes_max_processes",
                 "node_processes_max_threads", "node_filefd_maximum", "node_processes_pids")
SERIES = re.compile(r"^([a-zA-Z_:][\w:]*(?:\{.*\})?) (\S+)$")


def series(text):
    """{name{labels}: value} of a scrape, without the varying series."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SERIES.match(line)
        assert m, "not a sample line: %r" % line
        if not m.group(1).startswith(VARYING):
            out[m.group(1)] = m.group(2)
    return out


def scrapes(mnt, persona, held=()):
    r = subprocess.run(["unshare", "-n", "/usr/bin/python3", PAIR, mnt.path] + list(held)
                       + PERSONAS[persona], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, "%s\nthe daemon's log:\n%s" % (r.stderr, mnt.output()[-4000:])
    return [series(t) for t in json.loads(r.stdout)]


def compared(a, b):
    """The keys and values the mount's scrape b must share with the /proc scrape a."""
    keys = set(a)
    values = {k: a[k] for k in a
              if k.startswith(STABLE_VALUES + ("node_scrape_collector_success",))}
    return keys, values, {k: b.get(k) for k in values}


def difference(before, mounted, after):
    """Why the mount's scrape differs from the /proc scrapes that agree; "" when it does
    not; None when the two /proc scrapes disagree."""
    keys, want, got = compared(before, mounted)
    if keys != set(after) or want != compared(after, mounted)[1]:
        return None
    if keys != set(mounted):
        return "series only on /proc: %s\nonly on the mount: %s" % (
            sorted(keys - set(mounted))[:20], sorted(set(mounted) - keys)[:20])
    return "" if got == want else "values: /proc %s, mount %s" % (
        {k: v for k, v in want.items() if got[k] != v},
        {k: v for k, v in got.items() if want[k] != v})


@pytest.fixture(scope="module")
def mnt():
    """A mount with the default shares: the exporter's collectors read at once, and
    some of their requests may be refused past the uid's share, which Go makes again."""
    m = Mount()
    yield m
    m.close()


def assert_a_round_agrees(mnt, persona, held=()):
    """A process that lives only through the mount's scrape changes its pid count:
    another round. A fault of the mount's shows in every round."""
    seen = []
    for _ in range(TRIES):
        before, mounted, after = scrapes(mnt, persona, held)
        why = difference(before, mounted, after)
        if why == "":
            for name in STABLE_VALUES:
                assert name in before, "%s not in the scrape: %s" % (name, sorted(before))
            # /proc/net/dev read in the exporter's network namespace: its devices only
            assert {k for k in before if k.startswith("node_network_receive_bytes_total")} == {
                'node_network_receive_bytes_total{device="lo"}'}
            return
        seen.append(why or "the two /proc scrapes differ")
    pytest.fail("no round of %d agreed:\n%s" % (TRIES, "\n".join(seen)))


@pytest.mark.parametrize("persona", sorted(PERSONAS))
def test_node_exporter_scrape(mnt, persona):
    assert_a_round_agrees(mnt, persona)


def test_a_go_agent_refused_past_its_share_waits_and_is_served(mount_with):
    """Go registers every file it opens with its epoll poller, which a FUSE file accepts;
    a read that ended with EAGAIN would wait for a readiness event that never comes
    (node_exporter hung for ever). Root may have one request served at once; a read of
    kmsg of root's, on the exporters' CPU, waits in the daemon for a second of the mount's
    scrape, and every request the exporter makes meanwhile is refused (the scrape cannot
    end: exporter_pair.py checks). Once the read ends, the scrape must end and give what
    /proc gives."""
    m = mount_with("max_busy_per_uid=1")
    cpu = sorted(os.sched_getaffinity(0))[0]
    assert_a_round_agrees(m, "root", ("--held", str(m.server_pid()), str(cpu)))
    assert "uid 0 has its share of threads busy (1)" in m.output()
