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
    complex numbers ``{"real": x, "imag": y}``, paths and other unknown objects their ``str``,
    dict keys strings."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    if isinstance(obj, complex):  # JSON has no complex numbers: its two parts, each strict
        return {"real": strict(obj.real), "imag": strict(obj.imag)}
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


# -- one vocabulary for every --json -------------------------------------------------
#: Numeric keys that name a concept with a word the commands agreed not to use, and the
#: word they use instead: ranks are ``procs``, sizes carry ``_bytes``, times ``_s``.
RENAMED = {
    "nodes": "procs",
    "ranks": "procs",
    "world": "procs",
    "nprocs": "procs",
    "size": "size_bytes",
    "bytes": "size_bytes",
    "piece_size": "piece_size_bytes",
    "seconds": "a name ending in _s",
    "time": "time_s",
    "duration": "a name ending in _s",
}
#: Words of durations: a numeric key with one of them as a word ends in ``_s`` (or
#: ``_ms``/``_us``); ``timeouts`` (a count) is another word.
DURATION_WORDS = ("timeout", "interval", "delay", "latency", "duration", "seconds")


def vocabulary_problems(doc: Any, where: str = "") -> list[str]:
    """Keys of ``doc`` (a parsed --json document) that break the vocabulary, each with
    its path and the name to use. Only keys holding numbers are judged: ``"nodes": [...]``
    (a list of nodes) is fine, ``"nodes": 4`` (a count) is not."""
    problems: list[str] = []
    if isinstance(doc, list):
        for i, v in enumerate(doc):
            problems += vocabulary_problems(v, f"{where}[{i}]")
    elif isinstance(doc, dict):
        for k, v in doc.items():
            path = f"{where}.{k}" if where else str(k)
            numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
            if numeric and k in RENAMED:
                problems.append(f"{path}: say {RENAMED[k]}")
            elif numeric and set(k.split("_")) & set(DURATION_WORDS) and not k.endswith(("_s", "_ms", "_us")):
                problems.append(f"{path}: a duration, give it its unit (_s)")
            problems += vocabulary_problems(v, path)
    return problems
