r"""A small, generic fuzz harness: seeded generators of malformed input, and a
runner that feeds them to a target under a time and a memory cap and sorts
every outcome into one of five kinds.

Outcomes
========

``clean error``
    The target raised one of the format's *clean* exception types (by default
    ``ValueError``, which every parcomm parser and loader uses and the CLI prints
    as one ``error:`` line), with a one-line message of sensible length that
    names what is wrong (the format's ``names`` check: a file, field, line or
    option).
``accepted``
    The target returned: the input was valid (targets check that what they
    accepted is usable, e.g. by running it, and raise ``AssertionError`` if not).
``unclear error``
    A clean exception type, but the message is empty, spans several lines, is
    very long or names nothing the user could look for. A bug.
``traceback``
    Any other exception (``TypeError``, ``KeyError``, ``RecursionError``,
    ``OverflowError``, an ``AssertionError`` from the target, ...). A bug.
``blow-up``
    The input hit the time cap (``signal.setitimer`` in the worker, and a
    watchdog in the parent for native code that holds the GIL) or the memory
    cap (``RLIMIT_AS`` in the worker: ``MemoryError``, or the worker killed,
    e.g. a Rust allocation failure aborting it). A bug.

How it runs
===========

Each format runs in forked worker processes, up to one per CPU at a time, so a
crash, an abort or an allocation storm never takes the test process with it.
Input ``i`` of a format is ``gen(random.Random(f"{seed}:{name}:{i}"))``: the
corpus is the same on every run and machine, and a worker that dies at input
``i`` is replaced by one that starts at ``i + 1`` (the parent regenerates input
``i`` to show it). A worker's stdout and stderr go to a file whose tail is
shown when it dies.

Adding a format
===============

1. Write ``gen(rng) -> input``: start from valid documents and break them with
   the mutators below (``mutate_text``, ``mutate_bytes`` for binary formats,
   ``mutate_doc`` for parsed documents, ``hostile_value``,
   ``hostile_number_text``, ``deep_nesting``, ``long_string``,
   ``unicode_string``; ``to_toml``/``to_json`` write a document out).
   Mostly-valid inputs with one bad part reach the deep checks; keep some
   fully valid ones so ``accepted`` is exercised too. Use only ``rng``.
2. Write ``target(input)``: call the real entry point (for files, write the
   bytes with ``write_scratch(name, data)`` and load the path, so size limits
   and decoding are covered), then use what it returned the way the program
   would; raise ``AssertionError`` if an accepted input gives a wrong result.
3. Add ``Format(name, gen, target, count, names=...)`` to a ``FORMATS`` list in a
   module ``tests/fuzz/formats_<topic>.py``. ``names(message, input)`` returns
   True when the message names the file/field/line/option (``names_any``
   builds one from words and regular expressions, ``all_of`` combines them);
   ``clean`` lists the exception types that count as clean errors (default
   ``ValueError``); ``time_cap_s`` and ``memory_cap`` bound one input.
4. In a test, ``results = run_formats(FORMATS)`` and ``assert_clean(results[name])``
   per format. ``python tests/fuzz/report.py`` finds every ``formats_*.py``
   module and prints inputs and outcomes per format (``--only NAME``,
   ``--seed N``, ``--scale 0.1``, ``--examples``).

For example, a format for a hypothetical ``load_manifest(path)``::

    def gen(rng):
        return mutate_text(rng, VALID_MANIFEST) if rng.random() < 0.9 else VALID_MANIFEST

    def target(text):
        return load_manifest(write_scratch("m.json", text))

    FORMATS = [Format("manifests", gen, target, 2000,
                      names=all_of(names_any(["m.json"]), names_any(["size", "etag"], [r"line \d+"])))]
"""

from __future__ import annotations

import contextlib
import copy
import faulthandler
import itertools
import json
import math
import os
import random
import re
import resource
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

SEED = 14

CLEAN = "clean error"
ACCEPTED = "accepted"
UNCLEAR = "unclear error"
TRACEBACK = "traceback"
BLOWUP = "blow-up"
OUTCOMES = (CLEAN, ACCEPTED, UNCLEAR, TRACEBACK, BLOWUP)
BAD = (UNCLEAR, TRACEBACK, BLOWUP)

#: A clean error's message is meant for one terminal line or two; longer means a value was echoed whole.
MAX_MESSAGE_CHARS = 1000
#: Examples kept per bad outcome (the counts are always complete).
EXAMPLES = 5


@dataclass(frozen=True)
class Format:
    """One input format: how to make inputs, what to feed them to, and how many."""

    name: str
    gen: Callable[[random.Random], Any]
    target: Callable[[Any], Any]
    count: int
    #: ``names(message, input) -> bool``: does a clean error's message name what the user must fix?
    names: Callable[[str, Any], bool] | None = None
    #: Exception types that count as clean errors (then subject to the message checks).
    clean: tuple[type[BaseException], ...] = (ValueError,)
    #: Seconds per input. Most valid inputs take milliseconds, the largest (a 4096-host platform
    #: built and simulated) about one second on an idle core; several times that means a hang.
    time_cap_s: float = 5.0
    #: Bytes of address space a worker may add to what it had when it started.
    memory_cap: int = 1 << 30


@dataclass
class Result:
    """Outcome counts of one format, with a few examples of each bad outcome."""

    name: str
    count: int
    seed: int
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    #: From its first worker's start to its last worker's end.
    wall_s: float = 0.0
    #: CPU seconds of its workers (user + system).
    cpu_s: float = 0.0

    @property
    def bad(self) -> int:
        return sum(self.counts[o] for o in BAD)

    def add(self, index: int, outcome: str, detail: str, shown: str | None) -> None:
        self.counts[outcome] += 1
        if outcome in BAD and len(self.examples.setdefault(outcome, [])) < EXAMPLES:
            self.examples[outcome].append(f"#{index}: {detail} <- {shown}")

    def summary(self) -> str:
        lines = [f"{self.name}: {self.count} inputs, " + ", ".join(f"{o} {self.counts[o]}" for o in OUTCOMES)]
        for outcome, examples in self.examples.items():
            lines += [f"  {outcome}: {e}" for e in examples]
        return "\n".join(lines)


# --------------------------------------------------------------------- hostile material

#: Numbers as a user might type them, around every boundary that matters to a parser.
NUMBER_TEXTS = (
    "0",
    "1",
    "2",
    "7",
    "64",
    "1500",
    "-1",
    "-0",
    "+7",
    "1.5",
    ".5",
    "5.",
    "0.0001",
    "1e3",
    "1e-9",
    "1e18",
    "1e308",
    "1e309",
    "1e-400",
    "1e99999999",
    "-1e99999999",
    "1e-99999999",
    "9" * 40,
    "9" * 400,
    "9" * 5000,
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "0x10",
    "0b11",
    "0o17",
    "1_000",
    "2**70",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "131073",
    "4097",
    "1e",
    "e5",
    "--1",
    "1..2",
    "",
    " ",
)

#: Numbers as a parsed document (JSON, TOML, a dict) may hold them.
NUMBERS = (
    0,
    1,
    -1,
    2,
    3,
    1500,
    # Past the host limit (131,072): a count just inside it builds a platform for a minute.
    131073,
    262144,
    4096,
    4097,
    2**31,
    2**32,
    2**53,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    2**70,
    -(2**63),
    10**30,
    10**400,
    0.0,
    -0.0,
    0.5,
    1e-300,
    5e-324,
    1e15,
    1e18,
    1e300,
    1.7976931348623157e308,
    -1e308,
    float("nan"),
    float("inf"),
    float("-inf"),
)

#: Values of the wrong type for almost any field.
WRONG_TYPES = (True, False, None, "", "x", "0", "nan", [], {}, [1, 2], {"a": 1}, [[]], {"": None})


def hostile_number_text(rng: random.Random) -> str:
    return rng.choice(NUMBER_TEXTS)


def hostile_number(rng: random.Random) -> int | float:
    return rng.choice(NUMBERS)


def long_string(rng: random.Random, alphabet: str = "x9.-/ ") -> str:
    n = rng.choice((300, 5_000, 100_000, 1_000_000))
    return "".join(rng.choice(alphabet) for _ in range(min(n, 64))) * (n // 64 + 1)


def unicode_string(rng: random.Random, n: int | None = None, surrogates: bool = False) -> str:
    """Awkward text: control characters, NUL, combining marks, right-to-left, wide, astral planes."""
    pools = [
        (0, 0x20),
        (0x7F, 0xA0),
        (0x300, 0x370),
        (0x590, 0x700),
        (0x2000, 0x2070),
        (0x3040, 0x30FF),
        (0xFE00, 0xFFFF),
        (0x1F300, 0x1F6FF),
        (0x10FFF0, 0x10FFFF),
    ]
    if surrogates:
        pools.append((0xD800, 0xDFFF))
    n = rng.randint(1, 40) if n is None else n
    out = []
    for _ in range(n):
        lo, hi = rng.choice(pools)
        out.append(chr(rng.randrange(lo, hi + 1)))
    return "".join(out)


def deep_nesting(rng: random.Random, opener: str = "[", closer: str = "]", inner: str = "1") -> str:
    depth = rng.choice((50, 500, 1_000, 5_000, 100_000))
    return opener * depth + inner + closer * depth


def hostile_value(rng: random.Random) -> Any:
    """A value to put where a document has a number, string, list or table."""
    r = rng.random()
    if r < 0.40:
        return hostile_number(rng)
    if r < 0.60:
        return rng.choice(WRONG_TYPES)
    if r < 0.75:
        return hostile_number_text(rng) + rng.choice(("", "", " ", "B", "KiB", "ms", "s", "G", "Mbps", "%", "x"))
    if r < 0.82:
        return long_string(rng)
    if r < 0.89:
        return unicode_string(rng)
    if r < 0.95:  # a deeply nested list (a parser's recursion, a validator's recursion)
        v: Any = 1
        for _ in range(rng.choice((10, 200, 2_000))):
            v = [v]
        return v
    return [rng.choice(NUMBERS)] * rng.choice((1_000, 100_000))  # a long list


# --------------------------------------------------------------------- mutators


def mutate_text(rng: random.Random, text: str, tokens: Sequence[str] = ()) -> str:
    """``text`` damaged in one to three ways (truncated, characters flipped, spans deleted or repeated,
    numbers and strings replaced by hostile ones, nesting, huge or empty)."""
    for _ in range(rng.choice((1, 1, 2, 3))):
        text = _mutate_text_once(rng, text, tokens)
    return text


_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING_RE = re.compile(r'"[^"\n]*"')


def _mutate_text_once(rng: random.Random, text: str, tokens: Sequence[str]) -> str:
    how = rng.randrange(12)
    n = len(text)
    if how == 0:  # truncated
        return text[: rng.randrange(n + 1)]
    if how == 1:  # characters flipped
        chars = list(text) or [""]
        for _ in range(rng.randint(1, 8)):
            chars[rng.randrange(len(chars))] = (
                rng.choice("\"'[]{}=,:#\n\\0x9.-+e \t\x00") if rng.random() < 0.8 else chr(rng.randrange(0x20, 0x2FFF))
            )
        return "".join(chars)
    if how == 2:  # a span deleted
        a = rng.randrange(n + 1)
        return text[:a] + text[a + rng.randint(1, 200) :]
    if how == 3:  # a span repeated (growth)
        a = rng.randrange(n + 1)
        span = text[a : a + rng.randint(1, 300)]
        return text[:a] + span * rng.choice((2, 10, 1_000)) + text[a:]
    if how in (4, 5):  # a number replaced by a hostile one
        nums = list(_NUMBER_RE.finditer(text))
        if nums:
            m = rng.choice(nums)
            return text[: m.start()] + hostile_number_text(rng) + text[m.end() :]
        return text + hostile_number_text(rng)
    if how == 6:  # a string replaced
        strs = list(_STRING_RE.finditer(text))
        if strs:
            m = rng.choice(strs)
            new = rng.choice((long_string(rng), unicode_string(rng), "", hostile_number_text(rng)))
            return text[: m.start()] + json.dumps(new, ensure_ascii=rng.random() < 0.5) + text[m.end() :]
        return text
    if how == 7:  # deep nesting
        a = rng.randrange(n + 1)
        opener, closer = rng.choice((("[", "]"), ("{", "}"), ("{a=", "}"), ('{"a":', "}")))
        return text[:a] + deep_nesting(rng, opener, closer) + text[a:]
    if how == 8:  # a token inserted
        a = rng.randrange(n + 1)
        tok = (
            rng.choice(list(tokens) or ["\n", "="])
            if tokens and rng.random() < 0.7
            else rng.choice(("\n", "=", ",", "[[", "]]", "{", "}", '"', "#", "\x00", "\ufeff", "\r\n", " = 1\n"))
        )
        return text[:a] + tok + text[a:]
    if how == 9:  # huge: a long comment or padding (beyond a size limit, sometimes)
        return text + "\n#" + "x" * rng.choice((1_000, 300_000, 5 << 20))
    if how == 10:
        return rng.choice(("", " ", "\n", "\x00", "\ufeff", "null", "[]", "{}", "0", unicode_string(rng)))
    return text.replace("\n", "\r\n") if rng.random() < 0.5 else text + unicode_string(rng)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """``data`` damaged in one to three ways: truncation, bit flips, inserted or deleted ranges, and
    fixed-width integers (little or big endian) overwritten with edge values. For binary formats."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        how = rng.randrange(7)
        n = len(buf)
        if how == 0:
            del buf[rng.randrange(n + 1) :]
        elif how == 1 and n:
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif how == 2:
            a = rng.randrange(n + 1)
            buf[a:a] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        elif how == 3:
            a = rng.randrange(n + 1)
            del buf[a : a + rng.randint(1, 64)]
        elif how == 4 and n >= 8:
            width = rng.choice((2, 4, 8))
            a = rng.randrange(n - width + 1)
            v = rng.choice((0, 1, 2 ** (8 * width) - 1, 2 ** (8 * width - 1), 2 ** (8 * width - 1) - 1, 0x7FFFFFFF))
            buf[a : a + width] = (v & (2 ** (8 * width) - 1)).to_bytes(width, rng.choice(("little", "big")))
        elif how == 5:
            a = rng.randrange(n + 1)
            span = bytes(buf[a : a + rng.randint(1, 256)])
            buf[a:a] = span * rng.choice((2, 100))
        else:
            buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    return bytes(buf)


def doc_paths(doc: Any) -> list[tuple]:
    """Every path (a tuple of keys and indexes) into a document of dicts and lists, the root first."""
    out: list[tuple] = []
    stack: list[tuple[tuple, Any]] = [((), doc)]
    while stack:
        path, node = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in node.items())
        elif isinstance(node, list) and len(node) <= 1_000:
            stack.extend(((*path, i), v) for i, v in enumerate(node))
    return out


def mutate_doc(
    rng: random.Random,
    doc: Any,
    value: Callable[[random.Random, tuple], Any] | None = None,
    extra_keys: Sequence[str] = ("bogus",),
) -> Any:
    """A deep copy of ``doc`` (dicts and lists) with one to three parts damaged: a value replaced
    (by ``value(rng, path)``, default ``hostile_value``), a key deleted or added, a list emptied or
    repeated, a table wrapped in a list."""
    doc = copy.deepcopy(doc)
    value = value or (lambda r, _path: hostile_value(r))
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        paths = doc_paths(doc)
        path = rng.choice(paths)
        if not path:
            if rng.random() < 0.5:
                return value(rng, path)
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        how = rng.random()
        if how < 0.65:
            parent[key] = value(rng, path)
        elif how < 0.78:
            if isinstance(parent, dict):
                del parent[key]
            else:
                parent.pop(key)
        elif how < 0.85 and isinstance(parent, dict):
            parent[rng.choice(list(extra_keys))] = value(rng, path)
        elif how < 0.92 and isinstance(parent[key], list):
            items = parent[key]
            parent[key] = [] if rng.random() < 0.3 else items * rng.choice((2, 50, 2_000))
        else:
            parent[key] = [parent[key]] if rng.random() < 0.5 else {"x": parent[key]}
    return doc


# --------------------------------------------------------------------- helpers for targets

_TOML_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(k: Any) -> str:
    k = str(k)
    return k if _TOML_BARE.match(k) else json.dumps(k, ensure_ascii=False)


def _toml_value(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        if len(v) > 16 and all(i is v[0] for i in v):  # hostile_value's long lists repeat one item
            x = _toml_value(v[0])
            return "[" + ", ".join([x] * len(v)) + "]" if x is not None else "[]"
        return "[" + ", ".join(x for x in (_toml_value(i) for i in v) if x is not None) + "]"
    if isinstance(v, dict):
        items = [(k, _toml_value(x)) for k, x in v.items()]
        return "{" + ", ".join(f"{_toml_key(k)} = {x}" for k, x in items if x is not None) + "}"
    return json.dumps(str(v))


def to_toml(doc: dict) -> str:
    """``doc`` as TOML text: scalars and inline values first, lists of tables as ``[[key]]``, tables as
    ``[key]``. Values TOML cannot hold (None) are left out. Not a general serializer: good enough that
    a valid document round-trips and a damaged one stays damaged."""
    with deep_recursion():
        return _to_toml(doc)


def _to_toml(doc: dict) -> str:
    head, tail = [], []
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(i, dict) for i in v):
            for item in v:
                tail.append(f"\n[[{_toml_key(k)}]]")
                tail += [f"{_toml_key(ik)} = {x}" for ik, iv in item.items() if (x := _toml_value(iv)) is not None]
        elif isinstance(v, dict) and v:
            tail.append(f"\n[{_toml_key(k)}]")
            tail += [f"{_toml_key(ik)} = {x}" for ik, iv in v.items() if (x := _toml_value(iv)) is not None]
        elif (x := _toml_value(v)) is not None:
            head.append(f"{_toml_key(k)} = {x}")
    return "\n".join(head + tail) + "\n"


def to_json(doc: Any) -> str:
    """``doc`` as JSON, NaN and Infinity included (as JavaScript writes them; Python reads them)."""
    with deep_recursion():
        return json.dumps(doc, allow_nan=True, ensure_ascii=False)


@contextlib.contextmanager
def deep_recursion(limit: int = 50_000):
    """Let a serializer in a generator descend into the deeply nested values ``hostile_value`` makes."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


_SCRATCH: str | None = None


def scratch_dir() -> str:
    """A directory private to this worker process for the files a target writes (inside the run's
    directory, which ``run_formats`` removes at the end)."""
    global _SCRATCH
    if _SCRATCH is None or not os.path.isdir(_SCRATCH):
        _SCRATCH = tempfile.mkdtemp(prefix="parcomm-fuzz-")
    return _SCRATCH


def write_scratch(name: str, data: str | bytes) -> str:
    """Write ``data`` to ``name`` in the scratch directory; the path. Unencodable text is written with
    its surrogates escaped, so a target sees bytes no editor would save, not a harness error."""
    path = os.path.join(scratch_dir(), name)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    with open(path, "wb") as f:
        f.write(data)
    return path


def names_any(words: Iterable[str] = (), patterns: Iterable[str] = ()) -> Callable[[str, Any], bool]:
    """A ``names`` check: the message contains one of ``words`` (as a whole word, or with punctuation
    around it) or matches one of ``patterns``."""
    alts = [rf"(?<![A-Za-z0-9_]){re.escape(w)}(?![A-Za-z0-9_])" for w in words if w] + list(patterns)
    rx = re.compile("|".join(alts)) if alts else None
    return lambda message, _input: bool(rx and rx.search(message))


def all_of(*checks: Callable[[str, Any], bool]) -> Callable[[str, Any], bool]:
    return lambda message, inp: all(c(message, inp) for c in checks)


# --------------------------------------------------------------------- running


class _TimeCap(BaseException):
    """Raised by the worker's alarm; a BaseException so that no ``except Exception`` in a target hides it."""


def _on_alarm(signum, frame):
    raise _TimeCap()


def _message_problem(message: str, fmt: Format, arg: Any) -> str | None:
    text = message.strip()
    if not text:
        return "empty message"
    if "\n" in text:
        return "message spans several lines"
    if len(text) > MAX_MESSAGE_CHARS:
        return f"message of {len(text)} characters"
    if fmt.names is not None and not fmt.names(text, arg):
        return "message names no file, field, line or option"
    return None


def classify(fmt: Format, arg: Any) -> tuple[str, str]:
    """Run ``fmt.target(arg)`` under the time cap (the memory cap is the worker's); outcome and detail."""
    signal.setitimer(signal.ITIMER_REAL, fmt.time_cap_s)
    try:
        fmt.target(arg)
    except _TimeCap:
        return BLOWUP, f"over the time cap of {fmt.time_cap_s:g} s"
    except MemoryError:
        return BLOWUP, "MemoryError (memory cap)"
    except fmt.clean as exc:
        problem = _message_problem(str(exc), fmt, arg)
        if problem:
            return UNCLEAR, f"{type(exc).__name__}, {problem}: {str(exc)[:300]!r}"
        return CLEAN, ""
    except Exception as exc:  # noqa: BLE001 - every other exception is the outcome under test
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return (
            TRACEBACK,
            f"{type(exc).__name__}: {str(exc)[:300]} (at {os.path.basename(where.filename)}:{where.lineno})",
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return ACCEPTED, ""


def make_input(fmt: Format, seed: int, index: int) -> Any:
    return fmt.gen(random.Random(f"{seed}:{fmt.name}:{index}"))


def show(arg: Any, limit: int = 160) -> str:
    try:
        with deep_recursion():
            text = repr(arg)
    except Exception:  # noqa: BLE001 - e.g. a structure too deep to repr
        text = f"<{type(arg).__name__} that cannot be shown>"
    return text if len(text) <= limit else text[: limit - 20] + f"... ({len(text)} chars)"


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * resource.getpagesize()
    except OSError:
        return None


def _worker(fmt: Format, seed: int, start: int, end: int, wfd: int, log: str) -> None:
    """In the forked child: classify inputs start..end-1, one JSON line each on ``wfd``."""
    global _SCRATCH
    _SCRATCH = log + ".d"
    os.mkdir(_SCRATCH)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    # a fatal signal's Python stack goes to the log too (pytest points faulthandler at its own stderr)
    faulthandler.enable(file=os.fdopen(os.dup(out), "w"))
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, _on_alarm)
    have = _address_space()
    if have is not None:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = have + fmt.memory_cap
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    with os.fdopen(wfd, "w", buffering=1) as pipe:
        for i in range(start, end):
            try:
                arg = make_input(fmt, seed, i)
            except Exception as exc:  # noqa: BLE001 - a generator bug must not pass for a target's
                outcome, detail = TRACEBACK, f"the generator raised {type(exc).__name__}: {exc}"
            else:
                outcome, detail = classify(fmt, arg)
            pipe.write(json.dumps({"i": i, "o": outcome, "d": detail}) + "\n")


@dataclass
class _Running:
    fmt: Format
    result: Result
    pid: int
    rfd: int
    log: str
    next_index: int
    end: int
    last_progress: float
    buf: bytes = b""


def run_formats(
    formats: Sequence[Format], seed: int = SEED, jobs: int | None = None, counts: dict[str, int] | None = None
) -> dict[str, Result]:
    """Run every format's corpus in forked workers (``jobs`` at a time, default one per CPU); results
    by format name. ``counts`` overrides inputs per format (e.g. for a quick run)."""
    jobs = jobs or os.cpu_count() or 1
    results = {f.name: Result(f.name, (counts or {}).get(f.name, f.count), seed) for f in formats}
    pending: list[tuple[Format, int]] = [(f, 0) for f in formats]
    running: dict[int, _Running] = {}
    sel = selectors.DefaultSelector()
    logdir = tempfile.mkdtemp(prefix="parcomm-fuzz-")  # workers' output and scratch files
    serial = itertools.count()
    started: dict[str, float] = {}

    def launch(fmt: Format, start: int) -> None:
        end = results[fmt.name].count
        started.setdefault(fmt.name, time.perf_counter())
        if start >= end:  # the last input was the one that killed the previous worker
            results[fmt.name].wall_s = time.perf_counter() - started[fmt.name]
            return
        rfd, wfd = os.pipe()
        log = os.path.join(logdir, f"{next(serial)}.log")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                os.close(rfd)
                _worker(fmt, seed, start, end, wfd, log)
            except BaseException:  # noqa: BLE001 - the parent sees the worker die and shows this
                traceback.print_exc()
                code = 3
            finally:
                os._exit(code)
        os.close(wfd)
        os.set_blocking(rfd, False)
        running[rfd] = _Running(fmt, results[fmt.name], pid, rfd, log, start, end, time.monotonic())
        sel.register(rfd, selectors.EVENT_READ)

    def finish(w: _Running, why: str | None) -> None:
        """The worker ``w`` ended (``why`` is None) or must be ended (``why`` says why)."""
        sel.unregister(w.rfd)
        os.close(w.rfd)
        del running[w.rfd]
        if why is not None:
            os.kill(w.pid, signal.SIGKILL)
        _, status, usage = os.wait4(w.pid, 0)
        w.result.cpu_s += usage.ru_utime + usage.ru_stime
        if w.next_index < w.end:  # it died (or hung) on input next_index
            if why is None:
                why = (
                    f"worker killed by signal {os.WTERMSIG(status)}"
                    if os.WIFSIGNALED(status)
                    else f"worker exited with status {os.WEXITSTATUS(status)}"
                )
            tail = _tail(w.log)
            shown = _regenerate(w.fmt, seed, w.next_index)
            w.result.add(w.next_index, BLOWUP, why + (f"; its last output: {tail!r}" if tail else ""), shown)
            pending.append((w.fmt, w.next_index + 1))
        else:
            w.result.wall_s = time.perf_counter() - started[w.fmt.name]

    try:
        while pending or running:
            while pending and len(running) < jobs:
                launch(*pending.pop(0))
            for key, _ in sel.select(timeout=0.25):
                w = running[key.fd]
                try:
                    chunk = os.read(w.rfd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    finish(w, None)
                    continue
                w.buf += chunk
                *lines, w.buf = w.buf.split(b"\n")
                for line in lines:
                    rec = json.loads(line)
                    arg = None
                    if rec["o"] in BAD:
                        arg = _regenerate(w.fmt, seed, rec["i"])
                    w.result.add(rec["i"], rec["o"], rec["d"], arg)
                    w.next_index = rec["i"] + 1
                    w.last_progress = time.monotonic()
            now = time.monotonic()
            for w in list(running.values()):
                # The worker's own alarm fires at the cap; only native code holding the GIL outlasts it.
                if now - w.last_progress > 2 * w.fmt.time_cap_s + 3:
                    finish(w, f"no answer within {2 * w.fmt.time_cap_s + 3:g} s (hung in native code?)")
    finally:
        for w in list(running.values()):
            os.kill(w.pid, signal.SIGKILL)
            os.waitpid(w.pid, 0)
        sel.close()
        shutil.rmtree(logdir, ignore_errors=True)
    return results


def _regenerate(fmt: Format, seed: int, index: int) -> str:
    try:
        return show(make_input(fmt, seed, index))
    except Exception as exc:  # noqa: BLE001 - the worker already reported the generator's failure
        return f"<the generator raised {type(exc).__name__}>"


def _tail(path: str, n: int = 300) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def assert_clean(result: Result, min_errors: float = 0.2, min_accepted: int = 1) -> None:
    """No unclear error, traceback or blow-up; and a corpus that is really hostile (at least
    ``min_errors`` of it clean errors) yet reaches the valid path (``min_accepted`` inputs)."""
    assert sum(result.counts.values()) == result.count, result.summary()
    assert result.bad == 0, result.summary()
    assert result.counts[CLEAN] >= min_errors * result.count, result.summary()
    assert result.counts[ACCEPTED] >= min_accepted, result.summary()


def table(results: Iterable[Result]) -> str:
    """Inputs and outcomes per format, as a plain-text table."""
    rows = [("format", "inputs", *OUTCOMES, "wall s", "cpu s")]
    total: Counter = Counter()
    n, cpu = 0, 0.0
    for r in results:
        rows.append((r.name, str(r.count), *(str(r.counts[o]) for o in OUTCOMES), f"{r.wall_s:.1f}", f"{r.cpu_s:.1f}"))
        total.update(r.counts)
        n += r.count
        cpu += r.cpu_s
    rows.append(("total", str(n), *(str(total[o]) for o in OUTCOMES), "", f"{cpu:.1f}"))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    fmt = lambda row: "  ".join(
        cell.ljust(w) if c == 0 else cell.rjust(w) for c, (cell, w) in enumerate(zip(row, widths))
    )  # noqa: E731
    return "\n".join([fmt(rows[0]), "  ".join("-" * w for w in widths), *map(fmt, rows[1:])])
