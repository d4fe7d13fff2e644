"""The multicast delay/buffer model of seed 003 (Shimokuni, Koga & Jinzaki,
"A Reliable Multicast for Wide-Area Parallel and Distributed Systems").

What it computes
================

For a multicast tree (:mod:`parcomm.platform.mcast_tree`) in which the source and
some routers are **repair points** (they buffer packets and retransmit on a
timeout, §3), :func:`analyze` gives

* the expected **delivery delay** of a packet to every receiver, its mean and
  maximum over receivers (§4: "伝達遅延の期待値");
* the **retransmission buffer** each repair point needs, per point and for
  the whole system (§4 1.4).

Parameters come from the tree: a network's one-way medium delay T_i
(``delay_s``), loss rate E_i (``loss``) and bandwidth (``rate_bps``) (§4
"検討モデル"). Router processing delay is ignored ("ルータの処理遅延は …
無視できる程小さいので、考慮しない", §4), and so, by default, is the
transmission time of a packet (``serialization=True`` adds
``packet_bytes * 8 / rate_bps`` per network, for comparisons with the
packet-level simulator).

The paper's convention (found by reproducing the study-4 table)
================================================================

A repair point r and the next repair points or receivers below it (its
*frontier*) delimit a **stretch** of networks on each route. The paper
treats a stretch as a stop-and-wait loop: r sends, and if the packet is lost
anywhere on the stretch, r learns it by a timeout of one round trip and sends
again. With T the stretch's one-way delay and p = Π(1 - E_i) the chance that
one transmission crosses every network of it, the stretch costs

    expected rounds x round trip  =  (1 / p) x 2T,

and the **delay of a route is the sum of the costs of its stretches**.
This reproduces every printed digit of the study-4 delays (8 networks,
T = 3, 30 x 6, 3 ms; E = 5, 0.2 x 6, 5 %):

    A (no repair)            2 x 186 ms / (0.95^2 x 0.998^6)        = 417.17 ms  (paper 417)
    B (backbone ends r1, r7) 6/.95 + 360/.998^6 + 6/.95             = 376.98 ms  (377)
    C (every third, r1 r4 r7)                                        = 374.80 ms  (375)
    D (every other, r1 r3 r5 r7)                                     = 374.08 ms  (374)
    E (every router)         6/.95 + 6 x 60/.998 + 6/.95             = 373.35 ms  (373)

So "delay" here is the time until the packet is *reliably* delivered and
acknowledged over each stretch in turn — the paper's "パケットがすべての受信者に
確実に受信されるのに必要な時間" — including the last acknowledgement's
return. It is not the time of first arrival: with A the first copy arrives
after 186 ms and each loss adds a timeout of 372 ms, 231 ms on average. Both
are reported: ``delay_s`` (the paper's) and ``arrival_s``, the expected first
arrival at the receiver, what a simulator measures there: per stretch
``T + (1/p - 1) x timeout`` with the timeout one round trip of the stretch.
In the "route" convention the two differ by exactly the route's loss-free
one-way delay (per stretch 2T/p = [T + (1/p - 1) 2T] + T), whatever the
placement, so they rank placements identically: study 4's arrivals are
231.17 / 190.98 / 188.80 / 188.08 / 187.35 ms.

**Buffers** (§4 1.4): a repair point holds every packet until all of its
frontier has acknowledged it, so it needs B x RTT, with RTT the round trip
to the *farthest* member of its frontier (its timeout) and B the stream's
rate. The paper takes B = 622 Mbit/s, "the system's bandwidth cannot exceed
the smallest bandwidth on the route" (N1, N8 are 1 Gbit/s, the backbone 622
Mbit/s); here B defaults to the smallest ``rate_bps`` in the tree. One
**MByte is 10^6 bytes** (B x 372 ms = 28.923e6 bytes, printed 28.9). The
source counts as a repair point (in row A its buffer is the 28.9 MB of both
columns, "per device maximum" included). In study 4's binary tree of 128
receivers (level l holds 2^(l-1) routers) this gives

    A 28.92 / 28.92   B 58.31 / 27.99   C 156.28 / 14.00   D 226.25 / 9.33   E 324.22 / 4.67 MB

(system / per-device maximum; paper 28.9/28.9, 58.3/28.0, 156.2/14.0,
226.3/9.33, 324.2/4.67). An exhaustive search over all 2^7 placements of
repair levels shows r1-r4-r7 and r1-r3-r5-r7 are the only ones matching C's
and D's per-device maxima and system totals, which fixes the paper's "2段おき"
and "1段おき".

Ambiguities resolved, with reasons
----------------------------------

* **Printed last digits.** C's system buffer is 156.28 MB (paper 156.2) and
  D's ratio to A is 0.8967 (paper 0.896), while D's buffer 226.25 is printed
  226.3 and B's ratio 0.90367 is printed 0.904: no single rounding rule (nor
  MiB, nor another placement, see above) reproduces every last digit, so the
  paper's last digits carry a small inconsistency; every value is within the
  stated precision (±1 ms, ±0.1 MB, ±0.001).
* **Route versus tree (convention "route", the default).** Study 4 computes
  the delay on one route of 8 networks ("配布元、受信者間に 8 つのネットワーク
  を介する場合") and brings in the binary tree only for the buffers
  ("このモデルでバッファ量についても考察する。ここで仮にこのネットワークが
  2 分木状に構成されているとする"). So a receiver's delay depends only on
  the networks of its own route, and the tree's branching does not slow it;
  that is how the table comes out of the 128-receiver tree.
* **Branching (convention "fanout", study 5).** Study 5 (§4 1.5, Fig. 10)
  puts n links below β and says "分岐点では接続しているリンクが増えるに従って
  エラー率が高くなる": the n links act as one network whose loss is
  1 - (1-E)^n, i.e. a transmission succeeds only if *every* network of the
  stretch delivers it. Convention "fanout" applies this to a whole repair
  domain: p = Π(1 - E) over every network between r and its frontier, round
  trip = r's timeout (the farthest member), cost 2T/p for every receiver
  below. On a route "fanout" equals "route". It penalizes wide domains
  heavily (one all-or-nothing round over hundreds of networks), so it is the
  paper's study-5 device, not a model of large trees.
* **Exact completion (convention "coverage").** What "fanout" approximates:
  r multicasts a round every timeout until every member of its frontier has
  the packet at least once, losses independent per network and round; the
  expected number of rounds is E[R] = Σ_k P(R > k), computed exactly on the
  domain's subtree (:func:`coverage_rounds`). Cost per domain: timeout x E[R].
  E[R] <= 1/p of "fanout", with equality on a route.

In every convention the per-receiver delay is additive over the repair
points on its route, as in the paper; ``arrival_s`` uses the receiver's own
route for the loss and the convention's timeout (the stretch's round trip for
"route", the domain's farthest round trip otherwise).

Use
===

>>> from parcomm.platform.mcast_tree import binary_tree
>>> r = analyze(binary_tree(128, repair_at=[1, 7]))
>>> round(r.mean_delay_s * 1e3), round(r.buffer_total_bytes / 1e6, 1)
(377, 58.3)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..platform.mcast_tree import Tree, path_tree, validate, with_repair

__all__ = [
    "CONVENTIONS",
    "RepairPoint",
    "ReceiverDelay",
    "MulticastResult",
    "analyze",
    "route_delay",
    "stretch_cost",
    "coverage_rounds",
]

CONVENTIONS = ("route", "fanout", "coverage")


def stretch_cost(delays_s: Iterable[float], losses: Iterable[float]) -> float:
    """The paper's cost of one stretch: round trip / P(one transmission crosses
    it) = 2 ΣT_i / Π(1 - E_i) (§4; see the module docstring)."""
    d = 0.0
    p = 1.0
    for t, e in zip(delays_s, losses, strict=True):
        d += t
        p *= 1.0 - e
    return 2.0 * d / p


@dataclass
class RepairPoint:
    """One repair point (the source or a repair router) and its domain."""

    node: str
    rtt_s: float  # round trip to the farthest frontier member: timeout and buffer RTT
    buffer_bytes: float  # rate/8 x rtt_s (§4 1.4)
    frontier: int  # next repair routers and receivers below
    networks: int  # networks between the point and its frontier
    receivers: int  # receivers whose routes pass through (or end in) this domain
    success: float  # P(one transmission crosses every network of the domain)
    rounds: float  # expected rounds to complete the domain: 1/success, or E[R] for "coverage"


@dataclass
class ReceiverDelay:
    receiver: str
    delay_s: float  # the paper's expected delay (sum of stretch costs)
    arrival_s: float  # expected time of the first arrival at the receiver
    oneway_s: float  # loss-free one-way delay from the source
    repair_points: list[str]  # on the route, source first


@dataclass
class MulticastResult:
    tree: str
    convention: str
    rate_bps: float
    repair_points: list[RepairPoint]
    receivers: list[ReceiverDelay]
    mean_delay_s: float = field(init=False)
    max_delay_s: float = field(init=False)
    mean_arrival_s: float = field(init=False)
    max_arrival_s: float = field(init=False)
    buffer_total_bytes: float = field(init=False)
    buffer_max_bytes: float = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.receivers)
        self.mean_delay_s = sum(r.delay_s for r in self.receivers) / n
        self.max_delay_s = max(r.delay_s for r in self.receivers)
        self.mean_arrival_s = sum(r.arrival_s for r in self.receivers) / n
        self.max_arrival_s = max(r.arrival_s for r in self.receivers)
        self.buffer_total_bytes = sum(p.buffer_bytes for p in self.repair_points)
        self.buffer_max_bytes = max(p.buffer_bytes for p in self.repair_points)

    @property
    def repair_routers(self) -> list[str]:
        return [p.node for p in self.repair_points[1:]]

    def receiver(self, name: str) -> ReceiverDelay:
        for r in self.receivers:
            if r.receiver == name:
                return r
        raise KeyError(name)

    def summary(self) -> dict[str, Any]:
        """The system-wide numbers (no per-receiver or per-router lists)."""
        return {
            "tree": self.tree,
            "convention": self.convention,
            "rate_bps": self.rate_bps,
            "receivers": len(self.receivers),
            "repair_routers": len(self.repair_points) - 1,
            "mean_delay_s": self.mean_delay_s,
            "max_delay_s": self.max_delay_s,
            "mean_arrival_s": self.mean_arrival_s,
            "max_arrival_s": self.max_arrival_s,
            "buffer_total_bytes": self.buffer_total_bytes,
            "buffer_max_bytes": self.buffer_max_bytes,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "repair_points": [asdict(p) for p in self.repair_points],
            "receiver_delays": [asdict(r) for r in self.receivers],
        }


def analyze(
    tree: Tree | Mapping,
    *,
    convention: str = "route",
    repair: Iterable[str] | None = None,
    rate_bps: float | None = None,
    serialization: bool = False,
) -> MulticastResult:
    """Expected delays and retransmission buffers for ``tree``.

    ``repair`` overrides the routers' repair flags (names of the routers that
    repair); ``rate_bps`` the stream rate B (default: the smallest network
    rate, §4 1.4); ``convention`` is "route" (default; studies 1-4),
    "fanout" (study 5) or "coverage" (exact completion), see the module
    docstring.
    """
    t, rate = _inputs(tree, convention, repair, rate_bps)
    is_point = {v: v == t.source or (t.nodes[v].kind == "router" and t.nodes[v].repair) for v in t.order}
    depth, logp, anchor = _from_source(t, is_point, serialization)
    points = [v for v in t.order if is_point[v]]
    far, nets, logp_dom, front = _domains(t, points, is_point, depth, anchor)
    below = _receivers_below(t)
    rounds = _domain_rounds(t, convention, points, is_point, logp_dom)
    recs = _receiver_delays(t, convention, is_point, depth, logp, anchor, far, rounds)
    rps = [
        RepairPoint(
            node=r,
            rtt_s=2.0 * far[r],
            buffer_bytes=rate / 8.0 * 2.0 * far[r],
            frontier=front[r],
            networks=nets[r],
            receivers=below[r],
            success=math.exp(logp_dom[r]),
            rounds=rounds[r],
        )
        for r in points
    ]
    return MulticastResult(t.name, convention, rate, rps, recs)


def _inputs(
    tree: Tree | Mapping, convention: str, repair: Iterable[str] | None, rate_bps: float | None
) -> tuple[Tree, float]:
    """:func:`analyze`'s arguments checked: the validated tree with the chosen repair routers,
    and the stream rate B (by default the smallest network rate, §4 1.4)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention = {convention!r}: must be one of {', '.join(CONVENTIONS)}")
    t = validate(tree)
    if repair is not None:
        t = with_repair(t, repair)
    if rate_bps is None:
        rate = min(e.rate_bps for e in t.networks.values())
    else:
        rate = float(rate_bps)
        if not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f"rate_bps = {rate_bps!r}: must be a positive number")
    return t, rate


def _from_source(
    t: Tree, is_point: Mapping[str, bool], serialization: bool
) -> tuple[dict[str, float], dict[str, float], dict[str, str]]:
    """Per node: the cumulative one-way delay from the source, the log of the chance that one
    transmission from the source reaches it, and its anchor, the nearest repair point strictly
    above (one preorder pass, a parent before its children)."""
    src = t.source
    depth = {src: 0.0}
    logp = {src: 0.0}
    anchor: dict[str, str] = {}
    for v in t.order[1:]:
        e = t.parent_net[v]
        hop = e.delay_s + (t.packet_bytes * 8 / e.rate_bps if serialization else 0.0)
        depth[v] = depth[e.parent] + hop
        logp[v] = logp[e.parent] + math.log1p(-e.loss)
        anchor[v] = e.parent if is_point[e.parent] else anchor[e.parent]
    return depth, logp, anchor


def _domains(
    t: Tree, points: list[str], is_point: Mapping[str, bool], depth: Mapping[str, float], anchor: Mapping[str, str]
) -> tuple[dict[str, float], dict[str, int], dict[str, float], dict[str, int]]:
    """Per repair point, over its domain (the networks down to its frontier): the one-way delay
    to the farthest frontier member, the number of networks, the log of the chance that one
    transmission crosses all of them, and the size of the frontier."""
    far = {r: 0.0 for r in points}
    nets = {r: 0 for r in points}
    logp_dom = {r: 0.0 for r in points}
    front = {r: 0 for r in points}
    for v in t.order[1:]:
        a = anchor[v]
        nets[a] += 1
        logp_dom[a] += math.log1p(-t.parent_net[v].loss)
        if is_point[v] or t.nodes[v].kind == "receiver":
            front[a] += 1
            far[a] = max(far[a], depth[v] - depth[a])
    return far, nets, logp_dom, front


def _domain_rounds(
    t: Tree, convention: str, points: list[str], is_point: Mapping[str, bool], logp_dom: Mapping[str, float]
) -> dict[str, float]:
    """Per repair point, the expected rounds to complete its domain: 1 / P(one transmission
    crosses every network of it), or the exact E[R] in the "coverage" convention."""
    rounds: dict[str, float] = {}
    for r in points:
        if convention == "coverage":
            rounds[r] = coverage_rounds(t, r, is_point)
        else:
            rounds[r] = math.exp(-logp_dom[r])
    return rounds


def _receivers_below(t: Tree) -> dict[str, int]:
    """Per node, the receivers in its subtree (itself included), children before parents."""
    below = {v: 0 for v in t.order}
    for v in reversed(t.order):
        if t.nodes[v].kind == "receiver":
            below[v] = 1
        if v != t.source:
            below[t.parent_net[v].parent] += below[v]
    return below


def _receiver_delays(
    t: Tree,
    convention: str,
    is_point: Mapping[str, bool],
    depth: Mapping[str, float],
    logp: Mapping[str, float],
    anchor: Mapping[str, str],
    far: Mapping[str, float],
    rounds: Mapping[str, float],
) -> list[ReceiverDelay]:
    """Each receiver's delay and first arrival, accumulated stretch by stretch along its route:
    D and A of every repair point and receiver are its anchor's plus the stretch's cost."""
    src = t.source
    D = {src: 0.0}
    A = {src: 0.0}
    chain = {src: [src]}
    recs = []
    for v in t.order[1:]:
        if not (is_point[v] or t.nodes[v].kind == "receiver"):
            continue
        a = anchor[v]
        d = depth[v] - depth[a]
        p = math.exp(logp[v] - logp[a])
        if convention == "route":
            cost = 2.0 * d / p
            timeout = 2.0 * d
        else:
            timeout = 2.0 * far[a]
            cost = timeout * rounds[a]
        D[v] = D[a] + cost
        A[v] = A[a] + d + (1.0 / p - 1.0) * timeout
        chain[v] = chain[a] + [v] if is_point[v] else chain[a]
        if t.nodes[v].kind == "receiver":
            recs.append(ReceiverDelay(v, D[v], A[v], depth[v], list(chain[a])))
    return recs


def route_delay(
    segments: Sequence[tuple[float, float] | tuple[float, float, float]],
    repair_at: Iterable[int] = (),
) -> float:
    """The paper's expected delay (seconds) of a route of networks
    ``(delay_s, loss[, rate_bps])`` with repair routers at the given
    junctions (1-based: α = 1, β = 2), as in studies 1-4."""
    segs = [(s[0], s[1], s[2] if len(s) > 2 else 1e9) for s in segments]
    return analyze(path_tree(segs, repair_at)).receivers[0].delay_s


# ---------------------------------------------------------------- coverage

_LOGFACT: list[float] = [0.0]


def _log_binom_table(K: int):
    import numpy as np

    while len(_LOGFACT) <= K:
        _LOGFACT.append(_LOGFACT[-1] + math.log(len(_LOGFACT)))
    lf = np.array(_LOGFACT[: K + 1])
    m = np.arange(K + 1)
    lc = lf[:, None] - lf[None, :] - lf[np.maximum(m[:, None] - m[None, :], 0)]
    mask = m[None, :] <= m[:, None]
    return np.where(mask, lc, -np.inf), m


def _transmit(g, pi: float, table) -> Any:
    """h(m) = Σ_j Binom(m, j; pi) g(j): the chance that everything below a
    network is covered when its parent had the packet in m rounds."""
    import numpy as np

    if pi >= 1.0:
        return g
    lc, m = table
    jj = m[None, :]
    mm = m[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        lw = lc + jj * math.log(pi) + (mm - jj) * math.log1p(-pi)
    w = np.exp(lw)
    return w @ g


def coverage_rounds(tree: Tree | Mapping, root: str, is_point: Mapping[str, bool] | None = None) -> float:
    """E[R]: expected number of rounds until every frontier member of the
    repair domain rooted at ``root`` has received a packet that ``root``
    multicasts to the whole domain once per round, each network losing each
    copy independently with its ``loss`` ("coverage" convention)."""
    import numpy as np

    t = validate(tree)
    if is_point is None:
        is_point = {v: v == t.source or (t.nodes[v].kind == "router" and t.nodes[v].repair) for v in t.order}
    # The domain's nodes in preorder.
    dom = [root]
    stack = [root]
    while stack:
        v = stack.pop()
        for e in t.child_nets[v]:
            c = e.child
            dom.append(c)
            if not (is_point[c] or t.nodes[c].kind == "receiver"):
                stack.append(c)
    K = 32
    while True:
        table = _log_binom_table(K)
        g: dict[str, Any] = {}
        leaf = (np.arange(K + 1) >= 1).astype(float)
        for v in reversed(dom):
            if v != root and (is_point[v] or t.nodes[v].kind == "receiver"):
                g[v] = leaf
                continue
            acc = np.ones(K + 1)
            for e in t.child_nets[v]:
                acc = acc * _transmit(g.pop(e.child), 1.0 - e.loss, table)
            g[v] = acc
        tail = 1.0 - g[root]
        if tail[K] < 1e-13:
            return float(np.sum(tail[:K]))
        if K >= 8192:
            raise ValueError(f"coverage rounds below {root!r} do not converge within {K} rounds (loss too high)")
        K *= 2
