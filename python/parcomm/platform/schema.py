"""The platform description as plain dicts, mirroring ``crates/parcomm-core/src/spec.rs``.

A platform is a ``dict`` with exactly the keys ``name``, ``hosts``,
``switches``, ``links``, ``segments`` and ``routers`` whose values serialize to
JSON that ``PlatformSpec::from_json`` accepts. Every quantity is SI: seconds,
bits per second, bytes.

The element helpers (``host``, ``switch``, ``link``, ``segment``, ``router``)
always emit every field, filling the serde defaults of spec.rs, and accept
unit strings (``"1G"``, ``"64KiB"``, ``"200ms"``) wherever a number goes.
``validate`` repeats the checks of ``PlatformSpec::validate`` (plus the type
and unknown-field checks serde does) so that mistakes surface in Python with
the same field names the core would use.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Mapping

from .units import (
    BUFFER_UNITS,
    MAX_DURATION_S,
    MAX_RATE_BPS,
    MAX_WHOLE,
    parse_bool,
    parse_buffer,
    parse_count,
    parse_duration,
    parse_rate,
    parse_size,
    shown,
)

__all__ = [
    "PlatformError",
    "DEFAULT_MTU",
    "DEFAULT_NIC_QUEUE_PACKETS",
    "DEFAULT_FRAMING",
    "FRAMINGS",
    "LINUX_TCP",
    "TCP_FIELDS",
    "TCP_OPTIONAL",
    "HOST_OPTIONS",
    "MAX_HOSTS",
    "tcp_spec",
    "overhead",
    "host",
    "buffer",
    "switch",
    "link",
    "segment",
    "router",
    "make_platform",
    "validate",
    "to_json",
    "atm_cells",
    "wire_bytes",
]


class PlatformError(ValueError):
    """A platform description the core would refuse; the message names the field."""


# serde defaults of spec.rs -------------------------------------------------

#: ``default_mtu()`` in spec.rs: Ethernet payload (IEEE 802.3).
DEFAULT_MTU = 1500
#: ``default_nic_queue()`` in spec.rs: Linux ``txqueuelen`` for Ethernet devices.
DEFAULT_NIC_QUEUE_PACKETS = 1000
#: ``default_framing()`` in spec.rs.
DEFAULT_FRAMING = "ethernet"
#: ``Framing`` variants (serde ``rename_all = "lowercase"``).
FRAMINGS = ("ethernet", "atm", "raw")

#: ``impl Default for TcpSpec`` in spec.rs, field for field. Only the fields in
#: ``TCP_OPTIONAL`` have serde defaults; every emitted ``tcp`` dict carries all.
LINUX_TCP: dict[str, Any] = {
    "rto_min_s": 0.2,  # TCP_RTO_MIN = HZ/5
    "rto_max_s": 120.0,  # TCP_RTO_MAX = 120*HZ
    "rto_initial_s": 1.0,  # RFC 6298 section 2.1
    "clock_granularity_s": 0.001,  # 1 ms timer granularity
    "initial_cwnd_segments": 10,  # IW10, RFC 6928
    "sndbuf_bytes": 256 * 1024,
    "rcvbuf_bytes": 256 * 1024,
    "delayed_ack": False,
    "delayed_ack_timeout_s": 0.04,
    "dupack_threshold": 3,
    # Off by default so that results stay comparable; Linux has both on.
    "sack": False,  # RFC 2018 blocks + RFC 6675 recovery (both ends must enable it)
    "tail_loss_probe": False,  # RFC 8985 section 7
    # 0: fixed send buffer of sndbuf_bytes. Otherwise Linux send-buffer
    # autotuning starting here (tcp_wmem[1]), growing to sndbuf_bytes.
    "sndbuf_initial_bytes": 0,
    # RFC 2861 window restart after an idle RTO (Linux tcp_cwnd_restart()).
    "cwnd_restart_after_idle": False,
    # Clock-interrupt period on which TCP timers run (0: exact timers).
    "timer_tick_s": 0.0,
    # Linux's RTO rules (tcp_rtt_estimator/__tcp_set_rto, a sample per ACK, backoff cleared by each).
    "linux_rto": False,
    # RFC 7323 timestamps: with linux_rto, retransmitted data is timed too (Linux default on).
    "timestamps": False,
    # RACK loss detection with SACK (RFC 8985 §6 as Linux's tcp_recovery.c), Linux's PTO for TLP.
    "rack": False,
    # Proportional rate reduction in SACK fast recovery (RFC 6937, Linux tcp_cwnd_reduction()).
    "prr": False,
    # CUBIC congestion control (RFC 9438, Linux tcp_cubic.c without HyStart) instead of NewReno.
    "cubic": False,
    # Linux quick-ACK mode: with delayed ACKs, the first 16 segments (and after idle) ACKed at once.
    "quickack": False,
}

#: Field names of ``TcpSpec``, in declaration order.
TCP_FIELDS = tuple(LINUX_TCP)

#: ``TcpSpec`` fields with ``#[serde(default)]`` (false or 0, i.e. off): a ``tcp`` table may omit them.
TCP_OPTIONAL = ("sack", "tail_loss_probe", "sndbuf_initial_bytes", "cwnd_restart_after_idle",
                "timer_tick_s", "linux_rto", "timestamps", "rack", "prr", "cubic", "quickack")

#: Keyword options of ``host`` other than the name (what builders pass through).
HOST_OPTIONS = ("mtu", "nic_queue_packets", "send_overhead", "recv_overhead", "tcp")

# Upper bounds of what a platform may hold, checked by ``validate`` (so by every builder, loader and
# dict that reaches the core). The core takes any u64 or f64; these keep absurd values (a typo, a
# unit mix-up, a hostile file) out of its arithmetic and its memory.

#: Hosts in one platform. The core's route table has an entry per (node, host) pair: building
#: star:16384 took 4 GB and 10 s, star:4096 0.3 GB and 0.5 s. The seed papers' largest cluster
#: has 130 hosts; 4096 leaves room for any study this simulator can run in reasonable time.
MAX_HOSTS = 4096
#: Switches, routers or segments (each): a network element per host is already generous.
MAX_ELEMENTS = 4096
#: IP MTU: an IPv4 datagram is at most 65,535 bytes; Linux's loopback uses 65,536.
MAX_MTU = 65536
#: Interface queue: Linux's txqueuelen is 1000 and 10 GbE drivers suggest 10,000 packets.
MAX_NIC_QUEUE_PACKETS = 1 << 20
#: Initial window (RFC 6928: 10) and duplicate-ACK threshold (Linux caps reordering at 300):
#: 65,535 segments is already a window beyond any socket buffer below.
MAX_SEGMENTS = 65535
#: Socket buffers: TCP's window stops at 1 GiB (RFC 7323 window scale 14), Linux buffers at 2 GiB.
MAX_SOCKET_BUFFER_BYTES = 1 << 32
#: Switch and router port buffers: real ones hold MBs to a few GBs; 1 TiB, or 2^32 packets or cells.
MAX_PORT_BUFFER_BYTES = 1 << 40
MAX_PORT_BUFFER_UNITS = 1 << 32
#: Fault-injection drop lists: a million dropped packets is more than any run sends by hand.
MAX_DROP_NTH = 1 << 20
#: Names are shown in messages, counters and tables: one printable line of reasonable length.
MAX_NAME_CHARS = 256

_TCP_MAX = {
    "initial_cwnd_segments": MAX_SEGMENTS,
    "dupack_threshold": MAX_SEGMENTS,
    "sndbuf_bytes": MAX_SOCKET_BUFFER_BYTES,
    "rcvbuf_bytes": MAX_SOCKET_BUFFER_BYTES,
    "sndbuf_initial_bytes": MAX_SOCKET_BUFFER_BYTES,
}

_TCP_KIND = {
    "rto_min_s": "duration",
    "rto_max_s": "duration",
    "rto_initial_s": "duration",
    "clock_granularity_s": "duration",
    "initial_cwnd_segments": "count",
    "sndbuf_bytes": "size",
    "rcvbuf_bytes": "size",
    "delayed_ack": "bool",
    "delayed_ack_timeout_s": "duration",
    "dupack_threshold": "count",
    "sack": "bool",
    "tail_loss_probe": "bool",
    "sndbuf_initial_bytes": "size",
    "cwnd_restart_after_idle": "bool",
    "timer_tick_s": "duration",
    "linux_rto": "bool",
    "timestamps": "bool",
    "rack": "bool",
    "prr": "bool",
    "cubic": "bool",
    "quickack": "bool",
}


def _coerce(kind: str, value: Any, what: str) -> Any:
    if kind == "duration":
        return parse_duration(value, what)
    if kind == "rate":
        return parse_rate(value, what)
    if kind == "size":
        return parse_size(value, what)
    if kind == "count":
        return parse_count(value, what)
    if kind == "bool":
        return parse_bool(value, what)
    raise AssertionError(kind)  # pragma: no cover


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlatformError(f"{what} must be a number, got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value) or abs(value) > MAX_WHOLE:
        raise PlatformError(f"{what} must be a finite number, got {shown(value)}")
    return float(value)


def check_name(name: Any, what: str) -> str:
    """A node name: a non-empty string of printable characters, at most ``MAX_NAME_CHARS`` long."""
    if not isinstance(name, str):
        raise PlatformError(f"{what} must be a string, got {shown(name)}")
    if len(name) > MAX_NAME_CHARS:
        raise PlatformError(f"{what} is {len(name)} characters long, more than {MAX_NAME_CHARS}: {shown(name)}")
    if not name.isprintable():
        raise PlatformError(f"{what} {shown(name)} has control or other unprintable characters")
    return name


def tcp_spec(base: Mapping[str, Any] | None = None, **overrides: Any) -> dict:
    """A complete ``TcpSpec`` dict: ``base`` (default ``LINUX_TCP``) updated by ``overrides``.

    Values may be unit strings (``rto_min_s="200ms"``, ``sndbuf_bytes="64KiB"``).
    ``stack="linux"`` (any name of ``platform.stack.STACKS``) applies that TCP
    profile over ``base`` before the other fields. Unknown field names raise
    ``PlatformError``.
    """
    stack = overrides.pop("stack", None)
    merged = {f: LINUX_TCP[f] for f in TCP_OPTIONAL}  # serde defaults, for bases that predate them
    merged.update(LINUX_TCP if base is None else base)
    if stack is not None:  # a named profile (platform/stacks/*.toml), then the explicit fields over it
        from .stack import stack_fields

        merged.update(stack_fields(stack))
    merged.update(overrides)
    unknown = set(merged) - set(TCP_FIELDS)
    if unknown:
        raise PlatformError(
            f"tcp: unknown field(s) {shown(', '.join(sorted(map(str, unknown))))} (TcpSpec has {', '.join(TCP_FIELDS)})"
        )
    missing = [f for f in TCP_FIELDS if f not in merged]
    if missing:  # only possible with an incomplete ``base``
        raise PlatformError(f"tcp: missing field(s) {', '.join(missing)}")
    return {f: _coerce(_TCP_KIND[f], merged[f], f"tcp.{f}") for f in TCP_FIELDS}


def overhead(fixed_s: Any = 0.0, per_byte_s: Any = 0.0, jitter_s: Any = 0.0) -> dict:
    """An ``Overhead`` dict: ``fixed_s + per_byte_s * size`` seconds per message."""
    return {
        "fixed_s": parse_duration(fixed_s, "fixed_s"),
        "per_byte_s": parse_duration(per_byte_s, "per_byte_s"),
        "jitter_s": parse_duration(jitter_s, "jitter_s"),
    }


def _as_overhead(value: Any, what: str) -> dict:
    if value is None:
        return overhead()
    if isinstance(value, Mapping):
        unknown = set(value) - {"fixed_s", "per_byte_s", "jitter_s"}
        if unknown:
            raise PlatformError(f"{what}: unknown field(s) {shown(', '.join(sorted(map(str, unknown))))}")
        return overhead(value.get("fixed_s", 0.0), value.get("per_byte_s", 0.0), value.get("jitter_s", 0.0))
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return overhead(*value)
    # a bare number or duration string is the fixed part
    return overhead(value)


def host(
    name: str,
    *,
    mtu: Any = DEFAULT_MTU,
    nic_queue_packets: int = DEFAULT_NIC_QUEUE_PACKETS,
    send_overhead: Any = None,
    recv_overhead: Any = None,
    tcp: Mapping[str, Any] | None = None,
) -> dict:
    """A ``HostSpec`` dict with every field present.

    ``send_overhead``/``recv_overhead`` take ``None`` (zero), a number or
    duration string (fixed part), a ``(fixed_s, per_byte_s)`` pair or a dict.
    ``tcp`` is a full or partial TcpSpec dict; missing fields come from
    ``LINUX_TCP`` (the spec's ``Default``).
    """
    check_name(name, "hosts: name")
    return {
        "name": name,
        "mtu": parse_size(mtu, f"hosts.{name}.mtu"),
        "nic_queue_packets": _coerce("count", nic_queue_packets, f"hosts.{name}.nic_queue_packets"),
        "send_overhead": _as_overhead(send_overhead, f"hosts.{name}.send_overhead"),
        "recv_overhead": _as_overhead(recv_overhead, f"hosts.{name}.recv_overhead"),
        "tcp": tcp_spec(**(tcp or {})),
    }


def buffer(size: Any, unit: str = "bytes") -> dict:
    """A ``BufferSpec`` dict. ``size`` may be a string: ``buffer("64KiB")``, ``buffer(2048, "cells")``."""
    if isinstance(size, str) and unit == "bytes":
        # "100 packets" / "2048 cells" carry their own unit
        return parse_buffer(size, "bytes")
    return parse_buffer({"size": size, "unit": unit})


def switch(
    name: str,
    buffer: Any,
    *,
    flow_control: bool = False,
    early_packet_discard: bool = False,
    epd_threshold_cells: int | None = None,
    latency_s: Any = 0.0,
    cell_interleaving: bool = False,
) -> dict:
    """A ``SwitchSpec`` dict; ``buffer`` is per output port (bytes unless a unit is given).

    ``cell_interleaving`` (ATM, buffer in cells): frames from several inputs
    interleave their cells at an output port and a full buffer drops cells of
    every frame still arriving, as a cell switch does; off, a frame is
    admitted or truncated whole when its last bit arrives.
    """
    check_name(name, "switches: name")
    return {
        "name": name,
        "buffer": parse_buffer(buffer, "bytes", f"switches.{name}.buffer"),
        "flow_control": parse_bool(flow_control, f"switches.{name}.flow_control"),
        "early_packet_discard": parse_bool(early_packet_discard, f"switches.{name}.early_packet_discard"),
        "epd_threshold_cells": (
            None
            if epd_threshold_cells is None
            else parse_count(epd_threshold_cells, f"switches.{name}.epd_threshold_cells")
        ),
        "latency_s": parse_duration(latency_s, f"switches.{name}.latency_s"),
        "cell_interleaving": parse_bool(cell_interleaving, f"switches.{name}.cell_interleaving"),
    }


def link(
    a: str,
    b: str,
    rate_bps: Any,
    *,
    propagation_s: Any = 0.0,
    loss: float = 0.0,
    framing: str = DEFAULT_FRAMING,
    drop_nth: Iterable[int] = (),
) -> dict:
    """A ``LinkSpec`` dict (full duplex point-to-point link between two nodes).

    ``drop_nth`` is fault injection: the 1-based indices of packets sent from
    ``a`` to ``b`` that the link loses.
    """
    what = f"links[{check_name(a, 'links: a')}-{check_name(b, 'links: b')}]"
    if framing not in FRAMINGS:
        raise PlatformError(f"{what}.framing must be one of {', '.join(FRAMINGS)}, got {shown(framing)}")
    return {
        "a": a,
        "b": b,
        "rate_bps": parse_rate(rate_bps, f"{what}.rate_bps"),
        "propagation_s": parse_duration(propagation_s, f"{what}.propagation_s"),
        "loss": _number(loss, f"{what}.loss"),
        "framing": framing,
        "drop_nth": _drop_list(drop_nth, f"{what}.drop_nth"),
    }


def segment(
    name: str,
    rate_bps: Any,
    members: Iterable[str],
    *,
    propagation_s: Any = 0.0,
    collisions: bool = True,
) -> dict:
    """A ``SegmentSpec`` dict: a shared medium (e.g. 10BASE-T through a hub)."""
    check_name(name, "segments: name")
    if isinstance(members, (str, bytes, Mapping)) or not isinstance(members, Iterable):
        raise PlatformError(f"segments.{name}.members must be a list of names, got {shown(members)}")
    return {
        "name": name,
        "rate_bps": parse_rate(rate_bps, f"segments.{name}.rate_bps"),
        "members": list(members),
        "propagation_s": parse_duration(propagation_s, f"segments.{name}.propagation_s"),
        "collisions": parse_bool(collisions, f"segments.{name}.collisions"),
    }


def router(name: str, *, forward_pps: float, backplane_bps: Any, buffer: Any) -> dict:
    """A ``RouterSpec`` dict; ``buffer`` is per output interface (bytes or packets)."""
    check_name(name, "routers: name")
    return {
        "name": name,
        "forward_pps": float(
            parse_count(forward_pps, f"routers.{name}.forward_pps")
            if isinstance(forward_pps, str)
            else _number(forward_pps, f"routers.{name}.forward_pps")
        ),
        "backplane_bps": parse_rate(backplane_bps, f"routers.{name}.backplane_bps"),
        "buffer": parse_buffer(buffer, "packets", f"routers.{name}.buffer"),
    }


def make_platform(
    name: str = "",
    hosts: Iterable[dict] = (),
    switches: Iterable[dict] = (),
    links: Iterable[dict] = (),
    segments: Iterable[dict] = (),
    routers: Iterable[dict] = (),
) -> dict:
    """Assemble (and validate) a platform dict."""
    p = {
        "name": name,
        "hosts": list(hosts),
        "switches": list(switches),
        "links": list(links),
        "segments": list(segments),
        "routers": list(routers),
    }
    return validate(p)


# wire accounting, as in spec.rs ---------------------------------------------


def atm_cells(ip_bytes: int) -> int:
    """ATM cells for one IP packet in AAL5 with LLC/SNAP (8 B header + 8 B trailer)."""
    return -(-(ip_bytes + 8 + 8) // 48)


def wire_bytes(framing: str, ip_bytes: int) -> int:
    """Bytes one IP packet of ``ip_bytes`` occupies on a link with this framing."""
    if framing == "raw":
        return ip_bytes
    if framing == "ethernet":
        return max(ip_bytes + 18, 64) + 20
    if framing == "atm":
        return atm_cells(ip_bytes) * 53
    raise PlatformError(f"framing must be one of {', '.join(FRAMINGS)}, got {shown(framing)}")


# validation -------------------------------------------------------------------

_TOP = {"name", "hosts", "switches", "links", "segments", "routers"}
_HOST = {"name", "mtu", "nic_queue_packets", "send_overhead", "recv_overhead", "tcp"}
_SWITCH = {
    "name", "buffer", "flow_control", "early_packet_discard", "epd_threshold_cells", "latency_s", "cell_interleaving",
}
_LINK = {"a", "b", "rate_bps", "propagation_s", "loss", "framing", "drop_nth"}
_SEGMENT = {"name", "rate_bps", "members", "propagation_s", "collisions"}
_ROUTER = {"name", "forward_pps", "backplane_bps", "buffer"}


def _fields(obj: Any, allowed: set[str], required: set[str], where: str) -> None:
    if not isinstance(obj, Mapping):
        raise PlatformError(f"{where}: expected a table/object, got {type(obj).__name__}")
    unknown = set(obj) - allowed
    if unknown:
        raise PlatformError(
            f"{where}: unknown field(s) {shown(', '.join(sorted(map(str, unknown))))}"
            f" (expected {', '.join(sorted(allowed))})"
        )
    missing = required - set(obj)
    if missing:
        raise PlatformError(f"{where}: missing field(s) {', '.join(sorted(missing))}")


def _u64(obj: Mapping, key: str, where: str, default: Any = None, hi: int = MAX_WHOLE) -> int:
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise PlatformError(f"{where}.{key} must be a non-negative integer, got {shown(v)}")
    if v > hi:
        raise PlatformError(f"{where}.{key} must be at most {hi}, got {shown(v)}")
    return v


def _f64(obj: Mapping, key: str, where: str, default: Any = None, hi: float = MAX_WHOLE) -> float:
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PlatformError(f"{where}.{key} must be a number, got {shown(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise PlatformError(f"{where}.{key} must be a finite number, got {shown(v)}")
    if abs(v) > hi:  # compared before float(): an integer beyond any double is refused, not overflowed
        raise PlatformError(f"{where}.{key} must be at most {hi:g}, got {shown(v)}")
    return float(v)


def _drop_list(drops: Any, what: str) -> list[int]:
    if isinstance(drops, (str, bytes, Mapping)) or not isinstance(drops, Iterable):
        raise PlatformError(f"{what} must be a list of packet numbers, got {shown(drops)}")
    drops = list(drops)
    if len(drops) > MAX_DROP_NTH:
        raise PlatformError(f"{what} lists {len(drops)} packets, more than {MAX_DROP_NTH}")
    return [parse_count(k, what) for k in drops]


def _bool(obj: Mapping, key: str, where: str, default: bool) -> bool:
    v = obj.get(key, default)
    if not isinstance(v, bool):
        raise PlatformError(f"{where}.{key} must be true or false, got {shown(v)}")
    return v


def _str(obj: Mapping, key: str, where: str) -> str:
    return check_name(obj.get(key), f"{where}.{key}")


def _positive(v: float, field: str) -> None:
    if not (math.isfinite(v) and v > 0):
        raise PlatformError(f"{field} must be a positive number, got {v}")


def _non_negative(v: float, field: str) -> None:
    if not (math.isfinite(v) and v >= 0):
        raise PlatformError(f"{field} must be a non-negative number, got {v}")


def _buffer(obj: Any, where: str) -> tuple[int, str]:
    _fields(obj, {"size", "unit"}, {"size", "unit"}, where)
    unit = obj["unit"]
    if unit not in BUFFER_UNITS:
        raise PlatformError(f"{where}.unit must be one of {', '.join(BUFFER_UNITS)}, got {shown(unit)}")
    size = _u64(obj, "size", where, hi=MAX_PORT_BUFFER_BYTES if unit == "bytes" else MAX_PORT_BUFFER_UNITS)
    return size, unit


def _list(p: Mapping, key: str) -> list:
    v = p.get(key, [])
    if not isinstance(v, list):
        raise PlatformError(f"{key}: expected a list, got {type(v).__name__}")
    limit = MAX_HOSTS if key == "hosts" else MAX_ELEMENTS if key != "links" else None
    if limit is not None and len(v) > limit:
        raise PlatformError(f"{key}: {len(v)} of them, more than the limit of {limit}")
    return v


def validate(p: Mapping[str, Any]) -> dict:
    """Check ``p`` as ``PlatformSpec::from_json`` would; return it unchanged.

    Raises ``PlatformError`` naming the offending field, with the same field
    paths as the Rust messages (``hosts.h3.tcp.rto_max_s``, ``links[2].b``, ...).
    Missing optional fields are accepted (serde fills them); unknown fields
    are refused (``deny_unknown_fields``).
    """
    _fields(p, _TOP, {"hosts"}, "platform")
    name = p.get("name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise PlatformError(f"name must be a printable string of at most {MAX_NAME_CHARS} characters, got {shown(name)}")
    hosts, switches = _list(p, "hosts"), _list(p, "switches")
    links, segments, routers = _list(p, "links"), _list(p, "segments"), _list(p, "routers")

    # field shapes and types first (serde's part)
    for i, h in enumerate(hosts):
        _fields(h, _HOST, {"name"}, f"hosts[{i}]")
        name = _str(h, "name", f"hosts[{i}]")
        w = f"hosts.{name}"
        _u64(h, "mtu", w, DEFAULT_MTU, MAX_MTU)
        _u64(h, "nic_queue_packets", w, DEFAULT_NIC_QUEUE_PACKETS, MAX_NIC_QUEUE_PACKETS)
        for o in ("send_overhead", "recv_overhead"):
            ov = h.get(o, {})
            _fields(ov, {"fixed_s", "per_byte_s", "jitter_s"}, set(), f"{w}.{o}")
            for k in ("fixed_s", "per_byte_s", "jitter_s"):
                _f64(ov, k, f"{w}.{o}", 0.0, MAX_DURATION_S)
        if "tcp" in h:
            t = h["tcp"]
            _fields(t, set(TCP_FIELDS), set(TCP_FIELDS) - set(TCP_OPTIONAL), f"{w}.tcp")
            for f in TCP_FIELDS:
                kind = _TCP_KIND[f]
                if kind == "bool":
                    _bool(t, f, f"{w}.tcp", False)
                elif kind == "duration":
                    v = _f64(t, f, f"{w}.tcp", LINUX_TCP[f] if f in TCP_OPTIONAL else None, MAX_DURATION_S)
                    if v < 0:
                        raise PlatformError(f"{w}.tcp.{f} must not be negative, got {v!r}")
                else:
                    _u64(t, f, f"{w}.tcp", LINUX_TCP[f] if f in TCP_OPTIONAL else None, _TCP_MAX[f])
    for i, s in enumerate(switches):
        _fields(s, _SWITCH, {"name", "buffer"}, f"switches[{i}]")
        w = f"switches.{_str(s, 'name', f'switches[{i}]')}"
        _buffer(s["buffer"], f"{w}.buffer")
        _bool(s, "flow_control", w, False)
        _bool(s, "early_packet_discard", w, False)
        if s.get("epd_threshold_cells") is not None:
            _u64(s, "epd_threshold_cells", w, hi=MAX_PORT_BUFFER_UNITS)
        _f64(s, "latency_s", w, 0.0, MAX_DURATION_S)
        _bool(s, "cell_interleaving", w, False)
    for i, l in enumerate(links):
        w = f"links[{i}]"
        _fields(l, _LINK, {"a", "b", "rate_bps"}, w)
        _str(l, "a", w), _str(l, "b", w)
        _f64(l, "rate_bps", w, None, MAX_RATE_BPS)
        _f64(l, "propagation_s", w, 0.0, MAX_DURATION_S)
        _f64(l, "loss", w, 0.0)
        if l.get("framing", DEFAULT_FRAMING) not in FRAMINGS:
            raise PlatformError(f"{w}.framing must be one of {', '.join(FRAMINGS)}, got {shown(l.get('framing'))}")
        drops = l.get("drop_nth", [])
        if (not isinstance(drops, list) or len(drops) > MAX_DROP_NTH
                or any(isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_WHOLE for k in drops)):
            raise PlatformError(
                f"{w}.drop_nth must be a list of at most {MAX_DROP_NTH} packet numbers (integers from 1 to"
                f" {MAX_WHOLE}), got {shown(drops)}"
            )
    for i, s in enumerate(segments):
        _fields(s, _SEGMENT, {"name", "rate_bps", "members"}, f"segments[{i}]")
        w = f"segments.{_str(s, 'name', f'segments[{i}]')}"
        _f64(s, "rate_bps", w, None, MAX_RATE_BPS)
        _f64(s, "propagation_s", w, 0.0, MAX_DURATION_S)
        _bool(s, "collisions", w, True)
        if not isinstance(s["members"], list):
            raise PlatformError(f"{w}.members must be a list of names, got {shown(s['members'])}")
        for m in s["members"]:
            check_name(m, f"{w}.members: a member")
    for i, r in enumerate(routers):
        _fields(r, _ROUTER, set(_ROUTER), f"routers[{i}]")
        w = f"routers.{_str(r, 'name', f'routers[{i}]')}"
        _f64(r, "forward_pps", w, None, MAX_RATE_BPS)
        _f64(r, "backplane_bps", w, None, MAX_RATE_BPS)
        _buffer(r["buffer"], f"{w}.buffer")

    # the semantic checks of PlatformSpec::validate, in the same order
    if not hosts:
        raise PlatformError("hosts: a platform needs at least one host")
    names: set[str] = set()
    for kind, items in (("hosts", hosts), ("switches", switches), ("segments", segments), ("routers", routers)):
        for item in items:
            n = item["name"]
            if not n:
                raise PlatformError(f"{kind}: empty name")
            if n in names:
                raise PlatformError(f"{kind}.{n}: duplicate name '{n}'")
            names.add(n)
    for h in hosts:
        f = lambda x, h=h: f"hosts.{h['name']}.{x}"  # noqa: E731
        mtu = h.get("mtu", DEFAULT_MTU)
        if mtu < 128:
            raise PlatformError(f"{f('mtu')} must be at least 128 bytes, got {mtu}")
        if h.get("nic_queue_packets", DEFAULT_NIC_QUEUE_PACKETS) == 0:
            raise PlatformError(f"{f('nic_queue_packets')} must be at least 1")
        for o in ("send_overhead", "recv_overhead"):
            ov = h.get(o, {})
            _non_negative(float(ov.get("fixed_s", 0.0)), f(f"{o}.fixed_s"))
            _non_negative(float(ov.get("per_byte_s", 0.0)), f(f"{o}.per_byte_s"))
            _non_negative(float(ov.get("jitter_s", 0.0)), f(f"{o}.jitter_s"))
        t = h.get("tcp", LINUX_TCP)
        _positive(float(t["rto_min_s"]), f("tcp.rto_min_s"))
        _positive(float(t["rto_max_s"]), f("tcp.rto_max_s"))
        _positive(float(t["rto_initial_s"]), f("tcp.rto_initial_s"))
        _non_negative(float(t["clock_granularity_s"]), f("tcp.clock_granularity_s"))
        _non_negative(float(t["delayed_ack_timeout_s"]), f("tcp.delayed_ack_timeout_s"))
        if t["rto_max_s"] < t["rto_min_s"]:
            raise PlatformError(
                f"{f('tcp.rto_max_s')} ({t['rto_max_s']}) must not be below tcp.rto_min_s ({t['rto_min_s']})"
            )
        if t["initial_cwnd_segments"] == 0:
            raise PlatformError(f"{f('tcp.initial_cwnd_segments')} must be at least 1")
        if t["dupack_threshold"] == 0:
            raise PlatformError(f"{f('tcp.dupack_threshold')} must be at least 1")
        mss = mtu - 40
        if t["sndbuf_bytes"] < mss or t["rcvbuf_bytes"] < mss:
            raise PlatformError(
                f"{f('tcp')}: sndbuf_bytes and rcvbuf_bytes must hold at least one segment ({mss} bytes)"
            )
        init = t.get("sndbuf_initial_bytes", 0)
        if init != 0 and not mss <= init <= t["sndbuf_bytes"]:
            raise PlatformError(
                f"{f('tcp.sndbuf_initial_bytes')} ({init}) must be 0 (no autotuning) or between one segment "
                f"({mss} bytes) and tcp.sndbuf_bytes ({t['sndbuf_bytes']})"
            )
    max_mtu = max(h.get("mtu", DEFAULT_MTU) for h in hosts)
    for s in switches:
        f = lambda x, s=s: f"switches.{s['name']}.{x}"  # noqa: E731
        size, unit = s["buffer"]["size"], s["buffer"]["unit"]
        one_packet = {"bytes": max_mtu, "packets": 1, "cells": atm_cells(max_mtu)}[unit]
        if size < one_packet:
            raise PlatformError(
                f"{f('buffer.size')} ({size} {unit}) is smaller than one MTU-sized packet ({one_packet} {unit})"
            )
        _non_negative(float(s.get("latency_s", 0.0)), f("latency_s"))
        if s.get("early_packet_discard", False) and unit != "cells":
            raise PlatformError(f"{f('early_packet_discard')} needs buffer.unit = \"cells\"")
        if s.get("cell_interleaving", False):
            if unit != "cells":
                raise PlatformError(f"{f('cell_interleaving')} needs buffer.unit = \"cells\"")
            if s.get("flow_control", False):
                raise PlatformError(
                    f"{f('cell_interleaving')}: cell_interleaving models a lossy (UBR) switch, turn off flow_control"
                )
    for r in routers:
        f = lambda x, r=r: f"routers.{r['name']}.{x}"  # noqa: E731
        _positive(float(r["forward_pps"]), f("forward_pps"))
        _positive(float(r["backplane_bps"]), f("backplane_bps"))
        size, unit = r["buffer"]["size"], r["buffer"]["unit"]
        if unit == "cells":
            raise PlatformError(f"{f('buffer.unit')}: routers buffer bytes or packets, not cells")
        if size < (max_mtu if unit == "bytes" else 1):
            raise PlatformError(f"{f('buffer.size')} is smaller than one MTU-sized packet")
    segment_names = {s["name"] for s in segments}
    switch_names = {s["name"] for s in switches}
    for i, l in enumerate(links):
        f = lambda x, i=i: f"links[{i}].{x}"  # noqa: E731
        for end in ("a", "b"):
            n = l[end]
            if n not in names:
                raise PlatformError(f"{f(end)}: unknown node '{n}'")
            if n in segment_names:
                raise PlatformError(f"{f(end)}: '{n}' is a segment; list members in segments instead")
        if l["a"] == l["b"]:
            raise PlatformError(f"{f('b')}: a link joins two different nodes, got '{l['a']}' twice")
        _positive(float(l["rate_bps"]), f("rate_bps"))
        _non_negative(float(l.get("propagation_s", 0.0)), f("propagation_s"))
        loss = float(l.get("loss", 0.0))
        if not (0.0 <= loss < 1.0):
            raise PlatformError(f"{f('loss')} must be in [0, 1), got {loss}")
        if 0 in l.get("drop_nth", []):
            raise PlatformError(f"{f('drop_nth')} counts packets from 1, got 0")
    for s in segments:
        f = lambda x, s=s: f"segments.{s['name']}.{x}"  # noqa: E731
        _positive(float(s["rate_bps"]), f("rate_bps"))
        _non_negative(float(s.get("propagation_s", 0.0)), f("propagation_s"))
        members = s["members"]
        if len(members) < 2:
            raise PlatformError(f"{f('members')} needs at least two members")
        seen: set[str] = set()
        for m in members:
            if m not in names or m in segment_names:
                raise PlatformError(f"{f('members')}: unknown host or router '{m}'")
            if m in switch_names:
                raise PlatformError(
                    f"{f('members')}: '{m}' is a switch; only hosts and routers attach to a segment"
                )
            if m in seen:
                raise PlatformError(f"{f('members')}: '{m}' listed twice")
            seen.add(m)
    _check_wiring(hosts, links, segments)
    return p  # type: ignore[return-value]


def _check_wiring(hosts: list, links: list, segments: list) -> None:
    """What the core checks when it wires the network (sim/build.rs), with the same messages: a host
    has exactly one interface (a link or a segment), and every host reaches every other."""
    interfaces = {h["name"]: 0 for h in hosts}
    leader: dict[str, str] = {}

    def find(n: str) -> str:
        root = n
        while leader.get(root, root) != root:
            root = leader[root]
        while n != root:  # path compression keeps this linear
            leader[n], n = root, leader.get(n, n)
        return root

    def join(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            leader[ra] = rb

    for l in links:
        for end in ("a", "b"):
            if l[end] in interfaces:
                interfaces[l[end]] += 1
        join(l["a"], l["b"])
    for s in segments:
        for m in s["members"]:
            if m in interfaces:
                interfaces[m] += 1
            join(m, "\0segment:" + s["name"])  # a segment is a node of its own for reachability
    for h in hosts:
        n = interfaces[h["name"]]
        if n > 1:
            raise PlatformError(f"hosts.{h['name']}: a host has one network interface, this one has {n}")
        if n == 0 and len(hosts) > 1:
            raise PlatformError(f"hosts.{h['name']}: not connected to any link or segment")
    first = hosts[0]["name"]
    for h in hosts[1:]:
        if find(h["name"]) != find(first):
            raise PlatformError(f"hosts.{h['name']}: no route from host '{first}' to host '{h['name']}'")


def to_json(p: Mapping[str, Any], *, indent: int | None = None) -> str:
    """Validate ``p`` and serialize it for ``PlatformSpec::from_json``."""
    validate(p)
    return json.dumps(p, indent=indent, allow_nan=False)
