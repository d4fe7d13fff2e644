"""What a broadcast as a whole did, from its nodes' reports: the tail of node
completion times (p50/p95/p99/max), origin egress, bytes moved between peers,
retries, peer connections opened. One function, used by the table, ``--json`` and the benchmarks."""

from __future__ import annotations

import math
from typing import Sequence


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of ``values``; None if empty.
    Nearest rank: always one of the measured values, so p99 of 16 nodes is the slowest."""
    if not values:
        return None
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} is not in (0, 100]")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summarize(reports: Sequence, errors: dict | None = None, unreported_egress: int = 0) -> dict:
    """Totals and completion percentiles of the nodes' :class:`~.real.NodeReport`\\ s.
    ``unreported_egress``: storage bytes read by nodes that left no report (failed, killed)."""
    done = [r.complete_s for r in reports if r.complete_s is not None]
    size = reports[0].size_bytes if reports else 0
    egress = sum(r.bytes_from_storage for r in reports) + unreported_egress
    return {
        "procs": len(reports) + len(errors or {}),
        "procs_failed": len(errors or {}),
        "size_bytes": size,
        "completion_s": {name: percentile(done, q) for name, q in (("p50", 50), ("p95", 95), ("p99", 99))}
        | {"max": max(done) if done else None},
        "origin_egress_bytes": egress,
        "origin_egress_x": egress / size if size else None,
        "bytes_from_peers": sum(r.bytes_from_peers for r in reports),
        "storage_requests": sum(r.storage_requests for r in reports),
        "storage_retries": sum(r.storage_retries for r in reports),
        "bad_pieces": sum(r.bad_pieces for r in reports),
        # opened on first need (notices over the overlay rank ± 2^k): O(N log N), not N(N - 1)
        "peer_connections": sum(r.connections for r in reports),
        "peer_connections_max": max((r.connections for r in reports), default=0),
        # "whole": every piece's sha256 and the whole object's; "pieces": every piece's only
        "verify": "/".join(sorted({getattr(r, "verify", "whole") for r in reports})) or None,
        # "cached": through the page cache; "direct": O_DIRECT where the filesystem allows it
        "write": "/".join(sorted({getattr(r, "write", "cached") for r in reports})) or None,
    }
