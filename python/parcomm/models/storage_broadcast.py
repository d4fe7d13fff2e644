"""Lower bound on broadcasting an object from cloud storage to N nodes
(seed 004's problem; the bound is the classic peer-to-peer file
distribution bound, extended by storage limits).

Every node must receive all D bytes, all of them must leave storage at least
once, and every byte a node receives comes either from storage or from some
node's upload link. With

* ``S``       aggregate storage egress (bytes/s, all connections together),
* ``r``       storage rate one node can draw (all its connections together),
* ``b_down``  a node's download NIC rate, ``b_up`` its upload NIC rate,
* ``N``       nodes,

the storage can deliver at most ``s = min(S, N r)`` bytes/s in total, and

    T >= max{ D / min(b_down, r + (N - 1) b_up),      each node's download
              D / s,                                   storage egress, once
              N D / (s + N b_up) }                     all bytes delivered

plus start-up terms: nothing arrives before one storage request latency and
the first piece's transmission (``latency + piece / b_down``). The first
term's ``r + (N-1) b_up`` is what can feed one node: its own storage share
and every other node's upload. For ``N = 1`` the bound is ``D / min(b_down,
r)``: a single download.

The bound is not always reachable (it ignores that a piece must exist
somewhere before it is uploaded), but every strategy is at or above it, so
"fraction of the bound" (bound / achieved time, <= 1) is an honest score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class BroadcastBound:
    """The bound and its terms, in seconds."""

    seconds: float
    per_node_download_s: float
    storage_egress_s: float
    total_delivery_s: float
    startup_s: float
    binding: str  # name of the largest term

    def to_dict(self) -> dict:
        return asdict(self)

    def fraction_of(self, achieved_s: float) -> float:
        """How close a run came: bound / achieved (1.0 = optimal)."""
        if achieved_s <= 0:
            raise ValueError(f"achieved time must be positive, got {achieved_s}")
        return self.seconds / achieved_s


def broadcast_lower_bound(
    size: int,
    nodes: int,
    *,
    storage_rate: float,
    node_storage_rate: float,
    b_down: float,
    b_up: float,
    latency_s: float = 0.0,
    piece_size: int = 0,
) -> BroadcastBound:
    """Lower bound on the completion time of broadcasting ``size`` bytes from
    storage to ``nodes`` nodes (rates in bytes/s)."""
    for name, value in (
        ("storage_rate", storage_rate),
        ("node_storage_rate", node_storage_rate),
        ("b_down", b_down),
        ("b_up", b_up),
    ):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if nodes < 1:
        raise ValueError(f"nodes must be at least 1, got {nodes}")
    if size < 0 or latency_s < 0 or piece_size < 0:
        raise ValueError("size, latency_s and piece_size must not be negative")
    storage = min(storage_rate, nodes * node_storage_rate)
    feed_one = min(b_down, node_storage_rate + (nodes - 1) * b_up)
    terms = {
        "per_node_download": size / feed_one,
        "storage_egress": size / storage,
        "total_delivery": nodes * size / (storage + nodes * b_up),
    }
    binding = max(terms, key=terms.__getitem__)
    startup = latency_s + min(piece_size, size) / b_down if size else 0.0
    return BroadcastBound(
        seconds=terms[binding] + startup,
        per_node_download_s=terms["per_node_download"],
        storage_egress_s=terms["storage_egress"],
        total_delivery_s=terms["total_delivery"],
        startup_s=startup,
        binding=binding,
    )
