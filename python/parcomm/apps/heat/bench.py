"""The communication benchmarks of seed 002 §5 as rank programs (every backend).

§5: "任意の2つのスレーブタスク間でメッセージを10往復させ、その経過時間を計る" --
a message goes back and forth 10 times between two tasks and the elapsed time
is measured. Fig. 5 runs up to 4 such pairs at once inside one segment (8
workstations), Fig. 6 up to 8 pairs whose partners sit on different segments
(every message crosses the router).

:func:`pairs_program` runs any set of pairs at once: for each message size all
ranks meet at a barrier, then every pair does ``rounds`` round trips; the
initiator of each pair returns the elapsed time per size. Ranks in no pair
only take part in the barriers. :func:`segment_pairs` and
:func:`cross_segment_pairs` give the rank -> host maps of Figs. 5 and 6 on
the seed-002 platform.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["PAPER_ROUNDS", "pairs_program", "segment_pairs", "cross_segment_pairs"]

#: §5: ten round trips per measurement.
PAPER_ROUNDS = 10
_TAG = 5


async def pairs_program(
    comm, sizes: Sequence[int], npairs: int = 1, rounds: int = PAPER_ROUNDS, repeats: int = 1
) -> dict[str, Any] | None:
    """Ranks 2i and 2i+1 (i < npairs) form a pair; 2i initiates. Each size is
    measured ``repeats`` times (a barrier and one untimed warm-up round trip before each: connections,
    congestion windows and pollers are awake when the clock starts). Returns, on initiators,
    ``{"pair": i, "times_s": [best elapsed of `rounds` round trips, per size],
    "mean_s": [mean of the repeats, per size]}``."""
    if 2 * npairs > comm.size:
        raise ValueError(f"{npairs} pairs need {2 * npairs} ranks, got {comm.size}")
    me = comm.rank
    pair, role = divmod(me, 2)
    active = pair < npairs
    peer = me ^ 1
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    best, mean = [], []
    for m in sizes:
        got = []
        for _ in range(repeats):
            await comm.barrier()
            if not active:
                continue
            for i in range(rounds + 1):  # round 0 is a warm-up, not timed
                if i == 1:
                    t0 = comm.wtime()
                if role == 0:
                    await comm.send(b"", dest=peer, tag=_TAG, nbytes=int(m))
                    await comm.recv(source=peer, tag=_TAG)
                else:
                    await comm.recv(source=peer, tag=_TAG)
                    await comm.send(b"", dest=peer, tag=_TAG, nbytes=int(m))
            got.append(comm.wtime() - t0)
        if got:
            best.append(min(got))
            mean.append(sum(got) / len(got))
    if active and role == 0:
        return {"pair": pair, "times_s": best, "mean_s": mean}
    return None


def segment_pairs(groups: list[list[int]], npairs: int, segment: int = 0) -> list[int]:
    """Hosts for Fig. 5: 2·npairs ranks all on one segment."""
    g = groups[segment]
    if 2 * npairs > len(g):
        raise ValueError(f"{npairs} pairs need {2 * npairs} hosts; segment {segment} has {len(g)}")
    return g[: 2 * npairs]


def cross_segment_pairs(groups: list[list[int]], npairs: int) -> list[int]:
    """Hosts for Fig. 6: pair i joins the first host of segment i with the
    first host of segment i + S/2, so every message crosses the router and
    no two pairs share a segment."""
    half = len(groups) // 2
    if npairs > half:
        raise ValueError(f"{npairs} cross-segment pairs need {2 * npairs} segments; the platform has {len(groups)}")
    hosts = []
    for i in range(npairs):
        hosts += [groups[i][0], groups[i + half][0]]
    return hosts
