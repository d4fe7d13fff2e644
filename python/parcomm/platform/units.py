"""Parse human-written quantities into the SI units the core uses.

Every parser accepts either a number (already in the target unit, returned
as-is after range checks) or a string. Errors are ``ValueError`` and name the
offending value, prefixed with ``what`` when the caller passes one.

Conventions (chosen once here; other modules import these functions):

* **Sizes** (``parse_size``) are integer **bytes**. Decimal (SI) prefixes are
  powers of 1000 and binary (IEC) prefixes powers of 1024, whatever the case
  of the letter: ``"64kB" == "64KB" == "64k" == 64_000`` and
  ``"64KiB" == "64Ki" == 65_536``. A bare number is bytes (``"1500"``), and
  ``B`` may be written or not (``"9180B"``). So ``"2k"`` is **2000**; write
  ``"2Ki"`` for 2048. A lowercase ``b`` means bits and is refused, because a
  size in bits is almost always a typo here. Fractions are allowed when the
  result is a whole number of bytes (``"1.5KiB" == 1536``).
* **Counts** (``parse_count``) follow the same prefix rules without a unit:
  ``"2k" == 2000``, ``"2Ki" == 2048``.
* **Rates** (``parse_rate``) are **bits per second** (float). Prefixes are
  decimal only (k, M, G, T, any case: there is no milli-bit/s in this domain).
  Accepted suffixes: none, ``bps``, ``b/s``, ``bit/s``, ``bits/s``, and for
  bytes per second ``Bps``/``B/s`` (multiplied by 8). ``"1G"``, ``"155M"``,
  ``"10Mbps"``, ``"1Gbit/s"`` and ``"149.76 Mbit/s"`` all work. A rate must be
  positive.
* **Durations** (``parse_duration``) are **seconds** (float). Suffixes are
  case-sensitive: ``ns``, ``us``/``µs``, ``ms``, ``s``/``sec``, ``min``,
  ``h``; a bare number is seconds (``"0.2"``, or a file's ``rto_min_s = 0.2``)
  unless the caller passes ``require_unit=True``, as the command line does:
  there ``"200"`` is an error that lists the units (is it 200 ms or 200 s?);
  only ``"0"`` needs none. A duration must be non-negative.
* **Buffers** (``parse_buffer``) return a spec.rs ``BufferSpec`` dict
  ``{"size": int, "unit": "bytes" | "packets" | "cells"}``: ``"64KiB"`` →
  bytes, ``"100 packets"``/``"100pkt"`` → packets, ``"2048 cells"``/``"2Ki
  cells"`` → cells; a bare count takes ``default_unit``.
"""

from __future__ import annotations

import math
import re
import reprlib
from fractions import Fraction
from typing import Any

__all__ = [
    "parse_size",
    "parse_count",
    "parse_rate",
    "parse_duration",
    "parse_buffer",
    "parse_bool",
    "shown",
    "BUFFER_UNITS",
]

#: Buffer units the core understands (spec.rs ``BufferUnit``).
BUFFER_UNITS = ("bytes", "packets", "cells")

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"

# Bounds on what a quantity may be, so an absurd value is an error rather than a
# hang or an allocation (``Fraction("1e99999999")`` alone would compute 10**99999999):
#: Digits a number may be written with, and the largest decimal exponent: a double has 17
#: significant digits and every bound below is under 1e16.
_MAX_DIGITS = 40
_MAX_EXPONENT = 30
#: 2**53 bytes (8 PiB) or items: the largest whole number the core's float64 clocks
#: and rates hold exactly; far above any object, buffer or message in this domain.
MAX_WHOLE = 2**53
#: 1 Pbit/s: three orders of magnitude above the fastest link in production.
MAX_RATE_BPS = 1e15
#: About 31.7 years: no timer, timeout or simulated horizon is longer.
MAX_DURATION_S = 1e9
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*(.*?)\s*$")

_DECIMAL = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}

# Exact factors, so that "350ms" is the float nearest 0.35 (not 350 * 1e-3).
_DURATION_UNITS = {
    "": Fraction(1),
    "s": Fraction(1),
    "sec": Fraction(1),
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "\u00b5s": Fraction(1, 10**6),  # micro sign
    "\u03bcs": Fraction(1, 10**6),  # Greek mu
    "ms": Fraction(1, 1000),
    "min": Fraction(60),
    "h": Fraction(3600),
}

_PACKET_WORDS = {"packets", "packet", "pkts", "pkt", "p"}
_CELL_WORDS = {"cells", "cell", "c"}
_BYTE_WORDS = {"bytes", "byte"}

# An optional metric prefix (k, M, G, T, optionally followed by i for the
# binary variant) and the unit word after it, e.g. "KiB" -> ("Ki", "B").
_PREFIX_WORD = re.compile(r"^((?:[kKmMgGtT][iI]?)?)\s*([A-Za-z]*)$")


def _ctx(what: str | None) -> str:
    return f"{what}: " if what else ""


_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlevel = 60, 60, 2
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 4


def shown(value: Any, limit: int = 80) -> str:
    """``value`` as an error message shows it: ``repr``, cut to about ``limit`` characters, on one line.

    Values come from users' files and command lines: a megabyte string, a list of a million items, a
    10,000-digit integer (whose ``repr`` Python refuses) or a 2,000-deep list must not become the message.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {len(str(value)) if value.bit_length() < 10_000 else 'over 3,000'} digits"
    try:
        text = _SHORT.repr(value)
    except (ValueError, RecursionError):  # pragma: no cover - reprlib already limits depth and size
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _multiplier(prefix: str) -> int:
    p = prefix.lower()
    return _DECIMAL[p] if p in _DECIMAL else _BINARY[p]


def _split(text: str, kind: str, what: str | None) -> tuple[Fraction, str]:
    """Split ``"64 KiB"`` into ``(Fraction(64), "KiB")``."""
    m = _QUANTITY.match(text) if len(text) <= 200 else None
    if not m:
        raise ValueError(f"{_ctx(what)}{kind} {shown(text)} is not a number with an optional unit")
    mantissa, _, exponent = m.group(1).lower().partition("e")
    if sum(c.isdigit() for c in mantissa) > _MAX_DIGITS or (exponent and abs(int(exponent)) > _MAX_EXPONENT):
        raise ValueError(f"{_ctx(what)}{kind} {shown(text)} is out of any sensible range")
    return Fraction(m.group(1)), m.group(2)


def _bounded(amount, limit, text: Any, kind: str, what: str | None):
    if amount > limit:
        raise ValueError(f"{_ctx(what)}{kind} {shown(text)} is larger than the limit of {limit:g}")
    return amount


def _real(value: int | float, limit: float, kind: str, what: str | None) -> float:
    """A finite float from an int or float no larger than ``limit`` (compared before converting, so
    that an integer beyond any float is refused rather than overflowing)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{_ctx(what)}{kind} {shown(value)} is not a finite number")
    _bounded(value, limit, value, kind, what)
    if value < -limit:
        raise ValueError(f"{_ctx(what)}{kind} {shown(value)} must not be negative")
    return float(value)


def _prefixed(text: str, kind: str, what: str | None) -> tuple[Fraction, str, str]:
    """``(number, prefix, word)`` of a quantity such as ``"2Ki cells"``."""
    number, unit = _split(text, kind, what)
    m = _PREFIX_WORD.match(unit)
    if not m:
        raise ValueError(f"{_ctx(what)}{kind} {shown(text)} has unknown unit {shown(unit)}")
    return number, m.group(1), m.group(2)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(amount: Fraction, text: Any, kind: str, what: str | None) -> int:
    if amount < 0:
        raise ValueError(f"{_ctx(what)}{kind} {shown(text)} must not be negative")
    _bounded(amount, MAX_WHOLE, text, kind, what)
    if amount.denominator != 1:
        raise ValueError(f"{_ctx(what)}{kind} {shown(text)} is not a whole number ({float(amount):g})")
    return int(amount)


def _number_whole(value: Any, kind: str, what: str | None) -> int:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{_ctx(what)}{kind} {shown(value)} is not a finite number")
    return _whole(Fraction(value), value, kind, what)


def parse_size(value: Any, what: str | None = None) -> int:
    """Bytes from ``1500``, ``"1500"``, ``"9180B"``, ``"64KiB"``, ``"1MiB"``, ``"64kB"``.

    See the module docstring for the prefix rules (``"2k"`` is 2000).
    """
    if _is_real(value):
        return _number_whole(value, "size", what)
    if not isinstance(value, str):
        raise ValueError(f"{_ctx(what)}size {shown(value)} is neither a number nor a string")
    number, prefix, word = _prefixed(value, "size", what)
    if word == "b":
        raise ValueError(f"{_ctx(what)}size {shown(value)}: lowercase 'b' means bits; sizes are bytes, write 'B'")
    if word not in ("", "B") and word.lower() not in _BYTE_WORDS:
        raise ValueError(
            f"{_ctx(what)}size {shown(value)} has unknown unit {shown(prefix + word)}"
            " (expected B, kB, KiB, MB, MiB, GB, GiB or a bare number of bytes)"
        )
    return _whole(number * _multiplier(prefix), value, "size", what)


def parse_count(value: Any, what: str | None = None) -> int:
    """A non-negative whole count: ``100``, ``"2k"`` (2000), ``"2Ki"`` (2048)."""
    if _is_real(value):
        return _number_whole(value, "count", what)
    if not isinstance(value, str):
        raise ValueError(f"{_ctx(what)}count {shown(value)} is neither a number nor a string")
    number, prefix, word = _prefixed(value, "count", what)
    if word:
        raise ValueError(
            f"{_ctx(what)}count {shown(value)} has unknown unit {shown(prefix + word)}"
            " (a count takes only a prefix k, M, G, Ki, Mi, Gi)"
        )
    return _whole(number * _multiplier(prefix), value, "count", what)


_RATE_SUFFIX = re.compile(r"^([A-Za-z]*?)\s*(bps|b/s|bit/s|bits/s|Bps|B/s)?$")


def parse_rate(value: Any, what: str | None = None) -> float:
    """Bits per second from ``1e9``, ``"1G"``, ``"155M"``, ``"10Mbps"``, ``"1Gbit/s"``."""
    if _is_real(value):
        rate = _real(value, MAX_RATE_BPS, "rate", what)
        if rate <= 0:
            raise ValueError(f"{_ctx(what)}rate {shown(value)} must be a positive number of bits/s")
        return rate
    if not isinstance(value, str):
        raise ValueError(f"{_ctx(what)}rate {shown(value)} is neither a number nor a string")
    number, unit = _split(value, "rate", what)
    m = _RATE_SUFFIX.match(unit)
    prefix = m.group(1) if m else unit
    if m is None or prefix.lower() not in _DECIMAL:
        if prefix.lower() in _BINARY:
            raise ValueError(
                f"{_ctx(what)}rate {shown(value)}: binary prefix {shown(prefix)} is not used for rates;"
                " write k, M, G or T (powers of 1000)"
            )
        raise ValueError(
            f"{_ctx(what)}rate {shown(value)} has unknown unit {shown(unit)}"
            " (expected e.g. 10Mbps, 1G, 1Gbit/s, 125MB/s)"
        )
    bits = 8 if m.group(2) in ("Bps", "B/s") else 1
    exact = number * _DECIMAL[prefix.lower()] * bits
    if exact <= 0:
        raise ValueError(f"{_ctx(what)}rate {shown(value)} must be positive")
    return float(_bounded(exact, MAX_RATE_BPS, value, "rate", what))


def parse_duration(value: Any, what: str | None = None, *, require_unit: bool = False) -> float:
    """Seconds from ``0.2``, ``"0.2"``, ``"200ms"``, ``"60s"``, ``"1us"``, ``"10 ns"``.

    With ``require_unit`` (command-line options), a string without a unit other than ``"0"`` is
    an error that names the accepted units."""
    if _is_real(value):
        seconds = _real(value, MAX_DURATION_S, "duration", what)
        if seconds < 0:
            raise ValueError(f"{_ctx(what)}duration {shown(value)} must be a non-negative number of seconds")
        return seconds
    if not isinstance(value, str):
        raise ValueError(f"{_ctx(what)}duration {shown(value)} is neither a number nor a string")
    number, unit = _split(value, "duration", what)
    if unit == "" and require_unit and number != 0:
        raise ValueError(
            f"{_ctx(what)}duration {shown(value)} has no unit; write it with one of ns, us, ms, s, min or h"
            f" (e.g. {shown(value.strip() + 'ms')} or {shown(value.strip() + 's')})"
        )
    if unit not in _DURATION_UNITS:
        raise ValueError(
            f"{_ctx(what)}duration {shown(value)} has unknown unit {shown(unit)}"
            " (expected ns, us, ms, s, min or h" + (")" if require_unit else "; a bare number is seconds)")
        )
    if number < 0:
        raise ValueError(f"{_ctx(what)}duration {shown(value)} must not be negative")
    return float(_bounded(number * _DURATION_UNITS[unit], MAX_DURATION_S, value, "duration", what))


def parse_buffer(value: Any, default_unit: str = "bytes", what: str | None = None) -> dict:
    """A ``BufferSpec`` dict from ``65536``, ``"64KiB"``, ``"100 packets"``, ``"2Ki cells"``.

    ``value`` may also be a dict ``{"size": ..., "unit": ...}`` (``size`` may
    itself be a string; ``unit`` defaults to ``default_unit``) or a
    ``(size, unit)`` pair. A bare number or prefixed count (``"2Ki"``) takes
    ``default_unit``.
    """
    units = ", ".join(BUFFER_UNITS)
    if default_unit not in BUFFER_UNITS:
        raise ValueError(f"{_ctx(what)}buffer unit '{default_unit}' is not one of {units}")
    if isinstance(value, (tuple, list)) and len(value) == 2:
        value = {"size": value[0], "unit": value[1]}
    if isinstance(value, dict):
        extra = set(value) - {"size", "unit"}
        if extra:
            raise ValueError(f"{_ctx(what)}buffer has unknown field(s) {shown(', '.join(sorted(map(str, extra))))}")
        if "size" not in value:
            raise ValueError(f"{_ctx(what)}buffer needs a 'size'")
        unit = value.get("unit", default_unit)
        if unit not in BUFFER_UNITS:
            raise ValueError(f"{_ctx(what)}buffer unit {shown(unit)} is not one of {units}")
        parse = parse_size if unit == "bytes" else parse_count
        return {"size": parse(value["size"], what), "unit": unit}
    if _is_real(value):
        return {"size": _number_whole(value, "buffer", what), "unit": default_unit}
    if not isinstance(value, str):
        raise ValueError(f"{_ctx(what)}buffer {shown(value)} is neither a number, a string nor a dict")
    number, prefix, word = _prefixed(value, "buffer", what)
    low = word.lower()
    if word == "":
        unit = default_unit
    elif word == "B" or low in _BYTE_WORDS:
        unit = "bytes"
    elif low in _PACKET_WORDS:
        unit = "packets"
    elif low in _CELL_WORDS:
        unit = "cells"
    elif word == "b":
        raise ValueError(f"{_ctx(what)}buffer {shown(value)}: lowercase 'b' means bits; write 'B' for bytes")
    else:
        raise ValueError(
            f"{_ctx(what)}buffer {shown(value)} has unknown unit {shown(prefix + word)}"
            " (expected bytes such as 64KiB, a packet count such as '100 packets'"
            " or a cell count such as '2048 cells')"
        )
    return {"size": _whole(number * _multiplier(prefix), value, "buffer", what), "unit": unit}


_TRUE = {"1", "true", "yes", "on", "y"}
_FALSE = {"0", "false", "no", "off", "n"}


def parse_bool(value: Any, what: str | None = None) -> bool:
    """``True``/``False`` from a bool or one of on/off, yes/no, true/false, 1/0."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    raise ValueError(f"{_ctx(what)}{shown(value)} is not a boolean (use on/off, yes/no, true/false or 1/0)")
