"""Strict JSON output: what every ``--json`` and every results file writes.

Python's ``json`` writes ``NaN`` and ``Infinity``, which are not JSON (RFC 8259) and which
``jq``, JavaScript and most parsers refuse. Here a non-finite float becomes ``null``; where a
caller knows why a value is missing it says so in a sibling field (``"unavailable": {...}``).
"""

from __future__ import annotations

import json
import math
from pathlib import PurePath
from typing import Any, TextIO

__all__ = ["strict", "dumps", "dump"]


def strict(obj: Any) -> Any:
    """``obj`` with every non-finite float replaced by ``None``; tuples and sets become lists,
    paths and other unknown objects their ``str``, dict keys strings."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    if isinstance(obj, dict):
        return {(k if isinstance(k, str) else str(k)): strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [strict(v) for v in obj]
    if isinstance(obj, PurePath):
        return str(obj)
    try:  # numpy scalars and arrays
        import numpy as np

        if isinstance(obj, np.generic):
            return strict(obj.item())
        if isinstance(obj, np.ndarray):
            return strict(obj.tolist())
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    return str(obj)


def dumps(obj: Any, indent: int | None = 1) -> str:
    return json.dumps(strict(obj), indent=indent, allow_nan=False, ensure_ascii=False)


def dump(obj: Any, f: TextIO, indent: int | None = 1) -> None:
    f.write(dumps(obj, indent))
    f.write("\n")
