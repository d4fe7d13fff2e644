"""The measured parameter set every point-to-point model is built from.

PlogP (Kielmann, Bal & Verstoep 2000) measures, per message size m: the gap
g(m), the send and receive overheads o_s(m) and o_r(m), and one latency L.
PlogP-BR (seed 001 §3) adds g(m, C) per communication pattern C (eq. 3), the
switch queue length q (§3.1), whether the switch has flow control, and the
retransmission timeout T_RTO. PlogP-BR+ (:mod:`.plogp_br_plus`) adds the
expected RTO waits per call of each phased pattern at the probe's sizes
(``rto_sizes``, ``rto_waits``). Between measured sizes, values are
interpolated linearly in m (piecewise); beyond the largest size, the last
segment's slope is extended, since g grows linearly with m for large m.

Saved as JSON by ``parcomm measure`` and loaded by ``parcomm model``.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "parcomm-plogp/1"
#: A parameter file holds a few dozen sizes per pattern; 4 MiB is far beyond any measurement.
MAX_FILE_BYTES = 4 << 20


def interpolate(sizes: list[int], values: list[float], m: float) -> float:
    """Piecewise-linear in m through (sizes, values); linear extrapolation at both ends."""
    if not sizes:
        raise ValueError("no measured sizes to interpolate from")
    if len(sizes) == 1:
        return values[0]
    i = bisect.bisect_left(sizes, m)
    i = min(max(i, 1), len(sizes) - 1)
    x0, x1, y0, y1 = sizes[i - 1], sizes[i], values[i - 1], values[i]
    if m <= sizes[0]:
        x0, x1, y0, y1 = sizes[0], sizes[1], values[0], values[1]
    return max(0.0, y0 + (y1 - y0) * (m - x0) / (x1 - x0))


def _shown(v: Any) -> str:
    from ..platform.units import shown

    return shown(v)


def _check_int(name: str, v: Any, lo: int, hi: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"params: '{name}' must be whole numbers in {lo}..{hi}, got {_shown(v)}")


def _check_number(name: str, v: Any, hi: float = 1e9) -> None:
    """A time in seconds (or a byte count): finite, non-negative, below ``hi``."""
    # 0 <= v <= hi first: an integer beyond any float compares fine but math.isfinite() overflows on it
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= hi and math.isfinite(v)):
        raise ValueError(f"params: '{name}' must be finite numbers in 0..{hi:g}, got {_shown(v)}")


@dataclass
class PlogPParams:
    procs: int
    L: float
    sizes: list[int]
    g: list[float]
    o_s: list[float]
    o_r: list[float]
    # PlogP-BR: pattern name -> g(m, C) per size (same sizes as g).
    g_pattern: dict[str, list[float]] = field(default_factory=dict)
    queue_bytes: float | None = None
    flow_control: bool = False
    rto_s: float = 0.2
    # PlogP-BR+: pattern (an Alltoall algorithm) -> expected RTO waits per call, per probe size.
    rto_sizes: list[int] = field(default_factory=list)
    rto_waits: dict[str, list[float]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Types first: a parameter file is user input, and the models do arithmetic on it.
        _check_int("procs", self.procs, 1, 1 << 20)
        _check_number("L", self.L)
        for name in ("sizes", "g", "o_s", "o_r"):
            if not isinstance(getattr(self, name), list):
                raise ValueError(f"params: '{name}' must be a list, got {type(getattr(self, name)).__name__}")
        for m in self.sizes:
            _check_int("sizes", m, 0, 2**53)
        for name in ("g", "o_s", "o_r"):
            for v in getattr(self, name):
                _check_number(name, v)
        if not isinstance(self.g_pattern, dict):
            raise ValueError(f"params: 'g_pattern' must be an object, got {type(self.g_pattern).__name__}")
        for pat, vals in self.g_pattern.items():
            if not isinstance(pat, str) or len(pat) > 64 or not pat.isprintable():
                raise ValueError(
                    f"params: 'g_pattern' names a pattern {_shown(pat)}; names are short printable strings"
                )
            if not isinstance(vals, list):
                raise ValueError(f"params: g_pattern['{pat}'] must be a list, got {type(vals).__name__}")
            for v in vals:
                _check_number(f"g_pattern['{pat}']", v)
        if self.queue_bytes is not None:
            _check_number("queue_bytes", self.queue_bytes, 2.0**53)
        if not isinstance(self.flow_control, bool):
            raise ValueError(f"params: 'flow_control' must be true or false, got {_shown(self.flow_control)}")
        _check_number("rto_s", self.rto_s, 1e9)
        self._check_rto_probe()
        if not isinstance(self.meta, dict):
            raise ValueError(f"params: 'meta' must be an object, got {type(self.meta).__name__}")
        n = len(self.sizes)
        if n == 0:
            raise ValueError("params: 'sizes' is empty")
        if sorted(self.sizes) != list(self.sizes) or len(set(self.sizes)) != n:
            raise ValueError("params: 'sizes' must be strictly increasing")
        for name in ("g", "o_s", "o_r"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"params: '{name}' has {len(getattr(self, name))} values for {n} sizes")
        for pat, vals in self.g_pattern.items():
            if len(vals) != n:
                raise ValueError(f"params: g_pattern['{pat}'] has {len(vals)} values for {n} sizes")
        if self.procs < 1:
            raise ValueError(f"params: 'procs' must be >= 1, got {self.procs}")

    def _check_rto_probe(self) -> None:
        if not isinstance(self.rto_sizes, list) or not isinstance(self.rto_waits, dict):
            raise ValueError("params: 'rto_sizes' must be a list and 'rto_waits' an object")
        for m in self.rto_sizes:
            _check_int("rto_sizes", m, 0, 2**53)
        if sorted(set(self.rto_sizes)) != list(self.rto_sizes):
            raise ValueError("params: 'rto_sizes' must be strictly increasing")
        if self.rto_waits and not self.rto_sizes:
            raise ValueError("params: 'rto_waits' needs 'rto_sizes'")
        for pat, vals in self.rto_waits.items():
            if not isinstance(pat, str) or len(pat) > 64 or not pat.isprintable():
                raise ValueError(
                    f"params: 'rto_waits' names a pattern {_shown(pat)}; names are short printable strings"
                )
            if not isinstance(vals, list) or len(vals) != len(self.rto_sizes):
                raise ValueError(
                    f"params: rto_waits['{pat}'] must be a list of {len(self.rto_sizes)} values (one per rto_sizes)"
                )
            for v in vals:
                _check_number(f"rto_waits['{pat}']", v, 1e6)

    def rto_waits_at(self, pattern: str, m: float) -> float:
        """PlogP-BR+'s expected RTO waits per call of ``pattern`` at m bytes: linear
        between probe sizes, the nearest probe's value outside them (no trend is
        extrapolated: whether an RTO happens is not linear in m)."""
        vals = self.rto_waits.get(pattern)
        if not vals:
            raise ValueError(
                f"PlogP-BR+ needs the RTO probe's expected waits for {pattern} (rto_waits); "
                f"measure with `parcomm measure --rto-probe`"
            )
        m = min(max(m, self.rto_sizes[0]), self.rto_sizes[-1])
        return interpolate(self.rto_sizes, vals, m)

    def g_at(self, m: float) -> float:
        return interpolate(self.sizes, self.g, m)

    def o_s_at(self, m: float) -> float:
        return interpolate(self.sizes, self.o_s, m)

    def o_r_at(self, m: float) -> float:
        return interpolate(self.sizes, self.o_r, m)

    def g_pattern_at(self, pattern: str, m: float) -> float:
        """g(m, C); falls back to g(m) = g(m, C_e) for a pattern not measured."""
        vals = self.g_pattern.get(pattern)
        return interpolate(self.sizes, vals, m) if vals else self.g_at(m)

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=1)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "params") -> PlogPParams:
        if not isinstance(d, dict):
            raise ValueError(
                f"{source}: expected a JSON object with 'format', 'procs', 'L', ... at top level,"
                f" got {type(d).__name__}"
            )
        if d.get("format") != FORMAT:
            raise ValueError(
                f"{source}: not a parcomm PlogP parameter file (format {_shown(d.get('format'))}, expected {FORMAT!r})"
            )
        required = ("procs", "L", "sizes", "g", "o_s", "o_r")
        missing = [k for k in required if k not in d]
        if missing:
            raise ValueError(f"{source}: missing field(s) {', '.join(missing)}")
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known - {"format"}
        if unknown:
            raise ValueError(
                f"{source}: unknown field(s) {_shown(', '.join(sorted(map(str, unknown))))}"
                f" (a parameter file has format, {', '.join(known)})"
            )
        try:
            return cls(**{k: v for k, v in d.items() if k != "format"})
        except (TypeError, ValueError) as e:
            raise ValueError(f"{source}: {e}") from None

    @classmethod
    def load(cls, path: str | Path) -> PlogPParams:
        from ..platform.loader import read_bounded

        p = Path(path)
        return cls.loads(read_bounded(p, "parameter file", MAX_FILE_BYTES, ValueError), str(p))

    @classmethod
    def loads(cls, text: str, source: str = "params") -> PlogPParams:
        """Parse a parameter file's JSON text; ``source`` names it in error messages."""
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: malformed JSON at line {e.lineno}: {e.msg}") from None
        except RecursionError:
            raise ValueError(f"{source}: malformed JSON: nested too deeply") from None
        except ValueError as e:  # e.g. an integer of more digits than Python converts
            from ..platform.loader import parse_failure

            raise ValueError(f"{source}: malformed JSON: {parse_failure(e)}") from None
        return cls.from_dict(d, source)
