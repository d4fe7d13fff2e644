"""Packet-level simulation of reliable multicast over a tree (seed 003,
Shimokuni, Koga & Jinzaki), run by the Rust core (``crates/parcomm-core/src/mcast``).

What is simulated
=================

* **Comet RM** (§2.2): the source multicasts packets ``0 .. packets-1`` down
  the tree, paced at ``rate_pps`` (or ``rate_bps``) and held back by an
  ACK-based sliding window of ``window`` packets. Routers keep no buffer and
  no timer: they remember how far each child has received, forward a packet
  only to the children that lack it (so a retransmission reaches only the
  subtrees that need it) and send an ACK for packet *s* upstream only once
  every child has acknowledged *s*. Only the source retransmits, when a
  packet's timer expires (the paper detects loss by timeout; no NAKs).
* **Repair routers** (§3): a router with ``repair = true`` keeps each packet
  until all its children hold it, acknowledges it upstream as soon as it
  holds it, and retransmits into its subtree on its own per-packet timers.
  ``repair="tree"`` uses the tree's flags, ``"none"`` gives Comet RM and
  ``"all"`` makes every router repair.
* **Networks**: each direction is a FIFO served at ``rate_bps`` followed by
  the one-way ``delay_s``; every packet is lost independently with
  probability ``loss`` (seeded per network direction, from ``seed`` and the
  network's name). ACKs cross the reverse direction and are lost too only
  with ``ack_loss=True`` (the analytic model assumes they are not).
* **Timeouts**: a repair point (the source or a repair router) retransmits a
  packet to the children still lacking it ``rto_factor`` x the lossless round
  trip (data down, ACK up, serialization included) to its farthest next
  repair point or receiver after sending it; ``rto_s`` fixes the timeout
  instead. ACKs arriving at the very instant of the deadline count. There
  is no backoff and no congestion control (as in the paper): a stream faster
  than a subtree's bottleneck, or a timeout shorter than the queueing delay,
  makes retransmissions pile up; the run then stops with ``stopped`` saying
  so once a network queues ``queue_limit_packets``.
* **Pacing**: one new packet every ``1 / rate_pps`` seconds (rounded to the
  nanosecond), later if the window is closed; no rate means back to back.

ACKs carry the cumulative point and the packet they answer (the paper's
ACK carries the cumulative point and a window; the packet number is what
lets routers aggregate "ACK for *s*" and retransmit only what is missing).

Results
=======

:func:`simulate` returns a :class:`McastSimResult`: the per-packet delay to
all receivers (first transmission at the source until the *last* receiver
has the packet; ``delay`` holds mean and nearest-rank p50/p95/p99 and max),
per-receiver mean delays, per-buffer (source and routers) retransmission
buffer occupancy (peak and time-mean over the run, packets and bytes, with
timeouts and retransmitted copies), per-network counts (data sent,
retransmitted, lost, redundant; ACKs sent, lost), events processed and wall
time. ``release`` summarizes, per packet, the time until the source released
it (every child of the source acknowledged it): under Comet RM that is the
round trip to every receiver and back, which is how the paper's study-4
delay for Comet RM comes out (A: 417 ms = 372 ms / P(no loss on the route)).

    >>> from parcomm.platform import mcast_tree as tree
    >>> from parcomm.apps.mcast import sim
    >>> t = tree.path_tree(tree.STUDY4_SEGMENTS)
    >>> r = sim.simulate(t, packets=2000, rate_pps=1000, repair="all", seed=1)
    >>> r.delay["mean_s"], r.buffer("r1")["peak_bytes"]      # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import _core
from ...platform import mcast_tree as _tree

__all__ = ["McastSimResult", "simulate", "DEFAULTS"]

#: The run parameters and their defaults (the core's, repeated for reference).
DEFAULTS: dict[str, Any] = {
    "packets": 1000,
    "rate_pps": None,  # packets/s; at most one of rate_pps, rate_bps; neither = unpaced
    "rate_bps": None,  # bits/s of data packets (packet_bytes * 8 bits each)
    "window": 1024,  # packets
    "ack_loss": False,
    "ack_bytes": 40,
    "rto_factor": 1.0,
    "rto_s": None,
    "repair": "tree",  # "tree" | "none" | "all"
    "seed": 0,
    "time_limit_s": None,
    "queue_limit_packets": 1_000_000,  # stop (stopped=...) if retransmissions queue more on a network
}


@dataclass(frozen=True)
class McastSimResult:
    """One simulation run, as plain data. Tables are dicts of equal-length columns."""

    complete: bool
    """Every packet reached every receiver (False only if a limit stopped the run)."""
    stopped: str
    """Empty if the run went to its end; else which limit stopped it and why
    (``time_limit_s: ...`` or ``queue_limit_packets: ...``: retransmissions
    outran a link, e.g. a timeout shorter than the queueing delay)."""
    packets: int
    delivered: int
    delay: dict[str, float]
    """``count, mean_s, p50_s, p95_s, p99_s, max_s`` of the per-packet delay to all receivers."""
    release: dict[str, float]
    """The same for the time from first transmission until the source released the
    packet (every child of the source acknowledged it; under Comet RM, every receiver)."""
    packet: dict[str, list[float]]
    """Per packet: ``first_tx_s``, ``delay_s`` (NaN if some receiver never got it)
    and ``release_s`` (NaN if never released)."""
    receivers: dict[str, list]
    """``name, mean_delay_s, received, duplicates``."""
    buffers: dict[str, list]
    """Source and routers: ``name, kind, repair, rto_s, peak_packets, peak_bytes,
    mean_packets, mean_bytes, timeouts, retransmissions`` (plain routers hold nothing)."""
    networks: dict[str, list]
    """``name, parent, child, data_sent, data_retransmitted, data_lost, data_redundant,
    acks_sent, acks_lost``; ``data_redundant`` counts copies that reached a child that
    already held the packet (for a plain router: whose children all did), e.g. after
    a spurious timeout."""
    end_time_s: float
    """When the last buffer drained (every packet delivered and acknowledged to
    every repair point), or when ``time_limit_s`` stopped the run; buffer
    time-means are over [0, end_time_s]."""
    events: int
    """Discrete events the core handled (arrivals at the end of a network, source ticks, timer expiries)."""
    wall_s: float
    """Wall-clock time of the core's run (the only field that differs between identical runs)."""
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_delay_s(self) -> float:
        return self.delay["mean_s"]

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s > 0 else float("inf")

    @property
    def retransmissions(self) -> dict[str, int]:
        """Retransmitted data copies per network."""
        return dict(zip(self.networks["name"], self.networks["data_retransmitted"]))

    def buffer(self, name: str) -> dict[str, Any]:
        """The buffer row of the source or router ``name``."""
        return _row(self.buffers, name, "source or router")

    def network(self, name: str) -> dict[str, Any]:
        return _row(self.networks, name, "network")

    def receiver(self, name: str) -> dict[str, Any]:
        return _row(self.receivers, name, "receiver")


def _row(table: Mapping[str, list], name: str, what: str) -> dict[str, Any]:
    try:
        i = table["name"].index(name)
    except ValueError:
        raise KeyError(f"no {what} named {name!r}") from None
    return {k: v[i] for k, v in table.items()}


def _tree_dict(tree: Any) -> dict:
    """A validated plain-dict tree from a Tree, a dict, or a JSON/TOML file path."""
    t = _tree.load(tree) if isinstance(tree, (str, Path)) else _tree.validate(tree)
    return _tree.to_dict(t)


def _params(params: Mapping[str, Any] | None, overrides: Mapping[str, Any]) -> dict[str, Any]:
    p = {**(params or {}), **overrides}
    unknown = sorted(set(p) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"params: unknown field {unknown[0]!r} (allowed: {', '.join(DEFAULTS)})")
    from ...platform.units import parse_duration, parse_rate

    for key in ("rto_s", "time_limit_s"):
        if isinstance(p.get(key), str):
            p[key] = parse_duration(p[key], key)
    if isinstance(p.get("rate_bps"), str):
        p["rate_bps"] = parse_rate(p["rate_bps"], "rate_bps")
    return {k: v for k, v in p.items() if v is not None}


def simulate(tree: Any, params: Mapping[str, Any] | None = None, **kwargs: Any) -> McastSimResult:
    """Simulate ``tree`` (a :class:`~parcomm.platform.mcast_tree.Tree`, a tree dict
    or a JSON/TOML file) with run parameters given as a dict and/or keywords
    (keywords win); see :data:`DEFAULTS`. Deterministic: same tree, parameters
    and seed give the same result (except ``wall_s``).

    Raises ``ValueError`` naming the offending field of a bad tree or parameter.
    """
    t = _tree_dict(tree)
    p = _params(params, kwargs)
    raw = _core.mcast_simulate(json.dumps(t), json.dumps(p))
    return McastSimResult(params=p, **raw)  # type: ignore[arg-type]
