"""Helpers shared by the subcommands: option parsing and output."""

from __future__ import annotations

import json
import sys
from typing import Any

import click


class UserError(Exception):
    """A mistake in the user's input: reported in one line, exit status 2."""


def parse_with(parser, value: str, option: str) -> Any:
    try:
        return parser(value)
    except ValueError as e:
        # The parsers already name the option in their message.
        raise click.UsageError(str(e)) from None


def emit_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=1, default=str)
    sys.stdout.write("\n")
