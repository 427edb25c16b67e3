"""The test's own copy of the kernel's process events (the proc connector), to know when
a process's EXIT event has been sent: the daemon can drop a reaped process from its
listing only once it has, and the kernel sends it after it told the parent
(kernel/exit.c: exit_notify, then proc_exit_connector), so a parent's wait() can return
before it.

Make it before the daemon starts: the kernel hands a broadcast to the sockets of its
group newest first (netlink's mc_list, hlist_add_head at bind), so the daemon's socket,
bound later, has each event queued by the time this one receives it.
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
PROC_EVENT_EXIT = 0x80000000
NLMSG_DONE = 3
SO_RCVBUFFORCE = 33
RCVBUF = 64 << 20  # every event of the machine comes here: room for tens of thousands
NLMSG = struct.Struct("=IHHII")
CN_MSG = struct.Struct("=IIIIHH")
EVENT = struct.Struct("=IIQ")  # what, cpu, timestamp_ns; then the event's data
EXIT = struct.Struct("=IIII")  # pid, tgid, exit_code, exit_signal


class EventsLost(Exception):
    """This socket overflowed: an EXIT event may be among the ones dropped."""


class ProcEvents:
    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
        self.sock.bind((0, CN_IDX_PROC))
        op = struct.pack("=I", PROC_CN_MCAST_LISTEN)
        cn = CN_MSG.pack(CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(op), 0) + op
        self.sock.send(NLMSG.pack(NLMSG.size + len(cn), NLMSG_DONE, 0, 0, os.getpid()) + cn)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _exits(self, data):
        """(pid, tgid, exit_code, stamp_ns) of each EXIT event in a datagram."""
        off = 0
        while off + NLMSG.size <= len(data):
            length = NLMSG.unpack_from(data, off)[0]
            ev = off + NLMSG.size + CN_MSG.size
            if length < NLMSG.size or ev + EVENT.size + EXIT.size > len(data):
                return
            what, _, stamp = EVENT.unpack_from(data, ev)
            if what == PROC_EVENT_EXIT:
                pid, tgid, code, _ = EXIT.unpack_from(data, ev + EVENT.size)
                yield pid, tgid, code, stamp
            off += (length + 3) & ~3

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
            for p, tgid, _, stamp in self._exits(data):
                if p == pid and tgid == pid and stamp >= since_ns:
                    return
