"""TCP retransmission-timeout settings, including the per-node random schemes of seed 000 §5.2.

Seed 000 (Oguchi et al.) §5.2 compares three ways of setting the minimum
(MIN) and maximum (MAX) TCP retransmission interval on every node; X is the
x-axis value of Fig. 4/5:

* ``"fixed"``: every node MAX = MIN = X;
* ``"random_min"``: MIN drawn uniformly in [X, X + 100 ms] per node,
  MAX = MIN + 100 ms;
* ``"random_both"``: MIN = MAX drawn uniformly in [X, X + 100 ms] per node
  (the node's RTO is then constant).

"ランダムな値を用いる方式では、MAX や MIN はノード毎に異なる値を取るが、
プログラムの実行中各ノードにおいてそれらの値は変化しない": the draws are per
node and fixed for the whole run -- exactly what a platform description holds.
§5.3 / Fig. 6 uses ``random_min`` with X = 250 ms.

Draws are deterministic: each host gets its own generator seeded from
SHA-256 of ``f"{seed}:{host_name}"``, so a host's values depend only on the
seed and its own name (adding or removing hosts does not change the others).
"""

from __future__ import annotations

import copy
import hashlib
import random
from typing import Any, Mapping

from .schema import PlatformError, tcp_spec, validate
from .units import parse_duration, shown

__all__ = ["RTO_SCHEMES", "apply_rto", "set_rto", "host_rng"]

#: Names accepted by ``apply_rto``.
RTO_SCHEMES = ("fixed", "random_min", "random_both")

#: Width of the random interval and MAX - MIN of ``random_min``: 100 ms (§5.2).
PAPER_SPREAD_S = 0.1


def host_rng(seed: Any, host_name: str) -> random.Random:
    """The per-host generator: ``random.Random`` seeded by SHA-256 of ``f"{seed}:{host_name}"``."""
    digest = hashlib.sha256(f"{seed}:{host_name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def _hosts_with_full_tcp(platform: Mapping[str, Any]) -> dict:
    p = copy.deepcopy(dict(platform))
    for h in p.get("hosts", []):
        h["tcp"] = tcp_spec(**(h.get("tcp") or {}))  # complete a partial or missing tcp table
    return p


def set_rto(
    platform: Mapping[str, Any],
    rto_min_s: Any = None,
    rto_max_s: Any = None,
    *,
    hosts: Any = None,
) -> dict:
    """A copy of ``platform`` with ``tcp.rto_min_s``/``rto_max_s`` set on every host.

    ``None`` leaves a bound unchanged; values may be duration strings
    (``"200ms"``). ``hosts`` restricts the change to those host names. Raises
    ``PlatformError`` if a host would end up with MAX < MIN.
    """
    lo = None if rto_min_s is None else parse_duration(rto_min_s, "rto_min_s")
    hi = None if rto_max_s is None else parse_duration(rto_max_s, "rto_max_s")
    p = _hosts_with_full_tcp(platform)
    wanted = None if hosts is None else set(hosts)
    if wanted is not None:
        known = {h["name"] for h in p.get("hosts", [])}
        missing = wanted - known
        if missing:
            raise PlatformError(f"set_rto: unknown host(s) {shown(', '.join(sorted(map(str, missing))))}")
    for h in p.get("hosts", []):
        if wanted is not None and h["name"] not in wanted:
            continue
        if lo is not None:
            h["tcp"]["rto_min_s"] = lo
        if hi is not None:
            h["tcp"]["rto_max_s"] = hi
    return validate(p)


def apply_rto(
    platform: Mapping[str, Any],
    scheme: str,
    x_s: Any,
    seed: Any = 0,
    *,
    spread_s: Any = PAPER_SPREAD_S,
) -> dict:
    """A copy of ``platform`` with every host's RTO bounds set by a seed 000 §5.2 scheme.

    ``scheme`` is one of ``RTO_SCHEMES``; ``x_s`` is X (seconds or a duration
    string); ``spread_s`` is the 100 ms of the paper (width of the uniform
    interval, and MAX - MIN for ``random_min``). ``rto_initial_s`` is left as
    it is: the simulator clamps RTO into [MIN, MAX] as Solaris does.
    """
    if scheme not in RTO_SCHEMES:
        raise PlatformError(f"apply_rto: unknown scheme {shown(scheme)} (expected one of {', '.join(RTO_SCHEMES)})")
    x = parse_duration(x_s, "apply_rto: x_s")
    if x <= 0:
        raise PlatformError(f"apply_rto: x_s must be positive, got {x}")
    spread = parse_duration(spread_s, "apply_rto: spread_s")
    p = _hosts_with_full_tcp(platform)
    for h in p.get("hosts", []):
        if scheme == "fixed":
            lo = hi = x
        else:
            draw = x + spread * host_rng(seed, h["name"]).random()
            lo, hi = (draw, draw + spread) if scheme == "random_min" else (draw, draw)
        h["tcp"]["rto_min_s"] = lo
        h["tcp"]["rto_max_s"] = hi
    return validate(p)
