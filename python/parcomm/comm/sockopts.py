"""Addresses files, socket options and kernel TCP counters for SocketComm.

An addresses file has one ``host port`` line per rank. Socket options:
``nodelay``, ``sndbuf``, ``rcvbuf`` and, where the kernel offers them,
``rto_min_us`` and ``rto_max_ms``. Counters come from TCP_INFO per socket or
from ``/proc/net`` per network namespace.
"""

from __future__ import annotations

import hashlib
import os
import socket as _socket
import struct
from pathlib import Path
from typing import Any, Sequence

from ..platform.units import shown
from .base import CommError

#: Linux setsockopt numbers (include/uapi/linux/tcp.h); Python has no names for them yet.
TCP_RTO_MAX_MS = 44
TCP_RTO_MIN_US = 45

SOCK_OPTION_KEYS = ("nodelay", "sndbuf", "rcvbuf", "rto_min_us", "rto_max_ms")


#: An addresses file has a line per rank: 16 MiB is hundreds of thousands of ranks.
_MAX_ADDRESSES_FILE = 16 << 20


def read_addresses(source: str | os.PathLike | Sequence[Sequence[Any]]) -> list[tuple[str, int]]:
    """The ranks' addresses from a file (one ``host port`` per line, line r for
    rank r; blank lines and ``#`` comments ignored) or a list of pairs."""
    if isinstance(source, (str, os.PathLike)):
        from ..platform.loader import read_bounded

        path = Path(source)
        try:  # bounded: one line per rank (a device or a huge file is refused, not read)
            text = read_bounded(path, "rank addresses file", _MAX_ADDRESSES_FILE, ValueError)
        except ValueError as e:
            raise CommError(str(e)) from None
        pairs: list[tuple[str, int]] = []
        for lineno, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise CommError(f"{path}:{lineno}: expected 'host port', got {shown(line)}")
            pairs.append(_check_address(parts[0], parts[1], f"{path}:{lineno}"))
        if not pairs:
            raise CommError(f"{path}: no addresses (one 'host port' line per rank)")
        return pairs
    out = []
    for i, item in enumerate(source):
        if len(item) != 2:
            raise CommError(f"address {i}: expected (host, port), got {shown(item)}")
        out.append(_check_address(str(item[0]), item[1], f"address {i}"))
    return out


def _check_address(host: str, port: Any, where: str) -> tuple[str, int]:
    try:
        p = int(port)
    except (TypeError, ValueError):
        raise CommError(f"{where}: port {shown(port)} is not a number") from None
    if not 0 < p < 65536:
        raise CommError(f"{where}: port {p} is out of range 1..65535")
    return host, p


def write_addresses(path: str | os.PathLike, addresses: Sequence[tuple[str, int]]) -> None:
    """Write an addresses file that :func:`read_addresses` reads back."""
    Path(path).write_text("".join(f"{h} {p}\n" for h, p in addresses))


def _check_sock_options(opts: dict[str, Any] | None) -> dict[str, Any]:
    opts = dict(opts or {})
    unknown = set(opts) - set(SOCK_OPTION_KEYS)
    if unknown:
        raise CommError(f"unknown socket options {sorted(unknown)}; known: {', '.join(SOCK_OPTION_KEYS)}")
    for k in ("sndbuf", "rcvbuf", "rto_min_us", "rto_max_ms"):
        v = opts.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            raise CommError(f"socket option {k} must be a positive int, got {v!r}")
    return opts


def apply_sock_options(sock: _socket.socket, opts: dict[str, Any] | None, *, stage: str = "all") -> None:
    """Set ``opts`` on ``sock``. ``stage`` "buffers" sets only what must precede
    connect/listen (buffer sizes), "tcp" only the rest, "all" both."""
    opts = opts or {}
    what = ""
    try:
        if stage in ("all", "buffers"):
            if opts.get("sndbuf"):
                what = "SO_SNDBUF"
                sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_SNDBUF, int(opts["sndbuf"]))
            if opts.get("rcvbuf"):
                what = "SO_RCVBUF"
                sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_RCVBUF, int(opts["rcvbuf"]))
        if stage in ("all", "tcp"):
            if opts.get("nodelay") is not None:
                what = "TCP_NODELAY"
                sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1 if opts["nodelay"] else 0)
            if opts.get("rto_min_us"):
                what = "TCP_RTO_MIN_US"
                sock.setsockopt(_socket.IPPROTO_TCP, TCP_RTO_MIN_US, int(opts["rto_min_us"]))
            if opts.get("rto_max_ms"):
                what = "TCP_RTO_MAX_MS"
                sock.setsockopt(_socket.IPPROTO_TCP, TCP_RTO_MAX_MS, int(opts["rto_max_ms"]))
    except OSError as e:
        raise CommError(f"cannot set {what}: {e.strerror or e} (does this kernel support it?)") from None


_TCP_INFO_FIELDS = (
    # name, offset, struct format (struct tcp_info, include/uapi/linux/tcp.h)
    ("segments_retransmitted", 100, "I"),  # tcpi_total_retrans
    ("bytes_received", 128, "Q"),
    ("segments_sent", 136, "I"),  # tcpi_segs_out (includes retransmissions and pure ACKs)
    ("segments_received", 140, "I"),
    ("bytes_sent", 200, "Q"),  # tcpi_bytes_sent: payload bytes, retransmissions included (Linux >= 4.19)
    ("bytes_retransmitted", 208, "Q"),  # tcpi_bytes_retrans
    ("timeouts", 240, "H"),  # tcpi_total_rto (Linux >= 6.7)
)


def tcp_info_counters(sock: _socket.socket) -> dict[str, int]:
    """Per-connection kernel counters from TCP_INFO (Linux). Fields the kernel
    does not report (older kernels return a shorter struct) are left out."""
    try:
        raw = sock.getsockopt(_socket.IPPROTO_TCP, _socket.TCP_INFO, 512)
    except (OSError, AttributeError):
        return {}
    out = {}
    for name, off, fmt in _TCP_INFO_FIELDS:
        size = struct.calcsize(fmt)
        if len(raw) >= off + size:
            out[name] = struct.unpack_from("=" + fmt, raw, off)[0]
    return out


_KERNEL_FIELDS = {
    "Tcp": ("OutSegs", "InSegs", "RetransSegs", "ActiveOpens"),
    "TcpExt": ("TCPTimeouts", "TCPLostRetransmit", "TCPFastRetrans", "TCPSlowStartRetrans", "TCPSynRetrans"),
}


def kernel_tcp_counters(proc_net: str | os.PathLike = "/proc/net") -> dict[str, int]:
    """TCP counters of this network namespace (``/proc/net/snmp`` Tcp and
    ``/proc/net/netstat`` TcpExt); empty where the files do not exist. They
    count every TCP socket in the namespace, not only parcomm's."""
    out: dict[str, int] = {}
    for fname in ("snmp", "netstat"):
        try:
            lines = (Path(proc_net) / fname).read_text().splitlines()
        except OSError:
            continue
        for head, vals in zip(lines[::2], lines[1::2]):
            prefix, _, names = head.partition(":")
            if prefix not in _KERNEL_FIELDS:
                continue
            values = vals.partition(":")[2].split()
            for name, value in zip(names.split(), values):
                if name in _KERNEL_FIELDS[prefix]:
                    try:
                        out[name] = int(value)
                    except ValueError:
                        pass
    return out


def _token(addresses: Sequence[tuple[str, int]]) -> int:
    digest = hashlib.sha256(repr([(h, int(p)) for h, p in addresses]).encode()).digest()
    return int.from_bytes(digest[:8], "big")
