"""The platform description as plain dicts: element helpers over the schema of the Rust core.

A platform is a ``dict`` with the keys ``name``, ``hosts``, ``switches``,
``links``, ``segments`` and ``routers`` whose values serialize to JSON that
``PlatformSpec::from_json`` (``crates/parcomm-core/src/spec.rs``) accepts.
Every quantity is SI: seconds, bits per second, bytes.

The core is the one definition of the schema: its field defaults, which
fields are optional and its upper bounds come from ``_core.platform_schema()``
and ``validate`` asks ``_core.check_platform``, whose errors name the field
(``hosts.h3.tcp.rto_max_s``, ``links[2].b``), type errors included. What is
genuinely Python's stays here: the element helpers (``host``, ``switch``,
``link``, ``segment``, ``router``) that emit every field and accept unit
strings (``"1G"``, ``"64KiB"``, ``"200ms"``) wherever a number goes, and
naming the field of a value JSON cannot carry (NaN, a set, an object).
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Mapping

from .. import _core
from .fields import (
    DEFAULT_FRAMING,
    DEFAULT_MTU,
    DEFAULT_NIC_QUEUE_PACKETS,
    FIELDS,
    FRAMINGS,
    HOST_OPTIONS,
    LIMITS,
    LINUX_TCP,
    MAX_HOSTS,
    TCP_FIELDS,
    TCP_OPTIONAL,
    PlatformError,
)
from .units import (
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
    "LIMITS",
    "FIELDS",
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


def _tcp_kind(field: str) -> str:
    """How a ``tcp`` value is parsed from a unit string: by its default's type and the field's
    unit suffix, the naming rule of spec.rs (``_s`` seconds, ``_bytes`` bytes)."""
    if isinstance(LINUX_TCP[field], bool):
        return "bool"
    if field.endswith("_s"):
        return "duration"
    if field.endswith("_bytes"):
        return "size"
    return "count"


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
    """A node name must be a string before a helper can put it in field paths; the core checks
    the rest (non-empty, printable, at most ``LIMITS["name_chars"]`` characters, unique)."""
    if not isinstance(name, str):
        raise PlatformError(f"{what} must be a string, got {shown(name)}")
    return name


def tcp_spec(base: Mapping[str, Any] | None = None, **overrides: Any) -> dict:
    """A complete ``TcpSpec`` dict: ``base`` updated by ``overrides``.

    Values may be unit strings (``rto_min_s="200ms"``, ``sndbuf_bytes="64KiB"``).
    ``stack="linux"`` (any name of ``platform.stack.STACKS``) applies that TCP
    profile over ``base`` before the other fields. Without ``base`` and
    ``stack`` the profile is ``defaults.DEFAULT_STACK`` (the validated one);
    ``stack="rfc"`` is the spec's own default (``LINUX_TCP``). Unknown field
    names raise ``PlatformError``.
    """
    stack = overrides.pop("stack", None)
    if stack is None and base is None:
        from .defaults import DEFAULT_STACK

        stack = DEFAULT_STACK
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
    return {f: _coerce(_tcp_kind(f), merged[f], f"tcp.{f}") for f in TCP_FIELDS}


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
    timing_noise_s: Any = None,
) -> dict:
    """A ``HostSpec`` dict with every field present.

    ``send_overhead``/``recv_overhead`` take ``None`` (zero), a number or
    duration string (fixed part), a ``(fixed_s, per_byte_s)`` pair or a dict.
    ``tcp`` is a full or partial TcpSpec dict; missing fields come from the
    default stack (``defaults.DEFAULT_STACK``) or the ``stack`` it names.
    ``timing_noise_s``: the host's transmit timing noise (``None``: the
    measured ``defaults.DEFAULT_TIMING_NOISE_S``; 0: an ideal host).
    """
    if timing_noise_s is None:
        from .defaults import DEFAULT_TIMING_NOISE_S

        timing_noise_s = DEFAULT_TIMING_NOISE_S
    check_name(name, "hosts: name")
    return {
        "name": name,
        "mtu": parse_size(mtu, f"hosts.{name}.mtu"),
        "nic_queue_packets": _coerce("count", nic_queue_packets, f"hosts.{name}.nic_queue_packets"),
        "send_overhead": _as_overhead(send_overhead, f"hosts.{name}.send_overhead"),
        "recv_overhead": _as_overhead(recv_overhead, f"hosts.{name}.recv_overhead"),
        "tcp": tcp_spec(**(tcp or {})),
        "timing_noise_s": parse_duration(timing_noise_s, f"hosts.{name}.timing_noise_s"),
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
    jitter_s: Any = 0.0,
    framing: str = DEFAULT_FRAMING,
    drop_nth: Iterable[int] = (),
) -> dict:
    """A ``LinkSpec`` dict (full duplex point-to-point link between two nodes).

    ``drop_nth`` is fault injection: the 1-based indices of packets sent from
    ``a`` to ``b`` that the link loses. ``jitter_s`` is timing noise: each frame
    arrives up to that much later (uniform), never out of order.
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
        "jitter_s": parse_duration(jitter_s, f"{what}.jitter_s"),
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


def _drop_list(drops: Any, what: str) -> list[int]:
    if isinstance(drops, (str, bytes, Mapping)) or not isinstance(drops, Iterable):
        raise PlatformError(f"{what} must be a list of packet numbers, got {shown(drops)}")
    drops = list(drops)
    if len(drops) > LIMITS["drop_nth"]:  # before parsing each of them
        raise PlatformError(f"{what} lists {len(drops)} packets, more than {LIMITS['drop_nth']:.0f}")
    return [parse_count(k, what) for k in drops]


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


# validation: the core's -------------------------------------------------------------


def _bad_json_value(obj: Any, path: str, depth: int = 0) -> tuple[str, str] | None:
    """The path and a description of the first value JSON cannot carry (NaN, a set, a non-string
    key, an object), named as the core names fields; None if there is none."""
    if depth > 64:
        return path, "nested too deeply"
    if obj is None or isinstance(obj, (str, bool, int)):
        return None
    if isinstance(obj, float):
        return None if math.isfinite(obj) else (path, f"must be a finite number, got {obj!r}")
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not isinstance(k, str):
                return path or "platform", f"keys must be strings, got {shown(k)}"
            found = _bad_json_value(v, f"{path}.{k}" if path else k, depth + 1)
            if found:
                return found
        return None
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            name = v.get("name") if isinstance(v, Mapping) and path in _NAMED else None
            step = f"{path}.{name}" if isinstance(name, str) and name else f"{path}[{i}]"
            found = _bad_json_value(v, step, depth + 1)
            if found:
                return found
        return None
    return path or "platform", f"must be a number, string, boolean, list or table, got {type(obj).__name__}"


_NAMED = ("hosts", "switches", "segments", "routers")


def _dumps(p: Any, indent: int | None = None) -> str:
    try:
        return json.dumps(p, indent=indent, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        found = _bad_json_value(p, "")
        where, what = found if found else ("platform", "cannot be written as JSON")
        raise PlatformError(f"{where}: {what}") from None


def validate(p: Mapping[str, Any]) -> dict:
    """Check ``p`` with the core (``PlatformSpec::from_json``); return it unchanged.

    Raises ``PlatformError`` naming the offending field (``hosts.h3.tcp.rto_max_s``,
    ``links[2].b``). Missing optional fields are accepted (serde fills them); unknown fields
    are refused.
    """
    if not isinstance(p, Mapping):
        raise PlatformError(f"platform: expected a table/object, got {type(p).__name__}")
    try:
        _core.check_platform(_dumps(p))
    except PlatformError:
        raise
    except ValueError as e:
        raise PlatformError(str(e)) from None
    return p  # type: ignore[return-value]


def to_json(p: Mapping[str, Any], *, indent: int | None = None) -> str:
    """Validate ``p`` and serialize it for ``PlatformSpec::from_json``."""
    validate(p)
    return _dumps(p, indent)
