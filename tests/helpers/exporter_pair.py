"""Two node_exporters side by side, one given the real /proc and one the mount, scraped
/proc, mount, /proc; prints the three scrapes as JSON.

Run by tests/tools/test_node_exporter.py in a network namespace of its own: the ports
are private (no other listener can hold them), and /proc/net is that namespace's, for
both exporters (procfs answers /proc/net in its reader's network namespace): the
network devices are read from /proc/net/dev, where they would be from netlink.

argv: MOUNT_PATH, then the command prefix the exporters run under (setpriv ...), if any.
"""
import json
import subprocess
import sys
import tempfile
import time
import urllib.request

EXPORTER = "prometheus-node-exporter"
PORTS = {"/proc": 9100, "mount": 9101}
START_WAIT_S = 30


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=60) as r:
        return r.read().decode()


def wait_listening(port, proc, log):
    deadline = time.time() + START_WAIT_S
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit("node_exporter on port %d exited with %d:\n%s"
                     % (port, proc.returncode, log.read()))
        try:
            scrape(port)
            return
        except OSError:
            time.sleep(0.1)
    log.seek(0)
    sys.exit("node_exporter on port %d never answered in %d s:\n%s"
             % (port, START_WAIT_S, log.read()[-4000:]))


def main():
    mount, prefix = sys.argv[1], sys.argv[2:]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    procs, logs = {}, {}
    try:
        for where, procfs in (("/proc", "/proc"), ("mount", mount)):
            logs[where] = tempfile.TemporaryFile("w+")
            procs[where] = subprocess.Popen(
                prefix + [EXPORTER, "--path.procfs=" + procfs, "--collector.processes",
                          # the devices from /proc/net/dev, not from netlink, and
                          # lo too (the namespace's only one)
                          "--no-collector.netdev.netlink",
                          "--collector.netdev.device-exclude=^$",
                          "--web.listen-address=127.0.0.1:%d" % PORTS[where]],
                stdout=subprocess.DEVNULL, stderr=logs[where])
        for where, p in procs.items():
            wait_listening(PORTS[where], p, logs[where])
        print(json.dumps([scrape(PORTS["/proc"]), scrape(PORTS["mount"]),
                          scrape(PORTS["/proc"])]))
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


main()
