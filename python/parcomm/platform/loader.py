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
import re
import tomllib
from pathlib import Path
from typing import Any, Mapping

from .rto import apply_rto, set_rto
from .schema import HOST_OPTIONS, PlatformError, host, link, make_platform, router, segment, switch
from .shortform import BUILDERS
from .units import shown

__all__ = ["load", "loads", "from_mapping"]

_SECTIONS = ("hosts", "switches", "links", "segments", "routers")


#: A platform file describes hosts, switches and links: 4 MiB is tens of thousands of them.
MAX_FILE_BYTES = 4 << 20


def read_bounded(path: Path, what: str, limit: int, error: type[ValueError]) -> str:
    """The UTF-8 text of ``path``, refusing more than ``limit`` bytes without reading them (a
    device such as /dev/zero, or a huge file, ends with ``error`` naming the file, not a hang)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise error(f"{path}: cannot read {what}: {e.strerror or e}") from None
    if len(raw) > limit:
        raise error(f"{path}: larger than a {what}'s limit of {limit} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise error(f"{path}: line {line}: not UTF-8 text ({e.reason} at byte {e.start})") from None


def parse_failure(e: ValueError) -> str:
    """What a parser's plain ``ValueError`` (not its decode error) means, in a few words."""
    if "Exceeds the limit" in str(e):  # Python's guard against quadratic int() on huge digit strings
        return "a number with thousands of digits"
    return shown(str(e), 120)


def load(path: str | Path) -> dict:
    """Read a TOML platform file (see the module docstring)."""
    path = Path(path)
    return loads(read_bounded(path, "platform file", MAX_FILE_BYTES, PlatformError), source=str(path))


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
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise PlatformError(f"{source}: invalid TOML: {parse_failure(e)}") from None
    try:
        return _build(data)
    except PlatformError as e:
        line = _line_of(text, str(e))
        raise PlatformError(f"{source}: {'' if line is None else f'line {line}: '}{e}") from None


_HEADER = re.compile(r"^[ \t]*(\[\[?)[ \t]*([A-Za-z0-9_-]+)[ \t]*\]\]?", re.M)
_ITEM = re.compile(r"^(hosts|switches|links|segments|routers)(?:\[(\d+)\]|\.([^.:\s]+))")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\b")


def _line_of(text: str, message: str) -> int | None:
    """The line of the table or key a message starts with, when the file makes that plain:
    ``hosts[3] ...`` is the fourth ``[[hosts]]``, ``hosts.a0 ...`` the ``[[hosts]]`` whose name is
    "a0", ``rto: ...`` the ``[rto]`` table, ``n: ...`` a top-level ``n = ...``. Else None."""
    headers = list(_HEADER.finditer(text))

    def line(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    m = _ITEM.match(message)
    if m:
        kind, index, name = m.groups()
        sections = [
            (h.start(), headers[k + 1].start() if k + 1 < len(headers) else len(text))
            for k, h in enumerate(headers)
            if h.group(1) == "[[" and h.group(2) == kind
        ]
        if index is not None:
            return line(sections[int(index)][0]) if int(index) < len(sections) else None
        named = re.compile(rf"^[ \t]*name[ \t]*=[ \t]*[\"']{re.escape(name)}[\"']", re.M)
        hits = [a for a, b in sections if named.search(text, a, b)]
        return line(hits[0]) if len(hits) == 1 else None
    m = _KEY.match(message)
    if m:
        key = m.group(1)
        table = next((h for h in headers if h.group(1) == "[" and h.group(2) == key), None)
        if table is not None:
            return line(table.start())
        top = text[: headers[0].start()] if headers else text  # top-level keys come before any table
        hit = re.search(rf"^[ \t]*{re.escape(key)}[ \t]*=", top, re.M)
        return line(hit.start()) if hit else None
    return None


def from_mapping(data: Mapping[str, Any], source: str = "<platform>") -> dict:
    """Build and validate a platform from an already-parsed TOML/JSON-like mapping."""
    try:
        return _build(data)
    except PlatformError as e:
        raise PlatformError(f"{source}: {e}") from None


def _build(data: Mapping[str, Any]) -> dict:
    """``from_mapping`` without the source in its messages."""
    if not isinstance(data, Mapping):
        raise PlatformError(f"expected a table at top level, got {type(data).__name__}")
    data = dict(data)
    rto = data.pop("rto", None)
    try:
        if "builder" in data:
            p = _from_builder(data)
        else:
            p = _explicit(data)
        if rto is not None:
            p = _apply_rto_table(p, rto)
    except PlatformError:
        raise
    except (ValueError, TypeError) as e:
        raise PlatformError(str(e)) from None
    return p


def _from_builder(data: dict) -> dict:
    name = data.pop("builder")
    if not isinstance(name, str) or name not in BUILDERS:
        raise PlatformError(f"builder: unknown builder {shown(name)} (expected one of {', '.join(BUILDERS)})")
    clash = [k for k in _SECTIONS if k in data]
    if clash:
        raise PlatformError(f"builder: '{name}' builds the whole platform; remove {', '.join(clash)} or drop 'builder'")
    fn = BUILDERS[name]
    params = inspect.signature(fn).parameters
    allowed = {p.name for p in params.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        allowed |= set(HOST_OPTIONS)
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PlatformError(
            f"{shown(unknown[0])}: not an argument of builder '{name}' (expected {', '.join(sorted(allowed))})"
        )
    return fn(**data)


def _explicit(data: dict) -> dict:
    allowed = {"name", *_SECTIONS}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise PlatformError(
            f"{shown(unknown[0])}: unknown top-level key (expected {', '.join(sorted(allowed))},"
            " 'rto', or 'builder' with its arguments)"
        )
    if "hosts" not in data:
        raise PlatformError("hosts: missing (or give 'builder = \"star\"' and its arguments)")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise PlatformError(f"name: must be a string, got {shown(name)}")
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
                where += f" ({_plain(item['name'])})"
            try:
                built.append(make(dict(item)))
            except (ValueError, TypeError) as e:
                raise PlatformError(f"{where}: {e}") from None
        sections[key] = built
    _quiet_hosts_off_frame_links(sections, data.get("hosts", []))
    return make_platform(name, **sections)


def _quiet_hosts_off_frame_links(sections: dict, items: list) -> None:
    """Hosts on ATM links or shared segments get no default timing noise (it is a frame
    link's, ``HostSpec::timing_noise_s``); one the file sets itself is left to the core."""
    given = {i.get("name") for i in items if isinstance(i, Mapping) and "timing_noise_s" in i}
    elsewhere = {m for s in sections.get("segments", []) for m in s["members"]}
    elsewhere |= {end for ln in sections.get("links", []) if ln["framing"] == "atm" for end in (ln["a"], ln["b"])}
    for h in sections.get("hosts", []):
        if h["name"] in elsewhere and h["name"] not in given:
            h["timing_noise_s"] = 0.0


def _plain(text: str) -> str:
    """``text`` as it is when it is a short printable line, else quoted and cut (``shown``)."""
    return text if len(text) <= 60 and text.isprintable() else shown(text)


def _take(item: dict, required: tuple[str, ...], optional: tuple[str, ...]) -> tuple[list, dict]:
    missing = [k for k in required if k not in item]
    if missing:
        raise PlatformError(f"missing field(s) {', '.join(missing)}")
    unknown = sorted(set(item) - set(required) - set(optional))
    if unknown:
        raise PlatformError(
            f"unknown field(s) {_plain(', '.join(unknown))} (expected {', '.join([*required, *optional])})"
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
    (a, b, rate), rest = _take(
        item, ("a", "b", "rate_bps"), ("propagation_s", "loss", "jitter_s", "framing", "drop_nth")
    )
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
