"""Platform files in TOML: the spec.rs schema written out, or a builder reference.

Explicit form (same keys as the JSON the core reads; numbers may be unit
strings, e.g. ``rate_bps = "1G"``, ``buffer = "64KiB"``, ``latency_s = "3us"``)::

    name = "two-hosts"

    [[hosts]]
    name = "a"
    tcp = { rto_min_s = "200ms" }     # partial: other fields from the spec default

    [[hosts]]
    name = "b"

    [[switches]]
    name = "sw0"
    buffer = { size = 2048, unit = "cells" }

    [[links]]
    a = "a"
    b = "sw0"
    rate_bps = "149.76M"
    framing = "atm"

Builder form: ``builder`` names ``star``, ``atm`` (``atm_cluster``),
``opteron`` (``opteron_cluster``) or ``segments`` (``segments_router``); the
other top-level keys are its keyword arguments::

    builder = "star"
    n = 16
    rate_bps = "1G"
    buffer = "64KiB"
    flow_control = true
    tcp = { rto_min_s = "300ms" }

Either form may end with an ``[rto]`` table applied to every host: either
``scheme``/``x_s``/``seed`` (optionally ``spread_s``) for ``rto.apply_rto``, or
``rto_min_s``/``rto_max_s`` for ``rto.set_rto``.

Every error is a ``PlatformError`` whose message starts with the file name
and names the field.
"""

from __future__ import annotations

import inspect
import tomllib
from pathlib import Path
from typing import Any, Mapping

from .rto import apply_rto, set_rto
from .schema import HOST_OPTIONS, PlatformError, host, link, make_platform, router, segment, switch
from .shortform import BUILDERS

__all__ = ["load", "loads", "from_mapping"]

_SECTIONS = ("hosts", "switches", "links", "segments", "routers")


def load(path: str | Path) -> dict:
    """Read a TOML platform file (see the module docstring)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise PlatformError(f"{path}: cannot read platform file: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PlatformError(f"{path}: not UTF-8 text: {e}") from None
    return loads(text, source=str(path))


#: A platform file describes hosts, switches and links: 4 MiB is tens of thousands of them.
MAX_FILE_BYTES = 4 << 20


def loads(text: str, source: str = "<string>") -> dict:
    """Parse TOML text; ``source`` names it in error messages."""
    if len(text) > MAX_FILE_BYTES:
        raise PlatformError(f"{source}: {len(text)} characters, more than a platform file's {MAX_FILE_BYTES}")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise PlatformError(f"{source}: invalid TOML: {e}") from None
    except RecursionError:
        raise PlatformError(f"{source}: invalid TOML: arrays or tables nested too deeply") from None
    return from_mapping(data, source=source)


def from_mapping(data: Mapping[str, Any], source: str = "<platform>") -> dict:
    """Build and validate a platform from an already-parsed TOML/JSON-like mapping."""
    if not isinstance(data, Mapping):
        raise PlatformError(f"{source}: expected a table at top level, got {type(data).__name__}")
    data = dict(data)
    rto = data.pop("rto", None)
    try:
        if "builder" in data:
            p = _from_builder(data)
        else:
            p = _explicit(data)
        if rto is not None:
            p = _apply_rto_table(p, rto)
    except PlatformError as e:
        raise PlatformError(f"{source}: {e}") from None
    except (ValueError, TypeError) as e:
        raise PlatformError(f"{source}: {e}") from None
    return p


def _from_builder(data: dict) -> dict:
    name = data.pop("builder")
    if not isinstance(name, str) or name not in BUILDERS:
        raise PlatformError(f"builder: unknown builder {name!r} (expected one of {', '.join(BUILDERS)})")
    clash = [k for k in _SECTIONS if k in data]
    if clash:
        raise PlatformError(
            f"builder: '{name}' builds the whole platform; remove {', '.join(clash)} or drop 'builder'"
        )
    fn = BUILDERS[name]
    params = inspect.signature(fn).parameters
    allowed = {
        p.name for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        allowed |= set(HOST_OPTIONS)
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PlatformError(
            f"{unknown[0]}: not an argument of builder '{name}' (expected {', '.join(sorted(allowed))})"
        )
    return fn(**data)


def _explicit(data: dict) -> dict:
    allowed = {"name", *_SECTIONS}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PlatformError(
            f"{unknown[0]}: unknown top-level key (expected {', '.join(sorted(allowed))},"
            " 'rto', or 'builder' with its arguments)"
        )
    if "hosts" not in data:
        raise PlatformError("hosts: missing (or give 'builder = \"star\"' and its arguments)")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise PlatformError(f"name: must be a string, got {name!r}")
    sections = {}
    for key, make in (
        ("hosts", _host),
        ("switches", _switch),
        ("links", _link),
        ("segments", _segment),
        ("routers", _router),
    ):
        items = data.get(key, [])
        if not isinstance(items, list):
            raise PlatformError(f"{key}: expected an array of tables ([[{key}]]), got {type(items).__name__}")
        built = []
        for i, item in enumerate(items):
            where = f"{key}[{i}]"
            if not isinstance(item, Mapping):
                raise PlatformError(f"{where}: expected a table, got {type(item).__name__}")
            if isinstance(item.get("name"), str):
                where += f" ({item['name']})"
            try:
                built.append(make(dict(item)))
            except (ValueError, TypeError) as e:
                raise PlatformError(f"{where}: {e}") from None
        sections[key] = built
    return make_platform(name, **sections)


def _take(item: dict, required: tuple[str, ...], optional: tuple[str, ...]) -> tuple[list, dict]:
    missing = [k for k in required if k not in item]
    if missing:
        raise PlatformError(f"missing field(s) {', '.join(missing)}")
    unknown = sorted(set(item) - set(required) - set(optional))
    if unknown:
        raise PlatformError(
            f"unknown field(s) {', '.join(unknown)} (expected {', '.join([*required, *optional])})"
        )
    return [item.pop(k) for k in required], item


def _host(item: dict) -> dict:
    (name,), rest = _take(item, ("name",), HOST_OPTIONS)
    return host(name, **rest)


def _switch(item: dict) -> dict:
    (name, buf), rest = _take(
        item,
        ("name", "buffer"),
        ("flow_control", "early_packet_discard", "epd_threshold_cells", "latency_s", "cell_interleaving"),
    )
    return switch(name, buf, **rest)


def _link(item: dict) -> dict:
    (a, b, rate), rest = _take(item, ("a", "b", "rate_bps"), ("propagation_s", "loss", "framing", "drop_nth"))
    return link(a, b, rate, **rest)


def _segment(item: dict) -> dict:
    (name, rate, members), rest = _take(item, ("name", "rate_bps", "members"), ("propagation_s", "collisions"))
    return segment(name, rate, members, **rest)


def _router(item: dict) -> dict:
    (name, pps, bp, buf), _ = _take(item, ("name", "forward_pps", "backplane_bps", "buffer"), ())
    return router(name, forward_pps=pps, backplane_bps=bp, buffer=buf)


def _apply_rto_table(p: dict, rto: Any) -> dict:
    if not isinstance(rto, Mapping):
        raise PlatformError(f"rto: expected a table, got {type(rto).__name__}")
    rto = dict(rto)
    try:
        if "scheme" in rto:
            (scheme, x), rest = _take(rto, ("scheme", "x_s"), ("seed", "spread_s"))
            return apply_rto(p, scheme, x, rest.pop("seed", 0), **rest)
        _, rest = _take(rto, (), ("rto_min_s", "rto_max_s"))
        if not rest:
            raise PlatformError("give scheme/x_s/seed or rto_min_s/rto_max_s")
        return set_rto(p, rest.get("rto_min_s"), rest.get("rto_max_s"))
    except (ValueError, TypeError) as e:
        raise PlatformError(f"rto: {e}") from None
