"""The test's own copy of the kernel's process events (the proc connector), to know when
a process's EXIT event has been sent: the daemon can drop a reaped process from its
listing only once it has, and the kernel sends it after it told the parent
(kernel/exit.c: exit_notify, then proc_exit_connector), so a parent's wait() can return
before it.

Make it before the daemon starts: the kernel hands a broadcast to the sockets of its
group newest first (netlink's mc_list, hlist_add_head at bind), so the daemon's socket,
bound later, has each event queued by the time this one receives it.

It withdraws its listen request when it closes, as the daemon does: kernels before 6.6
count listeners, not sockets, and keep sending for one that never withdrew.
"""
import errno
import os
import select
import socket
import struct
import time

NETLINK_CONNECTOR = 11
CN_IDX_PROC = CN_VAL_PROC = 1
PROC_CN_MCAST_LISTEN = 1
PROC_CN_MCAST_IGNORE = 2
PROC_EVENT_FORK = 0x00000001
PROC_EVENT_EXIT = 0x80000000
NLMSG_DONE = 3
SO_RCVBUFFORCE = 33
RCVBUF = 64 << 20  # every event of the machine comes here: room for tens of thousands
NLMSG = struct.Struct("=IHHII")
CN_MSG = struct.Struct("=IIIIHH")
EVENT = struct.Struct("=IIQ")  # what, cpu, timestamp_ns; then the event's data
EXIT = struct.Struct("=IIII")  # pid, tgid, exit_code, exit_signal
FORK = struct.Struct("=IIII")  # parent pid, parent tgid, child pid, child tgid


class EventsLost(Exception):
    """This socket overflowed: an EXIT event may be among the ones dropped."""


class ProcEvents:
    """A socket of the connector's group. listen=False: one that only receives, what any
    socket bound to the group gets while the kernel counts a listener (kernels before
    6.6 send to every such socket)."""

    def __init__(self, listen=True):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
        self.sock.bind((0, CN_IDX_PROC))
        self.listening = listen
        if listen:
            self.request(PROC_CN_MCAST_LISTEN)

    def request(self, mcast_op):
        """Sends a listen or ignore request; the kernel handles it within the send."""
        op = struct.pack("=I", mcast_op)
        cn = CN_MSG.pack(CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(op), 0) + op
        self.sock.send(NLMSG.pack(NLMSG.size + len(cn), NLMSG_DONE, 0, 0, os.getpid()) + cn)

    def close(self):
        if self.listening:
            self.request(PROC_CN_MCAST_IGNORE)
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _events(self, data, what, body):
        """body's fields of each event of type what in a datagram, with its stamp last."""
        off = 0
        while off + NLMSG.size <= len(data):
            length = NLMSG.unpack_from(data, off)[0]
            ev = off + NLMSG.size + CN_MSG.size
            if length < NLMSG.size or ev + EVENT.size + body.size > len(data):
                return
            kind, _, stamp = EVENT.unpack_from(data, ev)
            if kind == what:
                yield body.unpack_from(data, ev + EVENT.size) + (stamp,)
            off += (length + 3) & ~3

    def _exits(self, data):
        """(pid, tgid, exit_code, exit_signal, stamp_ns) of each EXIT event in a datagram."""
        return self._events(data, PROC_EVENT_EXIT, EXIT)

    def sends_events(self):
        """Whether the kernel sends process events now: a child is forked and reaped,
        and its FORK event looked for among what is queued. The kernel queues an event
        before fork() returns (copy_process), so nothing is waited for."""
        self._drain()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return any(child == pid for data in self._drain()
                   for _, _, child, _, _ in self._events(data, PROC_EVENT_FORK, FORK))

    def _drain(self):
        """Every datagram queued now; an overflow is only noted by the kernel."""
        out = []
        while True:
            try:
                out.append(self.sock.recv(65536, socket.MSG_DONTWAIT))
            except BlockingIOError:
                return out
            except OSError as e:
                if e.errno != errno.ENOBUFS:
                    raise

    def wait_exit(self, pid, since_ns, timeout=30):
        """Waits for the EXIT event of process pid's leader sent after since_ns
        (time.monotonic_ns(), the events' clock), reading every event before it."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                raise TimeoutError("no EXIT event of pid %d in %d s" % (pid, timeout))
            try:
                data = self.sock.recv(65536)
            except OSError as e:
                if e.errno == errno.ENOBUFS:
                    raise EventsLost("the test's own event socket overflowed") from e
                raise
            for p, tgid, _, _, stamp in self._exits(data):
                if p == pid and tgid == pid and stamp >= since_ns:
                    return
