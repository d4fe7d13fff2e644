"""Object-storage and network model of the simulated driver (:mod:`.sim`).

A :class:`Profile` says how fast storage and the nodes' network are. Every
parameter cites where its value comes from: a section of seed 004 (Chiba et
al., "Dynamic optimization for large data broadcast on clouds") or a stated
assumption. Rates in files are in MB/s (10^6 bytes per second, as the paper
reports); :class:`Profile` holds bytes per second.

Storage. Each GET runs at a *per-request throughput* drawn from a mixture
of uniform modes. The default profile ``chiba2010`` is the bimodal
distribution of Fig. 1/3 (§3.3.1: for a 100 MB object "about 60 % of trials
at 6 MB/s or less, about 30 % at 8 MB/s or more"; §3.3.2: the slowest of 8
nodes at ~4 MB/s, the fastest above 10 MB/s; §3.3.3: 20-30 % fast, 60-70 %
slow, whatever the node count). A storage connection keeps its drawn rate
for ``rate_hold_s`` and draws again at the first GET after that: the paper
sees the split sharpen as objects grow (Fig. 1), so a rate persists over a
whole 1 GB download, and changes between trials minutes apart (Fig. 4).
``aggregate_mb_s`` caps all GETs together (none by default: §3.3.2/Fig. 5
found the sum still growing linearly at 32 nodes).

Network. Each node has NIC rates up and down; a node-to-node flow is further
capped at ``peer_mb_s`` times a factor drawn uniformly from
``peer_variation`` per ordered pair and per ``peer_period_s`` window (§2.4.2:
co-located VMs and re-routing change node-to-node bandwidth; the paper gives
no numbers, so the range is an assumption). Small messages take
``message_latency_s``.

Profiles load by name (:data:`PROFILES`) or from a TOML/JSON file whose keys
are the field names below; unknown or ill-typed fields raise
:class:`ProfileError` naming the field.
"""

from __future__ import annotations

import json
import math
import random
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...platform.loader import parse_failure, read_bounded
from ...platform.units import shown

MB = 1e6
#: A profile is a dozen numbers: 1 MiB is far more than any needs.
MAX_FILE_BYTES = 1 << 20


class ProfileError(ValueError):
    """A profile name, file or field is wrong; the message names it."""


@dataclass(frozen=True)
class RateMode:
    """With probability ``weight`` a GET runs at uniform(low, high) bytes/s."""

    weight: float
    low: float
    high: float


@dataclass(frozen=True)
class Profile:
    name: str
    modes: tuple[RateMode, ...]
    rate_hold_s: float
    request_latency_s: float
    aggregate: float | None  # bytes/s over all GETs; None: unlimited
    nic_up: float
    nic_down: float
    peer_rate: float
    peer_variation: tuple[float, float]
    peer_period_s: float
    message_latency_s: float

    def draw_request_rate(self, rng: random.Random) -> float:
        """Throughput of one GET (bytes/s)."""
        pick = rng.random() * sum(m.weight for m in self.modes)
        for mode in self.modes:
            pick -= mode.weight
            if pick <= 0:
                break
        return rng.uniform(mode.low, mode.high)

    def peer_factor(self, seed: int, src: int, dst: int, now: float) -> float:
        """Capacity factor of flow src -> dst at time ``now`` (deterministic)."""
        lo, hi = self.peer_variation
        if lo == hi:
            return lo
        window = int(now // self.peer_period_s)
        return lo + (hi - lo) * _unit_hash(seed, src, dst, window)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "modes": [{"weight": m.weight, "low_mb_s": m.low / MB, "high_mb_s": m.high / MB} for m in self.modes],
            "rate_hold_s": self.rate_hold_s,
            "request_latency_s": self.request_latency_s,
            "nic_up_mb_s": self.nic_up / MB,
            "nic_down_mb_s": self.nic_down / MB,
            "peer_mb_s": self.peer_rate / MB,
            "peer_variation": list(self.peer_variation),
            "peer_period_s": self.peer_period_s,
            "message_latency_s": self.message_latency_s,
        }
        if self.aggregate is not None:
            d["aggregate_mb_s"] = self.aggregate / MB
        return d


def _unit_hash(*keys: int) -> float:
    """splitmix64 over the keys, mapped to [0, 1)."""
    x = 0x9E3779B97F4A7C15
    for k in keys:
        x = (x ^ (k & 0xFFFFFFFFFFFFFFFF)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 31
    return (x >> 11) / float(1 << 53)


# Field -> (default, meaning/source). Every profile starts from these.
CHIBA2010: dict[str, Any] = {
    "name": "chiba2010",
    # §3.3.1 Fig. 1 (100 MB: ~60 % <= 6 MB/s, ~30 % >= 8 MB/s), §3.3.2 Fig. 2
    # (slowest ~4 MB/s, fastest > 10 MB/s); mean 6.4 MB/s, cf. Fig. 4's
    # ~50 MB/s summed over 8 nodes.
    "modes": [
        {"weight": 0.6, "low_mb_s": 3.5, "high_mb_s": 6.0},
        {"weight": 0.1, "low_mb_s": 6.0, "high_mb_s": 8.0},
        {"weight": 0.3, "low_mb_s": 8.0, "high_mb_s": 11.0},
    ],
    # Assumption from Fig. 1/3/4: a rate lasts a whole download (20-200 s), not longer than a trial.
    "rate_hold_s": 60.0,
    # Assumption: first-byte latency of an S3 GET in the same region, tens of ms (not in the paper).
    "request_latency_s": 0.05,
    # §3.3.2 Fig. 5: no aggregate limit seen up to 32 nodes. Set one in a file to study it.
    # "aggregate_mb_s": absent -> unlimited
    # Assumption: 2010 EC2 small instances, "moderate" I/O, ~250 Mbit/s each way.
    "nic_up_mb_s": 30.0,
    "nic_down_mb_s": 30.0,
    # Assumption: one TCP flow between two nodes can fill the NIC; §2.4.2 motivates the variation.
    "peer_mb_s": 30.0,
    "peer_variation": [0.5, 1.0],
    "peer_period_s": 10.0,
    # Assumption: intra-datacenter one-way latency.
    "message_latency_s": 0.0005,
}

PROFILES: dict[str, dict[str, Any]] = {
    "chiba2010": CHIBA2010,
    # Every GET at 8 MB/s, no network variation: a baseline without the
    # bimodality, for comparisons and tests.
    "steady": {
        **CHIBA2010,
        "name": "steady",
        "modes": [{"weight": 1.0, "low_mb_s": 8.0, "high_mb_s": 8.0}],
        "peer_variation": [1.0, 1.0],
    },
}
DEFAULT_PROFILE = "chiba2010"

_NUMBERS = (
    "rate_hold_s",
    "request_latency_s",
    "nic_up_mb_s",
    "nic_down_mb_s",
    "peer_mb_s",
    "peer_period_s",
    "message_latency_s",
    "aggregate_mb_s",
)
_FIELDS = {"name", "modes", "peer_variation", *_NUMBERS}


#: Bounds of every number, so a simulation stays finite and terminates: rates from 1 B/s to
#: 1 PB/s, durations up to ~30 years, weights up to a million to one.
_RATE_MB_S = (1e-6, 1e9)
_SECONDS = 1e9
_MAX_WEIGHT = 1e6
_MAX_MODES = 1000


def _limits(key: str) -> tuple[float, float, bool]:
    """(low, high, low allowed) for a field or a mode's field."""
    if key.endswith("_mb_s"):
        return _RATE_MB_S[0], _RATE_MB_S[1], True
    if key in ("request_latency_s", "message_latency_s"):
        return 0.0, _SECONDS, True
    if key.endswith("_s"):
        return 0.0, _SECONDS, False
    if key.endswith("weight"):
        return 0.0, _MAX_WEIGHT, False
    return 0.0, 1.0, False  # peer_variation's factors


def _number(where: str, value: Any) -> float:
    """``value`` as a finite float within the field's bounds (the field is the last part of ``where``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where} must be a number, got {shown(value)}")
    low, high, low_ok = _limits(where.rsplit(".", 1)[-1].split("[", 1)[0])
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not (low <= number <= high) or (number == low and not low_ok):
        interval = f"{'[' if low_ok else '('}{low:g}, {high:g}]"
        raise ProfileError(f"{where} must be in {interval}, got {shown(value)}")
    return number


def profile_from_dict(data: dict[str, Any], base: str = DEFAULT_PROFILE) -> Profile:
    """Profile from ``base``'s fields overridden by ``data`` (validated)."""
    if not isinstance(data, dict):
        raise ProfileError(f"a profile must be a table/object, got {type(data).__name__}")
    unknown = sorted(map(str, set(data) - _FIELDS))
    if unknown:
        raise ProfileError(f"unknown profile field {shown(unknown[0])} (known: {', '.join(sorted(_FIELDS))})")
    merged = {**PROFILES[base], **data}
    if not isinstance(merged["name"], str) or not merged["name"].isprintable() or len(merged["name"]) > 200:
        raise ProfileError(f"name must be a line of at most 200 characters, got {shown(merged['name'])}")
    for key in _NUMBERS:
        if key in merged:
            merged[key] = _number(key, merged[key])
    modes = merged["modes"]
    if not isinstance(modes, list) or not 1 <= len(modes) <= _MAX_MODES:
        raise ProfileError(f"modes must be a list of 1 to {_MAX_MODES} {{weight, low_mb_s, high_mb_s}}")
    parsed = []
    for i, mode in enumerate(modes):
        where = f"modes[{i}]"
        if not isinstance(mode, dict) or set(mode) != {"weight", "low_mb_s", "high_mb_s"}:
            raise ProfileError(f"{where} must have exactly weight, low_mb_s, high_mb_s; got {shown(mode)}")
        low, high = _number(f"{where}.low_mb_s", mode["low_mb_s"]), _number(f"{where}.high_mb_s", mode["high_mb_s"])
        if high < low:
            raise ProfileError(f"{where}.high_mb_s ({high}) is below low_mb_s ({low})")
        parsed.append(RateMode(_number(f"{where}.weight", mode["weight"]), low * MB, high * MB))
    variation = merged["peer_variation"]
    if not isinstance(variation, (list, tuple)) or len(variation) != 2:
        raise ProfileError(f"peer_variation must be [low, high], got {shown(variation)}")
    lo, hi = (_number(f"peer_variation[{i}]", v) for i, v in enumerate(variation))
    if not lo <= hi <= 1.0:
        raise ProfileError(f"peer_variation must satisfy 0 < low <= high <= 1, got {shown(variation)}")
    aggregate = merged.get("aggregate_mb_s")
    return Profile(
        name=merged["name"],
        modes=tuple(parsed),
        rate_hold_s=float(merged["rate_hold_s"]),
        request_latency_s=float(merged["request_latency_s"]),
        aggregate=None if aggregate is None else float(aggregate) * MB,
        nic_up=float(merged["nic_up_mb_s"]) * MB,
        nic_down=float(merged["nic_down_mb_s"]) * MB,
        peer_rate=float(merged["peer_mb_s"]) * MB,
        peer_variation=(lo, hi),
        peer_period_s=float(merged["peer_period_s"]),
        message_latency_s=float(merged["message_latency_s"]),
    )


def load_profile(spec: "str | Path | Profile | dict | None" = None) -> Profile:
    """A profile by name, from a ``.toml``/``.json`` file, or from a dict."""
    if spec is None:
        spec = DEFAULT_PROFILE
    if isinstance(spec, Profile):
        return spec
    if isinstance(spec, dict):
        return profile_from_dict(spec)
    if isinstance(spec, str) and spec in PROFILES:
        return profile_from_dict({}, base=spec)
    path = Path(spec)
    if not path.is_file():
        raise ProfileError(f"unknown profile {shown(str(spec))}: not one of {', '.join(PROFILES)} nor a file")
    text = read_bounded(path, "profile file", MAX_FILE_BYTES, ProfileError)
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise ProfileError(f"{path}: invalid {'JSON' if path.suffix == '.json' else 'TOML'}: {err}") from None
    except RecursionError:
        raise ProfileError(f"{path}: nested too deeply") from None
    except ValueError as err:  # an integer of more digits than Python converts
        raise ProfileError(f"{path}: {parse_failure(err)}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile must be a table/object, got {type(data).__name__}")
    data.setdefault("name", path.stem)
    try:
        return profile_from_dict(data)
    except ProfileError as err:
        raise ProfileError(f"{path}: {err}") from None
