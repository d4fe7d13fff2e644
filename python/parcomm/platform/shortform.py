"""The short platform notation of the command line: ``"star:64,rate=1G,buffer=64KiB,fc=on"``.

Grammar: ``KIND[:SIZE][,KEY=VALUE]...`` with

===========  ==========================  =========================================
KIND         SIZE                        builder
===========  ==========================  =========================================
``star``     host count (required)       ``star(n, ...)``
``atm``      host count (default 100)    ``atm_cluster(n, ...)``
``opteron``  host count (default 64)     ``opteron_cluster(n, ...)``
``segments`` ``S`` or ``SxH``            ``segments_router(S, H, ...)``;
             (default 16, 130 hosts)     ``S`` alone spreads the paper's 130 hosts
``fattree``  ``k`` (default 4)           ``fat_tree(k, ...)``: k^3/4 hosts
``leafspine`` ``LxSxH`` (default 4x2x4)  ``leaf_spine(L, S, H, ...)``
===========  ==========================  =========================================

Options (``KEY=VALUE``; values take the unit strings of ``units``):

* every kind: ``rto_min``, ``rto_max`` (durations, applied to all hosts),
  ``mtu`` (size), ``name``, ``stack`` (a TCP profile of ``platform/stacks``:
  ``linux``, the default, ``rfc``, ``linux-2.6.11``, ``solaris-2.5.1``);
* every kind but ``atm`` and ``segments``: ``noise`` (the hosts' timing
  noise, a duration, or ``ideal`` for 0; default the measured 190 us,
  ``defaults.py``);
* ``star``: ``rate``, ``buffer``, ``fc`` (on/off), ``prop``, ``latency``,
  ``loss``, ``framing``;
* ``atm``: ``rate``, ``buffer`` (cells unless a unit is given), ``epd``
  (on/off), ``epd_threshold`` (cells), ``cells`` (on/off: cell
  interleaving), ``latency``, ``prop``;
* ``opteron``: ``rate``, ``buffer``, ``fc``, ``latency``, ``prop``;
* ``fattree``: ``rate``, ``buffer``, ``fc``, ``prop``, ``latency``;
* ``leafspine``: the same and ``uplink`` (leaf-spine link rate);
* ``segments``: ``rate``, ``hosts`` (total), ``collisions`` (on/off),
  ``prop``, ``pps``, ``backplane``, ``router_buffer``.

Anything malformed raises ``ValueError`` naming the bad part, e.g.
``"star: host count 'abc' is not an integer"``.
"""

from __future__ import annotations

from typing import Any, Callable

from .atm import atm_cluster
from .fabric import fat_tree, leaf_spine
from .opteron import opteron_cluster
from .rto import set_rto
from .segments import segments_router
from .star import _host_count, star
from .units import parse_bool, parse_buffer, parse_count, parse_duration, parse_rate, parse_size, shown

__all__ = ["from_spec_string", "BUILDERS", "SHORT_KINDS"]

#: Builders by the names accepted in TOML ``builder = "..."`` and the short form.
BUILDERS: dict[str, Callable[..., dict]] = {
    "star": star,
    "atm": atm_cluster,
    "atm_cluster": atm_cluster,
    "opteron": opteron_cluster,
    "opteron_cluster": opteron_cluster,
    "segments": segments_router,
    "segments_router": segments_router,
    "fattree": fat_tree,
    "fat_tree": fat_tree,
    "leafspine": leaf_spine,
    "leaf_spine": leaf_spine,
}


def _text(v: str, what: str) -> str:
    return v


def _number(v: str, what: str) -> float:
    try:
        return float(v)
    except ValueError:
        raise ValueError(f"{what}: {shown(v)} is not a number") from None


def _framing(v: str, what: str) -> str:
    if v not in ("ethernet", "atm", "raw"):
        raise ValueError(f"{what}: {shown(v)} is not one of ethernet, atm, raw")
    return v


def _buffer_bytes(v: str, what: str) -> dict:
    return parse_buffer(v, "bytes", what)


def _buffer_cells(v: str, what: str) -> dict:
    return parse_buffer(v, "cells", what)


def _buffer_packets(v: str, what: str) -> dict:
    return parse_buffer(v, "packets", what)


_Option = tuple[str, Callable[[str, str], Any]]


def _stack(v: str, what: str) -> dict:
    from .stack import STACKS

    if v not in STACKS:
        raise ValueError(f"{what}: unknown stack {shown(v)} (expected one of {', '.join(STACKS)})")
    return {"stack": v}


def _noise(v: str, what: str) -> float:
    return 0.0 if v.lower() == "ideal" else parse_duration(v, what)


_COMMON: dict[str, _Option] = {
    "mtu": ("mtu", parse_size),
    "name": ("name", _text),
    "stack": ("tcp", _stack),
}

#: Options every switched Ethernet builder takes (star, opteron, fattree, leafspine).
_SWITCHED: dict[str, _Option] = {
    "rate": ("rate_bps", parse_rate),
    "buffer": ("buffer", _buffer_bytes),
    "fc": ("flow_control", parse_bool),
    "flow_control": ("flow_control", parse_bool),
    "prop": ("propagation_s", parse_duration),
    "latency": ("switch_latency_s", parse_duration),
    "noise": ("timing_noise_s", _noise),
}

_OPTIONS: dict[str, dict[str, _Option]] = {
    "star": {
        **_SWITCHED,
        "loss": ("loss", _number),
        "jitter": ("jitter_s", parse_duration),
        "framing": ("framing", _framing),
    },
    "atm": {
        "rate": ("rate_bps", parse_rate),
        "buffer": ("buffer_cells", _buffer_cells),
        "epd": ("early_packet_discard", parse_bool),
        "epd_threshold": ("epd_threshold_cells", parse_count),
        "cells": ("cell_interleaving", parse_bool),
        "latency": ("switch_latency_s", parse_duration),
        "prop": ("propagation_s", parse_duration),
    },
    "opteron": _SWITCHED,
    "fattree": _SWITCHED,
    "leafspine": {**_SWITCHED, "uplink": ("uplink_bps", parse_rate)},
    "segments": {
        "rate": ("rate_bps", parse_rate),
        "hosts": ("n_hosts", parse_count),
        "collisions": ("collisions", parse_bool),
        "prop": ("propagation_s", parse_duration),
        "pps": ("forward_pps", parse_count),
        "backplane": ("backplane_bps", parse_rate),
        "router_buffer": ("router_buffer", _buffer_packets),
    },
}

#: Kinds of the short form.
SHORT_KINDS = tuple(_OPTIONS)

#: A short form is typed on a command line: a few options, not pages of them.
MAX_CHARS = 4096


def from_spec_string(text: str) -> dict:
    """Build a platform from the short notation (see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("platform: empty description (expected e.g. 'star:64' or 'atm:100')")
    if len(text) > MAX_CHARS:
        raise ValueError(f"platform: a short form of {len(text)} characters, more than {MAX_CHARS}: {shown(text)}")
    head, *opts = [part.strip() for part in text.strip().split(",")]
    kind, sep, size = head.partition(":")
    kind = kind.strip().lower()
    size = size.strip()
    if kind not in _OPTIONS:
        raise ValueError(
            f"platform: unknown kind {shown(kind)} in {shown(text)} (expected one of {', '.join(SHORT_KINDS)})"
        )
    if sep and not size:
        raise ValueError(f"{kind}: empty size after ':' in {shown(text)}")

    kwargs: dict[str, Any] = {}
    rto: dict[str, float] = {}
    table = {**_COMMON, **_OPTIONS[kind]}
    for opt in opts:
        if not opt:
            raise ValueError(f"{kind}: empty option in {shown(text)} (stray comma?)")
        key, eq, value = opt.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or not key or not value:
            raise ValueError(f"{kind}: option {shown(opt)} is not KEY=VALUE")
        if key in ("rto_min", "rto_max"):
            rto[key] = parse_duration(value, f"{kind}: {key}")
            continue
        if key not in table:
            known = ", ".join(sorted([*table, "rto_min", "rto_max"]))
            raise ValueError(f"{kind}: unknown option {shown(key)} (expected one of {known})")
        arg, parse = table[key]
        if arg in kwargs:
            raise ValueError(f"{kind}: option '{key}' given twice")
        kwargs[arg] = parse(value, f"{kind}: {key}")

    if kind == "star":
        if not size:
            raise ValueError("star: needs a host count, e.g. 'star:64'")
        p = star(_host_count(size, "star"), **kwargs)
    elif kind == "atm":
        p = atm_cluster(_host_count(size, "atm") if size else 100, **kwargs)
    elif kind == "opteron":
        p = opteron_cluster(_host_count(size, "opteron") if size else 64, **kwargs)
    elif kind == "fattree":
        p = fat_tree(_host_count(size, "fattree", "k") if size else 4, **kwargs)
    elif kind == "leafspine":
        p = leaf_spine(*_leaf_spine_size(size), **kwargs)
    else:
        p = segments_router(*_segments_size(size), **kwargs)
    if rto:
        p = set_rto(p, rto.get("rto_min"), rto.get("rto_max"))
    return p


def _segments_size(size: str) -> tuple[int, int | None]:
    if not size:
        return 16, None
    s, x, h = size.lower().partition("x")
    n_segments = _host_count(s.strip(), "segments", "segment count")
    if not x:
        return n_segments, None
    if not h.strip():
        raise ValueError(f"segments: hosts per segment missing after 'x' in {shown(size)}")
    return n_segments, _host_count(h.strip(), "segments", "hosts per segment")


def _leaf_spine_size(size: str) -> tuple[int, int, int]:
    """``LxSxH``: leaves, spines, hosts per leaf (default 4x2x4)."""
    if not size:
        return 4, 2, 4
    parts = [x.strip() for x in size.lower().split("x")]
    if len(parts) != 3:
        raise ValueError(f"leafspine: size {shown(size)} is not LEAVESxSPINESxHOSTS, e.g. 8x4x16")
    what = ("leaf count", "spine count", "hosts per leaf")
    return tuple(_host_count(x, "leafspine", w) for x, w in zip(parts, what))  # type: ignore[return-value]
