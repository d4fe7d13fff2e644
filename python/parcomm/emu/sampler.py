"""Sampling switch port queues during a run, for their maximum occupancy.

``tc -s qdisc`` only tells the backlog *now*; the simulator reports each
port's maximum. A background thread asks the kernel for every qdisc of the
switch namespace (one ``RTM_GETQDISC`` dump over a netlink socket opened
inside it) every ``interval_s`` and keeps the largest backlog of each leaf.
Sampling sees a lower bound of the true maximum: a queue that fills and
drains between two samples goes unnoticed. One dump is a single system call
and a small parse, so sampling every few milliseconds costs little CPU.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

from .netns import in_netns

__all__ = ["QueueSampler", "dump_qdiscs"]

_RTM_NEWQDISC, _RTM_GETQDISC = 36, 38
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_DONE, _NLMSG_ERROR = 3, 2
_TCA_STATS2, _TCA_STATS_QUEUE = 7, 3
_NLMSG_HDR = struct.Struct("=IHHII")
_TCMSG = struct.Struct("=BxxxiIII")
_RTATTR = struct.Struct("=HH")


def _attrs(buf: bytes, off: int, end: int):
    while off + 4 <= end:
        ln, typ = _RTATTR.unpack_from(buf, off)
        if ln < 4:
            return
        yield typ & 0x3FFF, off + 4, off + ln
        off += (ln + 3) & ~3


def dump_qdiscs(sock: socket.socket, seq: int) -> list[tuple[int, int, int, int, int]]:
    """One dump: ``(ifindex, handle, qlen, backlog_bytes, drops)`` per qdisc."""
    req = _NLMSG_HDR.pack(_NLMSG_HDR.size + _TCMSG.size, _RTM_GETQDISC, _NLM_F_REQUEST | _NLM_F_DUMP, seq, 0)
    sock.send(req + _TCMSG.pack(0, 0, 0, 0, 0))
    out: list[tuple[int, int, int, int, int]] = []
    while True:
        data = sock.recv(1 << 16)
        off = 0
        while off + _NLMSG_HDR.size <= len(data):
            ln, typ, _flags, _seq, _pid = _NLMSG_HDR.unpack_from(data, off)
            if ln < _NLMSG_HDR.size:
                return out
            if typ in (_NLMSG_DONE, _NLMSG_ERROR):
                return out
            if typ == _RTM_NEWQDISC:
                body = off + _NLMSG_HDR.size
                _fam, ifindex, handle, _parent, _info = _TCMSG.unpack_from(data, body)
                for t, a, b in _attrs(data, body + _TCMSG.size, off + ln):
                    if t != _TCA_STATS2:
                        continue
                    for t2, a2, _b2 in _attrs(data, a, b):
                        if t2 == _TCA_STATS_QUEUE:
                            qlen, backlog, drops = struct.unpack_from("=III", data, a2)
                            out.append((ifindex, handle, qlen, backlog, drops))
            off += (ln + 3) & ~3


class QueueSampler:
    """Max backlog of chosen leaf qdiscs of one namespace, sampled in the background.

    ``devs`` maps device names to report keys; ``units`` maps report keys to
    "bytes" (report the backlog in bytes) or "packets" (report qlen).
    """

    def __init__(
        self, netns: str, devs: dict[str, str], units: dict[str, str], leaf_handle: int, interval_s: float = 0.002
    ):
        self.interval_s = interval_s
        self.leaf_handle = leaf_handle
        self.units = units
        self.max: dict[str, int] = {k: 0 for k in devs.values()}
        self.samples = 0
        self._stop = threading.Event()

        def open_sock():
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
            s.bind((0, 0))
            s.settimeout(1.0)
            idx = {socket.if_nametoindex(d): key for d, key in devs.items()}
            return s, idx

        self._sock, self._key_of = in_netns(netns, open_sock)
        self._thread = threading.Thread(target=self._loop, name=f"qsampler-{netns}", daemon=True)

    def _loop(self) -> None:
        seq = 1
        try:
            while not self._stop.is_set():
                seq += 1
                for ifindex, handle, qlen, backlog, _drops in dump_qdiscs(self._sock, seq):
                    key = self._key_of.get(ifindex)
                    if key is None or handle != self.leaf_handle:
                        continue
                    v = backlog if self.units.get(key) == "bytes" else qlen
                    if v > self.max[key]:
                        self.max[key] = v
                self.samples += 1
                time.sleep(self.interval_s)
        except OSError:
            pass  # the namespace went away under us: keep what we have

    def __enter__(self) -> QueueSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> dict[str, int]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        with contextlib.suppress(OSError):
            self._sock.close()
        return self.max
