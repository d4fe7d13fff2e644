"""The one mapping from a TCP profile to every backend: ``tcp_backends.toml``, loaded and checked.

Each ``TcpSpec`` field has a row: its meaning in the simulator, and what the
emulated Linux kernel gets for it (a route metric, a per-namespace sysctl) or
why the kernel cannot be told (``fixed``: it always behaves one way;
``global``: a knob of the whole machine, read but not set). ``emu/tcpknobs.py``
applies the rows; a platform whose stack the kernel cannot reproduce is
reported (``kernel_mismatches``), never silently swapped.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "backend_rows", "kernel_mismatches"]

#: How a field reaches the kernel (see the table's header).
KINDS = ("route", "sysctl", "fixed", "global")

_FILE = Path(__file__).with_name("tcp_backends.toml")


@functools.lru_cache(maxsize=1)
def _rows() -> dict[str, dict[str, Any]]:
    rows = tomllib.loads(_FILE.read_text())
    for name, row in rows.items():  # a broken file of ours, not a user error
        if row.get("kind") not in KINDS or not row.get("simulator") or not row.get("linux") or not row.get("source"):
            raise RuntimeError(f"tcp_backends.toml [{name}]: needs simulator, linux, source and kind in {KINDS}")
        if row["kind"] in ("fixed", "global") and "kernel" not in row:
            raise RuntimeError(f"tcp_backends.toml [{name}]: a {row['kind']} row says what the kernel does")
    return rows


def backend_rows() -> dict[str, dict[str, Any]]:
    """Every row, by ``TcpSpec`` field name."""
    return {k: dict(v) for k, v in _rows().items()}


# A named strategy slot, as the kernel's booleans express it (TcpSpec::choices in spec.rs): the kernel has
# one knob per mechanism, so a slot the platform names is written through those fields' rows.
_SLOT_AS_BOOLEANS: dict[str, dict[str, dict[str, bool]]] = {
    "congestion_control": {"reno": {"cubic": False}, "cubic": {"cubic": True}},
    "loss_detection": {
        "dupack": {"sack": False, "rack": False},
        "sack": {"sack": True, "rack": False},
        "rack": {"sack": True, "rack": True},
    },
    "recovery_rate": {"rfc6675": {"prr": False}, "prr": {"prr": True}},
    "rto_rules": {"rfc6298": {"linux_rto": False}, "linux": {"linux_rto": True}},
}


def resolve_slots(tcp: Mapping[str, Any]) -> dict[str, Any]:
    """``tcp`` with every named slot written onto the booleans the kernel's knobs read. A name the
    kernel has no knob for (a controller only the simulator has) is refused, never swapped."""
    out = dict(tcp)
    for slot, names in _SLOT_AS_BOOLEANS.items():
        name = tcp.get(slot)
        if name is None:
            continue
        if name not in names:
            raise ValueError(f"tcp.{slot} = {name!r} has no Linux counterpart; emulate one of {', '.join(names)}")
        out.update(names[name])
    return out


def kernel_mismatches(tcp: Mapping[str, Any], kernel: Mapping[str, Any] | None = None) -> list[str]:
    """What of ``tcp`` the kernel will not do: one line per ``fixed``/``global`` field whose value
    differs from the kernel's (``kernel`` overrides a row's value, e.g. a machine's module parameter).
    ``hystart`` counts only with ``cubic``; ``quickack`` only with delayed ACKs."""
    out = []
    # a slot the platform names is reported under its own name, not the booleans it stands for
    written = {b for slot, names in _SLOT_AS_BOOLEANS.items() if tcp.get(slot) in names for b in names[tcp[slot]]}
    tcp = resolve_slots(tcp)
    for name, row in _rows().items():
        if row["kind"] not in ("fixed", "global") or name not in tcp or name in written:
            continue
        if name == "hystart" and not tcp.get("cubic"):
            continue
        if name == "quickack" and not tcp.get("delayed_ack"):
            continue
        want, have = tcp[name], (kernel or {}).get(name, row["kernel"])
        if want is None:  # a named slot left to the legacy booleans: their rows speak for it
            continue
        same = want == have if isinstance(have, (bool, str)) else abs(float(want) - float(have)) <= 1e-9
        if not same:
            out.append(f"tcp.{name} = {want!r}: the kernel does {have!r} ({row['linux']})")
    return out
