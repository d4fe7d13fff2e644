"""TCP stack profiles as data: ``stacks/<name>.toml``, each value with its source.

A profile is a partial ``tcp`` table (the fields of ``TcpSpec``): what one
operating system's TCP does, as far as the simulator models it, plus what
it does that the simulator does not (``[not_modelled]``). Use one by name
in any ``tcp`` table and override fields beside it::

    star(8, tcp={"stack": "linux", "rto_min_s": "5ms"})

    [[hosts]]                       # in a platform file
    name = "a"
    tcp = { stack = "linux-2.6.11" }

``rfc`` is the simulator's default transport; ``linux`` today's kernel;
``linux-2.6.11`` and ``solaris-2.5.1`` the stacks of the seed papers'
clusters (Nomura & Ishikawa, Oguchi et al.).
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["STACKS", "MECHANISMS", "stack_fields", "stack_info", "stack_mechanisms"]

_DIR = Path(__file__).with_name("stacks")

#: The profiles shipped, by name.
STACKS = tuple(sorted(p.stem for p in _DIR.glob("*.toml")))

#: The fields that make a stack behave as its kernel does (loss detection and
#: recovery, RTO rules, timer granularity), as opposed to what an experiment
#: sets itself (RTO bounds, delayed ACKs, initial window, buffers). Not
#: ``cubic`` (nor its ``hystart``): the congestion control is the experiment's
#: choice too (the emulated kernels run Reno, ``emu/tcpknobs.py``).
MECHANISMS = (
    "sack",
    "tail_loss_probe",
    "linux_rto",
    "timestamps",
    "rack",
    "prr",
    "frto",
    "quickack",
    "rto_initial_s",
    "clock_granularity_s",
    "timer_tick_s",
)


@functools.lru_cache(maxsize=None)
def _read(name: str) -> dict[str, Any]:
    from .fields import TCP_FIELDS, PlatformError

    if name not in STACKS:
        raise PlatformError(f"tcp.stack: unknown stack {name!r} (known: {', '.join(STACKS)})")
    doc = tomllib.loads((_DIR / f"{name}.toml").read_text())
    fields = doc.get("tcp", {})
    unknown = set(fields) - set(TCP_FIELDS)
    if unknown:  # a broken file of ours, not a user error
        raise RuntimeError(f"stacks/{name}.toml: unknown tcp field(s) {', '.join(sorted(unknown))}")
    return {"about": doc.get("about", ""), "tcp": dict(fields), "not_modelled": dict(doc.get("not_modelled", {}))}


def stack_fields(name: Any) -> dict[str, Any]:
    """The ``tcp`` fields profile ``name`` sets (a partial TcpSpec)."""
    if not isinstance(name, str):
        from .fields import PlatformError

        raise PlatformError(f"tcp.stack must be a name (one of {', '.join(STACKS)}), got {name!r}")
    return dict(_read(name)["tcp"])


def stack_mechanisms(name: Any) -> dict[str, Any]:
    """The :data:`MECHANISMS` fields of profile ``name`` (those it sets)."""
    fields = stack_fields(name)
    return {k: fields[k] for k in MECHANISMS if k in fields}


def stack_info(name: str) -> dict[str, Any]:
    """``about``, ``tcp`` and ``not_modelled`` of profile ``name``."""
    d = _read(name)
    return {"about": d["about"], "tcp": dict(d["tcp"]), "not_modelled": dict(d["not_modelled"])}
