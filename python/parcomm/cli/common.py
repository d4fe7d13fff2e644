"""Helpers shared by the subcommands: option parsing and output."""

from __future__ import annotations

import json
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


def parse_with(parser, value: str, option: str) -> Any:
    try:
        return parser(value)
    except ValueError as e:
        # The parsers already name the option in their message.
        raise click.UsageError(str(e)) from None


def emit_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")


def load_platform(spec: str, rto_min: str | None, rto_max: str | None, rto_scheme: str | None, seed: int = 0) -> dict:
    """The platform with the RTO options applied (seed 000 §5.2 schemes drawn with ``seed``)."""
    from ..platform import apply_rto, as_platform, set_rto
    from ..platform.units import parse_duration

    try:
        plat = as_platform(spec)
        if rto_scheme:
            if not rto_min:
                raise ValueError("--rto-scheme needs --rto-min (the X of seed 000 §5.2)")
            plat = apply_rto(plat, rto_scheme, parse_duration(rto_min, "--rto-min"), seed=seed)
        elif rto_min or rto_max:
            plat = set_rto(
                plat,
                rto_min_s=parse_duration(rto_min, "--rto-min") if rto_min else None,
                rto_max_s=parse_duration(rto_max, "--rto-max") if rto_max else None,
            )
    except (ValueError, OSError) as e:
        raise UserError(str(e)) from None
    return plat
