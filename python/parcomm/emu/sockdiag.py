"""Sampling TCP sockets' state (``struct tcp_info``) in the emulated hosts, over sock_diag.

The kernel's tracepoints give exact retransmission and congestion-state
events but no congestion window of a sending socket (``tcp:tcp_probe`` fires
on arriving data). So a background thread asks each chosen namespace for
its TCP sockets (one ``SOCK_DIAG_BY_FAMILY`` dump with ``INET_DIAG_INFO``,
what ``ss -ti`` reads) every ``interval_s`` and keeps, per socket, time,
cwnd, ssthresh, RTO, backoff and retransmission totals. A window that
changes and changes back between two samples goes unseen.

Offsets of ``struct tcp_info`` are those of ``include/uapi/linux/tcp.h``
(stable ABI: fields are only ever appended).
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

from .netns import in_netns

__all__ = ["SocketSampler", "parse_dump"]

_SOCK_DIAG_BY_FAMILY = 20
_NETLINK_SOCK_DIAG = 4
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_DONE, _NLMSG_ERROR = 3, 2
_INET_DIAG_INFO = 2
_NLMSG_HDR = struct.Struct("=IHHII")
# inet_diag_req_v2: family, protocol, ext, pad, states, then inet_diag_sockid (48 bytes, zero: all sockets).
_REQ = struct.Struct("=BBBxI48x")
_MSG_LEN = 72  # sizeof(struct inet_diag_msg)
_RTATTR = struct.Struct("=HH")
_TCPF_ESTABLISHED_ETC = 0xFFE  # every state but TCP_LISTEN (bit 10 kept for CLOSE_WAIT..., 0 unused)

# struct tcp_info offsets (bytes): (name, offset, struct format)
_FIELDS = (
    ("ca_state", 1, "B"),
    ("retransmits", 2, "B"),
    ("backoff", 4, "B"),
    ("rto_us", 8, "I"),
    ("unacked", 24, "I"),
    ("lost", 32, "I"),
    ("retrans", 36, "I"),
    ("rtt_us", 68, "I"),
    ("ssthresh", 76, "I"),
    ("cwnd", 80, "I"),
    ("total_retrans", 100, "I"),
    ("bytes_acked", 120, "Q"),
)
_NEED = 128


def _ip(b: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET, b[:4])


def parse_dump(data: bytes) -> tuple[list[dict], bool]:
    """Sockets in one netlink reply buffer, and whether the dump is complete."""
    out: list[dict] = []
    off = 0
    while off + _NLMSG_HDR.size <= len(data):
        ln, typ, _flags, _seq, _pid = _NLMSG_HDR.unpack_from(data, off)
        if ln < _NLMSG_HDR.size or off + ln > len(data):
            return out, True
        if typ in (_NLMSG_DONE, _NLMSG_ERROR):
            return out, True
        if typ == _SOCK_DIAG_BY_FAMILY and ln >= _NLMSG_HDR.size + _MSG_LEN:
            body = off + _NLMSG_HDR.size
            sport, dport = struct.unpack_from("!HH", data, body + 4)
            rec = {
                "src": _ip(data[body + 8 : body + 24]),
                "sport": sport,
                "dst": _ip(data[body + 24 : body + 40]),
                "dport": dport,
            }
            a = body + _MSG_LEN
            end = off + ln
            while a + 4 <= end:
                alen, atyp = _RTATTR.unpack_from(data, a)
                if alen < 4:
                    break
                if atyp == _INET_DIAG_INFO and alen - 4 >= _NEED:
                    for name, o, fmt in _FIELDS:
                        rec[name] = struct.unpack_from("=" + fmt, data, a + 4 + o)[0]
                a += (alen + 3) & ~3
            if "cwnd" in rec:
                out.append(rec)
        off += (ln + 3) & ~3
    return out, False


def _dump(sock: socket.socket, seq: int) -> list[dict]:
    req = _REQ.pack(socket.AF_INET, socket.IPPROTO_TCP, 1 << (_INET_DIAG_INFO - 1), _TCPF_ESTABLISHED_ETC)
    sock.send(
        _NLMSG_HDR.pack(_NLMSG_HDR.size + len(req), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP, seq, 0) + req
    )
    out: list[dict] = []
    for _ in range(1000):  # bounded: a dump of our few sockets is one or two buffers
        recs, done = parse_dump(sock.recv(1 << 17))
        out += recs
        if done:
            break
    return out


class SocketSampler:
    """Samples of every TCP socket in ``namespaces``, every ``interval_s``, until stopped.

    ``samples`` is a list of dicts (``t`` in CLOCK_MONOTONIC seconds plus the
    tcp_info fields above); at most ``limit`` are kept.
    """

    def __init__(self, namespaces: list[str], interval_s: float = 0.002, limit: int = 2_000_000):
        self.interval_s = interval_s
        self.limit = limit
        self.samples: list[dict] = []
        self.dropped = 0
        self._stop = threading.Event()

        def open_sock():
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG)
            s.settimeout(1.0)
            return s

        self._socks = [in_netns(ns, open_sock) for ns in namespaces]
        self._thread = threading.Thread(target=self._loop, name="sockdiag-sampler", daemon=True)

    def _loop(self) -> None:
        seq = 0
        try:
            while not self._stop.is_set():
                for s in self._socks:
                    seq += 1
                    t = time.monotonic()
                    for rec in _dump(s, seq):
                        if len(self.samples) >= self.limit:
                            self.dropped += 1
                            continue
                        rec["t"] = t
                        self.samples.append(rec)
                time.sleep(self.interval_s)
        except OSError:
            pass  # a namespace went away: keep what we have

    def __enter__(self) -> SocketSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> list[dict]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        for s in self._socks:
            with contextlib.suppress(OSError):
                s.close()
        return self.samples
