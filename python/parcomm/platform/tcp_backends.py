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


def kernel_mismatches(tcp: Mapping[str, Any], kernel: Mapping[str, Any] | None = None) -> list[str]:
    """What of ``tcp`` the kernel will not do: one line per ``fixed``/``global`` field whose value
    differs from the kernel's (``kernel`` overrides a row's value, e.g. a machine's module parameter).
    ``hystart`` counts only with ``cubic``; ``quickack`` only with delayed ACKs."""
    out = []
    for name, row in _rows().items():
        if row["kind"] not in ("fixed", "global") or name not in tcp:
            continue
        if name == "hystart" and not tcp.get("cubic"):
            continue
        if name == "quickack" and not tcp.get("delayed_ack"):
            continue
        want, have = tcp[name], (kernel or {}).get(name, row["kernel"])
        same = want == have if isinstance(have, bool) else abs(float(want) - float(have)) <= 1e-9
        if not same:
            out.append(f"tcp.{name} = {want!r}: the kernel does {have!r} ({row['linux']})")
    return out
