"""Helpers shared by the subcommands: option parsing and output."""

from __future__ import annotations

import sys
from typing import Any

import click


class UserError(Exception):
    """A mistake in the user's input: reported in one line, exit status 2."""


class RunFailed(click.ClickException):
    """The run itself failed (not the invocation): exit status 1, one line."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


class IntIn(click.ParamType):
    """An integer option in ``lo..hi``; unlike ``click.IntRange`` its message quotes at most the first
    40 characters of a wrong value (a 5,000-digit argument must not become a 5,000-character error)."""

    name = "integer"

    def __init__(self, lo: int, hi: int | None = None) -> None:
        self.lo, self.hi = lo, hi

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        else:
            text = str(value).strip()
            shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"
            if len(text) > 40 or not text.lstrip("+-").isdigit():
                self.fail(f"{shown} is not {self._range()}", param, ctx)
            n = int(text)
        if n < self.lo or (self.hi is not None and n > self.hi):
            self.fail(f"{n} is not {self._range()}", param, ctx)
        return n

    def _range(self) -> str:
        what = {0: "a non-negative integer", 1: "a positive integer"}.get(self.lo, f"an integer >= {self.lo}")
        return what if self.hi is None else f"{what} (at most {self.hi})"


class Duration(click.ParamType):
    """A duration with its unit (``200ms``, ``60s``, ``1h``) as seconds; a bare number is an error
    naming the accepted units, so ``--timeout 200`` cannot silently mean 200 s or 200 ms."""

    name = "duration"

    def __init__(self, lo_s: float = 0.0, hi_s: float | None = None) -> None:
        self.lo_s, self.hi_s = lo_s, hi_s

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        from ..platform.units import parse_duration

        if isinstance(value, float):  # a default already in seconds
            return value
        opt = param.opts[0] if param is not None and param.opts else None
        try:
            seconds = parse_duration(str(value), opt, require_unit=True)
        except ValueError as e:
            self.fail(str(e).removeprefix(f"{opt}: ") if opt else str(e), param, ctx)
        if seconds <= self.lo_s or (self.hi_s is not None and seconds > self.hi_s):
            upper = f" and at most {self.hi_s:g} s" if self.hi_s is not None else ""
            self.fail(f"{value!s:.40} must be longer than {self.lo_s:g} s{upper}", param, ctx)
        return seconds


#: Seeds reach the core as unsigned 64-bit integers.
SEED = IntIn(0, 2**64 - 1)


def parse_with(parser, value: str, option: str) -> Any:
    try:
        return parser(value)
    except ValueError as e:
        # The parsers already name the option in their message; one line, exit 2, as every usage error.
        raise UserError(str(e)) from None


def emit_json(obj: Any) -> None:
    """``obj`` as strict JSON on stdout: a NaN or infinity is ``null`` (never the non-JSON ``NaN``)."""
    from .. import strictjson

    strictjson.dump(obj, sys.stdout)


#: The smallest RTO minimum the simulator can hold: its clock counts whole nanoseconds and it
#: wants a positive minimum, so ``--rto-min 0`` (no floor) becomes one tick.
_NO_FLOOR_S = 1e-9


def _rto_min(text: str) -> float:
    from ..platform.units import parse_duration

    return parse_duration(text, "--rto-min", require_unit=True) or _NO_FLOOR_S


def _option_words(message: str) -> str:
    """A platform error about a field the RTO options set, in the options' words
    (``hosts.h0.tcp.rto_min_s`` -> ``--rto-min``)."""
    import re

    for field, option in (("rto_min_s", "--rto-min"), ("rto_max_s", "--rto-max")):
        message = re.sub(
            rf"\b(?:hosts\.[^.\s]+\.)?(?:tcp\.)?{field}\b( \(([\d.e+-]+)\))?",
            lambda m, o=option: o + (f" ({float(m.group(2)) * 1e3:g} ms)" if m.group(2) else ""),
            message,
        )
    return message


def load_platform(
    spec: str,
    rto_min: str | None,
    rto_max: str | None,
    rto_scheme: str | None,
    seed: int = 0,
    procs: int | None = None,
) -> dict:
    """The platform with the RTO options applied (Oguchi et al. §5.2 schemes drawn with ``seed``);
    ``procs`` more than its hosts is the user's mistake (exit 2)."""
    from ..platform import apply_rto, as_platform, set_rto
    from ..platform.units import parse_duration

    try:
        plat = as_platform(spec)
        if rto_scheme:
            if not rto_min:
                raise ValueError("--rto-scheme needs --rto-min (the X of Oguchi et al. §5.2)")
            plat = apply_rto(plat, rto_scheme, _rto_min(rto_min), seed=seed)
        elif rto_min or rto_max:
            plat = set_rto(
                plat,
                rto_min_s=_rto_min(rto_min) if rto_min else None,
                rto_max_s=parse_duration(rto_max, "--rto-max", require_unit=True) if rto_max else None,
            )
    except (ValueError, OSError) as e:
        raise UserError(_option_words(str(e))) from None
    hosts = len(plat.get("hosts", []))
    if procs is not None and procs > hosts:
        raise UserError(f"--procs {procs}: {procs} ranks need {procs} hosts; the platform {spec} has {hosts}")
    return plat
